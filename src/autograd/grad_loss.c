/* Backward formulas of the losses (src/ops/loss.c). A loss's gradient is its per-element
 * derivative times the output's gradient, spread by the reduction: as is for NONE, the scalar g
 * for SUM, g / count for MEAN (cross-entropy and nll: g / the summed weight of the kept targets),
 * g / input.shape[0] for BATCHMEAN. */
#include "autograd/autograd.h"
#include "core/error.h"
#include "ops/ops.h"

static wgt_status not_differentiable(ag_call *c, const char *what)
{
    return wgt_ctx_error(c->ctx, WGT_ERR_UNSUPPORTED, "wgt_backward: %s has no gradient here", what);
}

/* g spread over n elements by the reduction (NONE: g itself, elementwise). */
static wgt_tensor *spread(ag_call *c, wgt_reduction red, int64_t n, int64_t batch)
{
    if (red == WGT_REDUCTION_MEAN) return ag_muls(c, c->g, 1.0 / (double)n);
    if (red == WGT_REDUCTION_BATCHMEAN) return ag_muls(c, c->g, 1.0 / (double)batch);
    return (wgt_tensor *)c->g;
}

/* Pointwise losses: d = the per-element derivative by input (dt by target, may be NULL). */
static wgt_status pointwise(ag_call *c, wgt_tensor *d, wgt_tensor *dt)
{
    const op_grad_loss *p = c->params;
    int64_t n = d ? wgt_tensor_numel(d) : 1, batch = c->in_l[0].ndim ? c->in_l[0].shape[0] : 1;
    wgt_tensor *g = spread(c, p->reduction, n, batch);
    if (c->need[0]) ag_set(c, 0, ag_sum_to(c, ag_mul(c, d, g), &c->in_l[0]));
    if (c->need[1]) {
        if (!dt && !c->st) return not_differentiable(c, "this loss's target");
        ag_set(c, 1, ag_sum_to(c, ag_mul(c, dt, g), &c->in_l[1]));
    }
    return c->st;
}

wgt_status ag_grad_mse(ag_call *c)
{
    wgt_tensor *d = ag_muls(c, ag_sub(c, ag_f32(c, c->in[0]), ag_f32(c, c->in[1])), 2);
    return pointwise(c, d, ag_muls(c, d, -1));
}

wgt_status ag_grad_l1(ag_call *c)
{
    wgt_tensor *d = ag_un(c, WGT_UNARY_SIGN, ag_sub(c, ag_f32(c, c->in[0]), ag_f32(c, c->in[1])));
    return pointwise(c, d, ag_muls(c, d, -1));
}

wgt_status ag_grad_smooth_l1(ag_call *c)
{
    /* |d| < beta: d / beta; else sign(d) */
    double beta = ((const op_grad_loss *)c->params)->smoothing;
    wgt_tensor *diff = ag_sub(c, ag_f32(c, c->in[0]), ag_f32(c, c->in[1])), *d = ag_un(c, WGT_UNARY_SIGN, diff);
    if (beta > 0)
        d = ag_where(c, ag_bin(c, WGT_BINARY_LT, ag_un(c, WGT_UNARY_ABS, diff), ag_scalar(c, beta)),
                     ag_muls(c, diff, 1 / beta), d);
    return pointwise(c, d, ag_muls(c, d, -1));
}

