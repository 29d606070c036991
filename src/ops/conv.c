/* Convolutions: wgt_conv (1-, 2- and 3-D, stride, padding incl. 'same', dilation, groups, bias)
 * and wgt_conv_transpose. Kernels in src/kernels/conv.wgsl: a direct kernel for every case (four
 * outputs of a row per invocation), a depthwise 2-D kernel (32 x 32 output tiles from workgroup
 * memory), and an implicit GEMM (tiles of 64 or 128 pixels x 64 channels at 256 invocations, half
 * as many pixels at 128) for convolutions and transposed convolutions with many channels per group.
 * The work is split along the batch when x or the output pass one storage binding. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "ops/ops.h"
#include "tensor/record.h"

typedef struct conv_params {
    uint32_t isz[4], osz[4], ksz[4], str[4], dil[4];
    int32_t pad[4];
    uint32_t xs[4];
    uint32_t xn, x_off, w_off, b_off, total, out_w0, n_img, zero;
} conv_params;

/* The implicit GEMM wins once a tile's 64 output channels and 16-channel steps are there to
 * share its loads; below that the direct kernel (no workgroup memory, no barriers) is faster. */
static int use_gemm(int64_t cin_g, int64_t cout_g, int64_t M) { return cin_g >= 16 && cout_g >= 32 && M >= 256; }

/* Pixels per invocation of the GEMM: 8 (128-pixel tiles) once there are enough tiles to fill a
 * large device, else 4. */
static int gemm_tm(int64_t M, int64_t cout_g) { return M * ((cout_g + 63) / 64) >= 8192 ? 8 : 4; }

/* Input elements a depthwise workgroup may hold: 24 KiB, or what the device's workgroup memory
 * leaves beside the taps (1 KiB) and the GEMM tiles that share the module. */
static uint32_t dw_tile(wgt_context *ctx)
{
    uint32_t lim = wgt_gpu_limits(ctx)->max_compute_workgroup_storage_size, t = 6144;
    if (lim < 4096 + 1024) return 0;
    if ((lim - 1024) / 4 < t) t = (lim - 1024) / 4;
    return t;
}

static wgt_status conv_kernel(wgt_context *ctx, const char *entry, int tm, wgt_dtype dt, wgt_kernel **k)
{
    char pre[4096];
    snprintf(pre, sizeof pre,
             "const PACK: u32 = %du;\nconst TM: u32 = %du;\nconst DW_TILE: u32 = %uu;\nconst WG: u32 = %uu;\n",
             op_pack(dt), tm, dw_tile(ctx) ? dw_tile(ctx) : 1, op_workgroup_size(ctx));
    op_wgsl_loader(pre, sizeof pre, "ldx", "xs", dt, "f32");
    op_wgsl_loader(pre, sizeof pre, "ldw", "ws", dt, "f32");
    op_wgsl_loader(pre, sizeof pre, "ldb", "bs", dt, "f32");
    op_wgsl_storer(pre, sizeof pre, "st", "out", dt, "f32");
    return wgt_gpu_kernel(ctx, "conv", pre, entry, NULL, 0, k);
}

static int fits_u32(int64_t v) { return v >= 0 && v <= (int64_t)UINT32_MAX; }

static wgt_status conv_dispatch(wgt_context *ctx, const wgt_kernel *k, conv_params *pp, int gemm, int dw, int tm,
                                int64_t per, int64_t N, int64_t Cout, int64_t P, int64_t cout_g, int groups,
                                const wgt_tensor *x, const wgt_tensor *w, const wgt_tensor *b, wgt_tensor *y);

