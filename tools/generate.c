/* wgt generate: text (or ids) from a model, streamed, with prefill and decode speeds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "commands.h"
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

/* "1,2,3" (a comma between ids, spaces around them allowed, or spaces alone) into ids, each a
 * whole number in [0, INT32_MAX]: 0 and a message naming the bad element otherwise (no wrap-around
 * of 4294967297 to 1; no empty element as in "1,,2" or "1,2,"). */
static int parse_ids(const char *s, int32_t **ids, int64_t *n)
{
    int64_t cap = 16, k = 0;
    int32_t *v = malloc(cap * sizeof *v);
    char item[32];
    const char *p = s;
    while (v) {
        while (*p == ' ') p++;
        size_t len = strcspn(p, ", ");
        if (len == 0) {
            fprintf(stderr, "wgt generate: --prompt-ids wants comma-separated ids, e.g. 1,2,3: '%s' has an empty id\n", s);
            free(v);
            return 0;
        }
        snprintf(item, sizeof item, "%.*s", (int)(len < sizeof item - 1 ? len : sizeof item - 1), p);
        int64_t x;
        if (len >= sizeof item - 1 || args_parse_int("generate", "--prompt-ids: id", item, 0, INT32_MAX, &x)) {
            if (len >= sizeof item - 1) fprintf(stderr, "wgt generate: --prompt-ids: '%s...' is not a token id\n", item);
            free(v);
            return 0;
        }
        if (k == cap) {
            int32_t *w = realloc(v, (size_t)(cap *= 2) * sizeof *v);
            if (!w) free(v);
            v = w;
            if (!v) break;
        }
        v[k++] = (int32_t)x;
        p += len;
        while (*p == ' ') p++;
        if (!*p) break;
        if (*p == ',') p++; /* else the next id follows after spaces */
    }
    if (!v) {
        fprintf(stderr, "wgt generate: out of host memory reading --prompt-ids\n");
        return 0;
    }
    *ids = v;
    *n = k;
    return 1;
}

/* A prompt file's text (-f/--file): NULL, with the reason printed, for a folder or unreadable file. */
static char *read_prompt_file(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fprintf(stderr, "wgt generate: -f %s: %s\n", path,
                stat(path, &sb) != 0 ? "no such file" : "not a regular file (give a text file of the prompt)");
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    size_t len = 0;
    if (!f || tool_read_all(f, &text, &len)) {
        fprintf(stderr, "wgt generate: -f %s: cannot read the file\n", path);
        if (f) fclose(f);
        return NULL;
    }
    fclose(f);
    text[len] = 0;
    if (strlen(text) != len) {
        fprintf(stderr, "wgt generate: -f %s: the file holds NUL bytes: not a text prompt\n", path);
        free(text);
        return NULL;
    }
    return text;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: wgt generate -m MODEL (-p PROMPT | -f FILE | --prompt-ids 1,2,3) [-n N] [options]\n\n"
               "MODEL is a Hugging Face directory (config.json + safetensors) or a GGUF file; a config.json\n"
               "alone runs random weights of its shape (a warning says so: the text is noise).\n"
               "  -m, --model MODEL\n"
               "  -p, --prompt TEXT    the prompt\n"
               "  -f, --file FILE      the prompt, from a text file\n"
               "  --prompt-ids IDS     the prompt as token ids, 0 to 2147483647, e.g. 1,2,3\n"
               "  -n, --n-predict N    new tokens, 0 to 2147483647 (default 64); a full context ends\n"
               "                       generation early (a note says so; exit 0)\n"
               "  --temp T             temperature, 0 to 100; 0 is greedy (default 0)\n"
               "  --top-k K            keep the K most likely tokens, 0 (off) to 2147483647\n"
               "  --top-p P            nucleus sampling, 0 to 1 (0 or 1: off)\n"
               "  --min-p M            drop tokens below M x the most likely's probability, 0 to 1\n"
               "  --repeat-penalty R   above 0, at most 100 (1: off; default 1)\n"
               "  --frequency-penalty F  -2 to 2: a logit less F per time its token was generated (0: off)\n"
               "  --presence-penalty P   -2 to 2: a logit less P once its token was generated (0: off)\n"
               "  -s, --seed S         sampling seed, 0 to 18446744073709551615 (default 1234)\n"
               "  --ignore-eos         keep going past end-of-sequence tokens\n"
               "  --json               write one JSON object: only tokens that continue one are drawn, and\n"
               "                       generation ends when it closes (OpenAI's json_object; sampled on the host)\n"
               "  --graph              capture a decode step and replay it for every later token (a capture\n"
               "                       up to 256 keys and one past them; greedy or sampled; graph capture\n"
               "                       in README): one submit, no recording per token\n"
               "  --print-ids          print only the generated ids, space-separated, on one line\n"
               "  -c, --ctx-size N     KV cache length, 0 (the model's, at most 4096) to 1048576 (--ctx too)\n"
               "Streams the text, then prints prefill and decode speeds on stderr. Flags follow llama.cpp's\n"
               "names where the meaning is the same.\n");
}

