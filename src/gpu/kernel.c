/* Kernels: WGSL source (embedded, or WGT_KERNEL_DIR while developing), compiled inside an error
 * scope so a WGSL error names the kernel and the line, and cached by what identifies them (below). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"

typedef struct embedded_kernel {
    const char *name;
    const char *source;
} embedded_kernel;
extern const embedded_kernel wgt_embedded_kernels[];

char *wgt_gpu_read_text(const char *path)
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
        char *s = wgt_gpu_read_text(path);
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

/* ---- the pipeline cache ----------------------------------------------------------------------
 * A lookup runs on every op call, so it must cost far less than recording a dispatch: it hashes and
 * compares only what identifies the pipeline, never the kernel file's text (a name stands for it:
 * the text of a name is fixed for the life of a context), and allocates nothing on a hit.
 * Three kinds of key:
 *   'P'  a kernel file's name, the prelude prepended to it, the entry point and the constants;
 *   'K'  a kernel file's name and a small key from the caller that determines the prelude (its
 *        dtypes and variant): the prelude is generated only on a miss (wgt_gpu_kernel_keyed);
 *   'S'  a label and a whole source (wgt_gpu_kernel_source: user kernels, tests).
 * The stored key holds every byte compared, so a hash collision can never return the wrong
 * pipeline: a different prelude, key, entry or constant is a different entry. */

enum { MAX_CONSTANTS = 16 };

typedef struct cache_key {
    char kind;
    int n_constants;
    size_t name_len, entry_len, text_len, const_len; /* the four parts of blob, in this order */
    double values[MAX_CONSTANTS];
    char blob[]; /* name, entry, text (prelude / key bytes / source), constant names each ending in \0 */
} cache_key;

typedef struct probe {
    char kind;
    const char *name, *entry;
    const void *text;
    size_t name_len, entry_len, text_len, const_len;
    const wgt_kconst *constants;
    int n_constants;
} probe;

/* A word at a time: the prelude is the longest part hashed (one to a few KiB). */
static uint64_t hash_bytes(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
    }
    uint64_t w = 0;
    memcpy(&w, p, n);
    h = (h ^ w ^ ((uint64_t)n << 56)) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 32);
}

static uint64_t probe_hash(const probe *q)
{
    uint64_t h = hash_bytes(0xcbf29ce484222325ull ^ (uint64_t)q->kind, q->name, q->name_len);
    h = hash_bytes(h, q->entry, q->entry_len);
    h = hash_bytes(h, q->text, q->text_len);
    for (int i = 0; i < q->n_constants; i++) {
        h = hash_bytes(h, q->constants[i].name, strlen(q->constants[i].name));
        h = hash_bytes(h, &q->constants[i].value, sizeof q->constants[i].value);
    }
    return h;
}

static int probe_matches(const probe *q, const cache_key *k)
{
    if (k->kind != q->kind || k->n_constants != q->n_constants || k->name_len != q->name_len ||
        k->entry_len != q->entry_len || k->text_len != q->text_len || k->const_len != q->const_len)
        return 0;
    const char *b = k->blob;
    if (memcmp(b, q->name, q->name_len) || memcmp(b + q->name_len + 1, q->entry, q->entry_len) ||
        memcmp(b + q->name_len + q->entry_len + 2, q->text, q->text_len))
        return 0;
    const char *c = b + q->name_len + q->entry_len + q->text_len + 3;
    for (int i = 0; i < q->n_constants; i++) {
        if (strcmp(c, q->constants[i].name) || memcmp(&k->values[i], &q->constants[i].value, sizeof(double)))
            return 0;
        c += strlen(c) + 1;
    }
    return 1;
}

static cache_key *key_from_probe(const probe *q)
{
    size_t n = q->name_len + q->entry_len + q->text_len + q->const_len + 3;
    cache_key *k = malloc(sizeof *k + n);
    if (!k) return NULL;
    k->kind = q->kind;
    k->n_constants = q->n_constants;
    k->name_len = q->name_len, k->entry_len = q->entry_len, k->text_len = q->text_len, k->const_len = q->const_len;
    char *b = k->blob;
    memcpy(b, q->name, q->name_len), b += q->name_len, *b++ = 0;
    memcpy(b, q->entry, q->entry_len), b += q->entry_len, *b++ = 0;
    memcpy(b, q->text, q->text_len), b += q->text_len, *b++ = 0;
    for (int i = 0; i < q->n_constants; i++) {
        size_t l = strlen(q->constants[i].name) + 1;
        memcpy(b, q->constants[i].name, l), b += l;
        k->values[i] = q->constants[i].value;
    }
    return k;
}

static void probe_init(probe *q, char kind, const char *name, const char *entry, const void *text, size_t text_len,
                       const wgt_kconst *constants, int n_constants)
{
    q->kind = kind;
    q->name = name, q->name_len = strlen(name);
    q->entry = entry, q->entry_len = strlen(entry);
    q->text = text, q->text_len = text_len;
    q->constants = constants, q->n_constants = n_constants;
    q->const_len = 0;
    for (int i = 0; i < n_constants; i++) q->const_len += strlen(constants[i].name) + 1;
}

static wgt_kernel *cache_find(wgt_context *ctx, const probe *q, uint64_t h)
{
    for (wgt_kernel_entry *e = ctx->kernels[h % WGT_KERNEL_BUCKETS]; e; e = e->next)
        if (e->hash == h && probe_matches(q, (const cache_key *)e->key)) {
            ctx->stats.pipeline_hits++;
            return &e->kernel;
        }
    return NULL;
}

