/* Sorting: sort/argsort, topk, kthvalue, median, unique (searchsorted and histc: search.c).
 *
 * Rows along a dim are copied into (value, position) records and sorted with qsort under a total
 * order: the value order (NaN above +inf, -0 equal to +0), then the position, which makes every
 * sort stable whatever qsort does. This is independent of the GPU's bitonic and merge networks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_internal.h"

typedef struct rec {
    double f;    /* floats (NaN flagged in nan) */
    int64_t i;   /* integers */
    int64_t pos; /* position along the dim */
    int nan;
} rec;

/* qsort has no context argument: the order of the sort in progress (C11, one thread). */
static int g_float, g_desc, g_nan_first;

/* -1, 0, 1 for the value order alone. */
static int value_cmp(const rec *a, const rec *b)
{
    if (g_float) {
        int na = a->nan, nb = b->nan;
        if (g_nan_first) na = -na, nb = -nb; /* median: NaN below everything */
        if (na != nb) return na < nb ? -1 : 1;
        if (a->nan) return 0;
        return a->f < b->f ? -1 : a->f > b->f ? 1 : 0; /* -0 == +0 */
    }
    return a->i < b->i ? -1 : a->i > b->i ? 1 : 0;
}

static int rec_cmp(const void *pa, const void *pb)
{
    const rec *a = pa, *b = pb;
    int c = value_cmp(a, b);
    if (g_desc) c = -c;
    if (c) return c;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

static rec load_rec(const wgt_cpu_tensor *x, int64_t at, int64_t pos)
{
    rec r = {0, 0, pos, 0};
    if (wgt_cpu_is_float(x->l.dtype)) {
        r.f = wgt_cpu_load_f(x, at);
        r.nan = isnan(r.f);
    } else {
        r.i = wgt_cpu_load_i(x, at);
    }
    return r;
}

static void store_rec(const wgt_cpu_tensor *x, int64_t at_x, const wgt_cpu_tensor *out, int64_t at)
{
    cpu_copy_elem(x, at_x, out, at);
}

/* Sort every row of x along dim (mode: g_desc, g_nan_first) and call emit(row records) per row.
 * rows are visited over x's other dims in row-major order; base[] gets the row's multi-index with
 * dim 0. */
typedef wgt_status (*row_fn)(void *arg, const rec *r, int64_t n, const int64_t *idx);

static wgt_status for_sorted_rows(const wgt_cpu_tensor *x, int dim, int desc, int nan_first, row_fn fn, void *arg)
{
    int nd = x->l.ndim;
    int64_t n = nd ? x->l.shape[dim] : 1;
    int64_t rows = n ? wgt_layout_numel(&x->l) / n : 0;
    if (rows == 0) return WGT_OK;
    rec *r = malloc((size_t)(n ? n : 1) * sizeof *r);
    if (!r) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "sort: no host memory for a row of %lld", (long long)n);
    int64_t idx[WGT_MAX_DIMS] = {0}, shape[WGT_MAX_DIMS];
    for (int d = 0; d < nd; d++) shape[d] = d == dim ? 1 : x->l.shape[d];
    int64_t step = nd ? x->l.strides[dim] : 0;
    wgt_status st = WGT_OK;
    g_float = wgt_cpu_is_float(x->l.dtype);
    g_desc = desc;
    g_nan_first = nan_first;
    do {
        int64_t at = cpu_offset(&x->l, idx);
        for (int64_t j = 0; j < n; j++) r[j] = load_rec(x, at + j * step, j);
        qsort(r, (size_t)n, sizeof *r, rec_cmp);
        if ((st = fn(arg, r, n, idx))) break;
    } while (nd && cpu_next(idx, shape, nd));
    free(r);
    return st;
}

/* ---- sort, topk, kthvalue, median ----------------------------------------------------------- */

typedef struct pick_arg {
    const wgt_cpu_tensor *x, *values, *indices;
    int dim;
    int64_t first, count; /* positions [first, first + count) of the sorted row */
    int median;           /* the first NaN when the row has one */
} pick_arg;

/* Storage index in out of multi-index o over x's dims (out without dim when it has one dim less). */
static int64_t out_at(const wgt_cpu_tensor *out, const int64_t *o, int nd, int dim)
{
    int64_t at = out->l.offset;
    int k = 0;
    for (int d = 0; d < nd; d++) {
        if (out->l.ndim < nd && d == dim) continue;
        at += o[d] * out->l.strides[k++];
    }
    return at;
}

