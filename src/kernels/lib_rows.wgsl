// The weight loaders of matmul_rows.wgsl, one section per storage (src/ops/matmul_rows.c pastes
// one): `fn rows_w(n: u32, it: u32) -> array<vec4<f32>, 2>`, elements 8 it .. 8 it + 7 of weight
// row n.
// - "float weights": f32 / f16 / bf16 rows through the prelude's ldB8 (VB vec4s per 8 elements);
//   p.w_off and p.w_stride in vec4 units.
// - "block weights": GGUF blocks (Q8_0, Q4_0, Q4_K, Q6_K) through qlinear.wgsl's decoders (rd32 ..
//   piece, pasted by the prelude with FMT), which read the binding `w`; p.w_off and p.w_stride in
//   bytes.
// ---- float weights ----
@group(0) @binding(2) var<storage, read> b: array<vec4<u32>>;
fn rows_w(n: u32, it: u32) -> array<vec4<f32>, 2> { return ldB8(p.w_off + n * p.w_stride + it * VB); }
// ---- block weights ----
@group(0) @binding(2) var<storage, read> w: array<u32>;
fn rows_w(n: u32, it: u32) -> array<vec4<f32>, 2> {
    let pc = piece(p.w_off + n * p.w_stride, it >> 2u, it & 3u);
    return array<vec4<f32>, 2>(pc.a, pc.b);
}
