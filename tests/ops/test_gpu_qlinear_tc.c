/* Quantized prefill on the tensor cores (src/ops/matmul_tcq.c, src/kernels/matmul_tcq.wgsl) against
 * a host oracle: Q8_0 / Q4_0 weights quantised with wgt_quantize, dequantised with wgt_dequantize,
 * then rounded to f16 as the kernel's tiles hold them, x rounded to f16 likewise, products summed
 * in double (tests/support/linear.h's f32 summation bound). WGT_QLINEAR_TC=emulate runs the same
 * tiles with scalar fragments, so CPU adapters with shader-f16 (lavapipe) check the tile logic:
 * odd token, row and column counts, partial tiles, bias and none, a k split (its combine adds the
 * bias), a weight narrowed along its rows, several tiles and WGT_QLINEAR_TC_TILE=auto;
 * WGT_QLINEAR_TC=deq (the weight dequantised into f16 rows by matmul_tcq_dequant.wgsl, then
 * matmul_tcd emulated) the same way. Where the adapter has no shader-f16 (OpenGL ES) the products
 * fall back to qlinear.wgsl and are checked against the plain oracle. Last, WGT_QLINEAR_TC=1: the
 * subgroup-matrix fragments where the device has them (the H200), else the fallback again. */
#include <math.h>
#include <string.h>

#include "gpu/gpu.h"
#include "ops/api.h"
#include "ops/ops.h"
#include "support/check.h"
#include "support/linear.h"

static int tiles_run; /* 1 when the kernel takes the products (shader-f16): the oracle rounds to f16 */

static float *round_f16(const float *v, int64_t n)
{
    float *r = malloc((size_t)(n ? n : 1) * sizeof(float));
    for (int64_t i = 0; i < n; i++) r[i] = (float)wgt_cpu_f16_to_f64(wgt_cpu_f64_to_f16(v[i]));
    return r;
}

/* x [tokens, cols] random through w (rows of q from row r0, n rows) with or without a bias. */
static void run_case(wgt_context *ctx, const char *tag, const test_qweight *q, const wgt_tensor *w, int64_t r0,
                     int64_t n, int64_t tokens, int with_bias)
{
    float *x = test_random_f32(tokens * q->cols, -1, 1), *b = with_bias ? test_random_f32(n, -2, 2) : NULL;
    wgt_tensor *tx, *tb = NULL, *y = NULL;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){tokens, q->cols}, x, &tx));
    if (b) MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, &n, b, &tb));
    char what[160];
    snprintf(what, sizeof what, "%s %s rows %lld..%lld of [%lld, %lld] x %lld tokens%s", tag, wgt_ftype_name(q->type),
             (long long)r0, (long long)(r0 + n), (long long)q->rows, (long long)q->cols, (long long)tokens,
             b ? " + bias" : "");
    wgt_status st = wgt_qlinear(tx, w, q->type, tb, &y);
    CHECK(st == WGT_OK, "%s: %s", what, wgt_errmsg());
    if (!st) {
        float *xr = tiles_run ? round_f16(x, tokens * q->cols) : x;
        float *wr = tiles_run ? round_f16(q->deq + r0 * q->cols, n * q->cols) : q->deq + r0 * q->cols;
        test_linear_compare(what, y, xr, wr, b, tokens, n, q->cols);
        if (tiles_run) free(xr), free(wr);
    }
    wgt_tensor_free(y);
    wgt_tensor_free(tx);
    wgt_tensor_free(tb);
    free(x);
    free(b);
}

/* Each format over shapes with partial tiles in both directions and one long k (split by default
 * where few tiles cover it), under the tile setting already in the environment. */
