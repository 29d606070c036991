/* Resampling: F.interpolate (nearest, nearest-exact, linear, cubic over 1 or 2 dims) and 2-D
 * F.grid_sample. Source coordinates are computed in f32 exactly as PyTorch's CPU kernels compute
 * them (UpSample.h, GridSampler.h), so nearest picks the same pixels; the weighted sums run in
 * double. */
#include "cpu/pool.h"

#include <math.h>

#include "cpu/cpu_internal.h"

float wgt_cpu_interp_scale(int64_t in, int64_t out, double scale, int align_corners)
{
    if (align_corners) return out > 1 ? (float)(in - 1) / (float)(out - 1) : 0.0f;
    return scale > 0 ? (float)(1.0 / scale) : (float)in / (float)out;
}

/* Up to 4 taps of one output position along one dim: source indices and weights. */
typedef struct taps {
    int n;
    int64_t i[4];
    double w[4];
} taps;

/* Keys' cubic convolution weights, in f32 as PyTorch computes them (a tiny weight that rounds to 0
 * must stay 0: it decides whether an infinite tap gives inf or NaN). */
static float cubic1(float x, float A) { return ((A + 2) * x - (A + 3)) * x * x + 1; }
static float cubic2(float x, float A) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; }

static void dim_taps(wgt_interp_mode mode, int64_t o, int64_t in, int64_t out, double scale, int align, taps *t)
{
    if (mode == WGT_INTERP_NEAREST || mode == WGT_INTERP_NEAREST_EXACT) {
        float s = wgt_cpu_interp_scale(in, out, scale, 0);
        int64_t i;
        if (mode == WGT_INTERP_NEAREST_EXACT) i = (int64_t)floorf(((float)o + 0.5f) * s);
        else if (out == in) i = o; /* PyTorch's shortcuts, kept for compatibility (nearest_idx) */
        else if (out == 2 * in) i = o >> 1;
        else i = (int64_t)floorf((float)o * s);
        t->n = 1, t->i[0] = i < in - 1 ? i : in - 1, t->w[0] = 1;
        return;
    }
    float s = wgt_cpu_interp_scale(in, out, scale, align);
    float src = align ? s * (float)o : s * ((float)o + 0.5f) - 0.5f;
    if (mode == WGT_INTERP_LINEAR && src < 0) src = 0;
    int64_t i0 = (int64_t)floorf(src);
    if (i0 > in - 1) i0 = in - 1;
    float lam = src - (float)i0;
    lam = lam < 0 ? 0 : lam > 1 ? 1 : lam;
    if (mode == WGT_INTERP_LINEAR) {
        t->n = 2;
        t->i[0] = i0, t->i[1] = i0 + (i0 < in - 1);
        t->w[0] = 1.0f - lam, t->w[1] = lam;
        return;
    }
    const float A = -0.75f;
    t->n = 4;
    t->w[0] = cubic2(lam + 1.0f, A), t->w[1] = cubic1(lam, A);
    t->w[2] = cubic1(1.0f - lam, A), t->w[3] = cubic2(2.0f - lam, A);
    for (int j = 0; j < 4; j++) {
        int64_t i = i0 - 1 + j;
        t->i[j] = i < 0 ? 0 : i > in - 1 ? in - 1 : i;
    }
}

void wgt_cpu_interp_matrix(wgt_interp_mode mode, int64_t in, int64_t out, double scale, int align_corners, float *A)
{
    for (int64_t o = 0; o < out; o++) {
        taps t;
        dim_taps(mode, o, in, out, scale, align_corners, &t);
        for (int j = 0; j < in; j++) A[o * in + j] = 0;
        for (int j = 0; j < t.n; j++) A[o * in + t.i[j]] += (float)t.w[j];
    }
}

