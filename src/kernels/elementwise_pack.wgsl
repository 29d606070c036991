// Elementwise ops over contiguous tensors of packed dtypes (f16, bf16, 8-bit, or inputs whose
// element size differs from the output's) at memory speed. Every input is either laid out like the
// output from a 16-byte boundary of its binding (any element size), or one element broadcast to all
// (S0..S2 true). Each output vec4<u32> (a "unit": 16 bytes, 8 halves, 16 bytes of 8-bit elements,
// or 4 words) is computed by unit(v, c0, c1, c2): it loads each input's words for the unit as whole
// vec4s (or the vec2 / word of a narrower input), unpacks them (unpack2x16float, shifts), calls
// compute() per element and packs the results back (pack2x16float, bf16 rounding) into one 16-byte
// store. The dtypes and sizes are constants, so every branch on them and every index below folds to
// straight-line code: no element is fetched twice, no array is indexed. The broadcast inputs are
// loaded once per invocation by sc() (CI(0) for the others). Each invocation handles ITEMS units,
// WG apart, as elementwise_vec.wgsl does. The prelude (src/ops/elementwise.c) supplies
// elementwise_ops.wgsl, `alias CI`, `alias CO`, PACK, WG, compute(), and per input i D<i> (its
// wgt_dtype value), Z<i> (its element size in bytes), S<i> (broadcast) and T<i> (where's float
// condition of integer values, loaded as 0 or 1 by its truth), and DO (the output's wgt_dtype).

@group(0) @binding(1) var<storage, read> in0: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> in1: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> in2: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> out: array<vec4<u32>>;

const ITEMS: u32 = 4u;
const N: u32 = 4u * PACK; // elements a unit

// wgt_dtype's values (include/wgt.h)
const DT_F32: u32 = 0u;
const DT_F16: u32 = 1u;
const DT_BF16: u32 = 2u;
const DT_I32: u32 = 3u;
const DT_U32: u32 = 4u;
const DT_I8: u32 = 5u;
const DT_U8: u32 = 6u;
const DT_BOOL: u32 = 7u;

fn vec4_of(slot: u32, i: u32) -> vec4<u32> {
    if (slot == 0u) { return in0[i]; }
    if (slot == 1u) { return in1[i]; }
    return in2[i];
}
fn last_of(slot: u32) -> u32 {
    if (slot == 0u) { return arrayLength(&in0) - 1u; }
    if (slot == 1u) { return arrayLength(&in1) - 1u; }
    return arrayLength(&in2) - 1u;
}

// Element k of word w of dtype dt as CI (as ops.c's loaders convert it); truth: as 0 or 1.
fn elem(dt: u32, truth: bool, w: u32, k: u32) -> CI {
    if (dt == DT_F32 || dt == DT_F16 || dt == DT_BF16) {
        var x = bitcast<f32>(w);
        if (dt == DT_F16) { x = unpack2x16float(w)[k]; }
        if (dt == DT_BF16) { x = select(bitcast<f32>(w << 16u), bitcast<f32>(w & 0xffff0000u), k == 1u); }
        if (truth) { return select(CI(0), CI(1), truthy(x)); }
        return CI(x);
    }
    if (dt == DT_I32) { return CI(bitcast<i32>(w)); }
    if (dt == DT_I8) { return CI(extractBits(bitcast<i32>(w), 8u * k, 8u)); }
    if (dt == DT_U8) { return CI(extractBits(w, 8u * k, 8u)); }
    if (dt == DT_BOOL) { return CI(select(0u, 1u, extractBits(w, 8u * k, 8u) != 0u)); }
    return CI(w); // u32
}

// The broadcast element of input slot (its element offset off in its binding), or CI(0).
fn sc(slot: u32, s: bool, dt: u32, z: u32, truth: bool, off: u32) -> CI {
    if (!s) { return CI(0); }
    let g = vec4_of(slot, off / (16u / z));
    let o = off % (16u / z); // the element within that vec4
    return elem(dt, truth, g[o * z / 4u], (o * z % 4u) / z);
}

// Up to 16 words of one input for a unit (no arrays: every access below is a constant member).
struct Words {
    a: vec4<u32>,
    b: vec4<u32>,
    c: vec4<u32>,
    d: vec4<u32>,
};

// The N * z / 4 words of unit v of input slot (none when broadcast): whole vec4s (the last unit's
// later ones may lie past the binding: clamped), or the half or the word of one.
fn unit_words(slot: u32, s: bool, z: u32, off: u32, v: u32) -> Words {
    var ws = Words(vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u));
    if (s) { return ws; }
    let nw = N * z / 4u;
    let b = off / (16u / z);
    if (nw >= 4u) {
        let f = b + v * (nw / 4u);
        ws.a = vec4_of(slot, f);
        if (nw >= 8u) { ws.b = vec4_of(slot, min(f + 1u, last_of(slot))); }
        if (nw >= 16u) {
            ws.c = vec4_of(slot, min(f + 2u, last_of(slot)));
            ws.d = vec4_of(slot, min(f + 3u, last_of(slot)));
        }
    } else if (nw == 2u) {
        let g = vec4_of(slot, b + v / 2u);
        ws.a = vec4<u32>(select(g.xy, g.zw, (v & 1u) == 1u), 0u, 0u);
    } else {
        ws.a.x = vec4_of(slot, b + v / 4u)[v & 3u];
    }
    return ws;
}

