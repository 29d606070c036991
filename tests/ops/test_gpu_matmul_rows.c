/* Linear layers over a few rows (src/kernels/matmul_rows.wgsl, src/ops/matmul_rows.c): wgt_linear
 * with f32, f16 and bf16 weights and wgt_qlinear with Q8_0, Q4_0, Q4_K and Q6_K blocks, x of
 * M = 1, 2, 7, 8, 33 and 64 rows (blocks: 2, 8, 9, 12, 33, 64; the fewest take the GEMVs; then one
 * pass, a partial pass, several passes of 8 rows), against a
 * sum in double on the host over the weights as the kernel sees them (rounded to the dtype, or
 * dequantised with wgt_dequantize). N is odd (a partly empty last group of 4 weight rows) and
 * small or large (lanes per row doubled, or not); K covers fewer pieces than lanes, one step and
 * several; an odd K (not 8-aligned: the tiled kernel) and f16 x with a bias and a strided view
 * too; WGT_MATMUL_ROWS=16 (16 rows a pass) and =0 (the kernel off) rerun a few cases.
 * Tolerance: f32 sums in another order than the double sum: (K + 2) * 2^-24 * sum |x w| plus,
 * for Q4_K's possibly fused d*sc*q - dmin*m, 2^-23 * max|w| * sum|x| (as test_gpu_qlinear). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "ops/ops.h"
#include "support/check.h"
#include "support/linear.h"

/* wgt_linear of x [M, K] (f32, or f16 with half_x) by random weights [N, K] of dtype wdt. */
static void float_case(wgt_context *ctx, int64_t M, int64_t N, int64_t K, wgt_dtype wdt, int with_bias, int half_x)
{
    float *x = test_random_f32(M * K, -1, 1), *w = test_random_f32(N * K, -1, 1);
    float *b = with_bias ? test_random_f32(N, -2, 2) : NULL;
    wgt_tensor *tx, *tx32, *w32, *tw, *tb = NULL, *y;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){M, K}, x, &tx32));
    MUST(wgt_tensor_cast(tx32, half_x ? WGT_F16 : WGT_F32, &tx));
    wgt_tensor *back;
    MUST(wgt_tensor_cast(tx, WGT_F32, &back)); /* x as the kernel sees it */
    MUST(wgt_tensor_to_host(back, x, (size_t)(M * K) * sizeof(float)));
    wgt_tensor_free(back);
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){N, K}, w, &w32));
    MUST(wgt_tensor_cast(w32, wdt, &tw));
    MUST(wgt_tensor_cast(tw, WGT_F32, &back));
    MUST(wgt_tensor_to_host(back, w, (size_t)(N * K) * sizeof(float)));
    wgt_tensor_free(back);
    if (b) MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, &N, b, &tb));
    char what[160];
    snprintf(what, sizeof what, "linear %s x [%lld, %lld] %s w [%lld, %lld]%s", half_x ? "f16" : "f32", (long long)M,
             (long long)K, wgt_dtype_name(wdt), (long long)N, (long long)K, b ? " + bias" : "");
    wgt_status st = wgt_linear(tx, tw, tb, &y);
    CHECK(st == WGT_OK, "%s: %s", what, wgt_errmsg());
    if (!st) {
        test_linear_compare(what, y, x, w, b, M, N, K);
        wgt_tensor_free(y);
    }
    wgt_tensor_free(tx), wgt_tensor_free(tx32), wgt_tensor_free(w32), wgt_tensor_free(tw), wgt_tensor_free(tb);
    free(x), free(w), free(b);
}

/* x a view: rows M of a [M, K + 8] tensor, from column 8 (strided rows, an offset in whole vec4s). */
static void strided_case(wgt_context *ctx, int64_t M, int64_t N, int64_t K)
{
    int64_t L = K + 8;
    float *xf = test_random_f32(M * L, -1, 1), *x = malloc((size_t)(M * K) * sizeof(float));
    float *w = test_random_f32(N * K, -1, 1);
    for (int64_t m = 0; m < M; m++) memcpy(x + m * K, xf + m * L + 8, (size_t)K * sizeof(float));
    wgt_tensor *tf, *tx, *tw, *y;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){M, L}, xf, &tf));
    MUST(wgt_tensor_narrow(tf, 1, 8, K, &tx));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){N, K}, w, &tw));
    wgt_status st = wgt_linear(tx, tw, NULL, &y);
    CHECK(st == WGT_OK, "strided x: %s", wgt_errmsg());
    if (!st) {
        test_linear_compare("linear strided x", y, x, w, NULL, M, N, K);
        wgt_tensor_free(y);
    }
    wgt_tensor_free(tf), wgt_tensor_free(tx), wgt_tensor_free(tw);
    free(xf), free(x), free(w);
}

