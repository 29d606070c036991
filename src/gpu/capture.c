/* Graph capture and replay at the level of the command stream (notes/GRAPH.md).
 *
 * While a capture is open, wgt_gpu_dispatch / _copy / _fill_zero / _upload record what they
 * encode (after encoding it: the captured work also runs once, eagerly). A command names
 * wgt_buffers, which the graph pins: a buffer released while pinned is parked by the pool instead
 * of being handed out again, so the graph's buffers keep their meaning for as long as it lives.
 * Each dispatch's uniform bytes go to a slot of the graph's own uniform buffer and each upload's
 * bytes to the graph's constant buffer (replayed as a copy from it); both are written once, at
 * the end of the capture, together with one bind group per distinct (kernel, bindings).
 * A replay is then one command encoder, a walk over the list, one submit: no bind group, no
 * buffer and no host allocation. Graph scalars patch fields of the uniform slots (declared by
 * the ops through wgt_gpu_param_scalar) before the submit.
 *
 * Segments: a download during the capture (an op that needs the host mid-graph: a data-dependent
 * shape, a count, a CPU-reference fallback) runs as usual and is recorded as a read, with the
 * bytes it got. What the host then did with them (a shape, an upload) is baked into the commands
 * that follow, which is right exactly when a replay reads the same bytes there. So a replay runs
 * the commands up to each read, submits, reads the bytes again into the graph's own read buffer
 * and compares: equal, it goes on with the next segment; different, it stops with
 * WGT_ERR_STALE naming the read (the caller captures again: wgt_graph_cache does). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"

#define MAX_SCALARS 16
#define MAX_PENDING 8

/* CMD_NONE: a command a rewrite (fusion) removed; a replay skips it. CMD_READ: a segment's end
 * (src, src_offset, bytes: what was read; dst_offset: where the bytes read at capture are in the
 * graph's guard; note: what read them, a string). */
enum { CMD_DISPATCH, CMD_COPY, CMD_CLEAR, CMD_UPLOAD, CMD_NONE, CMD_READ, CMD_KINDS };

typedef struct gcmd {
    int kind;
    /* dispatch */
    const wgt_kernel *kernel;
    int n;
    wgt_binding b[WGT_MAX_BINDINGS]; /* sizes resolved (never 0) */
    uint32_t slot;                   /* uniform slot (kernel->has_uniform) */
    uint32_t gx, gy, gz;
    int group;                       /* index into the graph's bind groups */
    /* copy (src NULL for an upload: src_offset is into the constant buffer), clear */
    wgt_buffer *src, *dst;
    uint64_t src_offset, dst_offset, bytes;
    wgt_dispatch_cost cost; /* what the op declared (wgt_gpu_cost), for the profiler */
    /* what the op layer said about the dispatch (wgt_gpu_capture_note): owned, or NULL */
    void *note;
    int note_kind;
} gcmd;

/* A uniform field patched from a scalar: field = kind(mul * scalar + add), or fn(scalar, args)
 * when fn is set. */
typedef struct gfield {
    uint32_t slot, offset;
    wgt_param_kind kind;
    int scalar;
    int64_t mul, add;
    wgt_param_fn fn;
    double args[WGT_PARAM_FN_ARGS];
} gfield;

typedef struct pending_field {
    uint32_t offset;
    wgt_param_kind kind;
    int role;
    int64_t arg, mul, add;
    wgt_param_fn fn;
    double args[WGT_PARAM_FN_ARGS];
} pending_field;

typedef struct gscalar {
    char name[32];
    int role; /* wgt_graph_role */
    int64_t value;
} gscalar;

struct wgt_gpu_graph {
    wgt_context *ctx; /* NULL once the context was freed */
    wgt_gpu_graph *next_live;
    gcmd *cmds;
    int n_cmds, cap_cmds;
    uint8_t *uniforms; /* n_slots * WGT_UNIFORM_SLOT, as recorded, then patched */
    uint32_t n_slots, cap_slots;
    uint8_t *consts;   /* upload bytes, 4-byte aligned pieces */
    uint64_t n_consts, cap_consts;
    gfield *fields;
    int n_fields, cap_fields;
    gscalar scalars[MAX_SCALARS];
    int n_scalars;
    uint32_t dirty_lo, dirty_hi; /* uniform slots patched since the last write (lo > hi: none) */
    wgt_buffer **pins;
    int n_pins, cap_pins;
    wgt_buffer **held; /* pinned through wgt_gpu_capture_pin (graph inputs): never private */
    int n_held, cap_held;
    WGPUBuffer uniform_buf, const_buf;
    WGPUBindGroup *groups;
    int n_groups;
    int counts[CMD_KINDS]; /* commands per kind */
    uint8_t *guard;        /* the bytes each read got at capture */
    uint64_t n_guard, cap_guard;
    uint64_t max_read;     /* the largest read, in whole words */
    WGPUBuffer read_buf;   /* where a replay reads them again (made at the end of the capture) */
    uint8_t *read_host;    /* what it read */
    int replaced;  /* dispatches made by wgt_gpu_graph_replace */
    uint64_t serial;          /* its capture's */
    uint64_t unplanned_bytes; /* pinned bytes before memory planning */
    int planned;              /* buffers memory planning gave back */
};

struct wgt_capture {
    wgt_gpu_graph *g;
    void *owner;
    uint64_t serial;
    wgt_status failed; /* the first failure (the capture then records nothing more) */
    char message[512];
    pending_field pending[MAX_PENDING];
    int n_pending;
};

static int grow(void **p, int *cap, int need, size_t elem)
{
    if (need <= *cap) return 1;
    int c = *cap ? *cap * 2 : 64;
    while (c < need) c *= 2;
    void *q = realloc(*p, (size_t)c * elem);
    if (!q) return 0;
    *p = q;
    *cap = c;
    return 1;
}

/* Latch the capture's first failure; later recording is skipped. */
static void capture_fail(wgt_context *ctx, wgt_status st, const char *what)
{
    wgt_capture *c = ctx->capture;
    if (c->failed) return;
    c->failed = st;
    snprintf(c->message, sizeof c->message, "%s", what);
    if (ctx->debug) fprintf(stderr, "wgt: graph capture: %s\n", what);
}

int wgt_gpu_capturing(const wgt_context *ctx) { return ctx && ctx->capture != NULL; }

void *wgt_gpu_capture_owner(const wgt_context *ctx) { return ctx && ctx->capture ? ctx->capture->owner : NULL; }

wgt_context *wgt_gpu_graph_context(const wgt_gpu_graph *g) { return g ? g->ctx : NULL; }

wgt_status wgt_gpu_capture_begin(wgt_context *ctx, void *owner)
{
    wgt_status st = wgt_ctx_check(ctx);
    if (st) return st;
    if (ctx->cpu)
        return wgt_ctx_error(ctx, WGT_ERR_UNSUPPORTED,
                             "graph capture needs a WebGPU device: this context runs the CPU reference");
    if (ctx->capture)
        return wgt_ctx_error(ctx, WGT_ERR_MISUSE, "a graph capture is already open on this context (end it first)");
    wgt_capture *c = calloc(1, sizeof *c);
    wgt_gpu_graph *g = calloc(1, sizeof *g);
    if (!c || !g) {
        free(c), free(g);
        return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory for a graph capture");
    }
    g->ctx = ctx;
    g->dirty_lo = 1, g->dirty_hi = 0;
    c->g = g;
    c->owner = owner;
    c->serial = ++ctx->capture_serial;
    g->serial = c->serial;
    ctx->capture = c;
    if (ctx->debug) fprintf(stderr, "wgt: graph capture begins\n");
    return WGT_OK;
}

