/* The ONNX executor's device backend: for each CPU reference the executor calls, an adapter with
 * the reference's signature that uploads the host tensors with their layout, calls the op API on
 * the device and writes the result into the caller's output tensor. Which adapter stands for which
 * reference is the op table's onnx column (`ONNX("MatMul", g_matmul)` in src/ops/matmul.def): the
 * rows expand below into {reference, adapter} pairs, each checked at compile time to have the
 * reference's type. The mapping from ONNX nodes to references is onnx_ops*.c's. */
#include "onnx/onnx_gpu.h"

#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "cpu/pool.h"
#include "ops/ops.h"

static wgt_context *gctx; /* the device of the backend handed out last */

/* A device tensor with t's layout over a copy of the storage elements it reaches. */
static wgt_status up(const wgt_cpu_tensor *t, wgt_tensor **out)
{
    *out = NULL;
    if (!t || !t->data) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "onnx gpu: an input without data");
    int64_t lo, hi;
    op_extent(&t->l, &lo, &hi);
    int64_t n = hi >= lo ? hi + 1 : t->l.offset + 1;
    wgt_tensor *base;
    wgt_status st = wgt_tensor_from_host(gctx, t->l.dtype, 1, &n, t->data, &base);
    if (st) return st;
    st = wgt_tensor_new_view(base, &t->l, out);
    wgt_tensor_free(base);
    return st;
}

static int same_shape(const wgt_tensor *y, const wgt_layout *l)
{
    if (y->l.ndim != l->ndim) return 0;
    for (int d = 0; d < l->ndim; d++)
        if (y->l.shape[d] != l->shape[d]) return 0;
    return 1;
}

/* Write y (frees it) into out's layout: broadcast to out's shape and converted to its dtype on the
 * device first, then read back. */
static wgt_status down(wgt_tensor *y, const wgt_cpu_tensor *out)
{
    wgt_status st = WGT_OK;
    if (!same_shape(y, &out->l)) {
        wgt_tensor *e;
        st = wgt_tensor_expand(y, out->l.ndim, out->l.shape, &e);
        wgt_tensor_free(y);
        if (st) return st;
        y = e;
    }
    if (y->l.dtype != out->l.dtype || !wgt_layout_is_contiguous(&y->l)) {
        wgt_tensor *c;
        st = wgt_tensor_cast(y, out->l.dtype, &c);
        wgt_tensor_free(y);
        if (st) return st;
        y = c;
    }
    size_t es = wgt_dtype_size(out->l.dtype), bytes = (size_t)wgt_layout_numel(&out->l) * es;
    if (wgt_layout_is_contiguous(&out->l)) {
        st = wgt_tensor_to_host(y, (char *)out->data + out->l.offset * (int64_t)es, bytes);
    } else {
        void *tmp = malloc(bytes ? bytes : 1);
        if (!tmp) st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "onnx gpu: no memory for a result");
        else if (!(st = wgt_tensor_to_host(y, tmp, bytes))) {
            wgt_cpu_tensor src = wgt_cpu_tensor_make(tmp, out->l.dtype, out->l.ndim, out->l.shape);
            st = wgt_cpu_copy(&src, out); /* only places the bytes into out's strided layout */
        }
        free(tmp);
    }
    wgt_tensor_free(y);
    return st;
}

static wgt_status g_unary(wgt_unary_op op, const wgt_unary_params *p, const wgt_cpu_tensor *x,
                          const wgt_cpu_tensor *out)
{
    wgt_tensor *a, *y;
    wgt_status st = up(x, &a);
    if (st) return st;
    st = wgt_unary_ex(op, p, a, &y);
    wgt_tensor_free(a);
    return st ? st : down(y, out);
}

static wgt_status g_binary(wgt_binary_op op, const wgt_cpu_tensor *a, const wgt_cpu_tensor *b,
                           const wgt_cpu_tensor *out)
{
    /* the reference's true division truncates into an integer output (ONNX Div): the op API's
     * spelling of that is div_trunc (its div of integers gives f32) */
    if (op == WGT_BINARY_DIV && !op_is_float(out->l.dtype)) op = WGT_BINARY_DIV_TRUNC;
    wgt_tensor *ta, *tb = NULL, *y;
    wgt_status st = up(a, &ta);
    if (!st) st = up(b, &tb);
    if (!st) st = wgt_binary(op, ta, tb, &y);
    wgt_tensor_free(ta);
    wgt_tensor_free(tb);
    return st ? st : down(y, out);
}

