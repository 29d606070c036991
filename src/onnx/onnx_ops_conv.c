/* Conv and ConvTranspose: ONNX's attributes mapped onto wgt_conv_params. auto_pad NOTSET takes
 * pads ([begin..., end...]), SAME_UPPER / SAME_LOWER / VALID the op's own modes. ConvTranspose's
 * output_shape (or auto_pad SAME, which asks for input * stride) is turned into explicit pads as
 * ONNX's reference does: total = stride (in - 1) + output_padding + dilation (k - 1) + 1 - out,
 * split with floor(total / 2) at the beginning for SAME_UPPER and at the end otherwise (a
 * negative total grows the output). ConvInteger runs through the float convolution (see below). */
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
    if (group < 1 || group > 1 << 30) return wgt_error(WGT_ERR_FORMAT, "%s: group %lld", c->node->op_type, (long long)group);
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

/* ConvInteger: (x - x_zero_point) conv (w - w_zero_point) into int32, run in f32 (exact while
 * every partial sum stays below 2^24: (255 * 255) times 258 terms). w_zero_point may be per
 * output channel. */
static wgt_status conv_integer(ox *c, wgt_onnx_tensor *tmp)
{
    const wgt_onnx_tensor *x, *w, *xz = ox_in(c, 2), *wz = ox_in(c, 3);
    OX_TRY(ox_need(c, 0, &x));
    OX_TRY(ox_need(c, 1, &w));
    if ((x->dtype != WGT_U8 && x->dtype != WGT_I8) || (w->dtype != WGT_U8 && w->dtype != WGT_I8))
        return ox_unsupported(c, "input and weight of uint8 or int8");
    wgt_conv_params p;
    int64_t dims[5];
    OX_TRY(conv_attrs(c, 0, x, w, &p, dims));
    wgt_cpu_tensor xv = ox_view(x), wv = ox_view(w), xf, wf, yf, ov;
    OX_TRY(ox_temp(&tmp[0], WGT_F32, x->ndim, x->dims));
    OX_TRY(ox_temp(&tmp[1], WGT_F32, w->ndim, w->dims));
    OX_TRY(ox_temp(&tmp[2], WGT_F32, w->ndim, dims));
    xf = ox_view(&tmp[0]), wf = ox_view(&tmp[1]), yf = ox_view(&tmp[2]);
    OX_TRY(OX_CALL(c, cast, &xv, &xf));
    OX_TRY(OX_CALL(c, cast, &wv, &wf));
    if (xz) {
        if (xz->numel != 1) return ox_unsupported(c, "a per-tensor x_zero_point only");
        wgt_cpu_tensor zv = ox_view(xz);
        zv.l.ndim = 0;
        OX_TRY(OX_CALL(c, binary, WGT_BINARY_SUB, &xf, &zv, &xf));
    }
    if (wz) {
        wgt_cpu_tensor zv = ox_view(wz);
        if (wz->numel == 1) zv.l.ndim = 0;
        else if (wz->ndim == 1 && wz->dims[0] == w->dims[0]) { /* [M] -> [M, 1, ...] */
            zv.l.ndim = w->ndim;
            for (int d = 1; d < w->ndim; d++) zv.l.shape[d] = 1, zv.l.strides[d] = 0;
        } else return ox_unsupported(c, "w_zero_point of one value or one per output channel");
        OX_TRY(OX_CALL(c, binary, WGT_BINARY_SUB, &wf, &zv, &wf));
    }
    OX_TRY(OX_CALL(c, conv, &xf, &wf, NULL, &p, &yf));
    OX_TRY(ox_alloc(c, 0, WGT_I32, w->ndim, dims, &ov));
    return OX_CALL(c, cast, &yf, &ov);
}

wgt_status ox_conv(ox *c)
{
    if (!strcmp(c->node->op_type, "ConvInteger")) {
        wgt_onnx_tensor tmp[3];
        memset(tmp, 0, sizeof tmp);
        wgt_status st = conv_integer(c, tmp);
        for (int i = 0; i < 3; i++) wgt_onnx_tensor_clear(&tmp[i]);
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
    return transposed ? OX_CALL(c, conv_transpose, &xv, &wv, b ? &bv : NULL, &p, &ov)
                      : OX_CALL(c, conv, &xv, &wv, b ? &bv : NULL, &p, &ov);
}
