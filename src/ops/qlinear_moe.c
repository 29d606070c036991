/* A mixture of experts' chosen experts over quantized weights: the kernels take the router's top-k
 * ids from a device buffer and read only those experts' blocks of the stacked weights, in place
 * (src/kernels/qlinear_moe.wgsl, with qlinear.wgsl's block decoders). One token (decode): two
 * matrix-vector kernels; without them a quantized decode step ran every expert's rows (E / k
 * times the expert bytes). Many tokens (prefill): the (token, slot) pairs sorted by expert on the
 * device, then one tiled product per expert over its pairs; without them prefill ran every
 * expert on every token (E / k times the work). The reference (CPU contexts) dequantises the
 * chosen rows on the host. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "ops/ops.h"
#include "ops/qlinear_moe.h"

typedef struct moe_params {
    uint32_t n_out, units, F, E, K, row_bytes, w_off, x_off, ids_off, wts_off, out_off, tpr;
} moe_params;

/* The prelude's key (no padding bytes): entry 0 gate_up, 1 down, 2 gate_up_grouped, 3 down_grouped. */
typedef struct moe_key {
    uint32_t type, entry, sg, wg;
} moe_key;

/* lib_rowsum.wgsl's row sum, FMT, WG and qlinear.wgsl's "decoders" section. */
static char *moe_prelude(void *arg)
{
    const moe_key *k = arg;
    const char *src = wgt_gpu_kernel_text("qlinear");
    size_t cap = (src ? strlen(src) : 0) + 8192;
    char *pre = src ? malloc(cap) : NULL;
    if (!pre) return NULL;
    pre[0] = 0;
    op_wgsl_row_subgroups(pre, cap, (int)k->sg);
    size_t used = strlen(pre);
    snprintf(pre + used, cap - used, "const FMT: u32 = %uu;\nconst WG: u32 = %uu;\n", k->type, k->wg);
    if (!op_wgsl_section(pre, cap, "qlinear", "decoders")) {
        free(pre);
        return NULL;
    }
    return pre;
}

/* The dtype a float format's weight is stored in (f32, f16, bf16), or WGT_U8 for block formats. */
static wgt_dtype moe_dtype(wgt_ftype type)
{
    return type == WGT_FTYPE_F32 ? WGT_F32 : type == WGT_FTYPE_F16 ? WGT_F16 : type == WGT_FTYPE_BF16 ? WGT_BF16 : WGT_U8;
}

/* A format the ops take: a block format the host dequantises, or f32 / f16 / bf16. */
static int moe_format(wgt_ftype type)
{
    return moe_dtype(type) != WGT_U8 || (wgt_ftype_block_elems(type) > 1 && wgt_ftype_can_dequantize(type));
}

/* Bytes per weight row. */
static int64_t moe_row_bytes(const wgt_tensor *w)
{
    return w->l.shape[1] * (int64_t)wgt_dtype_size(w->l.dtype);
}

/* The byte length of the binding a weight needs: its rows plus the word after the end (rd32 at an
 * unaligned last address reads it) plus the alignment slack of op_bind. */
static uint64_t moe_binding_bytes(wgt_context *ctx, const wgt_tensor *w)
{
    uint64_t align = wgt_gpu_limits(ctx)->min_storage_buffer_offset_alignment;
    return (uint64_t)w->l.shape[0] * (uint64_t)moe_row_bytes(w) + (align > 4 ? align : 4) + 8;
}

/* w: a contiguous weight of `cols` columns: u8 [rows, row_bytes] of whole blocks of type, or the
 * float format's dtype [rows, cols]. */
static int moe_weight_ok(const wgt_tensor *w, wgt_ftype type, int64_t rows, int64_t cols)
{
    if (!w || w->l.ndim != 2 || w->l.shape[0] != rows || !moe_format(type) || w->l.dtype != moe_dtype(type) ||
        w->l.strides[1] != 1 || w->l.strides[0] != w->l.shape[1])
        return 0;
    uint32_t be = wgt_ftype_block_elems(type), bb = wgt_ftype_block_bytes(type);
    return moe_dtype(type) != WGT_U8 ? w->l.shape[1] == cols : cols % be == 0 && w->l.shape[1] == cols / be * bb;
}