static wgt_status g_where(const wgt_cpu_tensor *c, const wgt_cpu_tensor *a, const wgt_cpu_tensor *b,
                          const wgt_cpu_tensor *out)
{
    wgt_tensor *tc, *ta = NULL, *tb = NULL, *y;
    wgt_status st = up(c, &tc);
    if (!st) st = up(a, &ta);
    if (!st) st = up(b, &tb);
    if (!st) st = wgt_where(tc, ta, tb, &y);
    wgt_tensor_free(tc);
    wgt_tensor_free(ta);
    wgt_tensor_free(tb);
    return st ? st : down(y, out);
}

static wgt_status g_cast(const wgt_cpu_tensor *x, const wgt_cpu_tensor *out)
{
    wgt_tensor *a, *e = NULL, *y;
    wgt_status st = up(x, &a);
    if (st) return st;
    st = wgt_tensor_expand(a, out->l.ndim, out->l.shape, &e);
    if (!st) st = wgt_tensor_cast(e, out->l.dtype, &y);
    wgt_tensor_free(a);
    wgt_tensor_free(e);
    return st ? st : down(y, out);
}

static wgt_status g_copy(const wgt_cpu_tensor *x, const wgt_cpu_tensor *out)
{
    wgt_tensor *a, *e = NULL, *y;
    wgt_status st = up(x, &a);
    if (st) return st;
    st = wgt_tensor_expand(a, out->l.ndim, out->l.shape, &e);
    if (!st) st = wgt_tensor_copy(e, &y);
    wgt_tensor_free(a);
    wgt_tensor_free(e);
    return st ? st : down(y, out);
}

static wgt_status g_full(double value, const wgt_cpu_tensor *out)
{
    wgt_tensor *y;
    wgt_status st = wgt_full(gctx, out->l.dtype, out->l.ndim, out->l.shape, value, &y);
    return st ? st : down(y, out);
}

/* ---- matrix products, indexing, shape ops ---- */

static wgt_status g_matmul(const wgt_cpu_tensor *a, const wgt_cpu_tensor *b, const wgt_cpu_tensor *out)
{
    wgt_tensor *ta, *tb = NULL, *y;
    wgt_status st = up(a, &ta);
    if (!st) st = up(b, &tb);
    if (!st) st = wgt_matmul(ta, tb, &y);
    wgt_tensor_free(ta);
    wgt_tensor_free(tb);
    return st ? st : down(y, out);
}

static wgt_status g_addmm(const wgt_cpu_tensor *self, const wgt_cpu_tensor *m1, const wgt_cpu_tensor *m2,
                          double beta, double alpha, const wgt_cpu_tensor *out)
{
    wgt_tensor *ts = NULL, *t1 = NULL, *t2 = NULL, *y;
    wgt_status st = self ? up(self, &ts) : WGT_OK;
    if (!st) st = up(m1, &t1);
    if (!st) st = up(m2, &t2);
    if (!st) st = wgt_addmm(ts, t1, t2, beta, alpha, &y);
    wgt_tensor_free(ts);
    wgt_tensor_free(t1);
    wgt_tensor_free(t2);
    return st ? st : down(y, out);
}

static wgt_status g_index_select(const wgt_cpu_tensor *x, int dim, const wgt_cpu_tensor *index,
                                 const wgt_cpu_tensor *out)
{
    wgt_tensor *tx, *ti = NULL, *y;
    wgt_status st = up(x, &tx);
    if (!st) st = up(index, &ti);
    if (!st) st = wgt_index_select(tx, dim, ti, &y);
    if (!st && (st = wgt_index_check(gctx))) wgt_tensor_free(y);
    wgt_tensor_free(tx);
    wgt_tensor_free(ti);
    return st ? st : down(y, out);
}

static wgt_status g_gather(const wgt_cpu_tensor *x, int dim, const wgt_cpu_tensor *index, const wgt_cpu_tensor *out)
{
    wgt_tensor *tx, *ti = NULL, *y;
    wgt_status st = up(x, &tx);
    if (!st) st = up(index, &ti);
    if (!st) st = wgt_gather(tx, dim, ti, &y);
    if (!st && (st = wgt_index_check(gctx))) wgt_tensor_free(y);
    wgt_tensor_free(tx);
    wgt_tensor_free(ti);
    return st ? st : down(y, out);
}

