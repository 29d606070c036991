/* Transformer ops on the GPU against the CPU reference: sdpa (GQA/MQA, causal with a KV-cache
 * offset, float and bool masks, k/v as views into a larger cache, decode with one workgroup a head and with split keys,
 * empty keys, NaN, sliding windows, again with WGT_SDPA_FWD=products (f32 prompts as two products and a row kernel; by default only training's); the subgroup-matrix prefill tiles, tc_cases; the decode cases again with
 * WGT_ATTENTION_LOADS=4 and =1), rope (half-split and interleaved, partial rotary dims, none/linear/llama3/YaRN
 * scaling, large positions, strided x, broadcast positions) and embedding.
 * Tolerances: sdpa computes scores and the softmax in f32 (the reference in double): atol 3e-5
 * on outputs of magnitude <= 1. rope rotates in f32 with cos/sin of the f32 angle reduced to
 * [-pi, pi]: the GPU's cos/sin carry ~1e-6 absolute error there, atol 2e-5. Half-precision
 * results: one ulp of the output (2e-3 / 1.6e-2 relative) plus the f32 error. embedding copies:
 * exact. */
#include <math.h>
#include <string.h>

#include "gpu/gpu.h"
#include "ops/api.h"
#include "ops/ops.h"
#include "support/check.h"

static uint64_t rng = 0x13198A2E03707344ull;
static double uniform(double lo, double hi)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return lo + (hi - lo) * (double)(rng >> 11) / 9007199254740992.0;
}

static wgt_context *ctx;

typedef struct pair {
    void *data;
    wgt_cpu_tensor h;
    wgt_tensor *d;
} pair;

static pair make(wgt_dtype dt, int nd, const int64_t *shape, double lo, double hi)
{
    pair p;
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    p.data = calloc(n ? n : 1, 8);
    p.h = wgt_cpu_tensor_make(p.data, dt, nd, shape);
    for (int64_t i = 0; i < n; i++) {
        if (op_is_int(dt)) wgt_cpu_store_i(&p.h, i, (int64_t)floor(uniform(lo, hi)));
        else wgt_cpu_store_f(&p.h, i, uniform(lo, hi));
    }
    MUST(wgt_tensor_from_host(ctx, dt, nd, shape, p.data, &p.d));
    return p;
}

static void reupload(pair *p)
{
    wgt_tensor_free(p->d);
    MUST(wgt_tensor_from_host(ctx, p->h.l.dtype, p->h.l.ndim, p->h.l.shape, p->data, &p->d));
}

static void drop(pair *p)
{
    wgt_tensor_free(p->d);
    free(p->data);
}

/* A view of p (both sides) with layout l: built through narrow/transpose on the device by the
 * caller; here the host side only. */
static pair view_of(const pair *p, wgt_tensor *d, const wgt_layout *hl)
{
    pair v = *p;
    v.d = d;
    v.h.l = *hl;
    v.data = NULL;
    return v;
}

static int compare(const char *what, const wgt_tensor *y, const wgt_cpu_tensor *ref, double atol, double rtol)
{
    int64_t n = wgt_tensor_numel(y);
    CHECK(wgt_tensor_ndim(y) == ref->l.ndim && !memcmp(wgt_tensor_shape(y), ref->l.shape, sizeof(int64_t) * ref->l.ndim),
          "%s: shape differs", what);
    CHECK(wgt_tensor_dtype(y) == ref->l.dtype, "%s: dtype differs", what);
    size_t sz = wgt_dtype_size(wgt_tensor_dtype(y));
    void *got = malloc(n * sz + 8);
    if (wgt_tensor_to_host(y, got, n * sz)) {
        CHECK(0, "%s: to_host: %s", what, wgt_errmsg());
        free(got);
        return 1;
    }
    wgt_cpu_tensor g = wgt_cpu_tensor_make(got, wgt_tensor_dtype(y), wgt_tensor_ndim(y), wgt_tensor_shape(y));
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 3; i++) {
        double a = wgt_cpu_load_f(&g, i), b = wgt_cpu_load_f(ref, wgt_layout_index(&ref->l, i));
        int ok = (isnan(a) && isnan(b)) || a == b || fabs(a - b) <= atol + rtol * fabs(b);
        if (!ok) {
            bad++;
            CHECK(0, "%s: element %lld: gpu %.9g, reference %.9g", what, (long long)i, a, b);
        }
    }
    test_checks++;
    free(got);
    return bad;
}

static double rtol_of(wgt_dtype dt) { return dt == WGT_F32 ? 1e-4 : dt == WGT_F16 ? 2e-3 : 1.6e-2; }

