/* ONNX op -> CPU reference mapping: helpers, elementwise ops, reductions, softmax, scans,
 * casts, and the dispatch table. Shape, indexing, matmul and norm ops are in onnx_ops_shape.c.
 * Every handler reads attributes in the form of the node's opset (attributes moved to inputs
 * in several opsets: both forms are accepted). */
#include "onnx/onnx_ops_internal.h"
#include "cpu/pool.h"
#include "harness/harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

const wgt_onnx_tensor *ox_in(const ox *c, int i)
{
    if (i >= c->n_in || i >= c->node->n_inputs || !c->node->inputs[i][0]) return NULL;
    return c->in[i];
}

wgt_status ox_unsupported(const ox *c, const char *what)
{
    return wgt_error(WGT_ERR_UNSUPPORTED, "%s: %s", c->node->op_type, what);
}

wgt_status ox_missing(const ox *c, const char *fn)
{
    return wgt_error(WGT_ERR_UNSUPPORTED, "%s: backend '%s' has nothing that runs %s", c->node->op_type, c->be->name,
                     fn);
}

wgt_status ox_need(const ox *c, int i, const wgt_onnx_tensor **t)
{
    *t = ox_in(c, i);
    if (!*t) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: input %d is missing", c->node->op_type, i);
    if ((*t)->dtype == WGT_DTYPE_COUNT || !(*t)->data)
        return wgt_error(WGT_ERR_UNSUPPORTED, "%s: input %d has type %s, which no wgt dtype holds",
                         c->node->op_type, i, wgt_onnx_type_name((*t)->onnx_type));
    return WGT_OK;
}

wgt_cpu_tensor ox_view(const wgt_onnx_tensor *t) { return wgt_onnx_tensor_view(t); }

wgt_status ox_temp(wgt_onnx_tensor *t, wgt_dtype dtype, int ndim, const int64_t *dims)
{
    memset(t, 0, sizeof *t);
    if (ndim < 0 || ndim > WGT_MAX_DIMS)
        return wgt_error(WGT_ERR_UNSUPPORTED, "onnx: a result with %d dims (at most %d)", ndim, WGT_MAX_DIMS);
    t->dtype = dtype;
    t->ndim = ndim;
    t->numel = 1;
    for (int d = 0; d < ndim; d++) {
        if (dims[d] < 0 || (dims[d] && t->numel > ((int64_t)1 << 28) / dims[d]))
            return wgt_error(WGT_ERR_LIMIT, "onnx: result dimension %lld is negative or makes more "
                             "than 2^28 elements", (long long)dims[d]);
        t->dims[d] = dims[d], t->numel *= dims[d];
    }
    t->onnx_type = 0;
    t->data = wgt_malloc_array((size_t)(t->numel ? t->numel : 1), wgt_dtype_size(dtype));
    if (!t->data) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "onnx: no memory for a result");
    memset(t->data, 0, (size_t)(t->numel ? t->numel : 1) * wgt_dtype_size(dtype));
    return WGT_OK;
}

wgt_status ox_alloc(ox *c, int k, wgt_dtype dtype, int ndim, const int64_t *dims, wgt_cpu_tensor *view)
{
    if (k >= c->n_out)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: output %d not expected", c->node->op_type, k);
    wgt_onnx_tensor_clear(&c->out[k]);
    OX_TRY(ox_temp(&c->out[k], dtype, ndim, dims));
    if (view) *view = ox_view(&c->out[k]);
    return WGT_OK;
}

const wgt_onnx_attr *ox_attr(const ox *c, const char *name) { return wgt_onnx_node_attr(c->node, name); }

int64_t ox_attr_i(const ox *c, const char *name, int64_t dflt)
{
    const wgt_onnx_attr *a = ox_attr(c, name);
    return a && a->type == WGT_ONNX_ATTR_INT ? a->i : dflt;
}

double ox_attr_f(const ox *c, const char *name, double dflt)
{
    const wgt_onnx_attr *a = ox_attr(c, name);
    return a && a->type == WGT_ONNX_ATTR_FLOAT ? a->f : a && a->type == WGT_ONNX_ATTR_INT ? (double)a->i : dflt;
}

