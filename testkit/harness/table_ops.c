/* Harness entries beyond the elementwise family: matrix products, transformer ops, indexing,
 * shape and creation ops. Each has its input shapes per case (0 inputs: the case does not apply),
 * its call through the op API, and its tolerance with the reason. Index tensors are i32 with a
 * fixed contiguous layout; the data inputs take the case's layouts. */
#include <string.h>

#include "harness/harness.h"
#include "ops/api.h"
#include "ops/ops.h"

#define DIMS(...) (int64_t[]){__VA_ARGS__}

static void set(hx_input *in, wgt_dtype dt, int ndim, const int64_t *shape, hx_dom dom)
{
    in->dtype = dt;
    in->ndim = ndim;
    for (int d = 0; d < ndim; d++) in->shape[d] = shape[d];
    in->dom = dom;
}

static void index_input(hx_input *in, int ndim, const int64_t *shape, int bound)
{
    set(in, WGT_I32, ndim, shape, (hx_dom){0, 0, 0, 0});
    in->index_bound = bound;
    in->fixed_layout = 1;
}

static const hx_dom unit = {-1, 1, 0, 0};

/* ---- matrix products ------------------------------------------------------------------------- */

int setup_matmul(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    switch (c) {
    case HX_CONTIGUOUS: case HX_STRIDED: set(&in[0], dt, 2, DIMS(37, 29), unit), set(&in[1], dt, 2, DIMS(29, 23), unit); break;
    case HX_BROADCAST: set(&in[0], dt, 4, DIMS(3, 1, 9, 13), unit), set(&in[1], dt, 3, DIMS(5, 13, 6), unit); break;
    case HX_EMPTY: set(&in[0], dt, 2, DIMS(5, 0), unit), set(&in[1], dt, 2, DIMS(0, 4), unit); break;
    case HX_ODD1: set(&in[0], dt, 1, DIMS(1), unit), set(&in[1], dt, 1, DIMS(1), unit); break;
    case HX_ODD7: set(&in[0], dt, 1, DIMS(7), unit), set(&in[1], dt, 2, DIMS(7, 3), unit); break;
    case HX_SPECIAL: set(&in[0], dt, 2, DIMS(7, 9), unit), set(&in[1], dt, 2, DIMS(9, 5), unit); break;
    default: return 0;
    }
    return 2;
}

wgt_status call_matmul(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_matmul(in[0], in[1], out);
}

int setup_linear(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    switch (c) {
    case HX_CONTIGUOUS: case HX_STRIDED: case HX_SPECIAL: set(&in[0], dt, 2, DIMS(37, 29), unit); break;
    case HX_BROADCAST: set(&in[0], dt, 3, DIMS(3, 5, 29), unit); break;
    case HX_ODD1: set(&in[0], dt, 1, DIMS(29), unit); break;
    case HX_EMPTY: set(&in[0], dt, 2, DIMS(0, 29), unit); break;
    default: return 0;
    }
    set(&in[1], dt, 2, DIMS(23, 29), unit);
    set(&in[2], dt, 1, DIMS(23), unit);
    return 3;
}

wgt_status call_linear(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_linear(in[0], in[1], v ? NULL : in[2], out);
}

int setup_addmm(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    if (c != HX_CONTIGUOUS && c != HX_STRIDED && c != HX_SPECIAL && c != HX_BROADCAST) return 0;
    set(&in[0], dt, c == HX_BROADCAST ? 1 : 2, c == HX_BROADCAST ? DIMS(23) : DIMS(37, 23), unit);
    set(&in[1], dt, 2, DIMS(37, 29), unit);
    set(&in[2], dt, 2, DIMS(29, 23), unit);
    return 3;
}

wgt_status call_addmm(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_addmm(in[0], in[1], in[2], v ? 0.0 : 0.5, 2.0, out);
}

int setup_baddbmm(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    if (c != HX_CONTIGUOUS && c != HX_STRIDED && c != HX_SPECIAL) return 0;
    set(&in[0], dt, 3, DIMS(3, 11, 7), unit);
    set(&in[1], dt, 3, DIMS(3, 11, 13), unit);
    set(&in[2], dt, 3, DIMS(3, 13, 7), unit);
    return 3;
}

