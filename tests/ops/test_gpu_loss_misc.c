/* Losses and misc ops: first the C reference (src/cpu/loss.c, misc.c) against values worked out
 * by hand from PyTorch's formulas (log-sum-exp, label smoothing, the clamped logs of bce, the
 * stable bce-with-logits, xlogy in kl_div, clamped norms in cosine_similarity, p-norms of cdist),
 * then the GPU against the reference: every loss and reduction in f32/f16/bf16, class dims
 * [N, C, d1, d2], transposed and broadcast inputs, ignore_index, weights, label smoothing, i64
 * targets, a long row (the workgroup path), NaN/-inf, empty inputs; diff/trace/diag/diag_embed on
 * every dtype, meshgrid views, cdist for p = 0, 1, 2, 3, inf with and without the product path;
 * bad arguments give statuses naming the op. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_pair.h"

#define DIMS1(a) ((int64_t[]){a})
#define DIMS2(a, b) ((int64_t[]){a, b})
#define DIMS3(a, b, c) ((int64_t[]){a, b, c})
#define DIMS4(a, b, c, d) ((int64_t[]){a, b, c, d})

/* ---- the reference against hand values ------------------------------------------------------- */

/* Run a loss on the CPU context and return its single value (0-D or [1]). */
static double scalar_of(wgt_tensor *y)
{
    double v = NAN;
    if (!y) return v;
    wgt_tensor *f = NULL;
    if (!wgt_tensor_cast(y, WGT_F32, &f)) {
        float h;
        if (wgt_tensor_numel(f) == 1 && !wgt_tensor_to_host(f, &h, 4)) v = h;
    }
    wgt_tensor_free(f);
    wgt_tensor_free(y);
    return v;
}

static wgt_tensor *host_f32(wgt_context *c, int nd, const int64_t *shape, const float *v)
{
    wgt_tensor *t;
    MUST(wgt_tensor_from_host(c, WGT_F32, nd, shape, v, &t));
    return t;
}

#define NEAR(got, want, tol, what) CHECK(fabs((double)(got) - (double)(want)) <= (tol) * (1 + fabs((double)(want))), "%s: %.9g, want %.9g", what, (double)(got), (double)(want))

