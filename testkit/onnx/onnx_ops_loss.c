/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: through wgt_cpu_cross_entropy (on a device its
 * adapter, wgt_cross_entropy: one pass per row) when the backend has it; else composed from
 * reference ops: log_softmax over the class dim (SCE only), gather of the target class, per-class
 * weights by index_select, ignore_index as a 0/1 mask, then the reduction (none, sum, or the
 * weighted mean sum(loss) / sum(weights of the kept targets)). EyeLike from full, triu and tril. */
#include "onnx/onnx_ops_internal.h"

#include <string.h>

/* Scratch tensors freed together. */
typedef struct scratch {
    wgt_onnx_tensor t[8];
    int n;
} scratch;

static wgt_status tmp(scratch *s, wgt_dtype dtype, int ndim, const int64_t *dims, wgt_cpu_tensor *v)
{
    if (s->n == 8) return wgt_error(WGT_ERR_INTERNAL, "onnx: loss: out of scratch slots");
    OX_TRY(ox_temp(&s->t[s->n], dtype, ndim, dims));
    *v = ox_view(&s->t[s->n++]);
    return WGT_OK;
}

static wgt_status loss(ox *c, scratch *s)
{
    int sce = !strcmp(c->node->op_type, "SoftmaxCrossEntropyLoss");
    const wgt_onnx_tensor *x, *target, *weight = ox_in(c, 2);
    OX_TRY(ox_need(c, 0, &x));
    OX_TRY(ox_need(c, 1, &target));
    if (weight) OX_TRY(ox_need(c, 2, &weight));
    const char *red = ox_attr_s(c, "reduction", "mean");
    int mode = !strcmp(red, "none") ? 0 : !strcmp(red, "sum") ? 1 : !strcmp(red, "mean") ? 2 : -1;
    if (mode < 0) return ox_unsupported(c, "unknown reduction");
    if (x->ndim < 2 || target->ndim != x->ndim - 1 || target->dims[0] != x->dims[0])
        return wgt_error(WGT_ERR_SHAPE, "%s: input [N, C, ...] and target [N, ...] expected", c->node->op_type);
    for (int d = 1; d < target->ndim; d++)
        if (target->dims[d] != x->dims[d + 1]) return wgt_error(WGT_ERR_SHAPE, "%s: target shape mismatch", c->node->op_type);
    const wgt_onnx_attr *ign = ox_attr(c, "ignore_index");
    int64_t C = x->dims[1], none = 0;
    wgt_cpu_tensor xv = ox_view(x), tv = ox_view(target), lp = xv;
    if (sce) { /* log-probabilities, also the optional second output */
        int want = c->node->n_outputs > 1 && c->n_out > 1 && c->node->outputs[1][0];
        if (want) OX_TRY(ox_alloc(c, 1, x->dtype, x->ndim, x->dims, &lp));
        else OX_TRY(tmp(s, x->dtype, x->ndim, x->dims, &lp));
        OX_TRY(OX_CALL(c, wgt_cpu_log_softmax, &xv, 1, &lp));
    }
    /* keep = target != ignore_index; safe = keep ? target : 0 (so gathers stay in range). */
    wgt_cpu_tensor keep, safe, ignv, zero;
    int64_t ig = ign ? ign->i : 0, zi = 0;
    OX_TRY(tmp(s, WGT_F32, target->ndim, target->dims, &keep));
    OX_TRY(tmp(s, WGT_I64, target->ndim, target->dims, &safe));
    ignv = wgt_cpu_tensor_make(&ig, WGT_I64, 0, &none);
    zero = wgt_cpu_tensor_make(&zi, WGT_I64, 0, &none);
    if (ign) {
        OX_TRY(OX_CALL(c, wgt_cpu_binary, WGT_BINARY_NE, &tv, &ignv, &keep));
        OX_TRY(OX_CALL(c, wgt_cpu_where, &keep, &tv, &zero, &safe));
    } else {
        OX_TRY(OX_CALL(c, wgt_cpu_full, 1, &keep));
        OX_TRY(OX_CALL(c, wgt_cpu_cast, &tv, &safe));
    }
    /* picked[n, ...] = lp[n, safe[n, ...], ...]: gather on dim 1 with safe viewed as [N, 1, ...]. */
    wgt_cpu_tensor idx = safe, picked, w, wt;
    for (int d = target->ndim; d > 1; d--) idx.l.shape[d] = idx.l.shape[d - 1], idx.l.strides[d] = idx.l.strides[d - 1];
    idx.l.ndim = x->ndim, idx.l.shape[1] = 1, idx.l.strides[1] = 0;
    OX_TRY(tmp(s, WGT_F32, x->ndim, idx.l.shape, &picked));
    wgt_cpu_tensor lp32 = lp;
    if (lp.l.dtype != WGT_F32) { /* gather keeps the dtype: widen first */
        OX_TRY(tmp(s, WGT_F32, x->ndim, x->dims, &lp32));
        OX_TRY(OX_CALL(c, wgt_cpu_cast, &lp, &lp32));
    }
    OX_TRY(OX_CALL(c, wgt_cpu_gather, &lp32, 1, &idx, &picked));
    /* w[n, ...] = keep * weight[safe] */
    OX_TRY(tmp(s, WGT_F32, target->ndim, target->dims, &w));
    if (weight) {
        wgt_cpu_tensor wv = ox_view(weight), flat = safe, wflat = w;
        int64_t n = target->numel;
        if (weight->ndim != 1 || weight->dims[0] != C) return wgt_error(WGT_ERR_SHAPE, "%s: weight must be [C]", c->node->op_type);
        flat.l = wgt_cpu_tensor_make(NULL, WGT_I64, 1, &n).l, wflat.l = wgt_cpu_tensor_make(NULL, WGT_F32, 1, &n).l;
        OX_TRY(tmp(s, WGT_F32, 1, &C, &wt));
        OX_TRY(OX_CALL(c, wgt_cpu_cast, &wv, &wt));
        OX_TRY(OX_CALL(c, wgt_cpu_index_select, &wt, 0, &flat, &wflat));
        OX_TRY(OX_CALL(c, wgt_cpu_binary, WGT_BINARY_MUL, &w, &keep, &w));
    } else OX_TRY(OX_CALL(c, wgt_cpu_cast, &keep, &w));
    /* loss = -picked * w, picked viewed without its class dim. */
    wgt_cpu_tensor pk = picked, l, out;
    pk.l = w.l;
    OX_TRY(tmp(s, WGT_F32, target->ndim, target->dims, &l));
    OX_TRY(OX_CALL(c, wgt_cpu_binary, WGT_BINARY_MUL, &pk, &w, &l));
    OX_TRY(OX_CALL(c, wgt_cpu_unary, WGT_UNARY_NEG, NULL, &l, &l));
    if (mode == 0) {
        OX_TRY(ox_alloc(c, 0, x->dtype, target->ndim, target->dims, &out));
        return OX_CALL(c, wgt_cpu_cast, &l, &out);
    }
    float total = 0, wsum = 0;
    wgt_cpu_tensor T = wgt_cpu_tensor_make(&total, WGT_F32, 0, &none), WS = wgt_cpu_tensor_make(&wsum, WGT_F32, 0, &none);
    OX_TRY(OX_CALL(c, wgt_cpu_reduce, WGT_REDUCE_SUM, &l, 0, 0, 0, &T, NULL));
    OX_TRY(ox_alloc(c, 0, x->dtype, 0, NULL, &out));
    if (mode == 2) {
        OX_TRY(OX_CALL(c, wgt_cpu_reduce, WGT_REDUCE_SUM, &w, 0, 0, 0, &WS, NULL));
        OX_TRY(OX_CALL(c, wgt_cpu_binary, WGT_BINARY_DIV, &T, &WS, &out));
    } else OX_TRY(OX_CALL(c, wgt_cpu_cast, &T, &out));
    return WGT_OK;
}

