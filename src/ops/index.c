/* Indexing ops: index_select, gather, masked_fill (through the movement kernel of
 * src/kernels/shape.wgsl), scatter (set/add/mul/amax/amin), scatter_add, index_add, index_put
 * (src/kernels/index_scatter.wgsl), masked_select and nonzero (src/kernels/index.wgsl), one_hot (the
 * fill kernel).
 *
 * Index tensors: any integer dtype; i64 indices are read as their low word and an index whose high
 * word is not the low word's sign extension counts as out of range. Negative indices in [-n, 0)
 * count from the end (as the reference). Out-of-range indices are validated on the GPU: the kernel
 * reads element 0 (gather) or skips the write (scatter), never touching memory out of bounds, and
 * ors a flag into a per-context error word. wgt_index_check() reads that word back (a sync) and
 * returns WGT_ERR_INVALID_ARGUMENT naming the op family; with WGT_STRICT=1 or a debug context every
 * op checks right away. Without a check an out-of-range index goes unreported: the price of not
 * synchronising per op.
 *
 * masked_select and nonzero read the per-block counts back to the host (a sync): the result's
 * length decides its allocation.
 *
 * Scatter ordering: set mode is deterministic (the update latest in index order wins, through an
 * atomicMax of update numbers per destination); add/mul accumulate in whatever order the atomics
 * run, rounding to the element's dtype at each step (floats differ from the reference by a few
 * ulps; integers are exact, wrapping). WGSL has only 32-bit atomics: i32/u32 add with atomicAdd,
 * other f32/i32/u32 combines with a compare-exchange loop on their word, f16/bf16/8-bit elements
 * on the word holding them. i64 set: the single winner writes both words; i64 add: atomicAdd on
 * the low word, then on the high word with the carry its old value shows (exact once all are in);
 * i64 amax/amin: atomicMax/Min of the high words, then of the low words of the updates holding
 * the extreme high word. i64 mul (no pair of words updates atomically) and integer index_add with
 * alpha != 1 (the reference computes in double and saturates at every step, so order matters)
 * link the updates of each destination into a list that one invocation per destination folds,
 * exactly, in 64 bits (in index order for alpha != 1, i64 rounding to 53 bits where the
 * reference's doubles do): a destination with k updates costs its owner k serial steps (k log k
 * to sort). Integer index_add with a fractional alpha, one past 2^20 or more than 2^16 updates
 * runs the reference. u32 indices of 2^31 or more read as negative (and then count as out of
 * range). Tensors past one storage binding (or 2^31 elements) run the reference. */
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "ops/index_shape.h"
#include "tensor/record.h"

wgt_status index_check_now(wgt_context *ctx); /* shape.c */

static wgt_status index_dtype(wgt_context *ctx, const char *op, const wgt_tensor *index)
{
    if (!op_is_int(index->l.dtype) || index->l.dtype == WGT_BOOL)
        return op_fail(ctx, WGT_ERR_DTYPE, "%s: the index must be an integer tensor, not %s", op,
                       wgt_dtype_name(index->l.dtype));
    return WGT_OK;
}

/* ---- index_select, gather, masked_fill ------------------------------------------------------ */

typedef struct sel_arg { int op, dim; double value; } sel_arg;
static wgt_status sel_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    sel_arg *a = arg;
    if (a->op == 0) return wgt_cpu_index_select(&in[0], a->dim, &in[1], &out[0]);
    if (a->op == 1) return wgt_cpu_gather(&in[0], a->dim, &in[1], &out[0]);
    return wgt_cpu_masked_fill(&in[0], &in[1], a->value, &out[0]);
}

/* out (new, of its final shape) from x and ib through the movement kernel, or the reference. */
static wgt_status sel_run(wgt_context *ctx, const char *name, sel_arg *a, const wgt_tensor *x, const wgt_layout *lx,
                          const wgt_tensor *ib, const wgt_layout *li, wgt_tensor *y)
{
    const wgt_tensor *ins[2] = {x, ib};
    int gpu_ok = fits_binding(ins, 2) && fits_binding((const wgt_tensor *const *)&y, 1);
    wgt_status st;
    if (op_use_gpu(ctx, name, x->l.dtype, gpu_ok)) {
        move_args m;
        memset(&m, 0, sizeof m);
        m.op = a->op == 2 ? MOVE_MASKED_FILL : MOVE_GATHER;
        m.x = x;
        m.lx = lx;
        m.ib = ib;
        m.li = li;
        m.dim = a->dim;
        m.fill = a->value;
        m.n = wgt_layout_numel(&y->l);
        if (!(st = move_run(ctx, &m, y)) && a->op != 2) st = index_check_now(ctx);
        return st;
    }
    if ((st = op_fallback_status(ctx, name, x->l.dtype, gpu_ok))) return st;
    return op_reference(ctx, sel_ref, a, ins, 2, &y, 1);
}

static wgt_status index_select_unrecorded(const wgt_tensor *x, int dim, const wgt_tensor *index, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    const wgt_tensor *ins[2] = {x, index};
    wgt_status st = op_same_context("index_select", ins, 2);
    if (st || (st = index_dtype(ctx, "index_select", index))) return st;
    if (x->l.ndim == 0) return op_fail(ctx, WGT_ERR_SHAPE, "index_select: x must have at least one dim");
    if ((st = op_dim(ctx, "index_select", &dim, x->l.ndim))) return st;
    if (index->l.ndim > 1) return op_fail(ctx, WGT_ERR_SHAPE, "index_select: the index must be 1-D, not %d-D", index->l.ndim);
    int64_t shape[WGT_MAX_DIMS];
    memcpy(shape, x->l.shape, sizeof shape);
    shape[dim] = wgt_layout_numel(&index->l);
    wgt_tensor *y;
    if ((st = wgt_tensor_new(ctx, x->l.dtype, x->l.ndim, shape, &y))) return st;
    /* the 1-D index seen by output coordinates: it moves along dim only */
    wgt_layout li = index->l;
    li.ndim = x->l.ndim;
    for (int d = 0; d < li.ndim; d++) li.shape[d] = shape[d], li.strides[d] = 0;
    li.strides[dim] = index->l.ndim ? index->l.strides[0] : 0;
    sel_arg a = {0, dim, 0};
    return op_finish(sel_run(ctx, "index_select", &a, x, NULL, index, &li, y), y, out);
}

