/* Element types of model files: the table of sizes and names, and the CPU reference for
 * dequantising every GGML block type we read. The block layouts follow ggml's ggml-common.h and
 * the dequantize_row_* definitions in ggml-quants.c (read, not copied); each function below says
 * which element comes from which bits. All blocks are read through byte offsets (files do not
 * promise alignment of anything but the tensor start). */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "quant/half.h"
#include "quant/quant.h"

typedef struct ftype_info {
    wgt_ftype type;
    const char *name;
    uint32_t block_elems, block_bytes;
} ftype_info;

static const ftype_info infos[] = {
    {WGT_FTYPE_F32, "f32", 1, 4},         {WGT_FTYPE_F16, "f16", 1, 2},
    {WGT_FTYPE_Q4_0, "q4_0", 32, 18},     {WGT_FTYPE_Q4_1, "q4_1", 32, 20},
    {WGT_FTYPE_Q5_0, "q5_0", 32, 22},     {WGT_FTYPE_Q5_1, "q5_1", 32, 24},
    {WGT_FTYPE_Q8_0, "q8_0", 32, 34},     {WGT_FTYPE_Q8_1, "q8_1", 32, 36},
    {WGT_FTYPE_Q2_K, "q2_K", 256, 84},    {WGT_FTYPE_Q3_K, "q3_K", 256, 110},
    {WGT_FTYPE_Q4_K, "q4_K", 256, 144},   {WGT_FTYPE_Q5_K, "q5_K", 256, 176},
    {WGT_FTYPE_Q6_K, "q6_K", 256, 210},   {WGT_FTYPE_Q8_K, "q8_K", 256, 292},
    {WGT_FTYPE_IQ2_XXS, "iq2_xxs", 256, 66}, {WGT_FTYPE_IQ2_XS, "iq2_xs", 256, 74},
    {WGT_FTYPE_IQ3_XXS, "iq3_xxs", 256, 98}, {WGT_FTYPE_IQ1_S, "iq1_s", 256, 50},
    {WGT_FTYPE_IQ4_NL, "iq4_nl", 32, 18},    {WGT_FTYPE_IQ3_S, "iq3_s", 256, 110},
    {WGT_FTYPE_IQ2_S, "iq2_s", 256, 82},     {WGT_FTYPE_IQ4_XS, "iq4_xs", 256, 136},
    {WGT_FTYPE_I8, "i8", 1, 1},           {WGT_FTYPE_I16, "i16", 1, 2},
    {WGT_FTYPE_I32, "i32", 1, 4},         {WGT_FTYPE_I64, "i64", 1, 8},
    {WGT_FTYPE_F64, "f64", 1, 8},         {WGT_FTYPE_IQ1_M, "iq1_m", 256, 56},
    {WGT_FTYPE_BF16, "bf16", 1, 2},       {WGT_FTYPE_TQ1_0, "tq1_0", 256, 54},
    {WGT_FTYPE_TQ2_0, "tq2_0", 256, 66},  {WGT_FTYPE_MXFP4, "mxfp4", 32, 17},
    {WGT_FTYPE_U8, "u8", 1, 1},           {WGT_FTYPE_BOOL, "bool", 1, 1},
    {WGT_FTYPE_U16, "u16", 1, 2},         {WGT_FTYPE_U32, "u32", 1, 4},
    {WGT_FTYPE_U64, "u64", 1, 8},         {WGT_FTYPE_F8_E4M3, "f8_e4m3", 1, 1},
    {WGT_FTYPE_F8_E5M2, "f8_e5m2", 1, 1},
};

static const ftype_info *info_of(wgt_ftype type)
{
    for (size_t i = 0; i < sizeof infos / sizeof infos[0]; i++)
        if (infos[i].type == type) return &infos[i];
    return NULL;
}

const char *wgt_ftype_name(wgt_ftype type)
{
    const ftype_info *f = info_of(type);
    return f ? f->name : NULL;
}

