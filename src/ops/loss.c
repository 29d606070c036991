/* Losses: cross_entropy, nll_loss and cosine_similarity through one row kernel
 * (src/kernels/loss.wgsl: one pass per row, online log-sum-exp), and the elementwise losses (mse,
 * l1, smooth_l1, huber, binary_cross_entropy, ..._with_logits, kl_div) through one elementwise
 * kernel (loss_pw.wgsl). Reductions sum the kernels' f32 values with wgt_reduce. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "ops/index_shape.h"
#include "ops/ops.h"
#include "tensor/record.h"

/* A class index out of range sets bit 8 of the context's index error word (loss.wgsl), which
 * wgt_index_check() reports; under WGT_STRICT=1 (or a debug context) every op checks at once. */
wgt_status index_check_now(wgt_context *ctx); /* shape.c */

/* ---- the row kernel ---------------------------------------------------------------------------- */

enum { ROW_CE = 0, ROW_CE_PROBS, ROW_NLL, ROW_COSINE };

/* Rows: positions over nk kept dims (ks); x's row r starts at xoff + layout(ks, kx)(r) and holds C
 * elements cx apart; the target likewise (ct unused for class indices). */
typedef struct row_job {
    int mode;
    const wgt_tensor *x, *t, *w; /* w: f32 contiguous [C] or NULL */
    int nk;
    int64_t ks[WGT_MAX_DIMS], kx[WGT_MAX_DIMS], kt[WGT_MAX_DIMS];
    int64_t xoff, toff, C, cx, ct;
    int has_ignore;
    int32_t ignore;
    float ls, eps;
} row_job;

typedef struct row_params {
    uint32_t n_rows, C, mode, off_x, off_t, cs_x, cs_t, has_w, has_ignore;
    int32_t ignore;
    float ls, eps;
    uint32_t zero, off_o, off_ow, pad2;
    op_layout_params lx, lt;
} row_params;

/* x's (or the target's) rows [r0, r1) of dim 0 as a layout, the row dim last when with_row. */
static wgt_layout row_layout(const row_job *j, int target, int with_row, int64_t r0, int64_t r1)
{
    const wgt_tensor *t = target ? j->t : j->x;
    wgt_layout l = t->l;
    l.ndim = j->nk + (with_row ? 1 : 0);
    for (int d = 0; d < j->nk; d++) l.shape[d] = j->ks[d], l.strides[d] = target ? j->kt[d] : j->kx[d];
    l.offset = target ? j->toff : j->xoff;
    if (j->nk) l.shape[0] = r1 - r0, l.offset += r0 * l.strides[0];
    if (with_row) l.shape[j->nk] = j->C, l.strides[j->nk] = target ? j->ct : j->cx;
    return l;
}

