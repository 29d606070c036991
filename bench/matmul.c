/* The general matrix product's throughput: bench_matmul [--reps N] [--peak TFLOP/s] [--only W1,W2..]
 * [--size small]
 * For each shape: GFLOP/s (2 M N K per product) and the share of the f32 FMA peak, through
 * wgt_matmul / wgt_linear on f32 activations (A) and weights (B) of f32, f16 or bf16 (converted in
 * the kernel, f32 sums). Layouts, as the trainer makes them (x [T, I], w [O, I], dy [T, O]):
 *   nt: x @ w^T (a linear layer's forward: both operands contiguous in k),
 *   nn: dy @ w (its input gradient: B contiguous in n), or a plain A @ B,
 *   tn: dy^T @ x (its weight gradient: A contiguous in m, B in n; the k split where the output is small).
 * Shapes: square 4096^3; GPT-2 small's training products (8 x 512 = 4096 tokens, width 768: qkv
 * 2304, attention out 768, MLP 3072 and back, the 50257-word head; each forward, input gradient and
 * weight gradient); the default model's (models/bible-llama: 32 x 256 = 8192 tokens, width 256,
 * MLP 704, vocabulary 4096); Qwen2.5-0.5B's prefill of 512 tokens with f16 and bf16 weights (width
 * 896, qkv 1152, MLP 4864); Llama-3.2-1B's with f16 weights (width 2048, qkv 3072, gate/up fused 16384,
 * MLP 8192). The peak assumed (--peak, default 66.9 TFLOP/s): the H200's 132 SMs x
 * 128 f32 lanes x 2 FLOP (an FMA) x 1.98 GHz (its boost clock). --size small divides every size by
 * 8 (CPU adapters: a smoke run, not a figure). Each figure: bench_util.h's bench_seconds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"

#include "bench_util.h"

typedef struct shape {
    const char *name;
    const char *layout; /* nt, nn, tn */
    int64_t M, N, K;
    wgt_dtype wdt;
} shape;

#define GPT2(name, O, I)                                                                                    \
    {"gpt2 " name " fwd", "nt", 4096, O, I, WGT_F32}, {"gpt2 " name " dx", "nn", 4096, I, O, WGT_F32},     \
    {"gpt2 " name " dw", "tn", O, I, 4096, WGT_F32}
#define BIBLE(name, O, I)                                                                                   \
    {"bible " name " fwd", "nt", 8192, O, I, WGT_F32}, {"bible " name " dx", "nn", 8192, I, O, WGT_F32},   \
    {"bible " name " dw", "tn", O, I, 8192, WGT_F32}

static const shape shapes[] = {
    {"square 4096", "nn", 4096, 4096, 4096, WGT_F32},
    {"square 4096 nt", "nt", 4096, 4096, 4096, WGT_F32},
    GPT2("qkv", 2304, 768),
    GPT2("attn out", 768, 768),
    GPT2("mlp up", 3072, 768),
    GPT2("mlp down", 768, 3072),
    GPT2("lm head", 50257, 768),
    BIBLE("q", 256, 256),
    BIBLE("kv", 128, 256),
    BIBLE("gate", 704, 256),
    BIBLE("down", 256, 704),
    BIBLE("lm head", 4096, 256),
    {"qwen0.5b qkv f16", "nt", 512, 1152, 896, WGT_F16},
    {"qwen0.5b o f16", "nt", 512, 896, 896, WGT_F16},
    {"qwen0.5b gate f16", "nt", 512, 4864, 896, WGT_F16},
    {"qwen0.5b down f16", "nt", 512, 896, 4864, WGT_F16},
    {"qwen0.5b gate bf16", "nt", 512, 4864, 896, WGT_BF16},
    {"qwen0.5b gate f32", "nt", 512, 4864, 896, WGT_F32},
    {"llama1b qkv f16", "nt", 512, 3072, 2048, WGT_F16},
    {"llama1b o f16", "nt", 512, 2048, 2048, WGT_F16},
    {"llama1b gate f16", "nt", 512, 16384, 2048, WGT_F16},
    {"llama1b down f16", "nt", 512, 2048, 8192, WGT_F16},
};

