/* Softmax and normalisation: softmax, log_softmax (any dim), layer_norm, rms_norm, group_norm,
 * batch_norm. One kernel (src/kernels/norm.wgsl) normalises rows of a strided input, a workgroup per
 * row (per 2 or 4 rows for 16- and 8-bit outputs), statistics in f32; the op is a uniform. */
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "ops/elementwise.h"
#include "ops/norm.h"
#include "ops/ops.h"
#include "tensor/record.h"

/* The optional per-element parameters of a normalisation (contiguous, or NULL) and their indexing:
 * element (o, r) reads (o % wmod) * wmul + r / wdiv. */
typedef struct norm_aux {
    const wgt_tensor *w, *b, *mean, *var;
    uint32_t wmod, wmul, wdiv;
} norm_aux;

/* What the norm prelude depends on: the pipeline cache's key (no padding bytes). */
typedef struct norm_key {
    uint8_t xdt, odt, pad[2];
    uint32_t sg, wg;
} norm_key;

/* The prelude of key k; with extra appended, and without the loader ldx (skip_ld) or the storer st
 * (skip_st), which extra then defines (a graph's fused prologue or epilogue: ew_host_note). */
static char *norm_prelude_ex(const void *key, const char *extra, int skip_ld, int skip_st)
{
    const norm_key *k = key;
    size_t cap = 16384 + (extra ? strlen(extra) : 0);
    char *pre = malloc(cap);
    if (!pre) return NULL;
    const char *lib = op_wgsl_lib();
    snprintf(pre, cap, "%s%s\nconst PACK: u32 = %du;\nconst SG: u32 = %uu;\nconst WG: u32 = %uu;\n",
             k->sg > 1 ? "enable subgroups;\n" : "", lib ? lib : "", op_pack((wgt_dtype)k->odt), k->sg, k->wg);
    if (!skip_ld) op_wgsl_loader(pre, cap, "ldx", "xs", (wgt_dtype)k->xdt, "f32");
    if (!skip_st) op_wgsl_storer(pre, cap, "st", "out", (wgt_dtype)k->odt, "f32");
    /* the subgroup shuffles sg_combine uses: a section of src/kernels/lib_subgroup.wgsl */
    if (!op_wgsl_section(pre, cap, "lib_subgroup", k->sg > 1 ? "shuffle" : "no shuffle")) {
        free(pre);
        return NULL;
    }
    if (extra) {
        size_t used = strlen(pre);
        snprintf(pre + used, cap - used, "%s", extra);
    }
    return pre;
}

static char *norm_prelude(void *arg) { return norm_prelude_ex(arg, NULL, 0, 0); }

static norm_key norm_key_of(wgt_context *ctx, wgt_dtype xdt, wgt_dtype odt)
{
    norm_key key;
    memset(&key, 0, sizeof key);
    key.xdt = (uint8_t)xdt, key.odt = (uint8_t)odt;
    key.sg = op_shuffle_subgroup(ctx);
    key.wg = op_workgroup_size(ctx);
    if (key.sg > key.wg) key.sg = 1;
    return key;
}

static wgt_status norm_kernel(wgt_context *ctx, wgt_dtype xdt, wgt_dtype odt, wgt_kernel **k)
{
    norm_key key = norm_key_of(ctx, xdt, odt);
    return wgt_gpu_kernel_keyed(ctx, "norm", &key, sizeof key, norm_prelude, &key, "main", NULL, 0, k);
}

/* Say what the dispatch just made (mark: wgt_gpu_capture_mark before it) computed, so a captured
 * graph can fuse elementwise chains into it (elementwise_fuse.c). unused: the absent parameters'
 * bindings (bound to the input as placeholders). */
