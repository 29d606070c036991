/* Convolution and transposed convolution over 1, 2 or 3 spatial dims (PyTorch's layouts), sums in
 * double. Lower-rank convolutions run as 3-D ones with leading spatial dims of size 1. */
#include "cpu/cpu_internal.h"

#include <string.h>

wgt_status wgt_cpu_conv_geometry(const char *op, const wgt_conv_params *p, int transposed, int nsp, const int64_t *S,
                                 const int64_t *K, int64_t *O, int64_t *pad_begin)
{
    if (nsp < 1 || nsp > 3)
        return wgt_error(WGT_ERR_SHAPE, "%s: %d spatial dims (weight rank %d); 1, 2 or 3 are supported", op, nsp,
                         nsp + 2);
    if ((int)p->padding < 0 || p->padding >= WGT_CONV_PAD_COUNT)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: unknown padding mode %d", op, (int)p->padding);
    for (int d = 0; d < nsp; d++) {
        int64_t s = p->stride[d] ? p->stride[d] : 1, dil = p->dilation[d] ? p->dilation[d] : 1;
        int64_t opad = p->output_padding[d];
        if (s < 0 || dil < 0)
            return wgt_error(WGT_ERR_INVALID_ARGUMENT,
                             "%s: stride %lld and dilation %lld of spatial dim %d must be positive", op, (long long)s,
                             (long long)dil, d);
        if (K[d] < 1)
            return wgt_error(WGT_ERR_SHAPE, "%s: kernel size %lld of spatial dim %d must be at least 1", op,
                             (long long)K[d], d);
        if (!transposed && opad)
            return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: output_padding applies to transposed convolutions only",
                             op);
        if (transposed && (opad < 0 || (opad >= s && opad >= dil)))
            return wgt_error(WGT_ERR_INVALID_ARGUMENT,
                             "%s: output_padding %lld of spatial dim %d must be smaller than the stride (%lld) or the "
                             "dilation (%lld)",
                             op, (long long)opad, d, (long long)s, (long long)dil);
        int64_t ext = dil * (K[d] - 1) + 1, b = 0, e = 0;
        switch (p->padding) {
        case WGT_CONV_PAD_EXPLICIT: b = p->pad_begin[d], e = p->pad_end[d]; break;
        case WGT_CONV_PAD_VALID: break;
        default: {
            int64_t total =
                transposed ? s * (S[d] - 1) + opad + ext - S[d] * s : ((S[d] + s - 1) / s - 1) * s + ext - S[d];
            if (!transposed && total < 0) total = 0;
            /* floor(total / 2), as ONNX's reference, also for a negative total (a transposed
             * convolution whose kernel is shorter than its stride) */
            int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
            b = p->padding == WGT_CONV_PAD_SAME_LOWER ? total - half : half;
            e = total - b;
        }
        }
        if (transposed) {
            O[d] = (S[d] - 1) * s - b - e + ext + opad;
            if (O[d] < 0)
                return wgt_error(WGT_ERR_SHAPE,
                                 "%s: spatial dim %d: the padding (%lld + %lld) leaves a negative output size", op, d,
                                 (long long)b, (long long)e);
        } else {
            int64_t span = S[d] + b + e - ext;
            if (span < 0)
                return wgt_error(WGT_ERR_SHAPE,
                                 "%s: spatial dim %d: the kernel's extent %lld (size %lld, dilation %lld) is larger "
                                 "than the padded input (%lld)",
                                 op, d, (long long)ext, (long long)K[d], (long long)dil, (long long)(S[d] + b + e));
            O[d] = span / s + 1;
        }
        pad_begin[d] = b;
    }
    return WGT_OK;
}

/* The shared checks: ranks, channel counts, bias, and the output's shape against the geometry.
 * Fills 3-D geometry (leading unit dims) for the loops. */
typedef struct geom {
    int64_t N, Cin, Cout, G, cin_g, cout_g;
    int64_t S[3], K[3], O[3], s[3], dil[3], pb[3];
} geom;

