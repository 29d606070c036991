/* In-place assignment into a view: dst[...] = src, for KV caches and slice writes. The only op
 * that writes into existing storage. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "ops/ops.h"
#include "tensor/record.h"

typedef struct assign_params {
    uint32_t n, off_dst, off_src, pad;
    op_layout_params ldst, lsrc;
} assign_params;

/* The layout in 32-bit words of a 16-bit layout whose innermost dim is contiguous, even-sized and
 * starts on a word: 0 if it is not such a layout. */
static int to_words(const wgt_layout *l, wgt_layout *w)
{
    *w = *l;
    if (wgt_dtype_size(l->dtype) == 4) return 1;
    if (wgt_dtype_size(l->dtype) != 2 || l->ndim == 0) return 0;
    int last = l->ndim - 1;
    if (l->strides[last] != 1 || l->shape[last] % 2 || l->offset % 2) return 0;
    for (int d = 0; d < last; d++)
        if (l->strides[d] % 2) return 0;
    w->shape[last] /= 2;
    w->offset /= 2;
    for (int d = 0; d < last; d++) w->strides[d] /= 2;
    w->dtype = WGT_U32;
    return 1;
}

/* The prelude depends on the workgroup size alone: built once per context, not on every call (a
 * decode token writes each layer's K and V cache rows through here). */
static char *assign_prelude(void *arg)
{
    const uint32_t *wg = arg;
    const char *lib = op_wgsl_lib();
    size_t cap = strlen(lib ? lib : "") + 128;
    char *pre = lib ? malloc(cap) : NULL;
    if (pre) snprintf(pre, cap, "%s\nconst WG: u32 = %uu;\n", lib, *wg);
    return pre;
}

static wgt_status assign_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    return wgt_cpu_cast(&in[0], &out[0]);
}

/* A write autograd cannot record: refused while grad mode is on and either side is tracked. The
 * storage's version is bumped by every write (op_assign), so a tensor saved for backward and
 * overwritten afterwards (under no-grad, or through another view) fails backward instead of
 * giving a wrong gradient. */
wgt_status wgt_tensor_assign(wgt_tensor *dst, const wgt_tensor *src)
{
    if (!dst || !src) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "assign: NULL tensor");
    if (op_grad_mode() && (op_tracked(dst) || op_tracked(src)))
        return op_fail(dst->st->ctx, WGT_ERR_UNSUPPORTED,
                       "assign: the %s requires grad, and an in-place write is not recorded by autograd (its "
                       "gradient would be lost or wrong): build the result out of place (wgt_index_put, "
                       "wgt_scatter, wgt_tensor_cat, wgt_where), or write under wgt_grad_mode_set(0) into a "
                       "tensor that does not require grad",
                       op_tracked(src) ? "source" : "destination");
    return op_assign(dst, src);
}

wgt_status op_assign(wgt_tensor *dst, const wgt_tensor *src)
{
    if (!dst || !src) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "assign: NULL tensor");
    wgt_context *ctx = dst->st->ctx;
    wgt_status st = wgt_ctx_check(ctx);
    if (st) return st;
    const wgt_tensor *both[2] = {dst, src};
    if ((st = op_same_context("assign", both, 2))) return st;
    if (dst->l.ndim != src->l.ndim || memcmp(dst->l.shape, src->l.shape, sizeof(int64_t) * dst->l.ndim))
        return op_fail(ctx, WGT_ERR_SHAPE, "assign: the source's shape differs from the destination view's");
    if (wgt_layout_numel(&dst->l) == 0) return WGT_OK;
    wgt_layout wd, ws;
    int gpu_ok = dst->l.dtype == src->l.dtype && to_words(&dst->l, &wd) && to_words(&src->l, &ws);
    if (op_use_gpu(ctx, "assign", dst->l.dtype, gpu_ok)) {
        wgt_kernel *k;
        uint32_t wg = op_workgroup_size(ctx);
        if ((st = wgt_gpu_kernel_keyed(ctx, "assign", &wg, sizeof wg, assign_prelude, &wg, "main", NULL, 0, &k)))
            return st;
        int64_t n = wgt_layout_numel(&wd);
        assign_params p;
        memset(&p, 0, sizeof p);
        p.n = (uint32_t)n;
        wgt_binding b[2];
        int64_t lo, hi, base;
        wgt_tensor ts = *src, td = *dst;
        ts.l = ws, td.l = wd;
        op_extent(&ws, &lo, &hi);
        if ((st = op_bind(&ts, lo, hi, &b[0], &base))) return st;
        p.off_src = (uint32_t)(ws.offset - base);
        /* the destination binds whole: writing a cache row or a history slot at a new position
         * every token reuses one bind group */
        if ((st = op_bind_storage(&td, &b[1], &base))) return st;
        p.off_dst = (uint32_t)(wd.offset - base);
        wd.offset = ws.offset = 0;
        if ((st = op_layout_params_fill(ctx, &wd, &p.ldst)) || (st = op_layout_params_fill(ctx, &ws, &p.lsrc)))
            return st;
        uint32_t gx, gy;
        op_grid(ctx, ((uint64_t)n + op_workgroup_size(ctx) - 1) / op_workgroup_size(ctx), &gx, &gy);
        /* the destination's position may be a graph scalar (a history slot at the step's index) */
        if (wgt_dtype_size(dst->l.dtype) == 4) /* words are elements: off_dst = offset - base */
            wgt_gpu_param_scalar(ctx, offsetof(assign_params, off_dst), WGT_PARAM_U32, WGT_GRAPH_OFFSET, dst->l.offset, 1, -base);
        if (!(st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 2, gx, gy, 1))) dst->st->version++;
        return st;
    }
    if ((st = op_fallback_status(ctx, "assign", dst->l.dtype, gpu_ok))) return st;
    const wgt_tensor *ins[1] = {src};
    if (!(st = op_reference(ctx, assign_ref, NULL, ins, 1, &dst, 1))) dst->st->version++;
    return st;
}
