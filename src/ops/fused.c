/*
 * Fused ops of the decoder step: the SwiGLU activation of a fused gate/up matmul, and the
 * residual add with the RMSNorm that follows it. Each is one dispatch where the composition takes
 * two (a decode step is bound by dispatch count, not bytes). The GPU kernels take f32 contiguous
 * rows; anything else, and a CPU-reference context, runs the composition of the plain ops, which
 * is also the reference the tests compare with.
 */
#include <string.h>

#include "ops/ops.h"
#include "tensor/tensor.h"

/* f32, contiguous, on a GPU context, and each binding within the device's limit. */
static int eligible(wgt_context *ctx, const wgt_tensor *const *ts, int n)
{
    if (wgt_ctx_is_cpu(ctx)) return 0;
    for (int i = 0; i < n; i++) {
        if (!ts[i]) continue;
        const wgt_layout *l = &ts[i]->l;
        if (l->dtype != WGT_F32 || !wgt_layout_is_contiguous(l)) return 0;
        if ((uint64_t)wgt_layout_numel(l) * 4 + 256 > ctx->info.limits.max_storage_buffer_binding_size) return 0;
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
    if (!(st = wgt_gpu_kernel(ctx, "swiglu", NULL, "main", NULL, 0, &k)) && !(st = op_bind_all(x, &b[0], &bx)) &&
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
    if (!(st = wgt_gpu_kernel(ctx, "add_rms_norm", NULL, "main", NULL, 0, &k)) &&
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
