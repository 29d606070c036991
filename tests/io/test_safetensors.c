/* safetensors: our writer's files read back by our reader (every dtype, metadata, streamed
 * writes), a sharded checkpoint through model.safetensors.index.json, hand-built malformed files
 * (status and message), and a truncation sweep over a valid file's header. The JSON layout of
 * written headers is also checked as text against the format's description. */
#include <sys/stat.h>

#include "io/io.h"
#include "io/io_test.h"

static const struct {
    const char *name;
    wgt_ftype type;
    uint32_t n_dims;
    int64_t shape[3];
} specs[] = {
    {"model.embed_tokens.weight", WGT_FTYPE_F32, 2, {3, 4}}, {"f64", WGT_FTYPE_F64, 1, {3}},
    {"f16", WGT_FTYPE_F16, 2, {2, 2}}, {"bf16", WGT_FTYPE_BF16, 1, {5}},
    {"i64", WGT_FTYPE_I64, 1, {2}}, {"i32", WGT_FTYPE_I32, 1, {2}}, {"i16", WGT_FTYPE_I16, 1, {3}},
    {"i8", WGT_FTYPE_I8, 1, {3}}, {"u8", WGT_FTYPE_U8, 1, {1}}, {"bool", WGT_FTYPE_BOOL, 1, {4}},
    {"f8_e4m3", WGT_FTYPE_F8_E4M3, 1, {2}}, {"f8_e5m2", WGT_FTYPE_F8_E5M2, 1, {2}},
    {"scalar", WGT_FTYPE_F32, 0, {0}}, {"empty", WGT_FTYPE_F32, 3, {2, 0, 3}},
    {"name \"quoted\" \xc3\xa9", WGT_FTYPE_U8, 1, {2}},
};
#define NS (int)(sizeof specs / sizeof specs[0])

static uint64_t nbytes(int t)
{
    int64_t n = 1;
    for (uint32_t d = 0; d < specs[t].n_dims; d++) n *= specs[t].shape[d];
    uint64_t b;
    wgt_ftype_bytes(specs[t].type, n, &b);
    return b;
}

static uint8_t pattern(int t, uint64_t i) { return specs[t].type == WGT_FTYPE_BOOL ? (uint8_t)(i & 1) : (uint8_t)(i * 31 + (uint64_t)t * 7); }

static void write_st(const char *path, int first, int last)
{
    wgt_st_writer *w;
    CHECK_OK(wgt_st_writer_open(path, &w));
    CHECK_OK(wgt_st_writer_add_metadata(w, "format", "pt"));
    for (int t = first; t < last; t++) CHECK_OK(wgt_st_writer_add_tensor(w, specs[t].name, specs[t].type, specs[t].n_dims, specs[t].shape));
    for (int t = first; t < last; t++)
        for (uint64_t i = 0; i < nbytes(t); i++) {
            uint8_t v = pattern(t, i);
            CHECK_OK(wgt_st_writer_write(w, &v, 1));
        }
    CHECK_OK(wgt_st_writer_finish(w));
    wgt_st_writer_free(w);
}

static void check_st(const wgt_safetensors *st, int first, int last)
{
    CHECK(wgt_safetensors_count(st) >= last - first, "count %lld", (long long)wgt_safetensors_count(st));
    for (int t = first; t < last; t++) {
        const wgt_st_tensor *x = wgt_safetensors_find(st, specs[t].name);
        CHECK(x != NULL, "tensor '%s' found", specs[t].name);
        if (!x) continue;
        CHECK(x->type == specs[t].type && x->n_dims == specs[t].n_dims && x->bytes == nbytes(t), "'%s' info", x->name);
        for (uint32_t d = 0; d < x->n_dims; d++) CHECK(x->shape[d] == specs[t].shape[d], "'%s' shape[%u]", x->name, d);
        int bad = 0;
        for (uint64_t i = 0; i < x->bytes; i++) bad += ((const uint8_t *)x->data)[i] != pattern(t, i);
        CHECK(bad == 0, "'%s': %d bytes differ", x->name, bad);
    }
}

