/* Pooling: max_pool and avg_pool 1d/2d (kernel, stride, padding, dilation, ceil_mode,
 * count_include_pad, divisor_override; max with indices) and adaptive avg/max pools, PyTorch's
 * semantics. One kernel (src/kernels/pool.wgsl): an invocation per output word walks each
 * element's window in the strided input; the batch dims split over dispatches when the tensors pass
 * one storage binding. The CPU reference is src/cpu/pool.c. */
#include <stdlib.h>
#include <string.h>

#include "cpu/pool.h"
#include "ops/ops.h"
#include "tensor/record.h"

typedef struct pool_params {
    uint32_t n, out_w0, idx0, off_x, kind, H, W, OH, OW, sxh, sxw, kh, kw, sh, sw, ph, pw, dh, dw, cip, divisor;
    uint32_t simple, plane_stride, pad2;
    op_layout_params lead;
} pool_params;

static wgt_status pool_kernel(wgt_context *ctx, wgt_dtype dt, int with_idx, wgt_kernel **k)
{
    size_t cap = 16384;
    char *pre = malloc(cap);
    if (!pre) return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    /* i64 computes on exact (lo, hi) words: the max pools only compare and move values */
    int wide = dt == WGT_I64;
    const char *ct = wide ? "i64" : op_compute_type(dt), *lib = op_wgsl_lib(), *lib64 = wide ? op_wgsl_lib_i64() : "";
    snprintf(pre, cap, "%s\n%s\nalias CT = %s;\nconst PACK: u32 = %du;\nconst WG: u32 = %uu;\n", lib ? lib : "",
             lib64 ? lib64 : "", wide ? "vec2<u32>" : ct, op_pack(dt), op_workgroup_size(ctx));
    op_wgsl_loader(pre, cap, "ldx", "xs", dt, ct);
    op_wgsl_storer(pre, cap, "st", "out", dt, ct);
    /* the operations on CT and the optional index output: sections of src/kernels/lib_ct.wgsl and
     * lib_index_out.wgsl */
    int ok = op_wgsl_ct(pre, cap, dt) && op_wgsl_section(pre, cap, "lib_index_out", with_idx ? "index out" : "no index out");
    size_t used = ok ? strlen(pre) : cap;
    wgt_status st = used >= cap ? wgt_ctx_error(ctx, WGT_ERR_INTERNAL, "pool: kernel prelude too long")
                                : wgt_gpu_kernel(ctx, "pool", pre, "main", NULL, 0, k);
    free(pre);
    return st;
}

