/* Softmax and normalisation on the GPU against the CPU reference (src/cpu/norm.c): softmax and
 * log_softmax on every dim (the three output layouts of the kernel: rows end to end, rows side by
 * side, and the f32-then-convert path), layer_norm and rms_norm over 1 and 2 dims with f32 and f16
 * weights, on contiguous and transposed inputs, group_norm, batch_norm (inference on the GPU,
 * training on the reference), in f32, f16 and bf16; long rows, NaN and -inf rows, empty inputs. */
#include <math.h>
#include <string.h>

#include "ops/api.h"
#include "ops/ops.h"
#include "support/check.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static double uniform(double lo, double hi)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return lo + (hi - lo) * (double)(rng >> 11) / 9007199254740992.0;
}

static void *make_data(wgt_dtype dt, int64_t n, double lo, double hi)
{
    void *d = calloc(n ? n : 1, 8);
    wgt_cpu_tensor t = wgt_cpu_tensor_make(d, dt, 1, &n);
    for (int64_t i = 0; i < n; i++) wgt_cpu_store_f(&t, i, uniform(lo, hi));
    return d;
}

static int64_t compared;

/* y (GPU, contiguous) against ref (host, y's shape and dtype). */
static void compare(const char *what, const wgt_tensor *y, const wgt_cpu_tensor *ref, double atol, double rtol)
{
    int64_t n = wgt_tensor_numel(y);
    size_t sz = wgt_dtype_size(wgt_tensor_dtype(y));
    void *got = malloc(n * sz + 8);
    if (wgt_tensor_to_host(y, got, n * sz)) {
        CHECK(0, "%s: to_host: %s", what, wgt_errmsg());
        free(got);
        return;
    }
    wgt_cpu_tensor g = wgt_cpu_tensor_make(got, wgt_tensor_dtype(y), wgt_tensor_ndim(y), wgt_tensor_shape(y));
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 3; i++) {
        double a = wgt_cpu_load_f(&g, i), b = wgt_cpu_load_f(ref, i);
        int ok = (isnan(a) && isnan(b)) || a == b || fabs(a - b) <= atol + rtol * fabs(b);
        if (!ok) {
            bad++;
            CHECK(0, "%s: element %lld: gpu %.9g, reference %.9g", what, (long long)i, a, b);
        }
    }
    compared += n;
    free(got);
}

static wgt_cpu_tensor host_of(const wgt_tensor *t, void *data)
{
    wgt_cpu_tensor h;
    h.data = data;
    h.l = t->l;
    return h;
}

static wgt_cpu_tensor ref_like(const wgt_tensor *y, void **buf)
{
    int64_t n = wgt_tensor_numel(y);
    *buf = calloc(n ? n : 1, 8);
    return wgt_cpu_tensor_make(*buf, wgt_tensor_dtype(y), wgt_tensor_ndim(y), wgt_tensor_shape(y));
}

/* Tolerances: one rounding of the output in its dtype, plus f32 exp/rsqrt against double. */
static double rtol_of(wgt_dtype dt) { return dt == WGT_F16 ? 2e-3 : dt == WGT_BF16 ? 1.2e-2 : 2e-5; }

static void check_softmax(const wgt_tensor *x, void *data, int dim, const char *layout)
{
    for (int log = 0; log < 2; log++) {
        char what[128];
        snprintf(what, sizeof what, "%s %s %s dim %d", log ? "log_softmax" : "softmax",
                 wgt_dtype_name(wgt_tensor_dtype(x)), layout, dim);
        wgt_tensor *y = NULL;
        wgt_status st = log ? wgt_log_softmax(x, dim, &y) : wgt_softmax(x, dim, &y);
        CHECK(st == WGT_OK, "%s: %s", what, wgt_errmsg());
        if (st) continue;
        void *rb;
        wgt_cpu_tensor r = ref_like(y, &rb), hx = host_of(x, data);
        int d = dim < 0 ? dim + wgt_tensor_ndim(x) : dim;
        MUST(log ? wgt_cpu_log_softmax(&hx, d, &r) : wgt_cpu_softmax(&hx, d, &r));
        /* log_softmax values of size ~10 carry f32 absolute error from log and the max */
        compare(what, y, &r, log ? 2e-5 : 1e-7, rtol_of(wgt_tensor_dtype(y)) * (log ? 1 : 2));
        free(rb);
        wgt_tensor_free(y);
    }
}

