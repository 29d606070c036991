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

#include "gpu/gpu.h"
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

/* fused_linear.wgsl's Params: N rows, K, tpr lanes a row, flags (1 bias, 2 res); offsets of x, w,
 * gamma (vec4 units, w in the loader's), bias, res, out (elements). */
typedef struct op_fl_params {
    uint32_t N, K, tpr, flags, off_x, off_w, off_g, off_b, off_r, off_o;
    float eps;
    uint32_t pad;
} op_fl_params;
/* wgt_fused_linear's kernel for one row through a weight of dtype wdt [N, K] (bias of bdt), and
 * its grid: *p gets N, K and tpr (the caller fills the rest). The graph's routing
 * (src/ops/fused_route.c) takes the same kernel for the ops it replaces, named `routed` (the ops it
 * runs, for profiles: a pipeline of its own; NULL for the op's). */
wgt_status op_fused_linear_kernel(wgt_context *ctx, int pro, wgt_dtype wdt, wgt_dtype bdt, int64_t N, int64_t K,
                                  const char *routed, wgt_kernel **k, op_fl_params *p, uint32_t *gx, uint32_t *gy);
/* wgt_fused_qkv_rope_cache's kernel (fused_linear_qkv_rope.wgsl) and its workgroup size *wg. */
wgt_status op_fused_qkv_kernel(wgt_context *ctx, wgt_dtype wdt, wgt_dtype bdt, const char *routed, wgt_kernel **k,
                               uint32_t *wg);

/* fused_qkv_rope.wgsl's Params (wgt_qkv_rope_cache): L rows of x [L, (Hq + 2 Hkv) hd], the
 * rotation, pos0 and the caches' rows (off_k, off_v: row pos0 of head 0), offsets in elements. */
typedef struct op_qkv_rope_params {
    uint32_t L, hd, Hq, Hkv, rot, interleaved, pos0, ctx, off_x, off_q, off_k, off_v;
    float af;
    uint32_t n, pad0, pad1;
} op_qkv_rope_params;

/* What the two fused q/k/v kernels share (fused_linear_qkv_rope.wgsl's "params" section, which
 * qlinear_qkv_rope.wgsl pastes; wgt_fused_qkv_rope_cache here and wgt_fused_qkv_rope_qcache in
 * qlinear.c): their Params. S row pairs ((Hq + 2 Hkv) hd / 2), tpr lanes a pair, flags 1 bias;
 * offsets of x, gamma (vec4 units), w (the kernel's units), bias, q, the caches' row pos (elements);
 * af the rotation's factor; row_bytes a quantized weight row's bytes (0 for float weights). */
typedef struct op_qkv_params {
    uint32_t S, K, tpr, flags, off_x, off_w, off_g, off_b, hd, Hq, Hkv, rot, interleaved, pos, ctx, off_q,
        off_k, off_v;
    float af, eps;
    uint32_t row_bytes, pad0, pad1, pad2;
} op_qkv_params;
/* 1 when k_cache and v_cache are f32 contiguous [Hkv, ctx, hd] caches in two buffers with row pos0
 * inside: what the kernels write in place. */
int op_qkv_caches_fit(const wgt_tensor *k_cache, const wgt_tensor *v_cache, int64_t Hkv, int64_t hd, int64_t pos0);
/* The set-up after the weight's own bindings (b[0..3]: x, w, gamma, bias): the rotation's
 * frequencies (*freq, b[4]), q [Hq, 1, hd] (*y, b[5]), the caches (b[6], b[7], bound whole so the
 * bind group is the same at every position) and p's head, rotation, position and output fields.
 * The caller frees *freq and finishes *y, also on failure. */
wgt_status op_qkv_setup(wgt_context *ctx, const char *op, const wgt_rope_params *rp, int rot, int interleaved,
                        int64_t Hq, int64_t Hkv, int64_t hd, int64_t pos0, wgt_tensor *k_cache, wgt_tensor *v_cache,
                        op_qkv_params *p, wgt_binding *b, int64_t *base, wgt_tensor **freq, wgt_tensor **y);
/* Lanes a row pair (p->tpr) and the grid: 32 lanes a pair, fewer pairs a workgroup when that
 * would leave under 256 workgroups, or pairs_asked (a power of two up to wg / 32) when given;
 * solo: the barrier-free entry's one invocation a pair, 64 a workgroup. */
void op_qkv_grid(wgt_context *ctx, uint32_t wg, int pairs_asked, int solo, op_qkv_params *p, uint32_t *gx,
                 uint32_t *gy);
/* Declares p's position-dependent fields (the angle's position, the cache rows) to a graph
 * capture: called just before the dispatch. */
void op_qkv_position(wgt_context *ctx, int64_t pos0, int64_t hd, const wgt_tensor *k_cache,
                     const wgt_tensor *v_cache, const int64_t *base);

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
/* The gate/up product of a SwiGLU MLP with SwiGLU in its epilogue: *out [..., rows / 2] = silu(a) * b
 * where y = pro(x) @ W^T + bias (pro none or RMSNorm, as wgt_fused_qlinear) and a, b are y's first
 * and second halves (W's gate rows, then its up rows). One token through Q8_0 / Q4_0 blocks is one
 * pass (qlinear_fused.wgsl's entry `rows`, each lane group a gate row and its up row); anything
 * else is wgt_fused_qlinear, then wgt_swiglu. */
wgt_status wgt_fused_qlinear_glu(const wgt_tensor *x, wgt_fused_prologue pro, const wgt_tensor *gamma, double eps,
                                 const wgt_tensor *w, wgt_ftype type, const wgt_tensor *bias, wgt_tensor **out);
/* 1 when the decoder's quantized gate/up product takes SwiGLU in its epilogue (WGT_QLINEAR_GLU). */
int op_qlinear_glu(void);
/* wgt_fused_qkv_rope_cache with a quantized q/k/v weight w (as wgt_qlinear takes it: (Hq + 2 Hkv) hd
 * rows of K columns): one token in one pass over the blocks on the GPU
 * (src/kernels/qlinear_qkv_rope.wgsl); anything else, and WGT_QLINEAR_QKV=0, wgt_fused_qlinear with
 * the norm, then wgt_qkv_rope_cache. */
wgt_status wgt_fused_qkv_rope_qcache(const wgt_tensor *x, const wgt_tensor *gamma, double eps, const wgt_tensor *w,
                                     wgt_ftype type, const wgt_tensor *bias, int64_t Hq, int64_t Hkv, int64_t hd,
                                     int64_t pos0, int rot, int interleaved, const wgt_rope_params *rp,
                                     wgt_tensor *k_cache, wgt_tensor *v_cache, wgt_tensor **q);

#endif
