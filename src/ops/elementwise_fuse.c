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
#include "ops/fused_route.h"
#include "ops/matmul_fuse.h"
#include "ops/norm.h"

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
    /* bf16_bits: elementwise_ops.wgsl's rounding (nearest even, NaN kept quiet), in every fused prelude */
    case WGT_BF16: snprintf(e, cap, "bitcast<f32>(bf16_bits(%s) << 16u)", v); break;
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

/* The storages a generated kernel reads the chains' inputs from, one binding each, and the WGSL
 * variable each is read through. */
typedef struct ext_table {
    wgt_buffer *buf[WGT_MAX_BINDINGS];
    uint64_t bytes[WGT_MAX_BINDINGS];
    char name[WGT_MAX_BINDINGS][16];
    int n;
} ext_table;

static int ext_index(const ext_table *x, const wgt_buffer *b)
{
    for (int i = 0; i < x->n; i++)
        if (x->buf[i] == b) return i;
    return -1;
}

/* A chain as one generated kernel sees it: its stages' functions are named PREFIX "stage" s, its
 * loaders PREFIX "l" s "_" i, its values PREFIX "v" s. `given` (or NULL): a buffer whose values
 * the chain does not load but takes from the WGSL expression given_expr (compute type of
 * given_dt: the reduction's value at the element, in an epilogue). live: stage s is written
 * (to private array o(live[s] - 1)) in the elementwise kernel; NULL elsewhere. */
typedef struct chain {
    const run *r;
    const char *prefix;
    const wgt_buffer *given;
    const char *given_expr;
    wgt_dtype given_dt;
    const int *live;
} chain;

/* Add each input storage of c's stages that the chain does not make (nor takes as given) to x,
 * named NAME0 for the first new one when name0 is set, else FMT with its index. Returns 0 when
 * more than `room` would be needed. */
static int chain_inputs(const chain *c, ext_table *x, const char *name0, const char *fmt, int room)
{
    const run *r = c->r;
    for (int s = 0; s < r->n; s++) {
        const ew_note *n = r->st[s];
        for (int i = 0; i < n->n_in; i++) {
            wgt_buffer *b = n->in[i].buf;
            if (producer(r, s, b) >= 0 || b == c->given || ext_index(x, b) >= 0) continue;
            if (x->n >= room) return 0;
            x->bytes[x->n] = n->in[i].bytes;
            if (name0) snprintf(x->name[x->n], sizeof x->name[0], "%s", name0), name0 = NULL;
            else snprintf(x->name[x->n], sizeof x->name[0], fmt, x->n);
            x->buf[x->n++] = b;
        }
    }
    return 1;
}

/* Append c's op functions (one per stage) and input loaders. */
static void chain_fns(char *pre, size_t cap, const chain *c, const ext_table *x)
{
    const run *r = c->r;
    for (int s = 0; s < r->n; s++) {
        const ew_note *n = r->st[s];
        const char *ci = ci_type(n->ci), *co = op_compute_type(n->out.dt);
        char fname[24], init[300], opx[16];
        snprintf(fname, sizeof fname, "%sstage%d", c->prefix, s);
        uint32_t fb[4];
        memcpy(fb, n->fp, sizeof fb);
        /* from p.zero: an infinite or NaN bound cannot be a constant expression */
        snprintf(init, sizeof init, "q = OpArgs(bitcast<f32>(p.zero | %uu), bitcast<f32>(p.zero | %uu), "
                 "bitcast<f32>(p.zero | %uu), bitcast<f32>(p.zero | %uu), %uu, %uu);", fb[0], fb[1], fb[2], fb[3],
                 n->ib[0], n->ib[1]);
        snprintf(opx, sizeof opx, "%uu", n->op);
        ew_op_fn(pre, cap, fname, init, n->fam, ci, ci, co, n->out.dt, opx);
        for (int i = 0; i < n->n_in; i++) {
            if (producer(r, s, n->in[i].buf) >= 0 || n->in[i].buf == c->given) continue;
            char lname[24];
            snprintf(lname, sizeof lname, "%sl%d_%d", c->prefix, s, i);
            op_wgsl_loader(pre, cap, lname, x->name[ext_index(x, n->in[i].buf)], n->in[i].dt, raw_type(n->in[i].dt));
        }
    }
}

