/* Batched decode (wgt_batch, what wgt serve runs): bench_batch_decode -m MODEL|config.json [--type T]
 * [--streams 1,8,32,64] [--prompt P] [--steps N]
 * For each stream count S: S sequences each prefilled with P tokens (one step), then N decode steps
 * of all S together (greedy); aggregate decode tok/s (S * N / seconds) and ms per step, and the
 * ratio to one stream. No HTTP, no tokenizer: the figure of the batched forward pass itself
 * (tools/serve_bench.py measures the server around it). A config.json alone gets random weights of
 * --type (default f16). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

int main(int argc, char **argv)
{
    const char *model = NULL, *type = NULL, *streams = "1,8,32,64";
    int64_t prompt = 32, steps = 32;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-m") && i + 1 < argc) model = argv[++i];
        else if (!strcmp(argv[i], "--type") && i + 1 < argc) type = argv[++i];
        else if (!strcmp(argv[i], "--streams") && i + 1 < argc) streams = argv[++i];
        else if (!strcmp(argv[i], "--prompt") && i + 1 < argc) prompt = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoll(argv[++i]);
        else model = NULL, i = argc;
    }
    if (!model || prompt < 1 || steps < 1) {
        fprintf(stderr, "usage: bench_batch_decode -m MODEL|config.json [--type T] [--streams 1,8,..] [--prompt P] "
                        "[--steps N]\n");
        return 2;
    }
    int smax = 0;
    for (const char *p = streams; *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : p + strlen(p))
        if (atoi(p) > smax) smax = atoi(p);
    if (smax < 1 || smax > 1024) {
        fprintf(stderr, "bench_batch_decode: --streams from 1 to 1024\n");
        return 2;
    }
    wgt_context *ctx;
    TRY(wgt_context_create(NULL, &ctx));
    wgt_model_options mo = {0};
    mo.max_ctx = prompt + steps + 8;
    mo.no_kv_cache = 1;
    mo.kv_caches = smax;
    mo.random_type = type;
    wgt_model *m;
    TRY(wgt_model_open_ex(ctx, model, &mo, &m));
    wgt_batch *b;
    TRY(wgt_batch_create(m, smax, &b));
    int64_t V = wgt_model_vocab(m);
    int32_t *ids = malloc((size_t)(smax * prompt) * sizeof *ids), *tok = malloc((size_t)smax * sizeof *tok);
    wgt_batch_item *it = calloc((size_t)smax, sizeof *it);
    if (!ids || !tok || !it) return 1;
    for (int64_t i = 0; i < smax * prompt; i++) ids[i] = (int32_t)((i * 7919 + 13) % V);
    wgt_sampling sp = {0};
    sp.ignore_eos = 1;
    wgt_adapter_info info;
    wgt_context_adapter_info(ctx, &info);
    printf("model: %s (%s%s%s) on %s (%s); prompt %lld, %lld decode steps\n", model, wgt_model_arch(m),
           type ? ", " : "", type ? type : "", info.name, info.backend_name, (long long)prompt, (long long)steps);
    printf("%8s %14s %10s %10s\n", "streams", "tok/s", "ms/step", "x 1 stream");
    double one = 0;
    for (const char *p = streams; *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : p + strlen(p)) {
        int S = atoi(p);
        if (S < 1) continue;
        for (int s = 0; s < S; s++) {
            TRY(wgt_batch_slot_truncate(b, s, 0));
            it[s] = (wgt_batch_item){s, ids + s * prompt, prompt, &sp, 0, NULL, 0};
        }
        TRY(wgt_batch_step(b, it, S)); /* the prompts */
        for (int s = 0; s < S; s++) tok[s] = it[s].token;
        /* warm-up: two steps (pipelines of this row count) */
        double t0 = 0;
        for (int64_t k = 0; k < steps + 2; k++) {
            if (k == 2) {
                TRY(wgt_context_sync(ctx, -1));
                t0 = wgt_now_seconds();
            }
            for (int s = 0; s < S; s++) it[s] = (wgt_batch_item){s, &tok[s], 1, &sp, (uint32_t)k, NULL, 0};
            TRY(wgt_batch_step(b, it, S));
            for (int s = 0; s < S; s++) tok[s] = it[s].token;
        }
        double sec = wgt_now_seconds() - t0, tps = (double)S * steps / sec;
        if (S == 1) one = tps;
        printf("%8d %14.1f %10.2f %10.2f\n", S, tps, 1e3 * sec / steps, one > 0 ? tps / one : 0);
        fflush(stdout);
    }
    free(ids), free(tok), free(it);
    wgt_batch_free(b);
    wgt_model_free(m);
    wgt_context_free(ctx);
    return 0;
}
