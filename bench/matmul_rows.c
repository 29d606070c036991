/* Linear layers over a few rows: bench_matmul_rows [--iters N] [--types f16,q8_0,..] [--ms 1,2,..]
 * [--shapes KxN,..] [--peak GB/s]
 * For x [M, K] (f32) by weights [N, K] (f32, f16, bf16, or q8_0 / q4_0 blocks), M rows (decode of M
 * sequences): microseconds per wgt_linear / wgt_qlinear call, the host's share, and the weight bytes
 * streamed per second against the peak (default 4160 GB/s, the H200's HBM3e), once with
 * src/kernels/matmul_rows.wgsl (M >= 2; 16 rows a pass with WGT_MATMUL_ROWS=16 given) and once
 * with WGT_MATMUL_ROWS=0 (the GEMV for M <= 4 or
 * 8, the tiled kernels above). Default shapes: the Qwen2.5-0.5B decode layers (896 x 1152 qkv,
 * 896 x 896 o, 896 x 9728 gate-up, 4864 x 896 down, 896 x 4864 the brief's, 896 x 151936 the
 * output head). Wall time of back-to-back calls (bench_util.h): where "host" is close to "us",
 * the figure is the host's recording cost, not the kernel's. */
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

typedef struct call {
    const wgt_tensor *x, *w;
    wgt_ftype q; /* WGT_FTYPE_F32: a float weight */
} call;

static wgt_status make_call(const void *arg, wgt_tensor **y)
{
    const call *c = arg;
    if (c->q != WGT_FTYPE_F32) return wgt_qlinear(c->x, c->w, c->q, NULL, y);
    return wgt_linear(c->x, c->w, NULL, y);
}

/* A weight [N, K] of type name: random floats in [-1, 1], or random blocks with f16 scales 2^-10. */
static wgt_status make_weight(wgt_context *ctx, const char *name, int64_t N, int64_t K, wgt_ftype *q, double *bytes,
                              wgt_tensor **out)
{
    wgt_status st;
    if (!strcmp(name, "f32") || !strcmp(name, "f16") || !strcmp(name, "bf16")) {
        wgt_dtype dt = !strcmp(name, "f32") ? WGT_F32 : !strcmp(name, "f16") ? WGT_F16 : WGT_BF16;
        int64_t shape[2] = {N, K};
        *out = bench_random(ctx, dt, 2, shape, -1, 1);
        *q = WGT_FTYPE_F32, *bytes = (double)N * K * wgt_dtype_size(dt);
        return WGT_OK;
    }
    *q = !strcmp(name, "q8_0") ? WGT_FTYPE_Q8_0 : !strcmp(name, "q4_0") ? WGT_FTYPE_Q4_0 : WGT_FTYPE_F32;
    if (*q == WGT_FTYPE_F32) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "unknown type %s (f32 f16 bf16 q8_0 q4_0)", name);
    uint64_t nb;
    if ((st = wgt_ftype_bytes(*q, N * K, &nb))) return st;
    uint8_t *b = malloc(nb + 8);
    if (!b) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    for (uint64_t i = 0; i < nb; i += 8) {
        uint64_t v = next();
        memcpy(b + i, &v, 8);
    }
    const uint8_t scale[2] = {0x00, 0x14}; /* f16 2^-10 */
    for (uint64_t o = 0; o < nb; o += wgt_ftype_block_bytes(*q)) memcpy(b + o, scale, 2);
    st = wgt_qweight_upload(ctx, *q, N, K, b, out);
    free(b);
    *bytes = (double)nb;
    return st;
}

static int list(const char *s, long long *v, int cap)
{
    int n = 0;
    for (const char *p = s; *p && n < cap; p = strchr(p, ',') ? strchr(p, ',') + 1 : p + strlen(p))
        v[n++] = atoll(p);
    return n;
}

int main(int argc, char **argv)
{
    const char *types = "f16,q8_0,q4_0", *ms_s = "1,2,4,8,16,32,64";
    const char *shapes = "896x1152,896x896,896x9728,4864x896,896x4864,896x151936";
    int iters = 200;
    double peak = 4160;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--types") && i + 1 < argc) types = argv[++i];
        else if (!strcmp(argv[i], "--ms") && i + 1 < argc) ms_s = argv[++i];
        else if (!strcmp(argv[i], "--shapes") && i + 1 < argc) shapes = argv[++i];
        else if (!strcmp(argv[i], "--peak") && i + 1 < argc) peak = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_matmul_rows [--iters N] [--types f16,q8_0,..] [--ms 1,2,..] "
                            "[--shapes KxN,..] [--peak GB/s]\n");
            return 2;
        }
    }
    /* the rows column runs with the WGT_MATMUL_ROWS given (16: 16 rows a pass), the base with 0 */
    const char *given = getenv("WGT_MATMUL_ROWS");
    char rows_env[16];
    snprintf(rows_env, sizeof rows_env, "%s", given && strcmp(given, "0") ? given : "1");
    long long ms[16];
    int nm = list(ms_s, ms, 16);
    wgt_context *ctx;
    TRY(wgt_context_create(NULL, &ctx));
    wgt_adapter_info info;
    wgt_context_adapter_info(ctx, &info);
    printf("adapter: %s (%s); peak %.0f GB/s; us per call (host share); GB/s of weight bytes; rows: "
           "matmul_rows.wgsl, base: WGT_MATMUL_ROWS=0\n",
           info.name, info.backend_name, peak);
    printf("%-5s %-11s %3s  %10s %8s %7s  %10s %8s %7s  %6s\n", "type", "KxN", "M", "rows us", "GB/s", "%peak",
           "base us", "GB/s", "%peak", "speedup");
    char tbuf[256];
    snprintf(tbuf, sizeof tbuf, "%s", types);
    for (char *t = strtok(tbuf, ","); t; t = strtok(NULL, ",")) {
        for (const char *sp = shapes; *sp;) {
            long long K = atoll(sp), N = strchr(sp, 'x') ? atoll(strchr(sp, 'x') + 1) : 0;
            sp = strchr(sp, ',') ? strchr(sp, ',') + 1 : sp + strlen(sp);
            if (K < 8 || N < 1) continue;
            wgt_tensor *w;
            wgt_ftype q;
            double bytes = 0;
            TRY(make_weight(ctx, t, N, K, &q, &bytes, &w));
            for (int i = 0; i < nm; i++) {
                int64_t xs[2] = {ms[i], K};
                wgt_tensor *x = bench_random(ctx, WGT_F32, 2, xs, -1, 1);
                call c = {x, w, q};
                double us[2], host[2];
                for (int base = 0; base < 2; base++) {
                    setenv("WGT_MATMUL_ROWS", base ? "0" : rows_env, 1);
                    us[base] = 1e6 * bench_make_seconds(ctx, make_call, &c, iters, &host[base]);
                    host[base] *= 1e6;
                }
                double g0 = bytes / us[0] / 1e3, g1 = bytes / us[1] / 1e3;
                printf("%-5s %5lldx%-6lld %3lld  %5.1f(%4.1f) %7.0f %6.1f%%  %5.1f(%4.1f) %7.0f %6.1f%%  %6.2fx\n", t, K,
                       N, ms[i], us[0], host[0], g0, 100 * g0 / peak, us[1], host[1], g1, 100 * g1 / peak,
                       us[1] / us[0]);
                fflush(stdout);
                wgt_tensor_free(x);
            }
            wgt_tensor_free(w);
        }
    }
    wgt_context_free(ctx);
    return 0;
}
