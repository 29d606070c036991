/* Convolutions on the GPU against the CPU reference (src/cpu/conv.c, double sums), and the
 * reference against values worked out by hand: conv1d/2d/3d with stride, asymmetric and 'same'
 * padding, dilation, groups, bias; the depthwise tile kernel (32 x 32 outputs from workgroup
 * memory, several tiles, a channel multiplier); the implicit-GEMM path (64 channels, 3x3; 128-pixel
 * tiles) in f32, f16 and bf16, and the direct path where a 16-bit output's pixels per image are
 * odd; conv_transpose1d/2d/3d with stride, padding, output_padding, dilation and groups (direct
 * and GEMM paths); strided (transposed) inputs, NaN/inf, empty batches, no input channels, a batch
 * split over storage bindings (limit lowered), and bad arguments; every shape again through the
 * direct kernel alone (WGT_CONV_PATH=direct); the tiled shapes again at 128 invocations per
 * workgroup and 16 KiB of workgroup memory (compatibility mode's default limits, lowered). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "gpu_pair.h"

#define DIMS3(...) ((int64_t[]){__VA_ARGS__})
#define DIMS4(...) ((int64_t[]){__VA_ARGS__})

/* f32 sums of up to ~600 products of values in [-1, 1] against double; 16-bit outputs: one
 * rounding (2^-8 relative for bf16) of a result that may be small next to its terms. */
static double atol_of(wgt_dtype dt) { return dt == WGT_F16 ? 1e-3 : dt == WGT_BF16 ? 4e-3 : 2e-5; }
static double rtol_of(wgt_dtype dt) { return dt == WGT_F16 ? 2e-3 : dt == WGT_BF16 ? 1e-2 : 1e-5; }

typedef struct spec {
    const char *what;
    int transposed;
    int nsp;
    int64_t x[5], w[5];
    int bias;
    wgt_conv_params p;
} spec;

static void run_spec(const spec *sp, wgt_dtype dt, int strided, int specials)
{
    int nd = sp->nsp + 2;
    int64_t xs[5];
    memcpy(xs, sp->x, sizeof xs);
    if (strided) { /* allocate with the last two dims swapped, then transpose back: a strided view */
        int64_t t = xs[nd - 1];
        xs[nd - 1] = xs[nd - 2], xs[nd - 2] = t;
    }
    pair xr = pair_rand(dt, nd, xs, -1, 1, specials);
    pair x = strided ? pair_transpose(xr, nd - 1, nd - 2) : xr;
    pair w = pair_rand(dt, nd, sp->w, -1, 1, 0);
    int64_t cout = sp->transposed ? sp->w[1] * (sp->p.groups ? sp->p.groups : 1) : sp->w[0];
    pair b = sp->bias ? pair_rand(dt, 1, &cout, -1, 1, 0) : (pair){{NULL, NULL}};
    char what[160];
    snprintf(what, sizeof what, "%s %s%s%s", sp->what, wgt_dtype_name(dt), strided ? " strided" : "",
             specials ? " nan/inf" : "");
    DIFF(what, atol_of(dt), rtol_of(dt),
         sp->transposed ? wgt_conv_transpose(x.t[S], w.t[S], b.t[S], &sp->p, &y_[S])
                        : wgt_conv(x.t[S], w.t[S], b.t[S], &sp->p, &y_[S]));
    if (strided) pair_free(x);
    pair_free(xr), pair_free(w), pair_free(b);
}

#define P(...) ((wgt_conv_params){__VA_ARGS__})

