/* Creation and shape ops: tril, triu, arange, linspace, eye, cat, stack, split, chunk, flip, roll,
 * repeat, pad; and the data-movement and fill kernels they share with src/ops/index.c.
 *
 * Data movement (src/kernels/shape.wgsl) maps each output coordinate to an input element and moves
 * its raw bits, so one pipeline per element size (1, 2, 4, 8 bytes) serves every dtype, i64
 * included. Inputs are read through their strides; outputs are new contiguous tensors written a
 * whole word per invocation. Tensors larger than one storage binding run the reference (a known
 * limit: these ops do not split). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "ops/index_shape.h"
#include "tensor/record.h"

/* ---- shared helpers ------------------------------------------------------------------------- */

uint64_t fill_bits(wgt_dtype dt, double v)
{
    uint64_t bits = 0;
    int64_t one = 1;
    wgt_cpu_tensor t = wgt_cpu_tensor_make(&bits, dt, 1, &one);
    if (op_is_int(dt) && !isnan(v) && v == floor(v) && fabs(v) < 9.2e18) wgt_cpu_store_i(&t, 0, (int64_t)v);
    else wgt_cpu_store_f(&t, 0, v);
    return bits;
}

int fits_binding(const wgt_tensor *const *ts, int n)
{
    for (int i = 0; i < n; i++) {
        if (!ts[i]) continue;
        wgt_context *ctx = ts[i]->st->ctx;
        int64_t lo, hi;
        op_extent(&ts[i]->l, &lo, &hi);
        uint64_t bytes = hi >= lo ? (uint64_t)(hi - lo + 1) * wgt_dtype_size(ts[i]->l.dtype) + 256 : 0;
        if (bytes > wgt_gpu_limits(ctx)->max_storage_buffer_binding_size) return 0;
        if (hi >= (int64_t)UINT32_MAX / 2 || wgt_layout_numel(&ts[i]->l) >= (int64_t)UINT32_MAX / 2) return 0;
    }
    return 1;
}

/* One error word per context, kept in a small table: the kernels or-in flags, wgt_index_check()
 * reads and clears it. An entry is trusted only while its buffer is still in that context's
 * pool with the same id (a later context at the same address gets a new entry). */
static struct err_entry {
    wgt_context *ctx;
    const void *device; /* wgt_gpu_device_identity when made */
    wgt_buffer *buf;
    uint64_t id;
} err_table[16];

/* Bytes per slot of the error buffer: slot 0 holds the flags, slots 1..3 stand in for bindings a
 * kernel entry does not use (WebGPU forbids two writable bindings over the same bytes). */
static uint64_t err_slot(wgt_context *ctx)
{
    uint64_t a = wgt_gpu_limits(ctx)->min_storage_buffer_offset_alignment;
    return a > 256 ? a : 256;
}

static struct err_entry *err_find(wgt_context *ctx)
{
    for (int i = 0; i < 16; i++) {
        struct err_entry *e = &err_table[i];
        if (e->ctx == ctx && e->device == wgt_gpu_device_identity(ctx) && wgt_gpu_buffer_live(ctx, e->buf, e->id))
            return e;
    }
    return NULL;
}

wgt_status index_err_bind(wgt_context *ctx, wgt_binding *b)
{
    struct err_entry *e = err_find(ctx);
    if (!e) {
        int slot = 0;
        for (int i = 0; i < 16; i++) /* a free slot, else the first one whose context is gone */
            if (!err_table[i].ctx) { slot = i; break; }
        e = &err_table[slot];
        wgt_buffer *buf;
        wgt_status st = wgt_gpu_alloc(ctx, 4 * err_slot(ctx), &buf);
        if (st) return st;
        if ((st = wgt_gpu_fill_zero(ctx, buf, 0, 4 * err_slot(ctx)))) return st;
        *e = (struct err_entry){ctx, wgt_gpu_device_identity(ctx), buf, buf->id};
    }
    b->buffer = e->buf;
    b->offset = 0;
    b->size = 256;
    return WGT_OK;
}

wgt_status index_dummy_bind(wgt_context *ctx, int slot, wgt_binding *b)
{
    wgt_status st = index_err_bind(ctx, b);
    if (st) return st;
    b->offset = (uint64_t)slot * err_slot(ctx);
    return WGT_OK;
}

wgt_status wgt_index_check(wgt_context *ctx)
{
    if (!ctx) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "index_check: NULL context");
    wgt_status st = wgt_ctx_check(ctx);
    if (st || wgt_gpu_runs_reference(ctx)) return st;
    struct err_entry *e = err_find(ctx);
    if (!e) return WGT_OK;
    uint32_t flags = 0;
    if ((st = wgt_gpu_download(ctx, e->buf, 0, &flags, 4))) return st;
    if (!flags) return WGT_OK;
    if ((st = wgt_gpu_fill_zero(ctx, e->buf, 0, 4))) return st;
    return wgt_ctx_error(ctx, WGT_ERR_INVALID_ARGUMENT,
                         "an index was out of range in %s%s%s since the last check (the kernel read or wrote "
                         "element 0 instead, or skipped the write): the results of those ops are wrong",
                         flags & 1 ? "index_select/gather " : "", flags & 2 ? "scatter/index_add/index_put " : "",
                         flags & 4 ? "(an i64 index past 32 bits)" : "");
}

