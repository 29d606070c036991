/* The tokenizer object: building it (shared by every loader) and the encode pipeline
 * (added tokens -> normalizer -> pre-tokenizer -> model -> BOS/EOS). Decoding is decode.c. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer/tokenizer_internal.h"

/* ---- GPT-2's byte <-> code point table: printable Latin-1 bytes stand for themselves, the
 * others are moved to 256 and up, in byte order. */

static int byte_is_printable(int b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174); }

uint32_t tok_byte_to_cp(uint8_t b)
{
    if (byte_is_printable(b)) return b;
    uint32_t n = 0;
    for (int i = 0; i < b; i++) n += !byte_is_printable(i);
    return 256 + n;
}

static int16_t cp_to_byte_table[512];
static pthread_once_t cp_to_byte_once = PTHREAD_ONCE_INIT;

static void cp_to_byte_init(void)
{
    for (int i = 0; i < 512; i++) cp_to_byte_table[i] = -1;
    for (int b = 0; b < 256; b++) cp_to_byte_table[tok_byte_to_cp((uint8_t)b)] = (int16_t)b;
}

int tok_cp_to_byte(uint32_t cp)
{
    pthread_once(&cp_to_byte_once, cp_to_byte_init);
    return cp < 512 ? cp_to_byte_table[cp] : -1;
}

/* ---- building ---- */

wgt_tokenizer *tok_new(tok_kind kind)
{
    wgt_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->kind = kind;
    t->bos = t->eos = t->unk = t->pad = -1;
    t->add_dummy_prefix = t->escape_ws = 1;
    for (int i = 0; i < 256; i++) t->byte_id[i] = t->added_first[i] = -1;
    return t;
}

wgt_status tok_alloc_vocab(wgt_tokenizer *t, int32_t n)
{
    if (n <= 0) return wgt_error(WGT_ERR_FORMAT, "tokenizer: the vocabulary is empty");
    t->n_vocab = n;
    t->text = calloc((size_t)n, sizeof *t->text);
    t->text_len = calloc((size_t)n, sizeof *t->text_len);
    t->piece = calloc((size_t)n, sizeof *t->piece);
    t->piece_len = calloc((size_t)n, sizeof *t->piece_len);
    t->scores = calloc((size_t)n, sizeof *t->scores);
    t->type = calloc((size_t)n, sizeof *t->type);
    if (!t->text || !t->text_len || !t->piece || !t->piece_len || !t->scores || !t->type)
        return wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory for %d tokens", n);
    return WGT_OK;
}

static char *dup_bytes(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

/* The bytes a byte-level vocabulary entry stands for; NULL if it is not in GPT-2's alphabet
 * (then the entry is taken literally) or, with *oom set, if memory ran out: taking the entry
 * literally then would lose its byte token and misreport the vocabulary as broken. */
static char *byte_level_unmap(const char *s, size_t n, size_t *out_len, int *oom)
{
    char *p = malloc(n + 1);
    if (!p) {
        *oom = 1;
        return NULL;
    }
    size_t k = 0;
    for (utf8proc_ssize_t i = 0; i < (utf8proc_ssize_t)n;) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t l = utf8proc_iterate((const uint8_t *)s + i, (utf8proc_ssize_t)n - i, &cp);
        int b = l > 0 ? tok_cp_to_byte((uint32_t)cp) : -1;
        if (b < 0) {
            free(p);
            return NULL;
        }
        p[k++] = (char)b;
        i += l;
    }
    p[k] = 0;
    *out_len = k;
    return p;
}

