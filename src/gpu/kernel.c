/* Kernels: WGSL source (embedded, or WGT_KERNEL_DIR while developing), compiled inside an error
 * scope so a WGSL error names the kernel and the line, and cached by source and constants. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"

typedef struct embedded_kernel {
    const char *name;
    const char *source;
} embedded_kernel;
extern const embedded_kernel wgt_embedded_kernels[];

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc(n + 1) : NULL;
    if (s && fread(s, 1, n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

/* Sources read from WGT_KERNEL_DIR are kept for the life of the process (a handful, small). */
static struct disk_kernel {
    char name[64];
    char *source;
} disk_kernels[128];
static int n_disk_kernels;

static const char *kernel_text(const char *dir, const char *name)
{
    if (dir && *dir) {
        for (int i = 0; i < n_disk_kernels; i++)
            if (!strcmp(disk_kernels[i].name, name)) return disk_kernels[i].source;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.wgsl", dir, name);
        char *s = read_file(path);
        if (s && n_disk_kernels < 128) {
            snprintf(disk_kernels[n_disk_kernels].name, 64, "%s", name);
            disk_kernels[n_disk_kernels++].source = s;
            return s;
        }
        free(s);
    }
    for (const embedded_kernel *k = wgt_embedded_kernels; k->name; k++)
        if (!strcmp(k->name, name)) return k->source;
    return NULL;
}

const char *wgt_gpu_kernel_text(const char *name) { return kernel_text(getenv("WGT_KERNEL_DIR"), name); }

/* Derive the bind-group layout from the declarations: @binding(N) var<uniform> or
 * var<storage, read|read_write>. Bindings must be 0 (uniform, optional) then 1..n. */
static wgt_status parse_bindings(wgt_context *ctx, const char *label, const char *src, wgt_kernel *k)
{
    int kinds[WGT_MAX_BINDINGS + 1] = {0}; /* 0 none, 1 uniform, 2 read, 3 read_write */
    int max_binding = -1;
    for (const char *p = strstr(src, "@binding("); p; p = strstr(p + 1, "@binding(")) {
        int n = atoi(p + 9);
        const char *var = strstr(p, "var<");
        if (!var) break;
        if (n < 0 || n > WGT_MAX_BINDINGS)
            return wgt_ctx_error(ctx, WGT_ERR_SHADER, "kernel '%s': @binding(%d) is past the %d bindings wgt supports",
                                 label, n, WGT_MAX_BINDINGS);
        const char *kind = var + 4;
        if (!strncmp(kind, "uniform", 7)) kinds[n] = 1;
        else if (!strncmp(kind, "storage", 7)) {
            const char *close = strchr(kind, '>');
            const char *rw = strstr(kind, "read_write");
            kinds[n] = (rw && close && rw < close) ? 3 : 2;
        } else
            return wgt_ctx_error(ctx, WGT_ERR_SHADER, "kernel '%s': @binding(%d) is neither a uniform nor a storage buffer",
                                 label, n);
        if (n > max_binding) max_binding = n;
    }
    k->has_uniform = kinds[0] == 1;
    if (kinds[0] > 1)
        return wgt_ctx_error(ctx, WGT_ERR_SHADER, "kernel '%s': @binding(0) must be the uniform parameters", label);
    k->n_storage = max_binding < 1 ? 0 : max_binding;
    k->readonly_mask = 0;
    for (int i = 1; i <= k->n_storage; i++) {
        if (kinds[i] < 2)
            return wgt_ctx_error(ctx, WGT_ERR_SHADER, "kernel '%s': storage bindings must be numbered 1..%d without gaps",
                                 label, k->n_storage);
        if (kinds[i] == 2) k->readonly_mask |= 1u << (i - 1);
    }
    return WGT_OK;
}

typedef struct scope_wait {
    volatile int done;
    WGPUErrorType type;
    char message[4096];
} scope_wait;

static void on_scope(WGPUPopErrorScopeStatus status, WGPUErrorType type, WGPUStringView message, void *u1, void *u2)
{
    scope_wait *w = u1;
    w->type = status == WGPUPopErrorScopeStatus_Success ? type : WGPUErrorType_Unknown;
    size_t n = message.data ? (message.length == WGPU_STRLEN ? strlen(message.data) : message.length) : 0;
    if (n >= sizeof w->message) n = sizeof w->message - 1;
    if (n) memcpy(w->message, message.data, n);
    w->message[n] = 0;
    w->done = 1;
}

typedef struct info_wait {
    volatile int done;
    char text[4096];
    int line_shift;
    const char *label;
} info_wait;