static wgt_status g_scatter(const wgt_cpu_tensor *self, int dim, const wgt_cpu_tensor *index,
                            const wgt_cpu_tensor *src, wgt_scatter_mode mode, const wgt_cpu_tensor *out)
{
    wgt_tensor *ts, *ti = NULL, *tv = NULL, *y;
    wgt_status st = up(self, &ts);
    if (!st) st = up(index, &ti);
    if (!st) st = up(src, &tv);
    if (!st) st = wgt_scatter(ts, dim, ti, tv, mode, &y);
    if (!st && (st = wgt_index_check(gctx))) wgt_tensor_free(y);
    wgt_tensor_free(ts);
    wgt_tensor_free(ti);
    wgt_tensor_free(tv);
    return st ? st : down(y, out);
}

static wgt_status g_index_put(const wgt_cpu_tensor *self, const wgt_cpu_tensor *const *indices, int k,
                              const wgt_cpu_tensor *values, int accumulate, const wgt_cpu_tensor *out)
{
    enum { MAX = 8 };
    if (k > MAX) return wgt_error(WGT_ERR_UNSUPPORTED, "onnx gpu: index_put with %d index tensors", k);
    wgt_tensor *ts, *tv = NULL, *ti[MAX] = {0}, *y;
    wgt_status st = up(self, &ts);
    if (!st) st = up(values, &tv);
    for (int i = 0; !st && i < k; i++) st = up(indices[i], &ti[i]);
    if (!st) st = wgt_index_put(ts, (const wgt_tensor *const *)ti, k, tv, accumulate, &y);
    if (!st && (st = wgt_index_check(gctx))) wgt_tensor_free(y);
    wgt_tensor_free(ts);
    wgt_tensor_free(tv);
    for (int i = 0; i < k; i++) wgt_tensor_free(ti[i]);
    return st ? st : down(y, out);
}

/* The reference's out is [cap, ndim] (or NULL to count): the device's [count, ndim] fills its
 * first count rows. */
static wgt_status g_nonzero(const wgt_cpu_tensor *x, const wgt_cpu_tensor *out, int64_t *count)
{
    wgt_tensor *tx, *y;
    wgt_status st = up(x, &tx);
    if (!st) st = wgt_nonzero(tx, &y);
    wgt_tensor_free(tx);
    if (st) return st;
    *count = wgt_tensor_dim(y, 0);
    if (!out) {
        wgt_tensor_free(y);
        return WGT_OK;
    }
    if (out->l.ndim != 2 || out->l.shape[0] < *count) {
        wgt_tensor_free(y);
        return wgt_error(WGT_ERR_SHAPE, "onnx gpu: nonzero found %lld elements, more than the output holds",
                         (long long)*count);
    }
    wgt_cpu_tensor rows = *out;
    rows.l.shape[0] = *count;
    return down(y, &rows);
}

static wgt_status g_one_hot(const wgt_cpu_tensor *x, int axis, double off, double on, const wgt_cpu_tensor *out)
{
    wgt_tensor *tx, *y;
    wgt_status st = up(x, &tx);
    int a = axis < 0 ? axis + out->l.ndim : axis;
    if (!st && (a < 0 || a >= out->l.ndim)) st = wgt_error(WGT_ERR_SHAPE, "onnx gpu: one_hot axis %d", axis);
    if (!st) st = wgt_one_hot(tx, out->l.shape[a], axis, off, on, out->l.dtype, &y);
    wgt_tensor_free(tx);
    return st ? st : down(y, out);
}

static wgt_status g_tri(const wgt_cpu_tensor *x, int64_t k, const wgt_cpu_tensor *out, int upper)
{
    wgt_tensor *tx, *y;
    wgt_status st = up(x, &tx);
    if (!st) st = upper ? wgt_triu(tx, k, &y) : wgt_tril(tx, k, &y);
    wgt_tensor_free(tx);
    return st ? st : down(y, out);
}
static wgt_status g_tril(const wgt_cpu_tensor *x, int64_t k, const wgt_cpu_tensor *out) { return g_tri(x, k, out, 0); }
static wgt_status g_triu(const wgt_cpu_tensor *x, int64_t k, const wgt_cpu_tensor *out) { return g_tri(x, k, out, 1); }