/* Run the row kernel: lo[r] = the loss of row r, wo[r] = its weight (both f32, contiguous, rows long). */
static wgt_status row_run(wgt_context *ctx, const row_job *j, wgt_tensor *lo, wgt_tensor *wo)
{
    int64_t rows = 1;
    for (int d = 0; d < j->nk; d++) rows *= j->ks[d];
    if (rows == 0) return WGT_OK;
    if (rows > UINT32_MAX || j->C > UINT32_MAX) return op_fail(ctx, WGT_ERR_LIMIT, "loss: more than 2^32 rows or classes");
    int t_rows = j->mode != ROW_CE && j->mode != ROW_NLL; /* the target has a class dim */
    int wide = j->mode != ROW_NLL && j->C > 64;
    uint32_t wg = j->C >= 4096 ? op_workgroup_size(ctx) : 64; /* 256, or 128 in compatibility mode */
    char pre[8192];
    snprintf(pre, sizeof pre, "%s\nconst WG: u32 = %uu;\n", op_wgsl_lib(), wide ? wg : 64);
    op_wgsl_loader(pre, sizeof pre, "ldx", "xs", j->x->l.dtype, "f32");
    op_wgsl_loader(pre, sizeof pre, "ldt", "ts", j->t->l.dtype, "f32");
    op_wgsl_loader(pre, sizeof pre, "ldi", "ts", j->t->l.dtype, "i32");
    wgt_kernel *k;
    wgt_status st = wgt_gpu_kernel(ctx, "loss", pre, wide ? "wg_main" : "row_main", NULL, 0, &k);
    if (st) return st;

    /* split along kept dim 0 so that every piece fits one storage binding */
    int64_t n0 = j->nk ? j->ks[0] : 1, per_row = rows / n0, per = n0;
    if (j->nk) {
        wgt_layout X = row_layout(j, 0, 1, 0, n0), T = row_layout(j, 1, t_rows, 0, n0), O = lo->l;
        const wgt_layout *ls[3] = {&X, &T, &O};
        per = op_rows_per_chunk(ctx, ls, 3);
        if (per == 0) return op_fail(ctx, WGT_ERR_LIMIT, "loss: one row of the input is larger than a storage binding");
    }
    row_params p;
    memset(&p, 0, sizeof p);
    p.C = (uint32_t)j->C, p.mode = (uint32_t)j->mode;
    p.cs_x = (uint32_t)j->cx, p.cs_t = (uint32_t)j->ct;
    p.has_w = j->w != NULL, p.has_ignore = (uint32_t)j->has_ignore, p.ignore = j->ignore;
    p.ls = j->ls, p.eps = j->eps;
    wgt_binding b[6];
    int64_t base, lo_e, hi_e;
    if ((st = index_err_bind(ctx, &b[5]))) return st;
    for (int64_t r0 = 0; r0 < n0; r0 += per) {
        int64_t r1 = r0 + per < n0 ? r0 + per : n0;
        wgt_layout X = row_layout(j, 0, 1, r0, r1), T = row_layout(j, 1, t_rows, r0, r1);
        op_extent(&X, &lo_e, &hi_e);
        if ((st = op_bind(j->x, lo_e, hi_e, &b[0], &base))) return st;
        p.off_x = (uint32_t)(X.offset - base);
        op_extent(&T, &lo_e, &hi_e);
        if ((st = op_bind(j->t, lo_e, hi_e, &b[1], &base))) return st;
        p.off_t = (uint32_t)(T.offset - base);
        X.ndim = T.ndim = j->nk;
        T.shape[0] = X.shape[0];
        if ((st = op_layout_params_fill(ctx, &X, &p.lx)) || (st = op_layout_params_fill(ctx, &T, &p.lt))) return st;
        if (j->w) {
            if ((st = op_bind_all(j->w, &b[2], &base))) return st;
        } else
            b[2] = b[0];
        int64_t e0 = r0 * per_row, e1 = r1 * per_row;
        if ((st = op_bind(lo, lo->l.offset + e0, lo->l.offset + e1 - 1, &b[3], &base))) return st;
        p.off_o = (uint32_t)(lo->l.offset + e0 - base);
        if (wo) {
            if ((st = op_bind(wo, wo->l.offset + e0, wo->l.offset + e1 - 1, &b[4], &base))) return st;
            p.off_ow = (uint32_t)(wo->l.offset + e0 - base);
        } else if ((st = index_dummy_bind(ctx, 1, &b[4])))
            return st;
        p.n_rows = (uint32_t)(e1 - e0);
        uint32_t gx, gy;
        op_grid(ctx, wide ? (uint64_t)p.n_rows : ((uint64_t)p.n_rows + 63) / 64, &gx, &gy);
        if ((st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 6, gx, gy, 1))) return st;
    }
    return WGT_OK;
}

/* A new f32 contiguous copy of an optional parameter (NULL stays NULL). */
static wgt_status as_f32(const wgt_tensor *t, wgt_tensor **out)
{
    *out = NULL;
    if (!t) return WGT_OK;
    return wgt_tensor_cast(t, WGT_F32, out);
}

/* The reduction of per-row (per-element) f32 losses `l` into a tensor of dtype dt:
 * none: l itself (converted); sum; mean: sum / sum(wsum) when wsum is given, else sum / count;
 * batchmean: sum / batch. */
static wgt_status reduce_loss(wgt_tensor *l, wgt_tensor *wsum, wgt_reduction red, double batch, wgt_dtype dt,
                              wgt_tensor **out)
{
    if (red == WGT_REDUCTION_NONE) return dt == WGT_F32 ? ((*out = wgt_tensor_ref(l)) ? WGT_OK : WGT_ERR_OUT_OF_MEMORY)
                                                        : wgt_tensor_cast(l, dt, out);
    wgt_tensor *s = NULL, *d = NULL, *q = NULL;
    wgt_status st;
    if (red == WGT_REDUCTION_MEAN && !wsum) st = wgt_reduce(WGT_REDUCE_MEAN, l, 0, 0, 0, &s);
    else st = wgt_reduce(WGT_REDUCE_SUM, l, 0, 0, 0, &s);
    if (!st && red == WGT_REDUCTION_MEAN && wsum) st = wgt_reduce(WGT_REDUCE_SUM, wsum, 0, 0, 0, &d);
    if (!st && red == WGT_REDUCTION_BATCHMEAN) st = wgt_full(wgt_tensor_context(l), WGT_F32, 0, NULL, batch, &d);
    if (!st && d) st = wgt_binary(WGT_BINARY_DIV, s, d, &q);
    if (!st) {
        wgt_tensor *r = q ? q : s;
        st = dt == WGT_F32 ? ((*out = wgt_tensor_ref(r)) ? WGT_OK : WGT_ERR_OUT_OF_MEMORY) : wgt_tensor_cast(r, dt, out);
    }
    wgt_tensor_free(s);
    wgt_tensor_free(d);
    wgt_tensor_free(q);
    return st;
}