/* y [..., *O] (and idx, i32, y's shape) from x [..., *S]; g resolved (1-D: index 0 is 1/1/0/1). */
static wgt_status pool_gpu(wgt_context *ctx, const wgt_cpu_pool_geom *g, const wgt_tensor *x, wgt_tensor *y,
                           wgt_tensor *idx)
{
    int nd = x->l.ndim, sp = g->spatial, nl = nd - sp;
    int64_t numel = wgt_layout_numel(&y->l);
    if (numel == 0) return WGT_OK;
    if (numel > UINT32_MAX / 2) return op_fail(ctx, WGT_ERR_LIMIT, "pool: more than 2^31 output elements");
    pool_params p;
    memset(&p, 0, sizeof p);
    p.kind = (uint32_t)g->kind;
    p.H = sp == 2 ? (uint32_t)x->l.shape[nd - 2] : 1, p.W = (uint32_t)x->l.shape[nd - 1];
    p.OH = sp == 2 ? (uint32_t)y->l.shape[nd - 2] : 1, p.OW = (uint32_t)y->l.shape[nd - 1];
    p.sxh = sp == 2 ? (uint32_t)x->l.strides[nd - 2] : 0, p.sxw = (uint32_t)x->l.strides[nd - 1];
    p.kh = (uint32_t)g->k[0], p.kw = (uint32_t)g->k[1], p.sh = (uint32_t)g->s[0], p.sw = (uint32_t)g->s[1];
    p.ph = (uint32_t)g->p[0], p.pw = (uint32_t)g->p[1], p.dh = (uint32_t)g->d[0], p.dw = (uint32_t)g->d[1];
    p.cip = (uint32_t)g->count_include_pad, p.divisor = (uint32_t)g->divisor;
    int pack = op_pack(y->l.dtype);
    int64_t rows = x->l.shape[0], per_row = numel / rows;
    const wgt_layout *ls[3] = {&x->l, &y->l, idx ? &idx->l : NULL};
    int64_t per = op_rows_per_chunk(ctx, ls, idx ? 3 : 2);
    if (per == 0) return op_fail(ctx, WGT_ERR_LIMIT, "pool: one batch row is larger than a storage binding");
    if (per < rows) {
        while (per > 1 && (per * per_row) % pack) per--;
        if ((per * per_row) % pack) return op_fail(ctx, WGT_ERR_LIMIT, "pool: cannot split on output word boundaries");
    }
    wgt_kernel *k;
    wgt_status st = pool_kernel(ctx, x->l.dtype, idx != NULL, &k);
    if (st) return st;
    wgt_binding b[4];
    int64_t base;
    for (int64_t r0 = 0; r0 < rows; r0 += per) {
        int64_t r1 = r0 + per < rows ? r0 + per : rows;
        wgt_layout c = x->l;
        c.offset += r0 * c.strides[0], c.shape[0] = r1 - r0;
        int64_t lo, hi;
        op_extent(&c, &lo, &hi);
        if ((st = op_bind(x, lo, hi, &b[0], &base))) return st;
        p.off_x = (uint32_t)(c.offset - base);
        c.ndim = nl;
        if ((st = op_layout_params_fill(ctx, &c, &p.lead))) return st;
        op_plane_stride(&c, &p.simple, &p.plane_stride);
        int64_t e0 = r0 * per_row, e1 = r1 * per_row;
        p.n = (uint32_t)(e1 - e0);
        if ((st = op_bind(y, e0, e1 - 1, &b[1], &base))) return st;
        p.out_w0 = (uint32_t)((e0 - base) / pack);
        if (idx) {
            if ((st = op_bind(idx, e0, e1 - 1, &b[2], &base))) return st;
            p.idx0 = (uint32_t)(e0 - base);
        }
        uint32_t gx, gy;
        op_grid(ctx, ((uint64_t)p.n + (uint64_t)pack * op_workgroup_size(ctx) - 1) / ((uint64_t)pack * op_workgroup_size(ctx)),
                &gx, &gy);
        if ((st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, idx ? 3 : 2, gx, gy, 1))) return st;
    }
    return WGT_OK;
}

typedef struct pool_arg {
    wgt_cpu_pool_geom g;
    int with_idx;
} pool_arg;

static wgt_status pool_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    pool_arg *a = arg;
    return wgt_cpu_pool(&a->g, &in[0], &out[0], a->with_idx ? &out[1] : NULL);
}

/* PyTorch's pooling_output_shape: (S + 2 pad - dil (K - 1) - 1 (+ stride - 1 in ceil mode)) / stride
 * + 1, less one when ceil mode would start the last window past S + pad. */
static int64_t pool_out(int64_t S, int64_t k, int64_t s, int64_t pad, int64_t d, int ceil_mode)
{
    int64_t num = S + 2 * pad - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    if (num < 0) return 0; /* the caller rejects windows larger than the padded input */
    int64_t o = num / s + 1;
    if (ceil_mode && (o - 1) * s >= S + pad) o--;
    return o;
}

