/* The command stream: dispatches and copies are recorded into one open compute pass and command
 * encoder and submitted together, every max_batch dispatches or when the host needs a result.
 * Per-dispatch parameters and small uploads are staged on the host and written with one queue
 * write per submit, so recording never waits and never submits by itself. */
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"

/* capture.c: what a capture records (called only while ctx->capture is set). */
void wgt_capture_dispatch(wgt_context *ctx, const wgt_kernel *k, const void *params, uint32_t params_size,
                          const wgt_binding *bs, int n, uint32_t gx, uint32_t gy, uint32_t gz);
void wgt_capture_copy(wgt_context *ctx, int clear, wgt_buffer *src, uint64_t so, wgt_buffer *dst, uint64_t dso,
                      uint64_t bytes);
void wgt_capture_upload(wgt_context *ctx, wgt_buffer *dst, uint64_t offset, const void *data, uint64_t bytes);
wgt_status wgt_capture_refuse_host(wgt_context *ctx, const char *what, uint64_t bytes);
void wgt_capture_read(wgt_context *ctx, const char *what, wgt_buffer *src, uint64_t offset, const void *data,
                      uint64_t bytes);

#define UPLOAD_ARENA_BYTES (1u << 20)  /* small uploads ride in the command stream */
#define SMALL_UPLOAD_BYTES (64u << 10)
#define DOWNLOAD_TIMEOUT_MS 600000
#define READBACK_SMALL 256u /* split readbacks up to this size reuse their buffers */

static WGPUBuffer make_buffer(wgt_context *ctx, uint64_t size, WGPUBufferUsage usage, const char *label)
{
    WGPUBufferDescriptor d = {0};
    d.label = (WGPUStringView){label, strlen(label)};
    d.usage = usage;
    d.size = size;
    return wgt_W.DeviceCreateBuffer(ctx->device, &d);
}

wgt_status wgt_batch_init(wgt_context *ctx)
{
    ctx->uniform_capacity = (uint32_t)ctx->max_batch * WGT_UNIFORM_SLOT;
    ctx->uniform_host = malloc(ctx->uniform_capacity);
    ctx->upload_host = malloc(UPLOAD_ARENA_BYTES);
    ctx->uniform_arena = make_buffer(ctx, ctx->uniform_capacity, WGPUBufferUsage_Uniform | WGPUBufferUsage_CopyDst,
                                     "wgt uniform arena");
    ctx->upload_arena = make_buffer(ctx, UPLOAD_ARENA_BYTES, WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst,
                                    "wgt upload arena");
    if (!ctx->uniform_host || !ctx->upload_host || !ctx->uniform_arena || !ctx->upload_arena)
        return wgt_error(WGT_ERR_OUT_OF_MEMORY, "could not create the command batch buffers");
    return WGT_OK;
}

void wgt_batch_destroy(wgt_context *ctx)
{
    if (ctx->pass) {
        wgt_W.ComputePassEncoderEnd(ctx->pass);
        wgt_W.ComputePassEncoderRelease(ctx->pass);
        ctx->pass = NULL;
    }
    if (ctx->encoder) {
        wgt_W.CommandEncoderRelease(ctx->encoder);
        ctx->encoder = NULL;
    }
    for (int b = 0; b < WGT_BIND_BUCKETS; b++) {
        for (wgt_bind_entry *e = ctx->binds[b], *next; e; e = next) {
            next = e->next;
            wgt_W.BindGroupRelease(e->group);
            free(e);
        }
        ctx->binds[b] = NULL;
    }
    ctx->bind_count = 0;
    free(ctx->uniform_host);
    free(ctx->upload_host);
    ctx->uniform_host = ctx->upload_host = NULL;
    if (ctx->upload_arena) {
        wgt_W.BufferDestroy(ctx->upload_arena);
        wgt_W.BufferRelease(ctx->upload_arena);
        ctx->upload_arena = NULL;
    }
    if (ctx->uniform_arena) {
        wgt_W.BufferDestroy(ctx->uniform_arena);
        wgt_W.BufferRelease(ctx->uniform_arena);
        ctx->uniform_arena = NULL;
    }
    while (ctx->n_readback_free > 0) {
        WGPUBuffer b = ctx->readback_free[--ctx->n_readback_free];
        wgt_W.BufferDestroy(b);
        wgt_W.BufferRelease(b);
    }
    if (ctx->staging) {
        wgt_W.BufferDestroy(ctx->staging);
        wgt_W.BufferRelease(ctx->staging);
        ctx->staging = NULL;
    }
}

