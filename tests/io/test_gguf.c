/* GGUF round trip: our writer writes every metadata type (nested arrays included) and tensors of
 * several types, streamed in odd-sized pieces; our reader reads it back and every value, shape,
 * offset and byte is compared with what was written. A hand-built v2 file is read too, metadata
 * is copied between files, and the writer refuses misuse. (The independent parser's view of the
 * same kind of file is test_gguf_node.sh.) */
#include "io/io_test.h"
#include "io/json_util.h"
#include "quant/half.h"

#define NT 9
static const struct {
    const char *name;
    wgt_ftype type;
    uint32_t n_dims;
    int64_t ne[4];
} specs[NT] = {
    {"token_embd.weight", WGT_FTYPE_F32, 2, {8, 3}},
    {"blk.0.attn_q.weight", WGT_FTYPE_F16, 2, {16, 2}},
    {"blk.0.attn_k.weight", WGT_FTYPE_BF16, 3, {4, 3, 2}},
    {"blk.0.ffn_up.weight", WGT_FTYPE_Q8_0, 2, {64, 3}},
    {"blk.0.ffn_down.weight", WGT_FTYPE_Q4_0, 2, {32, 5}},
    {"blk.0.ffn_gate.weight", WGT_FTYPE_Q4_K, 2, {256, 2}},
    {"output.weight", WGT_FTYPE_Q6_K, 4, {256, 1, 1, 2}},
    {"blk.0.attn_v.weight", WGT_FTYPE_Q3_K, 1, {512}},
    {"empty", WGT_FTYPE_F32, 2, {0, 4}},
};

static float value_at(int t, int64_t i) { return (float)sin((double)(t * 1000 + i) * 0.37) * 2.0f; }

/* The bytes of tensor t: quantised from value_at for types we quantise, else a byte pattern. */
static uint8_t *tensor_bytes(int t, uint64_t *bytes)
{
    int64_t n = 1;
    for (uint32_t d = 0; d < specs[t].n_dims; d++) n *= specs[t].ne[d];
    wgt_ftype_bytes(specs[t].type, n, bytes);
    uint8_t *p = malloc(*bytes + 1);
    if (wgt_ftype_can_quantize(specs[t].type)) {
        float *x = malloc((size_t)n * sizeof *x + 1);
        for (int64_t i = 0; i < n; i++) x[i] = value_at(t, i);
        wgt_quantize(specs[t].type, x, p, n);
        free(x);
    } else {
        for (uint64_t i = 0; i < *bytes; i++) p[i] = (uint8_t)(i * 7 + (uint64_t)t);
        if (*bytes > 110) p[108] = 0x00, p[109] = 0x3c; /* Q3_K block 0: d = 1.0 */
    }
    return p;
}

