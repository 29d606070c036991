/* Random numbers on the GPU (src/ops/random.c, src/kernels/random.wgsl):
 *  1. Philox4x32-10 against the published known-answer vectors (Random123's kat_vectors, the
 *     "philox4x32 10" lines), in the CPU reference and in the kernel at the same counters.
 *  2. Every op against the CPU reference on the same seed: the integer stream, bernoulli, randint,
 *     randperm, multinomial and dropout bit for bit; uniform within one rounding of the output
 *     (fma in f32 on both sides; the 16-bit storers round once more); normal within the f32
 *     transcendental error bound declared below. Contiguous, strided and empty inputs, odd sizes,
 *     f32/f16/bf16 and integer outputs, dispatches split over storage bindings (limit lowered).
 *  3. Statistics of the GPU output: moments of 1M uniforms and normals within 5 standard errors,
 *     chi-square of uniform bins, normal quantile bins, randint values, multinomial categories
 *     (first and second draws without replacement), randperm positions; bernoulli and dropout
 *     rates, dropout's scaling.
 *  4. The generator: successive calls differ, a reseed or an offset set back replays.
 *  5. Bad arguments return a status whose message names the op.
 *  6. The kernels at 128 invocations per workgroup (compatibility mode's default, which
 *     op_workgroup_size() follows) give the same bits as at 256 on every op. */
#include <math.h>
#include <string.h>

#include "cpu/random.h"
#include "ops/ops.h"
#include "ops/random.h"
#include "support/check.h"

static wgt_context *gpu, *cpu;

/* A tensor's elements as doubles (integers exactly). */
static double *values(const wgt_tensor *t)
{
    int64_t n = wgt_tensor_numel(t);
    size_t sz = wgt_dtype_size(wgt_tensor_dtype(t));
    void *raw = malloc(n * sz + 8);
    double *v = malloc((n ? n : 1) * sizeof *v);
    MUST(wgt_tensor_to_host(t, raw, n * sz));
    wgt_cpu_tensor h = wgt_cpu_tensor_make(raw, wgt_tensor_dtype(t), 1, &n);
    for (int64_t i = 0; i < n; i++)
        v[i] = op_is_float(h.l.dtype) ? wgt_cpu_load_f(&h, i)
               : h.l.dtype == WGT_U32 ? (double)((uint32_t *)raw)[i] : (double)wgt_cpu_load_i(&h, i);
    free(raw);
    return v;
}

/* One unit of rounding of dtype at v. */
static double ulp(wgt_dtype dt, double v)
{
    int bits = dt == WGT_F16 ? 10 : dt == WGT_BF16 ? 7 : 23;
    double a = fabs(v);
    if (a < 6.2e-5 && dt == WGT_F16) return ldexp(1, -24);
    int e;
    frexp(a, &e);
    return a == 0 ? ldexp(1, -149) : ldexp(1, e - 1 - bits);
}

static int64_t compared;

/* g (GPU) against r (reference): |g - r| <= ulps units of rounding + atol + rtol |r|. */
static void compare(const char *what, const wgt_tensor *g, const wgt_tensor *r, double ulps, double atol, double rtol)
{
    CHECK(wgt_tensor_numel(g) == wgt_tensor_numel(r), "%s: sizes differ", what);
    CHECK(wgt_tensor_dtype(g) == wgt_tensor_dtype(r), "%s: dtypes differ", what);
    int64_t n = wgt_tensor_numel(g);
    double *a = values(g), *b = values(r), worst = 0;
    int bad = 0;
    int64_t exact = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]), tol = ulps * ulp(wgt_tensor_dtype(g), b[i]) + atol + rtol * fabs(b[i]);
        exact += a[i] == b[i] || (isnan(a[i]) && isnan(b[i]));
        if (d > worst && a[i] != b[i]) worst = d;
        if (!(d <= tol) && a[i] != b[i] && !(isnan(a[i]) && isnan(b[i])) && bad++ < 3)
            CHECK(0, "%s: element %lld: gpu %.9g, reference %.9g", what, (long long)i, a[i], b[i]);
    }
    if (getenv("VERBOSE")) printf("  %-44s %8lld elements, %8lld exact, worst %.3g\n", what, (long long)n, (long long)exact, worst);
    compared += n;
    free(a);
    free(b);
}

/* ---- 1. known answers ---------------------------------------------------------------------- */

static void test_kat(void)
{
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e, 0xa20bc7c6,
         0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb, 0x5001e420,
         0x24126ea1},
    };
    for (int v = 0; v < 3; v++) {
        uint32_t c[4], g[4];
        wgt_philox4x32_10(kat[v], kat[v] + 4, c);
        MUST(wgt_random_block(gpu, kat[v], kat[v] + 4, g));
        for (int k = 0; k < 4; k++) {
            CHECK(c[k] == kat[v][6 + k], "kat %d word %d: reference %08x, published %08x", v, k, c[k], kat[v][6 + k]);
            CHECK(g[k] == kat[v][6 + k], "kat %d word %d: gpu %08x, published %08x", v, k, g[k], kat[v][6 + k]);
        }
    }
    /* the stream: word j of a seed is Philox at block j / 4 */
    wgt_generator *gen;
    MUST(wgt_generator_create(0x0123456789abcdefull, &gen));
    wgt_generator_set_offset(gen, 4ull * 0xfffffffeull); /* the block counter carries into its high word */
    int64_t n = 1001;
    wgt_tensor *t;
    MUST(wgt_random_bits(gpu, gen, 1, &n, &t));
    double *v = values(t);
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        bad += v[i] != (double)wgt_philox_word(0x0123456789abcdefull, 4ull * 0xfffffffeull + (uint64_t)i);
    CHECK(bad == 0, "random_bits: %d of %lld words differ from the reference stream", bad, (long long)n);
    CHECK(wgt_generator_offset(gen) == 4ull * 0xfffffffeull + 1004, "offset after 1001 words: %llu",
          (unsigned long long)wgt_generator_offset(gen));
    compared += n;
    free(v);
    wgt_tensor_free(t);
    wgt_generator_free(gen);
}

