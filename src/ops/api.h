/* The op functions (to move into include/wgt.h with the op enums once src/cpu/op_kinds.h settles).
 * Every op returns a new tensor in *out; inputs are never modified. */
#ifndef WGT_OPS_API_H
#define WGT_OPS_API_H

#include "cpu/cpu.h"
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

/* ---- matrix products and transformer ops (src/ops/matmul.c, attention.c, rope.c) ---- */
/* torch.matmul: 1-D to N-D, batch dims broadcast; any strided views (a transposed weight is read
 * in place). f32/f16/bf16 and mixed (f32 x f16 weights) accumulate in f32; the result has the
 * promoted dtype. Integer products run the reference. */
wgt_status wgt_matmul(const wgt_tensor *a, const wgt_tensor *b, wgt_tensor **out);
/* out [..., O] = x [..., I] @ w [O, I]^T + bias [O] (bias may be NULL). */
wgt_status wgt_linear(const wgt_tensor *x, const wgt_tensor *w, const wgt_tensor *bias, wgt_tensor **out);
/* beta * self + alpha * m1 [M, K] @ m2 [K, N]; self broadcasts (may be NULL; not read when beta == 0). */
wgt_status wgt_addmm(const wgt_tensor *self, const wgt_tensor *m1, const wgt_tensor *m2, double beta, double alpha,
                     wgt_tensor **out);
/* beta * self + alpha * b1 [B, M, K] @ b2 [B, K, N]. */
wgt_status wgt_baddbmm(const wgt_tensor *self, const wgt_tensor *b1, const wgt_tensor *b2, double beta, double alpha,
                       wgt_tensor **out);
/* out [N, M] = a [N] outer b [M]. */
wgt_status wgt_outer(const wgt_tensor *a, const wgt_tensor *b, wgt_tensor **out);
/* Rotary embedding of x [..., L, D] (positions [L] integers, or broadcasting to x's shape without
 * D): see wgt_cpu_rope. The result has x's dtype. */
wgt_status wgt_rope(const wgt_tensor *x, const wgt_tensor *positions, int rot_dim, int interleaved,
                    const wgt_rope_params *params, wgt_tensor **out);
/* Scaled dot-product attention: see wgt_cpu_sdpa (GQA/MQA, causal with offset, float or bool
 * mask broadcasting to [B, Hq, Lq, Lk], k/v may be views into a KV cache). out [B, Hq, Lq, Dv]
 * has q's dtype. params may be NULL (scale 1/sqrt(D), not causal). */
wgt_status wgt_sdpa(const wgt_tensor *q, const wgt_tensor *k, const wgt_tensor *v, const wgt_tensor *mask,
                    const wgt_sdpa_params *params, wgt_tensor **out);
/* out [ids..., D] = rows of weight [V, D] (f32/f16/bf16) at ids (integers, any shape), in dtype
 * out_dtype (f32 or the weight's). */
wgt_status wgt_embedding(const wgt_tensor *weight, const wgt_tensor *ids, wgt_dtype out_dtype, wgt_tensor **out);

/* ---- reductions and scans (src/ops/reduce.c) ---- */
/* op over the dims in `dims` (bit mask, bit d = dim d; 0 = all dims), kept as size 1 with keepdim;
 * correction: var/std only (1 = unbiased). Result dtypes: wgt_reduce_result_dtype (PyTorch's,
 * but i32 where PyTorch gives i64: sum/prod of i32/i8/u8/bool, argmax/argmin). mean, var, std and
 * norms of integers are WGT_ERR_DTYPE; amax/amin/argmax/argmin of an empty set WGT_ERR_SHAPE. */
wgt_status wgt_reduce(wgt_reduce_op op, const wgt_tensor *x, uint32_t dims, int keepdim, double correction,
                      wgt_tensor **out);
wgt_dtype wgt_reduce_result_dtype(wgt_reduce_op op, wgt_dtype x);
/* torch.max(x, dim) / torch.min(x, dim): values (x's dtype) and i32 indices of the first extreme
 * (a NaN counts as the extreme). */
wgt_status wgt_max_dim(const wgt_tensor *x, int dim, int keepdim, wgt_tensor **values, wgt_tensor **indices);
wgt_status wgt_min_dim(const wgt_tensor *x, int dim, int keepdim, wgt_tensor **values, wgt_tensor **indices);
/* Inclusive scan along dim; out has x's shape (cumsum/cumprod of i32/i8/u8/bool give i32, of u32
 * u32). indices (may be NULL; cummax/cummin only): i32, the last position of the running extreme. */
wgt_status wgt_scan(wgt_scan_op op, const wgt_tensor *x, int dim, wgt_tensor **out, wgt_tensor **indices);

/* ---- softmax and normalisation (src/ops/norm.c) ---- */
/* Along any dim; f32/f16/bf16 (integers compute and return f32). */
wgt_status wgt_softmax(const wgt_tensor *x, int dim, wgt_tensor **out);
wgt_status wgt_log_softmax(const wgt_tensor *x, int dim, wgt_tensor **out);
/* Over the last norm_ndim dims; weight/bias of those dims' shape or NULL; out has x's dtype. */
wgt_status wgt_layer_norm(const wgt_tensor *x, int norm_ndim, const wgt_tensor *weight, const wgt_tensor *bias,
                          double eps, wgt_tensor **out);
