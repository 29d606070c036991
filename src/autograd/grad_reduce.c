/* Backward formulas of reductions (src/ops/reduce.c): the output's gradient, given back its
 * reduced dims as size 1, broadcasts over the elements each output summarised, weighted by how
 * each element moved that output. */
#include "autograd/autograd.h"
#include "core/error.h"

uint32_t ag_saves_reduce(const void *params)
{
    wgt_reduce_op op = ((const op_grad_reduce *)params)->op;
    return op == WGT_REDUCE_SUM || op == WGT_REDUCE_MEAN ? 0 : 1 | AG_SAVE_OUT;
}

/* The reduced dims as a mask (0 in the params means all) and how many elements each output saw. */
static uint32_t reduced_dims(const wgt_layout *l, uint32_t dims, int64_t *count)
{
    if (!dims) dims = l->ndim ? (1u << l->ndim) - 1 : 0;
    *count = 1;
    for (int d = 0; d < l->ndim; d++)
        if (dims >> d & 1) *count *= l->shape[d];
    return dims;
}

/* t (an output-shaped tensor) with the reduced dims back as size 1, broadcast to the input. */
static wgt_tensor *back_to_input(ag_call *c, const wgt_tensor *t, uint32_t dims)
{
    const wgt_layout *l = &c->in_l[0];
    int64_t kept[WGT_MAX_DIMS];
    for (int d = 0; d < l->ndim; d++) kept[d] = dims >> d & 1 ? 1 : l->shape[d];
    return ag_expand_as(c, ag_reshape(c, t, l->ndim, kept), l);
}

wgt_status ag_grad_reduce(ag_call *c)
{
    const op_grad_reduce *p = c->params;
    int64_t n;
    uint32_t dims = reduced_dims(&c->in_l[0], p->dims, &n);
    wgt_tensor *g = back_to_input(c, c->g, dims), *x = NULL, *y = NULL, *d = NULL;
    if (p->op != WGT_REDUCE_SUM && p->op != WGT_REDUCE_MEAN) {
        x = ag_f32(c, c->in[0]);
        y = back_to_input(c, ag_f32(c, c->out), dims);
    }
    switch (p->op) {
    case WGT_REDUCE_SUM: d = ag_scalar(c, 1); break;
    case WGT_REDUCE_MEAN: d = ag_scalar(c, 1.0 / (double)n); break;
    case WGT_REDUCE_AMAX: case WGT_REDUCE_AMIN: case WGT_REDUCE_NORM_INF: {
        /* ties share the gradient evenly (PyTorch's amax/amin) */
        wgt_tensor *ax = p->op == WGT_REDUCE_NORM_INF ? ag_un(c, WGT_UNARY_ABS, x) : x;
        wgt_tensor *hit = ag_cast(c, ag_bin(c, WGT_BINARY_EQ, ax, y), WGT_F32);
        d = ag_div(c, hit, back_to_input(c, ag_reduce(c, WGT_REDUCE_SUM, hit, dims, 0), dims));
        if (p->op == WGT_REDUCE_NORM_INF) d = ag_mul(c, d, ag_un(c, WGT_UNARY_SIGN, x));
        break;
    }
    case WGT_REDUCE_VAR: case WGT_REDUCE_STD: { /* 2 (x - mean) / (n - correction); std: / (2 std) */
        wgt_tensor *centred = ag_sub(c, x, back_to_input(c, ag_reduce(c, WGT_REDUCE_MEAN, x, dims, 0), dims));
        double den = (double)n - p->correction;
        d = ag_muls(c, centred, (p->op == WGT_REDUCE_VAR ? 2.0 : 1.0) / (den > 0 ? den : 0));
        if (p->op == WGT_REDUCE_STD) d = ag_div(c, d, y);
        break;
    }
    case WGT_REDUCE_NORM1: d = ag_un(c, WGT_UNARY_SIGN, x); break;
    case WGT_REDUCE_NORM2: /* x / |x|, 0 for a zero norm (PyTorch's masked form) */
        d = ag_where(c, ag_bin(c, WGT_BINARY_EQ, y, ag_scalar(c, 0)), ag_scalar(c, 0), ag_div(c, x, y));
        break;
    case WGT_REDUCE_LOGSUMEXP: d = ag_un(c, WGT_UNARY_EXP, ag_sub(c, x, y)); break;
    case WGT_REDUCE_PROD: { /* the product of the others: y / x without zeros; with one zero, the
                              * product of the rest at it and 0 elsewhere; with two or more, 0 */
        wgt_tensor *zero = ag_scalar(c, 0), *one = ag_scalar(c, 1), *is0 = ag_bin(c, WGT_BINARY_EQ, x, zero);
        wgt_tensor *n0 = back_to_input(c, ag_reduce(c, WGT_REDUCE_SUM, ag_cast(c, is0, WGT_F32), dims, 0), dims);
        wgt_tensor *safe = ag_where(c, is0, one, x);
        wgt_tensor *rest = back_to_input(c, ag_reduce(c, WGT_REDUCE_PROD, safe, dims, 0), dims);
        d = ag_where(c, is0, ag_where(c, ag_bin(c, WGT_BINARY_EQ, n0, one), rest, zero), ag_div(c, y, safe));
        break;
    }
    default:
        return wgt_ctx_error(c->ctx, WGT_ERR_UNSUPPORTED,
                             "wgt_backward: %s has no gradient (its output is an index or boolean), yet the loss "
                             "depends on it through a tensor that requires grad: detach its result",
                             wgt_reduce_op_name(p->op));
    }
    ag_set(c, 0, ag_mul(c, g, d));
    return c->st;
}

/* max_dim / min_dim: the gradient goes to the index each output took its value from. */
wgt_status ag_grad_extreme_dim(ag_call *c)
{
    const op_grad_reduce *p = c->params;
    int dim = __builtin_ctz(p->dims | (1u << 31));
    const wgt_tensor *idx = c->in[1], *g = c->g;
    if (!p->keepdim && c->in_l[0].ndim) {
        idx = ag_unsqueeze(c, idx, dim);
        g = ag_unsqueeze(c, g, dim);
    }
    wgt_tensor *z = ag_zeros(c, c->in_l[0].ndim, c->in_l[0].shape), *r = NULL;
    if (!c->st && z && idx && g) ag_set(c, 0, ag_keep(c, r, wgt_scatter_add(z, dim, idx, g, &r)));
    return c->st;
}
