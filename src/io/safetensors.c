/* safetensors reader: u64 header length N | N bytes of JSON | data. The JSON maps tensor names to
 * {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the data) plus an optional
 * "__metadata__" string map. As the format's own reader does, we require the tensors to tile the
 * data exactly: no overlap, no hole, nothing past the end. Sharded checkpoints add
 * model.safetensors.index.json: {"weight_map": {tensor: shard file}}. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "io/io.h"
#include "io/json_util.h"

#define MAX_SHARDS 4096

typedef struct st_file {
    char *path;
    wgt_map map;
} st_file;

struct wgt_safetensors {
    st_file *files;
    int n_files;
    wgt_st_tensor *tensors;
    int64_t n, cap;
    wgt_names index;
    char **meta_keys, **meta_vals;
    int64_t n_meta;
};

static const struct {
    const char *name;
    wgt_ftype type;
} dtypes[] = {
    {"F64", WGT_FTYPE_F64}, {"F32", WGT_FTYPE_F32}, {"F16", WGT_FTYPE_F16},
    {"BF16", WGT_FTYPE_BF16}, {"I64", WGT_FTYPE_I64}, {"I32", WGT_FTYPE_I32},
    {"I16", WGT_FTYPE_I16}, {"I8", WGT_FTYPE_I8}, {"U8", WGT_FTYPE_U8},
    {"BOOL", WGT_FTYPE_BOOL}, {"U16", WGT_FTYPE_U16}, {"U32", WGT_FTYPE_U32},
    {"U64", WGT_FTYPE_U64}, {"F8_E4M3", WGT_FTYPE_F8_E4M3}, {"F8_E5M2", WGT_FTYPE_F8_E5M2},
};

const char *wgt_st_dtype_name(wgt_ftype t)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (dtypes[i].type == t) return dtypes[i].name;
    return NULL;
}

static int cmp_offset(const void *a, const void *b)
{
    const wgt_st_tensor *x = *(wgt_st_tensor *const *)a, *y = *(wgt_st_tensor *const *)b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    return x->bytes < y->bytes ? -1 : x->bytes > y->bytes;
}

static wgt_status parse_entry(const char *path, const cJSON *e, uint64_t data_size, uint64_t data_start,
                              wgt_st_tensor *t)
{
    const char *name = e->string;
    if (!name || !*name || !wgt_utf8_valid(name, strlen(name)))
        return wgt_error(WGT_ERR_FORMAT, "%s: a tensor name is empty or not valid UTF-8", path);
    if (!cJSON_IsObject(e)) return wgt_error(WGT_ERR_FORMAT, "%s: tensor '%s': entry is not an object", path, name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt)) return wgt_error(WGT_ERR_FORMAT, "%s: tensor '%s': \"dtype\" missing or not a string", path, name);
    int found = 0;
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (!strcmp(dtypes[i].name, dt->valuestring)) {
            t->type = dtypes[i].type;
            found = 1;
        }
    if (!found) return wgt_error(WGT_ERR_UNSUPPORTED, "%s: tensor '%s': dtype \"%.32s\" is not supported", path, name, dt->valuestring);
    if (!cJSON_IsArray(shape)) return wgt_error(WGT_ERR_FORMAT, "%s: tensor '%s': \"shape\" missing or not an array", path, name);
    int nd = cJSON_GetArraySize(shape);
    if (nd > WGT_ST_MAX_DIMS) return wgt_error(WGT_ERR_LIMIT, "%s: tensor '%s': %d dimensions (we handle up to %d)", path, name, nd, WGT_ST_MAX_DIMS);
    t->n_dims = (uint32_t)nd;
    int64_t n = 1;
    int d = 0;
    for (const cJSON *s = shape->child; s; s = s->next, d++) {
        uint64_t v;
        if (!wgt_json_uint(s, &v)) return wgt_error(WGT_ERR_FORMAT, "%s: tensor '%s': shape[%d] is not a non-negative integer", path, name, d);
        t->shape[d] = (int64_t)v;
        if (v && n > INT64_MAX / (int64_t)v) return wgt_error(WGT_ERR_FORMAT, "%s: tensor '%s': the element count overflows", path, name);
        n *= (int64_t)v;
    }
    t->n_elements = n;
    uint64_t b, en, bytes;
    if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 || !wgt_json_uint(offs->child, &b) ||
        !wgt_json_uint(offs->child->next, &en))
        return wgt_error(WGT_ERR_FORMAT, "%s: tensor '%s': \"data_offsets\" is not two non-negative integers", path, name);
    if (en < b) return wgt_error(WGT_ERR_FORMAT, "%s: tensor '%s': data_offsets end %llu before begin %llu", path, name, (unsigned long long)en, (unsigned long long)b);
    if (wgt_ftype_bytes(t->type, n, &bytes)) return wgt_error(WGT_ERR_FORMAT, "%s: tensor '%s': the byte size overflows", path, name);
    if (en - b != bytes)
        return wgt_error(WGT_ERR_FORMAT, "%s: tensor '%s': data_offsets span %llu bytes, but %lld elements of %s need %llu",
                         path, name, (unsigned long long)(en - b), (long long)n, dt->valuestring, (unsigned long long)bytes);
    if (en > data_size)
        return wgt_error(WGT_ERR_FORMAT, "%s: tensor '%s': data_offsets end %llu is past the end of the data (%llu bytes)",
                         path, name, (unsigned long long)en, (unsigned long long)data_size);
    t->offset = data_start + b;
    t->bytes = bytes;
    t->name = name;
    return WGT_OK;
}

/* Parse one file and append its tensors; names are copied out of the JSON. */
static wgt_status load_file(wgt_safetensors *st, const char *path, int want_metadata, const void *mem, uint64_t mem_size)
{
    if (st->n_files >= MAX_SHARDS) return wgt_error(WGT_ERR_LIMIT, "%s: more than %d shards", path, MAX_SHARDS);
    st_file *f = &st->files[st->n_files];
    memset(f, 0, sizeof *f);
    if (!(f->path = wgt_strndup(path, strlen(path)))) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s", path);
    st->n_files++;
    wgt_status s = WGT_OK;
    if (mem || !mem_size) f->map = (wgt_map){.data = mem_size ? mem : NULL, .size = mem_size, .borrowed = 1};
    else s = wgt_map_open(path, &f->map);
    if (s) return s;
    const uint8_t *p = f->map.data;
    if (f->map.size < 8)
        return wgt_error(WGT_ERR_FORMAT, "%s: truncated: %llu bytes, the header length alone needs 8", path, (unsigned long long)f->map.size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | p[i];
    if (hlen > WGT_IO_MAX_HEADER)
        return wgt_error(WGT_ERR_LIMIT, "%s: header length %llu is over the %llu MB we accept", path, (unsigned long long)hlen, WGT_IO_MAX_HEADER >> 20);
    if (hlen > f->map.size - 8)
        return wgt_error(WGT_ERR_FORMAT, "%s: truncated: header length %llu, but only %llu bytes follow", path,
                         (unsigned long long)hlen, (unsigned long long)(f->map.size - 8));
    if (hlen < 2 || p[8] != '{') return wgt_error(WGT_ERR_FORMAT, "%s: the header is not a JSON object (not a safetensors file?)", path);
    cJSON *j;
    if ((s = wgt_json_parse((const char *)p + 8, hlen, path, &j))) return s;
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return wgt_error(WGT_ERR_FORMAT, "%s: the header is not a JSON object", path);
    }
    uint64_t data_start = 8 + hlen, data_size = f->map.size - data_start;
    int64_t first = st->n, count = cJSON_GetArraySize(j);
    if (st->n + count > st->cap) {
        int64_t cap = st->cap ? st->cap : 64;
        while (cap < st->n + count) cap *= 2;
        wgt_st_tensor *t = realloc(st->tensors, (size_t)cap * sizeof *t);
        if (!t) {
            cJSON_Delete(j);
            return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: %lld tensors", path, (long long)cap);
        }
        st->tensors = t;
        st->cap = cap;
    }
    for (const cJSON *e = j->child; e && !s; e = e->next) {
        if (e->string && !strcmp(e->string, "__metadata__")) {
            if (!cJSON_IsObject(e)) s = wgt_error(WGT_ERR_FORMAT, "%s: __metadata__ is not an object", path);
            for (const cJSON *m = e->child; !s && m; m = m->next) {
                if (!cJSON_IsString(m))
                    s = wgt_error(WGT_ERR_FORMAT, "%s: __metadata__ '%.64s' is not a string", path, m->string);
                else if (want_metadata) {
                    char **k = realloc(st->meta_keys, (size_t)(st->n_meta + 1) * sizeof *k);
                    if (k) st->meta_keys = k;
                    char **v = realloc(st->meta_vals, (size_t)(st->n_meta + 1) * sizeof *v);
                    if (v) st->meta_vals = v;
                    if (!k || !v) s = wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: metadata", path);
                    else {
                        k[st->n_meta] = wgt_strndup(m->string, strlen(m->string));
                        v[st->n_meta] = wgt_strndup(m->valuestring, strlen(m->valuestring));
                        st->n_meta++;
                        if (!k[st->n_meta - 1] || !v[st->n_meta - 1]) s = wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: metadata", path);
                    }
                }
            }
            continue;
        }
        wgt_st_tensor *t = &st->tensors[st->n];
        memset(t, 0, sizeof *t);
        if ((s = parse_entry(path, e, data_size, data_start, t))) break;
        if (!(t->name = wgt_strndup(t->name, strlen(t->name)))) {
            s = wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: names", path);
            break;
        }
        t->data = f->map.data + t->offset;
        t->file = f->path;
        st->n++;
    }
    cJSON_Delete(j);
    if (s) return s;
    /* the tensors must tile the data: sorted by offset, each begins where the previous ended */
    int64_t n = st->n - first;
    wgt_st_tensor **order = wgt_malloc_array((size_t)n + 1, sizeof *order);
    if (!order) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s: tensor order", path);
    for (int64_t i = 0; i < n; i++) order[i] = &st->tensors[first + i];
    qsort(order, (size_t)n, sizeof *order, cmp_offset);
    uint64_t at = data_start;
    for (int64_t i = 0; i < n && !s; i++) {
        if (order[i]->offset < at)
            s = wgt_error(WGT_ERR_FORMAT, "%s: tensor '%s' (data bytes %llu..%llu) overlaps '%s'", path, order[i]->name,
                          (unsigned long long)(order[i]->offset - data_start),
                          (unsigned long long)(order[i]->offset - data_start + order[i]->bytes), order[i - 1]->name);
        else if (order[i]->offset > at)
            s = wgt_error(WGT_ERR_FORMAT, "%s: data bytes %llu..%llu belong to no tensor (a hole before '%s')", path,
                          (unsigned long long)(at - data_start), (unsigned long long)(order[i]->offset - data_start), order[i]->name);
        at = order[i]->offset + order[i]->bytes;
    }
    free(order);
    if (!s && at != f->map.size)
        s = wgt_error(WGT_ERR_FORMAT, "%s: the tensors cover %llu data bytes, but the file holds %llu", path,
                      (unsigned long long)(at - data_start), (unsigned long long)data_size);
    return s;
}