wgt_status wgt_ftype_from_name(const char *name, wgt_ftype *out)
{
    for (size_t i = 0; name && i < sizeof infos / sizeof infos[0]; i++)
        if (!strcasecmp(infos[i].name, name)) {
            *out = infos[i].type;
            return WGT_OK;
        }
    return wgt_error(WGT_ERR_NOT_FOUND, "unknown tensor type '%s'", name ? name : "(null)");
}

uint32_t wgt_ftype_block_elems(wgt_ftype type)
{
    const ftype_info *f = info_of(type);
    return f ? f->block_elems : 0;
}

uint32_t wgt_ftype_block_bytes(wgt_ftype type)
{
    const ftype_info *f = info_of(type);
    return f ? f->block_bytes : 0;
}

wgt_status wgt_ftype_bytes(wgt_ftype type, int64_t n, uint64_t *bytes)
{
    const ftype_info *f = info_of(type);
    if (!f) return wgt_error(WGT_ERR_UNSUPPORTED, "unknown tensor type %d", (int)type);
    if (n < 0 || n % f->block_elems)
        return wgt_error(WGT_ERR_SHAPE, "%lld elements of %s: not a multiple of its block of %u",
                         (long long)n, f->name, f->block_elems);
    uint64_t blocks = (uint64_t)n / f->block_elems;
    if (blocks > UINT64_MAX / f->block_bytes)
        return wgt_error(WGT_ERR_LIMIT, "%lld elements of %s: byte size overflows", (long long)n,
                         f->name);
    *bytes = blocks * f->block_bytes;
    return WGT_OK;
}

/* ---- little helpers for reading unaligned little-endian fields ---- */

