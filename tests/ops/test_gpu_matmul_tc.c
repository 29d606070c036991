/* The subgroup-matrix (tensor-core) matmul tiles and the split-k path, against the CPU reference
 * (src/cpu/matmul.c). WGT_MATMUL_TC=emulate runs src/kernels/matmul_tc.wgsl's tiles with the scalar
 * fragment product on any adapter, for three fragment shapes (16x8x8, 8x8x32, 16x16x16), f16 tiles
 * where the device has shader-f16; on a device with subgroup matrices WGT_MATMUL_TC=1 runs the same
 * cases through them. Cases: all four transposition layouts of A and B (training's backward reads
 * A^T and B^T in place), partial tiles, 128-wide tiles, batch and broadcast, f16 weights with bias,
 * addmm's alpha and beta, and products split along k (a small output over k >= 1024) with and
 * without the tiles; linear with f16 / bf16 weights through the 16-byte loads (whole tiles stored
 * from the fragments, partial ones, split k, the 2 x 4 subgroups of 128 x 128 tiles forced) and
 * qlinear with Q8_0 / Q4_0 / Q4_K / Q6_K blocks dequantised into the tiles (WGT_MATMUL_TC_QUANT). Tolerance for f16 operands (each rounded to 11 bits, f32 sums): 2e-3 sqrt(K)
 * on unit-range inputs, about ten times the expected error and far under a lost k step's.
 * WGT_MATMUL_TCD=emulate runs src/kernels/matmul_tcd.wgsl (fragments loaded from f16 rows in
 * storage, operands copied so by matmul_half.wgsl, or k slabs staged through workgroup memory
 * in its four ways: WGT_MATMUL_TCD_TILE's MODE) through the same cases, and with subgroup matrices
 * WGT_MATMUL_TCD=all (default tile, and each staging; WGT_MATMUL_TCD_EPI, _DIRECT and _SMALL on and
 * off). Products of few tiles over a long k are
 * split along k there too. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "ops/ops.h"
#include "support/check.h"
#include "support/pairs.h"

typedef test_pair pair;

static wgt_context *ctx;
static double tol_scale = 2e-3; /* per sqrt(K); the split-only pass (f32 tiles) uses 1e-5 */

static pair make(wgt_dtype dt, int nd, const int64_t *shape) { return test_pair_make(ctx, dt, nd, shape); }
static void drop(pair *p) { test_pair_drop(p); }
static pair transposed(const pair *p) { return test_pair_transposed(p, p->h.l.ndim - 2, p->h.l.ndim - 1); }
static wgt_cpu_tensor ref_like(const wgt_tensor *y, void **buf) { return test_ref_like(y, buf); }

static void compare(const char *what, const wgt_tensor *y, const wgt_cpu_tensor *ref, int64_t K)
{
    double atol = tol_scale * sqrt((double)K) + 1e-5;
    int64_t n = wgt_tensor_numel(y);
    float *got = malloc((size_t)(n ? n : 1) * 4);
    wgt_tensor *yf = NULL;
    MUST(wgt_tensor_cast(y, WGT_F32, &yf));
    MUST(wgt_tensor_to_host(yf, got, (size_t)n * 4));
    int bad = 0;
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double a = got[i], b = wgt_cpu_load_f(ref, wgt_layout_index(&ref->l, i)), e = fabs(a - b);
        if (!(e <= atol)) {
            if (bad++ < 3) CHECK(0, "%s: element %lld: gpu %.9g, reference %.9g", what, (long long)i, a, b);
        }
        if (e > worst) worst = e;
    }
    test_checks++;
    printf("%-52s max error %.2e (tolerance %.2e)%s\n", what, worst, atol, bad ? "  FAIL" : "");
    free(got);
    wgt_tensor_free(yf);
}

static void check_matmul(const char *what, const pair *a, const pair *b) { test_check_matmul(what, a, b, compare); }

static void mm(const char *what, int64_t M, int64_t K, int64_t N, int ta, int tb)
{
    /* a stored [K, M] when ta (read as its transpose), b stored [N, K] when tb */
    pair a = make(WGT_F32, 2, ta ? (int64_t[]){K, M} : (int64_t[]){M, K});
    pair b = make(WGT_F32, 2, tb ? (int64_t[]){N, K} : (int64_t[]){K, N});
    pair at = ta ? transposed(&a) : a, bt = tb ? transposed(&b) : b;
    char label[96];
    snprintf(label, sizeof label, "%s %lldx%lldx%lld%s%s", what, (long long)M, (long long)K, (long long)N,
             ta ? " A^T" : "", tb ? " B^T" : "");
    check_matmul(label, &at, &bt);
    if (ta) wgt_tensor_free(at.d);
    if (tb) wgt_tensor_free(bt.d);
    drop(&a), drop(&b);
}