static void check_sdpa_tol(const char *what, const pair *q, const pair *k, const pair *v, const pair *mask,
                           const wgt_sdpa_params *sp, double atol, double rtol)
{
    wgt_tensor *y = NULL;
    wgt_status st = wgt_sdpa(q->d, k->d, v->d, mask ? mask->d : NULL, sp, &y);
    CHECK(st == WGT_OK, "%s: %s", what, wgt_errmsg());
    if (st) return;
    int64_t n = wgt_tensor_numel(y);
    void *buf = calloc(n ? n : 1, 8);
    wgt_cpu_tensor r = wgt_cpu_tensor_make(buf, wgt_tensor_dtype(y), 4, wgt_tensor_shape(y));
    wgt_sdpa_params none = {0, 0, 0};
    MUST(wgt_cpu_sdpa(&q->h, &k->h, &v->h, mask ? &mask->h : NULL, sp ? sp : &none, &r));
    compare(what, y, &r, atol, rtol > 0 ? rtol : rtol_of(r.l.dtype));
    free(buf);
    wgt_tensor_free(y);
}

static void check_sdpa(const char *what, const pair *q, const pair *k, const pair *v, const pair *mask,
                       const wgt_sdpa_params *sp)
{
    check_sdpa_tol(what, q, k, v, mask, sp, 3e-5, 0);
}

/* The prefill kernel of subgroup-matrix tiles (src/kernels/attention_tc.wgsl) against the
 * reference, with WGT_ATTENTION_TC=emulate (the same tiles with scalar fragment products: any
 * adapter) and, where the device has subgroup matrices, =1. q, k, v and the probabilities are
 * rounded to f16 there (f32 tiles without shader-f16): scores over D <= 128 terms of inputs in
 * [-1, 1] err by ~1e-3, so atol 4e-3 and rtol 1e-2 on outputs of magnitude <= 1 (f16 outputs:
 * one more ulp). Cases: causal prefill over several key blocks with a partial last block, GQA 14/2
 * (Qwen2.5's heads), a causal offset (a prompt after cached tokens), no causal, D 80 / Dv 40, D 128,
 * f16 and bf16 inputs, strided k/v (a cache's prefix), NaN in q. The cases run with f32 k and v
 * read a block ahead as 16-byte words (WGT_ATTENTION_TC_KV4=1; f16 / bf16 k, v and Dv 40 take the
 * element loads) and the heads of a kv head in one workgroup (WGT_ATTENTION_TC_GQA=1: 14/2 packs 7
 * heads of 4 positions, 4 of 4 rows at the end idle; 4/2, 6/2 and 2/1 pack 2, 3, 2); GQA 14/2 runs
 * once more with both 0 (a head a workgroup, element loads). */