static void softmaxes(wgt_context *ctx)
{
    const wgt_dtype dts[] = {WGT_F32, WGT_F16, WGT_BF16};
    for (int di = 0; di < 3; di++) {
        wgt_dtype dt = dts[di];
        int64_t shape[3] = {5, 9, 67};
        void *data = make_data(dt, 5 * 9 * 67, -6, 6);
        wgt_tensor *x, *xt;
        MUST(wgt_tensor_from_host(ctx, dt, 3, shape, data, &x));
        for (int d = -1; d < 3; d++) check_softmax(x, data, d, "contiguous");
        MUST(wgt_tensor_transpose(x, 1, 2, &xt)); /* [5, 67, 9] */
        check_softmax(xt, data, 2, "transposed");
        check_softmax(xt, data, 1, "transposed");
        wgt_tensor_free(xt);
        wgt_tensor_free(x);
        free(data);
        /* rows side by side with inner % 4 == 0: [6, 10, 8] on dim 1 */
        int64_t s2[3] = {6, 10, 8};
        data = make_data(dt, 480, -6, 6);
        MUST(wgt_tensor_from_host(ctx, dt, 3, s2, data, &x));
        check_softmax(x, data, 1, "inner 8");
        check_softmax(x, data, 0, "inner 80");
        wgt_tensor_free(x);
        free(data);
    }
    /* a long row, a row with NaN, a row with -inf entries, a row of -inf */
    int64_t shape[2] = {4, 3001};
    float *f = make_data(WGT_F32, 4 * 3001, -20, 20);
    f[3001 + 5] = NAN;
    for (int i = 0; i < 3001; i += 3) f[2 * 3001 + i] = -INFINITY;
    for (int i = 0; i < 3001; i++) f[3 * 3001 + i] = -INFINITY;
    wgt_tensor *x;
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, shape, f, &x));
    check_softmax(x, f, 1, "long/nan/-inf");
    wgt_tensor_free(x);
    free(f);
    /* empty and 0-d */
    int64_t se[2] = {0, 7};
    float z[1] = {1.5f};
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, se, z, &x));
    check_softmax(x, z, 1, "empty");
    wgt_tensor_free(x);
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 0, NULL, z, &x));
    check_softmax(x, z, 0, "0-d");
    wgt_tensor_free(x);
}

static void check_ln(int rms, const wgt_tensor *x, void *xd, int nn, const wgt_tensor *w, void *wd,
                     const wgt_tensor *b, void *bd, const char *layout)
{
    char what[160];
    snprintf(what, sizeof what, "%s %s %s norm_ndim %d weight %s bias %s", rms ? "rms_norm" : "layer_norm",
             wgt_dtype_name(wgt_tensor_dtype(x)), layout, nn, w ? wgt_dtype_name(wgt_tensor_dtype(w)) : "none",
             b ? "yes" : "no");
    wgt_tensor *y = NULL;
    wgt_status st = rms ? wgt_rms_norm(x, nn, w, 1e-5, &y) : wgt_layer_norm(x, nn, w, b, 1e-5, &y);
    CHECK(st == WGT_OK, "%s: %s", what, wgt_errmsg());
    if (st) return;
    void *rb;
    wgt_cpu_tensor r = ref_like(y, &rb), hx = host_of(x, xd), hw, hb;
    if (w) hw = host_of(w, wd);
    if (b) hb = host_of(b, bd);
    if (rms) MUST(wgt_cpu_rms_norm(&hx, nn, w ? &hw : NULL, 1e-5, &r));
    else MUST(wgt_cpu_layer_norm(&hx, nn, w ? &hw : NULL, b ? &hb : NULL, 1e-5, &r, NULL, NULL));
    /* outputs of size ~3: f32 statistics over a few thousand elements */
    compare(what, y, &r, 3e-5, rtol_of(wgt_tensor_dtype(y)) * 2);
    free(rb);
    wgt_tensor_free(y);
}

