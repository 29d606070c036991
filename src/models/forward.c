/* The forward pass, prefill and decode alike: L new tokens at positions n_past .. n_past + L - 1,
 * keys and values appended to the per-layer caches, logits of the last position (or all). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/model.h"
#include "ops/fused_lm_head.h"
#include "ops/ops.h"
#include "ops/qlinear_moe.h"
#include "tensor/tensor.h"

/* Tensors of one step, freed together at the end. */
typedef struct scratch {
    wgt_tensor *t[128];
    int n;
} scratch;

static wgt_tensor *keep(scratch *s, wgt_tensor *t)
{
    if (s->n < 128) s->t[s->n++] = t;
    return t;
}

static void scratch_free(scratch *s)
{
    for (int i = 0; i < s->n; i++) wgt_tensor_free(s->t[i]);
    s->n = 0;
}

#define DO(call)                                                                                   \
    do {                                                                                           \
        if ((st = (call))) goto done;                                                              \
    } while (0)
/* r = call with an out-parameter; the result joins the scratch list. */
#define T(r, call)                                                                                 \
    do {                                                                                           \
        if ((st = (call))) goto done;                                                              \
        keep(&s, r);                                                                               \
    } while (0)

static wgt_status norm(const wgt_model *m, const wgt_tensor *x, const wgt_tensor *w, const wgt_tensor *b,
                       wgt_tensor **out)
{
    if (m->cfg.rms) return wgt_rms_norm(x, 1, w, m->cfg.norm_eps, out);
    return wgt_layer_norm(x, 1, w, b, m->cfg.norm_eps, out);
}

/* WGT_DECODE_GENERIC=1: a one-token step written with plain ops (linear, add, rms_norm, silu,
 * mul, the q/k rotation with the cache writes, sdpa) instead of the hand-fused products
 * (wgt_fused_linear's norm and SwiGLU prologues and residual epilogues) and wgt_add_rms_norm /
 * wgt_swiglu: what graph capture's generic fusion makes of it is compared with the hand-fused
 * step (bench_graph decode; notes/GRAPH.md "Stage 8"). */
static int generic_decode(void)
{
    const char *e = getenv("WGT_DECODE_GENERIC");
    return e && *e == '1';
}

/* *sum = x + y and *out = norm(*sum): one fused pass for RMSNorm models (two plain ops under
 * WGT_DECODE_GENERIC=1). No norm weight (a model without pre-norms): *out is *sum. */
static wgt_status add_norm(const wgt_model *m, const wgt_tensor *x, const wgt_tensor *y, const wgt_tensor *w,
                           const wgt_tensor *b, wgt_tensor **sum, wgt_tensor **out)
{
    if (!w) {
        wgt_status st = wgt_binary(WGT_BINARY_ADD, x, y, sum);
        if (!st) *out = wgt_tensor_ref(*sum);
        return st;
    }
    if (m->cfg.rms && !generic_decode()) return wgt_add_rms_norm(x, y, w, m->cfg.norm_eps, sum, out);
    wgt_status st = wgt_binary(WGT_BINARY_ADD, x, y, sum);
    if (!st && (st = norm(m, *sum, w, b, out))) wgt_tensor_free(*sum), *sum = NULL;
    return st;
}

/* out [L, out] f32 = x [L, in] @ w^T + b, through the quantized kernel when w holds blocks. */
static wgt_status linear(const wgt_tensor *x, const mdl_weight *w, const wgt_tensor *b, wgt_tensor **out)
{
    if (w->q != WGT_FTYPE_F32) return wgt_qlinear(x, w->t, w->q, b, out);
    return wgt_linear(x, w->t, b, out);
}

/* wgt_fused_linear through float or quantized weights. */
static wgt_status fused(const wgt_tensor *x, wgt_fused_prologue pro, const wgt_tensor *gamma, double eps,
                        const mdl_weight *w, const wgt_tensor *b, const wgt_tensor *res, wgt_tensor **out)
{
    if (w->q != WGT_FTYPE_F32) return wgt_fused_qlinear(x, pro, gamma, eps, w->t, w->q, b, res, out);
    return wgt_fused_linear(x, pro, gamma, eps, w->t, b, res, out);
}

/* Bytes one storage binding of the model's device holds (less slack for an aligned start). */
static uint64_t binding_bytes(const wgt_model *m)
{
    wgt_adapter_info info;
    wgt_context_adapter_info(m->ctx, &info);
    return info.limits.max_storage_buffer_binding_size - 256;
}

/* out = x * k (k a scalar). */
static wgt_status scale(const wgt_tensor *x, double k, wgt_tensor **out)
{
    wgt_tensor *kt;
    int64_t one = 1;
    wgt_status st = wgt_full(wgt_tensor_context(x), WGT_F32, 1, &one, k, &kt);
    if (st) return st;
    st = wgt_binary(WGT_BINARY_MUL, x, kt, out);
    wgt_tensor_free(kt);
    return st;
}

/* out = cap * tanh(x / cap): Gemma 2's soft-capping of attention scores and logits. */
static wgt_status softcap(const wgt_tensor *x, double cap, wgt_tensor **out)
{
    wgt_tensor *a, *b;
    wgt_status st = scale(x, 1 / cap, &a);
    if (st) return st;
    st = wgt_unary(WGT_UNARY_TANH, a, &b);
    wgt_tensor_free(a);
    if (st) return st;
    st = scale(b, cap, out);
    wgt_tensor_free(b);
    return st;
}

/* Additive mask [L, n] for queries at positions pos0 .. pos0 + L - 1 over cached keys at
 * positions first .. first + n - 1: 0 where the key is visible (not in the future and, with a
 * window, j > i - window), -inf elsewhere. */
