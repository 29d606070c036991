/* Elementwise ops: unary, binary with broadcasting, where, lerp, addcmul, addcdiv, cast, copy, full. */
#include "cpu/cpu_internal.h"
#include "cpu/special.h"

#include <math.h>

static const double PI = 3.14159265358979323846;

static double softplus(double x, double beta, double threshold)
{
    if (x * beta > threshold) return x;
    return log1p(exp(x * beta)) / beta;
}

static double unary_f(wgt_unary_op op, const wgt_unary_params *p, double x)
{
    switch (op) {
    case WGT_UNARY_NEG: return -x;
    case WGT_UNARY_ABS: return fabs(x);
    case WGT_UNARY_SIGN: return (x > 0) - (x < 0); /* PyTorch: sign(NaN) = 0 (NumPy/ONNX: NaN) */
    case WGT_UNARY_EXP: return exp(x);
    case WGT_UNARY_EXP2: return exp2(x);
    case WGT_UNARY_EXPM1: return expm1(x);
    case WGT_UNARY_LOG: return log(x);
    case WGT_UNARY_LOG2: return log2(x);
    case WGT_UNARY_LOG1P: return log1p(x);
    case WGT_UNARY_SQRT: return sqrt(x);
    case WGT_UNARY_RSQRT: return 1 / sqrt(x);
    case WGT_UNARY_RECIPROCAL: return 1 / x;
    case WGT_UNARY_SQUARE: return x * x;
    case WGT_UNARY_SIN: return sin(x);
    case WGT_UNARY_COS: return cos(x);
    case WGT_UNARY_TAN: return tan(x);
    case WGT_UNARY_ASIN: return asin(x);
    case WGT_UNARY_ACOS: return acos(x);
    case WGT_UNARY_ATAN: return atan(x);
    case WGT_UNARY_SINH: return sinh(x);
    case WGT_UNARY_COSH: return cosh(x);
    case WGT_UNARY_TANH: return tanh(x);
    case WGT_UNARY_ASINH: return asinh(x);
    case WGT_UNARY_ACOSH: return acosh(x);
    case WGT_UNARY_ATANH: return atanh(x);
    case WGT_UNARY_ERF: return erf(x);
    case WGT_UNARY_ERFC: return erfc(x);
    case WGT_UNARY_ERFINV: return wgt_cpu_erfinv(x);
    case WGT_UNARY_LGAMMA: return lgamma(x);
    case WGT_UNARY_DIGAMMA: return wgt_cpu_digamma(x);
    case WGT_UNARY_SIGMOID: return 1 / (1 + exp(-x));
    case WGT_UNARY_RELU: return x < 0 ? 0 : x; /* keeps NaN and -0, as PyTorch */
    case WGT_UNARY_GELU: /* PyTorch's form: its tail is exactly -0 where erf rounds to -1 */
        return x * 0.5 * (1 + erf(x / sqrt(2.0)));
    case WGT_UNARY_GELU_TANH:
        return 0.5 * x * (1 + tanh(sqrt(2 / PI) * (x + 0.044715 * x * x * x)));
    case WGT_UNARY_SILU: return x / (1 + exp(-x));
    case WGT_UNARY_SOFTPLUS: return softplus(x, p->beta, p->hi);
    case WGT_UNARY_MISH: return x * tanh(softplus(x, 1, 20));
    case WGT_UNARY_ELU: return x > 0 ? x : p->alpha * expm1(x);
    case WGT_UNARY_LEAKY_RELU: return x > 0 ? x : p->alpha * x;
    case WGT_UNARY_HARDTANH:
    case WGT_UNARY_CLAMP: /* NaN stays NaN; the lower bound first, so lo > hi gives hi (PyTorch) */
        if (isnan(x)) return x;
        if (x < p->lo) x = p->lo;
        if (x > p->hi) x = p->hi;
        return x;
    case WGT_UNARY_HARDSIGMOID: {
        double y = p->alpha * x + p->beta;
        return isnan(y) ? y : y < 0 ? 0 : y > 1 ? 1 : y;
    }
    case WGT_UNARY_HARDSWISH: {
        double r = x + 3;
        r = r < 0 ? 0 : r > 6 ? 6 : r;
        return x * r / 6;
    }
    case WGT_UNARY_FLOOR: return floor(x);
    case WGT_UNARY_CEIL: return ceil(x);
    case WGT_UNARY_ROUND: return nearbyint(x); /* default rounding mode: half to even */
    case WGT_UNARY_TRUNC: return trunc(x);
    case WGT_UNARY_FRAC: return x - trunc(x);
    case WGT_UNARY_ISNAN: return isnan(x) != 0;
    case WGT_UNARY_ISINF: return isinf(x) != 0;
    case WGT_UNARY_ISFINITE: return isfinite(x) != 0;
    case WGT_UNARY_LOGICAL_NOT: return x == 0;
    default: return NAN;
    }
}

