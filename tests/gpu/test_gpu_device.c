/* The device layer: pool reuse, pipeline and bind-group cache hits, a WGSL error reported with the
 * kernel's name and line, readback of odd sizes, split readbacks, batching past max_batch, and a
 * sentinel check that a kernel bound to part of a buffer writes nothing outside it. Every result is compared with values
 * computed here on the CPU. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "support/check.h"

static const char *add_one_src =
    "struct P { n: u32, pad0: u32, pad1: u32, pad2: u32 };\n"
    "@group(0) @binding(0) var<uniform> p: P;\n"
    "@group(0) @binding(1) var<storage, read_write> y: array<f32>;\n"
    "@compute @workgroup_size(64)\n"
    "fn main(@builtin(global_invocation_id) g: vec3<u32>) {\n"
    "    if (g.x < p.n) { y[g.x] = y[g.x] + 1.0; }\n"
    "}\n";

/* Writes i*2+1 to every element of its binding; sized with arrayLength, so an overrun of the bound
 * range would show as changed sentinels. */
static const char *fill_src =
    "@group(0) @binding(1) var<storage, read_write> y: array<u32>;\n"
    "@compute @workgroup_size(64)\n"
    "fn main(@builtin(global_invocation_id) g: vec3<u32>) {\n"
    "    if (g.x < arrayLength(&y)) { y[g.x] = g.x * 2u + 1u; }\n"
    "}\n";

static const char *broken_src =
    "@group(0) @binding(1) var<storage, read_write> y: array<f32>;\n"
    "@compute @workgroup_size(64)\n"
    "fn main(@builtin(global_invocation_id) g: vec3<u32>) {\n"
    "    y[g.x] = undefined_name + 1.0;\n"
    "}\n";

static void test_pool(wgt_context *ctx)
{
    wgt_memory_stats s0, s1;
    MUST(wgt_context_memory_stats(ctx, &s0));
    wgt_buffer *a, *b, *c;
    MUST(wgt_gpu_alloc(ctx, 1000, &a));
    uint64_t id = a->id;
    CHECK(a->size >= 1000, "size class %llu < 1000", (unsigned long long)a->size);
    wgt_gpu_release(ctx, a);
    MUST(wgt_gpu_alloc(ctx, 900, &b)); /* same class: the same buffer comes back */
    CHECK(b->id == id, "pool did not reuse the released buffer");
    MUST(wgt_gpu_alloc(ctx, 1000, &c)); /* b is in use: a new one */
    CHECK(c->id != id, "pool handed out a buffer in use");
    MUST(wgt_context_memory_stats(ctx, &s1));
    CHECK(s1.pool_hits == s0.pool_hits + 1 && s1.pool_misses == s0.pool_misses + 2, "hits %llu misses %llu",
          (unsigned long long)(s1.pool_hits - s0.pool_hits), (unsigned long long)(s1.pool_misses - s0.pool_misses));
    CHECK(s1.in_use_bytes == s0.in_use_bytes + b->size + c->size, "in-use accounting");
    CHECK(s1.peak_in_use_bytes >= s1.in_use_bytes, "peak below in use");
    wgt_gpu_release(ctx, b);
    wgt_gpu_release(ctx, c);
    MUST(wgt_context_memory_stats(ctx, &s1));
    CHECK(s1.in_use_bytes == s0.in_use_bytes, "released bytes still counted in use");
    CHECK(s1.allocated_bytes > s0.allocated_bytes, "released buffers should stay cached");
    MUST(wgt_context_empty_cache(ctx));
    MUST(wgt_context_memory_stats(ctx, &s1));
    CHECK(s1.allocated_bytes == s1.in_use_bytes, "empty_cache kept %llu cached bytes",
          (unsigned long long)(s1.allocated_bytes - s1.in_use_bytes));
    /* Too large for the device: a status with the numbers, not a crash. */
    wgt_buffer *huge = NULL;
    wgt_status st = wgt_gpu_alloc(ctx, ctx->info.limits.max_buffer_size + 1, &huge);
    CHECK(st == WGT_ERR_LIMIT && !huge, "oversized allocation gave %s", wgt_status_str(st));
}

