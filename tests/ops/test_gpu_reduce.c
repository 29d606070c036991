/* Reductions and scans on the GPU against the CPU reference (src/cpu/reduce.c): every wgt_reduce_op
 * over single dims, several dims and all dims, with keepdim, on contiguous, transposed, narrowed and
 * broadcast (stride 0) inputs, in f32, f16, bf16, i32, u8, bool and i64 (exact past 32 bits);
 * empty and one-element inputs; NaN and infinity propagation; max/min with indices; long
 * reductions in two stages (parts by rows, and column parts over outer dims);
 * cumsum/cumprod/cummax/cummin on any dim. */
#include <math.h>
#include <string.h>

#include "ops/api.h"
#include "ops/ops.h"
#include "support/check.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double uniform(double lo, double hi)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return lo + (hi - lo) * (double)(rng >> 11) / 9007199254740992.0;
}

/* Host storage of n elements of dt in [lo, hi] (integers: floor). */
static void *make_data(wgt_dtype dt, int64_t n, double lo, double hi)
{
    void *d = calloc(n ? n : 1, 8);
    wgt_cpu_tensor t = wgt_cpu_tensor_make(d, dt, 1, &n);
    for (int64_t i = 0; i < n; i++) {
        double v = uniform(lo, hi);
        if (op_is_int(dt)) wgt_cpu_store_i(&t, i, (int64_t)floor(v));
        else wgt_cpu_store_f(&t, i, v);
    }
    return d;
}

/* y (GPU) against ref (host, contiguous, y's shape and dtype). Returns the elements compared. */
static int64_t compare(const char *what, const wgt_tensor *y, const wgt_cpu_tensor *ref, double atol, double rtol)
{
    int64_t n = wgt_tensor_numel(y);
    size_t sz = wgt_dtype_size(wgt_tensor_dtype(y));
    void *got = malloc(n * sz + 8);
    if (wgt_tensor_to_host(y, got, n * sz)) {
        CHECK(0, "%s: to_host: %s", what, wgt_errmsg());
        free(got);
        return 0;
    }
    wgt_cpu_tensor g = wgt_cpu_tensor_make(got, wgt_tensor_dtype(y), wgt_tensor_ndim(y), wgt_tensor_shape(y));
    int bad = 0;
    int ints = op_is_int(g.l.dtype) && op_is_int(ref->l.dtype); /* exact, all 64 bits */
    for (int64_t i = 0; i < n && bad < 3; i++) {
        double a = wgt_cpu_load_f(&g, i), b = wgt_cpu_load_f(ref, i);
        int ok = (isnan(a) && isnan(b)) || a == b || fabs(a - b) <= atol + rtol * fabs(b);
        if (ints) ok = wgt_cpu_load_i(&g, i) == wgt_cpu_load_i(ref, i);
        if (!ok && ints) {
            bad++;
            CHECK(0, "%s: element %lld: gpu %lld, reference %lld", what, (long long)i, (long long)wgt_cpu_load_i(&g, i),
                  (long long)wgt_cpu_load_i(ref, i));
        } else if (!ok) {
            bad++;
            CHECK(0, "%s: element %lld: gpu %.9g, reference %.9g", what, (long long)i, a, b);
        }
    }
    free(got);
    return n;
}

static int64_t compared; /* elements compared in total: the test must not pass vacuously */

/* The host view of t, a view of storage `data`. */
static wgt_cpu_tensor host_of(const wgt_tensor *t, void *data)
{
    wgt_cpu_tensor h;
    h.data = data;
    h.l = t->l;
    return h;
}

static double tol_rel(wgt_dtype dt)
{
    /* one rounding of the output (f16 2^-11, bf16 2^-8) plus f32 accumulation against double */
    return dt == WGT_F16 ? 1.5e-3 : dt == WGT_BF16 ? 1e-2 : 2e-5;
}

