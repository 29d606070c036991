/* Matrix products on the GPU against the CPU reference (src/cpu/matmul.c): matmul 1-D to N-D with
 * broadcast batch dims, transposed and narrowed operands, linear (GEMV and tiled paths, mixed
 * f32 x f16/bf16 weights, bias), addmm, baddbmm, outer; empty and one-element shapes, NaN/inf
 * propagation; integer products on the GPU (exact, wrapping in 32 bits) and their fallback.
 * The float cases run again through matmul_regs.wgsl (WGT_MATMUL_TILE=auto), whose 16-byte loads
 * and tiles vec_cases covers, and through its opt-in rules (WGT_MATMUL_TILE_PAD=1, WGT_MATMUL_TILE_TN=1).
 * The float and integer cases run again on a context with the spec's
 * default limits (128 invocations per workgroup on the OpenGL ES compatibility adapter: the
 * kernels' smaller tiles).
 * Tolerances: the kernels accumulate in f32 in another order than the reference (double), so f32
 * results differ by about K * 2^-24 relative to sum |a||b|: atol 1e-4 for the unit-range inputs
 * here (K <= 300; the k split's K 2048 gives sums near 15, within the rtol). f16 / bf16 results are rounded once from f32 by both: one ulp (rtol 2e-3 /
 * 1.6e-2). */
#include <math.h>
#include <string.h>

#include "ops/api.h"
#include "ops/ops.h"
#include "support/check.h"
#include "support/pairs.h"

typedef test_pair pair;

static wgt_context *ctx;

static pair make(wgt_dtype dt, int nd, const int64_t *shape) { return test_pair_make(ctx, dt, nd, shape); }

/* An integer pair with values over dt's whole range (i32 products and sums wrap). */
static pair make_wide(wgt_dtype dt, int nd, const int64_t *shape)
{
    pair p = make(dt, nd, shape);
    int64_t n = wgt_layout_numel(&p.h.l);
    for (int64_t i = 0; i < n; i++) {
        test_uniform(0, 1);
        int64_t v = dt == WGT_I8 ? (int8_t)test_rng : dt == WGT_U8 ? (uint8_t)test_rng
                  : dt == WGT_U32 ? (int64_t)(uint32_t)test_rng : (int32_t)test_rng;
        wgt_cpu_store_i(&p.h, i, v);
    }
    wgt_tensor_free(p.d);
    MUST(wgt_tensor_from_host(ctx, dt, nd, shape, p.data, &p.d));
    return p;
}

static void drop(pair *p) { test_pair_drop(p); }

/* A view of both: transpose dims d0, d1. */
static pair transposed(const pair *p, int d0, int d1) { return test_pair_transposed(p, d0, d1); }

