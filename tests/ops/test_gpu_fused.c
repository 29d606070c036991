/* The fused decoder ops against double-precision references computed here: wgt_swiglu and
 * wgt_add_rms_norm on the GPU kernels (f32, contiguous) and on their composed fallbacks (a
 * transposed view, f16 input), for row lengths around the workgroup size and several rows;
 * wgt_qkv_rope_cache; wgt_fused_linear (norm / SwiGLU before a one-token linear layer, residual
 * after) on its kernel (SwiGLU's input also staged: WGT_FUSED_LINEAR_STAGE=1) and composed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "ops/fused.h"
#include "support/check.h"

static float frand(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static double worst_rel(const float *got, const double *want, int64_t n)
{
    double w = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs(got[i] - want[i]) / (1e-6 + fabs(want[i]));
        if (!(e <= w)) w = e;
    }
    return w;
}

static void swiglu_case(wgt_context *ctx, int64_t rows, int64_t D, int variant)
{
    unsigned seed = (unsigned)(rows * 131 + D);
    int64_t n = rows * 2 * D, shape[2] = {rows, 2 * D};
    float *x = malloc(n * sizeof *x), *got = malloc(rows * D * sizeof *got);
    double *want = malloc(rows * D * sizeof *want);
    for (int64_t i = 0; i < n; i++) x[i] = 4 * frand(&seed);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < D; j++) {
            double g = x[r * 2 * D + j], u = x[r * 2 * D + D + j];
            want[r * D + j] = g / (1 + exp(-g)) * u;
        }
    wgt_tensor *t, *in, *y;
    if (variant == 1) { /* a transposed view holding the same elements: the composed path */
        int64_t tshape[2] = {2 * D, rows};
        float *xt = malloc(n * sizeof *xt);
        for (int64_t r = 0; r < rows; r++)
            for (int64_t j = 0; j < 2 * D; j++) xt[j * rows + r] = x[r * 2 * D + j];
        MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, tshape, xt, &t));
        MUST(wgt_tensor_transpose(t, 0, 1, &in));
        free(xt);
    } else {
        MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, shape, x, &t));
        in = wgt_tensor_ref(t);
    }
    MUST(wgt_swiglu(in, &y));
    CHECK(wgt_tensor_dim(y, 0) == rows && wgt_tensor_dim(y, 1) == D, "swiglu shape");
    MUST(wgt_tensor_to_host(y, got, rows * D * sizeof *got));
    double e = worst_rel(got, want, rows * D);
    CHECK(e < 2e-5, "swiglu [%lld, %lld] variant %d: relative error %g", (long long)rows, (long long)D, variant, e);
    wgt_tensor_free(t), wgt_tensor_free(in), wgt_tensor_free(y);
    free(x), free(got), free(want);
}

