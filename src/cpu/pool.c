/* Pooling: max and average pools with kernel/stride/padding/dilation, adaptive pools. Each output
 * element walks its window directly (no separable passes), in double for floats and int64 for
 * integers, following PyTorch's CPU kernels (max_pool2d, avg_pool2d, adaptive_*_pool2d). */
#include "cpu/pool.h"

#include <math.h>

#include "cpu/cpu_internal.h"

/* A plane view: the leading dims of a layout (spatial ones dropped), and the spatial sizes and
 * strides as a [H, W] plane (H 1 for one spatial dim). */
typedef struct plane {
    wgt_layout lead;
    int64_t h, w, sh, sw;
} plane;

static void plane_of(const wgt_layout *l, int spatial, plane *p)
{
    p->lead = *l;
    p->lead.ndim = l->ndim - spatial;
    p->w = l->shape[l->ndim - 1], p->sw = l->strides[l->ndim - 1];
    p->h = spatial == 2 ? l->shape[l->ndim - 2] : 1;
    p->sh = spatial == 2 ? l->strides[l->ndim - 2] : 0;
}

/* Window [*lo, *hi) (before clamping) of output position o along one dim. */
static void window(const wgt_cpu_pool_geom *g, int dim, int64_t o, int64_t in, int64_t out, int64_t *lo,
                   int64_t *hi)
{
    if (g->kind == WGT_CPU_POOL_ADAPTIVE_MAX || g->kind == WGT_CPU_POOL_ADAPTIVE_AVG) {
        *lo = (o * in) / out;
        *hi = ((o + 1) * in + out - 1) / out;
        return;
    }
    *lo = o * g->s[dim] - g->p[dim];
    *hi = *lo + (g->k[dim] - 1) * g->d[dim] + 1;
}

wgt_status wgt_cpu_pool(const wgt_cpu_pool_geom *g, const wgt_cpu_tensor *x, const wgt_cpu_tensor *out,
                        const wgt_cpu_tensor *indices)
{
    CPU_CHECK(x, "pool input");
    CPU_CHECK(out, "pool output");
    int sp = g->spatial;
    if (sp < 1 || sp > 2 || x->l.ndim < sp + 1 || out->l.ndim != x->l.ndim)
        return wgt_error(WGT_ERR_SHAPE, "cpu: pool: %d spatial dims of a %d-D input into %d-D", sp, x->l.ndim,
                         out->l.ndim);
    for (int d = 0; d < x->l.ndim - sp; d++)
        if (x->l.shape[d] != out->l.shape[d]) return wgt_error(WGT_ERR_SHAPE, "cpu: pool: batch dim %d differs", d);
    if (indices) {
        CPU_CHECK(indices, "pool indices");
        if (!cpu_same_shape(&indices->l, &out->l)) return wgt_error(WGT_ERR_SHAPE, "cpu: pool: indices shape");
    }
    int is_max = g->kind == WGT_CPU_POOL_MAX || g->kind == WGT_CPU_POOL_ADAPTIVE_MAX;
    int isf = wgt_cpu_is_float(x->l.dtype);
    if (!is_max && (!isf || !wgt_cpu_is_float(out->l.dtype)))
        return wgt_error(WGT_ERR_DTYPE, "cpu: avg pool needs float tensors");
    plane px, po;
    plane_of(&x->l, sp, &px);
    plane_of(&out->l, sp, &po);
    int64_t planes = wgt_layout_numel(&px.lead);
    /* a 1-D pool is a [1, W] plane: its dim 0 has a one-element window */
    int64_t kk[2] = {sp == 2 ? g->k[0] : 1, g->k[1]}, ss[2] = {sp == 2 ? g->s[0] : 1, g->s[1]};
    int64_t pp[2] = {sp == 2 ? g->p[0] : 0, g->p[1]}, dd[2] = {sp == 2 ? g->d[0] : 1, g->d[1]};
    wgt_cpu_pool_geom G = *g;
    for (int i = 0; i < 2; i++) G.k[i] = kk[i], G.s[i] = ss[i], G.p[i] = pp[i], G.d[i] = dd[i] > 0 ? dd[i] : 1;
    if (po.h * po.w == 0 || planes == 0) return WGT_OK;
    for (int64_t pl = 0; pl < planes; pl++) {
        int64_t bx = wgt_layout_index(&px.lead, pl), bo = wgt_layout_index(&po.lead, pl);
        int64_t bi = 0;
        plane ip = {0};
        if (indices) {
            plane_of(&indices->l, sp, &ip);
            bi = wgt_layout_index(&ip.lead, pl);
        }
        for (int64_t oh = 0; oh < po.h; oh++) {
            int64_t h0, h1;
            window(&G, 0, oh, px.h, po.h, &h0, &h1);
            for (int64_t ow = 0; ow < po.w; ow++) {
                int64_t w0, w1;
                window(&G, 1, ow, px.w, po.w, &w0, &w1);
                int64_t at = bo + oh * po.sh + ow * po.sw;
                if (is_max) {
                    int64_t dh = g->kind == WGT_CPU_POOL_MAX ? G.d[0] : 1, dw = g->kind == WGT_CPU_POOL_MAX ? G.d[1] : 1;
                    /* the first in-range tap of each dim: PyTorch starts its index there */
                    int64_t a0 = h0, c0 = w0;
                    while (a0 < 0) a0 += dh;
                    while (c0 < 0) c0 += dw;
                    int64_t best = a0 * px.w + c0, seen = 0;
                    double mf = -INFINITY;
                    int64_t mi = 0;
                    for (int64_t ih = a0; ih < h1 && ih < px.h; ih += dh)
                        for (int64_t iw = c0; iw < w1 && iw < px.w; iw += dw) {
                            int64_t src = bx + ih * px.sh + iw * px.sw;
                            if (isf) {
                                double v = wgt_cpu_load_f(x, src);
                                if (v > mf || isnan(v)) mf = v, best = ih * px.w + iw;
                            } else {
                                int64_t v = wgt_cpu_load_i(x, src);
                                if (!seen || v > mi) mi = v, best = ih * px.w + iw;
                            }
                            seen = 1;
                        }
                    if (isf) wgt_cpu_store_f(out, at, mf);
                    else wgt_cpu_store_i(out, at, mi);
                    if (indices) wgt_cpu_store_i(indices, bi + oh * ip.sh + ow * ip.sw, best);
                    continue;
                }
                /* average: PyTorch's divisor is the window clipped to the padded input */
                int64_t ph1 = h1 < px.h + G.p[0] ? h1 : px.h + G.p[0], pw1 = w1 < px.w + G.p[1] ? w1 : px.w + G.p[1];
                int64_t pool_size = (ph1 - h0) * (pw1 - w0);
                int64_t a0 = h0 > 0 ? h0 : 0, a1 = h1 < px.h ? h1 : px.h;
                int64_t c0 = w0 > 0 ? w0 : 0, c1 = w1 < px.w ? w1 : px.w;
                if (a0 >= a1 || c0 >= c1) {
                    wgt_cpu_store_f(out, at, 0);
                    continue;
                }
                double sum = 0;
                for (int64_t ih = a0; ih < a1; ih++)
                    for (int64_t iw = c0; iw < c1; iw++) sum += wgt_cpu_load_f(x, bx + ih * px.sh + iw * px.sw);
                int64_t div = (a1 - a0) * (c1 - c0);
                if (g->kind == WGT_CPU_POOL_AVG) div = G.divisor > 0 ? G.divisor : G.count_include_pad ? pool_size : div;
                wgt_cpu_store_f(out, at, sum / (double)div);
            }
        }
    }
    return WGT_OK;
}
