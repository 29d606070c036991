/* The training forward: logits [B, L, V] of a batch of ids [B, L], and the mean cross-entropy over
 * all B x L targets. Every step is a public op, so with gradients enabled the autograd tape records
 * it; intermediate tensors are released here as soon as the forward is done with them (the tape
 * keeps what a backward formula needs). A fused op without a backward rule yet is replaced, while
 * recording, by its composed form (train_ops.c). Transformers' eager attention is the reference: causal,
 * GQA, scale 1/sqrt(head_dim), rope on q and k (half-split pairs), all in f32. */
#include <stdlib.h>

#include "core/error.h"
#include "models/train_internal.h"

/* Tensors of one forward, released together. */
typedef struct pool {
    wgt_tensor *t[64];
    int n;
} pool;

static wgt_tensor *keep(pool *p, wgt_tensor *t)
{
    if (p->n < 64) p->t[p->n++] = t;
    else wgt_tensor_free(t); /* never reached: a layer keeps fewer than 64 */
    return t;
}

static void release(pool *p, int from)
{
    for (int i = from; i < p->n; i++) wgt_tensor_free(p->t[i]);
    p->n = from < p->n ? from : p->n;
}

#define T(r, call)                                                                                 \
    do {                                                                                           \
        if ((st = (call))) goto done;                                                              \
        keep(&p, r);                                                                               \
    } while (0)

/* 1: the fused op (it records its own backward node, or nothing is being recorded) */
static int fused(const wgt_train_model *m, int op) { return m->fused_ok[op] || !wgt_grad_mode_get(); }

static wgt_status norm(const wgt_train_model *m, const wgt_tensor *x, const wgt_tensor *w, const wgt_tensor *b,
                       wgt_tensor **out)
{
    if (m->cfg.rms)
        return fused(m, TM_RMS_NORM) ? wgt_rms_norm(x, 1, w, m->cfg.norm_eps, out) : tm_rms_norm(x, w, m->cfg.norm_eps, out);
    if (fused(m, TM_LAYER_NORM)) return wgt_layer_norm(x, 1, w, b, m->cfg.norm_eps, out);
    return tm_layer_norm(x, w, b, m->cfg.norm_eps, out);
}

/* Dropout of the training forward (recording, p > 0); otherwise x itself, referenced. */
static wgt_status drop(const wgt_train_model *m, const wgt_tensor *x, wgt_tensor **out)
{
    if (m->dropout > 0 && m->dropout_gen && wgt_grad_mode_get())
        return wgt_dropout(m->dropout_gen, x, m->dropout, 1, out, NULL);
    *out = wgt_tensor_ref(x);
    return *out ? WGT_OK : wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
}

/* x [B, L, H * hd] -> [B, H, L, hd] (a view). */
static wgt_status heads(const wgt_tensor *x, int64_t B, int64_t L, int64_t H, int64_t hd, wgt_tensor **out)
{
    int64_t s[4] = {B, L, H, hd};
    wgt_tensor *r;
    wgt_status st = wgt_tensor_reshape(x, 4, s, &r);
    if (st) return st;
    st = wgt_tensor_transpose(r, 1, 2, out);
    wgt_tensor_free(r);
    return st;
}

