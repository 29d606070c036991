/* Op kernel throughput: bench_ops [--size small|large] [--reps N] [--only NAME]
 * Prints GB/s for a large elementwise add, GB/s of weight bytes for GEMV (one token through a
 * linear layer, f32 and f16 weights; Q8_0 and Q4_K weights through wgt_qlinear), TFLOP/s for
 * GEMM (square f32, and a 512-token prefill through a 4096 x 4096 linear layer), and attention
 * over a KV cache (decode: GB/s of K and V read; prefill: TFLOP/s counting 2 L^2 D per head, QK^T
 * and PV over the causal half; `--only prefill`: two models' prompts through the tensor-core tiles).
 * Each figure: bench_util.h's bench_seconds (a quarter second of warm-up calls: the GPU's clock
 * climbs back from idle), then N calls recorded back to back between two wgt_context_sync, wall
 * clock (host recording overlaps the device, so a kernel shorter than the host's per-call cost
 * shows the host's rate). --size small suits the CPU adapters. A sum
 * reduction is left out: this benchmark uses only the elementwise and matrix ops. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "ops/api.h"
#include "ops/ops.h"

#include "bench_util.h"

static wgt_context *ctx;
static int reps = 50;
static const char *only; /* --only WORD: run the benchmarks whose name starts with WORD */
static int64_t one_o, one_i; /* --gemv O I DT */
static int64_t one_hq, one_hkv, one_lk, one_d; /* --sdpa Hq Hkv Lk D */
static wgt_dtype one_dt;
static int want(const char *name) { return !only || !strncmp(name, only, strlen(only)); }

typedef wgt_status (*op_fn)(const wgt_tensor *a, const wgt_tensor *b, wgt_tensor **out);

static wgt_status add_op(const wgt_tensor *a, const wgt_tensor *b, wgt_tensor **out)
{
    return wgt_binary(WGT_BINARY_ADD, a, b, out);
}
static wgt_status linear_op(const wgt_tensor *a, const wgt_tensor *b, wgt_tensor **out)
{
    return wgt_linear(a, b, NULL, out);
}

typedef struct call {
    op_fn op;
    const wgt_tensor *a, *b;
} call;

static wgt_status make_call(const void *arg, wgt_tensor **y)
{
    const call *c = arg;
    return c->op(c->a, c->b, y);
}

/* Seconds per call of op(a, b). */
static double time_op(op_fn op, const wgt_tensor *a, const wgt_tensor *b)
{
    call c = {op, a, b};
    return bench_make_seconds(ctx, make_call, &c, reps, NULL);
}

/* A tensor of small random values (f32 or f16), made on the device from an f32 upload. */
static wgt_tensor *random_tensor(wgt_dtype dt, int nd, const int64_t *shape)
{
    return bench_random(ctx, dt, nd, shape, -0.05f, 0.05f);
}

static void bench_add(int64_t n)
{
    wgt_tensor *a = random_tensor(WGT_F32, 1, &n), *b = random_tensor(WGT_F32, 1, &n);
    double t = time_op(add_op, a, b);
    printf("add f32 %lld elements: %9.2f GB/s (%.1f us)\n", (long long)n, 3.0 * 4 * n / t / 1e9, t * 1e6);
    wgt_tensor_free(a);
    wgt_tensor_free(b);
}

static uint32_t red_dims;
static wgt_status sum_op(const wgt_tensor *a, const wgt_tensor *b, wgt_tensor **out)
{
    (void)b;
    return wgt_reduce(WGT_REDUCE_SUM, a, red_dims, 0, 0, out);
}
static wgt_status softmax_op(const wgt_tensor *a, const wgt_tensor *b, wgt_tensor **out)
{
    (void)b;
    return wgt_softmax(a, -1, out);
}
static wgt_status rms_op(const wgt_tensor *a, const wgt_tensor *b, wgt_tensor **out)
{
    return wgt_rms_norm(a, 1, b, 1e-6, out);
}
static wgt_status add16_op(const wgt_tensor *a, const wgt_tensor *b, wgt_tensor **out)
{
    return wgt_binary(WGT_BINARY_ADD, a, b, out);
}

/* Row ops over [R, C] f32: sum over rows (dims 1), over columns (dims 0) and all; softmax and
 * rms_norm along rows; GB/s of the bytes read and written. */
