/* wgt_fused_qlinear against a double oracle: random f32 weights quantised with wgt_quantize (Q8_0,
 * Q4_0, Q4_K, Q6_K) and dequantised with wgt_dequantize; the prologue (none, RMSNorm, SwiGLU), the
 * product, bias and residual all in double on the host. One token takes the kernel in one dispatch
 * (checked through the context's dispatch count); K over one and two steps of the kernel (1024
 * columns: four pieces of 8 for each of a row's 32 invocations) with and without a partial last
 * step, N not a multiple of the rows per workgroup, Q6_K rows at unaligned bytes, a row narrow of
 * the weight, an f16 bias, 3-D x. Two tokens (M = 2), a strided x and the CPU-reference context
 * run the composition of the plain ops. The spec's default limits run the kernel again where they
 * lower the workgroup size (128 on OpenGL ES compat). test_blocks runs the cases again through the entry
 * `blocks` (WGT_QLINEAR_BLOCKS); test_rows through `rows` (WGT_QLINEAR_ROWS); test_glu runs
 * wgt_fused_qlinear_glu (SwiGLU in the epilogue). */
#include <math.h>
#include <string.h>

#include "ops/api.h"
#include "ops/ops.h"
#include "support/check.h"
#include "support/linear.h"

static const double EPS = 1e-5;

/* Host inputs of one case: x [M, Kx], gamma [K], bias [N] (f32 values, maybe stored as f16),
 * res [M, N]; NULL when absent. */
typedef struct qcase {
    wgt_fused_prologue pro;
    int64_t M;
    float *x, *gamma, *bias, *res;
} qcase;

/* The oracle for token t, row n, with the magnitude the f32 error bound scales with.
 * Tolerance: the GPU sums K f32 products in any order (K u sum|v w|, u = 2^-24); the prologue
 * rounds each v (silu's exp and division, the norm's scale: a few u of |v| each, 16 u allowed);
 * Q4_K's d*sc*q - dmin*m may be one FMA, moving each weight by u * 2 max|w| (as test_gpu_qlinear). */
static void oracle(const qcase *c, const test_qweight *q, int64_t t, int64_t n, double *val, double *tol)
{
    int64_t K = q->cols, Kx = c->pro == WGT_PRO_SWIGLU ? 2 * K : K;
    const float *xr = c->x + t * Kx, *wr = q->deq + n * K;
    double scale = 1;
    if (c->pro == WGT_PRO_RMS_NORM) {
        double ss = 0;
        for (int64_t k = 0; k < K; k++) ss += (double)xr[k] * xr[k];
        scale = 1 / sqrt(ss / (double)K + EPS);
    }
    double s = 0, mag = 0, vs = 0, maxw = 0;
    for (int64_t k = 0; k < K; k++) {
        double v = xr[k];
        if (c->pro == WGT_PRO_RMS_NORM) v = v * scale * c->gamma[k];
        else if (c->pro == WGT_PRO_SWIGLU) v = v / (1 + exp(-v)) * xr[K + k];
        s += v * wr[k], mag += fabs(v * wr[k]), vs += fabs(v), maxw = fmax(maxw, fabs(wr[k]));
    }
    double extra = 0;
    if (c->bias) s += c->bias[n], extra += fabs(c->bias[n]);
    if (c->res) s += c->res[t * q->rows + n], extra += fabs(c->res[t * q->rows + n]);
    const double u = 1.0 / 16777216.0;
    *val = s;
    *tol = (double)(K + 16) * u * mag + 2 * u * maxw * vs + 4 * u * (extra + fabs(s)) + 1e-30;
}

/* Run one case on w (the weight q, or a view of it) and compare; expect_dispatches >= 0 checks how
 * many dispatches the call recorded. */
static void run_case(wgt_context *ctx, const char *what, const test_qweight *q, const wgt_tensor *w, const qcase *c,
                     int bias_f16, int x3d, int expect_dispatches)
{
    int64_t K = q->cols, N = q->rows, Kx = c->pro == WGT_PRO_SWIGLU ? 2 * K : K;
    wgt_tensor *tx, *tg = NULL, *tb = NULL, *tr = NULL, *y = NULL;
    if (x3d) MUST(wgt_tensor_from_host(ctx, WGT_F32, 3, (int64_t[]){c->M, 1, Kx}, c->x, &tx));
    else MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){c->M, Kx}, c->x, &tx));
    if (c->gamma) MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, &K, c->gamma, &tg));
    if (c->bias && bias_f16) {
        uint16_t *h = malloc((size_t)N * 2);
        for (int64_t i = 0; i < N; i++) h[i] = wgt_cpu_f64_to_f16(c->bias[i]);
        MUST(wgt_tensor_from_host(ctx, WGT_F16, 1, &N, h, &tb));
        free(h);
    } else if (c->bias)
        MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, &N, c->bias, &tb));
    if (c->res) {
        if (x3d) MUST(wgt_tensor_from_host(ctx, WGT_F32, 3, (int64_t[]){c->M, 1, N}, c->res, &tr));
        else MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){c->M, N}, c->res, &tr));
    }
    wgt_memory_stats before, after;
    MUST(wgt_context_memory_stats(ctx, &before));
    wgt_status st = wgt_fused_qlinear(tx, c->pro, tg, EPS, w, q->type, tb, tr, &y);
    MUST(wgt_context_memory_stats(ctx, &after));
    CHECK(st == WGT_OK, "%s: %s", what, wgt_errmsg());
    if (!st) {
        if (expect_dispatches >= 0)
            CHECK(after.dispatches - before.dispatches == (uint64_t)expect_dispatches, "%s: %llu dispatches, not %d",
                  what, (unsigned long long)(after.dispatches - before.dispatches), expect_dispatches);
        int nd = wgt_tensor_ndim(y);
        CHECK(nd == (x3d ? 3 : 2) && wgt_tensor_dim(y, 0) == c->M && wgt_tensor_dim(y, nd - 1) == N &&
                  wgt_tensor_dtype(y) == WGT_F32, "%s: result shape/dtype", what);
        float *got = malloc((size_t)(c->M * N) * sizeof(float));
        MUST(wgt_tensor_to_host(y, got, (size_t)(c->M * N) * sizeof(float)));
        int bad = 0;
        for (int64_t t = 0; t < c->M; t++)
            for (int64_t n = 0; n < N; n++) {
                double v, tol;
                oracle(c, q, t, n, &v, &tol);
                test_compared++;
                double g = got[t * N + n];
                if (!(fabs(g - v) <= tol) && bad++ < 3)
                    CHECK(0, "%s: token %lld row %lld: got %.9g, expected %.9g (tolerance %.3g)", what, (long long)t,
                          (long long)n, g, v, tol);
            }
        CHECK(bad == 0, "%s: %d of %lld values off", what, bad, (long long)(c->M * N));
        free(got);
    }
    wgt_tensor_free(y);
    wgt_tensor_free(tx);
    wgt_tensor_free(tg);
    wgt_tensor_free(tb);
    wgt_tensor_free(tr);
}

