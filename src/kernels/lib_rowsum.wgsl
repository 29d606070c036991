// The row sum of the matrix-vector kernels (matmul_gemv.wgsl, fused_linear.wgsl,
// fused_linear_qkv_rope.wgsl, qlinear.wgsl's gemv): p.tpr invocations (lanes: aligned runs of
// local_invocation_index, p.tpr a power of two and a multiple of the subgroup size) share an output
// row. Each subgroup sums its lanes (when subgroups are granted), then the row's first lane adds
// the subgroup sums; without subgroups a tree in workgroup memory halves p.tpr.
// op_wgsl_row_subgroups (src/ops/ops.c) pastes one section: "subgroups" (after
// `enable subgroups;`) or "no subgroups". Each gives const HAS_SG: bool, fn rsum(x: f32) -> f32
// (the subgroup's sum, or x), fn rsize() -> u32 (the subgroup size, or 1), row_share and row_total.
// The kernel declares: alias ROW (the summed vector type: several rows' sums, or a row's sum and
// more, as a vecN), fn row_rsum(v: ROW) -> ROW (rsum of each component), var<workgroup> red:
// array<ROW, WG>, and p.tpr in its Params.
//
// row_share(lid, lane, acc) -> u32: every invocation calls it, from uniform control flow (it has
// barriers), with acc its lane's part; returns the subgroup size, for row_total.
// row_total(lid, sg) -> ROW: the row's sum, in the row's first lane (lane 0) after row_share.

// ---- subgroups ----
const HAS_SG: bool = true;
fn rsum(x: f32) -> f32 { return subgroupAdd(x); }
fn rsize() -> u32 { return subgroupAdd(1u); }
fn row_share(lid: u32, lane: u32, acc: ROW) -> u32 {
    let sg = rsize();
    red[lid] = row_rsum(acc);
    workgroupBarrier();
    return sg;
}
fn row_total(lid: u32, sg: u32) -> ROW {
    var t = red[lid];
    for (var j = sg; j < p.tpr; j = j + sg) { t = t + red[lid + j]; }
    return t;
}

// ---- no subgroups ----
const HAS_SG: bool = false;
fn rsum(x: f32) -> f32 { return x; }
fn rsize() -> u32 { return 1u; }
fn row_share(lid: u32, lane: u32, acc: ROW) -> u32 {
    red[lid] = acc;
    workgroupBarrier();
    for (var s = p.tpr / 2u; s > 0u; s = s / 2u) {
        if (lane < s) { red[lid] = red[lid] + red[lid + s]; }
        workgroupBarrier();
    }
    return 1u;
}
fn row_total(lid: u32, sg: u32) -> ROW { return red[lid]; }