static wgt_status conv_setup(const char *op, int transposed, const wgt_cpu_tensor *x, const wgt_cpu_tensor *w,
                             const wgt_cpu_tensor *bias, const wgt_conv_params *p, const wgt_cpu_tensor *out, geom *g)
{
    CPU_CHECK(x, op);
    CPU_CHECK(w, op);
    CPU_CHECK(out, op);
    if (bias) CPU_CHECK(bias, op);
    int nsp = w->l.ndim - 2;
    if (nsp < 1 || nsp > 3 || x->l.ndim != w->l.ndim || out->l.ndim != w->l.ndim)
        return wgt_error(WGT_ERR_SHAPE,
                         "cpu: %s: x (%d-D), weight (%d-D) and out (%d-D) must have one rank of 3, 4 or 5", op,
                         x->l.ndim, w->l.ndim, out->l.ndim);
    memset(g, 0, sizeof *g);
    g->G = p->groups ? p->groups : 1;
    g->N = x->l.shape[0], g->Cin = x->l.shape[1];
    if (g->G < 1 || g->Cin % g->G)
        return wgt_error(WGT_ERR_SHAPE, "cpu: %s: %lld groups do not divide %lld input channels", op, (long long)g->G,
                         (long long)g->Cin);
    g->cin_g = g->Cin / g->G;
    if (transposed) {
        if (w->l.shape[0] != g->Cin) return wgt_error(WGT_ERR_SHAPE, "cpu: %s: weight dim 0 must be Cin", op);
        g->cout_g = w->l.shape[1], g->Cout = g->cout_g * g->G;
    } else {
        if (w->l.shape[1] != g->cin_g)
            return wgt_error(WGT_ERR_SHAPE, "cpu: %s: weight dim 1 must be Cin / groups", op);
        g->Cout = w->l.shape[0];
        if (g->Cout % g->G) return wgt_error(WGT_ERR_SHAPE, "cpu: %s: groups do not divide Cout", op);
        g->cout_g = g->Cout / g->G;
    }
    if (bias && (bias->l.ndim != 1 || bias->l.shape[0] != g->Cout))
        return wgt_error(WGT_ERR_SHAPE, "cpu: %s: bias must be [Cout]", op);
    int64_t O[3], pb[3];
    wgt_status st = wgt_cpu_conv_geometry(op, p, transposed, nsp, x->l.shape + 2, w->l.shape + 2, O, pb);
    if (st) return st;
    if (out->l.shape[0] != g->N || out->l.shape[1] != g->Cout)
        return wgt_error(WGT_ERR_SHAPE, "cpu: %s: out must be [N, Cout, ...]", op);
    for (int d = 0; d < 3; d++) {
        int a = d - (3 - nsp); /* the spatial dim of the caller, or < 0 for a leading unit dim */
        g->S[d] = a < 0 ? 1 : x->l.shape[2 + a];
        g->K[d] = a < 0 ? 1 : w->l.shape[2 + a];
        g->O[d] = a < 0 ? 1 : O[a];
        g->s[d] = a < 0 || !p->stride[a] ? 1 : p->stride[a];
        g->dil[d] = a < 0 || !p->dilation[a] ? 1 : p->dilation[a];
        g->pb[d] = a < 0 ? 0 : pb[a];
        if (a >= 0 && out->l.shape[2 + a] != O[a])
            return wgt_error(WGT_ERR_SHAPE, "cpu: %s: out spatial dim %d is %lld, the geometry gives %lld", op, a,
                             (long long)out->l.shape[2 + a], (long long)O[a]);
    }
    return WGT_OK;
}

/* Storage index of element (i0, i1, i2, i3, i4) of a rank-(nsp + 2) layout padded to 5 dims. */
static int64_t at5(const wgt_layout *l, int64_t a, int64_t b, int64_t c, int64_t d, int64_t e)
{
    int64_t st[5] = {0, 0, 0, 0, 0};
    int nsp = l->ndim - 2;
    st[0] = l->strides[0], st[1] = l->strides[1];
    for (int k = 0; k < nsp; k++) st[2 + 3 - nsp + k] = l->strides[2 + k];
    return l->offset + a * st[0] + b * st[1] + c * st[2] + d * st[3] + e * st[4];
}

