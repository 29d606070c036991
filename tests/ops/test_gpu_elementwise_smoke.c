/* Elementwise ops on the GPU against the CPU reference: every unary and binary op in f32, f16,
 * bf16 and i32 (where defined), contiguous, transposed and broadcast inputs. */
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

int main(void)
{
    wgt_context *ctx;
    MUST(wgt_context_create(NULL, &ctx));
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