/* y [N, Cout, *O] = conv(x, w, b) on the device. w and b contiguous; geometry resolved. */
static wgt_status conv_gpu(wgt_context *ctx, const char *op, int transposed, const wgt_tensor *x, const wgt_tensor *w,
                           const wgt_tensor *b, int groups, const int64_t *stride, const int64_t *dil,
                           const int64_t *pb, wgt_tensor *y)
{
    int nsp = x->l.ndim - 2;
    int64_t N = x->l.shape[0], Cin = x->l.shape[1], Cout = y->l.shape[1];
    int64_t cin_g = Cin / groups, cout_g = Cout / groups, P = 1, KK = 1;
    conv_params p;
    memset(&p, 0, sizeof p);
    for (int d = 0; d < 3; d++) {
        int a = d - (3 - nsp);
        int64_t S = a < 0 ? 1 : x->l.shape[2 + a], O = a < 0 ? 1 : y->l.shape[2 + a];
        int64_t K = a < 0 ? 1 : w->l.shape[2 + a], xs = a < 0 ? 0 : x->l.strides[2 + a];
        int64_t s = a < 0 ? 1 : stride[a], dl = a < 0 ? 1 : dil[a], pad = a < 0 ? 0 : pb[a];
        if (!fits_u32(S) || !fits_u32(O) || !fits_u32(K) || !fits_u32(xs) || !fits_u32(s) || !fits_u32(dl) ||
            pad > INT32_MAX || pad < INT32_MIN || !fits_u32(O * s + K * dl))
            return op_fail(ctx, WGT_ERR_LIMIT, "%s: spatial dim %d: sizes, strides or padding past 32 bits", op, a);
        p.isz[d] = (uint32_t)S, p.osz[d] = (uint32_t)O, p.ksz[d] = (uint32_t)K, p.xs[d] = (uint32_t)xs;
        p.str[d] = (uint32_t)s, p.dil[d] = (uint32_t)dl, p.pad[d] = (int32_t)pad;
        P *= O, KK *= K;
    }
    if (!fits_u32(x->l.strides[0]) || !fits_u32(x->l.strides[1]) || !fits_u32(Cout * P) || !fits_u32(cin_g * KK) ||
        !fits_u32(Cout * cin_g * KK) || !fits_u32(Cin * cout_g * KK))
        return op_fail(ctx, WGT_ERR_LIMIT, "%s: an image, the weight or a stride past 2^32 elements", op);
    p.isz[3] = (uint32_t)Cin, p.osz[3] = (uint32_t)Cout, p.ksz[3] = (uint32_t)cin_g, p.str[3] = (uint32_t)cout_g;
    p.dil[3] = (uint32_t)transposed, p.pad[3] = b != NULL, p.xs[3] = (uint32_t)x->l.strides[1];
    p.xn = (uint32_t)x->l.strides[0];

    wgt_dtype dt = y->l.dtype;
    int pack = op_pack(dt);
    /* the tiled kernels run op_workgroup_size() invocations per workgroup: 256, or 128 (compatibility
     * mode's default), where the GEMM tile has half the pixels and a depthwise invocation two rows */
    const wgt_limits *lim = wgt_gpu_limits(ctx);
    int wg = (int)op_workgroup_size(ctx), tiled = wg >= 128;
    const char *force = getenv("WGT_CONV_PATH"); /* "direct": no tiled kernels (bench_conv --compare) */
    if (force && !strcmp(force, "direct")) tiled = 0;
    int gemm = tiled && P % pack == 0 && use_gemm(cin_g, cout_g, N * P);
    int tm = gemm ? gemm_tm(N * P, cout_g) : 4, bm = wg / 16 * tm;
    if (gemm && (uint64_t)4 * 16 * (bm + 64) > lim->max_compute_workgroup_storage_size) tm = 4, bm = wg / 16 * tm;
    if (gemm && (uint64_t)4 * 16 * (bm + 64) > lim->max_compute_workgroup_storage_size) gemm = 0;
    /* depthwise 2-D: 32 x 32 output tiles whose input region and taps fit workgroup memory */
    int64_t reg = (31 * p.str[1] + (p.ksz[1] - 1) * (int64_t)p.dil[1] + 1) *
                  (31 * p.str[2] + (p.ksz[2] - 1) * (int64_t)p.dil[2] + 1);
    int64_t tiles = ((p.osz[1] + 31) / 32) * ((p.osz[2] + 31) / 32);
    /* The tile kernel wins on the CPU adapters; on the H200 the direct kernel ran the depthwise
     * 3x3 of bench_conv 4.7x faster (2228 vs 477 GFLOP/s), so GPUs take it unless
     * WGT_CONV_PATH=depthwise asks for the tiles. */
    int dw_wanted = wgt_gpu_is_software(ctx) || (force && !strcmp(force, "depthwise"));
    int dw = dw_wanted && tiled && !transposed && nsp == 2 && cin_g == 1 && p.ksz[1] * p.ksz[2] <= 256 && reg <= dw_tile(ctx) &&
             p.osz[2] % pack == 0 && tiles <= (int64_t)wgt_gpu_limits(ctx)->max_compute_workgroups_per_dimension;
    const wgt_layout *ls[2] = {&x->l, &y->l};
    int64_t per = op_rows_per_chunk(ctx, ls, 2);
    if (per == 0)
        return op_fail(ctx, WGT_ERR_LIMIT, "%s: one image of x or of the output is larger than a storage binding", op);
    if (per > N) per = N;
    uint32_t maxg = wgt_gpu_limits(ctx)->max_compute_workgroups_per_dimension;
    if (gemm && per * P > (int64_t)maxg * bm) per = (int64_t)maxg * bm / P;
    if (gemm && (per < 1 || (cout_g + 63) / 64 > maxg || groups > (int)maxg))
        gemm = 0, per = op_rows_per_chunk(ctx, ls, 2);
    if (per > N) per = N;
    if (!fits_u32(per * Cout * P)) per = (int64_t)UINT32_MAX / (Cout * P);
    while (per > 1 && (per * Cout * P) % pack && per < N) per--; /* chunks end on output word boundaries */
    if (per < N && (per * Cout * P) % pack)
        return op_fail(ctx, WGT_ERR_LIMIT, "%s: cannot split the batch on 32-bit words of the output", op);

    wgt_kernel *k;
    wgt_status st = conv_kernel(ctx, gemm ? "gemm" : dw ? "depthwise" : "direct", tm, dt, &k);
    if (st) return st;
    wgt_tensor *wp = NULL; /* gemm: the weight as [G, K.., Cin/G, Cout/G] (reads along the channels) */
    if (gemm) {
        /* from [G, Cout/G, Cin/G, K..], transposed from [G, Cin/G, Cout/G, K..] */
        int64_t v4[4] = {groups, transposed ? cin_g : cout_g, transposed ? cout_g : cin_g, KK};
        int perm[4] = {0, 3, transposed ? 1 : 2, transposed ? 2 : 1};
        wgt_tensor *r = NULL, *t = NULL;
        st = wgt_tensor_reshape(w, 4, v4, &r);
        if (!st) st = wgt_tensor_permute(r, perm, &t);
        if (!st) st = wgt_tensor_copy(t, &wp);
        wgt_tensor_free(r);
        wgt_tensor_free(t);
        if (st) return st;
        w = wp;
    }
    st = conv_dispatch(ctx, k, &p, gemm, dw, tm, per, N, Cout, P, cout_g, groups, x, w, b, y);
    wgt_tensor_free(wp);
    return st;
}