static wgt_status attention_mask(wgt_context *ctx, int64_t L, int64_t n, int64_t pos0, int64_t first, int64_t window,
                                 wgt_tensor **out)
{
    float *mk = malloc((size_t)(L * n) * sizeof *mk);
    if (!mk) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory for an attention mask");
    for (int64_t i = 0; i < L; i++)
        for (int64_t j = 0; j < n; j++) {
            int64_t q = pos0 + i, k = first + j;
            mk[i * n + j] = k <= q && (!window || k > q - window) ? 0.0f : -INFINITY;
        }
    int64_t shape[2] = {L, n};
    wgt_status st = wgt_tensor_from_host(ctx, WGT_F32, 2, shape, mk, out);
    free(mk);
    return st;
}

/* Attention with the scores soft-capped (Gemma 2): scores, cap, mask and softmax as separate ops,
 * since the fused kernel has no cap. q [Hq, L, hd], k and v [Hkv, n, hd]; out [1, Hq, L, hd]. */
static wgt_status attention_capped(const wgt_model_config *c, const wgt_tensor *q, const wgt_tensor *k,
                                   const wgt_tensor *v, const wgt_tensor *mask, double sc, wgt_tensor **out)
{
    int64_t Hq = c->n_heads, Hkv = c->n_kv_heads, G = Hq / Hkv, hd = c->head_dim;
    int64_t L = wgt_tensor_dim(q, 1), n = wgt_tensor_dim(k, 1);
    scratch s = {0};
    wgt_status st;
    wgt_tensor *qg, *kt, *sco, *scs, *cap, *s4, *masked, *p, *p3, *o, *o4;
    int64_t gs[3] = {Hkv, G * L, hd}, s4s[4] = {Hkv, G, L, n}, p3s[3] = {Hkv, G * L, n}, os[4] = {1, Hq, L, hd};
    T(qg, wgt_tensor_reshape(q, 3, gs, &qg)); /* the G query heads of a kv head, rows together */
    T(kt, wgt_tensor_transpose(k, 1, 2, &kt));
    T(sco, wgt_matmul(qg, kt, &sco)); /* [Hkv, G L, n] */
    T(scs, scale(sco, sc, &scs));
    T(cap, softcap(scs, c->attn_softcap, &cap));
    T(s4, wgt_tensor_reshape(cap, 4, s4s, &s4));
    T(masked, wgt_binary(WGT_BINARY_ADD, s4, mask, &masked));
    T(p, wgt_softmax(masked, 3, &p));
    T(p3, wgt_tensor_reshape(p, 3, p3s, &p3));
    T(o, wgt_matmul(p3, v, &o)); /* [Hkv, G L, hd] */
    DO(wgt_tensor_reshape(o, 4, os, &o4));
    *out = o4;
done:
    scratch_free(&s);
    return st;
}

/* The soft-capped attention's masks of one step (the fused kernel takes the window itself): one
 * for the global layers, one for the sliding ones, built on the first layer that needs each. */
typedef struct step_masks {
    wgt_tensor *m[2];
} step_masks;

/* The attention of layer li for L queries qr [Hq, L, hd] at positions pos0 .., over the layer's
 * cache (already holding this step's keys and values): out [1, Hq, L, hd]. A sliding-window layer
 * reads only the keys its window can reach, and the kernel bounds each query's window. */
static wgt_status attend(const wgt_model *m, const wgt_layer_weights *W, int64_t li, const wgt_tensor *qr,
                         int64_t pos0, int64_t L, step_masks *sm, wgt_tensor **out)
{
    const wgt_model_config *c = &m->cfg;
    int64_t window = mdl_layer_slides(c, li) ? c->window : 0;
    int64_t first = window && pos0 - window + 1 > 0 ? pos0 - window + 1 : 0, n = pos0 + L - first;
    double sc = c->attn_scale ? c->attn_scale : 1 / sqrt((double)c->head_dim);
    scratch s = {0};
    wgt_status st;
    wgt_tensor *kc, *vc, *q4, *k4, *v4;
    T(kc, wgt_tensor_narrow(W->k_cache, 1, first, n, &kc));
    T(vc, wgt_tensor_narrow(W->v_cache, 1, first, n, &vc));
    if (c->attn_softcap) { /* scores, cap, mask and softmax as separate ops */
        wgt_tensor **mask = &sm->m[window != 0];
        if (!*mask) DO(attention_mask(m->ctx, L, n, pos0, first, window, mask));
        DO(attention_capped(c, qr, kc, vc, *mask, sc, out));
        goto done;
    }
    T(q4, wgt_tensor_unsqueeze(qr, 0, &q4));
    T(k4, wgt_tensor_unsqueeze(kc, 0, &k4));
    T(v4, wgt_tensor_unsqueeze(vc, 0, &v4));
    wgt_sdpa_params sp = {sc, 1, pos0 - first, window, mdl_half_attention(m)};
    DO(wgt_sdpa(q4, k4, v4, NULL, &sp, out));
done:
    scratch_free(&s);
    return st;
}

