/* Context creation: options and environment, adapter selection, the device, latched errors. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "gpu/gpu.h"

#define ADAPTER_TIMEOUT_MS 60000

double wgt_now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void copy_view(char *dst, size_t cap, WGPUStringView v)
{
    size_t n = 0;
    if (v.data) n = v.length == WGPU_STRLEN ? strlen(v.data) : v.length;
    if (n >= cap) n = cap - 1;
    if (n) memcpy(dst, v.data, n);
    dst[n] = 0;
}

static WGPUStringView view(const char *s) { return (WGPUStringView){s, s ? strlen(s) : 0}; }

wgt_status wgt_ctx_error(wgt_context *ctx, wgt_status status, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (ctx) snprintf(ctx->errmsg, sizeof ctx->errmsg, "%s", buf);
    return wgt_error(status, "%s", buf);
}

const char *wgt_context_errmsg(const wgt_context *ctx) { return ctx ? ctx->errmsg : ""; }

void wgt_ctx_poll(wgt_context *ctx) { wgt_W.InstanceProcessEvents(ctx->instance); }

wgt_status wgt_ctx_check(wgt_context *ctx)
{
    if (!ctx) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "the context is NULL");
    if (ctx->lost)
        return wgt_ctx_error(ctx, WGT_ERR_DEVICE_LOST,
                             "the WebGPU device was lost (%s): free this context and create a new one",
                             ctx->pending_message);
    if (ctx->pending_status != WGT_OK) {
        wgt_status st = ctx->pending_status;
        ctx->pending_status = WGT_OK;
        return wgt_ctx_error(ctx, st, "WebGPU reported an error: %s", ctx->pending_message);
    }
    return WGT_OK;
}

wgt_status wgt_context_health(const wgt_context *ctx)
{
    if (!ctx) return WGT_ERR_INVALID_ARGUMENT;
    return ctx->lost ? WGT_ERR_DEVICE_LOST : WGT_OK;
}

wgt_status wgt_gpu_wait_flag(wgt_context *ctx, volatile int *flag, int timeout_ms, const char *what)
{
    double deadline = timeout_ms < 0 ? 0 : wgt_now_seconds() + timeout_ms / 1000.0;
    while (!*flag) {
        wgt_W.InstanceProcessEvents(ctx->instance);
        if (*flag) break;
        if (ctx->lost) return wgt_ctx_check(ctx);
        if (timeout_ms >= 0 && wgt_now_seconds() > deadline)
            return wgt_ctx_error(ctx, WGT_ERR_TIMEOUT, "timed out after %d ms waiting for %s",
                                 timeout_ms, what);
        struct timespec ts = {0, 20000}; /* 20 us: callbacks arrive from other threads */
        nanosleep(&ts, NULL);
    }
    return WGT_OK;
}

/* ---- environment ---------------------------------------------------------------------------- */

static const struct {
    const char *name;
    wgt_backend backend;
    WGPUBackendType wgpu;
} backends[] = {
    {"vulkan", WGT_BACKEND_VULKAN, WGPUBackendType_Vulkan},
    {"metal", WGT_BACKEND_METAL, WGPUBackendType_Metal},
    {"d3d12", WGT_BACKEND_D3D12, WGPUBackendType_D3D12},
    {"opengl", WGT_BACKEND_OPENGL, WGPUBackendType_OpenGL},
    {"opengles", WGT_BACKEND_OPENGLES, WGPUBackendType_OpenGLES},
};
#define N_BACKENDS (int)(sizeof backends / sizeof backends[0])

static const char *backend_name(wgt_backend b)
{
    for (int i = 0; i < N_BACKENDS; i++)
        if (backends[i].backend == b) return backends[i].name;
    return b == WGT_BACKEND_DEFAULT ? "default" : b == WGT_BACKEND_CPU ? "cpu" : "other";
}

static wgt_backend from_wgpu_backend(WGPUBackendType t)
{
    for (int i = 0; i < N_BACKENDS; i++)
        if (backends[i].wgpu == t) return backends[i].backend;
    return WGT_BACKEND_OTHER;
}

static WGPUBackendType to_wgpu_backend(wgt_backend b)
{
    for (int i = 0; i < N_BACKENDS; i++)
        if (backends[i].backend == b) return backends[i].wgpu;
    return WGPUBackendType_Undefined;
}

static wgt_status env_flag(const char *var, int *out)
{
    const char *v = getenv(var);
    if (!v || !*v) return WGT_OK;
    if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes")) *out = 1;
    else if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no")) *out = 0;
    else
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s='%s' is not valid: use 1 or 0", var, v);
    return WGT_OK;
}

typedef struct resolved_options {
    const char *lib;
    wgt_backend backend;
    const char *adapter;
    int compat, default_limits, force_fallback, max_batch, debug;
    long bind_cache;
    const char *dump_dir, *kernel_dir;
} resolved_options;

