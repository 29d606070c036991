/* Tokenizer metadata for GGUF files (tokenizer.ggml.*, as llama.cpp writes and reads it), from a
 * Hugging Face model directory:
 *   tokenizer.model (SentencePiece)   -> model "llama": tokens, scores, token_type
 *   tokenizer.json (byte-level BPE)   -> model "gpt2": tokens, token_type, merges
 *   vocab.json + merges.txt (GPT-2)   -> model "gpt2"
 * plus bos/eos/unk/pad ids and tokenizer_config.json's chat template and add_bos/add_eos flags.
 * The SentencePiece protobuf is read with src/core/protobuf.h (only the fields we need), so
 * convert needs no protobuf library. Token types use llama.cpp's numbers,
 * which are SentencePiece's: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "core/protobuf.h"
#include "io/io.h"
#include "io/json_util.h"

typedef struct vocab {
    uint64_t n;
    char **tokens;
    uint64_t *lens;
    float *scores;
    int32_t *types;
    uint64_t n_merges;
    char **merges;
    int64_t bos, eos, unk, pad;
} vocab;

static void vocab_free(vocab *v)
{
    for (uint64_t i = 0; i < v->n; i++) free(v->tokens[i]);
    for (uint64_t i = 0; i < v->n_merges; i++) free(v->merges[i]);
    free(v->tokens);
    free(v->lens);
    free(v->scores);
    free(v->types);
    free(v->merges);
}

static wgt_status vocab_alloc(vocab *v, uint64_t n, const char *path)
{
    if (n > (1u << 24)) return wgt_error(WGT_ERR_LIMIT, "%s: %llu tokens", path, (unsigned long long)n);
    v->n = n;
    v->tokens = calloc((size_t)n + 1, sizeof *v->tokens);
    v->lens = calloc((size_t)n + 1, sizeof *v->lens);
    v->scores = calloc((size_t)n + 1, sizeof *v->scores);
    v->types = calloc((size_t)n + 1, sizeof *v->types);
    if (!v->tokens || !v->lens || !v->scores || !v->types) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: vocabulary", path);
    return WGT_OK;
}

static wgt_status set_token(vocab *v, uint64_t id, const char *s, uint64_t len, const char *path)
{
    free(v->tokens[id]);
    if (!(v->tokens[id] = wgt_strndup(s, len))) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: tokens", path);
    v->lens[id] = len;
    return WGT_OK;
}

/* ---- SentencePiece .model (protobuf wire format, src/core/protobuf.h) ---- */

static wgt_status load_spm(const char *path, vocab *v)
{
    wgt_map m;
    wgt_status st = wgt_map_open(path, &m);
    if (st) return st;
    if (!m.size) return wgt_error(WGT_ERR_FORMAT, "%s: empty file: not a SentencePiece model", path);
    wgt_pb b = {m.data, m.data + m.size};
    wgt_pb_field f;
    int r, bad = 0;
    uint64_t n = 0;
    while ((r = wgt_pb_next(&b, &f, NULL)) == 1) n += f.number == 1 && f.wire == WGT_PB_LEN;
    bad = r < 0;
    if (!bad) st = vocab_alloc(v, n, path);
    v->bos = 1, v->eos = 2, v->unk = 0, v->pad = -1;
    b = (wgt_pb){m.data, m.data + m.size};
    uint64_t i = 0;
    while (!bad && !st && (r = wgt_pb_next(&b, &f, NULL)) == 1) {
        if (f.number == 1 && f.wire == WGT_PB_LEN) { /* SentencePiece {1: piece, 2: score, 3: type} */
            wgt_pb_field g;
            v->types[i] = 1;
            while (!st && (r = wgt_pb_next(&f.sub, &g, NULL)) == 1) {
                if (g.number == 1 && g.wire == WGT_PB_LEN) st = set_token(v, i, (const char *)g.sub.p, g.value, path);
                else if (g.number == 2 && g.wire == WGT_PB_I32) v->scores[i] = wgt_pb_float(g.value);
                else if (g.number == 3 && g.wire == WGT_PB_VARINT) v->types[i] = (int32_t)g.value;
            }
            bad = r < 0;
            if (!v->tokens[i] && !st) st = set_token(v, i, "", 0, path);
            i++;
        } else if (f.number == 2 && f.wire == WGT_PB_LEN) { /* TrainerSpec: 40 unk_id, 41 bos_id, 42 eos_id, 43 pad_id */
            wgt_pb_field g;
            while ((r = wgt_pb_next(&f.sub, &g, NULL)) == 1)
                if (g.wire == WGT_PB_VARINT && g.number >= 40 && g.number <= 43) {
                    int64_t id = (int32_t)(uint32_t)g.value;
                    if (g.number == 40) v->unk = id;
                    else if (g.number == 41) v->bos = id;
                    else if (g.number == 42) v->eos = id;
                    else v->pad = id;
                }
            bad = r < 0;
        }
    }
    bad |= r < 0;
    wgt_map_close(&m);
    if (!st && (bad || !n)) st = wgt_error(WGT_ERR_FORMAT, "%s: not a SentencePiece model (malformed protobuf or no pieces)", path);
    return st;
}