wgt_status wgt_rms_norm(const wgt_tensor *x, int norm_ndim, const wgt_tensor *weight, double eps, wgt_tensor **out);
/* x [N, C, *], groups dividing C; weight/bias [C] or NULL. */
wgt_status wgt_group_norm(const wgt_tensor *x, int groups, const wgt_tensor *weight, const wgt_tensor *bias,
                          double eps, wgt_tensor **out);
/* x [N, C, *]. training 0: normalise with running_mean/running_var [C]. training 1: with the
 * batch's statistics (biased variance), and when running stats are given update them in place
 * (PyTorch's momentum convention, see wgt_cpu_batch_norm). weight/bias [C] or NULL. */
wgt_status wgt_batch_norm(const wgt_tensor *x, wgt_tensor *running_mean, wgt_tensor *running_var,
                          const wgt_tensor *weight, const wgt_tensor *bias, int training, double momentum, double eps,
                          wgt_tensor **out);


/* ---- indexing (src/ops/index.c) ---- */
/* Index tensors: any integer dtype (i64 exact within 32 bits); [-n, 0) counts from the end. An
 * out-of-range index reads element 0 / skips its write and sets a flag on the context that
 * wgt_index_check() reports (a sync); WGT_STRICT=1 checks after every op. */
wgt_status wgt_index_select(const wgt_tensor *x, int dim, const wgt_tensor *index /* [K] */, wgt_tensor **out);
wgt_status wgt_gather(const wgt_tensor *x, int dim, const wgt_tensor *index, wgt_tensor **out); /* index's shape */
/* out = copy of self, then out[.. index[i] along dim ..] (mode)= src[i]; src has self's dtype. */
wgt_status wgt_scatter(const wgt_tensor *self, int dim, const wgt_tensor *index, const wgt_tensor *src,
                       wgt_scatter_mode mode, wgt_tensor **out);
wgt_status wgt_scatter_add(const wgt_tensor *self, int dim, const wgt_tensor *index, const wgt_tensor *src,
                           wgt_tensor **out);
wgt_status wgt_index_add(const wgt_tensor *self, int dim, const wgt_tensor *index /* [K] */,
                         const wgt_tensor *source, double alpha, wgt_tensor **out);
/* out = self; out[indices[0], .., indices[k-1]] (= or +=) values (broadcast to S + self.shape[k:]). */
wgt_status wgt_index_put(const wgt_tensor *self, const wgt_tensor *const *indices, int k, const wgt_tensor *values,
                         int accumulate, wgt_tensor **out);
wgt_status wgt_masked_fill(const wgt_tensor *x, const wgt_tensor *mask, double value, wgt_tensor **out);
/* 1-D results whose length is the number of set elements: these read a count back (a sync). */
wgt_status wgt_masked_select(const wgt_tensor *x, const wgt_tensor *mask, wgt_tensor **out);
wgt_status wgt_nonzero(const wgt_tensor *x, wgt_tensor **out); /* i64 [count, ndim] */
/* x's shape with a dim of `depth` inserted at axis; indices outside [-depth, depth) give off rows. */
wgt_status wgt_one_hot(const wgt_tensor *x, int64_t depth, int axis, double off_value, double on_value,
                       wgt_dtype dtype, wgt_tensor **out);
/* WGT_ERR_INVALID_ARGUMENT if an index op saw an out-of-range index since the last check. */
wgt_status wgt_index_check(wgt_context *ctx);

/* ---- shape and creation (src/ops/shape.c) ---- */
wgt_status wgt_tril(const wgt_tensor *x, int64_t k, wgt_tensor **out);
wgt_status wgt_triu(const wgt_tensor *x, int64_t k, wgt_tensor **out);
wgt_status wgt_arange(wgt_context *ctx, double start, double end, double step, wgt_dtype dtype, wgt_tensor **out);
wgt_status wgt_linspace(wgt_context *ctx, double start, double end, int64_t steps, wgt_dtype dtype, wgt_tensor **out);
wgt_status wgt_eye(wgt_context *ctx, int64_t n, int64_t m, wgt_dtype dtype, wgt_tensor **out);
/* Same dtype, same shape off dim (at most 64 tensors per call). */
wgt_status wgt_cat(const wgt_tensor *const *xs, int n, int dim, wgt_tensor **out);
wgt_status wgt_stack(const wgt_tensor *const *xs, int n, int dim, wgt_tensor **out);
/* Views (no copy): outs[i] gets sizes[i] along dim / torch.chunk's pieces (*n_out <= chunks). */
wgt_status wgt_split(const wgt_tensor *x, const int64_t *sizes, int n, int dim, wgt_tensor **outs);
wgt_status wgt_chunk(const wgt_tensor *x, int chunks, int dim, wgt_tensor **outs, int *n_out);
wgt_status wgt_flip(const wgt_tensor *x, const int *dims, int n, wgt_tensor **out);
/* dims NULL: roll the flattened tensor by shifts[0] (n == 1). */
wgt_status wgt_roll(const wgt_tensor *x, const int64_t *shifts, const int *dims, int n, wgt_tensor **out);
wgt_status wgt_repeat(const wgt_tensor *x, const int64_t *repeats, int n, wgt_tensor **out); /* n >= ndim */
/* pads[d] before and pads[ndim + d] after dim d (ONNX order; negative crops). */
wgt_status wgt_pad(const wgt_tensor *x, wgt_pad_mode mode, const int64_t *pads, double value, wgt_tensor **out);

#endif
