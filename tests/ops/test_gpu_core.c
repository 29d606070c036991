/* The core op library's fixes, each against an independent answer:
 *  - the pipeline cache: a different prelude, key, entry or constant never returns another
 *    kernel's pipeline; a hit allocates nothing and makes no prelude; many keys in one bucket;
 *  - PyTorch's / C's values at the edges, written here by hand (torch.sign(nan) is 0, fmod(x, inf)
 *    is x, -1 // inf is -1, pow's special cases, NaN comparisons and truthiness, saturating casts,
 *    softmax and var of rows with NaN/inf, linspace with one step), on the GPU and on the CPU
 *    reference alike;
 *  - the contiguous (vec4) elementwise path at odd sizes and offsets, and split over bindings;
 *  - reductions whose slices pass one binding (staged), against the reference;
 *  - kernels built for a smaller workgroup limit (compatibility mode's 128, and 64): elementwise,
 *    reductions, norms, cdist (both its kernels), i64 trace's tree;
 *  - i64 diff, trace, diag and diag_embed on the GPU, exact and wrapping. */
#include "gpu/gpu.h"
#include "gpu_pair.h"

/* ---- the pipeline cache ---------------------------------------------------------------------- */

static int made;
static char *make_prelude(void *arg)
{
    made++;
    char *s = malloc(64);
    if (s) snprintf(s, 64, "const CORE_TEST_K: u32 = %uu;\n", *(unsigned *)arg);
    return s;
}

/* Writes its constant C (from source, prelude or override) to y[0]. */
static const char *const_src_a =
    "@group(0) @binding(1) var<storage, read_write> y: array<u32>;\n"
    "@compute @workgroup_size(1) fn main() { y[0] = 11u; }\n"
    "@compute @workgroup_size(1) fn other() { y[0] = 33u; }\n";
static const char *const_src_b =
    "@group(0) @binding(1) var<storage, read_write> y: array<u32>;\n"
    "@compute @workgroup_size(1) fn main() { y[0] = 22u; }\n"
    "@compute @workgroup_size(1) fn other() { y[0] = 33u; }\n";
static const char *override_src =
    "override C: f32 = 1.0;\n"
    "@group(0) @binding(1) var<storage, read_write> y: array<u32>;\n"
    "@compute @workgroup_size(1) fn main() { y[0] = u32(C); }\n";

static uint32_t run_word(wgt_context *ctx, wgt_kernel *k)
{
    wgt_buffer *b;
    MUST(wgt_gpu_alloc(ctx, 256, &b));
    wgt_binding bind = {b, 0, 256};
    MUST(wgt_gpu_dispatch(ctx, k, NULL, 0, &bind, 1, 1, 1, 1));
    uint32_t v = 0;
    MUST(wgt_gpu_download(ctx, b, 0, &v, 4));
    wgt_gpu_release(ctx, b);
    return v;
}