wgt_status ag_grad_bce(ag_call *c)
{
    /* -w (t log x + (1 - t) log(1 - x)): dx = w (x - t) / max(x (1 - x), 1e-12) (PyTorch's clamp),
     * dt = -w (log x - log(1 - x)) with each log clamped at -100 */
    wgt_tensor *x = ag_f32(c, c->in[0]), *t = ag_f32(c, c->in[1]), *w = c->in[2] ? ag_f32(c, c->in[2]) : NULL;
    wgt_tensor *one_minus = ag_sub(c, ag_scalar(c, 1), x);
    wgt_tensor *den = ag_bin(c, WGT_BINARY_MAXIMUM, ag_mul(c, x, one_minus), ag_scalar(c, 1e-12));
    wgt_tensor *d = ag_div(c, ag_sub(c, x, t), den), *dt = NULL;
    if (c->need[1]) {
        wgt_tensor *m100 = ag_scalar(c, -100);
        dt = ag_sub(c, ag_bin(c, WGT_BINARY_MAXIMUM, ag_un(c, WGT_UNARY_LOG, one_minus), m100),
                    ag_bin(c, WGT_BINARY_MAXIMUM, ag_un(c, WGT_UNARY_LOG, x), m100));
    }
    if (w) d = ag_mul(c, d, w), dt = dt ? ag_mul(c, dt, w) : NULL;
    /* PyTorch's derivatives.yaml gives binary_cross_entropy formulas for self and target only:
     * torch refuses a weight that requires grad, and so does this rule */
    if (c->need[2]) return not_differentiable(c, "binary_cross_entropy's weight (none in PyTorch either)");
    return pointwise(c, d, dt);
}

wgt_status ag_grad_bce_logits(ag_call *c)
{
    /* -w (pw t logsig(x) + (1 - t) logsig(-x)): dx = w (sig(x) (1 - t + pw t) - pw t),
     * dt = -w (pw logsig(x) - logsig(-x)) */
    wgt_tensor *x = ag_f32(c, c->in[0]), *t = ag_f32(c, c->in[1]);
    wgt_tensor *w = c->in[2] ? ag_f32(c, c->in[2]) : NULL, *pw = c->in[3] ? ag_f32(c, c->in[3]) : NULL;
    wgt_tensor *pwt = pw ? ag_mul(c, pw, t) : t, *s = ag_un(c, WGT_UNARY_SIGMOID, x);
    wgt_tensor *d = ag_sub(c, ag_mul(c, s, ag_add(c, ag_sub(c, ag_scalar(c, 1), t), pwt)), pwt), *dt = NULL;
    if (c->need[1]) { /* logsig(x) = -softplus(-x), logsig(-x) = -softplus(x) */
        wgt_tensor *ls_pos = ag_muls(c, ag_un(c, WGT_UNARY_SOFTPLUS, ag_muls(c, x, -1)), -1);
        wgt_tensor *ls_neg = ag_muls(c, ag_un(c, WGT_UNARY_SOFTPLUS, x), -1);
        dt = ag_muls(c, ag_sub(c, pw ? ag_mul(c, pw, ls_pos) : ls_pos, ls_neg), -1);
    }
    if (w) d = ag_mul(c, d, w), dt = dt ? ag_mul(c, dt, w) : NULL;
    if (c->need[2] || c->need[3]) return not_differentiable(c, "binary_cross_entropy_with_logits' weights");
    return pointwise(c, d, dt);
}

wgt_status ag_grad_kl_div(ag_call *c)
{
    /* log_target 0: t (log t - x), 0 where t = 0: dx = -t, dt = log t - x + 1 (t > 0)
     * log_target 1: exp(t) (t - x): dx = -exp(t), dt = exp(t) (t - x + 1) */
    const op_grad_loss *p = c->params;
    wgt_tensor *x = ag_f32(c, c->in[0]), *t = ag_f32(c, c->in[1]), *d, *dt = NULL;
    if (p->log_target) {
        wgt_tensor *et = ag_un(c, WGT_UNARY_EXP, t);
        d = ag_muls(c, et, -1);
        if (c->need[1]) dt = ag_mul(c, et, ag_adds(c, ag_sub(c, t, x), 1));
    } else {
        d = ag_muls(c, t, -1);
        if (c->need[1])
            dt = ag_where(c, ag_bin(c, WGT_BINARY_GT, t, ag_scalar(c, 0)),
                          ag_adds(c, ag_sub(c, ag_un(c, WGT_UNARY_LOG, t), x), 1), ag_scalar(c, 0));
    }
    return pointwise(c, d, dt);
}

/* ---- cross-entropy and nll over a class dim --------------------------------------------------- */

