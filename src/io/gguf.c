/* GGUF reader (v2 and v3, little-endian). Layout, from ggml's docs/gguf.md:
 *   magic "GGUF" | u32 version | u64 tensor_count | u64 kv_count
 *   kv_count x { string key | u32 value_type | value }
 *   tensor_count x { string name | u32 n_dims | u64 ne[n_dims] | u32 type | u64 offset }
 *   padding to general.alignment (default 32) | tensor data (offsets relative to here)
 * where string = u64 length + bytes (no NUL), and an array value = u32 elem_type + u64 count +
 * elements. The file is mapped; every read goes through need(), which checks the bounds first, and
 * every count is checked against the bytes left before anything is allocated for it, so memory
 * stays proportional to the header's real size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/io.h"

#define MAX_NAME 4096     /* keys and tensor names; ggml itself allows 63-byte tensor names */
#define MAX_DEPTH 8       /* nesting of arrays in arrays */
#define MAX_NESTED 1000000 /* array values held as nodes, in all */

struct wgt_gguf_value {
    uint8_t type, elem;
    uint64_t count;          /* arrays */
    uint64_t bits;           /* scalar numbers and bools, as stored (zero-extended) */
    char *str;               /* scalar strings: owned, NUL-terminated */
    uint64_t len;
    const uint8_t *data;     /* arrays: the first element in the map */
    uint32_t *str_offs;      /* string arrays: each element's offset from data */
    wgt_gguf_value *items;   /* arrays of arrays */
};

struct wgt_gguf {
    char *path;
    wgt_map map;
    uint32_t version, alignment;
    uint64_t data_offset;
    int64_t n_kv, n_tensors;
    char **keys;
    wgt_gguf_value *values;
    wgt_gguf_tensor *tensors;
    wgt_names key_index, tensor_index;
    uint64_t nested; /* nodes allocated for arrays of arrays */
};

typedef struct cursor {
    wgt_gguf *g;
    const uint8_t *p;
    uint64_t pos, size;
    char where[192]; /* the field being read, for messages */
} cursor;

static const char *type_names[] = {"uint8", "int8",   "uint16", "int16",  "uint32",
                                   "int32", "float32", "bool",  "string", "array",
                                   "uint64", "int64", "float64"};
static const uint8_t type_sizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

static wgt_status need(cursor *c, uint64_t n)
{
    if (n > c->size - c->pos)
        return wgt_error(WGT_ERR_FORMAT,
                         "%s: truncated: %s needs %llu bytes at offset %llu, the file has %llu",
                         c->g->path, c->where, (unsigned long long)n, (unsigned long long)c->pos,
                         (unsigned long long)c->size);
    if (c->pos + n > WGT_IO_MAX_HEADER)
        return wgt_error(WGT_ERR_LIMIT,
                         "%s: %s at offset %llu: the header is larger than the %llu MB we accept",
                         c->g->path, c->where, (unsigned long long)c->pos, WGT_IO_MAX_HEADER >> 20);
    return WGT_OK;
}

