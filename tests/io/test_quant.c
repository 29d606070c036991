/* Dequantisation of every GGML block type, checked against the format's definition written here
 * element by element (a different formulation from src/quant: index arithmetic per element, and
 * scales packed with the encoder's formula), on hand-built blocks with known values; conversions
 * of the plain types; and quantiser round trips: exact where the format is exact, within the
 * format's step elsewhere. */
#include "io/io_test.h"
#include "quant/half.h"

static uint32_t rng = 12345;
static uint32_t rnd(void) { return rng = rng * 1664525u + 1013904223u, rng >> 8; }
static void fill(uint8_t *p, int n) { for (int i = 0; i < n; i++) p[i] = (uint8_t)rnd(); }
static void put16(uint8_t *p, float f) { uint16_t h = wgt_f32_to_f16(f); memcpy(p, &h, 2); }

/* Compare the library's dequantisation of one block with the expectation `ref`. */
static void check_block(wgt_ftype t, const uint8_t *blk, const float *ref, int n, const char *what)
{
    float got[256];
    CHECK_OK(wgt_dequantize(t, blk, got, n));
    int bad = 0;
    for (int i = 0; i < n && bad < 3; i++)
        if (got[i] != ref[i]) {
            bad++;
            CHECK(0, "%s %s: element %d: got %.9g, the definition says %.9g", wgt_ftype_name(t), what, i, got[i], ref[i]);
        }
}

/* d and dmin are powers of two so that every product is exact and the comparison can be exact. */
static void test_32_blocks(void)
{
    uint8_t b[64];
    float ref[32];
    for (int rep = 0; rep < 20; rep++) {
        float d = ldexpf(1, (int)(rnd() % 8) - 6), m = -ldexpf(1, (int)(rnd() % 6) - 5);
        /* Q4_0 {d, qs[16]}: element i<16 low nibble of qs[i], i>=16 high nibble of qs[i-16] */
        put16(b, d);
        fill(b + 2, 16);
        for (int i = 0; i < 32; i++) ref[i] = (float)(((i < 16 ? b[2 + i] : b[2 + i - 16] >> 4) & 15) - 8) * d;
        check_block(WGT_FTYPE_Q4_0, b, ref, 32, "random");
        /* Q4_1 {d, m, qs[16]} */
        put16(b, d);
        put16(b + 2, m);
        fill(b + 4, 16);
        for (int i = 0; i < 32; i++) ref[i] = (float)((i < 16 ? b[4 + i] : b[4 + i - 16] >> 4) & 15) * d + m;
        check_block(WGT_FTYPE_Q4_1, b, ref, 32, "random");
        /* Q5_0 {d, qh[4] (bit i = fifth bit of element i), qs[16]} */
        put16(b, d);
        fill(b + 2, 20);
        for (int i = 0; i < 32; i++) {
            int lo = (i < 16 ? b[6 + i] : b[6 + i - 16] >> 4) & 15, hi = (b[2 + i / 8] >> (i % 8)) & 1;
            ref[i] = (float)((lo | hi << 4) - 16) * d;
        }
        check_block(WGT_FTYPE_Q5_0, b, ref, 32, "random");
        /* Q5_1 {d, m, qh[4], qs[16]} */
        put16(b, d);
        put16(b + 2, m);
        fill(b + 4, 20);
        for (int i = 0; i < 32; i++) {
            int lo = (i < 16 ? b[8 + i] : b[8 + i - 16] >> 4) & 15, hi = (b[4 + i / 8] >> (i % 8)) & 1;
            ref[i] = (float)(lo | hi << 4) * d + m;
        }
        check_block(WGT_FTYPE_Q5_1, b, ref, 32, "random");
        /* Q8_0 {d, i8 qs[32]}, Q8_1 {d, s, i8 qs[32]} */
        put16(b, d);
        fill(b + 2, 34);
        for (int i = 0; i < 32; i++) ref[i] = (float)(int8_t)b[2 + i] * d;
        check_block(WGT_FTYPE_Q8_0, b, ref, 32, "random");
        for (int i = 0; i < 32; i++) ref[i] = (float)(int8_t)b[4 + i] * d;
        check_block(WGT_FTYPE_Q8_1, b, ref, 32, "random");
    }
    /* hand-computed: d = 0.5, qs[0] = 0x1f: element 0 = (15-8)/2, element 16 = (1-8)/2 */
    memset(b, 0, sizeof b);
    put16(b, 0.5f);
    b[2] = 0x1f;
    float got[32];
    CHECK_OK(wgt_dequantize(WGT_FTYPE_Q4_0, b, got, 32));
    CHECK(got[0] == 3.5f && got[16] == -3.5f && got[1] == -4.0f, "Q4_0 known values: %g %g %g", got[0], got[16], got[1]);
    /* Q5_0: qh bit 31 set makes element 31 = ((0 | 16) - 16) * d = 0, element 30 = -16 d */
    memset(b, 0, sizeof b);
    put16(b, 0.25f);
    b[5] = 0x80;
    CHECK_OK(wgt_dequantize(WGT_FTYPE_Q5_0, b, got, 32));
    CHECK(got[31] == 0.0f && got[30] == -4.0f, "Q5_0 known values: %g %g", got[31], got[30]);
}