wgt_status wgt_index_select(const wgt_tensor *x, int dim, const wgt_tensor *index, wgt_tensor **out)
{
    const wgt_tensor *in[2] = {x, index};
    int d = x && dim < 0 ? dim + x->l.ndim : dim;
    return op_record(index_select_unrecorded(x, dim, index, out), OP_GRAD_INDEX_SELECT, in, 2, &d, sizeof d, out);
}


static wgt_status gather_unrecorded(const wgt_tensor *x, int dim, const wgt_tensor *index, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    const wgt_tensor *ins[2] = {x, index};
    wgt_status st = op_same_context("gather", ins, 2);
    if (st || (st = index_dtype(ctx, "gather", index))) return st;
    int nd = x->l.ndim;
    if (nd == 0) return op_fail(ctx, WGT_ERR_SHAPE, "gather: x must have at least one dim");
    if ((st = op_dim(ctx, "gather", &dim, nd))) return st;
    if (index->l.ndim != nd) return op_fail(ctx, WGT_ERR_SHAPE, "gather: the index has %d dims, x has %d", index->l.ndim, nd);
    for (int d = 0; d < nd; d++)
        if (d != dim && index->l.shape[d] > x->l.shape[d])
            return op_fail(ctx, WGT_ERR_SHAPE, "gather: index size %lld at dim %d exceeds x's %lld",
                           (long long)index->l.shape[d], d, (long long)x->l.shape[d]);
    wgt_tensor *y;
    if ((st = wgt_tensor_new(ctx, x->l.dtype, nd, index->l.shape, &y))) return st;
    sel_arg a = {1, dim, 0};
    return op_finish(sel_run(ctx, "gather", &a, x, NULL, index, &index->l, y), y, out);
}

wgt_status wgt_gather(const wgt_tensor *x, int dim, const wgt_tensor *index, wgt_tensor **out)
{
    const wgt_tensor *in[2] = {x, index};
    int d = x && dim < 0 ? dim + x->l.ndim : dim;
    return op_record(gather_unrecorded(x, dim, index, out), OP_GRAD_GATHER, in, 2, &d, sizeof d, out);
}


static wgt_status masked_fill_unrecorded(const wgt_tensor *x, const wgt_tensor *mask, double value, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    const wgt_tensor *ins[2] = {x, mask};
    wgt_status st = op_same_context("masked_fill", ins, 2);
    if (st) return st;
    int nd;
    int64_t shape[WGT_MAX_DIMS];
    if ((st = op_broadcast_shape(ctx, "masked_fill", &x->l, &mask->l, &nd, shape))) return st;
    wgt_tensor *y;
    if ((st = wgt_tensor_new(ctx, x->l.dtype, nd, shape, &y))) return st;
    wgt_layout lx, lm;
    op_broadcast_layout(&x->l, nd, shape, &lx);
    op_broadcast_layout(&mask->l, nd, shape, &lm);
    sel_arg a = {2, 0, value};
    return op_finish(sel_run(ctx, "masked_fill", &a, x, &lx, mask, &lm, y), y, out);
}

wgt_status wgt_masked_fill(const wgt_tensor *x, const wgt_tensor *mask, double value, wgt_tensor **out)
{
    const wgt_tensor *in[2] = {x, mask};
    return op_record(masked_fill_unrecorded(x, mask, value, out), OP_GRAD_MASKED_FILL, in, 2, NULL, 0, out);
}


/* ---- scatter family ------------------------------------------------------------------------- */

typedef struct scat_params {
    uint32_t n, mode, off_s, off_i, acc, isize, istride;
    float alpha;
    uint32_t n_out;
    int32_t alpha_i;
    uint32_t ordered, pad;
    uint32_t cstride[8];
    op_layout_params ls, li;
} scat_params;

/* The prelude of index_scatter.wgsl is a function of these (zeroed padding: the key is compared bytewise). */
typedef struct scat_key {
    uint8_t dt, idt, pad[2];
    uint32_t wg;
} scat_key;

static char *scatter_prelude(void *arg)
{
    const scat_key *key = arg;
    wgt_dtype dt = (wgt_dtype)key->dt;
    size_t cap = 20480;
    char *pre = malloc(cap);
    if (!pre) return NULL;
    const char *ct = op_compute_type(dt);
    int es = (int)wgt_dtype_size(dt);
    uint32_t mask = es >= 4 ? 0xffffffffu : (1u << (es * 8)) - 1;
    size_t used = (size_t)snprintf(pre, cap, "%s\n%s\nconst WG: u32 = %uu;\nalias CT = %s;\nconst IS_FLOAT: bool = %s;\n"
                                   "const ESIZE: u32 = %du;\nconst MASK: u32 = %uu;\n",
                                   op_wgsl_lib(), op_wgsl_lib_i64(), key->wg, ct, op_is_float(dt) ? "true" : "false", es, mask);
    /* the element codec: the dtype's section of src/kernels/lib_index_ops.wgsl */
    char section[32];
    snprintf(section, sizeof section, "scatter %s", wgt_dtype_name(dt));
    /* bf16's rounding: elementwise_ops.wgsl's bf16_bits, the one definition */
    if (used >= cap || !op_wgsl_section(pre, cap, "lib_index_ops", section) || !index_wgsl(pre, cap, (wgt_dtype)key->idt) ||
        (dt == WGT_BF16 && !op_wgsl_section(pre, cap, "elementwise_ops", "bf16"))) {
        free(pre);
        return NULL;
    }
    return pre;
}

