// Scaled dot-product attention, flash style: one workgroup of 64 invocations per query row and key
// split; keys are visited in blocks of 64 with an online softmax (running max m and sum l), the
// block's probabilities shared through workgroup memory, so the [Lq, Lk] scores never exist.
//  - main: with p.nsplit == 1 writes out[row, :]; with several splits (decode: few query rows, a
//    long cache) writes each split's (m, l, acc[Dv]) to part, and `combine` merges them.
// GQA/MQA: query head h reads kv head h / p.group. k and v are strided views (a KV cache read in
// place). Causal: key j is visible to query i when j <= coff + i. Masks: float (added) or bool
// (keep where set). A row that sees no key gives zeros. D and Dv are at most 256.
// The prelude (src/ops/attention.c) supplies the loaders ldq, ldk, ldv, ldm (all f32).

struct Params {
    B: u32, Hq: u32, Lq: u32, Lk: u32,
    D: u32, Dv: u32, group: u32, nsplit: u32,
    scale: f32, causal: u32, coff: i32, mask_kind: u32, // mask_kind 0 none, 1 float, 2 bool
    per_split: u32, off_q: u32, off_k: u32, off_v: u32,
    off_m: u32, pad0: u32, pad1: u32, pad2: u32,
    sq: vec4<u32>, // strides of q [B, Hq, Lq, D], k and v [B, Hkv, Lk, D], mask [B, Hq, Lq, Lk]
    sk: vec4<u32>,
    sv: vec4<u32>,
    sm: vec4<u32>,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<u32>;
@group(0) @binding(2) var<storage, read> k: array<u32>;
@group(0) @binding(3) var<storage, read> v: array<u32>;
@group(0) @binding(4) var<storage, read> mask: array<u32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;
@group(0) @binding(6) var<storage, read_write> part: array<f32>;

const BLK: u32 = 64u;

var<workgroup> qs: array<f32, 256>;
var<workgroup> ps: array<f32, 64>;
var<workgroup> red: array<f32, 64>;
var<workgroup> red2: array<vec2<f32>, 64>;

fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
// max that keeps NaN (the reference's max does)
fn nmax(a: f32, b: f32) -> f32 { return select(max(a, b), a + b, is_nan(a) || is_nan(b)); }
fn neg_inf() -> f32 { return bitcast<f32>(0xff800000u | p.pad0); }

fn block_max(x: f32, lid: u32) -> f32 {
    red[lid] = x;
    workgroupBarrier();
    for (var s = 32u; s > 0u; s = s / 2u) {
        if (lid < s) { red[lid] = nmax(red[lid], red[lid + s]); }
        workgroupBarrier();
    }
    let r = red[0];
    workgroupBarrier();
    return r;
}

// Sums of two values at once: the probabilities and a count of NaN scores. NaN is tracked
// explicitly because some compilers fold comparisons as if NaN could not occur.
fn block_sum2(x: vec2<f32>, lid: u32) -> vec2<f32> {
    red2[lid] = x;
    workgroupBarrier();
    for (var s = 32u; s > 0u; s = s / 2u) {
        if (lid < s) { red2[lid] = red2[lid] + red2[lid + s]; }
        workgroupBarrier();
    }
    let r = red2[0];
    workgroupBarrier();
    return r;
}
fn nan_f() -> f32 { return bitcast<f32>(0x7fc00000u | p.pad0); }

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let row = wid.x + wid.y * nwg.x; // (b, h, i) row-major
    let split = wid.z;
    let i = row % p.Lq;
    let h = (row / p.Lq) % p.Hq;
    let b = row / (p.Lq * p.Hq);
    let hk = h / p.group;
    let valid = b < p.B; // uniform across the workgroup
    let qb = p.off_q + b * p.sq.x + h * p.sq.y + i * p.sq.z;
    for (var d = lid; d < p.D; d = d + 64u) { qs[d] = select(0.0, ldq(qb + d * p.sq.w) * p.scale, valid); }
    workgroupBarrier();
    let kb = p.off_k + b * p.sk.x + hk * p.sk.y;
    let vb = p.off_v + b * p.sv.x + hk * p.sv.y;
    let mb = p.off_m + b * p.sm.x + h * p.sm.y + i * p.sm.z;
    let j0 = split * p.per_split;
    var j1 = min(j0 + p.per_split, p.Lk);
    if (p.causal != 0u) { j1 = u32(clamp(p.coff + i32(i) + 1, 0, i32(j1))); }
    var m = neg_inf();
    var l = 0.0;
    var acc = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
    var nan_seen = false;
    for (var jb = j0; jb < j1; jb = jb + BLK) {
        let j = jb + lid;
        var s = neg_inf();
        if (valid && j < j1) {
            var dot = 0.0;
            let kr = kb + j * p.sk.z;
            for (var d = 0u; d < p.D; d++) { dot = fma(qs[d], ldk(kr + d * p.sk.w), dot); }
            s = dot;
            if (p.mask_kind == 1u) { s = s + ldm(mb + j * p.sm.w); }
            if (p.mask_kind == 2u && ldm(mb + j * p.sm.w) == 0.0) { s = neg_inf(); }
        }
        let m_new = nmax(m, block_max(s, lid));
        // rows that have seen only masked keys so far keep m = -inf and add nothing
        let seen = m_new != neg_inf();
        let pj = select(0.0, exp(s - m_new), seen);
        ps[lid] = pj;
        let corr = select(1.0, exp(m - m_new), seen);
        let sums = block_sum2(vec2<f32>(pj, select(0.0, 1.0, is_nan(s))), lid); // also publishes ps
        nan_seen = nan_seen || sums.y > 0.0;
        l = l * corr + sums.x;
        let n = min(BLK, j1 - jb);
        for (var r = 0u; r < 4u; r++) {
            let d = lid + r * 64u;
            if (d < p.Dv) {
                var a = acc[r] * corr;
                let vr = vb + jb * p.sv.z + d * p.sv.w;
                for (var jj = 0u; jj < n; jj++) { a = fma(ps[jj], ldv(vr + jj * p.sv.z), a); }
                acc[r] = a;
            }
        }
        m = m_new;
        workgroupBarrier(); // ps is rewritten by the next block
    }
    if (!valid) { return; }
    if (p.nsplit == 1u) {
        for (var r = 0u; r < 4u; r++) {
            let d = lid + r * 64u;
            if (d < p.Dv) { out[row * p.Dv + d] = select(select(0.0, acc[r] / l, l > 0.0), nan_f(), nan_seen); }
        }
    } else {
        let pb = (row * p.nsplit + split) * (p.Dv + 2u);
        if (lid == 0u) { part[pb] = m; part[pb + 1u] = select(l, nan_f(), nan_seen); }
        for (var r = 0u; r < 4u; r++) {
            let d = lid + r * 64u;
            if (d < p.Dv) { part[pb + 2u + d] = acc[r]; }
        }
    }
}

// Merge the splits of one row: out = sum_s acc_s e^(m_s - M) / sum_s l_s e^(m_s - M).
@compute @workgroup_size(64)
fn combine(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) lid: u32) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= p.B * p.Hq * p.Lq) { return; }
    let stride = p.Dv + 2u;
    let pb = row * p.nsplit * stride;
    var big = neg_inf();
    for (var s = 0u; s < p.nsplit; s++) { big = nmax(big, part[pb + s * stride]); }
    var l = 0.0;
    var nan_seen = false;
    for (var s = 0u; s < p.nsplit; s++) {
        let ms = part[pb + s * stride];
        let ls = part[pb + s * stride + 1u];
        nan_seen = nan_seen || is_nan(ls);
        if (ms != neg_inf()) { l = l + ls * exp(ms - big); }
    }
    for (var d = lid; d < p.Dv; d = d + 64u) {
        var a = 0.0;
        for (var s = 0u; s < p.nsplit; s++) {
            let ms = part[pb + s * stride];
            if (ms != neg_inf()) { a = a + part[pb + s * stride + 2u + d] * exp(ms - big); }
        }
        out[row * p.Dv + d] = select(select(0.0, a / l, l > 0.0), nan_f(), nan_seen);
    }
}
