/* Training datasets (src/models/data.c), no device needed: JSON lines read exactly, refused with
 * the line named (length, vocabulary, syntax); batches in file order without shuffling; shuffled
 * batches are a permutation per epoch (every sequence once), the same for the same seed and step
 * (what resume relies on), another order for another seed; text cut into windows of L+1 tokens
 * that overlap by one, with the held-out tail. The expectations are written out here by hand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/check.h"

static const char *write_tmp(const char *name, const char *text)
{
    static char path[4][256];
    static int k;
    char *p = path[k++ % 4];
    snprintf(p, 256, "/tmp/wgt_train_data_%d_%s", (int)getpid(), name);
    FILE *f = fopen(p, "wb");
    fputs(text, f);
    fclose(f);
    return p;
}

int main(void)
{
    /* 5 sequences of L + 1 = 4 ids: sequence i is (10i, 10i+1, 10i+2, 10i+3); a blank line between */
    const char *ids = write_tmp("ids.jsonl", "[0, 1, 2, 3]\n[10,11,12,13]\n\n  [20, 21, 22, 23]  \n[30,31,32,33]\n[40,41,42,43]\n");
    wgt_dataset *d;
    MUST(wgt_dataset_open_ids(ids, 100, 3, &d));
    CHECK(wgt_dataset_train_count(d) == 5 && wgt_dataset_eval_count(d) == 0, "counts %lld/%lld",
          (long long)wgt_dataset_train_count(d), (long long)wgt_dataset_eval_count(d));
    int32_t b[3 * 4];
    /* padded (held-out) lines: 2 to L + 1 ids, the rest -1; 1 id or L + 2 refused; the exact reader
     * still refuses short lines */
    {
        wgt_dataset *pd, *e;
        MUST(wgt_dataset_open_ids_padded(write_tmp("pad.jsonl", "[1, 2]\n[3, 4, 5, 6]\n[7,8,9]\n"), 100, 3, &pd));
        const int32_t *r0 = wgt_dataset_sequence(pd, 0), *r1 = wgt_dataset_sequence(pd, 1), *r2 = wgt_dataset_sequence(pd, 2);
        CHECK(wgt_dataset_train_count(pd) == 3 && r0[0] == 1 && r0[1] == 2 && r0[2] == -1 && r0[3] == -1 && r1[3] == 6 &&
                  r2[2] == 9 && r2[3] == -1,
              "padded rows %d %d %d %d / %d / %d %d", r0[0], r0[1], r0[2], r0[3], r1[3], r2[2], r2[3]);
        wgt_dataset_free(pd);
        CHECK(wgt_dataset_open_ids_padded(write_tmp("pad1.jsonl", "[1]\n"), 100, 3, &e) == WGT_ERR_INVALID_ARGUMENT,
              "one id accepted as a padded line");
        CHECK(wgt_dataset_open_ids_padded(write_tmp("pad5.jsonl", "[1,2,3,4,5]\n"), 100, 3, &e) == WGT_ERR_INVALID_ARGUMENT,
              "L + 2 ids accepted as a padded line");
        CHECK(wgt_dataset_open_ids(write_tmp("pad2.jsonl", "[1, 2]\n"), 100, 3, &e) == WGT_ERR_INVALID_ARGUMENT,
              "a short line accepted by the exact reader");
    }
    /* file order: step 1 of batch 3 is sequences 3, 4, then 0 (the next epoch) */
    MUST(wgt_dataset_batch(d, 1, 3, 0, 0, b));
    CHECK(b[0] == 30 && b[4] == 40 && b[8] == 0 && b[11] == 3, "file-order batch %d %d %d %d", b[0], b[4], b[8], b[11]);
    /* shuffled: epochs 0..3 (20 draws of batch 1) each hold every sequence once */
    for (int e = 0; e < 4; e++) {
        int seen[5] = {0}, first[5];
        for (int s = 0; s < 5; s++) {
            MUST(wgt_dataset_batch(d, e * 5 + s, 1, 1, 42, b));
            CHECK(b[0] % 10 == 0 && b[0] / 10 < 5 && b[3] == b[0] + 3, "shuffled row %d..%d", b[0], b[3]);
            seen[b[0] / 10]++;
            first[s] = b[0];
        }
        for (int i = 0; i < 5; i++) CHECK(seen[i] == 1, "epoch %d: sequence %d drawn %d times", e, i, seen[i]);
        (void)first;
    }
    /* the same (seed, step) gives the same batch, asked in any order; another seed differs somewhere */
    int32_t x[3 * 4], y[3 * 4];
    MUST(wgt_dataset_batch(d, 7, 3, 1, 42, x));
    MUST(wgt_dataset_batch(d, 0, 3, 1, 42, y));
    MUST(wgt_dataset_batch(d, 7, 3, 1, 42, y));
    CHECK(!memcmp(x, y, sizeof x), "batch 7 changed when asked again");
    int differ = 0;
    for (int s = 0; s < 10 && !differ; s++) {
        MUST(wgt_dataset_batch(d, s, 3, 1, 42, x));
        MUST(wgt_dataset_batch(d, s, 3, 1, 43, y));
        differ = memcmp(x, y, sizeof x) != 0;
    }
    CHECK(differ, "seeds 42 and 43 give the same order for 10 batches");
    wgt_dataset_free(d);

    /* refusals name the line */
    struct {
        const char *text, *want;
    } bad[] = {
        {"[1, 2, 3, 4]\n[1, 2, 3]\n", ":2: a sequence of 3 ids; --seq 3 needs 4"},
        {"[1, 2, 3, 100]\n", ":1: id 100 (position 3) is outside the model's vocabulary of 100"},
        {"[1, 2, -1, 4]\n", "id -1"},
        {"[1, 2, 3, 4\n", ":1: expected ',' or ']'"},
        {"1, 2, 3, 4\n", "expected '['"},
        {"[1, 2, 3, 4] x\n", "text after the closing"},
        {"\n\n", "no sequences"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        wgt_dataset *e = NULL;
        wgt_status st = wgt_dataset_open_ids(write_tmp("bad.jsonl", bad[i].text), 100, 3, &e);
        CHECK(st != WGT_OK && strstr(wgt_errmsg(), bad[i].want), "case %zu: status %d, message '%s', want '%s'", i,
              (int)st, wgt_errmsg(), bad[i].want);
        wgt_dataset_free(e);
    }

    /* text: a GPT-2-style byte-level tokenizer is not at hand without files, so the SentencePiece
     * model of the default model is used; windows are checked against the whole text's encoding */
    const char *root = getenv("WGT_ROOT") ? getenv("WGT_ROOT") : ".";
    char tpath[1024];
    snprintf(tpath, sizeof tpath, "%s/models/bible-llama/tokenizer.model", root);
    wgt_tokenizer *tok;
    MUST(wgt_tokenizer_open(tpath, &tok));
    const char *text = "In the beginning God created the heavens and the earth. The earth was formless and empty. "
                       "Darkness was on the surface of the deep and God's Spirit was hovering over the waters.";
    int32_t *all;
    size_t n;
    MUST(wgt_tokenizer_encode(tok, text, (size_t)-1, 0, &all, &n));
    int64_t L = 5, n_seq = ((int64_t)n - 1) / L;
    MUST(wgt_dataset_open_text(write_tmp("text.txt", text), tok, L, 0.25, &d));
    int64_t n_eval = n_seq / 4 ? n_seq / 4 : 1;
    CHECK(wgt_dataset_train_count(d) == n_seq - n_eval && wgt_dataset_eval_count(d) == n_eval,
          "%zu tokens: %lld train / %lld eval, want %lld / %lld", n, (long long)wgt_dataset_train_count(d),
          (long long)wgt_dataset_eval_count(d), (long long)(n_seq - n_eval), (long long)n_eval);
    for (int64_t i = 0; i < n_seq; i++) {
        const int32_t *s = wgt_dataset_sequence(d, i);
        CHECK(s && !memcmp(s, all + i * L, (size_t)(L + 1) * sizeof *s), "window %lld is not tokens %lld..%lld",
              (long long)i, (long long)(i * L), (long long)(i * L + L));
    }
    CHECK(wgt_dataset_sequence(d, n_seq) == NULL, "a sequence past the end");
    wgt_dataset_free(d);
    wgt_status st = wgt_dataset_open_text(write_tmp("short.txt", "In the"), tok, 64, 0.05, &d);
    CHECK(st != WGT_OK && strstr(wgt_errmsg(), "fewer than one sequence"), "short text: %s", wgt_errmsg());
    free(all);
    wgt_tokenizer_free(tok);
    return test_finish("test_train_data");
}
