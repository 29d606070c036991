/* The harness runner: input generation, the two runs, comparison, sentinels, probing. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"
#include "ops/ops.h"

#define SENTINEL 0xA5u
#define N_SENTINEL_BUFFERS 3

const char *hx_case_name(hx_case c)
{
    static const char *names[HX_CASE_COUNT] = {"contiguous", "strided", "broadcast", "empty", "scalar",
                                               "size-1", "size-7", "size-1000003", "nan-inf", "over-binding"};
    return (unsigned)c < HX_CASE_COUNT ? names[c] : "?";
}

/* ---- generation ------------------------------------------------------------------------------ */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next(rng *r)
{
    r->s ^= r->s << 13, r->s ^= r->s >> 7, r->s ^= r->s << 17;
    return r->s;
}
static double uniform(rng *r, double lo, double hi) { return lo + (hi - lo) * (double)(next(r) >> 11) / 9007199254740992.0; }

static uint64_t seed_for(const char *name, wgt_dtype dt, hx_case c)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = name; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    h = (h ^ (uint64_t)dt) * 1099511628211ull;
    h = (h ^ (uint64_t)c) * 1099511628211ull;
    return h | 1;
}

static void int_range(wgt_dtype dt, double *lo, double *hi)
{
    switch (dt) {
    case WGT_BOOL: *lo = 0, *hi = 1; break;
    case WGT_U8: *lo = 0, *hi = 255; break;
    case WGT_I8: *lo = -128, *hi = 127; break;
    case WGT_U32: *lo = 0, *hi = 4294967295.0; break;
    case WGT_I32: *lo = -2147483648.0, *hi = 2147483647.0; break;
    default: *lo = -9223372036854775808.0, *hi = 9223372036854775807.0; break;
    }
}

/* One generated value of input `in` (dtype dt) into element i of the 1-D host tensor t. */
static void gen_value(rng *r, const hx_op *op, const hx_input *in, hx_case c, const wgt_cpu_tensor *t, int64_t i)
{
    wgt_dtype dt = in->dtype;
    if (in->index_bound > 0) {
        wgt_cpu_store_i(t, i, (int64_t)(next(r) % (uint64_t)in->index_bound));
        return;
    }
    int special = c == HX_SPECIAL && next(r) % 5 < 2;
    if (op_is_float(dt)) {
        static const double sp[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0, 1e30, -1e30, 1.0, -1.0, 0.5};
        double v = special ? sp[next(r) % (sizeof sp / sizeof *sp)] : uniform(r, in->dom.lo, in->dom.hi);
        if (special && op->no_huge && fabs(v) == 1e30) v = v > 0 ? 3.0 : -3.0;
        if (!special && in->dom.nonzero && fabs(v) < 0.5) v = v < 0 ? v - 0.5 : v + 0.5;
        if (!special && in->dom.integral) v = floor(v);
        wgt_cpu_store_f(t, i, v);
        return;
    }
    double lo, hi;
    int_range(dt, &lo, &hi);
    if (special) {
        if (op->no_huge) lo = lo < 0 ? -3 : 0, hi = 3;
        const double sp[] = {0, 1, lo, hi, lo < 0 ? -1 : 2};
        double v = sp[next(r) % 5];
        if (dt == WGT_I64 && !op->no_huge) wgt_cpu_store_i(t, i, v == lo ? INT64_MIN : v == hi ? INT64_MAX : (int64_t)v);
        else wgt_cpu_store_i(t, i, (int64_t)v);
        return;
    }
    double a = in->dom.lo > lo ? in->dom.lo : lo, b = in->dom.hi < hi ? in->dom.hi : hi;
    if (b < a) a = lo, b = lo < 0 ? 20 : 40;
    int64_t v = (int64_t)floor(uniform(r, a, b + 0.999));
    if (dt == WGT_I64 && in->dom.lo < 0 && !op->no_huge && next(r) % 4 == 0) {
        /* a quarter of signed i64 inputs past 32 bits (2^32 to 2^62), of either sign: the high word
         * must matter (domains from 0 up are counts and exponents: they stay small) */
        uint64_t m = next(r) >> (1 + next(r) % 30);
        v = next(r) & 1 ? -(int64_t)m : (int64_t)m;
    }
    if (in->dom.nonzero && v == 0) v = 1;
    if (dt == WGT_BOOL) v = v != 0;
    wgt_cpu_store_i(t, i, v);
}

