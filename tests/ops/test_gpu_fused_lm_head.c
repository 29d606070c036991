/* wgt_lm_head (src/ops/fused_lm_head.c: fused_lm_head.wgsl + fused_lm_head_argmax.wgsl) against double-precision references
 * computed here: the logits of rms_norm(x) * gamma (or x) through f32 / f16 / bf16 weights for row
 * counts that leave the last row block short, K from 8 to 2056, under WGT_LM_HEAD's variants (rows
 * a lane group, lanes a group equal to the subgroup or not, a small grid that loops over the row
 * blocks, the load steps; 0: the composition), and the greedy token: the first largest of the
 * logits returned, with tied maxima and NaN logits (the first NaN wins, as wgt_reduce's argmax);
 * Q8_0 / Q4_0 blocks against the composition (wgt_fused_qlinear). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "ops/fused_lm_head.h"
#include "support/check.h"

static float frand(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* the first index of the largest (NaN the largest) */
static int64_t first_max(const float *v, int64_t n)
{
    int64_t b = 0;
    for (int64_t i = 1; i < n; i++) {
        if (isnan(v[b])) break;
        if (isnan(v[i]) || v[i] > v[b]) b = i;
    }
    return b;
}

/* tie: rows 3 and N - 2 equal and the largest; nan: rows 5 and N - 1 get a NaN weight */
static void lm_case(wgt_context *ctx, int64_t N, int64_t K, wgt_dtype dt, int norm, int tie, int nan, const char *v)
{
    unsigned seed = (unsigned)(N * 31 + K * 7 + dt + norm);
    float *x = malloc(K * sizeof *x), *g = malloc(K * sizeof *g), *w = malloc(N * K * sizeof *w);
    float *wr = malloc(N * K * sizeof *wr), *got = malloc(N * sizeof *got);
    for (int64_t k = 0; k < K; k++) x[k] = 2 * frand(&seed), g[k] = 1 + 0.5f * frand(&seed);
    for (int64_t i = 0; i < N * K; i++) w[i] = frand(&seed);
    if (tie && N > 4)
        for (int64_t k = 0; k < K; k++) w[3 * K + k] = w[(N - 2) * K + k] = x[k] > 0 ? 1.0f : -1.0f;
    if (nan && N > 6) w[5 * K + K / 2] = NAN, w[(N - 1) * K] = NAN;
    int64_t xs[2] = {1, K}, ws[2] = {N, K};
    wgt_tensor *tx, *tg, *tw32, *tw, *back, *lg = NULL, *tok = NULL, *lg2 = NULL;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, xs, x, &tx));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, &K, g, &tg));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, ws, w, &tw32));
    if (dt == WGT_F32) tw = wgt_tensor_ref(tw32);
    else MUST(wgt_tensor_cast(tw32, dt, &tw));
    MUST(wgt_tensor_cast(tw, WGT_F32, &back)); /* the reference sees the rounded weights */
    MUST(wgt_tensor_to_host(back, wr, N * K * sizeof *wr));
    double ss = 0;
    for (int64_t k = 0; k < K; k++) ss += (double)x[k] * x[k];
    double scale = norm ? 1 / sqrt(ss / K + 1e-5) : 1;
    MUST(wgt_lm_head(tx, norm ? tg : NULL, 1e-5, tw, WGT_FTYPE_F32, &lg, &tok));
    CHECK(wgt_tensor_ndim(lg) == 2 && wgt_tensor_dim(lg, 0) == 1 && wgt_tensor_dim(lg, 1) == N, "logits shape");
    CHECK(wgt_tensor_ndim(tok) == 1 && wgt_tensor_dim(tok, 0) == 1 && wgt_tensor_dtype(tok) == WGT_I32, "token shape");
    MUST(wgt_tensor_to_host(lg, got, N * sizeof *got));
    int32_t t = -1;
    MUST(wgt_tensor_to_host(tok, &t, sizeof t));
    double worst = 0;
    int nan_ok = 1;
    for (int64_t n = 0; n < N; n++) {
        double d = 0, mag = 0;
        for (int64_t k = 0; k < K; k++) {
            double xi = norm ? (double)x[k] * g[k] : x[k];
            d += wr[n * K + k] * xi, mag += fabs(wr[n * K + k] * xi);
        }
        if (isnan(d)) {
            nan_ok &= isnan(got[n]);
            continue;
        }
        double e = fabs(got[n] - d * scale) / (1e-6 + mag * scale);
        if (!(e <= worst)) worst = e;
    }
    CHECK(worst < 1e-5 && nan_ok, "lm_head %lld x %lld %s norm %d (WGT_LM_HEAD=%s): error %g of the terms' size%s",
          (long long)N, (long long)K, wgt_dtype_name(dt), norm, v, worst, nan_ok ? "" : ", a NaN row lost its NaN");
    int64_t want = first_max(got, N);
    CHECK(t == want, "lm_head %lld x %lld %s (WGT_LM_HEAD=%s): token %d, the logits' first largest is %lld", (long long)N,
          (long long)K, wgt_dtype_name(dt), v, t, (long long)want);
    if (tie && !nan && N > 4) CHECK(t == 3, "lm_head tie (WGT_LM_HEAD=%s): token %d, want 3", v, t);
    if (nan && N > 6) CHECK(t == 5, "lm_head NaN (WGT_LM_HEAD=%s): token %d, want 5", v, t);
    /* the logits alone: the same values (another pipeline: auto's f16 only, compiles are slow on the CPU adapters) */
    if ((strcmp(v, "auto") != 0 && strcmp(v, "2:16:3:1") != 0) || dt != WGT_F16) goto done;
    MUST(wgt_lm_head(tx, norm ? tg : NULL, 1e-5, tw, WGT_FTYPE_F32, &lg2, NULL));
    float *got2 = malloc(N * sizeof *got2);
    MUST(wgt_tensor_to_host(lg2, got2, N * sizeof *got2));
    CHECK(!memcmp(got, got2, N * sizeof *got), "lm_head (WGT_LM_HEAD=%s): the logits differ without the token", v);
    free(got2);
    wgt_tensor_free(lg2);