static void bench_rows(int64_t R, int64_t C)
{
    int64_t sh[2] = {R, C};
    wgt_tensor *x = random_tensor(WGT_F32, 2, sh), *w = random_tensor(WGT_F32, 1, &C);
    double in = 4.0 * R * C, t;
    const struct { uint32_t dims; const char *what; double out; } sums[] = {
        {2, "sum over the last dim", 4.0 * R}, {1, "sum over the first dim", 4.0 * C}, {0, "sum of everything", 4}};
    for (int i = 0; i < 3; i++) {
        red_dims = sums[i].dims;
        t = time_op(sum_op, x, NULL);
        printf("%s f32 [%lld, %lld]: %9.2f GB/s (%.1f us)\n", sums[i].what, (long long)R, (long long)C,
               (in + sums[i].out) / t / 1e9, t * 1e6);
    }
    t = time_op(softmax_op, x, NULL);
    printf("softmax f32 [%lld, %lld] last dim: %9.2f GB/s (%.1f us)\n", (long long)R, (long long)C, 2 * in / t / 1e9,
           t * 1e6);
    t = time_op(rms_op, x, w);
    printf("rms_norm f32 [%lld, %lld]: %9.2f GB/s (%.1f us)\n", (long long)R, (long long)C, 2 * in / t / 1e9, t * 1e6);
    wgt_tensor_free(x);
    wgt_tensor_free(w);
}

static void bench_add16(int64_t n)
{
    wgt_tensor *a = random_tensor(WGT_F16, 1, &n), *b = random_tensor(WGT_F16, 1, &n);
    double t = time_op(add16_op, a, b);
    printf("add f16 %lld elements: %9.2f GB/s (%.1f us)\n", (long long)n, 3.0 * 2 * n / t / 1e9, t * 1e6);
    wgt_tensor_free(a);
    wgt_tensor_free(b);
}

static void bench_gemv(int64_t O, int64_t I, wgt_dtype wdt)
{
    int64_t xs[2] = {1, I}, ws[2] = {O, I};
    wgt_tensor *x = random_tensor(WGT_F32, 2, xs), *w = random_tensor(wdt, 2, ws);
    double t = time_op(linear_op, x, w);
    double bytes = (double)O * I * wgt_dtype_size(wdt);
    printf("gemv x[1,%lld] f32 . w[%lld,%lld]^T %s: %9.2f GB/s of weights (%.1f us)\n", (long long)I, (long long)O,
           (long long)I, wgt_dtype_name(wdt), bytes / t / 1e9, t * 1e6);
    wgt_tensor_free(x);
    wgt_tensor_free(w);
}

static void bench_gemm(int64_t M, int64_t N, int64_t K, wgt_dtype wdt, int as_linear)
{
    wgt_tensor *a, *b;
    double t;
    if (as_linear) {
        int64_t xs[2] = {M, K}, ws[2] = {N, K};
        a = random_tensor(WGT_F32, 2, xs), b = random_tensor(wdt, 2, ws);
        t = time_op(linear_op, a, b);
    } else {
        int64_t as[2] = {M, K}, bs[2] = {K, N};
        a = random_tensor(WGT_F32, 2, as), b = random_tensor(wdt, 2, bs);
        t = time_op(wgt_matmul, a, b);
    }
    printf("%s %lld x %lld x %lld (%s B): %8.2f TFLOP/s (%.1f us)\n", as_linear ? "linear" : "matmul", (long long)M,
           (long long)N, (long long)K, wgt_dtype_name(wdt), 2.0 * M * N * K / t / 1e12, t * 1e6);
    wgt_tensor_free(a);
    wgt_tensor_free(b);
}

/* Attention over a KV cache: decode (one query) as GB/s of K and V read, prefill as TFLOP/s. */
static const wgt_tensor *sdpa_k, *sdpa_v;
static wgt_sdpa_params sdpa_p;
static wgt_status sdpa_op(const wgt_tensor *q, const wgt_tensor *unused, wgt_tensor **out)
{
    return wgt_sdpa(q, sdpa_k, sdpa_v, NULL, &sdpa_p, out);
}