static void tc_cases(void)
{
    setenv("WGT_ATTENTION_TC_KV4", "1", 1);
    setenv("WGT_ATTENTION_TC_GQA", "1", 1);
    /* (emulate:16x16x16 is left out: llvmpipe's LLVM takes minutes over its unrolled products) */
    const char *modes[] = {"emulate", "1"};
    for (int mi = 0; mi < 2; mi++) {
        if (mi == 1 && !wgt_gpu_info(ctx)->has_subgroup_matrix) continue;
        setenv("WGT_ATTENTION_TC", modes[mi], 1);
        int bq, bkv;
        if (!op_sdpa_tc_tiles(ctx, 64, 64, &bq, &bkv)) {
            printf("  WGT_ATTENTION_TC=%s: no tiles fit this adapter (the existing kernel runs)\n", modes[mi]);
            continue;
        }
        printf("  WGT_ATTENTION_TC=%s: %d query rows x %d keys a block\n", modes[mi], bq, bkv);
        char what[160];
        const wgt_dtype dts[] = {WGT_F32, WGT_F16, WGT_BF16};
        for (int i = 0; i < 3; i++) {
            wgt_dtype dt = dts[i];
            double rt = dt == WGT_F32 ? 1e-2 : dt == WGT_F16 ? 1.2e-2 : 2.6e-2;
            pair q = make(dt, 4, (int64_t[]){1, 14, 77, 64}, -1, 1), k = make(dt, 4, (int64_t[]){1, 2, 77, 64}, -1, 1);
            pair v = make(dt, 4, (int64_t[]){1, 2, 77, 64}, -1, 1);
            wgt_sdpa_params causal = {0, 1, 0};
            snprintf(what, sizeof what, "sdpa tiles (%s) %s causal 77 rows, GQA 14/2", modes[mi], wgt_dtype_name(dt));
            check_sdpa_tol(what, &q, &k, &v, NULL, &causal, 4e-3, rt);
            if (dt == WGT_F32) {
                setenv("WGT_ATTENTION_TC_KV4", "0", 1);
                setenv("WGT_ATTENTION_TC_GQA", "0", 1);
                snprintf(what, sizeof what, "sdpa tiles (%s) causal 77 rows, GQA 14/2, a head a workgroup", modes[mi]);
                check_sdpa_tol(what, &q, &k, &v, NULL, &causal, 4e-3, rt);
                setenv("WGT_ATTENTION_TC_KV4", "1", 1);
                setenv("WGT_ATTENTION_TC_GQA", "1", 1);
            }
            drop(&q), drop(&k), drop(&v);
        }
        {
            pair q = make(WGT_F32, 4, (int64_t[]){2, 4, 37, 80}, -1, 1), k = make(WGT_F32, 4, (int64_t[]){2, 2, 100, 80}, -1, 1);
            pair v = make(WGT_F32, 4, (int64_t[]){2, 2, 100, 40}, -1, 1);
            wgt_sdpa_params off = {0, 1, 63}, cut = {0.2, 1, 20}, none = {0, 0, 0};
            snprintf(what, sizeof what, "sdpa tiles (%s) D 80 Dv 40, 37 rows after 63 cached, batch 2", modes[mi]);
            check_sdpa_tol(what, &q, &k, &v, NULL, &off, 4e-3, 1e-2);
            snprintf(what, sizeof what, "sdpa tiles (%s) causal offset 20 of 100 keys, scale 0.2", modes[mi]);
            check_sdpa_tol(what, &q, &k, &v, NULL, &cut, 4e-3, 1e-2);
            snprintf(what, sizeof what, "sdpa tiles (%s) not causal", modes[mi]);
            check_sdpa_tol(what, &q, &k, &v, NULL, &none, 4e-3, 1e-2);
            drop(&q), drop(&k), drop(&v);
        }
        {
            pair q = make(WGT_F32, 4, (int64_t[]){1, 2, 40, 128}, -1, 1), k = make(WGT_F32, 4, (int64_t[]){1, 1, 40, 128}, -1, 1);
            pair v = make(WGT_F32, 4, (int64_t[]){1, 1, 40, 128}, -1, 1);
            wgt_sdpa_params causal = {0, 1, 0};
            snprintf(what, sizeof what, "sdpa tiles (%s) D 128, MQA", modes[mi]);
            check_sdpa_tol(what, &q, &k, &v, NULL, &causal, 4e-3, 1e-2);
            drop(&q), drop(&k), drop(&v);
        }
        {
            /* a cache [1, 2, 90, 64] read through a narrow to its first 70 keys, 70 prompt rows */
            pair kc = make(WGT_F32, 4, (int64_t[]){1, 2, 90, 64}, -1, 1), vc = make(WGT_F32, 4, (int64_t[]){1, 2, 90, 64}, -1, 1);
            pair q = make(WGT_F32, 4, (int64_t[]){1, 6, 70, 64}, -1, 1);
            wgt_tensor *kn, *vn;
            MUST(wgt_tensor_narrow(kc.d, 2, 0, 70, &kn));
            MUST(wgt_tensor_narrow(vc.d, 2, 0, 70, &vn));
            wgt_layout lk = kc.h.l;
            lk.shape[2] = 70;
            pair kv = view_of(&kc, kn, &lk), vv = view_of(&vc, vn, &lk);
            wgt_sdpa_params causal = {0, 1, 0};
            snprintf(what, sizeof what, "sdpa tiles (%s) k, v a cache's prefix", modes[mi]);
            check_sdpa_tol(what, &q, &kv, &vv, NULL, &causal, 4e-3, 1e-2);
            ((float *)q.data)[5 * 64 + 3] = NAN; /* head 0, row 5 */
            reupload(&q);
            wgt_tensor *y;
            MUST(wgt_sdpa(q.d, kn, vn, NULL, &causal, &y));
            float *got = malloc(6 * 70 * 64 * sizeof *got);
            MUST(wgt_tensor_to_host(y, got, 6 * 70 * 64 * sizeof *got));
            int nan_row = 1, others = 1;
            for (int d = 0; d < 64; d++) nan_row = nan_row && isnan(got[5 * 64 + d]);
            for (int64_t i = 0; i < 6 * 70 * 64; i++)
                if (i / 64 != 5 && isnan(got[i])) others = 0;
            CHECK(nan_row, "sdpa tiles (%s): NaN in q: its row should be NaN, got %g", modes[mi], got[5 * 64]);
            CHECK(others, "sdpa tiles (%s): NaN in one q row reached other rows", modes[mi]);
            free(got);
            wgt_tensor_free(y);
            wgt_tensor_free(kn), wgt_tensor_free(vn);
            drop(&kc), drop(&vc), drop(&q);
        }
    }
    /* wgt_sdpa_params.half_tiles with WGT_ATTENTION_TC unset (the models' f16 / quantized prefill):
     * the tiles where the adapter has subgroup matrices (their tolerance), else attention.wgsl, bit
     * for bit what half_tiles 0 gives */
    unsetenv("WGT_ATTENTION_TC");
    {
        pair q = make(WGT_F32, 4, (int64_t[]){1, 14, 77, 64}, -1, 1), k = make(WGT_F32, 4, (int64_t[]){1, 2, 77, 64}, -1, 1);
        pair v = make(WGT_F32, 4, (int64_t[]){1, 2, 77, 64}, -1, 1);
        wgt_sdpa_params full = {0, 1, 0}, half = {0, 1, 0, 0, 1};
        check_sdpa_tol("sdpa half_tiles, WGT_ATTENTION_TC unset", &q, &k, &v, NULL, &half, 4e-3, 1e-2);
        if (!wgt_gpu_info(ctx)->has_subgroup_matrix) {
            wgt_tensor *a, *b;
            MUST(wgt_sdpa(q.d, k.d, v.d, NULL, &full, &a));
            MUST(wgt_sdpa(q.d, k.d, v.d, NULL, &half, &b));
            size_t n = 14 * 77 * 64 * sizeof(float);
            float *ha = malloc(n), *hb = malloc(n);
            MUST(wgt_tensor_to_host(a, ha, n));
            MUST(wgt_tensor_to_host(b, hb, n));
            CHECK(!memcmp(ha, hb, n), "sdpa half_tiles without subgroup matrices: not the f32 kernel's output");
            free(ha), free(hb);
            wgt_tensor_free(a), wgt_tensor_free(b);
        }
        drop(&q), drop(&k), drop(&v);
    }
    setenv("WGT_ATTENTION_TC", "0", 1);
    unsetenv("WGT_ATTENTION_TC_KV4");
    unsetenv("WGT_ATTENTION_TC_GQA");
}

