/* The harness's op table: one entry per op, with its input generator (shapes per case and value
 * domain), its call through the op API, and its tolerance with the reason. Families of ops that
 * share a call (unary, binary) are generated from their enums; an entry per op otherwise. */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "harness/harness.h"
#include "ops/api.h"
#include "ops/ops.h"

/* ---- shapes per case ------------------------------------------------------------------------- */

static void set_shape(hx_input *in, int ndim, const int64_t *shape)
{
    in->ndim = ndim;
    for (int d = 0; d < ndim; d++) in->shape[d] = shape[d];
}

/* The shape of the main input for a case (elementwise-like ops). */
void hx_case_shape(hx_case c, hx_input *in)
{
    switch (c) {
    case HX_EMPTY: set_shape(in, 3, (int64_t[]){4, 0, 3}); break;
    case HX_SCALAR: set_shape(in, 0, NULL); break;
    case HX_ODD1: set_shape(in, 1, (int64_t[]){1}); break;
    case HX_ODD7: set_shape(in, 1, (int64_t[]){7}); break;
    case HX_ODD_LARGE: set_shape(in, 1, (int64_t[]){1000003}); break;
    case HX_SPECIAL: set_shape(in, 2, (int64_t[]){7, 9}); break;
    case HX_BIG: set_shape(in, 2, (int64_t[]){8193, 4097}); break; /* 134,266,884 bytes of f32 */
    default: set_shape(in, 2, (int64_t[]){37, 53}); break;
    }
}

static hx_dom dom_for(const hx_op *op, wgt_dtype dt)
{
    if (op_is_float(dt) || (op->int_dom.lo == 0 && op->int_dom.hi == 0)) {
        if (op_is_float(dt)) return op->dom;
        return (hx_dom){-20, 20, op->dom.nonzero};
    }
    return op->int_dom;
}

static int setup_unary(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    in[0].dtype = dt;
    in[0].dom = dom_for(op, dt);
    hx_case_shape(c, &in[0]);
    return 1;
}

/* Two inputs of one dtype; broadcast: [5, 1, 53] with an expanded [7, 53] view. */
static int setup_binary(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    for (int i = 0; i < 2; i++) {
        in[i].dtype = dt;
        in[i].dom = dom_for(op, dt);
        hx_case_shape(c, &in[i]);
    }
    in[0].dom.nonzero = 0;
    if (c == HX_BROADCAST) {
        set_shape(&in[0], 3, (int64_t[]){5, 1, 53});
        set_shape(&in[1], 2, (int64_t[]){7, 53});
    } else if (c == HX_BIG) {
        set_shape(&in[1], 1, (int64_t[]){4097}); /* a row broadcast over the big one */
    }
    if (op->code == WGT_BINARY_SHIFT_LEFT || op->code == WGT_BINARY_SHIFT_RIGHT) {
        in[1].dom = (hx_dom){0, 8 * (double)wgt_dtype_size(dt) - 1, 0};
        if (dt == WGT_BOOL) in[1].dom = (hx_dom){0, 1, 0};
    }
    if (op->code == WGT_BINARY_POW && !op_is_float(dt)) in[1].dom = (hx_dom){0, 4, 0};
    return 2;
}

/* cond (bool), a, b of dt. */
static int setup_where(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    setup_binary(op, c, dt, in + 1);
    in[0] = in[1];
    in[0].dtype = WGT_BOOL;
    in[0].dom = (hx_dom){0, 1, 0};
    if (c == HX_BROADCAST) set_shape(&in[0], 1, (int64_t[]){53});
    return 3;
}

/* ---- calls ----------------------------------------------------------------------------------- */

static wgt_status call_unary(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    if (v == 0) return wgt_unary((wgt_unary_op)op->code, in[0], out);
    /* variant 1: parameters other than the defaults */
    wgt_unary_params p = wgt_unary_params_default((wgt_unary_op)op->code);
    p.alpha = 0.3, p.beta = 0.7, p.lo = -1.25, p.hi = 0.5;
    if (op->code == WGT_UNARY_SOFTPLUS) p.hi = 3; /* the threshold */
    return wgt_unary_ex((wgt_unary_op)op->code, &p, in[0], out);
}

static wgt_status call_binary(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_binary((wgt_binary_op)op->code, in[0], in[1], out);
}

