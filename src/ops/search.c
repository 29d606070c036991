/* searchsorted, bucketize and histc on the GPU (src/kernels/search.wgsl): an invocation per value
 * (a binary search) or per element (an atomic count); no waiting for the device. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "ops/ops.h"
#include "tensor/record.h"

typedef struct search_params {
    uint32_t n, m, inner, right, has_sorter, multi, off_s, step_s, off_v, off_t, step_t, bins, auto_range;
    float lo, hi;
    uint32_t off_o; /* search: the output's first element in its binding */
    op_layout_params vl, sl, tl;
} search_params;

static wgt_status search_kernel(wgt_context *ctx, wgt_dtype dt, wgt_dtype sorter_dt, const char *entry,
                                wgt_kernel **k)
{
    char pre[16384];
    int wide = dt == WGT_I64, wide_sorter = sorter_dt == WGT_I64;
    const char *ct = wide ? "i64" : op_compute_type(dt);
    snprintf(pre, sizeof pre, "%s\n%s\nconst WG: u32 = %uu;\nalias CT = %s;\n", op_wgsl_lib(),
             wide || wide_sorter ? op_wgsl_lib_i64() : "", op_workgroup_size(ctx), wide ? "vec2<u32>" : ct);
    op_wgsl_loader(pre, sizeof pre, "ldq", "sq", dt, ct);
    op_wgsl_loader(pre, sizeof pre, "ldv", "vs", dt, ct);
    op_wgsl_loader(pre, sizeof pre, "lds", "so", sorter_dt, wide_sorter ? "i64" : "i32");
    op_wgsl_storer(pre, sizeof pre, "sti", "out", WGT_I32, "i32");
    /* the comparisons of the binary search (exact on both words for i64; NaN compares false) and
     * the sorter's clamp (an i64 index past 32 bits clamps as the i32 one does): sections of
     * src/kernels/lib_ct.wgsl and lib_search_ops.wgsl */
    if (!op_wgsl_ct(pre, sizeof pre, dt) ||
        !op_wgsl_section(pre, sizeof pre, "lib_search_ops", wide_sorter ? "sorter i64" : "sorter i32"))
        return op_fail(ctx, WGT_ERR_INTERNAL, "search: kernel prelude too long");
    if (strlen(pre) + 1 >= sizeof pre) return op_fail(ctx, WGT_ERR_INTERNAL, "search: kernel prelude too long");
    return wgt_gpu_kernel(ctx, "search", pre, entry, NULL, 0, k);
}

/* Fits one binding, and 32-bit element counts. */
static int fits(const wgt_tensor *t)
{
    if (!t) return 1;
    int64_t lo, hi;
    op_extent(&t->l, &lo, &hi);
    uint64_t bytes = hi >= lo ? (uint64_t)(hi + 1 - lo) * wgt_dtype_size(t->l.dtype) + 16 : 0;
    return bytes <= wgt_gpu_limits(t->st->ctx)->max_storage_buffer_binding_size &&
           wgt_layout_numel(&t->l) < UINT32_MAX / 2;
}

/* ---- searchsorted, bucketize ------------------------------------------------------------------ */

typedef struct ss_arg {
    int right, has_sorter;
} ss_arg;

static wgt_status ss_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    ss_arg *a = arg;
    return wgt_cpu_searchsorted(&in[0], &in[1], a->right, a->has_sorter ? &in[2] : NULL, &out[0]);
}

/* A layout's leading ndim - 1 dims (the rows) into p, with the last dim's stride in *step. */
static wgt_status rows_layout(wgt_context *ctx, const wgt_tensor *t, int64_t base, op_layout_params *p, uint32_t *off,
                              uint32_t *step)
{
    wgt_layout r = t->l;
    r.ndim = t->l.ndim - 1;
    *off = (uint32_t)(t->l.offset - base);
    *step = (uint32_t)t->l.strides[t->l.ndim - 1];
    return op_layout_params_fill(ctx, &r, p);
}

/* Rows [r0, r0 + len) of values' dim 0, with the sequence's and sorter's when they have rows. */
static wgt_status ss_narrow(const wgt_tensor *seq, const wgt_tensor *values, const wgt_tensor *sorter, int64_t r0,
                            int64_t len, wgt_tensor **v)
{
    wgt_status st = wgt_tensor_narrow(values, 0, r0, len, &v[1]);
    int multi = seq->l.ndim > 1;
    if (!st) st = multi ? wgt_tensor_narrow(seq, 0, r0, len, &v[0]) : wgt_tensor_new_view(seq, &seq->l, &v[0]);
    if (!st && sorter)
        st = multi ? wgt_tensor_narrow(sorter, 0, r0, len, &v[2]) : wgt_tensor_new_view(sorter, &sorter->l, &v[2]);
    return st;
}

