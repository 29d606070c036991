/* wgt bench: benchmarks that print figures. --device: the device layer's costs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "args.h"
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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* untimed runs of wgt bench -m before its timed ones, in seconds (after a first run that compiles) */
#define BENCH_WARM_S 1.0

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Prefill and decode speed of a model (a config.json alone gives random f16 weights): the median
 * of `reps` timed runs (a single 512-token prefill lasts ~15 ms on the H200: one run's figure moved
 * by 2.5x between rounds of the same binary, bench/results/h200/tcd-staged-2026-12-03). */
static int bench_model(const char *path, const char *type, int64_t n_prompt, int64_t n_decode, int64_t reps)
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
    /* the figures are of the lengths asked for, or of none: a run cut short by the context is refused */
    if (n_prompt + n_decode > wgt_model_context(m)) {
        fprintf(stderr, "wgt bench: -p %lld + -n %lld tokens do not fit the context of %lld tokens (the model's "
                        "positions, at most 4096): ask for fewer\n", (long long)n_prompt, (long long)n_decode,
                (long long)wgt_model_context(m));
        wgt_model_free(m);
        wgt_context_free(ctx);
        return 2;
    }
    int32_t *ids = malloc((size_t)n_prompt * sizeof *ids);
    if (!ids) {
        fprintf(stderr, "wgt bench: out of host memory\n");
        wgt_model_free(m);
        wgt_context_free(ctx);
        return 1;
    }
    int64_t V = wgt_model_vocab(m);
    for (int64_t i = 0; i < n_prompt; i++) ids[i] = (int32_t)((i * 7919 + 13) % V);
    wgt_sampling sp = {0};
    sp.ignore_eos = 1;
    wgt_generate_stats s;
    /* an untimed run of the same lengths compiles every pipeline the timed one takes (a prefill's
     * tiled and attention pipelines depend on the prompt's length, decode's split attention on the
     * key count), so neither figure includes a shader compile; the cache is emptied after it, or the
     * timed run would reuse the same prompt's keys (generate keeps a common prefix) and prefill nothing */
    int bad = wgt_model_generate(m, ids, n_prompt, n_decode + 1, &sp, NULL, NULL, &s);
    /* then untimed runs for BENCH_WARM_S seconds: a GPU left idle while the weights are made and
     * uploaded drops its clock (the H200 to 345 MHz after ~4 s of Llama-3.2-1B f16 uploads) and takes
     * about half a second of work to climb back to 1980 MHz, so timed runs started at once measured
     * a third of the speed (bench/results/h200/clock-2026-12-03/: smi2.csv, nvidia-smi every 100 ms) */
    double warm0 = seconds();
    while (!bad && seconds() - warm0 < BENCH_WARM_S) {
        wgt_model_reset(m);
        bad = wgt_model_generate(m, ids, n_prompt, n_decode + 1, &sp, NULL, NULL, &s);
    }
    double pre[64], dec_s[64];
    int64_t reused = 0;
    for (int64_t r = 0; r < reps && !bad; r++) {
        wgt_model_reset(m);
        bad = wgt_model_generate(m, ids, n_prompt, n_decode + 1, &sp, NULL, NULL, &s);
        pre[r] = s.prefill_seconds, dec_s[r] = s.decode_seconds;
        if (s.n_reused > reused) reused = s.n_reused;
    }
    if (!bad) {
        double pre_sorted[64], dec_sorted[64];
        memcpy(pre_sorted, pre, sizeof(double) * (size_t)reps);
        memcpy(dec_sorted, dec_s, sizeof(double) * (size_t)reps);
        qsort(pre_sorted, (size_t)reps, sizeof(double), cmp_double);
        qsort(dec_sorted, (size_t)reps, sizeof(double), cmp_double);
        s.prefill_seconds = pre_sorted[reps / 2], s.decode_seconds = dec_sorted[reps / 2];
        s.n_reused = reused;
        double bytes = (double)wgt_model_weight_bytes(m), read = (double)wgt_model_token_bytes(m);
        double active = (double)wgt_model_active_bytes(m);
        double dec = s.n_generated > 1 ? (s.n_generated - 1) / s.decode_seconds : 0;
        printf("model: %s (%s%s%s), %.1f MB of weights (%.1f MB read per token), on %s (%s)\n", path,
               wgt_model_arch(m), type ? ", " : "", type ? type : "", bytes / 1e6, read / 1e6, info.name,
               info.backend_name);
        /* a mixture of experts: the chosen experts' share, what a decode step needs to read */
        if (active < read)
            printf("experts: %.1f MB of active weights per token (the chosen experts, attention, head): "
                   "%.1f GB/s of active weights at the decode rate below\n", active / 1e6, active * dec / 1e9);
        /* the tokens actually fed: a prefill figure over keys already cached would be no figure */
        int64_t fed = s.n_prompt - s.n_reused;
        printf("prefill: %lld tokens in %.3f s = %.1f tok/s", (long long)fed, s.prefill_seconds, fed / s.prefill_seconds);
        if (reps > 1) { /* each run's figure, in run order */
            printf(" (median of %lld runs:", (long long)reps);
            for (int64_t r = 0; r < reps; r++) printf(" %.0f", fed / pre[r]);
            printf(")");
        }
        printf("\n");
        if (fed != n_prompt) {
            fprintf(stderr, "wgt bench: the timed prefill fed %lld of the %lld prompt tokens (the rest were "
                            "cached): its figure is not the prompt's\n", (long long)fed, (long long)n_prompt);
            fed = -1;
        }
        /* a CPU adapter reads a fraction of a GB/s: three significant digits, never "0 GB/s" */
        double gbs = read * dec / 1e9;
        printf("decode:  %lld tokens, %.1f tok/s, %.2f ms/token, %.*f GB/s of weights read%s\n",
               (long long)(s.n_generated - 1), dec, dec > 0 ? 1000 / dec : 0,
               gbs >= 100 ? 0 : gbs >= 10 ? 1 : gbs >= 1 ? 2 : 3, gbs, reps > 1 ? " (median)" : "");
        double per_token = (double)s.dispatches / s.n_generated;
        int64_t layers = wgt_model_layers(m);
        printf("per token: %.1f dispatches (%.2f a layer over %lld layers), %.2f submits, %.3f ms of host "
               "time recording (%.2f us per dispatch)\n",
               per_token, layers > 0 ? per_token / layers : 0, (long long)layers, (double)s.submits / s.n_generated,
               s.n_generated > 1 ? s.record_seconds * 1e3 / (s.n_generated - 1) : 0,
               s.n_generated > 1 ? s.record_seconds * 1e6 / (s.n_generated - 1) / per_token
                                 : 0);
        rc = fed == n_prompt ? 0 : 1;
    } else
        fprintf(stderr, "wgt bench: %s\n", wgt_errmsg());
    free(ids);
    wgt_model_free(m);
    wgt_context_free(ctx);
    return rc;
}