static wgt_status resolve_options(const wgt_context_options *o, resolved_options *r)
{
    wgt_status st;
    memset(r, 0, sizeof *r);
    if (o) {
        r->lib = o->webgpu_lib;
        r->backend = o->backend;
        r->adapter = o->adapter;
        r->compat = o->compat;
        r->default_limits = o->default_limits;
        r->force_fallback = o->force_fallback;
        r->max_batch = o->max_batch;
        r->debug = o->debug;
        if ((unsigned)o->backend > WGT_BACKEND_CPU || o->backend == WGT_BACKEND_OTHER)
            return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_context_options.backend=%d is not a wgt_backend",
                             (int)o->backend);
        if (o->max_batch < 0)
            return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_context_options.max_batch=%d must be >= 0",
                             o->max_batch);
    }
    const char *v = getenv("WGT_BACKEND");
    if (r->backend == WGT_BACKEND_DEFAULT && v && *v) {
        int found = !strcasecmp(v, "cpu");
        if (found) r->backend = WGT_BACKEND_CPU;
        for (int i = 0; i < N_BACKENDS; i++)
            if (!strcasecmp(v, backends[i].name)) r->backend = backends[i].backend, found = 1;
        if (!found)
            return wgt_error(WGT_ERR_INVALID_ARGUMENT,
                             "WGT_BACKEND='%s' is not valid: use vulkan, metal, d3d12, opengl, opengles or cpu", v);
    }
    if (!r->adapter) {
        v = getenv("WGT_ADAPTER");
        if (v && *v) r->adapter = v;
    }
    if (!r->compat && (st = env_flag("WGT_COMPAT", &r->compat))) return st;
    if (!r->force_fallback && (st = env_flag("WGT_FORCE_FALLBACK_ADAPTER", &r->force_fallback))) return st;
    if (!r->debug && (st = env_flag("WGT_DEBUG", &r->debug))) return st;
    v = getenv("WGT_LIMITS");
    if (!r->default_limits && v && *v) {
        if (!strcasecmp(v, "default")) r->default_limits = 1;
        else if (strcasecmp(v, "adapter"))
            return wgt_error(WGT_ERR_INVALID_ARGUMENT, "WGT_LIMITS='%s' is not valid: use adapter or default", v);
    }
    v = getenv("WGT_MAX_BATCH");
    if (!r->max_batch && v && *v) {
        char *end;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (errno || *end || n < 1 || n > 65536)
            return wgt_error(WGT_ERR_INVALID_ARGUMENT,
                             "WGT_MAX_BATCH='%s' is not valid: use a whole number from 1 to 65536", v);
        r->max_batch = (int)n;
    }
    if (!r->max_batch) r->max_batch = 1024;
    v = getenv("WGT_BIND_CACHE");
    r->bind_cache = 8192;
    if (v && *v) {
        char *end;
        errno = 0;
        long n = strtol(v, &end, 10);
        if (errno || *end || n < 16 || n > 1 << 24)
            return wgt_error(WGT_ERR_INVALID_ARGUMENT,
                             "WGT_BIND_CACHE='%s' is not valid: use a whole number of bind groups from 16 to 16777216", v);
        r->bind_cache = n;
    }
    r->dump_dir = getenv("WGT_DUMP_SHADERS");
    if (r->dump_dir && *r->dump_dir) {
        struct stat sb;
        if (stat(r->dump_dir, &sb) != 0 && mkdir(r->dump_dir, 0777) != 0)
            return wgt_error(WGT_ERR_INVALID_ARGUMENT, "WGT_DUMP_SHADERS='%s': cannot create the folder (%s)",
                             r->dump_dir, strerror(errno));
        if (stat(r->dump_dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
            return wgt_error(WGT_ERR_INVALID_ARGUMENT, "WGT_DUMP_SHADERS='%s' is not a folder", r->dump_dir);
    }
    r->kernel_dir = getenv("WGT_KERNEL_DIR");
    if (r->kernel_dir && *r->kernel_dir) {
        struct stat sb;
        if (stat(r->kernel_dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
            return wgt_error(WGT_ERR_INVALID_ARGUMENT, "WGT_KERNEL_DIR='%s' is not a folder", r->kernel_dir);
    }
    /* Dawn's GL backends only offer compatibility-mode adapters. */
    if (r->backend == WGT_BACKEND_OPENGL || r->backend == WGT_BACKEND_OPENGLES) r->compat = 1;
    return WGT_OK;
}

/* ---- adapters ------------------------------------------------------------------------------- */

typedef struct adapter_request {
    volatile int done;
    WGPURequestAdapterStatus status;
    WGPUAdapter adapter;
    char message[512];
} adapter_request;

static void on_adapter(WGPURequestAdapterStatus status, WGPUAdapter adapter, WGPUStringView message,
                       void *u1, void *u2)
{
    adapter_request *r = u1;
    r->status = status;
    r->adapter = adapter;
    copy_view(r->message, sizeof r->message, message);
    r->done = 1;
}

static int is_null_adapter(WGPUAdapter a)
{
    WGPUAdapterInfo ai = {0};
    int null = 0;
    if (wgt_W.AdapterGetInfo(a, &ai) == WGPUStatus_Success) {
        null = ai.backendType == WGPUBackendType_Null;
        wgt_W.AdapterInfoFreeMembers(ai);
    }
    return null;
}

/* Dawn toggles asked of every adapter (Dawn only; an unknown toggle is ignored with a warning):
 * vulkan_enable_f16_on_nvidia: Dawn withholds shader-f16 on NVIDIA's Vulkan driver unless asked, and
 *   only an adapter toggle works (a device toggle comes too late: the adapter's features are fixed);
 * allow_unsafe_apis: experimental features, subgroup matrices among them, are hidden without it;
 * use_vulkan_memory_model: required by Dawn's Vulkan backend for subgroup matrices.
 * The last two only when the device may use subgroup matrices (not with the spec's default limits). */
static const char *const adapter_toggles[] = {"vulkan_enable_f16_on_nvidia", "allow_unsafe_apis",
                                              "use_vulkan_memory_model"};

static WGPUAdapter request_adapter(WGPUInstance instance, WGPUBackendType backend, int compat,
                                   int fallback, int baseline, char *why, size_t why_cap)
{
    adapter_request req = {0};
    WGPURequestAdapterOptions opts = {0};
    WGPUDawnTogglesDescriptor toggles = {{NULL, WGPUSType_DawnTogglesDescriptor}, baseline ? 1 : 3,
                                         adapter_toggles, 0, NULL};
    if (wgt_L.is_dawn) opts.nextInChain = &toggles.chain;
    opts.featureLevel = compat ? WGPUFeatureLevel_Compatibility : WGPUFeatureLevel_Core;
    opts.powerPreference = WGPUPowerPreference_HighPerformance;
    opts.forceFallbackAdapter = fallback;
    opts.backendType = backend;
    WGPURequestAdapterCallbackInfo cb = {0};
    cb.mode = WGPUCallbackMode_AllowProcessEvents;
    cb.callback = on_adapter;
    cb.userdata1 = &req;
    wgt_W.InstanceRequestAdapter(instance, &opts, cb);
    double deadline = wgt_now_seconds() + ADAPTER_TIMEOUT_MS / 1000.0;
    while (!req.done && wgt_now_seconds() < deadline) {
        wgt_W.InstanceProcessEvents(instance);
        if (!req.done) {
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        }
    }
    if (!req.done) {
        snprintf(why, why_cap, "no answer to the adapter request within %d s", ADAPTER_TIMEOUT_MS / 1000);
        return NULL;
    }
    if (req.status != WGPURequestAdapterStatus_Success || !req.adapter) {
        snprintf(why, why_cap, "%s", req.message[0] ? req.message : "no adapter");
        return NULL;
    }
    /* Dawn offers its Null backend when nothing else answers: it runs nothing, so it is no adapter. */
    if (is_null_adapter(req.adapter)) {
        wgt_W.AdapterRelease(req.adapter);
        snprintf(why, why_cap, "only Dawn's Null backend answered (no usable driver found)");
        return NULL;
    }
    return req.adapter;
}

static int adapter_is_cpu(const WGPUAdapterInfo *ai, const char *name)
{
    return ai->adapterType == WGPUAdapterType_CPU || strstr(name, "llvmpipe") ||
           strstr(name, "lavapipe") || strstr(name, "SwiftShader");
}

/* SwiftShader (Chromium's software adapter, and its Vulkan driver natively) runs a kernel that
 * contains a workgroup barrier as one coroutine per 4-lane subgroup per workgroup: see
 * wgt_gpu_avoid_barriers. Its name differs by path (native Vulkan: "SwiftShader Device (Subzero)";
 * a browser: architecture "swiftshader"), so every string is searched, case-insensitively. */
static int adapter_is_swiftshader(const wgt_adapter_info *i)
{
    const char *s[4] = {i->name, i->vendor, i->architecture, i->driver};
    for (int k = 0; k < 4; k++)
        for (const char *p = s[k]; *p; p++)
            if (strncasecmp(p, "swiftshader", 11) == 0) return 1;
    return 0;
}

static wgt_dtype from_component(WGPUSubgroupMatrixComponentType t)
{
    switch (t) {
    case WGPUSubgroupMatrixComponentType_F16: return WGT_F16;
    case WGPUSubgroupMatrixComponentType_U32: return WGT_U32;
    case WGPUSubgroupMatrixComponentType_I32: return WGT_I32;
    case WGPUSubgroupMatrixComponentType_U8: return WGT_U8;
    case WGPUSubgroupMatrixComponentType_I8: return WGT_I8;
    default: return WGT_F32;
    }
}

/* The subgroup-matrix shapes, an output struct chained to the adapter info (Dawn refuses the chain
 * when the adapter lacks the feature, hence only then). */
static void fill_subgroup_matrix_configs(WGPUAdapter adapter, wgt_adapter_info *out)
{
    if (!wgt_L.AdapterPropertiesSubgroupMatrixConfigsFreeMembers) return;
    WGPUAdapterPropertiesSubgroupMatrixConfigs sgm = {{NULL, WGPUSType_AdapterPropertiesSubgroupMatrixConfigs}, 0,
                                                      NULL};
    WGPUAdapterInfo ai = {0};
    ai.nextInChain = &sgm.chain;
    if (wgt_W.AdapterGetInfo(adapter, &ai) != WGPUStatus_Success) return;
    int cap = (int)(sizeof out->subgroup_matrix_configs / sizeof out->subgroup_matrix_configs[0]);
    size_t stride = wgt_abi->sgmatrix_config_bytes; /* the library's entry size (gpu.h) */
    if (stride < sizeof(WGPUSubgroupMatrixConfig)) stride = sizeof(WGPUSubgroupMatrixConfig);
    const unsigned char *at = (const unsigned char *)sgm.configs;
    if (getenv("WGT_SGMATRIX_DUMP")) { /* the raw words Dawn wrote, entry by entry */
        fprintf(stderr, "subgroup-matrix configs: %zu, %zu bytes each\n", sgm.configCount, stride);
        for (size_t i = 0; i < sgm.configCount; i++) {
            fprintf(stderr, "  [%zu]", i);
            for (size_t b = 0; b + 4 <= stride; b += 4) {
                uint32_t w;
                memcpy(&w, at + i * stride + b, 4);
                fprintf(stderr, " %u", w);
            }
            fprintf(stderr, "\n");
        }
    }
    for (size_t i = 0; i < sgm.configCount && out->n_subgroup_matrix_configs < cap; i++) {
        WGPUSubgroupMatrixConfig c;
        memcpy(&c, at + i * stride, sizeof c);
        int k = out->n_subgroup_matrix_configs++;
        out->subgroup_matrix_configs[k].component = from_component(c.componentType);
        out->subgroup_matrix_configs[k].result = from_component(c.resultComponentType);
        out->subgroup_matrix_configs[k].m = c.M;
        out->subgroup_matrix_configs[k].n = c.N;
        out->subgroup_matrix_configs[k].k = c.K;
    }
    wgt_L.AdapterPropertiesSubgroupMatrixConfigsFreeMembers(sgm);
    ai.nextInChain = NULL;
    wgt_W.AdapterInfoFreeMembers(ai);
}

static void fill_info(WGPUAdapter adapter, int compat, wgt_adapter_info *out)
{
    WGPUAdapterInfo ai = {0};
    memset(out, 0, sizeof *out);
    if (wgt_W.AdapterGetInfo(adapter, &ai) == WGPUStatus_Success) {
        copy_view(out->name, sizeof out->name, ai.device);
        copy_view(out->vendor, sizeof out->vendor, ai.vendor);
        copy_view(out->architecture, sizeof out->architecture, ai.architecture);
        copy_view(out->driver, sizeof out->driver, ai.description);
        out->backend = from_wgpu_backend(ai.backendType);
        out->is_cpu = adapter_is_cpu(&ai, out->name);
        out->limits.subgroup_min_size = ai.subgroupMinSize;
        out->limits.subgroup_max_size = ai.subgroupMaxSize;
        if (!out->name[0]) snprintf(out->name, sizeof out->name, "%s", out->driver);
        wgt_W.AdapterInfoFreeMembers(ai);
    }
    out->backend_name = backend_name(out->backend);
    out->compat = compat;
    out->has_f16 = wgt_W.AdapterHasFeature(adapter, wgt_abi->feature_shader_f16) != 0;
    out->has_subgroups = wgt_W.AdapterHasFeature(adapter, wgt_abi->feature_subgroups) != 0;
    out->has_timestamps = wgt_W.AdapterHasFeature(adapter, wgt_abi->feature_timestamp_query) != 0;
    out->has_subgroup_matrix = wgt_W.AdapterHasFeature(adapter, wgt_abi->feature_subgroup_matrix) != 0;
    if (out->has_subgroup_matrix) fill_subgroup_matrix_configs(adapter, out);
    snprintf(out->webgpu_lib, sizeof out->webgpu_lib, "%s", wgt_L.path);
    snprintf(out->webgpu_lib_description, sizeof out->webgpu_lib_description, "%s", wgt_L.description);
}

static void fill_limits(const WGPULimits *l, wgt_limits *o)
{
    o->max_buffer_size = l->maxBufferSize;
    o->max_storage_buffer_binding_size = l->maxStorageBufferBindingSize;
    o->max_uniform_buffer_binding_size = l->maxUniformBufferBindingSize;
    o->max_storage_buffers_per_shader_stage = l->maxStorageBuffersPerShaderStage;
    o->max_compute_workgroup_storage_size = l->maxComputeWorkgroupStorageSize;
    o->max_compute_invocations_per_workgroup = l->maxComputeInvocationsPerWorkgroup;
    o->max_compute_workgroup_size_x = l->maxComputeWorkgroupSizeX;
    o->max_compute_workgroup_size_y = l->maxComputeWorkgroupSizeY;
    o->max_compute_workgroup_size_z = l->maxComputeWorkgroupSizeZ;
    o->max_compute_workgroups_per_dimension = l->maxComputeWorkgroupsPerDimension;
    o->min_storage_buffer_offset_alignment = l->minStorageBufferOffsetAlignment;
    o->min_uniform_buffer_offset_alignment = l->minUniformBufferOffsetAlignment;
    o->max_bind_groups = l->maxBindGroups;
}

/* The candidates WGT_ADAPTER indexes: one adapter per backend that offers one, in a fixed order. */
typedef struct candidate {
    WGPUAdapter adapter;
    int compat;
} candidate;

static int gather_candidates(WGPUInstance instance, const resolved_options *r, candidate *out, int cap,
                             char *why, size_t why_cap)
{
    int n = 0;
    for (int i = 0; i < N_BACKENDS && n < cap; i++) {
        if (r->backend != WGT_BACKEND_DEFAULT && backends[i].backend != r->backend) continue;
        int compat = r->compat || backends[i].backend == WGT_BACKEND_OPENGL ||
                     backends[i].backend == WGT_BACKEND_OPENGLES;
        char w[512];
        WGPUAdapter a = request_adapter(instance, backends[i].wgpu, compat, r->force_fallback, r->default_limits, w,
                                        sizeof w);
        if (a) out[n++] = (candidate){a, compat};
        else if (why && r->backend != WGT_BACKEND_DEFAULT) snprintf(why, why_cap, "%s", w);
    }
    return n;
}

static WGPUInstance create_instance(void)
{
    WGPUInstanceDescriptor desc = {0};
    return wgt_W.CreateInstance(&desc);
}

static void ensure_egl_platform(void)
{
    /* llvmpipe's EGL needs a platform without a display server. */
    if (!getenv("EGL_PLATFORM")) setenv("EGL_PLATFORM", "surfaceless", 0);
}

static wgt_status choose_adapter(wgt_context *ctx, const resolved_options *r, WGPUAdapter *out, int *compat)
{
    char why[512] = "";
    if (r->adapter) {
        candidate c[N_BACKENDS];
        int n = gather_candidates(ctx->instance, r, c, N_BACKENDS, why, sizeof why);
        char *end;
        long idx = strtol(r->adapter, &end, 10);
        int pick = -1;
        if (*end == 0 && end != r->adapter) {
            if (idx < 0 || idx >= n) {
                for (int i = 0; i < n; i++) wgt_W.AdapterRelease(c[i].adapter);
                return wgt_error(WGT_ERR_INVALID_ARGUMENT,
                                 "WGT_ADAPTER=%ld: there are %d adapters (0..%d); `wgt info --adapters` lists them",
                                 idx, n, n - 1);
            }
            pick = (int)idx;
        } else {
            for (int i = 0; i < n && pick < 0; i++) {
                wgt_adapter_info info;
                fill_info(c[i].adapter, c[i].compat, &info);
                if (strcasestr(info.name, r->adapter) || strcasestr(info.driver, r->adapter) ||
                    strcasestr(info.vendor, r->adapter))
                    pick = i;
            }
            if (pick < 0) {
                for (int i = 0; i < n; i++) wgt_W.AdapterRelease(c[i].adapter);
                return wgt_error(WGT_ERR_NOT_FOUND,
                                 "WGT_ADAPTER='%s' matches no adapter's name; `wgt info --adapters` lists them",
                                 r->adapter);
            }
        }
        for (int i = 0; i < n; i++)
            if (i != pick) wgt_W.AdapterRelease(c[i].adapter);
        *out = c[pick].adapter;
        *compat = c[pick].compat;
        return WGT_OK;
    }
    if (r->backend != WGT_BACKEND_DEFAULT) {
        *out = request_adapter(ctx->instance, to_wgpu_backend(r->backend), r->compat, r->force_fallback,
                               r->default_limits, why, sizeof why);
        *compat = r->compat;
        if (!*out)
            return wgt_error(WGT_ERR_NO_DEVICE, "no %s adapter%s: %s", backend_name(r->backend),
                             r->compat ? " (compatibility mode)" : "", why);
        return WGT_OK;
    }
    /* Best adapter: the implementation's default choice, then the OpenGL ES compatibility path that
     * every Mesa install has (llvmpipe), so a machine without a GPU still finds one. */
    *out = request_adapter(ctx->instance, WGPUBackendType_Undefined, r->compat, r->force_fallback, r->default_limits,
                           why, sizeof why);
    *compat = r->compat;
    if (*out) return WGT_OK;
#if defined(__wasm__) /* the browser: navigator.gpu's one adapter, no OpenGL ES path or Mesa to install */
    return wgt_error(WGT_ERR_NO_DEVICE, "no WebGPU adapter: %s", why);
#endif
    char why_gl[512] = "";
    *out = request_adapter(ctx->instance, WGPUBackendType_OpenGLES, 1, r->force_fallback, r->default_limits, why_gl,
                           sizeof why_gl);
    *compat = 1;
    if (*out) return WGT_OK;
    return wgt_error(WGT_ERR_NO_DEVICE,
                     "no WebGPU adapter: default request: %s; OpenGL ES: %s. On a machine without a GPU, "
                     "install Mesa 25 lavapipe (`make deps`)", why, why_gl);
}

/* ---- device --------------------------------------------------------------------------------- */

typedef struct device_request {
    volatile int done;
    WGPURequestDeviceStatus status;
    WGPUDevice device;
    char message[1024];
} device_request;

static void on_device(WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message, void *u1,
                      void *u2)
{
    device_request *r = u1;
    r->status = status;
    r->device = device;
    copy_view(r->message, sizeof r->message, message);
    r->done = 1;
}

static void on_device_lost(const WGPUDevice *device, WGPUDeviceLostReason reason, WGPUStringView message,
                           void *u1, void *u2)
{
    wgt_context *ctx = u1;
    if (ctx->freeing || reason == WGPUDeviceLostReason_CallbackCancelled)
        return; /* our own wgt_context_free */
    copy_view(ctx->pending_message, sizeof ctx->pending_message, message);
    ctx->lost = 1;
}

void wgt_gpu_test_lose_device(wgt_context *ctx)
{
    if (!ctx || ctx->cpu || !ctx->device) return;
    wgt_W.DeviceDestroy(ctx->device);
    wgt_W.InstanceProcessEvents(ctx->instance); /* the lost callback latches the loss */
}

static void on_uncaptured_error(const WGPUDevice *device, WGPUErrorType type, WGPUStringView message,
                                void *u1, void *u2)
{
    wgt_context *ctx = u1;
    if (ctx->pending_status != WGT_OK) return; /* keep the first */
    copy_view(ctx->pending_message, sizeof ctx->pending_message, message);
    ctx->pending_status = type == WGPUErrorType_OutOfMemory ? WGT_ERR_OUT_OF_MEMORY : WGT_ERR_GPU;
    if (ctx->debug) fprintf(stderr, "wgt: WebGPU error: %s\n", ctx->pending_message);
}

static wgt_status create_device(wgt_context *ctx, const resolved_options *r)
{
    WGPUFeatureName features[4];
    size_t nf = 0;
    if (ctx->info.has_timestamps) features[nf++] = wgt_abi->feature_timestamp_query;
    if (ctx->info.has_f16) features[nf++] = wgt_abi->feature_shader_f16;
    if (ctx->info.has_subgroups) features[nf++] = wgt_abi->feature_subgroups;
    /* Subgroup matrices in WGSL need shader-f16 for f16 operands; never with the spec's defaults. */
    if (ctx->info.has_subgroup_matrix && !r->default_limits) features[nf++] = wgt_abi->feature_subgroup_matrix;

    WGPULimits limits = {0};
    int have_limits = wgt_W.AdapterGetLimits(ctx->adapter, &limits) == WGPUStatus_Success;

    /* WGT_DAWN_TOGGLES=a,b,c enables Dawn device toggles (e.g. disable_robustness, skip_validation):
     * Dawn-specific and passed through as given, for measurements and experiments. The subgroup-matrix
     * feature also wants the adapter's allow_unsafe_apis and use_vulkan_memory_model on the device. */
    const char *toggle_names[18];
    char toggles_buf[512] = "";
    size_t n_toggles = 0;
    if (nf && features[nf - 1] == wgt_abi->feature_subgroup_matrix) {
        toggle_names[n_toggles++] = "allow_unsafe_apis";
        toggle_names[n_toggles++] = "use_vulkan_memory_model";
    }
    /* Dawn clamps every buffer and array index a shader computes (robustness) unless told not to.
     * wgt's kernels bound their own accesses, and on the H200 the clamps cost more than anything
     * else measured there: GPT-2 small training 15,300 -> 21,000 tok/s, Qwen2.5-0.5B f16 prefill
     * 13,000 -> 23,000, its decode 636 -> 670, the matmul benchmark 16.6 -> 28.4 TFLOP/s
     * (bench/results/h200/robustness-2026-12-03/). So hardware adapters run without them; software
     * adapters (the tests' lavapipe and llvmpipe, SwiftShader) keep them, as does WGT_ROBUST=1. */
    const char *rv = getenv("WGT_ROBUST");
    if (wgt_L.is_dawn && !ctx->info.is_cpu && !(rv && !strcmp(rv, "1"))) toggle_names[n_toggles++] = "disable_robustness";
    const char *tv = getenv("WGT_DAWN_TOGGLES");
    if (tv && *tv) {
        if (!wgt_L.is_dawn)
            return wgt_error(WGT_ERR_INVALID_ARGUMENT, "WGT_DAWN_TOGGLES is set but %s is not Dawn: unset it",
                             wgt_L.path);
        snprintf(toggles_buf, sizeof toggles_buf, "%s", tv);
        for (char *save = NULL, *tok = strtok_r(toggles_buf, ",", &save); tok && n_toggles < 18;
             tok = strtok_r(NULL, ",", &save))
            if (*tok) toggle_names[n_toggles++] = tok;
    }
    WGPUDawnTogglesDescriptor toggles = {{NULL, WGPUSType_DawnTogglesDescriptor}, n_toggles, toggle_names, 0, NULL};

    WGPUDeviceDescriptor desc = {0};
    if (n_toggles) desc.nextInChain = &toggles.chain;
    desc.label = view("wgt");
    desc.requiredFeatureCount = nf;
    desc.requiredFeatures = features;
    desc.requiredLimits = (have_limits && !r->default_limits) ? &limits : NULL;
    desc.deviceLostCallbackInfo.mode = WGPUCallbackMode_AllowSpontaneous;
    desc.deviceLostCallbackInfo.callback = on_device_lost;
    desc.deviceLostCallbackInfo.userdata1 = ctx;
    desc.uncapturedErrorCallbackInfo.callback = on_uncaptured_error;
    desc.uncapturedErrorCallbackInfo.userdata1 = ctx;

    device_request req = {0};
    WGPURequestDeviceCallbackInfo cb = {0};
    cb.mode = WGPUCallbackMode_AllowProcessEvents;
    cb.callback = on_device;
    cb.userdata1 = &req;
    wgt_W.AdapterRequestDevice(ctx->adapter, &desc, cb);
    wgt_status st = wgt_gpu_wait_flag(ctx, &req.done, ADAPTER_TIMEOUT_MS, "the device");
    if (st) return st;
    if (req.status != WGPURequestDeviceStatus_Success || !req.device)
        return wgt_error(WGT_ERR_NO_DEVICE, "the adapter '%s' refused to create a device: %s", ctx->info.name,
                         req.message);
    ctx->device = req.device;
    ctx->queue = wgt_W.DeviceGetQueue(ctx->device);

    WGPULimits granted = {0};
    if (wgt_W.DeviceGetLimits(ctx->device, &granted) == WGPUStatus_Success) {
        uint32_t smin = ctx->info.limits.subgroup_min_size, smax = ctx->info.limits.subgroup_max_size;
        fill_limits(&granted, &ctx->info.limits);
        ctx->info.limits.subgroup_min_size = smin;
        ctx->info.limits.subgroup_max_size = smax;
    }
    ctx->info.has_f16 = wgt_W.DeviceHasFeature(ctx->device, wgt_abi->feature_shader_f16) != 0;
    ctx->info.has_subgroups = wgt_W.DeviceHasFeature(ctx->device, wgt_abi->feature_subgroups) != 0;
    ctx->info.has_timestamps = wgt_W.DeviceHasFeature(ctx->device, wgt_abi->feature_timestamp_query) != 0;
    ctx->info.has_subgroup_matrix = wgt_W.DeviceHasFeature(ctx->device, wgt_abi->feature_subgroup_matrix) != 0;
    if (!ctx->info.has_subgroup_matrix) ctx->info.n_subgroup_matrix_configs = 0;
    return WGT_OK;
}

static void log_info(const wgt_context *ctx)
{
    const wgt_adapter_info *i = &ctx->info;
    fprintf(stderr,
            "wgt: adapter '%s' (%s, %s%s), driver '%s', vendor '%s'\n"
            "wgt: library %s (%s)\n"
            "wgt: features: shader-f16 %s, subgroups %s (%u-%u), timestamps %s, subgroup matrix %s\n"
            "wgt: limits: buffer %llu, storage binding %llu, workgroup storage %u, invocations %u, "
            "max batch %d\n",
            i->name, i->backend_name, i->is_cpu ? "CPU" : "GPU", i->compat ? ", compatibility" : "",
            i->driver, i->vendor, i->webgpu_lib, i->webgpu_lib_description, i->has_f16 ? "yes" : "no",
            i->has_subgroups ? "yes" : "no", i->limits.subgroup_min_size, i->limits.subgroup_max_size,
            i->has_timestamps ? "yes" : "no", i->has_subgroup_matrix ? "yes" : "no",
            (unsigned long long)i->limits.max_buffer_size,
            (unsigned long long)i->limits.max_storage_buffer_binding_size,
            i->limits.max_compute_workgroup_storage_size, i->limits.max_compute_invocations_per_workgroup,
            ctx->max_batch);
}

/* A context without WebGPU: the reference implementation runs every op (tests, debugging). */
static wgt_status create_cpu_context(const resolved_options *r, wgt_context **out)
{
    wgt_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory creating a context");
    ctx->cpu = 1;
    ctx->debug = r->debug;
    ctx->max_batch = r->max_batch;
    ctx->bind_max = (size_t)r->bind_cache;
    wgt_adapter_info *i = &ctx->info;
    snprintf(i->name, sizeof i->name, "CPU reference");
    snprintf(i->driver, sizeof i->driver, "wgt %s plain C", wgt_version());
    i->backend = WGT_BACKEND_CPU;
    i->backend_name = "cpu";
    i->is_cpu = 1;
    i->has_f16 = 1;
    i->limits.max_buffer_size = i->limits.max_storage_buffer_binding_size = UINT64_MAX / 4;
    i->limits.min_storage_buffer_offset_alignment = 4;
    *out = ctx;
    return WGT_OK;
}

wgt_status wgt_context_create(const wgt_context_options *opts, wgt_context **out)
{
    if (!out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_context_create: out is NULL");
    *out = NULL;
    wgt_error_clear();
    resolved_options r;
    wgt_status st = resolve_options(opts, &r);
    if (st) return st;
    if (r.backend == WGT_BACKEND_CPU) return create_cpu_context(&r, out);
    if ((st = wgt_wgpu_load(r.lib))) return st;
    ensure_egl_platform();

    wgt_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory creating a context");
    ctx->debug = r.debug;
    ctx->max_batch = r.max_batch;
    ctx->bind_max = (size_t)r.bind_cache;
    if (r.dump_dir) snprintf(ctx->dump_dir, sizeof ctx->dump_dir, "%s", r.dump_dir);
    if (r.kernel_dir) snprintf(ctx->kernel_dir, sizeof ctx->kernel_dir, "%s", r.kernel_dir);
    ctx->instance = create_instance();
    if (!ctx->instance) {
        free(ctx);
        return wgt_error(WGT_ERR_NO_DEVICE, "the WebGPU library could not create an instance");
    }
    int compat = 0;
    if ((st = choose_adapter(ctx, &r, &ctx->adapter, &compat))) goto fail;
    fill_info(ctx->adapter, compat, &ctx->info);
    ctx->avoid_barriers = adapter_is_swiftshader(&ctx->info);
    if ((st = create_device(ctx, &r))) goto fail;
    if ((st = wgt_batch_init(ctx)) || (st = wgt_prof_init(ctx))) goto fail;
    if (ctx->debug) log_info(ctx);
    *out = ctx;
    return WGT_OK;
fail:
    {
        char msg[2048];
        snprintf(msg, sizeof msg, "%s", wgt_errmsg());
        wgt_context_free(ctx);
        return wgt_error(st, "%s", msg);
    }
}

void wgt_context_free(wgt_context *ctx)
{
    if (!ctx) return;
    if (ctx->cpu) {
        free(ctx);
        return;
    }
    if (ctx->device && !ctx->lost) {
        if (ctx->prof) wgt_context_profile_print(ctx, stderr);
        wgt_gpu_flush(ctx);
        wgt_context_sync(ctx, 10000);
    }
    wgt_capture_context_free(ctx);
    if (ctx->ops_state_free) ctx->ops_state_free(ctx, ctx->ops_state);
    ctx->ops_state = NULL;
    wgt_prof_destroy(ctx);
    wgt_batch_destroy(ctx);
    wgt_kernel_cache_destroy(ctx);
    wgt_pool_destroy(ctx);
    if (ctx->queue) wgt_W.QueueRelease(ctx->queue);
    if (ctx->device) {
        ctx->freeing = 1;
        wgt_W.DeviceDestroy(ctx->device);
        wgt_W.DeviceRelease(ctx->device);
        wgt_W.InstanceProcessEvents(ctx->instance); /* let the lost callback run while ctx lives */
    }
    if (ctx->adapter) wgt_W.AdapterRelease(ctx->adapter);
    if (ctx->instance) wgt_W.InstanceRelease(ctx->instance);
    free(ctx);
}

wgt_status wgt_context_adapter_info(const wgt_context *ctx, wgt_adapter_info *out)
{
    if (!ctx || !out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_context_adapter_info: NULL argument");
    *out = ctx->info;
    return WGT_OK;
}

wgt_status wgt_list_adapters(const wgt_context_options *opts, wgt_adapter_info *out, int cap, int *count)
{
    if (!count || (cap > 0 && !out))
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_list_adapters: NULL argument");
    resolved_options r;
    wgt_status st = resolve_options(opts, &r);
    if (st) return st;
    if ((st = wgt_wgpu_load(r.lib))) return st;
    ensure_egl_platform();
    WGPUInstance instance = create_instance();
    if (!instance) return wgt_error(WGT_ERR_NO_DEVICE, "the WebGPU library could not create an instance");
    candidate c[N_BACKENDS];
    int n = gather_candidates(instance, &r, c, N_BACKENDS, NULL, 0);
    for (int i = 0; i < n; i++) {
        if (i < cap) {
            fill_info(c[i].adapter, c[i].compat, &out[i]);
            WGPULimits l = {0};
            if (wgt_W.AdapterGetLimits(c[i].adapter, &l) == WGPUStatus_Success) {
                uint32_t smin = out[i].limits.subgroup_min_size, smax = out[i].limits.subgroup_max_size;
                fill_limits(&l, &out[i].limits);
                out[i].limits.subgroup_min_size = smin;
                out[i].limits.subgroup_max_size = smax;
            }
        }
        wgt_W.AdapterRelease(c[i].adapter);
    }
    wgt_W.InstanceRelease(instance);
    *count = n;
    return WGT_OK;
}

typedef struct work_done {
    volatile int done;
    WGPUQueueWorkDoneStatus status;
} work_done;

static void on_work_done(WGPUQueueWorkDoneStatus status, WGPUStringView message, void *u1, void *u2)
{
    work_done *w = u1;
    w->status = status;
    w->done = 1;
}

wgt_status wgt_context_sync(wgt_context *ctx, int timeout_ms)
{
    wgt_status st = wgt_ctx_check(ctx);
    if (st || ctx->cpu) return st;
    if ((st = wgt_gpu_flush(ctx))) return st;
    work_done w = {0};
    WGPUQueueWorkDoneCallbackInfo cb = {0};
    cb.mode = WGPUCallbackMode_AllowProcessEvents;
    cb.callback = on_work_done;
    cb.userdata1 = &w;
    wgt_W.QueueOnSubmittedWorkDone(ctx->queue, cb);
    if ((st = wgt_gpu_wait_flag(ctx, &w.done, timeout_ms, "submitted work to finish"))) return st;
    if (w.status != WGPUQueueWorkDoneStatus_Success)
        return wgt_ctx_error(ctx, WGT_ERR_GPU, "the queue reported an error while finishing its work");
    return wgt_ctx_check(ctx);
}

wgt_status wgt_context_memory_stats(const wgt_context *ctx, wgt_memory_stats *out)
{
    if (!ctx || !out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_context_memory_stats: NULL argument");
    *out = ctx->stats;
    out->bind_groups = ctx->bind_count;
    return WGT_OK;
}