static wgt_status call_where(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_where(in[0], in[1], in[2], out);
}

static wgt_status call_cast(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_tensor_cast(in[0], (wgt_dtype)v, out);
}

static wgt_status call_copy(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_tensor_copy(in[0], out);
}

static wgt_status call_contiguous(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_tensor_contiguous(in[0], out);
}

/* full takes no tensor: the input gives the context and the shape. */
static wgt_status call_full(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_full(wgt_tensor_context(in[0]), wgt_tensor_dtype(in[0]), wgt_tensor_ndim(in[0]),
                    wgt_tensor_shape(in[0]), v ? -3.0 : 2.5, out);
}

/* ---- elementwise domains and tolerances ------------------------------------------------------ */

static hx_dom unary_dom(wgt_unary_op op)
{
    switch (op) {
    case WGT_UNARY_LOG: case WGT_UNARY_LOG2: case WGT_UNARY_SQRT: case WGT_UNARY_RSQRT: return (hx_dom){0.1, 5, 0};
    case WGT_UNARY_LOG1P: return (hx_dom){-0.5, 5, 0};
    case WGT_UNARY_ASIN: case WGT_UNARY_ACOS: case WGT_UNARY_ATANH: case WGT_UNARY_ERFINV: return (hx_dom){-0.9, 0.9, 0};
    case WGT_UNARY_ACOSH: return (hx_dom){1.1, 5, 0};
    case WGT_UNARY_TAN: return (hx_dom){-1.2, 1.2, 0};
    case WGT_UNARY_LGAMMA: case WGT_UNARY_DIGAMMA: return (hx_dom){0.2, 8, 0};
    case WGT_UNARY_RECIPROCAL: return (hx_dom){0.5, 4, 0};
    default: return (hx_dom){-4, 4, 0};
    }
}

/* Integer inputs of float-valued ops run in f32: keep them in the float domain. */
static hx_dom unary_int_dom(wgt_unary_op op)
{
    hx_dom d = unary_dom(op);
    if (d.lo >= 0) return (hx_dom){d.lo < 1 ? 1 : ceil(d.lo), d.hi, 0};
    if (d.hi < 2) return (hx_dom){0, 0.5, 0}; /* asin, acos, atanh, erfinv: 0 only */
    return (hx_dom){-4, 4, 0};
}

static hx_tol unary_tol(wgt_unary_op op)
{
    switch (op) {
    case WGT_UNARY_NEG: case WGT_UNARY_ABS: case WGT_UNARY_SIGN: case WGT_UNARY_SQUARE: case WGT_UNARY_RELU:
    case WGT_UNARY_FLOOR: case WGT_UNARY_CEIL: case WGT_UNARY_ROUND: case WGT_UNARY_TRUNC: case WGT_UNARY_FRAC:
    case WGT_UNARY_CLAMP: case WGT_UNARY_HARDTANH: case WGT_UNARY_ISNAN: case WGT_UNARY_ISINF:
    case WGT_UNARY_ISFINITE: case WGT_UNARY_LOGICAL_NOT: case WGT_UNARY_BITWISE_NOT: case WGT_UNARY_LEAKY_RELU:
        return (hx_tol){2e-7, 0, "one f32 rounding at most (exact in f32)"};
    case WGT_UNARY_RECIPROCAL: case WGT_UNARY_SQRT: case WGT_UNARY_RSQRT:
        return (hx_tol){1e-6, 0, "WGSL's division and square roots are within 2.5 ulp"};
    case WGT_UNARY_ASIN: case WGT_UNARY_ACOS: case WGT_UNARY_ATAN:
        return (hx_tol){4e-6, 4e-6, "llvmpipe's asin/atan are off by up to 1.5e-6 absolute (WGSL allows 4096 ulp)"};
    case WGT_UNARY_LGAMMA: case WGT_UNARY_DIGAMMA: case WGT_UNARY_ERFINV:
        return (hx_tol){2e-5, 2e-5, "series/rational approximations in f32 (a few hundred ulp near their zeros)"};
    case WGT_UNARY_EXPM1: case WGT_UNARY_LOG1P: case WGT_UNARY_ASINH: case WGT_UNARY_ACOSH: case WGT_UNARY_ATANH:
    case WGT_UNARY_SINH: case WGT_UNARY_TANH: case WGT_UNARY_ERF: case WGT_UNARY_ERFC: case WGT_UNARY_GELU:
    case WGT_UNARY_GELU_TANH: case WGT_UNARY_MISH: case WGT_UNARY_SOFTPLUS: case WGT_UNARY_SILU: case WGT_UNARY_ELU:
        return (hx_tol){2e-5, 1e-6, "composed from f32 exp/log (cancellation near 0 costs a few ulp each)"};
    default:
        return (hx_tol){4e-6, 1e-6, "f32 transcendental functions within a few ulp (WGSL: exp 3 + 2|x| ulp)"};
    }
}