static wgt_status scatter_kernel(wgt_context *ctx, wgt_dtype dt, wgt_dtype idt, const char *entry, wgt_kernel **k)
{
    scat_key key;
    memset(&key, 0, sizeof key);
    key.dt = (uint8_t)dt, key.idt = (uint8_t)idt;
    key.wg = op_workgroup_size(ctx);
    return wgt_gpu_kernel_keyed(ctx, "index_scatter", &key, sizeof key, scatter_prelude, &key, entry, NULL, 0, k);
}

/* One pass of the update plan: the updates iterate over `it` (shape, with src strides); `li` (the
 * index by iteration coordinates) with isize/istride; cstride: output strides of iteration coords. */
typedef struct scat_pass {
    const wgt_tensor *index;
    wgt_layout li;
    uint32_t isize, istride;
    int64_t cstride[WGT_MAX_DIMS];
    int acc;
} scat_pass;

/* Integer alphas the walk follows: |alpha| <= 2^20 keeps a + alpha * b below 2^53 for 32-bit
 * values, where the reference's double arithmetic is exact too, and below 2^85 for i64 (96-bit
 * words in index_scatter.wgsl, rounded to 53 bits as the doubles are). */
static int int_alpha(double alpha) { return alpha >= -1048576.0 && alpha <= 1048576.0 && alpha == (double)(int32_t)alpha; }

/* Whether the update combine walks lists per destination (index_scatter.wgsl): i64 mul (no 64-bit
 * atomics; i64 add carries between two atomicAdds, amax/amin take two rounds) and integer alphas
 * other than 1 (the reference saturates at every step, so its order matters). */
static int scatter_walks(wgt_dtype dt, wgt_scatter_mode mode, double alpha)
{
    if (mode == WGT_SCATTER_SET || op_is_float(dt)) return 0;
    return alpha != 1.0 || (dt == WGT_I64 && mode == WGT_SCATTER_MUL);
}

/* out (a fresh copy of self) (mode)= src at the destinations the passes compute. */
static wgt_status scatter_gpu(wgt_context *ctx, const wgt_tensor *src, const wgt_layout *it, const scat_pass *passes,
                              int n_pass, wgt_scatter_mode mode, double alpha, wgt_tensor *out)
{
    int64_t n = wgt_layout_numel(it);
    if (n == 0) return WGT_OK;
    wgt_dtype dt = out->l.dtype;
    int walk = scatter_walks(dt, mode, alpha);
    int ext = dt == WGT_I64 && (mode == WGT_SCATTER_AMAX || mode == WGT_SCATTER_AMIN);
    wgt_tensor *dest = NULL, *win = NULL;
    int64_t nn = walk ? 2 * n : n, no = wgt_layout_numel(&out->l); /* walk: next[] after dest[] */
    int64_t nw = ext ? 2 * no : no;                                 /* ext: high keys, low words */
    wgt_status st = wgt_tensor_new(ctx, WGT_U32, 1, &nn, &dest);
    if (!st && (mode == WGT_SCATTER_SET || walk || ext)) {
        if (!(st = wgt_tensor_new(ctx, WGT_U32, 1, &nw, &win))) st = wgt_gpu_fill_zero(ctx, win->st->buf, 0, win->st->bytes);
    }
    wgt_binding b[7];
    int64_t base = 0;
    scat_params p;
    memset(&p, 0, sizeof p);
    p.n = (uint32_t)n;
    p.mode = (uint32_t)mode;
    p.alpha = (float)alpha;
    p.n_out = (uint32_t)no;
    p.alpha_i = walk && int_alpha(alpha) ? (int32_t)alpha : 1;
    p.ordered = walk && alpha != 1.0;
    if (!st) st = op_bind_all(src, &b[0], &base);
    wgt_layout ls = *it;
    p.off_s = (uint32_t)(ls.offset - base);
    ls.offset = 0;
    if (!st) st = op_layout_params_fill(ctx, &ls, &p.ls);
    if (!st) st = op_bind_all(dest, &b[2], &base);
    if (!st) st = win ? op_bind_all(win, &b[3], &base) : index_dummy_bind(ctx, 1, &b[3]);
    if (!st) st = op_bind_all(out, &b[4], &base);
    if (!st) st = index_err_bind(ctx, &b[5]);
    uint32_t wg = op_workgroup_size(ctx), gx, gy, ox, oy;
    op_grid(ctx, ((uint64_t)n + wg - 1) / wg, &gx, &gy);
    op_grid(ctx, ((uint64_t)no + wg - 1) / wg, &ox, &oy);
    int shift = 8 - it->ndim;
    for (int i = 0; i < n_pass && !st; i++) {
        const scat_pass *ps = &passes[i];
        wgt_kernel *k;
        if ((st = scatter_kernel(ctx, dt, ps->index->l.dtype, "dest_main", &k))) break;
        if ((st = op_bind_all(ps->index, &b[1], &base))) break;
        p.off_i = (uint32_t)(ps->index->l.offset - base);
        wgt_layout li = ps->li;
        li.offset = 0;
        if ((st = op_layout_params_fill(ctx, &li, &p.li))) break;
        p.acc = (uint32_t)ps->acc, p.isize = ps->isize, p.istride = ps->istride;
        memset(p.cstride, 0, sizeof p.cstride);
        for (int d = 0; d < it->ndim; d++) p.cstride[d + shift] = (uint32_t)ps->cstride[d];
        wgt_binding bb[6] = {b[0], b[1], b[2], b[3], b[4], b[5]};
        st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, bb, 6, gx, gy, 1);
    }
    wgt_dtype idt = passes[n_pass - 1].index->l.dtype;
    wgt_kernel *k;
    if (ext) { /* over the output, the updates twice, the output */
        static const char *const entries[4] = {"ext_init_main", "ext_hi_main", "ext_lo_main", "ext_fin_main"};
        for (int e = 0; e < 4 && !st; e++) {
            int over_out = e == 0 || e == 3;
            if (!(st = scatter_kernel(ctx, dt, idt, entries[e], &k)))
                st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 6, over_out ? ox : gx, over_out ? oy : gy, 1);
        }
    } else if (walk) { /* over the updates, then over the output elements */
        if (!st && !(st = scatter_kernel(ctx, dt, idt, "link_main", &k)))
            st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 6, gx, gy, 1);
        if (!st && !(st = scatter_kernel(ctx, dt, idt, "walk_main", &k)))
            st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 6, ox, oy, 1);
    } else {
        if (!st && mode == WGT_SCATTER_SET && !(st = scatter_kernel(ctx, dt, idt, "winner_main", &k)))
            st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 6, gx, gy, 1);
        if (!st && !(st = scatter_kernel(ctx, dt, idt, "apply_main", &k)))
            st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 6, gx, gy, 1);
    }
    wgt_tensor_free(dest);
    wgt_tensor_free(win);
    if (!st) st = index_check_now(ctx);
    return st;
}

