/* Harness entries for sorting and searching (src/ops/sort.c, search.c). Ties are common (integer
 * dtypes draw from [-20, 20], broadcast rows repeat, special values repeat), so the index outputs
 * check stability too; everything is a selection and compares exactly. */
#include <string.h>

#include "harness/harness.h"
#include "ops/api.h"
#include "ops/ops.h"

int setup_sort_x(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    if (c == HX_BIG && !op->big) return 0; /* sorts past a binding run in parts: too slow on lavapipe here */
    if (c == HX_ODD_LARGE && !op->large) return 0;
    in[0].dtype = dt;
    in[0].dom = op_is_float(dt) ? op->dom : (hx_dom){-20, 20, 0, 0};
    hx_case_shape(c, &in[0]);
    return 1;
}

/* variant 0: the last dim; 1: dim 0 (descending / largest / keepdim where the op has it) */
static int dim_of(int v, const wgt_tensor *x)
{
    int nd = wgt_tensor_ndim(x);
    return v == 0 && nd ? nd - 1 : 0;
}

static int64_t len_of(const wgt_tensor *x, int dim)
{
    return wgt_tensor_ndim(x) ? wgt_tensor_shape(x)[dim] : 1;
}

wgt_status call_sort(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_sort(in[0], dim_of(v, in[0]), v, &out[0], &out[1]);
}

wgt_status call_argsort(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_argsort(in[0], dim_of(v, in[0]), !v, out);
}

wgt_status call_topk(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    int dim = dim_of(v, in[0]);
    int64_t k = len_of(in[0], dim) < 5 ? len_of(in[0], dim) : 5;
    return wgt_topk(in[0], k, dim, v, 1, &out[0], &out[1]);
}

wgt_status call_kthvalue(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    int dim = dim_of(v, in[0]);
    int64_t k = len_of(in[0], dim) < 3 ? len_of(in[0], dim) : 3;
    if (k == 0) k = 1; /* an empty dim is refused on both sides */
    return wgt_kthvalue(in[0], k, dim, v, &out[0], &out[1]);
}

wgt_status call_median(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_median(in[0], dim_of(v, in[0]), v, &out[0], &out[1]);
}

wgt_status call_unique(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    if (v == 0) return wgt_unique(in[0], &out[0], &out[1], NULL, NULL);
    return wgt_unique(in[0], &out[0], NULL, &out[1], NULL); /* counts */
}

/* A sequence [.., 53] (the case's shape; its rows need not be sorted: both sides run the same
 * binary search) and values of the same leading dims. */
int setup_search(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    if (!setup_sort_x(op, c, dt, in) || c == HX_SCALAR) return 0;
    in[1] = in[0];
    in[0].dom = in[1].dom = op_is_float(dt) ? op->dom : (hx_dom){-20, 20, 0, 0};
    if (in[1].ndim >= 1 && c != HX_EMPTY) in[1].shape[in[1].ndim - 1] = 11;
    return 2;
}

wgt_status call_searchsorted(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_searchsorted(in[0], in[1], v, NULL, out);
}

/* boundaries: the first row of the case's tensor, flattened to 1-D */
wgt_status call_bucketize(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    const wgt_tensor *b = in[0];
    wgt_tensor *row = NULL, *flat = NULL;
    wgt_status st = WGT_OK;
    if (wgt_tensor_ndim(b) > 1) {
        if ((st = wgt_tensor_narrow(b, 0, 0, 1, &row))) return st;
        int64_t n = wgt_tensor_numel(row);
        if ((st = wgt_tensor_reshape(row, 1, &n, &flat))) {
            wgt_tensor_free(row);
            return st;
        }
        b = flat;
    }
    st = wgt_bucketize(in[1], b, v, out);
    wgt_tensor_free(flat);
    wgt_tensor_free(row);
    return st;
}

wgt_status call_histc(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return v ? wgt_histc(in[0], 13, 0, 0, out) : wgt_histc(in[0], 17, -2, 2.5, out);
}
