/* Linear layers over a few rows (a decode step of several sequences, wgt_batch: 5 .. 64 rows of
 * float weights, 9 .. 64 of GGUF blocks; the one-token GEMVs stay faster below) through
 * src/kernels/matmul_rows.wgsl, for wgt_linear / matmul (matmul.c) and wgt_qlinear (qlinear.c):
 * each weight piece loaded once per 8 rows, where the tiled kernels ran few workgroups over a long
 * k and the GEMVs re-read the weights every 4 rows (f16) or 8 (blocks). */
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

/* The prelude's key (no padding bytes). */
typedef struct rows_key {
    uint32_t xt, wt, qt, ct; /* dtypes of x, weight (WGT_U8: blocks of format qt) and c */
    uint32_t sg, wg, mb;
} rows_key;

/* WGT_MATMUL_ROWS: 0 turns the kernel off (the GEMV / tiled kernels as before: comparisons); 16
 * takes 16 x rows per pass instead of 8 (fewer passes over the weights, twice the accumulators). */
static int rows_env(void)
{
    const char *v = getenv("WGT_MATMUL_ROWS");
    if (!v || !*v) return 1;
    if (!strcmp(v, "0")) return 0;
    return !strcmp(v, "16") ? 16 : 1;
}

int op_rows_take(wgt_context *ctx, int64_t M, int64_t min_rows)
{
    return M >= min_rows && M >= 2 && M <= OP_ROWS_MAX && rows_env() && !wgt_gpu_avoid_barriers(ctx) && op_workgroup_size(ctx) >= 64;
}

static char *rows_prelude(void *arg)
{
    const rows_key *k = arg;
    size_t declen = 0;
    const char *dec = k->wt == WGT_U8 ? op_qlinear_decoders(&declen) : NULL;
    size_t cap = 8192 + declen;
    char *pre = dec || k->wt != WGT_U8 ? malloc(cap) : NULL;
    if (!pre) return NULL;
    pre[0] = 0;
    op_wgsl_row_subgroups(pre, cap, (int)k->sg); /* lib_rowsum.wgsl's row_share / row_total */
    size_t used = strlen(pre);
    snprintf(pre + used, cap - used, "const WG: u32 = %uu;\nconst MB: u32 = %uu;\nconst VA: u32 = %du;\n", k->wg, k->mb,
             k->xt == WGT_F32 ? 2 : 1);
    op_wgsl_vec8_loader(pre, cap, "ldA8", "a", (wgt_dtype)k->xt);
    op_wgsl_loader(pre, cap, "ldC", "c", (wgt_dtype)k->ct, "f32");
    used = strlen(pre);
    if (k->wt == WGT_U8) {
        snprintf(pre + used, cap - used, "const FMT: u32 = %uu;\n%.*s\n", k->qt, (int)declen, dec);
    } else {
        snprintf(pre + used, cap - used, "const VB: u32 = %du;\n", k->wt == WGT_F32 ? 2 : 1);
        op_wgsl_vec8_loader(pre, cap, "ldB8", "b", (wgt_dtype)k->wt);
    }
    if (!op_wgsl_section(pre, cap, "lib_rows", k->wt == WGT_U8 ? "block weights" : "float weights")) {
        free(pre);
        return NULL;
    }
    return pre;
}

wgt_status op_rows_run(wgt_context *ctx, wgt_dtype xt, wgt_dtype wt, wgt_ftype qt, wgt_dtype ct, op_rows_params *p,
                       const wgt_binding *bind)
{
    int env = rows_env();
    rows_key key;
    memset(&key, 0, sizeof key);
    key.xt = (uint32_t)xt, key.wt = (uint32_t)wt, key.qt = wt == WGT_U8 ? (uint32_t)qt : 0, key.ct = (uint32_t)ct;
    key.sg = (uint32_t)op_row_subgroups(ctx), key.wg = op_workgroup_size(ctx);
    key.mb = env == 16 ? 16u : 8u;
    wgt_kernel *k;
    wgt_status st = wgt_gpu_kernel_keyed(ctx, "matmul_rows", &key, sizeof key, rows_prelude, &key, "main", NULL, 0, &k);
    if (st) return st;
    /* lanes per 4 weight rows: 32, doubled (fewer weight rows per workgroup) while that leaves under
     * 256 workgroups and every lane still gets a piece of the row */
    uint32_t wg = key.wg, pieces = p->K / 8, tpr = 32;
    p->nmb = (p->M + key.mb - 1) / key.mb;
    uint64_t rows_per = 4u * (wg / tpr), groups = p->nmb * ((p->N + rows_per - 1) / rows_per);
    while (groups < 256 && tpr * 2 <= wg && tpr * 2 <= pieces) {
        tpr *= 2;
        rows_per = 4u * (wg / tpr);
        groups = p->nmb * ((p->N + rows_per - 1) / rows_per);
    }
    p->tpr = tpr;
    uint32_t gx, gy;
    op_grid(ctx, groups, &gx, &gy);
    /* bytes: the bound ranges (the weights bound as they are read); FLOPs: the product's */
    wgt_gpu_cost(ctx, 0, 2.0 * p->M * (double)p->N * p->K);
    return wgt_gpu_dispatch(ctx, k, p, sizeof *p, bind, 4, gx, gy, 1);
}