/* ---- byte-level BPE: tokenizer.json, or GPT-2's vocab.json + merges.txt ---- */

static wgt_status read_json(const char *path, cJSON **j)
{
    wgt_map m;
    wgt_status st = wgt_map_open(path, &m);
    if (st) return st;
    if (m.size > (512u << 20)) st = wgt_error(WGT_ERR_LIMIT, "%s: over 512 MB", path);
    else st = wgt_json_parse(m.size ? (const char *)m.data : "", m.size, path, j);
    wgt_map_close(&m);
    return st;
}

/* vocab {token: id} (ids dense from 0) into v; added tokens may extend it. */
static wgt_status fill_vocab(const cJSON *vj, const cJSON *added, vocab *v, const char *path)
{
    if (!cJSON_IsObject(vj)) return wgt_error(WGT_ERR_FORMAT, "%s: the vocabulary is not an object", path);
    uint64_t n = 0, id;
    for (const cJSON *e = vj->child; e; e = e->next) {
        if (!wgt_json_uint(e, &id)) return wgt_error(WGT_ERR_FORMAT, "%s: token '%.64s' has no valid id", path, e->string);
        if (id + 1 > n) n = id + 1;
    }
    uint64_t entries = (uint64_t)cJSON_GetArraySize(vj);
    for (const cJSON *e = added ? added->child : NULL; e; e = e->next, entries++)
        if (wgt_json_uint(cJSON_GetObjectItemCaseSensitive(e, "id"), &id) && id + 1 > n) n = id + 1;
    /* ids are dense in real vocabularies (a few holes at most): a tiny file must not make us
     * build millions of placeholder tokens */
    if (n > entries + 1024)
        return wgt_error(WGT_ERR_FORMAT, "%s: token ids run up to %llu for only %llu tokens", path,
                         (unsigned long long)n - 1, (unsigned long long)entries);
    wgt_status st = vocab_alloc(v, n, path);
    for (const cJSON *e = vj->child; !st && e; e = e->next) {
        wgt_json_uint(e, &id);
        st = set_token(v, id, e->string, strlen(e->string), path);
        v->types[id] = 1;
    }
    for (const cJSON *e = added ? added->child : NULL; !st && e; e = e->next) {
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "content");
        if (!wgt_json_uint(cJSON_GetObjectItemCaseSensitive(e, "id"), &id) || !cJSON_IsString(c)) continue;
        st = set_token(v, id, c->valuestring, strlen(c->valuestring), path);
        v->types[id] = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e, "special")) ? 3 : 4;
    }
    for (uint64_t i = 0; !st && i < n; i++)
        if (!v->tokens[i]) { /* a hole in the ids: llama.cpp's placeholder */
            char pad[32];
            snprintf(pad, sizeof pad, "[PAD%llu]", (unsigned long long)i);
            st = set_token(v, i, pad, strlen(pad), path);
            v->types[i] = 5;
        }
    free(v->scores);
    v->scores = NULL;
    return st;
}

static wgt_status add_merge(vocab *v, const char *a, const char *b, uint64_t cap, const char *path)
{
    if (v->n_merges == cap) return wgt_error(WGT_ERR_INTERNAL, "%s: merge count", path);
    size_t la = strlen(a), lb = strlen(b);
    char *s = malloc(la + lb + 2);
    if (!s) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: merges", path);
    memcpy(s, a, la);
    s[la] = ' ';
    memcpy(s + la + 1, b, lb + 1);
    v->merges[v->n_merges++] = s;
    return WGT_OK;
}