/* ---- 2. against the reference -------------------------------------------------------------- */

/* out2: a second output (dropout's mask), or left NULL */
typedef wgt_status (*make_fn)(wgt_context *ctx, wgt_generator *g, const void *arg, wgt_tensor **out, wgt_tensor **out2);

/* Run make on both contexts with the same seed and compare. */
static void both(const char *what, make_fn make, const void *arg, double ulps, double atol, double rtol)
{
    wgt_generator *gg, *gc;
    MUST(wgt_generator_create(77, &gg));
    MUST(wgt_generator_create(77, &gc));
    wgt_generator_set_offset(gg, 40), wgt_generator_set_offset(gc, 40);
    wgt_tensor *a = NULL, *b = NULL, *a2 = NULL, *b2 = NULL;
    wgt_status sa = make(gpu, gg, arg, &a, &a2), sb = make(cpu, gc, arg, &b, &b2);
    CHECK(sa == WGT_OK && sb == WGT_OK, "%s: %s / %s: %s", what, wgt_status_str(sa), wgt_status_str(sb), wgt_errmsg());
    if (a && b) compare(what, a, b, ulps, atol, rtol);
    if (a2 && b2) compare(what, a2, b2, 0, 0, 0);
    wgt_tensor_free(a2), wgt_tensor_free(b2);
    CHECK(wgt_generator_offset(gg) == wgt_generator_offset(gc), "%s: offsets differ", what);
    wgt_tensor_free(a), wgt_tensor_free(b);
    wgt_generator_free(gg), wgt_generator_free(gc);
}

typedef struct shaped {
    wgt_dtype dt;
    int ndim;
    int64_t shape[4];
    double a, b;
} shaped;

static wgt_status mk_uniform(wgt_context *c, wgt_generator *g, const void *arg, wgt_tensor **o, wgt_tensor **o2)
{
    (void)o2;
    const shaped *s = arg;
    return wgt_rand_uniform(c, g, s->dt, s->ndim, s->shape, s->a, s->b, o);
}
static wgt_status mk_normal(wgt_context *c, wgt_generator *g, const void *arg, wgt_tensor **o, wgt_tensor **o2)
{
    (void)o2;
    const shaped *s = arg;
    return wgt_rand_normal(c, g, s->dt, s->ndim, s->shape, s->a, s->b, o);
}
static wgt_status mk_bern(wgt_context *c, wgt_generator *g, const void *arg, wgt_tensor **o, wgt_tensor **o2)
{
    (void)o2;
    const shaped *s = arg;
    return wgt_bernoulli_scalar(c, g, s->dt, s->ndim, s->shape, s->a, o);
}
static wgt_status mk_randint(wgt_context *c, wgt_generator *g, const void *arg, wgt_tensor **o, wgt_tensor **o2)
{
    (void)o2;
    const shaped *s = arg;
    return wgt_randint(c, g, (int64_t)s->a, (int64_t)s->b, s->dt, s->ndim, s->shape, o);
}
static wgt_status mk_randperm(wgt_context *c, wgt_generator *g, const void *arg, wgt_tensor **o, wgt_tensor **o2)
{
    (void)o2;
    const shaped *s = arg;
    return wgt_randperm(c, g, s->shape[0], s->dt, o);
}

/* Inputs: the same host data on both contexts, optionally transposed. */
typedef struct input {
    wgt_dtype dt;
    int64_t rows, cols;
    int transpose;
    int kind; /* 0: probabilities in [0, 1] with NaN and out-of-range, 1: values with NaN/inf, 2: weights */
    double a;
    int64_t samples;
    int flag;
} input;

static wgt_tensor *make_input(wgt_context *c, const input *in)
{
    int64_t n = in->rows * in->cols, shape[2] = {in->transpose ? in->cols : in->rows, in->transpose ? in->rows : in->cols};
    void *d = calloc(n ? n : 1, 8);
    wgt_cpu_tensor h = wgt_cpu_tensor_make(d, in->dt, 1, &n);
    uint64_t s = 99;
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(s >> 11) / 9007199254740992.0;
        double v = in->kind == 0 ? u * 1.2 - 0.1 : in->kind == 1 ? u * 8 - 4 : (i % 7 == 3 ? 0 : u);
        wgt_cpu_store_f(&h, i, v);
    }
    if (in->kind == 0 && n > 5) wgt_cpu_store_f(&h, 5, NAN);
    if (in->kind == 1 && n > 9) wgt_cpu_store_f(&h, 5, NAN), wgt_cpu_store_f(&h, 9, INFINITY);
    wgt_tensor *t, *v;
    MUST(wgt_tensor_from_host(c, in->dt, 2, shape, d, &t));
    free(d);
    if (!in->transpose) return t;
    MUST(wgt_tensor_transpose(t, 0, 1, &v));
    wgt_tensor_free(t);
    return v;
}