static int compare(const char *what, const wgt_tensor *y, const wgt_cpu_tensor *ref, double atol, double rtol)
{
    int64_t n = wgt_tensor_numel(y);
    CHECK(wgt_tensor_ndim(y) == ref->l.ndim && !memcmp(wgt_tensor_shape(y), ref->l.shape, sizeof(int64_t) * ref->l.ndim),
          "%s: shape differs", what);
    CHECK(wgt_tensor_dtype(y) == ref->l.dtype, "%s: dtype %s, expected %s", what, wgt_dtype_name(wgt_tensor_dtype(y)),
          wgt_dtype_name(ref->l.dtype));
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

static double rtol_of(wgt_dtype dt) { return dt == WGT_F32 ? 1e-4 : dt == WGT_F16 ? 2e-3 : dt == WGT_BF16 ? 1.6e-2 : 0; }
static double atol_of(wgt_dtype dt) { return dt == WGT_F32 ? 1e-4 : dt == WGT_F16 ? 2e-3 : dt == WGT_BF16 ? 2e-2 : 0; }

static wgt_cpu_tensor ref_like(const wgt_tensor *y, void **buf) { return test_ref_like(y, buf); }

static void compare_dt(const char *what, const wgt_tensor *y, const wgt_cpu_tensor *ref, int64_t K)
{
    compare(what, y, ref, atol_of(ref->l.dtype), rtol_of(ref->l.dtype));
}

static void check_matmul(const char *what, const pair *a, const pair *b) { test_check_matmul(what, a, b, compare_dt); }

static void check_linear(const char *what, const pair *x, const pair *w, const pair *bias)
{
    wgt_tensor *y = NULL;
    wgt_status st = wgt_linear(x->d, w->d, bias ? bias->d : NULL, &y);
    CHECK(st == WGT_OK, "%s: %s", what, wgt_errmsg());
    if (st) return;
    void *buf;
    wgt_cpu_tensor r = ref_like(y, &buf);
    MUST(wgt_cpu_linear(&x->h, &w->h, bias ? &bias->h : NULL, &r));
    compare(what, y, &r, atol_of(r.l.dtype), rtol_of(r.l.dtype));
    free(buf);
    wgt_tensor_free(y);
}

static void matmul_cases(void)
{
    const wgt_dtype dts[] = {WGT_F32, WGT_F16, WGT_BF16};
    for (int i = 0; i < 3; i++) {
        wgt_dtype dt = dts[i];
        char what[128];
        /* plain, odd sizes (64-tiles, partial) */
        pair a = make(dt, 2, (int64_t[]){37, 53}), b = make(dt, 2, (int64_t[]){53, 29});
        snprintf(what, sizeof what, "matmul %s [37,53]x[53,29]", wgt_dtype_name(dt));
        check_matmul(what, &a, &b);
        /* transposed operands: a^T^T via a [53, 37] transposed, b likewise */
        pair at0 = make(dt, 2, (int64_t[]){53, 37}), bt0 = make(dt, 2, (int64_t[]){29, 53});
        pair at = transposed(&at0, 0, 1), bt = transposed(&bt0, 0, 1);
        snprintf(what, sizeof what, "matmul %s transposed a and b", wgt_dtype_name(dt));
        check_matmul(what, &at, &bt);
        wgt_tensor_free(at.d);
        wgt_tensor_free(bt.d);
        drop(&at0), drop(&bt0), drop(&a), drop(&b);
        /* batch broadcast [3,1,5,24] x [4,24,7] */
        pair c = make(dt, 4, (int64_t[]){3, 1, 5, 24}), d = make(dt, 3, (int64_t[]){4, 24, 7});
        snprintf(what, sizeof what, "matmul %s batch broadcast", wgt_dtype_name(dt));
        check_matmul(what, &c, &d);
        drop(&c), drop(&d);
    }
    /* 1-D operands, f32 */
    pair v = make(WGT_F32, 1, (int64_t[]){24}), m = make(WGT_F32, 2, (int64_t[]){24, 9}), m2 = make(WGT_F32, 2, (int64_t[]){5, 24});
    pair v2 = make(WGT_F32, 1, (int64_t[]){24});
    check_matmul("matmul [24]x[24,9]", &v, &m);
    check_matmul("matmul [5,24]x[24]", &m2, &v);
    check_matmul("matmul [24]x[24]", &v, &v2);
    drop(&v), drop(&m), drop(&m2), drop(&v2);
    /* batched GEMV: [3, 2, 16] x [3, 10, 16]^T (weights contiguous along k, one per batch) */
    pair ga = make(WGT_F32, 3, (int64_t[]){3, 2, 16}), gw = make(WGT_F16, 3, (int64_t[]){3, 10, 16});
    pair gt = transposed(&gw, 1, 2);
    check_matmul("matmul batched GEMV f32 x f16^T", &ga, &gt);
    wgt_tensor_free(gt.d);
    drop(&ga), drop(&gw);
    /* 128-tiles: M, N >= 512 */
    pair big_a = make(WGT_F32, 2, (int64_t[]){520, 40}), big_b = make(WGT_F32, 2, (int64_t[]){40, 515});
    check_matmul("matmul f32 [520,40]x[40,515] (128 tiles)", &big_a, &big_b);
    drop(&big_a), drop(&big_b);
    /* mixed: f32 x f16 and bf16 x f32 */
    pair ma = make(WGT_F32, 2, (int64_t[]){6, 33}), mb = make(WGT_F16, 2, (int64_t[]){33, 11});
    check_matmul("matmul f32 x f16", &ma, &mb);
    pair mc = make(WGT_BF16, 2, (int64_t[]){6, 33});
    check_matmul("matmul bf16 x f16 (-> f32)", &mc, &mb);
    drop(&ma), drop(&mb), drop(&mc);
    /* empty: K = 0 gives zeros; M = 0 gives an empty result; one element */
    pair e1 = make(WGT_F32, 2, (int64_t[]){3, 0}), e2 = make(WGT_F32, 2, (int64_t[]){0, 4});
    check_matmul("matmul K = 0", &e1, &e2);
    pair e3 = make(WGT_F32, 2, (int64_t[]){0, 5}), e4 = make(WGT_F32, 2, (int64_t[]){5, 4});
    check_matmul("matmul M = 0", &e3, &e4);
    pair o1 = make(WGT_F32, 2, (int64_t[]){1, 1}), o2 = make(WGT_F32, 2, (int64_t[]){1, 1});
    check_matmul("matmul 1x1", &o1, &o2);
    drop(&e1), drop(&e2), drop(&e3), drop(&e4), drop(&o1), drop(&o2);
    /* NaN and inf propagate (tiled and GEMV paths) */
    pair na = make(WGT_F32, 2, (int64_t[]){4, 16}), nb = make(WGT_F32, 2, (int64_t[]){16, 6});
    float *fa = na.data;
    fa[3] = NAN, fa[16 + 5] = INFINITY;
    wgt_tensor_free(na.d);
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 2, na.h.l.shape, na.data, &na.d));
    check_matmul("matmul NaN/inf (tiled)", &na, &nb);
    pair nw = make(WGT_F32, 2, (int64_t[]){6, 16});
    check_linear("linear NaN/inf (GEMV)", &na, &nw, NULL);
    drop(&na), drop(&nb), drop(&nw);
}