const char *ox_attr_s(const ox *c, const char *name, const char *dflt)
{
    const wgt_onnx_attr *a = ox_attr(c, name);
    return a && a->type == WGT_ONNX_ATTR_STRING ? a->s : dflt;
}

wgt_status ox_axis(const ox *c, int64_t axis, int n, int *res)
{
    if (axis < -n || axis >= n || (n == 0 && axis != 0))
        return wgt_error(WGT_ERR_SHAPE, "%s: axis %lld out of range for %d dims", c->node->op_type,
                         (long long)axis, n);
    *res = (int)(axis < 0 ? axis + n : axis);
    return WGT_OK;
}

wgt_status ox_ints(const ox *c, const wgt_onnx_tensor *t, int64_t *vals, int cap, int *n)
{
    if (!t->data) return ox_unsupported(c, "an integer list input of an unsupported type");
    if (t->numel > cap)
        return wgt_error(WGT_ERR_UNSUPPORTED, "%s: %lld values where at most %d are supported",
                         c->node->op_type, (long long)t->numel, cap);
    wgt_cpu_tensor v = ox_view(t);
    for (int64_t i = 0; i < t->numel; i++) vals[i] = wgt_cpu_load_i(&v, i);
    *n = (int)t->numel;
    return WGT_OK;
}

double ox_scalar(const wgt_onnx_tensor *t)
{
    wgt_cpu_tensor v = ox_view(t);
    return t->numel ? wgt_cpu_load_f(&v, 0) : 0;
}

wgt_status ox_broadcast(const ox *c, const wgt_onnx_tensor *const *ts, int n, int *ndim, int64_t *dims)
{
    int nd = 0;
    for (int i = 0; i < n; i++) nd = ts[i]->ndim > nd ? ts[i]->ndim : nd;
    for (int d = 0; d < nd; d++) dims[d] = 1;
    for (int i = 0; i < n; i++)
        for (int d = 0; d < ts[i]->ndim; d++) {
            int64_t s = ts[i]->dims[d], *t = &dims[nd - ts[i]->ndim + d];
            if (s == *t || s == 1) continue;
            if (*t != 1)
                return wgt_error(WGT_ERR_SHAPE, "%s: input shapes do not broadcast", c->node->op_type);
            *t = s;
        }
    *ndim = nd;
    return WGT_OK;
}

/* ---- elementwise ---- */

/* The unary, binary and reduce ops an ONNX op type maps to come from the op table's onnx column
 * (src/ops/<family>.def): the row whose forward is `forward` and whose column lists op_type. */
static const hx_op *table_row(const char *forward, const char *op_type)
{
    int n;
    const hx_op *ops = hx_ops(&n);
    size_t len = strlen(op_type);
    for (int i = 0; i < n; i++) {
        if (strcmp(ops[i].forward, forward)) continue;
        for (const char *p = ops[i].onnx; (p = strstr(p, op_type)); p += len)
            if ((p == ops[i].onnx || p[-1] == ' ') && (p[len] == 0 || p[len] == ' ')) return &ops[i];
    }
    return NULL;
}

/* Differences from ONNX kept on purpose (the reference follows PyTorch): Sign(NaN) is 0, not NaN.
 * Identity is clamp to (-inf, inf), an exact copy. */
typedef struct unary_map {
    wgt_unary_op op;
    int to_bool; /* the output is bool (Not, IsNaN); else it has the input's type */
} unary_map;

static int find_unary(const char *name, unary_map *m)
{
    const hx_op *row = table_row("wgt_unary", name);
    if (!row) return 0;
    m->op = (wgt_unary_op)row->code;
    m->to_bool = wgt_unary_result_dtype(m->op, WGT_F32) == WGT_BOOL;
    return 1;
}

