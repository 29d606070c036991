/* The op framework: dtype rules, broadcasting, path choice and fallback, WGSL loaders and storers,
 * bindings of partial storage. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

wgt_status op_fail(wgt_context *ctx, wgt_status st, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return wgt_ctx_error(ctx, st, "%s", buf);
}

wgt_status op_finish(wgt_status st, wgt_tensor *result, wgt_tensor **out)
{
    if (st) {
        wgt_tensor_free(result);
        *out = NULL;
    } else
        *out = result;
    return st;
}

wgt_status op_same_context(const char *op, const wgt_tensor *const *ts, int n)
{
    for (int i = 0; i < n; i++) {
        if (!ts[i]) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: input %d is NULL", op, i);
        if (ts[i]->st->ctx != ts[0]->st->ctx)
            return wgt_ctx_error(ts[0]->st->ctx, WGT_ERR_INVALID_ARGUMENT,
                                 "%s: input %d lives on another context: copy it through the host first", op, i);
    }
    return WGT_OK;
}

wgt_status op_dim(wgt_context *ctx, const char *op, int *dim, int ndim)
{
    int d = *dim < 0 ? *dim + ndim : *dim;
    if (d < 0 || d >= (ndim ? ndim : 1))
        return wgt_ctx_error(ctx, WGT_ERR_SHAPE, "%s: dim %d is out of range for a %d-D tensor", op, *dim, ndim);
    *dim = d;
    return WGT_OK;
}

int op_is_float(wgt_dtype d) { return d == WGT_F32 || d == WGT_F16 || d == WGT_BF16; }
int op_is_int(wgt_dtype d) { return (unsigned)d < WGT_DTYPE_COUNT && !op_is_float(d); }

static int rank(wgt_dtype d)
{
    switch (d) {
    case WGT_BOOL: return 0;
    case WGT_U8: return 1;
    case WGT_I8: return 2;
    case WGT_I32: return 3;
    case WGT_U32: return 4;
    case WGT_I64: return 5;
    case WGT_BF16: case WGT_F16: return 6;
    default: return 7;
    }
}

wgt_dtype op_promote(wgt_dtype a, wgt_dtype b)
{
    if (a == b) return a;
    if ((a == WGT_F16 && b == WGT_BF16) || (a == WGT_BF16 && b == WGT_F16)) return WGT_F32;
    if ((a == WGT_U8 && b == WGT_I8) || (a == WGT_I8 && b == WGT_U8)) return WGT_I32;
    if (op_is_float(a) && !op_is_float(b)) return a;
    if (op_is_float(b) && !op_is_float(a)) return b;
    return rank(a) >= rank(b) ? a : b;
}

wgt_status op_broadcast_shape(wgt_context *ctx, const char *op, const wgt_layout *a, const wgt_layout *b, int *ndim,
                              int64_t *shape)
{
    int n = a->ndim > b->ndim ? a->ndim : b->ndim;
    for (int d = 0; d < n; d++) {
        int da = d - (n - a->ndim), db = d - (n - b->ndim);
        int64_t sa = da >= 0 ? a->shape[da] : 1, sb = db >= 0 ? b->shape[db] : 1;
        if (sa != sb && sa != 1 && sb != 1)
            return wgt_ctx_error(ctx, WGT_ERR_SHAPE, "%s: shapes do not broadcast: size %lld against %lld at dim %d", op,
                                 (long long)sa, (long long)sb, d);
        shape[d] = sa == 1 ? sb : sa;
    }
    *ndim = n;
    return WGT_OK;
}

void op_broadcast_layout(const wgt_layout *t, int ndim, const int64_t *shape, wgt_layout *out)
{
    *out = *t;
    out->ndim = ndim;
    for (int d = 0; d < ndim; d++) {
        int dt = d - (ndim - t->ndim);
        int64_t s = dt >= 0 ? t->shape[dt] : 1;
        out->shape[d] = shape[d];
        out->strides[d] = (dt >= 0 && s == shape[d]) ? t->strides[dt] : 0;
    }
}

/* ---- path choice ---------------------------------------------------------------------------- */