/* half: wgt_sdpa_params.half_tiles, as the models' f16 / quantized prefill (f32 q and cache) asks */
static void bench_sdpa(int64_t Hq, int64_t Hkv, int64_t Lq, int64_t Lk, int64_t D, wgt_dtype dt, int half)
{
    int64_t qs[4] = {1, Hq, Lq, D}, ks[4] = {1, Hkv, Lk, D};
    wgt_tensor *q = random_tensor(dt, 4, qs), *k = random_tensor(dt, 4, ks), *v = random_tensor(dt, 4, ks);
    sdpa_k = k, sdpa_v = v;
    sdpa_p = (wgt_sdpa_params){0, 1, Lk - Lq, 0, half};
    double t = time_op(sdpa_op, q, NULL);
    if (Lq == 1)
        printf("sdpa decode Hq %lld Hkv %lld Lk %lld D %lld %s: %9.2f GB/s of K and V (%.1f us)\n", (long long)Hq,
               (long long)Hkv, (long long)Lk, (long long)D, wgt_dtype_name(dt),
               2.0 * Hkv * Lk * D * wgt_dtype_size(dt) / t / 1e9, t * 1e6);
    else /* causal: about half the score matrix */
        printf("sdpa prefill Hq %lld Hkv %lld L %lld D %lld %s%s: %8.2f TFLOP/s (%.1f us)\n", (long long)Hq,
               (long long)Hkv, (long long)Lq, (long long)D, wgt_dtype_name(dt), half ? " half tiles" : "",
               2.0 * Hq * Lq * Lk * D / t / 1e12, t * 1e6);
    wgt_tensor_free(q);
    wgt_tensor_free(k);
    wgt_tensor_free(v);
}

/* ---- quantized GEMV (src/ops/qlinear.c): GB/s of the quantized weight bytes ---- */
static wgt_ftype qgemv_type;
static wgt_status qlinear_op(const wgt_tensor *x, const wgt_tensor *w, wgt_tensor **out)
{
    return wgt_qlinear(x, w, qgemv_type, NULL, out);
}

/* Random blocks with f16 scales of 2^-10 (the kernel's speed does not depend on the values). */
static void bench_qgemv(int64_t O, int64_t I, wgt_ftype type)
{
    uint64_t bytes;
    TRY(wgt_ftype_bytes(type, O * I, &bytes));
    uint8_t *b = malloc(bytes);
    uint32_t s = 777, bb = wgt_ftype_block_bytes(type);
    for (uint64_t i = 0; i < bytes; i++) b[i] = (uint8_t)((s = s * 1664525u + 1013904223u) >> 24);
    for (uint64_t o = 0; o < bytes; o += bb) {
        uint8_t *d = b + o + (type == WGT_FTYPE_Q6_K ? 208 : 0);
        d[0] = 0x00, d[1] = 0x14;
        if (type == WGT_FTYPE_Q4_K) d[2] = 0x00, d[3] = 0x14;
    }
    int64_t xs[2] = {1, I};
    wgt_tensor *x = random_tensor(WGT_F32, 2, xs), *w;
    TRY(wgt_qweight_upload(ctx, type, O, I, b, &w));
    qgemv_type = type;
    double t = time_op(qlinear_op, x, w);
    printf("qgemv x[1,%lld] f32 . w[%lld,%lld]^T %s: %9.2f GB/s of weights (%.1f us)\n", (long long)I, (long long)O,
           (long long)I, wgt_ftype_name(type), (double)bytes / t / 1e9, t * 1e6);
    wgt_tensor_free(x);
    wgt_tensor_free(w);
    free(b);
}