/* An input's layout for the case and the number of storage elements it needs. */
static int64_t input_layout(const hx_input *in, hx_case c, wgt_layout *l)
{
    wgt_layout_contiguous(l, in->dtype, in->ndim, in->shape);
    int64_t numel = wgt_layout_numel(l);
    if (!in->fixed_layout && in->ndim >= 1 && numel > 0) {
        if (c == HX_STRIDED) {
            /* dims stored in reverse order (a transpose for 2-D; every other element for 1-D),
             * from an odd offset so that packed dtypes start inside a word */
            int64_t s = 1;
            for (int d = 0; d < in->ndim; d++) {
                l->strides[d] = s;
                s *= in->shape[d];
            }
            if (in->ndim == 1) l->strides[0] = 2;
            l->offset = 3;
        } else if (c == HX_BROADCAST && in->shape[0] > 1) {
            l->strides[0] = 0; /* an expanded view: every row reads the same storage */
        }
    }
    int64_t lo, hi;
    op_extent(l, &lo, &hi);
    return hi >= lo ? hi + 1 : l->offset + 1;
}

/* Host storage for an input: storage elements, generated; the layout in *l. */
static void *gen_input(rng *r, const hx_op *op, const hx_input *in, hx_case c, wgt_layout *l, int64_t *n_storage)
{
    int64_t n = input_layout(in, c, l);
    void *data = calloc((size_t)n, wgt_dtype_size(in->dtype));
    if (!data) return NULL;
    wgt_cpu_tensor t = wgt_cpu_tensor_make(data, in->dtype, 1, &n);
    for (int64_t i = 0; i < n; i++) gen_value(r, op, in, c, &t, i);
    *n_storage = n;
    return data;
}

static wgt_status make_tensor(wgt_context *ctx, const void *data, int64_t n_storage, const wgt_layout *l,
                              wgt_tensor **out)
{
    wgt_tensor *base;
    wgt_status st = wgt_tensor_from_host(ctx, l->dtype, 1, &n_storage, data, &base);
    if (st) return st;
    st = wgt_tensor_new_view(base, l, out);
    wgt_tensor_free(base);
    return st;
}

/* ---- comparison ------------------------------------------------------------------------------ */

static void tol_for(const hx_op *op, wgt_dtype out, double *rtol, double *atol)
{
    *rtol = op->tol.rtol, *atol = op->tol.atol;
    /* both sides round once to the output dtype from values that differ by the f32 error, so they may
     * land one unit apart */
    if (out == WGT_F16) *rtol += 1.0 / 1024, *atol += 6e-8 + op->accum / 1024;
    if (out == WGT_BF16) *rtol += 1.0 / 128, *atol += 1e-38 + op->accum / 128;
}

typedef struct cmp {
    double worst;
    int64_t worst_i;
    double got, want;
    int bad;
} cmp;

static void compare(const hx_op *op, const wgt_cpu_tensor *g, const wgt_cpu_tensor *w, int64_t n, cmp *res)
{
    memset(res, 0, sizeof *res);
    res->worst_i = -1;
    wgt_dtype dt = g->l.dtype;
    double rtol, atol;
    tol_for(op, dt, &rtol, &atol);
    for (int64_t i = 0; i < n; i++) {
        double err;
        double a, b;
        if (!op_is_float(dt)) {
            int64_t x = wgt_cpu_load_i(g, i), y = wgt_cpu_load_i(w, i);
            a = (double)x, b = (double)y;
            err = x == y ? 0 : INFINITY;
        } else {
            a = wgt_cpu_load_f(g, i), b = wgt_cpu_load_f(w, i);
            if (isnan(a) || isnan(b) || isinf(a) || isinf(b)) err = (isnan(a) && isnan(b)) || a == b ? 0 : INFINITY;
            else {
                double lim = atol + rtol * fabs(b), d = fabs(a - b);
                err = d == 0 ? 0 : lim > 0 ? d / lim : INFINITY;
            }
        }
        if (err > 1) res->bad++;
        if (err > res->worst || (res->worst_i < 0 && err > 0)) {
            res->worst = err, res->worst_i = i, res->got = a, res->want = b;
        }
    }
}

/* ---- sentinels ------------------------------------------------------------------------------- */

typedef struct sentinels {
    wgt_buffer *buf[N_SENTINEL_BUFFERS];
    int n;
} sentinels;

/* Fill a few pool buffers of the size a `bytes` tensor gets with the pattern and release them, so
 * the op's output most likely lands in one of them. */
static void sentinels_place(wgt_context *dev, uint64_t bytes, sentinels *s)
{
    s->n = 0;
    bytes = (bytes + 3) & ~3ull;
    if (!bytes) bytes = 4;
    if (bytes > (64ull << 20)) return; /* the pattern upload would cost more than it tells */
    for (int i = 0; i < N_SENTINEL_BUFFERS; i++) {
        if (wgt_gpu_alloc(dev, bytes, &s->buf[s->n])) break;
        wgt_buffer *b = s->buf[s->n];
        unsigned char *pat = malloc(b->size);
        if (pat) {
            memset(pat, SENTINEL, b->size);
            wgt_gpu_upload(dev, b, 0, pat, b->size);
            free(pat);
        }
        s->n++;
    }
    for (int i = s->n - 1; i >= 0; i--) wgt_gpu_release(dev, s->buf[i]);
}

