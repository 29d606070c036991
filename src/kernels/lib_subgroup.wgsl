// Subgroup operations, or their stand-ins where a kernel runs without subgroups. A prelude pastes
// one section (op_wgsl_section); where it pastes a subgroup one, the prelude starts with
// `enable subgroups;`.
// - The kernels that combine partial results across a subgroup before the workgroup tree (norm,
//   reduce): `shx_f32(v, m)` and `shx_u32(v, m)`, the value of lane (lane ^ m): "shuffle" with
//   SG > 1, "no shuffle" otherwise, where SG is 1 and the kernels' loops
//   `for (var m = 1u; m < SG; ...)` never call them.
// - The matrix-vector row sum (lib_rowsum.wgsl, through op_wgsl_row_subgroups): `const HAS_SG`,
//   `rsum(x)` (the subgroup's sum) and `rsize()` (lanes in the subgroup): "row sum" with
//   subgroups, "no row sum" without (each lane alone, the workgroup-memory tree does the rest).
// ---- shuffle ----
fn shx_f32(v: f32, m: u32) -> f32 { return subgroupShuffleXor(v, m); }
fn shx_u32(v: u32, m: u32) -> u32 { return subgroupShuffleXor(v, m); }
// ---- no shuffle ----
fn shx_f32(v: f32, m: u32) -> f32 { return v; }
fn shx_u32(v: u32, m: u32) -> u32 { return v; }
// ---- row sum ----
const HAS_SG: bool = true;
fn rsum(x: f32) -> f32 { return subgroupAdd(x); }
fn rsize() -> u32 { return subgroupAdd(1u); }
// ---- no row sum ----
const HAS_SG: bool = false;
fn rsum(x: f32) -> f32 { return x; }
fn rsize() -> u32 { return 1u; }