static void test_compile_error(wgt_context *ctx)
{
    wgt_kernel *k = NULL;
    wgt_status st = wgt_gpu_kernel_source(ctx, "broken_kernel", broken_src, "main", NULL, 0, &k);
    CHECK(st == WGT_ERR_SHADER && !k, "broken WGSL gave %s", wgt_status_str(st));
    const char *msg = wgt_context_errmsg(ctx);
    CHECK(strstr(msg, "broken_kernel") != NULL, "message should name the kernel: %s", msg);
    CHECK(strstr(msg, "undefined_name") != NULL, "message should quote the error: %s", msg);
    CHECK(strstr(msg, "broken_kernel.wgsl:4:") != NULL, "message should give line 4: %s", msg);
    CHECK(wgt_context_health(ctx) == WGT_OK, "a compile error must not poison the context");
    st = wgt_gpu_kernel(ctx, "no_such_kernel", NULL, "main", NULL, 0, &k);
    CHECK(st == WGT_ERR_NOT_FOUND, "missing kernel gave %s", wgt_status_str(st));
}

static void test_cache_and_batching(wgt_context *ctx)
{
    wgt_memory_stats s0, s1;
    wgt_kernel *k1, *k2;
    MUST(wgt_context_memory_stats(ctx, &s0));
    MUST(wgt_gpu_kernel_source(ctx, "add_one", add_one_src, "main", NULL, 0, &k1));
    MUST(wgt_gpu_kernel_source(ctx, "add_one", add_one_src, "main", NULL, 0, &k2));
    MUST(wgt_context_memory_stats(ctx, &s1));
    CHECK(k1 == k2, "the same source compiled twice");
    CHECK(s1.pipelines == s0.pipelines + 1 && s1.pipeline_hits == s0.pipeline_hits + 1, "pipeline cache stats");

    enum { N = 1000, ROUNDS = 37 };
    float host[N];
    for (int i = 0; i < N; i++) host[i] = (float)i * 0.5f;
    wgt_buffer *y;
    MUST(wgt_gpu_alloc(ctx, sizeof host, &y));
    MUST(wgt_gpu_upload(ctx, y, 0, host, sizeof host));
    MUST(wgt_context_memory_stats(ctx, &s0));
    uint32_t params[4] = {N, 0, 0, 0};
    wgt_binding bind = {y, 0, sizeof host};
    for (int r = 0; r < ROUNDS; r++) MUST(wgt_gpu_dispatch(ctx, k1, params, sizeof params, &bind, 1, (N + 63) / 64, 1, 1));
    float back[N];
    MUST(wgt_gpu_download(ctx, y, 0, back, sizeof back));
    MUST(wgt_context_memory_stats(ctx, &s1));
    int bad = 0;
    for (int i = 0; i < N; i++) bad += back[i] != host[i] + ROUNDS;
    CHECK(bad == 0, "%d of %d elements wrong after %d dependent dispatches (e.g. %g, want %g)", bad, N, ROUNDS,
          back[0], host[0] + ROUNDS);
    CHECK(s1.dispatches - s0.dispatches == ROUNDS, "dispatch count");
    CHECK(s1.bind_group_hits - s0.bind_group_hits >= ROUNDS - 1, "bind group reused %llu times",
          (unsigned long long)(s1.bind_group_hits - s0.bind_group_hits));
    /* max_batch is 8 in this context: 37 dispatches need 5 submits (4 full batches + 1 at readback). */
    CHECK(s1.submits - s0.submits == (ROUNDS + 7) / 8, "%llu submits for %d dispatches with max_batch 8",
          (unsigned long long)(s1.submits - s0.submits), ROUNDS);
    wgt_gpu_release(ctx, y);
}

/* The bind-group cache is bounded (WGT_BIND_CACHE): an unbounded one held a descriptor set per
 * group ever made, and lavapipe maps one memfd a set, so a process that loaded 27 models crashed at
 * the kernel's 65,530 mappings. 300 groups (slices of one buffer) through a cache of 64, all in one
 * batch, so groups are released while recorded work still names them; then the same slices again. */