/* The reference sizes arange by its output: an end half a step short of n steps gives n values. */
static wgt_status g_arange(double start, double step, const wgt_cpu_tensor *out)
{
    int64_t n = wgt_layout_numel(&out->l);
    wgt_tensor *y;
    wgt_status st = wgt_arange(gctx, start, start + ((double)n - 0.5) * step, step, out->l.dtype, &y);
    if (!st && wgt_tensor_numel(y) != n) {
        wgt_tensor_free(y);
        return wgt_error(WGT_ERR_INTERNAL, "onnx gpu: arange gave %lld values, %lld expected",
                         (long long)wgt_tensor_numel(y), (long long)n);
    }
    if (!st && out->l.ndim != 1) {
        wgt_tensor *r;
        st = wgt_tensor_reshape(y, out->l.ndim, out->l.shape, &r);
        wgt_tensor_free(y);
        y = r;
    }
    return st ? st : down(y, out);
}

static wgt_status g_cat(const wgt_cpu_tensor *const *xs, int n, int dim, const wgt_cpu_tensor *out)
{
    enum { MAX = 64 };
    if (n > MAX) return wgt_error(WGT_ERR_UNSUPPORTED, "onnx gpu: cat of %d tensors (at most %d)", n, MAX);
    wgt_tensor *t[MAX] = {0}, *y;
    wgt_status st = WGT_OK;
    for (int i = 0; !st && i < n; i++) st = up(xs[i], &t[i]);
    if (!st) st = wgt_cat((const wgt_tensor *const *)t, n, dim, &y);
    for (int i = 0; i < n; i++) wgt_tensor_free(t[i]);
    return st ? st : down(y, out);
}

static wgt_status g_flip(const wgt_cpu_tensor *x, uint32_t mask, const wgt_cpu_tensor *out)
{
    int dims[WGT_MAX_DIMS], n = 0;
    for (int d = 0; d < x->l.ndim; d++)
        if (mask & (1u << d)) dims[n++] = d;
    wgt_tensor *tx, *y;
    wgt_status st = up(x, &tx);
    if (!st) st = wgt_flip(tx, dims, n, &y);
    wgt_tensor_free(tx);
    return st ? st : down(y, out);
}

/* The repeat factors are out's shape over x's, aligned on the right. */
static wgt_status g_repeat(const wgt_cpu_tensor *x, const wgt_cpu_tensor *out)
{
    int64_t r[WGT_MAX_DIMS];
    int n = out->l.ndim, shift = n - x->l.ndim;
    if (shift < 0) return wgt_error(WGT_ERR_SHAPE, "onnx gpu: repeat to fewer dims");
    for (int d = 0; d < n; d++) {
        int64_t s = d >= shift ? x->l.shape[d - shift] : 1;
        r[d] = s ? out->l.shape[d] / s : 0;
    }
    wgt_tensor *tx, *y;
    wgt_status st = up(x, &tx);
    if (!st) st = wgt_repeat(tx, r, n, &y);
    wgt_tensor_free(tx);
    return st ? st : down(y, out);
}

static wgt_status g_pad(const wgt_cpu_tensor *x, wgt_pad_mode mode, const int64_t *pads, double value,
                        const wgt_cpu_tensor *out)
{
    wgt_tensor *tx, *y;
    wgt_status st = up(x, &tx);
    if (!st) st = wgt_pad(tx, mode, pads, value, &y);
    wgt_tensor_free(tx);
    return st ? st : down(y, out);
}

/* ---- reductions ---- */

static wgt_status g_reduce(wgt_reduce_op op, const wgt_cpu_tensor *x, uint32_t dims, int keepdim, double correction,
                           const wgt_cpu_tensor *out, const wgt_cpu_tensor *indices)
{
    wgt_tensor *tx, *y = NULL, *idx = NULL;
    wgt_status st = up(x, &tx);
    if (st) return st;
    if (indices) {
        /* values and indices together: torch.max(x, dim) for one dim */
        int dim = -1, n = 0;
        for (int d = 0; d < x->l.ndim; d++)
            if ((dims ? dims : ~0u) & (1u << d)) dim = d, n++;
        if (n != 1 || (op != WGT_REDUCE_AMAX && op != WGT_REDUCE_AMIN))
            st = wgt_error(WGT_ERR_UNSUPPORTED, "onnx gpu: %s with indices over %d dims", wgt_reduce_op_name(op), n);
        else if (op == WGT_REDUCE_AMAX) st = wgt_max_dim(tx, dim, keepdim, &y, &idx);
        else st = wgt_min_dim(tx, dim, keepdim, &y, &idx);
    } else
        st = wgt_reduce(op, tx, dims, keepdim, correction, &y);
    wgt_tensor_free(tx);
    if (st) return st;
    st = down(y, out);
    if (idx) st = st ? (wgt_tensor_free(idx), st) : down(idx, indices);
    return st;
}

