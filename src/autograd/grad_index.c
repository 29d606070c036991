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
