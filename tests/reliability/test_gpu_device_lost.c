/* Device loss in the middle of a generation (issue 19): after the second token the device is
 * destroyed under the live context (wgt_gpu_test_lose_device, as a driver reset would). The
 * generation must end with WGT_ERR_DEVICE_LOST and a message saying to make a new context, the
 * context must keep answering WGT_ERR_DEVICE_LOST (never hang, never crash), and freeing it must
 * work. A new context must then generate the CPU reference's greedy tokens (a WGT_BACKEND=cpu
 * context: the independent oracle), and the tokens before the loss must be the first of them.
 * Model: the tiny qwen3 checkpoint of test_convert --make, as f32 GGUF (wgt convert). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/gpu.h"
#include "support/check.h"
#include "wgt.h"

#define N_NEW 5

typedef struct run {
    wgt_context *ctx; /* lose its device after lose_after tokens (0: never) */
    int lose_after;
    int n;
    int32_t ids[N_NEW];
} run;

static int on_token(int32_t token, void *user)
{
    run *r = user;
    if (r->n < N_NEW) r->ids[r->n] = token;
    r->n++;
    if (r->lose_after && r->n == r->lose_after) wgt_gpu_test_lose_device(r->ctx);
    return 0;
}

static wgt_status generate(wgt_context *ctx, const char *model, int lose_after, run *r)
{
    memset(r, 0, sizeof *r);
    r->ctx = ctx;
    r->lose_after = lose_after;
    wgt_model *m;
    wgt_status st = wgt_model_open(ctx, model, 64, &m);
    if (st) return st;
    const int32_t prompt[4] = {5, 17, 42, 7};
    wgt_sampling sp = {.temperature = 0, .ignore_eos = 1};
    st = wgt_model_generate(m, prompt, 4, N_NEW, &sp, on_token, r, NULL);
    wgt_model_free(m);
    return st;
}

int main(void)
{
    const char *build = getenv("WGT_BUILD"), *bin = getenv("WGT_BIN");
    char tmp[] = "/tmp/wgt-device-lost.XXXXXX", cmd[4096], model[600];
    if (!mkdtemp(tmp)) return 1;
    snprintf(cmd, sizeof cmd, "'%s/tests/test_convert' --make '%s' >/dev/null 2>&1 && '%s' convert '%s/qwen3' '%s/q.gguf' --type f32 >/dev/null 2>&1",
             build ? build : "build", tmp, bin ? bin : "build/wgt", tmp, tmp);
    MUST(system(cmd) == 0 ? WGT_OK : WGT_ERR_IO);
    snprintf(model, sizeof model, "%s/q.gguf", tmp);

    /* the oracle: the CPU reference */
    wgt_context_options cpu_opts = {.backend = WGT_BACKEND_CPU};
    wgt_context *cpu;
    run ref, lost, after;
    MUST(wgt_context_create(&cpu_opts, &cpu));
    MUST(generate(cpu, model, 0, &ref));
    wgt_context_free(cpu);

    wgt_context *ctx;
    MUST(wgt_context_create(NULL, &ctx));
    wgt_status st = generate(ctx, model, 2, &lost);
    CHECK(st == WGT_ERR_DEVICE_LOST, "generation across the loss: %s (%s)", wgt_status_str(st), wgt_errmsg());
    CHECK(strstr(wgt_context_errmsg(ctx), "new one") != NULL, "the message says what to do: '%s'", wgt_context_errmsg(ctx));
    CHECK(lost.n >= 2 && lost.n < N_NEW, "the generation stopped after the loss (%d tokens)", lost.n);
    CHECK(lost.n >= 2 && !memcmp(lost.ids, ref.ids, 2 * sizeof *ref.ids), "the tokens before the loss are the reference's");
    CHECK(wgt_context_health(ctx) == WGT_ERR_DEVICE_LOST, "the context reports the loss");
    run again;
    st = generate(ctx, model, 0, &again);
    CHECK(st == WGT_ERR_DEVICE_LOST, "a later call on the lost context: %s", wgt_status_str(st));
    wgt_context_free(ctx);

    MUST(wgt_context_create(NULL, &ctx));
    MUST(generate(ctx, model, 0, &after));
    CHECK(after.n == N_NEW && !memcmp(after.ids, ref.ids, sizeof ref.ids), "a new context generates the reference tokens");
    wgt_context_free(ctx);

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd)) {}
    return test_finish("test_gpu_device_lost");
}
