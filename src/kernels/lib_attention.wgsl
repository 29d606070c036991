// What the attention kernels share, in sections (op_wgsl_section, notes/KERNELS.md) that their
// preludes paste: src/ops/attention.c for attention.wgsl and attention_decode.wgsl,
// src/models/batch_attn.c for models_attention_slots.wgsl.
//  - params: the Params of attention.wgsl and attention_decode.wgsl, filled by attention.c
//    (sdpa_gpu_params there, the same layout). attention_decode reuses pad2 for the output's
//    offset, attention's WINDOW variant for the sliding window.
//  - nan: NaN-aware max and -inf for all three (the kernel's Params has a field `zero`, 0).
//  - reduce: one f32 over the workgroup (attention_decode, models_attention_slots; the kernel declares
//    var<workgroup> red: array<vec4<f32>, WG> and the prelude WG, a power of two).
//  - ldk4 f32 / f16 / bf16: fn ldk4(i) -> vec4<f32>, elements i .. i + 3 of the binding k, i even
//    (16-bit dtypes: two words), per k's dtype (attention.wgsl, attention_decode.wgsl).

// ---- params ----
struct Params {
    B: u32, Hq: u32, Lq: u32, Lk: u32,
    D: u32, Dv: u32, group: u32, nsplit: u32,
    scale: f32, causal: u32, coff: i32, mask_kind: u32, // mask_kind 0 none, 1 float, 2 bool
    per_split: u32, off_q: u32, off_k: u32, off_v: u32,
    off_m: u32, zero: u32, kvec: u32, pad2: u32, // kvec: k rows contiguous, D % 4 == 0, rows start even
    sq: vec4<u32>, // strides of q [B, Hq, Lq, D], k and v [B, Hkv, Lk, D], mask [B, Hq, Lq, Lk]
    sk: vec4<u32>,
    sv: vec4<u32>,
    sm: vec4<u32>,
};

// ---- nan ----
fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn nmax(a: f32, b: f32) -> f32 { return select(max(a, b), a + b, is_nan(a) || is_nan(b)); } // keeps NaN
fn neg_inf() -> f32 { return bitcast<f32>(0xff800000u | p.zero); } // zero = 0: not folded away
fn nan_f() -> f32 { return bitcast<f32>(0x7fc00000u | p.zero); }

// ---- reduce ----
fn reduce_max(x: f32, lid: u32) -> f32 {
    red[lid] = vec4<f32>(x);
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if (lid < s) { red[lid].x = nmax(red[lid].x, red[lid + s].x); }
        workgroupBarrier();
    }
    let r = red[0].x;
    workgroupBarrier();
    return r;
}

fn reduce_sum(x: f32, lid: u32) -> f32 {
    red[lid] = vec4<f32>(x);
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if (lid < s) { red[lid].x = red[lid].x + red[lid + s].x; }
        workgroupBarrier();
    }
    let r = red[0].x;
    workgroupBarrier();
    return r;
}

// ---- ldk4 f32 ----
fn ldk4(i: u32) -> vec4<f32> {
    return vec4<f32>(bitcast<f32>(k[i]), bitcast<f32>(k[i + 1u]), bitcast<f32>(k[i + 2u]), bitcast<f32>(k[i + 3u]));
}

// ---- ldk4 f16 ----
fn ldk4(i: u32) -> vec4<f32> { let w = i >> 1u; return vec4<f32>(unpack2x16float(k[w]), unpack2x16float(k[w + 1u])); }

// ---- ldk4 bf16 ----
fn ldk4(i: u32) -> vec4<f32> {
    let w = i >> 1u;
    let a = k[w];
    let b = k[w + 1u];
    return bitcast<vec4<f32>>(vec4<u32>(a << 16u, a & 0xffff0000u, b << 16u, b & 0xffff0000u));
}