static int strict_mode(void)
{
    const char *v = getenv("WGT_STRICT");
    return v && *v && strcmp(v, "0") != 0;
}

int op_use_gpu(wgt_context *ctx, const char *op, wgt_dtype dtype, int gpu_supported)
{
    if (wgt_gpu_runs_reference(ctx)) return 0;
    if (gpu_supported) return 1;
    /* One warning per op and dtype for the life of the process. */
    static char warned[256][32];
    static int n_warned;
    char key[32];
    snprintf(key, sizeof key, "%.24s/%s", op, wgt_dtype_name(dtype));
    for (int i = 0; i < n_warned; i++)
        if (!strcmp(warned[i], key)) return 0;
    if (n_warned < 256) snprintf(warned[n_warned++], 32, "%s", key);
    if (!strict_mode())
        fprintf(stderr, "wgt: warning: %s has no GPU kernel for %s; running the CPU reference (slow)\n", op,
                wgt_dtype_name(dtype));
    return 0;
}

wgt_status op_fallback_status(wgt_context *ctx, const char *op, wgt_dtype dtype, int gpu_supported)
{
    if (!wgt_gpu_runs_reference(ctx) && !gpu_supported && strict_mode())
        return wgt_ctx_error(ctx, WGT_ERR_UNSUPPORTED,
                             "%s has no GPU kernel for %s and WGT_STRICT=1 forbids the CPU fallback", op,
                             wgt_dtype_name(dtype));
    return WGT_OK;
}

wgt_status op_reference(wgt_context *ctx, op_ref_fn fn, void *arg, const wgt_tensor *const *in, int n_in,
                        wgt_tensor *const *out, int n_out)
{
    enum { MAX = 16 };
    if (n_in > MAX || n_out > MAX) return wgt_ctx_error(ctx, WGT_ERR_INTERNAL, "op_reference: too many tensors");
    wgt_host_view hin[MAX], hout[MAX];
    wgt_cpu_tensor cin[MAX] = {0}, cout[MAX] = {0};
    int got_in = 0, got_out = 0;
    wgt_status st = WGT_OK;
    for (; got_in < n_in && !st; got_in++) {
        if (!in[got_in]) {
            memset(&hin[got_in], 0, sizeof hin[got_in]);
            memset(&cin[got_in], 0, sizeof cin[got_in]);
            continue;
        }
        if ((st = wgt_host_view_get(in[got_in], &hin[got_in]))) break;
        cin[got_in] = hin[got_in].t;
    }
    for (; !st && got_out < n_out; got_out++) {
        if ((st = wgt_host_view_get(out[got_out], &hout[got_out]))) break;
        cout[got_out] = hout[got_out].t;
    }
    if (!st) st = fn(arg, cin, cout);
    if (st) st = wgt_ctx_error(ctx, st, "%s", wgt_errmsg()); /* the context's message too */
    for (int i = 0; !st && i < n_out; i++) st = wgt_host_view_put(out[i], &hout[i]);
    for (int i = 0; i < got_in; i++) wgt_host_view_free(&hin[i]);
    for (int i = 0; i < got_out; i++) wgt_host_view_free(&hout[i]);
    return st;
}

/* ---- WGSL generation ------------------------------------------------------------------------- */

const char *op_compute_type(wgt_dtype dt)
{
    if (op_is_float(dt)) return "f32";
    return dt == WGT_U32 ? "u32" : "i32";
}

int op_pack(wgt_dtype dt)
{
    size_t s = wgt_dtype_size(dt);
    return s == 1 ? 4 : s == 2 ? 2 : 1;
}

#define APPEND(...) (used += snprintf(buf + used, used < cap ? cap - used : 0, __VA_ARGS__))