/* wgt_qlinear of x [M, K] by random weights [N, K] quantised to type. */
static void block_case(wgt_context *ctx, wgt_ftype type, int64_t M, int64_t N, int64_t K, int with_bias)
{
    test_qweight q;
    test_qweight_make(&q, type, N, K);
    float *x = test_random_f32(M * K, -1, 1), *b = with_bias ? test_random_f32(N, -2, 2) : NULL;
    wgt_tensor *tw, *tx, *tb = NULL, *y;
    MUST(wgt_qweight_upload(ctx, type, N, K, q.blocks, &tw));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, (int64_t[]){M, K}, x, &tx));
    if (b) MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, &N, b, &tb));
    char what[160];
    snprintf(what, sizeof what, "qlinear x [%lld, %lld] %s w [%lld, %lld]%s", (long long)M, (long long)K,
             wgt_ftype_name(type), (long long)N, (long long)K, b ? " + bias" : "");
    wgt_status st = wgt_qlinear(tx, tw, type, tb, &y);
    CHECK(st == WGT_OK, "%s: %s", what, wgt_errmsg());
    if (!st) {
        test_linear_compare(what, y, x, q.deq, b, M, N, K);
        wgt_tensor_free(y);
    }
    wgt_tensor_free(tw), wgt_tensor_free(tx), wgt_tensor_free(tb);
    test_qweight_free(&q);
    free(x), free(b);
}

/* Each weight dtype or block format is one pipeline (each takes seconds to compile on lavapipe). */
static void run_all(wgt_context *ctx)
{
    /* float weights take the kernel from 5 rows, blocks from 9 (the GEMVs below) */
    const int64_t ms[] = {1, 2, 7, 8, 33, 64}, qms[] = {2, 8, 9, 12, 33, 64};
    const wgt_dtype dts[] = {WGT_F32, WGT_F16, WGT_BF16};
    /* K 96: 12 pieces, fewer than a row's 32 lanes; 2112: 264 pieces (lanes doubled to 256 for
     * N 37); N 37 and 301 */
    for (int d = 0; d < 3; d++)
        for (int i = 0; i < 6; i++) {
            float_case(ctx, ms[i], 37, 2112, dts[d], i & 1, 0);
            float_case(ctx, ms[i], 301, 96, dts[d], !(i & 1), 0);
        }
    float_case(ctx, 9, 67, 803, WGT_F16, 1, 0); /* K not a multiple of 8: the tiled kernel */
    float_case(ctx, 16, 45, 264, WGT_F16, 1, 1); /* f16 x */
    strided_case(ctx, 12, 29, 256);
    const wgt_ftype types[] = {WGT_FTYPE_Q8_0, WGT_FTYPE_Q4_0, WGT_FTYPE_Q4_K, WGT_FTYPE_Q6_K};
    for (int t = 0; t < 4; t++)
        for (int i = 0; i < 6; i++) {
            block_case(ctx, types[t], qms[i], 37, 512, i & 1);
            if (types[t] == WGT_FTYPE_Q8_0 || types[t] == WGT_FTYPE_Q4_0)
                block_case(ctx, types[t], qms[i], 133, 96, !(i & 1)); /* 3 blocks a row, rows not 4-byte aligned */
        }
}

int main(void)
{
    test_rng = 0x2545F4914F6CDD1Dull; /* this test's sequence since it was written */
    wgt_context *ctx;
    MUST(wgt_context_create(NULL, &ctx));
    run_all(ctx);
    setenv("WGT_MATMUL_ROWS", "16", 1); /* 16 rows a pass: one pass, a partial one, several */
    for (int i = 0; i < 3; i++) {
        float_case(ctx, (int64_t[]){7, 33, 64}[i], 37, 2112, WGT_F16, i & 1, 0);
        block_case(ctx, WGT_FTYPE_Q8_0, (int64_t[]){12, 33, 64}[i], 133, 96, !(i & 1));
    }
    setenv("WGT_MATMUL_ROWS", "0", 1); /* off: the GEMV and tiled kernels again */
    float_case(ctx, 7, 37, 2112, WGT_F16, 1, 0);
    block_case(ctx, WGT_FTYPE_Q8_0, 12, 133, 96, 0);
    unsetenv("WGT_MATMUL_ROWS");
    wgt_context_free(ctx);
    return test_finish("test_gpu_matmul_rows");
}
