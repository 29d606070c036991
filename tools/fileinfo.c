/* wgt info <file-or-dir>: what a model file holds — format, architecture, hyper-parameters,
 * parameter count, bytes by tensor type, tokenizer, and with --tensors a table of tensors.
 * GGUF files are described from their metadata; safetensors files and Hugging Face directories
 * from their headers plus config.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "wgt.h"

typedef struct by_type {
    uint64_t bytes[256], elems[256];
} by_type;

static void count(by_type *b, wgt_ftype t, uint64_t bytes, int64_t n)
{
    unsigned k = (unsigned)t < 256 ? (unsigned)t : 255;
    b->bytes[k] += bytes;
    b->elems[k] += (uint64_t)n;
}

static void human(char *buf, size_t cap, double v, const char *unit)
{
    const char *pre[] = {"", "K", "M", "G", "T"};
    int k = 0;
    while (v >= 1000 && k < 4) v /= 1000, k++;
    snprintf(buf, cap, k ? "%.2f %s%s" : "%.0f %s%s", v, pre[k], unit);
}

static void print_totals(const by_type *b)
{
    uint64_t params = 0, bytes = 0;
    for (int k = 0; k < 256; k++) params += b->elems[k], bytes += b->bytes[k];
    char p[32], y[32];
    human(p, sizeof p, (double)params, "");
    human(y, sizeof y, (double)bytes, "B");
    printf("parameters:   %llu (%s)\ntensor bytes: %llu (%s)\nby type:\n", (unsigned long long)params, p, (unsigned long long)bytes, y);
    for (int k = 0; k < 256; k++)
        if (b->elems[k] || b->bytes[k]) {
            human(y, sizeof y, (double)b->bytes[k], "B");
            printf("  %-8s %12llu elements  %10s  %5.1f%%  %.2f bits/element\n", wgt_ftype_name((wgt_ftype)k) ? wgt_ftype_name((wgt_ftype)k) : "?",
                   (unsigned long long)b->elems[k], y, bytes ? 100.0 * (double)b->bytes[k] / (double)bytes : 0,
                   b->elems[k] ? 8.0 * (double)b->bytes[k] / (double)b->elems[k] : 0);
        }
}

/* One metadata value, short: arrays show their type, length and first few elements. */
static void print_value(const wgt_gguf_value *v)
{
    static const char *names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str", "arr", "u64", "i64", "f64"};
    wgt_gguf_type t = wgt_gguf_value_type(v);
    int64_t i;
    uint64_t u, len;
    double f;
    const char *s;
    if (t == WGT_GGUF_STRING) {
        wgt_gguf_value_str(v, &s, &len);
        putchar('"');
        for (uint64_t k = 0; k < len && k < 80; k++) /* one line: chat templates hold newlines */
            if (s[k] == '\n') fputs("\\n", stdout);
            else putchar(s[k]);
        printf("\"%s", len > 80 ? "..." : "");
    } else if (t == WGT_GGUF_ARRAY) {
        wgt_gguf_type e = wgt_gguf_array_type(v);
        uint64_t n = wgt_gguf_array_len(v);
        printf("[%s x %llu]", e <= 12 ? names[e] : "?", (unsigned long long)n);
        for (uint64_t k = 0; k < n && k < 4; k++) {
            printf(k ? ", " : " ");
            if (e == WGT_GGUF_STRING) wgt_gguf_array_str(v, k, &s, &len), printf("\"%.*s\"", len > 24 ? 24 : (int)len, s);
            else if (e == WGT_GGUF_FLOAT32 || e == WGT_GGUF_FLOAT64) wgt_gguf_array_float(v, k, &f), printf("%g", f);
            else if (e == WGT_GGUF_ARRAY) printf("[...]");
            else if (!wgt_gguf_array_int(v, k, &i)) printf("%lld", (long long)i);
            else printf("?");
        }
        if (n > 4) printf(", ...");
    } else if (t == WGT_GGUF_FLOAT32 || t == WGT_GGUF_FLOAT64) {
        wgt_gguf_value_float(v, &f);
        printf("%g", f);
    } else if (t == WGT_GGUF_BOOL) {
        int b;
        wgt_gguf_value_bool(v, &b);
        printf(b ? "true" : "false");
    } else if (!wgt_gguf_value_uint(v, &u)) {
        printf("%llu", (unsigned long long)u);
    } else if (!wgt_gguf_value_int(v, &i)) {
        printf("%lld", (long long)i);
    }
}