static wgt_status ox_unary(ox *c)
{
    unary_map um;
    if (!find_unary(c->node->op_type, &um)) return ox_unsupported(c, "not a unary op");
    const unary_map *m = &um;
    const wgt_onnx_tensor *x;
    OX_TRY(ox_need(c, 0, &x));
    wgt_unary_params p = wgt_unary_params_default(m->op);
    switch (m->op) {
    case WGT_UNARY_ELU: p.alpha = ox_attr_f(c, "alpha", 1.0); break;
    case WGT_UNARY_LEAKY_RELU: p.alpha = ox_attr_f(c, "alpha", 0.01); break;
    case WGT_UNARY_HARDSIGMOID: p.alpha = ox_attr_f(c, "alpha", 0.2), p.beta = ox_attr_f(c, "beta", 0.5); break;
    case WGT_UNARY_SOFTPLUS: p.hi = INFINITY; break; /* ONNX has no threshold (PyTorch's is 20) */
    default: break;
    }
    wgt_cpu_tensor xv = ox_view(x), ov;
    OX_TRY(ox_alloc(c, 0, m->to_bool ? WGT_BOOL : x->dtype, x->ndim, x->dims, &ov));
    return OX_CALL(c, wgt_cpu_unary, m->op, &p, &xv, &ov);
}

static wgt_status ox_clip(ox *c)
{
    const wgt_onnx_tensor *x, *lo = ox_in(c, 1), *hi = ox_in(c, 2);
    OX_TRY(ox_need(c, 0, &x));
    wgt_unary_params p = wgt_unary_params_default(WGT_UNARY_CLAMP);
    if (c->opset < 11) {
        p.lo = ox_attr_f(c, "min", -INFINITY);
        p.hi = ox_attr_f(c, "max", INFINITY);
    } else {
        if (lo) {
            OX_TRY(ox_need(c, 1, &lo));
            p.lo = ox_scalar(lo);
        }
        if (hi) {
            OX_TRY(ox_need(c, 2, &hi));
            p.hi = ox_scalar(hi);
        }
    }
    wgt_cpu_tensor xv = ox_view(x), ov;
    OX_TRY(ox_alloc(c, 0, x->dtype, x->ndim, x->dims, &ov));
    return OX_CALL(c, wgt_cpu_unary, WGT_UNARY_CLAMP, &p, &xv, &ov);
}

static wgt_status ox_isinf(ox *c)
{
    const wgt_onnx_tensor *x;
    OX_TRY(ox_need(c, 0, &x));
    int neg = (int)ox_attr_i(c, "detect_negative", 1), pos = (int)ox_attr_i(c, "detect_positive", 1);
    wgt_cpu_tensor xv = ox_view(x), ov;
    OX_TRY(ox_alloc(c, 0, WGT_BOOL, x->ndim, x->dims, &ov));
    OX_TRY(OX_CALL(c, wgt_cpu_unary, WGT_UNARY_ISINF, NULL, &xv, &ov));
    if (neg && pos) return WGT_OK;
    /* Keep one sign: isinf(x) and (x > 0) / (x < 0), through the binary ops. */
    wgt_onnx_tensor side, zero;
    int64_t none = 0;
    OX_TRY(ox_temp(&side, WGT_BOOL, x->ndim, x->dims));
    OX_TRY(ox_temp(&zero, WGT_F32, 0, &none));
    wgt_cpu_tensor sv = ox_view(&side), zv = ox_view(&zero);
    wgt_status st = OX_CALL(c, wgt_cpu_binary, pos ? WGT_BINARY_GT : WGT_BINARY_LT, &xv, &zv, &sv);
    if (!st) {
        if (!neg && !pos) st = OX_CALL(c, wgt_cpu_full, 0, &ov);
        else st = OX_CALL(c, wgt_cpu_binary, WGT_BINARY_LOGICAL_AND, &ov, &sv, &ov);
    }
    wgt_onnx_tensor_clear(&side);
    wgt_onnx_tensor_clear(&zero);
    return st;
}

typedef struct binary_map {
    const char *name; /* the ONNX op type */
    wgt_binary_op op; /* Mod and BitShift: the first of their rows; attributes pick the op */
    int to_bool;      /* comparisons and logical ops: a bool output; else A's type */
} binary_map;