static void norms(wgt_context *ctx)
{
    const wgt_dtype dts[] = {WGT_F32, WGT_F16, WGT_BF16};
    for (int di = 0; di < 3; di++) {
        wgt_dtype dt = dts[di];
        int64_t shape[3] = {3, 7, 130}, ws2[2] = {7, 130}, ws1[1] = {130};
        void *xd = make_data(dt, 3 * 7 * 130, -3, 5);
        void *wd = make_data(WGT_F32, 7 * 130, 0.5, 1.5), *bd = make_data(WGT_F32, 7 * 130, -1, 1);
        void *w16 = make_data(WGT_F16, 130, 0.5, 1.5);
        wgt_tensor *x, *w2, *b2, *w1, *b1, *wh, *xt;
        MUST(wgt_tensor_from_host(ctx, dt, 3, shape, xd, &x));
        MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, ws2, wd, &w2));
        MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, ws2, bd, &b2));
        MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, ws1, wd, &w1));
        MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, ws1, bd, &b1));
        MUST(wgt_tensor_from_host(ctx, WGT_F16, 1, ws1, w16, &wh));
        for (int rms = 0; rms < 2; rms++) {
            check_ln(rms, x, xd, 1, w1, wd, b1, bd, "contiguous");
            check_ln(rms, x, xd, 1, wh, w16, NULL, NULL, "contiguous");
            check_ln(rms, x, xd, 2, w2, wd, b2, bd, "contiguous");
            check_ln(rms, x, xd, 1, NULL, NULL, NULL, NULL, "contiguous");
        }
        MUST(wgt_tensor_transpose(x, 0, 1, &xt)); /* [7, 3, 130]: rows of a strided view */
        check_ln(0, xt, xd, 2, NULL, NULL, NULL, NULL, "transposed");
        check_ln(1, xt, xd, 1, w1, wd, NULL, NULL, "transposed");
        wgt_tensor_free(xt);
        MUST(wgt_tensor_transpose(x, 1, 2, &xt)); /* [3, 130, 7]: the row is strided */
        check_ln(0, xt, xd, 1, NULL, NULL, NULL, NULL, "strided row");
        wgt_tensor_free(xt);
        /* group_norm [3, 6, 5, 7]: 3 groups, weight/bias [6]; and batch_norm inference */
        int64_t gs[4] = {3, 6, 5, 7}, cs[1] = {6};
        void *gd = make_data(dt, 3 * 6 * 35, -2, 4), *rv = make_data(WGT_F32, 6, 0.5, 2);
        wgt_tensor *g, *gw, *gb, *rm_t, *rv_t, *y;
        MUST(wgt_tensor_from_host(ctx, dt, 4, gs, gd, &g));
        MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, cs, wd, &gw));
        MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, cs, bd, &gb));
        MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, cs, bd, &rm_t));
        MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, cs, rv, &rv_t));
        for (int groups = 1; groups <= 6; groups *= 3) {
            char what[96];
            snprintf(what, sizeof what, "group_norm %s groups %d", wgt_dtype_name(dt), groups);
            wgt_status st = wgt_group_norm(g, groups, groups > 1 ? gw : NULL, groups > 1 ? gb : NULL, 1e-5, &y);
            CHECK(st == WGT_OK, "%s: %s", what, wgt_errmsg());
            if (!st) {
                void *rb;
                wgt_cpu_tensor r = ref_like(y, &rb), hx = host_of(g, gd), hw = host_of(gw, wd), hb = host_of(gb, bd);
                MUST(wgt_cpu_group_norm(&hx, groups, groups > 1 ? &hw : NULL, groups > 1 ? &hb : NULL, 1e-5, &r));
                compare(what, y, &r, 3e-5, rtol_of(dt) * 2);
                free(rb);
                wgt_tensor_free(y);
            }
        }
        for (int training = 0; training < 2; training++) {
            char what[96];
            snprintf(what, sizeof what, "batch_norm %s training %d", wgt_dtype_name(dt), training);
            /* training updates the running stats: give it copies */
            wgt_tensor *m2 = NULL, *v2 = NULL;
            MUST(wgt_tensor_copy(rm_t, &m2));
            MUST(wgt_tensor_copy(rv_t, &v2));
            wgt_status st = wgt_batch_norm(g, m2, v2, gw, gb, training, 0.1, 1e-5, &y);
            CHECK(st == WGT_OK, "%s: %s", what, wgt_errmsg());
            if (!st) {
                void *rb;
                float hm[6], hv[6];
                memcpy(hm, bd, sizeof hm);
                memcpy(hv, rv, sizeof hv);
                wgt_cpu_tensor r = ref_like(y, &rb), hx = host_of(g, gd), hw = host_of(gw, wd), hb = host_of(gb, bd);
                wgt_cpu_tensor tm = wgt_cpu_tensor_make(hm, WGT_F32, 1, cs), tv = wgt_cpu_tensor_make(hv, WGT_F32, 1, cs);
                MUST(wgt_cpu_batch_norm(&hx, &tm, &tv, &hw, &hb, training, 0.1, 1e-5, &r));
                compare(what, y, &r, 3e-5, rtol_of(dt) * 2);
                char w2s[120];
                snprintf(w2s, sizeof w2s, "%s running_var", what);
                compare(w2s, v2, &tv, 1e-6, 1e-5);
                free(rb);
                wgt_tensor_free(y);
            }
            wgt_tensor_free(m2);
            wgt_tensor_free(v2);
        }
        wgt_tensor *bad = NULL;
        CHECK(wgt_group_norm(g, 4, NULL, NULL, 1e-5, &bad) == WGT_ERR_SHAPE && !bad, "4 groups of 6 channels must fail");
        CHECK(wgt_layer_norm(x, 1, w2, NULL, 1e-5, &bad) == WGT_ERR_SHAPE && !bad, "a wrong weight shape must fail");
        wgt_tensor *objs[] = {g, gw, gb, rm_t, rv_t, x, w2, b2, w1, b1, wh};
        for (size_t i = 0; i < sizeof objs / sizeof *objs; i++) wgt_tensor_free(objs[i]);
        free(gd);
        free(rv);
        free(xd);
        free(wd);
        free(bd);
        free(w16);
    }
    /* the LLM shape: rms_norm over hidden 4096 of [3 tokens, 4096], f16 activations, f16 weight */
    int64_t s[2] = {3, 4096}, ws[1] = {4096};
    void *xd = make_data(WGT_F16, 3 * 4096, -3, 3), *wd = make_data(WGT_F16, 4096, 0.5, 1.5);
    wgt_tensor *x, *w;
    MUST(wgt_tensor_from_host(ctx, WGT_F16, 2, s, xd, &x));
    MUST(wgt_tensor_from_host(ctx, WGT_F16, 1, ws, wd, &w));
    check_ln(1, x, xd, 1, w, wd, NULL, NULL, "llm");
    wgt_tensor_free(x);
    wgt_tensor_free(w);
    free(xd);
    free(wd);
}

