/* The ONNX executor's device backend: each member takes host tensors in the CPU reference's
 * signature (the mapping from ONNX nodes is onnx_ops*.c's), uploads them with their layout, calls
 * the op API on the device and writes the result into the caller's output tensor. */
#include "onnx/onnx_gpu.h"

#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
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

void wgt_onnx_gpu_backend(wgt_context *ctx, wgt_onnx_backend *out)
{
    gctx = ctx;
    memset(out, 0, sizeof *out);
    out->name = "gpu";
    out->unary = g_unary;
    out->binary = g_binary;
    out->where = g_where;
    out->cast = g_cast;
    out->copy = g_copy;
    out->full = g_full;
}
