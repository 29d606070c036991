/* Backward formulas of views and shape ops (src/tensor views, src/ops/shape.c, casts): each moves
 * the gradient back to where the input's elements were; nothing here does arithmetic except the
 * sums of expand. */
#include <stdlib.h>
#include <string.h>

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

/* reflect, replicate and circular pads: each output position o of dim d copies input position
 * m(o) (the forward's map, src/cpu/shape.c), one dim at a time, so the gradient goes back dim by
 * dim: an index_add of g along d at the indices m (edges read several times add up). */
static wgt_tensor *pad_back(ag_call *c, const op_grad_move *p, const wgt_layout *xl)
{
    const wgt_tensor *g = c->g;
    for (int d = 0; d < p->n && g && !c->st; d++) {
        int64_t n = xl->shape[d], before = p->a[d], O = g->l.shape[d];
        if (before == 0 && p->a[p->n + d] == 0) continue;
        int32_t *map = malloc(sizeof *map * (O ? O : 1));
        if (!map) {
            c->st = wgt_ctx_error(c->ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_backward: out of host memory");
            return NULL;
        }
        for (int64_t o = 0; o < O; o++) {
            int64_t s = o - before;
            if (s < 0 || s >= n) {
                if (p->mode == WGT_PAD_REFLECT) s = s < 0 ? -s : 2 * (n - 1) - s;
                else if (p->mode == WGT_PAD_REPLICATE) s = s < 0 ? 0 : n - 1;
                else s = ((s % n) + n) % n;
            }
            map[o] = (int32_t)s;
        }
        int64_t shape[WGT_MAX_DIMS];
        memcpy(shape, g->l.shape, sizeof(int64_t) * g->l.ndim);
        shape[d] = n;
        wgt_tensor *z = ag_zeros(c, g->l.ndim, shape), *idx = NULL, *r = NULL;
        if (O > 0) idx = ag_keep(c, idx, c->st ? c->st : wgt_tensor_from_host(c->ctx, WGT_I32, 1, &O, map, &idx));
        free(map);
        g = O > 0 ? ag_keep(c, r, c->st ? c->st : wgt_index_add(z, d, idx, g, 1.0, &r)) : z;
    }
    return (wgt_tensor *)g;
}

/* Movements of elements (src/ops/shape.c): each output element copies one input element (pad's
 * constant ones none; repeat's several copy the same), so the gradient moves back:
 * flip flips again, roll rolls back, pad (constant) crops with the negated pads, repeat sums the
 * tiles (one dim at a time, viewed as [.., factor, size, ..]), tril/triu keep the same triangle. */
wgt_status ag_grad_move(ag_call *c)
{
    const op_grad_move *p = c->params;
    const wgt_layout *xl = &c->in_l[0];
    wgt_tensor *r = NULL;
    wgt_status st = c->st;
    switch (p->op) {
    case 0: { /* flip */
        int dims[WGT_MAX_DIMS], n = 0;
        for (int d = 0; d < p->n; d++)
            if (p->a[d]) dims[n++] = d;
        if (!st) st = wgt_flip(c->g, dims, n, &r);
        break;
    }
    case 1: { /* roll */
        int dims[WGT_MAX_DIMS];
        int64_t back[WGT_MAX_DIMS];
        for (int d = 0; d < p->n; d++) dims[d] = d, back[d] = -p->a[d];
        if (p->n == 0) return ag_set(c, 0, (wgt_tensor *)c->g), c->st;
        if (!st) st = wgt_roll(c->g, back, dims, p->n, &r);
        break;
    }
    case 2: { /* repeat: output dim d of size a[d] * s (s: the input's, 1 for added leading dims) */
        const wgt_tensor *g = c->g;
        int lead = p->n - xl->ndim;
        for (int d = 0; d < p->n && g; d++) {
            if (p->a[d] == 1) continue;
            if (g->l.ndim + 1 > WGT_MAX_DIMS)
                return wgt_ctx_error(c->ctx, WGT_ERR_UNSUPPORTED,
                                     "wgt_backward: repeat over %d dims has no gradient (at most %d)", p->n,
                                     WGT_MAX_DIMS - 1);
            int64_t sh[WGT_MAX_DIMS];
            for (int e = 0; e < d; e++) sh[e] = g->l.shape[e];
            sh[d] = p->a[d], sh[d + 1] = d < lead ? 1 : xl->shape[d - lead];
            for (int e = d + 1; e < g->l.ndim; e++) sh[e + 1] = g->l.shape[e];
            g = ag_reduce(c, WGT_REDUCE_SUM, ag_reshape(c, g, g->l.ndim + 1, sh), 1u << d, 0);
        }
        ag_set(c, 0, ag_reshape_as(c, g, xl));
        return c->st;
    }
    case 3: { /* pad */
        if (p->mode != WGT_PAD_CONSTANT) {
            ag_set(c, 0, pad_back(c, p, xl));
            return c->st;
        }
        int64_t neg[2 * WGT_MAX_DIMS];
        for (int d = 0; d < 2 * p->n; d++) neg[d] = -p->a[d];
        if (!st) st = wgt_pad(c->g, WGT_PAD_CONSTANT, neg, 0.0, &r);
        break;
    }
    default: /* tril, triu */
        if (!st) st = p->op == 5 ? wgt_triu(c->g, p->a[0], &r) : wgt_tril(c->g, p->a[0], &r);
        break;
    }
    ag_set(c, 0, ag_keep(c, r, st));
    return c->st;
}

/* sort / topk / kthvalue / median: each value came from x at its index along dim. */
wgt_status ag_grad_select(ag_call *c)
{
    const op_grad_select *p = c->params;
    if (c->need[1]) return wgt_ctx_error(c->ctx, WGT_ERR_UNSUPPORTED, "wgt_backward: sort's indices have no gradient");
    const wgt_layout *xl = &c->in_l[0];
    const wgt_tensor *g = c->g, *idx = c->in[1];
    if (xl->ndim == 0) return ag_set(c, 0, ag_reshape_as(c, g, xl)), c->st;
    if (!p->keepdim && g->l.ndim < xl->ndim) g = ag_unsqueeze(c, g, p->dim), idx = ag_unsqueeze(c, idx, p->dim);
    wgt_tensor *z = ag_zeros(c, xl->ndim, xl->shape), *r = NULL;
    if (z && g && idx) ag_set(c, 0, ag_keep(c, r, c->st ? c->st : wgt_scatter_add(z, p->dim, idx, g, &r)));
    return c->st;
}
