/* Pooling and resampling: first against values worked out by hand from PyTorch's definitions (on
 * both the GPU and the CPU reference, so the reference itself is checked), then the GPU kernels
 * against the reference (src/cpu/pool.c, resample.c) over many geometries, in f32, f16, bf16 (and
 * integers for the max pools and nearest, i64 with values whose high words decide), on contiguous,
 * transposed and expanded inputs, with NaN and -inf, empty batches; and the errors bad arguments
 * give. */
#include "gpu_pair.h"

/* ---- hand-computed values ---------------------------------------------------------------------- */

/* y on side s against want (n values); indices against want_idx when given. */
static void expect(const char *what, int s, wgt_status st, wgt_tensor *y, const double *want, int n,
                   wgt_tensor *idx, const int *want_idx)
{
    char w2[160];
    snprintf(w2, sizeof w2, "%s (%s)", what, s ? "reference" : "gpu");
    CHECK(st == WGT_OK, "%s: %s", w2, wgt_errmsg());
    if (st) return;
    CHECK(wgt_tensor_numel(y) == n, "%s: %lld elements, want %d", w2, (long long)wgt_tensor_numel(y), n);
    float got[64] = {0};
    wgt_tensor *f;
    MUST(wgt_tensor_cast(y, WGT_F32, &f));
    if (wgt_tensor_numel(y) == n) MUST(wgt_tensor_to_host(f, got, n * sizeof(float)));
    wgt_tensor_free(f);
    for (int i = 0; i < n; i++)
        CHECK(fabs(got[i] - want[i]) <= 1e-6 * (1 + fabs(want[i])), "%s: [%d] = %.9g, want %.9g", w2, i, got[i], want[i]);
    compared += n;
    if (idx && want_idx) {
        int32_t gi[64] = {0};
        MUST(wgt_tensor_to_host(idx, gi, n * sizeof(int32_t)));
        for (int i = 0; i < n; i++) CHECK(gi[i] == want_idx[i], "%s: index [%d] = %d, want %d", w2, i, gi[i], want_idx[i]);
    }
}

static pair from_values(const double *v, int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    float f[64];
    for (int64_t i = 0; i < n; i++) f[i] = (float)v[i];
    pair p;
    for (int s = 0; s < 2; s++) MUST(wgt_tensor_from_host(side[s], WGT_F32, ndim, shape, f, &p.t[s]));
    return p;
}

