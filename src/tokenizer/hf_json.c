/* Loaders for Hugging Face tokenizer.json (+ tokenizer_config.json) and GPT-2's encoder.json +
 * vocab.bpe. tokenizer.json with a BPE model is byte-level (GPT-2, Llama 3, Qwen) when a
 * ByteLevel pre-tokenizer or decoder is present, else SentencePiece-style (Llama 2, Mistral:
 * Metaspace / Prepend+Replace, byte fallback), where a piece's merge rank serves as its score.
 * Anything outside the supported components is WGT_ERR_UNSUPPORTED naming it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "io/json_util.h"
#include "tokenizer/tokenizer_internal.h"

wgt_status tok_read_file(const char *path, char **data, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return wgt_error(errno == ENOENT ? WGT_ERR_NOT_FOUND : WGT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 65536 + 1 > cap) {
            cap = (n + 65536 + 1) * 2;
            char *b = realloc(buf, cap);
            if (!b) {
                free(buf);
                fclose(f);
                return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: out of memory reading the file", path);
            }
            buf = b;
        }
        size_t r = fread(buf + n, 1, 65536, f);
        n += r;
        if (r < 65536) break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        return wgt_error(WGT_ERR_IO, "%s: read error", path);
    }
    buf[n] = 0;
    *data = buf;
    *len = n;
    return WGT_OK;
}

static wgt_status parse_json_file(const char *path, cJSON **out)
{
    char *data;
    size_t len;
    wgt_status st = tok_read_file(path, &data, &len);
    if (st) return st;
    st = wgt_json_parse(data, len, path, out); /* out of memory is a status of its own, not invalid JSON */
    free(data);
    return st;
}

static int jbool(const cJSON *o, const char *key, int dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
}