static void norm_note(wgt_context *ctx, int mark, int op, const wgt_tensor *x, const wgt_tensor *y, uint32_t unused)
{
    static const char *const names[] = {"softmax", "log_softmax", "layer_norm", "rms_norm", "norm"};
    if (mark < 0) return;
    ew_host_note n;
    memset(&n, 0, sizeof n);
    norm_key key = norm_key_of(ctx, x->l.dtype, y->l.dtype);
    memcpy(n.key, &key, sizeof key);
    n.prelude = norm_prelude_ex;
    n.file = "norm", n.name = names[op];
    n.n_bind = 6, n.unused = unused, n.in = 0, n.out = 1;
    n.in_var = "xs", n.ld = "ldx", n.ld_type = "f32", n.in_dt = x->l.dtype;
    n.out_var = "out", n.st = "st", n.st_type = "f32", n.out_dt = y->l.dtype;
    n.out_numel = wgt_tensor_numel(y);
    wgt_gpu_capture_note(ctx, mark, EW_HOST_NOTE, &n, sizeof n);
}

/* Merge neighbouring dims that one stride walks, dropping size-1 dims; returns the count. */
static int merge_dims(int n, int64_t *shape, int64_t *stride)
{
    int m = 0;
    for (int d = 0; d < n; d++) {
        if (shape[d] == 1) continue;
        if (m > 0 && stride[m - 1] == stride[d] * shape[d]) {
            shape[m - 1] *= shape[d];
            stride[m - 1] = stride[d];
        } else {
            shape[m] = shape[d];
            stride[m] = stride[d];
            m++;
        }
    }
    return m;
}

/* Normalise the rows of x into y (contiguous, x's shape): rows are positions over the kept dims
 * (ks/kst), each of R elements over the row dims (rs/rst); inner: see norm.wgsl. */
