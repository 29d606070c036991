/* The newer model families (gemma, gemma2, gemma3_text, phi3, phi, olmo2, gpt_neox, stablelm, starcoder2, granite,
 * smollm3; mistral's and qwen2's windows; the mixtures of experts from their transformers fixtures) against
 * llama.cpp, an implementation independent of ours: for each, a tiny random-weight Hugging Face
 * checkpoint (config.json in transformers 5's form + model.safetensors) is written here, converted
 * by `wgt convert` to GGUF, and the f32 file is run greedily by llama.cpp (libllama of the pinned
 * prebuilt npm @node-llama-cpp/linux-x64 3.22.1, loaded with dlopen as tests/io/test_llama_cpp.c
 * does). wgt must then generate llama.cpp's ids, and agree on the first-step logits, from the
 * directory and from its GGUF conversions in f32, f16 and q8_0. Prompts are searched (through
 * llama.cpp) until every greedy step's top-1/top-2 margin is comfortable.
 *
 * That llama.cpp accepts the files also checks the converter's tensor names and metadata keys,
 * and llama.cpp computes from those keys: a key written wrongly gives other ids.
 *
 * Where llama.cpp has no oracle (it runs Mistral without its window), the sliding window is
 * checked by what it means: RoPE makes attention depend on relative positions only, so in a
 * one-layer model the logits at position p with a window of W equal those of the model without
 * a window on the last W tokens alone.
 *
 * Transformers' own fixtures for these families come from tools/make_fixtures.py (H200 image).
 * llama.cpp also runs its own converter's files of those fixtures (tests/fixtures/llama_cpp/, which
 * test_gpu_llama_cpp_gguf runs in wgt) and must generate transformers' ids: wgt's reference on those
 * files is then llama.cpp's reading of them as well as transformers' (21 files, every family). */
#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "models/model.h"
#include "support/check.h"
#include "support/collect.h"
#include "support/fixture.h"
#include "support/rng.h"

#define V 320 /* vocabulary: past one byte, not a power of two */
#define N_NEW 16
#define MIN_MARGIN 0.15 /* llama.cpp's logits, every greedy step */

/* ---- llama.cpp through dlopen (no llama.h: structs passed by value are opaque buffers, except
 * llama_batch, whose seven fields are declared as llama.h has them) ---- */
typedef struct { unsigned char bytes[1024]; } params_buf;
typedef struct llama_batch {
    int32_t n_tokens;
    int32_t *token;
    float *embd;
    int32_t *pos;
    int32_t *n_seq_id;
    int32_t **seq_id;
    int8_t *logits;
} llama_batch;

static struct {
    params_buf (*model_params)(void);
    params_buf (*context_params)(void);
    void *(*load)(const char *, params_buf);
    void (*model_free)(void *);
    void *(*init)(void *, params_buf);
    void (*ctx_free)(void *);
    void (*set_threads)(void *, int32_t, int32_t);
    llama_batch (*batch_one)(int32_t *, int32_t);
    int32_t (*decode)(void *, llama_batch);
    float *(*logits_ith)(void *, int32_t);
} lc;

static void quiet(int level, const char *text, void *user) { (void)level, (void)text, (void)user; }

static int llama_open(const char *root)
{
    char dir[1024], libdir[1200], path[1400], cmd[1600];
    snprintf(dir, sizeof dir, "%s/tests/io", root);
    snprintf(libdir, sizeof libdir, "%s/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64", dir);
    snprintf(path, sizeof path, "%s/libllama.v0.5.0.so", libdir);
    if (access(path, R_OK) != 0) {
        snprintf(cmd, sizeof cmd, "cd '%s' && npm ci --no-audit --no-fund >/dev/null", dir);
        if (system(cmd)) fprintf(stderr, "npm ci in %s failed\n", dir);
    }
    snprintf(path, sizeof path, "%s/libggml.v0.5.0.so", libdir);
    void *ggml = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    snprintf(path, sizeof path, "%s/libllama.v0.5.0.so", libdir);
    void *l = ggml ? dlopen(path, RTLD_NOW | RTLD_GLOBAL) : NULL;
    if (!l) {
        fprintf(stderr, "cannot load llama.cpp from %s: %s\n", libdir, dlerror());
        return 0;
    }
    void (*load_all)(const char *) = (void (*)(const char *))dlsym(ggml, "ggml_backend_load_all_from_path");
    void (*backend_init)(void) = (void (*)(void))dlsym(l, "llama_backend_init");
    void (*log_set)(void (*)(int, const char *, void *), void *) =
        (void (*)(void (*)(int, const char *, void *), void *))dlsym(l, "llama_log_set");
    *(void **)&lc.model_params = dlsym(l, "llama_model_default_params");
    *(void **)&lc.context_params = dlsym(l, "llama_context_default_params");
    *(void **)&lc.load = dlsym(l, "llama_model_load_from_file");
    *(void **)&lc.model_free = dlsym(l, "llama_model_free");
    *(void **)&lc.init = dlsym(l, "llama_init_from_model");
    *(void **)&lc.ctx_free = dlsym(l, "llama_free");
    *(void **)&lc.set_threads = dlsym(l, "llama_set_n_threads");
    *(void **)&lc.batch_one = dlsym(l, "llama_batch_get_one");
    *(void **)&lc.decode = dlsym(l, "llama_decode");
    *(void **)&lc.logits_ith = dlsym(l, "llama_get_logits_ith");
    if (!load_all || !backend_init || !log_set || !lc.model_params || !lc.context_params || !lc.load || !lc.model_free ||
        !lc.init || !lc.ctx_free || !lc.set_threads || !lc.batch_one || !lc.decode || !lc.logits_ith) {
        fprintf(stderr, "a llama.cpp function is missing\n");
        return 0;
    }
    if (!getenv("WGT_LLAMA_LOG")) log_set(quiet, NULL);
    load_all(libdir);
    backend_init();
    return 1;
}

static double margin_of(const float *lg, int32_t *arg)
{
    int a = 0;
    for (int i = 1; i < V; i++)
        if (lg[i] > lg[a]) a = i;
    float second = -INFINITY;
    for (int i = 0; i < V; i++)
        if (i != a && lg[i] > second) second = lg[i];
    *arg = a;
    return lg[a] - second;
}

/* llama.cpp's greedy continuation of prompt: ids, first-step logits, smallest margin. */
static int llama_greedy(void *model, const int32_t *prompt, int np, int32_t *ids, float *first, double *min_margin)
{
    void *ctx = lc.init(model, lc.context_params());
    if (!ctx) return 0;
    lc.set_threads(ctx, 1, 1); /* ggml's threads wait by spinning: on a loaded machine one is fastest */
    int32_t toks[64];
    memcpy(toks, prompt, (size_t)np * sizeof *toks);
    llama_batch b = lc.batch_one(toks, np);
    *min_margin = INFINITY;
    int ok = 1;
    for (int s = 0; s < N_NEW && ok; s++) {
        if (lc.decode(ctx, b)) {
            ok = 0;
            break;
        }
        const float *lg = lc.logits_ith(ctx, -1);
        if (s == 0) memcpy(first, lg, V * sizeof *first);
        double mg = margin_of(lg, &ids[s]);
        if (mg < *min_margin) *min_margin = mg;
        toks[np + s] = ids[s];
        b = lc.batch_one(&toks[np + s], 1);
    }
    lc.ctx_free(ctx);
    return ok;
}

