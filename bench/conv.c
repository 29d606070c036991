/* Convolution throughput: bench_conv [--size small|large] [--reps N] [--compare]
 * Prints GFLOP/s (2 * N * Cout * O * Cin/groups * K multiply-adds) and GB/s (x, weight and output
 * bytes, each once) per call for: a ResNet-like 3x3 conv2d [32, 64, 56, 56] x [64, 64, 3, 3]
 * (the implicit-GEMM path) in f32 and f16, a 3x3 stride-2 downsampling conv2d, a depthwise 3x3
 * conv2d [32, 256, 56, 56] (groups = 256, the depthwise tiles: bandwidth-bound), a 1x1 conv2d, a conv1d
 * (audio-like: [8, 256, 4096] x [256, 256, 3]), and conv_transpose2d (a 2x upsampling).
 * Each figure: bench_util.h's bench_seconds (a quarter second of warm-up calls, then N calls
 * recorded back to back between two wgt_context_sync, wall clock). --size small (the default on
 * CPU adapters: quarter-size batches and maps) suits lavapipe. --compare runs each case again
 * through the direct kernel only (WGT_CONV_PATH=direct), to see what the GEMM and depthwise tiles
 * gain on the device at hand. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "ops/api.h"
#include "ops/ops.h"

#include "bench_util.h"

static wgt_context *ctx;
static int compare; /* --compare: each case again with WGT_CONV_PATH=direct */
static int reps = 0; /* 0: 20, or 3 on a CPU adapter */

/* Small random values, made on the device from an f32 upload. */
static wgt_tensor *random_tensor(wgt_dtype dt, int nd, const int64_t *shape)
{
    return bench_random(ctx, dt, nd, shape, -0.05f, 0.05f);
}

typedef struct call {
    int transposed;
    const wgt_tensor *x, *w;
    const wgt_conv_params *p;
} call;

static wgt_status make_call(const void *arg, wgt_tensor **y)
{
    const call *c = arg;
    return c->transposed ? wgt_conv_transpose(c->x, c->w, NULL, c->p, y) : wgt_conv(c->x, c->w, NULL, c->p, y);
}

/* One convolution: x [N, C, *S], w as given (rank nsp + 2). */
static void bench(const char *name, int transposed, wgt_dtype dt, int nsp, const int64_t *xs, const int64_t *ws,
                  const wgt_conv_params *p)
{
    wgt_tensor *x = random_tensor(dt, nsp + 2, xs), *w = random_tensor(dt, nsp + 2, ws), *y;
    TRY(transposed ? wgt_conv_transpose(x, w, NULL, p, &y) : wgt_conv(x, w, NULL, p, &y));
    /* multiply-adds: every output of a convolution takes Cin/groups * K of them; a transposed one
     * makes Cin * Cout/groups * K per input position */
    int64_t kk = 1, outs = wgt_tensor_numel(y), ins = wgt_tensor_numel(x);
    for (int d = 0; d < nsp; d++) kk *= ws[2 + d];
    double macs = transposed ? (double)ins * ws[1] * kk : (double)outs * ws[1] * kk;
    double bytes = (double)(ins + outs + wgt_tensor_numel(w)) * wgt_dtype_size(dt);
    wgt_tensor_free(y);
    call c = {transposed, x, w, p};
    double t = bench_make_seconds(ctx, make_call, &c, reps, NULL);
    char xd[64] = "", wd[64] = "";
    for (int d = 0; d < nsp + 2; d++) {
        snprintf(xd + strlen(xd), sizeof xd - strlen(xd), "%s%lld", d ? "," : "", (long long)xs[d]);
        snprintf(wd + strlen(wd), sizeof wd - strlen(wd), "%s%lld", d ? "," : "", (long long)ws[d]);
    }
    const char *path = getenv("WGT_CONV_PATH");
    printf("%-28s x[%s] w[%s] %s%s: %9.1f GFLOP/s %8.1f GB/s (%.1f us)\n", name, xd, wd, wgt_dtype_name(dt),
           path ? " (direct kernel)" : "", 2 * macs / t / 1e9, bytes / t / 1e9, t * 1e6);
    fflush(stdout);
    wgt_tensor_free(x);
    wgt_tensor_free(w);
    if (compare && !path) {
        setenv("WGT_CONV_PATH", "direct", 1);
        bench(name, transposed, dt, nsp, xs, ws, p);
        unsetenv("WGT_CONV_PATH");
    }
}

int main(int argc, char **argv)
{
    int large = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--size") && i + 1 < argc) large = strcmp(argv[++i], "small") != 0;
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--compare")) compare = 1;
        else {
            fprintf(stderr, "usage: %s [--size small|large] [--reps N] [--compare]\n", argv[0]);
            return 2;
        }
    }
    TRY(wgt_context_create(NULL, &ctx));
    wgt_adapter_info info;
    TRY(wgt_context_adapter_info(ctx, &info));
    if (large < 0) large = !info.is_cpu;
    if (reps < 1) reps = large ? 20 : 3;
    printf("adapter: %s (%s), %s sizes, %d reps\n", info.name, info.backend_name, large ? "large" : "small", reps);
    int64_t N = large ? 32 : 2, H = large ? 56 : 28, L = large ? 4096 : 1024;
    wgt_conv_params pad1 = {.pad_begin = {1, 1}, .pad_end = {1, 1}};
    wgt_conv_params down = {.stride = {2, 2}, .pad_begin = {1, 1}, .pad_end = {1, 1}};
    wgt_conv_params dw = {.pad_begin = {1, 1}, .pad_end = {1, 1}, .groups = 256};
    wgt_conv_params c1 = {.pad_begin = {1}, .pad_end = {1}};
    wgt_conv_params up = {.stride = {2, 2}, .pad_begin = {1, 1}, .pad_end = {1, 1}, .output_padding = {1, 1}};
    bench("conv2d 3x3 (resnet)", 0, WGT_F32, 2, (int64_t[]){N, 64, H, H}, (int64_t[]){64, 64, 3, 3}, &pad1);
    bench("conv2d 3x3 (resnet)", 0, WGT_F16, 2, (int64_t[]){N, 64, H, H}, (int64_t[]){64, 64, 3, 3}, &pad1);
    bench("conv2d 3x3 stride 2", 0, WGT_F32, 2, (int64_t[]){N, 128, H, H}, (int64_t[]){256, 128, 3, 3}, &down);
    bench("conv2d 1x1", 0, WGT_F32, 2, (int64_t[]){N, 256, H, H}, (int64_t[]){64, 256, 1, 1}, NULL);
    bench("depthwise 3x3", 0, WGT_F32, 2, (int64_t[]){N, 256, H, H}, (int64_t[]){256, 1, 3, 3}, &dw);
    bench("depthwise 3x3", 0, WGT_F16, 2, (int64_t[]){N, 256, H, H}, (int64_t[]){256, 1, 3, 3}, &dw);
    bench("conv1d k3", 0, WGT_F32, 1, (int64_t[]){large ? 8 : 2, 256, L}, (int64_t[]){256, 256, 3}, &c1);
    bench("conv_transpose2d 2x up", 1, WGT_F32, 2, (int64_t[]){N / 2 ? N / 2 : 1, 64, H / 2, H / 2},
          (int64_t[]){64, 32, 3, 3}, &up);
    wgt_context_free(ctx);
    return 0;
}
