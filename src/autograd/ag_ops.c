/* The helpers backward formulas are written with: thin wrappers of public ops that keep each
 * result in the call's temporary list and turn the first failure into NULL results after it. */
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"
#include "core/error.h"

wgt_tensor *ag_keep_result(ag_call *c, wgt_tensor *t, wgt_status st)
{
    if (st || !t) {
        wgt_tensor_free(t);
        if (!c->st) c->st = st ? st : WGT_ERR_INTERNAL;
        return NULL;
    }
    if (c->n_tmp == c->cap_tmp) {
        int nc = c->cap_tmp ? 2 * c->cap_tmp : 16;
        wgt_tensor **v = realloc(c->tmp, sizeof *v * nc);
        if (!v) {
            wgt_tensor_free(t);
            c->st = wgt_ctx_error(c->ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_backward: out of host memory");
            return NULL;
        }
        c->tmp = v, c->cap_tmp = nc;
    }
    c->tmp[c->n_tmp++] = t;
    return t;
}

void ag_set(ag_call *c, int i, wgt_tensor *t)
{
    if (!t || c->st) return;
    wgt_tensor_free(c->gin[i]);
    c->gin[i] = wgt_tensor_ref(t);
    if (!c->gin[i]) c->st = wgt_ctx_error(c->ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_backward: out of host memory");
}

/* Every helper starts so: nothing runs after a failure. */
#define AG_GUARD(...)                                                                              \
    if (c->st || __VA_ARGS__) return NULL;                                                         \
    wgt_tensor *r = NULL;                                                                          \
    (void)r

wgt_tensor *ag_scalar(ag_call *c, double v)
{
    AG_GUARD(0);
    return ag_keep(c, r, wgt_full(c->ctx, WGT_F32, 0, NULL, v, &r));
}

wgt_tensor *ag_un(ag_call *c, wgt_unary_op op, const wgt_tensor *x)
{
    AG_GUARD(!x);
    return ag_keep(c, r, wgt_unary(op, x, &r));
}

wgt_tensor *ag_un_p(ag_call *c, wgt_unary_op op, const wgt_unary_params *p, const wgt_tensor *x)
{
    AG_GUARD(!x);
    return ag_keep(c, r, wgt_unary_ex(op, p, x, &r));
}

wgt_tensor *ag_bin(ag_call *c, wgt_binary_op op, const wgt_tensor *a, const wgt_tensor *b)
{
    AG_GUARD(!a || !b);
    return ag_keep(c, r, wgt_binary(op, a, b, &r));
}

wgt_tensor *ag_add(ag_call *c, const wgt_tensor *a, const wgt_tensor *b) { return ag_bin(c, WGT_BINARY_ADD, a, b); }
wgt_tensor *ag_sub(ag_call *c, const wgt_tensor *a, const wgt_tensor *b) { return ag_bin(c, WGT_BINARY_SUB, a, b); }
wgt_tensor *ag_mul(ag_call *c, const wgt_tensor *a, const wgt_tensor *b) { return ag_bin(c, WGT_BINARY_MUL, a, b); }
wgt_tensor *ag_div(ag_call *c, const wgt_tensor *a, const wgt_tensor *b) { return ag_bin(c, WGT_BINARY_DIV, a, b); }
wgt_tensor *ag_muls(ag_call *c, const wgt_tensor *a, double s) { return ag_mul(c, a, ag_scalar(c, s)); }
wgt_tensor *ag_adds(ag_call *c, const wgt_tensor *a, double s) { return ag_add(c, a, ag_scalar(c, s)); }

wgt_tensor *ag_where(ag_call *c, const wgt_tensor *cond, const wgt_tensor *a, const wgt_tensor *b)
{
    AG_GUARD(!cond || !a || !b);
    return ag_keep(c, r, wgt_where(cond, a, b, &r));
}

wgt_tensor *ag_cast(ag_call *c, const wgt_tensor *x, wgt_dtype dt)
{
    AG_GUARD(!x);
    return ag_keep(c, r, wgt_tensor_cast(x, dt, &r));
}

wgt_tensor *ag_f32(ag_call *c, const wgt_tensor *x)
{
    AG_GUARD(!x);
    if (x->l.dtype == WGT_F32) return ag_keep(c, wgt_tensor_ref(x), WGT_OK);
    return ag_cast(c, x, WGT_F32);
}

wgt_tensor *ag_reduce(ag_call *c, wgt_reduce_op op, const wgt_tensor *x, uint32_t dims, int keepdim)
{
    AG_GUARD(!x);
    return ag_keep(c, r, wgt_reduce(op, x, dims, keepdim, 0, &r));
}

wgt_tensor *ag_sum_keep(ag_call *c, const wgt_tensor *x, int dim)
{
    if (!x) return NULL;
    if (dim < 0) dim += x->l.ndim;
    return ag_reduce(c, WGT_REDUCE_SUM, x, 1u << dim, 1);
}

wgt_tensor *ag_reshape(ag_call *c, const wgt_tensor *x, int ndim, const int64_t *shape)
{
    AG_GUARD(!x);
    return ag_keep(c, r, wgt_tensor_reshape(x, ndim, shape, &r));
}

wgt_tensor *ag_reshape_as(ag_call *c, const wgt_tensor *x, const wgt_layout *l)
{
    return ag_reshape(c, x, l->ndim, l->shape);
}

wgt_tensor *ag_expand_as(ag_call *c, const wgt_tensor *x, const wgt_layout *l)
{
    AG_GUARD(!x);
    return ag_keep(c, r, wgt_tensor_expand(x, l->ndim, l->shape, &r));
}

wgt_tensor *ag_transpose(ag_call *c, const wgt_tensor *x, int d0, int d1)
{
    AG_GUARD(!x);
    return ag_keep(c, r, wgt_tensor_transpose(x, d0, d1, &r));
}

wgt_tensor *ag_unsqueeze(ag_call *c, const wgt_tensor *x, int dim)
{
    AG_GUARD(!x);
    return ag_keep(c, r, wgt_tensor_unsqueeze(x, dim, &r));
}

wgt_tensor *ag_narrow(ag_call *c, const wgt_tensor *x, int dim, int64_t start, int64_t len)
{
    AG_GUARD(!x);
    return ag_keep(c, r, wgt_tensor_narrow(x, dim, start, len, &r));
}

wgt_tensor *ag_matmul(ag_call *c, const wgt_tensor *a, const wgt_tensor *b)
{
    AG_GUARD(!a || !b);
    return ag_keep(c, r, wgt_matmul(a, b, &r));
}

wgt_tensor *ag_zeros(ag_call *c, int ndim, const int64_t *shape)
{
    AG_GUARD(0);
    return ag_keep(c, r, wgt_tensor_zeros(c->ctx, WGT_F32, ndim, shape, &r));
}

wgt_tensor *ag_sum_to(ag_call *c, const wgt_tensor *g, const wgt_layout *l)
{
    AG_GUARD(!g);
    int lead = g->l.ndim - l->ndim;
    if (lead < 0) {
        c->st = wgt_ctx_error(c->ctx, WGT_ERR_INTERNAL, "wgt_backward: a gradient has fewer dims than its input");
        return NULL;
    }
    /* leading dims the input lacked, and dims where it had size 1, were broadcast: sum them */
    uint32_t dims = 0;
    for (int d = 0; d < g->l.ndim; d++)
        if (d < lead || (l->shape[d - lead] == 1 && g->l.shape[d] != 1)) dims |= 1u << d;
    if (!dims) return (wgt_tensor *)g;
    return ag_reshape_as(c, ag_reduce(c, WGT_REDUCE_SUM, g, dims, 1), l);
}
