/* Misc ops: diff, trace, diag, diag_embed, meshgrid and cdist. Most are views plus one existing
 * op (a diagonal is a view with stride s0 + s1: trace sums it, diag copies it out or assigns into
 * it, meshgrid only expands); cdist has its own kernel (src/kernels/misc_cdist.wgsl), and for p = 2
 * the matrix-product form. i64 differences and sums run in src/kernels/misc_i64.wgsl (exact, on
 * word pairs), i64 copies through the movement kernel. On a CPU context each runs its direct
 * reference (src/cpu/misc.c), so the differential tests compare the composition with an
 * independent loop. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "ops/index_shape.h"
#include "ops/ops.h"
#include "tensor/record.h"

/* ---- i64: exact kernels and copies ------------------------------------------------------------ */

typedef struct i64_params {
    uint32_t n, step, off, pad0;
    op_layout_params l;
} i64_params;

static char *i64_prelude(void *arg)
{
    char *pre = malloc(16384);
    if (!pre) return NULL;
    snprintf(pre, 16384, "%s\n%s\nconst WG: u32 = %uu;\n", op_wgsl_lib(), op_wgsl_lib_i64(), *(uint32_t *)arg);
    op_wgsl_loader(pre, 16384, "ld", "x", WGT_I64, "i64");
    op_wgsl_storer(pre, 16384, "st64", "out", WGT_I64, "i64");
    return pre;
}

/* Dispatch `entry` of misc_i64.wgsl over x (bound where it reaches) into out (all of it). */
static wgt_status i64_run(wgt_context *ctx, const char *entry, const wgt_tensor *x, i64_params *p, uint64_t groups,
                          wgt_tensor *out)
{
    uint32_t wg = op_workgroup_size(ctx);
    wgt_kernel *k;
    wgt_binding b[2];
    int64_t base, lo, hi;
    wgt_status st = wgt_gpu_kernel_keyed(ctx, "misc_i64", &wg, sizeof wg, i64_prelude, &wg, entry, NULL, 0, &k);
    if (st) return st;
    op_extent(&x->l, &lo, &hi);
    if (hi < lo) lo = hi = x->l.offset;
    if ((st = op_bind(x, lo, hi, &b[0], &base)) || (st = op_bind_all(out, &b[1], &lo))) return st;
    p->off = (uint32_t)(x->l.offset - base);
    uint32_t gx, gy;
    op_grid(ctx, groups, &gx, &gy);
    return wgt_gpu_dispatch(ctx, k, p, sizeof *p, b, 2, gx, gy, 1);
}

/* One difference of i64 x along dim, [..., L, ...] -> [..., L - 1, ...] (L >= 1), wrapping. */
static wgt_status diff_i64(wgt_context *ctx, const wgt_tensor *x, int dim, wgt_tensor **out)
{
    *out = NULL;
    wgt_layout l = x->l;
    l.shape[dim] -= 1;
    l.offset = 0;
    wgt_tensor *y = NULL;
    wgt_status st = wgt_tensor_new(ctx, WGT_I64, l.ndim, l.shape, &y);
    if (st) return st;
    int64_t n = wgt_layout_numel(&l);
    i64_params p;
    memset(&p, 0, sizeof p);
    p.n = (uint32_t)n, p.step = (uint32_t)x->l.strides[dim];
    st = op_layout_params_fill(ctx, &l, &p.l);
    uint32_t wg = op_workgroup_size(ctx);
    if (!st && n > 0) st = i64_run(ctx, "diff", x, &p, ((uint64_t)n + wg - 1) / wg, y);
    if (st) wgt_tensor_free(y), y = NULL;
    *out = y;
    return st;
}

/* The sum of 2-D i64 x's main diagonal, wrapping, into a 0-D i64 tensor: one workgroup. */
static wgt_status trace_i64(wgt_context *ctx, const wgt_tensor *x, wgt_tensor **out)
{
    wgt_tensor *y = NULL;
    int64_t n = x->l.shape[0] < x->l.shape[1] ? x->l.shape[0] : x->l.shape[1];
    if (n == 0) return wgt_tensor_zeros(ctx, WGT_I64, 0, NULL, out);
    wgt_status st = wgt_tensor_new(ctx, WGT_I64, 0, NULL, &y);
    if (st) return st;
    i64_params p;
    memset(&p, 0, sizeof p);
    p.n = (uint32_t)n, p.step = (uint32_t)(x->l.strides[0] + x->l.strides[1]);
    st = i64_run(ctx, "trace", x, &p, 1, y);
    if (st) wgt_tensor_free(y), y = NULL;
    *out = y;
    return st;
}

