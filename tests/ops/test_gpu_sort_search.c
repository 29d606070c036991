/* Sorting and searching on the GPU: sort/argsort, topk, kthvalue, median, unique, searchsorted,
 * bucketize, histc.
 *  - Small cases with results worked out by hand from PyTorch's documented semantics (stable sort,
 *    NaN above +inf, -0 equal to +0, lower median, the first NaN for median, histc's edges), run
 *    on both the GPU and the CPU reference: the reference is checked too, not only trusted.
 *  - Differential runs against the reference (src/cpu/sort.c, qsort under a total order) in every
 *    dtype, along the last dim and dim 0, on transposed views, empty and one-element inputs.
 *  - Long rows: a [70000] sort (tiles then merge passes), topk of 50 from [150000] (three tile
 *    passes), many short rows; each checked sorted and a permutation on its own as well.
 *  - i64 with keys over the whole 64-bit range (values a 32-bit key would tie or misorder), ties,
 *    rows past one tile, an i64 sorter for searchsorted.
 *  - Bad arguments return statuses. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_pair.h"

/* ---- hand-checked cases -------------------------------------------------------------------- */

static void host_of(const wgt_tensor *t, double *out)
{
    int64_t n = wgt_tensor_numel(t);
    wgt_dtype dt = wgt_tensor_dtype(t);
    void *buf = malloc((size_t)n * 8 + 8);
    MUST(wgt_tensor_to_host(t, buf, (size_t)n * wgt_dtype_size(dt)));
    wgt_cpu_tensor h = wgt_cpu_tensor_make(buf, dt, 1, &n);
    for (int64_t i = 0; i < n; i++) out[i] = op_is_int(dt) ? (double)wgt_cpu_load_i(&h, i) : wgt_cpu_load_f(&h, i);
    free(buf);
}

/* got (n values) equals want; NaN matches NaN, and the sign of zero must match where signed. */
static void expect(const char *what, int side, const wgt_tensor *t, const double *want, int n, int signed_zero)
{
    double got[64];
    CHECK(t && wgt_tensor_numel(t) == n, "%s (side %d): %lld elements, want %d", what, side,
          t ? (long long)wgt_tensor_numel(t) : -1LL, n);
    if (!t || wgt_tensor_numel(t) != n) return;
    host_of(t, got);
    for (int i = 0; i < n; i++) {
        int ok = (isnan(got[i]) && isnan(want[i])) || (got[i] == want[i] && (!signed_zero || signbit(got[i]) == signbit(want[i])));
        CHECK(ok, "%s (side %d): element %d is %g, want %g", what, side, i, got[i], want[i]);
        compared++;
    }
}

static pair pair_from(wgt_dtype dt, int ndim, const int64_t *shape, const double *v)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    void *data = calloc((size_t)n + 1, 8);
    wgt_cpu_tensor h = wgt_cpu_tensor_make(data, dt, 1, &n);
    for (int64_t i = 0; i < n; i++) {
        if (op_is_int(dt)) wgt_cpu_store_i(&h, i, (int64_t)v[i]);
        else wgt_cpu_store_f(&h, i, v[i]);
    }
    pair p;
    for (int s = 0; s < 2; s++) MUST(wgt_tensor_from_host(side[s], dt, ndim, shape, data, &p.t[s]));
    free(data);
    return p;
}