static const spec specs[] = {
    {"conv1d stride 2 pad 1 groups 2", 0, 1, {2, 4, 17}, {6, 2, 3}, 1, P(.stride = {2}, .pad_begin = {1}, .pad_end = {1}, .groups = 2)},
    {"conv1d dilation 3 same", 0, 1, {3, 5, 20}, {4, 5, 4}, 0, P(.dilation = {3}, .padding = WGT_CONV_PAD_SAME)},
    {"conv2d asym pad stride dil groups", 0, 2, {2, 6, 11, 13}, {8, 3, 3, 3}, 1,
     P(.stride = {2, 1}, .dilation = {1, 2}, .pad_begin = {1, 2}, .pad_end = {0, 1}, .groups = 2)},
    {"conv2d same stride 1 dil 2", 0, 2, {1, 3, 9, 10}, {5, 3, 3, 2}, 1, P(.dilation = {2, 2}, .padding = WGT_CONV_PAD_SAME)},
    {"conv2d same_lower stride 2", 0, 2, {2, 3, 9, 10}, {4, 3, 4, 3}, 1, P(.stride = {2, 2}, .padding = WGT_CONV_PAD_SAME_LOWER)},
    {"conv2d valid 1x1", 0, 2, {2, 7, 5, 6}, {3, 7, 1, 1}, 1, P(.padding = WGT_CONV_PAD_VALID)},
    {"depthwise 3x3", 0, 2, {2, 16, 15, 17}, {16, 1, 3, 3}, 1, P(.pad_begin = {1, 1}, .pad_end = {1, 1}, .groups = 16)},
    {"depthwise x2 stride 2", 0, 2, {1, 8, 14, 13}, {16, 1, 3, 3}, 0,
     P(.stride = {2, 2}, .pad_begin = {1, 1}, .pad_end = {1, 1}, .groups = 8)},
    {"depthwise tiles 5x5 dil 2", 0, 2, {2, 4, 40, 70}, {8, 1, 5, 5}, 1,
     P(.dilation = {2, 2}, .pad_begin = {4, 3}, .pad_end = {4, 5}, .groups = 4)},
    {"gemm 64ch 3x3", 0, 2, {2, 64, 12, 12}, {64, 64, 3, 3}, 1, P(.pad_begin = {1, 1}, .pad_end = {1, 1})},
    {"gemm 96ch stride 2 groups 2 (odd pixels)", 0, 2, {1, 96, 33, 33}, {80, 48, 3, 3}, 1,
     P(.stride = {2, 2}, .pad_begin = {1, 1}, .pad_end = {1, 1}, .groups = 2)},
    {"gemm 128-pixel tiles", 0, 2, {1, 16, 96, 96}, {32, 16, 3, 3}, 1, P(.pad_begin = {1, 1}, .pad_end = {1, 1})},
    {"conv3d", 0, 3, {1, 3, 5, 6, 7}, {4, 3, 2, 3, 3}, 1, P(.stride = {1, 2, 1}, .pad_begin = {1, 1, 1}, .pad_end = {0, 1, 1})},
    {"conv_transpose1d", 0 + 1, 1, {2, 4, 9}, {4, 3, 3}, 1, P(.stride = {2}, .pad_begin = {1}, .pad_end = {1}, .output_padding = {1})},
    {"conv_transpose1d groups 2", 1, 1, {2, 4, 6}, {4, 2, 4}, 0, P(.stride = {3}, .groups = 2)},
    {"conv_transpose2d", 1, 2, {2, 6, 5, 7}, {6, 4, 3, 3}, 1,
     P(.stride = {2, 3}, .dilation = {1, 2}, .pad_begin = {1, 0}, .pad_end = {1, 2}, .output_padding = {1, 0}, .groups = 2)},
    {"conv_transpose3d", 1, 3, {1, 4, 3, 4, 3}, {4, 2, 2, 3, 2}, 1,
     P(.stride = {2, 1, 3}, .pad_begin = {0, 1, 1}, .pad_end = {1, 0, 0}, .output_padding = {1, 0, 2}, .groups = 2)},
    {"conv_transpose2d gemm", 1, 2, {2, 32, 9, 10}, {32, 48, 3, 3}, 1,
     P(.stride = {2, 2}, .pad_begin = {1, 1}, .pad_end = {1, 1}, .output_padding = {1, 1})},
    {"conv_transpose2d gemm groups dil", 1, 2, {1, 64, 16, 16}, {64, 32, 3, 3}, 0,
     P(.dilation = {2, 2}, .pad_begin = {1, 1}, .pad_end = {1, 1}, .groups = 2)},
    {"conv_transpose2d same", 1, 2, {1, 3, 4, 5}, {3, 2, 3, 3}, 1, P(.stride = {2, 2}, .padding = WGT_CONV_PAD_SAME)},
};