/* 6-bit scale/min packing of Q4_K/Q5_K, written as the encoder does it. */
static void pack_k4(uint8_t *sc, const int *ls, const int *lm)
{
    memset(sc, 0, 12);
    for (int j = 0; j < 8; j++) {
        if (j < 4) {
            sc[j] = (uint8_t)ls[j];
            sc[j + 4] = (uint8_t)lm[j];
        } else {
            sc[j + 4] = (uint8_t)((ls[j] & 15) | (lm[j] & 15) << 4);
            sc[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
            sc[j] |= (uint8_t)((lm[j] >> 4) << 6);
        }
    }
}

static void test_k_blocks(void)
{
    uint8_t b[300];
    float ref[256];
    for (int rep = 0; rep < 20; rep++) {
        float d = ldexpf(1, (int)(rnd() % 6) - 8), dmin = ldexpf(1, (int)(rnd() % 6) - 9);
        /* Q2_K {scales[16], qs[64], d, dmin}: element i: group i/16 (scale low nibble, min high
         * nibble), 2-bit value at shift 2*((i%128)/32) of qs[32*(i/128) + i%32] */
        fill(b, 80);
        put16(b + 80, d);
        put16(b + 82, dmin);
        for (int i = 0; i < 256; i++) {
            int q = (b[16 + 32 * (i / 128) + i % 32] >> (2 * ((i % 128) / 32))) & 3, sc = b[i / 16];
            ref[i] = d * (float)(sc & 15) * (float)q - dmin * (float)(sc >> 4);
        }
        check_block(WGT_FTYPE_Q2_K, b, ref, 256, "random");

        /* Q3_K {hmask[32], qs[64], scales[12], d}: 6-bit signed scales (minus 32) packed as the
         * encoder does; value = 2-bit field (as Q2_K) minus 4 unless bit (i/32) of hmask[i%32] */
        int s6[16];
        for (int j = 0; j < 16; j++) s6[j] = (int)(rnd() % 64);
        fill(b, 96);
        uint8_t *sc = b + 96;
        memset(sc, 0, 12);
        for (int j = 0; j < 16; j++) {
            int l = s6[j];
            if (j < 8) sc[j] = (uint8_t)(l & 15);
            else sc[j - 8] |= (uint8_t)((l & 15) << 4);
            l >>= 4;
            sc[j % 4 + 8] |= (uint8_t)(l << (2 * (j / 4)));
        }
        put16(b + 108, d);
        for (int i = 0; i < 256; i++) {
            int q = (b[32 + 32 * (i / 128) + i % 32] >> (2 * ((i % 128) / 32))) & 3;
            int high = (b[i % 32] >> (i / 32)) & 1;
            ref[i] = d * (float)(s6[i / 16] - 32) * (float)(q - (high ? 0 : 4));
        }
        check_block(WGT_FTYPE_Q3_K, b, ref, 256, "random");

        /* Q4_K {d, dmin, scales[12], qs[128]}: sub-block i/32; nibble of qs[32*(i/64) + i%32],
         * low for the first 32 of each 64 */
        int ls[8], lm[8];
        for (int j = 0; j < 8; j++) ls[j] = (int)(rnd() % 64), lm[j] = (int)(rnd() % 64);
        put16(b, d);
        put16(b + 2, dmin);
        pack_k4(b + 4, ls, lm);
        fill(b + 16, 128);
        for (int i = 0; i < 256; i++) {
            int byte = b[16 + 32 * (i / 64) + i % 32], q = i % 64 < 32 ? byte & 15 : byte >> 4;
            ref[i] = d * (float)ls[i / 32] * (float)q - dmin * (float)lm[i / 32];
        }
        check_block(WGT_FTYPE_Q4_K, b, ref, 256, "random");

        /* Q5_K {d, dmin, scales[12], qh[32], qs[128]}: fifth bit = bit (i/32) of qh[i%32] */
        put16(b, d);
        put16(b + 2, dmin);
        pack_k4(b + 4, ls, lm);
        fill(b + 16, 160);
        for (int i = 0; i < 256; i++) {
            int byte = b[48 + 32 * (i / 64) + i % 32], q = i % 64 < 32 ? byte & 15 : byte >> 4;
            q |= ((b[16 + i % 32] >> (i / 32)) & 1) << 4;
            ref[i] = d * (float)ls[i / 32] * (float)q - dmin * (float)lm[i / 32];
        }
        check_block(WGT_FTYPE_Q5_K, b, ref, 256, "random");

        /* Q6_K {ql[128], qh[64], i8 scales[16], d}: in each half h of 128, element r = 32k + l
         * takes the nibble of ql[64h + l + 32(k&1)] (low for k < 2) and bits 2k of qh[32h + l]. */
        fill(b, 208);
        put16(b + 208, d);
        for (int i = 0; i < 256; i++) {
            int h = i / 128, r = i % 128, k = r / 32, l = r % 32;
            int nib = b[64 * h + l + 32 * (k & 1)];
            nib = k < 2 ? nib & 15 : nib >> 4;
            int q = (nib | ((b[128 + 32 * h + l] >> (2 * k)) & 3) << 4) - 32;
            int scale = (int8_t)b[192 + 8 * h + l / 16 + 2 * k];
            ref[i] = d * (float)scale * (float)q;
        }
        check_block(WGT_FTYPE_Q6_K, b, ref, 256, "random");

        /* Q8_K {f32 d, i8 qs[256], i16 bsums[16]} */
        fill(b, 292);
        memcpy(b, &d, 4);
        for (int i = 0; i < 256; i++) ref[i] = d * (float)(int8_t)b[4 + i];
        check_block(WGT_FTYPE_Q8_K, b, ref, 256, "random");
    }
    /* hand-computed Q4_K: d = 1, dmin = 0.5, sub-block 5 scale 33 (packed across bytes), min 2;
     * qs[32*2 + 0] = 0xA0: element 160 (sub 5, low... no: 160 = 64*2 + 32 -> high nibble = 10) */
    int ls[8] = {0, 0, 0, 0, 0, 33, 0, 0}, lm[8] = {0, 0, 0, 0, 0, 2, 0, 0};
    memset(b, 0, sizeof b);
    put16(b, 1.0f);
    put16(b + 2, 0.5f);
    pack_k4(b + 4, ls, lm);
    b[16 + 64] = 0xA0;
    float got[256];
    CHECK_OK(wgt_dequantize(WGT_FTYPE_Q4_K, b, got, 256));
    CHECK(got[160] == 33.0f * 10 - 1.0f && got[128] == 0.0f && got[161] == -1.0f,
          "Q4_K known values: %g %g %g", got[160], got[128], got[161]);
}

static void test_plain(void)
{
    /* f16 and bf16 bit patterns with known values, both directions */
    struct { uint16_t h; float f; } f16[] = {{0x3c00, 1.0f}, {0xc000, -2.0f}, {0x7bff, 65504.0f},
        {0x0001, 5.9604644775390625e-8f}, {0x0400, 6.103515625e-5f}, {0x3555, 0.333251953125f}, {0x8000, -0.0f}};
    for (size_t i = 0; i < sizeof f16 / sizeof f16[0]; i++) {
        CHECK(wgt_f16_to_f32(f16[i].h) == f16[i].f, "f16 %04x -> %g", f16[i].h, wgt_f16_to_f32(f16[i].h));
        CHECK(wgt_f32_to_f16(f16[i].f) == f16[i].h, "f32 %g -> f16 %04x", f16[i].f, wgt_f32_to_f16(f16[i].f));
    }
    CHECK(isinf(wgt_f16_to_f32(0x7c00)) && isnan(wgt_f16_to_f32(0x7e00)), "f16 inf/nan");
    CHECK(wgt_f32_to_f16(65519.0f) == 0x7bff && wgt_f32_to_f16(65520.0f) == 0x7c00, "f16 overflow rounding");
    CHECK(wgt_f32_to_f16(1.0f + ldexpf(1, -11)) == 0x3c00 && wgt_f32_to_f16(1.0f + 3 * ldexpf(1, -11)) == 0x3c02,
          "f16 ties to even");
    CHECK(wgt_f32_to_f16(ldexpf(1, -25)) == 0 && wgt_f32_to_f16(ldexpf(3, -26)) == 1, "f16 subnormal rounding");
    CHECK(wgt_f32_to_bf16(1.0f) == 0x3f80 && wgt_bf16_to_f32(0xc040) == -3.0f, "bf16 known values");
    CHECK(wgt_f32_to_bf16(wgt_bits_to_f32(0x3f808000)) == 0x3f80 && wgt_f32_to_bf16(wgt_bits_to_f32(0x3f818000)) == 0x3f82,
          "bf16 ties to even");
    /* every f16 value survives f16 -> f32 -> f16 */
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        uint16_t back = wgt_f32_to_f16(wgt_f16_to_f32((uint16_t)h));
        if (((h & 0x7c00) != 0x7c00 || !(h & 0x3ff)) && back != h) bad++;
    }
    CHECK(bad == 0, "%d f16 values do not survive the round trip", bad);

    /* integer and safetensors-only types convert by value */
    int8_t i8[] = {-128, 5};
    int16_t i16[] = {-32768, 300};
    int32_t i32[] = {-7, 1 << 20};
    int64_t i64[] = {-3, (int64_t)1 << 40};
    uint8_t u8[] = {255, 0}, bl[] = {0, 1};
    double f64[] = {-1.5, 1e300};
    uint8_t e4m3[] = {0x38, 0x7e, 0x01, 0xb8}, e5m2[] = {0x3c, 0x7b, 0xc0, 0x01};
    float o[4], big[256];
    static const uint8_t zeros[256];
    CHECK_OK(wgt_dequantize(WGT_FTYPE_I8, i8, o, 2)); CHECK(o[0] == -128 && o[1] == 5, "i8");
    CHECK_OK(wgt_dequantize(WGT_FTYPE_I16, i16, o, 2)); CHECK(o[0] == -32768 && o[1] == 300, "i16");
    CHECK_OK(wgt_dequantize(WGT_FTYPE_I32, i32, o, 2)); CHECK(o[0] == -7 && o[1] == 1048576, "i32");
    CHECK_OK(wgt_dequantize(WGT_FTYPE_I64, i64, o, 2)); CHECK(o[0] == -3 && o[1] == ldexpf(1, 40), "i64");
    CHECK_OK(wgt_dequantize(WGT_FTYPE_U8, u8, o, 2)); CHECK(o[0] == 255 && o[1] == 0, "u8");
    CHECK_OK(wgt_dequantize(WGT_FTYPE_BOOL, bl, o, 2)); CHECK(o[0] == 0 && o[1] == 1, "bool");
    CHECK_OK(wgt_dequantize(WGT_FTYPE_F64, f64, o, 2)); CHECK(o[0] == -1.5f && isinf(o[1]), "f64");
    /* E4M3 (fn): 0x38 = 1, 0x7e = 448 (largest), 0x01 = 2^-9 (smallest subnormal), 0xb8 = -1 */
    CHECK_OK(wgt_dequantize(WGT_FTYPE_F8_E4M3, e4m3, o, 4));
    CHECK(o[0] == 1 && o[1] == 448 && o[2] == ldexpf(1, -9) && o[3] == -1, "e4m3: %g %g %g %g", o[0], o[1], o[2], o[3]);
    /* E5M2: 0x3c = 1, 0x7b = 57344 (largest), 0xc0 = -2, 0x01 = 2^-16 */
    CHECK_OK(wgt_dequantize(WGT_FTYPE_F8_E5M2, e5m2, o, 4));
    CHECK(o[0] == 1 && o[1] == 57344 && o[2] == -2 && o[3] == ldexpf(1, -16), "e5m2");

    /* sizes and names */
    uint64_t n;
    CHECK_OK(wgt_ftype_bytes(WGT_FTYPE_Q4_K, 512, &n)); CHECK(n == 288, "q4_K bytes %llu", (unsigned long long)n);
    CHECK(wgt_ftype_bytes(WGT_FTYPE_Q4_0, 33, &n) == WGT_ERR_SHAPE, "a partial block is refused");
    CHECK(wgt_ftype_bytes(WGT_FTYPE_F32, INT64_MAX, &n) == WGT_ERR_LIMIT, "overflow is refused");
    wgt_ftype t;
    CHECK(wgt_ftype_from_name("Q6_K", &t) == WGT_OK && t == WGT_FTYPE_Q6_K, "from_name");
    CHECK(wgt_dequantize(WGT_FTYPE_IQ2_XXS, zeros, big, 256) == WGT_ERR_UNSUPPORTED, "iq2_xxs not dequantised");
}

