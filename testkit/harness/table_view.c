/* Harness entries of the views (reshape, transpose, permute, narrow, expand, squeeze, unsqueeze),
 * split, chunk, meshgrid and assign. A view computes nothing: its call copies the view
 * (wgt_tensor_copy, a kernel that reads the view's strides and offset) so the comparison checks the
 * layout the view made, and on the device that a kernel reads it right. Multi-piece ops return
 * their first two pieces, copied the same way. */
#include <string.h>

#include "harness/harness.h"
#include "ops/api.h"

/* *out = a contiguous copy of v (v freed). */
static wgt_status materialise(wgt_status st, wgt_tensor *v, wgt_tensor **out)
{
    if (!st) st = wgt_tensor_copy(v, out);
    wgt_tensor_free(v);
    return st;
}

wgt_status call_reshape(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    /* variant 0: flattened; 1: the first two dims swapped in size (a strided input cannot be
     * viewed so: reshape copies) */
    int nd = wgt_tensor_ndim(in[0]);
    const int64_t *s = wgt_tensor_shape(in[0]);
    int64_t shape[WGT_MAX_DIMS + 1] = {-1};
    int n = 1;
    if (v == 1) {
        if (nd >= 2) {
            n = nd;
            memcpy(shape, s, sizeof(int64_t) * nd);
            shape[0] = s[1], shape[1] = s[0];
        } else
            shape[0] = 1, shape[1] = -1, n = 2;
    }
    wgt_tensor *t = NULL;
    wgt_status st = wgt_tensor_reshape(in[0], n, shape, &t);
    return materialise(st, t, out);
}

wgt_status call_transpose(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    int nd = wgt_tensor_ndim(in[0]);
    wgt_tensor *t = NULL;
    wgt_status st = wgt_tensor_transpose(in[0], v ? -1 : 0, v ? (nd > 1 ? -2 : -1) : (nd > 0 ? nd - 1 : 0), &t);
    return materialise(st, t, out);
}

wgt_status call_permute(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    int nd = wgt_tensor_ndim(in[0]), dims[WGT_MAX_DIMS];
    for (int d = 0; d < nd; d++) dims[d] = nd - 1 - d; /* reversed */
    wgt_tensor *t = NULL;
    wgt_status st = wgt_tensor_permute(in[0], dims, &t);
    return materialise(st, t, out);
}

wgt_status call_narrow(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    /* variant 0: dim 0 less its first and last; 1: the last dim from 1 */
    int nd = wgt_tensor_ndim(in[0]);
    int dim = v ? nd - 1 : 0;
    int64_t len = nd ? wgt_tensor_dim(in[0], dim) : 0;
    int64_t start = len >= 2 ? 1 : 0, n = v ? len - start : (len >= 2 ? len - 2 : len);
    wgt_tensor *t = NULL;
    wgt_status st = wgt_tensor_narrow(in[0], dim, start, n, &t);
    return materialise(st, t, out);
}

wgt_status call_expand(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    /* a new leading dim of 3 (stride 0); variant 1: the size-1 dims expanded too (to 2) */
    int nd = wgt_tensor_ndim(in[0]);
    const int64_t *s = wgt_tensor_shape(in[0]);
    int64_t shape[WGT_MAX_DIMS] = {3};
    for (int d = 0; d < nd; d++) shape[d + 1] = v && s[d] == 1 ? 2 : -1;
    wgt_tensor *t = NULL;
    wgt_status st = wgt_tensor_expand(in[0], nd + 1, shape, &t);
    return materialise(st, t, out);
}

wgt_status call_squeeze(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    /* variant 0: dim 0 (removed when it is 1); 1: the last dim */
    wgt_tensor *t = NULL;
    wgt_status st = wgt_tensor_squeeze(in[0], v ? -1 : 0, &t);
    return materialise(st, t, out);
}

wgt_status call_unsqueeze(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    wgt_tensor *t = NULL;
    wgt_status st = wgt_tensor_unsqueeze(in[0], v ? wgt_tensor_ndim(in[0]) : 0, &t);
    return materialise(st, t, out);
}

/* out[0], out[1]: copies of pieces 0 and 1 of n (the rest freed). */
static wgt_status two_pieces(wgt_status st, wgt_tensor **p, int n, wgt_tensor **out)
{
    if (!st && n >= 1) st = wgt_tensor_copy(p[0], &out[0]);
    if (!st && n >= 2) st = wgt_tensor_copy(p[1], &out[1]);
    for (int i = 0; i < n; i++) wgt_tensor_free(p[i]);
    return st;
}

wgt_status call_split(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    /* dim 0 (variant 1: the last dim) into [1, rest] */
    int nd = wgt_tensor_ndim(in[0]);
    int dim = v ? nd - 1 : 0;
    int64_t len = nd ? wgt_tensor_dim(in[0], dim) : 0, sizes[2] = {len ? 1 : 0, len ? len - 1 : 0};
    wgt_tensor *p[2] = {0};
    wgt_status st = wgt_split(in[0], sizes, 2, dim, p);
    return two_pieces(st, p, 2, out);
}

wgt_status call_chunk(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    /* 3 chunks of dim 0 (variant 1: the last dim) */
    int nd = wgt_tensor_ndim(in[0]), n = 0;
    wgt_tensor *p[3] = {0};
    wgt_status st = wgt_chunk(in[0], 3, v ? nd - 1 : 0, p, &n);
    return two_pieces(st, p, st ? 0 : n, out);
}

/* Two 1-D inputs of the case's sizes (0-D for the scalar case). */
int setup_meshgrid(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    if (c == HX_BIG || c == HX_ODD_LARGE || c == HX_BROADCAST) return 0;
    for (int i = 0; i < 2; i++) {
        hx_input s = {0};
        hx_case_shape(c, &s);
        in[i].dtype = dt;
        in[i].dom = op->dom;
        in[i].ndim = s.ndim ? 1 : 0;
        in[i].shape[0] = s.ndim ? s.shape[s.ndim - 1 - i % s.ndim] : 1;
    }
    return 2;
}

wgt_status call_meshgrid(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    const wgt_tensor *xs[2] = {in[0], in[1]};
    wgt_tensor *p[2] = {0};
    wgt_status st = wgt_meshgrid(xs, 2, v, p);
    return two_pieces(st, p, st ? 0 : 2, out);
}

/* The destination and a source of its shape. */
int setup_assign(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    if (c == HX_BIG || c == HX_ODD_LARGE || c == HX_BROADCAST) return 0;
    for (int i = 0; i < 2; i++) {
        in[i].dtype = dt;
        in[i].dom = op->dom;
        hx_case_shape(c, &in[i]);
    }
    return 2;
}

wgt_status call_assign(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    /* a copy of the destination, then src written into it (variant 1: through the copy's
     * transposed view, from src's transposed view: a strided destination) */
    wgt_tensor *y = NULL, *dv = NULL, *sv = NULL;
    wgt_status st = wgt_tensor_copy(in[0], &y);
    int nd = wgt_tensor_ndim(in[0]);
    if (!st && v && nd >= 2) {
        st = wgt_tensor_transpose(y, 0, nd - 1, &dv);
        if (!st) st = wgt_tensor_transpose(in[1], 0, nd - 1, &sv);
        if (!st) st = wgt_tensor_assign(dv, sv);
    } else if (!st)
        st = wgt_tensor_assign(y, in[1]);
    wgt_tensor_free(dv), wgt_tensor_free(sv);
    if (st) wgt_tensor_free(y), y = NULL;
    *out = y;
    return st;
}