wgt_status call_baddbmm(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_baddbmm(in[0], in[1], in[2], 0.5, 2.0, out);
}

int setup_outer(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    switch (c) {
    case HX_CONTIGUOUS: case HX_STRIDED: case HX_SPECIAL: set(&in[0], dt, 1, DIMS(37), unit), set(&in[1], dt, 1, DIMS(53), unit); break;
    case HX_EMPTY: set(&in[0], dt, 1, DIMS(0), unit), set(&in[1], dt, 1, DIMS(5), unit); break;
    case HX_ODD1: set(&in[0], dt, 1, DIMS(1), unit), set(&in[1], dt, 1, DIMS(1), unit); break;
    default: return 0;
    }
    return 2;
}

wgt_status call_outer(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_outer(in[0], in[1], out);
}

/* ---- transformer ops ------------------------------------------------------------------------- */

/* q [2, 4, Lq, 16], k/v [2, 2, 7, 16]: grouped-query attention. */
int setup_sdpa(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    int64_t lq;
    switch (c) {
    case HX_CONTIGUOUS: case HX_STRIDED: case HX_SPECIAL: case HX_BROADCAST: lq = 5; break;
    case HX_ODD1: lq = 1; break; /* decode */
    default: return 0;
    }
    set(&in[0], dt, 4, DIMS(2, 4, lq, 16), unit);
    set(&in[1], dt, 4, DIMS(2, 2, 7, 16), unit);
    set(&in[2], dt, 4, DIMS(2, 2, 7, 16), unit);
    return 3;
}

wgt_status call_sdpa(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    wgt_sdpa_params p = {0};
    p.causal = v >= 1;
    p.causal_offset = v == 2 ? 2 : 0;
    return wgt_sdpa(in[0], in[1], in[2], NULL, &p, out);
}

int setup_rope(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    switch (c) {
    case HX_CONTIGUOUS: case HX_STRIDED: case HX_SPECIAL: case HX_BROADCAST: set(&in[0], dt, 4, DIMS(2, 3, 5, 16), unit); break;
    case HX_ODD1: set(&in[0], dt, 2, DIMS(1, 16), unit); break;
    default: return 0;
    }
    index_input(&in[1], 1, &in[0].shape[in[0].ndim - 2], 64);
    return 2;
}

wgt_status call_rope(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    wgt_rope_params p = {0};
    p.theta = 10000;
    if (v == 2) p.scaling = WGT_ROPE_LINEAR, p.factor = 4;
    return wgt_rope(in[0], in[1], v == 3 ? 8 : 16, v == 1, &p, out);
}

int setup_embedding(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    switch (c) {
    case HX_CONTIGUOUS: case HX_STRIDED: case HX_SPECIAL: index_input(&in[1], 2, DIMS(3, 7), 50); break;
    case HX_SCALAR: index_input(&in[1], 0, NULL, 50); break;
    case HX_EMPTY: index_input(&in[1], 1, DIMS(0), 50); break;
    case HX_ODD1: index_input(&in[1], 1, DIMS(1), 50); break;
    default: return 0;
    }
    set(&in[0], dt, 2, DIMS(50, 16), unit);
    return 2;
}

wgt_status call_embedding(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_embedding(in[0], in[1], v ? WGT_F32 : wgt_tensor_dtype(in[0]), out);
}

/* ---- indexing -------------------------------------------------------------------------------- */

/* x [37, 53] (or the case's shape) with an index tensor after it. */
int setup_x(hx_case c, wgt_dtype dt, hx_input *in, hx_dom dom)
{
    if (c == HX_BIG || c == HX_ODD_LARGE) return 0;
    in[0].dtype = dt;
    in[0].dom = dom;
    hx_case_shape(c, &in[0]);
    return 1;
}

int setup_index_select(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    if (!setup_x(c, dt, in, op->dom) || in[0].ndim == 0) return 0;
    int bound = (int)(in[0].shape[0] < 37 ? in[0].shape[0] : 37);
    index_input(&in[1], 1, DIMS(11), bound > 0 ? bound : 1);
    if (bound == 0) in[1].shape[0] = 0;
    return 2;
}

