/* Gradient clipping by global norm (torch.nn.utils.clip_grad_norm_, norm_type 2) and the
 * learning-rate schedules of transformers. The norm is computed on the device with the library's
 * reductions and applied by autograd_optim_clip.wgsl reading it there: nothing waits for the device. */
#include <math.h>
#include <stdlib.h>

#include "autograd/optim_internal.h"
#include "core/error.h"
#include "ops/ops.h"

enum { STACK_MAX = 16 }; /* wgt_stack takes 64 tensors at once, its reference path (a CPU context) 16 */

typedef struct clip_uniform {
    uint32_t n, off_g, off_t;
    float max_norm;
} clip_uniform;

static wgt_status scale_gpu(wgt_tensor *g, const wgt_tensor *total, float max_norm)
{
    wgt_context *ctx = g->st->ctx;
    uint32_t wg = op_workgroup_size(ctx);
    int dt = g->l.dtype == WGT_F16 ? 1 : g->l.dtype == WGT_BF16 ? 2 : 0;
    char prelude[96];
    snprintf(prelude, sizeof prelude, "const WG: u32 = %uu;\nconst G_DT: u32 = %du;\n", wg, dt);
    wgt_kernel *k;
    wgt_status st = wgt_gpu_kernel(ctx, "autograd_optim_clip", prelude, "main", NULL, 0, &k);
    int64_t n = wgt_layout_numel(&g->l);
    /* one binding's worth of elements a dispatch, even so that half words stay whole */
    uint64_t maxb = wgt_gpu_limits(ctx)->max_storage_buffer_binding_size;
    int64_t chunk = (int64_t)(((maxb > 1024 ? maxb : 1024) - 512) / 4) & ~(int64_t)1;
    for (int64_t c0 = 0; c0 < n && !st; c0 += chunk) {
        int64_t cn = n - c0 < chunk ? n - c0 : chunk, g0 = g->l.offset + c0, bg, bt;
        wgt_binding b[2];
        if ((st = op_bind(g, g0, g0 + cn - 1, &b[0], &bg)) || (st = op_bind_all(total, &b[1], &bt))) break;
        clip_uniform u = {(uint32_t)cn, (uint32_t)(g0 - bg), (uint32_t)(total->l.offset - bt), max_norm};
        uint64_t units = dt ? (uint64_t)((g0 - bg + cn - 1) / 2 - (g0 - bg) / 2 + 1) : (uint64_t)cn;
        uint32_t gx, gy;
        op_grid(ctx, (units + wg - 1) / wg, &gx, &gy);
        st = wgt_gpu_dispatch(ctx, k, &u, sizeof u, b, 2, gx, gy, 1);
    }
    return st;
}

/* The reference of the same scale, for a CPU context. */
static wgt_status scale_cpu(wgt_tensor *g, const wgt_tensor *total, float max_norm)
{
    float t = 0.0f;
    wgt_status st = wgt_tensor_to_host(total, &t, sizeof t);
    wgt_host_view v = {0};
    if (!st) st = wgt_host_view_get(g, &v);
    if (!st) {
        float c = (1.0f / (t + 1e-6f)) * max_norm;
        if (!isnan(c) && c > 1.0f) c = 1.0f;
        int64_t n = wgt_layout_numel(&g->l);
        for (int64_t e = 0; e < n; e++) {
            int64_t at = wgt_layout_index(&v.t.l, e);
            wgt_cpu_store_f(&v.t, at, (double)((float)wgt_cpu_load_f(&v.t, at) * c));
        }
        st = wgt_host_view_put(g, &v);
    }
    wgt_host_view_free(&v);
    return st;
}

