/*
 * The output layer of one decode token and the greedy argmax after it (src/ops/lm_head.h):
 * src/kernels/lm_head.wgsl streams the weights once (a fixed grid of workgroups looping over row
 * blocks, x * gamma staged in workgroup memory, R rows a group of T lanes, U steps of loads issued
 * together) and writes the logits and each workgroup's best logit; src/kernels/argmax.wgsl reduces
 * those parts in one workgroup to the token id. Without a token asked for, only the first runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/fused.h"
#include "ops/lm_head.h"
#include "ops/ops.h"
#include "tensor/tensor.h"

typedef struct lm_params {
    uint32_t N, K, nblk, flags, off_x, off_w, off_g, off_o;
    float eps;
    uint32_t pad0, pad1, pad2;
} lm_params;

typedef struct lm_key {
    int32_t wdt;
    uint32_t wg, t, r, u, kv, sgx, arg, hs, rw, rh;
} lm_key;

typedef struct argmax_params {
    uint32_t n, off_o, pad0, pad1;
} argmax_params;

/* WGT_LM_HEAD=auto|0|R[:T[:G[:U]]]: the output layer's kernel (lm_head.wgsl): R rows (1, 2, 4 or
 * 8) a group of T lanes (a power of two up to the workgroup size; 0: the adapter's fixed subgroup
 * size), at most G workgroups (0: one row block for every lane group, no loop; else the fewest
 * that keep the same number of steps as G would), U steps (1, 2 or 4) of loads issued together.
 * 0: the composition (fused_linear's `rows` and wgt_reduce's argmax). auto (the default): R 8, T
 * the subgroup size where the adapter's is fixed (32 where not), G 528, U 2. */
#define LM_HEAD_DEFAULT "auto"

typedef struct lm_choice {
    uint32_t r, t, g, u;
} lm_choice;

/* 0: not taken (the composition runs) */
static int lm_choose(wgt_context *ctx, uint32_t wg, lm_choice *c)
{
    const char *e = getenv("WGT_LM_HEAD");
    if (!e || !*e) e = LM_HEAD_DEFAULT;
    uint32_t sgfix = op_shuffle_subgroup(ctx);
    if (sgfix < 4 || sgfix > wg) sgfix = 0;
    *c = (lm_choice){8, sgfix ? sgfix : 32, 528, 2};
    if (!strcmp(e, "0")) return 0;
    if (strcmp(e, "auto") != 0) {
        unsigned r = 0, t = 0, g = 528, u = 2;
        if (sscanf(e, "%u:%u:%u:%u", &r, &t, &g, &u) < 1) return 0;
        c->r = r, c->t = t ? t : (sgfix ? sgfix : 32), c->g = g, c->u = u;
    }
    if (c->t > wg) c->t = wg;
    if ((c->r != 1 && c->r != 2 && c->r != 4 && c->r != 8) || !c->t || (c->t & (c->t - 1)) ||
        (c->u != 1 && c->u != 2 && c->u != 4))
        return 0;
    return 1;
}

static char *lm_prelude(void *arg)
{
    const lm_key *k = arg;
    size_t cap = 4096;
    char *pre = malloc(cap);
    if (!pre) return NULL;
    int sg = k->sgx || k->hs;
    snprintf(pre, cap,
             "%sconst WG: u32 = %uu;\nconst T: u32 = %uu;\nconst R: u32 = %uu;\nconst U: u32 = %uu;\n"
             "const KV: u32 = %uu;\nconst SGX: u32 = %uu;\nconst ARG: u32 = %uu;\nconst RW: u32 = %uu;\nconst RH: u32 = %uu;\n"
             "const VW: u32 = %uu;\nfn rsum(v: f32) -> f32 { return %s; }\nfn rsize() -> u32 { return %s; }\n"
             "fn gsum4(v: vec4<f32>) -> vec4<f32> { return %s; }\n",
             sg ? "enable subgroups;\n" : "", k->wg, k->t, k->r, k->u, k->kv, k->sgx, k->arg, k->rw, k->rh,
             k->wdt == WGT_F32 ? 2u : 1u, k->hs ? "subgroupAdd(v)" : "v", k->hs ? "subgroupAdd(1u)" : "1u", k->sgx ? "subgroupAdd(v)" : "v");
    op_wgsl_vec8_loader(pre, cap, "ldW8", "w", (wgt_dtype)k->wdt);
    return pre;
}