/* One query row (decode). Run twice by main: with the adapter's own kernels, then with the
 * barrier-free variants forced (wgt_gpu_test_avoid_barriers: what SwiftShader takes). */
static void decode_cases(void)
{
    /* decode: one query against 200 keys, GQA (one workgroup a head: attention_decode.wgsl), whole
     * and cut mid-way by the causal offset; then against 300 keys, MQA (split across workgroups
     * and merged) */
    {
        pair q = make(WGT_F32, 4, (int64_t[]){1, 4, 1, 64}, -1, 1), k = make(WGT_F32, 4, (int64_t[]){1, 2, 200, 64}, -1, 1);
        pair v = make(WGT_F32, 4, (int64_t[]){1, 2, 200, 72}, -1, 1);
        wgt_sdpa_params dec = {0, 1, 199}, cut = {0, 1, 90};
        check_sdpa("sdpa decode, 200 keys (GQA)", &q, &k, &v, NULL, &dec);
        check_sdpa("sdpa decode, 200 keys cut at 91", &q, &k, &v, NULL, &cut);
        drop(&q), drop(&k), drop(&v);
    }
    for (int i = 0; i < 2; i++) {
        wgt_dtype dt = i ? WGT_F16 : WGT_F32;
        pair q = make(dt, 4, (int64_t[]){1, 3, 1, 64}, -1, 1), k = make(dt, 4, (int64_t[]){1, 1, 300, 64}, -1, 1);
        pair v = make(dt, 4, (int64_t[]){1, 1, 300, 80}, -1, 1);
        wgt_sdpa_params dec = {0, 1, 299};
        check_sdpa(i ? "sdpa decode split f16" : "sdpa decode split f32 (MQA)", &q, &k, &v, NULL, &dec);
        wgt_sdpa_params part = {0, 1, 150}; /* keys past 150 unseen */
        check_sdpa("sdpa decode split, causal cut mid-way", &q, &k, &v, NULL, &part);
        drop(&q), drop(&k), drop(&v);
    }
    /* Qwen2.5-0.5B's heads (14 over 2, 64 features) over 256 keys and over one; a batch of two with
     * D 128 against Dv 64 (attention_decode_v4.wgsl's shapes under WGT_ATTENTION_DECODE=v4) */
    {
        pair q = make(WGT_F32, 4, (int64_t[]){1, 14, 1, 64}, -1, 1), k = make(WGT_F32, 4, (int64_t[]){1, 2, 256, 64}, -1, 1);
        pair v = make(WGT_F32, 4, (int64_t[]){1, 2, 256, 64}, -1, 1);
        wgt_sdpa_params all = {0, 1, 255}, one = {0, 1, 0};
        check_sdpa("sdpa decode, 256 keys, 14 heads over 2", &q, &k, &v, NULL, &all);
        check_sdpa("sdpa decode, 1 key", &q, &k, &v, NULL, &one);
        drop(&q), drop(&k), drop(&v);
        pair q2 = make(WGT_F32, 4, (int64_t[]){2, 4, 1, 128}, -1, 1), k2 = make(WGT_F32, 4, (int64_t[]){2, 1, 37, 128}, -1, 1);
        pair v2 = make(WGT_F32, 4, (int64_t[]){2, 1, 37, 64}, -1, 1);
        wgt_sdpa_params dec = {0, 1, 36};
        check_sdpa("sdpa decode, D 128, Dv 64, batch 2", &q2, &k2, &v2, NULL, &dec);
        drop(&q2), drop(&k2), drop(&v2);
    }
    /* past 1024 keys (attention_decode_v4.wgsl by default up to 2048, the split kernels otherwise) */
    {
        pair q = make(WGT_F32, 4, (int64_t[]){1, 14, 1, 64}, -1, 1), k = make(WGT_F32, 4, (int64_t[]){1, 2, 1500, 64}, -1, 1);
        pair v = make(WGT_F32, 4, (int64_t[]){1, 2, 1500, 64}, -1, 1);
        wgt_sdpa_params all = {0, 1, 1499}, cut = {0, 1, 1100};
        check_sdpa("sdpa decode, 1500 keys, 14 heads over 2", &q, &k, &v, NULL, &all);
        check_sdpa("sdpa decode, 1500 keys cut at 1101", &q, &k, &v, NULL, &cut);
        drop(&q), drop(&k), drop(&v);
    }
    /* no keys: zeros */
    pair q = make(WGT_F32, 4, (int64_t[]){1, 2, 1, 8}, -1, 1), k = make(WGT_F32, 4, (int64_t[]){1, 1, 0, 8}, -1, 1);
    pair v = make(WGT_F32, 4, (int64_t[]){1, 1, 0, 8}, -1, 1);
    check_sdpa("sdpa decode, no keys", &q, &k, &v, NULL, NULL);
    drop(&q), drop(&k), drop(&v);
}

