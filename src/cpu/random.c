/* Random numbers, the reference: Philox4x32-10 and the distributions over its stream (see
 * random.h for the exact definition every function follows, the same as the kernel's). */
#include "cpu/random.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u
#define PI_D 3.14159265358979323846

void wgt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        if (r) k0 += PHILOX_W0, k1 += PHILOX_W1; /* the key schedule bumps before rounds 2..10 */
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0, p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c0 = n0, c1 = (uint32_t)p1, c2 = n2, c3 = (uint32_t)p0;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

static void block_words(uint64_t seed, uint64_t block, uint32_t out[4])
{
    uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), 0, 0}, key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    wgt_philox4x32_10(ctr, key, out);
}

uint32_t wgt_philox_word(uint64_t seed, uint64_t j)
{
    uint32_t w[4];
    block_words(seed, j / 4, w);
    return w[j % 4];
}

/* Walks the words of elements 0..n-1 a block at a time. */
typedef struct stream {
    uint64_t seed, block;
    uint32_t w[4];
    int64_t have; /* the element index whose block is in w, or -1 */
} stream;

static stream stream_at(uint64_t seed, uint64_t block) { return (stream){seed, block, {0}, -1}; }

static uint32_t stream_word(stream *s, int64_t i)
{
    if (s->have < 0 || s->have != i / 4) {
        block_words(s->seed, s->block + (uint64_t)(i / 4), s->w);
        s->have = i / 4;
    }
    return s->w[i % 4];
}

static wgt_status check_out(const wgt_cpu_tensor *out, const char *op)
{
    char what[64];
    snprintf(what, sizeof what, "%s: out", op);
    return wgt_cpu_check(out, what);
}

wgt_status wgt_cpu_random_bits(uint64_t seed, uint64_t block, const wgt_cpu_tensor *out)
{
    wgt_status st = check_out(out, "random_bits");
    if (st) return st;
    stream s = stream_at(seed, block);
    int64_t n = wgt_layout_numel(&out->l);
    for (int64_t i = 0; i < n; i++) {
        uint32_t w = stream_word(&s, i);
        int64_t at = wgt_layout_index(&out->l, i);
        if (out->l.dtype == WGT_U32) ((uint32_t *)out->data)[at] = w;
        else wgt_cpu_store_i(out, at, (int64_t)(int32_t)w);
    }
    return WGT_OK;
}

wgt_status wgt_cpu_uniform(uint64_t seed, uint64_t block, float lo, float scale, const wgt_cpu_tensor *out)
{
    wgt_status st = check_out(out, "uniform");
    if (st) return st;
    stream s = stream_at(seed, block);
    int64_t n = wgt_layout_numel(&out->l);
    for (int64_t i = 0; i < n; i++)
        wgt_cpu_store_f(out, wgt_layout_index(&out->l, i), fmaf(wgt_rand_u01(stream_word(&s, i)), scale, lo));
    return WGT_OK;
}

wgt_status wgt_cpu_normal(uint64_t seed, uint64_t block, double mean, double std, const wgt_cpu_tensor *out)
{
    wgt_status st = check_out(out, "normal");
    if (st) return st;
    stream s = stream_at(seed, block);
    int64_t n = wgt_layout_numel(&out->l);
    for (int64_t i = 0; i < n; i++) {
        int64_t first = i & ~(int64_t)1; /* the pair's first element */
        double u1 = wgt_rand_u01_open0(stream_word(&s, first)), u2 = wgt_rand_u01(stream_word(&s, first + 1));
        double r = sqrt(-2.0 * log(u1)), t = 2.0 * PI_D * u2 - PI_D;
        double z = (i & 1) ? r * sin(t) : r * cos(t);
        wgt_cpu_store_f(out, wgt_layout_index(&out->l, i), mean + std * z);
    }
    return WGT_OK;
}

wgt_status wgt_cpu_bernoulli(uint64_t seed, uint64_t block, const wgt_cpu_tensor *p, float p_scalar,
                             const wgt_cpu_tensor *out)
{
    wgt_status st = check_out(out, "bernoulli");
    if (st) return st;
    wgt_layout pl;
    if (p && (st = wgt_cpu_broadcast_to(&p->l, out->l.ndim, out->l.shape, &pl, "bernoulli: p"))) return st;
    stream s = stream_at(seed, block);
    int64_t n = wgt_layout_numel(&out->l);
    for (int64_t i = 0; i < n; i++) {
        double pi = p_scalar;
        if (p) {
            wgt_cpu_tensor v = {p->data, pl};
            pi = wgt_cpu_load_f(&v, wgt_layout_index(&pl, i));
        }
        int one = (double)wgt_rand_u01(stream_word(&s, i)) < pi; /* false for NaN */
        wgt_cpu_store_i(out, wgt_layout_index(&out->l, i), one);
    }
    return WGT_OK;
}