/* Integer products: i32 / u32 results on the GPU (WGT_STRICT=1 turns a fallback into a failed
 * check), exactly equal to the reference's int64 sums cut to 32 bits; scaled ones (addmm with
 * beta 2) on the reference. */
static void int_cases(void)
{
    setenv("WGT_STRICT", "1", 1);
    pair a = make_wide(WGT_I32, 2, (int64_t[]){37, 53}), b = make_wide(WGT_I32, 2, (int64_t[]){53, 29});
    check_matmul("matmul i32 [37,53]x[53,29], wrapping", &a, &b);
    pair at0 = make_wide(WGT_I32, 2, (int64_t[]){53, 37}), bt0 = make_wide(WGT_I32, 2, (int64_t[]){29, 53});
    pair at = transposed(&at0, 0, 1), bt = transposed(&bt0, 0, 1);
    check_matmul("matmul i32 transposed a and b", &at, &bt);
    wgt_tensor_free(at.d), wgt_tensor_free(bt.d);
    pair c = make_wide(WGT_I32, 4, (int64_t[]){3, 1, 5, 24}), d = make_wide(WGT_I32, 3, (int64_t[]){4, 24, 7});
    check_matmul("matmul i32 batch broadcast", &c, &d);
    pair i8 = make_wide(WGT_I8, 2, (int64_t[]){6, 53}), u8 = make_wide(WGT_U8, 2, (int64_t[]){53, 5});
    check_matmul("matmul i8 x i32 (-> i32)", &i8, &b);
    check_matmul("matmul i32 x u8 (-> i32)", &a, &u8);
    pair ua = make_wide(WGT_U32, 2, (int64_t[]){9, 40}), ub = make_wide(WGT_U32, 2, (int64_t[]){40, 11});
    check_matmul("matmul u32", &ua, &ub);
    pair v = make_wide(WGT_I32, 1, (int64_t[]){53});
    check_matmul("matmul i32 [37,53]x[53]", &a, &v);
    pair e1 = make(WGT_I32, 2, (int64_t[]){3, 0}), e2 = make(WGT_I32, 2, (int64_t[]){0, 4});
    check_matmul("matmul i32 K = 0", &e1, &e2);
    /* linear with a bias, outer, addmm (beta 1 on the GPU, beta 2 on the reference) */
    pair w = make_wide(WGT_I32, 2, (int64_t[]){29, 53}), bias = make_wide(WGT_I32, 1, (int64_t[]){29});
    check_linear("linear i32 + bias", &a, &w, &bias);
    wgt_tensor *y;
    void *buf;
    wgt_cpu_tensor r;
    MUST(wgt_outer(v.d, bias.d, &y));
    r = ref_like(y, &buf);
    MUST(wgt_cpu_outer(&v.h, &bias.h, &r));
    compare("outer i32", y, &r, 0, 0);
    free(buf), wgt_tensor_free(y);
    MUST(wgt_addmm(bias.d, a.d, b.d, 1.0, 1.0, &y));
    r = ref_like(y, &buf);
    MUST(wgt_cpu_addmm(&bias.h, &a.h, &b.h, 1.0, 1.0, &r));
    compare("addmm i32 beta 1", y, &r, 0, 0);
    free(buf), wgt_tensor_free(y);
    unsetenv("WGT_STRICT");
    pair s = make(WGT_I32, 2, (int64_t[]){5, 7}), m1 = make(WGT_I32, 2, (int64_t[]){5, 4}), m2 = make(WGT_I32, 2, (int64_t[]){4, 7});
    MUST(wgt_addmm(s.d, m1.d, m2.d, 2.0, 1.0, &y));
    r = ref_like(y, &buf);
    MUST(wgt_cpu_addmm(&s.h, &m1.h, &m2.h, 2.0, 1.0, &r));
    compare("addmm i32 beta 2 (reference)", y, &r, 0, 0);
    free(buf), wgt_tensor_free(y);
    drop(&s), drop(&m1), drop(&m2), drop(&w), drop(&bias), drop(&e1), drop(&e2), drop(&v), drop(&ua), drop(&ub);
    drop(&i8), drop(&u8), drop(&c), drop(&d), drop(&at0), drop(&bt0), drop(&a), drop(&b);
}

