/* Indexing: index_select, gather, scatter, index_add, index_put, masked_fill, masked_select,
 * nonzero, one_hot (embedding, the rope family's, is in rope.c). Loops walk a multi-index over
 * the tensor that drives the op. */
#include "cpu/cpu_internal.h"

#include <string.h>

/* Integer value of t at multi-index idx. */
static int64_t load_index(const wgt_cpu_tensor *t, const int64_t *idx)
{
    return wgt_cpu_load_i(t, cpu_offset(&t->l, idx));
}

static wgt_status check_dim(const char *op, int dim, int ndim)
{
    if (dim < 0 || dim >= ndim)
        return wgt_error(WGT_ERR_SHAPE, "cpu: %s: dim %d out of range for %d dims", op, dim, ndim);
    return WGT_OK;
}

/* out = self unless they are the same tensor. */
static wgt_status copy_self(const char *op, const wgt_cpu_tensor *self, const wgt_cpu_tensor *out)
{
    CPU_CHECK(self, op);
    CPU_CHECK(out, op);
    if (!cpu_same_shape(&self->l, &out->l) || self->l.dtype != out->l.dtype)
        return wgt_error(WGT_ERR_SHAPE, "cpu: %s: output must have self's shape and dtype", op);
    if (self->data == out->data && !memcmp(&self->l, &out->l, sizeof self->l)) return WGT_OK;
    return wgt_cpu_copy(self, out);
}

wgt_status wgt_cpu_index_select(const wgt_cpu_tensor *x, int dim, const wgt_cpu_tensor *index,
                                const wgt_cpu_tensor *out)
{
    CPU_CHECK(x, "index_select input");
    CPU_CHECK(out, "index_select output");
    CPU_TRY(cpu_check_index_dtype(index, "index_select index"));
    CPU_TRY(check_dim("index_select", dim, x->l.ndim));
    int64_t K = wgt_layout_numel(&index->l);
    int ok = index->l.ndim <= 1 && out->l.ndim == x->l.ndim && out->l.dtype == x->l.dtype;
    for (int d = 0; ok && d < x->l.ndim; d++) ok = out->l.shape[d] == (d == dim ? K : x->l.shape[d]);
    if (!ok)
        return wgt_error(WGT_ERR_SHAPE, "cpu: index_select: index must be 1-D and out x's shape and "
                         "dtype with dim %d of the index's length", dim);
    int64_t idx[WGT_MAX_DIMS] = {0};
    if (cpu_numel(out) == 0) return WGT_OK;
    do {
        int64_t k = idx[dim], j;
        CPU_TRY(cpu_wrap_index(wgt_cpu_load_i(index, cpu_at(index, k)), x->l.shape[dim], "index_select", &j));
        idx[dim] = j;
        int64_t at = cpu_offset(&x->l, idx);
        idx[dim] = k;
        cpu_copy_elem(x, at, out, cpu_offset(&out->l, idx));
    } while (cpu_next(idx, out->l.shape, out->l.ndim));
    return WGT_OK;
}

wgt_status wgt_cpu_gather(const wgt_cpu_tensor *x, int dim, const wgt_cpu_tensor *index,
                          const wgt_cpu_tensor *out)
{
    CPU_CHECK(x, "gather input");
    CPU_CHECK(out, "gather output");
    CPU_TRY(cpu_check_index_dtype(index, "gather index"));
    CPU_TRY(check_dim("gather", dim, x->l.ndim));
    int ok = index->l.ndim == x->l.ndim && cpu_same_shape(&index->l, &out->l) && out->l.dtype == x->l.dtype;
    for (int d = 0; ok && d < x->l.ndim; d++) ok = d == dim || index->l.shape[d] <= x->l.shape[d];
    if (!ok)
        return wgt_error(WGT_ERR_SHAPE, "cpu: gather: index must have x's ndim and sizes <= x's off "
                         "dim %d, and out the index's shape and x's dtype", dim);
    int64_t idx[WGT_MAX_DIMS] = {0};
    if (cpu_numel(out) == 0) return WGT_OK;
    do {
        int64_t k = idx[dim], j;
        CPU_TRY(cpu_wrap_index(load_index(index, idx), x->l.shape[dim], "gather", &j));
        idx[dim] = j;
        int64_t at = cpu_offset(&x->l, idx);
        idx[dim] = k;
        cpu_copy_elem(x, at, out, cpu_offset(&out->l, idx));
    } while (cpu_next(idx, out->l.shape, out->l.ndim));
    return WGT_OK;
}