static int is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

static size_t ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* A sharded checkpoint: open each shard the weight map names, then check the map against them. */
static wgt_status load_index(wgt_safetensors *st, const char *index_path)
{
    wgt_map m;
    wgt_status s = wgt_map_open(index_path, &m);
    if (s) return s;
    if (m.size > WGT_IO_MAX_HEADER) {
        wgt_map_close(&m);
        return wgt_error(WGT_ERR_LIMIT, "%s: over %llu MB", index_path, WGT_IO_MAX_HEADER >> 20);
    }
    cJSON *j = NULL;
    s = m.size ? wgt_json_parse((const char *)m.data, m.size, index_path, &j) : wgt_error(WGT_ERR_FORMAT, "%s: empty file", index_path);
    wgt_map_close(&m);
    if (s) return s;
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(j, "weight_map");
    char dir[4096];
    const char *slash = strrchr(index_path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - index_path) : 1, slash ? index_path : ".");
    if (!cJSON_IsObject(wm)) s = wgt_error(WGT_ERR_FORMAT, "%s: \"weight_map\" missing or not an object", index_path);
    /* distinct shard names, in order of first appearance */
    for (const cJSON *e = wm ? wm->child : NULL; !s && e; e = e->next) {
        if (!cJSON_IsString(e)) {
            s = wgt_error(WGT_ERR_FORMAT, "%s: weight_map['%.64s'] is not a file name", index_path, e->string);
            break;
        }
        const char *fn = e->valuestring;
        if (!*fn || strchr(fn, '/') || strchr(fn, '\\') || !strcmp(fn, ".") || !strcmp(fn, "..")) {
            s = wgt_error(WGT_ERR_FORMAT, "%s: weight_map['%.64s']: shard \"%.64s\" must be a plain file name in the same directory",
                          index_path, e->string, fn);
            break;
        }
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, fn);
        int seen = 0;
        for (int i = 0; i < st->n_files && !seen; i++) seen = !strcmp(st->files[i].path, path);
        if (!seen) s = load_file(st, path, st->n_files == 0, NULL, 1);
    }
    wgt_names names = {0};
    if (!s) s = wgt_names_init(&names, (uint64_t)st->n);
    for (int64_t k = 0; !s && k < st->n; k++) {
        int64_t dup = wgt_names_put(&names, st->tensors[k].name, k);
        if (dup >= 0)
            s = wgt_error(WGT_ERR_FORMAT, "%s: duplicate tensor name '%.64s' (in %s and %s)", index_path,
                          st->tensors[k].name, st->tensors[dup].file, st->tensors[k].file);
    }
    for (const cJSON *e = wm && !s ? wm->child : NULL; !s && e; e = e->next) {
        int64_t i = wgt_names_get(&names, e->string);
        const char *fn = strrchr(i >= 0 ? st->tensors[i].file : "", '/');
        if (i < 0 || !fn || strcmp(fn + 1, e->valuestring))
            s = wgt_error(WGT_ERR_FORMAT, "%s: weight_map puts '%.64s' in %s, which does not hold it", index_path,
                          e->string, e->valuestring);
    }
    wgt_names_free(&names);
    cJSON_Delete(j);
    return s;
}

