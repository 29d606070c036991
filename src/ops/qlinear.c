/* Quantized linear layers: weights stay in their GGUF block format on the device (a U8 tensor of
 * the raw blocks) and are dequantised inside the matmul kernels (src/kernels/qlinear.wgsl). One
 * pipeline per format and entry point: `gemv` for a few tokens (decode), `tiled` for many
 * (prefill); 9 .. 64 tokens take src/ops/matmul_rows.c's kernel (its block decoders are these).
 * Formats without a kernel, and CPU contexts, dequantise the rows on the host with
 * wgt_dequantize and run wgt_cpu_linear. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "ops/fused.h"
#include "ops/matmul_tcq.h"
#include "ops/ops.h"
#include "tensor/record.h"

/* Up to this many tokens the gemv kernel runs (one pass over the weights per 4 tokens); above it
 * the tiled kernel (one pass per 32 tokens, but less bandwidth per pass). */
#define QL_GEMV_MAX_TOKENS 8
/* From this many tokens (prefill) the subgroup-matrix tiles of src/kernels/matmul_tc.wgsl take the
 * product where the device has them (op_matmul_tc_quant: the blocks dequantised into f16 tiles). */
#define QL_TC_MIN_TOKENS 32

typedef struct ql_params {
    uint32_t rows, cols, tokens, row_bytes;
    uint32_t w_off, x_off, out_off, bias_off;
    uint32_t has_bias, out_stride, units, tpr; /* tpr: qlinear.wgsl's GV_TPR */
} ql_params;

int wgt_qlinear_gpu_type(wgt_ftype type)
{
    return type == WGT_FTYPE_Q8_0 || type == WGT_FTYPE_Q4_0 || type == WGT_FTYPE_Q4_K || type == WGT_FTYPE_Q6_K;
}

/* A block format wgt_qlinear accepts (any that the host can dequantise; the GPU runs four). */
static int ql_block_format(wgt_ftype type)
{
    return wgt_ftype_block_elems(type) > 1 && wgt_ftype_can_dequantize(type);
}

wgt_status wgt_qweight_upload(wgt_context *ctx, wgt_ftype type, int64_t rows, int64_t cols, const void *blocks,
                              wgt_tensor **out)
{
    if (!ctx || !blocks || !out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "qweight_upload: NULL argument");
    *out = NULL;
    wgt_status st = wgt_ctx_check(ctx);
    if (st) return st;
    const char *name = wgt_ftype_name(type);
    if (!ql_block_format(type))
        return wgt_ctx_error(ctx, WGT_ERR_DTYPE, "qweight_upload: %s is not a quantized block format wgt can read",
                             name ? name : "an unknown type");
    uint32_t be = wgt_ftype_block_elems(type), bb = wgt_ftype_block_bytes(type);
    if (rows < 1 || cols < 1)
        return wgt_ctx_error(ctx, WGT_ERR_SHAPE, "qweight_upload: a [%lld, %lld] weight is empty", (long long)rows,
                             (long long)cols);
    if (cols % be)
        return wgt_ctx_error(ctx, WGT_ERR_SHAPE,
                             "qweight_upload: %s rows hold whole blocks of %u elements, but a row has %lld columns",
                             name, be, (long long)cols);
    int64_t row_bytes = cols / be * bb;
    if (rows > INT64_MAX / row_bytes)
        return wgt_ctx_error(ctx, WGT_ERR_LIMIT, "qweight_upload: a [%lld, %lld] weight overflows", (long long)rows,
                             (long long)cols);
    int64_t shape[2] = {rows, row_bytes};
    return wgt_tensor_from_host(ctx, WGT_U8, 2, shape, blocks, out);
}

/* ---- the reference ---------------------------------------------------------------------------- */

typedef struct ql_ref_arg {
    wgt_ftype type;
    int64_t rows, cols, row_bytes;
} ql_ref_arg;

/* in: x, w (U8 blocks), bias (data NULL when absent); out: y. */
static wgt_status ql_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    const ql_ref_arg *a = arg;
    float *wf = malloc((size_t)a->rows * (size_t)a->cols * sizeof(float));
    if (!wf) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "qlinear: no host memory for the dequantised reference weights");
    const uint8_t *base = (const uint8_t *)in[1].data + in[1].l.offset;
    wgt_status st = WGT_OK;
    for (int64_t r = 0; r < a->rows && !st; r++)
        st = wgt_dequantize(a->type, base + r * in[1].l.strides[0], wf + r * a->cols, a->cols);
    if (!st) {
        int64_t shape[2] = {a->rows, a->cols};
        wgt_cpu_tensor wt = wgt_cpu_tensor_make(wf, WGT_F32, 2, shape);
        st = wgt_cpu_linear(&in[0], &wt, in[2].data ? &in[2] : NULL, &out[0]);
    }
    free(wf);
    return st;
}

/* ---- the GPU path ----------------------------------------------------------------------------- */

/* The subgroup size qlinear_fused.wgsl sums with: subgroup sums need a known, fixed size of at
 * most 32 (the invocations of one row); 1 for none. */
static uint32_t ql_subgroup(wgt_context *ctx)
{
    const wgt_limits *lim = wgt_gpu_limits(ctx);
    if (wgt_gpu_has_subgroups(ctx) && lim->subgroup_min_size == lim->subgroup_max_size && lim->subgroup_min_size >= 2 &&
        lim->subgroup_min_size <= 32)
        return lim->subgroup_min_size;
    return 1;
}

/* The prelude's key (no padding bytes): built once per key, not on every call. sg: gemv's
 * op_row_subgroups (0 for tiled). */
typedef struct ql_key {
    uint32_t type, gemv, sg, wg;
} ql_key;

/* lib_rowsum.wgsl's row sum (gemv's; tiled leaves it unused), FMT and WG. */
static char *ql_prelude(void *arg)
{
    const ql_key *k = arg;
    size_t cap = 4096;
    char *pre = malloc(cap);
    if (!pre) return NULL;
    pre[0] = 0;
    op_wgsl_row_subgroups(pre, cap, (int)k->sg);
    size_t used = strlen(pre);
    snprintf(pre + used, cap - used, "const FMT: u32 = %du;\nconst WG: u32 = %uu;\n", (int)k->type, k->wg);
    return pre;
}

static wgt_status ql_kernel(wgt_context *ctx, wgt_ftype type, int gemv, wgt_kernel **k)
{
    /* the workgroup size (256, or 128 in compatibility mode) sets the tiles: part of the key */
    ql_key key = {(uint32_t)type, (uint32_t)gemv, gemv ? (uint32_t)op_row_subgroups(ctx) : 0, op_workgroup_size(ctx)};
    return wgt_gpu_kernel_keyed(ctx, "qlinear", &key, sizeof key, ql_prelude, &key, gemv ? "gemv" : "tiled", NULL, 0, k);
}

/* x [tokens, cols] f32 contiguous with x->l.offset % 4 == 0; bias [rows] f32 contiguous or NULL;
 * y [tokens, rows] f32 new. Splits tokens and weight rows so each binding fits. */