/* Integer forms; *ok = 0 when the op has none (then it runs in double). */
static int64_t unary_i(wgt_unary_op op, const wgt_unary_params *p, int64_t x, int is_bool, int *ok)
{
    *ok = 1;
    switch (op) {
    case WGT_UNARY_NEG: return (int64_t)(0 - (uint64_t)x);
    case WGT_UNARY_ABS: return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
    case WGT_UNARY_SIGN: return (x > 0) - (x < 0);
    case WGT_UNARY_SQUARE: return (int64_t)((uint64_t)x * (uint64_t)x);
    case WGT_UNARY_RELU: return x > 0 ? x : 0;
    case WGT_UNARY_HARDTANH:
    case WGT_UNARY_CLAMP:
        if ((double)x < p->lo) x = (int64_t)ceil(p->lo);
        if ((double)x > p->hi) x = (int64_t)floor(p->hi);
        return x;
    case WGT_UNARY_FLOOR: case WGT_UNARY_CEIL: case WGT_UNARY_ROUND: case WGT_UNARY_TRUNC: return x;
    case WGT_UNARY_FRAC: case WGT_UNARY_ISNAN: case WGT_UNARY_ISINF: return 0;
    case WGT_UNARY_ISFINITE: return 1;
    case WGT_UNARY_LOGICAL_NOT: return x == 0;
    case WGT_UNARY_BITWISE_NOT: return is_bool ? x == 0 : ~x;
    default: *ok = 0; return 0;
    }
}

wgt_status wgt_cpu_unary(wgt_unary_op op, const wgt_unary_params *params, const wgt_cpu_tensor *x,
                         const wgt_cpu_tensor *out)
{
    wgt_cpu_tensor xb;
    if ((unsigned)op >= WGT_UNARY_COUNT)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: unknown unary op %d", (int)op);
    CPU_CHECK(out, "unary output");
    CPU_TRY(cpu_broadcast_view(x, out, "unary input", &xb));
    wgt_unary_params p = params ? *params : wgt_unary_params_default(op);
    int x_int = !wgt_cpu_is_float(x->l.dtype), out_int = !wgt_cpu_is_float(out->l.dtype);
    if (op == WGT_UNARY_BITWISE_NOT && (!x_int || !out_int))
        return wgt_error(WGT_ERR_DTYPE, "cpu: bitwise_not needs integer or bool tensors, not %s -> %s",
                         wgt_dtype_name(x->l.dtype), wgt_dtype_name(out->l.dtype));
    int ok = 0;
    unary_i(op, &p, 0, 0, &ok);
    /* Integer path when exact integer semantics exist; the predicates (isnan...) and
     * logical_not give the same answer either way, so they also take it for float outputs. */
    int int_path = x_int && ok && (out_int || op >= WGT_UNARY_ISNAN);
    int is_bool = x->l.dtype == WGT_BOOL;
    int64_t n = cpu_numel(out);
    int cx = wgt_layout_is_contiguous(&xb.l), co = wgt_layout_is_contiguous(&out->l);
    for (int64_t i = 0; i < n; i++) {
        int64_t at = cpu_at_c(&xb, i, cx), to = cpu_at_c(out, i, co);
        if (int_path) wgt_cpu_store_i(out, to, unary_i(op, &p, wgt_cpu_load_i(&xb, at), is_bool, &ok));
        else wgt_cpu_store_f(out, to, unary_f(op, &p, wgt_cpu_load_f(&xb, at)));
    }
    return WGT_OK;
}

/* ---- binary ---- */

static double div_floor_f(double a, double b)
{
    /* PyTorch's div_floor_floating: exact floor of the true quotient, via fmod. */
    if (b == 0) return a / b;
    double mod = fmod(a, b);
    double div = (a - mod) / b;
    if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
    if (div == 0) return copysign(0.0, a / b);
    double fl = floor(div);
    if (div - fl > 0.5) fl += 1;
    return fl;
}