static const char *pro_name(wgt_fused_prologue pro)
{
    return pro == WGT_PRO_RMS_NORM ? "rms_norm" : pro == WGT_PRO_SWIGLU ? "swiglu" : "none";
}

/* Inputs for q with prologue pro and M tokens; bias and res when asked. */
static qcase make_case(const test_qweight *q, wgt_fused_prologue pro, int64_t M, int with_bias, int with_res)
{
    qcase c = {pro, M, NULL, NULL, NULL, NULL};
    c.x = test_random_f32(M * q->cols * (pro == WGT_PRO_SWIGLU ? 2 : 1), -2, 2);
    if (pro == WGT_PRO_RMS_NORM) c.gamma = test_random_f32(q->cols, -1.5, 1.5);
    if (with_bias) c.bias = test_random_f32(q->rows, -2, 2);
    if (with_res) c.res = test_random_f32(M * q->rows, -3, 3);
    return c;
}

static void free_case(qcase *c)
{
    free(c->x), free(c->gamma), free(c->bias), free(c->res);
}

/* Every format x prologue x bias x res on one token (the kernel, one dispatch on a GPU context),
 * and the composition with two tokens. */
static void test_all(wgt_context *ctx, int gpu)
{
    const struct { wgt_ftype t; int64_t rows, cols; } ws[] = {
        {WGT_FTYPE_Q8_0, 37, 1856}, /* one step of 1024 columns, then 104 pieces: 3 of a lane's 4 */
        {WGT_FTYPE_Q4_0, 45, 1056}, /* one step, then 4 pieces */
        {WGT_FTYPE_Q4_K, 37, 2048}, /* two whole steps */
        {WGT_FTYPE_Q6_K, 29, 3328}, /* three steps and 32 pieces; 2730-byte rows, odd ones unaligned */
    };
    for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) {
        test_qweight q;
        test_qweight_make(&q, ws[i].t, ws[i].rows, ws[i].cols);
        wgt_tensor *w;
        MUST(wgt_qweight_upload(ctx, q.type, q.rows, q.cols, q.blocks, &w));
        for (int pro = WGT_PRO_NONE; pro <= WGT_PRO_SWIGLU; pro++)
            for (int br = 0; br < 4; br++) {
                qcase c = make_case(&q, (wgt_fused_prologue)pro, 1, br & 1, br >> 1);
                char what[128];
                snprintf(what, sizeof what, "%s [%lld, %lld] %s%s%s", wgt_ftype_name(q.type), (long long)q.rows,
                         (long long)q.cols, pro_name(c.pro), c.bias ? " + bias" : "", c.res ? " + res" : "");
                run_case(ctx, what, &q, w, &c, 0, 0, gpu ? 1 : -1);
                free_case(&c);
            }
        /* two tokens: the plain ops */
        for (int pro = WGT_PRO_NONE; pro <= WGT_PRO_SWIGLU; pro++) {
            qcase c = make_case(&q, (wgt_fused_prologue)pro, 2, pro != WGT_PRO_NONE, 1);
            char what[128];
            snprintf(what, sizeof what, "%s %s, 2 tokens (composed)", wgt_ftype_name(q.type), pro_name(c.pro));
            run_case(ctx, what, &q, w, &c, 0, 0, -1);
            free_case(&c);
        }
        wgt_tensor_free(w);
        free(q.blocks);
        free(q.deq);
    }
}

/* A row narrow of the weight (rows starting at byte 11 * 34), an f16 bias, 3-D x, a strided x
 * (composed), and the refusals. */