static void test_cache(wgt_context *ctx)
{
    wgt_kernel *a, *b, *c, *d, *e, *f;
    MUST(wgt_gpu_kernel_source(ctx, "core_const", const_src_a, "main", NULL, 0, &a));
    MUST(wgt_gpu_kernel_source(ctx, "core_const", const_src_b, "main", NULL, 0, &b));
    MUST(wgt_gpu_kernel_source(ctx, "core_const", const_src_a, "other", NULL, 0, &c));
    CHECK(a != b && a != c && b != c, "sources or entries that differ share a pipeline");
    CHECK(run_word(ctx, a) == 11 && run_word(ctx, b) == 22 && run_word(ctx, c) == 33, "wrong pipeline ran");
    wgt_kconst k1 = {"C", 5}, k2 = {"C", 7};
    MUST(wgt_gpu_kernel_source(ctx, "core_override", override_src, "main", &k1, 1, &d));
    MUST(wgt_gpu_kernel_source(ctx, "core_override", override_src, "main", &k2, 1, &e));
    MUST(wgt_gpu_kernel_source(ctx, "core_override", override_src, "main", &k1, 1, &f));
    CHECK(d != e && d == f, "override constants: 5 and 7 share a pipeline, or 5 missed");
    CHECK(run_word(ctx, d) == 5 && run_word(ctx, e) == 7, "override constant: got %u and %u", run_word(ctx, d),
          run_word(ctx, e));

    /* prelude kernels of one file: the prelude is part of the key */
    MUST(wgt_gpu_kernel(ctx, "gpu_stream", "const CORE_TEST_K: u32 = 1u;", "main", NULL, 0, &a));
    MUST(wgt_gpu_kernel(ctx, "gpu_stream", "const CORE_TEST_K: u32 = 2u;", "main", NULL, 0, &b));
    MUST(wgt_gpu_kernel(ctx, "gpu_stream", "const CORE_TEST_K: u32 = 1u;", "main", NULL, 0, &c));
    CHECK(a != b && a == c, "preludes 1 and 2 share a pipeline, or 1 missed");

    /* keyed kernels: the prelude is made on a miss only; distinct keys, distinct pipelines, even
     * more keys than buckets; a keyed kernel never answers a prelude lookup */
    enum { N = 600 };
    static wgt_kernel *ks[N];
    wgt_memory_stats s0, s1;
    MUST(wgt_context_memory_stats(ctx, &s0));
    made = 0;
    for (unsigned i = 0; i < N; i++)
        MUST(wgt_gpu_kernel_keyed(ctx, "gpu_stream", &i, sizeof i, make_prelude, &i, "main", NULL, 0, &ks[i]));
    CHECK(made == N, "%d preludes made for %d new keys", made, N);
    made = 0;
    int wrong = 0;
    for (unsigned i = 0; i < N; i++) {
        MUST(wgt_gpu_kernel_keyed(ctx, "gpu_stream", &i, sizeof i, make_prelude, &i, "main", NULL, 0, &a));
        wrong += a != ks[i] || (i && ks[i] == ks[i - 1]);
    }
    MUST(wgt_context_memory_stats(ctx, &s1));
    CHECK(made == 0, "a cache hit made %d preludes", made);
    CHECK(wrong == 0, "%d keyed lookups returned another key's pipeline", wrong);
    CHECK(s1.pipelines - s0.pipelines == N && s1.pipeline_hits - s0.pipeline_hits == N, "cache stats: %llu built, %llu hits",
          (unsigned long long)(s1.pipelines - s0.pipelines), (unsigned long long)(s1.pipeline_hits - s0.pipeline_hits));
    unsigned one = 1;
    MUST(wgt_gpu_kernel_keyed(ctx, "gpu_stream", &one, sizeof one, make_prelude, &one, "main", NULL, 0, &a));
    CHECK(a != c, "a keyed kernel answered for a prelude kernel (or the reverse)");
    wgt_kconst items = {"ITEMS", 2};
    MUST(wgt_gpu_kernel_keyed(ctx, "gpu_stream", &one, sizeof one, make_prelude, &one, "main", &items, 1, &b));
    CHECK(a != b, "a keyed kernel with an override constant shares the pipeline without it");
}

/* ---- values at the edges --------------------------------------------------------------------- */

static const double NaN = NAN, Inf = INFINITY;

static wgt_tensor *vec_f32(wgt_context *ctx, int n, const double *v)
{
    float f[32];
    for (int i = 0; i < n; i++) f[i] = (float)v[i];
    wgt_tensor *t;
    int64_t sh = n;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, &sh, f, &t));
    return t;
}

/* y's n values as doubles (any dtype). */
static void values(wgt_tensor *y, int n, double *out)
{
    int64_t nn = n;
    unsigned char buf[32 * 8];
    wgt_dtype dt = wgt_tensor_dtype(y);
    MUST(wgt_tensor_to_host(y, buf, (size_t)n * wgt_dtype_size(dt)));
    wgt_cpu_tensor h = wgt_cpu_tensor_make(buf, dt, 1, &nn);
    for (int i = 0; i < n; i++) out[i] = op_is_int(dt) ? (double)wgt_cpu_load_i(&h, i) : wgt_cpu_load_f(&h, i);
    wgt_tensor_free(y);
}

/* Expected values: NaN matches NaN; finite values to 1e-5 relative; infinities and zeros exactly
 * (the sign of zero is checked when `signed_zero`). */
