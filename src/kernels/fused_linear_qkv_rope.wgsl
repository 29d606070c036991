// The attention inputs of one decode token in one pass: the RMSNorm of x, the fused q/k/v product
// W [C, K] (C = (Hq + 2 Hkv) hd) with its bias, then q and k rotated (fused_qkv_rope.wgsl's rule and
// angle) with q written to q [Hq, 1, hd], k into the key cache and v into the value cache at row
// pos. Each lane group computes two output rows, a rotation pair (d, d + rot / 2) or
// (2j, 2j + 1) of one head (features past rot and value heads pair as (2j, 2j + 1) unrotated), so
// the rotation needs no second pass; x is loaded once for both rows. Loads, the norm and the
// reduction are fused_linear.wgsl's. x, gamma, inv_freq and the outputs are f32; offsets of x, W and
// gamma in vec4 units, the others in elements (the caches' at row pos of head 0).
// The prelude (src/ops/fused.c) supplies ldW8(v), VW, ldBias(i), rsum / rsize / HAS_SG,
// lib_rowsum.wgsl and WG. Its sections "params" (Params and every binding but w's), "rope pairs"
// (cos_sin, pair_of, put_pair: what a row pair's two sums become) and "entries" (main and solo,
// over row_at and term) are also the quantized twin's, qlinear_qkv_rope.wgsl, whose prelude pastes
// them; "weights" (w's binding) and "product" (row_at, term) are this file's own.