static void linear_cases(void)
{
    const wgt_dtype wdts[] = {WGT_F32, WGT_F16, WGT_BF16};
    for (int i = 0; i < 3; i++) {
        wgt_dtype wd = wdts[i];
        char what[128];
        /* decode: x [1, 72] f32 x w [45, 72] (GEMV), with and without bias */
        pair x = make(WGT_F32, 2, (int64_t[]){1, 72}), w = make(wd, 2, (int64_t[]){45, 72}), bias = make(WGT_F32, 1, (int64_t[]){45});
        snprintf(what, sizeof what, "linear GEMV f32 x %s", wgt_dtype_name(wd));
        check_linear(what, &x, &w, NULL);
        snprintf(what, sizeof what, "linear GEMV f32 x %s + bias", wgt_dtype_name(wd));
        check_linear(what, &x, &w, &bias);
        /* small M (3 rows, GEMV) and 1-D x */
        pair x3 = make(WGT_F32, 3, (int64_t[]){3, 1, 72});
        snprintf(what, sizeof what, "linear GEMV M=3 f32 x %s", wgt_dtype_name(wd));
        check_linear(what, &x3, &w, &bias);
        pair x1 = make(WGT_F32, 1, (int64_t[]){72});
        snprintf(what, sizeof what, "linear 1-D x, %s", wgt_dtype_name(wd));
        check_linear(what, &x1, &w, NULL);
        /* prefill: x [2, 9, 72] (tiled, batch folded into rows) */
        pair xp = make(WGT_F32, 3, (int64_t[]){2, 9, 72});
        snprintf(what, sizeof what, "linear tiled f32 x %s + bias", wgt_dtype_name(wd));
        check_linear(what, &xp, &w, &bias);
        /* same-dtype activations (f16 x f16 gives f16) */
        pair xs = make(wd, 2, (int64_t[]){2, 72});
        snprintf(what, sizeof what, "linear %s x %s", wgt_dtype_name(wd), wgt_dtype_name(wd));
        check_linear(what, &xs, &w, NULL);
        drop(&x), drop(&w), drop(&bias), drop(&x3), drop(&x1), drop(&xp), drop(&xs);
    }
    /* I not a multiple of 8: the tiled path serves M = 1 */
    pair x = make(WGT_F32, 2, (int64_t[]){1, 61}), w = make(WGT_F16, 2, (int64_t[]){13, 61});
    check_linear("linear M=1, I=61 (tiled)", &x, &w, NULL);
    drop(&x), drop(&w);
    /* a weight narrowed along its rows and x a strided column view */
    pair wbig = make(WGT_F16, 2, (int64_t[]){50, 64}), xbig = make(WGT_F32, 2, (int64_t[]){64, 4});
    pair wn = wbig, xt = transposed(&xbig, 0, 1);
    MUST(wgt_tensor_narrow(wbig.d, 0, 8, 30, &wn.d));
    wn.h.l.shape[0] = 30, wn.h.l.offset = 8 * 64;
    check_linear("linear narrowed weight, transposed x", &xt, &wn, NULL);
    wgt_tensor_free(wn.d), wgt_tensor_free(xt.d);
    drop(&wbig), drop(&xbig);
    /* a long output and input: 8 rows a workgroup, the four-load loop and its tail */
    pair xl = make(WGT_F32, 2, (int64_t[]){2, 1040}), wl = make(WGT_F16, 2, (int64_t[]){2100, 1040});
    check_linear("linear GEMV M=2, N=2100, I=1040", &xl, &wl, NULL);
    drop(&xl), drop(&wl);
}