static void ensure_encoder(wgt_context *ctx)
{
    if (!ctx->encoder) ctx->encoder = wgt_W.DeviceCreateCommandEncoder(ctx->device, NULL);
}

static void end_pass(wgt_context *ctx)
{
    if (ctx->pass) {
        if (ctx->prof) wgt_prof_pass_end(ctx);
        wgt_W.ComputePassEncoderEnd(ctx->pass);
        wgt_W.ComputePassEncoderRelease(ctx->pass);
        ctx->pass = NULL;
    }
}

void wgt_gpu_end_pass(wgt_context *ctx) { end_pass(ctx); }

wgt_status wgt_gpu_flush(wgt_context *ctx)
{
    if (!ctx->encoder) return WGT_OK;
    end_pass(ctx);
    if (ctx->prof) wgt_prof_before_submit(ctx, ctx->encoder);
    WGPUCommandBuffer cb = wgt_W.CommandEncoderFinish(ctx->encoder, NULL);
    wgt_W.CommandEncoderRelease(ctx->encoder);
    ctx->encoder = NULL;
    if (ctx->uniform_used)
        wgt_W.QueueWriteBuffer(ctx->queue, ctx->uniform_arena, 0, ctx->uniform_host, ctx->uniform_used);
    if (ctx->upload_used) wgt_W.QueueWriteBuffer(ctx->queue, ctx->upload_arena, 0, ctx->upload_host, ctx->upload_used);
    wgt_W.QueueSubmit(ctx->queue, 1, &cb);
    wgt_W.CommandBufferRelease(cb);
    ctx->uniform_used = 0;
    ctx->upload_used = 0;
    ctx->batch_dispatches = 0;
    ctx->stats.submits++;
    if (ctx->prof) {
        wgt_status st = wgt_prof_after_submit(ctx);
        if (st) return st;
    }
    return wgt_ctx_check(ctx);
}

/* ---- GPU timing ----------------------------------------------------------------------------- */

/* Open a compute pass whose start and end are time-stamped into query slots 0 and 1 of qs; the
 * dispatches recorded until wgt_gpu_timed_pass_end land in it. */
wgt_status wgt_gpu_timed_pass_begin(wgt_context *ctx, WGPUQuerySet qs)
{
    wgt_status st = wgt_ctx_check(ctx);
    if (st) return st;
    ensure_encoder(ctx);
    end_pass(ctx);
    WGPUPassTimestampWrites tw = {NULL, qs, 0, 1};
    WGPUComputePassDescriptor d = {NULL, {"wgt timed pass", WGPU_STRLEN}, &tw};
    ctx->pass = wgt_W.CommandEncoderBeginComputePass(ctx->encoder, &d);
    ctx->batch_dispatches = 0;
    return WGT_OK;
}

/* Close the timed pass and resolve its two timestamps (ns, u64) into dst at offset 0. */
wgt_status wgt_gpu_timed_pass_end(wgt_context *ctx, WGPUQuerySet qs, WGPUBuffer resolve, wgt_buffer *dst)
{
    end_pass(ctx);
    wgt_W.CommandEncoderResolveQuerySet(ctx->encoder, qs, 0, 2, resolve, 0);
    wgt_W.CommandEncoderCopyBufferToBuffer(ctx->encoder, resolve, 0, dst->handle, 0, 16);
    return wgt_gpu_flush(ctx);
}

