/*
 * The kernel profiler (WGT_PROFILE=1, on adapters with timestamp queries): every dispatch gets a
 * compute pass of its own whose start and end are time-stamped; at each submit the timestamps
 * are resolved, read back (a wait: profiling serialises the stream) and summed per kernel. The
 * table (kernel, calls, total and mean GPU time, share, bytes moved a call and GB/s, FLOP/s where
 * the op declares its FLOPs) goes to stderr when the context is freed, or wherever
 * wgt_context_profile_print sends it. Bytes are what the op declares (wgt_gpu_cost) or else the
 * bytes of the ranges the dispatch binds: an estimate (marked ~), high when a kernel reads part
 * of a binding (a KV cache bound whole), low when it reads one twice.
 * WGT_PROFILE=pass time-stamps whole compute passes instead (a row per number of dispatches a
 * pass holds): a decode step's pass is then timed as it runs, every dispatch in one pass, so its
 * GPU time a token is not inflated by a pass a dispatch (still a wait at each submit).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"

#define PROF_PAIRS 1024 /* dispatches per resolve (query sets hold at most 4096 queries) */
#define PROF_ROWS 128

typedef struct prof_row {
    char name[64];
    uint64_t calls;
    double ns;
    double bytes, flops; /* summed over the calls */
    uint64_t estimated;  /* calls whose bytes are the bound ranges' */
} prof_row;

struct wgt_profiler {
    WGPUQuerySet qs;
    WGPUBuffer resolve, readback;
    uint32_t n;                 /* pairs recorded since the last resolve */
    int16_t row_of[PROF_PAIRS]; /* the row of each recorded pair */
    double pair_bytes[PROF_PAIRS], pair_flops[PROF_PAIRS];
    uint8_t pair_est[PROF_PAIRS];
    uint64_t t[2 * PROF_PAIRS];  /* their timestamps, read back */
    prof_row rows[PROF_ROWS];
    int n_rows;
    uint64_t dispatches;
    int by_size; /* WGT_PROFILE=2: a row per kernel and bound size (call sites apart) */
    int by_pass; /* WGT_PROFILE=pass: a pair of timestamps per compute pass */
    int open;    /* by_pass: pair n - 1 belongs to the pass being recorded */
    uint32_t pair_disp[PROF_PAIRS]; /* by_pass: dispatches in each pair's pass */
};

wgt_status wgt_prof_init(wgt_context *ctx)
{
    const char *v = getenv("WGT_PROFILE");
    if (!v || !*v || !strcmp(v, "0")) return WGT_OK;
    if (strcmp(v, "1") && strcmp(v, "2") && strcmp(v, "pass"))
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "WGT_PROFILE=%s: use 1 (profile kernels), 2 (a row per kernel "
                         "and bound bytes: call sites apart), pass (time whole compute passes) or 0", v);
    if (!ctx->info.has_timestamps) {
        fprintf(stderr, "wgt: WGT_PROFILE=1: this adapter has no timestamp queries; no kernel profile\n");
        return WGT_OK;
    }
    wgt_profiler *p = calloc(1, sizeof *p);
    if (!p) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    WGPUQuerySetDescriptor qd = {NULL, {"wgt profile", WGPU_STRLEN}, WGPUQueryType_Timestamp, 2 * PROF_PAIRS};
    p->qs = wgt_W.DeviceCreateQuerySet(ctx->device, &qd);
    WGPUBufferDescriptor rd = {NULL, {"wgt profile resolve", WGPU_STRLEN},
                               WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc, 16 * PROF_PAIRS, 0};
    WGPUBufferDescriptor bd = {NULL, {"wgt profile readback", WGPU_STRLEN},
                               WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, 16 * PROF_PAIRS, 0};
    p->resolve = wgt_W.DeviceCreateBuffer(ctx->device, &rd);
    p->readback = wgt_W.DeviceCreateBuffer(ctx->device, &bd);
    if (!p->qs || !p->resolve || !p->readback) {
        ctx->prof = p;
        wgt_prof_destroy(ctx);
        return wgt_error(WGT_ERR_GPU, "WGT_PROFILE=1: could not create the timestamp query set");
    }
    p->by_size = !strcmp(v, "2");
    p->by_pass = !strcmp(v, "pass");
    ctx->prof = p;
    return WGT_OK;
}

