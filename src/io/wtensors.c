/* The tensor half of the GGUF and safetensors writers (io.h's wgt_wtensors): the declared
 * tensors and the stream of their bytes in declared order. Each format writes its own header
 * from the declarations; the data part is the same but for GGUF's padding between tensors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/io.h"

wgt_status wgt_write_pad(void *f, uint64_t at, uint32_t align, const char *path)
{
    static const uint8_t zeros[256];
    uint64_t n = align > 1 ? (align - at % align) % align : 0;
    while (n) {
        uint64_t k = n < sizeof zeros ? n : sizeof zeros;
        wgt_status st = wgt_write_all(f, zeros, k, path);
        if (st) return st;
        n -= k;
    }
    return WGT_OK;
}

wgt_status wgt_wtensors_add(wgt_wtensors *s, const char *name, wgt_ftype type, uint32_t n_dims, const int64_t *dims)
{
    if (n_dims > 8) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: tensor '%s': %u dims", s->path, name, n_dims);
    for (uint64_t i = 0; i < s->n; i++)
        if (!strcmp(s->t[i].name, name)) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: duplicate tensor '%s'", s->path, name);
    wgt_wtensor t = {.type = type, .n_dims = n_dims};
    int64_t n = 1;
    for (uint32_t d = 0; d < 8; d++) {
        t.dims[d] = d < n_dims ? dims[d] : 1;
        if (t.dims[d] < 0 || (t.dims[d] && n > INT64_MAX / t.dims[d]))
            return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: tensor '%s': bad or overflowing shape", s->path, name);
        n *= t.dims[d];
    }
    int64_t row = s->row_first ? t.dims[0] : n_dims ? t.dims[n_dims - 1] : 1;
    uint32_t block = wgt_ftype_block_elems(type);
    if (!block) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: tensor '%s': unknown type %d", s->path, name, (int)type);
    if (row % block)
        return wgt_error(WGT_ERR_SHAPE, "%s: tensor '%s': row of %lld is not a multiple of %s's block", s->path, name,
                         (long long)row, wgt_ftype_name(type));
    wgt_status st = wgt_ftype_bytes(type, n, &t.bytes);
    if (st) return st;
    if (s->n == s->cap) {
        uint64_t cap = s->cap ? 2 * s->cap : 64;
        wgt_wtensor *p = realloc(s->t, (size_t)cap * sizeof *p);
        if (!p) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: tensor table", s->path);
        s->t = p;
        s->cap = cap;
    }
    if (!(t.name = wgt_strndup(name, strlen(name)))) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: tensor name", s->path);
    s->t[s->n++] = t;
    return WGT_OK;
}

wgt_status wgt_wtensors_write(wgt_wtensors *s, void *f, const void *data, uint64_t bytes)
{
    const uint8_t *p = data;
    while (bytes) {
        /* past the tensors that are complete (and the empty ones), padding each */
        while (s->current < s->n && s->written == s->t[s->current].bytes) {
            wgt_status st = wgt_write_pad(f, s->written, s->align, s->path);
            if (st) return st;
            s->current++;
            s->written = 0;
        }
        if (s->current == s->n)
            return wgt_error(WGT_ERR_MISUSE, "%s: %llu bytes more than the tensors declared", s->path, (unsigned long long)bytes);
        uint64_t k = s->t[s->current].bytes - s->written;
        if (k > bytes) k = bytes;
        wgt_status st = wgt_write_all(f, p, k, s->path);
        if (st) return st;
        s->written += k;
        p += k;
        bytes -= k;
    }
    return WGT_OK;
}

wgt_status wgt_wtensors_finish(wgt_wtensors *s, void *f)
{
    for (; s->current < s->n; s->current++, s->written = 0) {
        const wgt_wtensor *t = &s->t[s->current];
        if (s->written != t->bytes)
            return wgt_error(WGT_ERR_MISUSE, "%s: tensor '%s' got %llu of its %llu bytes", s->path, t->name,
                             (unsigned long long)s->written, (unsigned long long)t->bytes);
        wgt_status st = wgt_write_pad(f, s->written, s->align, s->path);
        if (st) return st;
    }
    return WGT_OK;
}

void wgt_wtensors_free(wgt_wtensors *s)
{
    for (uint64_t i = 0; i < s->n; i++) free(s->t[i].name);
    free(s->t);
    s->t = NULL;
    s->n = s->cap = 0;
}

wgt_status wgt_wfile_open(wgt_wfile *w, const char *path, const wgt_output_options *opts, uint32_t align,
                          int row_first, wgt_status (*start)(void *owner), void *owner)
{
    memset(w, 0, sizeof *w);
    if (!(w->path = wgt_strndup(path, strlen(path)))) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: writer", path);
    wgt_status st = wgt_output_open(path, opts, &w->out);
    if (st) {
        free(w->path);
        w->path = NULL;
        return st;
    }
    w->f = wgt_output_file(w->out);
    w->ts.path = w->path;
    w->ts.align = align;
    w->ts.row_first = row_first;
    w->start = start;
    w->owner = owner;
    return WGT_OK;
}

wgt_status wgt_wfile_write(wgt_wfile *w, const void *data, uint64_t bytes)
{
    if (w->failed) return w->failed;
    wgt_status st = w->started ? WGT_OK : w->start(w->owner);
    if (!st) st = wgt_wtensors_write(&w->ts, w->f, data, bytes);
    if (st) w->failed = st;
    return st;
}

wgt_status wgt_wfile_finish(wgt_wfile *w)
{
    wgt_status st = w->failed ? w->failed : w->started ? WGT_OK : w->start(w->owner);
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

void wgt_wfile_free(wgt_wfile *w)
{
    wgt_output_abort(w->out);
    w->out = NULL;
    wgt_wtensors_free(&w->ts);
    free(w->path);
    w->path = NULL;
}
