/* Fusion of elementwise chains in captured graphs (notes/GRAPH.md "Fusion"), by random graphs:
 * each is a random chain of unary, binary, where and cast ops over inputs that are contiguous,
 * transposed (strided), broadcast ([C], [R, 1]), f32, f16 and i32, with casts to f16, bf16 and f32
 * between ops, and reductions (sum, mean, amax, var over the last or first dim, keepdim),
 * softmax, log_softmax, layer_norm and rms_norm between the chains (so chains fuse into them as
 * prologues and epilogues), ending in one or two outputs the caller keeps (the other
 * intermediates are freed during capture, so fusion keeps them in registers). Captured on inputs
 * A, replayed on inputs B; the replay's outputs must equal the same chain run eagerly (unfused,
 * one dispatch per op) on B on this adapter bit for bit (NaN equal to NaN), and the CPU
 * reference's on B within a tolerance by dtype. The graphs must fuse: every graph's dispatches
 * are counted, and at least one fused kernel per two graphs is required, and with reductions in
 * the graphs, some chain must fuse into one. Usage: test_gpu_graph_fuse [graphs [seed]] (8 graphs by default: `make test`; more
 * by hand). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "support/check.h"

enum { K_UNARY, K_BINARY, K_COMPARE, K_WHERE, K_CAST, K_REDUCE, K_SOFTMAX, K_NORM };
enum { N_IN = 5, MAX_STEPS = 10, MAX_VALS = N_IN + MAX_STEPS };

typedef struct step {
    int kind, op, a, b, c, dim; /* dim: K_REDUCE's and K_SOFTMAX's */
    wgt_dtype dt;
    wgt_unary_params up;
} step;

typedef struct prog {
    int64_t R, C;
    int n_steps, out2; /* out2: a second output (an intermediate the caller keeps), or -1 */
    step s[MAX_STEPS];
    int low_precision;  /* a cast to f16 or bf16 somewhere: a looser reference tolerance */
    int hosts;          /* reductions, softmax and norms in it */
} prog;

static int with_hosts = 1; /* reductions, softmax and norms between the chains */

static int op_is_float_dt(wgt_dtype dt) { return dt == WGT_F32 || dt == WGT_F16 || dt == WGT_BF16; }

static uint64_t rng;
static uint32_t next(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng >> 33);
}
static int pick(int n) { return (int)(next() % (uint32_t)n); }
static float unit(void) { return (float)next() / 2147483648.0f - 1.0f; } /* [-1, 1) */

static wgt_context *dev, *ref;

/* The inputs' dtypes: in0 f32 [R, C], in1 f32 [C, R] (used transposed), in2 f32 [C], in3 i32 [R, 1],
 * in4 f16 [R, C]. */
static const wgt_dtype in_dt[N_IN] = {WGT_F32, WGT_F32, WGT_F32, WGT_I32, WGT_F16};

static void in_shape(const prog *p, int i, int *nd, int64_t *sh)
{
    switch (i) {
    case 1: *nd = 2, sh[0] = p->C, sh[1] = p->R; break;
    case 2: *nd = 1, sh[0] = p->C; break;
    case 3: *nd = 2, sh[0] = p->R, sh[1] = 1; break;
    default: *nd = 2, sh[0] = p->R, sh[1] = p->C; break;
    }
}

/* A value of a float dtype: the latest (a chain) more often than not. */
static int pick_float(const wgt_dtype *vdt, int n_vals)
{
    if (n_vals > N_IN && pick(10) < 6 && vdt[n_vals - 1] != WGT_BOOL) return n_vals - 1;
    for (;;) {
        int v = pick(n_vals);
        if (vdt[v] != WGT_BOOL) return v;
    }
}