static void test_views(wgt_context *ctx, int gpu)
{
    test_qweight q;
    test_qweight_make(&q, WGT_FTYPE_Q8_0, 40, 1088);
    wgt_tensor *w, *wn;
    MUST(wgt_qweight_upload(ctx, q.type, q.rows, q.cols, q.blocks, &w));
    MUST(wgt_tensor_narrow(w, 0, 11, 21, &wn));
    test_qweight part = q;
    part.rows = 21;
    part.deq = q.deq + 11 * q.cols;
    qcase c = make_case(&part, WGT_PRO_RMS_NORM, 1, 1, 1);
    run_case(ctx, "q8_0 row narrow, rms_norm + f16 bias + res", &part, wn, &c, 1, 0, gpu ? 1 : -1);
    run_case(ctx, "q8_0 row narrow, 3-D x", &part, wn, &c, 0, 1, gpu ? 1 : -1);
    free_case(&c);

    /* x as a column of a [K, 2] tensor: strided, so the plain ops */
    c = make_case(&q, WGT_PRO_SWIGLU, 1, 0, 1);
    int64_t Kx = 2 * q.cols;
    float *x2 = malloc((size_t)Kx * 2 * sizeof(float));
    for (int64_t k = 0; k < Kx; k++) x2[2 * k] = c.x[k], x2[2 * k + 1] = 99;
    wgt_tensor *tx2, *tcol, *txs, *tr, *y = NULL;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){Kx, 2}, x2, &tx2));
    MUST(wgt_tensor_narrow(tx2, 1, 0, 1, &tcol));
    MUST(wgt_tensor_transpose(tcol, 0, 1, &txs)); /* [1, Kx], stride 2 */
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){1, q.rows}, c.res, &tr));
    wgt_status st = wgt_fused_qlinear(txs, WGT_PRO_SWIGLU, NULL, EPS, w, q.type, NULL, tr, &y);
    CHECK(st == WGT_OK, "strided x: %s", wgt_errmsg());
    if (!st) {
        float *got = malloc((size_t)q.rows * sizeof(float));
        MUST(wgt_tensor_to_host(y, got, (size_t)q.rows * sizeof(float)));
        int bad = 0;
        for (int64_t n = 0; n < q.rows; n++) {
            double v, tol;
            oracle(&c, &q, 0, n, &v, &tol);
            test_compared++;
            bad += !(fabs(got[n] - v) <= tol);
        }
        CHECK(bad == 0, "strided x: %d values off", bad);
        free(got);
    }
    wgt_tensor_free(y);

    /* refusals */
    y = NULL;
    wgt_tensor *tb;
    MUST(wgt_tensor_zeros(ctx, WGT_F32, 1, (int64_t[]){q.rows + 1}, &tb));
    CHECK(wgt_fused_qlinear(txs, WGT_PRO_NONE, NULL, EPS, w, q.type, NULL, NULL, &y) == WGT_ERR_SHAPE && !y,
          "2K columns without SwiGLU refused");
    CHECK(strstr(wgt_errmsg(), "1088") != NULL, "the message names the columns: %s", wgt_errmsg());
    CHECK(wgt_fused_qlinear(txs, WGT_PRO_RMS_NORM, NULL, EPS, w, q.type, NULL, NULL, &y) == WGT_ERR_INVALID_ARGUMENT,
          "RMSNorm without gamma refused");
    CHECK(wgt_fused_qlinear(txs, WGT_PRO_SWIGLU, NULL, EPS, w, q.type, tb, NULL, &y) == WGT_ERR_SHAPE,
          "bias of the wrong length refused");
    CHECK(wgt_fused_qlinear(txs, WGT_PRO_SWIGLU, NULL, EPS, w, q.type, NULL, tb, &y) == WGT_ERR_SHAPE,
          "residual of the wrong shape refused");
    CHECK(wgt_fused_qlinear(txs, WGT_PRO_SWIGLU, NULL, EPS, w, WGT_FTYPE_Q4_0, NULL, NULL, &y) == WGT_ERR_SHAPE,
          "bytes of another format refused");
    CHECK(wgt_fused_qlinear(txs, WGT_PRO_SWIGLU, NULL, EPS, w, WGT_FTYPE_F16, NULL, NULL, &y) == WGT_ERR_DTYPE,
          "a plain format refused");
    wgt_tensor_free(tb);
    wgt_tensor_free(tr);
    wgt_tensor_free(txs);
    wgt_tensor_free(tcol);
    wgt_tensor_free(tx2);
    free(x2);
    free_case(&c);
    wgt_tensor_free(wn);
    wgt_tensor_free(w);
    free(q.blocks);
    free(q.deq);
}

/* ---- wgt_fused_qkv_rope_qcache: the norm, the quantized q/k/v product, rotation, cache writes ---- */

/* One case: Hq, Hkv, hd heads over K columns of a `type` weight, rot features rotated (interleaved
 * pairs or halves), bias f32 / f16 / none, at position pos0 of caches of ctx rows. Compared with a
 * double oracle (the dequantised weights; the rotation by angle f32(pos * f32(inv_freq)) as
 * transformers and src/cpu do) and with the two dispatches (WGT_QLINEAR_QKV=0: wgt_fused_qlinear,
 * then wgt_qkv_rope_cache; setting "" leaves the variable empty: the default), whole caches, so rows other than pos0 must keep their values.
 * Tolerance against the oracle: oracle()'s bound for each of the pair's two sums, plus the GPU's
 * sin and cos (Vulkan allows 2^-11 absolute on [-pi, pi]) times the pair's magnitude; against the
 * two dispatches, which round the same sums in another order and use the same cos_sin, 1e-5 of
 * the largest magnitude. expect_dispatches >= 0 checks the fused call's dispatch count. */
