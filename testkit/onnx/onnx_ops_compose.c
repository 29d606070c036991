/* ONNX activations without a reference op of their own, composed from reference ops (so a GPU
 * backend runs them through its kernels too), and Compress (nonzero + index_select). */
#include "onnx/onnx_ops_internal.h"

#include <string.h>

/* A 0-d f32 constant. */
static wgt_cpu_tensor scalar(float *v)
{
    return wgt_cpu_tensor_make(v, WGT_F32, 0, NULL);
}

/* Selu, Celu, ThresholdedRelu, Softsign into ov, with tv as scratch of ov's shape. */
static wgt_status compose(ox *c, const wgt_cpu_tensor *xv, const wgt_cpu_tensor *ov, const wgt_cpu_tensor *tv)
{
    const char *op = c->node->op_type;
    float zero = 0, one = 1;
    wgt_cpu_tensor Z = scalar(&zero), ONE = scalar(&one);
    float alpha = (float)ox_attr_f(c, "alpha", !strcmp(op, "Selu") ? 1.67326319217681884765625 : 1.0);
    wgt_cpu_tensor A = scalar(&alpha);
    if (!strcmp(op, "Selu")) { /* gamma * elu(x, alpha) */
        float gamma = (float)ox_attr_f(c, "gamma", 1.05070102214813232421875);
        wgt_cpu_tensor G = scalar(&gamma);
        wgt_unary_params p = wgt_unary_params_default(WGT_UNARY_ELU);
        p.alpha = alpha;
        OX_TRY(OX_CALL(c, wgt_cpu_unary, WGT_UNARY_ELU, &p, xv, tv));
        return OX_CALL(c, wgt_cpu_binary, WGT_BINARY_MUL, tv, &G, ov);
    }
    if (!strcmp(op, "Celu")) { /* alpha * elu(x / alpha, 1) */
        OX_TRY(OX_CALL(c, wgt_cpu_binary, WGT_BINARY_DIV, xv, &A, tv));
        OX_TRY(OX_CALL(c, wgt_cpu_unary, WGT_UNARY_ELU, NULL, tv, tv));
        return OX_CALL(c, wgt_cpu_binary, WGT_BINARY_MUL, tv, &A, ov);
    }
    if (!strcmp(op, "ThresholdedRelu")) { /* x > alpha ? x : 0 */
        OX_TRY(OX_CALL(c, wgt_cpu_binary, WGT_BINARY_GT, xv, &A, tv));
        return OX_CALL(c, wgt_cpu_where, tv, xv, &Z, ov);
    }
    /* Softsign: x / (1 + |x|) */
    OX_TRY(OX_CALL(c, wgt_cpu_unary, WGT_UNARY_ABS, NULL, xv, tv));
    OX_TRY(OX_CALL(c, wgt_cpu_binary, WGT_BINARY_ADD, tv, &ONE, tv));
    return OX_CALL(c, wgt_cpu_binary, WGT_BINARY_DIV, xv, tv, ov);
}

wgt_status ox_composed_activation(ox *c)
{
    const wgt_onnx_tensor *x;
    OX_TRY(ox_need(c, 0, &x));
    if (!wgt_cpu_is_float(x->dtype)) return ox_unsupported(c, "integer input");
    wgt_onnx_tensor t, m = {0};
    int nd = x->ndim;
    int64_t dims[WGT_MAX_DIMS];
    memcpy(dims, x->dims, sizeof dims);
    if (!strcmp(c->node->op_type, "PRelu")) { /* the slope may widen the shape */
        const wgt_onnx_tensor *both[2] = {x, ox_in(c, 1)};
        if (!both[1]) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "PRelu: slope missing");
        OX_TRY(ox_broadcast(c, both, 2, &nd, dims));
    }
    wgt_cpu_tensor xv = ox_view(x), ov, tv, mv;
    OX_TRY(ox_alloc(c, 0, x->dtype, nd, dims, &ov));
    OX_TRY(ox_temp(&t, WGT_F32, nd, dims));
    tv = ox_view(&t);
    wgt_status st;
    if (!strcmp(c->node->op_type, "PRelu")) { /* x < 0 ? slope * x : x, slope broadcast */
        const wgt_onnx_tensor *slope;
        float zero = 0;
        wgt_cpu_tensor Z = scalar(&zero);
        st = ox_need(c, 1, &slope);
        wgt_cpu_tensor sv = st ? xv : ox_view(slope);
        if (!st) st = ox_temp(&m, WGT_BOOL, nd, dims);
        mv = ox_view(&m);
        if (!st) st = OX_CALL(c, wgt_cpu_binary, WGT_BINARY_MUL, &xv, &sv, &tv);
        if (!st) st = OX_CALL(c, wgt_cpu_binary, WGT_BINARY_LT, &xv, &Z, &mv);
        if (!st) st = OX_CALL(c, wgt_cpu_where, &mv, &tv, &xv, &ov);
    } else st = compose(c, &xv, &ov, &tv);
    wgt_onnx_tensor_clear(&t);
    wgt_onnx_tensor_clear(&m);
    return st;
}

/* Compress: the slices along axis where condition is set (index_select of nonzero(condition)),
 * or, without an axis, the selected elements of the flattened input. */
wgt_status ox_compress(ox *c)
{
    const wgt_onnx_tensor *x, *cond;
    OX_TRY(ox_need(c, 0, &x));
    OX_TRY(ox_need(c, 1, &cond));
    if (cond->ndim != 1) return wgt_error(WGT_ERR_SHAPE, "Compress: condition must be 1-D");
    const wgt_onnx_attr *a = ox_attr(c, "axis");
    int ax = -1;
    wgt_cpu_tensor xv = ox_view(x), cv = ox_view(cond), ov;
    int64_t flat = x->numel;
    if (a) OX_TRY(ox_axis(c, a->i, x->ndim, &ax));
    else xv = wgt_cpu_tensor_make(x->data, x->dtype, 1, &flat), ax = 0;
    int64_t len = xv.l.shape[ax];
    if (cond->numel > len) return wgt_error(WGT_ERR_SHAPE, "Compress: condition longer than the axis");
    /* positions = nonzero(condition) as [count, 1]. */
    int64_t count, pd[2];
    OX_TRY(OX_CALL(c, wgt_cpu_nonzero, &cv, NULL, &count));
    wgt_onnx_tensor pos;
    pd[0] = count, pd[1] = 1;
    OX_TRY(ox_temp(&pos, WGT_I64, 2, pd));
    wgt_cpu_tensor pv = ox_view(&pos);
    wgt_status st = OX_CALL(c, wgt_cpu_nonzero, &cv, &pv, &count);
    int64_t dims[WGT_MAX_DIMS];
    memcpy(dims, xv.l.shape, sizeof dims);
    dims[ax] = count;
    if (!st) st = ox_alloc(c, 0, x->dtype, xv.l.ndim, dims, &ov);
    wgt_cpu_tensor p1 = wgt_cpu_tensor_make(pos.data, WGT_I64, 1, &count);
    if (!st) st = OX_CALL(c, wgt_cpu_index_select, &xv, ax, &p1, &ov);
    wgt_onnx_tensor_clear(&pos);
    return st;
}
