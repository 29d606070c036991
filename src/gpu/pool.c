/* The buffer pool: buffers are rounded up to a size class (4 classes per power of two, at least
 * 256 bytes) and kept on a free list when released, so steady-state work allocates nothing.
 * Reuse is safe without waiting: WebGPU orders every queue operation, so work recorded after a
 * release sees the buffer only after earlier work is done with it. */
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"

#define LARGE_ALLOCATION (64ull << 20) /* checked for out-of-memory synchronously */

static int size_class(uint64_t bytes, uint64_t *class_bytes)
{
    if (bytes <= 256) {
        *class_bytes = 256;
        return 0;
    }
    int p = 64 - __builtin_clzll(bytes - 1); /* 2^(p-1) < bytes <= 2^p, p >= 9 */
    uint64_t step = 1ull << (p - 3);         /* classes at 5/4, 6/4, 7/4 and 8/4 of 2^(p-1) */
    uint64_t rounded = (bytes + step - 1) / step * step;
    *class_bytes = rounded;
    int idx = 1 + (p - 9) * 4 + (int)(rounded / step) - 5;
    return idx < WGT_POOL_CLASSES ? idx : WGT_POOL_CLASSES - 1;
}

typedef struct scope_result {
    volatile int done;
    WGPUErrorType type;
    char message[512];
} scope_result;

static void on_pop(WGPUPopErrorScopeStatus status, WGPUErrorType type, WGPUStringView message, void *u1,
                   void *u2)
{
    scope_result *r = u1;
    r->type = status == WGPUPopErrorScopeStatus_Success ? type : WGPUErrorType_Unknown;
    size_t n = message.data ? (message.length == WGPU_STRLEN ? strlen(message.data) : message.length) : 0;
    if (n >= sizeof r->message) n = sizeof r->message - 1;
    if (n) memcpy(r->message, message.data, n);
    r->message[n] = 0;
    r->done = 1;
}

wgt_status wgt_gpu_alloc(wgt_context *ctx, uint64_t bytes, wgt_buffer **out)
{
    *out = NULL;
    wgt_status st = wgt_ctx_check(ctx);
    if (st) return st;
    uint64_t class_bytes;
    int cls = size_class(bytes ? bytes : 4, &class_bytes);
    if (class_bytes > ctx->info.limits.max_buffer_size) {
        if (bytes > ctx->info.limits.max_buffer_size)
            return wgt_ctx_error(ctx, WGT_ERR_LIMIT,
                                 "a buffer of %llu bytes is larger than this device's maximum buffer size "
                                 "(%llu bytes)", (unsigned long long)bytes,
                                 (unsigned long long)ctx->info.limits.max_buffer_size);
        class_bytes = (bytes + 255) / 256 * 256;
        if (class_bytes > ctx->info.limits.max_buffer_size) class_bytes = (bytes + 3) / 4 * 4;
    }
    for (wgt_buffer **p = &ctx->free_list[cls]; *p; p = &(*p)->next_free) {
        if ((*p)->size >= bytes) {
            wgt_buffer *b = *p;
            *p = b->next_free;
            b->next_free = NULL;
            b->in_use = 1;
            b->born = ctx->capture ? ctx->capture_serial : 0;
            ctx->stats.in_use_bytes += b->size;
            if (ctx->stats.in_use_bytes > ctx->stats.peak_in_use_bytes)
                ctx->stats.peak_in_use_bytes = ctx->stats.in_use_bytes;
            ctx->stats.pool_hits++;
            *out = b;
            return WGT_OK;
        }
    }
    if (ctx->n_buffers == ctx->cap_buffers) {
        int cap = ctx->cap_buffers ? ctx->cap_buffers * 2 : 64;
        wgt_buffer **all = realloc(ctx->all_buffers, cap * sizeof *all);
        if (!all) return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory for the buffer pool");
        ctx->all_buffers = all;
        ctx->cap_buffers = cap;
    }
    wgt_buffer *b = calloc(1, sizeof *b);
    if (!b) return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory for the buffer pool");
    WGPUBufferDescriptor desc = {0};
    desc.usage = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst;
    desc.size = class_bytes;
    int check = class_bytes >= LARGE_ALLOCATION;
    if (check) wgt_W.DevicePushErrorScope(ctx->device, WGPUErrorFilter_OutOfMemory);
    b->handle = wgt_W.DeviceCreateBuffer(ctx->device, &desc);
    if (check) {
        scope_result r = {0};
        WGPUPopErrorScopeCallbackInfo cb = {0};
        cb.mode = WGPUCallbackMode_AllowProcessEvents;
        cb.callback = on_pop;
        cb.userdata1 = &r;
        wgt_W.DevicePopErrorScope(ctx->device, cb);
        if ((st = wgt_gpu_wait_flag(ctx, &r.done, 60000, "a buffer allocation"))) {
            free(b);
            return st;
        }
        if (r.type != WGPUErrorType_NoError) {
            if (b->handle) wgt_W.BufferRelease(b->handle);
            free(b);
            return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY,
                                 "the device could not allocate %llu bytes (%s); %llu bytes are cached: "
                                 "wgt_context_empty_cache() returns them", (unsigned long long)class_bytes,
                                 r.message, (unsigned long long)(ctx->stats.allocated_bytes - ctx->stats.in_use_bytes));
        }
    }
    if (!b->handle) {
        free(b);
        return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "the device could not create a buffer of %llu bytes",
                             (unsigned long long)class_bytes);
    }
    b->size = class_bytes;
    b->size_class = cls;
    b->id = ++ctx->next_buffer_id;
    b->in_use = 1;
    b->born = ctx->capture ? ctx->capture_serial : 0;
    ctx->all_buffers[ctx->n_buffers++] = b;
    ctx->stats.allocated_bytes += b->size;
    ctx->stats.buffers++;
    ctx->stats.in_use_bytes += b->size;
    if (ctx->stats.in_use_bytes > ctx->stats.peak_in_use_bytes) ctx->stats.peak_in_use_bytes = ctx->stats.in_use_bytes;
    ctx->stats.pool_misses++;
    *out = b;
    return WGT_OK;
}

