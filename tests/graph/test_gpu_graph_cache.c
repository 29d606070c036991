/* The graph cache (include/wgt.h wgt_graph_cache_*) and graph segments on this adapter, against
 * the same ops run eagerly on the CPU reference:
 *  - a function captured once per input shape and replayed for new data of that shape; the
 *    caller's inputs are never written; a non-contiguous input of a known shape replays; past
 *    max_graphs the least recently used graph goes; a scalar (a seed) passes to every call;
 *  - a function with a data-dependent shape (masked_select: its per-block counts are read by the
 *    host mid-graph, ending a segment): a call whose mask keeps the counts replays, one whose
 *    counts change finds the graph stale and captures again, and every result equals eager;
 *  - through the plain graph API: the segment count, a replay after an unchanged read, and
 *    WGT_ERR_STALE naming the read after a changed one;
 *  - misuse: a function declaring another number of scalars than the cache's, too many outputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support/check.h"

static wgt_context *dev, *ref;

static wgt_tensor *mat(wgt_context *ctx, const float *v, int64_t r, int64_t c)
{
    wgt_tensor *t;
    int64_t s[2] = {r, c};
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, s, v, &t));
    return t;
}

static void fill(float *v, int n, float a, float b, float f)
{
    for (int i = 0; i < n; i++) v[i] = a * sinf((float)i * f) + b;
}

/* x op value (a 0-dim tensor of value, broadcast) */
static wgt_status scal(wgt_context *ctx, wgt_binary_op op, const wgt_tensor *x, double value, wgt_tensor **out)
{
    wgt_tensor *v;
    wgt_status st = wgt_full(ctx, WGT_F32, 0, NULL, value, &v);
    if (!st) st = wgt_binary(op, x, v, out);
    wgt_tensor_free(v);
    return st;
}

/* y = softmax(2x + 1, dim 1), s = sum(y * x) */
static wgt_status smx(wgt_context *ctx, const wgt_tensor *x, wgt_tensor **y, wgt_tensor **s)
{
    wgt_tensor *a = NULL, *b = NULL, *m = NULL;
    wgt_status st = scal(ctx, WGT_BINARY_MUL, x, 2.0, &a);
    if (!st) st = scal(ctx, WGT_BINARY_ADD, a, 1.0, &b);
    if (!st) st = wgt_softmax(b, 1, y);
    if (!st) st = wgt_binary(WGT_BINARY_MUL, *y, x, &m);
    if (!st) st = wgt_reduce(WGT_REDUCE_SUM, m, 0, 0, 0, s);
    wgt_tensor_free(a), wgt_tensor_free(b), wgt_tensor_free(m);
    return st;
}

static wgt_status fn_smx(wgt_context *ctx, void *user, int n_inputs, wgt_tensor *const *in, const int64_t *scalars,
                         int max_outputs, wgt_tensor **out, int *n_out)
{
    (void)scalars, (void)n_inputs;
    (*(int *)user)++;
    if (max_outputs < 2) return WGT_ERR_INVALID_ARGUMENT;
    *n_out = 2;
    return smx(ctx, in[0], &out[0], &out[1]);
}

static double max_rel(const wgt_tensor *a, const wgt_tensor *b)
{
    int64_t n = wgt_tensor_numel(a);
    if (n != wgt_tensor_numel(b)) return INFINITY;
    float *x = malloc((size_t)(n ? n : 1) * 4), *y = malloc((size_t)(n ? n : 1) * 4);
    double d = 0;
    if (!x || !y || wgt_tensor_to_host(a, x, (size_t)n * 4) || wgt_tensor_to_host(b, y, (size_t)n * 4)) d = INFINITY;
    for (int64_t i = 0; d < INFINITY && i < n; i++) d = fmax(d, fabs((double)x[i] - y[i]) / (1e-6 + fabs((double)y[i])));
    free(x), free(y);
    return d;
}

/* Runs the cache on data v of shape r x c, compares with eager on the reference. */
static void run_smx(wgt_graph_cache *c, const float *v, int64_t r, int64_t cols, int transposed, const char *what)
{
    wgt_tensor *x, *xt = NULL, *out[2] = {0}, *wy, *ws, *rx;
    if (transposed) { /* the same values as an [r, c] view of a [c, r] tensor */
        float *t = malloc((size_t)(r * cols) * 4);
        for (int64_t i = 0; i < r; i++)
            for (int64_t j = 0; j < cols; j++) t[j * r + i] = v[i * cols + j];
        xt = mat(dev, t, cols, r);
        free(t);
        MUST(wgt_tensor_transpose(xt, 0, 1, &x));
    } else
        x = mat(dev, v, r, cols);
    int n = -1;
    MUST(wgt_graph_cache_run(c, 1, (const wgt_tensor *const *)&x, NULL, 2, out, &n));
    CHECK(n == 2 && out[0] && out[1], "%s: %d outputs", what, n);
    rx = mat(ref, v, r, cols);
    MUST(smx(ref, rx, &wy, &ws));
    double d0 = max_rel(out[0], wy), d1 = max_rel(out[1], ws);
    CHECK(d0 < 1e-5 && d1 < 1e-4, "%s: softmax off by %g, sum by %g (relative)", what, d0, d1);
    /* the caller's input is as it was */
    wgt_tensor *xc;
    MUST(wgt_tensor_contiguous(x, &xc));
    CHECK(max_rel(xc, rx) == 0, "%s: the cache wrote the caller's input", what);
    wgt_tensor_free(xc);
    wgt_tensor_free(x), wgt_tensor_free(xt), wgt_tensor_free(rx);
    wgt_tensor_free(out[0]), wgt_tensor_free(out[1]), wgt_tensor_free(wy), wgt_tensor_free(ws);
}