/* ---- tiny checkpoints ---- */
/* In (0, 1): the tests' generator (support/rng.h; each checkpoint seeds it) moved off 0 by half a step */
static double uniform(void) { return test_uniform(0, 1) + 0x1p-54; }
static float normal(void) { return (float)(sqrt(-2 * log(uniform())) * cos(2 * M_PI * uniform())); }

typedef struct tensor_spec {
    char name[96];
    int64_t shape[2]; /* shape[1] 0: 1-D */
    float center, std;
} tensor_spec;

typedef struct family_case {
    const char *name;       /* directory name */
    const char *config;     /* config.json */
    int layers, heads, kv_heads, head_dim, ffn;
    int post_norms, qk_norm, tied;
    float norm_center;      /* Gemma's norms scale by (1 + w): random w around 0 */
    int32_t bos;            /* prompts start with it (-1: none) */
    int llama_oracle;       /* llama.cpp runs the family as transformers does */
    int fused;              /* phi3: qkv_proj [q; k; v] and gate_up_proj [gate; up] */
    int phi;                /* phi-2's names: dense, fc1/fc2, LayerNorms with biases, lm_head bias */
    int olmo;               /* olmo2: post-norms only, q/k norms over all heads */
    int neox;               /* gpt_neox's names; query_key_value interleaved per head */
    int ln;                 /* LayerNorms with biases (stablelm, starcoder2) */
    int qkv_bias, o_bias;   /* biases on q/k/v, on o_proj */
    int c_mlp;              /* starcoder2: mlp.c_fc / mlp.c_proj with biases, no gate */
    int qk_ln;              /* stablelm: self_attn.{q,k}_layernorm.norms.H.weight, one a head */
    int no_ffn_norm;        /* stablelm's parallel form: no post_attention_layernorm */
} family_case;

static int specs_of(const family_case *f, tensor_spec *t)
{
    int n = 0, D = 64;
#define ADD(nm, a, b, c, s) (snprintf(t[n].name, sizeof t[n].name, "%s", nm), t[n].shape[0] = a, t[n].shape[1] = b, \
                             t[n].center = c, t[n].std = s, n++)
    char nm[96];
    if (f->neox) {
        ADD("gpt_neox.embed_in.weight", V, D, 0, 0.5f);
        ADD("gpt_neox.final_layer_norm.weight", D, 0, 1, 0.25f);
        ADD("gpt_neox.final_layer_norm.bias", D, 0, 0, 0.1f);
        ADD("embed_out.weight", V, D, 0, 0.5f);
        for (int l = 0; l < f->layers; l++) {
            static const struct { const char *n; int rows, cols; } t_neox[] = {
                {"input_layernorm.weight", -1, 0}, {"input_layernorm.bias", 1, 0},
                {"post_attention_layernorm.weight", -1, 0}, {"post_attention_layernorm.bias", 1, 0},
                {"attention.query_key_value.weight", 2, 1}, {"attention.query_key_value.bias", 2, 0},
                {"attention.dense.weight", 1, 1}, {"attention.dense.bias", 1, 0},
                {"mlp.dense_h_to_4h.weight", 3, 1}, {"mlp.dense_h_to_4h.bias", 3, 0},
                {"mlp.dense_4h_to_h.weight", 1, 3}, {"mlp.dense_4h_to_h.bias", 1, 0}};
            int64_t size[4] = {0, D, 3 * D, f->ffn}; /* 2: q, k and v of every head */
            for (size_t k = 0; k < sizeof t_neox / sizeof t_neox[0]; k++) {
                snprintf(nm, sizeof nm, "gpt_neox.layers.%d.%s", l, t_neox[k].n);
                int ln = t_neox[k].rows < 0;
                int64_t r = size[ln ? 1 : t_neox[k].rows], cols = size[t_neox[k].cols];
                ADD(nm, r, cols, ln ? 1.0f : 0.0f, ln ? 0.25f : cols ? 0.2f : 0.1f);
            }
        }
        return n;
    }
    ADD("model.embed_tokens.weight", V, D, 0, 0.5f);
    if (f->phi) {
        ADD("model.final_layernorm.weight", D, 0, 1, 0.25f);
        ADD("model.final_layernorm.bias", D, 0, 0, 0.1f);
        ADD("lm_head.weight", V, D, 0, 0.5f);
        ADD("lm_head.bias", V, 0, 0, 0.1f);
        for (int l = 0; l < f->layers; l++) {
            static const struct { const char *n; int rows, cols; } t_phi[] = {
                {"input_layernorm.weight", -1, 0}, {"input_layernorm.bias", 1, 0}, {"self_attn.q_proj.weight", 2, 1},
                {"self_attn.q_proj.bias", 2, 0},    {"self_attn.k_proj.weight", 2, 1}, {"self_attn.k_proj.bias", 2, 0},
                {"self_attn.v_proj.weight", 2, 1},  {"self_attn.v_proj.bias", 2, 0}, {"self_attn.dense.weight", 1, 2},
                {"self_attn.dense.bias", 1, 0},     {"mlp.fc1.weight", 3, 1},        {"mlp.fc1.bias", 3, 0},
                {"mlp.fc2.weight", 1, 3},           {"mlp.fc2.bias", 1, 0}};
            /* sizes: 1 hidden, 2 heads x head_dim (MHA), 3 ffn; rows -1: a LayerNorm weight */
            int64_t size[4] = {0, D, (int64_t)f->heads * f->head_dim, f->ffn};
            for (size_t k = 0; k < sizeof t_phi / sizeof t_phi[0]; k++) {
                snprintf(nm, sizeof nm, "model.layers.%d.%s", l, t_phi[k].n);
                int ln = t_phi[k].rows < 0;
                int64_t r = size[ln ? 1 : t_phi[k].rows], cols = size[t_phi[k].cols];
                ADD(nm, r, cols, ln ? 1.0f : 0.0f, ln ? 0.25f : cols ? 0.2f : 0.1f);
            }
        }
        return n;
    }
    ADD("model.norm.weight", D, 0, f->norm_center, 0.25f);
    if (f->ln) ADD("model.norm.bias", D, 0, 0, 0.1f);
    if (!f->tied) ADD("lm_head.weight", V, D, 0, 0.5f);
    for (int l = 0; l < f->layers; l++) {
#define L(suffix, a, b, c, s) (snprintf(nm, sizeof nm, "model.layers.%d.%s", l, suffix), ADD(nm, a, b, c, s))
        int qd = f->heads * f->head_dim, kd = f->kv_heads * f->head_dim;
        if (!f->olmo) L("input_layernorm.weight", D, 0, f->norm_center, 0.25f);
        if (f->ln) L("input_layernorm.bias", D, 0, 0, 0.1f);
        if (f->fused) {
            L("self_attn.qkv_proj.weight", qd + 2 * kd, D, 0, 0.2f);
        } else {
            L("self_attn.q_proj.weight", qd, D, 0, 0.2f);
            L("self_attn.k_proj.weight", kd, D, 0, 0.2f);
            L("self_attn.v_proj.weight", kd, D, 0, 0.2f);
        }
        if (f->qkv_bias) {
            L("self_attn.q_proj.bias", qd, 0, 0, 0.1f);
            L("self_attn.k_proj.bias", kd, 0, 0, 0.1f);
            L("self_attn.v_proj.bias", kd, 0, 0, 0.1f);
        }
        L("self_attn.o_proj.weight", D, qd, 0, 0.2f);
        if (f->o_bias) L("self_attn.o_proj.bias", D, 0, 0, 0.1f);
        for (int h = 0; f->qk_ln && h < f->heads + f->kv_heads; h++) {
            char hn[64];
            snprintf(hn, sizeof hn, "self_attn.%s_layernorm.norms.%d.weight", h < f->heads ? "q" : "k",
                     h < f->heads ? h : h - f->heads);
            L(hn, f->head_dim, 0, 1, 0.25f);
        }
        if (f->qk_norm) {
            L("self_attn.q_norm.weight", f->olmo ? qd : f->head_dim, 0, f->norm_center, 0.25f);
            L("self_attn.k_norm.weight", f->olmo ? kd : f->head_dim, 0, f->norm_center, 0.25f);
        }
        /* post-norms: weights well above 1, or the residual (embeddings x sqrt(hidden)) drowns what
         * the layers add and the model echoes its input (real Gemma 2/3 post-norm weights are large) */
        float post = f->post_norms ? f->norm_center + 3 : f->norm_center;
        if (!f->no_ffn_norm) L("post_attention_layernorm.weight", D, 0, post, 0.25f);
        if (f->ln && !f->no_ffn_norm) L("post_attention_layernorm.bias", D, 0, 0, 0.1f);
        if (f->post_norms) {
            if (!f->olmo) L("pre_feedforward_layernorm.weight", D, 0, f->norm_center, 0.25f);
            L("post_feedforward_layernorm.weight", D, 0, post, 0.25f);
        }
        if (f->c_mlp) {
            L("mlp.c_fc.weight", f->ffn, D, 0, 0.2f);
            L("mlp.c_fc.bias", f->ffn, 0, 0, 0.1f);
            L("mlp.c_proj.weight", D, f->ffn, 0, 0.2f);
            L("mlp.c_proj.bias", D, 0, 0, 0.1f);
            continue;
        }
        if (f->fused) {
            L("mlp.gate_up_proj.weight", 2 * f->ffn, D, 0, 0.2f);
        } else {
            L("mlp.gate_proj.weight", f->ffn, D, 0, 0.2f);
            L("mlp.up_proj.weight", f->ffn, D, 0, 0.2f);
        }
        L("mlp.down_proj.weight", D, f->ffn, 0, 0.2f);
#undef L
    }
