/* GGUF files written by llama.cpp's own converter (convert_hf_to_gguf.py of node-llama-cpp@3.22.1's
 * llama.cpp, run on the transformers fixtures by tools/llama_cpp_convert.sh on the H200 image; the
 * files are tests/fixtures/llama_cpp/<arch>-<type>.gguf, their manifest.json says how each was
 * made) must generate the fixture's greedy ids (transformers', tests/fixtures/hf/<arch>/fixture.json)
 * in wgt, with first-step logits within the type's tolerance, on every adapter. llama.cpp chose the
 * tensor names, layouts (q/k rows permuted for its rope, norms stored as 1 + w, experts stacked,
 * fused projections kept or split), metadata keys and the tokenizer's encoding: wgt reads them.
 *
 * Where llama.cpp's format cannot say what the checkpoint does, the file generates other ids than
 * transformers: those cases are listed below with the reason, and must generate what wgt generates
 * from the fixture's directory with config.json saying what the file means (llama.cpp's defaults in
 * place of what its converter dropped), logits within the f16 tolerance: whatever the file carries
 * is read right, and what it lacks is taken as llama.cpp takes it. Each such family also has a fixture
 * in the form llama.cpp's file says in full (gemma2_hd, gemma3_text_6l, starcoder2_4k), whose file
 * must generate transformers' ids: every one of the nineteen families has at least one file that
 * matches transformers (checked at the end, by the fixtures' model_type). */
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

/* The converted files. differs: why llama.cpp's file cannot carry the fixture's configuration (NULL:
 * it must generate transformers' ids). means: sed expressions that turn the fixture's config.json
 * into what the file means (llama.cpp's defaults in place of what it dropped): the file must then
 * generate what wgt generates from that directory (wgt's directory path is checked against
 * transformers by test_gpu_models), so everything the file does carry is read right. */
typedef struct conv_case {
    const char *arch, *type;
    const char *differs, *means;
} conv_case;

#define GEMMA2_SCALAR                                                                                     \
    "query_pre_attn_scalar 24 is not head_dim 16: llama.cpp's converter writes no key for it, and "  \
    "llama.cpp scales by head_dim (wgt reads the file as llama.cpp does)"
#define GEMMA3_SCALAR_PATTERN                                                                             \
    "query_pre_attn_scalar 24 is not head_dim 32, and layer 1 of 2 is global: llama.cpp's converter "  \
    "writes neither the scalar nor attention.sliding_window_pattern, so the file means llama.cpp's "    \
    "defaults (head_dim, one global layer in six: both layers slide)"
#define NO_WINDOW(arch)                                                                                 \
    "the fixture's sliding window of 8 tokens: llama.cpp's converter writes no attention.sliding_window "  \
    "for " arch " (llama.cpp runs it without one), so the file has none and the 12-token prompt and its "  \
    "16 new tokens attend past it"
#define NO_WINDOW_MEANS "-e 's/\"sliding_window\": 8/\"sliding_window\": null/' -e 's/\"use_sliding_window\": true/\"use_sliding_window\": false/'"
static const conv_case cases[] = {
    {"llama", "f32", NULL, NULL},       {"llama", "f16", NULL, NULL},     {"llama", "q8_0", NULL, NULL},
    {"mistral", "f16", NULL, NULL},
    {"mistral_window", "f16", NO_WINDOW("mistral (a llama file)"), NO_WINDOW_MEANS},
    {"qwen2", "f16", NULL, NULL},
    {"qwen2_window", "f16", NO_WINDOW("qwen2"), NO_WINDOW_MEANS},
    {"qwen3", "f16", NULL, NULL},       {"gemma", "f16", NULL, NULL},
    /* llama.cpp scales queries by 1/sqrt(head_dim) (hidden / heads for the 27B models) */
    {"gemma2", "f16", GEMMA2_SCALAR, "-e 's/\"query_pre_attn_scalar\": 24/\"query_pre_attn_scalar\": 16/'"},
    /* and for gemma3 a pattern of 6 (layers 0-4 of every 6 slide), so both layers slide */
    {"gemma3_text", "f16", GEMMA3_SCALAR_PATTERN,
     "-e 's/\"query_pre_attn_scalar\": 24/\"query_pre_attn_scalar\": 32/' -e 's/^    \"full_attention\"$/    \"sliding_attention\"/'"},
    {"phi3", "f16", NULL, NULL},        {"phi", "f16", NULL, NULL},       {"olmo2", "f16", NULL, NULL},
    {"stablelm", "f16", NULL, NULL},
    {"starcoder2", "f16", NO_WINDOW("starcoder2"), NO_WINDOW_MEANS},
    {"granite", "f16", NULL, NULL},     {"smollm3", "f16", NULL, NULL},   {"mixtral", "f16", NULL, NULL},
    {"qwen2_moe", "f16", NULL, NULL},   {"qwen3_moe", "f16", NULL, NULL}, {"gpt2", "f16", NULL, NULL},
    {"stablelm_12b", "f16", NULL, NULL}, {"gpt_neox", "f16", NULL, NULL}, {"gpt_neox_seq", "f16", NULL, NULL},
    /* what the three above cannot carry, set as llama.cpp reads it: query_pre_attn_scalar = head_dim;
     * six layers, 0-4 sliding and 5 global (so gemma3's global rope, 1e6 linear x8, runs too); a
     * window of 4096, past every prompt */
    {"gemma2_hd", "f16", NULL, NULL},   {"gemma3_text_6l", "f16", NULL, NULL}, {"starcoder2_4k", "f16", NULL, NULL},
    /* phi's MLP of 4 x hidden, which llama.cpp's converter declares for every phi2 file (the phi
     * fixture's 2 x hidden loads in wgt, which takes the size from the tensors, and not in llama.cpp) */
    {"phi_4x", "f16", NULL, NULL},
};

