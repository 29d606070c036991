/* wgt_moe_gate_up / wgt_moe_down (one token through the chosen experts of stacked weights,
 * src/ops/qlinear_moe.c) against a double oracle: random f32 weights quantised with wgt_quantize
 * (Q8_0, Q4_0, Q4_K, Q6_K, and stored as f32, f16, bf16) and dequantised with wgt_dequantize; SwiGLU, the chosen
 * experts' products and the routing weights in double on the host. The expert ids come from a
 * device tensor (unsorted, the last expert among them, an out-of-range id clamped to the last
 * expert as the kernel documents), D over one and several 1024-column steps with a partial last
 * one, K F outputs not a multiple of the rows per workgroup, Q6_K rows at unaligned bytes; each
 * op is one dispatch on a GPU context. Many tokens: wgt_moe_groups against a host counting sort,
 * the grouped products against the same oracle (an expert's pairs over several tiles, an expert
 * chosen by none, partial tiles of rows). The CPU-reference context runs the host reference; the
 * spec's default limits run the kernels' 128-invocation variant where they lower it. */
#include <math.h>
#include <string.h>

#include "ops/api.h"
#include "ops/ops.h"
#include "ops/qlinear_moe.h"
#include "support/check.h"
#include "support/linear.h"

static int64_t compared;

/* A [rows, cols] weight: its blocks (or f32 / f16 / bf16 values) on the device and their values. */
typedef struct qw {
    wgt_tensor *t;
    float *deq;
} qw;

static void make_weight(wgt_context *ctx, qw *q, wgt_ftype type, int64_t rows, int64_t cols)
{
    test_qweight w;
    test_qweight_make(&w, type, rows, cols);
    wgt_dtype dt = type == WGT_FTYPE_F32 ? WGT_F32 : type == WGT_FTYPE_F16 ? WGT_F16 : type == WGT_FTYPE_BF16 ? WGT_BF16 : WGT_U8;
    if (dt != WGT_U8) MUST(wgt_tensor_from_host(ctx, dt, 2, (int64_t[]){rows, cols}, w.blocks, &q->t));
    else MUST(wgt_qweight_upload(ctx, type, rows, cols, w.blocks, &q->t));
    q->deq = w.deq; /* kept; the blocks are on the device */
    free(w.blocks);
}

static uint64_t dispatches(wgt_context *ctx)
{
    wgt_memory_stats s;
    MUST(wgt_context_memory_stats(ctx, &s));
    return s.dispatches;
}

/* Tolerance of an f32 sum of n products against double (any order: n u sum|products|), with
 * Q4_K's possible FMA in its decoder (2 u max|w| sum|x|, as test_gpu_qlinear_fused). */
static double bound(int64_t n, double mag, double maxw, double xs, double v)
{
    const double u = 1.0 / 16777216.0;
    return (double)(n + 16) * u * mag + 2 * u * maxw * xs + 4 * u * fabs(v) + 1e-30;
}

