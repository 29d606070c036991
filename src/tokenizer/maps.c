/* Open-addressing hash maps for the tokenizer: vocabulary (bytes -> id), merges ((id, id) ->
 * rank and result) and the word cache. Linear probing, power-of-two capacities, load <= 1/2. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

static uint32_t hash_bytes(const char *s, size_t n)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h ? h : 1;
}

static const char *arena_copy(strmap *m, const char *key, size_t len)
{
    if (m->arena_used + len + 1 > m->arena_cap) {
        size_t cap = len + 1 > 1 << 20 ? len + 1 : 1 << 20;
        char **a = realloc(m->arenas, (m->n_arenas + 1) * sizeof *a);
        if (!a) return NULL;
        m->arenas = a;
        if (!(a[m->n_arenas] = malloc(cap))) return NULL;
        m->n_arenas++;
        m->arena_used = 0;
        m->arena_cap = cap;
    }
    char *p = m->arenas[m->n_arenas - 1] + m->arena_used;
    memcpy(p, key, len);
    p[len] = 0;
    m->arena_used += len + 1;
    return p;
}

static int strmap_grow(strmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 1024;
    struct strmap_slot *s = calloc(cap, sizeof *s);
    if (!s) return -1;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].key) continue;
        size_t j = m->slots[i].hash & (cap - 1);
        while (s[j].key) j = (j + 1) & (cap - 1);
        s[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = s;
    m->cap = cap;
    return 0;
}

int tok_strmap_put(strmap *m, const char *key, size_t len, int32_t value)
{
    if ((m->count + 1) * 2 > m->cap && strmap_grow(m)) return -1;
    uint32_t h = hash_bytes(key, len);
    size_t j = h & (m->cap - 1);
    for (; m->slots[j].key; j = (j + 1) & (m->cap - 1)) {
        struct strmap_slot *s = &m->slots[j];
        if (s->hash == h && s->len == len && !memcmp(s->key, key, len)) {
            s->value = value;
            return 0;
        }
    }
    const char *k = arena_copy(m, key, len);
    if (!k) return -1;
    m->slots[j] = (struct strmap_slot){k, (uint32_t)len, h, value};
    m->count++;
    return 0;
}

int32_t tok_strmap_get(const strmap *m, const char *key, size_t len)
{
    if (!m->cap) return -1;
    uint32_t h = hash_bytes(key, len);
    for (size_t j = h & (m->cap - 1); m->slots[j].key; j = (j + 1) & (m->cap - 1)) {
        const struct strmap_slot *s = &m->slots[j];
        if (s->hash == h && s->len == len && !memcmp(s->key, key, len)) return s->value;
    }
    return -1;
}

void tok_strmap_free(strmap *m)
{
    for (size_t i = 0; i < m->n_arenas; i++) free(m->arenas[i]);
    free(m->arenas);
    free(m->slots);
    memset(m, 0, sizeof *m);
}

static uint64_t pair_key(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)(a + 1) << 32) | (uint32_t)(b + 1); }

static size_t pair_hash(uint64_t k) { return (size_t)((k * 0x9E3779B97F4A7C15ull) >> 20); }

int tok_pairmap_put(pairmap *m, int32_t a, int32_t b, int32_t rank, int32_t merged)
{
    if ((m->count + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 4096;
        struct pair_slot *s = calloc(cap, sizeof *s);
        if (!s) return -1;
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->slots[i].key) continue;
            size_t j = pair_hash(m->slots[i].key) & (cap - 1);
            while (s[j].key) j = (j + 1) & (cap - 1);
            s[j] = m->slots[i];
        }
        free(m->slots);
        m->slots = s;
        m->cap = cap;
    }
    uint64_t k = pair_key(a, b);
    size_t j = pair_hash(k) & (m->cap - 1);
    for (; m->slots[j].key; j = (j + 1) & (m->cap - 1))
        if (m->slots[j].key == k) return 0; /* the first (lowest-rank) merge of a pair wins */
    m->slots[j] = (struct pair_slot){k, rank, merged};
    m->count++;
    return 0;
}

const struct pair_slot *tok_pairmap_get(const pairmap *m, int32_t a, int32_t b)
{
    if (!m->cap) return NULL;
    uint64_t k = pair_key(a, b);
    for (size_t j = pair_hash(k) & (m->cap - 1); m->slots[j].key; j = (j + 1) & (m->cap - 1))
        if (m->slots[j].key == k) return &m->slots[j];
    return NULL;
}

void tok_pairmap_free(pairmap *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}

/* The cache stays under about 8 MB of ids and 256k words; then it starts over. */
enum { CACHE_MAX_WORDS = 1 << 18, CACHE_MAX_IDS = 1 << 21, CACHE_MAX_WORD_BYTES = 256 };

const int32_t *tok_wordcache_get(const wordcache *c, const char *w, size_t len, int32_t *n)
{
    int32_t off = tok_strmap_get(&c->index, w, len);
    if (off < 0) return NULL;
    *n = c->ids[off];
    return c->ids + off + 1;
}

void tok_wordcache_put(wordcache *c, const char *w, size_t len, const int32_t *ids, int32_t n)
{
    if (len > CACHE_MAX_WORD_BYTES) return;
    if (c->index.count >= CACHE_MAX_WORDS || c->n + n + 1 > CACHE_MAX_IDS) {
        tok_strmap_free(&c->index);
        c->n = 0;
    }
    if (c->n + n + 1 > c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 1 << 16;
        while (cap < c->n + n + 1) cap *= 2;
        int32_t *p = realloc(c->ids, cap * sizeof *p);
        if (!p) return; /* a cache miss later costs time, not correctness */
        c->ids = p;
        c->cap = cap;
    }
    size_t off = c->n;
    c->ids[off] = n;
    memcpy(c->ids + off + 1, ids, (size_t)n * sizeof *ids);
    if (tok_strmap_put(&c->index, w, len, (int32_t)off) == 0) c->n += (size_t)n + 1;
}

void tok_wordcache_free(wordcache *c)
{
    tok_strmap_free(&c->index);
    free(c->ids);
    memset(c, 0, sizeof *c);
}

void tok_idvec_push(idvec *v, int32_t id)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64;
        int32_t *p = realloc(v->v, cap * sizeof *p);
        if (!p) {
            v->oom = 1;
            return;
        }
        v->v = p;
        v->cap = cap;
    }
    v->v[v->n++] = id;
}
