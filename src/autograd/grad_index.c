/* Backward formulas of indexing (src/ops/index.c, embedding in src/ops/rope.c): the gradient goes
 * back to the positions that were read, summed where a position was read more than once. */
#include <stdint.h>
#include <string.h>

#include "autograd/autograd.h"
#include "core/error.h"
#include "ops/ops.h"

#define IN_BIT(i) (1u << (i))

static wgt_status index_not_differentiable(ag_call *c, const char *op)
{
    return wgt_ctx_error(c->ctx, WGT_ERR_UNSUPPORTED, "wgt_backward: %s's index has no gradient", op);
}

/* embedding: rows of weight [V, D] at ids; dW[v] = sum of g's rows whose id is v, added in a fixed
 * order, so a training step gives the same bits on every run (resuming from a checkpoint relies on
 * it; index_add adds floats with atomics in whatever order they land). On the GPU with i32 ids:
 * a stable sort of the ids and one segment sum per id (op_embedding_backward: N D additions).
 * Otherwise, while the one-hot matrix [V, N] fits one storage binding, the product
 * one_hot(ids)^T @ g (N x V x 4 bytes and 2 N V D flops: at GPT-2 small's 8 x 512, 823 MB and a
 * tenth of the step's flops); larger ones take index_add. */
wgt_status ag_grad_embedding(ag_call *c)
{
    if (c->need[1]) return index_not_differentiable(c, "embedding");
    int64_t V = c->in_l[0].shape[0], D = c->in_l[0].shape[1], ks[1] = {-1}, gs[2] = {-1, D};
    wgt_tensor *ids = ag_reshape(c, c->in[1], 1, ks), *g = ag_reshape(c, c->g, 2, gs), *r = NULL;
    if (!ids || !g) return c->st;
    int64_t N = wgt_tensor_numel(ids);
    if (op_embedding_backward_ok(ids, g) && (uint64_t)V * (uint64_t)D <= UINT32_MAX) {
        ag_set(c, 0, ag_keep(c, r, op_embedding_backward(ids, g, V, &r)));
        return c->st;
    }
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

/* The leading corner of src that index covers (the elements past it were never read). */
static wgt_tensor *corner(ag_call *c, const wgt_tensor *t, const wgt_layout *index)
{
    for (int d = 0; d < index->ndim && t; d++)
        if (t->l.shape[d] != index->shape[d]) t = ag_narrow(c, t, d, 0, index->shape[d]);
    return (wgt_tensor *)t;
}

static wgt_tensor *ag_gather(ag_call *c, const wgt_tensor *x, int dim, const wgt_tensor *index)
{
    if (c->st || !x || !index) return NULL;
    wgt_tensor *r = NULL;
    return ag_keep(c, r, wgt_gather(x, dim, index, &r));
}

static wgt_tensor *ag_scatter(ag_call *c, const wgt_tensor *x, int dim, const wgt_tensor *index, const wgt_tensor *src,
                              wgt_scatter_mode mode)
{
    if (c->st || !x || !index || !src) return NULL;
    wgt_tensor *r = NULL;
    return ag_keep(c, r, wgt_scatter(x, dim, index, src, mode, &r));
}

/* scatter with amax/amin (include_self, as wgt's scatter always is): the gradient goes to every
 * element equal to the result, shared evenly between ties (PyTorch's scatter_reduce_backward). */
static void scatter_extreme(ag_call *c, int dim, const wgt_tensor *self, const wgt_tensor *index,
                            const wgt_tensor *src, const wgt_tensor *result)
{
    wgt_tensor *value = ag_gather(c, result, dim, index);
    wgt_tensor *self_is = ag_cast(c, ag_bin(c, WGT_BINARY_EQ, self, result), WGT_F32);
    wgt_tensor *src_is = ag_cast(c, ag_bin(c, WGT_BINARY_EQ, src, value), WGT_F32);
    wgt_tensor *count = ag_scatter(c, self_is, dim, index, src_is, WGT_SCATTER_ADD);
    wgt_tensor *share = ag_div(c, c->g, count);
    if (c->need[0]) ag_set(c, 0, ag_mul(c, self_is, share));
    if (c->need[2]) ag_set(c, 2, pad_to(c, ag_mul(c, src_is, ag_gather(c, share, dim, index)), &c->in_l[2]));
}

/* scatter with mul: each factor's gradient is g times the product of the others, computed
 * without dividing by a zero (PyTorch's scatter_reduce_backward for prod): self's as g times the
 * product with self's zeros replaced by 1, divided by that 1; a source that is the only zero of
 * its target as g times the product with it replaced by 1; any other source as g result / src
 * (0 when its target holds another zero). */
static void scatter_mul(ag_call *c, int dim, const wgt_tensor *self, const wgt_tensor *index, const wgt_tensor *src,
                        const wgt_tensor *result)
{
    wgt_tensor *zero = ag_scalar(c, 0), *one = ag_scalar(c, 1);
    if (c->need[0]) {
        wgt_tensor *masked = ag_where(c, ag_bin(c, WGT_BINARY_EQ, self, zero), one, self);
        wgt_tensor *prod = ag_scatter(c, masked, dim, index, src, WGT_SCATTER_MUL);
        ag_set(c, 0, ag_div(c, ag_mul(c, c->g, prod), masked));
    }
    if (!c->need[2]) return;
    wgt_tensor *src_zero = ag_bin(c, WGT_BINARY_EQ, src, zero);
    wgt_tensor *zeros = ag_zeros(c, self ? self->l.ndim : 0, self ? self->l.shape : NULL);
    wgt_tensor *n_zeros = ag_gather(c, ag_scatter(c, zeros, dim, index, ag_cast(c, src_zero, WGT_F32), WGT_SCATTER_ADD),
                                    dim, index);
    wgt_tensor *single = ag_bin(c, WGT_BINARY_LOGICAL_AND, src_zero, ag_bin(c, WGT_BINARY_EQ, n_zeros, one));
    wgt_tensor *others = ag_scatter(c, self, dim, index, ag_where(c, single, one, src), WGT_SCATTER_MUL);
    wgt_tensor *g_single = ag_gather(c, ag_mul(c, c->g, others), dim, index);
    wgt_tensor *g_rest = ag_div(c, ag_gather(c, ag_mul(c, c->g, result), dim, index), ag_where(c, src_zero, one, src));
    ag_set(c, 2, pad_to(c, ag_where(c, single, g_single, g_rest), &c->in_l[2]));
}

/* scatter and scatter_add: out = self with out[.. index[i] ..] (=, +=, *=, max=, min=) src[i].
 * add: self's gradient is g; src[i]'s is g at the position it went to (gather).
 * set: self's gradient is g where nothing was written (the written positions are zeroed by a
 * scatter of zeros), src's is the gather, as PyTorch's (defined when the index has no duplicates:
 * with duplicates every writer gets the gradient of the one position). mul, amax, amin: above. */
wgt_status ag_grad_scatter(ag_call *c)
{
    const op_grad_scatter *p = c->params;
    if (c->need[1]) return index_not_differentiable(c, "scatter");
    const wgt_tensor *index = c->in[1];
    if (p->mode == WGT_SCATTER_MUL || p->mode == WGT_SCATTER_AMAX || p->mode == WGT_SCATTER_AMIN) {
        wgt_tensor *self = ag_f32(c, c->in[0]), *src = corner(c, ag_f32(c, c->in[2]), &index->l);
        wgt_tensor *result = ag_f32(c, c->out);
        if (p->mode == WGT_SCATTER_MUL) scatter_mul(c, p->dim, self, index, src, result);
        else scatter_extreme(c, p->dim, self, index, src, result);
        return c->st;
    }
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

/* scatter saves its index; mul, amax and amin also self, src and the result */
uint32_t ag_saves_scatter(const void *params)
{
    wgt_scatter_mode m = ((const op_grad_scatter *)params)->mode;
    return m == WGT_SCATTER_SET || m == WGT_SCATTER_ADD ? IN_BIT(1) : IN_BIT(0) | IN_BIT(1) | IN_BIT(2) | AG_SAVE_OUT;
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

/* masked_select: out lists x (broadcast with mask) where mask is set, in row-major order. The
 * gradient puts g back: the running count of set elements (a cumsum) is each set element's place
 * in out, plus one; [0, g...] read there (0 for unset elements, multiplied out), summed back to
 * x's shape over the broadcast. */
wgt_status ag_grad_masked_select(ag_call *c)
{
    if (c->need[1]) return index_not_differentiable(c, "masked_select's mask");
    const wgt_layout *l0 = &c->in_l[0], *l1 = &c->in_l[1];
    wgt_layout B = *l0;
    B.ndim = l0->ndim > l1->ndim ? l0->ndim : l1->ndim;
    for (int d = 0; d < B.ndim; d++) {
        int i0 = d - (B.ndim - l0->ndim), i1 = d - (B.ndim - l1->ndim);
        int64_t s0 = i0 >= 0 ? l0->shape[i0] : 1, s1 = i1 >= 0 ? l1->shape[i1] : 1;
        B.shape[d] = s0 == 1 ? s1 : s0;
    }
    const int64_t flat[1] = {-1};
    const wgt_tensor *mask = c->in[1];
    if (mask && mask->l.dtype != WGT_BOOL) mask = ag_bin(c, WGT_BINARY_NE, mask, ag_scalar(c, 0));
    wgt_tensor *m = ag_reshape(c, ag_cast(c, ag_expand_as(c, mask, &B), WGT_I32), 1, flat);
    wgt_tensor *r = NULL, *place = NULL;
    if (m) place = ag_mul(c, ag_keep(c, r, wgt_scan(WGT_SCAN_CUMSUM, m, 0, &r, NULL)), m);
    int64_t pads[2] = {1, 0};
    r = NULL;
    wgt_tensor *g0 = ag_keep(c, r, c->st ? c->st : wgt_pad(c->g, WGT_PAD_CONSTANT, pads, 0.0, &r));
    r = NULL;
    wgt_tensor *v = place && g0 ? ag_keep(c, r, wgt_index_select(g0, 0, place, &r)) : NULL;
    ag_set(c, 0, ag_sum_to(c, ag_reshape_as(c, v, &B), l0));
    return c->st;
}

static wgt_tensor *iscalar(ag_call *c, int64_t v)
{
    if (c->st) return NULL;
    wgt_tensor *r = NULL;
    return ag_keep(c, r, wgt_full(c->ctx, WGT_I32, 0, NULL, (double)v, &r));
}

/* index_put: out = self with out[i0, .., ik-1] (= or +=) values, the indices broadcast to S and the
 * updates of shape U = S + self.shape[k:]. self's gradient: g (accumulate), else g with the
 * written positions zeroed (an index_put of 0); values': g read at the indices (each index made a
 * flat row of self's first k dims; a select of those rows), summed back over the broadcast of
 * values to U (PyTorch: grad.index(indices)). */
wgt_status ag_grad_index_put(ag_call *c)
{
    const op_grad_index_put *p = c->params;
    int k = p->k;
    const wgt_layout *sl = &c->in_l[0];
    for (int i = 2; i < c->n_in; i++)
        if (c->need[i]) return index_not_differentiable(c, "index_put");
    const wgt_tensor *idx[WGT_MAX_DIMS];
    for (int i = 0; i < k; i++) idx[i] = c->in[2 + i];
    wgt_tensor *r = NULL;
    if (c->need[0]) {
        if (p->accumulate) ag_set(c, 0, (wgt_tensor *)c->g);
        else ag_set(c, 0, ag_keep(c, r, c->st ? c->st : wgt_index_put(c->g, idx, k, ag_scalar(c, 0), 0, &r)));
    }
    if (!c->need[1] || c->st) return c->st;
    wgt_tensor *lin = NULL;
    int64_t mult = 1;
    for (int i = k - 1; i >= 0; i--) {
        wgt_tensor *ii = ag_cast(c, idx[i], WGT_I32), *n = iscalar(c, sl->shape[i]);
        ii = ag_where(c, ag_bin(c, WGT_BINARY_LT, ii, iscalar(c, 0)), ag_add(c, ii, n), ii);
        if (mult != 1) ii = ag_mul(c, ii, iscalar(c, mult));
        lin = lin ? ag_add(c, lin, ii) : ii;
        mult *= sl->shape[i];
    }
    if (!lin) return c->st;
    /* lin has S's shape (a 0-D S when every index is 0-D); rows of g viewed as [mult, self.shape[k:]] */
    int sn = lin->l.ndim;
    int64_t U[2 * WGT_MAX_DIMS], rows[WGT_MAX_DIMS + 1], flat[1] = {-1};
    memcpy(U, lin->l.shape, sizeof(int64_t) * sn);
    rows[0] = mult;
    for (int d = k; d < sl->ndim; d++) U[sn + d - k] = sl->shape[d], rows[1 + d - k] = sl->shape[d];
    wgt_tensor *g2 = ag_reshape(c, c->g, 1 + sl->ndim - k, rows);
    wgt_tensor *li = ag_reshape(c, ag_cast(c, lin, WGT_I32), 1, flat);
    r = NULL;
    wgt_tensor *sel = g2 && li ? ag_keep(c, r, wgt_index_select(g2, 0, li, &r)) : NULL;
    ag_set(c, 1, ag_sum_to(c, ag_reshape(c, sel, sn + sl->ndim - k, U), &c->in_l[1]));
    return c->st;
}

/* index_put saves its index tensors (inputs 2 .. k + 1) */
uint32_t ag_saves_index_put(const void *params)
{
    int k = ((const op_grad_index_put *)params)->k;
    return ((1u << k) - 1) << 2;
}