/* One case: E experts of F, hidden D, the K ids given (ids[k] may be E: clamped to E - 1). */
static void run_case(wgt_context *ctx, int gpu, wgt_ftype gu_type, wgt_ftype down_type, int64_t E, int64_t F,
                     int64_t D, int64_t K, const int32_t *ids)
{
    char what[160];
    snprintf(what, sizeof what, "gate/up %s, down %s: E %lld F %lld D %lld K %lld", wgt_ftype_name(gu_type),
             wgt_ftype_name(down_type), (long long)E, (long long)F, (long long)D, (long long)K);
    qw gu, dn;
    make_weight(ctx, &gu, gu_type, 2 * E * F, D);
    make_weight(ctx, &dn, down_type, D, E * F);
    float *x = test_random_f32(D, -2, 2), *wts = test_random_f32(K, 0, 1);
    wgt_tensor *tx, *tids, *twts, *act = NULL, *y = NULL;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){1, D}, x, &tx));
    MUST(wgt_tensor_from_host(ctx, WGT_I32, 2, (int64_t[]){1, K}, ids, &tids));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){1, K}, wts, &twts));
    CHECK(wgt_moe_q_fits(ctx, gu.t, gu_type, dn.t, down_type, E, F), "%s: the kernels take it", what);

    /* gate/up: act[k F + j] = silu(g) u */
    uint64_t d0 = dispatches(ctx);
    wgt_status st = wgt_moe_gate_up(tx, gu.t, gu_type, E, F, tids, &act);
    CHECK(st == WGT_OK, "%s: gate_up: %s", what, wgt_errmsg());
    if (gpu && !st) CHECK(dispatches(ctx) - d0 == 1, "%s: gate_up in %llu dispatches", what,
                          (unsigned long long)(dispatches(ctx) - d0));
    float *got = malloc((size_t)(K * F > D ? K * F : D) * sizeof(float));
    double *want_act = malloc((size_t)(K * F) * sizeof(double));
    int bad = 0;
    if (!st) {
        CHECK(wgt_tensor_numel(act) == K * F && wgt_tensor_dtype(act) == WGT_F32, "%s: act shape", what);
        MUST(wgt_tensor_to_host(act, got, (size_t)(K * F) * sizeof(float)));
        for (int64_t k = 0; k < K; k++) {
            int64_t e = ids[k] >= E ? E - 1 : ids[k];
            for (int64_t j = 0; j < F; j++) {
                const float *wg = gu.deq + (e * F + j) * D, *wu = gu.deq + (E * F + e * F + j) * D;
                double g = 0, u = 0, mg = 0, mu = 0, maxw = 0, xs = 0;
                for (int64_t i = 0; i < D; i++) {
                    g += (double)wg[i] * x[i], u += (double)wu[i] * x[i];
                    mg += fabs((double)wg[i] * x[i]), mu += fabs((double)wu[i] * x[i]);
                    maxw = fmax(maxw, fmax(fabs(wg[i]), fabs(wu[i]))), xs += fabs(x[i]);
                }
                double s = g / (1 + exp(-g)), v = s * u;
                /* the product's error: each factor's (silu's slope is at most 1.1), plus exp's rounding */
                double tol = fabs(u) * 1.1 * bound(D, mg, maxw, xs, g) + fabs(s) * bound(D, mu, maxw, xs, u) +
                             16.0 / 16777216.0 * fabs(v);
                want_act[k * F + j] = v;
                compared++;
                double gv = got[k * F + j];
                if (!(fabs(gv - v) <= tol) && bad++ < 3)
                    CHECK(0, "%s: act[%lld]: got %.9g, expected %.9g (tolerance %.3g)", what, (long long)(k * F + j), gv,
                          v, tol);
            }
        }
        CHECK(bad == 0, "%s: gate_up: %d of %lld values off", what, bad, (long long)(K * F));
    }

    /* down, from the kernel's own act (so the oracle checks this op alone) */
    bad = 0;
    d0 = dispatches(ctx);
    st = act ? wgt_moe_down(act, dn.t, down_type, E, F, tids, twts, &y) : WGT_ERR_INVALID_ARGUMENT;
    CHECK(st == WGT_OK, "%s: down: %s", what, wgt_errmsg());
    if (gpu && !st) CHECK(dispatches(ctx) - d0 == 1, "%s: down in %llu dispatches", what,
                          (unsigned long long)(dispatches(ctx) - d0));
    if (!st) {
        float *a = malloc((size_t)(K * F) * sizeof(float));
        MUST(wgt_tensor_to_host(act, a, (size_t)(K * F) * sizeof(float)));
        CHECK(wgt_tensor_ndim(y) == 2 && wgt_tensor_dim(y, 0) == 1 && wgt_tensor_dim(y, 1) == D, "%s: y shape", what);
        MUST(wgt_tensor_to_host(y, got, (size_t)D * sizeof(float)));
        for (int64_t d = 0; d < D; d++) {
            double s = 0, mag = 0, maxw = 0, xs = 0;
            for (int64_t k = 0; k < K; k++) {
                int64_t e = ids[k] >= E ? E - 1 : ids[k];
                const float *r = dn.deq + d * E * F + e * F;
                for (int64_t j = 0; j < F; j++) {
                    double pr = (double)wts[k] * r[j] * a[k * F + j];
                    s += pr, mag += fabs(pr), maxw = fmax(maxw, fabs(r[j])), xs += fabs((double)wts[k] * a[k * F + j]);
                }
            }
            double tol = bound(K * F, mag, maxw, xs, s) + 2.0 / 16777216.0 * mag;
            compared++;
            if (!(fabs(got[d] - s) <= tol) && bad++ < 3)
                CHECK(0, "%s: y[%lld]: got %.9g, expected %.9g (tolerance %.3g)", what, (long long)d, got[d], s, tol);
        }
        CHECK(bad == 0, "%s: down: %d of %lld values off", what, bad, (long long)D);
        free(a);
    }
    free(want_act);
    free(got);
    free(x), free(wts);
    free(gu.deq), free(dn.deq);
    wgt_tensor_free(gu.t), wgt_tensor_free(dn.t);
    wgt_tensor_free(tx), wgt_tensor_free(tids), wgt_tensor_free(twts);
    wgt_tensor_free(act), wgt_tensor_free(y);
}