wgt_status wgt_cpu_interpolate(const wgt_cpu_tensor *x, int spatial, wgt_interp_mode mode, const double *scales,
                               int align_corners, const wgt_cpu_tensor *out)
{
    CPU_CHECK(x, "interpolate input");
    CPU_CHECK(out, "interpolate output");
    int nd = x->l.ndim;
    if (spatial < 1 || spatial > 2 || nd < spatial + 1 || out->l.ndim != nd)
        return wgt_error(WGT_ERR_SHAPE, "cpu: interpolate: %d spatial dims of a %d-D input", spatial, nd);
    if ((unsigned)mode >= WGT_INTERP_COUNT) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: interpolate: mode");
    int nearest = mode == WGT_INTERP_NEAREST || mode == WGT_INTERP_NEAREST_EXACT;
    if (!nearest && (!wgt_cpu_is_float(x->l.dtype) || !wgt_cpu_is_float(out->l.dtype)))
        return wgt_error(WGT_ERR_DTYPE, "cpu: interpolate: %s needs float tensors", wgt_interp_mode_name(mode));
    wgt_layout lx = x->l, lo = out->l;
    lx.ndim = lo.ndim = nd - spatial;
    int64_t H = spatial == 2 ? x->l.shape[nd - 2] : 1, W = x->l.shape[nd - 1];
    int64_t OH = spatial == 2 ? out->l.shape[nd - 2] : 1, OW = out->l.shape[nd - 1];
    int64_t sxh = spatial == 2 ? x->l.strides[nd - 2] : 0, sxw = x->l.strides[nd - 1];
    int64_t soh = spatial == 2 ? out->l.strides[nd - 2] : 0, sow = out->l.strides[nd - 1];
    double sh = spatial == 2 && scales ? scales[0] : 0, sw = scales ? scales[spatial - 1] : 0;
    int64_t planes = wgt_layout_numel(&lx);
    if (OH * OW == 0 || planes == 0) return WGT_OK;
    if (H * W == 0) return wgt_error(WGT_ERR_SHAPE, "cpu: interpolate: an empty input into a non-empty output");
    for (int64_t oh = 0; oh < OH; oh++) {
        taps th;
        if (spatial == 2) dim_taps(mode, oh, H, OH, sh, align_corners, &th);
        else th = (taps){1, {0}, {1}};
        for (int64_t ow = 0; ow < OW; ow++) {
            taps tw;
            dim_taps(mode, ow, W, OW, sw, align_corners, &tw);
            for (int64_t pl = 0; pl < planes; pl++) {
                int64_t bx = wgt_layout_index(&lx, pl), at = wgt_layout_index(&lo, pl) + oh * soh + ow * sow;
                if (nearest) {
                    cpu_copy_elem(x, bx + th.i[0] * sxh + tw.i[0] * sxw, out, at);
                    continue;
                }
                double acc = 0;
                for (int a = 0; a < th.n; a++) {
                    double row = 0;
                    for (int b = 0; b < tw.n; b++) row += tw.w[b] * wgt_cpu_load_f(x, bx + th.i[a] * sxh + tw.i[b] * sxw);
                    acc += th.w[a] * row;
                }
                wgt_cpu_store_f(out, at, acc);
            }
        }
    }
    return WGT_OK;
}

/* ---- grid_sample ---------------------------------------------------------------------------- */

static float reflect(float v, float twice_lo, float twice_hi)
{
    if (twice_lo == twice_hi) return 0;
    float mn = twice_lo / 2, span = (twice_hi - twice_lo) / 2;
    v = fabsf(v - mn);
    float extra = fmodf(v, span);
    int flips = (int)floorf(v / span);
    return flips % 2 == 0 ? extra + mn : span - extra + mn;
}

/* PyTorch's grid_sampler_compute_source_index, in f32. */
static float source_index(float c, int64_t size, wgt_grid_padding pad, int align)
{
    float s = (float)size;
    c = align ? ((c + 1) / 2) * (s - 1) : ((c + 1) * s - 1) / 2;
    if (pad == WGT_GRID_PAD_REFLECTION) c = align ? reflect(c, 0, 2 * (s - 1)) : reflect(c, -1, 2 * s - 1);
    if (pad != WGT_GRID_PAD_ZEROS) { /* std::min(S - 1, std::max(c, 0)): a NaN ends at S - 1 */
        c = c < 0 ? 0 : c;
        c = c < s - 1 ? c : s - 1;
    }
    if (!isfinite(c) || c > 2147483647.0f || c < -2147483648.0f) c = -100.0f; /* safe_downgrade_to_int_range */
    return c;
}

/* PyTorch's compute_coordinates for one bicubic tap (a finite coordinate). */
static float pad_coordinate(float c, int64_t size, wgt_grid_padding pad, int align)
{
    float s = (float)size;
    if (pad == WGT_GRID_PAD_REFLECTION) c = align ? reflect(c, 0, 2 * (s - 1)) : reflect(c, -1, 2 * s - 1);
    if (pad != WGT_GRID_PAD_ZEROS) c = c < 0 ? 0 : c > s - 1 ? s - 1 : c;
    return c;
}

/* Bicubic grid sample at grid point (gx, gy) of plane bx: the unnormalised coordinate's 4 x 4
 * neighbours, each padded on its own, weighted by Keys' kernel in x then in y (PyTorch's order). */
