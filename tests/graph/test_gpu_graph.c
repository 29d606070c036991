/* Graph capture and replay (include/wgt.h "Graph capture", notes/GRAPH.md) on this adapter:
 * a captured chain of ops replayed on new inputs against the same ops on the CPU reference;
 * a steady-state replay makes one submit, no bind group and no allocation; buffers freed during
 * capture are not handed out again while the graph lives; input mismatches are errors naming the
 * input and the difference; a seed declared as a graph scalar changes the replayed random numbers
 * as eager calls with that seed would; a download during capture ends a segment (a replay with the
 * same bytes there runs both segments in two submits; with other bytes it stops with WGT_ERR_STALE
 * after the first);
 * misuse (nested capture, replay during capture, a CPU-reference context) is refused; memory
 * planning shares the buffers of intermediates with disjoint live ranges, with replays unchanged. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support/check.h"

#define N 1000

static wgt_context *dev, *ref;

static wgt_tensor *vec(wgt_context *ctx, const float *v, int64_t n)
{
    wgt_tensor *t;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, &n, v, &t));
    return t;
}

static void fill(float *v, int n, float a, float b)
{
    for (int i = 0; i < n; i++) v[i] = a * sinf((float)i * 0.37f) + b;
}

/* y = softmax(exp(x) * x + c) over rows of [10, 100], c a constant uploaded during capture;
 * intermediates freed as they go. */
static wgt_status chain(wgt_context *ctx, const wgt_tensor *x, wgt_tensor **y)
{
    float cv[N];
    fill(cv, N, 0.25f, -0.5f);
    int64_t n = N, s2[2] = {10, 100};
    wgt_tensor *e = NULL, *m = NULL, *c = NULL, *a = NULL, *a2 = NULL;
    wgt_status st = wgt_unary(WGT_UNARY_EXP, x, &e);
    if (!st) st = wgt_binary(WGT_BINARY_MUL, e, x, &m);
    if (!st) st = wgt_tensor_from_host(ctx, WGT_F32, 1, &n, cv, &c);
    if (!st) st = wgt_binary(WGT_BINARY_ADD, m, c, &a);
    if (!st) st = wgt_tensor_reshape(a, 2, s2, &a2);
    if (!st) st = wgt_softmax(a2, 1, y);
    wgt_tensor_free(e), wgt_tensor_free(m), wgt_tensor_free(c), wgt_tensor_free(a), wgt_tensor_free(a2);
    return st;
}

static double max_diff(const wgt_tensor *a, const wgt_tensor *b)
{
    static float x[N], y[N];
    int64_t n = wgt_tensor_numel(a);
    if (n > N || n != wgt_tensor_numel(b) || wgt_tensor_to_host(a, x, (size_t)n * 4) || wgt_tensor_to_host(b, y, (size_t)n * 4))
        return INFINITY;
    double d = 0;
    for (int64_t i = 0; i < n; i++) d = fmax(d, fabs((double)x[i] - y[i]));
    return d;
}