/* The kernel runs: a GPU context, a format with decoders (or f32 / f16 / bf16), 128+ invocations,
 * F a whole number of blocks (so an expert's columns start at a block), D of whole 32-element
 * units, weights within one binding and 32-bit offsets, Q4_K rows at whole words. */
static int moe_gpu_ok(wgt_context *ctx, wgt_ftype type, const wgt_tensor *w, int64_t F, int64_t D)
{
    const wgt_limits *lim = wgt_gpu_limits(ctx);
    uint64_t wb = moe_binding_bytes(ctx, w);
    return (wgt_qlinear_gpu_type(type) || moe_dtype(type) != WGT_U8) && op_workgroup_size(ctx) >= 128 &&
           lim->max_storage_buffers_per_shader_stage >= 5 && F % wgt_ftype_block_elems(type) == 0 && D % 32 == 0 &&
           wb <= UINT32_MAX && wb <= lim->max_storage_buffer_binding_size &&
           (type != WGT_FTYPE_Q4_K || w->l.offset % 4 == 0);
}

int wgt_moe_q_fits(wgt_context *ctx, const wgt_tensor *gu, wgt_ftype gu_type, const wgt_tensor *down,
                   wgt_ftype down_type, int64_t E, int64_t F)
{
    if (!ctx || !gu || !down || E < 1 || F < 1 || !moe_weight_ok(down, down_type, down->l.shape[0], E * F)) return 0;
    int64_t D = down->l.shape[0];
    if (!moe_weight_ok(gu, gu_type, 2 * E * F, D)) return 0;
    if (wgt_gpu_runs_reference(ctx)) return wgt_ftype_can_dequantize(gu_type) && wgt_ftype_can_dequantize(down_type);
    return moe_gpu_ok(ctx, gu_type, gu, F, D) && moe_gpu_ok(ctx, down_type, down, F, D);
}

/* ---- the reference: the chosen rows (or column spans) dequantised on the host ---------------- */

typedef struct moe_ref_arg {
    wgt_ftype type;
    int64_t E, F, K, D;
} moe_ref_arg;

static int64_t moe_expert(const wgt_cpu_tensor *ids, int64_t k, int64_t E)
{
    int32_t e = ((const int32_t *)ids->data)[ids->l.offset + k]; /* contiguous (moe_vec's ids) */
    return e < 0 || e >= E ? E - 1 : e; /* the kernel reads ids as u32 and clamps to E - 1 */
}

/* in: x [D] (contiguous f32), gu, ids; out: act [K F]. */
static wgt_status moe_gate_up_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    const moe_ref_arg *a = arg;
    const float *x = (const float *)in[0].data + in[0].l.offset;
    const uint8_t *w = (const uint8_t *)in[1].data + in[1].l.offset * (int64_t)wgt_dtype_size(in[1].l.dtype);
    int64_t rb = in[1].l.shape[1] * (int64_t)wgt_dtype_size(in[1].l.dtype);
    float *act = (float *)out[0].data + out[0].l.offset;
    float *g = malloc(2 * (size_t)a->D * sizeof *g);
    if (!g) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "moe_gate_up: no host memory for the reference");
    wgt_status st = WGT_OK;
    for (int64_t k = 0; k < a->K && !st; k++) {
        int64_t e = moe_expert(&in[2], k, a->E);
        for (int64_t j = 0; j < a->F && !st; j++) {
            st = wgt_dequantize(a->type, w + (e * a->F + j) * rb, g, a->D);
            if (!st) st = wgt_dequantize(a->type, w + (a->E * a->F + e * a->F + j) * rb, g + a->D, a->D);
            double gs = 0, us = 0;
            for (int64_t i = 0; i < a->D; i++) gs += (double)g[i] * x[i], us += (double)g[a->D + i] * x[i];
            act[k * a->F + j] = (float)(gs / (1 + exp(-gs)) * us);
        }
    }
    free(g);
    return st;
}