static double bicubic_sample(const wgt_cpu_tensor *x, int64_t bx, int64_t H, int64_t W, float gx, float gy,
                             wgt_grid_padding pad, int align)
{
    float ix = align ? ((gx + 1) / 2) * (float)(W - 1) : ((gx + 1) * (float)W - 1) / 2;
    float iy = align ? ((gy + 1) / 2) * (float)(H - 1) : ((gy + 1) * (float)H - 1) / 2;
    if (!isfinite(ix)) ix = -100.0f;
    if (!isfinite(iy)) iy = -100.0f;
    float x0 = floorf(ix), y0 = floorf(iy), tx = ix - x0, ty = iy - y0;
    const float A = -0.75f;
    float wx[4] = {cubic2(tx + 1, A), cubic1(tx, A), cubic1(1 - tx, A), cubic2(2 - tx, A)};
    float wy[4] = {cubic2(ty + 1, A), cubic1(ty, A), cubic1(1 - ty, A), cubic2(2 - ty, A)};
    double acc = 0;
    for (int j = 0; j < 4; j++) {
        int64_t yy = (int64_t)pad_coordinate(y0 - 1 + j, H, pad, align);
        double row = 0;
        for (int i = 0; i < 4; i++) {
            int64_t xx = (int64_t)pad_coordinate(x0 - 1 + i, W, pad, align);
            if (xx >= 0 && xx < W && yy >= 0 && yy < H)
                row += wx[i] * wgt_cpu_load_f(x, bx + yy * x->l.strides[2] + xx * x->l.strides[3]);
        }
        acc += wy[j] * row;
    }
    return acc;
}

wgt_status wgt_cpu_grid_sample(const wgt_cpu_tensor *x, const wgt_cpu_tensor *grid, wgt_grid_mode mode,
                               wgt_grid_padding padding, int align_corners, const wgt_cpu_tensor *out)
{
    CPU_CHECK(x, "grid_sample input");
    CPU_CHECK(grid, "grid_sample grid");
    CPU_CHECK(out, "grid_sample output");
    if (x->l.ndim != 4 || grid->l.ndim != 4 || out->l.ndim != 4 || grid->l.shape[3] != 2 ||
        grid->l.shape[0] != x->l.shape[0] || out->l.shape[0] != x->l.shape[0] || out->l.shape[1] != x->l.shape[1] ||
        out->l.shape[2] != grid->l.shape[1] || out->l.shape[3] != grid->l.shape[2])
        return wgt_error(WGT_ERR_SHAPE, "cpu: grid_sample: x [N, C, H, W], grid [N, Ho, Wo, 2], out [N, C, Ho, Wo]");
    if (!wgt_cpu_is_float(x->l.dtype) || !wgt_cpu_is_float(grid->l.dtype) || !wgt_cpu_is_float(out->l.dtype))
        return wgt_error(WGT_ERR_DTYPE, "cpu: grid_sample needs float tensors");
    int64_t N = x->l.shape[0], C = x->l.shape[1], H = x->l.shape[2], W = x->l.shape[3];
    int64_t OH = out->l.shape[2], OW = out->l.shape[3];
    const int64_t *xs = x->l.strides, *gs = grid->l.strides, *os = out->l.strides;
    for (int64_t n = 0; n < N; n++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                int64_t g = grid->l.offset + n * gs[0] + oh * gs[1] + ow * gs[2];
                float gx = (float)wgt_cpu_load_f(grid, g), gy = (float)wgt_cpu_load_f(grid, g + gs[3]);
                float ix = source_index(gx, W, padding, align_corners);
                float iy = source_index(gy, H, padding, align_corners);
                for (int64_t c = 0; c < C; c++) {
                    int64_t bx = x->l.offset + n * xs[0] + c * xs[1];
                    double v = 0;
                    if (mode == WGT_GRID_BICUBIC) {
                        v = bicubic_sample(x, bx, H, W, gx, gy, padding, align_corners);
                    } else if (mode == WGT_GRID_NEAREST) {
                        int64_t jx = (int64_t)nearbyintf(ix), jy = (int64_t)nearbyintf(iy);
                        if (jx >= 0 && jx < W && jy >= 0 && jy < H) v = wgt_cpu_load_f(x, bx + jy * xs[2] + jx * xs[3]);
                    } else {
                        float x0 = floorf(ix), y0 = floorf(iy);
                        float fx[2] = {x0 + 1 - ix, ix - x0}, fy[2] = {y0 + 1 - iy, iy - y0};
                        for (int a = 0; a < 2; a++)
                            for (int b = 0; b < 2; b++) {
                                int64_t jy = (int64_t)y0 + a, jx = (int64_t)x0 + b;
                                if (jx >= 0 && jx < W && jy >= 0 && jy < H)
                                    v += (double)(fy[a] * fx[b]) * wgt_cpu_load_f(x, bx + jy * xs[2] + jx * xs[3]);
                            }
                    }
                    wgt_cpu_store_f(out, out->l.offset + n * os[0] + c * os[1] + oh * os[2] + ow * os[3], v);
                }
            }
    return WGT_OK;
}
