/* safetensors writer: tensors declared first (the JSON header needs every offset), then their
 * bytes streamed in declared order. The header is padded with spaces to a multiple of 8 so the
 * data starts aligned, as the reference writer does. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/io.h"
#include "io/json_util.h"

struct wgt_st_writer {
    wgt_wfile file; /* path, the output, the tensors, started / failed */
    char **mk, **mv;
    uint64_t n_meta;
};

static wgt_status start(void *owner);

wgt_status wgt_st_writer_open_ex(const char *path, const wgt_output_options *opts, wgt_st_writer **out)
{
    *out = NULL;
    wgt_st_writer *w = calloc(1, sizeof *w);
    if (!w) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: writer", path);
    wgt_status st = wgt_wfile_open(&w->file, path, opts, 1, 0, start, w);
    if (st) {
        free(w);
        return st;
    }
    *out = w;
    return WGT_OK;
}

/* The library's own callers (tests, tools that name a fresh path) replace their files. */
wgt_status wgt_st_writer_open(const char *path, wgt_st_writer **out)
{
    const wgt_output_options opts = {.replace = 1};
    return wgt_st_writer_open_ex(path, &opts, out);
}

wgt_status wgt_st_writer_add_metadata(wgt_st_writer *w, const char *key, const char *value)
{
    if (w->file.started) return wgt_error(WGT_ERR_MISUSE, "%s: metadata after tensor data", w->file.path);
    if (!key || !value || !wgt_utf8_valid(key, strlen(key)) || !wgt_utf8_valid(value, strlen(value)))
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: metadata key and value must be UTF-8 strings", w->file.path);
    char **k = realloc(w->mk, (size_t)(w->n_meta + 1) * sizeof *k);
    if (k) w->mk = k;
    char **v = realloc(w->mv, (size_t)(w->n_meta + 1) * sizeof *v);
    if (v) w->mv = v;
    if (!k || !v) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: metadata", w->file.path);
    k[w->n_meta] = wgt_strndup(key, strlen(key));
    v[w->n_meta] = wgt_strndup(value, strlen(value));
    w->n_meta++;
    if (!k[w->n_meta - 1] || !v[w->n_meta - 1]) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: metadata", w->file.path);
    return WGT_OK;
}

wgt_status wgt_st_writer_add_tensor(wgt_st_writer *w, const char *name, wgt_ftype type, uint32_t n_dims, const int64_t *shape)
{
    if (w->file.started) return wgt_error(WGT_ERR_MISUSE, "%s: tensor '%s' after tensor data", w->file.path, name);
    if (!name || !*name || !wgt_utf8_valid(name, strlen(name)) || !strcmp(name, "__metadata__"))
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: a tensor name must be non-empty UTF-8", w->file.path);
    if (!wgt_st_dtype_name(type) || n_dims > WGT_ST_MAX_DIMS)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: tensor '%s': type %s or %u dims not storable in safetensors",
                         w->file.path, name, wgt_ftype_name(type) ? wgt_ftype_name(type) : "?", n_dims);
    return wgt_wtensors_add(&w->file.ts, name, type, n_dims, shape);
}

/* The header, before the first data bytes (wgt_wfile's start). */
static wgt_status start(void *owner)
{
    wgt_st_writer *w = owner;
    char *b = NULL, num[64];
    uint64_t len = 0, cap = 0, off = 0;
    wgt_status st = wgt_buf_append(&b, &len, &cap, "{", 1);
    if (!st && w->n_meta) {
        st = wgt_buf_append(&b, &len, &cap, "\"__metadata__\":{", 16);
        for (uint64_t i = 0; !st && i < w->n_meta; i++) {
            if (i) st = wgt_buf_append(&b, &len, &cap, ",", 1);
            if (!st) st = wgt_json_escape(&b, &len, &cap, w->mk[i]);
            if (!st) st = wgt_buf_append(&b, &len, &cap, ":", 1);
            if (!st) st = wgt_json_escape(&b, &len, &cap, w->mv[i]);
        }
        if (!st) st = wgt_buf_append(&b, &len, &cap, "}", 1);
    }
    for (uint64_t i = 0; !st && i < w->file.ts.n; i++) {
        const wgt_wtensor *t = &w->file.ts.t[i];
        if (i || w->n_meta) st = wgt_buf_append(&b, &len, &cap, ",", 1);
        if (!st) st = wgt_json_escape(&b, &len, &cap, t->name);
        snprintf(num, sizeof num, ":{\"dtype\":\"%s\",\"shape\":[", wgt_st_dtype_name(t->type));
        if (!st) st = wgt_buf_append(&b, &len, &cap, num, strlen(num));
        for (uint32_t d = 0; !st && d < t->n_dims; d++) {
            snprintf(num, sizeof num, "%s%lld", d ? "," : "", (long long)t->dims[d]);
            st = wgt_buf_append(&b, &len, &cap, num, strlen(num));
        }
        snprintf(num, sizeof num, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off, (unsigned long long)(off + t->bytes));
        if (!st) st = wgt_buf_append(&b, &len, &cap, num, strlen(num));
        off += t->bytes;
    }
    if (!st) st = wgt_buf_append(&b, &len, &cap, "}", 1);
    while (!st && len % 8) st = wgt_buf_append(&b, &len, &cap, " ", 1);
    uint8_t head[8];
    for (int i = 0; i < 8; i++) head[i] = (uint8_t)(len >> (8 * i));
    if (!st) st = wgt_write_all(w->file.f, head, 8, w->file.path);
    if (!st) st = wgt_write_all(w->file.f, b, len, w->file.path);
    free(b);
    w->file.started = 1;
    return st;
}

wgt_status wgt_st_writer_write(wgt_st_writer *w, const void *data, uint64_t bytes)
{
    return wgt_wfile_write(&w->file, data, bytes);
}

wgt_status wgt_st_writer_finish(wgt_st_writer *w) { return wgt_wfile_finish(&w->file); }

void wgt_st_writer_free(wgt_st_writer *w)
{
    if (!w) return;
    wgt_wfile_free(&w->file); /* removes the temporary file, never the final name */
    for (uint64_t i = 0; i < w->n_meta; i++) {
        free(w->mk[i]);
        free(w->mv[i]);
    }
    free(w->mk);
    free(w->mv);
    free(w);
}
