/* The self-check (`wgt info`) and the device micro-benchmarks (`wgt bench --device`). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"

typedef struct stream_params {
    uint32_t n;
    float a, b;
    uint32_t pad;
} stream_params;

/* Workgroups for n items of 256 per group, spread over x and y (x at most 65535 per dimension). */
static void grid(uint64_t groups, uint32_t *gx, uint32_t *gy)
{
    if (groups <= 65535) {
        *gx = (uint32_t)groups;
        *gy = 1;
    } else {
        *gx = 65535;
        *gy = (uint32_t)((groups + 65534) / 65535);
    }
}

static int stream_items = 4;      /* vec4s per invocation of the kernel in use */
static uint32_t stream_wg = 256; /* its workgroup size */

static wgt_status stream_kernel(wgt_context *ctx, int items, wgt_kernel **k)
{
    /* 256, or the largest power of two the device allows (compatibility mode's default is 128) */
    uint32_t lim = ctx->info.limits.max_compute_invocations_per_workgroup, x = ctx->info.limits.max_compute_workgroup_size_x;
    if (x && (!lim || x < lim)) lim = x;
    stream_wg = 256;
    while (lim && stream_wg > lim && stream_wg > 1) stream_wg /= 2;
    wgt_kconst c[2] = {{"ITEMS", items}, {"WG", stream_wg}};
    stream_items = items;
    return wgt_gpu_kernel(ctx, "gpu_stream", NULL, "main", c, 2, k);
}

static wgt_status stream(wgt_context *ctx, wgt_kernel *k, wgt_buffer *x, wgt_buffer *y, uint64_t vec4s, float a,
                         float b)
{
    stream_params p = {(uint32_t)vec4s, a, b, 0};
    uint32_t gx, gy;
    uint64_t per_group = (uint64_t)stream_wg * (uint64_t)stream_items;
    grid((vec4s + per_group - 1) / per_group, &gx, &gy);
    wgt_binding bs[2] = {{x, 0, vec4s * 16}, {y, 0, vec4s * 16}};
    return wgt_gpu_dispatch(ctx, k, &p, sizeof p, bs, 2, gx, gy, 1);
}