static void known_values(void)
{
    double a16[16], x5[5] = {1, 3, 2, 5, 4}, r5[5] = {1, 2, 3, 4, 5}, r4[4] = {1, 2, 3, 4}, x3[3] = {1, 2, 3};
    for (int i = 0; i < 16; i++) a16[i] = i;
    pair a = from_values(a16, 4, (int64_t[]){1, 1, 4, 4}), b = from_values(x5, 3, (int64_t[]){1, 1, 5});
    pair c = from_values(r5, 3, (int64_t[]){1, 1, 5}), d = from_values(r4, 3, (int64_t[]){1, 1, 4});
    pair e = from_values(x3, 3, (int64_t[]){1, 1, 3}), e2 = from_values((double[]){1, 2, 4}, 3, (int64_t[]){1, 1, 3});
    pair g = from_values((double[]){1, 2, 3, 4}, 4, (int64_t[]){1, 1, 2, 2});
    for (int s = 0; s < 2; s++) {
        wgt_tensor *y = NULL, *ix = NULL;
        wgt_status st;
        wgt_pool_params p = {{2, 2}, {2, 2}};
        st = wgt_max_pool(a.t[s], 2, &p, &y, &ix);
        expect("max_pool2d 4x4 k2 s2", s, st, y, (double[]){5, 7, 13, 15}, 4, ix, (int[]){5, 7, 13, 15});
        wgt_tensor_free(y), wgt_tensor_free(ix);
        /* padding 1, stride 1: the padded ends never win; indices of the first maximum */
        p = (wgt_pool_params){{2}, {1}, {1}};
        st = wgt_max_pool(b.t[s], 1, &p, &y, &ix);
        expect("max_pool1d k2 s1 p1", s, st, y, (double[]){1, 3, 3, 5, 5, 4}, 6, ix, (int[]){0, 1, 1, 3, 3, 4});
        wgt_tensor_free(y), wgt_tensor_free(ix);
        p = (wgt_pool_params){{2}, {2}, {0}, {1}, 1};
        st = wgt_max_pool(c.t[s], 1, &p, &y, NULL);
        expect("max_pool1d k2 s2 ceil", s, st, y, (double[]){2, 4, 5}, 3, NULL, NULL);
        wgt_tensor_free(y);
        /* dilation 2, k 2 over [1 3 2 5 4]: windows {0,2} {1,3} {2,4} */
        p = (wgt_pool_params){{2}, {1}, {0}, {2}};
        st = wgt_max_pool(b.t[s], 1, &p, &y, &ix);
        expect("max_pool1d k2 d2", s, st, y, (double[]){2, 5, 4}, 3, ix, (int[]){2, 3, 4});
        wgt_tensor_free(y), wgt_tensor_free(ix);
        p = (wgt_pool_params){{3}, {2}, {1}, {0}, 0, 1};
        st = wgt_avg_pool(c.t[s], 1, &p, &y);
        expect("avg_pool1d k3 s2 p1 count_include_pad", s, st, y, (double[]){1, 3, 3}, 3, NULL, NULL);
        wgt_tensor_free(y);
        p.count_include_pad = 0;
        st = wgt_avg_pool(c.t[s], 1, &p, &y);
        expect("avg_pool1d k3 s2 p1", s, st, y, (double[]){1.5, 3, 4.5}, 3, NULL, NULL);
        wgt_tensor_free(y);
        p.divisor_override = 2;
        st = wgt_avg_pool(c.t[s], 1, &p, &y);
        expect("avg_pool1d divisor_override 2", s, st, y, (double[]){1.5, 4.5, 4.5}, 3, NULL, NULL);
        wgt_tensor_free(y);
        /* ceil mode: the last window [3, 6) is cut at S + pad = 5, so its divisor is 2, not 3 */
        p = (wgt_pool_params){{3}, {2}, {1}, {0}, 1, 1};
        st = wgt_avg_pool(d.t[s], 1, &p, &y);
        expect("avg_pool1d ceil count_include_pad", s, st, y, (double[]){1, 3, 2}, 3, NULL, NULL);
        wgt_tensor_free(y);
        p.count_include_pad = 0;
        st = wgt_avg_pool(d.t[s], 1, &p, &y);
        expect("avg_pool1d ceil", s, st, y, (double[]){1.5, 3, 4}, 3, NULL, NULL);
        wgt_tensor_free(y);
        /* adaptive, 5 -> 3: [0, 2) [1, 4) [3, 5) */
        st = wgt_adaptive_avg_pool(c.t[s], 1, (int64_t[]){3}, &y);
        expect("adaptive_avg_pool1d 5->3", s, st, y, (double[]){1.5, 3, 4.5}, 3, NULL, NULL);
        wgt_tensor_free(y);
        st = wgt_adaptive_max_pool(c.t[s], 1, (int64_t[]){3}, &y, &ix);
        expect("adaptive_max_pool1d 5->3", s, st, y, (double[]){2, 4, 5}, 3, ix, (int[]){1, 3, 4});
        wgt_tensor_free(y), wgt_tensor_free(ix);
        /* interpolate [1 2 3] to 5: scale 0.6 */
        st = wgt_interpolate(e.t[s], 1, WGT_INTERP_NEAREST, (int64_t[]){5}, NULL, 0, &y);
        expect("nearest 3->5", s, st, y, (double[]){1, 1, 2, 2, 3}, 5, NULL, NULL);
        wgt_tensor_free(y);
        st = wgt_interpolate(e.t[s], 1, WGT_INTERP_NEAREST_EXACT, (int64_t[]){5}, NULL, 0, &y);
        expect("nearest-exact 3->5", s, st, y, (double[]){1, 1, 2, 3, 3}, 5, NULL, NULL);
        wgt_tensor_free(y);
        st = wgt_interpolate(e.t[s], 1, WGT_INTERP_LINEAR, (int64_t[]){5}, NULL, 0, &y);
        expect("linear 3->5", s, st, y, (double[]){1, 1.4, 2, 2.6, 3}, 5, NULL, NULL);
        wgt_tensor_free(y);
        st = wgt_interpolate(e.t[s], 1, WGT_INTERP_LINEAR, (int64_t[]){5}, NULL, 1, &y);
        expect("linear 3->5 align_corners", s, st, y, (double[]){1, 1.5, 2, 2.5, 3}, 5, NULL, NULL);
        wgt_tensor_free(y);
        /* cubic, align_corners, [1 2 4] -> 5: half-way weights (-3/32, 19/32, 19/32, -3/32), edges repeated */
        st = wgt_interpolate(e2.t[s], 1, WGT_INTERP_CUBIC, (int64_t[]){5}, NULL, 1, &y);
        expect("cubic 3->5 align_corners", s, st, y, (double[]){1, 1.3125, 2, 3.09375, 4}, 5, NULL, NULL);
        wgt_tensor_free(y);
        /* scale 2 by factor: nearest repeats, 6 outputs */
        st = wgt_interpolate(e.t[s], 1, WGT_INTERP_NEAREST, NULL, (double[]){2}, 0, &y);
        expect("nearest x2", s, st, y, (double[]){1, 1, 2, 2, 3, 3}, 6, NULL, NULL);
        wgt_tensor_free(y);
        /* grid_sample of [[1 2] [3 4]] at (0, 0), (-1, -1), (0.5, -1); nearest rounds 0.5 to even (0) */
        float gp[6] = {0, 0, -1, -1, 0.5f, -1};
        wgt_tensor *grid;
        MUST(wgt_tensor_from_host(side[s], WGT_F32, 4, (int64_t[]){1, 1, 3, 2}, gp, &grid));
        st = wgt_grid_sample(g.t[s], grid, WGT_GRID_BILINEAR, WGT_GRID_PAD_ZEROS, 0, &y);
        expect("grid_sample bilinear zeros", s, st, y, (double[]){2.5, 0.25, 1}, 3, NULL, NULL);
        wgt_tensor_free(y);
        st = wgt_grid_sample(g.t[s], grid, WGT_GRID_BILINEAR, WGT_GRID_PAD_BORDER, 0, &y);
        expect("grid_sample bilinear border", s, st, y, (double[]){2.5, 1, 2}, 3, NULL, NULL);
        wgt_tensor_free(y);
        st = wgt_grid_sample(g.t[s], grid, WGT_GRID_BILINEAR, WGT_GRID_PAD_ZEROS, 1, &y);
        expect("grid_sample bilinear align_corners", s, st, y, (double[]){2.5, 1, 1.75}, 3, NULL, NULL);
        wgt_tensor_free(y);
        st = wgt_grid_sample(g.t[s], grid, WGT_GRID_NEAREST, WGT_GRID_PAD_ZEROS, 1, &y);
        expect("grid_sample nearest align_corners", s, st, y, (double[]){1, 1, 2}, 3, NULL, NULL);
        wgt_tensor_free(y);
        wgt_tensor_free(grid);
    }
    pair_free(a), pair_free(b), pair_free(c), pair_free(d), pair_free(e), pair_free(e2), pair_free(g);
}

