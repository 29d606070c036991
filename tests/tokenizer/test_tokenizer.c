/* Tokenizer checks that need no node: streaming decode, bad files and bad input as statuses,
 * the arrays constructor, GGUF round trip of the Llama 2 vocabulary (written by src/io's
 * converter, read back through wgt_tokenizer_open) against the .model itself (whose ids
 * test_tokenizer_ref.sh compares with spm_encode and llama-tokenizer-js).
 *
 * Also a helper for test_tokenizer_ref.sh: test_tokenizer --make-gguf DIR ARCH OUT writes the
 * tokenizer metadata of the Hugging Face directory DIR to the GGUF file OUT. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tokenizer/tokenizer_internal.h"
#include "wgt.h"

static int failures;

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            failures++;                                                                                                \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                                       \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fprintf(stderr, "\n");                                                                                     \
        }                                                                                                              \
    } while (0)

static const char *const texts[] = {
    "", "Hello world", "  two  spaces", "tabs\tand\nnewlines\n", "café naïve", "你好，世界", "emoji 😀 👨‍👩‍👧‍👦 🇺🇸",
    "I'm 2024 years", "<s> looks special", "\xF0\x9F\xA6\x80 crab", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "ab", "supercalifragilisticexpialidocious",
};
#define N_TEXTS (sizeof texts / sizeof texts[0])

static int make_gguf(const char *dir, const char *arch, const char *out)
{
    const char *kind;
    wgt_gguf_writer *w = NULL;
    wgt_status st = wgt_gguf_writer_open(out, &w);
    if (!st) st = wgt_gguf_writer_add_str(w, "general.architecture", arch);
    if (!st) st = wgt_gguf_writer_add_tokenizer(w, dir, arch, NULL, &kind);
    if (!st) st = wgt_gguf_writer_finish(w);
    wgt_gguf_writer_free(w);
    if (st) {
        fprintf(stderr, "make-gguf %s: %s\n", dir, wgt_errmsg());
        return 1;
    }
    return 0;
}

static int valid_utf8(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!k || i + k > n) return 0;
        for (size_t j = 1; j < k; j++)
            if (((unsigned char)s[i + j] & 0xC0) != 0x80) return 0;
        i += k;
    }
    return 1;
}

/* Streaming: every chunk is whole UTF-8 and the chunks add up to the full decode. */
static void check_streaming(wgt_tokenizer *tok, const char *label)
{
    for (size_t t = 0; t < N_TEXTS; t++) {
        int32_t *ids;
        size_t n;
        if (wgt_tokenizer_encode(tok, texts[t], (size_t)-1, WGT_TOKENIZE_ADD_SPECIAL, &ids, &n)) {
            CHECK(0, "%s: encode '%s': %s", label, texts[t], wgt_errmsg());
            continue;
        }
        char *full;
        size_t full_len;
        CHECK(wgt_tokenizer_decode(tok, ids, n, 1, &full, &full_len) == WGT_OK, "%s: decode", label);
        CHECK(!strcmp(full, texts[t]), "%s: decode(encode('%s')) = '%s'", label, texts[t], full);
        wgt_detokenizer *d;
        CHECK(wgt_detokenizer_create(tok, 1, &d) == WGT_OK, "detokenizer_create");
        char *acc = calloc(full_len + 16, 1);
        size_t acc_n = 0;
        for (size_t i = 0; i <= n; i++) {
            const char *chunk;
            size_t len;
            wgt_status st = i < n ? wgt_detokenizer_push(d, ids[i], &chunk, &len) : wgt_detokenizer_flush(d, &chunk, &len);
            CHECK(st == WGT_OK, "%s: push", label);
            CHECK(valid_utf8(chunk, len), "%s: '%s': token %zu gave a broken UTF-8 chunk", label, texts[t], i);
            if (acc_n + len <= full_len) memcpy(acc + acc_n, chunk, len);
            acc_n += len;
        }
        CHECK(acc_n == full_len && !memcmp(acc, full, full_len), "%s: streamed text differs for '%s'", label, texts[t]);
        wgt_detokenizer_free(d);
        free(acc);
        free(full);
        free(ids);
    }
}