static void hand_checked(void)
{
    const double x[7] = {3, NAN, 1, -0.0, 0.0, 2, 1};
    int64_t n7 = 7;
    const wgt_dtype fl[3] = {WGT_F32, WGT_F16, WGT_BF16};
    for (int f = 0; f < 3; f++) {
        pair p = pair_from(fl[f], 1, &n7, x);
        for (int s = 0; s < 2; s++) {
            wgt_tensor *v, *i;
            MUST(wgt_sort(p.t[s], 0, 0, &v, &i));
            expect("sort values", s, v, (double[]){-0.0, 0.0, 1, 1, 2, 3, NAN}, 7, 1);
            expect("sort indices", s, i, (double[]){3, 4, 2, 6, 5, 0, 1}, 7, 0);
            wgt_tensor_free(v), wgt_tensor_free(i);
            MUST(wgt_sort(p.t[s], -1, 1, &v, &i));
            expect("sort descending values", s, v, (double[]){NAN, 3, 2, 1, 1, -0.0, 0.0}, 7, 1);
            expect("sort descending indices", s, i, (double[]){1, 0, 5, 2, 6, 3, 4}, 7, 0);
            wgt_tensor_free(v), wgt_tensor_free(i);
            MUST(wgt_topk(p.t[s], 3, 0, 1, 1, &v, &i));
            expect("topk largest", s, i, (double[]){1, 0, 5}, 3, 0);
            wgt_tensor_free(v), wgt_tensor_free(i);
            MUST(wgt_topk(p.t[s], 4, 0, 0, 1, &v, &i));
            expect("topk smallest", s, i, (double[]){3, 4, 2, 6}, 4, 0);
            wgt_tensor_free(v), wgt_tensor_free(i);
            MUST(wgt_kthvalue(p.t[s], 6, 0, 0, &v, &i));
            expect("kthvalue 6", s, v, (double[]){3}, 1, 0);
            expect("kthvalue 6 index", s, i, (double[]){0}, 1, 0);
            wgt_tensor_free(v), wgt_tensor_free(i);
            /* torch.median of a row with a NaN: the NaN and its index */
            MUST(wgt_median(p.t[s], 0, 1, &v, &i));
            expect("median with NaN", s, v, (double[]){NAN}, 1, 0);
            expect("median with NaN index", s, i, (double[]){1}, 1, 0);
            CHECK(wgt_tensor_ndim(v) == 1, "median keepdim: %d dims", wgt_tensor_ndim(v));
            wgt_tensor_free(v), wgt_tensor_free(i);
            wgt_tensor *u, *inv, *cnt, *first;
            MUST(wgt_unique(p.t[s], &u, &inv, &cnt, &first));
            expect("unique values", s, u, (double[]){0, 1, 2, 3, NAN}, 5, 0);
            expect("unique inverse", s, inv, (double[]){3, 4, 1, 0, 0, 2, 1}, 7, 0);
            expect("unique counts", s, cnt, (double[]){2, 2, 1, 1, 1}, 5, 0);
            expect("unique first", s, first, (double[]){3, 2, 5, 0, 1}, 5, 0);
            wgt_tensor_free(u), wgt_tensor_free(inv), wgt_tensor_free(cnt), wgt_tensor_free(first);
        }
        pair_free(p);
    }
    /* lower median of an even row without NaN: [4, 1, 3, 2] -> 2 at index 3 */
    int64_t n4 = 4;
    pair m = pair_from(WGT_I32, 1, &n4, (double[]){4, 1, 3, 2});
    for (int s = 0; s < 2; s++) {
        wgt_tensor *v, *i;
        MUST(wgt_median(m.t[s], 0, 0, &v, &i));
        expect("median i32", s, v, (double[]){2}, 1, 0);
        expect("median i32 index", s, i, (double[]){3}, 1, 0);
        CHECK(wgt_tensor_ndim(v) == 0, "median without keepdim: %d dims", wgt_tensor_ndim(v));
        wgt_tensor_free(v), wgt_tensor_free(i);
    }
    pair_free(m);
    /* searchsorted: torch.searchsorted([1, 3, 5, 7, 9], [3, 6, 9]) = [1, 3, 4]; right: [2, 3, 5] */
    int64_t n5 = 5, n3 = 3;
    pair seq = pair_from(WGT_F32, 1, &n5, (double[]){1, 3, 5, 7, 9});
    pair val = pair_from(WGT_F32, 1, &n3, (double[]){3, 6, 9});
    pair nan = pair_from(WGT_F32, 1, &n3, (double[]){NAN, -INFINITY, INFINITY});
    /* the sequence [9, 1, 7, 3, 5] read through sorter [1, 3, 4, 2, 0] */
    pair unsorted = pair_from(WGT_F32, 1, &n5, (double[]){9, 1, 7, 3, 5});
    pair sorter = pair_from(WGT_I32, 1, &n5, (double[]){1, 3, 4, 2, 0});
    for (int s = 0; s < 2; s++) {
        wgt_tensor *y;
        MUST(wgt_searchsorted(seq.t[s], val.t[s], 0, NULL, &y));
        expect("searchsorted left", s, y, (double[]){1, 3, 4}, 3, 0);
        wgt_tensor_free(y);
        MUST(wgt_searchsorted(seq.t[s], val.t[s], 1, NULL, &y));
        expect("searchsorted right", s, y, (double[]){2, 3, 5}, 3, 0);
        wgt_tensor_free(y);
        MUST(wgt_searchsorted(unsorted.t[s], val.t[s], 0, sorter.t[s], &y));
        expect("searchsorted sorter", s, y, (double[]){1, 3, 4}, 3, 0);
        wgt_tensor_free(y);
        MUST(wgt_searchsorted(seq.t[s], nan.t[s], 0, NULL, &y));
        expect("searchsorted NaN/inf", s, y, (double[]){5, 0, 5}, 3, 0);
        wgt_tensor_free(y);
        /* torch.bucketize([3, 6, 9], [1, 3, 5, 7, 9]) = [1, 3, 4]; right=True: [2, 3, 5] */
        MUST(wgt_bucketize(val.t[s], seq.t[s], 1, &y));
        expect("bucketize right", s, y, (double[]){2, 3, 5}, 3, 0);
        wgt_tensor_free(y);
    }
    /* torch.histc([1., 2, 1], bins=4, min=0, max=3) = [0, 2, 1, 0]; min == max: the range [1, 7]
     * -> [3, 0, 0, 1] (7 included); the top edge (7) lands in the last bin; NaN and values outside are not
     * counted (min == max: the data's range [1, 7]). */
    pair h = pair_from(WGT_F32, 1, &n5, (double[]){1, 2, 1, NAN, 7});
    for (int s = 0; s < 2; s++) {
        wgt_tensor *y;
        MUST(wgt_histc(h.t[s], 4, 0, 3, &y));
        expect("histc", s, y, (double[]){0, 2, 1, 0}, 4, 0);
        wgt_tensor_free(y);
        MUST(wgt_histc(h.t[s], 4, 5, 5, &y));
        expect("histc data range", s, y, (double[]){3, 0, 0, 1}, 4, 0);
        wgt_tensor_free(y);
    }
    pair_free(seq), pair_free(val), pair_free(nan), pair_free(unsorted), pair_free(sorter), pair_free(h);
}

