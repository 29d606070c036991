// One token through a linear layer with what surrounds it in a decoder step, in one pass:
//   out[n] = scale * dot(W[n, :], pro(x)) + bias[n] + res[n]
// where pro(x) is x itself (PRO 0), gamma * x with scale = 1 / sqrt(mean(x^2) + eps) (PRO 1: the
// RMSNorm before the layer; every row's lanes see all of x, so the sum of squares comes with the
// dot product at no extra pass), or silu(x[:K]) * x[K:] (PRO 2: SwiGLU of a fused gate/up
// output). W [N, K] is streamed once with 16-byte loads as in matmul_gemv.wgsl: p.tpr invocations share a
// row, WG / p.tpr rows a workgroup. x, gamma, res and out are f32; offsets of x, W and gamma are
// in vec4 units, the others in elements.
// The prelude (src/ops/fused.c) supplies: ldW8(v), 8 weights from vec4 index v; VW, vec4s per 8
// weights; ldBias(i) (f32); rsum / rsize / HAS_SG and lib_rowsum.wgsl; const PRO: u32; const WG: u32.

struct Params {
    N: u32, K: u32, tpr: u32, flags: u32, // flags: 1 bias, 2 res
    off_x: u32, off_w: u32, off_g: u32, off_b: u32,
    off_r: u32, off_o: u32, eps: f32, pad: u32,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> gam: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> bias: array<u32>;
@group(0) @binding(5) var<storage, read> res: array<f32>;
@group(0) @binding(6) var<storage, read_write> out: array<f32>;

fn silu4(v: vec4<f32>) -> vec4<f32> { return v / (vec4<f32>(1.0) + exp(-v)); }

// The dot-product term of weight group g (8 weights) and its share of the sum of squares.
fn term(wrow: u32, g: u32) -> vec2<f32> {
    let wv = ldW8(wrow + g * VW);
    var x0 = x[p.off_x + 2u * g];
    var x1 = x[p.off_x + 2u * g + 1u];
    var ss = 0.0;
    if (PRO == 1u) {
        ss = dot(x0, x0) + dot(x1, x1);
        x0 = x0 * gam[p.off_g + 2u * g];
        x1 = x1 * gam[p.off_g + 2u * g + 1u];
    } else if (PRO == 2u) {
        let up = p.off_x + p.K / 4u + 2u * g;
        x0 = silu4(x0) * x[up];
        x1 = silu4(x1) * x[up + 1u];
    }
    return vec2<f32>(dot(wv[0], x0) + dot(wv[1], x1), ss);
}

// lib_rowsum.wgsl sums (dot, sum of squares) over a row's lanes
alias ROW = vec2<f32>;
fn row_rsum(v: ROW) -> ROW { return ROW(rsum(v.x), rsum(v.y)); }
var<workgroup> red: array<ROW, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let rows = WG / p.tpr;
    let r = lid / p.tpr;
    let lane = lid % p.tpr;
    let n = (wid.x + wid.y * nwg.x) * rows + r;
    let groups = p.K / 8u;
    var acc = vec2<f32>(0.0, 0.0); // (dot, sum of squares)
    if (n < p.N) {
        let wrow = p.off_w + n * (groups * VW);
        var g = lane;
        for (; g + 3u * p.tpr < groups; g = g + 4u * p.tpr) { // four weight loads in flight
            acc = acc + (term(wrow, g) + term(wrow, g + p.tpr)) + (term(wrow, g + 2u * p.tpr) + term(wrow, g + 3u * p.tpr));
        }
        for (; g < groups; g = g + p.tpr) { acc = acc + term(wrow, g); }
    }
    let sg = row_share(lid, lane, acc);
    if (lane == 0u && n < p.N) {
        let t = row_total(lid, sg);
        var v = t.x;
        if (PRO == 1u) { v = v * inverseSqrt(t.y / f32(p.K) + p.eps); }
        if ((p.flags & 1u) != 0u) { v = v + ldBias(p.off_b + n); }
        if ((p.flags & 2u) != 0u) { v = v + res[p.off_r + n]; }
        out[p.off_o + n] = v;
    }
}

// The barrier-free variant (src/ops/fused.c takes it where wgt_gpu_avoid_barriers says so, with
// p.tpr = 1): one invocation per output row, no workgroup memory. SwiftShader runs a kernel that
// holds a barrier as one coroutine per subgroup and workgroup (seconds a call); this runs as one
// loop. `main` above is unchanged for every other adapter.
@compute @workgroup_size(64)
fn solo(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let n = (wid.x + wid.y * nwg.x) * 64u + lid;
    if (n >= p.N) { return; }
    let groups = p.K / 8u;
    let wrow = p.off_w + n * (groups * VW);
    var t = vec2<f32>(0.0, 0.0);
    var g = 0u;
    for (; g + 3u < groups; g = g + 4u) {
        t = t + (term(wrow, g) + term(wrow, g + 1u)) + (term(wrow, g + 2u) + term(wrow, g + 3u));
    }
    for (; g < groups; g = g + 1u) { t = t + term(wrow, g); }
    var v = t.x;
    if (PRO == 1u) { v = v * inverseSqrt(t.y / f32(p.K) + p.eps); }
    if ((p.flags & 1u) != 0u) { v = v + ldBias(p.off_b + n); }
    if ((p.flags & 2u) != 0u) { v = v + res[p.off_r + n]; }
    out[p.off_o + n] = v;
}