static void expect(const char *what, int s, wgt_tensor *y, int n, const double *want, int signed_zero)
{
    double got[32];
    values(y, n, got);
    for (int i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        int ok = isnan(w) ? isnan(g) : isinf(w) ? g == w : fabs(g - w) <= 1e-5 * fabs(w) + 1e-30;
        if (ok && w == 0 && signed_zero) ok = signbit(g) == signbit(w);
        CHECK(ok, "%s [%s] element %d: %.9g, want %.9g", what, s ? "reference" : "gpu", i, g, w);
    }
}

static void test_edges(int s)
{
    wgt_context *ctx = side[s];
    wgt_tensor *y;
    {
        double x[] = {NaN, -0.0, 3, -Inf};
        double want[] = {0, 0, 1, -1}; /* torch.sign: (0 < x) - (x < 0), NaN -> 0 (pytorch#41245) */
        wgt_tensor *t = vec_f32(ctx, 4, x);
        MUST(wgt_unary(WGT_UNARY_SIGN, t, &y));
        expect("sign", s, y, 4, want, 0);
        double w2[] = {NaN, 69.7707, 14.5087, -69.7707}; /* asinh: log(2|x|) past 1e9 */
        double x2[] = {NaN, 1e30, 1e6, -1e30};
        wgt_tensor *t2 = vec_f32(ctx, 4, x2);
        MUST(wgt_unary(WGT_UNARY_ASINH, t2, &y));
        expect("asinh", s, y, 4, w2, 0);
        double x3[] = {-Inf, 0.5, 1, 1e30};
        double w3[] = {NaN, NaN, 0, 69.7707};
        wgt_tensor *t3 = vec_f32(ctx, 4, x3);
        MUST(wgt_unary(WGT_UNARY_ACOSH, t3, &y));
        expect("acosh", s, y, 4, w3, 0);
        double x4[] = {0.0, -0.0, -Inf, -2};
        double w4[] = {-Inf, Inf, NaN, NaN}; /* digamma(+-0) = -+inf (PyTorch), poles NaN */
        wgt_tensor *t4 = vec_f32(ctx, 4, x4);
        MUST(wgt_unary(WGT_UNARY_DIGAMMA, t4, &y));
        expect("digamma", s, y, 4, w4, 0);
        MUST(wgt_unary(WGT_UNARY_HARDSIGMOID, t, &y));
        double w5[] = {NaN, 0.5, 1, 0};
        expect("hardsigmoid", s, y, 4, w5, 0);
        MUST(wgt_unary(WGT_UNARY_TANH, t, &y));
        double w6[] = {NaN, 0, tanh(3.0), -1};
        expect("tanh", s, y, 4, w6, 0);
        MUST(wgt_unary(WGT_UNARY_LOGICAL_NOT, t, &y)); /* NaN is true, so not NaN is false */
        double w7[] = {0, 1, 0, 0};
        expect("logical_not", s, y, 4, w7, 0);
        MUST(wgt_tensor_cast(t, WGT_BOOL, &y));
        double w8[] = {1, 0, 1, 1};
        expect("cast to bool", s, y, 4, w8, 0);
        wgt_tensor_free(t), wgt_tensor_free(t2), wgt_tensor_free(t3), wgt_tensor_free(t4);
    }
    {   /* binary specials: a op b elementwise */
        double a[] = {5, -1, 1, Inf, -1e30, 7, NaN, 0, -0.0, -8, -2, NaN, 1, -1, 0.5, 2, -Inf, -Inf};
        double b[] = {Inf, Inf, -Inf, 2, 3, 0, 1, -1, -1, 1.0 / 3, 3, 0, NaN, Inf, Inf, -Inf, 3, -3};
        enum { N = 18 };
        wgt_tensor *ta = vec_f32(ctx, N, a), *tb = vec_f32(ctx, N, b);
        double fm[N], rem[N], fl[N], pw[N];
        for (int i = 0; i < N; i++) {
            float fa = (float)a[i], fb = (float)b[i];
            fm[i] = fmod((double)fa, (double)fb); /* C's fmod, exact */
            /* PyTorch: remainder = fmod + b when the signs differ; floor division from fmod */
            rem[i] = fm[i];
            if (rem[i] != 0 && !isnan(rem[i]) && (rem[i] < 0) != (fb < 0)) rem[i] += fb;
            pw[i] = (float)pow((double)fa, (double)fb); /* C's pow (C99 F.9.4.4), rounded to f32 */
        }
        /* floor division, as Python: -1 // inf = -1, 1 // -inf = -1, inf // 2 = nan, 7 // 0 = inf */
        double flw[N] = {0, -1, -1, NaN, floor(-1e30f / 3.0f), Inf, NaN, -0.0, 0, NaN, -1, NaN, NaN, -1, 0, -1, NaN, NaN};
        memcpy(fl, flw, sizeof fl);
        fl[9] = floor((-8.0) / (double)(float)(1.0 / 3)); /* -24.0000007 -> -25 */
        MUST(wgt_binary(WGT_BINARY_FMOD, ta, tb, &y));
        expect("fmod", s, y, N, fm, 0);
        MUST(wgt_binary(WGT_BINARY_REMAINDER, ta, tb, &y));
        expect("remainder", s, y, N, rem, 0);
        MUST(wgt_binary(WGT_BINARY_POW, ta, tb, &y));
        expect("pow", s, y, N, pw, 1);
        MUST(wgt_binary(WGT_BINARY_DIV_FLOOR, ta, tb, &y));
        /* element 4: -1e30 // 3 in f32 is within an ulp of the quotient: leave it to the harness */
        double got[N];
        values(y, N, got);
        for (int i = 0; i < N; i++) {
            if (i == 4) continue;
            int ok = isnan(fl[i]) ? isnan(got[i]) : got[i] == fl[i];
            CHECK(ok, "div_floor [%s] %g // %g: %.9g, want %.9g", s ? "reference" : "gpu", a[i], b[i], got[i], fl[i]);
        }
        wgt_tensor_free(ta), wgt_tensor_free(tb);
    }
    {   /* NaN in comparisons and logical ops */
        double a[] = {NaN, NaN, 1, 0, NaN};
        double b[] = {NaN, 1, NaN, NaN, 0};
        wgt_tensor *ta = vec_f32(ctx, 5, a), *tb = vec_f32(ctx, 5, b);
        double ne[] = {1, 1, 1, 1, 1}, eq[] = {0, 0, 0, 0, 0}, lt[] = {0, 0, 0, 0, 0};
        double and_[] = {1, 1, 1, 0, 0}, or_[] = {1, 1, 1, 1, 1}, xor_[] = {0, 0, 0, 1, 1};
        MUST(wgt_binary(WGT_BINARY_NE, ta, tb, &y)); expect("ne", s, y, 5, ne, 0);
        MUST(wgt_binary(WGT_BINARY_EQ, ta, tb, &y)); expect("eq", s, y, 5, eq, 0);
        MUST(wgt_binary(WGT_BINARY_LT, ta, tb, &y)); expect("lt", s, y, 5, lt, 0);
        MUST(wgt_binary(WGT_BINARY_GE, ta, tb, &y)); expect("ge", s, y, 5, lt, 0);
        MUST(wgt_binary(WGT_BINARY_LOGICAL_AND, ta, tb, &y)); expect("logical_and", s, y, 5, and_, 0);
        MUST(wgt_binary(WGT_BINARY_LOGICAL_OR, ta, tb, &y)); expect("logical_or", s, y, 5, or_, 0);
        MUST(wgt_binary(WGT_BINARY_LOGICAL_XOR, ta, tb, &y)); expect("logical_xor", s, y, 5, xor_, 0);
        wgt_tensor_free(ta), wgt_tensor_free(tb);
    }
    {   /* float -> i32 saturates at INT32_MAX / INT32_MIN, NaN -> 0 (documented in wgt.h's cast) */
        double x[] = {3e9, -3e9, NaN, 2147483520.0, -2.7, 2.7, Inf, -Inf};
        double want[] = {2147483647.0, -2147483648.0, 0, 2147483520.0, -2, 2, 2147483647.0, -2147483648.0};
        double wu[] = {3e9, 0, 0, 2147483520.0, 0, 2, 4294967295.0, 0};
        wgt_tensor *t = vec_f32(ctx, 8, x);
        MUST(wgt_tensor_cast(t, WGT_I32, &y)); expect("cast f32 -> i32", s, y, 8, want, 0);
        MUST(wgt_tensor_cast(t, WGT_U32, &y)); expect("cast f32 -> u32", s, y, 8, wu, 0);
        wgt_tensor_free(t);
    }
    {   /* integer clamp in integers: 2^31 - 1 and 2^24 + 1 are not f32 values */
        int32_t v[] = {2147483647, 16777217, -2147483647 - 1, 5};
        int64_t n = 4;
        wgt_tensor *t;
        MUST(wgt_tensor_from_host(ctx, WGT_I32, 1, &n, v, &t));
        wgt_unary_params p = wgt_unary_params_default(WGT_UNARY_CLAMP);
        p.lo = -2147483000.5, p.hi = 2147483646;
        MUST(wgt_unary_ex(WGT_UNARY_CLAMP, &p, t, &y));
        double want[] = {2147483646, 16777217, -2147483000, 5};
        expect("clamp i32", s, y, 4, want, 0);
        wgt_tensor_free(t);
        uint8_t bv[] = {0, 1, 1, 0};
        MUST(wgt_tensor_from_host(ctx, WGT_BOOL, 1, &n, bv, &t));
        MUST(wgt_unary(WGT_UNARY_BITWISE_NOT, t, &y)); /* ~ on a bool tensor is logical not */
        double wb[] = {1, 0, 0, 1};
        expect("bitwise_not bool", s, y, 4, wb, 0);
        wgt_tensor_free(t);
    }
    {   /* rows with NaN / inf: softmax all NaN, var NaN (x - mean is inf - inf) */
        double x[] = {1, NaN, 2, 1, Inf, 2, -Inf, 0, 1};
        int64_t sh[2] = {3, 3};
        wgt_tensor *t = vec_f32(ctx, 9, x), *m;
        MUST(wgt_tensor_reshape(t, 2, sh, &m));
        double e = exp(1.0), z = 1 + e;
        double want[] = {NaN, NaN, NaN, NaN, NaN, NaN, 0, 1 / z, e / z};
        MUST(wgt_softmax(m, 1, &y)); expect("softmax", s, y, 9, want, 0);
        MUST(wgt_reduce(WGT_REDUCE_VAR, m, 2, 0, 1, &y));
        double wv[] = {NaN, NaN, NaN};
        expect("var", s, y, 3, wv, 0);
        wgt_tensor_free(m), wgt_tensor_free(t);
    }
    {   /* linspace with one step is start (torch.linspace(2, 5, 1) == [2]) */
        MUST(wgt_linspace(ctx, 2, 5, 1, WGT_F32, &y));
        double want[] = {2};
        expect("linspace(2, 5, 1)", s, y, 1, want, 0);
        MUST(wgt_linspace(ctx, 2, 5, 4, WGT_F32, &y));
        double w4[] = {2, 3, 4, 5};
        expect("linspace(2, 5, 4)", s, y, 4, w4, 0);
    }
}

