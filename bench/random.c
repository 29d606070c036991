/* Random-number throughput: bench_random [--size small|large] [--reps N]
 * Prints GB/s of output written for uniform and normal (f32, and bf16: the same Philox work for
 * half the bytes), random_bits, bernoulli, dropout (GB/s of x read + out written + mask written),
 * and the rate of randperm and multinomial (samples per second).
 * Each figure: bench_util.h's bench_seconds (a quarter second of warm-up calls, then N calls
 * recorded back to back between two wgt_context_sync, wall clock; host recording overlaps the
 * device). --size small suits the CPU adapters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "ops/ops.h"

#include "bench_util.h"

static wgt_context *ctx;
static wgt_generator *gen;
static int reps = 20;

typedef struct job {
    int what; /* 0 uniform, 1 normal, 2 bits, 3 bernoulli, 4 dropout, 5 randperm, 6/7 multinomial with/without */
    wgt_dtype dt;
    int64_t n, k;
    const wgt_tensor *x;
} job;

static wgt_status call_once(void *arg)
{
    const job *j = arg;
    wgt_tensor *y = NULL, *m = NULL;
    wgt_status st;
    switch (j->what) {
    case 0: st = wgt_rand_uniform(ctx, gen, j->dt, 1, &j->n, 0, 1, &y); break;
    case 1: st = wgt_rand_normal(ctx, gen, j->dt, 1, &j->n, 0, 1, &y); break;
    case 2: st = wgt_random_bits(ctx, gen, 1, &j->n, &y); break;
    case 3: st = wgt_bernoulli_scalar(ctx, gen, j->dt, 1, &j->n, 0.5, &y); break;
    case 4: st = wgt_dropout(gen, j->x, 0.1, 1, &y, &m); break;
    case 5: st = wgt_randperm(ctx, gen, j->n, WGT_I32, &y); break;
    default: st = wgt_multinomial(gen, j->x, j->n, j->what == 6, WGT_I32, &y); break;
    }
    wgt_tensor_free(y);
    wgt_tensor_free(m);
    return st;
}

static double time_job(const job *j) { return bench_seconds(ctx, call_once, (void *)j, reps); }

static void bench_fill(int what, wgt_dtype dt, int64_t n)
{
    static const char *names[] = {"uniform", "normal", "random_bits", "bernoulli(0.5)"};
    job j = {what, dt, n, 0, NULL};
    double t = time_job(&j);
    printf("%-15s %-4s %11lld elements: %8.2f GB/s written (%.1f us)\n", names[what], wgt_dtype_name(dt), (long long)n,
           (double)n * wgt_dtype_size(dt) / t / 1e9, t * 1e6);
}

static void bench_dropout(wgt_dtype dt, int64_t n)
{
    wgt_tensor *x, *xc;
    TRY(wgt_full(ctx, WGT_F32, 1, &n, 1.0, &x));
    TRY(wgt_tensor_cast(x, dt, &xc));
    job j = {4, dt, n, 0, xc};
    double t = time_job(&j);
    printf("dropout(0.1)    %-4s %11lld elements: %8.2f GB/s of x, out and mask (%.1f us)\n", wgt_dtype_name(dt),
           (long long)n, (double)n * (2 * wgt_dtype_size(dt) + 1) / t / 1e9, t * 1e6);
    wgt_tensor_free(x);
    wgt_tensor_free(xc);
}

static void bench_randperm(int64_t n)
{
    job j = {5, WGT_I32, n, 0, NULL};
    double t = time_job(&j);
    printf("randperm        i32  %11lld elements: %8.2f G elements/s (%.1f us)\n", (long long)n, n / t / 1e9, t * 1e6);
}

static void bench_multinomial(int64_t rows, int64_t K, int64_t S, int replacement)
{
    int64_t sh[2] = {rows, K};
    wgt_tensor *p;
    TRY(wgt_rand_uniform(ctx, gen, WGT_F32, 2, sh, 0, 1, &p));
    job j = {replacement ? 6 : 7, WGT_F32, S, K, p};
    double t = time_job(&j);
    printf("multinomial %s [%lld, %lld] x %lld samples: %8.2f M samples/s (%.1f us)\n",
           replacement ? "with   " : "without", (long long)rows, (long long)K, (long long)S, rows * S / t / 1e6, t * 1e6);
    wgt_tensor_free(p);
}

int main(int argc, char **argv)
{
    int large;
    ctx = bench_begin(argc, argv, &large, &reps, 1, 1);
    TRY(wgt_generator_create(42, &gen));
    int64_t n = large ? 256ll << 20 : 1 << 20;
    bench_fill(0, WGT_F32, n);
    bench_fill(0, WGT_BF16, n);
    bench_fill(1, WGT_F32, n);
    bench_fill(1, WGT_BF16, n);
    bench_fill(2, WGT_U32, n);
    bench_fill(3, WGT_BOOL, n);
    bench_dropout(WGT_F32, n);
    bench_dropout(WGT_BF16, n);
    bench_randperm(large ? 16 << 20 : 1 << 16);
    bench_multinomial(large ? 256 : 8, large ? 151936 : 4096, large ? 1 : 1, 1);     /* LLM sampling shape */
    bench_multinomial(large ? 64 : 4, large ? 32000 : 1000, large ? 4096 : 256, 1);  /* many samples */
    bench_multinomial(large ? 64 : 4, large ? 32000 : 1000, large ? 64 : 16, 0);     /* without replacement */
    wgt_generator_free(gen);
    wgt_context_free(ctx);
    return 0;
}
