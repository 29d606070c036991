/*
 * The browser build's entry points (make web -> build/web/wgt.wasm): what web/wgt.js calls. Every
 * function here is plain wgt API underneath, the same library the CLI links; this file only turns
 * it into calls a page can make (numbers and strings in the module's memory, JSON for structures).
 *
 * Calls that may wait on the GPU are exported through WebAssembly.promising in wgt.js (JSPI): they
 * return a promise to JavaScript, and the page stays responsive while they run.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "harness/harness.h"
#include "wgt.h"

#define EXPORT(name) __attribute__((export_name(#name)))
#define IMPORT(name) __attribute__((import_module("wgt"), import_name(#name)))

/* Streamed output: a generated token, with the text it completes (may be empty). */
IMPORT(on_token) int wgt_js_on_token(int32_t id, const char *text, size_t len);

static wgt_context *dev;
static wgt_model *model;
static char json[16384];
static char message[4096];

static int fail(wgt_status st)
{
    const char *m = dev ? wgt_context_errmsg(dev) : "";
    if (!m || !*m) m = wgt_errmsg();
    snprintf(message, sizeof message, "%s%s%s", wgt_status_str(st), m && *m ? ": " : "", m ? m : "");
    return (int)st;
}

EXPORT(wgt_web_malloc) void *web_malloc(size_t n) { return malloc(n ? n : 1); }
EXPORT(wgt_web_free) void web_free(void *p) { free(p); }
EXPORT(wgt_web_message) const char *web_message(void) { return message; }


/* ---- context ---------------------------------------------------------------------------------- */

EXPORT(wgt_web_init) int web_init(void)
{
    if (dev) return 0;
    wgt_status st = wgt_context_create(NULL, &dev);
    if (st) {
        dev = NULL;
        return fail(st);
    }
    return 0;
}

static size_t json_str(char *out, size_t cap, const char *s)
{
    size_t n = 0;
    for (; *s && n + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') { out[n++] = '\\'; out[n++] = (char)c; }
        else if (c < 0x20) n += (size_t)snprintf(out + n, cap - n, "\\u%04x", c);
        else out[n++] = (char)c;
    }
    out[n] = 0;
    return n;
}

EXPORT(wgt_web_info) const char *web_info(void)
{
    wgt_adapter_info i;
    if (!dev || wgt_context_adapter_info(dev, &i)) return "{}";
    char name[512], vendor[256], arch[256], driver[512], lib[512];
    json_str(name, sizeof name, i.name);
    json_str(vendor, sizeof vendor, i.vendor);
    json_str(arch, sizeof arch, i.architecture);
    json_str(driver, sizeof driver, i.driver);
    json_str(lib, sizeof lib, i.webgpu_lib_description);
    const wgt_limits *l = &i.limits;
    snprintf(json, sizeof json,
             "{\"name\":\"%s\",\"vendor\":\"%s\",\"architecture\":\"%s\",\"driver\":\"%s\",\"library\":\"%s\","
             "\"is_cpu\":%d,\"features\":{\"shader-f16\":%d,\"subgroups\":%d,\"timestamp-query\":%d,"
             "\"subgroup-matrix\":%d},\"limits\":{\"maxBufferSize\":%llu,\"maxStorageBufferBindingSize\":%llu,"
             "\"maxUniformBufferBindingSize\":%llu,\"maxStorageBuffersPerShaderStage\":%u,"
             "\"maxComputeWorkgroupStorageSize\":%u,\"maxComputeInvocationsPerWorkgroup\":%u,"
             "\"maxComputeWorkgroupSizeX\":%u,\"maxComputeWorkgroupsPerDimension\":%u,"
             "\"minStorageBufferOffsetAlignment\":%u,\"subgroupMinSize\":%u,\"subgroupMaxSize\":%u}}",
             name, vendor, arch, driver, lib, i.is_cpu, i.has_f16, i.has_subgroups, i.has_timestamps,
             i.has_subgroup_matrix, (unsigned long long)l->max_buffer_size,
             (unsigned long long)l->max_storage_buffer_binding_size,
             (unsigned long long)l->max_uniform_buffer_binding_size, l->max_storage_buffers_per_shader_stage,
             l->max_compute_workgroup_storage_size, l->max_compute_invocations_per_workgroup,
             l->max_compute_workgroup_size_x, l->max_compute_workgroups_per_dimension,
             l->min_storage_buffer_offset_alignment, l->subgroup_min_size, l->subgroup_max_size);
    return json;
}

/* ---- models ----------------------------------------------------------------------------------- */

/* path: a file the page placed in the module's file system (web/wasi.js), a GGUF. f32_weights:
 * expand f16/bf16 weights to f32 at load (wgt_model_options). */