static void add_norm_case(wgt_context *ctx, int64_t rows, int64_t D, int with_w, wgt_dtype dt)
{
    unsigned seed = (unsigned)(rows * 7 + D * 3 + with_w);
    int64_t n = rows * D, shape[2] = {rows, D};
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *w = malloc(D * sizeof *w);
    float *gs = malloc(n * sizeof *gs), *go = malloc(n * sizeof *go);
    double *ws = malloc(n * sizeof *ws), *wo = malloc(n * sizeof *wo);
    for (int64_t i = 0; i < n; i++) a[i] = 3 * frand(&seed), b[i] = frand(&seed);
    for (int64_t j = 0; j < D; j++) w[j] = with_w ? 0.5f + frand(&seed) : 1.0f;
    wgt_tensor *ta, *tb, *tw = NULL, *ta2 = NULL, *tb2 = NULL, *s, *o;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, shape, a, &ta));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, shape, b, &tb));
    if (dt != WGT_F32) { /* the composed path; the reference sees the rounded inputs */
        MUST(wgt_tensor_cast(ta, dt, &ta2));
        MUST(wgt_tensor_cast(tb, dt, &tb2));
        wgt_tensor *back;
        MUST(wgt_tensor_cast(ta2, WGT_F32, &back));
        MUST(wgt_tensor_to_host(back, a, n * sizeof *a));
        wgt_tensor_free(back);
        MUST(wgt_tensor_cast(tb2, WGT_F32, &back));
        MUST(wgt_tensor_to_host(back, b, n * sizeof *b));
        wgt_tensor_free(back);
    }
    for (int64_t r = 0; r < rows; r++) {
        double ss = 0;
        for (int64_t j = 0; j < D; j++) {
            double v = (double)a[r * D + j] + b[r * D + j];
            ws[r * D + j] = v;
            ss += v * v;
        }
        double scale = 1 / sqrt(ss / D + 1e-6);
        for (int64_t j = 0; j < D; j++) wo[r * D + j] = ws[r * D + j] * scale * w[j];
    }
    int64_t wshape[1] = {D};
    if (with_w) MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, wshape, w, &tw));
    MUST(wgt_add_rms_norm(ta2 ? ta2 : ta, tb2 ? tb2 : tb, tw, 1e-6, &s, &o));
    wgt_tensor *sf, *of;
    MUST(wgt_tensor_cast(s, WGT_F32, &sf));
    MUST(wgt_tensor_cast(o, WGT_F32, &of));
    MUST(wgt_tensor_to_host(sf, gs, n * sizeof *gs));
    MUST(wgt_tensor_to_host(of, go, n * sizeof *go));
    /* f32: relative to each element; f16 (the sum rounds to 11 bits before the norm): relative
     * to the largest magnitude */
    double tol = dt == WGT_F32 ? 2e-5 : 2e-3, es, eo;
    if (dt == WGT_F32) {
        es = worst_rel(gs, ws, n), eo = worst_rel(go, wo, n);
    } else {
        double ms = 0, mo = 0;
        es = eo = 0;
        for (int64_t i = 0; i < n; i++) {
            ms = fmax(ms, fabs(ws[i])), mo = fmax(mo, fabs(wo[i]));
            es = fmax(es, fabs(gs[i] - ws[i])), eo = fmax(eo, fabs(go[i] - wo[i]));
        }
        es /= ms, eo /= mo;
    }
    CHECK(es < tol && eo < tol, "add_rms_norm [%lld, %lld] w=%d %s: errors %g (sum), %g (norm)", (long long)rows,
          (long long)D, with_w, wgt_dtype_name(dt), es, eo);
    wgt_tensor *fs[] = {ta, tb, tw, ta2, tb2, s, o, sf, of};
    for (size_t i = 0; i < sizeof fs / sizeof *fs; i++) wgt_tensor_free(fs[i]);
    free(a), free(b), free(w), free(gs), free(go), free(ws), free(wo);
}

/* wgt_qkv_rope_cache's kernel (contiguous x) against its composition of wgt_rope and assignments
 * (the same values through a transposed view), both tested against the CPU reference elsewhere. */
static void qkv_case(wgt_context *ctx, int64_t L, int64_t pos0, int rot, int interleaved, wgt_rope_scaling sc)
{
    const int64_t Hq = 4, Hkv = 2, hd = 16, C = (Hq + 2 * Hkv) * hd, T = 12;
    unsigned seed = (unsigned)(L * 31 + pos0 + rot + interleaved);
    float *x = malloc(L * C * sizeof *x), *xt = malloc(L * C * sizeof *xt);
    for (int64_t i = 0; i < L * C; i++) x[i] = frand(&seed);
    for (int64_t l = 0; l < L; l++)
        for (int64_t c = 0; c < C; c++) xt[c * L + l] = x[l * C + c];
    wgt_rope_params rp = {0};
    rp.theta = 10000, rp.scaling = sc, rp.factor = 8, rp.low_freq_factor = 1, rp.high_freq_factor = 4;
    rp.original_max_position = 16;
    int64_t xs[2] = {L, C}, ts[2] = {C, L}, cs[3] = {Hkv, T, hd};
    wgt_tensor *tx, *tt, *tv, *kc[2], *vc[2], *q[2];
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, xs, x, &tx));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, ts, xt, &tt));
    MUST(wgt_tensor_transpose(tt, 0, 1, &tv));
    for (int i = 0; i < 2; i++) {
        MUST(wgt_tensor_zeros(ctx, WGT_F32, 3, cs, &kc[i]));
        MUST(wgt_tensor_zeros(ctx, WGT_F32, 3, cs, &vc[i]));
        MUST(wgt_qkv_rope_cache(i ? tv : tx, Hq, Hkv, hd, pos0, rot, interleaved, &rp, kc[i], vc[i], &q[i]));
    }
    wgt_tensor *const *pairs[3] = {q, kc, vc};
    const char *names[3] = {"q", "k cache", "v cache"};
    for (int j = 0; j < 3; j++) {
        int64_t n = wgt_tensor_numel(pairs[j][0]);
        float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
        MUST(wgt_tensor_to_host(pairs[j][0], a, n * sizeof *a));
        MUST(wgt_tensor_to_host(pairs[j][1], b, n * sizeof *b));
        double w = 0;
        for (int64_t i = 0; i < n; i++) w = fmax(w, fabs((double)a[i] - b[i]));
        CHECK(w <= 1e-6, "qkv_rope_cache L=%lld pos0=%lld rot=%d interleaved=%d: %s differs by %g", (long long)L,
              (long long)pos0, rot, interleaved, names[j], w);
        free(a), free(b);
    }
    wgt_tensor *fs[] = {tx, tt, tv, kc[0], kc[1], vc[0], vc[1], q[0], q[1]};
    for (size_t i = 0; i < sizeof fs / sizeof *fs; i++) wgt_tensor_free(fs[i]);
    free(x), free(xt);
}