/* in: act [K F] (contiguous f32), down, ids, wts; out: y [D]. */
static wgt_status moe_down_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    const moe_ref_arg *a = arg;
    const float *act = (const float *)in[0].data + in[0].l.offset;
    const uint8_t *w = (const uint8_t *)in[1].data + in[1].l.offset * (int64_t)wgt_dtype_size(in[1].l.dtype);
    int64_t rb = in[1].l.shape[1] * (int64_t)wgt_dtype_size(in[1].l.dtype);
    const float *wts = (const float *)in[3].data + in[3].l.offset;
    float *y = (float *)out[0].data + out[0].l.offset;
    float *row = malloc((size_t)(a->E * a->F) * sizeof *row);
    if (!row) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "moe_down: no host memory for the reference");
    wgt_status st = WGT_OK;
    for (int64_t d = 0; d < a->D && !st; d++) {
        st = wgt_dequantize(a->type, w + d * rb, row, a->E * a->F);
        double s = 0;
        for (int64_t k = 0; k < a->K; k++) {
            const float *r = row + moe_expert(&in[2], k, a->E) * a->F;
            double sk = 0;
            for (int64_t j = 0; j < a->F; j++) sk += (double)r[j] * act[k * a->F + j];
            s += (double)wts[k] * sk;
        }
        y[d] = (float)s;
    }
    free(row);
    return st;
}

/* ---- the GPU path ----------------------------------------------------------------------------- */

static const char *const moe_entries[4] = {"gate_up", "down", "gate_up_grouped", "down_grouped"};

/* One dispatch of entry (moe_entries): x the f32 rows read (x or act), w the weight, ids the ids
 * (or the groups), wts NULL for the gate_up entries; L tokens (grouped). */
static wgt_status moe_gpu(wgt_context *ctx, int entry, wgt_ftype type, const wgt_tensor *x, const wgt_tensor *w,
                          const wgt_tensor *ids, const wgt_tensor *wts, int64_t E, int64_t F, int64_t K, int64_t D,
                          int64_t L, wgt_tensor *y)
{
    moe_key key = {(uint32_t)type, (uint32_t)entry, (uint32_t)op_row_subgroups(ctx), op_workgroup_size(ctx)};
    wgt_kernel *k;
    wgt_status st = wgt_gpu_kernel_keyed(ctx, "qlinear_moe", &key, sizeof key, moe_prelude, &key,
                                         moe_entries[entry], NULL, 0, &k);
    if (st) return st;
    wgt_binding b[5];
    int64_t base[5];
    if ((st = op_bind_all(x, &b[0], &base[0]))) return st;
    /* the weight's elements plus 4 bytes' worth after the end (rd32 at the last word reads the next) */
    int64_t wn = w->l.shape[0] * w->l.shape[1], esz = (int64_t)wgt_dtype_size(w->l.dtype);
    if ((st = op_bind(w, w->l.offset, w->l.offset + wn - 1 + (4 + esz - 1) / esz, &b[1], &base[1]))) return st;
    if ((st = op_bind_all(ids, &b[2], &base[2]))) return st;
    if (wts) {
        if ((st = op_bind_all(wts, &b[3], &base[3]))) return st;
    } else
        b[3] = b[2], base[3] = base[2];
    if ((st = op_bind_all(y, &b[4], &base[4]))) return st;
    moe_params p = {0};
    int down = entry & 1;
    p.n_out = (uint32_t)(down ? D : entry ? F : K * F);
    p.units = (uint32_t)((down ? F : D) / 32);
    p.F = (uint32_t)F, p.E = (uint32_t)E, p.K = (uint32_t)K, p.row_bytes = (uint32_t)moe_row_bytes(w);
    p.w_off = (uint32_t)((w->l.offset - base[1]) * esz);
    p.x_off = (uint32_t)((x->l.offset - base[0]) / 4);
    p.ids_off = (uint32_t)(ids->l.offset - base[2]);
    p.wts_off = wts ? (uint32_t)(wts->l.offset - base[3]) : 0;
    p.out_off = (uint32_t)(y->l.offset - base[4]);
    p.tpr = 32;
    uint32_t gx, gy, rpw = key.wg / 32;
    if (entry >= 2) { /* tiles of TL_R weight rows (gate_up: TL_R / 2 outputs) x TL_T pairs, per expert */
        uint32_t rows = down ? key.wg / 4 : key.wg / 8, pairs = key.wg / 8;
        return wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 5, (uint32_t)((p.n_out + rows - 1) / rows), (uint32_t)E,
                                (uint32_t)((L + pairs - 1) / pairs));
    }
    op_grid(ctx, ((uint64_t)p.n_out + rpw - 1) / rpw, &gx, &gy);
    return wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 5, gx, gy, 1);
}

