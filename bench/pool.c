/* Pooling and resampling throughput: bench_pool [--size small|large] [--reps N]
 * For each op: ms per call and GB/s of the bytes it must move (input read once + output written),
 * in f32 and f16: max_pool2d 3x3/2 pad 1 (a ResNet stem), avg_pool2d 2x2/2, a global
 * adaptive_avg_pool2d, interpolate (nearest, bilinear, bicubic; 2x up), grid_sample (bilinear,
 * zeros). Large: [32, 64, 112, 112] pools, [8, 64, 128, 128] resampling; small: a few MB each, for
 * the CPU adapters. Each figure: bench_util.h's bench_seconds (a quarter second of warm-up calls,
 * then N calls recorded back to back between two wgt_context_sync, wall clock). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "ops/ops.h"

#include "bench_util.h"

static wgt_context *ctx;
static int reps = 20;

typedef enum { MAXP, AVGP, GAP, NEAREST, BILINEAR, BICUBIC, GRID } which;
static const char *names[] = {"max_pool2d 3x3/2 p1", "avg_pool2d 2x2/2", "adaptive_avg_pool2d 1x1",
                              "interpolate nearest x2", "interpolate bilinear x2", "interpolate bicubic x2",
                              "grid_sample bilinear"};

static wgt_status run(which w, const wgt_tensor *x, const wgt_tensor *grid, wgt_tensor **y)
{
    int64_t H = wgt_tensor_shape(x)[2], W = wgt_tensor_shape(x)[3], up[2] = {2 * H, 2 * W}, one[2] = {1, 1};
    wgt_pool_params p = {{3, 3}, {2, 2}, {1, 1}};
    switch (w) {
    case MAXP: return wgt_max_pool(x, 2, &p, y, NULL);
    case AVGP: p = (wgt_pool_params){{2, 2}}; return wgt_avg_pool(x, 2, &p, y);
    case GAP: return wgt_adaptive_avg_pool(x, 2, one, y);
    case NEAREST: return wgt_interpolate(x, 2, WGT_INTERP_NEAREST, up, NULL, 0, y);
    case BILINEAR: return wgt_interpolate(x, 2, WGT_INTERP_LINEAR, up, NULL, 0, y);
    case BICUBIC: return wgt_interpolate(x, 2, WGT_INTERP_CUBIC, up, NULL, 0, y);
    default: return wgt_grid_sample(x, grid, WGT_GRID_BILINEAR, WGT_GRID_PAD_ZEROS, 0, y);
    }
}

typedef struct call {
    which w;
    const wgt_tensor *x, *grid;
} call;

static wgt_status make_call(const void *arg, wgt_tensor **y)
{
    const call *c = arg;
    return run(c->w, c->x, c->grid, y);
}

static void bench(which w, wgt_dtype dt, const int64_t *pool_shape, const int64_t *rs_shape)
{
    const int64_t *shape = w <= GAP ? pool_shape : rs_shape;
    wgt_tensor *x = bench_random(ctx, dt, 4, shape, -1, 1), *grid = NULL, *y;
    if (w == GRID) grid = bench_random(ctx, dt, 4, (int64_t[]){shape[0], shape[2], shape[3], 2}, -1.1f, 1.1f);
    TRY(run(w, x, grid, &y));
    double bytes = (double)(wgt_tensor_numel(x) + wgt_tensor_numel(y) + (grid ? wgt_tensor_numel(grid) : 0)) *
                   wgt_dtype_size(dt);
    wgt_tensor_free(y);
    call c = {w, x, grid};
    double t = bench_make_seconds(ctx, make_call, &c, reps, NULL);
    printf("%-26s %-4s [%lld, %lld, %lld, %lld]  %9.3f ms  %8.1f GB/s\n", names[w], wgt_dtype_name(dt),
           (long long)shape[0], (long long)shape[1], (long long)shape[2], (long long)shape[3], t * 1e3,
           bytes / t / 1e9);
    wgt_tensor_free(x);
    wgt_tensor_free(grid);
}

int main(int argc, char **argv)
{
    int large = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--size") && i + 1 < argc) large = strcmp(argv[++i], "small") != 0;
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_pool [--size small|large] [--reps N]\n");
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    TRY(wgt_context_create(NULL, &ctx));
    printf("bench_pool (%s), %d reps\n", large ? "large" : "small", reps);
    int64_t pool_shape[4] = {32, 64, 112, 112}, rs_shape[4] = {8, 64, 128, 128};
    int64_t pool_small[4] = {2, 16, 56, 56}, rs_small[4] = {1, 16, 64, 64};
    const wgt_dtype dts[2] = {WGT_F32, WGT_F16};
    for (int di = 0; di < 2; di++)
        for (int w = MAXP; w <= GRID; w++)
            bench((which)w, dts[di], large ? pool_shape : pool_small, large ? rs_shape : rs_small);
    wgt_context_free(ctx);
    return 0;
}
