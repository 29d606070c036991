/* Element access for every dtype, layout checks, broadcasting (cast, copy and full, the elementwise
 * family's, are in elementwise.c). */
#include "cpu/cpu_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int wgt_cpu_is_float(wgt_dtype dtype)
{
    return dtype == WGT_F32 || dtype == WGT_F16 || dtype == WGT_BF16;
}

/* Round |v| (finite, > 0 handled by the caller) to a binary format with mbits fraction bits and
 * ebits exponent bits; returns the bits without sign. Each step is exact except nearbyint, which
 * rounds to nearest even in the default rounding mode: one rounding from double. */
static uint32_t round_to_format(double a, int mbits, int ebits)
{
    int emax = (1 << (ebits - 1)) - 1;
    int emin = 1 - emax;
    uint32_t inf = (uint32_t)((1 << ebits) - 1) << mbits;
    if (isnan(a)) return inf | (1u << (mbits - 1));
    if (a >= ldexp(2.0 - ldexp(1.0, -mbits - 1), emax)) return inf; /* rounds past the max */
    if (a < ldexp(1.0, emin)) /* subnormal: a multiple of 2^(emin - mbits) */
        return (uint32_t)nearbyint(ldexp(a, mbits - emin)); /* may reach the smallest normal */
    int e;
    frexp(a, &e);
    e -= 1; /* a = 1.f * 2^e */
    double m = nearbyint(ldexp(a, mbits - e)); /* in [2^mbits, 2^(mbits+1)] */
    if (m >= ldexp(1.0, mbits + 1)) m = ldexp(1.0, mbits), e++;
    if (e > emax) return inf;
    return ((uint32_t)(e + emax) << mbits) | ((uint32_t)m - (1u << mbits));
}

uint16_t wgt_cpu_f64_to_f16(double v)
{
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    if (isnan(v)) return 0x7e00;
    return sign | (uint16_t)round_to_format(fabs(v), 10, 5);
}

uint16_t wgt_cpu_f64_to_bf16(double v)
{
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    if (isnan(v)) return 0x7fc0;
    return sign | (uint16_t)round_to_format(fabs(v), 7, 8);
}

static double from_format(uint32_t bits, int mbits, int ebits)
{
    int emax = (1 << (ebits - 1)) - 1;
    uint32_t e = (bits >> mbits) & ((1u << ebits) - 1), m = bits & ((1u << mbits) - 1);
    double s = (bits >> (mbits + ebits)) & 1 ? -1.0 : 1.0;
    if (e == (1u << ebits) - 1) return m ? NAN : s * INFINITY;
    if (e == 0) return s * ldexp((double)m, 1 - emax - mbits);
    return s * ldexp((double)(m | (1u << mbits)), (int)e - emax - mbits);
}

double wgt_cpu_f16_to_f64(uint16_t h) { return from_format(h, 10, 5); }
double wgt_cpu_bf16_to_f64(uint16_t h) { return from_format(h, 7, 8); }

double wgt_cpu_round_to(wgt_dtype dtype, double v)
{
    switch (dtype) {
    case WGT_F32: return (double)(float)v;
    case WGT_F16: return wgt_cpu_f16_to_f64(wgt_cpu_f64_to_f16(v));
    case WGT_BF16: return wgt_cpu_bf16_to_f64(wgt_cpu_f64_to_bf16(v));
    default: return v;
    }
}

#define ELEM(t, at, type) ((type *)(t)->data + (at))

double wgt_cpu_load_f(const wgt_cpu_tensor *t, int64_t at)
{
    switch (t->l.dtype) {
    case WGT_F32: return *ELEM(t, at, float);
    case WGT_F16: return wgt_cpu_f16_to_f64(*ELEM(t, at, uint16_t));
    case WGT_BF16: return wgt_cpu_bf16_to_f64(*ELEM(t, at, uint16_t));
    default: return (double)wgt_cpu_load_i(t, at);
    }
}