/* Whether scatter_gpu can run these: every tensor in one binding, and the walk's 2n-word list too. */
static int scatter_fits(wgt_context *ctx, const wgt_tensor *const *ts, int n_ts, int64_t n_updates, int walk)
{
    if (!fits_binding(ts, n_ts)) return 0;
    return !walk || (uint64_t)n_updates * 8 + 256 <= wgt_gpu_limits(ctx)->max_storage_buffer_binding_size;
}

typedef struct scat_arg {
    int op, dim, k, accumulate;
    wgt_scatter_mode mode;
    double alpha;
} scat_arg;
static wgt_status scat_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    scat_arg *a = arg;
    if (a->op == 0) return wgt_cpu_scatter(&in[0], a->dim, &in[1], &in[2], a->mode, &out[0]);
    if (a->op == 1) return wgt_cpu_index_add(&in[0], a->dim, &in[1], &in[2], a->alpha, &out[0]);
    const wgt_cpu_tensor *idx[WGT_MAX_DIMS];
    for (int i = 0; i < a->k; i++) idx[i] = &in[2 + i];
    return wgt_cpu_index_put(&in[0], idx, a->k, &in[1], a->accumulate, &out[0]);
}

/* The checks shared by the scatter family: same context, index dtypes, src dtype == self's. */
static wgt_status scat_check(wgt_context *ctx, const char *name, const wgt_tensor *const *ins, int n)
{
    wgt_status st = op_same_context(name, ins, n);
    if (st) return st;
    if (ins[1]->l.dtype != ins[0]->l.dtype)
        return op_fail(ctx, WGT_ERR_DTYPE, "%s: the source is %s, self is %s (cast first)", name,
                       wgt_dtype_name(ins[1]->l.dtype), wgt_dtype_name(ins[0]->l.dtype));
    for (int i = 2; i < n; i++)
        if ((st = index_dtype(ctx, name, ins[i]))) return st;
    return WGT_OK;
}

/* scatter's checks; dim normalised */
static wgt_status scatter_check(wgt_context *ctx, const wgt_tensor *self, int *dim, const wgt_tensor *index,
                                const wgt_tensor *src, wgt_scatter_mode mode)
{
    const wgt_tensor *ins[3] = {self, src, index};
    wgt_status st = scat_check(ctx, "scatter", ins, 3);
    if (st) return st;
    if ((unsigned)mode >= WGT_SCATTER_COUNT) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "scatter: unknown mode %d", (int)mode);
    int nd = self->l.ndim;
    if (nd == 0) return op_fail(ctx, WGT_ERR_SHAPE, "scatter: self must have at least one dim");
    if ((st = op_dim(ctx, "scatter", dim, nd))) return st;
    if (index->l.ndim != nd || src->l.ndim != nd)
        return op_fail(ctx, WGT_ERR_SHAPE, "scatter: index and src must have self's %d dims", nd);
    for (int d = 0; d < nd; d++)
        if (index->l.shape[d] > src->l.shape[d] || (d != *dim && index->l.shape[d] > self->l.shape[d]))
            return op_fail(ctx, WGT_ERR_SHAPE, "scatter: index size %lld at dim %d exceeds src's or self's",
                           (long long)index->l.shape[d], d);
    return WGT_OK;
}

/* the scatter of src at index into y (contiguous, written in place) */
static wgt_status scatter_into(wgt_context *ctx, wgt_tensor *y, int dim, const wgt_tensor *index,
                               const wgt_tensor *src, wgt_scatter_mode mode)
{
    wgt_status st;
    int nd = y->l.ndim;
    const wgt_tensor *all[3] = {y, src, index};
    int gpu_ok = scatter_fits(ctx, all, 3, wgt_layout_numel(&index->l), scatter_walks(y->l.dtype, mode, 1.0));
    if (op_use_gpu(ctx, "scatter", y->l.dtype, gpu_ok)) {
        wgt_layout it = src->l; /* src restricted to the index's shape */
        memcpy(it.shape, index->l.shape, sizeof it.shape);
        scat_pass ps;
        memset(&ps, 0, sizeof ps);
        ps.index = index;
        ps.li = index->l;
        ps.isize = (uint32_t)y->l.shape[dim];
        ps.istride = (uint32_t)y->l.strides[dim];
        for (int d = 0; d < nd; d++) ps.cstride[d] = d == dim ? 0 : y->l.strides[d];
        st = scatter_gpu(ctx, src, &it, &ps, 1, mode, 1.0, y);
    } else if (!(st = op_fallback_status(ctx, "scatter", y->l.dtype, gpu_ok))) {
        scat_arg a = {0, dim, 0, 0, mode, 1};
        const wgt_tensor *rin[3] = {y, index, src};
        st = op_reference(ctx, scat_ref, &a, rin, 3, &y, 1);
    }
    return st;
}

