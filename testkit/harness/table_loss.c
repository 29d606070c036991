/* Harness entries for the losses and misc ops (src/ops/loss.c, misc.c): each loss over its
 * reductions (variants), class indices as fixed i32 inputs, logits and elementwise inputs in the
 * case's layouts; the misc ops over every dtype. */
#include <math.h>
#include <string.h>

#include "harness/harness.h"
#include "ops/api.h"
#include "ops/ops.h"

#define DIMS(...) (int64_t[]){__VA_ARGS__}

static void set(hx_input *in, wgt_dtype dt, int ndim, const int64_t *shape, hx_dom dom)
{
    in->dtype = dt;
    in->ndim = ndim;
    for (int d = 0; d < ndim; d++) in->shape[d] = shape[d];
    in->dom = dom;
}

static void fixed(hx_input *in, wgt_dtype dt, int ndim, const int64_t *shape, hx_dom dom)
{
    set(in, dt, ndim, shape, dom);
    in->fixed_layout = 1;
}

static const hx_dom logit = {-4, 4, 0, 0}, prob = {0.02, 0.98, 0, 0}, pos = {0.5, 2, 0, 0};

/* ---- cross_entropy, nll_loss: x [N, C, (d)], target [N, (d)] in [0, C), weight [C] ---------- */

int setup_classes(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    int64_t C;
    switch (c) {
    case HX_CONTIGUOUS: case HX_STRIDED: case HX_BROADCAST: case HX_SPECIAL:
        C = 37, set(&in[0], dt, 3, DIMS(6, 37, 5), logit), fixed(&in[1], WGT_I32, 2, DIMS(6, 5), logit); break;
    case HX_EMPTY: C = 5, set(&in[0], dt, 2, DIMS(0, 5), logit), fixed(&in[1], WGT_I32, 1, DIMS(0), logit); break;
    case HX_ODD1: C = 1, set(&in[0], dt, 2, DIMS(1, 1), logit), fixed(&in[1], WGT_I32, 1, DIMS(1), logit); break;
    case HX_ODD7: C = 7, set(&in[0], dt, 1, DIMS(7), logit), fixed(&in[1], WGT_I32, 0, NULL, logit); break;
    case HX_ODD_LARGE: C = 151936, set(&in[0], dt, 2, DIMS(3, 151936), logit), fixed(&in[1], WGT_I32, 1, DIMS(3), logit); break;
    case HX_BIG: C = 16385, set(&in[0], dt, 2, DIMS(2049, 16385), logit), fixed(&in[1], WGT_I32, 1, DIMS(2049), logit); break;
    default: return 0;
    }
    in[1].index_bound = (int)C;
    fixed(&in[2], dt, 1, &C, pos);
    return 3;
}

/* Variants: mean; none with weight and smoothing 0.1; sum, ignoring class 1 */
wgt_status call_cross_entropy(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    wgt_reduction red = v == 0 ? WGT_REDUCTION_MEAN : v == 1 ? WGT_REDUCTION_NONE : WGT_REDUCTION_SUM;
    return wgt_cross_entropy(in[0], in[1], v == 1 ? in[2] : NULL, v == 2 ? 1 : -100, v == 1 ? 0.1 : 0, red, out);
}

/* nll_loss: the same variants, no smoothing */
wgt_status call_nll_loss(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    wgt_reduction red = v == 0 ? WGT_REDUCTION_MEAN : v == 1 ? WGT_REDUCTION_NONE : WGT_REDUCTION_SUM;
    return wgt_nll_loss(in[0], in[1], v == 1 ? in[2] : NULL, v == 2 ? 1 : -100, red, out);
}

/* probabilities: target of x's shape in [0, 1] */
int setup_loss_probs(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    switch (c) {
    case HX_CONTIGUOUS: case HX_STRIDED: case HX_BROADCAST: case HX_SPECIAL: set(&in[0], dt, 3, DIMS(6, 37, 5), logit); break;
    case HX_EMPTY: set(&in[0], dt, 2, DIMS(0, 5), logit); break;
    case HX_ODD7: set(&in[0], dt, 1, DIMS(7), logit); break;
    default: return 0;
    }
    set(&in[1], dt, in[0].ndim, in[0].shape, prob);
    fixed(&in[2], dt, 1, &in[0].shape[in[0].ndim == 1 ? 0 : 1], pos);
    return 3;
}

wgt_status call_probs(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    wgt_reduction red = v == 0 ? WGT_REDUCTION_MEAN : v == 1 ? WGT_REDUCTION_NONE : WGT_REDUCTION_SUM;
    return wgt_cross_entropy(in[0], in[1], v == 1 ? in[2] : NULL, -100, v == 2 ? 0.2 : 0, red, out);
}

/* ---- elementwise losses: x and target of the case's shape (broadcast: target [last dim]) ----- */