/* ---- differential ------------------------------------------------------------------------------ */

static double rtol_of(wgt_dtype dt) { return dt == WGT_F16 ? 2e-3 : dt == WGT_BF16 ? 1.6e-2 : 2e-6; }

/* i64 values where the high word decides: small ones (ties: the first maximum must win), equal low
 * words under high words -2..2 (a comparison of low words alone, or unsigned, gets these wrong),
 * any 64-bit value, and the extremes. */
static pair pair_rand_i64(int ndim, const int64_t *shape)
{
    static const int64_t ends[] = {INT64_MIN, INT64_MAX, INT64_MIN + 1, -((int64_t)1 << 32), (int64_t)1 << 32};
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    int64_t *v = calloc(n ? n : 1, 8);
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = (uint64_t)test_uniform(0, 9007199254740991.0), lo = (uint64_t)test_uniform(0, 4) * 0x3fffffffu;
        switch (r % 4) {
        case 0: v[i] = (int64_t)(r >> 2) % 7 - 3; break;
        case 1: v[i] = (int64_t)((uint64_t)((int64_t)(r >> 2) % 5 - 2) << 32 | lo); break;
        case 2: v[i] = (int64_t)(r << 11 ^ (uint64_t)test_uniform(0, 2048)); break;
        default: v[i] = ends[(r >> 2) % 5];
        }
    }
    pair p;
    for (int s = 0; s < 2; s++) MUST(wgt_tensor_from_host(side[s], WGT_I64, ndim, shape, v, &p.t[s]));
    free(v);
    return p;
}

