/* What the benchmark programs (bench/NAME.c) share: TRY (a failed call ends the program, naming
 * the call), a seeded random tensor, and the time of one call.
 * Each benchmark's figure is bench_seconds: a quarter second of warm-up calls, then `reps` calls
 * recorded back to back between two wgt_context_sync, wall clock; seconds per call. */
#ifndef WGT_BENCH_UTIL_H
#define WGT_BENCH_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "ops/api.h"

#define TRY(call)                                                                                  \
    do {                                                                                           \
        wgt_status st_ = (call);                                                                   \
        if (st_) {                                                                                 \
            fprintf(stderr, "%s failed: %s: %s\n", #call, wgt_status_str(st_), wgt_errmsg());      \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* The command line of the op benchmarks that have no options of their own, `[--size small|large]
 * [--reps N]` (large unless told; *reps, when not given or below 1, reps_large or reps_small by the
 * size), then the context and a line naming the adapter. A wrong argument prints the usage and ends
 * the program (status 2). */
static inline wgt_context *bench_begin(int argc, char **argv, int *large, int *reps, int reps_large, int reps_small)
{
    *large = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--size") && i + 1 < argc) *large = strcmp(argv[++i], "small") != 0;
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) *reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--size small|large] [--reps N]\n", argv[0]);
            exit(2);
        }
    }
    if (*reps < 1) *reps = *large ? reps_large : reps_small;
    wgt_context *ctx;
    TRY(wgt_context_create(NULL, &ctx));
    wgt_adapter_info info;
    TRY(wgt_context_adapter_info(ctx, &info));
    printf("adapter: %s (%s), %s sizes, %d reps\n", info.name, info.backend_name, *large ? "large" : "small", *reps);
    return ctx;
}

/* One call of the measured operation; it frees what it makes. */
typedef wgt_status (*bench_fn)(void *arg);

/* Seconds per call of fn(arg). The warm-up lasts a quarter second (and at least three calls), not a
 * fixed few calls: the H200 drops its clock to 345 MHz whenever it sits idle (a latency-bound
 * benchmark before this one leaves it so) and takes a while to climb back to 1980 MHz; three calls
 * measured a 2048^3 matmul at 5 TFLOP/s instead of 26. A sync every 8 warm-up calls keeps the queue
 * short. *record (when not NULL): the host's share per call, recording and submitting up to the
 * final wait; when it is close to the result, the figure is the host's, not the kernel's. */
static inline double bench_seconds_host(wgt_context *ctx, bench_fn fn, void *arg, int reps, double *record)
{
    double w0 = wgt_now_seconds();
    for (int i = 0; i < 3 || wgt_now_seconds() - w0 < 0.25; i++) {
        TRY(fn(arg));
        if (i % 8 == 7) TRY(wgt_context_sync(ctx, -1));
    }
    TRY(wgt_context_sync(ctx, -1));
    double t0 = wgt_now_seconds();
    for (int i = 0; i < reps; i++) TRY(fn(arg));
    if (record) {
        TRY(wgt_gpu_flush(ctx));
        *record = (wgt_now_seconds() - t0) / reps;
    }
    TRY(wgt_context_sync(ctx, -1));
    return (wgt_now_seconds() - t0) / reps;
}

static inline double bench_seconds(wgt_context *ctx, bench_fn fn, void *arg, int reps)
{
    return bench_seconds_host(ctx, fn, arg, reps, NULL);
}

/* Most benchmarks time an op that makes one tensor they do not keep: make(arg, &y) is the op,
 * and bench_make_seconds frees y after every call. */
typedef wgt_status (*bench_make_fn)(const void *arg, wgt_tensor **y);
typedef struct bench_make {
    bench_make_fn make;
    const void *arg;
} bench_make;

static inline wgt_status bench_make_once(void *p)
{
    const bench_make *c = p;
    wgt_tensor *y = NULL;
    wgt_status st = c->make(c->arg, &y);
    wgt_tensor_free(y);
    return st;
}

/* Seconds per call of make(arg); *record (when not NULL) as bench_seconds_host. */
static inline double bench_make_seconds(wgt_context *ctx, bench_make_fn make, const void *arg, int reps, double *record)
{
    bench_make c = {make, arg};
    return bench_seconds_host(ctx, bench_make_once, &c, reps, record);
}

/* Uniform values in [lo, hi) from a fixed linear congruential sequence (the same tensor every run),
 * uploaded as f32 and cast to dt on the device. */
static inline wgt_tensor *bench_random(wgt_context *ctx, wgt_dtype dt, int nd, const int64_t *shape, float lo, float hi)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    float *h = malloc(sizeof(float) * (n ? n : 1));
    if (!h) {
        fprintf(stderr, "out of memory for %lld values\n", (long long)n);
        exit(1);
    }
    uint32_t s = 12345;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        h[i] = lo + (hi - lo) * ((s >> 8) / 16777216.0f);
    }
    wgt_tensor *t, *c;
    TRY(wgt_tensor_from_host(ctx, WGT_F32, nd, shape, h, &t));
    free(h);
    if (dt == WGT_F32) return t;
    TRY(wgt_tensor_cast(t, dt, &c));
    wgt_tensor_free(t);
    return c;
}

#endif