/* The reference against hand-computed values. */
static void hand_checks(void)
{
    wgt_context *c = side[1];
    /* conv1d: x [1, 1, 5] = 1..5, w [1, 1, 3] = (1, 0, -1), pad 1, bias 0.5:
     * y[o] = x[o-1] - x[o+1] + 0.5 (zero outside) = (-2+.5, 1-3+.5, ...) */
    float xv[5] = {1, 2, 3, 4, 5}, wv[3] = {1, 0, -1}, bv[1] = {0.5f}, y[5];
    const float want[5] = {-1.5f, -1.5f, -1.5f, -1.5f, 4.5f};
    wgt_tensor *x, *w, *b, *o;
    MUST(wgt_tensor_from_host(c, WGT_F32, 3, DIMS3(1, 1, 5), xv, &x));
    MUST(wgt_tensor_from_host(c, WGT_F32, 3, DIMS3(1, 1, 3), wv, &w));
    MUST(wgt_tensor_from_host(c, WGT_F32, 1, (int64_t[]){1}, bv, &b));
    wgt_conv_params p = P(.pad_begin = {1}, .pad_end = {1});
    MUST(wgt_conv(x, w, b, &p, &o));
    MUST(wgt_tensor_to_host(o, y, sizeof y));
    for (int i = 0; i < 5; i++) CHECK(y[i] == want[i], "hand conv1d: y[%d] = %g, want %g", i, y[i], want[i]);
    wgt_tensor_free(o);
    /* conv_transpose1d of x [1,1,2] = (1, 2) with w (1, 10, 100), stride 2: outputs
     * x0 w at 0..2 and x1 w at 2..4: (1, 10, 101+... ) = (1, 10, 100 + 2, 20, 200) */
    float xt[2] = {1, 2}, wt[3] = {1, 10, 100}, yt[5];
    const float want_t[5] = {1, 10, 102, 20, 200};
    wgt_tensor *x2, *w2;
    MUST(wgt_tensor_from_host(c, WGT_F32, 3, DIMS3(1, 1, 2), xt, &x2));
    MUST(wgt_tensor_from_host(c, WGT_F32, 3, DIMS3(1, 1, 3), wt, &w2));
    wgt_conv_params pt = P(.stride = {2});
    MUST(wgt_conv_transpose(x2, w2, NULL, &pt, &o));
    CHECK(wgt_tensor_dim(o, 2) == 5, "hand conv_transpose1d: length %lld, want 5", (long long)wgt_tensor_dim(o, 2));
    MUST(wgt_tensor_to_host(o, yt, sizeof yt));
    for (int i = 0; i < 5; i++) CHECK(yt[i] == want_t[i], "hand conv_transpose1d: y[%d] = %g, want %g", i, yt[i], want_t[i]);
    wgt_tensor_free(o);
    /* 'same' with an even kernel puts the odd pad at the end (PyTorch): w (1, 1), x 1..5 -> x[o] + x[o+1] */
    float we[2] = {1, 1}, ye[5];
    const float want_e[5] = {3, 5, 7, 9, 5};
    wgt_tensor *w3;
    MUST(wgt_tensor_from_host(c, WGT_F32, 3, DIMS3(1, 1, 2), we, &w3));
    wgt_conv_params ps = P(.padding = WGT_CONV_PAD_SAME);
    MUST(wgt_conv(x, w3, NULL, &ps, &o));
    MUST(wgt_tensor_to_host(o, ye, sizeof ye));
    for (int i = 0; i < 5; i++) CHECK(ye[i] == want_e[i], "hand same: y[%d] = %g, want %g", i, ye[i], want_e[i]);
    wgt_tensor_free(o);
    ps.padding = WGT_CONV_PAD_SAME_LOWER; /* odd pad first: x[o-1] + x[o] */
    const float want_l[5] = {1, 3, 5, 7, 9};
    MUST(wgt_conv(x, w3, NULL, &ps, &o));
    MUST(wgt_tensor_to_host(o, ye, sizeof ye));
    for (int i = 0; i < 5; i++) CHECK(ye[i] == want_l[i], "hand same_lower: y[%d] = %g, want %g", i, ye[i], want_l[i]);
    wgt_tensor_free(o);
    /* geometry alone: ceil(10 / 2) = 5 outputs, total pad (5 - 1) 2 + 3 - 10 = 1, its odd element at
     * the end (SAME) or the beginning (SAME_LOWER); transposed SAME: 3 * 2 outputs, total pad
     * 2 (3 - 1) + 3 - 6 = 1 */
    int64_t O = 0, pb = -1;
    wgt_conv_params q = P(.stride = {2}, .padding = WGT_CONV_PAD_SAME);
    MUST(wgt_conv_output_shape(&q, 0, 1, (int64_t[]){10}, (int64_t[]){3}, &O, &pb));
    CHECK(O == 5 && pb == 0, "output_shape same: O %lld pad %lld, want 5 and 0", (long long)O, (long long)pb);
    q.padding = WGT_CONV_PAD_SAME_LOWER;
    MUST(wgt_conv_output_shape(&q, 0, 1, (int64_t[]){10}, (int64_t[]){3}, &O, &pb));
    CHECK(O == 5 && pb == 1, "output_shape same_lower: O %lld pad %lld, want 5 and 1", (long long)O, (long long)pb);
    q.padding = WGT_CONV_PAD_SAME;
    MUST(wgt_conv_output_shape(&q, 1, 1, (int64_t[]){3}, (int64_t[]){3}, &O, &pb));
    CHECK(O == 6 && pb == 0, "output_shape transposed same: O %lld pad %lld, want 6 and 0", (long long)O, (long long)pb);
    q = P(.dilation = {4});
    CHECK(wgt_conv_output_shape(&q, 0, 1, (int64_t[]){8}, (int64_t[]){3}, &O, &pb) == WGT_ERR_SHAPE,
          "output_shape: a dilated kernel (extent 9) over 8 elements must be refused");
    compared += 20;
    wgt_tensor_free(x), wgt_tensor_free(w), wgt_tensor_free(b), wgt_tensor_free(x2), wgt_tensor_free(w2), wgt_tensor_free(w3);
}