static wgt_status ql_gpu(wgt_context *ctx, wgt_ftype type, const wgt_tensor *x, const wgt_tensor *w,
                         const wgt_tensor *bias, int64_t tokens, int64_t rows, int64_t cols, wgt_tensor *y)
{
    if (tokens == 0) return WGT_OK;
    int gemv = tokens <= QL_GEMV_MAX_TOKENS, few = op_rows_take(ctx, tokens, QL_GEMV_MAX_TOKENS + 1);
    wgt_kernel *k = NULL;
    wgt_status st = few ? WGT_OK : ql_kernel(ctx, type, gemv, &k);
    if (st) return st;
    uint64_t limit = wgt_gpu_limits(ctx)->max_storage_buffer_binding_size;
    uint64_t align = wgt_gpu_limits(ctx)->min_storage_buffer_offset_alignment;
    if (align < 4) align = 4;
    int64_t row_bytes = w->l.shape[1];
    int64_t slack = (int64_t)align + 8;
    if ((uint64_t)(row_bytes + slack) > limit || (uint64_t)(cols * 4 + slack) > limit ||
        (uint64_t)(rows * 4 + slack) > limit)
        return op_fail(ctx, WGT_ERR_LIMIT, "qlinear: one row of a [%lld, %lld] weight does not fit a storage binding",
                       (long long)rows, (long long)cols);
    int64_t rows_per = (int64_t)((limit - slack) / (uint64_t)row_bytes);
    int64_t tok_per = (int64_t)((limit - slack) / (uint64_t)(cols * 4 > rows * 4 ? cols * 4 : rows * 4));
    if (cols / 32 > UINT32_MAX || row_bytes * rows_per > UINT32_MAX)
        return op_fail(ctx, WGT_ERR_LIMIT, "qlinear: a [%lld, %lld] weight is past the kernel's 32-bit indices",
                       (long long)rows, (long long)cols);
    for (int64_t t0 = 0; t0 < tokens; t0 += tok_per) {
        int64_t t1 = t0 + tok_per < tokens ? t0 + tok_per : tokens;
        wgt_binding b[4];
        int64_t base, xb, ob;
        int64_t x0 = x->l.offset + t0 * cols;
        if ((st = op_bind(x, x0, x0 + (t1 - t0) * cols - 1, &b[0], &xb))) return st;
        int64_t o0 = t0 * rows;
        if ((st = op_bind(y, o0, o0 + (t1 - t0) * rows - 1, &b[3], &ob))) return st;
        for (int64_t r0 = 0; r0 < rows; r0 += rows_per) {
            int64_t r1 = r0 + rows_per < rows ? r0 + rows_per : rows;
            ql_params p;
            memset(&p, 0, sizeof p);
            p.rows = (uint32_t)(r1 - r0);
            p.cols = (uint32_t)cols;
            p.tokens = (uint32_t)(t1 - t0);
            p.row_bytes = (uint32_t)row_bytes;
            p.units = (uint32_t)(cols / 32);
            p.out_stride = (uint32_t)rows;
            p.tpr = 32;
            p.x_off = (uint32_t)((x0 - xb) / 4);
            p.out_off = (uint32_t)(o0 - ob + r0);
            /* the w binding: the chunk's bytes, from an aligned offset, plus the word after the end
             * (rd32 at an unaligned last address reads it) when the buffer has one */
            int64_t wlo = w->l.offset + r0 * row_bytes;
            if ((st = op_bind(w, wlo, w->l.offset + r1 * row_bytes + 3, &b[1], &base))) return st;
            p.w_off = (uint32_t)(wlo - base);
            if (bias) {
                if ((st = op_bind(bias, bias->l.offset + r0, bias->l.offset + r1 - 1, &b[2], &base))) return st;
                p.bias_off = (uint32_t)(bias->l.offset + r0 - base);
                p.has_bias = 1;
            } else
                b[2] = b[0];
            if (few) {
                op_rows_params r = {p.tokens, p.rows, p.cols, 0, p.x_off, p.cols / 4, p.w_off, p.row_bytes,
                                    p.bias_off, 0, 1, p.has_bias, 1, 1, p.out_off, p.out_stride, 0, {0}};
                if ((st = op_rows_run(ctx, WGT_F32, WGT_U8, type, WGT_F32, &r, b))) return st;
                continue;
            }
            /* rows and tokens per workgroup as src/kernels/qlinear.wgsl sets them from WG */
            uint32_t gx, gy, gz, wg = op_workgroup_size(ctx);
            if (gemv) {
                op_grid(ctx, ((uint64_t)(r1 - r0) + wg / 32 - 1) / (wg / 32), &gx, &gy);
                gz = (uint32_t)((t1 - t0 + 3) / 4);
            } else {
                op_grid(ctx, ((uint64_t)(r1 - r0) + wg / 4 - 1) / (wg / 4), &gx, &gy);
                gz = (uint32_t)((t1 - t0 + wg / 8 - 1) / (wg / 8));
            }
            /* the chunk's weight blocks, x and out once (WGT_PROFILE=1) */
            wgt_gpu_cost(ctx, (uint64_t)p.rows * p.row_bytes + (uint64_t)p.tokens * p.cols * 4 + (uint64_t)p.tokens * p.rows * 4,
                         2.0 * p.tokens * (double)p.rows * p.cols);
            if ((st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 4, gx, gy, gz))) return st;
        }
    }
    return WGT_OK;
}

/* ---- the op ----------------------------------------------------------------------------------- */

/* w: u8 [rows, row_bytes] of whole blocks of type, rows contiguous; *rows, *cols its shape as a matrix. */
static wgt_status ql_check_weight(wgt_context *ctx, const char *op, const wgt_tensor *w, wgt_ftype type, int64_t *rows,
                                  int64_t *cols)
{
    const char *tname = wgt_ftype_name(type);
    if (!ql_block_format(type))
        return op_fail(ctx, WGT_ERR_DTYPE, "%s: %s is not a quantized block format", op, tname ? tname : "unknown type");
    uint32_t be = wgt_ftype_block_elems(type), bb = wgt_ftype_block_bytes(type);
    if (w->l.dtype != WGT_U8 || w->l.ndim != 2 || w->l.shape[1] % bb || w->l.strides[1] != 1 ||
        w->l.strides[0] != w->l.shape[1])
        return op_fail(ctx, WGT_ERR_SHAPE,
                       "%s: the weight must be a contiguous u8 [rows, row_bytes] tensor of whole %s blocks (%u "
                       "bytes each), as wgt_qweight_upload makes", op, tname, bb);
    *rows = w->l.shape[0], *cols = w->l.shape[1] / bb * be;
    return WGT_OK;
}

