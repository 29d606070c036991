/* wgt convert: a Hugging Face checkpoint (directory or .safetensors file) to a GGUF file that
 * llama.cpp loads: llama.cpp's tensor names and metadata keys, its Q/K row order, and tensors
 * quantised to the requested type. Streams: one output row at a time is built in memory.
 *
 * Conventions the model loader must undo or follow (they are llama.cpp's):
 *  - llama architecture: the rows of attn_q and attn_k (and their biases) are permuted from
 *    Hugging Face's rotate-half RoPE layout (each head: first half of the pairs, then the second
 *    half) to GGUF's interleaved layout (pairs adjacent): GGUF row h*d + 2j + s is HF row
 *    h*d + s*d/2 + j, for head h, head size d, j < d/2, s in {0, 1}. A loader that applies RoPE
 *    to interleaved pairs (as llama.cpp does for llama) uses the rows as stored; one that rotates
 *    halves must permute them back. qwen2/qwen3 are stored unpermuted (llama.cpp's NEOX RoPE).
 *  - gpt2: Hugging Face stores c_attn, c_proj and c_fc as Conv1D weights, (in, out), the
 *    transpose of nn.Linear's (out, in); they are transposed here so every matrix is stored as
 *    (out, in) with ne[0] = in. attn.bias / masked_bias buffers are dropped.
 *  - llama3 rope scaling becomes a rope_freqs.weight tensor (per-frequency factors), as
 *    llama.cpp writes it; linear/yarn scaling becomes <arch>.rope.scaling.* keys.
 *  - norms and other 1-D tensors stay f32; a matrix whose row does not fill whole blocks of the
 *    requested type falls back to f16 (with a note).
 *  - tied embeddings: no output.weight is written; the loader uses token_embd.weight.
 *  - gemma, gemma2, gemma3: RMSNorm weights are stored as 1 + w (Gemma's norms scale by 1 + w);
 *    gemma2/3 name their four norms attn_norm, post_attention_norm, ffn_norm, post_ffw_norm.
 *  - a directory without a tokenizer gets tokenizer.ggml.model "none" (llama.cpp then takes the
 *    vocabulary size from <arch>.vocab_size). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "wgt.h"

typedef enum {
    ARCH_LLAMA, ARCH_QWEN2, ARCH_QWEN3, ARCH_GPT2, ARCH_GEMMA, ARCH_GEMMA2, ARCH_GEMMA3, ARCH_PHI3, ARCH_PHI2, ARCH_OLMO2,
    ARCH_GPTNEOX, ARCH_STABLELM, ARCH_STARCODER2, ARCH_GRANITE, ARCH_SMOLLM3, ARCH_QWEN2MOE, ARCH_QWEN3MOE
} arch_id;

/* Each family as llama.cpp's converter writes it: config.json's model_type, the GGUF
 * general.architecture, and what the conversion does beyond renaming. */
static const struct family {
    const char *hf, *gguf;
    arch_id a;
    int norm_plus_one; /* RMSNorm weights w become 1 + w (Gemma's norms scale by 1 + w) */
    int post_norms;    /* post_attention_layernorm follows attention; pre_/post_feedforward_layernorm */
} families[] = {
    {"llama", "llama", ARCH_LLAMA, 0, 0},     {"mistral", "llama", ARCH_LLAMA, 0, 0},
    {"qwen2", "qwen2", ARCH_QWEN2, 0, 0},     {"qwen3", "qwen3", ARCH_QWEN3, 0, 0},
    {"gpt2", "gpt2", ARCH_GPT2, 0, 0},        {"gemma", "gemma", ARCH_GEMMA, 1, 0},
    {"gemma2", "gemma2", ARCH_GEMMA2, 1, 1},  {"gemma3_text", "gemma3", ARCH_GEMMA3, 1, 1},
    {"phi3", "phi3", ARCH_PHI3, 0, 0}, /* qkv_proj and gate_up_proj stay fused: attn_qkv, ffn_up */
    {"phi", "phi2", ARCH_PHI2, 0, 0},  /* dense, fc1, fc2, final_layernorm; LayerNorm; partial rotary */
    {"olmo2", "olmo2", ARCH_OLMO2, 0, 1}, /* post-norms only: gemma2's names */
    {"gpt_neox", "gptneox", ARCH_GPTNEOX, 0, 0}, /* query_key_value reordered from per-head q,k,v to q; k; v */
    {"stablelm", "stablelm", ARCH_STABLELM, 0, 0}, /* per-head q/k LayerNorm weights stacked: attn_q_norm [H, hd] */
    {"starcoder2", "starcoder2", ARCH_STARCODER2, 0, 0}, /* mlp.c_fc, mlp.c_proj: ffn_up, ffn_down */
    {"granite", "granite", ARCH_GRANITE, 0, 0},    /* llama's names and q/k order; four multiplier keys */
    {"smollm3", "smollm3", ARCH_SMOLLM3, 0, 0},    /* llama's names and q/k order */
    /* mixtures of experts: each expert's matrices stacked into one 3-D tensor per kind */
    {"mixtral", "llama", ARCH_LLAMA, 0, 0},        /* block_sparse_moe.experts.E.w1/w3/w2: ffn_{gate,up,down}_exps */
    {"qwen2_moe", "qwen2moe", ARCH_QWEN2MOE, 0, 0}, /* and the shared expert: ffn_*_shexp, ffn_gate_inp_shexp */
    {"qwen3_moe", "qwen3moe", ARCH_QWEN3MOE, 0, 0},
};

