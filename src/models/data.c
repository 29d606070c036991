/* Training data: token sequences of L+1 ids (inputs are the first L, targets the last L), from a
 * text tokenized with the model's tokenizer or from JSON lines of ids; batches in file order or
 * shuffled by epoch with a seed. A batch is a pure function of (seed, step), so a resumed run
 * sees exactly the batches an uninterrupted one would. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "wgt.h"

struct wgt_dataset {
    int64_t seq;       /* L: each sequence holds L + 1 ids */
    int64_t n_train;   /* sequences used for training: seqs[0 .. n_train) */
    int64_t n_eval;    /* held out: seqs[n_train .. n_train + n_eval) */
    int32_t *ids;      /* [(n_train + n_eval) * (L + 1)] */
    int64_t n_tokens;  /* tokens read (text) or ids read (JSON lines) */
    int64_t perm_epoch; /* the epoch perm holds, -1 for none */
    int64_t *perm;     /* [n_train] */
};

static wgt_status read_file(const char *path, char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return wgt_error(WGT_ERR_NOT_FOUND, "%s: cannot open the data file: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) break;
        char *nb = realloc(buf, 2 * cap + 1);
        if (!nb) free(buf);
        buf = nb, cap *= 2;
    }
    int err = ferror(f);
    fclose(f);
    if (!buf) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory reading the data file", path);
    if (err) {
        free(buf);
        return wgt_error(WGT_ERR_IO, "%s: reading the data file failed", path);
    }
    buf[n] = 0;
    *out = buf, *len = n;
    return WGT_OK;
}

static wgt_dataset *dataset_new(int64_t seq)
{
    wgt_dataset *d = calloc(1, sizeof *d);
    if (d) d->seq = seq, d->perm_epoch = -1;
    return d;
}

void wgt_dataset_free(wgt_dataset *d)
{
    if (!d) return;
    free(d->ids);
    free(d->perm);
    free(d);
}

wgt_status wgt_dataset_open_text(const char *path, wgt_tokenizer *tok, int64_t seq, double eval_fraction,
                                 wgt_dataset **out)
{
    if (!path || !tok || !out || seq < 1 || !(eval_fraction >= 0 && eval_fraction < 1))
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_dataset_open_text: bad argument");
    *out = NULL;
    char *text;
    size_t len;
    wgt_status st = read_file(path, &text, &len);
    if (st) return st;
    int32_t *toks = NULL;
    size_t n = 0;
    /* plain text: no BOS/EOS added, special-token spellings in it stay text */
    st = wgt_tokenizer_encode(tok, text, len, 0, &toks, &n);
    free(text);
    if (st) return wgt_error(st, "%s: tokenizing the data: %s", path, wgt_errmsg());
    /* consecutive sequences overlap by one token, so every token but the first is a target once */
    int64_t n_seq = n > 0 ? ((int64_t)n - 1) / seq : 0;
    if (n_seq < 1) {
        free(toks);
        return wgt_error(WGT_ERR_INVALID_ARGUMENT,
                         "%s: the text is %zu tokens, fewer than one sequence of --seq %lld + 1: give more text "
                         "or a shorter --seq",
                         path, n, (long long)seq);
    }
    int64_t n_eval = (int64_t)((double)n_seq * eval_fraction);
    if (eval_fraction > 0 && n_eval < 1 && n_seq >= 2) n_eval = 1;
    wgt_dataset *d = dataset_new(seq);
    int32_t *ids = wgt_malloc_array((size_t)(n_seq * (seq + 1)), sizeof *ids);
    if (!d || !ids) {
        free(d), free(ids), free(toks);
        return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory for %lld sequences", path, (long long)n_seq);
    }
    for (int64_t i = 0; i < n_seq; i++) memcpy(ids + i * (seq + 1), toks + i * seq, (size_t)(seq + 1) * sizeof *ids);
    free(toks);
    d->ids = ids;
    d->n_train = n_seq - n_eval;
    d->n_eval = n_eval;
    d->n_tokens = (int64_t)n;
    *out = d;
    return WGT_OK;
}

/* One JSON line "[1, 2, 3]" into v (cap entries); -1 on a syntax error (*err says where). */
static int64_t parse_line(const char *p, const char *end, int32_t *v, int64_t cap, const char **err)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r')) p++;
    if (p == end || *p != '[') return *err = "expected '[' at the start of the line", -1;
    p++;
    int64_t n = 0;
    for (;;) {
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        if (p < end && *p == ']' && n == 0) {
            p++;
            break;
        }
        char *e;
        errno = 0;
        long long x = strtoll(p, &e, 10);
        if (e == p || e > end) return *err = "expected an integer", -1;
        if (errno || x < INT32_MIN || x > INT32_MAX) return *err = "an id past the 32-bit range", -1;
        if (n < cap) v[n] = (int32_t)x;
        n++;
        p = e;
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        if (p < end && *p == ',') {
            p++;
            continue;
        }
        if (p < end && *p == ']') {
            p++;
            break;
        }
        return *err = "expected ',' or ']' after an id", -1;
    }
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r')) p++;
    if (p != end) return *err = "text after the closing ']'", -1;
    return n;
}