/* wgt_fused_linear: out = pro(x) @ w^T + bias + res against a double reference over the weights as
 * rounded to wdt. M = 1 with K % 8 == 0 takes the kernel; M = 2 and K % 8 != 0 compose the ops.
 * Tolerance: f32 sums in another order, and the norm's scale applied after the sum: K * 2^-22 of
 * sum |terms| plus the rounding of bias and res. */
static void fused_linear_case(wgt_context *ctx, int64_t M, int64_t N, int64_t K, wgt_fused_prologue pro,
                              wgt_dtype wdt, int with_bias, int with_res)
{
    unsigned seed = (unsigned)(M * 977 + N * 31 + K * 7 + pro * 3 + with_bias + 2 * with_res);
    int64_t Kx = pro == WGT_PRO_SWIGLU ? 2 * K : K;
    int64_t xs[2] = {M, Kx}, ws[2] = {N, K}, os[2] = {M, N};
    float *x = malloc(M * Kx * sizeof *x), *w = malloc(N * K * sizeof *w), *g = malloc(K * sizeof *g);
    float *b = malloc(N * sizeof *b), *r = malloc(M * N * sizeof *r), *got = malloc(M * N * sizeof *got);
    for (int64_t i = 0; i < M * Kx; i++) x[i] = 2 * frand(&seed);
    for (int64_t i = 0; i < N * K; i++) w[i] = frand(&seed);
    for (int64_t i = 0; i < K; i++) g[i] = 0.5f + frand(&seed);
    for (int64_t i = 0; i < N; i++) b[i] = frand(&seed);
    for (int64_t i = 0; i < M * N; i++) r[i] = 4 * frand(&seed);
    wgt_tensor *tx, *tw32, *tw, *tback, *tg, *tb, *tr, *y;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, xs, x, &tx));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, ws, w, &tw32));
    MUST(wgt_tensor_cast(tw32, wdt, &tw));
    MUST(wgt_tensor_cast(tw, WGT_F32, &tback));
    MUST(wgt_tensor_to_host(tback, w, N * K * sizeof *w));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, &K, g, &tg));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, &N, b, &tb));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, os, r, &tr));
    MUST(wgt_fused_linear(tx, pro, tg, 1e-6, tw, with_bias ? tb : NULL, with_res ? tr : NULL, &y));
    CHECK(wgt_tensor_dim(y, 0) == M && wgt_tensor_dim(y, 1) == N, "fused_linear shape");
    MUST(wgt_tensor_to_host(y, got, M * N * sizeof *got));
    int bad = 0;
    double *in = malloc(K * sizeof *in);
    for (int64_t m = 0; m < M; m++) {
        double ss = 0;
        for (int64_t k = 0; k < K; k++) {
            double v = x[m * Kx + k];
            if (pro == WGT_PRO_SWIGLU) v = v / (1 + exp(-v)) * x[m * Kx + K + k];
            ss += v * v;
            in[k] = v;
        }
        double scale = pro == WGT_PRO_RMS_NORM ? 1 / sqrt(ss / K + 1e-6) : 1;
        for (int64_t n = 0; n < N; n++) {
            double s = 0, mag = 0;
            for (int64_t k = 0; k < K; k++) {
                double t = w[n * K + k] * in[k] * (pro == WGT_PRO_RMS_NORM ? g[k] * scale : 1);
                s += t, mag += fabs(t);
            }
            double extra = (with_bias ? b[n] : 0) + (with_res ? r[m * N + n] : 0);
            double want = s + extra, tol = (double)K * ldexp(1.0, -22) * mag + 1e-6 * (fabs(extra) + 1);
            if (!(fabs(got[m * N + n] - want) <= tol) && bad++ < 3)
                fprintf(stderr, "fused_linear M %lld N %lld K %lld pro %d %s: [%lld, %lld] = %.8g, want %.8g\n",
                        (long long)M, (long long)N, (long long)K, pro, wgt_dtype_name(wdt), (long long)m,
                        (long long)n, got[m * N + n], want);
        }
    }
    CHECK(bad == 0, "fused_linear M %lld N %lld K %lld pro %d %s bias %d res %d: %d wrong", (long long)M,
          (long long)N, (long long)K, pro, wgt_dtype_name(wdt), with_bias, with_res, bad);
    wgt_tensor_free(tx), wgt_tensor_free(tw32), wgt_tensor_free(tw), wgt_tensor_free(tback), wgt_tensor_free(tg);
    wgt_tensor_free(tb), wgt_tensor_free(tr), wgt_tensor_free(y);
    free(x), free(w), free(g), free(b), free(r), free(got), free(in);
}

