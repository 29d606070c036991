// Linear layers over a few rows (2 .. 64: one decode step of several sequences):
// out[m, n] = alpha * dot(x[m, :], W[n, :]) + beta * c[m, n], with W stored [N, K] (float, or GGUF
// blocks dequantised in registers) and f32 sums. A decode step with M rows should cost about what
// one row costs: the weights are the bytes, so each workgroup streams its weight rows once per MB
// rows of x and every weight piece it loads serves MB x rows and 4 weight rows at once (the x
// pieces, the same for all the weight rows of a workgroup, come from the cache).
// Layout: p.tpr lanes (a multiple of 32, consecutive invocations) share 4 weight rows and walk
// their 8-element pieces, lane l taking pieces l, l + tpr, ..; WG / tpr such row groups per
// workgroup; workgroup g takes rows MB * (g % p.nmb) .. of x (neighbouring workgroups share their
// weight rows, so the MB-row passes of a large M re-read them from the cache, not from memory).
// The sums of a row group go through lib_rowsum.wgsl (subgroups, then workgroup memory).
// The prelude (src/ops/matmul_rows.c) supplies: WG, MB (x rows per pass), VA (vec4s per 8 elements of
// x), ldA8(v) (8 elements of x from vec4 index v), ldC(i) (element i of c as f32), rows_w(n, it)
// (piece it of weight row n, from lib_rows.wgsl with the weight's loader or block decoders), and
// lib_rowsum.wgsl's section (rsum, row_share, row_total).

struct Params {
    M: u32, N: u32, K: u32, tpr: u32,
    x_off: u32, x_stride: u32, // vec4 units
    w_off: u32, w_stride: u32, // vec4 units (float weights) or bytes (blocks)
    c_off: u32, c_sm: u32, c_sn: u32, has_c: u32,
    alpha: f32, beta: f32, out_off: u32, out_stride: u32,
    nmb: u32, pad0: u32, pad1: u32, pad2: u32,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> a: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> c: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

fn dot8(w: array<vec4<f32>, 2>, x: array<vec4<f32>, 2>) -> f32 {
    return dot(w[0], x[0]) + dot(w[1], x[1]);
}

// lib_rowsum.wgsl sums the 4 weight rows' dot products over a row group's lanes
alias ROW = vec4<f32>;
fn row_rsum(v: ROW) -> ROW { return ROW(rsum(v.x), rsum(v.y), rsum(v.z), rsum(v.w)); }
var<workgroup> red: array<ROW, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * nwg.x;
    let m0 = (g % p.nmb) * MB;
    let lane = lid % p.tpr;
    let n0 = ((g / p.nmb) * (WG / p.tpr) + lid / p.tpr) * 4u;
    // rows past the end read the last row (no branch in the loop) and are never written
    let last = p.N - 1u;
    let n1 = min(n0 + 1u, last);
    let n2 = min(n0 + 2u, last);
    let n3 = min(n0 + 3u, last);
    let nf = min(n0, last);
    var xr: array<u32, MB>;
    for (var m = 0u; m < MB; m++) { xr[m] = p.x_off + min(m0 + m, p.M - 1u) * p.x_stride; }
    var acc: array<ROW, MB>;
    for (var m = 0u; m < MB; m++) { acc[m] = ROW(0.0); }
    let pieces = p.K / 8u;
    for (var it = lane; it < pieces; it += p.tpr) {
        let w0 = rows_w(nf, it);
        let w1 = rows_w(n1, it);
        let w2 = rows_w(n2, it);
        let w3 = rows_w(n3, it);
        for (var m = 0u; m < MB; m++) {
            let xv = ldA8(xr[m] + it * VA);
            acc[m] += ROW(dot8(w0, xv), dot8(w1, xv), dot8(w2, xv), dot8(w3, xv));
        }
    }
    for (var m = 0u; m < MB; m++) {
        let sg = row_share(lid, lane, acc[m]);
        if (lane == 0u && m0 + m < p.M) {
            let t = row_total(lid, sg);
            for (var j = 0u; j < 4u; j++) {
                let n = n0 + j;
                if (n < p.N) {
                    var v = p.alpha * t[j];
                    if (p.has_c != 0u) { v += p.beta * ldC(p.c_off + (m0 + m) * p.c_sm + n * p.c_sn); }
                    out[p.out_off + (m0 + m) * p.out_stride + n] = v;
                }
            }
        }
        workgroupBarrier(); // red serves the next row
    }
}