#undef ADD
    return n;
}

static int write_checkpoint(const family_case *f, const char *dir, uint64_t seed)
{
    char p[1200];
    mkdir(dir, 0755);
    snprintf(p, sizeof p, "%s/config.json", dir);
    FILE *fc = fopen(p, "w");
    if (!fc) return 0;
    fputs(f->config, fc);
    fclose(fc);
    static tensor_spec t[256];
    int n = specs_of(f, t);
    wgt_st_writer *w;
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    if (wgt_st_writer_open(p, &w)) return 0;
    for (int i = 0; i < n; i++)
        if (wgt_st_writer_add_tensor(w, t[i].name, WGT_FTYPE_F32, t[i].shape[1] ? 2 : 1, t[i].shape)) return 0;
    test_rng = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int i = 0; i < n; i++) {
        int64_t k = t[i].shape[0] * (t[i].shape[1] ? t[i].shape[1] : 1);
        float *v = malloc((size_t)k * sizeof *v);
        for (int64_t j = 0; j < k; j++) v[j] = t[i].center + t[i].std * normal();
        wgt_status st = wgt_st_writer_write(w, v, (uint64_t)k * sizeof *v);
        free(v);
        if (st) return 0;
    }
    return wgt_st_writer_finish(w) == WGT_OK;
}

/* ---- wgt against llama.cpp's reference ---- */
typedef struct reference {
    int32_t prompt[3][16];
    int np[3];
    int32_t ids[3][N_NEW];
    float first[3][V];
} reference;

static void check_wgt(wgt_context *ctx, const char *label, const char *path, const reference *r, double atol)
{
    printf("%s\n", label);
    fflush(stdout);
    wgt_model *m;
    wgt_status st = wgt_model_open(ctx, path, 64, &m);
    CHECK(st == WGT_OK, "%s: load %s: %s", label, path, wgt_errmsg());
    if (st) return;
    for (int c = 0; c < 3; c++) {
        wgt_model_reset(m);
        wgt_tensor *lg;
        st = wgt_model_forward(m, r->prompt[c], r->np[c], 0, &lg);
        CHECK(st == WGT_OK, "%s case %d: forward: %s", label, c, wgt_errmsg());
        if (st) continue;
        float got[V];
        MUST(wgt_tensor_to_host(lg, got, sizeof got));
        wgt_tensor_free(lg);
        double worst = 0;
        for (int i = 0; i < V; i++) {
            double d = fabs(got[i] - r->first[c][i]);
            if (!(d <= worst)) worst = d;
        }
        CHECK(worst <= atol, "%s case %d: first-step logits differ from llama.cpp's by up to %g (tolerance %g)", label, c,
              worst, atol);
        wgt_sampling sp = {0};
        sp.ignore_eos = 1;
        test_collect col = {0};
        st = wgt_model_generate(m, r->prompt[c], r->np[c], N_NEW, &sp, test_collect_token, &col, NULL);
        int same = !st && col.n == N_NEW && !memcmp(col.ids, r->ids[c], sizeof r->ids[c]);
        CHECK(same, "%s case %d (prompt of %d): greedy ids differ from llama.cpp's", label, c, r->np[c]);
        for (int k = 0; !same && k < col.n && k < N_NEW; k++)
            if (col.ids[k] != r->ids[c][k]) {
                fprintf(stderr, "  first difference at token %d: wgt %d, llama.cpp %d\n", k, col.ids[k], r->ids[c][k]);
                break;
            }
    }
    wgt_model_free(m);
}

/* The quantized kernels against the dequantised reference on the same file: first-step logits
 * within float rounding and the same greedy ids, for the reference's prompts. */