/* Two tokenizers give the same ids for every text (with and without special tokens). */
static void check_same(wgt_tokenizer *a, wgt_tokenizer *b, const char *label)
{
    for (size_t t = 0; t < N_TEXTS; t++)
        for (unsigned flags = 0; flags < 4; flags++) {
            int32_t *x, *y;
            size_t nx, ny;
            CHECK(wgt_tokenizer_encode(a, texts[t], (size_t)-1, flags, &x, &nx) == WGT_OK, "%s: encode", label);
            CHECK(wgt_tokenizer_encode(b, texts[t], (size_t)-1, flags, &y, &ny) == WGT_OK, "%s: encode", label);
            CHECK(nx == ny && !memcmp(x, y, nx * sizeof *x), "%s: '%s' (flags %u): %zu vs %zu ids", label, texts[t], flags, nx, ny);
            free(x);
            free(y);
        }
}

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, n, f);
        fclose(f);
    }
}

/* A file must either open or fail with a message: never crash, never fail silently. */
static void expect_clean(const char *path, const char *label, int must_fail)
{
    wgt_tokenizer *tok = NULL;
    wgt_status st = wgt_tokenizer_open(path, &tok);
    if (st) CHECK(wgt_errmsg()[0] && !tok, "%s: failed without a message", label);
    else CHECK(!must_fail, "%s: opened, should have failed", label);
    wgt_tokenizer_free(tok);
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "--make-gguf")) return make_gguf(argv[2], argv[3], argv[4]);
    const char *root = getenv("WGT_ROOT");
    char model[4096], tmpdir[] = "/tmp/wgt-tok-XXXXXX", path[4400];
    snprintf(model, sizeof model, "%s/tests/fixtures/text/llama2-tokenizer.model", root ? root : ".");
    if (!mkdtemp(tmpdir)) return 1;

    wgt_tokenizer *spm;
    if (wgt_tokenizer_open(model, &spm)) {
        fprintf(stderr, "cannot open %s: %s (set WGT_ROOT)\n", model, wgt_errmsg());
        return 1;
    }
    CHECK(wgt_tokenizer_vocab_size(spm) == 32000 && wgt_tokenizer_bos(spm) == 1 && wgt_tokenizer_eos(spm) == 2,
          "llama2: vocab %d bos %d eos %d", wgt_tokenizer_vocab_size(spm), wgt_tokenizer_bos(spm), wgt_tokenizer_eos(spm));
    CHECK(wgt_tokenizer_is_eog(spm, 2) && !wgt_tokenizer_is_eog(spm, 1), "llama2: end-of-generation ids");
    check_streaming(spm, "llama2");

    /* Bad input text and ids. */
    int32_t *ids;
    size_t n;
    CHECK(wgt_tokenizer_encode(spm, "bad \xC3\x28 utf8", (size_t)-1, 0, &ids, &n) == WGT_ERR_INVALID_ARGUMENT,
          "invalid UTF-8 must be refused");
    int32_t bad_ids[] = {5, 32000};
    char *text;
    CHECK(wgt_tokenizer_decode(spm, bad_ids, 2, 0, &text, NULL) == WGT_ERR_INVALID_ARGUMENT && strstr(wgt_errmsg(), "32000"),
          "an id past the vocabulary must be refused, naming it: %s", wgt_errmsg());
    const char *piece;
    size_t plen;
    CHECK(wgt_tokenizer_token_to_piece(spm, 13, &piece, &plen) == WGT_OK && plen == 1 && piece[0] == '\n', "<0x0A> is a newline");
    CHECK(wgt_tokenizer_token_id(spm, "\xE2\x96\x81the") == 278, "token_id('▁the')");

    /* The arrays constructor, fed the .model's own vocabulary, encodes alike. */
    {
        int32_t nv = spm->n_vocab;
        const char **toks = calloc((size_t)nv, sizeof *toks);
        int32_t *types = calloc((size_t)nv, sizeof *types);
        for (int32_t i = 0; i < nv; i++) {
            toks[i] = spm->text[i];
            types[i] = spm->type[i];
        }
        wgt_tokenizer_arrays a = {.model = "llama", .n_tokens = (size_t)nv, .tokens = toks, .scores = spm->scores,
                                  .token_types = types, .bos_id = 1, .eos_id = 2, .unk_id = 0, .pad_id = -1,
                                  .add_bos = -1, .add_eos = -1, .add_space_prefix = -1};
        wgt_tokenizer *arr;
        CHECK(wgt_tokenizer_create(&a, &arr) == WGT_OK, "arrays: %s", wgt_errmsg());
        if (!failures) check_same(spm, arr, "arrays vs .model");
        wgt_tokenizer_free(arr);
        a.model = "bert";
        CHECK(wgt_tokenizer_create(&a, &arr) == WGT_ERR_UNSUPPORTED && !arr, "unknown model must be unsupported");
        a.model = "gpt2";
        a.pre = "no-such-pre";
        CHECK(wgt_tokenizer_create(&a, &arr) == WGT_ERR_UNSUPPORTED, "unknown pre-tokenizer must be unsupported");
        free(toks);
        free(types);
    }

    /* GGUF: the converter in src/io writes the metadata; wgt_tokenizer_open reads it back. */
    {
        char dir[4200], gguf[4200];
        snprintf(dir, sizeof dir, "%s/hf", tmpdir);
        snprintf(gguf, sizeof gguf, "%s/llama2.gguf", tmpdir);
        mkdir(dir, 0700);
        snprintf(path, sizeof path, "%s/tokenizer.model", dir);
        CHECK(symlink(model[0] == '/' ? model : realpath(model, NULL), path) == 0, "symlink");
        if (make_gguf(dir, "llama", gguf) == 0) {
            wgt_tokenizer *g;
            CHECK(wgt_tokenizer_open(gguf, &g) == WGT_OK, "open GGUF: %s", wgt_errmsg());
            if (g) {
                check_same(spm, g, "GGUF vs .model");
                check_streaming(g, "llama2 GGUF");
            }
            wgt_tokenizer_free(g);
        } else CHECK(0, "could not write the GGUF");
        unlink(path);
        unlink(gguf);
        rmdir(dir);
    }

    /* Truncated and corrupted .model files. */
    {
        char *data;
        size_t len;
        CHECK(tok_read_file(model, &data, &len) == WGT_OK, "read model");
        size_t cuts[] = {0, 1, 2, 7, 100, 1001, 40000, len / 2 + 3, len - 1};
        snprintf(path, sizeof path, "%s/cut.model", tmpdir);
        for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
            write_file(path, data, cuts[i]);
            char label[64];
            snprintf(label, sizeof label, ".model cut at %zu bytes", cuts[i]);
            expect_clean(path, label, cuts[i] < 2);
        }
        srand(7);
        for (int r = 0; r < 20; r++) { /* flip bytes in the header region */
            char *copy = malloc(len);
            memcpy(copy, data, len);
            for (int k = 0; k < 8; k++) copy[rand() % 4096] ^= (char)(1 + rand() % 255);
            write_file(path, copy, len);
            expect_clean(path, "corrupted .model", 0);
            free(copy);
        }
        unlink(path);
        free(data);
    }

    /* Malformed tokenizer.json files: each a clear error. */
    {
        static const char *const bad[] = {
            "{", "[]", "{\"model\": 5}", "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}}",
            "{\"model\": {\"type\": \"BPE\", \"vocab\": 5, \"merges\": []}}",
            "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -3}, \"merges\": []}}",
            "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"nospace\"]}, \"pre_tokenizer\": {\"type\": \"ByteLevel\"}}",
            "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"pre_tokenizer\": {\"type\": \"ByteLevel\"}}",
            ("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"pre_tokenizer\": {\"type\": \"Split\", "
             "\"pattern\": {\"Regex\": \"(unclosed\"}, \"behavior\": \"Isolated\"}, \"decoder\": {\"type\": \"ByteLevel\"}}"),
            "{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\"]]}}",
            "{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}, \"added_tokens\": [{\"id\": \"x\"}]}",
        };
        snprintf(path, sizeof path, "%s/tokenizer.json", tmpdir);
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            write_file(path, bad[i], strlen(bad[i]));
            char label[64];
            snprintf(label, sizeof label, "bad tokenizer.json #%zu", i);
            expect_clean(path, label, 1);
        }
        unlink(path);
        expect_clean("/nonexistent/tokenizer.json", "missing file", 1);
        expect_clean(tmpdir, "directory without a tokenizer", 1);
    }

    /* A small byte-level tokenizer.json written here (all 256 bytes, a few merges, added
     * tokens, a Split regex), then the same file with random bytes changed: each opens or
     * fails with a message, and whatever opens encodes random text and decodes it back. */
    {
        char json[65536];
        size_t k = 0;
        k += (size_t)snprintf(json + k, sizeof json - k, "{\"model\": {\"type\": \"BPE\", \"vocab\": {");
        for (int b = 0; b < 256; b++) {
            uint32_t cp = tok_byte_to_cp((uint8_t)b);
            char u[8];
            int ul = cp < 0x80 ? (u[0] = (char)cp, 1) : (u[0] = (char)(0xC0 | (cp >> 6)), u[1] = (char)(0x80 | (cp & 0x3F)), 2);
            if (cp == '"' || cp == '\\') u[1] = u[0], u[0] = '\\', ul = 2;
            k += (size_t)snprintf(json + k, sizeof json - k, "\"%.*s\": %d, ", ul, u, b);
        }
        k += (size_t)snprintf(json + k, sizeof json - k,
                              "\"th\": 256, \"the\": 257, \"\u0120the\": 258, \"\u0120t\": 259}, \"merges\": [\"t h\", \"th e\", "
                              "[\"\u0120\", \"t\"], \"\u0120t he\", \"\u0120 the\"]}, \"added_tokens\": [{\"id\": 260, "
                              "\"content\": \"<|x|>\", \"special\": true, \"lstrip\": true}, {\"id\": 261, \"content\": \"zz\", "
                              "\"single_word\": true}], \"normalizer\": {\"type\": \"NFC\"}, \"pre_tokenizer\": {\"type\": \"Sequence\", "
                              "\"pretokenizers\": [{\"type\": \"Split\", \"pattern\": {\"Regex\": \" ?\\\\p{L}+|\\\\s+|.\"}, "
                              "\"behavior\": \"Isolated\"}, {\"type\": \"ByteLevel\", \"use_regex\": false}]}, "
                              "\"decoder\": {\"type\": \"ByteLevel\"}}");
        snprintf(path, sizeof path, "%s/tokenizer.json", tmpdir);
        write_file(path, json, k);
        wgt_tokenizer *small;
        CHECK(wgt_tokenizer_open(path, &small) == WGT_OK, "small tokenizer.json: %s", wgt_errmsg());
        if (small) {
            int32_t *ids2;
            size_t n2;
            CHECK(wgt_tokenizer_encode(small, "the the <|x|> zz", (size_t)-1, WGT_TOKENIZE_PARSE_SPECIAL, &ids2, &n2) == WGT_OK &&
                      n2 == 5 && ids2[0] == 257 && ids2[1] == 258 && ids2[2] == 260 && ids2[3] == 32 && ids2[4] == 261,
                  "small tokenizer: merges, lstrip and single_word");
            free(ids2);
            check_streaming(small, "small byte-level");
            wgt_tokenizer_free(small);
        }
        char *copy = malloc(k);
        srand(11);
        for (int r = 0; r < 300; r++) {
            memcpy(copy, json, k);
            for (int m = 0; m < 1 + r % 4; m++) copy[rand() % k] = (char)(rand() % 256);
            write_file(path, copy, k);
            wgt_tokenizer *t = NULL;
            if (wgt_tokenizer_open(path, &t) != WGT_OK) {
                CHECK(wgt_errmsg()[0], "mutated tokenizer.json failed without a message");
                continue;
            }
            for (int q = 0; q < 5; q++) {
                char text[64];
                int tl = 0;
                while (tl < 60) { /* random ASCII and a few multi-byte characters */
                    int c = rand() % 100;
                    const char *piece = c < 5 ? "\xC3\xA9" : c < 8 ? "\xE4\xBD\xA0" : c < 10 ? "<|x|>" : NULL;
                    if (piece) {
                        int pl = (int)strlen(piece);
                        if (tl + pl > 60) break;
                        memcpy(text + tl, piece, (size_t)pl);
                        tl += pl;
                    } else text[tl++] = (char)(32 + rand() % 95);
                }
                int32_t *rid;
                size_t rn;
                char *back;
                if (wgt_tokenizer_encode(t, text, (size_t)tl, WGT_TOKENIZE_PARSE_SPECIAL, &rid, &rn) == WGT_OK) {
                    CHECK(wgt_tokenizer_decode(t, rid, rn, 0, &back, NULL) == WGT_OK, "decode after a mutated load");
                    free(back);
                    free(rid);
                }
            }
            wgt_tokenizer_free(t);
        }
        free(copy);
        unlink(path);
    }

    /* Chat templates: errors are statuses naming the problem. */
    {
        wgt_chat_message m[] = {{"user", "hi"}};
        char *out = NULL;
        CHECK(wgt_tokenizer_apply_chat_template(spm, m, 1, 1, "{% macro x() %}{% endmacro %}", &out) == WGT_ERR_UNSUPPORTED &&
                  strstr(wgt_errmsg(), "macro"),
              "unknown statement: %s", wgt_errmsg());
        CHECK(wgt_tokenizer_apply_chat_template(spm, m, 1, 1, "{{ raise_exception('nope') }}", &out) == WGT_ERR_INVALID_ARGUMENT &&
                  strstr(wgt_errmsg(), "nope"),
              "raise_exception: %s", wgt_errmsg());
        CHECK(wgt_tokenizer_apply_chat_template(spm, m, 1, 1, "{% for x in y %}", &out) == WGT_ERR_FORMAT, "unclosed for: %s",
              wgt_errmsg());
        CHECK(wgt_tokenizer_apply_chat_template(spm, m, 1, 1, "{{ x | frobnicate }}", &out) == WGT_ERR_UNSUPPORTED, "unknown filter");
        CHECK(wgt_tokenizer_apply_chat_template(spm, m, 1, 1, NULL, &out) == WGT_ERR_NOT_FOUND, "no template");
        CHECK(wgt_tokenizer_apply_chat_template(spm, m, 1, 0, "llama2", &out) == WGT_OK && !strcmp(out, "<s>[INST] hi [/INST]"),
              "llama2 family: '%s'", out ? out : "");
        free(out);
        out = NULL;
        /* transformers' strftime_now: defined (Llama 3.2's template tests it), today's date as C's
         * strftime formats it (compare.mjs checks granite's template against @huggingface/jinja's) */
        time_t now = time(NULL);
        struct tm tm;
        char want[64];
        localtime_r(&now, &tm);
        strftime(want, sizeof want, "[%Y-%m-%d %B]", &tm);
        CHECK(wgt_tokenizer_apply_chat_template(spm, m, 1, 0, "{% if strftime_now is defined %}{{ strftime_now('[%Y-%m-%d %B]') }}{% endif %}",
                                                &out) == WGT_OK && !strcmp(out, want),
              "strftime_now: '%s', want '%s' (%s)", out ? out : "", want, wgt_errmsg());
        free(out);
        char long_fmt[300];
        snprintf(long_fmt, sizeof long_fmt, "{{ strftime_now('%0200d') }}", 0);
        CHECK(wgt_tokenizer_apply_chat_template(spm, m, 1, 0, long_fmt, &out) == WGT_ERR_LIMIT && strstr(wgt_errmsg(), "strftime_now"),
              "a 200-byte strftime_now format: %s", wgt_errmsg());
    }

    wgt_tokenizer_free(spm);
    rmdir(tmpdir);
    if (failures) fprintf(stderr, "%d failures\n", failures);
    else printf("tokenizer: all checks passed\n");
    return failures ? 1 : 0;
}
