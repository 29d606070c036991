// What the attention kernels share, in sections (op_wgsl_section, notes/KERNELS.md) that their
// preludes paste: src/ops/attention.c for attention.wgsl and attention_decode.wgsl,
// src/models/batch_attn.c for models_attention_slots.wgsl.
//  - params: the Params of attention.wgsl and attention_decode.wgsl, filled by attention.c
//    (sdpa_gpu_params there, the same layout). attention_decode reuses pad2 for the output's
//    offset, attention's WINDOW variant for the sliding window.
//  - nan: NaN-aware max and -inf for all three (the kernel's Params has a field `zero`, 0).
//  - reduce: one f32 over the workgroup (attention_decode, models_attention_slots; the kernel declares
//    var<workgroup> red: array<vec4<f32>, WG> and the prelude WG, a power of two).
//  - reduce subgroups: the same two functions through subgroup operations (attention_decode_v4
//    where subgroups of at most 32 are granted; after `enable subgroups;`): a subgroup's max or sum,
//    then the subgroups' partials in red (subgroups as aligned runs of local_invocation_index, as
//    lib_rowsum.wgsl assumes): two barriers instead of log2(WG) + 2.
//  - ldk4 f32 / f16 / bf16: fn ldk4(i) -> vec4<f32>, elements i .. i + 3 of the binding k, i even
//    (16-bit dtypes: two words), per k's dtype (attention.wgsl, attention_decode.wgsl).
//  - tc frag subgroup matrix / tc frag scalar: attention_tc.wgsl's fragment products (fr_init,
//    fr_zero, fr_qk, fr_pv, fr_store) through subgroup matrices or in scalar code.

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

// ---- reduce subgroups ----
// Past 256 invocations each lane reads every sg-th partial from its own start and the subgroup
// combines them (one or two reads a lane), instead of each invocation reading all WG / sg in turn.
fn sg_nmax(x: f32) -> f32 {
    let nan = subgroupAny(is_nan(x));
    return select(subgroupMax(select(x, neg_inf(), is_nan(x))), nan_f(), nan);
}

fn reduce_max(x: f32, lid: u32) -> f32 {
    let sg = subgroupAdd(1u);
    red[lid].x = sg_nmax(x);
    workgroupBarrier();
    var r = red[0].x;
    if (WG <= 256u) {
        for (var j = sg; j < WG; j += sg) { r = nmax(r, red[j].x); }
    } else {
        r = neg_inf();
        for (var j = (lid % sg) * sg; j < WG; j += sg * sg) { r = nmax(r, red[j].x); }
        r = sg_nmax(r);
    }
    workgroupBarrier();
    return r;
}

fn reduce_sum(x: f32, lid: u32) -> f32 {
    let sg = subgroupAdd(1u);
    red[lid].x = subgroupAdd(x);
    workgroupBarrier();
    var r = red[0].x;
    if (WG <= 256u) {
        for (var j = sg; j < WG; j += sg) { r = r + red[j].x; }
    } else {
        r = 0.0;
        for (var j = (lid % sg) * sg; j < WG; j += sg * sg) { r = r + red[j].x; }
        r = subgroupAdd(r);
    }
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

// ---- tc kv words ----
// attention_tc.wgsl's k and v as 16-byte words of f32 (KV4: a model's cache, rows of whole words):
// kw4 a word as 4 f32, ldk / ldv an element.
const KV4: bool = true;
alias KW = vec4<u32>;
fn kw4(x: KW) -> vec4<f32> { return bitcast<vec4<f32>>(x); }
fn ldk(i: u32) -> f32 { return bitcast<f32>(k[i / 4u][i % 4u]); }
fn ldv(i: u32) -> f32 { return bitcast<f32>(v[i / 4u][i % 4u]); }

// ---- tc kv elements ----
// attention_tc.wgsl's k and v as u32 words read element by element (any dtype: the prelude adds the
// loaders ldk and ldv); kw4 is never called.
const KV4: bool = false;
alias KW = u32;
fn kw4(x: KW) -> vec4<f32> { return vec4<f32>(bitcast<f32>(x)); }

// ---- tc frag subgroup matrix ----
// attention_tc.wgsl's fragment products through subgroup matrices: fr_qk adds the SM x SK tile of
// Qs at qo (row-major) times the SK x SN tile of K^T whose columns are Ks's rows at ko; fr_pv the
// tile of Ps at po times the tile of Vs at vo (row-major); fr_store writes a result into Ss.
alias LEFT = subgroup_matrix_left<TT, SK, SM>;
alias RIGHT = subgroup_matrix_right<TT, SN, SK>;
alias ACC = subgroup_matrix_result<f32, SN, SM>;
fn fr_init(lane: u32) {}
fn fr_zero() -> ACC { return ACC(); }
fn fr_qk(c: ACC, qo: u32, ko: u32) -> ACC {
    return subgroupMatrixMultiplyAccumulate(subgroupMatrixLoad<LEFT, row_major>(&Qs, qo, LDQ),
                                            subgroupMatrixLoad<RIGHT, col_major>(&Ks, ko, LDK), c);
}
fn fr_pv(c: ACC, po: u32, vo: u32) -> ACC {
    return subgroupMatrixMultiplyAccumulate(subgroupMatrixLoad<LEFT, row_major>(&Ps, po, LDP),
                                            subgroupMatrixLoad<RIGHT, row_major>(&Vs, vo, LDV), c);
}
fn fr_store(c: ACC, off: u32, ld: u32) { subgroupMatrixStore<row_major>(&Ss, off, c, ld); }

// ---- tc frag scalar ----
// The same fragments in scalar code: invocation `lane` of the subgroup's SGS holds elements lane,
// lane + SGS, .. of the SM x SN result (row-major).
const FE: u32 = SM * SN / SGS;
alias ACC = array<f32, FE>;
var<private> fr_lane: u32;
fn fr_init(lane: u32) { fr_lane = lane; }
fn fr_zero() -> ACC { return ACC(); }
fn fr_qk(c: ACC, qo: u32, ko: u32) -> ACC {
    var r = c;
    for (var e = 0u; e < FE; e++) {
        let i = (fr_lane + e * SGS) / SN;
        let j = (fr_lane + e * SGS) % SN;
        var s = r[e];
        for (var x = 0u; x < SK; x++) { s = fma(f32(Qs[qo + i * LDQ + x]), f32(Ks[ko + j * LDK + x]), s); }
        r[e] = s;
    }
    return r;
}
fn fr_pv(c: ACC, po: u32, vo: u32) -> ACC {
    var r = c;
    for (var e = 0u; e < FE; e++) {
        let i = (fr_lane + e * SGS) / SN;
        let j = (fr_lane + e * SGS) % SN;
        var s = r[e];
        for (var x = 0u; x < SK; x++) { s = fma(f32(Ps[po + i * LDP + x]), f32(Vs[vo + x * LDV + j]), s); }
        r[e] = s;
    }
    return r;
}
fn fr_store(c: ACC, off: u32, ld: u32) {
    for (var e = 0u; e < FE; e++) {
        let x = fr_lane + e * SGS;
        Ss[off + (x / SN) * ld + x % SN] = c[e];
    }
}