/* Inputs for dtype dt: contiguous [2, 3, 11, 13], a transposed view [2, 3, 13, 11], an expanded
 * batch, a narrowed view (odd offset, row stride 13 for 12 columns). */
static int inputs(wgt_dtype dt, pair *xs, const char **names)
{
    int64_t shape[4] = {2, 3, 11, 13};
    int f = op_is_float(dt), wide = dt == WGT_I64;
    xs[0] = wide ? pair_rand_i64(4, shape) : pair_rand(dt, 4, shape, f ? -4 : lo_of(dt), f ? 4 : hi_of(dt), 1);
    names[0] = "contiguous";
    xs[1] = pair_transpose(xs[0], 2, 3);
    names[1] = "transposed";
    pair one = wide ? pair_rand_i64(4, (int64_t[]){1, 3, 9, 10}) : pair_rand(dt, 4, (int64_t[]){1, 3, 9, 10}, -4, 4, 0);
    xs[2] = pair_expand(one, 4, (int64_t[]){4, 3, 9, 10});
    pair_free(one);
    names[2] = "expanded";
    xs[3] = pair_narrow(xs[0], 3, 1, 12);
    names[3] = "narrowed";
    return 4;
}

static void pools(void)
{
    const wgt_dtype dts[] = {WGT_F32, WGT_F16, WGT_BF16, WGT_I32, WGT_U8, WGT_I8, WGT_I64};
    const wgt_pool_params geos[] = {
        {{3, 3}, {1, 1}, {1, 1}},             /* same-size */
        {{2, 3}, {2, 1}, {1, 0}, {1, 2}},     /* dilation 2 along W */
        {{3, 2}, {2, 3}, {1, 1}, {2, 1}, 1},  /* ceil mode, dilation along H */
        {{4, 4}, {3, 3}, {2, 2}, {0, 0}, 1},  /* ceil mode with padding */
        {{1, 5}, {0, 0}},                     /* stride = kernel */
    };
    const int ng = sizeof geos / sizeof geos[0];
    for (int di = 0; di < 7; di++) {
        wgt_dtype dt = dts[di];
        int isf = op_is_float(dt);
        pair xs[4];
        const char *names[4];
        int n = inputs(dt, xs, names);
        char what[200];
        for (int i = 0; i < n; i++) {
            wgt_tensor *const *x = xs[i].t;
            for (int gi = 0; gi < ng; gi++) {
                wgt_pool_params p = geos[gi];
                for (int sp = 1; sp <= 2; sp++) {
                    wgt_pool_params q = p;
                    if (sp == 1) q.kernel[0] = p.kernel[1], q.stride[0] = p.stride[1], q.padding[0] = p.padding[1],
                                 q.dilation[0] = p.dilation[1];
                    snprintf(what, sizeof what, "max_pool%dd geometry %d %s", sp, gi, names[i]);
                    DIFF_IX(what, wgt_max_pool(x[S], sp, &q, &y_[S], &iv[S]));
                    if (!isf) continue;
                    q.dilation[0] = q.dilation[1] = 1;
                    for (int cip = 0; cip < 3; cip++) {
                        q.count_include_pad = cip == 1;
                        q.divisor_override = cip == 2 ? 7 : 0;
                        snprintf(what, sizeof what, "avg_pool%dd geometry %d cip %d %s", sp, gi, cip, names[i]);
                        DIFF(what, 1e-6, rtol_of(dt), wgt_avg_pool(x[S], sp, &q, &y_[S]));
                    }
                }
            }
            const int64_t osz[][2] = {{1, 1}, {4, 5}, {11, 13}, {17, 3}};
            for (int oi = 0; oi < 4; oi++)
                for (int sp = 1; sp <= 2; sp++) {
                    const int64_t *os = sp == 2 ? osz[oi] : osz[oi] + 1;
                    snprintf(what, sizeof what, "adaptive_max_pool%dd %lld %s", sp, (long long)os[0], names[i]);
                    DIFF_IX(what, wgt_adaptive_max_pool(x[S], sp, os, &y_[S], &iv[S]));
                    if (!isf) continue;
                    snprintf(what, sizeof what, "adaptive_avg_pool%dd %lld %s", sp, (long long)os[0], names[i]);
                    DIFF(what, 1e-6, rtol_of(dt), wgt_adaptive_avg_pool(x[S], sp, os, &y_[S]));
                }
        }
        for (int i = 0; i < n; i++) pair_free(xs[i]);
    }
    /* an empty batch, and a global pool of 3000 elements per plane (long windows) */
    pair ex = pair_rand(WGT_F32, 4, (int64_t[]){0, 3, 5, 5}, -1, 1, 0);
    wgt_pool_params p = {{2, 2}};
    DIFF("max_pool2d empty batch", 0, 0, wgt_max_pool(ex.t[S], 2, &p, &y_[S], NULL));
    DIFF("avg_pool2d empty batch", 0, 0, wgt_avg_pool(ex.t[S], 2, &p, &y_[S]));
    pair_free(ex);
    pair big = pair_rand(WGT_F32, 3, (int64_t[]){3, 5, 3000}, -1, 1, 1);
    DIFF("adaptive_avg_pool1d global", 1e-6, 2e-6, wgt_adaptive_avg_pool(big.t[S], 1, (int64_t[]){1}, &y_[S]));
    DIFF("adaptive_max_pool1d global", 0, 0, wgt_adaptive_max_pool(big.t[S], 1, (int64_t[]){1}, &y_[S], NULL));
    pair_free(big);
}