static void qkv_case(wgt_context *ctx, const char *setting, wgt_ftype type, int64_t Hq, int64_t Hkv, int64_t hd,
                     int64_t K, int rot, int interleaved, int bias_kind, wgt_rope_scaling sc, int expect_dispatches)
{
    const int64_t C = (Hq + 2 * Hkv) * hd, T = 9, pos0 = 6;
    char what[192];
    snprintf(what, sizeof what, "qkv %s %s Hq %lld Hkv %lld hd %lld K %lld rot %d%s bias %d scaling %d",
             setting, wgt_ftype_name(type), (long long)Hq, (long long)Hkv, (long long)hd, (long long)K, rot,
             interleaved ? " interleaved" : "", bias_kind, (int)sc);
    test_qweight qw;
    test_qweight_make(&qw, type, C, K);
    qcase c = make_case(&qw, WGT_PRO_RMS_NORM, 1, bias_kind != 0, 0);
    wgt_rope_params rp = {0};
    rp.theta = 10000, rp.scaling = sc, rp.factor = 4, rp.low_freq_factor = 1, rp.high_freq_factor = 4;
    rp.original_max_position = 4;
    double inv[1024], af = 1;
    MUST(wgt_cpu_rope_inv_freq(&rp, rot, inv, &af));
    int64_t cn = Hkv * T * hd, cs[3] = {Hkv, T, hd};
    float *cache0 = test_random_f32(2 * cn, -9, 9); /* the rows nobody writes keep these */
    wgt_tensor *tx, *tg, *tw, *tb = NULL, *kc[2], *vc[2], *q[2] = {NULL, NULL};
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){1, K}, c.x, &tx));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, &K, c.gamma, &tg));
    MUST(wgt_qweight_upload(ctx, type, C, K, qw.blocks, &tw));
    if (bias_kind == 2) {
        uint16_t *h = malloc((size_t)C * 2);
        for (int64_t i = 0; i < C; i++) h[i] = wgt_cpu_f64_to_f16(c.bias[i]), c.bias[i] = (float)wgt_cpu_f16_to_f64(h[i]);
        MUST(wgt_tensor_from_host(ctx, WGT_F16, 1, &C, h, &tb));
        free(h);
    } else if (bias_kind)
        MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, &C, c.bias, &tb));
    for (int i = 0; i < 2; i++) {
        MUST(wgt_tensor_from_host(ctx, WGT_F32, 3, cs, cache0, &kc[i]));
        MUST(wgt_tensor_from_host(ctx, WGT_F32, 3, cs, cache0 + cn, &vc[i]));
    }
    for (int i = 0; i < 2; i++) {
        setenv("WGT_QLINEAR_QKV", i ? "0" : setting, 1);
        wgt_memory_stats before, after;
        MUST(wgt_context_memory_stats(ctx, &before));
        wgt_status st = wgt_fused_qkv_rope_qcache(tx, tg, EPS, tw, type, tb, Hq, Hkv, hd, pos0, rot, interleaved, &rp,
                                                  kc[i], vc[i], &q[i]);
        MUST(wgt_context_memory_stats(ctx, &after));
        CHECK(st == WGT_OK, "%s: %s", what, wgt_errmsg());
        if (i == 0 && expect_dispatches >= 0)
            CHECK(after.dispatches - before.dispatches == (uint64_t)expect_dispatches, "%s: %llu dispatches, not %d",
                  what, (unsigned long long)(after.dispatches - before.dispatches), expect_dispatches);
    }
    unsetenv("WGT_QLINEAR_QKV");
    if (!q[0] || !q[1]) goto out;
    /* the oracle: every output feature's value and bound, then the pairs rotated */
    double *val = malloc((size_t)C * sizeof(double)), *tol = malloc((size_t)C * sizeof(double));
    for (int64_t n = 0; n < C; n++) oracle(&c, &qw, 0, n, &val[n], &tol[n]);
    for (int64_t h = 0; h < Hq + Hkv; h++)
        for (int j = 0; j < rot / 2; j++) {
            int64_t d0 = interleaved ? 2 * j : j, d1 = interleaved ? 2 * j + 1 : j + rot / 2;
            double *a = &val[h * hd + d0], *b = &val[h * hd + d1];
            double ang = (double)(float)((float)pos0 * (float)inv[j]);
            double co = cos(ang) * af, si = sin(ang) * af, a0 = *a;
            double t = (tol[h * hd + d0] + tol[h * hd + d1]) * fabs(af) + 4.9e-4 * (fabs(*a) + fabs(*b)) * fabs(af);
            *a = a0 * co - *b * si, *b = *b * co + a0 * si;
            tol[h * hd + d0] = tol[h * hd + d1] = t;
        }
    float *got[3][2];
    const int64_t sizes[3] = {Hq * hd, cn, cn};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 2; i++) {
            got[k][i] = malloc((size_t)sizes[k] * sizeof(float));
            MUST(wgt_tensor_to_host(k == 0 ? q[i] : k == 1 ? kc[i] : vc[i], got[k][i], (size_t)sizes[k] * sizeof(float)));
        }
    int bad = 0;
    double worst = 0, mag = 0;
    for (int k = 0; k < 3; k++)
        for (int64_t e = 0; e < sizes[k]; e++) {
            double g = got[k][0][e], ref, t;
            int64_t head, d;
            if (k == 0) head = e / hd, d = e % hd;
            else {
                int64_t hh = e / (T * hd), row = e / hd % T;
                d = e % hd;
                head = row == pos0 ? (k == 1 ? Hq : Hq + Hkv) + hh : -1;
            }
            if (head < 0) ref = cache0[(k == 2 ? cn : 0) + e], t = 0; /* untouched */
            else ref = val[head * hd + d], t = tol[head * hd + d];
            test_compared++;
            if (!(fabs(g - ref) <= t) && bad++ < 3)
                CHECK(0, "%s: %s element %lld: got %.9g, expected %.9g (tolerance %.3g)", what,
                      k == 0 ? "q" : k == 1 ? "k cache" : "v cache", (long long)e, g, ref, t);
            worst = fmax(worst, fabs(g - got[k][1][e])), mag = fmax(mag, fabs((double)got[k][1][e]));
        }
    CHECK(bad == 0, "%s: %d values off the oracle", what, bad);
    CHECK(worst <= 1e-5 * (1 + mag), "%s: differs from the two dispatches by %g (largest %g)", what, worst, mag);
    for (int k = 0; k < 3; k++) free(got[k][0]), free(got[k][1]);
    free(val), free(tol);
