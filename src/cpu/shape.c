/* Creation and data-movement ops: tril/triu, arange, linspace, eye, cat, stack, flip, roll,
 * repeat, pad. (split/chunk and the other pure views live in the tensor layer, not here.) */
#include "cpu/cpu_internal.h"

#include <math.h>

static void store_int(const wgt_cpu_tensor *t, int64_t at, int64_t v) { wgt_cpu_store_i(t, at, v); }

static wgt_status tri(const char *op, int lower, const wgt_cpu_tensor *x, int64_t k,
                      const wgt_cpu_tensor *out)
{
    CPU_CHECK(x, op);
    CPU_CHECK(out, op);
    int nd = x->l.ndim;
    if (nd < 2 || !cpu_same_shape(&x->l, &out->l))
        return wgt_error(WGT_ERR_SHAPE, "cpu: %s: needs at least 2 dims and out of x's shape", op);
    int64_t idx[WGT_MAX_DIMS] = {0};
    if (cpu_numel(out) == 0) return WGT_OK;
    do {
        int64_t diff = idx[nd - 1] - idx[nd - 2]; /* column - row */
        int keep = lower ? diff <= k : diff >= k;
        int64_t to = cpu_offset(&out->l, idx);
        if (keep) cpu_copy_elem(x, cpu_offset(&x->l, idx), out, to);
        else store_int(out, to, 0);
    } while (cpu_next(idx, out->l.shape, nd));
    return WGT_OK;
}

wgt_status wgt_cpu_tril(const wgt_cpu_tensor *x, int64_t k, const wgt_cpu_tensor *out)
{
    return tri("tril", 1, x, k, out);
}

wgt_status wgt_cpu_triu(const wgt_cpu_tensor *x, int64_t k, const wgt_cpu_tensor *out)
{
    return tri("triu", 0, x, k, out);
}

static wgt_status check_1d(const char *op, const wgt_cpu_tensor *out)
{
    CPU_CHECK(out, op);
    if (out->l.ndim != 1) return wgt_error(WGT_ERR_SHAPE, "cpu: %s: output must be 1-D", op);
    return WGT_OK;
}

wgt_status wgt_cpu_arange(double start, double step, const wgt_cpu_tensor *out)
{
    CPU_TRY(check_1d("arange", out));
    int exact = !wgt_cpu_is_float(out->l.dtype) && start == trunc(start) && step == trunc(step) &&
                fabs(start) < 9e18 && fabs(step) < 9e18;
    for (int64_t i = 0; i < out->l.shape[0]; i++) {
        int64_t to = cpu_at(out, i);
        if (exact) store_int(out, to, (int64_t)((uint64_t)(int64_t)start + (uint64_t)i * (uint64_t)(int64_t)step));
        else wgt_cpu_store_f(out, to, start + (double)i * step);
    }
    return WGT_OK;
}

wgt_status wgt_cpu_linspace(double start, double end, const wgt_cpu_tensor *out)
{
    CPU_TRY(check_1d("linspace", out));
    int64_t n = out->l.shape[0];
    double step = n > 1 ? (end - start) / (double)(n - 1) : 0;
    if (n == 1) { /* PyTorch fills one step with start (RangeFactories.cpp: steps == 1 -> fill_(start)) */
        wgt_cpu_store_f(out, cpu_at(out, 0), start);
        return WGT_OK;
    }
    for (int64_t i = 0; i < n; i++) /* from both ends, so the last element is exactly end */
        wgt_cpu_store_f(out, cpu_at(out, i), i < n / 2 ? start + step * (double)i
                                                        : end - step * (double)(n - 1 - i));
    return WGT_OK;
}

wgt_status wgt_cpu_eye(const wgt_cpu_tensor *out)
{
    CPU_CHECK(out, "eye");
    if (out->l.ndim != 2) return wgt_error(WGT_ERR_SHAPE, "cpu: eye: output must be 2-D");
    for (int64_t i = 0; i < out->l.shape[0]; i++)
        for (int64_t j = 0; j < out->l.shape[1]; j++)
            store_int(out, out->l.offset + i * out->l.strides[0] + j * out->l.strides[1], i == j);
    return WGT_OK;
}

