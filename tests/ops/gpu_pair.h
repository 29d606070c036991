/* For the shape and index op tests: each tensor exists twice, on the GPU context under test and on
 * a CPU-reference context (WGT_BACKEND=cpu), built from the same host data through the same views,
 * so running an op on both sides and comparing is a differential test against src/cpu/. */
#ifndef WGT_TESTS_GPU_PAIR_H
#define WGT_TESTS_GPU_PAIR_H

#include <math.h>
#include <string.h>

#include "ops/api.h"
#include "ops/ops.h"
#include "support/check.h"
#include "support/rng.h"

typedef struct pair { wgt_tensor *t[2]; } pair; /* [0] GPU, [1] reference */
static wgt_context *side[2];
static int compared; /* elements compared: a test must compare something */


static void pair_open(void)
{
    MUST(wgt_context_create(NULL, &side[0]));
    wgt_context_options o = {0};
    o.backend = WGT_BACKEND_CPU;
    MUST(wgt_context_create(&o, &side[1]));
}

static void pair_free(pair p) { wgt_tensor_free(p.t[0]), wgt_tensor_free(p.t[1]); }

/* Random values in [lo, hi] (integers floored); floats get a NaN and an inf when specials. */
static pair pair_rand(wgt_dtype dt, int ndim, const int64_t *shape, double lo, double hi, int specials)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    void *data = calloc(n ? n : 1, 8);
    wgt_cpu_tensor h = wgt_cpu_tensor_make(data, dt, 1, &n);
    for (int64_t i = 0; i < n; i++) {
        double v = test_uniform(lo, hi);
        if (op_is_int(dt)) wgt_cpu_store_i(&h, i, (int64_t)floor(v));
        else wgt_cpu_store_f(&h, i, v);
    }
    if (specials && op_is_float(dt) && n > 3) wgt_cpu_store_f(&h, 1, NAN), wgt_cpu_store_f(&h, n - 2, -INFINITY);
    pair p;
    for (int s = 0; s < 2; s++) MUST(wgt_tensor_from_host(side[s], dt, ndim, shape, data, &p.t[s]));
    free(data);
    return p;
}

static pair pair_transpose(pair x, int a, int b)
{
    pair p;
    for (int s = 0; s < 2; s++) MUST(wgt_tensor_transpose(x.t[s], a, b, &p.t[s]));
    return p;
}
static pair pair_narrow(pair x, int dim, int64_t start, int64_t len)
{
    pair p;
    for (int s = 0; s < 2; s++) MUST(wgt_tensor_narrow(x.t[s], dim, start, len, &p.t[s]));
    return p;
}
static inline pair pair_expand(pair x, int ndim, const int64_t *shape)
{
    pair p;
    for (int s = 0; s < 2; s++) MUST(wgt_tensor_expand(x.t[s], ndim, shape, &p.t[s]));
    return p;
}

/* Compare a GPU result with the reference's: same dtype and shape, values within atol + rtol|ref|
 * (NaN matches NaN). Returns the number of mismatches reported (at most 3). */
static int pair_compare(const char *what, const wgt_tensor *g, const wgt_tensor *c, double atol, double rtol)
{
    if (!g || !c) {
        CHECK(0, "%s: missing result", what);
        return 1;
    }
    int nd = wgt_tensor_ndim(g);
    int same = wgt_tensor_dtype(g) == wgt_tensor_dtype(c) && nd == wgt_tensor_ndim(c) &&
               !memcmp(wgt_tensor_shape(g), wgt_tensor_shape(c), sizeof(int64_t) * nd);
    CHECK(same, "%s: dtype or shape differs from the reference's", what);
    if (!same) return 1;
    wgt_dtype dt = wgt_tensor_dtype(g);
    int64_t n = wgt_tensor_numel(g);
    size_t bytes = (size_t)n * wgt_dtype_size(dt);
    void *a = malloc(bytes + 8), *b = malloc(bytes + 8);
    wgt_status s1 = wgt_tensor_to_host(g, a, bytes), s2 = wgt_tensor_to_host(c, b, bytes);
    CHECK(!s1 && !s2, "%s: to_host: %s", what, wgt_errmsg());
    int bad = 0;
    wgt_cpu_tensor ha = wgt_cpu_tensor_make(a, dt, 1, &n), hb = wgt_cpu_tensor_make(b, dt, 1, &n);
    for (int64_t i = 0; !s1 && !s2 && i < n; i++) {
        int ok;
        double x = 0, y = 0;
        if (op_is_int(dt)) {
            int64_t u = wgt_cpu_load_i(&ha, i), v = wgt_cpu_load_i(&hb, i);
            ok = u == v, x = (double)u, y = (double)v;
        } else {
            x = wgt_cpu_load_f(&ha, i), y = wgt_cpu_load_f(&hb, i);
            ok = (isnan(x) && isnan(y)) || x == y || fabs(x - y) <= atol + rtol * fabs(y);
        }
        compared++;
        if (!ok && bad++ < 3) CHECK(0, "%s (%s): element %lld: gpu %.9g, reference %.9g", what, wgt_dtype_name(dt), (long long)i, x, y);
    }
    free(a);
    free(b);
    return bad;
}

/* Run CALL (which uses S as the side, 0 GPU or 1 reference, writing y_[S]) on both sides, expect
 * success on both, and compare. */
#define DIFF(what, atol, rtol, CALL)                                                               \
    do {                                                                                           \
        wgt_tensor *y_[2] = {NULL, NULL};                                                          \
        for (int S = 0; S < 2; S++) {                                                              \
            wgt_status st_ = (CALL);                                                               \
            CHECK(st_ == WGT_OK, "%s (side %d): %s", what, S, wgt_errmsg());                       \
        }                                                                                          \
        if (y_[0] && y_[1]) pair_compare(what, y_[0], y_[1], atol, rtol);                          \
        wgt_tensor_free(y_[0]), wgt_tensor_free(y_[1]);                                            \
    } while (0)

/* DIFF of a call that gives values and indices (CALL writes iv[S] too): the indices are compared
 * as well. */
#define DIFF_IX(what, CALL)                                                                        \
    do {                                                                                           \
        wgt_tensor *iv[2] = {NULL, NULL};                                                          \
        DIFF(what, 0, 0, CALL);                                                                    \
        if (iv[0] && iv[1]) pair_compare(what, iv[0], iv[1], 0, 0);                                \
        wgt_tensor_free(iv[0]), wgt_tensor_free(iv[1]);                                            \
    } while (0)

static const wgt_dtype all_dtypes[] = {WGT_F32, WGT_F16, WGT_BF16, WGT_I32, WGT_U32, WGT_I8, WGT_U8, WGT_BOOL, WGT_I64};
#define N_DTYPES (int)(sizeof all_dtypes / sizeof all_dtypes[0])

static inline double lo_of(wgt_dtype dt) { return dt == WGT_BOOL ? 0 : dt == WGT_U8 || dt == WGT_U32 ? 0 : -100; }
static inline double hi_of(wgt_dtype dt) { return dt == WGT_BOOL ? 2 : 100; }

#endif