static wgt_status norm_gpu(wgt_context *ctx, int op, const wgt_tensor *x, int nk, int64_t *ks, int64_t *kst, int nr,
                           int64_t *rs, int64_t *rst, int64_t inner, const norm_aux *a, double eps, wgt_tensor *y)
{
    int64_t n_rows = 1, R = 1;
    for (int d = 0; d < nk; d++) n_rows *= ks[d];
    for (int d = 0; d < nr; d++) R *= rs[d];
    if (n_rows == 0 || R == 0) return WGT_OK;
    if (n_rows * R > UINT32_MAX) return op_fail(ctx, WGT_ERR_LIMIT, "norm: more than 2^32 elements");
    nk = merge_dims(nk, ks, kst);
    nr = merge_dims(nr, rs, rst);
    norm_params p;
    memset(&p, 0, sizeof p);
    p.R = (uint32_t)R;
    p.op = (uint32_t)op;
    p.eps = (float)eps;
    p.inner = (uint32_t)inner;
    p.wmod = a->wmod ? a->wmod : 1;
    p.wmul = a->wmul;
    p.wdiv = a->wdiv ? a->wdiv : 1;
    p.has_w = a->w != NULL;
    p.has_b = a->b != NULL;
    wgt_layout rl = x->l;
    rl.ndim = nr;
    for (int d = 0; d < nr; d++) rl.shape[d] = rs[d], rl.strides[d] = rst[d];
    wgt_status st;
    if ((st = op_layout_params_fill(ctx, &rl, &p.row))) return st;
    p.row_simple = nr <= 1;
    p.row_stride = nr == 1 ? (uint32_t)rst[0] : 0;
    wgt_binding b[6];
    int64_t base;
    const wgt_tensor *aux[4] = {a->w, a->b, a->mean, a->var};
    uint32_t *offs[4] = {&p.w_off, &p.b_off, &p.m_off, &p.v_off};
    for (int i = 0; i < 4; i++) {
        if (!aux[i]) continue;
        if ((st = op_bind_all(aux[i], &b[2 + i], &base))) return st;
        *offs[i] = (uint32_t)(aux[i]->l.offset - base);
        wgt_dtype dt = aux[i]->l.dtype;
        p.pdt |= (uint32_t)(dt == WGT_F16 ? 1 : dt == WGT_BF16 ? 2 : 0) << (2 * i);
    }
    /* The input as [kept..., row...]; with rows end to end in the output (inner 1), the work splits
     * along kept dim 0 into parts that each fit one binding. */
    wgt_layout P = x->l, O;
    P.ndim = nk + nr;
    for (int d = 0; d < nk; d++) P.shape[d] = ks[d], P.strides[d] = kst[d];
    for (int d = 0; d < nr; d++) P.shape[nk + d] = rs[d], P.strides[nk + d] = rst[d];
    int64_t oshape[WGT_MAX_DIMS];
    memcpy(oshape, ks, nk * sizeof *ks);
    oshape[nk] = R;
    wgt_layout_contiguous(&O, y->l.dtype, nk + 1, oshape);
    int pack = op_pack(y->l.dtype);
    int64_t rows = nk ? ks[0] : 1, per_row = n_rows / rows, per = rows;
    if (nk && inner == 1) {
        const wgt_layout *ls[2] = {&P, &O};
        per = op_rows_per_chunk(ctx, ls, 2);
        if (per == 0) return op_fail(ctx, WGT_ERR_LIMIT, "norm: one row is larger than a storage binding");
        if (per < rows) {
            while (per > 1 && (per * per_row) % pack) per--;
            if ((per * per_row) % pack) return op_fail(ctx, WGT_ERR_LIMIT, "norm: cannot split on output word boundaries");
        }
    }
    wgt_kernel *k;
    if ((st = norm_kernel(ctx, x->l.dtype, y->l.dtype, &k))) return st;
    for (int64_t r0 = 0; r0 < rows; r0 += per) {
        int64_t r1 = r0 + per < rows ? r0 + per : rows;
        wgt_layout c = P;
        if (nk) c.offset += r0 * c.strides[0], c.shape[0] = r1 - r0;
        int64_t lo, hi;
        op_extent(&c, &lo, &hi);
        if ((st = op_bind(x, lo, hi, &b[0], &base))) return st;
        p.off = (uint32_t)(c.offset - base);
        c.ndim = nk;
        if ((st = op_layout_params_fill(ctx, &c, &p.kept))) return st;
        p.n_rows = (uint32_t)((r1 - r0) * per_row);
        p.row0 = (uint32_t)(r0 * per_row);
        int64_t e0 = r0 * per_row * R;
        if ((st = op_bind(y, e0, r1 * per_row * R - 1, &b[1], &base))) return st;
        p.out_w0 = (uint32_t)((e0 - base) / pack);
        uint32_t unused = 0;
        for (int i = 0; i < 4; i++)
            if (!aux[i]) b[2 + i] = b[0], unused |= 1u << (2 + i);
        uint32_t gx, gy;
        op_grid(ctx, ((uint64_t)p.n_rows + pack - 1) / pack, &gx, &gy);
        int mark = wgt_gpu_capture_mark(ctx);
        if ((st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 6, gx, gy, 1))) return st;
        norm_note(ctx, mark, op, x, y, unused);
    }
    return WGT_OK;
}

/* ---- softmax -------------------------------------------------------------------------------- */

typedef struct softmax_arg {
    int dim, log;
} softmax_arg;

static wgt_status softmax_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    softmax_arg *a = arg;
    return a->log ? wgt_cpu_log_softmax(&in[0], a->dim, &out[0]) : wgt_cpu_softmax(&in[0], a->dim, &out[0]);
}