/* Training speed (issue 13): AdamW steps (forward, mean cross-entropy, backward, update; lr 3e-4,
 * weight decay 0.1, as tools/train_bench_torch.py) on random ids over a model (a config.json alone:
 * fresh weights), `warmup` untimed steps (they compile every pipeline) then `steps` timed ones, each
 * waiting for its loss as `wgt train` does. Prints one line in train_bench_torch.py's format: tokens
 * a second, ms a step, the pool's peak device memory over the run, and the last loss. */
static int bench_train(const char *path, const char *name, const char *dtype, int64_t B, int64_t L, int64_t steps,
                       int64_t warmup)
{
    wgt_dtype dt = !strcmp(dtype, "f32") ? WGT_F32 : !strcmp(dtype, "bf16") ? WGT_BF16 : !strcmp(dtype, "f16") ? WGT_F16
                                                                                                               : WGT_DTYPE_COUNT;
    if (dt == WGT_DTYPE_COUNT) {
        fprintf(stderr, "wgt bench: --dtype %s: use f32, bf16 or f16\n", dtype);
        return 2;
    }
    wgt_context *ctx = NULL;
    wgt_train_model *m = NULL;
    wgt_trainer *t = NULL;
    int32_t *ids = NULL;
    int rc = 1;
    wgt_train_init init = {0, 0};
    double need = 0;
    if (wgt_context_create(NULL, &ctx) || wgt_train_model_open(ctx, path, &init, &m) ||
        wgt_train_check_memory(m, B, L, &need)) {
        fprintf(stderr, "wgt bench: %s: %s\n", path, wgt_errmsg());
        goto done;
    }
    int64_t maxpos = wgt_train_model_max_positions(m), V = wgt_train_model_vocab(m);
    if (maxpos > 0 && L > maxpos) {
        fprintf(stderr, "wgt bench: --seq %lld is longer than the model's %lld positions\n", (long long)L,
                (long long)maxpos);
        rc = 2;
        goto done;
    }
    wgt_trainer_options o = wgt_trainer_defaults();
    o.optim.lr = 3e-4, o.optim.weight_decay = 0.1, o.dtype = dt, o.total_steps = warmup + steps;
    if (wgt_trainer_create(m, &o, &t) || !(ids = malloc((size_t)(B * (L + 1)) * sizeof *ids))) {
        fprintf(stderr, "wgt bench: %s\n", !t ? wgt_errmsg() : "out of host memory");
        goto done;
    }
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (int64_t i = 0; i < B * (L + 1); i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = (int32_t)((s >> 33) % (uint64_t)V);
    }
    double loss = 0, t0 = 0;
    for (int64_t i = 0; i < warmup + steps; i++) {
        if (i == warmup) t0 = seconds();
        if (wgt_trainer_step(t, ids, B, L, &loss)) {
            fprintf(stderr, "wgt bench: step %lld: %s\n", (long long)i + 1, wgt_errmsg());
            goto done;
        }
    }
    double ms = (seconds() - t0) * 1e3 / (double)steps;
    wgt_memory_stats mem = {0};
    wgt_context_memory_stats(ctx, &mem);
    wgt_adapter_info info;
    wgt_context_adapter_info(ctx, &info);
    printf("wgt %s %s tok/s %.0f ms/step %.2f peak_GiB %.2f loss %.3f (batch %lld x %lld, %.2fM parameters, "
           "estimate %.2f GiB, %s)\n", name, dtype, (double)(B * L) / (ms / 1e3), ms,
           mem.peak_in_use_bytes / 1073741824.0, loss, (long long)B, (long long)L, wgt_train_model_numel(m) / 1e6,
           need / 1073741824.0, info.name);
    rc = 0;
done:
    free(ids);
    wgt_trainer_free(t);
    wgt_train_model_free(m);
    wgt_context_free(ctx);
    return rc;
}

