// The operations on a kernel's compute type CT that differ per dtype, for kernels that compare,
// move and average values (pool, resample, search): the plain operators for 32-bit CT, lib_i64.wgsl's
// for i64 word pairs. One section is pasted by op_wgsl_ct(dt) (src/ops/ops.c): "ct float" for f32,
// f16 and bf16 (CT = f32), "ct int" for the other 32-bit-or-narrower dtypes (CT = i32 or u32),
// "ct i64" for i64 (CT = vec2<u32>). Comparisons are false when either side is NaN.
// ---- ct float ----
fn ct_gt(a: CT, b: CT) -> bool { return a > b; }
fn ct_ge(a: CT, b: CT) -> bool { return a >= b; }
fn ct_f32(v: CT) -> f32 { return f32(v); }
fn ct_of(f: f32) -> CT { return CT(f); }
fn is_nan_ct(v: CT) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }
// ---- ct int ----
fn ct_gt(a: CT, b: CT) -> bool { return a > b; }
fn ct_ge(a: CT, b: CT) -> bool { return a >= b; }
fn ct_f32(v: CT) -> f32 { return f32(v); }
fn ct_of(f: f32) -> CT { return CT(f); }
fn is_nan_ct(v: CT) -> bool { return false; }
// ---- ct i64 ----
fn ct_gt(a: CT, b: CT) -> bool { return i64_lt(b, a); }
fn ct_ge(a: CT, b: CT) -> bool { return !i64_lt(a, b); }
fn ct_f32(v: CT) -> f32 { return i64_to_f32(v); }
fn ct_of(f: f32) -> CT { return i64_from_f32(f); }
fn is_nan_ct(v: CT) -> bool { return false; }