/* ---- bind groups ---------------------------------------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ull + (v >> 29); }

/* Release every cached bind group that drop(entry, arg) picks; returns how many went. */
static uint64_t bind_cache_drop(wgt_context *ctx, int (*drop)(const wgt_bind_entry *, uint64_t), uint64_t arg)
{
    uint64_t gone = 0;
    for (int b = 0; b < WGT_BIND_BUCKETS; b++) {
        for (wgt_bind_entry **p = &ctx->binds[b]; *p;) {
            wgt_bind_entry *e = *p;
            if (drop(e, arg)) {
                *p = e->next;
                wgt_W.BindGroupRelease(e->group);
                free(e);
                ctx->bind_count--;
                gone++;
            } else
                p = &e->next;
        }
    }
    return gone;
}

static int uses_buffer(const wgt_bind_entry *e, uint64_t buffer_id)
{
    for (int i = 0; i < e->n; i++)
        if (e->ids[i] == buffer_id) return 1;
    return 0;
}

static int used_before(const wgt_bind_entry *e, uint64_t tick) { return e->last_use < tick; }

void wgt_bind_cache_forget(wgt_context *ctx, uint64_t buffer_id) { bind_cache_drop(ctx, uses_buffer, buffer_id); }

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The cache's bound: every bind group holds a descriptor set in the driver (lavapipe maps one
 * memfd a set, so an unbounded cache ran a process that loaded 27 models into the kernel's limit of
 * 65,530 mappings and crashed it), and buffers that come and go (models loaded and freed, shapes
 * that change) leave entries nobody looks up again. Past bind_max entries the least recently used
 * quarter is released: a few sorts of bind_max clocks every bind_max / 4 creations. Releasing is
 * safe at any time: work already recorded holds its own reference to the groups it uses. */
static void bind_cache_trim(wgt_context *ctx)
{
    uint64_t *ticks = malloc(ctx->bind_count * sizeof *ticks);
    if (!ticks) return; /* out of host memory: keep the entries, try again at the next creation */
    size_t n = 0;
    for (int b = 0; b < WGT_BIND_BUCKETS; b++)
        for (wgt_bind_entry *e = ctx->binds[b]; e && n < ctx->bind_count; e = e->next) ticks[n++] = e->last_use;
    qsort(ticks, n, sizeof *ticks, cmp_u64);
    uint64_t below = ticks[n / 4]; /* entries last used before it go */
    free(ticks);
    ctx->stats.bind_group_evictions += bind_cache_drop(ctx, used_before, below);
}

static wgt_status bind_group(wgt_context *ctx, const wgt_kernel *k, const wgt_binding *bs, int n, WGPUBindGroup *out)
{
    uint64_t h = mix(0xcbf29ce484222325ull, (uint64_t)(uintptr_t)k);
    uint64_t sizes[WGT_MAX_BINDINGS];
    for (int i = 0; i < n; i++) {
        sizes[i] = bs[i].size ? bs[i].size : bs[i].buffer->size - bs[i].offset;
        h = mix(mix(mix(h, bs[i].buffer->id), bs[i].offset), sizes[i]);
    }
    wgt_bind_entry **bucket = &ctx->binds[h % WGT_BIND_BUCKETS];
    for (wgt_bind_entry *e = *bucket; e; e = e->next) {
        if (e->hash != h || e->kernel != k || e->n != n) continue;
        int same = 1;
        for (int i = 0; i < n && same; i++)
            same = e->ids[i] == bs[i].buffer->id && e->offsets[i] == bs[i].offset && e->sizes[i] == sizes[i];
        if (same) {
            ctx->stats.bind_group_hits++;
            e->last_use = ++ctx->bind_tick;
            *out = e->group;
            return WGT_OK;
        }
    }
    WGPUBindGroupEntry entries[WGT_MAX_BINDINGS + 1];
    memset(entries, 0, sizeof entries);
    int ne = 0;
    if (k->has_uniform) {
        entries[ne].binding = 0;
        entries[ne].buffer = ctx->uniform_arena;
        entries[ne].offset = 0;
        entries[ne].size = WGT_UNIFORM_SLOT;
        ne++;
    }
    for (int i = 0; i < n; i++, ne++) {
        entries[ne].binding = i + 1;
        entries[ne].buffer = bs[i].buffer->handle;
        entries[ne].offset = bs[i].offset;
        entries[ne].size = sizes[i];
    }
    WGPUBindGroupDescriptor d = {NULL, {k->name, strlen(k->name)}, k->layout, (size_t)ne, entries};
    wgt_bind_entry *e = calloc(1, sizeof *e);
    if (!e) return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory for a bind group");
    e->group = wgt_W.DeviceCreateBindGroup(ctx->device, &d);
    e->hash = h;
    e->kernel = k;
    e->n = n;
    for (int i = 0; i < n; i++) {
        e->ids[i] = bs[i].buffer->id;
        e->offsets[i] = bs[i].offset;
        e->sizes[i] = sizes[i];
    }
    e->last_use = ++ctx->bind_tick;
    e->next = *bucket;
    *bucket = e;
    ctx->stats.bind_group_misses++;
    *out = e->group;
    if (++ctx->bind_count > ctx->bind_max) bind_cache_trim(ctx);
    return WGT_OK;
}