static wgt_status softmax_impl(const wgt_tensor *x, int dim, int log, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    const char *name = log ? "log_softmax" : "softmax";
    wgt_status st = op_dim(ctx, name, &dim, x->l.ndim);
    if (st) return st;
    wgt_dtype odt = op_is_float(x->l.dtype) ? x->l.dtype : WGT_F32;
    wgt_tensor *y;
    if ((st = wgt_tensor_new(ctx, odt, x->l.ndim, x->l.shape, &y))) return st;
    int gpu_ok = x->l.dtype != WGT_I64;
    if (op_use_gpu(ctx, name, x->l.dtype, gpu_ok)) {
        int nk = 0;
        int64_t ks[WGT_MAX_DIMS], kst[WGT_MAX_DIMS], rs[1] = {1}, rst[1] = {0}, inner = 1;
        for (int d = 0; d < x->l.ndim; d++) {
            if (d == dim) rs[0] = x->l.shape[d], rst[0] = x->l.strides[d];
            else ks[nk] = x->l.shape[d], kst[nk++] = x->l.strides[d];
            if (d > dim) inner *= x->l.shape[d];
        }
        norm_aux a = {0};
        int pack = op_pack(odt);
        if (inner == 1 || inner % pack == 0)
            st = norm_gpu(ctx, log ? NORM_LOG_SOFTMAX : NORM_SOFTMAX, x, nk, ks, kst, 1, rs, rst, inner, &a, 0, y);
        else { /* 16-bit words would straddle rows: normalise in f32, then convert */
            wgt_tensor *t;
            if (!(st = wgt_tensor_new(ctx, WGT_F32, x->l.ndim, x->l.shape, &t))) {
                st = norm_gpu(ctx, log ? NORM_LOG_SOFTMAX : NORM_SOFTMAX, x, nk, ks, kst, 1, rs, rst, inner, &a, 0, t);
                wgt_tensor *c = NULL;
                if (!st && !(st = wgt_tensor_cast(t, odt, &c))) {
                    wgt_tensor_free(y);
                    y = c;
                }
                wgt_tensor_free(t);
            }
        }
    } else if (!(st = op_fallback_status(ctx, name, x->l.dtype, gpu_ok))) {
        softmax_arg a = {dim, log};
        const wgt_tensor *ins[1] = {x};
        st = op_reference(ctx, softmax_ref, &a, ins, 1, &y, 1);
    }
    return op_finish(st, y, out);
}

static wgt_status softmax_unrecorded(const wgt_tensor *x, int dim, wgt_tensor **out) { return softmax_impl(x, dim, 0, out); }

wgt_status wgt_softmax(const wgt_tensor *x, int dim, wgt_tensor **out)
{
    int d = x && dim < 0 ? dim + x->l.ndim : dim; /* the rule reads a normalised dim */
    return op_record(softmax_unrecorded(x, dim, out), OP_GRAD_SOFTMAX, &x, 1, &d, sizeof d, out);
}

static wgt_status log_softmax_unrecorded(const wgt_tensor *x, int dim, wgt_tensor **out) { return softmax_impl(x, dim, 1, out); }

wgt_status wgt_log_softmax(const wgt_tensor *x, int dim, wgt_tensor **out)
{
    int d = x && dim < 0 ? dim + x->l.ndim : dim;
    return op_record(log_softmax_unrecorded(x, dim, out), OP_GRAD_LOG_SOFTMAX, &x, 1, &d, sizeof d, out);
}


/* ---- layer_norm, rms_norm ------------------------------------------------------------------- */

/* A contiguous version of an optional parameter tensor whose shape must equal (n, shape). */
static wgt_status norm_param(wgt_context *ctx, const char *op, const char *what, const wgt_tensor *t, int n,
                             const int64_t *shape, const wgt_tensor **out)
{
    *out = NULL;
    if (!t) return WGT_OK;
    if (t->st->ctx != ctx) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: %s lives on another context", op, what);
    int ok = t->l.ndim == n;
    for (int d = 0; ok && d < n; d++) ok = t->l.shape[d] == shape[d];
    if (!ok) return op_fail(ctx, WGT_ERR_SHAPE, "%s: %s has the wrong shape (want the normalised dims' shape)", op, what);
    if (!op_is_float(t->l.dtype))
        return op_fail(ctx, WGT_ERR_DTYPE, "%s: %s must be f32, f16 or bf16, not %s", op, what, wgt_dtype_name(t->l.dtype));
    wgt_tensor *c;
    wgt_status st = wgt_tensor_contiguous(t, &c);
    *out = c;
    return st;
}

typedef struct ln_arg {
    int norm_ndim, rms, has_w, has_b;
    double eps;
} ln_arg;