/* Compile prelude + "\n" + body and file it under q. */
static wgt_status cache_build(wgt_context *ctx, const probe *q, uint64_t h, const char *prelude, const char *body,
                              wgt_kernel **out)
{
    cache_key *key = key_from_probe(q);
    size_t np = strlen(prelude), nb = strlen(body);
    char *text = malloc(np + nb + 2);
    wgt_kernel_entry *e = calloc(1, sizeof *e);
    if (!key || !text || !e) {
        free(key), free(text), free(e);
        return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "out of host memory compiling a kernel");
    }
    /* Error lines are reported in the kernel file's numbering: the prelude's lines are subtracted. */
    int prelude_lines = 1;
    for (size_t i = 0; i < np; i++) prelude_lines += prelude[i] == '\n';
    memcpy(text, prelude, np);
    text[np] = '\n';
    memcpy(text + np + 1, body, nb + 1);
    char label[64];
    snprintf(label, sizeof label, "%.*s", (int)q->name_len, q->name);
    if (ctx->dump_dir[0]) dump_shader(ctx, label, h, text);
    wgt_status st = build(ctx, label, text, prelude_lines, q->entry, q->constants, q->n_constants, &e->kernel);
    free(text);
    if (st) {
        free(e);
        free(key);
        return st;
    }
    e->hash = h;
    e->key = (char *)key;
    wgt_kernel_entry **bucket = &ctx->kernels[h % WGT_KERNEL_BUCKETS];
    e->next = *bucket;
    *bucket = e;
    ctx->stats.pipelines++;
    *out = &e->kernel;
    return WGT_OK;
}

static wgt_status check_constants(wgt_context *ctx, const char *name, int n_constants)
{
    if (n_constants < 0 || n_constants > MAX_CONSTANTS)
        return wgt_ctx_error(ctx, WGT_ERR_INVALID_ARGUMENT, "kernel '%s': %d override constants (at most %d)", name,
                             n_constants, MAX_CONSTANTS);
    return WGT_OK;
}

static const char *body_of(wgt_context *ctx, const char *name, wgt_status *st)
{
    const char *body = kernel_text(ctx->kernel_dir, name);
    *st = body ? WGT_OK
               : wgt_ctx_error(ctx, WGT_ERR_NOT_FOUND, "no kernel named '%s' (src/kernels/%s.wgsl)%s%s", name, name,
                               ctx->kernel_dir[0] ? " in WGT_KERNEL_DIR=" : "", ctx->kernel_dir);
    return body;
}

wgt_status wgt_gpu_kernel(wgt_context *ctx, const char *name, const char *prelude, const char *entry,
                          const wgt_kconst *constants, int n_constants, wgt_kernel **out)
{
    *out = NULL;
    wgt_status st = wgt_ctx_check(ctx);
    if (st || (st = check_constants(ctx, name, n_constants))) return st;
    if (!prelude) prelude = "";
    probe q;
    probe_init(&q, 'P', name, entry ? entry : "main", prelude, strlen(prelude), constants, n_constants);
    uint64_t h = probe_hash(&q);
    if ((*out = cache_find(ctx, &q, h))) return WGT_OK;
    const char *body = body_of(ctx, name, &st);
    return st ? st : cache_build(ctx, &q, h, prelude, body, out);
}

wgt_status wgt_gpu_kernel_keyed(wgt_context *ctx, const char *name, const void *key, size_t key_len,
                                wgt_prelude_fn make_prelude, void *arg, const char *entry,
                                const wgt_kconst *constants, int n_constants, wgt_kernel **out)
{
    *out = NULL;
    wgt_status st = wgt_ctx_check(ctx);
    if (st || (st = check_constants(ctx, name, n_constants))) return st;
    probe q;
    probe_init(&q, 'K', name, entry ? entry : "main", key, key_len, constants, n_constants);
    uint64_t h = probe_hash(&q);
    if ((*out = cache_find(ctx, &q, h))) return WGT_OK;
    const char *body = body_of(ctx, name, &st);
    if (st) return st;
    char *prelude = make_prelude(arg);
    if (!prelude)
        return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY,
                             "could not generate the prelude of kernel '%s': out of host memory, or a library it "
                             "includes (src/kernels/lib_*.wgsl) is missing from WGT_KERNEL_DIR", name);
    st = cache_build(ctx, &q, h, prelude, body, out);
    free(prelude);
    return st;
}

wgt_status wgt_gpu_kernel_source(wgt_context *ctx, const char *label, const char *source, const char *entry,
                                 const wgt_kconst *constants, int n_constants, wgt_kernel **out)
{
    *out = NULL;
    wgt_status st = wgt_ctx_check(ctx);
    if (st) return st;
    if (!source || !label) return wgt_ctx_error(ctx, WGT_ERR_INVALID_ARGUMENT, "a kernel needs a label and a source");
    if ((st = check_constants(ctx, label, n_constants))) return st;
    probe q;
    probe_init(&q, 'S', label, entry ? entry : "main", source, strlen(source), constants, n_constants);
    uint64_t h = probe_hash(&q);
    if ((*out = cache_find(ctx, &q, h))) return WGT_OK;
    return cache_build(ctx, &q, h, "", source, out);
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
