/* The JSON constraint's cost a step: bench_json_mask TOKENIZER [--steps N]
 * A walk of N steps (default 400) through one JSON object over TOKENIZER's vocabulary (any file
 * wgt_tokenizer_open reads: tokenizer.json, a GGUF, a SentencePiece .model): each step masks the
 * logits over the whole vocabulary (wgt_json_state_mask, the host work JSON mode adds to a decode
 * step), then draws an allowed id, uniformly for the first half, then closing what is open. Prints
 * the microseconds a mask took, by where the text was (inside a string or between values), and
 * the allowed ids a step. Runs on the host: no device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wgt.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_json_mask TOKENIZER [--steps N]\n");
        return 2;
    }
    int steps = argc > 3 && !strcmp(argv[2], "--steps") ? atoi(argv[3]) : 400;
    wgt_tokenizer *tok;
    wgt_json_state *js;
    if (wgt_tokenizer_open(argv[1], &tok) || wgt_json_state_create(tok, &js)) {
        fprintf(stderr, "bench_json_mask: %s\n", wgt_errmsg());
        return 1;
    }
    int32_t V = wgt_tokenizer_vocab_size(tok);
    float *lg = malloc((size_t)V * sizeof *lg);
    double t_str = 0, t_other = 0;
    long n_str = 0, n_other = 0, allowed = 0;
    int in_string = 0, done = 0;
    uint64_t r = 99;
    for (int s = 0; s < steps && !done; s++) {
        for (int32_t i = 0; i < V; i++) lg[i] = 0;
        double t0 = now();
        int64_t a = wgt_json_state_mask(js, lg, V);
        double dt = now() - t0;
        if (in_string) t_str += dt, n_str++;
        else t_other += dt, n_other++;
        allowed += a;
        int32_t pick = -1, closer = -1, quote = -1, cnt = 0;
        for (int32_t i = 0; i < V; i++) {
            if (lg[i] != 0) continue;
            const char *pc;
            size_t n;
            wgt_tokenizer_token_to_piece(tok, i, &pc, &n);
            if (n == 1 && pc[0] == '"') quote = i;
            if (n == 1 && (pc[0] == '}' || pc[0] == ']')) closer = i;
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            if ((r >> 33) % (uint64_t)++cnt == 0) pick = i;
        }
        if (s > steps / 2) pick = in_string && quote >= 0 ? quote : !in_string && closer >= 0 ? closer : pick;
        if (pick < 0 || wgt_json_state_accept(js, pick)) break;
        const char *pc;
        size_t n;
        wgt_tokenizer_token_to_piece(tok, pick, &pc, &n);
        for (size_t k = 0; k < n; k++) /* a string's quotes (escapes skipped) */
            if (in_string && pc[k] == '\\') k++;
            else if (pc[k] == '"') in_string = !in_string;
        done = wgt_json_state_complete(js);
    }
    printf("vocabulary %d: %ld masks inside strings %.1f us each, %ld elsewhere %.1f us each; %.0f ids allowed a step\n",
           V, n_str, n_str ? 1e6 * t_str / n_str : 0.0, n_other, n_other ? 1e6 * t_other / n_other : 0.0,
           (double)allowed / (double)(n_str + n_other));
    free(lg);
    wgt_json_state_free(js);
    wgt_tokenizer_free(tok);
    return 0;
}