static wgt_status check_float(wgt_context *ctx, const char *op, const char *what, const wgt_tensor *t)
{
    if (t->st->ctx != ctx) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: %s lives on another context", op, what);
    if (!op_is_float(t->l.dtype))
        return op_fail(ctx, WGT_ERR_DTYPE, "%s: %s must be f32, f16 or bf16, not %s", op, what, wgt_dtype_name(t->l.dtype));
    return WGT_OK;
}

static wgt_status check_reduction(wgt_context *ctx, const char *op, wgt_reduction red, int batchmean_ok)
{
    if ((unsigned)red >= WGT_REDUCTION_COUNT || (red == WGT_REDUCTION_BATCHMEAN && !batchmean_ok))
        return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: reduction %d is not none, mean or sum%s", op, (int)red,
                       batchmean_ok ? " (or batchmean)" : "");
    return WGT_OK;
}

/* ---- cross_entropy, nll_loss ---------------------------------------------------------------- */

typedef struct ce_arg {
    int has_w, log_input;
    int64_t ignore;
    double ls;
    wgt_reduction red;
} ce_arg;

static wgt_status ce_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    ce_arg *a = arg;
    return wgt_cpu_cross_entropy(&in[0], &in[1], a->has_w ? &in[2] : NULL, a->ignore, a->ls, a->log_input, a->red,
                                 &out[0]);
}

static wgt_status ce_impl(const char *name, int log_input, const wgt_tensor *x, const wgt_tensor *target,
                          const wgt_tensor *weight, int64_t ignore_index, double ls, wgt_reduction red,
                          wgt_tensor **out)
{
    OP_BEGIN(x, out);
    if (!target) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: target is NULL", name);
    wgt_status st;
    if ((st = check_float(ctx, name, "input", x)) || (st = check_reduction(ctx, name, red, 0))) return st;
    if (target->st->ctx != ctx) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: target lives on another context", name);
    if (!(ls >= 0 && ls <= 1)) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: label_smoothing %g is not in [0, 1]", name, ls);
    int nd = x->l.ndim;
    if (nd < 1) return op_fail(ctx, WGT_ERR_SHAPE, "%s: input must be [C] or [N, C, d1...], not 0-D", name);
    int cdim = nd == 1 ? 0 : 1;
    int64_t C = x->l.shape[cdim];
    int probs = op_is_float(target->l.dtype);
    if (probs && log_input)
        return op_fail(ctx, WGT_ERR_DTYPE, "%s: target must hold class indices (an integer dtype), not %s", name,
                       wgt_dtype_name(target->l.dtype));
    if (target->l.dtype == WGT_BOOL)
        return op_fail(ctx, WGT_ERR_DTYPE, "%s: target must be class indices (integers) or probabilities (floats), not bool", name);
    /* the rows: x's shape without the class dim */
    int64_t rs[WGT_MAX_DIMS];
    int nr = nd - 1;
    for (int d = 0, k = 0; d < nd; d++)
        if (d != cdim) rs[k++] = x->l.shape[d];
    int ok = probs ? target->l.ndim == nd : target->l.ndim == nr;
    for (int d = 0; ok && d < target->l.ndim; d++) ok = target->l.shape[d] == (probs ? x->l.shape[d] : rs[d]);
    if (!ok)
        return op_fail(ctx, WGT_ERR_SHAPE, "%s: target must be %s (%d-D), got a %d-D target of another shape", name,
                       probs ? "probabilities of the input's shape" : "class indices of the input's shape without C",
                       probs ? nd : nr, target->l.ndim);
    if (weight) {
        if ((st = check_float(ctx, name, "weight", weight))) return st;
        if (weight->l.ndim != 1 || weight->l.shape[0] != C)
            return op_fail(ctx, WGT_ERR_SHAPE, "%s: weight must be [C] = [%lld]", name, (long long)C);
    }
    wgt_dtype dt = x->l.dtype;
    wgt_tensor *y = NULL;
    if (op_use_gpu(ctx, name, dt, 1)) {
        row_job j;
        memset(&j, 0, sizeof j);
        j.mode = log_input ? ROW_NLL : probs ? ROW_CE_PROBS : ROW_CE;
        j.x = x, j.t = target;
        j.nk = nr;
        for (int d = 0, k = 0; d < nd; d++) {
            if (d == cdim) continue;
            j.ks[k] = x->l.shape[d], j.kx[k] = x->l.strides[d];
            j.kt[k] = target->l.strides[probs ? d : k];
            k++;
        }
        j.xoff = x->l.offset, j.toff = target->l.offset;
        j.C = C, j.cx = x->l.strides[cdim], j.ct = probs ? target->l.strides[cdim] : 0;
        j.has_ignore = !probs && ignore_index >= INT32_MIN && ignore_index <= INT32_MAX;
        j.ignore = j.has_ignore ? (int32_t)ignore_index : 0;
        j.ls = (float)ls;
        wgt_tensor *wf = NULL, *lo = NULL, *wo = NULL;
        st = as_f32(weight, &wf);
        j.w = wf;
        if (!st) st = wgt_tensor_new(ctx, WGT_F32, nr, rs, &lo);
        if (!st) st = wgt_tensor_new(ctx, WGT_F32, nr, rs, &wo);
        if (!st) st = row_run(ctx, &j, lo, wo);
        if (!st && !probs) st = index_check_now(ctx);
        if (!st) st = reduce_loss(lo, probs ? NULL : wo, red, 1, dt, &y);
        wgt_tensor_free(wf);
        wgt_tensor_free(lo);
        wgt_tensor_free(wo);
    } else {
        if (!(st = wgt_tensor_new(ctx, dt, red == WGT_REDUCTION_NONE ? nr : 0, rs, &y))) {
            ce_arg a = {weight != NULL, log_input, ignore_index, ls, red};
            const wgt_tensor *ins[3] = {x, target, weight};
            st = op_reference(ctx, ce_ref, &a, ins, 3, &y, 1);
        }
    }
    return op_finish(st, y, out);
}

