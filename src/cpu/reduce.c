/* Reductions over any set of dims (sum ... argmin) and scans along one dim (cumsum ...). */
#include "cpu/cpu_internal.h"

#include <math.h>

/* Split x's dims into kept and reduced ones and check out's shape against them.
 * kx: x restricted to the kept dims (with x's offset); red: x's reduced dims (offset 0);
 * ko: out (or indices) with the kept dims only. */
static wgt_status plan(const wgt_cpu_tensor *x, uint32_t dims, int keepdim, const wgt_cpu_tensor *o,
                       const char *what, wgt_layout *kx, wgt_layout *red, wgt_layout *ko)
{
    char b1[128], b2[128];
    int nk = 0, nr = 0, od = 0;
    *kx = x->l, *red = x->l, *ko = o->l;
    red->offset = 0;
    int want_ndim = 0;
    for (int d = 0; d < x->l.ndim; d++) want_ndim += keepdim || !(dims >> d & 1);
    if (o->l.ndim != want_ndim) goto bad;
    for (int d = 0; d < x->l.ndim; d++) {
        if (dims >> d & 1) {
            red->shape[nr] = x->l.shape[d], red->strides[nr++] = x->l.strides[d];
            if (keepdim) {
                if (o->l.shape[od] != 1) goto bad;
                od++;
            }
        } else {
            if (o->l.shape[od] != x->l.shape[d]) goto bad;
            kx->shape[nk] = x->l.shape[d], kx->strides[nk] = x->l.strides[d];
            ko->shape[nk] = o->l.shape[od], ko->strides[nk++] = o->l.strides[od++];
        }
    }
    kx->ndim = ko->ndim = nk;
    red->ndim = nr;
    return WGT_OK;
bad:
    return wgt_error(WGT_ERR_SHAPE, "cpu: reduce: %s has shape %s; reducing %s over dims mask 0x%x "
                     "with keepdim=%d gives another shape", what, cpu_shape_str(&o->l, b1, sizeof b1),
                     cpu_shape_str(&x->l, b2, sizeof b2), dims, keepdim);
}

/* One reduction of n elements at base + index(red, r). Returns the value in *f or *i (int_path),
 * and the index of the extreme element in *arg. */
static void reduce_one(wgt_reduce_op op, const wgt_cpu_tensor *x, int64_t base, const wgt_layout *red,
                       int64_t n, double correction, int int_path, double *f, int64_t *iv, int64_t *arg)
{
    /* The common cases, one reduced dim or a dense block, without divisions per element. */
    int64_t step = red->ndim == 1 ? red->strides[0] : 1;
    int simple = red->ndim <= 1 || wgt_layout_is_contiguous(red);
#define AT(r) (simple ? base + (r) * step : base + wgt_layout_index(red, (r)))
    *arg = 0;
    if (int_path) {
        int64_t acc = op == WGT_REDUCE_PROD ? 1 : 0;
        for (int64_t r = 0; r < n; r++) {
            int64_t v = wgt_cpu_load_i(x, AT(r));
            switch (op) {
            case WGT_REDUCE_SUM: acc = (int64_t)((uint64_t)acc + (uint64_t)v); break;
            case WGT_REDUCE_PROD: acc = (int64_t)((uint64_t)acc * (uint64_t)v); break;
            case WGT_REDUCE_AMAX: case WGT_REDUCE_ARGMAX:
                if (r == 0 || v > acc) acc = v, *arg = r;
                break;
            case WGT_REDUCE_AMIN: case WGT_REDUCE_ARGMIN:
                if (r == 0 || v < acc) acc = v, *arg = r;
                break;
            default: break;
            }
        }
        *iv = acc;
        return;
    }
    double acc = 0, m = 0;
    switch (op) {
    case WGT_REDUCE_SUM: case WGT_REDUCE_MEAN: case WGT_REDUCE_NORM1: case WGT_REDUCE_NORM2:
        for (int64_t r = 0; r < n; r++) {
            double v = wgt_cpu_load_f(x, AT(r));
            acc += op == WGT_REDUCE_NORM1 ? fabs(v) : op == WGT_REDUCE_NORM2 ? v * v : v;
        }
        *f = op == WGT_REDUCE_MEAN ? acc / (double)n : op == WGT_REDUCE_NORM2 ? sqrt(acc) : acc;
        return;
    case WGT_REDUCE_PROD:
        acc = 1;
        for (int64_t r = 0; r < n; r++) acc *= wgt_cpu_load_f(x, AT(r));
        *f = acc;
        return;
    case WGT_REDUCE_AMAX: case WGT_REDUCE_AMIN: case WGT_REDUCE_ARGMAX: case WGT_REDUCE_ARGMIN: {
        int want_max = op == WGT_REDUCE_AMAX || op == WGT_REDUCE_ARGMAX;
        for (int64_t r = 0; r < n; r++) {
            double v = wgt_cpu_load_f(x, AT(r));
            if (r > 0 && isnan(acc)) break; /* the first NaN wins */
            if (r == 0 || isnan(v) || (want_max ? v > acc : v < acc)) acc = v, *arg = r;
        }
        *f = acc;
        return;
    }
    case WGT_REDUCE_NORM_INF:
        for (int64_t r = 0; r < n; r++) {
            double v = fabs(wgt_cpu_load_f(x, AT(r)));
            if (isnan(v) || isnan(acc)) acc = NAN;
            else if (v > acc) acc = v;
        }
        *f = acc;
        return;
    case WGT_REDUCE_VAR: case WGT_REDUCE_STD: {
        for (int64_t r = 0; r < n; r++) m += wgt_cpu_load_f(x, AT(r));
        m /= (double)n;
        for (int64_t r = 0; r < n; r++) {
            double d = wgt_cpu_load_f(x, AT(r)) - m;
            acc += d * d;
        }
        double dof = (double)n - correction;
        acc /= dof > 0 ? dof : 0;
        *f = op == WGT_REDUCE_STD ? sqrt(acc) : acc;
        return;
    }
    case WGT_REDUCE_LOGSUMEXP: {
        m = -INFINITY;
        int nan = 0;
        for (int64_t r = 0; r < n; r++) {
            double v = wgt_cpu_load_f(x, AT(r));
            if (isnan(v)) nan = 1;
            else if (v > m) m = v;
        }
        if (nan || isinf(m)) { /* all -inf gives -inf; any +inf gives +inf */
            *f = nan ? NAN : m;
            return;
        }
        for (int64_t r = 0; r < n; r++) acc += exp(wgt_cpu_load_f(x, AT(r)) - m);
        *f = m + log(acc);
        return;
    }
    case WGT_REDUCE_ALL: case WGT_REDUCE_ANY: {
        int all = 1, any = 0;
        for (int64_t r = 0; r < n; r++) {
            int nz = wgt_cpu_is_float(x->l.dtype) ? wgt_cpu_load_f(x, AT(r)) != 0 : wgt_cpu_load_i(x, AT(r)) != 0;
            all &= nz, any |= nz;
        }
        *f = op == WGT_REDUCE_ALL ? all : any;
        return;
    }
    default: *f = NAN; return;
    }
#undef AT
}

