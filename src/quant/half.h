/* f16 and bf16 <-> f32 conversions, exact and round-to-nearest-even, without hardware help. */
#ifndef WGT_QUANT_HALF_H
#define WGT_QUANT_HALF_H

#include <stdint.h>
#include <string.h>

static inline float wgt_bits_to_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint32_t wgt_f32_to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float wgt_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return wgt_bits_to_f32(sign | 0x7f800000u | (man << 13)); /* inf, nan */
    if (exp == 0) {
        /* subnormal: man * 2^-24, exact in f32 */
        float f = (float)man * (1.0f / 16777216.0f);
        return sign ? -f : f;
    }
    return wgt_bits_to_f32(sign | ((exp + 112) << 23) | (man << 13));
}

static inline uint16_t wgt_f32_to_f16(float f)
{
    uint32_t x = wgt_f32_to_bits(f), sign = (x >> 16) & 0x8000, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00 | ((ax >> 13) & 0x3ff)); /* nan stays nan */
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00);                      /* rounds to inf */
    if (ax < 0x38800000u) {
        /* result is subnormal (or zero): value / 2^-24, rounded to nearest even */
        if (ax < 0x33000000u) return (uint16_t)sign; /* below half the smallest subnormal */
        uint32_t e = ax >> 23, m = (ax & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - e; /* 14..24 */
        uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t r = ax - 0x38000000u; /* rebias exponent 127 -> 15 (in the f32 bit positions) */
    uint32_t q = r >> 13, rem = r & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (q & 1))) q++;
    return (uint16_t)(sign | q);
}

static inline float wgt_bf16_to_f32(uint16_t h) { return wgt_bits_to_f32((uint32_t)h << 16); }

static inline uint16_t wgt_f32_to_bf16(float f)
{
    uint32_t x = wgt_f32_to_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40); /* quiet nan */
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

#endif