static void check_reduce(wgt_reduce_op op, const wgt_tensor *x, void *data, uint32_t dims, int keepdim,
                         double correction, const char *layout)
{
    char what[160];
    wgt_dtype dt = wgt_tensor_dtype(x);
    snprintf(what, sizeof what, "%s %s %s dims 0x%x keepdim %d", wgt_reduce_op_name(op), wgt_dtype_name(dt), layout,
             dims, keepdim);
    wgt_tensor *y = NULL;
    wgt_status st = wgt_reduce(op, x, dims, keepdim, correction, &y);
    CHECK(st == WGT_OK, "%s: %s", what, wgt_errmsg());
    if (st) return;
    CHECK(wgt_tensor_dtype(y) == wgt_reduce_result_dtype(op, dt), "%s: result dtype %s", what,
          wgt_dtype_name(wgt_tensor_dtype(y)));
    int64_t n = wgt_tensor_numel(y);
    void *rd = calloc(n ? n : 1, 8);
    wgt_cpu_tensor hx = host_of(x, data);
    wgt_cpu_tensor r = wgt_cpu_tensor_make(rd, wgt_tensor_dtype(y), wgt_tensor_ndim(y), wgt_tensor_shape(y));
    MUST(wgt_cpu_reduce(op, &hx, dims, keepdim, correction, &r, NULL));
    int64_t R = wgt_tensor_numel(x) / (n ? n : 1);
    double rtol = tol_rel(wgt_tensor_dtype(y)), atol = 0;
    if (op_is_float(wgt_tensor_dtype(y)) && op_is_float(dt)) {
        /* f32 sums of R terms of size ~1 carry ~R * 2^-24 of absolute error against double */
        atol = 1e-6 * (double)(R + 1);
        if (op == WGT_REDUCE_VAR || op == WGT_REDUCE_STD) rtol += 1e-5 * sqrt((double)R);
        if (op == WGT_REDUCE_PROD) rtol += 2e-6 * (double)R;
    }
    compared += compare(what, y, &r, atol, rtol);
    free(rd);
    wgt_tensor_free(y);
}

static void check_extreme_dim(int is_max, const wgt_tensor *x, void *data, int dim, int keepdim, const char *layout)
{
    char what[160];
    snprintf(what, sizeof what, "%s %s %s dim %d", is_max ? "max_dim" : "min_dim", wgt_dtype_name(wgt_tensor_dtype(x)),
             layout, dim);
    wgt_tensor *v = NULL, *ix = NULL;
    wgt_status st = is_max ? wgt_max_dim(x, dim, keepdim, &v, &ix) : wgt_min_dim(x, dim, keepdim, &v, &ix);
    CHECK(st == WGT_OK, "%s: %s", what, wgt_errmsg());
    if (st) return;
    int64_t n = wgt_tensor_numel(v);
    void *rv = calloc(n ? n : 1, 8), *ri = calloc(n ? n : 1, 8);
    wgt_cpu_tensor hx = host_of(x, data);
    wgt_cpu_tensor r = wgt_cpu_tensor_make(rv, wgt_tensor_dtype(v), wgt_tensor_ndim(v), wgt_tensor_shape(v));
    wgt_cpu_tensor i = wgt_cpu_tensor_make(ri, WGT_I32, wgt_tensor_ndim(ix), wgt_tensor_shape(ix));
    MUST(wgt_cpu_reduce(is_max ? WGT_REDUCE_AMAX : WGT_REDUCE_AMIN, &hx, 1u << dim, keepdim, 0, &r, &i));
    compared += compare(what, v, &r, 0, 0);
    compared += compare(what, ix, &i, 0, 0);
    free(rv);
    free(ri);
    wgt_tensor_free(v);
    wgt_tensor_free(ix);
}

static int op_applies(wgt_reduce_op op, wgt_dtype dt)
{
    if (op_is_float(dt)) return 1;
    switch (op) {
    case WGT_REDUCE_MEAN: case WGT_REDUCE_VAR: case WGT_REDUCE_STD: case WGT_REDUCE_NORM1: case WGT_REDUCE_NORM2:
    case WGT_REDUCE_NORM_INF: return 0;
    default: return 1;
    }
}