static void test_replay(void)
{
    float v0[N], v1[N], v2[N];
    fill(v0, N, 1.0f, 0.0f);
    fill(v1, N, -0.7f, 0.3f);
    fill(v2, N, 0.4f, -0.2f);
    wgt_tensor *x0 = vec(dev, v0, N), *x1 = vec(dev, v1, N), *x2 = vec(dev, v2, N);
    wgt_tensor *y, *yr;
    wgt_graph *g;
    MUST(wgt_graph_begin(dev, 1, (const wgt_tensor *const *)&x0));
    CHECK(wgt_graph_capturing(dev), "a capture is open");
    MUST(chain(dev, x0, &y));
    MUST(wgt_graph_end(dev, &g));
    CHECK(!wgt_graph_capturing(dev), "the capture is over");
    wgt_graph_stats gs;
    MUST(wgt_graph_get_stats(g, &gs));
    /* exp and mul fuse into one kernel (the constant's upload comes between mul and add), add
     * into softmax as its prologue (through the reshape's view) */
    CHECK(gs.dispatches == 2 && gs.copies >= 1 && gs.bind_groups >= 1 && gs.inputs == 1 && gs.fused_kernels == 2 &&
          gs.fused_ops == 4, "stats: %d dispatches, %d copies, %d bind groups, %d fused kernels of %d ops",
          gs.dispatches, gs.copies, gs.bind_groups, gs.fused_kernels, gs.fused_ops);

    /* computed once during capture: the reference on x0 */
    wgt_tensor *rx = vec(ref, v0, N);
    MUST(chain(ref, rx, &yr));
    CHECK(max_diff(y, yr) < 1e-5, "the captured run: %g", max_diff(y, yr));
    wgt_tensor_free(rx), wgt_tensor_free(yr);

    /* buffers the capture freed are not handed out again: fill many new tensors of the sizes it
     * used, replay, and they must be intact */
    wgt_tensor *fillers[16];
    float pat[N];
    for (int i = 0; i < N; i++) pat[i] = 1234.5f;
    for (int k = 0; k < 16; k++) fillers[k] = vec(dev, pat, N);

    const wgt_tensor *const in1[1] = {x1};
    MUST(wgt_graph_replay(g, 1, in1));
    rx = vec(ref, v1, N);
    MUST(chain(ref, rx, &yr));
    CHECK(max_diff(y, yr) < 1e-5, "replay on x1: %g", max_diff(y, yr));
    wgt_tensor_free(rx), wgt_tensor_free(yr);
    for (int k = 0; k < 16; k++) {
        wgt_tensor *p = vec(ref, pat, N);
        CHECK(max_diff(fillers[k], p) == 0, "tensor %d allocated after the capture was overwritten by a replay", k);
        wgt_tensor_free(p);
    }

    /* steady state: one submit, no bind group, no buffer */
    wgt_memory_stats m0, m1;
    const wgt_tensor *const in2[1] = {x2};
    MUST(wgt_context_memory_stats(dev, &m0));
    MUST(wgt_graph_replay(g, 1, in2));
    MUST(wgt_context_memory_stats(dev, &m1));
    CHECK(m1.submits - m0.submits == 1, "%llu submits", (unsigned long long)(m1.submits - m0.submits));
    CHECK(m1.bind_group_misses == m0.bind_group_misses, "bind groups made by a replay");
    CHECK(m1.pool_hits + m1.pool_misses == m0.pool_hits + m0.pool_misses, "buffers allocated by a replay");
    CHECK(m1.dispatches - m0.dispatches == (uint64_t)gs.dispatches, "dispatches counted");
    rx = vec(ref, v2, N);
    MUST(chain(ref, rx, &yr));
    CHECK(max_diff(y, yr) < 1e-5, "replay on x2: %g", max_diff(y, yr));
    wgt_tensor_free(rx), wgt_tensor_free(yr);

    /* mismatches name the input and the difference */
    int64_t s7 = 7, s2[2] = {20, 50};
    wgt_tensor *bad_shape, *bad_dtype, *two_d;
    MUST(wgt_tensor_zeros(dev, WGT_F32, 1, &s7, &bad_shape));
    int64_t n = N;
    MUST(wgt_tensor_zeros(dev, WGT_F16, 1, &n, &bad_dtype));
    MUST(wgt_tensor_zeros(dev, WGT_F32, 2, s2, &two_d));
    const wgt_tensor *const b1[1] = {bad_shape};
    wgt_status st = wgt_graph_replay(g, 1, b1);
    CHECK(st == WGT_ERR_SHAPE && strstr(wgt_context_errmsg(dev), "input 0 has shape [7]") &&
              strstr(wgt_context_errmsg(dev), "[1000]"), "%s", wgt_context_errmsg(dev));
    const wgt_tensor *const b2[1] = {bad_dtype};
    st = wgt_graph_replay(g, 1, b2);
    CHECK(st == WGT_ERR_DTYPE && strstr(wgt_context_errmsg(dev), "input 0 is f16") &&
              strstr(wgt_context_errmsg(dev), "f32"), "%s", wgt_context_errmsg(dev));
    const wgt_tensor *const b3[1] = {two_d};
    st = wgt_graph_replay(g, 1, b3);
    CHECK(st == WGT_ERR_SHAPE && strstr(wgt_context_errmsg(dev), "[20, 50]"), "%s", wgt_context_errmsg(dev));
    st = wgt_graph_replay(g, 2, in1);
    CHECK(st == WGT_ERR_INVALID_ARGUMENT && strstr(wgt_context_errmsg(dev), "2 inputs given"), "%s",
          wgt_context_errmsg(dev));
    /* a layout it cannot copy: every other element of a [2000] tensor */
    float big[2 * N];
    fill(big, 2 * N, 0.5f, 0.1f);
    int64_t n2 = 2 * N, st2[1] = {N};
    wgt_tensor *wide = vec(dev, big, n2), *wide3, *every_other;
    int64_t s3[2] = {N, 2};
    MUST(wgt_tensor_reshape(wide, 2, s3, &wide3));
    MUST(wgt_tensor_narrow(wide3, 1, 1, 1, &every_other));
    wgt_tensor *eo;
    MUST(wgt_tensor_reshape(every_other, 1, st2, &eo));
    if (wgt_tensor_is_contiguous(eo)) {
        CHECK(0, "narrow of [1000, 2] should not be contiguous");
    } else {
        const wgt_tensor *const b4[1] = {eo};
        st = wgt_graph_replay(g, 1, b4);
        CHECK(st == WGT_ERR_INVALID_ARGUMENT && strstr(wgt_context_errmsg(dev), "strides [2]"), "%s",
              wgt_context_errmsg(dev));
    }
    wgt_tensor_free(eo), wgt_tensor_free(every_other), wgt_tensor_free(wide3), wgt_tensor_free(wide);
    wgt_tensor_free(bad_shape), wgt_tensor_free(bad_dtype), wgt_tensor_free(two_d);

    /* NULL inputs: replay on what the captured input holds now (x0 rewritten in place) */
    MUST(wgt_tensor_assign(x0, x1));
    MUST(wgt_graph_replay(g, 0, NULL));
    rx = vec(ref, v1, N);
    MUST(chain(ref, rx, &yr));
    CHECK(max_diff(y, yr) < 1e-5, "replay on the captured storage: %g", max_diff(y, yr));
    wgt_tensor_free(rx), wgt_tensor_free(yr);

    wgt_graph_free(g);
    for (int k = 0; k < 16; k++) wgt_tensor_free(fillers[k]);
    wgt_tensor_free(y), wgt_tensor_free(x0), wgt_tensor_free(x1), wgt_tensor_free(x2);
}

