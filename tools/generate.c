/* wgt generate: text (or ids) from a model, streamed, with prefill and decode speeds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wgt.h"

typedef struct stream {
    wgt_detokenizer *detok;
    int print_ids;
    int first;
} stream;

static int on_token(int32_t id, void *user)
{
    stream *s = user;
    if (s->print_ids) {
        printf(s->first ? "%d" : " %d", id);
        s->first = 0;
        fflush(stdout);
        return 0;
    }
    const char *text;
    size_t len;
    if (s->detok && !wgt_detokenizer_push(s->detok, id, &text, &len) && len) {
        fwrite(text, 1, len, stdout);
        fflush(stdout);
    }
    return 0;
}

static int parse_ids(const char *s, int32_t **ids, int64_t *n)
{
    int64_t cap = 16, k = 0;
    int32_t *v = malloc(cap * sizeof *v);
    const char *p = s;
    while (v && *p) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p) break;
        if (k == cap) v = realloc(v, (cap *= 2) * sizeof *v);
        if (!v) break;
        v[k++] = (int32_t)x;
        p = end;
        while (*p == ',' || *p == ' ') p++;
    }
    if (!v || *p || k == 0) {
        free(v);
        return 0;
    }
    *ids = v;
    *n = k;
    return 1;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: wgt generate -m MODEL (-p PROMPT | --prompt-ids 1,2,3) [-n N] [options]\n\n"
               "MODEL is a Hugging Face directory (config.json + safetensors) or a GGUF file.\n"
               "  -n N                new tokens (default 64)\n"
               "  --temp T            temperature; 0 is greedy (default 0)\n"
               "  --top-k K --top-p P --min-p M --repeat-penalty R --seed S\n"
               "  --ignore-eos        keep going past end-of-sequence tokens\n"
               "  --print-ids         print only the generated ids, space-separated, on one line\n"
               "  --ctx N             KV cache length (default: the model's, at most 4096)\n"
               "Streams the text, then prints prefill and decode speeds on stderr.\n");
}

int cmd_generate(int argc, char **argv)
{
    const char *model = NULL, *prompt = NULL, *prompt_ids = NULL;
    int64_t n_new = 64, ctx_len = 0;
    wgt_sampling sp = {0};
    sp.repeat_penalty = 1.0f;
    sp.seed = 1234;
    int print_ids = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-m") && more) model = argv[++i];
        else if (!strcmp(a, "-p") && more) prompt = argv[++i];
        else if (!strcmp(a, "--prompt-ids") && more) prompt_ids = argv[++i];
        else if (!strcmp(a, "-n") && more) n_new = atoll(argv[++i]);
        else if (!strcmp(a, "--temp") && more) sp.temperature = (float)atof(argv[++i]);
        else if (!strcmp(a, "--top-k") && more) sp.top_k = atoi(argv[++i]);
        else if (!strcmp(a, "--top-p") && more) sp.top_p = (float)atof(argv[++i]);
        else if (!strcmp(a, "--min-p") && more) sp.min_p = (float)atof(argv[++i]);
        else if (!strcmp(a, "--repeat-penalty") && more) sp.repeat_penalty = (float)atof(argv[++i]);
        else if (!strcmp(a, "--seed") && more) sp.seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(a, "--ctx") && more) ctx_len = atoll(argv[++i]);
        else if (!strcmp(a, "--ignore-eos")) sp.ignore_eos = 1;
        else if (!strcmp(a, "--print-ids")) print_ids = 1;
        else {
            fprintf(stderr, "wgt generate: unknown or incomplete option '%s'\n\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!model || (!prompt && !prompt_ids) || n_new < 0) {
        usage(stderr);
        return 2;
    }
    wgt_context *ctx;
    if (wgt_context_create(NULL, &ctx)) {
        fprintf(stderr, "wgt generate: %s\n", wgt_errmsg());
        return 1;
    }
    wgt_model *m = NULL;
    int rc = 1;
    int32_t *ids = NULL;
    int64_t n_ids = 0;
    if (wgt_model_load(ctx, model, ctx_len, &m)) {
        fprintf(stderr, "wgt generate: %s\n", wgt_errmsg());
        goto out;
    }
    if (prompt_ids) {
        if (!parse_ids(prompt_ids, &ids, &n_ids)) {
            fprintf(stderr, "wgt generate: --prompt-ids wants comma-separated ids, e.g. 1,2,3\n");
            rc = 2;
            goto out;
        }
    } else {
        wgt_tokenizer *tok = wgt_model_tokenizer(m);
        size_t n = 0;
        if (!tok) {
            fprintf(stderr, "wgt generate: the model has no tokenizer: give the prompt with --prompt-ids\n");
            goto out;
        }
        if (wgt_tokenizer_encode(tok, prompt, (size_t)-1, WGT_TOKENIZE_ADD_SPECIAL | WGT_TOKENIZE_PARSE_SPECIAL, &ids,
                                 &n)) {
            fprintf(stderr, "wgt generate: %s\n", wgt_errmsg());
            goto out;
        }
        n_ids = (int64_t)n;
        if (!print_ids) printf("%s", prompt);
    }
    stream s = {NULL, print_ids, 1};
    if (!print_ids && wgt_model_tokenizer(m) && !wgt_detokenizer_create(wgt_model_tokenizer(m), 1, &s.detok) && prompt)
        for (int64_t i = 0; i < n_ids; i++) { /* the prompt sets the context (spaces at word starts) */
            const char *t;
            size_t l;
            wgt_detokenizer_push(s.detok, ids[i], &t, &l);
        }
    wgt_generate_stats gs;
    if (wgt_model_generate(m, ids, n_ids, n_new, &sp, on_token, &s, &gs)) {
        fprintf(stderr, "\nwgt generate: %s\n", wgt_errmsg());
        wgt_detokenizer_free(s.detok);
        goto out;
    }
    if (s.detok) {
        const char *text;
        size_t len;
        if (!wgt_detokenizer_flush(s.detok, &text, &len) && len) fwrite(text, 1, len, stdout);
        wgt_detokenizer_free(s.detok);
    }
    printf("\n");
    fflush(stdout);
    double dec = gs.n_generated > 1 ? (gs.n_generated - 1) / gs.decode_seconds : 0;
    fprintf(stderr, "prefill: %lld tokens, %.1f tok/s | decode: %lld tokens, %.1f tok/s | %.1f submits/token\n",
            (long long)gs.n_prompt, gs.n_prompt / gs.prefill_seconds, (long long)gs.n_generated, dec,
            gs.n_generated ? (double)gs.submits / gs.n_generated : 0.0);
    rc = 0;
out:
    free(ids);
    wgt_model_free(m);
    wgt_context_free(ctx);
    return rc;
}