/* wgt_fused_qkv_rope_cache (one token: norm, q/k/v product, rotation, cache writes in one kernel)
 * against the plain ops: wgt_rms_norm, wgt_linear, then wgt_qkv_rope_cache on a transposed view
 * (its composed path). Whole caches are compared, so rows other than pos0 must stay untouched.
 * Tolerance: the fused kernel scales after the dot product: 1e-5 of the largest magnitude. */
static void fused_qkv_case(wgt_context *ctx, int64_t K, int rot, int interleaved, wgt_dtype wdt, int with_bias)
{
    const int64_t Hq = 4, Hkv = 2, hd = 16, C = (Hq + 2 * Hkv) * hd, T = 12, pos0 = 5;
    unsigned seed = (unsigned)(K * 13 + rot * 3 + interleaved + with_bias * 7);
    float *x = malloc(K * sizeof *x), *g = malloc(K * sizeof *g), *w = malloc(C * K * sizeof *w), *b = malloc(C * sizeof *b);
    for (int64_t i = 0; i < K; i++) x[i] = 2 * frand(&seed), g[i] = 0.5f + frand(&seed);
    for (int64_t i = 0; i < C * K; i++) w[i] = frand(&seed);
    for (int64_t i = 0; i < C; i++) b[i] = frand(&seed);
    wgt_rope_params rp = {0};
    rp.theta = 10000, rp.scaling = WGT_ROPE_LLAMA3, rp.factor = 8, rp.low_freq_factor = 1, rp.high_freq_factor = 4;
    rp.original_max_position = 16;
    int64_t xs[2] = {1, K}, ws[2] = {C, K}, cs[3] = {Hkv, T, hd};
    wgt_tensor *tx, *tg, *tw32, *tw, *tb, *h, *qkv, *qkv_t, *qkv_tt, *kc[2], *vc[2], *q[2];
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, xs, x, &tx));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, &K, g, &tg));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, ws, w, &tw32));
    MUST(wgt_tensor_cast(tw32, wdt, &tw));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, &C, b, &tb));
    for (int i = 0; i < 2; i++) {
        MUST(wgt_tensor_zeros(ctx, WGT_F32, 3, cs, &kc[i]));
        MUST(wgt_tensor_zeros(ctx, WGT_F32, 3, cs, &vc[i]));
    }
    MUST(wgt_fused_qkv_rope_cache(tx, tg, 1e-6, tw, with_bias ? tb : NULL, Hq, Hkv, hd, pos0, rot, interleaved, &rp,
                                  kc[0], vc[0], &q[0]));
    MUST(wgt_rms_norm(tx, 1, tg, 1e-6, &h));
    MUST(wgt_linear(h, tw, with_bias ? tb : NULL, &qkv));
    MUST(wgt_tensor_transpose(qkv, 0, 1, &qkv_t));   /* [C, 1] */
    MUST(wgt_tensor_contiguous(qkv_t, &qkv_tt));
    wgt_tensor *view;
    MUST(wgt_tensor_transpose(qkv_tt, 0, 1, &view)); /* [1, C], strided: the composed path */
    MUST(wgt_qkv_rope_cache(view, Hq, Hkv, hd, pos0, rot, interleaved, &rp, kc[1], vc[1], &q[1]));
    wgt_tensor *const *pairs[3] = {q, kc, vc};
    const char *names[3] = {"q", "k cache", "v cache"};
    for (int j = 0; j < 3; j++) {
        int64_t n = wgt_tensor_numel(pairs[j][0]);
        CHECK(n == wgt_tensor_numel(pairs[j][1]), "fused_qkv %s size", names[j]);
        float *a = malloc(n * sizeof *a), *c = malloc(n * sizeof *c);
        MUST(wgt_tensor_to_host(pairs[j][0], a, n * sizeof *a));
        MUST(wgt_tensor_to_host(pairs[j][1], c, n * sizeof *c));
        double d = 0, mag = 0;
        for (int64_t i = 0; i < n; i++) d = fmax(d, fabs((double)a[i] - c[i])), mag = fmax(mag, fabs((double)c[i]));
        CHECK(d <= 1e-5 * (1 + mag), "fused_qkv K=%lld rot=%d interleaved=%d %s bias %d: %s differs by %g (largest %g)",
              (long long)K, rot, interleaved, wgt_dtype_name(wdt), with_bias, names[j], d, mag);
        free(a), free(c);
    }
    wgt_tensor *fs[] = {tx, tg, tw32, tw, tb, h, qkv, qkv_t, qkv_tt, view, kc[0], kc[1], vc[0], vc[1], q[0], q[1]};
    for (size_t i = 0; i < sizeof fs / sizeof *fs; i++) wgt_tensor_free(fs[i]);
    free(x), free(g), free(w), free(b);
}

