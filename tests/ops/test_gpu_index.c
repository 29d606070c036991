/* Indexing ops on the GPU against the CPU reference: index_select, gather, masked_fill,
 * masked_select, nonzero, one_hot, scatter (set/add/mul/amax/amin), index_add, index_put, over
 * every dtype, strided and broadcast inputs, i32 and i64 indices with negative values, duplicate
 * destinations, empty inputs; i64 combines over full 64-bit values and integer index_add with
 * saturating alphas (both walk per-destination lists); and out-of-range indices reported by
 * wgt_index_check.
 * Tolerances: data movement, set, amax/amin and integer arithmetic are exact. Float add/mul
 * combine in an order the atomics choose, rounding to the element's dtype after every step as the
 * reference does in index order: a few ulps of the running sum apart (f32 1e-5, f16 4e-3,
 * bf16 3e-2 relative, with an absolute term for sums that cancel). */
#include "gpu_pair.h"

static pair pair_index(wgt_dtype it, int ndim, const int64_t *shape, int64_t n)
{
    return pair_rand(it, ndim, shape, (double)-n, (double)n - 0.001, 0);
}

/* A pair holding exactly these host values. */
static pair pair_host(wgt_dtype dt, int ndim, const int64_t *shape, const void *data)
{
    pair p;
    for (int s = 0; s < 2; s++) MUST(wgt_tensor_from_host(side[s], dt, ndim, shape, data, &p.t[s]));
    return p;
}

static void tol(wgt_dtype dt, double *atol, double *rtol)
{
    *rtol = dt == WGT_F32 ? 1e-5 : dt == WGT_F16 ? 4e-3 : dt == WGT_BF16 ? 3e-2 : 0;
    *atol = dt == WGT_F32 ? 1e-5 : dt == WGT_F16 ? 2e-2 : dt == WGT_BF16 ? 0.15 : 0;
}