static void test_bind_cache_bound(void)
{
    setenv("WGT_BIND_CACHE", "64", 1);
    wgt_context *ctx;
    wgt_status st = wgt_context_create(NULL, &ctx);
    unsetenv("WGT_BIND_CACHE");
    MUST(st);
    enum { SLICES = 300, PER = 64 }; /* 64 floats: 256 bytes, the offset alignment */
    static float host[SLICES * PER], back[SLICES * PER];
    for (int i = 0; i < SLICES * PER; i++) host[i] = (float)(i % 1000);
    wgt_kernel *k;
    wgt_buffer *y;
    MUST(wgt_gpu_kernel_source(ctx, "add_one", add_one_src, "main", NULL, 0, &k));
    MUST(wgt_gpu_alloc(ctx, sizeof host, &y));
    MUST(wgt_gpu_upload(ctx, y, 0, host, sizeof host));
    uint32_t params[4] = {PER, 0, 0, 0};
    for (int pass = 0; pass < 2; pass++)
        for (int s = 0; s < SLICES; s++) {
            wgt_binding bind = {y, (uint64_t)s * PER * 4, PER * 4};
            MUST(wgt_gpu_dispatch(ctx, k, params, sizeof params, &bind, 1, 1, 1, 1));
        }
    MUST(wgt_gpu_download(ctx, y, 0, back, sizeof back));
    int bad = 0;
    for (int i = 0; i < SLICES * PER; i++) bad += back[i] != host[i] + 2;
    CHECK(bad == 0, "%d of %d elements wrong after 600 dispatches through a cache of 64 bind groups", bad,
          SLICES * PER);
    wgt_memory_stats s;
    MUST(wgt_context_memory_stats(ctx, &s));
    CHECK(s.bind_groups <= 64, "%llu bind groups cached with WGT_BIND_CACHE=64", (unsigned long long)s.bind_groups);
    CHECK(s.bind_group_evictions >= 600 - 64, "%llu evictions after 600 distinct-ish groups",
          (unsigned long long)s.bind_group_evictions);
    CHECK(s.bind_group_misses == 600, "%llu misses (each slice's group was evicted before its second use)",
          (unsigned long long)s.bind_group_misses);
    wgt_gpu_release(ctx, y);
    wgt_context_free(ctx);
    setenv("WGT_BIND_CACHE", "3", 1);
    st = wgt_context_create(NULL, &ctx);
    unsetenv("WGT_BIND_CACHE");
    CHECK(st == WGT_ERR_INVALID_ARGUMENT, "WGT_BIND_CACHE=3 gave status %d", (int)st);
    if (st == WGT_OK) wgt_context_free(ctx);
}

static void test_odd_readback(wgt_context *ctx)
{
    enum { BYTES = 4096 };
    unsigned char host[BYTES], back[BYTES];
    for (int i = 0; i < BYTES; i++) host[i] = (unsigned char)(i * 37 + 11);
    wgt_buffer *b;
    MUST(wgt_gpu_alloc(ctx, BYTES, &b));
    MUST(wgt_gpu_upload(ctx, b, 0, host, BYTES));
    const int offsets[] = {0, 1, 2, 3, 5, 255, 1023};
    const int sizes[] = {1, 2, 3, 5, 7, 13, 255, 1021};
    for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            memset(back, 0xEE, sizeof back);
            MUST(wgt_gpu_download(ctx, b, offsets[o], back, sizes[s]));
            CHECK(!memcmp(back, host + offsets[o], sizes[s]), "readback of %d bytes at %d differs", sizes[s],
                  offsets[o]);
            CHECK(back[sizes[s]] == 0xEE, "readback of %d bytes wrote past the destination", sizes[s]);
        }
    wgt_gpu_release(ctx, b);
}

/* Split readbacks as pipelined decode uses them: each step's begin is recorded after that step's
 * dispatch and ended one step later, some ended without data (a stop), one past the reused size;
 * the small buffers go back to the context and serve later readbacks. */