/* The families whose q/k rows llama.cpp stores for interleaved pairs (LLAMA_ROPE_TYPE_NORM). */
static int permutes_qk(arch_id a) { return a == ARCH_LLAMA || a == ARCH_GRANITE || a == ARCH_SMOLLM3; }

typedef struct plan {
    const wgt_st_tensor *src;
    char name[64];
    wgt_ftype type;
    int64_t ne[3];  /* output, GGML order: ne[0] = row length */
    int64_t rl, nr; /* rows as produced: length and count (a permuted bias: nr rows of 1) */
    uint32_t n_dims;
    int transpose;  /* gpt2 Conv1D */
    int permute;    /* llama q/k rows: heads to permute */
    int plus_one;   /* gemma norms: 1 + w */
    int neox_heads; /* gpt_neox query_key_value: heads whose (q, k, v) row groups become q; k; v */
    const float *generated; /* rope_freqs: values computed here, not read */
    const wgt_st_tensor **rows_of; /* stablelm q/k norms: row r is the 1-D tensor rows_of[r] */
    const wgt_st_tensor **experts; /* experts' matrices: row r is row r % exp_rows of experts[r / exp_rows] */
    int64_t exp_rows;
} plan;

static int usage(FILE *f)
{
    fprintf(f, "usage: wgt convert <hf-dir | model.safetensors> <out.gguf> [--type T] [--force]\n\n"
               "T: f32, f16 (default), bf16, q8_0, q4_0, q4_k, q6_k. Architectures: llama, mistral, qwen2,\n"
               "qwen3, gpt2, gemma, gemma2, gemma3_text, phi3, phi, olmo2, gpt_neox, stablelm, starcoder2,\n"
               "granite, smollm3, mixtral, qwen2_moe, qwen3_moe (from config.json). Norms, 1-D tensors\n"
               "and MoE routers stay f32. The tokenizer (tokenizer.model,\n"
               "tokenizer.json or vocab.json + merges.txt) is added when the directory holds one.\n"
               "Rows are quantised on WGT_THREADS threads (default: the processors online).\n\n"
               "The output is written to a temporary file next to it and renamed into place when complete:\n"
               "an interrupted conversion (Ctrl-C, SIGTERM, a crash) leaves any previous file intact. The\n"
               "output may not be one of the input directory's files, nor a directory or device node; an\n"
               "existing file is replaced only with --force.\n");
    return f == stdout ? 0 : 2;
}

/* llama.cpp's name for a Hugging Face tensor name, or 0 to drop it. */
static int map_name(const struct family *f, const char *hf, char *out, size_t cap, int *transpose)
{
    arch_id a = f->a;
    *transpose = 0;
    const char *s = hf;
    if (!strncmp(s, "model.", 6)) s += 6;
    else if (!strncmp(s, "gpt_neox.", 9)) s += 9;
    else if (!strncmp(s, "transformer.", 12)) s += 12;
    int layer, n = 0;
    char rest[256];
    if (sscanf(s, a == ARCH_GPT2 ? "h.%d.%255s%n" : "layers.%d.%255s%n", &layer, rest, &n) == 2 && !s[n]) {
        static const char *const llama[][2] = {
            {"input_layernorm", "attn_norm"}, {"self_attn.q_proj", "attn_q"}, {"self_attn.k_proj", "attn_k"},
            {"self_attn.v_proj", "attn_v"}, {"self_attn.o_proj", "attn_output"}, {"self_attn.q_norm", "attn_q_norm"},
            {"self_attn.k_norm", "attn_k_norm"}, {"post_attention_layernorm", "ffn_norm"}, {"mlp.gate_proj", "ffn_gate"},
            {"mlp.up_proj", "ffn_up"}, {"mlp.down_proj", "ffn_down"}, {"self_attn.qkv_proj", "attn_qkv"},
            {"mlp.gate_up_proj", "ffn_up"}, {"self_attn.dense", "attn_output"}, {"mlp.fc1", "ffn_up"},
            {"mlp.fc2", "ffn_down"}, {"attention.query_key_value", "attn_qkv"}, {"attention.dense", "attn_output"},
            {"mlp.dense_h_to_4h", "ffn_up"}, {"mlp.dense_4h_to_h", "ffn_down"}, {"mlp.c_fc", "ffn_up"},
            {"mlp.c_proj", "ffn_down"}, {"self_attn.q_layernorm.norms.0", "attn_q_norm"},
            {"self_attn.k_layernorm.norms.0", "attn_k_norm"}, {"block_sparse_moe.gate", "ffn_gate_inp"},
            {"mlp.gate", "ffn_gate_inp"}, {"mlp.shared_expert.gate_proj", "ffn_gate_shexp"},
            {"mlp.shared_expert.up_proj", "ffn_up_shexp"}, {"mlp.shared_expert.down_proj", "ffn_down_shexp"},
            {"mlp.shared_expert_gate", "ffn_gate_inp_shexp"}};
        static const char *const gpt2[][2] = {
            {"ln_1", "attn_norm"}, {"attn.c_attn", "attn_qkv"}, {"attn.c_proj", "attn_output"},
            {"ln_2", "ffn_norm"}, {"mlp.c_fc", "ffn_up"}, {"mlp.c_proj", "ffn_down"}};
        static const char *const gemma2[][2] = {
            {"input_layernorm", "attn_norm"}, {"self_attn.q_proj", "attn_q"}, {"self_attn.k_proj", "attn_k"},
            {"self_attn.v_proj", "attn_v"}, {"self_attn.o_proj", "attn_output"}, {"self_attn.q_norm", "attn_q_norm"},
            {"self_attn.k_norm", "attn_k_norm"}, {"post_attention_layernorm", "post_attention_norm"},
            {"pre_feedforward_layernorm", "ffn_norm"}, {"post_feedforward_layernorm", "post_ffw_norm"},
            {"mlp.gate_proj", "ffn_gate"}, {"mlp.up_proj", "ffn_up"}, {"mlp.down_proj", "ffn_down"}};
        const char *const(*table)[2] = a == ARCH_GPT2 ? gpt2 : f->post_norms ? gemma2 : llama;
        size_t nt = a == ARCH_GPT2 ? sizeof gpt2 / sizeof gpt2[0]
                    : f->post_norms ? sizeof gemma2 / sizeof gemma2[0] : sizeof llama / sizeof llama[0];
        char *dot = strrchr(rest, '.');
        if (!dot || (strcmp(dot, ".weight") && strcmp(dot, ".bias"))) return 0;
        *dot = 0;
        for (size_t i = 0; i < nt; i++)
            if (!strcmp(rest, table[i][0])) {
                snprintf(out, cap, "blk.%d.%s.%s", layer, table[i][1], dot + 1);
                *transpose = a == ARCH_GPT2 && !strcmp(dot + 1, "weight") && strstr(table[i][0], ".c_");
                return 1;
            }
        return 0; /* rotary_emb.inv_freq, attn.bias (GPT-2's causal mask), ... */
    }
    static const char *const top[][2] = {
        {"embed_tokens.weight", "token_embd.weight"}, {"norm.weight", "output_norm.weight"},
        {"lm_head.weight", "output.weight"}, {"wte.weight", "token_embd.weight"},
        {"wpe.weight", "position_embd.weight"}, {"ln_f.weight", "output_norm.weight"}, {"ln_f.bias", "output_norm.bias"},
        {"final_layernorm.weight", "output_norm.weight"}, {"final_layernorm.bias", "output_norm.bias"},
        {"lm_head.bias", "output.bias"}, {"embed_in.weight", "token_embd.weight"},
        {"final_layer_norm.weight", "output_norm.weight"}, {"final_layer_norm.bias", "output_norm.bias"},
        {"embed_out.weight", "output.weight"}, {"norm.bias", "output_norm.bias"}};
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++)
        if (!strcmp(s, top[i][0]) || !strcmp(hf, top[i][0])) {
            snprintf(out, cap, "%s", top[i][1]);
            return 1;
        }
    return 0;
}