static void expect_stats(wgt_graph_cache *c, int graphs, int64_t captures, int64_t replays, int64_t stale,
                         int64_t evictions, const char *what)
{
    wgt_graph_cache_stats s;
    MUST(wgt_graph_cache_get_stats(c, &s));
    CHECK(s.graphs == graphs && s.captures == captures && s.replays == replays && s.stale == stale &&
              s.evictions == evictions && s.calls == captures + replays,
          "%s: graphs %d captures %lld replays %lld stale %lld evictions %lld calls %lld (want %d %lld %lld %lld %lld)",
          what, s.graphs, (long long)s.captures, (long long)s.replays, (long long)s.stale, (long long)s.evictions,
          (long long)s.calls, graphs, (long long)captures, (long long)replays, (long long)stale, (long long)evictions);
}

static void test_shapes(void)
{
    static float v[4][400];
    for (int k = 0; k < 4; k++) fill(v[k], 400, 1.0f + (float)k, 0.1f * (float)k, 0.31f + 0.07f * (float)k);
    int calls = 0;
    wgt_graph_cache *c;
    MUST(wgt_graph_cache_create(dev, fn_smx, &calls, 0, 2, &c));
    run_smx(c, v[0], 4, 50, 0, "[4, 50] first");
    expect_stats(c, 1, 1, 0, 0, 0, "after the first call");
    run_smx(c, v[1], 4, 50, 0, "[4, 50] new data");
    run_smx(c, v[2], 4, 50, 1, "[4, 50] transposed view");
    expect_stats(c, 1, 1, 2, 0, 0, "after two calls of a known shape");
    CHECK(calls == 1, "the function ran %d times for one shape", calls);
    run_smx(c, v[3], 8, 25, 0, "[8, 25]");
    run_smx(c, v[0], 8, 25, 0, "[8, 25] again");
    run_smx(c, v[1], 4, 50, 0, "[4, 50] again"); /* [8, 25] is now the least recently used */
    expect_stats(c, 2, 2, 4, 0, 0, "two shapes");
    run_smx(c, v[2], 2, 100, 0, "[2, 100] (evicts [8, 25])");
    expect_stats(c, 2, 3, 4, 0, 1, "a third shape past max_graphs 2");
    run_smx(c, v[3], 4, 50, 0, "[4, 50] kept");
    expect_stats(c, 2, 3, 5, 0, 1, "the recently used shape was kept");
    run_smx(c, v[3], 8, 25, 0, "[8, 25] captured again");
    expect_stats(c, 2, 4, 5, 0, 2, "the evicted shape captured again");
    CHECK(calls == 4, "the function ran %d times (want 4)", calls);

    /* outputs share the graph's storage: the next call of that shape rewrites them */
    wgt_tensor *x0 = mat(dev, v[0], 4, 50), *x1 = mat(dev, v[1], 4, 50), *o0[2], *o1[2];
    int n;
    MUST(wgt_graph_cache_run(c, 1, (const wgt_tensor *const *)&x0, NULL, 2, o0, &n));
    MUST(wgt_graph_cache_run(c, 1, (const wgt_tensor *const *)&x1, NULL, 2, o1, &n));
    CHECK(max_rel(o0[0], o1[0]) == 0, "a held output was not rewritten by the next call");
    /* too little room for the outputs, a wrong input */
    wgt_tensor *one[1];
    CHECK(wgt_graph_cache_run(c, 1, (const wgt_tensor *const *)&x0, NULL, 1, one, &n) == WGT_ERR_INVALID_ARGUMENT &&
              strstr(wgt_context_errmsg(dev), "room for 1"), "room for 1 output: %s", wgt_context_errmsg(dev));
    const wgt_tensor *none[1] = {NULL};
    CHECK(wgt_graph_cache_run(c, 1, none, NULL, 2, o0, &n) == WGT_ERR_INVALID_ARGUMENT, "a NULL input");
    for (int k = 0; k < 2; k++) wgt_tensor_free(o0[k]), wgt_tensor_free(o1[k]);
    wgt_tensor_free(x0), wgt_tensor_free(x1);
    wgt_graph_cache_free(c);
    wgt_graph_cache_free(NULL);
}