static void test_split_readback(wgt_context *ctx)
{
    enum { N = 128 };
    float host[N];
    for (int i = 0; i < N; i++) host[i] = (float)i;
    wgt_buffer *y;
    wgt_kernel *k;
    MUST(wgt_gpu_alloc(ctx, N * 4, &y));
    MUST(wgt_gpu_upload(ctx, y, 0, host, sizeof host));
    MUST(wgt_gpu_kernel_source(ctx, "add_one", add_one_src, "main", NULL, 0, &k));
    uint32_t p[4] = {N, 0, 0, 0};
    wgt_binding b = {y, 0, 0};
    wgt_readback *pending = NULL;
    int pending_step = -1;
    for (int step = 0; step < 12; step++) {
        MUST(wgt_gpu_dispatch(ctx, k, p, sizeof p, &b, 1, (N + 63) / 64, 1, 1));
        wgt_readback *rb;
        uint64_t bytes = step == 7 ? 300 : 4; /* element step (step 7: 75 elements from it) */
        MUST(wgt_gpu_readback_begin(ctx, y, (uint64_t)step * 4, bytes, &rb));
        MUST(wgt_gpu_flush(ctx));
        if (pending) {
            float got[75] = {0};
            int drop = pending_step == 4; /* ended without reading, as after a stop */
            MUST(wgt_gpu_readback_end(ctx, pending, drop ? NULL : got));
            /* element e after s + 1 dispatches: e + s + 1 */
            int n = pending_step == 7 ? 75 : 1;
            for (int i = 0; i < n && !drop; i++)
                CHECK(got[i] == (float)(pending_step + i + pending_step + 1), "split readback step %d element %d: %g, "
                      "want %d", pending_step, pending_step + i, got[i], 2 * pending_step + i + 1);
        }
        pending = rb, pending_step = step;
    }
    float last = 0;
    MUST(wgt_gpu_readback_end(ctx, pending, &last));
    CHECK(last == 11.0f + 12.0f, "split readback of the last step: %g, want 23", last);
    CHECK(ctx->n_readback_free >= 1 && ctx->n_readback_free <= 4, "%d small readback buffers kept for reuse",
          ctx->n_readback_free);
    wgt_gpu_release(ctx, y);
}

static void test_sentinels(wgt_context *ctx)
{
    /* One buffer: [guard 256 B][window of 1000 u32][guard]. The kernel is bound to the window only. */
    const uint32_t align = ctx->info.limits.min_storage_buffer_offset_alignment;
    const uint64_t guard = align > 256 ? align : 256, n = 1000, total = guard * 2 + n * 4;
    uint32_t *host = malloc(total), *back = malloc(total);
    for (uint64_t i = 0; i < total / 4; i++) host[i] = 0xDEADBEEFu;
    wgt_buffer *b;
    wgt_kernel *k;
    MUST(wgt_gpu_alloc(ctx, total, &b));
    MUST(wgt_gpu_upload(ctx, b, 0, host, (total + 3) / 4 * 4));
    MUST(wgt_gpu_kernel_source(ctx, "fill", fill_src, "main", NULL, 0, &k));
    wgt_binding bind = {b, guard, n * 4};
    MUST(wgt_gpu_dispatch(ctx, k, NULL, 0, &bind, 1, (uint32_t)((n + 63) / 64) + 4, 1, 1)); /* extra groups */
    MUST(wgt_gpu_download(ctx, b, 0, back, total));
    int inside = 0, outside = 0;
    for (uint64_t i = 0; i < total / 4; i++) {
        uint64_t byte = i * 4;
        if (byte >= guard && byte < guard + n * 4) inside += back[i] != (uint32_t)((byte - guard) / 4 * 2 + 1);
        else outside += back[i] != 0xDEADBEEFu;
    }
    CHECK(inside == 0, "%d window elements wrong", inside);
    CHECK(outside == 0, "%d sentinel words changed outside the bound window", outside);
    /* A misaligned or out-of-range binding is refused before it reaches WebGPU. */
    wgt_binding bad = {b, 4, 64};
    CHECK(wgt_gpu_dispatch(ctx, k, NULL, 0, &bad, 1, 1, 1, 1) == WGT_ERR_INTERNAL, "misaligned binding accepted");
    wgt_binding past = {b, 0, b->size + 256};
    CHECK(wgt_gpu_dispatch(ctx, k, NULL, 0, &past, 1, 1, 1, 1) == WGT_ERR_INTERNAL, "binding past the end accepted");
    CHECK(wgt_context_health(ctx) == WGT_OK, "refused bindings must not poison the context");
    wgt_gpu_release(ctx, b);
    free(host);
    free(back);
}