static void check_quant(wgt_context *ctx, const char *label, const char *path, const reference *r)
{
    printf("%s\n", label);
    fflush(stdout);
    wgt_model *m[2] = {NULL, NULL};
    for (int d = 0; d < 2; d++) {
        wgt_model_options o = {0};
        o.max_ctx = 64;
        o.dequantize = d;
        wgt_status st = wgt_model_open_ex(ctx, path, &o, &m[d]);
        CHECK(st == WGT_OK, "%s: load (dequantize %d): %s", label, d, wgt_errmsg());
    }
    if (m[0] && m[1]) {
        CHECK(m[0]->weight_bytes < m[1]->weight_bytes, "%s: quantized weights take %llu bytes, dequantised %llu", label,
              (unsigned long long)m[0]->weight_bytes, (unsigned long long)m[1]->weight_bytes);
        for (int c = 0; c < 3; c++) {
            float lg[2][V];
            test_collect col[2] = {{.n = 0}, {.n = 0}};
            for (int d = 0; d < 2; d++) {
                wgt_tensor *t;
                wgt_model_reset(m[d]);
                MUST(wgt_model_forward(m[d], r->prompt[c], r->np[c], 0, &t));
                MUST(wgt_tensor_to_host(t, lg[d], sizeof lg[d]));
                wgt_tensor_free(t);
                wgt_sampling sp = {0};
                sp.ignore_eos = 1;
                MUST(wgt_model_generate(m[d], r->prompt[c], r->np[c], N_NEW, &sp, test_collect_token, &col[d], NULL));
            }
            double worst = 0;
            for (int i = 0; i < V; i++) worst = fmax(worst, fabs(lg[0][i] - lg[1][i]));
            CHECK(worst <= 2e-3, "%s case %d: quantized kernels vs dequantised reference: logits differ by %g", label, c,
                  worst);
            CHECK(col[0].n == N_NEW && col[1].n == N_NEW && !memcmp(col[0].ids, col[1].ids, N_NEW * sizeof(int32_t)),
                  "%s case %d: quantized kernels and dequantised reference generate different ids", label, c);
        }
    }
    wgt_model_free(m[0]);
    wgt_model_free(m[1]);
}

static int convert(const char *wgt, const char *dir, const char *out, const char *type)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' convert '%s' '%s' --type %s --force >/dev/null 2>&1", wgt, dir, out, type);
    return system(cmd) == 0;
}

static void run_family(wgt_context *ctx, const family_case *f, const char *wgt, const char *tmp)
{
    char dir[1024], g32[1100], gq[1100], label[128];
    snprintf(dir, sizeof dir, "%s/%s", tmp, f->name);
    CHECK(write_checkpoint(f, dir, 7), "%s: writing the checkpoint: %s", f->name, wgt_errmsg());
    snprintf(g32, sizeof g32, "%s/%s-f32.gguf", tmp, f->name);
    CHECK(convert(wgt, dir, g32, "f32"), "%s: wgt convert --type f32", f->name);
    void *model = lc.load(g32, lc.model_params());
    CHECK(model != NULL, "%s: llama.cpp does not load wgt's conversion (WGT_LLAMA_LOG=1 shows why)", f->name);
    if (!model) return;
    /* prompts of 2, 6 and 12 tokens whose greedy trajectories are decided by comfortable margins */
    reference r;
    static const int lens[3] = {2, 6, 12}; /* with BOS: a 1-token prompt would be BOS alone, no choice */
    uint64_t prng = 12345;
    for (int c = 0; c < 3; c++) {
        double best = -1;
        for (int attempt = 0; attempt < 300 && best < MIN_MARGIN; attempt++) {
            int32_t p[16], ids[N_NEW];
            float first[V];
            int np = 0;
            if (f->bos >= 0) p[np++] = f->bos;
            while (np < lens[c]) {
                prng = prng * 6364136223846793005ull + 1442695040888963407ull;
                p[np++] = 3 + (int32_t)((prng >> 33) % (V - 3));
            }
            double mg;
            if (!llama_greedy(model, p, np, ids, first, &mg)) break;
            int distinct = 0;
            for (int i = 0; i < N_NEW; i++) {
                int seen = 0;
                for (int j = 0; j < i; j++) seen |= ids[j] == ids[i];
                distinct += !seen;
            }
            if (distinct < 3 || mg <= best) continue;
            best = mg;
            memcpy(r.prompt[c], p, sizeof p);
            r.np[c] = np;
            memcpy(r.ids[c], ids, sizeof ids);
            memcpy(r.first[c], first, sizeof first);
        }
        CHECK(best >= MIN_MARGIN, "%s: no prompt of %d tokens with greedy margins >= %g (best %g)", f->name, lens[c],
              MIN_MARGIN, best);
    }
    lc.model_free(model);
    printf("%s: llama.cpp's references: prompts of %d, %d, %d tokens\n", f->name, r.np[0], r.np[1], r.np[2]);
    fflush(stdout);
    /* f32 weights on both sides, but llama.cpp keeps its KV cache in f16 and reads GELU from an f16
     * table: logits agree to a few hundredths (the greedy margins are >= 0.15) */
    snprintf(label, sizeof label, "%s (HF)", f->name);
    check_wgt(ctx, label, dir, &r, 6e-2);
    snprintf(label, sizeof label, "%s (GGUF f32)", f->name);
    check_wgt(ctx, label, g32, &r, 6e-2);
    snprintf(gq, sizeof gq, "%s/%s-f16.gguf", tmp, f->name);
    CHECK(convert(wgt, dir, gq, "f16"), "%s: wgt convert --type f16", f->name);
    snprintf(label, sizeof label, "%s (GGUF f16)", f->name);
    check_wgt(ctx, label, gq, &r, 1e-1);
    /* Q8_0 moves these logits by up to ~0.5, past some greedy margins: its kernels are checked
     * against the same file's weights dequantised by the reference and run in f32 */
    snprintf(gq, sizeof gq, "%s/%s-q8_0.gguf", tmp, f->name);
    CHECK(convert(wgt, dir, gq, "q8_0"), "%s: wgt convert --type q8_0", f->name);
    snprintf(label, sizeof label, "%s (GGUF q8_0)", f->name);
    check_quant(ctx, label, gq, &r);
}

/* A sliding window of 8 on a one-layer model (mistral; qwen2 with use_sliding_window and
 * max_window_layers 0). Logits at the last of 20 positions with the window equal the logits of
 * the same model without it on the last 8 tokens (RoPE is relative); in prefill (the attention
 * kernel bounds each query's window) and in decode (the cache narrowed to the window). Mistral's
 * window survives the GGUF conversion; qwen2's is refused there (llama.cpp's qwen2 has none). */