static void hand_values(wgt_context *c)
{
    float xv[6] = {1, 2, 3, 1, 1, 1}, wv[3] = {1, 2, 3};
    int32_t tv[2] = {2, 0};
    wgt_tensor *x = host_f32(c, 2, DIMS2(2, 3), xv), *w = host_f32(c, 1, DIMS1(3), wv), *t, *y;
    MUST(wgt_tensor_from_host(c, WGT_I32, 1, DIMS1(2), tv, &t));
    double lse0 = log(exp(1.0) + exp(2.0) + exp(3.0)), l0 = lse0 - 3, l1 = log(3.0);
    MUST(wgt_cross_entropy(x, t, NULL, -100, 0, WGT_REDUCTION_MEAN, &y));
    NEAR(scalar_of(y), (l0 + l1) / 2, 1e-6, "cross_entropy mean");
    MUST(wgt_cross_entropy(x, t, w, -100, 0, WGT_REDUCTION_MEAN, &y));
    NEAR(scalar_of(y), (3 * l0 + 1 * l1) / 4, 1e-6, "cross_entropy weighted mean (divides by the weights)");
    MUST(wgt_cross_entropy(x, t, NULL, 0, 0, WGT_REDUCTION_SUM, &y)); /* ignore_index 0 drops row 1 */
    NEAR(scalar_of(y), l0, 1e-6, "cross_entropy ignore_index");
    MUST(wgt_cross_entropy(x, t, NULL, 0, 0, WGT_REDUCTION_MEAN, &y));
    NEAR(scalar_of(y), l0, 1e-6, "cross_entropy mean over the kept targets");
    /* label smoothing 0.1 on row 0: 0.9 nll + 0.1 / 3 * sum_c (lse - x_c) */
    MUST(wgt_cross_entropy(x, t, NULL, -100, 0.1, WGT_REDUCTION_NONE, &y));
    {
        float h[2];
        MUST(wgt_tensor_to_host(y, h, 8));
        NEAR(h[0], 0.9 * l0 + 0.1 / 3 * (3 * lse0 - 6), 1e-6, "cross_entropy label smoothing");
        NEAR(h[1], l1, 1e-6, "cross_entropy label smoothing, uniform row");
        wgt_tensor_free(y);
    }
    /* probabilities: a one-hot target gives the index form */
    float pv[6] = {0, 0, 1, 1, 0, 0};
    wgt_tensor *pt = host_f32(c, 2, DIMS2(2, 3), pv);
    MUST(wgt_cross_entropy(x, pt, NULL, -100, 0, WGT_REDUCTION_MEAN, &y));
    NEAR(scalar_of(y), (l0 + l1) / 2, 1e-6, "cross_entropy probabilities");
    /* nll_loss picks -x[t] */
    MUST(wgt_nll_loss(x, t, w, -100, WGT_REDUCTION_SUM, &y));
    NEAR(scalar_of(y), -(3 * 3.0 + 1 * 1.0), 1e-6, "nll_loss weighted sum");
    /* elementwise losses on d = x - t = {-2, -0.5, 0.25, 3} */
    float av[4] = {0, 1, 2, 5}, bv[4] = {2, 1.5, 1.75, 2};
    wgt_tensor *a = host_f32(c, 1, DIMS1(4), av), *b = host_f32(c, 1, DIMS1(4), bv);
    MUST(wgt_mse_loss(a, b, WGT_REDUCTION_MEAN, &y));
    NEAR(scalar_of(y), (4 + 0.25 + 0.0625 + 9) / 4, 1e-6, "mse_loss");
    MUST(wgt_l1_loss(a, b, WGT_REDUCTION_SUM, &y));
    NEAR(scalar_of(y), 5.75, 1e-6, "l1_loss");
    MUST(wgt_smooth_l1_loss(a, b, WGT_REDUCTION_SUM, 1.0, &y));
    NEAR(scalar_of(y), 1.5 + 0.125 + 0.03125 + 2.5, 1e-6, "smooth_l1_loss beta 1");
    MUST(wgt_huber_loss(a, b, WGT_REDUCTION_SUM, 2.0, &y));
    NEAR(scalar_of(y), 2 + 0.125 + 0.03125 + 2 * (3 - 1), 1e-6, "huber_loss delta 2");
    /* bce: log(0) clamps at -100; with logits, 100 with target 0 costs 100 (not inf) */
    float pr[3] = {0, 0.5f, 1}, tg[3] = {1, 1, 1}, lg[3] = {100, -3, 0}, t0[3] = {0, 1, 0.5f}, pw[3] = {2, 2, 2};
    wgt_tensor *P = host_f32(c, 1, DIMS1(3), pr), *T = host_f32(c, 1, DIMS1(3), tg), *L = host_f32(c, 1, DIMS1(3), lg);
    wgt_tensor *T0 = host_f32(c, 1, DIMS1(3), t0), *PW = host_f32(c, 1, DIMS1(3), pw);
    MUST(wgt_binary_cross_entropy(P, T, NULL, WGT_REDUCTION_SUM, &y));
    NEAR(scalar_of(y), 100 + log(2.0), 1e-6, "binary_cross_entropy");
    MUST(wgt_binary_cross_entropy_with_logits(L, T0, NULL, NULL, WGT_REDUCTION_NONE, &y));
    {
        float h[3];
        MUST(wgt_tensor_to_host(y, h, 12));
        NEAR(h[0], 100, 1e-6, "bce_with_logits large logit");
        NEAR(h[1], log1p(exp(3.0)), 1e-6, "bce_with_logits");
        NEAR(h[2], log(2.0), 1e-6, "bce_with_logits at 0");
        wgt_tensor_free(y);
    }
    MUST(wgt_binary_cross_entropy_with_logits(L, T0, NULL, PW, WGT_REDUCTION_NONE, &y));
    {
        float h[3];
        MUST(wgt_tensor_to_host(y, h, 12));
        NEAR(h[1], 2 * log1p(exp(3.0)), 1e-6, "bce_with_logits pos_weight");
        NEAR(h[2], 0.5 * log(2.0) + 0.5 * 2 * log(2.0), 1e-6, "bce_with_logits pos_weight, t = 0.5");
        wgt_tensor_free(y);
    }
    /* kl_div: t (log t - x), 0 where t = 0; batchmean divides by dim 0 */
    float kx[4] = {-1, -2, -0.5f, -3}, kt[4] = {0.5f, 0, 0.25f, 0.25f};
    wgt_tensor *KX = host_f32(c, 2, DIMS2(2, 2), kx), *KT = host_f32(c, 2, DIMS2(2, 2), kt);
    double kl = 0.5 * (log(0.5) + 1) + 0.25 * (log(0.25) + 0.5) + 0.25 * (log(0.25) + 3);
    MUST(wgt_kl_div(KX, KT, WGT_REDUCTION_BATCHMEAN, 0, &y));
    NEAR(scalar_of(y), kl / 2, 1e-6, "kl_div batchmean");
    MUST(wgt_kl_div(KX, KT, WGT_REDUCTION_SUM, 1, &y));
    double klt = 0;
    for (int i = 0; i < 4; i++) klt += exp(kt[i]) * (kt[i] - kx[i]);
    NEAR(scalar_of(y), klt, 1e-6, "kl_div log_target");
    /* cosine: orthogonal 0, parallel 1, a zero vector 0 (its norm clamps to eps) */
    float c1[6] = {1, 0, 3, 4, 0, 0}, c2[6] = {0, 1, 6, 8, 1, 1};
    wgt_tensor *C1 = host_f32(c, 2, DIMS2(3, 2), c1), *C2 = host_f32(c, 2, DIMS2(3, 2), c2);
    MUST(wgt_cosine_similarity(C1, C2, 1, 1e-8, &y));
    {
        float h[3];
        MUST(wgt_tensor_to_host(y, h, 12));
        NEAR(h[0], 0, 1e-7, "cosine orthogonal");
        NEAR(h[1], 1, 1e-7, "cosine parallel");
        NEAR(h[2], 0, 1e-7, "cosine zero vector");
        wgt_tensor_free(y);
    }
    /* cdist of (0, 0) and (3, 4) */
    float o[2] = {0, 0}, q[2] = {3, 4};
    wgt_tensor *O = host_f32(c, 2, DIMS2(1, 2), o), *Q = host_f32(c, 2, DIMS2(1, 2), q);
    const double ps[5] = {0, 1, 2, 3, INFINITY}, want[5] = {2, 7, 5, cbrt(91.0), 4};
    for (int i = 0; i < 5; i++) {
        MUST(wgt_cdist(O, Q, ps[i], WGT_CDIST_NO_MM, &y));
        NEAR(scalar_of(y), want[i], 1e-6, "cdist");
    }
    /* diff, trace, diag */
    int32_t dv[4] = {1, 4, 9, 16}, got[4];
    wgt_tensor *D;
    MUST(wgt_tensor_from_host(c, WGT_I32, 1, DIMS1(4), dv, &D));
    MUST(wgt_diff(D, 2, 0, NULL, NULL, &y));
    CHECK(wgt_tensor_numel(y) == 2 && !wgt_tensor_to_host(y, got, 8) && got[0] == 2 && got[1] == 2, "diff n=2");
    wgt_tensor_free(y);
    wgt_tensor *M2;
    MUST(wgt_tensor_reshape(D, 2, DIMS2(2, 2), &M2));
    MUST(wgt_trace(M2, &y));
    CHECK(!wgt_tensor_to_host(y, got, 4) && got[0] == 17, "trace: %d", got[0]);
    wgt_tensor_free(y);
    MUST(wgt_diag(M2, 1, &y));
    CHECK(wgt_tensor_numel(y) == 1 && !wgt_tensor_to_host(y, got, 4) && got[0] == 4, "diag of a 2-D, offset 1");
    wgt_tensor_free(y);
    MUST(wgt_diag(D, -1, &y));
    int32_t big[25];
    CHECK(wgt_tensor_numel(y) == 25 && !wgt_tensor_to_host(y, big, 100) && big[5] == 1 && big[11] == 4 && big[23] == 16 &&
              big[0] == 0 && big[6] == 0,
          "diag of a 1-D, offset -1");
    wgt_tensor_free(y);
    wgt_tensor *all[] = {x, w, t, pt, a, b, P, T, L, T0, PW, KX, KT, C1, C2, O, Q, D, M2};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) wgt_tensor_free(all[i]);
}