/* A seed as the cache's one scalar: uniform numbers of that seed, as eager. */
static wgt_status fn_rand(wgt_context *ctx, void *user, int n_inputs, wgt_tensor *const *in, const int64_t *scalars,
                          int max_outputs, wgt_tensor **out, int *n_out)
{
    (void)n_inputs, (void)max_outputs, (void)user;
    wgt_generator *gen;
    wgt_status st = wgt_generator_create((uint64_t)scalars[0], &gen);
    if (!st) st = wgt_graph_scalar(ctx, "seed", WGT_GRAPH_SEED, scalars[0], NULL);
    wgt_tensor *u = NULL;
    if (!st) st = wgt_rand_uniform(ctx, gen, WGT_F32, wgt_tensor_ndim(in[0]), wgt_tensor_shape(in[0]), 0.0, 1.0, &u);
    if (!st) st = wgt_binary(WGT_BINARY_ADD, u, in[0], &out[0]);
    wgt_tensor_free(u);
    wgt_generator_free(gen);
    *n_out = 1;
    return st;
}

static void test_scalar(void)
{
    wgt_graph_cache *c;
    MUST(wgt_graph_cache_create(dev, fn_rand, NULL, 1, 4, &c));
    static float v[256];
    fill(v, 256, 1.0f, 0.0f, 0.5f);
    for (int k = 0; k < 3; k++) {
        int64_t seed = 77 + 1000 * k;
        wgt_tensor *x = mat(dev, v, 16, 16), *rx = mat(ref, v, 16, 16), *o, *u, *w;
        int n;
        MUST(wgt_graph_cache_run(c, 1, (const wgt_tensor *const *)&x, &seed, 1, &o, &n));
        wgt_generator *gen;
        MUST(wgt_generator_create((uint64_t)seed, &gen));
        MUST(wgt_rand_uniform(ref, gen, WGT_F32, 2, wgt_tensor_shape(rx), 0.0, 1.0, &u));
        MUST(wgt_binary(WGT_BINARY_ADD, u, rx, &w));
        CHECK(max_rel(o, w) == 0, "seed %lld: the cached graph's numbers differ from eager", (long long)seed);
        wgt_generator_free(gen);
        wgt_tensor_free(x), wgt_tensor_free(rx), wgt_tensor_free(o), wgt_tensor_free(u), wgt_tensor_free(w);
    }
    expect_stats(c, 1, 1, 2, 0, 0, "three seeds");
    wgt_graph_cache_free(c);
    /* a function declaring another number of scalars than the cache's */
    MUST(wgt_graph_cache_create(dev, fn_rand, NULL, 0, 4, &c));
    wgt_tensor *x = mat(dev, v, 16, 16), *o;
    int n;
    CHECK(wgt_graph_cache_create(dev, fn_rand, NULL, 17, 4, &(wgt_graph_cache *){NULL}) == WGT_ERR_INVALID_ARGUMENT,
          "17 scalars");
    wgt_graph_cache_free(c);
    MUST(wgt_graph_cache_create(dev, fn_rand, NULL, 1, 4, &c));
    wgt_graph_cache *c0;
    MUST(wgt_graph_cache_create(dev, fn_smx, &n, 1, 4, &c0));
    int64_t s = 3;
    CHECK(wgt_graph_cache_run(c0, 1, (const wgt_tensor *const *)&x, &s, 2, (wgt_tensor *[2]){0}, &n) ==
                  WGT_ERR_MISUSE && strstr(wgt_context_errmsg(dev), "declared 0 graph scalars"),
          "a function declaring no scalar for a cache of one: %s", wgt_context_errmsg(dev));
    CHECK(!wgt_graph_capturing(dev), "the capture is over after a failed capture");
    MUST(wgt_graph_cache_run(c, 1, (const wgt_tensor *const *)&x, &s, 1, &o, &n));
    wgt_tensor_free(o), wgt_tensor_free(x);
    wgt_graph_cache_free(c), wgt_graph_cache_free(c0);
}

/* Data-dependent: the elements of x above 0, times 3, and their sum. */
static wgt_status sel(wgt_context *ctx, const wgt_tensor *x, wgt_tensor **y, wgt_tensor **s)
{
    wgt_tensor *z = NULL, *m = NULL, *k = NULL;
    wgt_status st = wgt_tensor_zeros(ctx, WGT_F32, 0, NULL, &z);
    if (!st) st = wgt_binary(WGT_BINARY_GT, x, z, &m);
    if (!st) st = wgt_masked_select(x, m, &k);
    if (!st) st = scal(ctx, WGT_BINARY_MUL, k, 3.0, y);
    if (!st) st = wgt_reduce(WGT_REDUCE_SUM, *y, 0, 0, 0, s);
    wgt_tensor_free(z), wgt_tensor_free(m), wgt_tensor_free(k);
    return st;
}

