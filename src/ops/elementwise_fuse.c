/* Fusion of elementwise chains in a captured graph (notes/GRAPH.md "Fusion").
 *
 * During a capture every elementwise op (unary, binary, where, cast: elementwise.c's ew_run) notes
 * on its one dispatch what it computed (ew_note). At the end of the capture this pass walks the
 * commands: a run of consecutive noted dispatches over one output shape, each stage's inputs
 * being the graph's tensors (any strides, broadcast) or earlier stages' outputs read whole,
 * becomes one dispatch of elementwise_fused.wgsl. The WGSL of each stage is the op's own
 * (elementwise_ops.wgsl's op functions through ew_op_fn, which the unfused kernels use too), so a
 * new elementwise op is fusable without fusion code. An intermediate value is converted as its
 * store and reload would (f16 and bf16 rounding, 8-bit wrapping, bool), so fused results are the
 * unfused ones bit for bit. A stage's output is written only when it is live: some command
 * outside the run names its buffer, or a tensor on it is still held (a graph output); the others
 * stay in registers. The eager run during capture wrote them all, so the captured results are
 * unaffected. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise.h"

#define FUSE_MAX_STAGES 32
#define FUSE_PRELUDE_CAP (128 * 1024)

static const char *ci_type(int ci) { return ci == CI_F32 ? "f32" : ci == CI_U32 ? "u32" : "i32"; }

/* The WGSL type raw values of dt load as (ops.c's loaders): f32, i32 or u32. */
static const char *raw_type(wgt_dtype dt)
{
    switch (dt) {
    case WGT_F32: case WGT_F16: case WGT_BF16: return "f32";
    case WGT_I32: case WGT_I8: return "i32";
    default: return "u32";
    }
}

/* Can this dispatch be a stage: 32-bit compute types only (no i64 value anywhere), every tensor
 * bindable whole, output contiguous from 0, element counts in u32. */
static int stage_ok(wgt_context *ctx, const ew_note *n)
{
    uint64_t max = wgt_gpu_limits(ctx)->max_storage_buffer_binding_size;
    if (n->ci == CI_I64 || n->out.dt == WGT_I64 || n->out.offset || n->out.bytes > max) return 0;
    int64_t numel = 1, stride = 1;
    for (int d = n->ndim - 1; d >= 0; d--) {
        if (n->shape[d] != 1 && n->out.strides[d] != stride) return 0;
        stride *= n->shape[d];
        numel *= n->shape[d];
    }
    if (numel <= 0 || numel > (1ll << 30)) return 0;
    for (int i = 0; i < n->n_in; i++)
        if (n->in[i].dt == WGT_I64 || n->in[i].bytes > max || n->in[i].bytes > (1ull << 32)) return 0;
    return 1;
}