static hx_dom binary_dom(wgt_binary_op op)
{
    switch (op) {
    case WGT_BINARY_DIV: case WGT_BINARY_DIV_FLOOR: case WGT_BINARY_DIV_TRUNC: case WGT_BINARY_REMAINDER:
    case WGT_BINARY_FMOD: return (hx_dom){-4, 4, 1};
    case WGT_BINARY_POW: return (hx_dom){0.5, 2, 0};
    default: return (hx_dom){-4, 4, 0};
    }
}

static hx_tol binary_tol(wgt_binary_op op)
{
    switch (op) {
    case WGT_BINARY_DIV: return (hx_tol){1e-6, 0, "WGSL's f32 division is within 2.5 ulp"};
    case WGT_BINARY_DIV_FLOOR: case WGT_BINARY_DIV_TRUNC: case WGT_BINARY_REMAINDER: case WGT_BINARY_FMOD:
        return (hx_tol){1e-6, 1e-6, "an f32 quotient within 2.5 ulp, then rounded: exact except at ties"};
    case WGT_BINARY_ATAN2:
        return (hx_tol){1e-5, 4e-6, "llvmpipe's atan is off by up to 1.5e-6 absolute (WGSL allows 4096 ulp)"};
    case WGT_BINARY_POW:
        return (hx_tol){1e-5, 1e-6, "f32 exp2(y log2 x) / atan within a few ulp of the result"};
    default: return (hx_tol){2e-7, 0, "one f32 rounding of the exact result"};
    }
}

/* ---- the table ------------------------------------------------------------------------------- */

#define MAX_OPS 512
static hx_op table[MAX_OPS + 1]; /* the last slot takes the entries past MAX_OPS: see hx_ops */
static int n_table, overflow;

static hx_op *add(const char *name, const char *family, uint32_t dtypes, hx_setup_fn setup, hx_call_fn call)
{
    if (n_table == MAX_OPS) {
        overflow++;
        return &table[MAX_OPS];
    }
    hx_op *o = &table[n_table++];
    memset(o, 0, sizeof *o);
    o->name = name, o->family = family, o->dtypes = dtypes, o->setup = setup, o->call = call;
    o->n_variants = 1;
    o->dom = (hx_dom){-4, 4, 0};
    o->tol = (hx_tol){0, 0, "exact"};
    return o;
}

static int unary_has_params(wgt_unary_op op)
{
    return op == WGT_UNARY_CLAMP || op == WGT_UNARY_HARDTANH || op == WGT_UNARY_LEAKY_RELU || op == WGT_UNARY_ELU ||
           op == WGT_UNARY_SOFTPLUS || op == WGT_UNARY_HARDSIGMOID;
}