/* ---- the ops ---------------------------------------------------------------------------------- */

/* t as a contiguous tensor (f32 starting at a vec4, or the i32 ids as they are) : a copy when not
 * so; *copy holds it. */
static wgt_status moe_vec(const wgt_tensor *t, wgt_tensor **copy, const wgt_tensor **use)
{
    *copy = NULL, *use = t;
    wgt_status st = WGT_OK;
    if (t->l.dtype == WGT_I32) {
        if (!wgt_layout_is_contiguous(&t->l)) st = wgt_tensor_copy(t, copy);
    } else if (t->l.dtype != WGT_F32) st = wgt_tensor_cast(t, WGT_F32, copy);
    else if (!wgt_layout_is_contiguous(&t->l) || t->l.offset % 4) st = wgt_tensor_copy(t, copy);
    if (*copy) *use = *copy;
    return st;
}

/* Shared checks: ids [K] (or [1, K]) i32 with K <= E, the weight's shape, the vector's length n. */
static wgt_status moe_check(wgt_context *ctx, const char *op, const wgt_tensor *v, int64_t n, const wgt_tensor *w,
                            wgt_ftype type, int64_t rows, int64_t cols, const wgt_tensor *ids, int64_t E, int64_t F,
                            int64_t *K)
{
    if (E < 1 || F < 1) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: %lld experts of %lld", op, (long long)E, (long long)F);
    *K = ids ? wgt_layout_numel(&ids->l) : 0;
    if (!ids || ids->l.dtype != WGT_I32 || *K < 1 || *K > E || ids->l.shape[ids->l.ndim - 1] != *K)
        return op_fail(ctx, WGT_ERR_SHAPE, "%s: ids must be an i32 [K] tensor of 1 to %lld expert numbers", op,
                       (long long)E);
    if (!op_is_float(v->l.dtype) || wgt_layout_numel(&v->l) != n)
        return op_fail(ctx, WGT_ERR_SHAPE, "%s: the input must be a float vector of %lld values", op, (long long)n);
    if (!moe_weight_ok(w, type, rows, cols))
        return op_fail(ctx, WGT_ERR_SHAPE,
                       "%s: the weight must be a contiguous [%lld, %lld columns] tensor: %s blocks as "
                       "wgt_qweight_upload makes (u8), or of the float format's dtype", op, (long long)rows, (long long)cols,
                       wgt_ftype_name(type) ? wgt_ftype_name(type) : "?");
    return WGT_OK;
}

wgt_status wgt_moe_gate_up(const wgt_tensor *x, const wgt_tensor *gu, wgt_ftype type, int64_t E, int64_t F,
                           const wgt_tensor *ids, wgt_tensor **act)
{
    OP_BEGIN(x, act);
    if (!gu || !ids) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "moe_gate_up: NULL argument");
    const wgt_tensor *ins[3] = {x, gu, ids};
    wgt_status st = op_same_context("moe_gate_up", ins, 3);
    if (st) return st;
    if (!moe_format(type))
        return op_fail(ctx, WGT_ERR_DTYPE, "moe_gate_up: %s is not a block format or f32 / f16 / bf16",
                       wgt_ftype_name(type) ? wgt_ftype_name(type) : "an unknown type");
    int64_t D = wgt_layout_numel(&x->l), K;
    if ((st = moe_check(ctx, "moe_gate_up", x, D, gu, type, 2 * E * F, D, ids, E, F, &K))) return st;
    int64_t shape[1] = {K * F};
    wgt_tensor *y, *xc = NULL, *ic = NULL;
    const wgt_tensor *xv, *iv;
    if ((st = wgt_tensor_new(ctx, WGT_F32, 1, shape, &y))) return st;
    if (!(st = moe_vec(x, &xc, &xv)) && !(st = moe_vec(ids, &ic, &iv))) {
        if (op_use_gpu(ctx, "moe_gate_up", WGT_U8, moe_gpu_ok(ctx, type, gu, F, D)))
            st = moe_gpu(ctx, 0, type, xv, gu, iv, NULL, E, F, K, D, 1, y);
        else if (!(st = op_fallback_status(ctx, "moe_gate_up", WGT_U8, moe_gpu_ok(ctx, type, gu, F, D)))) {
            moe_ref_arg a = {type, E, F, K, D};
            const wgt_tensor *rins[3] = {xv, gu, iv};
            st = op_reference(ctx, moe_gate_up_ref, &a, rins, 3, &y, 1);
        }
    }
    wgt_tensor_free(xc);
    wgt_tensor_free(ic);
    return op_finish(st, y, act);
}