/* ---- scans, softmax, norms ---- */

/* ONNX CumSum's reverse and exclusive forms from the inclusive scan: flip around it, and shift by
 * one along dim (pad the identity in front, crop the last) before it. */
static wgt_status g_scan(wgt_scan_op op, const wgt_cpu_tensor *x, int dim, int exclusive, int reverse,
                         const wgt_cpu_tensor *out, const wgt_cpu_tensor *indices)
{
    if ((exclusive || reverse) && indices)
        return wgt_error(WGT_ERR_UNSUPPORTED, "onnx gpu: %s with indices, exclusive or reversed", wgt_scan_op_name(op));
    if (exclusive && op != WGT_SCAN_CUMSUM && op != WGT_SCAN_CUMPROD)
        return wgt_error(WGT_ERR_UNSUPPORTED, "onnx gpu: exclusive %s", wgt_scan_op_name(op));
    wgt_tensor *t, *u, *y = NULL, *idx = NULL;
    wgt_status st = up(x, &t);
    if (!st && reverse) {
        st = wgt_flip(t, &dim, 1, &u);
        wgt_tensor_free(t);
        t = st ? NULL : u;
    }
    if (!st && exclusive && x->l.ndim > 0) {
        int64_t pads[2 * WGT_MAX_DIMS] = {0};
        pads[dim] = 1, pads[x->l.ndim + dim] = -1;
        st = wgt_pad(t, WGT_PAD_CONSTANT, pads, op == WGT_SCAN_CUMPROD ? 1.0 : 0.0, &u);
        wgt_tensor_free(t);
        t = st ? NULL : u;
    }
    if (!st) st = wgt_scan(op, t, dim, &y, indices ? &idx : NULL);
    wgt_tensor_free(t);
    if (!st && reverse) {
        st = wgt_flip(y, &dim, 1, &u);
        wgt_tensor_free(y);
        y = st ? NULL : u;
    }
    if (st) {
        wgt_tensor_free(idx);
        return st;
    }
    st = down(y, out);
    if (idx) st = st ? (wgt_tensor_free(idx), st) : down(idx, indices);
    return st;
}

static wgt_status g_softmax_any(const wgt_cpu_tensor *x, int dim, const wgt_cpu_tensor *out, int log)
{
    wgt_tensor *t, *y;
    wgt_status st = up(x, &t);
    if (!st) st = log ? wgt_log_softmax(t, dim, &y) : wgt_softmax(t, dim, &y);
    wgt_tensor_free(t);
    return st ? st : down(y, out);
}
static wgt_status g_softmax(const wgt_cpu_tensor *x, int dim, const wgt_cpu_tensor *out)
{
    return g_softmax_any(x, dim, out, 0);
}
static wgt_status g_log_softmax(const wgt_cpu_tensor *x, int dim, const wgt_cpu_tensor *out)
{
    return g_softmax_any(x, dim, out, 1);
}

/* Optional inputs: NULL stays NULL. */
static wgt_status up_opt(const wgt_cpu_tensor *t, wgt_tensor **out)
{
    *out = NULL;
    return t ? up(t, out) : WGT_OK;
}

static wgt_status g_layer_norm(const wgt_cpu_tensor *x, int norm_ndim, const wgt_cpu_tensor *w,
                               const wgt_cpu_tensor *b, double eps, const wgt_cpu_tensor *out,
                               const wgt_cpu_tensor *mean, const wgt_cpu_tensor *rstd)
{
    wgt_tensor *tx, *tw = NULL, *tb = NULL, *y;
    wgt_status st = up(x, &tx);
    if (!st) st = up_opt(w, &tw);
    if (!st) st = up_opt(b, &tb);
    if (!st) st = wgt_layer_norm(tx, norm_ndim, tw, tb, eps, &y);
    if (!st) st = down(y, out);
    if (!st && (mean || rstd)) {
        /* ONNX's optional outputs, which the op does not return: mean and 1 / sqrt(var + eps) over
         * the normalised dims (biased variance), from the reductions */
        uint32_t dims = 0;
        for (int d = x->l.ndim - norm_ndim; d < x->l.ndim; d++) dims |= 1u << d;
        wgt_tensor *m = NULL, *v = NULL, *e = NULL, *ve = NULL, *r = NULL;
        if (mean && !(st = wgt_reduce(WGT_REDUCE_MEAN, tx, dims, 1, 0, &m))) st = down(m, mean);
        if (!st && rstd && !(st = wgt_reduce(WGT_REDUCE_VAR, tx, dims, 1, 0, &v)) &&
            !(st = wgt_full(gctx, wgt_tensor_dtype(v), 0, NULL, eps, &e)) && !(st = wgt_binary(WGT_BINARY_ADD, v, e, &ve)) &&
            !(st = wgt_unary(WGT_UNARY_RSQRT, ve, &r)))
            st = down(r, rstd);
        wgt_tensor_free(v);
        wgt_tensor_free(e);
        wgt_tensor_free(ve);
    }
    wgt_tensor_free(tx);
    wgt_tensor_free(tw);
    wgt_tensor_free(tb);
    return st;
}