/* out[to] (mode)= src[at] */
static void combine(wgt_scatter_mode mode, const wgt_cpu_tensor *src, int64_t at,
                    const wgt_cpu_tensor *out, int64_t to, double alpha)
{
    if (mode == WGT_SCATTER_SET) {
        cpu_copy_elem(src, at, out, to);
        return;
    }
    if (!wgt_cpu_is_float(out->l.dtype) && !wgt_cpu_is_float(src->l.dtype) && alpha == 1) {
        uint64_t a = (uint64_t)wgt_cpu_load_i(out, to), b = (uint64_t)wgt_cpu_load_i(src, at);
        int64_t r = mode == WGT_SCATTER_ADD ? (int64_t)(a + b) : mode == WGT_SCATTER_MUL ? (int64_t)(a * b)
                  : mode == WGT_SCATTER_AMAX ? ((int64_t)a > (int64_t)b ? (int64_t)a : (int64_t)b)
                  : ((int64_t)a < (int64_t)b ? (int64_t)a : (int64_t)b);
        wgt_cpu_store_i(out, to, r);
        return;
    }
    double a = wgt_cpu_load_f(out, to), b = alpha * wgt_cpu_load_f(src, at);
    double r = mode == WGT_SCATTER_ADD ? a + b : mode == WGT_SCATTER_MUL ? a * b
             : mode == WGT_SCATTER_AMAX ? (a != a || b != b ? a + b : a > b ? a : b)
             : (a != a || b != b ? a + b : a < b ? a : b);
    wgt_cpu_store_f(out, to, r);
}

wgt_status wgt_cpu_scatter(const wgt_cpu_tensor *self, int dim, const wgt_cpu_tensor *index,
                           const wgt_cpu_tensor *src, wgt_scatter_mode mode,
                           const wgt_cpu_tensor *out)
{
    if ((unsigned)mode >= WGT_SCATTER_COUNT)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: unknown scatter mode %d", (int)mode);
    CPU_TRY(cpu_check_index_dtype(index, "scatter index"));
    CPU_CHECK(src, "scatter src");
    CPU_TRY(copy_self("scatter", self, out));
    CPU_TRY(check_dim("scatter", dim, out->l.ndim));
    int nd = out->l.ndim, ok = index->l.ndim == nd && src->l.ndim == nd;
    for (int d = 0; ok && d < nd; d++)
        ok = index->l.shape[d] <= src->l.shape[d] && (d == dim || index->l.shape[d] <= out->l.shape[d]);
    if (!ok)
        return wgt_error(WGT_ERR_SHAPE, "cpu: scatter: index must have self's ndim, sizes <= src's, "
                         "and <= self's off dim %d", dim);
    int64_t idx[WGT_MAX_DIMS] = {0};
    if (wgt_layout_numel(&index->l) == 0) return WGT_OK;
    do {
        int64_t k = idx[dim], j;
        CPU_TRY(cpu_wrap_index(load_index(index, idx), out->l.shape[dim], "scatter", &j));
        int64_t at = cpu_offset(&src->l, idx);
        idx[dim] = j;
        int64_t to = cpu_offset(&out->l, idx);
        idx[dim] = k;
        combine(mode, src, at, out, to, 1);
    } while (cpu_next(idx, index->l.shape, nd));
    return WGT_OK;
}

wgt_status wgt_cpu_scatter_add(const wgt_cpu_tensor *self, int dim, const wgt_cpu_tensor *index,
                               const wgt_cpu_tensor *src, const wgt_cpu_tensor *out)
{
    return wgt_cpu_scatter(self, dim, index, src, WGT_SCATTER_ADD, out);
}

wgt_status wgt_cpu_index_add(const wgt_cpu_tensor *self, int dim, const wgt_cpu_tensor *index,
                             const wgt_cpu_tensor *source, double alpha,
                             const wgt_cpu_tensor *out)
{
    CPU_TRY(cpu_check_index_dtype(index, "index_add index"));
    CPU_CHECK(source, "index_add source");
    CPU_TRY(copy_self("index_add", self, out));
    CPU_TRY(check_dim("index_add", dim, out->l.ndim));
    int64_t K = wgt_layout_numel(&index->l);
    int nd = out->l.ndim, ok = index->l.ndim <= 1 && source->l.ndim == nd;
    for (int d = 0; ok && d < nd; d++) ok = source->l.shape[d] == (d == dim ? K : out->l.shape[d]);
    if (!ok)
        return wgt_error(WGT_ERR_SHAPE, "cpu: index_add: source must be self's shape with dim %d of "
                         "the (1-D) index's length", dim);
    int64_t idx[WGT_MAX_DIMS] = {0};
    if (wgt_layout_numel(&source->l) == 0) return WGT_OK;
    do {
        int64_t k = idx[dim], j;
        CPU_TRY(cpu_wrap_index(wgt_cpu_load_i(index, cpu_at(index, k)), out->l.shape[dim], "index_add", &j));
        int64_t at = cpu_offset(&source->l, idx);
        idx[dim] = j;
        int64_t to = cpu_offset(&out->l, idx);
        idx[dim] = k;
        combine(WGT_SCATTER_ADD, source, at, out, to, alpha);
    } while (cpu_next(idx, source->l.shape, nd));
    return WGT_OK;
}

