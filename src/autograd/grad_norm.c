/* Backward formulas of softmax and normalisation (src/ops/norm.c). The norms recompute their
 * statistics from the saved input (one reduction each) rather than keeping them from the forward,
 * whose kernels do not return them. */
#include "autograd/autograd.h"
#include "ops/ops.h"

/* softmax: y (g - sum(g y)) along dim */
wgt_status ag_grad_softmax(ag_call *c)
{
    int dim = *(const int *)c->params;
    wgt_tensor *y = ag_f32(c, c->out);
    ag_set(c, 0, ag_mul(c, y, ag_sub(c, c->g, ag_sum_keep(c, ag_mul(c, c->g, y), dim))));
    return c->st;
}

/* log_softmax: g - exp(y) sum(g) along dim */
wgt_status ag_grad_log_softmax(ag_call *c)
{
    int dim = *(const int *)c->params;
    wgt_tensor *p = ag_un(c, WGT_UNARY_EXP, ag_f32(c, c->out));
    ag_set(c, 0, ag_sub(c, c->g, ag_mul(c, p, ag_sum_keep(c, c->g, dim))));
    return c->st;
}

/* The mask of the last k dims of an n-dim tensor. */
static uint32_t last_dims(int n, int k) { return k >= n ? (n ? (1u << n) - 1 : 0) : ((1u << n) - 1) & ~((1u << (n - k)) - 1); }

/* Given xhat (the normalised input), rstd and gxhat = d loss / d xhat, the input's gradient:
 * rstd (gxhat - [mean(gxhat)] - xhat mean(gxhat xhat)), the mean term only for layer norm. */
static wgt_tensor *norm_input_grad(ag_call *c, const wgt_tensor *xhat, const wgt_tensor *rstd,
                                   const wgt_tensor *gxhat, uint32_t dims, int centred)
{
    wgt_tensor *t = ag_sub(c, gxhat, ag_mul(c, xhat, ag_reduce(c, WGT_REDUCE_MEAN, ag_mul(c, gxhat, xhat), dims, 1)));
    if (centred) t = ag_sub(c, t, ag_reduce(c, WGT_REDUCE_MEAN, gxhat, dims, 1));
    return ag_mul(c, rstd, t);
}

/* WGT_NORM_GRAD=fused (the default): the input's gradient and g xhat from one row kernel (src/ops/norm_grad.c)
 * where x, g and the weight are f32 and contiguous; 0 when it does not apply (compose instead). */
static int norm_backward_rows(ag_call *c, const wgt_tensor *x, int rms)
{
    const op_grad_norm *p = c->params;
    const wgt_tensor *w = c->n_in > 1 ? c->in[1] : NULL, *wf = w ? ag_f32(c, w) : NULL;
    int n = c->in_l[0].ndim;
    int64_t R = 1;
    for (int d = n - p->norm_ndim; d < n; d++) R *= c->in_l[0].shape[d];
    if (c->st || !op_norm_rows_on() || !op_norm_rows_ok(x, c->g, wf, R)) return 0;
    int need_w = c->n_in > 1 && c->need[1];
    wgt_tensor *dx = NULL, *gw = NULL;
    wgt_status st = op_norm_backward_rows(x, c->g, wf, R, p->eps, rms, &dx, need_w ? &gw : NULL);
    dx = ag_keep_result(c, dx, st);
    if (need_w) gw = ag_keep_result(c, gw, st);
    if (c->need[0]) ag_set(c, 0, dx);
    if (need_w) ag_set(c, 1, ag_sum_to(c, gw, &c->in_l[1]));
    if (c->n_in > 2 && c->need[2]) ag_set(c, 2, ag_sum_to(c, c->g, &c->in_l[2]));
    return 1;
}

static wgt_status norm_backward(ag_call *c, int rms)
{
    const op_grad_norm *p = c->params;
    int n = c->in_l[0].ndim;
    uint32_t dims = last_dims(n, p->norm_ndim);
    wgt_tensor *x = ag_f32(c, c->in[0]), *xhat, *rstd;
    if (x && norm_backward_rows(c, x, rms)) return c->st;
    if (rms) {
        rstd = ag_un(c, WGT_UNARY_RSQRT,
                     ag_adds(c, ag_reduce(c, WGT_REDUCE_MEAN, ag_un(c, WGT_UNARY_SQUARE, x), dims, 1), p->eps));
        xhat = ag_mul(c, x, rstd);
    } else {
        wgt_tensor *xc = ag_sub(c, x, ag_reduce(c, WGT_REDUCE_MEAN, x, dims, 1));
        rstd = ag_un(c, WGT_UNARY_RSQRT,
                     ag_adds(c, ag_reduce(c, WGT_REDUCE_MEAN, ag_un(c, WGT_UNARY_SQUARE, xc), dims, 1), p->eps));
        xhat = ag_mul(c, xc, rstd);
    }
    const wgt_tensor *w = c->n_in > 1 ? c->in[1] : NULL;
    wgt_tensor *gxhat = w ? ag_mul(c, c->g, ag_f32(c, w)) : (wgt_tensor *)c->g;
    if (c->need[0]) ag_set(c, 0, norm_input_grad(c, xhat, rstd, gxhat, dims, !rms));
    if (c->n_in > 1 && c->need[1]) ag_set(c, 1, ag_sum_to(c, ag_mul(c, c->g, xhat), &c->in_l[1]));
    if (c->n_in > 2 && c->need[2]) ag_set(c, 2, ag_sum_to(c, c->g, &c->in_l[2]));
    return c->st;
}

wgt_status ag_grad_layer_norm(ag_call *c) { return norm_backward(c, 0); }
wgt_status ag_grad_rms_norm(ag_call *c) { return norm_backward(c, 1); }