static void addmm_cases(void)
{
    pair self = make(WGT_F32, 1, (int64_t[]){11}), m1 = make(WGT_F32, 2, (int64_t[]){7, 19}), m2 = make(WGT_F32, 2, (int64_t[]){19, 11});
    wgt_tensor *y;
    void *buf;
    wgt_cpu_tensor r;
    MUST(wgt_addmm(self.d, m1.d, m2.d, 0.5, 2.0, &y));
    r = ref_like(y, &buf);
    MUST(wgt_cpu_addmm(&self.h, &m1.h, &m2.h, 0.5, 2.0, &r));
    compare("addmm beta 0.5 alpha 2, self broadcast", y, &r, 1e-4, 1e-4);
    free(buf), wgt_tensor_free(y);
    /* beta 0: self (NaN here) is not read */
    float *fs = self.data;
    for (int i = 0; i < 11; i++) fs[i] = NAN;
    wgt_tensor_free(self.d);
    MUST(wgt_tensor_from_host(ctx, WGT_F32, 1, self.h.l.shape, self.data, &self.d));
    MUST(wgt_addmm(self.d, m1.d, m2.d, 0.0, 1.0, &y));
    r = ref_like(y, &buf);
    MUST(wgt_cpu_addmm(&self.h, &m1.h, &m2.h, 0.0, 1.0, &r));
    compare("addmm beta 0 ignores NaN self", y, &r, 1e-4, 1e-4);
    free(buf), wgt_tensor_free(y);
    drop(&self), drop(&m1), drop(&m2);

    pair bs = make(WGT_F16, 3, (int64_t[]){3, 5, 6}), b1 = make(WGT_F16, 3, (int64_t[]){3, 5, 8}), b2 = make(WGT_F16, 3, (int64_t[]){3, 8, 6});
    MUST(wgt_baddbmm(bs.d, b1.d, b2.d, 1.0, -1.0, &y));
    r = ref_like(y, &buf);
    MUST(wgt_cpu_baddbmm(&bs.h, &b1.h, &b2.h, 1.0, -1.0, &r));
    compare("baddbmm f16", y, &r, 2e-3, 2e-3);
    free(buf), wgt_tensor_free(y);
    drop(&bs), drop(&b1), drop(&b2);

    pair oa = make(WGT_F32, 1, (int64_t[]){9}), ob = make(WGT_BF16, 1, (int64_t[]){13});
    MUST(wgt_outer(oa.d, ob.d, &y));
    r = ref_like(y, &buf);
    MUST(wgt_cpu_outer(&oa.h, &ob.h, &r));
    compare("outer f32 x bf16", y, &r, 1e-6, 1e-6);
    free(buf), wgt_tensor_free(y);
    drop(&oa), drop(&ob);

    /* shape errors are statuses */
    pair s1 = make(WGT_F32, 2, (int64_t[]){3, 4}), s2 = make(WGT_F32, 2, (int64_t[]){5, 6});
    y = NULL;
    CHECK(wgt_matmul(s1.d, s2.d, &y) == WGT_ERR_SHAPE && !y, "matmul of [3,4] and [5,6] must fail with a shape error");
    CHECK(wgt_linear(s1.d, s2.d, NULL, &y) == WGT_ERR_SHAPE, "linear shape mismatch must fail");
    drop(&s1), drop(&s2);
}

