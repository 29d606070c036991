/* GGUF writer: v3, little-endian. The header (metadata + tensor infos) is built in memory — it is
 * small — and written when the first tensor byte arrives; tensor bytes are streamed to the file
 * as they come, each tensor padded to the alignment, so a file of any size needs no more memory
 * than its header. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/io.h"

#define GGML_MAX_NAME 64 /* llama.cpp refuses tensor names of 64 bytes or more */

typedef struct open_array {
    wgt_gguf_type elem;
    uint64_t left;
} open_array;

struct wgt_gguf_writer {
    wgt_wfile file; /* path, the output, the tensors, started / failed */
    uint8_t *meta; /* serialised kv pairs */
    uint64_t meta_len, meta_cap, n_kv;
    char **keys;
    open_array stack[8];
    int depth;
};

static const uint8_t scalar_size[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

static wgt_status put(wgt_gguf_writer *w, const void *p, uint64_t n)
{
    if (!n) return WGT_OK;
    if (n > UINT64_MAX - w->meta_len) return wgt_error(WGT_ERR_LIMIT, "%s: metadata too large", w->file.path);
    if (w->meta_len + n > w->meta_cap) {
        uint64_t cap = w->meta_cap ? w->meta_cap : 4096;
        while (cap < w->meta_len + n) cap *= 2;
        if (cap > WGT_IO_MAX_HEADER * 2) return wgt_error(WGT_ERR_LIMIT, "%s: metadata over %llu MB", w->file.path, WGT_IO_MAX_HEADER >> 20);
        uint8_t *m = realloc(w->meta, (size_t)cap);
        if (!m) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: metadata buffer", w->file.path);
        w->meta = m;
        w->meta_cap = cap;
    }
    memcpy(w->meta + w->meta_len, p, (size_t)n);
    w->meta_len += n;
    return WGT_OK;
}

static wgt_status put_le(wgt_gguf_writer *w, uint64_t v, int n)
{
    uint8_t b[8];
    for (int i = 0; i < n; i++) b[i] = (uint8_t)(v >> (8 * i));
    return put(w, b, (uint64_t)n);
}

static wgt_status put_str(wgt_gguf_writer *w, const char *s, uint64_t len)
{
    wgt_status st = put_le(w, len, 8);
    return st ? st : put(w, s, len);
}

static wgt_status start(void *owner);

wgt_status wgt_gguf_writer_open_ex(const char *path, const wgt_output_options *opts, wgt_gguf_writer **out)
{
    *out = NULL;
    wgt_gguf_writer *w = calloc(1, sizeof *w);
    if (!w) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: writer", path);
    wgt_status st = wgt_wfile_open(&w->file, path, opts, 32, 1, start, w);
    if (st) {
        free(w);
        return st;
    }
    *out = w;
    return WGT_OK;
}

/* The library's own callers (tests, tools that name a fresh path) replace their files. */
wgt_status wgt_gguf_writer_open(const char *path, wgt_gguf_writer **out)
{
    const wgt_output_options opts = {.replace = 1};
    return wgt_gguf_writer_open_ex(path, &opts, out);
}

/* Start a value: at top level write the key and type; inside an array check the element type. */
static wgt_status begin_value(wgt_gguf_writer *w, const char *key, wgt_gguf_type type)
{
    if (w->file.failed) return w->file.failed;
    if (w->file.started) return wgt_error(WGT_ERR_MISUSE, "%s: metadata added after tensor data", w->file.path);
    if ((unsigned)type > WGT_GGUF_FLOAT64) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: value type %d", w->file.path, (int)type);
    if (w->depth) {
        open_array *a = &w->stack[w->depth - 1];
        if (key) return wgt_error(WGT_ERR_MISUSE, "%s: key '%s' given inside an array", w->file.path, key);
        if (a->elem != type)
            return wgt_error(WGT_ERR_MISUSE, "%s: array element of type %d, the array holds type %d", w->file.path, (int)type, (int)a->elem);
        if (!a->left) return wgt_error(WGT_ERR_MISUSE, "%s: more elements than the array declared", w->file.path);
        a->left--;
        return WGT_OK;
    }
    if (!key || !*key || !wgt_utf8_valid(key, strlen(key)))
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: metadata key missing or not UTF-8", w->file.path);
    for (uint64_t i = 0; i < w->n_kv; i++)
        if (!strcmp(w->keys[i], key)) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: duplicate key '%s'", w->file.path, key);
    char **keys = realloc(w->keys, (size_t)(w->n_kv + 1) * sizeof *keys);
    if (!keys) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: keys", w->file.path);
    w->keys = keys;
    if (!(keys[w->n_kv] = wgt_strndup(key, strlen(key)))) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: keys", w->file.path);
    w->n_kv++;
    wgt_status st = put_str(w, key, strlen(key));
    return st ? st : put_le(w, (uint64_t)type, 4);
}

wgt_status wgt_gguf_writer_add(wgt_gguf_writer *w, const char *key, wgt_gguf_type type, const void *value)
{
    if ((unsigned)type > WGT_GGUF_FLOAT64 || type == WGT_GGUF_STRING || type == WGT_GGUF_ARRAY)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: wgt_gguf_writer_add takes scalar types", w->file.path);
    wgt_status st = begin_value(w, key, type);
    if (st) return st;
    uint64_t v = 0;
    memcpy(&v, value, scalar_size[type]); /* little-endian host: the low bytes */
    if (key && !w->depth && !strcmp(key, "general.alignment") && type == WGT_GGUF_UINT32) {
        if (!v || (v & (v - 1)) || w->file.ts.n)
            return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: general.alignment %llu: a power of two, before any tensor",
                             w->file.path, (unsigned long long)v);
        w->file.ts.align = (uint32_t)v;
    }
    return put_le(w, v, scalar_size[type]);
}