void wgt_gpu_release(wgt_context *ctx, wgt_buffer *b)
{
    if (!ctx || !b || !b->in_use) return;
    b->in_use = 0;
    ctx->stats.in_use_bytes -= b->size;
    if (b->graph_pins) { /* a graph replays into it: parked until the graph goes (wgt_gpu_unpin) */
        b->parked = 1;
        return;
    }
    b->next_free = ctx->free_list[b->size_class];
    ctx->free_list[b->size_class] = b;
}

void wgt_gpu_unpin(wgt_context *ctx, wgt_buffer *b)
{
    if (!b || b->graph_pins <= 0) return;
    if (--b->graph_pins || !b->parked) return;
    b->parked = 0;
    b->next_free = ctx->free_list[b->size_class];
    ctx->free_list[b->size_class] = b;
}

static void destroy_buffer(wgt_context *ctx, wgt_buffer *b)
{
    wgt_bind_cache_forget(ctx, b->id);
    wgt_W.BufferDestroy(b->handle);
    wgt_W.BufferRelease(b->handle);
    ctx->stats.allocated_bytes -= b->size;
    ctx->stats.buffers--;
    free(b);
}

wgt_status wgt_context_empty_cache(wgt_context *ctx)
{
    wgt_status st = wgt_ctx_check(ctx);
    if (st || ctx->cpu) return st;
    /* Recorded work may still name a cached buffer: submit it before destroying any. */
    if ((st = wgt_gpu_flush(ctx))) return st;
    for (int c = 0; c < WGT_POOL_CLASSES; c++) ctx->free_list[c] = NULL;
    int kept = 0;
    for (int i = 0; i < ctx->n_buffers; i++) {
        wgt_buffer *b = ctx->all_buffers[i];
        if (b->in_use || b->graph_pins) ctx->all_buffers[kept++] = b;
        else destroy_buffer(ctx, b);
    }
    ctx->n_buffers = kept;
    return WGT_OK;
}

void wgt_pool_destroy(wgt_context *ctx)
{
    for (int i = 0; i < ctx->n_buffers; i++) destroy_buffer(ctx, ctx->all_buffers[i]);
    free(ctx->all_buffers);
    ctx->all_buffers = NULL;
    ctx->n_buffers = ctx->cap_buffers = 0;
    for (int c = 0; c < WGT_POOL_CLASSES; c++) ctx->free_list[c] = NULL;
}