static void make_prog(prog *p)
{
    memset(p, 0, sizeof *p);
    p->R = 1 + pick(7), p->C = 1 + pick(37);
    p->n_steps = 3 + pick(MAX_STEPS - 2);
    wgt_dtype vdt[MAX_VALS];
    int vnd[MAX_VALS] = {2, 2, 1, 2, 2}; /* each value's number of dims */
    memcpy(vdt, in_dt, sizeof in_dt);
    int n_vals = N_IN;
    static const wgt_unary_op un[] = {WGT_UNARY_NEG,  WGT_UNARY_ABS,        WGT_UNARY_TANH,  WGT_UNARY_SIGMOID,
                                      WGT_UNARY_RELU, WGT_UNARY_SIN,        WGT_UNARY_ELU,   WGT_UNARY_LEAKY_RELU,
                                      WGT_UNARY_CLAMP, WGT_UNARY_SQUARE,    WGT_UNARY_EXP};
    static const wgt_binary_op bin[] = {WGT_BINARY_ADD, WGT_BINARY_SUB, WGT_BINARY_MUL, WGT_BINARY_MAXIMUM,
                                        WGT_BINARY_MINIMUM};
    for (int i = 0; i < p->n_steps; i++) {
        step *s = &p->s[i];
        int r = pick(100);
        int nd = 2;
        if (with_hosts && pick(100) < 25) {
            int h = pick(3);
            s->a = pick_float(vdt, n_vals);
            if (h && !(vdt[s->a] == WGT_F32 || vdt[s->a] == WGT_F16 || vdt[s->a] == WGT_BF16)) s->a = 0;
            nd = vnd[s->a];
            s->dim = nd == 2 && pick(3) == 0 ? 0 : nd - 1;
            vdt[n_vals] = vdt[s->a];
            if (h == 0) {
                static const wgt_reduce_op fl[] = {WGT_REDUCE_SUM, WGT_REDUCE_MEAN, WGT_REDUCE_AMAX, WGT_REDUCE_VAR};
                s->kind = K_REDUCE;
                s->op = op_is_float_dt(vdt[s->a]) ? fl[pick(4)] : pick(2) ? WGT_REDUCE_SUM : WGT_REDUCE_AMAX;
                vdt[n_vals] = wgt_reduce_result_dtype((wgt_reduce_op)s->op, vdt[s->a]);
            } else if (h == 1) {
                s->kind = K_SOFTMAX, s->op = pick(2);
            } else {
                s->kind = K_NORM, s->op = pick(2); /* layer_norm, rms_norm over the last dim */
            }
            p->hosts++;
        } else if (r < 40) {
            s->kind = K_UNARY, s->op = un[pick((int)(sizeof un / sizeof un[0]))];
            s->a = pick_float(vdt, n_vals);
            s->up = wgt_unary_params_default((wgt_unary_op)s->op);
            s->up.alpha = 0.5 + 0.5 * unit();
            float lo = unit(), hi = lo + 0.2f + (unit() + 1.0f);
            s->up.lo = lo, s->up.hi = hi;
            /* exp of a value of any size overflows: only right after a bounded op, else tanh */
            if (s->op == WGT_UNARY_EXP) s->op = WGT_UNARY_TANH;
            vdt[n_vals] = vdt[s->a] == WGT_I32 ? wgt_unary_result_dtype((wgt_unary_op)s->op, WGT_I32) : vdt[s->a];
        } else if (r < 75) {
            s->kind = K_BINARY, s->op = bin[pick((int)(sizeof bin / sizeof bin[0]))];
            s->a = pick_float(vdt, n_vals), s->b = pick_float(vdt, n_vals);
            vdt[n_vals] = wgt_binary_result_dtype((wgt_binary_op)s->op, vdt[s->a], vdt[s->b]);
        } else if (r < 82) {
            /* compares read inputs only: computed values near a tie could compare differently on
             * the reference, whose arithmetic may round differently */
            s->kind = K_COMPARE, s->op = pick(2) ? WGT_BINARY_GT : WGT_BINARY_LT;
            s->a = pick(2) ? 0 : 4, s->b = 1 + pick(2);
            vdt[n_vals] = WGT_BOOL;
        } else if (r < 90 && vdt[n_vals - 1] == WGT_BOOL) {
            s->kind = K_WHERE, s->a = n_vals - 1, s->b = pick_float(vdt, n_vals), s->c = pick_float(vdt, n_vals);
            vdt[n_vals] = wgt_binary_result_dtype(WGT_BINARY_ADD, vdt[s->b], vdt[s->c]);
        } else {
            static const wgt_dtype to[] = {WGT_F16, WGT_BF16, WGT_F32};
            s->kind = K_CAST, s->a = pick_float(vdt, n_vals), s->dt = to[pick(3)];
            if (s->dt != WGT_F32) p->low_precision = 1;
            vdt[n_vals] = s->dt;
        }
        if (vdt[n_vals] == WGT_F16 || vdt[n_vals] == WGT_BF16) p->low_precision = 1;
        if (s->kind == K_REDUCE || s->kind == K_SOFTMAX || s->kind == K_NORM) vnd[n_vals] = nd;
        else if (s->kind == K_UNARY || s->kind == K_CAST) vnd[n_vals] = vnd[s->a];
        else vnd[n_vals] = 2; /* broadcast with a 2-d value, or two 2-d values */
        if (s->kind == K_BINARY && vnd[s->a] == 1 && vnd[s->b] == 1) vnd[n_vals] = 1;
        n_vals++;
    }
    p->out2 = pick(2) && p->n_steps > 2 ? N_IN + pick(p->n_steps - 1) : -1;
}