/* ---- recording ------------------------------------------------------------------------------ */

wgt_status wgt_gpu_dispatch(wgt_context *ctx, const wgt_kernel *k, const void *params, uint32_t params_size,
                            const wgt_binding *bs, int n, uint32_t gx, uint32_t gy, uint32_t gz)
{
    wgt_status st = wgt_ctx_check(ctx);
    if (st) return st;
    if (n != k->n_storage)
        return wgt_ctx_error(ctx, WGT_ERR_INTERNAL, "kernel '%s' takes %d storage bindings, given %d", k->name,
                             k->n_storage, n);
    if (params_size > WGT_UNIFORM_SLOT)
        return wgt_ctx_error(ctx, WGT_ERR_INTERNAL, "kernel '%s': %u bytes of parameters, at most %d", k->name,
                             params_size, WGT_UNIFORM_SLOT);
    const wgt_limits *lim = &ctx->info.limits;
    for (int i = 0; i < n; i++) {
        uint64_t size = bs[i].size ? bs[i].size : bs[i].buffer->size - bs[i].offset;
        if (bs[i].offset % lim->min_storage_buffer_offset_alignment || bs[i].offset + size > bs[i].buffer->size ||
            size % 4)
            return wgt_ctx_error(ctx, WGT_ERR_INTERNAL,
                                 "kernel '%s' binding %d: range [%llu, +%llu) is misaligned or outside its "
                                 "buffer of %llu bytes", k->name, i + 1, (unsigned long long)bs[i].offset,
                                 (unsigned long long)size, (unsigned long long)bs[i].buffer->size);
        if (size > lim->max_storage_buffer_binding_size)
            return wgt_ctx_error(ctx, WGT_ERR_LIMIT,
                                 "kernel '%s' binding %d: %llu bytes is past this device's storage binding limit "
                                 "(%llu): the op must split its work", k->name, i + 1, (unsigned long long)size,
                                 (unsigned long long)lim->max_storage_buffer_binding_size);
    }
    if (gx > lim->max_compute_workgroups_per_dimension || gy > lim->max_compute_workgroups_per_dimension ||
        gz > lim->max_compute_workgroups_per_dimension)
        return wgt_ctx_error(ctx, WGT_ERR_LIMIT, "kernel '%s': %u x %u x %u workgroups is past the limit of %u per "
                             "dimension", k->name, gx, gy, gz, lim->max_compute_workgroups_per_dimension);
    if (ctx->capture) wgt_capture_dispatch(ctx, k, params, params_size, bs, n, gx, gy, gz);
    wgt_dispatch_cost cost = ctx->next_cost; /* declared for this dispatch only */
    ctx->next_cost = (wgt_dispatch_cost){0, 0};
    if (!gx || !gy || !gz) return WGT_OK;
    if (ctx->batch_dispatches >= ctx->max_batch || ctx->uniform_used + WGT_UNIFORM_SLOT > ctx->uniform_capacity ||
        wgt_prof_full(ctx))
        if ((st = wgt_gpu_flush(ctx))) return st;

    WGPUBindGroup group = NULL;
    if ((st = bind_group(ctx, k, bs, n, &group))) return st;
    ensure_encoder(ctx);
    int per_pass = wgt_prof_by_pass(ctx);
    if (ctx->prof && !per_pass) { /* a time-stamped pass of its own */
        end_pass(ctx);
        WGPUPassTimestampWrites tw;
        wgt_prof_slot(ctx, k, &cost, wgt_prof_bound_bytes(bs, n), &tw);
        WGPUComputePassDescriptor d = {NULL, {k->name, WGPU_STRLEN}, &tw};
        ctx->pass = wgt_W.CommandEncoderBeginComputePass(ctx->encoder, &d);
    }
    if (!ctx->pass && per_pass) { /* WGT_PROFILE=pass: the pass's start and end time-stamped */
        WGPUPassTimestampWrites tw;
        wgt_prof_pass_slot(ctx, &tw);
        WGPUComputePassDescriptor d = {NULL, {"wgt pass", WGPU_STRLEN}, &tw};
        ctx->pass = wgt_W.CommandEncoderBeginComputePass(ctx->encoder, &d);
    }
    if (per_pass) wgt_prof_pass_dispatch(ctx, &cost, wgt_prof_bound_bytes(bs, n));
    if (!ctx->pass) ctx->pass = wgt_W.CommandEncoderBeginComputePass(ctx->encoder, NULL);
    wgt_W.ComputePassEncoderSetPipeline(ctx->pass, k->pipeline);
    if (k->has_uniform) {
        uint32_t offset = ctx->uniform_used;
        memset(ctx->uniform_host + offset, 0, WGT_UNIFORM_SLOT);
        if (params_size) memcpy(ctx->uniform_host + offset, params, params_size);
        ctx->uniform_used += WGT_UNIFORM_SLOT;
        wgt_W.ComputePassEncoderSetBindGroup(ctx->pass, 0, group, 1, &offset);
    } else
        wgt_W.ComputePassEncoderSetBindGroup(ctx->pass, 0, group, 0, NULL);
    wgt_W.ComputePassEncoderDispatchWorkgroups(ctx->pass, gx, gy, gz);
    if (ctx->prof && !per_pass) end_pass(ctx);
    ctx->batch_dispatches++;
    ctx->stats.dispatches++;
    return WGT_OK;
}

