/* Captured plain ops routed to the decoder's fused kernels (src/ops/fused_route.c,
 * WGT_GRAPH_ROUTE=1): one token's
 *  - rms_norm -> linear (+ bias) -> qkv_rope_cache, the position a graph scalar: ONE dispatch of
 *    fused_linear_qkv_rope; replayed at another position on another x, q and both caches equal the
 *    hand-fused op (wgt_fused_qkv_rope_cache) run eagerly bit for bit, and the plain ops within 1e-4;
 *  - rms_norm -> linear (f16 weight, no bias): ONE dispatch, equal to wgt_fused_linear's norm
 *    prologue bit for bit;
 *  - silu(gu[:, :F]) * gu[:, F:] -> linear -> + residual: ONE dispatch, equal to wgt_fused_linear's
 *    SwiGLU prologue with the residual bit for bit;
 *  - linear (+ bias) -> + residual: ONE dispatch (wgt_fused_linear with the residual);
 * and each with WGT_GRAPH_ROUTE=0 keeps its plain dispatches (the generic fusion's count); then 6
 * cases of random kind, shape (K a multiple of 8 up to 256, N up to 299), weight dtype (f32, f16,
 * bf16), bias and residual (`test_gpu_graph_route N` runs N). */
#include <math.h>
#include <string.h>

#include "ops/fused.h"
#include "support/linear.h"

static wgt_context *dev;

static wgt_tensor *make(wgt_dtype dt, int nd, const int64_t *sh, const float *v)
{
    wgt_tensor *t, *c;
    MUST(wgt_tensor_from_host(dev, WGT_F32, nd, sh, v, &t));
    if (dt == WGT_F32) return t;
    MUST(wgt_tensor_cast(t, dt, &c));
    wgt_tensor_free(t);
    return c;
}

static wgt_tensor *rnd(wgt_dtype dt, int nd, const int64_t *sh, double lo, double hi)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= sh[d];
    float *v = test_random_f32(n, lo, hi);
    wgt_tensor *t = make(dt, nd, sh, v);
    free(v);
    return t;
}

/* a against b: bit for bit (tol 0) or within tol relative to 1 + |b|. */
static int differ(const wgt_tensor *a, const wgt_tensor *b, double tol, const char *what)
{
    int64_t n = wgt_tensor_numel(a);
    CHECK(n == wgt_tensor_numel(b), "%s: %lld elements vs %lld", what, (long long)n, (long long)wgt_tensor_numel(b));
    float *x = malloc((size_t)n * 4 + 4), *y = malloc((size_t)n * 4 + 4);
    MUST(wgt_tensor_to_host(a, x, (size_t)n * 4));
    MUST(wgt_tensor_to_host(b, y, (size_t)n * 4));
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        int ok = tol == 0 ? x[i] == y[i] : fabs((double)x[i] - y[i]) <= tol * (1 + fabs((double)y[i]));
        if (!ok && !bad++) fprintf(stderr, "%s: element %lld: %.9g vs %.9g\n", what, (long long)i, x[i], y[i]);
    }
    free(x), free(y);
    return bad;
}

static int dispatches(wgt_graph *g)
{
    wgt_graph_stats st;
    MUST(wgt_graph_get_stats(g, &st));
    return st.dispatches;
}

/* ---- rms_norm -> q/k/v product -> rotation and cache writes ---------------------------------- */

enum { HQ = 4, HKV = 2, HD = 16, CTX = 12, K = 64 };

typedef struct qkv_ops {
    wgt_tensor *nw, *w, *b, *kc, *vc;
    wgt_rope_params rp;
} qkv_ops;

static void qkv_plain(const wgt_tensor *x, const qkv_ops *o, int64_t pos, wgt_tensor **q)
{
    wgt_tensor *h, *qkv;
    MUST(wgt_rms_norm(x, 1, o->nw, 1e-6, &h));
    MUST(wgt_linear(h, o->w, o->b, &qkv));
    MUST(wgt_qkv_rope_cache(qkv, HQ, HKV, HD, pos, HD, 0, &o->rp, o->kc, o->vc, q));
    wgt_tensor_free(h), wgt_tensor_free(qkv);
}

/* A copy of t (its own storage). */
static wgt_tensor *copy(const wgt_tensor *t)
{
    wgt_tensor *c;
    MUST(wgt_tensor_copy(t, &c));
    return c;
}