/* The element as f32, i32 or u32 from its raw bits, in WGSL; `r` names the value expression. */
static void raw_expr(char *e, size_t cap, wgt_dtype dt, const char *binding)
{
    switch (dt) {
    case WGT_F32: snprintf(e, cap, "bitcast<f32>(%s[i])", binding); break;
    case WGT_I32: snprintf(e, cap, "bitcast<i32>(%s[i])", binding); break;
    case WGT_U32: snprintf(e, cap, "%s[i]", binding); break;
    case WGT_I64: snprintf(e, cap, "bitcast<i32>(%s[i * 2u])", binding); break;
    case WGT_F16: snprintf(e, cap, "unpack2x16float(%s[i >> 1u])[i & 1u]", binding); break;
    case WGT_BF16: snprintf(e, cap, "bitcast<f32>(((%s[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu) << 16u)", binding); break;
    case WGT_I8: snprintf(e, cap, "extractBits(bitcast<i32>(%s[i >> 2u]), (i & 3u) * 8u, 8u)", binding); break;
    case WGT_U8: snprintf(e, cap, "extractBits(%s[i >> 2u], (i & 3u) * 8u, 8u)", binding); break;
    case WGT_BOOL: snprintf(e, cap, "select(0u, 1u, extractBits(%s[i >> 2u], (i & 3u) * 8u, 8u) != 0u)", binding); break;
    default: snprintf(e, cap, "0u"); break;
    }
}

/* The natural WGSL type of raw_expr's value. */
static const char *raw_type(wgt_dtype dt)
{
    switch (dt) {
    case WGT_F32: case WGT_F16: case WGT_BF16: return "f32";
    case WGT_I32: case WGT_I64: case WGT_I8: return "i32";
    default: return "u32";
    }
}

/* Element i of binding as ct ("f32", "i32", "u32", or "i64": both words, converted as C converts). */
static void load_expr(char *out, size_t cap, const char *binding, wgt_dtype dt, const char *ct)
{
    char e[256];
    raw_expr(e, sizeof e, dt, binding);
    const char *rt = raw_type(dt);
    if (!strcmp(ct, "i64")) {
        if (dt == WGT_I64) snprintf(out, cap, "vec2<u32>(%s[i * 2u], %s[i * 2u + 1u])", binding, binding);
        else snprintf(out, cap, "i64_from_%s(%s)", rt, e);
    } else if (!strcmp(rt, ct)) {
        snprintf(out, cap, "%s", e);
    } else {
        snprintf(out, cap, "%s(%s)", ct, e);
    }
}

void op_wgsl_loader(char *buf, size_t cap, const char *name, const char *binding, wgt_dtype dt, const char *ct)
{
    size_t used = strlen(buf);
    char e[320];
    load_expr(e, sizeof e, binding, dt, ct);
    APPEND("fn %s(i: u32) -> %s { return %s; }\n", name, !strcmp(ct, "i64") ? "vec2<u32>" : ct, e);
}

void op_wgsl_loader_via(char *buf, size_t cap, const char *name, const char *binding, wgt_dtype dt, const char *ct,
                        const char *via, const char *via_type)
{
    size_t used = strlen(buf);
    char e[320];
    load_expr(e, sizeof e, binding, dt, ct);
    APPEND("fn %s(i: u32) -> %s { return %s(%s); }\n", name, via_type, via, e);
}

void op_wgsl_call(char *buf, size_t cap, const char *name, const char *init, const char *arg_type, const char *ret_type,
                  const char *callee, const char *wrap, const char *opx)
{
    size_t used = strlen(buf);
    APPEND("fn %s(a: %s, b: %s, c: %s) -> %s { %s%sreturn %s(%s%s%s(%s, a, b, c)%s); }\n", name, arg_type, arg_type,
           arg_type, ret_type, init, *init ? " " : "", ret_type, wrap ? wrap : "", wrap ? "(" : "", callee, opx,
           wrap ? ")" : "");
}