static wgt_status qlinear_unrecorded(const wgt_tensor *x, const wgt_tensor *w, wgt_ftype type, const wgt_tensor *bias,
                                     wgt_tensor **out)
{
    OP_BEGIN(x, out);
    const wgt_tensor *ins[3] = {x, w, bias ? bias : x};
    wgt_status st = op_same_context("qlinear", ins, 3);
    if (st) return st;
    const char *tname = wgt_ftype_name(type);
    int64_t rows, cols;
    if ((st = ql_check_weight(ctx, "qlinear", w, type, &rows, &cols))) return st;
    if (!op_is_float(x->l.dtype))
        return op_fail(ctx, WGT_ERR_DTYPE, "qlinear: x must be f32, f16 or bf16, not %s", wgt_dtype_name(x->l.dtype));
    if (x->l.ndim < 1 || x->l.shape[x->l.ndim - 1] != cols)
        return op_fail(ctx, WGT_ERR_SHAPE, "qlinear: x's last dim (%lld) must equal the weight's columns (%lld)",
                       x->l.ndim ? (long long)x->l.shape[x->l.ndim - 1] : 0LL, (long long)cols);
    if (bias && (bias->l.ndim != 1 || bias->l.shape[0] != rows || !op_is_float(bias->l.dtype)))
        return op_fail(ctx, WGT_ERR_SHAPE, "qlinear: the bias must be a float [%lld] tensor", (long long)rows);
    int64_t shape[WGT_MAX_DIMS];
    memcpy(shape, x->l.shape, sizeof(int64_t) * (size_t)x->l.ndim);
    shape[x->l.ndim - 1] = rows;
    wgt_tensor *y;
    if ((st = wgt_tensor_new(ctx, WGT_F32, x->l.ndim, shape, &y))) return st;
    int64_t tokens = wgt_layout_numel(&x->l) / (cols ? cols : 1);
    char opname[32];
    snprintf(opname, sizeof opname, "qlinear(%s)", tname);
    /* the kernels' tiles need 128 invocations per workgroup, WebGPU's lowest limit */
    int gpu_ok = wgt_qlinear_gpu_type(type) && op_workgroup_size(ctx) >= 128;
    if (op_use_gpu(ctx, opname, WGT_U8, gpu_ok)) {
        /* the kernel reads x as contiguous f32 vec4s and bias as contiguous f32: copy when not so
         * (both are small next to the weight) */
        wgt_tensor *xc = NULL, *bc = NULL;
        if (x->l.dtype != WGT_F32) st = wgt_tensor_cast(x, WGT_F32, &xc);
        else if (!wgt_layout_is_contiguous(&x->l) || x->l.offset % 4) st = wgt_tensor_copy(x, &xc);
        if (!st && bias && (bias->l.dtype != WGT_F32 || !wgt_layout_is_contiguous(&bias->l)))
            st = wgt_tensor_cast(bias, WGT_F32, &bc);
        /* the Q4_K kernel reads whole words: its rows must start at multiples of 4 bytes (always
         * so for uploaded weights and their row narrows) */
        wgt_tensor *wc = NULL;
        if (!st && type == WGT_FTYPE_Q4_K && w->l.offset % 4) st = wgt_tensor_copy(w, &wc);
        int done = 0;
        /* prefill on the tensor cores (matmul_tcq.c: Q8_0 / Q4_0 blocks dequantised into f16 tiles) */
        if (!st && tokens > QL_GEMV_MAX_TOKENS && !op_rows_take(ctx, tokens, QL_GEMV_MAX_TOKENS + 1))
            st = op_matmul_tcq(ctx, type, xc ? xc : x, wc ? wc : w, bc ? bc : bias, tokens, rows, cols, y, &done);
        if (!st && !done && tokens >= QL_TC_MIN_TOKENS && !op_rows_take(ctx, tokens, QL_GEMV_MAX_TOKENS + 1))
            st = op_matmul_tc_quant(ctx, (int)type, xc ? xc : x, wc ? wc : w, bc ? bc : bias, tokens, rows, cols, y,
                                    &done);
        if (!st && !done)
            st = ql_gpu(ctx, type, xc ? xc : x, wc ? wc : w, bc ? bc : bias, tokens, rows, cols, y);
        wgt_tensor_free(wc);
        wgt_tensor_free(xc);
        wgt_tensor_free(bc);
    } else if (!(st = op_fallback_status(ctx, opname, WGT_U8, gpu_ok))) {
        ql_ref_arg a = {type, rows, cols, w->l.shape[1]};
        const wgt_tensor *rins[3] = {x, w, bias}; /* a NULL input reaches ql_ref with data NULL */
        st = op_reference(ctx, ql_ref, &a, rins, 3, &y, 1);
    }
    return op_finish(st, y, out);
}

/* no rule yet (the weight is not a float tensor): declared, so backward names it */
wgt_status wgt_qlinear(const wgt_tensor *x, const wgt_tensor *w, wgt_ftype type, const wgt_tensor *bias,
                       wgt_tensor **out)
{
    const wgt_tensor *ins[3] = {x, w, bias};
    return op_record_nondiff(qlinear_unrecorded(x, w, type, bias, out), "qlinear", ins, bias ? 3 : 2, out);
}

/* ---- one token with the norm or activation before it and the residual add after it ----------- */

typedef struct qf_params {
    uint32_t N, K, row_bytes, flags, w_off, off_x, off_g, off_b, off_r, off_o;
    float eps;
    uint32_t units, tpr; /* tpr: lanes a row, entry `blocks` only */
} qf_params;

/* WGT_QLINEAR_BLOCKS: Q8_0 and Q4_0 decode through qlinear_fused.wgsl's entry `blocks` (a lane per
 * whole block, read as aligned words; fewer rows a workgroup where the rows are few). "3", the
 * default: every prologue's input (x itself included) staged in workgroup memory, the entry `main`
 * where it does not fit; "1": only SwiGLU's staged; "2": none (each lane reads x from the binding);
 * "N:T" with T lanes a row (a power of two from 32 to the workgroup size); "0": the entry `main`
 * (8-element pieces, 32 lanes a row). H200, Qwen2.5-0.5B decode -p 16 -n 128, two alternated
 * rounds (bench/results/h200/decode_ab.txt): Q8_0 659.5 / 658.8 -> 772.7 / 771.1 tok/s with "3",
 * Q4_0 643.4 / 644.0 -> 812.7 / 813.6; "1" (541 / 560) and "2" (505 / 529) lost: a subgroup's lanes,
 * one block each, read x 128 bytes apart through the L1 cache (Llama-3.2-1B with "1": Q8_0 664.6 ->
 * 346.9, Q4_0 637.2 -> 380.0; "3" was not run on Llama). */
#define QB_DEFAULT "3"

/* The mode (1, 2, 3; 0 for the entry `main`) and in *lanes the lanes a row asked for (0: the op's). */
static int qb_setting(int *lanes)
{
    const char *e = getenv("WGT_QLINEAR_BLOCKS");
    if (!e || !*e) e = QB_DEFAULT;
    *lanes = 0;
    if (e[0] < '1' || e[0] > '3' || (e[1] && e[1] != ':')) return 0;
    if (e[1] == ':') *lanes = atoi(e + 2);
    return e[0] - '0';
}

/* Lanes a row for the entry `blocks`: 32, more while a row has blocks for them and fewer than
 * 264 workgroups (two an SM of the H200's 132) would run; or the forced `want`. */
