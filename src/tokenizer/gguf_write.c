/* Tokenizer metadata for a GGUF file (tokenizer.ggml.*, as llama.cpp reads it) from a Hugging Face
 * directory: the inverse of gguf.c. The files are read by the tokenizer's own loaders, the ones
 * wgt_tokenizer_open uses, so each format has one reader; what they built is written out:
 *   tokenizer.model (SentencePiece)          -> model "llama": tokens, scores, token types
 *   tokenizer.json, byte-level BPE           -> model "gpt2": tokens, token types, merges
 *   tokenizer.json, SentencePiece-style BPE  -> model "llama", the merge ranks as scores
 *   vocab.json + merges.txt (GPT-2)          -> model "gpt2"
 * plus the bos/eos/unk/pad ids and tokenizer_config.json's chat template and add_bos/add_eos flags.
 * Token types use llama.cpp's numbers, which are SentencePiece's (tokenizer_internal.h's TT_*). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "io/json_util.h"
#include "tokenizer/tokenizer_internal.h"

static int exists(const char *dir, const char *name, char *out, size_t cap)
{
    struct stat sb;
    snprintf(out, cap, "%s/%s", dir, name);
    return stat(out, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* A special token of tokenizer_config.json: "text" or {"content": "text", ...}. */
static const char *special_str(const cJSON *cfg, const char *key)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (cJSON_IsObject(t)) t = cJSON_GetObjectItemCaseSensitive(t, "content");
    return cJSON_IsString(t) ? t->valuestring : NULL;
}

typedef struct merge_ref {
    int32_t rank, a, b;
} merge_ref;

static int by_rank(const void *x, const void *y)
{
    const merge_ref *p = x, *q = y;
    return p->rank < q->rank ? -1 : p->rank > q->rank;
}

/* The byte-level merge table back as "a b" strings of vocabulary text, in rank order. */
static wgt_status merge_strings(const wgt_tokenizer *t, char ***out, uint64_t *n_out, const char *where)
{
    size_t n = 0;
    merge_ref *m = malloc((t->merges.count + 1) * sizeof *m);
    char **s = calloc(t->merges.count + 1, sizeof *s);
    wgt_status st = m && s ? WGT_OK : wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: merges", where);
    for (size_t i = 0; !st && i < t->merges.cap; i++) {
        uint64_t k = t->merges.slots[i].key;
        if (k) m[n++] = (merge_ref){t->merges.slots[i].rank, (int32_t)(k >> 32) - 1, (int32_t)(uint32_t)k - 1};
    }
    if (!st) qsort(m, n, sizeof *m, by_rank);
    for (size_t i = 0; !st && i < n; i++) {
        uint32_t la = t->text_len[m[i].a], lb = t->text_len[m[i].b];
        if (!(s[i] = malloc((size_t)la + lb + 2))) {
            st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: merges", where);
            break;
        }
        memcpy(s[i], t->text[m[i].a], la);
        s[i][la] = ' ';
        memcpy(s[i] + la + 1, t->text[m[i].b], lb);
        s[i][la + 1 + lb] = 0;
    }
    free(m);
    if (st) {
        for (size_t i = 0; s && i < n; i++) free(s[i]);
        free(s);
        return st;
    }
    *out = s;
    *n_out = n;
    return WGT_OK;
}