static int pin(wgt_context *ctx, wgt_buffer *b)
{
    wgt_capture *c = ctx->capture;
    wgt_gpu_graph *g = c->g;
    if (b->graph_stamp == c->serial) return 1;
    if (!grow((void **)&g->pins, &g->cap_pins, g->n_pins + 1, sizeof *g->pins))
        return 0;
    g->pins[g->n_pins++] = b;
    b->graph_pins++;
    b->graph_stamp = c->serial;
    return 1;
}

wgt_status wgt_gpu_capture_pin(wgt_context *ctx, wgt_buffer *buf)
{
    if (!ctx->capture) return wgt_ctx_error(ctx, WGT_ERR_MISUSE, "no graph capture is open");
    wgt_gpu_graph *g = ctx->capture->g;
    if (!pin(ctx, buf) || !grow((void **)&g->held, &g->cap_held, g->n_held + 1, sizeof *g->held))
        return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory for a graph capture");
    g->held[g->n_held++] = buf;
    return WGT_OK;
}

wgt_status wgt_gpu_capture_scalar(wgt_context *ctx, const char *name, int role, int64_t value, int *index)
{
    wgt_capture *c = ctx->capture;
    if (!c) return wgt_ctx_error(ctx, WGT_ERR_MISUSE, "graph scalar '%s': no graph capture is open", name);
    wgt_gpu_graph *g = c->g;
    if (g->n_scalars == MAX_SCALARS)
        return wgt_ctx_error(ctx, WGT_ERR_LIMIT, "graph scalar '%s': a graph has at most %d scalars", name,
                             MAX_SCALARS);
    for (int i = 0; i < g->n_scalars; i++) {
        if (!strcmp(g->scalars[i].name, name))
            return wgt_ctx_error(ctx, WGT_ERR_INVALID_ARGUMENT, "graph scalar '%s' is declared twice", name);
        if (g->scalars[i].role == role && g->scalars[i].value == value)
            return wgt_ctx_error(ctx, WGT_ERR_INVALID_ARGUMENT,
                                 "graph scalar '%s' has the value %lld that scalar '%s' of the same role already has: "
                                 "ops find their scalar by role and value, so capture with distinct values", name,
                                 (long long)value, g->scalars[i].name);
    }
    if (strlen(name) >= sizeof g->scalars[0].name)
        return wgt_ctx_error(ctx, WGT_ERR_INVALID_ARGUMENT, "graph scalar '%s': the name is longer than %d bytes",
                             name, (int)sizeof g->scalars[0].name - 1);
    snprintf(g->scalars[g->n_scalars].name, sizeof g->scalars[0].name, "%s", name);
    g->scalars[g->n_scalars].value = value;
    g->scalars[g->n_scalars].role = role;
    *index = g->n_scalars++;
    return WGT_OK;
}

int wgt_gpu_capture_ties(const wgt_context *ctx, wgt_graph_role role, int64_t arg)
{
    const wgt_capture *c = ctx->capture;
    if (!c) return 0;
    for (int i = 0; i < c->g->n_scalars; i++)
        if (c->g->scalars[i].role == (int)role && c->g->scalars[i].value == arg) return 1;
    return 0;
}

void wgt_gpu_param_scalar(wgt_context *ctx, uint32_t offset, wgt_param_kind kind, wgt_graph_role role, int64_t arg,
                          int64_t mul, int64_t add)
{
    wgt_capture *c = ctx->capture;
    if (!c) return;
    if (c->n_pending == MAX_PENDING) {
        capture_fail(ctx, WGT_ERR_INTERNAL, "more than 8 scalar fields declared for one dispatch");
        return;
    }
    c->pending[c->n_pending++] = (pending_field){offset, kind, (int)role, arg, mul, add, NULL, {0}};
}

void wgt_gpu_param_scalar_fn(wgt_context *ctx, uint32_t offset, wgt_graph_role role, int64_t arg, wgt_param_fn fn,
                             const double args[WGT_PARAM_FN_ARGS])
{
    wgt_capture *c = ctx->capture;
    if (!c) return;
    if (c->n_pending == MAX_PENDING) {
        capture_fail(ctx, WGT_ERR_INTERNAL, "more than 8 scalar fields declared for one dispatch");
        return;
    }
    pending_field *p = &c->pending[c->n_pending++];
    *p = (pending_field){offset, WGT_PARAM_U32, (int)role, arg, 1, 0, fn, {0}};
    memcpy(p->args, args, sizeof p->args);
}


static void field_bytes(wgt_param_kind kind, int64_t v, uint8_t out[4])
{
    uint32_t u;
    float f;
    switch (kind) {
    case WGT_PARAM_U32_HI: u = (uint32_t)((uint64_t)v >> 32); break;
    case WGT_PARAM_I32: u = (uint32_t)(int32_t)v; break;
    case WGT_PARAM_F32:
        f = (float)v;
        memcpy(&u, &f, 4);
        break;
    default: u = (uint32_t)v; break;
    }
    memcpy(out, &u, 4);
}

/* the field's 4 bytes for scalar value v */
static void field_value(wgt_param_kind kind, wgt_param_fn fn, const double *args, int64_t mul, int64_t add, int64_t v,
                        uint8_t out[4])
{
    if (fn) {
        uint32_t u = fn(v, args);
        memcpy(out, &u, 4);
    } else field_bytes(kind, mul * v + add, out);
}

