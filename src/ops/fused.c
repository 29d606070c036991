/*
 * Fused ops of the decoder step: the SwiGLU activation of a fused gate/up matmul, and the
 * residual add with the RMSNorm that follows it. Each is one dispatch where the composition takes
 * two (a decode step is bound by dispatch count, not bytes). The GPU kernels take f32 contiguous
 * rows; anything else, and a CPU-reference context, runs the composition of the plain ops, which
 * is also the reference the tests compare with.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ops/fused.h"
#include "ops/ops.h"
#include "tensor/tensor.h"

/* f32, contiguous, on a GPU context, and each binding within the device's limit. */
static int eligible(wgt_context *ctx, const wgt_tensor *const *ts, int n)
{
    if (wgt_gpu_runs_reference(ctx)) return 0;
    for (int i = 0; i < n; i++) {
        if (!ts[i]) continue;
        const wgt_layout *l = &ts[i]->l;
        if (l->dtype != WGT_F32 || !wgt_layout_is_contiguous(l)) return 0;
        if ((uint64_t)wgt_layout_numel(l) * 4 + 256 > wgt_gpu_limits(ctx)->max_storage_buffer_binding_size) return 0;
    }
    return 1;
}

typedef struct swiglu_params {
    uint32_t rows, D, off_x, off_o;
} swiglu_params;

wgt_status wgt_swiglu(const wgt_tensor *x, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    int nd = x->l.ndim;
    if (nd < 1 || x->l.shape[nd - 1] % 2)
        return op_fail(ctx, WGT_ERR_SHAPE, "swiglu: the last dim of x must be even (gate and up halves), not %lld",
                       nd ? (long long)x->l.shape[nd - 1] : 0LL);
    if (!op_is_float(x->l.dtype))
        return op_fail(ctx, WGT_ERR_DTYPE, "swiglu: x must be f32, f16 or bf16, not %s", wgt_dtype_name(x->l.dtype));
    int64_t D = x->l.shape[nd - 1] / 2, rows = D ? wgt_layout_numel(&x->l) / (2 * D) : 0;
    const wgt_tensor *ts[1] = {x};
    if (!eligible(ctx, ts, 1) || rows * D == 0 || rows * D > UINT32_MAX / 2) {
        wgt_tensor *g = NULL, *u = NULL, *sg = NULL;
        wgt_status st = wgt_tensor_narrow(x, -1, 0, D, &g);
        if (!st) st = wgt_tensor_narrow(x, -1, D, D, &u);
        if (!st) st = wgt_unary(WGT_UNARY_SILU, g, &sg);
        if (!st) st = wgt_binary(WGT_BINARY_MUL, sg, u, out);
        wgt_tensor_free(g), wgt_tensor_free(u), wgt_tensor_free(sg);
        return st;
    }
    int64_t shape[WGT_MAX_DIMS];
    memcpy(shape, x->l.shape, sizeof(int64_t) * (size_t)nd);
    shape[nd - 1] = D;
    wgt_tensor *y;
    wgt_status st = wgt_tensor_new(ctx, WGT_F32, nd, shape, &y);
    if (st) return st;
    wgt_kernel *k;
    wgt_binding b[2];
    int64_t bx, by;
    if (!(st = wgt_gpu_kernel(ctx, "fused_swiglu", NULL, "main", NULL, 0, &k)) && !(st = op_bind_all(x, &b[0], &bx)) &&
        !(st = op_bind_all(y, &b[1], &by))) {
        swiglu_params p = {(uint32_t)rows, (uint32_t)D, (uint32_t)(x->l.offset - bx), (uint32_t)(y->l.offset - by)};
        uint32_t gx, gy;
        op_grid(ctx, (uint64_t)(rows * D + 127) / 128, &gx, &gy);
        st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 2, gx, gy, 1);
    }
    return op_finish(st, y, out);
}

typedef struct add_norm_params {
    uint32_t rows, D, off_a, off_b, off_w, off_s, off_o;
    float eps;
} add_norm_params;

