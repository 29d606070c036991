/* Protobuf wire-format decoding of the ONNX messages node tests use, over src/core/protobuf.h.
 * Every read is checked against the end of its enclosing message; the message names the file and
 * the field. */
#include "onnx/onnx.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/protobuf.h"

#define MAX_ITEMS (1 << 24) /* repeated fields past this are treated as corrupt */

typedef struct pb {
    wgt_pb in;        /* the message's unread bytes */
    const char *what; /* file name for messages */
} pb;

enum { WIRE_VARINT = WGT_PB_VARINT, WIRE_I64 = WGT_PB_I64, WIRE_LEN = WGT_PB_LEN, WIRE_I32 = WGT_PB_I32 };

static wgt_status bad(const pb *r, const char *field, const char *problem)
{
    return wgt_error(WGT_ERR_FORMAT, "onnx: %s: %s: %s (truncated or not an ONNX file?)", r->what,
                     field, problem);
}

static int more(const pb *r) { return r->in.p < r->in.end; }

static wgt_status varint(pb *r, const char *field, uint64_t *v)
{
    const char *why = wgt_pb_varint(&r->in, v);
    return why ? bad(r, field, why) : WGT_OK;
}

static wgt_status fixed(pb *r, const char *field, int bytes, uint64_t *v)
{
    const char *why = wgt_pb_fixed(&r->in, bytes, v);
    return why ? bad(r, field, why) : WGT_OK;
}

/* A length-delimited field's payload as a sub-reader. */
static wgt_status sub(pb *r, const char *field, pb *s)
{
    const char *why = wgt_pb_bytes(&r->in, &s->in);
    s->what = r->what;
    return why ? bad(r, field, why) : WGT_OK;
}

static wgt_status skip(pb *r, int wire, const char *field)
{
    uint64_t v;
    pb s;
    switch (wire) {
    case WIRE_VARINT: return varint(r, field, &v);
    case WIRE_I64: return fixed(r, field, 8, &v);
    case WIRE_I32: return fixed(r, field, 4, &v);
    case WIRE_LEN: return sub(r, field, &s);
    default: return bad(r, field, "unknown wire type (groups are not used by ONNX)");
    }
}

static wgt_status key(pb *r, const char *msg, int *field, int *wire)
{
    uint32_t number = 0;
    *wire = -1;
    const char *why = wgt_pb_key(&r->in, &number, wire);
    *field = (int)number;
    return why ? bad(r, msg, why) : WGT_OK;
}

static wgt_status expect(const pb *r, const char *field, int wire, int want)
{
    return wire == want ? WGT_OK : bad(r, field, "unexpected wire type");
}

static wgt_status string(pb *r, const char *field, char **out, size_t *len)
{
    pb s;
    wgt_status st = sub(r, field, &s);
    if (st) return st;
    size_t n = (size_t)(s.in.end - s.in.p);
    char *c = malloc(n + 1);
    if (!c) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "onnx: %s: %s: no memory", r->what, field);
    memcpy(c, s.in.p, n);
    c[n] = 0;
    free(*out);
    *out = c;
    if (len) *len = n;
    return WGT_OK;
}

/* Append to a growable array of elem-size items. */
static wgt_status grow(const pb *r, const char *field, void **arr, int *n, size_t elem)
{
    if (*n >= MAX_ITEMS) return bad(r, field, "too many items");
    if ((*n & (*n - 1)) == 0) { /* capacity doubles at powers of two */
        void *a = realloc(*arr, elem * (size_t)(*n ? 2 * *n : 1));
        if (!a) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "onnx: %s: %s: no memory", r->what, field);
        *arr = a;
    }
    memset((char *)*arr + elem * (size_t)*n, 0, elem);
    (*n)++;
    return WGT_OK;
}

#define TRY(x)                                  \
    do {                                        \
        wgt_status st_ = (x);                   \
        if (st_ != WGT_OK) return st_;          \
    } while (0)

