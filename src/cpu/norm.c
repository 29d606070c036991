/* Softmax, log_softmax and the normalisations: layer, RMS, group and batch norm.
 * Statistics are computed in double with two passes (mean, then squared deviations). */
#include "cpu/cpu_internal.h"

#include <math.h>

static wgt_status softmax_impl(const char *op, int log_form, const wgt_cpu_tensor *x, int dim,
                               const wgt_cpu_tensor *out)
{
    CPU_CHECK(x, op);
    CPU_CHECK(out, op);
    if (!cpu_same_shape(&x->l, &out->l))
        return wgt_error(WGT_ERR_SHAPE, "cpu: %s: output shape differs from the input's", op);
    if (dim < 0 || dim >= (x->l.ndim ? x->l.ndim : 1))
        return wgt_error(WGT_ERR_SHAPE, "cpu: %s: dim %d out of range for %d dims", op, dim, x->l.ndim);
    wgt_layout lx = x->l, lo = out->l;
    int64_t len = 1, sx = 0, so = 0;
    if (x->l.ndim) {
        len = lx.shape[dim], sx = lx.strides[dim], so = lo.strides[dim];
        lx.shape[dim] = lo.shape[dim] = 1;
    }
    int64_t lines = len ? wgt_layout_numel(&lx) : 0;
    for (int64_t line = 0; line < lines; line++) {
        int64_t bx = wgt_layout_index(&lx, line), bo = wgt_layout_index(&lo, line);
        double m = -INFINITY, sum = 0;
        for (int64_t k = 0; k < len; k++) {
            double v = wgt_cpu_load_f(x, bx + k * sx);
            if (v > m || isnan(v)) m = v;
            if (isnan(m)) break;
        }
        /* A row of -inf has no maximum to subtract: PyTorch gives NaN there, and so does this. */
        for (int64_t k = 0; k < len; k++) sum += exp(wgt_cpu_load_f(x, bx + k * sx) - m);
        double lse = log(sum);
        for (int64_t k = 0; k < len; k++) {
            double d = wgt_cpu_load_f(x, bx + k * sx) - m;
            wgt_cpu_store_f(out, bo + k * so, log_form ? d - lse : exp(d) / sum);
        }
    }
    return WGT_OK;
}

wgt_status wgt_cpu_softmax(const wgt_cpu_tensor *x, int dim, const wgt_cpu_tensor *out)
{
    return softmax_impl("softmax", 0, x, dim, out);
}

wgt_status wgt_cpu_log_softmax(const wgt_cpu_tensor *x, int dim, const wgt_cpu_tensor *out)
{
    return softmax_impl("log_softmax", 1, x, dim, out);
}

/* Check that an optional per-feature tensor has exactly `shape` (k dims). */
static wgt_status check_param(const wgt_cpu_tensor *t, int k, const int64_t *shape, const char *op,
                              const char *what)
{
    if (!t) return WGT_OK;
    CPU_CHECK(t, what);
    int ok = t->l.ndim == k;
    for (int d = 0; ok && d < k; d++) ok = t->l.shape[d] == shape[d];
    if (!ok)
        return wgt_error(WGT_ERR_SHAPE, "cpu: %s: %s must have the normalised shape", op, what);
    return WGT_OK;
}

/* Row statistics outputs (mean, rstd): the leading dims of x, then optional trailing ones. */
static wgt_status stats_layout(const wgt_cpu_tensor *s, const wgt_cpu_tensor *x, int lead,
                               const char *what, wgt_layout *res)
{
    CPU_CHECK(s, what);
    int ok = s->l.ndim >= lead;
    for (int d = 0; ok && d < s->l.ndim; d++)
        ok = s->l.shape[d] == (d < lead ? x->l.shape[d] : 1);
    if (!ok) return wgt_error(WGT_ERR_SHAPE, "cpu: layer_norm: %s must have x's leading dims", what);
    *res = s->l;
    res->ndim = lead;
    return WGT_OK;
}