/* Append the statements that compute c at output element j (a u32 named j in scope). */
static void chain_lines(char *pre, size_t cap, const chain *c)
{
    const run *r = c->r;
    size_t used = strlen(pre);
    const char *px = c->prefix;
    for (int s = 0; s < r->n; s++) {
        const ew_note *n = r->st[s];
        const char *ci = ci_type(n->ci);
        char arg[3][512];
        for (int i = 0; i < 3; i++) {
            if (i >= n->n_in) {
                snprintf(arg[i], sizeof arg[i], "%s(0)", ci);
                continue;
            }
            char raw[400], v[24];
            int from = producer(r, s, n->in[i].buf);
            if (from >= 0) {
                snprintf(v, sizeof v, "%sv%d", px, from);
                roundtrip_expr(raw, sizeof raw, v, n->in[i].dt);
            } else if (n->in[i].buf == c->given) {
                roundtrip_expr(raw, sizeof raw, c->given_expr, c->given_dt);
            } else {
                char idx[300];
                index_expr(idx, sizeof idx, &n->in[i], n);
                snprintf(raw, sizeof raw, "%sl%d_%d(%s)", px, s, i, idx);
            }
            convert_expr(arg[i], sizeof arg[i], raw, n->in[i].dt, ci, n->fam == EW_WHERE && i == 0);
        }
        APPEND("  let %sv%d = %sstage%d(%s, %s, %s);\n", px, s, px, s, arg[0], arg[1], arg[2]);
        if (c->live && c->live[s]) APPEND("  o%d[k] = %sv%d;\n", c->live[s] - 1, px, s);
    }
}

typedef struct fused {
    ext_table x; /* the run's inputs, one binding per storage: x0.. */
    int live[FUSE_MAX_STAGES]; /* stage s is written: its binding y(live[s] - 1); 0: kept in registers */
    int n_live, pack;
} fused;

/* elementwise_ops.wgsl's 32-bit part; for a host kernel (reduce, norm) without its Params and
 * uniform (the host's have `zero`), op_args, nan_f and inf_f (the host defines them alike). */
static void append_ops(char *pre, size_t cap, int host)
{
    const char *ops = wgt_gpu_kernel_text("elementwise_ops");
    if (!ops) return;
    const char *cut = strstr(ops, "\n// ---- i64 ----");
    const char *end = cut ? cut : ops + strlen(ops);
    size_t used = strlen(pre);
    if (!host) {
        APPEND("%.*s\n", (int)(end - ops), ops);
        return;
    }
    int in_params = 0;
    for (const char *l = ops; l < end;) {
        const char *nl = memchr(l, '\n', (size_t)(end - l));
        const char *le = nl ? nl + 1 : end;
        int skip = in_params || !strncmp(l, "struct Params {", 15) || !strncmp(l, "@group(0) @binding(0) var<uniform> p", 36) ||
                   !strncmp(l, "fn op_args(", 11) || !strncmp(l, "fn nan_f(", 9) || !strncmp(l, "fn inf_f(", 9);
        if (!strncmp(l, "struct Params {", 15)) in_params = 1;
        else if (in_params && !strncmp(l, "};", 2)) in_params = 0, skip = 1;
        if (!skip) APPEND("%.*s", (int)(le - l), l);
        l = le;
    }
    APPEND("\n");
}