wgt_status wgt_train_forward(wgt_train_model *m, const wgt_tensor *ids, wgt_tensor **logits)
{
    if (!m || !ids || !logits || wgt_tensor_ndim(ids) != 2)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_train_forward: ids must be a [B, L] integer tensor");
    *logits = NULL;
    const wgt_model_config *c = &m->cfg;
    int64_t B = wgt_tensor_dim(ids, 0), L = wgt_tensor_dim(ids, 1);
    int64_t Hq = c->n_heads, Hkv = c->n_kv_heads, hd = c->head_dim;
    if (c->max_pos > 0 && L > c->max_pos)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "sequence length %lld is past the model's %lld positions",
                         (long long)L, (long long)c->max_pos);
    tm_probe(m);
    pool p = {0};
    wgt_status st = WGT_OK;
    wgt_tensor *x, *pos = NULL, *rcos = NULL, *rsin = NULL;
    wgt_dtype adt = m->compute == WGT_F16 || m->compute == WGT_BF16 ? m->compute : WGT_F32;
    if (fused(m, TM_EMBEDDING)) T(x, wgt_embedding(m->tok_emb, ids, adt, &x)); /* [B, L, D] */
    else T(x, tm_embedding(m->tok_emb, ids, &x));
    if (m->pos_emb) {
        wgt_tensor *pe, *x2;
        T(pe, wgt_tensor_narrow(m->pos_emb, 0, 0, L, &pe));
        T(x2, wgt_binary(WGT_BINARY_ADD, x, pe, &x2));
        x = x2;
    }
    if (m->dropout > 0 && !m->dropout_blocks_only) {
        wgt_tensor *xd;
        T(xd, drop(m, x, &xd));
        x = xd;
    }
    if (!m->pos_emb) {
        T(pos, wgt_arange(m->ctx, 0, (double)L, 1, WGT_I32, &pos));
        if (!fused(m, TM_ROPE)) {
            if ((st = tm_rope_tables(m->ctx, L, hd, &c->rope, &rcos, &rsin))) goto done;
            keep(&p, rcos), keep(&p, rsin);
        }
    }
    for (int64_t li = 0; li < c->n_layers; li++) {
        const tm_layer *W = &m->layers[li];
        int mark = p.n;
        wgt_tensor *h, *q, *k, *v, *qh, *kh, *vh, *att, *att_t, *att2, *o, *x2, *h2, *act, *down, *x3;
        T(h, norm(m, x, W->attn_norm, W->attn_norm_b, &h));
        if (W->wqkv) {
            wgt_tensor *qkv;
            T(qkv, wgt_linear(h, W->wqkv, W->bqkv, &qkv));
            T(q, wgt_tensor_narrow(qkv, 2, 0, Hq * hd, &q));
            T(k, wgt_tensor_narrow(qkv, 2, Hq * hd, Hkv * hd, &k));
            T(v, wgt_tensor_narrow(qkv, 2, (Hq + Hkv) * hd, Hkv * hd, &v));
        } else {
            T(q, wgt_linear(h, W->wq, W->bq, &q));
            T(k, wgt_linear(h, W->wk, W->bk, &k));
            T(v, wgt_linear(h, W->wv, W->bv, &v));
        }
        T(qh, heads(q, B, L, Hq, hd, &qh));
        T(kh, heads(k, B, L, Hkv, hd, &kh));
        T(vh, heads(v, B, L, Hkv, hd, &vh));
        if (W->q_norm) {
            wgt_tensor *qn, *kn;
            T(qn, wgt_rms_norm(qh, 1, W->q_norm, c->norm_eps, &qn));
            T(kn, wgt_rms_norm(kh, 1, W->k_norm, c->norm_eps, &kn));
            qh = qn, kh = kn;
        }
        if (pos) {
            wgt_tensor *qr, *kr;
            if (rcos) {
                T(qr, tm_rope(qh, rcos, rsin, &qr));
                T(kr, tm_rope(kh, rcos, rsin, &kr));
            } else {
                T(qr, wgt_rope(qh, pos, (int)hd, 0, &c->rope, &qr));
                T(kr, wgt_rope(kh, pos, (int)hd, 0, &c->rope, &kr));
            }
            qh = qr, kh = kr;
        }
        wgt_sdpa_params sp = {0, 1, 0};
        if (fused(m, TM_SDPA)) T(att, wgt_sdpa(qh, kh, vh, NULL, &sp, &att)); /* [B, Hq, L, hd] */
        else T(att, tm_attention(qh, kh, vh, &att));
        T(att_t, wgt_tensor_transpose(att, 1, 2, &att_t)); /* [B, L, Hq, hd] */
        int64_t fs[3] = {B, L, Hq * hd};
        T(att2, wgt_tensor_reshape(att_t, 3, fs, &att2));
        T(o, wgt_linear(att2, W->wo, W->bo, &o));
        if (m->dropout > 0) {
            wgt_tensor *od;
            T(od, drop(m, o, &od));
            o = od;
        }
        T(x2, wgt_binary(WGT_BINARY_ADD, x, o, &x2));
        T(h2, norm(m, x2, W->ffn_norm, W->ffn_norm_b, &h2));
        if (W->w_gate) {
            wgt_tensor *g, *up, *sg;
            T(g, wgt_linear(h2, W->w_gate, NULL, &g));
            T(up, wgt_linear(h2, W->w_up, W->b_up, &up));
            T(sg, wgt_unary(WGT_UNARY_SILU, g, &sg));
            T(act, wgt_binary(WGT_BINARY_MUL, sg, up, &act));
        } else {
            wgt_tensor *up;
            T(up, wgt_linear(h2, W->w_up, W->b_up, &up));
            T(act, wgt_unary(WGT_UNARY_GELU_TANH, up, &act));
        }
        T(down, wgt_linear(act, W->w_down, W->b_down, &down));
        if (m->dropout > 0) {
            wgt_tensor *dd;
            T(dd, drop(m, down, &dd));
            down = dd;
        }
        T(x3, wgt_binary(WGT_BINARY_ADD, x2, down, &x3));
        /* only the residual stream goes on: this layer's other tensors are released (the tape,
         * when recording, holds its own references) */
        wgt_tensor *carry = wgt_tensor_ref(x3);
        release(&p, mark);
        x = keep(&p, carry);
    }
    wgt_tensor *xn;
    T(xn, norm(m, x, m->out_norm, m->out_norm_b, &xn));
    st = wgt_linear(xn, m->lm_head ? m->lm_head : m->tok_emb, NULL, logits); /* [B, L, V] */