wgt_status wgt_scatter(const wgt_tensor *self, int dim, const wgt_tensor *index, const wgt_tensor *src,
                       wgt_scatter_mode mode, wgt_tensor **out)
{
    OP_BEGIN(self, out);
    wgt_status st = scatter_check(ctx, self, &dim, index, src, mode);
    if (st) return st;
    wgt_tensor *y;
    if ((st = wgt_tensor_copy(self, &y))) return st;
    st = scatter_into(ctx, y, dim, index, src, mode);
    op_grad_scatter rec = {dim, mode, 1.0};
    const wgt_tensor *rec_in[3] = {self, index, src};
    return op_record(op_finish(st, y, out), OP_GRAD_SCATTER, rec_in, 3, &rec, sizeof rec, out);
}

wgt_status op_scatter_add_inplace(wgt_tensor *y, int dim, const wgt_tensor *index, const wgt_tensor *src)
{
    if (!y || !index || !src) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "scatter_add: NULL tensor");
    wgt_context *ctx = y->st->ctx;
    wgt_status st = wgt_ctx_check(ctx);
    if (st) return st;
    st = scatter_check(ctx, y, &dim, index, src, WGT_SCATTER_ADD);
    if (st) return st;
    if (!wgt_layout_is_contiguous(&y->l))
        return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "scatter_add: an in-place destination must be contiguous");
    if (!(st = scatter_into(ctx, y, dim, index, src, WGT_SCATTER_ADD))) y->st->version++;
    return st;
}

wgt_status wgt_scatter_add(const wgt_tensor *self, int dim, const wgt_tensor *index, const wgt_tensor *src,
                           wgt_tensor **out)
{
    return wgt_scatter(self, dim, index, src, WGT_SCATTER_ADD, out);
}

wgt_status wgt_index_add(const wgt_tensor *self, int dim, const wgt_tensor *index, const wgt_tensor *source,
                         double alpha, wgt_tensor **out)
{
    OP_BEGIN(self, out);
    const wgt_tensor *ins[3] = {self, source, index};
    wgt_status st = scat_check(ctx, "index_add", ins, 3);
    if (st) return st;
    int nd = self->l.ndim;
    if (nd == 0) return op_fail(ctx, WGT_ERR_SHAPE, "index_add: self must have at least one dim");
    if ((st = op_dim(ctx, "index_add", &dim, nd))) return st;
    int64_t K = wgt_layout_numel(&index->l);
    int ok = index->l.ndim <= 1 && source->l.ndim == nd;
    for (int d = 0; ok && d < nd; d++) ok = source->l.shape[d] == (d == dim ? K : self->l.shape[d]);
    if (!ok)
        return op_fail(ctx, WGT_ERR_SHAPE, "index_add: source must have self's shape with dim %d of the 1-D index's length %lld",
                       dim, (long long)K);
    wgt_tensor *y;
    if ((st = wgt_tensor_copy(self, &y))) return st;
    /* integers with alpha != 1 compute in double and saturate at every step in the reference: the
     * walk follows that exactly for integer alphas up to 2^20 (i64: rounding as the doubles do),
     * sorting each destination's list on one invocation, so a hot destination costs k log k serial
     * steps: past 2^16 updates (0.2 s for all of them into one element on lavapipe) the reference
     * is the safer price. Fractional alphas run the reference. */
    wgt_dtype dt = self->l.dtype;
    int64_t n_updates = wgt_layout_numel(&source->l);
    int gpu_ok = scatter_fits(ctx, ins, 3, n_updates, scatter_walks(dt, WGT_SCATTER_ADD, alpha)) &&
                 (op_is_float(dt) || alpha == 1.0 || (int_alpha(alpha) && n_updates <= 65536));
    if (op_use_gpu(ctx, "index_add", self->l.dtype, gpu_ok)) {
        scat_pass ps;
        memset(&ps, 0, sizeof ps);
        ps.index = index;
        ps.li = index->l;
        ps.li.ndim = nd;
        for (int d = 0; d < nd; d++) ps.li.shape[d] = source->l.shape[d], ps.li.strides[d] = 0;
        ps.li.strides[dim] = index->l.ndim ? index->l.strides[0] : 0;
        ps.isize = (uint32_t)y->l.shape[dim];
        ps.istride = (uint32_t)y->l.strides[dim];
        for (int d = 0; d < nd; d++) ps.cstride[d] = d == dim ? 0 : y->l.strides[d];
        st = scatter_gpu(ctx, source, &source->l, &ps, 1, WGT_SCATTER_ADD, alpha, y);
    } else if (!(st = op_fallback_status(ctx, "index_add", self->l.dtype, gpu_ok))) {
        scat_arg a = {1, dim, 0, 0, WGT_SCATTER_ADD, alpha};
        const wgt_tensor *rin[3] = {y, index, source};
        st = op_reference(ctx, scat_ref, &a, rin, 3, &y, 1);
    }
    op_grad_scatter rec = {dim, WGT_SCATTER_ADD, alpha};
    const wgt_tensor *rec_in[3] = {self, index, source};
    return op_record(op_finish(st, y, out), OP_GRAD_INDEX_ADD, rec_in, 3, &rec, sizeof rec, out);
}