static void write_metadata(wgt_gguf_writer *w)
{
    uint8_t u8 = 250;
    int8_t i8 = -100;
    uint16_t u16 = 65000;
    int16_t i16 = -30000;
    int32_t i32 = -2000000000;
    uint64_t u64 = 18000000000000000000ull;
    int64_t i64 = -9000000000000000000ll;
    double f64 = -1.0 / 3;
    CHECK_OK(wgt_gguf_writer_add_str(w, "general.architecture", "llama"));
    CHECK_OK(wgt_gguf_writer_add(w, "t.u8", WGT_GGUF_UINT8, &u8));
    CHECK_OK(wgt_gguf_writer_add(w, "t.i8", WGT_GGUF_INT8, &i8));
    CHECK_OK(wgt_gguf_writer_add(w, "t.u16", WGT_GGUF_UINT16, &u16));
    CHECK_OK(wgt_gguf_writer_add(w, "t.i16", WGT_GGUF_INT16, &i16));
    CHECK_OK(wgt_gguf_writer_add_u32(w, "t.u32", 4000000000u));
    CHECK_OK(wgt_gguf_writer_add(w, "t.i32", WGT_GGUF_INT32, &i32));
    CHECK_OK(wgt_gguf_writer_add_f32(w, "t.f32", 0.1f));
    CHECK_OK(wgt_gguf_writer_add_bool(w, "t.bool", 1));
    CHECK_OK(wgt_gguf_writer_add(w, "t.u64", WGT_GGUF_UINT64, &u64));
    CHECK_OK(wgt_gguf_writer_add(w, "t.i64", WGT_GGUF_INT64, &i64));
    CHECK_OK(wgt_gguf_writer_add(w, "t.f64", WGT_GGUF_FLOAT64, &f64));
    CHECK_OK(wgt_gguf_writer_add_str(w, "t.utf8", "héllo \xe2\x82\xac"));
    int32_t ints[4] = {1, -2, 3, -4};
    float floats[3] = {0.5f, -1.25f, 1e30f};
    uint8_t bools[3] = {1, 0, 1};
    CHECK_OK(wgt_gguf_writer_add_array(w, "t.arr_i32", WGT_GGUF_INT32, ints, 4));
    CHECK_OK(wgt_gguf_writer_add_array(w, "t.arr_f32", WGT_GGUF_FLOAT32, floats, 3));
    CHECK_OK(wgt_gguf_writer_add_array(w, "t.arr_bool", WGT_GGUF_BOOL, bools, 3));
    CHECK_OK(wgt_gguf_writer_add_array(w, "t.arr_empty", WGT_GGUF_UINT64, NULL, 0));
    const char *strs[3] = {"a", "", "<0x0A>"};
    CHECK_OK(wgt_gguf_writer_add_str_array(w, "t.arr_str", strs, NULL, 3));
    /* [[1, -2, 3, -4], ["a", "", "<0x0A>"], [[0.5, -1.25]]] is not GGUF (arrays are homogeneous):
     * nested: [[1,-2,3,-4], [1,-2]] (arrays of int32) and [["a","",...], ["x"]] and a 3-level one */
    CHECK_OK(wgt_gguf_writer_begin_array(w, "t.nested_i32", WGT_GGUF_ARRAY, 2));
    CHECK_OK(wgt_gguf_writer_add_array(w, NULL, WGT_GGUF_INT32, ints, 4));
    CHECK_OK(wgt_gguf_writer_add_array(w, NULL, WGT_GGUF_INT32, ints, 2));
    CHECK_OK(wgt_gguf_writer_end_array(w));
    CHECK_OK(wgt_gguf_writer_begin_array(w, "t.nested_str", WGT_GGUF_ARRAY, 2));
    CHECK_OK(wgt_gguf_writer_add_str_array(w, NULL, strs, NULL, 3));
    CHECK_OK(wgt_gguf_writer_begin_array(w, NULL, WGT_GGUF_STRING, 1));
    CHECK_OK(wgt_gguf_writer_add_str(w, NULL, "x"));
    CHECK_OK(wgt_gguf_writer_end_array(w));
    CHECK_OK(wgt_gguf_writer_end_array(w));
    CHECK_OK(wgt_gguf_writer_begin_array(w, "t.deep", WGT_GGUF_ARRAY, 1));
    CHECK_OK(wgt_gguf_writer_begin_array(w, NULL, WGT_GGUF_ARRAY, 1));
    CHECK_OK(wgt_gguf_writer_add_array(w, NULL, WGT_GGUF_FLOAT64, &f64, 1));
    CHECK_OK(wgt_gguf_writer_end_array(w));
    CHECK_OK(wgt_gguf_writer_end_array(w));
}