/* WGT_STRICT or a debug context checks indices synchronously after each op that reads them. */
wgt_status index_check_now(wgt_context *ctx);
wgt_status index_check_now(wgt_context *ctx)
{
    /* a graph capture cannot read the flags mid-graph: they wait for the next wgt_index_check */
    if (wgt_gpu_capturing(ctx)) return WGT_OK;
    const char *v = getenv("WGT_STRICT");
    if ((v && *v && strcmp(v, "0")) || wgt_gpu_debug(ctx)) return wgt_index_check(ctx);
    return WGT_OK;
}

int index_wgsl(char *buf, size_t cap, wgt_dtype dt)
{
    if (dt == WGT_I64) return op_wgsl_section(buf, cap, "lib_index_ops", "index i64");
    op_wgsl_loader(buf, cap, "ld_idx", "ib", dt, "i32");
    op_wgsl_loader(buf, cap, "ld_mask_v", "ib", dt, op_is_float(dt) ? "f32" : "u32");
    return op_wgsl_section(buf, cap, "lib_index_ops", op_is_float(dt) ? "index float" : "index int");
}

/* ---- the movement kernel -------------------------------------------------------------------- */

typedef struct move_params {
    uint32_t n, op, dim, off_x, off_i, fill, fill_hi, first;
    uint32_t out_shape[8];
    op_layout_params lx, li;
    int32_t a[8];
} move_params;

/* The prelude's key (no padding bytes): built once per key, not on every call. */
typedef struct move_key {
    uint32_t esize, idt, wg;
} move_key;

static char *move_prelude(void *arg)
{
    const move_key *k = arg;
    const char *lib = op_wgsl_lib();
    size_t cap = 8192;
    char *pre = lib ? malloc(cap) : NULL;
    if (!pre) return NULL;
    snprintf(pre, cap, "%s\nconst ESIZE: u32 = %uu;\nconst WG: u32 = %uu;\n", lib, k->esize, k->wg);
    if (!index_wgsl(pre, cap, (wgt_dtype)k->idt)) {
        free(pre);
        return NULL;
    }
    return pre;
}

wgt_status move_run(wgt_context *ctx, const move_args *m, wgt_tensor *out)
{
    if (m->n <= 0) return WGT_OK;
    int esize = (int)wgt_dtype_size(out->l.dtype);
    wgt_dtype idt = m->ib ? m->ib->l.dtype : WGT_U32;
    move_key key = {(uint32_t)esize, (uint32_t)idt, op_workgroup_size(ctx)};
    wgt_kernel *k;
    wgt_status st = wgt_gpu_kernel_keyed(ctx, "shape", &key, sizeof key, move_prelude, &key, "main", NULL, 0, &k);
    if (st) return st;

    move_params p;
    memset(&p, 0, sizeof p);
    int nd = out->l.ndim, shift = 8 - nd;
    p.n = (uint32_t)m->n;
    p.op = (uint32_t)m->op;
    p.dim = (uint32_t)(m->dim + shift);
    p.first = (uint32_t)m->first;
    uint64_t fb = fill_bits(out->l.dtype, m->fill);
    p.fill = (uint32_t)fb, p.fill_hi = (uint32_t)(fb >> 32);
    for (int d = 0; d < 8; d++) p.out_shape[d] = d < shift ? 1 : (uint32_t)out->l.shape[d - shift];
    for (int d = 0; d < nd; d++) p.a[d + shift] = (int32_t)m->a[d];
    if (m->op == MOVE_COPY || m->op == MOVE_TRIL || m->op == MOVE_TRIU || m->op == MOVE_SLAB)
        for (int i = 0; i < 5; i++) p.a[i] = (int32_t)m->a[i];

    wgt_binding b[4];
    int64_t base;
    wgt_layout lx = m->lx ? *m->lx : m->x->l;
    {
        int64_t lo, hi;
        op_extent(&lx, &lo, &hi);
        if ((st = op_bind(m->x, lo, hi, &b[0], &base))) return st;
    }
    p.off_x = (uint32_t)(lx.offset - base);
    if ((st = op_layout_params_fill(ctx, &lx, &p.lx))) return st;
    if (m->ib) {
        int64_t lo, hi;
        op_extent(&m->ib->l, &lo, &hi);
        if ((st = op_bind(m->ib, lo, hi, &b[1], &base))) return st;
        p.off_i = (uint32_t)(m->ib->l.offset - base);
        wgt_layout li = *m->li;
        li.offset = 0;
        if ((st = op_layout_params_fill(ctx, &li, &p.li))) return st;
    } else
        b[1] = b[0];
    if ((st = op_bind_all(out, &b[2], &base))) return st;
    if ((st = index_err_bind(ctx, &b[3]))) return st;
    uint64_t per = esize >= 4 ? 1 : 4 / esize;
    uint64_t invocations = esize == 8 ? (uint64_t)m->n : ((uint64_t)m->n + per - 1) / per;
    uint32_t gx, gy;
    op_grid(ctx, (invocations + op_workgroup_size(ctx) - 1) / op_workgroup_size(ctx), &gx, &gy);
    return wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 4, gx, gy, 1);
}