/* ---- differential --------------------------------------------------------------------------- */

/* unique of v with its inverse, counts and first indices, all compared. */
static void diff_unique(const char *what, pair v)
{
    char part[200];
    wgt_tensor *inv[2] = {NULL, NULL}, *cnt[2] = {NULL, NULL}, *fst[2] = {NULL, NULL};
    DIFF(what, 0, 0, wgt_unique(v.t[S], &y_[S], &inv[S], &cnt[S], &fst[S]));
    wgt_tensor *const *outs[3] = {inv, cnt, fst};
    static const char *const names[3] = {"inverse", "counts", "first"};
    for (int o = 0; o < 3; o++) {
        snprintf(part, sizeof part, "%s %s", what, names[o]);
        if (outs[o][0] && outs[o][1]) pair_compare(part, outs[o][0], outs[o][1], 0, 0);
    }
    for (int s = 0; s < 2; s++) wgt_tensor_free(inv[s]), wgt_tensor_free(cnt[s]), wgt_tensor_free(fst[s]);
}

/* searchsorted of vals into the rows of sq (each sorted), and into the rows of x through their
 * sorter perm; bucketize of vals transposed (a strided input) into row r of sq; left and right. */
static void diff_search(const char *tag, pair sq, pair x, pair vals, pair perm, int64_t r)
{
    char what[200];
    int64_t flat = wgt_tensor_shape(sq.t[0])[1];
    for (int right = 0; right < 2; right++) {
        snprintf(what, sizeof what, "%s searchsorted right %d", tag, right);
        DIFF(what, 0, 0, wgt_searchsorted(sq.t[S], vals.t[S], right, NULL, &y_[S]));
        snprintf(what, sizeof what, "%s searchsorted sorter right %d", tag, right);
        DIFF(what, 0, 0, wgt_searchsorted(x.t[S], vals.t[S], right, perm.t[S], &y_[S]));
        pair row = pair_narrow(sq, 0, r, 1), b, vt = pair_transpose(vals, 0, 1);
        for (int s = 0; s < 2; s++) MUST(wgt_tensor_reshape(row.t[s], 1, &flat, &b.t[s]));
        snprintf(what, sizeof what, "%s bucketize right %d (values transposed)", tag, right);
        DIFF(what, 0, 0, wgt_bucketize(vt.t[S], b.t[S], right, &y_[S]));
        pair_free(vt), pair_free(b), pair_free(row);
    }
}