wgt_status wgt_gguf_writer_add_u32(wgt_gguf_writer *w, const char *key, uint32_t v) { return wgt_gguf_writer_add(w, key, WGT_GGUF_UINT32, &v); }
wgt_status wgt_gguf_writer_add_f32(wgt_gguf_writer *w, const char *key, float v) { return wgt_gguf_writer_add(w, key, WGT_GGUF_FLOAT32, &v); }
wgt_status wgt_gguf_writer_add_bool(wgt_gguf_writer *w, const char *key, int v)
{
    uint8_t b = v != 0;
    return wgt_gguf_writer_add(w, key, WGT_GGUF_BOOL, &b);
}

wgt_status wgt_gguf_writer_add_str(wgt_gguf_writer *w, const char *key, const char *s)
{
    wgt_status st = begin_value(w, key, WGT_GGUF_STRING);
    return st ? st : put_str(w, s, strlen(s));
}

wgt_status wgt_gguf_writer_begin_array(wgt_gguf_writer *w, const char *key, wgt_gguf_type elem, uint64_t count)
{
    if ((unsigned)elem > WGT_GGUF_FLOAT64) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: element type %d", w->file.path, (int)elem);
    if (w->depth == (int)(sizeof w->stack / sizeof w->stack[0]))
        return wgt_error(WGT_ERR_LIMIT, "%s: arrays nested too deep", w->file.path);
    wgt_status st = begin_value(w, key, WGT_GGUF_ARRAY);
    if (st || (st = put_le(w, (uint64_t)elem, 4)) || (st = put_le(w, count, 8))) return st;
    w->stack[w->depth++] = (open_array){elem, count};
    return WGT_OK;
}

wgt_status wgt_gguf_writer_end_array(wgt_gguf_writer *w)
{
    if (!w->depth) return wgt_error(WGT_ERR_MISUSE, "%s: end_array without begin_array", w->file.path);
    if (w->stack[w->depth - 1].left)
        return wgt_error(WGT_ERR_MISUSE, "%s: array closed with %llu elements missing", w->file.path,
                         (unsigned long long)w->stack[w->depth - 1].left);
    w->depth--;
    return WGT_OK;
}

