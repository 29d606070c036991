/* Misc ops: diff, trace, diag, diag_embed, cdist (torch.<name>), from their definitions, in double
 * for floats and exactly in int64 for integers. */
#include "cpu/cpu_internal.h"

#include <math.h>
#include <stdlib.h>

wgt_status wgt_cpu_diff(const wgt_cpu_tensor *x, int n, int dim, const wgt_cpu_tensor *prepend,
                        const wgt_cpu_tensor *append, const wgt_cpu_tensor *out)
{
    CPU_CHECK(x, "diff");
    CPU_CHECK(out, "diff");
    int nd = x->l.ndim;
    if (nd < 1 || dim < 0 || dim >= nd) return wgt_error(WGT_ERR_SHAPE, "cpu: diff: dim %d of a %d-D input", dim, nd);
    if (n < 0) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: diff: n must be >= 0, not %d", n);
    const wgt_cpu_tensor *parts[3] = {prepend, x, append};
    int64_t len = 0;
    for (int i = 0; i < 3; i++) {
        if (!parts[i]) continue;
        CPU_CHECK(parts[i], "diff");
        int ok = parts[i]->l.ndim == nd && parts[i]->l.dtype == x->l.dtype;
        for (int d = 0; ok && d < nd; d++) ok = d == dim || parts[i]->l.shape[d] == x->l.shape[d];
        if (!ok) return wgt_error(WGT_ERR_SHAPE, "cpu: diff: prepend/append must match x's dtype and shape off dim");
        len += parts[i]->l.shape[dim];
    }
    int64_t olen = len - n > 0 ? len - n : 0;
    int ok = out->l.ndim == nd && out->l.dtype == x->l.dtype;
    for (int d = 0; ok && d < nd; d++) ok = out->l.shape[d] == (d == dim ? olen : x->l.shape[d]);
    if (!ok) return wgt_error(WGT_ERR_SHAPE, "cpu: diff: out must be x's shape with %lld along dim", (long long)olen);
    wgt_layout lines = x->l;
    lines.shape[dim] = 1;
    int64_t nlines = wgt_layout_numel(&lines);
    int is_f = wgt_cpu_is_float(x->l.dtype), is_b = x->l.dtype == WGT_BOOL;
    double *fv = malloc((len ? len : 1) * sizeof *fv);
    int64_t *iv = malloc((len ? len : 1) * sizeof *iv);
    if (!fv || !iv) {
        free(fv), free(iv);
        return wgt_error(WGT_ERR_OUT_OF_MEMORY, "cpu: diff: out of host memory");
    }
    int64_t idx[WGT_MAX_DIMS] = {0};
    for (int64_t line = 0; line < nlines; line++) {
        /* gather the joined line, then difference it n times in place */
        int64_t k = 0;
        for (int i = 0; i < 3; i++) {
            if (!parts[i]) continue;
            for (int64_t j = 0; j < parts[i]->l.shape[dim]; j++, k++) {
                idx[dim] = j;
                int64_t at = cpu_offset(&parts[i]->l, idx);
                if (is_f) fv[k] = wgt_cpu_load_f(parts[i], at);
                else iv[k] = wgt_cpu_load_i(parts[i], at);
            }
        }
        for (int r = 0; r < n && r < len; r++)
            for (int64_t j = 0; j + 1 < len - r; j++) {
                /* rounded to the dtype each time, as PyTorch's repeated subtraction */
                if (is_f) fv[j] = wgt_cpu_round_to(x->l.dtype, fv[j + 1] - fv[j]);
                else if (is_b) iv[j] = (iv[j + 1] != 0) != (iv[j] != 0);
                else iv[j] = (int64_t)((uint64_t)iv[j + 1] - (uint64_t)iv[j]);
            }
        for (int64_t j = 0; j < olen; j++) {
            idx[dim] = j;
            int64_t at = cpu_offset(&out->l, idx);
            if (is_f) wgt_cpu_store_f(out, at, fv[j]);
            else wgt_cpu_store_i(out, at, iv[j]);
        }
        idx[dim] = 0;
        cpu_next(idx, lines.shape, nd);
    }
    free(fv), free(iv);
    return WGT_OK;
}

