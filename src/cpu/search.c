/* Searching sorted data and histograms: searchsorted (and bucketize through it), histc. The
 * reference of src/ops/search.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_internal.h"

wgt_status wgt_cpu_searchsorted(const wgt_cpu_tensor *seq, const wgt_cpu_tensor *values, int right,
                                const wgt_cpu_tensor *sorter, const wgt_cpu_tensor *out)
{
    CPU_CHECK(seq, "sorted_sequence");
    CPU_CHECK(values, "values");
    CPU_CHECK(out, "out");
    if (seq->l.ndim < 1) return wgt_error(WGT_ERR_SHAPE, "searchsorted: sorted_sequence must have at least 1 dim");
    int nd = values->l.ndim, sd = seq->l.ndim;
    int ok = out->l.ndim == nd;
    for (int d = 0; ok && d < nd; d++) ok = out->l.shape[d] == values->l.shape[d];
    if (!ok) return wgt_error(WGT_ERR_SHAPE, "searchsorted: out must have values' shape");
    if (sd > 1) {
        ok = nd == sd;
        for (int d = 0; ok && d < sd - 1; d++) ok = seq->l.shape[d] == values->l.shape[d];
        if (!ok)
            return wgt_error(WGT_ERR_SHAPE, "searchsorted: sorted_sequence's leading dims must equal values' leading dims");
    }
    if (sorter) {
        CPU_CHECK(sorter, "sorter");
        ok = sorter->l.ndim == sd;
        for (int d = 0; ok && d < sd; d++) ok = sorter->l.shape[d] == seq->l.shape[d];
        if (!ok) return wgt_error(WGT_ERR_SHAPE, "searchsorted: sorter must have sorted_sequence's shape");
    }
    int64_t m = seq->l.shape[sd - 1], n = wgt_layout_numel(&values->l);
    int64_t inner = nd ? values->l.shape[nd - 1] : 1;
    int is_f = wgt_cpu_is_float(seq->l.dtype) || wgt_cpu_is_float(values->l.dtype);
    wgt_layout rows = seq->l; /* seq's leading dims */
    rows.ndim = sd - 1;
    wgt_layout srows = sorter ? sorter->l : seq->l;
    srows.ndim = sd - 1;
    int64_t step = seq->l.strides[sd - 1], sstep = sorter ? sorter->l.strides[sd - 1] : 0;
    for (int64_t e = 0; e < n; e++) {
        int64_t row = sd > 1 ? e / (inner ? inner : 1) : 0;
        int64_t base = wgt_layout_index(&rows, row), sbase = sorter ? wgt_layout_index(&srows, row) : 0;
        int64_t vat = cpu_at(values, e), lo = 0, hi = m;
        double vf = is_f ? wgt_cpu_load_f(values, vat) : 0;
        int64_t vi = is_f ? 0 : wgt_cpu_load_i(values, vat);
        /* PyTorch's loop, comparisons included: a NaN value ends past the end */
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2, j = mid;
            if (sorter) {
                j = wgt_cpu_load_i(sorter, sbase + mid * sstep);
                if (j < 0 || j >= m) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "searchsorted: sorter index %lld out of range [0, %lld)",
                                                      (long long)j, (long long)m);
            }
            int64_t at = base + j * step;
            int go_left;
            if (is_f) {
                double s = wgt_cpu_load_f(seq, at);
                go_left = right ? s > vf : s >= vf;
            } else {
                int64_t s = wgt_cpu_load_i(seq, at);
                go_left = right ? s > vi : s >= vi;
            }
            if (go_left) hi = mid;
            else lo = mid + 1;
        }
        wgt_cpu_store_i(out, cpu_at(out, e), lo);
    }
    return WGT_OK;
}

/* The histogram's range when min == max: the data's (NaN ignored), widened by 1 when flat. The
 * arithmetic is f32's, as the kernel's (PyTorch computes in the input's dtype). */
wgt_status wgt_cpu_histc(const wgt_cpu_tensor *x, int64_t bins, double min, double max, const wgt_cpu_tensor *out)
{
    CPU_CHECK(x, "x");
    CPU_CHECK(out, "out");
    if (bins <= 0) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "histc: bins must be positive, not %lld", (long long)bins);
    if (wgt_layout_numel(&out->l) != bins) return wgt_error(WGT_ERR_SHAPE, "histc: out must have bins elements");
    if (!(min <= max)) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "histc: max (%g) must not be below min (%g)", max, min);
    int64_t n = wgt_layout_numel(&x->l);
    float lo = (float)min, hi = (float)max;
    if (lo == hi) {
        int any = 0;
        for (int64_t i = 0; i < n; i++) {
            float v = (float)wgt_cpu_load_f(x, cpu_at(x, i));
            if (isnan(v)) continue;
            if (!any || v < lo) lo = v;
            if (!any || v > hi) hi = v;
            any = 1;
        }
        if (!any) lo = hi = (float)min;
        if (lo == hi) lo -= 1, hi += 1;
    }
    int64_t *cnt = calloc((size_t)bins, sizeof *cnt);
    if (!cnt) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "histc: no host memory for %lld bins", (long long)bins);
    float fb = (float)bins;
    for (int64_t i = 0; i < n; i++) {
        float v = (float)wgt_cpu_load_f(x, cpu_at(x, i));
        if (!(v >= lo && v <= hi)) continue; /* NaN too */
        volatile float t = (v - lo) * fb; /* volatile: round to f32 at each step, as the kernel */
        volatile float q = t / (hi - lo);
        int64_t b = q < fb ? (int64_t)q : bins - 1;
        if (b < 0) b = 0;
        cnt[b]++;
    }
    for (int64_t b = 0; b < bins; b++) wgt_cpu_store_f(out, cpu_at(out, b), (double)cnt[b]);
    free(cnt);
    return WGT_OK;
}