/* The prelude of run r's kernel. */
static char *fused_prelude(wgt_context *ctx, const run *r, const fused *f)
{
    size_t cap = FUSE_PRELUDE_CAP, used = 0;
    char *pre = malloc(cap);
    if (!pre) return NULL;
    const char *lib = op_wgsl_lib();
    pre[0] = 0;
    APPEND("%s\n", lib ? lib : "");
    append_ops(pre, cap, 0);
    used = strlen(pre);
    APPEND("const PACK: u32 = %du;\nconst WG: u32 = %uu;\n", f->pack, op_workgroup_size(ctx));
    for (int i = 0; i < f->x.n; i++)
        APPEND("@group(0) @binding(%d) var<storage, read> x%d: array<u32>;\n", i + 1, i);
    for (int s = 0, o = 0; s < r->n; s++) {
        if (!f->live[s]) continue;
        const ew_note *n = r->st[s];
        const char *co = op_compute_type(n->out.dt);
        char name[16], bind[16];
        snprintf(bind, sizeof bind, "y%d", o);
        snprintf(name, sizeof name, "sy%d", o);
        APPEND("@group(0) @binding(%d) var<storage, read_write> y%d: array<u32>;\nvar<private> o%d: array<%s, 4>;\n",
               f->x.n + 1 + o, o, o, co);
        op_wgsl_storer(pre, cap, name, bind, n->out.dt, co);
        used = strlen(pre);
        o++;
    }
    chain c = {r, "", NULL, NULL, WGT_F32, f->live};
    chain_fns(pre, cap, &c, &f->x);
    used = strlen(pre);
    APPEND("fn stages(j: u32, k: u32) {\n");
    chain_lines(pre, cap, &c);
    used = strlen(pre);
    APPEND("}\nfn store_all(w: u32) {\n");
    for (int o = 0; o < f->n_live; o++) APPEND("  sy%d(w, o%d);\n", o, o);
    APPEND("}\n");
    if (used >= cap) {
        free(pre);
        return NULL;
    }
    return pre;
}

static void name_ops(char *name, size_t cap, const run *r)
{
    int used = (int)strlen(name);
    for (int s = 0; s < r->n && used < (int)cap; s++) {
        const ew_note *n = r->st[s];
        const char *op = n->fam == EW_UNARY ? wgt_unary_op_name((wgt_unary_op)n->op)
                         : n->fam == EW_BINARY ? wgt_binary_op_name((wgt_binary_op)n->op)
                         : n->fam == EW_WHERE ? "where" : "cast";
        used += snprintf(name + used, cap - (size_t)used, "%s%s", s ? "+" : "", op);
    }
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
    chain c = {r, "", NULL, NULL, WGT_F32, NULL};
    if (!chain_inputs(&c, &f.x, NULL, "x%d", (int)max_bind - 1)) return WGT_OK;
    for (int s = 0; s < r->n; s++) {
        const ew_note *n = r->st[s];
        if (s == r->n - 1 || !wgt_gpu_graph_buffer_private(g, n->out.buf, first, last)) {
            int pack = op_pack(n->out.dt);
            if (f.n_live && pack != f.pack) return WGT_OK; /* one word of each output per invocation */
            f.pack = pack;
            f.live[s] = ++f.n_live;
        }
    }
    if ((uint32_t)(f.x.n + f.n_live) > max_bind) return WGT_OK;
    char *pre = fused_prelude(ctx, r, &f);
    if (!pre) return WGT_OK; /* out of memory, or a chain too long to write: left unfused */
    wgt_kernel *k;
    wgt_status st = wgt_gpu_kernel(ctx, "elementwise_fused", pre, "main", NULL, 0, &k);
    free(pre);
    if (st) return st;
    /* named by its ops (WGT_PROFILE=1's rows, pass labels): the kernel is cached by its text,
     * which the ops make, so one name per kernel */
    snprintf(k->name, sizeof k->name, "fused:");
    name_ops(k->name, sizeof k->name, r);
    wgt_binding b[WGT_MAX_BINDINGS];
    int nb = 0;
    for (int i = 0; i < f.x.n; i++) b[nb++] = (wgt_binding){f.x.buf[i], 0, f.x.bytes[i] & ~3ull};
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
                first, last, r->n, f.x.n, f.n_live);
    return WGT_OK;
}

/* ---- prologues and epilogues of reductions and normalisations ------------------------------ */

static int64_t run_numel(const run *r)
{
    int64_t numel = 1;
    for (int d = 0; d < r->st[0]->ndim; d++) numel *= r->st[0]->shape[d];
    return numel;
}

/* Where the prologue of host dispatch h (note hn, bindings hb) may start in run r, which ends at
 * h - 1: the smallest m such that stages m.. make only values no command outside m..h reads,
 * stage r->n - 1's output being what h loads; -1 when none. */