/* shape [1, C, 1...] (class dim cd of an n-dim input) for broadcasting class weights */
static wgt_tensor *along_classes(ag_call *c, const wgt_tensor *w, int n, int cd)
{
    int64_t s[WGT_MAX_DIMS];
    for (int d = 0; d < n; d++) s[d] = d == cd ? -1 : 1;
    return ag_reshape(c, w, n, s);
}

/* Class-index targets without a one-hot: valid mask m, safe targets ts (0 where ignored), w_t (the
 * class weight of each target, 1 without weights) and the per-sample factor a = m g' (g' by the
 * reduction). The vocabulary-sized work is softmax(x) times a per-sample factor (cross-entropy)
 * or zeros (nll), then one scatter_add of -a (1 - eps) w_t (nll: -a w_t) at each sample's target:
 * cross-entropy's dx = a (p [(1-eps) w_t + eps/C W] - (1-eps) w_t onehot - eps/C w_c), W the sum of
 * the weights (C without); without weights the first factor is a and the uniform part a eps/C, one
 * per-sample value subtracted in the same pass. The scatter adds one value per row (so its result
 * does not depend on the order of atomics) into that fresh tensor, without a copy. */
static wgt_status ce_indices(ag_call *c, int nll)
{
    const op_grad_loss *p = c->params;
    const wgt_layout *xl = &c->in_l[0];
    int n = xl->ndim, cd = n == 1 ? 0 : 1;
    int64_t C = xl->shape[cd];
    const wgt_tensor *t = c->in[1], *wc = c->n_in > 2 ? c->in[2] : NULL;
    if (c->need[1]) return not_differentiable(c, "a class-index target");
    if (wc && c->need[2]) return not_differentiable(c, "a class weight");
    wgt_tensor *ign = NULL, *r = NULL;
    if (!c->st) ign = ag_keep(c, r, wgt_full(c->ctx, WGT_I64, 0, NULL, (double)p->ignore_index, &r));
    /* WGT_NO_IGNORE_INDEX matches nothing: keep every target */
    wgt_tensor *valid = p->ignore_index == WGT_NO_IGNORE_INDEX ? ag_bin(c, WGT_BINARY_GE, t, ag_scalar(c, -1e300))
                                                                : ag_bin(c, WGT_BINARY_NE, t, ign);
    wgt_tensor *m = ag_cast(c, valid, WGT_F32);
    wgt_tensor *zero_i = NULL;
    r = NULL;
    if (!c->st) zero_i = ag_keep(c, r, wgt_tensor_zeros(c->ctx, WGT_I32, 0, NULL, &r));
    wgt_tensor *ts = ag_where(c, valid, t, zero_i);
    wgt_tensor *wt = NULL;
    if (wc) { /* weight[t] via an embedding of the [C, 1] weight */
        int64_t s2[2] = {C, 1};
        r = NULL;
        wgt_tensor *w2 = ag_reshape(c, ag_f32(c, wc), 2, s2);
        if (!c->st && w2) wt = ag_reshape_as(c, ag_keep(c, r, wgt_embedding(w2, ts, WGT_F32, &r)), &c->in_l[1]);
    }
    wgt_tensor *mw = wt ? ag_mul(c, m, wt) : m; /* m w_t */
    wgt_tensor *g = (wgt_tensor *)c->g;
    if (p->reduction == WGT_REDUCTION_MEAN) g = ag_div(c, g, ag_reduce(c, WGT_REDUCE_SUM, mw, 0, 0));
    wgt_tensor *a = ag_unsqueeze(c, ag_mul(c, m, g), cd); /* per sample, broadcast over classes */
    wgt_tensor *wt_u = wt ? ag_unsqueeze(c, wt, cd) : NULL;
    double eps = nll ? 0.0 : p->smoothing;
    wgt_tensor *base; /* everything but the target's term */
    if (nll) {
        base = ag_zeros(c, n, xl->shape);
    } else {
        r = NULL;
        wgt_tensor *sm = NULL;
        if (!c->st) sm = ag_keep(c, r, wgt_softmax(ag_f32(c, c->in[0]), cd, &r));
        if (!wc) { /* a (p - eps/C) */
            /* every row counts (no ignore_index) and the loss is reduced: a is one value for every
             * row, a 0-d factor (elementwise's contiguous path; a per-row [N, 1] factor takes its
             * general broadcasting kernel, about ten times slower per element on lavapipe) */
            wgt_tensor *f = a;
            if (p->ignore_index == WGT_NO_IGNORE_INDEX && p->reduction != WGT_REDUCTION_NONE) f = g;
            base = eps > 0 ? ag_mul(c, ag_adds(c, sm, -eps / (double)C), f) : ag_mul(c, sm, f);
        } else { /* a p [(1-eps) w_t + eps/C W] - a eps/C w_c */
            wgt_tensor *pcoef = ag_muls(c, wt_u, 1 - eps);
            if (eps > 0)
                pcoef = ag_add(c, pcoef, ag_muls(c, ag_reduce(c, WGT_REDUCE_SUM, ag_f32(c, wc), 0, 0), eps / (double)C));
            base = ag_mul(c, sm, ag_mul(c, a, pcoef));
            if (eps > 0)
                base = ag_sub(c, base, ag_mul(c, ag_muls(c, a, eps / (double)C), along_classes(c, ag_f32(c, wc), n, cd)));
        }
    }
    /* -a (1 - eps) w_t at each target */
    wgt_tensor *tv = ag_muls(c, wt_u ? ag_mul(c, a, wt_u) : a, -(1 - eps));
    wgt_tensor *ti = ag_unsqueeze(c, ts, cd); /* [N, 1, ...] (a [C] input's 0-d target: [1]) */
    /* base is this call's fresh contiguous temporary: add into it rather than into a copy */
    if (!c->st && base && ti && tv) {
        wgt_status st = op_scatter_add_inplace(base, cd, ti, tv);
        if (st) return c->st = st;
        ag_set(c, 0, base);
    }
    return c->st;
}

