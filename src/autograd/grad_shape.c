/* Backward formulas of views and shape ops (src/tensor views, src/ops/shape.c, casts): each moves
 * the gradient back to where the input's elements were; nothing here does arithmetic except the
 * sums of expand. */
#include "autograd/autograd.h"

wgt_status ag_grad_cast(ag_call *c)
{
    ag_set(c, 0, (wgt_tensor *)c->g); /* the engine stores every gradient as f32 */
    return c->st;
}

wgt_status ag_grad_reshape(ag_call *c)
{
    ag_set(c, 0, ag_reshape_as(c, c->g, &c->in_l[0]));
    return c->st;
}

wgt_status ag_grad_transpose(ag_call *c)
{
    const int *d = c->params;
    ag_set(c, 0, ag_transpose(c, c->g, d[0], d[1]));
    return c->st;
}

wgt_status ag_grad_permute(ag_call *c)
{
    const int *dims = c->params;
    int n = c->in_l[0].ndim, inv[WGT_MAX_DIMS];
    for (int d = 0; d < n; d++) inv[dims[d] < 0 ? dims[d] + n : dims[d]] = d;
    wgt_tensor *r = NULL;
    ag_set(c, 0, ag_keep(c, r, wgt_tensor_permute(c->g, inv, &r)));
    return c->st;
}

wgt_status ag_grad_narrow(ag_call *c)
{
    /* zeros around the slice: pad before and after along dim */
    const op_grad_narrow *p = c->params;
    const wgt_layout *l = &c->in_l[0];
    int64_t pads[2 * WGT_MAX_DIMS] = {0};
    pads[p->dim] = p->start;
    pads[l->ndim + p->dim] = l->shape[p->dim] - p->start - c->g->l.shape[p->dim];
    wgt_tensor *r = NULL;
    ag_set(c, 0, ag_keep(c, r, wgt_pad(c->g, WGT_PAD_CONSTANT, pads, 0, &r)));
    return c->st;
}

wgt_status ag_grad_expand(ag_call *c)
{
    ag_set(c, 0, ag_sum_to(c, c->g, &c->in_l[0]));
    return c->st;
}

wgt_status ag_grad_cat(ag_call *c)
{
    int dim = *(const int *)c->params;
    int64_t at = 0;
    for (int i = 0; i < c->n_in; i++) {
        int64_t len = c->in_l[i].shape[dim];
        if (c->need[i]) ag_set(c, i, ag_narrow(c, c->g, dim, at, len));
        at += len;
    }
    return c->st;
}
