// The output layer of one decode token (src/ops/fused_lm_head.c), in one pass over the weights:
//   out[n] = scale * dot(W[n, :], gamma * x) (flags & 1: the RMSNorm before it, scale =
//   1 / sqrt(mean(x^2) + eps); else gamma and scale are 1), and, with ARG, each workgroup's first
//   largest logit (NaN counts as the largest) as (bits of the value, row) in part[workgroup]:
//   the first stage of the greedy argmax (fused_lm_head_argmax.wgsl's `parts` finishes it).
// W is f32 / f16 / bf16 or Q8_0 / Q4_0 blocks (lib_lm_head.wgsl's weight sections: `w`, part4,
// xat). x (times gamma) is staged once a workgroup in workgroup memory (XV vec4s). R consecutive
// rows share a group of T lanes (LG = WG / T groups a workgroup); each lane reads a unit (8 float
// weights, or a 32-element block) of each of the R rows a step and U steps' loads are issued
// together. The grid is fixed (at most one row block per lane group of the whole grid): workgroup
// w's lane group l takes row blocks w LG + l, then that plus G LG, and so on (a uniform loop: the
// lane groups of a workgroup step together; blocks past the last are idle). SGX 1: the T lanes
// of a group are exactly one subgroup (the host checked the adapter's fixed subgroup size), so a
// block's R sums come from gsum4 (subgroupAdd) with no barrier; SGX 0: each lane's parts go
// through workgroup memory (rsum first where whole subgroups lie in a group) and the group's first
// lane adds them (two barriers a step).
// The prelude (src/ops/fused_lm_head.c) supplies: WG, T, R, U, XV, SGX, ARG, RW and RH (the lengths of
// red and redh: WG, or 1 where unused), lib_lm_head.wgsl's sections (rsum, rsize, gsum4, steps
// (U units of each row), the weights', best: the argmax order and best_of_group), and for float weights ldW8(v) and VW (vec4s per 8 weights), for blocks FMT with
// qlinear.wgsl's "decoders" and qlinear_fused.wgsl's "block words".

struct Params {
    N: u32, K: u32, nblk: u32, flags: u32, // flags: 1 the RMSNorm prologue
    off_x: u32, off_w: u32, off_g: u32, off_o: u32, // x, gamma in vec4s; w in units of its section; out in elements
    eps: f32, rs: u32, units: u32, pad: u32, // rs: a row's stride in w's units; units: a row's units
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> gam: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<storage, read_write> part: array<vec2<u32>>;

const LG: u32 = WG / T;

var<workgroup> xs: array<vec4<f32>, XV>;
var<workgroup> red: array<vec4<f32>, RW>;
var<workgroup> redh: array<vec4<f32>, RH>;
var<workgroup> wsum: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let wg = wid.x + wid.y * nwg.x;
    let G = nwg.x * nwg.y;
    // x * gamma staged, and x's sum of squares
    var ss = 0.0;
    let norm = (p.flags & 1u) != 0u;
    for (var c = lid; c < p.K / 4u; c += WG) {
        let v = x[p.off_x + c];
        ss += dot(v, v);
        if (norm) { xs[xat(c)] = v * gam[p.off_g + c]; } else { xs[xat(c)] = v; }
    }
    wsum[lid] = ss;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if (lid < s) { wsum[lid] += wsum[lid + s]; }
        workgroupBarrier();
    }
    var scale = 1.0;
    if (norm) { scale = inverseSqrt(wsum[0] / f32(p.K) + p.eps); }

    let lg = lid / T;
    let lane = lid % T;
    let groups = p.units;
    let rs = p.rs;
    let last = p.N - 1u;
    var bv = 0.0;
    var bi = 0xffffffffu; // none yet: any row comes before it
    for (var base = wg * LG; base < p.nblk; base += G * LG) {
        let blk = base + lg;
        let live = blk < p.nblk;
        let n0 = blk * R;
        var a = vec4<f32>(0.0); // rows 0 .. 3
        var h = vec4<f32>(0.0); // rows 4 .. 7 (R 8)
        if (live) {
            let o0 = p.off_w + min(n0, last) * rs;
            let o1 = p.off_w + min(n0 + 1u, last) * rs;
            let o2 = p.off_w + min(n0 + 2u, last) * rs;
            let o3 = p.off_w + min(n0 + 3u, last) * rs;
            let o4 = p.off_w + min(n0 + 4u, last) * rs;
            let o5 = p.off_w + min(n0 + 5u, last) * rs;
            let o6 = p.off_w + min(n0 + 6u, last) * rs;
            let o7 = p.off_w + min(n0 + 7u, last) * rs;
            var g = lane;
            for (; g + (U - 1u) * T < groups; g += U * T) { // U units' loads of each row issued together
                let st = steps(o0, o1, o2, o3, o4, o5, o6, o7, g);
                a += st[0];
                h += st[1];
            }
            for (; g < groups; g += T) {
                a += part4(o0, o1, o2, o3, g);
                if (R > 4u) { h += part4(o4, o5, o6, o7, g); }
            }
        }
        if (SGX == 1u) {
            // every lane of the group gets the R sums; lane r stores row n0 + r
            a = gsum4(a);
            if (R > 4u) { h = gsum4(h); }
            let n = n0 + lane;
            if (live && lane < R && n < p.N) {
                var v = 0.0;
                if (lane < 4u) { v = a[lane]; } else { v = h[lane & 3u]; }
                v = v * scale;
                out[p.off_o + n] = v;
                if (ARG == 1u && better(v, n, bv, bi)) { bv = v; bi = n; }
            }
        } else {
            red[lid] = vec4<f32>(rsum(a.x), rsum(a.y), rsum(a.z), rsum(a.w));
            if (R > 4u) { redh[lid] = vec4<f32>(rsum(h.x), rsum(h.y), rsum(h.z), rsum(h.w)); }
            let sg = rsize();
            workgroupBarrier();
            if (live && lane == 0u) {
                var t = red[lid];
                var th = vec4<f32>(0.0);
                if (R > 4u) { th = redh[lid]; }
                for (var j = sg; j < T; j += sg) {
                    t += red[lid + j];
                    if (R > 4u) { th += redh[lid + j]; }
                }
                for (var r = 0u; r < R; r++) {
                    let n = n0 + r;
                    if (n < p.N) {
                        var v = 0.0;
                        if (r < 4u) { v = t[r]; } else { v = th[r - 4u]; }
                        v = v * scale;
                        out[p.off_o + n] = v;
                        if (ARG == 1u && better(v, n, bv, bi)) { bv = v; bi = n; }
                    }
                }
            }
            workgroupBarrier();
        }
    }
    if (ARG == 1u) { // the workgroup's first largest
        let b = best_of_group(lid, bv, bi);
        if (lid == 0u) { part[wg] = b; }
    }
}