static wgt_status cross_entropy_unrecorded(const wgt_tensor *input, const wgt_tensor *target, const wgt_tensor *weight,
                             int64_t ignore_index, double label_smoothing, wgt_reduction reduction, wgt_tensor **out)
{
    return ce_impl("cross_entropy", 0, input, target, weight, ignore_index, label_smoothing, reduction, out);
}

wgt_status wgt_cross_entropy(const wgt_tensor *input, const wgt_tensor *target, const wgt_tensor *weight,
                             int64_t ignore_index, double label_smoothing, wgt_reduction reduction, wgt_tensor **out)
{
    const wgt_tensor *in[3] = {input, target, weight};
    op_grad_loss p = {reduction, ignore_index, label_smoothing, 0};
    return op_record(cross_entropy_unrecorded(input, target, weight, ignore_index, label_smoothing, reduction, out),
                     OP_GRAD_CROSS_ENTROPY, in, 3, &p, sizeof p, out);
}


static wgt_status nll_loss_unrecorded(const wgt_tensor *input, const wgt_tensor *target, const wgt_tensor *weight,
                        int64_t ignore_index, wgt_reduction reduction, wgt_tensor **out)
{
    return ce_impl("nll_loss", 1, input, target, weight, ignore_index, 0, reduction, out);
}

wgt_status wgt_nll_loss(const wgt_tensor *input, const wgt_tensor *target, const wgt_tensor *weight,
                        int64_t ignore_index, wgt_reduction reduction, wgt_tensor **out)
{
    const wgt_tensor *in[3] = {input, target, weight};
    op_grad_loss p = {reduction, ignore_index, 0, 0};
    return op_record(nll_loss_unrecorded(input, target, weight, ignore_index, reduction, out), OP_GRAD_NLL, in, 3, &p,
                     sizeof p, out);
}


/* ---- cosine_similarity ---------------------------------------------------------------------- */

typedef struct cos_arg {
    int dim;
    double eps;
} cos_arg;

static wgt_status cos_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    cos_arg *a = arg;
    return wgt_cpu_cosine_similarity(&in[0], &in[1], a->dim, a->eps, &out[0]);
}