static wgt_status ln_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    ln_arg *a = arg;
    const wgt_cpu_tensor *w = a->has_w ? &in[1] : NULL, *b = a->has_b ? &in[2] : NULL;
    if (a->rms) return wgt_cpu_rms_norm(&in[0], a->norm_ndim, w, a->eps, &out[0]);
    return wgt_cpu_layer_norm(&in[0], a->norm_ndim, w, b, a->eps, &out[0], NULL, NULL);
}

static wgt_status ln_impl(const char *name, int rms, const wgt_tensor *x, int norm_ndim, const wgt_tensor *weight,
                          const wgt_tensor *bias, double eps, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    int nd = x->l.ndim;
    if (norm_ndim < 1 || norm_ndim > nd)
        return op_fail(ctx, WGT_ERR_SHAPE, "%s: norm_ndim %d must be in 1..%d (the input's dims)", name, norm_ndim, nd);
    if (!op_is_float(x->l.dtype))
        return op_fail(ctx, WGT_ERR_DTYPE, "%s needs a floating-point tensor, not %s", name, wgt_dtype_name(x->l.dtype));
    const int64_t *nshape = x->l.shape + nd - norm_ndim;
    const wgt_tensor *w = NULL, *b = NULL;
    wgt_status st = norm_param(ctx, name, "weight", weight, norm_ndim, nshape, &w);
    if (!st) st = norm_param(ctx, name, "bias", bias, norm_ndim, nshape, &b);
    wgt_tensor *y = NULL;
    if (!st) st = wgt_tensor_new(ctx, x->l.dtype, nd, x->l.shape, &y);
    if (!st) {
        if (op_use_gpu(ctx, name, x->l.dtype, 1)) {
            int64_t ks[WGT_MAX_DIMS], kst[WGT_MAX_DIMS], rs[WGT_MAX_DIMS], rst[WGT_MAX_DIMS];
            int nk = nd - norm_ndim;
            memcpy(ks, x->l.shape, nk * sizeof *ks);
            memcpy(kst, x->l.strides, nk * sizeof *kst);
            memcpy(rs, x->l.shape + nk, norm_ndim * sizeof *rs);
            memcpy(rst, x->l.strides + nk, norm_ndim * sizeof *rst);
            norm_aux a = {w, b, NULL, NULL, 1, 0, 1};
            st = norm_gpu(ctx, rms ? NORM_RMS : NORM_LAYER, x, nk, ks, kst, norm_ndim, rs, rst, 1, &a, eps, y);
        } else {
            ln_arg a = {norm_ndim, rms, w != NULL, b != NULL, eps};
            const wgt_tensor *ins[3] = {x, w, b};
            st = op_reference(ctx, ln_ref, &a, ins, 3, &y, 1);
        }
    }
    wgt_tensor_free((wgt_tensor *)w);
    wgt_tensor_free((wgt_tensor *)b);
    return op_finish(st, y, out);
}

static wgt_status layer_norm_unrecorded(const wgt_tensor *x, int norm_ndim, const wgt_tensor *weight, const wgt_tensor *bias,
                          double eps, wgt_tensor **out)
{
    return ln_impl("layer_norm", 0, x, norm_ndim, weight, bias, eps, out);
}

wgt_status wgt_layer_norm(const wgt_tensor *x, int norm_ndim, const wgt_tensor *weight, const wgt_tensor *bias,
                          double eps, wgt_tensor **out)
{
    const wgt_tensor *in[3] = {x, weight, bias};
    op_grad_norm p = {norm_ndim, eps};
    return op_record(layer_norm_unrecorded(x, norm_ndim, weight, bias, eps, out), OP_GRAD_LAYER_NORM, in, 3, &p,
                     sizeof p, out);
}


static wgt_status rms_norm_unrecorded(const wgt_tensor *x, int norm_ndim, const wgt_tensor *weight, double eps, wgt_tensor **out)
{
    return ln_impl("rms_norm", 1, x, norm_ndim, weight, NULL, eps, out);
}