done:
    wgt_tensor_free(tx), wgt_tensor_free(tg), wgt_tensor_free(tw32), wgt_tensor_free(tw), wgt_tensor_free(back);
    wgt_tensor_free(lg), wgt_tensor_free(tok);
    free(x), free(g), free(w), free(wr), free(got);
}

/* Q8_0 / Q4_0 blocks (random quants, scales 2^-10 and 2^-9 alternating) through the kernel's block
 * weights, against the composition (WGT_LM_HEAD=0: wgt_fused_qlinear); the token is the first
 * largest of the logits */
static void q_case(wgt_context *ctx, wgt_ftype type, int64_t N, int64_t K, int norm, const char *v)
{
    unsigned seed = (unsigned)(N + K + type);
    uint64_t nb;
    int bb = type == WGT_FTYPE_Q8_0 ? 34 : 18;
    MUST(wgt_ftype_bytes(type, N * K, &nb));
    uint8_t *b = malloc(nb);
    for (uint64_t i = 0; i < nb; i++) b[i] = (uint8_t)(frand(&seed) * 127);
    for (uint64_t o = 0; o < nb; o += bb) b[o] = 0x00, b[o + 1] = (o / bb) % 2 ? 0x18 : 0x14;
    float *x = malloc(K * sizeof *x), *g = malloc(K * sizeof *g), *got = malloc(N * sizeof *got);
    float *want = malloc(N * sizeof *want);
    for (int64_t k = 0; k < K; k++) x[k] = frand(&seed), g[k] = 1 + 0.5f * frand(&seed);
    int64_t xs[2] = {1, K};
    wgt_tensor *tx, *tg, *tw, *lg, *tok, *lr, *tr;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, xs, x, &tx));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, &K, g, &tg));
    MUST(wgt_qweight_upload(ctx, type, N, K, b, &tw));
    setenv("WGT_LM_HEAD", v, 1);
    MUST(wgt_lm_head(tx, norm ? tg : NULL, 1e-5, tw, type, &lg, &tok));
    setenv("WGT_LM_HEAD", "0", 1);
    MUST(wgt_lm_head(tx, norm ? tg : NULL, 1e-5, tw, type, &lr, &tr));
    MUST(wgt_tensor_to_host(lg, got, N * sizeof *got));
    MUST(wgt_tensor_to_host(lr, want, N * sizeof *want));
    int32_t t = -1;
    MUST(wgt_tensor_to_host(tok, &t, sizeof t));
    double worst = 0, big = 0;
    for (int64_t n = 0; n < N; n++) big = fmax(big, fabs(want[n]));
    for (int64_t n = 0; n < N; n++) worst = fmax(worst, fabs(got[n] - want[n]) / (1e-12 + big));
    CHECK(wgt_tensor_dim(lg, 1) == N && worst < 1e-5, "lm_head %s %lld x %lld norm %d (WGT_LM_HEAD=%s): error %g of the largest",
          wgt_ftype_name(type), (long long)N, (long long)K, norm, v, worst);
    CHECK(t == first_max(got, N), "lm_head %s (WGT_LM_HEAD=%s): token %d, the logits' first largest %lld", wgt_ftype_name(type),
          v, t, (long long)first_max(got, N));
    wgt_tensor_free(tx), wgt_tensor_free(tg), wgt_tensor_free(tw), wgt_tensor_free(lg), wgt_tensor_free(tok);
    wgt_tensor_free(lr), wgt_tensor_free(tr);
    free(b), free(x), free(g), free(got), free(want);
}