static inline uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t rd64(const uint8_t *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static inline float h(const uint8_t *p) { return wgt_f16_to_f32(rd16(p)); }

/* ---- 32-element blocks ---- */

/* Q4_0: {f16 d; u8 qs[16]}: element j<16 is the low nibble of qs[j], element j+16 the high one,
 * both minus 8, times d. Q4_1 adds an f16 m after d and no offset: q * d + m. */
static void deq_q4(const uint8_t *b, float *y, int with_min)
{
    float d = h(b), m = with_min ? h(b + 2) : 0;
    const uint8_t *qs = b + (with_min ? 4 : 2);
    for (int j = 0; j < 16; j++) { /* no "+ 0" for Q4_0: it would turn ggml's -0.0 into +0.0 */
        y[j] = with_min ? (float)(qs[j] & 0xf) * d + m : (float)((qs[j] & 0xf) - 8) * d;
        y[j + 16] = with_min ? (float)(qs[j] >> 4) * d + m : (float)((qs[j] >> 4) - 8) * d;
    }
}

/* Q5_0: {f16 d; u8 qh[4]; u8 qs[16]}: 4 low bits as Q4_0, the fifth bit of element j is bit j of
 * the little-endian u32 qh; minus 16, times d. Q5_1: {d; m; qh; qs}: no offset, plus m. */
static void deq_q5(const uint8_t *b, float *y, int with_min)
{
    float d = h(b), m = with_min ? h(b + 2) : 0;
    const uint8_t *p = b + (with_min ? 4 : 2);
    uint32_t qh = rd32(p);
    const uint8_t *qs = p + 4;
    for (int j = 0; j < 16; j++) {
        int lo = (qs[j] & 0xf) | (int)((qh >> j) & 1) << 4;
        int hi = (qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
        y[j] = with_min ? (float)lo * d + m : (float)(lo - 16) * d;
        y[j + 16] = with_min ? (float)hi * d + m : (float)(hi - 16) * d;
    }
}

/* Q8_0: {f16 d; i8 qs[32]}; Q8_1: {f16 d; f16 s; i8 qs[32]} (s = d * sum(qs), unused here). */
static void deq_q8(const uint8_t *b, float *y, int skip)
{
    float d = h(b);
    const int8_t *qs = (const int8_t *)(b + 2 + skip);
    for (int j = 0; j < 32; j++) y[j] = (float)qs[j] * d;
}

/* ---- 256-element super-blocks (K-quants) ---- */

/* Q2_K: {u8 scales[16]; u8 qs[64]; f16 d; f16 dmin}. 16 groups of 16; group g has scale
 * d * (scales[g] & 15) and min dmin * (scales[g] >> 4). Each 128-element half uses 32 bytes of qs;
 * within it, shift 2*k selects the k-th run of 32 elements (two groups: qs[0..15], qs[16..31]). */
static void deq_q2_k(const uint8_t *b, float *y)
{
    const uint8_t *sc = b, *q = b + 16;
    float d = h(b + 80), dmin = h(b + 82);
    int g = 0;
    for (int half = 0; half < 2; half++, q += 32)
        for (int shift = 0; shift < 8; shift += 2)
            for (int part = 0; part < 2; part++, g++) {
                float dl = d * (float)(sc[g] & 0xf), ml = dmin * (float)(sc[g] >> 4);
                for (int l = 0; l < 16; l++) *y++ = dl * (float)((q[l + 16 * part] >> shift) & 3) - ml;
            }
}

/* Q4_K/Q5_K 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes. */
static void scale_min_k4(int j, const uint8_t *q, int *sc, int *m)
{
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

/* Q3_K: {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d}. 16 groups of 16 with signed 6-bit scales
 * (minus 32): low 4 bits of scale g are in scales[g % 8] (low nibble for g < 8, high for g >= 8),
 * the top 2 bits in scales[8 + g % 4] at bit 2 * (g / 4). A value is the 2-bit field of qs (as
 * Q2_K) minus 4 unless its bit in hmask is set (bit k of hmask[l] for the k-th run of 32). */
static void deq_q3_k(const uint8_t *b, float *y)
{
    const uint8_t *hm = b, *q = b + 32, *sb = b + 96;
    float d = h(b + 108);
    int scales[16];
    for (int g = 0; g < 16; g++) {
        int lo = g < 8 ? sb[g] & 0xf : sb[g - 8] >> 4;
        int hi = (sb[8 + g % 4] >> (2 * (g / 4))) & 3;
        scales[g] = (lo | hi << 4) - 32;
    }
    int g = 0, bit = 0;
    for (int half = 0; half < 2; half++, q += 32)
        for (int shift = 0; shift < 8; shift += 2, bit++)
            for (int part = 0; part < 2; part++, g++) {
                float dl = d * (float)scales[g];
                for (int l = 0; l < 16; l++) {
                    int idx = l + 16 * part;
                    int v = ((q[idx] >> shift) & 3) - ((hm[idx] >> bit) & 1 ? 0 : 4);
                    *y++ = dl * (float)v;
                }
            }
}

/* Q4_K: {f16 d; f16 dmin; u8 scales[12]; u8 qs[128]}: 8 sub-blocks of 32; each 64 elements use
 * 32 bytes of qs, low nibbles first, then high nibbles. value = d*sc*q - dmin*m. */
static void deq_q4_k(const uint8_t *b, float *y)
{
    float d = h(b), dmin = h(b + 2);
    const uint8_t *sc = b + 4, *q = b + 16;
    for (int j = 0; j < 4; j++, q += 32) {
        int s0, m0, s1, m1;
        scale_min_k4(2 * j, sc, &s0, &m0);
        scale_min_k4(2 * j + 1, sc, &s1, &m1);
        float d0 = d * (float)s0, n0 = dmin * (float)m0, d1 = d * (float)s1, n1 = dmin * (float)m1;
        for (int l = 0; l < 32; l++) *y++ = d0 * (float)(q[l] & 0xf) - n0;
        for (int l = 0; l < 32; l++) *y++ = d1 * (float)(q[l] >> 4) - n1;
    }
}

/* Q5_K: {f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}: as Q4_K, and the fifth bit of
 * element l of sub-block s is bit s of qh[l]. */
static void deq_q5_k(const uint8_t *b, float *y)
{
    float d = h(b), dmin = h(b + 2);
    const uint8_t *sc = b + 4, *qh = b + 16, *q = b + 48;
    for (int j = 0; j < 4; j++, q += 32) {
        int s0, m0, s1, m1;
        scale_min_k4(2 * j, sc, &s0, &m0);
        scale_min_k4(2 * j + 1, sc, &s1, &m1);
        float d0 = d * (float)s0, n0 = dmin * (float)m0, d1 = d * (float)s1, n1 = dmin * (float)m1;
        for (int l = 0; l < 32; l++)
            *y++ = d0 * (float)((q[l] & 0xf) | ((qh[l] >> (2 * j)) & 1) << 4) - n0;
        for (int l = 0; l < 32; l++)
            *y++ = d1 * (float)((q[l] >> 4) | ((qh[l] >> (2 * j + 1)) & 1) << 4) - n1;
    }
}

/* Q6_K: {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}: each 128-element half uses 64 bytes of ql
 * and 32 of qh; element l + 32*k (k = 0..3) takes the nibble of ql[l + 32*(k&1)] (low for k<2)
 * and bits 2k..2k+1 of qh[l], minus 32; group of 16 (l/16 + 2k) has scale scales[...] * d. */
static void deq_q6_k(const uint8_t *b, float *y)
{
    const uint8_t *ql = b, *qh = b + 128;
    const int8_t *sc = (const int8_t *)(b + 192);
    float d = h(b + 208);
    for (int half = 0; half < 2; half++, y += 128, ql += 64, qh += 32, sc += 8)
        for (int l = 0; l < 32; l++) {
            int is = l / 16;
            int q1 = ((ql[l] & 0xf) | ((qh[l] >> 0) & 3) << 4) - 32;
            int q2 = ((ql[l + 32] & 0xf) | ((qh[l] >> 2) & 3) << 4) - 32;
            int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
            int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
            y[l] = d * (float)sc[is] * (float)q1;
            y[l + 32] = d * (float)sc[is + 2] * (float)q2;
            y[l + 64] = d * (float)sc[is + 4] * (float)q3;
            y[l + 96] = d * (float)sc[is + 6] * (float)q4;
        }
}

/* Q8_K: {f32 d; i8 qs[256]; i16 bsums[16]}. */
static void deq_q8_k(const uint8_t *b, float *y)
{
    float d = wgt_bits_to_f32(rd32(b));
    const int8_t *qs = (const int8_t *)(b + 4);
    for (int j = 0; j < 256; j++) y[j] = d * (float)qs[j];
}

/* F8 E4M3 ("fn": no infinities, S.1111.111 is NaN, bias 7) and E5M2 (the top byte of an f16). */
static float f8_e4m3(uint8_t v)
{
    int e = (v >> 3) & 0xf, m = v & 7;
    float r;
    if (e == 0xf && m == 7) return NAN;
    if (e == 0) r = ldexpf((float)m, -9);
    else r = ldexpf((float)(8 + m), e - 10);
    return v & 0x80 ? -r : r;
}

int wgt_ftype_can_dequantize(wgt_ftype type)
{
    switch (type) {
    case WGT_FTYPE_F32: case WGT_FTYPE_F16: case WGT_FTYPE_BF16: case WGT_FTYPE_F64:
    case WGT_FTYPE_Q4_0: case WGT_FTYPE_Q4_1: case WGT_FTYPE_Q5_0: case WGT_FTYPE_Q5_1:
    case WGT_FTYPE_Q8_0: case WGT_FTYPE_Q8_1: case WGT_FTYPE_Q2_K: case WGT_FTYPE_Q3_K:
    case WGT_FTYPE_Q4_K: case WGT_FTYPE_Q5_K: case WGT_FTYPE_Q6_K: case WGT_FTYPE_Q8_K:
    case WGT_FTYPE_I8: case WGT_FTYPE_I16: case WGT_FTYPE_I32: case WGT_FTYPE_I64:
    case WGT_FTYPE_U8: case WGT_FTYPE_BOOL: case WGT_FTYPE_U16: case WGT_FTYPE_U32:
    case WGT_FTYPE_U64: case WGT_FTYPE_F8_E4M3: case WGT_FTYPE_F8_E5M2:
        return 1;
    default:
        return 0;
    }
}

wgt_status wgt_dequantize(wgt_ftype type, const void *src, float *dst, int64_t n)
{
    uint64_t bytes;
    wgt_status st = wgt_ftype_bytes(type, n, &bytes);
    if (st) return st;
    if (!wgt_ftype_can_dequantize(type))
        return wgt_error(WGT_ERR_UNSUPPORTED, "dequantising %s is not implemented",
                         wgt_ftype_name(type));
    const uint8_t *s = src;
    uint32_t be = wgt_ftype_block_elems(type), bb = wgt_ftype_block_bytes(type);
    int64_t nb = n / be;
    for (int64_t i = 0; i < nb; i++, s += bb, dst += be) {
        switch (type) {
        case WGT_FTYPE_F32: *dst = wgt_bits_to_f32(rd32(s)); break;
        case WGT_FTYPE_F16: *dst = h(s); break;
        case WGT_FTYPE_BF16: *dst = wgt_bf16_to_f32(rd16(s)); break;
        case WGT_FTYPE_F64: {
            uint64_t u = rd64(s);
            double d;
            memcpy(&d, &u, 8);
            *dst = (float)d;
            break;
        }
        case WGT_FTYPE_I8: *dst = (float)(int8_t)s[0]; break;
        case WGT_FTYPE_I16: *dst = (float)(int16_t)rd16(s); break;
        case WGT_FTYPE_I32: *dst = (float)(int32_t)rd32(s); break;
        case WGT_FTYPE_I64: *dst = (float)(int64_t)rd64(s); break;
        case WGT_FTYPE_U8: *dst = (float)s[0]; break;
        case WGT_FTYPE_BOOL: *dst = s[0] ? 1.0f : 0.0f; break;
        case WGT_FTYPE_U16: *dst = (float)rd16(s); break;
        case WGT_FTYPE_U32: *dst = (float)rd32(s); break;
        case WGT_FTYPE_U64: *dst = (float)rd64(s); break;
        case WGT_FTYPE_F8_E4M3: *dst = f8_e4m3(s[0]); break;
        case WGT_FTYPE_F8_E5M2: *dst = wgt_f16_to_f32((uint16_t)(s[0] << 8)); break;
        case WGT_FTYPE_Q4_0: deq_q4(s, dst, 0); break;
        case WGT_FTYPE_Q4_1: deq_q4(s, dst, 1); break;
        case WGT_FTYPE_Q5_0: deq_q5(s, dst, 0); break;
        case WGT_FTYPE_Q5_1: deq_q5(s, dst, 1); break;
        case WGT_FTYPE_Q8_0: deq_q8(s, dst, 0); break;
        case WGT_FTYPE_Q8_1: deq_q8(s, dst, 2); break;
        case WGT_FTYPE_Q2_K: deq_q2_k(s, dst); break;
        case WGT_FTYPE_Q3_K: deq_q3_k(s, dst); break;
        case WGT_FTYPE_Q4_K: deq_q4_k(s, dst); break;
        case WGT_FTYPE_Q5_K: deq_q5_k(s, dst); break;
        case WGT_FTYPE_Q6_K: deq_q6_k(s, dst); break;
        case WGT_FTYPE_Q8_K: deq_q8_k(s, dst); break;
        default: return wgt_error(WGT_ERR_INTERNAL, "dequantise: type %d slipped through", type);
        }
    }
    return WGT_OK;
}
