/* The row passes of sdpa's backward in one kernel each (src/kernels/attention_grad.wgsl), for
 * src/autograd/grad_attention.c (WGT_SDPA_GRAD=fused, the default) and sdpa's products path: the probabilities recomputed from the
 * scores (scale, causal window, softmax) and the scores' gradient from them (softmax's backward
 * and the scale). Not recorded; f32 contiguous [rows, C] in and out, on a GPU context only
 * (op_sdpa_rows_ok); the caller composes elementwise ops otherwise. */
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "ops/ops.h"

typedef struct sdpa_rows_params {
    uint32_t n_rows, C, lq, causal;
    int32_t off;
    uint32_t window;
    float scale;
    uint32_t zero, row0, off_a, off_b, off_o;
} sdpa_rows_params;

static char *sdpa_rows_prelude(void *arg)
{
    char *pre = malloc(64);
    if (pre) snprintf(pre, 64, "const WG: u32 = %uu;\n", *(const uint32_t *)arg);
    return pre;
}

/* WGT_SDPA_GRAD: "fused" runs the row kernels (unset: SDPA_GRAD_DEFAULT), "composed" the elementwise,
 * reduce and softmax ops. On the H200 GPT-2 small's training step went 266 -> 247 ms with fused
 * alone (bench/results/h200/train_tiles_ab.txt). */
#define SDPA_GRAD_DEFAULT "fused"
int op_sdpa_rows_on(void)
{
    const char *v = getenv("WGT_SDPA_GRAD");
    if (!v || !*v) v = SDPA_GRAD_DEFAULT;
    return !strcmp(v, "fused");
}

int op_sdpa_rows_ok(const wgt_tensor *t)
{
    return t && t->l.ndim >= 1 && t->l.dtype == WGT_F32 && wgt_layout_is_contiguous(&t->l) &&
           !wgt_gpu_runs_reference(t->st->ctx) && (uint64_t)wgt_layout_numel(&t->l) <= UINT32_MAX &&
           t->l.shape[t->l.ndim - 1] > 0;
}

/* out = entry's rows of a (and b, dscores) with p's row-independent fields set. */
static wgt_status rows_run(const char *entry, const wgt_tensor *a, const wgt_tensor *b, sdpa_rows_params *p,
                           wgt_tensor **out)
{
    *out = NULL;
    wgt_context *ctx = a->st->ctx;
    int nd = a->l.ndim;
    int64_t C = a->l.shape[nd - 1], rows = wgt_layout_numel(&a->l) / C;
    wgt_tensor *y = NULL;
    wgt_status st = wgt_tensor_new(ctx, WGT_F32, nd, a->l.shape, &y);
    if (st) return st;
    uint32_t wg = op_workgroup_size(ctx) >= 128 ? 128 : op_workgroup_size(ctx);
    wgt_kernel *k;
    if ((st = wgt_gpu_kernel_keyed(ctx, "attention_grad", &wg, sizeof wg, sdpa_rows_prelude, &wg, entry, NULL, 0, &k))) {
        wgt_tensor_free(y);
        return st;
    }
    /* rows in pieces whose ranges of a, b and y each fit a binding */
    int64_t shape[2] = {rows, C};
    wgt_layout l;
    wgt_layout_contiguous(&l, WGT_F32, 2, shape);
    const wgt_layout *ls[3] = {&l, &l, &l};
    int64_t per = rows ? op_rows_per_chunk(ctx, ls, 3) : 1;
    if (per == 0) st = op_fail(ctx, WGT_ERR_LIMIT, "sdpa backward: one row of scores is larger than a storage binding");
    p->C = (uint32_t)C;
    for (int64_t r0 = 0; !st && r0 < rows; r0 += per) {
        int64_t r1 = r0 + per < rows ? r0 + per : rows;
        wgt_binding bind[3];
        int64_t base;
        const wgt_tensor *ts[3] = {a, b ? b : a, y};
        uint32_t *offs[3] = {&p->off_a, &p->off_b, &p->off_o};
        for (int i = 0; !st && i < 3; i++) {
            int64_t lo = ts[i]->l.offset + r0 * C, hi = ts[i]->l.offset + r1 * C - 1;
            if (!(st = op_bind(ts[i], lo, hi, &bind[i], &base))) *offs[i] = (uint32_t)(lo - base);
        }
        if (st) break;
        p->n_rows = (uint32_t)(r1 - r0), p->row0 = (uint32_t)r0;
        uint32_t gx, gy;
        op_grid(ctx, (uint64_t)(r1 - r0), &gx, &gy);
        st = wgt_gpu_dispatch(ctx, k, p, sizeof *p, bind, 3, gx, gy, 1);
    }
    if (st) {
        wgt_tensor_free(y);
        return st;
    }
    *out = y;
    return WGT_OK;
}

wgt_status op_sdpa_probs(const wgt_tensor *s, double scale, int causal, int64_t lq, int64_t off, int64_t window,
                         wgt_tensor **out)
{
    if (!out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "sdpa backward: NULL argument");
    *out = NULL;
    if (!op_sdpa_rows_ok(s) || lq < 1 || lq > UINT32_MAX || off < INT32_MIN / 2 || off > INT32_MAX / 2 ||
        window < 0 || window > INT32_MAX / 2 || s->l.shape[s->l.ndim - 1] > INT32_MAX / 2)
        return wgt_error(WGT_ERR_INTERNAL, "sdpa backward: not a case op_sdpa_rows_ok takes");
    sdpa_rows_params p;
    memset(&p, 0, sizeof p);
    p.lq = (uint32_t)lq, p.causal = causal != 0, p.off = (int32_t)off, p.window = (uint32_t)window;
    p.scale = (float)scale;
    return rows_run("probs", s, NULL, &p, out);
}

wgt_status op_sdpa_dscores(const wgt_tensor *pr, const wgt_tensor *dp, double scale, wgt_tensor **out)
{
    if (!out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "sdpa backward: NULL argument");
    *out = NULL;
    if (!op_sdpa_rows_ok(pr) || !op_sdpa_rows_ok(dp) || pr->st->ctx != dp->st->ctx || pr->l.ndim != dp->l.ndim ||
        memcmp(pr->l.shape, dp->l.shape, sizeof pr->l.shape[0] * (size_t)pr->l.ndim))
        return wgt_error(WGT_ERR_INTERNAL, "sdpa backward: not a case op_sdpa_rows_ok takes");
    sdpa_rows_params p;
    memset(&p, 0, sizeof p);
    p.lq = 1, p.scale = (float)scale;
    return rows_run("dscores", pr, dp, &p, out);
}