wgt_status wgt_cpu_reduce(wgt_reduce_op op, const wgt_cpu_tensor *x, uint32_t dims, int keepdim,
                          double correction, const wgt_cpu_tensor *out,
                          const wgt_cpu_tensor *indices)
{
    wgt_layout kx, red, ko, ki;
    if ((unsigned)op >= WGT_REDUCE_COUNT)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: unknown reduce op %d", (int)op);
    CPU_CHECK(x, "reduce input");
    CPU_CHECK(out, "reduce output");
    int ndim = x->l.ndim;
    if (ndim < 32 && (dims >> ndim) != 0)
        return wgt_error(WGT_ERR_SHAPE, "cpu: reduce: dims mask 0x%x names dims past the input's %d",
                         dims, ndim);
    if (dims == 0) dims = ndim ? (uint32_t)((1ull << ndim) - 1) : 0;
    CPU_TRY(plan(x, dims, keepdim, out, "output", &kx, &red, &ko));
    int is_arg = op == WGT_REDUCE_ARGMAX || op == WGT_REDUCE_ARGMIN;
    if (is_arg && wgt_cpu_is_float(out->l.dtype))
        return wgt_error(WGT_ERR_DTYPE, "cpu: %s needs an integer output", wgt_reduce_op_name(op));
    if (indices) {
        if (op != WGT_REDUCE_AMAX && op != WGT_REDUCE_AMIN)
            return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: only amax/amin return indices");
        CPU_TRY(cpu_check_index_dtype(indices, "reduce indices"));
        CPU_TRY(plan(x, dims, keepdim, indices, "indices", &kx, &red, &ki));
    }
    int64_t n = wgt_layout_numel(&red), nout = wgt_layout_numel(&ko);
    int needs_elems = op == WGT_REDUCE_AMAX || op == WGT_REDUCE_AMIN || is_arg;
    if (n == 0 && nout > 0 && needs_elems)
        return wgt_error(WGT_ERR_SHAPE, "cpu: %s over an empty set of elements has no value",
                         wgt_reduce_op_name(op));
    int exact_op = op == WGT_REDUCE_SUM || op == WGT_REDUCE_PROD || op == WGT_REDUCE_AMAX ||
                   op == WGT_REDUCE_AMIN || is_arg;
    int int_path = exact_op && !wgt_cpu_is_float(x->l.dtype) && (is_arg || !wgt_cpu_is_float(out->l.dtype));
    for (int64_t o = 0; o < nout; o++) {
        double f = 0;
        int64_t iv = 0, arg = 0;
        reduce_one(op, x, wgt_layout_index(&kx, o), &red, n, correction, int_path, &f, &iv, &arg);
        int64_t to = wgt_layout_index(&ko, o);
        if (is_arg) wgt_cpu_store_i(out, to, arg);
        else if (int_path) wgt_cpu_store_i(out, to, iv);
        else wgt_cpu_store_f(out, to, f);
        if (indices) wgt_cpu_store_i(indices, wgt_layout_index(&ki, o), arg);
    }
    return WGT_OK;
}

