/* Matrix products in captured graphs (notes/GRAPH.md "Stage 7"):
 *  - products that share an input (q, k, v projections; a gated MLP's gate and up) merged into one
 *    dispatch: gemv (1 and 3 rows) and tiled (70 rows; 2 x 35 folded; the register tiles, and
 *    matmul.wgsl's with WGT_MATMUL_TILE=0) products, f32 and f16
 *    weights, with and without biases, an unrelated op between them, and a consumer of the first
 *    product before the others (which then cannot move: only the rest merge). Captured on x, the
 *    replay on x2 must equal eager on x2 bit for bit (the merged kernel sums each output as the
 *    product's own did) and the CPU reference within 1e-4 relative; after a weight is changed
 *    with wgt_tensor_assign the replay must follow it (the weights are read in place, never
 *    copied). The dispatches must drop, and WGT_GRAPH_MERGE=0 must keep them apart.
 *  - an elementwise chain after a product fused into its store (bias row added, an activation,
 *    a scale): ONE dispatch with WGT_GRAPH_FUSE_MATMUL=1, equal to eager bit for bit; a chain
 *    ending in f16 keeps its cast apart; WGT_GRAPH_FUSE_MATMUL=0 keeps the chain apart, and by
 *    default only decode's products (the gemv kernel, up to 4 rows) take it.
 *  - an elementwise chain before a gemv product fused into its loads of A (a prologue: SwiGLU's
 *    silu(gate) * up computed at each element the down projection reads; opt-in,
 *    WGT_GRAPH_FUSE_MATMUL_PRO=1), with the residual add after it as its epilogue: ONE dispatch,
 *    equal to eager bit for bit and to the CPU reference within 1e-4; by default the chain stays
 *    apart (2 dispatches).
 *  - an rms_norm over one row fused into the gemv product after it (WGT_GRAPH_FUSE_NORM_MATMUL=1,
 *    opt-in): ONE dispatch, equal to eager within 1e-5 (the row's sum is the product workgroup's,
 *    not the norm kernel's); unset, 2 dispatches and bit for bit. */
#include <math.h>
#include <string.h>

#include "support/linear.h"

static wgt_context *dev, *ref;

static wgt_tensor *make(wgt_context *ctx, wgt_dtype dt, int nd, const int64_t *sh, const float *v)
{
    wgt_tensor *t, *c;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, nd, sh, v, &t));
    if (dt == WGT_F32) return t;
    MUST(wgt_tensor_cast(t, dt, &c));
    wgt_tensor_free(t);
    return c;
}

static void to_f32(const wgt_tensor *t, float *out, int64_t n)
{
    wgt_tensor *c;
    MUST(wgt_tensor_cast(t, WGT_F32, &c));
    MUST(wgt_tensor_to_host(c, out, (size_t)n * 4));
    wgt_tensor_free(c);
}

/* Compare a with b: bit for bit (tol 0, NaN = NaN) or within tol relative to 1 + |b|. */
static int differ(const wgt_tensor *a, const wgt_tensor *b, double tol, const char *what)
{
    int64_t n = wgt_tensor_numel(a);
    CHECK(n == wgt_tensor_numel(b), "%s: %lld elements vs %lld", what, (long long)n, (long long)wgt_tensor_numel(b));
    float *x = malloc((size_t)n * 4 + 4), *y = malloc((size_t)n * 4 + 4);
    to_f32(a, x, n), to_f32(b, y, n);
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        int ok = tol == 0 ? (x[i] == y[i] || (isnan(x[i]) && isnan(y[i]))) : fabs((double)x[i] - y[i]) <= tol * (1 + fabs((double)y[i]));
        if (!ok && !bad++) fprintf(stderr, "%s: element %lld: %.9g vs %.9g\n", what, (long long)i, x[i], y[i]);
    }
    free(x), free(y);
    return bad;
}

/* ---- merging ----------------------------------------------------------------------------------- */

typedef struct mcase {
    const char *name;
    int64_t lead, M, K, N[3];
    int n_prod, bias, between; /* between: 1 an unrelated op between the products, 2 a consumer of the first */
    wgt_dtype wdt;
    int mlp; /* silu(p0) * p1 after the two products (fused into one kernel after the merge) */
    const char *tile; /* WGT_MATMUL_TILE for the case (0: matmul.wgsl instead of the register tiles) */
} mcase;