static void run_grouped(wgt_context *ctx, int gpu, wgt_ftype gu_type, wgt_ftype down_type, int64_t E, int64_t F,
                        int64_t D, int64_t L, int64_t K);

static void test_all(wgt_context *ctx, int gpu)
{
    const int32_t two[2] = {3, 0}, three[3] = {1, 4, 2}, clamp[2] = {2, 9}, last[2] = {2, 1}, one[1] = {1};
    /* D 1056: one 1024-column step of a row's 32 lanes and a partial one; K F 2 x 96 = 192 outputs */
    run_case(ctx, gpu, WGT_FTYPE_Q8_0, WGT_FTYPE_Q8_0, 4, 96, 1056, 2, two);
    /* D 64 (the fixtures' size), F 32: one block per expert in down's rows */
    run_case(ctx, gpu, WGT_FTYPE_Q4_0, WGT_FTYPE_Q4_0, 5, 32, 64, 3, three);
    run_case(ctx, gpu, WGT_FTYPE_Q8_0, WGT_FTYPE_Q4_0, 3, 64, 96, 2, clamp); /* id 9 reads expert 2 */
    /* the K formats: F and D whole super-blocks; Q4_K gate/up with Q6_K down (a Q4_K_M file's mix) */
    run_case(ctx, gpu, WGT_FTYPE_Q4_K, WGT_FTYPE_Q6_K, 3, 256, 512, 2, last);
    run_case(ctx, gpu, WGT_FTYPE_Q6_K, WGT_FTYPE_Q4_K, 2, 256, 2304, 1, one);
    /* grouped: 70 tokens (expert 0's ~53 pairs over two tiles of 32 at 256 invocations), F not a
     * multiple of the 32 outputs of a gate/up tile, D not of the 64 rows of a down tile */
    run_grouped(ctx, gpu, WGT_FTYPE_Q8_0, WGT_FTYPE_Q4_0, 6, 96, 160, 70, 2);
    run_grouped(ctx, gpu, WGT_FTYPE_Q4_0, WGT_FTYPE_Q8_0, 5, 32, 64, 9, 3);
    run_grouped(ctx, gpu, WGT_FTYPE_Q4_K, WGT_FTYPE_Q6_K, 4, 256, 256, 5, 2);
    /* float experts, read as they are stored */
    run_case(ctx, gpu, WGT_FTYPE_F32, WGT_FTYPE_F16, 4, 96, 1056, 2, two);
    run_case(ctx, gpu, WGT_FTYPE_BF16, WGT_FTYPE_F32, 5, 32, 64, 3, three);
    run_case(ctx, gpu, WGT_FTYPE_F16, WGT_FTYPE_BF16, 3, 64, 96, 2, clamp);
    run_grouped(ctx, gpu, WGT_FTYPE_F16, WGT_FTYPE_F32, 6, 96, 160, 70, 2);
    run_grouped(ctx, gpu, WGT_FTYPE_F32, WGT_FTYPE_BF16, 5, 32, 64, 9, 3);
}