/* 1: checked and intact; 0: the output is not in a sentinel buffer or has no slack; -1: overwritten
 * (*at gets the first byte past the tensor's storage that changed). */
static int sentinels_check(wgt_context *dev, const sentinels *s, const wgt_tensor *out, uint64_t *at)
{
    wgt_buffer *b = out->st->buf;
    int mine = 0;
    for (int i = 0; i < s->n; i++) mine |= s->buf[i] == b;
    uint64_t from = out->st->bytes;
    if (!mine || from >= b->size) return 0;
    uint64_t n = b->size - from;
    unsigned char *got = malloc(n);
    if (!got) return 0;
    int res = 1;
    if (wgt_gpu_download(dev, b, from, got, n)) res = 0;
    for (uint64_t i = 0; res == 1 && i < n; i++)
        if (got[i] != SENTINEL) {
            *at = i;
            res = -1;
        }
    free(got);
    return res;
}

/* ---- one run --------------------------------------------------------------------------------- */

/* WGT_STRICT on or off around a device call (saved and restored, so a caller's setting stands). */
typedef struct strict_env {
    int had;
    char saved[64];
} strict_env;

static void strict_push(strict_env *e, int on)
{
    const char *old = getenv("WGT_STRICT");
    e->had = old != NULL;
    e->saved[0] = 0;
    if (old) snprintf(e->saved, sizeof e->saved, "%s", old);
    setenv("WGT_STRICT", on ? "1" : "0", 1);
}

static void strict_pop(const strict_env *e)
{
    if (e->had) setenv("WGT_STRICT", e->saved, 1);
    else unsetenv("WGT_STRICT");
}

typedef struct run_ctx {
    const hx_op *op;
    hx_case c;
    wgt_dtype dt;
    int variant;
    hx_result *res;
} run_ctx;

