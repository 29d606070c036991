/* Structured ops against PyTorch itself: reductions with corrections, scans with ties and NaN,
 * max/min with indices, norms, attention (GQA, additive and boolean masks, causal offset, a fully
 * masked row), indexing, padding, products. fixtures/torch_ops2.txt holds torch's results (float64
 * on f32 inputs), written by fixtures/make_torch_ops2_fixture.py where torch is installed.
 * Floats are compared within f32 precision (2e-6 relative + 1e-6), integers exactly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu.h"

#define MAXT 8

typedef struct ft {
    wgt_dtype dt;
    int nd;
    int64_t shape[WGT_MAX_DIMS];
    int64_t n;
    void *data;   /* float / int64_t / uint8_t as dt */
    double *want; /* expected float values (exact torch output) */
} ft;

static int read_tensor(FILE *f, ft *t)
{
    char kind[8];
    memset(t, 0, sizeof *t);
    if (fscanf(f, " %7s %d", kind, &t->nd) != 2 || t->nd < 0 || t->nd > WGT_MAX_DIMS) return 0;
    for (int d = 0; d < t->nd; d++)
        if (fscanf(f, "%lld", (long long *)&t->shape[d]) != 1) return 0;
    if (fscanf(f, "%lld", (long long *)&t->n) != 1 || t->n < 0 || t->n > 1000000) return 0;
    t->dt = !strcmp(kind, "f32") ? WGT_F32 : !strcmp(kind, "i64") ? WGT_I64 : WGT_BOOL;
    t->data = calloc((size_t)(t->n ? t->n : 1), 8);
    t->want = calloc((size_t)(t->n ? t->n : 1), sizeof(double));
    for (int64_t i = 0; i < t->n; i++) {
        char w[64];
        if (fscanf(f, "%63s", w) != 1) return 0;
        double v = strtod(w, NULL);
        t->want[i] = v;
        if (t->dt == WGT_F32) ((float *)t->data)[i] = (float)v;
        else if (t->dt == WGT_I64) ((int64_t *)t->data)[i] = strtoll(w, NULL, 10);
        else ((uint8_t *)t->data)[i] = v != 0;
    }
    return 1;
}

static wgt_cpu_tensor view(const ft *t) { return wgt_cpu_tensor_make(t->data, t->dt, t->nd, t->shape); }

/* A zeroed output like the expected tensor e. */
static wgt_cpu_tensor out_like(ft *e, void **buf)
{
    *buf = calloc((size_t)(e->n ? e->n : 1), 8);
    return wgt_cpu_tensor_make(*buf, e->dt, e->nd, e->shape);
}