static void test_scalar_seed(void)
{
    int64_t n = 4096;
    wgt_generator *gen, *rgen;
    MUST(wgt_generator_create(1111, &gen));
    MUST(wgt_generator_create(2222, &rgen));
    wgt_graph *g;
    int seed;
    MUST(wgt_graph_begin(dev, 0, NULL));
    MUST(wgt_graph_scalar(dev, "seed", WGT_GRAPH_SEED, 1111, &seed));
    CHECK(wgt_graph_scalar(dev, "also", WGT_GRAPH_SEED, 1111, NULL) == WGT_ERR_INVALID_ARGUMENT &&
              strstr(wgt_context_errmsg(dev), "already has"), "%s", wgt_context_errmsg(dev));
    wgt_tensor *y, *yr;
    MUST(wgt_rand_uniform(dev, gen, WGT_F32, 1, &n, 0.0, 1.0, &y));
    MUST(wgt_graph_end(dev, &g));
    wgt_graph_stats gs;
    MUST(wgt_graph_get_stats(g, &gs));
    CHECK(gs.scalars == 1 && gs.scalar_fields == 2 * gs.dispatches && gs.dispatches >= 1,
          "%d scalars, %d fields, %d dispatches", gs.scalars, gs.scalar_fields, gs.dispatches);
    MUST(wgt_graph_set_scalar(g, seed, 2222));
    MUST(wgt_graph_replay(g, 0, NULL));
    MUST(wgt_rand_uniform(ref, rgen, WGT_F32, 1, &n, 0.0, 1.0, &yr));
    static float a[4096], b[4096];
    MUST(wgt_tensor_to_host(y, a, sizeof a));
    MUST(wgt_tensor_to_host(yr, b, sizeof b));
    CHECK(!memcmp(a, b, sizeof a), "replay with seed 2222 differs from eager uniform numbers of seed 2222");
    /* a seed past 32 bits: the high word is patched too */
    uint64_t big = 0x123456789abcull;
    MUST(wgt_graph_set_scalar(g, seed, (int64_t)big));
    MUST(wgt_graph_replay(g, 0, NULL));
    wgt_generator_manual_seed(rgen, big);
    wgt_tensor_free(yr);
    MUST(wgt_rand_uniform(ref, rgen, WGT_F32, 1, &n, 0.0, 1.0, &yr));
    MUST(wgt_tensor_to_host(y, a, sizeof a));
    MUST(wgt_tensor_to_host(yr, b, sizeof b));
    CHECK(!memcmp(a, b, sizeof a), "replay with a 45-bit seed differs from eager");
    CHECK(wgt_graph_set_scalar(g, 5, 1) == WGT_ERR_INVALID_ARGUMENT, "a scalar that does not exist");
    wgt_graph_free(g);
    wgt_tensor_free(y), wgt_tensor_free(yr);
    wgt_generator_free(gen), wgt_generator_free(rgen);
}