static void check_metadata(const wgt_gguf *g)
{
    int64_t i;
    uint64_t u, len;
    double f;
    int b;
    const char *s;
    CHECK_OK(wgt_gguf_get_str(g, "general.architecture", &s)); CHECK(!strcmp(s, "llama"), "arch %s", s);
    CHECK_OK(wgt_gguf_get_int(g, "t.u8", &i)); CHECK(i == 250, "u8 %lld", (long long)i);
    CHECK_OK(wgt_gguf_get_int(g, "t.i8", &i)); CHECK(i == -100, "i8");
    CHECK_OK(wgt_gguf_get_int(g, "t.u16", &i)); CHECK(i == 65000, "u16");
    CHECK_OK(wgt_gguf_get_int(g, "t.i16", &i)); CHECK(i == -30000, "i16");
    CHECK_OK(wgt_gguf_get_uint(g, "t.u32", &u)); CHECK(u == 4000000000u, "u32");
    CHECK_OK(wgt_gguf_get_int(g, "t.i32", &i)); CHECK(i == -2000000000, "i32");
    CHECK_OK(wgt_gguf_get_float(g, "t.f32", &f)); CHECK(f == (double)0.1f, "f32 %g", f);
    CHECK_OK(wgt_gguf_get_bool(g, "t.bool", &b)); CHECK(b == 1, "bool");
    CHECK_OK(wgt_gguf_get_uint(g, "t.u64", &u)); CHECK(u == 18000000000000000000ull, "u64");
    CHECK(wgt_gguf_get_int(g, "t.u64", &i) == WGT_ERR_FORMAT, "u64 past int64 is refused by get_int");
    CHECK(strstr(wgt_errmsg(), "t.u64") != NULL, "message names the key: %s", wgt_errmsg());
    CHECK_OK(wgt_gguf_get_int(g, "t.i64", &i)); CHECK(i == -9000000000000000000ll, "i64");
    CHECK(wgt_gguf_get_uint(g, "t.i64", &u) == WGT_ERR_FORMAT, "negative refused by get_uint");
    CHECK_OK(wgt_gguf_get_float(g, "t.f64", &f)); CHECK(f == -1.0 / 3, "f64");
    CHECK_OK(wgt_gguf_get_str(g, "t.utf8", &s)); CHECK(!strcmp(s, "héllo \xe2\x82\xac"), "utf8 string");
    CHECK(wgt_gguf_get_str(g, "t.i8", &s) == WGT_ERR_FORMAT, "type misfit");
    CHECK(wgt_gguf_get_int(g, "no.such.key", &i) == WGT_ERR_NOT_FOUND && strstr(wgt_errmsg(), "no.such.key"), "missing key");

    const wgt_gguf_value *v = wgt_gguf_find(g, "t.arr_i32");
    CHECK(v && wgt_gguf_value_type(v) == WGT_GGUF_ARRAY && wgt_gguf_array_type(v) == WGT_GGUF_INT32 && wgt_gguf_array_len(v) == 4, "arr_i32 shape");
    CHECK_OK(wgt_gguf_array_int(v, 3, &i)); CHECK(i == -4, "arr_i32[3]");
    CHECK(wgt_gguf_array_int(v, 4, &i) == WGT_ERR_INVALID_ARGUMENT, "index past the end");
    int32_t raw[4];
    memcpy(raw, wgt_gguf_array_data(v), 16);
    CHECK(raw[1] == -2, "raw array data");
    v = wgt_gguf_find(g, "t.arr_f32");
    CHECK_OK(wgt_gguf_array_float(v, 2, &f)); CHECK(f == (double)1e30f, "arr_f32[2]");
    v = wgt_gguf_find(g, "t.arr_bool");
    CHECK_OK(wgt_gguf_array_int(v, 1, &i)); CHECK(i == 0 && wgt_gguf_array_type(v) == WGT_GGUF_BOOL, "arr_bool");
    v = wgt_gguf_find(g, "t.arr_empty");
    CHECK(v && wgt_gguf_array_len(v) == 0 && wgt_gguf_array_type(v) == WGT_GGUF_UINT64, "empty array");
    v = wgt_gguf_find(g, "t.arr_str");
    CHECK_OK(wgt_gguf_array_str(v, 2, &s, &len)); CHECK(len == 6 && !memcmp(s, "<0x0A>", 6), "arr_str[2]");
    CHECK_OK(wgt_gguf_array_str(v, 1, &s, &len)); CHECK(len == 0, "arr_str[1] empty");
    v = wgt_gguf_find(g, "t.nested_i32");
    CHECK(v && wgt_gguf_array_type(v) == WGT_GGUF_ARRAY && wgt_gguf_array_len(v) == 2, "nested_i32");
    const wgt_gguf_value *inner = wgt_gguf_array_item(v, 1);
    CHECK(inner && wgt_gguf_array_len(inner) == 2, "nested_i32[1] length");
    CHECK_OK(wgt_gguf_array_int(inner, 1, &i)); CHECK(i == -2, "nested_i32[1][1]");
    CHECK(wgt_gguf_array_item(v, 2) == NULL, "nested item past the end");
    v = wgt_gguf_find(g, "t.nested_str");
    inner = wgt_gguf_array_item(v, 1);
    CHECK_OK(wgt_gguf_array_str(inner, 0, &s, &len)); CHECK(len == 1 && s[0] == 'x', "nested_str[1][0]");
    v = wgt_gguf_array_item(wgt_gguf_array_item(wgt_gguf_find(g, "t.deep"), 0), 0);
    CHECK_OK(wgt_gguf_array_float(v, 0, &f)); CHECK(f == -1.0 / 3, "deep[0][0][0]");
}