static wgt_status mk_bern_t(wgt_context *c, wgt_generator *g, const void *arg, wgt_tensor **o, wgt_tensor **o2)
{
    (void)o2;
    wgt_tensor *p = make_input(c, arg);
    wgt_status st = wgt_bernoulli(g, p, o);
    wgt_tensor_free(p);
    return st;
}
static wgt_status mk_dropout(wgt_context *c, wgt_generator *g, const void *arg, wgt_tensor **o, wgt_tensor **o2)
{
    const input *in = arg;
    wgt_tensor *x = make_input(c, arg);
    wgt_status st = wgt_dropout(g, x, in->a, 1, o, in->flag ? o2 : NULL);
    wgt_tensor_free(x);
    return st;
}
static wgt_status mk_multinomial(wgt_context *c, wgt_generator *g, const void *arg, wgt_tensor **o, wgt_tensor **o2)
{
    (void)o2;
    const input *in = arg;
    wgt_tensor *p = make_input(c, arg), *p1 = NULL;
    wgt_status st;
    if (in->rows == 1) { /* [K] */
        int64_t k = in->cols;
        if (!(st = wgt_tensor_reshape(p, 1, &k, &p1))) st = wgt_multinomial(g, p1, in->samples, in->flag, WGT_I64, o);
        wgt_tensor_free(p1);
    } else st = wgt_multinomial(g, p, in->samples, in->flag, WGT_I32, o);
    wgt_tensor_free(p);
    return st;
}

static void test_reference(void)
{
    static const wgt_dtype fl[3] = {WGT_F32, WGT_F16, WGT_BF16};
    char what[128];
    for (int d = 0; d < 3; d++) {
        const char *dn = wgt_dtype_name(fl[d]);
        shaped shapes[4] = {{fl[d], 2, {37, 53}, -3, 5}, {fl[d], 1, {7}, -2.5, 7}, {fl[d], 3, {4, 0, 3}, 0, 1},
                            {fl[d], 0, {0}, 2, 2.5}};
        for (int s = 0; s < 4; s++) {
            snprintf(what, sizeof what, "uniform %s shape %d", dn, s);
            /* fma(u, hi - lo, lo) in f32: the reference's fmaf rounds once, an adapter may not fuse
             * (lavapipe does not) and round twice: one unit of the output (f16/bf16: that f32 unit
             * can move the second rounding by one of theirs) */
            both(what, mk_uniform, &shapes[s], 1, 0, 0);
            shapes[s].a = 1, shapes[s].b = 2;
            snprintf(what, sizeof what, "normal %s shape %d", dn, s);
            /* f32 log/sqrt/cos/sin against double: llvmpipe's are within a few ulp; 2e-6 absolute on z
             * (r <= 5.77) covers them; plus one rounding of the output */
            both(what, mk_normal, &shapes[s], 1, 2 * 2e-6 * 6, 4e-7);
            shapes[s].a = 0.3;
            snprintf(what, sizeof what, "bernoulli(p=0.3) %s shape %d", dn, s);
            both(what, mk_bern, &shapes[s], 0, 0, 0);
        }
        input bp = {fl[d], 33, 65, 1, 0, 0, 0, 0};
        snprintf(what, sizeof what, "bernoulli(p tensor, transposed) %s", dn);
        both(what, mk_bern_t, &bp, 0, 0, 0);
        for (int m = 0; m < 2; m++) {
            input dx = {fl[d], 41, 29, 1, 1, 0.2, 0, m};
            snprintf(what, sizeof what, "dropout p=0.2 %s transposed%s", dn, m ? " with mask" : "");
            both(what, mk_dropout, &dx, 0, 0, 0);
        }
        input d1 = {fl[d], 1, 1001, 0, 1, 1.0, 0, 1};
        snprintf(what, sizeof what, "dropout p=1 %s", dn);
        both(what, mk_dropout, &d1, 0, 0, 0);
    }
    static const wgt_dtype in[6] = {WGT_I32, WGT_U32, WGT_I8, WGT_U8, WGT_I64, WGT_F32};
    for (int d = 0; d < 6; d++) {
        shaped r = {in[d], 2, {17, 31}, in[d] == WGT_U32 || in[d] == WGT_U8 ? 3 : -7, in[d] == WGT_I8 ? 100 : in[d] == WGT_U8 ? 200 : 1000};
        snprintf(what, sizeof what, "randint %s", wgt_dtype_name(in[d]));
        both(what, mk_randint, &r, 0, 0, 0);
        shaped b = {in[d], 1, {1003}, 0.5, 0};
        snprintf(what, sizeof what, "bernoulli %s", wgt_dtype_name(in[d]));
        both(what, mk_bern, &b, 0, 0, 0);
        shaped pm = {in[d], 1, {in[d] == WGT_I8 ? 100 : in[d] == WGT_U8 ? 256 : 4097}, 0, 0};
        snprintf(what, sizeof what, "randperm %s", wgt_dtype_name(in[d]));
        both(what, mk_randperm, &pm, 0, 0, 0);
    }
    shaped full = {WGT_I32, 1, {5}, -2147483648.0, 2147483648.0}; /* range 2^32: the raw words */
    both("randint full 32-bit range", mk_randint, &full, 0, 0, 0);
    shaped b1 = {WGT_BOOL, 2, {3, 5}, 1.0, 0};
    both("bernoulli p=1 bool", mk_bern, &b1, 0, 0, 0);
    for (int64_t n = 0; n <= 17; n++) {
        shaped pm = {WGT_I32, 1, {n}, 0, 0};
        snprintf(what, sizeof what, "randperm n=%lld", (long long)n);
        both(what, mk_randperm, &pm, 0, 0, 0);
    }
    for (int rep = 0; rep < 2; rep++) {
        input cases[6] = {
            {WGT_F32, 1, 5, 0, 2, 0, rep ? 9 : 5, rep}, /* [K] -> i64 */
            {WGT_F16, 19, 300, 0, 2, 0, rep ? 700 : 100, rep}, /* chunks of 2, zero weights */
            {WGT_BF16, 37, 11, 1, 2, 0, 11, rep},       /* transposed, every category without replacement */
            {WGT_F32, 3, 50000, 0, 2, 0, 33, rep},      /* long rows */
            {WGT_F32, 4, 9, 0, 0, 0, 9, rep},           /* negative and NaN weights */
            {WGT_F32, 2, 300, 0, 2, 0, rep ? 5000 : 300, rep}, /* with replacement: 4 workgroups a row */
        };
        for (int c = 0; c < 6; c++) {
            snprintf(what, sizeof what, "multinomial case %d %s replacement", c, rep ? "with" : "without");
            both(what, mk_multinomial, &cases[c], 0, 0, 0);
        }
    }

    /* dispatches split over bindings of 8 KiB (1024 f32 per dispatch) */
    uint64_t saved = gpu->info.limits.max_storage_buffer_binding_size;
    gpu->info.limits.max_storage_buffer_binding_size = 8192;
    shaped big = {WGT_F32, 1, {5000}, -1, 1};
    both("uniform over 5 bindings", mk_uniform, &big, 0, 0, 0);
    shaped bigp = {WGT_I32, 1, {5000}, 0, 0};
    both("randperm over 5 bindings", mk_randperm, &bigp, 0, 0, 0);
    input bigd = {WGT_F16, 50, 100, 0, 1, 0.5, 0, 1};
    both("dropout f16 with mask over 3 bindings", mk_dropout, &bigd, 0, 0, 0);
    gpu->info.limits.max_storage_buffer_binding_size = saved;
}