wgt_status wgt_add_rms_norm(const wgt_tensor *a, const wgt_tensor *b, const wgt_tensor *w, double eps,
                            wgt_tensor **sum, wgt_tensor **out)
{
    OP_BEGIN(a, out);
    if (!b || !sum) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "add_rms_norm: NULL argument");
    *sum = NULL;
    const wgt_tensor *ins[3] = {a, b, w ? w : a};
    wgt_status st = op_same_context("add_rms_norm", ins, 3);
    if (st) return st;
    int nd = a->l.ndim;
    int64_t D = nd ? a->l.shape[nd - 1] : 0;
    int same = b->l.ndim == nd && !memcmp(a->l.shape, b->l.shape, sizeof(int64_t) * (size_t)nd);
    if (nd < 1 || !same || (w && (w->l.ndim != 1 || w->l.shape[0] != D)))
        return op_fail(ctx, WGT_ERR_SHAPE, "add_rms_norm: a and b must have one shape [..., D] and w [D]");
    int64_t rows = D ? wgt_layout_numel(&a->l) / D : 0;
    const wgt_tensor *ts[3] = {a, b, w};
    if (!eligible(ctx, ts, 3) || rows == 0 || D == 0 || (uint64_t)rows * D > UINT32_MAX) {
        if ((st = wgt_binary(WGT_BINARY_ADD, a, b, sum))) return st;
        if ((st = wgt_rms_norm(*sum, 1, w, eps, out))) wgt_tensor_free(*sum), *sum = NULL;
        return st;
    }
    wgt_tensor *s = NULL, *y = NULL;
    if ((st = wgt_tensor_new(ctx, WGT_F32, nd, a->l.shape, &s)) || (st = wgt_tensor_new(ctx, WGT_F32, nd, a->l.shape, &y))) {
        wgt_tensor_free(s);
        return st;
    }
    wgt_tensor *ones = NULL;
    if (!w && (st = wgt_full(ctx, WGT_F32, 1, &D, 1.0, &ones))) goto done;
    wgt_kernel *k;
    wgt_binding bs[5];
    int64_t base[5];
    const wgt_tensor *wt = w ? w : ones;
    if (!(st = wgt_gpu_kernel(ctx, "fused_add_rms_norm", NULL, "main", NULL, 0, &k)) &&
        !(st = op_bind_all(a, &bs[0], &base[0])) && !(st = op_bind_all(b, &bs[1], &base[1])) &&
        !(st = op_bind_all(wt, &bs[2], &base[2])) && !(st = op_bind_all(s, &bs[3], &base[3])) &&
        !(st = op_bind_all(y, &bs[4], &base[4]))) {
        add_norm_params p = {(uint32_t)rows,
                             (uint32_t)D,
                             (uint32_t)(a->l.offset - base[0]),
                             (uint32_t)(b->l.offset - base[1]),
                             (uint32_t)(wt->l.offset - base[2]),
                             (uint32_t)(s->l.offset - base[3]),
                             (uint32_t)(y->l.offset - base[4]),
                             (float)eps};
        uint32_t gx, gy;
        op_grid(ctx, (uint64_t)rows, &gx, &gy);
        st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, bs, 5, gx, gy, 1);
    }
done:
    wgt_tensor_free(ones);
    if (st) {
        wgt_tensor_free(s);
        wgt_tensor_free(y);
        return st;
    }
    *sum = s;
    *out = y;
    return WGT_OK;
}

/* ---- q/k/v rotation and the KV cache write ---------------------------------------------------- */

typedef op_qkv_rope_params qkv_params;

/* The same through the plain ops (any dtype or layout, and the CPU reference). */
static wgt_status qkv_composed(const wgt_tensor *x, int64_t Hq, int64_t Hkv, int64_t hd, int64_t pos0, int rot,
                               int interleaved, const wgt_rope_params *rp, wgt_tensor *kc, wgt_tensor *vc,
                               wgt_tensor **q)
{
    wgt_context *ctx = x->st->ctx;
    int64_t L = x->l.shape[0], H = Hq + 2 * Hkv;
    int32_t *pos = malloc((size_t)L * sizeof *pos);
    if (!pos) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int64_t i = 0; i < L; i++) pos[i] = (int32_t)(pos0 + i);
    wgt_tensor *t[12] = {0};
    int64_t s3[3] = {L, H, hd};
    wgt_status st = wgt_tensor_from_host(ctx, WGT_I32, 1, &L, pos, &t[0]);
    free(pos);
    if (!st) st = wgt_tensor_reshape(x, 3, s3, &t[1]);                       /* [L, H, hd] */
    if (!st) st = wgt_tensor_transpose(t[1], 0, 1, &t[2]);                   /* [H, L, hd] */
    if (!st) st = wgt_tensor_narrow(t[2], 0, 0, Hq + Hkv, &t[3]);
    if (!st) st = wgt_rope(t[3], t[0], rot, interleaved, rp, &t[4]);         /* q and k rotated */
    if (!st) st = wgt_tensor_narrow(t[4], 0, Hq, Hkv, &t[5]);
    if (!st) st = wgt_tensor_narrow(kc, 1, pos0, L, &t[6]);
    if (!st) st = wgt_tensor_assign(t[6], t[5]);
    if (!st) st = wgt_tensor_narrow(t[2], 0, Hq + Hkv, Hkv, &t[7]);
    if (!st) st = wgt_tensor_narrow(vc, 1, pos0, L, &t[8]);
    if (!st) st = wgt_tensor_assign(t[8], t[7]);
    if (!st) st = wgt_tensor_narrow(t[4], 0, 0, Hq, &t[9]);
    if (!st) st = wgt_tensor_contiguous(t[9], q);
    for (int i = 0; i < 12; i++) wgt_tensor_free(t[i]);
    return st;
}

