/* The training forward's ops composed of elementwise ops, reductions, matmuls and views, for ops
 * whose own backward rule does not exist yet: the autograd tape records these primitives, so the
 * forward stays differentiable whichever fused rules exist. train_forward.c asks once per model
 * (tm_probe) which fused ops record a node and takes the composed form only for the others; the
 * two forms compute the same function (the fixture test checks both against transformers).
 * Costs: the embedding and the cross-entropy go through a one-hot [B, L, V] (a matmul and a
 * product), attention materialises [B, H, L, L]: fine for the small models this path serves. */
#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "models/train_internal.h"

/* Temporaries of one composed op, freed on return. */
typedef struct tmps {
    wgt_tensor *t[24];
    int n;
    wgt_status st;
} tmps;

static wgt_tensor *k(tmps *s, wgt_status st, wgt_tensor *t)
{
    if (s->st) return NULL;
    if (st) {
        s->st = st;
        return NULL;
    }
    if (s->n < 24) s->t[s->n++] = t;
    return t;
}

static wgt_status finish(tmps *s, wgt_tensor *result, wgt_tensor **out)
{
    *out = NULL;
    if (!s->st) *out = wgt_tensor_ref(result);
    for (int i = 0; i < s->n; i++) wgt_tensor_free(s->t[i]);
    return s->st;
}

#define R(name, call)                                                                              \
    wgt_tensor *name = NULL;                                                                       \
    if (!s.st) {                                                                                   \
        wgt_tensor *r_ = NULL;                                                                     \
        wgt_status st_ = call;                                                                     \
        name = k(&s, st_, r_);                                                                     \
    }

static wgt_status scalar(wgt_context *ctx, double v, wgt_tensor **out)
{
    return wgt_full(ctx, WGT_F32, 0, NULL, v, out);
}

/* weight [V, D] at ids (any shape) = one_hot(ids) @ weight. */
wgt_status tm_embedding(const wgt_tensor *w, const wgt_tensor *ids, wgt_tensor **out)
{
    tmps s = {0};
    R(oh, wgt_one_hot(ids, wgt_tensor_dim(w, 0), -1, 0, 1, WGT_F32, &r_));
    R(y, wgt_matmul(oh, w, &r_));
    return finish(&s, y, out);
}

/* x * rsqrt(mean(x^2) + eps) * w over the last dim. */
wgt_status tm_rms_norm(const wgt_tensor *x, const wgt_tensor *w, double eps, wgt_tensor **out)
{
    tmps s = {0};
    uint32_t last = 1u << (wgt_tensor_ndim(x) - 1);
    R(sq, wgt_binary(WGT_BINARY_MUL, x, x, &r_));
    R(ms, s.st ? 0 : wgt_reduce(WGT_REDUCE_MEAN, sq, last, 1, 0, &r_));
    R(e, scalar(wgt_tensor_context(x), eps, &r_));
    R(ve, s.st ? 0 : wgt_binary(WGT_BINARY_ADD, ms, e, &r_));
    R(r, s.st ? 0 : wgt_unary(WGT_UNARY_RSQRT, ve, &r_));
    R(xn, s.st ? 0 : wgt_binary(WGT_BINARY_MUL, x, r, &r_));
    R(y, s.st ? 0 : wgt_binary(WGT_BINARY_MUL, xn, w, &r_));
    return finish(&s, y, out);
}

/* (x - mean) * rsqrt(var + eps) * w + b over the last dim (biased variance). */
wgt_status tm_layer_norm(const wgt_tensor *x, const wgt_tensor *w, const wgt_tensor *b, double eps, wgt_tensor **out)
{
    tmps s = {0};
    uint32_t last = 1u << (wgt_tensor_ndim(x) - 1);
    R(mu, wgt_reduce(WGT_REDUCE_MEAN, x, last, 1, 0, &r_));
    R(xc, s.st ? 0 : wgt_binary(WGT_BINARY_SUB, x, mu, &r_));
    R(sq, s.st ? 0 : wgt_binary(WGT_BINARY_MUL, xc, xc, &r_));
    R(var, s.st ? 0 : wgt_reduce(WGT_REDUCE_MEAN, sq, last, 1, 0, &r_));
    R(e, scalar(wgt_tensor_context(x), eps, &r_));
    R(ve, s.st ? 0 : wgt_binary(WGT_BINARY_ADD, var, e, &r_));
    R(r, s.st ? 0 : wgt_unary(WGT_UNARY_RSQRT, ve, &r_));
    R(xn, s.st ? 0 : wgt_binary(WGT_BINARY_MUL, xc, r, &r_));
    R(y, s.st ? 0 : wgt_binary(WGT_BINARY_MUL, xn, w, &r_));
    R(yb, s.st ? 0 : (b ? wgt_binary(WGT_BINARY_ADD, y, b, &r_) : (r_ = wgt_tensor_ref(y), WGT_OK)));
    return finish(&s, yb, out);
}