wgt_status wgt_rms_norm(const wgt_tensor *x, int norm_ndim, const wgt_tensor *weight, double eps, wgt_tensor **out)
{
    const wgt_tensor *in[2] = {x, weight};
    op_grad_norm p = {norm_ndim, eps};
    return op_record(rms_norm_unrecorded(x, norm_ndim, weight, eps, out), OP_GRAD_RMS_NORM, in, 2, &p, sizeof p, out);
}


/* ---- group_norm, batch_norm ------------------------------------------------------------------ */

typedef struct gn_arg {
    int groups, has_w, has_b;
    double eps;
} gn_arg;

static wgt_status gn_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    gn_arg *a = arg;
    return wgt_cpu_group_norm(&in[0], a->groups, a->has_w ? &in[1] : NULL, a->has_b ? &in[2] : NULL, a->eps, &out[0]);
}

static wgt_status group_norm_unrecorded(const wgt_tensor *x, int groups, const wgt_tensor *weight,
                                        const wgt_tensor *bias, double eps, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    int nd = x->l.ndim;
    if (nd < 2) return op_fail(ctx, WGT_ERR_SHAPE, "group_norm: the input must be [N, C, *], not %d-D", nd);
    int64_t C = x->l.shape[1];
    if (groups < 1 || C % groups)
        return op_fail(ctx, WGT_ERR_SHAPE, "group_norm: %d groups do not divide %lld channels", groups, (long long)C);
    if (!op_is_float(x->l.dtype))
        return op_fail(ctx, WGT_ERR_DTYPE, "group_norm needs a floating-point tensor, not %s", wgt_dtype_name(x->l.dtype));
    const wgt_tensor *w = NULL, *b = NULL;
    wgt_status st = norm_param(ctx, "group_norm", "weight", weight, 1, &C, &w);
    if (!st) st = norm_param(ctx, "group_norm", "bias", bias, 1, &C, &b);
    wgt_tensor *y = NULL;
    if (!st) st = wgt_tensor_new(ctx, x->l.dtype, nd, x->l.shape, &y);
    if (!st) {
        if (op_use_gpu(ctx, "group_norm", x->l.dtype, 1)) {
            /* rows [N, groups] of [C / groups, spatial...] elements, read in place */
            int64_t cpg = C / groups, S = 1;
            int64_t ks[2] = {x->l.shape[0], groups}, kst[2] = {x->l.strides[0], x->l.strides[1] * cpg};
            int64_t rs[WGT_MAX_DIMS], rst[WGT_MAX_DIMS];
            rs[0] = cpg, rst[0] = x->l.strides[1];
            for (int d = 2; d < nd; d++) rs[d - 1] = x->l.shape[d], rst[d - 1] = x->l.strides[d], S *= x->l.shape[d];
            if (S > UINT32_MAX) st = op_fail(ctx, WGT_ERR_LIMIT, "group_norm: spatial size past 2^32");
            norm_aux a = {w, b, NULL, NULL, (uint32_t)groups, (uint32_t)cpg, (uint32_t)(S ? S : 1)};
            if (!st) st = norm_gpu(ctx, NORM_LAYER, x, 2, ks, kst, nd - 1, rs, rst, 1, &a, eps, y);
        } else {
            gn_arg a = {groups, w != NULL, b != NULL, eps};
            const wgt_tensor *ins[3] = {x, w, b};
            st = op_reference(ctx, gn_ref, &a, ins, 3, &y, 1);
        }
    }
    wgt_tensor_free((wgt_tensor *)w);
    wgt_tensor_free((wgt_tensor *)b);
    return op_finish(st, y, out);
}

/* alpha * a + beta * b (new tensor, f32 or a's dtype by promotion). */
static wgt_status axpby(wgt_context *ctx, const wgt_tensor *a, double alpha, const wgt_tensor *b, double beta,
                        wgt_tensor **out)
{
    wgt_tensor *sa = NULL, *sb = NULL, *ta = NULL, *tb = NULL;
    wgt_status st = wgt_full(ctx, WGT_F32, 0, NULL, alpha, &sa);
    if (!st) st = wgt_full(ctx, WGT_F32, 0, NULL, beta, &sb);
    if (!st) st = wgt_binary(WGT_BINARY_MUL, a, sa, &ta);
    if (!st) st = wgt_binary(WGT_BINARY_MUL, b, sb, &tb);
    if (!st) st = wgt_binary(WGT_BINARY_ADD, ta, tb, out);
    wgt_tensor_free(sa);
    wgt_tensor_free(sb);
    wgt_tensor_free(ta);
    wgt_tensor_free(tb);
    return st;
}