/* Probability targets: l = -sum_c w_c q_c log p_c with q = (1 - eps) t + eps / C;
 * dx = p sum_c(w_c q_c) - w q; dt = -(1 - eps) w log p; dw_c = -sum over samples of q_c log p_c
 * (PyTorch's composite cross_entropy: all three differentiable); MEAN divides by the number of
 * samples. */
static wgt_status ce_probabilities(ag_call *c)
{
    const op_grad_loss *p = c->params;
    const wgt_layout *xl = &c->in_l[0];
    int n = xl->ndim, cd = n == 1 ? 0 : 1;
    int64_t C = xl->shape[cd], samples = wgt_layout_numel(xl) / (C ? C : 1);
    const wgt_tensor *wc = c->n_in > 2 ? c->in[2] : NULL;
    wgt_tensor *q = ag_adds(c, ag_muls(c, ag_f32(c, c->in[1]), 1 - p->smoothing), p->smoothing / (double)C);
    wgt_tensor *wcl = wc ? along_classes(c, ag_f32(c, wc), n, cd) : NULL;
    wgt_tensor *wq = wcl ? ag_mul(c, q, wcl) : q;
    wgt_tensor *g = (wgt_tensor *)c->g;
    if (p->reduction == WGT_REDUCTION_MEAN) g = ag_muls(c, g, 1.0 / (double)samples);
    else if (p->reduction == WGT_REDUCTION_NONE) g = ag_unsqueeze(c, g, cd);
    if (c->need[0]) {
        wgt_tensor *r = NULL, *sm = NULL;
        if (!c->st) sm = ag_keep(c, r, wgt_softmax(ag_f32(c, c->in[0]), cd, &r));
        wgt_tensor *d = ag_sub(c, ag_mul(c, sm, ag_sum_keep(c, wq, cd)), wq);
        ag_set(c, 0, ag_mul(c, d, g));
    }
    if (c->need[1] || (wc && c->need[2])) {
        wgt_tensor *r = NULL, *lp = NULL, *mg = ag_muls(c, g, -1); /* -g' log p */
        if (!c->st) lp = ag_keep(c, r, wgt_log_softmax(ag_f32(c, c->in[0]), cd, &r));
        wgt_tensor *glp = ag_mul(c, lp, mg);
        if (c->need[1]) {
            wgt_tensor *dt = ag_muls(c, glp, 1 - p->smoothing);
            ag_set(c, 1, ag_sum_to(c, wcl ? ag_mul(c, dt, wcl) : dt, &c->in_l[1]));
        }
        if (wc && c->need[2]) {
            uint32_t dims = ((1u << n) - 1) & ~(1u << cd);
            wgt_tensor *qg = ag_mul(c, q, glp);
            ag_set(c, 2, dims ? ag_reduce(c, WGT_REDUCE_SUM, qg, dims, 0) : qg);
        }
    }
    return c->st;
}

