/* Backward formulas of pooling (src/ops/pool.c).
 *
 * Max pools: each output's gradient goes to the element it took (the i32 flat indices within a
 * plane that the forward returns, or computed for autograd when the caller did not ask): a
 * scatter_add over the flattened planes, so overlapping windows that chose one element add up.
 *
 * Average pools: every window is a product of one interval per spatial dim, and the divisor is a
 * product of per-dim counts (the padded window's extent with count_include_pad, its in-bounds part
 * without, a constant with divisor_override; adaptive windows their own extent). So the pool is
 * y = A_h x A_w^T with A_d [O_d, S_d] holding 1 / count on each window, and dx = A_h^T g A_w: two
 * matmuls with small matrices built here.
 *
 * Interpolate (every mode) is separable the same way, A_d holding each output's taps, made by the
 * CPU reference's own tap function (PyTorch's f32 source coordinates). */
#include <stdlib.h>

#include "autograd/autograd.h"
#include "core/error.h"
#include "cpu/pool.h" /* the interpolation taps, shared with the reference so both pick one pixel */

wgt_status ag_grad_max_pool(ag_call *c)
{
    const op_grad_pool *p = c->params;
    const wgt_layout *xl = &c->in_l[0];
    int lead = xl->ndim - p->spatial;
    int64_t xs[WGT_MAX_DIMS], gs[WGT_MAX_DIMS];
    for (int d = 0; d < lead; d++) xs[d] = gs[d] = xl->shape[d];
    xs[lead] = gs[lead] = 1;
    for (int d = lead; d < xl->ndim; d++) xs[lead] *= xl->shape[d], gs[lead] *= c->g->l.shape[d];
    wgt_tensor *z = ag_zeros(c, lead + 1, xs), *idx = ag_reshape(c, c->in[1], lead + 1, gs);
    wgt_tensor *g = ag_reshape(c, c->g, lead + 1, gs), *r = NULL;
    if (c->st || !z || !idx || !g) return c->st;
    wgt_status st = wgt_scatter_add(z, lead, idx, g, &r); /* before ag_keep reads r */
    ag_set(c, 0, ag_reshape_as(c, ag_keep(c, r, st), xl));
    return c->st;
}

/* A_d [O, S] of spatial dim d (i of p's arrays): 1 / count over each output's window. */
static wgt_tensor *window_matrix(ag_call *c, const op_grad_pool *p, int i, int64_t S, int64_t O)
{
    if (c->st) return NULL;
    float *a = calloc(O > 0 && S > 0 ? (size_t)(O * S) : 1, sizeof *a);
    if (!a) {
        c->st = wgt_ctx_error(c->ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_backward: avg_pool: out of host memory");
        return NULL;
    }
    for (int64_t o = 0; o < O; o++) {
        int64_t lo, hi, count;
        if (p->adaptive) { /* [floor(o S / O), ceil((o + 1) S / O)) */
            lo = o * S / O, hi = ((o + 1) * S + O - 1) / O, count = hi - lo;
        } else { /* PyTorch's avg_pool: the window clipped to the padded input, then to the input */
            int64_t k = p->kernel[i], s = p->stride[i], pad = p->padding[i];
            lo = o * s - pad, hi = lo + k < S + pad ? lo + k : S + pad;
            count = hi - lo;
            lo = lo > 0 ? lo : 0, hi = hi < S ? hi : S;
            if (!p->count_include_pad) count = hi - lo;
        }
        /* divisor_override divides once for the whole window: it goes into the last dim's matrix */
        double v = 1.0 / (double)count;
        if (!p->adaptive && p->divisor_override > 0) v = i == p->spatial - 1 ? 1.0 / (double)p->divisor_override : 1.0;
        for (int64_t j = lo; j < hi; j++) a[o * S + j] = (float)v;
    }
    wgt_tensor *r = NULL;
    wgt_status st = wgt_tensor_from_host(c->ctx, WGT_F32, 2, (const int64_t[]){O, S}, a, &r);
    free(a);
    return ag_keep(c, r, st);
}

/* dx = A_h^T g A_w (A_h NULL: one spatial dim) */
static wgt_tensor *separable_back(ag_call *c, const wgt_tensor *Ah, const wgt_tensor *Aw)
{
    wgt_tensor *t = ag_matmul(c, c->g, Aw); /* g [..., Ow] @ A_w [Ow, W] */
    return Ah ? ag_matmul(c, ag_transpose(c, Ah, 0, 1), t) : t; /* A_h^T [H, Oh] @ t [..., Oh, W] */
}

wgt_status ag_grad_avg_pool(ag_call *c)
{
    const op_grad_pool *p = c->params;
    const wgt_layout *xl = &c->in_l[0];
    int nd = xl->ndim;
    wgt_tensor *Aw = window_matrix(c, p, p->spatial - 1, xl->shape[nd - 1], c->g->l.shape[nd - 1]);
    wgt_tensor *Ah = p->spatial == 2 ? window_matrix(c, p, 0, xl->shape[nd - 2], c->g->l.shape[nd - 2]) : NULL;
    ag_set(c, 0, separable_back(c, Ah, Aw));
    return c->st;
}

static wgt_tensor *interp_matrix(ag_call *c, const op_grad_interp *p, int i, int64_t S, int64_t O)
{
    if (c->st) return NULL;
    float *a = malloc((O > 0 && S > 0 ? (size_t)(O * S) : 1) * sizeof *a);
    if (!a) {
        c->st = wgt_ctx_error(c->ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_backward: interpolate: out of host memory");
        return NULL;
    }
    wgt_cpu_interp_matrix((wgt_interp_mode)p->mode, S, O, p->scales[i], p->align_corners, a);
    wgt_tensor *r = NULL;
    wgt_status st = wgt_tensor_from_host(c->ctx, WGT_F32, 2, (const int64_t[]){O, S}, a, &r);
    free(a);
    return ag_keep(c, r, st);
}

wgt_status ag_grad_interpolate(ag_call *c)
{
    const op_grad_interp *p = c->params;
    const wgt_layout *xl = &c->in_l[0];
    int nd = xl->ndim;
    wgt_tensor *Aw = interp_matrix(c, p, p->spatial - 1, xl->shape[nd - 1], c->g->l.shape[nd - 1]);
    wgt_tensor *Ah = p->spatial == 2 ? interp_matrix(c, p, 0, xl->shape[nd - 2], c->g->l.shape[nd - 2]) : NULL;
    ag_set(c, 0, separable_back(c, Ah, Aw));
    return c->st;
}