/* A contiguous copy of a view. i64 moves raw bits through the movement kernel (wgt_tensor_copy
 * of a strided i64 view goes through the cast kernel, which has no i64). */
static wgt_status copy_view(const wgt_tensor *v, wgt_tensor **out)
{
    if (v->l.dtype != WGT_I64 || v->l.ndim == 0) return wgt_tensor_copy(v, out);
    int64_t ones[WGT_MAX_DIMS] = {1, 1, 1, 1, 1, 1, 1, 1};
    return wgt_repeat(v, ones, v->l.ndim, out);
}

/* ---- diff ----------------------------------------------------------------------------------- */

typedef struct diff_arg {
    int n, dim, has_pre, has_app;
} diff_arg;

static wgt_status diff_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    diff_arg *a = arg;
    return wgt_cpu_diff(&in[0], a->n, a->dim, a->has_pre ? &in[1] : NULL, a->has_app ? &in[2] : NULL, &out[0]);
}

static wgt_status diff_unrecorded(const wgt_tensor *x, int n, int dim, const wgt_tensor *prepend, const wgt_tensor *append,
                    wgt_tensor **out)
{
    OP_BEGIN(x, out);
    int nd = x->l.ndim;
    if (nd < 1) return op_fail(ctx, WGT_ERR_SHAPE, "diff: x must have at least one dim (it is 0-D)");
    wgt_status st = op_dim(ctx, "diff", &dim, nd);
    if (st) return st;
    if (n < 0) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "diff: n must be >= 0, not %d", n);
    const wgt_tensor *parts[3] = {prepend, x, append};
    int64_t len = 0;
    for (int i = 0; i < 3; i++) {
        const wgt_tensor *p = parts[i];
        if (!p) continue;
        if (p->st->ctx != ctx) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "diff: prepend/append on another context");
        if (p->l.dtype != x->l.dtype)
            return op_fail(ctx, WGT_ERR_DTYPE, "diff: %s is %s, x is %s", i ? "append" : "prepend",
                           wgt_dtype_name(p->l.dtype), wgt_dtype_name(x->l.dtype));
        int ok = p->l.ndim == nd;
        for (int d = 0; ok && d < nd; d++) ok = d == dim || p->l.shape[d] == x->l.shape[d];
        if (!ok) return op_fail(ctx, WGT_ERR_SHAPE, "diff: %s must have x's shape except along dim %d", i ? "append" : "prepend", dim);
        len += p->l.shape[dim];
    }
    int64_t shape[WGT_MAX_DIMS];
    memcpy(shape, x->l.shape, sizeof shape);
    shape[dim] = len - n > 0 ? len - n : 0;
    wgt_tensor *y = NULL;
    if (!op_use_gpu(ctx, "diff", x->l.dtype, 1)) {
        if (!(st = wgt_tensor_new(ctx, x->l.dtype, nd, shape, &y))) {
            diff_arg a = {n, dim, prepend != NULL, append != NULL};
            const wgt_tensor *ins[3] = {x, prepend, append};
            st = op_reference(ctx, diff_ref, &a, ins, 3, &y, 1);
        }
        return op_finish(st, y, out);
    }
    /* join, then n times: the elements from 1 on minus those up to the last (one dispatch each) */
    const wgt_tensor *joined[3];
    int nj = 0;
    for (int i = 0; i < 3; i++)
        if (parts[i]) joined[nj++] = parts[i];
    wgt_tensor *cur = NULL;
    st = nj > 1 ? wgt_cat(joined, nj, dim, &cur) : ((cur = wgt_tensor_ref(x)) ? WGT_OK : WGT_ERR_OUT_OF_MEMORY);
    wgt_binary_op op = x->l.dtype == WGT_BOOL ? WGT_BINARY_LOGICAL_XOR : WGT_BINARY_SUB;
    for (int r = 0; !st && r < n; r++) {
        int64_t L = cur->l.shape[dim];
        wgt_tensor *hi = NULL, *lo = NULL, *next = NULL;
        const wgt_tensor *c1[1] = {cur};
        if (L <= 1) { /* nothing left to difference: an empty result */
            shape[dim] = 0;
            st = wgt_tensor_new(ctx, x->l.dtype, nd, shape, &next);
        } else if (x->l.dtype == WGT_I64 && fits_binding(c1, 1)) {
            st = diff_i64(ctx, cur, dim, &next);
        } else {
            st = wgt_tensor_narrow(cur, dim, 1, L - 1, &hi);
            if (!st) st = wgt_tensor_narrow(cur, dim, 0, L - 1, &lo);
            if (!st) st = wgt_binary(op, hi, lo, &next);
        }
        wgt_tensor_free(hi);
        wgt_tensor_free(lo);
        wgt_tensor_free(cur);
        cur = next;
    }
    if (!st && n == 0) { /* a copy, not the caller's own tensor */
        wgt_tensor *c;
        st = copy_view(cur, &c);
        wgt_tensor_free(cur);
        cur = st ? NULL : c;
    }
    if (!st && cur->l.dtype != x->l.dtype) { /* sub of small integers may widen */
        wgt_tensor *c;
        st = wgt_tensor_cast(cur, x->l.dtype, &c);
        wgt_tensor_free(cur);
        cur = st ? NULL : c;
    }
    if (st) wgt_tensor_free(cur), cur = NULL;
    return op_finish(st, cur, out);
}

