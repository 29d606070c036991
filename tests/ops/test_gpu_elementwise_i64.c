/* i64 elementwise ops on the GPU against the CPU reference, under WGT_STRICT=1 (no silent
 * fallback): values across all 64 bits and at the edges (INT64_MIN/MAX, +-2^31, +-2^32, 2^53 + 1,
 * shift counts 63, 64 and negative, divisors 0 and -1), every binary op of i64 with i64, i32, u32
 * and bool operands broadcast both ways and through transposed views, every unary op, clamp with
 * bounds past 32 bits, where with i64, float and bool conditions, casts both ways (the reference
 * converts i64 to float through double: values whose double rounding differs from a direct one
 * are in), full and strided copies. Integer results must be equal; float results of float-valued
 * ops (true division, atan2, exp, ...) compute in f32 and get a tolerance. */
#include <stdint.h>

#include "gpu_pair.h"

static const int64_t edge[] = {
    0, 1, -1, 2, -2, 7, -7, 63, 64, -64, 65, INT64_MIN, INT64_MAX, INT64_MIN + 1, INT64_MAX - 1,
    2147483647, -2147483647 - 1, 2147483648ll, 4294967295ll, 4294967296ll, -4294967296ll, -4294967297ll,
    9007199254740993ll, -9007199254740993ll, (1ll << 60) + (1ll << 36) + 1, -((1ll << 60) + (1ll << 36) + 1),
    (1ll << 62), 1000000007ll * 999999937ll,
};
#define N_EDGE (int)(sizeof edge / sizeof *edge)

static uint64_t bits(void)
{
    return test_rng_next();
}

/* A value: an edge value, a small one, or random bits shifted right by 0 to 62 (any magnitude). */
static int64_t wide_value(int i)
{
    if (i < N_EDGE) return edge[i];
    switch (bits() % 3) {
    case 0: return (int64_t)(bits() % 41) - 20;
    default: {
        int64_t v = (int64_t)(bits() >> (bits() % 63));
        return bits() & 1 ? -v : v;
    }
    }
}

/* Both sides from host values v (i64) converted to dt as the reference converts. */
static pair pair_values(wgt_dtype dt, int ndim, const int64_t *shape, const int64_t *v)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    void *data = calloc(n ? n : 1, 8);
    wgt_cpu_tensor h = wgt_cpu_tensor_make(data, dt, 1, &n);
    for (int64_t i = 0; i < n; i++) wgt_cpu_store_i(&h, i, v[i]);
    pair p;
    for (int s = 0; s < 2; s++) MUST(wgt_tensor_from_host(side[s], dt, ndim, shape, data, &p.t[s]));
    free(data);
    return p;
}

