/* Quantized models: GGUF conversions (Q8_0, Q4_0, Q4_K, Q6_K by `wgt convert`) run through the
 * quantized matmul kernels must agree with the same weights expanded to f32 and run through the
 * float kernels (wgt_model_options.dequantize, whose dequantisation is the exact CPU reference):
 * first-step logits within float rounding and the same greedy ids (the mixtures of experts too, by
 * default, where src/ops/qlinear_moe.c's kernels read only the chosen experts' blocks, in decode and
 * in grouped prefill, and with WGT_MOE_KERNELS=0, every expert; llama, qwen2 and the default
 * model's Q4_K also with WGT_QLINEAR_QKV=0: decode's q/k/v product apart from its rotation and
 * cache writes; llama also with WGT_QLINEAR_GLU=0: SwiGLU in the down projection's prologue, not
 * the gate/up product's epilogue). Q8_0 also stays close to transformers' logits for the f32
 * checkpoint. And a model past the device's largest buffer is refused before anything is uploaded. */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "models/model.h"
#include "support/check.h"
#include "support/fixture.h"
#include "support/collect.h"

/* First-step logits [V] of prompt, the logits [V] of one decode step after it (the prompt's first
 * token again: one token runs the decode kernels), and n greedy ids of prompt. */
static wgt_status run(wgt_model *m, const int32_t *prompt, int np, int n, float *logits, float *step_logits,
                      test_collect *col)
{
    wgt_model_reset(m);
    wgt_tensor *lg;
    wgt_status st = wgt_model_forward(m, prompt, np, 0, &lg);
    if (st) return st;
    st = wgt_tensor_to_host(lg, logits, (size_t)m->cfg.vocab * sizeof(float));
    wgt_tensor_free(lg);
    if (!st) st = wgt_model_forward(m, prompt, 1, 0, &lg);
    if (st) return st;
    st = wgt_tensor_to_host(lg, step_logits, (size_t)m->cfg.vocab * sizeof(float));
    wgt_tensor_free(lg);
    wgt_model_reset(m);
    if (st) return st;
    wgt_sampling sp = {0};
    sp.ignore_eos = 1;
    *col = (test_collect){0};
    return wgt_model_generate(m, prompt, np, n, &sp, test_collect_token, col, NULL);
}

/* Quantized kernels against the dequantised reference for every prompt; ref_logits (may be NULL):
 * transformers' f32 logits per prompt, checked within ref_atol. */
