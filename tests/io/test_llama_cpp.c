/* Our GGUF files load in llama.cpp itself: libllama of a pinned prebuilt llama.cpp (npm
 * @node-llama-cpp/linux-x64 3.22.1, CPU backends; installed with npm ci when missing) is loaded
 * with dlopen, and the files `wgt convert` writes from the tiny checkpoints of test_convert
 * (llama with the Llama 2 SentencePiece vocabulary and llama3 rope_freqs, qwen3 in Q4_K,
 * gpt2 in Q8_0, qwen2 with biases) must load as models; llama.cpp's parameter count must be
 * ours, and llama.cpp's tokenizer, reading our tokenizer metadata, must give the ids our
 * tokenizer gives from the original tokenizer files.
 *
 * No llama.h is used: only functions taking and returning pointers and scalars are called, plus
 * llama_model_default_params / llama_model_load_from_file, whose parameter struct is passed in
 * memory (it is larger than 16 bytes) and only round-tripped, so a generously sized opaque
 * buffer stands for it. */
#include <dlfcn.h>
#include <stdbool.h>

#include "io/io_test.h"

typedef struct { unsigned char bytes[1024]; } params_buf; /* llama_model_params, opaque */

static void quiet(int level, const char *text, void *user) { (void)level, (void)text, (void)user; }

static int run(const char *cmd)
{
    int rc = system(cmd);
    if (rc) fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
    return rc;
}