// The staged variant (src/ops/fused.c takes it for SwiGLU under WGT_FUSED_LINEAR_STAGE=1, where
// K floats fit in workgroup memory): silu(x[:K]) * x[K:] computed once a workgroup into xg (the
// prelude's XS vec4s; 1 elsewhere) instead of once per row by each row's lanes: Llama-3.2-1B's
// down projection otherwise takes 16.8M exp a token, more than its weights' streaming time on
// the H200's special-function units. The first four groups' weights load before the staging.
var<workgroup> xg: array<vec4<f32>, XS>;

fn dot_st(wv: array<vec4<f32>, 2>, g: u32) -> f32 { return dot(wv[0], xg[2u * g]) + dot(wv[1], xg[2u * g + 1u]); }

@compute @workgroup_size(WG)
fn staged(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
          @builtin(local_invocation_index) lid: u32) {
    let t = p.tpr;
    let r = lid / t;
    let lane = lid % t;
    let n = (wid.x + wid.y * nwg.x) * (WG / t) + r;
    let groups = p.K / 8u;
    let live = n < p.N;
    let wrow = p.off_w + n * (groups * VW);
    var g = lane;
    var w0 = array<vec4<f32>, 2>();
    var w1 = array<vec4<f32>, 2>();
    var w2 = array<vec4<f32>, 2>();
    var w3 = array<vec4<f32>, 2>();
    let first = live && g + 3u * t < groups;
    if (first) {
        w0 = ldW8(wrow + g * VW);
        w1 = ldW8(wrow + (g + t) * VW);
        w2 = ldW8(wrow + (g + 2u * t) * VW);
        w3 = ldW8(wrow + (g + 3u * t) * VW);
    }
    let kv = p.K / 4u;
    for (var c = lid; c < kv; c += WG) { xg[c] = silu4(x[p.off_x + c]) * x[p.off_x + kv + c]; }
    workgroupBarrier();
    var acc = 0.0;
    if (live) {
        if (first) {
            acc = (dot_st(w0, g) + dot_st(w1, g + t)) + (dot_st(w2, g + 2u * t) + dot_st(w3, g + 3u * t));
            g += 4u * t;
        }
        for (; g + 3u * t < groups; g += 4u * t) {
            acc += (dot_st(ldW8(wrow + g * VW), g) + dot_st(ldW8(wrow + (g + t) * VW), g + t)) +
                   (dot_st(ldW8(wrow + (g + 2u * t) * VW), g + 2u * t) + dot_st(ldW8(wrow + (g + 3u * t) * VW), g + 3u * t));
        }
        for (; g < groups; g += t) { acc += dot_st(ldW8(wrow + g * VW), g); }
    }
    let sg = row_share(lid, lane, vec2<f32>(acc, 0.0));
    if (lane == 0u && live) {
        var v = row_total(lid, sg).x;
        if ((p.flags & 1u) != 0u) { v = v + ldBias(p.off_b + n); }
        if ((p.flags & 2u) != 0u) { v = v + res[p.off_r + n]; }
        out[p.off_o + n] = v;
    }
}

// The multi-row variant (src/ops/fused.c takes it under WGT_FUSED_LINEAR_ROWS=R, R = RR of the
// prelude): RR consecutive rows share a group of p.tpr lanes, so a lane's x (and x * gamma, or
// silu(gate) * up, and the sum of squares) is read and computed once for RR rows' weights: RR
// 16-byte weight loads a step (2 RR in flight) against main's one, and 1 / RR of its x reads
// through L1 per weight byte. Rows past N repeat row N - 1 (in bounds) and are not stored.
// RR 8 keeps rows 4 .. 7 in a second accumulator (and RH = WG: its reduction's workgroup array).
struct XI { a: vec4<f32>, b: vec4<f32>, ss: f32 };

fn xin(g: u32) -> XI {
    var x0 = x[p.off_x + 2u * g];
    var x1 = x[p.off_x + 2u * g + 1u];
    var ss = 0.0;
    if (PRO == 1u) {
        ss = dot(x0, x0) + dot(x1, x1);
        x0 = x0 * gam[p.off_g + 2u * g];
        x1 = x1 * gam[p.off_g + 2u * g + 1u];
    } else if (PRO == 2u) {
        let up = p.off_x + p.K / 4u + 2u * g;
        x0 = silu4(x0) * x[up];
        x1 = silu4(x1) * x[up + 1u];
    }
    return XI(x0, x1, ss);
}