EXPORT(wgt_web_model_open) int web_model_open(const char *path, int max_ctx, int f32_weights)
{
    if (!dev) return fail(wgt_error(WGT_ERR_INVALID_ARGUMENT, "no WebGPU context: call init first"));
    if (model) wgt_model_free(model);
    model = NULL;
    wgt_model_options o = {0};
    o.max_ctx = max_ctx;
    o.f32_weights = f32_weights;
    wgt_status st = wgt_model_open_ex(dev, path, &o, &model);
    if (st) {
        model = NULL;
        return fail(st);
    }
    return 0;
}

EXPORT(wgt_web_model_free) void web_model_free(void)
{
    wgt_model_free(model);
    model = NULL;
}

EXPORT(wgt_web_model_info) const char *web_model_info(void)
{
    if (!model) return "{}";
    wgt_tokenizer *tok = wgt_model_tokenizer(model);
    const char *terr = wgt_model_tokenizer_error(model);
    char arch[64], tok_error[1024] = "";
    json_str(arch, sizeof arch, wgt_model_arch(model));
    if (terr) json_str(tok_error, sizeof tok_error, terr);
    snprintf(json, sizeof json,
             "{\"arch\":\"%s\",\"vocab\":%lld,\"context\":%lld,\"weight_bytes\":%llu,\"token_bytes\":%llu,"
             "\"tokenizer\":%d,\"tokenizer_error\":\"%s\",\"bos\":%d,\"eos\":%d}",
             arch, (long long)wgt_model_vocab(model), (long long)wgt_model_context(model),
             (unsigned long long)wgt_model_weight_bytes(model), (unsigned long long)wgt_model_token_bytes(model),
             tok != NULL, tok_error, tok ? wgt_tokenizer_bos(tok) : -1, tok ? wgt_tokenizer_eos(tok) : -1);
    return json;
}

/* Tokens of text (flags: WGT_TOKENIZE_*): the count, ids in *out (wgt_web_free them); < 0: error. */
EXPORT(wgt_web_encode) int web_encode(const char *text, unsigned flags, int32_t **out)
{
    wgt_tokenizer *tok = model ? wgt_model_tokenizer(model) : NULL;
    if (!tok) return -fail(wgt_error(WGT_ERR_INVALID_ARGUMENT, "the model has no tokenizer: give token ids"));
    size_t n = 0;
    wgt_status st = wgt_tokenizer_encode(tok, text, (size_t)-1, flags, out, &n);
    return st ? -fail(st) : (int)n;
}

/* The chat template applied to n messages (roles[i], contents[i]), with the generation prompt:
 * the text (wgt_web_free it), or NULL with the message. */