wgt_status wgt_cpu_cat(const wgt_cpu_tensor *const *xs, int n, int dim, const wgt_cpu_tensor *out)
{
    CPU_CHECK(out, "cat output");
    int nd = out->l.ndim;
    if (dim < 0 || dim >= nd)
        return wgt_error(WGT_ERR_SHAPE, "cpu: cat: dim %d out of range for %d dims", dim, nd);
    int64_t pos = 0;
    for (int i = 0; i < n; i++) {
        CPU_CHECK(xs[i], "cat input");
        const wgt_layout *l = &xs[i]->l;
        if (l->ndim == 1 && l->shape[0] == 0 && nd != 1) continue; /* PyTorch's legacy empty [0] */
        int ok = l->ndim == nd;
        for (int d = 0; ok && d < nd; d++) ok = d == dim || l->shape[d] == out->l.shape[d];
        if (!ok || pos + l->shape[dim] > out->l.shape[dim])
            return wgt_error(WGT_ERR_SHAPE, "cpu: cat: input %d does not fit the output along dim %d", i, dim);
        wgt_cpu_tensor part = *out;
        part.l.shape[dim] = l->shape[dim];
        part.l.offset += pos * out->l.strides[dim];
        CPU_TRY(wgt_cpu_cast(xs[i], &part));
        pos += l->shape[dim];
    }
    if (pos != out->l.shape[dim])
        return wgt_error(WGT_ERR_SHAPE, "cpu: cat: inputs give %lld along dim %d, output has %lld",
                         (long long)pos, dim, (long long)out->l.shape[dim]);
    return WGT_OK;
}

wgt_status wgt_cpu_stack(const wgt_cpu_tensor *const *xs, int n, int dim, const wgt_cpu_tensor *out)
{
    CPU_CHECK(out, "stack output");
    int nd = out->l.ndim;
    if (dim < 0 || dim >= nd || out->l.shape[dim] != n)
        return wgt_error(WGT_ERR_SHAPE, "cpu: stack: output dim %d must exist and have size %d", dim, n);
    for (int i = 0; i < n; i++) {
        CPU_CHECK(xs[i], "stack input");
        wgt_cpu_tensor part = *out; /* out.select(dim, i) */
        part.l.offset += i * out->l.strides[dim];
        for (int d = dim; d < nd - 1; d++)
            part.l.shape[d] = out->l.shape[d + 1], part.l.strides[d] = out->l.strides[d + 1];
        part.l.ndim = nd - 1;
        if (!cpu_same_shape(&xs[i]->l, &part.l))
            return wgt_error(WGT_ERR_SHAPE, "cpu: stack: input %d differs from the others' shape", i);
        CPU_TRY(wgt_cpu_cast(xs[i], &part));
    }
    return WGT_OK;
}

static wgt_status same_shape_io(const char *op, const wgt_cpu_tensor *x, const wgt_cpu_tensor *out)
{
    CPU_CHECK(x, op);
    CPU_CHECK(out, op);
    if (!cpu_same_shape(&x->l, &out->l))
        return wgt_error(WGT_ERR_SHAPE, "cpu: %s: output shape differs from the input's", op);
    return WGT_OK;
}

wgt_status wgt_cpu_flip(const wgt_cpu_tensor *x, uint32_t dims, const wgt_cpu_tensor *out)
{
    CPU_TRY(same_shape_io("flip", x, out));
    int nd = x->l.ndim;
    int64_t idx[WGT_MAX_DIMS] = {0}, src[WGT_MAX_DIMS];
    if (cpu_numel(out) == 0) return WGT_OK;
    do {
        for (int d = 0; d < nd; d++) src[d] = dims >> d & 1 ? x->l.shape[d] - 1 - idx[d] : idx[d];
        cpu_copy_elem(x, cpu_offset(&x->l, src), out, cpu_offset(&out->l, idx));
    } while (cpu_next(idx, out->l.shape, nd));
    return WGT_OK;
}

static int64_t pmod(int64_t a, int64_t n) { return n ? ((a % n) + n) % n : 0; }