static wgt_status check_range(wgt_context *ctx, const char *what, wgt_buffer *b, uint64_t offset, uint64_t bytes)
{
    if (!b) return wgt_ctx_error(ctx, WGT_ERR_INVALID_ARGUMENT, "%s: the buffer is NULL", what);
    if (offset % 4 || bytes % 4 || offset > b->size || bytes > b->size - offset)
        return wgt_ctx_error(ctx, WGT_ERR_INTERNAL,
                             "%s: range [%llu, +%llu) is not 4-byte aligned or lies outside the buffer of %llu bytes",
                             what, (unsigned long long)offset, (unsigned long long)bytes, (unsigned long long)b->size);
    return WGT_OK;
}

wgt_status wgt_gpu_copy(wgt_context *ctx, wgt_buffer *src, uint64_t so, wgt_buffer *dst, uint64_t dso, uint64_t bytes)
{
    wgt_status st = wgt_ctx_check(ctx);
    if (st || (st = check_range(ctx, "copy source", src, so, bytes)) ||
        (st = check_range(ctx, "copy destination", dst, dso, bytes)))
        return st;
    if (!bytes) return WGT_OK;
    if (ctx->capture) wgt_capture_copy(ctx, 0, src, so, dst, dso, bytes);
    ensure_encoder(ctx);
    end_pass(ctx);
    wgt_W.CommandEncoderCopyBufferToBuffer(ctx->encoder, src->handle, so, dst->handle, dso, bytes);
    return WGT_OK;
}