static wgt_status index_put_unrecorded(const wgt_tensor *self, const wgt_tensor *const *indices, int k, const wgt_tensor *values,
                         int accumulate, wgt_tensor **out)
{
    OP_BEGIN(self, out);
    int nd = self->l.ndim;
    if (!indices || k < 1 || k > nd)
        return op_fail(ctx, WGT_ERR_SHAPE, "index_put: %d index tensors for a %d-D tensor (1 to ndim)", k, nd);
    const wgt_tensor *ins[2 + WGT_MAX_DIMS] = {self, values};
    for (int i = 0; i < k; i++) ins[2 + i] = indices[i];
    wgt_status st = scat_check(ctx, "index_put", ins, 2 + k);
    if (st) return st;
    /* S: the indices' broadcast shape; the updates iterate over S + self.shape[k:] */
    int sn = 0;
    int64_t S[WGT_MAX_DIMS];
    wgt_layout acc = indices[0]->l;
    for (int i = 0; i < k; i++) {
        if ((st = op_broadcast_shape(ctx, "index_put", &acc, &indices[i]->l, &sn, S))) return st;
        acc.ndim = sn;
        memcpy(acc.shape, S, sizeof S);
    }
    int un = sn + nd - k;
    if (un > WGT_MAX_DIMS) return op_fail(ctx, WGT_ERR_SHAPE, "index_put: the update shape has more than %d dims", WGT_MAX_DIMS);
    int64_t U[WGT_MAX_DIMS];
    memcpy(U, S, sizeof(int64_t) * sn);
    for (int d = k; d < nd; d++) U[sn + d - k] = self->l.shape[d];
    if (values->l.ndim > un) return op_fail(ctx, WGT_ERR_SHAPE, "index_put: values have more dims than the update shape");
    for (int d = 0; d < values->l.ndim; d++) {
        int64_t v = values->l.shape[d], u = U[un - values->l.ndim + d];
        if (v != u && v != 1)
            return op_fail(ctx, WGT_ERR_SHAPE, "index_put: values of size %lld at dim %d do not broadcast to %lld",
                           (long long)v, d, (long long)u);
    }
    wgt_tensor *y;
    if ((st = wgt_tensor_copy(self, &y))) return st;
    wgt_scatter_mode mode = accumulate ? WGT_SCATTER_ADD : WGT_SCATTER_SET;
    int64_t n_updates = 1;
    for (int d = 0; d < un; d++) n_updates *= U[d];
    int gpu_ok = scatter_fits(ctx, ins, 2 + k, n_updates, scatter_walks(self->l.dtype, mode, 1.0));
    if (op_use_gpu(ctx, "index_put", self->l.dtype, gpu_ok)) {
        wgt_layout it;
        op_broadcast_layout(&values->l, un, U, &it);
        scat_pass ps[WGT_MAX_DIMS];
        memset(ps, 0, sizeof ps);
        for (int i = 0; i < k; i++) {
            ps[i].index = indices[i];
            wgt_layout lb;
            op_broadcast_layout(&indices[i]->l, sn, S, &lb);
            ps[i].li = lb; /* S dims, then the trailing dims with stride 0 */
            ps[i].li.ndim = un;
            for (int d = 0; d < un; d++) {
                ps[i].li.shape[d] = U[d];
                if (d >= sn) ps[i].li.strides[d] = 0;
            }
            ps[i].isize = (uint32_t)self->l.shape[i];
            ps[i].istride = (uint32_t)y->l.strides[i];
            ps[i].acc = i > 0;
            if (i == 0)
                for (int d = sn; d < un; d++) ps[i].cstride[d] = y->l.strides[k + d - sn];
        }
        st = scatter_gpu(ctx, values, &it, ps, k, mode, 1.0, y);
    } else if (!(st = op_fallback_status(ctx, "index_put", self->l.dtype, gpu_ok))) {
        scat_arg a = {2, 0, k, accumulate, mode, 1};
        const wgt_tensor *rin[2 + WGT_MAX_DIMS] = {y, values};
        for (int i = 0; i < k; i++) rin[2 + i] = indices[i];
        st = op_reference(ctx, scat_ref, &a, rin, 2 + k, &y, 1);
    }
    return op_finish(st, y, out);
}

wgt_status wgt_index_put(const wgt_tensor *self, const wgt_tensor *const *indices, int k, const wgt_tensor *values,
                         int accumulate, wgt_tensor **out)
{
    wgt_status st = index_put_unrecorded(self, indices, k, values, accumulate, out);
    if (st) return st; /* k is checked there */
    const wgt_tensor *in[2 + WGT_MAX_DIMS] = {self, values};
    for (int i = 0; i < k; i++) in[2 + i] = indices[i];
    op_grad_index_put rec = {k, accumulate};
    return op_record(st, OP_GRAD_INDEX_PUT, in, 2 + k, &rec, sizeof rec, out);
}

/* ---- masked_select, nonzero ----------------------------------------------------------------- */

typedef struct cmp_params {
    uint32_t n, off_m, nd, total;
    op_layout_params lm;
} cmp_params;

/* Positions (u32, row-major over the mask's shape `lm`) of the set elements of mask: *pos gets a
 * new [count] tensor (NULL when count is 0). Reads the block counts back (a sync). */