/* matmul_regs.wgsl (WGT_MATMUL_TILE) with 16-byte loads (operands contiguous in k or in m / n with
 * whole words: sizes that are multiples of 8), its tile by shape and every tile it lists: plain (A
 * along k, B along n), A^T (A along m), a linear layer (B along k), f16 / bf16 weights (8 elements a
 * word), a batch, partial tiles, and the k split (a small output over a long k, both layouts of a
 * weight's gradient); tiles[0 .. nt) the tiles to run. */
static void vec_cases(const char *const *tiles, size_t nt)
{
    pair a = make(WGT_F32, 2, (int64_t[]){72, 40}), b = make(WGT_F32, 2, (int64_t[]){40, 136});
    pair at0 = make(WGT_F32, 2, (int64_t[]){40, 72}), at = transposed(&at0, 0, 1);
    pair w = make(WGT_F32, 2, (int64_t[]){136, 40}), wh = make(WGT_F16, 2, (int64_t[]){136, 40});
    pair bb = make(WGT_BF16, 2, (int64_t[]){40, 136});
    pair ba = make(WGT_F32, 3, (int64_t[]){3, 24, 16}), bbt = make(WGT_F32, 3, (int64_t[]){3, 16, 32});
    pair ka = make(WGT_F32, 2, (int64_t[]){64, 2048}), kb = make(WGT_F32, 2, (int64_t[]){2048, 24});
    pair kt0 = make(WGT_F32, 2, (int64_t[]){2048, 64}), kt = transposed(&kt0, 0, 1);
    for (size_t i = 0; i < nt; i++) {
        char what[160];
        setenv("WGT_MATMUL_TILE", tiles[i], 1);
        const char *t = tiles[i];
        snprintf(what, sizeof what, "words, tile %s: [72,40]x[40,136]", t);
        check_matmul(what, &a, &b);
        snprintf(what, sizeof what, "words, tile %s: [40,72]^T x [40,136]", t);
        check_matmul(what, &at, &b);
        snprintf(what, sizeof what, "words, tile %s: linear f32", t);
        check_linear(what, &a, &w, NULL);
        snprintf(what, sizeof what, "words, tile %s: linear f16 weights", t);
        check_linear(what, &a, &wh, NULL);
        snprintf(what, sizeof what, "words, tile %s: [72,40]x[40,136] bf16", t);
        check_matmul(what, &a, &bb);
        snprintf(what, sizeof what, "words, tile %s: batched [3,24,16]x[3,16,32]", t);
        check_matmul(what, &ba, &bbt);
        snprintf(what, sizeof what, "words, tile %s: k split [64,2048]x[2048,24]", t);
        check_matmul(what, &ka, &kb);
        snprintf(what, sizeof what, "words, tile %s: k split [2048,64]^T x [2048,24]", t);
        check_matmul(what, &kt, &kb);
    }
    unsetenv("WGT_MATMUL_TILE");
    wgt_tensor_free(at.d), wgt_tensor_free(kt.d);
    drop(&a), drop(&b), drop(&at0), drop(&w), drop(&wh), drop(&bb), drop(&ba), drop(&bbt), drop(&ka), drop(&kb);
    drop(&kt0);
}

