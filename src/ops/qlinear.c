/* Quantized linear layers: weights stay in their GGUF block format on the device (a U8 tensor of
 * the raw blocks) and are dequantised inside the matmul kernels (src/kernels/qlinear.wgsl). One
 * pipeline per format and entry point: `gemv` for a few tokens (decode), `tiled` for many
 * (prefill). Formats without a kernel, and CPU contexts, dequantise the rows on the host with
 * wgt_dequantize and run wgt_cpu_linear. */
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "ops/ops.h"

/* Up to this many tokens the gemv kernel runs (one pass over the weights per 4 tokens); above it
 * the tiled kernel (one pass per 32 tokens, but less bandwidth per pass). */
#define QL_GEMV_MAX_TOKENS 8

typedef struct ql_params {
    uint32_t rows, cols, tokens, row_bytes;
    uint32_t w_off, x_off, out_off, bias_off;
    uint32_t has_bias, out_stride, units, pad0;
} ql_params;

static int ql_gpu_format(wgt_ftype type)
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

static wgt_status ql_kernel(wgt_context *ctx, wgt_ftype type, int gemv, wgt_kernel **k)
{
    /* Subgroup sums need a known, fixed subgroup size of at most 32 (the invocations of one row). */
    uint32_t sg = 1;
    const wgt_limits *lim = &ctx->info.limits;
    if (ctx->info.has_subgroups && lim->subgroup_min_size == lim->subgroup_max_size && lim->subgroup_min_size >= 2 &&
        lim->subgroup_min_size <= 32)
        sg = lim->subgroup_min_size;
    char pre[512];
    /* the workgroup size (256, or 128 in compatibility mode) sets the tiles: part of the key */
    uint32_t wg = op_workgroup_size(ctx);
    if (gemv && sg > 1)
        snprintf(pre, sizeof pre,
                 "enable subgroups;\nconst FMT: u32 = %du;\nconst SG: u32 = %uu;\n"
                 "fn sg_sum(v: f32) -> f32 { return subgroupAdd(v); }\nconst WG: u32 = %uu;\n", (int)type, sg, wg);
    else
        snprintf(pre, sizeof pre,
                 "const FMT: u32 = %du;\nconst SG: u32 = 1u;\nfn sg_sum(v: f32) -> f32 { return v; }\nconst WG: u32 = %uu;\n",
                 (int)type, wg);
    return wgt_gpu_kernel(ctx, "qlinear", pre, gemv ? "gemv" : "tiled", NULL, 0, k);
}

/* x [tokens, cols] f32 contiguous with x->l.offset % 4 == 0; bias [rows] f32 contiguous or NULL;
 * y [tokens, rows] f32 new. Splits tokens and weight rows so each binding fits. */
static wgt_status ql_gpu(wgt_context *ctx, wgt_ftype type, const wgt_tensor *x, const wgt_tensor *w,
                         const wgt_tensor *bias, int64_t tokens, int64_t rows, int64_t cols, wgt_tensor *y)
{
    if (tokens == 0) return WGT_OK;
    int gemv = tokens <= QL_GEMV_MAX_TOKENS;
    wgt_kernel *k;
    wgt_status st = ql_kernel(ctx, type, gemv, &k);
    if (st) return st;
    uint64_t limit = ctx->info.limits.max_storage_buffer_binding_size;
    uint64_t align = ctx->info.limits.min_storage_buffer_offset_alignment;
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
            /* rows and tokens per workgroup as src/kernels/qlinear.wgsl sets them from WG */
            uint32_t gx, gy, gz, wg = op_workgroup_size(ctx);
            if (gemv) {
                op_grid(ctx, ((uint64_t)(r1 - r0) + wg / 32 - 1) / (wg / 32), &gx, &gy);
                gz = (uint32_t)((t1 - t0 + 3) / 4);
            } else {
                op_grid(ctx, ((uint64_t)(r1 - r0) + wg / 4 - 1) / (wg / 4), &gx, &gy);
                gz = (uint32_t)((t1 - t0 + wg / 8 - 1) / (wg / 8));
            }
            if ((st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 4, gx, gy, gz))) return st;
        }
    }
    return WGT_OK;
}

/* ---- the op ----------------------------------------------------------------------------------- */

wgt_status wgt_qlinear(const wgt_tensor *x, const wgt_tensor *w, wgt_ftype type, const wgt_tensor *bias,
                       wgt_tensor **out)
{
    OP_BEGIN(x, out);
    const wgt_tensor *ins[3] = {x, w, bias ? bias : x};
    wgt_status st = op_same_context("qlinear", ins, 3);
    if (st) return st;
    const char *tname = wgt_ftype_name(type);
    if (!ql_block_format(type))
        return op_fail(ctx, WGT_ERR_DTYPE, "qlinear: %s is not a quantized block format", tname ? tname : "unknown type");
    uint32_t be = wgt_ftype_block_elems(type), bb = wgt_ftype_block_bytes(type);
    if (w->l.dtype != WGT_U8 || w->l.ndim != 2 || w->l.shape[1] % bb || w->l.strides[1] != 1 ||
        w->l.strides[0] != w->l.shape[1])
        return op_fail(ctx, WGT_ERR_SHAPE,
                       "qlinear: the weight must be a contiguous u8 [rows, row_bytes] tensor of whole %s blocks (%u "
                       "bytes each), as wgt_qweight_upload makes", tname, bb);
    int64_t rows = w->l.shape[0], cols = w->l.shape[1] / bb * be;
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
    int gpu_ok = ql_gpu_format(type) && op_workgroup_size(ctx) >= 128;
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
        if (!st)
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