/* linear x [M, K] f32, w [N, K] of dtype wdt (prefill of a model): A and B contiguous in k, the
 * tiles' 16-byte loads where K % 8 == 0 */
static void lin(const char *tag, int64_t M, int64_t K, int64_t N, wgt_dtype wdt, int with_bias)
{
    pair x = make(WGT_F32, 2, (int64_t[]){M, K}), wt = make(wdt, 2, (int64_t[]){N, K});
    pair bias = make(WGT_F32, 1, (int64_t[]){N});
    wgt_tensor *y = NULL;
    char w[96];
    snprintf(w, sizeof w, "%s linear %lldx%lldx%lld %s%s", tag, (long long)M, (long long)K, (long long)N,
             wgt_dtype_name(wdt), with_bias ? " + bias" : "");
    wgt_status st = wgt_linear(x.d, wt.d, with_bias ? bias.d : NULL, &y);
    CHECK(st == WGT_OK, "%s: %s", w, wgt_errmsg());
    if (!st) {
        void *buf;
        wgt_cpu_tensor r = ref_like(y, &buf);
        MUST(wgt_cpu_linear(&x.h, &wt.h, with_bias ? &bias.h : NULL, &r));
        compare(w, y, &r, K);
        free(buf);
        wgt_tensor_free(y);
    }
    drop(&x), drop(&wt), drop(&bias);
}

/* qlinear with GGUF blocks of `type` dequantised into the tiles (from 32 tokens), against the CPU
 * linear of the host-dequantised weight */
static void qlin(const char *tag, wgt_ftype type, int64_t M, int64_t K, int64_t N, int with_bias)
{
    uint64_t bytes = 0;
    MUST(wgt_ftype_bytes(type, N * K, &bytes));
    float *wf = malloc((size_t)(N * K) * sizeof(float));
    void *blocks = malloc((size_t)bytes);
    for (int64_t i = 0; i < N * K; i++) wf[i] = (float)test_uniform(-1, 1);
    MUST(wgt_quantize(type, wf, blocks, N * K));
    MUST(wgt_dequantize(type, blocks, wf, N * K));
    pair x = make(WGT_F32, 2, (int64_t[]){M, K}), bias = make(WGT_F32, 1, (int64_t[]){N});
    wgt_tensor *wq = NULL, *y = NULL;
    MUST(wgt_qweight_upload(ctx, type, N, K, blocks, &wq));
    char w[96];
    snprintf(w, sizeof w, "%s qlinear %s %lldx%lldx%lld%s", tag, wgt_ftype_name(type), (long long)M, (long long)K,
             (long long)N, with_bias ? " + bias" : "");
    wgt_status st = wgt_qlinear(x.d, wq, type, with_bias ? bias.d : NULL, &y);
    CHECK(st == WGT_OK, "%s: %s", w, wgt_errmsg());
    if (!st) {
        void *buf;
        wgt_cpu_tensor r = ref_like(y, &buf);
        wgt_cpu_tensor wt = wgt_cpu_tensor_make(wf, WGT_F32, 2, (int64_t[]){N, K});
        MUST(wgt_cpu_linear(&x.h, &wt, with_bias ? &bias.h : NULL, &r));
        compare(w, y, &r, K);
        free(buf);
        wgt_tensor_free(y);
    }
    wgt_tensor_free(wq);
    drop(&x), drop(&bias);
    free(wf), free(blocks);
}

