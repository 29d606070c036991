// Matrix-vector products for decode (M <= MAXM rows of A per batch): out[z, m, n0 + n] =
// alpha * dot(A[z, m, :], B[z, :, n]) + beta * C[z, m, n], with A and B contiguous along k (B is
// a weight matrix stored [N, K] row-major, as PyTorch and GGUF keep it). Weight rows are streamed
// once with 16-byte loads; p.tpr invocations share one output row (WG / p.tpr rows per
// workgroup), then reduce the MAXM sums of a lane as one vec4 through lib_rowsum.wgsl's row sum.
// The prelude (src/ops/matmul.c) supplies: the binding `a` (array<vec4<u32>>; array<u32> where a
// graph computes A's elements with a fused prologue), ldA8(v) / ldB8(v), 8 elements from vec4
// index v as two vec4<f32>; VA / VB, vec4s per 8 elements (2 for f32, 1 for f16/bf16); ldC (scalar, strided);
// lib_rowsum.wgsl's section (op_wgsl_row_subgroups: HAS_SG, rsum, rsize, row_share, row_total);
// mm_pro_begin(lid), run by the whole workgroup first (nothing, or a graph's fused norm computing
// the row's statistic: lib_matmul.wgsl's "gemv norm prologue").
// Offsets and strides of A and B arrive in vec4 units.

struct Params {
    M: u32, N: u32, K: u32, batch: u32,
    off_a: u32, off_b: u32, off_c: u32, has_c: u32,
    sam: u32, sak: u32, sbk: u32, sbn: u32,
    scm: u32, scn: u32, alpha: f32, beta: f32,
    bshape: vec4<u32>,
    bsa: vec4<u32>,
    bsb: vec4<u32>,
    bsc: vec4<u32>,
    ldo: u32, n0: u32, z0: u32, tpr: u32,
    zero: u32, zpad0: u32, zpad1: u32, zpad2: u32, // zero: 0 (a graph's fused epilogue reads it)
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(2) var<storage, read> b: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> c: array<u32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

const MAXM: u32 = 4u;

fn batch_offsets(z: u32) -> vec3<u32> {
    var rem = z;
    var o = vec3<u32>(0u, 0u, 0u);
    for (var d = 3i; d >= 0; d = d - 1i) {
        let n = p.bshape[d];
        let i = rem % n;
        rem = rem / n;
        o = o + i * vec3<u32>(p.bsa[d], p.bsb[d], p.bsc[d]);
    }
    return o;
}

fn dot8(w: array<vec4<f32>, 2>, x: array<vec4<f32>, 2>) -> f32 {
    return dot(w[0], x[0]) + dot(w[1], x[1]);
}

// lib_rowsum.wgsl sums a lane's MAXM row sums over the lanes of its output column
alias ROW = vec4<f32>; // MAXM sums
fn row_rsum(v: ROW) -> ROW { return ROW(rsum(v.x), rsum(v.y), rsum(v.z), rsum(v.w)); }
var<workgroup> red: array<ROW, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    mm_pro_begin(lid);
    let rows = WG / p.tpr;
    let r = lid / p.tpr;
    let lane = lid % p.tpr;
    let n = (wid.x + wid.y * nwg.x) * rows + r;
    let z = wid.z + p.z0;
    let bo = batch_offsets(z);
    var acc = array<f32, MAXM>(0.0, 0.0, 0.0, 0.0);
    let groups = p.K / 8u;
    if (n < p.N) {
        let brow = p.off_b + bo.y + n * p.sbn;
        let arow = p.off_a + bo.x;
        var g = lane;
        // One token (decode): eight weight loads in flight and two partial sums; at 512 MiB this
        // streams at 3.9 TB/s f32 on the H200 against 3.6 for the general loop below.
        if (p.M == 1u) {
            var s0 = 0.0; var s1 = 0.0;
            for (; g + 7u * p.tpr < groups; g = g + 8u * p.tpr) {
                let w0 = ldB8(brow + g * VB);
                let w1 = ldB8(brow + (g + p.tpr) * VB);
                let w2 = ldB8(brow + (g + 2u * p.tpr) * VB);
                let w3 = ldB8(brow + (g + 3u * p.tpr) * VB);
                let w4 = ldB8(brow + (g + 4u * p.tpr) * VB);
                let w5 = ldB8(brow + (g + 5u * p.tpr) * VB);
                let w6 = ldB8(brow + (g + 6u * p.tpr) * VB);
                let w7 = ldB8(brow + (g + 7u * p.tpr) * VB);
                s0 = s0 + dot8(w0, ldA8(arow + g * VA)) + dot8(w1, ldA8(arow + (g + p.tpr) * VA))
                        + dot8(w2, ldA8(arow + (g + 2u * p.tpr) * VA)) + dot8(w3, ldA8(arow + (g + 3u * p.tpr) * VA));
                s1 = s1 + dot8(w4, ldA8(arow + (g + 4u * p.tpr) * VA)) + dot8(w5, ldA8(arow + (g + 5u * p.tpr) * VA))
                        + dot8(w6, ldA8(arow + (g + 6u * p.tpr) * VA)) + dot8(w7, ldA8(arow + (g + 7u * p.tpr) * VA));
            }
            acc[0] = s0 + s1;
        }
        // four weight loads in flight per iteration
        for (; g + 3u * p.tpr < groups; g = g + 4u * p.tpr) {
            let w0 = ldB8(brow + g * VB);
            let w1 = ldB8(brow + (g + p.tpr) * VB);
            let w2 = ldB8(brow + (g + 2u * p.tpr) * VB);
            let w3 = ldB8(brow + (g + 3u * p.tpr) * VB);
            for (var m = 0u; m < MAXM; m++) {
                if (m < p.M) {
                    let xr = arow + m * p.sam;
                    acc[m] = acc[m] + dot8(w0, ldA8(xr + g * VA)) + dot8(w1, ldA8(xr + (g + p.tpr) * VA)) +
                             dot8(w2, ldA8(xr + (g + 2u * p.tpr) * VA)) + dot8(w3, ldA8(xr + (g + 3u * p.tpr) * VA));
                }
            }
        }
        for (; g < groups; g = g + p.tpr) {
            let w0 = ldB8(brow + g * VB);
            for (var m = 0u; m < MAXM; m++) {
                if (m < p.M) { acc[m] = acc[m] + dot8(w0, ldA8(arow + m * p.sam + g * VA)); }
            }
        }
    }
    let sg = row_share(lid, lane, ROW(acc[0], acc[1], acc[2], acc[3]));
    if (lane == 0u && n < p.N) {
        let t4 = row_total(lid, sg);
        for (var m = 0u; m < MAXM; m++) {
            if (m < p.M) {
                let t = t4[m];
                var v = p.alpha * t;
                if (p.has_c != 0u) { v = v + p.beta * ldC(p.off_c + bo.z + m * p.scm + n * p.scn); }
                mm_st((z * p.M + m) * p.ldo + p.n0 + n, v);
            }
        }
    }
}