done:
    release(&p, 0);
    return st;
}

wgt_status wgt_train_loss(wgt_train_model *m, const wgt_tensor *ids, const wgt_tensor *targets, wgt_tensor **loss,
                          wgt_tensor **logits_out)
{
    return tm_train_loss(m, ids, targets, WGT_NO_IGNORE_INDEX, loss, logits_out);
}

wgt_status tm_train_loss(wgt_train_model *m, const wgt_tensor *ids, const wgt_tensor *targets, int64_t ignore_index,
                         wgt_tensor **loss, wgt_tensor **logits_out)
{
    if (!loss) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_train_loss: NULL argument");
    *loss = NULL;
    if (logits_out) *logits_out = NULL;
    if (!targets || wgt_tensor_ndim(targets) != 2 || !ids || wgt_tensor_dim(targets, 0) != wgt_tensor_dim(ids, 0) ||
        wgt_tensor_dim(targets, 1) != wgt_tensor_dim(ids, 1))
        return wgt_error(WGT_ERR_SHAPE, "wgt_train_loss: targets must be [B, L] like the ids");
    wgt_tensor *logits, *flat = NULL, *tflat = NULL;
    wgt_status st = wgt_train_forward(m, ids, &logits);
    if (st) return st;
    if (wgt_tensor_dtype(logits) != WGT_F32) { /* mixed precision: the loss in f32, as autocast does */
        wgt_tensor *f;
        if ((st = wgt_tensor_cast(logits, WGT_F32, &f))) {
            wgt_tensor_free(logits);
            return st;
        }
        wgt_tensor_free(logits);
        logits = f;
    }
    int64_t n = wgt_tensor_dim(ids, 0) * wgt_tensor_dim(ids, 1), fs[2] = {n, m->cfg.vocab}, ts[1] = {n};
    st = wgt_tensor_reshape(logits, 2, fs, &flat);
    if (!st) st = wgt_tensor_reshape(targets, 1, ts, &tflat);
    if (!st && (fused(m, TM_CROSS_ENTROPY) || ignore_index != WGT_NO_IGNORE_INDEX))
        st = wgt_cross_entropy(flat, tflat, NULL, ignore_index, 0.0, WGT_REDUCTION_MEAN, loss);
    else if (!st)
        st = tm_cross_entropy(flat, tflat, loss);
    wgt_tensor_free(flat);
    wgt_tensor_free(tflat);
    if (!st && logits_out) *logits_out = logits;
    else wgt_tensor_free(logits);
    return st;
}