void op_wgsl_storer(char *buf, size_t cap, const char *name, const char *binding, wgt_dtype dt, const char *ct)
{
    size_t used = strlen(buf);
    if (!strcmp(ct, "i64")) { /* from 64-bit values: i64 keeps both words, others convert as C */
        APPEND("fn %s(w: u32, v: array<vec2<u32>, 4>) {\n", name);
        if (dt == WGT_I64) {
            APPEND("  %s[w * 2u] = v[0].x;\n  %s[w * 2u + 1u] = v[0].y;\n}\n", binding, binding);
            return;
        }
        APPEND("  var c: array<%s, 4>;\n  for (var k = 0u; k < 4u; k++) { c[k] = %s; }\n", raw_type(dt),
               op_is_float(dt) ? "i64_to_f32(v[k])" : dt == WGT_BOOL ? "select(0u, 1u, !i64_is_zero(v[k]))"
               : !strcmp(raw_type(dt), "i32") ? "bitcast<i32>(v[k].x)" : "v[k].x");
        char inner[64];
        snprintf(inner, sizeof inner, "%s_narrow", name);
        APPEND("  %s(w, c);\n}\n", inner);
        op_wgsl_storer(buf, cap, inner, binding, dt, raw_type(dt));
        return;
    }
    APPEND("fn %s(w: u32, v: array<%s, 4>) {\n", name, ct);
    switch (dt) {
    case WGT_F32: APPEND("  %s[w] = bitcast<u32>(f32(v[0]));\n", binding); break;
    case WGT_I32: APPEND("  %s[w] = bitcast<u32>(i32(v[0]));\n", binding); break;
    case WGT_U32: APPEND("  %s[w] = u32(v[0]);\n", binding); break;
    case WGT_I64:
        APPEND("  let x = i32(v[0]);\n  %s[w * 2u] = bitcast<u32>(x);\n  %s[w * 2u + 1u] = select(0u, 0xffffffffu, x < 0);\n",
               binding, binding);
        break;
    case WGT_F16:
        /* pack2x16float's value is indeterminate past f16's range (SwiftShader gives NaN for an
         * infinity): magnitudes that round to infinity (>= 65520) are made from the bits. A NaN goes
         * through pack2x16float unclamped, as in the packed kernels (elementwise_vec), so ops that
         * move a NaN (where, casts) give the same bits on both paths; its payload is the driver's */
        APPEND("  let a = bitcast<vec2<u32>>(vec2<f32>(f32(v[0]), f32(v[1])));\n"
               "  let m = a & vec2<u32>(0x7fffffffu);\n"
               "  let q = pack2x16float(clamp(bitcast<vec2<f32>>(a), vec2<f32>(-65504.0), vec2<f32>(65504.0)));\n"
               "  let qn = pack2x16float(bitcast<vec2<f32>>(a));\n"
               "  let inf = ((a >> vec2<u32>(16u)) & vec2<u32>(0x8000u)) | vec2<u32>(0x7c00u);\n"
               "  let h = select(select(vec2<u32>(q & 0xffffu, q >> 16u), inf, m >= vec2<u32>(0x477ff000u)),\n"
               "                 vec2<u32>(qn & 0xffffu, qn >> 16u), m > vec2<u32>(0x7f800000u));\n"
               "  %s[w] = h.x | (h.y << 16u);\n", binding);
        break;
    case WGT_BF16:
        /* round to nearest even on the upper 16 bits; NaN stays a quiet NaN */
        APPEND("  var r: u32 = 0u;\n"
               "  for (var k = 0u; k < 2u; k++) {\n"
               "    let b = bitcast<u32>(f32(v[k]));\n"
               "    var h = (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;\n"
               "    if ((b & 0x7fffffffu) > 0x7f800000u) { h = (b >> 16u) | 0x40u; }\n"
               "    r = r | (h << (k * 16u));\n"
               "  }\n"
               "  %s[w] = r;\n", binding);
        break;
    case WGT_I8: case WGT_U8:
        APPEND("  var r: u32 = 0u;\n"
               "  for (var k = 0u; k < 4u; k++) { r = r | ((bitcast<u32>(i32(v[k])) & 0xffu) << (k * 8u)); }\n"
               "  %s[w] = r;\n", binding);
        break;
    case WGT_BOOL:
        APPEND("  var r: u32 = 0u;\n"
               "  for (var k = 0u; k < 4u; k++) { r = r | (select(0u, 1u, v[k] != %s(0)) << (k * 8u)); }\n"
               "  %s[w] = r;\n", ct, binding);
        break;
    default: break;
    }
    APPEND("}\n");
}

