/* The decode attention over a batch's slots (mdl_attention_slots, src/kernels/models_attention_slots.wgsl)
 * against a CPU reference in double: rows of ragged positions in slots out of order (one slot left
 * idle), a position past one workgroup's chunk of keys (the running softmax), position 0 (the row's
 * own key alone), GQA (3 query heads a kv head), a head size that is no multiple of 4, q/k/v as
 * strided views. Each row's key and value must land in its slot's cache at its position and
 * nothing else in the caches may change. One dispatch. Bad arguments are statuses. */
#include <math.h>
#include <string.h>

#include "models/model.h"
#include "support/check.h"

enum { S = 5, HKV = 2, HQ = 6, D = 20, CTX = 300, R = 4 };

static float frand(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

int main(void)
{
    wgt_context *ctx;
    MUST(wgt_context_create(NULL, &ctx));
    if (!mdl_attention_slots_ok(ctx, D)) {
        printf("SKIP: this adapter runs no barriers (or a CPU reference context)\n");
        wgt_context_free(ctx);
        return 77;
    }
    static const int slot[R] = {3, 0, 4, 1};
    static const int pos[R] = {280, 0, 17, 255};
    size_t ncache = (size_t)S * HKV * CTX * D;
    float *kc0 = malloc(ncache * sizeof(float)), *vc0 = malloc(ncache * sizeof(float));
    float *kc1 = malloc(ncache * sizeof(float)), *vc1 = malloc(ncache * sizeof(float));
    static float q[R][HQ][D], k[R][HKV][D], v[R][HKV][D], out[R][HQ * D];
    uint32_t seed = 12345;
    for (size_t i = 0; i < ncache; i++) kc0[i] = frand(&seed), vc0[i] = frand(&seed);
    for (int r = 0; r < R; r++)
        for (int d = 0; d < D; d++) {
            for (int h = 0; h < HQ; h++) q[r][h][d] = 2 * frand(&seed);
            for (int h = 0; h < HKV; h++) k[r][h][d] = frand(&seed), v[r][h][d] = frand(&seed);
        }
    int32_t info[2 * R + 3];
    for (int r = 0; r < R; r++) info[r] = pos[r], info[R + 3 + r] = slot[r]; /* slots at R + 3 */
    info[R] = info[R + 1] = info[R + 2] = -1;

    int64_t cs[4] = {S, HKV, CTX, D}, qs[3] = {R, HQ, D}, ks[3] = {R, HKV, D}, is[1] = {2 * R + 3};
    wgt_tensor *kc, *vc, *qt, *kt, *vt, *q3, *k3, *v3, *it, *o = NULL;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 4, cs, kc0, &kc));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 4, cs, vc0, &vc));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 3, qs, q, &qt));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 3, ks, k, &kt));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 3, ks, v, &vt));
    MUST(wgt_tensor_from_host(ctx, WGT_I32, 1, is, info, &it));
    MUST(wgt_tensor_transpose(qt, 0, 1, &q3)); /* [H, R, D] views: head stride D, row stride H * D */
    MUST(wgt_tensor_transpose(kt, 0, 1, &k3));
    MUST(wgt_tensor_transpose(vt, 0, 1, &v3));
    double scale = 1 / sqrt((double)D);
    wgt_memory_stats m0, m1;
    wgt_context_memory_stats(ctx, &m0);
    MUST(mdl_attention_slots(q3, k3, v3, it, R + 3, R, kc, vc, scale, &o));
    wgt_context_memory_stats(ctx, &m1);
    CHECK(m1.dispatches - m0.dispatches == 1, "%llu dispatches for %d rows, want 1",
          (unsigned long long)(m1.dispatches - m0.dispatches), R);
    MUST(wgt_tensor_to_host(o, out, sizeof out));
    MUST(wgt_tensor_to_host(kc, kc1, ncache * sizeof(float)));
    MUST(wgt_tensor_to_host(vc, vc1, ncache * sizeof(float)));

    double worst = 0;
    for (int r = 0; r < R; r++)
        for (int h = 0; h < HQ; h++) {
            int hk = h / (HQ / HKV);
            size_t cb = ((size_t)slot[r] * HKV + hk) * CTX * D;
            int n = pos[r] + 1;
            double *w = malloc((size_t)n * sizeof *w), mx = -INFINITY, sum = 0;
            for (int j = 0; j < n; j++) {
                const float *kr = j < pos[r] ? kc0 + cb + (size_t)j * D : k[r][hk];
                double s = 0;
                for (int d = 0; d < D; d++) s += (double)q[r][h][d] * kr[d];
                w[j] = s * scale, mx = fmax(mx, w[j]);
            }
            for (int j = 0; j < n; j++) w[j] = exp(w[j] - mx), sum += w[j];
            for (int d = 0; d < D; d++) {
                double a = 0;
                for (int j = 0; j < n; j++) a += w[j] * (j < pos[r] ? vc0[cb + (size_t)j * D + d] : v[r][hk][d]);
                worst = fmax(worst, fabs(a / sum - out[r][h * D + d]));
            }
            free(w);
        }
    CHECK(worst <= 1e-5, "attention differs from the reference by %g", worst);

    /* the caches: each row's new key and value at its position in its slot, the rest unchanged */
    size_t moved = 0, wrong = 0;
    for (size_t i = 0; i < ncache; i++) {
        size_t d = i % D, j = i / D % CTX, hk = i / D / CTX % HKV, sl = i / D / CTX / HKV;
        float wk = kc0[i], wv = vc0[i];
        for (int r = 0; r < R; r++)
            if ((size_t)slot[r] == sl && (size_t)pos[r] == j) wk = k[r][hk][d], wv = v[r][hk][d], moved++;
        wrong += kc1[i] != wk || vc1[i] != wv;
    }
    CHECK(moved == (size_t)R * HKV * D && !wrong, "%zu cache entries wrong (%zu written)", wrong, moved);

    /* bad arguments */
    wgt_tensor *bad = NULL;
    CHECK(mdl_attention_slots(q3, k3, v3, it, R + 3, R, kc, vc, scale, NULL) == WGT_ERR_INVALID_ARGUMENT, "NULL out");
    CHECK(mdl_attention_slots(qt, k3, v3, it, R + 3, R, kc, vc, scale, &bad) == WGT_ERR_SHAPE && !bad,
          "q of the wrong shape");
    CHECK(mdl_attention_slots(q3, k3, v3, it, R + 3, R, q3, vc, scale, &bad) == WGT_ERR_SHAPE && !bad,
          "a cache of the wrong rank");
    CHECK(mdl_attention_slots(q3, k3, v3, it, R + 4, R, kc, vc, scale, &bad) == WGT_ERR_SHAPE && !bad,
          "slots past info's end");

    wgt_tensor_free(o);
    wgt_tensor_free(q3), wgt_tensor_free(k3), wgt_tensor_free(v3);
    wgt_tensor_free(qt), wgt_tensor_free(kt), wgt_tensor_free(vt), wgt_tensor_free(it);
    wgt_tensor_free(kc), wgt_tensor_free(vc);
    free(kc0), free(vc0), free(kc1), free(vc1);
    wgt_context_free(ctx);
    return test_finish("attention_slots");
}
