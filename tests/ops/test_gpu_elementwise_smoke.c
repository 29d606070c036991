/* Elementwise ops on the GPU against the CPU reference: every unary and binary op in f32, f16,
 * bf16 and i32 (where defined), contiguous, transposed and broadcast inputs; and the packed
 * contiguous path (f16, bf16, 8-bit, mixed sizes) against the strided one, bit for bit. */
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

/* Host data of n elements of dt with values in [lo, hi]. */
static void *make_data(wgt_dtype dt, int64_t n, double lo, double hi)
{
    size_t sz = wgt_dtype_size(dt);
    void *d = calloc(n ? n : 1, sz);
    wgt_cpu_tensor t = wgt_cpu_tensor_make(d, dt, 1, &n);
    for (int64_t i = 0; i < n; i++) {
        double v = uniform(lo, hi);
        if (op_is_int(dt)) wgt_cpu_store_i(&t, i, (int64_t)floor(v));
        else wgt_cpu_store_f(&t, i, v);
    }
    return d;
}

/* Compare y (any context) element-wise with the reference output computed on host copies. */
static int compare(const char *what, const wgt_tensor *y, const wgt_cpu_tensor *ref, double atol, double rtol)
{
    int64_t n = wgt_tensor_numel(y);
    size_t sz = wgt_dtype_size(wgt_tensor_dtype(y));
    void *got = malloc(n * sz + 4);
    if (wgt_tensor_to_host(y, got, n * sz)) {
        CHECK(0, "%s: to_host: %s", what, wgt_errmsg());
        free(got);
        return 1;
    }
    wgt_cpu_tensor g = wgt_cpu_tensor_make(got, wgt_tensor_dtype(y), wgt_tensor_ndim(y), wgt_tensor_shape(y));
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 3; i++) {
        double a = wgt_cpu_load_f(&g, i), b = wgt_cpu_load_f(ref, wgt_layout_index(&ref->l, i));
        int ok = (isnan(a) && isnan(b)) || a == b || fabs(a - b) <= atol + rtol * fabs(b);
        if (!ok) {
            bad++;
            CHECK(0, "%s: element %lld: gpu %.9g, reference %.9g", what, (long long)i, a, b);
        }
    }
    free(got);
    return bad;
}

typedef struct dom { double lo, hi; } dom;
static dom domain(wgt_unary_op op)
{
    switch (op) {
    case WGT_UNARY_LOG: case WGT_UNARY_LOG2: case WGT_UNARY_SQRT: case WGT_UNARY_RSQRT: return (dom){0.1, 5};
    case WGT_UNARY_LOG1P: return (dom){-0.5, 5};
    case WGT_UNARY_ASIN: case WGT_UNARY_ACOS: case WGT_UNARY_ATANH: case WGT_UNARY_ERFINV: return (dom){-0.9, 0.9};
    case WGT_UNARY_ACOSH: return (dom){1.1, 5};
    case WGT_UNARY_TAN: return (dom){-1.2, 1.2};
    case WGT_UNARY_LGAMMA: case WGT_UNARY_DIGAMMA: return (dom){0.2, 8};
    case WGT_UNARY_RECIPROCAL: return (dom){0.5, 4};
    default: return (dom){-4, 4};
    }
}

/* ---- the packed contiguous path against the strided one, bit for bit ------------------------
 * Contiguous inputs of 16-bit or 8-bit dtypes (or of sizes unlike the output's) take
 * elementwise_pack.wgsl; the same values read through a stride-2 view take elementwise.wgsl. Both
 * call the same compute(), so every output byte must agree: NaN payloads, infinities, subnormals,
 * bf16 rounding, odd lengths and the partial last vec4 included. */

/* Raw bits of n elements of dt: every pattern (NaNs, infinities, subnormals, signed zeros) at
 * random, and the special ones spelled out at the start. */