fn dot8(wv: array<vec4<f32>, 2>, xi: XI) -> f32 { return dot(wv[0], xi.a) + dot(wv[1], xi.b); }

// a step of groups g (and g2 = g + p.tpr when both) for the RR rows at w0 .. w3
fn rows_step(acc: vec4<f32>, w0: u32, w1: u32, w2: u32, w3: u32, g: u32, xi: XI) -> vec4<f32> {
    var a = acc;
    let o = g * VW;
    a.x += dot8(ldW8(w0 + o), xi);
    if (RR > 1u) { a.y += dot8(ldW8(w1 + o), xi); }
    if (RR > 2u) { a.z += dot8(ldW8(w2 + o), xi); a.w += dot8(ldW8(w3 + o), xi); }
    return a;
}

// rows 4 .. 7 of RR 8: four rows' loads a step
fn rows_step4(acc: vec4<f32>, w4: u32, w5: u32, w6: u32, w7: u32, g: u32, xi: XI) -> vec4<f32> {
    let o = g * VW;
    return acc + vec4<f32>(dot8(ldW8(w4 + o), xi), dot8(ldW8(w5 + o), xi), dot8(ldW8(w6 + o), xi), dot8(ldW8(w7 + o), xi));
}

var<workgroup> redr: array<vec4<f32>, WG>;
var<workgroup> redh: array<vec4<f32>, RH>;
var<workgroup> reds: array<f32, WG>;

@compute @workgroup_size(WG)
fn rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = p.tpr;
    let lane = lid % t;
    let n0 = ((wid.x + wid.y * nwg.x) * (WG / t) + lid / t) * RR;
    let groups = p.K / 8u;
    let rs = groups * VW;
    let last = p.N - 1u;
    let w0 = p.off_w + min(n0, last) * rs;
    let w1 = p.off_w + min(n0 + 1u, last) * rs;
    let w2 = p.off_w + min(n0 + 2u, last) * rs;
    let w3 = p.off_w + min(n0 + 3u, last) * rs;
    let w4 = p.off_w + min(n0 + 4u, last) * rs;
    let w5 = p.off_w + min(n0 + 5u, last) * rs;
    let w6 = p.off_w + min(n0 + 6u, last) * rs;
    let w7 = p.off_w + min(n0 + 7u, last) * rs;
    var acc = vec4<f32>(0.0);
    var ach = vec4<f32>(0.0); // rows 4 .. 7 (RR 8)
    var ss = 0.0;
    var g = lane;
    if (n0 < p.N) {
        for (; g + t < groups; g += 2u * t) {
            let xa = xin(g);
            let xb = xin(g + t);
            acc = rows_step(rows_step(acc, w0, w1, w2, w3, g, xa), w0, w1, w2, w3, g + t, xb);
            if (RR > 4u) { ach = rows_step4(rows_step4(ach, w4, w5, w6, w7, g, xa), w4, w5, w6, w7, g + t, xb); }
            ss += xa.ss + xb.ss;
        }
        if (g < groups) {
            let xa = xin(g);
            acc = rows_step(acc, w0, w1, w2, w3, g, xa);
            if (RR > 4u) { ach = rows_step4(ach, w4, w5, w6, w7, g, xa); }
            ss += xa.ss;
        }
    }
    redr[lid] = vec4<f32>(rsum(acc.x), rsum(acc.y), rsum(acc.z), rsum(acc.w));
    if (RR > 4u) { redh[lid] = vec4<f32>(rsum(ach.x), rsum(ach.y), rsum(ach.z), rsum(ach.w)); }
    reds[lid] = rsum(ss);
    let sg = rsize();
    workgroupBarrier();
    if (lane == 0u && n0 < p.N) {
        var tot = redr[lid];
        var toh = vec4<f32>(0.0);
        if (RR > 4u) { toh = redh[lid]; }
        var tss = reds[lid];
        for (var j = sg; j < t; j += sg) {
            tot += redr[lid + j];
            if (RR > 4u) { toh += redh[lid + j]; }
            tss += reds[lid + j];
        }
        var scale = 1.0;
        if (PRO == 1u) { scale = inverseSqrt(tss / f32(p.K) + p.eps); }
        for (var r = 0u; r < RR; r++) {
            let n = n0 + r;
            if (n >= p.N) { break; }
            var v = 0.0;
            if (r < 4u) { v = tot[r]; } else { v = toh[r - 4u]; }
            v = v * scale;
            if ((p.flags & 1u) != 0u) { v = v + ldBias(p.off_b + n); }
            if ((p.flags & 2u) != 0u) { v = v + res[p.off_r + n]; }
            out[p.off_o + n] = v;
        }
    }
}