int main(int argc, char **argv)
{
    int large = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--size") && i + 1 < argc) large = strcmp(argv[++i], "small") != 0;
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--sdpa") && i + 4 < argc) { /* one decode: --sdpa Hq Hkv Lk D (f32) */
            one_hq = atoll(argv[i + 1]), one_hkv = atoll(argv[i + 2]), one_lk = atoll(argv[i + 3]);
            one_d = atoll(argv[i + 4]), i += 4;
        } else if (!strcmp(argv[i], "--gemv") && i + 3 < argc) { /* one shape: --gemv O I f32|f16|bf16 */
            one_o = atoll(argv[i + 1]), one_i = atoll(argv[i + 2]), i += 3;
            one_dt = !strcmp(argv[i], "f16") ? WGT_F16 : !strcmp(argv[i], "bf16") ? WGT_BF16 : WGT_F32;
        }
        else {
            fprintf(stderr, "usage: %s [--size small|large] [--reps N] [--only add|rows|gemv|qgemv|gemm|sdpa|prefill] [--gemv O I DTYPE] [--sdpa Hq Hkv Lk D]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    TRY(wgt_context_create(NULL, &ctx));
    wgt_adapter_info info;
    TRY(wgt_context_adapter_info(ctx, &info));
    printf("adapter: %s (%s), subgroups %s, %s sizes, %d reps\n", info.name, info.backend_name,
           info.has_subgroups ? "yes" : "no", large ? "large" : "small", reps);
    if (one_o > 0 && one_i > 0) {
        bench_gemv(one_o, one_i, one_dt);
    } else if (one_hq > 0 && one_hkv > 0 && one_lk > 0 && one_d > 0) {
        bench_sdpa(one_hq, one_hkv, 1, one_lk, one_d, WGT_F32, 0);
    } else if (large) {
        if (want("add")) bench_add(64ll << 20);
        if (want("add")) bench_add16(128ll << 20);
        if (want("rows")) bench_rows(8192, 8192);
        if (want("rows")) bench_rows(65536, 1024);
        if (want("gemv")) bench_gemv(4096, 4096, WGT_F32);
        if (want("gemv")) bench_gemv(4096, 4096, WGT_F16);
        if (want("gemv")) bench_gemv(4864, 896, WGT_F16);
        if (want("gemv")) bench_gemv(896, 4864, WGT_F16);
        if (want("gemv")) bench_gemv(14336, 4096, WGT_F16);
        if (want("gemv")) bench_gemv(151936, 896, WGT_F16);
        if (want("gemv")) bench_gemv(16384, 8192, WGT_F32); /* 512 MiB: the device's streaming rate */
        if (want("gemv")) bench_gemv(32768, 8192, WGT_F16);
        if (want("qgemv")) bench_qgemv(4096, 4096, WGT_FTYPE_Q8_0);
        if (want("qgemv")) bench_qgemv(4096, 4096, WGT_FTYPE_Q4_K);
        if (want("qgemv")) bench_qgemv(14336, 4096, WGT_FTYPE_Q8_0);
        if (want("gemm")) bench_gemm(2048, 2048, 2048, WGT_F32, 0);
        if (want("gemm")) bench_gemm(512, 4096, 4096, WGT_F32, 1);
        if (want("gemm")) bench_gemm(512, 4096, 4096, WGT_F16, 1);
        if (want("sdpa")) bench_sdpa(32, 8, 1, 4096, 128, WGT_F16, 0);
        if (want("sdpa")) bench_sdpa(14, 2, 1, 1024, 64, WGT_F32, 0);
        if (want("sdpa")) bench_sdpa(32, 8, 512, 512, 128, WGT_F16, 0);
        /* the prefill attention of Llama-3.2-1B's and Qwen2.5-0.5B's 512-token prompts (--only prefill) */
        if (want("prefill")) bench_sdpa(32, 8, 512, 512, 64, WGT_F32, 1);
        if (want("prefill")) bench_sdpa(14, 2, 512, 512, 64, WGT_F32, 1);
    } else {
        if (want("add")) bench_add(1 << 20);
        if (want("add")) bench_add16(1 << 20);
        if (want("rows")) bench_rows(512, 512);
        if (want("gemv")) bench_gemv(512, 512, WGT_F32);
        if (want("gemv")) bench_gemv(512, 512, WGT_F16);
        if (want("gemv")) bench_gemv(896, 256, WGT_F16);
        if (want("qgemv")) bench_qgemv(512, 512, WGT_FTYPE_Q8_0);
        if (want("qgemv")) bench_qgemv(512, 512, WGT_FTYPE_Q4_K);
        if (want("gemm")) bench_gemm(128, 128, 128, WGT_F32, 0);
        if (want("gemm")) bench_gemm(64, 256, 256, WGT_F16, 1);
        if (want("sdpa")) bench_sdpa(4, 2, 1, 256, 64, WGT_F16, 0);
        if (want("sdpa")) bench_sdpa(4, 2, 32, 32, 64, WGT_F32, 0);
        if (want("prefill")) bench_sdpa(14, 2, 64, 64, 64, WGT_F32, 1);
    }
    wgt_context_free(ctx);
    return 0;
}