static void test_round_trip(void)
{
    const char *path = tmp_path(".safetensors");
    write_st(path, 0, NS);
    size_t n = 0;
    char *raw = read_file(path, &n);
    uint64_t hlen;
    memcpy(&hlen, raw, 8);
    CHECK(hlen % 8 == 0 && raw[8] == '{', "header padded to 8 bytes and a JSON object");
    CHECK(strstr(raw + 8, "\"__metadata__\":{\"format\":\"pt\"}") != NULL, "metadata in the header");
    CHECK(strstr(raw + 8, "\"model.embed_tokens.weight\":{\"dtype\":\"F32\",\"shape\":[3,4],\"data_offsets\":[0,48]}") != NULL,
          "tensor entry as the format describes it");
    CHECK(strstr(raw + 8, "\"name \\\"quoted\\\" \xc3\xa9\"") != NULL, "names are JSON-escaped");
    free(raw);
    wgt_safetensors *st;
    CHECK_OK(wgt_safetensors_open(path, &st));
    if (!st) return;
    check_st(st, 0, NS);
    CHECK(wgt_safetensors_count(st) == NS, "count");
    CHECK(wgt_safetensors_metadata_count(st) == 1 && !strcmp(wgt_safetensors_metadata(st, "format"), "pt"), "metadata");
    CHECK(wgt_safetensors_find(st, "nope") == NULL, "absent tensor");
    /* values through the dequantiser: bool and u8 by value */
    float f[4];
    CHECK_OK(wgt_dequantize(WGT_FTYPE_BOOL, wgt_safetensors_find(st, "bool")->data, f, 4));
    CHECK(f[0] == 0 && f[1] == 1, "bool values");
    wgt_safetensors_free(st);
    remove(path);
}

static void test_sharded(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", tmp_path(".dir"));
    mkdir(dir, 0755);
    char p1[600], p2[600], idx[600];
    snprintf(p1, sizeof p1, "%s/model-00001-of-00002.safetensors", dir);
    snprintf(p2, sizeof p2, "%s/model-00002-of-00002.safetensors", dir);
    snprintf(idx, sizeof idx, "%s/model.safetensors.index.json", dir);
    write_st(p1, 0, 6);
    write_st(p2, 6, NS);
    FILE *f = fopen(idx, "w");
    fprintf(f, "{\"metadata\": {\"total_size\": 1}, \"weight_map\": {");
    for (int t = 0; t < NS; t++) {
        char esc[128] = "";
        for (const char *s = specs[t].name; *s; s++) {
            if (*s == '"') strcat(esc, "\\");
            strncat(esc, s, 1);
        }
        fprintf(f, "%s\"%s\": \"model-0000%d-of-00002.safetensors\"", t ? ", " : "", esc, t < 6 ? 1 : 2);
    }
    fprintf(f, "}}");
    fclose(f);
    wgt_safetensors *st;
    CHECK_OK(wgt_safetensors_open(dir, &st)); /* the directory finds the index */
    if (st) {
        check_st(st, 0, NS);
        CHECK(strstr(wgt_safetensors_find(st, "i8")->file, "00002") != NULL, "i8 from shard 2");
        wgt_safetensors_free(st);
    }
    /* an index that puts a tensor in the wrong shard, or points outside the directory */
    f = fopen(idx, "w");
    fprintf(f, "{\"weight_map\": {\"f64\": \"model-00002-of-00002.safetensors\"}}");
    fclose(f);
    CHECK(wgt_safetensors_open(idx, &st) == WGT_ERR_FORMAT && strstr(wgt_errmsg(), "does not hold it"), "wrong shard: %s", wgt_errmsg());
    f = fopen(idx, "w");
    fprintf(f, "{\"weight_map\": {\"f64\": \"../../etc/passwd\"}}");
    fclose(f);
    CHECK(wgt_safetensors_open(idx, &st) == WGT_ERR_FORMAT && strstr(wgt_errmsg(), "plain file name"), "path traversal: %s", wgt_errmsg());
    f = fopen(idx, "w");
    fprintf(f, "{\"weight_map\": {\"f64\": \"missing.safetensors\"}}");
    fclose(f);
    CHECK(wgt_safetensors_open(idx, &st) == WGT_ERR_NOT_FOUND && strstr(wgt_errmsg(), "missing.safetensors"), "missing shard: %s", wgt_errmsg());
    /* the same tensor in two shards */
    write_st(p2, 0, 2);
    f = fopen(idx, "w");
    fprintf(f, "{\"weight_map\": {\"f64\": \"model-00001-of-00002.safetensors\", \"x\": \"model-00002-of-00002.safetensors\"}}");
    fclose(f);
    CHECK(wgt_safetensors_open(idx, &st) == WGT_ERR_FORMAT && strstr(wgt_errmsg(), "duplicate tensor name"), "duplicate across shards: %s", wgt_errmsg());
    remove(p1);
    remove(p2);
    remove(idx);
    rmdir(dir);
}