static const char *jstr(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *jtype(const cJSON *o) { return cJSON_IsObject(o) ? jstr(o, "type") : NULL; }

/* A special token in tokenizer_config.json: "text" or {"content": "text", ...}. */
static const char *token_content(const cJSON *v)
{
    if (cJSON_IsString(v)) return v->valuestring;
    if (cJSON_IsObject(v)) return jstr(v, "content");
    return NULL;
}

static void set_chat_template(wgt_tokenizer *t, const cJSON *ct)
{
    const char *s = NULL;
    if (cJSON_IsString(ct)) s = ct->valuestring;
    else if (cJSON_IsArray(ct)) { /* [{"name": "default", "template": ...}, ...] */
        const cJSON *e;
        cJSON_ArrayForEach(e, ct) {
            const char *name = jstr(e, "name");
            if (!s || (name && !strcmp(name, "default"))) s = jstr(e, "template");
        }
    }
    if (s) {
        free(t->chat_template);
        t->chat_template = strdup(s);
    }
}

wgt_status tok_apply_config_json(wgt_tokenizer *t, const char *path)
{
    cJSON *c;
    wgt_status st = parse_json_file(path, &c);
    if (st) return st;
    const char *bos = token_content(cJSON_GetObjectItemCaseSensitive(c, "bos_token"));
    const char *eos = token_content(cJSON_GetObjectItemCaseSensitive(c, "eos_token"));
    const char *unk = token_content(cJSON_GetObjectItemCaseSensitive(c, "unk_token"));
    const char *pad = token_content(cJSON_GetObjectItemCaseSensitive(c, "pad_token"));
    if (bos && tok_find_text(t, bos) >= 0) t->bos = tok_find_text(t, bos);
    if (eos && tok_find_text(t, eos) >= 0) t->eos = tok_find_text(t, eos);
    if (unk && tok_find_text(t, unk) >= 0) t->unk = tok_find_text(t, unk);
    if (pad && tok_find_text(t, pad) >= 0) t->pad = tok_find_text(t, pad);
    t->add_bos = jbool(c, "add_bos_token", t->add_bos);
    t->add_eos = jbool(c, "add_eos_token", t->add_eos);
    set_chat_template(t, cJSON_GetObjectItemCaseSensitive(c, "chat_template"));
    cJSON_Delete(c);
    return WGT_OK;
}

/* ---- tokenizer.json components ---- */

static wgt_status add_split(wgt_tokenizer *t, const cJSON *p, const char *where)
{
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(p, "pattern");
    const char *re = jstr(pat, "Regex"), *lit = jstr(pat, "String");
    const char *how = jstr(p, "behavior");
    if (jbool(p, "invert", 0)) return wgt_error(WGT_ERR_UNSUPPORTED, "%s: Split pre-tokenizer with invert=true", where);
    split_behavior b;
    if (!how || !strcmp(how, "Isolated")) b = SPLIT_ISOLATED;
    else if (!strcmp(how, "Removed")) b = SPLIT_REMOVED;
    else return wgt_error(WGT_ERR_UNSUPPORTED, "%s: Split pre-tokenizer behavior '%s' (Isolated and Removed are)", where, how);
    if (re) return tok_set_split_regex(t, re, b, where);
    if (!lit) return wgt_error(WGT_ERR_FORMAT, "%s: Split pre-tokenizer without a pattern", where);
    char *q = malloc(strlen(lit) * 2 + 8);
    if (!q) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    char *o = q;
    for (const char *s = lit; *s; s++) { /* quote every ASCII punctuation character */
        if ((*s >= 0x21 && *s <= 0x2F) || (*s >= 0x3A && *s <= 0x40) || (*s >= 0x5B && *s <= 0x60) || (*s >= 0x7B && *s <= 0x7E))
            *o++ = '\\';
        *o++ = *s;
    }
    *o = 0;
    wgt_status st = tok_set_split_regex(t, q, b, where);
    free(q);
    return st;
}

static wgt_status apply_pre_tokenizer(wgt_tokenizer *t, const cJSON *p, const char *where)
{
    const char *type = jtype(p);
    if (!p || cJSON_IsNull(p)) return WGT_OK;
    if (!type) return wgt_error(WGT_ERR_FORMAT, "%s: pre_tokenizer without a type", where);
    if (!strcmp(type, "Sequence")) {
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(p, "pretokenizers")) {
            wgt_status st = apply_pre_tokenizer(t, e, where);
            if (st) return st;
        }
        return WGT_OK;
    }
    if (!strcmp(type, "Split")) return add_split(t, p, where);
    if (!strcmp(type, "ByteLevel")) {
        t->add_prefix_space = jbool(p, "add_prefix_space", 0);
        if (jbool(p, "use_regex", 1)) return tok_set_split_regex(t, TOK_RE_GPT2, SPLIT_ISOLATED, where);
        return WGT_OK;
    }
    if (!strcmp(type, "Metaspace")) {
        const char *scheme = jstr(p, "prepend_scheme");
        t->add_dummy_prefix = scheme ? strcmp(scheme, "never") != 0 : jbool(p, "add_prefix_space", 1);
        t->prefix_every_segment = scheme ? !strcmp(scheme, "always") : t->add_dummy_prefix;
        return WGT_OK;
    }
    return wgt_error(WGT_ERR_UNSUPPORTED, "%s: pre-tokenizer '%s' (Sequence, Split, ByteLevel and Metaspace are)", where, type);
}

static wgt_status apply_normalizer(wgt_tokenizer *t, const cJSON *n, const char *where)
{
    const char *type = jtype(n);
    if (!n || cJSON_IsNull(n)) return WGT_OK;
    if (!type) return wgt_error(WGT_ERR_FORMAT, "%s: normalizer without a type", where);
    if (!strcmp(type, "Sequence")) {
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(n, "normalizers")) {
            wgt_status st = apply_normalizer(t, e, where);
            if (st) return st;
        }
        return WGT_OK;
    }
    if (!strcmp(type, "NFC")) t->norm = NORM_NFC;
    else if (!strcmp(type, "NFKC")) t->norm = NORM_NFKC;
    else if (!strcmp(type, "Prepend")) t->add_dummy_prefix = t->prefix_every_segment = 1; /* SentencePiece-style: "▁" */
    else if (!strcmp(type, "Replace") && t->kind != TOK_BYTE_BPE) t->escape_ws = 1; /* " " -> "▁" */
    else return wgt_error(WGT_ERR_UNSUPPORTED, "%s: normalizer '%s' (NFC, NFKC, Sequence, Prepend, Replace are)", where, type);
    return WGT_OK;
}