/* The dispatches of conv_gpu: one per chunk of `per` images. */
static wgt_status conv_dispatch(wgt_context *ctx, const wgt_kernel *k, conv_params *pp, int gemm, int dw, int tm,
                                int64_t per, int64_t N, int64_t Cout, int64_t P, int64_t cout_g, int groups,
                                const wgt_tensor *x, const wgt_tensor *w, const wgt_tensor *b, wgt_tensor *y)
{
    conv_params p = *pp;
    int pack = op_pack(y->l.dtype), bm = (int)op_workgroup_size(ctx) / 16 * tm;
    int64_t tiles = ((p.osz[1] + 31) / 32) * ((p.osz[2] + 31) / 32);
    wgt_status st;
    wgt_binding bind[4];
    int64_t base;
    if ((st = op_bind_all(w, &bind[1], &base))) return st;
    p.w_off = (uint32_t)(w->l.offset - base);
    if (b) {
        if ((st = op_bind_all(b, &bind[2], &base))) return st;
        p.b_off = (uint32_t)(b->l.offset - base);
    } else {
        bind[2] = bind[1];
    }
    for (int64_t n0 = 0; n0 < N; n0 += per) {
        int64_t n1 = n0 + per < N ? n0 + per : N;
        wgt_layout c = x->l;
        c.offset += n0 * c.strides[0];
        c.shape[0] = n1 - n0;
        int64_t lo, hi;
        op_extent(&c, &lo, &hi);
        if ((st = op_bind(x, lo, hi, &bind[0], &base))) return st;
        p.x_off = (uint32_t)(c.offset - base);
        int64_t e0 = n0 * Cout * P, e1 = n1 * Cout * P;
        if ((st = op_bind(y, e0, e1 - 1, &bind[3], &base))) return st;
        p.out_w0 = (uint32_t)((e0 - base) / pack);
        p.n_img = (uint32_t)(n1 - n0);
        uint32_t gx, gy, gz = 1;
        if (dw) {
            uint64_t planes = (uint64_t)(n1 - n0) * Cout;
            p.total = (uint32_t)(e1 - e0);
            gx = (uint32_t)tiles, gy = planes < 65535 ? (uint32_t)planes : 65535u,
            gz = (uint32_t)((planes + 65534) / 65535);
        } else if (gemm) {
            p.total = (uint32_t)((n1 - n0) * P);
            gx = (uint32_t)((cout_g + 63) / 64), gy = (uint32_t)((p.total + bm - 1) / bm), gz = (uint32_t)groups;
        } else {
            p.total = (uint32_t)(e1 - e0);
            op_grid(ctx, ((uint64_t)p.total + 511) / 512, &gx, &gy);
        }
        if ((st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, bind, 4, gx, gy, gz))) return st;
    }
    return WGT_OK;
}