int setup_pointwise(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    in[0].dtype = dt;
    hx_case_shape(c, &in[0]);
    in[1] = in[0];
    if (c == HX_BROADCAST) in[1].ndim = 1, in[1].shape[0] = in[0].shape[1];
    int bce = op->code == WGT_CPU_LOSS_BCE, kl = op->code == WGT_CPU_LOSS_KL_DIV;
    in[0].dom = bce ? prob : kl ? (hx_dom){-5, -0.01, 0, 0} : logit;
    in[1].dom = bce || kl || op->code == WGT_CPU_LOSS_BCE_LOGITS ? (hx_dom){0, 1, 0, 0} : logit;
    /* weight and pos_weight: the last dim (or a scalar), fixed */
    int64_t last = in[0].ndim ? in[0].shape[in[0].ndim - 1] : 1;
    fixed(&in[2], dt, in[0].ndim ? 1 : 0, &last, pos);
    fixed(&in[3], dt, in[0].ndim ? 1 : 0, &last, pos);
    return 4;
}

wgt_status call_pointwise(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    wgt_reduction red = (wgt_reduction)(v % 3);
    switch (op->code) {
    case WGT_CPU_LOSS_MSE: return wgt_mse_loss(in[0], in[1], red, out);
    case WGT_CPU_LOSS_L1: return wgt_l1_loss(in[0], in[1], red, out);
    case WGT_CPU_LOSS_SMOOTH_L1: return wgt_smooth_l1_loss(in[0], in[1], red, v < 3 ? 1.0 : 0.0, out);
    case WGT_CPU_LOSS_HUBER: return wgt_huber_loss(in[0], in[1], red, v < 3 ? 1.0 : 2.5, out);
    case WGT_CPU_LOSS_BCE: return wgt_binary_cross_entropy(in[0], in[1], v < 3 ? NULL : in[2], red, out);
    case WGT_CPU_LOSS_BCE_LOGITS:
        return wgt_binary_cross_entropy_with_logits(in[0], in[1], v < 3 ? NULL : in[2], v < 3 ? NULL : in[3], red, out);
    default: return v == 3 ? wgt_kl_div(in[0], in[1], WGT_REDUCTION_BATCHMEAN, 0, out) : wgt_kl_div(in[0], in[1], red, v == 4, out);
    }
}

wgt_status call_cosine(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_cosine_similarity(in[0], in[1], v ? 0 : -1, 1e-8, out);
}

int setup_cosine(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    if (c == HX_SCALAR || c == HX_BIG) return 0;
    return setup_pointwise(op, c, dt, in) ? 2 : 0;
}

/* ---- misc ------------------------------------------------------------------------------------- */

/* x [5, 7] (2-D cases), [7] / [1] (1-D), [4, 0] empty. */
int setup_matrix(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    in[0].dtype = dt;
    in[0].dom = (hx_dom){-20, 20, 0, 0};
    switch (c) {
    case HX_CONTIGUOUS: case HX_STRIDED: case HX_BROADCAST: case HX_SPECIAL: set(&in[0], dt, 2, DIMS(5, 7), in[0].dom); break;
    case HX_EMPTY: set(&in[0], dt, 2, DIMS(4, 0), in[0].dom); break;
    case HX_ODD1: set(&in[0], dt, 1, DIMS(1), in[0].dom); break;
    case HX_ODD7: set(&in[0], dt, 1, DIMS(7), in[0].dom); break;
    default: return 0;
    }
    return 1;
}

wgt_status call_diff(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_diff(in[0], v + 1, -1, NULL, NULL, out);
}

wgt_status call_trace(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_trace(in[0], out);
}

static const int64_t diag_k[3] = {0, 2, -3};

wgt_status call_diag(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_diag(in[0], diag_k[v], out);
}

wgt_status call_diag_embed(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_diag_embed(in[0], diag_k[v], v == 1 ? 0 : -2, -1, out);
}

int setup_cdist(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    switch (c) {
    case HX_CONTIGUOUS: case HX_STRIDED: case HX_SPECIAL: set(&in[0], dt, 3, DIMS(2, 9, 5), logit), set(&in[1], dt, 2, DIMS(11, 5), logit); break;
    case HX_BROADCAST: set(&in[0], dt, 3, DIMS(3, 4, 6), logit), set(&in[1], dt, 3, DIMS(3, 40, 6), logit); break;
    case HX_EMPTY: set(&in[0], dt, 2, DIMS(0, 5), logit), set(&in[1], dt, 2, DIMS(7, 5), logit); break;
    case HX_ODD1: set(&in[0], dt, 2, DIMS(1, 1), logit), set(&in[1], dt, 2, DIMS(1, 1), logit); break;
    default: return 0;
    }
    return 2;
}

/* p = 2 (the product when P or R > 25), 1, inf, 0, 3 */
wgt_status call_cdist(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    static const double p[5] = {2, 1, INFINITY, 0, 3};
    return wgt_cdist(in[0], in[1], p[v], WGT_CDIST_MM_IF_NECESSARY, out);
}