/* The broadcast shape of n layouts into (ndim, shape). */
static wgt_status broadcast_shape(const wgt_layout *const *ls, int n, const char *op, int *ndim,
                                  int64_t *shape)
{
    int nd = 0;
    for (int i = 0; i < n; i++) nd = ls[i]->ndim > nd ? ls[i]->ndim : nd;
    for (int d = 0; d < nd; d++) shape[d] = 1;
    for (int i = 0; i < n; i++)
        for (int d = 0; d < ls[i]->ndim; d++) {
            int64_t s = ls[i]->shape[d], *t = &shape[nd - ls[i]->ndim + d];
            if (s == *t || s == 1) continue;
            if (*t != 1) return wgt_error(WGT_ERR_SHAPE, "cpu: %s: shapes do not broadcast", op);
            *t = s;
        }
    *ndim = nd;
    return WGT_OK;
}

wgt_status wgt_cpu_index_put(const wgt_cpu_tensor *self, const wgt_cpu_tensor *const *indices,
                             int k, const wgt_cpu_tensor *values, int accumulate,
                             const wgt_cpu_tensor *out)
{
    CPU_TRY(copy_self("index_put", self, out));
    CPU_CHECK(values, "index_put values");
    int nd = out->l.ndim;
    if (k < 1 || k > nd || k > WGT_MAX_DIMS)
        return wgt_error(WGT_ERR_SHAPE, "cpu: index_put: %d index tensors for %d dims", k, nd);
    const wgt_layout *ls[WGT_MAX_DIMS];
    for (int i = 0; i < k; i++) {
        CPU_TRY(cpu_check_index_dtype(indices[i], "index_put index"));
        ls[i] = &indices[i]->l;
    }
    int sn = 0;
    int64_t full[2 * WGT_MAX_DIMS];
    CPU_TRY(broadcast_shape(ls, k, "index_put indices", &sn, full));
    if (sn + nd - k > WGT_MAX_DIMS)
        return wgt_error(WGT_ERR_SHAPE, "cpu: index_put: indexed result has more than %d dims", WGT_MAX_DIMS);
    for (int d = k; d < nd; d++) full[sn + d - k] = out->l.shape[d];
    int fn = sn + nd - k;
    wgt_cpu_tensor ib[WGT_MAX_DIMS], vb = {values->data, {0}};
    for (int i = 0; i < k; i++) {
        ib[i].data = indices[i]->data;
        CPU_TRY(wgt_cpu_broadcast_to(&indices[i]->l, sn, full, &ib[i].l, "index_put index"));
    }
    CPU_TRY(wgt_cpu_broadcast_to(&values->l, fn, full, &vb.l, "index_put values"));
    int64_t idx[WGT_MAX_DIMS] = {0}, pos[WGT_MAX_DIMS];
    for (int d = 0; d < fn; d++)
        if (full[d] == 0) return WGT_OK;
    do {
        for (int i = 0; i < k; i++)
            CPU_TRY(cpu_wrap_index(load_index(&ib[i], idx), out->l.shape[i], "index_put", &pos[i]));
        for (int d = k; d < nd; d++) pos[d] = idx[sn + d - k];
        combine(accumulate ? WGT_SCATTER_ADD : WGT_SCATTER_SET, &vb, cpu_offset(&vb.l, idx), out,
                cpu_offset(&out->l, pos), 1);
    } while (cpu_next(idx, full, fn));
    return WGT_OK;
}

static int nonzero_at(const wgt_cpu_tensor *t, int64_t at)
{
    return wgt_cpu_is_float(t->l.dtype) ? wgt_cpu_load_f(t, at) != 0 : wgt_cpu_load_i(t, at) != 0;
}

wgt_status wgt_cpu_masked_fill(const wgt_cpu_tensor *x, const wgt_cpu_tensor *mask, double value,
                               const wgt_cpu_tensor *out)
{
    wgt_cpu_tensor xb, mb;
    CPU_CHECK(out, "masked_fill output");
    CPU_TRY(cpu_broadcast_view(x, out, "masked_fill input", &xb));
    CPU_TRY(cpu_broadcast_view(mask, out, "masked_fill mask", &mb));
    int64_t n = cpu_numel(out);
    for (int64_t i = 0; i < n; i++) {
        int64_t to = cpu_at(out, i);
        if (!nonzero_at(&mb, cpu_at(&mb, i))) cpu_copy_elem(&xb, cpu_at(&xb, i), out, to);
        else if (!wgt_cpu_is_float(out->l.dtype) && value == (double)(int64_t)value)
            wgt_cpu_store_i(out, to, (int64_t)value); /* exact for i64 */
        else wgt_cpu_store_f(out, to, value);
    }
    return WGT_OK;
}