static wgt_status run_step(const step *s, wgt_tensor *const *v, wgt_tensor **out)
{
    switch (s->kind) {
    case K_UNARY: return wgt_unary_ex((wgt_unary_op)s->op, &s->up, v[s->a], out);
    case K_BINARY: case K_COMPARE: return wgt_binary((wgt_binary_op)s->op, v[s->a], v[s->b], out);
    case K_WHERE: return wgt_where(v[s->a], v[s->b], v[s->c], out);
    case K_REDUCE:
        return wgt_reduce((wgt_reduce_op)s->op, v[s->a], 1u << s->dim, 1, s->op == WGT_REDUCE_VAR ? 1.0 : 0.0, out);
    case K_SOFTMAX:
        return s->op ? wgt_log_softmax(v[s->a], s->dim, out) : wgt_softmax(v[s->a], s->dim, out);
    case K_NORM:
        return s->op ? wgt_rms_norm(v[s->a], 1, NULL, 1e-5, out) : wgt_layer_norm(v[s->a], 1, NULL, NULL, 1e-5, out);
    default: return wgt_tensor_cast(v[s->a], s->dt, out);
    }
}

/* Run p on the inputs base[] (in1 transposed): out[0] the last value, out[1] p->out2's (or NULL).
 * Every other value is freed as soon as the chain ends. */
static wgt_status run(const prog *p, wgt_tensor *const *base, wgt_tensor **out)
{
    wgt_tensor *v[MAX_VALS] = {0};
    wgt_status st = WGT_OK;
    for (int i = 0; i < N_IN; i++)
        if (i != 1) v[i] = wgt_tensor_ref(base[i]);
    st = wgt_tensor_transpose(base[1], 0, 1, &v[1]);
    for (int i = 0; i < p->n_steps && !st; i++) st = run_step(&p->s[i], v, &v[N_IN + i]);
    out[0] = out[1] = NULL;
    if (!st) {
        out[0] = v[N_IN + p->n_steps - 1];
        v[N_IN + p->n_steps - 1] = NULL;
        if (p->out2 >= 0 && v[p->out2]) {
            out[1] = v[p->out2];
            v[p->out2] = NULL;
        }
    }
    for (int i = 0; i < MAX_VALS; i++) wgt_tensor_free(v[i]);
    return st;
}

static void make_inputs(wgt_context *ctx, const prog *p, uint64_t seed, wgt_tensor **base)
{
    uint64_t keep = rng;
    rng = seed;
    for (int i = 0; i < N_IN; i++) {
        int nd;
        int64_t sh[2];
        in_shape(p, i, &nd, sh);
        int64_t n = sh[0] * (nd > 1 ? sh[1] : 1);
        float f[64 * 64];
        int32_t q[64 * 64];
        for (int64_t k = 0; k < n; k++) f[k] = 2.0f * unit(), q[k] = pick(7) - 3;
        if (in_dt[i] == WGT_I32) MUST(wgt_tensor_from_host(ctx, WGT_I32, nd, sh, q, &base[i]));
        else {
            wgt_tensor *t;
            MUST(wgt_tensor_from_host(ctx, WGT_F32, nd, sh, f, &t));
            if (in_dt[i] == WGT_F32) base[i] = t;
            else {
                MUST(wgt_tensor_cast(t, in_dt[i], &base[i]));
                wgt_tensor_free(t);
            }
        }
    }
    rng = keep;
}