static wgt_status pool_run(const char *name, wgt_cpu_pool_kind kind, const wgt_tensor *x, int spatial,
                           const wgt_pool_params *pp, const int64_t *osize, wgt_tensor **out, wgt_tensor **indices)
{
    OP_BEGIN(x, out);
    if (indices) *indices = NULL;
    if (spatial != 1 && spatial != 2)
        return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: spatial must be 1 or 2, not %d", name, spatial);
    int nd = x->l.ndim;
    if (nd < spatial + 1)
        return op_fail(ctx, WGT_ERR_SHAPE, "%s: the input must be [batch..., %s] with a batch dim, not %d-D", name,
                       spatial == 2 ? "H, W" : "L", nd);
    int is_max = kind == WGT_CPU_POOL_MAX || kind == WGT_CPU_POOL_ADAPTIVE_MAX;
    wgt_dtype dt = x->l.dtype;
    if (dt == WGT_BOOL || (!is_max && !op_is_float(dt)))
        return op_fail(ctx, WGT_ERR_DTYPE, "%s: input dtype %s is not supported (%s)", name, wgt_dtype_name(dt),
                       is_max ? "floats and integers" : "f32, f16 or bf16");
    wgt_cpu_pool_geom g = {kind, spatial, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 0, 0};
    int64_t shape[WGT_MAX_DIMS];
    memcpy(shape, x->l.shape, sizeof shape);
    for (int i = 0; i < spatial; i++) {
        int gi = 2 - spatial + i; /* geometry slot: 1-D uses slot 1 */
        int64_t S = x->l.shape[nd - spatial + i];
        if (S <= 0 && kind != WGT_CPU_POOL_ADAPTIVE_AVG && kind != WGT_CPU_POOL_ADAPTIVE_MAX)
            return op_fail(ctx, WGT_ERR_SHAPE, "%s: spatial dim %d of the input is empty", name, i);
        if (osize) {
            if (osize[i] <= 0)
                return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: output_size[%d] = %lld must be positive", name, i,
                               (long long)osize[i]);
            if (S <= 0) return op_fail(ctx, WGT_ERR_SHAPE, "%s: spatial dim %d of the input is empty", name, i);
            shape[nd - spatial + i] = osize[i];
            continue;
        }
        int64_t k = pp->kernel[i], s = pp->stride[i] ? pp->stride[i] : k, pad = pp->padding[i];
        int64_t d = pp->dilation[i] ? pp->dilation[i] : 1;
        if (k <= 0 || s <= 0 || d <= 0 || pad < 0)
            return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT,
                           "%s: kernel %lld, stride %lld and dilation %lld must be positive, padding %lld >= 0 "
                           "(spatial dim %d)", name, (long long)k, (long long)s, (long long)d, (long long)pad, i);
        /* PyTorch's bound; ONNX's pads may reach k - 1 without dilation (every window still holds
         * an input element, so a max is never taken over padding alone) */
        if (pad > k / 2 && !(d == 1 && pad < k))
            return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT,
                           "%s: padding %lld is more than half the kernel %lld (dim %d; up to %lld without dilation)",
                           name, (long long)pad, (long long)k, i, (long long)(k - 1));
        if (kind == WGT_CPU_POOL_AVG && d != 1)
            return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: dilation must be 1", name);
        int64_t o = pool_out(S, k, s, pad, d, pp->ceil_mode);
        if (S + 2 * pad - d * (k - 1) - 1 < 0 || o < 1)
            return op_fail(ctx, WGT_ERR_SHAPE, "%s: the window (kernel %lld, dilation %lld) does not fit spatial dim %d "
                           "of size %lld with padding %lld", name, (long long)k, (long long)d, i, (long long)S,
                           (long long)pad);
        g.k[gi] = k, g.s[gi] = s, g.p[gi] = pad, g.d[gi] = d;
        shape[nd - spatial + i] = o;
    }
    if (pp && kind == WGT_CPU_POOL_AVG) {
        if (pp->divisor_override < 0 || pp->divisor_override > UINT32_MAX)
            return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: divisor_override %lld out of range", name,
                           (long long)pp->divisor_override);
        g.count_include_pad = pp->count_include_pad != 0;
        g.divisor = pp->divisor_override;
    }
    /* A global pool (every output size 1, no indices) is a reduction over the plane: wgt_reduce
     * spreads each plane over a workgroup (and long planes over several), where the pool kernel
     * would walk a whole plane per invocation. */
    int global = osize && !indices && !wgt_gpu_runs_reference(ctx) && dt != WGT_I64;
    for (int i = 0; global && i < spatial; i++) global = osize[i] == 1;
    wgt_reduce_op rop = is_max ? WGT_REDUCE_AMAX : WGT_REDUCE_MEAN;
    if (global && wgt_reduce_result_dtype(rop, dt) == dt) {
        uint32_t mask = spatial == 2 ? 3u << (nd - 2) : 1u << (nd - 1);
        return wgt_reduce(rop, x, mask, 1, 0, out);
    }
    wgt_tensor *y = NULL, *idx = NULL;
    wgt_status st = wgt_tensor_new(ctx, dt, nd, shape, &y);
    if (!st && indices) st = wgt_tensor_new(ctx, WGT_I32, nd, shape, &idx);
    int gpu_ok = dt != WGT_I64 || is_max; /* i64 averages are refused above */
    if (!st && op_use_gpu(ctx, name, dt, gpu_ok)) st = pool_gpu(ctx, &g, x, y, idx);
    else if (!st && !(st = op_fallback_status(ctx, name, dt, gpu_ok))) {
        pool_arg a = {g, idx != NULL};
        const wgt_tensor *ins[1] = {x};
        wgt_tensor *outs[2] = {y, idx};
        st = op_reference(ctx, pool_ref, &a, ins, 1, outs, idx ? 2 : 1);
    }
    if (st) {
        wgt_tensor_free(idx);
        return op_finish(st, y, out);
    }
    if (indices) *indices = idx;
    return op_finish(st, y, out);
}