static void reductions(wgt_context *ctx)
{
    const wgt_dtype dts[] = {WGT_F32, WGT_F16, WGT_BF16, WGT_I32, WGT_U8, WGT_BOOL};
    for (size_t di = 0; di < sizeof dts / sizeof *dts; di++) {
        wgt_dtype dt = dts[di];
        /* [6, 7, 45] storage: contiguous, a permuted view, a narrowed view; and a [1000] row */
        int64_t shape[3] = {6, 7, 45}, nel = 6 * 7 * 45;
        double lo = dt == WGT_U8 ? 0 : -3, hi = dt == WGT_BOOL ? 2 : dt == WGT_U8 ? 200 : 3;
        void *data = make_data(dt, nel, lo, hi);
        void *pdata = make_data(dt, nel, 0.8, 1.25); /* prod: factors near 1 */
        if (dt == WGT_BOOL) memset(pdata, 1, nel);
        wgt_tensor *x, *px, *xp, *xn, *pxp;
        MUST(wgt_tensor_from_host(ctx, dt, 3, shape, data, &x));
        MUST(wgt_tensor_from_host(ctx, dt, 3, shape, pdata, &px));
        int perm[3] = {2, 0, 1};
        MUST(wgt_tensor_permute(x, perm, &xp));   /* [45, 6, 7] strides (1, 315, 45) */
        MUST(wgt_tensor_permute(px, perm, &pxp));
        MUST(wgt_tensor_narrow(x, 2, 3, 40, &xn)); /* [6, 7, 40] offset 3 */
        for (int op = 0; op < WGT_REDUCE_COUNT; op++) {
            if (!op_applies(op, dt)) continue;
            if (dt == WGT_U8 && op != WGT_REDUCE_SUM && op != WGT_REDUCE_AMAX) continue; /* i32's kernels, u8 loads */
            int is_prod = op == WGT_REDUCE_PROD;
            const wgt_tensor *base = is_prod ? px : x, *perm_v = is_prod ? pxp : xp;
            void *bd = is_prod ? pdata : data;
            static const uint32_t masks[] = {4, 1, 3, 6, 0};
            for (size_t m = 0; m < sizeof masks / sizeof *masks; m++)
                check_reduce(op, base, bd, masks[m], m & 1, 1, "contiguous");
            check_reduce(op, perm_v, bd, 1, 0, 1, "permuted");
            check_reduce(op, perm_v, bd, 6, 1, 0, "permuted");
            check_reduce(op, xn, data, 4, 0, 1, "narrowed");
        }
        for (int d = 0; d < 3; d++) {
            check_extreme_dim(1, xp, data, d, d == 1, "permuted");
            check_extreme_dim(0, x, data, d, 0, "contiguous");
        }
        wgt_tensor_free(xn);
        wgt_tensor_free(xp);
        wgt_tensor_free(pxp);
        wgt_tensor_free(px);
        wgt_tensor_free(x);
        free(data);
        free(pdata);
    }
}

/* Long rows (several strides of the workgroup), a broadcast input, an empty and a 0-d input,
 * NaN/inf, and the LLM fast paths: sum and argmax over the last dim of [tokens, vocab]. */