wgt_status call_index_select(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_index_select(in[0], v ? wgt_tensor_ndim(in[0]) - 1 : 0, in[1], out);
}

int setup_gather(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    if (c != HX_CONTIGUOUS && c != HX_STRIDED && c != HX_BROADCAST && c != HX_SPECIAL) return 0;
    setup_x(c, dt, in, op->dom);
    index_input(&in[1], 2, DIMS(5, 7), 7);
    return 2;
}

wgt_status call_gather(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_gather(in[0], v, in[1], out);
}

/* self [37, 53] (or [7, 9]), index [5, 7] into dim `variant-chosen`, src [5, 7]. Indices are
 * distinct along the scattered dim? No: duplicates test the combining mode (set: the last wins). */
int setup_scatter(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    if (c != HX_CONTIGUOUS && c != HX_STRIDED && c != HX_SPECIAL) return 0;
    setup_x(c, dt, in, op->dom);
    index_input(&in[1], 2, DIMS(5, 7), 7);
    set(&in[2], dt, 2, DIMS(5, 7), op->dom);
    return 3;
}

wgt_status call_scatter(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_scatter(in[0], 0, in[1], in[2], (wgt_scatter_mode)v, out);
}

wgt_status call_scatter_add(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_scatter_add(in[0], v, in[1], in[2], out);
}

int setup_index_add(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    if (c != HX_CONTIGUOUS && c != HX_STRIDED && c != HX_SPECIAL) return 0;
    setup_x(c, dt, in, op->dom);
    index_input(&in[1], 1, DIMS(11), 7);
    set(&in[2], dt, 2, DIMS(11, in[0].shape[1]), op->dom);
    return 3;
}

wgt_status call_index_add(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_index_add(in[0], 0, in[1], in[2], op_is_float(wgt_tensor_dtype(in[0])) ? 1.5 : 2.0, out);
}

wgt_status call_index_put(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    const wgt_tensor *idx[1] = {in[1]};
    return wgt_index_put(in[0], idx, 1, in[2], v, out);
}

int setup_masked(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    if (!setup_x(c, dt, in, op->dom)) return 0;
    in[1] = in[0];
    in[1].dtype = WGT_BOOL;
    in[1].dom = (hx_dom){0, 1, 0, 0};
    if (c == HX_BROADCAST) in[1].ndim = 1, in[1].shape[0] = in[0].shape[1]; /* a row mask */
    return 2;
}

wgt_status call_masked_fill(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_masked_fill(in[0], in[1], -2.5, out);
}

wgt_status call_masked_select(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_masked_select(in[0], in[1], out);
}

int setup_nonzero(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    return setup_x(c, dt, in, (hx_dom){-1, 1.9, 0, 1}); /* whole values: about a third are 0 */
}

wgt_status call_nonzero(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_nonzero(in[0], out);
}

/* indices [37] (i32) and a [1] tensor whose dtype is the output's. */
int setup_one_hot(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    switch (c) {
    case HX_CONTIGUOUS: index_input(&in[0], 1, DIMS(37), 12); break; /* 10 and 11 are off rows */
    case HX_SCALAR: index_input(&in[0], 0, NULL, 10); break;
    case HX_EMPTY: index_input(&in[0], 1, DIMS(0), 10); break;
    case HX_ODD7: index_input(&in[0], 2, DIMS(7, 3), 10); break;
    default: return 0;
    }
    set(&in[1], dt, 1, DIMS(1), unit);
    in[1].fixed_layout = 1;
    in[1].dtype_only = 1; /* carries the output's dtype */
    return 2;
}

wgt_status call_one_hot(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_one_hot(in[0], 10, v ? 0 : -1, 0.25, 3, wgt_tensor_dtype(in[1]), out);
}

/* ---- shape and creation ---------------------------------------------------------------------- */

int setup_x_any(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in) { return setup_x(c, dt, in, op->dom); }

