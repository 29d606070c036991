/* The three subword models, each encoding one pre-tokenized word:
 *  - byte-level BPE (GPT-2, Llama 3, Qwen): symbols are bytes, merges by rank (lowest first,
 *    leftmost on ties), as Hugging Face's BPE model does;
 *  - SentencePiece BPE (Llama 2): symbols are characters, the pair whose concatenation is the
 *    highest-scoring piece merges first (leftmost on ties); what is left outside the vocabulary
 *    falls back to <0xXX> byte pieces, or to <unk>;
 *  - SentencePiece unigram: the Viterbi path of highest total score.
 * Merges run over a doubly linked list of symbols with a binary heap of candidate pairs, so a
 * word of n symbols costs O(n log n); stale heap entries are detected when popped. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

typedef struct cand { float key; int32_t pos, a, b; } cand; /* key: smaller merges first */

typedef struct heap { cand *v; size_t n, cap; } heap;

static int cand_less(const cand *x, const cand *y) { return x->key < y->key || (x->key == y->key && x->pos < y->pos); }

static int heap_push(heap *h, cand c)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        cand *p = realloc(h->v, cap * sizeof *p);
        if (!p) return -1;
        h->v = p;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i && cand_less(&c, &h->v[(i - 1) / 2])) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = c;
    return 0;
}

static cand heap_pop(heap *h)
{
    cand top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && cand_less(&h->v[c + 1], &h->v[c])) c++;
        if (!cand_less(&h->v[c], &last)) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n) h->v[i] = last;
    return top;
}

/* Working storage for one word: symbol ids (or byte offsets), lengths, links. */
typedef struct symbols { int32_t *id, *len, *prev, *next; int32_t n; } symbols;

static int symbols_alloc(symbols *s, size_t n)
{
    int32_t *p = wgt_malloc_array(n ? n * 4 : 4, sizeof *p);
    if (!p) return -1;
    s->id = p;
    s->len = p + n;
    s->prev = p + 2 * n;
    s->next = p + 3 * n;
    s->n = (int32_t)n;
    for (int32_t i = 0; i < s->n; i++) {
        s->prev[i] = i - 1;
        s->next[i] = i + 1 < s->n ? i + 1 : -1;
    }
    return 0;
}

static void bpe_push_pair(const wgt_tokenizer *t, heap *h, const symbols *s, int32_t i)
{
    int32_t j = s->next[i];
    if (i < 0 || j < 0) return;
    const struct pair_slot *m = tok_pairmap_get(&t->merges, s->id[i], s->id[j]);
    if (m) heap_push(h, (cand){(float)m->rank, i, s->id[i], s->id[j]});
}

void tok_bpe_encode_word(wgt_tokenizer *t, const char *w, size_t len, idvec *out)
{
    if (!len) return;
    if (t->ignore_merges) {
        int32_t id = tok_strmap_get(&t->vocab, w, len);
        if (id >= 0) {
            tok_idvec_push(out, id);
            return;
        }
    }
    int32_t n_cached;
    const int32_t *cached = tok_wordcache_get(&t->cache, w, len, &n_cached);
    if (cached) {
        for (int32_t i = 0; i < n_cached; i++) tok_idvec_push(out, cached[i]);
        return;
    }
    symbols s;
    heap h = {0};
    if (symbols_alloc(&s, len)) {
        out->oom = 1;
        return;
    }
    for (size_t i = 0; i < len; i++) s.id[i] = t->byte_id[(uint8_t)w[i]];
    for (int32_t i = 0; i + 1 < s.n; i++) bpe_push_pair(t, &h, &s, i);
    while (h.n) {
        cand c = heap_pop(&h);
        int32_t i = c.pos, j = s.next[i];
        if (s.id[i] != c.a || j < 0 || s.id[j] != c.b) continue; /* stale */
        s.id[i] = tok_pairmap_get(&t->merges, c.a, c.b)->merged;
        s.next[i] = s.next[j];
        if (s.next[j] >= 0) s.prev[s.next[j]] = i;
        s.id[j] = -2; /* dead */
        bpe_push_pair(t, &h, &s, s.prev[i]);
        bpe_push_pair(t, &h, &s, i);
    }
    size_t start = out->n;
    for (int32_t i = 0; i >= 0; i = s.next[i]) {
        if (s.id[i] >= 0) tok_idvec_push(out, s.id[i]);
        else if (t->unk >= 0) tok_idvec_push(out, t->unk); /* a byte missing from the vocabulary */
    }
    if (!out->oom) tok_wordcache_put(&t->cache, w, len, out->v + start, (int32_t)(out->n - start));
    free(s.id);
    free(h.v);
}