static void compare(wgt_context *ctx, const char *label, const char *gguf, int32_t prompts[][64], const int *np,
                    int n_prompts, float *const *ref_logits, double ref_atol)
{
    wgt_model *q = NULL, *d = NULL;
    wgt_model_options oq = {0}, od = {0};
    od.dequantize = 1;
    wgt_status st = wgt_model_open_ex(ctx, gguf, &oq, &q);
    CHECK(st == WGT_OK, "%s: load: %s", label, wgt_errmsg());
    if (!st) st = wgt_model_open_ex(ctx, gguf, &od, &d);
    CHECK(st == WGT_OK, "%s: load dequantised: %s", label, wgt_errmsg());
    if (st) {
        wgt_model_free(q);
        return;
    }
    int n_quant = 0;
    for (int64_t i = 0; i < q->cfg.n_layers; i++) n_quant += q->layers[i].wqkv.q != WGT_FTYPE_F32 || q->layers[i].wq.q != WGT_FTYPE_F32;
    CHECK(n_quant > 0, "%s: no layer kept quantized weights", label);
    CHECK(q->weight_bytes < d->weight_bytes, "%s: quantized weights take %llu bytes, dequantised %llu", label,
          (unsigned long long)q->weight_bytes, (unsigned long long)d->weight_bytes);
    int64_t V = q->cfg.vocab;
    float *lq = malloc(V * sizeof(float)), *ld = malloc(V * sizeof(float));
    float *sq = malloc(V * sizeof(float)), *sd = malloc(V * sizeof(float));
    for (int p = 0; p < n_prompts; p++) {
        test_collect cq = {0}, cd = {0};
        MUST(run(q, prompts[p], np[p], 8, lq, sq, &cq));
        MUST(run(d, prompts[p], np[p], 8, ld, sd, &cd));
        double worst = 0, scale = 0, worst_ref = 0, worst_step = 0, scale_step = 0;
        for (int64_t i = 0; i < V; i++) {
            double e = fabs((double)lq[i] - ld[i]), es = fabs((double)sq[i] - sd[i]);
            if (!(e <= worst)) worst = e;
            if (!(es <= worst_step)) worst_step = es;
            if (fabs(ld[i]) > scale) scale = fabs(ld[i]);
            if (fabs(sd[i]) > scale_step) scale_step = fabs(sd[i]);
            if (ref_logits) {
                double r = fabs((double)lq[i] - ref_logits[p][i]);
                if (!(r <= worst_ref)) worst_ref = r;
            }
        }
        /* f32 accumulation of the same products in another order */
        CHECK(worst <= 1e-4 * scale + 1e-4, "%s prompt %d: logits differ from the dequantised reference by %g (scale %g)",
              label, p, worst, scale);
        CHECK(worst_step <= 1e-4 * scale_step + 1e-4,
              "%s prompt %d: a decode step's logits differ from the dequantised reference by %g (scale %g)", label, p,
              worst_step, scale_step);
        CHECK(cq.n == 8 && cd.n == 8 && !memcmp(cq.ids, cd.ids, sizeof(int32_t) * 8),
              "%s prompt %d: greedy ids differ from the dequantised reference", label, p);
        /* ref_atol is relative to the largest logit */
        if (ref_logits)
            CHECK(worst_ref <= ref_atol * scale, "%s prompt %d: logits differ from transformers' by %g (tolerance %g)",
                  label, p, worst_ref, ref_atol * scale);
        printf("%s prompt %d: max |logit| %.3g, |quantized - dequantised| <= %.2g (a decode step's: %.2g), "
               "|quantized - transformers| <= %.2g\n",
               label, p, scale, worst, worst_step, ref_logits ? worst_ref : NAN);
    }
    free(lq);
    free(ld);
    free(sq);
    free(sd);
    wgt_model_free(q);
    wgt_model_free(d);
}

static int convert(const char *wgt, const char *src, const char *dst, const char *type)
{
    char cmd[4096];
    /* wgt convert refuses to overwrite: a conversion left by a killed run goes first */
    remove(dst);
    snprintf(cmd, sizeof cmd, "'%s' convert '%s' '%s' --type %s >/dev/null", wgt, src, dst, type);
    return system(cmd);
}

/* A Hugging Face directory whose embedding needs 307 MB (a sparse file): past the spec's default
 * 256 MiB buffer limit, so a context with default limits must refuse it, naming the tensor. */