wgt_status wgt_moe_down(const wgt_tensor *act, const wgt_tensor *down, wgt_ftype type, int64_t E, int64_t F,
                        const wgt_tensor *ids, const wgt_tensor *wts, wgt_tensor **out)
{
    OP_BEGIN(act, out);
    if (!down || !ids || !wts) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "moe_down: NULL argument");
    const wgt_tensor *ins[4] = {act, down, ids, wts};
    wgt_status st = op_same_context("moe_down", ins, 4);
    if (st) return st;
    if (!moe_format(type))
        return op_fail(ctx, WGT_ERR_DTYPE, "moe_down: %s is not a block format or f32 / f16 / bf16",
                       wgt_ftype_name(type) ? wgt_ftype_name(type) : "an unknown type");
    int64_t K = ids->l.ndim ? wgt_layout_numel(&ids->l) : 0;
    int64_t D = down->l.ndim == 2 ? down->l.shape[0] : 0;
    if ((st = moe_check(ctx, "moe_down", act, K * F, down, type, D, E * F, ids, E, F, &K))) return st;
    if (wts->l.dtype != WGT_F32 || wgt_layout_numel(&wts->l) != K)
        return op_fail(ctx, WGT_ERR_SHAPE, "moe_down: wts must be an f32 [%lld] tensor (one weight per id)", (long long)K);
    int64_t shape[2] = {1, D};
    wgt_tensor *y, *ac = NULL, *wc = NULL, *ic = NULL;
    const wgt_tensor *av, *wv, *iv;
    if ((st = wgt_tensor_new(ctx, WGT_F32, 2, shape, &y))) return st;
    if (!(st = moe_vec(act, &ac, &av)) && !(st = moe_vec(wts, &wc, &wv)) && !(st = moe_vec(ids, &ic, &iv))) {
        if (op_use_gpu(ctx, "moe_down", WGT_U8, moe_gpu_ok(ctx, type, down, F, D)))
            st = moe_gpu(ctx, 1, type, av, down, iv, wv, E, F, K, D, 1, y);
        else if (!(st = op_fallback_status(ctx, "moe_down", WGT_U8, moe_gpu_ok(ctx, type, down, F, D)))) {
            moe_ref_arg a = {type, E, F, K, D};
            const wgt_tensor *rins[4] = {av, down, iv, wv};
            st = op_reference(ctx, moe_down_ref, &a, rins, 4, &y, 1);
        }
    }
    wgt_tensor_free(ac);
    wgt_tensor_free(wc);
    wgt_tensor_free(ic);
    return op_finish(st, y, out);
}

/* ---- many tokens: grouped by expert ------------------------------------------------------------ */

wgt_status wgt_moe_groups(const wgt_tensor *ids, int64_t E, wgt_tensor **groups)
{
    OP_BEGIN(ids, groups);
    if (ids->l.dtype != WGT_I32 || ids->l.ndim != 2 || E < 1 || E >= INT32_MAX)
        return op_fail(ctx, WGT_ERR_SHAPE, "moe_groups: ids must be an i32 [L, K] tensor (and E from 1 to 2^31 - 2)");
    int64_t n[1] = {wgt_layout_numel(&ids->l)};
    wgt_tensor *flat = NULL, *sorted = NULL, *order = NULL, *ar = NULL, *off = NULL;
    wgt_status st = wgt_tensor_reshape(ids, 1, n, &flat);
    if (!st) st = wgt_sort(flat, 0, 0, &sorted, &order); /* stable: a token's pairs stay in order */
    if (!st) st = wgt_arange(ctx, 0, (double)(E + 1), 1, WGT_I32, &ar);
    if (!st) st = wgt_searchsorted(sorted, ar, 0, NULL, &off); /* off[e]: the first pair of expert >= e */
    if (!st) {
        const wgt_tensor *parts[2] = {off, order};
        st = wgt_cat(parts, 2, 0, groups);
    }
    wgt_tensor_free(flat), wgt_tensor_free(sorted), wgt_tensor_free(order), wgt_tensor_free(ar), wgt_tensor_free(off);
    return st;
}