static wgt_status compact(wgt_context *ctx, const wgt_tensor *mask, const wgt_layout *lm, wgt_tensor **pos,
                          int64_t *count)
{
    *pos = NULL;
    *count = 0;
    int64_t n = wgt_layout_numel(lm);
    if (n == 0) return WGT_OK;
    char pre[8192];
    uint32_t wg = op_workgroup_size(ctx);
    snprintf(pre, sizeof pre, "%s\nconst WG: u32 = %uu;\n", op_wgsl_lib(), wg);
    if (!index_wgsl(pre, sizeof pre, mask->l.dtype)) return op_fail(ctx, WGT_ERR_INTERNAL, "index: kernel prelude too long");
    int64_t blocks = (n + 4 * wg - 1) / (4 * wg); /* index.wgsl's BLOCK: 4 elements per invocation */
    wgt_tensor *counts;
    wgt_status st = wgt_tensor_new(ctx, WGT_U32, 1, &blocks, &counts);
    if (st) return st;
    cmp_params p;
    memset(&p, 0, sizeof p);
    p.n = (uint32_t)n;
    wgt_binding b[4];
    int64_t base;
    wgt_layout l = *lm;
    wgt_kernel *kc, *kp;
    uint32_t *host = NULL;
    if (!(st = op_bind_all(mask, &b[0], &base))) {
        p.off_m = (uint32_t)(l.offset - base);
        l.offset = 0;
        st = op_layout_params_fill(ctx, &l, &p.lm);
    }
    if (!st) st = op_bind_all(counts, &b[1], &base);
    if (!st) st = index_dummy_bind(ctx, 1, &b[2]);
    if (!st) st = index_dummy_bind(ctx, 2, &b[3]);
    uint32_t gx, gy;
    op_grid(ctx, (uint64_t)blocks, &gx, &gy);
    if (!st) st = wgt_gpu_kernel(ctx, "index", pre, "count_main", NULL, 0, &kc);
    if (!st) st = wgt_gpu_dispatch(ctx, kc, &p, sizeof p, b, 4, gx, gy, 1);
    if (!st && !(host = malloc(blocks * sizeof *host))) st = op_fail(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    if (!st) st = wgt_gpu_download(ctx, counts->st->buf, 0, host, blocks * sizeof *host);
    uint64_t total = 0;
    for (int64_t i = 0; !st && i < blocks; i++) {
        uint32_t c = host[i];
        host[i] = (uint32_t)total;
        total += c;
    }
    if (!st && total) st = wgt_gpu_upload(ctx, counts->st->buf, 0, host, blocks * sizeof *host);
    int64_t t = (int64_t)total;
    if (!st && total) st = wgt_tensor_new(ctx, WGT_U32, 1, &t, pos);
    if (!st && total) st = op_bind_all(*pos, &b[2], &base);
    if (!st && total) st = wgt_gpu_kernel(ctx, "index", pre, "compact_main", NULL, 0, &kp);
    if (!st && total) st = wgt_gpu_dispatch(ctx, kp, &p, sizeof p, b, 4, gx, gy, 1);
    free(host);
    wgt_tensor_free(counts);
    if (st) {
        wgt_tensor_free(*pos);
        *pos = NULL;
        return st;
    }
    *count = t;
    return WGT_OK;
}

static wgt_status msel_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    (void)arg;
    int64_t count;
    return wgt_cpu_masked_select(&in[0], &in[1], &out[0], &count);
}
static wgt_status msel_count_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    (void)out;
    return wgt_cpu_masked_select(&in[0], &in[1], NULL, (int64_t *)arg);
}
typedef struct nz_arg { int64_t count; int write; } nz_arg;
static wgt_status nz_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    nz_arg *a = arg;
    return wgt_cpu_nonzero(&in[0], a->write ? &out[0] : NULL, &a->count);
}

static wgt_status masked_select_unrecorded(const wgt_tensor *x, const wgt_tensor *mask, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    const wgt_tensor *ins[2] = {x, mask};
    wgt_status st = op_same_context("masked_select", ins, 2);
    if (st) return st;
    int nd;
    int64_t shape[WGT_MAX_DIMS];
    if ((st = op_broadcast_shape(ctx, "masked_select", &x->l, &mask->l, &nd, shape))) return st;
    int gpu_ok = fits_binding(ins, 2);
    wgt_tensor *y = NULL;
    if (op_use_gpu(ctx, "masked_select", x->l.dtype, gpu_ok)) {
        wgt_layout lx, lm;
        op_broadcast_layout(&x->l, nd, shape, &lx);
        op_broadcast_layout(&mask->l, nd, shape, &lm);
        wgt_tensor *pos;
        int64_t count;
        if ((st = compact(ctx, mask, &lm, &pos, &count))) return st;
        if (!(st = wgt_tensor_new(ctx, x->l.dtype, 1, &count, &y)) && count) {
            move_args m;
            memset(&m, 0, sizeof m);
            m.op = MOVE_TAKE;
            m.x = x;
            m.lx = &lx;
            m.ib = pos;
            m.li = &pos->l;
            m.n = count;
            st = move_run(ctx, &m, y);
        }
        wgt_tensor_free(pos);
        return op_finish(st, y, out);
    }
    if ((st = op_fallback_status(ctx, "masked_select", x->l.dtype, gpu_ok))) return st;
    int64_t count = 0;
    if ((st = op_reference(ctx, msel_count_ref, &count, ins, 2, NULL, 0))) return st;
    if ((st = wgt_tensor_new(ctx, x->l.dtype, 1, &count, &y))) return st;
    return op_finish(op_reference(ctx, msel_ref, NULL, ins, 2, &y, 1), y, out);
}

wgt_status wgt_masked_select(const wgt_tensor *x, const wgt_tensor *mask, wgt_tensor **out)
{
    const wgt_tensor *in[2] = {x, mask};
    return op_record(masked_select_unrecorded(x, mask, out), OP_GRAD_MASKED_SELECT, in, 2, NULL, 0, out);
}

