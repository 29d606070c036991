/* GGUF tokenizer metadata (tokenizer.ggml.*, as llama.cpp writes it) to a tokenizer: thin glue
 * from the GGUF reader's public accessors (src/io) to wgt_tokenizer_create's plain arrays. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

/* -1 when absent; -2 when present but not an id (negative, past int32 or not an integer), which
 * tok_from_arrays refuses for bos/eos rather than silently dropping the token. */
static int32_t get_id(const wgt_gguf *g, const char *key)
{
    int64_t v;
    if (!wgt_gguf_find(g, key)) return -1;
    return wgt_gguf_get_int(g, key, &v) == WGT_OK && v >= 0 && v < INT32_MAX ? (int32_t)v : -2;
}

static int get_flag(const wgt_gguf *g, const char *key)
{
    int v;
    return wgt_gguf_find(g, key) && wgt_gguf_get_bool(g, key, &v) == WGT_OK ? v : -1;
}

static const char *get_str(const wgt_gguf *g, const char *key)
{
    const char *s;
    return wgt_gguf_find(g, key) && wgt_gguf_get_str(g, key, &s) == WGT_OK ? s : NULL;
}

wgt_status wgt_tokenizer_create_from_gguf(const wgt_gguf *g, const char *name, wgt_tokenizer **out)
{
    if (!g || !out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_tokenizer_create_from_gguf: NULL argument");
    *out = NULL;
    if (!name) name = "GGUF";
    wgt_tokenizer_arrays a = {0};
    a.model = get_str(g, "tokenizer.ggml.model");
    const wgt_gguf_value *tokens = wgt_gguf_find(g, "tokenizer.ggml.tokens");
    if (!a.model || !tokens)
        return wgt_error(WGT_ERR_NOT_FOUND, "%s: no tokenizer metadata (tokenizer.ggml.model and tokenizer.ggml.tokens)", name);
    if (wgt_gguf_value_type(tokens) != WGT_GGUF_ARRAY || wgt_gguf_array_type(tokens) != WGT_GGUF_STRING)
        return wgt_error(WGT_ERR_FORMAT, "%s: tokenizer.ggml.tokens is not an array of strings", name);
    a.n_tokens = (size_t)wgt_gguf_array_len(tokens);
    const wgt_gguf_value *scores = wgt_gguf_find(g, "tokenizer.ggml.scores");
    const wgt_gguf_value *types = wgt_gguf_find(g, "tokenizer.ggml.token_type");
    const wgt_gguf_value *merges = wgt_gguf_find(g, "tokenizer.ggml.merges");
    size_t n_merges = merges && wgt_gguf_value_type(merges) == WGT_GGUF_ARRAY ? (size_t)wgt_gguf_array_len(merges) : 0;
    const char **tok = calloc(a.n_tokens + 1, sizeof *tok);
    size_t *lens = calloc(a.n_tokens + 1, sizeof *lens);
    float *sc = scores ? calloc(a.n_tokens + 1, sizeof *sc) : NULL;
    int32_t *ty = types ? calloc(a.n_tokens + 1, sizeof *ty) : NULL;
    char **mg = calloc(n_merges + 1, sizeof *mg);
    wgt_status st = WGT_OK;
    if (!tok || !lens || (scores && !sc) || (types && !ty) || !mg) st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: tokenizer arrays", name);
    if (!st && ((scores && wgt_gguf_array_len(scores) != a.n_tokens) || (types && wgt_gguf_array_len(types) != a.n_tokens)))
        st = wgt_error(WGT_ERR_FORMAT, "%s: tokenizer.ggml.scores / token_type do not have one entry per token (%zu)", name, a.n_tokens);
    for (size_t i = 0; !st && i < a.n_tokens; i++) {
        uint64_t len;
        st = wgt_gguf_array_str(tokens, i, &tok[i], &len);
        lens[i] = (size_t)len;
        double d;
        int64_t v;
        if (!st && sc && !(st = wgt_gguf_array_float(scores, i, &d))) sc[i] = (float)d;
        if (!st && ty && !(st = wgt_gguf_array_int(types, i, &v))) ty[i] = (int32_t)v;
    }
    for (size_t i = 0; !st && i < n_merges; i++) { /* the array's strings are not NUL-terminated */
        const char *s;
        uint64_t len;
        if (!(st = wgt_gguf_array_str(merges, i, &s, &len)) && (mg[i] = malloc((size_t)len + 1))) {
            memcpy(mg[i], s, (size_t)len);
            mg[i][len] = 0;
        } else if (!st) st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: merges", name);
    }
    if (!st) {
        a.pre = get_str(g, "tokenizer.ggml.pre");
        a.tokens = tok;
        a.token_lens = lens;
        a.scores = sc;
        a.token_types = ty;
        a.n_merges = n_merges;
        a.merges = (const char *const *)mg;
        a.bos_id = get_id(g, "tokenizer.ggml.bos_token_id");
        a.eos_id = get_id(g, "tokenizer.ggml.eos_token_id");
        a.unk_id = get_id(g, "tokenizer.ggml.unknown_token_id");
        a.pad_id = get_id(g, "tokenizer.ggml.padding_token_id");
        a.add_bos = get_flag(g, "tokenizer.ggml.add_bos_token");
        a.add_eos = get_flag(g, "tokenizer.ggml.add_eos_token");
        a.add_space_prefix = get_flag(g, "tokenizer.ggml.add_space_prefix");
        a.chat_template = get_str(g, "tokenizer.chat_template");
        st = wgt_tokenizer_create(&a, out);
        if (st) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", wgt_errmsg());
            st = wgt_error(st, "%s: %s", name, msg);
        }
    }
    for (size_t i = 0; i < n_merges && mg; i++) free(mg[i]);
    free(mg);
    free(tok);
    free(lens);
    free(sc);
    free(ty);
    return st;
}

wgt_status tok_load_gguf(const char *path, wgt_tokenizer **out)
{
    wgt_gguf *g;
    wgt_status st = wgt_gguf_open(path, &g);
    if (st) return st;
    st = wgt_tokenizer_create_from_gguf(g, path, out);
    wgt_gguf_free(g);
    return st;
}