static double binary_f(wgt_binary_op op, double a, double b)
{
    switch (op) {
    case WGT_BINARY_ADD: return a + b;
    case WGT_BINARY_SUB: return a - b;
    case WGT_BINARY_MUL: return a * b;
    case WGT_BINARY_DIV: return a / b;
    case WGT_BINARY_DIV_FLOOR: return div_floor_f(a, b);
    case WGT_BINARY_DIV_TRUNC: return trunc(a / b);
    case WGT_BINARY_REMAINDER: {
        double m = fmod(a, b);
        if (m != 0 && (b < 0) != (m < 0)) m += b;
        return m;
    }
    case WGT_BINARY_FMOD: return fmod(a, b);
    case WGT_BINARY_POW: return pow(a, b);
    case WGT_BINARY_ATAN2: return atan2(a, b);
    case WGT_BINARY_MAXIMUM: return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
    case WGT_BINARY_MINIMUM: return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
    case WGT_BINARY_EQ: return a == b;
    case WGT_BINARY_NE: return a != b;
    case WGT_BINARY_LT: return a < b;
    case WGT_BINARY_LE: return a <= b;
    case WGT_BINARY_GT: return a > b;
    case WGT_BINARY_GE: return a >= b;
    case WGT_BINARY_LOGICAL_AND: return (a != 0) && (b != 0);
    case WGT_BINARY_LOGICAL_OR: return (a != 0) || (b != 0);
    case WGT_BINARY_LOGICAL_XOR: return (a != 0) != (b != 0);
    default: return NAN;
    }
}

static int64_t ipow(int64_t a, int64_t b)
{
    if (b < 0) return a == 1 ? 1 : a == -1 ? (b & 1 ? -1 : 1) : 0;
    uint64_t r = 1, base = (uint64_t)a;
    while (b) {
        if (b & 1) r *= base;
        base *= base;
        b >>= 1;
    }
    return (int64_t)r;
}

static int64_t binary_i(wgt_binary_op op, int64_t a, int64_t b, int width)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch (op) {
    case WGT_BINARY_ADD: return (int64_t)(ua + ub);
    case WGT_BINARY_SUB: return (int64_t)(ua - ub);
    case WGT_BINARY_MUL: return (int64_t)(ua * ub);
    case WGT_BINARY_DIV:
    case WGT_BINARY_DIV_TRUNC:
        if (b == 0) return 0;
        if (b == -1) return (int64_t)(0 - ua);
        return a / b;
    case WGT_BINARY_DIV_FLOOR: {
        if (b == 0) return 0;
        if (b == -1) return (int64_t)(0 - ua);
        int64_t q = a / b;
        if (a % b != 0 && ((a < 0) != (b < 0))) q--;
        return q;
    }
    case WGT_BINARY_REMAINDER: {
        if (b == 0 || b == -1) return 0;
        int64_t m = a % b;
        if (m != 0 && ((m < 0) != (b < 0))) m += b;
        return m;
    }
    case WGT_BINARY_FMOD: return b == 0 || b == -1 ? 0 : a % b;
    case WGT_BINARY_POW: return ipow(a, b);
    case WGT_BINARY_MAXIMUM: return a > b ? a : b;
    case WGT_BINARY_MINIMUM: return a < b ? a : b;
    case WGT_BINARY_EQ: return a == b;
    case WGT_BINARY_NE: return a != b;
    case WGT_BINARY_LT: return a < b;
    case WGT_BINARY_LE: return a <= b;
    case WGT_BINARY_GT: return a > b;
    case WGT_BINARY_GE: return a >= b;
    case WGT_BINARY_LOGICAL_AND: return a && b;
    case WGT_BINARY_LOGICAL_OR: return a || b;
    case WGT_BINARY_LOGICAL_XOR: return !a != !b;
    case WGT_BINARY_BITWISE_AND: return a & b;
    case WGT_BINARY_BITWISE_OR: return a | b;
    case WGT_BINARY_BITWISE_XOR: return a ^ b;
    case WGT_BINARY_SHIFT_LEFT: return b < 0 || b >= width ? 0 : (int64_t)(ua << b);
    case WGT_BINARY_SHIFT_RIGHT:
        if (b < 0 || b >= width) return a < 0 ? -1 : 0;
        return a >= 0 ? (int64_t)(ua >> b) : ~(int64_t)(~ua >> b); /* arithmetic, portably */
    default: return 0;
    }
}