static void shape_str(char *buf, size_t cap, const int64_t *dims, uint32_t n)
{
    size_t k = 0;
    buf[0] = 0;
    for (uint32_t d = 0; d < n && k < cap; d++) k += (size_t)snprintf(buf + k, cap - k, "%s%lld", d ? " x " : "", (long long)dims[d]);
    if (!n) snprintf(buf, cap, "scalar");
}

static int info_gguf(const char *path, int tensors)
{
    wgt_gguf *g;
    if (wgt_gguf_open(path, &g)) {
        fprintf(stderr, "wgt info: %s\n", wgt_errmsg());
        return 1;
    }
    const char *arch = "?", *s;
    wgt_gguf_get_str(g, "general.architecture", &arch);
    printf("file:         %s\nformat:       GGUF v%u, alignment %u, data at byte %llu, %llu bytes\n", path, wgt_gguf_version(g),
           wgt_gguf_alignment(g), (unsigned long long)wgt_gguf_data_offset(g), (unsigned long long)wgt_gguf_file_size(g));
    printf("architecture: %s\n", arch);
    if (!wgt_gguf_get_str(g, "general.name", &s)) printf("name:         %s\n", s);
    printf("hyper-parameters and other metadata:\n");
    size_t al = strlen(arch);
    for (int pass = 0; pass < 2; pass++)
        for (int64_t i = 0; i < wgt_gguf_kv_count(g); i++) {
            const char *k = wgt_gguf_kv_key(g, i);
            int is_arch = !strncmp(k, arch, al) && k[al] == '.';
            if (!strncmp(k, "tokenizer.", 10) || is_arch != !pass) continue;
            printf("  %-44s ", k);
            print_value(wgt_gguf_kv_value(g, i));
            printf("\n");
        }
    const wgt_gguf_value *toks = wgt_gguf_find(g, "tokenizer.ggml.tokens");
    if (!wgt_gguf_get_str(g, "tokenizer.ggml.model", &s)) {
        const char *pre = NULL;
        wgt_gguf_get_str(g, "tokenizer.ggml.pre", &pre);
        printf("tokenizer:    %s (%s)%s%s, %llu tokens", s, !strcmp(s, "llama") ? "SentencePiece" : !strcmp(s, "gpt2") ? "byte-level BPE" : "?",
               pre ? ", pre " : "", pre ? pre : "", (unsigned long long)wgt_gguf_array_len(toks));
        const wgt_gguf_value *m = wgt_gguf_find(g, "tokenizer.ggml.merges");
        if (m) printf(", %llu merges", (unsigned long long)wgt_gguf_array_len(m));
        int64_t id;
        if (!wgt_gguf_get_int(g, "tokenizer.ggml.bos_token_id", &id)) printf(", bos %lld", (long long)id);
        if (!wgt_gguf_get_int(g, "tokenizer.ggml.eos_token_id", &id)) printf(", eos %lld", (long long)id);
        printf("%s\n", wgt_gguf_find(g, "tokenizer.chat_template") ? ", chat template" : "");
    } else {
        printf("tokenizer:    none\n");
    }
    by_type b = {0};
    for (int64_t i = 0; i < wgt_gguf_tensor_count(g); i++) {
        const wgt_gguf_tensor *t = wgt_gguf_tensor_at(g, i);
        count(&b, t->type, t->bytes, t->n_elements);
    }
    printf("tensors:      %lld\n", (long long)wgt_gguf_tensor_count(g));
    print_totals(&b);
    if (tensors) {
        printf("\n%-40s %-8s %-24s %14s %12s\n", "name", "type", "ne (GGML order)", "offset", "bytes");
        for (int64_t i = 0; i < wgt_gguf_tensor_count(g); i++) {
            const wgt_gguf_tensor *t = wgt_gguf_tensor_at(g, i);
            char sh[96];
            shape_str(sh, sizeof sh, t->ne, t->n_dims);
            printf("%-40s %-8s %-24s %14llu %12llu\n", t->name, wgt_ftype_name(t->type), sh, (unsigned long long)t->offset,
                   (unsigned long long)t->bytes);
        }
    }
    wgt_gguf_free(g);
    return 0;
}