/* Scalars have roles: a parameter is tied only to a scalar of its own role. A seed of 3 and an
 * assign into x[3] (a constant offset of the same value), an offset scalar "slot" of 5 and an
 * assign into x[5], a position scalar of 5 too: replayed with seed 9 and slot 8, the constant
 * assign still writes x[3] and the slot's writes x[8]. (Matched by value alone, the seed took
 * the constant offset: x[9].) */
static void test_scalar_roles(void)
{
    int64_t n = 16, one = 1;
    wgt_tensor *x, *z, *v, *a, *b, *r;
    MUST(wgt_tensor_zeros(dev, WGT_F32, 1, &n, &x));
    MUST(wgt_tensor_zeros(dev, WGT_F32, 1, &n, &z));
    MUST(wgt_tensor_from_host(dev, WGT_F32, 1, &one, &(float){7.0f}, &v));
    wgt_generator *gen;
    MUST(wgt_generator_create(3, &gen));
    wgt_graph *g;
    int seed, slot;
    MUST(wgt_graph_begin(dev, 0, NULL));
    MUST(wgt_graph_scalar(dev, "seed", WGT_GRAPH_SEED, 3, &seed));
    MUST(wgt_graph_scalar(dev, "slot", WGT_GRAPH_OFFSET, 5, &slot));
    CHECK(wgt_graph_scalar(dev, "pos", WGT_GRAPH_POSITION, 5, NULL) == WGT_OK, "another role may share a value: %s",
          wgt_context_errmsg(dev));
    CHECK(wgt_graph_scalar(dev, "bad", (wgt_graph_role)99, 1, NULL) == WGT_ERR_INVALID_ARGUMENT, "an unknown role");
    MUST(wgt_tensor_narrow(x, 0, 3, 1, &a));
    MUST(wgt_tensor_assign(a, v));
    MUST(wgt_tensor_narrow(x, 0, 5, 1, &b));
    MUST(wgt_tensor_assign(b, v));
    MUST(wgt_rand_uniform(dev, gen, WGT_F32, 1, &n, 0.0, 1.0, &r));
    MUST(wgt_graph_end(dev, &g));
    wgt_graph_stats gs;
    MUST(wgt_graph_get_stats(g, &gs));
    CHECK(gs.scalars == 3 && gs.scalar_fields >= 3, "%d scalars, %d fields", gs.scalars, gs.scalar_fields);
    MUST(wgt_tensor_assign(x, z));
    MUST(wgt_graph_set_scalar(g, seed, 9));
    MUST(wgt_graph_set_scalar(g, slot, 8));
    MUST(wgt_graph_replay(g, 0, NULL));
    float h[16];
    MUST(wgt_tensor_to_host(x, h, sizeof h));
    int ok = 1;
    for (int i = 0; i < 16; i++) ok &= h[i] == (i == 3 || i == 8 ? 7.0f : 0.0f);
    CHECK(ok, "x after the replay: x[3] %g x[5] %g x[8] %g x[9] %g (want 7 0 7 0)", h[3], h[5], h[8], h[9]);
    wgt_graph_free(g);
    wgt_tensor_free(x), wgt_tensor_free(z), wgt_tensor_free(v), wgt_tensor_free(a), wgt_tensor_free(b);
    wgt_tensor_free(r);
    wgt_generator_free(gen);
}