static wgt_status need_params(const wgt_tensor *x, const char *name, const void *p)
{
    if (p) return WGT_OK;
    return x ? op_fail(x->st->ctx, WGT_ERR_INVALID_ARGUMENT, "%s: NULL parameters", name)
             : wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: NULL argument", name);
}

/* The max pools' backward sends each gradient to its output's argmax, so while autograd records
 * the indices are computed even when the caller does not want them. */
static wgt_status max_pool_run(const char *name, wgt_cpu_pool_kind kind, const wgt_tensor *x, int spatial,
                               const wgt_pool_params *pp, const int64_t *osize, wgt_tensor **out,
                               wgt_tensor **indices)
{
    if (indices) *indices = NULL;
    int rec = x && x->ag && op_grad_mode();
    wgt_tensor *idx = NULL;
    wgt_status st = pool_run(name, kind, x, spatial, pp, osize, out, indices || rec ? &idx : NULL);
    if (!st && rec) {
        op_grad_pool gp = {0};
        gp.spatial = spatial;
        const wgt_tensor *in[2] = {x, idx};
        st = op_record(st, OP_GRAD_MAX_POOL, in, 2, &gp, sizeof gp, out);
    }
    if (!st && indices) *indices = idx;
    else wgt_tensor_free(idx);
    return st;
}

/* The average pools' windows, for their backward. */
static wgt_status avg_pool_record(wgt_status st, const wgt_tensor *x, int spatial, const wgt_pool_params *pp,
                                  const int64_t *osize, wgt_tensor **out)
{
    op_grad_pool gp = {0};
    gp.spatial = spatial, gp.adaptive = osize != NULL;
    for (int i = 0; i < spatial && !st && (spatial == 1 || spatial == 2); i++) {
        if (osize) {
            gp.output_size[i] = osize[i];
            continue;
        }
        gp.kernel[i] = pp->kernel[i], gp.stride[i] = pp->stride[i] ? pp->stride[i] : pp->kernel[i];
        gp.padding[i] = pp->padding[i];
    }
    if (pp) gp.count_include_pad = pp->count_include_pad != 0, gp.divisor_override = pp->divisor_override;
    const wgt_tensor *in[1] = {x};
    return op_record(st, OP_GRAD_AVG_POOL, in, 1, &gp, sizeof gp, out);
}

wgt_status wgt_max_pool(const wgt_tensor *x, int spatial, const wgt_pool_params *p, wgt_tensor **out,
                        wgt_tensor **indices)
{
    wgt_status st = need_params(x, "max_pool", p);
    return st ? st : max_pool_run("max_pool", WGT_CPU_POOL_MAX, x, spatial, p, NULL, out, indices);
}

wgt_status wgt_avg_pool(const wgt_tensor *x, int spatial, const wgt_pool_params *p, wgt_tensor **out)
{
    wgt_status st = need_params(x, "avg_pool", p);
    if (st) return st;
    return avg_pool_record(pool_run("avg_pool", WGT_CPU_POOL_AVG, x, spatial, p, NULL, out, NULL), x, spatial, p,
                           NULL, out);
}

wgt_status wgt_adaptive_avg_pool(const wgt_tensor *x, int spatial, const int64_t *output_size, wgt_tensor **out)
{
    wgt_status st = need_params(x, "adaptive_avg_pool", output_size);
    if (st) return st;
    return avg_pool_record(pool_run("adaptive_avg_pool", WGT_CPU_POOL_ADAPTIVE_AVG, x, spatial, NULL, output_size, out,
                                    NULL),
                           x, spatial, NULL, output_size, out);
}

wgt_status wgt_adaptive_max_pool(const wgt_tensor *x, int spatial, const int64_t *output_size, wgt_tensor **out,
                                 wgt_tensor **indices)
{
    wgt_status st = need_params(x, "adaptive_max_pool", output_size);
    return st ? st
              : max_pool_run("adaptive_max_pool", WGT_CPU_POOL_ADAPTIVE_MAX, x, spatial, NULL, output_size, out,
                             indices);
}
