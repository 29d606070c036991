/* libFuzzer target: the tokenizer files `wgt convert` reads (SentencePiece protobuf, tokenizer.json,
 * vocab.json + merges.txt) turned into GGUF tokenizer metadata. The first byte picks the file;
 * the rest is its content (for GPT-2's pair, split at the first NUL). Files live in a private
 * temporary directory, since the code under test reads a model directory. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wgt.h"

static char dir[64];

static void put(const char *name, const uint8_t *data, size_t n)
{
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f) abort();
    if (n) fwrite(data, 1, n, f);
    fclose(f);
}

static void drop(const char *name)
{
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    unlink(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s", "/tmp/wgt-fuzz-tok-XXXXXX");
        if (!mkdtemp(dir)) abort();
    }
    if (size < 1) return 0;
    int mode = data[0] % 3, pad = data[0] / 3; /* pad: sometimes grows the vocabulary */
    data++, size--;
    drop("tokenizer.model"), drop("tokenizer.json"), drop("vocab.json"), drop("merges.txt");
    if (mode == 0) put("tokenizer.model", data, size);
    else if (mode == 1) put("tokenizer.json", data, size);
    else {
        const uint8_t *nul = memchr(data, 0, size);
        size_t a = nul ? (size_t)(nul - data) : size;
        put("vocab.json", data, a);
        put("merges.txt", nul ? nul + 1 : data, nul ? size - a - 1 : 0);
    }
    char out[128];
    snprintf(out, sizeof out, "%s/out.gguf", dir);
    wgt_gguf_writer *w;
    if (wgt_gguf_writer_open(out, &w)) return 0;
    wgt_hf_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.vocab_size = pad * 7;
    cfg.pad_id = -1;
    wgt_gguf_writer_add_tokenizer(w, dir, mode == 0 ? "llama" : "qwen2", pad % 2 ? &cfg : NULL, NULL);
    wgt_gguf_writer_free(w); /* unfinished: removes out.gguf */
    return 0;
}