/* Output row r of p, as f32 (length p->ne[0]). */
static int get_row(const plan *p, int64_t r, float *row, int64_t d)
{
    const wgt_st_tensor *t = p->src;
    uint64_t esize = wgt_ftype_block_bytes(t->type);
    const uint8_t *base = t->data;
    if (p->generated) {
        memcpy(row, p->generated, (size_t)p->rl * sizeof *row);
        return 0;
    }
    if (p->rows_of) return wgt_dequantize(p->rows_of[r]->type, p->rows_of[r]->data, row, p->rl) ? -1 : 0;
    if (p->experts) {
        const wgt_st_tensor *e = p->experts[r / p->exp_rows];
        return wgt_dequantize(e->type, (const uint8_t *)e->data + (uint64_t)(r % p->exp_rows) * (uint64_t)p->rl * esize,
                              row, p->rl) ? -1 : 0;
    }
    if (p->transpose) { /* source (in, out) row-major: output row r is source column r */
        int64_t in = p->rl, out = p->nr;
        for (int64_t i = 0; i < in; i++)
            if (wgt_dequantize(t->type, base + ((uint64_t)i * (uint64_t)out + (uint64_t)r) * esize, row + i, 1)) return -1;
        return 0;
    }
    int64_t src_row = r;
    if (p->neox_heads) { /* output row (part, head, j) <- source row (head, part, j) */
        int64_t per = p->neox_heads * d, part = r / per, h = r % per / d, j = r % d;
        src_row = (h * 3 + part) * d + j;
    }
    if (p->permute) { /* GGUF row h*d + 2j + s <- HF row h*d + s*d/2 + j */
        int64_t h = r / d, k = r % d, j = k / 2, s = k % 2;
        src_row = h * d + s * (d / 2) + j;
    }
    if (wgt_dequantize(t->type, base + (uint64_t)src_row * (uint64_t)p->rl * esize, row, p->rl)) return -1;
    for (int64_t i = 0; p->plus_one && i < p->rl; i++) row[i] += 1.0f;
    return 0;
}

/* Rows [r0, r1) of a tensor, converted and quantised into out (row after row): the slow part
 * (K-quant scale search), so chunks of rows are shared among threads. */
typedef struct job {
    const plan *p;
    int64_t r0, r1, head_dim;
    uint64_t row_bytes;
    uint8_t *out;
    float *row; /* (max row length) scratch */
    int failed;
} job;

static void *run_job(void *arg)
{
    job *j = arg;
    for (int64_t r = j->r0; r < j->r1 && !j->failed; r++)
        if (get_row(j->p, r, j->row, j->head_dim) ||
            wgt_quantize(j->p->type, j->row, j->out + (uint64_t)(r - j->r0) * j->row_bytes, j->p->rl))
            j->failed = 1;
    return NULL;
}