static wgt_status push_string(pb *r, const char *field, char ***arr, int *n)
{
    TRY(grow(r, field, (void **)arr, n, sizeof(char *)));
    return string(r, field, &(*arr)[*n - 1], NULL);
}

/* Repeated scalars, packed (one LEN field) or not. kind: 'v' varint, '4' fixed32, '8' fixed64.
 * Values are collected as raw 64-bit words. */
static wgt_status repeated(pb *r, const char *field, int wire, char kind, uint64_t **arr, int *n)
{
    int want = kind == 'v' ? WIRE_VARINT : kind == '4' ? WIRE_I32 : WIRE_I64;
    pb s = *r, *src = r;
    int packed = wire == WIRE_LEN;
    if (packed) {
        TRY(sub(r, field, &s));
        src = &s;
    } else TRY(expect(r, field, wire, want));
    do {
        if (packed && !more(src)) break;
        uint64_t v;
        TRY(kind == 'v' ? varint(src, field, &v) : fixed(src, field, kind == '4' ? 4 : 8, &v));
        TRY(grow(r, field, (void **)arr, n, sizeof(uint64_t)));
        (*arr)[*n - 1] = v;
    } while (packed);
    return WGT_OK;
}

static double f64_bits(uint64_t v)
{
    double d;
    memcpy(&d, &v, 8);
    return d;
}

const char *wgt_onnx_type_name(int t)
{
    static const char *names[] = {"UNDEFINED", "FLOAT",  "UINT8",     "INT8",       "UINT16",
                                  "INT16",     "INT32",  "INT64",     "STRING",     "BOOL",
                                  "FLOAT16",   "DOUBLE", "UINT32",    "UINT64",     "COMPLEX64",
                                  "COMPLEX128", "BFLOAT16"};
    return t >= 0 && t < (int)(sizeof names / sizeof *names) ? names[t] : "(unknown type)";
}

static wgt_dtype map_type(int t)
{
    switch (t) {
    case WGT_ONNX_FLOAT: return WGT_F32;
    case WGT_ONNX_UINT8: return WGT_U8;
    case WGT_ONNX_INT8: return WGT_I8;
    case WGT_ONNX_INT32: return WGT_I32;
    case WGT_ONNX_INT64: return WGT_I64;
    case WGT_ONNX_BOOL: return WGT_BOOL;
    case WGT_ONNX_FLOAT16: return WGT_F16;
    case WGT_ONNX_UINT32: return WGT_U32;
    case WGT_ONNX_BFLOAT16: return WGT_BF16;
    default: return WGT_DTYPE_COUNT;
    }
}

void wgt_onnx_tensor_clear(wgt_onnx_tensor *t)
{
    if (!t) return;
    free(t->name);
    free(t->data);
    free(t->f64);
    memset(t, 0, sizeof *t);
}

wgt_cpu_tensor wgt_onnx_tensor_view(const wgt_onnx_tensor *t)
{
    return wgt_cpu_tensor_make(t->data, t->dtype, t->ndim, t->dims);
}

/* TensorProto: dims 1, data_type 2, float_data 4, int32_data 5, string_data 6, int64_data 7,
 * name 8, raw_data 9, double_data 10, uint64_data 11, data_location 14 (external: refused). */
