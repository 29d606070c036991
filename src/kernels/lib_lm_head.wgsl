// The parts of fused_lm_head.wgsl that vary by pipeline (src/ops/fused_lm_head.c pastes one section of each
// pair): the sums through workgroup memory ("group sums": a subgroup's sum first, where whole
// subgroups lie in a lane group; "no group sums"), the subgroup sum of a block's rows ("subgroup
// rows": the T lanes of a group are one subgroup; "no subgroup rows": unused), and the weights
// ("float weights": f32 / f16 / bf16 rows through the prelude's ldW8, 8 weights a unit, offsets in
// the loader's vec4s; "block weights": Q8_0 / Q4_0 rows, a 32-element block a unit, read as
// qlinear_fused.wgsl's entry `rows` reads them (its "block words" section and qlinear.wgsl's
// "decoders", pasted before this), offsets in bytes, x staged with a vec4 of padding a block so a
// subgroup's lanes, a block each, spread their 16-byte reads over the banks).
// "steps U" (1, 2, 4): fn steps(o0 .. o7, g) -> array<vec4<f32>, 2>, the sums of units g, g + T, ..
// (U of them) of rows 0 .. 3 and 4 .. 7, their loads issued together (a section each, so a
// pipeline holds only its own: the CPU adapters compile large shaders slowly).
// Each weight section declares binding 2 (`w`), fn xat(c) (the staged vec4 c's slot in xs) and
// fn part4(o0, o1, o2, o3, g) -> vec4<f32>: the dot products of unit g of the rows at o0 .. o3
// (the first R of them) with the staged x.
// ---- best ----
// The greedy argmax's order and a workgroup's first largest (fused_lm_head.wgsl's first stage and
// fused_lm_head_argmax.wgsl's last): better(v, i, bv, bi) is true when (v, i) comes before (bv, bi)
// (NaN first, then the larger value, then the lower row; row 2^32 - 1 is none yet), best_of_group
// the first of the WG lanes' (bv, bi) by a tree over bval, bidx, as (bits of the value, row) to
// every lane. WG from the prelude; a call from uniform control flow.
var<workgroup> bval: array<f32, WG>;
var<workgroup> bidx: array<u32, WG>;
fn is_nan_f(v: f32) -> bool { return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }
fn better(v: f32, i: u32, bv: f32, bi: u32) -> bool {
    let vn = is_nan_f(v);
    let bn = is_nan_f(bv);
    if (i == 0xffffffffu || bi == 0xffffffffu) { return bi == 0xffffffffu && i != bi; }
    if (vn || bn) { return vn && (!bn || i < bi); }
    return v > bv || (v == bv && i < bi);
}
fn best_of_group(lid: u32, bv: f32, bi: u32) -> vec2<u32> {
    bval[lid] = bv;
    bidx[lid] = bi;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
        if (lid < s && better(bval[lid + s], bidx[lid + s], bval[lid], bidx[lid])) {
            bval[lid] = bval[lid + s];
            bidx[lid] = bidx[lid + s];
        }
        workgroupBarrier();
    }
    return vec2<u32>(bitcast<u32>(bval[0]), bidx[0]);
}

// ---- group sums ----
fn rsum(v: f32) -> f32 { return subgroupAdd(v); }
fn rsize() -> u32 { return subgroupAdd(1u); }
// ---- no group sums ----
fn rsum(v: f32) -> f32 { return v; }
fn rsize() -> u32 { return 1u; }
// ---- subgroup rows ----
fn gsum4(v: vec4<f32>) -> vec4<f32> { return subgroupAdd(v); }
// ---- no subgroup rows ----
fn gsum4(v: vec4<f32>) -> vec4<f32> { return v; }
// ---- steps 1 ----
fn steps(o0: u32, o1: u32, o2: u32, o3: u32, o4: u32, o5: u32, o6: u32, o7: u32, g: u32) -> array<vec4<f32>, 2> {
    var s = array<vec4<f32>, 2>(part4(o0, o1, o2, o3, g), vec4<f32>(0.0));
    if (R > 4u) { s[1] = part4(o4, o5, o6, o7, g); }
    return s;
}
// ---- steps 2 ----
fn steps(o0: u32, o1: u32, o2: u32, o3: u32, o4: u32, o5: u32, o6: u32, o7: u32, g: u32) -> array<vec4<f32>, 2> {
    var s = array<vec4<f32>, 2>(part4(o0, o1, o2, o3, g) + part4(o0, o1, o2, o3, g + T), vec4<f32>(0.0));
    if (R > 4u) { s[1] = part4(o4, o5, o6, o7, g) + part4(o4, o5, o6, o7, g + T); }
    return s;
}
// ---- steps 4 ----
fn steps(o0: u32, o1: u32, o2: u32, o3: u32, o4: u32, o5: u32, o6: u32, o7: u32, g: u32) -> array<vec4<f32>, 2> {
    var s = array<vec4<f32>, 2>((part4(o0, o1, o2, o3, g) + part4(o0, o1, o2, o3, g + T)) +
                                (part4(o0, o1, o2, o3, g + 2u * T) + part4(o0, o1, o2, o3, g + 3u * T)), vec4<f32>(0.0));
    if (R > 4u) {
        s[1] = (part4(o4, o5, o6, o7, g) + part4(o4, o5, o6, o7, g + T)) +
               (part4(o4, o5, o6, o7, g + 2u * T) + part4(o4, o5, o6, o7, g + 3u * T));
    }
    return s;
}
// ---- float weights ----
@group(0) @binding(2) var<storage, read> w: array<vec4<u32>>;
fn xat(c: u32) -> u32 { return c; }
fn dot8(o: u32, g: u32) -> f32 {
    let wv = ldW8(o + g * VW);
    return dot(wv[0], xs[2u * g]) + dot(wv[1], xs[2u * g + 1u]);
}
fn part4(o0: u32, o1: u32, o2: u32, o3: u32, g: u32) -> vec4<f32> {
    var a = vec4<f32>(0.0);
    a.x = dot8(o0, g);
    if (R > 1u) { a.y = dot8(o1, g); }
    if (R > 2u) { a.z = dot8(o2, g); a.w = dot8(o3, g); }
    return a;
}
// ---- block weights ----
@group(0) @binding(2) var<storage, read> w: array<u32>;
fn xat(c: u32) -> u32 { return c + (c >> 3u); }
fn part4(o0: u32, o1: u32, o2: u32, o3: u32, g: u32) -> vec4<f32> {
    let xi = g * 9u;
    let x0 = xs[xi];
    let x1 = xs[xi + 1u];
    let x2 = xs[xi + 2u];
    let x3 = xs[xi + 3u];
    let x4 = xs[xi + 4u];
    let x5 = xs[xi + 5u];
    let x6 = xs[xi + 6u];
    let x7 = xs[xi + 7u];
    let o = g * select(18u, 34u, FMT == Q8_0);
    var a = vec4<f32>(0.0);
    a.x = blk_dot_x(blk_load(o0 + o), o0 + o, x0, x1, x2, x3, x4, x5, x6, x7);
    if (R > 1u) { a.y = blk_dot_x(blk_load(o1 + o), o1 + o, x0, x1, x2, x3, x4, x5, x6, x7); }
    if (R > 2u) {
        a.z = blk_dot_x(blk_load(o2 + o), o2 + o, x0, x1, x2, x3, x4, x5, x6, x7);
        a.w = blk_dot_x(blk_load(o3 + o), o3 + o, x0, x1, x2, x3, x4, x5, x6, x7);
    }
    return a;
}