// ---- params ----
// (src/ops/fused.h's op_qkv_params; row_bytes: quantized weights only)
struct Params {
    S: u32, K: u32, tpr: u32, flags: u32, // S: row pairs, (Hq + 2 Hkv) hd / 2; flags: 1 bias
    off_x: u32, off_w: u32, off_g: u32, off_b: u32,
    hd: u32, Hq: u32, Hkv: u32, rot: u32,
    interleaved: u32, pos: u32, ctx: u32, off_q: u32,
    off_k: u32, off_v: u32, af: f32, eps: f32,
    row_bytes: u32, pad0: u32, pad1: u32, pad2: u32,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> gam: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> bias: array<u32>;
@group(0) @binding(5) var<storage, read> inv_freq: array<f32>;
@group(0) @binding(6) var<storage, read_write> q: array<f32>;
@group(0) @binding(7) var<storage, read_write> kc: array<f32>;
@group(0) @binding(8) var<storage, read_write> vc: array<f32>;

// ---- weights ----
@group(0) @binding(2) var<storage, read> w: array<vec4<u32>>;

// ---- rope pairs ----
// As rope.wgsl: the angle reduced to [-pi, pi] in two steps first.
fn cos_sin(a: f32) -> vec2<f32> {
    let k = round(a * 0.15915494309189535);
    let r = (a - k * 6.28125) - k * 0.0019353071795864769;
    return vec2<f32>(cos(r), sin(r));
}

// Row pair s: (head, first feature, second feature, frequency index or 0xffffffff unrotated).
fn pair_of(s: u32) -> vec4<u32> {
    let hh = p.hd / 2u;
    let head = s / hh;
    let i = s - head * hh;
    var d0 = 2u * i;
    var d1 = 2u * i + 1u;
    var f = 0xffffffffu;
    if (head < p.Hq + p.Hkv) {
        if (p.interleaved != 0u) {
            if (d0 < p.rot) { f = i; }
        } else {
            let half = p.rot / 2u;
            if (i < half) {
                d0 = i; d1 = i + half; f = i;
            } else {
                d0 = p.rot + 2u * (i - half); d1 = d0 + 1u;
            }
        }
    }
    return vec4<u32>(head, d0, d1, f);
}

// Row pair pr's outputs from t = (row d0's dot, row d1's dot, x's sum of squares): normalised,
// biased, rotated (q and k heads) and stored into q, the key cache or the value cache.
fn put_pair(pr: vec4<u32>, t: vec3<f32>) {
    let head = pr.x;
    let scale = inverseSqrt(t.z / f32(p.K) + p.eps);
    var v0 = t.x * scale;
    var v1 = t.y * scale;
    if ((p.flags & 1u) != 0u) {
        v0 = v0 + ldBias(p.off_b + head * p.hd + pr.y);
        v1 = v1 + ldBias(p.off_b + head * p.hd + pr.z);
    }
    if (pr.w != 0xffffffffu) {
        let cs = cos_sin(f32(p.pos) * inv_freq[pr.w]) * p.af;
        let a = v0;
        v0 = a * cs.x - v1 * cs.y;
        v1 = v1 * cs.x + a * cs.y;
    }
    if (head < p.Hq) {
        q[p.off_q + head * p.hd + pr.y] = v0;
        q[p.off_q + head * p.hd + pr.z] = v1;
    } else if (head < p.Hq + p.Hkv) {
        let o = p.off_k + (head - p.Hq) * p.ctx * p.hd;
        kc[o + pr.y] = v0;
        kc[o + pr.z] = v1;
    } else {
        let o = p.off_v + (head - p.Hq - p.Hkv) * p.ctx * p.hd;
        vc[o + pr.y] = v0;
        vc[o + pr.z] = v1;
    }
}

// ---- product ----
// Where weight row n starts (what term's r0 and r1 are), in VW-word units.
fn row_at(n: u32) -> u32 { return p.off_w + n * ((p.K / 8u) * VW); }

// Dot-product terms of weight group g (8 columns) for rows r0 and r1, and x's share of the sum of
// squares.
fn term(r0: u32, r1: u32, g: u32) -> vec3<f32> {
    let a = ldW8(r0 + g * VW);
    let b = ldW8(r1 + g * VW);
    let x0 = x[p.off_x + 2u * g];
    let x1 = x[p.off_x + 2u * g + 1u];
    let y0 = x0 * gam[p.off_g + 2u * g];
    let y1 = x1 * gam[p.off_g + 2u * g + 1u];
    return vec3<f32>(dot(a[0], y0) + dot(a[1], y1), dot(b[0], y0) + dot(b[1], y1), dot(x0, x0) + dot(x1, x1));
}

// ---- entries ----
// lib_rowsum.wgsl sums (row r0's dot, row r1's dot, sum of squares, 0) over a lane group
alias ROW = vec4<f32>;
fn row_rsum(v: ROW) -> ROW { return ROW(rsum(v.x), rsum(v.y), rsum(v.z), 0.0); }
var<workgroup> red: array<ROW, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let slots = WG / p.tpr;
    let lane = lid % p.tpr;
    let s = (wid.x + wid.y * nwg.x) * slots + lid / p.tpr;
    let groups = p.K / 8u;
    let pr = pair_of(s);
    let n0 = pr.x * p.hd + pr.y;
    let n1 = pr.x * p.hd + pr.z;
    var acc = vec3<f32>(0.0);
    if (s < p.S) {
        let r0 = row_at(n0);
        let r1 = row_at(n1);
        var g = lane;
        for (; g + 3u * p.tpr < groups; g = g + 4u * p.tpr) { // eight weight loads in flight
            acc = acc + (term(r0, r1, g) + term(r0, r1, g + p.tpr)) + (term(r0, r1, g + 2u * p.tpr) + term(r0, r1, g + 3u * p.tpr));
        }
        for (; g < groups; g = g + p.tpr) { acc = acc + term(r0, r1, g); }
    }
    let sg = row_share(lid, lane, vec4<f32>(acc, 0.0));
    if (lane == 0u && s < p.S) {
        put_pair(pr, row_total(lid, sg).xyz);
    }
}

// The barrier-free variant (src/ops/fused.c takes it where wgt_gpu_avoid_barriers says so, with
// p.tpr = 1): one invocation per row pair, no workgroup memory, as fused_linear.wgsl's `solo`.
@compute @workgroup_size(64)
fn solo(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let s = (wid.x + wid.y * nwg.x) * 64u + lid;
    if (s >= p.S) { return; }
    let groups = p.K / 8u;
    let pr = pair_of(s);
    let n0 = pr.x * p.hd + pr.y;
    let n1 = pr.x * p.hd + pr.z;
    let r0 = row_at(n0);
    let r1 = row_at(n1);
    var t = vec3<f32>(0.0);
    var g = 0u;
    for (; g + 3u < groups; g = g + 4u) {
        t = t + (term(r0, r1, g) + term(r0, r1, g + 1u)) + (term(r0, r1, g + 2u) + term(r0, r1, g + 3u));
    }
    for (; g < groups; g = g + 1u) { t = t + term(r0, r1, g); }
    put_pair(pr, t);
}