static void on_info(WGPUCompilationInfoRequestStatus status, const WGPUCompilationInfo *info, void *u1, void *u2)
{
    info_wait *w = u1;
    size_t used = 0;
    for (size_t i = 0; info && i < info->messageCount && used < sizeof w->text - 1; i++) {
        const WGPUCompilationMessage *m = &info->messages[i];
        if (m->type != WGPUCompilationMessageType_Error) continue;
        const char *s = m->message.data ? m->message.data : "";
        size_t n = m->message.length == WGPU_STRLEN ? strlen(s) : m->message.length;
        long line = (long)m->lineNum - w->line_shift;
        used += snprintf(w->text + used, sizeof w->text - used, "%s%s.wgsl:%ld:%llu: %.*s", used ? "; " : "",
                         w->label, line, (unsigned long long)m->linePos, (int)n, s);
    }
    w->done = 1;
}

static wgt_status pop_scope(wgt_context *ctx, scope_wait *w)
{
    WGPUPopErrorScopeCallbackInfo cb = {0};
    cb.mode = WGPUCallbackMode_AllowProcessEvents;
    cb.callback = on_scope;
    cb.userdata1 = w;
    wgt_W.DevicePopErrorScope(ctx->device, cb);
    return wgt_gpu_wait_flag(ctx, &w->done, 120000, "a kernel to compile");
}

static void dump_shader(wgt_context *ctx, const char *label, uint64_t hash, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s-%016llx.wgsl", ctx->dump_dir, label, (unsigned long long)hash);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static wgt_status build(wgt_context *ctx, const char *label, const char *text, int line_shift, const char *entry,
                        const wgt_kconst *constants, int n_constants, wgt_kernel *k)
{
    wgt_status st = parse_bindings(ctx, label, text, k);
    if (st) return st;
    snprintf(k->name, sizeof k->name, "%s", label);

    WGPUShaderSourceWGSL wgsl = {{NULL, WGPUSType_ShaderSourceWGSL}, {text, strlen(text)}};
    WGPUShaderModuleDescriptor md = {(WGPUChainedStruct *)&wgsl, {label, strlen(label)}};
    wgt_W.DevicePushErrorScope(ctx->device, WGPUErrorFilter_Validation);
    WGPUShaderModule module = wgt_W.DeviceCreateShaderModule(ctx->device, &md);

    WGPUBindGroupLayoutEntry entries[WGT_MAX_BINDINGS + 1];
    int ne = 0;
    memset(entries, 0, sizeof entries);
    if (k->has_uniform) {
        entries[ne].binding = 0;
        entries[ne].visibility = WGPUShaderStage_Compute;
        entries[ne].buffer.type = WGPUBufferBindingType_Uniform;
        entries[ne].buffer.hasDynamicOffset = 1;
        ne++;
    }
    for (int i = 1; i <= k->n_storage; i++, ne++) {
        entries[ne].binding = i;
        entries[ne].visibility = WGPUShaderStage_Compute;
        entries[ne].buffer.type = (k->readonly_mask >> (i - 1) & 1) ? WGPUBufferBindingType_ReadOnlyStorage
                                                                     : WGPUBufferBindingType_Storage;
    }
    WGPUBindGroupLayoutDescriptor bld = {NULL, {label, strlen(label)}, (size_t)ne, entries};
    k->layout = wgt_W.DeviceCreateBindGroupLayout(ctx->device, &bld);
    WGPUPipelineLayoutDescriptor pld = {NULL, {label, strlen(label)}, 1, &k->layout, 0};
    k->pipeline_layout = wgt_W.DeviceCreatePipelineLayout(ctx->device, &pld);

    WGPUConstantEntry ce[16];
    if (n_constants > 16) n_constants = 16;
    for (int i = 0; i < n_constants; i++)
        ce[i] = (WGPUConstantEntry){NULL, {constants[i].name, strlen(constants[i].name)}, constants[i].value};
    WGPUComputePipelineDescriptor pd = {0};
    pd.label = (WGPUStringView){label, strlen(label)};
    pd.layout = k->pipeline_layout;
    pd.compute.module = module;
    pd.compute.entryPoint = (WGPUStringView){entry, strlen(entry)};
    pd.compute.constantCount = n_constants;
    pd.compute.constants = ce;
    k->pipeline = wgt_W.DeviceCreateComputePipeline(ctx->device, &pd);

    scope_wait w = {0};
    st = pop_scope(ctx, &w);
    if (!st && w.type != WGPUErrorType_NoError) {
        info_wait iw = {0};
        iw.line_shift = line_shift;
        iw.label = label;
        WGPUCompilationInfoCallbackInfo cb = {0};
        cb.mode = WGPUCallbackMode_AllowProcessEvents;
        cb.callback = on_info;
        cb.userdata1 = &iw;
        wgt_W.ShaderModuleGetCompilationInfo(module, cb);
        wgt_gpu_wait_flag(ctx, &iw.done, 10000, "compilation messages");
        st = wgt_ctx_error(ctx, WGT_ERR_SHADER, "kernel '%s' (entry '%s') failed to compile: %s%s%s", label, entry,
                           iw.text[0] ? iw.text : "", iw.text[0] ? " | " : "", w.message);
    }
    wgt_W.ShaderModuleRelease(module);
    if (st) {
        if (k->pipeline) wgt_W.ComputePipelineRelease(k->pipeline);
        if (k->pipeline_layout) wgt_W.PipelineLayoutRelease(k->pipeline_layout);
        if (k->layout) wgt_W.BindGroupLayoutRelease(k->layout);
        memset(k, 0, sizeof *k);
    }
    return st;
}