static void edge_cases(wgt_context *ctx)
{
    int64_t shape[2] = {3, 5003};
    void *data = make_data(WGT_F32, 3 * 5003, -4, 4);
    float *f = data;
    wgt_tensor *x;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, shape, data, &x));
    for (int op = 0; op < WGT_REDUCE_COUNT; op++)
        if (op != WGT_REDUCE_PROD) check_reduce(op, x, data, 2, 0, 1, "long rows");
    check_extreme_dim(1, x, data, 1, 0, "long rows");
    wgt_tensor_free(x);
    /* NaN in row 0, +inf in row 1, -inf everywhere in row 2 */
    f[100] = NAN, f[4000] = 7;
    f[5003 + 17] = INFINITY;
    for (int i = 0; i < 5003; i++) f[2 * 5003 + i] = -INFINITY;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, shape, data, &x));
    for (int op = 0; op < WGT_REDUCE_COUNT; op++)
        if (op != WGT_REDUCE_PROD && op != WGT_REDUCE_VAR && op != WGT_REDUCE_STD) check_reduce(op, x, data, 2, 0, 1, "nan/inf");
    check_reduce(WGT_REDUCE_SUM, x, data, 1, 0, 1, "nan/inf columns");
    check_reduce(WGT_REDUCE_ARGMAX, x, data, 1, 0, 1, "nan/inf columns");
    wgt_tensor_free(x);
    free(data);

    /* a [1, 4] row broadcast to [300, 4] (stride 0), reduced over both dims and over dim 0 */
    int64_t s1[2] = {1, 4}, s2[2] = {300, 4};
    void *bd = make_data(WGT_F32, 4, -2, 2);
    wgt_tensor *b, *be;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, s1, bd, &b));
    MUST(wgt_tensor_expand(b, 2, s2, &be));
    check_reduce(WGT_REDUCE_SUM, be, bd, 0, 0, 1, "broadcast");
    check_reduce(WGT_REDUCE_MEAN, be, bd, 1, 1, 1, "broadcast");
    check_reduce(WGT_REDUCE_ARGMIN, be, bd, 2, 0, 1, "broadcast");
    wgt_tensor_free(be);
    wgt_tensor_free(b);
    free(bd);

    /* empty: [0, 5] reduced over dim 0 gives five identities; over dim 1 an empty result */
    int64_t se[2] = {0, 5};
    wgt_tensor *e;
    float dummy[1] = {0};
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, se, dummy, &e));
    check_reduce(WGT_REDUCE_SUM, e, dummy, 1, 0, 1, "empty");
    check_reduce(WGT_REDUCE_PROD, e, dummy, 1, 1, 1, "empty");
    check_reduce(WGT_REDUCE_LOGSUMEXP, e, dummy, 1, 0, 1, "empty");
    check_reduce(WGT_REDUCE_AMAX, e, dummy, 2, 0, 1, "empty result");
    wgt_tensor *bad = NULL;
    CHECK(wgt_reduce(WGT_REDUCE_AMAX, e, 1, 0, 0, &bad) == WGT_ERR_SHAPE && !bad, "amax over nothing must fail");
    wgt_tensor_free(e);
    /* 0-d */
    float one = 2.5f;
    wgt_tensor *sc;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 0, NULL, &one, &sc));
    check_reduce(WGT_REDUCE_SUM, sc, &one, 0, 0, 1, "0-d");
    check_reduce(WGT_REDUCE_ARGMAX, sc, &one, 0, 0, 1, "0-d");
    /* dtype and dims errors */
    int32_t iv[4] = {1, 2, 3, 4};
    int64_t s4[1] = {4};
    wgt_tensor *it;
    MUST(wgt_tensor_from_host(ctx, WGT_I32, 1, s4, iv, &it));
    CHECK(wgt_reduce(WGT_REDUCE_MEAN, it, 0, 0, 0, &bad) == WGT_ERR_DTYPE && !bad, "mean of i32 must fail");
    CHECK(wgt_reduce(WGT_REDUCE_SUM, it, 2, 0, 0, &bad) == WGT_ERR_SHAPE && !bad, "dims past ndim must fail");
    wgt_tensor_free(it);
    wgt_tensor_free(sc);
}

static void check_scan(wgt_scan_op op, const wgt_tensor *x, void *data, int dim, const char *layout)
{
    char what[160];
    wgt_dtype dt = wgt_tensor_dtype(x);
    int ext = op == WGT_SCAN_CUMMAX || op == WGT_SCAN_CUMMIN;
    snprintf(what, sizeof what, "%s %s %s dim %d", wgt_scan_op_name(op), wgt_dtype_name(dt), layout, dim);
    wgt_tensor *y = NULL, *ix = NULL;
    wgt_status st = wgt_scan(op, x, dim, &y, ext ? &ix : NULL);
    CHECK(st == WGT_OK, "%s: %s", what, wgt_errmsg());
    if (st) return;
    int64_t n = wgt_tensor_numel(y);
    void *rv = calloc(n ? n : 1, 8), *ri = calloc(n ? n : 1, 8);
    wgt_cpu_tensor hx = host_of(x, data);
    wgt_cpu_tensor r = wgt_cpu_tensor_make(rv, wgt_tensor_dtype(y), wgt_tensor_ndim(y), wgt_tensor_shape(y));
    wgt_cpu_tensor i = wgt_cpu_tensor_make(ri, WGT_I32, wgt_tensor_ndim(y), wgt_tensor_shape(y));
    MUST(wgt_cpu_scan(op, &hx, dim, 0, 0, &r, ext ? &i : NULL));
    int64_t L = wgt_tensor_ndim(x) ? wgt_tensor_shape(x)[dim] : 1;
    double rtol = ext ? 0 : tol_rel(wgt_tensor_dtype(y)) + (op == WGT_SCAN_CUMPROD ? 2e-6 * (double)L : 0);
    compared += compare(what, y, &r, ext || !op_is_float(dt) ? 0 : 1e-6 * (double)L, rtol);
    if (ext) compared += compare(what, ix, &i, 0, 0);
    free(rv);
    free(ri);
    wgt_tensor_free(y);
    wgt_tensor_free(ix);
}

/* Scans on every dim of [5, 3, 300] (short rows in columns, long rows in blocks), a transposed
 * view, a long row of 3000 (three blocks) with NaN for cummax/cummin, and ties. */