typedef struct conv_ref_arg {
    int transposed, has_bias;
    wgt_conv_params p;
} conv_ref_arg;

static wgt_status conv_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    conv_ref_arg *a = arg;
    const wgt_cpu_tensor *b = a->has_bias ? &in[2] : NULL;
    return a->transposed ? wgt_cpu_conv_transpose(&in[0], &in[1], b, &a->p, &out[0])
                         : wgt_cpu_conv(&in[0], &in[1], b, &a->p, &out[0]);
}

/* out = bias broadcast over [N, Cout, *O] (or zeros): a convolution over no input channels. */
static wgt_status bias_only(wgt_context *ctx, const wgt_tensor *b, wgt_tensor *y, wgt_tensor **res)
{
    if (!b) return wgt_tensor_zeros(ctx, y->l.dtype, y->l.ndim, y->l.shape, res);
    int64_t shape[WGT_MAX_NDIM];
    for (int d = 0; d < y->l.ndim; d++) shape[d] = d == 1 ? y->l.shape[1] : 1;
    wgt_tensor *v = NULL, *e = NULL;
    wgt_status st = wgt_tensor_reshape(b, y->l.ndim, shape, &v);
    if (!st) st = wgt_tensor_expand(v, y->l.ndim, y->l.shape, &e);
    if (!st) st = wgt_tensor_copy(e, res);
    wgt_tensor_free(v);
    wgt_tensor_free(e);
    return st;
}