static wgt_status g_group_norm(const wgt_cpu_tensor *x, int groups, const wgt_cpu_tensor *w, const wgt_cpu_tensor *b,
                               double eps, const wgt_cpu_tensor *out)
{
    wgt_tensor *tx, *tw = NULL, *tb = NULL, *y;
    wgt_status st = up(x, &tx);
    if (!st) st = up_opt(w, &tw);
    if (!st) st = up_opt(b, &tb);
    if (!st) st = wgt_group_norm(tx, groups, tw, tb, eps, &y);
    wgt_tensor_free(tx);
    wgt_tensor_free(tw);
    wgt_tensor_free(tb);
    return st ? st : down(y, out);
}

/* Training updates the running statistics in place: they are read back into the caller's. */
static wgt_status g_batch_norm(const wgt_cpu_tensor *x, const wgt_cpu_tensor *rm, const wgt_cpu_tensor *rv,
                               const wgt_cpu_tensor *w, const wgt_cpu_tensor *b, int training, double momentum,
                               double eps, const wgt_cpu_tensor *out)
{
    wgt_tensor *tx, *tm = NULL, *tv = NULL, *tw = NULL, *tb = NULL, *y;
    wgt_status st = up(x, &tx);
    if (!st) st = up_opt(rm, &tm);
    if (!st) st = up_opt(rv, &tv);
    if (!st) st = up_opt(w, &tw);
    if (!st) st = up_opt(b, &tb);
    if (!st) st = wgt_batch_norm(tx, tm, tv, tw, tb, training, momentum, eps, &y);
    if (!st) st = down(y, out);
    if (!st && training && tm) st = down(tm, rm), tm = NULL;
    if (!st && training && tv) st = down(tv, rv), tv = NULL;
    wgt_tensor_free(tx);
    wgt_tensor_free(tm);
    wgt_tensor_free(tv);
    wgt_tensor_free(tw);
    wgt_tensor_free(tb);
    return st;
}

/* Conv / ConvTranspose: bias may be NULL. */
static wgt_status g_conv_any(int transposed, const wgt_cpu_tensor *x, const wgt_cpu_tensor *w,
                             const wgt_cpu_tensor *b, const wgt_conv_params *p, const wgt_cpu_tensor *out)
{
    wgt_tensor *tx = NULL, *tw = NULL, *tb = NULL, *y = NULL;
    wgt_status st = up(x, &tx);
    if (!st) st = up(w, &tw);
    if (!st && b) st = up(b, &tb);
    if (!st) st = transposed ? wgt_conv_transpose(tx, tw, tb, p, &y) : wgt_conv(tx, tw, tb, p, &y);
    if (!st) st = down(y, out);
    wgt_tensor_free(tx);
    wgt_tensor_free(tw);
    wgt_tensor_free(tb);
    return st;
}
static wgt_status g_conv(const wgt_cpu_tensor *x, const wgt_cpu_tensor *w, const wgt_cpu_tensor *b,
                         const wgt_conv_params *p, const wgt_cpu_tensor *out)
{
    return g_conv_any(0, x, w, b, p, out);
}
static wgt_status g_conv_transpose(const wgt_cpu_tensor *x, const wgt_cpu_tensor *w, const wgt_cpu_tensor *b,
                                   const wgt_conv_params *p, const wgt_cpu_tensor *out)
{
    return g_conv_any(1, x, w, b, p, out);
}

/* Pooling and resampling: the geometry is the reference's (src/cpu/pool.h), turned back into the
 * op API's parameters; indices come back as i32 per plane and are widened into the caller's. */
