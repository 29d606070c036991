/* Layer norm's and RMS norm's backward in one row kernel (src/kernels/norm_grad.wgsl), for
 * src/autograd/grad_norm.c (WGT_NORM_GRAD=fused, the default): the input's gradient and g xhat (the
 * weight's gradient before its sum over rows) from x, g and the weight, the statistics recomputed.
 * Not recorded; f32 contiguous rows on a GPU context only (op_norm_rows_ok); the caller composes
 * elementwise and reduce ops otherwise. */
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "ops/ops.h"

typedef struct norm_rows_params {
    uint32_t n_rows, R, centred, has_w, has_gw;
    float eps;
    uint32_t off_x, off_g, off_dx, off_gw, off_w, pad0;
} norm_rows_params;

static char *norm_rows_prelude(void *arg)
{
    char *pre = malloc(64);
    if (pre) snprintf(pre, 64, "const WG: u32 = %uu;\n", *(const uint32_t *)arg);
    return pre;
}

/* WGT_NORM_GRAD: "fused" runs the row kernel (unset: NORM_GRAD_DEFAULT), "composed" the elementwise
 * and reduce ops. On the H200 GPT-2 small's training step went 266 -> 255-258 ms with fused alone
 * (bench/results/h200/train_tiles_ab.txt). */
#define NORM_GRAD_DEFAULT "fused"
int op_norm_rows_on(void)
{
    const char *v = getenv("WGT_NORM_GRAD");
    if (!v || !*v) v = NORM_GRAD_DEFAULT;
    return !strcmp(v, "fused");
}

static int rows_f32(const wgt_tensor *t)
{
    return t && t->l.dtype == WGT_F32 && wgt_layout_is_contiguous(&t->l) && (uint64_t)wgt_layout_numel(&t->l) <= UINT32_MAX;
}

int op_norm_rows_ok(const wgt_tensor *x, const wgt_tensor *g, const wgt_tensor *w, int64_t R)
{
    if (!rows_f32(x) || !rows_f32(g) || (w && !rows_f32(w)) || R < 1 || R > UINT32_MAX) return 0;
    if (wgt_gpu_runs_reference(x->st->ctx) || g->st->ctx != x->st->ctx || (w && w->st->ctx != x->st->ctx)) return 0;
    int64_t n = wgt_layout_numel(&x->l);
    return n % R == 0 && wgt_layout_numel(&g->l) == n && (!w || wgt_layout_numel(&w->l) == R);
}

wgt_status op_norm_backward_rows(const wgt_tensor *x, const wgt_tensor *g, const wgt_tensor *w, int64_t R, double eps,
                                 int rms, wgt_tensor **dx, wgt_tensor **gw)
{
    if (!dx) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "norm backward: NULL argument");
    *dx = NULL;
    if (gw) *gw = NULL;
    if (!op_norm_rows_ok(x, g, w, R)) return wgt_error(WGT_ERR_INTERNAL, "norm backward: not a case op_norm_rows_ok takes");
    wgt_context *ctx = x->st->ctx;
    int64_t rows = wgt_layout_numel(&x->l) / R, one = 1;
    wgt_tensor *y = NULL, *yw = NULL;
    wgt_status st = wgt_tensor_new(ctx, WGT_F32, x->l.ndim, x->l.shape, &y);
    /* without gw a one-element placeholder (two writable bindings of one buffer are invalid) */
    if (!st) st = gw ? wgt_tensor_new(ctx, WGT_F32, x->l.ndim, x->l.shape, &yw) : wgt_tensor_new(ctx, WGT_F32, 1, &one, &yw);
    uint32_t wg = op_workgroup_size(ctx) >= 128 ? 128 : op_workgroup_size(ctx);
    wgt_kernel *k = NULL;
    if (!st) st = wgt_gpu_kernel_keyed(ctx, "norm_grad", &wg, sizeof wg, norm_rows_prelude, &wg, "main", NULL, 0, &k);
    norm_rows_params p;
    memset(&p, 0, sizeof p);
    p.R = (uint32_t)R, p.centred = !rms, p.has_w = w != NULL, p.has_gw = gw != NULL, p.eps = (float)eps;
    wgt_binding b[5];
    int64_t base;
    if (!st && w && !(st = op_bind_all(w, &b[2], &base))) p.off_w = (uint32_t)(w->l.offset - base);
    if (!st && !gw && !(st = op_bind_all(yw, &b[4], &base))) p.off_gw = (uint32_t)(yw->l.offset - base);
    /* rows in pieces whose ranges of x, g and the outputs each fit a binding */
    int64_t shape[2] = {rows, R};
    wgt_layout l;
    wgt_layout_contiguous(&l, WGT_F32, 2, shape);
    const wgt_layout *ls[4] = {&l, &l, &l, &l};
    int64_t per = st || !rows ? 1 : op_rows_per_chunk(ctx, ls, gw ? 4 : 3);
    if (!st && per == 0) st = op_fail(ctx, WGT_ERR_LIMIT, "norm backward: one row is larger than a storage binding");
    for (int64_t r0 = 0; !st && r0 < rows; r0 += per) {
        int64_t r1 = r0 + per < rows ? r0 + per : rows;
        const wgt_tensor *ts[4] = {x, g, y, yw};
        int slot[4] = {0, 1, 3, 4};
        uint32_t *offs[4] = {&p.off_x, &p.off_g, &p.off_dx, &p.off_gw};
        for (int i = 0; !st && i < (gw ? 4 : 3); i++) {
            int64_t lo = ts[i]->l.offset + r0 * R, hi = ts[i]->l.offset + r1 * R - 1;
            if (!(st = op_bind(ts[i], lo, hi, &b[slot[i]], &base))) *offs[i] = (uint32_t)(lo - base);
        }
        if (st) break;
        if (!w) b[2] = b[0];
        p.n_rows = (uint32_t)(r1 - r0);
        uint32_t gx, gy;
        op_grid(ctx, (uint64_t)(r1 - r0), &gx, &gy);
        st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 5, gx, gy, 1);
    }
    if (st) {
        wgt_tensor_free(y);
        wgt_tensor_free(yw);
        return st;
    }
    *dx = y;
    if (gw) *gw = yw;
    else wgt_tensor_free(yw);
    return WGT_OK;
}