/* ---- the contiguous path, chunks, workgroup sizes, staged reductions ------------------------- */

/* quick: fewer dtypes and sizes (the runs under other limits, which compile their own pipelines) */
static void test_elementwise_paths(const char *tag, int quick)
{
    static const wgt_dtype dts[] = {WGT_F32, WGT_F16, WGT_I8, WGT_BF16, WGT_I32, WGT_U8};
    static const int64_t sizes[] = {1, 9, 4099, 3, 5, 8, 1023};
    char what[128];
    for (size_t d = 0; d < (quick ? 3 : sizeof dts / sizeof *dts); d++)
        for (size_t z = 0; z < (quick ? 3 : sizeof sizes / sizeof *sizes); z++) {
            wgt_dtype dt = dts[d];
            int64_t n = sizes[z], n2 = n + 8, one = 1;
            pair a = pair_rand(dt, 1, &n, -50, 50, 1), big = pair_rand(dt, 1, &n2, -50, 50, 0);
            pair b = pair_narrow(big, 0, 4, n), c = pair_narrow(big, 0, 3, n), sc = pair_rand(dt, 1, &one, 1, 9, 0);
            wgt_binary_op op = op_is_float(dt) ? WGT_BINARY_MUL : WGT_BINARY_SUB;
            snprintf(what, sizeof what, "%s: %s [%lld] x narrowed at 4", tag, wgt_binary_op_name(op), (long long)n);
            DIFF(what, 0, 1e-6, wgt_binary(op, a.t[S], b.t[S], &y_[S]));
            snprintf(what, sizeof what, "%s: %s [%lld] x narrowed at 3", tag, wgt_binary_op_name(op), (long long)n);
            DIFF(what, 0, 1e-6, wgt_binary(op, a.t[S], c.t[S], &y_[S]));
            snprintf(what, sizeof what, "%s: %s [%lld] x one element", tag, wgt_binary_op_name(op), (long long)n);
            DIFF(what, 0, 1e-6, wgt_binary(op, sc.t[S], a.t[S], &y_[S]));
            snprintf(what, sizeof what, "%s: abs [%lld]", tag, (long long)n);
            DIFF(what, 0, 0, wgt_unary(WGT_UNARY_ABS, b.t[S], &y_[S]));
            snprintf(what, sizeof what, "%s: cast [%lld] to f32", tag, (long long)n);
            DIFF(what, 0, 0, wgt_tensor_cast(c.t[S], WGT_F32, &y_[S]));
            pair_free(a), pair_free(big), pair_free(b), pair_free(c), pair_free(sc);
        }
}