static wgt_status open_common(const char *path, const void *mem, uint64_t mem_size, wgt_safetensors **out)
{
    *out = NULL;
    if (!path) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_safetensors_open: path is NULL");
    wgt_safetensors *st = calloc(1, sizeof *st);
    if (!st || !(st->files = calloc(MAX_SHARDS, sizeof *st->files))) {
        free(st);
        return wgt_error(WGT_ERR_OUT_OF_MEMORY, "%s", path);
    }
    char buf[8192];
    wgt_status s;
    if (mem || !mem_size) {
        s = load_file(st, path, 1, mem, mem_size);
    } else if (is_dir(path)) {
        snprintf(buf, sizeof buf, "%s/model.safetensors.index.json", path);
        if (exists(buf)) s = load_index(st, buf);
        else {
            snprintf(buf, sizeof buf, "%s/model.safetensors", path);
            s = exists(buf) ? load_file(st, buf, 1, NULL, 1)
                            : wgt_error(WGT_ERR_NOT_FOUND, "%s: no model.safetensors or model.safetensors.index.json", path);
        }
    } else if (ends_with(path, ".json")) {
        s = load_index(st, path);
    } else {
        s = load_file(st, path, 1, NULL, 1);
    }
    if (!s) s = wgt_names_init(&st->index, (uint64_t)st->n);
    for (int64_t i = 0; !s && i < st->n; i++) {
        int64_t dup = wgt_names_put(&st->index, st->tensors[i].name, i);
        if (dup >= 0)
            s = wgt_error(WGT_ERR_FORMAT, "%s: duplicate tensor name '%.64s' (in %s and %s)", path, st->tensors[i].name,
                          st->tensors[dup].file, st->tensors[i].file);
    }
    if (s) {
        wgt_safetensors_free(st);
        return s;
    }
    *out = st;
    return WGT_OK;
}