wgt_status wgt_diff(const wgt_tensor *x, int n, int dim, const wgt_tensor *prepend, const wgt_tensor *append,
                    wgt_tensor **out)
{
    const wgt_tensor *in[3] = {x, prepend, append};
    op_grad_diff rec = {n, x && dim < 0 ? dim + x->l.ndim : dim};
    return op_record(diff_unrecorded(x, n, dim, prepend, append, out), OP_GRAD_DIFF, in, 3, &rec, sizeof rec, out);
}

/* ---- trace, diag, diag_embed ---------------------------------------------------------------- */

/* The diagonal `offset` of dims (d1, d2) of t as a view: t's other dims, then the diagonal
 * (torch.diagonal). Also the autograd rules' diagonal (src/autograd/grad_misc.c). */
wgt_status op_diagonal_view(const wgt_tensor *t, int64_t offset, int d1, int d2, wgt_tensor **out)
{
    wgt_layout l = t->l;
    int64_t k = offset < 0 ? -offset : offset;
    int64_t rows = t->l.shape[d1] - (offset < 0 ? k : 0), cols = t->l.shape[d2] - (offset > 0 ? k : 0);
    int64_t n = rows < cols ? rows : cols;
    if (n < 0) n = 0;
    if (n > 0) l.offset += offset >= 0 ? offset * t->l.strides[d2] : k * t->l.strides[d1];
    int j = 0;
    for (int d = 0; d < t->l.ndim; d++)
        if (d != d1 && d != d2) l.shape[j] = t->l.shape[d], l.strides[j] = t->l.strides[d], j++;
    l.shape[j] = n, l.strides[j] = t->l.strides[d1] + t->l.strides[d2];
    l.ndim = j + 1;
    return wgt_tensor_new_view(t, &l, out);
}

static wgt_status trace_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    (void)arg;
    return wgt_cpu_trace(&in[0], &out[0]);
}

static wgt_status trace_unrecorded(const wgt_tensor *x, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    if (x->l.ndim != 2) return op_fail(ctx, WGT_ERR_SHAPE, "trace: x must be 2-D, not %d-D", x->l.ndim);
    wgt_dtype dt = wgt_reduce_result_dtype(WGT_REDUCE_SUM, x->l.dtype);
    wgt_tensor *y = NULL;
    wgt_status st;
    const wgt_tensor *ins[1] = {x};
    int gpu_ok = x->l.dtype != WGT_I64 || fits_binding(ins, 1); /* i64: one binding, one workgroup */
    if (op_use_gpu(ctx, "trace", x->l.dtype, gpu_ok)) {
        if (x->l.dtype == WGT_I64) st = trace_i64(ctx, x, &y);
        else {
            wgt_tensor *d = NULL;
            st = op_diagonal_view(x, 0, 0, 1, &d);
            if (!st) st = wgt_reduce(WGT_REDUCE_SUM, d, 0, 0, 0, &y);
            wgt_tensor_free(d);
        }
    } else if (!(st = op_fallback_status(ctx, "trace", x->l.dtype, gpu_ok)) &&
               !(st = wgt_tensor_new(ctx, dt, 0, NULL, &y))) {
        st = op_reference(ctx, trace_ref, NULL, ins, 1, &y, 1);
    }
    return op_finish(st, y, out);
}