/* the device's kernel against the CPU-reference context's composition, same inputs */
static void diff_case(wgt_context *dev, wgt_context *ref, int64_t N, int64_t K)
{
    unsigned seed = 7;
    float *x = malloc(K * sizeof *x), *g = malloc(K * sizeof *g), *w = malloc(N * K * sizeof *w);
    float *got[2] = {malloc(N * sizeof(float)), malloc(N * sizeof(float))};
    int32_t t[2] = {-1, -1};
    for (int64_t k = 0; k < K; k++) x[k] = frand(&seed), g[k] = 1 + 0.5f * frand(&seed);
    for (int64_t i = 0; i < N * K; i++) w[i] = frand(&seed);
    int64_t xs[2] = {1, K}, ws[2] = {N, K};
    for (int c = 0; c < 2; c++) {
        wgt_tensor *tx, *tg, *tw32, *tw, *lg, *tok;
        wgt_context *ctx = c ? ref : dev;
        MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, xs, x, &tx));
        MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, &K, g, &tg));
        MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, ws, w, &tw32));
        MUST(wgt_tensor_cast(tw32, WGT_F16, &tw));
        MUST(wgt_lm_head(tx, tg, 1e-6, tw, WGT_FTYPE_F32, &lg, &tok));
        MUST(wgt_tensor_to_host(lg, got[c], N * sizeof(float)));
        MUST(wgt_tensor_to_host(tok, &t[c], sizeof t[c]));
        wgt_tensor_free(tx), wgt_tensor_free(tg), wgt_tensor_free(tw32), wgt_tensor_free(tw);
        wgt_tensor_free(lg), wgt_tensor_free(tok);
    }
    double worst = 0, top = 0, second = 0;
    for (int64_t n = 0; n < N; n++) {
        double e = fabs(got[0][n] - got[1][n]) / (1e-3 + fabs(got[1][n]));
        if (!(e <= worst)) worst = e;
        double v = got[1][n];
        if (n == 0 || v > top) second = n ? top : second, top = v;
        else if (v > second) second = v;
    }
    CHECK(worst < 1e-3, "lm_head %lld x %lld against the CPU reference: relative error %g", (long long)N, (long long)K, worst);
    if (top - second > 1e-3 * fabs(top))
        CHECK(t[0] == t[1], "lm_head %lld x %lld: token %d, the CPU reference's %d", (long long)N, (long long)K, t[0], t[1]);
    free(x), free(g), free(w), free(got[0]), free(got[1]);
}