/* An input with gaps between its elements (column 0 of a [4, 2] f32 tensor): a replay writes
 * exactly its elements (with wgt_tensor_assign, in the replay's submit); column 1 keeps its
 * values. (Copied as one byte range, it took the new tensor's.) Not yet: the same for 1- and
 * 2-byte elements (notes/GRAPH.md). */
static void test_input_neighbours(void)
{
    int64_t s2[2] = {4, 2};
    float b[8] = {1, 2, 3, 4, 5, 6, 7, 8}, c[8] = {10, 90, 30, 91, 50, 92, 70, 93}, h[8], hy[4];
    wgt_tensor *base, *other, *in, *innew, *y;
    MUST(wgt_tensor_from_host(dev, WGT_F32, 2, s2, b, &base));
    MUST(wgt_tensor_from_host(dev, WGT_F32, 2, s2, c, &other));
    MUST(wgt_tensor_narrow(base, 1, 0, 1, &in));
    MUST(wgt_tensor_narrow(other, 1, 0, 1, &innew));
    wgt_graph *g;
    MUST(wgt_graph_begin(dev, 1, (const wgt_tensor *const *)&in));
    MUST(wgt_unary(WGT_UNARY_NEG, in, &y));
    MUST(wgt_graph_end(dev, &g));
    wgt_memory_stats s0, s1;
    MUST(wgt_context_memory_stats(dev, &s0));
    MUST(wgt_graph_replay(g, 1, (const wgt_tensor *const *)&innew));
    MUST(wgt_context_memory_stats(dev, &s1));
    MUST(wgt_tensor_to_host(base, h, sizeof h));
    MUST(wgt_tensor_to_host(y, hy, sizeof hy));
    static const float want[8] = {10, 2, 30, 4, 50, 6, 70, 8};
    CHECK(!memcmp(h, want, sizeof h), "the storage after the replay: %g %g %g %g %g %g %g %g (want 10 2 30 4 50 6 70 8)",
          h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]);
    CHECK(hy[0] == -10 && hy[1] == -30 && hy[2] == -50 && hy[3] == -70, "the replay's result %g %g %g %g", hy[0],
          hy[1], hy[2], hy[3]);
    CHECK(s1.submits - s0.submits == 1, "%llu submits for the replay (want 1)",
          (unsigned long long)(s1.submits - s0.submits));
    wgt_graph_free(g);
    wgt_tensor_free(base), wgt_tensor_free(other), wgt_tensor_free(in), wgt_tensor_free(innew), wgt_tensor_free(y);
}