/* full 0: the layouts and one split only (the other fragment shapes) */
static void cases(const char *tag, int full)
{
    char w[64];
    snprintf(w, sizeof w, "%s matmul", tag);
    for (int t = 0; t < 4; t++) mm(w, 37, 45, 70, t & 1, t >> 1); /* partial tiles, every layout */
    mm(w, 48, 1100, 40, 1, 0);                                   /* split k (a weight's gradient), a short last slice */
    if (!full) return;
    mm(w, 130, 40, 200, 0, 1);
    mm(w, 520, 16, 516, 0, 1);                                   /* 128-wide tiles */
    {   /* batch and broadcast */
        pair a = make(WGT_F32, 3, (int64_t[]){3, 20, 24}), b = make(WGT_F32, 3, (int64_t[]){3, 24, 30});
        pair b2 = make(WGT_F32, 2, (int64_t[]){24, 30});
        snprintf(w, sizeof w, "%s batched 3x20x24x30", tag);
        check_matmul(w, &a, &b);
        snprintf(w, sizeof w, "%s broadcast b", tag);
        check_matmul(w, &a, &b2);
        drop(&a), drop(&b), drop(&b2);
    }
    {   /* linear with f16 weights and bias (prefill of an f16 model) */
        pair x = make(WGT_F32, 3, (int64_t[]){2, 33, 80}), wt = make(WGT_F16, 2, (int64_t[]){100, 80});
        pair bias = make(WGT_F32, 1, (int64_t[]){100});
        wgt_tensor *y = NULL;
        MUST(wgt_linear(x.d, wt.d, bias.d, &y));
        void *buf;
        wgt_cpu_tensor r = ref_like(y, &buf);
        MUST(wgt_cpu_linear(&x.h, &wt.h, &bias.h, &r));
        snprintf(w, sizeof w, "%s linear f16 weights + bias", tag);
        compare(w, y, &r, 80);
        free(buf);
        wgt_tensor_free(y);
        drop(&x), drop(&wt), drop(&bias);
    }
    lin(tag, 128, 96, 192, WGT_F16, 0);   /* whole tiles: fragments stored straight into out */
    lin(tag, 70, 200, 136, WGT_BF16, 1);  /* partial tiles, bf16 words */
    lin(tag, 64, 2048, 64, WGT_F16, 0);   /* split along k with 16-byte loads */
    lin(tag, 64, 44, 64, WGT_F16, 0);     /* K % 8 != 0: element loads */
    {   /* eight subgroups in 2 x 4 over 128 x 128 (the H200's tile), forced */
        setenv("WGT_MATMUL_TC_TILE", "128x128x16:2x4", 1);
        lin(tag, 256, 160, 264, WGT_F16, 0);
        lin(tag, 130, 48, 130, WGT_F16, 1);
        unsetenv("WGT_MATMUL_TC_TILE");
    }
    qlin(tag, WGT_FTYPE_Q8_0, 40, 96, 72, 1);   /* 34-byte blocks: rows not 4-byte aligned */
    qlin(tag, WGT_FTYPE_Q4_0, 70, 160, 136, 0); /* partial tiles */
    qlin(tag, WGT_FTYPE_Q4_K, 64, 256, 64, 1);
    qlin(tag, WGT_FTYPE_Q6_K, 33, 256, 40, 0);
    qlin(tag, WGT_FTYPE_Q8_0, 64, 2048, 64, 1); /* split along k, the bias in the combine */
    for (int K = 64; K <= 1024; K += 960) { /* addmm: alpha, beta self (through combine when split) */
        pair s = make(WGT_F32, 2, (int64_t[]){30, 40}), m1 = make(WGT_F32, 2, (int64_t[]){30, K});
        pair m2 = make(WGT_F32, 2, (int64_t[]){K, 40});
        wgt_tensor *y = NULL;
        MUST(wgt_addmm(s.d, m1.d, m2.d, 0.5, 2.0, &y));
        void *buf;
        wgt_cpu_tensor r = ref_like(y, &buf);
        MUST(wgt_cpu_addmm(&s.h, &m1.h, &m2.h, 0.5, 2.0, &r));
        snprintf(w, sizeof w, "%s addmm K %d", tag, K);
        compare(w, y, &r, 2 * K);
        free(buf);
        wgt_tensor_free(y);
        drop(&s), drop(&m1), drop(&m2);
    }
}

/* The cases matmul_tcd's epilogue and direct loads change: bias over whole and partial tiles, f32
 * activations whole and ragged, bf16 weights (copied), alpha and beta C over whole tiles. */
static void epi_cases(const char *tag)
{
    lin(tag, 128, 96, 192, WGT_F16, 0);
    lin(tag, 130, 48, 130, WGT_F16, 1);
    lin(tag, 70, 200, 136, WGT_BF16, 1);
    pair s = make(WGT_F32, 2, (int64_t[]){130, 136}), m1 = make(WGT_F32, 2, (int64_t[]){130, 64});
    pair m2 = make(WGT_F32, 2, (int64_t[]){64, 136});
    wgt_tensor *y = NULL;
    MUST(wgt_addmm(s.d, m1.d, m2.d, 0.5, 2.0, &y));
    void *buf;
    wgt_cpu_tensor r = ref_like(y, &buf);
    MUST(wgt_cpu_addmm(&s.h, &m1.h, &m2.h, 0.5, 2.0, &r));
    char w[96];
    snprintf(w, sizeof w, "%s addmm 130x64x136", tag);
    compare(w, y, &r, 2 * 64);
    free(buf);
    wgt_tensor_free(y);
    drop(&s), drop(&m1), drop(&m2);
}