static void *pack_bits(wgt_dtype dt, int64_t n)
{
    size_t sz = wgt_dtype_size(dt);
    uint8_t *d = calloc(n, sz);
    static const uint16_t h16[] = {0x7c00, 0xfc00, 0x7e00, 0x7d01, 0x0001, 0x03ff, 0x8001, 0x0000, 0x8000, 0x7bff, 0x3c00};
    static const uint16_t b16[] = {0x7f80, 0xff80, 0x7fc0, 0x7f81, 0x0001, 0x007f, 0x8001, 0x0000, 0x8000, 0x7f7f, 0x3f80};
    static const uint32_t f32[] = {0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0x00000001u, 0x007fffffu,
                                   0x80000001u, 0u, 0x80000000u, 0x477fe000u, 0x3f808000u, 0x3f818000u};
    for (int64_t i = 0; i < n; i++) {
        uniform(0, 1);
        uint32_t r = (uint32_t)(rng >> 20);
        if (dt == WGT_F16 || dt == WGT_BF16) {
            const uint16_t *sp = dt == WGT_F16 ? h16 : b16;
            uint16_t v = i < 11 ? sp[i] : (uint16_t)r;
            memcpy(d + 2 * i, &v, 2);
        } else if (dt == WGT_F32) {
            uint32_t v = i < 12 ? f32[i] : r % 3 ? (r & 0x80000000u) | (0x38000000u + (r & 0x0fffffffu)) : r;
            memcpy(d + 4 * i, &v, 4);
        } else if (dt == WGT_BOOL) {
            d[i] = r % 3 == 0;
        } else
            d[i] = (uint8_t)r;
    }
    return d;
}

/* A [n, 1] tensor holding data (n elements of dt): contiguous, or (strided) a narrowed stride-2 view. */
static wgt_tensor *pack_input(wgt_context *ctx, wgt_dtype dt, int64_t n, const void *data, int strided)
{
    wgt_tensor *t, *v;
    size_t sz = wgt_dtype_size(dt);
    if (!strided) {
        MUST(wgt_tensor_from_host(ctx, dt, 2, (int64_t[]){n, 1}, data, &t));
        return t;
    }
    uint8_t *two = calloc(2 * n, sz);
    for (int64_t i = 0; i < n; i++) memcpy(two + 2 * i * sz, (const uint8_t *)data + i * sz, sz);
    MUST(wgt_tensor_from_host(ctx, dt, 2, (int64_t[]){n, 2}, two, &t));
    MUST(wgt_tensor_narrow(t, 1, 0, 1, &v));
    wgt_tensor_free(t);
    free(two);
    return v;
}

enum { PK_ADD, PK_MUL, PK_EXP, PK_WHERE, PK_EQ, PK_CAST };
static const char *pk_name[] = {"add", "mul", "exp", "where", "eq", "cast"};

/* Run case op over inputs of dtypes d[0..2] (d[1] scalar: broadcast one element) either way. */
static wgt_tensor *pack_run(wgt_context *ctx, int op, const wgt_dtype *d, int64_t n, void *const *data, int scalar1,
                            int strided)
{
    wgt_tensor *in[3] = {0}, *y = NULL;
    for (int i = 0; i < 3; i++) {
        if (i == 1 && scalar1) {
            wgt_tensor *one;
            MUST(wgt_tensor_from_host(ctx, d[1], 2, (int64_t[]){1, 1}, data[1], &one));
            MUST(wgt_tensor_expand(one, 2, (int64_t[]){n, 1}, &in[1]));
            wgt_tensor_free(one);
        } else in[i] = pack_input(ctx, d[i], n, data[i], strided);
    }
    switch (op) {
    case PK_ADD: MUST(wgt_binary(WGT_BINARY_ADD, in[0], in[1], &y)); break;
    case PK_MUL: MUST(wgt_binary(WGT_BINARY_MUL, in[0], in[1], &y)); break;
    case PK_EQ: MUST(wgt_binary(WGT_BINARY_EQ, in[0], in[1], &y)); break;
    case PK_EXP: MUST(wgt_unary(WGT_UNARY_EXP, in[0], &y)); break;
    case PK_WHERE: MUST(wgt_where(in[2], in[0], in[1], &y)); break;
    default: MUST(wgt_tensor_cast(in[0], d[1], &y)); break;
    }
    for (int i = 0; i < 3; i++) wgt_tensor_free(in[i]);
    return y;
}