wgt_status wgt_cpu_masked_select(const wgt_cpu_tensor *x, const wgt_cpu_tensor *mask,
                                 const wgt_cpu_tensor *out, int64_t *count)
{
    CPU_CHECK(x, "masked_select input");
    CPU_CHECK(mask, "masked_select mask");
    const wgt_layout *ls[2] = {&x->l, &mask->l};
    int nd = 0;
    int64_t shape[WGT_MAX_DIMS];
    CPU_TRY(broadcast_shape(ls, 2, "masked_select", &nd, shape));
    wgt_cpu_tensor xb = {x->data, {0}}, mb = {mask->data, {0}};
    CPU_TRY(wgt_cpu_broadcast_to(&x->l, nd, shape, &xb.l, "masked_select input"));
    CPU_TRY(wgt_cpu_broadcast_to(&mask->l, nd, shape, &mb.l, "masked_select mask"));
    int64_t n = wgt_layout_numel(&xb.l), c = 0;
    for (int64_t i = 0; i < n; i++) c += nonzero_at(&mb, cpu_at(&mb, i));
    *count = c;
    if (!out) return WGT_OK;
    CPU_CHECK(out, "masked_select output");
    if (out->l.ndim != 1 || out->l.shape[0] < c || out->l.dtype != x->l.dtype)
        return wgt_error(WGT_ERR_SHAPE, "cpu: masked_select: output must be 1-D of x's dtype with "
                         "room for %lld elements", (long long)c);
    for (int64_t i = 0, j = 0; i < n; i++)
        if (nonzero_at(&mb, cpu_at(&mb, i))) cpu_copy_elem(&xb, cpu_at(&xb, i), out, cpu_at(out, j++));
    return WGT_OK;
}

wgt_status wgt_cpu_nonzero(const wgt_cpu_tensor *x, const wgt_cpu_tensor *out, int64_t *count)
{
    CPU_CHECK(x, "nonzero input");
    int64_t n = cpu_numel(x), c = 0;
    for (int64_t i = 0; i < n; i++) c += nonzero_at(x, cpu_at(x, i));
    *count = c;
    if (!out) return WGT_OK;
    CPU_TRY(cpu_check_index_dtype(out, "nonzero output"));
    if (out->l.ndim != 2 || out->l.shape[0] < c || out->l.shape[1] != x->l.ndim)
        return wgt_error(WGT_ERR_SHAPE, "cpu: nonzero: output must be [>= %lld, %d]", (long long)c,
                         x->l.ndim);
    int64_t idx[WGT_MAX_DIMS] = {0}, row = 0;
    if (n == 0) return WGT_OK;
    do {
        if (!nonzero_at(x, cpu_offset(&x->l, idx))) continue;
        for (int d = 0; d < x->l.ndim; d++)
            wgt_cpu_store_i(out, out->l.offset + row * out->l.strides[0] + d * out->l.strides[1], idx[d]);
        row++;
    } while (cpu_next(idx, x->l.shape, x->l.ndim));
    return WGT_OK;
}

wgt_status wgt_cpu_one_hot(const wgt_cpu_tensor *x, int axis, double off_value, double on_value,
                           const wgt_cpu_tensor *out)
{
    CPU_TRY(cpu_check_index_dtype(x, "one_hot indices"));
    CPU_CHECK(out, "one_hot output");
    int nd = x->l.ndim, ok = out->l.ndim == nd + 1 && axis >= 0 && axis <= nd;
    for (int d = 0; ok && d < nd; d++) ok = out->l.shape[d < axis ? d : d + 1] == x->l.shape[d];
    if (!ok)
        return wgt_error(WGT_ERR_SHAPE, "cpu: one_hot: out must be x's shape with the depth at axis %d",
                         axis);
    int64_t depth = out->l.shape[axis], idx[WGT_MAX_DIMS] = {0}, xi[WGT_MAX_DIMS];
    if (cpu_numel(out) == 0) return WGT_OK;
    do {
        for (int d = 0; d < nd; d++) xi[d] = idx[d < axis ? d : d + 1];
        int64_t v = load_index(x, xi);
        if (v < 0) v += depth;
        wgt_cpu_store_f(out, cpu_offset(&out->l, idx), v == idx[axis] ? on_value : off_value);
    } while (cpu_next(idx, out->l.shape, out->l.ndim));
    return WGT_OK;
}