int main(void)
{
    wgt_context *ctx, *ref;
    test_contexts(&ctx, &ref);
    diff_case(ctx, ref, 3001, 512);
    diff_case(ctx, ref, 64, 896);
    wgt_context_free(ref);
    /* auto; rows a group with the subgroup's lanes (0) or a fixed count (often not the subgroup:
     * the sums through workgroup memory), grids of 1-7 workgroups looping over many blocks, 1-4
     * load steps; 0: the composition */
    const char *vs_all[] = {"auto", "0", "8:0:0:1", "4:0:3:4", "2:16:1:2", "1:64:0:1", "8:64:7:2", "4:32:2:2"};
    /* llvmpipe's OpenGL ES compiles a pipeline in 10-30 s (past 900 s under load for the list
     * above): there every case through one small variant (2 rows, a step a unit, a 3-workgroup
     * grid looping over the blocks) and the composition */
    const char *vs_gl[] = {"2:16:3:1", "0"};
    wgt_adapter_info info;
    MUST(wgt_context_adapter_info(ctx, &info));
    int gl = info.backend == WGT_BACKEND_OPENGLES || info.backend == WGT_BACKEND_OPENGL;
    const char **vs = gl ? vs_gl : vs_all;
    size_t nv = gl ? 2 : sizeof vs_all / sizeof *vs_all;
    /* auto runs every case; each other variant one float case and one of blocks, in turn (every
     * pipeline is a compile of 10-30 s on llvmpipe's OpenGL ES: the whole product took past 900 s) */
    for (size_t i = 0; i < nv; i++) {
        setenv("WGT_LM_HEAD", vs[i], 1);
        for (int c = 0; c < 11; c++) {
            if (i && c != (int)i % 7 && c != 7 + (int)i % 4) continue;
            double t0 = wgt_now_seconds();
            switch (c) {
            case 0: lm_case(ctx, 1000, 256, WGT_F16, 1, 0, 0, vs[i]); break;
            case 1: lm_case(ctx, 37, 896, WGT_F16, 1, 1, 0, vs[i]); break;
            case 2: lm_case(ctx, 4099, 64, WGT_F32, 0, 1, 0, vs[i]); break;
            case 3: lm_case(ctx, 333, 2056, WGT_BF16, 1, 0, 0, vs[i]); break;
            case 4: lm_case(ctx, 5, 8, WGT_F16, 0, 0, 0, vs[i]); break;
            case 5: lm_case(ctx, 301, 40, WGT_F32, 1, 0, 1, vs[i]); break;
            case 6: lm_case(ctx, 20000, 24, WGT_F16, 1, 1, 0, vs[i]); break;
            case 7: q_case(ctx, WGT_FTYPE_Q8_0, 300, 96, 1, vs[i]); break;
            case 8: q_case(ctx, WGT_FTYPE_Q4_0, 1001, 32, 1, vs[i]); break;
            case 9: q_case(ctx, WGT_FTYPE_Q8_0, 37, 896, 0, vs[i]); break;
            default: q_case(ctx, WGT_FTYPE_Q4_0, 129, 2048, 1, vs[i]); break;
            }
            if (getenv("LMT")) fprintf(stderr, "%s case %d: %.1f s\n", vs[i], c, wgt_now_seconds() - t0);
        }
    }
    unsetenv("WGT_LM_HEAD");
    wgt_context_free(ctx);
    return test_finish("test_gpu_fused_lm_head");
}