static wgt_status pick_row(void *arg, const rec *r, int64_t n, const int64_t *idx)
{
    pick_arg *a = arg;
    int nd = a->x->l.ndim;
    int64_t o[WGT_MAX_DIMS];
    memcpy(o, idx, sizeof(int64_t) * nd);
    int64_t step_x = nd ? a->x->l.strides[a->dim] : 0, at_x = cpu_offset(&a->x->l, idx);
    for (int64_t q = 0; q < a->count; q++) {
        int64_t s = a->first + q;
        if (a->median && n && r[0].nan) s = 0; /* sorted NaN-first: r[0] is the first NaN */
        if (nd) o[a->dim] = q;
        if (a->values) store_rec(a->x, at_x + r[s].pos * step_x, a->values, out_at(a->values, o, nd, a->dim));
        if (a->indices) wgt_cpu_store_i(a->indices, out_at(a->indices, o, nd, a->dim), r[s].pos);
    }
    return WGT_OK;
}

/* out (values or indices) must have x's shape with dim of length len (keep) or without dim. */
static wgt_status check_out(const char *op, const wgt_cpu_tensor *x, int dim, int64_t len, int keep,
                            const wgt_cpu_tensor *out, const char *what)
{
    if (!out) return WGT_OK;
    CPU_CHECK(out, what);
    int nd = x->l.ndim, want = keep ? nd : nd - 1, k = 0;
    int ok = out->l.ndim == want;
    for (int d = 0; ok && d < nd; d++) {
        if (d == dim && !keep) continue;
        ok = out->l.shape[k++] == (d == dim ? len : x->l.shape[d]);
    }
    if (!ok) return wgt_error(WGT_ERR_SHAPE, "%s: %s has the wrong shape", op, what);
    if (!strcmp(what, "indices") && (wgt_cpu_is_float(out->l.dtype) || out->l.dtype == WGT_BOOL))
        return wgt_error(WGT_ERR_DTYPE, "%s: indices must be an integer tensor", op);
    return WGT_OK;
}

static wgt_status check_x(const char *op, const wgt_cpu_tensor *x, int dim)
{
    CPU_CHECK(x, "x");
    if (x->l.ndim ? (dim < 0 || dim >= x->l.ndim) : dim != 0)
        return wgt_error(WGT_ERR_SHAPE, "%s: dim %d out of range for %d dims", op, dim, x->l.ndim);
    return WGT_OK;
}

wgt_status wgt_cpu_sort(const wgt_cpu_tensor *x, int dim, int descending, const wgt_cpu_tensor *values,
                        const wgt_cpu_tensor *indices)
{
    CPU_TRY(check_x("sort", x, dim));
    int64_t n = x->l.ndim ? x->l.shape[dim] : 1;
    CPU_TRY(check_out("sort", x, dim, n, 1, values, "values"));
    CPU_TRY(check_out("sort", x, dim, n, 1, indices, "indices"));
    if (!values && !indices) return WGT_OK;
    pick_arg a = {x, values, indices, dim, 0, n, 0};
    return for_sorted_rows(x, dim, descending, 0, pick_row, &a);
}

wgt_status wgt_cpu_topk(const wgt_cpu_tensor *x, int64_t k, int dim, int largest, const wgt_cpu_tensor *values,
                        const wgt_cpu_tensor *indices)
{
    CPU_TRY(check_x("topk", x, dim));
    int64_t n = x->l.ndim ? x->l.shape[dim] : 1;
    if (k < 0 || k > n) return wgt_error(WGT_ERR_SHAPE, "topk: k = %lld outside [0, %lld]", (long long)k, (long long)n);
    CPU_TRY(check_out("topk", x, dim, k, 1, values, "values"));
    CPU_TRY(check_out("topk", x, dim, k, 1, indices, "indices"));
    if (!values && !indices) return WGT_OK;
    pick_arg a = {x, values, indices, dim, 0, k, 0};
    return for_sorted_rows(x, dim, largest, 0, pick_row, &a);
}

wgt_status wgt_cpu_kthvalue(const wgt_cpu_tensor *x, int64_t k, int dim, int keepdim, const wgt_cpu_tensor *values,
                            const wgt_cpu_tensor *indices)
{
    CPU_TRY(check_x("kthvalue", x, dim));
    int64_t n = x->l.ndim ? x->l.shape[dim] : 1;
    if (k < 1 || k > n) return wgt_error(WGT_ERR_SHAPE, "kthvalue: k = %lld outside [1, %lld]", (long long)k, (long long)n);
    int keep = keepdim || !x->l.ndim;
    CPU_TRY(check_out("kthvalue", x, dim, 1, keep, values, "values"));
    CPU_TRY(check_out("kthvalue", x, dim, 1, keep, indices, "indices"));
    if (!values && !indices) return WGT_OK;
    pick_arg a = {x, values, indices, dim, k - 1, 1, 0};
    return for_sorted_rows(x, dim, 0, 0, pick_row, &a);
}