/* cos and sin [L, hd/2] of the half-split rope at positions 0 .. L-1, taken from wgt_rope itself
 * (rotating the vector [1 .. 1, 0 .. 0] gives cos in the first half and sin in the second), so
 * the angles are exactly the fused op's, scaling included. Constants: no gradient. */
wgt_status tm_rope_tables(wgt_context *ctx, int64_t L, int64_t hd, const wgt_rope_params *p, wgt_tensor **cos_t,
                          wgt_tensor **sin_t)
{
    int64_t h = hd / 2, shape[2] = {L, hd};
    float *v = malloc((size_t)(L * hd) * sizeof *v);
    if (!v) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int64_t i = 0; i < L; i++)
        for (int64_t j = 0; j < hd; j++) v[i * hd + j] = j < h ? 1.0f : 0.0f;
    tmps s = {0};
    R(x, wgt_tensor_from_host(ctx, WGT_F32, 2, shape, v, &r_));
    free(v);
    R(pos, wgt_arange(ctx, 0, (double)L, 1, WGT_I32, &r_));
    R(rot, s.st ? 0 : wgt_rope(x, pos, (int)hd, 0, p, &r_));
    R(c, s.st ? 0 : wgt_tensor_narrow(rot, 1, 0, h, &r_));
    R(sn, s.st ? 0 : wgt_tensor_narrow(rot, 1, h, h, &r_));
    *cos_t = *sin_t = NULL;
    if (!s.st) s.st = wgt_tensor_contiguous(c, cos_t);
    if (!s.st) s.st = wgt_tensor_contiguous(sn, sin_t);
    wgt_tensor *dummy;
    wgt_status st = finish(&s, x, &dummy);
    wgt_tensor_free(dummy);
    if (st) wgt_tensor_free(*cos_t), wgt_tensor_free(*sin_t), *cos_t = *sin_t = NULL;
    return st;
}

/* x [..., L, hd]: (x1 cos - x2 sin, x2 cos + x1 sin) of the halves x1, x2. */
wgt_status tm_rope(const wgt_tensor *x, const wgt_tensor *cos_t, const wgt_tensor *sin_t, wgt_tensor **out)
{
    tmps s = {0};
    int d = wgt_tensor_ndim(x) - 1;
    int64_t h = wgt_tensor_dim(x, d) / 2;
    R(x1, wgt_tensor_narrow(x, d, 0, h, &r_));
    R(x2, s.st ? 0 : wgt_tensor_narrow(x, d, h, h, &r_));
    R(a, s.st ? 0 : wgt_binary(WGT_BINARY_MUL, x1, cos_t, &r_));
    R(b, s.st ? 0 : wgt_binary(WGT_BINARY_MUL, x2, sin_t, &r_));
    R(c, s.st ? 0 : wgt_binary(WGT_BINARY_MUL, x2, cos_t, &r_));
    R(e, s.st ? 0 : wgt_binary(WGT_BINARY_MUL, x1, sin_t, &r_));
    R(o1, s.st ? 0 : wgt_binary(WGT_BINARY_SUB, a, b, &r_));
    R(o2, s.st ? 0 : wgt_binary(WGT_BINARY_ADD, c, e, &r_));
    const wgt_tensor *two[2] = {o1, o2};
    R(y, s.st ? 0 : wgt_cat(two, 2, d, &r_));
    return finish(&s, y, out);
}

/* softmax over the last dim as exp(x - max) / sum; the max is a constant shift (detached: the
 * gradient through it cancels). */