static void progress(uint64_t done, uint64_t total, int tty)
{
    if (!tty || !total || done > total) return;
    int w = 40, k = (int)((double)done / (double)total * w);
    fprintf(stderr, "\r[%.*s%*s] %5.1f%%  %llu / %llu MB", k, "========================================", w - k, "",
            100.0 * (double)done / (double)total, (unsigned long long)(done >> 20), (unsigned long long)(total >> 20));
    if (done == total) fputc('\n', stderr);
}

static int fail(const char *what)
{
    fprintf(stderr, "wgt convert: %s%s%s\n", what, *wgt_errmsg() ? ": " : "", wgt_errmsg());
    return 1;
}

#define TRY(x)                                \
    do {                                      \
        if ((x) != WGT_OK) goto failed;       \
    } while (0)

int cmd_convert(int argc, char **argv)
{
    const char *in = NULL, *out = NULL, *type_name = "f16";
    int force = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return usage(stdout);
        if (!strcmp(argv[i], "--type") && i + 1 < argc) type_name = argv[++i];
        else if (!strcmp(argv[i], "--force")) force = 1;
        else if (argv[i][0] == '-') return usage(stderr);
        else if (!in) in = argv[i];
        else if (!out) out = argv[i];
        else return usage(stderr);
    }
    if (!in || !out) return usage(stderr);
    wgt_ftype want;
    static const char *const allowed[] = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_k", "q6_k"};
    int ok = 0;
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) ok |= !strcasecmp(type_name, allowed[i]);
    if (!ok || wgt_ftype_from_name(type_name, &want)) {
        fprintf(stderr, "wgt convert: --type %s: use f32, f16, bf16, q8_0, q4_0, q4_k or q6_k\n", type_name);
        return 2;
    }

    /* the directory holding config.json: the input, or the file's directory */
    char dir[4096];
    struct stat sb;
    if (stat(in, &sb) != 0) {
        fprintf(stderr, "wgt convert: %s: no such file or directory\n", in);
        return 1;
    }
    if (S_ISDIR(sb.st_mode)) snprintf(dir, sizeof dir, "%s", in);
    else {
        const char *sl = strrchr(in, '/');
        snprintf(dir, sizeof dir, "%.*s", sl ? (int)(sl - in) : 1, sl ? in : ".");
    }
    wgt_hf_config cfg;
    if (wgt_hf_config_load(dir, &cfg)) return fail("config.json (needed for the architecture and its sizes)");
    if (wgt_model_check_hf_config(&cfg, dir)) return fail("config.json"); /* what the loader would refuse */
    const struct family *fam = NULL;
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++)
        if (!strcmp(cfg.model_type, families[i].hf)) fam = &families[i];
    if (!fam) {
        fprintf(stderr, "wgt convert: %s/config.json: model_type \"%s\" is not supported (llama, mistral, qwen2, qwen3, "
                "gpt2, gemma, gemma2, gemma3_text, phi3, phi, olmo2, gpt_neox, stablelm, starcoder2, granite, smollm3, mixtral, "
                "qwen2_moe, qwen3_moe)\n",
                dir, cfg.model_type);
        return 1;
    }
    /* what llama.cpp's reader cannot express is refused rather than written to run differently */
    if (fam->a == ARCH_QWEN2 && cfg.use_sliding_window == 1 && cfg.sliding_window > 0) {
        fprintf(stderr, "wgt convert: %s/config.json: use_sliding_window: llama.cpp's qwen2 has no sliding window, so a "
                "GGUF file would run without it; run the directory itself\n", dir);
        return 1;
    }
    for (int i = 0; fam->a == ARCH_SMOLLM3 && i < cfg.n_no_rope_layers; i++)
        if (cfg.rope_layers[i] != ((i + 1) % 4 != 0)) {
            fprintf(stderr, "wgt convert: %s/config.json: no_rope_layers is not every fourth layer, the period llama.cpp's "
                    "smollm3 assumes; run the directory itself\n", dir);
            return 1;
        }
    arch_id a = fam->a;
    const char *arch = fam->gguf;
    wgt_safetensors *st;
    if (wgt_safetensors_open(in, &st)) return fail("reading the checkpoint");

    int64_t n_src = wgt_safetensors_count(st), n_plan = 0;
    plan *plans = calloc((size_t)n_src + 2, sizeof *plans);
    float *rope_freqs = NULL;
    wgt_gguf_writer *w = NULL;
    float *row = NULL;
    uint8_t *qrow = NULL;
    int rc = 1, notes = 0, tty = isatty(2);
    if (!plans) goto failed;
    int64_t head_dim = cfg.head_dim ? cfg.head_dim : 1, max_row = 1;
    uint64_t total = 0, done = 0;
    for (int64_t i = 0; i < n_src; i++) {
        const wgt_st_tensor *t = wgt_safetensors_at(st, i);
        plan *p = &plans[n_plan];
        const char *ex = strstr(t->name, ".experts.");
        int layer = -1, ei = -1, en = 0;
        char kind[32] = "";
        if (ex && sscanf(t->name, "%*[^0-9]%d.%*[a-z_].experts.%d.%31[a-z0-9_].weight%n", &layer, &ei, kind, &en) == 3 &&
            !t->name[en] && cfg.n_experts > 0) {
            /* one expert's matrix: expert 0's plans the stacked tensor [E, rows, cols] of its kind */
            if (ei != 0) continue;
            static const char *const kinds[][2] = {{"w1", "ffn_gate_exps"}, {"w3", "ffn_up_exps"}, {"w2", "ffn_down_exps"},
                                                   {"gate_proj", "ffn_gate_exps"}, {"up_proj", "ffn_up_exps"},
                                                   {"down_proj", "ffn_down_exps"}};
            const char *gname = NULL;
            for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
                if (!strcmp(kind, kinds[k][0])) gname = kinds[k][1];
            if (!gname || t->n_dims != 2 || !wgt_ftype_can_dequantize(t->type)) {
                fprintf(stderr, "wgt convert: '%s': not an expert matrix wgt knows\n", t->name);
                goto failed;
            }
            if (!(p->experts = calloc((size_t)cfg.n_experts, sizeof *p->experts))) goto failed;
            for (int64_t e = 0; e < cfg.n_experts; e++) {
                char nm[512];
                snprintf(nm, sizeof nm, "%.*s.experts.%lld.%s.weight", (int)(ex - t->name), t->name, (long long)e, kind);
                const wgt_st_tensor *et = wgt_safetensors_find(st, nm);
                if (!et || et->n_dims != 2 || et->shape[0] != t->shape[0] || et->shape[1] != t->shape[1] ||
                    !wgt_ftype_can_dequantize(et->type)) {
                    fprintf(stderr, "wgt convert: '%s' is missing or not like '%s'\n", nm, t->name);
                    free(p->experts);
                    p->experts = NULL;
                    goto failed;
                }
                p->experts[e] = et;
            }
            snprintf(p->name, sizeof p->name, "blk.%d.%s.weight", layer, gname);
            p->src = t;
            p->n_dims = 3;
            p->ne[0] = t->shape[1], p->ne[1] = t->shape[0], p->ne[2] = cfg.n_experts;
            p->exp_rows = t->shape[0];
            p->rl = p->ne[0];
            p->nr = p->ne[1] * p->ne[2];
            p->type = want;
            if (p->ne[0] % wgt_ftype_block_elems(want)) {
                p->type = WGT_FTYPE_F16;
                fprintf(stderr, "wgt convert: note: '%s' has rows of %lld, not whole %s blocks of %u: stored as f16\n",
                        p->name, (long long)p->ne[0], wgt_ftype_name(want), wgt_ftype_block_elems(want));
                notes++;
            }
            if (p->ne[0] > max_row) max_row = p->ne[0];
            total += t->bytes * (uint64_t)cfg.n_experts;
            n_plan++;
            continue;
        }
        if (!map_name(fam, t->name, p->name, sizeof p->name, &p->transpose)) {
            if (strstr(t->name, "_layernorm.norms.")) continue; /* stacked with head 0's (below) */
            fprintf(stderr, "wgt convert: note: dropping '%s' (not used by the %s architecture)\n", t->name, arch);
            continue;
        }
        if (!wgt_ftype_can_dequantize(t->type) || t->n_dims < 1 || t->n_dims > 2) {
            fprintf(stderr, "wgt convert: '%s': %u dims of %s cannot be converted\n", t->name, t->n_dims, wgt_ftype_name(t->type));
            goto failed;
        }
        p->src = t;
        p->plus_one = fam->norm_plus_one && t->n_dims == 1 && strstr(p->name, "norm.weight");
        p->n_dims = t->n_dims;
        p->ne[0] = t->shape[t->n_dims - 1];
        p->ne[1] = t->n_dims == 2 ? t->shape[0] : 1;
        if (p->transpose) {
            int64_t x = p->ne[0];
            p->ne[0] = p->ne[1];
            p->ne[1] = x;
        }
        if (strstr(t->name, "_layernorm.norms.0.") && t->n_dims == 1) { /* stablelm: one weight a head, stacked */
            int64_t heads = strstr(t->name, "k_layernorm") && cfg.n_kv_heads ? cfg.n_kv_heads : cfg.n_heads;
            const char *at = strstr(t->name, "norms.0.") + 6;
            if (!(p->rows_of = calloc((size_t)heads, sizeof *p->rows_of))) goto failed;
            for (int64_t h = 0; h < heads; h++) {
                char nm[512];
                snprintf(nm, sizeof nm, "%.*s%lld.weight", (int)(at - t->name), t->name, (long long)h);
                const wgt_st_tensor *ht = wgt_safetensors_find(st, nm);
                if (!ht || ht->n_dims != 1 || ht->shape[0] != t->shape[0] || !wgt_ftype_can_dequantize(ht->type)) {
                    fprintf(stderr, "wgt convert: '%s' is missing or not like '%s'\n", nm, t->name);
                    free(p->rows_of);
                    goto failed;
                }
                p->rows_of[h] = ht;
            }
            p->n_dims = 2;
            p->ne[1] = heads;
        }
        if (permutes_qk(a) && (strstr(p->name, ".attn_q.") || strstr(p->name, ".attn_k."))) {
            p->permute = 1;
            int64_t rows = t->n_dims == 2 ? p->ne[1] : p->ne[0];
            if (head_dim % 2 || rows % head_dim) {
                fprintf(stderr, "wgt convert: '%s': %lld rows are not whole heads of %lld\n", t->name, (long long)rows, (long long)head_dim);
                goto failed;
            }
        }
        if (a == ARCH_GPTNEOX && strstr(p->name, ".attn_qkv.")) {
            p->neox_heads = (int)cfg.n_heads;
            int64_t rows = t->n_dims == 2 ? p->ne[1] : p->ne[0];
            if (rows != 3 * cfg.n_heads * head_dim) {
                fprintf(stderr, "wgt convert: '%s': %lld rows are not 3 x %lld heads of %lld\n", t->name, (long long)rows,
                        (long long)cfg.n_heads, (long long)head_dim);
                goto failed;
            }
        }
        p->rl = p->ne[0];
        p->nr = p->ne[1];
        if ((p->permute || p->neox_heads) && t->n_dims == 1) { /* a bias: its elements are the rows to move */
            p->rl = 1;
            p->nr = p->ne[0];
        }
        /* 1-D tensors and norms stay f32; matrices take the requested type when rows fit its blocks */
        p->type = WGT_FTYPE_F32;
        if (t->n_dims == 2 && !strstr(p->name, "ffn_gate_inp")) { /* routers stay f32, as llama.cpp's converter keeps them */
            p->type = want;
            if (p->ne[0] % wgt_ftype_block_elems(want)) {
                p->type = WGT_FTYPE_F16;
                fprintf(stderr, "wgt convert: note: '%s' has rows of %lld, not whole %s blocks of %u: stored as f16\n",
                        p->name, (long long)p->ne[0], wgt_ftype_name(want), wgt_ftype_block_elems(want));
                notes++;
            }
        }
        if (p->ne[0] > max_row) max_row = p->ne[0];
        total += t->bytes;
        n_plan++;
    }
    /* llama3 rope scaling: llama.cpp's per-frequency factor tensor */
    if (a == ARCH_LLAMA && !strcmp(cfg.rope_scaling_type, "llama3") && cfg.rope_factor > 0 && head_dim >= 2) {
        int64_t n = head_dim / 2;
        rope_freqs = malloc((size_t)n * sizeof *rope_freqs);
        double lo = cfg.rope_low_freq_factor ? cfg.rope_low_freq_factor : 1, hi = cfg.rope_high_freq_factor ? cfg.rope_high_freq_factor : 4;
        double old = cfg.rope_original_max_positions ? (double)cfg.rope_original_max_positions : 8192;
        double lo_wl = old / lo, hi_wl = old / hi;
        for (int64_t i = 0; rope_freqs && i < n; i++) {
            double freq = 1.0 / pow(cfg.rope_theta, 2.0 * (double)i / (double)head_dim), wl = 2 * M_PI / freq, f;
            if (wl < hi_wl) f = 1;
            else if (wl > lo_wl) f = cfg.rope_factor;
            else {
                double smooth = (old / wl - lo) / (hi - lo);
                f = 1 / ((1 - smooth) / cfg.rope_factor + smooth);
            }
            rope_freqs[i] = (float)f;
        }
        plan *p = &plans[n_plan++];
        snprintf(p->name, sizeof p->name, "rope_freqs.weight");
        p->generated = rope_freqs;
        p->type = WGT_FTYPE_F32;
        p->n_dims = 1;
        p->ne[0] = n;
        p->ne[1] = 1;
        p->rl = n;
        p->nr = 1;
        static const wgt_st_tensor dummy = {.type = WGT_FTYPE_F32};
        p->src = &dummy;
    }

    /* every file of the checkpoint's directory is an input (shards, config.json, tokenizer files):
     * the output may be none of them, nor the file given as input */
    const char *inputs[] = {in};
    const wgt_output_options oo = {.replace = force, .inputs = inputs, .n_inputs = 1, .input_dir = dir};
    if (wgt_output_cleanup_on_signals()) goto failed; /* Ctrl-C removes the temporary file only */
    TRY(wgt_gguf_writer_open_ex(out, &oo, &w));
    TRY(wgt_gguf_writer_add_str(w, "general.architecture", arch));
    const char *base = strrchr(dir, '/');
    TRY(wgt_gguf_writer_add_str(w, "general.name", base && base[1] ? base + 1 : dir));
    uint32_t file_type = want == WGT_FTYPE_F32 ? 0 : want == WGT_FTYPE_F16 ? 1 : want == WGT_FTYPE_Q4_0 ? 2 : want == WGT_FTYPE_Q8_0 ? 7
                       : want == WGT_FTYPE_Q4_K ? 14 : want == WGT_FTYPE_Q6_K ? 18 : 32; /* llama_ftype: 14 = Q4_K_S, 32 = BF16 */
    TRY(wgt_gguf_writer_add_u32(w, "general.file_type", file_type));
    if (wgt_ftype_block_elems(want) > 1) TRY(wgt_gguf_writer_add_u32(w, "general.quantization_version", 2));
    char key[128];