static int prologue_start(const wgt_gpu_graph *g, const run *r, int h, const ew_host_note *hn, const wgt_binding *hb,
                          int nb)
{
    if (!r->n || r->first + r->n != h || !hn->ld) return -1;
    /* a product's prologue only with WGT_GRAPH_FUSE_MATMUL_PRO=1: on the H200 the generic Qwen2.5-0.5B
     * decode step ran 2.41 ms a token with silu * up in the down projection's loads (each workgroup
     * recomputes the whole row) against 2.25-2.27 without, in both rounds (tools/h200_graph_decode.sh) */
    const char *e = hn->mm ? getenv("WGT_GRAPH_FUSE_MATMUL_PRO") : NULL;
    if (hn->mm && !(e && !strcmp(e, "1"))) return -1;
    const ew_note *last = r->st[r->n - 1];
    if (hb[hn->in].buffer != last->out.buf || last->out.dt != hn->in_dt) return -1;
    int m = 0;
    for (; m < r->n; m++) {
        int ok = 1;
        for (int s = m; s < r->n && ok; s++) ok = wgt_gpu_graph_buffer_private(g, r->st[s]->out.buf, r->first + m, h);
        if (ok) break;
    }
    if (m == r->n) return -1;
    /* h's other bindings may name those values only where it reads nothing (norm's absent weights) */
    for (int b = 0; b < nb; b++)
        for (int s = m; s < r->n; s++)
            if (b != hn->in && hb[b].buffer == r->st[s]->out.buf && !(hn->unused >> b & 1)) return -1;
    return m;
}

/* How many stages of run e (starting at h + 1) fuse into host dispatch h as its epilogue: the
 * longest prefix whose first stage reads h's output whole, over h's output's shape, every value
 * but the last read by nothing outside h..the prefix, the last one stored as h stores its own
 * (the same elements per word). 0: none. */
static int epilogue_len(const wgt_gpu_graph *g, const run *e, int h, const ew_host_note *hn, const wgt_binding *hb,
                        int nb)
{
    if (!e->n || e->first != h + 1 || run_numel(e) != hn->out_numel) return 0;
    wgt_buffer *hout = hb[hn->out].buffer;
    for (int b = 0; b < nb; b++)
        if (b != hn->out && hb[b].buffer == hout) return 0;
    int reads = 0;
    for (int i = 0; i < e->st[0]->n_in; i++) reads |= e->st[0]->in[i].buf == hout;
    if (!reads) return 0;
    for (int k = e->n; k >= 1; k--) {
        int ok = wgt_gpu_graph_buffer_private(g, hout, h, h + k);
        for (int s = 0; s < k && ok; s++) {
            const ew_note *n = e->st[s];
            for (int i = 0; i < n->n_in; i++)
                if (n->in[i].buf == hout && (n->in[i].dt != hn->out_dt || !reads_whole(&n->in[i], n))) ok = 0;
            if (s < k - 1 && !wgt_gpu_graph_buffer_private(g, n->out.buf, h, h + k)) ok = 0;
        }
        const ew_note *last = e->st[k - 1];
        if (hn->st_elem && last->out.dt != hn->out_dt) ok = 0; /* one element a store: f32 into f32 */
        if (ok && op_pack(last->out.dt) == op_pack(hn->out_dt) &&
            wgt_dtype_size(last->out.dt) == wgt_dtype_size(hn->out_dt) &&
            hb[hn->out].offset + 4 <= last->out.bytes)
            return k;
    }
    return 0;
}

/* The text appended to host h's prelude: the ops, the extra bindings, the prologue's loader and
 * the epilogue's storer. */