/* BOS/EOS from a TemplateProcessing post-processor: special tokens before / after $A. */
static void apply_post_processor(wgt_tokenizer *t, const cJSON *p)
{
    const char *type = jtype(p);
    if (!type) return;
    if (!strcmp(type, "Sequence")) {
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(p, "processors")) apply_post_processor(t, e);
        return;
    }
    if (strcmp(type, "TemplateProcessing")) return;
    int seen_a = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(p, "single")) {
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(e, "SpecialToken");
        if (cJSON_GetObjectItemCaseSensitive(e, "Sequence")) seen_a = 1;
        const char *id = jstr(sp, "id");
        int32_t tid = id ? tok_find_text(t, id) : -1;
        if (tid < 0) continue;
        if (!seen_a) t->bos = tid, t->add_bos = 1;
        else t->eos = tid, t->add_eos = 1;
    }
}

static int has_type(const cJSON *o, const char *type)
{
    if (!cJSON_IsObject(o) && !cJSON_IsArray(o)) return 0;
    const char *ty = cJSON_IsObject(o) ? jtype(o) : NULL;
    if (ty && !strcmp(ty, type)) return 1;
    const cJSON *e;
    cJSON_ArrayForEach(e, o)
        if ((cJSON_IsObject(e) || cJSON_IsArray(e)) && has_type(e, type)) return 1;
    return 0;
}

static wgt_status load_merges(wgt_tokenizer *t, const cJSON *merges, const char *where)
{
    int32_t rank = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, merges) {
        const char *a, *b;
        size_t al, bl;
        if (cJSON_IsString(m)) {
            const char *sp = strchr(m->valuestring + (m->valuestring[0] == ' '), ' ');
            if (!sp) return wgt_error(WGT_ERR_FORMAT, "%s: merge %d '%s' has no space", where, rank, m->valuestring);
            a = m->valuestring;
            al = (size_t)(sp - a);
            b = sp + 1;
            bl = strlen(b);
        } else if (cJSON_GetArraySize(m) == 2 && cJSON_IsString(m->child) && cJSON_IsString(m->child->next)) {
            a = m->child->valuestring;
            al = strlen(a);
            b = m->child->next->valuestring;
            bl = strlen(b);
        } else {
            return wgt_error(WGT_ERR_FORMAT, "%s: merge %d is neither \"a b\" nor [\"a\", \"b\"]", where, rank);
        }
        wgt_status st;
        if (t->kind == TOK_BYTE_BPE) {
            st = tok_add_merge(t, a, al, b, bl, rank, where);
            if (st) return st;
        } else { /* SentencePiece-style: the earlier the merge, the higher the merged piece's score */
            char *ab = malloc(al + bl + 1);
            if (!ab) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
            memcpy(ab, a, al);
            memcpy(ab + al, b, bl);
            int32_t id = tok_strmap_get(&t->by_text, ab, al + bl);
            free(ab);
            if (id >= 0 && t->scores[id] == 0) t->scores[id] = -(float)rank - 1;
        }
        rank++;
    }
    return WGT_OK;
}