// Word m of ws.
fn word_at(ws: Words, m: u32) -> u32 {
    let q = select(select(ws.a, ws.b, m >= 4u), select(ws.c, ws.d, m >= 12u), m >= 8u);
    return q[m % 4u];
}

// Element e of the unit from input words ws (or the broadcast c).
fn arg(ws: Words, s: bool, c: CI, dt: u32, z: u32, truth: bool, e: u32) -> CI {
    if (s) { return c; }
    return elem(dt, truth, word_at(ws, e * z / 4u), (e * z % 4u) / z);
}

// The op's result for element e of the unit.
fn el(q0: Words, q1: Words, q2: Words, c0: CI, c1: CI, c2: CI, e: u32) -> CO {
    return compute(arg(q0, S0, c0, D0, Z0, T0, e), arg(q1, S1, c1, D1, Z1, T1, e), arg(q2, S2, c2, D2, Z2, T2, e));
}

// Output word c of the unit: its PACK elements' results, packed.
fn word_of(q0: Words, q1: Words, q2: Words, c0: CI, c1: CI, c2: CI, c: u32) -> u32 {
    if (PACK == 1u) { // f32, i32, u32
        let r = el(q0, q1, q2, c0, c1, c2, c);
        if (DO == DT_F32) { return bitcast<u32>(f32(r)); }
        if (DO == DT_I32) { return bitcast<u32>(i32(r)); }
        return u32(r);
    }
    if (PACK == 2u) { // f16, bf16
        let r0 = f32(el(q0, q1, q2, c0, c1, c2, 2u * c));
        let r1 = f32(el(q0, q1, q2, c0, c1, c2, 2u * c + 1u));
        if (DO == DT_F16) { return pack2x16float(vec2<f32>(r0, r1)); }
        return bf16_bits(r0) | (bf16_bits(r1) << 16u);
    }
    let r0 = el(q0, q1, q2, c0, c1, c2, 4u * c); // i8, u8, bool
    let r1 = el(q0, q1, q2, c0, c1, c2, 4u * c + 1u);
    let r2 = el(q0, q1, q2, c0, c1, c2, 4u * c + 2u);
    let r3 = el(q0, q1, q2, c0, c1, c2, 4u * c + 3u);
    if (DO == DT_BOOL) {
        return select(0u, 1u, r0 != CO(0)) | (select(0u, 1u, r1 != CO(0)) << 8u) |
               (select(0u, 1u, r2 != CO(0)) << 16u) | (select(0u, 1u, r3 != CO(0)) << 24u);
    }
    return (bitcast<u32>(i32(r0)) & 0xffu) | ((bitcast<u32>(i32(r1)) & 0xffu) << 8u) |
           ((bitcast<u32>(i32(r2)) & 0xffu) << 16u) | ((bitcast<u32>(i32(r3)) & 0xffu) << 24u);
}

fn unit(v: u32, c0: CI, c1: CI, c2: CI) -> vec4<u32> {
    let q0 = unit_words(0u, S0, Z0, p.off0, v);
    let q1 = unit_words(1u, S1, Z1, p.off1, v);
    let q2 = unit_words(2u, S2, Z2, p.off2, v);
    return vec4<u32>(word_of(q0, q1, q2, c0, c1, c2, 0u), word_of(q0, q1, q2, c0, c1, c2, 1u),
                     word_of(q0, q1, q2, c0, c1, c2, 2u), word_of(q0, q1, q2, c0, c1, c2, 3u));
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let first = (wid.x + wid.y * groups.x) * (WG * ITEMS) + lid;
    let words = (p.n + PACK - 1u) / PACK;   // output words
    let nvec = (words + 3u) / 4u;
    let c0 = sc(0u, S0, D0, Z0, T0, p.off0);
    let c1 = sc(1u, S1, D1, Z1, T1, p.off1);
    let c2 = sc(2u, S2, D2, Z2, T2, p.off2);
    for (var u = 0u; u < ITEMS; u = u + 1u) {
        let v = first + u * WG;
        if (v >= nvec) {
            return;
        }
        let r = unit(v, c0, c1, c2);
        let o = v + p.offo;
        if (v * 4u + 4u <= words) {
            out[o] = r;
        } else { // the last, partial vec4: only the words of the tensor
            for (var c = 0u; v * 4u + c < words; c = c + 1u) { out[o][c] = r[c]; }
        }
    }
}
