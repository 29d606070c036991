/* Resampling: F.interpolate (nearest, nearest-exact, linear/bilinear, bicubic over 1 or 2 dims,
 * align_corners both ways, by size or scale) and 2-D F.grid_sample (bilinear/nearest/bicubic,
 * zeros/border/reflection, align_corners both ways). One kernel (src/kernels/resample.wgsl): an
 * invocation per output word; coordinates in f32 as PyTorch computes them. The batch dims split
 * over dispatches when the tensors pass one storage binding. The CPU reference is
 * src/cpu/resample.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/pool.h"
#include "ops/ops.h"
#include "tensor/record.h"

typedef struct resample_params {
    uint32_t n, out_w0, off_x, off_g, op, mode, align, padding, H, W, OH, OW, sxh, sxw, C, sp2;
    float scale_h, scale_w;
    uint32_t sgn, sgh, sgw, sgc, simple, plane_stride;
    op_layout_params lead;
} resample_params;

static wgt_status resample_kernel(wgt_context *ctx, wgt_dtype dt, wgt_dtype gdt, wgt_kernel **k)
{
    size_t cap = 16384;
    char *pre = malloc(cap);
    if (!pre) return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    /* i64 moves exact (lo, hi) words: only the nearest modes, which copy elements, take it */
    int wide = dt == WGT_I64;
    const char *ct = wide ? "i64" : op_compute_type(dt), *lib = op_wgsl_lib(), *lib64 = wide ? op_wgsl_lib_i64() : "";
    snprintf(pre, cap, "%s\n%s\nalias CT = %s;\nconst PACK: u32 = %du;\nconst WG: u32 = %uu;\n", lib ? lib : "",
             lib64 ? lib64 : "", wide ? "vec2<u32>" : ct, op_pack(dt), op_workgroup_size(ctx));
    op_wgsl_loader(pre, cap, "ldx", "xs", dt, ct);
    op_wgsl_loader(pre, cap, "ldg", "gs", op_is_float(gdt) ? gdt : WGT_F32, "f32");
    op_wgsl_storer(pre, cap, "st", "out", dt, ct);
    int ok = op_wgsl_ct(pre, cap, dt); /* ct_f32, ct_of: src/kernels/lib_ct.wgsl */
    wgt_status st = !ok || strlen(pre) + 1 >= cap ? wgt_ctx_error(ctx, WGT_ERR_INTERNAL, "resample: kernel prelude too long")
                                           : wgt_gpu_kernel(ctx, "resample", pre, "main", NULL, 0, k);
    free(pre);
    return st;
}

/* Run the kernel over y, splitting x's dim 0 (and the grid's) when the tensors pass a binding. */
static wgt_status resample_gpu(wgt_context *ctx, const char *name, resample_params *p, const wgt_tensor *x,
                               const wgt_tensor *grid, int nl, wgt_tensor *y)
{
    int64_t numel = wgt_layout_numel(&y->l);
    if (numel == 0) return WGT_OK;
    if (numel > UINT32_MAX / 2) return op_fail(ctx, WGT_ERR_LIMIT, "%s: more than 2^31 output elements", name);
    int pack = op_pack(y->l.dtype);
    int64_t rows = x->l.shape[0], per_row = numel / rows;
    const wgt_layout *ls[3] = {&x->l, &y->l, grid ? &grid->l : NULL};
    int64_t per = op_rows_per_chunk(ctx, ls, grid ? 3 : 2);
    if (per == 0) return op_fail(ctx, WGT_ERR_LIMIT, "%s: one batch row is larger than a storage binding", name);
    if (per < rows) {
        while (per > 1 && (per * per_row) % pack) per--;
        if ((per * per_row) % pack) return op_fail(ctx, WGT_ERR_LIMIT, "%s: cannot split on output word boundaries", name);
    }
    wgt_kernel *k;
    wgt_status st = resample_kernel(ctx, x->l.dtype, grid ? grid->l.dtype : WGT_F32, &k);
    if (st) return st;
    wgt_binding b[3];
    int64_t base, lo, hi;
    for (int64_t r0 = 0; r0 < rows; r0 += per) {
        int64_t r1 = r0 + per < rows ? r0 + per : rows;
        wgt_layout c = x->l;
        c.offset += r0 * c.strides[0], c.shape[0] = r1 - r0;
        op_extent(&c, &lo, &hi);
        if ((st = op_bind(x, lo, hi, &b[0], &base))) return st;
        p->off_x = (uint32_t)(c.offset - base);
        c.ndim = nl;
        if ((st = op_layout_params_fill(ctx, &c, &p->lead))) return st;
        op_plane_stride(&c, &p->simple, &p->plane_stride);
        if (grid) {
            wgt_layout gc = grid->l;
            gc.offset += r0 * gc.strides[0], gc.shape[0] = r1 - r0;
            op_extent(&gc, &lo, &hi);
            if ((st = op_bind(grid, lo, hi, &b[1], &base))) return st;
            p->off_g = (uint32_t)(gc.offset - base);
        } else b[1] = b[0];
        int64_t e0 = r0 * per_row, e1 = r1 * per_row;
        p->n = (uint32_t)(e1 - e0);
        if ((st = op_bind(y, e0, e1 - 1, &b[2], &base))) return st;
        p->out_w0 = (uint32_t)((e0 - base) / pack);
        uint32_t gx, gy;
        op_grid(ctx, ((uint64_t)p->n + (uint64_t)pack * op_workgroup_size(ctx) - 1) /
                         ((uint64_t)pack * op_workgroup_size(ctx)),
                &gx, &gy);
        if ((st = wgt_gpu_dispatch(ctx, k, p, sizeof *p, b, 3, gx, gy, 1))) return st;
    }
    return WGT_OK;
}