wgt_status wgt_cpu_randint(uint64_t seed, uint64_t block, int64_t lo, uint32_t range, const wgt_cpu_tensor *out)
{
    wgt_status st = check_out(out, "randint");
    if (st) return st;
    stream s = stream_at(seed, block);
    int64_t n = wgt_layout_numel(&out->l);
    for (int64_t i = 0; i < n; i++) {
        uint32_t w = stream_word(&s, i);
        uint32_t d = range ? (uint32_t)(((uint64_t)w * range) >> 32) : w;
        uint32_t v = (uint32_t)lo + d;
        int64_t at = wgt_layout_index(&out->l, i);
        if (out->l.dtype == WGT_U32) ((uint32_t *)out->data)[at] = v;
        else if (wgt_cpu_is_float(out->l.dtype)) wgt_cpu_store_f(out, at, (double)(float)(int32_t)v);
        else wgt_cpu_store_i(out, at, (int32_t)v);
    }
    return WGT_OK;
}

/* ---- randperm: a keyed Feistel permutation with cycle walking ---- */

static uint32_t feistel(uint64_t seed, uint64_t block, int h, uint32_t v)
{
    uint32_t mask = (1u << h) - 1, l = v >> h, r = v & mask, key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    for (uint32_t round = 0; round < 6; round++) {
        uint32_t ctr[4] = {r, (uint32_t)block, (uint32_t)(block >> 32), 0x80000000u | round}, f[4];
        wgt_philox4x32_10(ctr, key, f);
        uint32_t nl = r;
        r = l ^ (f[0] & mask);
        l = nl;
    }
    return (l << h) | r;
}

/* Half width h of the Feistel domain for n: the smallest h >= 1 with 4^h > n. Strictly larger:
 * Feistel rounds on h >= 2 bits are even permutations, so a domain of exactly n = 4^h would reach
 * only the even half of the permutations; cycle walking through a larger domain does not. */
static int feistel_half(uint64_t n)
{
    int h = 1;
    while (h < 16 && (1ull << (2 * h)) <= n) h++;
    return h;
}

wgt_status wgt_cpu_randperm(uint64_t seed, uint64_t block, const wgt_cpu_tensor *out)
{
    wgt_status st = check_out(out, "randperm");
    if (st) return st;
    if (out->l.ndim != 1) return wgt_error(WGT_ERR_SHAPE, "cpu randperm: out must be 1-D");
    uint64_t n = (uint64_t)out->l.shape[0];
    if (n > INT32_MAX) return wgt_error(WGT_ERR_LIMIT, "cpu randperm: n past 2^31");
    uint32_t *perm = malloc((size_t)(n ? n : 1) * sizeof *perm);
    if (!perm) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "cpu randperm: out of host memory");
    if (n <= WGT_RANDPERM_SHUFFLE_MAX) {
        stream s = stream_at(seed, block);
        for (uint64_t i = 0; i < n; i++) perm[i] = (uint32_t)i;
        for (uint64_t k = 0; k + 1 < n; k++) {
            uint64_t i = n - 1 - k, j = ((uint64_t)stream_word(&s, (int64_t)k) * (i + 1)) >> 32;
            uint32_t t = perm[i];
            perm[i] = perm[j], perm[j] = t;
        }
    } else {
        int h = feistel_half(n);
        for (uint64_t i = 0; i < n; i++) {
            uint32_t v = (uint32_t)i;
            do v = feistel(seed, block, h, v);
            while (v >= n);
            perm[i] = v;
        }
    }
    for (uint64_t i = 0; i < n; i++) {
        int64_t at = wgt_layout_index(&out->l, (int64_t)i);
        if (out->l.dtype == WGT_U32) ((uint32_t *)out->data)[at] = perm[i];
        else if (wgt_cpu_is_float(out->l.dtype)) wgt_cpu_store_f(out, at, (double)perm[i]);
        else wgt_cpu_store_i(out, at, (int64_t)perm[i]);
    }
    free(perm);
    return WGT_OK;
}

/* ---- multinomial ---- */

#define MN_CHUNKS 256

static float chunk_sum(const float *w, int64_t a, int64_t b)
{
    float s = 0.0f;
    for (int64_t j = a; j < b; j++) s += w[j];
    return s;
}