int64_t wgt_cpu_load_i(const wgt_cpu_tensor *t, int64_t at)
{
    switch (t->l.dtype) {
    case WGT_I32: return *ELEM(t, at, int32_t);
    case WGT_U32: return *ELEM(t, at, uint32_t);
    case WGT_I8: return *ELEM(t, at, int8_t);
    case WGT_U8: return *ELEM(t, at, uint8_t);
    case WGT_BOOL: return *ELEM(t, at, uint8_t) != 0;
    case WGT_I64: {
        int64_t v;
        memcpy(&v, ELEM(t, at, int64_t), 8);
        return v;
    }
    default: {
        double v = wgt_cpu_load_f(t, at);
        if (isnan(v)) return 0;
        if (v >= 9223372036854775807.0) return INT64_MAX;
        if (v <= -9223372036854775808.0) return INT64_MIN;
        return (int64_t)v;
    }
    }
}

/* Saturating float -> integer of [lo, hi], truncating toward zero, NaN -> 0. */
static int64_t sat(double v, double lo, double hi)
{
    if (isnan(v)) return 0;
    if (v <= lo) return (int64_t)lo;
    if (v >= hi) return (int64_t)hi;
    return (int64_t)v;
}

void wgt_cpu_store_f(const wgt_cpu_tensor *t, int64_t at, double v)
{
    switch (t->l.dtype) {
    case WGT_F32: *ELEM(t, at, float) = (float)v; return;
    case WGT_F16: *ELEM(t, at, uint16_t) = wgt_cpu_f64_to_f16(v); return;
    case WGT_BF16: *ELEM(t, at, uint16_t) = wgt_cpu_f64_to_bf16(v); return;
    case WGT_I32: *ELEM(t, at, int32_t) = (int32_t)sat(v, INT32_MIN, INT32_MAX); return;
    case WGT_U32: *ELEM(t, at, uint32_t) = (uint32_t)sat(v, 0, UINT32_MAX); return;
    case WGT_I8: *ELEM(t, at, int8_t) = (int8_t)sat(v, INT8_MIN, INT8_MAX); return;
    case WGT_U8: *ELEM(t, at, uint8_t) = (uint8_t)sat(v, 0, UINT8_MAX); return;
    case WGT_BOOL: *ELEM(t, at, uint8_t) = v != 0; return;
    case WGT_I64: {
        /* 2^63 is exactly representable; anything at or past it saturates. */
        int64_t i = isnan(v) ? 0 : v >= 9223372036854775808.0 ? INT64_MAX
                   : v <= -9223372036854775808.0 ? INT64_MIN : (int64_t)v;
        memcpy(ELEM(t, at, int64_t), &i, 8);
        return;
    }
    default: return;
    }
}

void wgt_cpu_store_i(const wgt_cpu_tensor *t, int64_t at, int64_t v)
{
    switch (t->l.dtype) {
    case WGT_F32: case WGT_F16: case WGT_BF16: wgt_cpu_store_f(t, at, (double)v); return;
    case WGT_I32: *ELEM(t, at, int32_t) = (int32_t)(uint32_t)v; return; /* wraps */
    case WGT_U32: *ELEM(t, at, uint32_t) = (uint32_t)v; return;
    case WGT_I8: *ELEM(t, at, int8_t) = (int8_t)(uint8_t)v; return;
    case WGT_U8: *ELEM(t, at, uint8_t) = (uint8_t)v; return;
    case WGT_BOOL: *ELEM(t, at, uint8_t) = v != 0; return;
    case WGT_I64: memcpy(ELEM(t, at, int64_t), &v, 8); return;
    default: return;
    }
}

wgt_cpu_tensor wgt_cpu_tensor_make(void *data, wgt_dtype dtype, int ndim, const int64_t *shape)
{
    wgt_cpu_tensor t;
    t.data = data;
    wgt_layout_contiguous(&t.l, dtype, ndim, shape);
    return t;
}

const char *cpu_shape_str(const wgt_layout *l, char *buf, size_t size)
{
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < l->ndim && n < size; d++)
        n += (size_t)snprintf(buf + n, size - n, "%s%lld", d ? ", " : "", (long long)l->shape[d]);
    if (n < size) snprintf(buf + n, size - n, "]");
    return buf;
}