static wgt_status cosine_similarity_unrecorded(const wgt_tensor *x1, const wgt_tensor *x2, int dim, double eps, wgt_tensor **out)
{
    OP_BEGIN(x1, out);
    if (!x2) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "cosine_similarity: x2 is NULL");
    wgt_status st;
    if ((st = check_float(ctx, "cosine_similarity", "x1", x1)) || (st = check_float(ctx, "cosine_similarity", "x2", x2)))
        return st;
    int nd;
    int64_t shape[WGT_MAX_DIMS];
    if ((st = op_broadcast_shape(ctx, "cosine_similarity", &x1->l, &x2->l, &nd, shape))) return st;
    if (nd == 0) return op_fail(ctx, WGT_ERR_SHAPE, "cosine_similarity: the inputs are 0-D: there is no dim to reduce");
    if ((st = op_dim(ctx, "cosine_similarity", &dim, nd))) return st;
    int64_t os[WGT_MAX_DIMS];
    for (int d = 0, k = 0; d < nd; d++)
        if (d != dim) os[k++] = shape[d];
    wgt_dtype dt = op_promote(x1->l.dtype, x2->l.dtype);
    wgt_tensor *y = NULL;
    if (op_use_gpu(ctx, "cosine_similarity", dt, 1)) {
        wgt_layout a, b;
        op_broadcast_layout(&x1->l, nd, shape, &a);
        op_broadcast_layout(&x2->l, nd, shape, &b);
        row_job j;
        memset(&j, 0, sizeof j);
        j.mode = ROW_COSINE, j.x = x1, j.t = x2, j.nk = nd - 1;
        for (int d = 0, k = 0; d < nd; d++)
            if (d != dim) j.ks[k] = shape[d], j.kx[k] = a.strides[d], j.kt[k] = b.strides[d], k++;
        j.xoff = a.offset, j.toff = b.offset, j.C = shape[dim], j.cx = a.strides[dim], j.ct = b.strides[dim];
        j.eps = (float)eps;
        wgt_tensor *lo = NULL;
        st = wgt_tensor_new(ctx, WGT_F32, nd - 1, os, &lo);
        if (!st) st = row_run(ctx, &j, lo, NULL);
        if (!st) st = reduce_loss(lo, NULL, WGT_REDUCTION_NONE, 1, dt, &y);
        wgt_tensor_free(lo);
    } else if (!(st = wgt_tensor_new(ctx, dt, nd - 1, os, &y))) {
        cos_arg a = {dim, eps};
        const wgt_tensor *ins[2] = {x1, x2};
        st = op_reference(ctx, cos_ref, &a, ins, 2, &y, 1);
    }
    return op_finish(st, y, out);
}

wgt_status wgt_cosine_similarity(const wgt_tensor *x1, const wgt_tensor *x2, int dim, double eps, wgt_tensor **out)
{
    const wgt_tensor *in[2] = {x1, x2};
    int nd = x1 && x2 ? (x1->l.ndim > x2->l.ndim ? x1->l.ndim : x2->l.ndim) : 0;
    op_grad_cosine rec = {dim < 0 ? dim + nd : dim, eps};
    return op_record(cosine_similarity_unrecorded(x1, x2, dim, eps, out), OP_GRAD_COSINE_SIMILARITY, in, 2, &rec,
                     sizeof rec, out);
}

/* ---- elementwise losses ---------------------------------------------------------------------- */

typedef struct pw_params {
    uint32_t n, kind, off_x, off_t, off_w, off_p, has_w, has_p;
    float param;
    uint32_t dense, first, out_w0;
    uint32_t shape[8], sx[8], st[8], sw[8], sp[8];
} pw_params;

typedef struct pw_arg {
    wgt_cpu_loss kind;
    int has_w, has_p;
    double param;
    wgt_reduction red;
} pw_arg;

static wgt_status pw_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    pw_arg *a = arg;
    return wgt_cpu_pointwise_loss(a->kind, &in[0], &in[1], a->has_w ? &in[2] : NULL, a->has_p ? &in[3] : NULL,
                                  a->param, a->red, &out[0]);
}

/* Strides of t broadcast to (nd, shape), right-aligned in 8 slots; bit in *dense when t is laid out
 * as the output (then element j is at offset + j: no index arithmetic, and the work can split). */
static wgt_status pw_strides(wgt_context *ctx, const wgt_tensor *t, int nd, const int64_t *shape, uint32_t *s,
                             uint32_t *dense, uint32_t bit, wgt_layout *l)
{
    op_broadcast_layout(&t->l, nd, shape, l);
    if (wgt_layout_is_contiguous(l)) *dense |= bit;
    memset(s, 0, 8 * sizeof *s);
    for (int d = 0; d < nd; d++) {
        if (l->strides[d] > UINT32_MAX) return op_fail(ctx, WGT_ERR_LIMIT, "loss: a stride past 2^32 elements");
        s[8 - nd + d] = (uint32_t)l->strides[d];
    }
    return WGT_OK;
}