static wgt_status run(const char *name, ft *in, wgt_cpu_tensor *o, int *known)
{
    wgt_cpu_tensor I[MAXT];
    for (int i = 0; i < MAXT; i++) I[i] = view(&in[i]);
    *known = 1;
#define IS(s) (!strcmp(name, s))
    if (IS("var_d02_c0")) return wgt_cpu_reduce(WGT_REDUCE_VAR, &I[0], 5, 0, 0, &o[0], NULL);
    if (IS("std_all_c1")) return wgt_cpu_reduce(WGT_REDUCE_STD, &I[0], 0, 0, 1, &o[0], NULL);
    if (IS("var_d1_c2_keep")) return wgt_cpu_reduce(WGT_REDUCE_VAR, &I[0], 2, 1, 2, &o[0], NULL);
    if (IS("logsumexp_d2")) return wgt_cpu_reduce(WGT_REDUCE_LOGSUMEXP, &I[0], 4, 0, 0, &o[0], NULL);
    if (IS("norm1_d02")) return wgt_cpu_reduce(WGT_REDUCE_NORM1, &I[0], 5, 0, 0, &o[0], NULL);
    if (IS("norm2_d1")) return wgt_cpu_reduce(WGT_REDUCE_NORM2, &I[0], 2, 0, 0, &o[0], NULL);
    if (IS("norminf_d0")) return wgt_cpu_reduce(WGT_REDUCE_NORM_INF, &I[0], 1, 0, 0, &o[0], NULL);
    if (IS("prod_d1_keep")) return wgt_cpu_reduce(WGT_REDUCE_PROD, &I[0], 2, 1, 0, &o[0], NULL);
    if (IS("amax_d02_keep")) return wgt_cpu_reduce(WGT_REDUCE_AMAX, &I[0], 5, 1, 0, &o[0], NULL);
    if (IS("cummax_ties_nan")) return wgt_cpu_scan(WGT_SCAN_CUMMAX, &I[0], 0, 0, 0, &o[0], &o[1]);
    if (IS("cummin_ties_nan")) return wgt_cpu_scan(WGT_SCAN_CUMMIN, &I[0], 0, 0, 0, &o[0], &o[1]);
    if (IS("cummax_d1")) return wgt_cpu_scan(WGT_SCAN_CUMMAX, &I[0], 1, 0, 0, &o[0], &o[1]);
    if (IS("cumprod_d1")) return wgt_cpu_scan(WGT_SCAN_CUMPROD, &I[0], 1, 0, 0, &o[0], NULL);
    if (IS("max_dim1_ties")) return wgt_cpu_reduce(WGT_REDUCE_AMAX, &I[0], 2, 0, 0, &o[0], &o[1]);
    if (IS("min_dim0_ties")) return wgt_cpu_reduce(WGT_REDUCE_AMIN, &I[0], 1, 0, 0, &o[0], &o[1]);
    if (IS("argmax_nan")) return wgt_cpu_reduce(WGT_REDUCE_ARGMAX, &I[0], 0, 0, 0, &o[0], NULL);
    if (IS("argmin_d1")) return wgt_cpu_reduce(WGT_REDUCE_ARGMIN, &I[0], 2, 0, 0, &o[0], NULL);
    if (IS("sdpa_gqa_mask") || IS("sdpa_masked_row")) {
        wgt_sdpa_params p = {0, 0, 0};
        return wgt_cpu_sdpa(&I[0], &I[1], &I[2], &I[3], &p, &o[0]);
    }
    if (IS("sdpa_gqa_causal2")) {
        wgt_sdpa_params p = {0.3, 1, 2};
        return wgt_cpu_sdpa(&I[0], &I[1], &I[2], NULL, &p, &o[0]);
    }
    if (IS("rms_norm")) return wgt_cpu_rms_norm(&I[0], 1, &I[1], 1e-6, &o[0]);
    if (IS("layer_norm_2d")) return wgt_cpu_layer_norm(&I[0], 2, &I[1], &I[2], 1e-5, &o[0], NULL, NULL);
    if (IS("group_norm_3")) return wgt_cpu_group_norm(&I[0], 3, &I[1], &I[2], 1e-5, &o[0]);
    if (IS("batch_norm_train")) { /* running stats update in place: start from copies of the inputs */
        wgt_cpu_copy(&I[1], &o[1]);
        wgt_cpu_copy(&I[2], &o[2]);
        return wgt_cpu_batch_norm(&I[0], &o[1], &o[2], &I[3], &I[4], 1, 0.1, 1e-5, &o[0]);
    }
    if (IS("batch_norm_eval")) return wgt_cpu_batch_norm(&I[0], &I[1], &I[2], &I[3], &I[4], 0, 0.1, 1e-5, &o[0]);
    if (IS("softmax_d0")) return wgt_cpu_softmax(&I[0], 0, &o[0]);
    if (IS("log_softmax_d1")) return wgt_cpu_log_softmax(&I[0], 1, &o[0]);
    if (IS("lerp")) return wgt_cpu_lerp(&I[0], &I[1], &I[2], &o[0]);
    if (IS("addcmul")) return wgt_cpu_addcmul(&I[0], &I[1], &I[2], 0.5, &o[0]);
    if (IS("addcdiv")) return wgt_cpu_addcdiv(&I[0], &I[1], &I[2], 0.5, &o[0]);
    if (IS("scatter_amax")) return wgt_cpu_scatter(&I[0], 0, &I[1], &I[2], WGT_SCATTER_AMAX, &o[0]);
    if (IS("scatter_amin")) return wgt_cpu_scatter(&I[0], 0, &I[1], &I[2], WGT_SCATTER_AMIN, &o[0]);
    if (IS("scatter_add")) return wgt_cpu_scatter_add(&I[0], 0, &I[1], &I[2], &o[0]);
    if (IS("gather_d1")) return wgt_cpu_gather(&I[0], 1, &I[1], &o[0]);
    if (IS("index_add_a2")) return wgt_cpu_index_add(&I[0], 0, &I[1], &I[2], 2, &o[0]);
    if (IS("index_select_d1")) return wgt_cpu_index_select(&I[0], 1, &I[1], &o[0]);
    if (IS("index_put_acc")) {
        const wgt_cpu_tensor *ix[2] = {&I[1], &I[2]};
        return wgt_cpu_index_put(&I[0], ix, 2, &I[3], 1, &o[0]);
    }
    if (IS("masked_fill")) return wgt_cpu_masked_fill(&I[0], &I[1], -2.5, &o[0]);
    if (IS("masked_select") || IS("nonzero")) {
        int64_t count = -1;
        wgt_status st = IS("nonzero") ? wgt_cpu_nonzero(&I[0], &o[0], &count)
                                      : wgt_cpu_masked_select(&I[0], &I[1], &o[0], &count);
        if (!st && count != o[0].l.shape[0]) {
            printf("FAIL %s: count %lld, torch %lld\n", name, (long long)count, (long long)o[0].l.shape[0]);
            return WGT_ERR_INTERNAL;
        }
        return st;
    }
    if (IS("embedding")) return wgt_cpu_embedding(&I[0], &I[1], &o[0]);
    if (IS("one_hot")) return wgt_cpu_one_hot(&I[0], 2, 0, 1, &o[0]);
    if (IS("tril_m1")) return wgt_cpu_tril(&I[0], -1, &o[0]);
    if (IS("triu_2")) return wgt_cpu_triu(&I[0], 2, &o[0]);
    if (!strncmp(name, "pad_", 4)) { /* torch (2, 1, 1, 2): last dim 2 before, 1 after; dim 1: 1, 2 */
        int64_t pads[6] = {0, 1, 2, 0, 2, 1};
        wgt_pad_mode m = IS("pad_reflect") ? WGT_PAD_REFLECT : IS("pad_replicate") ? WGT_PAD_REPLICATE
                       : IS("pad_circular") ? WGT_PAD_CIRCULAR : WGT_PAD_CONSTANT;
        return wgt_cpu_pad(&I[0], m, pads, 0.5, &o[0]);
    }
    if (IS("roll")) {
        int64_t shifts[2] = {1, -2};
        int dims[2] = {0, 2};
        return wgt_cpu_roll(&I[0], 2, shifts, dims, &o[0]);
    }
    if (IS("roll_flat")) {
        int64_t shift = 7;
        return wgt_cpu_roll(&I[0], 1, &shift, NULL, &o[0]);
    }
    if (IS("flip_d02")) return wgt_cpu_flip(&I[0], 5, &o[0]);
    if (IS("repeat")) return wgt_cpu_repeat(&I[0], &o[0]);
    if (IS("linspace")) return wgt_cpu_linspace(-1, 2, &o[0]);
    if (IS("arange")) return wgt_cpu_arange(-3, 0.75, &o[0]);
    if (IS("matmul_bcast") || IS("matmul_vec")) return wgt_cpu_matmul(&I[0], &I[1], &o[0]);
    if (IS("linear")) return wgt_cpu_linear(&I[0], &I[1], &I[2], &o[0]);
    if (IS("baddbmm")) return wgt_cpu_baddbmm(&I[0], &I[1], &I[2], 0.5, 2.0, &o[0]);
    if (IS("outer")) return wgt_cpu_outer(&I[0], &I[1], &o[0]);
#undef IS
    *known = 0;
    return WGT_OK;
}

