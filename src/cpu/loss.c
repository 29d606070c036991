/* Losses: cross_entropy / nll_loss (class indices or probabilities, weight, ignore_index, label
 * smoothing), the elementwise losses (mse, l1, smooth_l1, huber, bce, bce with logits, kl_div) and
 * cosine_similarity. Written from PyTorch's definitions (aten/src/ATen/native/Loss*.cpp), in
 * double, one row at a time: log-softmax through max and the log of the sum of exponentials. */
#include "cpu/cpu_internal.h"

#include <math.h>

/* Store a reduced value into a 0-D out, or report a misfit. */
static wgt_status store_scalar(const char *op, const wgt_cpu_tensor *out, double v)
{
    if (wgt_layout_numel(&out->l) != 1 || out->l.ndim != 0)
        return wgt_error(WGT_ERR_SHAPE, "cpu: %s: a reduced loss needs a 0-D output", op);
    wgt_cpu_store_f(out, out->l.offset, v);
    return WGT_OK;
}

wgt_status wgt_cpu_cross_entropy(const wgt_cpu_tensor *x, const wgt_cpu_tensor *target,
                                 const wgt_cpu_tensor *weight, int64_t ignore_index,
                                 double label_smoothing, int log_input, wgt_reduction reduction,
                                 const wgt_cpu_tensor *out)
{
    const char *op = log_input ? "nll_loss" : "cross_entropy";
    CPU_CHECK(x, op);
    CPU_CHECK(target, op);
    CPU_CHECK(out, op);
    if (reduction < WGT_REDUCTION_NONE || reduction > WGT_REDUCTION_SUM)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: %s: reduction must be none, mean or sum", op);
    int nd = x->l.ndim;
    if (nd < 1) return wgt_error(WGT_ERR_SHAPE, "cpu: %s: input must be [C] or [N, C, ...]", op);
    int cdim = nd == 1 ? 0 : 1;
    int64_t C = x->l.shape[cdim];
    int probs = wgt_cpu_is_float(target->l.dtype);
    if (probs && log_input) return wgt_error(WGT_ERR_DTYPE, "cpu: nll_loss: target must hold class indices");
    /* rows: x's layout without the class dim; the target's layout over the same rows */
    wgt_layout rx = x->l, rt = target->l;
    rx.ndim = nd - 1;
    for (int d = cdim; d < nd - 1; d++) rx.shape[d] = x->l.shape[d + 1], rx.strides[d] = x->l.strides[d + 1];
    int64_t cs = x->l.strides[cdim], ts = 0;
    if (probs) {
        if (!cpu_same_shape(&x->l, &target->l))
            return wgt_error(WGT_ERR_SHAPE, "cpu: %s: probabilities must have the input's shape", op);
        ts = target->l.strides[cdim];
        rt.ndim = nd - 1;
        for (int d = cdim; d < nd - 1; d++) rt.shape[d] = target->l.shape[d + 1], rt.strides[d] = target->l.strides[d + 1];
    } else if (!cpu_same_shape(&rx, &target->l))
        return wgt_error(WGT_ERR_SHAPE, "cpu: %s: target must have the input's shape without the class dim", op);
    if (weight) {
        CPU_CHECK(weight, op);
        if (weight->l.ndim != 1 || weight->l.shape[0] != C)
            return wgt_error(WGT_ERR_SHAPE, "cpu: %s: weight must be [C] = [%lld]", op, (long long)C);
    }
    int64_t rows = wgt_layout_numel(&rx);
    if (reduction == WGT_REDUCTION_NONE) {
        if (!cpu_same_shape(&out->l, &rx))
            return wgt_error(WGT_ERR_SHAPE, "cpu: %s: the unreduced output must have the target's shape", op);
    } else if (out->l.ndim != 0)
        return wgt_error(WGT_ERR_SHAPE, "cpu: %s: a reduced loss needs a 0-D output", op);
    double total = 0, wtotal = 0, ls = label_smoothing;
    for (int64_t r = 0; r < rows; r++) {
        int64_t bx = wgt_layout_index(&rx, r), bt = wgt_layout_index(&rt, r);
        double lse = 0;
        if (!log_input) { /* log-sum-exp of the row; NaN anywhere gives NaN */
            double m = -INFINITY, s = 0;
            for (int64_t c = 0; c < C; c++) {
                double v = wgt_cpu_load_f(x, bx + c * cs);
                if (v > m || isnan(v)) m = v;
            }
            if (isinf(m) && m < 0) lse = -INFINITY;
            else {
                for (int64_t c = 0; c < C; c++) s += exp(wgt_cpu_load_f(x, bx + c * cs) - m);
                lse = m + log(s);
            }
        }
        double loss = 0, wrow = 0;
        if (probs) { /* -sum_c w_c t'_c logp_c, t' = t (1 - ls) + ls / C */
            for (int64_t c = 0; c < C; c++) {
                double t = wgt_cpu_load_f(target, bt + c * ts) * (1 - ls) + ls / (double)C;
                double w = weight ? wgt_cpu_load_f(weight, cpu_at(weight, c)) : 1;
                loss -= w * t * (wgt_cpu_load_f(x, bx + c * cs) - lse);
            }
            wrow = 1;
        } else {
            int64_t t = wgt_cpu_load_i(target, bt);
            if (t != ignore_index) {
                if (t < 0 || t >= C)
                    return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: %s: target %lld out of range [0, %lld)", op,
                                     (long long)t, (long long)C);
                wrow = weight ? wgt_cpu_load_f(weight, cpu_at(weight, t)) : 1;
                loss = -wrow * (wgt_cpu_load_f(x, bx + t * cs) - lse);
                if (ls > 0) { /* PyTorch: (1 - ls) nll + ls / C * (-sum_c w_c logp_c) */
                    double smooth = 0;
                    for (int64_t c = 0; c < C; c++)
                        smooth -= (weight ? wgt_cpu_load_f(weight, cpu_at(weight, c)) : 1) *
                                  (wgt_cpu_load_f(x, bx + c * cs) - lse);
                    loss = (1 - ls) * loss + ls / (double)C * smooth;
                }
            }
        }
        if (reduction == WGT_REDUCTION_NONE) wgt_cpu_store_f(out, cpu_at(out, r), loss);
        total += loss, wtotal += wrow;
    }
    if (reduction == WGT_REDUCTION_NONE) return WGT_OK;
    return store_scalar(op, out, reduction == WGT_REDUCTION_SUM ? total : total / wtotal);
}