static wgt_status g_pool(const struct wgt_cpu_pool_geom *g, const wgt_cpu_tensor *x, const wgt_cpu_tensor *out,
                         const wgt_cpu_tensor *indices)
{
    int sp = g->spatial, nd = x->l.ndim;
    wgt_pool_params p;
    memset(&p, 0, sizeof p);
    int64_t osize[2] = {0, 0};
    for (int i = 0; i < sp; i++) {
        int gi = 2 - sp + i;
        p.kernel[i] = g->k[gi], p.stride[i] = g->s[gi], p.padding[i] = g->p[gi], p.dilation[i] = g->d[gi];
        osize[i] = out->l.shape[nd - sp + i];
        /* the geometry has no ceil_mode: the output size says whether the last window was added */
        int64_t S = x->l.shape[nd - sp + i];
        if (g->s[gi] > 0 && (S + 2 * g->p[gi] - g->d[gi] * (g->k[gi] - 1) - 1) / g->s[gi] + 1 < osize[i])
            p.ceil_mode = 1;
    }
    p.count_include_pad = g->count_include_pad;
    p.divisor_override = g->divisor;
    wgt_tensor *t, *y = NULL, *idx = NULL;
    wgt_status st = up(x, &t);
    if (st) return st;
    switch (g->kind) {
    case WGT_CPU_POOL_MAX: st = wgt_max_pool(t, sp, &p, &y, indices ? &idx : NULL); break;
    case WGT_CPU_POOL_AVG: st = wgt_avg_pool(t, sp, &p, &y); break;
    case WGT_CPU_POOL_ADAPTIVE_MAX: st = wgt_adaptive_max_pool(t, sp, osize, &y, indices ? &idx : NULL); break;
    default: st = wgt_adaptive_avg_pool(t, sp, osize, &y); break;
    }
    wgt_tensor_free(t);
    if (!st) st = down(y, out), y = NULL;
    if (!st && idx) st = down(idx, indices), idx = NULL;
    wgt_tensor_free(y);
    wgt_tensor_free(idx);
    return st;
}

static wgt_status g_interpolate(const wgt_cpu_tensor *x, int spatial, wgt_interp_mode mode, const double *scales,
                                int align_corners, const wgt_cpu_tensor *out)
{
    wgt_tensor *t, *y;
    wgt_status st = up(x, &t);
    if (st) return st;
    st = wgt_interpolate(t, spatial, mode, out->l.shape + out->l.ndim - spatial, scales, align_corners, &y);
    wgt_tensor_free(t);
    return st ? st : down(y, out);
}

static wgt_status g_grid_sample(const wgt_cpu_tensor *x, const wgt_cpu_tensor *grid, wgt_grid_mode mode,
                                wgt_grid_padding padding, int align_corners, const wgt_cpu_tensor *out)
{
    wgt_tensor *t, *g = NULL, *y;
    wgt_status st = up(x, &t);
    if (!st) st = up(grid, &g);
    if (!st) st = wgt_grid_sample(t, g, mode, padding, align_corners, &y);
    wgt_tensor_free(t);
    wgt_tensor_free(g);
    return st ? st : down(y, out);
}

/* ---- sorting (TopK, Unique) ---- */

static wgt_status g_topk(const wgt_cpu_tensor *x, int64_t k, int dim, int largest, const wgt_cpu_tensor *values,
                         const wgt_cpu_tensor *indices)
{
    wgt_tensor *tx, *v = NULL, *i = NULL;
    wgt_status st = up(x, &tx);
    if (st) return st;
    st = wgt_topk(tx, k, dim, largest, 1, values ? &v : NULL, indices ? &i : NULL);
    wgt_tensor_free(tx);
    if (!st && v) st = down(v, values), v = NULL;
    if (!st && i) st = down(i, indices), i = NULL;
    wgt_tensor_free(v);
    wgt_tensor_free(i);
    return st;
}