void wgt_prof_destroy(wgt_context *ctx)
{
    wgt_profiler *p = ctx->prof;
    if (!p) return;
    if (p->qs) wgt_W.QuerySetRelease(p->qs);
    if (p->resolve) wgt_W.BufferRelease(p->resolve);
    if (p->readback) wgt_W.BufferRelease(p->readback);
    free(p);
    ctx->prof = NULL;
}

int wgt_prof_full(const wgt_context *ctx) { return ctx->prof && ctx->prof->n == PROF_PAIRS; }

int wgt_prof_by_pass(const wgt_context *ctx) { return ctx->prof && ctx->prof->by_pass; }

static int row_named(wgt_profiler *p, const char *name)
{
    int r = 0;
    while (r < p->n_rows && strcmp(p->rows[r].name, name)) r++;
    if (r == p->n_rows && p->n_rows < PROF_ROWS) snprintf(p->rows[p->n_rows++].name, 64, "%s", name);
    return r == PROF_ROWS ? PROF_ROWS - 1 : r; /* "other" past 128 rows */
}

/* WGT_PROFILE=pass: the timestamp writes of a pass about to open (its row is named when it is read). */
void wgt_prof_pass_slot(wgt_context *ctx, WGPUPassTimestampWrites *tw)
{
    wgt_profiler *p = ctx->prof;
    p->row_of[p->n] = -1;
    p->pair_bytes[p->n] = p->pair_flops[p->n] = 0;
    p->pair_est[p->n] = 0;
    p->pair_disp[p->n] = 0;
    *tw = (WGPUPassTimestampWrites){NULL, p->qs, 2 * p->n, 2 * p->n + 1};
    p->n++;
    p->open = 1;
}

/* WGT_PROFILE=pass: a dispatch joins the open pass (one opened without timestamps is not counted). */
void wgt_prof_pass_dispatch(wgt_context *ctx, const wgt_dispatch_cost *c, uint64_t bound_bytes)
{
    wgt_profiler *p = ctx->prof;
    if (!p->open || !p->n) return;
    uint32_t i = p->n - 1;
    p->pair_disp[i]++;
    p->pair_bytes[i] += (double)(c && c->bytes ? c->bytes : bound_bytes);
    p->pair_est[i] |= !(c && c->bytes);
    p->pair_flops[i] += c ? c->flops : 0;
}

void wgt_prof_pass_end(wgt_context *ctx)
{
    if (ctx->prof) ctx->prof->open = 0;
}

uint64_t wgt_prof_bound_bytes(const wgt_binding *bs, int n)
{
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = bs[j].buffer == bs[i].buffer && bs[j].offset == bs[i].offset && bs[j].size == bs[i].size;
        if (!seen) total += bs[i].size ? bs[i].size : bs[i].buffer->size - bs[i].offset;
    }
    return total;
}

void wgt_gpu_cost(wgt_context *ctx, uint64_t bytes, double flops)
{
    if (ctx) ctx->next_cost = (wgt_dispatch_cost){bytes, flops};
}

/* The timestamp writes for the next dispatch of k (the caller opens a pass with them). */
void wgt_prof_slot(wgt_context *ctx, const wgt_kernel *k, const wgt_dispatch_cost *c, uint64_t bound_bytes,
                   WGPUPassTimestampWrites *tw)
{
    wgt_profiler *p = ctx->prof;
    char name[64];
    if (p->by_size) snprintf(name, sizeof name, "%.40s %.3gMB", k->name, (double)bound_bytes / 1e6);
    else snprintf(name, sizeof name, "%s", k->name);
    p->row_of[p->n] = (int16_t)row_named(p, name);
    p->pair_bytes[p->n] = (double)(c && c->bytes ? c->bytes : bound_bytes);
    p->pair_est[p->n] = !(c && c->bytes);
    p->pair_flops[p->n] = c ? c->flops : 0;
    *tw = (WGPUPassTimestampWrites){NULL, p->qs, 2 * p->n, 2 * p->n + 1};
    p->n++;
}

