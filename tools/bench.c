/* wgt bench: benchmarks that print figures. --device: the device layer's costs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "wgt.h"

int wgt_print_device_bench(wgt_context *ctx, uint64_t max_bytes)
{
    wgt_adapter_info info;
    wgt_context_adapter_info(ctx, &info);
    wgt_device_bench b;
    if (wgt_context_bench(ctx, max_bytes, &b)) {
        fprintf(stderr, "wgt bench: %s\n", wgt_context_errmsg(ctx));
        return 1;
    }
    printf("device: %s (%s%s)\n", info.name, info.backend_name, info.compat ? ", compat" : "");
    printf("dispatch, one pass:        %7.2f us host to record, %7.2f us each end to end\n", b.dispatch_record_us,
           b.dispatch_total_us);
    printf("dispatch, a pass each:     %7.2f us host to record, %7.2f us each end to end\n", b.pass_record_us,
           b.pass_total_us);
    printf("submit and wait (median):  %7.1f us\n", b.submit_wait_us);
    printf("streaming y = a*x + b (bytes per buffer, read+write bandwidth):\n");
    for (int i = 0; i < b.n_sizes; i++)
        printf("  %10.1f MiB  %9.1f GB/s  (%d vec4 per invocation)\n", b.bytes[i] / 1048576.0, b.gbps[i], b.items[i]);
    return 0;
}

/* Prefill and decode speed of a model (a config.json alone gives random f16 weights). */
static int bench_model(const char *path, const char *type, int64_t n_prompt, int64_t n_decode)
{
    wgt_context *ctx;
    if (wgt_context_create(NULL, &ctx)) {
        fprintf(stderr, "wgt bench: %s\n", wgt_errmsg());
        return 1;
    }
    wgt_adapter_info info;
    wgt_context_adapter_info(ctx, &info);
    wgt_model *m;
    int rc = 1;
    wgt_model_options mo = {0};
    mo.max_ctx = n_prompt + n_decode + 8;
    mo.random_type = type;
    if (wgt_model_open_ex(ctx, path, &mo, &m)) {
        fprintf(stderr, "wgt bench: %s\n", wgt_errmsg());
        wgt_context_free(ctx);
        return 1;
    }
    int32_t *ids = malloc((size_t)n_prompt * sizeof *ids);
    int64_t V = wgt_model_vocab(m);
    for (int64_t i = 0; i < n_prompt; i++) ids[i] = (int32_t)((i * 7919 + 13) % V);
    wgt_sampling sp = {0};
    sp.ignore_eos = 1;
    wgt_generate_stats s;
    /* a short warm-up compiles every pipeline */
    if (!wgt_model_generate(m, ids, n_prompt < 8 ? n_prompt : 8, 2, &sp, NULL, NULL, &s) &&
        !wgt_model_generate(m, ids, n_prompt, n_decode + 1, &sp, NULL, NULL, &s)) {
        double bytes = (double)wgt_model_weight_bytes(m), read = (double)wgt_model_token_bytes(m);
        double dec = s.n_generated > 1 ? (s.n_generated - 1) / s.decode_seconds : 0;
        printf("model: %s (%s%s%s), %.1f MB of weights (%.1f MB read per token), on %s (%s)\n", path,
               wgt_model_arch(m), type ? ", " : "", type ? type : "", bytes / 1e6, read / 1e6, info.name,
               info.backend_name);
        printf("prefill: %lld tokens in %.3f s = %.1f tok/s\n", (long long)n_prompt, s.prefill_seconds,
               n_prompt / s.prefill_seconds);
        printf("decode:  %lld tokens, %.1f tok/s, %.2f ms/token, %.0f GB/s of weights read\n",
               (long long)(s.n_generated - 1), dec, dec > 0 ? 1000 / dec : 0, read * dec / 1e9);
        printf("per token: %.1f dispatches, %.2f submits, %.3f ms of host time recording (%.2f us per dispatch)\n",
               (double)s.dispatches / s.n_generated, (double)s.submits / s.n_generated,
               s.n_generated > 1 ? s.record_seconds * 1e3 / (s.n_generated - 1) : 0,
               s.n_generated > 1 ? s.record_seconds * 1e6 / (s.n_generated - 1) / ((double)s.dispatches / s.n_generated)
                                 : 0);
        rc = 0;
    } else
        fprintf(stderr, "wgt bench: %s\n", wgt_errmsg());
    free(ids);
    wgt_model_free(m);
    wgt_context_free(ctx);
    return rc;
}

int cmd_bench(int argc, char **argv)
{
    int device = 0;
    uint64_t max_bytes = 0;
    const char *model = NULL, *type = NULL;
    int64_t n_prompt = 128, n_decode = 64;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: wgt bench --device [--max-bytes N]\n"
                   "       wgt bench -m MODEL|config.json [--type T] [-p PROMPT_TOKENS] [-n DECODE_TOKENS]\n\n"
                   "--device   microseconds of host time per dispatch (one pass; a pass per dispatch),\n"
                   "           submit-and-wait latency, and streaming bandwidth from 1 MiB to N bytes per\n"
                   "           buffer (default: the device's storage binding limit)\n"
                   "-m         prefill and decode tok/s of a model (a config.json alone: random f16 weights\n"
                   "           of that shape), dispatches and submits per token, GB/s of weights read\n"
                   "--type     with a config.json: the weights' type (f16 default; f32, bf16, q8_0, q4_0,\n"
                   "           q4_k, q6_k)\n"
                   "-p, -n     prompt tokens (default 128) and tokens to decode (default 64)\n");
            return 0;
        }
        if (!strcmp(argv[i], "--device")) device = 1;
        else if (!strcmp(argv[i], "-m") && i + 1 < argc) model = argv[++i];
        else if (!strcmp(argv[i], "--type") && i + 1 < argc) type = argv[++i];
        else if (!strcmp(argv[i], "-p") && i + 1 < argc) n_prompt = atoll(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc) n_decode = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc) max_bytes = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "wgt bench: unknown option '%s' (see wgt bench --help)\n", argv[i]);
            return 2;
        }
    }
    if (model) return bench_model(model, type, n_prompt > 0 ? n_prompt : 1, n_decode > 0 ? n_decode : 1);
    if (!device) {
        fprintf(stderr, "wgt bench: say what to benchmark: --device or -m MODEL (see wgt bench --help)\n");
        return 2;
    }
    wgt_context *ctx;
    if (wgt_context_create(NULL, &ctx)) {
        fprintf(stderr, "wgt bench: %s\n", wgt_errmsg());
        return 1;
    }
    int rc = wgt_print_device_bench(ctx, max_bytes);
    wgt_context_free(ctx);
    return rc;
}