wgt_status wgt_cpu_conv(const wgt_cpu_tensor *x, const wgt_cpu_tensor *w, const wgt_cpu_tensor *bias,
                        const wgt_conv_params *p, const wgt_cpu_tensor *out)
{
    geom g;
    wgt_status st = conv_setup("conv", 0, x, w, bias, p, out, &g);
    if (st) return st;
    for (int64_t n = 0; n < g.N; n++)
        for (int64_t co = 0; co < g.Cout; co++) {
            int64_t grp = co / g.cout_g;
            double b0 = bias ? wgt_cpu_load_f(bias, wgt_layout_index(&bias->l, co)) : 0;
            for (int64_t o0 = 0; o0 < g.O[0]; o0++)
                for (int64_t o1 = 0; o1 < g.O[1]; o1++)
                    for (int64_t o2 = 0; o2 < g.O[2]; o2++) {
                        double acc = b0;
                        for (int64_t ci = 0; ci < g.cin_g; ci++)
                            for (int64_t k0 = 0; k0 < g.K[0]; k0++)
                                for (int64_t k1 = 0; k1 < g.K[1]; k1++)
                                    for (int64_t k2 = 0; k2 < g.K[2]; k2++) {
                                        int64_t i0 = o0 * g.s[0] - g.pb[0] + k0 * g.dil[0];
                                        int64_t i1 = o1 * g.s[1] - g.pb[1] + k1 * g.dil[1];
                                        int64_t i2 = o2 * g.s[2] - g.pb[2] + k2 * g.dil[2];
                                        double wv = wgt_cpu_load_f(w, at5(&w->l, co, ci, k0, k1, k2));
                                        double xv = 0; /* zero padding, multiplied like PyTorch's */
                                        if (i0 >= 0 && i0 < g.S[0] && i1 >= 0 && i1 < g.S[1] && i2 >= 0 && i2 < g.S[2])
                                            xv = wgt_cpu_load_f(x, at5(&x->l, n, grp * g.cin_g + ci, i0, i1, i2));
                                        acc += xv * wv;
                                    }
                        wgt_cpu_store_f(out, at5(&out->l, n, co, o0, o1, o2), acc);
                    }
        }
    return WGT_OK;
}

/* The input position that output o reaches through kernel tap k, or -1 if none. */
static int64_t tap(int64_t o, int64_t k, int64_t s, int64_t dil, int64_t pb, int64_t S)
{
    int64_t t = o + pb - k * dil;
    if (t < 0 || t % s) return -1;
    t /= s;
    return t < S ? t : -1;
}

wgt_status wgt_cpu_conv_transpose(const wgt_cpu_tensor *x, const wgt_cpu_tensor *w, const wgt_cpu_tensor *bias,
                                  const wgt_conv_params *p, const wgt_cpu_tensor *out)
{
    geom g;
    wgt_status st = conv_setup("conv_transpose", 1, x, w, bias, p, out, &g);
    if (st) return st;
    for (int64_t n = 0; n < g.N; n++)
        for (int64_t co = 0; co < g.Cout; co++) {
            int64_t grp = co / g.cout_g, col = co % g.cout_g;
            double b0 = bias ? wgt_cpu_load_f(bias, wgt_layout_index(&bias->l, co)) : 0;
            for (int64_t o0 = 0; o0 < g.O[0]; o0++)
                for (int64_t o1 = 0; o1 < g.O[1]; o1++)
                    for (int64_t o2 = 0; o2 < g.O[2]; o2++) {
                        double acc = b0;
                        for (int64_t k0 = 0; k0 < g.K[0]; k0++) {
                            int64_t i0 = tap(o0, k0, g.s[0], g.dil[0], g.pb[0], g.S[0]);
                            if (i0 < 0) continue;
                            for (int64_t k1 = 0; k1 < g.K[1]; k1++) {
                                int64_t i1 = tap(o1, k1, g.s[1], g.dil[1], g.pb[1], g.S[1]);
                                if (i1 < 0) continue;
                                for (int64_t k2 = 0; k2 < g.K[2]; k2++) {
                                    int64_t i2 = tap(o2, k2, g.s[2], g.dil[2], g.pb[2], g.S[2]);
                                    if (i2 < 0) continue;
                                    for (int64_t ci = 0; ci < g.cin_g; ci++) {
                                        int64_t c = grp * g.cin_g + ci;
                                        acc += wgt_cpu_load_f(x, at5(&x->l, n, c, i0, i1, i2)) *
                                               wgt_cpu_load_f(w, at5(&w->l, c, col, k0, k1, k2));
                                    }
                                }
                            }
                        }
                        wgt_cpu_store_f(out, at5(&out->l, n, co, o0, o1, o2), acc);
                    }
        }
    return WGT_OK;
}