/* The nineteen families (model_type): each needs a file above that generates transformers' ids. */
static const char *const families[] = {"llama", "mistral", "qwen2",     "qwen3",    "gpt2",      "gemma",    "gemma2",
                                       "gemma3_text", "phi3", "phi", "olmo2", "gpt_neox", "stablelm", "starcoder2",
                                       "granite", "smollm3", "mixtral", "qwen2_moe", "qwen3_moe"};

/* Greedy ids and first-step logits of every fixture case through the file. */
/* Both models of a pair on one prompt from an empty cache: the first step's logits [V] into lg[k]
 * (malloc'd; the caller frees) and nw greedy ids into col[k]. */
static void run_pair(wgt_model *m[2], const int32_t *prompt, int np, int nw, int64_t V, float *lg[2],
                     test_collect col[2])
{
    for (int k = 0; k < 2; k++) {
        wgt_tensor *t;
        wgt_model_reset(m[k]);
        MUST(wgt_model_forward(m[k], prompt, np, 0, &t));
        lg[k] = malloc(V * sizeof(float));
        MUST(wgt_tensor_to_host(t, lg[k], V * sizeof(float)));
        wgt_tensor_free(t);
        wgt_sampling sp = {0};
        sp.ignore_eos = 1;
        MUST(wgt_model_generate(m[k], prompt, np, nw, &sp, test_collect_token, &col[k], NULL));
    }
}