static void edge_cases(void)
{
    /* empty batch; no input channels (bias only) */
    pair x = pair_rand(WGT_F32, 4, DIMS4(0, 3, 5, 5), -1, 1, 0), w = pair_rand(WGT_F32, 4, DIMS4(2, 3, 3, 3), -1, 1, 0);
    wgt_tensor *y = NULL;
    MUST(wgt_conv(x.t[0], w.t[0], NULL, NULL, &y));
    CHECK(wgt_tensor_numel(y) == 0 && wgt_tensor_dim(y, 1) == 2 && wgt_tensor_dim(y, 2) == 3, "empty batch: wrong shape");
    wgt_tensor_free(y);
    pair_free(x), pair_free(w);
    x = pair_rand(WGT_F32, 4, DIMS4(2, 0, 5, 5), -1, 1, 0), w = pair_rand(WGT_F32, 4, DIMS4(3, 0, 3, 3), -1, 1, 0);
    pair b = pair_rand(WGT_F32, 1, (int64_t[]){3}, -1, 1, 0);
    DIFF("no input channels", 0, 0, wgt_conv(x.t[S], w.t[S], b.t[S], NULL, &y_[S]));
    pair_free(x), pair_free(w), pair_free(b);

    /* a batch over several storage bindings: the limit lowered to 8 KiB (~2 images per dispatch) */
    for (int gemm = 0; gemm < 2; gemm++) {
        x = gemm ? pair_rand(WGT_F32, 4, DIMS4(5, 8, 8, 8), -1, 1, 0) : pair_rand(WGT_F16, 4, DIMS4(7, 3, 15, 21), -1, 1, 0);
        w = gemm ? pair_rand(WGT_F32, 4, DIMS4(32, 8, 3, 3), -1, 1, 0) : pair_rand(WGT_F16, 4, DIMS4(5, 3, 3, 3), -1, 1, 0);
        wgt_context *ctx = side[0];
        uint64_t saved = ctx->info.limits.max_storage_buffer_binding_size;
        ctx->info.limits.max_storage_buffer_binding_size = gemm ? 16384 : 8192;
        wgt_conv_params p = P(.pad_begin = {1, 1}, .pad_end = {1, 0});
        uint64_t d0, d1;
        wgt_memory_stats ms;
        MUST(wgt_context_memory_stats(ctx, &ms));
        d0 = ms.dispatches;
        DIFF(gemm ? "split batch (gemm)" : "split batch (f16, odd outputs per image)", atol_of(gemm ? WGT_F32 : WGT_F16),
             rtol_of(gemm ? WGT_F32 : WGT_F16), wgt_conv(x.t[S], w.t[S], NULL, &p, &y_[S]));
        MUST(wgt_context_memory_stats(ctx, &ms));
        d1 = ms.dispatches;
        CHECK(d1 - d0 >= 3, "split batch: %llu dispatches, want several", (unsigned long long)(d1 - d0));
        ctx->info.limits.max_storage_buffer_binding_size = saved;
        pair_free(x), pair_free(w);
    }

    /* bad arguments: clear statuses, no crash */
    wgt_context *c = side[0];
    wgt_tensor *xf, *wf, *xi, *wh, *w5, *bb;
    MUST(wgt_tensor_zeros(c, WGT_F32, 4, DIMS4(1, 4, 5, 5), &xf));
    MUST(wgt_tensor_zeros(c, WGT_F32, 4, DIMS4(2, 4, 3, 3), &wf));
    MUST(wgt_tensor_zeros(c, WGT_I32, 4, DIMS4(1, 4, 5, 5), &xi));
    MUST(wgt_tensor_zeros(c, WGT_F16, 4, DIMS4(2, 4, 3, 3), &wh));
    MUST(wgt_tensor_zeros(c, WGT_F32, 4, DIMS4(2, 4, 6, 6), &w5));
    MUST(wgt_tensor_zeros(c, WGT_F32, 1, (int64_t[]){3}, &bb));
    wgt_conv_params g3 = P(.groups = 3), op = P(.output_padding = {1, 0}), neg = P(.stride = {-1, 1});
    struct {
        const char *what;
        wgt_status want;
        wgt_status got;
    } bad[] = {
        {"i32 input", WGT_ERR_DTYPE, wgt_conv(xi, wf, NULL, NULL, &y)},
        {"mixed dtypes", WGT_ERR_DTYPE, wgt_conv(xf, wh, NULL, NULL, &y)},
        {"kernel larger than input", WGT_ERR_SHAPE, wgt_conv(xf, w5, NULL, NULL, &y)},
        {"groups not dividing", WGT_ERR_SHAPE, wgt_conv(xf, wf, NULL, &g3, &y)},
        {"bias of the wrong size", WGT_ERR_SHAPE, wgt_conv(xf, wf, bb, NULL, &y)},
        {"output_padding on a convolution", WGT_ERR_INVALID_ARGUMENT, wgt_conv(xf, wf, NULL, &op, &y)},
        {"negative stride", WGT_ERR_INVALID_ARGUMENT, wgt_conv(xf, wf, NULL, &neg, &y)},
        {"weight of the wrong rank", WGT_ERR_SHAPE, wgt_conv(xf, bb, NULL, NULL, &y)},
        {"transposed: weight dim 0 not Cin", WGT_ERR_SHAPE, wgt_conv_transpose(xf, wf, NULL, NULL, &y)},
        {"NULL weight", WGT_ERR_INVALID_ARGUMENT, wgt_conv(xf, NULL, NULL, NULL, &y)},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK(bad[i].got == bad[i].want, "%s: status %s, want %s (%s)", bad[i].what, wgt_status_str(bad[i].got),
              wgt_status_str(bad[i].want), wgt_errmsg());
        CHECK(y == NULL, "%s: an output on failure", bad[i].what);
    }
    CHECK(strstr(wgt_context_errmsg(c), "conv") != NULL, "messages name the op: '%s'", wgt_context_errmsg(c));
    wgt_tensor_free(xf), wgt_tensor_free(wf), wgt_tensor_free(xi), wgt_tensor_free(wh), wgt_tensor_free(w5), wgt_tensor_free(bb);
}

