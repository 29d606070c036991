/* Backward formulas of the transformer ops (src/ops/rope.c, attention.c). rope is a rotation, so
 * its gradient is the rotation by the opposite angle: rope of g at the negated positions. sdpa's
 * backward recomputes the attention probabilities from the saved q, k (the forward's kernel keeps
 * none) and runs the four products of its gradient with the query heads of a group stacked as rows
 * ([B, Hkv, G Lq, D]), so k and v are never repeated for GQA. A float mask is added to the
 * scores, so its gradient is the scores' (before the scale), summed over what it broadcast to. */
#include <math.h>

#include "autograd/autograd.h"
#include "core/error.h"
#include "ops/ops.h"

wgt_status ag_grad_rope(ag_call *c)
{
    const op_grad_rope *p = c->params;
    if (c->need[1]) return wgt_ctx_error(c->ctx, WGT_ERR_UNSUPPORTED, "wgt_backward: rope's positions have no gradient");
    wgt_tensor *neg = ag_un(c, WGT_UNARY_NEG, c->in[1]), *r = NULL;
    if (!c->st && neg) ag_set(c, 0, ag_keep(c, r, wgt_rope(c->g, neg, p->rot_dim, p->interleaved, &p->p, &r)));
    return c->st;
}

/* WGT_SDPA_GRAD=fused (the default) without a mask: the scores qk ([B, Hkv, G Lq, Lk], q k^T unscaled) to
 * probabilities and the probabilities' gradient to the scores' in one row kernel each
 * (src/ops/attention_grad.c), the products as ag_grad_sdpa's. */
static wgt_status sdpa_rows(ag_call *c, const wgt_tensor *q, const wgt_tensor *k, const wgt_tensor *v,
                            const wgt_tensor *qk, double scale, const int64_t *gshape)
{
    const wgt_sdpa_params *p = c->params;
    wgt_tensor *pr = NULL, *r = NULL;
    if (!c->st && qk) pr = ag_keep(c, r, op_sdpa_probs(qk, scale, p->causal, c->in_l[0].shape[2], p->causal_offset,
                                                         p->causal && p->window > 0 ? p->window : 0, &r));
    wgt_tensor *go = ag_reshape(c, c->g, 4, gshape);
    if (c->need[2]) ag_set(c, 2, ag_matmul(c, ag_transpose(c, pr, -1, -2), go));
    if (c->need[0] || c->need[1]) {
        wgt_tensor *dp = ag_matmul(c, go, ag_transpose(c, v, -1, -2)), *ds = NULL;
        r = NULL;
        if (!c->st && pr && dp) ds = ag_keep(c, r, op_sdpa_dscores(pr, dp, scale, &r));
        if (c->need[0]) ag_set(c, 0, ag_reshape_as(c, ag_matmul(c, ds, k), &c->in_l[0]));
        if (c->need[1]) ag_set(c, 1, ag_matmul(c, ag_transpose(c, ds, -1, -2), q));
    }
    return c->st;
}

wgt_status ag_grad_sdpa(ag_call *c)
{
    const wgt_sdpa_params *p = c->params;
    const wgt_layout *ql = &c->in_l[0], *kl = &c->in_l[1], *vl = &c->in_l[2];
    int64_t B = ql->shape[0], Hq = ql->shape[1], Lq = ql->shape[2], D = ql->shape[3];
    int64_t Hkv = kl->shape[1], Lk = kl->shape[2], Dv = vl->shape[3], G = Hq / Hkv;
    double scale = p->scale != 0 ? p->scale : 1 / sqrt((double)D);
    int64_t rows[4] = {B, Hkv, G * Lq, D}, grid[5] = {B, Hkv, G, Lq, Lk}, flat[4] = {B, Hkv, G * Lq, Lk};
    int64_t gshape[4] = {B, Hkv, G * Lq, Dv}, full[4] = {B, Hq, Lq, Lk};
    wgt_tensor *q = ag_reshape(c, ag_f32(c, c->in[0]), 4, rows), *k = ag_f32(c, c->in[1]), *v = ag_f32(c, c->in[2]);
    const wgt_tensor *mask = c->n_in > 3 ? c->in[3] : NULL;
    wgt_tensor *qk = ag_matmul(c, q, ag_transpose(c, k, -1, -2)), *r = NULL;
    if (!mask && op_sdpa_rows_on() && op_sdpa_rows_ok(qk)) return sdpa_rows(c, q, k, v, qk, scale, gshape);
    wgt_tensor *s = ag_reshape(c, ag_muls(c, qk, scale), 5, grid);
    wgt_tensor *ninf = ag_scalar(c, -INFINITY);
    if (mask) {
        wgt_layout fl;
        wgt_layout_contiguous(&fl, mask->l.dtype, 4, full);
        wgt_tensor *m = ag_reshape(c, ag_keep(c, r, wgt_tensor_contiguous(ag_expand_as(c, mask, &fl), &r)), 5, grid);
        s = mask->l.dtype == WGT_BOOL ? ag_where(c, m, s, ninf) : ag_add(c, s, ag_f32(c, m));
    }
    if (p->causal) { /* key j is visible to query i when j <= causal_offset + i */
        wgt_tensor *i = NULL, *j = NULL;
        r = NULL;
        if (!c->st) i = ag_keep(c, r, wgt_arange(c->ctx, 0, (double)Lq, 1, WGT_F32, &r));
        r = NULL;
        if (!c->st) j = ag_keep(c, r, wgt_arange(c->ctx, 0, (double)Lk, 1, WGT_F32, &r));
        int64_t col[2] = {Lq, 1};
        wgt_tensor *last = ag_adds(c, ag_reshape(c, i, 2, col), (double)p->causal_offset);
        wgt_tensor *vis = ag_bin(c, WGT_BINARY_LE, j, last);
        s = ag_where(c, vis, s, ninf);
        if (p->window > 0) /* and j > causal_offset + i - window */
            s = ag_where(c, ag_bin(c, WGT_BINARY_GT, j, ag_adds(c, last, -(double)p->window)), s, ninf);
    }
    wgt_tensor *pr = NULL;
    r = NULL;
    if (!c->st && s) pr = ag_reshape(c, ag_keep(c, r, wgt_softmax(s, -1, &r)), 4, flat);
    wgt_tensor *go = ag_reshape(c, c->g, 4, gshape);
    if (c->need[2]) ag_set(c, 2, ag_matmul(c, ag_transpose(c, pr, -1, -2), go));
    int need_mask = c->n_in > 3 && c->need[3];
    if (c->need[0] || c->need[1] || need_mask) {
        wgt_tensor *dp = ag_matmul(c, go, ag_transpose(c, v, -1, -2));
        /* the gradient of the scores s = scale q k^T + mask: an additive mask's gradient itself */
        wgt_tensor *dsm = ag_mul(c, pr, ag_sub(c, dp, ag_sum_keep(c, ag_mul(c, dp, pr), -1)));
        if (need_mask) ag_set(c, 3, ag_sum_to(c, ag_reshape(c, dsm, 4, full), &c->in_l[3]));
        wgt_tensor *ds = c->need[0] || c->need[1] ? ag_muls(c, dsm, scale) : NULL;
        if (c->need[0]) ag_set(c, 0, ag_reshape_as(c, ag_matmul(c, ds, k), ql));
        if (c->need[1]) ag_set(c, 1, ag_matmul(c, ag_transpose(c, ds, -1, -2), q));
    }
    return c->st;
}
