/* The core op library's costs: bench_core [--size small|large] [--reps N]
 * 1. Host cost per op call: a one-element add / exp / sum recorded back to back (the kernel is
 *    tiny, so the figure is the host's: argument checks, pipeline-cache lookup, bind group,
 *    uniform, recording), and the pipeline-cache lookup alone: wgt_gpu_kernel on a hit with a
 *    small and an elementwise-sized prelude, and wgt_gpu_kernel_keyed (what the core ops use).
 * 2. Elementwise throughput in GB/s (bytes read + written): add and exp of contiguous f32, f16
 *    and bf16 tensors (the vec4 path), an f32 -> f16 cast, and a broadcast add (the strided path).
 * Each figure: bench_util.h's bench_seconds (a quarter second of warm-up, then N calls between two
 * wgt_context_sync, wall clock). --size small suits the CPU adapters; --size large (the default)
 * is for a real GPU (256 Mi elements). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "ops/api.h"
#include "ops/ops.h"

#include "bench_util.h"

static wgt_context *ctx;
static int reps = 50;

typedef enum which { ADD, EXP, SUM, CAST_F16 } which;

static wgt_status run(which w, const wgt_tensor *a, const wgt_tensor *b, wgt_tensor **y)
{
    switch (w) {
    case ADD: return wgt_binary(WGT_BINARY_ADD, a, b, y);
    case EXP: return wgt_unary(WGT_UNARY_EXP, a, y);
    case SUM: return wgt_reduce(WGT_REDUCE_SUM, a, 0, 0, 0, y);
    default: return wgt_tensor_cast(a, WGT_F16, y);
    }
}

typedef struct call {
    which w;
    const wgt_tensor *a, *b;
} call;

static wgt_status make_call(const void *arg, wgt_tensor **y)
{
    const call *c = arg;
    return run(c->w, c->a, c->b, y);
}

/* Seconds per call. */
static double time_op(which w, const wgt_tensor *a, const wgt_tensor *b, int n)
{
    call c = {w, a, b};
    return bench_make_seconds(ctx, make_call, &c, n, NULL);
}

static wgt_tensor *tensor(wgt_dtype dt, int nd, const int64_t *shape)
{
    return bench_random(ctx, dt, nd, shape, -0.05f, 0.05f);
}

static char *make_stream_prelude(void *arg)
{
    (void)arg;
    char *s = malloc(64);
    if (s) snprintf(s, 64, "const BENCH_KEYED: u32 = 1u;\n");
    return s;
}

static void host_costs(void)
{
    int64_t one = 1;
    wgt_tensor *a = tensor(WGT_F32, 1, &one), *b = tensor(WGT_F32, 1, &one);
    int n = reps * 40;
    printf("host cost per call (one-element tensors, %d calls):\n", n);
    printf("  add f32:  %7.2f us\n", time_op(ADD, a, b, n) * 1e6);
    printf("  exp f32:  %7.2f us\n", time_op(EXP, a, b, n) * 1e6);
    printf("  sum f32:  %7.2f us\n", time_op(SUM, a, b, n) * 1e6);
    wgt_tensor_free(a);
    wgt_tensor_free(b);
    /* the lookup alone: a kernel with a prelude the size of an elementwise one */
    char pre[2048];
    memset(pre, 0, sizeof pre);
    snprintf(pre, sizeof pre, "%s\nconst BENCH_PAD: u32 = 1u;\n", op_wgsl_lib());
    wgt_kernel *k;
    TRY(wgt_gpu_kernel(ctx, "gpu_stream", pre, "main", NULL, 0, &k));
    double t0 = wgt_now_seconds();
    for (int i = 0; i < n * 10; i++) TRY(wgt_gpu_kernel(ctx, "gpu_stream", pre, "main", NULL, 0, &k));
    printf("  wgt_gpu_kernel cache hit (%zu-byte prelude): %7.3f us\n", strlen(pre),
           (wgt_now_seconds() - t0) / (n * 10) * 1e6);
    /* an elementwise-sized prelude (16 KiB: the op library is inlined in the elementwise ones) */
    size_t cap = 16384;
    char *big = malloc(cap);
    size_t used = (size_t)snprintf(big, cap, "%s", pre);
    while (used + 80 < cap) used += (size_t)snprintf(big + used, cap - used, "// %075zu\n", used);
    TRY(wgt_gpu_kernel(ctx, "gpu_stream", big, "main", NULL, 0, &k));
    t0 = wgt_now_seconds();
    for (int i = 0; i < n * 10; i++) TRY(wgt_gpu_kernel(ctx, "gpu_stream", big, "main", NULL, 0, &k));
    printf("  wgt_gpu_kernel cache hit (%zu-byte prelude): %7.3f us\n", strlen(big),
           (wgt_now_seconds() - t0) / (n * 10) * 1e6);
    free(big);
    /* what the core ops use: a small key, the prelude made only on a miss */
    uint32_t key[2] = {7, 256};
    TRY(wgt_gpu_kernel_keyed(ctx, "gpu_stream", key, sizeof key, make_stream_prelude, NULL, "main", NULL, 0, &k));
    t0 = wgt_now_seconds();
    for (int i = 0; i < n * 10; i++)
        TRY(wgt_gpu_kernel_keyed(ctx, "gpu_stream", key, sizeof key, make_stream_prelude, NULL, "main", NULL, 0, &k));
    printf("  wgt_gpu_kernel_keyed cache hit (8-byte key):   %7.3f us\n", (wgt_now_seconds() - t0) / (n * 10) * 1e6);
}

static void throughput(int64_t n)
{
    static const wgt_dtype dts[3] = {WGT_F32, WGT_F16, WGT_BF16};
    printf("elementwise, %lld elements (GB/s of bytes read + written):\n", (long long)n);
    for (int d = 0; d < 3; d++) {
        wgt_tensor *a = tensor(dts[d], 1, &n), *b = tensor(dts[d], 1, &n);
        double es = (double)wgt_dtype_size(dts[d]);
        double t = time_op(ADD, a, b, reps);
        printf("  add %-4s contiguous: %9.2f GB/s (%.1f us)\n", wgt_dtype_name(dts[d]), 3 * es * n / t / 1e9, t * 1e6);
        t = time_op(EXP, a, b, reps);
        printf("  exp %-4s contiguous: %9.2f GB/s (%.1f us)\n", wgt_dtype_name(dts[d]), 2 * es * n / t / 1e9, t * 1e6);
        if (dts[d] == WGT_F32) {
            t = time_op(CAST_F16, a, b, reps);
            printf("  cast f32 -> f16:     %9.2f GB/s (%.1f us)\n", 6.0 * n / t / 1e9, t * 1e6);
        }
        wgt_tensor_free(a);
        wgt_tensor_free(b);
    }
    /* broadcast: [n / 1024, 1024] + [1024] takes the strided path */
    int64_t shape[2] = {n / 1024, 1024}, row = 1024;
    wgt_tensor *a = tensor(WGT_F32, 2, shape), *b = tensor(WGT_F32, 1, &row);
    double t = time_op(ADD, a, b, reps);
    printf("  add f32 [%lld, 1024] + [1024] (strided path): %9.2f GB/s (%.1f us)\n", (long long)shape[0],
           8.0 * shape[0] * 1024 / t / 1e9, t * 1e6);
    wgt_tensor_free(a);
    wgt_tensor_free(b);
}

int main(int argc, char **argv)
{
    int large;
    ctx = bench_begin(argc, argv, &large, &reps, 1, 1);
    host_costs();
    throughput(large ? 256ll << 20 : 1 << 20);
    wgt_context_free(ctx);
    return 0;
}