wgt_status wgt_qkv_rope_cache(const wgt_tensor *x, int64_t Hq, int64_t Hkv, int64_t hd, int64_t pos0, int rot,
                              int interleaved, const wgt_rope_params *rp, wgt_tensor *k_cache, wgt_tensor *v_cache,
                              wgt_tensor **q)
{
    OP_BEGIN(x, q);
    if (!k_cache || !v_cache || !rp) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "qkv_rope_cache: NULL argument");
    const wgt_tensor *ins[3] = {x, k_cache, v_cache};
    wgt_status st = op_same_context("qkv_rope_cache", ins, 3);
    if (st) return st;
    int64_t C = (Hq + 2 * Hkv) * hd, L = x->l.ndim == 2 ? x->l.shape[0] : 0;
    if (Hq < 1 || Hkv < 1 || hd < 2 || x->l.ndim != 2 || x->l.shape[1] != C || rot < 2 || rot > hd || rot % 2)
        return op_fail(ctx, WGT_ERR_SHAPE, "qkv_rope_cache: x must be [L, (Hq + 2 Hkv) hd] = [L, %lld] and rot even "
                       "and at most hd", (long long)C);
    for (int i = 0; i < 2; i++) {
        const wgt_tensor *c = i ? v_cache : k_cache;
        if (c->l.ndim != 3 || c->l.shape[0] != Hkv || c->l.shape[2] != hd || pos0 < 0 || pos0 + L > c->l.shape[1])
            return op_fail(ctx, WGT_ERR_SHAPE, "qkv_rope_cache: the caches must be [%lld, ctx, %lld] with room for "
                           "rows %lld .. %lld", (long long)Hkv, (long long)hd, (long long)pos0,
                           (long long)(pos0 + L - 1));
    }
    const wgt_tensor *ts[3] = {x, k_cache, v_cache};
    if (!eligible(ctx, ts, 3) || L == 0 || k_cache->st == v_cache->st || (uint64_t)L * C > UINT32_MAX)
        return qkv_composed(x, Hq, Hkv, hd, pos0, rot, interleaved, rp, k_cache, v_cache, q);
    int half = rot / 2;
    double inv[2048], af = 1;
    float invf[2048];
    if (half > 2048) return qkv_composed(x, Hq, Hkv, hd, pos0, rot, interleaved, rp, k_cache, v_cache, q);
    if ((st = wgt_cpu_rope_inv_freq(rp, rot, inv, &af))) return op_fail(ctx, st, "qkv_rope_cache: %s", wgt_errmsg());
    for (int j = 0; j < half; j++) invf[j] = (float)inv[j];
    wgt_tensor *freq = NULL, *y = NULL;
    int64_t qs[3] = {Hq, L, hd}, nh = half;
    if ((st = op_const_tensor(ctx, WGT_F32, nh, invf, &freq)) ||
        (st = wgt_tensor_new(ctx, WGT_F32, 3, qs, &y)))
        goto done;
    wgt_kernel *k;
    wgt_binding b[5];
    int64_t base[5];
    int64_t ctxlen = k_cache->l.shape[1];
    /* the caches bind whole, so a decode step (L = 1) reuses the bind group at every position */
    if ((st = wgt_gpu_kernel(ctx, "fused_qkv_rope", NULL, "main", NULL, 0, &k)) || (st = op_bind_all(x, &b[0], &base[0])) ||
        (st = op_bind_all(freq, &b[1], &base[1])) || (st = op_bind_all(y, &b[2], &base[2])) ||
        (st = op_bind_storage(k_cache, &b[3], &base[3])) || (st = op_bind_storage(v_cache, &b[4], &base[4])))
        goto done;
    qkv_params p = {0};
    p.L = (uint32_t)L, p.hd = (uint32_t)hd, p.Hq = (uint32_t)Hq, p.Hkv = (uint32_t)Hkv;
    p.rot = (uint32_t)rot, p.interleaved = (uint32_t)!!interleaved, p.pos0 = (uint32_t)pos0, p.ctx = (uint32_t)ctxlen;
    p.off_x = (uint32_t)(x->l.offset - base[0]), p.off_q = (uint32_t)(y->l.offset - base[2]);
    /* the cache offsets point at row pos0 of head 0 */
    p.off_k = (uint32_t)(k_cache->l.offset + pos0 * hd - base[3]);
    p.off_v = (uint32_t)(v_cache->l.offset + pos0 * hd - base[4]);
    p.af = (float)af, p.n = (uint32_t)(L * C);
    uint32_t gx, gy;
    op_grid(ctx, ((uint64_t)L * C + 127) / 128, &gx, &gy);
    /* the position may be a graph scalar (a captured decode step): the rotation's and the cache
     * rows' fields follow it */
    wgt_gpu_param_scalar(ctx, offsetof(qkv_params, pos0), WGT_PARAM_U32, WGT_GRAPH_POSITION, pos0, 1, 0);
    wgt_gpu_param_scalar(ctx, offsetof(qkv_params, off_k), WGT_PARAM_U32, WGT_GRAPH_POSITION, pos0, hd, k_cache->l.offset - base[3]);
    wgt_gpu_param_scalar(ctx, offsetof(qkv_params, off_v), WGT_PARAM_U32, WGT_GRAPH_POSITION, pos0, hd, v_cache->l.offset - base[4]);
    st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 5, gx, gy, 1);