/* ---- differential: GPU against the reference ---------------------------------------------------- */

static double rtol_of(wgt_dtype dt) { return dt == WGT_BF16 ? 1.6e-2 : dt == WGT_F16 ? 2e-3 : 2e-5; }

/* Class indices in [0, C), with `ignored` of them set to ignore (or out of the way). */
static pair targets(wgt_dtype dt, int nd, const int64_t *shape, int64_t C, int ignored, int ignore)
{
    pair p = pair_rand(dt, nd, shape, 0, (double)C, 0);
    if (!ignored) return p;
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= shape[d];
    int64_t *v = calloc(n ? n : 1, sizeof *v);
    wgt_tensor *c;
    MUST(wgt_tensor_cast(p.t[1], WGT_I64, &c));
    MUST(wgt_tensor_to_host(c, v, n * 8));
    wgt_tensor_free(c);
    for (int64_t i = 0; i < n; i += 3) v[i] = ignore;
    pair_free(p);
    wgt_tensor *h;
    for (int s = 0; s < 2; s++) {
        MUST(wgt_tensor_from_host(side[s], WGT_I64, nd, shape, v, &h));
        MUST(wgt_tensor_cast(h, dt, &p.t[s]));
        wgt_tensor_free(h);
    }
    free(v);
    return p;
}