wgt_status wgt_gguf_writer_add_array(wgt_gguf_writer *w, const char *key, wgt_gguf_type elem, const void *values, uint64_t count)
{
    if ((unsigned)elem > WGT_GGUF_FLOAT64 || elem == WGT_GGUF_STRING || elem == WGT_GGUF_ARRAY)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: add_array takes numeric or bool elements", w->file.path);
    if (count > WGT_IO_MAX_HEADER) return wgt_error(WGT_ERR_LIMIT, "%s: array of %llu elements", w->file.path, (unsigned long long)count);
    wgt_status st = wgt_gguf_writer_begin_array(w, key, elem, 0);
    if (st) return st;
    w->meta_len -= 8; /* rewrite the count just written */
    w->depth--;
    if ((st = put_le(w, count, 8)) || (st = put(w, values, count * scalar_size[elem]))) return st;
    return WGT_OK;
}

wgt_status wgt_gguf_writer_add_str_array(wgt_gguf_writer *w, const char *key, const char *const *strs, const uint64_t *lens, uint64_t count)
{
    wgt_status st = wgt_gguf_writer_begin_array(w, key, WGT_GGUF_STRING, count);
    for (uint64_t i = 0; !st && i < count; i++) {
        w->stack[w->depth - 1].left--;
        st = put_str(w, strs[i], lens ? lens[i] : strlen(strs[i]));
    }
    return st ? st : wgt_gguf_writer_end_array(w);
}

static wgt_status add_value(wgt_gguf_writer *w, const char *key, const wgt_gguf_value *v)
{
    wgt_gguf_type t = wgt_gguf_value_type(v);
    wgt_status st;
    if (t == WGT_GGUF_STRING) {
        const char *s;
        uint64_t len;
        if ((st = wgt_gguf_value_str(v, &s, &len)) || (st = begin_value(w, key, t))) return st;
        return put_str(w, s, len);
    }
    if (t != WGT_GGUF_ARRAY) {
        /* re-read the stored bits through the widest getter and write them back at their size */
        uint64_t bits = 0;
        double d;
        int64_t i;
        if (t == WGT_GGUF_FLOAT32) {
            float f;
            if ((st = wgt_gguf_value_float(v, &d))) return st;
            f = (float)d;
            memcpy(&bits, &f, 4);
        } else if (t == WGT_GGUF_FLOAT64) {
            if ((st = wgt_gguf_value_float(v, &d))) return st;
            memcpy(&bits, &d, 8);
        } else if (t == WGT_GGUF_BOOL) {
            int b;
            if ((st = wgt_gguf_value_bool(v, &b))) return st;
            bits = (uint64_t)b;
        } else if (t == WGT_GGUF_UINT64) {
            if ((st = wgt_gguf_value_uint(v, &bits))) return st;
        } else {
            if ((st = wgt_gguf_value_int(v, &i))) return st;
            bits = (uint64_t)i;
        }
        return wgt_gguf_writer_add(w, key, t, &bits);
    }
    wgt_gguf_type e = wgt_gguf_array_type(v);
    uint64_t n = wgt_gguf_array_len(v);
    if (e != WGT_GGUF_STRING && e != WGT_GGUF_ARRAY) return wgt_gguf_writer_add_array(w, key, e, wgt_gguf_array_data(v), n);
    if ((st = wgt_gguf_writer_begin_array(w, key, e, n))) return st;
    for (uint64_t i = 0; i < n; i++) {
        if (e == WGT_GGUF_STRING) {
            const char *s;
            uint64_t len;
            if ((st = wgt_gguf_array_str(v, i, &s, &len))) return st;
            w->stack[w->depth - 1].left--;
            if ((st = put_str(w, s, len))) return st;
        } else if ((st = add_value(w, NULL, wgt_gguf_array_item(v, i)))) {
            return st;
        }
    }
    return wgt_gguf_writer_end_array(w);
}

wgt_status wgt_gguf_writer_add_value(wgt_gguf_writer *w, const char *key, const wgt_gguf_value *v)
{
    if (!v) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: NULL value", w->file.path);
    return add_value(w, key, v);
}