static wgt_status softmax_last(const wgt_tensor *x, wgt_tensor **out)
{
    tmps s = {0};
    uint32_t last = 1u << (wgt_tensor_ndim(x) - 1);
    R(mx, wgt_reduce(WGT_REDUCE_AMAX, x, last, 1, 0, &r_));
    R(mc, s.st ? 0 : wgt_tensor_detach(mx, &r_));
    R(z, s.st ? 0 : wgt_binary(WGT_BINARY_SUB, x, mc, &r_));
    R(e, s.st ? 0 : wgt_unary(WGT_UNARY_EXP, z, &r_));
    R(den, s.st ? 0 : wgt_reduce(WGT_REDUCE_SUM, e, last, 1, 0, &r_));
    R(p, s.st ? 0 : wgt_binary(WGT_BINARY_DIV, e, den, &r_));
    return finish(&s, p, out);
}

/* Causal attention, q [B, Hq, L, hd], k/v [B, Hkv, L, hd] (GQA: each kv head serves Hq / Hkv q
 * heads), scale 1/sqrt(hd) -> [B, Hq, L, hd]. */
wgt_status tm_attention(const wgt_tensor *q, const wgt_tensor *kk, const wgt_tensor *v, wgt_tensor **out)
{
    tmps s = {0};
    int64_t B = wgt_tensor_dim(q, 0), Hq = wgt_tensor_dim(q, 1), L = wgt_tensor_dim(q, 2), hd = wgt_tensor_dim(q, 3);
    int64_t Hkv = wgt_tensor_dim(kk, 1), G = Hq / Hkv;
    const wgt_tensor *kx = kk, *vx = v;
    if (G > 1) { /* [B, Hkv, L, hd] -> [B, Hkv, G, L, hd] -> [B, Hq, L, hd] */
        int64_t s5[5] = {B, Hkv, 1, L, hd}, e5[5] = {B, Hkv, G, L, hd}, s4[4] = {B, Hq, L, hd};
        R(k5, wgt_tensor_reshape(kk, 5, s5, &r_));
        R(ke, s.st ? 0 : wgt_tensor_expand(k5, 5, e5, &r_));
        R(k4, s.st ? 0 : wgt_tensor_reshape(ke, 4, s4, &r_));
        R(v5, s.st ? 0 : wgt_tensor_reshape(v, 5, s5, &r_));
        R(ve, s.st ? 0 : wgt_tensor_expand(v5, 5, e5, &r_));
        R(v4, s.st ? 0 : wgt_tensor_reshape(ve, 4, s4, &r_));
        kx = k4, vx = v4;
    }
    /* the causal mask, additive: 0 on and below the diagonal, -inf above */
    float *mask = malloc((size_t)(L * L) * sizeof *mask);
    if (!mask) s.st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int64_t i = 0; mask && i < L; i++)
        for (int64_t j = 0; j < L; j++) mask[i * L + j] = j <= i ? 0.0f : -INFINITY;
    int64_t ms[2] = {L, L};
    R(mk, s.st ? 0 : wgt_tensor_from_host(wgt_tensor_context(q), WGT_F32, 2, ms, mask, &r_));
    free(mask);
    R(kt, s.st ? 0 : wgt_tensor_transpose(kx, 2, 3, &r_));
    R(sc, s.st ? 0 : wgt_matmul(q, kt, &r_));
    R(f, s.st ? 0 : scalar(wgt_tensor_context(q), 1.0 / sqrt((double)hd), &r_));
    R(scs, s.st ? 0 : wgt_binary(WGT_BINARY_MUL, sc, f, &r_));
    R(scm, s.st ? 0 : wgt_binary(WGT_BINARY_ADD, scs, mk, &r_));
    R(p, s.st ? 0 : softmax_last(scm, &r_));
    R(y, s.st ? 0 : wgt_matmul(p, vx, &r_));
    return finish(&s, y, out);
}