/* Training batch_norm on the GPU: the batch's mean and biased variance per channel (f32, through
 * wgt_reduce), normalisation with them, then running = (1 - momentum) running + momentum * batch
 * (the variance unbiased) written in place. n = N * spatial > 1. */
static wgt_status bn_train_gpu(wgt_context *ctx, const wgt_tensor *x, wgt_tensor *running_mean,
                               wgt_tensor *running_var, norm_aux *a, int64_t n, double momentum, double eps,
                               int nk, int64_t *ks, int64_t *kst, int nr, int64_t *rs, int64_t *rst, wgt_tensor *y)
{
    uint32_t dims = (uint32_t)((1ull << x->l.ndim) - 1) & ~2u;
    wgt_tensor *xf = NULL, *mean = NULL, *var = NULL, *nm = NULL, *nv = NULL;
    wgt_status st = x->l.dtype == WGT_F32 ? (xf = wgt_tensor_ref(x)) ? WGT_OK : WGT_ERR_OUT_OF_MEMORY
                                          : wgt_tensor_cast(x, WGT_F32, &xf);
    if (!st) st = wgt_reduce(WGT_REDUCE_MEAN, xf, dims, 0, 0, &mean);
    if (!st) st = wgt_reduce(WGT_REDUCE_VAR, xf, dims, 0, 0, &var);
    if (!st) {
        a->mean = mean, a->var = var;
        st = norm_gpu(ctx, NORM_GIVEN, x, nk, ks, kst, nr, rs, rst, 1, a, eps, y);
    }
    if (!st && running_mean) {
        if (!(st = axpby(ctx, running_mean, 1 - momentum, mean, momentum, &nm))) st = wgt_tensor_assign(running_mean, nm);
        if (!st && !(st = axpby(ctx, running_var, 1 - momentum, var, momentum * (double)n / (double)(n - 1), &nv)))
            st = wgt_tensor_assign(running_var, nv);
    }
    wgt_tensor_free(xf);
    wgt_tensor_free(mean);
    wgt_tensor_free(var);
    wgt_tensor_free(nm);
    wgt_tensor_free(nv);
    return st;
}

typedef struct bn_arg {
    int training, has_w, has_b, has_rs;
    double momentum, eps;
} bn_arg;

/* in: x, weight, bias; out: y, running_mean, running_var (updated in place when training). */
static wgt_status bn_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    bn_arg *a = arg;
    return wgt_cpu_batch_norm(&in[0], a->has_rs ? &out[1] : NULL, a->has_rs ? &out[2] : NULL,
                              a->has_w ? &in[1] : NULL, a->has_b ? &in[2] : NULL, a->training, a->momentum, a->eps,
                              &out[0]);
}

wgt_status wgt_group_norm(const wgt_tensor *x, int groups, const wgt_tensor *weight, const wgt_tensor *bias,
                          double eps, wgt_tensor **out)
{
    op_grad_batch_norm p = {groups, 1, eps};
    const wgt_tensor *in[5] = {x, weight, bias, NULL, NULL};
    return op_record(group_norm_unrecorded(x, groups, weight, bias, eps, out), OP_GRAD_GROUP_NORM, in, 5, &p,
                     sizeof p, out);
}