static void fail(run_ctx *rc, const char *fmt, ...) WGT_PRINTF(2, 3);
static void fail(run_ctx *rc, const char *fmt, ...)
{
    rc->res->failures++;
    rc->res->failed_dtypes |= HX_DT(rc->dt);
    if (rc->res->message[0]) return;
    char buf[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (rc->op->n_variants > 1)
        snprintf(rc->res->message, sizeof rc->res->message, "%s variant %d: %s", wgt_dtype_name(rc->dt), rc->variant, buf);
    else snprintf(rc->res->message, sizeof rc->res->message, "%s: %s", wgt_dtype_name(rc->dt), buf);
}

static void *download(const wgt_tensor *t, size_t *bytes)
{
    *bytes = (size_t)wgt_tensor_numel(t) * wgt_dtype_size(wgt_tensor_dtype(t));
    void *d = malloc(*bytes ? *bytes : 1);
    if (d && wgt_tensor_to_host(t, d, *bytes)) {
        free(d);
        return NULL;
    }
    return d;
}

static void compare_outputs(run_ctx *rc, const wgt_tensor *g, const wgt_tensor *w, int k)
{
    if (wgt_tensor_dtype(g) != wgt_tensor_dtype(w)) {
        fail(rc, "output %d: dtype %s, reference %s", k, wgt_dtype_name(wgt_tensor_dtype(g)),
             wgt_dtype_name(wgt_tensor_dtype(w)));
        return;
    }
    int same = wgt_tensor_ndim(g) == wgt_tensor_ndim(w);
    for (int d = 0; same && d < wgt_tensor_ndim(g); d++) same = wgt_tensor_shape(g)[d] == wgt_tensor_shape(w)[d];
    if (!same) {
        fail(rc, "output %d: shape differs from the reference's (rank %d vs %d)", k, wgt_tensor_ndim(g),
             wgt_tensor_ndim(w));
        return;
    }
    size_t gb, wb;
    void *gd = download(g, &gb), *wd = download(w, &wb);
    if (!gd || !wd) {
        fail(rc, "output %d: reading back failed: %s", k, wgt_errmsg());
        free(gd), free(wd);
        return;
    }
    wgt_cpu_tensor gt = wgt_cpu_tensor_make(gd, wgt_tensor_dtype(g), wgt_tensor_ndim(g), wgt_tensor_shape(g));
    wgt_cpu_tensor wt = wgt_cpu_tensor_make(wd, wgt_tensor_dtype(w), wgt_tensor_ndim(w), wgt_tensor_shape(w));
    cmp c;
    compare(rc->op, &gt, &wt, wgt_tensor_numel(g), &c);
    rc->res->runs++;
    if (c.worst > rc->res->worst || (c.worst_i >= 0 && !rc->res->worst_at[0])) {
        if (c.worst >= rc->res->worst) rc->res->worst = c.worst;
        char var[32] = "";
        if (rc->op->n_variants > 1) snprintf(var, sizeof var, " variant %d", rc->variant);
        snprintf(rc->res->worst_at, sizeof rc->res->worst_at, "%s%s element %lld: %.9g vs %.9g",
                 wgt_dtype_name(rc->dt), var, (long long)c.worst_i, c.got, c.want);
    }
    if (c.bad)
        fail(rc, "output %d: %d of %lld elements differ; element %lld is %.9g, reference %.9g", k, c.bad,
             (long long)wgt_tensor_numel(g), (long long)c.worst_i, c.got, c.want);
    free(gd), free(wd);
}

/* Inputs must come out of the op unchanged: compare each device input's storage with its data. */
static void check_inputs(run_ctx *rc, wgt_tensor *const *in, void *const *data, const int64_t *n_storage, int n)
{
    for (int i = 0; i < n; i++) {
        size_t bytes = (size_t)n_storage[i] * wgt_dtype_size(in[i]->l.dtype);
        size_t whole = bytes & ~(size_t)3;
        unsigned char *got = malloc(whole ? whole : 1);
        if (!got) return;
        if (whole && !wgt_gpu_download(in[i]->st->ctx, in[i]->st->buf, 0, got, whole) && memcmp(got, data[i], whole))
            fail(rc, "input %d was modified by the op", i);
        free(got);
    }
}

/* ---- graph mode: neighbouring elementwise ops ------------------------------------------------ */

/* Constants the neighbours multiply by (0-d ones, made before the capture: an upload inside it
 * would end the elementwise run around the op). */
typedef struct neighbours {
    rng r;
    wgt_tensor *one[WGT_DTYPE_COUNT];
} neighbours;

static wgt_status apply_unary(wgt_unary_op op, wgt_tensor **x)
{
    wgt_tensor *y = NULL;
    wgt_unary_params p = wgt_unary_params_default(op);
    if (op == WGT_UNARY_CLAMP) p.lo = -INFINITY, p.hi = INFINITY;
    wgt_status st = wgt_unary_ex(op, &p, *x, &y);
    if (!st) wgt_tensor_free(*x), *x = y;
    return st;
}

/* A few elementwise ops after x that give x back exactly, so the op's comparison with the
 * reference stands while the fusion pass sees elementwise neighbours: neg twice, clamp to
 * (-inf, inf), a multiplication by a 0-d one (either side), bitwise_not twice, logical_not twice,
 * picked by the case's random stream and x's dtype. Returns a new tensor, or NULL when none
 * applies or one of them has no GPU kernel for the dtype (then x is used as it is). */
static wgt_tensor *identity_chain(neighbours *nb, const wgt_tensor *x)
{
    wgt_dtype dt = wgt_tensor_dtype(x);
    int is_float = dt == WGT_F32 || dt == WGT_F16 || dt == WGT_BF16;
    int is_signed = dt == WGT_I32 || dt == WGT_I8 || dt == WGT_I64;
    wgt_tensor *y = wgt_tensor_ref(x);
    if (!y) return NULL;
    int n = 1 + (int)(next(&nb->r) % 3), done = 0;
    wgt_status st = WGT_OK;
    for (int k = 0; k < n && !st; k++) {
        unsigned pick = (unsigned)(next(&nb->r) % 4);
        if (is_float && pick == 1) st = apply_unary(WGT_UNARY_CLAMP, &y);
        else if ((is_float || dt == WGT_I32) && pick >= 2 && nb->one[dt]) {
            wgt_tensor *z = NULL;
            st = pick == 2 ? wgt_binary(WGT_BINARY_MUL, y, nb->one[dt], &z) : wgt_binary(WGT_BINARY_MUL, nb->one[dt], y, &z);
            if (!st) wgt_tensor_free(y), y = z;
        } else if (is_float || (is_signed && pick != 1))
            st = apply_unary(WGT_UNARY_NEG, &y), st = st ? st : apply_unary(WGT_UNARY_NEG, &y);
        else if (dt == WGT_BOOL && pick & 1)
            st = apply_unary(WGT_UNARY_LOGICAL_NOT, &y), st = st ? st : apply_unary(WGT_UNARY_LOGICAL_NOT, &y);
        else if (!is_float)
            st = apply_unary(WGT_UNARY_BITWISE_NOT, &y), st = st ? st : apply_unary(WGT_UNARY_BITWISE_NOT, &y);
        else continue;
        done += !st;
    }
    if (st || !done) {
        wgt_tensor_free(y);
        return NULL;
    }
    return y;
}

/* The op captured on cap_in (with neighbours under fuse) into *g; dout gets its outputs. Returns
 * the op's status (its message kept) or wgt_graph_end's; *host is set when the capture refused
 * the op because it needs the host mid-graph. */
static wgt_status capture_op(run_ctx *rc, wgt_context *dev, int n_in, wgt_tensor *const *cap_in, wgt_tensor **dout,
                             wgt_graph **g, int *host, int fuse, neighbours *nb)
{
    wgt_tensor *pre[HX_MAX_IN] = {0};
    wgt_status st = wgt_graph_begin(dev, n_in, (const wgt_tensor *const *)cap_in);
    if (st) {
        fail(rc, "wgt_graph_begin: %s", wgt_errmsg());
        return st;
    }
    wgt_tensor *args[HX_MAX_IN] = {0};
    for (int i = 0; i < n_in; i++) {
        pre[i] = fuse ? identity_chain(nb, cap_in[i]) : NULL;
        args[i] = pre[i] ? pre[i] : cap_in[i];
    }
    st = rc->op->call(rc->op, rc->variant, args, dout);
    for (int i = 0; i < n_in; i++) wgt_tensor_free(pre[i]); /* not live past the op */
    for (int k = 0; fuse && !st && k < 2; k++) {
        wgt_tensor *post = dout[k] ? identity_chain(nb, dout[k]) : NULL;
        if (post) wgt_tensor_free(dout[k]), dout[k] = post;
    }
    char msg[512];
    snprintf(msg, sizeof msg, "%s", wgt_errmsg());
    wgt_status se = wgt_graph_end(dev, g);
    if (st) { /* the op's own status stands (and its message) */
        *host = strstr(msg, "during graph capture") != NULL;
        wgt_error(st, "%s", msg);
        return st;
    }
    if (se) {
        *host = strstr(wgt_errmsg(), "during graph capture") != NULL;
        if (!*host) fail(rc, "wgt_graph_end: %s", wgt_errmsg());
    }
    return se;
}

/* The device run through a graph: captured on inputs made from data2 (another seed), replayed
 * on din. With fuse, elementwise neighbours (identity_chain) go before each input and after each
 * output inside the capture, so the op's kernel meets the fusion pass: an elementwise op fuses
 * with them, another op reads and writes intermediates the pass must keep. An op that reads on
 * the host mid-graph (a count, a data-dependent shape) ends a segment there: its replay on din
 * stops with WGT_ERR_STALE when din's bytes there differ from data2's, and it is then captured
 * again on din itself (counted in stale_runs) and replayed. Returns the op's status at capture;
 * *host is set when the capture refused it because it needs the host mid-graph. */
static wgt_status graph_call(run_ctx *rc, wgt_context *dev, int n_in, wgt_tensor *const *din, void *const *data2,
                             const int64_t *n_storage, const wgt_layout *ls, wgt_tensor **dout, int *host, int fuse)
{
    wgt_tensor *cin[HX_MAX_IN] = {0};
    wgt_graph *g = NULL;
    wgt_status st = WGT_OK;
    neighbours nb = {{seed_for(rc->op->name, rc->dt, rc->c) ^ (uint64_t)(rc->variant + 1) * 0x9e3779b97f4a7c15ull}, {0}};
    *host = 0;
    for (int i = 0; i < n_in && !st; i++) st = make_tensor(dev, data2[i], n_storage[i], &ls[i], &cin[i]);
    if (st) {
        fail(rc, "making capture input: %s", wgt_errmsg());
        goto done;
    }
    static const wgt_dtype one_dtypes[] = {WGT_F32, WGT_F16, WGT_BF16, WGT_I32};
    for (int k = 0; fuse && k < 4; k++)
        if (wgt_full(dev, one_dtypes[k], 0, NULL, 1.0, &nb.one[one_dtypes[k]])) nb.one[one_dtypes[k]] = NULL;
    if ((st = capture_op(rc, dev, n_in, cin, dout, &g, host, fuse, &nb))) goto done;
    wgt_status rs = wgt_graph_replay(g, n_in, (const wgt_tensor *const *)din);
    if (rs == WGT_ERR_STALE) { /* data-dependent: captured again on the case's own inputs */
        rc->res->stale_runs++;
        wgt_graph_free(g), g = NULL;
        for (int k = 0; k < 2; k++) wgt_tensor_free(dout[k]), dout[k] = NULL;
        if ((st = capture_op(rc, dev, n_in, din, dout, &g, host, fuse, &nb))) goto done;
        rs = wgt_graph_replay(g, n_in, (const wgt_tensor *const *)din);
    }
    wgt_memory_stats m0, m1;
    wgt_graph_stats gs;
    if (rs || wgt_graph_get_stats(g, &gs) || wgt_context_memory_stats(dev, &m0) ||
        wgt_graph_replay(g, n_in, (const wgt_tensor *const *)din) || wgt_context_memory_stats(dev, &m1)) {
        fail(rc, "wgt_graph_replay: %s", wgt_errmsg());
        st = WGT_ERR_INTERNAL;
        goto done;
    }
    if (m1.submits - m0.submits != (uint64_t)gs.segments || m1.bind_group_misses != m0.bind_group_misses ||
        m1.pool_misses + m1.pool_hits != m0.pool_misses + m0.pool_hits)
        fail(rc, "a steady-state replay made %llu submits (want one per segment: %d), %llu bind groups and %llu "
             "buffer allocations (want 0)", (unsigned long long)(m1.submits - m0.submits), gs.segments,
             (unsigned long long)(m1.bind_group_misses - m0.bind_group_misses),
             (unsigned long long)(m1.pool_misses + m1.pool_hits - m0.pool_misses - m0.pool_hits));
    if (gs.segments > 1) rc->res->segmented_runs++;
    if (fuse) rc->res->fused_kernels += gs.fused_kernels, rc->res->fused_ops += gs.fused_ops;
done:
    /* the outputs stay valid without the graph: its buffers are only released to the pool */
    wgt_graph_free(g);
    for (int i = 0; i < n_in; i++) wgt_tensor_free(cin[i]);
    for (int k = 0; k < WGT_DTYPE_COUNT; k++) wgt_tensor_free(nb.one[k]);
    return st;
}

static void run_variant(run_ctx *rc, wgt_context *dev, wgt_context *ref, const hx_input *ins, int n_in,
                        void *const *data, void *const *data2, const wgt_layout *ls, const int64_t *n_storage,
                        int fuse)
{
    wgt_tensor *din[HX_MAX_IN] = {0}, *rin[HX_MAX_IN] = {0};
    wgt_tensor *dout[2] = {0}, *rout[2] = {0};
    int on_ref = 0, runs_before = rc->res->runs;
    for (int i = 0; i < n_in; i++) {
        if (make_tensor(ref, data[i], n_storage[i], &ls[i], &rin[i]) ||
            make_tensor(dev, data[i], n_storage[i], &ls[i], &din[i])) {
            fail(rc, "making input %d: %s", i, wgt_errmsg());
            goto done;
        }
    }
    wgt_status sr = rc->op->call(rc->op, rc->variant, rin, rout);
    char rmsg[300];
    snprintf(rmsg, sizeof rmsg, "%s", wgt_errmsg());
    sentinels s = {0};
    if (!sr && rout[0])
        sentinels_place(dev, (uint64_t)wgt_tensor_numel(rout[0]) * wgt_dtype_size(wgt_tensor_dtype(rout[0])), &s);
    wgt_memory_stats m0, m1;
    wgt_context_memory_stats(dev, &m0);
    /* Under WGT_STRICT the device run is the GPU kernel or a refusal: a dtype that fell back to
     * the reference would otherwise compare the reference with itself and pass. */
    strict_env env;
    strict_push(&env, 1);
    int host = 0;
    wgt_status sd = data2 ? graph_call(rc, dev, n_in, din, data2, n_storage, ls, dout, &host, fuse)
                          : rc->op->call(rc->op, rc->variant, din, dout);
    strict_pop(&env);
    on_ref = sd == WGT_ERR_UNSUPPORTED && strstr(wgt_errmsg(), "WGT_STRICT");
    if (host && !sr) { /* not capturable: nothing to compare */
        rc->res->host_runs++;
        if (!rc->res->host_why[0]) snprintf(rc->res->host_why, sizeof rc->res->host_why, "%s", wgt_errmsg());
        goto done;
    }
    if (data2) s.n = 0; /* the capture's own allocations come between: no sentinel claim */
    if (on_ref) { /* no GPU kernel: still run it, for the input checks (nothing to compare) */
        wgt_tensor_free(dout[0]), wgt_tensor_free(dout[1]);
        dout[0] = dout[1] = NULL;
        strict_push(&env, 0);
        sd = rc->op->call(rc->op, rc->variant, din, dout);
        strict_pop(&env);
        rc->res->ref_dtypes |= HX_DT(rc->dt);
    }
    wgt_context_memory_stats(dev, &m1);
    /* the slack past an output holds the pattern only when the op allocated nothing but its
     * outputs: a temporary released before the output was allocated may be the output's buffer */
    uint64_t allocs = (m1.pool_hits + m1.pool_misses) - (m0.pool_hits + m0.pool_misses);
    if (on_ref || allocs != (uint64_t)(!!dout[0] + !!dout[1])) s.n = 0;
    if (sr || sd) {
        if (!sr != !sd)
            fail(rc, "the device run %s (%s) but the reference %s (%s)", sd ? "failed" : "succeeded",
                 sd ? wgt_errmsg() : "", sr ? "failed" : "succeeded", sr ? rmsg : "");
        else
            rc->res->runs++; /* both refuse: they agree */
        goto done;
    }
    for (int k = 0; k < 2; k++) {
        if (!rout[k] != !dout[k]) fail(rc, "output %d is missing on one side", k);
        else if (rout[k]) compare_outputs(rc, dout[k], rout[k], k);
    }
    uint64_t at = 0;
    int sent = dout[0] ? sentinels_check(dev, &s, dout[0], &at) : 0;
    if (sent > 0) rc->res->sentinels++;
    if (sent < 0)
        fail(rc, "a write past the output's %llu bytes (byte %llu after its end)",
             (unsigned long long)dout[0]->st->bytes, (unsigned long long)at);
    if (rc->c != HX_BIG) check_inputs(rc, din, data, n_storage, n_in);
done:
    if (on_ref) { /* the reference against itself: not a comparison of a kernel */
        rc->res->ref_runs += rc->res->runs - runs_before;
        rc->res->runs = runs_before;
    }
    for (int i = 0; i < n_in; i++) wgt_tensor_free(din[i]), wgt_tensor_free(rin[i]);
    for (int k = 0; k < 2; k++) wgt_tensor_free(dout[k]), wgt_tensor_free(rout[k]);
}

static int case_applies(const hx_op *op, hx_case c, wgt_dtype dt, hx_result *res)
{
    if (c == HX_ODD_LARGE && (!op->large || dt != WGT_F32)) {
        if (!op->large) snprintf(res->skipped, sizeof res->skipped, "run for a few ops only (time)");
        return 0;
    }
    if (c == HX_BIG && (!op->big || dt != WGT_F32)) {
        if (!op->big) snprintf(res->skipped, sizeof res->skipped, "run for a few ops only (time)");
        return 0;
    }
    if (c == HX_SPECIAL && op->no_special) {
        snprintf(res->skipped, sizeof res->skipped, "%s", op->special_why ? op->special_why : "not meaningful");
        return 0;
    }
    return 1;
}

/* A failing case whose failing dtypes known issues of this adapter cover (the row's .known entries
 * of this case) becomes KNOWN. An entry of this adapter and case whose dtypes all ran and passed
 * is stale: the case fails and says so, so that the entry is removed with the bug. `where` is the
 * device's "NAME (BACKEND)". */
static void known_check(hx_result *res, const char *where, uint32_t ran_dtypes)
{
    const hx_known *k = res->op->known;
    uint32_t covered = 0;
    const char *why = NULL;
    for (int i = 0; i < HX_MAX_KNOWN && k[i].where; i++) {
        if (!strstr(where, k[i].where) || (k[i].c >= 0 && k[i].c != (int)res->c)) continue;
        uint32_t m = k[i].dtype >= 0 ? HX_DT(k[i].dtype) : ~0u;
        if (!(m & ran_dtypes)) continue; /* its dtypes did not run here (a dtype filter) */
        if (!(m & res->failed_dtypes) || (k[i].msg && !strstr(res->message, k[i].msg))) {
            if (res->failures) continue; /* another failure: it is reported as it is */
            res->failures++;
            snprintf(res->message, sizeof res->message,
                     "stale known issue for '%s' on %s: the case passes now; remove the entry from its row's .known "
                     "(src/ops/%s.def) (%s)",
                     res->op->name, k[i].where, res->op->family, k[i].why);
            return;
        }
        if (!why) why = k[i].why;
        covered |= m;
    }
    if (res->failures && why && !(res->failed_dtypes & ~covered)) {
        res->known = why;
        res->known_failures = res->failures;
        res->failures = 0;
    }
}

void hx_dtype_names(uint32_t mask, char *buf, size_t size)
{
    size_t used = 0;
    if (size) buf[0] = 0;
    for (int d = 0; d < WGT_DTYPE_COUNT && used < size; d++)
        if (mask & HX_DT(d)) used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? ", " : "", wgt_dtype_name((wgt_dtype)d));
}