static wgt_status lookup_or_build(wgt_context *ctx, const char *label, const char *prelude, const char *body,
                                  const char *entry, const wgt_kconst *constants, int n_constants, wgt_kernel **out)
{
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv1a(h, label, strlen(label) + 1);
    h = fnv1a(h, prelude, strlen(prelude) + 1);
    h = fnv1a(h, body, strlen(body) + 1);
    h = fnv1a(h, entry, strlen(entry) + 1);
    for (int i = 0; i < n_constants; i++) {
        h = fnv1a(h, constants[i].name, strlen(constants[i].name) + 1);
        h = fnv1a(h, &constants[i].value, sizeof constants[i].value);
    }
    /* The key holds everything hashed, so a collision can never return the wrong kernel. */
    size_t keylen = strlen(label) + strlen(prelude) + strlen(body) + strlen(entry) + 4 + n_constants * 96;
    char *key = malloc(keylen + 1);
    if (!key) return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory compiling a kernel");
    size_t used = snprintf(key, keylen + 1, "%s\n%s\n%s\n%s\n", label, prelude, entry, body);
    for (int i = 0; i < n_constants && used < keylen; i++)
        used += snprintf(key + used, keylen + 1 - used, "%.64s=%.17g;", constants[i].name, constants[i].value);
    wgt_kernel_entry **bucket = &ctx->kernels[h % WGT_KERNEL_BUCKETS];
    for (wgt_kernel_entry *e = *bucket; e; e = e->next)
        if (e->hash == h && !strcmp(e->key, key)) {
            free(key);
            ctx->stats.pipeline_hits++;
            *out = &e->kernel;
            return WGT_OK;
        }
    /* Error lines are reported in the kernel file's numbering: the prelude's lines are subtracted. */
    size_t np = strlen(prelude), nb = strlen(body);
    char *text = malloc(np + nb + 2);
    if (!text) {
        free(key);
        return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory compiling a kernel");
    }
    int prelude_lines = 1;
    for (size_t i = 0; i < np; i++) prelude_lines += prelude[i] == '\n';
    memcpy(text, prelude, np);
    text[np] = '\n';
    memcpy(text + np + 1, body, nb + 1);
    if (ctx->dump_dir[0]) dump_shader(ctx, label, h, text);
    wgt_kernel_entry *e = calloc(1, sizeof *e);
    wgt_status st = e ? build(ctx, label, text, prelude_lines, entry, constants, n_constants, &e->kernel)
                      : wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory compiling a kernel");
    free(text);
    if (st) {
        free(e);
        free(key);
        return st;
    }
    e->hash = h;
    e->key = key;
    e->next = *bucket;
    *bucket = e;
    ctx->stats.pipelines++;
    *out = &e->kernel;
    return WGT_OK;
}

wgt_status wgt_gpu_kernel(wgt_context *ctx, const char *name, const char *prelude, const char *entry,
                          const wgt_kconst *constants, int n_constants, wgt_kernel **out)
{
    *out = NULL;
    wgt_status st = wgt_ctx_check(ctx);
    if (st) return st;
    const char *body = kernel_text(ctx->kernel_dir, name);
    if (!body)
        return wgt_ctx_error(ctx, WGT_ERR_NOT_FOUND, "no kernel named '%s' (src/kernels/%s.wgsl)%s%s", name, name,
                             ctx->kernel_dir[0] ? " in WGT_KERNEL_DIR=" : "", ctx->kernel_dir);
    return lookup_or_build(ctx, name, prelude ? prelude : "", body, entry ? entry : "main", constants, n_constants,
                           out);
}

wgt_status wgt_gpu_kernel_source(wgt_context *ctx, const char *label, const char *source, const char *entry,
                                 const wgt_kconst *constants, int n_constants, wgt_kernel **out)
{
    *out = NULL;
    wgt_status st = wgt_ctx_check(ctx);
    if (st) return st;
    if (!source || !label) return wgt_ctx_error(ctx, WGT_ERR_INVALID_ARGUMENT, "a kernel needs a label and a source");
    return lookup_or_build(ctx, label, "", source, entry ? entry : "main", constants, n_constants, out);
}

void wgt_kernel_cache_destroy(wgt_context *ctx)
{
    for (int b = 0; b < WGT_KERNEL_BUCKETS; b++) {
        wgt_kernel_entry *e = ctx->kernels[b];
        while (e) {
            wgt_kernel_entry *next = e->next;
            wgt_W.ComputePipelineRelease(e->kernel.pipeline);
            wgt_W.PipelineLayoutRelease(e->kernel.pipeline_layout);
            wgt_W.BindGroupLayoutRelease(e->kernel.layout);
            free(e->key);
            free(e);
            e = next;
        }
        ctx->kernels[b] = NULL;
    }
}
