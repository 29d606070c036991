/* Models against Hugging Face transformers: for every fixture in tests/fixtures/hf/<arch>/, the
 * greedy continuation of each prompt must equal transformers' token for token, and the first-step
 * logits must agree within a tolerance; then the same through GGUF conversions (f32, f16) made by
 * `wgt convert`. Fixtures come from tools/make_fixtures.py (transformers 5.17, f32, CPU). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "models/model.h"
#include "support/check.h"
#include "support/fixture.h"
#include "support/collect.h"

/* Run every case of the fixture against the model at path; logits tolerance atol. */
static void check_model(wgt_context *ctx, const char *label, const char *path, const cJSON *fx, double atol,
                        int check_tokens, int check_stop)
{
    wgt_model *m;
    wgt_status st = wgt_model_open(ctx, path, 0, &m);
    CHECK(st == WGT_OK, "%s: load %s: %s", label, path, wgt_errmsg());
    if (st) return;
    const cJSON *cases = cJSON_GetObjectItem(fx, "cases"), *c;
    int ncase = 0;
    cJSON_ArrayForEach(c, cases)
    {
        int32_t prompt[256], want[256];
        int np = test_ids_of(cJSON_GetObjectItem(c, "prompt_ids"), prompt, 256);
        int nw = test_ids_of(cJSON_GetObjectItem(c, "greedy_ids"), want, 256);
        /* first-step logits */
        wgt_model_reset(m);
        wgt_tensor *lg;
        st = wgt_model_forward(m, prompt, np, 0, &lg);
        CHECK(st == WGT_OK, "%s case %d: forward: %s", label, ncase, wgt_errmsg());
        if (!st) {
            int64_t V = m->cfg.vocab;
            float *got = malloc(V * sizeof(float));
            MUST(wgt_tensor_to_host(lg, got, V * sizeof(float)));
            const cJSON *ref = cJSON_GetObjectItem(c, "first_step_logits"), *r;
            int64_t i = 0;
            double worst = 0;
            cJSON_ArrayForEach(r, ref)
            {
                if (i < V) {
                    double d = fabs(got[i] - r->valuedouble);
                    if (!(d <= worst)) worst = d;
                }
                i++;
            }
            CHECK(i == V, "%s: fixture has %lld logits, model vocab %lld", label, (long long)i, (long long)V);
            CHECK(worst <= atol, "%s case %d: first-step logits differ by up to %g (tolerance %g)", label, ncase,
                  worst, atol);
            free(got);
            wgt_tensor_free(lg);
        }
        if (check_tokens) {
            wgt_sampling sp = {0};
            sp.ignore_eos = 1;
            test_collect col = {0};
            st = wgt_model_generate(m, prompt, np, nw, &sp, test_collect_token, &col, NULL);
            CHECK(st == WGT_OK, "%s case %d: generate: %s", label, ncase, wgt_errmsg());
            int same = col.n == nw && !memcmp(col.ids, want, nw * sizeof(int32_t));
            CHECK(same, "%s case %d: greedy ids differ from transformers' (%d of %d tokens generated)", label, ncase,
                  col.n, nw);
            /* stopped by the callback after 3 tokens, then continued with those in the prompt: the
             * cache left by the stop (decode runs a step ahead) must give the same continuation */
            if (check_stop && nw > 4) {
                test_collect c3 = {0}, rest = {0};
                c3.limit = 3;
                st = wgt_model_generate(m, prompt, np, nw, &sp, test_collect_token, &c3, NULL);
                CHECK(st == WGT_OK && c3.n == 3 && !memcmp(c3.ids, want, 3 * sizeof(int32_t)),
                      "%s case %d: stopped after 3: %d tokens", label, ncase, c3.n);
                int32_t p2[260];
                memcpy(p2, prompt, np * sizeof(int32_t));
                memcpy(p2 + np, want, 3 * sizeof(int32_t));
                wgt_generate_stats gs;
                st = wgt_model_generate(m, p2, np + 3, nw - 3, &sp, test_collect_token, &rest, &gs);
                CHECK(st == WGT_OK && rest.n == nw - 3 && !memcmp(rest.ids, want + 3, (nw - 3) * sizeof(int32_t)),
                      "%s case %d: the continuation after a stop differs", label, ncase);
                CHECK(gs.n_reused >= np, "%s case %d: the continuation reused %lld cached tokens", label, ncase,
                      (long long)gs.n_reused);
            }
            if (!same)
                for (int k = 0; k < nw && k < col.n; k++)
                    if (col.ids[k] != want[k]) {
                        fprintf(stderr, "  first difference at token %d: wgt %d, transformers %d\n", k, col.ids[k],
                                want[k]);
                        break;
                    }
        }
        ncase++;
    }
    CHECK(ncase >= 3, "%s: only %d cases", label, ncase);
    wgt_model_free(m);
}

