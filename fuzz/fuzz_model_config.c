/* libFuzzer target: config.json through model loading. The input is a config.json: parsed, then
 * checked as the loader checks it (wgt_model_check_hf_config); one that passes and describes a
 * small model (at most 2M parameters: the fuzzer looks for crashes, not for memory) is loaded
 * with random weights on the CPU-reference context, which then computes one token. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wgt.h"

static char dir[64];
static wgt_context *ctx;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s", "/tmp/wgt-fuzz-model-XXXXXX");
        wgt_context_options o = {.backend = WGT_BACKEND_CPU};
        if (!mkdtemp(dir) || wgt_context_create(&o, &ctx)) abort();
    }
    wgt_hf_config c;
    if (wgt_hf_config_parse((const char *)data, size, "config.json", &c)) return 0;
    if (wgt_model_check_hf_config(&c, "config.json")) return 0;
    double h = (double)c.hidden_size, params = (double)c.vocab_size * h +
                  (double)c.n_layers * (4 * h * h + 3 * h * (double)c.intermediate_size);
    if (params > 2e6 || c.max_positions > 4096) return 0;
    char p[128];
    snprintf(p, sizeof p, "%s/config.json", dir);
    FILE *f = fopen(p, "wb");
    if (!f) abort();
    fwrite(data, 1, size, f);
    fclose(f);
    wgt_model_options mo = {.max_ctx = 16, .random_type = "f32"};
    wgt_model *m;
    if (wgt_model_open_ex(ctx, p, &mo, &m) == WGT_OK) {
        int32_t id = 0;
        wgt_tensor *logits = NULL;
        if (wgt_model_forward(m, &id, 1, 0, &logits) == WGT_OK) wgt_tensor_free(logits);
        wgt_model_free(m);
    }
    return 0;
}