/* ---- 3. statistics ------------------------------------------------------------------------- */

/* Chi-square of counts against expected counts; fails when past df + 6 sqrt(2 df) (p < 1e-5 or so)
 * or, to catch a generator that is too regular, below df - 6 sqrt(2 df). */
static void chi_square(const char *what, const double *count, const double *expect, int bins, int df)
{
    double chi = 0;
    for (int i = 0; i < bins; i++)
        if (expect[i] > 0) chi += (count[i] - expect[i]) * (count[i] - expect[i]) / expect[i];
        else CHECK(count[i] == 0, "%s: bin %d expects nothing but has %.0f", what, i, count[i]);
    double hi = df + 6 * sqrt(2.0 * df), lo = df - 6 * sqrt(2.0 * df);
    if (getenv("VERBOSE")) printf("  %-44s chi2 %.1f (df %d)\n", what, chi, df);
    CHECK(chi < hi && chi > lo, "%s: chi-square %.1f with %d degrees of freedom is outside [%.1f, %.1f]", what, chi, df,
          lo, hi);
}

static void moments(const char *what, const double *v, int64_t n, double mean, double var, double mu4)
{
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < n; i++) s += v[i];
    double m = s / n;
    for (int64_t i = 0; i < n; i++) s2 += (v[i] - m) * (v[i] - m);
    double vr = s2 / (n - 1), se_m = sqrt(var / n), se_v = sqrt((mu4 - var * var) / n);
    if (getenv("VERBOSE")) printf("  %-44s mean %.5f (%.2f se) var %.5f (%.2f se)\n", what, m, (m - mean) / se_m, vr, (vr - var) / se_v);
    CHECK(fabs(m - mean) < 5 * se_m, "%s: mean %.6f, expected %.6f (se %.2g)", what, m, mean, se_m);
    CHECK(fabs(vr - var) < 5 * se_v, "%s: variance %.6f, expected %.6f (se %.2g)", what, vr, var, se_v);
}