/* Many tokens, grouped by expert: L tokens each choosing K distinct experts (expert 0 by most, so
 * its pairs span several tiles of pairs; one expert by none), the groups against a host sort, act
 * and y against the double oracle. */
static void run_grouped(wgt_context *ctx, int gpu, wgt_ftype gu_type, wgt_ftype down_type, int64_t E, int64_t F,
                        int64_t D, int64_t L, int64_t K)
{
    char what[160];
    snprintf(what, sizeof what, "grouped: gate/up %s, down %s: E %lld F %lld D %lld L %lld K %lld",
             wgt_ftype_name(gu_type), wgt_ftype_name(down_type), (long long)E, (long long)F, (long long)D, (long long)L,
             (long long)K);
    qw gu, dn;
    make_weight(ctx, &gu, gu_type, 2 * E * F, D);
    make_weight(ctx, &dn, down_type, D, E * F);
    float *x = test_random_f32(L * D, -2, 2), *wts = test_random_f32(L * K, 0, 1);
    int32_t *ids = malloc((size_t)(L * K) * sizeof *ids);
    for (int64_t t = 0; t < L; t++) /* expert 0 for 3 tokens in 4, then distinct others; E - 1 never */
        for (int64_t k = 0; k < K; k++) ids[t * K + k] = (int32_t)(t % 4 && k == 0 ? 0 : 1 + (t * 7 + k * 3) % (E - 2));
    for (int64_t t = 0; t < L; t++) /* distinct within a token: the top k never repeats an expert */
        for (int64_t k = 1; k < K; k++)
            for (int64_t j = 0; j < k; j++)
                if (ids[t * K + k] == ids[t * K + j]) ids[t * K + k] = (int32_t)(1 + (ids[t * K + k]) % (E - 2));
    wgt_tensor *tx, *tids, *twts, *groups = NULL, *act = NULL, *y = NULL;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){L, D}, x, &tx));
    MUST(wgt_tensor_from_host(ctx, WGT_I32, 2, (int64_t[]){L, K}, ids, &tids));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){L, K}, wts, &twts));
    CHECK(wgt_moe_q_grouped_fits(ctx, gu.t, gu_type, dn.t, down_type, E, F, L, K), "%s: the kernels take it", what);
    wgt_status st = wgt_moe_groups(tids, E, &groups);
    CHECK(st == WGT_OK, "%s: groups: %s", what, wgt_errmsg());
    if (st) goto done;
    int32_t *grp = malloc((size_t)(E + 1 + L * K) * sizeof *grp);
    MUST(wgt_tensor_to_host(groups, grp, (size_t)(E + 1 + L * K) * sizeof *grp));
    int gbad = 0, pos = 0;
    for (int64_t e = 0; e < E; e++) { /* the stable order of a host counting sort */
        gbad += grp[e] != pos;
        for (int64_t q = 0; q < L * K; q++)
            if (ids[q] == e) gbad += grp[E + 1 + pos++] != q;
    }
    gbad += grp[E] != pos;
    CHECK(gbad == 0, "%s: %d entries of the groups differ from a host sort", what, gbad);
    free(grp);

    st = wgt_moe_gate_up_grouped(tx, gu.t, gu_type, E, F, K, groups, &act);
    CHECK(st == WGT_OK, "%s: gate_up: %s", what, wgt_errmsg());
    if (st) goto done;
    float *a = malloc((size_t)(L * K * F) * sizeof *a), *got = malloc((size_t)(L * D) * sizeof *got);
    MUST(wgt_tensor_to_host(act, a, (size_t)(L * K * F) * sizeof *a));
    int bad = 0;
    for (int64_t q = 0; q < L * K; q++)
        for (int64_t j = 0; j < F; j++) {
            int64_t e = ids[q];
            const float *wg = gu.deq + (e * F + j) * D, *wu = gu.deq + (E * F + e * F + j) * D, *xr = x + q / K * D;
            double g = 0, u = 0, mg = 0, mu = 0, maxw = 0, xs = 0;
            for (int64_t i = 0; i < D; i++) {
                g += (double)wg[i] * xr[i], u += (double)wu[i] * xr[i];
                mg += fabs((double)wg[i] * xr[i]), mu += fabs((double)wu[i] * xr[i]);
                maxw = fmax(maxw, fmax(fabs(wg[i]), fabs(wu[i]))), xs += fabs(xr[i]);
            }
            double sl = g / (1 + exp(-g)), v = sl * u;
            double tol = fabs(u) * 1.1 * bound(D, mg, maxw, xs, g) + fabs(sl) * bound(D, mu, maxw, xs, u) +
                         16.0 / 16777216.0 * fabs(v);
            compared++;
            if (!(fabs(a[q * F + j] - v) <= tol) && bad++ < 3)
                CHECK(0, "%s: act[%lld, %lld]: got %.9g, expected %.9g (tolerance %.3g)", what, (long long)q, (long long)j,
                      a[q * F + j], v, tol);
        }
    CHECK(bad == 0, "%s: gate_up: %d of %lld values off", what, bad, (long long)(L * K * F));
    st = wgt_moe_down_grouped(act, dn.t, down_type, E, F, K, groups, twts, &y);
    CHECK(st == WGT_OK, "%s: down: %s", what, wgt_errmsg());
    if (!st) {
        CHECK(wgt_tensor_ndim(y) == 2 && wgt_tensor_dim(y, 0) == L && wgt_tensor_dim(y, 1) == D, "%s: y shape", what);
        MUST(wgt_tensor_to_host(y, got, (size_t)(L * D) * sizeof *got));
        bad = 0;
        for (int64_t t = 0; t < L; t++)
            for (int64_t d = 0; d < D; d++) {
                double s = 0, mag = 0, maxw = 0, xs = 0;
                for (int64_t k = 0; k < K; k++) {
                    int64_t q = t * K + k;
                    const float *r = dn.deq + d * E * F + ids[q] * F;
                    for (int64_t j = 0; j < F; j++) {
                        double pr = (double)wts[q] * r[j] * a[q * F + j];
                        s += pr, mag += fabs(pr), maxw = fmax(maxw, fabs(r[j])), xs += fabs((double)wts[q] * a[q * F + j]);
                    }
                }
                double tol = bound(K * F, mag, maxw, xs, s) + 2.0 / 16777216.0 * mag;
                compared++;
                if (!(fabs(got[t * D + d] - s) <= tol) && bad++ < 3)
                    CHECK(0, "%s: y[%lld, %lld]: got %.9g, expected %.9g (tolerance %.3g)", what, (long long)t, (long long)d,
                          got[t * D + d], s, tol);
            }
        CHECK(bad == 0, "%s: down: %d of %lld values off", what, bad, (long long)(L * D));
    }
    (void)gpu;
    free(a), free(got);