static void diff_cross_entropy(void)
{
    const wgt_dtype fts[3] = {WGT_F32, WGT_F16, WGT_BF16};
    char what[160];
    for (int fi = 0; fi < 3; fi++) {
        wgt_dtype dt = fts[fi];
        double rt = rtol_of(dt), at = dt == WGT_F32 ? 1e-5 : rt;
        /* [N, C, d1, d2] logits, a transposed view, i64 targets with ignored entries */
        pair x = pair_rand(dt, 4, DIMS4(3, 5, 4, 2), -4, 4, 0);
        pair xt = pair_transpose(x, 2, 3); /* [3, 5, 2, 4] strided */
        pair tg = targets(WGT_I64, 3, DIMS3(3, 2, 4), 5, 1, -100);
        pair w = pair_rand(dt, 1, DIMS1(5), 0.5, 2, 0);
        for (int red = 0; red < 3; red++)
            for (int ls = 0; ls < 2; ls++)
                for (int hw = 0; hw < 2; hw++) {
                    snprintf(what, sizeof what, "cross_entropy %s red %d ls %d weight %d", wgt_dtype_name(dt), red, ls, hw);
                    DIFF(what, at, rt, wgt_cross_entropy(xt.t[S], tg.t[S], hw ? w.t[S] : NULL, -100, ls ? 0.2 : 0, red, &y_[S]));
                    snprintf(what, sizeof what, "nll_loss %s red %d weight %d", wgt_dtype_name(dt), red, hw);
                    DIFF(what, at, rt, wgt_nll_loss(xt.t[S], tg.t[S], hw ? w.t[S] : NULL, -100, red, &y_[S]));
                }
        /* probabilities of the input's shape (softmax of random values), smoothing, weight */
        pair pr0 = pair_rand(WGT_F32, 4, DIMS4(3, 5, 2, 4), -2, 2, 0), pr;
        for (int s = 0; s < 2; s++) MUST(wgt_softmax(pr0.t[s], 1, &pr.t[s]));
        for (int red = 0; red < 3; red++) {
            snprintf(what, sizeof what, "cross_entropy probabilities %s red %d", wgt_dtype_name(dt), red);
            DIFF(what, at, rt, wgt_cross_entropy(xt.t[S], pr.t[S], w.t[S], -100, 0.1, red, &y_[S]));
        }
        /* a long row: the workgroup path (C >= 4096: the device's workgroup size, 128 with
         * WGT_LIMITS=default on OpenGL ES), i32 targets */
        pair lx = pair_rand(dt, 2, DIMS2(3, 5000), -8, 8, 0), lt = targets(WGT_I32, 1, DIMS1(3), 5000, 0, 0);
        snprintf(what, sizeof what, "cross_entropy C=5000 %s", wgt_dtype_name(dt));
        DIFF(what, at, rt, wgt_cross_entropy(lx.t[S], lt.t[S], NULL, -100, 0.05, WGT_REDUCTION_NONE, &y_[S]));
        pair lp0 = pair_rand(WGT_F32, 2, DIMS2(3, 5000), -2, 2, 0), lp, lw = pair_rand(dt, 1, DIMS1(5000), 0.5, 2, 0);
        for (int s = 0; s < 2; s++) MUST(wgt_softmax(lp0.t[s], 1, &lp.t[s]));
        snprintf(what, sizeof what, "cross_entropy probabilities C=5000 %s", wgt_dtype_name(dt));
        DIFF(what, at, rt, wgt_cross_entropy(lx.t[S], lp.t[S], lw.t[S], -100, 0.1, WGT_REDUCTION_NONE, &y_[S]));
        snprintf(what, sizeof what, "cosine_similarity rows of 5000 %s", wgt_dtype_name(dt));
        DIFF(what, at, rt, wgt_cosine_similarity(lx.t[S], lp0.t[S], 1, 1e-8, &y_[S]));
        pair_free(lp0), pair_free(lp), pair_free(lw);
        /* [C] with a 0-D target; empty batch (mean: NaN, sum: 0) */
        pair x1 = pair_narrow(lx, 0, 1, 1), x1r, t0;
        for (int s = 0; s < 2; s++) {
            MUST(wgt_tensor_reshape(x1.t[s], 1, DIMS1(5000), &x1r.t[s]));
            int32_t k = 4321;
            MUST(wgt_tensor_from_host(side[s], WGT_I32, 0, NULL, &k, &t0.t[s]));
        }
        DIFF("cross_entropy [C]", at, rt, wgt_cross_entropy(x1r.t[S], t0.t[S], NULL, -100, 0, WGT_REDUCTION_MEAN, &y_[S]));
        pair ex = pair_narrow(xt, 0, 0, 0), et = pair_narrow(tg, 0, 0, 0);
        for (int red = 0; red < 3; red++)
            DIFF("cross_entropy empty", at, rt, wgt_cross_entropy(ex.t[S], et.t[S], NULL, -100, 0, red, &y_[S]));
        /* NaN and -inf logits */
        pair sx = pair_rand(dt, 2, DIMS2(4, 9), -3, 3, 1), st = targets(WGT_I32, 1, DIMS1(4), 9, 0, 0);
        DIFF("cross_entropy NaN/-inf", at, rt, wgt_cross_entropy(sx.t[S], st.t[S], NULL, -100, 0, WGT_REDUCTION_NONE, &y_[S]));
        pair *ps[] = {&x, &xt, &tg, &w, &pr0, &pr, &lx, &lt, &x1, &x1r, &t0, &ex, &et, &sx, &st};
        for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) pair_free(*ps[i]);
    }
}

