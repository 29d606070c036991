// The operations reduce.wgsl and reduce_scan.wgsl leave to the prelude, per accumulation type CT:
// the plain operators for 32-bit CT (f32, i32, u32), lib_i64.wgsl's for i64 word pairs. src/ops/reduce.c
// pastes one section (op_wgsl_section: the lines after a "// ---- NAME ----" marker up to the next).
// ---- reduce 32 ----
const VW: u32 = 1u;
fn ct_words(v: CT) -> vec2<u32> { return vec2<u32>(bitcast<u32>(v), 0u); }
fn ct_of_words(w: vec2<u32>) -> CT { return bitcast<CT>(w.x); }
fn ct_f32(v: CT) -> f32 { return f32(v); }
fn ct_nan(v: CT) -> bool { return is_nan_f(f32(v)); }
fn ct_nz(v: CT) -> bool { return v != CT(0) || is_nan_f(f32(v)); }
fn ct_eq(a: CT, b: CT) -> bool { return a == b; }
fn ct_gt(a: CT, b: CT) -> bool { return a > b; }
fn ct_add(a: CT, b: CT) -> CT { return a + b; }
fn ct_mul(a: CT, b: CT) -> CT { return a * b; }
fn co_ct(v: CT) -> CO { return CO(v); }
fn co_f(v: f32) -> CO { return CO(v); }
fn co_u(v: u32) -> CO { return CO(v); }
fn shx_ct(v: CT, m: u32) -> CT { return bitcast<CT>(shx_u32(bitcast<u32>(v), m)); }
// ---- reduce i64 ----
const VW: u32 = 2u;
fn ct_words(v: CT) -> vec2<u32> { return v; }
fn ct_of_words(w: vec2<u32>) -> CT { return w; }
fn ct_f32(v: CT) -> f32 { return i64_to_f32(v); }
fn ct_nan(v: CT) -> bool { return false; }
fn ct_nz(v: CT) -> bool { return !i64_is_zero(v); }
fn ct_eq(a: CT, b: CT) -> bool { return i64_eq(a, b); }
fn ct_gt(a: CT, b: CT) -> bool { return i64_lt(b, a); }
fn ct_add(a: CT, b: CT) -> CT { return i64_add(a, b); }
fn ct_mul(a: CT, b: CT) -> CT { return i64_mul(a, b); }
fn co_ct(v: CT) -> CO { return v; }
fn co_f(v: f32) -> CO { return i64_from_f32(v); }
fn co_u(v: u32) -> CO { return i64_from_u32(v); }
fn shx_ct(v: CT, m: u32) -> CT { return vec2<u32>(shx_u32(v.x, m), shx_u32(v.y, m)); }
// ---- scan 32 ----
fn sto(i: u32, v: CT) { out[i] = bitcast<u32>(v); }
fn ct_add(a: CT, b: CT) -> CT { return a + b; }
fn ct_mul(a: CT, b: CT) -> CT { return a * b; }
fn ct_ge(a: CT, b: CT) -> bool { return a >= b; }
fn ct_le(a: CT, b: CT) -> bool { return a <= b; }
fn ct_nan(v: CT) -> bool { return is_nan_f(f32(v)); }
// ---- scan i64 ----
fn sto(i: u32, v: CT) { out[i * 2u] = v.x; out[i * 2u + 1u] = v.y; }
fn ct_add(a: CT, b: CT) -> CT { return i64_add(a, b); }
fn ct_mul(a: CT, b: CT) -> CT { return i64_mul(a, b); }
fn ct_ge(a: CT, b: CT) -> bool { return i64_le(b, a); }
fn ct_le(a: CT, b: CT) -> bool { return i64_le(a, b); }
fn ct_nan(v: CT) -> bool { return false; }