static wgt_status tensor(pb *r, wgt_onnx_tensor *t)
{
    uint64_t *dims = NULL, *words = NULL;
    int n_dims = 0, n_words = 0, words_field = 0, field, wire;
    const uint8_t *raw = NULL;
    size_t raw_len = 0;
    int have_raw = 0, n_strings = 0;
    int64_t location = 0, type = 0;
    wgt_status st = WGT_OK;
    memset(t, 0, sizeof *t);
    while (more(r) && st == WGT_OK) {
        if ((st = key(r, "TensorProto", &field, &wire))) break;
        uint64_t v;
        pb s;
        switch (field) {
        case 1: st = repeated(r, "TensorProto.dims", wire, 'v', &dims, &n_dims); break;
        case 2:
            if (!(st = expect(r, "TensorProto.data_type", wire, WIRE_VARINT)) &&
                !(st = varint(r, "TensorProto.data_type", &v)))
                type = (int64_t)v;
            break;
        case 4: case 5: case 7: case 10: case 11:
            if (words_field && words_field != field) {
                st = bad(r, "TensorProto", "values in two typed fields");
                break;
            }
            words_field = field;
            st = repeated(r, "TensorProto typed data", wire, field == 4 ? '4' : field == 10 ? '8' : 'v',
                          &words, &n_words);
            break;
        case 6:
            if (!(st = expect(r, "TensorProto.string_data", wire, WIRE_LEN)) &&
                !(st = sub(r, "TensorProto.string_data", &s)))
                n_strings++;
            break;
        case 8:
            if (!(st = expect(r, "TensorProto.name", wire, WIRE_LEN)))
                st = string(r, "TensorProto.name", &t->name, NULL);
            break;
        case 9:
            if (!(st = expect(r, "TensorProto.raw_data", wire, WIRE_LEN)) &&
                !(st = sub(r, "TensorProto.raw_data", &s)))
                raw = s.in.p, raw_len = (size_t)(s.in.end - s.in.p), have_raw = 1;
            break;
        case 14:
            if (!(st = varint(r, "TensorProto.data_location", &v))) location = (int64_t)v;
            break;
        default: st = skip(r, wire, "TensorProto"); break;
        }
    }
    if (st) goto done;
    if (location == 1) {
        st = wgt_error(WGT_ERR_UNSUPPORTED, "onnx: %s: tensor '%s' keeps its data in an external file",
                       r->what, t->name ? t->name : "");
        goto done;
    }
    if (n_dims > WGT_MAX_DIMS) {
        st = wgt_error(WGT_ERR_UNSUPPORTED, "onnx: %s: tensor with %d dims (at most %d)", r->what,
                       n_dims, WGT_MAX_DIMS);
        goto done;
    }
    t->onnx_type = (int)type;
    t->ndim = n_dims;
    t->numel = 1;
    /* strides are products of the dims after a 0 one too, so the non-zero dims are bounded even
     * when the count is 0 (fuzz_onnx: dims {0, 2^60, 17} overflowed a stride) */
    int64_t nonzero = 1;
    for (int d = 0; d < n_dims; d++) {
        int64_t n = (int64_t)dims[d];
        if (n < 0 || (n && nonzero > ((int64_t)1 << 40) / n)) {
            st = bad(r, "TensorProto.dims", "negative or huge dimension");
            goto done;
        }
        t->dims[d] = n;
        t->numel *= n;
        if (n) nonzero *= n;
    }
    t->dtype = map_type((int)type);
    /* The values are checked against dims before memory is taken for them: dims alone may claim
     * 2^40 elements (fuzz_onnx asked for 1 TB with a 100-byte message). */
    if (type == WGT_ONNX_DOUBLE) {
        if (have_raw && raw_len != (size_t)t->numel * 8) {
            st = bad(r, "TensorProto.raw_data", "length does not match dims");
        } else if (!have_raw && (n_words != t->numel || (words_field && words_field != 10))) {
            st = bad(r, "TensorProto.double_data", "number of values does not match dims");
        } else if (!(t->f64 = wgt_malloc_array((size_t)t->numel, 8))) {
            st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "onnx: %s: no memory", r->what);
        } else if (have_raw) {
            memcpy(t->f64, raw, raw_len);
        } else {
            for (int64_t i = 0; i < t->numel; i++) t->f64[i] = f64_bits(words[i]);
        }
        goto done;
    }
    if (t->dtype == WGT_DTYPE_COUNT) goto done; /* kept as shape and type only */
    size_t esize = wgt_dtype_size(t->dtype);
    if (have_raw && raw_len != (size_t)t->numel * esize) {
        st = bad(r, "TensorProto.raw_data", "length does not match dims and data_type");
        goto done;
    }
    if (!have_raw && n_words != t->numel) {
        st = bad(r, "TensorProto", "number of typed values does not match dims");
        goto done;
    }
    t->data = wgt_malloc_array((size_t)t->numel, esize);
    if (!t->data) {
        st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "onnx: %s: no memory for %lld elements", r->what,
                       (long long)t->numel);
        goto done;
    }
    if (have_raw) {
        memcpy(t->data, raw, raw_len); /* little-endian, as the host */
        goto done;
    }
    wgt_cpu_tensor view = wgt_onnx_tensor_view(t);
    for (int64_t i = 0; i < t->numel; i++) {
        uint64_t w = words[i];
        switch (words_field) {
        case 4: wgt_cpu_store_f(&view, i, wgt_pb_float(w)); break;
        case 10: wgt_cpu_store_f(&view, i, f64_bits(w)); break;
        case 5: /* int32_data also carries 16-bit floats as their bit patterns */
            if (t->dtype == WGT_F16 || t->dtype == WGT_BF16) ((uint16_t *)t->data)[i] = (uint16_t)w;
            else wgt_cpu_store_i(&view, i, (int32_t)(uint32_t)w);
            break;
        default: wgt_cpu_store_i(&view, i, (int64_t)w); break;
        }
    }