static void window_check(wgt_context *ctx, const char *tmp, const family_case *fc, int converts)
{
    const family_case f = *fc;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", tmp, f.name);
    CHECK(write_checkpoint(&f, dir, 11), "%s: writing the checkpoint", f.name);
    wgt_model *m;
    MUST(wgt_model_open(ctx, dir, 64, &m));
    CHECK(m->cfg.window == 8 && mdl_layer_slides(&m->cfg, 0), "%s: window %lld", f.name, (long long)m->cfg.window);
    int32_t seq[20];
    for (int i = 0; i < 20; i++) seq[i] = 3 + (i * 37 + 11) % (V - 3);
    float full[V], step[V], tail[V];
    wgt_tensor *lg;
    /* prefill of all 20 */
    MUST(wgt_model_forward(m, seq, 20, 0, &lg));
    MUST(wgt_tensor_to_host(lg, full, sizeof full));
    wgt_tensor_free(lg);
    /* 12 in prefill, then one token at a time */
    wgt_model_reset(m);
    MUST(wgt_model_forward(m, seq, 12, 0, &lg));
    wgt_tensor_free(lg);
    for (int i = 12; i < 20; i++) {
        MUST(wgt_model_forward(m, seq + i, 1, 0, &lg));
        if (i == 19) MUST(wgt_tensor_to_host(lg, step, sizeof step));
        wgt_tensor_free(lg);
    }
    /* without the window, the last 8 alone */
    m->cfg.window = 0;
    wgt_model_reset(m);
    MUST(wgt_model_forward(m, seq + 12, 8, 0, &lg));
    MUST(wgt_tensor_to_host(lg, tail, sizeof tail));
    wgt_tensor_free(lg);
    /* and the whole context without the window must differ (the window does something) */
    wgt_model_reset(m);
    float nowin[V];
    MUST(wgt_model_forward(m, seq, 20, 0, &lg));
    MUST(wgt_tensor_to_host(lg, nowin, sizeof nowin));
    wgt_tensor_free(lg);
    double d_prefill = 0, d_decode = 0, d_nowin = 0;
    for (int i = 0; i < V; i++) {
        d_prefill = fmax(d_prefill, fabs(full[i] - tail[i]));
        d_decode = fmax(d_decode, fabs(step[i] - tail[i]));
        d_nowin = fmax(d_nowin, fabs(nowin[i] - tail[i]));
    }
    CHECK(d_prefill < 2e-3, "%s: prefill over 20 tokens vs the last 8 alone: %g", f.name, d_prefill);
    CHECK(d_decode < 2e-3, "%s: decode at position 19 vs the last 8 alone: %g", f.name, d_decode);
    CHECK(d_nowin > 0.1, "%s: without the window the logits should differ (%g)", f.name, d_nowin);
    wgt_model_free(m);
    /* the window survives the GGUF conversion (llama.attention.sliding_window), or is refused */
    char gg[1100], cmd[2600];
    snprintf(gg, sizeof gg, "%s/%s.gguf", tmp, f.name);
    const char *wgt = getenv("WGT_BIN") ? getenv("WGT_BIN") : "build/wgt";
    snprintf(cmd, sizeof cmd, "'%s' convert '%s' '%s' --type f32 --force >/dev/null 2>&1", wgt, dir, gg);
    int conv = system(cmd) == 0;
    CHECK(conv == converts, "%s: convert %s", f.name, converts ? "failed" : "should refuse the window");
    if (!conv || !converts) return;
    if (wgt_model_open(ctx, gg, 64, &m) == WGT_OK) {
        CHECK(m->cfg.window == 8, "%s (GGUF): window %lld", f.name, (long long)m->cfg.window);
        MUST(wgt_model_forward(m, seq, 20, 0, &lg));
        float g[V];
        MUST(wgt_tensor_to_host(lg, g, sizeof g));
        wgt_tensor_free(lg);
        double d = 0;
        for (int i = 0; i < V; i++) d = fmax(d, fabs(g[i] - full[i]));
        CHECK(d < 2e-3, "%s: GGUF vs directory: %g", f.name, d);
        wgt_model_free(m);
    } else
        CHECK(0, "%s: load the GGUF: %s", f.name, wgt_errmsg());
}

/* qwen2's max_window_layers: the layers below it attend globally (transformers' layer_types). */
static void qwen2_layers_check(wgt_context *ctx, const char *tmp)
{
    static const family_case f = {.name = "qwen2_window_layers",
        .config = "{\"architectures\": [\"Qwen2ForCausalLM\"], \"model_type\": \"qwen2\", \"hidden_size\": 64, "
        "\"intermediate_size\": 128, \"num_hidden_layers\": 3, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
        "\"max_position_embeddings\": 256, \"rms_norm_eps\": 1e-06, \"use_sliding_window\": true, "
        "\"sliding_window\": 8, \"max_window_layers\": 2, \"rope_parameters\": {\"rope_theta\": 10000.0, "
        "\"rope_type\": \"default\"}, \"tie_word_embeddings\": true, \"vocab_size\": 320, \"eos_token_id\": 2}\n",
        .layers = 3, .heads = 4, .kv_heads = 2, .head_dim = 16, .ffn = 128, .tied = 1, .norm_center = 1.0f, .bos = -1,
        .qkv_bias = 1};
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", tmp, f.name);
    CHECK(write_checkpoint(&f, dir, 13), "%s: writing the checkpoint", f.name);
    wgt_model *m;
    MUST(wgt_model_open(ctx, dir, 64, &m));
    CHECK(m->cfg.window == 8 && !mdl_layer_slides(&m->cfg, 0) && !mdl_layer_slides(&m->cfg, 1) &&
              mdl_layer_slides(&m->cfg, 2), "%s: layers 0, 1 global and 2 sliding expected", f.name);
    wgt_model_free(m);
}

/* A transformers fixture's three cases (tests/fixtures/hf/ARCH/fixture.json) into r: 1 on success. */
static int fixture_reference(const char *root, const char *arch, reference *r)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/tests/fixtures/hf/%s/fixture.json", root, arch);
    cJSON *fx = test_fixture_json(path);
    CHECK(fx != NULL, "%s: fixture %s is missing or not JSON", arch, path);
    if (!fx) return 0;
    memset(r, 0, sizeof *r);
    int nc = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(fx, "cases"))
    {
        if (nc == 3) break;
        const cJSON *e;
        r->np[nc] = test_ids_of(cJSON_GetObjectItem(c, "prompt_ids"), r->prompt[nc], 16);
        int k = test_ids_of(cJSON_GetObjectItem(c, "greedy_ids"), r->ids[nc], N_NEW);
        CHECK(k == N_NEW, "%s: case %d has %d greedy ids, not %d", arch, nc, k, N_NEW);
        k = 0;
        cJSON_ArrayForEach(e, cJSON_GetObjectItem(c, "first_step_logits")) if (k < V) r->first[nc][k++] = (float)e->valuedouble;
        CHECK(k == V, "%s: case %d has %d logits, not %d", arch, nc, k, V);
        nc++;
    }
    cJSON_Delete(fx);
    CHECK(nc == 3, "%s: %d cases, not 3", arch, nc);
    return nc == 3;
}

/* llama.cpp runs gguf greedily on the fixture's prompts: transformers' ids, and first-step logits
 * within atol. */
static void llama_vs_transformers(const char *label, const char *gguf, const reference *r, double atol)
{
    void *model = lc.load(gguf, lc.model_params());
    CHECK(model != NULL, "%s: llama.cpp does not load %s (WGT_LLAMA_LOG=1 shows why)", label, gguf);
    if (!model) return;
    printf("%s\n", label);
    fflush(stdout);
    for (int i = 0; i < 3; i++) {
        int32_t ids[N_NEW];
        float first[V];
        double mg;
        int ok = llama_greedy(model, r->prompt[i], r->np[i], ids, first, &mg);
        CHECK(ok, "%s case %d: llama.cpp's decode failed", label, i);
        if (!ok) continue;
        double worst = 0;
        for (int j = 0; j < V; j++) worst = fmax(worst, fabs(first[j] - r->first[i][j]));
        CHECK(worst <= atol, "%s case %d: llama.cpp's first-step logits differ from transformers' by %g (tolerance %g)",
              label, i, worst, atol);
        int same = !memcmp(ids, r->ids[i], sizeof ids);
        CHECK(same, "%s case %d: llama.cpp's greedy ids differ from transformers'", label, i);
        for (int k = 0; !same && k < N_NEW; k++)
            if (ids[k] != r->ids[i][k]) {
                fprintf(stderr, "  first difference at token %d: llama.cpp %d, transformers %d\n", k, ids[k], r->ids[i][k]);
                break;
            }
        printf("  case %d: |logits - transformers'| <= %.3g, ids %s\n", i, worst, same ? "equal" : "differ");
    }
    lc.model_free(model);
}