typedef struct operands {
    wgt_tensor *x, *x2, *w[3], *b[3], *other;
} operands;

/* The step: y[t] = x w_t^T (+ b_t); y[3]: the op between (or the MLP's product). */
static void step(const mcase *c, const wgt_tensor *x, const operands *o, wgt_tensor **y)
{
    memset(y, 0, 4 * sizeof *y);
    for (int t = 0; t < c->n_prod; t++) {
        MUST(wgt_linear(x, o->w[t], c->bias ? o->b[t] : NULL, &y[t]));
        if (t == 0 && c->between == 1) MUST(wgt_unary(WGT_UNARY_EXP, o->other, &y[3]));
        if (t == 0 && c->between == 2) MUST(wgt_binary(WGT_BINARY_MUL, y[0], y[0], &y[3]));
    }
    if (c->mlp) {
        wgt_tensor *s;
        MUST(wgt_unary(WGT_UNARY_SILU, y[0], &s));
        MUST(wgt_binary(WGT_BINARY_MUL, s, y[1], &y[3]));
        wgt_tensor_free(s);
        wgt_tensor_free(y[0]), wgt_tensor_free(y[1]);
        y[0] = y[1] = NULL;
    }
}

static void free4(wgt_tensor **y)
{
    for (int i = 0; i < 4; i++) wgt_tensor_free(y[i]), y[i] = NULL;
}

static void make_operands(wgt_context *ctx, const mcase *c, uint64_t seed, operands *o)
{
    test_rng = 0x9E3779B97F4A7C15ull ^ (seed * 1000003ull);
    int64_t xs[3] = {c->lead, c->M, c->K}, *sx = c->lead ? xs : xs + 1;
    int nd = c->lead ? 3 : 2;
    int64_t nx = (c->lead ? c->lead : 1) * c->M * c->K;
    float *v = test_random_f32(nx, -1, 1);
    o->x = make(ctx, WGT_F32, nd, sx, v);
    free(v);
    v = test_random_f32(nx, -1, 1);
    o->x2 = make(ctx, WGT_F32, nd, sx, v);
    free(v);
    for (int t = 0; t < c->n_prod; t++) {
        int64_t ws[2] = {c->N[t], c->K};
        v = test_random_f32(c->N[t] * c->K, -0.5, 0.5);
        o->w[t] = make(ctx, c->wdt, 2, ws, v);
        free(v);
        v = test_random_f32(c->N[t], -1, 1);
        o->b[t] = make(ctx, WGT_F32, 1, &c->N[t], v);
        free(v);
    }
    int64_t os = 37;
    v = test_random_f32(os, -1, 1);
    o->other = make(ctx, WGT_F32, 1, &os, v);
    free(v);
}

static void free_operands(operands *o)
{
    wgt_tensor_free(o->x), wgt_tensor_free(o->x2), wgt_tensor_free(o->other);
    for (int t = 0; t < 3; t++) wgt_tensor_free(o->w[t]), wgt_tensor_free(o->b[t]);
    memset(o, 0, sizeof *o);
}

/* Capture the step on o->x under the environment given (NAME=VALUE or NULL); its dispatches. */
static int captured_dispatches(const mcase *c, const operands *o, const char *env)
{
    char name[64] = "";
    if (env) {
        snprintf(name, sizeof name, "%s", env);
        char *eq = strchr(name, '=');
        *eq = 0;
        setenv(name, eq + 1, 1);
    }
    wgt_tensor *y[4];
    wgt_graph *g;
    const wgt_tensor *in[1] = {o->x};
    MUST(wgt_graph_begin(dev, 1, in));
    step(c, o->x, o, y);
    MUST(wgt_graph_end(dev, &g));
    wgt_graph_stats gs;
    MUST(wgt_graph_get_stats(g, &gs));
    wgt_graph_free(g);
    free4(y);
    if (env) unsetenv(name);
    return gs.dispatches;
}