static void diff_dtype(wgt_dtype dt)
{
    char what[160];
    const char *dn = wgt_dtype_name(dt);
    int64_t shape[2] = {37, 53};
    /* small integer ranges make ties: stability and the tie order of indices are compared */
    double lo = op_is_float(dt) ? -4 : lo_of(dt), hi = op_is_float(dt) ? 4 : (dt == WGT_BOOL ? 2 : 10);
    pair x = pair_rand(dt, 2, shape, lo, hi, 1);
    if (op_is_float(dt)) { /* whole numbers too, for ties among floats */
        pair_free(x);
        pair r = pair_rand(dt, 2, shape, -6, 6, 1);
        pair f;
        for (int s = 0; s < 2; s++) MUST(wgt_unary(WGT_UNARY_FLOOR, r.t[s], &f.t[s]));
        pair_free(r);
        x = f;
    }
    pair xt = pair_transpose(x, 0, 1); /* [53, 37], strided */
    pair views[2] = {x, xt};
    for (int vi = 0; vi < 2; vi++) {
        pair v = views[vi];
        for (int dim = 0; dim < 2; dim++) {
            for (int desc = 0; desc < 2; desc++) {
                snprintf(what, sizeof what, "sort %s view %d dim %d desc %d", dn, vi, dim, desc);
                DIFF_IX(what, wgt_sort(v.t[S], dim, desc, &y_[S], &iv[S]));
            }
            for (int largest = 0; largest < 2; largest++) {
                snprintf(what, sizeof what, "topk %s view %d dim %d largest %d", dn, vi, dim, largest);
                DIFF_IX(what, wgt_topk(v.t[S], 5, dim, largest, 1, &y_[S], &iv[S]));
            }
            snprintf(what, sizeof what, "argsort %s view %d dim %d", dn, vi, dim);
            DIFF(what, 0, 0, wgt_argsort(v.t[S], dim, 0, &y_[S]));
            snprintf(what, sizeof what, "kthvalue %s view %d dim %d", dn, vi, dim);
            DIFF_IX(what, wgt_kthvalue(v.t[S], 4, dim, 1, &y_[S], &iv[S]));
            snprintf(what, sizeof what, "median %s view %d dim %d", dn, vi, dim);
            DIFF_IX(what, wgt_median(v.t[S], dim, 0, &y_[S], &iv[S]));
        }
        snprintf(what, sizeof what, "unique %s view %d", dn, vi);
        diff_unique(what, v);
    }
    /* searchsorted: rows of a sorted sequence [37, 53] (sorted on the reference side, copied) */
    if (dt != WGT_BOOL) {
        pair sq;
        for (int s = 0; s < 2; s++) {
            wgt_tensor *sv;
            MUST(wgt_sort(x.t[1], 1, 0, &sv, NULL));
            int64_t n = wgt_tensor_numel(sv);
            void *buf = malloc((size_t)n * 8);
            MUST(wgt_tensor_to_host(sv, buf, (size_t)n * wgt_dtype_size(dt)));
            MUST(wgt_tensor_from_host(side[s], dt, 2, shape, buf, &sq.t[s]));
            free(buf);
            wgt_tensor_free(sv);
        }
        int64_t vshape[2] = {37, 11};
        pair vals = pair_rand(dt, 2, vshape, lo - 1, hi + 1, 1);
        pair perm;
        for (int s = 0; s < 2; s++) MUST(wgt_argsort(x.t[s], 1, 0, &perm.t[s]));
        diff_search(dn, sq, x, vals, perm, 3);
        pair_free(vals), pair_free(perm), pair_free(sq);
    }
    if (op_is_float(dt)) {
        pair r = pair_rand(dt, 2, shape, -3, 3, 1);
        pair rt = pair_transpose(r, 0, 1);
        snprintf(what, sizeof what, "histc %s", dn);
        DIFF(what, 0, 0, wgt_histc(rt.t[S], 17, -2, 2.5, &y_[S]));
        snprintf(what, sizeof what, "histc data range %s", dn);
        DIFF(what, 0, 0, wgt_histc(r.t[S], 10, 0, 0, &y_[S]));
        pair_free(r), pair_free(rt);
    }
    pair_free(xt);
    pair_free(x);
}

/* ---- long rows ------------------------------------------------------------------------------ */

/* Values of t ascending (desc 0) or descending, and indices a permutation naming them in x. */
static void check_sorted(const char *what, const wgt_tensor *x, const wgt_tensor *v, const wgt_tensor *ix, int desc,
                         int64_t k)
{
    int64_t n = wgt_tensor_numel(x);
    float *xs = malloc((size_t)n * 4), *vs = malloc((size_t)k * 4);
    int32_t *is = malloc((size_t)k * 4);
    char *seen = calloc((size_t)n, 1);
    MUST(wgt_tensor_to_host(x, xs, (size_t)n * 4));
    MUST(wgt_tensor_to_host(v, vs, (size_t)k * 4));
    MUST(wgt_tensor_to_host(ix, is, (size_t)k * 4));
    int bad = 0;
    for (int64_t i = 0; i < k && bad < 3; i++) {
        int ok = is[i] >= 0 && is[i] < n && !seen[is[i]] && (xs[is[i]] == vs[i] || (isnan(xs[is[i]]) && isnan(vs[i])));
        if (ok) seen[is[i]] = 1;
        /* NaN above everything */
        double a = isnan(vs[i]) ? INFINITY : vs[i], b = i && isnan(vs[i - 1]) ? INFINITY : i ? vs[i - 1] : 0;
        int nan_order = i && isnan(vs[i - 1]) && !isnan(vs[i]) ? desc : i && isnan(vs[i]) && !isnan(vs[i - 1]) ? !desc : 1;
        if (i) ok = ok && nan_order && (desc ? a <= b : a >= b);
        if (!ok) {
            CHECK(0, "%s: element %lld: value %g index %d", what, (long long)i, vs[i], is[i]);
            bad++;
        }
    }
    compared += k;
    free(xs), free(vs), free(is), free(seen);
}

