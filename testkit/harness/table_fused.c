/* Harness entries of the fused decoder ops (src/ops/fused.c): the GPU kernels against the
 * composition of the plain ops that a CPU-reference context runs. wgt_qkv_rope_cache writes into
 * caches in place and is checked by tests/ops/test_gpu_fused.c instead. */
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

static const hx_dom unit = {-3, 3, 0, 0};

/* swiglu: x [rows, 2 D] */
int setup_swiglu(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    (void)op;
    switch (c) {
    case HX_CONTIGUOUS: case HX_STRIDED: case HX_SPECIAL: set(&in[0], dt, 2, DIMS(6, 74), unit, 0); return 1;
    case HX_EMPTY: set(&in[0], dt, 2, DIMS(0, 10), unit, 0); return 1;
    case HX_ODD1: set(&in[0], dt, 2, DIMS(1, 2), unit, 0); return 1;
    case HX_ODD7: set(&in[0], dt, 3, DIMS(7, 1, 14), unit, 0); return 1;
    default: return 0;
    }
}

wgt_status call_swiglu(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    (void)op, (void)v;
    return wgt_swiglu(in[0], out);
}

/* add_rms_norm: a, b [rows, D], w [D]; variants: with w, without */
int setup_add_norm(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    (void)op;
    int64_t r, d;
    switch (c) {
    case HX_CONTIGUOUS: case HX_STRIDED: case HX_SPECIAL: r = 6, d = 37; break;
    case HX_EMPTY: r = 0, d = 5; break;
    case HX_ODD1: r = 1, d = 1; break;
    case HX_ODD7: r = 7, d = 300; break;
    default: return 0;
    }
    set(&in[0], dt, 2, DIMS(r, d), unit, 0);
    set(&in[1], dt, 2, DIMS(r, d), unit, 0);
    set(&in[2], dt, 1, &d, (hx_dom){0.5, 1.5, 0, 0}, 1);
    return 3;
}

wgt_status call_add_norm(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    (void)op;
    return wgt_add_rms_norm(in[0], in[1], v == 0 ? in[2] : NULL, 1e-6, &out[1], &out[0]);
}