static void merge_case(const mcase *c, uint64_t seed)
{
    if (c->tile) setenv("WGT_MATMUL_TILE", c->tile, 1);
    operands o, r;
    make_operands(dev, c, seed, &o);
    make_operands(ref, c, seed, &r);
    int eager = captured_dispatches(c, &o, "WGT_GRAPH_FUSE=0");
    int apart = captured_dispatches(c, &o, "WGT_GRAPH_MERGE=0");
    wgt_tensor *yg[4], *ye[4], *yr[4];
    wgt_graph *g;
    const wgt_tensor *in[1] = {o.x}, *in2[1] = {o.x2};
    MUST(wgt_graph_begin(dev, 1, in));
    step(c, o.x, &o, yg);
    MUST(wgt_graph_end(dev, &g));
    wgt_graph_stats gs;
    MUST(wgt_graph_get_stats(g, &gs));
    /* products that can move: all (between 0, 1) or all but the first (2) */
    int movable = c->between == 2 ? c->n_prod - 1 : c->n_prod;
    printf("%s: %d dispatches eager, %d captured (%d with WGT_GRAPH_MERGE=0)\n", c->name, eager, gs.dispatches, apart);
    CHECK(gs.dispatches < apart, "%s: merging saved nothing (%d dispatches, %d apart)", c->name, gs.dispatches, apart);
    CHECK(apart - gs.dispatches <= movable - 1, "%s: %d dispatches saved, at most %d products could merge", c->name,
          apart - gs.dispatches, movable);
    CHECK(c->mlp || apart == eager, "%s: WGT_GRAPH_MERGE=0 captured %d dispatches, eager %d", c->name, apart, eager);
    for (int round = 0; round < 2; round++) {
        if (round) { /* a new weight for the second product: the replay reads it in place */
            int64_t ws[2] = {c->N[1], c->K};
            float *v = test_random_f32(c->N[1] * c->K, -0.5, 0.5);
            wgt_tensor *nw = make(dev, c->wdt, 2, ws, v), *nr = make(ref, c->wdt, 2, ws, v);
            free(v);
            MUST(wgt_tensor_assign(o.w[1], nw));
            MUST(wgt_tensor_assign(r.w[1], nr));
            wgt_tensor_free(nw), wgt_tensor_free(nr);
        }
        MUST(wgt_graph_replay(g, 1, in2));
        step(c, o.x2, &o, ye);
        step(c, r.x2, &r, yr);
        for (int i = 0; i < 4; i++) {
            if (!yg[i]) continue;
            char what[128];
            snprintf(what, sizeof what, "%s round %d output %d: replay vs eager", c->name, round, i);
            CHECK(!differ(yg[i], ye[i], 0, what), "%s", what);
            snprintf(what, sizeof what, "%s round %d output %d: replay vs reference", c->name, round, i);
            CHECK(!differ(yg[i], yr[i], 1e-4, what), "%s", what);
        }
        free4(ye), free4(yr);
    }
    wgt_graph_free(g);
    free4(yg);
    free_operands(&o), free_operands(&r);
    if (c->tile) unsetenv("WGT_MATMUL_TILE");
}

/* ---- epilogues ------------------------------------------------------------------------------- */

/* y = scale * act(x w^T + b) (act: 0 silu, 1 gelu, 2 tanh), as f16 when half. */
static void epi_step(const wgt_tensor *x, const wgt_tensor *w, const wgt_tensor *b, const wgt_tensor *s, int act,
                     int half, wgt_tensor **y)
{
    wgt_tensor *p, *q, *a, *z;
    MUST(wgt_linear(x, w, NULL, &p));
    MUST(wgt_binary(WGT_BINARY_ADD, p, b, &q));
    wgt_unary_op op = act == 0 ? WGT_UNARY_SILU : act == 1 ? WGT_UNARY_GELU : WGT_UNARY_TANH;
    MUST(wgt_unary(op, q, &a));
    MUST(wgt_binary(WGT_BINARY_MUL, a, s, &z));
    wgt_tensor_free(p), wgt_tensor_free(q), wgt_tensor_free(a);
    if (half) {
        MUST(wgt_tensor_cast(z, WGT_F16, y));
        wgt_tensor_free(z);
    } else
        *y = z;
}