static void check_tensors(const wgt_gguf *g)
{
    CHECK(wgt_gguf_tensor_count(g) == NT, "tensor count %lld", (long long)wgt_gguf_tensor_count(g));
    for (int t = 0; t < NT && t < wgt_gguf_tensor_count(g); t++) {
        const wgt_gguf_tensor *x = wgt_gguf_tensor_at(g, t);
        CHECK(x == wgt_gguf_tensor_find(g, specs[t].name), "find %s", specs[t].name);
        CHECK(!strcmp(x->name, specs[t].name) && x->type == specs[t].type && x->n_dims == specs[t].n_dims,
              "tensor %d info: %s %d %u", t, x->name, x->type, x->n_dims);
        for (uint32_t d = 0; d < 4; d++)
            CHECK(x->ne[d] == (d < specs[t].n_dims ? specs[t].ne[d] : 1), "tensor %d ne[%u] = %lld", t, d, (long long)x->ne[d]);
        CHECK((x->offset - wgt_gguf_data_offset(g)) % wgt_gguf_alignment(g) == 0, "tensor %d aligned", t);
        uint64_t bytes;
        uint8_t *want = tensor_bytes(t, &bytes);
        CHECK(x->bytes == bytes && !memcmp(x->data, want, bytes), "tensor %d bytes", t);
        /* dequantise whole, and in row chunks: the same values, close to the source values */
        float *all = malloc((size_t)x->n_elements * 4 + 4), *row = malloc((size_t)x->ne[0] * 4 + 4);
        CHECK_OK(wgt_gguf_tensor_to_f32(x, 0, x->n_elements, all));
        for (int64_t r = 0; x->ne[0] && r < x->n_elements / x->ne[0]; r++) {
            CHECK_OK(wgt_gguf_tensor_to_f32(x, r * x->ne[0], x->ne[0], row));
            CHECK(!memcmp(row, all + r * x->ne[0], (size_t)x->ne[0] * 4), "tensor %d row %lld", t, (long long)r);
        }
        double tol = x->type == WGT_FTYPE_F32 ? 0 : x->type == WGT_FTYPE_Q4_0 || x->type == WGT_FTYPE_Q4_K ? 0.5 : 0.05;
        for (int64_t i = 0; wgt_ftype_can_quantize(x->type) && i < x->n_elements; i++)
            if (fabs(all[i] - value_at(t, i)) > tol) {
                CHECK(0, "tensor %d element %lld: %g vs %g", t, (long long)i, all[i], value_at(t, i));
                break;
            }
        CHECK(wgt_gguf_tensor_to_f32(x, 1, 1, row) == (wgt_ftype_block_elems(x->type) > 1 || x->n_elements < 2 ? WGT_ERR_INVALID_ARGUMENT : WGT_OK),
              "tensor %d: chunks must be whole blocks inside the tensor", t);
        free(all);
        free(row);
        free(want);
    }
}

static void write_file_with(const char *path, uint32_t alignment, int piece)
{
    wgt_gguf_writer *w;
    CHECK_OK(wgt_gguf_writer_open(path, &w));
    if (alignment != 32) CHECK_OK(wgt_gguf_writer_add_u32(w, "general.alignment", alignment));
    write_metadata(w);
    for (int t = 0; t < NT; t++) CHECK_OK(wgt_gguf_writer_add_tensor(w, specs[t].name, specs[t].type, specs[t].n_dims, specs[t].ne));
    for (int t = 0; t < NT; t++) {
        uint64_t bytes;
        uint8_t *p = tensor_bytes(t, &bytes);
        for (uint64_t o = 0; o < bytes; o += (uint64_t)piece)
            CHECK_OK(wgt_gguf_writer_write(w, p + o, bytes - o < (uint64_t)piece ? bytes - o : (uint64_t)piece));
        free(p);
    }
    CHECK_OK(wgt_gguf_writer_finish(w));
    wgt_gguf_writer_free(w);
}