static void build(void)
{
    for (int u = 0; u < WGT_UNARY_COUNT; u++) {
        uint32_t dts = u == WGT_UNARY_BITWISE_NOT ? HX_INTS | HX_DT(WGT_BOOL) : HX_ALL;
        hx_op *o = add(wgt_unary_op_name((wgt_unary_op)u), "unary", dts, setup_unary, call_unary);
        o->code = u;
        o->dom = unary_dom((wgt_unary_op)u);
        o->int_dom = unary_int_dom((wgt_unary_op)u);
        o->tol = unary_tol((wgt_unary_op)u);
        o->n_variants = unary_has_params((wgt_unary_op)u) ? 2 : 1;
        o->big = u == WGT_UNARY_NEG;
        o->large = u == WGT_UNARY_NEG || u == WGT_UNARY_EXP;
        o->no_huge = u == WGT_UNARY_SIN || u == WGT_UNARY_COS || u == WGT_UNARY_TAN;
    }
    for (int b = 0; b < WGT_BINARY_COUNT; b++) {
        int bitwise = b >= WGT_BINARY_BITWISE_AND;
        hx_op *o = add(wgt_binary_op_name((wgt_binary_op)b), "binary", bitwise ? HX_INTS | HX_DT(WGT_BOOL) : HX_ALL,
                       setup_binary, call_binary);
        o->code = b;
        o->dom = binary_dom((wgt_binary_op)b);
        o->tol = binary_tol((wgt_binary_op)b);
        o->big = b == WGT_BINARY_ADD;
        o->large = b == WGT_BINARY_ADD || b == WGT_BINARY_MUL;
    }
    hx_op *o = add("where", "elementwise", HX_ALL, setup_where, call_where);
    o->large = 1;
    o = add("cast", "copy", HX_ALL, setup_unary, call_cast);
    o->n_variants = WGT_DTYPE_COUNT; /* the target dtype */
    o->dom = (hx_dom){-100, 100, 0};
    o->tol = (hx_tol){0, 0, "one rounding to the target dtype"};
    o->big = 1;
    o->big_variant = WGT_F16;
    o->large = 1;
    o = add("copy", "copy", HX_ALL, setup_unary, call_copy);
    o->big = 1;
    o->large = 1;
    o = add("contiguous", "copy", HX_ALL, setup_unary, call_contiguous);
    o = add("full", "creation", HX_ALL, setup_unary, call_full);
    o->n_variants = 2;
    hx_table_ops(add);
    hx_table_conv(add);
    hx_table_pool(add);
    hx_table_sort(add);
    hx_table_random(add);
    hx_table_loss(add);
    hx_table_fused(add);
}

const hx_op *hx_ops(int *count)
{
    if (!n_table) build();
    if (overflow) { /* every caller then fails loudly rather than silently skipping ops */
        fprintf(stderr, "harness: %d table entries past MAX_OPS (%d) in testkit/harness/table.c: raise it\n", overflow,
                MAX_OPS);
        *count = 0;
        return table;
    }
    *count = n_table;
    return table;
}

const hx_op *hx_find(const char *name)
{
    int n;
    const hx_op *ops = hx_ops(&n);
    for (int i = 0; i < n; i++)
        if (!strcmp(ops[i].name, name)) return &ops[i];
    return NULL;
}

/* ---- known issues ---------------------------------------------------------------------------- */

#define NANINF HX_SPECIAL
/* Seen on the H200 only (NVIDIA's shader compiler contracts a * b + c into fused multiply-adds and
 * folds some inf * 0 and inf - inf away): with the nan-inf case's inputs of 1e28 and inf, sums
 * that cancel differ from the reference by more than the tolerance, and a few taps give inf
 * where the reference gets NaN. lavapipe and llvmpipe match the reference exactly here. */
#define H200_CONTRACT "on the H200, huge and infinite inputs: the compiler's fused multiply-adds round cancelling sums differently and fold some inf * 0 (inf where the reference has NaN)"
static const hx_known known[] = {
    {"NVIDIA H200", "rope", NANINF, -1, NULL, H200_CONTRACT},
    {"NVIDIA H200", "interpolate_linear", NANINF, -1, NULL, H200_CONTRACT},
    {"NVIDIA H200", "interpolate_bilinear", NANINF, -1, NULL, H200_CONTRACT},
    {"NVIDIA H200", "interpolate_cubic1d", NANINF, -1, NULL, H200_CONTRACT},
    {"NVIDIA H200", "interpolate_bicubic", NANINF, -1, NULL, H200_CONTRACT},
    {"NVIDIA H200", "grid_sample", NANINF, -1, NULL, H200_CONTRACT},
    /* seen on both CPU adapters (lavapipe and llvmpipe GL, 2026-12-01); not yet checked on the H200 */
    {"llvmpipe", "binary_cross_entropy_with_logits", NANINF, -1, NULL,
     "targets of +-inf (outside [0, 1]) give NaN on the device where the reference's double arithmetic keeps +-inf "
     "(inf * 0, inf - inf)"},
};

const hx_known *hx_known_issues(int *count)
{
    *count = (int)(sizeof known / sizeof *known);
    return known;
}