static double gauss(void)
{
    double u = ((double)rnd() + 1) / 16777217.0, v = (double)rnd() / 16777216.0;
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

/* Round trip of n values; returns the RMS error relative to the RMS of x, and the worst error. */
static double round_trip(wgt_ftype t, const float *x, int n, float *y, double *worst)
{
    uint64_t bytes;
    CHECK_OK(wgt_ftype_bytes(t, n, &bytes));
    uint8_t *q = malloc(bytes);
    CHECK_OK(wgt_quantize(t, x, q, n));
    CHECK_OK(wgt_dequantize(t, q, y, n));
    free(q);
    double se = 0, sx = 0;
    *worst = 0;
    for (int i = 0; i < n; i++) {
        double e = fabs((double)y[i] - x[i]);
        se += e * e;
        sx += (double)x[i] * x[i];
        if (e > *worst) *worst = e;
    }
    return sqrt(se / (sx ? sx : 1));
}

static void test_quantisers(void)
{
    enum { N = 256 * 64 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    double worst;
    /* exact grids: Q8_0 with values k * 0.25, |k| <= 127 and 127 present in each block;
     * Q4_0 with k * d, k in -8..7 and -8 present (d = max / -8 exactly) */
    for (int i = 0; i < N; i++) x[i] = (float)((i % 32 == 0) ? 127 : (int)(rnd() % 255) - 127) * 0.25f;
    round_trip(WGT_FTYPE_Q8_0, x, N, y, &worst);
    CHECK(worst == 0, "Q8_0 on its own grid is exact (worst error %g)", worst);
    for (int i = 0; i < N; i++) x[i] = (float)((i % 32 == 5) ? -8 : (int)(rnd() % 16) - 8) * 0.125f;
    round_trip(WGT_FTYPE_Q4_0, x, N, y, &worst);
    CHECK(worst == 0, "Q4_0 on its own grid is exact (worst error %g)", worst);
    /* f32/f16/bf16: exact on representable values, half an ulp otherwise */
    for (int i = 0; i < N; i++) x[i] = wgt_f16_to_f32((uint16_t)(rnd() & 0x7bff));
    round_trip(WGT_FTYPE_F16, x, N, y, &worst);
    CHECK(worst == 0, "f16-representable values survive f16 (worst %g)", worst);
    for (int i = 0; i < N; i++) x[i] = wgt_bf16_to_f32((uint16_t)(rnd() & 0x7f7f));
    round_trip(WGT_FTYPE_BF16, x, N, y, &worst);
    CHECK(worst == 0, "bf16-representable values survive bf16 (worst %g)", worst);
    for (int i = 0; i < N; i++) x[i] = (float)gauss();
    round_trip(WGT_FTYPE_F32, x, N, y, &worst);
    CHECK(worst == 0, "f32 is exact");
    int bad = 0;
    round_trip(WGT_FTYPE_F16, x, N, y, &worst);
    for (int i = 0; i < N; i++) bad += fabsf(y[i] - x[i]) > fabsf(x[i]) * ldexpf(1, -11) + ldexpf(1, -25);
    CHECK(bad == 0, "%d f16 values off by more than half an ulp", bad);

    /* Gaussian data: per-element bounds where the format gives one, RMS error otherwise. The RMS
     * limits are the formats' expected errors with a margin: a uniform rounding error of one
     * step s has RMS s / sqrt(12); Q8_0's step is max|x|/127, Q4_0's max|x|/8, Q4_K's about
     * range/15 per 32, Q6_K's about max|x|/32 per 16. */
    for (int i = 0; i < N; i++) x[i] = (float)gauss();
    double r8 = round_trip(WGT_FTYPE_Q8_0, x, N, y, &worst);
    bad = 0;
    for (int b = 0; b < N / 32; b++) {
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[32 * b + j]));
        float d = wgt_f16_to_f32(wgt_f32_to_f16(amax / 127));
        for (int j = 0; j < 32; j++) bad += fabsf(y[32 * b + j] - x[32 * b + j]) > 0.5f * d + 127 * d * ldexpf(1, -11) * 1.01f;
    }
    CHECK(bad == 0, "Q8_0: %d values off by more than half a step (plus f16 rounding of d)", bad);
    double r4 = round_trip(WGT_FTYPE_Q4_0, x, N, y, &worst);
    double r4k = round_trip(WGT_FTYPE_Q4_K, x, N, y, &worst);
    double r6k = round_trip(WGT_FTYPE_Q6_K, x, N, y, &worst);
    printf("relative RMS error on Gaussian data: q8_0 %.4f  q4_0 %.4f  q4_K %.4f  q6_K %.4f\n", r8, r4, r4k, r6k);
    CHECK(r8 < 0.01, "Q8_0 RMS error %g", r8);
    CHECK(r4 < 0.15, "Q4_0 RMS error %g", r4);
    CHECK(r4k < 0.11 && r4k < r4, "Q4_K RMS error %g (Q4_0: %g)", r4k, r4);
    CHECK(r6k < 0.03 && r6k > r8, "Q6_K RMS error %g", r6k);

    /* all-zero and constant blocks: no NaN, zeros stay zero */
    memset(x, 0, 256 * sizeof *x);
    wgt_ftype qt[] = {WGT_FTYPE_Q8_0, WGT_FTYPE_Q4_0, WGT_FTYPE_Q4_K, WGT_FTYPE_Q6_K};
    for (int k = 0; k < 4; k++) {
        round_trip(qt[k], x, 256, y, &worst);
        CHECK(worst == 0, "%s: zeros give %g", wgt_ftype_name(qt[k]), worst);
    }
    for (int i = 0; i < 256; i++) x[i] = 3.0f;
    for (int k = 0; k < 4; k++) {
        round_trip(qt[k], x, 256, y, &worst);
        CHECK(worst < 3.0 / 64, "%s: a constant block is off by %g", wgt_ftype_name(qt[k]), worst);
    }
    CHECK(wgt_quantize(WGT_FTYPE_Q5_K, x, y, 256) == WGT_ERR_UNSUPPORTED, "no Q5_K quantiser");
    free(x);
    free(y);
}

int main(void)
{
    test_32_blocks();
    test_k_blocks();
    test_plain();
    test_quantisers();
    return finish("test_quant");
}