wgt_status wgt_trace(const wgt_tensor *x, wgt_tensor **out)
{
    return op_record(trace_unrecorded(x, out), OP_GRAD_TRACE, &x, 1, NULL, 0, out);
}

typedef struct diag_arg {
    int64_t offset;
    int dim1, dim2;
} diag_arg;

static wgt_status diag_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    diag_arg *a = arg;
    return wgt_cpu_diag(&in[0], a->offset, &out[0]);
}

static wgt_status diag_embed_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    diag_arg *a = arg;
    return wgt_cpu_diag_embed(&in[0], a->offset, a->dim1, a->dim2, &out[0]);
}

/* x [..., n] on diagonal `offset` of the last two dims of a zero [..., m, m], m = n + |offset|,
 * through pads only (they move raw bits, so every dtype runs on the GPU): x as [..., n, 1] padded
 * with n zeros after each element is the flattened [..., n, n] diagonal matrix plus n trailing
 * zeros; its first n * n elements, then |offset| zero rows and columns on the right sides. */
static wgt_status embed_last(wgt_context *ctx, const wgt_tensor *x, int64_t offset, wgt_tensor **out)
{
    *out = NULL;
    int nd = x->l.ndim;
    int64_t n = x->l.shape[nd - 1], k = offset < 0 ? -offset : offset, shape[WGT_MAX_DIMS];
    memcpy(shape, x->l.shape, sizeof shape);
    if (n == 0) {
        shape[nd - 1] = shape[nd] = k;
        return wgt_tensor_zeros(ctx, x->l.dtype, nd + 1, shape, out);
    }
    wgt_tensor *col = NULL, *padded = NULL, *flat = NULL, *head = NULL, *sq = NULL;
    int64_t pads[2 * WGT_MAX_DIMS] = {0};
    shape[nd] = 1;
    wgt_status st = wgt_tensor_reshape(x, nd + 1, shape, &col);
    pads[2 * nd + 1] = n; /* after the new last dim */
    if (!st) st = wgt_pad(col, WGT_PAD_CONSTANT, pads, 0, &padded);
    shape[nd - 1] = n * (n + 1);
    if (!st) st = wgt_tensor_reshape(padded, nd, shape, &flat);
    if (!st) st = wgt_tensor_narrow(flat, nd - 1, 0, n * n, &head);
    shape[nd - 1] = shape[nd] = n;
    if (!st) st = wgt_tensor_reshape(head, nd + 1, shape, &sq);
    if (!st && k == 0) st = copy_view(sq, out);
    else if (!st) {
        memset(pads, 0, sizeof pads);
        int rows = nd - 1, cols = nd; /* [..., rows, cols] of nd + 1 dims */
        if (offset > 0) pads[cols] = k, pads[(nd + 1) + rows] = k;
        else pads[rows] = k, pads[(nd + 1) + cols] = k;
        st = wgt_pad(sq, WGT_PAD_CONSTANT, pads, 0, out);
    }
    wgt_tensor_free(col);
    wgt_tensor_free(padded);
    wgt_tensor_free(flat);
    wgt_tensor_free(head);
    wgt_tensor_free(sq);
    return st;
}

/* embed_last, then its two last dims moved to (d1, d2) of nd dims (a copy when they move). */
static wgt_status embed_gpu(wgt_context *ctx, const wgt_tensor *x, int nd, int64_t offset, int d1, int d2,
                            wgt_tensor **out)
{
    wgt_tensor *y = NULL, *v = NULL;
    wgt_status st = embed_last(ctx, x, offset, &y);
    if (st || (d1 == nd - 2 && d2 == nd - 1)) {
        *out = y;
        return st;
    }
    int perm[WGT_MAX_DIMS];
    for (int d = 0, j = 0; d < nd; d++) perm[d] = d == d1 ? nd - 2 : d == d2 ? nd - 1 : j++;
    st = wgt_tensor_permute(y, perm, &v);
    if (!st) st = copy_view(v, out);
    wgt_tensor_free(y);
    wgt_tensor_free(v);
    return st;
}