/* Before the encoder is finished: resolve the pairs recorded into the readback buffer. */
void wgt_prof_before_submit(wgt_context *ctx, WGPUCommandEncoder enc)
{
    wgt_profiler *p = ctx->prof;
    if (!p || !p->n) return;
    wgt_W.CommandEncoderResolveQuerySet(enc, p->qs, 0, 2 * p->n, p->resolve, 0);
    wgt_W.CommandEncoderCopyBufferToBuffer(enc, p->resolve, 0, p->readback, 0, 16ull * p->n);
}

/* After the submit: wait for the timestamps and add them up. */
wgt_status wgt_prof_after_submit(wgt_context *ctx)
{
    wgt_profiler *p = ctx->prof;
    if (!p || !p->n) return WGT_OK;
    uint32_t n = p->n;
    p->n = 0;
    p->open = 0; /* the submit ended the pass */
    const uint64_t *t = p->t;
    wgt_status st = wgt_gpu_map_copy(ctx, p->readback, 16ull * n, 0, p->t, 16ull * n, "the profiler's timestamps");
    if (st) return st;
    for (uint32_t i = 0; i < n; i++) {
        if (p->row_of[i] < 0) { /* a whole pass: its row says how many dispatches it held */
            char name[64];
            snprintf(name, sizeof name, "pass of %u dispatches", p->pair_disp[i]);
            p->row_of[i] = (int16_t)row_named(p, name);
            p->dispatches += p->pair_disp[i]; /* for the pair's one below */
            p->dispatches--;
        }
        prof_row *r = &p->rows[p->row_of[i]];
        r->calls++;
        if (t[2 * i + 1] > t[2 * i]) r->ns += (double)(t[2 * i + 1] - t[2 * i]);
        r->bytes += p->pair_bytes[i];
        r->flops += p->pair_flops[i];
        r->estimated += p->pair_est[i];
    }
    p->dispatches += n;
    return WGT_OK;
}

static int by_time(const void *a, const void *b)
{
    double x = ((const prof_row *)a)->ns, y = ((const prof_row *)b)->ns;
    return x < y ? 1 : x > y ? -1 : 0;
}

void wgt_context_profile_print(wgt_context *ctx, FILE *f)
{
    if (!ctx || !ctx->prof) return;
    wgt_gpu_flush(ctx);
    wgt_profiler *p = ctx->prof;
    prof_row rows[PROF_ROWS];
    memcpy(rows, p->rows, sizeof rows);
    qsort(rows, (size_t)p->n_rows, sizeof *rows, by_time);
    double total = 0;
    for (int i = 0; i < p->n_rows; i++) total += rows[i].ns;
    fprintf(f, "kernel profile: %llu dispatches, %.3f ms of GPU time (%s)\n", (unsigned long long)p->dispatches,
            total / 1e6, p->by_pass ? "whole passes timed" : "each dispatch in a pass of its own");
    fprintf(f, "  %-28s %10s %12s %10s %7s %12s %9s %9s\n", p->by_pass ? "pass" : "kernel", "calls", "total ms", "mean us", "share",
            "MB/call", "GB/s", "GFLOP/s");
    int any_est = 0;
    for (int i = 0; i < p->n_rows; i++) {
        const prof_row *r = &rows[i];
        if (!r->calls) continue;
        char flops[16] = "-";
        if (r->flops > 0 && r->ns > 0) snprintf(flops, sizeof flops, "%.4g", r->flops / r->ns);
        int est = r->estimated > 0;
        any_est |= est;
        fprintf(f, "  %-28s %10llu %12.3f %10.2f %6.1f%% %c %10.4f %9.4g %9s\n", r->name, (unsigned long long)r->calls,
                r->ns / 1e6, r->ns / 1e3 / (double)r->calls, total > 0 ? 100 * r->ns / total : 0, est ? '~' : ' ',
                r->bytes / 1e6 / (double)r->calls, r->ns > 0 ? r->bytes / r->ns : 0.0, flops);
    }
    if (any_est)
        fprintf(f, "  (~: bytes of the bound ranges, not declared by the op: high for a kernel that reads part of "
                "a binding)\n");
}