static uint32_t qb_lanes(int want, uint32_t wg, int64_t N, int64_t units)
{
    uint32_t t = 32;
    if (want > 0) {
        while (t < wg && t < (uint32_t)want) t *= 2;
        return t;
    }
    while (t < wg && (int64_t)(2 * t) <= units && N * t / wg < 264) t *= 2;
    return t;
}

/* WGT_QLINEAR_ROWS: Q8_0 and Q4_0 decode through qlinear_fused.wgsl's entry `rows` (the entry
 * `blocks` with every prologue staged, but RB rows a group of lanes, so a block's staged x is read
 * once for RB rows): "auto" (RB = 2 for every weight, the lanes qb_lanes' choice for the row pairs:
 * on the H200, bench/results/h200/qdec-2026-12-03/, -p 16 -n 128, RB = 2 everywhere beat RB = 4
 * where 4 rows a group still gave 256 workgroups and `blocks` elsewhere in all four quantized rows:
 * Qwen2.5-0.5B Q8_0 898 -> 924 tok/s, Q4_0 961 -> 963, Llama-3.2-1B Q8_0 817 -> 858, Q4_0 896 -> 913;
 * main's `blocks`: 903, 932, 800, 837; at most QR_MAX_WG workgroups), "R" (RB = R, 1 to 4, lanes a
 * row the op's),
 * "R:T" (T lanes a group, a power of two from 32 to the workgroup size; 0: the op's), "R:T:W" (at
 * most W workgroups, each taking several steps of rows after staging x once), "auto:L" (auto with
 * L lanes a group where rows have L blocks or more: QR_AUTO_LANES' rule, a tuning aid), "0": off. */
/* The default since it won every round of call B (bench/results/h200/qdec-2026-12-03/callB, with
 * WGT_QLINEAR_QKV_BLOCKS=auto; main's `blocks` -> this, decode tok/s, two rounds): -p 16 -n 128
 * Qwen2.5-0.5B Q8_0 893.4 / 893.7 -> 947.0 / 948.7, Q4_0 924.5 / 926.9 -> 982.4 / 983.5, Llama-3.2-1B
 * Q8_0 797.3 / 795.6 -> 869.5 / 869.8, Q4_0 826.6 / 831.3 -> 920.6 / 921.4; -p 512 -n 128 791.2 /
 * 789.0 -> 832.4 / 832.5, 814.7 / 814.6 -> 860.1 / 857.1, 737.5 / 737.7 -> 801.5 / 801.3, 767.0 /
 * 767.6 -> 843.9 / 845.1. */
#define QR_DEFAULT "auto"
/* auto's most workgroups (8 an SM of the H200's 132): only the output projections have more; with RB
 * = 4 the cap took Qwen2.5-0.5B Q8_0 898 -> 912 tok/s, Q4_0 961 -> 969, Llama-3.2-1B Q8_0 817 ->
 * 824, Q4_0 896 -> 897 (one round, call A). */
#define QR_MAX_WG 1056
/* auto's lanes a row pair where rows have as many blocks (a block a lane: Llama-3.2-1B's K 2048 and
 * 8192; qb_lanes' choice elsewhere); 0: none, qb_lanes' choice everywhere (64 was not measured
 * against it in time; WGT_QLINEAR_ROWS=2:64:1056 forces 64 lanes for every weight). Call B's variant WGT_QLINEAR_ROWS=2:64:1056 (64 lanes for
 * every weight) took Llama-3.2-1B Q4_0 920.6 -> 932.7 tok/s, Q8_0 869.5 -> 879.7, and lost on
 * Qwen2.5-0.5B's 28-block rows (983 -> 938). */
#define QR_AUTO_LANES 0

/* RB asked for (-1: auto, 0: off), in *lanes the lanes a group asked for (0: the op's) and in
 * *max_wg the most workgroups (0: one a step; auto: QR_MAX_WG). Tuning aids: the setting's part
 * ",swiglu=SPEC" applies to SwiGLU's products (swiglu 1), ",down=SPEC" to products of more columns
 * than rows without one (wide 1: the MLP's down projection under WGT_QLINEAR_GLU), the first part to
 * the others. */
static int qr_setting(int swiglu, int wide, int *lanes, int *max_wg)
{
    const char *e = getenv("WGT_QLINEAR_ROWS");
    if (!e || !*e) e = QR_DEFAULT;
    char spec[32];
    snprintf(spec, sizeof spec, "%.*s", (int)strcspn(e, ","), e);
    for (const char *c = strchr(e, ','); c; c = strchr(c + 1, ',')) {
        const char *v = NULL;
        if (swiglu && !strncmp(c, ",swiglu=", 8)) v = c + 8;
        else if (!swiglu && wide && !strncmp(c, ",down=", 6)) v = c + 6;
        if (v) snprintf(spec, sizeof spec, "%.*s", (int)strcspn(v, ","), v);
    }
    *lanes = 0, *max_wg = 0;
    if (!strcmp(spec, "auto")) return *max_wg = QR_MAX_WG, -1;
    if (!strncmp(spec, "auto:", 5)) return *lanes = -atoi(spec + 5), *max_wg = QR_MAX_WG, -1;
    if (spec[0] < '1' || spec[0] > '4' || (spec[1] && spec[1] != ':')) return 0;
    if (spec[1] == ':') {
        *lanes = atoi(spec + 2);
        const char *c = strchr(spec + 2, ':');
        if (c) *max_wg = atoi(c + 1);
    }
    return spec[0] - '0';
}

/* RB for the entry `rows` (0: not it) and in *tpr its lanes a group: the asked RB (-1: auto, 2) and
 * lanes (0: qb_lanes' choice for the groups; auto: QR_AUTO_LANES where rows have that many blocks
 * or more). */
static int qr_choose(int asked, int lanes, uint32_t wg, int64_t N, int64_t units, uint32_t *tpr)
{
    int r = asked > 0 ? asked : 2, al = lanes < 0 ? -lanes : QR_AUTO_LANES;
    if (lanes < 0) lanes = 0;
    if (al > 0 && asked < 0 && lanes == 0 && units >= al) /* qb_lanes caps it at wg */
        lanes = al;
    *tpr = qb_lanes(lanes, wg, (N + r - 1) / r, units);
    return r;
}

/* Determines the prelude of src/kernels/qlinear_fused.wgsl. */
typedef struct qf_key {
    int32_t type, pro, bdt;
    uint32_t sg, wg, xs; /* xs: the entry `blocks`'s staged SwiGLU, vec4s (1: none) */
    uint32_t rb;         /* rows a lane group (entry `rows`; 1 for the others) */
    uint32_t glu;        /* 1: the entry `rows` writes silu(gate) * up of row pairs (wgt_fused_qlinear_glu) */
} qf_key;

/* The block decoders of qlinear.wgsl (its "decoders" section: rd32 .. piece), shared with the fused
 * kernel, matmul_tc's quantized tiles and matmul_rows.wgsl; NULL if the file lacks the section.
 * *len gets their length. */
