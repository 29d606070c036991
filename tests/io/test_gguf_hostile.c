/* Malformed GGUF files, built byte by byte: each must give a status, and a message that names
 * the file, the field and the problem — never a crash, a huge allocation or a read outside the
 * file. Then the truncation sweep: a valid file cut at every offset of its header (and at a few
 * inside its data) must be refused the same way. */
#include "io/io.h"
#include "io/io_test.h"

static const char *path;

/* Open b as a file; expect status st and a message holding the path and both substrings. */
static void expect(const char *what, bytes *b, wgt_status want, const char *s1, const char *s2)
{
    write_file(path, b->p, b->n);
    wgt_gguf *g = NULL;
    wgt_status st = wgt_gguf_open(path, &g);
    const char *m = wgt_errmsg();
    CHECK(st == want, "%s: status %s, expected %s (%s)", what, wgt_status_str(st), wgt_status_str(want), m);
    CHECK(g == NULL || want == WGT_OK, "%s: no handle on failure", what);
    if (want != WGT_OK) {
        CHECK(strstr(m, path) != NULL, "%s: the message names the file: %s", what, m);
        CHECK(!s1 || strstr(m, s1), "%s: the message should say '%s': %s", what, s1, m);
        CHECK(!s2 || strstr(m, s2), "%s: the message should say '%s': %s", what, s2, m);
    }
    printf("%-36s -> %s\n", what, want == WGT_OK ? "ok" : m);
    wgt_gguf_free(g);
    free(b->p);
    memset(b, 0, sizeof *b);
}

static void header(bytes *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    b_put(b, "GGUF", 4);
    b_u32(b, version);
    b_u64(b, n_tensors);
    b_u64(b, n_kv);
}

/* A tensor info: name, ne[0..n), type, offset. */
static void tinfo(bytes *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t off)
{
    b_str(b, name);
    b_u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims; d++) b_u64(b, ne[d]);
    b_u32(b, type);
    b_u64(b, off);
}

static void data(bytes *b, size_t n)
{
    b_pad(b, 32);
    for (size_t i = 0; i < n; i++) b_u8(b, (uint8_t)i);
}