static void diff_pointwise(void)
{
    const wgt_dtype fts[3] = {WGT_F32, WGT_F16, WGT_BF16};
    char what[160];
    for (int fi = 0; fi < 3; fi++) {
        wgt_dtype dt = fts[fi];
        double rt = rtol_of(dt), at = dt == WGT_F32 ? 1e-5 : rt;
        pair a = pair_rand(dt, 2, DIMS2(37, 29), -3, 3, 0), b0 = pair_rand(dt, 2, DIMS2(29, 37), -3, 3, 0);
        pair b = pair_transpose(b0, 0, 1);                          /* strided [37, 29] */
        pair row = pair_rand(dt, 1, DIMS1(29), -3, 3, 0);           /* broadcasts along dim 0 */
        pair pr = pair_rand(dt, 2, DIMS2(37, 29), 0.01, 0.99, 0);   /* probabilities */
        pair tg = pair_rand(dt, 2, DIMS2(37, 29), 0, 1, 0);
        pair lp = pair_rand(dt, 2, DIMS2(37, 29), -5, -0.01, 0);    /* log-probabilities */
        pair w = pair_rand(dt, 1, DIMS1(29), 0.5, 2, 0);
        pair sp = pair_rand(dt, 2, DIMS2(7, 9), -3, 3, 1), sq = pair_rand(dt, 2, DIMS2(7, 9), -3, 3, 0);
        pair e = pair_rand(dt, 2, DIMS2(0, 5), -1, 1, 0);
        for (int red = 0; red < 3; red++) {
#define PW(name, CALL)                                                                                  \
    snprintf(what, sizeof what, "%s %s red %d", name, wgt_dtype_name(dt), red);                          \
    DIFF(what, at, rt, CALL)
            PW("mse_loss", wgt_mse_loss(a.t[S], b.t[S], red, &y_[S]));
            PW("mse_loss broadcast", wgt_mse_loss(a.t[S], row.t[S], red, &y_[S]));
            PW("l1_loss", wgt_l1_loss(b.t[S], a.t[S], red, &y_[S]));
            PW("smooth_l1_loss", wgt_smooth_l1_loss(a.t[S], b.t[S], red, 0.7, &y_[S]));
            PW("smooth_l1_loss beta 0", wgt_smooth_l1_loss(a.t[S], b.t[S], red, 0, &y_[S]));
            PW("huber_loss", wgt_huber_loss(a.t[S], b.t[S], red, 1.3, &y_[S]));
            PW("binary_cross_entropy", wgt_binary_cross_entropy(pr.t[S], tg.t[S], w.t[S], red, &y_[S]));
            PW("binary_cross_entropy_with_logits",
               wgt_binary_cross_entropy_with_logits(b.t[S], tg.t[S], w.t[S], row.t[S], red, &y_[S]));
            PW("kl_div", wgt_kl_div(lp.t[S], pr.t[S], red, 0, &y_[S]));
            PW("kl_div log_target", wgt_kl_div(lp.t[S], b.t[S], red, 1, &y_[S]));
            PW("mse_loss NaN/inf", wgt_mse_loss(sp.t[S], sq.t[S], red, &y_[S]));
            PW("l1_loss empty", wgt_l1_loss(e.t[S], e.t[S], red, &y_[S]));
        }
        DIFF("kl_div batchmean", at, rt, wgt_kl_div(lp.t[S], pr.t[S], WGT_REDUCTION_BATCHMEAN, 0, &y_[S]));
        /* cosine_similarity: strided, broadcast, dim 0, a short and a long row */
        DIFF("cosine_similarity", at, rt, wgt_cosine_similarity(a.t[S], b.t[S], 1, 1e-8, &y_[S]));
        DIFF("cosine_similarity dim 0", at, rt, wgt_cosine_similarity(a.t[S], b.t[S], 0, 1e-8, &y_[S]));
        DIFF("cosine_similarity broadcast", at, rt, wgt_cosine_similarity(a.t[S], row.t[S], -1, 1e-8, &y_[S]));
        DIFF("cosine_similarity NaN/inf", at, rt, wgt_cosine_similarity(sp.t[S], sq.t[S], 1, 1e-8, &y_[S]));
        pair *ps[] = {&a, &b0, &b, &row, &pr, &tg, &lp, &w, &sp, &sq, &e};
        for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) pair_free(*ps[i]);
    }
}