wgt_status call_tril(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    static const int64_t k[3] = {0, 2, -3};
    return wgt_tril(in[0], k[v], out);
}

wgt_status call_triu(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    static const int64_t k[3] = {0, 2, -3};
    return wgt_triu(in[0], k[v], out);
}

/* Creation ops: a [1] input of the dtype to make (and the context). */
int setup_dtype_only(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    if (c != HX_CONTIGUOUS) return 0;
    set(&in[0], dt, 1, DIMS(1), unit);
    in[0].fixed_layout = 1;
    return 1;
}

wgt_status call_arange(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    wgt_context *ctx = wgt_tensor_context(in[0]);
    wgt_dtype dt = wgt_tensor_dtype(in[0]);
    return v ? wgt_arange(ctx, 40, -5, -3, dt, out) : wgt_arange(ctx, 0, 37, 1, dt, out);
}

wgt_status call_linspace(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_linspace(wgt_tensor_context(in[0]), v ? 10 : -1, v ? -10 : 2, v ? 7 : 37, wgt_tensor_dtype(in[0]), out);
}

wgt_status call_eye(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_eye(wgt_tensor_context(in[0]), 7, v ? 9 : 7, wgt_tensor_dtype(in[0]), out);
}

/* Three inputs differing in the last dim (one of them empty), cat along it. */
int setup_cat(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    if (!setup_x(c, dt, in, op->dom) || in[0].ndim == 0) return 0;
    in[1] = in[2] = in[0];
    in[1].shape[in[0].ndim - 1] = 0;
    in[2].shape[in[0].ndim - 1] = 5;
    return 3;
}

wgt_status call_cat(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    const wgt_tensor *xs[3] = {in[0], in[1], in[2]};
    return wgt_cat(xs, 3, v ? 0 : wgt_tensor_ndim(in[0]) - 1, out);
}

int setup_stack(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    if (!setup_x(c, dt, in, op->dom)) return 0;
    in[1] = in[2] = in[0];
    return 3;
}

wgt_status call_stack(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    const wgt_tensor *xs[3] = {in[0], in[1], in[2]};
    return wgt_stack(xs, 3, v ? wgt_tensor_ndim(in[0]) : 0, out);
}