out:
    for (int i = 0; i < 2; i++) wgt_tensor_free(q[i]), wgt_tensor_free(kc[i]), wgt_tensor_free(vc[i]);
    wgt_tensor_free(tx), wgt_tensor_free(tg), wgt_tensor_free(tw), wgt_tensor_free(tb);
    free(cache0), free_case(&c), free(qw.blocks), free(qw.deq);
}

/* The fused kernel captured in a graph at position 6 and replayed at position 4 (the decode step's
 * position scalar: the rotation's angle and the cache rows follow it) must write what an eager
 * call at position 4 writes, bit for bit, and leave every other cache row alone. */
static void qkv_graph_case(wgt_context *ctx)
{
    const int64_t Hq = 4, Hkv = 2, hd = 16, K = 1056, C = (Hq + 2 * Hkv) * hd, T = 9;
    test_qweight qw;
    test_qweight_make(&qw, WGT_FTYPE_Q8_0, C, K);
    qcase c = make_case(&qw, WGT_PRO_RMS_NORM, 1, 1, 0);
    wgt_rope_params rp = {0};
    rp.theta = 10000;
    int64_t cn = Hkv * T * hd, cs[3] = {Hkv, T, hd};
    float *cache0 = test_random_f32(2 * cn, -9, 9);
    wgt_tensor *tx, *tg, *tw, *tb, *kc[2], *vc[2], *k0, *v0, *q[2] = {NULL, NULL};
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){1, K}, c.x, &tx));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, &K, c.gamma, &tg));
    MUST(wgt_qweight_upload(ctx, qw.type, C, K, qw.blocks, &tw));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, &C, c.bias, &tb));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 3, cs, cache0, &k0));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 3, cs, cache0 + cn, &v0));
    for (int i = 0; i < 2; i++) {
        MUST(wgt_tensor_from_host(ctx, WGT_F32, 3, cs, cache0, &kc[i]));
        MUST(wgt_tensor_from_host(ctx, WGT_F32, 3, cs, cache0 + cn, &vc[i]));
    }
    setenv("WGT_QLINEAR_QKV", "1", 1);
    MUST(wgt_fused_qkv_rope_qcache(tx, tg, EPS, tw, qw.type, tb, Hq, Hkv, hd, 4, hd, 0, &rp, kc[0], vc[0], &q[0]));
    wgt_graph *g = NULL;
    int pos;
    MUST(wgt_graph_begin(ctx, 0, NULL));
    MUST(wgt_graph_scalar(ctx, "pos", WGT_GRAPH_POSITION, 6, &pos));
    wgt_status st = wgt_fused_qkv_rope_qcache(tx, tg, EPS, tw, qw.type, tb, Hq, Hkv, hd, 6, hd, 0, &rp, kc[1], vc[1], &q[1]);
    MUST(wgt_graph_end(ctx, &g));
    unsetenv("WGT_QLINEAR_QKV");
    CHECK(st == WGT_OK, "qkv graph: the captured call: %s", wgt_errmsg());
    if (!st) {
        MUST(wgt_tensor_assign(kc[1], k0)); /* the capture ran at 6: back to the start */
        MUST(wgt_tensor_assign(vc[1], v0));
        MUST(wgt_graph_set_scalar(g, pos, 4));
        MUST(wgt_graph_replay(g, 0, NULL));
        const int64_t sizes[3] = {Hq * hd, cn, cn};
        const char *names[3] = {"q", "k cache", "v cache"};
        for (int k = 0; k < 3; k++) {
            float *a = malloc((size_t)sizes[k] * sizeof(float)), *b = malloc((size_t)sizes[k] * sizeof(float));
            wgt_tensor *ta = k == 0 ? q[0] : k == 1 ? kc[0] : vc[0], *tb2 = k == 0 ? q[1] : k == 1 ? kc[1] : vc[1];
            MUST(wgt_tensor_to_host(ta, a, (size_t)sizes[k] * sizeof(float)));
            MUST(wgt_tensor_to_host(tb2, b, (size_t)sizes[k] * sizeof(float)));
            int64_t bad = 0;
            for (int64_t e = 0; e < sizes[k]; e++) bad += memcmp(&a[e], &b[e], sizeof(float)) != 0;
            test_compared += sizes[k];
            CHECK(bad == 0, "qkv graph replayed at position 4: %lld of %lld %s values differ from the eager call",
                  (long long)bad, (long long)sizes[k], names[k]);
            free(a), free(b);
        }
    }
    wgt_graph_free(g);
    for (int i = 0; i < 2; i++) wgt_tensor_free(q[i]), wgt_tensor_free(kc[i]), wgt_tensor_free(vc[i]);
    wgt_tensor_free(tx), wgt_tensor_free(tg), wgt_tensor_free(tw), wgt_tensor_free(tb), wgt_tensor_free(k0);
    wgt_tensor_free(v0);
    free(cache0), free_case(&c), free(qw.blocks), free(qw.deq);
}

/* The fused q/k/v kernel in each format, with and without bias and rotation choices, the lane
 * counts WGT_QLINEAR_QKV=1:N forces, the barrier-free entry, a Qwen2.5-0.5B-shaped layer, and its
 * replay in a graph at another position. */
