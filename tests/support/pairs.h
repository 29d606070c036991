/* Operands of the matrix-product tests (test_gpu_matmul, test_gpu_matmul_tc): a host tensor and
 * its device copy with random values, views of both, and the case runner that checks wgt_matmul
 * against wgt_cpu_matmul with the test's own comparison. Set test_rng to the test's seed first. */
#ifndef WGT_TESTS_PAIRS_H
#define WGT_TESTS_PAIRS_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "ops/ops.h"
#include "support/check.h"
#include "support/rng.h"

/* A host tensor and its device copy. */
typedef struct test_pair {
    void *data;       /* the host values (NULL for a view: its owner frees them) */
    wgt_cpu_tensor h; /* over data */
    wgt_tensor *d;
} test_pair;

/* Values in [-1, 1] (ints in [-3, 3]), contiguous. */
static inline test_pair test_pair_make(wgt_context *ctx, wgt_dtype dt, int nd, const int64_t *shape)
{
    test_pair p;
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    p.data = calloc(n ? n : 1, 8);
    p.h = wgt_cpu_tensor_make(p.data, dt, nd, shape);
    for (int64_t i = 0; i < n; i++) {
        if (op_is_int(dt)) wgt_cpu_store_i(&p.h, i, (int64_t)floor(test_uniform(-3, 4)));
        else wgt_cpu_store_f(&p.h, i, test_uniform(-1, 1));
    }
    MUST(wgt_tensor_from_host(ctx, dt, nd, shape, p.data, &p.d));
    return p;
}

static inline void test_pair_drop(test_pair *p)
{
    wgt_tensor_free(p->d);
    free(p->data);
}

/* A view of both: dims d0 and d1 swapped (free its d alone). */
static inline test_pair test_pair_transposed(const test_pair *p, int d0, int d1)
{
    test_pair t = *p;
    int64_t s = t.h.l.shape[d0], st = t.h.l.strides[d0];
    t.h.l.shape[d0] = t.h.l.shape[d1], t.h.l.strides[d0] = t.h.l.strides[d1];
    t.h.l.shape[d1] = s, t.h.l.strides[d1] = st;
    MUST(wgt_tensor_transpose(p->d, d0, d1, &t.d));
    t.data = NULL;
    return t;
}

/* A reference output of y's shape and dtype over new memory *buf (free it). */
static inline wgt_cpu_tensor test_ref_like(const wgt_tensor *y, void **buf)
{
    int64_t n = wgt_tensor_numel(y);
    *buf = calloc(n ? n : 1, 8);
    return wgt_cpu_tensor_make(*buf, wgt_tensor_dtype(y), wgt_tensor_ndim(y), wgt_tensor_shape(y));
}

/* The test's comparison of a result with its reference (K: the product's inner size). */
typedef void (*test_compare_fn)(const char *what, const wgt_tensor *y, const wgt_cpu_tensor *ref, int64_t K);

/* The case runner: wgt_matmul(a, b) against wgt_cpu_matmul of the host operands. */
static inline void test_check_matmul(const char *what, const test_pair *a, const test_pair *b, test_compare_fn cmp)
{
    wgt_tensor *y = NULL;
    wgt_status st = wgt_matmul(a->d, b->d, &y);
    CHECK(st == WGT_OK, "%s: %s", what, wgt_errmsg());
    if (st) return;
    void *buf;
    wgt_cpu_tensor r = test_ref_like(y, &buf);
    MUST(wgt_cpu_matmul(&a->h, &b->h, &r));
    cmp(what, y, &r, a->h.l.shape[a->h.l.ndim - 1]);
    free(buf);
    wgt_tensor_free(y);
}

#endif