/* sort (k < 0) or topk k of f32 rows x along dim 0 on both sides: compared, and the GPU's checked alone. */
static void sort_both(const char *what, pair x, int64_t k, int flag)
{
    wgt_tensor *v[2] = {NULL, NULL}, *i[2] = {NULL, NULL};
    for (int s = 0; s < 2; s++) {
        wgt_status st = k < 0 ? wgt_sort(x.t[s], 0, flag, &v[s], &i[s]) : wgt_topk(x.t[s], k, 0, flag, 1, &v[s], &i[s]);
        CHECK(st == WGT_OK, "%s (side %d): %s", what, s, wgt_errmsg());
    }
    if (v[0] && v[1] && i[0] && i[1]) {
        pair_compare(what, v[0], v[1], 0, 0);
        pair_compare(what, i[0], i[1], 0, 0);
        check_sorted(what, x.t[0], v[0], i[0], flag, k < 0 ? wgt_tensor_numel(x.t[0]) : k);
    }
    for (int s = 0; s < 2; s++) wgt_tensor_free(v[s]), wgt_tensor_free(i[s]);
}

static void long_rows(void)
{
    int64_t n = 70000;
    pair x = pair_rand(WGT_F32, 1, &n, -1000, 1000, 1); /* a NaN and a -inf */
    sort_both("sort [70000]", x, -1, 0);
    sort_both("sort [70000] descending", x, -1, 1);
    pair_free(x);
    wgt_tensor *iv[2] = {NULL, NULL};

    n = 150000;
    x = pair_rand(WGT_F32, 1, &n, -1000, 1000, 0);
    sort_both("topk 50 of [150000] smallest", x, 50, 0);
    sort_both("topk 50 of [150000] largest", x, 50, 1);
    /* k past half a tile: the whole row sorts */
    DIFF("topk 3000 of [150000]", 0, 0, wgt_topk(x.t[S], 3000, 0, 1, 1, &y_[S], NULL));
    DIFF("median of [150000]", 0, 0, wgt_median(x.t[S], 0, 0, &y_[S], NULL));
    DIFF("kthvalue 1000 of [150000]", 0, 0, wgt_kthvalue(x.t[S], 1000, 0, 0, &y_[S], NULL));
    pair_free(x);

    /* rows longer than a tile along dim 0 of a transposed view, bf16 with ties */
    int64_t s2[2] = {3, 9000};
    x = pair_rand(WGT_BF16, 2, s2, -50, 50, 1);
    pair xt = pair_transpose(x, 0, 1); /* [9000, 3] */
    iv[0] = iv[1] = NULL;
    DIFF("sort bf16 [9000, 3] dim 0", 0, 0, wgt_sort(xt.t[S], 0, 1, &y_[S], &iv[S]));
    if (iv[0] && iv[1]) pair_compare("sort bf16 [9000, 3] dim 0 indices", iv[0], iv[1], 0, 0);
    wgt_tensor_free(iv[0]), wgt_tensor_free(iv[1]);
    DIFF("unique bf16 [9000, 3]", 0, 0, wgt_unique(xt.t[S], &y_[S], NULL, NULL, NULL));
    pair_free(xt), pair_free(x);

    /* many short rows of odd length */
    int64_t s3[2] = {300, 100};
    x = pair_rand(WGT_I32, 2, s3, -1000, 1000, 0);
    iv[0] = iv[1] = NULL;
    DIFF("sort i32 [300, 100]", 0, 0, wgt_sort(x.t[S], 1, 0, &y_[S], &iv[S]));
    if (iv[0] && iv[1]) pair_compare("sort i32 [300, 100] indices", iv[0], iv[1], 0, 0);
    wgt_tensor_free(iv[0]), wgt_tensor_free(iv[1]);
    DIFF("topk i32 [300, 100] k 7", 0, 0, wgt_topk(x.t[S], 7, 1, 1, 1, &y_[S], NULL));
    pair_free(x);
}

/* ---- i64: exact 64-bit keys ----------------------------------------------------------------- */

static uint64_t i64_rand(void)
{
    return test_rng_next();
}