static void test_refusals(void)
{
    float v[N];
    fill(v, N, 1.0f, 0.0f);
    wgt_tensor *x = vec(dev, v, N), *y;
    wgt_graph *g = (wgt_graph *)1;
    MUST(wgt_graph_begin(dev, 1, (const wgt_tensor *const *)&x));
    CHECK(wgt_graph_begin(dev, 0, NULL) == WGT_ERR_MISUSE, "a second capture");
    MUST(wgt_unary(WGT_UNARY_EXP, x, &y));
    /* a download during capture works and ends a segment: a replay reads the same bytes again
     * and goes on only if they are what the host saw at capture */
    float back[N];
    MUST(wgt_tensor_to_host(y, back, sizeof back));
    CHECK(fabsf(back[1] - expf(v[1])) < 1e-5f * expf(v[1]), "a download during capture");
    wgt_tensor *y2;
    MUST(wgt_unary(WGT_UNARY_NEG, y, &y2));
    MUST(wgt_graph_end(dev, &g));
    wgt_graph_stats gs0;
    MUST(wgt_graph_get_stats(g, &gs0));
    CHECK(gs0.segments == 2 && gs0.dispatches == 2, "%d segments, %d dispatches (want 2, 2)", gs0.segments,
          gs0.dispatches);
    wgt_memory_stats m0, m1;
    MUST(wgt_context_memory_stats(dev, &m0));
    MUST(wgt_graph_replay(g, 1, (const wgt_tensor *const *)&x)); /* the same bytes: both segments run */
    MUST(wgt_context_memory_stats(dev, &m1));
    CHECK(m1.submits - m0.submits == 2, "%llu submits for a replay of two segments (want 2)",
          (unsigned long long)(m1.submits - m0.submits));
    MUST(wgt_tensor_to_host(y2, back, sizeof back));
    CHECK(fabsf(back[1] + expf(v[1])) < 1e-5f * expf(v[1]), "the second segment after an unchanged read");
    float v2[N];
    fill(v2, N, 2.0f, 0.5f);
    wgt_tensor *x2 = vec(dev, v2, N);
    wgt_status st = wgt_graph_replay(g, 1, (const wgt_tensor *const *)&x2);
    CHECK(st == WGT_ERR_STALE && strstr(wgt_context_errmsg(dev), "segment 1 ends at a download") &&
              strstr(wgt_context_errmsg(dev), "capture again"), "a changed read: %d %s", (int)st,
          wgt_context_errmsg(dev));
    /* the first segment ran (y is exp of the new input), the second did not (y2 as it was) */
    MUST(wgt_tensor_to_host(y, back, sizeof back));
    CHECK(fabsf(back[1] - expf(v2[1])) < 1e-5f * expf(v2[1]), "the segment before the changed read ran");
    MUST(wgt_tensor_to_host(y2, back, sizeof back));
    CHECK(fabsf(back[1] + expf(v[1])) < 1e-5f * expf(v[1]), "the segment after the changed read did not run");
    wgt_graph_free(g);
    wgt_tensor_free(x2), wgt_tensor_free(y2);
    CHECK(wgt_graph_end(dev, &g) == WGT_ERR_MISUSE, "end without a capture");
    wgt_tensor_free(y);

    wgt_graph *g2;
    MUST(wgt_graph_begin(dev, 0, NULL));
    MUST(wgt_unary(WGT_UNARY_EXP, x, &y));
    MUST(wgt_graph_end(dev, &g2));
    MUST(wgt_graph_begin(dev, 0, NULL));
    CHECK(wgt_graph_replay(g2, 0, NULL) == WGT_ERR_MISUSE, "a replay during a capture");
    wgt_graph *g3;
    MUST(wgt_graph_end(dev, &g3));
    wgt_graph_stats gs;
    MUST(wgt_graph_get_stats(g3, &gs));
    CHECK(gs.dispatches == 0, "an empty graph");
    MUST(wgt_graph_replay(g3, 0, NULL));
    wgt_graph_free(g3);
    wgt_graph_free(g2);
    wgt_graph_free(NULL);
    wgt_tensor_free(y);
    wgt_tensor_free(x);
    CHECK(wgt_graph_begin(ref, 0, NULL) == WGT_ERR_UNSUPPORTED, "capture on the CPU reference");
}

/* Memory planning: a chain of 8 softmaxes (reductions: nothing fuses) over [10, 100], each
 * intermediate freed as it goes, needs two buffers for its 7 intermediates instead of 7. The
 * replay gives the values of the same chain run eagerly, planned or not (WGT_GRAPH_PLAN=0), and
 * the planned graph keeps fewer bytes. */
static wgt_status softmax_chain(const wgt_tensor *x, wgt_tensor **y)
{
    wgt_tensor *t = wgt_tensor_ref(x);
    wgt_status st = t ? WGT_OK : WGT_ERR_OUT_OF_MEMORY;
    for (int k = 0; k < 8 && !st; k++) {
        wgt_tensor *u = NULL;
        if (!(st = wgt_softmax(t, k & 1 ? 0 : 1, &u))) {
            wgt_tensor *v = NULL;
            st = wgt_binary(WGT_BINARY_MUL, u, t, &v); /* t stays live across the softmax */
            wgt_tensor_free(u);
            u = v;
        }
        wgt_tensor_free(t);
        t = u;
    }
    *y = t;
    return st;
}