static void too_large(const char *build)
{
    char dir[1024], path[1200];
    snprintf(dir, sizeof dir, "%s/too-large-model", build);
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    fprintf(f, "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", \"hidden_size\": 128,"
               " \"intermediate_size\": 256, \"num_attention_heads\": 4, \"num_hidden_layers\": 1,"
               " \"num_key_value_heads\": 4, \"vocab_size\": 600000, \"max_position_embeddings\": 64,"
               " \"rms_norm_eps\": 1e-6, \"tie_word_embeddings\": true}");
    fclose(f);
    char header[256];
    int64_t bytes = 600000LL * 128 * 4;
    int hl = snprintf(header, sizeof header,
                      "{\"model.embed_tokens.weight\":{\"dtype\":\"F32\",\"shape\":[600000,128],"
                      "\"data_offsets\":[0,%lld]}}",
                      (long long)bytes);
    while (hl % 8) header[hl++] = ' ';
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    uint64_t len = (uint64_t)hl;
    CHECK(write(fd, &len, 8) == 8 && write(fd, header, hl) == hl, "write %s", path);
    CHECK(ftruncate(fd, 8 + hl + bytes) == 0, "truncate %s", path);
    close(fd);
    wgt_context_options o = {0};
    o.default_limits = 1;
    wgt_context *ctx;
    MUST(wgt_context_create(&o, &ctx));
    wgt_model *m = NULL;
    wgt_memory_stats before, after;
    wgt_context_memory_stats(ctx, &before);
    wgt_status st = wgt_model_open(ctx, dir, 0, &m);
    wgt_context_memory_stats(ctx, &after);
    CHECK(st == WGT_ERR_LIMIT && m == NULL, "a 307 MB embedding under 256 MiB buffers: status %s", wgt_status_str(st));
    CHECK(strstr(wgt_errmsg(), "model.embed_tokens.weight") && strstr(wgt_errmsg(), "307200000"),
          "the message names the tensor and its bytes: %s", wgt_errmsg());
    CHECK(after.allocated_bytes == before.allocated_bytes, "refused after allocating %llu bytes",
          (unsigned long long)(after.allocated_bytes - before.allocated_bytes));
    printf("refused: %s\n", wgt_errmsg());
    wgt_context_free(ctx);
    remove(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    remove(path);
    rmdir(dir);
}

int main(void)
{
    const char *root = getenv("WGT_ROOT") ? getenv("WGT_ROOT") : ".";
    const char *build = getenv("WGT_BUILD") ? getenv("WGT_BUILD") : "build";
    const char *wgt = getenv("WGT_BIN") ? getenv("WGT_BIN") : "build/wgt";
    wgt_context *ctx;
    MUST(wgt_context_create(NULL, &ctx));
    static int32_t prompts[8][64];
    int np[8];

    /* the fixtures of every family (hidden size 64: Q8_0 and Q4_0, or Q8_0 alone, n_types: the
     * quantized kernels are the same ones; the K types need rows of 256). The mixtures of experts:
     * decode reads the chosen experts' blocks in place (qlinear_moe), the dequantised reference
     * gathers their f32 rows */
    static const struct { const char *name; int n_types; } fams[] = {
        {"llama", 2},      {"qwen2", 2},      {"qwen3", 2},        {"gpt2", 2},          {"mistral", 2},
        {"gemma2", 2},     {"gemma3_text", 2}, {"granite", 2},     {"mixtral", 2},       {"qwen2_moe", 2},
        {"qwen3_moe", 2},  {"gemma", 1},      {"phi3", 1},         {"phi", 1},           {"olmo2", 1},
        {"gpt_neox", 1},   {"gpt_neox_seq", 1}, {"stablelm", 1},   {"stablelm_12b", 1},  {"starcoder2", 1},
        {"smollm3", 1},    {"mistral_window", 1}, {"gemma2_hd", 1}, {"gemma3_text_6l", 1}, {"starcoder2_4k", 1},
        {"phi_4x", 1},
    };
    for (size_t a = 0; a < sizeof fams / sizeof *fams; a++) {
        const char *arch = fams[a].name;
        char dir[1024], path[1200], gguf[1200], label[128];
        snprintf(dir, sizeof dir, "%s/tests/fixtures/hf/%s", root, arch);
        snprintf(path, sizeof path, "%s/fixture.json", dir);
        cJSON *fx = test_fixture_json(path);
        CHECK(fx != NULL, "fixture %s", path);
        if (!fx) continue;
        int n = 0;
        float *refs[8];
        const cJSON *c;
        cJSON_ArrayForEach(c, cJSON_GetObjectItem(fx, "cases"))
        {
            if (n == 2) break;
            int k = 0;
            const cJSON *it;
            cJSON_ArrayForEach(it, cJSON_GetObjectItem(c, "prompt_ids")) if (k < 64) prompts[n][k++] = it->valueint;
            np[n] = k;
            const cJSON *lg = cJSON_GetObjectItem(c, "first_step_logits");
            refs[n] = malloc(sizeof(float) * cJSON_GetArraySize(lg));
            k = 0;
            cJSON_ArrayForEach(it, lg) refs[n][k++] = (float)it->valuedouble;
            n++;
        }
        const char *types[] = {"q8_0", "q4_0"};
        for (int t = 0; t < fams[a].n_types; t++) {
            snprintf(gguf, sizeof gguf, "%s/testq-%s-%s.gguf", build, arch, types[t]);
            int rc = convert(wgt, dir, gguf, types[t]);
            CHECK(rc == 0, "%s: wgt convert --type %s", arch, types[t]);
            if (rc) continue;
            snprintf(label, sizeof label, "%s (GGUF %s)", arch, types[t]);
            /* Q8_0 moves these logits by a few percent of the largest; Q4_0 is not compared with
             * transformers, nor are the mixtures of experts (a router's near tie that Q8_0's rounding
             * flips picks another expert: mixtral's logits moved by 6% of the largest) */
            int moe = strstr(arch, "moe") || !strcmp(arch, "mixtral");
            compare(ctx, label, gguf, prompts, np, n, t == 0 && !moe ? refs : NULL, 0.05);
            if (moe) { /* and without the kernels that read only the chosen experts' blocks (the default) */
                setenv("WGT_MOE_KERNELS", "0", 1);
                snprintf(label, sizeof label, "%s (GGUF %s, WGT_MOE_KERNELS=0)", arch, types[t]);
                compare(ctx, label, gguf, prompts, np, n, NULL, 0.05);
                unsetenv("WGT_MOE_KERNELS");
            }
            if (!strcmp(arch, "qwen2") || !strcmp(arch, "llama")) {
                /* and with decode's q/k/v product apart from the rotation and the cache writes (two
                 * dispatches, where qlinear_qkv_rope.wgsl takes one; qwen2 with its biases) */
                setenv("WGT_QLINEAR_QKV", "0", 1);
                snprintf(label, sizeof label, "%s (GGUF %s, WGT_QLINEAR_QKV=0)", arch, types[t]);
                compare(ctx, label, gguf, prompts, np, n, t == 0 ? refs : NULL, 0.05);
                unsetenv("WGT_QLINEAR_QKV");
            }
            if (!strcmp(arch, "llama")) { /* and with SwiGLU in the down projection's prologue, not
                                           * in the gate/up product's epilogue (the default) */
                setenv("WGT_QLINEAR_GLU", "0", 1);
                snprintf(label, sizeof label, "%s (GGUF %s, WGT_QLINEAR_GLU=0)", arch, types[t]);
                compare(ctx, label, gguf, prompts, np, n, NULL, 0.05);
                unsetenv("WGT_QLINEAR_GLU");
            }
            remove(gguf);
        }
        for (int i = 0; i < n; i++) free(refs[i]);
        cJSON_Delete(fx);
    }

    /* the default model (hidden size 256): the K types too */
    {
        char dir[1024], gguf[1200], label[128];
        snprintf(dir, sizeof dir, "%s/models/bible-llama", root);
        const int32_t ps[3][8] = {{1, 512, 77, 9, 300}, {1, 44, 1000, 2000, 3000, 17, 5}, {1, 4000, 12}};
        const int pn[3] = {5, 7, 3};
        for (int p = 0; p < 3; p++) memcpy(prompts[p], ps[p], sizeof ps[p]), np[p] = pn[p];
        const char *types[] = {"q8_0", "q4_0", "q4_k", "q6_k"};
        for (int t = 0; t < 4; t++) {
            snprintf(gguf, sizeof gguf, "%s/testq-bible-%s.gguf", build, types[t]);
            int rc = convert(wgt, dir, gguf, types[t]);
            CHECK(rc == 0, "bible-llama: wgt convert --type %s", types[t]);
            if (rc) continue;
            snprintf(label, sizeof label, "bible-llama (GGUF %s)", types[t]);
            compare(ctx, label, gguf, prompts, np, 3, NULL, 0);
            if (t == 2) { /* Q4_K's q/k/v product apart from the rotation too */
                setenv("WGT_QLINEAR_QKV", "0", 1);
                snprintf(label, sizeof label, "bible-llama (GGUF %s, WGT_QLINEAR_QKV=0)", types[t]);
                compare(ctx, label, gguf, prompts, np, 3, NULL, 0);
                unsetenv("WGT_QLINEAR_QKV");
            }
            remove(gguf);
        }
    }
    wgt_context_free(ctx);
    too_large(build);
    return test_finish("test_gpu_quant_models");
}