done:
    free(dims);
    free(words);
    if (st) wgt_onnx_tensor_clear(t);
    return st;
}

wgt_status wgt_onnx_tensor_parse(const uint8_t *buf, size_t len, const char *what, wgt_onnx_tensor *out)
{
    pb r = {{buf, buf + len}, what};
    return tensor(&r, out);
}

static wgt_status read_file(const char *path, uint8_t **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return wgt_error(errno == ENOENT ? WGT_ERR_NOT_FOUND : WGT_ERR_IO, "onnx: %s: cannot open: %s",
                             path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    uint8_t *b = malloc(cap);
    for (;;) {
        if (!b) {
            fclose(f);
            return wgt_error(WGT_ERR_OUT_OF_MEMORY, "onnx: %s: no memory", path);
        }
        n += fread(b + n, 1, cap - n, f);
        if (n < cap) break;
        uint8_t *nb = realloc(b, cap * 2);
        if (!nb) free(b);
        b = nb, cap *= 2;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(b);
        return wgt_error(WGT_ERR_IO, "onnx: %s: read error", path);
    }
    *buf = b, *len = n;
    return WGT_OK;
}

wgt_status wgt_onnx_tensor_read(const char *path, wgt_onnx_tensor *out)
{
    uint8_t *buf;
    size_t len;
    memset(out, 0, sizeof *out);
    TRY(read_file(path, &buf, &len));
    wgt_status st = wgt_onnx_tensor_parse(buf, len, path, out);
    free(buf);
    return st;
}

/* AttributeProto: name 1, f 2, i 3, s 4, t 5, g 6, floats 7, ints 8, strings 9, tensors 10,
 * graphs 11, type 20. */
static wgt_status attribute(pb *r, wgt_onnx_attr *a)
{
    int field, wire, have_type = 0;
    uint64_t v, *words = NULL;
    int n_words = 0;
    pb s;
    wgt_status st = WGT_OK;
    wgt_onnx_attr_type guess = WGT_ONNX_ATTR_UNDEFINED;
    while (more(r) && st == WGT_OK) {
        if ((st = key(r, "AttributeProto", &field, &wire))) break;
        switch (field) {
        case 1: st = expect(r, "AttributeProto.name", wire, WIRE_LEN);
            if (!st) st = string(r, "AttributeProto.name", &a->name, NULL);
            break;
        case 2: st = expect(r, "AttributeProto.f", wire, WIRE_I32);
            if (!st && !(st = fixed(r, "AttributeProto.f", 4, &v))) a->f = wgt_pb_float(v), guess = WGT_ONNX_ATTR_FLOAT;
            break;
        case 3: st = expect(r, "AttributeProto.i", wire, WIRE_VARINT);
            if (!st && !(st = varint(r, "AttributeProto.i", &v))) a->i = (int64_t)v, guess = WGT_ONNX_ATTR_INT;
            break;
        case 4: st = expect(r, "AttributeProto.s", wire, WIRE_LEN);
            if (!st && !(st = string(r, "AttributeProto.s", &a->s, &a->s_len))) guess = WGT_ONNX_ATTR_STRING;
            break;
        case 5:
            if ((st = expect(r, "AttributeProto.t", wire, WIRE_LEN)) || (st = sub(r, "AttributeProto.t", &s))) break;
            if (!a->t && !(a->t = calloc(1, sizeof *a->t))) {
                st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "onnx: %s: no memory", r->what);
                break;
            }
            wgt_onnx_tensor_clear(a->t);
            if (!(st = tensor(&s, a->t))) guess = WGT_ONNX_ATTR_TENSOR;
            break;
        case 6: if (!(st = skip(r, wire, "AttributeProto.g"))) guess = WGT_ONNX_ATTR_GRAPH; break;
        case 7:
            n_words = 0;
            if (!(st = repeated(r, "AttributeProto.floats", wire, '4', &words, &n_words))) {
                double *f = realloc(a->floats, sizeof(double) * (size_t)(a->n_floats + n_words + 1));
                if (!f) { st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "onnx: no memory"); break; }
                a->floats = f;
                for (int i = 0; i < n_words; i++) f[a->n_floats + i] = wgt_pb_float(words[i]);
                a->n_floats += n_words;
                guess = WGT_ONNX_ATTR_FLOATS;
            }
            break;
        case 8:
            n_words = 0;
            if (!(st = repeated(r, "AttributeProto.ints", wire, 'v', &words, &n_words))) {
                int64_t *p = realloc(a->ints, sizeof(int64_t) * (size_t)(a->n_ints + n_words + 1));
                if (!p) { st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "onnx: no memory"); break; }
                a->ints = p;
                for (int i = 0; i < n_words; i++) p[a->n_ints + i] = (int64_t)words[i];
                a->n_ints += n_words;
                guess = WGT_ONNX_ATTR_INTS;
            }
            break;
        case 9:
            if (!(st = expect(r, "AttributeProto.strings", wire, WIRE_LEN)))
                st = push_string(r, "AttributeProto.strings", &a->strings, &a->n_strings);
            guess = WGT_ONNX_ATTR_STRINGS;
            break;
        case 10: if (!(st = skip(r, wire, "AttributeProto.tensors"))) a->n_tensors++, guess = WGT_ONNX_ATTR_TENSORS; break;
        case 11: if (!(st = skip(r, wire, "AttributeProto.graphs"))) a->n_graphs++, guess = WGT_ONNX_ATTR_GRAPHS; break;
        case 20: st = expect(r, "AttributeProto.type", wire, WIRE_VARINT);
            if (!st && !(st = varint(r, "AttributeProto.type", &v))) a->type = (wgt_onnx_attr_type)v, have_type = 1;
            break;
        default: st = skip(r, wire, "AttributeProto"); break;
        }
        /* words holds one repeated field's values at a time. */
        if (field == 7 || field == 8) free(words), words = NULL;
    }
    free(words);
    if (!st && !have_type) a->type = guess; /* files older than IR version 2 carry no type */
    if (!st && !a->name) st = bad(r, "AttributeProto", "attribute without a name");
    return st;
}