static void test_statistics(void)
{
    wgt_generator *g;
    MUST(wgt_generator_create(20261201, &g));
    int64_t n = 1 << 20;
    wgt_tensor *t;
    double cnt[100], exp_[100];

    /* uniform [-3, 5): mean 1, variance 64 / 12, fourth central moment 8^4 / 80 */
    MUST(wgt_rand_uniform(gpu, g, WGT_F32, 1, &n, -3, 5, &t));
    double *v = values(t);
    moments("uniform f32 [-3, 5)", v, n, 1, 64.0 / 12, 4096.0 / 80);
    memset(cnt, 0, sizeof cnt);
    int out_of_range = 0;
    for (int64_t i = 0; i < n; i++) {
        out_of_range += !(v[i] >= -3 && v[i] < 5);
        int b = (int)((v[i] + 3) / 8 * 100);
        cnt[b < 0 ? 0 : b > 99 ? 99 : b]++;
    }
    CHECK(out_of_range == 0, "uniform: %d values outside [-3, 5)", out_of_range);
    for (int b = 0; b < 100; b++) exp_[b] = n / 100.0;
    chi_square("uniform f32 100 bins", cnt, exp_, 100, 99);
    free(v), wgt_tensor_free(t);

    for (int d = 1; d < 3; d++) { /* 16-bit outputs: moments only (their rounding is far below 5 se) */
        wgt_dtype dt = d == 1 ? WGT_F16 : WGT_BF16;
        MUST(wgt_rand_uniform(gpu, g, dt, 1, &n, 0, 1, &t));
        v = values(t);
        moments(d == 1 ? "uniform f16" : "uniform bf16", v, n, 0.5, 1.0 / 12, 1.0 / 80);
        free(v), wgt_tensor_free(t);
        MUST(wgt_rand_normal(gpu, g, dt, 1, &n, 0, 1, &t));
        v = values(t);
        moments(d == 1 ? "normal f16" : "normal bf16", v, n, 0, 1, 3);
        free(v), wgt_tensor_free(t);
    }

    /* normal(2, 3): moments; 40 equiprobable bins through the normal CDF */
    MUST(wgt_rand_normal(gpu, g, WGT_F32, 1, &n, 2, 3, &t));
    v = values(t);
    moments("normal f32 (2, 3)", v, n, 2, 9, 3 * 81);
    memset(cnt, 0, sizeof cnt);
    for (int64_t i = 0; i < n; i++) {
        double z = (v[i] - 2) / 3, u = 0.5 * erfc(-z / sqrt(2.0));
        int b = (int)(u * 40);
        cnt[b < 0 ? 0 : b > 39 ? 39 : b]++;
    }
    for (int b = 0; b < 40; b++) exp_[b] = n / 40.0;
    chi_square("normal f32 40 quantile bins", cnt, exp_, 40, 39);
    /* the pairs of Box-Muller are independent: correlation of neighbours within 5 se */
    double c = 0;
    for (int64_t i = 0; i + 1 < n; i += 2) c += (v[i] - 2) * (v[i + 1] - 2) / 9;
    c /= n / 2;
    CHECK(fabs(c) < 5 / sqrt(n / 2.0), "normal: correlation of pairs %.5f", c);
    free(v), wgt_tensor_free(t);

    /* bernoulli(0.3) rate; bernoulli(p tensor) rates per p */
    MUST(wgt_bernoulli_scalar(gpu, g, WGT_U8, 1, &n, 0.3, &t));
    v = values(t);
    double ones = 0;
    for (int64_t i = 0; i < n; i++) ones += v[i];
    CHECK(fabs(ones / n - 0.3) < 5 * sqrt(0.21 / n), "bernoulli(0.3): rate %.5f", ones / n);
    free(v), wgt_tensor_free(t);
    {
        float *pv = malloc(n * sizeof *pv);
        for (int64_t i = 0; i < n; i++) pv[i] = (float)(i % 8) / 7.0f;
        wgt_tensor *p;
        MUST(wgt_tensor_from_host(gpu, WGT_F32, 1, &n, pv, &p));
        MUST(wgt_bernoulli(g, p, &t));
        v = values(t);
        double k[8] = {0};
        for (int64_t i = 0; i < n; i++) k[i % 8] += v[i];
        for (int j = 0; j < 8; j++) {
            double pj = (float)j / 7.0f, m = n / 8.0;
            CHECK(fabs(k[j] / m - pj) <= 5 * sqrt(pj * (1 - pj) / m), "bernoulli(p = %.3f): rate %.5f", pj, k[j] / m);
        }
        free(v), free(pv), wgt_tensor_free(t), wgt_tensor_free(p);
    }

    /* randint [-5, 12): chi-square over the 17 values */
    MUST(wgt_randint(gpu, g, -5, 12, WGT_I32, 1, &n, &t));
    v = values(t);
    memset(cnt, 0, sizeof cnt);
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        if (v[i] < -5 || v[i] >= 12) bad++;
        else cnt[(int)v[i] + 5]++;
    }
    CHECK(bad == 0, "randint: %d values outside [-5, 12)", bad);
    for (int b = 0; b < 17; b++) exp_[b] = n / 17.0;
    chi_square("randint [-5, 12)", cnt, exp_, 17, 16);
    free(v), wgt_tensor_free(t);

    /* dropout p = 0.25 of ones: the kept rate, kept values exactly 1 / 0.75 in f32, mask == kept */
    {
        wgt_tensor *x, *m;
        MUST(wgt_full(gpu, WGT_F32, 1, &n, 1.0, &x));
        MUST(wgt_dropout(g, x, 0.25, 1, &t, &m));
        v = values(t);
        double *mv = values(m), kept = 0;
        int wrong = 0;
        for (int64_t i = 0; i < n; i++) {
            kept += mv[i];
            wrong += mv[i] ? v[i] != (double)(1.0f / 0.75f) : v[i] != 0;
        }
        CHECK(fabs(kept / n - 0.75) < 5 * sqrt(0.1875 / n), "dropout(0.25): kept rate %.5f", kept / n);
        CHECK(wrong == 0, "dropout: %d values are neither 0 (dropped) nor 1 / (1 - p) (kept)", wrong);
        free(v), free(mv), wgt_tensor_free(t), wgt_tensor_free(m), wgt_tensor_free(x);
        /* not training: the identity, ones as mask, no numbers drawn */
        uint64_t off = wgt_generator_offset(g);
        MUST(wgt_full(gpu, WGT_F32, 1, &n, 2.5, &x));
        MUST(wgt_dropout(g, x, 0.5, 0, &t, &m));
        v = values(t), mv = values(m);
        wrong = 0;
        for (int64_t i = 0; i < n; i++) wrong += v[i] != 2.5 || mv[i] != 1;
        CHECK(wrong == 0 && wgt_generator_offset(g) == off, "dropout in eval mode changed %d values or drew numbers", wrong);
        free(v), free(mv), wgt_tensor_free(t), wgt_tensor_free(m), wgt_tensor_free(x);
    }

    /* multinomial with replacement: 8 rows of weights 1..5 and a zero, 131072 samples each */
    {
        float w[8 * 6];
        for (int r = 0; r < 8; r++)
            for (int j = 0; j < 6; j++) w[r * 6 + j] = j == 2 ? 0.0f : (float)(j + 1);
        wgt_tensor *p;
        MUST(wgt_tensor_from_host(gpu, WGT_F32, 2, (int64_t[]){8, 6}, w, &p));
        MUST(wgt_multinomial(g, p, n / 8, 1, WGT_I32, &t));
        v = values(t);
        memset(cnt, 0, sizeof cnt);
        for (int64_t i = 0; i < n; i++) cnt[(int)v[i] < 0 || v[i] > 5 ? 0 : (int)v[i]]++;
        double tot = 1 + 2 + 4 + 5 + 6;
        for (int j = 0; j < 6; j++) exp_[j] = j == 2 ? 0 : n * (j + 1) / tot;
        chi_square("multinomial with replacement", cnt, exp_, 6, 4);
        free(v), wgt_tensor_free(t);
        /* without replacement, 20000 rows of 6 weights, all 6 drawn: each row a permutation; the
         * first draw is distributed as the weights, the second as sum_i w_i w_j / (W - w_i) / W */
        int64_t R = 20000;
        float *wr = malloc(R * 6 * sizeof *wr);
        for (int64_t r = 0; r < R; r++)
            for (int j = 0; j < 6; j++) wr[r * 6 + j] = (float)(j + 1);
        wgt_tensor *pr;
        MUST(wgt_tensor_from_host(gpu, WGT_F32, 2, (int64_t[]){R, 6}, wr, &pr));
        MUST(wgt_multinomial(g, pr, 6, 0, WGT_I32, &t));
        v = values(t);
        double first[6] = {0}, second[6] = {0}, e1[6], e2[6] = {0};
        int notperm = 0;
        for (int64_t r = 0; r < R; r++) {
            int seen = 0;
            for (int s = 0; s < 6; s++) {
                int j = (int)v[r * 6 + s];
                if (j < 0 || j > 5 || (seen & (1 << j))) notperm++;
                else seen |= 1 << j;
            }
            int j0 = (int)v[r * 6], j1 = (int)v[r * 6 + 1];
            first[j0 >= 0 && j0 < 6 ? j0 : 0]++;
            second[j1 >= 0 && j1 < 6 ? j1 : 0]++;
        }
        CHECK(notperm == 0, "multinomial without replacement: %d rows repeat a category", notperm);
        for (int j = 0; j < 6; j++) e1[j] = R * (j + 1) / 21.0;
        for (int i = 0; i < 6; i++)
            for (int j = 0; j < 6; j++)
                if (i != j) e2[j] += R * (i + 1) / 21.0 * (j + 1) / (21.0 - (i + 1));
        chi_square("multinomial w/o replacement: first draw", first, e1, 6, 5);
        chi_square("multinomial w/o replacement: second draw", second, e2, 6, 5);
        free(v), free(wr), wgt_tensor_free(t), wgt_tensor_free(pr), wgt_tensor_free(p);
    }

    /* randperm: every position uniform over 3000 permutations of 10; a large one is a permutation */
    {
        double pos[100] = {0}, e[100];
        for (int k = 0; k < 3000; k++) {
            int64_t ten = 10;
            MUST(wgt_randperm(gpu, g, ten, WGT_I32, &t));
            v = values(t);
            for (int i = 0; i < 10; i++) pos[i * 10 + ((int)v[i] % 10 + 10) % 10]++;
            free(v), wgt_tensor_free(t);
        }
        for (int i = 0; i < 100; i++) e[i] = 300;
        chi_square("randperm(10) positions", pos, e, 100, 81);
        /* the Feistel path (n > 2048): position bucket x value bucket over 300 permutations of 4100 */
        double cells[100] = {0}, ec[100];
        for (int k = 0; k < 300; k++) {
            MUST(wgt_randperm(gpu, g, 4100, WGT_I32, &t));
            v = values(t);
            for (int i = 0; i < 4100; i++) cells[(i / 410) * 10 + (int)v[i] / 410]++;
            free(v), wgt_tensor_free(t);
        }
        for (int i = 0; i < 100; i++) ec[i] = 300 * 41.0;
        chi_square("randperm(4100) position x value buckets", cells, ec, 100, 81);
        int64_t big = 100003;
        MUST(wgt_randperm(gpu, g, big, WGT_I64, &t));
        v = values(t);
        char *seen = calloc(big, 1);
        int dup = 0, fixed = 0;
        for (int64_t i = 0; i < big; i++) {
            int64_t j = (int64_t)v[i];
            if (j < 0 || j >= big || seen[j]) dup++;
            else seen[j] = 1;
            fixed += j == i;
        }
        CHECK(dup == 0, "randperm(100003): %d values repeated or out of range", dup);
        CHECK(fixed < 12, "randperm(100003): %d fixed points (expect about 1)", fixed);
        free(seen), free(v), wgt_tensor_free(t);
    }
    /* the permutations themselves, on the reference (the kernel gives the same, checked above):
     * the shuffle gives all 24 of 4 and 120 of 5 equally often and half of those of 16 odd */
    for (int n = 4; n <= 5; n++) {
        int m = n == 4 ? 24 : 120, reps = 200 * m;
        double count[120] = {0}, e[120];
        int32_t p[5];
        wgt_cpu_tensor out = wgt_cpu_tensor_make(p, WGT_I32, 1, (int64_t[]){n});
        for (int r = 0; r < reps; r++) {
            MUST(wgt_cpu_randperm(3, (uint64_t)r, &out));
            int code = 0, used = 0; /* the Lehmer code of p */
            for (int i = 0; i < n; i++) {
                int smaller = 0;
                for (int j = 0; j < p[i]; j++) smaller += !(used & (1 << j));
                used |= 1 << p[i];
                code = code * (n - i) + smaller;
            }
            count[code]++;
        }
        for (int i = 0; i < m; i++) e[i] = 200;
        chi_square(n == 4 ? "randperm(4): the 24 permutations" : "randperm(5): the 120 permutations", count, e, m, m - 1);
    }
    {
        int32_t p[16];
        wgt_cpu_tensor out = wgt_cpu_tensor_make(p, WGT_I32, 1, (int64_t[]){16});
        int odd = 0, reps = 4000;
        for (int r = 0; r < reps; r++) {
            MUST(wgt_cpu_randperm(11, (uint64_t)r, &out));
            int inv = 0;
            for (int i = 0; i < 16; i++)
                for (int j = i + 1; j < 16; j++) inv += p[i] > p[j];
            odd += inv & 1;
        }
        CHECK(fabs(odd / (double)reps - 0.5) < 5 * sqrt(0.25 / reps), "randperm(16): %d of %d permutations odd", odd, reps);
    }
    wgt_generator_free(g);
}

