/* The decode matrix-vector kernel (src/kernels/matmul_gemv.wgsl) on rows long enough for its unrolled
 * loops: wgt_linear of x [M, K] (M <= 4) by weights [N, K] in f32, f16 and bf16, against a sum in
 * double on the host over the same (rounded) weights. K runs from below one unrolled step to
 * several steps plus a tail; N is odd so the last workgroup is partly empty.
 * Tolerance: f32 accumulation in another order than the double sum: K * 2^-22 relative to
 * sum |x||w| (a generous bound; a wrong or missing term is off by |x||w| ~ 0.1 or more). */
#include <math.h>
#include <string.h>

#include "gpu/gpu.h"
#include "support/check.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float uniform(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static void gemv_case(wgt_context *ctx, int64_t M, int64_t N, int64_t K, wgt_dtype wdt)
{
    float *x = malloc(sizeof(float) * M * K), *w = malloc(sizeof(float) * N * K), *y = malloc(sizeof(float) * M * N);
    for (int64_t i = 0; i < M * K; i++) x[i] = uniform();
    for (int64_t i = 0; i < N * K; i++) w[i] = uniform();
    int64_t xs[2] = {M, K}, ws[2] = {N, K};
    wgt_tensor *xt, *w32, *wt, *wback, *yt;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, xs, x, &xt));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, ws, w, &w32));
    MUST(wgt_tensor_cast(w32, wdt, &wt));
    MUST(wgt_tensor_cast(wt, WGT_F32, &wback)); /* the weights as the kernel sees them */
    MUST(wgt_tensor_to_host(wback, w, sizeof(float) * N * K));
    MUST(wgt_linear(xt, wt, NULL, &yt));
    MUST(wgt_tensor_to_host(yt, y, sizeof(float) * M * N));
    int bad = 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double s = 0, mag = 0;
            for (int64_t k = 0; k < K; k++) {
                s += (double)x[m * K + k] * w[n * K + k];
                mag += fabs((double)x[m * K + k] * w[n * K + k]);
            }
            double err = fabs(y[m * N + n] - s), tol = (double)K * ldexp(1.0, -22) * mag + 1e-30;
            if (!(err <= tol) && bad++ < 3)
                fprintf(stderr, "M %lld N %lld K %lld %s: y[%lld, %lld] = %.9g, expected %.9g\n", (long long)M,
                        (long long)N, (long long)K, wgt_dtype_name(wdt), (long long)m, (long long)n, y[m * N + n], s);
        }
    CHECK(bad == 0, "M %lld N %lld K %lld %s: %d wrong outputs", (long long)M, (long long)N, (long long)K,
          wgt_dtype_name(wdt), bad);
    wgt_tensor_free(xt), wgt_tensor_free(w32), wgt_tensor_free(wt), wgt_tensor_free(wback), wgt_tensor_free(yt);
    free(x), free(w), free(y);
}

int main(void)
{
    wgt_context *ctx;
    MUST(wgt_context_create(NULL, &ctx));
    /* groups of 8 elements per row: 1024 (K 8192) covers several unrolled steps at 32 lanes a row;
     * 264 (K 2112) one step and a tail; 100 (K 800) only the tail loop */
    const int64_t ks[] = {800, 2112, 8192 + 24};
    const wgt_dtype dts[] = {WGT_F32, WGT_F16, WGT_BF16};
    for (int d = 0; d < 3; d++)
        for (int i = 0; i < 3; i++) {
            gemv_case(ctx, 1, 37, ks[i], dts[d]);
            gemv_case(ctx, 3, 11, ks[i], dts[d]);
        }
    gemv_case(ctx, 1, 1029, 4096, WGT_F16);    /* 4 rows a workgroup: one unrolled step exactly */
    gemv_case(ctx, 1, 2053, 4096 + 24, WGT_F16); /* 8 rows a workgroup (32 lanes): 2 steps and a tail */
    /* the barrier-free variant (what SwiftShader takes: wgt_gpu_avoid_barriers), one column an
     * invocation: M 1, 3 and 9, N past one 64-invocation workgroup */
    int was = wgt_gpu_avoid_barriers(ctx);
    wgt_gpu_test_avoid_barriers(ctx, 1);
    for (int d = 0; d < 3; d++) {
        gemv_case(ctx, 1, 37, 800, dts[d]);
        gemv_case(ctx, 3, 131, 2112, dts[d]);
    }
    gemv_case(ctx, 9, 70, 800, WGT_F16); /* a short prompt's prefill: 4 rows of A at a time */
    wgt_gpu_test_avoid_barriers(ctx, was);
    wgt_context_free(ctx);
    return test_finish("test_gpu_matmul_gemv");
}
