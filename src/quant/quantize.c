/* f32 -> file types: the quantisers `wgt convert` uses. They follow ggml's reference quantisers
 * (quantize_row_*_ref in ggml-quants.c: the same scale choice and rounding), re-derived here, so
 * files we write dequantise with the error GGML's own files have. Rounding is to nearest even
 * (lrintf), as ggml's nearest_int trick. */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "quant/half.h"
#include "quant/quant.h"

#define QK_K 256
#define GROUP_MAX_EPS 1e-15f

static inline int nearest_int(float f) { return (int)lrintf(f); }
static inline void wr16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }

/* Q8_0: d = max|x| / 127, q = round(x / d). */
static void q8_0_block(const float *x, uint8_t *b)
{
    float amax = 0;
    for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
    float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f;
    wr16(b, wgt_f32_to_f16(d));
    for (int j = 0; j < 32; j++) b[2 + j] = (uint8_t)(int8_t)nearest_int(x[j] * id);
}

/* Q4_0: the value of largest magnitude maps to -8 exactly: d = max / -8, q = x/d + 8.5 truncated,
 * at most 15. */
static void q4_0_block(const float *x, uint8_t *b)
{
    float amax = 0, max = 0;
    for (int j = 0; j < 32; j++)
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    float d = max / -8.0f, id = d ? 1.0f / d : 0.0f;
    wr16(b, wgt_f32_to_f16(d));
    for (int j = 0; j < 16; j++) {
        int lo = (int)(int8_t)(x[j] * id + 8.5f), hi = (int)(int8_t)(x[j + 16] * id + 8.5f);
        lo = lo > 15 ? 15 : lo;
        hi = hi > 15 ? 15 : hi;
        b[2 + j] = (uint8_t)(lo | hi << 4);
    }
}

/* Scale and min for n values on levels 0..nmax, weighted least squares over a few candidate
 * scales (ggml's make_qkx2_quants). Returns the scale; *the_min gets -min (>= 0). */