static wgt_status diag_unrecorded(const wgt_tensor *x, int64_t offset, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    int nd = x->l.ndim;
    if (nd != 1 && nd != 2) return op_fail(ctx, WGT_ERR_SHAPE, "diag: x must be 1-D or 2-D, not %d-D", nd);
    int64_t k = offset < 0 ? -offset : offset;
    if (k > INT32_MAX) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "diag: offset %lld is too large", (long long)offset);
    int64_t shape[2];
    if (nd == 1) shape[0] = shape[1] = x->l.shape[0] + k;
    else {
        int64_t rows = x->l.shape[0] - (offset < 0 ? k : 0), cols = x->l.shape[1] - (offset > 0 ? k : 0);
        shape[0] = rows < cols ? rows : cols;
        if (shape[0] < 0) shape[0] = 0;
    }
    wgt_tensor *y = NULL;
    wgt_status st;
    if (op_use_gpu(ctx, "diag", x->l.dtype, 1)) {
        if (nd == 1) st = embed_gpu(ctx, x, 2, offset, 0, 1, &y);
        else {
            wgt_tensor *v = NULL;
            st = op_diagonal_view(x, offset, 0, 1, &v);
            if (!st) st = copy_view(v, &y);
            wgt_tensor_free(v);
        }
    } else if (!(st = wgt_tensor_new(ctx, x->l.dtype, 3 - nd, shape, &y))) {
        diag_arg a = {offset, 0, 1};
        const wgt_tensor *ins[1] = {x};
        st = op_reference(ctx, diag_ref, &a, ins, 1, &y, 1);
    }
    return op_finish(st, y, out);
}

wgt_status wgt_diag(const wgt_tensor *x, int64_t offset, wgt_tensor **out)
{
    op_grad_diag rec = {offset, 0, 1};
    return op_record(diag_unrecorded(x, offset, out), OP_GRAD_DIAG, &x, 1, &rec, sizeof rec, out);
}

static wgt_status diag_embed_unrecorded(const wgt_tensor *x, int64_t offset, int dim1, int dim2, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    int nd = x->l.ndim + 1;
    if (x->l.ndim < 1) return op_fail(ctx, WGT_ERR_SHAPE, "diag_embed: x must have at least one dim (it is 0-D)");
    if (nd > WGT_MAX_DIMS) return op_fail(ctx, WGT_ERR_SHAPE, "diag_embed: the result would have more than %d dims", WGT_MAX_DIMS);
    wgt_status st;
    if ((st = op_dim(ctx, "diag_embed", &dim1, nd)) || (st = op_dim(ctx, "diag_embed", &dim2, nd))) return st;
    if (dim1 == dim2) return op_fail(ctx, WGT_ERR_SHAPE, "diag_embed: dim1 and dim2 are both %d", dim1);
    int64_t k = offset < 0 ? -offset : offset;
    if (k > INT32_MAX) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "diag_embed: offset %lld is too large", (long long)offset);
    int64_t n = x->l.shape[x->l.ndim - 1] + k, shape[WGT_MAX_DIMS];
    for (int d = 0, j = 0; d < nd; d++) shape[d] = d == dim1 || d == dim2 ? n : x->l.shape[j++];
    wgt_tensor *y = NULL;
    if (op_use_gpu(ctx, "diag_embed", x->l.dtype, 1)) st = embed_gpu(ctx, x, nd, offset, dim1, dim2, &y);
    else if (!(st = wgt_tensor_new(ctx, x->l.dtype, nd, shape, &y))) {
        diag_arg a = {offset, dim1, dim2};
        const wgt_tensor *ins[1] = {x};
        st = op_reference(ctx, diag_embed_ref, &a, ins, 1, &y, 1);
    }
    return op_finish(st, y, out);
}

wgt_status wgt_diag_embed(const wgt_tensor *x, int64_t offset, int dim1, int dim2, wgt_tensor **out)
{
    int nd = x ? x->l.ndim + 1 : 0;
    op_grad_diag rec = {offset, dim1 < 0 ? dim1 + nd : dim1, dim2 < 0 ? dim2 + nd : dim2};
    return op_record(diag_embed_unrecorded(x, offset, dim1, dim2, out), OP_GRAD_DIAG_EMBED, &x, 1, &rec, sizeof rec,
                     out);
}

/* ---- meshgrid -------------------------------------------------------------------------------- */