/* 1 when name contains one of the comma-separated words of list */
static int matches(const char *name, const char *list)
{
    char w[64];
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n > 0 && n < sizeof w) {
            memcpy(w, p, n), w[n] = 0;
            if (strstr(name, w)) return 1;
        }
        p += n + (p[n] == ',');
    }
    return 0;
}

typedef struct call {
    const char *layout;
    const wgt_tensor *a, *b;
} call;

static wgt_status make_call(const void *arg, wgt_tensor **y)
{
    const call *c = arg;
    if (!strcmp(c->layout, "nt")) return wgt_linear(c->a, c->b, NULL, y);
    return wgt_matmul(c->a, c->b, y);
}

int main(int argc, char **argv)
{
    int reps = 20, div = 1;
    double peak = 66.9;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--peak") && i + 1 < argc) peak = atof(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--size") && i + 1 < argc) div = strcmp(argv[++i], "small") ? 1 : 8;
        else {
            fprintf(stderr, "usage: %s [--reps N] [--peak TFLOP/s] [--only W1,W2..] [--size small]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    wgt_context *ctx;
    TRY(wgt_context_create(NULL, &ctx));
    wgt_adapter_info info;
    TRY(wgt_context_adapter_info(ctx, &info));
    const char *tile = getenv("WGT_MATMUL_TILE");
    printf("adapter: %s (%s), %d reps, f32 peak %.1f TFLOP/s, WGT_MATMUL_TILE=%s\n", info.name, info.backend_name, reps,
           peak, tile ? tile : "");
    printf("%-24s %-3s %6s %6s %6s %-5s %10s %7s %10s\n", "product", "lay", "M", "N", "K", "B", "GFLOP/s", "% peak",
           "us");
    double sum_t = 0, sum_f = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const shape *sh = &shapes[s];
        if (only && !matches(sh->name, only)) continue;
        int64_t M = sh->M / div, N = sh->N / div, K = sh->K / div;
        wgt_tensor *a, *b, *av = NULL, *bv = NULL;
        call c = {sh->layout, NULL, NULL};
        if (!strcmp(sh->layout, "nt")) { /* x [M, K], w [N, K] */
            a = bench_random(ctx, WGT_F32, 2, (int64_t[]){M, K}, -1, 1);
            b = bench_random(ctx, sh->wdt, 2, (int64_t[]){N, K}, -1, 1);
            c.a = a, c.b = b;
        } else if (!strcmp(sh->layout, "nn")) { /* a [M, K], b [K, N] */
            a = bench_random(ctx, WGT_F32, 2, (int64_t[]){M, K}, -1, 1);
            b = bench_random(ctx, sh->wdt, 2, (int64_t[]){K, N}, -1, 1);
            c.a = a, c.b = b;
        } else { /* tn: a [K, M] transposed, b [K, N] */
            a = bench_random(ctx, WGT_F32, 2, (int64_t[]){K, M}, -1, 1);
            b = bench_random(ctx, sh->wdt, 2, (int64_t[]){K, N}, -1, 1);
            TRY(wgt_tensor_transpose(a, 0, 1, &av));
            c.a = av, c.b = b;
        }
        double t = bench_make_seconds(ctx, make_call, &c, reps, NULL);
        double flop = 2.0 * (double)M * (double)N * (double)K;
        sum_t += t, sum_f += flop;
        printf("%-24s %-3s %6lld %6lld %6lld %-5s %10.1f %6.1f%% %10.1f\n", sh->name, sh->layout, (long long)M,
               (long long)N, (long long)K, wgt_dtype_name(sh->wdt), flop / t / 1e9, 100.0 * flop / t / 1e12 / peak,
               t * 1e6);
        fflush(stdout);
        wgt_tensor_free(av);
        wgt_tensor_free(bv);
        wgt_tensor_free(a);
        wgt_tensor_free(b);
    }
    if (sum_t > 0)
        printf("all products above, one after another: %.1f GFLOP/s (%.1f%% of peak) in %.1f ms\n", sum_f / sum_t / 1e9,
               100.0 * sum_f / sum_t / 1e12 / peak, sum_t * 1e3);
    wgt_context_free(ctx);
    return 0;
}