static void test_reductions_split(const char *tag, int quick)
{
    static const wgt_reduce_op ops[] = {WGT_REDUCE_SUM, WGT_REDUCE_MEAN, WGT_REDUCE_VAR, WGT_REDUCE_STD,
                                        WGT_REDUCE_AMAX, WGT_REDUCE_AMIN, WGT_REDUCE_ARGMAX, WGT_REDUCE_ARGMIN,
                                        WGT_REDUCE_LOGSUMEXP, WGT_REDUCE_NORM2, WGT_REDUCE_ANY, WGT_REDUCE_ALL};
    int64_t shape[2] = {70, 130}, rows[2] = {3, 5000};
    char what[160];
    for (int d = 0; d < (quick ? 1 : 2); d++) {
        wgt_dtype dt = d ? WGT_BF16 : WGT_F32;
        pair x = pair_rand(dt, 2, shape, -3, 3, 0), xt = pair_transpose(x, 0, 1), r = pair_rand(dt, 2, rows, -3, 3, 0);
        for (size_t i = 0; i < sizeof ops / sizeof *ops; i += quick ? 3 : 1) {
            const char *name = wgt_reduce_op_name(ops[i]);
            double tol = dt == WGT_BF16 ? 1e-2 : 2e-5;
            snprintf(what, sizeof what, "%s: %s %s over every dim", tag, name, wgt_dtype_name(dt));
            DIFF(what, tol, tol, wgt_reduce(ops[i], x.t[S], 0, 0, 1, &y_[S]));
            snprintf(what, sizeof what, "%s: %s %s over every dim, transposed", tag, name, wgt_dtype_name(dt));
            if ((ops[i] == WGT_REDUCE_ARGMAX || ops[i] == WGT_REDUCE_ARGMIN) && strstr(tag, "KiB")) {
                /* indices keep row-major order, so a transposed input past a binding needs a
                 * contiguous copy, and the strided copy cannot split rows that pass a binding:
                 * a clear status (the known limit) */
                wgt_tensor *y = NULL;
                wgt_status st = wgt_reduce(ops[i], xt.t[0], 0, 0, 1, &y);
                CHECK(st == WGT_ERR_LIMIT && !y && strstr(wgt_context_errmsg(side[0]), name),
                      "%s: %s (%s)", what, wgt_status_str(st), wgt_context_errmsg(side[0]));
                wgt_tensor_free(y);
            } else
                DIFF(what, tol, tol, wgt_reduce(ops[i], xt.t[S], 0, 0, 1, &y_[S]));
            snprintf(what, sizeof what, "%s: %s %s of rows past a binding", tag, name, wgt_dtype_name(dt));
            DIFF(what, tol, tol, wgt_reduce(ops[i], r.t[S], 2, 1, 1, &y_[S]));
        }
        pair_free(x), pair_free(xt), pair_free(r);
    }
}

