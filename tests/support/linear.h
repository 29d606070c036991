/* What the linear-layer tests (test_gpu_qlinear, test_gpu_qlinear_fused, test_gpu_matmul_rows)
 * share: random f32 arrays (support/rng.h's generator), random weights quantised with
 * wgt_quantize and dequantised with wgt_dequantize (the weights as the kernels see them), and the
 * comparison of y = x . w^T + bias against a sum in double. */
#ifndef WGT_TESTS_LINEAR_H
#define WGT_TESTS_LINEAR_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu.h"
#include "support/check.h"
#include "support/rng.h"

static int64_t test_compared; /* values test_linear_compare compared (a test may reset it) */

/* n values uniform in [lo, hi) (free it). */
static inline float *test_random_f32(int64_t n, double lo, double hi)
{
    float *v = malloc((size_t)(n ? n : 1) * sizeof(float));
    for (int64_t i = 0; i < n; i++) v[i] = (float)test_uniform(lo, hi);
    return v;
}

/* A quantised weight [rows, cols] and its dequantised values. */
typedef struct test_qweight {
    wgt_ftype type;
    int64_t rows, cols;
    void *blocks;
    float *deq; /* [rows, cols] */
} test_qweight;

/* Random weights in [-1, 1) quantised to type; formats wgt_quantize lacks (Q5_K) get random bytes
 * with small f16 super-block scales d and dmin (a block's first 4 bytes). */
static inline void test_qweight_make(test_qweight *q, wgt_ftype type, int64_t rows, int64_t cols)
{
    q->type = type, q->rows = rows, q->cols = cols;
    float *f = test_random_f32(rows * cols, -1, 1);
    uint64_t bytes;
    MUST(wgt_ftype_bytes(type, rows * cols, &bytes));
    q->blocks = malloc(bytes);
    q->deq = malloc((size_t)(rows * cols) * sizeof(float));
    if (wgt_ftype_can_quantize(type))
        MUST(wgt_quantize(type, f, q->blocks, rows * cols));
    else {
        uint8_t *b = q->blocks;
        uint32_t bb = wgt_ftype_block_bytes(type);
        for (uint64_t i = 0; i < bytes; i++) b[i] = (uint8_t)(test_uniform(0, 256));
        uint16_t h = wgt_cpu_f64_to_f16(0.01);
        for (uint64_t o = 0; o < bytes; o += bb) memcpy(b + o, &h, 2), memcpy(b + o + 2, &h, 2);
    }
    MUST(wgt_dequantize(type, q->blocks, q->deq, rows * cols));
    free(f);
}

static inline void test_qweight_free(test_qweight *q)
{
    free(q->blocks);
    free(q->deq);
}

/* Compare y [tokens, rows] (f32) with the oracle from host x [tokens, cols] (f32), w [rows, cols]
 * as the kernel sees it (dequantised, or rounded to its dtype) and bias [rows] (or NULL).
 * Tolerance: the GPU sums cols f32 products in some order, so |error| <= cols * u * sum|x w|
 * (u = 2^-24, the bound for any summation order); Q4_K's d*sc*q - dmin*m may be fused into one
 * FMA, which moves each weight by at most u * 2 max|w| (|d*sc*q| <= 2 max|w| within a row). */
static inline void test_linear_compare(const char *what, const wgt_tensor *y, const float *x, const float *wd,
                                       const float *bias, int64_t tokens, int64_t rows, int64_t cols)
{
    float *got = malloc((size_t)(tokens * rows) * sizeof(float) + 4);
    if (wgt_tensor_to_host(y, got, (size_t)(tokens * rows) * sizeof(float))) {
        CHECK(0, "%s: to_host: %s", what, wgt_errmsg());
        free(got);
        return;
    }
    const double u = 1.0 / 16777216.0;
    int bad = 0;
    for (int64_t r = 0; r < rows; r++) {
        double maxw = 0;
        for (int64_t k = 0; k < cols; k++) maxw = fmax(maxw, fabs(wd[r * cols + k]));
        for (int64_t t = 0; t < tokens; t++) {
            double s = bias ? bias[r] : 0, mag = bias ? fabs(bias[r]) : 0, xs = 0;
            for (int64_t k = 0; k < cols; k++) {
                double p = (double)x[t * cols + k] * wd[r * cols + k];
                s += p, mag += fabs(p), xs += fabs(x[t * cols + k]);
            }
            double tol = (double)(cols + 2) * u * mag + 2 * u * maxw * xs + 1e-30;
            double g = got[t * rows + r];
            test_compared++;
            if (!(fabs(g - s) <= tol) && bad++ < 3)
                CHECK(0, "%s: token %lld row %lld: got %.9g, expected %.9g (tolerance %.3g)", what, (long long)t,
                      (long long)r, g, s, tol);
        }
    }
    CHECK(bad == 0, "%s: %d of %lld values off", what, bad, (long long)(tokens * rows));
    free(got);
}

#endif