static void attr_clear(wgt_onnx_attr *a)
{
    free(a->name);
    free(a->s);
    if (a->t) wgt_onnx_tensor_clear(a->t);
    free(a->t);
    free(a->floats);
    free(a->ints);
    for (int i = 0; i < a->n_strings; i++) free(a->strings[i]);
    free(a->strings);
}

/* NodeProto: input 1, output 2, name 3, op_type 4, attribute 5, domain 7. */
static wgt_status node(pb *r, wgt_onnx_node *n)
{
    int field, wire;
    wgt_status st = WGT_OK;
    pb s;
    while (more(r) && st == WGT_OK) {
        if ((st = key(r, "NodeProto", &field, &wire))) break;
        if (field >= 1 && field <= 7 && field != 6 && field != 5 && (st = expect(r, "NodeProto", wire, WIRE_LEN)))
            break;
        switch (field) {
        case 1: st = push_string(r, "NodeProto.input", &n->inputs, &n->n_inputs); break;
        case 2: st = push_string(r, "NodeProto.output", &n->outputs, &n->n_outputs); break;
        case 3: st = string(r, "NodeProto.name", &n->name, NULL); break;
        case 4: st = string(r, "NodeProto.op_type", &n->op_type, NULL); break;
        case 7: st = string(r, "NodeProto.domain", &n->domain, NULL); break;
        case 5:
            if ((st = expect(r, "NodeProto.attribute", wire, WIRE_LEN)) || (st = sub(r, "NodeProto.attribute", &s)) ||
                (st = grow(r, "NodeProto.attribute", (void **)&n->attrs, &n->n_attrs, sizeof *n->attrs)))
                break;
            st = attribute(&s, &n->attrs[n->n_attrs - 1]);
            break;
        default: st = skip(r, wire, "NodeProto"); break;
        }
    }
    if (!st && !n->op_type) st = bad(r, "NodeProto", "node without op_type");
    return st;
}

