/* Harness entries for pooling and resampling (src/ops/pool.c, resample.c): max/avg pools 1d and
 * 2d in a few geometries (padding, stride, dilation, ceil mode; max with its indices as the second
 * output), adaptive pools, interpolate in each mode (up by size, down by scale, align_corners) and
 * grid_sample in each mode x padding x align_corners. Inputs are [N, C, *S]; the strided case
 * stores them transposed, the broadcast case expands the batch dim. */
#include <string.h>

#include "harness/harness.h"

#define DIMS(...) (int64_t[]){__VA_ARGS__}

static void set(hx_input *in, wgt_dtype dt, int ndim, const int64_t *shape, hx_dom dom)
{
    in->dtype = dt;
    in->ndim = ndim;
    for (int d = 0; d < ndim; d++) in->shape[d] = shape[d];
    in->dom = dom;
}

static const hx_dom unit = {-4, 4, 0, 0};

/* x [N, C, H, W] (code 2) or [N, C, L] (code 1) per case. */
int setup_pool_x(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    int sp = op->code % 10;
    switch (c) {
    case HX_CONTIGUOUS: case HX_STRIDED: case HX_BROADCAST: case HX_SPECIAL:
        if (sp == 2) set(&in[0], dt, 4, DIMS(3, 4, 13, 17), unit);
        else set(&in[0], dt, 3, DIMS(3, 4, 61), unit);
        break;
    case HX_EMPTY: set(&in[0], dt, sp + 2, sp == 2 ? DIMS(0, 4, 6, 6) : DIMS(0, 4, 6), unit); break;
    case HX_ODD1: set(&in[0], dt, sp + 2, sp == 2 ? DIMS(1, 1, 3, 3) : DIMS(1, 1, 3), unit); break;
    case HX_ODD7: set(&in[0], dt, sp + 2, sp == 2 ? DIMS(1, 7, 5, 7) : DIMS(1, 7, 7), unit); break;
    case HX_BIG: /* 2049 x 16384 f32: 134,283,264 bytes, past llvmpipe's 128 MiB binding */
        if (sp == 2) set(&in[0], dt, 4, DIMS(2049, 1, 128, 128), unit);
        else set(&in[0], dt, 3, DIMS(2049, 1, 16384), unit);
        break;
    default: return 0;
    }
    return 1;
}

/* Geometry of variant v for sp spatial dims (the same per dim). */
static wgt_pool_params geometry(int v, int sp)
{
    wgt_pool_params p;
    memset(&p, 0, sizeof p);
    int64_t k = 3, s = 1, pad = 1, d = 1;
    int ceil_mode = 0;
    if (v == 1) k = 2, s = 2, pad = 0, ceil_mode = 1;
    if (v == 2) k = 3, s = 2, pad = 1, d = 2;
    if (v == 3) k = 3, s = 2, pad = 1, ceil_mode = 1; /* the last window cut by the padding */
    for (int i = 0; i < sp; i++) p.kernel[i] = k, p.stride[i] = s, p.padding[i] = pad, p.dilation[i] = d;
    p.ceil_mode = ceil_mode;
    return p;
}

wgt_status call_max_pool(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    wgt_pool_params p = geometry(v, op->code);
    return wgt_max_pool(in[0], op->code, &p, &out[0], &out[1]);
}

/* geometries 0, 1, 3 with count_include_pad off and on, and a divisor_override */
wgt_status call_avg_pool(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    static const int geo[] = {0, 0, 1, 3, 3, 0};
    wgt_pool_params p = geometry(geo[v], op->code);
    p.count_include_pad = v == 1 || v == 4;
    p.divisor_override = v == 5 ? 5 : 0;
    return wgt_avg_pool(in[0], op->code, &p, &out[0]);
}

/* output sizes 1 (global), 2 x 5, 5 x 7, larger than the input */
static const int64_t adaptive_sizes[4][2] = {{1, 1}, {2, 5}, {5, 7}, {19, 23}};

wgt_status call_adaptive_avg(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_adaptive_avg_pool(in[0], op->code, adaptive_sizes[v] + (2 - op->code), &out[0]);
}

wgt_status call_adaptive_max(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_adaptive_max_pool(in[0], op->code, adaptive_sizes[v] + (2 - op->code), &out[0], &out[1]);
}

/* interpolate: the mode in code / 10, spatial dims in code % 10. Variants: up by size, down by
 * scale, up by a fractional scale; linear and cubic also with align_corners. */
wgt_status call_interp(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    int sp = op->code % 10;
    wgt_interp_mode m = (wgt_interp_mode)(op->code / 10);
    const int64_t sizes[2] = {29, 31};
    const double down[2] = {0.5, 0.4}, frac[2] = {1.7, 2.3};
    int align = v >= 3;
    switch (v % 3) {
    case 0: return wgt_interpolate(in[0], sp, m, sizes + (2 - sp), NULL, align, &out[0]);
    case 1: return wgt_interpolate(in[0], sp, m, NULL, down + (2 - sp), align, &out[0]);
    default: return wgt_interpolate(in[0], sp, m, NULL, frac + (2 - sp), align, &out[0]);
    }
}

/* x as setup_pool_x (2-D), grid [N, 7, 9, 2] in [-1.2, 1.2] (past the edges: the padding modes matter). */
int setup_grid(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    if (c == HX_BIG || !setup_pool_x(op, c, dt, in)) return 0;
    set(&in[1], dt, 4, DIMS(in[0].shape[0], 7, 9, 2), (hx_dom){-1.2, 1.2, 0, 0});
    return 2;
}

wgt_status call_grid(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_grid_sample(in[0], in[1], (wgt_grid_mode)(v / 6), (wgt_grid_padding)(v / 2 % 3), v % 2, &out[0]);
}