const char *op_qlinear_decoders(size_t *len)
{
    const char *src = wgt_gpu_kernel_text("qlinear");
    const char *marker = "// ---- decoders ----\n";
    const char *lo = src ? strstr(src, marker) : NULL;
    const char *hi = lo ? strstr(lo + strlen(marker), "\n// ---- ") : NULL;
    if (!hi) return NULL;
    lo += strlen(marker);
    *len = (size_t)(hi - lo) + 1;
    return lo;
}

/* The prelude: SG and sg_sum (lib_subgroup.wgsl's sections), WG, PRO, ldBias and the block
 * decoders of qlinear.wgsl (its "decoders" section: rd32 .. piece). */
static char *qf_prelude(void *arg)
{
    const qf_key *k = arg;
    const char *src = wgt_gpu_kernel_text("qlinear");
    size_t cap = (src ? strlen(src) : 0) + 4096;
    char *pre = src ? malloc(cap) : NULL;
    if (!pre) return NULL;
    snprintf(pre, cap, "%sconst FMT: u32 = %du;\nconst SG: u32 = %uu;\n", k->sg > 1 ? "enable subgroups;\n" : "", k->type,
             k->sg);
    if (!op_wgsl_section(pre, cap, "lib_subgroup", k->sg > 1 ? "sg sum" : "no sg sum")) {
        free(pre);
        return NULL;
    }
    size_t used = strlen(pre);
    snprintf(pre + used, cap - used,
             "const WG: u32 = %uu;\nconst PRO: u32 = %du;\nconst XS: u32 = %uu;\nconst RB: u32 = %uu;\nconst GLU: u32 = %uu;\n",
             k->wg, k->pro, k->xs, k->rb, k->glu);
    op_wgsl_loader(pre, cap, "ldBias", "bias", (wgt_dtype)k->bdt, "f32");
    if (!op_wgsl_section(pre, cap, "qlinear", "decoders")) {
        free(pre);
        return NULL;
    }
    return pre;
}

/* The same through the plain ops: the path for anything the kernel does not take. */
static wgt_status qf_composed(const wgt_tensor *x, wgt_fused_prologue pro, const wgt_tensor *gamma, double eps,
                              const wgt_tensor *w, wgt_ftype type, const wgt_tensor *bias, const wgt_tensor *res,
                              wgt_tensor **out)
{
    wgt_tensor *in = NULL, *y = NULL;
    wgt_status st = WGT_OK;
    if (pro == WGT_PRO_RMS_NORM) st = wgt_rms_norm(x, 1, gamma, eps, &in);
    else if (pro == WGT_PRO_SWIGLU) st = wgt_swiglu(x, &in);
    if (!st) st = wgt_qlinear(in ? in : x, w, type, bias, res ? &y : out);
    if (!st && res) st = wgt_binary(WGT_BINARY_ADD, y, res, out);
    wgt_tensor_free(in);
    wgt_tensor_free(y);
    return st;
}

/* 1 when t is NULL, or f32 (any float with any_float), contiguous, starting at a multiple of
 * `align` elements and within one binding. */
static int qf_operand(wgt_context *ctx, const wgt_tensor *t, int any_float, int64_t align)
{
    if (!t) return 1;
    const wgt_layout *l = &t->l;
    if (!(any_float ? op_is_float(l->dtype) : l->dtype == WGT_F32) || !wgt_layout_is_contiguous(l)) return 0;
    return l->offset % align == 0 &&
           (uint64_t)wgt_layout_numel(l) * wgt_dtype_size(l->dtype) + 256 <= wgt_gpu_limits(ctx)->max_storage_buffer_binding_size;
}

/* wgt_fused_qlinear_glu through the plain ops: the product, then wgt_swiglu over its halves. */
static wgt_status qf_glu_composed(const wgt_tensor *x, wgt_fused_prologue pro, const wgt_tensor *gamma, double eps,
                                  const wgt_tensor *w, wgt_ftype type, const wgt_tensor *bias, wgt_tensor **out)
{
    wgt_tensor *y = NULL;
    wgt_status st = wgt_fused_qlinear(x, pro, gamma, eps, w, type, bias, NULL, &y);
    if (!st) st = wgt_swiglu(y, out);
    wgt_tensor_free(y);
    return st;
}