/* The node through wgt_cpu_cross_entropy (SCE's optional log-probabilities by log_softmax). */
static wgt_status loss_fused(ox *c)
{
    int sce = !strcmp(c->node->op_type, "SoftmaxCrossEntropyLoss");
    const wgt_onnx_tensor *x, *target, *weight = ox_in(c, 2);
    OX_TRY(ox_need(c, 0, &x));
    OX_TRY(ox_need(c, 1, &target));
    const char *red = ox_attr_s(c, "reduction", "mean");
    wgt_reduction mode = !strcmp(red, "none") ? WGT_REDUCTION_NONE : !strcmp(red, "sum") ? WGT_REDUCTION_SUM
                         : !strcmp(red, "mean") ? WGT_REDUCTION_MEAN : WGT_REDUCTION_COUNT;
    if (mode == WGT_REDUCTION_COUNT) return ox_unsupported(c, "unknown reduction");
    if (x->ndim < 2 || target->ndim != x->ndim - 1)
        return wgt_error(WGT_ERR_SHAPE, "%s: input [N, C, ...] and target [N, ...] expected", c->node->op_type);
    const wgt_onnx_attr *ign = ox_attr(c, "ignore_index");
    wgt_cpu_tensor xv = ox_view(x), tv = ox_view(target), wv, out;
    if (weight) wv = ox_view(weight);
    if (sce && c->node->n_outputs > 1 && c->n_out > 1 && c->node->outputs[1][0]) {
        wgt_cpu_tensor lp;
        OX_TRY(ox_alloc(c, 1, x->dtype, x->ndim, x->dims, &lp));
        OX_TRY(OX_CALL(c, wgt_cpu_log_softmax, &xv, 1, &lp));
    }
    OX_TRY(ox_alloc(c, 0, x->dtype, mode == WGT_REDUCTION_NONE ? target->ndim : 0, target->dims, &out));
    return OX_CALL(c, wgt_cpu_cross_entropy, &xv, &tv, weight ? &wv : NULL, ign ? ign->i : WGT_NO_IGNORE_INDEX, 0, !sce,
                   mode, &out);
}