static void test_norms(const char *tag)
{
    int64_t shape[2] = {9, 300};
    char what[128];
    pair x = pair_rand(WGT_F16, 2, shape, -4, 4, 1);
    snprintf(what, sizeof what, "%s: softmax f16", tag);
    DIFF(what, 2e-3, 2e-3, wgt_softmax(x.t[S], 1, &y_[S]));
    snprintf(what, sizeof what, "%s: rms_norm f16", tag);
    DIFF(what, 4e-3, 4e-3, wgt_rms_norm(x.t[S], 1, NULL, 1e-5, &y_[S]));
    pair_free(x);
}

/* i64 of any bits (both words random, a few at the extremes), as a pair. */
static pair pair_i64(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    int64_t *v = malloc((size_t)(n ? n : 1) * 8);
    for (int64_t i = 0; i < n; i++) {
        uint64_t hi = (uint64_t)test_uniform(0, 4294967296.0), lo = (uint64_t)test_uniform(0, 4294967296.0);
        v[i] = (int64_t)(hi << 32 | lo);
        if (i % 7 == 3) v[i] = i % 2 ? INT64_MIN : INT64_MAX;
        if (i % 11 == 5) v[i] = (int64_t)lo - 2147483648; /* small: differences without wrapping */
    }
    pair p;
    for (int s = 0; s < 2; s++) MUST(wgt_tensor_from_host(side[s], WGT_I64, ndim, shape, v, &p.t[s]));
    free(v);
    return p;
}