static void resamples(void)
{
    const wgt_dtype dts[] = {WGT_F32, WGT_F16, WGT_BF16, WGT_I32, WGT_U8, WGT_I64};
    const int64_t sizes[][2] = {{22, 26}, {5, 7}, {11, 13}, {33, 4}, {1, 1}};
    const double scales[][2] = {{2, 2}, {0.5, 0.75}, {1.7, 3.1}};
    for (int di = 0; di < 6; di++) {
        wgt_dtype dt = dts[di];
        int isf = op_is_float(dt);
        pair xs[4];
        const char *names[4];
        int n = inputs(dt, xs, names);
        char what[200];
        for (int i = 0; i < n; i++) {
            wgt_tensor *const *x = xs[i].t;
            for (int m = 0; m < WGT_INTERP_COUNT; m++) {
                if (!isf && m >= WGT_INTERP_LINEAR) break;
                /* cubic overshoots: its f32 sums of 16 terms against double */
                double atol = m == WGT_INTERP_CUBIC ? 1e-5 : 1e-6;
                for (int align = 0; align < (m >= WGT_INTERP_LINEAR ? 2 : 1); align++)
                    for (int sp = 1; sp <= 2; sp++)
                        for (int si = 0; si < 8; si++) { /* 5 output sizes, then 3 scales */
                            const int64_t *sz = si < 5 ? sizes[si] + (2 - sp) : NULL;
                            const double *sc = si < 5 ? NULL : scales[si - 5] + (2 - sp);
                            int k = snprintf(what, sizeof what, "interpolate %s %dd ", wgt_interp_mode_name(m), sp);
                            if (sz) k += snprintf(what + k, sizeof what - k, "size %lld", (long long)sz[0]);
                            else k += snprintf(what + k, sizeof what - k, "scale %g", sc[0]);
                            snprintf(what + k, sizeof what - k, " align %d %s", align, names[i]);
                            DIFF(what, atol, rtol_of(dt), wgt_interpolate(x[S], sp, (wgt_interp_mode)m, sz, sc, align, &y_[S]));
                        }
            }
            if (!isf) continue;
            /* grid_sample: points spread past [-1, 1] (padding modes matter), on a transposed grid too */
            int64_t nb = wgt_tensor_shape(x[0])[0];
            pair grid = pair_rand(WGT_F32, 4, (int64_t[]){nb, 7, 9, 2}, -1.3, 1.3, 0);
            pair gt = pair_transpose(grid, 1, 2);
            for (int m = 0; m < WGT_GRID_MODE_COUNT; m++)
                for (int pad = 0; pad < WGT_GRID_PAD_COUNT; pad++)
                    for (int align = 0; align < 2; align++)
                        for (int gi = 0; gi < 2; gi++) {
                            snprintf(what, sizeof what, "grid_sample mode %d padding %d align %d %s grid %s", m, pad,
                                     align, names[i], gi ? "transposed" : "contiguous");
                            DIFF(what, 1e-5, rtol_of(dt),
                                 wgt_grid_sample(x[S], (gi ? gt : grid).t[S], (wgt_grid_mode)m, (wgt_grid_padding)pad,
                                                 align, &y_[S]));
                        }
            pair_free(grid), pair_free(gt);
        }
        for (int i = 0; i < n; i++) pair_free(xs[i]);
    }
}

