// The row sum of the matrix-vector kernels (fused_linear.wgsl, fused_linear_qkv_rope.wgsl): p.tpr invocations
// (lanes: aligned runs of local_invocation_index, p.tpr a multiple of the subgroup size) share an
// output row. Each subgroup sums its lanes (when subgroups are granted), then the row's first lane
// adds the subgroup sums; without subgroups a tree in workgroup memory halves p.tpr.
// matmul_gemv.wgsl reduces MAXM sums per row in a [MAXM][WG] array the same way, written out there.
// The prelude supplies (op_wgsl_row_subgroups, src/ops/ops.c): const HAS_SG: bool,
// fn rsum(x: f32) -> f32 (subgroupAdd, or x) and fn rsize() -> u32 (the subgroup size, or 1).
// The kernel declares: alias ROW (the summed vector type), fn row_rsum(v: ROW) -> ROW (rsum of
// each component), var<workgroup> red: array<ROW, WG>, and p.tpr in its Params.

// Every invocation calls it, from uniform control flow (it has barriers): acc is the lane's part.
// Returns the subgroup size, for row_total.
fn row_share(lid: u32, lane: u32, acc: ROW) -> u32 {
    let sg = rsize();
    red[lid] = row_rsum(acc);
    workgroupBarrier();
    if (!HAS_SG) {
        for (var s = p.tpr / 2u; s > 0u; s = s / 2u) {
            if (lane < s) { red[lid] = red[lid] + red[lid + s]; }
            workgroupBarrier();
        }
    }
    return sg;
}

// The row's sum, in the row's first lane (lane 0) after row_share.
fn row_total(lid: u32, sg: u32) -> ROW {
    var t = red[lid];
    if (HAS_SG) {
        for (var j = sg; j < p.tpr; j = j + sg) { t = t + red[lid + j]; }
    }
    return t;
}