int main(void)
{
    pair_open();
    char what[160];
    for (int di = 0; di < N_DTYPES; di++) {
        wgt_dtype dt = all_dtypes[di];
        int64_t shape[3] = {5, 7, 9};
        pair base = pair_rand(dt, 3, shape, lo_of(dt), hi_of(dt), 1);
        pair views[3] = {base, pair_transpose(base, 0, 2), pair_narrow(base, 1, 2, 4)};
        const char *vn[3] = {"contiguous", "transposed", "narrowed"};
        for (int v = 0; v < 3; v++) {
            wgt_tensor *const *x = views[v].t;
            for (int it = 0; it < (v == 0 ? 2 : 1); it++) { /* i64 indices on the contiguous input */
                wgt_dtype idt = it ? WGT_I64 : WGT_I32;
                for (int d = 0; d < 3; d++) {
                    int64_t n = wgt_tensor_dim(x[0], d);
                    int64_t k10 = 10;
                    pair idx = pair_index(idt, 1, &k10, n), idx_off = pair_narrow(idx, 0, 3, 6);
                    snprintf(what, sizeof what, "index_select dim %d %s %s", d, vn[v], wgt_dtype_name(idt));
                    DIFF(what, 0, 0, wgt_index_select(x[S], d, idx_off.t[S], &y_[S]));
                    int64_t gshape[3];
                    for (int e = 0; e < 3; e++) gshape[e] = e == d ? 6 : wgt_tensor_dim(x[0], e) - (e == 2 ? 1 : 0);
                    pair gi = pair_index(idt, 3, gshape, n);
                    snprintf(what, sizeof what, "gather dim %d %s %s", d, vn[v], wgt_dtype_name(idt));
                    DIFF(what, 0, 0, wgt_gather(x[S], d, gi.t[S], &y_[S]));
                    pair git = pair_transpose(gi, 0, 1);
                    if (wgt_tensor_dim(git.t[0], 0) <= wgt_tensor_dim(x[0], 0) || d == 0) {
                        snprintf(what, sizeof what, "gather transposed index dim %d %s", d, vn[v]);
                        if (d != 2 && wgt_tensor_dim(git.t[0], 1) <= wgt_tensor_dim(x[0], 1) &&
                            wgt_tensor_dim(git.t[0], 0) <= wgt_tensor_dim(x[0], 0))
                            DIFF(what, 0, 0, wgt_gather(x[S], d, git.t[S], &y_[S]));
                    }
                    pair_free(git), pair_free(gi), pair_free(idx_off), pair_free(idx);
                }
            }
            int64_t mshape[3] = {1, wgt_tensor_dim(x[0], 1), 1};
            pair mask = pair_rand(WGT_BOOL, 3, mshape, 0, 2, 0);
            snprintf(what, sizeof what, "masked_fill %s", vn[v]);
            DIFF(what, 0, 0, wgt_masked_fill(x[S], mask.t[S], 2.5, &y_[S]));
            if (op_is_float(dt)) DIFF("masked_fill NaN", 0, 0, wgt_masked_fill(x[S], mask.t[S], NAN, &y_[S]));
            snprintf(what, sizeof what, "masked_select broadcast mask %s", vn[v]);
            DIFF(what, 0, 0, wgt_masked_select(x[S], mask.t[S], &y_[S]));
            pair full = pair_rand(WGT_U8, 3, wgt_tensor_shape(x[0]), 0, 1.3, 0);
            snprintf(what, sizeof what, "masked_select u8 mask %s", vn[v]);
            DIFF(what, 0, 0, wgt_masked_select(x[S], full.t[S], &y_[S]));
            pair_free(full), pair_free(mask);
            snprintf(what, sizeof what, "nonzero %s", vn[v]);
            DIFF(what, 0, 0, wgt_nonzero(x[S], &y_[S]));
        }
        pair_free(views[1]), pair_free(views[2]), pair_free(base);
        /* nonzero with many zeros, over more than one 1024-element block */
        int64_t zshape[2] = {37, 61};
        pair z = pair_rand(dt, 2, zshape, dt == WGT_U8 || dt == WGT_U32 || dt == WGT_BOOL ? 0 : -1, 2, 0);
        DIFF("nonzero sparse", 0, 0, wgt_nonzero(z.t[S], &y_[S]));
        pair zf = pair_rand(WGT_BOOL, 2, zshape, 0, 1.1, 0);
        DIFF("masked_select sparse", 0, 0, wgt_masked_select(z.t[S], zf.t[S], &y_[S]));
        pair_free(zf), pair_free(z);

        /* scatter family: 6 x 8 self, duplicates in every column */
        double atol, rtol;
        tol(dt, &atol, &rtol);
        int64_t sshape[2] = {6, 8}, ishape[2] = {4, 8}, srcshape[2] = {5, 8};
        int fl = op_is_float(dt);
        pair self = pair_rand(dt, 2, sshape, fl ? -4 : lo_of(dt), fl ? 4 : hi_of(dt), 0);
        for (int mode = 0; mode < WGT_SCATTER_COUNT; mode++) {
            double lo = mode == WGT_SCATTER_MUL && fl ? 0.5 : fl ? -4 : lo_of(dt);
            double hi = mode == WGT_SCATTER_MUL && fl ? 1.5 : fl ? 4 : hi_of(dt);
            pair src = pair_rand(dt, 2, srcshape, lo, hi, mode >= WGT_SCATTER_AMAX);
            for (int dim = 0; dim < 2; dim++) {
                int64_t is[2] = {ishape[0], dim ? 5 : 8};
                pair idx = pair_index(dim ? WGT_I64 : WGT_I32, 2, is, sshape[dim]);
                int exact = mode == WGT_SCATTER_SET || mode >= WGT_SCATTER_AMAX || !fl;
                snprintf(what, sizeof what, "scatter mode %d dim %d", mode, dim);
                DIFF(what, exact ? 0 : atol, exact ? 0 : rtol,
                     wgt_scatter(self.t[S], dim, idx.t[S], src.t[S], (wgt_scatter_mode)mode, &y_[S]));
                pair_free(idx);
            }
            pair srct = pair_transpose(src, 0, 1), idx = pair_index(WGT_I32, 2, (int64_t[]){6, 3}, 8);
            int exact = mode == WGT_SCATTER_SET || mode >= WGT_SCATTER_AMAX || !fl;
            snprintf(what, sizeof what, "scatter mode %d transposed src", mode);
            DIFF(what, exact ? 0 : atol, exact ? 0 : rtol,
                 wgt_scatter(self.t[S], 1, idx.t[S], srct.t[S], (wgt_scatter_mode)mode, &y_[S]));
            pair_free(idx), pair_free(srct), pair_free(src);
        }
        /* index_add: 7 source rows into 6 */
        int64_t ashape[2] = {7, 8}, k7 = 7;
        pair source = pair_rand(dt, 2, ashape, fl ? -4 : lo_of(dt), fl ? 4 : hi_of(dt), 0);
        pair aidx = pair_index(WGT_I32, 1, &k7, 6);
        DIFF("index_add", fl ? atol : 0, fl ? rtol : 0, wgt_index_add(self.t[S], 0, aidx.t[S], source.t[S], 1, &y_[S]));
        if (fl) DIFF("index_add alpha", atol, rtol, wgt_index_add(self.t[S], 0, aidx.t[S], source.t[S], 0.5, &y_[S]));
        pair srcT = pair_transpose(source, 0, 1), aidx8 = pair_index(WGT_I64, 1, &k7, 8);
        pair src6 = pair_narrow(srcT, 0, 0, 6);
        DIFF("index_add dim 1 transposed", fl ? atol : 0, fl ? rtol : 0,
             wgt_index_add(self.t[S], 1, aidx8.t[S], src6.t[S], 1, &y_[S]));
        pair_free(src6), pair_free(srcT), pair_free(aidx8), pair_free(aidx), pair_free(source);
        /* index_put: self [6, 8], indices [3, 1] and [1, 2] broadcast to S = [3, 2]; values [2] */
        pair i0 = pair_index(WGT_I32, 2, (int64_t[]){3, 1}, 6), i1 = pair_index(WGT_I64, 2, (int64_t[]){1, 2}, 8);
        pair vals = pair_rand(dt, 1, (int64_t[]){2}, fl ? -4 : lo_of(dt), fl ? 4 : hi_of(dt), 0);
        for (int acc = 0; acc < 2; acc++) {
            snprintf(what, sizeof what, "index_put 2 indices accumulate %d", acc);
            DIFF(what, acc && fl ? atol : 0, acc && fl ? rtol : 0,
                 wgt_index_put(self.t[S], (const wgt_tensor *const[]){i0.t[S], i1.t[S]}, 2, vals.t[S], acc, &y_[S]));
            pair rows = pair_rand(dt, 3, (int64_t[]){3, 1, 8}, fl ? -4 : lo_of(dt), fl ? 4 : hi_of(dt), 0);
            snprintf(what, sizeof what, "index_put rows accumulate %d", acc);
            DIFF(what, acc && fl ? atol : 0, acc && fl ? rtol : 0,
                 wgt_index_put(self.t[S], (const wgt_tensor *const[]){i0.t[S]}, 1, rows.t[S], acc, &y_[S]));
            pair_free(rows);
        }
        pair_free(vals), pair_free(i1), pair_free(i0), pair_free(self);
        /* one_hot into this dtype: indices in [-6, 6) with depth 5 give some all-off rows */
        pair oh = pair_index(WGT_I32, 2, (int64_t[]){4, 5}, 6);
        for (int axis = -1; axis <= 1; axis++) {
            snprintf(what, sizeof what, "one_hot axis %d", axis);
            DIFF(what, 0, 0, wgt_one_hot(oh.t[S], 5, axis, 0, dt == WGT_BOOL || dt == WGT_U8 ? 1 : 3, dt, &y_[S]));
        }
        pair_free(oh);
    }

    /* i64 combines walk a list per destination (no 64-bit atomics): full-range values, so sums
     * carry into the high word and max/min decide on either word; 600 updates into 7 x 3 */
    {
        int64_t sn[2] = {7, 3}, un[2] = {200, 3};
        int64_t vs[600], ss[21];
        for (int i = 0; i < 600; i++) vs[i] = (int64_t)(((uint64_t)test_uniform(0, 4294967296.0) << 32) ^ (uint64_t)test_uniform(0, 4294967296.0));
        for (int i = 0; i < 21; i++) ss[i] = i % 4 == 0 ? INT64_MIN : i % 4 == 1 ? INT64_MAX : -vs[i];
        for (int i = 0; i < 40; i++) vs[i * 15] = i & 1 ? INT64_MAX : (int64_t)0xffffffffLL; /* carries */
        pair self = pair_host(WGT_I64, 2, sn, ss), src = pair_host(WGT_I64, 2, un, vs);
        pair idx = pair_index(WGT_I32, 2, un, 7);
        for (int mode = 1; mode < WGT_SCATTER_COUNT; mode++) {
            snprintf(what, sizeof what, "scatter i64 mode %d, 600 full-range updates", mode);
            DIFF(what, 0, 0, wgt_scatter(self.t[S], 0, idx.t[S], src.t[S], (wgt_scatter_mode)mode, &y_[S]));
        }
        /* high words from {-2, -1, 0, 1}: max/min decided by the low words of the ties */
        int64_t ws[600], ws_self[21];
        for (int i = 0; i < 600; i++)
            ws[i] = (int64_t)(((uint64_t)(int64_t)floor(test_uniform(-2, 1.999)) << 32) | (uint64_t)test_uniform(0, 4294967296.0));
        for (int i = 0; i < 21; i++) ws_self[i] = ws[599 - i] ^ (int64_t)(i * 7919);
        pair tself = pair_host(WGT_I64, 2, sn, ws_self), tsrc = pair_host(WGT_I64, 2, un, ws);
        for (int mode = WGT_SCATTER_AMAX; mode <= WGT_SCATTER_AMIN; mode++) {
            snprintf(what, sizeof what, "scatter i64 mode %d, ties in the high words", mode);
            DIFF(what, 0, 0, wgt_scatter(tself.t[S], 0, idx.t[S], tsrc.t[S], (wgt_scatter_mode)mode, &y_[S]));
        }
        pair_free(tsrc), pair_free(tself);
        pair srcT = pair_transpose(src, 0, 1), selfT = pair_transpose(self, 0, 1);
        pair idx1 = pair_index(WGT_I64, 1, (int64_t[]){200}, 7);
        DIFF("index_add i64", 0, 0, wgt_index_add(self.t[S], 0, idx1.t[S], src.t[S], 1, &y_[S]));
        DIFF("index_add i64 dim 1, transposed", 0, 0, wgt_index_add(selfT.t[S], 1, idx1.t[S], srcT.t[S], 1, &y_[S]));
        DIFF("index_put i64 accumulate", 0, 0,
             wgt_index_put(self.t[S], (const wgt_tensor *const[]){idx1.t[S]}, 1, src.t[S], 1, &y_[S]));
        pair_free(idx1), pair_free(selfT), pair_free(srcT), pair_free(idx), pair_free(src), pair_free(self);
    }
    /* integer index_add with alpha != 1: the reference saturates at every step, in index order,
     * so the result depends on the order (i8: 100 * 3 saturates at once); 300 rows into 4. i64:
     * magnitudes from 1 to 2^63, so the reference's doubles round (53 bits) and saturate */
    for (int di = 3; di < N_DTYPES; di++) {
        wgt_dtype dt = all_dtypes[di];
        int64_t sn[2] = {4, 5}, an[2] = {300, 5}, k300 = 300;
        int wide = dt == WGT_I32 || dt == WGT_U32;
        double lo = dt == WGT_BOOL ? 0 : wide ? -2147483648.0 : lo_of(dt), hi = dt == WGT_BOOL ? 2 : wide ? 4294967295.0 : hi_of(dt);
        if (dt == WGT_I32) hi = 2147483647.0;
        if (dt == WGT_U32) lo = 0;
        pair self, source;
        if (dt == WGT_I64) {
            int64_t v[1520];
            for (int i = 0; i < 1520; i++) {
                uint64_t r = ((uint64_t)test_uniform(0, 4294967296.0) << 32) ^ (uint64_t)test_uniform(0, 4294967296.0);
                r >>= (int)test_uniform(0, 63.99); /* magnitudes of every bit length */
                v[i] = test_uniform(0, 1) < 0.5 ? -(int64_t)(r >> 1) : (int64_t)(r >> 1);
            }
            v[7] = INT64_MAX, v[8] = INT64_MIN, v[30] = ((int64_t)1 << 53) + 1, v[31] = -((int64_t)1 << 54) - 3;
            self = pair_host(dt, 2, sn, v), source = pair_host(dt, 2, an, v + 20);
        } else {
            self = pair_rand(dt, 2, sn, lo, hi, 0), source = pair_rand(dt, 2, an, lo, hi, 0);
        }
        pair idx = pair_index(WGT_I32, 1, &k300, 4);
        double alphas[3] = {3, -2, 1048576};
        for (int a = 0; a < 3; a++) {
            snprintf(what, sizeof what, "index_add alpha %g, 300 rows into 4", alphas[a]);
            DIFF(what, 0, 0, wgt_index_add(self.t[S], 0, idx.t[S], source.t[S], alphas[a], &y_[S]));
        }
        pair_free(idx), pair_free(source), pair_free(self);
        /* one hot destination: its list of 5000, in whatever order the exchanges left it, sorts
         * over 13 merge passes */
        int64_t one[2] = {1, 1}, hot[2] = {5000, 1}, k5000 = 5000;
        if (dt != WGT_I64) {
            pair s1 = pair_rand(dt, 2, one, lo, hi, 0), src1 = pair_rand(dt, 2, hot, lo, hi, 0);
            pair zeros = pair_index(WGT_I32, 1, &k5000, 1);
            DIFF("index_add alpha 3, 5000 rows into 1", 0, 0, wgt_index_add(s1.t[S], 0, zeros.t[S], src1.t[S], 3, &y_[S]));
            pair_free(zeros), pair_free(src1), pair_free(s1);
        }
    }

    /* empty inputs */
    pair e = pair_rand(WGT_F32, 2, (int64_t[]){0, 4}, 0, 1, 0), ei = pair_index(WGT_I32, 1, (int64_t[]){0}, 4);
    DIFF("index_select empty index", 0, 0, wgt_index_select(e.t[S], 1, ei.t[S], &y_[S]));
    DIFF("nonzero empty", 0, 0, wgt_nonzero(e.t[S], &y_[S]));
    pair_free(ei), pair_free(e);

    /* out-of-range indices: no status from the op itself (no sync), one from wgt_index_check */
    int64_t sh[2] = {4, 3}, k3 = 3;
    pair x = pair_rand(WGT_F32, 2, sh, 0, 1, 0);
    int32_t bad[3] = {0, 4, 1};
    wgt_tensor *bi, *y = NULL;
    MUST(wgt_tensor_from_host(side[0], WGT_I32, 1, &k3, bad, &bi));
    CHECK(wgt_index_check(side[0]) == WGT_OK, "no error before");
    wgt_status st = wgt_index_select(x.t[0], 0, bi, &y);
    CHECK(st == WGT_OK || st == WGT_ERR_INVALID_ARGUMENT, "index_select out of range: %s", wgt_errmsg());
    wgt_tensor_free(y), y = NULL;
    CHECK(wgt_index_check(side[0]) == WGT_ERR_INVALID_ARGUMENT || st, "index_select out of range is reported");
    CHECK(wgt_index_check(side[0]) == WGT_OK, "the check clears the flag");
    st = wgt_index_add(x.t[0], 0, bi, x.t[0], 1, &y);
    CHECK(st == WGT_ERR_SHAPE, "index_add shape");
    wgt_tensor *src3;
    MUST(wgt_tensor_narrow(x.t[0], 0, 0, 3, &src3));
    st = wgt_index_add(x.t[0], 0, bi, src3, 1, &y);
    wgt_tensor_free(y), wgt_tensor_free(src3);
    CHECK(wgt_index_check(side[0]) == WGT_ERR_INVALID_ARGUMENT || st, "index_add out of range is reported");
    wgt_tensor_free(bi);
    int64_t big[3] = {0, (int64_t)1 << 32, 1};
    MUST(wgt_tensor_from_host(side[0], WGT_I64, 1, &k3, big, &bi));
    st = wgt_index_select(x.t[0], 0, bi, &y);
    wgt_tensor_free(y), y = NULL;
    CHECK(wgt_index_check(side[0]) == WGT_ERR_INVALID_ARGUMENT || st, "an i64 index past 32 bits is reported");
    wgt_tensor_free(bi);
    pair_free(x);

    CHECK(compared > 20000, "only %d elements compared", compared);
    wgt_context_free(side[0]);
    wgt_context_free(side[1]);
    return test_finish("test_gpu_index");
}
