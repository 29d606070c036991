/* The output layer of a decode token: bench_lm_head [--reps N] [--shapes NxK,..] [--types f16,..]
 * [--variants V,..] [--peak GB/s]
 * wgt_lm_head (src/ops/fused_lm_head.c) on x [1, K] with the RMSNorm prologue through weights [N, K]
 * (f16 / bf16 / f32, or q8_0 / q4_0 blocks), for each WGT_LM_HEAD value in --variants (default
 * "0,auto": the composition of fused_linear and wgt_reduce's argmax, then the lm_head kernel),
 * once giving the logits alone and once the greedy token too: microseconds a call (wall time of
 * back-to-back calls, bench_util.h) and the weights' bytes a second against the peak (default
 * 4160 GB/s, the H200's HBM3e as the streaming kernel reads it), as a percentage. Default shapes:
 * Qwen2.5-0.5B's (151936 x 896) and Llama-3.2-1B's (128256 x 2048) output layers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "ops/fused_lm_head.h"
#include "ops/ops.h"

#include "bench_util.h"

typedef struct call {
    const wgt_tensor *x, *g, *w;
    wgt_ftype q;
    int token;
} call;

static wgt_status run(void *arg)
{
    const call *c = arg;
    wgt_tensor *lg = NULL, *tok = NULL;
    wgt_status st = wgt_lm_head(c->x, c->g, 1e-6, c->w, c->q, &lg, c->token ? &tok : NULL);
    wgt_tensor_free(lg);
    wgt_tensor_free(tok);
    return st;
}

/* random blocks of type q with f16 scale 2^-10, as wgt_qlinear takes them */
static wgt_tensor *blocks(wgt_context *ctx, wgt_ftype q, int64_t N, int64_t K, double *bytes)
{
    uint64_t nb;
    TRY(wgt_ftype_bytes(q, N * K, &nb));
    uint8_t *h = malloc(nb + 8);
    if (!h) exit(1);
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (uint64_t i = 0; i < nb; i += 8) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        memcpy(h + i, &s, 8);
    }
    const uint8_t scale[2] = {0x00, 0x14};
    for (uint64_t o = 0; o < nb; o += wgt_ftype_block_bytes(q)) memcpy(h + o, scale, 2);
    wgt_tensor *t;
    TRY(wgt_qweight_upload(ctx, q, N, K, h, &t));
    free(h);
    *bytes = (double)nb;
    return t;
}

int main(int argc, char **argv)
{
    int reps = 200;
    const char *shapes = "151936x896,128256x2048", *types = "f16", *variants = "0,auto";
    double peak = 4160;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--shapes") && i + 1 < argc) shapes = argv[++i];
        else if (!strcmp(argv[i], "--types") && i + 1 < argc) types = argv[++i];
        else if (!strcmp(argv[i], "--variants") && i + 1 < argc) variants = argv[++i];
        else if (!strcmp(argv[i], "--peak") && i + 1 < argc) peak = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--reps N] [--shapes NxK,..] [--types f16,bf16,f32,q8_0,q4_0] [--variants V,..] "
                            "[--peak GB/s]\n", argv[0]);
            return 2;
        }
    }
    wgt_context *ctx;
    TRY(wgt_context_create(NULL, &ctx));
    wgt_adapter_info info;
    TRY(wgt_context_adapter_info(ctx, &info));
    printf("adapter: %s (%s), %d reps, peak %.0f GB/s\n", info.name, info.backend_name, reps, peak);
    printf("%-14s %-6s %-16s %10s %9s %7s %10s %9s %7s\n", "shape", "type", "WGT_LM_HEAD", "logits us", "GB/s", "%peak",
           "+token us", "GB/s", "%peak");
    char *sh = strdup(shapes);
    for (char *sp = strtok(sh, ","); sp; sp = strtok(NULL, ",")) {
        long long N = 0, K = 0;
        if (sscanf(sp, "%lldx%lld", &N, &K) != 2 || N <= 0 || K <= 0) {
            fprintf(stderr, "bad shape %s (NxK)\n", sp);
            return 2;
        }
        int64_t xs[2] = {1, K}, gs = K, ws[2] = {N, K};
        wgt_tensor *x = bench_random(ctx, WGT_F32, 2, xs, -1, 1), *g = bench_random(ctx, WGT_F32, 1, &gs, 0.5, 1.5);
        const char *t0 = types;
        while (*t0) {
            char tname[16];
            size_t tl = strcspn(t0, ",");
            snprintf(tname, sizeof tname, "%.*s", (int)(tl < 15 ? tl : 15), t0);
            t0 += tl + (t0[tl] == ',');
            call c = {x, g, NULL, WGT_FTYPE_F32, 0};
            double bytes;
            wgt_tensor *w;
            if (!strcmp(tname, "q8_0")) c.q = WGT_FTYPE_Q8_0, w = blocks(ctx, c.q, N, K, &bytes);
            else if (!strcmp(tname, "q4_0")) c.q = WGT_FTYPE_Q4_0, w = blocks(ctx, c.q, N, K, &bytes);
            else {
                wgt_dtype dt = !strcmp(tname, "f32") ? WGT_F32 : !strcmp(tname, "bf16") ? WGT_BF16 : WGT_F16;
                w = bench_random(ctx, dt, 2, ws, -1, 1);
                bytes = (double)N * K * wgt_dtype_size(dt);
            }
            c.w = w;
            char *vs = strdup(variants), *save = NULL;
            for (char *v = strtok_r(vs, ",", &save); v; v = strtok_r(NULL, ",", &save)) {
                setenv("WGT_LM_HEAD", v, 1);
                c.token = 0;
                double a = bench_seconds(ctx, run, &c, reps);
                c.token = 1;
                double b = bench_seconds(ctx, run, &c, reps);
                printf("%-14s %-6s %-16s %10.1f %9.0f %6.1f%% %10.1f %9.0f %6.1f%%\n", sp, tname, v, a * 1e6, bytes / a / 1e9,
                       100 * bytes / a / 1e9 / peak, b * 1e6, bytes / b / 1e9, 100 * bytes / b / 1e9 / peak);
                fflush(stdout);
            }
            free(vs);
            wgt_tensor_free(w);
        }
        wgt_tensor_free(x);
        wgt_tensor_free(g);
    }
    free(sh);
    wgt_context_free(ctx);
    return 0;
}
