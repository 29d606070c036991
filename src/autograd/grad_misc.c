/* Backward formulas of the misc ops (src/ops/misc.c: diff, trace, diag, diag_embed, cdist) and of
 * bernoulli (src/ops/random.c). Each follows PyTorch's derivatives.yaml. */
#include <math.h>
#include <string.h>

#include "autograd/autograd.h"
#include "core/error.h"
#include "ops/ops.h"

static wgt_tensor *pad_const(ag_call *c, const wgt_tensor *x, int dim, int64_t before, int64_t after)
{
    if (c->st || !x) return NULL;
    int64_t pads[2 * WGT_MAX_DIMS] = {0};
    pads[dim] = before, pads[x->l.ndim + dim] = after;
    wgt_tensor *r = NULL;
    return ag_keep(c, r, wgt_pad(x, WGT_PAD_CONSTANT, pads, 0.0, &r));
}

/* diff: y[i] = z[i + 1] - z[i] of the joined z = (prepend, x, append), n times. One round back:
 * dz[j] = g[j - 1] - g[j] (g zero outside), so n rounds take g back to z's length, then each part
 * takes its range. A result that was empty (z no longer than n) gives a zero gradient. */
wgt_status ag_grad_diff(ag_call *c)
{
    const op_grad_diff *p = c->params;
    int dim = p->dim;
    int64_t len[3] = {0, 0, 0}, total = 0;
    for (int i = 0; i < 3; i++) {
        if (i == 0 || c->in_l[i].ndim) len[i] = c->in_l[i].shape[dim];
        total += len[i];
    }
    const wgt_tensor *g = c->g;
    if (c->out_l->shape[dim] == 0) {
        int64_t shape[WGT_MAX_DIMS];
        memcpy(shape, c->in_l[0].shape, sizeof shape);
        shape[dim] = total;
        g = ag_zeros(c, c->in_l[0].ndim, shape);
    } else {
        for (int r = 0; r < p->n && g; r++) g = ag_sub(c, pad_const(c, g, dim, 1, 0), pad_const(c, g, dim, 0, 1));
    }
    static const int joined[3] = {1, 0, 2}; /* inputs x, prepend, append: joined as prepend, x, append */
    int64_t at = 0;
    for (int j = 0; j < 3; j++) {
        int i = joined[j];
        if (c->need[i]) ag_set(c, i, ag_narrow(c, g, dim, at, len[i]));
        at += len[i];
    }
    return c->st;
}

/* trace: the gradient is g on the main diagonal. */
wgt_status ag_grad_trace(ag_call *c)
{
    wgt_tensor *eye = NULL;
    eye = ag_keep(c, eye, c->st ? c->st : wgt_eye(c->ctx, c->in_l[0].shape[0], c->in_l[0].shape[1], WGT_F32, &eye));
    ag_set(c, 0, ag_mul(c, eye, c->g));
    return c->st;
}

/* diag: of a vector (a matrix out), the gradient is g's diagonal `offset`; of a matrix (its
 * diagonal out), g placed on that diagonal of a square of side len + |offset|, then padded or
 * cropped to the matrix (what is cropped holds zeros: the diagonal fits the matrix). */
wgt_status ag_grad_diag(ag_call *c)
{
    const op_grad_diag *p = c->params;
    wgt_tensor *r = NULL;
    wgt_tensor *d = ag_keep(c, r, c->st ? c->st : wgt_diag(c->g, p->offset, &r));
    if (c->in_l[0].ndim == 1 || !d) return ag_set(c, 0, d), c->st;
    int64_t side = d->l.shape[0];
    int64_t pads[4] = {0, 0, c->in_l[0].shape[0] - side, c->in_l[0].shape[1] - side};
    r = NULL;
    ag_set(c, 0, ag_keep(c, r, c->st ? c->st : wgt_pad(d, WGT_PAD_CONSTANT, pads, 0.0, &r)));
    return c->st;
}

/* The diagonal `offset` of dims (d1, d2) of t as a view: t's other dims, then the diagonal
 * (torch.diagonal). */
static wgt_tensor *diagonal(ag_call *c, const wgt_tensor *t, int64_t offset, int d1, int d2)
{
    if (c->st || !t) return NULL;
    wgt_tensor *v = NULL, *r = NULL;
    v = ag_keep(c, v, op_diagonal_view(t, offset, d1, d2, &v));
    return v ? ag_keep(c, r, wgt_tensor_contiguous(v, &r)) : NULL;
}