static int utf8_len(uint8_t c)
{
    return c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
}

/* A piece SentencePiece may produce by merging or by the Viterbi search. */
static int32_t spm_usable(const wgt_tokenizer *t, const char *p, size_t n)
{
    int32_t id = tok_strmap_get(&t->vocab, p, n);
    return id;
}

static void spm_emit_unknown(const wgt_tokenizer *t, const char *p, size_t n, idvec *out)
{
    if (t->byte_fallback) {
        for (size_t k = 0; k < n; k++) {
            int32_t b = t->byte_id[(uint8_t)p[k]];
            tok_idvec_push(out, b >= 0 ? b : t->unk);
        }
    } else if (t->unk >= 0) {
        tok_idvec_push(out, t->unk);
    }
}

static void spm_bpe_word(wgt_tokenizer *t, const char *w, size_t len, idvec *out)
{
    symbols s;
    heap h = {0};
    size_t nchars = 0;
    for (size_t i = 0; i < len; i += utf8_len((uint8_t)w[i])) nchars++;
    if (symbols_alloc(&s, nchars)) {
        out->oom = 1;
        return;
    }
    /* id holds the byte offset of each symbol, len its byte length. */
    size_t off = 0;
    for (int32_t i = 0; i < s.n; i++) {
        size_t l = utf8_len((uint8_t)w[off]);
        if (off + l > len) l = len - off;
        s.id[i] = (int32_t)off;
        s.len[i] = (int32_t)l;
        off += l;
    }
    for (int32_t i = 0; i + 1 < s.n; i++) {
        int32_t id = spm_usable(t, w + s.id[i], (size_t)(s.len[i] + s.len[i + 1]));
        if (id >= 0) heap_push(&h, (cand){-t->scores[id], i, s.len[i], s.len[i + 1]});
    }
    while (h.n) {
        cand c = heap_pop(&h);
        int32_t i = c.pos, j = s.next[i];
        if (s.len[i] != c.a || j < 0 || s.len[j] != c.b) continue; /* stale */
        s.len[i] += s.len[j];
        s.len[j] = 0;
        s.next[i] = s.next[j];
        if (s.next[j] >= 0) s.prev[s.next[j]] = i;
        int32_t p = s.prev[i], q = s.next[i];
        if (p >= 0) {
            int32_t id = spm_usable(t, w + s.id[p], (size_t)(s.len[p] + s.len[i]));
            if (id >= 0) heap_push(&h, (cand){-t->scores[id], p, s.len[p], s.len[i]});
        }
        if (q >= 0) {
            int32_t id = spm_usable(t, w + s.id[i], (size_t)(s.len[i] + s.len[q]));
            if (id >= 0) heap_push(&h, (cand){-t->scores[id], i, s.len[i], s.len[q]});
        }
    }
    for (int32_t i = 0; i >= 0 && s.n; i = s.next[i]) {
        int32_t id = spm_usable(t, w + s.id[i], (size_t)s.len[i]);
        if (id >= 0) tok_idvec_push(out, id);
        else spm_emit_unknown(t, w + s.id[i], (size_t)s.len[i], out);
    }
    free(s.id);
    free(h.v);
}

/* Unigram: best[k] is the best score of a segmentation of the first k characters. */
/* SentencePiece keeps each position's best path score in a float but adds and compares in double
 * (score + float path); Hugging Face tokenizers keeps doubles. The roundings decide ties such as
 * "00"+"0" against "0"+"00", so each source's own precision is followed. */
static double unigram_keep(const wgt_tokenizer *t, double sum)
{
    return t->unigram_sum_f64 ? sum : (double)(float)sum;
}