static void test_qkv(wgt_context *ctx, int gpu)
{
    int one = gpu ? 1 : -1;
    qkv_case(ctx, "1", WGT_FTYPE_Q8_0, 4, 2, 16, 1056, 16, 0, 1, WGT_ROPE_NONE, one);
    qkv_case(ctx, "1", WGT_FTYPE_Q4_0, 4, 2, 16, 1056, 8, 1, 2, WGT_ROPE_LLAMA3, one);
    qkv_case(ctx, "1", WGT_FTYPE_Q4_K, 4, 1, 16, 512, 16, 1, 0, WGT_ROPE_YARN, one);
    qkv_case(ctx, "1", WGT_FTYPE_Q6_K, 2, 2, 16, 768, 12, 0, 1, WGT_ROPE_NONE, one); /* 630-byte rows */
    qkv_case(ctx, "1:1", WGT_FTYPE_Q8_0, 4, 2, 16, 1056, 16, 0, 1, WGT_ROPE_NONE, one);
    qkv_case(ctx, "1:8", WGT_FTYPE_Q4_0, 4, 2, 16, 2080, 16, 0, 0, WGT_ROPE_NONE, one);
    qkv_case(ctx, "1", WGT_FTYPE_Q8_0, 14, 2, 64, 896, 64, 0, 1, WGT_ROPE_NONE, one); /* Qwen2.5-0.5B */
    if (gpu) { /* the barrier-free entry point */
        int was = wgt_gpu_avoid_barriers(ctx);
        wgt_gpu_test_avoid_barriers(ctx, 1);
        qkv_case(ctx, "1", WGT_FTYPE_Q8_0, 4, 2, 16, 1056, 16, 0, 1, WGT_ROPE_NONE, 1);
        wgt_gpu_test_avoid_barriers(ctx, was);
    }
    qkv_case(ctx, "", WGT_FTYPE_Q8_0, 4, 2, 16, 1056, 16, 0, 1, WGT_ROPE_NONE, one); /* unset: the default */
    qkv_case(ctx, "0", WGT_FTYPE_Q8_0, 4, 2, 16, 1056, 16, 0, 1, WGT_ROPE_NONE, gpu ? 2 : -1); /* two dispatches */
    if (gpu) qkv_graph_case(ctx);
    if (!gpu) return;
    /* the entry `blocks` (WGT_QLINEAR_QKV_BLOCKS, Q8_0 / Q4_0; the cases above ran the default): the
     * op's workgroups, and forced workgroups of 64 and 256 (odd 33-block and 65-block rows, half of
     * them 2 bytes past a word; 64 and 96 pairs leave partial workgroups), the Qwen2.5-0.5B-shaped and
     * a Llama-3.2-1B-shaped layer at the op's workgroups */
    const char *qb[] = {"1", "1:64", "1:256"};
    for (int i = 0; i < 3; i++) {
        setenv("WGT_QLINEAR_QKV_BLOCKS", qb[i], 1);
        qkv_case(ctx, "1", WGT_FTYPE_Q8_0, 4, 2, 16, 1056, 16, 0, 1, WGT_ROPE_NONE, 1);
        qkv_case(ctx, "1", WGT_FTYPE_Q4_0, 4, 2, 16, 1056, 8, 1, 2, WGT_ROPE_LLAMA3, 1);
        qkv_case(ctx, "1", WGT_FTYPE_Q4_0, 6, 3, 16, 2080, 16, 0, 0, WGT_ROPE_NONE, 1);
    }
    setenv("WGT_QLINEAR_QKV_BLOCKS", "1", 1);
    qkv_case(ctx, "1", WGT_FTYPE_Q8_0, 14, 2, 64, 896, 64, 0, 1, WGT_ROPE_NONE, 1);   /* Qwen2.5-0.5B */
    qkv_case(ctx, "1", WGT_FTYPE_Q4_0, 32, 8, 64, 2048, 64, 0, 0, WGT_ROPE_LLAMA3, 1); /* Llama-3.2-1B */
    unsetenv("WGT_QLINEAR_QKV_BLOCKS");
}

/* The entry `blocks` (WGT_QLINEAR_BLOCKS: a lane per whole Q8_0 / Q4_0 block): every case of
 * test_all and test_views with the entry `main` (0, whichever is the default), the op's choice of
 * lanes a row and with 32, 128 and 256 forced,
 * SwiGLU staged in workgroup memory (1), every prologue per row (2) or staged (3) (Q4_0's 594-byte rows start 2 bytes past
 * a word on every other row; the row narrow starts 11 rows in). Q4_K and Q6_K keep the entry
 * `main` under the setting. */
static void test_blocks(wgt_context *ctx)
{
    const char *settings[] = {"0", "1", "1:32", "1:128", "1:256", "2", "2:64", "3", "3:128"};
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        setenv("WGT_QLINEAR_BLOCKS", settings[i], 1);
        test_all(ctx, 1);
        test_views(ctx, 1);
    }
    /* rows of 170 blocks: at 32 lanes a row, a step of four blocks a lane and a partial second;
     * SwiGLU's input (23 KiB staged) past OpenGL's 16 KiB there */
    const wgt_ftype types[2] = {WGT_FTYPE_Q8_0, WGT_FTYPE_Q4_0};
    for (int i = 0; i < 2; i++) {
        test_qweight q;
        test_qweight_make(&q, types[i], 19, 5440);
        wgt_tensor *w;
        MUST(wgt_qweight_upload(ctx, q.type, q.rows, q.cols, q.blocks, &w));
        for (int s = 0; s < 3; s++) {
            setenv("WGT_QLINEAR_BLOCKS", s == 0 ? "1:32" : s == 1 ? "3:32" : "2:64", 1);
            for (int pro = WGT_PRO_NONE; pro <= WGT_PRO_SWIGLU; pro++) {
                qcase c = make_case(&q, (wgt_fused_prologue)pro, 1, 1, pro == WGT_PRO_SWIGLU);
                char what[128];
                snprintf(what, sizeof what, "%s [19, 5440] %s, WGT_QLINEAR_BLOCKS=%s", wgt_ftype_name(q.type),
                         pro_name(c.pro), getenv("WGT_QLINEAR_BLOCKS"));
                run_case(ctx, what, &q, w, &c, 0, 0, 1);
                free_case(&c);
            }
        }
        wgt_tensor_free(w);
        free(q.blocks);
        free(q.deq);
    }
    unsetenv("WGT_QLINEAR_BLOCKS");
}