/* diag_embed: x [..., n] went onto a diagonal of dims (dim1, dim2); its gradient is that diagonal
 * of g (torch: grad.diagonal(offset, dim1, dim2)). */
wgt_status ag_grad_diag_embed(ag_call *c)
{
    const op_grad_diag *p = c->params;
    ag_set(c, 0, diagonal(c, c->g, p->offset, p->dim1, p->dim2));
    return c->st;
}

/* cdist: d[b, i, j] = (sum_m |x1[b, i, m] - x2[b, j, m]|^p)^(1/p). With diff = x1_i - x2_j over
 * [B, P, R, M]: dd/dx1 = sign(diff) |diff|^(p-1) / d^(p-1) (0 where diff or d is 0, as PyTorch's
 * _cdist_backward), p = inf: sign(diff) where |diff| is the maximum (every tie), p = 0: 0. x1's
 * gradient sums over R, x2's is minus the sum over P, each summed back over broadcast batch dims.
 * The distance is recomputed in f32 (the saved output may be half). */
wgt_status ag_grad_cdist(ag_call *c)
{
    double p = *(const double *)c->params;
    if (p == 0) {
        for (int i = 0; i < 2; i++)
            if (c->need[i]) ag_set(c, i, ag_zeros(c, c->in_l[i].ndim, c->in_l[i].shape));
        return c->st;
    }
    wgt_tensor *a = ag_unsqueeze(c, ag_f32(c, c->in[0]), -2); /* [B.., P, 1, M] */
    wgt_tensor *b = ag_unsqueeze(c, ag_f32(c, c->in[1]), -3); /* [B.., 1, R, M] */
    wgt_tensor *diff = ag_sub(c, a, b), *ad = ag_un(c, WGT_UNARY_ABS, diff), *sg = ag_un(c, WGT_UNARY_SIGN, diff);
    wgt_tensor *zero = ag_scalar(c, 0), *t;
    uint32_t last = diff ? 1u << (diff->l.ndim - 1) : 0;
    if (isinf(p)) {
        wgt_tensor *dist = ag_reduce(c, WGT_REDUCE_AMAX, ad, last, 1);
        t = ag_where(c, ag_bin(c, WGT_BINARY_EQ, ad, dist), sg, zero);
    } else if (p == 1) {
        t = sg;
    } else {
        wgt_tensor *dist = p == 2 ? ag_un(c, WGT_UNARY_SQRT, ag_reduce(c, WGT_REDUCE_SUM, ag_mul(c, diff, diff), last, 1))
                                  : ag_bin(c, WGT_BINARY_POW,
                                           ag_reduce(c, WGT_REDUCE_SUM, ag_bin(c, WGT_BINARY_POW, ad, ag_scalar(c, p)),
                                                     last, 1),
                                           ag_scalar(c, 1 / p));
        wgt_tensor *v = p == 2 ? ag_div(c, diff, dist)
                               : ag_div(c, ag_mul(c, sg, ag_bin(c, WGT_BINARY_POW, ad, ag_scalar(c, p - 1))),
                                        ag_bin(c, WGT_BINARY_POW, dist, ag_scalar(c, p - 1)));
        wgt_tensor *off = ag_bin(c, WGT_BINARY_LOGICAL_OR, ag_bin(c, WGT_BINARY_EQ, diff, zero),
                                 ag_bin(c, WGT_BINARY_EQ, dist, zero));
        t = ag_where(c, off, zero, v);
    }
    wgt_tensor *gt = ag_mul(c, t, ag_unsqueeze(c, c->g, -1)); /* [B.., P, R, M] */
    int nd = gt ? gt->l.ndim : 0;
    if (c->need[0]) ag_set(c, 0, ag_sum_to(c, ag_reduce(c, WGT_REDUCE_SUM, gt, 1u << (nd - 2), 0), &c->in_l[0]));
    if (c->need[1])
        ag_set(c, 1, ag_sum_to(c, ag_muls(c, ag_reduce(c, WGT_REDUCE_SUM, gt, 1u << (nd - 3), 0), -1), &c->in_l[1]));
    return c->st;
}

/* bernoulli(p): the draws do not depend smoothly on p; PyTorch's derivative is zero. */
wgt_status ag_grad_bernoulli(ag_call *c)
{
    ag_set(c, 0, ag_zeros(c, c->in_l[0].ndim, c->in_l[0].shape));
    return c->st;
}