/* ---- interpolate ---------------------------------------------------------------------------- */

typedef struct interp_arg {
    int spatial, align;
    wgt_interp_mode mode;
    double scales[2];
} interp_arg;

static wgt_status interp_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    interp_arg *a = arg;
    return wgt_cpu_interpolate(&in[0], a->spatial, a->mode, a->scales, a->align, &out[0]);
}

wgt_status wgt_interpolate(const wgt_tensor *x, int spatial, wgt_interp_mode mode, const int64_t *size,
                           const double *scales, int align_corners, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    if (spatial != 1 && spatial != 2)
        return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "interpolate: spatial must be 1 or 2, not %d", spatial);
    if ((unsigned)mode >= WGT_INTERP_COUNT)
        return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "interpolate: unknown mode %d", (int)mode);
    int nd = x->l.ndim;
    if (nd < spatial + 1)
        return op_fail(ctx, WGT_ERR_SHAPE, "interpolate: the input must be [batch..., %s] with a batch dim, not %d-D",
                       spatial == 2 ? "H, W" : "L", nd);
    int nearest = mode == WGT_INTERP_NEAREST || mode == WGT_INTERP_NEAREST_EXACT;
    if (nearest && align_corners)
        return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "interpolate: align_corners applies to linear and cubic modes only");
    wgt_dtype dt = x->l.dtype;
    if (!nearest && !op_is_float(dt))
        return op_fail(ctx, WGT_ERR_DTYPE, "interpolate: %s needs f32, f16 or bf16, not %s", wgt_interp_mode_name(mode),
                       wgt_dtype_name(dt));
    if (!size && !scales) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "interpolate: give an output size or scales");
    int64_t shape[WGT_MAX_DIMS];
    memcpy(shape, x->l.shape, sizeof shape);
    interp_arg a = {spatial, align_corners != 0, mode, {0, 0}};
    float sc[2] = {1, 1};
    for (int i = 0; i < spatial; i++) {
        int64_t S = x->l.shape[nd - spatial + i], O;
        double s = scales ? scales[i] : 0;
        if (scales && !(s > 0) && !size)
            return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "interpolate: scale %d must be positive, not %g", i, s);
        if (scales && !isfinite(s))
            return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "interpolate: scale %d is not finite", i);
        O = size ? size[i] : (int64_t)floor((double)S * s);
        if (S <= 0 || O <= 0 || O > UINT32_MAX / 4)
            return op_fail(ctx, WGT_ERR_SHAPE, "interpolate: input size %lld and output size %lld of spatial dim %d "
                           "must be positive", (long long)S, (long long)O, i);
        shape[nd - spatial + i] = O;
        a.scales[i] = s > 0 ? s : 0;
        sc[i] = wgt_cpu_interp_scale(S, O, a.scales[i], nearest ? 0 : a.align);
    }
    wgt_tensor *y;
    wgt_status st = wgt_tensor_new(ctx, dt, nd, shape, &y);
    if (st) return st;
    int gpu_ok = 1; /* every dtype: the integer ones (i64 too) only in the nearest modes, checked above */
    if (op_use_gpu(ctx, "interpolate", dt, gpu_ok)) {
        resample_params p;
        memset(&p, 0, sizeof p);
        p.op = 0, p.mode = (uint32_t)mode, p.align = (uint32_t)a.align, p.sp2 = spatial == 2;
        p.H = spatial == 2 ? (uint32_t)x->l.shape[nd - 2] : 1, p.W = (uint32_t)x->l.shape[nd - 1];
        p.OH = spatial == 2 ? (uint32_t)shape[nd - 2] : 1, p.OW = (uint32_t)shape[nd - 1];
        p.sxh = spatial == 2 ? (uint32_t)x->l.strides[nd - 2] : 0, p.sxw = (uint32_t)x->l.strides[nd - 1];
        p.scale_h = spatial == 2 ? sc[0] : 1, p.scale_w = sc[spatial - 1];
        st = resample_gpu(ctx, "interpolate", &p, x, NULL, nd - spatial, y);
    } else if (!(st = op_fallback_status(ctx, "interpolate", dt, gpu_ok))) {
        const wgt_tensor *ins[1] = {x};
        st = op_reference(ctx, interp_ref, &a, ins, 1, &y, 1);
    }
    op_grad_interp rec = {spatial, (int)mode, a.align, {a.scales[0], a.scales[1]}};
    const wgt_tensor *in[1] = {x};
    return op_record(op_finish(st, y, out), OP_GRAD_INTERPOLATE, in, 1, &rec, sizeof rec, out);
}