static char *host_extra(const ew_host_note *hn, const wgt_binding *hb, int nb, const ext_table *x, int x0,
                        const chain *pro, const chain *epi)
{
    size_t cap = FUSE_PRELUDE_CAP, used = 0;
    char *pre = malloc(cap);
    if (!pre) return NULL;
    pre[0] = 0;
    append_ops(pre, cap, 1);
    used = strlen(pre);
    for (int i = x0; i < x->n; i++)
        APPEND("@group(0) @binding(%d) var<storage, read> %s: array<u32>;\n", nb + 1 + i - x0, x->name[i]);
    if (pro) {
        const ew_note *last = pro->r->st[pro->r->n - 1];
        chain_fns(pre, cap, pro, x);
        used = strlen(pre);
        char v[24], raw[400], conv[512];
        snprintf(v, sizeof v, "pv%d", pro->r->n - 1);
        roundtrip_expr(raw, sizeof raw, v, last->out.dt);
        convert_expr(conv, sizeof conv, raw, last->out.dt, hn->ld_type, 0);
        APPEND("fn %s(i: u32) -> %s {\n  let j = i + %lluu;\n", hn->ld, hn->ld_type,
               (unsigned long long)(hb[hn->in].offset / wgt_dtype_size(hn->in_dt)));
        chain_lines(pre, cap, pro);
        used = strlen(pre);
        APPEND("  return %s;\n}\n", conv);
    }
    if (epi && hn->st_elem) { /* element i of the output binding, v its value */
        chain_fns(pre, cap, epi, x);
        used = strlen(pre);
        APPEND("fn %s(i: u32, v: %s) {\n      let j = i + %lluu;\n      let hv = v;\n", hn->st, hn->st_type,
               (unsigned long long)(hb[hn->out].offset / wgt_dtype_size(hn->out_dt)));
        chain_lines(pre, cap, epi);
        used = strlen(pre);
        APPEND("  %s[i] = %s(ev%d);\n}\n", hn->out_var, hn->st_type, epi->r->n - 1);
    } else if (epi) {
        const ew_note *last = epi->r->st[epi->r->n - 1];
        const char *co = op_compute_type(last->out.dt);
        int pack = op_pack(hn->out_dt);
        chain_fns(pre, cap, epi, x);
        op_wgsl_storer(pre, cap, "e_st", hn->out_var, last->out.dt, co);
        used = strlen(pre);
        APPEND("fn %s(w: u32, v: array<%s, 4>) {\n  var eo: array<%s, 4>;\n"
               "  for (var k = 0u; k < %du; k = k + 1u) {\n    let j = (w + %lluu) * %du + k;\n"
               "    if (j < %lldu) {\n      let hv = v[k];\n",
               hn->st, hn->st_type, co, pack, (unsigned long long)(hb[hn->out].offset / 4), pack,
               (long long)hn->out_numel);
        chain_lines(pre, cap, epi);
        used = strlen(pre);
        APPEND("      eo[k] = ev%d;\n    }\n  }\n  e_st(w, eo);\n}\n", epi->r->n - 1);
    }
    if (used >= cap) {
        free(pre);
        return NULL;
    }
    return pre;
}

/* Fuse run pro (its stages m.. when m >= 0) before, and the first k stages of run epi after, host
 * dispatch h into h's kernel. Returns 0 (nothing done) when the bindings do not fit. */