static char *argmax_prelude(void *arg)
{
    char *pre = malloc(64);
    if (pre) snprintf(pre, 64, "const WG: u32 = %uu;\n", *(const uint32_t *)arg);
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
    int64_t N = type == WGT_FTYPE_F32 && w->l.ndim == 2 ? w->l.shape[0] : 0;
    uint32_t wg = op_workgroup_size(ctx);
    lm_choice c;
    int fast = type == WGT_FTYPE_F32 && !wgt_gpu_runs_reference(ctx) && !wgt_gpu_avoid_barriers(ctx) && M == 1 && K > 0 &&
               K % 8 == 0 && N > 0 && N < (int64_t)1 << 31 && w->l.shape[1] == K && lm_operand(ctx, x, 0, 4) &&
               lm_operand(ctx, w, 1, 16 / (int64_t)wgt_dtype_size(w->l.dtype)) &&
               (!gamma || (gamma->l.ndim == 1 && gamma->l.shape[0] == K && lm_operand(ctx, gamma, 0, 4))) &&
               lm_choose(ctx, wg, &c);
    lm_key key = {0};
    if (fast) {
        uint32_t sgfix = op_shuffle_subgroup(ctx);
        const wgt_limits *lim = wgt_gpu_limits(ctx);
        key.wdt = w->l.dtype, key.wg = wg, key.t = c.t, key.r = c.r, key.u = c.u, key.kv = (uint32_t)(K / 4);
        key.sgx = c.t == sgfix && op_row_subgroups(ctx);
        /* the workgroup-memory sums: subgroup sums first where whole subgroups lie in a lane group */
        key.hs = !key.sgx && op_row_subgroups(ctx) && lim->subgroup_max_size >= 1 && c.t % lim->subgroup_max_size == 0;
        key.arg = token != NULL;
        key.rw = key.sgx ? 1 : wg;
        key.rh = key.sgx || c.r <= 4 ? 1 : wg;
        if ((uint64_t)K * 4 + (uint64_t)(key.rw + key.rh) * 16 + (uint64_t)wg * 12 > lim->max_compute_workgroup_storage_size)
            fast = 0;
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
    if ((st = wgt_gpu_kernel_keyed(ctx, "lm_head", &key, sizeof key, lm_prelude, &key, "main", NULL, 0, &k))) goto fail;
    const wgt_tensor *bt[5] = {x, w, gamma ? gamma : x, y, parts};
    for (int i = 0; i < 5 && !st; i++) st = op_bind_all(bt[i], &b[i], &base[i]);
    if (st) goto fail;
    int64_t epw = 16 / (int64_t)wgt_dtype_size(w->l.dtype);
    lm_params p = {0};
    p.N = (uint32_t)N, p.K = (uint32_t)K, p.nblk = (uint32_t)nblk, p.flags = gamma ? 1u : 0u, p.eps = (float)eps;
    p.off_x = (uint32_t)((x->l.offset - base[0]) / 4), p.off_w = (uint32_t)((w->l.offset - base[1]) / epw);
    p.off_g = (uint32_t)((bt[2]->l.offset - base[2]) / 4), p.off_o = (uint32_t)(y->l.offset - base[3]);
    if (parts->l.offset != base[4]) {
        st = op_fail(ctx, WGT_ERR_INTERNAL, "lm_head: the parts must start their storage");
        goto fail;
    }
    /* the weights, x (and gamma), the logits and the parts */
    wgt_gpu_cost(ctx, (uint64_t)(N * K) * wgt_dtype_size(w->l.dtype) + (uint64_t)K * (gamma ? 8 : 4) + (uint64_t)N * 4 +
                     (token ? (uint64_t)nparts * 4 : 0),
                 2.0 * (double)N * (double)K);
    if ((st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 5, gx, gy, 1))) goto fail;
    if (token) {
        wgt_kernel *ka;
        wgt_binding ab[2];
        int64_t abase[2];
        if ((st = wgt_gpu_kernel_keyed(ctx, "argmax", &wg, sizeof wg, argmax_prelude, &wg, "parts", NULL, 0, &ka)) ||
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