/* Returns 1 when the file generated transformers' ids in every case with logits within atol. */
static int check_file(wgt_context *ctx, const char *label, const char *path, const cJSON *fx, double atol,
                      const char *differs)
{
    wgt_model *m;
    wgt_status st = wgt_model_open(ctx, path, 0, &m);
    CHECK(st == WGT_OK, "%s: load %s: %s", label, path, wgt_errmsg());
    if (st) return 0;
    CHECK(wgt_model_tokenizer(m) != NULL, "%s: llama.cpp's tokenizer metadata does not load: %s", label,
          wgt_model_tokenizer_error(m) ? wgt_model_tokenizer_error(m) : "none");
    const cJSON *c;
    int ncase = 0, n_same = 0, n_close = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(fx, "cases"))
    {
        int32_t prompt[256], want[256];
        int np = test_ids_of(cJSON_GetObjectItem(c, "prompt_ids"), prompt, 256);
        int nw = test_ids_of(cJSON_GetObjectItem(c, "greedy_ids"), want, 256);
        int64_t V = m->cfg.vocab;
        int64_t n_logits = -1;
        wgt_model_reset(m);
        wgt_tensor *lg;
        st = wgt_model_forward(m, prompt, np, 0, &lg);
        CHECK(st == WGT_OK, "%s case %d: forward: %s", label, ncase, wgt_errmsg());
        double worst = 0;
        if (!st) {
            float *got = malloc(V * sizeof(float));
            MUST(wgt_tensor_to_host(lg, got, V * sizeof(float)));
            wgt_tensor_free(lg);
            const cJSON *r;
            int64_t i = 0;
            cJSON_ArrayForEach(r, cJSON_GetObjectItem(c, "first_step_logits"))
            {
                if (i < V && !(fabs(got[i] - r->valuedouble) <= worst)) worst = fabs(got[i] - r->valuedouble);
                i++;
            }
            CHECK(i == V, "%s: fixture has %lld logits, the file's vocabulary %lld", label, (long long)i, (long long)V);
            n_logits = i;
            free(got);
        }
        wgt_sampling sp = {0};
        sp.ignore_eos = 1;
        test_collect col = {0};
        st = wgt_model_generate(m, prompt, np, nw, &sp, test_collect_token, &col, NULL);
        CHECK(st == WGT_OK && col.n == nw, "%s case %d: generate: %s", label, ncase, st ? wgt_errmsg() : "short");
        int same = col.n == nw && !memcmp(col.ids, want, nw * sizeof(int32_t));
        n_same += same;
        n_close += !st && n_logits == V && worst <= atol;
        if (!differs) {
            CHECK(worst <= atol, "%s case %d: first-step logits differ from transformers' by up to %g (tolerance %g)", label,
                  ncase, worst, atol);
            CHECK(same, "%s case %d: greedy ids differ from transformers'", label, ncase);
            for (int k = 0; !same && k < nw && k < col.n; k++)
                if (col.ids[k] != want[k]) {
                    fprintf(stderr, "  first difference at token %d: wgt %d, transformers %d\n", k, col.ids[k], want[k]);
                    break;
                }
        }
        printf("%s case %d: |logits - transformers'| <= %.3g, ids %s\n", label, ncase, worst, same ? "equal" : "differ");
        ncase++;
    }
    CHECK(ncase >= 3, "%s: only %d cases", label, ncase);
    if (differs) {
        /* the reason must still hold: a file that now matches transformers belongs in the list above */
        CHECK(n_same < ncase, "%s: generates transformers' ids in every case, yet is listed as differing (%s)", label,
              differs);
        printf("%s: differs from transformers as expected: %s\n", label, differs);
    }
    wgt_model_free(m);
    return ncase >= 3 && n_same == ncase && n_close == ncase;
}

/* A file whose configuration differs: it must generate what wgt generates from a copy of the
 * fixture's directory whose config.json says what the file means (sed expressions), first-step
 * logits within atol (f16 weights against the f32 checkpoint). */
static void check_means(wgt_context *ctx, const char *label, const char *gguf, const char *root, const char *build,
                        const char *arch, const char *means, const cJSON *fx, double atol)
{
    char dir[1200], cmd[4096];
    snprintf(dir, sizeof dir, "%s/test-llama-cpp-means-%s", build, arch);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s/tests/fixtures/hf/%s' '%s' && sed -i %s '%s/config.json'", dir, root,
             arch, dir, means, dir);
    CHECK(system(cmd) == 0, "%s: %s", label, cmd);
    snprintf(cmd, sizeof cmd, "cmp -s '%s/tests/fixtures/hf/%s/config.json' '%s/config.json'", root, arch, dir);
    CHECK(system(cmd) != 0, "%s: the sed expressions changed nothing in config.json: %s", label, means);
    wgt_model *m[2] = {NULL, NULL};
    const char *paths[2] = {dir, gguf};
    for (int k = 0; k < 2; k++) {
        wgt_status st = wgt_model_open(ctx, paths[k], 0, &m[k]);
        CHECK(st == WGT_OK, "%s: load %s: %s", label, paths[k], wgt_errmsg());
    }
    const cJSON *c;
    int ncase = 0;
    const cJSON *cases_of = m[0] && m[1] ? cJSON_GetObjectItem(fx, "cases") : NULL;
    cJSON_ArrayForEach(c, cases_of)
    {
        int32_t prompt[256], want[256];
        int np = test_ids_of(cJSON_GetObjectItem(c, "prompt_ids"), prompt, 256);
        int nw = test_ids_of(cJSON_GetObjectItem(c, "greedy_ids"), want, 256);
        int64_t V = m[0]->cfg.vocab;
        float *lg[2];
        test_collect col[2] = {{.n = 0}, {.n = 0}};
        run_pair(m, prompt, np, nw, V, lg, col);
        double worst = 0;
        for (int64_t i = 0; i < V; i++) worst = fmax(worst, fabs(lg[0][i] - lg[1][i]));
        CHECK(worst <= atol, "%s case %d: logits differ from the directory as the file means it by %g (tolerance %g)",
              label, ncase, worst, atol);
        CHECK(col[0].n == nw && col[1].n == nw && !memcmp(col[0].ids, col[1].ids, nw * sizeof(int32_t)),
              "%s case %d: greedy ids differ from the directory as the file means it", label, ncase);
        printf("%s case %d: as the file means it (%s): |logits - directory's| <= %.3g, ids %s\n", label, ncase, means,
               worst, !memcmp(col[0].ids, col[1].ids, nw * sizeof(int32_t)) ? "equal" : "differ");
        free(lg[0]);
        free(lg[1]);
        ncase++;
    }
    CHECK(ncase >= 3, "%s: only %d cases as the file means it", label, ncase);
    wgt_model_free(m[0]);
    wgt_model_free(m[1]);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", dir);
}