/* Bind elements [e0, e1) of input t (all it reaches when it is not dense). */
static wgt_status pw_bind(const wgt_tensor *t, const wgt_layout *l, int dense, int64_t e0, int64_t e1, uint32_t *off,
                          wgt_binding *b)
{
    int64_t lo, hi, base;
    if (dense) lo = l->offset + e0, hi = l->offset + e1 - 1;
    else {
        op_extent(l, &lo, &hi);
        if (hi < lo) lo = hi = l->offset;
    }
    wgt_status st = op_bind(t, lo, hi, b, &base);
    *off = (uint32_t)((dense ? l->offset + e0 : l->offset) - base);
    return st;
}

static wgt_status pw_gpu(wgt_context *ctx, wgt_cpu_loss kind, const wgt_tensor *x, const wgt_tensor *t,
                         const wgt_tensor *w, const wgt_tensor *pw, double param, int nd, const int64_t *shape,
                         wgt_tensor *y)
{
    int64_t n = wgt_tensor_numel(y);
    if (n == 0) return WGT_OK;
    if (n > UINT32_MAX) return op_fail(ctx, WGT_ERR_LIMIT, "loss: more than 2^32 elements");
    wgt_dtype odt = y->l.dtype;
    int pack = op_pack(odt);
    char pre[8192];
    snprintf(pre, sizeof pre, "%s\nconst PACK: u32 = %du;\nconst WG: u32 = %uu;\n", op_wgsl_lib(), pack, op_workgroup_size(ctx));
    op_wgsl_loader(pre, sizeof pre, "ldx", "xs", x->l.dtype, "f32");
    op_wgsl_loader(pre, sizeof pre, "ldt", "ts", t->l.dtype, "f32");
    op_wgsl_loader(pre, sizeof pre, "ldw", "wsb", w ? w->l.dtype : WGT_F32, "f32");
    op_wgsl_loader(pre, sizeof pre, "ldp", "psb", pw ? pw->l.dtype : WGT_F32, "f32");
    op_wgsl_storer(pre, sizeof pre, "st", "out", odt, "f32");
    wgt_kernel *k;
    wgt_status st = wgt_gpu_kernel(ctx, "loss_pw", pre, "main", NULL, 0, &k);
    if (st) return st;
    pw_params p;
    memset(&p, 0, sizeof p);
    p.kind = (uint32_t)kind, p.param = (float)param;
    p.has_w = w != NULL, p.has_p = pw != NULL;
    for (int d = 0; d < 8; d++) p.shape[d] = d < 8 - nd ? 1 : (uint32_t)shape[d - (8 - nd)];
    const wgt_tensor *ins[4] = {x, t, w ? w : x, pw ? pw : x};
    uint32_t *strides[4] = {p.sx, p.st, p.sw, p.sp}, *offs[4] = {&p.off_x, &p.off_t, &p.off_w, &p.off_p};
    wgt_layout ls[4];
    for (int i = 0; i < 4; i++)
        if ((st = pw_strides(ctx, ins[i], nd, shape, strides[i], &p.dense, 1u << i, &ls[i]))) return st;
    /* pieces of `per` elements, a multiple of 1024 so that every binding starts aligned, when the
     * dense tensors pass one binding (the others are bound whole) */
    uint64_t limit = wgt_gpu_limits(ctx)->max_storage_buffer_binding_size, widest = wgt_dtype_size(odt);
    for (int i = 0; i < 4; i++)
        if ((p.dense >> i) & 1 && wgt_dtype_size(ins[i]->l.dtype) > widest) widest = wgt_dtype_size(ins[i]->l.dtype);
    int64_t per = (int64_t)((limit - 1024) / widest) / 1024 * 1024;
    if (per < 1024) per = 1024;
    wgt_binding b[5];
    int64_t base;
    for (int64_t e0 = 0; e0 < n; e0 += per) {
        int64_t e1 = e0 + per < n ? e0 + per : n;
        for (int i = 0; i < 4; i++)
            if ((st = pw_bind(ins[i], &ls[i], (p.dense >> i) & 1, e0, e1, offs[i], &b[i]))) return st;
        if ((st = op_bind(y, y->l.offset + e0, y->l.offset + e1 - 1, &b[4], &base))) return st;
        if ((y->l.offset + e0 - base) % pack) return op_fail(ctx, WGT_ERR_INTERNAL, "loss: output not word aligned");
        p.first = (uint32_t)e0, p.n = (uint32_t)(e1 - e0);
        p.out_w0 = (uint32_t)((y->l.offset + e0 - base) / pack);
        uint64_t words = ((uint64_t)(e1 - e0) + pack - 1) / pack;
        uint32_t gx, gy;
        op_grid(ctx, (words + op_workgroup_size(ctx) - 1) / op_workgroup_size(ctx), &gx, &gy);
        if ((st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 5, gx, gy, 1))) return st;
    }
    return WGT_OK;
}

