// The optional index output of the kernels that may return indices as well as values (max pools,
// max/min/argmax reductions, cummax/cummin): binding 3, u32 words. A kernel calls
// `st_idx(i, v)` unconditionally; the prelude pastes one section (op_wgsl_section): "index out",
// which declares the binding and stores, or "no index out", which does nothing (so the pipeline
// without indices has no binding 3).
// ---- index out ----
@group(0) @binding(3) var<storage, read_write> idx_out: array<u32>;
fn st_idx(i: u32, v: u32) { idx_out[i] = v; }
// ---- no index out ----
fn st_idx(i: u32, v: u32) { }
