/* Backward formulas of the scans (wgt_scan, src/ops/reduce.c).
 *
 * cumsum: output j sums inputs i <= j, so input i collects the gradients of outputs j >= i: the
 * cumsum of the flipped gradient, flipped back. cummax/cummin: each output copies one input (the
 * i32 index the forward computes while autograd records), so its gradient is scattered there and
 * adds up where one element stayed the extreme.
 *
 * cumprod: dx_i = sum_{j >= i} g_j prod_{k <= j, k != i} x_k. Before a row's first zero z that is
 * revcumsum(g y)_i / x_i (y_j = 0 from z on, as the products it stands for); at z it is
 * prod_{k < z} x_k * sum_{j >= z} g_j prod_{z < k <= j} x_k (a cumprod with the elements up to z
 * set to 1); after z every product holds x_z = 0. All three at once, no host sync: each row finds
 * its first zero through a cumsum of (x == 0). */
#include "autograd/autograd.h"
#include "core/error.h"

/* the cumsum of t along dim from the end */
static wgt_tensor *rev_cumsum(ag_call *c, const wgt_tensor *t, int dim)
{
    wgt_tensor *f = NULL, *s = NULL, *b = NULL;
    wgt_status st = c->st ? c->st : wgt_flip(t, &dim, 1, &f);
    if ((f = ag_keep(c, f, st))) st = wgt_scan(WGT_SCAN_CUMSUM, f, dim, &s, NULL), s = ag_keep(c, s, st);
    if (s) st = wgt_flip(s, &dim, 1, &b), b = ag_keep(c, b, st);
    return s ? b : NULL;
}

static wgt_tensor *scan(ag_call *c, wgt_scan_op op, const wgt_tensor *t, int dim)
{
    wgt_tensor *r = NULL;
    if (c->st || !t) return NULL;
    return ag_keep(c, r, wgt_scan(op, t, dim, &r, NULL));
}

static wgt_status grad_cumprod(ag_call *c, int dim)
{
    wgt_tensor *x = ag_f32(c, c->in[0]), *y = ag_f32(c, c->out), *one = ag_scalar(c, 1), *zero = ag_scalar(c, 0);
    wgt_tensor *is0 = ag_bin(c, WGT_BINARY_EQ, x, zero);
    wgt_tensor *zeros_so_far = scan(c, WGT_SCAN_CUMSUM, ag_cast(c, is0, WGT_F32), dim);
    wgt_tensor *before = ag_bin(c, WGT_BINARY_EQ, zeros_so_far, zero);
    wgt_tensor *first = ag_bin(c, WGT_BINARY_LOGICAL_AND, is0, ag_bin(c, WGT_BINARY_EQ, zeros_so_far, one));
    wgt_tensor *a = ag_div(c, rev_cumsum(c, ag_mul(c, c->g, y), dim), ag_where(c, before, x, one));
    /* at the first zero: (product before it) x (sum over j >= z of g_j times the products after it) */
    wgt_tensor *pre = NULL, *r = NULL;
    if (!c->st) pre = ag_keep(c, r, wgt_reduce(WGT_REDUCE_PROD, ag_where(c, before, x, one), 1u << dim, 1, 0, &r));
    wgt_tensor *after = ag_where(c, ag_bin(c, WGT_BINARY_LOGICAL_OR, before, first), one, x);
    wgt_tensor *tail = ag_where(c, before, zero, ag_mul(c, c->g, scan(c, WGT_SCAN_CUMPROD, after, dim)));
    wgt_tensor *b = ag_mul(c, pre, ag_sum_keep(c, tail, dim));
    ag_set(c, 0, ag_where(c, before, a, ag_where(c, first, b, zero)));
    return c->st;
}

uint32_t ag_saves_scan(const void *params)
{
    wgt_scan_op op = ((const op_grad_scan *)params)->op;
    return op == WGT_SCAN_CUMPROD ? 1u | AG_SAVE_OUT : op == WGT_SCAN_CUMSUM ? 0 : 1u << 1;
}

wgt_status ag_grad_scan(ag_call *c)
{
    const op_grad_scan *p = c->params;
    const wgt_layout *xl = &c->in_l[0];
    int dim = p->dim < 0 ? p->dim + xl->ndim : p->dim;
    wgt_tensor *r = NULL;
    switch (p->op) {
    case WGT_SCAN_CUMSUM: {
        /* each call before its ag_keep: C leaves the order of a call's arguments open */
        wgt_tensor *f = NULL, *s = NULL, *b = NULL;
        wgt_status st = c->st ? c->st : wgt_flip(c->g, &dim, 1, &f);
        if ((f = ag_keep(c, f, st))) st = wgt_scan(WGT_SCAN_CUMSUM, f, dim, &s, NULL), s = ag_keep(c, s, st);
        if (s) st = wgt_flip(s, &dim, 1, &b), ag_set(c, 0, ag_keep(c, b, st));
        return c->st;
    }
    case WGT_SCAN_CUMMAX: case WGT_SCAN_CUMMIN: {
        wgt_tensor *z = ag_zeros(c, xl->ndim, xl->shape);
        if (!z || !c->in[1]) return c->st;
        wgt_status st = wgt_scatter_add(z, dim, c->in[1], c->g, &r);
        ag_set(c, 0, ag_keep(c, r, st));
        return c->st;
    }
    case WGT_SCAN_CUMPROD: return grad_cumprod(c, dim);
    default: return wgt_ctx_error(c->ctx, WGT_ERR_INTERNAL, "wgt_backward: scan op %d", (int)p->op);
    }
}