wgt_status wgt_meshgrid(const wgt_tensor *const *xs, int n, int xy, wgt_tensor **outs)
{
    if (!xs || !outs || n < 1 || !xs[0])
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "meshgrid: give at least one tensor and room for the results");
    wgt_context *ctx = xs[0]->st->ctx;
    for (int i = 0; i < n; i++) outs[i] = NULL;
    if (n > WGT_MAX_DIMS) return op_fail(ctx, WGT_ERR_SHAPE, "meshgrid: %d tensors (at most %d)", n, WGT_MAX_DIMS);
    int64_t shape[WGT_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        if (!xs[i]) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "meshgrid: tensor %d is NULL", i);
        if (xs[i]->st->ctx != ctx) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "meshgrid: tensor %d lives on another context", i);
        if (xs[i]->l.ndim > 1) return op_fail(ctx, WGT_ERR_SHAPE, "meshgrid: tensor %d is %d-D (1-D or 0-D expected)", i, xs[i]->l.ndim);
        if (xs[i]->l.dtype != xs[0]->l.dtype)
            return op_fail(ctx, WGT_ERR_DTYPE, "meshgrid: tensor %d is %s, tensor 0 %s", i,
                           wgt_dtype_name(xs[i]->l.dtype), wgt_dtype_name(xs[0]->l.dtype));
        shape[i] = xs[i]->l.ndim ? xs[i]->l.shape[0] : 1;
    }
    /* xy: the first two inputs vary along dims 1 and 0 */
    int swap = xy && n >= 2;
    if (swap) {
        int64_t t = shape[0];
        shape[0] = shape[1], shape[1] = t;
    }
    /* each output: its input reshaped to size 1 off its dim, then expanded (stride 0) to the grid;
     * both are recorded views, so gradients flow back (summed over the expanded dims) */
    wgt_status st = WGT_OK;
    for (int i = 0; !st && i < n; i++) {
        int along = swap && i < 2 ? 1 - i : i;
        int64_t rs[WGT_MAX_DIMS];
        for (int d = 0; d < n; d++) rs[d] = d == along ? shape[d] : 1;
        wgt_tensor *r = NULL;
        st = wgt_tensor_reshape(xs[i], n, rs, &r);
        if (!st) st = wgt_tensor_expand(r, n, shape, &outs[i]);
        wgt_tensor_free(r);
    }
    if (st)
        for (int i = 0; i < n; i++) wgt_tensor_free(outs[i]), outs[i] = NULL;
    return st;
}

/* ---- cdist ----------------------------------------------------------------------------------- */

typedef struct cdist_params {
    uint32_t n, P, R, M, mode, off1, off2, off_g, s1p, s1m, s2r, s2m;
    float pw;
    uint32_t pad0, pad1, pad2;
    op_layout_params lb1, lb2;
} cdist_params;

/* One dispatch of misc_cdist.wgsl: a and b are x1/x2 (or their norms, mode 5) with batch layouts
 * broadcast to out's batch dims; g the matrix product (mode 5) or NULL. */