/* The insertion indices of values (all of it, or rows of it) into y's elements from e0 on. */
static wgt_status ss_dispatch(wgt_context *ctx, const wgt_tensor *seq, const wgt_tensor *values,
                              const wgt_tensor *sorter, int right, wgt_tensor *y, int64_t e0)
{
    int sd = seq->l.ndim, nd = values->l.ndim;
    int64_t n = wgt_layout_numel(&values->l);
    if (n == 0) return WGT_OK;
    search_params p;
    memset(&p, 0, sizeof p);
    p.n = (uint32_t)n;
    p.m = (uint32_t)seq->l.shape[sd - 1];
    p.inner = nd ? (uint32_t)values->l.shape[nd - 1] : 1;
    p.right = right != 0;
    p.has_sorter = sorter != NULL;
    p.multi = sd > 1;
    wgt_binding b[6];
    int64_t base;
    wgt_tensor *hist = NULL, *rng = NULL; /* unused atomics: distinct buffers */
    int64_t one = 1;
    wgt_kernel *k;
    wgt_status st;
    if (!(st = op_bind_all(seq, &b[0], &base))) st = rows_layout(ctx, seq, base, &p.sl, &p.off_s, &p.step_s);
    if (!st && !(st = op_bind_all(values, &b[1], &base))) {
        p.off_v = (uint32_t)(values->l.offset - base);
        wgt_layout vl = values->l;
        vl.offset = 0;
        st = op_layout_params_fill(ctx, &vl, &p.vl);
    }
    if (!st && sorter && !(st = op_bind_all(sorter, &b[2], &base)))
        st = rows_layout(ctx, sorter, base, &p.tl, &p.off_t, &p.step_t);
    if (!sorter) b[2] = b[0];
    if (!st && !(st = op_bind(y, e0, e0 + n - 1, &b[3], &base))) p.off_o = (uint32_t)(e0 - base);
    if (!st) st = wgt_tensor_new(ctx, WGT_U32, 1, &one, &hist);
    if (!st) st = op_bind_all(hist, &b[4], &base);
    if (!st) st = wgt_tensor_new(ctx, WGT_U32, 1, &one, &rng);
    if (!st) st = op_bind_all(rng, &b[5], &base);
    if (!st) st = search_kernel(ctx, seq->l.dtype, sorter ? sorter->l.dtype : WGT_I32, "search_main", &k);
    uint32_t gx, gy;
    op_grid(ctx, ((uint64_t)n + op_workgroup_size(ctx) - 1) / op_workgroup_size(ctx), &gx, &gy);
    if (!st) st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 6, gx, gy, 1);
    wgt_tensor_free(hist);
    wgt_tensor_free(rng);
    return st;
}