static void scans(wgt_context *ctx)
{
    const wgt_dtype dts[] = {WGT_F32, WGT_F16, WGT_BF16, WGT_I32, WGT_U8};
    for (size_t di = 0; di < sizeof dts / sizeof *dts; di++) {
        wgt_dtype dt = dts[di];
        int64_t shape[3] = {5, 3, 300};
        void *data = make_data(dt, 4500, dt == WGT_U8 ? 0 : -2, dt == WGT_U8 ? 6 : 2);
        void *pdata = make_data(dt, 4500, 0.9, 1.1);
        if (!op_is_float(dt)) memset(pdata, dt == WGT_U8 ? 1 : 0, 4500 * wgt_dtype_size(dt));
        wgt_tensor *x, *px, *xt;
        MUST(wgt_tensor_from_host(ctx, dt, 3, shape, data, &x));
        MUST(wgt_tensor_from_host(ctx, dt, 3, shape, pdata, &px));
        MUST(wgt_tensor_transpose(x, 0, 2, &xt));
        for (int op = 0; op < WGT_SCAN_COUNT; op++) {
            if (op == WGT_SCAN_CUMPROD && dt == WGT_I32) continue; /* i32 wraps the same way: the u8 case covers it */
            const wgt_tensor *src = op == WGT_SCAN_CUMPROD ? px : x;
            void *sd = op == WGT_SCAN_CUMPROD ? pdata : data;
            for (int d = 0; d < 3; d++) check_scan(op, src, sd, d, "contiguous");
            check_scan(op, xt, data, 0, "transposed");
        }
        wgt_tensor_free(xt);
        wgt_tensor_free(x);
        wgt_tensor_free(px);
        free(data);
        free(pdata);
    }
    int64_t s[1] = {3000};
    float *f = make_data(WGT_F32, 3000, -3, 3);
    f[1500] = NAN, f[2500] = NAN, f[10] = 100, f[20] = 100;
    wgt_tensor *x;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, s, f, &x));
    for (int op = 0; op < WGT_SCAN_COUNT; op++) /* cumprod of 3000 factors overflows f32 before double */
        if (op != WGT_SCAN_CUMPROD) check_scan(op, x, f, 0, "long/nan");
    wgt_tensor_free(x);
    free(f);
}

/* i64 in 64-bit words: values past 2^32 (sums past it too), products carrying into the high word,
 * ties between values equal in one word only (argmax/argmin take the first, cummax/cummin the
 * last), sums wrapping past INT64_MAX, long scan rows, two stages and split bindings. */
