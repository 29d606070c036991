/* Conv and ConvTranspose: ONNX's attributes mapped onto wgt_conv_params. auto_pad NOTSET takes
 * pads ([begin..., end...]), SAME_UPPER / SAME_LOWER / VALID the op's own modes. ConvTranspose's
 * output_shape (or auto_pad SAME, which asks for input * stride) is turned into explicit pads as
 * ONNX's reference does: total = stride (in - 1) + output_padding + dilation (k - 1) + 1 - out,
 * split with floor(total / 2) at the beginning for SAME_UPPER and at the end otherwise (a
 * negative total grows the output). ConvInteger and QLinearConv run through the float convolution
 * (see conv_integer). */
#include "onnx/onnx_ops_internal.h"

#include <string.h>

static int64_t floor_half(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

/* ints attribute name into v[0 .. n) (default dflt when absent); its length must be n. */
static wgt_status ints_attr(const ox *c, const char *name, int n, int64_t dflt, int64_t *v)
{
    const wgt_onnx_attr *a = ox_attr(c, name);
    for (int i = 0; i < n; i++) v[i] = dflt;
    if (!a) return WGT_OK;
    if (a->type != WGT_ONNX_ATTR_INTS || a->n_ints != n)
        return wgt_error(WGT_ERR_FORMAT, "%s: attribute %s must hold %d ints", c->node->op_type, name, n);
    memcpy(v, a->ints, n * sizeof *v);
    return WGT_OK;
}

/* The node's attributes as wgt_conv_params (pads resolved for ConvTranspose's output_shape and
 * SAME), and the output dims. */
static wgt_status conv_attrs(const ox *c, int transposed, const wgt_onnx_tensor *x, const wgt_onnx_tensor *w,
                             wgt_conv_params *pp, int64_t *dims)
{
    int nsp = w->ndim - 2;
    if (nsp < 1 || nsp > 3 || x->ndim != w->ndim)
        return ox_unsupported(c, "input and weight of rank 3, 4 or 5 (1 to 3 spatial dims)");
    wgt_conv_params p;
    memset(&p, 0, sizeof p);
    int64_t k[3], pads[6], out_shape[3], group = ox_attr_i(c, "group", 1);
    if (group < 1 || group > 1 << 30)
        return wgt_error(WGT_ERR_FORMAT, "%s: group %lld", c->node->op_type, (long long)group);
    p.groups = (int)group;
    OX_TRY(ints_attr(c, "kernel_shape", nsp, 0, k));
    for (int d = 0; d < nsp; d++)
        if (k[d] && k[d] != w->dims[2 + d])
            return wgt_error(WGT_ERR_SHAPE, "%s: kernel_shape[%d] = %lld, the weight has %lld", c->node->op_type, d,
                             (long long)k[d], (long long)w->dims[2 + d]);
    OX_TRY(ints_attr(c, "strides", nsp, 1, p.stride));
    OX_TRY(ints_attr(c, "dilations", nsp, 1, p.dilation));
    OX_TRY(ints_attr(c, "pads", 2 * nsp, 0, pads));
    if (transposed) OX_TRY(ints_attr(c, "output_padding", nsp, 0, p.output_padding));
    for (int d = 0; d < nsp; d++) p.pad_begin[d] = pads[d], p.pad_end[d] = pads[nsp + d];
    const char *ap = ox_attr_s(c, "auto_pad", "NOTSET");
    int upper = !strcmp(ap, "SAME_UPPER"), lower = !strcmp(ap, "SAME_LOWER");
    if (!upper && !lower && strcmp(ap, "VALID") && strcmp(ap, "NOTSET"))
        return wgt_error(WGT_ERR_FORMAT, "%s: unknown auto_pad '%s'", c->node->op_type, ap);
    if (!strcmp(ap, "VALID")) p.padding = WGT_CONV_PAD_VALID;
    const wgt_onnx_attr *os = transposed ? ox_attr(c, "output_shape") : NULL;
    if (!transposed && (upper || lower)) p.padding = upper ? WGT_CONV_PAD_SAME : WGT_CONV_PAD_SAME_LOWER;
    if (transposed && (os || upper || lower)) {
        if (os) {
            /* output_shape may list the spatial sizes or the whole output shape */
            if (os->type != WGT_ONNX_ATTR_INTS || (os->n_ints != nsp && os->n_ints != nsp + 2))
                return wgt_error(WGT_ERR_FORMAT, "ConvTranspose: output_shape must hold %d ints", nsp);
            for (int d = 0; d < nsp; d++) out_shape[d] = os->ints[os->n_ints - nsp + d];
        } else {
            for (int d = 0; d < nsp; d++) out_shape[d] = x->dims[2 + d] * p.stride[d];
        }
        for (int d = 0; d < nsp; d++) {
            int64_t total = p.stride[d] * (x->dims[2 + d] - 1) + p.output_padding[d] +
                            (w->dims[2 + d] - 1) * p.dilation[d] + 1 - out_shape[d];
            int64_t half = floor_half(total);
            p.pad_begin[d] = upper ? half : total - half;
            p.pad_end[d] = total - p.pad_begin[d];
        }
        p.padding = WGT_CONV_PAD_EXPLICIT;
    }
    int64_t S[3], O[3], pb[3];
    for (int d = 0; d < nsp; d++) S[d] = x->dims[2 + d];
    OX_TRY(wgt_cpu_conv_geometry(c->node->op_type, &p, transposed, nsp, S, w->dims + 2, O, pb));
    dims[0] = x->dims[0];
    dims[1] = transposed ? w->dims[1] * group : w->dims[0];
    for (int d = 0; d < nsp; d++) dims[2 + d] = O[d];
    *pp = p;
    return WGT_OK;
}

/* A [M] (or one-value) tensor viewed to broadcast over w-ranked [N, M, ...] or [M, ...] data: one
 * value per channel of dim `axis`. */
static wgt_status channel_view(const ox *c, const wgt_onnx_tensor *t, int64_t M, int ndim, int axis, wgt_cpu_tensor *v)
{
    *v = ox_view(t);
    if (t->numel == 1) {
        v->l.ndim = 0;
        return WGT_OK;
    }
    if (t->ndim != 1 || t->dims[0] != M)
        return ox_unsupported(c, "a zero point, scale or bias of one value or one per channel");
    v->l.ndim = ndim;
    for (int d = 0; d < ndim; d++) v->l.shape[d] = d == axis ? M : 1, v->l.strides[d] = d == axis ? 1 : 0;
    return WGT_OK;
}

/* ConvInteger and QLinearConv: (x - x_zero_point) conv (w - w_zero_point) in f32 (exact while every
 * partial sum stays below 2^24: (255 * 255) times 258 terms), w_zero_point per output channel or
 * not. QLinearConv then adds the int32 bias, scales by x_scale w_scale / y_scale, adds
 * y_zero_point, saturates and rounds half to even, as ONNX's reference. tmp: 4 scratch tensors. */
static wgt_status conv_integer(ox *c, int qlinear, wgt_onnx_tensor *tmp)
{
    int iw = qlinear ? 3 : 1, iwz = qlinear ? 5 : 3; /* x and its zero point are inputs 0 and 2 in both */
    const wgt_onnx_tensor *x, *w, *xz = ox_in(c, 2), *wz = ox_in(c, iwz);
    OX_TRY(ox_need(c, 0, &x));
    OX_TRY(ox_need(c, iw, &w));
    if ((x->dtype != WGT_U8 && x->dtype != WGT_I8) || (w->dtype != WGT_U8 && w->dtype != WGT_I8))
        return ox_unsupported(c, "input and weight of uint8 or int8");
    wgt_conv_params p;
    int64_t dims[5], M = w->dims[0];
    int nd = w->ndim;
    OX_TRY(conv_attrs(c, 0, x, w, &p, dims));
    wgt_cpu_tensor xv = ox_view(x), wv = ox_view(w), xf, wf, yf, ov, zv;
    OX_TRY(ox_temp(&tmp[0], WGT_F32, x->ndim, x->dims));
    OX_TRY(ox_temp(&tmp[1], WGT_F32, nd, w->dims));
    OX_TRY(ox_temp(&tmp[2], WGT_F32, nd, dims));
    xf = ox_view(&tmp[0]), wf = ox_view(&tmp[1]), yf = ox_view(&tmp[2]);
    OX_TRY(OX_CALL(c, wgt_cpu_cast, &xv, &xf));
    OX_TRY(OX_CALL(c, wgt_cpu_cast, &wv, &wf));
    if (xz) {
        if (xz->numel != 1) return ox_unsupported(c, "a per-tensor x_zero_point only");
        OX_TRY(channel_view(c, xz, 1, nd, 0, &zv));
        OX_TRY(OX_CALL(c, wgt_cpu_binary, WGT_BINARY_SUB, &xf, &zv, &xf));
    }
    if (wz) {
        OX_TRY(channel_view(c, wz, M, nd, 0, &zv));
        OX_TRY(OX_CALL(c, wgt_cpu_binary, WGT_BINARY_SUB, &wf, &zv, &wf));
    }
    OX_TRY(OX_CALL(c, wgt_cpu_conv, &xf, &wf, NULL, &p, &yf));
    if (!qlinear) {
        OX_TRY(ox_alloc(c, 0, WGT_I32, nd, dims, &ov));
        return OX_CALL(c, wgt_cpu_cast, &yf, &ov);
    }
    const wgt_onnx_tensor *xs, *ws, *ys, *yz = ox_in(c, 7), *b = ox_in(c, 8);
    OX_TRY(ox_need(c, 1, &xs));
    OX_TRY(ox_need(c, 4, &ws));
    OX_TRY(ox_need(c, 6, &ys));
    if (b) {
        OX_TRY(channel_view(c, b, M, nd, 1, &zv));
        OX_TRY(OX_CALL(c, wgt_cpu_binary, WGT_BINARY_ADD, &yf, &zv, &yf));
    }
    /* the scale as ONNX's reference makes it: x_scale * w_scale / y_scale in f32 */
    if (ws->numel != 1 && ws->numel != M) return ox_unsupported(c, "w_scale of one value or one per channel");
    int64_t nsc = ws->numel;
    OX_TRY(ox_temp(&tmp[3], WGT_F32, 1, &nsc));
    wgt_cpu_tensor wsv = ox_view(ws), sv = ox_view(&tmp[3]);
    for (int64_t m = 0; m < nsc; m++)
        ((float *)tmp[3].data)[m] = (float)ox_scalar(xs) * (float)wgt_cpu_load_f(&wsv, m) / (float)ox_scalar(ys);
    OX_TRY(channel_view(c, &tmp[3], M, nd, 1, &sv));
    OX_TRY(OX_CALL(c, wgt_cpu_binary, WGT_BINARY_MUL, &yf, &sv, &yf));
    wgt_dtype odt = yz ? yz->dtype : WGT_U8;
    if (odt != WGT_U8 && odt != WGT_I8) return ox_unsupported(c, "y_zero_point of uint8 or int8");
    if (yz) {
        OX_TRY(channel_view(c, yz, 1, nd, 0, &zv));
        OX_TRY(OX_CALL(c, wgt_cpu_binary, WGT_BINARY_ADD, &yf, &zv, &yf));
    }
    wgt_unary_params cp = {0};
    cp.lo = odt == WGT_U8 ? 0 : -128, cp.hi = odt == WGT_U8 ? 255 : 127;
    OX_TRY(OX_CALL(c, wgt_cpu_unary, WGT_UNARY_CLAMP, &cp, &yf, &yf));
    OX_TRY(OX_CALL(c, wgt_cpu_unary, WGT_UNARY_ROUND, NULL, &yf, &yf));
    OX_TRY(ox_alloc(c, 0, odt, nd, dims, &ov));
    return OX_CALL(c, wgt_cpu_cast, &yf, &ov);
}

wgt_status ox_conv(ox *c)
{
    int qlinear = !strcmp(c->node->op_type, "QLinearConv");
    if (qlinear || !strcmp(c->node->op_type, "ConvInteger")) {
        wgt_onnx_tensor tmp[4];
        memset(tmp, 0, sizeof tmp);
        wgt_status st = conv_integer(c, qlinear, tmp);
        for (int i = 0; i < 4; i++) wgt_onnx_tensor_clear(&tmp[i]);
        return st;
    }
    int transposed = !strcmp(c->node->op_type, "ConvTranspose");
    const wgt_onnx_tensor *x, *w, *b = ox_in(c, 2);
    OX_TRY(ox_need(c, 0, &x));
    OX_TRY(ox_need(c, 1, &w));
    if (x->dtype != WGT_F32 && x->dtype != WGT_F16 && x->dtype != WGT_BF16)
        return ox_unsupported(c, "input dtype (float, float16, bfloat16 only)");
    wgt_conv_params p;
    int64_t dims[5];
    OX_TRY(conv_attrs(c, transposed, x, w, &p, dims));
    wgt_cpu_tensor xv = ox_view(x), wv = ox_view(w), bv, ov;
    if (b) bv = ox_view(b);
    OX_TRY(ox_alloc(c, 0, x->dtype, w->ndim, dims, &ov));
    return transposed ? OX_CALL(c, wgt_cpu_conv_transpose, &xv, &wv, b ? &bv : NULL, &p, &ov)
                      : OX_CALL(c, wgt_cpu_conv, &xv, &wv, b ? &bv : NULL, &p, &ov);
}