static void diff_misc(void)
{
    char what[160];
    for (int di = 0; di < N_DTYPES; di++) {
        wgt_dtype dt = all_dtypes[di];
        pair m0 = pair_rand(dt, 2, DIMS2(7, 5), lo_of(dt), hi_of(dt), 0), m = pair_transpose(m0, 0, 1); /* [5, 7] */
        pair v = pair_rand(dt, 1, DIMS1(6), lo_of(dt), hi_of(dt), 0), pre = pair_rand(dt, 2, DIMS2(2, 7), lo_of(dt), hi_of(dt), 0);
        const char *dn = wgt_dtype_name(dt);
        double tol = op_is_float(dt) ? rtol_of(dt) : 0;
        for (int n = 0; n < 4; n++) {
            snprintf(what, sizeof what, "diff %s n %d", dn, n);
            DIFF(what, tol, tol, wgt_diff(m.t[S], n, 1, NULL, NULL, &y_[S]));
            snprintf(what, sizeof what, "diff %s n %d dim 0 prepend append", dn, n);
            DIFF(what, tol, tol, wgt_diff(m.t[S], n, 0, pre.t[S], pre.t[S], &y_[S]));
        }
        DIFF("diff past the length", 0, 0, wgt_diff(v.t[S], 9, 0, NULL, NULL, &y_[S]));
        snprintf(what, sizeof what, "trace %s", dn);
        DIFF(what, tol, tol, wgt_trace(m.t[S], &y_[S]));
        for (int k = -6; k <= 7; k += 3) {
            snprintf(what, sizeof what, "diag %s 2-D offset %d", dn, k);
            DIFF(what, 0, 0, wgt_diag(m.t[S], k, &y_[S]));
            snprintf(what, sizeof what, "diag %s 1-D offset %d", dn, k);
            DIFF(what, 0, 0, wgt_diag(v.t[S], k, &y_[S]));
            snprintf(what, sizeof what, "diag_embed %s offset %d", dn, k);
            DIFF(what, 0, 0, wgt_diag_embed(m.t[S], k, -2, -1, &y_[S]));
            DIFF(what, 0, 0, wgt_diag_embed(m.t[S], k, 0, 2, &y_[S]));
        }
        pair *ps[] = {&m0, &m, &v, &pre};
        for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) pair_free(*ps[i]);
    }
}

