/*
 * The fused kernels of the decoder step: a layer's norm, products, rotation and cache writes in as
 * few dispatches as the model code (src/models/forward.c) needs for one token. Not public API:
 * they exist for that one caller's shapes and may change with it, so libwgt does not export them
 * (include/wgt.h keeps wgt_swiglu, which is a plain op). Outside the shapes it fuses, each composes
 * the plain ops, so every shape is accepted.
 * Tests reach them through this header (tests/ops/test_gpu_fused.c, test_gpu_qlinear_fused.c) and the
 * harness (testkit/harness/table_fused.c).
 */
#ifndef WGT_OPS_FUSED_H
#define WGT_OPS_FUSED_H

#include "wgt.h"

/* ---- src/ops/fused.c ---- */
/* What wgt_fused_linear applies to x before the product. */
typedef enum wgt_fused_prologue {
    WGT_PRO_NONE = 0,     /* x itself */
    WGT_PRO_RMS_NORM = 1, /* rms_norm(x) * gamma over the last dim (eps) */
    WGT_PRO_SWIGLU = 2,   /* silu(x[..., :K]) * x[..., K:], x holding 2K values (wgt_swiglu) */
} wgt_fused_prologue;
/* *out [..., N] = pro(x) @ w^T + bias + res: a linear layer w [N, K] with the norm or activation
 * before it and the residual add after it (bias [N] and res [..., N] may be NULL). One token (x of
 * one row, f32; w f32/f16/bf16) is one pass over the weights; anything else composes the plain ops. */
wgt_status wgt_fused_linear(const wgt_tensor *x, wgt_fused_prologue pro, const wgt_tensor *gamma, double eps,
                            const wgt_tensor *w, const wgt_tensor *bias, const wgt_tensor *res, wgt_tensor **out);
/* The attention inputs of one token in one pass: rms_norm(x [1, K]) * gamma through the stacked
 * q/k/v weight w [(Hq + 2 Hkv) hd, K] (+ bias), then wgt_qkv_rope_cache's rotation and cache
 * writes at position pos0; *q [Hq, 1, hd]. Anything else composes wgt_fused_linear and
 * wgt_qkv_rope_cache. */
wgt_status wgt_fused_qkv_rope_cache(const wgt_tensor *x, const wgt_tensor *gamma, double eps, const wgt_tensor *w,
                                    const wgt_tensor *bias, int64_t Hq, int64_t Hkv, int64_t hd, int64_t pos0, int rot,
                                    int interleaved, const wgt_rope_params *rp, wgt_tensor *k_cache,
                                    wgt_tensor *v_cache, wgt_tensor **q);
/* *sum = a + b and *out = rms_norm(*sum) over the last dim (weight w [D], NULL for ones): the
 * residual add and the norm after it, one pass (f32; other dtypes compose the two ops). */
wgt_status wgt_add_rms_norm(const wgt_tensor *a, const wgt_tensor *b, const wgt_tensor *w, double eps,
                            wgt_tensor **sum, wgt_tensor **out);
/* The attention inputs from one fused q/k/v matmul x [L, (Hq + 2 Hkv) hd] whose row l is position
 * pos0 + l: *q [Hq, L, hd] gets the query heads rotated (wgt_rope's rule: the first rot features,
 * interleaved pairs or halves), the key heads go rotated into k_cache [Hkv, ctx, hd] at rows
 * pos0 .. pos0 + L - 1 and the value heads into v_cache likewise, in one pass (f32; other dtypes
 * and layouts compose rope and assignments). */
wgt_status wgt_qkv_rope_cache(const wgt_tensor *x, int64_t Hq, int64_t Hkv, int64_t hd, int64_t pos0, int rot,
                              int interleaved, const wgt_rope_params *rp, wgt_tensor *k_cache, wgt_tensor *v_cache,
                              wgt_tensor **q);

/* ---- src/ops/qlinear.c ---- */
/* 1 when wgt_qlinear reads type's blocks on the GPU (Q8_0, Q4_0, Q4_K, Q6_K); the model loader
 * dequantises the others when it loads them. The one list of them. */
int wgt_qlinear_gpu_type(wgt_ftype type);
/* wgt_fused_linear with a quantized weight: *out [..., rows] = pro(x) @ W^T + bias + res, W as
 * wgt_qlinear takes it (cols = K; x holds 2K values for WGT_PRO_SWIGLU), gamma [K], bias [rows] and
 * res [..., rows] (either may be NULL). One token (x of one f32 row) is one pass over the blocks on
 * the GPU; anything else composes wgt_rms_norm / wgt_swiglu, wgt_qlinear and the add. */
wgt_status wgt_fused_qlinear(const wgt_tensor *x, wgt_fused_prologue pro, const wgt_tensor *gamma, double eps,
                             const wgt_tensor *w, wgt_ftype type, const wgt_tensor *bias, const wgt_tensor *res,
                             wgt_tensor **out);
/* wgt_fused_qkv_rope_cache with a quantized q/k/v weight w (as wgt_qlinear takes it: (Hq + 2 Hkv) hd
 * rows of K columns): with WGT_QLINEAR_QKV=1, one token in one pass over the blocks on the GPU
 * (src/kernels/qlinear_qkv_rope.wgsl); otherwise, and for anything else, wgt_fused_qlinear with
 * the norm, then wgt_qkv_rope_cache. */
wgt_status wgt_fused_qkv_rope_qcache(const wgt_tensor *x, const wgt_tensor *gamma, double eps, const wgt_tensor *w,
                                     wgt_ftype type, const wgt_tensor *bias, int64_t Hq, int64_t Hkv, int64_t hd,
                                     int64_t pos0, int rot, int interleaved, const wgt_rope_params *rp,
                                     wgt_tensor *k_cache, wgt_tensor *v_cache, wgt_tensor **q);

#endif