static int info_safetensors(const char *path, int tensors)
{
    struct stat sb;
    char dir[4096], p[4200];
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) snprintf(dir, sizeof dir, "%s", path);
    else {
        const char *sl = strrchr(path, '/');
        snprintf(dir, sizeof dir, "%.*s", sl ? (int)(sl - path) : 1, sl ? path : ".");
    }
    wgt_safetensors *st;
    if (wgt_safetensors_open(path, &st)) {
        fprintf(stderr, "wgt info: %s\n", wgt_errmsg());
        return 1;
    }
    printf("file:         %s\nformat:       safetensors, %lld tensors\n", path, (long long)wgt_safetensors_count(st));
    wgt_hf_config c;
    snprintf(p, sizeof p, "%s/config.json", dir);
    if (stat(p, &sb) == 0) {
        if (wgt_hf_config_load(dir, &c)) {
            fprintf(stderr, "wgt info: %s\n", wgt_errmsg());
        } else {
            printf("architecture: %s (model_type %s)\nhyper-parameters (config.json):\n", c.architecture[0] ? c.architecture : "?", c.model_type[0] ? c.model_type : "?");
            printf("  hidden size %lld, layers %lld, heads %lld, kv heads %lld, head dim %lld, intermediate %lld\n",
                   (long long)c.hidden_size, (long long)c.n_layers, (long long)c.n_heads, (long long)c.n_kv_heads,
                   (long long)c.head_dim, (long long)c.intermediate_size);
            printf("  vocab %lld, max positions %lld, rope theta %g%s%s, %s eps %g, act %s, dtype %s%s\n", (long long)c.vocab_size,
                   (long long)c.max_positions, c.rope_theta, c.rope_scaling_type[0] ? ", rope scaling " : "", c.rope_scaling_type,
                   c.norm_is_rms ? "rms norm" : "layer norm", c.norm_eps, c.hidden_act, c.torch_dtype[0] ? c.torch_dtype : "?",
                   c.tie_word_embeddings ? ", tied embeddings" : "");
        }
    }
    const char *tok = "none";
    snprintf(p, sizeof p, "%s/vocab.json", dir);
    if (stat(p, &sb) == 0) tok = "vocab.json + merges.txt (GPT-2 byte-level BPE)";
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    if (stat(p, &sb) == 0) tok = "tokenizer.json (Hugging Face tokenizers)";
    snprintf(p, sizeof p, "%s/tokenizer.model", dir);
    if (stat(p, &sb) == 0) tok = "tokenizer.model (SentencePiece)";
    printf("tokenizer:    %s\n", tok);
    by_type b = {0};
    for (int64_t i = 0; i < wgt_safetensors_count(st); i++) {
        const wgt_st_tensor *t = wgt_safetensors_at(st, i);
        count(&b, t->type, t->bytes, t->n_elements);
    }
    print_totals(&b);
    if (tensors) {
        printf("\n%-48s %-8s %-24s %12s  %s\n", "name", "dtype", "shape (PyTorch order)", "bytes", "file");
        for (int64_t i = 0; i < wgt_safetensors_count(st); i++) {
            const wgt_st_tensor *t = wgt_safetensors_at(st, i);
            char sh[96];
            shape_str(sh, sizeof sh, t->shape, t->n_dims);
            const char *f = strrchr(t->file, '/');
            printf("%-48s %-8s %-24s %12llu  %s\n", t->name, wgt_ftype_name(t->type), sh, (unsigned long long)t->bytes, f ? f + 1 : t->file);
        }
    }
    wgt_safetensors_free(st);
    return 0;
}

int cmd_info_file(int argc, char **argv)
{
    const char *path = NULL;
    int tensors = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tensors")) tensors = 1;
        else if (argv[i][0] != '-' && !path) path = argv[i];
        else {
            fprintf(stderr, "usage: wgt info <model.gguf | model.safetensors | index.json | hf-dir> [--tensors]\n");
            return 2;
        }
    }
    if (!path) {
        fprintf(stderr, "usage: wgt info <model.gguf | model.safetensors | index.json | hf-dir> [--tensors]\n");
        return 2;
    }
    FILE *f = fopen(path, "rb");
    char magic[4] = {0};
    if (f) {
        if (fread(magic, 1, 4, f) != 4) magic[0] = 0;
        fclose(f);
    }
    if (!memcmp(magic, "GGUF", 4)) return info_gguf(path, tensors);
    return info_safetensors(path, tensors);
}