/* Rows split over several bindings: the binding limit lowered to 8 KiB for a moment. */
static void split_bindings(wgt_context *ctx)
{
    if (wgt_gpu_runs_reference(ctx)) return;
    uint64_t saved = ctx->info.limits.max_storage_buffer_binding_size;
    ctx->info.limits.max_storage_buffer_binding_size = 8192;
    int64_t shape[2] = {65, 301}, ws[1] = {301};
    void *xd = make_data(WGT_F16, 65 * 301, -3, 3), *wd = make_data(WGT_F32, 301, 0.5, 1.5);
    wgt_tensor *x, *w;
    MUST(wgt_tensor_from_host(ctx, WGT_F16, 2, shape, xd, &x));
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, ws, wd, &w));
    check_ln(1, x, xd, 1, w, wd, NULL, NULL, "split");
    check_softmax(x, xd, 1, "split");
    wgt_tensor_free(x);
    wgt_tensor_free(w);
    free(xd);
    free(wd);
    ctx->info.limits.max_storage_buffer_binding_size = saved;
}

int main(void)
{
    wgt_context *ctx;
    MUST(wgt_context_create(NULL, &ctx));
    softmaxes(ctx);
    norms(ctx);
    split_bindings(ctx);
    CHECK(compared > 50000, "only %lld elements compared", (long long)compared);
    wgt_context_free(ctx);
    return test_finish("test_gpu_norm");
}