wgt_status wgt_gguf_writer_add_tokenizer(wgt_gguf_writer *w, const char *dir, const char *arch,
                                         const wgt_hf_config *cfg, const char **kind)
{
    if (!w || !dir) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_gguf_writer_add_tokenizer: NULL argument");
    char path[4096], path2[4096];
    wgt_tokenizer *t = NULL;
    wgt_status st;
    int spm_first = !arch || !strcmp(arch, "llama");
    int has_json = exists(dir, "tokenizer.json", path, sizeof path), from_spm = 0;
    if (exists(dir, "tokenizer.model", path2, sizeof path2) && (spm_first || !has_json)) {
        from_spm = 1;
        st = tok_load_spm_model(path2, &t);
    } else if (has_json) {
        st = tok_load_hf_json(path, NULL, &t);
        if (!st && t->kind == TOK_SPM_UNIGRAM) {
            st = wgt_error(WGT_ERR_UNSUPPORTED, "%s: a Unigram tokenizer.json does not convert to GGUF's tokenizers "
                           "(BPE ones do)", path);
        }
    } else if (exists(dir, "vocab.json", path, sizeof path) && exists(dir, "merges.txt", path2, sizeof path2)) {
        st = tok_load_gpt2_files(path, path2, &t);
    } else {
        return wgt_error(WGT_ERR_NOT_FOUND, "%s: no tokenizer.model, tokenizer.json or vocab.json + merges.txt", dir);
    }
    if (st) {
        wgt_tokenizer_free(t);
        return st;
    }
    const char *model = t->kind == TOK_BYTE_BPE ? "gpt2" : "llama";

    /* the embedding may have more rows than the tokenizer has tokens (Qwen pads to 151936): pad the
     * vocabulary to match, as llama.cpp's converter does */
    uint64_t n = (uint64_t)t->n_vocab;
    if (cfg && cfg->vocab_size > 0 && (uint64_t)cfg->vocab_size > n && cfg->vocab_size < (1 << 24)) n = (uint64_t)cfg->vocab_size;
    char **tokens = calloc(n, sizeof *tokens), **merges = NULL;
    uint64_t *lens = calloc(n, sizeof *lens), n_merges = 0;
    int32_t *types = calloc(n, sizeof *types);
    float *scores = t->kind == TOK_BYTE_BPE ? NULL : calloc(n, sizeof *scores);
    if (!tokens || !lens || !types || (t->kind != TOK_BYTE_BPE && !scores)) st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: vocabulary", dir);
    for (uint64_t i = 0; !st && i < n; i++) {
        int32_t type = i < (uint64_t)t->n_vocab ? t->type[i] : TT_UNUSED;
        if (i < (uint64_t)t->n_vocab && !(type == TT_UNUSED && !t->text_len[i])) {
            tokens[i] = t->text[i];
            lens[i] = t->text_len[i];
            /* the loader makes an unknown piece a control token so that it matches as one in
             * text; the file keeps its own type */
            if ((int32_t)i == t->unk && type == TT_CONTROL) type = TT_UNKNOWN;
            if (scores) scores[i] = t->scores[i];
        } else { /* a hole in the ids, or past the tokenizer: llama.cpp's placeholder */
            char pad[32];
            snprintf(pad, sizeof pad, "[PAD%llu]", (unsigned long long)i);
            if (!(tokens[i] = strdup(pad))) st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: vocabulary", dir);
            lens[i] = strlen(pad);
            type = TT_UNUSED;
            if (scores) scores[i] = i < (uint64_t)t->n_vocab ? t->scores[i] : -1e9f;
        }
        types[i] = type;
    }
    if (!st && t->kind == TOK_BYTE_BPE) st = merge_strings(t, &merges, &n_merges, dir);

    /* ids: the SentencePiece model's own, then config.json / generation_config.json, then
     * tokenizer_config.json's strings */
    int64_t bos = from_spm ? t->bos : -1, eos = from_spm ? t->eos : -1, unk = t->unk, pad = from_spm ? t->pad : -1;
    cJSON *tc = NULL;
    if (!st && exists(dir, "tokenizer_config.json", path, sizeof path)) {
        char *text;
        size_t len;
        if (!(st = tok_read_file(path, &text, &len))) {
            st = wgt_json_parse(text, len, path, &tc);
            free(text);
        }
    }
    if (cfg && cfg->n_bos) bos = cfg->bos_ids[0];
    if (cfg && cfg->n_eos) eos = cfg->eos_ids[0];
    if (cfg && cfg->pad_id >= 0) pad = cfg->pad_id;
    if (tc && bos < 0) bos = tok_find_text(t, special_str(tc, "bos_token"));
    if (tc && eos < 0) eos = tok_find_text(t, special_str(tc, "eos_token"));
    if (tc && pad < 0) pad = tok_find_text(t, special_str(tc, "pad_token"));
    if (tc && unk < 0) unk = tok_find_text(t, special_str(tc, "unk_token"));

    if (!st) st = wgt_gguf_writer_add_str(w, "tokenizer.ggml.model", model);
    if (!st && !strcmp(model, "gpt2")) {
        const char *pre = !arch ? "default" : !strcmp(arch, "llama") ? "llama-bpe" : !strncmp(arch, "qwen", 4) ? "qwen2" : !strcmp(arch, "gpt2") ? "gpt-2" : "default";
        st = wgt_gguf_writer_add_str(w, "tokenizer.ggml.pre", pre);
    }
    if (!st) st = wgt_gguf_writer_add_str_array(w, "tokenizer.ggml.tokens", (const char *const *)tokens, lens, n);
    if (!st && scores) st = wgt_gguf_writer_add_array(w, "tokenizer.ggml.scores", WGT_GGUF_FLOAT32, scores, n);
    if (!st) st = wgt_gguf_writer_add_array(w, "tokenizer.ggml.token_type", WGT_GGUF_INT32, types, n);
    if (!st && merges) st = wgt_gguf_writer_add_str_array(w, "tokenizer.ggml.merges", (const char *const *)merges, NULL, n_merges);
    if (!st && !from_spm && t->kind == TOK_SPM_BPE)
        st = wgt_gguf_writer_add_bool(w, "tokenizer.ggml.add_space_prefix", t->add_dummy_prefix);
    struct { const char *key; int64_t id; } ids[] = {{"tokenizer.ggml.bos_token_id", bos}, {"tokenizer.ggml.eos_token_id", eos},
                                                     {"tokenizer.ggml.unknown_token_id", unk}, {"tokenizer.ggml.padding_token_id", pad}};
    for (size_t i = 0; !st && i < sizeof ids / sizeof ids[0]; i++)
        if (ids[i].id >= 0 && (uint64_t)ids[i].id < n) st = wgt_gguf_writer_add_u32(w, ids[i].key, (uint32_t)ids[i].id);
    if (tc) {
        const cJSON *ab = cJSON_GetObjectItemCaseSensitive(tc, "add_bos_token"), *ae = cJSON_GetObjectItemCaseSensitive(tc, "add_eos_token");
        const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(tc, "chat_template");
        if (!st && cJSON_IsBool(ab)) st = wgt_gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", cJSON_IsTrue(ab));
        if (!st && cJSON_IsBool(ae)) st = wgt_gguf_writer_add_bool(w, "tokenizer.ggml.add_eos_token", cJSON_IsTrue(ae));
        if (!st && cJSON_IsString(tmpl)) st = wgt_gguf_writer_add_str(w, "tokenizer.chat_template", tmpl->valuestring);
        cJSON_Delete(tc);
    }
    for (uint64_t i = 0; tokens && i < n; i++) /* the placeholders; the rest belongs to t */
        if (i >= (uint64_t)t->n_vocab || tokens[i] != t->text[i]) free(tokens[i]);
    for (uint64_t i = 0; i < n_merges; i++) free(merges[i]);
    free(merges);
    free(tokens);
    free(lens);
    free(types);
    free(scores);
    wgt_tokenizer_free(t);
    if (!st && kind) *kind = model;
    return st;
}
