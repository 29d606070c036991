/* libFuzzer target: the runtime tokenizer (what generate, chat and tokenize use). The first byte
 * picks the case; the rest is
 *   0: a tokenizer.json, opened, then used to encode and decode a fixed text;
 *   1: a SentencePiece tokenizer.model, the same;
 *   2: arbitrary bytes encoded by a small byte-level BPE tokenizer (tokenizer.json built here),
 *      with and without special-token parsing, decoded again and through the streaming decoder;
 *   3: the same bytes through a small SentencePiece-style tokenizer (wgt_tokenizer_create).
 * Files live in a private temporary directory (the tokenizer opens paths). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wgt.h"

static char dir[64];
static wgt_tokenizer *bpe, *spm;

static const char *path(const char *name)
{
    static char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static void put(const char *name, const uint8_t *data, size_t n)
{
    FILE *f = fopen(path(name), "wb");
    if (!f) abort();
    if (n) fwrite(data, 1, n, f);
    fclose(f);
}

/* Encode, decode in one go and through the streaming decoder; errors are fine, crashes not. */
static void round_trip(wgt_tokenizer *tok, const char *text, size_t len)
{
    for (unsigned flags = 0; flags < 4; flags++) {
        int32_t *ids = NULL;
        size_t n = 0, out_len;
        if (wgt_tokenizer_encode(tok, text, len, flags, &ids, &n)) continue;
        char *out = NULL;
        if (!wgt_tokenizer_decode(tok, ids, n, flags & 1, &out, &out_len)) free(out);
        wgt_detokenizer *d;
        if (!wgt_detokenizer_create(tok, 0, &d)) {
            const char *piece;
            size_t plen;
            for (size_t i = 0; i < n; i++) wgt_detokenizer_push(d, ids[i], &piece, &plen);
            wgt_detokenizer_flush(d, &piece, &plen);
            wgt_detokenizer_free(d);
        }
        free(ids);
    }
}

static void init(void)
{
    snprintf(dir, sizeof dir, "%s", "/tmp/wgt-fuzz-rtok-XXXXXX");
    if (!mkdtemp(dir)) abort();
    /* byte-level BPE: the 256 byte symbols of GPT-2's alphabet, a few merges, added tokens */
    char *json = malloc(1 << 16);
    size_t k = (size_t)snprintf(json, 1 << 16, "{\"added_tokens\":[{\"id\":300,\"content\":\"<|im_start|>\",\"special\":true},"
                                               "{\"id\":301,\"content\":\"<|im_end|>\",\"special\":true}],"
                                               "\"pre_tokenizer\":{\"type\":\"ByteLevel\"},"
                                               "\"model\":{\"type\":\"BPE\",\"vocab\":{");
    int id = 0;
    for (int b = 0; b < 256; b++) {
        /* GPT-2's byte-to-unicode: printable Latin-1 as itself, the rest from U+0100 on */
        int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        static int extra = 0;
        int cp = printable ? b : 256 + extra++;
        char u[8];
        int ul = cp < 0x80 ? (u[0] = (char)cp, 1) : (u[0] = (char)(0xC0 | (cp >> 6)), u[1] = (char)(0x80 | (cp & 63)), 2);
        if (cp == '"' || cp == '\\') k += (size_t)snprintf(json + k, (1 << 16) - k, "\"\\%c\":%d,", cp, id++);
        else k += (size_t)snprintf(json + k, (1 << 16) - k, "\"%.*s\":%d,", ul, u, id++);
    }
    k += (size_t)snprintf(json + k, (1 << 16) - k, "\"he\":256,\"ll\":257,\"hell\":258,\"Ġt\":259},"
                                                   "\"merges\":[\"h e\",\"l l\",\"he ll\",\"Ġ t\"]}}");
    put("tokenizer.json", (const uint8_t *)json, k);
    free(json);
    if (wgt_tokenizer_open(path("tokenizer.json"), &bpe)) {
        fprintf(stderr, "fuzz_tokenizer_runtime: the built-in tokenizer.json does not open: %s\n", wgt_errmsg());
        abort();
    }
    /* SentencePiece style: <unk> <s> </s>, byte tokens <0x00>..<0xFF>, a few pieces */
    static const char *pieces[] = {"\xe2\x96\x81", "\xe2\x96\x81the", "a", "b", "ab", ("\xe2\x96\x81" "a")};
    const size_t n_pieces = sizeof pieces / sizeof pieces[0], n = 3 + 256 + n_pieces;
    const char **tokens = calloc(n, sizeof *tokens);
    char(*bytes)[8] = calloc(256, 8);
    float *scores = calloc(n, sizeof *scores);
    int32_t *types = calloc(n, sizeof *types);
    tokens[0] = "<unk>", tokens[1] = "<s>", tokens[2] = "</s>";
    types[0] = 2, types[1] = types[2] = 3;
    for (int b = 0; b < 256; b++) {
        snprintf(bytes[b], 8, "<0x%02X>", b);
        tokens[3 + b] = bytes[b];
        types[3 + b] = 6;
    }
    for (size_t i = 0; i < n_pieces; i++) {
        tokens[259 + i] = pieces[i];
        types[259 + i] = 1;
        scores[259 + i] = -(float)i;
    }
    wgt_tokenizer_arrays a = {.model = "llama", .n_tokens = n, .tokens = tokens, .scores = scores, .token_types = types,
                              .bos_id = 1, .eos_id = 2, .unk_id = 0, .pad_id = -1, .add_bos = -1, .add_eos = -1,
                              .add_space_prefix = -1};
    if (wgt_tokenizer_create(&a, &spm)) {
        fprintf(stderr, "fuzz_tokenizer_runtime: the built-in SentencePiece vocabulary is refused: %s\n", wgt_errmsg());
        abort();
    }
    free(tokens), free(bytes), free(scores), free(types);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) init();
    if (size < 1) return 0;
    int mode = data[0] % 4;
    data++, size--;
    static const char text[] = "Hello world, the <|im_start|>user\n caf\xc3\xa9 \xf0\x9f\x98\x80 12345 ab";
    if (mode <= 1) {
        const char *name = mode == 0 ? "fuzz.json" : "fuzz.model";
        put(name, data, size);
        wgt_tokenizer *t;
        if (wgt_tokenizer_open(path(name), &t) == WGT_OK) {
            round_trip(t, text, sizeof text - 1);
            round_trip(t, (const char *)data, size < 256 ? size : 256);
            wgt_tokenizer_free(t);
        }
        unlink(path(name));
    } else {
        round_trip(mode == 2 ? bpe : spm, (const char *)data, size);
    }
    return 0;
}