wgt_status wgt_cpu_trace(const wgt_cpu_tensor *x, const wgt_cpu_tensor *out)
{
    CPU_CHECK(x, "trace");
    CPU_CHECK(out, "trace");
    if (x->l.ndim != 2) return wgt_error(WGT_ERR_SHAPE, "cpu: trace: x must be 2-D, not %d-D", x->l.ndim);
    if (out->l.ndim != 0) return wgt_error(WGT_ERR_SHAPE, "cpu: trace: out must be 0-D");
    int64_t n = x->l.shape[0] < x->l.shape[1] ? x->l.shape[0] : x->l.shape[1], step = x->l.strides[0] + x->l.strides[1];
    if (wgt_cpu_is_float(x->l.dtype)) {
        double s = 0;
        for (int64_t i = 0; i < n; i++) s += wgt_cpu_load_f(x, x->l.offset + i * step);
        wgt_cpu_store_f(out, out->l.offset, s);
    } else {
        int64_t s = 0;
        for (int64_t i = 0; i < n; i++) s = (int64_t)((uint64_t)s + (uint64_t)wgt_cpu_load_i(x, x->l.offset + i * step));
        wgt_cpu_store_i(out, out->l.offset, s);
    }
    return WGT_OK;
}

/* The diagonal `offset` of dims (d1, d2) of l: its start and step. */
static void diagonal(const wgt_layout *l, int d1, int d2, int64_t offset, int64_t *start, int64_t *step)
{
    *start = l->offset + (offset >= 0 ? offset * l->strides[d2] : -offset * l->strides[d1]);
    *step = l->strides[d1] + l->strides[d2];
}

wgt_status wgt_cpu_diag(const wgt_cpu_tensor *x, int64_t offset, const wgt_cpu_tensor *out)
{
    CPU_CHECK(x, "diag");
    CPU_CHECK(out, "diag");
    if (x->l.dtype != out->l.dtype) return wgt_error(WGT_ERR_DTYPE, "cpu: diag: out must have x's dtype");
    int64_t k = offset < 0 ? -offset : offset;
    if (x->l.ndim == 1) {
        int64_t n = x->l.shape[0] + k;
        if (out->l.ndim != 2 || out->l.shape[0] != n || out->l.shape[1] != n)
            return wgt_error(WGT_ERR_SHAPE, "cpu: diag: out must be [%lld, %lld]", (long long)n, (long long)n);
        CPU_TRY(wgt_cpu_full(0, out));
        int64_t start, step;
        diagonal(&out->l, 0, 1, offset, &start, &step);
        for (int64_t i = 0; i < x->l.shape[0]; i++) cpu_copy_elem(x, cpu_at(x, i), out, start + i * step);
        return WGT_OK;
    }
    if (x->l.ndim != 2) return wgt_error(WGT_ERR_SHAPE, "cpu: diag: x must be 1-D or 2-D, not %d-D", x->l.ndim);
    int64_t rows = x->l.shape[0] - (offset < 0 ? k : 0), cols = x->l.shape[1] - (offset > 0 ? k : 0);
    int64_t n = rows < cols ? rows : cols;
    if (n < 0) n = 0;
    if (out->l.ndim != 1 || out->l.shape[0] != n)
        return wgt_error(WGT_ERR_SHAPE, "cpu: diag: out must be [%lld]", (long long)n);
    int64_t start, step;
    diagonal(&x->l, 0, 1, offset, &start, &step);
    for (int64_t i = 0; i < n; i++) cpu_copy_elem(x, start + i * step, out, cpu_at(out, i));
    return WGT_OK;
}

