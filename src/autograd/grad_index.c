/* Backward formulas of indexing (src/ops/index.c, embedding in src/ops/rope.c): the gradient goes
 * back to the positions that were read, summed where a position was read more than once. */
#include "autograd/autograd.h"
#include "core/error.h"

static wgt_status index_not_differentiable(ag_call *c, const char *op)
{
    return wgt_ctx_error(c->ctx, WGT_ERR_UNSUPPORTED, "wgt_backward: %s's index has no gradient", op);
}

/* embedding: rows of weight [V, D] at ids; dW[v] = sum of g's rows whose id is v.
 * While the one-hot matrix [V, N] fits one storage binding the sum is the product
 * one_hot(ids)^T @ g: a matmul adds in a fixed order, so a training step gives the same bits on
 * every run, which resuming from a checkpoint relies on (index_add adds floats with atomics in
 * whatever order they land). The price: N x V x 4 bytes and 2 N V D flops (about 1% of a step of
 * the default model's shape), and an infinite gradient spreads NaN over its column (0 x inf)
 * instead of staying in its row. Larger products take index_add. */
wgt_status ag_grad_embedding(ag_call *c)
{
    if (c->need[1]) return index_not_differentiable(c, "embedding");
    int64_t V = c->in_l[0].shape[0], D = c->in_l[0].shape[1], ks[1] = {-1}, gs[2] = {-1, D};
    wgt_tensor *ids = ag_reshape(c, c->in[1], 1, ks), *g = ag_reshape(c, c->g, 2, gs), *r = NULL;
    if (!ids || !g) return c->st;
    int64_t N = wgt_tensor_numel(ids);
    wgt_adapter_info info;
    uint64_t limit = wgt_context_adapter_info(c->ctx, &info) ? 0 : info.limits.max_storage_buffer_binding_size;
    if (N > 0 && (uint64_t)N * (uint64_t)V * 4u <= limit) {
        wgt_tensor *oh = ag_keep(c, r, wgt_one_hot(ids, V, 0, 0.0, 1.0, WGT_F32, &r)); /* [V, N] */
        if (oh) ag_set(c, 0, ag_matmul(c, oh, g));
        return c->st;
    }
    wgt_tensor *z = ag_zeros(c, 2, c->in_l[0].shape);
    if (z) ag_set(c, 0, ag_keep(c, r, wgt_index_add(z, 0, ids, g, 1.0, &r)));
    return c->st;
}

wgt_status ag_grad_index_select(ag_call *c)
{
    if (c->need[1]) return index_not_differentiable(c, "index_select");
    int dim = *(const int *)c->params;
    wgt_tensor *z = ag_zeros(c, c->in_l[0].ndim, c->in_l[0].shape), *r = NULL;
    if (z) ag_set(c, 0, ag_keep(c, r, wgt_index_add(z, dim, c->in[1], c->g, 1.0, &r)));
    return c->st;
}

wgt_status ag_grad_gather(ag_call *c)
{
    if (c->need[1]) return index_not_differentiable(c, "gather");
    int dim = *(const int *)c->params;
    wgt_tensor *z = ag_zeros(c, c->in_l[0].ndim, c->in_l[0].shape), *r = NULL;
    if (z) ag_set(c, 0, ag_keep(c, r, wgt_scatter_add(z, dim, c->in[1], c->g, &r)));
    return c->st;
}

/* masked_fill: filled positions took a constant */
wgt_status ag_grad_masked_fill(ag_call *c)
{
    if (c->need[1]) return index_not_differentiable(c, "masked_fill's mask");
    ag_set(c, 0, ag_sum_to(c, ag_where(c, c->in[1], ag_scalar(c, 0), c->g), &c->in_l[0]));
    return c->st;
}

/* index's shape, as the leading corner of a tensor of shape l (scatter's src may be larger than
 * its index: the elements past it are never read, their gradient is zero). */
static wgt_tensor *pad_to(ag_call *c, wgt_tensor *t, const wgt_layout *l)
{
    if (!t) return NULL;
    int64_t pads[2 * WGT_MAX_DIMS] = {0};
    int any = 0;
    for (int d = 0; d < l->ndim; d++) {
        pads[l->ndim + d] = l->shape[d] - t->l.shape[d];
        any |= pads[l->ndim + d] != 0;
    }
    if (!any) return t;
    wgt_tensor *r = NULL;
    wgt_status st = c->st ? c->st : wgt_pad(t, WGT_PAD_CONSTANT, pads, 0.0, &r);
    return ag_keep(c, r, st);
}

/* scatter (set) and scatter_add: out = self with out[.. index[i] ..] (=, +=) src[i].
 * add: self's gradient is g; src[i]'s is g at the position it went to (gather).
 * set: self's gradient is g where nothing was written (the written positions are zeroed by a
 * scatter of zeros), src's is the gather, as PyTorch's (defined when the index has no duplicates:
 * with duplicates every writer gets the gradient of the one position). */
wgt_status ag_grad_scatter(ag_call *c)
{
    const op_grad_scatter *p = c->params;
    if (c->need[1]) return index_not_differentiable(c, "scatter");
    if (p->mode != WGT_SCATTER_SET && p->mode != WGT_SCATTER_ADD)
        return wgt_ctx_error(c->ctx, WGT_ERR_UNSUPPORTED,
                             "wgt_backward: scatter with reduction %s has no gradient rule yet (set and add do): "
                             "detach its inputs",
                             wgt_scatter_mode_name(p->mode));
    const wgt_tensor *index = c->in[1];
    wgt_tensor *r = NULL;
    if (c->need[0]) {
        if (p->mode == WGT_SCATTER_ADD) ag_set(c, 0, (wgt_tensor *)c->g);
        else {
            wgt_tensor *z = ag_zeros(c, index->l.ndim, index->l.shape);
            if (z) ag_set(c, 0, ag_keep(c, r, wgt_scatter(c->g, p->dim, index, z, WGT_SCATTER_SET, &r)));
        }
    }
    if (c->need[2] && !c->st) {
        r = NULL;
        wgt_tensor *gs = ag_keep(c, r, wgt_gather(c->g, p->dim, index, &r));
        ag_set(c, 2, pad_to(c, gs, &c->in_l[2]));
    }
    return c->st;
}

/* index_add: out = self; out[.. index[k] ..] += alpha * source[.. k ..]: source's gradient is
 * alpha times the rows of g it went to (index_select). */
wgt_status ag_grad_index_add(ag_call *c)
{
    const op_grad_scatter *p = c->params;
    if (c->need[1]) return index_not_differentiable(c, "index_add");
    if (c->need[0]) ag_set(c, 0, (wgt_tensor *)c->g);
    if (c->need[2] && !c->st) {
        wgt_tensor *r = NULL;
        wgt_tensor *gs = ag_keep(c, r, wgt_index_select(c->g, p->dim, c->in[1], &r));
        ag_set(c, 2, p->alpha == 1 ? gs : ag_muls(c, gs, p->alpha));
    }
    return c->st;
}

/* dropout: out = x * mask / (1 - p), so the gradient is g * mask / (1 - p). */
wgt_status ag_grad_dropout(ag_call *c)
{
    double scale = *(const double *)c->params;
    if (c->need[1]) return index_not_differentiable(c, "dropout's mask");
    ag_set(c, 0, ag_where(c, c->in[1], ag_muls(c, c->g, scale), ag_scalar(c, 0)));
    return c->st;
}