static void diff_cdist(void)
{
    const wgt_dtype fts[3] = {WGT_F32, WGT_F16, WGT_BF16};
    char what[160];
    for (int fi = 0; fi < 3; fi++) {
        wgt_dtype dt = fts[fi];
        double rt = rtol_of(dt);
        pair a = pair_rand(dt, 3, DIMS3(2, 30, 7), -2, 2, 0), b0 = pair_rand(dt, 2, DIMS2(7, 27), -2, 2, 0);
        pair b = pair_transpose(b0, 0, 1); /* [27, 7] strided, broadcast over the batch */
        const double ps[6] = {0, 1, 2, 3, 0.5, INFINITY};
        for (int i = 0; i < 6; i++) {
            snprintf(what, sizeof what, "cdist %s p %g", wgt_dtype_name(dt), ps[i]);
            DIFF(what, 1e-5, rt + 1e-5, wgt_cdist(a.t[S], b.t[S], ps[i], WGT_CDIST_NO_MM, &y_[S]));
        }
        /* the product path: |a|^2 + |b|^2 - 2 a.b loses ~1e-7 |a|^2 absolute before the sqrt */
        snprintf(what, sizeof what, "cdist %s p 2 matrix product", wgt_dtype_name(dt));
        DIFF(what, 1e-3, rt + 1e-5, wgt_cdist(a.t[S], b.t[S], 2, WGT_CDIST_MM_IF_NECESSARY, &y_[S]));
        pair e = pair_narrow(a, 1, 0, 0);
        DIFF("cdist empty", 0, 0, wgt_cdist(e.t[S], b.t[S], 2, WGT_CDIST_MM, &y_[S]));
        pair *pp[] = {&a, &b0, &b, &e};
        for (size_t i = 0; i < sizeof pp / sizeof *pp; i++) pair_free(*pp[i]);
    }
}

/* meshgrid: views with the right values in both indexings. */
static void meshgrid_views(wgt_context *c)
{
    float xv[3] = {1, 2, 3}, yv[2] = {10, 20};
    wgt_tensor *x = host_f32(c, 1, DIMS1(3), xv), *y = host_f32(c, 1, DIMS1(2), yv), *o[2];
    const wgt_tensor *in[2] = {x, y};
    for (int xy = 0; xy < 2; xy++) {
        MUST(wgt_meshgrid(in, 2, xy, o));
        float h[6], g[6];
        wgt_tensor *c0, *c1;
        MUST(wgt_tensor_contiguous(o[0], &c0));
        MUST(wgt_tensor_contiguous(o[1], &c1));
        MUST(wgt_tensor_to_host(c0, h, 24));
        MUST(wgt_tensor_to_host(c1, g, 24));
        int64_t r = xy ? 2 : 3, cc = xy ? 3 : 2;
        CHECK(wgt_tensor_dim(o[0], 0) == r && wgt_tensor_dim(o[0], 1) == cc, "meshgrid %s shape", xy ? "xy" : "ij");
        int ok = 1;
        for (int i = 0; i < r; i++)
            for (int j = 0; j < cc; j++) {
                float wx = xy ? xv[j] : xv[i], wy = xy ? yv[i] : yv[j];
                ok &= h[i * cc + j] == wx && g[i * cc + j] == wy;
            }
        CHECK(ok, "meshgrid %s values", xy ? "xy" : "ij");
        CHECK(wgt_tensor_strides(o[0])[xy ? 0 : 1] == 0, "meshgrid: a view (stride 0), not a copy");
        wgt_tensor_free(c0), wgt_tensor_free(c1), wgt_tensor_free(o[0]), wgt_tensor_free(o[1]);
    }
    wgt_tensor_free(x), wgt_tensor_free(y);
}