static wgt_status row_norm(const char *op, int rms, const wgt_cpu_tensor *x, int k,
                           const wgt_cpu_tensor *weight, const wgt_cpu_tensor *bias, double eps,
                           const wgt_cpu_tensor *out, const wgt_cpu_tensor *mean_out,
                           const wgt_cpu_tensor *rstd_out)
{
    CPU_CHECK(x, op);
    CPU_CHECK(out, op);
    int nd = x->l.ndim, lead = nd - k;
    if (k < 0 || k > nd)
        return wgt_error(WGT_ERR_SHAPE, "cpu: %s: %d normalised dims for a %d-dim input", op, k, nd);
    if (!cpu_same_shape(&x->l, &out->l))
        return wgt_error(WGT_ERR_SHAPE, "cpu: %s: output shape differs from the input's", op);
    CPU_TRY(check_param(weight, k, x->l.shape + lead, op, "weight"));
    CPU_TRY(check_param(bias, k, x->l.shape + lead, op, "bias"));
    wgt_layout ml, rl;
    if (mean_out) CPU_TRY(stats_layout(mean_out, x, lead, "mean", &ml));
    if (rstd_out) CPU_TRY(stats_layout(rstd_out, x, lead, "rstd", &rl));
    /* rows: x's leading dims; inner: the normalised dims, offsets relative to the row. */
    wgt_layout rx = x->l, ro = out->l, ix = x->l, io = out->l;
    rx.ndim = ro.ndim = lead;
    ix.ndim = io.ndim = k;
    ix.offset = io.offset = 0;
    for (int d = 0; d < k; d++) {
        ix.shape[d] = io.shape[d] = x->l.shape[lead + d];
        ix.strides[d] = x->l.strides[lead + d], io.strides[d] = out->l.strides[lead + d];
    }
    int64_t rows = wgt_layout_numel(&rx), n = wgt_layout_numel(&ix);
    for (int64_t r = 0; r < rows; r++) {
        int64_t bx = wgt_layout_index(&rx, r), bo = wgt_layout_index(&ro, r);
        double mean = 0, var = 0;
        if (!rms) {
            for (int64_t i = 0; i < n; i++) mean += wgt_cpu_load_f(x, bx + wgt_layout_index(&ix, i));
            mean /= (double)n;
        }
        for (int64_t i = 0; i < n; i++) {
            double d = wgt_cpu_load_f(x, bx + wgt_layout_index(&ix, i)) - mean;
            var += d * d;
        }
        var /= (double)n;
        double rstd = 1 / sqrt(var + eps);
        for (int64_t i = 0; i < n; i++) {
            double y = (wgt_cpu_load_f(x, bx + wgt_layout_index(&ix, i)) - mean) * rstd;
            if (weight) y *= wgt_cpu_load_f(weight, cpu_at(weight, i));
            if (bias) y += wgt_cpu_load_f(bias, cpu_at(bias, i));
            wgt_cpu_store_f(out, bo + wgt_layout_index(&io, i), y);
        }
        if (mean_out) wgt_cpu_store_f(mean_out, wgt_layout_index(&ml, r), mean);
        if (rstd_out) wgt_cpu_store_f(rstd_out, wgt_layout_index(&rl, r), rstd);
    }
    return WGT_OK;
}

wgt_status wgt_cpu_layer_norm(const wgt_cpu_tensor *x, int norm_ndim, const wgt_cpu_tensor *weight,
                              const wgt_cpu_tensor *bias, double eps, const wgt_cpu_tensor *out,
                              const wgt_cpu_tensor *mean, const wgt_cpu_tensor *rstd)
{
    return row_norm("layer_norm", 0, x, norm_ndim, weight, bias, eps, out, mean, rstd);
}

wgt_status wgt_cpu_rms_norm(const wgt_cpu_tensor *x, int norm_ndim, const wgt_cpu_tensor *weight,
                            double eps, const wgt_cpu_tensor *out)
{
    return row_norm("rms_norm", 1, x, norm_ndim, weight, NULL, eps, out, NULL, NULL);
}

/* Checks shared by group and batch norm: x [N, C, *], out like x, per-channel params [C]. */
static wgt_status check_nc(const char *op, const wgt_cpu_tensor *x, const wgt_cpu_tensor *out,
                           const wgt_cpu_tensor *const *params, int nparams)
{
    CPU_CHECK(x, op);
    CPU_CHECK(out, op);
    if (x->l.ndim < 2)
        return wgt_error(WGT_ERR_SHAPE, "cpu: %s: input must be [N, C, ...], got %d dims", op, x->l.ndim);
    if (!cpu_same_shape(&x->l, &out->l))
        return wgt_error(WGT_ERR_SHAPE, "cpu: %s: output shape differs from the input's", op);
    for (int i = 0; i < nparams; i++)
        CPU_TRY(check_param(params[i], 1, x->l.shape + 1, op, "a per-channel parameter"));
    return WGT_OK;
}

/* Sum over (n in ns, c in [c0, c1), spatial) of f(x) where f = x - shift, squared when sq. */
static double nc_sum(const wgt_cpu_tensor *x, int64_t n0, int64_t n1, int64_t c0, int64_t c1,
                     double shift, int sq)
{
    wgt_layout sp = x->l;
    sp.ndim = x->l.ndim - 2, sp.offset = 0;
    for (int d = 0; d < sp.ndim; d++) sp.shape[d] = x->l.shape[d + 2], sp.strides[d] = x->l.strides[d + 2];
    int64_t S = wgt_layout_numel(&sp);
    double acc = 0;
    for (int64_t n = n0; n < n1; n++)
        for (int64_t c = c0; c < c1; c++)
            for (int64_t s = 0; s < S; s++) {
                double v = wgt_cpu_load_f(x, x->l.offset + n * x->l.strides[0] + c * x->l.strides[1] +
                                                 wgt_layout_index(&sp, s)) - shift;
                acc += sq ? v * v : v;
            }
    return acc;
}