static void qkv_case(wgt_dtype wdt, int bias)
{
    char name[64];
    snprintf(name, sizeof name, "norm > q/k/v > rope + cache (%s weight%s)", wgt_dtype_name(wdt), bias ? ", bias" : "");
    int64_t xs[2] = {1, K}, ws[2] = {(HQ + 2 * HKV) * HD, K}, nb = ws[0], nk = K, cs[3] = {HKV, CTX, HD};
    qkv_ops o = {0};
    o.rp.theta = 10000;
    o.nw = rnd(WGT_F32, 1, &nk, 0.5, 1.5);
    o.w = rnd(wdt, 2, ws, -0.5, 0.5);
    o.b = bias ? rnd(WGT_F32, 1, &nb, -1, 1) : NULL;
    o.kc = rnd(WGT_F32, 3, cs, -1, 1);
    o.vc = rnd(WGT_F32, 3, cs, -1, 1);
    wgt_tensor *k0 = copy(o.kc), *v0 = copy(o.vc); /* the caches before the replay */
    wgt_tensor *x = rnd(WGT_F32, 2, xs, -2, 2), *x2 = rnd(WGT_F32, 2, xs, -2, 2);
    const wgt_tensor *in[1] = {x}, *in2[1] = {x2};
    int counts[2], pi = 0;
    wgt_graph *g = NULL;
    wgt_tensor *qg = NULL;
    for (int pass = 0; pass < 2; pass++) { /* WGT_GRAPH_ROUTE=0, then 1 (kept) */
        setenv("WGT_GRAPH_ROUTE", pass ? "1" : "0", 1);
        MUST(wgt_graph_begin(dev, 1, in));
        MUST(wgt_graph_scalar(dev, "pos", WGT_GRAPH_POSITION, 3, &pi));
        wgt_tensor *q;
        qkv_plain(x, &o, 3, &q);
        wgt_graph *gg;
        MUST(wgt_graph_end(dev, &gg));
        counts[pass] = dispatches(gg);
        if (pass) g = gg, qg = q;
        else wgt_graph_free(gg), wgt_tensor_free(q);
    }
    unsetenv("WGT_GRAPH_ROUTE");
    printf("%s: %d dispatch routed, %d without\n", name, counts[1], counts[0]);
    CHECK(counts[1] == 1 && counts[0] >= 2, "%s: %d dispatches routed (want 1), %d without (want 2 or more)", name,
          counts[1], counts[0]);
    /* the replay at position 7 on x2, the caches reset; the hand-fused op and the plain ops on copies */
    MUST(wgt_tensor_assign(o.kc, k0));
    MUST(wgt_tensor_assign(o.vc, v0));
    MUST(wgt_graph_set_scalar(g, pi, 7));
    MUST(wgt_graph_replay(g, 1, in2));
    wgt_tensor *kh = copy(k0), *vh = copy(v0), *kp = copy(k0), *vp = copy(v0), *qh, *qp;
    MUST(wgt_fused_qkv_rope_cache(x2, o.nw, 1e-6, o.w, o.b, HQ, HKV, HD, 7, HD, 0, &o.rp, kh, vh, &qh));
    qkv_ops po = o;
    po.kc = kp, po.vc = vp;
    qkv_plain(x2, &po, 7, &qp);
    CHECK(!differ(qg, qh, 0, name), "%s: q of the routed replay differs from the hand-fused op", name);
    CHECK(!differ(o.kc, kh, 0, name), "%s: the k cache of the routed replay differs from the hand-fused op's", name);
    CHECK(!differ(o.vc, vh, 0, name), "%s: the v cache of the routed replay differs from the hand-fused op's", name);
    CHECK(!differ(qg, qp, 1e-4, name), "%s: q of the routed replay differs from the plain ops", name);
    CHECK(!differ(o.kc, kp, 1e-4, name), "%s: the k cache differs from the plain ops'", name);
    CHECK(!differ(o.vc, vp, 1e-4, name), "%s: the v cache differs from the plain ops'", name);
    wgt_tensor_free(qg), wgt_tensor_free(qh), wgt_tensor_free(qp);
    wgt_tensor_free(kh), wgt_tensor_free(vh), wgt_tensor_free(kp), wgt_tensor_free(vp);
    wgt_tensor_free(k0), wgt_tensor_free(v0);
    wgt_graph_free(g);
    wgt_tensor_free(x), wgt_tensor_free(x2);
    wgt_tensor_free(o.nw), wgt_tensor_free(o.w), wgt_tensor_free(o.b), wgt_tensor_free(o.kc), wgt_tensor_free(o.vc);
}

/* ---- a product with its norm, activation or residual ----------------------------------------- */

enum { NORM, SWIGLU, RESIDUAL };

/* The plain ops of each kind: y = linear(pro(x), w, b) + r. */
static void lin_plain(int kind, const wgt_tensor *x, const wgt_tensor *nw, const wgt_tensor *w, const wgt_tensor *b,
                      const wgt_tensor *r, wgt_tensor **y)
{
    wgt_tensor *a = NULL, *p = NULL;
    if (kind == NORM) MUST(wgt_rms_norm(x, 1, nw, 1e-5, &a));
    if (kind == SWIGLU) {
        int64_t F = wgt_tensor_shape(x)[1] / 2;
        wgt_tensor *gt, *up, *sg;
        MUST(wgt_tensor_narrow(x, 1, 0, F, &gt));
        MUST(wgt_tensor_narrow(x, 1, F, F, &up));
        MUST(wgt_unary(WGT_UNARY_SILU, gt, &sg));
        MUST(wgt_binary(WGT_BINARY_MUL, sg, up, &a));
        wgt_tensor_free(gt), wgt_tensor_free(up), wgt_tensor_free(sg);
    }
    MUST(wgt_linear(a ? a : x, w, b, r ? &p : y));
    if (r) MUST(wgt_binary(WGT_BINARY_ADD, p, r, y));
    wgt_tensor_free(a), wgt_tensor_free(p);
}