wgt_status ag_grad_cross_entropy(ag_call *c)
{
    return op_is_float(c->in_l[1].dtype) ? ce_probabilities(c) : ce_indices(c, 0);
}

wgt_status ag_grad_nll(ag_call *c) { return ce_indices(c, 1); }

/* huber = delta * smooth_l1 with beta = delta: d for |d| <= delta, else delta sign(d) */
wgt_status ag_grad_huber(ag_call *c)
{
    double delta = ((const op_grad_loss *)c->params)->smoothing;
    wgt_tensor *diff = ag_sub(c, ag_f32(c, c->in[0]), ag_f32(c, c->in[1]));
    wgt_tensor *d = ag_where(c, ag_bin(c, WGT_BINARY_LE, ag_un(c, WGT_UNARY_ABS, diff), ag_scalar(c, delta)), diff,
                             ag_muls(c, ag_un(c, WGT_UNARY_SIGN, diff), delta));
    return pointwise(c, d, ag_muls(c, d, -1));
}

/* cosine_similarity: out = s / (c1 c2), s = sum(a b), ci = max(|xi|, eps) along dim of the
 * broadcast shape. da = (b - a s / c1^2 [|a| > eps]) / (c1 c2) (the clamped norm is a constant
 * below eps), db likewise; summed back over broadcast dims. */
wgt_status ag_grad_cosine_similarity(ag_call *c)
{
    const op_grad_cosine *p = c->params;
    const wgt_layout *l0 = &c->in_l[0], *l1 = &c->in_l[1];
    wgt_layout B = *l0;
    B.ndim = l0->ndim > l1->ndim ? l0->ndim : l1->ndim;
    for (int d = 0; d < B.ndim; d++) {
        int i0 = d - (B.ndim - l0->ndim), i1 = d - (B.ndim - l1->ndim);
        int64_t s0 = i0 >= 0 ? l0->shape[i0] : 1, s1 = i1 >= 0 ? l1->shape[i1] : 1;
        B.shape[d] = s0 == 1 ? s1 : s0;
    }
    wgt_tensor *x[2] = {ag_expand_as(c, ag_f32(c, c->in[0]), &B), ag_expand_as(c, ag_f32(c, c->in[1]), &B)};
    uint32_t dims = 1u << p->dim;
    wgt_tensor *eps = ag_scalar(c, p->eps), *n[2], *cl[2];
    for (int i = 0; i < 2; i++) {
        n[i] = ag_reduce(c, WGT_REDUCE_NORM2, x[i], dims, 1);
        cl[i] = ag_bin(c, WGT_BINARY_MAXIMUM, n[i], eps);
    }
    wgt_tensor *s = ag_reduce(c, WGT_REDUCE_SUM, ag_mul(c, x[0], x[1]), dims, 1);
    wgt_tensor *w = ag_div(c, ag_unsqueeze(c, c->g, p->dim), ag_mul(c, cl[0], cl[1]));
    for (int i = 0; i < 2; i++) {
        if (!c->need[i]) continue;
        wgt_tensor *k = ag_where(c, ag_bin(c, WGT_BINARY_GT, n[i], eps), ag_div(c, s, ag_mul(c, cl[i], cl[i])),
                                 ag_scalar(c, 0));
        wgt_tensor *d = ag_mul(c, w, ag_sub(c, x[1 - i], ag_mul(c, x[i], k)));
        ag_set(c, i, ag_sum_to(c, d, &c->in_l[i]));
    }
    return c->st;
}