static void node_clear(wgt_onnx_node *n)
{
    free(n->op_type);
    free(n->domain);
    free(n->name);
    for (int i = 0; i < n->n_inputs; i++) free(n->inputs[i]);
    for (int i = 0; i < n->n_outputs; i++) free(n->outputs[i]);
    for (int i = 0; i < n->n_attrs; i++) attr_clear(&n->attrs[i]);
    free(n->inputs);
    free(n->outputs);
    free(n->attrs);
}

/* ValueInfoProto: name 1 (the type is not needed: test data carries its own). */
static wgt_status value_info_name(pb *r, const char *what, char ***arr, int *n)
{
    pb s;
    int field, wire;
    TRY(sub(r, what, &s));
    TRY(grow(r, what, (void **)arr, n, sizeof(char *)));
    while (more(&s)) {
        TRY(key(&s, what, &field, &wire));
        if (field == 1 && wire == WIRE_LEN) TRY(string(&s, what, &(*arr)[*n - 1], NULL));
        else TRY(skip(&s, wire, what));
    }
    if (!(*arr)[*n - 1] && !((*arr)[*n - 1] = calloc(1, 1)))
        return wgt_error(WGT_ERR_OUT_OF_MEMORY, "onnx: no memory");
    return WGT_OK;
}

/* GraphProto: node 1, initializer 5, input 11, output 12. */
static wgt_status graph(pb *r, wgt_onnx_model *m)
{
    int field, wire;
    pb s;
    while (more(r)) {
        TRY(key(r, "GraphProto", &field, &wire));
        switch (field) {
        case 1:
            TRY(expect(r, "GraphProto.node", wire, WIRE_LEN));
            TRY(sub(r, "GraphProto.node", &s));
            TRY(grow(r, "GraphProto.node", (void **)&m->nodes, &m->n_nodes, sizeof *m->nodes));
            TRY(node(&s, &m->nodes[m->n_nodes - 1]));
            break;
        case 5:
            TRY(expect(r, "GraphProto.initializer", wire, WIRE_LEN));
            TRY(sub(r, "GraphProto.initializer", &s));
            TRY(grow(r, "GraphProto.initializer", (void **)&m->initializers, &m->n_initializers,
                     sizeof *m->initializers));
            TRY(tensor(&s, &m->initializers[m->n_initializers - 1]));
            break;
        case 11:
            TRY(expect(r, "GraphProto.input", wire, WIRE_LEN));
            TRY(value_info_name(r, "GraphProto.input", &m->inputs, &m->n_inputs));
            break;
        case 12:
            TRY(expect(r, "GraphProto.output", wire, WIRE_LEN));
            TRY(value_info_name(r, "GraphProto.output", &m->outputs, &m->n_outputs));
            break;
        default: TRY(skip(r, wire, "GraphProto")); break;
        }
    }
    return WGT_OK;
}