static void lin_case(int kind, int64_t Kx, int64_t N, wgt_dtype wdt, int bias, int res)
{
    static const char *kinds[] = {"norm > linear", "silu * up > linear", "linear"};
    char name[96];
    snprintf(name, sizeof name, "%s%s%s (%s weight)", kinds[kind], bias ? " + bias" : "", res ? " + residual" : "",
             wgt_dtype_name(wdt));
    int64_t Kw = kind == SWIGLU ? Kx / 2 : Kx, xs[2] = {1, Kx}, ws[2] = {N, Kw}, rs[2] = {1, N};
    wgt_tensor *x = rnd(WGT_F32, 2, xs, -2, 2), *x2 = rnd(WGT_F32, 2, xs, -2, 2), *nw = rnd(WGT_F32, 1, &Kw, 0.5, 1.5),
               *w = rnd(wdt, 2, ws, -0.5, 0.5), *b = bias ? rnd(WGT_F32, 1, &N, -1, 1) : NULL,
               *r = res ? rnd(WGT_F32, 2, rs, -1, 1) : NULL;
    const wgt_tensor *in[1] = {x}, *in2[1] = {x2};
    int counts[2];
    wgt_graph *g = NULL;
    wgt_tensor *yg = NULL;
    for (int pass = 0; pass < 2; pass++) {
        setenv("WGT_GRAPH_ROUTE", pass ? "1" : "0", 1);
        MUST(wgt_graph_begin(dev, 1, in));
        wgt_tensor *y;
        lin_plain(kind, x, nw, w, b, r, &y);
        wgt_graph *gg;
        MUST(wgt_graph_end(dev, &gg));
        counts[pass] = dispatches(gg);
        if (pass) g = gg, yg = y;
        else wgt_graph_free(gg), wgt_tensor_free(y);
    }
    unsetenv("WGT_GRAPH_ROUTE");
    printf("%s: %d dispatch routed, %d without\n", name, counts[1], counts[0]);
    CHECK(counts[1] == 1, "%s: %d dispatches routed (want 1)", name, counts[1]);
    MUST(wgt_graph_replay(g, 1, in2));
    wgt_tensor *yh, *yp;
    wgt_fused_prologue pro = kind == NORM ? WGT_PRO_RMS_NORM : kind == SWIGLU ? WGT_PRO_SWIGLU : WGT_PRO_NONE;
    MUST(wgt_fused_linear(x2, pro, kind == NORM ? nw : NULL, 1e-5, w, b, r, &yh));
    lin_plain(kind, x2, nw, w, b, r, &yp);
    CHECK(!differ(yg, yh, 0, name), "%s: the routed replay differs from wgt_fused_linear", name);
    CHECK(!differ(yg, yp, 1e-4, name), "%s: the routed replay differs from the plain ops", name);
    wgt_tensor_free(yg), wgt_tensor_free(yh), wgt_tensor_free(yp);
    wgt_graph_free(g);
    wgt_tensor_free(x), wgt_tensor_free(x2), wgt_tensor_free(nw), wgt_tensor_free(w), wgt_tensor_free(b),
        wgt_tensor_free(r);
}

int main(int argc, char **argv)
{
    int n_random = argc > 1 ? atoi(argv[1]) : 6;
    wgt_context *ref;
    test_contexts(&dev, &ref);
    test_rng = 0x5EED17ull;
    qkv_case(WGT_F32, 1);
    qkv_case(WGT_F16, 0);
    lin_case(NORM, 64, 96, WGT_F16, 0, 0);
    lin_case(NORM, 32, 40, WGT_F32, 1, 0);
    lin_case(SWIGLU, 2 * 48, 40, WGT_F32, 0, 1);
    lin_case(SWIGLU, 2 * 64, 24, WGT_F16, 1, 0);
    lin_case(RESIDUAL, 64, 40, WGT_F32, 1, 1);
    /* random shapes, weight dtypes, biases and residuals (argv[1] cases more by hand) */
    static const wgt_dtype wdts[3] = {WGT_F32, WGT_F16, WGT_BF16};
    for (int i = 0; i < n_random; i++) {
        int kind = (int)test_uniform(0, 3);
        int64_t K = 8 * (int64_t)test_uniform(1, 33), N = (int64_t)test_uniform(1, 300);
        lin_case(kind, kind == SWIGLU ? 2 * K : K, N, wdts[(int)test_uniform(0, 3)], test_uniform(0, 1) < 0.5,
                 kind == NORM ? 0 : test_uniform(0, 1) < 0.7);
    }
    wgt_context_free(dev);
    wgt_context_free(ref);
    return test_finish("test_gpu_graph_route");
}