static wgt_status cdist_run(wgt_context *ctx, int mode, double pw, const wgt_tensor *a, const wgt_tensor *b,
                            const wgt_tensor *g, int64_t P, int64_t R, int64_t M, wgt_tensor *y)
{
    int64_t n = wgt_tensor_numel(y);
    if (n == 0) return WGT_OK;
    if (n > UINT32_MAX) return op_fail(ctx, WGT_ERR_LIMIT, "cdist: more than 2^32 distances");
    wgt_dtype odt = y->l.dtype;
    char pre[8192];
    uint32_t wg = op_workgroup_size(ctx);
    snprintf(pre, sizeof pre, "%s\nconst PACK: u32 = %du;\nconst WG: u32 = %uu;\n", op_wgsl_lib(), op_pack(odt), wg);
    op_wgsl_loader(pre, sizeof pre, "l1", "xa", a->l.dtype, "f32");
    op_wgsl_loader(pre, sizeof pre, "l2", "xb", b->l.dtype, "f32");
    op_wgsl_loader(pre, sizeof pre, "lg", "gs", g ? g->l.dtype : WGT_F32, "f32");
    op_wgsl_storer(pre, sizeof pre, "st", "out", odt, "f32");
    /* distances from the features: 16 x 16 tiles once both sides have a few rows (f32 out) */
    int tiled = mode != 5 && odt == WGT_F32 && P >= 8 && R >= 8;
    wgt_kernel *k;
    wgt_status st = wgt_gpu_kernel(ctx, "misc_cdist", pre, tiled ? "tiled" : "main", NULL, 0, &k);
    if (st) return st;
    cdist_params p;
    memset(&p, 0, sizeof p);
    p.n = (uint32_t)n, p.P = (uint32_t)P, p.R = (uint32_t)R, p.M = (uint32_t)M, p.mode = (uint32_t)mode;
    p.pw = (float)pw;
    int nb = y->l.ndim - 2;
    const wgt_tensor *src[2] = {a, b};
    op_layout_params *lp[2] = {&p.lb1, &p.lb2};
    uint32_t *offs[2] = {&p.off1, &p.off2};
    wgt_binding bd[4];
    int64_t base, lo, hi;
    for (int i = 0; i < 2; i++) {
        const wgt_tensor *t = src[i];
        wgt_layout bl = t->l, full;
        bl.ndim = t->l.ndim - 2;
        op_broadcast_layout(&bl, nb, y->l.shape, &full);
        if ((st = op_layout_params_fill(ctx, &full, lp[i]))) return st;
        op_extent(&t->l, &lo, &hi);
        if (hi < lo) lo = hi = t->l.offset;
        if ((st = op_bind(t, lo, hi, &bd[i], &base))) return st;
        *offs[i] = (uint32_t)(t->l.offset - base);
    }
    int na = a->l.ndim, nbb = b->l.ndim;
    p.s1p = (uint32_t)a->l.strides[na - 2], p.s1m = (uint32_t)a->l.strides[na - 1];
    p.s2r = (uint32_t)b->l.strides[nbb - 2], p.s2m = (uint32_t)b->l.strides[nbb - 1];
    if (g) {
        if ((st = op_bind_all(g, &bd[2], &base))) return st;
        p.off_g = (uint32_t)(g->l.offset - base);
    } else
        bd[2] = bd[0];
    if ((st = op_bind_all(y, &bd[3], &base))) return st;
    if (base != y->l.offset) return op_fail(ctx, WGT_ERR_INTERNAL, "cdist: output not aligned");
    uint64_t words = ((uint64_t)n + op_pack(odt) - 1) / op_pack(odt);
    uint64_t groups = tiled ? (uint64_t)(n / (P * R)) * (uint64_t)((P + 15) / 16) * (uint64_t)((R + 15) / 16)
                            : (words + wg - 1) / wg;
    uint32_t gx, gy;
    op_grid(ctx, groups, &gx, &gy);
    return wgt_gpu_dispatch(ctx, k, &p, sizeof p, bd, 4, gx, gy, 1);
}

/* p = 2 through the product: g = x1 @ x2^T (f32), the row norms, and one epilogue dispatch. */
static wgt_status cdist_mm(wgt_context *ctx, const wgt_tensor *x1, const wgt_tensor *x2, int64_t P, int64_t R,
                           wgt_tensor *y)
{
    wgt_tensor *a = NULL, *b = NULL, *bt = NULL, *g = NULL, *na = NULL, *nb = NULL;
    wgt_status st = wgt_tensor_cast(x1, WGT_F32, &a);
    if (!st) st = wgt_tensor_cast(x2, WGT_F32, &b);
    if (!st) st = wgt_tensor_transpose(b, -1, -2, &bt);
    if (!st) st = wgt_matmul(a, bt, &g);
    /* norms kept as [B..., P, 1] / [B..., R, 1]: the kernel reads element (i, 0) of row i */
    uint32_t last1 = 1u << (x1->l.ndim - 1), last2 = 1u << (x2->l.ndim - 1);
    if (!st) st = wgt_reduce(WGT_REDUCE_NORM2, a, last1, 1, 0, &na);
    if (!st) st = wgt_reduce(WGT_REDUCE_NORM2, b, last2, 1, 0, &nb);
    if (!st && !wgt_tensor_is_contiguous(g)) {
        wgt_tensor *c;
        st = wgt_tensor_contiguous(g, &c);
        wgt_tensor_free(g);
        g = st ? NULL : c;
    }
    if (!st && wgt_tensor_numel(g) != wgt_tensor_numel(y))
        st = op_fail(ctx, WGT_ERR_INTERNAL, "cdist: the product has %lld elements, the result %lld",
                     (long long)wgt_tensor_numel(g), (long long)wgt_tensor_numel(y));
    if (!st) st = cdist_run(ctx, 5, 2, na, nb, g, P, R, 1, y);
    wgt_tensor_free(a);
    wgt_tensor_free(b);
    wgt_tensor_free(bt);
    wgt_tensor_free(g);
    wgt_tensor_free(na);
    wgt_tensor_free(nb);
    return st;
}

typedef struct cdist_arg {
    double p;
} cdist_arg;

static wgt_status cdist_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    return wgt_cpu_cdist(&in[0], &in[1], ((cdist_arg *)arg)->p, &out[0]);
}

