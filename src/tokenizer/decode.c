/* Decoding: ids to text, all at once or streamed (a UTF-8 sequence split across tokens is held
 * back until it completes), and the per-token queries. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

/* ---- decoding ---- */

static int is_special(const wgt_tokenizer *t, int32_t id) { return t->type[id] == TT_CONTROL || t->type[id] == TT_UNKNOWN; }

/* The bytes id adds to the output, given whether ordinary text was emitted before it. */
static void piece_of(const wgt_tokenizer *t, int32_t id, int at_start, const char **p, size_t *n)
{
    *p = t->piece[id];
    *n = t->piece_len[id];
    if (t->kind != TOK_BYTE_BPE && at_start && t->add_dummy_prefix && *n && (*p)[0] == ' ' &&
        (t->type[id] == TT_NORMAL || t->type[id] == TT_USER_DEFINED)) {
        (*p)++;
        (*n)--;
    }
}

wgt_status wgt_tokenizer_decode(const wgt_tokenizer *t, const int32_t *ids, size_t n_ids, int skip_special, char **text,
                                size_t *len)
{
    if (!t || !text || (!ids && n_ids)) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_tokenizer_decode: NULL argument");
    *text = NULL;
    size_t total = 0;
    for (size_t i = 0; i < n_ids; i++) {
        if (ids[i] < 0 || ids[i] >= t->n_vocab)
            return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_tokenizer_decode: id %d at position %zu is outside the vocabulary (0..%d)",
                             ids[i], i, t->n_vocab - 1);
        total += t->piece_len[ids[i]];
    }
    char *out = malloc(total + 1);
    if (!out) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    size_t k = 0;
    int at_start = 1;
    for (size_t i = 0; i < n_ids; i++) {
        if (skip_special && is_special(t, ids[i])) continue;
        const char *p;
        size_t n;
        piece_of(t, ids[i], at_start, &p, &n);
        if (!is_special(t, ids[i])) at_start = 0;
        memcpy(out + k, p, n);
        k += n;
    }
    out[k] = 0;
    *text = out;
    if (len) *len = k;
    return WGT_OK;
}

struct wgt_detokenizer {
    const wgt_tokenizer *t;
    int skip_special, at_start;
    char *buf; size_t n, cap;  /* bytes held back (an incomplete UTF-8 sequence) + the output */
    size_t held;
};

wgt_status wgt_detokenizer_create(const wgt_tokenizer *t, int skip_special, wgt_detokenizer **out)
{
    if (!t || !out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_detokenizer_create: NULL argument");
    wgt_detokenizer *d = calloc(1, sizeof *d);
    if (!d) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
    d->t = t;
    d->skip_special = skip_special;
    d->at_start = 1;
    *out = d;
    return WGT_OK;
}

/* Length of the prefix of s that does not end inside a UTF-8 sequence still waiting for bytes. */
static size_t utf8_complete_prefix(const char *s, size_t n)
{
    for (size_t back = 1; back <= 4 && back <= n; back++) {
        uint8_t c = (uint8_t)s[n - back];
        if (c < 0x80) return n;
        if (c >= 0xC0) {
            size_t need = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
            return need > back ? n - back : n;
        }
    }
    return n;
}

wgt_status wgt_detokenizer_push(wgt_detokenizer *d, int32_t id, const char **text, size_t *len)
{
    if (!d || !text || !len) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_detokenizer_push: NULL argument");
    const wgt_tokenizer *t = d->t;
    if (id < 0 || id >= t->n_vocab)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_detokenizer_push: id %d is outside the vocabulary (0..%d)", id, t->n_vocab - 1);
    /* Drop what was handed out last time; keep what was held. */
    if (d->held) memmove(d->buf, d->buf + d->n - d->held, d->held);
    d->n = d->held;
    if (!(d->skip_special && is_special(t, id))) {
        const char *p;
        size_t n;
        piece_of(t, id, d->at_start, &p, &n);
        if (!is_special(t, id)) d->at_start = 0;
        if (d->n + n + 4 > d->cap) {
            size_t cap = (d->n + n + 4) * 2;
            char *b = realloc(d->buf, cap);
            if (!b) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
            d->buf = b;
            d->cap = cap;
        }
        memcpy(d->buf + d->n, p, n);
        d->n += n;
    }
    size_t ready = utf8_complete_prefix(d->buf, d->n);
    d->held = d->n - ready;
    *text = d->buf ? d->buf : "";
    *len = ready;
    return WGT_OK;
}

wgt_status wgt_detokenizer_flush(wgt_detokenizer *d, const char **text, size_t *len)
{
    if (!d || !text || !len) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_detokenizer_flush: NULL argument");
    if (d->held) memmove(d->buf, d->buf + d->n - d->held, d->held);
    d->n = d->held;
    if (d->held) {
        if (d->cap < 8) {
            char *b = realloc(d->buf, 8);
            if (!b) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "tokenizer: out of memory");
            d->buf = b;
            d->cap = 8;
        }
        memcpy(d->buf, "\xEF\xBF\xBD", 3); /* U+FFFD for the sequence that never completed */
        d->n = 3;
    }
    d->held = 0;
    *text = d->buf ? d->buf : "";
    *len = d->n;
    d->n = 0;
    return WGT_OK;
}

void wgt_detokenizer_free(wgt_detokenizer *d)
{
    if (!d) return;
    free(d->buf);
    free(d);
}

/* ---- queries ---- */

wgt_status wgt_tokenizer_token_to_piece(const wgt_tokenizer *t, int32_t id, const char **piece, size_t *len)
{
    if (!t || !piece || !len) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_tokenizer_token_to_piece: NULL argument");
    if (id < 0 || id >= t->n_vocab)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_tokenizer_token_to_piece: id %d is outside the vocabulary (0..%d)", id,
                         t->n_vocab - 1);
    *piece = t->piece[id];
    *len = t->piece_len[id];
    return WGT_OK;
}

const char *wgt_tokenizer_token_text(const wgt_tokenizer *t, int32_t id)
{
    return t && id >= 0 && id < t->n_vocab ? t->text[id] : NULL;
}

int32_t wgt_tokenizer_token_id(const wgt_tokenizer *t, const char *text) { return t ? tok_find_text(t, text) : -1; }
int32_t wgt_tokenizer_vocab_size(const wgt_tokenizer *t) { return t ? t->n_vocab : 0; }
int32_t wgt_tokenizer_bos(const wgt_tokenizer *t) { return t ? t->bos : -1; }
int32_t wgt_tokenizer_eos(const wgt_tokenizer *t) { return t ? t->eos : -1; }

int wgt_tokenizer_is_special(const wgt_tokenizer *t, int32_t id)
{
    return t && id >= 0 && id < t->n_vocab && is_special(t, id);
}

int wgt_tokenizer_is_eog(const wgt_tokenizer *t, int32_t id)
{
    if (!t) return 0;
    for (int i = 0; i < t->n_eog; i++)
        if (t->eog[i] == id) return 1;
    return 0;
}