#define KEY(suffix) (snprintf(key, sizeof key, "%s.%s", arch, suffix), key)
    TRY(wgt_gguf_writer_add_u32(w, KEY("context_length"), (uint32_t)cfg.max_positions));
    TRY(wgt_gguf_writer_add_u32(w, KEY("embedding_length"), (uint32_t)cfg.hidden_size));
    TRY(wgt_gguf_writer_add_u32(w, KEY("block_count"), (uint32_t)cfg.n_layers));
    TRY(wgt_gguf_writer_add_u32(w, KEY("feed_forward_length"), (uint32_t)cfg.intermediate_size));
    TRY(wgt_gguf_writer_add_u32(w, KEY("attention.head_count"), (uint32_t)cfg.n_heads));
    TRY(wgt_gguf_writer_add_u32(w, KEY("attention.head_count_kv"), (uint32_t)cfg.n_kv_heads));
    if (a == ARCH_GPT2) {
        TRY(wgt_gguf_writer_add_f32(w, KEY("attention.layer_norm_epsilon"), (float)cfg.norm_eps));
    } else {
        TRY(wgt_gguf_writer_add_u32(w, KEY("attention.key_length"), (uint32_t)cfg.head_dim));
        TRY(wgt_gguf_writer_add_u32(w, KEY("attention.value_length"), (uint32_t)cfg.head_dim));
        double rot = cfg.partial_rotary_factor > 0 ? cfg.partial_rotary_factor : a == ARCH_STABLELM ? 0.25 : 1;
        TRY(wgt_gguf_writer_add_u32(w, KEY("rope.dimension_count"), (uint32_t)(cfg.head_dim * rot)));
        TRY(wgt_gguf_writer_add_f32(w, KEY("rope.freq_base"), (float)cfg.rope_theta));
        TRY(wgt_gguf_writer_add_f32(w, KEY(cfg.norm_is_rms ? "attention.layer_norm_rms_epsilon" : "attention.layer_norm_epsilon"),
                                    (float)cfg.norm_eps));
        if (cfg.vocab_size) TRY(wgt_gguf_writer_add_u32(w, KEY("vocab_size"), (uint32_t)cfg.vocab_size));
        if (cfg.rope_factor > 0 && (!strcmp(cfg.rope_scaling_type, "linear") || !strcmp(cfg.rope_scaling_type, "yarn"))) {
            TRY(wgt_gguf_writer_add_str(w, KEY("rope.scaling.type"), cfg.rope_scaling_type));
            TRY(wgt_gguf_writer_add_f32(w, KEY("rope.scaling.factor"), (float)cfg.rope_factor));
            if (cfg.rope_original_max_positions)
                TRY(wgt_gguf_writer_add_u32(w, KEY("rope.scaling.original_context_length"), (uint32_t)cfg.rope_original_max_positions));
        } else if (cfg.rope_scaling_type[0] && strcmp(cfg.rope_scaling_type, "llama3")) {
            fprintf(stderr, "wgt convert: note: rope_scaling type \"%s\" is not written\n", cfg.rope_scaling_type);
        }
    }
    if (cfg.n_experts > 0) { /* llama.cpp's keys; expert_weights_norm for readers that look (llama.cpp's qwen2moe
                                 never renormalises, its llama and qwen3moe always do) */
        TRY(wgt_gguf_writer_add_u32(w, KEY("expert_count"), (uint32_t)cfg.n_experts));
        TRY(wgt_gguf_writer_add_u32(w, KEY("expert_used_count"), (uint32_t)cfg.n_experts_used));
        if (cfg.moe_intermediate_size > 0)
            TRY(wgt_gguf_writer_add_u32(w, KEY("expert_feed_forward_length"), (uint32_t)cfg.moe_intermediate_size));
        if (cfg.shared_expert_intermediate_size > 0 && a == ARCH_QWEN2MOE)
            TRY(wgt_gguf_writer_add_u32(w, KEY("expert_shared_feed_forward_length"),
                                        (uint32_t)cfg.shared_expert_intermediate_size));
        int norm = cfg.norm_topk_prob >= 0 ? cfg.norm_topk_prob : a != ARCH_QWEN2MOE;
        TRY(wgt_gguf_writer_add_bool(w, KEY("expert_weights_norm"), norm));
    }
    /* sliding windows, soft-capping, the attention scale (llama.cpp's keys) */
    /* (llama.cpp reads phi3's key and then runs without the window; wgt applies it, as transformers does) */
    int slides = cfg.sliding_window > 0 && (a != ARCH_LLAMA || !strcmp(cfg.model_type, "mistral"));
    for (int i = 0; i < cfg.n_layer_types; i++) slides |= a == ARCH_LLAMA && cfg.layer_sliding[i];
    if (slides) TRY(wgt_gguf_writer_add_u32(w, KEY("attention.sliding_window"), (uint32_t)cfg.sliding_window));
    if (slides && (a == ARCH_GEMMA2 || a == ARCH_GEMMA3) && cfg.n_layer_types == cfg.n_layers) {
        /* which layers slide, one bool a layer (llama.cpp's key: it reads it for gemma3, whose
         * default is five sliding layers then a global one) */
        TRY(wgt_gguf_writer_add_array(w, KEY("attention.sliding_window_pattern"), WGT_GGUF_BOOL, cfg.layer_sliding,
                                      (uint64_t)cfg.n_layer_types));
    }
    if (cfg.attn_softcap > 0) TRY(wgt_gguf_writer_add_f32(w, KEY("attn_logit_softcapping"), (float)cfg.attn_softcap));
    if (cfg.final_softcap > 0) TRY(wgt_gguf_writer_add_f32(w, KEY("final_logit_softcapping"), (float)cfg.final_softcap));
    if (a == ARCH_GPTNEOX) TRY(wgt_gguf_writer_add_bool(w, KEY("use_parallel_residual"), cfg.use_parallel_residual != 0));
    if (a == ARCH_GRANITE) { /* transformers' defaults are 1 (attention_multiplier too: not 1/sqrt(head_dim)) */
        TRY(wgt_gguf_writer_add_f32(w, KEY("embedding_scale"), cfg.embedding_multiplier > 0 ? (float)cfg.embedding_multiplier : 1));
        TRY(wgt_gguf_writer_add_f32(w, KEY("residual_scale"), cfg.residual_multiplier > 0 ? (float)cfg.residual_multiplier : 1));
        TRY(wgt_gguf_writer_add_f32(w, KEY("attention.scale"), cfg.attention_multiplier > 0 ? (float)cfg.attention_multiplier : 1));
        TRY(wgt_gguf_writer_add_f32(w, KEY("logit_scale"), cfg.logits_scaling > 0 ? (float)cfg.logits_scaling : 1));
    }
    if (fam->post_norms && cfg.query_pre_attn_scalar > 0 && cfg.query_pre_attn_scalar != (double)cfg.head_dim)
        /* llama.cpp assumes head_dim (hidden / heads for the 27B models); the exact scale for readers that look */
        TRY(wgt_gguf_writer_add_f32(w, KEY("attention.scale"), (float)(1 / sqrt(cfg.query_pre_attn_scalar))));
    if (a == ARCH_GEMMA3) /* the sliding layers' rope base (llama.cpp's key; its default is 10000) */
        TRY(wgt_gguf_writer_add_f32(w, KEY("rope.freq_base_swa"), cfg.rope_local_theta > 0 ? (float)cfg.rope_local_theta : 10000));
    const char *kind = NULL;
    wgt_status ts = wgt_gguf_writer_add_tokenizer(w, dir, arch, &cfg, &kind);
    if (ts == WGT_ERR_NOT_FOUND) {
        /* llama.cpp's name for a model without a vocabulary: it then takes the size from vocab_size */
        fprintf(stderr, "wgt convert: note: no tokenizer in %s: the file has none\n", dir);
        TRY(wgt_gguf_writer_add_str(w, "tokenizer.ggml.model", "none"));
        if (a == ARCH_GPT2 && cfg.vocab_size) TRY(wgt_gguf_writer_add_u32(w, KEY("vocab_size"), (uint32_t)cfg.vocab_size));
    } else if (ts)
        goto failed;

    for (int64_t i = 0; i < n_plan; i++) TRY(wgt_gguf_writer_add_tensor(w, plans[i].name, plans[i].type, plans[i].n_dims, plans[i].ne));
    /* threads: WGT_THREADS, else the processors online (up to 64) */
    int n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    const char *env = getenv("WGT_THREADS");
    if (env && atoi(env) > 0) n_threads = atoi(env);
    if (n_threads < 1) n_threads = 1;
    if (n_threads > 64) n_threads = 64;
    const uint64_t chunk_bytes = 16u << 20; /* output rows converted per round */
    job jobs[64];
    pthread_t tids[64];
    row = calloc((size_t)n_threads * (size_t)max_row, sizeof *row);
    qrow = malloc(chunk_bytes + (uint64_t)max_row * 4);
    if (!row || !qrow) goto failed;
    for (int64_t i = 0; i < n_plan; i++) {
        plan *p = &plans[i];
        uint64_t rb;
        TRY(wgt_ftype_bytes(p->type, p->rl, &rb));
        int64_t per_chunk = rb ? (int64_t)(chunk_bytes / rb) : p->nr;
        if (per_chunk < 1) per_chunk = 1;
        for (int64_t r0 = 0; r0 < p->nr; r0 += per_chunk) {
            int64_t r1 = r0 + per_chunk < p->nr ? r0 + per_chunk : p->nr, n = r1 - r0;
            int t_used = n < n_threads ? (int)n : n_threads, created[64] = {0};
            for (int t = 0; t < t_used; t++) {
                jobs[t] = (job){p, r0 + n * t / t_used, r0 + n * (t + 1) / t_used, head_dim, rb, NULL, row + (size_t)t * (size_t)max_row, 0};
                jobs[t].out = qrow + (uint64_t)(jobs[t].r0 - r0) * rb;
                created[t] = t > 0 && pthread_create(&tids[t], NULL, run_job, &jobs[t]) == 0;
            }
            for (int t = 0; t < t_used; t++)
                if (!created[t]) run_job(&jobs[t]); /* this thread's share, or a thread that could not start */
            for (int t = 1; t < t_used; t++)
                if (created[t]) pthread_join(tids[t], NULL);
            for (int t = 0; t < t_used; t++)
                if (jobs[t].failed) goto failed;
            TRY(wgt_gguf_writer_write(w, qrow, (uint64_t)n * rb));
            if (!p->generated && r1 < p->nr) /* large tensors move the bar as they go */
                progress(done + (uint64_t)((double)p->src->bytes * (double)r1 / (double)p->nr), total, tty);
        }
        done += p->generated ? 0 : p->src->bytes;
        progress(done, total, tty);
    }
    TRY(wgt_gguf_writer_finish(w));
    fprintf(stderr, "wgt convert: wrote %s: %s, %lld tensors, %s%s%s%s\n", out, arch, (long long)n_plan, wgt_ftype_name(want),
            kind ? ", tokenizer " : "", kind ? kind : "", notes ? " (some tensors f16: see notes)" : "");
    rc = 0;
failed:
    if (rc) fail("conversion failed");
    wgt_gguf_writer_free(w);
    wgt_safetensors_free(st);
    for (int64_t i = 0; plans && i < n_plan; i++) free(plans[i].rows_of), free(plans[i].experts);
    free(plans);
    free(rope_freqs);
    free(row);
    free(qrow);
    return rc;
}
