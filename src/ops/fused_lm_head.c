/*
 * The output layer of one decode token and the greedy argmax after it (src/ops/fused_lm_head.h):
 * src/kernels/fused_lm_head.wgsl streams the weights once (a fixed grid of workgroups looping over row
 * blocks, x * gamma staged in workgroup memory, R rows a group of T lanes, U steps of loads issued
 * together) and writes the logits and each workgroup's best logit; src/kernels/fused_lm_head_argmax.wgsl reduces
 * those parts in one workgroup to the token id. Without a token asked for, only the first runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/fused.h"
#include "ops/fused_lm_head.h"
#include "ops/ops.h"
#include "tensor/tensor.h"

typedef struct lm_params {
    uint32_t N, K, nblk, flags, off_x, off_w, off_g, off_o;
    float eps;
    uint32_t rs, units, pad;
} lm_params;

typedef struct lm_key {
    int32_t wdt, fmt; /* fmt: the blocks' wgt_ftype (0: float weights of dtype wdt) */
    uint32_t wg, t, r, u, xv, sgx, arg, hs, rw, rh;
} lm_key;

typedef struct argmax_params {
    uint32_t n, off_o, pad0, pad1;
} argmax_params;

/* WGT_LM_HEAD=auto|0|R[:T[:G[:U]]]: the output layer's kernel (fused_lm_head.wgsl): R rows (1, 2, 4 or
 * 8) a group of T lanes (a power of two up to the workgroup size; 0: the adapter's fixed subgroup
 * size, 32 where it is not fixed), at most G workgroups (0: one row block for every lane group, no
 * loop; else the fewest that keep the steps G would take), U units of loads issued together (1, 2
 * or 4). 0: the composition (fused_linear's `rows` or qlinear_fused's, and wgt_reduce's argmax).
 * auto: float weights 8:16:528:2, Q8_0 / Q4_0 blocks 4:0:528:2. Unset: auto's setting for float
 * weights, 0 for blocks. On the H200 (bench/results/h200/final-2026-12-03-1640/head2/, two rounds
 * in one call against the composition) auto won both rounds on both f16 rows (Qwen2.5-0.5B
 * 1022.6 / 1023.7 -> 1045.7 / 1040.6 tok/s, Llama-3.2-1B 908.4 / 909.6 -> 916.0 / 916.1) and lost on
 * the block rows (Qwen Q4_0 1038.1 / 1041.8 -> 1021.8, Llama Q4_0 962.2 -> 952.7). An earlier call
 * (auto then 8:32:528:2) had tied on Qwen f16 and lost 0.2% on Llama f16.
 * H200 (bench/results/h200/head-2026-12-03/, bench_lm_head, f16, logits alone / with the greedy
 * token, us a call): Qwen2.5-0.5B's 151936 x 896 main 84.9 / 101.7 (fused_linear R 8 + reduce),
 * 8:16:528:2 71.6 / 86.1 (91.5% of 4.16 TB/s for the logits), 8:32:528:2 82.3 / 93.6, 8:32:528:1
 * 75.7 / 87.4, 8:32:132:2 128.1; Llama-3.2-1B's 128256 x 2048 main 136.3 / 150.5, 8:16:528:2
 * 129.7 / 138.9, 8:64:0:2 127.7 / 157.4, 2:32:528:4 129.5 / 136.2. */
#define LM_AUTO_FLOAT "8:16:528:2"
#define LM_AUTO_BLOCKS "4:0:528:2"

typedef struct lm_choice {
    uint32_t r, t, g, u;
} lm_choice;

/* 0: not taken (the composition runs); q: block weights */
static int lm_choose(wgt_context *ctx, uint32_t wg, int q, lm_choice *c)
{
    const char *e = getenv("WGT_LM_HEAD");
    if (!e || !*e) e = q ? "0" : LM_AUTO_FLOAT;
    else if (!strcmp(e, "auto")) e = q ? LM_AUTO_BLOCKS : LM_AUTO_FLOAT;
    uint32_t sgfix = op_shuffle_subgroup(ctx);
    if (sgfix < 4 || sgfix > wg) sgfix = 0;
    unsigned r = 0, t = 0, g = 528, u = 2;
    if (!strcmp(e, "0") || sscanf(e, "%u:%u:%u:%u", &r, &t, &g, &u) < 1) return 0;
    c->r = r, c->t = t ? t : (sgfix ? sgfix : 32), c->g = g, c->u = u;
    if (c->t > wg) c->t = wg;
    return (c->r == 1 || c->r == 2 || c->r == 4 || c->r == 8) && c->t && !(c->t & (c->t - 1)) &&
           (c->u == 1 || c->u == 2 || c->u == 4);
}