/* diff, trace, diag and diag_embed of i64 on the GPU (WGT_STRICT: no silent reference), exact
 * and wrapping like int64_t: contiguous, transposed, narrowed and expanded inputs; a diagonal
 * longer than a workgroup (strided partial sums, then the tree). */
static void test_misc_i64(const char *tag)
{
    int64_t sq[2] = {600, 530}, sm[2] = {5, 7}, row[2] = {1, 7}, ex[2] = {4, 7}, ln[1] = {9};
    pair big = pair_i64(2, sq), x = pair_i64(2, sm), r = pair_i64(2, row), v = pair_i64(1, ln);
    pair xs[4] = {x, pair_transpose(x, 0, 1), pair_narrow(big, 1, 3, 9), pair_expand(r, 2, ex)};
    const char *names[4] = {"contiguous", "transposed", "narrowed", "expanded"};
    char what[128];
    setenv("WGT_STRICT", "1", 1);
    for (int i = 0; i < 4; i++) {
        wgt_tensor *const *t = xs[i].t;
        for (int n = 0; n <= 3; n++)
            for (int dim = 0; dim < 2; dim++) {
                snprintf(what, sizeof what, "%s: diff i64 n=%d dim %d %s", tag, n, dim, names[i]);
                DIFF(what, 0, 0, wgt_diff(t[S], n, dim, NULL, NULL, &y_[S]));
            }
        snprintf(what, sizeof what, "%s: diff i64 prepend/append %s", tag, names[i]);
        DIFF(what, 0, 0, wgt_diff(t[S], 2, 0, t[S], t[S], &y_[S]));
        snprintf(what, sizeof what, "%s: trace i64 %s", tag, names[i]);
        DIFF(what, 0, 0, wgt_trace(t[S], &y_[S]));
        for (int k = -3; k <= 2; k++) {
            snprintf(what, sizeof what, "%s: diag i64 offset %d %s", tag, k, names[i]);
            DIFF(what, 0, 0, wgt_diag(t[S], k, &y_[S]));
            snprintf(what, sizeof what, "%s: diag_embed i64 offset %d %s", tag, k, names[i]);
            DIFF(what, 0, 0, wgt_diag_embed(t[S], k, k < 0 ? 0 : -2, -1, &y_[S]));
        }
    }
    pair bt = pair_transpose(big, 0, 1);
    snprintf(what, sizeof what, "%s: trace i64 [600, 530]", tag);
    DIFF(what, 0, 0, wgt_trace(big.t[S], &y_[S]));
    snprintf(what, sizeof what, "%s: trace i64 [530, 600] transposed", tag);
    DIFF(what, 0, 0, wgt_trace(bt.t[S], &y_[S]));
    snprintf(what, sizeof what, "%s: diff i64 [530, 600] transposed", tag);
    DIFF(what, 0, 0, wgt_diff(bt.t[S], 1, 1, NULL, NULL, &y_[S]));
    snprintf(what, sizeof what, "%s: diag i64 1-D", tag);
    DIFF(what, 0, 0, wgt_diag(v.t[S], 1, &y_[S]));
    unsetenv("WGT_STRICT");
    for (int i = 1; i < 4; i++) pair_free(xs[i]);
    pair_free(bt), pair_free(big), pair_free(x), pair_free(r), pair_free(v);
}