/* ---- 4. the generator ---------------------------------------------------------------------- */

static void test_generator(void)
{
    wgt_generator *g;
    MUST(wgt_generator_create(5, &g));
    int64_t n = 10;
    wgt_tensor *a, *b, *c, *d;
    MUST(wgt_rand_uniform(gpu, g, WGT_F32, 1, &n, 0, 1, &a));
    CHECK(wgt_generator_offset(g) == 12, "offset after 10 numbers: %llu (12: whole blocks)",
          (unsigned long long)wgt_generator_offset(g));
    MUST(wgt_rand_uniform(gpu, g, WGT_F32, 1, &n, 0, 1, &b));
    wgt_generator_manual_seed(g, 5);
    MUST(wgt_rand_uniform(gpu, g, WGT_F32, 1, &n, 0, 1, &c));
    wgt_generator_set_offset(g, 12);
    MUST(wgt_rand_uniform(gpu, g, WGT_F32, 1, &n, 0, 1, &d));
    double *va = values(a), *vb = values(b), *vc = values(c), *vd = values(d);
    int same_ab = 0, same_ac = 0, same_bd = 0;
    for (int i = 0; i < 10; i++) same_ab += va[i] == vb[i], same_ac += va[i] == vc[i], same_bd += vb[i] == vd[i];
    CHECK(same_ab == 0, "successive calls share %d of 10 values", same_ab);
    CHECK(same_ac == 10, "a reseed replays only %d of 10 values", same_ac);
    CHECK(same_bd == 10, "setting the offset back replays only %d of 10 values", same_bd);
    /* another seed, another stream; randperm takes one block */
    wgt_generator_manual_seed(g, 6);
    wgt_tensor *e;
    MUST(wgt_rand_uniform(gpu, g, WGT_F32, 1, &n, 0, 1, &e));
    double *ve = values(e);
    int same_ae = 0;
    for (int i = 0; i < 10; i++) same_ae += va[i] == ve[i];
    CHECK(same_ae == 0, "seeds 5 and 6 share %d of 10 values", same_ae);
    wgt_tensor *f;
    MUST(wgt_randperm(gpu, g, 1000, WGT_I32, &f));
    wgt_tensor_free(f);
    CHECK(wgt_generator_offset(g) == 12 + 1000, "randperm(1000) took %llu words (expect 1000: one per shuffle step)",
          (unsigned long long)wgt_generator_offset(g) - 12);
    MUST(wgt_randperm(gpu, g, 5000, WGT_I32, &f));
    wgt_tensor_free(f);
    CHECK(wgt_generator_offset(g) == 12 + 1004, "randperm(5000) took %llu words (expect 4: the Feistel key)",
          (unsigned long long)wgt_generator_offset(g) - 1012);
    free(va), free(vb), free(vc), free(vd), free(ve);
    wgt_tensor_free(a), wgt_tensor_free(b), wgt_tensor_free(c), wgt_tensor_free(d), wgt_tensor_free(e);
    wgt_generator_free(g);
}