static void test_round_trip(void)
{
    const char *path = tmp_path(".gguf");
    write_file_with(path, 32, 7);
    wgt_gguf *g;
    CHECK_OK(wgt_gguf_open(path, &g));
    if (!g) return;
    CHECK(wgt_gguf_version(g) == 3 && wgt_gguf_alignment(g) == 32 && wgt_gguf_data_offset(g) % 32 == 0, "header");
    check_metadata(g);
    check_tensors(g);

    /* copy every kv with add_value, and the tensors as they are, into a second file */
    const char *copy = tmp_path(".gguf");
    wgt_gguf_writer *w;
    CHECK_OK(wgt_gguf_writer_open(copy, &w));
    for (int64_t i = 0; i < wgt_gguf_kv_count(g); i++) CHECK_OK(wgt_gguf_writer_add_value(w, wgt_gguf_kv_key(g, i), wgt_gguf_kv_value(g, i)));
    for (int64_t i = 0; i < wgt_gguf_tensor_count(g); i++) {
        const wgt_gguf_tensor *t = wgt_gguf_tensor_at(g, i);
        CHECK_OK(wgt_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne));
    }
    for (int64_t i = 0; i < wgt_gguf_tensor_count(g); i++) CHECK_OK(wgt_gguf_writer_write(w, wgt_gguf_tensor_at(g, i)->data, wgt_gguf_tensor_at(g, i)->bytes));
    CHECK_OK(wgt_gguf_writer_finish(w));
    wgt_gguf_writer_free(w);
    size_t n1, n2;
    void *a = read_file(path, &n1), *b = read_file(copy, &n2);
    CHECK(a && b && n1 == n2 && !memcmp(a, b, n1), "a copy through add_value is byte-identical (%zu vs %zu bytes)", n1, n2);
    free(a);
    free(b);
    wgt_gguf_free(g);
    remove(path);
    remove(copy);

    /* alignment 64, written in one piece */
    write_file_with(path, 64, 1 << 20);
    CHECK_OK(wgt_gguf_open(path, &g));
    if (g) {
        CHECK(wgt_gguf_alignment(g) == 64 && wgt_gguf_data_offset(g) % 64 == 0, "alignment 64");
        check_tensors(g);
        wgt_gguf_free(g);
    }
    remove(path);
}

/* A GGUF v2 file built by hand (v2 has the same layout as v3 with 64-bit counts). */
static void test_v2(void)
{
    bytes b = {0};
    b_put(&b, "GGUF", 4);
    b_u32(&b, 2);
    b_u64(&b, 1);
    b_u64(&b, 2);
    b_str(&b, "general.name");
    b_u32(&b, WGT_GGUF_STRING);
    b_str(&b, "tiny");
    b_str(&b, "llama.block_count");
    b_u32(&b, WGT_GGUF_UINT32);
    b_u32(&b, 12);
    b_str(&b, "w");
    b_u32(&b, 1);
    b_u64(&b, 2);
    b_u32(&b, WGT_FTYPE_F32);
    b_u64(&b, 0);
    b_pad(&b, 32);
    float vals[2] = {1.5f, -2.0f};
    b_put(&b, vals, 8);
    const char *path = tmp_path(".gguf");
    write_file(path, b.p, b.n);
    wgt_gguf *g;
    CHECK_OK(wgt_gguf_open(path, &g));
    if (g) {
        int64_t i;
        float out[2];
        CHECK(wgt_gguf_version(g) == 2, "v2");
        CHECK_OK(wgt_gguf_get_int(g, "llama.block_count", &i)); CHECK(i == 12, "block_count");
        CHECK_OK(wgt_gguf_tensor_to_f32(wgt_gguf_tensor_find(g, "w"), 0, 2, out));
        CHECK(out[0] == 1.5f && out[1] == -2.0f, "v2 tensor data");
        wgt_gguf_free(g);
    }
    remove(path);
    free(b.p);
}