static int find_binary(const char *name, binary_map *m)
{
    const hx_op *row = table_row("wgt_binary", name);
    if (!row) return 0;
    m->name = name;
    m->op = (wgt_binary_op)row->code;
    m->to_bool = wgt_binary_result_dtype(m->op, WGT_F32, WGT_F32) == WGT_BOOL;
    return 1;
}

static wgt_status ox_binary(ox *c)
{
    binary_map bm;
    if (!find_binary(c->node->op_type, &bm)) return ox_unsupported(c, "not a binary op");
    const binary_map *m = &bm;
    const wgt_onnx_tensor *ab[2];
    OX_TRY(ox_need(c, 0, &ab[0]));
    OX_TRY(ox_need(c, 1, &ab[1]));
    wgt_binary_op op = m->op;
    if (!strcmp(m->name, "Mod")) {
        /* fmod=0: integer remainder with the divisor's sign (Python); fmod=1: C's fmod. */
        int f = (int)ox_attr_i(c, "fmod", 0);
        if (!f && wgt_cpu_is_float(ab[0]->dtype)) return ox_unsupported(c, "fmod=0 on floats is invalid ONNX");
        op = f ? WGT_BINARY_FMOD : WGT_BINARY_REMAINDER;
    }
    if (!strcmp(m->name, "BitShift")) {
        const char *dir = ox_attr_s(c, "direction", "");
        if (!strcmp(dir, "RIGHT")) op = WGT_BINARY_SHIFT_RIGHT;
        else if (strcmp(dir, "LEFT")) return ox_unsupported(c, "direction must be LEFT or RIGHT");
    }
    int nd;
    int64_t dims[WGT_MAX_DIMS];
    OX_TRY(ox_broadcast(c, ab, 2, &nd, dims));
    wgt_cpu_tensor av = ox_view(ab[0]), bv = ox_view(ab[1]), ov;
    /* The output has A's type (ONNX binary ops take equal types; Pow's exponent may differ). */
    OX_TRY(ox_alloc(c, 0, m->to_bool ? WGT_BOOL : ab[0]->dtype, nd, dims, &ov));
    return OX_CALL(c, wgt_cpu_binary, op, &av, &bv, &ov);
}

/* Sum, Mean, Max, Min over any number of inputs, folded left to right. */
static wgt_status ox_variadic(ox *c)
{
    const char *name = c->node->op_type;
    const wgt_onnx_tensor *ts[16];
    int n = c->n_in;
    if (n < 1 || n > 16) return ox_unsupported(c, "1 to 16 inputs supported");
    for (int i = 0; i < n; i++) OX_TRY(ox_need(c, i, &ts[i]));
    int nd;
    int64_t dims[WGT_MAX_DIMS];
    OX_TRY(ox_broadcast(c, ts, n, &nd, dims));
    wgt_binary_op op = !strcmp(name, "Max") ? WGT_BINARY_MAXIMUM : !strcmp(name, "Min") ? WGT_BINARY_MINIMUM
                                                                                     : WGT_BINARY_ADD;
    /* Accumulate in an f32 (or the integer type) scratch tensor of the result's shape. */
    wgt_cpu_tensor ov, x0 = ox_view(ts[0]);
    OX_TRY(ox_alloc(c, 0, ts[0]->dtype, nd, dims, &ov));
    OX_TRY(OX_CALL(c, wgt_cpu_cast, &x0, &ov));
    for (int i = 1; i < n; i++) {
        wgt_cpu_tensor xi = ox_view(ts[i]);
        OX_TRY(OX_CALL(c, wgt_cpu_binary, op, &ov, &xi, &ov)); /* in place: each element reads then writes itself */
    }
    if (!strcmp(name, "Mean")) {
        float k = (float)n;
        int64_t none = 0;
        wgt_cpu_tensor kv = wgt_cpu_tensor_make(&k, WGT_F32, 0, &none);
        OX_TRY(OX_CALL(c, wgt_cpu_binary, WGT_BINARY_DIV, &ov, &kv, &ov));
    }
    return WGT_OK;
}