done:
    wgt_tensor_free(freq);
    return op_finish(st, y, q);
}

/* ---- one token through a linear layer, with the norm or activation before it ---------------- */

typedef op_fl_params gemv_fused_params;

/* The same through the plain ops: the reference, and the path for anything the kernel does not take. */
static wgt_status fused_linear_composed(const wgt_tensor *x, wgt_fused_prologue pro, const wgt_tensor *gamma,
                                        double eps, const wgt_tensor *w, const wgt_tensor *bias, const wgt_tensor *res,
                                        wgt_tensor **out)
{
    wgt_tensor *in = NULL, *y = NULL;
    wgt_status st = WGT_OK;
    if (pro == WGT_PRO_RMS_NORM) st = wgt_rms_norm(x, 1, gamma, eps, &in);
    else if (pro == WGT_PRO_SWIGLU) st = wgt_swiglu(x, &in);
    if (!st) st = wgt_linear(in ? in : x, w, bias, res ? &y : out);
    if (!st && res) st = wgt_binary(WGT_BINARY_ADD, y, res, out);
    wgt_tensor_free(in);
    wgt_tensor_free(y);
    return st;
}

typedef struct gemv_fused_key {
    int32_t pro, wdt, bdt, sg;
    uint32_t wg, xs; /* xs: fused_linear.wgsl's staged SwiGLU input, vec4s (0 or 1: none) */
    uint32_t rr;     /* RR: rows a lane group of the entry `rows` (1 elsewhere) */
    int32_t routed;  /* a graph's routed ops (fused_route.c): the same kernel, named by the ops it runs */
} gemv_fused_key;

/* WGT_FUSED_LINEAR_STAGE=1: a one-token SwiGLU + linear layer computes silu(gate) * up once a
 * workgroup in workgroup memory (fused_linear.wgsl's entry `staged`) where K floats fit, rather
 * than once per row. Opt-in: on the H200 (bench/results/h200/decode_ab.txt, -p 16 -n 128, two
 * rounds) Llama-3.2-1B f16 decode went 670.1 / 670.2 -> 692.3 / 690.5 tok/s, Qwen2.5-0.5B f16
 * 820.1 / 820.6 -> 770.5 / 770.2 (its down projection has 2 rows a workgroup: the staging is
 * repeated for 448 workgroups). */
#define FL_STAGE_DEFAULT "0"

/* WGT_FUSED_LINEAR_ROWS=auto|R[:T[:W]] (R 1, 2, 4 or 8; 0: off): fused_linear.wgsl's entry `rows`, R
 * rows a group of T lanes (a power of two from 32 to the workgroup size; unset: the fewest that give
 * at least W workgroups, default 264, two for each of the H200's 132 SMs, without lanes past the
 * row's 8-weight groups), so each lane's x serves R rows' weights. auto (the default): the largest
 * R of 8, 4 with which 32 lanes a group still give 512 workgroups (at 256 invocations R = 8 from
 * N >= 32768: the output layers; 4 from 16384: Llama-3.2-1B's gate/up), else 2. Needs subgroups
 * (where they are absent `main` runs). R = 8 on Qwen2.5-0.5B's output layer (151,936 x 896 f16,
 * bench/results/h200/dec-2026-12-03/, WGT_PROFILE=2): 98.3 -> 89.1 us a call (2,776 -> 3,063 GB/s).
 * On the H200 (bench/results/h200/decode-kernels-2026-12-03/, -p 16 -n 128, two alternated rounds,
 * f16): Llama-3.2-1B 695.0 / 695.0 -> 848.3 / 847.9 tok/s with R = 4 (784.9 with R = 2, one round),
 * Qwen2.5-0.5B 848.3 / 848.5 -> 874.2 / 874.1 with R = 4, 918.7 with R = 2 (one round). */
#define FL_ROWS_DEFAULT "auto"

/* The entry `rows`'s rows a lane group and lanes a group for an N x K layer (*rr = 0: not taken). */
static void fl_rows_choose(int64_t N, int64_t K, uint32_t wg, uint32_t *rr, uint32_t *tpr)
{
    const char *e = getenv("WGT_FUSED_LINEAR_ROWS");
    if (!e || !*e) e = FL_ROWS_DEFAULT;
    unsigned r = 0, t = 0, minwg = 264;
    int got;
    if (!strcmp(e, "auto")) {
        r = N >= 512 * (int64_t)(8 * wg / 32) ? 8 : N >= 512 * (int64_t)(4 * wg / 32) ? 4 : 2;
        got = 1;
    } else
        got = sscanf(e, "%u:%u:%u", &r, &t, &minwg);
    *rr = 0;
    if (got < 1 || (r != 1 && r != 2 && r != 4 && r != 8)) return;
    if (got >= 2 && t && (t < 32 || t > wg || (t & (t - 1)))) t = 0;
    if (!t || got < 2) {
        int64_t groups = K / 8;
        t = 32;
        while (t * 2 <= wg && t * 2 <= groups && (N + (int64_t)(r * wg / t) - 1) / (int64_t)(r * wg / t) < (int64_t)minwg)
            t *= 2;
    }
    *rr = r, *tpr = t;
}