static void sdpa_cases(void)
{
    const wgt_dtype dts[] = {WGT_F32, WGT_F16, WGT_BF16};
    for (int i = 0; i < 3; i++) {
        wgt_dtype dt = dts[i];
        char what[128];
        pair q = make(dt, 4, (int64_t[]){2, 4, 5, 16}, -1, 1), k = make(dt, 4, (int64_t[]){2, 2, 7, 16}, -1, 1);
        pair v = make(dt, 4, (int64_t[]){2, 2, 7, 12}, -1, 1);
        snprintf(what, sizeof what, "sdpa %s GQA", wgt_dtype_name(dt));
        check_sdpa(what, &q, &k, &v, NULL, NULL);
        wgt_sdpa_params causal = {0, 1, 2};
        snprintf(what, sizeof what, "sdpa %s causal offset 2", wgt_dtype_name(dt));
        check_sdpa(what, &q, &k, &v, NULL, &causal);
        drop(&q), drop(&k), drop(&v);
    }
    /* k stored [B, H, D, L] and read transposed (the scalar key path), f16 */
    {
        pair q = make(WGT_F16, 4, (int64_t[]){1, 4, 3, 16}, -1, 1), k0 = make(WGT_F16, 4, (int64_t[]){1, 2, 16, 9}, -1, 1);
        pair v = make(WGT_F16, 4, (int64_t[]){1, 2, 9, 16}, -1, 1);
        wgt_tensor *kt;
        MUST(wgt_tensor_transpose(k0.d, 2, 3, &kt));
        wgt_layout l = k0.h.l;
        l.shape[2] = 9, l.shape[3] = 16, l.strides[2] = 1, l.strides[3] = 9;
        pair kv = view_of(&k0, kt, &l);
        check_sdpa("sdpa f16, k a transposed view", &q, &kv, &v, NULL, NULL);
        wgt_tensor_free(kt);
        drop(&q), drop(&k0), drop(&v);
    }
    /* a KV cache [1, 2, 40, 24] read through a narrow to 20 keys; q [1, 6 heads, 3 rows, 24] a
     * transposed [1, L, H, D] */
    pair kc = make(WGT_F32, 4, (int64_t[]){1, 2, 40, 24}, -1, 1), vc = make(WGT_F32, 4, (int64_t[]){1, 2, 40, 24}, -1, 1);
    pair q0 = make(WGT_F32, 4, (int64_t[]){1, 3, 6, 24}, -1, 1);
    wgt_tensor *kn, *vn, *qt;
    MUST(wgt_tensor_narrow(kc.d, 2, 0, 20, &kn));
    MUST(wgt_tensor_narrow(vc.d, 2, 0, 20, &vn));
    MUST(wgt_tensor_transpose(q0.d, 1, 2, &qt));
    wgt_layout lk = kc.h.l, lq = q0.h.l;
    lk.shape[2] = 20;
    lq.shape[1] = 6, lq.shape[2] = 3, lq.strides[1] = q0.h.l.strides[2], lq.strides[2] = q0.h.l.strides[1];
    pair kv = view_of(&kc, kn, &lk), vv = view_of(&vc, vn, &lk), qv = view_of(&q0, qt, &lq);
    wgt_sdpa_params cache = {0.3, 1, 14};
    check_sdpa("sdpa KV-cache views, q transposed (GQA 6/2), causal offset 14, scale 0.3", &qv, &kv, &vv, NULL, &cache);
    /* masks: a float [Lq, Lk] mask broadcast; a bool mask with one row fully masked */
    pair fm = make(WGT_F32, 2, (int64_t[]){3, 20}, -2, 0.5);
    check_sdpa("sdpa float mask [Lq, Lk]", &qv, &kv, &vv, &fm, NULL);
    pair bm = make(WGT_BOOL, 4, (int64_t[]){1, 1, 3, 20}, 0, 2);
    uint8_t *bd = bm.data;
    for (int j = 0; j < 20; j++) bd[2 * 20 + j] = 0; /* row 2 sees nothing: zeros */
    reupload(&bm);
    check_sdpa("sdpa bool mask, one row fully masked", &qv, &kv, &vv, &bm, &cache);
    drop(&fm), drop(&bm);
    wgt_tensor_free(kn), wgt_tensor_free(vn), wgt_tensor_free(qt);
    drop(&kc), drop(&vc), drop(&q0);

    decode_cases();
    /* sliding windows: prefill rows bounded from below (the WINDOW kernel, 4 rows a workgroup
     * straddling the bound), past the cache's start (keys dropped first), with a float mask, a
     * decode row whose window cuts the cache, GQA, and a window wider than the keys */
    {
        pair q = make(WGT_F32, 4, (int64_t[]){1, 4, 9, 32}, -1, 1), k = make(WGT_F32, 4, (int64_t[]){1, 2, 150, 32}, -1, 1);
        pair v = make(WGT_F32, 4, (int64_t[]){1, 2, 150, 40}, -1, 1);
        pair q1 = make(WGT_F32, 4, (int64_t[]){1, 4, 1, 32}, -1, 1);
        pair fm = make(WGT_F32, 2, (int64_t[]){9, 150}, -2, 0.5);
        wgt_sdpa_params w5 = {0, 1, 8, 5}, w7 = {0, 1, 120, 7}, w130 = {0, 1, 140, 130}, wide = {0, 1, 8, 1000};
        check_sdpa("sdpa window 5, 9 queries from position 0", &q, &k, &v, NULL, &w5);
        check_sdpa("sdpa window 7, 9 queries at 112..120 of 150 keys", &q, &k, &v, NULL, &w7);
        check_sdpa("sdpa window 130, split keys", &q, &k, &v, NULL, &w130);
        check_sdpa("sdpa window 7 with a float mask", &q, &k, &v, &fm, &w7);
        check_sdpa("sdpa window wider than the keys", &q, &k, &v, NULL, &wide);
        wgt_sdpa_params d7 = {0, 1, 120, 7};
        check_sdpa("sdpa decode, window 7 at position 120", &q1, &k, &v, NULL, &d7);
        wgt_tensor *y = NULL;
        wgt_sdpa_params bad = {0, 0, 0, 4};
        CHECK(wgt_sdpa(q.d, k.d, v.d, NULL, &bad, &y) == WGT_ERR_INVALID_ARGUMENT && !y,
              "sdpa: a window without causal must be refused");
        drop(&q), drop(&k), drop(&v), drop(&q1), drop(&fm);
    }
    /* head dims 80 / 128 / 256, prefill 130 keys */
    const int64_t dims[] = {80, 128, 256};
    for (int i = 0; i < 3; i++) {
        int64_t D = dims[i];
        pair q = make(WGT_F32, 4, (int64_t[]){1, 2, 3, D}, -1, 1), k = make(WGT_F32, 4, (int64_t[]){1, 2, 130, D}, -1, 1);
        pair v = make(WGT_F32, 4, (int64_t[]){1, 2, 130, D}, -1, 1);
        char what[64];
        snprintf(what, sizeof what, "sdpa D = %lld", (long long)D);
        check_sdpa(what, &q, &k, &v, NULL, NULL);
        drop(&q), drop(&k), drop(&v);
    }
    /* no keys: zeros; NaN in q: a NaN row */
    pair q = make(WGT_F32, 4, (int64_t[]){1, 1, 2, 8}, -1, 1), k = make(WGT_F32, 4, (int64_t[]){1, 1, 0, 8}, -1, 1);
    pair v = make(WGT_F32, 4, (int64_t[]){1, 1, 0, 8}, -1, 1);
    check_sdpa("sdpa no keys", &q, &k, &v, NULL, NULL);
    pair k2 = make(WGT_F32, 4, (int64_t[]){1, 1, 5, 8}, -1, 1), v2 = make(WGT_F32, 4, (int64_t[]){1, 1, 5, 8}, -1, 1);
    ((float *)q.data)[3] = NAN;
    reupload(&q);
    {
        /* PyTorch: a NaN score makes its row NaN (the reference gives zeros there: see the
         * report); the other row is unaffected */
        wgt_tensor *y;
        MUST(wgt_sdpa(q.d, k2.d, v2.d, NULL, NULL, &y));
        float got[16], ref[16];
        MUST(wgt_tensor_to_host(y, got, sizeof got));
        wgt_cpu_tensor r = wgt_cpu_tensor_make(ref, WGT_F32, 4, (int64_t[]){1, 1, 2, 8});
        wgt_sdpa_params none = {0, 0, 0};
        MUST(wgt_cpu_sdpa(&q.h, &k2.h, &v2.h, NULL, &none, &r));
        int nan_row = 1, ok_row = 1;
        for (int d = 0; d < 8; d++) {
            nan_row = nan_row && isnan(got[d]);
            ok_row = ok_row && fabs(got[8 + d] - ref[8 + d]) <= 3e-5 + 1e-4 * fabs(ref[8 + d]);
        }
        CHECK(nan_row, "sdpa NaN in q: row 0 should be NaN, got %g", got[0]);
        CHECK(ok_row, "sdpa NaN in q: row 1 differs from the reference");
        wgt_tensor_free(y);
    }
    drop(&q), drop(&k), drop(&v), drop(&k2), drop(&v2);
    /* bad shapes are statuses */
    pair a = make(WGT_F32, 4, (int64_t[]){1, 3, 2, 8}, -1, 1), b = make(WGT_F32, 4, (int64_t[]){1, 2, 2, 8}, -1, 1);
    wgt_tensor *y = NULL;
    CHECK(wgt_sdpa(a.d, b.d, b.d, NULL, NULL, &y) == WGT_ERR_SHAPE && !y, "sdpa with Hq = 3, Hkv = 2 must fail");
    drop(&a), drop(&b);
}