wgt_status wgt_context_selfcheck(wgt_context *ctx, size_t n, double *gbps)
{
    wgt_status st = wgt_ctx_check(ctx);
    if (st) return st;
    if (ctx->cpu) return wgt_ctx_error(ctx, WGT_ERR_UNSUPPORTED, "the self-check needs a WebGPU device, not the CPU reference");
    if (n == 0) n = 1;
    uint64_t vec4s = (n + 3) / 4;
    uint64_t max_vec4s = ctx->info.limits.max_storage_buffer_binding_size / 16;
    if (vec4s > max_vec4s) vec4s = max_vec4s, n = vec4s * 4;
    float *host = malloc(vec4s * 16), *back = malloc(vec4s * 16);
    wgt_buffer *x = NULL, *y = NULL;
    wgt_kernel *k;
    if (!host || !back) {
        st = wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory for the self-check");
        goto done;
    }
    for (uint64_t i = 0; i < vec4s * 4; i++) host[i] = (float)((i * 2654435761u) % 10007) / 1000.0f - 5.0f;
    if ((st = stream_kernel(ctx, 4, &k)) || (st = wgt_gpu_alloc(ctx, vec4s * 16, &x)) ||
        (st = wgt_gpu_alloc(ctx, vec4s * 16, &y)) || (st = wgt_gpu_upload(ctx, x, 0, host, vec4s * 16)))
        goto done;
    const float a = 1.5f, b = -0.25f;
    if ((st = stream(ctx, k, x, y, vec4s, a, b)) || (st = wgt_context_sync(ctx, -1))) goto done;
    const int reps = 5;
    double t0 = wgt_now_seconds();
    for (int r = 0; r < reps && !st; r++) st = stream(ctx, k, x, y, vec4s, a, b);
    if (st || (st = wgt_context_sync(ctx, -1))) goto done;
    double dt = wgt_now_seconds() - t0;
    if (gbps) *gbps = reps * 2.0 * vec4s * 16 / dt / 1e9;
    if ((st = wgt_gpu_download(ctx, y, 0, back, n * sizeof(float)))) goto done;
    for (size_t i = 0; i < n; i++) {
        float want = host[i] * a + b;
        if (!(fabsf(back[i] - want) <= 1e-6f * fabsf(want) + 1e-6f)) {
            st = wgt_ctx_error(ctx, WGT_ERR_INTERNAL,
                               "self-check mismatch at element %zu of %zu: device %.9g, CPU %.9g: the adapter "
                               "computes wrong results", i, n, back[i], want);
            goto done;
        }
    }
done:
    wgt_gpu_release(ctx, x);
    wgt_gpu_release(ctx, y);
    free(host);
    free(back);
    return st;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Record `count` tiny dispatches; return host seconds spent recording and total seconds to done. */
static wgt_status dispatch_loop(wgt_context *ctx, wgt_kernel *k, wgt_buffer *x, wgt_buffer *y, int count,
                                int pass_each, double *record_s, double *total_s)
{
    wgt_status st = wgt_context_sync(ctx, -1);
    if (st) return st;
    double t0 = wgt_now_seconds();
    for (int i = 0; i < count && !st; i++) {
        st = stream(ctx, k, x, y, 64, 1.0f, 1.0f);
        if (pass_each && ctx->pass) {
            wgt_W.ComputePassEncoderEnd(ctx->pass);
            wgt_W.ComputePassEncoderRelease(ctx->pass);
            ctx->pass = NULL;
        }
    }
    double t1 = wgt_now_seconds();
    if (!st) st = wgt_context_sync(ctx, -1);
    *record_s = t1 - t0;
    *total_s = wgt_now_seconds() - t0;
    return st;
}

wgt_status wgt_context_bench(wgt_context *ctx, uint64_t max_bytes, wgt_device_bench *out)
{
    wgt_status st = wgt_ctx_check(ctx);
    if (st) return st;
    if (!out) return wgt_ctx_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_context_bench: out is NULL");
    if (ctx->cpu) return wgt_ctx_error(ctx, WGT_ERR_UNSUPPORTED, "the device benchmark needs a WebGPU device");
    memset(out, 0, sizeof *out);
    uint64_t cap = ctx->info.limits.max_storage_buffer_binding_size & ~255ull;
    if (max_bytes == 0 || max_bytes > cap) max_bytes = cap;
    wgt_kernel *k;
    wgt_buffer *x = NULL, *y = NULL, *stamps = NULL;
    WGPUQuerySet qs = NULL;
    WGPUBuffer resolve = NULL;
    if ((st = stream_kernel(ctx, 4, &k)) || (st = wgt_gpu_alloc(ctx, 4096, &x)) ||
        (st = wgt_gpu_alloc(ctx, 4096, &y)) || (st = wgt_gpu_fill_zero(ctx, x, 0, 4096)))
        goto done;

    /* Time-stamped passes for the bandwidth figures where the device has timestamps. */
    if (ctx->info.has_timestamps) {
        WGPUQuerySetDescriptor qd = {NULL, {"wgt bench", WGPU_STRLEN}, WGPUQueryType_Timestamp, 2};
        qs = wgt_W.DeviceCreateQuerySet(ctx->device, &qd);
        WGPUBufferDescriptor rd = {0};
        rd.usage = WGPUBufferUsage_QueryResolve | WGPUBufferUsage_CopySrc;
        rd.size = 256;
        resolve = wgt_W.DeviceCreateBuffer(ctx->device, &rd);
        if ((st = wgt_gpu_alloc(ctx, 256, &stamps))) goto done;
    }
    /* Warm-up: a few hundred milliseconds of streaming lift the clocks before anything is timed. */
    {
        wgt_buffer *wx = NULL, *wy = NULL;
        uint64_t wb = max_bytes < (64u << 20) ? max_bytes : (64u << 20);
        if (!(st = wgt_gpu_alloc(ctx, wb, &wx)) && !(st = wgt_gpu_alloc(ctx, wb, &wy)) &&
            !(st = wgt_gpu_fill_zero(ctx, wx, 0, wb))) {
            double t0 = wgt_now_seconds();
            while (!st && wgt_now_seconds() - t0 < (ctx->info.is_cpu ? 0.05 : 0.5)) {
                for (int r = 0; r < 20 && !st; r++) st = stream(ctx, k, wx, wy, wb / 16, 1.0f, 0.5f);
                if (!st) st = wgt_context_sync(ctx, -1);
            }
        }
        wgt_gpu_release(ctx, wx);
        wgt_gpu_release(ctx, wy);
        if (st) goto done;
    }
    /* Dispatch cost: as many as one batch holds, so submits do not dominate. */
    int count = ctx->max_batch < 2000 ? ctx->max_batch : 2000;
    double rec, tot;
    if ((st = dispatch_loop(ctx, k, x, y, 50, 0, &rec, &tot))) goto done; /* warm-up */
    if ((st = dispatch_loop(ctx, k, x, y, count, 0, &rec, &tot))) goto done;
    out->dispatch_record_us = rec / count * 1e6;
    out->dispatch_total_us = tot / count * 1e6;
    if ((st = dispatch_loop(ctx, k, x, y, count, 1, &rec, &tot))) goto done;
    out->pass_record_us = rec / count * 1e6;
    out->pass_total_us = tot / count * 1e6;

    enum { LAT = 101 };
    double lat[LAT];
    for (int i = 0; i < LAT && !st; i++) {
        double t0 = wgt_now_seconds();
        if (!(st = stream(ctx, k, x, y, 64, 1.0f, 1.0f))) st = wgt_context_sync(ctx, -1);
        lat[i] = wgt_now_seconds() - t0;
    }
    if (st) goto done;
    qsort(lat, LAT, sizeof lat[0], cmp_double);
    out->submit_wait_us = lat[LAT / 2] * 1e6;
    wgt_gpu_release(ctx, x);
    wgt_gpu_release(ctx, y);
    x = y = NULL;

    for (uint64_t bytes = 1 << 20; bytes <= max_bytes && out->n_sizes < 24; bytes *= 4) {
        if ((st = wgt_gpu_alloc(ctx, bytes, &x)) || (st = wgt_gpu_alloc(ctx, bytes, &y)) ||
            (st = wgt_gpu_fill_zero(ctx, x, 0, bytes)))
            goto done;
        uint64_t vec4s = bytes / 16;
        if ((st = stream(ctx, k, x, y, vec4s, 1.0f, 0.5f)) || (st = wgt_context_sync(ctx, -1))) goto done;
        /* Enough repetitions for ~32 GB of traffic on a fast device, at least 3. */
        int reps = (int)(16e9 / bytes);
        if (reps < 3) reps = 3;
        if (reps > 2000) reps = 2000;
        if (ctx->info.is_cpu && reps > 5) reps = 5;
        double best = 0;
        const int variants[3] = {1, 4, 8}; /* vec4s per invocation */
        if (reps > ctx->max_batch - 1) reps = ctx->max_batch - 1; /* one timed pass per trial */
        for (int v = 0; v < 3; v++) {
            if ((st = stream_kernel(ctx, variants[v], &k))) goto done;
            for (int trial = 0; trial < 3; trial++) { /* the best of three: clocks ramp, neighbours vary */
                double t0 = wgt_now_seconds(), seconds;
                if (qs && (st = wgt_gpu_timed_pass_begin(ctx, qs))) goto done;
                for (int r = 0; r < reps && !st; r++) st = stream(ctx, k, x, y, vec4s, 1.0f, 0.5f);
                if (st) goto done;
                if (qs) { /* device time between the pass's start and end */
                    uint64_t ns[2];
                    if ((st = wgt_gpu_timed_pass_end(ctx, qs, resolve, stamps)) ||
                        (st = wgt_gpu_download(ctx, stamps, 0, ns, sizeof ns)))
                        goto done;
                    seconds = ns[1] > ns[0] ? (ns[1] - ns[0]) * 1e-9 : 0;
                } else {
                    if ((st = wgt_context_sync(ctx, -1))) goto done;
                    seconds = wgt_now_seconds() - t0;
                }
                double gbps = seconds > 0 ? reps * 2.0 * bytes / seconds / 1e9 : 0;
                if (gbps > best) best = gbps, out->items[out->n_sizes] = variants[v];
            }
            if (ctx->info.is_cpu) break; /* one variant is enough on a CPU adapter */
        }
        out->bytes[out->n_sizes] = bytes;
        out->gbps[out->n_sizes] = best;
        out->n_sizes++;
        wgt_gpu_release(ctx, x);
        wgt_gpu_release(ctx, y);
        x = y = NULL;
        if (bytes > max_bytes / 4 && bytes < max_bytes) bytes = max_bytes / 4; /* end on max_bytes */
    }
done:
    wgt_gpu_release(ctx, x);
    wgt_gpu_release(ctx, y);
    wgt_gpu_release(ctx, stamps);
    if (qs) {
        wgt_gpu_flush(ctx);
        wgt_context_sync(ctx, -1);
        wgt_W.QuerySetDestroy(qs);
        wgt_W.QuerySetRelease(qs);
    }
    if (resolve) {
        wgt_W.BufferDestroy(resolve);
        wgt_W.BufferRelease(resolve);
    }
    return st;
}