/* ---- over several storage bindings ----------------------------------------------------------- */

/* The GPU side's binding limit lowered to 8 KiB for a moment: the batch dim splits over dispatches
 * (f16 with odd outputs per batch row: the split keeps output words whole). */
static void split_bindings(void)
{
    wgt_context *ctx = side[0];
    uint64_t saved = ctx->info.limits.max_storage_buffer_binding_size;
    ctx->info.limits.max_storage_buffer_binding_size = 8192;
    for (int di = 0; di < 2; di++) {
        wgt_dtype dt = di ? WGT_F16 : WGT_F32;
        pair x = pair_rand(dt, 4, (int64_t[]){41, 3, 9, 7}, -4, 4, 1);
        pair xt = pair_transpose(x, 2, 3); /* [41, 3, 7, 9]: strided planes */
        pair grid = pair_rand(dt, 4, (int64_t[]){41, 5, 3, 2}, -1.2, 1.2, 0);
        wgt_pool_params p = {{3, 3}, {2, 2}, {1, 1}};
        for (int v = 0; v < 2; v++) {
            wgt_tensor *const *in = (v ? xt : x).t;
            char what[96];
            wgt_tensor *idx[2] = {NULL, NULL};
            snprintf(what, sizeof what, "split max_pool2d %s %s", wgt_dtype_name(dt), v ? "strided" : "contiguous");
            DIFF(what, 0, 0, wgt_max_pool(in[S], 2, &p, &y_[S], &idx[S]));
            if (idx[0] && idx[1]) pair_compare(what, idx[0], idx[1], 0, 0);
            wgt_tensor_free(idx[0]), wgt_tensor_free(idx[1]);
            snprintf(what, sizeof what, "split avg_pool2d %s %s", wgt_dtype_name(dt), v ? "strided" : "contiguous");
            DIFF(what, 1e-6, rtol_of(dt), wgt_avg_pool(in[S], 2, &p, &y_[S]));
            snprintf(what, sizeof what, "split nearest 3x5 %s %s", wgt_dtype_name(dt), v ? "strided" : "contiguous");
            DIFF(what, 0, 0, wgt_interpolate(in[S], 2, WGT_INTERP_NEAREST, (int64_t[]){3, 5}, NULL, 0, &y_[S]));
            snprintf(what, sizeof what, "split bilinear 5x3 %s %s", wgt_dtype_name(dt), v ? "strided" : "contiguous");
            DIFF(what, 1e-6, rtol_of(dt), wgt_interpolate(in[S], 2, WGT_INTERP_LINEAR, (int64_t[]){5, 3}, NULL, 1, &y_[S]));
        }
        DIFF("split grid_sample", 1e-5, rtol_of(dt),
             wgt_grid_sample(x.t[S], grid.t[S], WGT_GRID_BILINEAR, WGT_GRID_PAD_BORDER, 0, &y_[S]));
        /* only dim 0 splits: a batch transposed so that one of its rows passes the limit is refused */
        pair xb = pair_transpose(x, 0, 1);
        wgt_tensor *y = NULL;
        CHECK(wgt_max_pool(xb.t[0], 2, &p, &y, NULL) == WGT_ERR_LIMIT && !y && strstr(wgt_errmsg(), "binding"),
              "an unsplittable batch: %s", wgt_errmsg());
        pair_free(x), pair_free(xt), pair_free(xb), pair_free(grid);
    }
    ctx->info.limits.max_storage_buffer_binding_size = saved;
}

/* ---- errors ------------------------------------------------------------------------------------ */