/* The mixture-of-experts MLP of h [L, dim] (model.h), all on the device (no host round trip):
 * router logits [L, E], softmax, the top k per token (renormalised with expert_norm) scattered
 * into dense routing weights [L, E] (0 for the experts not chosen); every expert's SwiGLU from one
 * matmul [L, 2 E F] -> [L, E F], each expert's units scaled by its weight, and one matmul with the
 * experts' down projections side by side sums the chosen experts' outputs. Scaling before the
 * (linear) down projection equals transformers' weight * expert(x). The experts not chosen are
 * computed and multiplied by 0: E / k times the MLP work of a gathered form, exact all the same.
 * One token with float weights (decode) takes the gathered form: the chosen experts' gate/up rows
 * and down columns are selected on the device (index_select with indices computed from the
 * top-k), then two matrix-vector products of k experts' size (WGT_MOE_KERNELS=0). By default, as
 * measured on the H200, experts of every format (quantized, f32/f16/bf16) are read only where chosen,
 * in place (src/ops/qlinear_moe.c): two matrix-vector kernels for one token, and for many the (token, slot)
 * pairs grouped by expert with one tiled product per expert over its pairs. qwen2_moe adds its
 * shared expert scaled by sigmoid(shared_expert_gate(h)). */
static wgt_status moe_mlp(const wgt_model *m, const wgt_layer_weights *W, const wgt_tensor *h, int64_t L,
                          wgt_tensor **out)
{
    const wgt_model_config *c = &m->cfg;
    const int64_t E = c->n_experts, K = c->n_experts_used, F = c->expert_ffn;
    scratch s = {0};
    wgt_status st;
    wgt_tensor *rl, *p, *vals, *idx, *zero, *wts, *wts3, *gu, *act, *act3, *wa, *wa2, *y;
    T(rl, linear(h, &W->router, NULL, &rl)); /* [L, E] */
    if (wgt_tensor_dtype(rl) != WGT_F32) {
        wgt_tensor *r32;
        T(r32, wgt_tensor_cast(rl, WGT_F32, &r32));
        rl = r32;
    }
    T(p, wgt_softmax(rl, 1, &p));
    DO(wgt_topk(p, K, 1, 1, 1, &vals, &idx)); /* [L, K] each */
    keep(&s, vals), keep(&s, idx);
    if (c->expert_norm && K > 1) {
        wgt_tensor *sum, *vn;
        T(sum, wgt_reduce(WGT_REDUCE_SUM, vals, 1u << 1, 1, 0, &sum));
        T(vn, wgt_binary(WGT_BINARY_DIV, vals, sum, &vn));
        vals = vn;
    }
    const wgt_ftype gt = mdl_expert_type(&W->exp_gu), dt = mdl_expert_type(&W->exp_down);
    if (L == 1 && K < E && MDL_MOE_KERNELS_ON(m, W) && wgt_moe_q_fits(m->ctx, W->exp_gu.t, gt, W->exp_down.t, dt, E, F)) {
        /* one token: the chosen experts' weights read in place */
        wgt_tensor *act1;
        T(act1, wgt_moe_gate_up(h, W->exp_gu.t, gt, E, F, idx, &act1));            /* [K F] */
        T(y, wgt_moe_down(act1, W->exp_down.t, dt, E, F, idx, vals, &y));         /* [1, dim] */
        goto shared;
    }
    if (L > 1 && K < E && MDL_MOE_KERNELS_ON(m, W) &&
        wgt_moe_q_grouped_fits(m->ctx, W->exp_gu.t, gt, W->exp_down.t, dt, E, F, L, K)) {
        /* many tokens: the (token, slot) pairs grouped by expert on the device, one tiled product
         * per expert over its pairs */
        wgt_tensor *groups, *actg;
        T(groups, wgt_moe_groups(idx, E, &groups));
        T(actg, wgt_moe_gate_up_grouped(h, W->exp_gu.t, gt, E, F, K, groups, &actg));   /* [L K, F] */
        T(y, wgt_moe_down_grouped(actg, W->exp_down.t, dt, E, F, K, groups, vals, &y)); /* [L, dim] */
        goto shared;
    }
    if (L == 1 && K < E && W->exp_gu.q == WGT_FTYPE_F32 && W->exp_down.q == WGT_FTYPE_F32) {
        /* one token (decode): only the chosen experts' rows, gathered on the device. Rows of
         * expert e: gate e F + j, up E F + e F + j; its down columns e F + j (j < F). */
        wgt_tensor *base, *fF, *ar, *rg, *rg1, *off, *ru, *rows, *wsel, *dsel, *v3;
        int64_t k1[2] = {K, 1}, one[1] = {1}, kf[1] = {K * F}, k1f[3] = {1, K, F}, kk[3] = {1, K, 1}, lkf[2] = {1, K * F};
        wgt_tensor *idx1, *gu1, *act1, *a3, *wa1, *wa12;
        T(idx1, wgt_tensor_reshape(idx, 2, k1, &idx1));
        T(fF, wgt_full(m->ctx, WGT_I32, 1, one, (double)F, &fF));
        T(base, wgt_binary(WGT_BINARY_MUL, idx1, fF, &base)); /* [K, 1] */
        T(ar, wgt_arange(m->ctx, 0, (double)F, 1, WGT_I32, &ar));
        T(rg, wgt_binary(WGT_BINARY_ADD, base, ar, &rg)); /* [K, F] */
        T(rg1, wgt_tensor_reshape(rg, 1, kf, &rg1));
        T(off, wgt_full(m->ctx, WGT_I32, 1, one, (double)(E * F), &off));
        T(ru, wgt_binary(WGT_BINARY_ADD, rg1, off, &ru));
        const wgt_tensor *parts[2] = {rg1, ru};
        T(rows, wgt_cat(parts, 2, 0, &rows)); /* [2 K F]: the chosen gates, then their ups */
        T(wsel, wgt_index_select(W->exp_gu.t, 0, rows, &wsel));
        T(dsel, wgt_index_select(W->exp_down.t, 1, rg1, &dsel)); /* [dim, K F] */
        mdl_weight gw = {wsel, WGT_FTYPE_F32}, dw = {dsel, WGT_FTYPE_F32};
        T(gu1, linear(h, &gw, NULL, &gu1));
        T(act1, wgt_swiglu(gu1, &act1)); /* [1, K F] */
        T(a3, wgt_tensor_reshape(act1, 3, k1f, &a3));
        T(v3, wgt_tensor_reshape(vals, 3, kk, &v3));
        T(wa1, wgt_binary(WGT_BINARY_MUL, a3, v3, &wa1));
        T(wa12, wgt_tensor_reshape(wa1, 2, lkf, &wa12));
        T(y, linear(wa12, &dw, NULL, &y));
        goto shared;
    }
    int64_t le[2] = {L, E}, le1[3] = {L, E, 1}, lef[3] = {L, E, F}, lf[2] = {L, E * F};
    T(zero, wgt_tensor_zeros(m->ctx, WGT_F32, 2, le, &zero));
    T(wts, wgt_scatter(zero, 1, idx, vals, WGT_SCATTER_SET, &wts)); /* [L, E] */
    T(wts3, wgt_tensor_reshape(wts, 3, le1, &wts3));
    T(gu, linear(h, &W->exp_gu, NULL, &gu));  /* [L, 2 E F]: all gates, then all ups */
    T(act, wgt_swiglu(gu, &act));             /* [L, E F] */
    T(act3, wgt_tensor_reshape(act, 3, lef, &act3));
    T(wa, wgt_binary(WGT_BINARY_MUL, act3, wts3, &wa));
    T(wa2, wgt_tensor_reshape(wa, 2, lf, &wa2));
    T(y, linear(wa2, &W->exp_down, NULL, &y)); /* [L, dim] */
shared:
    if (c->shared_expert) {
        wgt_tensor *sgu, *sact, *sdown, *g, *sg, *sw, *y2;
        if (W->w_gu.t) {
            T(sgu, linear(h, &W->w_gu, NULL, &sgu));
            T(sact, wgt_swiglu(sgu, &sact));
        } else {
            wgt_tensor *gt, *up, *sgt;
            T(gt, linear(h, &W->w_gate, NULL, &gt));
            T(up, linear(h, &W->w_up, NULL, &up));
            T(sgt, wgt_unary(WGT_UNARY_SILU, gt, &sgt));
            T(sact, wgt_binary(WGT_BINARY_MUL, sgt, up, &sact));
        }
        T(sdown, linear(sact, &W->w_down, NULL, &sdown));
        T(g, linear(h, &W->sh_gate, NULL, &g)); /* [L, 1] */
        T(sg, wgt_unary(WGT_UNARY_SIGMOID, g, &sg));
        T(sw, wgt_binary(WGT_BINARY_MUL, sdown, sg, &sw));
        T(y2, wgt_binary(WGT_BINARY_ADD, y, sw, &y2));
        y = y2;
    }
    *out = wgt_tensor_ref(y);
done:
    scratch_free(&s);
    return st;
}