static wgt_status ox_where(ox *c)
{
    const wgt_onnx_tensor *ts[3];
    for (int i = 0; i < 3; i++) OX_TRY(ox_need(c, i, &ts[i]));
    int nd;
    int64_t dims[WGT_MAX_DIMS];
    OX_TRY(ox_broadcast(c, ts, 3, &nd, dims));
    wgt_cpu_tensor cv = ox_view(ts[0]), av = ox_view(ts[1]), bv = ox_view(ts[2]), ov;
    OX_TRY(ox_alloc(c, 0, ts[1]->dtype, nd, dims, &ov));
    return OX_CALL(c, wgt_cpu_where, &cv, &av, &bv, &ov);
}

static wgt_dtype onnx_to_dtype(int64_t t)
{
    switch (t) {
    case WGT_ONNX_FLOAT: return WGT_F32;
    case WGT_ONNX_UINT8: return WGT_U8;
    case WGT_ONNX_INT8: return WGT_I8;
    case WGT_ONNX_INT32: return WGT_I32;
    case WGT_ONNX_INT64: return WGT_I64;
    case WGT_ONNX_BOOL: return WGT_BOOL;
    case WGT_ONNX_FLOAT16: return WGT_F16;
    case WGT_ONNX_UINT32: return WGT_U32;
    case WGT_ONNX_BFLOAT16: return WGT_BF16;
    default: return WGT_DTYPE_COUNT;
    }
}

static wgt_status ox_cast(ox *c)
{
    const wgt_onnx_tensor *x, *like = NULL;
    OX_TRY(ox_need(c, 0, &x));
    wgt_dtype to;
    if (!strcmp(c->node->op_type, "CastLike")) {
        OX_TRY(ox_need(c, 1, &like));
        to = like->dtype;
    } else {
        int64_t t = ox_attr_i(c, "to", 0);
        to = onnx_to_dtype(t);
        if (to == WGT_DTYPE_COUNT) return ox_unsupported(c, "target type has no wgt dtype");
    }
    wgt_cpu_tensor xv = ox_view(x), ov;
    OX_TRY(ox_alloc(c, 0, to, x->ndim, x->dims, &ov));
    return OX_CALL(c, wgt_cpu_cast, &xv, &ov);
}

/* ---- reductions ---- */

/* The reduced-axes mask from the "axes" attribute or input; *noop when there is nothing to do. */
static wgt_status reduce_axes(ox *c, const wgt_onnx_tensor *x, int input, uint32_t *mask, int *noop)
{
    int64_t axes[WGT_MAX_DIMS];
    int n = 0;
    const wgt_onnx_attr *a = ox_attr(c, "axes");
    const wgt_onnx_tensor *t = ox_in(c, input);
    if (a && a->type == WGT_ONNX_ATTR_INTS) {
        if (a->n_ints > WGT_MAX_DIMS) return ox_unsupported(c, "too many axes");
        for (int i = 0; i < a->n_ints; i++) axes[i] = a->ints[i];
        n = a->n_ints;
    } else if (t) OX_TRY(ox_ints(c, t, axes, WGT_MAX_DIMS, &n));
    *mask = 0;
    *noop = 0;
    if (n == 0) {
        if (ox_attr_i(c, "noop_with_empty_axes", 0)) *noop = 1;
        else *mask = x->ndim ? (uint32_t)((1u << x->ndim) - 1) : 0;
        return WGT_OK;
    }
    for (int i = 0; i < n; i++) {
        int ax;
        OX_TRY(ox_axis(c, axes[i], x->ndim, &ax));
        *mask |= 1u << ax;
    }
    return WGT_OK;
}