static wgt_status load_hf(const cJSON *j, const char *where, wgt_tokenizer **out)
{
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(j, "model");
    const char *mtype = jtype(model);
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(j, "added_tokens");
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(j, "pre_tokenizer");
    const cJSON *dec = cJSON_GetObjectItemCaseSensitive(j, "decoder");
    if (!mtype && cJSON_IsObject(vocab) && cJSON_GetObjectItemCaseSensitive(model, "merges")) mtype = "BPE";
    if (!mtype) return wgt_error(WGT_ERR_FORMAT, "%s: no model.type", where);
    tok_kind kind;
    if (!strcmp(mtype, "BPE")) kind = has_type(pre, "ByteLevel") || has_type(dec, "ByteLevel") ? TOK_BYTE_BPE : TOK_SPM_BPE;
    else if (!strcmp(mtype, "Unigram")) kind = TOK_SPM_UNIGRAM;
    else return wgt_error(WGT_ERR_UNSUPPORTED, "%s: model type '%s' (BPE and Unigram are supported)", where, mtype);
    if (kind == TOK_BYTE_BPE ? !cJSON_IsObject(vocab) : kind == TOK_SPM_BPE ? !cJSON_IsObject(vocab) : !cJSON_IsArray(vocab))
        return wgt_error(WGT_ERR_FORMAT, "%s: model.vocab is missing or of the wrong kind", where);

    int32_t n = 0;
    const cJSON *e;
    if (kind == TOK_SPM_UNIGRAM) n = cJSON_GetArraySize(vocab);
    else cJSON_ArrayForEach(e, vocab) {
        if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble > 1e8)
            return wgt_error(WGT_ERR_FORMAT, "%s: model.vocab['%s'] is not a valid id", where, e->string);
        if ((int32_t)e->valuedouble + 1 > n) n = (int32_t)e->valuedouble + 1;
    }
    cJSON_ArrayForEach(e, added) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
        if (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble > 1e8 || !jstr(e, "content"))
            return wgt_error(WGT_ERR_FORMAT, "%s: added_tokens entry without a valid id and content", where);
        if ((int32_t)id->valuedouble + 1 > n) n = (int32_t)id->valuedouble + 1;
    }
    /* ids are dense in real vocabularies (a few holes at most): a tiny file must not make us build
     * millions of placeholder tokens */
    int64_t entries = (int64_t)cJSON_GetArraySize(vocab) + cJSON_GetArraySize(added);
    if (n > entries + 1024)
        return wgt_error(WGT_ERR_FORMAT, "%s: token ids run up to %d for only %lld tokens", where, n - 1, (long long)entries);
    wgt_tokenizer *t = tok_new(kind);
    if (!t) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    wgt_status st = tok_alloc_vocab(t, n);
    t->unigram_sum_f64 = 1; /* tokenizers' Viterbi sums f64 scores */
    if (kind != TOK_BYTE_BPE) {
        t->add_dummy_prefix = 0; /* set by Metaspace / Prepend below */
        t->escape_ws = 1;
        t->byte_fallback = jbool(model, "byte_fallback", 0);
    }
    if (kind == TOK_SPM_UNIGRAM) {
        int32_t i = 0;
        cJSON_ArrayForEach(e, vocab) {
            if (st) break;
            if (cJSON_GetArraySize(e) != 2 || !cJSON_IsString(e->child) || !cJSON_IsNumber(e->child->next)) {
                st = wgt_error(WGT_ERR_FORMAT, "%s: unigram vocab entry %d is not [piece, score]", where, i);
                break;
            }
            const char *s = e->child->valuestring;
            unsigned v;
            int type = strlen(s) == 6 && sscanf(s, "<0x%2X>", &v) == 1 ? TT_BYTE : TT_NORMAL;
            st = tok_set_token(t, i, s, strlen(s), (float)e->child->next->valuedouble, type);
            i++;
        }
        const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_id");
        if (!st && cJSON_IsNumber(unk) && unk->valueint >= 0 && unk->valueint < n) {
            t->unk = unk->valueint;
            t->type[t->unk] = TT_UNKNOWN;
        }
        t->byte_fallback = jbool(model, "byte_fallback", 0);
    } else {
        cJSON_ArrayForEach(e, vocab) {
            if (st) break;
            unsigned v;
            int type = kind == TOK_SPM_BPE && strlen(e->string) == 6 && sscanf(e->string, "<0x%2X>", &v) == 1 ? TT_BYTE : TT_NORMAL;
            st = tok_set_token(t, (int32_t)e->valuedouble, e->string, strlen(e->string), 0, type);
        }
        const char *unk = jstr(model, "unk_token");
        if (!st && unk && tok_find_text(t, unk) >= 0) t->unk = tok_find_text(t, unk);
        if (!st) st = load_merges(t, cJSON_GetObjectItemCaseSensitive(model, "merges"), where);
        if (!st && jbool(model, "ignore_merges", 0)) t->ignore_merges = 1;
        const char *prefix = jstr(model, "continuing_subword_prefix"), *suffix = jstr(model, "end_of_word_suffix");
        if (!st && ((prefix && *prefix) || (suffix && *suffix)))
            st = wgt_error(WGT_ERR_UNSUPPORTED, "%s: BPE continuing_subword_prefix / end_of_word_suffix", where);
    }
    cJSON_ArrayForEach(e, added) {
        if (st) break;
        const char *c = jstr(e, "content");
        st = tok_add_added(t, c, strlen(c), cJSON_GetObjectItemCaseSensitive(e, "id")->valueint, jbool(e, "special", 0),
                           jbool(e, "lstrip", 0), jbool(e, "rstrip", 0), jbool(e, "single_word", 0), jbool(e, "normalized", 0));
    }
    if (!st) st = apply_normalizer(t, cJSON_GetObjectItemCaseSensitive(j, "normalizer"), where);
    if (!st) st = apply_pre_tokenizer(t, pre, where);
    if (!st) apply_post_processor(t, cJSON_GetObjectItemCaseSensitive(j, "post_processor"));
    if (!st && t->unk >= 0 && t->type[t->unk] == TT_NORMAL) t->type[t->unk] = TT_UNKNOWN;
    if (!st) st = tok_finish(t, where);
    if (st) {
        wgt_tokenizer_free(t);
        return st;
    }
    *out = t;
    return WGT_OK;
}