int main(void)
{
    pair_open();
    (void)lo_of, (void)hi_of, (void)pair_narrow; /* gpu_pair.h's helpers for other tests */
    hand_checks();
    const wgt_dtype dts[3] = {WGT_F32, WGT_F16, WGT_BF16};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++)
        for (int di = 0; di < 3; di++) run_spec(&specs[i], dts[di], 0, 0);
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) run_spec(&specs[i], WGT_F32, 1, 0);
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i += 3) run_spec(&specs[i], WGT_F32, 0, 1);
    /* the direct kernel on the shapes the tiled kernels take (what bench_conv --compare measures) */
    setenv("WGT_CONV_PATH", "direct", 1);
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) run_spec(&specs[i], WGT_F32, 0, 0);
    unsetenv("WGT_CONV_PATH");
    /* the GEMM and depthwise tiles at compatibility mode's default limits (half-height GEMM tiles,
     * two depthwise rows per invocation, a smaller depthwise region) */
    wgt_limits saved = side[0]->info.limits;
    side[0]->info.limits.max_compute_invocations_per_workgroup = 128;
    side[0]->info.limits.max_compute_workgroup_size_x = 128;
    side[0]->info.limits.max_compute_workgroup_storage_size = 16384;
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++)
        if (strstr(specs[i].what, "gemm") || strstr(specs[i].what, "depthwise"))
            for (int di = 0; di < 2; di++) run_spec(&specs[i], dts[di], di, 0);
    side[0]->info.limits = saved;
    edge_cases();
    CHECK(compared > 100000, "only %d elements compared", compared);
    wgt_context_free(side[0]), wgt_context_free(side[1]);
    return test_finish("test_gpu_conv");
}