wgt_status wgt_cpu_diag_embed(const wgt_cpu_tensor *x, int64_t offset, int dim1, int dim2,
                              const wgt_cpu_tensor *out)
{
    CPU_CHECK(x, "diag_embed");
    CPU_CHECK(out, "diag_embed");
    int nd = x->l.ndim + 1;
    if (x->l.ndim < 1) return wgt_error(WGT_ERR_SHAPE, "cpu: diag_embed: x must have at least 1 dim");
    if (dim1 < 0 || dim2 < 0 || dim1 >= nd || dim2 >= nd || dim1 == dim2)
        return wgt_error(WGT_ERR_SHAPE, "cpu: diag_embed: dims %d and %d must differ and be < %d", dim1, dim2, nd);
    int64_t m = x->l.shape[x->l.ndim - 1], n = m + (offset < 0 ? -offset : offset);
    int ok = out->l.ndim == nd && out->l.dtype == x->l.dtype;
    for (int d = 0, j = 0; ok && d < nd; d++) {
        if (d == dim1 || d == dim2) ok = out->l.shape[d] == n;
        else ok = out->l.shape[d] == x->l.shape[j++];
    }
    if (!ok) return wgt_error(WGT_ERR_SHAPE, "cpu: diag_embed: out has the wrong shape or dtype");
    CPU_TRY(wgt_cpu_full(0, out));
    /* the diagonal view of out: the other dims in order, then the diagonal (x's layout) */
    int64_t start, step;
    diagonal(&out->l, dim1, dim2, offset, &start, &step);
    wgt_layout v = x->l;
    v.offset = start;
    for (int d = 0, j = 0; d < nd; d++)
        if (d != dim1 && d != dim2) v.strides[j++] = out->l.strides[d];
    v.strides[x->l.ndim - 1] = step;
    v.dtype = out->l.dtype;
    wgt_cpu_tensor dv = cpu_view(out, &v);
    int64_t total = cpu_numel(x);
    for (int64_t i = 0; i < total; i++) cpu_copy_elem(x, cpu_at(x, i), &dv, cpu_at(&dv, i));
    return WGT_OK;
}

wgt_status wgt_cpu_cdist(const wgt_cpu_tensor *x1, const wgt_cpu_tensor *x2, double p,
                         const wgt_cpu_tensor *out)
{
    CPU_CHECK(x1, "cdist");
    CPU_CHECK(x2, "cdist");
    CPU_CHECK(out, "cdist");
    int n1 = x1->l.ndim, n2 = x2->l.ndim, no = out->l.ndim;
    if (n1 < 2 || n2 < 2 || no < 2 || x1->l.shape[n1 - 1] != x2->l.shape[n2 - 1])
        return wgt_error(WGT_ERR_SHAPE, "cpu: cdist: x1 [.., P, M] and x2 [.., R, M] with the same M expected");
    if (!(p >= 0)) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: cdist: p must be >= 0");
    int64_t P = x1->l.shape[n1 - 2], R = x2->l.shape[n2 - 2], M = x1->l.shape[n1 - 1];
    if (out->l.shape[no - 2] != P || out->l.shape[no - 1] != R)
        return wgt_error(WGT_ERR_SHAPE, "cpu: cdist: out must end in [P, R]");
    /* batch views of x1 and x2 broadcast to out's batch dims */
    wgt_layout ob = out->l, b1l = x1->l, b2l = x2->l, r1, r2;
    ob.ndim = no - 2, b1l.ndim = n1 - 2, b2l.ndim = n2 - 2;
    CPU_TRY(wgt_cpu_broadcast_to(&b1l, ob.ndim, ob.shape, &r1, "cdist x1"));
    CPU_TRY(wgt_cpu_broadcast_to(&b2l, ob.ndim, ob.shape, &r2, "cdist x2"));
    int64_t B = wgt_layout_numel(&ob);
    int64_t s1p = x1->l.strides[n1 - 2], s1m = x1->l.strides[n1 - 1], s2r = x2->l.strides[n2 - 2], s2m = x2->l.strides[n2 - 1];
    for (int64_t b = 0; b < B; b++) {
        int64_t a1 = wgt_layout_index(&r1, b), a2 = wgt_layout_index(&r2, b), ao = wgt_layout_index(&ob, b);
        for (int64_t i = 0; i < P; i++)
            for (int64_t j = 0; j < R; j++) {
                double acc = 0;
                for (int64_t k = 0; k < M; k++) {
                    double d = fabs(wgt_cpu_load_f(x1, a1 + i * s1p + k * s1m) - wgt_cpu_load_f(x2, a2 + j * s2r + k * s2m));
                    if (p == 0) acc += d != 0;
                    else if (isinf(p)) acc = d > acc || isnan(d) ? d : acc;
                    else if (p == 1) acc += d;
                    else if (p == 2) acc += d * d;
                    else acc += pow(d, p);
                }
                double v = p == 0 || p == 1 || isinf(p) ? acc : p == 2 ? sqrt(acc) : pow(acc, 1 / p);
                wgt_cpu_store_f(out, ao + i * out->l.strides[no - 2] + j * out->l.strides[no - 1], v);
            }
    }
    return WGT_OK;
}