static void wide_ints(wgt_context *ctx)
{
    int64_t shape[3] = {6, 7, 45}, nel = 6 * 7 * 45;
    int64_t *data = make_data(WGT_I64, nel, -4e12, 4e12), *pdata = make_data(WGT_I64, nel, -70000, 70000);
    int64_t *tdata = malloc(nel * 8);
    static const int64_t few[] = {((int64_t)1 << 32) + 5, -((int64_t)1 << 32) + 5, 0x80000000ll, 0x7fffffffll, -1,
                                  -0x80000001ll, 5};
    for (int64_t i = 0; i < nel; i++) tdata[i] = few[(uint64_t)(i * 7 + i / 45) % 7];
    wgt_tensor *x, *px, *tx, *xp, *txp;
    MUST(wgt_tensor_from_host(ctx, WGT_I64, 3, shape, data, &x));
    MUST(wgt_tensor_from_host(ctx, WGT_I64, 3, shape, pdata, &px));
    MUST(wgt_tensor_from_host(ctx, WGT_I64, 3, shape, tdata, &tx));
    int perm[3] = {2, 0, 1};
    MUST(wgt_tensor_permute(x, perm, &xp));
    MUST(wgt_tensor_permute(tx, perm, &txp));
    static const wgt_reduce_op ops[] = {WGT_REDUCE_SUM, WGT_REDUCE_PROD, WGT_REDUCE_AMAX, WGT_REDUCE_AMIN,
                                        WGT_REDUCE_ALL, WGT_REDUCE_ANY, WGT_REDUCE_ARGMAX, WGT_REDUCE_ARGMIN};
    static const uint32_t masks[] = {4, 1, 3, 6, 0};
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        int is_prod = ops[k] == WGT_REDUCE_PROD;
        for (size_t m = 0; m < sizeof masks / sizeof *masks; m++) {
            check_reduce(ops[k], is_prod ? px : x, is_prod ? pdata : data, masks[m], m & 1, 1, "wide");
            check_reduce(ops[k], tx, tdata, masks[m], 0, 1, "ties");
        }
        check_reduce(ops[k], xp, data, 6, 1, 1, "wide permuted");
        check_reduce(ops[k], txp, tdata, 1, 0, 1, "ties permuted");
    }
    for (int d = 0; d < 3; d++) {
        check_extreme_dim(1, txp, tdata, d, d == 1, "ties permuted");
        check_extreme_dim(0, tx, tdata, d, 0, "ties");
        check_extreme_dim(1, x, data, d, 0, "wide");
    }
    for (int op = 0; op < WGT_SCAN_COUNT; op++)
        for (int d = 0; d < 3; d++) {
            check_scan(op, op == WGT_SCAN_CUMPROD ? px : x, op == WGT_SCAN_CUMPROD ? pdata : data, d, "wide");
            check_scan(op, tx, tdata, d, "ties");
            check_scan(op, txp, tdata, d, "ties permuted");
        }
    wgt_tensor_free(txp), wgt_tensor_free(xp), wgt_tensor_free(tx), wgt_tensor_free(px), wgt_tensor_free(x);
    free(data), free(pdata), free(tdata);

    /* sums wrapping past INT64_MAX as C's uint64_t arithmetic does */
    int64_t big[4] = {INT64_MAX, INT64_MAX, 3, INT64_MIN}, s4[1] = {4};
    MUST(wgt_tensor_from_host(ctx, WGT_I64, 1, s4, big, &x));
    check_reduce(WGT_REDUCE_SUM, x, big, 0, 0, 1, "wrap");
    check_reduce(WGT_REDUCE_PROD, x, big, 0, 0, 1, "wrap");
    check_scan(WGT_SCAN_CUMSUM, x, big, 0, "wrap");
    wgt_tensor_free(x);

    /* a long row (the scan's blocks, the workgroup's strides) and few long outputs (two stages) */
    int64_t s2[2] = {2, 70001};
    data = make_data(WGT_I64, 2 * 70001, -4e12, 4e12);
    for (int64_t i = 0; i < 2 * 70001; i += 997) data[i] = 4000000000000ll; /* ties of the maximum */
    MUST(wgt_tensor_from_host(ctx, WGT_I64, 2, s2, data, &x));
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        if (ops[k] == WGT_REDUCE_PROD) continue;
        check_reduce(ops[k], x, data, 2, 0, 1, "two-stage");
        check_reduce(ops[k], x, data, 0, 0, 1, "two-stage all");
    }
    check_extreme_dim(1, x, data, 1, 1, "two-stage");
    for (int op = 0; op < WGT_SCAN_COUNT; op++)
        if (op != WGT_SCAN_CUMPROD) check_scan(op, x, data, 1, "long");
    wgt_tensor_free(x);
    free(data);

    if (wgt_gpu_runs_reference(ctx)) return;
    uint64_t saved = ctx->info.limits.max_storage_buffer_binding_size;
    ctx->info.limits.max_storage_buffer_binding_size = 8192;
    int64_t s3[2] = {64, 301};
    data = make_data(WGT_I64, 64 * 301, -4e12, 4e12);
    MUST(wgt_tensor_from_host(ctx, WGT_I64, 2, s3, data, &x));
    check_reduce(WGT_REDUCE_SUM, x, data, 2, 0, 1, "split");
    check_reduce(WGT_REDUCE_ARGMAX, x, data, 2, 1, 1, "split");
    check_extreme_dim(0, x, data, 1, 0, "split");
    check_reduce(WGT_REDUCE_SUM, x, data, 0, 0, 1, "split all"); /* slices past a binding: parts */
    check_reduce(WGT_REDUCE_ARGMIN, x, data, 0, 0, 1, "split all");
    wgt_tensor_free(x);
    free(data);
    ctx->info.limits.max_storage_buffer_binding_size = saved;
}

/* Work split over several bindings: the context's binding limit is lowered to 8 KiB for a moment
 * (the device's real limit is larger, so the smaller bindings stay valid). */