/* wgt_fused_qlinear (glu 0) and wgt_fused_qlinear_glu (glu 1, res NULL). */
static wgt_status qf_run(const wgt_tensor *x, wgt_fused_prologue pro, const wgt_tensor *gamma, double eps,
                         const wgt_tensor *w, wgt_ftype type, const wgt_tensor *bias, const wgt_tensor *res, int glu,
                         wgt_tensor **out)
{
    OP_BEGIN(x, out);
    if (!w || (pro == WGT_PRO_RMS_NORM && !gamma) || pro < WGT_PRO_NONE || pro > WGT_PRO_SWIGLU)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "fused_qlinear: NULL weight or norm weight, or an unknown prologue");
    const wgt_tensor *ins[5] = {x, w, gamma ? gamma : x, bias ? bias : x, res ? res : x};
    wgt_status st = op_same_context("fused_qlinear", ins, 5);
    if (st) return st;
    int64_t N, K;
    if ((st = ql_check_weight(ctx, "fused_qlinear", w, type, &N, &K))) return st;
    int nd = x->l.ndim;
    int64_t Kx = nd ? x->l.shape[nd - 1] : 0;
    int64_t M = Kx ? wgt_layout_numel(&x->l) / Kx : 0;
    if (Kx != (pro == WGT_PRO_SWIGLU ? 2 * K : K))
        return op_fail(ctx, WGT_ERR_SHAPE, "fused_qlinear: x [..., %lld] does not match the weight's %lld columns%s",
                       (long long)Kx, (long long)K, pro == WGT_PRO_SWIGLU ? " (SwiGLU: x holds 2K values, gate then up)" : "");
    if ((pro == WGT_PRO_RMS_NORM && (gamma->l.ndim != 1 || gamma->l.shape[0] != K)) ||
        (bias && (bias->l.ndim != 1 || bias->l.shape[0] != N)))
        return op_fail(ctx, WGT_ERR_SHAPE, "fused_qlinear: the norm weight must be [%lld] and the bias [%lld]",
                       (long long)K, (long long)N);
    if (res) {
        int ok = res->l.ndim == nd && res->l.shape[nd - 1] == N;
        for (int d = 0; ok && d < nd - 1; d++) ok = res->l.shape[d] == x->l.shape[d];
        if (!ok) return op_fail(ctx, WGT_ERR_SHAPE, "fused_qlinear: the residual must have x's shape with last dim %lld",
                                (long long)N);
    }
    /* the kernel: one f32 row of x (decode) aligned to vec4s, the whole weight in one binding (the
     * plain gemv splits larger ones), Q4_K rows at whole words (its decoder reads words) */
    const wgt_limits *lim = wgt_gpu_limits(ctx);
    int64_t row_bytes = w->l.shape[1];
    uint64_t align = lim->min_storage_buffer_offset_alignment > 4 ? lim->min_storage_buffer_offset_alignment : 4;
    uint64_t wbytes = (uint64_t)N * (uint64_t)row_bytes + align + 8;
    int fast = !wgt_gpu_runs_reference(ctx) && wgt_qlinear_gpu_type(type) && op_workgroup_size(ctx) >= 128 &&
               lim->max_storage_buffers_per_shader_stage >= 6 && M == 1 && N > 0 && wbytes <= UINT32_MAX &&
               wbytes <= lim->max_storage_buffer_binding_size && (type != WGT_FTYPE_Q4_K || w->l.offset % 4 == 0) &&
               qf_operand(ctx, x, 0, 4) && (pro != WGT_PRO_RMS_NORM || qf_operand(ctx, gamma, 0, 4)) &&
               qf_operand(ctx, bias, 1, 1) && qf_operand(ctx, res, 0, 1);
    if (glu && N % 2)
        return op_fail(ctx, WGT_ERR_SHAPE, "fused_qlinear_glu: the weight's %lld rows are not gate and up halves",
                       (long long)N);
    if (!fast) return glu ? qf_glu_composed(x, pro, gamma, eps, w, type, bias, out)
                          : qf_composed(x, pro, gamma, eps, w, type, bias, res, out);
    qf_key key = {(int32_t)type, (int32_t)pro, bias ? (int32_t)bias->l.dtype : (int32_t)WGT_F32, ql_subgroup(ctx),
                  op_workgroup_size(ctx), 1, 1, 0};
    /* the entry `blocks` reads each block's words from its even first byte */
    int lanes, qb = qb_setting(&lanes);
    int blocks = qb && (type == WGT_FTYPE_Q8_0 || type == WGT_FTYPE_Q4_0) && w->l.offset % 2 == 0;
    /* pro(x) staged (mode 1: SwiGLU's, 3: every prologue's; K / 4 vec4s and a vec4 of padding a
     * block) within the workgroup memory, at most 16 KiB on OpenGL (llvmpipe's computed wrong
     * results past it though it reports 32: src/ops/matmul.c's regs_choose) */
    const wgt_adapter_info *info = wgt_gpu_info(ctx);
    uint64_t smem = lim->max_compute_workgroup_storage_size;
    if ((info->backend == WGT_BACKEND_OPENGLES || info->backend == WGT_BACKEND_OPENGL || info->compat) && smem > 16384)
        smem = 16384;
    key.xs = 1;
    uint64_t xs = (uint64_t)(K / 4 + K / 32);
    int fits = xs * 16 + (uint64_t)key.wg * 8 <= smem;
    if (blocks && ((qb == 1 && pro == WGT_PRO_SWIGLU) || qb == 3) && fits) key.xs = (uint32_t)xs;
    if (qb == 3 && !fits) blocks = 0; /* x through the L1 cache lost to `main` on the H200 */
    /* the entry `rows`: Q8_0 / Q4_0 blocks at even bytes, every prologue staged, red4 beside it */
    int rlanes, rmax, rb = qr_setting(pro == WGT_PRO_SWIGLU, K > N, &rlanes, &rmax);
    uint32_t tpr = 32;
    if (glu && rb > 0) rb = rb == 4 ? 4 : 2; /* a group holds gate and up rows: RB even */
    if (rb && (type == WGT_FTYPE_Q8_0 || type == WGT_FTYPE_Q4_0) && w->l.offset % 2 == 0 &&
        xs * 16 + (uint64_t)key.wg * 24 <= smem)
        rb = qr_choose(rb, rlanes, key.wg, N, K / 32, &tpr);
    else
        rb = 0;
    if (rb) key.xs = (uint32_t)xs, key.rb = (uint32_t)rb, blocks = 0;
    if (glu && !rb) return qf_glu_composed(x, pro, gamma, eps, w, type, bias, out); /* only `rows` pairs them */
    key.glu = (uint32_t)glu;
    int64_t shape[WGT_MAX_DIMS];
    memcpy(shape, x->l.shape, sizeof(int64_t) * (size_t)nd);
    shape[nd - 1] = glu ? N / 2 : N;
    wgt_tensor *y;
    if ((st = wgt_tensor_new(ctx, WGT_F32, nd, shape, &y))) return st;
    wgt_kernel *k;
    if ((st = wgt_gpu_kernel_keyed(ctx, "qlinear_fused", &key, sizeof key, qf_prelude, &key,
                                   rb ? "rows" : blocks ? "blocks" : "main", NULL, 0, &k)))
        return op_finish(st, y, out);
    const wgt_tensor *bt[6] = {x, w, pro == WGT_PRO_RMS_NORM ? gamma : x, bias ? bias : x, res ? res : x, y};
    wgt_binding b[6];
    int64_t base[6];
    for (int i = 0; i < 6 && !st; i++) {
        /* w: its rows plus the word after the end (rd32 at an unaligned last address reads it) */
        if (i == 1) st = op_bind(w, w->l.offset, w->l.offset + N * row_bytes + 3, &b[1], &base[1]);
        else st = op_bind_all(bt[i], &b[i], &base[i]);
    }
    if (st) return op_finish(st, y, out);
    qf_params p = {0};
    p.N = (uint32_t)N, p.K = (uint32_t)K, p.row_bytes = (uint32_t)row_bytes, p.units = (uint32_t)(K / 32);
    p.flags = (bias ? 1u : 0u) | (res ? 2u : 0u), p.eps = (float)eps;
    p.w_off = (uint32_t)(w->l.offset - base[1]);
    p.off_x = (uint32_t)((x->l.offset - base[0]) / 4), p.off_g = (uint32_t)((bt[2]->l.offset - base[2]) / 4);
    p.off_b = (uint32_t)(bt[3]->l.offset - base[3]), p.off_r = (uint32_t)(bt[4]->l.offset - base[4]);
    p.off_o = (uint32_t)(y->l.offset - base[5]);
    /* main: WG / 32 rows a workgroup, as qlinear.wgsl's gemv; blocks: WG / tpr */
    p.tpr = rb ? tpr : blocks ? qb_lanes(lanes, key.wg, N, K / 32) : 32;
    uint32_t gx, gy, rpw = key.wg / p.tpr * key.rb;
    uint64_t groups = ((uint64_t)N + rpw - 1) / rpw;
    if (rb && rmax > 0 && groups > (uint64_t)rmax) groups = (uint64_t)rmax;
    op_grid(ctx, groups, &gx, &gy);
    /* the weight blocks, x, the norm weight, bias, residual and y (WGT_PROFILE=1) */
    wgt_gpu_cost(ctx, (uint64_t)N * (uint64_t)row_bytes + (uint64_t)K * 8 + (bias ? (uint64_t)N * 4 : 0) +
                 (res ? (uint64_t)N * 4 : 0) + (uint64_t)(glu ? N / 2 : N) * 4, 2.0 * (double)N * (double)K);
    st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 6, gx, gy, 1);
    return op_finish(st, y, out);
}