static wgt_status pw_impl(const char *name, wgt_cpu_loss kind, const wgt_tensor *x, const wgt_tensor *t,
                          const wgt_tensor *w, const wgt_tensor *pw, double param, wgt_reduction red, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    if (!t) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: target is NULL", name);
    wgt_status st;
    if ((st = check_float(ctx, name, "input", x)) || (st = check_float(ctx, name, "target", t))) return st;
    if ((st = check_reduction(ctx, name, red, kind == WGT_CPU_LOSS_KL_DIV))) return st;
    if (w && (st = check_float(ctx, name, "weight", w))) return st;
    if (pw && (st = check_float(ctx, name, "pos_weight", pw))) return st;
    int nd;
    int64_t shape[WGT_MAX_DIMS];
    if ((st = op_broadcast_shape(ctx, name, &x->l, &t->l, &nd, shape))) return st;
    const wgt_tensor *aux[2] = {w, pw};
    for (int i = 0; i < 2; i++) {
        if (!aux[i]) continue;
        wgt_layout full = x->l;
        full.ndim = nd;
        memcpy(full.shape, shape, sizeof shape);
        int n2;
        int64_t s2[WGT_MAX_DIMS];
        if ((st = op_broadcast_shape(ctx, name, &full, &aux[i]->l, &n2, s2))) return st;
        int same = n2 == nd;
        for (int d = 0; same && d < nd; d++) same = s2[d] == shape[d];
        if (!same)
            return op_fail(ctx, WGT_ERR_SHAPE, "%s: %s must broadcast to the input's shape without growing it", name,
                           i ? "pos_weight" : "weight");
    }
    wgt_dtype dt = op_promote(x->l.dtype, t->l.dtype);
    wgt_tensor *y = NULL;
    if (op_use_gpu(ctx, name, dt, 1)) {
        wgt_tensor *l = NULL;
        st = wgt_tensor_new(ctx, red == WGT_REDUCTION_NONE ? dt : WGT_F32, nd, shape, &l);
        if (!st) st = pw_gpu(ctx, kind, x, t, w, pw, param, nd, shape, l);
        if (!st && red == WGT_REDUCTION_NONE) y = l, l = NULL;
        else if (!st) st = reduce_loss(l, NULL, red, nd ? (double)shape[0] : 1, dt, &y);
        wgt_tensor_free(l);
    } else if (!(st = wgt_tensor_new(ctx, dt, red == WGT_REDUCTION_NONE ? nd : 0, shape, &y))) {
        pw_arg a = {kind, w != NULL, pw != NULL, param, red};
        const wgt_tensor *ins[4] = {x, t, w, pw};
        st = op_reference(ctx, pw_ref, &a, ins, 4, &y, 1);
    }
    return op_finish(st, y, out);
}

static wgt_status mse_loss_unrecorded(const wgt_tensor *input, const wgt_tensor *target, wgt_reduction reduction, wgt_tensor **out)
{
    return pw_impl("mse_loss", WGT_CPU_LOSS_MSE, input, target, NULL, NULL, 0, reduction, out);
}

wgt_status wgt_mse_loss(const wgt_tensor *input, const wgt_tensor *target, wgt_reduction reduction, wgt_tensor **out)
{
    const wgt_tensor *in[2] = {input, target};
    op_grad_loss p = {reduction, 0, 0, 0};
    return op_record(mse_loss_unrecorded(input, target, reduction, out), OP_GRAD_MSE, in, 2, &p, sizeof p, out);
}


static wgt_status l1_loss_unrecorded(const wgt_tensor *input, const wgt_tensor *target, wgt_reduction reduction, wgt_tensor **out)
{
    return pw_impl("l1_loss", WGT_CPU_LOSS_L1, input, target, NULL, NULL, 0, reduction, out);
}

wgt_status wgt_l1_loss(const wgt_tensor *input, const wgt_tensor *target, wgt_reduction reduction, wgt_tensor **out)
{
    const wgt_tensor *in[2] = {input, target};
    op_grad_loss p = {reduction, 0, 0, 0};
    return op_record(l1_loss_unrecorded(input, target, reduction, out), OP_GRAD_L1, in, 2, &p, sizeof p, out);
}