/* ---- bindings -------------------------------------------------------------------------------- */

void op_extent(const wgt_layout *l, int64_t *lo, int64_t *hi)
{
    *lo = l->offset;
    *hi = l->offset;
    for (int d = 0; d < l->ndim; d++) {
        if (l->shape[d] == 0) {
            *hi = *lo - 1;
            return;
        }
        *hi += (l->shape[d] - 1) * l->strides[d];
    }
}

wgt_status op_bind(const wgt_tensor *t, int64_t lo, int64_t hi, wgt_binding *b, int64_t *base)
{
    wgt_context *ctx = t->st->ctx;
    size_t size = wgt_dtype_size(t->l.dtype);
    uint64_t align = wgt_gpu_limits(ctx)->min_storage_buffer_offset_alignment;
    if (align < 4) align = 4;
    if (hi < lo) hi = lo;
    uint64_t start = (uint64_t)lo * size / align * align;
    uint64_t end = ((uint64_t)(hi + 1) * size + 3) & ~3ull;
    if (end > t->st->bytes) end = t->st->bytes;
    if (end <= start) end = start + 4 <= t->st->bytes ? start + 4 : t->st->bytes;
    if (end - start > wgt_gpu_limits(ctx)->max_storage_buffer_binding_size)
        return wgt_ctx_error(ctx, WGT_ERR_LIMIT,
                             "a tensor range of %llu bytes is larger than one storage binding (%llu bytes) and the op "
                             "cannot split it", (unsigned long long)(end - start),
                             (unsigned long long)wgt_gpu_limits(ctx)->max_storage_buffer_binding_size);
    b->buffer = t->st->buf;
    b->offset = start;
    b->size = end - start;
    *base = (int64_t)(start / size);
    return WGT_OK;
}

wgt_status op_bind_all(const wgt_tensor *t, wgt_binding *b, int64_t *base)
{
    int64_t lo, hi;
    op_extent(&t->l, &lo, &hi);
    return op_bind(t, lo, hi, b, base);
}

wgt_status op_bind_storage(const wgt_tensor *t, wgt_binding *b, int64_t *base)
{
    wgt_context *ctx = t->st->ctx;
    size_t size = wgt_dtype_size(t->l.dtype);
    uint64_t bytes = t->st->bytes & ~3ull;
    if (!bytes || bytes > wgt_gpu_limits(ctx)->max_storage_buffer_binding_size || bytes / size > UINT32_MAX)
        return op_bind_all(t, b, base);
    b->buffer = t->st->buf;
    b->offset = 0;
    b->size = bytes;
    *base = 0;
    return WGT_OK;
}

#define OP_CONSTS 32
#define OP_CONST_MAX_BYTES 16384

typedef struct op_const {
    wgt_dtype dt;
    size_t bytes;
    void *data;   /* the host copy the lookup compares with */
    wgt_tensor *t;
} op_const;

typedef struct op_consts {
    op_const e[OP_CONSTS];
    int next; /* the slot replaced next when all are taken */
} op_consts;

static void op_consts_free(wgt_context *ctx, void *state)
{
    op_consts *c = state;
    (void)ctx;
    for (int i = 0; i < OP_CONSTS; i++) {
        wgt_tensor_free(c->e[i].t);
        free(c->e[i].data);
    }
    free(c);
}