int main(void)
{
    unsetenv("WGT_MATMUL_SPLIT_K"); /* on by default */
    setenv("WGT_MATMUL_TCD", "0", 1); /* matmul_tc's cases first (matmul_tcd takes f16 products by default) */
    setenv("WGT_MATMUL_TC_QUANT", "1", 1); /* qlinear through the tiles too (opt-in) */
    MUST(wgt_context_create(NULL, &ctx));
    wgt_adapter_info info;
    MUST(wgt_context_adapter_info(ctx, &info));
    tol_scale = 1e-5; /* f32 tiles: the split along k alone */
    setenv("WGT_MATMUL_TC", "0", 1);
    cases("f32 tiles", 1);
    tol_scale = 2e-3;
    const char *shapes[] = {"emulate", "emulate:8x8x32", "emulate:16x16x16"};
    for (int i = 0; i < 3; i++) {
        setenv("WGT_MATMUL_TC", shapes[i], 1);
        cases(shapes[i], i == 0);
    }
    if (info.has_subgroup_matrix && info.has_f16) {
        setenv("WGT_MATMUL_TC", "1", 1);
        cases("subgroup matrices", 1);
    } else
        printf("'%s' offers no f16 subgroup matrices: their tiles were run with scalar fragments only\n", info.name);
    /* matmul_tcd.wgsl: fragments straight from f16 rows in storage (operands copied so by
     * matmul_half.wgsl where they are not), every layout, partial tiles, bias, alpha and beta */
    setenv("WGT_MATMUL_TC", "0", 1);
    if (info.has_f16) {
        setenv("WGT_MATMUL_TCD", "emulate", 1);
        cases("tcd emulate", 1);
        setenv("WGT_MATMUL_TCD_TILE", "1x2:2x1", 1); /* 32 x 32 tiles, other fragment counts */
        cases("tcd emulate 1x2:2x1", 0);
        /* k slabs staged through workgroup memory (matmul_tcd.wgsl's MODE 1-4), each with a tile
         * whose staged words need several rounds of the invocations */
        const char *staged[] = {"2x1:1x2:1:32", "1x2:2x1:2:16", "2x2:2x1:3:32", "1x1:2x2:4:64"};
        for (int i = 0; i < 4; i++) {
            char w[64];
            setenv("WGT_MATMUL_TCD_TILE", staged[i], 1);
            snprintf(w, sizeof w, "tcd emulate %s", staged[i]);
            cases(w, 1);
        }
        unsetenv("WGT_MATMUL_TCD_TILE");
        /* a bias or alpha added over stored whole tiles (WGT_MATMUL_TCD_EPI), f32 activations and
         * ragged rows staged without copies (WGT_MATMUL_TCD_DIRECT), products of few tiles in the
         * small tile (WGT_MATMUL_TCD_SMALL): the small 4-byte double-buffered tile (llvmpipe compiles
         * each emulated variant for minutes when its cache is cold: the cases that reach them only) */
        setenv("WGT_MATMUL_TCD_EPI", "1", 1);
        setenv("WGT_MATMUL_TCD_DIRECT", "1", 1);
        setenv("WGT_MATMUL_TCD_SMALL", "1x1:2x2:3:16", 1);
        epi_cases("tcd emulate small 1x1:2x2:3:16 epi direct");
        unsetenv("WGT_MATMUL_TCD_SMALL");
        unsetenv("WGT_MATMUL_TCD_EPI");
        unsetenv("WGT_MATMUL_TCD_DIRECT");
        if (info.has_subgroup_matrix) {
            setenv("WGT_MATMUL_TCD", "all", 1);
            cases("tcd subgroup matrices", 1);
            /* these with EPI and DIRECT on, and the small tile for products of few tiles */
            const char *hw[] = {"2x2:2x2:1:32", "4x2:2x2:2:32", "4x2:2x4:3:16", "2x2:4x2:4:32", "4x4:2x2:3:32"};
            setenv("WGT_MATMUL_TCD_EPI", "1", 1);
            setenv("WGT_MATMUL_TCD_DIRECT", "1", 1);
            for (int i = 0; i < 5; i++) {
                char w[80];
                setenv("WGT_MATMUL_TCD_TILE", hw[i], 1);
                snprintf(w, sizeof w, "tcd subgroup matrices %s epi direct", hw[i]);
                cases(w, 0);
            }
            unsetenv("WGT_MATMUL_TCD_TILE");
            epi_cases("tcd subgroup matrices epi direct");
            setenv("WGT_MATMUL_TCD_SMALL", "1", 1);
            cases("tcd subgroup matrices small epi direct", 0);
            epi_cases("tcd subgroup matrices small epi direct");
            unsetenv("WGT_MATMUL_TCD_SMALL");
            unsetenv("WGT_MATMUL_TCD_EPI");
            unsetenv("WGT_MATMUL_TCD_DIRECT");
        }
        unsetenv("WGT_MATMUL_TCD");
    } else
        printf("'%s' has no shader-f16: matmul_tcd.wgsl's tiles not run\n", info.name);
    unsetenv("WGT_MATMUL_TC");
    CHECK(wgt_context_health(ctx) == WGT_OK, "context unhealthy: %s", wgt_context_errmsg(ctx));
    wgt_context_free(ctx);
    return test_finish("test_gpu_matmul_tc");
}