/* q8_0: the quantized kernels against the same file dequantised (the exact CPU reference) run in
 * f32, first-step logits within float rounding and the same greedy ids; Q8_0 moves logits past
 * some greedy margins, so transformers' ids are not the reference (its logits within atol are). */
static void check_quant_file(wgt_context *ctx, const char *label, const char *path, const cJSON *fx, double atol)
{
    wgt_model *m[2] = {NULL, NULL};
    for (int d = 0; d < 2; d++) {
        wgt_model_options o = {0};
        o.dequantize = d;
        wgt_status st = wgt_model_open_ex(ctx, path, &o, &m[d]);
        CHECK(st == WGT_OK, "%s: load (dequantize %d): %s", label, d, wgt_errmsg());
    }
    if (m[0] && m[1]) {
        CHECK(m[0]->weight_bytes < m[1]->weight_bytes, "%s: quantized weights take %llu bytes, dequantised %llu", label,
              (unsigned long long)m[0]->weight_bytes, (unsigned long long)m[1]->weight_bytes);
        const cJSON *c;
        int ncase = 0;
        cJSON_ArrayForEach(c, cJSON_GetObjectItem(fx, "cases"))
        {
            int32_t prompt[256], want[256];
            int np = test_ids_of(cJSON_GetObjectItem(c, "prompt_ids"), prompt, 256);
            int nw = test_ids_of(cJSON_GetObjectItem(c, "greedy_ids"), want, 256);
            int64_t V = m[0]->cfg.vocab;
            float *lg[2];
            test_collect col[2] = {{.n = 0}, {.n = 0}};
            run_pair(m, prompt, np, nw, V, lg, col);
            double worst = 0, worst_ref = 0, scale = 0;
            const cJSON *r;
            int64_t i = 0;
            cJSON_ArrayForEach(r, cJSON_GetObjectItem(c, "first_step_logits"))
            {
                if (i < V)
                    worst_ref = fmax(worst_ref, fabs(lg[0][i] - r->valuedouble)),
                    worst = fmax(worst, fabs(lg[0][i] - lg[1][i])), scale = fmax(scale, fabs(lg[1][i]));
                i++;
            }
            CHECK(worst <= 2e-3, "%s case %d: quantized kernels vs dequantised reference: logits differ by %g", label, ncase,
                  worst);
            CHECK(col[0].n == nw && col[1].n == nw && !memcmp(col[0].ids, col[1].ids, nw * sizeof(int32_t)),
                  "%s case %d: quantized kernels and dequantised reference generate different ids", label, ncase);
            /* atol is relative to the largest logit (as test_gpu_quant_models) */
            CHECK(worst_ref <= atol * scale, "%s case %d: logits differ from transformers' by %g (tolerance %g)", label,
                  ncase, worst_ref, atol * scale);
            printf("%s case %d: |quantized - dequantised| <= %.2g, |quantized - transformers| <= %.3g, ids %s transformers'\n",
                   label, ncase, worst, worst_ref, !memcmp(col[0].ids, want, nw * sizeof(int32_t)) ? "equal" : "differ from");
            free(lg[0]);
            free(lg[1]);
            ncase++;
        }
    }
    wgt_model_free(m[0]);
    wgt_model_free(m[1]);
}

/* A gemma2 file without attention.sliding_window means llama.cpp's default window of 4096 (its
 * converter always writes the key; a hand-made file may not): llama.cpp's gemma2 file with that
 * key renamed in place (same length, so the file stays valid) loads with a window of 4096 on the
 * even layers, the file itself with its 8. */