static void check_rope(const char *what, const pair *x, const pair *pos, int rot, int inter, const wgt_rope_params *rp,
                       double atol)
{
    wgt_tensor *y = NULL;
    wgt_status st = wgt_rope(x->d, pos->d, rot, inter, rp, &y);
    CHECK(st == WGT_OK, "%s: %s", what, wgt_errmsg());
    if (st) return;
    int64_t n = wgt_tensor_numel(y);
    void *buf = calloc(n ? n : 1, 8);
    wgt_cpu_tensor r = wgt_cpu_tensor_make(buf, wgt_tensor_dtype(y), wgt_tensor_ndim(y), wgt_tensor_shape(y));
    MUST(wgt_cpu_rope(&x->h, &pos->h, rot, inter, rp, &r));
    compare(what, y, &r, atol, x->h.l.dtype == WGT_F32 ? 0 : rtol_of(x->h.l.dtype));
    free(buf);
    wgt_tensor_free(y);
}

static void rope_cases(void)
{
    wgt_rope_params none = {10000};
    wgt_rope_params linear = {10000, WGT_ROPE_LINEAR, 2.0};
    wgt_rope_params llama3 = {500000, WGT_ROPE_LLAMA3, 8.0, 1.0, 4.0, 8192};
    wgt_rope_params yarn = {10000, WGT_ROPE_YARN, 4.0, 0, 0, 2048};
    yarn.truncate = 1;
    const wgt_rope_params *ps[] = {&none, &linear, &llama3, &yarn};
    const char *names[] = {"none", "linear", "llama3", "yarn"};
    pair pos = make(WGT_I32, 1, (int64_t[]){7}, 0, 4000);
    const wgt_dtype dts[] = {WGT_F32, WGT_F16, WGT_BF16};
    for (int di = 0; di < 3; di++) {
        pair x = make(dts[di], 4, (int64_t[]){2, 3, 7, 16}, -1, 1);
        for (int s = 0; s < 4; s++)
            for (int inter = 0; inter < 2; inter++) {
                if (di && s) continue; /* scalings in f32 only: the kernel is the same */
                char what[96];
                snprintf(what, sizeof what, "rope %s %s %s", wgt_dtype_name(dts[di]), names[s],
                         inter ? "interleaved" : "half-split");
                check_rope(what, &x, &pos, 16, inter, ps[s], 2e-5);
            }
        drop(&x);
    }
    /* partial rotary dim (rot 8 of D 20), x a transposed [L, H, D] view, positions [B, 1, L] */
    pair x0 = make(WGT_F32, 3, (int64_t[]){7, 3, 20}, -1, 1);
    wgt_tensor *xt;
    MUST(wgt_tensor_transpose(x0.d, 0, 1, &xt));
    wgt_layout l = x0.h.l;
    l.shape[0] = 3, l.shape[1] = 7, l.strides[0] = x0.h.l.strides[1], l.strides[1] = x0.h.l.strides[0];
    pair xv = view_of(&x0, xt, &l);
    check_rope("rope rot 8 of 20, transposed x", &xv, &pos, 8, 0, &none, 2e-5);
    check_rope("rope rot 8 of 20 interleaved, transposed x", &xv, &pos, 8, 1, &llama3, 2e-5);
    pair x4 = make(WGT_F16, 4, (int64_t[]){2, 3, 7, 10}, -1, 1), pos2 = make(WGT_I32, 3, (int64_t[]){2, 1, 7}, 0, 100);
    check_rope("rope f16 D 10, positions [B, 1, L]", &x4, &pos2, 10, 0, &none, 2e-5);
    wgt_tensor_free(xt);
    drop(&x0), drop(&x4), drop(&pos2), drop(&pos);
}

