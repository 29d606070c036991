/* Backward formulas of group_norm and batch_norm (src/ops/norm.c). In a file of their own: the
 * softmax/layer/RMS norm family (grad_norm.c) is another engineer's, edited at the same time.
 *
 * Both normalise x [N, C, *] over sets of elements: group_norm over each (image, group of C / G
 * channels), batch_norm (training) over each channel across the batch and space. Viewed so that
 * the statistics run over fixed dims of a 3-D view (group: [N, G, C / G * S] over dim 2; batch:
 * [N, C, S] over dims 0 and 2), with xhat = (x - mean) rstd and gw = g * weight (per channel):
 *
 *   dx = rstd (gw - mean(gw) - xhat mean(gw xhat))      (the statistics' own dependence on x)
 *   dweight = sum over N and S of g xhat, dbias = sum over N and S of g
 *
 * batch_norm in evaluation mode normalises by the running statistics, constants: dx = gw rstd. */
#include "autograd/autograd.h"

wgt_status ag_grad_batch_norm(ag_call *c)
{
    const op_grad_batch_norm *p = c->params;
    const wgt_layout *xl = &c->in_l[0];
    int64_t N = xl->shape[0], C = xl->shape[1], S = 1;
    for (int d = 2; d < xl->ndim; d++) S *= xl->shape[d];
    int grp = p->groups > 0;
    int64_t s3[3] = {N, C, S}, cs[3] = {1, C, 1};
    int64_t v3[3] = {N, grp ? p->groups : C, grp ? C / p->groups * S : S};
    uint32_t stat = grp ? 4u : 5u, per_channel = 5u; /* dim masks: the statistics', and [N, C, S]'s dims 0, 2 */
    wgt_tensor *g3 = ag_reshape(c, c->g, 3, s3);
    wgt_tensor *gw = c->in[1] ? ag_mul(c, g3, ag_reshape(c, ag_f32(c, c->in[1]), 3, cs)) : g3;
    wgt_tensor *x = ag_reshape(c, ag_f32(c, c->in[0]), 3, v3), *xhat, *dx;
    if (!grp && !p->training) {
        wgt_tensor *rm = ag_reshape(c, ag_f32(c, c->in[3]), 3, cs);
        wgt_tensor *rstd = ag_un(c, WGT_UNARY_RSQRT, ag_adds(c, ag_reshape(c, ag_f32(c, c->in[4]), 3, cs), p->eps));
        xhat = ag_mul(c, ag_sub(c, x, rm), rstd);
        dx = ag_mul(c, gw, rstd);
    } else {
        wgt_tensor *xc = ag_sub(c, x, ag_reduce(c, WGT_REDUCE_MEAN, x, stat, 1));
        wgt_tensor *var = ag_reduce(c, WGT_REDUCE_MEAN, ag_mul(c, xc, xc), stat, 1); /* biased, as the forward */
        wgt_tensor *rstd = ag_un(c, WGT_UNARY_RSQRT, ag_adds(c, var, p->eps));
        xhat = ag_mul(c, xc, rstd);
        wgt_tensor *gv = ag_reshape(c, gw, 3, v3);
        wgt_tensor *proj = ag_mul(c, xhat, ag_reduce(c, WGT_REDUCE_MEAN, ag_mul(c, gv, xhat), stat, 1));
        dx = ag_mul(c, rstd, ag_sub(c, ag_sub(c, gv, ag_reduce(c, WGT_REDUCE_MEAN, gv, stat, 1)), proj));
    }
    /* running statistics that require grad (buffers in PyTorch): in training the output does not
     * read them (zero); in evaluation d/dmean = -sum(gw rstd), d/dvar = -sum(gw (x - mean)) rstd^3 / 2 */
    for (int i = 3; i < 5 && i < c->n_in; i++) {
        if (!c->need[i]) continue;
        if (grp || p->training) {
            ag_set(c, i, ag_zeros(c, c->in_l[i].ndim, c->in_l[i].shape));
            continue;
        }
        wgt_tensor *rm = ag_reshape(c, ag_f32(c, c->in[3]), 3, cs);
        wgt_tensor *rstd = ag_un(c, WGT_UNARY_RSQRT, ag_adds(c, ag_reshape(c, ag_f32(c, c->in[4]), 3, cs), p->eps));
        wgt_tensor *t = i == 3 ? ag_muls(c, ag_mul(c, gw, rstd), -1)
                               : ag_muls(c, ag_mul(c, ag_mul(c, gw, ag_sub(c, x, rm)),
                                                   ag_mul(c, rstd, ag_un(c, WGT_UNARY_SQUARE, rstd))), -0.5);
        ag_set(c, i, ag_reshape_as(c, ag_reduce(c, WGT_REDUCE_SUM, t, per_channel, 0), &c->in_l[i]));
    }
    if (c->need[0]) ag_set(c, 0, ag_reshape_as(c, dx, xl));
    if (c->n_in > 1 && c->need[1])
        ag_set(c, 1, ag_reduce(c, WGT_REDUCE_SUM, ag_mul(c, g3, ag_reshape(c, xhat, 3, s3)), per_channel, 0));
    if (c->n_in > 2 && c->need[2]) ag_set(c, 2, ag_reduce(c, WGT_REDUCE_SUM, g3, per_channel, 0));
    return c->st;
}