static char *gemv_fused_prelude(void *arg)
{
    const gemv_fused_key *k = arg;
    size_t cap = 8192;
    char *pre = malloc(cap);
    if (!pre) return NULL;
    pre[0] = 0;
    op_wgsl_row_subgroups(pre, cap, k->sg);
    size_t used = strlen(pre);
    snprintf(pre + used, cap - used, "const PRO: u32 = %du;\nconst VW: u32 = %du;\nconst WG: u32 = %uu;\nconst XS: u32 = %uu;\n"
             "const RR: u32 = %uu;\nconst RH: u32 = %uu;\n", k->pro, k->wdt == WGT_F32 ? 2 : 1, k->wg, k->xs > 1 ? k->xs : 1u,
             k->rr ? k->rr : 1u, k->rr > 4 ? k->wg : 1u);
    op_wgsl_vec8_loader(pre, cap, "ldW8", "w", (wgt_dtype)k->wdt);
    op_wgsl_loader(pre, cap, "ldBias", "bias", (wgt_dtype)k->bdt, "f32");
    return pre;
}

/* 1 when t is f32 (or float, for w), contiguous, starts at a multiple of `align` elements and fits a binding. */
static int gemv_operand(wgt_context *ctx, const wgt_tensor *t, int any_float, int64_t align)
{
    if (!t) return 1;
    const wgt_layout *l = &t->l;
    if (!(any_float ? op_is_float(l->dtype) : l->dtype == WGT_F32) || !wgt_layout_is_contiguous(l)) return 0;
    return l->offset % align == 0 &&
           (uint64_t)wgt_layout_numel(l) * wgt_dtype_size(l->dtype) + 256 <= wgt_gpu_limits(ctx)->max_storage_buffer_binding_size;
}

wgt_status op_fused_linear_kernel(wgt_context *ctx, int pro, wgt_dtype wdt, wgt_dtype bdt, int64_t N, int64_t K,
                                  const char *routed, wgt_kernel **k, op_fl_params *p, uint32_t *gx, uint32_t *gy)
{
    gemv_fused_key key = {pro, wdt, bdt, 0, op_workgroup_size(ctx), 0, 0, 0};
    key.routed = routed ? (int32_t)(strlen(routed) * 31 + (unsigned char)routed[strlen(routed) - 1]) : 0;
    key.sg = op_row_subgroups(ctx);
    int solo = wgt_gpu_avoid_barriers(ctx); /* the barrier-free entry point (SwiftShader) */
    /* SwiGLU's input staged (WGT_FUSED_LINEAR_STAGE=1) within the workgroup memory, at most 16 KiB
     * on OpenGL (llvmpipe computed wrong results past it: src/ops/matmul.c's regs_choose) */
    const char *stage = getenv("WGT_FUSED_LINEAR_STAGE");
    if (!stage || !*stage) stage = FL_STAGE_DEFAULT;
    const wgt_adapter_info *info = wgt_gpu_info(ctx);
    uint64_t smem = wgt_gpu_limits(ctx)->max_compute_workgroup_storage_size;
    if ((info->backend == WGT_BACKEND_OPENGLES || info->backend == WGT_BACKEND_OPENGL || info->compat) && smem > 16384)
        smem = 16384;
    if (!solo && pro == WGT_PRO_SWIGLU && !strcmp(stage, "1") && (uint64_t)K * 4 + (uint64_t)key.wg * 8 <= smem)
        key.xs = (uint32_t)(K / 4);
    uint32_t rows_tpr = 0;
    if (!solo && key.xs <= 1 && key.sg) fl_rows_choose(N, K, key.wg, &key.rr, &rows_tpr);
    wgt_status st = wgt_gpu_kernel_keyed(ctx, "fused_linear", &key, sizeof key, gemv_fused_prelude, &key,
                                         solo ? "solo" : key.xs > 1 ? "staged" : key.rr ? "rows" : "main", NULL, 0, k);
    if (st) return st;
    if (routed) snprintf((*k)->name, sizeof (*k)->name, "%s", routed);
    memset(p, 0, sizeof *p);
    p->N = (uint32_t)N, p->K = (uint32_t)K;
    /* rows per workgroup as gemv (src/ops/matmul.c): 32 lanes a row, fewer rows when that would
     * leave under 256 workgroups */
    int wg = (int)key.wg, rows = wg / 32;
    while (rows > 2 && N / rows < 256) rows /= 2;
    if (rows < 1) rows = 1;
    p->tpr = (uint32_t)(wg / rows);
    if (solo) rows = 64, p->tpr = 1; /* one invocation a row, 64 a workgroup */
    if (key.rr) rows = (int)(key.rr * key.wg / rows_tpr), p->tpr = rows_tpr;
    op_grid(ctx, ((uint64_t)N + rows - 1) / rows, gx, gy);
    return WGT_OK;
}