int cmd_bench(int argc, char **argv)
{
    int device = 0, train = 0;
    uint64_t max_bytes = 0;
    const char *model = NULL, *type = NULL, *dtype = "f32", *name = NULL;
    int64_t n_prompt = 128, n_decode = 64, batch = 8, seq = 512, steps = 10, warmup = 3, reps = 3;
    args a = args_begin("bench", argc, argv);
    while (args_next(&a)) {
        if (args_flag(&a, "-h|--help")) {
            printf("usage: wgt bench --device [--max-bytes N]\n"
                   "       wgt bench -m MODEL|config.json [--type T] [-p PROMPT_TOKENS] [-n DECODE_TOKENS] [--reps R]\n"
                   "       wgt bench --train -m MODEL|config.json [--batch B] [--seq L] [--dtype f32|bf16|f16]\n"
                   "                 [--steps N] [--warmup W] [--name NAME]\n\n"
                   "--device   microseconds of host time per dispatch (one pass; a pass per dispatch),\n"
                   "           submit-and-wait latency, and streaming bandwidth from 1 MiB to N bytes per\n"
                   "           buffer (default: the device's storage binding limit)\n"
                   "-m         prefill and decode tok/s of a model (a config.json alone: random f16 weights\n"
                   "           of that shape), dispatches and submits per token, GB/s of weights read; an\n"
                   "           untimed run of the same lengths first compiles every pipeline; the figures are\n"
                   "           the median of R timed runs (default 3, at most 64; prefill lists each run's)\n"
                   "--type     with a config.json: the weights' type (f16 default; f32, bf16, q8_0, q4_0,\n"
                   "           q4_k, q6_k)\n"
                   "-p, -n     prompt tokens (default 128) and tokens to decode (default 64), each 1 to\n"
                   "           4096, together within the model's context (--n-prompt, --n-gen too)\n"
                   "--train    training tokens/s, ms a step and peak device memory: AdamW (lr 3e-4, weight\n"
                   "           decay 0.1) on random ids [B, L] (default 8 x 512), W untimed warm-up steps\n"
                   "           (default 3) then N timed ones (default 10); --dtype as wgt train's (f32\n"
                   "           default); a config.json alone trains fresh weights of that shape. One line,\n"
                   "           as tools/train_bench_torch.py prints: `wgt NAME DTYPE tok/s .. ms/step ..\n"
                   "           peak_GiB ..` (NAME: --name, default the model's path). tools/h200_train_bench.sh\n"
                   "           runs the README's shapes beside PyTorch's\n"
                   "A configuration whose weights, KV cache and activations would need more memory than the\n"
                   "host has (or WGT_MEMORY_LIMIT allows) is refused with the figures before allocating.\n");
            return 0;
        }
        if (args_flag(&a, "--device")) device = 1;
        else if (args_flag(&a, "--train")) train = 1;
        else if (args_str(&a, "--dtype", &dtype) || args_str(&a, "--name", &name)) ;
        else if (args_int(&a, "--batch", 1, 1 << 20, &batch) || args_int(&a, "--seq", 1, 1 << 20, &seq) ||
                 args_int(&a, "--steps", 1, 1 << 20, &steps) || args_int(&a, "--warmup", 0, 1 << 20, &warmup)) ;
        else if (args_str(&a, "-m|--model", &model)) ;
        else if (args_str(&a, "--type", &type)) ;
        else if (args_int(&a, "-p|--n-prompt", 1, 4096, &n_prompt)) ;
        else if (args_int(&a, "-n|--n-gen", 1, 4096, &n_decode)) ;
        else if (args_int(&a, "--reps", 1, 64, &reps)) ;
        else if (args_u64(&a, "--max-bytes", (uint64_t)1 << 40, &max_bytes)) ;
        else return args_unknown(&a);
    }
    if (a.bad) return 2;
    if (train) {
        if (!model) {
            fprintf(stderr, "wgt bench: --train needs -m MODEL|config.json (see wgt bench --help)\n");
            return 2;
        }
        return bench_train(model, name ? name : model, dtype, batch, seq, steps, warmup);
    }
    if (model) return bench_model(model, type, n_prompt, n_decode, reps);
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
