/* An activation's gradient g f'(x) in one kernel (src/kernels/elementwise_grad.wgsl), for
 * src/autograd/grad_elementwise.c (WGT_ACT_GRAD=fused, the default): gelu_tanh and silu, whose composed
 * derivatives take a dozen elementwise passes over x. Not recorded; f32 contiguous x and g of one
 * shape on a GPU context only (op_act_grad_ok); the caller composes otherwise. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "ops/ops.h"

typedef struct act_grad_params {
    uint32_t n, op, off_x, off_g, off_o;
    float a, k, a3, k2;
    uint32_t pad0, pad1, pad2;
} act_grad_params;

static char *act_grad_prelude(void *arg)
{
    char *pre = malloc(64);
    if (pre) snprintf(pre, 64, "const WG: u32 = %uu;\n", *(const uint32_t *)arg);
    return pre;
}

/* WGT_ACT_GRAD: "fused" runs the kernel (unset: ACT_GRAD_DEFAULT), "composed" the elementwise ops.
 * On the H200 GPT-2 small's training step went 266 -> 258-261 ms with fused alone
 * (bench/results/h200/train_tiles_ab.txt). */
#define ACT_GRAD_DEFAULT "fused"
static int act_grad_on(void)
{
    const char *v = getenv("WGT_ACT_GRAD");
    if (!v || !*v) v = ACT_GRAD_DEFAULT;
    return !strcmp(v, "fused");
}

int op_act_grad_ok(wgt_unary_op op, const wgt_tensor *x, const wgt_tensor *g)
{
    if ((op != WGT_UNARY_GELU_TANH && op != WGT_UNARY_SILU) || !act_grad_on() || !x || !g) return 0;
    if (x->l.dtype != WGT_F32 || g->l.dtype != WGT_F32 || !wgt_layout_is_contiguous(&x->l) ||
        !wgt_layout_is_contiguous(&g->l) || x->l.ndim != g->l.ndim || x->st->ctx != g->st->ctx ||
        wgt_gpu_runs_reference(x->st->ctx))
        return 0;
    for (int d = 0; d < x->l.ndim; d++)
        if (x->l.shape[d] != g->l.shape[d]) return 0;
    return (uint64_t)wgt_layout_numel(&x->l) <= UINT32_MAX;
}

wgt_status op_act_grad(wgt_unary_op op, const wgt_tensor *x, const wgt_tensor *g, wgt_tensor **out)
{
    if (!out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "activation backward: NULL argument");
    *out = NULL;
    if (!op_act_grad_ok(op, x, g)) return wgt_error(WGT_ERR_INTERNAL, "activation backward: not a case op_act_grad_ok takes");
    wgt_context *ctx = x->st->ctx;
    int64_t n = wgt_layout_numel(&x->l);
    wgt_tensor *y = NULL;
    wgt_status st = wgt_tensor_new(ctx, WGT_F32, x->l.ndim, x->l.shape, &y);
    uint32_t wg = op_workgroup_size(ctx);
    wgt_kernel *k = NULL;
    if (!st) st = wgt_gpu_kernel_keyed(ctx, "elementwise_grad", &wg, sizeof wg, act_grad_prelude, &wg, "main", NULL, 0, &k);
    /* the composed form's scalars, each an f32 */
    const double pi = 3.14159265358979323846, kk = sqrt(2 / pi), a = 0.044715;
    act_grad_params p;
    memset(&p, 0, sizeof p);
    p.op = op == WGT_UNARY_SILU;
    p.a = (float)a, p.k = (float)kk, p.a3 = (float)(3 * a), p.k2 = (float)(0.5 * kk);
    /* in ranges that each fit a binding */
    int64_t shape[2] = {n, 1};
    wgt_layout l;
    wgt_layout_contiguous(&l, WGT_F32, 2, shape);
    const wgt_layout *ls[3] = {&l, &l, &l};
    int64_t per = st || !n ? 1 : op_rows_per_chunk(ctx, ls, 3);
    if (!st && per == 0) st = op_fail(ctx, WGT_ERR_LIMIT, "activation backward: no element fits a storage binding");
    for (int64_t e0 = 0; !st && e0 < n; e0 += per) {
        int64_t e1 = e0 + per < n ? e0 + per : n, base;
        wgt_binding b[3];
        const wgt_tensor *ts[3] = {x, g, y};
        uint32_t *offs[3] = {&p.off_x, &p.off_g, &p.off_o};
        for (int i = 0; !st && i < 3; i++) {
            int64_t lo = ts[i]->l.offset + e0, hi = ts[i]->l.offset + e1 - 1;
            if (!(st = op_bind(ts[i], lo, hi, &b[i], &base))) *offs[i] = (uint32_t)(lo - base);
        }
        if (st) break;
        p.n = (uint32_t)(e1 - e0);
        uint32_t gx, gy;
        op_grid(ctx, ((uint64_t)(e1 - e0) + wg - 1) / wg, &gx, &gy);
        st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 3, gx, gy, 1);
    }
    if (st) {
        wgt_tensor_free(y);
        return st;
    }
    *out = y;
    return WGT_OK;
}