static uint64_t rd(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static wgt_status get_u32(cursor *c, uint32_t *v)
{
    wgt_status st = need(c, 4);
    if (st) return st;
    *v = (uint32_t)rd(c->p + c->pos, 4);
    c->pos += 4;
    return WGT_OK;
}

static wgt_status get_u64(cursor *c, uint64_t *v)
{
    wgt_status st = need(c, 8);
    if (st) return st;
    *v = rd(c->p + c->pos, 8);
    c->pos += 8;
    return WGT_OK;
}

/* A string's length and start; the bytes are checked to be in the file. */
static wgt_status get_str(cursor *c, const char **s, uint64_t *len)
{
    wgt_status st = get_u64(c, len);
    if (st) return st;
    if ((st = need(c, *len))) return st;
    *s = (const char *)c->p + c->pos;
    c->pos += *len;
    return WGT_OK;
}

/* A key or tensor name: valid UTF-8, no NUL, bounded; returned as a NUL-terminated copy. */
static wgt_status get_name(cursor *c, char **out)
{
    const char *s;
    uint64_t len;
    uint64_t at = c->pos;
    wgt_status st = get_str(c, &s, &len);
    if (st) return st;
    if (len == 0) return wgt_error(WGT_ERR_FORMAT, "%s: %s at offset %llu is empty", c->g->path, c->where, (unsigned long long)at);
    if (len > MAX_NAME)
        return wgt_error(WGT_ERR_FORMAT, "%s: %s at offset %llu is %llu bytes long (limit %d)",
                         c->g->path, c->where, (unsigned long long)at, (unsigned long long)len, MAX_NAME);
    if (memchr(s, 0, (size_t)len) || !wgt_utf8_valid(s, len))
        return wgt_error(WGT_ERR_FORMAT, "%s: %s at offset %llu is not valid UTF-8 text",
                         c->g->path, c->where, (unsigned long long)at);
    if (!(*out = wgt_strndup(s, len))) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: %s", c->g->path, c->where);
    return WGT_OK;
}

static void value_free(wgt_gguf_value *v)
{
    free(v->str);
    free(v->str_offs);
    if (v->items)
        for (uint64_t i = 0; i < v->count; i++) value_free(&v->items[i]);
    free(v->items);
}

static wgt_status parse_value(cursor *c, wgt_gguf_value *v, uint32_t type, int depth);

static wgt_status parse_array(cursor *c, wgt_gguf_value *v, int depth)
{
    uint32_t elem;
    uint64_t count, at = c->pos;
    wgt_status st;
    if ((st = get_u32(c, &elem)) || (st = get_u64(c, &count))) return st;
    if (elem > WGT_GGUF_FLOAT64)
        return wgt_error(WGT_ERR_FORMAT, "%s: %s: unknown array element type %u at offset %llu",
                         c->g->path, c->where, elem, (unsigned long long)at);
    v->elem = (uint8_t)elem;
    uint64_t left = c->size - c->pos;
    uint64_t min_size = elem == WGT_GGUF_STRING ? 8 : elem == WGT_GGUF_ARRAY ? 12 : type_sizes[elem];
    if (count > left / min_size)
        return wgt_error(WGT_ERR_FORMAT,
                         "%s: %s: array of %llu %s at offset %llu cannot fit in the %llu bytes left",
                         c->g->path, c->where, (unsigned long long)count, type_names[elem],
                         (unsigned long long)at, (unsigned long long)left);
    v->count = count;
    v->data = c->p + c->pos;
    if (elem == WGT_GGUF_STRING) {
        if (count && !(v->str_offs = wgt_malloc_array(count, sizeof *v->str_offs)))
            return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: %s: %llu strings", c->g->path, c->where, (unsigned long long)count);
        for (uint64_t i = 0; i < count; i++) {
            const char *s;
            uint64_t len;
            v->str_offs[i] = (uint32_t)(c->pos - (uint64_t)(v->data - c->p));
            if ((st = get_str(c, &s, &len))) return st;
        }
    } else if (elem == WGT_GGUF_ARRAY) {
        if (depth >= MAX_DEPTH)
            return wgt_error(WGT_ERR_LIMIT, "%s: %s: arrays nested deeper than %d", c->g->path, c->where, MAX_DEPTH);
        if (count > MAX_NESTED - c->g->nested)
            return wgt_error(WGT_ERR_LIMIT, "%s: %s: more than %d nested arrays in the file",
                             c->g->path, c->where, MAX_NESTED);
        c->g->nested += count;
        if (count && !(v->items = calloc((size_t)count, sizeof *v->items)))
            return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: %s: %llu arrays", c->g->path, c->where, (unsigned long long)count);
        for (uint64_t i = 0; i < count; i++)
            if ((st = parse_value(c, &v->items[i], WGT_GGUF_ARRAY, depth + 1))) return st;
    } else {
        uint64_t bytes = count * type_sizes[elem]; /* no overflow: count <= left / size */
        if ((st = need(c, bytes))) return st;
        c->pos += bytes;
    }
    return WGT_OK;
}

static wgt_status parse_value(cursor *c, wgt_gguf_value *v, uint32_t type, int depth)
{
    wgt_status st;
    v->type = (uint8_t)type;
    if (type == WGT_GGUF_STRING) {
        const char *s;
        if ((st = get_str(c, &s, &v->len))) return st;
        if (!(v->str = wgt_strndup(s, v->len)))
            return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: %s", c->g->path, c->where);
        return WGT_OK;
    }
    if (type == WGT_GGUF_ARRAY) return parse_array(c, v, depth);
    if ((st = need(c, type_sizes[type]))) return st;
    v->bits = rd(c->p + c->pos, type_sizes[type]);
    c->pos += type_sizes[type];
    return WGT_OK;
}

static int cmp_by_offset(const void *a, const void *b)
{
    const wgt_gguf_tensor *x = *(wgt_gguf_tensor *const *)a, *y = *(wgt_gguf_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static wgt_status parse_tensor(cursor *c, int64_t i, wgt_gguf_tensor *t)
{
    wgt_gguf *g = c->g;
    wgt_status st;
    snprintf(c->where, sizeof c->where, "tensor %lld name", (long long)i);
    if ((st = get_name(c, (char **)&t->name))) return st;
    snprintf(c->where, sizeof c->where, "tensor %lld ('%.64s') info", (long long)i, t->name);
    uint32_t n_dims, type;
    if ((st = get_u32(c, &n_dims))) return st;
    if (n_dims < 1 || n_dims > WGT_GGUF_MAX_DIMS)
        return wgt_error(WGT_ERR_FORMAT, "%s: %s: n_dims %u (allowed 1..%d)", g->path, c->where,
                         n_dims, WGT_GGUF_MAX_DIMS);
    t->n_dims = n_dims;
    int64_t n = 1;
    for (int d = 0; d < WGT_GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        uint64_t ne;
        if ((st = get_u64(c, &ne))) return st;
        if (ne > (uint64_t)INT64_MAX)
            return wgt_error(WGT_ERR_FORMAT, "%s: %s: ne[%u] = %llu is negative as int64", g->path,
                             c->where, d, (unsigned long long)ne);
        t->ne[d] = (int64_t)ne;
        if (ne && n > INT64_MAX / (int64_t)ne)
            return wgt_error(WGT_ERR_FORMAT, "%s: %s: the element count overflows 64 bits", g->path, c->where);
        n *= (int64_t)ne;
    }
    t->n_elements = n;
    if ((st = get_u32(c, &type))) return st;
    t->type = (wgt_ftype)type;
    uint32_t blk = type < 200 ? wgt_ftype_block_elems(t->type) : 0;
    if (!blk)
        return wgt_error(WGT_ERR_FORMAT, "%s: %s: unknown tensor type %u", g->path, c->where, type);
    if (t->ne[0] % blk)
        return wgt_error(WGT_ERR_FORMAT, "%s: %s: row length ne[0] = %lld is not a multiple of %s's block of %u",
                         g->path, c->where, (long long)t->ne[0], wgt_ftype_name(t->type), blk);
    if (wgt_ftype_bytes(t->type, n, &t->bytes))
        return wgt_error(WGT_ERR_FORMAT, "%s: %s: the byte size overflows", g->path, c->where);
    return get_u64(c, &t->offset);
}

static wgt_status parse(wgt_gguf *g)
{
    cursor c = {.g = g, .p = g->map.data, .size = g->map.size};
    wgt_status st;
    uint32_t version;
    uint64_t n_tensors, n_kv;
    snprintf(c.where, sizeof c.where, "the magic");
    if ((st = need(&c, 4))) return st;
    if (memcmp(c.p, "GGUF", 4))
        return wgt_error(WGT_ERR_FORMAT, "%s: not a GGUF file (magic %02x %02x %02x %02x, expected \"GGUF\")",
                         g->path, c.p[0], c.p[1], c.p[2], c.p[3]);
    c.pos = 4;
    snprintf(c.where, sizeof c.where, "the version");
    if ((st = get_u32(&c, &version))) return st;
    if (version == 1)
        return wgt_error(WGT_ERR_UNSUPPORTED, "%s: GGUF version 1 (32-bit counts) is not supported: "
                         "convert the model again with a current llama.cpp", g->path);
    if (version == 0x02000000u || version == 0x03000000u)
        return wgt_error(WGT_ERR_UNSUPPORTED, "%s: a big-endian GGUF file: only little-endian files are supported", g->path);
    if (version != 2 && version != 3)
        return wgt_error(WGT_ERR_FORMAT, "%s: unknown GGUF version %u (supported: 2, 3)", g->path, version);
    g->version = version;
    snprintf(c.where, sizeof c.where, "the tensor count");
    if ((st = get_u64(&c, &n_tensors))) return st;
    snprintf(c.where, sizeof c.where, "the metadata count");
    if ((st = get_u64(&c, &n_kv))) return st;
    /* smallest possible entries: a kv is 8 + 1 + 4 + 1 bytes, a tensor info 8 + 1 + 4 + 8 + 4 + 8 */
    uint64_t left = c.size - c.pos;
    if (n_kv > left / 14)
        return wgt_error(WGT_ERR_FORMAT, "%s: metadata count %llu cannot fit in the %llu bytes left",
                         g->path, (unsigned long long)n_kv, (unsigned long long)left);
    if (n_tensors > left / 33)
        return wgt_error(WGT_ERR_FORMAT, "%s: tensor count %llu cannot fit in the %llu bytes left",
                         g->path, (unsigned long long)n_tensors, (unsigned long long)left);
    g->keys = calloc((size_t)n_kv + 1, sizeof *g->keys);
    g->values = calloc((size_t)n_kv + 1, sizeof *g->values);
    g->tensors = calloc((size_t)n_tensors + 1, sizeof *g->tensors);
    if (!g->keys || !g->values || !g->tensors) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: header tables", g->path);
    if ((st = wgt_names_init(&g->key_index, n_kv)) || (st = wgt_names_init(&g->tensor_index, n_tensors)))
        return st;

    g->alignment = 32;
    for (uint64_t i = 0; i < n_kv; i++) {
        snprintf(c.where, sizeof c.where, "metadata %llu key", (unsigned long long)i);
        if ((st = get_name(&c, &g->keys[i]))) return st;
        g->n_kv = (int64_t)i + 1; /* owns keys[i] and values[i] from here on, for freeing */
        snprintf(c.where, sizeof c.where, "metadata %llu ('%.64s')", (unsigned long long)i, g->keys[i]);
        int64_t dup = wgt_names_put(&g->key_index, g->keys[i], (int64_t)i);
        if (dup >= 0)
            return wgt_error(WGT_ERR_FORMAT, "%s: %s: duplicate key (also metadata %lld)", g->path,
                             c.where, (long long)dup);
        uint32_t type;
        uint64_t at = c.pos;
        if ((st = get_u32(&c, &type))) return st;
        if (type > WGT_GGUF_FLOAT64)
            return wgt_error(WGT_ERR_FORMAT, "%s: %s: unknown value type %u at offset %llu", g->path,
                             c.where, type, (unsigned long long)at);
        if ((st = parse_value(&c, &g->values[i], type, 0))) return st;
        if (!strcmp(g->keys[i], "general.alignment")) {
            uint64_t a = g->values[i].bits;
            if (type != WGT_GGUF_UINT32)
                return wgt_error(WGT_ERR_FORMAT, "%s: general.alignment has type %s, expected uint32",
                                 g->path, type_names[type]);
            if (a == 0 || (a & (a - 1)) || a > (1u << 30))
                return wgt_error(WGT_ERR_FORMAT, "%s: general.alignment %llu is not a power of two up to 2^30",
                                 g->path, (unsigned long long)a);
            g->alignment = (uint32_t)a;
        }
    }
    for (uint64_t i = 0; i < n_tensors; i++) {
        wgt_gguf_tensor *t = &g->tensors[i];
        g->n_tensors = (int64_t)i + 1;
        if ((st = parse_tensor(&c, (int64_t)i, t))) return st;
        int64_t dup = wgt_names_put(&g->tensor_index, t->name, (int64_t)i);
        if (dup >= 0)
            return wgt_error(WGT_ERR_FORMAT, "%s: tensor %llu: duplicate name '%.64s' (also tensor %lld)",
                             g->path, (unsigned long long)i, t->name, (long long)dup);
    }
    uint64_t a = g->alignment;
    g->data_offset = (c.pos + a - 1) / a * a; /* c.pos <= 100 MB: no overflow */
    wgt_gguf_tensor **order = wgt_malloc_array((size_t)n_tensors + 1, sizeof *order);
    if (!order) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: tensor order", g->path);
    for (uint64_t i = 0; i < n_tensors; i++) {
        wgt_gguf_tensor *t = &g->tensors[i];
        order[i] = t;
        const char *what = NULL;
        if (t->offset % a) what = "is not a multiple of general.alignment";
        else if (t->offset > g->map.size || g->data_offset > g->map.size - t->offset ||
                 t->bytes > g->map.size - g->data_offset - t->offset)
            what = "puts its bytes past the end of the file";
        if (what) {
            st = wgt_error(WGT_ERR_FORMAT,
                           "%s: tensor %llu ('%.64s'): offset %llu (%llu bytes from data offset %llu) %s "
                           "(alignment %u, file size %llu)", g->path, (unsigned long long)i, t->name,
                           (unsigned long long)t->offset, (unsigned long long)t->bytes,
                           (unsigned long long)g->data_offset, what, g->alignment,
                           (unsigned long long)g->map.size);
            free(order);
            return st;
        }
        t->offset += g->data_offset;
        t->data = g->map.data + t->offset;
    }
    qsort(order, (size_t)n_tensors, sizeof *order, cmp_by_offset);
    for (uint64_t i = 1; i < n_tensors; i++)
        if (order[i - 1]->offset + order[i - 1]->bytes > order[i]->offset) {
            st = wgt_error(WGT_ERR_FORMAT, "%s: tensors '%.64s' and '%.64s' overlap (bytes %llu..%llu and %llu..)",
                           g->path, order[i - 1]->name, order[i]->name,
                           (unsigned long long)order[i - 1]->offset,
                           (unsigned long long)(order[i - 1]->offset + order[i - 1]->bytes),
                           (unsigned long long)order[i]->offset);
            free(order);
            return st;
        }
    free(order);
    return WGT_OK;
}

static wgt_status open_common(const char *path, const void *data, uint64_t size, wgt_gguf **out)
{
    *out = NULL;
    if (!path) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_gguf_open: path is NULL");
    wgt_gguf *g = calloc(1, sizeof *g);
    if (!g || !(g->path = wgt_strndup(path, strlen(path)))) {
        free(g);
        return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: opening", path);
    }
    wgt_status st = WGT_OK;
    if (data || !size) g->map = (wgt_map){.data = size ? data : NULL, .size = size, .borrowed = 1};
    else st = wgt_map_open(path, &g->map);
    if (!st) st = parse(g);
    if (st) {
        wgt_gguf_free(g);
        return st;
    }
    *out = g;
    return WGT_OK;
}

wgt_status wgt_gguf_open(const char *path, wgt_gguf **out) { return open_common(path, NULL, 1, out); }

wgt_status wgt_gguf_open_memory(const char *name, const void *data, uint64_t size, wgt_gguf **out)
{
    return open_common(name, data, size, out);
}

void wgt_gguf_free(wgt_gguf *g)
{
    if (!g) return;
    for (int64_t i = 0; i < g->n_kv; i++) {
        free(g->keys[i]);
        value_free(&g->values[i]);
    }
    for (int64_t i = 0; i < g->n_tensors; i++) free((char *)g->tensors[i].name);
    free(g->keys);
    free(g->values);
    free(g->tensors);
    wgt_names_free(&g->key_index);
    wgt_names_free(&g->tensor_index);
    wgt_map_close(&g->map);
    free(g->path);
    free(g);
}

uint32_t wgt_gguf_version(const wgt_gguf *g) { return g ? g->version : 0; }
uint32_t wgt_gguf_alignment(const wgt_gguf *g) { return g ? g->alignment : 0; }
uint64_t wgt_gguf_data_offset(const wgt_gguf *g) { return g ? g->data_offset : 0; }
uint64_t wgt_gguf_file_size(const wgt_gguf *g) { return g ? g->map.size : 0; }
int64_t wgt_gguf_kv_count(const wgt_gguf *g) { return g ? g->n_kv : 0; }
int64_t wgt_gguf_tensor_count(const wgt_gguf *g) { return g ? g->n_tensors : 0; }

const char *wgt_gguf_kv_key(const wgt_gguf *g, int64_t i)
{
    return g && i >= 0 && i < g->n_kv ? g->keys[i] : NULL;
}

const wgt_gguf_value *wgt_gguf_kv_value(const wgt_gguf *g, int64_t i)
{
    return g && i >= 0 && i < g->n_kv ? &g->values[i] : NULL;
}

const wgt_gguf_value *wgt_gguf_find(const wgt_gguf *g, const char *key)
{
    int64_t i = g ? wgt_names_get(&g->key_index, key) : -1;
    return i >= 0 ? &g->values[i] : NULL;
}

const wgt_gguf_tensor *wgt_gguf_tensor_at(const wgt_gguf *g, int64_t i)
{
    return g && i >= 0 && i < g->n_tensors ? &g->tensors[i] : NULL;
}

const wgt_gguf_tensor *wgt_gguf_tensor_find(const wgt_gguf *g, const char *name)
{
    int64_t i = g ? wgt_names_get(&g->tensor_index, name) : -1;
    return i >= 0 ? &g->tensors[i] : NULL;
}

/* ---- typed access ---- */

wgt_gguf_type wgt_gguf_value_type(const wgt_gguf_value *v) { return v ? (wgt_gguf_type)v->type : WGT_GGUF_UINT8; }
wgt_gguf_type wgt_gguf_array_type(const wgt_gguf_value *v) { return v ? (wgt_gguf_type)v->elem : WGT_GGUF_UINT8; }
uint64_t wgt_gguf_array_len(const wgt_gguf_value *v) { return v && v->type == WGT_GGUF_ARRAY ? v->count : 0; }

static int is_signed(int t) { return t == WGT_GGUF_INT8 || t == WGT_GGUF_INT16 || t == WGT_GGUF_INT32 || t == WGT_GGUF_INT64; }
static int is_int(int t) { return t <= WGT_GGUF_INT32 || t == WGT_GGUF_UINT64 || t == WGT_GGUF_INT64; }

/* Sign-extend raw bits of an integer type to int64 (uint64 above INT64_MAX: *overflow set). */
static int64_t to_i64(int t, uint64_t bits)
{
    switch (t) {
    case WGT_GGUF_INT8: return (int8_t)bits;
    case WGT_GGUF_INT16: return (int16_t)bits;
    case WGT_GGUF_INT32: return (int32_t)bits;
    default: return (int64_t)bits;
    }
}

static wgt_status num_int(int t, uint64_t bits, int64_t *out)
{
    if (t == WGT_GGUF_FLOAT32 || !is_int(t))
        return wgt_error(WGT_ERR_FORMAT, "a %s value where an integer was expected", t <= 12 ? type_names[t] : "?");
    if (t == WGT_GGUF_UINT64 && bits > (uint64_t)INT64_MAX)
        return wgt_error(WGT_ERR_FORMAT, "uint64 value %llu does not fit int64", (unsigned long long)bits);
    *out = to_i64(t, bits);
    return WGT_OK;
}

static wgt_status num_float(int t, uint64_t bits, double *out)
{
    if (t == WGT_GGUF_FLOAT32) {
        uint32_t u = (uint32_t)bits;
        float f;
        memcpy(&f, &u, 4);
        *out = f;
    } else if (t == WGT_GGUF_FLOAT64) {
        memcpy(out, &bits, 8);
    } else if (is_int(t)) {
        *out = is_signed(t) ? (double)to_i64(t, bits) : (double)bits;
    } else {
        return wgt_error(WGT_ERR_FORMAT, "a %s value where a number was expected", t <= 12 ? type_names[t] : "?");
    }
    return WGT_OK;
}

wgt_status wgt_gguf_value_int(const wgt_gguf_value *v, int64_t *out)
{
    if (!v) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_gguf_value_int: NULL value");
    return num_int(v->type, v->bits, out);
}

wgt_status wgt_gguf_value_uint(const wgt_gguf_value *v, uint64_t *out)
{
    if (!v) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_gguf_value_uint: NULL value");
    if (v->type == WGT_GGUF_UINT64) {
        *out = v->bits;
        return WGT_OK;
    }
    int64_t i = 0;
    wgt_status st = num_int(v->type, v->bits, &i);
    if (st) return st;
    if (i < 0) return wgt_error(WGT_ERR_FORMAT, "negative value %lld where an unsigned one was expected", (long long)i);
    *out = (uint64_t)i;
    return WGT_OK;
}

wgt_status wgt_gguf_value_float(const wgt_gguf_value *v, double *out)
{
    if (!v) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_gguf_value_float: NULL value");
    return num_float(v->type, v->bits, out);
}

wgt_status wgt_gguf_value_bool(const wgt_gguf_value *v, int *out)
{
    if (!v) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_gguf_value_bool: NULL value");
    if (v->type != WGT_GGUF_BOOL) return wgt_error(WGT_ERR_FORMAT, "a %s value where a bool was expected", type_names[v->type]);
    *out = v->bits != 0;
    return WGT_OK;
}

wgt_status wgt_gguf_value_str(const wgt_gguf_value *v, const char **s, uint64_t *len)
{
    if (!v) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_gguf_value_str: NULL value");
    if (v->type != WGT_GGUF_STRING) return wgt_error(WGT_ERR_FORMAT, "a %s value where a string was expected", type_names[v->type]);
    *s = v->str;
    if (len) *len = v->len;
    return WGT_OK;
}

static wgt_status array_elem(const wgt_gguf_value *v, uint64_t i, int want_scalar)
{
    if (!v || v->type != WGT_GGUF_ARRAY) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "not an array value");
    if (i >= v->count)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "array index %llu out of range (length %llu)",
                         (unsigned long long)i, (unsigned long long)v->count);
    if (want_scalar && (v->elem == WGT_GGUF_STRING || v->elem == WGT_GGUF_ARRAY))
        return wgt_error(WGT_ERR_FORMAT, "an array of %s where numbers were expected", type_names[v->elem]);
    return WGT_OK;
}

wgt_status wgt_gguf_array_int(const wgt_gguf_value *v, uint64_t i, int64_t *out)
{
    wgt_status st = array_elem(v, i, 1);
    if (st) return st;
    int sz = type_sizes[v->elem];
    if (v->elem == WGT_GGUF_BOOL) {
        *out = v->data[i] != 0;
        return WGT_OK;
    }
    return num_int(v->elem, rd(v->data + i * (uint64_t)sz, sz), out);
}

wgt_status wgt_gguf_array_float(const wgt_gguf_value *v, uint64_t i, double *out)
{
    wgt_status st = array_elem(v, i, 1);
    if (st) return st;
    int sz = type_sizes[v->elem];
    return num_float(v->elem, rd(v->data + i * (uint64_t)sz, sz), out);
}

wgt_status wgt_gguf_array_str(const wgt_gguf_value *v, uint64_t i, const char **s, uint64_t *len)
{
    wgt_status st = array_elem(v, i, 0);
    if (st) return st;
    if (v->elem != WGT_GGUF_STRING) return wgt_error(WGT_ERR_FORMAT, "an array of %s where strings were expected", type_names[v->elem]);
    const uint8_t *p = v->data + v->str_offs[i];
    *len = rd(p, 8);
    *s = (const char *)p + 8;
    return WGT_OK;
}

const wgt_gguf_value *wgt_gguf_array_item(const wgt_gguf_value *v, uint64_t i)
{
    if (!v || v->type != WGT_GGUF_ARRAY || v->elem != WGT_GGUF_ARRAY || i >= v->count) return NULL;
    return &v->items[i];
}

const void *wgt_gguf_array_data(const wgt_gguf_value *v)
{
    if (!v || v->type != WGT_GGUF_ARRAY || v->elem == WGT_GGUF_STRING || v->elem == WGT_GGUF_ARRAY) return NULL;
    return v->data;
}

/* ---- by key ---- */

static wgt_status lookup(const wgt_gguf *g, const char *key, const wgt_gguf_value **v)
{
    if (!g || !key) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_gguf_get_*: NULL file or key");
    if (!(*v = wgt_gguf_find(g, key))) return wgt_error(WGT_ERR_NOT_FOUND, "%s: no metadata key '%s'", g->path, key);
    return WGT_OK;
}

#define GETTER(fn, T, call)                                                                     \
    wgt_status fn(const wgt_gguf *g, const char *key, T *out)                                   \
    {                                                                                            \
        const wgt_gguf_value *v = NULL;                                                          \
        wgt_status st = lookup(g, key, &v);                                                      \
        if (!st && (st = call)) {                                                                \
            char why[512];                                                                       \
            snprintf(why, sizeof why, "%s", wgt_errmsg());                                       \
            return wgt_error(st, "%s: metadata '%s': %s", g->path, key, why);                   \
        }                                                                                        \
        return st;                                                                               \
    }

GETTER(wgt_gguf_get_int, int64_t, wgt_gguf_value_int(v, out))
GETTER(wgt_gguf_get_uint, uint64_t, wgt_gguf_value_uint(v, out))
GETTER(wgt_gguf_get_float, double, wgt_gguf_value_float(v, out))
GETTER(wgt_gguf_get_bool, int, wgt_gguf_value_bool(v, out))
GETTER(wgt_gguf_get_str, const char *, wgt_gguf_value_str(v, out, NULL))

wgt_status wgt_gguf_tensor_to_f32(const wgt_gguf_tensor *t, int64_t first, int64_t n, float *dst)
{
    if (!t || !dst) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_gguf_tensor_to_f32: NULL tensor or destination");
    uint32_t blk = wgt_ftype_block_elems(t->type);
    if (first < 0 || n < 0 || first > t->n_elements || n > t->n_elements - first || first % blk || n % blk)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT,
                         "tensor '%s': elements [%lld, +%lld) are outside its %lld or not on %u-element blocks",
                         t->name, (long long)first, (long long)n, (long long)t->n_elements, blk);
    uint64_t off;
    wgt_status st = wgt_ftype_bytes(t->type, first, &off);
    if (st) return st;
    return wgt_dequantize(t->type, (const uint8_t *)t->data + off, dst, n);
}