wgt_status tok_set_token(wgt_tokenizer *t, int32_t id, const char *text, size_t len, float score, int type)
{
    if (id < 0 || id >= t->n_vocab)
        return wgt_error(WGT_ERR_FORMAT, "tokenizer: token id %d is outside the vocabulary (%d)", id, t->n_vocab);
    free(t->text[id]);
    free(t->piece[id]);
    t->piece[id] = NULL;
    if (!(t->text[id] = dup_bytes(text, len))) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    t->text_len[id] = (uint32_t)len;
    t->scores[id] = score;
    t->type[id] = (uint8_t)(type >= TT_NORMAL && type <= TT_BYTE ? type : TT_NORMAL);
    size_t plen = len;
    char *piece = NULL;
    int oom = 0;
    if (t->kind == TOK_BYTE_BPE) {
        if (t->type[id] == TT_NORMAL) piece = byte_level_unmap(text, len, &plen, &oom);
    } else if (t->type[id] == TT_BYTE) {
        unsigned v;
        if (len == 6 && sscanf(t->text[id], "<0x%2X>", &v) == 1) {
            piece = dup_bytes((const char *)&(uint8_t){(uint8_t)v}, 1);
            oom = !piece;
            plen = 1;
            t->byte_id[v] = id;
        }
    } else if (t->type[id] == TT_NORMAL || t->type[id] == TT_USER_DEFINED || t->type[id] == TT_UNUSED) {
        /* U+2581 decodes to a space. */
        piece = malloc(len + 1);
        oom = !piece;
        if (piece) {
            plen = 0;
            for (size_t i = 0; i < len; i++) {
                if (i + 2 < len && (uint8_t)text[i] == 0xE2 && (uint8_t)text[i + 1] == 0x96 && (uint8_t)text[i + 2] == 0x81) {
                    piece[plen++] = ' ';
                    i += 2;
                } else {
                    piece[plen++] = text[i];
                }
            }
            piece[plen] = 0;
        }
    }
    if (!piece && !oom) {
        plen = len;
        piece = dup_bytes(text, len);
    }
    if (!piece) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    t->piece[id] = piece;
    t->piece_len[id] = (uint32_t)plen;
    int usable = t->kind == TOK_BYTE_BPE ? t->type[id] == TT_NORMAL
                                         : (t->type[id] == TT_NORMAL || t->type[id] == TT_USER_DEFINED);
    if (t->kind == TOK_BYTE_BPE && usable && plen == 1) t->byte_id[(uint8_t)piece[0]] = id;
    if (usable && tok_strmap_put(&t->vocab, t->kind == TOK_BYTE_BPE ? piece : text,
                             t->kind == TOK_BYTE_BPE ? plen : len, id))
        return wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    if (tok_strmap_get(&t->by_text, text, len) < 0 && tok_strmap_put(&t->by_text, text, len, id))
        return wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    return WGT_OK;
}

wgt_status tok_add_added(wgt_tokenizer *t, const char *content, size_t len, int32_t id, int special,
                         int lstrip, int rstrip, int single_word, int normalized)
{
    if (!len) return WGT_OK; /* an empty added token can never match */
    if (id < 0 || id >= t->n_vocab)
        return wgt_error(WGT_ERR_FORMAT, "tokenizer: added token id %d is outside the vocabulary (%d)", id, t->n_vocab);
    added_token *a = realloc(t->added, (size_t)(t->n_added + 1) * sizeof *a);
    if (!a) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    t->added = a;
    a[t->n_added] = (added_token){dup_bytes(content, len), len, id, special, lstrip, rstrip, single_word, normalized};
    if (!a[t->n_added].content) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    t->n_added++;
    /* An added token decodes to its content, whatever the vocabulary entry says, and is never
     * produced by the model's merges unless it was also an ordinary vocabulary entry. */
    if (!t->text[id]) {
        if (!(t->text[id] = dup_bytes(content, len))) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
        t->text_len[id] = (uint32_t)len;
    }
    free(t->piece[id]);
    if (!(t->piece[id] = dup_bytes(content, len))) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    t->piece_len[id] = (uint32_t)len;
    t->type[id] = special ? TT_CONTROL : TT_USER_DEFINED;
    if (tok_strmap_put(&t->by_text, content, len, id)) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    return WGT_OK;
}

wgt_status tok_add_merge(wgt_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen,
                         int32_t rank, const char *where)
{
    size_t la, lb;
    int oom = 0;
    char *pa = byte_level_unmap(a, alen, &la, &oom), *pb = byte_level_unmap(b, blen, &lb, &oom);
    char *ab = pa && pb ? malloc(la + lb + 1) : NULL;
    wgt_status st = WGT_OK;
    if (oom || (pa && pb && !ab)) {
        st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: out of memory at merge %d", where, rank);
        goto done;
    }
    if (!pa || !pb) {
        st = wgt_error(WGT_ERR_FORMAT, "%s: merge %d ('%.*s' '%.*s') is not in GPT-2's byte alphabet", where, rank,
                       (int)alen, a, (int)blen, b);
        goto done;
    }
    memcpy(ab, pa, la);
    memcpy(ab + la, pb, lb);
    int32_t ia = tok_strmap_get(&t->vocab, pa, la), ib = tok_strmap_get(&t->vocab, pb, lb), im = tok_strmap_get(&t->vocab, ab, la + lb);
    /* Hugging Face refuses such a file; a merge that can never apply is harmless, so skip it. */
    if (ia >= 0 && ib >= 0 && im >= 0 && tok_pairmap_put(&t->merges, ia, ib, rank, im))
        st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
done:
    free(pa);
    free(pb);
    free(ab);
    return st;
}