static void gemma2_default_window(wgt_context *ctx, const char *root, const char *build)
{
    char src[1200], dst[1200];
    snprintf(src, sizeof src, "%s/tests/fixtures/llama_cpp/gemma2-f16.gguf", root);
    snprintf(dst, sizeof dst, "%s/test-gemma2-no-window-key.gguf", build);
    FILE *f = fopen(src, "rb");
    long size = f && !fseek(f, 0, SEEK_END) ? ftell(f) : -1;
    size_t n = size > 0 ? (size_t)size : 0;
    unsigned char *b = n ? malloc(n) : NULL;
    CHECK(b && !fseek(f, 0, SEEK_SET) && fread(b, 1, n, f) == n, "read %s", src);
    if (f) fclose(f);
    if (!b) return;
    const char key[] = "gemma2.attention.sliding_window";
    const uint64_t len = sizeof key - 1;
    int renamed = 0;
    for (size_t i = 0; i + 8 + len <= n; i++)
        if (!memcmp(b + i, &len, 8) && !memcmp(b + i + 8, key, len)) b[i + 8 + len - 1] = 'X', renamed++;
    CHECK(renamed == 1, "%s: %d keys %s", src, renamed, key);
    f = fopen(dst, "wb");
    CHECK(f && fwrite(b, 1, n, f) == n, "write %s", dst);
    if (f) fclose(f);
    free(b);
    const char *paths[2] = {src, dst};
    const int64_t want[2] = {8, 4096};
    for (int k = 0; k < 2; k++) {
        wgt_model *m;
        wgt_status st = wgt_model_open(ctx, paths[k], 0, &m);
        CHECK(st == WGT_OK, "load %s: %s", paths[k], wgt_errmsg());
        if (st) continue;
        CHECK(m->cfg.window == want[k] && mdl_layer_slides(&m->cfg, 0) && !mdl_layer_slides(&m->cfg, 1),
              "%s: window %lld (want %lld), layers sliding %d %d (want 1 0)", paths[k], (long long)m->cfg.window,
              (long long)want[k], mdl_layer_slides(&m->cfg, 0), mdl_layer_slides(&m->cfg, 1));
        wgt_model_free(m);
    }
    remove(dst);
}

int main(void)
{
    const char *root = getenv("WGT_ROOT") ? getenv("WGT_ROOT") : ".";
    const char *build = getenv("WGT_BUILD") ? getenv("WGT_BUILD") : "build";
    wgt_context *ctx;
    MUST(wgt_context_create(NULL, &ctx));
    int n_files = 0;
    int family_matches[sizeof families / sizeof families[0]] = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[1200], gguf[1200], label[160];
        snprintf(path, sizeof path, "%s/tests/fixtures/hf/%s/fixture.json", root, cases[i].arch);
        snprintf(gguf, sizeof gguf, "%s/tests/fixtures/llama_cpp/%s-%s.gguf", root, cases[i].arch, cases[i].type);
        cJSON *fx = test_fixture_json(path);
        CHECK(fx != NULL, "fixture %s", path);
        CHECK(access(gguf, R_OK) == 0, "missing %s (tools/llama_cpp_convert.sh makes it)", gguf);
        if (!fx || access(gguf, R_OK)) {
            cJSON_Delete(fx);
            continue;
        }
        snprintf(label, sizeof label, "%s (llama.cpp GGUF %s)", cases[i].arch, cases[i].type);
        int is_float = !strcmp(cases[i].type, "f32") || !strcmp(cases[i].type, "f16");
        /* f32 as transformers computes; f16 weights move logits by a few hundredths (the fixtures'
         * greedy margins are >= 0.15; test_gpu_families allows 0.1 too); q8_0 (relative to the
         * largest logit) by a few percent */
        double atol = !strcmp(cases[i].type, "f32") ? 2e-3 : !strcmp(cases[i].type, "f16") ? 1e-1 : 0.05;
        if (is_float) {
            int matches = check_file(ctx, label, gguf, fx, atol, cases[i].differs);
            const cJSON *mt = cJSON_GetObjectItem(fx, "model_type");
            for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
                if (matches && !cases[i].differs && cJSON_IsString(mt) && !strcmp(mt->valuestring, families[f]))
                    family_matches[f]++;
            if (cases[i].means) check_means(ctx, label, gguf, root, build, cases[i].arch, cases[i].means, fx, atol);
        } else
            check_quant_file(ctx, label, gguf, fx, atol);
        cJSON_Delete(fx);
        n_files++;
    }
    gemma2_default_window(ctx, root, build);
    int n_families = 0;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
        CHECK(family_matches[f] > 0, "%s: no file of llama.cpp's converter generates transformers' ids", families[f]);
        n_families += family_matches[f] > 0;
    }
    printf("%d files from llama.cpp's converter; %d of %d families with a file equal to transformers\n", n_files,
           n_families, (int)(sizeof families / sizeof families[0]));
    wgt_context_free(ctx);
    return test_finish("test_gpu_llama_cpp_gguf");
}