wgt_status call_flip(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    int dims[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    int nd = wgt_tensor_ndim(in[0]);
    return wgt_flip(in[0], dims, v ? nd : (nd > 0), out);
}

wgt_status call_roll(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    int64_t shifts[2] = {5, -7};
    int dims[2] = {0, 1};
    int nd = wgt_tensor_ndim(in[0]);
    if (v || nd == 0) return wgt_roll(in[0], &shifts[1], NULL, 1, out);
    return wgt_roll(in[0], shifts, dims, nd >= 2 ? 2 : 1, out);
}

wgt_status call_repeat(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    int64_t r[9] = {2, 1, 3, 1, 1, 1, 1, 1, 1};
    int nd = wgt_tensor_ndim(in[0]);
    return wgt_repeat(in[0], r, nd + (v ? 1 : 0) > 0 ? nd + v : 1, out);
}

wgt_status call_pad(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    int64_t pads[16];
    int nd = wgt_tensor_ndim(in[0]);
    for (int d = 0; d < nd; d++) pads[d] = 2, pads[nd + d] = d ? 1 : -1; /* a crop at the end of dim 0 */
    return wgt_pad(in[0], (wgt_pad_mode)v, pads, -1.5, out);
}

/* ---- reductions ------------------------------------------------------------------------------ */

int setup_reduce(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    if (c == HX_ODD_LARGE) return 0;
    in[0].dtype = dt;
    in[0].dom = op_is_float(dt) || (op->int_dom.lo == 0 && op->int_dom.hi == 0) ? op->dom : op->int_dom;
    if (!op_is_float(dt)) in[0].dom = (hx_dom){-20, 20, 0, 0};
    if (op->code == WGT_REDUCE_PROD && !op_is_float(dt)) in[0].dom = (hx_dom){-2, 2, 0, 0};
    hx_case_shape(c, &in[0]);
    return 1;
}

/* variant 0: the last dim; 1: dim 0, keepdim; 2: every dim */
static uint32_t reduce_dims(int v, int ndim)
{
    if (ndim == 0 || v == 2) return 0;
    return v == 0 ? 1u << (ndim - 1) : 1u;
}

wgt_status call_reduce(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_reduce((wgt_reduce_op)op->code, in[0], reduce_dims(v, wgt_tensor_ndim(in[0])), v == 1, 1.0, out);
}

wgt_status call_max_dim(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    int nd = wgt_tensor_ndim(in[0]), dim = v == 0 && nd ? nd - 1 : 0;
    return wgt_max_dim(in[0], dim, v, &out[0], &out[1]);
}

wgt_status call_min_dim(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    int nd = wgt_tensor_ndim(in[0]), dim = v == 0 && nd ? nd - 1 : 0;
    return wgt_min_dim(in[0], dim, v, &out[0], &out[1]);
}

/* ---- scans, softmax, norms ------------------------------------------------------------------- */

wgt_status call_scan(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    int nd = wgt_tensor_ndim(in[0]);
    int with_idx = op->code == WGT_SCAN_CUMMAX || op->code == WGT_SCAN_CUMMIN;
    return wgt_scan((wgt_scan_op)op->code, in[0], v == 0 && nd ? nd - 1 : 0, &out[0], with_idx ? &out[1] : NULL);
}

wgt_status call_softmax(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    int nd = wgt_tensor_ndim(in[0]), dim = v == 0 && nd ? nd - 1 : 0;
    return wgt_softmax(in[0], dim, out);
}

wgt_status call_log_softmax(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    int nd = wgt_tensor_ndim(in[0]), dim = v == 0 && nd ? nd - 1 : 0;
    return wgt_log_softmax(in[0], dim, out);
}

/* x [.., 53] (the case's shape), weight and bias [53] of x's dtype. */
int setup_norm(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    if (c == HX_ODD_LARGE || c == HX_SCALAR) return 0;
    in[0].dtype = dt;
    in[0].dom = (hx_dom){-4, 4, 0, 0};
    hx_case_shape(c, &in[0]);
    if (c == HX_BIG) in[0].shape[0] = 2049, in[0].shape[1] = 16385; /* 134,348,996 bytes of f32 */
    int64_t last = in[0].shape[in[0].ndim - 1];
    set(&in[1], dt, 1, &last, (hx_dom){0.5, 1.5, 0, 0});
    set(&in[2], dt, 1, &last, unit);
    in[1].fixed_layout = in[2].fixed_layout = c == HX_BROADCAST; /* weights are not expanded there */
    return 3;
}

wgt_status call_layer_norm(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_layer_norm(in[0], 1, v ? NULL : in[1], v ? NULL : in[2], 1e-5, out);
}

wgt_status call_rms_norm(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_rms_norm(in[0], 1, v ? NULL : in[1], 1e-6, out);
}

/* x [N, C, *] with C = 6: weight/bias [6]; running statistics for batch_norm. */
int setup_channels(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    switch (c) {
    case HX_CONTIGUOUS: case HX_STRIDED: case HX_SPECIAL: case HX_BROADCAST: set(&in[0], dt, 3, DIMS(4, 6, 29), unit); break;
    case HX_ODD1: set(&in[0], dt, 2, DIMS(1, 6), unit); break;
    case HX_EMPTY: set(&in[0], dt, 3, DIMS(0, 6, 5), unit); break;
    default: return 0;
    }
    for (int i = 1; i < 5; i++) {
        set(&in[i], dt, 1, DIMS(6), i == 2 || i == 4 ? (hx_dom){0.5, 1.5, 0, 0} : unit);
        in[i].fixed_layout = 1;
    }
    return 5; /* x, weight, bias, running mean, running var */
}

wgt_status call_group_norm(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_group_norm(in[0], v ? 2 : 3, in[1], in[2], 1e-5, out);
}

/* Inference with running statistics (training would update them in place: not differential). */
wgt_status call_batch_norm(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_batch_norm(in[0], in[3], in[4], in[1], in[2], 0, 0.1, 1e-5, out);
}