/* 1 when the float token embedding fits one storage binding (one gather reads any id). */
static int table_fits(const wgt_model *m)
{
    uint64_t row = (uint64_t)m->cfg.dim * wgt_dtype_size(wgt_tensor_dtype(m->tok_emb));
    return (uint64_t)m->cfg.vocab * row <= binding_bytes(m);
}

/* The rows of the token embedding at ids [L], as f32 [L, dim]: gathered on the device, or, for a
 * quantized table, dequantised on the host and uploaded in the step's stream (L rows only). */
static wgt_status embed(const wgt_model *m, const wgt_tensor *ids_t, const int32_t *ids, int64_t L,
                        wgt_tensor **out)
{
    if (m->tok_emb) {
        /* A table past one storage binding (Qwen's 151936 x 896 f16 is 272 MB; llvmpipe binds 128
         * MiB): gather from the narrowed range of rows the ids reach, or one row at a time. */
        if (table_fits(m)) return wgt_embedding(m->tok_emb, ids_t, WGT_F32, out);
        int64_t row = m->cfg.dim * (int64_t)wgt_dtype_size(wgt_tensor_dtype(m->tok_emb));
        uint64_t binding = binding_bytes(m);
        int32_t lo = ids[0], hi = ids[0];
        for (int64_t i = 1; i < L; i++) lo = ids[i] < lo ? ids[i] : lo, hi = ids[i] > hi ? ids[i] : hi;
        wgt_status st;
        int64_t n = (int64_t)hi - lo + 1;
        if ((uint64_t)(n * row) > binding) {
            wgt_tensor *rows[64];
            wgt_tensor *parts = NULL;
            for (int64_t i0 = 0; i0 < L; i0 += 64) { /* cat takes at most 64 at once */
                int k = 0;
                for (; k < 64 && i0 + k < L; k++) {
                    wgt_tensor *one;
                    int64_t one_id = 1;
                    if ((st = wgt_tensor_from_host(m->ctx, WGT_I32, 1, &one_id, &(int32_t){0}, &one))) return st;
                    wgt_tensor *r;
                    st = wgt_tensor_narrow(m->tok_emb, 0, ids[i0 + k], 1, &r);
                    if (!st) st = wgt_embedding(r, one, WGT_F32, &rows[k]);
                    wgt_tensor_free(r);
                    wgt_tensor_free(one);
                    if (st) {
                        while (k--) wgt_tensor_free(rows[k]);
                        wgt_tensor_free(parts);
                        return st;
                    }
                }
                wgt_tensor *block, *joined;
                st = wgt_cat((const wgt_tensor *const *)rows, k, 0, &block);
                for (int j = 0; j < k; j++) wgt_tensor_free(rows[j]);
                if (!st && parts) {
                    const wgt_tensor *two[2] = {parts, block};
                    st = wgt_cat(two, 2, 0, &joined);
                    wgt_tensor_free(block);
                    block = joined;
                }
                wgt_tensor_free(parts);
                if (st) return st;
                parts = block;
            }
            *out = parts;
            return WGT_OK;
        }
        int32_t *shifted = malloc((size_t)L * sizeof *shifted);
        if (!shifted) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
        for (int64_t i = 0; i < L; i++) shifted[i] = ids[i] - lo;
        wgt_tensor *range = NULL, *sid = NULL;
        st = wgt_tensor_narrow(m->tok_emb, 0, lo, n, &range);
        if (!st) st = wgt_tensor_from_host(m->ctx, WGT_I32, 1, &L, shifted, &sid);
        if (!st) st = wgt_embedding(range, sid, WGT_F32, out);
        wgt_tensor_free(range);
        wgt_tensor_free(sid);
        free(shifted);
        return st;
    }
    int64_t D = m->cfg.dim, shape[2] = {L, D};
    float *rows = malloc((size_t)(L * D) * sizeof *rows);
    if (!rows) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory for %lld embedding rows", (long long)L);
    wgt_status st = WGT_OK;
    for (int64_t i = 0; i < L && !st; i++)
        st = wgt_dequantize(m->tok_emb_q, (const uint8_t *)m->tok_emb_blocks + (uint64_t)ids[i] * m->tok_emb_row_bytes,
                            rows + i * D, D);
    if (!st) st = wgt_tensor_from_host(m->ctx, WGT_F32, 2, shape, rows, out);
    free(rows);
    return st;
}