static void to_f32(const wgt_tensor *t, float *out, int64_t n)
{
    wgt_tensor *c;
    MUST(wgt_tensor_cast(t, WGT_F32, &c));
    MUST(wgt_tensor_to_host(c, out, (size_t)n * 4));
    wgt_tensor_free(c);
}

static void free_all(wgt_tensor **t, int n)
{
    for (int i = 0; i < n; i++) wgt_tensor_free(t[i]), t[i] = NULL;
}

/* One host op h (0 sum over the last dim, 1 softmax, 2 layer_norm, 3 mean of an f16 input) with a
 * chain before (x * s, tanh; the f16 case a cast) and after (sigmoid, + s; the f16 case neg): captured, it must be
 * ONE dispatch, its replay equal to eager bit for bit. */
static void fixed_host(int h)
{
    int64_t sh[2] = {5, 33}, one = 1;
    float xs[5 * 33], sv = 0.75f;
    for (int i = 0; i < 5 * 33; i++) xs[i] = 0.1f * (float)(i % 17) - 0.8f;
    wgt_tensor *x, *sc, *x2, *y[2] = {0};
    MUST(wgt_tensor_from_host(dev, WGT_F32, 2, sh, xs, &x));
    MUST(wgt_tensor_from_host(dev, WGT_F32, 1, &one, &sv, &sc));
    for (int i = 0; i < 5 * 33; i++) xs[i] = 0.07f * (float)(i % 13) - 0.3f;
    MUST(wgt_tensor_from_host(dev, WGT_F32, 2, sh, xs, &x2));
    wgt_graph *g = NULL;
    for (int pass = 0; pass < 2; pass++) { /* 0: captured (on x), 1: eager (on x2) */
        const wgt_tensor *in[1] = {x};
        if (!pass) MUST(wgt_graph_begin(dev, 1, in));
        wgt_tensor *a, *b, *c, *d;
        MUST(wgt_binary(WGT_BINARY_MUL, pass ? x2 : x, sc, &a));
        if (h == 3) MUST(wgt_tensor_cast(a, WGT_F16, &b));
        else MUST(wgt_unary(WGT_UNARY_TANH, a, &b));
        if (h == 0) MUST(wgt_reduce(WGT_REDUCE_SUM, b, 2, 1, 0, &c));
        else if (h == 1) MUST(wgt_softmax(b, 1, &c));
        else if (h == 2) MUST(wgt_layer_norm(b, 1, NULL, NULL, 1e-5, &c));
        else MUST(wgt_reduce(WGT_REDUCE_MEAN, b, 2, 1, 0, &c));
        MUST(wgt_unary(WGT_UNARY_SIGMOID, c, &d));
        wgt_tensor *s2; /* f16 stays f16 (an f32 result would store other words than the op's) */
        if (h == 3) MUST(wgt_unary(WGT_UNARY_NEG, d, &s2));
        else MUST(wgt_binary(WGT_BINARY_ADD, d, sc, &s2));
        wgt_tensor_free(a), wgt_tensor_free(b), wgt_tensor_free(c), wgt_tensor_free(d);
        y[pass] = s2;
        if (!pass) {
            MUST(wgt_graph_end(dev, &g));
            wgt_graph_stats gs;
            MUST(wgt_graph_get_stats(g, &gs));
            CHECK(gs.dispatches == 1, "host %d: a chain, the op and a chain captured as %d dispatches, not 1", h,
                  gs.dispatches);
            const wgt_tensor *in2[1] = {x2};
            MUST(wgt_graph_replay(g, 1, in2));
        }
    }
    int64_t n = wgt_tensor_numel(y[0]);
    static float fg[5 * 33], fe[5 * 33];
    to_f32(y[0], fg, n), to_f32(y[1], fe, n);
    int bad = 0;
    for (int64_t k = 0; k < n; k++) bad += !(fg[k] == fe[k]);
    CHECK(!bad, "host %d: %d of %lld elements of the fused replay differ from eager (first: %.9g vs %.9g)", h, bad,
          (long long)n, fg[0], fe[0]);
    wgt_graph_free(g);
    free_all(y, 2);
    wgt_tensor_free(x), wgt_tensor_free(x2), wgt_tensor_free(sc);
}

