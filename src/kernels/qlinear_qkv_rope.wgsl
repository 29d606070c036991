// The attention inputs of one decode token through a quantized q/k/v weight, in one pass: the
// quantized twin of fused_linear_qkv_rope.wgsl. The RMSNorm of x, the product with the stacked
// weight W [C, K] (C = (Hq + 2 Hkv) hd) in its GGUF blocks, its bias, then q and k rotated, q
// written to q [Hq, 1, hd], k into the key cache and v into the value cache at row pos. A lane
// group computes a rotation pair of rows (fused_linear_qkv_rope.wgsl's pair_of), reading each
// row's blocks as qlinear.wgsl's gemv does: consecutive 8-element pieces across the group's lanes,
// four pieces of each row in flight; x and gamma loaded once for both rows.
// This file holds w's binding and the "product" (row_at, term); the prelude (src/ops/qlinear.c)
// supplies `const FMT: u32` and qlinear.wgsl's "decoders" section (rd32 .. piece, reading the `w`
// binding below), `const WG: u32`, ldBias(i), lib_rowsum.wgsl's section and
// fused_linear_qkv_rope.wgsl's sections "params" (Params, the other bindings), "rope pairs"
// (cos_sin, pair_of, put_pair) and "entries" (main, solo). x, gamma, inv_freq and the outputs are
// f32; offsets of x and gamma in vec4 units, of W in bytes, the others in elements (the caches' at
// row pos of head 0).

@group(0) @binding(2) var<storage, read> w: array<u32>;

// The byte where weight row n's blocks start.
fn row_at(n: u32) -> u32 { return p.off_w + n * p.row_bytes; }

// Dot-product terms of piece g (columns 8g .. 8g + 7: unit g / 4, quarter g % 4) for the rows
// starting at bytes r0 and r1, and x's share of the sum of squares.
fn term(r0: u32, r1: u32, g: u32) -> vec3<f32> {
    let a = piece(r0, g >> 2u, g & 3u);
    let b = piece(r1, g >> 2u, g & 3u);
    let x0 = x[p.off_x + 2u * g];
    let x1 = x[p.off_x + 2u * g + 1u];
    let y0 = x0 * gam[p.off_g + 2u * g];
    let y1 = x1 * gam[p.off_g + 2u * g + 1u];
    return vec3<f32>(dot(a.a, y0) + dot(a.b, y1), dot(b.a, y0) + dot(b.b, y1), dot(x0, x0) + dot(x1, x1));
}