static const char *path;

static void expect(const char *what, const char *json, const void *data, size_t data_len, wgt_status want, const char *s1)
{
    bytes b = {0};
    b_u64(&b, strlen(json));
    b_put(&b, json, strlen(json));
    if (data_len) b_put(&b, data, data_len);
    write_file(path, b.p, b.n);
    free(b.p);
    wgt_safetensors *st = NULL;
    wgt_status s = wgt_safetensors_open(path, &st);
    const char *m = wgt_errmsg();
    CHECK(s == want, "%s: status %s, expected %s (%s)", what, wgt_status_str(s), wgt_status_str(want), m);
    if (want) {
        CHECK(strstr(m, path) != NULL, "%s: the message names the file: %s", what, m);
        CHECK(!s1 || strstr(m, s1), "%s: the message should say '%s': %s", what, s1, m);
    }
    printf("%-34s -> %s\n", what, want ? m : "ok");
    wgt_safetensors_free(st);
}

static void test_hostile(void)
{
    uint8_t d[64] = {0};
    expect("valid", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", d, 8, WGT_OK, NULL);
    expect("not JSON", "{\"a\":{\"dtype\":\"F32\",", d, 8, WGT_ERR_FORMAT, "invalid JSON");
    expect("trailing garbage", "{}x", NULL, 0, WGT_ERR_FORMAT, "after the JSON");
    expect("not an object", "[1,2]", NULL, 0, WGT_ERR_FORMAT, "not a JSON object");
    expect("unknown dtype", "{\"a\":{\"dtype\":\"F7\",\"shape\":[2],\"data_offsets\":[0,8]}}", d, 8, WGT_ERR_UNSUPPORTED, "dtype \"F7\"");
    expect("dtype not a string", "{\"a\":{\"dtype\":4,\"shape\":[2],\"data_offsets\":[0,8]}}", d, 8, WGT_ERR_FORMAT, "\"dtype\"");
    expect("negative shape", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", d, 8, WGT_ERR_FORMAT, "shape[0]");
    expect("fractional shape", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", d, 8, WGT_ERR_FORMAT, "shape[0]");
    expect("shape overflow", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,8]}}", d, 8, WGT_ERR_FORMAT, "overflow");
    expect("type/size mismatch", "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", d, 8, WGT_ERR_FORMAT, "need 12");
    expect("offsets reversed", "{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[8,0]}}", d, 8, WGT_ERR_FORMAT, "before begin");
    expect("offsets past the end", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", d, 8, WGT_ERR_FORMAT, "past the end");
    expect("huge offsets", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1e300,1e300]}}", d, 8, WGT_ERR_FORMAT, "data_offsets");
    expect("three offsets", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,2]}}", d, 8, WGT_ERR_FORMAT, "two non-negative");
    expect("overlap",
           "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
           d, 8, WGT_ERR_FORMAT, "overlaps");
    expect("hole", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", d, 8, WGT_ERR_FORMAT, "belong to no tensor");
    expect("bytes after the last tensor", "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", d, 8, WGT_ERR_FORMAT, "cover 4 data bytes");
    expect("duplicate names",
           "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
           d, 8, WGT_ERR_FORMAT, "duplicate tensor name 'a'");
    expect("invalid UTF-8 name", "{\"\xff\xfe\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", d, 8, WGT_ERR_FORMAT, "UTF-8");
    expect("metadata not strings", "{\"__metadata__\":{\"a\":1}}", NULL, 0, WGT_ERR_FORMAT, "__metadata__");
    expect("nine dimensions", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", d, 1, WGT_ERR_LIMIT, "9 dimensions");
    expect("entry not an object", "{\"a\":[1]}", NULL, 0, WGT_ERR_FORMAT, "not an object");

    /* header length past the file, over 100 MB, too short */
    bytes b = {0};
    b_u64(&b, 1000);
    b_put(&b, "{}", 2);
    write_file(path, b.p, b.n);
    wgt_safetensors *st;
    CHECK(wgt_safetensors_open(path, &st) == WGT_ERR_FORMAT && strstr(wgt_errmsg(), "header length 1000"), "header past the end: %s", wgt_errmsg());
    b.n = 0;
    b_u64(&b, 200ull << 20);
    write_file(path, b.p, b.n);
    CHECK(wgt_safetensors_open(path, &st) == WGT_ERR_LIMIT && strstr(wgt_errmsg(), "100 MB"), "header over 100 MB: %s", wgt_errmsg());
    write_file(path, b.p, 5);
    CHECK(wgt_safetensors_open(path, &st) == WGT_ERR_FORMAT && strstr(wgt_errmsg(), "truncated"), "5-byte file: %s", wgt_errmsg());
    /* a header of a million tiny values: refused before cJSON allocates a node for each */
    b.n = 0;
    size_t nv = 3u << 20;
    b_u64(&b, 2 * nv + 10);
    b_put(&b, "{\"x\":[", 6);
    for (size_t i = 0; i < nv; i++) b_put(&b, "0,", 2);
    b_put(&b, "0]}  ", 4);
    write_file(path, b.p, b.n);
    CHECK(wgt_safetensors_open(path, &st) == WGT_ERR_LIMIT && strstr(wgt_errmsg(), "values"), "value bomb: %s", wgt_errmsg());
    free(b.p);
}

static void test_truncation_sweep(void)
{
    const char *full = tmp_path(".safetensors");
    write_st(full, 0, NS);
    size_t n = 0;
    uint8_t *all = read_file(full, &n);
    uint64_t hlen;
    memcpy(&hlen, all, 8);
    int refused = 0;
    for (uint64_t cut = 0; cut < n; cut++) {
        uint8_t *copy = malloc(cut + 1);
        memcpy(copy, all, cut);
        wgt_safetensors *st;
        wgt_status s = wgt_safetensors_open_memory("cut.safetensors", cut ? copy : NULL, cut, &st);
        if (s == WGT_OK) {
            CHECK(0, "cut at %llu accepted", (unsigned long long)cut);
            wgt_safetensors_free(st);
        } else {
            refused++;
            CHECK(strstr(wgt_errmsg(), "cut.safetensors") != NULL, "cut at %llu: %s", (unsigned long long)cut, wgt_errmsg());
        }
        free(copy);
    }
    printf("truncation sweep: %d cuts of a %zu-byte file (header %llu bytes) all refused\n", refused, n, (unsigned long long)hlen + 8);
    free(all);
    remove(full);
}

int main(void)
{
    path = tmp_path(".safetensors");
    test_round_trip();
    test_sharded();
    test_hostile();
    test_truncation_sweep();
    remove(path);
    return finish("test_safetensors");
}