static pair pair_wide(wgt_dtype dt, int ndim, const int64_t *shape)
{
    int64_t n = 1, *v;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    v = malloc(sizeof(int64_t) * (n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = wide_value(i < N_EDGE ? (int)i : N_EDGE);
    pair p = pair_values(dt, ndim, shape, v);
    free(v);
    return p;
}

/* Every binary op on (a, b) of any dtypes. */
static void binary_all(const char *what, pair a, pair b)
{
    for (int op = 0; op < WGT_BINARY_COUNT; op++) {
        char name[160];
        snprintf(name, sizeof name, "%s %s", what, wgt_binary_op_name((wgt_binary_op)op));
        /* true division and atan2 give f32 from f32 operands rounded from i64 */
        double rtol = op == WGT_BINARY_DIV ? 2e-6 : op == WGT_BINARY_ATAN2 ? 1e-5 : 0;
        DIFF(name, op == WGT_BINARY_ATAN2 ? 4e-6 : 0, rtol, wgt_binary((wgt_binary_op)op, a.t[S], b.t[S], &y_[S]));
    }
}

static void test_binary(void)
{
    int64_t s2[2] = {37, 53}, row[1] = {53}, col[2] = {37, 1}, t2[2] = {53, 37};
    pair a = pair_wide(WGT_I64, 2, s2), b = pair_wide(WGT_I64, 2, s2);
    /* the edge values against each other, every pair: a [N_EDGE, 1] column by an [N_EDGE] row */
    int64_t ec[2] = {N_EDGE, 1}, er[1] = {N_EDGE};
    pair ea = pair_values(WGT_I64, 2, ec, edge), eb = pair_values(WGT_I64, 1, er, edge);
    binary_all("i64 edges x edges", ea, eb);
    binary_all("i64 x i64", a, b);
    pair r32 = pair_wide(WGT_I32, 1, row), c32 = pair_wide(WGT_I32, 2, col);
    binary_all("i64 x i32 row", a, r32);
    binary_all("i32 column x i64", c32, b);
    pair u = pair_wide(WGT_U32, 1, row), bo = pair_wide(WGT_BOOL, 2, s2), i8 = pair_wide(WGT_I8, 2, col);
    binary_all("u32 row x i64", u, a);
    binary_all("i64 x bool", a, bo);
    binary_all("i8 column x i64", i8, b);
    pair bt = pair_wide(WGT_I64, 2, t2), tr = pair_transpose(bt, 0, 1);
    binary_all("i64 x transposed i64", a, tr);
    pair na = pair_narrow(a, 1, 3, 49), nb = pair_narrow(b, 1, 1, 49); /* odd element offsets */
    binary_all("narrowed i64 x narrowed i64", na, nb);
    pair_free(na), pair_free(nb);
    /* float-valued results with a float operand (add, maximum, ...; not the comparisons, which run
     * the reference) */
    pair f = pair_rand(WGT_F32, 1, row, -1e6, 1e6, 1);
    for (int op = 0; op <= WGT_BINARY_MINIMUM; op++) {
        if (op == WGT_BINARY_POW || op == WGT_BINARY_REMAINDER || op == WGT_BINARY_FMOD || op == WGT_BINARY_DIV_FLOOR ||
            op == WGT_BINARY_DIV_TRUNC)
            continue; /* quotients of values 2^40 apart: the f32 inputs' rounding decides */
        char name[96];
        snprintf(name, sizeof name, "i64 x f32 %s", wgt_binary_op_name((wgt_binary_op)op));
        DIFF(name, 4e-6, 1e-6, wgt_binary((wgt_binary_op)op, a.t[S], f.t[S], &y_[S]));
    }
    pair ps[] = {a, b, r32, c32, u, bo, i8, bt, tr, f, ea, eb};
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) pair_free(ps[i]);
}

static void test_unary(void)
{
    int64_t s2[2] = {29, 31};
    pair x = pair_wide(WGT_I64, 2, s2), xt = pair_transpose(x, 0, 1);
    int64_t small[29 * 31];
    for (int i = 0; i < 29 * 31; i++) small[i] = (int64_t)(bits() % 9) - 4;
    pair xs = pair_values(WGT_I64, 2, s2, small);
    for (int op = 0; op < WGT_UNARY_COUNT; op++) {
        wgt_dtype odt = wgt_unary_result_dtype((wgt_unary_op)op, WGT_I64);
        char name[96];
        if (odt == WGT_F32) { /* float-valued: f32 from small integers (the harness has the rest) */
            snprintf(name, sizeof name, "i64 small %s", wgt_unary_op_name((wgt_unary_op)op));
            DIFF(name, 2e-5, 2e-5, wgt_unary((wgt_unary_op)op, xs.t[S], &y_[S]));
            continue;
        }
        snprintf(name, sizeof name, "i64 %s", wgt_unary_op_name((wgt_unary_op)op));
        DIFF(name, 0, 0, wgt_unary((wgt_unary_op)op, x.t[S], &y_[S]));
        snprintf(name, sizeof name, "i64 transposed %s", wgt_unary_op_name((wgt_unary_op)op));
        DIFF(name, 0, 0, wgt_unary((wgt_unary_op)op, xt.t[S], &y_[S]));
    }
    /* float-valued ops of wide values: the f32 conversion rounds to nearest (exp is left out: f32 exp
     * is within 3 + 2|x| ulp, so its error grows with x) */
    const wgt_unary_op wide_float[] = {WGT_UNARY_SQRT, WGT_UNARY_LOG, WGT_UNARY_RECIPROCAL, WGT_UNARY_LEAKY_RELU};
    for (size_t i = 0; i < sizeof wide_float / sizeof *wide_float; i++) {
        char name[96];
        snprintf(name, sizeof name, "i64 wide %s", wgt_unary_op_name(wide_float[i]));
        DIFF(name, 0, 2e-6, wgt_unary(wide_float[i], x.t[S], &y_[S]));
    }
    /* clamp: bounds between, past 32 bits, NaN, crossed, infinite */
    const double b[][2] = {{-1.25, 0.5}, {-3e9, 5e12}, {NAN, 7.5}, {-4.5, NAN}, {10, -10}, {-INFINITY, 1e15},
                           {-9007199254740991.0, 9007199254740991.0}};
    for (size_t i = 0; i < sizeof b / sizeof *b; i++) {
        wgt_unary_params p = wgt_unary_params_default(WGT_UNARY_CLAMP);
        p.lo = b[i][0], p.hi = b[i][1];
        char name[96];
        snprintf(name, sizeof name, "i64 clamp [%g, %g]", p.lo, p.hi);
        DIFF(name, 0, 0, wgt_unary_ex(WGT_UNARY_CLAMP, &p, x.t[S], &y_[S]));
    }
    pair_free(x), pair_free(xt), pair_free(xs);
}

static void test_where_cast_full(void)
{
    int64_t s2[2] = {23, 41}, row[1] = {41};
    pair a = pair_wide(WGT_I64, 2, s2), b32 = pair_wide(WGT_I32, 1, row);
    pair cb = pair_wide(WGT_BOOL, 2, s2), c64 = pair_wide(WGT_I64, 1, row);
    pair cf = pair_rand(WGT_F32, 2, s2, -1, 1, 1), f = pair_rand(WGT_F32, 2, s2, -50, 50, 1);
    DIFF("where(bool, i64, i32 row)", 0, 0, wgt_where(cb.t[S], a.t[S], b32.t[S], &y_[S]));
    DIFF("where(i64 row, i32 row, i64)", 0, 0, wgt_where(c64.t[S], b32.t[S], a.t[S], &y_[S]));
    DIFF("where(f32 in (-1, 1), i64, i32 row)", 0, 0, wgt_where(cf.t[S], a.t[S], b32.t[S], &y_[S]));
    DIFF("where(i64 row, f32, f32)", 0, 0, wgt_where(c64.t[S], f.t[S], cf.t[S], &y_[S]));
    pair at = pair_transpose(a, 0, 1);
    for (int d = 0; d < N_DTYPES; d++) {
        char name[96];
        snprintf(name, sizeof name, "cast i64 -> %s", wgt_dtype_name(all_dtypes[d]));
        DIFF(name, 0, 0, wgt_tensor_cast(a.t[S], all_dtypes[d], &y_[S]));
        snprintf(name, sizeof name, "cast transposed i64 -> %s", wgt_dtype_name(all_dtypes[d]));
        DIFF(name, 0, 0, wgt_tensor_cast(at.t[S], all_dtypes[d], &y_[S]));
        wgt_dtype sd = all_dtypes[d];
        pair src = op_is_float(sd) ? pair_rand(sd, 2, s2, lo_of(sd) * 100, hi_of(sd) * 100, 1)
                                              : pair_wide(all_dtypes[d], 2, s2);
        snprintf(name, sizeof name, "cast %s -> i64", wgt_dtype_name(all_dtypes[d]));
        DIFF(name, 0, 0, wgt_tensor_cast(src.t[S], WGT_I64, &y_[S]));
        pair_free(src);
    }
    /* floats at and past the ends of i64: saturated, NaN 0 */
    const float fv[] = {NAN, INFINITY, -INFINITY, 9.2233720e18f, -9.2233720e18f, 1e19f, -1e19f, 3e10f, -3e10f,
                        0.5f, -0.5f, -0.0f, 16777217.0f, 1.5e18f};
    int64_t nf = (int64_t)(sizeof fv / sizeof *fv);
    pair fe;
    for (int s = 0; s < 2; s++) MUST(wgt_tensor_from_host(side[s], WGT_F32, 1, &nf, fv, &fe.t[s]));
    DIFF("cast f32 edges -> i64", 0, 0, wgt_tensor_cast(fe.t[S], WGT_I64, &y_[S]));
    pair_free(fe);
    DIFF("copy transposed i64", 0, 0, wgt_tensor_contiguous(at.t[S], &y_[S]));
    const double fulls[] = {2.5, -3.0, 1e18, -1e18, 4611686018427387904.0, 1e19, -1e19, NAN, 3e9};
    for (size_t i = 0; i < sizeof fulls / sizeof *fulls; i++) {
        char name[96];
        snprintf(name, sizeof name, "full i64 %g", fulls[i]);
        DIFF(name, 0, 0, wgt_full(side[S], WGT_I64, 2, s2, fulls[i], &y_[S]));
    }
    pair ps[] = {a, b32, cb, c64, cf, f, at};
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) pair_free(ps[i]);
}

int main(void)
{
    setenv("WGT_STRICT", "1", 1); /* every op here must run its GPU kernel */
    pair_open();
    test_binary();
    test_unary();
    test_where_cast_full();
    CHECK(compared > 100000, "only %d elements compared", compared);
    wgt_context_free(side[0]);
    wgt_context_free(side[1]);
    return test_finish("test_gpu_elementwise_i64");
}