static int same_shape(const ew_note *a, const ew_note *b)
{
    if (a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return 0;
    return 1;
}

/* t's elements are n's output's in order (contiguous, not broadcast) from t's offset. */
static int dense(const ew_note_tensor *t, const ew_note *n)
{
    int64_t stride = 1;
    for (int d = n->ndim - 1; d >= 0; d--) {
        if (n->shape[d] != 1 && t->strides[d] != stride) return 0;
        stride *= n->shape[d];
    }
    return 1;
}

/* t reads an output of n's shape element for element. */
static int reads_whole(const ew_note_tensor *t, const ew_note *n) { return !t->offset && dense(t, n); }

typedef struct run {
    const ew_note *st[FUSE_MAX_STAGES];
    int first, n;
} run;

/* The latest stage of r before stage `before` whose output buffer is buf, or -1. */
static int producer(const run *r, int before, const wgt_buffer *buf)
{
    for (int s = before - 1; s >= 0; s--)
        if (r->st[s]->out.buf == buf) return s;
    return -1;
}

/* Can n join r as its next stage? Its inputs that are outputs of r must be read whole; its output
 * must be no input of r (a stage writes only a new tensor: checked anyway). */
static int joins(const run *r, const ew_note *n)
{
    if (r->n == FUSE_MAX_STAGES || !same_shape(r->st[0], n)) return 0;
    for (int i = 0; i < n->n_in; i++)
        if (producer(r, r->n, n->in[i].buf) >= 0 && !reads_whole(&n->in[i], n)) return 0;
    for (int s = 0; s < r->n; s++) {
        if (r->st[s]->out.buf == n->out.buf) return 0;
        for (int i = 0; i < r->st[s]->n_in; i++)
            if (r->st[s]->in[i].buf == n->out.buf) return 0;
    }
    return 1;
}

#define APPEND(...) (used += (size_t)snprintf(pre + used, used < cap ? cap - used : 0, __VA_ARGS__))

/* The index of element j of t (broadcast to n's shape) in its storage, as WGSL. */
static void index_expr(char *e, size_t cap, const ew_note_tensor *t, const ew_note *n)
{
    if (dense(t, n)) {
        snprintf(e, cap, "(j + %lldu)", (long long)t->offset);
        return;
    }
    size_t used = (size_t)snprintf(e, cap, "u32(%lld", (long long)t->offset);
    int64_t div = 1;
    for (int d = n->ndim - 1; d >= 0; d--) {
        if (n->shape[d] != 1 && t->strides[d])
            used += (size_t)snprintf(e + used, used < cap ? cap - used : 0, " + i32((j / %lldu) %% %lldu) * %lld",
                                     (long long)div, (long long)n->shape[d], (long long)t->strides[d]);
        div *= n->shape[d];
    }
    snprintf(e + used, used < cap ? cap - used : 0, ")");
}

/* The raw value (raw_type(dt)) that storing v (op_compute_type(dt)) as dt and loading it back gives. */
static void roundtrip_expr(char *e, size_t cap, const char *v, wgt_dtype dt)
{
    switch (dt) {
    /* | p.zero: a compiler may fold unpack(pack(x)) to x, which skips the rounding */
    case WGT_F16: snprintf(e, cap, "unpack2x16float(pack2x16float(vec2<f32>(%s, 0.0)) | p.zero).x", v); break;
    case WGT_BF16: snprintf(e, cap, "bitcast<f32>(fz_bf16(%s) << 16u)", v); break;
    case WGT_BOOL: snprintf(e, cap, "select(0u, 1u, %s != 0)", v); break;
    case WGT_I8: snprintf(e, cap, "extractBits(%s, 0u, 8u)", v); break;
    case WGT_U8: snprintf(e, cap, "extractBits(bitcast<u32>(%s), 0u, 8u)", v); break;
    default: snprintf(e, cap, "%s", v); break; /* f32, i32, u32 */
    }
}

/* raw (of raw_type(dt)) as the stage's compute type ci, as elementwise.c's loaders convert
 * (where's condition of a float dtype and an integer compute type: 0 or 1 by its truth). */
static void convert_expr(char *e, size_t cap, const char *raw, wgt_dtype dt, const char *ci, int cond)
{
    if (cond && op_is_float(dt) && strcmp(ci, "f32")) snprintf(e, cap, "select(%s(0), %s(1), truthy(%s))", ci, ci, raw);
    else if (!strcmp(raw_type(dt), ci)) snprintf(e, cap, "%s", raw);
    else snprintf(e, cap, "%s(%s)", ci, raw);
}

typedef struct fused {
    wgt_buffer *ext[WGT_MAX_BINDINGS]; /* the run's inputs, one binding per storage */
    uint64_t ext_bytes[WGT_MAX_BINDINGS];
    int n_ext;
    int live[FUSE_MAX_STAGES]; /* stage s is written: its binding y(live[s] - 1); 0: kept in registers */
    int n_live, pack;
} fused;

static int ext_index(fused *f, const ew_note_tensor *t)
{
    for (int i = 0; i < f->n_ext; i++)
        if (f->ext[i] == t->buf) return i;
    return -1;
}

/* The prelude of run r's kernel. */
static char *fused_prelude(wgt_context *ctx, const run *r, const fused *f)
{
    size_t cap = FUSE_PRELUDE_CAP, used = 0;
    char *pre = malloc(cap);
    if (!pre) return NULL;
    const char *lib = op_wgsl_lib(), *ops = wgt_gpu_kernel_text("elementwise_ops");
    const char *cut = ops ? strstr(ops, "\n// ---- i64 ----") : NULL;
    int ops_len = ops ? (cut ? (int)(cut - ops) : (int)strlen(ops)) : 0;
    pre[0] = 0;
    APPEND("%s\n%.*s\nconst PACK: u32 = %du;\nconst WG: u32 = %uu;\n", lib ? lib : "", ops_len, ops ? ops : "", f->pack,
           op_workgroup_size(ctx));
    /* round to nearest even on the upper 16 bits; NaN stays a quiet NaN (ops.c's bf16 storer) */
    APPEND("fn fz_bf16(x: f32) -> u32 {\n  let b = bitcast<u32>(x);\n"
           "  return select((b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u, (b >> 16u) | 0x40u, (b & 0x7fffffffu) > 0x7f800000u);\n}\n");
    for (int i = 0; i < f->n_ext; i++)
        APPEND("@group(0) @binding(%d) var<storage, read> x%d: array<u32>;\n", i + 1, i);
    for (int s = 0, o = 0; s < r->n; s++) {
        if (!f->live[s]) continue;
        const ew_note *n = r->st[s];
        const char *co = op_compute_type(n->out.dt);
        char name[16], bind[16];
        snprintf(bind, sizeof bind, "y%d", o);
        snprintf(name, sizeof name, "sy%d", o);
        APPEND("@group(0) @binding(%d) var<storage, read_write> y%d: array<u32>;\nvar<private> o%d: array<%s, 4>;\n",
               f->n_ext + 1 + o, o, o, co);
        op_wgsl_storer(pre, cap, name, bind, n->out.dt, co);
        used = strlen(pre);
        o++;
    }
    /* the stages' op functions, and a loader per (stage, input) read from the graph */
    for (int s = 0; s < r->n; s++) {
        const ew_note *n = r->st[s];
        const char *ci = ci_type(n->ci), *co = op_compute_type(n->out.dt);
        char fname[16], init[300], opx[16];
        snprintf(fname, sizeof fname, "stage%d", s);
        uint32_t fb[4];
        memcpy(fb, n->fp, sizeof fb);
        /* from p.zero: an infinite or NaN bound cannot be a constant expression */
        snprintf(init, sizeof init, "q = OpArgs(bitcast<f32>(p.zero | %uu), bitcast<f32>(p.zero | %uu), "
                 "bitcast<f32>(p.zero | %uu), bitcast<f32>(p.zero | %uu), %uu, %uu);", fb[0], fb[1], fb[2], fb[3],
                 n->ib[0], n->ib[1]);
        snprintf(opx, sizeof opx, "%uu", n->op);
        ew_op_fn(pre, cap, fname, init, n->fam, ci, ci, co, n->out.dt, opx);
        used = strlen(pre);
        for (int i = 0; i < n->n_in; i++) {
            if (producer(r, s, n->in[i].buf) >= 0) continue;
            char lname[16], bind[16];
            snprintf(lname, sizeof lname, "l%d_%d", s, i);
            snprintf(bind, sizeof bind, "x%d", ext_index((fused *)f, &n->in[i]));
            op_wgsl_loader(pre, cap, lname, bind, n->in[i].dt, raw_type(n->in[i].dt));
            used = strlen(pre);
        }
    }
    APPEND("fn stages(j: u32, k: u32) {\n");
    for (int s = 0; s < r->n; s++) {
        const ew_note *n = r->st[s];
        const char *ci = ci_type(n->ci);
        char arg[3][512];
        for (int i = 0; i < 3; i++) {
            if (i >= n->n_in) {
                snprintf(arg[i], sizeof arg[i], "%s(0)", ci);
                continue;
            }
            char raw[400], v[16];
            int from = producer(r, s, n->in[i].buf);
            if (from >= 0) {
                snprintf(v, sizeof v, "v%d", from);
                roundtrip_expr(raw, sizeof raw, v, n->in[i].dt);
            } else {
                char idx[300];
                index_expr(idx, sizeof idx, &n->in[i], n);
                snprintf(raw, sizeof raw, "l%d_%d(%s)", s, i, idx);
            }
            convert_expr(arg[i], sizeof arg[i], raw, n->in[i].dt, ci, n->fam == EW_WHERE && i == 0);
        }
        APPEND("  let v%d = stage%d(%s, %s, %s);\n", s, s, arg[0], arg[1], arg[2]);
        if (f->live[s]) APPEND("  o%d[k] = v%d;\n", f->live[s] - 1, s);
    }
    APPEND("}\nfn store_all(w: u32) {\n");
    for (int o = 0; o < f->n_live; o++) APPEND("  sy%d(w, o%d);\n", o, o);
    APPEND("}\n");
    if (used >= cap) {
        free(pre);
        return NULL;
    }
    return pre;
}

/* Replace run r (commands r->first .. r->first + r->n - 1) by one fused dispatch, when it pays
 * and fits; r untouched otherwise. *saved counts the dispatches saved. */
static wgt_status fuse_run(wgt_context *ctx, wgt_gpu_graph *g, const run *r, int *saved)
{
    if (r->n < 2) return WGT_OK;
    int first = r->first, last = r->first + r->n - 1;
    fused f;
    memset(&f, 0, sizeof f);
    uint32_t max_bind = wgt_gpu_limits(ctx)->max_storage_buffers_per_shader_stage;
    if (max_bind > WGT_MAX_BINDINGS) max_bind = WGT_MAX_BINDINGS;
    for (int s = 0; s < r->n; s++) {
        const ew_note *n = r->st[s];
        for (int i = 0; i < n->n_in; i++) {
            if (producer(r, s, n->in[i].buf) >= 0 || ext_index(&f, &n->in[i]) >= 0) continue;
            if ((uint32_t)f.n_ext + 1 >= max_bind) return WGT_OK;
            f.ext_bytes[f.n_ext] = n->in[i].bytes;
            f.ext[f.n_ext++] = n->in[i].buf;
        }
        if (s == r->n - 1 || !wgt_gpu_graph_buffer_private(g, n->out.buf, first, last)) {
            int pack = op_pack(n->out.dt);
            if (f.n_live && pack != f.pack) return WGT_OK; /* one word of each output per invocation */
            f.pack = pack;
            f.live[s] = ++f.n_live;
        }
    }
    if ((uint32_t)(f.n_ext + f.n_live) > max_bind) return WGT_OK;
    char *pre = fused_prelude(ctx, r, &f);
    if (!pre) return WGT_OK; /* out of memory, or a chain too long to write: left unfused */
    wgt_kernel *k;
    wgt_status st = wgt_gpu_kernel(ctx, "elementwise_fused", pre, "main", NULL, 0, &k);
    free(pre);
    if (st) return st;
    /* named by its ops (WGT_PROFILE=1's rows, pass labels): the kernel is cached by its text,
     * which the ops make, so one name per kernel */
    int used = snprintf(k->name, sizeof k->name, "fused:");
    for (int s = 0; s < r->n && used < (int)sizeof k->name; s++) {
        const ew_note *n = r->st[s];
        const char *op = n->fam == EW_UNARY ? wgt_unary_op_name((wgt_unary_op)n->op)
                         : n->fam == EW_BINARY ? wgt_binary_op_name((wgt_binary_op)n->op)
                         : n->fam == EW_WHERE ? "where" : "cast";
        used += snprintf(k->name + used, sizeof k->name - (size_t)used, "%s%s", s ? "+" : "", op);
    }
    wgt_binding b[WGT_MAX_BINDINGS];
    int nb = 0;
    for (int i = 0; i < f.n_ext; i++) b[nb++] = (wgt_binding){f.ext[i], 0, f.ext_bytes[i] & ~3ull};
    for (int s = 0; s < r->n; s++)
        if (f.live[s]) b[nb++] = (wgt_binding){r->st[s]->out.buf, 0, r->st[s]->out.bytes & ~3ull};
    int64_t numel = 1;
    for (int d = 0; d < r->st[0]->ndim; d++) numel *= r->st[0]->shape[d];
    ew_params p;
    memset(&p, 0, sizeof p);
    p.n = (uint32_t)numel;
    uint32_t wg = op_workgroup_size(ctx), gx, gy;
    uint64_t words = ((uint64_t)numel + (uint64_t)f.pack - 1) / (uint64_t)f.pack;
    op_grid(ctx, (words + wg - 1) / wg, &gx, &gy);
    if ((st = wgt_gpu_graph_replace(g, first, last, k, &p, sizeof p, b, nb, gx, gy, 1))) return st;
    *saved += r->n - 1;
    if (wgt_gpu_debug(ctx))
        fprintf(stderr, "wgt: graph: fused dispatches %d..%d (%d elementwise ops, %d inputs, %d outputs written)\n",
                first, last, r->n, f.n_ext, f.n_live);
    return WGT_OK;
}

wgt_status ew_fuse_graph(wgt_context *ctx, wgt_gpu_graph *g)
{
    run r;
    r.n = 0, r.first = 0;
    int saved = 0, n = wgt_gpu_graph_n_cmds(g);
    wgt_status st = WGT_OK;
    for (int i = 0; i <= n && !st; i++) {
        const ew_note *note = i < n ? wgt_gpu_graph_note(g, i, EW_NOTE) : NULL;
        if (note && !stage_ok(ctx, note)) note = NULL;
        if (note && r.n && r.first + r.n == i && joins(&r, note)) {
            r.st[r.n++] = note;
            continue;
        }
        st = fuse_run(ctx, g, &r, &saved);
        r.n = 0;
        if (note) {
            r.first = i;
            r.st[r.n++] = note;
        }
    }
    if (!st && saved && wgt_gpu_debug(ctx))
        fprintf(stderr, "wgt: graph: fusion saved %d dispatches\n", saved);
    return st;
}