static wgt_status smooth_l1_loss_unrecorded(const wgt_tensor *input, const wgt_tensor *target, wgt_reduction reduction,
                              double beta, wgt_tensor **out)
{
    if (input && out && !(beta >= 0)) {
        *out = NULL;
        return op_fail(input->st->ctx, WGT_ERR_INVALID_ARGUMENT, "smooth_l1_loss: beta %g must be >= 0", beta);
    }
    return pw_impl("smooth_l1_loss", WGT_CPU_LOSS_SMOOTH_L1, input, target, NULL, NULL, beta, reduction, out);
}

wgt_status wgt_smooth_l1_loss(const wgt_tensor *input, const wgt_tensor *target, wgt_reduction reduction,
                              double beta, wgt_tensor **out)
{
    const wgt_tensor *in[2] = {input, target};
    op_grad_loss p = {reduction, 0, beta, 0};
    return op_record(smooth_l1_loss_unrecorded(input, target, reduction, beta, out), OP_GRAD_SMOOTH_L1, in, 2, &p,
                     sizeof p, out);
}


static wgt_status huber_loss_unrecorded(const wgt_tensor *input, const wgt_tensor *target, wgt_reduction reduction, double delta,
                          wgt_tensor **out)
{
    if (input && out && !(delta > 0)) {
        *out = NULL;
        return op_fail(input->st->ctx, WGT_ERR_INVALID_ARGUMENT, "huber_loss: delta %g must be > 0", delta);
    }
    return pw_impl("huber_loss", WGT_CPU_LOSS_HUBER, input, target, NULL, NULL, delta, reduction, out);
}

wgt_status wgt_huber_loss(const wgt_tensor *input, const wgt_tensor *target, wgt_reduction reduction, double delta,
                          wgt_tensor **out)
{
    const wgt_tensor *in[2] = {input, target};
    op_grad_loss p = {reduction, 0, delta, 0};
    return op_record(huber_loss_unrecorded(input, target, reduction, delta, out), OP_GRAD_HUBER, in, 2, &p, sizeof p,
                     out);
}

static wgt_status bce_unrecorded(const wgt_tensor *input, const wgt_tensor *target, const wgt_tensor *weight,
                                    wgt_reduction reduction, wgt_tensor **out)
{
    return pw_impl("binary_cross_entropy", WGT_CPU_LOSS_BCE, input, target, weight, NULL, 0, reduction, out);
}

wgt_status wgt_binary_cross_entropy(const wgt_tensor *input, const wgt_tensor *target, const wgt_tensor *weight,
                                    wgt_reduction reduction, wgt_tensor **out)
{
    const wgt_tensor *in[3] = {input, target, weight};
    op_grad_loss p = {reduction, 0, 0, 0};
    return op_record(bce_unrecorded(input, target, weight, reduction, out), OP_GRAD_BCE, in, 3, &p, sizeof p, out);
}


static wgt_status bce_logits_unrecorded(const wgt_tensor *input, const wgt_tensor *target,
                                                const wgt_tensor *weight, const wgt_tensor *pos_weight,
                                                wgt_reduction reduction, wgt_tensor **out)
{
    return pw_impl("binary_cross_entropy_with_logits", WGT_CPU_LOSS_BCE_LOGITS, input, target, weight, pos_weight, 0,
                   reduction, out);
}

wgt_status wgt_binary_cross_entropy_with_logits(const wgt_tensor *input, const wgt_tensor *target,
                                                const wgt_tensor *weight, const wgt_tensor *pos_weight,
                                                wgt_reduction reduction, wgt_tensor **out)
{
    const wgt_tensor *in[4] = {input, target, weight, pos_weight};
    op_grad_loss p = {reduction, 0, 0, 0};
    return op_record(bce_logits_unrecorded(input, target, weight, pos_weight, reduction, out), OP_GRAD_BCE_LOGITS, in,
                     4, &p, sizeof p, out);
}


static wgt_status kl_div_unrecorded(const wgt_tensor *input, const wgt_tensor *target, wgt_reduction reduction, int log_target,
                      wgt_tensor **out)
{
    return pw_impl("kl_div", WGT_CPU_LOSS_KL_DIV, input, target, NULL, NULL, log_target ? 1 : 0, reduction, out);
}

wgt_status wgt_kl_div(const wgt_tensor *input, const wgt_tensor *target, wgt_reduction reduction, int log_target,
                      wgt_tensor **out)
{
    const wgt_tensor *in[2] = {input, target};
    op_grad_loss p = {reduction, 0, 0, log_target};
    return op_record(kl_div_unrecorded(input, target, reduction, log_target, out), OP_GRAD_KL_DIV, in, 2, &p, sizeof p,
                     out);
}