wgt_status ox_nll_loss(ox *c)
{
    if (OX_HAS(c, wgt_cpu_cross_entropy)) return loss_fused(c);
    scratch s = {.n = 0};
    wgt_status st = loss(c, &s);
    for (int i = 0; i < s.n; i++) wgt_onnx_tensor_clear(&s.t[i]);
    return st;
}

/* ONNX TensorProto types EyeLike may ask for (double data runs in f32, as the reader decodes it). */
static wgt_dtype eye_dtype(int64_t t)
{
    switch (t) {
    case WGT_ONNX_FLOAT: case WGT_ONNX_DOUBLE: return WGT_F32;
    case WGT_ONNX_FLOAT16: return WGT_F16;
    case WGT_ONNX_BFLOAT16: return WGT_BF16;
    case WGT_ONNX_INT32: return WGT_I32;
    case WGT_ONNX_INT64: return WGT_I64;
    case WGT_ONNX_UINT32: return WGT_U32;
    case WGT_ONNX_INT8: return WGT_I8;
    case WGT_ONNX_UINT8: return WGT_U8;
    case WGT_ONNX_BOOL: return WGT_BOOL;
    default: return WGT_DTYPE_COUNT;
    }
}

/* ones on diagonal k of a 2-D shape: tril(triu(ones, k), k) */
wgt_status ox_eye_like(ox *c)
{
    const wgt_onnx_tensor *x;
    OX_TRY(ox_need(c, 0, &x));
    if (x->ndim != 2) return wgt_error(WGT_ERR_SHAPE, "EyeLike: input must be 2-D, not %d-D", x->ndim);
    const wgt_onnx_attr *dt = ox_attr(c, "dtype");
    wgt_dtype to = dt ? eye_dtype(dt->i) : x->dtype;
    if (to == WGT_DTYPE_COUNT) return ox_unsupported(c, "dtype has no wgt dtype");
    int64_t k = ox_attr_i(c, "k", 0);
    wgt_onnx_tensor ones;
    memset(&ones, 0, sizeof ones);
    wgt_cpu_tensor out, o;
    OX_TRY(ox_alloc(c, 0, to, 2, x->dims, &out));
    OX_TRY(ox_temp(&ones, to, 2, x->dims));
    o = ox_view(&ones);
    wgt_status st = OX_CALL(c, wgt_cpu_full, 1, &o);
    if (!st) st = OX_CALL(c, wgt_cpu_triu, &o, k, &out);
    if (!st) st = OX_CALL(c, wgt_cpu_full, 0, &o); /* o = tril(out): out is read, o written */
    if (!st) st = OX_CALL(c, wgt_cpu_tril, &out, k, &o);
    if (!st) st = OX_CALL(c, wgt_cpu_copy, &o, &out);
    wgt_onnx_tensor_clear(&ones);
    return st;
}