/* The whole of out from x through one op. */
static wgt_status move_all(wgt_context *ctx, int op, const wgt_tensor *x, const wgt_layout *lx, const int64_t *a,
                           double fill, wgt_tensor *out)
{
    move_args m;
    memset(&m, 0, sizeof m);
    m.op = op;
    m.x = x;
    m.lx = lx;
    if (a) memcpy(m.a, a, sizeof m.a);
    m.fill = fill;
    m.n = wgt_layout_numel(&out->l);
    return move_run(ctx, &m, out);
}

/* ---- the fill kernel ------------------------------------------------------------------------ */

typedef struct fill_params {
    uint32_t n, op, cols, inner, off_i, half, pad0, pad1;
    float start, step, end, on;
    int32_t starti, stepi, oni, offi;
    float off;
    uint32_t pad2, pad3, pad4;
    uint32_t d_start[2], d_end[2], d_step[2]; /* linspace into integers: f64 bits, low word first */
    uint32_t lo[2], hi[2], pad5[2];           /* and the output dtype's range as i64 */
    op_layout_params li;
} fill_params;

static void put_u64(uint32_t w[2], uint64_t v) { w[0] = (uint32_t)v, w[1] = (uint32_t)(v >> 32); }
static void put_f64(uint32_t w[2], double v)
{
    uint64_t bits;
    memcpy(&bits, &v, 8);
    put_u64(w, bits);
}

/* The fill kernel's prelude is a function of the output's and indices' dtypes and the workgroup
 * size: keyed on them, so a lookup hashes 12 bytes, not the prelude. */
typedef struct fill_key {
    int32_t dt, idt;
    uint32_t wg;
} fill_key;

static char *fill_prelude(void *arg)
{
    const fill_key *key = arg;
    wgt_dtype dt = (wgt_dtype)key->dt;
    const char *ct = op_compute_type(dt);
    size_t cap = 24576;
    char *pre = malloc(cap);
    if (!pre) return NULL;
    snprintf(pre, cap, "%s\n%s\nalias CT = %s;\nconst IS_FLOAT: bool = %s;\nconst PACK: u32 = %du;\nconst WG: u32 = %uu;\n",
             op_wgsl_lib(), op_wgsl_lib_i64(), ct, op_is_float(dt) ? "true" : "false", op_pack(dt), key->wg);
    op_wgsl_storer(pre, cap, "st", "out", dt, ct);
    op_wgsl_storer(pre, cap, "st64", "out", dt, "i64");
    if (!index_wgsl(pre, cap, (wgt_dtype)key->idt)) {
        free(pre);
        return NULL;
    }
    return pre;
}

wgt_status fill_run(wgt_context *ctx, const fill_args *f, wgt_tensor *out)
{
    int64_t n = wgt_layout_numel(&out->l);
    if (n == 0) return WGT_OK;
    wgt_dtype dt = out->l.dtype;
    fill_key key = {(int32_t)dt, (int32_t)(f->x ? f->x->l.dtype : WGT_I32), op_workgroup_size(ctx)};
    /* linspace into integers follows the reference's double arithmetic (f32 could truncate to the
     * other side of an integer) */
    int exact = f->op == FILL_LINSPACE && !op_is_float(dt);
    wgt_kernel *k;
    wgt_status st = wgt_gpu_kernel_keyed(ctx, "shape_fill", &key, sizeof key, fill_prelude, &key,
                                         exact ? "linspace_int" : "main", NULL, 0, &k);
    if (st) return st;
    fill_params p;
    memset(&p, 0, sizeof p);
    p.n = (uint32_t)n;
    p.op = (uint32_t)f->op;
    p.cols = (uint32_t)(f->cols > 0 ? f->cols : 1);
    p.inner = (uint32_t)(f->inner > 0 ? f->inner : 1);
    p.half = (uint32_t)(n > 1 ? n / 2 : 1); /* a single element is start (PyTorch) */
    p.start = (float)f->start, p.step = (float)f->step, p.end = (float)f->end, p.on = (float)f->on;
    p.off = (float)f->off;
    /* integers were checked to fit 32 bits by the caller (u32 values as their bits) */
    p.starti = (int32_t)f->start, p.stepi = (int32_t)f->step;
    p.oni = (int32_t)(uint32_t)(int64_t)f->on, p.offi = (int32_t)(uint32_t)(int64_t)f->off;
    if (exact) {
        static const int64_t lo[WGT_DTYPE_COUNT] = {[WGT_I32] = INT32_MIN, [WGT_I8] = INT8_MIN, [WGT_I64] = INT64_MIN};
        static const int64_t hi[WGT_DTYPE_COUNT] = {[WGT_I32] = INT32_MAX, [WGT_U32] = UINT32_MAX, [WGT_I8] = INT8_MAX,
                                                    [WGT_U8] = UINT8_MAX, [WGT_I64] = INT64_MAX};
        put_f64(p.d_start, f->start), put_f64(p.d_end, f->end), put_f64(p.d_step, f->step);
        put_u64(p.lo, (uint64_t)lo[dt]), put_u64(p.hi, (uint64_t)hi[dt]);
    }
    wgt_binding b[2];
    int64_t base;
    if (f->x) {
        if ((st = op_bind_all(f->x, &b[0], &base))) return st;
        p.off_i = (uint32_t)(f->x->l.offset - base);
        wgt_layout l = f->x->l;
        l.offset = 0;
        if ((st = op_layout_params_fill(ctx, &l, &p.li))) return st;
    }
    if ((st = op_bind_all(out, &b[1], &base))) return st;
    if (!f->x && (st = index_err_bind(ctx, &b[0]))) return st; /* unused: any buffer but out */
    uint64_t words = ((uint64_t)n + op_pack(dt) - 1) / op_pack(dt);
    uint32_t gx, gy;
    op_grid(ctx, (words + op_workgroup_size(ctx) - 1) / op_workgroup_size(ctx), &gx, &gy);
    return wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 2, gx, gy, 1);
}