static wgt_status fuse_host(wgt_context *ctx, wgt_gpu_graph *g, int h, const ew_host_note *hn, const run *pro,
                            const run *epi, int *done)
{
    *done = 0;
    int nb, patched;
    const uint8_t *params;
    uint32_t grid[3];
    const wgt_kernel *hk;
    const wgt_binding *hb = wgt_gpu_graph_dispatch(g, h, &nb, &params, grid, &patched, &hk);
    uint32_t max_bind = wgt_gpu_limits(ctx)->max_storage_buffers_per_shader_stage;
    if (max_bind > WGT_MAX_BINDINGS) max_bind = WGT_MAX_BINDINGS;
    ext_table x;
    memset(&x, 0, sizeof x);
    int room = (int)max_bind - nb;
    chain pc = {pro, "p", NULL, NULL, WGT_F32, NULL};
    chain ec = {epi, "e", epi ? hb[hn->out].buffer : NULL, "hv", hn->out_dt, NULL};
    /* the prologue's first input takes the place of the value h loaded (binding in) */
    if (pro && !chain_inputs(&pc, &x, hn->in_var, "fx%d", room + 1)) return WGT_OK;
    int x0 = pro ? 1 : 0;
    if (epi && !chain_inputs(&ec, &x, NULL, "fx%d", room + x0)) return WGT_OK;
    for (int i = 0; i < x.n; i++) /* read-only here: nothing h writes */
        for (int b = 0; b < nb; b++)
            if (hb[b].buffer == x.buf[i] && !(hk->readonly_mask >> b & 1)) return WGT_OK;
    char *extra = host_extra(hn, hb, nb, &x, x0, pro ? &pc : NULL, epi ? &ec : NULL);
    if (!extra) return WGT_OK;
    /* a product's prologue is its skip bit 4 (mm_prelude_ex: bits 1 and 2 are B's and C's loaders) */
    char *pre = hn->prelude(hn->key, extra, pro ? (hn->mm ? 4 : 1) : 0, epi != NULL);
    free(extra);
    if (!pre) return WGT_OK;
    wgt_kernel *k;
    wgt_status st = wgt_gpu_kernel(ctx, hn->file, pre, "main", NULL, 0, &k);
    free(pre);
    if (st) return st;
    snprintf(k->name, sizeof k->name, "fused:");
    if (pro) name_ops(k->name, sizeof k->name, pro);
    size_t len = strlen(k->name);
    snprintf(k->name + len, sizeof k->name - len, "%s%s%s", pro ? ">" : "", hn->name, epi ? ">" : "");
    if (epi) name_ops(k->name, sizeof k->name, epi);
    wgt_binding b[WGT_MAX_BINDINGS];
    uint8_t p[WGT_UNIFORM_SLOT];
    memcpy(p, params, sizeof p);
    for (int i = 0; i < nb; i++) {
        b[i] = hb[i];
        for (int s = 0; pro && s < pro->n; s++)
            if (b[i].buffer == pro->st[s]->out.buf) b[i] = (wgt_binding){x.buf[0], 0, x.bytes[0] & ~3ull};
    }
    if (epi) {
        const ew_note *last = epi->st[epi->n - 1];
        uint64_t size = last->out.bytes - b[hn->out].offset;
        if (b[hn->out].size < size) size = b[hn->out].size;
        b[hn->out] = (wgt_binding){last->out.buf, b[hn->out].offset, size & ~3ull};
    }
    int n = nb;
    for (int i = x0; i < x.n; i++) b[n++] = (wgt_binding){x.buf[i], 0, x.bytes[i] & ~3ull};
    int first = pro ? pro->first : h, last = epi ? epi->first + epi->n - 1 : h;
    if ((st = wgt_gpu_graph_replace(g, first, last, k, p, sizeof p, b, n, grid[0], grid[1], grid[2]))) return st;
    *done = 1;
    if (wgt_gpu_debug(ctx))
        fprintf(stderr, "wgt: graph: fused dispatches %d..%d into %s (%d ops before, %d after, %d inputs)\n", first,
                last, hn->name, pro ? pro->n : 0, epi ? epi->n : 0, x.n);
    return WGT_OK;
}

/* Host dispatch h (note hn) after run r (which ends at h - 1, possibly empty): fuse r's tail as
 * its prologue and the run after it as its epilogue where they qualify; r's other stages fuse as
 * an elementwise chain. *next: the last command consumed. */
static wgt_status fuse_at_host(wgt_context *ctx, wgt_gpu_graph *g, const run *r, int h, const ew_host_note *hn,
                               int *saved, int *next)
{
    *next = h;
    int nb, patched;
    const uint8_t *params;
    uint32_t grid[3];
    const wgt_kernel *hk;
    const wgt_binding *hb = wgt_gpu_graph_dispatch(g, h, &nb, &params, grid, &patched, &hk);
    if (!hb || patched || nb != hn->n_bind) return fuse_run(ctx, g, r, saved);
    int m = prologue_start(g, r, h, hn, hb, nb);
    run pro = {{0}, 0, 0}, epi = {{0}, h + 1, 0};
    if (m >= 0) {
        pro.first = r->first + m, pro.n = r->n - m;
        memcpy(pro.st, r->st + m, sizeof *pro.st * (size_t)pro.n);
    }
    int n_cmds = wgt_gpu_graph_n_cmds(g);
    for (int i = h + 1; i < n_cmds; i++) {
        const ew_note *note = wgt_gpu_graph_note(g, i, EW_NOTE);
        if (!note || !stage_ok(ctx, note) || (epi.n && !joins(&epi, note))) break;
        epi.st[epi.n++] = note;
    }
    epi.n = epilogue_len(g, &epi, h, hn, hb, nb);
    int done = 0;
    wgt_status st = WGT_OK;
    /* both, else the epilogue alone, else the prologue alone */
    if (pro.n && epi.n) st = fuse_host(ctx, g, h, hn, &pro, &epi, &done);
    if (!st && !done && epi.n && (st = fuse_host(ctx, g, h, hn, NULL, &epi, &done)) == WGT_OK && done) pro.n = 0;
    if (!st && !done && pro.n && (st = fuse_host(ctx, g, h, hn, &pro, NULL, &done)) == WGT_OK && done) epi.n = 0;
    if (st) return st;
    if (!done) pro.n = epi.n = 0;
    run head = *r; /* what the prologue did not take */
    head.n = pro.n ? m : r->n;
    if ((st = fuse_run(ctx, g, &head, saved))) return st;
    *saved += pro.n + epi.n;
    *next = h + epi.n;
    return WGT_OK;
}