static void spm_unigram_word(wgt_tokenizer *t, const char *w, size_t len, idvec *out)
{
    size_t nchars = 0;
    for (size_t i = 0; i < len; i += utf8_len((uint8_t)w[i])) nchars++;
    int32_t *offs = wgt_malloc_array(nchars + 1, sizeof *offs);
    int32_t *from = wgt_malloc_array(nchars + 1, sizeof *from);
    int32_t *tokid = wgt_malloc_array(nchars + 1, sizeof *tokid);
    double *best = wgt_malloc_array(nchars + 1, sizeof *best);
    if (!offs || !from || !tokid || !best) {
        out->oom = 1;
        goto done;
    }
    size_t off = 0;
    for (size_t k = 0; k < nchars; k++) {
        offs[k] = (int32_t)off;
        off += utf8_len((uint8_t)w[off]);
        if (off > len) off = len;
    }
    offs[nchars] = (int32_t)len;
    for (size_t k = 0; k <= nchars; k++) best[k] = -DBL_MAX;
    best[0] = 0;
    /* SentencePiece's unknown penalty, in its precision */
    const double unk_score = t->unigram_sum_f64 ? t->min_score - 10.0 : (double)(t->min_score - 10.0f);
    for (size_t k = 0; k < nchars; k++) {
        if (best[k] == -DBL_MAX) continue;
        int single = 0;
        for (size_t e = k + 1; e <= nchars && (int)(e - k) <= t->max_piece_chars; e++) {
            int32_t id = spm_usable(t, w + offs[k], (size_t)(offs[e] - offs[k]));
            if (id < 0) continue;
            if (e == k + 1) single = 1;
            double sc = best[k] + t->scores[id];
            if (sc > best[e]) {
                best[e] = unigram_keep(t, sc);
                from[e] = (int32_t)k;
                tokid[e] = id;
            }
        }
        if (!single && best[k] + unk_score > best[k + 1]) {
            best[k + 1] = unigram_keep(t, best[k] + unk_score);
            from[k + 1] = (int32_t)k;
            tokid[k + 1] = -1;
        }
    }
    /* Walk back, then emit in order. */
    size_t n = 0;
    for (size_t e = nchars; e > 0; e = (size_t)from[e]) n++;
    int32_t *path = wgt_malloc_array(n ? n : 1, sizeof *path);
    if (!path) {
        out->oom = 1;
        goto done;
    }
    size_t i = n;
    for (size_t e = nchars; e > 0; e = (size_t)from[e]) path[--i] = (int32_t)e;
    for (i = 0; i < n; i++) {
        int32_t e = path[i], k = from[e];
        if (tokid[e] >= 0) tok_idvec_push(out, tokid[e]);
        else if (!t->byte_fallback && i > 0 && tokid[path[i - 1]] < 0) continue; /* SentencePiece fuses unknown runs */
        else spm_emit_unknown(t, w + offs[k], (size_t)(offs[e] - offs[k]), out);
    }
    free(path);
done:
    free(offs);
    free(from);
    free(tokid);
    free(best);
}

static void spm_word(wgt_tokenizer *t, const char *w, size_t len, idvec *out)
{
    int32_t n_cached;
    const int32_t *cached = tok_wordcache_get(&t->cache, w, len, &n_cached);
    if (cached) {
        for (int32_t i = 0; i < n_cached; i++) tok_idvec_push(out, cached[i]);
        return;
    }
    size_t start = out->n;
    if (t->kind == TOK_SPM_BPE) spm_bpe_word(t, w, len, out);
    else spm_unigram_word(t, w, len, out);
    if (!out->oom) tok_wordcache_put(&t->cache, w, len, out->v + start, (int32_t)(out->n - start));
}

/* U+2581, the escaped space. */
static int is_ws_mark(const char *p, const char *end)
{
    return end - p >= 3 && (uint8_t)p[0] == 0xE2 && (uint8_t)p[1] == 0x96 && (uint8_t)p[2] == 0x81;
}

void tok_spm_encode_text(wgt_tokenizer *t, const char *w, size_t len, idvec *out)
{
    if (!t->split_at_space) {
        spm_word(t, w, len, out);
        return;
    }
    /* Words start at a U+2581 that follows something else: no piece spans such a point. */
    const char *end = w + len, *start = w, *p = w;
    int prev_mark = 1;
    while (p < end) {
        int mark = is_ws_mark(p, end);
        if (mark && !prev_mark && p > start) {
            spm_word(t, start, (size_t)(p - start), out);
            start = p;
        }
        prev_mark = mark;
        p += mark ? 3 : utf8_len((uint8_t)*p);
    }
    if (end > start) spm_word(t, start, (size_t)(end - start), out);
}