static float make_qkx2_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L,
                              float *the_min, uint8_t *Laux, float rmin, float rdelta, int nstep)
{
    float min = x[0], max = x[0], sum_w = weights[0], sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += weights[i];
        sum_x += weights[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        memset(L, 0, (size_t)n);
        *the_min = -min;
        return 0.0f;
    }
    float iscale = (float)nmax / (max - min), scale = 1.0f / iscale, best_error = 0;
    for (int i = 0; i < n; i++) {
        int l = nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t)(l < 0 ? 0 : l > nmax ? nmax : l);
        float diff = scale * (float)L[i] + min - x[i];
        best_error += weights[i] * (diff * diff);
    }
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * (float)is + (float)nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            int l = nearest_int(iscale * (x[i] - min));
            l = l < 0 ? 0 : l > nmax ? nmax : l;
            Laux[i] = (uint8_t)l;
            sum_l += weights[i] * (float)l;
            sum_l2 += weights[i] * (float)l * (float)l; /* ggml's order of float operations */
            sum_xl += weights[i] * (float)l * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; i++) {
                float diff = this_scale * (float)Laux[i] + this_min - x[i];
                cur_error += weights[i] * (diff * diff);
            }
            if (cur_error < best_error) {
                memcpy(L, Laux, (size_t)n);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

/* Q4_K: 8 sub-blocks of 32, each with a 6-bit scale and min relative to the f16 super-scales. */
static void q4_k_block(const float *x, uint8_t *b)
{
    uint8_t L[QK_K], Laux[32];
    float weights[32], mins[8], scales[8];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; j++) {
        float sum_x2 = 0;
        for (int l = 0; l < 32; l++) sum_x2 += x[32 * j + l] * x[32 * j + l];
        float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; l++) weights[l] = av_x + fabsf(x[32 * j + l]);
        scales[j] = make_qkx2_quants(32, 15, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, -1.0f,
                                     0.1f, 20);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
    float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
    uint8_t *sc = b + 4;
    memset(sc, 0, 12);
    for (int j = 0; j < 8; j++) {
        int ls = nearest_int(inv_scale * scales[j]), lm = nearest_int(inv_min * mins[j]);
        ls = ls > 63 ? 63 : ls;
        lm = lm > 63 ? 63 : lm;
        if (j < 4) {
            sc[j] = (uint8_t)ls;
            sc[j + 4] = (uint8_t)lm;
        } else {
            sc[j + 4] = (uint8_t)((ls & 0xf) | (lm & 0xf) << 4);
            sc[j - 4] |= (uint8_t)((ls >> 4) << 6);
            sc[j] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    uint16_t dh = wgt_f32_to_f16(max_scale / 63.0f), mh = wgt_f32_to_f16(max_min / 63.0f);
    wr16(b, dh);
    wr16(b + 2, mh);
    float d_all = wgt_f16_to_f32(dh), m_all = wgt_f16_to_f32(mh);
    for (int j = 0; j < 8; j++) {
        int s, m;
        if (j < 4) {
            s = sc[j] & 63;
            m = sc[j + 4] & 63;
        } else {
            s = (sc[j + 4] & 0xf) | ((sc[j - 4] >> 6) << 4);
            m = (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4);
        }
        float d = d_all * (float)s;
        if (!d) continue;
        float dm = m_all * (float)m;
        for (int ii = 0; ii < 32; ii++) {
            int l = nearest_int((x[32 * j + ii] + dm) / d);
            L[32 * j + ii] = (uint8_t)(l < 0 ? 0 : l > 15 ? 15 : l);
        }
    }
    uint8_t *q = b + 16;
    for (int j = 0; j < QK_K; j += 64, q += 32)
        for (int l = 0; l < 32; l++) q[l] = (uint8_t)(L[j + l] | L[j + l + 32] << 4);
}

/* Symmetric scale for n values on levels -nmax..nmax-1, refined over 18 nearby candidate scales
 * with weights x^2 (ggml's make_qx_quants with rmse_type 1). L gets level + nmax. */
static float make_qx_quants(int n, int nmax, const float *x, int8_t *L)
{
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++)
        if (fabsf(x[i]) > amax) {
            amax = fabsf(x[i]);
            max = x[i];
        }
    if (amax < GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = -(float)nmax / max, sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = nearest_int(iscale * x[i]);
        l = l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l;
        L[i] = (int8_t)(l + nmax);
        float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f, best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        iscale = -((float)nmax + 0.1f * (float)is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; i++) {
            int l = nearest_int(iscale * x[i]);
            l = l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l;
            float w = x[i] * x[i];
            sumlx += w * x[i] * (float)l;
            suml2 += w * (float)l * (float)l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++) {
                int l = nearest_int(iscale * x[i]);
                L[i] = (int8_t)(nmax + (l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l));
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Q6_K: 16 groups of 16 with int8 scales relative to one f16 super-scale; 6-bit values. */
static void q6_k_block(const float *x, uint8_t *b)
{
    int8_t L[QK_K];
    float scales[16], max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < 16; ib++) {
        float s = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
        scales[ib] = s;
        if (fabsf(s) > max_abs_scale) {
            max_abs_scale = fabsf(s);
            max_scale = s;
        }
    }
    if (max_abs_scale < GROUP_MAX_EPS) {
        memset(b, 0, 210);
        return;
    }
    float iscale = -128.0f / max_scale;
    uint16_t dh = wgt_f32_to_f16(1.0f / iscale);
    wr16(b + 208, dh);
    int8_t *sc = (int8_t *)(b + 192);
    for (int ib = 0; ib < 16; ib++) {
        int v = nearest_int(iscale * scales[ib]);
        sc[ib] = (int8_t)(v > 127 ? 127 : v);
    }
    float d_all = wgt_f16_to_f32(dh);
    for (int j = 0; j < 16; j++) {
        float d = d_all * (float)sc[j];
        if (!d) continue;
        for (int ii = 0; ii < 16; ii++) {
            int l = nearest_int(x[16 * j + ii] / d);
            l = l < -32 ? -32 : l > 31 ? 31 : l;
            L[16 * j + ii] = (int8_t)(l + 32);
        }
    }
    uint8_t *ql = b, *qh = b + 128;
    for (int j = 0; j < QK_K; j += 128, ql += 64, qh += 32)
        for (int l = 0; l < 32; l++) {
            int q1 = L[j + l] & 0xf, q2 = L[j + l + 32] & 0xf, q3 = L[j + l + 64] & 0xf,
                q4 = L[j + l + 96] & 0xf;
            ql[l] = (uint8_t)(q1 | q3 << 4);
            ql[l + 32] = (uint8_t)(q2 | q4 << 4);
            qh[l] = (uint8_t)((L[j + l] >> 4) | (L[j + l + 32] >> 4) << 2 | (L[j + l + 64] >> 4) << 4 |
                              (L[j + l + 96] >> 4) << 6);
        }
}

int wgt_ftype_can_quantize(wgt_ftype type)
{
    return type == WGT_FTYPE_F32 || type == WGT_FTYPE_F16 || type == WGT_FTYPE_BF16 ||
           type == WGT_FTYPE_Q8_0 || type == WGT_FTYPE_Q4_0 || type == WGT_FTYPE_Q4_K ||
           type == WGT_FTYPE_Q6_K;
}

wgt_status wgt_quantize(wgt_ftype type, const float *src, void *dst, int64_t n)
{
    uint64_t bytes;
    wgt_status st = wgt_ftype_bytes(type, n, &bytes);
    if (st) return st;
    if (!wgt_ftype_can_quantize(type))
        return wgt_error(WGT_ERR_UNSUPPORTED, "quantising to %s is not implemented",
                         wgt_ftype_name(type));
    uint8_t *d = dst;
    uint32_t be = wgt_ftype_block_elems(type), bb = wgt_ftype_block_bytes(type);
    for (int64_t i = 0; i < n / be; i++, src += be, d += bb) {
        switch (type) {
        case WGT_FTYPE_F32: memcpy(d, src, 4); break;
        case WGT_FTYPE_F16: wr16(d, wgt_f32_to_f16(*src)); break;
        case WGT_FTYPE_BF16: wr16(d, wgt_f32_to_bf16(*src)); break;
        case WGT_FTYPE_Q8_0: q8_0_block(src, d); break;
        case WGT_FTYPE_Q4_0: q4_0_block(src, d); break;
        case WGT_FTYPE_Q4_K: q4_k_block(src, d); break;
        case WGT_FTYPE_Q6_K: q6_k_block(src, d); break;
        default: return wgt_error(WGT_ERR_INTERNAL, "quantise: type %d slipped through", type);
        }
    }
    return WGT_OK;
}