int main(void)
{
    char path[4096];
    const char *root = getenv("WGT_ROOT");
    if (root) snprintf(path, sizeof path, "%s/tests/cpu/fixtures/torch_ops2.txt", root);
    else {
        snprintf(path, sizeof path, "%s", __FILE__);
        char *slash = strrchr(path, '/');
        snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0), "fixtures/torch_ops2.txt");
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        printf("FAIL: cannot open %s\n", path);
        return 1;
    }
    char name[64];
    int nin, nout, cases = 0, failures = 0;
    while (fscanf(f, " case %63s %d %d", name, &nin, &nout) == 3) {
        ft in[MAXT] = {{0}}, want[MAXT] = {{0}};
        wgt_cpu_tensor o[MAXT];
        void *bufs[MAXT] = {0};
        if (nin > MAXT || nout > MAXT || nin < 0 || nout < 1) {
            printf("FAIL: bad record %s\n", name);
            return 1;
        }
        for (int i = 0; i < nin; i++)
            if (!read_tensor(f, &in[i])) return printf("FAIL: %s: bad input %d\n", name, i), 1;
        for (int i = 0; i < nout; i++) {
            if (!read_tensor(f, &want[i])) return printf("FAIL: %s: bad output %d\n", name, i), 1;
            o[i] = out_like(&want[i], &bufs[i]);
        }
        int known;
        cases++;
        wgt_status st = run(name, in, o, &known);
        int ok = known && st == WGT_OK;
        double worst = 0;
        char where[128] = "";
        for (int k = 0; ok && k < nout; k++)
            for (int64_t i = 0; ok && i < want[k].n; i++) {
                double got = want[k].dt == WGT_F32 ? ((float *)bufs[k])[i] : want[k].dt == WGT_I64 ? (double)((int64_t *)bufs[k])[i]
                                                                                                : ((uint8_t *)bufs[k])[i];
                double w = want[k].want[i];
                if (want[k].dt != WGT_F32) {
                    if (want[k].dt == WGT_I64 ? ((int64_t *)bufs[k])[i] != ((int64_t *)want[k].data)[i] : got != w)
                        ok = 0, snprintf(where, sizeof where, "output %d[%lld] = %g, torch %g", k, (long long)i, got, w);
                    continue;
                }
                if (isnan(w) || isnan(got) || isinf(w) || isinf(got)) {
                    if (!((isnan(w) && isnan(got)) || w == got))
                        ok = 0, snprintf(where, sizeof where, "output %d[%lld] = %g, torch %g", k, (long long)i, got, w);
                    continue;
                }
                double err = fabs(got - w) / (1e-6 + 2e-6 * fabs(w));
                if (err > worst) worst = err;
                if (err > 1) ok = 0, snprintf(where, sizeof where, "output %d[%lld] = %.9g, torch %.9g", k, (long long)i, got, w);
            }
        if (!known) snprintf(where, sizeof where, "no reference call for this case");
        else if (st) snprintf(where, sizeof where, "%s", wgt_errmsg());
        printf("%s %-20s %s\n", ok ? "PASS" : "FAIL", name, ok ? "" : where);
        failures += !ok;
        for (int i = 0; i < MAXT; i++) free(in[i].data), free(in[i].want), free(want[i].data), free(want[i].want), free(bufs[i]);
    }
    fclose(f);
    if (!cases) return printf("FAIL: no cases in %s\n", path), 1;
    printf("%d cases against PyTorch, %d failed\n", cases, failures);
    return failures ? 1 : 0;
}