static wgt_status ss_impl(const char *name, const wgt_tensor *seq, const wgt_tensor *values, int right,
                          const wgt_tensor *sorter, wgt_tensor **out)
{
    OP_BEGIN(seq, out);
    if (!values) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: NULL values", name);
    const wgt_tensor *ins[3] = {seq, values, sorter};
    wgt_status st = op_same_context(name, ins, sorter ? 3 : 2);
    if (st) return st;
    int sd = seq->l.ndim, nd = values->l.ndim;
    if (sd < 1) return op_fail(ctx, WGT_ERR_SHAPE, "%s: the boundaries/sorted sequence must have at least 1 dim", name);
    if (sd > 1) {
        int ok = nd == sd;
        for (int d = 0; ok && d < sd - 1; d++) ok = seq->l.shape[d] == values->l.shape[d];
        if (!ok)
            return op_fail(ctx, WGT_ERR_SHAPE,
                           "%s: a sorted sequence of %d dims needs values with the same leading %d dims", name, sd,
                           sd - 1);
    }
    if (seq->l.dtype != values->l.dtype)
        return op_fail(ctx, WGT_ERR_DTYPE, "%s: the sorted sequence (%s) and the values (%s) must have one dtype", name,
                       wgt_dtype_name(seq->l.dtype), wgt_dtype_name(values->l.dtype));
    if (seq->l.dtype == WGT_BOOL) return op_fail(ctx, WGT_ERR_DTYPE, "%s: bool is not an ordered dtype", name);
    if (sorter) {
        int ok = sorter->l.ndim == sd;
        for (int d = 0; ok && d < sd; d++) ok = sorter->l.shape[d] == seq->l.shape[d];
        if (!ok) return op_fail(ctx, WGT_ERR_SHAPE, "%s: the sorter must have the sorted sequence's shape", name);
        if (!op_is_int(sorter->l.dtype) || sorter->l.dtype == WGT_BOOL)
            return op_fail(ctx, WGT_ERR_DTYPE, "%s: the sorter must be an integer tensor, not %s", name,
                           wgt_dtype_name(sorter->l.dtype));
    }
    wgt_tensor *y;
    if ((st = wgt_tensor_new(ctx, WGT_I32, nd, values->l.shape, &y))) return st;
    int64_t n = wgt_layout_numel(&values->l);
    int gpu_ok = fits(seq) && fits(values) && fits(sorter) && fits(y);
    int whole = gpu_ok;
    uint64_t lim = wgt_gpu_limits(ctx)->max_storage_buffer_binding_size;
    int64_t part = 0;
    if (!gpu_ok && nd >= 1 && n > 0 && !wgt_gpu_runs_reference(ctx)) { /* past a binding: parts along values' dim 0 */
        part = values->l.shape[0];
        while (part > 0) {
            wgt_tensor *v[3] = {NULL, NULL, NULL};
            int ok = !ss_narrow(seq, values, sorter, 0, part, v) && fits(v[0]) && fits(v[1]) && fits(v[2]) &&
                     (uint64_t)(n / values->l.shape[0]) * part * 4 + 16 <= lim;
            for (int i = 0; i < 3; i++) wgt_tensor_free(v[i]);
            if (ok) break;
            part = part == 1 ? 0 : (part + 1) / 2;
        }
        gpu_ok = part > 0;
    }
    if (op_use_gpu(ctx, name, seq->l.dtype, gpu_ok)) {
        if (whole) st = ss_dispatch(ctx, seq, values, sorter, right, y, 0);
        int64_t rows = nd ? values->l.shape[0] : 1, per_row = rows ? n / rows : 0;
        for (int64_t r0 = 0; !whole && !st && r0 < rows; r0 += part) {
            int64_t len = rows - r0 < part ? rows - r0 : part;
            wgt_tensor *v[3] = {NULL, NULL, NULL};
            if (!(st = ss_narrow(seq, values, sorter, r0, len, v)))
                st = ss_dispatch(ctx, v[0], v[1], v[2], right, y, r0 * per_row);
            for (int i = 0; i < 3; i++) wgt_tensor_free(v[i]);
        }
    } else if (!(st = op_fallback_status(ctx, name, seq->l.dtype, gpu_ok))) {
        ss_arg a = {right, sorter != NULL};
        st = op_reference(ctx, ss_ref, &a, ins, sorter ? 3 : 2, &y, 1);
    }
    return op_finish(st, y, out);
}

wgt_status wgt_searchsorted(const wgt_tensor *sorted_sequence, const wgt_tensor *values, int right,
                            const wgt_tensor *sorter, wgt_tensor **out)
{
    return ss_impl("searchsorted", sorted_sequence, values, right, sorter, out);
}

wgt_status wgt_bucketize(const wgt_tensor *x, const wgt_tensor *boundaries, int right, wgt_tensor **out)
{
    if (!boundaries || !out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "bucketize: NULL argument");
    if (boundaries->l.ndim != 1)
        return wgt_error(WGT_ERR_SHAPE, "bucketize: boundaries must be 1-D, not %d-D", boundaries->l.ndim);
    return ss_impl("bucketize", boundaries, x, right, NULL, out);
}

/* ---- histc -------------------------------------------------------------------------------------- */

typedef struct hist_arg {
    int64_t bins;
    double lo, hi;
} hist_arg;

static wgt_status hist_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    hist_arg *a = arg;
    return wgt_cpu_histc(&in[0], a->bins, a->lo, a->hi, &out[0]);
}