/* log(sigmoid(v)) without overflow. */
static double log_sigmoid(double v) { return fmin(v, 0) - log1p(exp(-fabs(v))); }

static double pointwise(wgt_cpu_loss kind, double x, double t, double w, double pw, double param)
{
    double d = x - t, a = fabs(d);
    switch (kind) {
    case WGT_CPU_LOSS_MSE: return d * d;
    case WGT_CPU_LOSS_L1: return a;
    case WGT_CPU_LOSS_SMOOTH_L1:
        if (param == 0) return a;
        return a < param ? 0.5 * d * d / param : a - 0.5 * param;
    case WGT_CPU_LOSS_HUBER: return a <= param ? 0.5 * d * d : param * (a - 0.5 * param);
    case WGT_CPU_LOSS_BCE: return -w * (t * fmax(log(x), -100) + (1 - t) * fmax(log1p(-x), -100));
    case WGT_CPU_LOSS_BCE_LOGITS: {
        /* PyTorch: (1 - t) x - (1 + (pw - 1) t) log_sigmoid(x) */
        double lw = (pw - 1) * t + 1;
        return w * ((1 - t) * x - lw * log_sigmoid(x));
    }
    case WGT_CPU_LOSS_KL_DIV:
        if (param != 0) return exp(t) * (t - x);
        if (t == 0) return 0 * x; /* xlogy(0, 0) = 0; NaN input still propagates */
        return t * (log(t) - x);
    default: return NAN;
    }
}

