// sort.wgsl's key functions, per key width and dtype. src/ops/sort.c pastes the key width's section
// (op_wgsl_section), and for 32-bit keys the dtype's key_of: "keys 32" (KT = u32) then "key float"
// (CT = f32: sign-magnitude flip, -0 -> +0, NaN -> p.nan_key), "key u32" or "key i32" (sign bit
// flipped); "keys 64" (KT = vec2<u32>, the i64 words as (hi ^ sign bit, lo), compared high first).
// ---- keys 32 ----
fn kless(a: u32, b: u32) -> bool { return a < b; }
fn keq(a: u32, b: u32) -> bool { return a == b; }
fn kload(i: u32) -> u32 { return ka[i]; }
fn kstore(i: u32, k: u32) { kb[i] = k; }
// ---- key float ----
fn key_of(v: f32) -> u32 {
    var b = bitcast<u32>(v);
    if ((b & 0x7fffffffu) > 0x7f800000u) { return p.nan_key; }
    if ((b & 0x7fffffffu) == 0u) { b = 0u; }
    return select(b ^ 0x80000000u, ~b, (b >> 31u) != 0u);
}
// ---- key u32 ----
fn key_of(v: u32) -> u32 { return v; }
// ---- key i32 ----
fn key_of(v: i32) -> u32 { return bitcast<u32>(v) ^ 0x80000000u; }
// ---- keys 64 ----
fn kless(a: vec2<u32>, b: vec2<u32>) -> bool { return a.x < b.x || (a.x == b.x && a.y < b.y); }
fn keq(a: vec2<u32>, b: vec2<u32>) -> bool { return all(a == b); }
fn kload(i: u32) -> vec2<u32> { return vec2<u32>(ka[2u * i], ka[2u * i + 1u]); }
fn kstore(i: u32, k: vec2<u32>) {
    kb[2u * i] = k.x;
    kb[2u * i + 1u] = k.y;
}
fn key_of(v: vec2<u32>) -> vec2<u32> { return vec2<u32>(v.y ^ 0x80000000u, v.x); }