/* n values from a pool of `distinct` (0: every value free): high words in [-3, 3] or full range,
 * low words with bit 31 set or clear (an unsigned compare of the low word matters), the extremes,
 * and values equal in the low word but not the high one (a 32-bit key would tie them). */
static pair pair_i64(int ndim, const int64_t *shape, int distinct)
{
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    int64_t pool[64], *data = malloc((size_t)(n ? n : 1) * 8);
    for (int i = 0; i < 64; i++) {
        uint64_t r = i64_rand(), lo = (uint32_t)r;
        int64_t hi = (int64_t)((r >> 32) % 7) - 3;
        if (i % 4 == 1) lo = i % 8 == 1 ? 0x80000000u : 0x7fffffffu;
        pool[i] = i % 5 == 3 ? (int64_t)i64_rand() : (int64_t)((uint64_t)hi << 32 | lo);
    }
    pool[0] = INT64_MIN, pool[1] = INT64_MAX, pool[2] = -1, pool[3] = 0;
    pool[4] = (int64_t)0x500000007, pool[5] = (int64_t)0x700000007, pool[6] = -(int64_t)0x100000007;
    for (int64_t i = 0; i < n; i++) data[i] = distinct ? pool[i64_rand() % (uint64_t)distinct] : (int64_t)i64_rand();
    pair p;
    for (int s = 0; s < 2; s++) MUST(wgt_tensor_from_host(side[s], WGT_I64, ndim, shape, data, &p.t[s]));
    free(data);
    return p;
}

static void wide_i64(void)
{
    char what[160];
    /* rows of 37 (one tile) and 5000 (tiles then merges; topk keeps per tile), ties and not */
    int64_t shapes[2][2] = {{53, 37}, {3, 5000}};
    for (int sh = 0; sh < 2; sh++) {
        for (int distinct = 0; distinct <= 40; distinct += 40) {
            pair x = pair_i64(2, shapes[sh], distinct);
            pair xt = pair_transpose(x, 0, 1);
            pair views[2] = {x, xt};
            for (int vi = 0; vi < 2; vi++) {
                int dim = vi ? 0 : 1; /* along the long rows */
                pair v = views[vi];
                for (int desc = 0; desc < 2; desc++) {
                    snprintf(what, sizeof what, "i64 sort [%lld, %lld] pool %d view %d desc %d", (long long)shapes[sh][0],
                             (long long)shapes[sh][1], distinct, vi, desc);
                    DIFF_IX(what, wgt_sort(v.t[S], dim, desc, &y_[S], &iv[S]));
                    snprintf(what, sizeof what, "i64 topk 9 pool %d view %d largest %d", distinct, vi, desc);
                    DIFF_IX(what, wgt_topk(v.t[S], 9, dim, desc, 1, &y_[S], &iv[S]));
                }
                snprintf(what, sizeof what, "i64 median pool %d view %d", distinct, vi);
                DIFF_IX(what, wgt_median(v.t[S], dim, 1, &y_[S], &iv[S]));
                snprintf(what, sizeof what, "i64 kthvalue 5 pool %d view %d", distinct, vi);
                DIFF(what, 0, 0, wgt_kthvalue(v.t[S], 5, dim, 0, &y_[S], NULL));
                snprintf(what, sizeof what, "i64 unique pool %d view %d", distinct, vi);
                diff_unique(what, v);
            }
            if (sh == 0) {
                /* searchsorted into the sorted rows, and through an i64 sorter (argsort's order);
                 * values from the same pool, so exact hits take the left/right rule */
                int64_t vshape[2] = {53, 11};
                pair vals = pair_i64(2, vshape, distinct);
                pair sq, perm;
                for (int s = 0; s < 2; s++) {
                    wgt_tensor *pi;
                    MUST(wgt_sort(x.t[s], 1, 0, &sq.t[s], &pi));
                    MUST(wgt_tensor_cast(pi, WGT_I64, &perm.t[s]));
                    wgt_tensor_free(pi);
                }
                snprintf(what, sizeof what, "i64 pool %d (i64 sorter)", distinct);
                diff_search(what, sq, x, vals, perm, 7);
                pair_free(vals), pair_free(sq), pair_free(perm);
            }
            pair_free(xt), pair_free(x);
        }
    }
    /* hand-checked: 2^32 + 7 above 7 and 0x80000000 above 0x7fffffff (a low-word-only or signed
     * low-word compare gets these wrong), INT64_MIN first, ties in input order */
    const int64_t h[6] = {(int64_t)0x100000007, 7, (int64_t)0x80000000, 0x7fffffff, INT64_MIN, 7};
    int64_t n6 = 6;
    for (int s = 0; s < 2; s++) {
        wgt_tensor *t, *v, *i;
        MUST(wgt_tensor_from_host(side[s], WGT_I64, 1, &n6, h, &t));
        MUST(wgt_sort(t, 0, 0, &v, &i));
        int64_t got[6];
        MUST(wgt_tensor_to_host(v, got, sizeof got));
        const int64_t want[6] = {INT64_MIN, 7, 7, 0x7fffffff, (int64_t)0x80000000, (int64_t)0x100000007};
        CHECK(!memcmp(got, want, sizeof got), "i64 hand sort (side %d): %lld %lld %lld %lld %lld %lld", s,
              (long long)got[0], (long long)got[1], (long long)got[2], (long long)got[3], (long long)got[4],
              (long long)got[5]);
        expect("i64 hand sort indices", s, i, (double[]){4, 1, 5, 3, 2, 0}, 6, 0);
        wgt_tensor_free(v), wgt_tensor_free(i);
        wgt_tensor *u;
        MUST(wgt_unique(t, &u, NULL, NULL, NULL));
        expect("i64 hand unique", s, u, (double[]){(double)INT64_MIN, 7, 0x7fffffff, 0x80000000, 0x100000007}, 5, 0);
        wgt_tensor_free(u), wgt_tensor_free(t);
    }
}