/* Mean cross-entropy of logits [N, V] against targets [N]: -mean(sum(one_hot * log_softmax)). */
wgt_status tm_cross_entropy(const wgt_tensor *logits, const wgt_tensor *targets, wgt_tensor **out)
{
    tmps s = {0};
    int64_t N = wgt_tensor_dim(logits, 0), V = wgt_tensor_dim(logits, 1);
    R(mx, wgt_reduce(WGT_REDUCE_AMAX, logits, 2, 1, 0, &r_));
    R(mc, s.st ? 0 : wgt_tensor_detach(mx, &r_));
    R(z, s.st ? 0 : wgt_binary(WGT_BINARY_SUB, logits, mc, &r_));
    R(e, s.st ? 0 : wgt_unary(WGT_UNARY_EXP, z, &r_));
    R(se, s.st ? 0 : wgt_reduce(WGT_REDUCE_SUM, e, 2, 1, 0, &r_));
    R(lse, s.st ? 0 : wgt_unary(WGT_UNARY_LOG, se, &r_));
    R(lp, s.st ? 0 : wgt_binary(WGT_BINARY_SUB, z, lse, &r_));
    R(oh, s.st ? 0 : wgt_one_hot(targets, V, -1, 0, 1, WGT_F32, &r_));
    R(picked, s.st ? 0 : wgt_binary(WGT_BINARY_MUL, lp, oh, &r_));
    R(tot, s.st ? 0 : wgt_reduce(WGT_REDUCE_SUM, picked, 0, 0, 0, &r_));
    R(f, s.st ? 0 : scalar(wgt_tensor_context(logits), -1.0 / (double)N, &r_));
    R(y, s.st ? 0 : wgt_binary(WGT_BINARY_MUL, tot, f, &r_));
    return finish(&s, y, out);
}

/* 1 when op records a node on an input that requires grad (its backward rule exists). */
static int records(wgt_context *ctx, int which)
{
    int64_t s2[2] = {2, 4}, s4[4] = {1, 1, 2, 4}, s1[1] = {2};
    int32_t idv[2] = {0, 1};
    wgt_tensor *x = NULL, *y = NULL, *ids = NULL, *w = NULL;
    wgt_rope_params rp = {0};
    rp.theta = 10000;
    int ok = 0;
    int nd = which == 3 || which == 4 ? 4 : 2;
    if (wgt_tensor_zeros(ctx, WGT_F32, nd, nd == 4 ? s4 : s2, &x) || wgt_tensor_set_requires_grad(x, 1)) goto out;
    if (wgt_tensor_from_host(ctx, WGT_I32, 1, s1, idv, &ids)) goto out;
    if (wgt_full(ctx, WGT_F32, 1, s2 + 1, 1.0, &w)) goto out;
    wgt_status st;
    switch (which) {
    case 0: st = wgt_embedding(x, ids, WGT_F32, &y); break;
    case 1: st = wgt_rms_norm(x, 1, w, 1e-5, &y); break;
    case 2: st = wgt_layer_norm(x, 1, w, w, 1e-5, &y); break;
    case 3: {
        wgt_tensor *pos = NULL;
        st = wgt_arange(ctx, 0, 2, 1, WGT_I32, &pos);
        if (!st) st = wgt_rope(x, pos, 4, 0, &rp, &y);
        wgt_tensor_free(pos);
        break;
    }
    case 4: {
        wgt_sdpa_params sp = {0, 1, 0};
        st = wgt_sdpa(x, x, x, NULL, &sp, &y);
        break;
    }
    default: st = wgt_cross_entropy(x, ids, NULL, WGT_NO_IGNORE_INDEX, 0, WGT_REDUCTION_MEAN, &y); break;
    }
    ok = !st && wgt_tensor_requires_grad(y);
out:
    wgt_tensor_free(x), wgt_tensor_free(y), wgt_tensor_free(ids), wgt_tensor_free(w);
    wgt_error_clear();
    return ok;
}

void tm_probe(wgt_train_model *m)
{
    if (m->probed) return;
    int was = wgt_grad_mode_get();
    wgt_grad_mode_set(1);
    const char *force = getenv("WGT_TRAIN_COMPOSED"); /* 1: the composed forms always (a reference) */
    for (int i = 0; i < TM_N_FUSED; i++) m->fused_ok[i] = !(force && *force == '1') && records(m->ctx, i);
    wgt_grad_mode_set(was);
    m->probed = 1;
}
