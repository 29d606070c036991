// Subgroup operations, or their stand-ins where a kernel runs without subgroups. A prelude pastes
// one section (op_wgsl_section); where it pastes a subgroup one, the prelude starts with
// `enable subgroups;`.
// - The kernels that combine partial results across a subgroup before the workgroup tree (norm,
//   reduce): `shx_f32(v, m)` and `shx_u32(v, m)`, the value of lane (lane ^ m): "shuffle" with
//   SG > 1, "no shuffle" otherwise, where SG is 1 and the kernels' loops
//   `for (var m = 1u; m < SG; ...)` never call them.
// - qlinear's kernels (src/ops/qlinear.c): `sg_sum(v)`, the subgroup's sum: "sg sum" with SG > 1,
//   "no sg sum" (v itself) otherwise.
// (The matrix-vector row sum's subgroup helpers are lib_rowsum.wgsl's sections.)
// ---- shuffle ----
fn shx_f32(v: f32, m: u32) -> f32 { return subgroupShuffleXor(v, m); }
fn shx_u32(v: u32, m: u32) -> u32 { return subgroupShuffleXor(v, m); }
// ---- no shuffle ----
fn shx_f32(v: f32, m: u32) -> f32 { return v; }
fn shx_u32(v: u32, m: u32) -> u32 { return v; }
// ---- sg sum ----
fn sg_sum(v: f32) -> f32 { return subgroupAdd(v); }
// ---- no sg sum ----
fn sg_sum(v: f32) -> f32 { return v; }