static void test_cases(void)
{
    bytes b = {0};
    uint64_t ne4[1] = {4}, ne8[1] = {8};

    b_put(&b, "GGML", 4);
    b_u32(&b, 3);
    expect("wrong magic", &b, WGT_ERR_FORMAT, "not a GGUF file", NULL);
    expect("empty file", &b, WGT_ERR_FORMAT, "truncated", "magic");
    header(&b, 1, 0, 0);
    expect("version 1", &b, WGT_ERR_UNSUPPORTED, "version 1", NULL);
    header(&b, 7, 0, 0);
    expect("unknown version", &b, WGT_ERR_FORMAT, "unknown GGUF version 7", NULL);
    header(&b, 0x03000000, 0, 0);
    expect("big-endian", &b, WGT_ERR_UNSUPPORTED, "big-endian", NULL);
    header(&b, 3, 1ull << 60, 0);
    expect("absurd tensor count", &b, WGT_ERR_FORMAT, "tensor count", "cannot fit");
    header(&b, 3, 0, UINT64_MAX);
    expect("absurd kv count", &b, WGT_ERR_FORMAT, "metadata count", "cannot fit");

    header(&b, 3, 0, 1);
    b_u64(&b, 1ull << 62);
    b_put(&b, "key and some bytes to get past the count check", 40);
    expect("absurd key length", &b, WGT_ERR_FORMAT, "metadata 0 key", "truncated");
    header(&b, 3, 0, 1);
    b_str(&b, "k");
    b_u32(&b, WGT_GGUF_STRING);
    b_u64(&b, 1ull << 40);
    expect("absurd string length", &b, WGT_ERR_FORMAT, "metadata 0 ('k')", "truncated");
    header(&b, 3, 0, 1);
    b_str(&b, "k");
    b_u32(&b, WGT_GGUF_ARRAY);
    b_u32(&b, WGT_GGUF_UINT32);
    b_u64(&b, 1ull << 61);
    expect("absurd array count", &b, WGT_ERR_FORMAT, "array of", "cannot fit");
    header(&b, 3, 0, 1);
    b_str(&b, "k");
    b_u32(&b, WGT_GGUF_ARRAY);
    b_u32(&b, WGT_GGUF_STRING);
    b_u64(&b, 1000000);
    b_u64(&b, 0);
    expect("string array count past the end", &b, WGT_ERR_FORMAT, "array of 1000000 string", NULL);
    header(&b, 3, 0, 1);
    b_str(&b, "k");
    b_u32(&b, 13);
    b_u32(&b, 0);
    expect("unknown value type", &b, WGT_ERR_FORMAT, "unknown value type 13", "'k'");
    header(&b, 3, 0, 1);
    b_str(&b, "k");
    b_u32(&b, WGT_GGUF_ARRAY);
    b_u32(&b, 99);
    b_u64(&b, 0);
    expect("unknown array element type", &b, WGT_ERR_FORMAT, "unknown array element type 99", NULL);
    header(&b, 3, 0, 1);
    b_str(&b, "k");
    b_u32(&b, WGT_GGUF_ARRAY);
    for (int d = 0; d < 10; d++) {
        b_u32(&b, WGT_GGUF_ARRAY);
        b_u64(&b, 1);
    }
    b_u32(&b, WGT_GGUF_UINT8);
    b_u64(&b, 0);
    expect("arrays nested too deep", &b, WGT_ERR_LIMIT, "nested deeper", NULL);

    header(&b, 3, 0, 1);
    b_str(&b, "bad\xc3\x28key");
    b_u32(&b, WGT_GGUF_UINT8);
    b_u8(&b, 1);
    expect("invalid UTF-8 key", &b, WGT_ERR_FORMAT, "not valid UTF-8", "metadata 0 key");
    header(&b, 3, 0, 1);
    b_str(&b, "over\xed\xa0\x80long");
    b_u32(&b, WGT_GGUF_UINT8);
    b_u8(&b, 1);
    expect("surrogate in key", &b, WGT_ERR_FORMAT, "not valid UTF-8", NULL);
    header(&b, 3, 0, 1);
    b_u64(&b, 0);
    b_u32(&b, WGT_GGUF_UINT8);
    b_u8(&b, 1);
    b_u64(&b, 0);
    expect("empty key", &b, WGT_ERR_FORMAT, "empty", NULL);
    header(&b, 3, 0, 2);
    b_str(&b, "dup");
    b_u32(&b, WGT_GGUF_UINT8);
    b_u8(&b, 1);
    b_str(&b, "dup");
    b_u32(&b, WGT_GGUF_UINT8);
    b_u8(&b, 2);
    expect("duplicate key", &b, WGT_ERR_FORMAT, "duplicate key", "'dup'");
    header(&b, 3, 0, 1);
    b_str(&b, "general.alignment");
    b_u32(&b, WGT_GGUF_STRING);
    b_str(&b, "32");
    expect("alignment of the wrong type", &b, WGT_ERR_FORMAT, "general.alignment has type string", NULL);
    header(&b, 3, 0, 1);
    b_str(&b, "general.alignment");
    b_u32(&b, WGT_GGUF_UINT32);
    b_u32(&b, 48);
    expect("alignment not a power of two", &b, WGT_ERR_FORMAT, "general.alignment 48", "power of two");

    header(&b, 3, 1, 0);
    tinfo(&b, "w", 1, ne4, WGT_FTYPE_F32, 32);
    data(&b, 16);
    expect("offset past the end", &b, WGT_ERR_FORMAT, "tensor 0 ('w')", "past the end");
    header(&b, 3, 1, 0);
    tinfo(&b, "w", 1, ne4, WGT_FTYPE_F32, UINT64_MAX - 31);
    data(&b, 16);
    expect("offset near 2^64", &b, WGT_ERR_FORMAT, "past the end", NULL);
    header(&b, 3, 1, 0);
    tinfo(&b, "w", 1, ne4, WGT_FTYPE_F32, 4);
    data(&b, 64);
    expect("misaligned tensor", &b, WGT_ERR_FORMAT, "not a multiple of general.alignment", "'w'");
    header(&b, 3, 2, 0);
    tinfo(&b, "a", 1, ne8, WGT_FTYPE_F32, 0);
    tinfo(&b, "b", 1, ne8, WGT_FTYPE_F32, 0);
    data(&b, 64);
    expect("overlapping tensors", &b, WGT_ERR_FORMAT, "overlap", "'a' and 'b'");
    header(&b, 3, 2, 0);
    tinfo(&b, "a", 1, ne8, WGT_FTYPE_F32, 0);
    tinfo(&b, "a", 1, ne8, WGT_FTYPE_F32, 32);
    data(&b, 64);
    expect("duplicate tensor names", &b, WGT_ERR_FORMAT, "duplicate name 'a'", NULL);
    header(&b, 3, 1, 0);
    tinfo(&b, "w", 1, ne4, 99, 0);
    data(&b, 64);
    expect("unknown tensor type", &b, WGT_ERR_FORMAT, "unknown tensor type 99", "'w'");
    header(&b, 3, 1, 0);
    tinfo(&b, "w", 1, ne4, WGT_FTYPE_U8, 0);
    data(&b, 64);
    expect("a safetensors-only type", &b, WGT_ERR_FORMAT, "unknown tensor type 200", NULL);
    uint64_t ne33[2] = {33, 1};
    header(&b, 3, 1, 0);
    tinfo(&b, "q", 2, ne33, WGT_FTYPE_Q4_0, 0);
    data(&b, 64);
    expect("row not a block multiple", &b, WGT_ERR_FORMAT, "ne[0] = 33", "q4_0");
    uint64_t ne5[5] = {1, 1, 1, 1, 1};
    header(&b, 3, 1, 0);
    tinfo(&b, "w", 5, ne5, WGT_FTYPE_F32, 0);
    data(&b, 64);
    expect("five dimensions", &b, WGT_ERR_FORMAT, "n_dims 5", NULL);
    uint64_t neneg[1] = {UINT64_MAX};
    header(&b, 3, 1, 0);
    tinfo(&b, "w", 1, neneg, WGT_FTYPE_F32, 0);
    data(&b, 64);
    expect("negative dimension", &b, WGT_ERR_FORMAT, "negative", NULL);
    uint64_t nebig[2] = {1ull << 32, 1ull << 32};
    header(&b, 3, 1, 0);
    tinfo(&b, "w", 2, nebig, WGT_FTYPE_F32, 0);
    data(&b, 64);
    expect("element count overflow", &b, WGT_ERR_FORMAT, "overflow", NULL);
    uint64_t nebytes[2] = {1ull << 31, 1ull << 31};
    header(&b, 3, 1, 0);
    tinfo(&b, "w", 2, nebytes, WGT_FTYPE_F32, 0);
    data(&b, 64);
    expect("byte size overflow", &b, WGT_ERR_FORMAT, "byte size overflows", NULL);
    header(&b, 3, 1, 0);
    tinfo(&b, "w", 1, ne4, WGT_FTYPE_F32, 0);
    expect("data section missing", &b, WGT_ERR_FORMAT, "past the end", NULL);

    /* valid edge cases */
    header(&b, 3, 0, 0);
    expect("no tensors, no metadata", &b, WGT_OK, NULL, NULL);
    uint64_t ne0[2] = {0, 3};
    header(&b, 3, 1, 0);
    tinfo(&b, "empty", 2, ne0, WGT_FTYPE_Q4_K, 0);
    data(&b, 0);
    expect("an empty tensor", &b, WGT_OK, NULL, NULL);
}

