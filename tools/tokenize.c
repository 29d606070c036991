/* wgt tokenize / wgt detokenize: text to ids and back, with any tokenizer wgt can open. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "wgt.h"

static void tokenize_usage(FILE *f)
{
    fprintf(f, "usage: wgt tokenize -t TOKENIZER [--no-special] [--no-bos] [--file F | TEXT...]\n"
               "  prints the ids, space-separated, on one line.\n"
               "  TOKENIZER: a tokenizer.json, a SentencePiece .model, a GGUF file, a directory with\n"
               "  encoder.json + vocab.bpe, or a Hugging Face model directory.\n"
               "  --no-special  special tokens written in the text are encoded as plain text\n"
               "  --no-bos      do not add BOS/EOS (added as the model's configuration says)\n"
               "  --file F      read the text from F ('-' for stdin); TEXT words are joined with spaces\n"
               "usage: wgt detokenize -t TOKENIZER [--skip-special] ID...\n");
}

static int read_all(FILE *f, char **out, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf) return -1;
    size_t r;
    while ((r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            char *b = realloc(buf, cap *= 2);
            if (!b) {
                free(buf);
                return -1;
            }
            buf = b;
        }
    }
    *out = buf;
    *len = n;
    return 0;
}

static int common_args(int argc, char **argv, int i, const char **tok_path)
{
    if ((!strcmp(argv[i], "-t") || !strcmp(argv[i], "--tokenizer")) && i + 1 < argc) {
        *tok_path = argv[i + 1];
        return 2;
    }
    return 0;
}

int cmd_tokenize(int argc, char **argv)
{
    const char *tok_path = NULL, *file = NULL;
    unsigned flags = WGT_TOKENIZE_ADD_SPECIAL | WGT_TOKENIZE_PARSE_SPECIAL;
    int first_text = 0;
    for (int i = 1; i < argc;) {
        int used = common_args(argc, argv, i, &tok_path);
        if (used) i += used;
        else if (!strcmp(argv[i], "--no-special")) flags &= ~(unsigned)WGT_TOKENIZE_PARSE_SPECIAL, i++;
        else if (!strcmp(argv[i], "--no-bos")) flags &= ~(unsigned)WGT_TOKENIZE_ADD_SPECIAL, i++;
        else if (!strcmp(argv[i], "--file") && i + 1 < argc) file = argv[i + 1], i += 2;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            tokenize_usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--")) {
            first_text = i + 1;
            break;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "wgt tokenize: unknown option '%s'\n", argv[i]);
            tokenize_usage(stderr);
            return 2;
        } else {
            first_text = i;
            break;
        }
    }
    if (!tok_path || (!file && !first_text) || (file && first_text)) {
        tokenize_usage(stderr);
        return 2;
    }
    char *text = NULL;
    size_t len = 0;
    if (file) {
        FILE *f = strcmp(file, "-") ? fopen(file, "rb") : stdin;
        if (!f || read_all(f, &text, &len)) {
            fprintf(stderr, "wgt tokenize: cannot read %s\n", file);
            return 1;
        }
        if (f != stdin) fclose(f);
    } else {
        for (int i = first_text; i < argc; i++) len += strlen(argv[i]) + 1;
        if (!(text = malloc(len + 1))) return 1;
        len = 0;
        for (int i = first_text; i < argc; i++) {
            if (i > first_text) text[len++] = ' ';
            memcpy(text + len, argv[i], strlen(argv[i]));
            len += strlen(argv[i]);
        }
    }
    wgt_tokenizer *tok;
    wgt_status st = wgt_tokenizer_open(tok_path, &tok);
    if (st) {
        fprintf(stderr, "wgt tokenize: %s\n", wgt_errmsg());
        free(text);
        return 1;
    }
    int32_t *ids;
    size_t n;
    st = wgt_tokenizer_encode(tok, text, len, flags, &ids, &n);
    free(text);
    if (st) {
        fprintf(stderr, "wgt tokenize: %s\n", wgt_errmsg());
        wgt_tokenizer_free(tok);
        return 1;
    }
    for (size_t i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
    printf("\n");
    free(ids);
    wgt_tokenizer_free(tok);
    return 0;
}

int cmd_detokenize(int argc, char **argv)
{
    const char *tok_path = NULL;
    int skip_special = 0, first_id = 0;
    for (int i = 1; i < argc;) {
        int used = common_args(argc, argv, i, &tok_path);
        if (used) i += used;
        else if (!strcmp(argv[i], "--skip-special")) skip_special = 1, i++;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            tokenize_usage(stdout);
            return 0;
        } else {
            first_id = i;
            break;
        }
    }
    if (!tok_path) {
        tokenize_usage(stderr);
        return 2;
    }
    size_t n = first_id ? (size_t)(argc - first_id) : 0;
    int32_t *ids = malloc((n ? n : 1) * sizeof *ids);
    if (!ids) return 1;
    for (size_t i = 0; i < n; i++) {
        char *end;
        long v = strtol(argv[first_id + (int)i], &end, 10);
        if (*end || end == argv[first_id + (int)i] || v < 0 || v > INT32_MAX) {
            fprintf(stderr, "wgt detokenize: '%s' is not a token id\n", argv[first_id + (int)i]);
            free(ids);
            return 2;
        }
        ids[i] = (int32_t)v;
    }
    wgt_tokenizer *tok;
    if (wgt_tokenizer_open(tok_path, &tok)) {
        fprintf(stderr, "wgt detokenize: %s\n", wgt_errmsg());
        free(ids);
        return 1;
    }
    char *text;
    size_t len;
    wgt_status st = wgt_tokenizer_decode(tok, ids, n, skip_special, &text, &len);
    free(ids);
    wgt_tokenizer_free(tok);
    if (st) {
        fprintf(stderr, "wgt detokenize: %s\n", wgt_errmsg());
        return 1;
    }
    fwrite(text, 1, len, stdout);
    free(text);
    return 0;
}
