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

#endif