static wgt_status fn_sel(wgt_context *ctx, void *user, int n_inputs, wgt_tensor *const *in, const int64_t *scalars,
                         int max_outputs, wgt_tensor **out, int *n_out)
{
    (void)scalars, (void)n_inputs, (void)max_outputs;
    (*(int *)user)++;
    *n_out = 2;
    return sel(ctx, in[0], &out[0], &out[1]);
}

static void check_sel(wgt_graph_cache *c, const float *v, int64_t n, const char *what)
{
    wgt_tensor *x, *rx, *o[2] = {0}, *wy, *ws;
    MUST(wgt_tensor_from_host(dev, WGT_F32, 1, &n, v, &x));
    MUST(wgt_tensor_from_host(ref, WGT_F32, 1, &n, v, &rx));
    int k;
    wgt_status st = wgt_graph_cache_run(c, 1, (const wgt_tensor *const *)&x, NULL, 2, o, &k);
    CHECK(!st, "%s: %s", what, wgt_context_errmsg(dev));
    MUST(sel(ref, rx, &wy, &ws));
    if (!st) {
        CHECK(wgt_tensor_numel(o[0]) == wgt_tensor_numel(wy), "%s: %lld selected, eager %lld", what,
              (long long)wgt_tensor_numel(o[0]), (long long)wgt_tensor_numel(wy));
        CHECK(max_rel(o[0], wy) == 0 && max_rel(o[1], ws) < 1e-5, "%s: values differ from eager", what);
    }
    wgt_tensor_free(x), wgt_tensor_free(rx), wgt_tensor_free(o[0]), wgt_tensor_free(o[1]);
    wgt_tensor_free(wy), wgt_tensor_free(ws);
}

static void test_segments(void)
{
    enum { L = 3000 };
    static float a[L], b[L], d[L];
    fill(a, L, 1.0f, 0.2f, 0.13f);
    for (int i = 0; i < L; i++) b[i] = a[i] > 0 ? a[i] * 1.5f + 0.25f : a[i] - 1.0f; /* the same mask */
    fill(d, L, 1.0f, -0.3f, 0.29f);                                                   /* another count */
    int calls = 0;
    wgt_graph_cache *c;
    MUST(wgt_graph_cache_create(dev, fn_sel, &calls, 0, 2, &c));
    check_sel(c, a, L, "masked_select, first");
    check_sel(c, b, L, "masked_select, the same mask");
    expect_stats(c, 1, 1, 1, 0, 0, "a replay past an unchanged host read");
    check_sel(c, d, L, "masked_select, another mask");
    expect_stats(c, 1, 2, 1, 1, 0, "a stale graph captured again");
    check_sel(c, d, L, "masked_select, that mask again");
    expect_stats(c, 1, 2, 2, 1, 0, "the new graph replayed");
    CHECK(calls == 2, "the function ran %d times (want 2)", calls);
    wgt_graph_cache_free(c);

    /* the plain API: segments counted, a stale replay named */
    int64_t n = L;
    wgt_tensor *x, *x2, *y, *s;
    MUST(wgt_tensor_from_host(dev, WGT_F32, 1, &n, a, &x));
    MUST(wgt_tensor_from_host(dev, WGT_F32, 1, &n, d, &x2));
    wgt_graph *g;
    MUST(wgt_graph_begin(dev, 1, (const wgt_tensor *const *)&x));
    MUST(sel(dev, x, &y, &s));
    MUST(wgt_graph_end(dev, &g));
    wgt_graph_stats gs;
    MUST(wgt_graph_get_stats(g, &gs));
    CHECK(gs.segments >= 2, "masked_select in a graph: %d segments (want at least 2)", gs.segments);
    printf("masked_select captured: %d dispatches in %d segments\n", gs.dispatches, gs.segments);
    wgt_status st = wgt_graph_replay(g, 1, (const wgt_tensor *const *)&x2);
    CHECK(st == WGT_ERR_STALE && strstr(wgt_context_errmsg(dev), "a download (after kernel"),
          "a replay past a changed count: %d %s", (int)st, wgt_context_errmsg(dev));
    wgt_graph_free(g);
    wgt_tensor_free(x), wgt_tensor_free(x2), wgt_tensor_free(y), wgt_tensor_free(s);
}

int main(void)
{
    test_contexts(&dev, &ref);
    test_shapes();
    test_scalar();
    test_segments();
    wgt_context_free(dev);
    wgt_context_free(ref);
    return test_finish("test_gpu_graph_cache");
}