/* "12.3 tok/s", or "-" when nothing was timed (no "inf tok/s" for -n 0). */
static const char *rate(char *buf, size_t cap, double n, double seconds)
{
    if (n <= 0 || !(seconds > 0)) snprintf(buf, cap, "- tok/s");
    else snprintf(buf, cap, "%.1f tok/s", n / seconds);
    return buf;
}

int cmd_generate(int argc, char **argv)
{
    const char *model = NULL, *prompt = NULL, *prompt_ids = NULL, *prompt_file = NULL;
    int64_t n_new = 64, ctx_len = 0;
    wgt_sampling sp = {0};
    sp.repeat_penalty = 1.0f;
    sp.seed = 1234;
    int print_ids = 0, json = 0;
    args a = args_begin("generate", argc, argv);
    while (args_next(&a)) {
        if (args_flag(&a, "-h|--help")) {
            usage(stdout);
            return 0;
        } else if (args_str(&a, "-m|--model", &model)) ;
        else if (args_str(&a, "-p|--prompt", &prompt)) ;
        else if (args_str(&a, "-f|--file", &prompt_file)) ;
        else if (args_str(&a, "--prompt-ids", &prompt_ids)) ;
        else if (args_int(&a, "-n|--n-predict", 0, INT32_MAX, &n_new)) ;
        else if (args_float(&a, "--temp", 0, 0, 100, &sp.temperature)) ;
        else if (args_int32(&a, "--top-k", 0, INT32_MAX, &sp.top_k)) ;
        else if (args_float(&a, "--top-p", 0, 0, 1, &sp.top_p)) ;
        else if (args_float(&a, "--min-p", 0, 0, 1, &sp.min_p)) ;
        else if (args_float(&a, "--repeat-penalty", 0, 1, 100, &sp.repeat_penalty)) ;
        else if (args_float(&a, "--frequency-penalty", -2, 0, 2, &sp.frequency_penalty)) ;
        else if (args_float(&a, "--presence-penalty", -2, 0, 2, &sp.presence_penalty)) ;
        else if (args_u64(&a, "-s|--seed", UINT64_MAX, &sp.seed)) ;
        else if (args_int(&a, "-c|--ctx-size|--ctx", 0, 1 << 20, &ctx_len)) ;
        else if (args_flag(&a, "--ignore-eos")) sp.ignore_eos = 1;
        else if (args_flag(&a, "--graph")) sp.graph = 1;
        else if (args_flag(&a, "--json")) json = 1;
        else if (args_flag(&a, "--print-ids")) print_ids = 1;
        else return args_unknown(&a);
    }
    if (a.bad) return 2;
    if (!model || !!prompt + !!prompt_ids + !!prompt_file != 1) {
        fprintf(stderr, "wgt generate: give -m MODEL and one of -p PROMPT, -f FILE, --prompt-ids IDS\n\n");
        usage(stderr);
        return 2;
    }
    int32_t *ids = NULL;
    int64_t n_ids = 0;
    char *file_text = NULL;
    /* both checked before the model loads, so a bad prompt costs no load */
    if (prompt_ids && !parse_ids(prompt_ids, &ids, &n_ids)) return 2;
    if (prompt_file && !(prompt = file_text = read_prompt_file(prompt_file))) return 2;
    wgt_context *ctx;
    if (wgt_context_create(NULL, &ctx)) {
        fprintf(stderr, "wgt generate: %s\n", wgt_errmsg());
        return 1;
    }
    wgt_model *m = NULL;
    int rc = 1;
    if (wgt_model_open(ctx, model, ctx_len, &m)) {
        fprintf(stderr, "wgt generate: %s\n", wgt_errmsg());
        goto out;
    }
    /* random weights run (benchmarks want them), but text from them is noise: say so */
    if (wgt_model_is_random(m))
        fprintf(stderr, "wgt generate: warning: %s is a configuration alone: the weights are random, the output "
                        "is noise (give the model's directory or a GGUF file for real text)\n", model);
    if (json) {
        if (!wgt_model_tokenizer(m)) {
            fprintf(stderr, "wgt generate: --json needs the model's tokenizer (the bytes of each token): %s\n",
                    wgt_model_tokenizer_error(m) ? wgt_model_tokenizer_error(m) : "the model has none");
            goto out;
        }
        if (wgt_json_state_create(wgt_model_tokenizer(m), &sp.json)) {
            fprintf(stderr, "wgt generate: %s\n", wgt_errmsg());
            goto out;
        }
    }
    if (!prompt_ids) {
        wgt_tokenizer *tok = wgt_model_tokenizer(m);
        size_t n = 0;
        if (!tok) {
            if (wgt_model_tokenizer_error(m))
                fprintf(stderr, "wgt generate: the model's tokenizer could not be read: %s\n(fix or remove the "
                                "file, or give the prompt with --prompt-ids)\n", wgt_model_tokenizer_error(m));
            else
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
    if (gs.context_full)
        fprintf(stderr, "wgt generate: stopped at the end of the context (%lld tokens): %lld prompt + %lld generated "
                        "(the last one is not fed back); -c/--ctx-size sets it, up to the model's positions\n",
                (long long)wgt_model_context(m), (long long)gs.n_prompt, (long long)gs.n_generated);
    if (sp.json && !wgt_json_state_complete(sp.json))
        fprintf(stderr, "wgt generate: --json: the object is not closed after %lld tokens (-n sets how many)\n",
                (long long)gs.n_generated);
    char r1[32], r2[32];
    /* the first token's time is the prefill's: decode speed counts the tokens after it */
    fprintf(stderr, "prefill: %lld tokens, %s | decode: %lld tokens, %s | %.1f submits/token, %.1f dispatches/token\n",
            (long long)gs.n_prompt, rate(r1, sizeof r1, (double)gs.n_prompt, gs.prefill_seconds),
            (long long)gs.n_generated, rate(r2, sizeof r2, (double)gs.n_generated - 1, gs.decode_seconds),
            gs.n_generated ? (double)gs.submits / gs.n_generated : 0.0,
            gs.n_generated ? (double)gs.dispatches / gs.n_generated : 0.0);
    if (sp.graph)
        fprintf(stderr, "graph: %lld of %lld decode steps replayed, %lld captured, %.1f record ms/token\n",
                (long long)gs.graph_steps, (long long)(gs.n_generated > 0 ? gs.n_generated - 1 : 0),
                (long long)gs.graph_captures,
                gs.n_generated > 1 ? 1e3 * gs.record_seconds / (double)(gs.n_generated - 1) : 0.0);
    rc = 0;
out:
    free(ids);
    free(file_text);
    wgt_json_state_free(sp.json);
    wgt_model_free(m);
    wgt_context_free(ctx);
    return rc;
}