wgt_status wgt_nonzero(const wgt_tensor *x, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    const wgt_tensor *ins[1] = {x};
    int gpu_ok = fits_binding(ins, 1);
    int nd = x->l.ndim;
    wgt_tensor *y = NULL;
    wgt_status st;
    if (op_use_gpu(ctx, "nonzero", x->l.dtype, gpu_ok)) {
        wgt_tensor *pos;
        int64_t count;
        if ((st = compact(ctx, x, &x->l, &pos, &count))) return st;
        int64_t shape[2] = {count, nd};
        if (!(st = wgt_tensor_new(ctx, WGT_I64, 2, shape, &y)) && count && nd) {
            char pre[8192];
            uint32_t wg = op_workgroup_size(ctx);
            snprintf(pre, sizeof pre, "%s\nconst WG: u32 = %uu;\n", op_wgsl_lib(), wg);
            wgt_kernel *k;
            cmp_params p;
            memset(&p, 0, sizeof p);
            p.n = (uint32_t)wgt_layout_numel(&x->l);
            p.nd = (uint32_t)nd;
            p.total = (uint32_t)count;
            wgt_layout l = x->l;
            l.offset = 0;
            wgt_binding b[4];
            int64_t base;
            if (!index_wgsl(pre, sizeof pre, x->l.dtype)) st = op_fail(ctx, WGT_ERR_INTERNAL, "nonzero: kernel prelude too long");
            else if (!(st = op_layout_params_fill(ctx, &l, &p.lm)) && !(st = op_bind_all(x, &b[0], &base)) &&
                !(st = op_bind_all(pos, &b[2], &base)) && !(st = op_bind_all(y, &b[3], &base)) &&
                !(st = index_dummy_bind(ctx, 1, &b[1]))) {
                uint32_t gx, gy;
                op_grid(ctx, ((uint64_t)count * nd + wg - 1) / wg, &gx, &gy);
                if (!(st = wgt_gpu_kernel(ctx, "index", pre, "coords_main", NULL, 0, &k)))
                    st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 4, gx, gy, 1);
            }
        }
        wgt_tensor_free(pos);
        return op_finish(st, y, out);
    }
    if ((st = op_fallback_status(ctx, "nonzero", x->l.dtype, gpu_ok))) return st;
    nz_arg a = {0, 0};
    if ((st = op_reference(ctx, nz_ref, &a, ins, 1, NULL, 0))) return st;
    int64_t shape[2] = {a.count, nd};
    if ((st = wgt_tensor_new(ctx, WGT_I64, 2, shape, &y))) return st;
    a.write = 1;
    return op_finish(op_reference(ctx, nz_ref, &a, ins, 1, &y, 1), y, out);
}

/* ---- one_hot -------------------------------------------------------------------------------- */

/* The integer a float store of v into dt leaves (the reference's rules), if the kernel's 32-bit
 * values reach it: 0 otherwise. */
static int stored_int(wgt_dtype dt, double v, double *out)
{
    uint64_t bits = 0;
    int64_t one = 1;
    wgt_cpu_tensor t = wgt_cpu_tensor_make(&bits, dt, 1, &one);
    wgt_cpu_store_f(&t, 0, v);
    int64_t r = wgt_cpu_load_i(&t, 0);
    if (r < INT32_MIN || r > (dt == WGT_U32 ? (int64_t)UINT32_MAX : (int64_t)INT32_MAX)) return 0;
    *out = (double)r;
    return 1;
}

typedef struct oh_arg { int axis; double off, on; } oh_arg;
static wgt_status oh_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    oh_arg *a = arg;
    return wgt_cpu_one_hot(&in[0], a->axis, a->off, a->on, &out[0]);
}

wgt_status wgt_one_hot(const wgt_tensor *x, int64_t depth, int axis, double off_value, double on_value,
                       wgt_dtype dtype, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    wgt_status st = index_dtype(ctx, "one_hot", x);
    if (st) return st;
    int nd = x->l.ndim;
    if (axis < 0) axis += nd + 1;
    if (axis < 0 || axis > nd) return op_fail(ctx, WGT_ERR_SHAPE, "one_hot: axis out of range for %d-D indices", nd);
    if (depth < 1 || depth > INT32_MAX) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "one_hot: depth %lld out of range", (long long)depth);
    if ((unsigned)dtype >= WGT_DTYPE_COUNT) return op_fail(ctx, WGT_ERR_DTYPE, "one_hot: unknown dtype %d", (int)dtype);
    int64_t shape[WGT_MAX_DIMS], inner = 1;
    if (nd + 1 > WGT_MAX_DIMS) return op_fail(ctx, WGT_ERR_SHAPE, "one_hot: too many dims");
    for (int d = 0, s = 0; d <= nd; d++) shape[d] = d == axis ? depth : x->l.shape[s++];
    for (int d = axis; d < nd; d++) inner *= x->l.shape[d];
    wgt_tensor *y;
    if ((st = wgt_tensor_new(ctx, dtype, nd + 1, shape, &y))) return st;
    const wgt_tensor *ins[1] = {x};
    /* integer outputs: the values the reference stores (truncated, saturated), exact in 32 bits */
    double on = on_value, off = off_value;
    int ints_ok = op_is_float(dtype) || (stored_int(dtype, on_value, &on) && stored_int(dtype, off_value, &off));
    int gpu_ok = fits_binding(ins, 1) && fits_binding((const wgt_tensor *const *)&y, 1) && ints_ok;
    if (op_use_gpu(ctx, "one_hot", dtype, gpu_ok)) {
        fill_args f = {FILL_ONE_HOT, 0, 0, 0, on, off, depth, inner, x};
        st = fill_run(ctx, &f, y);
    } else if (!(st = op_fallback_status(ctx, "one_hot", dtype, gpu_ok))) {
        oh_arg a = {axis, off_value, on_value};
        st = op_reference(ctx, oh_ref, &a, ins, 1, &y, 1);
    }
    return op_finish(st, y, out);
}