int hx_check(wgt_context *dev, wgt_context *ref, const hx_op *op, const hx_options *opt, hx_report_fn report,
             void *user)
{
    uint32_t cases = opt && opt->cases ? opt->cases : ((1u << HX_CASE_COUNT) - 1) & ~(1u << HX_BIG);
    uint32_t dtypes = op->dtypes & (opt && opt->dtypes ? opt->dtypes : ~0u);
    int failing = 0;
    wgt_adapter_info info;
    char where[420] = "";
    if (!wgt_context_adapter_info(dev, &info)) snprintf(where, sizeof where, "%s (%s)", info.name, info.backend_name);
    for (int c = 0; c < HX_CASE_COUNT; c++) {
        if (!(cases & (1u << c))) continue;
        hx_result res;
        memset(&res, 0, sizeof res);
        res.op = op;
        res.c = (hx_case)c;
        uint32_t ran = 0;
        for (int dt = 0; dt < WGT_DTYPE_COUNT; dt++) {
            if (!(dtypes & HX_DT(dt)) || !case_applies(op, (hx_case)c, (wgt_dtype)dt, &res)) continue;
            hx_input ins[HX_MAX_IN];
            memset(ins, 0, sizeof ins);
            int n_in = op->setup(op, (hx_case)c, (wgt_dtype)dt, ins);
            if (n_in <= 0) continue;
            ran |= HX_DT(dt);
            rng r = {seed_for(op->name, (wgt_dtype)dt, (hx_case)c)};
            void *data[HX_MAX_IN] = {0}, *data2[HX_MAX_IN] = {0};
            wgt_layout ls[HX_MAX_IN];
            int64_t n_storage[HX_MAX_IN];
            run_ctx rc = {op, (hx_case)c, (wgt_dtype)dt, 0, &res};
            int ok = 1;
            for (int i = 0; i < n_in && ok; i++) ok = (data[i] = gen_input(&r, op, &ins[i], (hx_case)c, &ls[i], &n_storage[i])) != NULL;
            if (opt && opt->graph) { /* capture on other values of the same domains and layouts */
                rng r2 = {seed_for(op->name, (wgt_dtype)dt, (hx_case)c) ^ 0x5bd1e9955bd1e995ull};
                wgt_layout l2;
                int64_t n2;
                for (int i = 0; i < n_in && ok; i++) ok = (data2[i] = gen_input(&r2, op, &ins[i], (hx_case)c, &l2, &n2)) != NULL;
            }
            if (!ok) fail(&rc, "out of host memory for the inputs");
            for (int v = 0; ok && v < op->n_variants; v++) {
                if (c == HX_BIG && v != op->big_variant) continue;
                rc.variant = v;
                int graph = opt ? opt->graph : 0;
                if (!graph || graph & HX_GRAPH)
                    run_variant(&rc, dev, ref, ins, n_in, data, graph ? data2 : NULL, ls, n_storage, 0);
                if (graph & HX_GRAPH_FUSE && !(v && opt->graph_fuse_first)) run_variant(&rc, dev, ref, ins, n_in, data, data2, ls, n_storage, 1);
            }
            for (int i = 0; i < n_in; i++) free(data[i]), free(data2[i]);
            wgt_context_empty_cache(ref);
            if (c == HX_BIG) wgt_context_empty_cache(dev);
        }
        if (!res.runs && !res.ref_runs && !res.host_runs && !res.failures && !res.skipped[0])
            snprintf(res.skipped, sizeof res.skipped, "no input of this kind");
        known_check(&res, where, ran);
        if (res.failures) failing++;
        if (res.runs || res.ref_runs || res.host_runs || res.failures || res.skipped[0] || res.known)
            report(&res, user);
    }
    return failing;
}