wgt_status wgt_cpu_binary(wgt_binary_op op, const wgt_cpu_tensor *a, const wgt_cpu_tensor *b,
                          const wgt_cpu_tensor *out)
{
    wgt_cpu_tensor ab, bb;
    if ((unsigned)op >= WGT_BINARY_COUNT)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: unknown binary op %d", (int)op);
    CPU_CHECK(out, "binary output");
    CPU_TRY(cpu_broadcast_view(a, out, "binary input a", &ab));
    CPU_TRY(cpu_broadcast_view(b, out, "binary input b", &bb));
    int ints = !wgt_cpu_is_float(a->l.dtype) && !wgt_cpu_is_float(b->l.dtype);
    int out_float = wgt_cpu_is_float(out->l.dtype);
    if (op >= WGT_BINARY_BITWISE_AND && (!ints || out_float))
        return wgt_error(WGT_ERR_DTYPE, "cpu: %s needs integer or bool tensors, not %s, %s -> %s",
                         wgt_binary_op_name(op), wgt_dtype_name(a->l.dtype),
                         wgt_dtype_name(b->l.dtype), wgt_dtype_name(out->l.dtype));
    /* Integers stay exact, except true division, pow and atan2 into a float output (PyTorch
     * promotes those to float). */
    int int_path = ints && !(out_float && (op == WGT_BINARY_DIV || op == WGT_BINARY_POW ||
                                           op == WGT_BINARY_ATAN2));
    int width = out->l.dtype == WGT_BOOL ? 8 : (int)wgt_dtype_size(out->l.dtype) * 8;
    int64_t n = cpu_numel(out);
    int ca = wgt_layout_is_contiguous(&ab.l), cb = wgt_layout_is_contiguous(&bb.l);
    int co = wgt_layout_is_contiguous(&out->l);
    for (int64_t i = 0; i < n; i++) {
        int64_t ia = cpu_at_c(&ab, i, ca), ib = cpu_at_c(&bb, i, cb), to = cpu_at_c(out, i, co);
        if (int_path)
            wgt_cpu_store_i(out, to, binary_i(op, wgt_cpu_load_i(&ab, ia), wgt_cpu_load_i(&bb, ib), width));
        else
            wgt_cpu_store_f(out, to, binary_f(op, wgt_cpu_load_f(&ab, ia), wgt_cpu_load_f(&bb, ib)));
    }
    return WGT_OK;
}

wgt_status wgt_cpu_where(const wgt_cpu_tensor *cond, const wgt_cpu_tensor *a,
                         const wgt_cpu_tensor *b, const wgt_cpu_tensor *out)
{
    wgt_cpu_tensor cb, ab, bb;
    CPU_CHECK(out, "where output");
    CPU_TRY(cpu_broadcast_view(cond, out, "where condition", &cb));
    CPU_TRY(cpu_broadcast_view(a, out, "where input a", &ab));
    CPU_TRY(cpu_broadcast_view(b, out, "where input b", &bb));
    int64_t n = cpu_numel(out);
    for (int64_t i = 0; i < n; i++) {
        int64_t ci = cpu_at(&cb, i);
        int take_a = wgt_cpu_is_float(cb.l.dtype) ? wgt_cpu_load_f(&cb, ci) != 0 : wgt_cpu_load_i(&cb, ci) != 0;
        const wgt_cpu_tensor *src = take_a ? &ab : &bb;
        cpu_copy_elem(src, cpu_at(src, i), out, cpu_at(out, i));
    }
    return WGT_OK;
}

/* out = f(x, y, z) elementwise in double, all three broadcast to out. */
typedef double (*ternary_fn)(double x, double y, double z, double value);

static wgt_status ternary(const char *name, ternary_fn f, const wgt_cpu_tensor *x,
                          const wgt_cpu_tensor *y, const wgt_cpu_tensor *z, double value,
                          const wgt_cpu_tensor *out)
{
    wgt_cpu_tensor xb, yb, zb;
    CPU_CHECK(out, name);
    CPU_TRY(cpu_broadcast_view(x, out, name, &xb));
    CPU_TRY(cpu_broadcast_view(y, out, name, &yb));
    CPU_TRY(cpu_broadcast_view(z, out, name, &zb));
    int64_t n = cpu_numel(out);
    for (int64_t i = 0; i < n; i++)
        wgt_cpu_store_f(out, cpu_at(out, i),
                        f(wgt_cpu_load_f(&xb, cpu_at(&xb, i)), wgt_cpu_load_f(&yb, cpu_at(&yb, i)),
                          wgt_cpu_load_f(&zb, cpu_at(&zb, i)), value));
    return WGT_OK;
}

static double lerp_f(double s, double e, double w, double unused)
{
    /* PyTorch's form: exact at both ends (w = 0 gives s, w = 1 gives e). */
    return fabs(w) < 0.5 ? s + w * (e - s) : e - (e - s) * (1 - w);
}
static double addcmul_f(double s, double a, double b, double v) { return s + v * a * b; }
static double addcdiv_f(double s, double a, double b, double v) { return s + v * (a / b); }