wgt_status wgt_gguf_writer_add_tensor(wgt_gguf_writer *w, const char *name, wgt_ftype type, uint32_t n_dims, const int64_t *ne)
{
    if (w->file.failed) return w->file.failed;
    if (w->file.started) return wgt_error(WGT_ERR_MISUSE, "%s: tensor '%s' added after tensor data", w->file.path, name);
    size_t len = name ? strlen(name) : 0;
    if (!len || len >= GGML_MAX_NAME || !wgt_utf8_valid(name, len))
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: tensor name '%s': 1 to %d bytes of UTF-8 (llama.cpp's limit)",
                         w->file.path, name ? name : "(null)", GGML_MAX_NAME - 1);
    if (n_dims < 1 || n_dims > WGT_GGUF_MAX_DIMS || !wgt_ftype_block_elems(type) || (int)type >= 200)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "%s: tensor '%s': %u dims or type %d not storable in GGUF", w->file.path, name, n_dims, (int)type);
    return wgt_wtensors_add(&w->file.ts, name, type, n_dims, ne);
}

/* Header: magic, version, counts, metadata, tensor infos with offsets, padding. */
/* The header, before the first data bytes (wgt_wfile's start). */
static wgt_status start(void *owner)
{
    wgt_gguf_writer *w = owner;
    if (w->depth) return wgt_error(WGT_ERR_MISUSE, "%s: an array is still open", w->file.path);
    uint64_t kv_bytes = w->meta_len;
    uint64_t off = 0;
    wgt_status st;
    uint32_t align = w->file.ts.align;
    for (uint64_t i = 0; i < w->file.ts.n; i++) {
        wgt_wtensor *t = &w->file.ts.t[i];
        t->offset = off;
        uint64_t padded = (t->bytes + align - 1) / align * align;
        if (padded < t->bytes || off > UINT64_MAX - padded) return wgt_error(WGT_ERR_LIMIT, "%s: tensor data overflows", w->file.path);
        off += padded;
        if ((st = put_str(w, t->name, strlen(t->name))) || (st = put_le(w, t->n_dims, 4))) return st;
        for (uint32_t d = 0; d < t->n_dims; d++)
            if ((st = put_le(w, (uint64_t)t->dims[d], 8))) return st;
        if ((st = put_le(w, (uint64_t)t->type, 4)) || (st = put_le(w, t->offset, 8))) return st;
    }
    uint8_t head[24];
    memcpy(head, "GGUF", 4);
    uint64_t fields[3] = {3, w->file.ts.n, w->n_kv};
    for (int i = 0; i < 4; i++) head[4 + i] = (uint8_t)(fields[0] >> (8 * i));
    for (int i = 0; i < 8; i++) head[8 + i] = (uint8_t)(fields[1] >> (8 * i));
    for (int i = 0; i < 8; i++) head[16 + i] = (uint8_t)(fields[2] >> (8 * i));
    if ((st = wgt_write_all(w->file.f, head, 24, w->file.path)) || (st = wgt_write_all(w->file.f, w->meta, kv_bytes, w->file.path)) ||
        (st = wgt_write_all(w->file.f, w->meta + kv_bytes, w->meta_len - kv_bytes, w->file.path)) ||
        (st = wgt_write_pad(w->file.f, 24 + w->meta_len, align, w->file.path)))
        return st;
    w->file.started = 1;
    return WGT_OK;
}

wgt_status wgt_gguf_writer_write(wgt_gguf_writer *w, const void *data, uint64_t bytes)
{
    return wgt_wfile_write(&w->file, data, bytes);
}

wgt_status wgt_gguf_writer_finish(wgt_gguf_writer *w) { return wgt_wfile_finish(&w->file); }

void wgt_gguf_writer_free(wgt_gguf_writer *w)
{
    if (!w) return;
    for (uint64_t i = 0; i < w->n_kv; i++) free(w->keys[i]);
    wgt_wfile_free(&w->file); /* removes the temporary file, never the final name */
    free(w->keys);
    free(w->meta);
    free(w);
}