/* The mixtures of experts (mixtral, qwen2_moe, qwen3_moe) from their transformers fixtures
 * (tests/fixtures/hf): wgt's f32 GGUF conversion, run by llama.cpp, must generate transformers'
 * greedy ids with its first-step logits (so llama.cpp reads the experts' names and keys as wgt
 * writes them, and both compute what transformers does); and a q8_0 conversion runs wgt's
 * quantized expert kernels, checked against the same file dequantised. */
static void moe_fixture_check(wgt_context *ctx, const char *root, const char *wgt, const char *tmp, const char *arch)
{
    char dir[1024], g32[1100], gq[1100], label[128];
    snprintf(dir, sizeof dir, "%s/tests/fixtures/hf/%s", root, arch);
    reference r;
    if (!fixture_reference(root, arch, &r)) return;
    snprintf(g32, sizeof g32, "%s/%s-f32.gguf", tmp, arch);
    CHECK(convert(wgt, dir, g32, "f32"), "%s: wgt convert --type f32", arch);
    snprintf(label, sizeof label, "%s (llama.cpp on wgt's f32 GGUF vs transformers)", arch);
    /* llama.cpp keeps its KV cache in f16 */
    llama_vs_transformers(label, g32, &r, 6e-2);
    snprintf(gq, sizeof gq, "%s/%s-q8_0.gguf", tmp, arch);
    CHECK(convert(wgt, dir, gq, "q8_0"), "%s: wgt convert --type q8_0", arch);
    snprintf(label, sizeof label, "%s (GGUF q8_0)", arch);
    check_quant(ctx, label, gq, &r);
}

/* llama.cpp's own files (its converter's f16 GGUF of the transformers fixtures,
 * tests/fixtures/llama_cpp/, which test_gpu_llama_cpp_gguf runs in wgt), run by llama.cpp: the
 * fixtures whose configuration llama.cpp's format carries in full must generate transformers' ids
 * there too, so the reference that wgt matches on those files is llama.cpp's reading of them as
 * well as transformers'. (f16 weights and llama.cpp's f16 KV cache: logits within 0.1, as there.) */
static void llama_cpp_files_check(const char *root, const char *only)
{
    /* not phi (its fixture's MLP of 2 x hidden: the converter declares 4 x hidden for every phi2
     * file, so llama.cpp refuses its ffn_down; phi_4x is that width), gemma2, gemma3_text,
     * starcoder2 and the windows (test_gpu_llama_cpp_gguf says why; gemma2_hd, gemma3_text_6l and
     * starcoder2_4k are their forms the file says in full) */
    static const char *const archs[] = {"llama",     "mistral",      "qwen2",     "qwen3",        "gpt2",
                                        "gemma",     "phi3",         "olmo2",     "stablelm",     "stablelm_12b",
                                        "gpt_neox",  "gpt_neox_seq", "granite",   "smollm3",      "mixtral",
                                        "qwen2_moe", "qwen3_moe",    "gemma2_hd", "gemma3_text_6l", "starcoder2_4k",
                                        "phi_4x"};
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) {
        if (only && strcmp(only, archs[i])) continue;
        reference r;
        if (!fixture_reference(root, archs[i], &r)) continue;
        char gguf[1100], label[160];
        snprintf(gguf, sizeof gguf, "%s/tests/fixtures/llama_cpp/%s-f16.gguf", root, archs[i]);
        snprintf(label, sizeof label, "%s (llama.cpp on its converter's f16 GGUF vs transformers)", archs[i]);
        llama_vs_transformers(label, gguf, &r, 1e-1);
    }
}