/* rec: the resolved geometry, for the backward (src/autograd/grad_conv.c) */
static wgt_status conv_impl(const char *op, int transposed, const wgt_tensor *x, const wgt_tensor *w,
                            const wgt_tensor *bias, const wgt_conv_params *params, op_grad_conv *rec,
                            wgt_tensor **out)
{
    OP_BEGIN(x, out);
    if (!w) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: weight is NULL", op);
    const wgt_tensor *ts[3] = {x, w, bias};
    wgt_status st = op_same_context(op, ts, bias ? 3 : 2);
    if (st) return st;
    wgt_conv_params p;
    memset(&p, 0, sizeof p);
    if (params) p = *params;
    int nsp = w->l.ndim - 2;
    if (nsp < 1 || nsp > 3)
        return op_fail(ctx, WGT_ERR_SHAPE, "%s: weight must be 3-, 4- or 5-D ([%s, %s, *kernel]), not %d-D", op,
                       transposed ? "Cin" : "Cout", transposed ? "Cout/groups" : "Cin/groups", w->l.ndim);
    if (x->l.ndim != w->l.ndim)
        return op_fail(ctx, WGT_ERR_SHAPE,
                       "%s: x must be [N, C, *spatial] with %d spatial dims like the weight, not %d-D", op, nsp,
                       x->l.ndim);
    wgt_dtype dt = x->l.dtype;
    if (!op_is_float(dt))
        return op_fail(ctx, WGT_ERR_DTYPE, "%s: x must be f32, f16 or bf16, not %s", op, wgt_dtype_name(dt));
    if (w->l.dtype != dt)
        return op_fail(ctx, WGT_ERR_DTYPE, "%s: weight is %s, x %s: they must match", op, wgt_dtype_name(w->l.dtype),
                       wgt_dtype_name(dt));
    if (bias && bias->l.dtype != dt)
        return op_fail(ctx, WGT_ERR_DTYPE, "%s: bias is %s, x %s: they must match", op, wgt_dtype_name(bias->l.dtype),
                       wgt_dtype_name(dt));
    int64_t G = p.groups ? p.groups : 1, Cin = x->l.shape[1], Cout;
    if (G < 1 || Cin % G)
        return op_fail(ctx, WGT_ERR_SHAPE, "%s: groups %lld must be positive and divide the %lld input channels", op,
                       (long long)G, (long long)Cin);
    if (transposed) {
        if (w->l.shape[0] != Cin)
            return op_fail(
                ctx, WGT_ERR_SHAPE,
                "%s: weight dim 0 is %lld, x has %lld input channels (weight is [Cin, Cout/groups, *kernel])", op,
                (long long)w->l.shape[0], (long long)Cin);
        Cout = w->l.shape[1] * G;
    } else {
        Cout = w->l.shape[0];
        if (w->l.shape[1] * G != Cin)
            return op_fail(
                ctx, WGT_ERR_SHAPE,
                "%s: weight dim 1 is %lld, want Cin / groups = %lld / %lld (weight is [Cout, Cin/groups, *kernel])", op,
                (long long)w->l.shape[1], (long long)Cin, (long long)G);
        if (Cout % G)
            return op_fail(ctx, WGT_ERR_SHAPE, "%s: groups %lld do not divide the %lld output channels", op,
                           (long long)G, (long long)Cout);
    }
    if (bias && (bias->l.ndim != 1 || bias->l.shape[0] != Cout))
        return op_fail(ctx, WGT_ERR_SHAPE, "%s: bias must be [Cout] = [%lld]", op, (long long)Cout);
    int64_t O[3], pb[3], s[3], dl[3];
    if ((st = wgt_cpu_conv_geometry(op, &p, transposed, nsp, x->l.shape + 2, w->l.shape + 2, O, pb))) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", wgt_errmsg());
        return op_fail(ctx, st, "%s", msg);
    }
    for (int d = 0; d < nsp; d++) s[d] = p.stride[d] ? p.stride[d] : 1, dl[d] = p.dilation[d] ? p.dilation[d] : 1;
    rec->transposed = transposed, rec->groups = (int)G;
    for (int d = 0; d < nsp; d++) rec->stride[d] = s[d], rec->dilation[d] = dl[d], rec->pad_begin[d] = pb[d];
    int64_t shape[5] = {x->l.shape[0], Cout};
    for (int d = 0; d < nsp; d++) shape[2 + d] = O[d];
    wgt_tensor *y;
    if ((st = wgt_tensor_new(ctx, dt, nsp + 2, shape, &y))) return st;
    if (wgt_layout_numel(&y->l) == 0) return op_finish(WGT_OK, y, out);
    if (op_use_gpu(ctx, op, dt, 1)) {
        if (wgt_layout_numel(&x->l) == 0 || wgt_layout_numel(&w->l) == 0) { /* no input channels (or Cout/groups 0) */
            wgt_tensor *r = NULL;
            st = bias_only(ctx, bias, y, &r);
            wgt_tensor_free(y);
            y = r;
        } else {
            wgt_tensor *wc = NULL, *bc = NULL;
            st = wgt_tensor_contiguous(w, &wc);
            if (!st && bias) st = wgt_tensor_contiguous(bias, &bc);
            if (!st) st = conv_gpu(ctx, op, transposed, x, wc, bc, (int)G, s, dl, pb, y);
            wgt_tensor_free(wc);
            wgt_tensor_free(bc);
        }
    } else {
        conv_ref_arg a = {transposed, bias != NULL, p};
        const wgt_tensor *ins[3] = {x, w, bias};
        st = op_reference(ctx, conv_ref, &a, ins, 3, &y, 1);
    }
    return op_finish(st, y, out);
}

wgt_status wgt_conv(const wgt_tensor *x, const wgt_tensor *weight, const wgt_tensor *bias,
                    const wgt_conv_params *params, wgt_tensor **out)
{
    op_grad_conv rec = {0};
    const wgt_tensor *in[3] = {x, weight, bias};
    return op_record(conv_impl("conv", 0, x, weight, bias, params, &rec, out), OP_GRAD_CONV, in, 3, &rec, sizeof rec,
                     out);
}

wgt_status wgt_conv_transpose(const wgt_tensor *x, const wgt_tensor *weight, const wgt_tensor *bias,
                              const wgt_conv_params *params, wgt_tensor **out)
{
    op_grad_conv rec = {0};
    const wgt_tensor *in[3] = {x, weight, bias};
    return op_record(conv_impl("conv_transpose", 1, x, weight, bias, params, &rec, out), OP_GRAD_CONV, in, 3, &rec,
                     sizeof rec, out);
}

wgt_status wgt_conv_output_shape(const wgt_conv_params *params, int transposed, int nsp, const int64_t *S,
                                 const int64_t *K, int64_t *O, int64_t *pad_begin)
{
    if (!S || !K || !O || !pad_begin)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_conv_output_shape: NULL argument");
    wgt_conv_params p;
    memset(&p, 0, sizeof p);
    if (params) p = *params;
    return wgt_cpu_conv_geometry(transposed ? "conv_transpose" : "conv", &p, transposed, nsp, S, K, O, pad_begin);
}