static wgt_status cdist_unrecorded(const wgt_tensor *x1, const wgt_tensor *x2, double p, wgt_cdist_mode mode, wgt_tensor **out)
{
    OP_BEGIN(x1, out);
    if (!x2) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "cdist: x2 is NULL");
    if (x2->st->ctx != ctx) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "cdist: x2 lives on another context");
    if (!op_is_float(x1->l.dtype) || !op_is_float(x2->l.dtype))
        return op_fail(ctx, WGT_ERR_DTYPE, "cdist: x1 and x2 must be f32, f16 or bf16 (%s, %s)", wgt_dtype_name(x1->l.dtype),
                       wgt_dtype_name(x2->l.dtype));
    int n1 = x1->l.ndim, n2 = x2->l.ndim;
    if (n1 < 2 || n2 < 2) return op_fail(ctx, WGT_ERR_SHAPE, "cdist: x1 and x2 must be [B..., P, M] and [B..., R, M] (at least 2-D)");
    if (x1->l.shape[n1 - 1] != x2->l.shape[n2 - 1])
        return op_fail(ctx, WGT_ERR_SHAPE, "cdist: x1 has %lld features, x2 %lld (the last dims must match)",
                       (long long)x1->l.shape[n1 - 1], (long long)x2->l.shape[n2 - 1]);
    if (!(p >= 0)) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "cdist: p must be >= 0 (or INFINITY), not %g", p);
    if ((unsigned)mode > WGT_CDIST_NO_MM) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "cdist: unknown compute mode %d", (int)mode);
    /* the batch dims broadcast */
    wgt_layout b1 = x1->l, b2 = x2->l;
    b1.ndim = n1 - 2, b2.ndim = n2 - 2;
    int nb;
    int64_t shape[WGT_MAX_DIMS];
    wgt_status st = op_broadcast_shape(ctx, "cdist", &b1, &b2, &nb, shape);
    if (st) return st;
    if (nb + 2 > WGT_MAX_DIMS) return op_fail(ctx, WGT_ERR_SHAPE, "cdist: too many batch dims");
    int64_t P = x1->l.shape[n1 - 2], R = x2->l.shape[n2 - 2], M = x1->l.shape[n1 - 1];
    shape[nb] = P, shape[nb + 1] = R;
    wgt_dtype dt = op_promote(x1->l.dtype, x2->l.dtype);
    wgt_tensor *y = NULL;
    if ((st = wgt_tensor_new(ctx, dt, nb + 2, shape, &y))) return st;
    if (op_use_gpu(ctx, "cdist", dt, 1)) {
        int mm = p == 2 && M > 0 && (mode == WGT_CDIST_MM || (mode == WGT_CDIST_MM_IF_NECESSARY && (P > 25 || R > 25)));
        if (mm) st = cdist_mm(ctx, x1, x2, P, R, y);
        else {
            int kmode = p == 0 ? 0 : p == 1 ? 1 : p == 2 ? 2 : isinf(p) ? 3 : 4;
            wgt_tensor *f = NULL, *c = NULL;
            if (dt != WGT_F32 && P >= 8 && R >= 8) { /* the tiled kernel writes f32 */
                st = wgt_tensor_new(ctx, WGT_F32, nb + 2, shape, &f);
                if (!st) st = cdist_run(ctx, kmode, p, x1, x2, NULL, P, R, M, f);
                if (!st) st = wgt_tensor_cast(f, dt, &c);
                if (!st) wgt_tensor_free(y), y = c;
                wgt_tensor_free(f);
            } else
                st = cdist_run(ctx, kmode, p, x1, x2, NULL, P, R, M, y);
        }
    } else {
        cdist_arg a = {p};
        const wgt_tensor *ins[2] = {x1, x2};
        st = op_reference(ctx, cdist_ref, &a, ins, 2, &y, 1);
    }
    return op_finish(st, y, out);
}

/* The gradient is that of the direct differences in every mode (PyTorch's mm path differentiates
 * through its composition: the same away from coincident points, where it is 0 here). */
wgt_status wgt_cdist(const wgt_tensor *x1, const wgt_tensor *x2, double p, wgt_cdist_mode mode, wgt_tensor **out)
{
    const wgt_tensor *in[2] = {x1, x2};
    return op_record(cdist_unrecorded(x1, x2, p, mode, out), OP_GRAD_CDIST, in, 2, &p, sizeof p, out);
}