static void test_abi(wgt_context *ctx)
{
    /* The feature numbers of the ABI the loader detected, checked against what this library grants:
     * lavapipe through Vulkan offers all three, OpenGL ES compat none. A wrong table entry (or a
     * wrongly detected ABI) shows as a mismatch here. */
    int vulkan = ctx->info.backend == WGT_BACKEND_VULKAN;
    const wgt_wgpu_abi *abi = wgt_abi;
    CHECK(abi != NULL, "no ABI recorded after loading %s", wgt_L.path);
    if (!abi) return;
    if (strstr(ctx->info.name, "llvmpipe")) /* the H200 with the 2025 build refuses shader-f16 */
        CHECK(!!wgt_W.DeviceHasFeature(ctx->device, abi->feature_shader_f16) == vulkan, "ShaderF16 = 0x%X (%s)",
              (unsigned)abi->feature_shader_f16, abi->name);
    CHECK(!!wgt_W.DeviceHasFeature(ctx->device, abi->feature_subgroups) == vulkan, "Subgroups = 0x%X (%s)",
          (unsigned)abi->feature_subgroups, abi->name);
    CHECK(!!wgt_W.DeviceHasFeature(ctx->device, abi->feature_timestamp_query) == vulkan, "TimestampQuery = 0x%X (%s)",
          (unsigned)abi->feature_timestamp_query, abi->name);
    /* Dawn grants core-features-and-limits to every core device and to no compatibility one. */
    if (strstr(ctx->info.name, "llvmpipe"))
        CHECK(!!wgt_W.DeviceHasFeature(ctx->device, abi->feature_core_features_and_limits) == !ctx->info.compat,
              "CoreFeaturesAndLimits = 0x%X (%s)", (unsigned)abi->feature_core_features_and_limits, abi->name);
    CHECK(!!wgt_W.DeviceHasFeature(ctx->device, abi->feature_subgroup_matrix) == ctx->info.has_subgroup_matrix,
          "subgroup matrix 0x%X", (unsigned)abi->feature_subgroup_matrix);
    CHECK(!wgt_W.DeviceHasFeature(ctx->device, (WGPUFeatureName)0x7FFF), "an unknown feature is not granted");
    CHECK(ctx->info.webgpu_lib[0] && !strcmp(ctx->info.webgpu_lib, wgt_L.path), "adapter info names the library");
}

static void test_latched_error(wgt_context *ctx)
{
    /* Binding one range as both read-only and writable is a WebGPU validation error that surfaces
     * only when the batch is submitted: it must come back as a status from a later call, once. */
    wgt_kernel *k;
    wgt_buffer *b;
    MUST(wgt_gpu_kernel(ctx, "gpu_stream", NULL, "main", NULL, 0, &k));
    MUST(wgt_gpu_alloc(ctx, 4096, &b));
    uint32_t params[4] = {256, 0, 0, 0};
    wgt_binding bs[2] = {{b, 0, 4096}, {b, 0, 4096}};
    wgt_status st = wgt_gpu_dispatch(ctx, k, params, sizeof params, bs, 2, 1, 1, 1);
    if (st == WGT_OK) st = wgt_context_sync(ctx, 60000);
    CHECK(st == WGT_ERR_GPU, "aliased writable binding gave %s", wgt_status_str(st));
    CHECK(strstr(wgt_context_errmsg(ctx), "WebGPU reported an error") != NULL, "message: %s", wgt_context_errmsg(ctx));
    CHECK(wgt_context_sync(ctx, 60000) == WGT_OK, "the error should be reported once, then cleared");
    wgt_gpu_release(ctx, b);
}

int main(void)
{
    wgt_context_options opts = {0};
    opts.max_batch = 8;
    wgt_context *ctx;
    MUST(wgt_context_create(&opts, &ctx));
    test_pool(ctx);
    test_compile_error(ctx);
    test_cache_and_batching(ctx);
    test_odd_readback(ctx);
    test_split_readback(ctx);
    test_sentinels(ctx);
    test_abi(ctx);
    test_latched_error(ctx);
    double gbps;
    MUST(wgt_context_selfcheck(ctx, 1 << 20, &gbps));
    CHECK(wgt_context_health(ctx) == WGT_OK, "context unhealthy at the end: %s", wgt_context_errmsg(ctx));
    wgt_context_free(ctx);
    test_bind_cache_bound();
    return test_finish("test_gpu_device");
}