/* The entry `rows` (WGT_QLINEAR_ROWS: RB rows a group of lanes, x staged): every case of test_all
 * and test_views with RB = 1 .. 4 at the op's lanes and with 64 / 256 forced (37 and 45 rows leave
 * a partial group at every RB; 58 units at 32 lanes a lane's second block on some lanes), with the
 * workgroups capped (R:T:W: 1 to 3 workgroups taking every step of rows after one staging), the
 * op's own choice (auto: RB = 2) on 8450 Q8_0 rows and 4101 Q4_0 rows (a partial last group), RB = 4
 * on 8450 rows with 7 workgroups (2113 groups of 4, the last of 2), and rows of 170 blocks (a block
 * and a partial second a lane at 128 lanes), auto's 64 lanes on 64-block rows, and a setting with
 * its own part for SwiGLU (",swiglu=") and for products of more columns than rows (",down="). Q4_K
 * and Q6_K keep the entry `main` under the setting. */
static void test_rows(wgt_context *ctx)
{
    const char *settings[] = {"0", "1", "2", "3", "4", "2:64", "4:256", "4:32:2", "3:64:3", "1:128:1"};
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        setenv("WGT_QLINEAR_ROWS", settings[i], 1);
        test_all(ctx, 1);
        test_views(ctx, 1);
    }
    const struct { wgt_ftype t; int64_t rows, cols; const char *set; } ws[] = {
        {WGT_FTYPE_Q8_0, 8450, 96, "auto"}, {WGT_FTYPE_Q4_0, 4101, 160, "auto"},
        {WGT_FTYPE_Q8_0, 19, 5440, "3:128"}, {WGT_FTYPE_Q4_0, 19, 5440, "4:32"}, {WGT_FTYPE_Q8_0, 8450, 96, "4:64:7"},
        {WGT_FTYPE_Q4_0, 301, 2048, "auto"}, /* 64 blocks a row: auto's 64 lanes a pair */
        {WGT_FTYPE_Q8_0, 131, 4096, "2:32,swiglu=4:64:3"}, /* SwiGLU's own setting */
        {WGT_FTYPE_Q4_0, 19, 5440, "1,down=3:64:2,swiglu=4:32:1"}, /* more columns than rows: down's */
    };
    for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) {
        test_qweight q;
        test_qweight_make(&q, ws[i].t, ws[i].rows, ws[i].cols);
        wgt_tensor *w;
        MUST(wgt_qweight_upload(ctx, q.type, q.rows, q.cols, q.blocks, &w));
        setenv("WGT_QLINEAR_ROWS", ws[i].set, 1);
        for (int pro = WGT_PRO_NONE; pro <= WGT_PRO_SWIGLU; pro++) {
            qcase c = make_case(&q, (wgt_fused_prologue)pro, 1, 1, pro != WGT_PRO_NONE);
            char what[128];
            snprintf(what, sizeof what, "%s [%lld, %lld] %s, WGT_QLINEAR_ROWS=%s", wgt_ftype_name(q.type),
                     (long long)q.rows, (long long)q.cols, pro_name(c.pro), ws[i].set);
            run_case(ctx, what, &q, w, &c, 0, 0, 1);
            free_case(&c);
        }
        wgt_tensor_free(w);
        free(q.blocks);
        free(q.deq);
    }
    unsetenv("WGT_QLINEAR_ROWS");
}

/* wgt_fused_qlinear_glu: silu(gate) * up of the product's halves (gate rows 0 .. H - 1, up rows H ..
 * 2H - 1) against the oracle's two rows, prologues none and RMSNorm, with and without a bias, through
 * the entry `rows` (one dispatch) at RB 2 and 4 (asked 1 and 3 give 2), forced lanes, capped grids
 * (workgroups taking several steps), H odd (a partial last group of RB 4), rows of 170 blocks;
 * Q4_K and WGT_QLINEAR_ROWS=0 compose the product and wgt_swiglu; an odd row count is refused. */
static void glu_case(wgt_context *ctx, const char *set, wgt_ftype type, int64_t H, int64_t K, int fast)
{
    test_qweight q;
    test_qweight_make(&q, type, 2 * H, K);
    wgt_tensor *w;
    MUST(wgt_qweight_upload(ctx, q.type, q.rows, q.cols, q.blocks, &w));
    setenv("WGT_QLINEAR_ROWS", set, 1);
    for (int pro = WGT_PRO_NONE; pro <= WGT_PRO_RMS_NORM; pro++)
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            qcase c = make_case(&q, (wgt_fused_prologue)pro, 1, with_bias, 0);
            char what[160];
            snprintf(what, sizeof what, "glu %s [2 x %lld, %lld] %s%s, WGT_QLINEAR_ROWS=%s", wgt_ftype_name(type),
                     (long long)H, (long long)K, pro_name(c.pro), with_bias ? " + bias" : "", set);
            wgt_tensor *tx, *tg = NULL, *tb = NULL, *y = NULL;
            MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){1, K}, c.x, &tx));
            if (c.gamma) MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, &K, c.gamma, &tg));
            if (c.bias) MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, (int64_t[]){2 * H}, c.bias, &tb));
            wgt_memory_stats before, after;
            MUST(wgt_context_memory_stats(ctx, &before));
            wgt_status st = wgt_fused_qlinear_glu(tx, c.pro, tg, EPS, w, type, tb, &y);
            MUST(wgt_context_memory_stats(ctx, &after));
            CHECK(st == WGT_OK, "%s: %s", what, wgt_errmsg());
            if (!st) {
                if (fast)
                    CHECK(after.dispatches - before.dispatches == 1, "%s: %llu dispatches, not 1", what,
                          (unsigned long long)(after.dispatches - before.dispatches));
                CHECK(wgt_tensor_ndim(y) == 2 && wgt_tensor_dim(y, 1) == H && wgt_tensor_dtype(y) == WGT_F32,
                      "%s: result shape/dtype", what);
                float *got = malloc((size_t)H * sizeof(float));
                MUST(wgt_tensor_to_host(y, got, (size_t)H * sizeof(float)));
                int bad = 0;
                for (int64_t j = 0; j < H; j++) {
                    double a, ta, b, tb_, u = 1.0 / 16777216.0;
                    oracle(&c, &q, 0, j, &a, &ta);
                    oracle(&c, &q, 0, H + j, &b, &tb_);
                    double sa = a / (1 + exp(-a)), v = sa * b;
                    /* silu's slope is within [-0.1, 1.1]; its exp and division a few u */
                    double tol = 1.1 * ta * (fabs(b) + tb_) + fabs(sa) * tb_ + 16 * u * fabs(v) + 1e-30;
                    test_compared++;
                    if (!(fabs(got[j] - v) <= tol) && bad++ < 3)
                        CHECK(0, "%s: output %lld: got %.9g, expected %.9g (tolerance %.3g)", what, (long long)j,
                              got[j], v, tol);
                }
                CHECK(bad == 0, "%s: %d of %lld values off", what, bad, (long long)H);
                free(got);
            }
            wgt_tensor_free(y);
            wgt_tensor_free(tx);
            wgt_tensor_free(tg);
            wgt_tensor_free(tb);
            free_case(&c);
        }
    unsetenv("WGT_QLINEAR_ROWS");
    wgt_tensor_free(w);
    free(q.blocks);
    free(q.deq);
}