static char *lm_prelude(void *arg)
{
    const lm_key *k = arg;
    size_t cap = 32768;
    char *pre = malloc(cap);
    if (!pre) return NULL;
    snprintf(pre, cap,
             "%sconst WG: u32 = %uu;\nconst T: u32 = %uu;\nconst R: u32 = %uu;\nconst U: u32 = %uu;\n"
             "const XV: u32 = %uu;\nconst SGX: u32 = %uu;\nconst ARG: u32 = %uu;\nconst RW: u32 = %uu;\n"
             "const RH: u32 = %uu;\n",
             k->sgx || k->hs ? "enable subgroups;\n" : "", k->wg, k->t, k->r, k->u, k->xv, k->sgx, k->arg, k->rw, k->rh);
    int ok = op_wgsl_section(pre, cap, "lib_lm_head", "best") &&
             op_wgsl_section(pre, cap, "lib_lm_head", k->hs ? "group sums" : "no group sums") &&
             op_wgsl_section(pre, cap, "lib_lm_head", k->sgx ? "subgroup rows" : "no subgroup rows") &&
             op_wgsl_section(pre, cap, "lib_lm_head", k->u == 4 ? "steps 4" : k->u == 2 ? "steps 2" : "steps 1");
    if (k->fmt) {
        size_t used = strlen(pre);
        snprintf(pre + used, cap - used, "const FMT: u32 = %du;\n", k->fmt);
        ok = ok && op_wgsl_section(pre, cap, "qlinear", "decoders") && op_wgsl_section(pre, cap, "qlinear_fused", "block words") &&
             op_wgsl_section(pre, cap, "lib_lm_head", "block weights");
    } else {
        size_t used = strlen(pre);
        snprintf(pre + used, cap - used, "const VW: u32 = %uu;\n", k->wdt == WGT_F32 ? 2u : 1u);
        op_wgsl_vec8_loader(pre, cap, "ldW8", "w", (wgt_dtype)k->wdt);
        ok = ok && op_wgsl_section(pre, cap, "lib_lm_head", "float weights");
    }
    if (!ok) {
        free(pre);
        return NULL;
    }
    return pre;
}

static char *argmax_prelude(void *arg)
{
    size_t cap = 4096;
    char *pre = malloc(cap);
    if (!pre) return NULL;
    snprintf(pre, cap, "const WG: u32 = %uu;\n", *(const uint32_t *)arg);
    if (!op_wgsl_section(pre, cap, "lib_lm_head", "best")) {
        free(pre);
        return NULL;
    }
    return pre;
}

/* f32 (or, for w, any float dtype), contiguous, starting at a multiple of align elements, fitting a binding */
static int lm_operand(wgt_context *ctx, const wgt_tensor *t, int any_float, int64_t align)
{
    const wgt_layout *l = &t->l;
    if (!(any_float ? op_is_float(l->dtype) : l->dtype == WGT_F32) || !wgt_layout_is_contiguous(l)) return 0;
    return l->offset % align == 0 &&
           (uint64_t)wgt_layout_numel(l) * wgt_dtype_size(l->dtype) + 256 <= wgt_gpu_limits(ctx)->max_storage_buffer_binding_size;
}

/* The composition: the fused product, then wgt_reduce's argmax as a [1] tensor. */
static wgt_status lm_head_composed(const wgt_tensor *x, const wgt_tensor *gamma, double eps, const wgt_tensor *w,
                                   wgt_ftype type, wgt_tensor **logits, wgt_tensor **token)
{
    wgt_fused_prologue pro = gamma ? WGT_PRO_RMS_NORM : WGT_PRO_NONE;
    wgt_tensor *lg = NULL, *idx = NULL;
    wgt_status st = type != WGT_FTYPE_F32 ? wgt_fused_qlinear(x, pro, gamma, eps, w, type, NULL, NULL, &lg)
                                          : wgt_fused_linear(x, pro, gamma, eps, w, NULL, NULL, &lg);
    if (!st && token) {
        int64_t one = 1;
        if (!(st = wgt_reduce(WGT_REDUCE_ARGMAX, lg, 0, 0, 0, &idx))) st = wgt_tensor_reshape(idx, 1, &one, token);
        wgt_tensor_free(idx);
    }
    if (st) {
        wgt_tensor_free(lg);
        return st;
    }
    *logits = lg;
    return WGT_OK;
}