wgt_status tok_load_hf_json(const char *path, const char *config_path, wgt_tokenizer **out)
{
    cJSON *j;
    wgt_status st = parse_json_file(path, &j);
    if (st) return st;
    st = load_hf(j, path, out);
    cJSON_Delete(j);
    if (!st && config_path) {
        st = tok_apply_config_json(*out, config_path);
        if (!st) st = tok_finish(*out, config_path); /* BOS/EOS may have changed */
        if (st) {
            wgt_tokenizer_free(*out);
            *out = NULL;
        }
    }
    return st;
}

wgt_status tok_load_gpt2_files(const char *encoder_json, const char *vocab_bpe, wgt_tokenizer **out)
{
    cJSON *enc;
    wgt_status st = parse_json_file(encoder_json, &enc);
    if (st) return st;
    char *bpe;
    size_t bpe_len;
    if ((st = tok_read_file(vocab_bpe, &bpe, &bpe_len))) {
        cJSON_Delete(enc);
        return st;
    }
    /* Build the equivalent tokenizer.json in memory: the vocabulary, the merges, the
     * ByteLevel pre-tokenizer with GPT-2's regex and <|endoftext|> as a special token. */
    cJSON *j = cJSON_CreateObject(), *model = cJSON_AddObjectToObject(j, "model"), *merges = NULL;
    cJSON *pre = cJSON_AddObjectToObject(j, "pre_tokenizer");
    if (model && pre) {
        cJSON_AddStringToObject(model, "type", "BPE");
        cJSON_AddItemReferenceToObject(model, "vocab", enc);
        merges = cJSON_AddArrayToObject(model, "merges");
        cJSON_AddStringToObject(pre, "type", "ByteLevel");
    }
    int line_no = 0;
    for (char *line = bpe, *next; merges && line < bpe + bpe_len; line = next) {
        next = strchr(line, '\n');
        next = next ? next + 1 : bpe + bpe_len;
        size_t l = (size_t)(next - line);
        while (l && (line[l - 1] == '\n' || line[l - 1] == '\r')) l--;
        line[l] = 0;
        if (line_no++ == 0 && !strncmp(line, "#version", 8)) continue;
        if (l) cJSON_AddItemToArray(merges, cJSON_CreateString(line));
    }
    free(bpe);
    const cJSON *eot = cJSON_GetObjectItemCaseSensitive(enc, "<|endoftext|>");
    int32_t eot_id = cJSON_IsNumber(eot) && eot->valuedouble >= 0 && eot->valuedouble < 1e8 ? (int32_t)eot->valuedouble : -1;
    if (eot_id >= 0) {
        cJSON *added = cJSON_AddArrayToObject(j, "added_tokens"), *a = cJSON_CreateObject();
        cJSON_AddNumberToObject(a, "id", eot->valuedouble);
        cJSON_AddStringToObject(a, "content", "<|endoftext|>");
        cJSON_AddBoolToObject(a, "special", 1);
        cJSON_AddItemToArray(added, a);
    }
    st = merges ? load_hf(j, encoder_json, out) : wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    cJSON_Delete(j);
    cJSON_Delete(enc);
    if (!st && eot_id >= 0) {
        (*out)->bos = (*out)->eos = eot_id;
        st = tok_finish(*out, encoder_json);
    }
    return st;
}