static void split_bindings(wgt_context *ctx)
{
    if (wgt_gpu_runs_reference(ctx)) return;
    uint64_t saved = ctx->info.limits.max_storage_buffer_binding_size;
    ctx->info.limits.max_storage_buffer_binding_size = 8192;
    int64_t shape[2] = {64, 301};
    const wgt_dtype dts[2] = {WGT_F32, WGT_F16};
    for (int i = 0; i < 2; i++) {
        void *data = make_data(dts[i], 64 * 301, -3, 3);
        wgt_tensor *x;
        MUST(wgt_tensor_from_host(ctx, dts[i], 2, shape, data, &x));
        check_reduce(WGT_REDUCE_SUM, x, data, 2, 0, 1, "split");
        check_reduce(WGT_REDUCE_ARGMAX, x, data, 2, 1, 1, "split");
        check_extreme_dim(0, x, data, 1, 0, "split");
        /* reducing over dim 0 reaches the whole tensor from every output: it cannot split */
        wgt_tensor *y = NULL;
        CHECK(wgt_reduce(WGT_REDUCE_SUM, x, 1, 0, 0, &y) == WGT_ERR_LIMIT && !y, "an unsplittable reduction must fail");
        wgt_tensor_free(x);
        free(data);
    }
    ctx->info.limits.max_storage_buffer_binding_size = saved;
}

/* Few outputs of long reductions run in two stages (parts, then their states): [2, 70001] over
 * dim 1, and [3, 40000] over all dims, in f32 and bf16, with a NaN in one row for argmax/amax. */
static void two_stage(wgt_context *ctx)
{
    const wgt_dtype dts[2] = {WGT_F32, WGT_BF16};
    for (int i = 0; i < 2; i++) {
        int64_t shape[2] = {2, 70001}, s2[2] = {3, 40000};
        void *data = make_data(dts[i], 2 * 70001, -3, 3);
        wgt_tensor *x, *x2;
        MUST(wgt_tensor_from_host(ctx, dts[i], 2, shape, data, &x));
        MUST(wgt_tensor_from_host(ctx, dts[i], 2, s2, data, &x2));
        static const wgt_reduce_op ops[] = {WGT_REDUCE_SUM, WGT_REDUCE_MEAN, WGT_REDUCE_VAR, WGT_REDUCE_ARGMAX,
                                            WGT_REDUCE_AMIN, WGT_REDUCE_LOGSUMEXP, WGT_REDUCE_ANY, WGT_REDUCE_NORM2};
        for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
            check_reduce(ops[k], x, data, 2, 0, 1, "two-stage");
            check_reduce(ops[k], x2, data, 0, 0, 1, "two-stage all");
        }
        check_extreme_dim(1, x, data, 1, 1, "two-stage");
        wgt_tensor_free(x);
        wgt_tensor_free(x2);
        free(data);
    }
}

/* Reductions over outer dims with few outputs run in column parts (an invocation per part of one
 * column, then the parts' states): [4099, 37] over dim 0 (32 parts, stage 2 by columns) for every
 * op, argmax/max_dim with ties of the maximum in many parts (the first index wins), var of values
 * offset from 0, a narrowed view; [3, 70000, 5] over dim 1 and over dims 0 and 1 (hundreds of
 * parts, stage 2 by rows); integer sums over dim 0 past 2^32 (i32 and u32 wrap as the reference
 * does, i64 exact). */