/* 1 when every layer of a decode step can take the fused products (wgt_fused_linear, or
 * wgt_fused_qlinear for quantized weights): an RMSNorm decoder with stacked q/k/v and gate/up
 * projections. */
int mdl_half_attention(const wgt_model *m)
{
    if (m->cfg.n_layers < 1) return 0;
    const mdl_weight *w = m->layers[0].wqkv.t ? &m->layers[0].wqkv : &m->layers[0].wq;
    return w->t && mdl_expert_type(w) != WGT_FTYPE_F32;
}

int mdl_fused_decode(const wgt_model *m)
{
    const wgt_model_config *c = &m->cfg;
    if (!c->rms || c->plain_mlp || c->parallel || c->qk_norm || c->n_experts) return 0;
    /* nor layers without RoPE, nor scaled residual branches (the epilogue adds them as they are) */
    if (c->nope_every || c->residual_scale) return 0;
    /* the fused prologues know SwiGLU only, and no post-norm or capped scores */
    if (c->act != MDL_ACT_SILU || c->post_norms || c->attn_softcap) return 0;
    for (int64_t li = 0; li < c->n_layers; li++)
        if (!m->layers[li].wqkv.t || !m->layers[li].w_gu.t) return 0;
    return 1;
}

int64_t mdl_decode_capture_limit(const wgt_model *m)
{
    const wgt_model_config *c = &m->cfg;
    if (!mdl_fused_decode(m) || !mdl_can_forward_dev(m) || m->pos_emb || c->no_rope || c->window) return 0;
    return m->max_ctx;
}

/* A captured decode step records wgt_sdpa's short-cache kernel and its split over the cache's
 * capacity, each gated on the key count (a field tied to the position): it replays exactly at every
 * position whose split length is the one it recorded (op_sdpa_decode_bucket; the same for every
 * position on the default model and the Qwen2.5-0.5B shape up to 4096 keys). */
int64_t mdl_decode_graph_bucket(const wgt_model *m, int64_t pos)
{
    return op_sdpa_decode_bucket(m->cfg.n_heads, m->cfg.n_kv_heads, pos + 1);
}

/* 1 when the token embedding can read its ids on the device (a float table within one binding):
 * then a decode step can take the id the previous step sampled without a round trip. */
int mdl_can_forward_dev(const wgt_model *m)
{
    return m->tok_emb && !wgt_gpu_runs_reference(m->ctx) && table_fits(m);
}

static wgt_status forward(wgt_model *m, const int32_t *ids, const wgt_tensor *ids_dev, int64_t L, int all_logits,
                          wgt_tensor **logits, wgt_tensor **token);

wgt_status wgt_model_forward(wgt_model *m, const int32_t *ids, int64_t L, int all_logits, wgt_tensor **logits)
{
    if (!m || !ids || !logits || L <= 0) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_model_forward: bad argument");
    return forward(m, ids, NULL, L, all_logits, logits, NULL);
}

wgt_status mdl_forward_dev(wgt_model *m, const wgt_tensor *id_dev, wgt_tensor **logits, wgt_tensor **token)
{
    if (!mdl_can_forward_dev(m)) return wgt_error(WGT_ERR_INTERNAL, "mdl_forward_dev: the embedding needs host ids");
    return forward(m, NULL, id_dev, 1, 0, logits, token);
}

/* One step: ids on the host, or (ids NULL, L == 1) one id on the device (the caller fills
 * cache_ids[n_past] once it knows it). */