wgt_status wgt_cpu_median(const wgt_cpu_tensor *x, int dim, int keepdim, const wgt_cpu_tensor *values,
                          const wgt_cpu_tensor *indices)
{
    CPU_TRY(check_x("median", x, dim));
    int64_t n = x->l.ndim ? x->l.shape[dim] : 1;
    if (n == 0) return wgt_error(WGT_ERR_SHAPE, "median: dim %d is empty", dim);
    int keep = keepdim || !x->l.ndim;
    CPU_TRY(check_out("median", x, dim, 1, keep, values, "values"));
    CPU_TRY(check_out("median", x, dim, 1, keep, indices, "indices"));
    if (!values && !indices) return WGT_OK;
    pick_arg a = {x, values, indices, dim, (n - 1) / 2, 1, 1};
    return for_sorted_rows(x, dim, 0, 1, pick_row, &a);
}

/* ---- unique ----------------------------------------------------------------------------------- */

typedef struct uniq_arg {
    const wgt_cpu_tensor *x, *values, *inverse, *counts, *first;
    int64_t count;
} uniq_arg;

static wgt_status uniq_row(void *arg, const rec *r, int64_t n, const int64_t *idx)
{
    (void)idx;
    uniq_arg *a = arg;
    int64_t g = -1, start = 0;
    int contig = wgt_layout_is_contiguous(&a->x->l);
    for (int64_t i = 0; i <= n; i++) {
        /* a group ends before i (NaN never equals anything, not even a NaN) */
        int new_group = i == n || i == 0 || r[i].nan || value_cmp(&r[i], &r[i - 1]) != 0;
        if (!new_group) {
            if (a->inverse) wgt_cpu_store_i(a->inverse, cpu_at(a->inverse, r[i].pos), g);
            continue;
        }
        if (g >= 0 && a->counts) wgt_cpu_store_i(a->counts, cpu_at(a->counts, g), i - start);
        if (i == n) break;
        g++;
        start = i;
        if (a->values) store_rec(a->x, cpu_at_c(a->x, r[i].pos, contig), a->values, cpu_at(a->values, g));
        if (a->first) wgt_cpu_store_i(a->first, cpu_at(a->first, g), r[i].pos);
        if (a->inverse) wgt_cpu_store_i(a->inverse, cpu_at(a->inverse, r[i].pos), g);
    }
    a->count = g + 1;
    return WGT_OK;
}

wgt_status wgt_cpu_unique(const wgt_cpu_tensor *x, const wgt_cpu_tensor *values, const wgt_cpu_tensor *inverse,
                          const wgt_cpu_tensor *counts, const wgt_cpu_tensor *first, int64_t *count)
{
    CPU_CHECK(x, "x");
    int64_t n = wgt_layout_numel(&x->l);
    /* the flattened x: a 1-D view when x is contiguous, else records read through the layout */
    uniq_arg a = {x, values, inverse, counts, first, 0};
    if (inverse) {
        CPU_CHECK(inverse, "inverse");
        if (wgt_layout_numel(&inverse->l) != n) return wgt_error(WGT_ERR_SHAPE, "unique: inverse must have x's size");
    }
    /* Count first when only the count is wanted; the outputs need exactly that many elements. */
    rec *r = malloc((size_t)(n ? n : 1) * sizeof *r);
    if (!r) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "unique: no host memory for %lld elements", (long long)n);
    int contig = wgt_layout_is_contiguous(&x->l);
    for (int64_t i = 0; i < n; i++) r[i] = load_rec(x, cpu_at_c(x, i, contig), i);
    g_float = wgt_cpu_is_float(x->l.dtype);
    g_desc = 0;
    g_nan_first = 0;
    qsort(r, (size_t)n, sizeof *r, rec_cmp);
    uniq_arg probe = {x, NULL, NULL, NULL, NULL, 0};
    uniq_row(&probe, r, n, NULL);
    const wgt_cpu_tensor *outs[3] = {values, counts, first};
    const char *names[3] = {"values", "counts", "first"};
    wgt_status st = WGT_OK;
    for (int i = 0; i < 3 && !st; i++) {
        if (!outs[i]) continue;
        if ((st = wgt_cpu_check(outs[i], names[i]))) break;
        if (wgt_layout_numel(&outs[i]->l) != probe.count)
            st = wgt_error(WGT_ERR_SHAPE, "unique: %s has %lld elements, want %lld", names[i],
                           (long long)wgt_layout_numel(&outs[i]->l), (long long)probe.count);
    }
    if (!st) st = uniq_row(&a, r, n, NULL);
    free(r);
    if (count) *count = probe.count;
    return st;
}