static wgt_status ox_reduce(ox *c)
{
    /* the op table's reduce rows (ReduceSumSquare and ReduceLogSum: a sum of transformed values) */
    const char *name = c->node->op_type;
    const hx_op *row = table_row("wgt_reduce", name);
    wgt_reduce_op op = row ? (wgt_reduce_op)row->code : WGT_REDUCE_SUM;
    const wgt_onnx_tensor *x;
    OX_TRY(ox_need(c, 0, &x));
    uint32_t mask = 0;
    int noop, keep = (int)ox_attr_i(c, "keepdims", 1);
    OX_TRY(reduce_axes(c, x, 1, &mask, &noop));
    wgt_cpu_tensor xv = ox_view(x), ov;
    if (noop) {
        OX_TRY(ox_alloc(c, 0, x->dtype, x->ndim, x->dims, &ov));
        return OX_CALL(c, wgt_cpu_copy, &xv, &ov);
    }
    int nd = 0;
    int64_t dims[WGT_MAX_DIMS] = {0}, count = 1;
    for (int d = 0; d < x->ndim; d++) {
        if (mask >> d & 1) count *= x->dims[d];
        if (!(mask >> d & 1)) dims[nd++] = x->dims[d];
        else if (keep) dims[nd++] = 1;
    }
    OX_TRY(ox_alloc(c, 0, x->dtype, nd, dims, &ov));
    /* ONNX defines max/min of an empty set (-inf/+inf, or the type's limits); PyTorch raises. */
    if (count == 0 && (op == WGT_REDUCE_AMAX || op == WGT_REDUCE_AMIN)) {
        /* Stores saturate, so +-inf become the integer type's limits. */
        return OX_CALL(c, wgt_cpu_full, op == WGT_REDUCE_AMAX ? -INFINITY : INFINITY, &ov);
    }
    if (!strcmp(name, "ReduceSumSquare")) {
        wgt_onnx_tensor sq;
        OX_TRY(ox_temp(&sq, x->dtype, x->ndim, x->dims));
        wgt_cpu_tensor sv = ox_view(&sq);
        wgt_status st = OX_CALL(c, wgt_cpu_unary, WGT_UNARY_SQUARE, NULL, &xv, &sv);
        if (!st) st = OX_CALL(c, wgt_cpu_reduce, op, &sv, mask, keep, 0, &ov, NULL);
        wgt_onnx_tensor_clear(&sq);
        return st;
    }
    OX_TRY(OX_CALL(c, wgt_cpu_reduce, op, &xv, mask, keep, 0, &ov, NULL));
    if (!strcmp(name, "ReduceLogSum")) return OX_CALL(c, wgt_cpu_unary, WGT_UNARY_LOG, NULL, &ov, &ov);
    return WGT_OK;
}

static wgt_status ox_argmax(ox *c)
{
    const wgt_onnx_tensor *x;
    OX_TRY(ox_need(c, 0, &x));
    int ax, keep = (int)ox_attr_i(c, "keepdims", 1), last = (int)ox_attr_i(c, "select_last_index", 0);
    OX_TRY(ox_axis(c, ox_attr_i(c, "axis", 0), x->ndim, &ax));
    wgt_reduce_op op = !strcmp(c->node->op_type, "ArgMax") ? WGT_REDUCE_ARGMAX : WGT_REDUCE_ARGMIN;
    int nd = 0;
    int64_t dims[WGT_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++)
        if (d != ax) dims[nd++] = x->dims[d];
        else if (keep) dims[nd++] = 1;
    wgt_cpu_tensor xv = ox_view(x), ov;
    OX_TRY(ox_alloc(c, 0, WGT_I64, nd, dims, &ov));
    if (!last) return OX_CALL(c, wgt_cpu_reduce, op, &xv, 1u << ax, keep, 0, &ov, NULL);
    /* The last occurrence: the first one of the input reversed along axis, mirrored back. */
    if (x->dims[ax] == 0) return wgt_error(WGT_ERR_SHAPE, "%s: empty axis", c->node->op_type);
    /* Layouts have no negative strides: flip into a scratch tensor. */
    wgt_onnx_tensor flip;
    OX_TRY(ox_temp(&flip, x->dtype, x->ndim, x->dims));
    wgt_cpu_tensor fv = ox_view(&flip);
    wgt_status st = OX_CALL(c, wgt_cpu_flip, &xv, 1u << ax, &fv);
    if (!st) st = OX_CALL(c, wgt_cpu_reduce, op, &fv, 1u << ax, keep, 0, &ov, NULL);
    for (int64_t i = 0; !st && i < c->out[0].numel; i++)
        wgt_cpu_store_i(&ov, i, x->dims[ax] - 1 - wgt_cpu_load_i(&ov, i));
    wgt_onnx_tensor_clear(&flip);
    return st;
}