/* ---- tril, triu ----------------------------------------------------------------------------- */

typedef struct tri_arg { int64_t k; int upper; } tri_arg;
static wgt_status tri_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    tri_arg *a = arg;
    return a->upper ? wgt_cpu_triu(&in[0], a->k, &out[0]) : wgt_cpu_tril(&in[0], a->k, &out[0]);
}

static wgt_status tri(const wgt_tensor *x, int64_t k, int upper, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    const char *name = upper ? "triu" : "tril";
    if (x->l.ndim < 2) return op_fail(ctx, WGT_ERR_SHAPE, "%s: needs at least 2 dims, got %d", name, x->l.ndim);
    wgt_tensor *y;
    wgt_status st = wgt_tensor_new(ctx, x->l.dtype, x->l.ndim, x->l.shape, &y);
    if (st) return st;
    if (k > INT32_MAX / 2) k = INT32_MAX / 2;
    if (k < -INT32_MAX / 2) k = -INT32_MAX / 2;
    const wgt_tensor *ins[1] = {x};
    int gpu_ok = fits_binding(ins, 1);
    if (op_use_gpu(ctx, name, x->l.dtype, gpu_ok)) {
        int64_t a[8] = {k};
        st = move_all(ctx, upper ? MOVE_TRIU : MOVE_TRIL, x, NULL, a, 0, y);
    } else if (!(st = op_fallback_status(ctx, name, x->l.dtype, gpu_ok))) {
        tri_arg a = {k, upper};
        st = op_reference(ctx, tri_ref, &a, ins, 1, &y, 1);
    }
    op_grad_move rec = {upper ? 5 : 4, x->l.ndim, 0, {k}};
    return op_record(op_finish(st, y, out), OP_GRAD_MOVE, &x, 1, &rec, sizeof rec, out);
}

wgt_status wgt_tril(const wgt_tensor *x, int64_t k, wgt_tensor **out) { return tri(x, k, 0, out); }
wgt_status wgt_triu(const wgt_tensor *x, int64_t k, wgt_tensor **out) { return tri(x, k, 1, out); }

/* ---- arange, linspace, eye ------------------------------------------------------------------ */

typedef struct create_arg { int op; double a, b; } create_arg;
static wgt_status create_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    (void)in;
    create_arg *c = arg;
    if (c->op == FILL_ARANGE) return wgt_cpu_arange(c->a, c->b, &out[0]);
    if (c->op == FILL_LINSPACE) return wgt_cpu_linspace(c->a, c->b, &out[0]);
    return wgt_cpu_eye(&out[0]);
}

static wgt_status create(wgt_context *ctx, const char *name, wgt_dtype dt, int ndim, const int64_t *shape,
                         const fill_args *f, int gpu_ok, wgt_tensor **out)
{
    wgt_tensor *y;
    wgt_status st = wgt_tensor_new(ctx, dt, ndim, shape, &y);
    if (st) return st;
    const wgt_tensor *none[1] = {y};
    gpu_ok = gpu_ok && fits_binding(none, 1);
    if (op_use_gpu(ctx, name, dt, gpu_ok)) st = fill_run(ctx, f, y);
    else if (!(st = op_fallback_status(ctx, name, dt, gpu_ok))) {
        create_arg c = {f->op, f->op == FILL_LINSPACE ? f->start : f->start, f->op == FILL_LINSPACE ? f->end : f->step};
        st = op_reference(ctx, create_ref, &c, NULL, 0, &y, 1);
    }
    return op_finish(st, y, out);
}