// The barrier-free variant (src/ops/matmul.c takes it where wgt_gpu_avoid_barriers says so, with
// p.tpr = 1, for any M: a prompt's prefill too, 4 rows of A at a time): one invocation per output
// column n and batch z, no workgroup memory. SwiftShader runs a kernel that holds a barrier as one
// coroutine per subgroup and workgroup (seconds a call); this runs as one loop. `main` above is
// unchanged.
@compute @workgroup_size(64)
fn solo(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let n = (wid.x + wid.y * nwg.x) * 64u + lid;
    if (n >= p.N) { return; }
    let z = wid.z + p.z0;
    let bo = batch_offsets(z);
    let groups = p.K / 8u;
    let brow = p.off_b + bo.y + n * p.sbn;
    let arow = p.off_a + bo.x;
    for (var m0 = 0u; m0 < p.M; m0 += MAXM) {
        var acc = array<f32, MAXM>(0.0, 0.0, 0.0, 0.0);
        for (var g = 0u; g < groups; g++) {
            let w0 = ldB8(brow + g * VB);
            for (var m = 0u; m < MAXM; m++) {
                if (m0 + m < p.M) { acc[m] = acc[m] + dot8(w0, ldA8(arow + (m0 + m) * p.sam + g * VA)); }
            }
        }
        for (var m = 0u; m < MAXM; m++) {
            if (m0 + m < p.M) {
                var v = p.alpha * acc[m];
                if (p.has_c != 0u) { v = v + p.beta * ldC(p.off_c + bo.z + (m0 + m) * p.scm + n * p.scn); }
                mm_st((z * p.M + m0 + m) * p.ldo + p.n0 + n, v);
            }
        }
    }
}