wgt_status wgt_cpu_scan(wgt_scan_op op, const wgt_cpu_tensor *x, int dim, int exclusive,
                        int reverse, const wgt_cpu_tensor *out, const wgt_cpu_tensor *indices)
{
    if ((unsigned)op >= WGT_SCAN_COUNT)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: unknown scan op %d", (int)op);
    CPU_CHECK(x, "scan input");
    CPU_CHECK(out, "scan output");
    int is_ext = op == WGT_SCAN_CUMMAX || op == WGT_SCAN_CUMMIN;
    if (dim < 0 || dim >= (x->l.ndim ? x->l.ndim : 1))
        return wgt_error(WGT_ERR_SHAPE, "cpu: %s: dim %d out of range for %d dims",
                         wgt_scan_op_name(op), dim, x->l.ndim);
    if (!cpu_same_shape(&x->l, &out->l))
        return wgt_error(WGT_ERR_SHAPE, "cpu: %s: output shape differs from the input's",
                         wgt_scan_op_name(op));
    if (indices) {
        if (!is_ext) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: only cummax/cummin return indices");
        CPU_TRY(cpu_check_index_dtype(indices, "scan indices"));
        if (!cpu_same_shape(&x->l, &indices->l))
            return wgt_error(WGT_ERR_SHAPE, "cpu: %s: indices shape differs from the input's",
                             wgt_scan_op_name(op));
    }
    if (exclusive && is_ext)
        return wgt_error(WGT_ERR_UNSUPPORTED, "cpu: exclusive %s is not defined", wgt_scan_op_name(op));
    /* A 0-d tensor scans as one element. */
    wgt_layout lx = x->l, lo = out->l, li = indices ? indices->l : out->l;
    int64_t len = 1, sx = 0, so = 0, si = 0;
    if (x->l.ndim) {
        len = x->l.shape[dim], sx = lx.strides[dim], so = lo.strides[dim], si = li.strides[dim];
        lx.shape[dim] = lo.shape[dim] = li.shape[dim] = 1;
    }
    int int_path = !wgt_cpu_is_float(x->l.dtype) && !wgt_cpu_is_float(out->l.dtype);
    int64_t lines = len ? wgt_layout_numel(&lx) : 0;
    for (int64_t line = 0; line < lines; line++) {
        int64_t bx = wgt_layout_index(&lx, line), bo = wgt_layout_index(&lo, line);
        int64_t bi = indices ? wgt_layout_index(&li, line) : 0;
        double f = op == WGT_SCAN_CUMPROD ? 1 : 0;
        int64_t iv = op == WGT_SCAN_CUMPROD ? 1 : 0, arg = 0;
        for (int64_t s = 0; s < len; s++) {
            int64_t k = reverse ? len - 1 - s : s;
            if (exclusive) { /* store what came before, then fold this element in */
                if (int_path) wgt_cpu_store_i(out, bo + k * so, iv);
                else wgt_cpu_store_f(out, bo + k * so, f);
            }
            if (int_path) {
                int64_t v = wgt_cpu_load_i(x, bx + k * sx);
                switch (op) {
                case WGT_SCAN_CUMSUM: iv = (int64_t)((uint64_t)iv + (uint64_t)v); break;
                case WGT_SCAN_CUMPROD: iv = (int64_t)((uint64_t)iv * (uint64_t)v); break;
                case WGT_SCAN_CUMMAX: if (s == 0 || v >= iv) iv = v, arg = k; break;
                case WGT_SCAN_CUMMIN: if (s == 0 || v <= iv) iv = v, arg = k; break;
                default: break;
                }
            } else {
                double v = wgt_cpu_load_f(x, bx + k * sx);
                switch (op) {
                case WGT_SCAN_CUMSUM: f += v; break;
                case WGT_SCAN_CUMPROD: f *= v; break;
                /* PyTorch: ties move the index forward; a NaN sticks until the next NaN. */
                case WGT_SCAN_CUMMAX: if (s == 0 || v >= f || isnan(v)) f = v, arg = k; break;
                case WGT_SCAN_CUMMIN: if (s == 0 || v <= f || isnan(v)) f = v, arg = k; break;
                default: break;
                }
            }
            if (!exclusive) {
                if (int_path) wgt_cpu_store_i(out, bo + k * so, iv);
                else wgt_cpu_store_f(out, bo + k * so, f);
            }
            if (indices) wgt_cpu_store_i(indices, bi + k * si, arg);
        }
    }
    return WGT_OK;
}