wgt_status wgt_arange(wgt_context *ctx, double start, double end, double step, wgt_dtype dtype, wgt_tensor **out)
{
    if (!ctx || !out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "arange: NULL argument");
    *out = NULL;
    if (!(step != 0) || !isfinite(start) || !isfinite(end) || !isfinite(step))
        return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "arange: needs finite start and end and a nonzero step");
    if ((unsigned)dtype >= WGT_DTYPE_COUNT) return op_fail(ctx, WGT_ERR_DTYPE, "arange: unknown dtype %d", (int)dtype);
    double len = ceil((end - start) / step);
    if (len < 0) len = 0;
    if (len > 1e12) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "arange: %.0f elements is too many", len);
    int64_t n = (int64_t)len;
    fill_args f = {FILL_ARANGE, start, step, 0, 0, 0, 0, 0, NULL};
    /* integers compute exactly in i32 when start, step and every value fit it */
    int exact = !op_is_int(dtype) || (start == floor(start) && step == floor(step) && fabs(start) < 2e9 &&
                                      fabs(start + step * (double)n) < 2e9);
    return create(ctx, "arange", dtype, 1, &n, &f, exact, out);
}

wgt_status wgt_linspace(wgt_context *ctx, double start, double end, int64_t steps, wgt_dtype dtype, wgt_tensor **out)
{
    if (!ctx || !out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "linspace: NULL argument");
    *out = NULL;
    if (steps < 0) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "linspace: steps %lld < 0", (long long)steps);
    if ((unsigned)dtype >= WGT_DTYPE_COUNT) return op_fail(ctx, WGT_ERR_DTYPE, "linspace: unknown dtype %d", (int)dtype);
    fill_args f = {FILL_LINSPACE, start, steps > 1 ? (end - start) / (double)(steps - 1) : 0, end, 0, 0, 0, 0, NULL};
    /* integer outputs truncate a double value: the kernel repeats the reference's double
     * arithmetic (bool, nonzero of a double, stays on the reference) */
    return create(ctx, "linspace", dtype, 1, &steps, &f, dtype != WGT_BOOL, out);
}

wgt_status wgt_eye(wgt_context *ctx, int64_t n, int64_t m, wgt_dtype dtype, wgt_tensor **out)
{
    if (!ctx || !out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "eye: NULL argument");
    *out = NULL;
    if (n < 0 || m < 0) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "eye: negative size %lld x %lld", (long long)n, (long long)m);
    if ((unsigned)dtype >= WGT_DTYPE_COUNT) return op_fail(ctx, WGT_ERR_DTYPE, "eye: unknown dtype %d", (int)dtype);
    int64_t shape[2] = {n, m};
    fill_args f = {FILL_EYE, 0, 0, 0, 0, 0, m, 0, NULL};
    return create(ctx, "eye", dtype, 2, shape, &f, 1, out);
}

/* ---- cat, stack, split, chunk --------------------------------------------------------------- */

typedef struct cat_arg { int n, dim; } cat_arg;
static wgt_status cat_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    cat_arg *a = arg;
    const wgt_cpu_tensor *xs[64];
    for (int i = 0; i < a->n; i++) xs[i] = &in[i];
    return wgt_cpu_cat(xs, a->n, a->dim, &out[0]);
}

