/* Harness entry of qlinear (src/ops/qlinear.c): a float weight input is quantised on the host
 * (wgt_quantize, the same bytes on both contexts) and uploaded as blocks (wgt_qweight_upload) on
 * the context of x, one variant per block format the GPU kernels decode. */
#include <stdlib.h>

#include "harness/harness.h"
#include "ops/api.h"

#define DIMS(...) (int64_t[]){__VA_ARGS__}

static void set(hx_input *in, wgt_dtype dt, int ndim, const int64_t *shape, hx_dom dom, int fixed)
{
    in->dtype = dt;
    in->ndim = ndim;
    for (int d = 0; d < ndim; d++) in->shape[d] = shape[d];
    in->dom = dom;
    in->fixed_layout = fixed;
}

/* x [..., 256] in the case's layout, w [9, 256] and bias [9] f32 (fixed: they are read back and
 * quantised). 256: a whole block of every format (the K formats' blocks are 256). */
int setup_qlinear(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    switch (c) {
    case HX_CONTIGUOUS: case HX_STRIDED: case HX_SPECIAL: set(&in[0], dt, 2, DIMS(7, 256), op->dom, 0); break;
    case HX_BROADCAST: set(&in[0], dt, 3, DIMS(2, 3, 256), op->dom, 0); break;
    case HX_EMPTY: set(&in[0], dt, 2, DIMS(0, 256), op->dom, 0); break;
    case HX_ODD1: set(&in[0], dt, 1, DIMS(256), op->dom, 0); break;
    default: return 0;
    }
    set(&in[1], WGT_F32, 2, DIMS(9, 256), op->dom, 1);
    set(&in[2], WGT_F32, 1, DIMS(9), op->dom, 1);
    return 3;
}

/* Variants: Q8_0, Q4_0, Q4_K, Q6_K with the bias; Q8_0 without. */
wgt_status call_qlinear(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    static const wgt_ftype types[5] = {WGT_FTYPE_Q8_0, WGT_FTYPE_Q4_0, WGT_FTYPE_Q4_K, WGT_FTYPE_Q6_K, WGT_FTYPE_Q8_0};
    wgt_ftype type = types[v];
    int64_t rows = wgt_tensor_dim(in[1], 0), cols = wgt_tensor_dim(in[1], 1), n = rows * cols;
    uint64_t bytes = 0;
    wgt_status st = wgt_ftype_bytes(type, n, &bytes);
    float *w = malloc(sizeof(float) * (size_t)n);
    void *blocks = malloc(bytes ? bytes : 1);
    wgt_tensor *wq = NULL;
    if (!st && (!w || !blocks)) st = WGT_ERR_OUT_OF_MEMORY;
    if (!st) st = wgt_tensor_to_host(in[1], w, sizeof(float) * (size_t)n);
    if (!st) st = wgt_quantize(type, w, blocks, n);
    if (!st) st = wgt_qweight_upload(wgt_tensor_context(in[0]), type, rows, cols, blocks, &wq);
    if (!st) st = wgt_qlinear(in[0], wq, type, v < 4 ? in[2] : NULL, out);
    wgt_tensor_free(wq);
    free(w), free(blocks);
    return st;
}
