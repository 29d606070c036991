/* Loss and distance throughput: bench_loss [--size small|large] [--reps N]
 * Prints GB/s of logits read for cross_entropy over a vocabulary ([512, 151936], Qwen's, in f32,
 * bf16 and f16; one pass per row), beside the same loss composed from log_softmax + gather + mean
 * (what the fusion saves); GB/s for mse_loss (mean) over 64 Mi elements; and cdist: distances per
 * second for p = 2 through the matrix product and directly, and p = 1.
 * Each figure: bench_util.h's bench_seconds (a quarter second of warm-up calls, then N calls
 * recorded back to back between two wgt_context_sync, wall clock). --size small suits the CPU
 * adapters. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "ops/api.h"
#include "ops/ops.h"

#include "bench_util.h"

static wgt_context *ctx;
static int reps = 20;

/* A tensor of random values in [-4, 4) (a float dtype), or class indices below `classes` (i32). */
static wgt_tensor *random_tensor(wgt_dtype dt, int nd, const int64_t *shape, int64_t classes)
{
    if (!classes) return bench_random(ctx, dt, nd, shape, -4, 4);
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    int32_t *h = malloc(sizeof(int32_t) * (n ? n : 1));
    uint32_t s = 12345;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        h[i] = (int32_t)((s >> 8) % (uint32_t)classes);
    }
    wgt_tensor *t;
    TRY(wgt_tensor_from_host(ctx, WGT_I32, nd, shape, h, &t));
    free(h);
    return t;
}

typedef struct job {
    int kind; /* 0 cross_entropy, 1 composed, 2 mse, 3 cdist */
    const wgt_tensor *a, *b;
    double p;
    wgt_cdist_mode mode;
} job;

/* The composed form: -mean(gather(log_softmax(x), 1, t)) */
static wgt_status composed(const wgt_tensor *x, const wgt_tensor *t, wgt_tensor **out)
{
    wgt_tensor *lp = NULL, *t2 = NULL, *g = NULL, *m = NULL;
    int64_t shape[2] = {wgt_tensor_dim(t, 0), 1};
    wgt_status st = wgt_log_softmax(x, 1, &lp);
    if (!st) st = wgt_tensor_reshape(t, 2, shape, &t2);
    if (!st) st = wgt_gather(lp, 1, t2, &g);
    if (!st) st = wgt_reduce(WGT_REDUCE_MEAN, g, 0, 0, 0, &m);
    if (!st) st = wgt_unary(WGT_UNARY_NEG, m, out);
    wgt_tensor_free(lp), wgt_tensor_free(t2), wgt_tensor_free(g), wgt_tensor_free(m);
    return st;
}

static wgt_status run(const void *arg, wgt_tensor **y)
{
    const job *j = arg;
    switch (j->kind) {
    case 0: return wgt_cross_entropy(j->a, j->b, NULL, -100, 0, WGT_REDUCTION_MEAN, y);
    case 1: return composed(j->a, j->b, y);
    case 2: return wgt_mse_loss(j->a, j->b, WGT_REDUCTION_MEAN, y);
    default: return wgt_cdist(j->a, j->b, j->p, j->mode, y);
    }
}

/* Seconds per call. */
static double time_job(const job *j) { return bench_make_seconds(ctx, run, j, reps, NULL); }

static void bench_cross_entropy(int64_t N, int64_t V, wgt_dtype dt, int with_composed)
{
    int64_t xs[2] = {N, V};
    wgt_tensor *x = random_tensor(dt, 2, xs, 0), *t = random_tensor(WGT_I32, 1, &N, V);
    job j = {0, x, t, 0, 0};
    double s = time_job(&j), bytes = (double)N * V * wgt_dtype_size(dt);
    printf("cross_entropy [%lld, %lld] %s, mean: %9.2f GB/s of logits (%.1f us)\n", (long long)N, (long long)V,
           wgt_dtype_name(dt), bytes / s / 1e9, s * 1e6);
    wgt_tensor *probe = NULL;
    j.kind = 1;
    if (with_composed && composed(x, t, &probe)) /* another op's limit must not end the run */
        printf("  composed log_softmax + gather + mean: failed (%s)\n", wgt_errmsg());
    else if (with_composed) {
        double c = time_job(&j);
        printf("  composed log_softmax + gather + mean: %9.2f GB/s of logits (%.1f us, %.2fx the fused time)\n",
               bytes / c / 1e9, c * 1e6, c / s);
    }
    wgt_tensor_free(probe);
    wgt_tensor_free(x);
    wgt_tensor_free(t);
}

static void bench_mse(int64_t n)
{
    wgt_tensor *a = random_tensor(WGT_F32, 1, &n, 0), *b = random_tensor(WGT_F32, 1, &n, 0);
    job j = {2, a, b, 0, 0};
    double s = time_job(&j);
    printf("mse_loss f32 %lld elements, mean: %9.2f GB/s read (%.1f us)\n", (long long)n, 8.0 * n / s / 1e9, s * 1e6);
    wgt_tensor_free(a);
    wgt_tensor_free(b);
}

static void bench_cdist(int64_t P, int64_t R, int64_t M, double p, wgt_cdist_mode mode, wgt_dtype dt)
{
    int64_t as[2] = {P, M}, bs[2] = {R, M};
    wgt_tensor *a = random_tensor(dt, 2, as, 0), *b = random_tensor(dt, 2, bs, 0);
    job j = {3, a, b, p, mode};
    double s = time_job(&j);
    const char *how = p != 2 ? "direct" : mode == WGT_CDIST_NO_MM ? "direct" : "matrix product";
    printf("cdist [%lld, %lld] x [%lld, %lld] %s p=%g (%s): %9.3f G distances/s, %8.2f GFLOP/s-equivalent (%.1f us)\n",
           (long long)P, (long long)M, (long long)R, (long long)M, wgt_dtype_name(dt), p, how, P * R / s / 1e9,
           3.0 * P * R * M / s / 1e9, s * 1e6);
    wgt_tensor_free(a);
    wgt_tensor_free(b);
}

int main(int argc, char **argv)
{
    int large;
    ctx = bench_begin(argc, argv, &large, &reps, 1, 1);
    if (large) {
        bench_cross_entropy(512, 151936, WGT_F32, 1);
        bench_cross_entropy(512, 151936, WGT_BF16, 1);
        bench_cross_entropy(512, 151936, WGT_F16, 0);
        bench_cross_entropy(8192, 32000, WGT_BF16, 0);
        bench_mse(64ll << 20);
        bench_cdist(4096, 4096, 128, 2, WGT_CDIST_MM_IF_NECESSARY, WGT_F32);
        bench_cdist(4096, 4096, 128, 2, WGT_CDIST_NO_MM, WGT_F32);
        bench_cdist(4096, 4096, 128, 1, WGT_CDIST_MM_IF_NECESSARY, WGT_F32);
    } else {
        bench_cross_entropy(8, 32000, WGT_F32, 1);
        bench_cross_entropy(8, 32000, WGT_BF16, 0);
        bench_mse(1 << 20);
        bench_cdist(256, 256, 32, 2, WGT_CDIST_MM_IF_NECESSARY, WGT_F32);
        bench_cdist(256, 256, 32, 2, WGT_CDIST_NO_MM, WGT_F32);
        bench_cdist(256, 256, 32, 1, WGT_CDIST_MM_IF_NECESSARY, WGT_F32);
    }
    wgt_context_free(ctx);
    return 0;
}