static void test_packed_vs_strided(wgt_context *ctx)
{
    /* {op, input dtypes (where: values, values, condition), broadcast input 1} */
    static const struct { int op; wgt_dtype d[3]; int scalar1; } cases[] = {
        {PK_ADD, {WGT_F16, WGT_F16, WGT_F16}, 0}, {PK_ADD, {WGT_BF16, WGT_BF16, WGT_BF16}, 0},
        {PK_MUL, {WGT_F16, WGT_F16, WGT_F16}, 0}, {PK_MUL, {WGT_BF16, WGT_BF16, WGT_BF16}, 0},
        {PK_MUL, {WGT_BF16, WGT_BF16, WGT_BF16}, 1}, {PK_ADD, {WGT_F16, WGT_F16, WGT_F16}, 1},
        {PK_EXP, {WGT_F16, WGT_F16, WGT_F16}, 0}, {PK_EXP, {WGT_BF16, WGT_BF16, WGT_BF16}, 0},
        {PK_WHERE, {WGT_F16, WGT_F16, WGT_BOOL}, 0}, {PK_WHERE, {WGT_BF16, WGT_BF16, WGT_BF16}, 0},
        {PK_WHERE, {WGT_BF16, WGT_BF16, WGT_BOOL}, 1}, {PK_WHERE, {WGT_U8, WGT_U8, WGT_F16}, 0},
        {PK_ADD, {WGT_F16, WGT_F32, WGT_F16}, 0}, {PK_ADD, {WGT_U8, WGT_U8, WGT_U8}, 0},
        {PK_MUL, {WGT_I8, WGT_I8, WGT_I8}, 0}, {PK_EQ, {WGT_BF16, WGT_BF16, WGT_BF16}, 0},
        {PK_CAST, {WGT_F32, WGT_BF16, WGT_F32}, 0}, {PK_CAST, {WGT_F32, WGT_F16, WGT_F32}, 0},
        {PK_CAST, {WGT_BF16, WGT_F32, WGT_F32}, 0}, {PK_CAST, {WGT_F16, WGT_BF16, WGT_F32}, 0},
    };
    const int64_t lens[] = {1, 7, 9, 33, 1001, 4099};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
            int64_t n = lens[li];
            void *data[3];
            for (int i = 0; i < 3; i++) data[i] = pack_bits(cases[c].d[i], n);
            wgt_tensor *yp = pack_run(ctx, cases[c].op, cases[c].d, n, data, cases[c].scalar1, 0);
            wgt_tensor *ys = pack_run(ctx, cases[c].op, cases[c].d, n, data, cases[c].scalar1, 1);
            size_t bytes = (size_t)n * wgt_dtype_size(wgt_tensor_dtype(yp));
            uint8_t *bp = malloc(bytes), *bs = malloc(bytes);
            MUST(wgt_tensor_to_host(yp, bp, bytes));
            MUST(wgt_tensor_to_host(ys, bs, bytes));
            size_t es = wgt_dtype_size(wgt_tensor_dtype(yp));
            for (int64_t i = 0, bad = 0; i < n && bad < 3; i++) {
                /* the NaN an arithmetic op returns is the compiler's (WGSL leaves its sign and
                 * payload to the implementation): OpenGL ES llvmpipe gives 0x7fffffff in one kernel,
                 * 0x7fffe000 in the other for f16 NaN + f32 NaN, and the 2026 Dawn's Tint gives an
                 * f16 add's NaN opposite signs in the two kernels (0x7e00 / 0xfe00). So any NaN
                 * matches any NaN for f32 results and for the f16/bf16 results of add, mul and exp;
                 * where, eq and casts move bits and stay bit-exact, as do 8-bit results. */
                float fp, fs;
                wgt_dtype ydt = wgt_tensor_dtype(yp);
                if (es == 4 && ydt == WGT_F32) {
                    memcpy(&fp, bp + i * es, 4), memcpy(&fs, bs + i * es, 4);
                    if (isnan(fp) && isnan(fs)) continue;
                }
                int computes = cases[c].op == PK_ADD || cases[c].op == PK_MUL || cases[c].op == PK_EXP;
                if (es == 2 && computes && (ydt == WGT_F16 || ydt == WGT_BF16)) {
                    uint16_t hp, hs;
                    memcpy(&hp, bp + i * es, 2), memcpy(&hs, bs + i * es, 2);
                    uint16_t em = ydt == WGT_F16 ? 0x7c00 : 0x7f80, mm = ydt == WGT_F16 ? 0x03ff : 0x007f;
                    int np = (hp & em) == em && (hp & mm), ns = (hs & em) == em && (hs & mm);
                    if (np && ns) continue;
                }
                if (memcmp(bp + i * es, bs + i * es, es)) {
                    bad++;
                    uint64_t gp = 0, gs = 0;
                    memcpy(&gp, bp + i * es, es), memcpy(&gs, bs + i * es, es);
                    CHECK(0, "packed %s(%s, %s%s) n=%lld: element %lld is 0x%llx, strided path 0x%llx", pk_name[cases[c].op],
                          wgt_dtype_name(cases[c].d[0]), wgt_dtype_name(cases[c].d[1]), cases[c].scalar1 ? " broadcast" : "",
                          (long long)n, (long long)i, (unsigned long long)gp, (unsigned long long)gs);
                }
            }
            free(bp), free(bs);
            wgt_tensor_free(yp), wgt_tensor_free(ys);
            for (int i = 0; i < 3; i++) free(data[i]);
        }
}