/* WGT_GRAPH_FUSE_HOST=0: chains stay out of reductions, normalisations and matrix products (A/B,
 * debugging). */
static int hosts_off(void)
{
    const char *e = getenv("WGT_GRAPH_FUSE_HOST");
    return e && !strcmp(e, "0");
}

/* Does the chain after product n fuse into its store? WGT_GRAPH_FUSE_MATMUL=1: every product's;
 * 0: none; unset: the decode products' (matmul_gemv.wgsl, M <= 4), where a dispatch saved is most
 * of the product's time. The tiled kernels' stay apart until measured on a GPU: on lavapipe a
 * 128-row step with them ran 2x slower in two of four runs, faster in one (a loaded machine). */
static int matmul_epilogue(const mm_note *n)
{
    const char *e = getenv("WGT_GRAPH_FUSE_MATMUL");
    if (e && *e) return strcmp(e, "0") != 0;
    return n->gemv;
}

/* ---- an rms_norm fused into the one-row product after it (opt-in) --------------------------- */

/* WGT_GRAPH_FUSE_NORM_MATMUL=1: an rms_norm over one f32 row whose output only the next command,
 * a one-row gemv product (f32 A, entry main), reads becomes that product's prologue: each workgroup
 * sums the row's squares itself (lib_matmul.wgsl "gemv norm prologue") and loads A as
 * x * rstd * w, as the hand-fused decode kernels do. Not bit for bit the unfused graph (the sum's
 * order is the workgroup's tree, not the norm kernel's), hence opt-in until measured. */
static int norm_products_on(void)
{
    const char *e = getenv("WGT_GRAPH_FUSE_NORM_MATMUL");
    return e && !strcmp(e, "1");
}