static wgt_status load_tokenizer_json(const char *path, vocab *v)
{
    cJSON *j;
    wgt_status st = read_json(path, &j);
    if (st) return st;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(j, "model");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    if (!cJSON_IsObject(model) || (type && (!cJSON_IsString(type) || strcmp(type->valuestring, "BPE"))) || !cJSON_IsArray(merges)) {
        cJSON_Delete(j);
        return wgt_error(WGT_ERR_UNSUPPORTED, "%s: only BPE tokenizers (model.type \"BPE\" with merges) convert to GGUF's gpt2 tokenizer", path);
    }
    st = fill_vocab(cJSON_GetObjectItemCaseSensitive(model, "vocab"), cJSON_GetObjectItemCaseSensitive(j, "added_tokens"), v, path);
    int n = cJSON_GetArraySize(merges);
    if (!st && !(v->merges = calloc((size_t)n + 1, sizeof *v->merges))) st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: merges", path);
    for (const cJSON *e = merges->child; !st && e; e = e->next) {
        if (cJSON_IsString(e)) { /* "a b" */
            const char *sp = strchr(e->valuestring, ' ');
            if (!sp) st = wgt_error(WGT_ERR_FORMAT, "%s: merge \"%.64s\" has no space", path, e->valuestring);
            else {
                char *a = wgt_strndup(e->valuestring, (uint64_t)(sp - e->valuestring));
                st = a ? add_merge(v, a, sp + 1, (uint64_t)n, path) : wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s", path);
                free(a);
            }
        } else if (cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2 && cJSON_IsString(e->child) && cJSON_IsString(e->child->next)) {
            st = add_merge(v, e->child->valuestring, e->child->next->valuestring, (uint64_t)n, path); /* ["a", "b"] */
        } else {
            st = wgt_error(WGT_ERR_FORMAT, "%s: a merge is neither \"a b\" nor [\"a\", \"b\"]", path);
        }
    }
    cJSON_Delete(j);
    return st;
}

static wgt_status load_gpt2_files(const char *vocab_path, const char *merges_path, vocab *v)
{
    cJSON *j;
    wgt_status st = read_json(vocab_path, &j);
    if (st) return st;
    st = fill_vocab(j, NULL, v, vocab_path);
    cJSON_Delete(j);
    wgt_map m;
    if (st || (st = wgt_map_open(merges_path, &m))) return st;
    if (!m.size) {
        wgt_map_close(&m);
        return wgt_error(WGT_ERR_FORMAT, "%s: empty file: no merges", merges_path);
    }
    uint64_t lines = 1;
    for (uint64_t i = 0; i < m.size; i++) lines += m.data[i] == '\n';
    if (!(v->merges = calloc((size_t)lines, sizeof *v->merges))) st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s", merges_path);
    const char *p = (const char *)m.data, *end = p + m.size;
    while (!st && p && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        uint64_t len = (uint64_t)((nl ? nl : end) - p);
        if (len && p[len - 1] == '\r') len--;
        if (len && !(len >= 8 && !memcmp(p, "#version", 8))) {
            char *line = wgt_strndup(p, len), *sp = line ? strchr(line, ' ') : NULL;
            if (!sp) st = wgt_error(WGT_ERR_FORMAT, "%s: merge line without a space", merges_path);
            else {
                *sp = 0;
                st = add_merge(v, line, sp + 1, lines, merges_path);
            }
            free(line);
        }
        p = nl ? nl + 1 : NULL;
    }
    wgt_map_close(&m);
    return st;
}