wgt_status wgt_cat(const wgt_tensor *const *xs, int n, int dim, wgt_tensor **out)
{
    if (!xs || n < 1 || !xs[0]) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "cat: needs at least one tensor");
    OP_BEGIN(xs[0], out);
    wgt_status st = op_same_context("cat", xs, n);
    if (st) return st;
    if (n > 64) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "cat: %d tensors (at most 64 at once: cat in groups)", n);
    const wgt_tensor *x0 = xs[0];
    int nd = x0->l.ndim;
    if (nd == 0) return op_fail(ctx, WGT_ERR_SHAPE, "cat: zero-dimensional tensors cannot be concatenated");
    if ((st = op_dim(ctx, "cat", &dim, nd))) return st;
    int64_t shape[WGT_MAX_DIMS];
    memcpy(shape, x0->l.shape, sizeof shape);
    shape[dim] = 0;
    for (int i = 0; i < n; i++) {
        const wgt_tensor *x = xs[i];
        if (x->l.dtype != x0->l.dtype)
            return op_fail(ctx, WGT_ERR_DTYPE, "cat: tensor %d is %s, tensor 0 is %s (cast first)", i,
                           wgt_dtype_name(x->l.dtype), wgt_dtype_name(x0->l.dtype));
        if (x->l.ndim != nd) return op_fail(ctx, WGT_ERR_SHAPE, "cat: tensor %d has %d dims, tensor 0 has %d", i, x->l.ndim, nd);
        for (int d = 0; d < nd; d++)
            if (d != dim && x->l.shape[d] != x0->l.shape[d])
                return op_fail(ctx, WGT_ERR_SHAPE, "cat: tensor %d has size %lld at dim %d, tensor 0 has %lld", i,
                               (long long)x->l.shape[d], d, (long long)x0->l.shape[d]);
        shape[dim] += x->l.shape[dim];
    }
    wgt_tensor *y;
    if ((st = wgt_tensor_new(ctx, x0->l.dtype, nd, shape, &y))) return st;
    int gpu_ok = fits_binding(xs, n);
    if (op_use_gpu(ctx, "cat", x0->l.dtype, gpu_ok)) {
        /* One dispatch per input over the output words its slab touches (rows of dim 0 for dim 0,
         * everything otherwise); elements of other inputs in those words are kept. Dispatches run
         * in order, so words shared by two inputs end up with both. */
        int64_t inner = 1, lo = 0;
        for (int d = dim + 1; d < nd; d++) inner *= shape[d];
        int pack = op_pack(x0->l.dtype);
        int64_t total = wgt_layout_numel(&y->l);
        for (int i = 0; i < n && !st; i++) {
            int64_t len = xs[i]->l.shape[dim];
            if (wgt_layout_numel(&xs[i]->l) == 0) continue;
            move_args m;
            memset(&m, 0, sizeof m);
            m.op = MOVE_COPY;
            m.x = xs[i];
            m.dim = dim;
            m.a[0] = lo, m.a[1] = lo + len;
            int64_t first = 0, last = total;
            int outer_one = 1;
            for (int d = 0; d < dim; d++) outer_one &= shape[d] == 1;
            if (outer_one) first = lo * inner, last = (lo + len) * inner;
            size_t es = wgt_dtype_size(x0->l.dtype);
            if (outer_one && wgt_layout_is_contiguous(&xs[i]->l) && (xs[i]->l.offset * es) % 4 == 0 &&
                (first * es) % 4 == 0 && ((last - first) * es) % 4 == 0) {
                /* a contiguous slab into a contiguous range: a plain buffer copy */
                st = wgt_gpu_copy(ctx, xs[i]->st->buf, (uint64_t)xs[i]->l.offset * es, y->st->buf,
                                  (uint64_t)first * es, (uint64_t)(last - first) * es);
                lo += len;
                continue;
            }
            int64_t slab = len * inner, row = shape[dim] * inner;
            if (slab % pack == 0 && row % pack == 0 && (lo * inner) % pack == 0 && row < INT32_MAX) {
                /* whole words per input: walk the input only (one read, one write per element) */
                m.op = MOVE_SLAB;
                m.a[2] = slab, m.a[3] = row, m.a[4] = lo * inner;
                m.n = wgt_layout_numel(&xs[i]->l);
                st = move_run(ctx, &m, y);
                lo += len;
                continue;
            }
            first -= first % pack;
            m.first = first;
            m.n = last - first;
            st = move_run(ctx, &m, y);
            lo += len;
        }
    } else if (!(st = op_fallback_status(ctx, "cat", x0->l.dtype, gpu_ok))) {
        cat_arg a = {n, dim};
        st = op_reference(ctx, cat_ref, &a, xs, n, &y, 1);
    }
    return op_record(op_finish(st, y, out), OP_GRAD_CAT, xs, n, &dim, sizeof dim, out);
}

wgt_status wgt_stack(const wgt_tensor *const *xs, int n, int dim, wgt_tensor **out)
{
    if (!xs || n < 1 || !xs[0]) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "stack: needs at least one tensor");
    OP_BEGIN(xs[0], out);
    if (n > 64) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "stack: %d tensors (at most 64 at once)", n);
    int nd = xs[0]->l.ndim + 1;
    wgt_status st = op_dim(ctx, "stack", &dim, nd);
    if (st) return st;
    for (int i = 1; i < n; i++)
        if (!xs[i] || xs[i]->l.ndim != xs[0]->l.ndim ||
            memcmp(xs[i]->l.shape, xs[0]->l.shape, sizeof(int64_t) * xs[0]->l.ndim))
            return op_fail(ctx, WGT_ERR_SHAPE, "stack: tensor %d's shape differs from tensor 0's", i);
    wgt_tensor *views[64] = {0};
    for (int i = 0; i < n && !st; i++) st = wgt_tensor_unsqueeze(xs[i], dim, &views[i]);
    if (!st) st = wgt_cat((const wgt_tensor *const *)views, n, dim, out);
    for (int i = 0; i < n; i++) wgt_tensor_free(views[i]);
    return st;
}

wgt_status wgt_split(const wgt_tensor *x, const int64_t *sizes, int n, int dim, wgt_tensor **outs)
{
    if (!x || !sizes || !outs || n < 1) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "split: NULL argument");
    wgt_context *ctx = x->st->ctx;
    for (int i = 0; i < n; i++) outs[i] = NULL;
    wgt_status st = op_dim(ctx, "split", &dim, x->l.ndim);
    if (st) return st;
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        if (sizes[i] < 0) return op_fail(ctx, WGT_ERR_SHAPE, "split: size %d is negative", i);
        total += sizes[i];
    }
    if (total != x->l.shape[dim])
        return op_fail(ctx, WGT_ERR_SHAPE, "split: sizes add up to %lld, dim %d has %lld", (long long)total, dim,
                       (long long)x->l.shape[dim]);
    int64_t at = 0;
    for (int i = 0; i < n && !st; i++) {
        st = wgt_tensor_narrow(x, dim, at, sizes[i], &outs[i]);
        at += sizes[i];
    }
    if (st)
        for (int i = 0; i < n; i++) wgt_tensor_free(outs[i]), outs[i] = NULL;
    return st;
}

