// search.wgsl's `fn sorter_at(i: u32) -> u32`: sorter element i clamped to [0, p.m - 1], per the
// sorter's dtype (its loader lds returns i32, or i64 words for i64: an index past 32 bits clamps as
// the i32 one does). src/ops/search.c pastes one section (op_wgsl_section).
// ---- sorter i32 ----
fn sorter_at(i: u32) -> u32 { return u32(clamp(lds(i), 0, i32(p.m) - 1)); }
// ---- sorter i64 ----
fn sorter_at(i: u32) -> u32 {
    let v = lds(i);
    if (i64_is_neg(v)) { return 0u; }
    return select(min(v.x, p.m - 1u), p.m - 1u, v.y != 0u);
}