wgt_status wgt_gpu_fill_zero(wgt_context *ctx, wgt_buffer *dst, uint64_t offset, uint64_t bytes)
{
    wgt_status st = wgt_ctx_check(ctx);
    if (st || (st = check_range(ctx, "clear", dst, offset, bytes))) return st;
    if (!bytes) return WGT_OK;
    if (ctx->capture) wgt_capture_copy(ctx, 1, NULL, 0, dst, offset, bytes);
    ensure_encoder(ctx);
    end_pass(ctx);
    wgt_W.CommandEncoderClearBuffer(ctx->encoder, dst->handle, offset, bytes);
    return WGT_OK;
}

wgt_status wgt_gpu_upload(wgt_context *ctx, wgt_buffer *dst, uint64_t offset, const void *data, uint64_t bytes)
{
    wgt_status st = wgt_ctx_check(ctx);
    if (st || (st = check_range(ctx, "upload", dst, offset, bytes))) return st;
    if (!bytes) return WGT_OK;
    if (ctx->capture) wgt_capture_upload(ctx, dst, offset, data, bytes);
    if (bytes <= SMALL_UPLOAD_BYTES) {
        /* In-stream: staged now, written before the submit, copied in order with the dispatches. */
        if (ctx->upload_used + bytes > UPLOAD_ARENA_BYTES && (st = wgt_gpu_flush(ctx))) return st;
        memcpy(ctx->upload_host + ctx->upload_used, data, bytes);
        ensure_encoder(ctx);
        end_pass(ctx);
        wgt_W.CommandEncoderCopyBufferToBuffer(ctx->encoder, ctx->upload_arena, ctx->upload_used, dst->handle, offset,
                                               bytes);
        ctx->upload_used += (uint32_t)bytes;
        return WGT_OK;
    }
    /* Large: submit what was recorded first, so the queue write lands after it. */
    if ((st = wgt_gpu_flush(ctx))) return st;
    wgt_W.QueueWriteBuffer(ctx->queue, dst->handle, offset, data, bytes);
    return wgt_ctx_check(ctx);
}

typedef struct map_wait {
    volatile int done;
    WGPUMapAsyncStatus status;
} map_wait;

static void on_map(WGPUMapAsyncStatus status, WGPUStringView message, void *u1, void *u2)
{
    map_wait *w = u1;
    w->status = status;
    w->done = 1;
}

wgt_status wgt_gpu_map_copy(wgt_context *ctx, WGPUBuffer buf, uint64_t n, uint64_t skew, void *data, uint64_t bytes,
                            const char *what)
{
    map_wait w = {0};
    WGPUBufferMapCallbackInfo cb = {0};
    cb.mode = WGPUCallbackMode_AllowProcessEvents;
    cb.callback = on_map;
    cb.userdata1 = &w;
    wgt_W.BufferMapAsync(buf, WGPUMapMode_Read, 0, (size_t)n, cb);
    wgt_status st = wgt_gpu_wait_flag(ctx, &w.done, DOWNLOAD_TIMEOUT_MS, "a result to come back from the device");
    if (st) return st;
    if (w.status != WGPUMapAsyncStatus_Success)
        return wgt_ctx_check(ctx) ? wgt_ctx_check(ctx)
                                  : wgt_ctx_error(ctx, WGT_ERR_GPU, "mapping %s failed (status %d)", what,
                                                  (int)w.status);
    const uint8_t *p = wgt_W.BufferGetConstMappedRange(buf, 0, (size_t)n);
    if (p) memcpy(data, p + skew, bytes);
    wgt_W.BufferUnmap(buf);
    return p ? WGT_OK : wgt_ctx_error(ctx, WGT_ERR_GPU, "%s could not be read", what);
}

