/* Backward formulas of the scans (wgt_scan, src/ops/reduce.c).
 *
 * cumsum: output j sums inputs i <= j, so input i collects the gradients of outputs j >= i: the
 * cumsum of the flipped gradient, flipped back. cummax/cummin: each output copies one input (the
 * i32 index the forward computes while autograd records), so its gradient is scattered there and
 * adds up where one element stayed the extreme. cumprod has no rule yet: its gradient needs
 * products that exclude each element, with zeros handled apart (PyTorch's cumprod_backward). */
#include "autograd/autograd.h"
#include "core/error.h"

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
    default:
        return wgt_ctx_error(c->ctx, WGT_ERR_UNSUPPORTED,
                             "wgt_backward: cumprod's gradient is not implemented yet (it needs the products that "
                             "leave out each element, zeros handled apart): use exp(cumsum(log x)) for positive x, "
                             "or detach");
    }
}