/* A header over 100 MB: a sparse file whose one string claims 101 MB (none of it is read). */
static void test_huge_header(void)
{
    bytes b = {0};
    header(&b, 3, 0, 1);
    b_str(&b, "big");
    b_u32(&b, WGT_GGUF_STRING);
    b_u64(&b, 101ull << 20);
    write_file(path, b.p, b.n);
    CHECK(truncate(path, (off_t)(b.n + (101ull << 20))) == 0, "sparse file");
    wgt_gguf *g;
    wgt_status st = wgt_gguf_open(path, &g);
    CHECK(st == WGT_ERR_LIMIT && strstr(wgt_errmsg(), "100 MB") && strstr(wgt_errmsg(), "'big'"), "header over 100 MB: %s: %s",
          wgt_status_str(st), wgt_errmsg());
    printf("%-36s -> %s\n", "header over 100 MB", wgt_errmsg());
    free(b.p);
}

/* The sweep: every prefix of a valid file's header, and a few of its data, must be refused. */
static void test_truncation_sweep(void)
{
    const char *full = tmp_path(".gguf");
    wgt_gguf_writer *w;
    CHECK_OK(wgt_gguf_writer_open(full, &w));
    CHECK_OK(wgt_gguf_writer_add_str(w, "general.architecture", "llama"));
    CHECK_OK(wgt_gguf_writer_add_u32(w, "llama.block_count", 2));
    CHECK_OK(wgt_gguf_writer_add_f32(w, "llama.rope.freq_base", 10000.0f));
    const char *toks[4] = {"<s>", "</s>", "a", "\xe2\x96\x81the"};
    CHECK_OK(wgt_gguf_writer_add_str_array(w, "tokenizer.ggml.tokens", toks, NULL, 4));
    float scores[4] = {0, 0, -1, -2};
    CHECK_OK(wgt_gguf_writer_add_array(w, "tokenizer.ggml.scores", WGT_GGUF_FLOAT32, scores, 4));
    CHECK_OK(wgt_gguf_writer_begin_array(w, "nested", WGT_GGUF_ARRAY, 2));
    CHECK_OK(wgt_gguf_writer_add_str_array(w, NULL, toks, NULL, 2));
    CHECK_OK(wgt_gguf_writer_add_array(w, NULL, WGT_GGUF_FLOAT32, scores, 3));
    CHECK_OK(wgt_gguf_writer_end_array(w));
    int64_t ne_a[2] = {32, 2}, ne_b[1] = {8};
    CHECK_OK(wgt_gguf_writer_add_tensor(w, "blk.0.attn_q.weight", WGT_FTYPE_Q8_0, 2, ne_a));
    CHECK_OK(wgt_gguf_writer_add_tensor(w, "output_norm.weight", WGT_FTYPE_F32, 1, ne_b));
    uint8_t payload[68 + 32] = {0};
    CHECK_OK(wgt_gguf_writer_write(w, payload, 68));
    CHECK_OK(wgt_gguf_writer_write(w, payload, 32));
    CHECK_OK(wgt_gguf_writer_finish(w));
    wgt_gguf_writer_free(w);
    size_t n = 0;
    uint8_t *all = read_file(full, &n);
    wgt_gguf *g;
    CHECK_OK(wgt_gguf_open(full, &g));
    uint64_t header_end = wgt_gguf_data_offset(g);
    wgt_gguf_free(g);
    int refused = 0, with_path = 0;
    for (uint64_t cut = 0; cut < n; cut++) {
        if (cut > header_end && cut % 13) continue; /* every header offset, some data offsets */
        /* in memory (an exact-size copy: an overread would be caught by the sanitizers), and
         * every 17th as a real file through mmap */
        uint8_t *copy = malloc(cut + 1);
        memcpy(copy, all, cut);
        wgt_status st = wgt_gguf_open_memory("cut.gguf", cut ? copy : NULL, cut, &g);
        refused += st == WGT_ERR_FORMAT;
        with_path += st != WGT_OK && strstr(wgt_errmsg(), "cut.gguf") != NULL;
        if (st == WGT_OK) {
            CHECK(0, "a file cut at %llu of %zu bytes was accepted", (unsigned long long)cut, n);
            wgt_gguf_free(g);
        }
        free(copy);
        if (cut % 17 == 0) {
            write_file(path, all, cut);
            st = wgt_gguf_open(path, &g);
            CHECK(st == WGT_ERR_FORMAT, "file cut at %llu: %s", (unsigned long long)cut, wgt_errmsg());
            if (!st) wgt_gguf_free(g);
        }
    }
    CHECK(refused == with_path && refused > (int)header_end, "%d cuts refused, %d naming the file", refused, with_path);
    printf("truncation sweep: %d cuts of a %zu-byte file (header %llu bytes) all refused\n\n", refused, n, (unsigned long long)header_end);
    free(all);
    remove(full);
}

int main(void)
{
    path = tmp_path(".gguf");
    test_cases();
    test_huge_header();
    test_truncation_sweep();
    remove(path);
    return finish("test_gguf_hostile");
}