int main(int argc, char **argv)
{
    const char *root = getenv("WGT_ROOT") ? getenv("WGT_ROOT") : ".";
    const char *wgt = getenv("WGT_BIN") ? getenv("WGT_BIN") : "build/wgt";
    const char *only = argc > 1 ? argv[1] : NULL;
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s/wgt-families-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    mkdir(tmp, 0755);
    if (!llama_open(root)) {
        fprintf(stderr, "FAIL: llama.cpp (npm @node-llama-cpp/linux-x64, tests/io/package.json) is needed\n");
        return 1;
    }
    /* gemma: MQA, head_dim 32 != 64 / 4, tied. gemma2: query_pre_attn_scalar = head_dim (llama.cpp
     * assumes it), soft caps small enough to bite, layer 0 slides over 8 tokens. gemma3: six
     * layers (llama.cpp's pattern: five sliding, one global), q/k norms, global rope 1e6 linear x8,
     * local 2e4 (written as gemma3.rope.freq_base_swa, which llama.cpp reads). */
    static const family_case families[] = {
        {"gemma",
         "{\"architectures\": [\"GemmaForCausalLM\"], \"model_type\": \"gemma\", \"hidden_size\": 64, "
         "\"intermediate_size\": 128, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 1, "
         "\"head_dim\": 32, \"max_position_embeddings\": 256, \"rms_norm_eps\": 1e-06, \"hidden_act\": \"gelu_pytorch_tanh\", "
         "\"hidden_activation\": \"gelu_pytorch_tanh\", \"rope_parameters\": {\"rope_theta\": 10000.0, \"rope_type\": "
         "\"default\"}, \"tie_word_embeddings\": true, \"vocab_size\": 320, \"bos_token_id\": 2, \"eos_token_id\": 1, "
         "\"pad_token_id\": 0}\n",
         2, 4, 1, 32, 128, 0, 0, 1, 0.0f, 2, 1},
        {"gemma2",
         "{\"architectures\": [\"Gemma2ForCausalLM\"], \"model_type\": \"gemma2\", \"hidden_size\": 64, "
         "\"intermediate_size\": 128, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
         "\"head_dim\": 16, \"max_position_embeddings\": 256, \"rms_norm_eps\": 1e-06, \"hidden_activation\": "
         "\"gelu_pytorch_tanh\", \"query_pre_attn_scalar\": 16, \"sliding_window\": 8, \"layer_types\": "
         "[\"sliding_attention\", \"full_attention\"], \"attn_logit_softcapping\": 5.0, \"final_logit_softcapping\": 15.0, "
         "\"rope_parameters\": {\"rope_theta\": 10000.0, \"rope_type\": \"default\"}, \"tie_word_embeddings\": true, "
         "\"vocab_size\": 320, \"bos_token_id\": 2, \"eos_token_id\": 1, \"pad_token_id\": 0}\n",
         2, 4, 2, 16, 128, 1, 0, 1, 0.0f, 2, 1},
        {"gemma3_text",
         "{\"architectures\": [\"Gemma3ForCausalLM\"], \"model_type\": \"gemma3_text\", \"hidden_size\": 64, "
         "\"intermediate_size\": 128, \"num_hidden_layers\": 6, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
         "\"head_dim\": 32, \"max_position_embeddings\": 256, \"rms_norm_eps\": 1e-06, \"hidden_activation\": "
         "\"gelu_pytorch_tanh\", \"query_pre_attn_scalar\": 32, \"sliding_window\": 8, \"layer_types\": "
         "[\"sliding_attention\", \"sliding_attention\", \"sliding_attention\", \"sliding_attention\", "
         "\"sliding_attention\", \"full_attention\"], \"final_logit_softcapping\": null, \"attn_logit_softcapping\": null, "
         "\"rope_parameters\": {\"full_attention\": {\"rope_type\": \"linear\", \"factor\": 8.0, \"rope_theta\": 1000000.0}, "
         "\"sliding_attention\": {\"rope_type\": \"default\", \"rope_theta\": 20000.0}}, \"tie_word_embeddings\": true, "
         "\"vocab_size\": 320, \"bos_token_id\": 2, \"eos_token_id\": 1, \"pad_token_id\": 0}\n",
         6, 4, 2, 32, 128, 1, 1, 1, 0.0f, 2, 1},
        /* phi3: fused projections, untied, GQA 4/2; no window (llama.cpp runs Phi-3 without one) */
        {"phi3",
         "{\"architectures\": [\"Phi3ForCausalLM\"], \"model_type\": \"phi3\", \"hidden_size\": 64, "
         "\"intermediate_size\": 128, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
         "\"max_position_embeddings\": 256, \"original_max_position_embeddings\": 256, \"rms_norm_eps\": 1e-05, "
         "\"hidden_act\": \"silu\", \"rope_parameters\": {\"rope_theta\": 10000.0, \"rope_type\": \"default\"}, "
         "\"sliding_window\": null, \"tie_word_embeddings\": false, \"vocab_size\": 320, \"bos_token_id\": 1, "
         "\"eos_token_id\": 2, \"pad_token_id\": 319}\n",
         2, 4, 2, 16, 128, 0, 0, 0, 1.0f, 1, 1, 1},
        /* phi (phi-2): partial rotary 0.5, parallel attention and MLP, LayerNorm, biases, lm_head bias */
        {"phi",
         "{\"architectures\": [\"PhiForCausalLM\"], \"model_type\": \"phi\", \"hidden_size\": 64, "
         "\"intermediate_size\": 128, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 4, "
         "\"max_position_embeddings\": 256, \"partial_rotary_factor\": 0.5, \"hidden_act\": \"gelu_new\", "
         "\"layer_norm_eps\": 1e-05, \"rope_parameters\": {\"rope_theta\": 10000.0, \"rope_type\": \"default\"}, "
         "\"qk_layernorm\": false, \"tie_word_embeddings\": false, \"vocab_size\": 320, \"bos_token_id\": 319, "
         "\"eos_token_id\": 319}\n",
         2, 4, 4, 16, 128, 0, 0, 0, 1.0f, -1, 1, 0, 1},
        /* olmo2: post-norms only, q/k RMS norms over all heads, untied */
        {"olmo2",
         "{\"architectures\": [\"Olmo2ForCausalLM\"], \"model_type\": \"olmo2\", \"hidden_size\": 64, "
         "\"intermediate_size\": 128, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 4, "
         "\"max_position_embeddings\": 256, \"rms_norm_eps\": 1e-06, \"hidden_act\": \"silu\", \"attention_bias\": false, "
         "\"rope_parameters\": {\"rope_theta\": 10000.0, \"rope_type\": \"default\"}, \"tie_word_embeddings\": false, "
         "\"vocab_size\": 320, \"pad_token_id\": 319, \"eos_token_id\": 318}\n",
         2, 4, 4, 16, 128, 1, 1, 0, 1.0f, -1, 1, 0, 0, 1},
        /* gpt_neox: q/k/v interleaved per head, partial rotary 0.25, parallel residual, exact GELU */
        {"gpt_neox",
         "{\"architectures\": [\"GPTNeoXForCausalLM\"], \"model_type\": \"gpt_neox\", \"hidden_size\": 64, "
         "\"intermediate_size\": 128, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
         "\"max_position_embeddings\": 256, \"rotary_pct\": 0.25, \"partial_rotary_factor\": 0.25, "
         "\"rope_parameters\": {\"rope_theta\": 10000.0, \"rope_type\": \"default\"}, \"hidden_act\": \"gelu\", "
         "\"layer_norm_eps\": 1e-05, \"use_parallel_residual\": true, \"tie_word_embeddings\": false, "
         "\"vocab_size\": 320, \"bos_token_id\": 319, \"eos_token_id\": 319}\n",
         2, 4, 4, 16, 128, 0, 0, 0, 1.0f, -1, 1, 0, 0, 0, 1},
        /* gpt_neox with use_parallel_residual false: x + attn(ln1(x)), then + mlp(ln2(.)) */
        {"gpt_neox_seq",
         "{\"architectures\": [\"GPTNeoXForCausalLM\"], \"model_type\": \"gpt_neox\", \"hidden_size\": 64, "
         "\"intermediate_size\": 128, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
         "\"max_position_embeddings\": 256, \"rotary_pct\": 0.25, \"partial_rotary_factor\": 0.25, "
         "\"rope_parameters\": {\"rope_theta\": 10000.0, \"rope_type\": \"default\"}, \"hidden_act\": \"gelu\", "
         "\"layer_norm_eps\": 1e-05, \"use_parallel_residual\": false, \"tie_word_embeddings\": false, "
         "\"vocab_size\": 320, \"bos_token_id\": 319, \"eos_token_id\": 319}\n",
         2, 4, 4, 16, 128, 0, 0, 0, 1.0f, -1, 1, 0, 0, 0, 1},
        /* stablelm (StableLM 2 1.6B's form): LayerNorms with biases, q/k/v biases, RoPE on a quarter
         * of each head, GQA 4/2 */
        {.name = "stablelm",
         .config = "{\"architectures\": [\"StableLmForCausalLM\"], \"model_type\": \"stablelm\", \"hidden_size\": 64, "
         "\"intermediate_size\": 128, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
         "\"max_position_embeddings\": 256, \"partial_rotary_factor\": 0.25, \"hidden_act\": \"silu\", "
         "\"layer_norm_eps\": 1e-05, \"use_qkv_bias\": true, \"qk_layernorm\": false, \"use_parallel_residual\": false, "
         "\"rope_parameters\": {\"rope_theta\": 10000.0, \"rope_type\": \"default\"}, \"tie_word_embeddings\": false, "
         "\"vocab_size\": 320, \"bos_token_id\": 319, \"eos_token_id\": 319}\n",
         .layers = 2, .heads = 4, .kv_heads = 2, .head_dim = 16, .ffn = 128, .norm_center = 1.0f, .bos = -1,
         .llama_oracle = 1, .ln = 1, .qkv_bias = 1},
        /* stablelm as StableLM 2 12B: per-head q/k LayerNorms, attention and MLP in parallel from one norm */
        {.name = "stablelm_12b",
         .config = "{\"architectures\": [\"StableLmForCausalLM\"], \"model_type\": \"stablelm\", \"hidden_size\": 64, "
         "\"intermediate_size\": 128, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
         "\"max_position_embeddings\": 256, \"partial_rotary_factor\": 0.25, \"hidden_act\": \"silu\", "
         "\"layer_norm_eps\": 1e-05, \"use_qkv_bias\": false, \"qk_layernorm\": true, \"use_parallel_residual\": true, "
         "\"rope_parameters\": {\"rope_theta\": 10000.0, \"rope_type\": \"default\"}, \"tie_word_embeddings\": false, "
         "\"vocab_size\": 320, \"bos_token_id\": 319, \"eos_token_id\": 319}\n",
         .layers = 2, .heads = 4, .kv_heads = 2, .head_dim = 16, .ffn = 128, .norm_center = 1.0f, .bos = -1,
         .llama_oracle = 1, .ln = 1, .qk_ln = 1, .no_ffn_norm = 1},
        /* starcoder2: LayerNorms and every linear layer with biases, GELU-tanh c_fc/c_proj MLP, tied;
         * its window (4096) is wider than the test's contexts */
        {.name = "starcoder2",
         .config = "{\"architectures\": [\"Starcoder2ForCausalLM\"], \"model_type\": \"starcoder2\", \"hidden_size\": 64, "
         "\"intermediate_size\": 128, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
         "\"max_position_embeddings\": 256, \"hidden_act\": \"gelu_pytorch_tanh\", \"norm_epsilon\": 1e-05, "
         "\"use_bias\": true, \"sliding_window\": 4096, \"rope_parameters\": {\"rope_theta\": 10000.0, \"rope_type\": "
         "\"default\"}, \"tie_word_embeddings\": true, \"vocab_size\": 320, \"bos_token_id\": 0, \"eos_token_id\": 0}\n",
         .layers = 2, .heads = 4, .kv_heads = 2, .head_dim = 16, .ffn = 128, .tied = 1, .norm_center = 1.0f, .bos = 0,
         .llama_oracle = 1, .ln = 1, .qkv_bias = 1, .o_bias = 1, .c_mlp = 1},
        /* granite: embedding, residual and attention multipliers, logits divided by logits_scaling, tied */
        {.name = "granite",
         .config = "{\"architectures\": [\"GraniteForCausalLM\"], \"model_type\": \"granite\", \"hidden_size\": 64, "
         "\"intermediate_size\": 128, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
         "\"max_position_embeddings\": 256, \"rms_norm_eps\": 1e-05, \"hidden_act\": \"silu\", "
         "\"embedding_multiplier\": 3.0, \"residual_multiplier\": 0.5, \"attention_multiplier\": 0.2, "
         "\"logits_scaling\": 1.5, \"rope_parameters\": {\"rope_theta\": 10000.0, \"rope_type\": \"default\"}, "
         "\"tie_word_embeddings\": true, \"vocab_size\": 320, \"bos_token_id\": 1, \"eos_token_id\": 2}\n",
         .layers = 2, .heads = 4, .kv_heads = 2, .head_dim = 16, .ffn = 128, .tied = 1, .norm_center = 1.0f, .bos = 1,
         .llama_oracle = 1},
        /* smollm3: the fourth layer runs without RoPE, tied */
        {.name = "smollm3",
         .config = "{\"architectures\": [\"SmolLM3ForCausalLM\"], \"model_type\": \"smollm3\", \"hidden_size\": 64, "
         "\"intermediate_size\": 128, \"num_hidden_layers\": 4, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
         "\"max_position_embeddings\": 256, \"rms_norm_eps\": 1e-06, \"hidden_act\": \"silu\", "
         "\"no_rope_layers\": [1, 1, 1, 0], \"no_rope_layer_interval\": 4, \"use_sliding_window\": false, "
         "\"rope_parameters\": {\"rope_theta\": 10000.0, \"rope_type\": \"default\"}, \"tie_word_embeddings\": true, "
         "\"vocab_size\": 320, \"bos_token_id\": 1, \"eos_token_id\": 2}\n",
         .layers = 4, .heads = 4, .kv_heads = 2, .head_dim = 16, .ffn = 128, .tied = 1, .norm_center = 1.0f, .bos = 1,
         .llama_oracle = 1},
    };
    wgt_context *ctx;
    MUST(wgt_context_create(NULL, &ctx));
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if (!only || !strcmp(only, families[i].name)) run_family(ctx, &families[i], wgt, tmp);
    static const family_case mistral_window = {.name = "mistral_window",
        .config = "{\"architectures\": [\"MistralForCausalLM\"], \"model_type\": \"mistral\", \"hidden_size\": 64, "
        "\"intermediate_size\": 128, \"num_hidden_layers\": 1, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
        "\"head_dim\": 16, \"max_position_embeddings\": 256, \"rms_norm_eps\": 1e-05, "
        "\"rope_parameters\": {\"rope_theta\": 10000.0, \"rope_type\": \"default\"}, \"sliding_window\": 8, "
        "\"tie_word_embeddings\": false, \"vocab_size\": 320, \"bos_token_id\": 1, \"eos_token_id\": 2}\n",
        .layers = 1, .heads = 4, .kv_heads = 2, .head_dim = 16, .ffn = 128, .norm_center = 1.0f, .bos = 1};
    static const family_case qwen2_window = {.name = "qwen2_window",
        .config = "{\"architectures\": [\"Qwen2ForCausalLM\"], \"model_type\": \"qwen2\", \"hidden_size\": 64, "
        "\"intermediate_size\": 128, \"num_hidden_layers\": 1, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
        "\"max_position_embeddings\": 256, \"rms_norm_eps\": 1e-06, \"use_sliding_window\": true, "
        "\"sliding_window\": 8, \"max_window_layers\": 0, \"rope_parameters\": {\"rope_theta\": 10000.0, "
        "\"rope_type\": \"default\"}, \"tie_word_embeddings\": false, \"vocab_size\": 320, \"eos_token_id\": 2}\n",
        .layers = 1, .heads = 4, .kv_heads = 2, .head_dim = 16, .ffn = 128, .norm_center = 1.0f, .bos = -1, .qkv_bias = 1};
    if (!only || !strcmp(only, "mistral_window")) window_check(ctx, tmp, &mistral_window, 1);
    if (!only || !strcmp(only, "qwen2_window")) {
        window_check(ctx, tmp, &qwen2_window, 0);
        qwen2_layers_check(ctx, tmp);
    }
    static const char *const moe[] = {"mixtral", "qwen2_moe", "qwen3_moe"};
    for (size_t i = 0; i < sizeof moe / sizeof moe[0]; i++)
        if (!only || !strcmp(only, moe[i])) moe_fixture_check(ctx, root, wgt, tmp, moe[i]);
    llama_cpp_files_check(root, only);
    wgt_context_free(ctx);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (!test_failures && system(cmd)) fprintf(stderr, "could not remove %s\n", tmp);
    return test_finish("test_gpu_families");
}