/* every tile tools/h200_sgemm_ab.sh measures (those past 16 KiB of workgroup memory take auto's on
 * OpenGL); with the padded tile rows (WGT_MATMUL_TILE_PAD=1) the ones regs_choose picks */
static const char *all_tiles[] = {"auto", "128x128x8:8x8", "128x128x16:8x8", "128x64x8:8x4", "128x64x16:8x4",
                                  "64x64x16:4x4", "64x64x8:8x4", "32x32x8:4x4"};
static const char *auto_tiles[] = {"auto", "128x64x8:8x4", "64x64x8:8x4", "64x64x16:4x4"};

int main(void)
{
    test_rng = 0x243F6A8885A308D3ull;
    MUST(wgt_context_create(NULL, &ctx));
    matmul_cases();
    linear_cases();
    addmm_cases();
    int_cases();
    /* the forced tiles through matmul_regs.wgsl's `main` (the array of sums: WGT_MATMUL_TILE_UNROLL=0);
     * test_gpu_matmul_unroll runs them through `unrolled`, the default */
    setenv("WGT_MATMUL_TILE_UNROLL", "0", 1);
    vec_cases(all_tiles, sizeof all_tiles / sizeof all_tiles[0]);
    unsetenv("WGT_MATMUL_TILE_UNROLL");
    /* the general cases (odd sizes: one element a load; NaN, empty, batches) through matmul_regs.wgsl */
    setenv("WGT_MATMUL_TILE", "auto", 1);
    matmul_cases();
    linear_cases();
    addmm_cases();
    unsetenv("WGT_MATMUL_TILE");
    /* the opt-in tile rules: padded k rows in workgroup memory, 64 x 64 tiles for A read along m */
    setenv("WGT_MATMUL_TILE_PAD", "1", 1);
    setenv("WGT_MATMUL_TILE_TN", "1", 1);
    vec_cases(auto_tiles, sizeof auto_tiles / sizeof auto_tiles[0]);
    setenv("WGT_MATMUL_TILE", "auto", 1);
    matmul_cases();
    unsetenv("WGT_MATMUL_TILE");
    unsetenv("WGT_MATMUL_TILE_PAD");
    unsetenv("WGT_MATMUL_TILE_TN");
    uint32_t wg = op_workgroup_size(ctx);
    wgt_context_free(ctx);
    /* the spec's default limits: where they lower the workgroup size, the kernels' variants for it */
    wgt_context_options o = {0};
    o.default_limits = 1;
    MUST(wgt_context_create(&o, &ctx));
    if (op_workgroup_size(ctx) < wg) {
        printf("default limits: %u invocations per workgroup\n", op_workgroup_size(ctx));
        matmul_cases();
        int_cases();
        vec_cases(all_tiles, sizeof all_tiles / sizeof all_tiles[0]);
        setenv("WGT_MATMUL_TILE", "auto", 1);
        matmul_cases();
        unsetenv("WGT_MATMUL_TILE");
        pair x = make(WGT_F32, 2, (int64_t[]){3, 72}), w = make(WGT_BF16, 2, (int64_t[]){45, 72});
        check_linear("linear GEMV, default limits", &x, &w, NULL);
        drop(&x), drop(&w);
    } else
        printf("default limits: the same %u invocations per workgroup, no second pass\n", wg);
    wgt_context_free(ctx);
    return test_finish("test_gpu_matmul");
}