/* ---- 5. bad arguments ---------------------------------------------------------------------- */

static void expect(wgt_status st, wgt_status want, const char *name, const char *what)
{
    CHECK(st == want, "%s: got %s, want %s", what, wgt_status_str(st), wgt_status_str(want));
    CHECK(st == WGT_OK || strstr(wgt_errmsg(), name), "%s: message '%s' does not name %s", what, wgt_errmsg(), name);
}

static void test_errors(void)
{
    wgt_generator *g;
    MUST(wgt_generator_create(1, &g));
    int64_t n = 4, sh2[2] = {2, 3};
    wgt_tensor *t = NULL, *x, *xi;
    MUST(wgt_full(gpu, WGT_F32, 2, sh2, 0.5, &x));
    MUST(wgt_full(gpu, WGT_I32, 2, sh2, 1, &xi));
    expect(wgt_rand_uniform(gpu, NULL, WGT_F32, 1, &n, 0, 1, &t), WGT_ERR_INVALID_ARGUMENT, "uniform", "NULL generator");
    expect(wgt_rand_uniform(gpu, g, WGT_I32, 1, &n, 0, 1, &t), WGT_ERR_DTYPE, "uniform", "uniform i32");
    expect(wgt_rand_uniform(gpu, g, WGT_F32, 1, &n, 1, 0, &t), WGT_ERR_INVALID_ARGUMENT, "uniform", "lo > hi");
    expect(wgt_rand_uniform(gpu, g, WGT_F32, 1, &n, 0, INFINITY, &t), WGT_ERR_INVALID_ARGUMENT, "uniform", "inf");
    expect(wgt_rand_uniform(gpu, g, WGT_F32, 1, &n, -3e38, 3e38, &t), WGT_ERR_INVALID_ARGUMENT, "uniform", "hi - lo past f32");
    int64_t neg = -1;
    expect(wgt_rand_normal(gpu, g, WGT_F32, 1, &neg, 0, 1, &t), WGT_ERR_SHAPE, "normal", "negative size");
    expect(wgt_rand_normal(gpu, g, WGT_F32, 1, &n, 0, -1, &t), WGT_ERR_INVALID_ARGUMENT, "normal", "std < 0");
    expect(wgt_bernoulli_scalar(gpu, g, WGT_F32, 1, &n, 1.5, &t), WGT_ERR_INVALID_ARGUMENT, "bernoulli", "p 1.5");
    expect(wgt_bernoulli_scalar(gpu, g, WGT_F32, 1, &n, NAN, &t), WGT_ERR_INVALID_ARGUMENT, "bernoulli", "p NaN");
    expect(wgt_bernoulli(g, xi, &t), WGT_ERR_DTYPE, "bernoulli", "integer p tensor");
    expect(wgt_randint(gpu, g, 5, 5, WGT_I32, 1, &n, &t), WGT_ERR_INVALID_ARGUMENT, "randint", "empty range");
    expect(wgt_randint(gpu, g, 0, 300, WGT_U8, 1, &n, &t), WGT_ERR_INVALID_ARGUMENT, "randint", "past u8");
    expect(wgt_randint(gpu, g, -1, 3, WGT_U32, 1, &n, &t), WGT_ERR_INVALID_ARGUMENT, "randint", "negative u32");
    expect(wgt_randint(gpu, g, 0, 2, WGT_BOOL, 1, &n, &t), WGT_ERR_DTYPE, "randint", "bool");
    expect(wgt_randperm(gpu, g, -3, WGT_I32, &t), WGT_ERR_INVALID_ARGUMENT, "randperm", "n < 0");
    expect(wgt_randperm(gpu, g, 300, WGT_U8, &t), WGT_ERR_INVALID_ARGUMENT, "randperm", "300 in u8");
    expect(wgt_multinomial(g, x, 4, 0, WGT_I32, &t), WGT_ERR_INVALID_ARGUMENT, "multinomial", "4 of 3 w/o replacement");
    expect(wgt_multinomial(g, x, 4, 1, WGT_F32, &t), WGT_ERR_DTYPE, "multinomial", "f32 indices");
    expect(wgt_multinomial(g, xi, 2, 1, WGT_I32, &t), WGT_ERR_DTYPE, "multinomial", "integer probs");
    expect(wgt_multinomial(g, x, -1, 1, WGT_I32, &t), WGT_ERR_INVALID_ARGUMENT, "multinomial", "negative samples");
    expect(wgt_dropout(g, x, 1.5, 1, &t, NULL), WGT_ERR_INVALID_ARGUMENT, "dropout", "p 1.5");
    expect(wgt_dropout(g, xi, 0.5, 1, &t, NULL), WGT_ERR_DTYPE, "dropout", "integer x");
    CHECK(t == NULL, "a failed call left a tensor");
    CHECK(wgt_generator_offset(g) == 0, "failed calls advanced the offset to %llu", (unsigned long long)wgt_generator_offset(g));
    wgt_tensor_free(x), wgt_tensor_free(xi);
    wgt_generator_free(g);
}