static void epilogue_case(int64_t M, int64_t K, int64_t N, int act, int half, wgt_dtype wdt, uint64_t seed)
{
    test_rng = 0x9E3779B97F4A7C15ull ^ (seed * 1000003ull);
    int64_t xs[2] = {M, K}, ws[2] = {N, K}, one = 1;
    float *xv = test_random_f32(M * K, -1, 1), *x2v = test_random_f32(M * K, -1, 1),
          *wv = test_random_f32(N * K, -0.5, 0.5), *bv = test_random_f32(N, -1, 1), sv = 0.75f;
    wgt_tensor *x = make(dev, WGT_F32, 2, xs, xv), *x2 = make(dev, WGT_F32, 2, xs, x2v), *w = make(dev, wdt, 2, ws, wv),
               *b = make(dev, WGT_F32, 1, &N, bv), *s = make(dev, WGT_F32, 1, &one, &sv);
    char name[96];
    snprintf(name, sizeof name, "epilogue %lldx%lldx%lld act %d%s%s", (long long)M, (long long)K, (long long)N, act,
             half ? " f16 out" : "", wdt == WGT_F16 ? " f16 w" : "");
    int counts[3];
    wgt_tensor *yg = NULL;
    wgt_graph *g = NULL;
    const wgt_tensor *in[1] = {x}, *in2[1] = {x2};
    /* WGT_GRAPH_FUSE_MATMUL 0, 1 (this graph is kept and replayed), unset (the default: the gemv
     * kernel's products only) */
    for (int pass = 0; pass < 3; pass++) {
        if (pass < 2) setenv("WGT_GRAPH_FUSE_MATMUL", pass ? "1" : "0", 1);
        MUST(wgt_graph_begin(dev, 1, in));
        wgt_tensor *y;
        epi_step(x, w, b, s, act, half, &y);
        wgt_graph *gg;
        MUST(wgt_graph_end(dev, &gg));
        unsetenv("WGT_GRAPH_FUSE_MATMUL");
        wgt_graph_stats gs;
        MUST(wgt_graph_get_stats(gg, &gs));
        counts[pass] = gs.dispatches;
        if (pass == 1) g = gg, yg = y;
        else wgt_graph_free(gg), wgt_tensor_free(y);
    }
    printf("%s: %d dispatches captured, %d without matmul epilogues, %d by default\n", name, counts[1], counts[0],
           counts[2]);
    CHECK(counts[2] == counts[M <= 4 ? 1 : 0], "%s: %d dispatches by default", name, counts[2]);
    CHECK(counts[1] == 1 + half, "%s: captured as %d dispatches, not %d", name, counts[1], 1 + half);
    /* ending in f16, the chain and its cast fuse into one elementwise kernel without the epilogue */
    CHECK(half ? counts[0] >= counts[1] : counts[0] > counts[1], "%s: WGT_GRAPH_FUSE_MATMUL=0 captured %d dispatches",
          name, counts[0]);
    MUST(wgt_graph_replay(g, 1, in2));
    wgt_tensor *ye;
    epi_step(x2, w, b, s, act, half, &ye);
    CHECK(!differ(yg, ye, 0, name), "%s: the fused replay differs from eager", name);
    wgt_tensor_free(ye), wgt_tensor_free(yg);
    wgt_graph_free(g);
    wgt_tensor_free(x), wgt_tensor_free(x2), wgt_tensor_free(w), wgt_tensor_free(b), wgt_tensor_free(s);
    free(xv), free(x2v), free(wv), free(bv);
}

/* ---- prologues -------------------------------------------------------------------------------- */

/* y = (silu(gu[:, :F]) * gu[:, F:]) w^T + r: a gated MLP's down projection and residual add. */
static void pro_step(const wgt_tensor *gu, const wgt_tensor *w, const wgt_tensor *r, int64_t F, wgt_tensor **y)
{
    wgt_tensor *g, *u, *sg, *a, *p;
    MUST(wgt_tensor_narrow(gu, 1, 0, F, &g));
    MUST(wgt_tensor_narrow(gu, 1, F, F, &u));
    MUST(wgt_unary(WGT_UNARY_SILU, g, &sg));
    MUST(wgt_binary(WGT_BINARY_MUL, sg, u, &a));
    MUST(wgt_linear(a, w, NULL, &p));
    MUST(wgt_binary(WGT_BINARY_ADD, p, r, y));
    wgt_tensor_free(g), wgt_tensor_free(u), wgt_tensor_free(sg), wgt_tensor_free(a), wgt_tensor_free(p);
}