/* out[n, c0..c1) = (x - mean) * rstd * w[c] + b[c] */
static void nc_apply(const wgt_cpu_tensor *x, int64_t n0, int64_t n1, int64_t c0, int64_t c1,
                     double mean, double rstd, const wgt_cpu_tensor *w, const wgt_cpu_tensor *b,
                     const wgt_cpu_tensor *out)
{
    wgt_layout sx = x->l, so = out->l;
    sx.ndim = so.ndim = x->l.ndim - 2;
    sx.offset = so.offset = 0;
    for (int d = 0; d < sx.ndim; d++) {
        sx.shape[d] = so.shape[d] = x->l.shape[d + 2];
        sx.strides[d] = x->l.strides[d + 2], so.strides[d] = out->l.strides[d + 2];
    }
    int64_t S = wgt_layout_numel(&sx);
    for (int64_t n = n0; n < n1; n++)
        for (int64_t c = c0; c < c1; c++) {
            double wc = w ? wgt_cpu_load_f(w, cpu_at(w, c)) : 1, bc = b ? wgt_cpu_load_f(b, cpu_at(b, c)) : 0;
            int64_t bx = x->l.offset + n * x->l.strides[0] + c * x->l.strides[1];
            int64_t bo = out->l.offset + n * out->l.strides[0] + c * out->l.strides[1];
            for (int64_t s = 0; s < S; s++) {
                double v = (wgt_cpu_load_f(x, bx + wgt_layout_index(&sx, s)) - mean) * rstd;
                wgt_cpu_store_f(out, bo + wgt_layout_index(&so, s), v * wc + bc);
            }
        }
}

static int64_t spatial(const wgt_cpu_tensor *x)
{
    int64_t s = 1;
    for (int d = 2; d < x->l.ndim; d++) s *= x->l.shape[d];
    return s;
}

wgt_status wgt_cpu_group_norm(const wgt_cpu_tensor *x, int groups, const wgt_cpu_tensor *weight,
                              const wgt_cpu_tensor *bias, double eps, const wgt_cpu_tensor *out)
{
    const wgt_cpu_tensor *params[2] = {weight, bias};
    CPU_TRY(check_nc("group_norm", x, out, params, 2));
    int64_t N = x->l.shape[0], C = x->l.shape[1];
    if (groups <= 0 || C % groups)
        return wgt_error(WGT_ERR_SHAPE, "cpu: group_norm: %lld channels do not split into %d groups",
                         (long long)C, groups);
    int64_t cg = C / groups, cnt = cg * spatial(x);
    for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < groups; g++) {
            double mean = nc_sum(x, n, n + 1, g * cg, (g + 1) * cg, 0, 0) / (double)cnt;
            double var = nc_sum(x, n, n + 1, g * cg, (g + 1) * cg, mean, 1) / (double)cnt;
            nc_apply(x, n, n + 1, g * cg, (g + 1) * cg, mean, 1 / sqrt(var + eps), weight, bias, out);
        }
    return WGT_OK;
}

wgt_status wgt_cpu_batch_norm(const wgt_cpu_tensor *x, const wgt_cpu_tensor *running_mean,
                              const wgt_cpu_tensor *running_var, const wgt_cpu_tensor *weight,
                              const wgt_cpu_tensor *bias, int training, double momentum,
                              double eps, const wgt_cpu_tensor *out)
{
    const wgt_cpu_tensor *params[4] = {running_mean, running_var, weight, bias};
    CPU_TRY(check_nc("batch_norm", x, out, params, 4));
    if (!training && (!running_mean || !running_var))
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: batch_norm: inference needs running_mean "
                         "and running_var");
    int64_t N = x->l.shape[0], C = x->l.shape[1], cnt = N * spatial(x);
    for (int64_t c = 0; c < C; c++) {
        double mean, var;
        if (training) {
            mean = nc_sum(x, 0, N, c, c + 1, 0, 0) / (double)cnt;
            var = nc_sum(x, 0, N, c, c + 1, mean, 1) / (double)cnt;
        } else {
            mean = wgt_cpu_load_f(running_mean, cpu_at(running_mean, c));
            var = wgt_cpu_load_f(running_var, cpu_at(running_var, c));
        }
        nc_apply(x, 0, N, c, c + 1, mean, 1 / sqrt(var + eps), weight, bias, out);
        if (training && running_mean && running_var) {
            double unbiased = cnt > 1 ? var * (double)cnt / (double)(cnt - 1) : NAN;
            int64_t am = cpu_at(running_mean, c), av = cpu_at(running_var, c);
            wgt_cpu_store_f(running_mean, am, (1 - momentum) * wgt_cpu_load_f(running_mean, am) + momentum * mean);
            wgt_cpu_store_f(running_var, av, (1 - momentum) * wgt_cpu_load_f(running_var, av) + momentum * unbiased);
        }
    }
    return WGT_OK;
}