int main(int argc, char **argv)
{
    int graphs = argc > 1 ? atoi(argv[1]) : 8;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 17;
    MUST(wgt_context_create(NULL, &dev));
    wgt_context_options ro = {0};
    ro.backend = WGT_BACKEND_CPU;
    MUST(wgt_context_create(&ro, &ref));
    for (int h = 0; h < 4; h++) fixed_host(h);
    int fused_kernels = 0, fused_ops = 0, dispatches = 0;
    double worst_dev = 0, worst_ref = 0;
    for (int gi = 0; gi < graphs; gi++) {
        rng = seed * 1000003ull + (uint64_t)gi;
        next();
        prog p;
        make_prog(&p);
        wgt_tensor *a[N_IN], *b[N_IN], *rb[N_IN], *yg[2], *ye[2], *yr[2];
        make_inputs(dev, &p, 1000 + (uint64_t)gi, a);
        make_inputs(dev, &p, 5000 + (uint64_t)gi, b);
        make_inputs(ref, &p, 5000 + (uint64_t)gi, rb);
        wgt_graph *g;
        MUST(wgt_graph_begin(dev, N_IN, (const wgt_tensor *const *)a));
        MUST(run(&p, a, yg));
        MUST(wgt_graph_end(dev, &g));
        wgt_graph_stats gs;
        MUST(wgt_graph_get_stats(g, &gs));
        fused_kernels += gs.fused_kernels, fused_ops += gs.fused_ops, dispatches += gs.dispatches;
        MUST(wgt_graph_replay(g, N_IN, (const wgt_tensor *const *)b));
        MUST(run(&p, b, ye));
        MUST(run(&p, rb, yr));
        for (int o = 0; o < 2; o++) {
            if (!yg[o]) continue;
            int64_t n = wgt_tensor_numel(yg[o]);
            static float fg[64 * 64], fe[64 * 64], fr[64 * 64];
            to_f32(yg[o], fg, n), to_f32(ye[o], fe, n), to_f32(yr[o], fr, n);
            /* the same WGSL op functions on the same adapter, intermediates rounded as stored:
             * bit for bit (as floats: the outputs are f32, f16 or bf16, exact in f32) */
            double tol_ref = p.low_precision ? 2e-2 : 1e-4;
            int bad_dev = 0, bad_ref = 0;
            for (int64_t k = 0; k < n; k++) {
                double ddev = fabs((double)fg[k] - fe[k]), dref = fabs((double)fg[k] - fr[k]);
                double scale = 1.0 + fabs((double)fr[k]);
                int both_nan = isnan(fg[k]) && isnan(fe[k]), ref_nan = isnan(fg[k]) && isnan(fr[k]);
                if (!(fg[k] == fe[k]) && !both_nan) bad_dev++;
                if (!(dref <= tol_ref * scale) && !ref_nan) bad_ref++;
                if (ddev / scale > worst_dev) worst_dev = ddev / scale;
                if (dref / scale > worst_ref) worst_ref = dref / scale;
                if ((bad_dev == 1 && !(fg[k] == fe[k]) && !both_nan) || (bad_ref == 1 && !(dref <= tol_ref * scale) && !ref_nan))
                    fprintf(stderr, "graph %d output %d element %lld: fused %.9g unfused %.9g reference %.9g\n", gi, o,
                            (long long)k, fg[k], fe[k], fr[k]);
            }
            CHECK(!bad_dev && !bad_ref, "graph %d (%lldx%lld, %d ops, %d fused kernels of %d ops) output %d: %d elements "
                  "differ from unfused, %d from the reference", gi, (long long)p.R, (long long)p.C, p.n_steps,
                  gs.fused_kernels, gs.fused_ops, o, bad_dev, bad_ref);
        }
        wgt_graph_free(g);
        free_all(yg, 2), free_all(ye, 2), free_all(yr, 2);
        free_all(a, N_IN), free_all(b, N_IN), free_all(rb, N_IN);
    }
    printf("%d graphs: %d dispatches per replay in all, %d fused kernels running %d ops; worst relative difference "
           "%.3g from unfused, %.3g from the reference\n", graphs, dispatches, fused_kernels, fused_ops, worst_dev,
           worst_ref);
    CHECK(2 * fused_kernels >= graphs, "only %d fused kernels in %d graphs", fused_kernels, graphs);
    wgt_context_free(dev);
    wgt_context_free(ref);
    return test_finish("test_gpu_graph_fuse");
}