static wgt_status forward(wgt_model *m, const int32_t *ids, const wgt_tensor *ids_dev, int64_t L, int all_logits,
                          wgt_tensor **logits, wgt_tensor **token)
{
    *logits = NULL;
    if (token) *token = NULL;
    const wgt_model_config *c = &m->cfg;
    wgt_context *ctx = m->ctx;
    int64_t pos0 = m->n_past;
    if (c->n_layers && !m->layers[0].k_cache)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "the model was opened without a KV cache (no_kv_cache: for "
                                                   "wgt_batch, whose slots hold theirs): open it without the option "
                                                   "to run it alone");
    if (pos0 + L > m->max_ctx)
        return wgt_error(WGT_ERR_LIMIT, "the context is full: %lld tokens in the cache and %lld new, the limit is %lld",
                         (long long)pos0, (long long)L, (long long)m->max_ctx);
    for (int64_t i = 0; ids && i < L; i++)
        if (ids[i] < 0 || ids[i] >= c->vocab)
            return wgt_error(WGT_ERR_INVALID_ARGUMENT, "token id %d is outside the vocabulary of %lld", ids[i],
                             (long long)c->vocab);
    scratch s = {0};
    step_masks masks = {{NULL, NULL}};
    wgt_status st = WGT_OK;
    int32_t *pos = malloc((size_t)L * sizeof *pos);
    if (!pos) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int64_t i = 0; i < L; i++) pos[i] = (int32_t)(pos0 + i);
    int64_t lshape[1] = {L};
    wgt_tensor *ids_t, *pos_t = NULL, *x;
    /* positions on the device for wgt_rope: only layers without the fused q/k/v pass rotate that way */
    int rope_layers = 0;
    for (int64_t li = 0; li < c->n_layers; li++)
        rope_layers += mdl_layer_ropes(c, li) && !(m->layers[li].wqkv.t && !c->qk_norm);
    if (rope_layers) T(pos_t, wgt_tensor_from_host(ctx, WGT_I32, 1, lshape, pos, &pos_t));
    if (ids) {
        T(ids_t, wgt_tensor_from_host(ctx, WGT_I32, 1, lshape, ids, &ids_t));
        T(x, embed(m, ids_t, ids, L, &x));
    } else
        T(x, wgt_embedding(m->tok_emb, ids_dev, WGT_F32, &x));
    if (m->pos_emb) {
        wgt_tensor *pe, *x2;
        T(pe, wgt_tensor_narrow(m->pos_emb, 0, pos0, L, &pe));
        T(x2, wgt_binary(WGT_BINARY_ADD, x, pe, &x2));
        x = x2;
    }
    if (c->embed_scale) {
        wgt_tensor *xs;
        T(xs, scale(x, c->embed_scale, &xs));
        x = xs;
    }
    const int64_t hd = c->head_dim, Hq = c->n_heads, Hkv = c->n_kv_heads;
    const int rd = (int)(c->rope_dims ? c->rope_dims : hd); /* dims RoPE rotates (partial rotary) */
    /* h: the residual stream x normed for the next layer (each layer's last add and the next
     * norm are one fused pass) */
    wgt_tensor *h;
    /* One token through float weights: each norm and the SwiGLU ride in the prologue of the
     * matmul after them and each residual add in the epilogue of the one before (wgt_fused_linear),
     * and q/k rotation with the cache writes in the q/k/v product's (wgt_fused_qkv_rope_cache):
     * five dispatches a layer. h is then x itself. */
    int generic = generic_decode();
    int fz = L == 1 && mdl_fused_decode(m) && !generic;
    if (fz) h = keep(&s, wgt_tensor_ref(x));
    else if (!m->layers[0].attn_norm) h = keep(&s, wgt_tensor_ref(x));
    else T(h, norm(m, x, m->layers[0].attn_norm, m->layers[0].attn_norm_b, &h));
    for (int64_t li = 0; li < c->n_layers; li++) {
        const wgt_layer_weights *W = &m->layers[li];
        const wgt_rope_params *rp = c->rope_local_set && mdl_layer_slides(c, li) ? &c->rope_local : &c->rope;
        int mark = s.n, ropes = mdl_layer_ropes(c, li);
        wgt_tensor *q, *k, *v, *q3, *k3, *v3, *qt, *kt, *vt, *qr, *kr;
        wgt_tensor *kslot, *vslot, *att, *att3, *att2, *att_t, *o, *x2;
        if (ropes && W->wqkv.t && !c->qk_norm) {
            /* one matmul, then one pass: q rotated, k rotated into the cache, v copied into it */
            wgt_tensor *qkv;
            if (fz && W->wqkv.q != WGT_FTYPE_F32) { /* one pass (two with WGT_QLINEAR_QKV=0) */
                T(qr, wgt_fused_qkv_rope_qcache(x, W->attn_norm, c->norm_eps, W->wqkv.t, W->wqkv.q, W->bqkv, Hq, Hkv,
                                                hd, pos0, rd, c->rope_interleaved, rp, W->k_cache, W->v_cache, &qr));
            } else if (fz) {
                T(qr, wgt_fused_qkv_rope_cache(x, W->attn_norm, c->norm_eps, W->wqkv.t, W->bqkv, Hq, Hkv, hd, pos0,
                                               rd, c->rope_interleaved, rp, W->k_cache, W->v_cache, &qr));
            } else {
                T(qkv, linear(h, &W->wqkv, W->bqkv, &qkv));
                T(qr, wgt_qkv_rope_cache(qkv, Hq, Hkv, hd, pos0, rd, c->rope_interleaved, rp, W->k_cache,
                                         W->v_cache, &qr));
            }
        } else {
            if (W->wqkv.t) { /* one matmul; q, k and v are column ranges of its rows */
                wgt_tensor *qkv;
                T(qkv, linear(h, &W->wqkv, W->bqkv, &qkv));
                T(q, wgt_tensor_narrow(qkv, 1, 0, Hq * hd, &q));
                T(k, wgt_tensor_narrow(qkv, 1, Hq * hd, Hkv * hd, &k));
                T(v, wgt_tensor_narrow(qkv, 1, (Hq + Hkv) * hd, Hkv * hd, &v));
            } else {
                T(q, linear(h, &W->wq, W->bq, &q));
                T(k, linear(h, &W->wk, W->bk, &k));
                T(v, linear(h, &W->wv, W->bv, &v));
            }
            if (c->qk_norm_full) { /* one norm over all of q's heads, one over k's */
                wgt_tensor *qn, *kn;
                T(qn, wgt_rms_norm(q, 1, W->q_norm, c->norm_eps, &qn));
                T(kn, wgt_rms_norm(k, 1, W->k_norm, c->norm_eps, &kn));
                q = qn, k = kn;
            }
            int64_t qs[3] = {L, Hq, hd}, ks[3] = {L, Hkv, hd};
            T(q3, wgt_tensor_reshape(q, 3, qs, &q3));
            T(k3, wgt_tensor_reshape(k, 3, ks, &k3));
            T(v3, wgt_tensor_reshape(v, 3, ks, &v3));
            if (c->qk_norm_ln) { /* LayerNorm over each head, one weight row per head [H, hd] */
                wgt_tensor *qn, *kn, *qw, *kw;
                T(qn, wgt_layer_norm(q3, 1, NULL, NULL, c->norm_eps, &qn));
                T(kn, wgt_layer_norm(k3, 1, NULL, NULL, c->norm_eps, &kn));
                T(qw, wgt_binary(WGT_BINARY_MUL, qn, W->q_norm, &qw));
                T(kw, wgt_binary(WGT_BINARY_MUL, kn, W->k_norm, &kw));
                q3 = qw, k3 = kw;
            } else if (c->qk_norm && !c->qk_norm_full) {
                wgt_tensor *qn, *kn;
                T(qn, wgt_rms_norm(q3, 1, W->q_norm, c->norm_eps, &qn));
                T(kn, wgt_rms_norm(k3, 1, W->k_norm, c->norm_eps, &kn));
                q3 = qn, k3 = kn;
            }
            T(qt, wgt_tensor_transpose(q3, 0, 1, &qt)); /* [H, L, hd] views */
            T(kt, wgt_tensor_transpose(k3, 0, 1, &kt));
            T(vt, wgt_tensor_transpose(v3, 0, 1, &vt));
            if (ropes) {
                T(qr, wgt_rope(qt, pos_t, rd, c->rope_interleaved, rp, &qr));
                T(kr, wgt_rope(kt, pos_t, rd, c->rope_interleaved, rp, &kr));
            } else
                qr = qt, kr = kt;
            T(kslot, wgt_tensor_narrow(W->k_cache, 1, pos0, L, &kslot));
            T(vslot, wgt_tensor_narrow(W->v_cache, 1, pos0, L, &vslot));
            DO(wgt_tensor_assign(kslot, kr));
            DO(wgt_tensor_assign(vslot, vt));
        }
        T(att, attend(m, W, li, qr, pos0, L, &masks, &att)); /* [1, Hq, L, hd] */
        T(att3, wgt_tensor_squeeze(att, 0, &att3));
        T(att_t, wgt_tensor_transpose(att3, 0, 1, &att_t)); /* [L, Hq, hd] */
        int64_t fs[2] = {L, Hq * hd};
        T(att2, wgt_tensor_reshape(att_t, 2, fs, &att2));
        wgt_tensor *h2, *up, *act, *down, *x3, *hn;
        if (fz) {
            wgt_tensor *gu;
            T(x2, fused(att2, WGT_PRO_NONE, NULL, 0, &W->wo, W->bo, x, &x2));
            if (W->w_gu.q != WGT_FTYPE_F32 && op_qlinear_glu()) { /* SwiGLU in the gate/up product's epilogue */
                T(act, wgt_fused_qlinear_glu(x2, WGT_PRO_RMS_NORM, W->ffn_norm, c->norm_eps, W->w_gu.t, W->w_gu.q,
                                             NULL, &act));
                T(x3, fused(act, WGT_PRO_NONE, NULL, 0, &W->w_down, W->b_down, x2, &x3));
            } else {
                T(gu, fused(x2, WGT_PRO_RMS_NORM, W->ffn_norm, c->norm_eps, &W->w_gu, NULL, NULL, &gu));
                T(x3, fused(gu, WGT_PRO_SWIGLU, NULL, 0, &W->w_down, W->b_down, x2, &x3));
            }
            hn = keep(&s, wgt_tensor_ref(x3));
            goto carry;
        }
        T(o, linear(att2, &W->wo, W->bo, &o));
        if (W->post_attn_norm) {
            wgt_tensor *on;
            T(on, wgt_rms_norm(o, 1, W->post_attn_norm, c->norm_eps, &on));
            o = on;
        }
        if (c->residual_scale) {
            wgt_tensor *os;
            T(os, scale(o, c->residual_scale, &os));
            o = os;
        }
        if (c->parallel) { /* both add to the residual; the MLP reads its own norm, or the attention's */
            T(x2, wgt_binary(WGT_BINARY_ADD, x, o, &x2));
            if (W->ffn_norm) T(h2, norm(m, x, W->ffn_norm, W->ffn_norm_b, &h2));
            else h2 = h;
        } else {
            DO(add_norm(m, x, o, W->ffn_norm, W->ffn_norm_b, &x2, &h2));
            keep(&s, x2), keep(&s, h2);
        }
        if (c->n_experts) {
            T(down, moe_mlp(m, W, h2, L, &down));
            goto mlp_done;
        }
        wgt_unary_op act_op = c->act == MDL_ACT_GELU_TANH ? WGT_UNARY_GELU_TANH
                              : c->act == MDL_ACT_GELU ? WGT_UNARY_GELU : WGT_UNARY_SILU;
        if (c->plain_mlp) {
            T(up, linear(h2, &W->w_up, W->b_up, &up));
            T(act, wgt_unary(act_op, up, &act));
        } else {
            wgt_tensor *g, *sg;
            wgt_unary_op gate_act = act_op;
            if (W->w_gu.t) { /* one matmul, one fused activation (SwiGLU), or GeGLU from its halves */
                wgt_tensor *gu;
                T(gu, linear(h2, &W->w_gu, NULL, &gu));
                if (c->act == MDL_ACT_SILU && !generic) T(act, wgt_swiglu(gu, &act));
                else {
                    T(g, wgt_tensor_narrow(gu, 1, 0, c->ffn, &g));
                    T(up, wgt_tensor_narrow(gu, 1, c->ffn, c->ffn, &up));
                    T(sg, wgt_unary(gate_act, g, &sg));
                    T(act, wgt_binary(WGT_BINARY_MUL, sg, up, &act));
                }
            } else {
                T(g, linear(h2, &W->w_gate, NULL, &g));
                T(up, linear(h2, &W->w_up, NULL, &up));
                T(sg, wgt_unary(gate_act, g, &sg));
                T(act, wgt_binary(WGT_BINARY_MUL, sg, up, &act));
            }
        }
        T(down, linear(act, &W->w_down, W->b_down, &down));
    mlp_done:
        if (W->post_ffn_norm) {
            wgt_tensor *dn;
            T(dn, wgt_rms_norm(down, 1, W->post_ffn_norm, c->norm_eps, &dn));
            down = dn;
        }
        if (c->residual_scale) {
            wgt_tensor *ds;
            T(ds, scale(down, c->residual_scale, &ds));
            down = ds;
        }
        int last = li + 1 == c->n_layers;
        const wgt_tensor *nw = last ? m->out_norm : m->layers[li + 1].attn_norm;
        const wgt_tensor *nb = last ? m->out_norm_b : m->layers[li + 1].attn_norm_b;
        DO(add_norm(m, x2, down, nw, nb, &x3, &hn));
        keep(&s, x3), keep(&s, hn);
    carry:;
        /* keep only the residual stream and its norm (in the two slots after mark's start); free
         * the rest now, and the previous layer's pair (buffers go back to the pool) */
        wgt_tensor *carry = wgt_tensor_ref(x3), *carry_h = wgt_tensor_ref(hn);
        for (int i = mark; i < s.n; i++) wgt_tensor_free(s.t[i]);
        s.n = mark;
        if (li > 0) { /* x and h are the last two entries below mark */
            wgt_tensor_free(s.t[mark - 1]), wgt_tensor_free(s.t[mark - 2]);
            s.n = mark = mark - 2;
        }
        x = keep(&s, carry);
        h = keep(&s, carry_h);
    }
    wgt_tensor *xn = h, *xl, *lg; /* the last layer's add_norm applied the output norm (fz: the lm_head's prologue does) */
    if (all_logits) xl = xn;
    else T(xl, wgt_tensor_narrow(xn, 0, L - 1, 1, &xl));
    /* a decode token through the fused kernels: the output layer's own kernel, which also gives the
     * greedy token where the caller asks for it and nothing after the product changes the logits */
    if (fz && !m->lm_head_b) {
        int argmax = token && !c->logit_scale && !c->final_softcap;
        DO(wgt_lm_head(xl, m->out_norm, c->norm_eps, m->lm_head.t, m->lm_head.q, &lg, argmax ? token : NULL));
    } else if (fz)
        DO(fused(xl, WGT_PRO_RMS_NORM, m->out_norm, c->norm_eps, &m->lm_head, NULL, NULL, &lg));
    else DO(linear(xl, &m->lm_head, m->lm_head_b, &lg));
    if (c->logit_scale) { /* granite: logits / logits_scaling */
        wgt_tensor *scaled;
        st = scale(lg, 1 / c->logit_scale, &scaled);
        wgt_tensor_free(lg);
        if (st) goto done;
        lg = scaled;
    }
    if (c->final_softcap) {
        wgt_tensor *capped;
        st = softcap(lg, c->final_softcap, &capped);
        wgt_tensor_free(lg);
        if (st) goto done;
        lg = capped;
    }
    *logits = lg;
    if (ids) memcpy(m->cache_ids + pos0, ids, (size_t)L * sizeof *ids);
    m->n_past = pos0 + L;
done:
    scratch_free(&s);
    wgt_tensor_free(masks.m[0]);
    wgt_tensor_free(masks.m[1]);
    free(pos);
    return st;
}

void wgt_model_reset(wgt_model *m)
{
    if (m) m->n_past = 0;
}

/* The steps of a layer, for src/models/batch.c's batched layer loop. */
wgt_status mdl_embed(const wgt_model *m, const wgt_tensor *ids_t, const int32_t *ids, int64_t L, wgt_tensor **out)
{
    return embed(m, ids_t, ids, L, out);
}

wgt_status mdl_norm(const wgt_model *m, const wgt_tensor *x, const wgt_tensor *w, const wgt_tensor *b, wgt_tensor **out)
{
    return norm(m, x, w, b, out);
}

wgt_status mdl_add_norm(const wgt_model *m, const wgt_tensor *x, const wgt_tensor *y, const wgt_tensor *w,
                        const wgt_tensor *b, wgt_tensor **sum, wgt_tensor **out)
{
    return add_norm(m, x, y, w, b, sum, out);
}

wgt_status mdl_linear(const wgt_tensor *x, const mdl_weight *w, const wgt_tensor *b, wgt_tensor **out)
{
    return linear(x, w, b, out);
}