wgt_status wgt_chunk(const wgt_tensor *x, int chunks, int dim, wgt_tensor **outs, int *n_out)
{
    if (!x || !outs || !n_out || chunks < 1) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "chunk: NULL argument or chunks < 1");
    wgt_context *ctx = x->st->ctx;
    *n_out = 0;
    wgt_status st = op_dim(ctx, "chunk", &dim, x->l.ndim);
    if (st) return st;
    int64_t len = x->l.shape[dim], each = (len + chunks - 1) / chunks;
    /* torch.chunk: pieces of ceil(len / chunks), the last smaller; fewer pieces when they run out */
    int64_t sizes[256];
    int n = 0;
    if (each == 0) sizes[n++] = 0;
    for (int64_t at = 0; each && at < len && n < 256; at += each) sizes[n++] = len - at < each ? len - at : each;
    if (n > chunks) return op_fail(ctx, WGT_ERR_INTERNAL, "chunk: too many pieces");
    if ((st = wgt_split(x, sizes, n, dim, outs))) return st;
    *n_out = n;
    return WGT_OK;
}

/* ---- flip, roll, repeat, pad ---------------------------------------------------------------- */

typedef struct mv_arg { int op; uint32_t mask; int n; int64_t shifts[8]; int dims[8]; int64_t pads[16]; double value; int mode; } mv_arg;
static wgt_status mv_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    mv_arg *a = arg;
    switch (a->op) {
    case MOVE_FLIP: return wgt_cpu_flip(&in[0], a->mask, &out[0]);
    case MOVE_ROLL: return wgt_cpu_roll(&in[0], a->n, a->shifts, a->n ? a->dims : NULL, &out[0]);
    case MOVE_REPEAT: return wgt_cpu_repeat(&in[0], &out[0]);
    default: return wgt_cpu_pad(&in[0], (wgt_pad_mode)a->mode, a->pads, a->value, &out[0]);
    }
}

/* Run one op into a new tensor of (ndim, shape), on the GPU or the reference. */
static wgt_status mv_op(wgt_context *ctx, const char *name, const wgt_tensor *x, const wgt_layout *lx, int op,
                        const int64_t *a, double fill, mv_arg *ref, int ndim, const int64_t *shape, wgt_tensor **out)
{
    wgt_tensor *y;
    wgt_status st = wgt_tensor_new(ctx, x->l.dtype, ndim, shape, &y);
    if (st) return st;
    const wgt_tensor *ins[1] = {x};
    int gpu_ok = fits_binding(ins, 1);
    if (op_use_gpu(ctx, name, x->l.dtype, gpu_ok)) st = move_all(ctx, op, x, lx, a, fill, y);
    else if (!(st = op_fallback_status(ctx, name, x->l.dtype, gpu_ok))) st = op_reference(ctx, mv_ref, ref, ins, 1, &y, 1);
    return op_finish(st, y, out);
}

wgt_status wgt_flip(const wgt_tensor *x, const int *dims, int n, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    mv_arg r = {.op = MOVE_FLIP};
    int64_t a[8] = {0};
    for (int i = 0; i < n; i++) {
        int d = dims[i];
        wgt_status st = op_dim(ctx, "flip", &d, x->l.ndim);
        if (st) return st;
        if (x->l.ndim == 0) continue;
        if (r.mask & (1u << d)) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "flip: dim %d appears twice", d);
        r.mask |= 1u << d;
        a[d] = 1;
    }
    op_grad_move rec = {0, x->l.ndim, 0, {0}};
    memcpy(rec.a, a, sizeof a);
    return op_record(mv_op(ctx, "flip", x, NULL, MOVE_FLIP, a, 0, &r, x->l.ndim, x->l.shape, out), OP_GRAD_MOVE, &x, 1,
                     &rec, sizeof rec, out);
}

