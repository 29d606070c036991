/* Quantized linear layers: bench_qlinear [--size small|large] [--iters N] [--n SIZE]
 * For Q8_0, Q4_0, Q4_K and Q6_K weights of 4096 x 4096 (--size small: 1024 x 1024, for lavapipe;
 * --n: SIZE x SIZE, a multiple of 256, to see the kernel past the per-call host cost):
 * GB/s of quantized weight bytes streamed by the one-token GEMV (decode), and TFLOP/s of a
 * 512-token product (prefill; 64 tokens with --size small). Wall time of N back-to-back calls on
 * the current adapter (WGT_BACKEND, WGT_ADAPTER), after bench_util.h's quarter second of warm-up,
 * ended by a sync: submission
 * overhead is included, as a model's decode pays it (a 4096 x 4096 GEMV is short enough for it
 * to matter: compare with --n 16384). Weights are random bytes with small scales
 * (the kernels' speed does not depend on the values). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "ops/ops.h"

#include "bench_util.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

/* Random blocks with f16 scale fields of 2^-10 (so no block holds inf or NaN). */
static void *random_blocks(wgt_ftype type, int64_t n, uint64_t *bytes)
{
    if (wgt_ftype_bytes(type, n, bytes)) return NULL;
    uint8_t *b = malloc(*bytes);
    if (!b) return NULL;
    for (uint64_t i = 0; i + 8 <= *bytes; i += 8) {
        uint64_t v = next();
        memcpy(b + i, &v, 8);
    }
    uint32_t bb = wgt_ftype_block_bytes(type);
    const uint8_t scale[2] = {0x00, 0x14}; /* f16 2^-10 */
    for (uint64_t o = 0; o < *bytes; o += bb) {
        if (type == WGT_FTYPE_Q6_K) memcpy(b + o + 208, scale, 2);
        else memcpy(b + o, scale, 2);
        if (type == WGT_FTYPE_Q4_K) memcpy(b + o + 2, scale, 2);
    }
    return b;
}

static int fail(const char *what)
{
    fprintf(stderr, "bench_qlinear: %s: %s\n", what, wgt_errmsg());
    return 1;
}

typedef struct call {
    const wgt_tensor *x, *w;
    wgt_ftype type;
} call;

static wgt_status make_call(const void *arg, wgt_tensor **y)
{
    const call *c = arg;
    return wgt_qlinear(c->x, c->w, c->type, NULL, y);
}

/* Seconds per call of wgt_qlinear (bench_util.h's bench_seconds_host); *record: the host's share. */
static double time_calls(wgt_context *ctx, const wgt_tensor *x, const wgt_tensor *w, wgt_ftype type, int iters,
                         double *record)
{
    call c = {x, w, type};
    return bench_make_seconds(ctx, make_call, &c, iters, record);
}

int main(int argc, char **argv)
{
    int small = 0, iters = 0;
    long long n_arg = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--size") && i + 1 < argc) small = !strcmp(argv[++i], "small");
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--n") && i + 1 < argc) n_arg = atoll(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--size small|large] [--iters N] [--n SIZE]\n", argv[0]);
            return 2;
        }
    }
    int64_t n = n_arg >= 256 ? n_arg / 256 * 256 : small ? 1024 : 4096, prefill = small ? 64 : 512;
    if (iters <= 0) iters = small ? 20 : 200;
    wgt_context *ctx;
    if (wgt_context_create(NULL, &ctx)) return fail("context");
    wgt_adapter_info info;
    wgt_context_adapter_info(ctx, &info);
    printf("adapter: %s (%s), subgroups %s\n", info.name, info.backend_name, info.has_subgroups ? "yes" : "no");
    printf("%-6s %11s %15s %10s %14s %10s\n", "format", "weight", "gemv us (host)", "GB/s", "prefill", "TFLOP/s");
    const wgt_ftype types[] = {WGT_FTYPE_Q8_0, WGT_FTYPE_Q4_K, WGT_FTYPE_Q4_0, WGT_FTYPE_Q6_K};
    float *xh = malloc((size_t)(prefill * n) * sizeof(float));
    for (int64_t i = 0; i < prefill * n; i++) xh[i] = (float)((double)(next() >> 11) / 9007199254740992.0 - 0.5);
    for (int t = 0; t < 4; t++) {
        uint64_t bytes;
        void *blocks = random_blocks(types[t], n * n, &bytes);
        if (!blocks) return fail("blocks");
        wgt_tensor *w, *x1, *xp;
        if (wgt_qweight_upload(ctx, types[t], n, n, blocks, &w)) return fail("upload");
        if (wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){1, n}, xh, &x1)) return fail("x");
        if (wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){prefill, n}, xh, &xp)) return fail("x");
        double gr, pr;
        double g = time_calls(ctx, x1, w, types[t], iters, &gr);
        double p = time_calls(ctx, xp, w, types[t], iters / 10 > 2 ? iters / 10 : 2, &pr);
        printf("%-6s %4lldx%-6lld %7.1f (%5.1f) %10.2f %8lld tok %10.2f\n", wgt_ftype_name(types[t]), (long long)n,
               (long long)n, g * 1e6, gr * 1e6, (double)bytes / g * 1e-9, (long long)prefill,
               2.0 * (double)prefill * (double)(n * n) / p * 1e-12);
        wgt_tensor_free(xp);
        wgt_tensor_free(x1);
        wgt_tensor_free(w);
        free(blocks);
    }
    free(xh);
    wgt_context_free(ctx);
    return 0;
}