/* ---- 6. the workgroup size ----------------------------------------------------------------- */

/* make on the GPU with the device's workgroup size, then with the limits lowered to compatibility
 * mode's defaults (128 invocations, 16 KiB of workgroup memory): the same bits. */
static void same_at_128(const char *what, make_fn make, const void *arg)
{
    wgt_tensor *t[2][2] = {{NULL, NULL}, {NULL, NULL}};
    wgt_limits saved = gpu->info.limits;
    for (int v = 0; v < 2; v++) {
        if (v) {
            gpu->info.limits.max_compute_invocations_per_workgroup = 128;
            gpu->info.limits.max_compute_workgroup_size_x = 128;
            gpu->info.limits.max_compute_workgroup_storage_size = 16384;
        }
        wgt_generator *g;
        MUST(wgt_generator_create(1234, &g));
        wgt_generator_set_offset(g, 8);
        wgt_status st = make(gpu, g, arg, &t[v][0], &t[v][1]);
        CHECK(st == WGT_OK, "%s at %s: %s", what, v ? "128" : "the device's size", wgt_errmsg());
        wgt_generator_free(g);
        gpu->info.limits = saved;
    }
    CHECK(op_workgroup_size(gpu) == 256 || op_workgroup_size(gpu) == 128, "workgroup size %u", op_workgroup_size(gpu));
    for (int o = 0; o < 2; o++)
        if (t[0][o] && t[1][o]) compare(what, t[1][o], t[0][o], 0, 0, 0);
    for (int o = 0; o < 2; o++) wgt_tensor_free(t[0][o]), wgt_tensor_free(t[1][o]);
}

static void test_workgroup_size(void)
{
    shaped u = {WGT_F32, 2, {37, 301}, -3, 5}, nm = {WGT_BF16, 1, {4099}, 1, 2}, bi = {WGT_U8, 1, {2051}, 0.4, 0};
    shaped ri = {WGT_I64, 2, {17, 31}, -7, 1000}, ps = {WGT_I32, 1, {2000}, 0, 0}, pl = {WGT_I32, 1, {5000}, 0, 0};
    same_at_128("uniform f32 at 128", mk_uniform, &u);
    same_at_128("normal bf16 at 128", mk_normal, &nm);
    same_at_128("bernoulli u8 at 128", mk_bern, &bi);
    same_at_128("randint i64 at 128", mk_randint, &ri);
    same_at_128("randperm 2000 (one workgroup's shuffle) at 128", mk_randperm, &ps);
    same_at_128("randperm 5000 at 128", mk_randperm, &pl);
    input dx = {WGT_F16, 41, 29, 1, 1, 0.2, 0, 1};
    same_at_128("dropout f16 with mask at 128", mk_dropout, &dx);
    input mn[3] = {
        {WGT_F32, 3, 50000, 0, 2, 0, 33, 0},   /* long rows, without replacement: 256 chunks of 196 */
        {WGT_F16, 19, 300, 0, 2, 0, 100, 0},   /* chunks of 2, zero weights */
        {WGT_F32, 2, 300, 0, 2, 0, 5000, 1},   /* with replacement: 4 workgroups a row */
    };
    for (int c = 0; c < 3; c++) {
        char what[64];
        snprintf(what, sizeof what, "multinomial case %d at 128", c);
        same_at_128(what, mk_multinomial, &mn[c]);
    }
}

int main(void)
{
    MUST(wgt_context_create(NULL, &gpu));
    wgt_context_options o = {0};
    o.backend = WGT_BACKEND_CPU;
    MUST(wgt_context_create(&o, &cpu));
    test_kat();
    test_reference();
    test_statistics();
    test_generator();
    test_errors();
    test_workgroup_size();
    CHECK(compared > 100000, "only %lld elements compared", (long long)compared);
    wgt_context_free(cpu);
    wgt_context_free(gpu);
    return test_finish("test_gpu_random");
}