/* Bad arguments: statuses with the op's name; an out-of-range class flags the context. */
static void errors(wgt_context *c)
{
    wgt_tensor *x, *t3, *ti, *y = NULL, *bad, *f3;
    MUST(wgt_tensor_zeros(c, WGT_F32, 2, DIMS2(4, 3), &x));
    MUST(wgt_tensor_zeros(c, WGT_F32, 1, DIMS1(5), &f3));
    MUST(wgt_tensor_zeros(c, WGT_I32, 1, DIMS1(3), &t3));
    MUST(wgt_tensor_zeros(c, WGT_I32, 1, DIMS1(4), &ti));
    MUST(wgt_tensor_zeros(c, WGT_I32, 2, DIMS2(4, 3), &bad));
#define EXPECT(code, call, name)                                                                      \
    do {                                                                                              \
        wgt_status s_ = (call);                                                                       \
        CHECK(s_ == (code) && strstr(wgt_context_errmsg(c), name), "%s: status %d, message '%s'", name, s_, \
              wgt_context_errmsg(c));                                                                 \
        CHECK(y == NULL, "%s: out set on failure", name);                                             \
    } while (0)
    EXPECT(WGT_ERR_SHAPE, wgt_cross_entropy(x, t3, NULL, -100, 0, WGT_REDUCTION_MEAN, &y), "cross_entropy");
    EXPECT(WGT_ERR_DTYPE, wgt_cross_entropy(bad, ti, NULL, -100, 0, WGT_REDUCTION_MEAN, &y), "cross_entropy");
    EXPECT(WGT_ERR_INVALID_ARGUMENT, wgt_cross_entropy(x, ti, NULL, -100, 1.5, WGT_REDUCTION_MEAN, &y), "cross_entropy");
    EXPECT(WGT_ERR_INVALID_ARGUMENT, wgt_cross_entropy(x, ti, NULL, -100, 0, WGT_REDUCTION_BATCHMEAN, &y), "cross_entropy");
    EXPECT(WGT_ERR_SHAPE, wgt_nll_loss(x, ti, f3, -100, WGT_REDUCTION_MEAN, &y), "nll_loss");
    EXPECT(WGT_ERR_SHAPE, wgt_mse_loss(x, f3, WGT_REDUCTION_MEAN, &y), "mse_loss");
    EXPECT(WGT_ERR_INVALID_ARGUMENT, wgt_huber_loss(x, x, WGT_REDUCTION_MEAN, 0, &y), "huber_loss");
    EXPECT(WGT_ERR_INVALID_ARGUMENT, wgt_smooth_l1_loss(x, x, WGT_REDUCTION_MEAN, -1, &y), "smooth_l1_loss");
    EXPECT(WGT_ERR_INVALID_ARGUMENT, wgt_mse_loss(x, x, (wgt_reduction)7, &y), "mse_loss");
    EXPECT(WGT_ERR_SHAPE, wgt_cosine_similarity(x, f3, 5, 1e-8, &y), "cosine_similarity");
    EXPECT(WGT_ERR_SHAPE, wgt_trace(t3, &y), "trace");
    EXPECT(WGT_ERR_SHAPE, wgt_diff(x, 1, 0, f3, NULL, &y), "diff");
    EXPECT(WGT_ERR_SHAPE, wgt_diag_embed(x, 0, 1, 1, &y), "diag_embed");
    EXPECT(WGT_ERR_SHAPE, wgt_cdist(x, f3, 2, WGT_CDIST_MM, &y), "cdist");
    EXPECT(WGT_ERR_INVALID_ARGUMENT, wgt_cdist(x, x, -1, WGT_CDIST_MM, &y), "cdist");
    EXPECT(WGT_ERR_DTYPE, wgt_cdist(bad, bad, 2, WGT_CDIST_MM, &y), "cdist");
    /* a class past C: the reference refuses, the device gives NaN and flags the context */
    int32_t big[4] = {0, 1, 7, 2};
    wgt_tensor *tb;
    MUST(wgt_tensor_from_host(c, WGT_I32, 1, DIMS1(4), big, &tb));
    wgt_status s = wgt_cross_entropy(x, tb, NULL, -100, 0, WGT_REDUCTION_NONE, &y);
    wgt_adapter_info info;
    MUST(wgt_context_adapter_info(c, &info));
    if (info.backend == WGT_BACKEND_CPU) CHECK(s == WGT_ERR_INVALID_ARGUMENT, "reference: a class past C: %d", s);
    else {
        CHECK(s == WGT_OK, "device: a class past C runs: %s", wgt_context_errmsg(c));
        float h[4] = {0};
        if (!s) MUST(wgt_tensor_to_host(y, h, 16));
        CHECK(isnan(h[2]) && !isnan(h[1]), "device: the bad row is NaN (%g), the others not", h[2]);
        CHECK(wgt_index_check(c) == WGT_ERR_INVALID_ARGUMENT, "device: wgt_index_check reports the bad class");
        CHECK(wgt_index_check(c) == WGT_OK, "device: the flag clears");
    }
    wgt_tensor_free(y);
    wgt_tensor_free(x), wgt_tensor_free(t3), wgt_tensor_free(ti), wgt_tensor_free(bad), wgt_tensor_free(tb), wgt_tensor_free(f3);
}

int main(void)
{
    pair_open();
    hand_values(side[1]);
    hand_values(side[0]);
    meshgrid_views(side[0]);
    errors(side[0]);
    errors(side[1]);
    diff_cross_entropy();
    diff_pointwise();
    diff_misc();
    diff_cdist();
    CHECK(compared > 10000, "only %d elements compared", compared);
    wgt_context_free(side[0]);
    wgt_context_free(side[1]);
    return test_finish("test_gpu_loss_misc");
}