/* cdist without the matrix product: the 16 x 16 tiles (P, R >= 8; partial tiles, features in
 * two chunks of 16 and a rest) and the one-distance-per-invocation kernel (P < 8; f16 packs two
 * distances a word), for every norm kind. */
static void test_cdist(const char *tag)
{
    int64_t s1[3] = {2, 37, 21}, s2[3] = {2, 19, 21}, s3[2] = {5, 21}, s4[2] = {7, 21};
    static const double ps[5] = {0, 1, 2, INFINITY, 3};
    char what[128];
    pair a = pair_rand(WGT_F32, 3, s1, -4, 4, 0), b = pair_rand(WGT_F32, 3, s2, -4, 4, 0);
    pair c = pair_rand(WGT_F16, 2, s3, -4, 4, 0), d = pair_rand(WGT_F16, 2, s4, -4, 4, 0);
    for (int i = 0; i < 5; i++) {
        /* f32 sums of 21 terms (pow for p = 3) against double */
        snprintf(what, sizeof what, "%s: cdist tiled p=%g", tag, ps[i]);
        DIFF(what, 1e-4, 1e-4, wgt_cdist(a.t[S], b.t[S], ps[i], WGT_CDIST_NO_MM, &y_[S]));
        snprintf(what, sizeof what, "%s: cdist f16 p=%g", tag, ps[i]);
        DIFF(what, 2e-3, 2e-3, wgt_cdist(c.t[S], d.t[S], ps[i], WGT_CDIST_NO_MM, &y_[S]));
    }
    pair_free(a), pair_free(b), pair_free(c), pair_free(d);
}

int main(void)
{
    pair_open();
    wgt_context *ctx = side[0];
    test_cache(ctx);
    test_edges(0);
    test_edges(1);
    test_elementwise_paths("default", 0);
    test_cdist("default");
    test_misc_i64("default");

    /* split over bindings: the contiguous path in aligned chunks, reductions in stages */
    wgt_limits saved = ctx->info.limits;
    ctx->info.limits.max_storage_buffer_binding_size = 8192;
    test_elementwise_paths("8 KiB bindings", 1);
    test_reductions_split("8 KiB bindings", 0);
    ctx->info.limits = saved;

    /* kernels built for smaller workgroups (compatibility mode allows 128 by default) */
    for (uint32_t wg = 128; wg >= 64; wg /= 2) {
        char tag[64];
        snprintf(tag, sizeof tag, "workgroup %u", wg);
        ctx->info.limits.max_compute_invocations_per_workgroup = wg;
        ctx->info.limits.max_compute_workgroup_size_x = wg;
        CHECK(op_workgroup_size(ctx) == wg, "op_workgroup_size %u under a limit of %u", op_workgroup_size(ctx), wg);
        test_elementwise_paths(tag, 1);
        test_reductions_split(tag, 1);
        test_norms(tag);
        test_cdist(tag);
        test_misc_i64(tag);
        ctx->info.limits = saved;
    }
    CHECK(compared > 10000, "only %d elements compared", compared);
    wgt_context_free(side[0]);
    wgt_context_free(side[1]);
    return test_finish("test_gpu_core");
}
