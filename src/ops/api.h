/* The op functions (to move into include/wgt.h with the op enums once src/cpu/op_kinds.h settles).
 * Every op returns a new tensor in *out; inputs are never modified. */
#ifndef WGT_OPS_API_H
#define WGT_OPS_API_H

#include "cpu/op_kinds.h"
#include "wgt.h"

/* Elementwise (src/ops/elementwise.c). Result dtypes follow PyTorch: comparisons and isnan-like
 * ops give bool, float-valued ops of integers give f32, true division of integers gives f32. */
wgt_status wgt_unary(wgt_unary_op op, const wgt_tensor *x, wgt_tensor **out);
wgt_status wgt_unary_ex(wgt_unary_op op, const wgt_unary_params *params, const wgt_tensor *x, wgt_tensor **out);
wgt_status wgt_binary(wgt_binary_op op, const wgt_tensor *a, const wgt_tensor *b, wgt_tensor **out);
wgt_status wgt_where(const wgt_tensor *cond, const wgt_tensor *a, const wgt_tensor *b, wgt_tensor **out);
wgt_status wgt_full(wgt_context *ctx, wgt_dtype dtype, int ndim, const int64_t *shape, double value, wgt_tensor **out);
wgt_dtype wgt_unary_result_dtype(wgt_unary_op op, wgt_dtype x);
wgt_dtype wgt_binary_result_dtype(wgt_binary_op op, wgt_dtype a, wgt_dtype b);

/* ---- assignment (src/ops/assign.c) ---- */
/* dst (a view into existing storage) = src, converting dtype; shapes must match. The one op that
 * writes in place (KV caches, slice updates). */
wgt_status wgt_tensor_assign(wgt_tensor *dst, const wgt_tensor *src);

/* ---- quantized linear (src/ops/qlinear.c) ---- */
/* A [rows, cols] weight in a GGUF block format (Q8_0, Q4_0, Q4_K, Q6_K on the GPU; other formats
 * wgt_dequantize reads run the reference), uploaded as its raw blocks: a u8 [rows, row_bytes]
 * tensor, row-major, each row cols / block_elems blocks, as GGUF stores it. cols must be a
 * multiple of the block size (WGT_ERR_SHAPE otherwise). */
wgt_status wgt_qweight_upload(wgt_context *ctx, wgt_ftype type, int64_t rows, int64_t cols, const void *blocks,
                              wgt_tensor **out);
/* out [..., rows] f32 = x [..., cols] (f32; f16/bf16 are converted) @ W^T + bias [rows] (or NULL),
 * W dequantised inside the kernel. w may be a narrow of an uploaded weight along its rows. */
wgt_status wgt_qlinear(const wgt_tensor *x, const wgt_tensor *w, wgt_ftype type, const wgt_tensor *bias,
                       wgt_tensor **out);

#endif