int main(void)
{
    wgt_context *ctx;
    MUST(wgt_context_create(NULL, &ctx));
    const int64_t sizes[][2] = {{1, 5}, {1, 128}, {1, 896}, {3, 1000}, {7, 257}};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        swiglu_case(ctx, sizes[i][0], sizes[i][1], 0);
        swiglu_case(ctx, sizes[i][0], sizes[i][1], 1);
        add_norm_case(ctx, sizes[i][0], sizes[i][1], 1, WGT_F32);
        add_norm_case(ctx, sizes[i][0], sizes[i][1], 0, WGT_F32);
        add_norm_case(ctx, sizes[i][0], sizes[i][1], 1, WGT_F16);
    }
    for (int pro = 0; pro < 3; pro++) {
        fused_linear_case(ctx, 1, 37, 896, (wgt_fused_prologue)pro, WGT_F16, 1, 1);
        fused_linear_case(ctx, 1, 300, 136, (wgt_fused_prologue)pro, WGT_F32, 0, 1);
        fused_linear_case(ctx, 1, 5, 2056, (wgt_fused_prologue)pro, WGT_BF16, 1, 0);
        fused_linear_case(ctx, 2, 9, 64, (wgt_fused_prologue)pro, WGT_F32, 1, 1); /* composed */
        fused_linear_case(ctx, 1, 9, 60, (wgt_fused_prologue)pro, WGT_F16, 0, 0); /* composed */
        fused_linear_case(ctx, 1, 33000, 64, (wgt_fused_prologue)pro, WGT_F16, 1, 1); /* auto: 8 rows a group */
    }
    /* SwiGLU's input staged once a workgroup (fused_linear.wgsl's entry `staged`) and not (0),
     * whichever is the default */
    for (int stage = 0; stage < 2; stage++) {
        setenv("WGT_FUSED_LINEAR_STAGE", stage ? "1" : "0", 1);
        fused_linear_case(ctx, 1, 37, 896, WGT_PRO_SWIGLU, WGT_F16, 1, 1);
        fused_linear_case(ctx, 1, 300, 136, WGT_PRO_SWIGLU, WGT_F32, 0, 1);
        fused_linear_case(ctx, 1, 5, 2056, WGT_PRO_SWIGLU, WGT_BF16, 1, 0);
        fused_linear_case(ctx, 1, 1000, 24, WGT_PRO_SWIGLU, WGT_F16, 0, 1); /* fewer groups than a row's lanes */
    }
    unsetenv("WGT_FUSED_LINEAR_STAGE");
    /* R rows a lane group (fused_linear.wgsl's entry `rows`), lanes chosen and forced: rows past N
     * in the last group, fewer groups than lanes, odd step counts; 0 is `main` */
    const char *rows[] = {"0", "1", "2", "4", "4:32", "2:256", "4:64:100000", "8", "8:64"};
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        setenv("WGT_FUSED_LINEAR_ROWS", rows[i], 1);
        for (int pro = 0; pro < 3; pro++) {
            fused_linear_case(ctx, 1, 37, 896, (wgt_fused_prologue)pro, WGT_F16, 1, 1);
            fused_linear_case(ctx, 1, 300, 136, (wgt_fused_prologue)pro, WGT_F32, 0, 1);
            fused_linear_case(ctx, 1, 5, 2056, (wgt_fused_prologue)pro, WGT_BF16, 1, 0);
            fused_linear_case(ctx, 1, 1000, 24, (wgt_fused_prologue)pro, WGT_F16, 0, 1);
            fused_linear_case(ctx, 1, 66, 1032, (wgt_fused_prologue)pro, WGT_F16, 1, 1);
        }
    }
    unsetenv("WGT_FUSED_LINEAR_ROWS");
    fused_qkv_case(ctx, 136, 16, 0, WGT_F32, 1);
    fused_qkv_case(ctx, 136, 16, 1, WGT_F16, 0);
    fused_qkv_case(ctx, 4104, 8, 0, WGT_BF16, 1); /* partial rotary; an unrolled step and a tail */
    fused_qkv_case(ctx, 4104, 8, 1, WGT_F16, 1);
    fused_qkv_case(ctx, 60, 16, 0, WGT_F32, 1);   /* K % 8 != 0: composed */
    /* the kernels' barrier-free variants (what SwiftShader takes: wgt_gpu_avoid_barriers) */
    int was = wgt_gpu_avoid_barriers(ctx);
    wgt_gpu_test_avoid_barriers(ctx, 1);
    fused_linear_case(ctx, 1, 37, 896, WGT_PRO_NONE, WGT_F16, 1, 1);
    fused_linear_case(ctx, 1, 300, 136, WGT_PRO_RMS_NORM, WGT_F32, 0, 1);
    fused_linear_case(ctx, 1, 5, 2056, WGT_PRO_SWIGLU, WGT_BF16, 1, 0);
    fused_qkv_case(ctx, 136, 16, 0, WGT_F32, 1);
    fused_qkv_case(ctx, 4104, 8, 1, WGT_F16, 1);
    wgt_gpu_test_avoid_barriers(ctx, was);
    qkv_case(ctx, 1, 0, 16, 0, WGT_ROPE_NONE);
    qkv_case(ctx, 1, 9, 16, 1, WGT_ROPE_NONE);
    qkv_case(ctx, 5, 3, 16, 0, WGT_ROPE_LLAMA3);
    qkv_case(ctx, 3, 2, 8, 1, WGT_ROPE_LINEAR);
    /* bad shapes are statuses */
    wgt_tensor *x, *y, *s = NULL;
    int64_t odd[2] = {2, 7}, other[2] = {2, 8};
    MUST(wgt_tensor_zeros(ctx, WGT_F32, 2, odd, &x));
    MUST(wgt_tensor_zeros(ctx, WGT_F32, 2, other, &y));
    wgt_tensor *r = NULL;
    CHECK(wgt_swiglu(x, &r) == WGT_ERR_SHAPE && r == NULL, "swiglu of an odd last dim");
    CHECK(wgt_add_rms_norm(x, y, NULL, 1e-6, &s, &r) == WGT_ERR_SHAPE && r == NULL && s == NULL,
          "add_rms_norm of two shapes");
    wgt_tensor_free(x), wgt_tensor_free(y);
    wgt_context_free(ctx);
    return test_finish("test_gpu_fused");
}