/* One draw from weights w [K] whose chunk sums are T and prefix sums P (see random.h). */
static int64_t mn_draw(const float *w, int64_t K, int64_t C, const float *P, float u)
{
    float x = u * P[MN_CHUNKS - 1];
    int t = 0;
    while (t < MN_CHUNKS && !(P[t] > x)) t++;
    int64_t a, b;
    if (t == MN_CHUNKS) a = 0, b = K; /* x reached the total by rounding: the last nonzero weight */
    else a = (int64_t)t * C, b = a + C < K ? a + C : K;
    float acc = (t > 0 && t < MN_CHUNKS) ? P[t - 1] : 0.0f;
    int64_t last = -1;
    for (int64_t j = a; j < b; j++) {
        if (w[j] > 0) last = j;
        if (t == MN_CHUNKS) continue;
        acc += w[j];
        if (acc > x) return j;
    }
    return last;
}

static void mn_prefix(const float *T, float *P)
{
    P[0] = T[0];
    for (int t = 1; t < MN_CHUNKS; t++) P[t] = P[t - 1] + T[t];
}

wgt_status wgt_cpu_multinomial(uint64_t seed, uint64_t block, const wgt_cpu_tensor *probs, int replacement,
                               const wgt_cpu_tensor *out)
{
    wgt_status st = check_out(out, "multinomial");
    if (!st) st = wgt_cpu_check(probs, "multinomial: probs");
    if (st) return st;
    int rows2 = probs->l.ndim == 2;
    if (probs->l.ndim < 1 || probs->l.ndim > 2 || out->l.ndim != probs->l.ndim ||
        (rows2 && out->l.shape[0] != probs->l.shape[0]))
        return wgt_error(WGT_ERR_SHAPE, "cpu multinomial: probs must be [K] or [N, K] and out [S] or [N, S]");
    int64_t N = rows2 ? probs->l.shape[0] : 1, K = probs->l.shape[probs->l.ndim - 1];
    int64_t S = out->l.shape[out->l.ndim - 1];
    int64_t C = (K + MN_CHUNKS - 1) / MN_CHUNKS;
    float *w = malloc((size_t)(K ? K : 1) * sizeof *w);
    if (!w) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "cpu multinomial: out of host memory");
    float T[MN_CHUNKS], P[MN_CHUNKS];
    stream s = stream_at(seed, block);
    for (int64_t r = 0; r < N; r++) {
        for (int64_t j = 0; j < K; j++) {
            double v = wgt_cpu_load_f(probs, wgt_layout_index(&probs->l, r * K + j));
            w[j] = v > 0 ? (float)v : 0.0f; /* negative and NaN: 0 */
        }
        for (int t = 0; t < MN_CHUNKS; t++) {
            int64_t a = (int64_t)t * C, b = a + C < K ? a + C : K;
            T[t] = a < b ? chunk_sum(w, a, b) : 0.0f;
        }
        mn_prefix(T, P);
        for (int64_t k = 0; k < S; k++) {
            float u = wgt_rand_u01(stream_word(&s, r * S + k));
            int64_t j = P[MN_CHUNKS - 1] > 0 ? mn_draw(w, K, C, P, u) : -1;
            wgt_cpu_store_i(out, wgt_layout_index(&out->l, r * S + k), j);
            if (!replacement && j >= 0) {
                w[j] = 0.0f;
                int64_t t = j / C, a = t * C, b = a + C < K ? a + C : K;
                T[t] = chunk_sum(w, a, b);
                mn_prefix(T, P);
            }
        }
    }
    free(w);
    return WGT_OK;
}

wgt_status wgt_cpu_dropout(uint64_t seed, uint64_t block, const wgt_cpu_tensor *x, float keep, float scale,
                           const wgt_cpu_tensor *out, const wgt_cpu_tensor *mask)
{
    wgt_status st = check_out(out, "dropout");
    if (!st) st = wgt_cpu_check(x, "dropout: x");
    if (!st && mask) st = wgt_cpu_check(mask, "dropout: mask");
    if (st) return st;
    int64_t n = wgt_layout_numel(&out->l);
    if (wgt_layout_numel(&x->l) != n || (mask && wgt_layout_numel(&mask->l) != n))
        return wgt_error(WGT_ERR_SHAPE, "cpu dropout: x, out and mask must have as many elements");
    stream s = stream_at(seed, block);
    for (int64_t i = 0; i < n; i++) {
        int kept = wgt_rand_u01(stream_word(&s, i)) < keep;
        float v = (float)wgt_cpu_load_f(x, wgt_layout_index(&x->l, i)) * (kept ? scale : 0.0f);
        wgt_cpu_store_f(out, wgt_layout_index(&out->l, i), v);
        if (mask) wgt_cpu_store_i(mask, wgt_layout_index(&mask->l, i), kept);
    }
    return WGT_OK;
}