wgt_status wgt_cpu_roll(const wgt_cpu_tensor *x, int n, const int64_t *shifts, const int *dims,
                        const wgt_cpu_tensor *out)
{
    CPU_TRY(same_shape_io("roll", x, out));
    int nd = x->l.ndim;
    int64_t total = cpu_numel(x);
    if (!dims) {
        if (n != 1) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: roll: flattened roll takes one shift");
        for (int64_t i = 0; i < total; i++)
            cpu_copy_elem(x, cpu_at(x, pmod(i - shifts[0], total)), out, cpu_at(out, i));
        return WGT_OK;
    }
    int64_t shift[WGT_MAX_DIMS] = {0};
    for (int i = 0; i < n; i++) {
        if (dims[i] < 0 || dims[i] >= nd)
            return wgt_error(WGT_ERR_SHAPE, "cpu: roll: dim %d out of range for %d dims", dims[i], nd);
        shift[dims[i]] += shifts[i];
    }
    int64_t idx[WGT_MAX_DIMS] = {0}, src[WGT_MAX_DIMS];
    if (total == 0) return WGT_OK;
    do {
        for (int d = 0; d < nd; d++) src[d] = pmod(idx[d] - shift[d], x->l.shape[d]);
        cpu_copy_elem(x, cpu_offset(&x->l, src), out, cpu_offset(&out->l, idx));
    } while (cpu_next(idx, out->l.shape, nd));
    return WGT_OK;
}

wgt_status wgt_cpu_repeat(const wgt_cpu_tensor *x, const wgt_cpu_tensor *out)
{
    CPU_CHECK(x, "repeat input");
    CPU_CHECK(out, "repeat output");
    int nd = out->l.ndim, lead = nd - x->l.ndim, ok = lead >= 0;
    for (int d = 0; ok && d < x->l.ndim; d++) {
        int64_t s = x->l.shape[d], o = out->l.shape[d + lead];
        ok = s ? o % s == 0 : o == 0;
    }
    if (!ok)
        return wgt_error(WGT_ERR_SHAPE, "cpu: repeat: output sizes must be whole multiples of the "
                         "input's (aligned on the right)");
    int64_t idx[WGT_MAX_DIMS] = {0}, src[WGT_MAX_DIMS];
    if (cpu_numel(out) == 0) return WGT_OK;
    do {
        for (int d = 0; d < x->l.ndim; d++) src[d] = idx[d + lead] % x->l.shape[d];
        cpu_copy_elem(x, cpu_offset(&x->l, src), out, cpu_offset(&out->l, idx));
    } while (cpu_next(idx, out->l.shape, nd));
    return WGT_OK;
}

wgt_status wgt_cpu_pad(const wgt_cpu_tensor *x, wgt_pad_mode mode, const int64_t *pads,
                       double value, const wgt_cpu_tensor *out)
{
    CPU_CHECK(x, "pad input");
    CPU_CHECK(out, "pad output");
    if ((unsigned)mode >= WGT_PAD_COUNT)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: unknown pad mode %d", (int)mode);
    int nd = x->l.ndim, ok = out->l.ndim == nd;
    for (int d = 0; ok && d < nd; d++) {
        int64_t n = x->l.shape[d], b = pads[d], e = pads[nd + d];
        ok = out->l.shape[d] == n + b + e;
        if (ok && mode != WGT_PAD_CONSTANT && (b > 0 || e > 0) && n == 0) ok = 0;
        if (ok && mode == WGT_PAD_REFLECT && (b >= n || e >= n) && (b > 0 || e > 0)) ok = 0;
    }
    if (!ok)
        return wgt_error(WGT_ERR_SHAPE, "cpu: pad (%s): output must be input + pads along every dim "
                         "(reflect: pads < size; non-constant modes need a non-empty dim)",
                         wgt_pad_mode_name(mode));
    int64_t idx[WGT_MAX_DIMS] = {0}, src[WGT_MAX_DIMS];
    int integral = value == trunc(value) && fabs(value) < 9e18;
    if (cpu_numel(out) == 0) return WGT_OK;
    do {
        int inside = 1;
        for (int d = 0; d < nd; d++) {
            int64_t n = x->l.shape[d], s = idx[d] - pads[d];
            if (s < 0 || s >= n) {
                switch (mode) {
                case WGT_PAD_CONSTANT: inside = 0; break;
                case WGT_PAD_REFLECT: s = s < 0 ? -s : 2 * (n - 1) - s; break;
                case WGT_PAD_REPLICATE: s = s < 0 ? 0 : n - 1; break;
                default: s = pmod(s, n); break;
                }
            }
            src[d] = s;
        }
        int64_t to = cpu_offset(&out->l, idx);
        if (inside) cpu_copy_elem(x, cpu_offset(&x->l, src), out, to);
        else if (integral && !wgt_cpu_is_float(out->l.dtype)) store_int(out, to, (int64_t)value);
        else wgt_cpu_store_f(out, to, value);
    } while (cpu_next(idx, out->l.shape, nd));
    return WGT_OK;
}