static void test_writer_misuse(void)
{
    const char *path = tmp_path(".gguf");
    wgt_gguf_writer *w;
    int64_t ne[2] = {32, 1};
    CHECK_OK(wgt_gguf_writer_open(path, &w));
    CHECK_OK(wgt_gguf_writer_add_u32(w, "a", 1));
    CHECK(wgt_gguf_writer_add_u32(w, "a", 2) == WGT_ERR_INVALID_ARGUMENT, "duplicate key");
    CHECK(wgt_gguf_writer_add_u32(w, "bad\xff", 2) == WGT_ERR_INVALID_ARGUMENT, "non-UTF-8 key");
    CHECK(wgt_gguf_writer_add_tensor(w, "a_name_that_is_far_too_long_for_llama_cpp_which_allows_63_bytes_", WGT_FTYPE_F32, 2, ne) ==
          WGT_ERR_INVALID_ARGUMENT, "64-byte tensor name");
    ne[0] = 33;
    CHECK(wgt_gguf_writer_add_tensor(w, "q", WGT_FTYPE_Q4_0, 2, ne) == WGT_ERR_SHAPE, "row not a block multiple");
    ne[0] = 32;
    CHECK_OK(wgt_gguf_writer_add_tensor(w, "q", WGT_FTYPE_Q4_0, 2, ne));
    CHECK(wgt_gguf_writer_add_tensor(w, "q", WGT_FTYPE_F32, 2, ne) == WGT_ERR_INVALID_ARGUMENT, "duplicate tensor");
    CHECK(wgt_gguf_writer_end_array(w) == WGT_ERR_MISUSE, "end without begin");
    uint8_t blk[18] = {0};
    CHECK_OK(wgt_gguf_writer_write(w, blk, 10));
    CHECK(wgt_gguf_writer_add_u32(w, "late", 1) == WGT_ERR_MISUSE, "metadata after data");
    CHECK(wgt_gguf_writer_finish(w) == WGT_ERR_MISUSE && strstr(wgt_errmsg(), "10 of its 18"), "missing bytes: %s", wgt_errmsg());
    wgt_gguf_writer_free(w);
    CHECK(access(path, F_OK) != 0, "an unfinished file is removed");

    CHECK_OK(wgt_gguf_writer_open(path, &w));
    CHECK_OK(wgt_gguf_writer_add_tensor(w, "q", WGT_FTYPE_Q4_0, 2, ne));
    uint8_t two[36] = {0};
    CHECK(wgt_gguf_writer_write(w, two, 36) == WGT_ERR_MISUSE, "more bytes than declared");
    wgt_gguf_writer_free(w);

    CHECK_OK(wgt_gguf_writer_open(path, &w));
    CHECK_OK(wgt_gguf_writer_begin_array(w, "arr", WGT_GGUF_INT32, 2));
    int32_t one = 1;
    CHECK(wgt_gguf_writer_add_u32(w, NULL, 1) == WGT_ERR_MISUSE, "wrong element type");
    CHECK_OK(wgt_gguf_writer_add(w, NULL, WGT_GGUF_INT32, &one));
    CHECK(wgt_gguf_writer_end_array(w) == WGT_ERR_MISUSE, "array closed early");
    wgt_gguf_writer_free(w);
    remove(path);
}

/* --dump FILE: our reader's view of a GGUF file as JSON, for test_gguf_node.sh to compare with
 * the independent parser's. 64-bit integers are strings (JSON numbers lose them). */
static void dump_str(const char *s, uint64_t len)
{
    char *copy = malloc(len + 1), *buf = NULL;
    uint64_t n = 0, cap = 0;
    memcpy(copy, s, len);
    copy[len] = 0;
    wgt_json_escape(&buf, &n, &cap, copy);
    fputs(buf, stdout);
    free(buf);
    free(copy);
}