/* ---- edges and errors ----------------------------------------------------------------------- */

static void edges(void)
{
    int64_t es[3] = {4, 0, 3};
    pair e = pair_rand(WGT_F32, 3, es, -1, 1, 0);
    DIFF("sort empty dim", 0, 0, wgt_sort(e.t[S], 1, 0, &y_[S], NULL));
    DIFF("sort empty other dim", 0, 0, wgt_sort(e.t[S], 2, 0, &y_[S], NULL));
    DIFF("topk k 0", 0, 0, wgt_topk(e.t[S], 0, 2, 1, 1, &y_[S], NULL));
    DIFF("unique empty", 0, 0, wgt_unique(e.t[S], &y_[S], NULL, NULL, NULL));
    DIFF("histc empty", 0, 0, wgt_histc(e.t[S], 3, 0, 0, &y_[S]));
    pair_free(e);
    double one = 5;
    pair s = pair_from(WGT_F16, 0, NULL, &one);
    DIFF("sort 0-D", 0, 0, wgt_sort(s.t[S], 0, 0, &y_[S], NULL));
    DIFF("median 0-D", 0, 0, wgt_median(s.t[S], -1, 0, &y_[S], NULL));
    DIFF("unique 0-D", 0, 0, wgt_unique(s.t[S], &y_[S], NULL, NULL, NULL));
    pair_free(s);

    int64_t n7 = 7;
    pair x = pair_rand(WGT_F32, 1, &n7, -1, 1, 0);
    pair xi = pair_rand(WGT_I32, 1, &n7, -1, 1, 0);
    wgt_tensor *v = NULL, *i = NULL;
    CHECK(wgt_topk(x.t[0], 8, 0, 1, 1, &v, &i) == WGT_ERR_SHAPE && !v, "topk k past the dim: %s", wgt_errmsg());
    CHECK(strstr(wgt_errmsg(), "topk") != NULL, "the message names the op: %s", wgt_errmsg());
    CHECK(wgt_sort(x.t[0], 1, 0, &v, &i) == WGT_ERR_SHAPE, "sort dim out of range");
    CHECK(wgt_kthvalue(x.t[0], 0, 0, 0, &v, &i) == WGT_ERR_SHAPE, "kthvalue k 0");
    CHECK(wgt_sort(x.t[0], 0, 0, NULL, NULL) == WGT_ERR_INVALID_ARGUMENT, "sort without outputs");
    CHECK(wgt_histc(xi.t[0], 4, 0, 1, &v) == WGT_ERR_DTYPE, "histc of i32");
    CHECK(wgt_histc(x.t[0], 0, 0, 1, &v) == WGT_ERR_INVALID_ARGUMENT, "histc 0 bins");
    CHECK(wgt_histc(x.t[0], 3, 2, 1, &v) == WGT_ERR_INVALID_ARGUMENT, "histc max < min");
    CHECK(wgt_searchsorted(x.t[0], xi.t[0], 0, NULL, &v) == WGT_ERR_DTYPE, "searchsorted dtypes differ");
    CHECK(strstr(wgt_errmsg(), "searchsorted") != NULL, "the message names the op: %s", wgt_errmsg());
    int64_t s23[2] = {2, 3};
    pair m = pair_rand(WGT_F32, 2, s23, -1, 1, 0);
    CHECK(wgt_searchsorted(m.t[0], x.t[0], 0, NULL, &v) == WGT_ERR_SHAPE, "searchsorted leading dims differ");
    CHECK(wgt_bucketize(x.t[0], m.t[0], 0, &v) == WGT_ERR_SHAPE, "bucketize with 2-D boundaries");
    pair_free(m), pair_free(x), pair_free(xi);
}