wgt_status wgt_fused_qlinear(const wgt_tensor *x, wgt_fused_prologue pro, const wgt_tensor *gamma, double eps,
                             const wgt_tensor *w, wgt_ftype type, const wgt_tensor *bias, const wgt_tensor *res,
                             wgt_tensor **out)
{
    return qf_run(x, pro, gamma, eps, w, type, bias, res, 0, out);
}

wgt_status wgt_fused_qlinear_glu(const wgt_tensor *x, wgt_fused_prologue pro, const wgt_tensor *gamma, double eps,
                                 const wgt_tensor *w, wgt_ftype type, const wgt_tensor *bias, wgt_tensor **out)
{
    if (pro == WGT_PRO_SWIGLU)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "fused_qlinear_glu: a SwiGLU prologue and epilogue together");
    return qf_run(x, pro, gamma, eps, w, type, bias, NULL, 1, out);
}

/* WGT_QLINEAR_GLU: "1" has the decoder's quantized gate/up product write silu(gate) * up
 * (wgt_fused_qlinear_glu: the entry `rows` pairs gate row j with up row H + j), so the down
 * projection stages K values with no exp instead of 2K with K exps in each of its workgroups; "0"
 * writes gate and up, and the down projection's prologue applies SwiGLU. The default since it won
 * every round (bench/results/h200/qdec-2026-12-03b/, -p 16 -n 128, with the staging's batched loads;
 * =0 alone: Llama-3.2-1B Q4_0 1001.8 tok/s, Qwen2.5-0.5B Q8_0 1006.2): Llama Q4_0 1006.4 / 1007.7,
 * Qwen Q8_0 1010.0 / 1010.8 (main: 961.8 / 961.9, 983.0 / 1001.8). */
#define QG_DEFAULT "1"

int op_qlinear_glu(void)
{
    const char *e = getenv("WGT_QLINEAR_GLU");
    if (!e || !*e) e = QG_DEFAULT;
    return strcmp(e, "0") != 0;
}

/* ---- one token's attention inputs through a quantized q/k/v weight ---------------------------- */

/* WGT_QLINEAR_QKV: "1" runs src/kernels/qlinear_qkv_rope.wgsl (the norm, the product, the
 * rotation and the cache writes in one dispatch), "1:N" with N row pairs a workgroup (a power of
 * two up to the workgroup size / 32), "0" the two dispatches (wgt_fused_qlinear, then
 * wgt_qkv_rope_cache). The default since it won every round on the H200 (Qwen2.5-0.5B decode,
 * -p 16 -n 128: Q8_0 523.0 / 491.1 -> 554.9 / 565.8 tok/s, Q4_0 513.9 / 510.2 -> 542.4 / 562.4;
 * bench/results/h200/qkv_ab.txt). */
#define QQ_DEFAULT "1"

/* Row pairs a workgroup asked for (0: the kernel's own choice), or -1 for the two dispatches. */
static int qq_setting(void)
{
    const char *e = getenv("WGT_QLINEAR_QKV");
    if (!e || !*e) e = QQ_DEFAULT;
    if (e[0] != '1' || (e[1] && e[1] != ':')) return -1;
    return e[1] == ':' ? atoi(e + 2) : 0;
}

/* WGT_QLINEAR_QKV_BLOCKS: Q8_0 / Q4_0 q/k/v weights through qlinear_qkv_rope.wgsl's entry `blocks`
 * (a lane per whole block, 32 lanes a row pair, x * gamma staged once a workgroup): "auto" (where
 * rows have QQB_MIN_UNITS blocks: two a lane), "1" (every such weight), each with workgroups of the
 * size giving QQB_MIN_GROUPS workgroups (64 at least); "1:WG" (WG invocations, 64 to the workgroup
 * size), "0": the entry `main`. H200 (bench/results/h200/qdec-2026-12-03/, -p 16 -n 128, one
 * round): Llama-3.2-1B (K 2048) Q4_0 886 -> 896 tok/s, Q8_0 811 -> 817, but Qwen2.5-0.5B (K 896, a
 * block a lane) Q8_0 916 -> 898, Q4_0 976 -> 961 (that build staged a block a lane: 8 loads in a row). */
/* The default with WGT_QLINEAR_ROWS=auto (call B's A/B above). */
#define QQB_DEFAULT "auto"
#define QQB_MIN_GROUPS 264
#define QQB_MIN_UNITS 64

/* The workgroup size asked for (0: the op's choice), -1 for the entry `main`; *all 0 for "auto". */
static int qqb_setting(int *all)
{
    const char *e = getenv("WGT_QLINEAR_QKV_BLOCKS");
    if (!e || !*e) e = QQB_DEFAULT;
    *all = 1;
    if (!strcmp(e, "auto")) return *all = 0;
    if (e[0] != '1' || (e[1] && e[1] != ':')) return -1;
    return e[1] == ':' ? atoi(e + 2) : 0;
}

/* Determines the prelude of src/kernels/qlinear_qkv_rope.wgsl. */
typedef struct qq_key {
    int32_t type, bdt, sg;
    uint32_t wg, xs; /* xs: the entry `blocks`'s staged x (vec4s), 1 for the others */
} qq_key;

/* The row sum (lib_rowsum.wgsl, whose `enable` comes first), FMT, WG, ldBias, qlinear.wgsl's
 * decoders and fused_linear_qkv_rope.wgsl's "params", "rope pairs" and "entries". */
static char *qq_prelude(void *arg)
{
    const qq_key *k = arg;
    const char *src = wgt_gpu_kernel_text("qlinear"), *fl = wgt_gpu_kernel_text("fused_linear_qkv_rope");
    size_t cap = (src ? strlen(src) : 0) + (fl ? strlen(fl) : 0) + 8192;
    char *pre = src && fl ? malloc(cap) : NULL;
    if (!pre) return NULL;
    pre[0] = 0;
    op_wgsl_row_subgroups(pre, cap, k->sg);
    size_t used = strlen(pre);
    snprintf(pre + used, cap - used, "const FMT: u32 = %du;\nconst WG: u32 = %uu;\nconst XS: u32 = %uu;\n", k->type,
             k->wg, k->xs);
    op_wgsl_loader(pre, cap, "ldBias", "bias", (wgt_dtype)k->bdt, "f32");
    if (!op_wgsl_section(pre, cap, "qlinear", "decoders") || !op_wgsl_section(pre, cap, "qlinear_fused", "block words") ||
        !op_wgsl_section(pre, cap, "fused_linear_qkv_rope", "params") ||
        !op_wgsl_section(pre, cap, "fused_linear_qkv_rope", "rope pairs") ||
        !op_wgsl_section(pre, cap, "fused_linear_qkv_rope", "entries")) {
        free(pre);
        return NULL;
    }
    return pre;
}