static void column_parts(wgt_context *ctx)
{
    int64_t s1[2] = {4099, 37}, n1 = 4099 * 37, s3[3] = {3, 70000, 5}, n3 = 3 * 70000 * 5;
    const wgt_dtype fdts[2] = {WGT_F32, WGT_BF16};
    for (int i = 0; i < 2; i++) {
        wgt_dtype dt = fdts[i];
        void *data = make_data(dt, n1, -3, 3), *pdata = make_data(dt, n1, 0.99, 1.01);
        void *tdata = make_data(dt, n1, 0, 4); /* ties: integers 0..3 */
        {
            wgt_cpu_tensor t = wgt_cpu_tensor_make(tdata, dt, 1, &n1);
            for (int64_t j = 0; j < n1; j++) wgt_cpu_store_f(&t, j, floor(wgt_cpu_load_f(&t, j)));
        }
        wgt_tensor *x, *px, *tx, *xn;
        MUST(wgt_tensor_from_host(ctx, dt, 2, s1, data, &x));
        MUST(wgt_tensor_from_host(ctx, dt, 2, s1, pdata, &px));
        MUST(wgt_tensor_from_host(ctx, dt, 2, s1, tdata, &tx));
        MUST(wgt_tensor_narrow(x, 1, 3, 30, &xn)); /* [4099, 30], row stride 37, offset 3 */
        for (int op = 0; op < WGT_REDUCE_COUNT; op++) {
            int is_prod = op == WGT_REDUCE_PROD;
            check_reduce(op, is_prod ? px : x, is_prod ? pdata : data, 1, op & 1, 1, "column parts");
        }
        check_reduce(WGT_REDUCE_ARGMAX, tx, tdata, 1, 0, 1, "column parts ties");
        check_reduce(WGT_REDUCE_ARGMIN, tx, tdata, 1, 1, 1, "column parts ties");
        check_extreme_dim(1, tx, tdata, 0, 0, "column parts ties");
        check_extreme_dim(0, tx, tdata, 0, 1, "column parts ties");
        check_reduce(WGT_REDUCE_SUM, xn, data, 1, 0, 1, "column parts narrowed");
        check_reduce(WGT_REDUCE_ARGMAX, xn, data, 1, 0, 1, "column parts narrowed");
        wgt_tensor_free(xn), wgt_tensor_free(tx), wgt_tensor_free(px), wgt_tensor_free(x);
        free(data), free(pdata), free(tdata);
    }
    /* var and std of values near 50 (Chan's merge of the parts against a mean far from 0) */
    float *vd = make_data(WGT_F32, n1, 49, 51);
    wgt_tensor *v;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, s1, vd, &v));
    check_reduce(WGT_REDUCE_VAR, v, vd, 1, 0, 1, "column parts offset");
    check_reduce(WGT_REDUCE_STD, v, vd, 1, 1, 0, "column parts offset");
    wgt_tensor_free(v);
    free(vd);

    float *d3 = make_data(WGT_F32, n3, -3, 3);
    for (int64_t j = 0; j < n3; j += 4999) d3[j] = 3.5f; /* ties of the maximum across parts */
    wgt_tensor *x3;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 3, s3, d3, &x3));
    static const wgt_reduce_op ops[] = {WGT_REDUCE_SUM, WGT_REDUCE_MEAN, WGT_REDUCE_VAR, WGT_REDUCE_ARGMAX,
                                        WGT_REDUCE_AMIN, WGT_REDUCE_LOGSUMEXP, WGT_REDUCE_ANY, WGT_REDUCE_NORM2};
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        check_reduce(ops[k], x3, d3, 2, 0, 1, "column parts 3-d");
        check_reduce(ops[k], x3, d3, 3, 1, 1, "column parts 3-d dims 0,1");
    }
    check_extreme_dim(1, x3, d3, 1, 0, "column parts 3-d");
    wgt_tensor_free(x3);
    free(d3);

    /* integer sums over dim 0 past 2^32; i64 also amax and argmax with ties */
    const wgt_dtype idts[4] = {WGT_I32, WGT_U32, WGT_U8, WGT_I64};
    const double ihi[4] = {1073741824.0, 4e9, 256, 4e12};
    for (int i = 0; i < 4; i++) {
        void *id = make_data(idts[i], n1, 0, ihi[i]);
        wgt_tensor *xi;
        MUST(wgt_tensor_from_host(ctx, idts[i], 2, s1, id, &xi));
        check_reduce(WGT_REDUCE_SUM, xi, id, 1, 0, 1, "column parts past 2^32");
        if (idts[i] == WGT_I64) {
            int64_t *w = id;
            for (int64_t j = 0; j < n1; j += 301) w[j] = 4000000000000ll; /* ties of the maximum */
            wgt_tensor_free(xi);
            MUST(wgt_tensor_from_host(ctx, idts[i], 2, s1, id, &xi));
            check_reduce(WGT_REDUCE_AMAX, xi, id, 1, 0, 1, "column parts ties");
            check_reduce(WGT_REDUCE_ARGMAX, xi, id, 1, 0, 1, "column parts ties");
            check_reduce(WGT_REDUCE_SUM, xi, id, 1, 1, 1, "column parts past 2^32");
        }
        wgt_tensor_free(xi);
        free(id);
    }
}

int main(void)
{
    wgt_context *ctx;
    MUST(wgt_context_create(NULL, &ctx));
    reductions(ctx);
    edge_cases(ctx);
    scans(ctx);
    split_bindings(ctx);
    two_stage(ctx);
    column_parts(ctx);
    wide_ints(ctx);
    CHECK(compared > 10000, "only %lld elements compared", (long long)compared);
    wgt_context_free(ctx);
    return test_finish("test_gpu_reduce");
}