wgt_status op_fused_qkv_kernel(wgt_context *ctx, wgt_dtype wdt, wgt_dtype bdt, const char *routed, wgt_kernel **k,
                               uint32_t *wg)
{
    gemv_fused_key key = {WGT_PRO_RMS_NORM, wdt, bdt, 0, op_workgroup_size(ctx), 0, 0, routed ? 1 : 0};
    key.sg = op_row_subgroups(ctx);
    *wg = key.wg;
    wgt_status st = wgt_gpu_kernel_keyed(ctx, "fused_linear_qkv_rope", &key, sizeof key, gemv_fused_prelude, &key,
                                         wgt_gpu_avoid_barriers(ctx) ? "solo" : "main", NULL, 0, k);
    if (!st && routed) snprintf((*k)->name, sizeof (*k)->name, "%s", routed);
    return st;
}

wgt_status wgt_fused_linear(const wgt_tensor *x, wgt_fused_prologue pro, const wgt_tensor *gamma, double eps,
                            const wgt_tensor *w, const wgt_tensor *bias, const wgt_tensor *res, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    if (!w || (pro == WGT_PRO_RMS_NORM && !gamma) || pro < WGT_PRO_NONE || pro > WGT_PRO_SWIGLU)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "fused_linear: NULL weight or norm weight, or an unknown prologue");
    const wgt_tensor *ins[5] = {x, w, gamma ? gamma : x, bias ? bias : x, res ? res : x};
    wgt_status st = op_same_context("fused_linear", ins, 5);
    if (st) return st;
    int nd = x->l.ndim;
    int64_t Kx = nd ? x->l.shape[nd - 1] : 0, K = pro == WGT_PRO_SWIGLU ? Kx / 2 : Kx;
    int64_t M = Kx ? wgt_layout_numel(&x->l) / Kx : 0;
    if (w->l.ndim != 2 || w->l.shape[1] != K || (pro == WGT_PRO_SWIGLU && Kx % 2))
        return op_fail(ctx, WGT_ERR_SHAPE, "fused_linear: x [..., %lld] does not match the weight [N, K]%s",
                       (long long)Kx, pro == WGT_PRO_SWIGLU ? " (SwiGLU: x holds 2K values, gate then up)" : "");
    int64_t N = w->l.shape[0];
    if ((gamma && pro == WGT_PRO_RMS_NORM && (gamma->l.ndim != 1 || gamma->l.shape[0] != K)) ||
        (bias && (bias->l.ndim != 1 || bias->l.shape[0] != N)))
        return op_fail(ctx, WGT_ERR_SHAPE, "fused_linear: the norm weight must be [%lld] and the bias [%lld]",
                       (long long)K, (long long)N);
    if (res) {
        int ok = res->l.ndim == nd && res->l.shape[nd - 1] == N;
        for (int d = 0; ok && d < nd - 1; d++) ok = res->l.shape[d] == x->l.shape[d];
        if (!ok) return op_fail(ctx, WGT_ERR_SHAPE, "fused_linear: the residual must have x's shape with last dim %lld",
                                (long long)N);
    }
    /* the kernel: one row of x (decode), K a multiple of 8, f32 activations aligned to vec4s */
    int fast = !wgt_gpu_runs_reference(ctx) && M == 1 && K > 0 && N > 0 && K % 8 == 0 && N <= UINT32_MAX / 2 &&
               gemv_operand(ctx, x, 0, 4) && gemv_operand(ctx, w, 1, 16 / (int64_t)wgt_dtype_size(w->l.dtype)) &&
               (pro != WGT_PRO_RMS_NORM || gemv_operand(ctx, gamma, 0, 4)) && gemv_operand(ctx, bias, 1, 1) &&
               gemv_operand(ctx, res, 0, 1);
    if (!fast) return fused_linear_composed(x, pro, gamma, eps, w, bias, res, out);
    int64_t shape[WGT_MAX_DIMS];
    memcpy(shape, x->l.shape, sizeof(int64_t) * (size_t)nd);
    shape[nd - 1] = N;
    wgt_tensor *y;
    if ((st = wgt_tensor_new(ctx, WGT_F32, nd, shape, &y))) return st;
    wgt_kernel *k;
    wgt_binding b[6];
    int64_t base[6];
    const wgt_tensor *bt[6] = {x, w, pro == WGT_PRO_RMS_NORM ? gamma : x, bias ? bias : x, res ? res : x, y};
    gemv_fused_params p = {0};
    uint32_t gx, gy;
    if ((st = op_fused_linear_kernel(ctx, pro, w->l.dtype, bias ? bias->l.dtype : WGT_F32, N, K, NULL, &k, &p, &gx,
                                     &gy)))
        return op_finish(st, y, out);
    for (int i = 0; i < 6 && !st; i++) st = op_bind_all(bt[i], &b[i], &base[i]);
    if (st) return op_finish(st, y, out);
    int64_t epw = 16 / (int64_t)wgt_dtype_size(w->l.dtype);
    p.flags = (bias ? 1u : 0u) | (res ? 2u : 0u), p.eps = (float)eps;
    p.off_x = (uint32_t)((x->l.offset - base[0]) / 4), p.off_w = (uint32_t)((w->l.offset - base[1]) / epw);
    p.off_g = (uint32_t)((bt[2]->l.offset - base[2]) / 4), p.off_b = (uint32_t)(bt[3]->l.offset - base[3]);
    p.off_r = (uint32_t)(bt[4]->l.offset - base[4]), p.off_o = (uint32_t)(y->l.offset - base[5]);
    /* the weights, x (twice its K for SwiGLU), the norm weight, bias, residual and y */
    wgt_gpu_cost(ctx, (uint64_t)(N * K) * wgt_dtype_size(w->l.dtype) + (uint64_t)Kx * 4 +
                 (pro == WGT_PRO_RMS_NORM ? (uint64_t)K * 4 : 0) +
                 (bias ? (uint64_t)N * wgt_dtype_size(bias->l.dtype) : 0) + (res ? (uint64_t)N * 4 : 0) + (uint64_t)N * 4,
                 2.0 * (double)N * (double)K);
    st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 6, gx, gy, 1);
    return op_finish(st, y, out);
}