static int in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, name, n)) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

/* A Llama 3 GGUF's rope_freqs.weight (llama.cpp's per-frequency factors, which `wgt convert` writes
 * for llama3 rope scaling) is applied as stored: the llama fixture's weights under a llama3 config
 * with Llama 3's rope base 5e5, factor 32 and original_max_position_embeddings 64 (one frequency in
 * the smooth band: the parameters cannot be read back from the factors, and reading them as Llama
 * 3's 8192 original positions scales the frequencies wrongly) generate from the GGUF what they generate from the
 * directory (which test_gpu_models checks against transformers for factor 8), logits within float
 * rounding. */
static void rope_freqs_check(wgt_context *ctx, const char *root, const char *build, const char *wgt, const cJSON *fx)
{
    char src[1024], dir[1200], cmd[8192], gguf[1300], path[1400];
    snprintf(src, sizeof src, "%s/tests/fixtures/hf/llama", root);
    snprintf(dir, sizeof dir, "%s/test-llama3-factor32", build);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s' && sed -i -e 's/\"factor\": 8.0/\"factor\": 32.0/' -e 's/\"rope_theta\": 10000.0/\"rope_theta\": 500000.0/' '%s/config.json'",
             dir, src, dir, dir);
    CHECK(system(cmd) == 0, "copy %s", src);
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *cfg = test_slurp(path);
    CHECK(cfg && strstr(cfg, "\"factor\": 32.0") && strstr(cfg, "\"rope_theta\": 500000.0"),
          "%s: factor 32, theta 5e5 expected", path);
    free(cfg);
    snprintf(gguf, sizeof gguf, "%s/test-llama3-factor32.gguf", build);
    remove(gguf);
    snprintf(cmd, sizeof cmd, "'%s' convert '%s' '%s' --type f32 >/dev/null 2>&1", wgt, dir, gguf);
    CHECK(system(cmd) == 0, "wgt convert %s", dir);
    wgt_model *m[2];
    const char *paths[2] = {dir, gguf};
    for (int k = 0; k < 2; k++) {
        wgt_status st = wgt_model_open(ctx, paths[k], 0, &m[k]);
        CHECK(st == WGT_OK, "load %s: %s", paths[k], wgt_errmsg());
        if (st) {
            if (k) wgt_model_free(m[0]);
            return;
        }
    }
    const cJSON *c;
    int ncase = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(fx, "cases"))
    {
        int32_t prompt[256];
        int np = test_ids_of(cJSON_GetObjectItem(c, "prompt_ids"), prompt, 256);
        int64_t V = m[0]->cfg.vocab;
        float *lg[2];
        test_collect col[2] = {{.n = 0}, {.n = 0}};
        for (int k = 0; k < 2; k++) {
            wgt_tensor *t;
            wgt_model_reset(m[k]);
            MUST(wgt_model_forward(m[k], prompt, np, 0, &t));
            lg[k] = malloc(V * sizeof(float));
            MUST(wgt_tensor_to_host(t, lg[k], V * sizeof(float)));
            wgt_tensor_free(t);
            wgt_sampling sp = {0};
            sp.ignore_eos = 1;
            MUST(wgt_model_generate(m[k], prompt, np, 24, &sp, test_collect_token, &col[k], NULL));
        }
        double worst = 0;
        for (int64_t i = 0; i < V; i++) worst = fmax(worst, fabs(lg[0][i] - lg[1][i]));
        CHECK(worst <= 1e-4, "llama3 factor 32 case %d: GGUF logits differ from the directory's by %g", ncase, worst);
        CHECK(col[0].n == 24 && col[1].n == 24 && !memcmp(col[0].ids, col[1].ids, 24 * sizeof(int32_t)),
              "llama3 factor 32 case %d: the GGUF generates other ids than the directory", ncase);
        free(lg[0]);
        free(lg[1]);
        ncase++;
    }
    wgt_model_free(m[0]);
    wgt_model_free(m[1]);
    remove(gguf);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
}