static void cases(wgt_context *ctx, const char *tag)
{
    const wgt_ftype types[] = {WGT_FTYPE_Q8_0, WGT_FTYPE_Q4_0};
    const int64_t shapes[][3] = {{37, 96, 65}, {130, 64, 77}, {64, 1088, 70}, {33, 32, 129}}; /* rows, cols, tokens */
    for (int ti = 0; ti < 2; ti++)
        for (int si = 0; si < 4; si++) {
            test_qweight q;
            test_qweight_make(&q, types[ti], shapes[si][0], shapes[si][1]);
            wgt_tensor *w;
            MUST(wgt_qweight_upload(ctx, q.type, q.rows, q.cols, q.blocks, &w));
            run_case(ctx, tag, &q, w, 0, q.rows, shapes[si][2], (si + ti) & 1);
            run_case(ctx, tag, &q, w, 0, q.rows, shapes[si][2], !((si + ti) & 1));
            wgt_tensor_free(w);
            test_qweight_free(&q);
        }
}

/* A narrow along rows (a fused q/k/v split: the rows start at an offset of whole rows, 2-byte
 * aligned only for Q4_0's 18-byte blocks of one-block rows) */
static void narrowed(wgt_context *ctx, wgt_ftype type, int64_t cols)
{
    test_qweight q;
    test_qweight_make(&q, type, 50, cols);
    wgt_tensor *w, *wn;
    MUST(wgt_qweight_upload(ctx, q.type, q.rows, q.cols, q.blocks, &w));
    MUST(wgt_tensor_narrow(w, 0, 17, 21, &wn));
    run_case(ctx, "narrowed", &q, wn, 17, 21, 66, 1);
    wgt_tensor_free(wn);
    wgt_tensor_free(w);
    test_qweight_free(&q);
}

int main(void)
{
    wgt_context *ctx;
    MUST(wgt_context_create(NULL, &ctx));
    setenv("WGT_QLINEAR_TC", "emulate", 1);
    tiles_run = wgt_gpu_has_f16(ctx) && !wgt_gpu_avoid_barriers(ctx);
    if (!tiles_run)
        printf("SKIP: no shader-f16 on this adapter: the tiles do not run, the products fall back to qlinear.wgsl "
               "(checked below against the plain oracle)\n");
    cases(ctx, "tiles (own choice)");
    narrowed(ctx, WGT_FTYPE_Q8_0, 64);
    narrowed(ctx, WGT_FTYPE_Q4_0, 32);
    const char *tiles[] = {"1x2:2x1", "1x1:1x1", "auto"};
    for (int i = 0; i < 3; i++) {
        setenv("WGT_QLINEAR_TC_TILE", tiles[i], 1);
        char tag[64];
        snprintf(tag, sizeof tag, "tile %s", tiles[i]);
        cases(ctx, tag);
    }
    setenv("WGT_QLINEAR_TC_SPLIT", "3", 1);
    cases(ctx, "tile 1x1:1x1, k in 3 slices");
    unsetenv("WGT_QLINEAR_TC_SPLIT");
    unsetenv("WGT_QLINEAR_TC_TILE");
    /* the comparator: the weight dequantised into f16 rows, then matmul_tcd (emulated) */
    setenv("WGT_QLINEAR_TC", "deq", 1);
    setenv("WGT_MATMUL_TCD", "emulate", 1);
    cases(ctx, "f16 copy + matmul_tcd emulated");
    narrowed(ctx, WGT_FTYPE_Q4_0, 32);
    unsetenv("WGT_MATMUL_TCD");
    /* where subgroup matrices exist, the real fragments (the H200; elsewhere the fallback again) */
    setenv("WGT_QLINEAR_TC", "1", 1);
    const wgt_adapter_info *info = wgt_gpu_info(ctx);
    tiles_run = info->has_subgroup_matrix && wgt_gpu_has_f16(ctx);
    cases(ctx, "subgroup matrices");
    printf("%lld values compared (%s)\n", (long long)test_compared,
           tiles_run ? "subgroup matrices at the end" : "no subgroup matrices: the last round fell back");
    wgt_context_free(ctx);
    return test_finish("test_gpu_qlinear_tc");
}