/* ---- grid_sample ---------------------------------------------------------------------------- */

typedef struct grid_arg {
    wgt_grid_mode mode;
    wgt_grid_padding padding;
    int align;
} grid_arg;

static wgt_status grid_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    grid_arg *a = arg;
    return wgt_cpu_grid_sample(&in[0], &in[1], a->mode, a->padding, a->align, &out[0]);
}

wgt_status wgt_grid_sample(const wgt_tensor *x, const wgt_tensor *grid, wgt_grid_mode mode, wgt_grid_padding padding,
                           int align_corners, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    if (!grid) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "grid_sample: NULL grid");
    const wgt_tensor *both[2] = {x, grid};
    wgt_status st = op_same_context("grid_sample", both, 2);
    if (st) return st;
    if ((unsigned)mode >= WGT_GRID_MODE_COUNT)
        return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "grid_sample: unknown mode %d (bilinear, nearest or bicubic)", (int)mode);
    if ((unsigned)padding >= WGT_GRID_PAD_COUNT)
        return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "grid_sample: unknown padding mode %d", (int)padding);
    const wgt_layout *lx = &x->l, *lg = &grid->l;
    if (lx->ndim != 4) return op_fail(ctx, WGT_ERR_SHAPE, "grid_sample: the input must be [N, C, H, W], not %d-D", lx->ndim);
    if (lg->ndim != 4 || lg->shape[3] != 2 || lg->shape[0] != lx->shape[0])
        return op_fail(ctx, WGT_ERR_SHAPE, "grid_sample: the grid must be [N, Ho, Wo, 2] with the input's N = %lld",
                       (long long)lx->shape[0]);
    if (!op_is_float(lx->dtype) || !op_is_float(lg->dtype))
        return op_fail(ctx, WGT_ERR_DTYPE, "grid_sample: input (%s) and grid (%s) must be f32, f16 or bf16",
                       wgt_dtype_name(lx->dtype), wgt_dtype_name(lg->dtype));
    int64_t N = lx->shape[0], C = lx->shape[1];
    if ((lx->shape[2] == 0 || lx->shape[3] == 0) && N * C * lg->shape[1] * lg->shape[2] > 0)
        return op_fail(ctx, WGT_ERR_SHAPE, "grid_sample: the input's spatial dims are empty");
    int64_t shape[4] = {N, C, lg->shape[1], lg->shape[2]};
    wgt_tensor *y;
    if ((st = wgt_tensor_new(ctx, lx->dtype, 4, shape, &y))) return st;
    grid_arg a = {mode, padding, align_corners != 0};
    if (op_use_gpu(ctx, "grid_sample", lx->dtype, 1)) {
        resample_params p;
        memset(&p, 0, sizeof p);
        p.op = 1, p.mode = (uint32_t)mode, p.align = (uint32_t)a.align, p.padding = (uint32_t)padding;
        p.H = (uint32_t)lx->shape[2], p.W = (uint32_t)lx->shape[3], p.OH = (uint32_t)shape[2], p.OW = (uint32_t)shape[3];
        p.sxh = (uint32_t)lx->strides[2], p.sxw = (uint32_t)lx->strides[3], p.C = (uint32_t)C, p.sp2 = 1;
        p.sgn = (uint32_t)lg->strides[0], p.sgh = (uint32_t)lg->strides[1], p.sgw = (uint32_t)lg->strides[2];
        p.sgc = (uint32_t)lg->strides[3];
        if (C == 0) st = WGT_OK;
        else st = resample_gpu(ctx, "grid_sample", &p, x, grid, 2, y);
    } else {
        const wgt_tensor *ins[2] = {x, grid};
        st = op_reference(ctx, grid_ref, &a, ins, 2, &y, 1);
    }
    op_grad_grid rec = {mode, padding, a.align};
    const wgt_tensor *rec_in[2] = {x, grid};
    return op_record(op_finish(st, y, out), OP_GRAD_GRID_SAMPLE, rec_in, 2, &rec, sizeof rec, out);
}