done:
    free(x), free(wts), free(ids);
    free(gu.deq), free(dn.deq);
    wgt_tensor_free(gu.t), wgt_tensor_free(dn.t);
    wgt_tensor_free(tx), wgt_tensor_free(tids), wgt_tensor_free(twts);
    wgt_tensor_free(groups), wgt_tensor_free(act), wgt_tensor_free(y);
}

/* The refusals: ids of the wrong dtype or count, a weight of the wrong shape or dtype, an integer
 * format. */
static void test_refusals(wgt_context *ctx)
{
    qw gu;
    make_weight(ctx, &gu, WGT_FTYPE_Q8_0, 2 * 4 * 32, 64);
    wgt_tensor *tx, *tids, *tf, *act = NULL;
    MUST(wgt_tensor_zeros(ctx, WGT_F32, 2, (int64_t[]){1, 64}, &tx));
    MUST(wgt_tensor_zeros(ctx, WGT_I32, 1, (int64_t[]){5}, &tids));
    MUST(wgt_tensor_zeros(ctx, WGT_F32, 1, (int64_t[]){2}, &tf));
    CHECK(wgt_moe_gate_up(tx, gu.t, WGT_FTYPE_Q8_0, 4, 32, tids, &act) == WGT_ERR_SHAPE && !act, "5 ids of 4 experts refused");
    CHECK(wgt_moe_gate_up(tx, gu.t, WGT_FTYPE_Q8_0, 4, 32, tf, &act) == WGT_ERR_SHAPE && !act, "f32 ids refused");
    CHECK(wgt_moe_gate_up(tx, gu.t, WGT_FTYPE_Q8_0, 4, 64, tf, &act) == WGT_ERR_SHAPE && !act, "F past the rows refused");
    CHECK(wgt_moe_gate_up(tx, gu.t, WGT_FTYPE_I8, 4, 32, tids, &act) == WGT_ERR_DTYPE && !act, "an integer format refused");
    wgt_tensor *two_ids;
    MUST(wgt_tensor_zeros(ctx, WGT_I32, 1, (int64_t[]){2}, &two_ids));
    CHECK(wgt_moe_gate_up(tx, gu.t, WGT_FTYPE_F16, 4, 32, two_ids, &act) == WGT_ERR_SHAPE && !act &&
              strstr(wgt_errmsg(), "weight"), "u8 blocks named f16 refused: %s", wgt_errmsg());
    wgt_tensor_free(two_ids);
    CHECK(!wgt_moe_q_fits(ctx, gu.t, WGT_FTYPE_Q8_0, gu.t, WGT_FTYPE_Q8_0, 4, 32), "a down of gate/up's shape does not fit");
    wgt_tensor_free(tx), wgt_tensor_free(tids), wgt_tensor_free(tf);
    wgt_tensor_free(gu.t);
    free(gu.deq);
}

