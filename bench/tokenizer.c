/* Tokenizer encoding throughput: bench_tokenizer TOKENIZER TEXT_FILE [REPEATS]
 * Prints load time, tokens, and MB/s of encoding the file line by line (one encode call per
 * line, newline included, as tests/tokenizer/bench.mjs does for the node references) and as one
 * call for the whole file. Best of REPEATS; the first run fills the word cache, the best shows
 * the warm figure. No special tokens are added or matched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wgt.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s TOKENIZER TEXT_FILE [REPEATS]\n", argv[0]);
        return 2;
    }
    int repeats = argc > 3 ? atoi(argv[3]) : 3;
    FILE *f = fopen(argv[2], "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", argv[2]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    if (!text || fread(text, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "cannot read %s\n", argv[2]);
        return 1;
    }
    fclose(f);
    double t0 = now();
    wgt_tokenizer *tok;
    if (wgt_tokenizer_open(argv[1], &tok)) {
        fprintf(stderr, "%s\n", wgt_errmsg());
        return 1;
    }
    double load = now() - t0;
    for (int whole = 0; whole < 2; whole++) {
        double first = 0, best = 1e30;
        size_t total = 0;
        for (int r = 0; r < repeats; r++) {
            t0 = now();
            total = 0;
            for (char *p = text, *end = text + size; p < end;) {
                char *nl = whole ? NULL : memchr(p, '\n', (size_t)(end - p));
                char *e = nl ? nl + 1 : end;
                int32_t *ids;
                size_t n;
                if (wgt_tokenizer_encode(tok, p, (size_t)(e - p), 0, &ids, &n)) {
                    fprintf(stderr, "%s\n", wgt_errmsg());
                    return 1;
                }
                total += n;
                free(ids);
                p = e;
            }
            double dt = now() - t0;
            if (r == 0) first = dt;
            if (dt < best) best = dt;
        }
        printf("wgt   load %.2f s  %zu tokens  first %.1f MB/s  best %.1f MB/s  (%s)\n", load, total, size / first / 1e6,
               size / best / 1e6, whole ? "whole file in one call" : "line by line");
    }
    wgt_tokenizer_free(tok);
    free(text);
    return 0;
}