static wgt_status batch_norm_unrecorded(const wgt_tensor *x, wgt_tensor *running_mean, wgt_tensor *running_var,
                                        const wgt_tensor *weight, const wgt_tensor *bias, int training,
                                        double momentum, double eps, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    int nd = x->l.ndim;
    if (nd < 2) return op_fail(ctx, WGT_ERR_SHAPE, "batch_norm: the input must be [N, C, *], not %d-D", nd);
    if (!op_is_float(x->l.dtype))
        return op_fail(ctx, WGT_ERR_DTYPE, "batch_norm needs a floating-point tensor, not %s", wgt_dtype_name(x->l.dtype));
    if (!running_mean != !running_var)
        return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "batch_norm: give both running_mean and running_var, or neither");
    if (!training && !running_mean)
        return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "batch_norm: inference needs running_mean and running_var");
    int64_t C = x->l.shape[1];
    const wgt_tensor *w = NULL, *b = NULL, *m = NULL, *v = NULL;
    wgt_status st = norm_param(ctx, "batch_norm", "weight", weight, 1, &C, &w);
    if (!st) st = norm_param(ctx, "batch_norm", "bias", bias, 1, &C, &b);
    if (!st) st = norm_param(ctx, "batch_norm", "running_mean", running_mean, 1, &C, &m);
    if (!st) st = norm_param(ctx, "batch_norm", "running_var", running_var, 1, &C, &v);
    wgt_tensor *y = NULL;
    if (!st) st = wgt_tensor_new(ctx, x->l.dtype, nd, x->l.shape, &y);
    int64_t S = 1;
    for (int d = 2; d < nd; d++) S *= x->l.shape[d];
    /* one value per channel has no unbiased variance: the reference says so */
    int gpu_ok = !training || x->l.shape[0] * S > 1;
    const char *name = training ? "batch_norm(training)" : "batch_norm";
    if (!st && op_use_gpu(ctx, name, x->l.dtype, gpu_ok)) {
        /* rows [N, C] of the spatial elements; the statistics of row (n, c) are those of channel c */
        int64_t ks[2] = {x->l.shape[0], C}, kst[2] = {x->l.strides[0], x->l.strides[1]};
        int64_t rs[WGT_MAX_DIMS], rst[WGT_MAX_DIMS];
        for (int d = 2; d < nd; d++) rs[d - 2] = x->l.shape[d], rst[d - 2] = x->l.strides[d];
        norm_aux a = {w, b, m, v, (uint32_t)C, 1, 0xffffffffu};
        if (S >= UINT32_MAX) st = op_fail(ctx, WGT_ERR_LIMIT, "batch_norm: spatial size past 2^32");
        else if (training)
            st = bn_train_gpu(ctx, x, running_mean, running_var, &a, x->l.shape[0] * S, momentum, eps, 2, ks, kst,
                              nd - 2, rs, rst, y);
        else st = norm_gpu(ctx, NORM_GIVEN, x, 2, ks, kst, nd - 2, rs, rst, 1, &a, eps, y);
    } else if (!st && !(st = op_fallback_status(ctx, name, x->l.dtype, gpu_ok))) {
        bn_arg a = {training, w != NULL, b != NULL, running_mean != NULL, momentum, eps};
        const wgt_tensor *ins[3] = {x, w, b};
        wgt_tensor *outs[3] = {y, running_mean, running_var};
        st = op_reference(ctx, bn_ref, &a, ins, 3, outs, running_mean ? 3 : 1);
    }
    wgt_tensor_free((wgt_tensor *)w);
    wgt_tensor_free((wgt_tensor *)b);
    wgt_tensor_free((wgt_tensor *)m);
    wgt_tensor_free((wgt_tensor *)v);
    return op_finish(st, y, out);
}

/* The running statistics are inputs of the node too: evaluation mode's backward divides by them. */
wgt_status wgt_batch_norm(const wgt_tensor *x, wgt_tensor *running_mean, wgt_tensor *running_var,
                          const wgt_tensor *weight, const wgt_tensor *bias, int training, double momentum, double eps,
                          wgt_tensor **out)
{
    op_grad_batch_norm p = {0, training != 0, eps};
    const wgt_tensor *in[5] = {x, weight, bias, running_mean, running_var};
    return op_record(batch_norm_unrecorded(x, running_mean, running_var, weight, bias, training, momentum, eps, out),
                     OP_GRAD_BATCH_NORM, in, 5, &p, sizeof p, out);
}