int main(void)
{
    test_rng = 0x2545F4914F6CDD1Dull; /* the sequence this test was written with */
    wgt_context *ctx;
    MUST(wgt_context_create(NULL, &ctx));
    test_all(ctx, 1);
    test_refusals(ctx);
    int64_t gpu_compared = compared;
    CHECK(gpu_compared > 2000, "only %lld values compared", (long long)gpu_compared);
    uint32_t wg = op_workgroup_size(ctx);
    wgt_context_free(ctx);

    wgt_context_options dl = {0};
    dl.default_limits = 1;
    MUST(wgt_context_create(&dl, &ctx));
    if (op_workgroup_size(ctx) < wg) {
        compared = 0;
        test_all(ctx, 1);
        printf("default limits (%u invocations per workgroup): %lld values compared\n", op_workgroup_size(ctx),
               (long long)compared);
    } else
        printf("default limits: the same %u invocations per workgroup, no second pass\n", wg);
    wgt_context_free(ctx);

    wgt_context_options o = {0};
    o.backend = WGT_BACKEND_CPU;
    MUST(wgt_context_create(&o, &ctx));
    compared = 0;
    test_all(ctx, 0);
    CHECK(compared > 1000, "cpu context: only %lld values compared", (long long)compared);
    wgt_context_free(ctx);
    printf("%lld GPU values compared\n", (long long)gpu_compared);
    return test_finish("test_gpu_qlinear_moe");
}