int main(void)
{
    wgt_context *ctx;
    MUST(wgt_context_create(NULL, &ctx));
    test_packed_vs_strided(ctx);
    const wgt_dtype fdts[] = {WGT_F32, WGT_F16, WGT_BF16, WGT_I32};
    int64_t shape[2] = {37, 53};
    for (size_t di = 0; di < 4; di++) {
        wgt_dtype dt = fdts[di];
        double rtol = dt == WGT_F32 ? 2e-5 : dt == WGT_F16 ? 2e-3 : 1.6e-2;
        for (int op = 0; op < WGT_UNARY_COUNT; op++) {
            if (dt == WGT_I32 && op == WGT_UNARY_BITWISE_NOT) {}
            else if (op == WGT_UNARY_BITWISE_NOT) continue;
            dom d = domain(op);
            void *data = make_data(dt, 37 * 53, d.lo, d.hi);
            wgt_tensor *x, *xt, *y;
            MUST(wgt_tensor_from_host(ctx, dt, 2, shape, data, &x));
            MUST(wgt_tensor_transpose(x, 0, 1, &xt));
            wgt_status st = wgt_unary((wgt_unary_op)op, xt, &y);
            char what[96];
            snprintf(what, sizeof what, "%s %s transposed", wgt_unary_op_name(op), wgt_dtype_name(dt));
            CHECK(st == WGT_OK, "%s: %s", what, wgt_errmsg());
            if (!st) {
                wgt_cpu_tensor hx = wgt_cpu_tensor_make(data, dt, 2, shape);
                int64_t tshape[2] = {53, 37};
                hx.l.shape[0] = 53, hx.l.shape[1] = 37, hx.l.strides[0] = 1, hx.l.strides[1] = 53;
                wgt_dtype odt = wgt_tensor_dtype(y);
                void *rd = calloc(37 * 53, 8);
                wgt_cpu_tensor r = wgt_cpu_tensor_make(rd, odt, 2, tshape);
                MUST(wgt_cpu_unary(op, NULL, &hx, &r));
                /* special functions carry their approximation error; f32 math in the kernel */
                double atol = op == WGT_UNARY_LGAMMA || op == WGT_UNARY_DIGAMMA || op == WGT_UNARY_ERFINV ? 1e-4 : 1e-6;
                double rt = op_is_float(odt) && wgt_dtype_size(odt) == 4 && op_is_float(dt) ? rtol * 5 : rtol;
                if (odt == WGT_F32 && dt == WGT_I32) rt = 1e-4;
                compare(what, y, &r, atol, rt);
                free(rd);
            }
            wgt_tensor_free(y);
            wgt_tensor_free(xt);
            wgt_tensor_free(x);
            free(data);
        }
        for (int op = 0; op < WGT_BINARY_COUNT; op++) {
            int bitwise = op >= WGT_BINARY_BITWISE_AND;
            if (bitwise && dt != WGT_I32) continue;
            double lo = -4, hi = 4;
            if (op == WGT_BINARY_POW) lo = 0.5, hi = 2;
            void *da = make_data(dt, 37 * 53, lo, hi), *db = make_data(dt, 53, lo, hi);
            if (op >= WGT_BINARY_DIV && op <= WGT_BINARY_FMOD) { /* keep divisors away from 0 */
                wgt_cpu_tensor t = wgt_cpu_tensor_make(db, dt, 1, &(int64_t){53});
                for (int i = 0; i < 53; i++) {
                    double v = wgt_cpu_load_f(&t, i);
                    wgt_cpu_store_f(&t, i, fabs(v) < 0.5 ? 1.5 : v);
                }
            }
            if (bitwise && op >= WGT_BINARY_SHIFT_LEFT) { free(db); db = make_data(dt, 53, 0, 8); }
            wgt_tensor *a, *b, *y;
            int64_t bshape[1] = {53};
            MUST(wgt_tensor_from_host(ctx, dt, 2, shape, da, &a));
            MUST(wgt_tensor_from_host(ctx, dt, 1, bshape, db, &b));
            char what[96];
            snprintf(what, sizeof what, "%s %s broadcast", wgt_binary_op_name(op), wgt_dtype_name(dt));
            wgt_status st = wgt_binary(op, a, b, &y);
            CHECK(st == WGT_OK, "%s: %s", what, wgt_errmsg());
            if (!st) {
                wgt_cpu_tensor ha = wgt_cpu_tensor_make(da, dt, 2, shape), hb = wgt_cpu_tensor_make(db, dt, 1, bshape);
                void *rd = calloc(37 * 53, 8);
                wgt_cpu_tensor r = wgt_cpu_tensor_make(rd, wgt_tensor_dtype(y), 2, shape);
                MUST(wgt_cpu_binary(op, &ha, &hb, &r));
                compare(what, y, &r, 1e-6, op == WGT_BINARY_POW || op == WGT_BINARY_ATAN2 ? rtol * 5 : rtol);
                free(rd);
            }
            wgt_tensor_free(a);
            wgt_tensor_free(b);
            wgt_tensor_free(y);
            free(da);
            free(db);
        }
    }
    /* where with a float condition and integer values: 0.5 and NaN are true (C, PyTorch) */
    const wgt_dtype vdts[] = {WGT_I32, WGT_U8, WGT_I64};
    for (int ci = 0; ci < 2; ci++)
        for (size_t vi = 0; vi < sizeof vdts / sizeof *vdts; vi++) {
            float c[64];
            int64_t a[64], b[64], n = 64;
            for (int i = 0; i < 64; i++) {
                c[i] = i % 4 == 0 ? 0.0f : i % 4 == 1 ? 0.5f : i % 4 == 2 ? -0.25f : NAN;
                a[i] = i + 1, b[i] = 100 + i;
            }
            wgt_dtype cdt = ci ? WGT_BF16 : WGT_F32, vdt = vdts[vi];
            wgt_tensor *cf, *cond, *a64, *b64, *ta, *tb, *y;
            MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, &n, c, &cf));
            MUST(wgt_tensor_cast(cf, cdt, &cond));
            MUST(wgt_tensor_from_host(ctx, WGT_I64, 1, &n, a, &a64));
            MUST(wgt_tensor_from_host(ctx, WGT_I64, 1, &n, b, &b64));
            MUST(wgt_tensor_cast(a64, vdt, &ta));
            MUST(wgt_tensor_cast(b64, vdt, &tb));
            MUST(wgt_where(cond, ta, tb, &y));
            wgt_tensor *y64;
            MUST(wgt_tensor_cast(y, WGT_I64, &y64));
            int64_t got[64];
            MUST(wgt_tensor_to_host(y64, got, sizeof got));
            int bad = 0;
            for (int i = 0; i < 64 && bad < 3; i++)
                if (got[i] != (i % 4 ? a[i] : b[i])) {
                    bad++;
                    CHECK(0, "where(%s condition, %s): element %d (condition %g) is %lld", wgt_dtype_name(cdt),
                          wgt_dtype_name(vdt), i, c[i], (long long)got[i]);
                }
            wgt_tensor *ts[] = {cf, cond, a64, b64, ta, tb, y, y64};
            for (int i = 0; i < 8; i++) wgt_tensor_free(ts[i]);
        }
    wgt_context_free(ctx);
    return test_finish("test_gpu_elementwise_smoke");
}