static wgt_status ox_softmax(ox *c)
{
    const wgt_onnx_tensor *x;
    OX_TRY(ox_need(c, 0, &x));
    int is_log = !strcmp(c->node->op_type, "LogSoftmax"), ax;
    wgt_cpu_tensor xv = ox_view(x), ov;
    OX_TRY(ox_alloc(c, 0, x->dtype, x->ndim, x->dims, &ov));
    if (c->opset >= 13) {
        OX_TRY(ox_axis(c, ox_attr_i(c, "axis", -1), x->ndim, &ax));
        return is_log ? OX_CALL(c, wgt_cpu_log_softmax, &xv, ax, &ov) : OX_CALL(c, wgt_cpu_softmax, &xv, ax, &ov);
    }
    /* Before opset 13 the input is coerced to 2-D [prod(dims < axis), prod(dims >= axis)] and
     * the softmax runs over the whole second dimension. */
    OX_TRY(ox_axis(c, ox_attr_i(c, "axis", 1), x->ndim, &ax));
    int64_t rows = 1, cols = 1;
    for (int d = 0; d < x->ndim; d++) *(d < ax ? &rows : &cols) *= x->dims[d];
    int64_t shape[2] = {rows, cols};
    wgt_cpu_tensor x2 = wgt_cpu_tensor_make(x->data, x->dtype, 2, shape);
    wgt_cpu_tensor o2 = wgt_cpu_tensor_make(ov.data, ov.l.dtype, 2, shape);
    return is_log ? OX_CALL(c, wgt_cpu_log_softmax, &x2, 1, &o2) : OX_CALL(c, wgt_cpu_softmax, &x2, 1, &o2);
}

static wgt_status ox_cumsum(ox *c)
{
    const wgt_onnx_tensor *x, *axis;
    OX_TRY(ox_need(c, 0, &x));
    OX_TRY(ox_need(c, 1, &axis));
    int ax;
    OX_TRY(ox_axis(c, (int64_t)ox_scalar(axis), x->ndim, &ax));
    wgt_cpu_tensor xv = ox_view(x), ov;
    OX_TRY(ox_alloc(c, 0, x->dtype, x->ndim, x->dims, &ov));
    return OX_CALL(c, wgt_cpu_scan, WGT_SCAN_CUMSUM, &xv, ax, (int)ox_attr_i(c, "exclusive", 0),
                        (int)ox_attr_i(c, "reverse", 0), &ov, NULL);
}

/* ---- dispatch ---- */