/* The grouped kernels run: moe_gpu_ok's conditions, 6 storage bindings' worth of limits left
 * aside, the per-pair rows within a binding and E within a grid dimension. */
static int moe_grouped_ok(wgt_context *ctx, wgt_ftype type, const wgt_tensor *w, int64_t E, int64_t F, int64_t D,
                          int64_t L, int64_t K)
{
    const wgt_limits *lim = wgt_gpu_limits(ctx);
    uint64_t big = (uint64_t)(L * K) * (uint64_t)(F > D ? F : D) * 4 + 256, maxd = lim->max_compute_workgroups_per_dimension;
    return moe_gpu_ok(ctx, type, w, F, D) && big <= lim->max_storage_buffer_binding_size && big <= UINT32_MAX &&
           (uint64_t)E <= (maxd ? maxd : 65535);
}

int wgt_moe_q_grouped_fits(wgt_context *ctx, const wgt_tensor *gu, wgt_ftype gu_type, const wgt_tensor *down,
                           wgt_ftype down_type, int64_t E, int64_t F, int64_t L, int64_t K)
{
    if (!wgt_moe_q_fits(ctx, gu, gu_type, down, down_type, E, F) || L < 1 || K < 1 || K > E) return 0;
    if (wgt_gpu_runs_reference(ctx)) return 1;
    int64_t D = down->l.shape[0];
    return moe_grouped_ok(ctx, gu_type, gu, E, F, D, L, K) && moe_grouped_ok(ctx, down_type, down, E, F, D, L, K);
}

/* The pairs of expert e in the groups: positions off[e] .. off[e + 1] of order. */
typedef struct moe_group_arg {
    wgt_ftype type;
    int64_t E, F, K, D, LK;
} moe_group_arg;

/* in: x [L, D] (contiguous f32), gu, groups; out: act [L K, F]. */
static wgt_status moe_gate_up_grouped_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    const moe_group_arg *a = arg;
    const float *x = (const float *)in[0].data + in[0].l.offset;
    const uint8_t *w = (const uint8_t *)in[1].data + in[1].l.offset * (int64_t)wgt_dtype_size(in[1].l.dtype);
    const int32_t *grp = (const int32_t *)in[2].data + in[2].l.offset, *order = grp + a->E + 1;
    int64_t rb = in[1].l.shape[1] * (int64_t)wgt_dtype_size(in[1].l.dtype);
    float *act = (float *)out[0].data + out[0].l.offset;
    float *g = malloc(2 * (size_t)a->D * sizeof *g);
    if (!g) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "moe_gate_up_grouped: no host memory for the reference");
    wgt_status st = WGT_OK;
    for (int64_t e = 0; e < a->E && !st; e++)
        for (int64_t j = 0; j < a->F && !st; j++) {
            st = wgt_dequantize(a->type, w + (e * a->F + j) * rb, g, a->D);
            if (!st) st = wgt_dequantize(a->type, w + (a->E * a->F + e * a->F + j) * rb, g + a->D, a->D);
            for (int64_t i = grp[e]; !st && i < grp[e + 1]; i++) {
                int64_t q = order[i];
                const float *xr = x + q / a->K * a->D;
                double gs = 0, us = 0;
                for (int64_t c = 0; c < a->D; c++) gs += (double)g[c] * xr[c], us += (double)g[a->D + c] * xr[c];
                act[q * a->F + j] = (float)(gs / (1 + exp(-gs)) * us);
            }
        }
    free(g);
    return st;
}