static wgt_status fuse_norm_product(wgt_context *ctx, wgt_gpu_graph *g, int i, int *done)
{
    *done = 0;
    const ew_host_note *hn = wgt_gpu_graph_note(g, i, EW_HOST_NOTE);
    const mm_note *mn = wgt_gpu_graph_note(g, i + 1, EW_HOST_NOTE);
    if (!hn || hn->mm || strcmp(hn->name, "rms_norm") || !mn || !mn->h.mm || !mn->gemv || !mn->h.ld ||
        strcmp(mn->entry, "main") || hn->in_dt != WGT_F32 || hn->out_dt != WGT_F32)
        return WGT_OK;
    int nn, nm, pn, pm;
    const uint8_t *np_, *mp_;
    uint32_t ngrid[3], mgrid[3];
    const wgt_kernel *nk, *mk;
    const wgt_binding *nb = wgt_gpu_graph_dispatch(g, i, &nn, &np_, ngrid, &pn, &nk);
    const wgt_binding *mb = wgt_gpu_graph_dispatch(g, i + 1, &nm, &mp_, mgrid, &pm, &mk);
    if (!nb || !mb || pn || pm || nn != 6 || nm != 4) return WGT_OK;
    norm_params np;
    mm_params mp;
    memcpy(&np, np_, sizeof np);
    memcpy(&mp, mp_, sizeof mp);
    /* one contiguous row of K elements with an f32/f16/bf16 weight, no bias; the product reads
     * exactly that row as its one row of A, from the start of the norm's output binding */
    if (np.op != NORM_RMS || np.n_rows != 1 || !np.row_simple || np.row_stride != 1 || !np.has_w || np.has_b ||
        np.wmod != 1 || np.wdiv != 1 || np.out_w0 != 0 || mp.M != 1 || mp.batch != 1 || np.R != mp.K)
        return WGT_OK;
    wgt_buffer *hbuf = nb[1].buffer;
    if (mb[0].buffer != hbuf || mb[0].offset != nb[1].offset || mp.off_a != 0) return WGT_OK;
    if (!wgt_gpu_graph_buffer_private(g, hbuf, i, i + 1) || mb[3].buffer == nb[0].buffer || mb[3].buffer == nb[2].buffer)
        return WGT_OK;
    /* C (a bias) may not be the norm's output either: only A reads it */
    if (mp.has_c && mb[2].buffer == hbuf) return WGT_OK;
    uint32_t max_bind = wgt_gpu_limits(ctx)->max_storage_buffers_per_shader_stage;
    if (max_bind < 5) return WGT_OK;
    size_t cap = 16384, used = 0;
    char *pre = malloc(cap);
    if (!pre) return WGT_OK;
    pre[0] = 0;
    wgt_dtype wdt = (np.pdt & 3) == 1 ? WGT_F16 : (np.pdt & 3) == 2 ? WGT_BF16 : WGT_F32;
    uint32_t eps_bits;
    memcpy(&eps_bits, &np.eps, 4);
    APPEND("const NPRO_K: u32 = %uu;\nconst NPRO_XOFF: u32 = %uu;\nconst NPRO_AOFF: u32 = 0u;\n"
           "const NPRO_EPS: f32 = bitcast<f32>(%uu);\nconst NPRO_WOFF: u32 = %uu;\n"
           "@group(0) @binding(5) var<storage, read> nw: array<u32>;\n",
           np.R, np.off, eps_bits, np.w_off);
    op_wgsl_loader(pre, cap, "ldnw0", "nw", wdt, "f32");
    used = strlen(pre);
    APPEND("fn ldnw(k: u32) -> f32 { return ldnw0(NPRO_WOFF + k); }\n");
    int ok = used < cap && op_wgsl_section(pre, cap, "lib_matmul", "gemv norm prologue");
    char *full = ok ? mn->h.prelude(mn->h.key, pre, 4 | 8, 0) : NULL;
    free(pre);
    if (!full) return WGT_OK;
    wgt_kernel *k;
    wgt_status st = wgt_gpu_kernel(ctx, mn->h.file, full, "main", NULL, 0, &k);
    free(full);
    if (st) return st;
    snprintf(k->name, sizeof k->name, "fused:rms_norm>matmul");
    wgt_binding b[5] = {nb[0], mb[1], mb[2], mb[3], nb[2]};
    if (!mp.has_c) b[2] = nb[0]; /* C's placeholder: A's binding, now the norm's input */
    uint8_t p[WGT_UNIFORM_SLOT];
    memcpy(p, mp_, sizeof p);
    if ((st = wgt_gpu_graph_replace(g, i, i + 1, k, p, sizeof p, b, 5, mgrid[0], mgrid[1], mgrid[2]))) return st;
    *done = 1;
    if (wgt_gpu_debug(ctx)) fprintf(stderr, "wgt: graph: fused dispatches %d..%d (rms_norm into matmul)\n", i, i + 1);
    return WGT_OK;
}

wgt_status ew_fuse_graph(wgt_context *ctx, wgt_gpu_graph *g)
{
    run r;
    r.n = 0, r.first = 0;
    int saved = 0, n = wgt_gpu_graph_n_cmds(g);
    wgt_status st = mm_merge_graph(ctx, g); /* first: a merged product is no host of an epilogue */
    if (!st && fr_route_on()) st = fr_route_graph(ctx, g); /* then the decoder's fused kernels */
    for (int i = 0; i + 1 < n && !st && norm_products_on(); i++) {
        int done;
        st = fuse_norm_product(ctx, g, i, &done);
        saved += done;
    }
    for (int i = 0; i <= n && !st; i++) {
        const ew_note *note = i < n ? wgt_gpu_graph_note(g, i, EW_NOTE) : NULL;
        if (note && !stage_ok(ctx, note)) note = NULL;
        if (note && r.n && r.first + r.n == i && joins(&r, note)) {
            r.st[r.n++] = note;
            continue;
        }
        const ew_host_note *hn = i < n && !note && !hosts_off() ? wgt_gpu_graph_note(g, i, EW_HOST_NOTE) : NULL;
        if (hn && hn->mm && !matmul_epilogue((const mm_note *)hn)) hn = NULL;
        if (hn) {
            int next;
            st = fuse_at_host(ctx, g, &r, i, hn, &saved, &next);
            r.n = 0;
            i = next;
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