wgt_status wgt_safetensors_open(const char *path, wgt_safetensors **out) { return open_common(path, NULL, 1, out); }

wgt_status wgt_safetensors_open_memory(const char *name, const void *data, uint64_t size, wgt_safetensors **out)
{
    return open_common(name, data, size, out);
}

void wgt_safetensors_free(wgt_safetensors *st)
{
    if (!st) return;
    for (int i = 0; i < st->n_files; i++) {
        wgt_map_close(&st->files[i].map);
        free(st->files[i].path);
    }
    for (int64_t i = 0; i < st->n; i++) free((char *)st->tensors[i].name);
    for (int64_t i = 0; i < st->n_meta; i++) {
        free(st->meta_keys[i]);
        free(st->meta_vals[i]);
    }
    free(st->meta_keys);
    free(st->meta_vals);
    free(st->files);
    free(st->tensors);
    wgt_names_free(&st->index);
    free(st);
}

int64_t wgt_safetensors_count(const wgt_safetensors *st) { return st ? st->n : 0; }

const wgt_st_tensor *wgt_safetensors_at(const wgt_safetensors *st, int64_t i)
{
    return st && i >= 0 && i < st->n ? &st->tensors[i] : NULL;
}

const wgt_st_tensor *wgt_safetensors_find(const wgt_safetensors *st, const char *name)
{
    int64_t i = st ? wgt_names_get(&st->index, name) : -1;
    return i >= 0 ? &st->tensors[i] : NULL;
}

int64_t wgt_safetensors_metadata_count(const wgt_safetensors *st) { return st ? st->n_meta : 0; }

const char *wgt_safetensors_metadata_key(const wgt_safetensors *st, int64_t i)
{
    return st && i >= 0 && i < st->n_meta ? st->meta_keys[i] : NULL;
}

const char *wgt_safetensors_metadata(const wgt_safetensors *st, const char *key)
{
    for (int64_t i = 0; st && key && i < st->n_meta; i++)
        if (!strcmp(st->meta_keys[i], key)) return st->meta_vals[i];
    return NULL;
}