wgt_status wgt_roll(const wgt_tensor *x, const int64_t *shifts, const int *dims, int n, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    if (n < 1 || n > 8 || !shifts) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "roll: needs 1 to 8 shifts");
    mv_arg r = {.op = MOVE_ROLL, .n = dims ? n : 0};
    int64_t a[8] = {0};
    if (!dims) { /* the flattened tensor: roll a contiguous copy seen as 1-D */
        if (n != 1) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "roll: without dims, exactly one shift");
        wgt_tensor *c, *flat, *rolled;
        int64_t numel = wgt_layout_numel(&x->l);
        /* a contiguous copy through repeat by ones: the movement kernel handles every dtype */
        int64_t ones[WGT_MAX_DIMS] = {1, 1, 1, 1, 1, 1, 1, 1};
        wgt_status st = wgt_layout_is_contiguous(&x->l) ? ((c = wgt_tensor_ref(x)) ? WGT_OK : WGT_ERR_OUT_OF_MEMORY)
                                                        : wgt_repeat(x, ones, x->l.ndim, &c);
        if (st) return st;
        st = wgt_tensor_reshape(c, 1, &numel, &flat);
        wgt_tensor_free(c);
        if (st) return st;
        int zero = 0;
        st = wgt_roll(flat, shifts, &zero, 1, &rolled);
        wgt_tensor_free(flat);
        if (st) return st;
        st = wgt_tensor_reshape(rolled, x->l.ndim, x->l.shape, out);
        wgt_tensor_free(rolled);
        return st;
    }
    for (int i = 0; i < n; i++) {
        int d = dims[i];
        wgt_status st = op_dim(ctx, "roll", &d, x->l.ndim);
        if (st) return st;
        r.shifts[i] = shifts[i], r.dims[i] = d;
        int64_t len = x->l.ndim ? x->l.shape[d] : 1;
        if (len) a[d] = ((a[d] + shifts[i]) % len + len) % len;
    }
    op_grad_move rec = {1, x->l.ndim, 0, {0}};
    memcpy(rec.a, a, sizeof a);
    return op_record(mv_op(ctx, "roll", x, NULL, MOVE_ROLL, a, 0, &r, x->l.ndim, x->l.shape, out), OP_GRAD_MOVE, &x, 1,
                     &rec, sizeof rec, out);
}

wgt_status wgt_repeat(const wgt_tensor *x, const int64_t *repeats, int n, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    if (n < x->l.ndim || n > WGT_MAX_DIMS)
        return op_fail(ctx, WGT_ERR_SHAPE, "repeat: %d factors for a %d-D tensor (at least as many, at most %d)", n,
                       x->l.ndim, WGT_MAX_DIMS);
    int64_t shape[WGT_MAX_DIMS];
    wgt_layout lx = x->l;
    lx.ndim = n;
    int lead = n - x->l.ndim;
    for (int d = 0; d < n; d++) {
        if (repeats[d] < 0) return op_fail(ctx, WGT_ERR_SHAPE, "repeat: factor %d is negative", d);
        int64_t s = d < lead ? 1 : x->l.shape[d - lead];
        shape[d] = s * repeats[d];
        lx.shape[d] = s;
        lx.strides[d] = d < lead ? 0 : x->l.strides[d - lead];
    }
    mv_arg r = {.op = MOVE_REPEAT};
    op_grad_move rec = {2, n, 0, {0}};
    for (int d = 0; d < n; d++) rec.a[d] = repeats[d];
    return op_record(mv_op(ctx, "repeat", x, &lx, MOVE_REPEAT, NULL, 0, &r, n, shape, out), OP_GRAD_MOVE, &x, 1, &rec,
                     sizeof rec, out);
}

wgt_status wgt_pad(const wgt_tensor *x, wgt_pad_mode mode, const int64_t *pads, double value, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    if ((unsigned)mode >= WGT_PAD_COUNT) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "pad: unknown mode %d", (int)mode);
    int nd = x->l.ndim;
    mv_arg r = {.op = MOVE_PAD_CONSTANT, .value = value, .mode = mode};
    int64_t shape[WGT_MAX_DIMS], a[8] = {0};
    for (int d = 0; d < nd; d++) {
        int64_t n = x->l.shape[d], before = pads[d], after = pads[nd + d];
        r.pads[d] = before, r.pads[nd + d] = after;
        shape[d] = n + before + after;
        if (shape[d] < 0) return op_fail(ctx, WGT_ERR_SHAPE, "pad: dim %d would have size %lld", d, (long long)shape[d]);
        if (mode == WGT_PAD_REFLECT && (before >= n || after >= n) && (before > 0 || after > 0))
            return op_fail(ctx, WGT_ERR_SHAPE, "pad: reflect pads of dim %d must be smaller than its size %lld", d,
                           (long long)n);
        if (mode != WGT_PAD_CONSTANT && n == 0 && shape[d] > 0)
            return op_fail(ctx, WGT_ERR_SHAPE, "pad: %s padding of an empty dim %d", mode == WGT_PAD_REFLECT ? "reflect" :
                           mode == WGT_PAD_REPLICATE ? "replicate" : "circular", d);
        if (mode == WGT_PAD_CIRCULAR && (before > n || after > n))
            return op_fail(ctx, WGT_ERR_SHAPE, "pad: circular pads of dim %d must not exceed its size %lld", d, (long long)n);
        a[d] = before;
    }
    int op = MOVE_PAD_CONSTANT + (int)mode;
    op_grad_move rec = {3, nd, (int)mode, {0}};
    for (int d = 0; d < 2 * nd; d++) rec.a[d] = pads[d];
    return op_record(mv_op(ctx, "pad", x, NULL, op, a, value, &r, nd, shape, out), OP_GRAD_MOVE, &x, 1, &rec, sizeof rec,
                     out);
}