/* ---- one token's attention inputs: norm, q/k/v product, rotation and cache write ------------- */

int op_qkv_caches_fit(const wgt_tensor *k_cache, const wgt_tensor *v_cache, int64_t Hkv, int64_t hd, int64_t pos0)
{
    if (k_cache->st == v_cache->st) return 0;
    for (int i = 0; i < 2; i++) {
        const wgt_tensor *c = i ? v_cache : k_cache;
        if (c->l.dtype != WGT_F32 || !wgt_layout_is_contiguous(&c->l) || c->l.ndim != 3 || c->l.shape[0] != Hkv ||
            c->l.shape[2] != hd || pos0 < 0 || pos0 >= c->l.shape[1])
            return 0;
    }
    return 1;
}

wgt_status op_qkv_setup(wgt_context *ctx, const char *op, const wgt_rope_params *rp, int rot, int interleaved,
                        int64_t Hq, int64_t Hkv, int64_t hd, int64_t pos0, wgt_tensor *k_cache, wgt_tensor *v_cache,
                        op_qkv_params *p, wgt_binding *b, int64_t *base, wgt_tensor **freq, wgt_tensor **y)
{
    int half = rot / 2;
    double inv[2048], af = 1;
    float invf[2048];
    wgt_status st = wgt_cpu_rope_inv_freq(rp, rot, inv, &af);
    if (st) return op_fail(ctx, st, "%s: %s", op, wgt_errmsg());
    for (int j = 0; j < half; j++) invf[j] = (float)inv[j];
    int64_t qs[3] = {Hq, 1, hd}, nh = half;
    if ((st = op_const_tensor(ctx, WGT_F32, nh, invf, freq)) || (st = wgt_tensor_new(ctx, WGT_F32, 3, qs, y)) ||
        (st = op_bind_all(*freq, &b[4], &base[4])) || (st = op_bind_all(*y, &b[5], &base[5])) ||
        (st = op_bind_storage(k_cache, &b[6], &base[6])) || (st = op_bind_storage(v_cache, &b[7], &base[7])))
        return st;
    p->hd = (uint32_t)hd, p->Hq = (uint32_t)Hq, p->Hkv = (uint32_t)Hkv, p->rot = (uint32_t)rot;
    p->interleaved = (uint32_t)!!interleaved, p->pos = (uint32_t)pos0, p->ctx = (uint32_t)k_cache->l.shape[1];
    p->af = (float)af, p->off_q = (uint32_t)((*y)->l.offset - base[5]);
    /* the cache offsets point at row pos0 of head 0 */
    p->off_k = (uint32_t)(k_cache->l.offset + pos0 * hd - base[6]);
    p->off_v = (uint32_t)(v_cache->l.offset + pos0 * hd - base[7]);
    return WGT_OK;
}

void op_qkv_grid(wgt_context *ctx, uint32_t wg, int pairs_asked, int solo, op_qkv_params *p, uint32_t *gx,
                 uint32_t *gy)
{
    int pairs = (int)wg / 32;
    if (pairs_asked > 0 && pairs_asked <= pairs && !(pairs_asked & (pairs_asked - 1))) pairs = pairs_asked;
    else
        while (pairs > 2 && p->S / (uint32_t)pairs < 256) pairs /= 2;
    p->tpr = wg / (uint32_t)pairs;
    if (solo) pairs = 64, p->tpr = 1;
    op_grid(ctx, ((uint64_t)p->S + (uint64_t)pairs - 1) / (uint64_t)pairs, gx, gy);
}