int main(void)
{
    const char *root = getenv("WGT_ROOT") ? getenv("WGT_ROOT") : ".";
    const char *build = getenv("WGT_BUILD") ? getenv("WGT_BUILD") : "build";
    const char *wgt = getenv("WGT_BIN") ? getenv("WGT_BIN") : "build/wgt";
    /* every fixture tools/make_fixtures.py made, from the directory and through wgt's GGUF
     * conversions in f32 and f16 (gguf: how many of the two; qwen2_window none: wgt convert
     * refuses qwen2's use_sliding_window, which llama.cpp's qwen2 cannot carry). stop: also the stop-after-3-and-
     * continue check of the cache, on the first five, the windows and one MoE (the cache
     * machinery the others share). Their GGUF files are also run by llama.cpp in
     * test_gpu_families, and llama.cpp's own conversions in test_gpu_llama_cpp_gguf. */
    static const struct { const char *name; int gguf, stop; } archs[] = {
        {"llama", 2, 1},        {"qwen2", 2, 1},        {"qwen3", 2, 1},         {"gpt2", 2, 1},
        {"mistral", 2, 1},      {"gemma", 2, 0},        {"phi3", 2, 0},          {"phi", 2, 0},
        {"olmo2", 2, 0},        {"gpt_neox", 2, 0},     {"gpt_neox_seq", 2, 0},  {"stablelm", 2, 0},
        {"stablelm_12b", 2, 0}, {"starcoder2", 2, 0},   {"smollm3", 2, 0},       {"mistral_window", 2, 1},
        {"qwen2_window", 0, 1}, {"mixtral", 2, 0},      {"qwen2_moe", 2, 1},     {"qwen3_moe", 2, 0},
        {"gemma2", 2, 0},       {"gemma3_text", 2, 0},  {"granite", 2, 0},
        /* the forms llama.cpp's GGUF says in full (test_gpu_llama_cpp_gguf) */
        {"gemma2_hd", 2, 0},    {"gemma3_text_6l", 2, 1}, {"starcoder2_4k", 2, 0}, {"phi_4x", 2, 0},
    };
    const char *only = getenv("WGT_MODELS_ARCHS"); /* a comma-separated subset */
    /* All 27 fixtures run in one process: with the bind-group cache unbounded that crashed on
     * lavapipe (a descriptor set, one memfd mapping, per group ever made, up to the kernel's 65,530
     * mappings; test_gpu_device checks the bound). */
    wgt_context *ctx;
    MUST(wgt_context_create(NULL, &ctx));
    for (size_t a = 0; a < sizeof archs / sizeof archs[0]; a++) {
        if (only && !in_list(only, archs[a].name)) continue;
        char dir[1024], path[1200], label[128];
        snprintf(dir, sizeof dir, "%s/tests/fixtures/hf/%s", root, archs[a].name);
        snprintf(path, sizeof path, "%s/fixture.json", dir);
        char *text = test_slurp(path);
        CHECK(text != NULL, "missing fixture %s", path);
        if (!text) continue;
        cJSON *fx = cJSON_Parse(text);
        free(text);
        CHECK(fx != NULL, "%s: not JSON", path);
        if (!fx) continue;
        /* f32 checkpoint, computed in f32: logits agree to float rounding */
        snprintf(label, sizeof label, "%s (HF)", archs[a].name);
        check_model(ctx, label, dir, fx, 2e-3, 1, archs[a].stop);
        if (strstr(archs[a].name, "moe") || !strcmp(archs[a].name, "mixtral")) {
            /* by default the kernels read only the chosen experts (decode) and group prefill by
             * expert; WGT_MOE_KERNELS=0: the gathered experts (decode) and the dense prefill */
            setenv("WGT_MOE_KERNELS", "0", 1);
            snprintf(label, sizeof label, "%s (HF, WGT_MOE_KERNELS=0)", archs[a].name);
            check_model(ctx, label, dir, fx, 2e-3, 1, 0);
            unsetenv("WGT_MOE_KERNELS");
        }
        /* GGUF conversions by our own converter, read back by our loader */
        const char *types[] = {"f32", "f16"};
        for (int t = 0; t < archs[a].gguf; t++) {
            char gguf[1200], cmd[4096];
            snprintf(gguf, sizeof gguf, "%s/test-%s-%s.gguf", build, archs[a].name, types[t]);
            remove(gguf); /* wgt convert refuses to overwrite what a killed run left */
            snprintf(cmd, sizeof cmd, "'%s' convert '%s' '%s' --type %s >/dev/null", wgt, dir, gguf, types[t]);
            int rc = system(cmd);
            CHECK(rc == 0, "%s: wgt convert --type %s failed", archs[a].name, types[t]);
            if (rc) continue;
            snprintf(label, sizeof label, "%s (GGUF %s)", archs[a].name, types[t]);
            /* f16 weights move logits by about 1e-2 here; the fixtures' greedy margins are >= 0.1.
             * smollm3's second case has the largest logits of all the fixtures (19, the others
             * <= 16): f16 moves them by 0.052 */
            double f16_atol = !strcmp(archs[a].name, "smollm3") ? 8e-2 : 5e-2;
            check_model(ctx, label, gguf, fx, t == 0 ? 2e-3 : f16_atol, 1, archs[a].stop);
            remove(gguf);
        }
        if (!strcmp(archs[a].name, "llama")) rope_freqs_check(ctx, root, build, wgt, fx);
        cJSON_Delete(fx);
    }
    wgt_context_free(ctx);
    return test_finish("test_gpu_models");
}