static void prologue_case(int64_t M, int64_t F, int64_t N, wgt_dtype wdt, uint64_t seed)
{
    test_rng = 0x9E3779B97F4A7C15ull ^ (seed * 1000003ull);
    int64_t gs_[2] = {M, 2 * F}, ws[2] = {N, F}, rs[2] = {M, N};
    float *gv = test_random_f32(M * 2 * F, -2, 2), *g2v = test_random_f32(M * 2 * F, -2, 2),
          *wv = test_random_f32(N * F, -0.5, 0.5), *rv = test_random_f32(M * N, -1, 1);
    wgt_tensor *gu = make(dev, WGT_F32, 2, gs_, gv), *gu2 = make(dev, WGT_F32, 2, gs_, g2v),
               *w = make(dev, wdt, 2, ws, wv), *r = make(dev, WGT_F32, 2, rs, rv);
    wgt_tensor *gur = make(ref, WGT_F32, 2, gs_, g2v), *wr = make(ref, wdt, 2, ws, wv), *rr = make(ref, WGT_F32, 2, rs, rv);
    char name[96];
    snprintf(name, sizeof name, "prologue %lldx%lldx%lld%s", (long long)M, (long long)F, (long long)N,
             wdt == WGT_F16 ? " f16 w" : "");
    const wgt_tensor *in[1] = {gu}, *in2[1] = {gu2};
    int counts[2];
    wgt_graph *g = NULL;
    wgt_tensor *yg = NULL;
    for (int pass = 0; pass < 2; pass++) { /* the default, then WGT_GRAPH_FUSE_MATMUL_PRO=1 (kept) */
        if (pass) setenv("WGT_GRAPH_FUSE_MATMUL_PRO", "1", 1);
        MUST(wgt_graph_begin(dev, 1, in));
        wgt_tensor *y;
        pro_step(gu, w, r, F, &y);
        wgt_graph *gg;
        MUST(wgt_graph_end(dev, &gg));
        unsetenv("WGT_GRAPH_FUSE_MATMUL_PRO");
        wgt_graph_stats st;
        MUST(wgt_graph_get_stats(gg, &st));
        counts[pass] = st.dispatches;
        if (pass) g = gg, yg = y;
        else wgt_graph_free(gg), wgt_tensor_free(y);
    }
    printf("%s: %d dispatches captured with matmul prologues, %d by default\n", name, counts[1], counts[0]);
    CHECK(counts[1] == 1, "%s: WGT_GRAPH_FUSE_MATMUL_PRO=1 captured %d dispatches, not 1", name, counts[1]);
    CHECK(counts[0] == 2, "%s: captured as %d dispatches by default, not 2", name, counts[0]);
    MUST(wgt_graph_replay(g, 1, in2));
    wgt_tensor *ye, *yr;
    pro_step(gu2, w, r, F, &ye);
    pro_step(gur, wr, rr, F, &yr);
    CHECK(!differ(yg, ye, 0, name), "%s: the fused replay differs from eager", name);
    CHECK(!differ(ye, yr, 1e-4, name), "%s: eager differs from the CPU reference", name);
    wgt_tensor_free(ye), wgt_tensor_free(yr), wgt_tensor_free(yg);
    wgt_graph_free(g);
    wgt_tensor_free(gu), wgt_tensor_free(gu2), wgt_tensor_free(w), wgt_tensor_free(r);
    wgt_tensor_free(gur), wgt_tensor_free(wr), wgt_tensor_free(rr);
    free(gv), free(g2v), free(wv), free(rv);
}

/* ---- a norm into the product after it ------------------------------------------------------- */

static void norm_step(const wgt_tensor *x, const wgt_tensor *nw, const wgt_tensor *w, const wgt_tensor *b, wgt_tensor **y)
{
    wgt_tensor *h;
    MUST(wgt_rms_norm(x, 1, nw, 1e-6, &h));
    MUST(wgt_linear(h, w, b, y));
    wgt_tensor_free(h);
}