static wgt_status histc_unrecorded(const wgt_tensor *x, int64_t bins, double min, double max, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    if (!op_is_float(x->l.dtype))
        return op_fail(ctx, WGT_ERR_DTYPE, "histc: x must be f32, f16 or bf16, not %s (as PyTorch)",
                       wgt_dtype_name(x->l.dtype));
    if (bins <= 0 || bins > INT32_MAX)
        return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "histc: bins must be in [1, 2^31), not %lld", (long long)bins);
    if (!(min <= max) || !isfinite(min) || !isfinite(max))
        return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "histc: need finite min <= max, not [%g, %g]", min, max);
    wgt_tensor *y = NULL;
    wgt_status st = WGT_OK;
    int gpu_ok = fits(x);
    int64_t part = 0; /* past a binding: parts along dim 0 */
    if (!gpu_ok && x->l.ndim >= 1 && !wgt_gpu_runs_reference(ctx)) {
        part = x->l.shape[0];
        while (part > 0) {
            wgt_tensor *v = NULL;
            int ok = !wgt_tensor_narrow(x, 0, 0, part, &v) && fits(v);
            wgt_tensor_free(v);
            if (ok) break;
            part = part == 1 ? 0 : (part + 1) / 2;
        }
        gpu_ok = part > 0;
    }
    if (op_use_gpu(ctx, "histc", x->l.dtype, gpu_ok)) {
        int64_t n = wgt_layout_numel(&x->l), two = 2;
        search_params p;
        memset(&p, 0, sizeof p);
        p.n = (uint32_t)n;
        p.bins = (uint32_t)bins;
        p.lo = (float)min;
        p.hi = (float)max;
        p.auto_range = p.lo == p.hi;
        wgt_tensor *hist = NULL, *rng = NULL, *dummy = NULL;
        const uint32_t init[2] = {0xffffffffu, 0};
        wgt_binding b[6];
        int64_t base;
        wgt_kernel *kr = NULL, *kh = NULL;
        if (!st) st = wgt_tensor_new(ctx, WGT_U32, 1, &bins, &hist);
        if (!st) st = wgt_gpu_fill_zero(ctx, hist->st->buf, 0, (uint64_t)bins * 4);
        if (!st) st = wgt_tensor_from_host(ctx, WGT_U32, 1, &two, init, &rng);
        if (!st) st = wgt_tensor_new(ctx, WGT_U32, 1, &two, &dummy);
        if (!st) st = op_bind_all(dummy, &b[3], &base);
        if (!st) st = op_bind_all(hist, &b[4], &base);
        if (!st) st = op_bind_all(rng, &b[5], &base);
        if (!st) st = search_kernel(ctx, x->l.dtype, WGT_I32, "range_main", &kr);
        if (!st) st = search_kernel(ctx, x->l.dtype, WGT_I32, "hist_main", &kh);
        /* the data's range over every part first, then the counts */
        int64_t rows = part ? x->l.shape[0] : 1;
        for (int pass = !p.auto_range; !st && pass < 2; pass++) {
            for (int64_t r0 = 0; !st && r0 < rows; r0 += part ? part : 1) {
                wgt_tensor *xc = NULL;
                st = part ? wgt_tensor_narrow(x, 0, r0, rows - r0 < part ? rows - r0 : part, &xc)
                          : wgt_tensor_new_view(x, &x->l, &xc);
                int64_t nc = st ? 0 : wgt_layout_numel(&xc->l);
                if (!st && nc && !(st = op_bind_all(xc, &b[1], &base))) {
                    p.n = (uint32_t)nc;
                    p.off_v = (uint32_t)(xc->l.offset - base);
                    wgt_layout vl = xc->l;
                    vl.offset = 0;
                    st = op_layout_params_fill(ctx, &vl, &p.vl);
                    b[0] = b[2] = b[1];
                    uint32_t gx, gy;
                    op_grid(ctx, ((uint64_t)nc + op_workgroup_size(ctx) - 1) / op_workgroup_size(ctx), &gx, &gy);
                    if (!st) st = wgt_gpu_dispatch(ctx, pass ? kh : kr, &p, sizeof p, b, 6, gx, gy, 1);
                }
                wgt_tensor_free(xc);
            }
        }
        if (!st) st = wgt_tensor_cast(hist, x->l.dtype, &y);
        wgt_tensor_free(hist);
        wgt_tensor_free(rng);
        wgt_tensor_free(dummy);
    } else if (!(st = op_fallback_status(ctx, "histc", x->l.dtype, gpu_ok))) {
        hist_arg a = {bins, min, max};
        const wgt_tensor *ins[1] = {x};
        if (!(st = wgt_tensor_new(ctx, x->l.dtype, 1, &bins, &y))) st = op_reference(ctx, hist_ref, &a, ins, 1, &y, 1);
    }
    return op_finish(st, y, out);
}

/* counts are piecewise constant in x: no gradient (PyTorch: output_differentiability False) */
wgt_status wgt_histc(const wgt_tensor *x, int64_t bins, double min, double max, wgt_tensor **out)
{
    return op_record_nondiff(histc_unrecorded(x, bins, min, max, out), "histc", &x, 1, out);
}