/* ---- probing --------------------------------------------------------------------------------- */

int hx_probe(wgt_context *dev, const hx_op *op, wgt_dtype dt, char *msg, size_t msg_size)
{
    msg[0] = 0;
    if (!(op->dtypes & HX_DT(dt))) return -1;
    hx_input ins[HX_MAX_IN];
    memset(ins, 0, sizeof ins);
    int n_in = op->setup(op, HX_CONTIGUOUS, dt, ins);
    if (n_in <= 0) n_in = op->setup(op, HX_ODD7, dt, ins);
    if (n_in <= 0) return -1;
    rng r = {seed_for(op->name, dt, HX_CONTIGUOUS)};
    wgt_tensor *in[HX_MAX_IN] = {0};
    int result = -1;
    strict_env env;
    strict_push(&env, 1);
    int gpu = 0, fallback = 0, refused = 0;
    for (int i = 0; i < n_in; i++) {
        wgt_layout l;
        int64_t n;
        void *d = gen_input(&r, op, &ins[i], HX_CONTIGUOUS, &l, &n);
        wgt_status st = d ? make_tensor(dev, d, n, &l, &in[i]) : WGT_ERR_OUT_OF_MEMORY;
        free(d);
        if (st) {
            snprintf(msg, msg_size, "making an input: %s", wgt_errmsg());
            goto done;
        }
    }
    for (int v = 0; v < op->n_variants; v++) {
        wgt_tensor *out[2] = {0};
        wgt_status st = op->call(op, v, in, out);
        if (!st) gpu++;
        else if (st == WGT_ERR_UNSUPPORTED && strstr(wgt_errmsg(), "WGT_STRICT")) fallback++;
        else {
            refused++;
            if (!msg[0]) snprintf(msg, msg_size, "%s: %s", wgt_status_str(st), wgt_errmsg());
        }
        wgt_tensor_free(out[0]);
        wgt_tensor_free(out[1]);
    }
    result = gpu && !fallback ? 2 : gpu ? 1 : fallback ? 0 : -1;
    (void)refused;
done:
    strict_pop(&env);
    for (int i = 0; i < n_in; i++) wgt_tensor_free(in[i]);
    return result;
}