wgt_status wgt_clip_grad_norm(wgt_tensor *const *grads, int n, double max_norm, wgt_tensor **total_norm)
{
    if (total_norm) *total_norm = NULL;
    if (n < 0 || (n > 0 && !grads))
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "clip_grad_norm: NULL gradient list or negative count %d", n);
    if (isnan(max_norm))
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "clip_grad_norm: max_norm is NaN; give the largest norm to allow");
    wgt_context *ctx = NULL;
    for (int i = 0; i < n; i++) {
        const wgt_tensor *g = grads[i];
        if (!g) continue;
        if (!ctx) ctx = g->st->ctx;
        if (g->st->ctx != ctx)
            return wgt_error(WGT_ERR_INVALID_ARGUMENT, "clip_grad_norm: gradient %d lives on another context", i);
        if (!op_is_float(g->l.dtype))
            return wgt_ctx_error(ctx, WGT_ERR_DTYPE, "clip_grad_norm: gradient %d is %s, not f32, f16 or bf16", i,
                                 wgt_dtype_name(g->l.dtype));
        if (!wgt_layout_is_contiguous(&g->l))
            return wgt_ctx_error(ctx, WGT_ERR_SHAPE, "clip_grad_norm: gradient %d is a strided view; it is scaled in "
                                 "place, so pass a contiguous tensor", i);
    }
    if (!ctx) return WGT_OK; /* no gradient at all: nothing to clip, no total (torch returns 0) */
    wgt_status st = wgt_ctx_check(ctx);
    if (st) return st;
    /* torch: the 2-norm of each gradient, then the 2-norm of those norms */
    wgt_tensor **norms = calloc((size_t)n, sizeof *norms), *stacked = NULL, *total = NULL;
    if (!norms) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "clip_grad_norm: %d gradients", n);
    int m = 0;
    for (int i = 0; i < n && !st; i++) {
        if (!grads[i] || !wgt_layout_numel(&grads[i]->l)) continue;
        wgt_tensor *x = NULL;
        if (grads[i]->l.dtype != WGT_F32) st = wgt_tensor_cast(grads[i], WGT_F32, &x);
        if (!st) st = wgt_reduce(WGT_REDUCE_NORM2, x ? x : grads[i], 0, 0, 0.0, &norms[m]);
        if (!st) m++;
        wgt_tensor_free(x);
    }
    /* more norms than STACK_MAX: the norms of groups, then the norms of those (the same 2-norm,
     * rounded in another order than torch's one stack) */
    while (!st && m > 1) {
        int groups = (m + STACK_MAX - 1) / STACK_MAX;
        for (int gi = 0; gi < groups && !st; gi++) {
            int first = gi * STACK_MAX, count = m - first < STACK_MAX ? m - first : STACK_MAX;
            wgt_tensor *norm = NULL;
            st = wgt_stack((const wgt_tensor *const *)norms + first, count, 0, &stacked);
            if (!st) st = wgt_reduce(WGT_REDUCE_NORM2, stacked, 0, 0, 0.0, &norm);
            wgt_tensor_free(stacked);
            stacked = NULL;
            for (int i = first; i < first + count; i++) wgt_tensor_free(norms[i]), norms[i] = NULL;
            norms[gi] = norm;
        }
        m = groups;
    }
    if (!st && m) total = norms[0], norms[0] = NULL;
    if (!st && !m) st = wgt_tensor_zeros(ctx, WGT_F32, 0, NULL, &total);
    for (int i = 0; i < n && !st; i++) {
        if (!grads[i] || !wgt_layout_numel(&grads[i]->l)) continue;
        st = wgt_gpu_runs_reference(ctx) ? scale_cpu(grads[i], total, (float)max_norm)
                                 : scale_gpu(grads[i], total, (float)max_norm);
    }
    for (int i = 0; i < n; i++) wgt_tensor_free(norms[i]);
    free(norms);
    wgt_tensor_free(stacked);
    if (!st && total_norm) *total_norm = total;
    else wgt_tensor_free(total);
    return st;
}

double wgt_lr_at(wgt_lr_schedule schedule, double lr, int64_t warmup, int64_t total, int64_t step)
{
    /* the factor first, then base_lr * factor: LambdaLR's order, so the value is the same double */
    if (step < 0) step = 0;
    if (warmup < 0) warmup = 0;
    double f = 1.0, span = (double)(total - warmup > 1 ? total - warmup : 1);
    if (step < warmup) f = (double)step / (double)(warmup > 1 ? warmup : 1);
    else if (schedule == WGT_LR_LINEAR) f = fmax(0.0, (double)(total - step) / span);
    else if (schedule == WGT_LR_COSINE) {
        const double pi = 3.14159265358979323846, num_cycles = 0.5;
        double progress = (double)(step - warmup) / span;
        f = fmax(0.0, 0.5 * (1.0 + cos(pi * num_cycles * 2.0 * progress)));
    }
    return lr * f;
}