int cpu_same_shape(const wgt_layout *a, const wgt_layout *b)
{
    if (a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return 0;
    return 1;
}

wgt_status wgt_cpu_check(const wgt_cpu_tensor *t, const char *what)
{
    if (!t) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: %s: missing tensor", what);
    if ((unsigned)t->l.dtype >= WGT_DTYPE_COUNT)
        return wgt_error(WGT_ERR_DTYPE, "cpu: %s: unknown dtype %d", what, (int)t->l.dtype);
    if (t->l.ndim < 0 || t->l.ndim > WGT_MAX_DIMS)
        return wgt_error(WGT_ERR_SHAPE, "cpu: %s: %d dimensions (0 to %d allowed)", what, t->l.ndim,
                         WGT_MAX_DIMS);
    if (t->l.offset < 0) return wgt_error(WGT_ERR_SHAPE, "cpu: %s: negative offset", what);
    for (int d = 0; d < t->l.ndim; d++) {
        if (t->l.shape[d] < 0)
            return wgt_error(WGT_ERR_SHAPE, "cpu: %s: dimension %d has size %lld", what, d,
                             (long long)t->l.shape[d]);
        if (t->l.strides[d] < 0)
            return wgt_error(WGT_ERR_SHAPE, "cpu: %s: dimension %d has negative stride %lld", what,
                             d, (long long)t->l.strides[d]);
    }
    if (!t->data && wgt_layout_numel(&t->l) > 0)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: %s: no data", what);
    return WGT_OK;
}

wgt_status wgt_cpu_broadcast_to(const wgt_layout *in, int ndim, const int64_t *shape,
                                wgt_layout *res, const char *what)
{
    char b1[128], b2[128];
    if (in->ndim > ndim) goto bad;
    *res = *in;
    res->ndim = ndim;
    for (int d = ndim - 1, s = in->ndim - 1; d >= 0; d--, s--) {
        int64_t n = s >= 0 ? in->shape[s] : 1, st = s >= 0 ? in->strides[s] : 0;
        if (n == shape[d]) res->strides[d] = n == 1 ? 0 : st;
        else if (n == 1) res->strides[d] = 0;
        else goto bad;
        res->shape[d] = shape[d];
    }
    for (int d = ndim; d < WGT_MAX_DIMS; d++) res->shape[d] = 1, res->strides[d] = 0;
    return WGT_OK;
bad : {
    wgt_layout to = *in;
    to.ndim = ndim;
    for (int d = 0; d < ndim && d < WGT_MAX_DIMS; d++) to.shape[d] = shape[d];
    return wgt_error(WGT_ERR_SHAPE, "cpu: %s of shape %s does not broadcast to %s", what,
                     cpu_shape_str(in, b1, sizeof b1), cpu_shape_str(&to, b2, sizeof b2));
}
}

wgt_status cpu_broadcast_view(const wgt_cpu_tensor *t, const wgt_cpu_tensor *out, const char *what,
                              wgt_cpu_tensor *view)
{
    CPU_CHECK(t, what);
    view->data = t->data;
    return wgt_cpu_broadcast_to(&t->l, out->l.ndim, out->l.shape, &view->l, what);
}

wgt_status cpu_check_index_dtype(const wgt_cpu_tensor *t, const char *what)
{
    CPU_CHECK(t, what);
    if (wgt_cpu_is_float(t->l.dtype) || t->l.dtype == WGT_BOOL)
        return wgt_error(WGT_ERR_DTYPE, "cpu: %s must be an integer tensor, not %s", what,
                         wgt_dtype_name(t->l.dtype));
    return WGT_OK;
}

wgt_status cpu_wrap_index(int64_t v, int64_t n, const char *what, int64_t *res)
{
    if (v < -n || v >= n)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cpu: %s: index %lld out of range [%lld, %lld)",
                         what, (long long)v, (long long)-n, (long long)n);
    *res = v < 0 ? v + n : v;
    return WGT_OK;
}