int main(void)
{
    const char *root = getenv("WGT_ROOT"), *bin = getenv("WGT_BIN"), *build = getenv("WGT_BUILD");
    char dir[1024], libdir[1200], path[1400], tmp[600], cmd[4096];
    snprintf(dir, sizeof dir, "%s/tests/io", root ? root : ".");
    snprintf(libdir, sizeof libdir, "%s/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64", dir);
    snprintf(path, sizeof path, "%s/libllama.v0.5.0.so", libdir);
    if (access(path, R_OK) != 0) {
        snprintf(cmd, sizeof cmd, "cd '%s' && npm ci --no-audit --no-fund >/dev/null", dir);
        run(cmd);
    }
    snprintf(path, sizeof path, "%s/libggml.v0.5.0.so", libdir);
    void *ggml = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    snprintf(path, sizeof path, "%s/libllama.v0.5.0.so", libdir);
    void *llama = ggml ? dlopen(path, RTLD_NOW | RTLD_GLOBAL) : NULL;
    if (!llama) {
        fprintf(stderr, "FAIL: cannot load llama.cpp from %s: %s\n", libdir, dlerror());
        return 1;
    }
    void (*load_all_from_path)(const char *) = (void (*)(const char *))dlsym(ggml, "ggml_backend_load_all_from_path");
    void (*backend_init)(void) = (void (*)(void))dlsym(llama, "llama_backend_init");
    void (*log_set)(void (*)(int, const char *, void *), void *) = (void (*)(void (*)(int, const char *, void *), void *))dlsym(llama, "llama_log_set");
    params_buf (*default_params)(void) = (params_buf(*)(void))dlsym(llama, "llama_model_default_params");
    void *(*load)(const char *, params_buf) = (void *(*)(const char *, params_buf))dlsym(llama, "llama_model_load_from_file");
    void (*model_free)(void *) = (void (*)(void *))dlsym(llama, "llama_model_free");
    uint64_t (*n_params)(const void *) = (uint64_t(*)(const void *))dlsym(llama, "llama_model_n_params");
    int32_t (*desc)(const void *, char *, size_t) = (int32_t(*)(const void *, char *, size_t))dlsym(llama, "llama_model_desc");
    const void *(*get_vocab)(const void *) = (const void *(*)(const void *))dlsym(llama, "llama_model_get_vocab");
    int32_t (*n_tokens)(const void *) = (int32_t(*)(const void *))dlsym(llama, "llama_vocab_n_tokens");
    int32_t (*tokenize)(const void *, const char *, int32_t, int32_t *, int32_t, bool, bool) =
        (int32_t(*)(const void *, const char *, int32_t, int32_t *, int32_t, bool, bool))dlsym(llama, "llama_tokenize");
    if (!load_all_from_path || !backend_init || !default_params || !load || !model_free || !n_params || !desc || !get_vocab ||
        !n_tokens || !tokenize || !log_set) {
        fprintf(stderr, "FAIL: a llama.cpp function is missing\n");
        return 1;
    }
    if (!getenv("WGT_LLAMA_LOG")) log_set(quiet, NULL);
    load_all_from_path(libdir);
    backend_init();

    snprintf(tmp, sizeof tmp, "%s", tmp_path(".llamacpp"));
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && WGT_ROOT='%s' '%s/tests/test_convert' --make '%s/hf' >/dev/null", tmp, root ? root : ".",
             build ? build : "build", tmp);
    if (run(cmd)) return 1;
    struct { const char *name, *type; const char *tokenizer; } models[] = {
        {"llama", "f16", "tokenizer.model"}, {"qwen3", "q4_k", "tokenizer.json"}, {"gpt2", "q8_0", ""}, {"qwen2", "f32", NULL}};
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
        char in[800], out[800], tok[900];
        snprintf(in, sizeof in, "%s/hf/%s", tmp, models[m].name);
        snprintf(out, sizeof out, "%s/%s.gguf", tmp, models[m].name);
        if (!strcmp(models[m].name, "llama")) {
            snprintf(tok, sizeof tok, "%s/tokenizer.model", in);
            CHECK(access(tok, R_OK) == 0, "%s: the Llama 2 tokenizer of tests/fixtures/text did not reach the llama fixture", tok);
        }
        snprintf(cmd, sizeof cmd, "'%s' convert '%s' '%s' --type %s 2>/dev/null", bin ? bin : "build/wgt", in, out, models[m].type);
        CHECK(run(cmd) == 0, "convert %s", models[m].name);
        params_buf p = default_params();
        void *model = load(out, p);
        CHECK(model != NULL, "llama.cpp loads our %s file (WGT_LLAMA_LOG=1 shows its log)", models[m].name);
        if (!model) continue;
        char d[256] = "";
        desc(model, d, sizeof d);
        wgt_gguf *g;
        uint64_t ours = 0;
        if (!wgt_gguf_open(out, &g)) {
            for (int64_t i = 0; i < wgt_gguf_tensor_count(g); i++) ours += (uint64_t)wgt_gguf_tensor_at(g, i)->n_elements;
            wgt_gguf_free(g);
        }
        uint64_t theirs = n_params(model);
        CHECK(theirs == ours, "%s: llama.cpp counts %llu parameters, our file holds %llu", models[m].name,
              (unsigned long long)theirs, (unsigned long long)ours);
        const void *vocab = get_vocab(model);
        printf("%s: llama.cpp loaded it: \"%s\", %llu parameters, %d tokens\n", models[m].name, d, (unsigned long long)theirs, n_tokens(vocab));
        /* tokenizer: llama.cpp on our metadata vs our tokenizer on the original files */
        if (models[m].tokenizer) {
            snprintf(tok, sizeof tok, "%s/%s", in, models[m].tokenizer);
            wgt_tokenizer *t = NULL;
            CHECK_OK(wgt_tokenizer_open(tok, &t));
            const char *texts[] = {"the theme in a hat", "Hello world, the cat sat at the mat.", "h\xc3\xa9llo \xe2\x82\xac", "  two  spaces"};
            for (size_t k = 0; t && k < sizeof texts / sizeof texts[0]; k++) {
                int32_t a[256], *b = NULL;
                size_t nb = 0;
                int32_t na = tokenize(vocab, texts[k], (int32_t)strlen(texts[k]), a, 256, false, false);
                CHECK_OK(wgt_tokenizer_encode(t, texts[k], (size_t)-1, 0, &b, &nb));
                CHECK(na >= 0 && (size_t)na == nb && !memcmp(a, b, nb * sizeof *b), "%s '%s': llama.cpp gives %d ids, ours %zu",
                      models[m].name, texts[k], na, nb);
                free(b);
            }
            wgt_tokenizer_free(t);
        }
        model_free(model);
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (!failures) run(cmd);
    return finish("test_llama_cpp");
}