/* in: act [L K, F] (contiguous f32), down, groups, wts [L K]; out: y [L, D] (the sum over slots). */
static wgt_status moe_down_grouped_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    const moe_group_arg *a = arg;
    const float *act = (const float *)in[0].data + in[0].l.offset;
    const uint8_t *w = (const uint8_t *)in[1].data + in[1].l.offset * (int64_t)wgt_dtype_size(in[1].l.dtype);
    const int32_t *grp = (const int32_t *)in[2].data + in[2].l.offset, *order = grp + a->E + 1;
    const float *wts = (const float *)in[3].data + in[3].l.offset;
    int64_t rb = in[1].l.shape[1] * (int64_t)wgt_dtype_size(in[1].l.dtype);
    float *y = (float *)out[0].data + out[0].l.offset;
    double *acc = calloc((size_t)(a->LK / a->K * a->D), sizeof *acc);
    float *row = malloc((size_t)(a->E * a->F) * sizeof *row);
    wgt_status st = acc && row ? WGT_OK : wgt_error(WGT_ERR_OUT_OF_MEMORY, "moe_down_grouped: no host memory");
    for (int64_t d = 0; d < a->D && !st; d++) {
        st = wgt_dequantize(a->type, w + d * rb, row, a->E * a->F);
        for (int64_t e = 0; e < a->E && !st; e++)
            for (int64_t i = grp[e]; i < grp[e + 1]; i++) {
                int64_t q = order[i];
                double s = 0;
                for (int64_t j = 0; j < a->F; j++) s += (double)row[e * a->F + j] * act[q * a->F + j];
                acc[q / a->K * a->D + d] += (double)wts[q] * s;
            }
    }
    for (int64_t i = 0; !st && i < a->LK / a->K * a->D; i++) y[i] = (float)acc[i];
    free(acc);
    free(row);
    return st;
}

/* groups: an i32 [E + 1 + L K] tensor (wgt_moe_groups'). */
static wgt_status moe_check_groups(wgt_context *ctx, const char *op, const wgt_tensor *groups, int64_t E, int64_t LK)
{
    if (!groups || groups->l.dtype != WGT_I32 || wgt_layout_numel(&groups->l) != E + 1 + LK ||
        !wgt_layout_is_contiguous(&groups->l))
        return op_fail(ctx, WGT_ERR_SHAPE, "%s: groups must be the contiguous i32 [%lld] tensor wgt_moe_groups makes", op,
                       (long long)(E + 1 + LK));
    return WGT_OK;
}

wgt_status wgt_moe_gate_up_grouped(const wgt_tensor *x, const wgt_tensor *gu, wgt_ftype type, int64_t E, int64_t F,
                                   int64_t K, const wgt_tensor *groups, wgt_tensor **act)
{
    OP_BEGIN(x, act);
    if (!gu || !groups) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "moe_gate_up_grouped: NULL argument");
    const wgt_tensor *ins[3] = {x, gu, groups};
    wgt_status st = op_same_context("moe_gate_up_grouped", ins, 3);
    if (st) return st;
    if (!moe_format(type))
        return op_fail(ctx, WGT_ERR_DTYPE, "moe_gate_up_grouped: %s is not a block format or f32 / f16 / bf16",
                       wgt_ftype_name(type) ? wgt_ftype_name(type) : "an unknown type");
    int64_t D = x->l.ndim == 2 ? x->l.shape[1] : 0, L = x->l.ndim == 2 ? x->l.shape[0] : 0;
    if (!op_is_float(x->l.dtype) || D < 1 || L < 1 || K < 1 || K > E || F < 1)
        return op_fail(ctx, WGT_ERR_SHAPE, "moe_gate_up_grouped: x must be a float [L, D] tensor and 1 <= K <= E");
    if (!moe_weight_ok(gu, type, 2 * E * F, D))
        return op_fail(ctx, WGT_ERR_SHAPE, "moe_gate_up_grouped: the weight must be a contiguous u8 [%lld, %lld columns] "
                       "tensor of whole blocks", (long long)(2 * E * F), (long long)D);
    if ((st = moe_check_groups(ctx, "moe_gate_up_grouped", groups, E, L * K))) return st;
    int64_t shape[2] = {L * K, F};
    wgt_tensor *y, *xc = NULL;
    const wgt_tensor *xv;
    if ((st = wgt_tensor_new(ctx, WGT_F32, 2, shape, &y))) return st;
    int gpu_ok = moe_grouped_ok(ctx, type, gu, E, F, D, L, K);
    if (!(st = moe_vec(x, &xc, &xv))) {
        if (op_use_gpu(ctx, "moe_gate_up_grouped", WGT_U8, gpu_ok))
            st = moe_gpu(ctx, 2, type, xv, gu, groups, NULL, E, F, K, D, L, y);
        else if (!(st = op_fallback_status(ctx, "moe_gate_up_grouped", WGT_U8, gpu_ok))) {
            moe_group_arg a = {type, E, F, K, D, L * K};
            const wgt_tensor *rins[3] = {xv, gu, groups};
            st = op_reference(ctx, moe_gate_up_grouped_ref, &a, rins, 3, &y, 1);
        }
    }
    wgt_tensor_free(xc);
    return op_finish(st, y, act);
}