static void embedding_cases(void)
{
    const wgt_dtype dts[] = {WGT_F32, WGT_F16, WGT_BF16};
    pair ids = make(WGT_I32, 2, (int64_t[]){3, 4}, 0, 50);
    for (int i = 0; i < 3; i++) {
        pair w = make(dts[i], 2, (int64_t[]){50, 7}, -1, 1);
        for (int of = 0; of < 2; of++) {
            wgt_dtype odt = of ? WGT_F32 : dts[i];
            wgt_tensor *y = NULL;
            char what[64];
            snprintf(what, sizeof what, "embedding %s -> %s", wgt_dtype_name(dts[i]), wgt_dtype_name(odt));
            wgt_status st = wgt_embedding(w.d, ids.d, odt, &y);
            CHECK(st == WGT_OK, "%s: %s", what, wgt_errmsg());
            if (st) continue;
            void *rb = calloc(84, 8), *fb = calloc(84, 8);
            int64_t shape[3] = {3, 4, 7};
            wgt_cpu_tensor r = wgt_cpu_tensor_make(rb, dts[i], 3, shape), f = wgt_cpu_tensor_make(fb, odt, 3, shape);
            MUST(wgt_cpu_embedding(&w.h, &ids.h, &r));
            MUST(wgt_cpu_cast(&r, &f));
            compare(what, y, &f, 0, 0);
            free(rb), free(fb);
            wgt_tensor_free(y);
        }
        drop(&w);
    }
    drop(&ids);
}