wgt_status tok_set_split_regex(wgt_tokenizer *t, const char *pattern, split_behavior how, const char *where)
{
    if (t->n_split >= 4) return wgt_error(WGT_ERR_UNSUPPORTED, "%s: more than 4 Split pre-tokenizers", where);
    int err;
    PCRE2_SIZE at;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &at, NULL);
    if (!re) {
        char msg[256];
        pcre2_get_error_message(err, (PCRE2_UCHAR *)msg, sizeof msg);
        return wgt_error(WGT_ERR_UNSUPPORTED, "%s: pre-tokenizer regex does not compile at offset %zu: %s",
                         where, (size_t)at, msg);
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* failure leaves the interpreter: slower, same result */
    t->split_re[t->n_split] = re;
    t->split_how[t->n_split++] = how;
    return WGT_OK;
}

int32_t tok_find_text(const wgt_tokenizer *t, const char *s) { return s ? tok_strmap_get(&t->by_text, s, strlen(s)) : -1; }

static int added_cmp(const void *x, const void *y)
{
    const added_token *a = x, *b = y;
    int fa = (uint8_t)a->content[0], fb = (uint8_t)b->content[0];
    if (fa != fb) return fa - fb;
    return a->len < b->len ? 1 : a->len > b->len ? -1 : 0;
}

static const char *const eog_names[] = {"<|endoftext|>", "<|im_end|>", "<|eot_id|>", "<|end_of_text|>", "<|eom_id|>",
                                        "</s>", "<|end|>", "<end_of_turn>", "<|return|>"};

wgt_status tok_finish(wgt_tokenizer *t, const char *where)
{
    for (int32_t i = 0; i < t->n_vocab; i++)
        if (!t->text[i]) { /* a hole in the ids: decodes to nothing */
            wgt_status st = tok_set_token(t, i, "", 0, 0, TT_UNUSED);
            if (st) return st;
        }
    if (t->kind == TOK_BYTE_BPE)
        for (int b = 0; b < 256; b++)
            if (t->byte_id[b] < 0 && t->unk < 0)
                return wgt_error(WGT_ERR_FORMAT, "%s: byte-level vocabulary has no token for byte 0x%02X and no unknown token",
                                 where, b);
    if (t->n_added) qsort(t->added, (size_t)t->n_added, sizeof *t->added, added_cmp);
    for (int i = t->n_added - 1; i >= 0; i--) t->added_first[(uint8_t)t->added[i].content[0]] = i;
    if (t->kind != TOK_BYTE_BPE) {
        t->min_score = 0;
        t->split_at_space = 1;
        for (int32_t i = 0; i < t->n_vocab; i++) {
            if (t->type[i] != TT_NORMAL && t->type[i] != TT_USER_DEFINED) continue;
            if (t->scores[i] < t->min_score) t->min_score = t->scores[i];
            const char *s = t->text[i];
            int chars = 0;
            for (uint32_t k = 0; k < t->text_len[i]; k++) {
                chars += ((uint8_t)s[k] & 0xC0) != 0x80;
                if (k >= 1 && k + 2 < t->text_len[i] && (uint8_t)s[k] == 0xE2 && (uint8_t)s[k + 1] == 0x96 &&
                    (uint8_t)s[k + 2] == 0x81 && !((uint8_t)s[k - 1] == 0x81 && k >= 3 && (uint8_t)s[k - 3] == 0xE2))
                    t->split_at_space = 0;
            }
            if (chars > t->max_piece_chars) t->max_piece_chars = chars;
        }
    }
    free(t->eog);
    t->eog = calloc(sizeof eog_names / sizeof eog_names[0] + 1, sizeof *t->eog);
    if (!t->eog) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    t->n_eog = 0;
    if (t->eos >= 0) t->eog[t->n_eog++] = t->eos;
    for (size_t i = 0; i < sizeof eog_names / sizeof eog_names[0]; i++) {
        int32_t id = tok_find_text(t, eog_names[i]);
        if (id >= 0 && id != t->eos && (t->type[id] == TT_CONTROL)) t->eog[t->n_eog++] = id;
    }
    return WGT_OK;
}