EXPORT(wgt_web_chat_template) char *web_chat_template(const char *const *roles, const char *const *contents, int n)
{
    wgt_tokenizer *tok = model ? wgt_model_tokenizer(model) : NULL;
    if (!tok) {
        fail(wgt_error(WGT_ERR_INVALID_ARGUMENT, "the model has no tokenizer, so no chat template"));
        return NULL;
    }
    wgt_chat_message *m = calloc((size_t)(n > 0 ? n : 1), sizeof *m);
    if (!m) {
        fail(wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of memory"));
        return NULL;
    }
    for (int i = 0; i < n; i++) m[i] = (wgt_chat_message){roles[i], contents[i]};
    char *text = NULL;
    wgt_status st = wgt_tokenizer_apply_chat_template(tok, m, (size_t)n, 1, NULL, &text);
    /* a model without a template still chats, in chatml, as `wgt chat` and llama.cpp fall back */
    if (st == WGT_ERR_NOT_FOUND) st = wgt_tokenizer_apply_chat_template(tok, m, (size_t)n, 1, "chatml", &text);
    free(m);
    if (st) {
        fail(st);
        return NULL;
    }
    return text;
}

typedef struct stream {
    wgt_detokenizer *detok;
    int stopped;
} stream;

static int on_token(int32_t id, void *user)
{
    stream *s = user;
    const char *text = "";
    size_t len = 0;
    if (s->detok && wgt_detokenizer_push(s->detok, id, &text, &len)) len = 0;
    if (wgt_js_on_token(id, text, len)) s->stopped = 1;
    return s->stopped;
}

static wgt_generate_stats last_stats;

/* Generate after the prompt ids, streaming each token to the page (wgt.on_token); the KV cache
 * keeps the earlier turns (reset: start over). chat: the reply's text starts fresh, else it
 * continues the prompt's. seed is a double (JavaScript numbers). */
EXPORT(wgt_web_generate) int web_generate(const int32_t *ids, int n, int n_new, float temperature, int top_k,
                                          float top_p, float min_p, float repeat_penalty, double seed,
                                          int ignore_eos, int reset, int chat)
{
    if (!model) return fail(wgt_error(WGT_ERR_INVALID_ARGUMENT, "no model loaded"));
    if (reset) wgt_model_reset(model);
    wgt_sampling sp = {0};
    sp.temperature = temperature;
    sp.top_k = top_k;
    sp.top_p = top_p;
    sp.min_p = min_p;
    sp.repeat_penalty = repeat_penalty;
    sp.seed = (uint64_t)seed;
    sp.ignore_eos = ignore_eos;
    stream s = {0};
    wgt_tokenizer *tok = wgt_model_tokenizer(model);
    if (tok && wgt_detokenizer_create(tok, 1, &s.detok)) s.detok = NULL;
    /* a completion continues its prompt, which sets the context (spaces at word starts), as in
     * `wgt generate -p`; a chat reply starts fresh, as in `wgt chat` */
    for (int i = 0; s.detok && !chat && i < n; i++) {
        const char *t;
        size_t l;
        wgt_detokenizer_push(s.detok, ids[i], &t, &l);
    }
    memset(&last_stats, 0, sizeof last_stats);
    wgt_status st = wgt_model_generate(model, ids, n, n_new, &sp, on_token, &s, &last_stats);
    if (s.detok) {
        const char *text = "";
        size_t len = 0;
        if (!wgt_detokenizer_flush(s.detok, &text, &len) && len) wgt_js_on_token(-1, text, len);
        wgt_detokenizer_free(s.detok);
    }
    return st ? fail(st) : 0;
}

EXPORT(wgt_web_stats) const char *web_stats(void)
{
    const wgt_generate_stats *s = &last_stats;
    snprintf(json, sizeof json,
             "{\"n_prompt\":%lld,\"n_generated\":%lld,\"prefill_seconds\":%.6f,\"decode_seconds\":%.6f,"
             "\"dispatches\":%llu,\"submits\":%llu,\"context_full\":%d}",
             (long long)s->n_prompt, (long long)s->n_generated, s->prefill_seconds, s->decode_seconds,
             (unsigned long long)s->dispatches, (unsigned long long)s->submits, s->context_full);
    return json;
}

/* ---- the op harness --------------------------------------------------------------------------- */

typedef struct tally {
    int passed, failed, known;
} tally;

static void report(const hx_result *r, void *user)
{
    tally *t = user;
    if (r->runs == 0 && r->ref_runs == 0) return; /* the case does not apply */
    const char *verdict = r->failures ? "FAIL" : r->known ? "KNOWN" : "ok";
    if (r->failures) t->failed++;
    else t->passed++;
    if (r->known) t->known++;
    printf("%-5s %-16s %-13s runs %d%s%s\n", verdict, r->op->name, hx_case_name(r->c), r->runs,
           r->failures ? ": " : "", r->failures ? r->message : "");
}

/* Run the harness for the ops named in names (comma-separated table names; "" or "*": every op),
 * the cases in case_mask (bit per hx_case; 0: the harness's default), printing a line per case and
 * at the end "N passed, N failed". Returns the number of failed cases, or < 0 on setup errors. */
EXPORT(wgt_web_harness) int web_harness(const char *names, unsigned case_mask, unsigned dtype_mask)
{
    if (!dev) return -fail(wgt_error(WGT_ERR_INVALID_ARGUMENT, "no WebGPU context: call init first"));
    static wgt_context *ref;
    wgt_context_options ro = {0};
    ro.backend = WGT_BACKEND_CPU;
    if (!ref && wgt_context_create(&ro, &ref)) return -fail(WGT_ERR_NO_DEVICE);
    int n_ops = 0;
    const hx_op *ops = hx_ops(&n_ops);
    hx_options opt = {0};
    opt.cases = case_mask;
    opt.dtypes = dtype_mask;
    /* Every name must be an op of the table: a typo must not shrink the run unnoticed. */
    for (const char *p = names; *p && strcmp(names, "*");) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(l < sizeof name ? l : sizeof name - 1), p);
        if (!hx_find(name)) return -fail(wgt_error(WGT_ERR_NOT_FOUND, "no op '%s' in the harness's table", name));
        p += l + (e != NULL);
    }
    tally t = {0};
    int matched = 0;
    for (int i = 0; i < n_ops; i++) {
        int wanted = !names[0] || !strcmp(names, "*");
        size_t len = strlen(ops[i].name);
        for (const char *p = names; !wanted && *p;) {
            const char *e = strchr(p, ',');
            size_t l = e ? (size_t)(e - p) : strlen(p);
            if (l == len && !strncmp(p, ops[i].name, l)) wanted = 1;
            p += l + (e != NULL);
        }
        if (!wanted) continue;
        matched++;
        hx_check(dev, ref, &ops[i], &opt, report, &t);
    }
    if (!matched) return -fail(wgt_error(WGT_ERR_NOT_FOUND, "no op of the harness matches '%s'", names));
    printf("%d passed, %d failed\n", t.passed, t.failed);
    fflush(stdout);
    return t.failed;
}

/* With WGT_PROFILE=1 in the module's environment (Wgt.load's env): the GPU time per kernel so far,
 * to stderr. */
EXPORT(wgt_web_profile) void web_profile(void)
{
    if (dev) wgt_context_profile_print(dev, stderr);
}