wgt_status wgt_cpu_pointwise_loss(wgt_cpu_loss kind, const wgt_cpu_tensor *x, const wgt_cpu_tensor *target,
                                  const wgt_cpu_tensor *aux, const wgt_cpu_tensor *aux2, double param,
                                  wgt_reduction reduction, const wgt_cpu_tensor *out)
{
    const char *op = "pointwise loss";
    CPU_CHECK(x, op);
    CPU_CHECK(target, op);
    CPU_CHECK(out, op);
    if ((unsigned)kind >= WGT_CPU_LOSS_COUNT) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: unknown loss %d", kind);
    if (reduction == WGT_REDUCTION_BATCHMEAN && kind != WGT_CPU_LOSS_KL_DIV)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: batchmean is kl_div's reduction only");
    /* the broadcast shape of x and target */
    int nd = x->l.ndim > target->l.ndim ? x->l.ndim : target->l.ndim;
    int64_t shape[WGT_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        int dx = d - (nd - x->l.ndim), dt = d - (nd - target->l.ndim);
        int64_t a = dx >= 0 ? x->l.shape[dx] : 1, b = dt >= 0 ? target->l.shape[dt] : 1;
        if (a != b && a != 1 && b != 1)
            return wgt_error(WGT_ERR_SHAPE, "cpu: loss: input and target do not broadcast (dim %d: %lld vs %lld)", d,
                             (long long)a, (long long)b);
        shape[d] = a == 1 ? b : a;
    }
    wgt_cpu_tensor full = {NULL, {0}}, xb, tb, ab, a2b;
    full.l = wgt_cpu_tensor_make(NULL, WGT_F32, nd, shape).l;
    full.data = out->data; /* only its layout is used for broadcasting */
    CPU_TRY(cpu_broadcast_view(x, &full, "loss input", &xb));
    CPU_TRY(cpu_broadcast_view(target, &full, "loss target", &tb));
    if (aux) CPU_TRY(cpu_broadcast_view(aux, &full, "loss weight", &ab));
    if (aux2) CPU_TRY(cpu_broadcast_view(aux2, &full, "loss pos_weight", &a2b));
    int64_t n = wgt_layout_numel(&full.l);
    if (reduction == WGT_REDUCTION_NONE) {
        if (!cpu_same_shape(&out->l, &full.l))
            return wgt_error(WGT_ERR_SHAPE, "cpu: loss: the unreduced output must have the broadcast shape");
    } else if (out->l.ndim != 0)
        return wgt_error(WGT_ERR_SHAPE, "cpu: loss: a reduced loss needs a 0-D output");
    double total = 0;
    for (int64_t i = 0; i < n; i++) {
        double w = aux ? wgt_cpu_load_f(&ab, cpu_at(&ab, i)) : 1, pw = aux2 ? wgt_cpu_load_f(&a2b, cpu_at(&a2b, i)) : 1;
        double v = pointwise(kind, wgt_cpu_load_f(&xb, cpu_at(&xb, i)), wgt_cpu_load_f(&tb, cpu_at(&tb, i)), w, pw, param);
        if (reduction == WGT_REDUCTION_NONE) wgt_cpu_store_f(out, cpu_at(out, i), v);
        total += v;
    }
    if (reduction == WGT_REDUCTION_NONE) return WGT_OK;
    double div = reduction == WGT_REDUCTION_SUM ? 1 : reduction == WGT_REDUCTION_MEAN ? (double)n
                 : (double)(nd ? shape[0] : 1);
    return store_scalar(op, out, total / div);
}

wgt_status wgt_cpu_cosine_similarity(const wgt_cpu_tensor *x1, const wgt_cpu_tensor *x2, int dim,
                                     double eps, const wgt_cpu_tensor *out)
{
    CPU_CHECK(x1, "cosine_similarity");
    CPU_CHECK(x2, "cosine_similarity");
    CPU_CHECK(out, "cosine_similarity");
    int nd = x1->l.ndim > x2->l.ndim ? x1->l.ndim : x2->l.ndim;
    if (dim < 0 || dim >= nd) return wgt_error(WGT_ERR_SHAPE, "cpu: cosine_similarity: dim %d out of range", dim);
    int64_t shape[WGT_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        int d1 = d - (nd - x1->l.ndim), d2 = d - (nd - x2->l.ndim);
        int64_t a = d1 >= 0 ? x1->l.shape[d1] : 1, b = d2 >= 0 ? x2->l.shape[d2] : 1;
        if (a != b && a != 1 && b != 1) return wgt_error(WGT_ERR_SHAPE, "cpu: cosine_similarity: shapes do not broadcast");
        shape[d] = a == 1 ? b : a;
    }
    wgt_cpu_tensor full = wgt_cpu_tensor_make(out->data, WGT_F32, nd, shape), a, b;
    CPU_TRY(cpu_broadcast_view(x1, &full, "x1", &a));
    CPU_TRY(cpu_broadcast_view(x2, &full, "x2", &b));
    int64_t len = shape[dim], sa = a.l.strides[dim], sb = b.l.strides[dim];
    wgt_layout ra = a.l, rb = b.l;
    ra.ndim = rb.ndim = nd - 1;
    for (int d = dim; d < nd - 1; d++) {
        ra.shape[d] = rb.shape[d] = shape[d + 1];
        ra.strides[d] = a.l.strides[d + 1], rb.strides[d] = b.l.strides[d + 1];
    }
    if (!cpu_same_shape(&out->l, &ra))
        return wgt_error(WGT_ERR_SHAPE, "cpu: cosine_similarity: out must be the broadcast shape without dim");
    int64_t rows = wgt_layout_numel(&ra);
    for (int64_t r = 0; r < rows; r++) {
        int64_t ia = wgt_layout_index(&ra, r), ib = wgt_layout_index(&rb, r);
        double dot = 0, n1 = 0, n2 = 0;
        for (int64_t k = 0; k < len; k++) {
            double u = wgt_cpu_load_f(&a, ia + k * sa), v = wgt_cpu_load_f(&b, ib + k * sb);
            dot += u * v, n1 += u * u, n2 += v * v;
        }
        /* clamp_min as PyTorch's: a NaN norm stays NaN (fmax would drop it) */
        double s1 = sqrt(n1), s2 = sqrt(n2);
        wgt_cpu_store_f(out, cpu_at(out, r), dot / ((s1 < eps ? eps : s1) * (s2 < eps ? eps : s2)));
    }
    return WGT_OK;
}
