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
    char *path;
    wgt_output *out; /* the temporary file until finish renames it */
    FILE *f;         /* its stream */
    wgt_wtensors ts; /* the tensors (dims: the shape) and their data stream */
    char **mk, **mv;
    uint64_t n_meta;
    int started;
    wgt_status failed;
};

wgt_status wgt_st_writer_open_ex(const char *path, const wgt_output_options *opts, wgt_st_writer **out)
{
    *out = NULL;
    wgt_st_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = wgt_strndup(path, strlen(path)))) {
        free(w);
        return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: writer", path);
    }
    wgt_status st = wgt_output_open(path, opts, &w->out);
    if (st) {
        free(w->path);
        free(w);
        return st;
    }
    w->f = wgt_output_file(w->out);
    w->ts.path = w->path;
    w->ts.align = 1;
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
    if (w->started) return wgt_error(WGT_ERR_MISUSE, "%s: metadata after tensor data", w->path);
    if (!key || !value || !wgt_utf8_valid(key, strlen(key)) || !wgt_utf8_valid(value, strlen(value)))
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: metadata key and value must be UTF-8 strings", w->path);
    char **k = realloc(w->mk, (size_t)(w->n_meta + 1) * sizeof *k);
    if (k) w->mk = k;
    char **v = realloc(w->mv, (size_t)(w->n_meta + 1) * sizeof *v);
    if (v) w->mv = v;
    if (!k || !v) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: metadata", w->path);
    k[w->n_meta] = wgt_strndup(key, strlen(key));
    v[w->n_meta] = wgt_strndup(value, strlen(value));
    w->n_meta++;
    if (!k[w->n_meta - 1] || !v[w->n_meta - 1]) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: metadata", w->path);
    return WGT_OK;
}

wgt_status wgt_st_writer_add_tensor(wgt_st_writer *w, const char *name, wgt_ftype type, uint32_t n_dims, const int64_t *shape)
{
    if (w->started) return wgt_error(WGT_ERR_MISUSE, "%s: tensor '%s' after tensor data", w->path, name);
    if (!name || !*name || !wgt_utf8_valid(name, strlen(name)) || !strcmp(name, "__metadata__"))
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: a tensor name must be non-empty UTF-8", w->path);
    if (!wgt_st_dtype_name(type) || n_dims > WGT_ST_MAX_DIMS)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: tensor '%s': type %s or %u dims not storable in safetensors",
                         w->path, name, wgt_ftype_name(type) ? wgt_ftype_name(type) : "?", n_dims);
    return wgt_wtensors_add(&w->ts, name, type, n_dims, shape);
}

static wgt_status start(wgt_st_writer *w)
{
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
    for (uint64_t i = 0; !st && i < w->ts.n; i++) {
        const wgt_wtensor *t = &w->ts.t[i];
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
    if (!st) st = wgt_write_all(w->f, head, 8, w->path);
    if (!st) st = wgt_write_all(w->f, b, len, w->path);
    free(b);
    w->started = 1;
    return st;
}

wgt_status wgt_st_writer_write(wgt_st_writer *w, const void *data, uint64_t bytes)
{
    if (w->failed) return w->failed;
    wgt_status st = w->started ? WGT_OK : start(w);
    if (!st) st = wgt_wtensors_write(&w->ts, w->f, data, bytes);
    if (st) w->failed = st;
    return st;
}

wgt_status wgt_st_writer_finish(wgt_st_writer *w)
{
    wgt_status st = w->failed ? w->failed : w->started ? WGT_OK : start(w);
    if (!st) st = wgt_wtensors_finish(&w->ts, w->f);
    if (!st && !w->out) st = wgt_error(WGT_ERR_MISUSE, "%s: finished twice", w->path);
    if (!st) { /* the new file appears under its name only now, complete */
        st = wgt_output_commit(w->out);
        w->out = NULL;
        w->f = NULL;
    }
    if (st) w->failed = st;
    return st;
}

void wgt_st_writer_free(wgt_st_writer *w)
{
    if (!w) return;
    wgt_output_abort(w->out); /* removes the temporary file, never the final name */
    wgt_wtensors_free(&w->ts);
    for (uint64_t i = 0; i < w->n_meta; i++) {
        free(w->mk[i]);
        free(w->mv[i]);
    }
    free(w->mk);
    free(w->mv);
    free(w->path);
    free(w);
}