static void test_memory_plan(void)
{
    float v0[N], v1[N];
    fill(v0, N, 1.0f, 0.0f);
    fill(v1, N, -0.5f, 0.25f);
    int64_t s2[2] = {10, 100};
    wgt_tensor *x0, *x1, *want;
    MUST(wgt_tensor_from_host(dev, WGT_F32, 2, s2, v0, &x0));
    MUST(wgt_tensor_from_host(dev, WGT_F32, 2, s2, v1, &x1));
    MUST(softmax_chain(x1, &want));
    wgt_graph_stats st[2];
    for (int planned = 0; planned < 2; planned++) {
        setenv("WGT_GRAPH_PLAN", planned ? "1" : "0", 1);
        wgt_graph *g;
        wgt_tensor *y = NULL;
        const wgt_tensor *in[1] = {x0};
        MUST(wgt_graph_begin(dev, 1, in));
        wgt_status s = softmax_chain(x0, &y);
        MUST(wgt_graph_end(dev, &g));
        MUST(s);
        /* the pool may hand the given-back buffers out now: make some tensors on them */
        wgt_tensor *junk[8];
        for (int k = 0; k < 8; k++) MUST(wgt_full(dev, WGT_F32, 2, s2, 1e30, &junk[k]));
        in[0] = x1;
        MUST(wgt_graph_replay(g, 1, in));
        CHECK(max_diff(y, want) == 0, "memory plan %d: the replay differs from eager by %g", planned, max_diff(y, want));
        MUST(wgt_graph_get_stats(g, &st[planned]));
        for (int k = 0; k < 8; k++) wgt_tensor_free(junk[k]);
        wgt_graph_free(g);
        wgt_tensor_free(y);
    }
    unsetenv("WGT_GRAPH_PLAN");
    CHECK(st[0].peak_bytes == st[0].unplanned_bytes && st[0].planned_buffers == 0,
          "WGT_GRAPH_PLAN=0: %llu bytes kept, %llu unplanned, %d buffers planned", (unsigned long long)st[0].peak_bytes,
          (unsigned long long)st[0].unplanned_bytes, st[0].planned_buffers);
    CHECK(st[1].peak_bytes < st[0].peak_bytes && st[1].planned_buffers >= 5,
          "planned: %llu bytes kept (unplanned %llu), %d buffers given back; want fewer bytes and >= 5 buffers",
          (unsigned long long)st[1].peak_bytes, (unsigned long long)st[0].peak_bytes, st[1].planned_buffers);
    printf("memory plan: a chain of 8 softmax * x keeps %llu bytes planned, %llu unplanned (%d buffers given back)\n",
           (unsigned long long)st[1].peak_bytes, (unsigned long long)st[0].peak_bytes, st[1].planned_buffers);
    wgt_tensor_free(x0), wgt_tensor_free(x1), wgt_tensor_free(want);
}

int main(void)
{
    MUST(wgt_context_create(NULL, &dev));
    wgt_context_options ro = {0};
    ro.backend = WGT_BACKEND_CPU;
    MUST(wgt_context_create(&ro, &ref));
    test_replay();
    test_scalar_seed();
    test_scalar_roles();
    test_input_neighbours();
    test_refusals();
    test_memory_plan();
    /* a graph still alive when its context goes: freeing it afterwards only frees host memory */
    wgt_graph *g;
    MUST(wgt_graph_begin(dev, 0, NULL));
    int64_t n = 64;
    wgt_tensor *z;
    MUST(wgt_tensor_zeros(dev, WGT_F32, 1, &n, &z));
    MUST(wgt_graph_end(dev, &g));
    wgt_tensor_free(z);
    wgt_context_free(dev);
    CHECK(wgt_graph_replay(g, 0, NULL) == WGT_ERR_MISUSE, "a replay after the context was freed");
    wgt_graph_free(g);
    wgt_context_free(ref);
    return test_finish("test_gpu_graph");
}