/* Past one binding: the device's binding limit lowered to 8 KiB for a moment (its real one is
 * larger, so the smaller bindings stay valid): [37, 53] f32 and its pairs no longer fit, and the
 * rows sort in parts. */
static void over_binding(void)
{
    int64_t shape[2] = {37, 53};
    pair x = pair_rand(WGT_F32, 2, shape, -6, 6, 1);
    pair r;
    for (int s = 0; s < 2; s++) MUST(wgt_unary(WGT_UNARY_FLOOR, x.t[s], &r.t[s]));
    pair rt = pair_transpose(r, 0, 1);
    uint64_t saved = side[0]->info.limits.max_storage_buffer_binding_size;
    side[0]->info.limits.max_storage_buffer_binding_size = 8192;
    for (int dim = 0; dim < 2; dim++) {
        wgt_tensor *iv[2] = {NULL, NULL};
        DIFF("sort in parts", 0, 0, wgt_sort(r.t[S], dim, dim, &y_[S], &iv[S]));
        if (iv[0] && iv[1]) pair_compare("sort in parts indices", iv[0], iv[1], 0, 0);
        wgt_tensor_free(iv[0]), wgt_tensor_free(iv[1]);
        DIFF("topk in parts (transposed)", 0, 0, wgt_topk(rt.t[S], 4, dim, 1, 1, &y_[S], NULL));
        iv[0] = iv[1] = NULL;
        DIFF("median in parts", 0, 0, wgt_median(rt.t[S], dim, 0, &y_[S], &iv[S]));
        if (iv[0] && iv[1]) pair_compare("median in parts indices", iv[0], iv[1], 0, 0);
        wgt_tensor_free(iv[0]), wgt_tensor_free(iv[1]);
    }
    /* searchsorted of [37, 60] values into rows of [37, 53] (i32 output 8880 bytes), bucketize,
     * histc (the data's range and a given one) */
    int64_t vs[2] = {37, 60};
    pair vals = pair_rand(WGT_F32, 2, vs, -7, 7, 1);
    DIFF("searchsorted in parts", 0, 0, wgt_searchsorted(r.t[S], vals.t[S], 1, NULL, &y_[S]));
    pair b = pair_narrow(r, 0, 0, 1);
    int64_t flat = 53;
    pair b1;
    for (int s = 0; s < 2; s++) MUST(wgt_tensor_reshape(b.t[s], 1, &flat, &b1.t[s]));
    DIFF("bucketize in parts", 0, 0, wgt_bucketize(vals.t[S], b1.t[S], 0, &y_[S]));
    DIFF("histc in parts", 0, 0, wgt_histc(vals.t[S], 9, 0, 0, &y_[S]));
    DIFF("histc in parts (range)", 0, 0, wgt_histc(rt.t[S], 9, -3, 3, &y_[S]));
    /* i64 (15688 bytes, two key words a pair) in parts: sort, and searchsorted into its rows */
    pair w = pair_i64(2, shape, 40);
    wgt_tensor *wi[2] = {NULL, NULL};
    DIFF("i64 sort in parts", 0, 0, wgt_sort(w.t[S], 1, 1, &y_[S], &wi[S]));
    if (wi[0] && wi[1]) pair_compare("i64 sort in parts indices", wi[0], wi[1], 0, 0);
    wgt_tensor_free(wi[0]), wgt_tensor_free(wi[1]);
    pair wv = pair_i64(2, vs, 40);
    DIFF("i64 searchsorted in parts", 0, 0, wgt_searchsorted(w.t[S], wv.t[S], 0, NULL, &y_[S]));
    pair_free(wv), pair_free(w);
    side[0]->info.limits.max_storage_buffer_binding_size = saved;
    pair_free(b1), pair_free(b), pair_free(vals);
    pair_free(rt), pair_free(r), pair_free(x);
}

int main(void)
{
    pair_open();
    hand_checked();
    for (int d = 0; d < N_DTYPES; d++) diff_dtype(all_dtypes[d]);
    long_rows();
    wide_i64();
    edges();
    over_binding();
    CHECK(hi_of(WGT_F32) > 0, "gpu_pair.h's ranges");
    CHECK(compared > 100000, "only %d elements compared", compared);
    wgt_context_free(side[0]);
    wgt_context_free(side[1]);
    return test_finish("test_gpu_sort_search");
}