wgt_status wgt_moe_down_grouped(const wgt_tensor *act, const wgt_tensor *down, wgt_ftype type, int64_t E, int64_t F,
                                int64_t K, const wgt_tensor *groups, const wgt_tensor *wts, wgt_tensor **out)
{
    OP_BEGIN(act, out);
    if (!down || !groups || !wts) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "moe_down_grouped: NULL argument");
    const wgt_tensor *ins[4] = {act, down, groups, wts};
    wgt_status st = op_same_context("moe_down_grouped", ins, 4);
    if (st) return st;
    if (!moe_format(type))
        return op_fail(ctx, WGT_ERR_DTYPE, "moe_down_grouped: %s is not a block format or f32 / f16 / bf16",
                       wgt_ftype_name(type) ? wgt_ftype_name(type) : "an unknown type");
    int64_t LK = act->l.ndim == 2 ? act->l.shape[0] : 0, D = down->l.ndim == 2 ? down->l.shape[0] : 0;
    if (!op_is_float(act->l.dtype) || K < 1 || K > E || F < 1 || LK < 1 || LK % K || act->l.shape[1] != F)
        return op_fail(ctx, WGT_ERR_SHAPE, "moe_down_grouped: act must be a float [L K, F] tensor and 1 <= K <= E");
    if (!moe_weight_ok(down, type, D, E * F))
        return op_fail(ctx, WGT_ERR_SHAPE, "moe_down_grouped: the weight must be a contiguous u8 [D, %lld columns] "
                       "tensor of whole blocks", (long long)(E * F));
    if ((st = moe_check_groups(ctx, "moe_down_grouped", groups, E, LK))) return st;
    if (wts->l.dtype != WGT_F32 || wgt_layout_numel(&wts->l) != LK)
        return op_fail(ctx, WGT_ERR_SHAPE, "moe_down_grouped: wts must be an f32 [L, K] tensor");
    int64_t L = LK / K;
    wgt_tensor *y = NULL, *ac = NULL, *wc = NULL;
    const wgt_tensor *av, *wv;
    int gpu_ok = moe_grouped_ok(ctx, type, down, E, F, D, L, K);
    if (!(st = moe_vec(act, &ac, &av)) && !(st = moe_vec(wts, &wc, &wv))) {
        if (op_use_gpu(ctx, "moe_down_grouped", WGT_U8, gpu_ok)) {
            /* one row per pair, then the sum over each token's K slots */
            wgt_tensor *yp = NULL, *yp3 = NULL;
            int64_t ps[2] = {LK, D}, s3[3] = {L, K, D};
            st = wgt_tensor_new(ctx, WGT_F32, 2, ps, &yp);
            if (!st) st = moe_gpu(ctx, 3, type, av, down, groups, wv, E, F, K, D, L, yp);
            if (!st) st = wgt_tensor_reshape(yp, 3, s3, &yp3);
            if (!st) st = wgt_reduce(WGT_REDUCE_SUM, yp3, 1u << 1, 0, 0, &y);
            wgt_tensor_free(yp3);
            wgt_tensor_free(yp);
        } else if (!(st = op_fallback_status(ctx, "moe_down_grouped", WGT_U8, gpu_ok))) {
            int64_t shape[2] = {L, D};
            st = wgt_tensor_new(ctx, WGT_F32, 2, shape, &y);
            moe_group_arg a = {type, E, F, K, D, LK};
            const wgt_tensor *rins[4] = {av, down, groups, wv};
            if (!st) st = op_reference(ctx, moe_down_grouped_ref, &a, rins, 4, &y, 1);
        }
    }
    wgt_tensor_free(ac);
    wgt_tensor_free(wc);
    return op_finish(st, y, out);
}