static wgt_status open_ids(const char *path, int64_t vocab, int64_t seq, int padded, wgt_dataset **out)
{
    if (!path || !out || seq < 1 || vocab < 1) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_dataset_open_ids: bad argument");
    *out = NULL;
    char *text;
    size_t len;
    wgt_status st = read_file(path, &text, &len);
    if (st) return st;
    int64_t cap = 64, n_seq = 0, line_no = 0;
    int32_t *ids = malloc((size_t)(cap * (seq + 1)) * sizeof *ids);
    const char *p = text, *end = text + len;
    while (ids && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        line_no++;
        const char *q = p;
        while (q < le && (*q == ' ' || *q == '\t' || *q == '\r')) q++;
        if (q == le) { /* blank lines are skipped */
            p = le + 1;
            continue;
        }
        if (n_seq == cap) {
            int32_t *nb = realloc(ids, (size_t)(2 * cap * (seq + 1)) * sizeof *ids);
            if (!nb) break;
            ids = nb, cap *= 2;
        }
        int32_t *row = ids + n_seq * (seq + 1);
        const char *err = NULL;
        int64_t n = parse_line(p, le, row, seq + 1, &err);
        if (n < 0) st = wgt_error(WGT_ERR_FORMAT, "%s:%lld: %s: each line must be a JSON list of token ids", path,
                                  (long long)line_no, err);
        else if (padded ? n < 2 || n > seq + 1 : n != seq + 1)
            st = wgt_error(WGT_ERR_INVALID_ARGUMENT,
                           padded ? "%s:%lld: a sequence of %lld ids; --seq %lld takes 2 to %lld per line"
                                  : "%s:%lld: a sequence of %lld ids; --seq %lld needs %lld per line (inputs are the "
                                    "first L, targets the last L)",
                           path, (long long)line_no, (long long)n, (long long)seq, (long long)(seq + 1));
        for (int64_t i = n; !st && i < seq + 1; i++) row[i] = -1; /* padded: targets not counted */
        for (int64_t i = 0; !st && i < n; i++)
            if (row[i] < 0 || row[i] >= vocab)
                st = wgt_error(WGT_ERR_INVALID_ARGUMENT,
                               "%s:%lld: id %d (position %lld) is outside the model's vocabulary of %lld", path,
                               (long long)line_no, row[i], (long long)i, (long long)vocab);
        if (st) break;
        n_seq++;
        p = le + 1;
    }
    free(text);
    if (!st && !ids) st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory", path);
    else if (!st && p < end) st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: out of host memory after %lld sequences", path,
                                            (long long)n_seq);
    if (!st && n_seq == 0) st = wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: no sequences in the file", path);
    wgt_dataset *d = st ? NULL : dataset_new(seq);
    if (!st && !d) st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    if (st) {
        free(ids);
        return st;
    }
    d->ids = ids;
    d->n_train = n_seq;
    d->n_tokens = n_seq * (seq + 1);
    *out = d;
    return WGT_OK;
}

wgt_status wgt_dataset_open_ids(const char *path, int64_t vocab, int64_t seq, wgt_dataset **out)
{
    return open_ids(path, vocab, seq, 0, out);
}

wgt_status wgt_dataset_open_ids_padded(const char *path, int64_t vocab, int64_t seq, wgt_dataset **out)
{
    return open_ids(path, vocab, seq, 1, out);
}

int64_t wgt_dataset_train_count(const wgt_dataset *d) { return d ? d->n_train : 0; }
int64_t wgt_dataset_eval_count(const wgt_dataset *d) { return d ? d->n_eval : 0; }
int64_t wgt_dataset_tokens(const wgt_dataset *d) { return d ? d->n_tokens : 0; }
const int32_t *wgt_dataset_sequence(const wgt_dataset *d, int64_t i)
{
    return d && i >= 0 && i < d->n_train + d->n_eval ? d->ids + i * (d->seq + 1) : NULL;
}

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The order of epoch e: a Fisher-Yates shuffle from a generator keyed by (seed, e). */
static void make_perm(wgt_dataset *d, uint64_t seed, int64_t e)
{
    uint64_t s = seed ^ (0xd1b54a32d192ed03ull * (uint64_t)(e + 1));
    for (int64_t i = 0; i < d->n_train; i++) d->perm[i] = i;
    for (int64_t i = d->n_train - 1; i > 0; i--) {
        /* unbiased enough: (i + 1) < 2^40 against 64 random bits */
        int64_t j = (int64_t)(splitmix64(&s) % (uint64_t)(i + 1));
        int64_t t = d->perm[i];
        d->perm[i] = d->perm[j], d->perm[j] = t;
    }
    d->perm_epoch = e;
}

wgt_status wgt_dataset_batch(wgt_dataset *d, int64_t step, int64_t batch, int shuffle, uint64_t seed, int32_t *ids)
{
    if (!d || !ids || step < 0 || batch < 1) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_dataset_batch: bad argument");
    if (shuffle && !d->perm) {
        d->perm = wgt_malloc_array((size_t)d->n_train, sizeof *d->perm);
        if (!d->perm) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory for the data order");
    }
    int64_t row = d->seq + 1;
    for (int64_t b = 0; b < batch; b++) {
        /* position in the endless stream of epochs */
        int64_t pos = step * batch + b, e = pos / d->n_train, k = pos % d->n_train;
        if (shuffle && d->perm_epoch != e) make_perm(d, seed, e);
        int64_t i = shuffle ? d->perm[k] : k;
        memcpy(ids + b * row, d->ids + i * row, (size_t)row * sizeof *ids);
    }
    return WGT_OK;
}