wgt_status wgt_lm_head(const wgt_tensor *x, const wgt_tensor *gamma, double eps, const wgt_tensor *w, wgt_ftype type,
                       wgt_tensor **logits, wgt_tensor **token)
{
    OP_BEGIN(x, logits);
    if (token) *token = NULL;
    if (!w) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "lm_head: NULL weight");
    const wgt_tensor *ins[3] = {x, w, gamma ? gamma : x};
    wgt_status st = op_same_context("lm_head", ins, 3);
    if (st) return st;
    int nd = x->l.ndim;
    int64_t K = nd ? x->l.shape[nd - 1] : 0, M = K ? wgt_layout_numel(&x->l) / K : 0;
    int64_t N = w->l.ndim == 2 ? w->l.shape[0] : 0;
    int q = type == WGT_FTYPE_Q8_0 || type == WGT_FTYPE_Q4_0; /* blocks: a U8 [N, row bytes] weight */
    int64_t row_bytes = q ? K / 32 * (type == WGT_FTYPE_Q8_0 ? 34 : 18) : K * (int64_t)wgt_dtype_size(w->l.dtype);
    uint64_t wbytes = (uint64_t)N * (uint64_t)row_bytes + 8;
    const wgt_limits *lim = wgt_gpu_limits(ctx);
    uint32_t wg = op_workgroup_size(ctx);
    lm_choice c;
    int fast = (type == WGT_FTYPE_F32 || q) && !wgt_gpu_runs_reference(ctx) && !wgt_gpu_avoid_barriers(ctx) && M == 1 &&
               K > 0 && K % (q ? 32 : 8) == 0 && N > 0 && N < (int64_t)1 << 31 && w->l.ndim == 2 &&
               wbytes + 256 <= lim->max_storage_buffer_binding_size && wbytes <= UINT32_MAX && lm_operand(ctx, x, 0, 4) &&
               (q ? w->l.dtype == WGT_U8 && w->l.shape[1] == row_bytes && wgt_layout_is_contiguous(&w->l) &&
                        w->l.offset % 2 == 0
                  : w->l.shape[1] == K && lm_operand(ctx, w, 1, 16 / (int64_t)wgt_dtype_size(w->l.dtype))) &&
               (!gamma || (gamma->l.ndim == 1 && gamma->l.shape[0] == K && lm_operand(ctx, gamma, 0, 4))) &&
               lm_choose(ctx, wg, q, &c);
    lm_key key = {0};
    if (fast) {
        uint32_t sgfix = op_shuffle_subgroup(ctx);
        key.wdt = w->l.dtype, key.fmt = q ? (int32_t)type : 0;
        key.wg = wg, key.t = c.t, key.r = c.r, key.u = c.u, key.xv = (uint32_t)(K / 4 + (q ? K / 32 : 0));
        key.sgx = c.t == sgfix && op_row_subgroups(ctx);
        /* the workgroup-memory sums: subgroup sums first where whole subgroups lie in a lane group */
        key.hs = !key.sgx && op_row_subgroups(ctx) && lim->subgroup_max_size >= 1 && c.t % lim->subgroup_max_size == 0;
        key.arg = token != NULL;
        key.rw = key.sgx ? 1 : wg;
        key.rh = key.sgx || c.r <= 4 ? 1 : wg;
        /* at most 16 KiB on OpenGL (llvmpipe computed wrong results past it: src/ops/matmul.c's regs_choose) */
        const wgt_adapter_info *info = wgt_gpu_info(ctx);
        uint64_t smem = lim->max_compute_workgroup_storage_size;
        if ((info->backend == WGT_BACKEND_OPENGLES || info->backend == WGT_BACKEND_OPENGL || info->compat) && smem > 16384)
            smem = 16384;
        if ((uint64_t)key.xv * 16 + (uint64_t)(key.rw + key.rh) * 16 + (uint64_t)wg * 12 > smem) fast = 0;
    }
    if (!fast) return lm_head_composed(x, gamma, eps, w, type, logits, token);
    int64_t shape[WGT_MAX_DIMS];
    memcpy(shape, x->l.shape, sizeof(int64_t) * (size_t)nd);
    shape[nd - 1] = N;
    /* the grid: G workgroups of wg / T lane groups, each group a row block of R rows a step */
    uint64_t lgs = wg / c.t, nblk = ((uint64_t)N + c.r - 1) / c.r, need = (nblk + lgs - 1) / lgs, G = need;
    if (c.g && need > c.g) {
        uint64_t steps = (need + c.g - 1) / c.g;
        G = (need + steps - 1) / steps;
    }
    uint32_t gx, gy;
    op_grid(ctx, G, &gx, &gy);
    int64_t nparts = (int64_t)gx * gy * 2, one = 1;
    wgt_tensor *y = NULL, *parts = NULL, *tok = NULL;
    wgt_kernel *k;
    wgt_binding b[6];
    int64_t base[6];
    if ((st = wgt_tensor_new(ctx, WGT_F32, nd, shape, &y)) || (st = wgt_tensor_new(ctx, WGT_I32, 1, &nparts, &parts)) ||
        (token && (st = wgt_tensor_new(ctx, WGT_I32, 1, &one, &tok))))
        goto fail;
    if ((st = wgt_gpu_kernel_keyed(ctx, "fused_lm_head", &key, sizeof key, lm_prelude, &key, "main", NULL, 0, &k))) goto fail;
    const wgt_tensor *bt[5] = {x, w, gamma ? gamma : x, y, parts};
    for (int i = 0; i < 5 && !st; i++) {
        /* blocks: the rows plus the word after the end (a block's last word may pass it) */
        if (i == 1 && q) st = op_bind(w, w->l.offset, w->l.offset + N * row_bytes + 3, &b[1], &base[1]);
        else st = op_bind_all(bt[i], &b[i], &base[i]);
    }
    if (st) goto fail;
    lm_params p = {0};
    p.N = (uint32_t)N, p.K = (uint32_t)K, p.nblk = (uint32_t)nblk, p.flags = gamma ? 1u : 0u, p.eps = (float)eps;
    p.off_x = (uint32_t)((x->l.offset - base[0]) / 4);
    p.off_g = (uint32_t)((bt[2]->l.offset - base[2]) / 4), p.off_o = (uint32_t)(y->l.offset - base[3]);
    if (q) { /* bytes */
        p.off_w = (uint32_t)(w->l.offset - base[1]), p.rs = (uint32_t)row_bytes, p.units = (uint32_t)(K / 32);
    } else { /* the loader's vec4s: 8 weights a unit */
        int64_t epw = 16 / (int64_t)wgt_dtype_size(w->l.dtype);
        p.off_w = (uint32_t)((w->l.offset - base[1]) / epw), p.units = (uint32_t)(K / 8);
        p.rs = (uint32_t)(K / 8 * (w->l.dtype == WGT_F32 ? 2 : 1));
    }
    if (parts->l.offset != base[4]) {
        st = op_fail(ctx, WGT_ERR_INTERNAL, "lm_head: the parts must start their storage");
        goto fail;
    }
    /* the weights, x (and gamma), the logits and the parts */
    wgt_gpu_cost(ctx, (uint64_t)N * (uint64_t)row_bytes + (uint64_t)K * (gamma ? 8 : 4) + (uint64_t)N * 4 +
                     (token ? (uint64_t)nparts * 4 : 0),
                 2.0 * (double)N * (double)K);
    if ((st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 5, gx, gy, 1))) goto fail;
    if (token) {
        wgt_kernel *ka;
        wgt_binding ab[2];
        int64_t abase[2];
        if ((st = wgt_gpu_kernel_keyed(ctx, "fused_lm_head_argmax", &wg, sizeof wg, argmax_prelude, &wg, "parts", NULL, 0, &ka)) ||
            (st = op_bind_all(parts, &ab[0], &abase[0])) || (st = op_bind_all(tok, &ab[1], &abase[1])))
            goto fail;
        argmax_params ap = {(uint32_t)(nparts / 2), (uint32_t)(tok->l.offset - abase[1]), 0, 0};
        wgt_gpu_cost(ctx, (uint64_t)nparts * 4 + 4, 0);
        if ((st = wgt_gpu_dispatch(ctx, ka, &ap, sizeof ap, ab, 2, 1, 1, 1))) goto fail;
    }
    wgt_tensor_free(parts);
    *logits = y;
    if (token) *token = tok;
    return WGT_OK;
fail:
    wgt_tensor_free(y);
    wgt_tensor_free(parts);
    wgt_tensor_free(tok);
    return st;
}