/* The count alone when every output is NULL (the executor allocates, then calls again). */
static wgt_status g_unique(const wgt_cpu_tensor *x, const wgt_cpu_tensor *values, const wgt_cpu_tensor *inverse,
                           const wgt_cpu_tensor *counts, const wgt_cpu_tensor *first, int64_t *count)
{
    wgt_tensor *tx, *t[4] = {NULL, NULL, NULL, NULL};
    wgt_status st = up(x, &tx);
    if (st) return st;
    st = wgt_unique(tx, &t[0], inverse ? &t[1] : NULL, counts ? &t[2] : NULL, first ? &t[3] : NULL);
    wgt_tensor_free(tx);
    if (!st && count) *count = wgt_tensor_numel(t[0]);
    const wgt_cpu_tensor *outs[4] = {values, inverse, counts, first};
    for (int k = 0; k < 4; k++) {
        if (!st && outs[k] && wgt_layout_numel(&outs[k]->l) != wgt_tensor_numel(t[k]))
            st = wgt_error(WGT_ERR_SHAPE, "onnx gpu: unique output %d holds %lld elements, want %lld", k,
                           (long long)wgt_layout_numel(&outs[k]->l), (long long)wgt_tensor_numel(t[k]));
        if (!st && outs[k]) {
            /* 1-D results into outputs of any shape with that many elements */
            wgt_tensor *r;
            if (!(st = wgt_tensor_reshape(t[k], outs[k]->l.ndim, outs[k]->l.shape, &r))) {
                wgt_tensor_free(t[k]);
                t[k] = NULL;
                st = down(r, outs[k]);
            }
        }
    }
    for (int k = 0; k < 4; k++) wgt_tensor_free(t[k]);
    return st;
}

/* ---- losses ---- */

/* wgt_cross_entropy (or wgt_nll_loss for log-probabilities); a class out of range is an error. */
static wgt_status g_cross_entropy(const wgt_cpu_tensor *x, const wgt_cpu_tensor *target, const wgt_cpu_tensor *weight,
                                  int64_t ignore_index, double label_smoothing, int log_input, wgt_reduction reduction,
                                  const wgt_cpu_tensor *out)
{
    wgt_tensor *tx, *tt = NULL, *tw = NULL, *y;
    wgt_status st = up(x, &tx);
    if (!st) st = up(target, &tt);
    if (!st) st = up_opt(weight, &tw);
    if (!st)
        st = log_input ? wgt_nll_loss(tx, tt, tw, ignore_index, reduction, &y)
                       : wgt_cross_entropy(tx, tt, tw, ignore_index, label_smoothing, reduction, &y);
    if (!st && (st = wgt_index_check(gctx))) wgt_tensor_free(y);
    wgt_tensor_free(tx);
    wgt_tensor_free(tt);
    wgt_tensor_free(tw);
    return st ? st : down(y, out);
}

/* ---- the op table's onnx column ---- */

/* ONNX(types, adapter) rows give {reference, adapter}; ONNX_VIA and NO_ONNX rows nothing. */
#define ONNX(types_, adapter_) GPU_ADAPTER_, adapter_
#define ONNX_VIA(types_) GPU_NONE_, 0
#define NO_ONNX GPU_NONE_, 0
#define OP(name_, n_in_, n_out_, dtypes_, forward_, reference_, onnx_, grad_, doc_, harness_) \
    GPU_ROW_(name_, reference_, onnx_)
#define GPU_ROW_(...) GPU_ROW2_(__VA_ARGS__)
#define GPU_ROW2_(name_, reference_, kind_, adapter_) kind_(name_, reference_, adapter_)
#define GPU_NONE_(name_, reference_, adapter_)

/* An adapter stands in for its reference: the same type, or the build fails here. */
#define GPU_ADAPTER_(name_, reference_, adapter_)                                                                   \
    _Static_assert(__builtin_types_compatible_p(__typeof__(reference_), __typeof__(adapter_)),                   \
                   "row " name_ ": its onnx column names " #adapter_ ", which does not have the type of its "      \
                   "reference " #reference_ " (OP_VIEW and OP_COMPOSED are 0: no reference, use ONNX_VIA)");
#include "ops/optable_all.h"
#undef GPU_ADAPTER_

#define GPU_ADAPTER_(name_, reference_, adapter_) {(wgt_onnx_fn)reference_, (wgt_onnx_fn)adapter_},
static const struct {
    wgt_onnx_fn reference, adapter;
} adapters[] = {
#include "ops/optable_all.h"
};
#undef GPU_ADAPTER_
#undef GPU_NONE_
#undef GPU_ROW2_
#undef GPU_ROW_
#undef OP
#undef NO_ONNX
#undef ONNX_VIA
#undef ONNX

/* The adapter of a reference (rows that share a reference name the same one), or NULL. */
static wgt_onnx_fn gpu_fn_for(wgt_onnx_fn reference)
{
    for (size_t i = 0; i < sizeof adapters / sizeof *adapters; i++)
        if (adapters[i].reference == reference) return adapters[i].adapter;
    return NULL;
}

void wgt_onnx_gpu_backend(wgt_context *ctx, wgt_onnx_backend *out)
{
    gctx = ctx;
    out->name = "gpu";
    out->fn_for = gpu_fn_for;
}