static gcmd *new_cmd(wgt_context *ctx, int kind)
{
    wgt_gpu_graph *g = ctx->capture->g;
    if (!grow((void **)&g->cmds, &g->cap_cmds, g->n_cmds + 1, sizeof *g->cmds)) {
        capture_fail(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory recording a graph");
        return NULL;
    }
    gcmd *cmd = &g->cmds[g->n_cmds++];
    memset(cmd, 0, sizeof *cmd);
    cmd->kind = kind;
    g->counts[kind]++;
    return cmd;
}

/* The dispatch's scalar fields: each pending declaration bound to the scalar of its value. */
static void bind_fields(wgt_context *ctx, const wgt_kernel *k, uint32_t slot, const uint8_t *bytes,
                        uint32_t params_size)
{
    wgt_capture *c = ctx->capture;
    wgt_gpu_graph *g = c->g;
    for (int i = 0; i < c->n_pending; i++) {
        pending_field *p = &c->pending[i];
        int s = -1;
        for (int j = 0; j < g->n_scalars; j++)
            if (g->scalars[j].role == p->role && g->scalars[j].value == p->arg) s = j;
        if (s < 0) continue; /* not a graph scalar: a constant like any other */
        uint8_t want[4];
        field_value(p->kind, p->fn, p->args, p->mul, p->add, p->arg, want);
        char msg[256];
        if (!k->has_uniform || p->offset % 4 || p->offset + 4 > params_size || memcmp(bytes + p->offset, want, 4)) {
            snprintf(msg, sizeof msg, "kernel '%s': the scalar field declared at byte %u does not hold the value "
                     "declared for it (a wrong offset in the op)", k->name, p->offset);
            capture_fail(ctx, WGT_ERR_INTERNAL, msg);
            break;
        }
        if (!grow((void **)&g->fields, &g->cap_fields, g->n_fields + 1, sizeof *g->fields)) {
            capture_fail(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory recording a graph");
            break;
        }
        gfield *f = &g->fields[g->n_fields++];
        *f = (gfield){slot, p->offset, p->kind, s, p->mul, p->add, p->fn, {0}};
        memcpy(f->args, p->args, sizeof f->args);
        if (ctx->debug)
            fprintf(stderr, "wgt: graph: dispatch %d (%s) byte %u = %lld * %s + %lld\n", g->n_cmds - 1, k->name,
                    p->offset, (long long)p->mul, g->scalars[s].name, (long long)p->add);
    }
    c->n_pending = 0;
}

void wgt_capture_dispatch(wgt_context *ctx, const wgt_kernel *k, const void *params, uint32_t params_size,
                          const wgt_binding *bs, int n, uint32_t gx, uint32_t gy, uint32_t gz);
void wgt_capture_dispatch(wgt_context *ctx, const wgt_kernel *k, const void *params, uint32_t params_size,
                          const wgt_binding *bs, int n, uint32_t gx, uint32_t gy, uint32_t gz)
{
    wgt_capture *c = ctx->capture;
    wgt_gpu_graph *g = c->g;
    if (c->failed) {
        c->n_pending = 0;
        return;
    }
    if (!gx || !gy || !gz) { /* nothing runs: nothing to replay */
        c->n_pending = 0;
        return;
    }
    gcmd *cmd = new_cmd(ctx, CMD_DISPATCH);
    if (!cmd) return;
    cmd->cost = ctx->next_cost;
    cmd->kernel = k;
    cmd->n = n;
    cmd->gx = gx, cmd->gy = gy, cmd->gz = gz;
    for (int i = 0; i < n; i++) {
        cmd->b[i] = bs[i];
        if (!cmd->b[i].size) cmd->b[i].size = bs[i].buffer->size - bs[i].offset;
        if (!pin(ctx, bs[i].buffer)) {
            capture_fail(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory recording a graph");
            return;
        }
    }
    if (k->has_uniform) {
        if (g->n_slots == g->cap_slots) {
            uint32_t cap = g->cap_slots ? g->cap_slots * 2 : 64;
            uint8_t *u = realloc(g->uniforms, (size_t)cap * WGT_UNIFORM_SLOT);
            if (!u) {
                capture_fail(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory recording a graph");
                return;
            }
            g->uniforms = u;
            g->cap_slots = cap;
        }
        cmd->slot = g->n_slots++;
        uint8_t *slot = g->uniforms + (size_t)cmd->slot * WGT_UNIFORM_SLOT;
        memset(slot, 0, WGT_UNIFORM_SLOT);
        if (params_size) memcpy(slot, params, params_size);
        bind_fields(ctx, k, cmd->slot, slot, params_size);
    } else if (c->n_pending) {
        capture_fail(ctx, WGT_ERR_INTERNAL, "a scalar field was declared for a kernel without parameters");
    }
}

void wgt_capture_copy(wgt_context *ctx, int clear, wgt_buffer *src, uint64_t so, wgt_buffer *dst, uint64_t dso,
                      uint64_t bytes);
void wgt_capture_copy(wgt_context *ctx, int clear, wgt_buffer *src, uint64_t so, wgt_buffer *dst, uint64_t dso,
                      uint64_t bytes)
{
    if (ctx->capture->failed || !bytes) return;
    gcmd *cmd = new_cmd(ctx, clear ? CMD_CLEAR : CMD_COPY);
    if (!cmd) return;
    cmd->src = src, cmd->dst = dst;
    cmd->src_offset = so, cmd->dst_offset = dso, cmd->bytes = bytes;
    if ((src && !pin(ctx, src)) || !pin(ctx, dst))
        capture_fail(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory recording a graph");
}

/* Room for bytes more in a host byte store of *n used, *cap allocated (doubling from first). */
static int room(uint8_t **p, uint64_t *cap, uint64_t n, uint64_t bytes, uint64_t first)
{
    if (n + bytes <= *cap) return 1;
    uint64_t c = *cap ? *cap * 2 : first;
    while (c < n + bytes) c *= 2;
    uint8_t *q = realloc(*p, c);
    if (!q) return 0;
    *p = q;
    *cap = c;
    return 1;
}

void wgt_capture_upload(wgt_context *ctx, wgt_buffer *dst, uint64_t offset, const void *data, uint64_t bytes);
void wgt_capture_upload(wgt_context *ctx, wgt_buffer *dst, uint64_t offset, const void *data, uint64_t bytes)
{
    wgt_gpu_graph *g = ctx->capture->g;
    if (ctx->capture->failed || !bytes) return;
    if (!room(&g->consts, &g->cap_consts, g->n_consts, bytes, 4096)) {
        capture_fail(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory recording a graph's constants");
        return;
    }
    gcmd *cmd = new_cmd(ctx, CMD_UPLOAD);
    if (!cmd) return;
    memcpy(g->consts + g->n_consts, data, bytes); /* bytes is a multiple of 4 (check_range) */
    cmd->dst = dst;
    cmd->src_offset = g->n_consts, cmd->dst_offset = offset, cmd->bytes = bytes;
    g->n_consts += bytes;
    if (!pin(ctx, dst)) capture_fail(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory recording a graph");
}

void wgt_capture_read(wgt_context *ctx, const char *what, wgt_buffer *src, uint64_t offset, const void *data,
                      uint64_t bytes);
void wgt_capture_read(wgt_context *ctx, const char *what, wgt_buffer *src, uint64_t offset, const void *data,
                      uint64_t bytes)
{
    wgt_gpu_graph *g = ctx->capture->g;
    if (ctx->capture->failed || !bytes) return;
    if (!room(&g->guard, &g->cap_guard, g->n_guard, bytes, 256)) {
        capture_fail(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory recording a graph's reads");
        return;
    }
    /* named by the kernel that made what is read, when a dispatch did */
    const char *after = NULL;
    for (int i = g->n_cmds - 1; i >= 0 && !after; i--)
        if (g->cmds[i].kind == CMD_DISPATCH) after = g->cmds[i].kernel->name;
    char text[160];
    snprintf(text, sizeof text, "%s%s%s%s", what, after ? " (after kernel '" : "", after ? after : "", after ? "')" : "");
    size_t wl = strlen(text) + 1;
    char *label = malloc(wl);
    gcmd *cmd = label ? new_cmd(ctx, CMD_READ) : NULL;
    if (!cmd) {
        free(label);
        capture_fail(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory recording a graph");
        return;
    }
    memcpy(label, text, wl);
    memcpy(g->guard + g->n_guard, data, bytes);
    cmd->src = src;
    cmd->src_offset = offset, cmd->bytes = bytes, cmd->dst_offset = g->n_guard;
    cmd->note = label;
    g->n_guard += bytes;
    uint64_t words = ((offset + bytes + 3) & ~3ull) - (offset & ~3ull);
    if (words > g->max_read) g->max_read = words;
    if (!pin(ctx, src)) capture_fail(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory recording a graph");
    if (ctx->debug)
        fprintf(stderr, "wgt: graph: segment %d ends at command %d: %s of %llu bytes (the host mid-graph: a replay "
                "reads them again and goes on only if they are the same)\n", g->counts[CMD_READ], g->n_cmds - 1,
                label, (unsigned long long)bytes);
}

wgt_status wgt_capture_refuse_host(wgt_context *ctx, const char *what, uint64_t bytes);
wgt_status wgt_capture_refuse_host(wgt_context *ctx, const char *what, uint64_t bytes)
{
    char msg[300];
    snprintf(msg, sizeof msg,
             "%s of %llu bytes during graph capture: a split readback cannot end a graph segment (a download "
             "can); end the capture before it", what, (unsigned long long)bytes);
    capture_fail(ctx, WGT_ERR_UNSUPPORTED, msg);
    return wgt_ctx_error(ctx, WGT_ERR_UNSUPPORTED, "%s", msg);
}

/* ---- what the op layer adds: notes on dispatches, and rewrites at the end (fusion) ---------- */

int wgt_gpu_capture_mark(const wgt_context *ctx)
{
    return ctx->capture && !ctx->capture->failed ? ctx->capture->g->n_cmds : -1;
}

void wgt_gpu_capture_note(wgt_context *ctx, int mark, int kind, const void *note, size_t bytes)
{
    wgt_capture *c = ctx->capture;
    if (!c || c->failed || mark < 0) return;
    wgt_gpu_graph *g = c->g;
    /* only an op that made exactly one dispatch: its note describes that dispatch */
    if (g->n_cmds != mark + 1 || g->cmds[mark].kind != CMD_DISPATCH || g->cmds[mark].note) return;
    void *copy = malloc(bytes);
    if (!copy) return; /* a note is an optimisation: without it the dispatch is not fused */
    memcpy(copy, note, bytes);
    g->cmds[mark].note = copy;
    g->cmds[mark].note_kind = kind;
}

int wgt_gpu_graph_n_cmds(const wgt_gpu_graph *g) { return g->n_cmds; }

const void *wgt_gpu_graph_note(const wgt_gpu_graph *g, int i, int kind)
{
    if (i < 0 || i >= g->n_cmds || g->cmds[i].kind != CMD_DISPATCH || g->cmds[i].note_kind != kind) return NULL;
    return g->cmds[i].note;
}

const wgt_binding *wgt_gpu_graph_dispatch(const wgt_gpu_graph *g, int i, int *n, const uint8_t **params,
                                         uint32_t grid[3], int *patched, const wgt_kernel **kernel)
{
    if (i < 0 || i >= g->n_cmds || g->cmds[i].kind != CMD_DISPATCH || !g->cmds[i].kernel->has_uniform) return NULL;
    const gcmd *c = &g->cmds[i];
    *n = c->n;
    *params = g->uniforms + (size_t)c->slot * WGT_UNIFORM_SLOT;
    grid[0] = c->gx, grid[1] = c->gy, grid[2] = c->gz;
    *patched = 0;
    *kernel = c->kernel;
    for (int f = 0; f < g->n_fields; f++)
        if (g->fields[f].slot == c->slot) *patched = 1;
    return c->b;
}

int wgt_gpu_graph_buffer_private(const wgt_gpu_graph *g, const wgt_buffer *b, int first, int last)
{
    if (!b->parked) return 0; /* someone still holds a tensor on it (an output of the graph) */
    for (int i = 0; i < g->n_held; i++)
        if (g->held[i] == b) return 0;
    for (int i = 0; i < g->n_cmds; i++) {
        if (i >= first && i <= last) continue;
        const gcmd *c = &g->cmds[i];
        if (c->kind == CMD_DISPATCH) {
            for (int k = 0; k < c->n; k++)
                if (c->b[k].buffer == b) return 0;
        } else if (c->kind != CMD_NONE && (c->src == b || c->dst == b))
            return 0;
    }
    return 1;
}

/* Replace dispatches cmds[0..n_cmds) (ascending) by one, placed at the last of them. */
static wgt_status replace_list(wgt_gpu_graph *g, const int *cmds, int n_cmds, const wgt_kernel *k, const void *params,
                               uint32_t params_size, const wgt_binding *bs, int n, uint32_t gx, uint32_t gy,
                               uint32_t gz, const uint32_t (*moves)[2], int n_moves)
{
    wgt_context *ctx = g->ctx;
    if (n_cmds < 1 || n > WGT_MAX_BINDINGS || params_size > WGT_UNIFORM_SLOT)
        return wgt_ctx_error(ctx, WGT_ERR_INTERNAL, "graph rewrite: bad command range or bindings");
    for (int q = 0; q < n_cmds; q++) {
        int i = cmds[q];
        if (i < 0 || i >= g->n_cmds || (q && i <= cmds[q - 1]))
            return wgt_ctx_error(ctx, WGT_ERR_INTERNAL, "graph rewrite: bad command range or bindings");
        if (g->cmds[i].kind != CMD_DISPATCH || !g->cmds[i].kernel->has_uniform)
            return wgt_ctx_error(ctx, WGT_ERR_INTERNAL, "graph rewrite: command %d is not a dispatch with parameters", i);
        for (int f = 0; f < g->n_fields; f++) { /* a patched field would lose its dispatch */
            if (g->fields[f].slot != g->cmds[i].slot) continue;
            int moved = q == n_cmds - 1; /* the last keeps its slot: its fields move within it */
            for (int m = 0; moved && m < n_moves && moved < 2; m++)
                if (moves[m][0] == g->fields[f].offset) moved = 2;
            if (moved < 2)
                return wgt_ctx_error(ctx, WGT_ERR_INTERNAL, "graph rewrite: command %d has a scalar field", i);
        }
    }
    if (!k->has_uniform) return wgt_ctx_error(ctx, WGT_ERR_INTERNAL, "graph rewrite: a kernel without parameters");
    for (int q = 0; q < n_cmds - 1; q++) { /* their buffers stay pinned: freed with the graph */
        g->cmds[cmds[q]].kind = CMD_NONE;
        g->counts[CMD_DISPATCH]--, g->counts[CMD_NONE]++;
    }
    gcmd *c = &g->cmds[cmds[n_cmds - 1]];
    g->replaced++;
    c->cost = (wgt_dispatch_cost){0, 0}; /* the bound ranges stand in */
    c->kernel = k;
    c->n = n;
    c->note_kind = 0; /* its note described the op it was (kept until the graph is freed: a rewrite may hold it) */
    for (int i = 0; i < n; i++) {
        c->b[i] = bs[i];
        if (!c->b[i].size) c->b[i].size = bs[i].buffer->size - bs[i].offset;
    }
    c->gx = gx, c->gy = gy, c->gz = gz;
    uint8_t *slot = g->uniforms + (size_t)c->slot * WGT_UNIFORM_SLOT;
    memset(slot, 0, WGT_UNIFORM_SLOT);
    memcpy(slot, params, params_size);
    for (int f = 0; f < g->n_fields; f++) {
        if (g->fields[f].slot != c->slot) continue;
        for (int m = 0; m < n_moves; m++)
            if (moves[m][0] == g->fields[f].offset) {
                g->fields[f].offset = moves[m][1];
                break;
            }
    }
    return WGT_OK;
}

wgt_status wgt_gpu_graph_replace(wgt_gpu_graph *g, int first, int last, const wgt_kernel *k, const void *params,
                                 uint32_t params_size, const wgt_binding *bs, int n, uint32_t gx, uint32_t gy,
                                 uint32_t gz)
{
    if (first < 0 || last >= g->n_cmds || first > last || last - first >= 4096)
        return wgt_ctx_error(g->ctx, WGT_ERR_INTERNAL, "graph rewrite: bad command range or bindings");
    int cmds[4096];
    for (int i = first; i <= last; i++) cmds[i - first] = i;
    return replace_list(g, cmds, last - first + 1, k, params, params_size, bs, n, gx, gy, gz, NULL, 0);
}

wgt_status wgt_gpu_graph_replace_list(wgt_gpu_graph *g, const int *cmds, int n_cmds, const wgt_kernel *k,
                                      const void *params, uint32_t params_size, const wgt_binding *bs, int n,
                                      uint32_t gx, uint32_t gy, uint32_t gz)
{
    return replace_list(g, cmds, n_cmds, k, params, params_size, bs, n, gx, gy, gz, NULL, 0);
}

wgt_status wgt_gpu_graph_replace_moving(wgt_gpu_graph *g, int first, int last, const wgt_kernel *k, const void *params,
                                        uint32_t params_size, const wgt_binding *bs, int n, uint32_t gx, uint32_t gy,
                                        uint32_t gz, const uint32_t (*moves)[2], int n_moves)
{
    if (first < 0 || last >= g->n_cmds || first > last || last - first >= 64)
        return wgt_ctx_error(g->ctx, WGT_ERR_INTERNAL, "graph rewrite: bad command range or bindings");
    int cmds[64];
    for (int i = first; i <= last; i++) cmds[i - first] = i;
    return replace_list(g, cmds, last - first + 1, k, params, params_size, bs, n, gx, gy, gz, moves, n_moves);
}

int wgt_gpu_graph_touches(const wgt_gpu_graph *g, int i, const wgt_buffer *b)
{
    if (i < 0 || i >= g->n_cmds) return 0;
    const gcmd *c = &g->cmds[i];
    int r = 0;
    switch (c->kind) {
    case CMD_DISPATCH:
        for (int k = 0; k < c->n; k++)
            if (c->b[k].buffer == b) r |= (c->kernel->readonly_mask >> k & 1) ? 1 : 3;
        return r;
    case CMD_COPY: return (c->src == b ? 1 : 0) | (c->dst == b ? 3 : 0);
    case CMD_CLEAR: case CMD_UPLOAD: return c->dst == b ? 3 : 0;
    case CMD_READ: return c->src == b ? 1 : 0;
    default: return 0;
    }
}

/* ---- the end: device objects made once ------------------------------------------------------ */

static void graph_release_device(wgt_gpu_graph *g)
{
    for (int i = 0; i < g->n_groups; i++)
        if (g->groups[i]) wgt_W.BindGroupRelease(g->groups[i]);
    free(g->groups);
    g->groups = NULL;
    g->n_groups = 0;
    if (g->uniform_buf) {
        wgt_W.BufferDestroy(g->uniform_buf);
        wgt_W.BufferRelease(g->uniform_buf);
        g->uniform_buf = NULL;
    }
    if (g->const_buf) {
        wgt_W.BufferDestroy(g->const_buf);
        wgt_W.BufferRelease(g->const_buf);
        g->const_buf = NULL;
    }
    if (g->read_buf) {
        wgt_W.BufferDestroy(g->read_buf);
        wgt_W.BufferRelease(g->read_buf);
        g->read_buf = NULL;
    }
    if (g->ctx)
        for (int i = 0; i < g->n_pins; i++) wgt_gpu_unpin(g->ctx, g->pins[i]);
    g->n_pins = 0;
}

static void graph_free_host(wgt_gpu_graph *g)
{
    for (int i = 0; i < g->n_cmds; i++) free(g->cmds[i].note);
    free(g->held);
    free(g->cmds);
    free(g->uniforms);
    free(g->consts);
    free(g->guard);
    free(g->read_host);
    free(g->fields);
    free(g->pins);
    free(g);
}

static WGPUBuffer make_buf(wgt_context *ctx, uint64_t size, WGPUBufferUsage usage, const char *label)
{
    WGPUBufferDescriptor d = {0};
    d.label = (WGPUStringView){label, strlen(label)};
    d.usage = usage;
    d.size = (size + 3) & ~3ull;
    return wgt_W.DeviceCreateBuffer(ctx->device, &d);
}

static int same_bindings(const gcmd *a, const gcmd *b)
{
    if (a->kernel != b->kernel || a->n != b->n) return 0;
    for (int i = 0; i < a->n; i++)
        if (a->b[i].buffer != b->b[i].buffer || a->b[i].offset != b->b[i].offset || a->b[i].size != b->b[i].size)
            return 0;
    return 1;
}

static uint64_t bind_hash(const gcmd *c)
{
    uint64_t h = (uint64_t)(uintptr_t)c->kernel * 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < c->n; i++) {
        h = (h ^ c->b[i].buffer->id) * 0x100000001b3ull;
        h = (h ^ c->b[i].offset) * 0x100000001b3ull;
        h = (h ^ c->b[i].size) * 0x100000001b3ull;
    }
    return h;
}

/* One bind group per distinct (kernel, bindings), binding 0 being the graph's uniform buffer. */
static wgt_status make_groups(wgt_context *ctx, wgt_gpu_graph *g)
{
    int nd = g->counts[CMD_DISPATCH];
    if (!nd) return WGT_OK;
    int cap = 16;
    while (cap < 2 * nd) cap *= 2;
    int *table = malloc((size_t)cap * sizeof *table); /* command index of each group's first user */
    g->groups = calloc((size_t)nd, sizeof *g->groups);
    if (!table || !g->groups) {
        free(table);
        return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory for a graph's bind groups");
    }
    for (int i = 0; i < cap; i++) table[i] = -1;
    for (int ci = 0; ci < g->n_cmds; ci++) {
        gcmd *c = &g->cmds[ci];
        if (c->kind != CMD_DISPATCH) continue;
        uint64_t h = bind_hash(c);
        int at = (int)(h & (uint64_t)(cap - 1));
        while (table[at] >= 0 && !same_bindings(&g->cmds[table[at]], c)) at = (at + 1) & (cap - 1);
        if (table[at] >= 0) {
            c->group = g->cmds[table[at]].group;
            continue;
        }
        table[at] = ci;
        const wgt_kernel *k = c->kernel;
        WGPUBindGroupEntry entries[WGT_MAX_BINDINGS + 1];
        memset(entries, 0, sizeof entries);
        int ne = 0;
        if (k->has_uniform) {
            entries[0].binding = 0;
            entries[0].buffer = g->uniform_buf;
            entries[0].size = WGT_UNIFORM_SLOT;
            ne++;
        }
        for (int i = 0; i < c->n; i++, ne++) {
            entries[ne].binding = (uint32_t)i + 1;
            entries[ne].buffer = c->b[i].buffer->handle;
            entries[ne].offset = c->b[i].offset;
            entries[ne].size = c->b[i].size;
        }
        WGPUBindGroupDescriptor d = {NULL, {k->name, strlen(k->name)}, k->layout, (size_t)ne, entries};
        c->group = g->n_groups;
        g->groups[g->n_groups] = wgt_W.DeviceCreateBindGroup(ctx->device, &d);
        if (!g->groups[g->n_groups]) {
            free(table);
            return wgt_ctx_error(ctx, WGT_ERR_GPU, "could not create a bind group for kernel '%s' of a graph",
                                 k->name);
        }
        g->n_groups++;
    }
    free(table);
    return WGT_OK;
}

/* ---- memory planning ------------------------------------------------------------------------ */

/* One intermediate: a buffer handed out during the capture and released during it (parked), not
 * an input: nothing outside the graph reads it or wrote what it holds, so only its live range of
 * commands matters. */
typedef struct plan_buf {
    wgt_buffer *b;
    int first, last;  /* commands naming it (first > last: none left, e.g. fused away) */
    uint64_t need;    /* bytes its commands reach */
    int slot;         /* the buffer it runs in: index into the plan's kept ones */
} plan_buf;

static int plan_index(const plan_buf *p, int n, const wgt_buffer *b)
{
    for (int i = 0; i < n; i++)
        if (p[i].b == b) return i;
    return -1;
}

static void plan_use(plan_buf *p, int n, const wgt_buffer *b, int cmd, uint64_t end)
{
    int i = plan_index(p, n, b);
    if (i < 0) return;
    if (p[i].first > p[i].last) p[i].first = cmd;
    p[i].last = cmd;
    if (end > p[i].need) p[i].need = end;
}

static int by_first(const void *a, const void *b)
{
    const plan_buf *x = a, *y = b;
    return (x->first > y->first) - (x->first < y->first);
}

/* Intermediates whose live ranges do not overlap share one buffer (greedy by first use, the
 * smallest free kept buffer that is large enough); the others' pins are dropped, so they go back
 * to the pool (an intermediate no command names any more, fused away, is dropped outright).
 * WGT_GRAPH_PLAN=0: every buffer stays its own. */
static wgt_status plan_memory(wgt_context *ctx, wgt_gpu_graph *g)
{
    for (int i = 0; i < g->n_pins; i++) g->unplanned_bytes += g->pins[i]->size;
    const char *env = getenv("WGT_GRAPH_PLAN");
    if (env && !strcmp(env, "0")) return WGT_OK;
    plan_buf *p = calloc((size_t)(g->n_pins ? g->n_pins : 1), sizeof *p);
    int *slot_last = calloc((size_t)(g->n_pins ? g->n_pins : 1), sizeof *slot_last), n = 0, n_slots = 0;
    wgt_buffer **slot_buf = calloc((size_t)(g->n_pins ? g->n_pins : 1), sizeof *slot_buf);
    if (!p || !slot_last || !slot_buf) {
        free(p), free(slot_last), free(slot_buf);
        return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory planning a graph's buffers");
    }
    for (int i = 0; i < g->n_pins; i++) {
        wgt_buffer *b = g->pins[i];
        int held = 0;
        for (int k = 0; k < g->n_held && !held; k++) held = g->held[k] == b;
        /* pinned by this graph alone: another graph's replay would see the moved bytes */
        if (b->born == g->serial && b->parked && !held && b->graph_pins == 1) p[n++] = (plan_buf){b, 1, 0, 0, -1};
    }
    for (int i = 0; i < g->n_cmds; i++) {
        const gcmd *c = &g->cmds[i];
        if (c->kind == CMD_DISPATCH)
            for (int k = 0; k < c->n; k++) plan_use(p, n, c->b[k].buffer, i, c->b[k].offset + c->b[k].size);
        else if (c->kind != CMD_NONE) {
            if (c->src) plan_use(p, n, c->src, i, c->src_offset + c->bytes);
            if (c->dst) plan_use(p, n, c->dst, i, c->dst_offset + c->bytes);
        }
    }
    qsort(p, (size_t)n, sizeof *p, by_first);
    for (int i = 0; i < n; i++) {
        if (p[i].first > p[i].last) continue; /* unused: dropped below */
        int best = -1;
        for (int s = 0; s < n_slots; s++)
            if (slot_last[s] < p[i].first && slot_buf[s]->size >= p[i].need &&
                (best < 0 || slot_buf[s]->size < slot_buf[best]->size))
                best = s;
        if (best < 0) best = n_slots++, slot_buf[best] = p[i].b;
        slot_last[best] = p[i].last;
        p[i].slot = best;
    }
    /* rebind: every command naming a moved intermediate names its slot's buffer */
    for (int i = 0; i < g->n_cmds; i++) {
        gcmd *c = &g->cmds[i];
        if (c->kind == CMD_DISPATCH) {
            for (int k = 0; k < c->n; k++) {
                int j = plan_index(p, n, c->b[k].buffer);
                if (j >= 0) c->b[k].buffer = slot_buf[p[j].slot];
            }
        } else if (c->kind != CMD_NONE) {
            int j;
            if (c->src && (j = plan_index(p, n, c->src)) >= 0) c->src = slot_buf[p[j].slot];
            if (c->dst && (j = plan_index(p, n, c->dst)) >= 0) c->dst = slot_buf[p[j].slot];
        }
    }
    /* unpin what no command names now */
    int kept = 0;
    for (int i = 0; i < g->n_pins; i++) {
        wgt_buffer *b = g->pins[i];
        int j = plan_index(p, n, b);
        if (j >= 0 && (p[j].slot < 0 || slot_buf[p[j].slot] != b)) {
            wgt_gpu_unpin(ctx, b);
            g->planned++;
        } else
            g->pins[kept++] = b;
    }
    g->n_pins = kept;
    uint64_t after = 0;
    for (int i = 0; i < g->n_pins; i++) after += g->pins[i]->size;
    if (ctx->debug)
        fprintf(stderr, "wgt: graph memory plan: %d intermediates in %d buffers, %d buffers given back; the graph "
                "keeps %llu bytes (%llu before planning)\n", n, n_slots, g->planned, (unsigned long long)after,
                (unsigned long long)g->unplanned_bytes);
    free(p), free(slot_last), free(slot_buf);
    return WGT_OK;
}

wgt_status wgt_gpu_capture_end(wgt_context *ctx, wgt_gpu_rewrite_fn rewrite, wgt_gpu_graph **out)
{
    *out = NULL;
    wgt_capture *c = ctx->capture;
    if (!c) return wgt_ctx_error(ctx, WGT_ERR_MISUSE, "wgt_graph_end: no graph capture is open on this context");
    ctx->capture = NULL;
    wgt_gpu_graph *g = c->g;
    wgt_status st = c->failed ? wgt_ctx_error(ctx, c->failed, "graph capture failed: %s", c->message)
                              : wgt_ctx_check(ctx);
    free(c);
    if (!st && rewrite) st = rewrite(ctx, g);
    if (!st) st = plan_memory(ctx, g);
    if (!st && g->n_slots) {
        g->uniform_buf = make_buf(ctx, (uint64_t)g->n_slots * WGT_UNIFORM_SLOT,
                                  WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst, "wgt graph uniforms");
        if (!g->uniform_buf)
            st = wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "could not create a graph's uniform buffer");
        else
            wgt_W.QueueWriteBuffer(ctx->queue, g->uniform_buf, 0, g->uniforms, (size_t)g->n_slots * WGT_UNIFORM_SLOT);
    }
    if (!st && g->n_consts) {
        g->const_buf = make_buf(ctx, g->n_consts, WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst,
                                "wgt graph constants");
        if (!g->const_buf)
            st = wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "could not create a graph's constant buffer");
        else
            wgt_W.QueueWriteBuffer(ctx->queue, g->const_buf, 0, g->consts, (size_t)g->n_consts);
    }
    if (!st && g->max_read) {
        g->read_buf = make_buf(ctx, g->max_read, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst,
                               "wgt graph reads");
        g->read_host = malloc(g->max_read);
        if (!g->read_buf || !g->read_host)
            st = wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "could not create a graph's read buffer");
    }
    if (!st) st = make_groups(ctx, g);
    if (!st) st = wgt_ctx_check(ctx);
    if (st) {
        graph_release_device(g);
        graph_free_host(g);
        return st;
    }
    /* the host copy of the constants is on the device now; the uniforms stay for patching */
    free(g->consts);
    g->consts = NULL;
    g->next_live = ctx->graphs;
    ctx->graphs = g;
    if (ctx->debug)
        fprintf(stderr, "wgt: graph captured: %d dispatches (%d fused, %d removed), %d copies, %d clears, %d uploads, "
                "%d bind groups, %d buffers pinned, %d scalar fields, %d segments\n", g->counts[CMD_DISPATCH],
                g->replaced, g->counts[CMD_NONE], g->counts[CMD_COPY], g->counts[CMD_CLEAR], g->counts[CMD_UPLOAD],
                g->n_groups, g->n_pins, g->n_fields, g->counts[CMD_READ] + 1);
    *out = g;
    return WGT_OK;
}

/* ---- replay --------------------------------------------------------------------------------- */

wgt_status wgt_gpu_graph_set_scalar(wgt_gpu_graph *g, int index, int64_t value)
{
    if (!g->ctx) return wgt_error(WGT_ERR_MISUSE, "wgt_graph_set_scalar: the graph's context was freed");
    if (index < 0 || index >= g->n_scalars)
        return wgt_ctx_error(g->ctx, WGT_ERR_INVALID_ARGUMENT, "graph scalar %d: the graph has %d scalars", index,
                             g->n_scalars);
    g->scalars[index].value = value;
    for (int i = 0; i < g->n_fields; i++) {
        const gfield *f = &g->fields[i];
        if (f->scalar != index) continue;
        field_value(f->kind, f->fn, f->args, f->mul, f->add, value,
                    g->uniforms + (size_t)f->slot * WGT_UNIFORM_SLOT + f->offset);
        if (g->dirty_lo > g->dirty_hi) g->dirty_lo = g->dirty_hi = f->slot;
        else if (f->slot < g->dirty_lo) g->dirty_lo = f->slot;
        else if (f->slot > g->dirty_hi) g->dirty_hi = f->slot;
    }
    return WGT_OK;
}

int wgt_gpu_graph_scalars(const wgt_gpu_graph *g) { return g ? g->n_scalars : 0; }

const char *wgt_gpu_graph_scalar(const wgt_gpu_graph *g, int index, int64_t *value)
{
    if (!g || index < 0 || index >= g->n_scalars) return NULL;
    if (value) *value = g->scalars[index].value;
    return g->scalars[index].name;
}

/* The encoder a replay's segment records into: the context's when it has one (eager work recorded
 * before the replay goes first) or when the commands stay unsubmitted or are profiled (the
 * context's flush resolves the time stamps), else one of its own. */
static WGPUCommandEncoder seg_encoder(wgt_context *ctx, int submit, int prof)
{
    if (ctx->encoder) {
        wgt_gpu_end_pass(ctx);
        return ctx->encoder;
    }
    if (submit && !prof) return wgt_W.DeviceCreateCommandEncoder(ctx->device, NULL);
    return ctx->encoder = wgt_W.DeviceCreateCommandEncoder(ctx->device, NULL);
}

static wgt_status seg_submit(wgt_context *ctx, WGPUCommandEncoder enc)
{
    if (enc == ctx->encoder) return wgt_gpu_flush(ctx);
    WGPUCommandBuffer cb = wgt_W.CommandEncoderFinish(enc, NULL);
    wgt_W.CommandEncoderRelease(enc);
    wgt_W.QueueSubmit(ctx->queue, 1, &cb);
    wgt_W.CommandBufferRelease(cb);
    ctx->stats.submits++;
    return wgt_ctx_check(ctx);
}

static void end_pass(wgt_context *ctx, WGPUComputePassEncoder *pass)
{
    if (!*pass) return;
    wgt_prof_pass_end(ctx);
    wgt_W.ComputePassEncoderEnd(*pass);
    wgt_W.ComputePassEncoderRelease(*pass);
    *pass = NULL;
}

/* A segment's end: the bytes read at capture read again (after submitting what came before);
 * WGT_ERR_STALE when they differ. */
static wgt_status seg_read(wgt_gpu_graph *g, WGPUCommandEncoder enc, const gcmd *c, int segment)
{
    wgt_context *ctx = g->ctx;
    uint64_t start = c->src_offset & ~3ull, end = (c->src_offset + c->bytes + 3) & ~3ull;
    wgt_W.CommandEncoderCopyBufferToBuffer(enc, c->src->handle, start, g->read_buf, 0, end - start);
    wgt_status st = seg_submit(ctx, enc);
    if (!st) st = wgt_gpu_map_copy(ctx, g->read_buf, end - start, c->src_offset - start, g->read_host, c->bytes,
                                   "a graph's read buffer");
    if (st) return st;
    const uint8_t *want = g->guard + c->dst_offset;
    if (!memcmp(g->read_host, want, c->bytes)) return WGT_OK;
    uint64_t at = 0;
    while (g->read_host[at] == want[at]) at++;
    return wgt_ctx_error(ctx, WGT_ERR_STALE,
                         "wgt_graph_replay: segment %d ends at %s of %llu bytes, which got other bytes than at "
                         "capture (first at byte %llu: 0x%02x, was 0x%02x); what the host made of them is baked "
                         "into the rest of the graph, so the replay stopped there: capture again (wgt_graph_cache "
                         "does)", segment, (const char *)c->note, (unsigned long long)c->bytes, (unsigned long long)at,
                         g->read_host[at], want[at]);
}

wgt_status wgt_gpu_graph_replay(wgt_gpu_graph *g, const wgt_gpu_copy_cmd *pre, int n_pre, int submit)
{
    wgt_context *ctx = g->ctx;
    if (!ctx) return wgt_error(WGT_ERR_MISUSE, "wgt_graph_replay: the graph's context was freed");
    wgt_status st = wgt_ctx_check(ctx);
    if (st) return st;
    if (ctx->capture)
        return wgt_ctx_error(ctx, WGT_ERR_MISUSE, "wgt_graph_replay during a graph capture: end the capture first");
    if (g->dirty_lo <= g->dirty_hi) {
        size_t at = (size_t)g->dirty_lo * WGT_UNIFORM_SLOT, n = (size_t)(g->dirty_hi - g->dirty_lo + 1) * WGT_UNIFORM_SLOT;
        wgt_W.QueueWriteBuffer(ctx->queue, g->uniform_buf, at, g->uniforms + at, n);
        g->dirty_lo = 1, g->dirty_hi = 0;
    }
    /* eager work recorded before the replay (an input written element by element) goes first, in
     * the same command buffer: the replay encodes into the context's encoder, which the flush
     * below (or, unsubmitted, the next one) submits with its uniform and upload arenas */
    /* WGT_PROFILE=1: each dispatch in a time-stamped pass of its own (while the profiler has pairs
     * left: a replay is one submit a segment), resolved by the context's flush, so through its
     * encoder */
    int prof = ctx->prof != NULL, segment = 1;
    WGPUCommandEncoder enc = seg_encoder(ctx, submit, prof);
    for (int i = 0; i < n_pre; i++)
        if (pre[i].bytes)
            wgt_W.CommandEncoderCopyBufferToBuffer(enc, pre[i].src->handle, pre[i].src_offset, pre[i].dst->handle,
                                                   pre[i].dst_offset, pre[i].bytes);
    WGPUComputePassEncoder pass = NULL;
    for (int i = 0; i < g->n_cmds; i++) {
        const gcmd *c = &g->cmds[i];
        if (c->kind == CMD_NONE) continue;
        if (c->kind == CMD_DISPATCH) {
            int per_pass = wgt_prof_by_pass(ctx); /* WGT_PROFILE=pass: the replay's passes timed whole */
            int timed = prof && !per_pass && !wgt_prof_full(ctx);
            if (timed) {
                end_pass(ctx, &pass);
                WGPUPassTimestampWrites tw;
                wgt_prof_slot(ctx, c->kernel, &c->cost, wgt_prof_bound_bytes(c->b, c->n), &tw);
                WGPUComputePassDescriptor d = {NULL, {c->kernel->name, WGPU_STRLEN}, &tw};
                pass = wgt_W.CommandEncoderBeginComputePass(enc, &d);
            }
            if (!pass && per_pass && !wgt_prof_full(ctx)) {
                WGPUPassTimestampWrites tw;
                wgt_prof_pass_slot(ctx, &tw);
                WGPUComputePassDescriptor d = {NULL, {"wgt replay pass", WGPU_STRLEN}, &tw};
                pass = wgt_W.CommandEncoderBeginComputePass(enc, &d);
            }
            if (!pass) pass = wgt_W.CommandEncoderBeginComputePass(enc, NULL);
            if (per_pass) wgt_prof_pass_dispatch(ctx, &c->cost, wgt_prof_bound_bytes(c->b, c->n));
            wgt_W.ComputePassEncoderSetPipeline(pass, c->kernel->pipeline);
            if (c->kernel->has_uniform) {
                uint32_t offset = c->slot * WGT_UNIFORM_SLOT;
                wgt_W.ComputePassEncoderSetBindGroup(pass, 0, g->groups[c->group], 1, &offset);
            } else
                wgt_W.ComputePassEncoderSetBindGroup(pass, 0, g->groups[c->group], 0, NULL);
            wgt_W.ComputePassEncoderDispatchWorkgroups(pass, c->gx, c->gy, c->gz);
            ctx->stats.dispatches++;
            if (timed) end_pass(ctx, &pass);
            continue;
        }
        end_pass(ctx, &pass);
        if (c->kind == CMD_READ) {
            if ((st = seg_read(g, enc, c, segment++))) return st;
            enc = seg_encoder(ctx, submit, prof);
        } else if (c->kind == CMD_CLEAR)
            wgt_W.CommandEncoderClearBuffer(enc, c->dst->handle, c->dst_offset, c->bytes);
        else
            wgt_W.CommandEncoderCopyBufferToBuffer(enc, c->kind == CMD_UPLOAD ? g->const_buf : c->src->handle,
                                                   c->src_offset, c->dst->handle, c->dst_offset, c->bytes);
    }
    end_pass(ctx, &pass);
    if (!submit) return wgt_ctx_check(ctx);
    return seg_submit(ctx, enc);
}

void wgt_gpu_graph_counts_get(const wgt_gpu_graph *g, wgt_gpu_graph_counts *out)
{
    memset(out, 0, sizeof *out);
    out->dispatches = g->counts[CMD_DISPATCH];
    out->copies = g->counts[CMD_COPY];
    out->clears = g->counts[CMD_CLEAR];
    out->uploads = g->counts[CMD_UPLOAD];
    out->replaced = g->replaced;
    out->removed = g->counts[CMD_NONE];
    out->reads = g->counts[CMD_READ];
    out->bind_groups = g->n_groups;
    out->pinned_buffers = g->n_pins;
    out->patched_fields = g->n_fields;
    for (int i = 0; i < g->n_pins; i++) out->pinned_bytes += g->pins[i]->size;
    out->unplanned_bytes = g->unplanned_bytes;
    out->planned_buffers = g->planned;
    out->uniform_bytes = (uint64_t)g->n_slots * WGT_UNIFORM_SLOT;
    out->constant_bytes = g->n_consts;
}

void wgt_gpu_graph_free(wgt_gpu_graph *g)
{
    if (!g) return;
    wgt_context *ctx = g->ctx;
    if (ctx) {
        for (wgt_gpu_graph **p = &ctx->graphs; *p; p = &(*p)->next_live)
            if (*p == g) {
                *p = g->next_live;
                break;
            }
        /* recorded eager work may still name a buffer this unpins: it is ordered before any later
         * use by the queue, like any pool release */
        graph_release_device(g);
    }
    graph_free_host(g);
}

void wgt_capture_context_free(wgt_context *ctx)
{
    if (ctx->capture) {
        wgt_gpu_graph *g = ctx->capture->g;
        free(ctx->capture);
        ctx->capture = NULL;
        graph_release_device(g);
        graph_free_host(g);
    }
    while (ctx->graphs) {
        wgt_gpu_graph *g = ctx->graphs;
        ctx->graphs = g->next_live;
        graph_release_device(g);
        g->ctx = NULL; /* the handle now frees only its host memory */
    }
}
