// What the index kernels' preludes paste per dtype (src/ops/shape.c, src/ops/index.c, through
// op_wgsl_section): the index binding's readers, and index_scatter.wgsl's element codec.
//
// The index binding `ib` (shape.wgsl, shape_fill.wgsl, index.wgsl, index_scatter.wgsl):
// `fn ld_idx(i: u32) -> i32`, `fn idx_ok(i: u32) -> bool` (false: an i64 index past 32 bits) and
// `fn ld_mask(i: u32) -> bool` (nonzero; NaN counts as set, tested on the bits so that no compiler
// folds NaN != 0 away). "index i64" is all three over the word pairs; for the other dtypes the
// prelude generates ld_idx and ld_mask_v (op_wgsl_loader: -> f32 for floats, else u32) and pastes
// "index float" or "index int".
//
// index_scatter.wgsl's element codec, a section per dtype ("scatter f32", ...; CT is
// op_compute_type's): `fn dec(b: u32) -> CT` (the element's bits to CT), `fn enc(v: CT) -> u32`,
// `fn nan_ct(x: CT) -> bool`, `fn to64(v: CT) -> vec2<u32>` (integers only: the walk's exact
// 64-bit value) and `fn sat_bits(r: vec2<u32>) -> u32` (a 64-bit value saturated into the dtype's
// range, the reference's double store, exact for the integers the walk produces; i64 stores both
// words itself and floats never walk, so theirs is r.x). An i64 destination's CT is i32, its low
// word (unused: i64 scatters take the word-pair paths).
// ---- index i64 ----
fn ld_idx(i: u32) -> i32 { return bitcast<i32>(ib[2u * i]); }
fn idx_ok(i: u32) -> bool { return ib[2u * i + 1u] == select(0u, 0xffffffffu, bitcast<i32>(ib[2u * i]) < 0); }
fn ld_mask(i: u32) -> bool { return (ib[2u * i] | ib[2u * i + 1u]) != 0u; }
// ---- index float ----
fn idx_ok(i: u32) -> bool { return true; }
fn ld_mask(i: u32) -> bool { return (bitcast<u32>(ld_mask_v(i)) & 0x7fffffffu) != 0u; }
// ---- index int ----
fn idx_ok(i: u32) -> bool { return true; }
fn ld_mask(i: u32) -> bool { return ld_mask_v(i) != 0u; }
// ---- scatter f32 ----
fn dec(b: u32) -> CT { return bitcast<f32>(b); }
fn enc(v: CT) -> u32 { return bitcast<u32>(v); }
fn nan_ct(x: CT) -> bool { return (bitcast<u32>(f32(x)) & 0x7fffffffu) > 0x7f800000u; }
fn to64(v: CT) -> vec2<u32> { return vec2<u32>(0u, 0u); }
fn sat_bits(r: vec2<u32>) -> u32 { return r.x; }
// ---- scatter f16 ----
fn dec(b: u32) -> CT { return unpack2x16float(b).x; }
fn enc(v: CT) -> u32 { return pack2x16float(vec2<f32>(v, 0.0)); }
fn nan_ct(x: CT) -> bool { return (bitcast<u32>(f32(x)) & 0x7fffffffu) > 0x7f800000u; }
fn to64(v: CT) -> vec2<u32> { return vec2<u32>(0u, 0u); }
fn sat_bits(r: vec2<u32>) -> u32 { return r.x; }
// ---- scatter bf16 ----
fn dec(b: u32) -> CT { return bitcast<f32>(b << 16u); }
fn enc(v: CT) -> u32 { return bf16_bits(v); } // elementwise_ops.wgsl's "bf16" section
fn nan_ct(x: CT) -> bool { return (bitcast<u32>(f32(x)) & 0x7fffffffu) > 0x7f800000u; }
fn to64(v: CT) -> vec2<u32> { return vec2<u32>(0u, 0u); }
fn sat_bits(r: vec2<u32>) -> u32 { return r.x; }
// ---- scatter i32 ----
fn dec(b: u32) -> CT { return bitcast<i32>(b); }
fn enc(v: CT) -> u32 { return bitcast<u32>(v); }
fn nan_ct(x: CT) -> bool { return false; }
fn to64(v: CT) -> vec2<u32> { return i64_from_i32(v); }
fn sat_bits(r: vec2<u32>) -> u32 { return i64_min(i64_max(r, vec2<u32>(0x80000000u, 0xffffffffu)), vec2<u32>(0x7fffffffu, 0u)).x; }
// ---- scatter u32 ----
fn dec(b: u32) -> CT { return b; }
fn enc(v: CT) -> u32 { return v; }
fn nan_ct(x: CT) -> bool { return false; }
fn to64(v: CT) -> vec2<u32> { return i64_from_u32(v); }
fn sat_bits(r: vec2<u32>) -> u32 { return i64_min(i64_max(r, vec2<u32>(0u, 0u)), vec2<u32>(0xffffffffu, 0u)).x; }
// ---- scatter i8 ----
fn dec(b: u32) -> CT { return extractBits(bitcast<i32>(b), 0u, 8u); }
fn enc(v: CT) -> u32 { return bitcast<u32>(v); }
fn nan_ct(x: CT) -> bool { return false; }
fn to64(v: CT) -> vec2<u32> { return i64_from_i32(v); }
fn sat_bits(r: vec2<u32>) -> u32 { return i64_min(i64_max(r, vec2<u32>(0xffffff80u, 0xffffffffu)), vec2<u32>(0x7fu, 0u)).x & 0xffu; }
// ---- scatter u8 ----
fn dec(b: u32) -> CT { return i32(b); }
fn enc(v: CT) -> u32 { return bitcast<u32>(v); }
fn nan_ct(x: CT) -> bool { return false; }
fn to64(v: CT) -> vec2<u32> { return i64_from_i32(v); }
fn sat_bits(r: vec2<u32>) -> u32 { return i64_min(i64_max(r, vec2<u32>(0u, 0u)), vec2<u32>(0xffu, 0u)).x; }
// ---- scatter bool ----
fn dec(b: u32) -> CT { return select(0, 1, b != 0u); }
fn enc(v: CT) -> u32 { return select(0u, 1u, v != 0); }
fn nan_ct(x: CT) -> bool { return false; }
fn to64(v: CT) -> vec2<u32> { return i64_from_i32(v); }
fn sat_bits(r: vec2<u32>) -> u32 { return select(0u, 1u, !i64_is_zero(r)); }
// ---- scatter i64 ----
fn dec(b: u32) -> CT { return i32(b); }
fn enc(v: CT) -> u32 { return bitcast<u32>(v); }
fn nan_ct(x: CT) -> bool { return false; }
fn to64(v: CT) -> vec2<u32> { return i64_from_i32(v); }
fn sat_bits(r: vec2<u32>) -> u32 { return r.x; }