static void norm_case(int64_t K, int64_t N, wgt_dtype nwdt, int bias, uint64_t seed)
{
    test_rng = 0x9E3779B97F4A7C15ull ^ (seed * 1000003ull);
    int64_t xs[2] = {1, K}, ws[2] = {N, K};
    float *xv = test_random_f32(K, -2, 2), *x2v = test_random_f32(K, -2, 2), *nv = test_random_f32(K, 0.5, 1.5),
          *wv = test_random_f32(N * K, -0.5, 0.5), *bv = test_random_f32(N, -1, 1);
    wgt_tensor *x = make(dev, WGT_F32, 2, xs, xv), *x2 = make(dev, WGT_F32, 2, xs, x2v), *nw = make(dev, nwdt, 1, &K, nv),
               *w = make(dev, WGT_F32, 2, ws, wv), *b = bias ? make(dev, WGT_F32, 1, &N, bv) : NULL;
    char name[96];
    snprintf(name, sizeof name, "norm into gemv %lldx%lld%s%s", (long long)K, (long long)N,
             nwdt == WGT_F16 ? " f16 norm weight" : "", bias ? " bias" : "");
    const wgt_tensor *in[1] = {x}, *in2[1] = {x2};
    int counts[2];
    wgt_graph *gs[2];
    wgt_tensor *ys[2];
    for (int pass = 0; pass < 2; pass++) { /* unset, then WGT_GRAPH_FUSE_NORM_MATMUL=1 */
        if (pass) setenv("WGT_GRAPH_FUSE_NORM_MATMUL", "1", 1);
        MUST(wgt_graph_begin(dev, 1, in));
        norm_step(x, nw, w, b, &ys[pass]);
        MUST(wgt_graph_end(dev, &gs[pass]));
        unsetenv("WGT_GRAPH_FUSE_NORM_MATMUL");
        wgt_graph_stats st;
        MUST(wgt_graph_get_stats(gs[pass], &st));
        counts[pass] = st.dispatches;
    }
    printf("%s: %d dispatches captured, %d by default\n", name, counts[1], counts[0]);
    CHECK(counts[0] == 2 && counts[1] == 1, "%s: %d dispatches by default (want 2), %d fused (want 1)", name, counts[0],
          counts[1]);
    wgt_tensor *ye;
    norm_step(x2, nw, w, b, &ye);
    for (int pass = 0; pass < 2; pass++) {
        MUST(wgt_graph_replay(gs[pass], 1, in2));
        CHECK(!differ(ys[pass], ye, pass ? 1e-5 : 0, name), "%s: the replay (%s) differs from eager", name,
              pass ? "fused" : "default");
        wgt_graph_free(gs[pass]), wgt_tensor_free(ys[pass]);
    }
    wgt_tensor_free(ye);
    wgt_tensor_free(x), wgt_tensor_free(x2), wgt_tensor_free(nw), wgt_tensor_free(w), wgt_tensor_free(b);
    free(xv), free(x2v), free(nv), free(wv), free(bv);
}

int main(void)
{
    /* the generic passes themselves: routing one-row products to the decoder's fused kernels
     * (src/ops/fused_route.c, test_gpu_graph_route.c) would take the gemv cases' norms, chains and
     * residual adds first */
    setenv("WGT_GRAPH_ROUTE", "0", 1);
    test_contexts(&dev, &ref);
    static const mcase cases[] = {
        {"qkv gemv 1 row", 0, 1, 64, {64, 32, 32}, 3, 0, 0, WGT_F32, 0},
        {"qkv gemv 3 rows, bias, op between", 0, 3, 48, {40, 24, 24}, 3, 1, 1, WGT_F32, 0},
        {"qkv gemv f16 weights", 0, 1, 64, {64, 32, 32}, 3, 0, 0, WGT_F16, 0},
        {"qkv tiled 70 rows", 0, 70, 40, {72, 36, 36}, 3, 0, 0, WGT_F32, 0},
        {"qkv tiled 2x35 rows, bias", 2, 35, 24, {33, 17, 17}, 3, 1, 0, WGT_F32, 0},
        {"qkv tiled, first consumed between", 0, 70, 40, {72, 36, 36}, 3, 0, 2, WGT_F32, 0},
        {"mlp gate/up gemv", 0, 1, 64, {96, 96, 0}, 2, 0, 0, WGT_F32, 1},
        {"mlp gate/up tiled f16 weights", 0, 70, 32, {48, 48, 0}, 2, 0, 0, WGT_F16, 1},
        {"qkv matmul.wgsl tiles, bias", 0, 70, 40, {72, 36, 36}, 3, 1, 0, WGT_F32, 0, "0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) merge_case(&cases[i], 100 + i);
    epilogue_case(1, 64, 48, 0, 0, WGT_F32, 7);
    epilogue_case(3, 32, 40, 1, 0, WGT_F16, 8);
    epilogue_case(70, 40, 36, 2, 0, WGT_F32, 9);
    epilogue_case(70, 40, 36, 0, 1, WGT_F32, 10);
    prologue_case(1, 96, 40, WGT_F32, 11);
    prologue_case(3, 64, 24, WGT_F16, 12);
    norm_case(96, 40, WGT_F32, 1, 13);
    norm_case(256, 72, WGT_F16, 0, 14);
    wgt_context_free(dev);
    wgt_context_free(ref);
    return test_finish("test_gpu_graph_matmul");
}