void op_qkv_position(wgt_context *ctx, int64_t pos0, int64_t hd, const wgt_tensor *k_cache,
                     const wgt_tensor *v_cache, const int64_t *base)
{
    wgt_gpu_param_scalar(ctx, offsetof(op_qkv_params, pos), WGT_PARAM_U32, WGT_GRAPH_POSITION, pos0, 1, 0);
    wgt_gpu_param_scalar(ctx, offsetof(op_qkv_params, off_k), WGT_PARAM_U32, WGT_GRAPH_POSITION, pos0, hd,
                         k_cache->l.offset - base[6]);
    wgt_gpu_param_scalar(ctx, offsetof(op_qkv_params, off_v), WGT_PARAM_U32, WGT_GRAPH_POSITION, pos0, hd,
                         v_cache->l.offset - base[7]);
}

wgt_status wgt_fused_qkv_rope_cache(const wgt_tensor *x, const wgt_tensor *gamma, double eps, const wgt_tensor *w,
                                    const wgt_tensor *bias, int64_t Hq, int64_t Hkv, int64_t hd, int64_t pos0, int rot,
                                    int interleaved, const wgt_rope_params *rp, wgt_tensor *k_cache,
                                    wgt_tensor *v_cache, wgt_tensor **q)
{
    OP_BEGIN(x, q);
    if (!gamma || !w || !rp || !k_cache || !v_cache)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "fused_qkv_rope_cache: NULL argument");
    int64_t C = (Hq + 2 * Hkv) * hd, K = x->l.ndim == 2 ? x->l.shape[1] : 0;
    int fast = !wgt_gpu_runs_reference(ctx) && x->l.ndim == 2 && x->l.shape[0] == 1 && K > 0 && K % 8 == 0 && hd % 2 == 0 &&
               w->l.ndim == 2 && w->l.shape[0] == C && w->l.shape[1] == K && rot >= 2 && rot <= hd && rot % 2 == 0 &&
               (!bias || (bias->l.ndim == 1 && bias->l.shape[0] == C)) && gamma->l.ndim == 1 && gamma->l.shape[0] == K &&
               gemv_operand(ctx, x, 0, 4) && gemv_operand(ctx, w, 1, 16 / (int64_t)wgt_dtype_size(w->l.dtype)) &&
               gemv_operand(ctx, gamma, 0, 4) && gemv_operand(ctx, bias, 1, 1) && rot / 2 <= 2048 &&
               C / 2 <= UINT32_MAX / 2 && op_qkv_caches_fit(k_cache, v_cache, Hkv, hd, pos0);
    if (!fast) { /* the composition: the same two passes as a prefill */
        wgt_tensor *qkv = NULL;
        wgt_status st = wgt_fused_linear(x, WGT_PRO_RMS_NORM, gamma, eps, w, bias, NULL, &qkv);
        if (!st) st = wgt_qkv_rope_cache(qkv, Hq, Hkv, hd, pos0, rot, interleaved, rp, k_cache, v_cache, q);
        wgt_tensor_free(qkv);
        return st;
    }
    wgt_kernel *k;
    wgt_binding b[8];
    int64_t base[8];
    wgt_tensor *freq = NULL, *y = NULL;
    op_qkv_params p = {0};
    const wgt_tensor *bt[4] = {x, w, gamma, bias ? bias : x};
    int solo = wgt_gpu_avoid_barriers(ctx); /* the barrier-free entry point (SwiftShader) */
    uint32_t wg;
    wgt_status st = op_fused_qkv_kernel(ctx, w->l.dtype, bias ? bias->l.dtype : WGT_F32, NULL, &k, &wg);
    for (int i = 0; i < 4 && !st; i++) st = op_bind_all(bt[i], &b[i], &base[i]);
    if (st || (st = op_qkv_setup(ctx, "fused_qkv_rope_cache", rp, rot, interleaved, Hq, Hkv, hd, pos0, k_cache, v_cache,
                                 &p, b, base, &freq, &y)))
        goto done;
    int64_t epw = 16 / (int64_t)wgt_dtype_size(w->l.dtype);
    p.S = (uint32_t)(C / 2), p.K = (uint32_t)K, p.flags = bias ? 1u : 0u, p.eps = (float)eps;
    p.off_x = (uint32_t)((x->l.offset - base[0]) / 4), p.off_w = (uint32_t)((w->l.offset - base[1]) / epw);
    p.off_g = (uint32_t)((gamma->l.offset - base[2]) / 4), p.off_b = (uint32_t)(bt[3]->l.offset - base[3]);
    uint32_t gx, gy;
    op_qkv_grid(ctx, wg, 0, solo, &p, &gx, &gy);
    /* the position may be a graph scalar, as in wgt_qkv_rope_cache */
    op_qkv_position(ctx, pos0, hd, k_cache, v_cache, base);
    /* the weights, x, the norm weight, bias, q out and the k/v rows written */
    wgt_gpu_cost(ctx, (uint64_t)(C * K) * wgt_dtype_size(w->l.dtype) + (uint64_t)K * 8 +
                 (bias ? (uint64_t)C * wgt_dtype_size(bias->l.dtype) : 0) + (uint64_t)C * 4,
                 2.0 * (double)C * (double)K);
    st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 8, gx, gy, 1);
done:
    wgt_tensor_free(freq);
    return op_finish(st, y, q);
}
