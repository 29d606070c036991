/* Backward formulas of matrix products (src/ops/matmul.c): for C = A B, dA = dC B^T and
 * dB = A^T dC, summed over broadcast batch dims. */
#include "autograd/autograd.h"

static wgt_tensor *mT(ag_call *c, const wgt_tensor *t) { return ag_transpose(c, t, -1, -2); }

wgt_status ag_grad_matmul(ag_call *c)
{
    /* torch.matmul's 1-D operands: a [K] is [1, K], b [K] is [K, 1], and g lacks those dims */
    const wgt_layout *al = &c->in_l[0], *bl = &c->in_l[1];
    wgt_layout a2, b2;
    int64_t s[WGT_MAX_DIMS];
    s[0] = 1, s[1] = al->shape[0];
    if (al->ndim == 1) wgt_layout_contiguous(&a2, al->dtype, 2, s);
    else a2 = *al;
    s[0] = bl->shape[0], s[1] = 1;
    if (bl->ndim == 1) wgt_layout_contiguous(&b2, bl->dtype, 2, s);
    else b2 = *bl;
    wgt_tensor *g = (wgt_tensor *)c->g;
    if (al->ndim == 1) g = ag_unsqueeze(c, g, g ? g->l.ndim - (bl->ndim == 1 ? 0 : 1) : 0);
    if (bl->ndim == 1) g = ag_unsqueeze(c, g, g ? g->l.ndim : 0);
    if (c->need[0]) {
        wgt_tensor *b = ag_reshape_as(c, ag_f32(c, c->in[1]), &b2);
        ag_set(c, 0, ag_reshape_as(c, ag_sum_to(c, ag_matmul(c, g, mT(c, b)), &a2), al));
    }
    if (c->need[1]) {
        wgt_tensor *a = ag_reshape_as(c, ag_f32(c, c->in[0]), &a2);
        ag_set(c, 1, ag_reshape_as(c, ag_sum_to(c, ag_matmul(c, mT(c, a), g), &b2), bl));
    }
    return c->st;
}

wgt_status ag_grad_linear(ag_call *c)
{
    /* out [..., O] = x [..., I] w [O, I]^T + bias */
    int64_t O = c->in_l[1].shape[0], I = c->in_l[1].shape[1];
    if (c->need[0]) ag_set(c, 0, ag_matmul(c, c->g, ag_f32(c, c->in[1])));
    if (c->need[1]) {
        int64_t gs[2] = {-1, O}, xs[2] = {-1, I};
        ag_set(c, 1, ag_matmul(c, mT(c, ag_reshape(c, c->g, 2, gs)), ag_reshape(c, ag_f32(c, c->in[0]), 2, xs)));
    }
    if (c->n_in > 2 && c->need[2]) ag_set(c, 2, ag_sum_to(c, c->g, &c->in_l[2]));
    return c->st;
}

wgt_status ag_grad_addmm(ag_call *c)
{
    /* beta self + alpha m1 m2 (and baddbmm's batched form) */
    const double *ba = c->params;
    double beta = ba[0], alpha = ba[1];
    if (c->need[0]) ag_set(c, 0, ag_sum_to(c, ag_muls(c, c->g, beta), &c->in_l[0]));
    if (c->need[1]) ag_set(c, 1, ag_muls(c, ag_matmul(c, c->g, mT(c, ag_f32(c, c->in[2]))), alpha));
    if (c->need[2]) ag_set(c, 2, ag_muls(c, ag_matmul(c, mT(c, ag_f32(c, c->in[1])), c->g), alpha));
    return c->st;
}