wgt_status wgt_cpu_lerp(const wgt_cpu_tensor *start, const wgt_cpu_tensor *end,
                        const wgt_cpu_tensor *weight, const wgt_cpu_tensor *out)
{
    CPU_CHECK(out, "lerp output");
    if (!wgt_cpu_is_float(out->l.dtype))
        return wgt_error(WGT_ERR_DTYPE, "cpu: lerp needs a float output, not %s",
                         wgt_dtype_name(out->l.dtype));
    return ternary("lerp", lerp_f, start, end, weight, 0, out);
}

wgt_status wgt_cpu_addcmul(const wgt_cpu_tensor *self, const wgt_cpu_tensor *t1,
                           const wgt_cpu_tensor *t2, double value, const wgt_cpu_tensor *out)
{
    CPU_CHECK(out, "addcmul output");
    if (wgt_cpu_is_float(out->l.dtype)) return ternary("addcmul", addcmul_f, self, t1, t2, value, out);
    /* Integers: exact, value truncated to an integer (PyTorch requires an integral value). */
    wgt_cpu_tensor sb, ab, bb;
    CPU_TRY(cpu_broadcast_view(self, out, "addcmul self", &sb));
    CPU_TRY(cpu_broadcast_view(t1, out, "addcmul tensor1", &ab));
    CPU_TRY(cpu_broadcast_view(t2, out, "addcmul tensor2", &bb));
    uint64_t v = (uint64_t)(int64_t)value;
    int64_t n = cpu_numel(out);
    for (int64_t i = 0; i < n; i++) {
        uint64_t s = (uint64_t)wgt_cpu_load_i(&sb, cpu_at(&sb, i));
        uint64_t a = (uint64_t)wgt_cpu_load_i(&ab, cpu_at(&ab, i));
        uint64_t b = (uint64_t)wgt_cpu_load_i(&bb, cpu_at(&bb, i));
        wgt_cpu_store_i(out, cpu_at(out, i), (int64_t)(s + v * a * b));
    }
    return WGT_OK;
}

wgt_status wgt_cpu_addcdiv(const wgt_cpu_tensor *self, const wgt_cpu_tensor *t1,
                           const wgt_cpu_tensor *t2, double value, const wgt_cpu_tensor *out)
{
    CPU_CHECK(out, "addcdiv output");
    if (!wgt_cpu_is_float(out->l.dtype))
        return wgt_error(WGT_ERR_DTYPE, "cpu: addcdiv needs a float output, not %s (PyTorch "
                         "refuses integer division here too)", wgt_dtype_name(out->l.dtype));
    return ternary("addcdiv", addcdiv_f, self, t1, t2, value, out);
}

/* ---- cast, copy, full ---- */

wgt_status wgt_cpu_cast(const wgt_cpu_tensor *x, const wgt_cpu_tensor *out)
{
    wgt_cpu_tensor xb;
    CPU_CHECK(out, "cast output");
    CPU_TRY(cpu_broadcast_view(x, out, "cast input", &xb));
    int64_t n = cpu_numel(out);
    int cx = wgt_layout_is_contiguous(&xb.l), co = wgt_layout_is_contiguous(&out->l);
    for (int64_t i = 0; i < n; i++) cpu_copy_elem(&xb, cpu_at_c(&xb, i, cx), out, cpu_at_c(out, i, co));
    return WGT_OK;
}

wgt_status wgt_cpu_copy(const wgt_cpu_tensor *x, const wgt_cpu_tensor *out)
{
    CPU_CHECK(x, "copy input");
    CPU_CHECK(out, "copy output");
    if (x->l.dtype != out->l.dtype)
        return wgt_error(WGT_ERR_DTYPE, "cpu: copy from %s to %s: use cast", wgt_dtype_name(x->l.dtype),
                         wgt_dtype_name(out->l.dtype));
    return wgt_cpu_cast(x, out);
}

wgt_status wgt_cpu_full(double value, const wgt_cpu_tensor *out)
{
    CPU_CHECK(out, "full output");
    int64_t n = cpu_numel(out);
    /* Integral values go through the exact path so i64 constants past 2^53 stay exact. */
    int integral = value == trunc(value) && fabs(value) < 9.2e18;
    for (int64_t i = 0; i < n; i++) {
        if (integral && !wgt_cpu_is_float(out->l.dtype)) wgt_cpu_store_i(out, cpu_at(out, i), (int64_t)value);
        else wgt_cpu_store_f(out, cpu_at(out, i), value);
    }
    return WGT_OK;
}