int main(void)
{
    MUST(wgt_context_create(NULL, &ctx));
    setenv("WGT_ATTENTION_TC", "0", 1); /* the f32 kernels' tolerances; tc_cases has its own */
    sdpa_cases();
    setenv("WGT_SDPA_FWD", "products", 1); /* f32 prompts without a mask as two products and a row kernel */
    sdpa_cases();
    unsetenv("WGT_SDPA_FWD");
    tc_cases();
    /* f32 steps through attention_decode_v4.wgsl (the default: up to 1024 keys, 256 invocations up to
     * 256 keys and 1024 past them), then up to 256 keys, then 1024 invocations throughout */
    decode_cases();
    setenv("WGT_ATTENTION_DECODE", "v4", 1);
    decode_cases();
    setenv("WGT_ATTENTION_DECODE", "v4:1024:1024", 1);
    decode_cases();
    /* v4 with q staged and the values loaded after the softmax and with q in registers and the
     * first values loaded early (WGT_ATTENTION_DECODE_PRE, whichever is the default), and with the
     * tree reductions */
    setenv("WGT_ATTENTION_DECODE", "v4", 1);
    setenv("WGT_ATTENTION_DECODE_PRE", "0", 1);
    decode_cases();
    setenv("WGT_ATTENTION_DECODE", "v4:2048", 1);
    setenv("WGT_ATTENTION_DECODE_PRE", "1", 1);
    decode_cases();
    unsetenv("WGT_ATTENTION_DECODE_PRE");
    setenv("WGT_ATTENTION_DECODE_SG", "0", 1);
    decode_cases();
    setenv("WGT_ATTENTION_DECODE", "v4:2048:1024", 1); /* subgroup reductions over 1024 invocations */
    setenv("WGT_ATTENTION_DECODE_SG", "all", 1);
    decode_cases();
    unsetenv("WGT_ATTENTION_DECODE_SG");
    setenv("WGT_ATTENTION_DECODE", "0", 1); /* attention_decode.wgsl and the split kernels */
    setenv("WGT_ATTENTION_LOADS", "4", 1); /* the decode kernels with their loads issued together */
    decode_cases();
    setenv("WGT_ATTENTION_LOADS", "1", 1); /* and one at a time (decode's default is 4) */
    decode_cases();
    unsetenv("WGT_ATTENTION_LOADS");
    unsetenv("WGT_ATTENTION_DECODE");
    int was = wgt_gpu_avoid_barriers(ctx);
    wgt_gpu_test_avoid_barriers(ctx, 1);
    decode_cases();
    wgt_gpu_test_avoid_barriers(ctx, was);
    rope_cases();
    embedding_cases();
    wgt_context_free(ctx);
    return test_finish("test_gpu_attention_rope");
}