/* OperatorSetIdProto: domain 1, version 2. */
static wgt_status opset(pb *r, wgt_onnx_model *m)
{
    pb s;
    int field, wire;
    char *domain = NULL;
    int64_t version = 0;
    TRY(sub(r, "ModelProto.opset_import", &s));
    wgt_status st = WGT_OK;
    while (more(&s) && !st) {
        uint64_t v;
        if ((st = key(&s, "OperatorSetIdProto", &field, &wire))) break;
        if (field == 1 && wire == WIRE_LEN) st = string(&s, "OperatorSetIdProto.domain", &domain, NULL);
        else if (field == 2 && wire == WIRE_VARINT) {
            if (!(st = varint(&s, "OperatorSetIdProto.version", &v))) version = (int64_t)v;
        } else st = skip(&s, wire, "OperatorSetIdProto");
    }
    if (!st && (!domain || !*domain || !strcmp(domain, "ai.onnx"))) m->opset = version;
    free(domain);
    return st;
}

wgt_status wgt_onnx_model_parse(const uint8_t *buf, size_t len, const char *what, wgt_onnx_model **out)
{
    pb r = {{buf, buf + len}, what}, s;
    int field, wire, have_graph = 0;
    wgt_onnx_model *m = calloc(1, sizeof *m);
    *out = NULL;
    if (!m) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "onnx: no memory");
    wgt_status st = WGT_OK;
    while (more(&r) && !st) {
        uint64_t v;
        if ((st = key(&r, "ModelProto", &field, &wire))) break;
        switch (field) {
        case 1:
            if (!(st = expect(&r, "ModelProto.ir_version", wire, WIRE_VARINT)) &&
                !(st = varint(&r, "ModelProto.ir_version", &v)))
                m->ir_version = (int64_t)v;
            break;
        case 7:
            if (!(st = expect(&r, "ModelProto.graph", wire, WIRE_LEN)) && !(st = sub(&r, "ModelProto.graph", &s)))
                st = graph(&s, m), have_graph = 1;
            break;
        case 8:
            if (!(st = expect(&r, "ModelProto.opset_import", wire, WIRE_LEN))) st = opset(&r, m);
            break;
        default: st = skip(&r, wire, "ModelProto"); break;
        }
    }
    if (!st && !have_graph) st = bad(&r, "ModelProto", "no graph");
    if (st) {
        wgt_onnx_model_free(m);
        return st;
    }
    *out = m;
    return WGT_OK;
}

wgt_status wgt_onnx_model_read(const char *path, wgt_onnx_model **out)
{
    uint8_t *buf;
    size_t len;
    *out = NULL;
    TRY(read_file(path, &buf, &len));
    wgt_status st = wgt_onnx_model_parse(buf, len, path, out);
    free(buf);
    return st;
}

void wgt_onnx_model_free(wgt_onnx_model *m)
{
    if (!m) return;
    for (int i = 0; i < m->n_nodes; i++) node_clear(&m->nodes[i]);
    for (int i = 0; i < m->n_inputs; i++) free(m->inputs[i]);
    for (int i = 0; i < m->n_outputs; i++) free(m->outputs[i]);
    for (int i = 0; i < m->n_initializers; i++) wgt_onnx_tensor_clear(&m->initializers[i]);
    free(m->nodes);
    free(m->inputs);
    free(m->outputs);
    free(m->initializers);
    free(m);
}

const wgt_onnx_attr *wgt_onnx_node_attr(const wgt_onnx_node *n, const char *name)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (!strcmp(n->attrs[i].name, name)) return &n->attrs[i];
    return NULL;
}