static int exists(const char *dir, const char *name, char *out, size_t cap)
{
    struct stat sb;
    snprintf(out, cap, "%s/%s", dir, name);
    return stat(out, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* Look up an id by token text (for tokenizer_config.json's bos/eos strings). */
static int64_t find_token(const vocab *v, const char *s)
{
    for (uint64_t i = 0; s && i < v->n; i++)
        if (v->lens[i] == strlen(s) && !memcmp(v->tokens[i], s, v->lens[i])) return (int64_t)i;
    return -1;
}

static const char *special_str(const cJSON *cfg, const char *key)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (cJSON_IsObject(t)) t = cJSON_GetObjectItemCaseSensitive(t, "content");
    return cJSON_IsString(t) ? t->valuestring : NULL;
}

wgt_status wgt_gguf_writer_add_tokenizer(wgt_gguf_writer *w, const char *dir, const char *arch,
                                         const wgt_hf_config *cfg, const char **kind)
{
    char path[4096], path2[4096];
    vocab v = {.bos = -1, .eos = -1, .unk = -1, .pad = -1};
    wgt_status st;
    const char *model;
    int spm_first = !arch || !strcmp(arch, "llama");
    int has_json = exists(dir, "tokenizer.json", path, sizeof path);
    if (exists(dir, "tokenizer.model", path2, sizeof path2) && (spm_first || !has_json)) {
        model = "llama";
        st = load_spm(path2, &v);
    } else if (has_json) {
        model = "gpt2";
        st = load_tokenizer_json(path, &v);
    } else if (exists(dir, "vocab.json", path, sizeof path) && exists(dir, "merges.txt", path2, sizeof path2)) {
        model = "gpt2";
        st = load_gpt2_files(path, path2, &v);
    } else {
        return wgt_error(WGT_ERR_NOT_FOUND, "%s: no tokenizer.model, tokenizer.json or vocab.json + merges.txt", dir);
    }
    /* the embedding may have more rows than the tokenizer has tokens (Qwen pads to 151936):
     * pad the vocabulary to match, as llama.cpp's converter does */
    if (!st && cfg && cfg->vocab_size > 0 && (uint64_t)cfg->vocab_size > v.n && cfg->vocab_size < (1 << 24)) {
        uint64_t n = (uint64_t)cfg->vocab_size;
        char **t = realloc(v.tokens, (size_t)n * sizeof *t);
        if (t) v.tokens = t;
        uint64_t *l = realloc(v.lens, (size_t)n * sizeof *l);
        if (l) v.lens = l;
        int32_t *ty = realloc(v.types, (size_t)n * sizeof *ty);
        if (ty) v.types = ty;
        float *sc = v.scores ? realloc(v.scores, (size_t)n * sizeof *sc) : NULL;
        if (sc) v.scores = sc;
        if (!t || !l || !ty || (v.scores && !sc)) st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: vocabulary", dir);
        for (uint64_t i = v.n; !st && i < n; i++) {
            char pad[32];
            snprintf(pad, sizeof pad, "[PAD%llu]", (unsigned long long)i);
            v.tokens[i] = NULL;
            v.n = i + 1;
            st = set_token(&v, i, pad, strlen(pad), dir);
            v.types[i] = 5;
            if (v.scores) v.scores[i] = -1e9f;
        }
    }
    /* ids: config.json / generation_config.json first, then tokenizer_config.json's strings */
    cJSON *tc = NULL;
    if (!st && exists(dir, "tokenizer_config.json", path, sizeof path) && read_json(path, &tc) != WGT_OK) tc = NULL;
    if (cfg && cfg->n_bos) v.bos = cfg->bos_ids[0];
    if (cfg && cfg->n_eos) v.eos = cfg->eos_ids[0];
    if (cfg && cfg->pad_id >= 0) v.pad = cfg->pad_id;
    if (tc && v.bos < 0) v.bos = find_token(&v, special_str(tc, "bos_token"));
    if (tc && v.eos < 0) v.eos = find_token(&v, special_str(tc, "eos_token"));
    if (tc && v.pad < 0) v.pad = find_token(&v, special_str(tc, "pad_token"));
    if (tc && v.unk < 0) v.unk = find_token(&v, special_str(tc, "unk_token"));

    if (!st) st = wgt_gguf_writer_add_str(w, "tokenizer.ggml.model", model);
    if (!st && !strcmp(model, "gpt2")) {
        const char *pre = !arch ? "default" : !strcmp(arch, "llama") ? "llama-bpe" : !strncmp(arch, "qwen", 4) ? "qwen2" : !strcmp(arch, "gpt2") ? "gpt-2" : "default";
        st = wgt_gguf_writer_add_str(w, "tokenizer.ggml.pre", pre);
    }
    if (!st) st = wgt_gguf_writer_add_str_array(w, "tokenizer.ggml.tokens", (const char *const *)v.tokens, v.lens, v.n);
    if (!st && v.scores) st = wgt_gguf_writer_add_array(w, "tokenizer.ggml.scores", WGT_GGUF_FLOAT32, v.scores, v.n);
    if (!st) st = wgt_gguf_writer_add_array(w, "tokenizer.ggml.token_type", WGT_GGUF_INT32, v.types, v.n);
    if (!st && v.merges) st = wgt_gguf_writer_add_str_array(w, "tokenizer.ggml.merges", (const char *const *)v.merges, NULL, v.n_merges);
    struct { const char *key; int64_t id; } ids[] = {{"tokenizer.ggml.bos_token_id", v.bos}, {"tokenizer.ggml.eos_token_id", v.eos},
                                                     {"tokenizer.ggml.unknown_token_id", v.unk}, {"tokenizer.ggml.padding_token_id", v.pad}};
    for (size_t i = 0; !st && i < sizeof ids / sizeof ids[0]; i++)
        if (ids[i].id >= 0 && (uint64_t)ids[i].id < v.n) st = wgt_gguf_writer_add_u32(w, ids[i].key, (uint32_t)ids[i].id);
    if (tc) {
        const cJSON *ab = cJSON_GetObjectItemCaseSensitive(tc, "add_bos_token"), *ae = cJSON_GetObjectItemCaseSensitive(tc, "add_eos_token");
        const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(tc, "chat_template");
        if (!st && cJSON_IsBool(ab)) st = wgt_gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", cJSON_IsTrue(ab));
        if (!st && cJSON_IsBool(ae)) st = wgt_gguf_writer_add_bool(w, "tokenizer.ggml.add_eos_token", cJSON_IsTrue(ae));
        if (!st && cJSON_IsString(tmpl)) st = wgt_gguf_writer_add_str(w, "tokenizer.chat_template", tmpl->valuestring);
        cJSON_Delete(tc);
    }
    vocab_free(&v);
    if (!st && kind) *kind = model;
    return st;
}