void wgt_tokenizer_free(wgt_tokenizer *t)
{
    if (!t) return;
    for (int32_t i = 0; i < t->n_vocab; i++) {
        if (t->text) free(t->text[i]);
        if (t->piece) free(t->piece[i]);
    }
    free(t->text);
    free(t->text_len);
    free(t->piece);
    free(t->piece_len);
    free(t->scores);
    free(t->type);
    tok_strmap_free(&t->vocab);
    tok_strmap_free(&t->by_text);
    tok_pairmap_free(&t->merges);
    for (int i = 0; i < t->n_split; i++) pcre2_code_free(t->split_re[i]);
    pcre2_match_data_free(t->match);
    for (int i = 0; i < t->n_added; i++) free(t->added[i].content);
    free(t->added);
    free(t->eog);
    free(t->chat_template);
    tok_wordcache_free(&t->cache);
    free(t);
}

/* ---- encoding ---- */

const char TOK_RE_GPT2[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const char TOK_RE_LLAMA3[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char TOK_RE_QWEN2[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

typedef struct enc_ctx { wgt_tokenizer *t; idvec *out; pcre2_match_data *md; } enc_ctx;

static void split_level(enc_ctx *c, int level, const char *s, size_t n)
{
    wgt_tokenizer *t = c->t;
    if (!n) return;
    if (level == t->n_split) {
        tok_bpe_encode_word(t, s, n, c->out);
        return;
    }
    pcre2_code *re = t->split_re[level];
    size_t pos = 0, gap = 0;
    while (pos < n) {
        int rc = pcre2_match(re, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK, c->md, NULL);
        if (rc < 0) break;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(c->md);
        size_t ms = ov[0], me = ov[1];
        if (me == ms) { /* an empty match: step over one character */
            pos = ms + 1;
            while (pos < n && ((uint8_t)s[pos] & 0xC0) == 0x80) pos++;
            continue;
        }
        if (ms > gap) split_level(c, level + 1, s + gap, ms - gap);
        if (t->split_how[level] != SPLIT_REMOVED) split_level(c, level + 1, s + ms, me - ms);
        gap = pos = me;
    }
    if (n > gap) split_level(c, level + 1, s + gap, n - gap);
}

/* Well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF). */
static int utf8_valid(const char *str, size_t n)
{
    const uint8_t *s = (const uint8_t *)str;
    for (size_t i = 0; i < n;) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!k || i + k > n) return 0;
        uint32_t cp = c & (0x7F >> k);
        for (size_t j = 1; j < k; j++) {
            if ((s[i + j] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (s[i + j] & 0x3F);
        }
        if ((k == 2 && cp < 0x80) || (k == 3 && cp < 0x800) || (k == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += k;
    }
    return 1;
}

static int is_ascii(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((uint8_t)s[i] >= 0x80) return 0;
    return 1;
}

/* SentencePiece's nmt_nfkc rules on top of NFKC (its normalizer builder): these code points
 * become a space, these control characters vanish, and the full-width tilde is kept. Returns
 * 1 and the replacement (" " or "") for a rule, 0 otherwise. */
static int nmt_rule(int32_t cp, const char **repl)
{
    static const int32_t to_space[] = {0x09, 0x0A, 0x0C, 0x0D, 0x1680, 0x200B, 0x200C, 0x200E, 0x200F,
                                       0x2028, 0x2029, 0x2581, 0xFEFF, 0xFFFD};
    for (size_t i = 0; i < sizeof to_space / sizeof to_space[0]; i++)
        if (cp == to_space[i]) {
            *repl = " ";
            return 1;
        }
    if ((cp >= 0x01 && cp <= 0x08) || cp == 0x0B || (cp >= 0x0E && cp <= 0x1F) || cp == 0x7F || cp == 0x8F || cp == 0x9F) {
        *repl = "";
        return 1;
    }
    return 0;
}

/* Append bytes to a growing buffer; 0, or -1 when out of memory. */
static int buf_put(char **buf, size_t *k, size_t *cap, const char *s, size_t n)
{
    if (*k + n + 1 > *cap) {
        size_t c = (*k + n + 1) * 2;
        char *p = realloc(*buf, c);
        if (!p) return -1;
        *buf = p;
        *cap = c;
    }
    memcpy(*buf + *k, s, n);
    *k += n;
    return 0;
}

/* NFC / NFKC (/ nmt_nfkc) through utf8proc, applied only to the islands of non-ASCII text (each
 * with the ASCII character before it, which a combining mark may compose with): ASCII
 * characters are starters that nothing before them changes, so the rest is already normalised.
 * Returns malloc'd text, or NULL (out of memory). */
static char *normalize(tok_norm norm, const char *s, size_t n, size_t *out_len)
{
    int opts = UTF8PROC_STABLE | UTF8PROC_COMPOSE | (norm != NORM_NFC ? UTF8PROC_COMPAT : 0);
    int nmt = norm == NORM_NMT_NFKC;
    size_t cap = n * 2 + 16, k = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    for (size_t i = 0; i < n;) {
        size_t run = i; /* ASCII that no rule touches is copied as it is */
        while (run < n && (uint8_t)s[run] < 0x80 && (!nmt || ((uint8_t)s[run] >= 0x20 && s[run] != 0x7F))) run++;
        if (run > i) {
            if (buf_put(&out, &k, &cap, s + i, run - i)) goto oom;
            i = run;
            continue;
        }
        const char *repl;
        utf8proc_int32_t cp;
        utf8proc_ssize_t l = utf8proc_iterate((const uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &cp);
        if (l <= 0) l = 1, cp = (uint8_t)s[i];
        if (nmt && (nmt_rule(cp, &repl) || cp == 0xFF5E)) {
            if (buf_put(&out, &k, &cap, cp == 0xFF5E ? s + i : repl, cp == 0xFF5E ? (size_t)l : strlen(repl))) goto oom;
            i += (size_t)l;
            continue;
        }
        if (cp < 0x80) {
            if (buf_put(&out, &k, &cap, s + i, 1)) goto oom;
            i++;
            continue;
        }
        size_t start = i, end = i;
        if (start > 0 && k > 0 && (uint8_t)s[start - 1] < 0x7F && (uint8_t)s[start - 1] >= 0x20) start--, k--;
        while (end < n && (uint8_t)s[end] >= 0x80) { /* the island stops before a rule's code point */
            utf8proc_ssize_t m = utf8proc_iterate((const uint8_t *)s + end, (utf8proc_ssize_t)(n - end), &cp);
            if (m <= 0) m = 1;
            if (nmt && (nmt_rule(cp, &repl) || cp == 0xFF5E)) break;
            end += (size_t)m;
        }
        utf8proc_uint8_t *res = NULL;
        utf8proc_ssize_t r = utf8proc_map((const utf8proc_uint8_t *)s + start, (utf8proc_ssize_t)(end - start), &res,
                                          (utf8proc_option_t)opts);
        if (r < 0 || buf_put(&out, &k, &cap, (const char *)res, (size_t)r)) {
            free(res);
            goto oom;
        }
        free(res);
        i = end;
    }
    *out_len = k;
    return out;
oom:
    free(out);
    return NULL;
}

static wgt_status encode_segment(enc_ctx *c, const char *s, size_t n, int at_text_start)
{
    wgt_tokenizer *t = c->t;
    char *norm = NULL;
    size_t nn = n;
    if (t->norm != NORM_NONE && (t->norm == NORM_NMT_NFKC || !is_ascii(s, n))) {
        if (!(norm = normalize(t->norm, s, n, &nn))) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: normalisation failed");
        s = norm;
        n = nn;
    }
    if (t->kind == TOK_BYTE_BPE) {
        if (t->add_prefix_space && n && s[0] != ' ') {
            char *p = malloc(n + 1);
            if (!p) {
                free(norm);
                return wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
            }
            p[0] = ' ';
            memcpy(p + 1, s, n);
            free(norm);
            s = norm = p;
            n++;
        }
        split_level(c, 0, s, n);
    } else {
        /* SentencePiece's normaliser: optional whitespace squeeze, the dummy prefix, spaces as U+2581. */
        char *buf = malloc(n * 3 + 4);
        if (!buf) {
            free(norm);
            return wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
        }
        size_t k = 0, i = 0, end = n;
        if (t->remove_extra_ws) {
            while (i < end && s[i] == ' ') i++;
            while (end > i && s[end - 1] == ' ') end--;
        }
        if (end > i && t->add_dummy_prefix && (at_text_start || t->prefix_every_segment)) {
            memcpy(buf, t->escape_ws ? "\xE2\x96\x81" : " ", t->escape_ws ? 3 : 1);
            k = t->escape_ws ? 3 : 1;
        }
        for (; i < end; i++) {
            if (s[i] == ' ') {
                if (t->remove_extra_ws && i > 0 && s[i - 1] == ' ') continue;
                if (t->escape_ws) {
                    memcpy(buf + k, "\xE2\x96\x81", 3);
                    k += 3;
                    continue;
                }
            }
            buf[k++] = s[i];
        }
        tok_spm_encode_text(t, buf, k, c->out);
        free(buf);
    }
    free(norm);
    return c->out->oom ? wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory while encoding") : WGT_OK;
}

static int is_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' || ch == '\f'; }

/* Hugging Face's single_word test: is the character a regex \w (letter, mark, digit, connector)? */
static int is_word_cp(int32_t cp)
{
    if (cp < 0x80) return cp == '_' || (cp >= '0' && cp <= '9') || ((cp | 32) >= 'a' && (cp | 32) <= 'z');
    utf8proc_category_t c = utf8proc_category(cp);
    return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_ME) || c == UTF8PROC_CATEGORY_ND ||
           c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_PC;
}

static int word_before(const char *s, size_t pos)
{
    if (pos == 0) return 0;
    size_t k = pos - 1;
    while (k > 0 && ((uint8_t)s[k] & 0xC0) == 0x80) k--;
    utf8proc_int32_t cp;
    return utf8proc_iterate((const uint8_t *)s + k, (utf8proc_ssize_t)(pos - k), &cp) > 0 && is_word_cp(cp);
}

static int word_after(const char *s, size_t pos, size_t n)
{
    utf8proc_int32_t cp;
    return pos < n && utf8proc_iterate((const uint8_t *)s + pos, (utf8proc_ssize_t)(n - pos), &cp) > 0 && is_word_cp(cp);
}

/* The longest added token that starts at s[pos] and may match there; NULL if none. */
static const added_token *match_added(const wgt_tokenizer *t, const char *s, size_t n, size_t pos, int parse_special)
{
    int i = t->added_first[(uint8_t)s[pos]];
    if (i < 0) return NULL;
    for (; i < t->n_added && t->added[i].content[0] == s[pos]; i++) {
        const added_token *a = &t->added[i];
        if (a->special && !parse_special) continue;
        if (a->len > n - pos || memcmp(s + pos, a->content, a->len)) continue;
        if (a->single_word && (word_before(s, pos) || word_after(s, pos + a->len, n))) continue;
        return a;
    }
    return NULL;
}

wgt_status wgt_tokenizer_encode(wgt_tokenizer *t, const char *text, size_t len, unsigned flags, int32_t **ids,
                                size_t *n_ids)
{
    if (!t || !ids || !n_ids || (!text && len)) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_tokenizer_encode: NULL argument");
    *ids = NULL;
    *n_ids = 0;
    if (!text) text = "";
    if (len == (size_t)-1) len = strlen(text);
    if (!utf8_valid(text, len)) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_tokenizer_encode: the text is not valid UTF-8");
    idvec out = {0};
    enc_ctx c = {t, &out, NULL};
    wgt_status st = WGT_OK;
    if (t->kind == TOK_BYTE_BPE && !t->match && !(t->match = pcre2_match_data_create(4, NULL)))
        return wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    c.md = t->match;
    if ((flags & WGT_TOKENIZE_ADD_SPECIAL) && t->add_bos && t->bos >= 0) tok_idvec_push(&out, t->bos);
    int parse_special = (flags & WGT_TOKENIZE_PARSE_SPECIAL) != 0;
    size_t seg = 0;
    for (size_t pos = 0; pos < len && !st;) {
        const added_token *a = t->n_added ? match_added(t, text, len, pos, parse_special) : NULL;
        if (!a) {
            pos++;
            continue;
        }
        size_t ms = pos, me = pos + a->len;
        if (a->lstrip)
            while (ms > seg && is_space(text[ms - 1])) ms--;
        if (a->rstrip)
            while (me < len && is_space(text[me])) me++;
        if (ms > seg) st = encode_segment(&c, text + seg, ms - seg, seg == 0);
        tok_idvec_push(&out, a->id);
        pos = seg = me;
    }
    if (!st && len > seg) st = encode_segment(&c, text + seg, len - seg, seg == 0);
    if (!st && (flags & WGT_TOKENIZE_ADD_SPECIAL) && t->add_eos && t->eos >= 0) tok_idvec_push(&out, t->eos);
    if (!st && out.oom) st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory while encoding");
    if (st) {
        free(out.v);
        return st;
    }
    *ids = out.v ? out.v : malloc(sizeof(int32_t));
    *n_ids = out.n;
    return *ids ? WGT_OK : wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
}