static const struct {
    const char *name;
    ox_fn fn;
} table[] = {
    {"Clip", ox_clip},           {"IsInf", ox_isinf},       {"Sum", ox_variadic},
    {"Mean", ox_variadic},       {"Max", ox_variadic},      {"Min", ox_variadic},
    {"Where", ox_where},         {"Cast", ox_cast},         {"CastLike", ox_cast},
    {"ReduceSum", ox_reduce},    {"ReduceMean", ox_reduce}, {"ReduceProd", ox_reduce},
    {"ReduceMax", ox_reduce},    {"ReduceMin", ox_reduce},  {"ReduceL1", ox_reduce},
    {"ReduceL2", ox_reduce},     {"ReduceLogSumExp", ox_reduce}, {"ReduceSumSquare", ox_reduce},
    {"ReduceLogSum", ox_reduce}, {"ArgMax", ox_argmax},     {"ArgMin", ox_argmax},
    {"Softmax", ox_softmax},     {"LogSoftmax", ox_softmax}, {"CumSum", ox_cumsum},
    {"MatMul", ox_matmul},       {"Gemm", ox_gemm},         {"Transpose", ox_transpose},
    {"Flatten", ox_reshape_like}, {"Reshape", ox_reshape_like}, {"Squeeze", ox_reshape_like},
    {"Unsqueeze", ox_reshape_like}, {"Concat", ox_concat},  {"Tile", ox_tile},
    {"Expand", ox_expand},       {"Pad", ox_pad},           {"Trilu", ox_trilu},
    {"Gather", ox_gather},       {"GatherElements", ox_gather_elements},
    {"ScatterElements", ox_scatter_elements}, {"Scatter", ox_scatter_elements},
    {"OneHot", ox_onehot},       {"Range", ox_range},       {"NonZero", ox_nonzero},
    {"LayerNormalization", ox_layer_norm}, {"BatchNormalization", ox_batch_norm},
    {"InstanceNormalization", ox_instance_norm}, {"ConstantOfShape", ox_constant_of_shape},
    {"Slice", ox_slice},         {"Split", ox_split},       {"DepthToSpace", ox_depth_space},
    {"SpaceToDepth", ox_depth_space}, {"Shape", ox_shape},  {"Size", ox_shape},
    {"Constant", ox_constant},   {"Dropout", ox_dropout},   {"Hardmax", ox_hardmax},
    {"GlobalAveragePool", ox_global_pool}, {"GlobalMaxPool", ox_global_pool},
    {"ScatterND", ox_scatter_nd},
    {"NegativeLogLikelihoodLoss", ox_nll_loss}, {"SoftmaxCrossEntropyLoss", ox_nll_loss},
    {"EyeLike", ox_eye_like},
    {"PRelu", ox_composed_activation}, {"Selu", ox_composed_activation}, {"Celu", ox_composed_activation},
    {"ThresholdedRelu", ox_composed_activation}, {"Softsign", ox_composed_activation},
    {"Compress", ox_compress},
    {"Conv", ox_conv},           {"ConvTranspose", ox_conv},  {"ConvInteger", ox_conv},
    {"QLinearConv", ox_conv},
    {"MaxPool", ox_pool},        {"AveragePool", ox_pool},  {"Resize", ox_resize},
    {"Upsample", ox_resize},     {"GridSample", ox_grid_sample},
    {"TopK", ox_topk},           {"Unique", ox_unique},
};

/* The handlers above first (Clip, IsInf, Sum, Mean, Max, Min have their own), then the op table's
 * unary and binary rows. */
static ox_fn find_fn(const char *op)
{
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (!strcmp(table[i].name, op)) return table[i].fn;
    unary_map um;
    binary_map bm;
    if (find_unary(op, &um)) return ox_unary;
    if (find_binary(op, &bm)) return ox_binary;
    return NULL;
}

int wgt_onnx_op_known(const char *op_type) { return find_fn(op_type) != NULL; }

/* The reference runs itself. */
static wgt_onnx_fn cpu_fn_for(wgt_onnx_fn reference) { return reference; }

const wgt_onnx_backend wgt_onnx_cpu_backend = {"cpu", cpu_fn_for};

wgt_status wgt_onnx_run_node(const wgt_onnx_backend *backend, const wgt_onnx_node *node, int64_t opset,
                             const wgt_onnx_tensor *const *inputs, int n_inputs,
                             wgt_onnx_tensor *outputs, int n_outputs)
{
    if (node->domain && node->domain[0] && strcmp(node->domain, "ai.onnx"))
        return wgt_error(WGT_ERR_UNSUPPORTED, "%s: domain '%s' is not the default one", node->op_type,
                         node->domain);
    ox_fn fn = find_fn(node->op_type);
    if (!fn) return wgt_error(WGT_ERR_UNSUPPORTED, "%s: no reference op", node->op_type);
    ox c = {backend ? backend : &wgt_onnx_cpu_backend, node, opset, inputs, n_inputs, outputs, n_outputs};
    for (int i = 0; i < n_outputs; i++) memset(&outputs[i], 0, sizeof outputs[i]);
    wgt_status st = fn(&c);
    if (st)
        for (int i = 0; i < n_outputs; i++) wgt_onnx_tensor_clear(&outputs[i]);
    return st;
}