wgt_status wgt_fused_qkv_rope_qcache(const wgt_tensor *x, const wgt_tensor *gamma, double eps, const wgt_tensor *w,
                                     wgt_ftype type, const wgt_tensor *bias, int64_t Hq, int64_t Hkv, int64_t hd,
                                     int64_t pos0, int rot, int interleaved, const wgt_rope_params *rp,
                                     wgt_tensor *k_cache, wgt_tensor *v_cache, wgt_tensor **q)
{
    OP_BEGIN(x, q);
    if (!gamma || !w || !rp || !k_cache || !v_cache)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "fused_qkv_rope_qcache: NULL argument");
    const wgt_tensor *ins[6] = {x, gamma, w, bias ? bias : x, k_cache, v_cache};
    wgt_status st = op_same_context("fused_qkv_rope_qcache", ins, 6);
    if (st) return st;
    int64_t N, K, C = (Hq + 2 * Hkv) * hd;
    if ((st = ql_check_weight(ctx, "fused_qkv_rope_qcache", w, type, &N, &K))) return st;
    int pairs_asked = qq_setting();
    const wgt_limits *lim = wgt_gpu_limits(ctx);
    int64_t row_bytes = w->l.shape[1];
    uint64_t align = lim->min_storage_buffer_offset_alignment > 4 ? lim->min_storage_buffer_offset_alignment : 4;
    uint64_t wbytes = (uint64_t)N * (uint64_t)row_bytes + align + 8;
    uint32_t wg = op_workgroup_size(ctx);
    /* the kernel: one f32 row of x aligned to vec4s, the whole weight in one binding, Q4_K rows at
     * whole words (its decoder reads words), f32 caches written in place, 8 storage bindings */
    int fast = pairs_asked >= 0 && !wgt_gpu_runs_reference(ctx) && wgt_qlinear_gpu_type(type) && wg >= 128 &&
               lim->max_storage_buffers_per_shader_stage >= 8 && x->l.ndim == 2 && x->l.shape[0] == 1 &&
               x->l.shape[1] == K && N == C && hd % 2 == 0 && rot >= 2 && rot <= hd && rot % 2 == 0 &&
               rot / 2 <= 2048 && wbytes <= UINT32_MAX && wbytes <= lim->max_storage_buffer_binding_size &&
               (type != WGT_FTYPE_Q4_K || w->l.offset % 4 == 0) && gamma->l.ndim == 1 && gamma->l.shape[0] == K &&
               (!bias || (bias->l.ndim == 1 && bias->l.shape[0] == C)) && qf_operand(ctx, x, 0, 4) &&
               qf_operand(ctx, gamma, 0, 4) && qf_operand(ctx, bias, 1, 1) &&
               op_qkv_caches_fit(k_cache, v_cache, Hkv, hd, pos0);
    if (!fast) { /* the two dispatches (and every check of the shapes in them) */
        wgt_tensor *qkv = NULL;
        st = wgt_fused_qlinear(x, WGT_PRO_RMS_NORM, gamma, eps, w, type, bias, NULL, &qkv);
        if (!st) st = wgt_qkv_rope_cache(qkv, Hq, Hkv, hd, pos0, rot, interleaved, rp, k_cache, v_cache, q);
        wgt_tensor_free(qkv);
        return st;
    }
    qq_key key = {(int32_t)type, bias ? (int32_t)bias->l.dtype : (int32_t)WGT_F32, op_row_subgroups(ctx), wg, 1};
    int solo = wgt_gpu_avoid_barriers(ctx); /* the barrier-free entry point (SwiftShader) */
    /* the entry `blocks`: Q8_0 / Q4_0 rows at even bytes, 32 lanes a pair, x staged beside red */
    int qall, qwg = qqb_setting(&qall);
    uint64_t qxs = (uint64_t)(K / 4 + K / 32), smem = lim->max_compute_workgroup_storage_size;
    const wgt_adapter_info *info = wgt_gpu_info(ctx);
    if ((info->backend == WGT_BACKEND_OPENGLES || info->backend == WGT_BACKEND_OPENGL || info->compat) && smem > 16384)
        smem = 16384;
    int qblocks = !solo && qwg >= 0 && (type == WGT_FTYPE_Q8_0 || type == WGT_FTYPE_Q4_0) && w->l.offset % 2 == 0 &&
                  (qall || K / 32 >= QQB_MIN_UNITS);
    if (qblocks) {
        uint32_t qw = 64;
        if (qwg > 0) {
            while (qw < wg && qw < (uint32_t)qwg) qw *= 2;
        } else
            while (qw < wg && (uint64_t)C / 2 / (2 * qw / 32) >= QQB_MIN_GROUPS) qw *= 2;
        if (qw <= wg && qxs * 16 + (uint64_t)qw * 16 <= smem) key.wg = qw, key.xs = (uint32_t)qxs;
        else qblocks = 0;
    }
    wgt_kernel *k;
    wgt_binding b[8];
    int64_t base[8];
    wgt_tensor *freq = NULL, *y = NULL;
    op_qkv_params p = {0};
    const wgt_tensor *bt[4] = {x, w, gamma, bias ? bias : x};
    st = wgt_gpu_kernel_keyed(ctx, "qlinear_qkv_rope", &key, sizeof key, qq_prelude, &key,
                              qblocks ? "blocks" : solo ? "solo" : "main", NULL, 0, &k);
    /* w: its rows plus the word after the end (rd32 at an unaligned last address reads it) */
    for (int i = 0; i < 4 && !st; i++)
        st = i == 1 ? op_bind(w, w->l.offset, w->l.offset + N * row_bytes + 3, &b[1], &base[1])
                    : op_bind_all(bt[i], &b[i], &base[i]);
    if (st || (st = op_qkv_setup(ctx, "fused_qkv_rope_qcache", rp, rot, interleaved, Hq, Hkv, hd, pos0, k_cache,
                                 v_cache, &p, b, base, &freq, &y)))
        goto done;
    p.S = (uint32_t)(C / 2), p.K = (uint32_t)K, p.flags = bias ? 1u : 0u, p.eps = (float)eps;
    p.off_x = (uint32_t)((x->l.offset - base[0]) / 4), p.off_w = (uint32_t)(w->l.offset - base[1]);
    p.off_g = (uint32_t)((gamma->l.offset - base[2]) / 4), p.off_b = (uint32_t)(bt[3]->l.offset - base[3]);
    p.row_bytes = (uint32_t)row_bytes;
    uint32_t gx, gy;
    if (qblocks) {
        p.tpr = 32;
        op_grid(ctx, ((uint64_t)p.S + key.wg / 32 - 1) / (key.wg / 32), &gx, &gy);
    } else
        op_qkv_grid(ctx, wg, pairs_asked, solo, &p, &gx, &gy);
    /* the position may be a graph scalar (a captured decode step) */
    op_qkv_position(ctx, pos0, hd, k_cache, v_cache, base);
    /* the weight blocks, x, the norm weight, bias, q out and the k/v rows written (WGT_PROFILE=1) */
    wgt_gpu_cost(ctx, (uint64_t)N * (uint64_t)row_bytes + (uint64_t)K * 8 +
                 (bias ? (uint64_t)C * wgt_dtype_size(bias->l.dtype) : 0) + (uint64_t)C * 4,
                 2.0 * (double)C * (double)K);
    st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 8, gx, gy, 1);
done:
    wgt_tensor_free(freq);
    return op_finish(st, y, q);
}