static void errors(void)
{
    pair x = pair_rand(WGT_F32, 4, (int64_t[]){1, 2, 5, 5}, -1, 1, 0);
    pair xi = pair_rand(WGT_I32, 4, (int64_t[]){1, 2, 5, 5}, -9, 9, 0);
    wgt_tensor *y = NULL;
    wgt_pool_params p = {{2, 2}, {1, 1}, {2, 2}};
    CHECK(wgt_max_pool(x.t[0], 2, &p, &y, NULL) == WGT_ERR_INVALID_ARGUMENT && !y && strstr(wgt_errmsg(), "padding"),
          "padding past half the kernel: %s", wgt_errmsg());
    p = (wgt_pool_params){{7, 7}};
    CHECK(wgt_max_pool(x.t[0], 2, &p, &y, NULL) == WGT_ERR_SHAPE && !y, "window past the input: %s", wgt_errmsg());
    p = (wgt_pool_params){{2, 2}};
    CHECK(wgt_avg_pool(xi.t[0], 2, &p, &y) == WGT_ERR_DTYPE && !y && strstr(wgt_errmsg(), "avg_pool"),
          "avg_pool of i32: %s", wgt_errmsg());
    CHECK(wgt_max_pool(x.t[0], 3, &p, &y, NULL) == WGT_ERR_INVALID_ARGUMENT && !y, "3 spatial dims: %s", wgt_errmsg());
    p.dilation[0] = 2;
    CHECK(wgt_avg_pool(x.t[0], 2, &p, &y) == WGT_ERR_INVALID_ARGUMENT && !y, "avg dilation: %s", wgt_errmsg());
    CHECK(wgt_max_pool(x.t[0], 2, NULL, &y, NULL) == WGT_ERR_INVALID_ARGUMENT && !y, "NULL params: %s", wgt_errmsg());
    CHECK(wgt_adaptive_avg_pool(x.t[0], 2, (int64_t[]){0, 2}, &y) == WGT_ERR_INVALID_ARGUMENT && !y,
          "output size 0: %s", wgt_errmsg());
    CHECK(wgt_interpolate(x.t[0], 2, WGT_INTERP_NEAREST, (int64_t[]){3, 3}, NULL, 1, &y) == WGT_ERR_INVALID_ARGUMENT &&
              !y && strstr(wgt_errmsg(), "align_corners"), "nearest with align_corners: %s", wgt_errmsg());
    CHECK(wgt_interpolate(xi.t[0], 2, WGT_INTERP_LINEAR, (int64_t[]){3, 3}, NULL, 0, &y) == WGT_ERR_DTYPE && !y,
          "linear of i32: %s", wgt_errmsg());
    CHECK(wgt_interpolate(x.t[0], 2, WGT_INTERP_LINEAR, NULL, (double[]){0.1, 1}, 0, &y) == WGT_ERR_SHAPE && !y,
          "scale to an empty output: %s", wgt_errmsg());
    CHECK(wgt_interpolate(x.t[0], 2, WGT_INTERP_LINEAR, NULL, NULL, 0, &y) == WGT_ERR_INVALID_ARGUMENT && !y,
          "neither size nor scales: %s", wgt_errmsg());
    pair bad = pair_rand(WGT_F32, 4, (int64_t[]){1, 3, 3, 3}, -1, 1, 0);
    CHECK(wgt_grid_sample(x.t[0], bad.t[0], WGT_GRID_BILINEAR, WGT_GRID_PAD_ZEROS, 0, &y) == WGT_ERR_SHAPE && !y &&
              strstr(wgt_errmsg(), "grid"), "grid without a last dim of 2: %s", wgt_errmsg());
    CHECK(wgt_grid_sample(x.t[0], x.t[0], (wgt_grid_mode)7, WGT_GRID_PAD_ZEROS, 0, &y) == WGT_ERR_INVALID_ARGUMENT && !y,
          "unknown grid mode: %s", wgt_errmsg());
    pair_free(bad), pair_free(x), pair_free(xi);
}

int main(void)
{
    pair_open();
    known_values();
    setenv("WGT_STRICT", "1", 1); /* every dtype compared runs on the GPU: a fallback is a failure */
    pools();
    resamples();
    unsetenv("WGT_STRICT");
    split_bindings();
    errors();
    CHECK(compared > 100000, "only %d elements compared", compared);
    wgt_context_free(side[0]);
    wgt_context_free(side[1]);
    return test_finish("test_gpu_pool_resample");
}