static void dump_value(const wgt_gguf_value *v)
{
    wgt_gguf_type t = wgt_gguf_value_type(v);
    int64_t i;
    uint64_t u, len;
    double f;
    const char *s;
    if (t == WGT_GGUF_ARRAY) {
        wgt_gguf_type e = wgt_gguf_array_type(v);
        printf("[");
        for (uint64_t k = 0; k < wgt_gguf_array_len(v); k++) {
            if (k) printf(",");
            if (e == WGT_GGUF_ARRAY) dump_value(wgt_gguf_array_item(v, k));
            else if (e == WGT_GGUF_STRING) wgt_gguf_array_str(v, k, &s, &len), dump_str(s, len);
            else if (e == WGT_GGUF_BOOL) wgt_gguf_array_int(v, k, &i), printf(i ? "true" : "false");
            else if (e == WGT_GGUF_FLOAT32 || e == WGT_GGUF_FLOAT64) wgt_gguf_array_float(v, k, &f), printf("%.17g", f);
            else if (e == WGT_GGUF_UINT64) printf("\"%llu\"", (unsigned long long)((const uint64_t *)wgt_gguf_array_data(v))[k]);
            else if (e == WGT_GGUF_INT64) wgt_gguf_array_int(v, k, &i), printf("\"%lld\"", (long long)i);
            else wgt_gguf_array_int(v, k, &i), printf("%lld", (long long)i);
        }
        printf("]");
    } else if (t == WGT_GGUF_STRING) {
        wgt_gguf_value_str(v, &s, &len);
        dump_str(s, len);
    } else if (t == WGT_GGUF_BOOL) {
        int b;
        wgt_gguf_value_bool(v, &b);
        printf(b ? "true" : "false");
    } else if (t == WGT_GGUF_FLOAT32 || t == WGT_GGUF_FLOAT64) {
        wgt_gguf_value_float(v, &f);
        printf("%.17g", f);
    } else if (t == WGT_GGUF_UINT64) {
        wgt_gguf_value_uint(v, &u);
        printf("\"%llu\"", (unsigned long long)u);
    } else {
        wgt_gguf_value_int(v, &i);
        printf(t == WGT_GGUF_INT64 ? "\"%lld\"" : "%lld", (long long)i);
    }
}

static int dump(const char *path)
{
    wgt_gguf *g;
    if (wgt_gguf_open(path, &g)) {
        fprintf(stderr, "%s\n", wgt_errmsg());
        return 1;
    }
    printf("{\"version\":%u,\"tensorDataOffset\":\"%llu\",\"kv\":{", wgt_gguf_version(g), (unsigned long long)wgt_gguf_data_offset(g));
    for (int64_t i = 0; i < wgt_gguf_kv_count(g); i++) {
        const wgt_gguf_value *v = wgt_gguf_kv_value(g, i);
        printf("%s", i ? "," : "");
        dump_str(wgt_gguf_kv_key(g, i), strlen(wgt_gguf_kv_key(g, i)));
        printf(":{\"type\":%d,", wgt_gguf_value_type(v));
        if (wgt_gguf_value_type(v) == WGT_GGUF_ARRAY) printf("\"subType\":%d,", wgt_gguf_array_type(v));
        printf("\"value\":");
        dump_value(v);
        printf("}");
    }
    printf("},\"tensors\":[");
    for (int64_t i = 0; i < wgt_gguf_tensor_count(g); i++) {
        const wgt_gguf_tensor *t = wgt_gguf_tensor_at(g, i);
        printf("%s{\"name\":", i ? "," : "");
        dump_str(t->name, strlen(t->name));
        printf(",\"n_dims\":%u,\"shape\":[", t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++) printf("%s\"%lld\"", d ? "," : "", (long long)t->ne[d]);
        printf("],\"dtype\":%d,\"offset\":\"%llu\"}", (int)t->type, (unsigned long long)(t->offset - wgt_gguf_data_offset(g)));
    }
    printf("]}\n");
    wgt_gguf_free(g);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--dump")) return dump(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "--write")) {
        write_file_with(argv[2], 32, 7);
        return finish("test_gguf --write");
    }
    test_round_trip();
    test_v2();
    test_writer_misuse();
    return finish("test_gguf");
}