wgt_status wgt_gpu_download(wgt_context *ctx, wgt_buffer *src, uint64_t offset, void *data, uint64_t bytes)
{
    wgt_status st = wgt_ctx_check(ctx);
    if (st) return st;
    if (!src) return wgt_ctx_error(ctx, WGT_ERR_INVALID_ARGUMENT, "download: the buffer is NULL");
    if (!bytes) return WGT_OK;
    /* Copies move whole 4-byte words; buffers are sized in 256-byte classes, so rounding stays inside. */
    uint64_t start = offset & ~3ull, end = (offset + bytes + 3) & ~3ull;
    if ((st = check_range(ctx, "download", src, start, end - start))) return st;
    uint64_t n = end - start;
    if (n > ctx->staging_size) {
        if (ctx->staging) {
            wgt_W.BufferDestroy(ctx->staging);
            wgt_W.BufferRelease(ctx->staging);
        }
        uint64_t size = 1 << 16;
        while (size < n) size <<= 1;
        ctx->staging = make_buffer(ctx, size, WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, "wgt staging");
        ctx->staging_size = ctx->staging ? size : 0;
        if (!ctx->staging)
            return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "could not create a staging buffer of %llu bytes",
                                 (unsigned long long)size);
    }
    ensure_encoder(ctx);
    end_pass(ctx);
    wgt_W.CommandEncoderCopyBufferToBuffer(ctx->encoder, src->handle, start, ctx->staging, 0, n);
    if ((st = wgt_gpu_flush(ctx))) return st;
    if ((st = wgt_gpu_map_copy(ctx, ctx->staging, n, offset - start, data, bytes, "the staging buffer"))) return st;
    /* during a capture the read ends a segment: a replay reads the same bytes again to go on */
    if (ctx->capture) wgt_capture_read(ctx, "a download", src, offset, data, bytes);
    return wgt_ctx_check(ctx);
}

/* ---- split readbacks ------------------------------------------------------------------------ */

struct wgt_readback {
    WGPUBuffer buf;
    uint64_t bytes, skew, submits; /* the copy goes with the submit that makes stats.submits > submits */
    int small;                     /* buf is READBACK_SMALL bytes: reusable */
};

wgt_status wgt_gpu_readback_begin(wgt_context *ctx, wgt_buffer *src, uint64_t offset, uint64_t bytes,
                                  wgt_readback **out)
{
    *out = NULL;
    wgt_status st = wgt_ctx_check(ctx);
    if (st) return st;
    if (ctx->capture) return wgt_capture_refuse_host(ctx, "a readback", bytes);
    uint64_t start = offset & ~3ull, end = (offset + bytes + 3) & ~3ull;
    if ((st = check_range(ctx, "readback", src, start, end - start))) return st;
    wgt_readback *rb = calloc(1, sizeof *rb);
    if (!rb) return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    rb->bytes = bytes, rb->skew = offset - start, rb->submits = ctx->stats.submits;
    rb->small = end - start <= READBACK_SMALL;
    if (rb->small && ctx->n_readback_free > 0)
        rb->buf = ctx->readback_free[--ctx->n_readback_free];
    else
        rb->buf = make_buffer(ctx, end - start <= READBACK_SMALL ? READBACK_SMALL : end - start,
                              WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst, "wgt readback");
    if (!rb->buf) {
        free(rb);
        return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "could not create a readback buffer");
    }
    ensure_encoder(ctx);
    end_pass(ctx);
    if (end > start) wgt_W.CommandEncoderCopyBufferToBuffer(ctx->encoder, src->handle, start, rb->buf, 0, end - start);
    *out = rb;
    return WGT_OK;
}

wgt_status wgt_gpu_readback_end(wgt_context *ctx, wgt_readback *rb, void *data)
{
    if (!rb) return WGT_OK;
    wgt_status st = WGT_OK;
    if (ctx->stats.submits == rb->submits) st = wgt_gpu_flush(ctx);
    if (!st && data && rb->bytes)
        st = wgt_gpu_map_copy(ctx, rb->buf, (rb->skew + rb->bytes + 3) & ~3ull, rb->skew, data, rb->bytes,
                              "a readback buffer");
    /* unmapped again here (or never mapped); a later copy into it is ordered after this one */
    int cap = (int)(sizeof ctx->readback_free / sizeof ctx->readback_free[0]);
    if (!st && rb->small && ctx->n_readback_free < cap)
        ctx->readback_free[ctx->n_readback_free++] = rb->buf;
    else {
        wgt_W.BufferDestroy(rb->buf);
        wgt_W.BufferRelease(rb->buf);
    }
    free(rb);
    return st ? st : wgt_ctx_check(ctx);
}