static void test_glu(wgt_context *ctx, int gpu)
{
    const struct { const char *set; wgt_ftype t; int64_t H, K; int fast; } cs[] = {
        {"auto", WGT_FTYPE_Q8_0, 37, 1856, 1}, {"auto", WGT_FTYPE_Q4_0, 45, 1056, 1},
        {"1", WGT_FTYPE_Q4_0, 23, 2048, 1},    {"3:64", WGT_FTYPE_Q8_0, 21, 1088, 1},
        {"4", WGT_FTYPE_Q4_0, 45, 1056, 1},    {"4:32:2", WGT_FTYPE_Q8_0, 37, 1856, 1},
        {"2:128:3", WGT_FTYPE_Q4_0, 301, 2048, 1}, {"auto:64", WGT_FTYPE_Q4_0, 131, 2048, 1},
        {"auto", WGT_FTYPE_Q8_0, 19, 5440, 0}, /* one pass where its 24 KiB of x fit (not OpenGL) */
        {"0", WGT_FTYPE_Q8_0, 37, 1856, 0},
        {"auto", WGT_FTYPE_Q4_K, 19, 2048, 0},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
        glu_case(ctx, cs[i].set, cs[i].t, cs[i].H, cs[i].K, gpu && cs[i].fast);
    /* refusals: an odd row count, a SwiGLU prologue */
    test_qweight q;
    test_qweight_make(&q, WGT_FTYPE_Q8_0, 7, 64);
    wgt_tensor *w, *tx, *y = NULL;
    MUST(wgt_qweight_upload(ctx, q.type, q.rows, q.cols, q.blocks, &w));
    MUST(wgt_tensor_zeros(ctx, WGT_F32, 2, (int64_t[]){1, 64}, &tx));
    CHECK(wgt_fused_qlinear_glu(tx, WGT_PRO_NONE, NULL, EPS, w, q.type, NULL, &y) == WGT_ERR_SHAPE && !y,
          "glu: an odd row count refused");
    CHECK(wgt_fused_qlinear_glu(tx, WGT_PRO_SWIGLU, NULL, EPS, w, q.type, NULL, &y) == WGT_ERR_INVALID_ARGUMENT && !y,
          "glu: a SwiGLU prologue refused");
    wgt_tensor_free(tx);
    wgt_tensor_free(w);
    free(q.blocks);
    free(q.deq);
}

int main(void)
{
    wgt_context *ctx;
    MUST(wgt_context_create(NULL, &ctx));
    test_all(ctx, 1);
    test_views(ctx, 1);
    test_qkv(ctx, 1);
    test_blocks(ctx);
    test_rows(ctx);
    test_glu(ctx, 1);
    int64_t gpu_compared = test_compared;
    CHECK(gpu_compared > 2500, "only %lld values compared", (long long)gpu_compared);
    uint32_t wg = op_workgroup_size(ctx);
    wgt_context_free(ctx);

    /* the spec's default limits: where they lower the workgroup size, the kernel's variant for it */
    wgt_context_options dl = {0};
    dl.default_limits = 1;
    MUST(wgt_context_create(&dl, &ctx));
    if (op_workgroup_size(ctx) < wg) {
        test_compared = 0;
        test_all(ctx, 1);
        test_views(ctx, 1);
        test_blocks(ctx);
        test_rows(ctx);
        test_glu(ctx, 1);
        printf("default limits (%u invocations per workgroup): %lld values compared\n", op_workgroup_size(ctx),
               (long long)test_compared);
    } else
        printf("default limits: the same %u invocations per workgroup, no second pass\n", wg);
    wgt_context_free(ctx);

    /* the CPU-reference context: the composition everywhere */
    wgt_context_options o = {0};
    o.backend = WGT_BACKEND_CPU;
    MUST(wgt_context_create(&o, &ctx));
    test_compared = 0;
    test_views(ctx, 0);
    test_qkv(ctx, 0);
    test_glu(ctx, 0);
    CHECK(test_compared > 40, "cpu context: only %lld values compared", (long long)test_compared);
    wgt_context_free(ctx);
    printf("%lld GPU values compared\n", (long long)gpu_compared);
    return test_finish("test_gpu_qlinear_fused");
}