wgt_status op_const_tensor(wgt_context *ctx, wgt_dtype dt, int64_t n, const void *data, wgt_tensor **out)
{
    size_t bytes = (size_t)n * wgt_dtype_size(dt);
    if (wgt_gpu_runs_reference(ctx) || n <= 0 || bytes > OP_CONST_MAX_BYTES)
        return wgt_tensor_from_host(ctx, dt, 1, &n, data, out);
    op_consts *c = wgt_gpu_ops_state(ctx);
    if (!c) {
        if (!(c = calloc(1, sizeof *c))) return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory");
        wgt_gpu_set_ops_state(ctx, c, op_consts_free);
    }
    for (int i = 0; i < OP_CONSTS; i++) {
        op_const *e = &c->e[i];
        if (e->t && e->dt == dt && e->bytes == bytes && !memcmp(e->data, data, bytes)) {
            *out = wgt_tensor_ref(e->t);
            return *out ? WGT_OK : wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory");
        }
    }
    wgt_tensor *t;
    void *copy = malloc(bytes);
    if (!copy) return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    wgt_status st = wgt_tensor_from_host(ctx, dt, 1, &n, data, &t);
    if (st) {
        free(copy);
        return st;
    }
    if (!(*out = wgt_tensor_ref(t))) {
        free(copy);
        wgt_tensor_free(t);
        return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    op_const *e = &c->e[c->next];
    c->next = (c->next + 1) % OP_CONSTS;
    wgt_tensor_free(e->t);
    free(e->data);
    memcpy(copy, data, bytes);
    *e = (op_const){dt, bytes, copy, t};
    return WGT_OK;
}

int64_t op_rows_per_chunk(wgt_context *ctx, const wgt_layout *const *ls, int n)
{
    uint64_t limit = wgt_gpu_limits(ctx)->max_storage_buffer_binding_size;
    uint64_t align = wgt_gpu_limits(ctx)->min_storage_buffer_offset_alignment;
    int64_t rows = INT64_MAX;
    for (int i = 0; i < n; i++) {
        const wgt_layout *l = ls[i];
        if (l->ndim == 0) continue;
        /* bytes reached by one row of dim 0, and the step between rows */
        int64_t lo = 0, hi = 0;
        for (int d = 1; d < l->ndim; d++) hi += (l->shape[d] > 0 ? l->shape[d] - 1 : 0) * l->strides[d];
        uint64_t size = wgt_dtype_size(l->dtype);
        uint64_t row_bytes = (uint64_t)(hi - lo + 1) * size + align + 4;
        uint64_t step = (uint64_t)l->strides[0] * size;
        if (row_bytes > limit) return 0;
        int64_t r = step ? (int64_t)((limit - row_bytes) / step) + 1 : INT64_MAX;
        if (r < rows) rows = r;
    }
    return rows < 1 ? 1 : rows;
}

wgt_status op_layout_params_fill(wgt_context *ctx, const wgt_layout *l, op_layout_params *p)
{
    memset(p, 0, sizeof *p);
    for (int d = 0; d < 8; d++) p->shape[d] = 1;
    /* right-aligned into 8 slots so kernels always walk 8 dims */
    int shift = 8 - l->ndim;
    for (int d = 0; d < l->ndim; d++) {
        if (l->shape[d] > UINT32_MAX || l->strides[d] > UINT32_MAX)
            return wgt_ctx_error(ctx, WGT_ERR_LIMIT, "a dimension or stride past 2^32 elements");
        p->shape[d + shift] = (uint32_t)l->shape[d];
        p->strides[d + shift] = (uint32_t)l->strides[d];
    }
    return WGT_OK;
}

void op_grid(wgt_context *ctx, uint64_t groups, uint32_t *gx, uint32_t *gy)
{
    uint32_t max = wgt_gpu_limits(ctx)->max_compute_workgroups_per_dimension;
    if (max == 0) max = 65535;
    if (groups <= max) {
        *gx = (uint32_t)groups;
        *gy = 1;
    } else {
        *gx = max;
        *gy = (uint32_t)((groups + max - 1) / max);
    }
}

int op_wgsl_section(char *buf, size_t cap, const char *file, const char *section)
{
    const char *text = wgt_gpu_kernel_text(file);
    char marker[96];
    snprintf(marker, sizeof marker, "// ---- %s ----\n", section);
    const char *start = text ? strstr(text, marker) : NULL;
    if (!start) return 0;
    start += strlen(marker);
    const char *end = strstr(start, "\n// ---- ");
    size_t n = end ? (size_t)(end - start) + 1 : strlen(start);
    size_t used = strlen(buf);
    if (used + n >= cap) return 0;
    memcpy(buf + used, start, n);
    buf[used + n] = 0;
    return 1;
}

int op_wgsl_ct(char *buf, size_t cap, wgt_dtype dt)
{
    return op_wgsl_section(buf, cap, "lib_ct", dt == WGT_I64 ? "ct i64" : op_is_float(dt) ? "ct float" : "ct int");
}

const char *op_wgsl_lib(void) { return wgt_gpu_kernel_text("lib_index"); }
const char *op_wgsl_lib_i64(void) { return wgt_gpu_kernel_text("lib_i64"); }

int op_sgmatrix_pick(wgt_context *ctx, int *fm, int *fn, int *fk)
{
    const wgt_adapter_info *info = wgt_gpu_info(ctx);
    int best = 0;
    for (int c = 0; c < info->n_subgroup_matrix_configs; c++) {
        int m = (int)info->subgroup_matrix_configs[c].m, n = (int)info->subgroup_matrix_configs[c].n,
            k = (int)info->subgroup_matrix_configs[c].k;
        if (info->subgroup_matrix_configs[c].component != WGT_F16 || info->subgroup_matrix_configs[c].result != WGT_F32 ||
            m < 1 || n < 1 || k < 1 || 32 % m || 32 % n || 32 % k)
            continue;
        int score = m * n * k + (m == 16 && (n == 8 || n == 16) ? 1 << 20 : 0) + (m == 16 && n == 8 && k == 8 ? 1 << 24 : 0);
        if (score > best) best = score, *fm = m, *fn = n, *fk = k;
    }
    return best > 0;
}

uint32_t op_workgroup_size(wgt_context *ctx)
{
    uint32_t wg = 256, a = wgt_gpu_limits(ctx)->max_compute_invocations_per_workgroup,
             b = wgt_gpu_limits(ctx)->max_compute_workgroup_size_x;
    if (a && a < wg) wg = a;
    if (b && b < wg) wg = b;
    uint32_t p2 = 1; /* a power of two: the reduction trees halve it */
    while (p2 * 2 <= wg) p2 *= 2;
    return p2 < 32 ? 32 : p2;
}

void op_wgsl_vec8_loader(char *buf, size_t cap, const char *name, const char *binding, wgt_dtype dt)
{
    size_t used = strlen(buf);
    const char *body;
    char tmp[512];
    if (dt == WGT_F32) {
        snprintf(tmp, sizeof tmp, "return array<vec4<f32>, 2>(bitcast<vec4<f32>>(%s[v]), bitcast<vec4<f32>>(%s[v + 1u]));",
                 binding, binding);
    } else if (dt == WGT_F16) {
        snprintf(tmp, sizeof tmp, "let q = %s[v]; return array<vec4<f32>, 2>(vec4<f32>(unpack2x16float(q.x), "
                 "unpack2x16float(q.y)), vec4<f32>(unpack2x16float(q.z), unpack2x16float(q.w)));", binding);
    } else { /* bf16: element 2i in the low half of word i */
        snprintf(tmp, sizeof tmp, "let q = %s[v]; let lo = bitcast<vec4<f32>>(q << vec4<u32>(16u)); "
                 "let hi = bitcast<vec4<f32>>(q & vec4<u32>(0xffff0000u)); return array<vec4<f32>, 2>("
                 "vec4<f32>(lo.x, hi.x, lo.y, hi.y), vec4<f32>(lo.z, hi.z, lo.w, hi.w));", binding);
    }
    body = tmp;
    used += snprintf(buf + used, used < cap ? cap - used : 0, "fn %s(v: u32) -> array<vec4<f32>, 2> { %s }\n", name, body);
}

void op_wgsl_tile_sums(char *buf, size_t cap, int tm, int tn)
{
    size_t used = strlen(buf);
    for (int i = 0; i < tm; i++)
        for (int g = 0; g < tn / 4; g++) APPEND("var<private> c_%d_%d: vec4<f32>;\n", i, g);
    APPEND("fn acc_zero() {\n");
    for (int i = 0; i < tm; i++)
        for (int g = 0; g < tn / 4; g++) APPEND("    c_%d_%d = vec4<f32>(0.0);\n", i, g);
    APPEND("}\nfn acc_step(at: u32, bt: u32) {\n    for (var kk = 0u; kk < BK; kk++) {\n");
    for (int g = 0; g < tm / 4; g++) APPEND("        let a%d = T[at + kk * PA + %du * TY];\n", g, g);
    for (int g = 0; g < tn / 4; g++) APPEND("        let b%d = T[bt + kk * PB + %du * TX];\n", g, g);
    for (int i = 0; i < tm; i++)
        for (int g = 0; g < tn / 4; g++)
            APPEND("        c_%d_%d = fma(vec4<f32>(a%d.%c), b%d, c_%d_%d);\n", i, g, i / 4, "xyzw"[i % 4], g, i, g);
    APPEND("    }\n}\nfn acc_out() {\n");
    for (int i = 0; i < tm; i++)
        for (int g = 0; g < tn / 4; g++) APPEND("    out4(%du, %du, c_%d_%d);\n", i, g, i, g);
    APPEND("}\n");
}

void op_wgsl_row_subgroups(char *buf, size_t cap, int sg)
{
    size_t used = strlen(buf);
    if (sg) APPEND("enable subgroups;\n");
    op_wgsl_section(buf, cap, "lib_rowsum", sg ? "subgroups" : "no subgroups");
}

int op_row_subgroups(wgt_context *ctx)
{
    return wgt_gpu_has_subgroups(ctx) && wgt_gpu_limits(ctx)->subgroup_max_size >= 1 &&
           wgt_gpu_limits(ctx)->subgroup_max_size <= 32;
}

uint32_t op_shuffle_subgroup(wgt_context *ctx)
{
    const wgt_limits *lim = wgt_gpu_limits(ctx);
    if (wgt_gpu_has_subgroups(ctx) && lim->subgroup_min_size == lim->subgroup_max_size && lim->subgroup_min_size >= 2 &&
        lim->subgroup_min_size <= 64 && !(lim->subgroup_min_size & (lim->subgroup_min_size - 1)))
        return lim->subgroup_min_size;
    return 1;
}

void op_plane_stride(const wgt_layout *lead, uint32_t *simple, uint32_t *stride)
{
    int64_t sh[WGT_MAX_DIMS], st[WGT_MAX_DIMS];
    int m = 0;
    for (int d = 0; d < lead->ndim; d++) {
        if (lead->shape[d] == 1) continue;
        if (m > 0 && st[m - 1] == lead->strides[d] * lead->shape[d]) {
            sh[m - 1] *= lead->shape[d];
            st[m - 1] = lead->strides[d];
        } else sh[m] = lead->shape[d], st[m++] = lead->strides[d];
    }
    *simple = m <= 1 && (m == 0 || st[0] <= UINT32_MAX);
    *stride = m == 1 && *simple ? (uint32_t)st[0] : 0;
}
