/* wgt chat: an interactive conversation with a model through its chat template. Each line read
 * from stdin is a user message; the reply streams to stdout. The whole conversation is rendered
 * again every turn and the KV cache keeps the part it already holds, so a turn costs only its own
 * new tokens. "/reset" starts over; end of input quits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "wgt.h"

typedef struct reply {
    wgt_detokenizer *detok;
    char *text;
    size_t len, cap;
} reply;

/* Print text and keep it as the reply's; non-zero when out of memory. */
static int emit(reply *r, const char *t, size_t n)
{
    fwrite(t, 1, n, stdout);
    fflush(stdout);
    if (r->len + n + 1 > r->cap) {
        size_t cap = (r->len + n + 1) * 2;
        char *p = realloc(r->text, cap);
        if (!p) return 1;
        r->text = p, r->cap = cap;
    }
    memcpy(r->text + r->len, t, n);
    r->len += n;
    r->text[r->len] = 0;
    return 0;
}

static int on_token(int32_t id, void *user)
{
    reply *r = user;
    const char *t;
    size_t n;
    if (wgt_detokenizer_push(r->detok, id, &t, &n) || !n) return 0;
    return emit(r, t, n);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: wgt chat -m MODEL [options]\n\n"
               "Talk to a model: each line on stdin is a user message; replies stream to stdout.\n"
               "/reset starts a new conversation; end of input (Ctrl-D) quits.\n"
               "  --system S          a system message first\n"
               "  --template T        the chat template: chatml, llama3, llama2, mistral, or @FILE (Jinja)\n"
               "                      (default: the model's own)\n"
               "  --var N=V           a template variable (repeatable), e.g. enable_thinking=false\n"
               "  -n N                at most N tokens per reply (default 512)\n"
               "  --temp T --top-k K --top-p P --min-p M --repeat-penalty R --seed S   sampling\n"
               "                      (default: temperature 0.7, top-p 0.9; --temp 0 is greedy)\n"
               "  --ctx N             KV cache length (default: the model's, at most 4096)\n");
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *s = NULL;
    size_t n;
    if (f && !tool_read_all(f, &s, &n)) s[n] = 0;
    if (f) fclose(f);
    return s;
}

int cmd_chat(int argc, char **argv)
{
    const char *model = NULL, *system = NULL, *tmpl = NULL, *vars[16];
    size_t n_vars = 0;
    int64_t n_new = 512, ctx_len = 0;
    wgt_sampling sp = {0};
    sp.temperature = 0.7f, sp.top_p = 0.9f, sp.repeat_penalty = 1.0f, sp.seed = 1234;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-m") && more) model = argv[++i];
        else if (!strcmp(a, "--system") && more) system = argv[++i];
        else if (!strcmp(a, "--template") && more) tmpl = argv[++i];
        else if (!strcmp(a, "--var") && more && n_vars < 16) vars[n_vars++] = argv[++i];
        else if (!strcmp(a, "-n") && more) n_new = atoll(argv[++i]);
        else if (!strcmp(a, "--temp") && more) sp.temperature = (float)atof(argv[++i]);
        else if (!strcmp(a, "--top-k") && more) sp.top_k = atoi(argv[++i]);
        else if (!strcmp(a, "--top-p") && more) sp.top_p = (float)atof(argv[++i]);
        else if (!strcmp(a, "--min-p") && more) sp.min_p = (float)atof(argv[++i]);
        else if (!strcmp(a, "--repeat-penalty") && more) sp.repeat_penalty = (float)atof(argv[++i]);
        else if (!strcmp(a, "--seed") && more) sp.seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(a, "--ctx") && more) ctx_len = atoll(argv[++i]);
        else {
            fprintf(stderr, "wgt chat: unknown or incomplete option '%s'\n\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!model || n_new <= 0) {
        usage(stderr);
        return 2;
    }
    /* @FILE: a Jinja template file (as wgt tokenize --chat) */
    char *tmpl_text = NULL;
    if (tmpl && tmpl[0] == '@') {
        if (!(tmpl_text = read_file(tmpl + 1))) {
            fprintf(stderr, "wgt chat: cannot read the template file '%s'\n", tmpl + 1);
            return 2;
        }
        tmpl = tmpl_text;
    }
    wgt_context *ctx;
    if (wgt_context_create(NULL, &ctx)) {
        fprintf(stderr, "wgt chat: %s\n", wgt_errmsg());
        free(tmpl_text);
        return 1;
    }
    int rc = 1;
    wgt_model *m = NULL;
    wgt_chat_message *msgs = NULL;
    size_t n_msgs = 0, cap_msgs = 0;
    char *line = NULL;
    size_t line_cap = 0;
    if (wgt_model_load(ctx, model, ctx_len, &m)) {
        fprintf(stderr, "wgt chat: %s\n", wgt_errmsg());
        goto out;
    }
    wgt_tokenizer *tok = wgt_model_tokenizer(m);
    if (!tok) {
        fprintf(stderr, "wgt chat: the model has no tokenizer\n");
        goto out;
    }
    int interactive = isatty(0);
    if (interactive) fprintf(stderr, "wgt chat: %s loaded; /reset starts over, Ctrl-D quits\n", model);
    for (;;) {
        if (interactive) fprintf(stderr, "> ");
        ssize_t got = getline(&line, &line_cap, stdin);
        if (got < 0) break;
        while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = 0;
        if (!got) continue;
        if (!strcmp(line, "/reset")) {
            for (size_t i = 0; i < n_msgs; i++) free((char *)msgs[i].content);
            n_msgs = 0;
            wgt_model_reset(m);
            continue;
        }
        if (n_msgs + 3 > cap_msgs) {
            cap_msgs = (n_msgs + 3) * 2;
            wgt_chat_message *p = realloc(msgs, cap_msgs * sizeof *msgs);
            if (!p) goto out;
            msgs = p;
        }
        if (n_msgs == 0 && system) msgs[n_msgs++] = (wgt_chat_message){"system", strdup(system)};
        msgs[n_msgs++] = (wgt_chat_message){"user", strdup(line)};
        char *text = NULL;
        if (wgt_tokenizer_apply_chat_template_vars(tok, msgs, n_msgs, 1, tmpl, vars, n_vars, &text)) {
            fprintf(stderr, "wgt chat: %s\n", wgt_errmsg());
            goto out;
        }
        int32_t *ids = NULL;
        size_t n_ids = 0;
        /* the rendered template carries its own special tokens (as transformers' apply_chat_template) */
        wgt_status st = wgt_tokenizer_encode(tok, text, (size_t)-1, WGT_TOKENIZE_PARSE_SPECIAL, &ids, &n_ids);
        free(text);
        if (st) {
            fprintf(stderr, "wgt chat: %s\n", wgt_errmsg());
            goto out;
        }
        reply r = {0};
        if (wgt_detokenizer_create(tok, 1, &r.detok)) {
            free(ids);
            fprintf(stderr, "wgt chat: %s\n", wgt_errmsg());
            goto out;
        }
        wgt_generate_stats gs;
        st = wgt_model_generate(m, ids, (int64_t)n_ids, n_new, &sp, on_token, &r, &gs);
        free(ids);
        const char *t;
        size_t n;
        if (!st && !wgt_detokenizer_flush(r.detok, &t, &n) && n) emit(&r, t, n);
        wgt_detokenizer_free(r.detok);
        printf("\n");
        fflush(stdout);
        if (st) {
            free(r.text);
            fprintf(stderr, "wgt chat: %s\n", wgt_errmsg());
            goto out;
        }
        msgs[n_msgs++] = (wgt_chat_message){"assistant", r.text ? r.text : strdup("")};
        double dec = gs.n_generated > 1 ? (gs.n_generated - 1) / gs.decode_seconds : 0;
        fprintf(stderr, "[%lld prompt tokens (%lld cached), %lld generated, %.1f tok/s]\n", (long long)gs.n_prompt,
                (long long)gs.n_reused, (long long)gs.n_generated, dec);
    }
    rc = 0;
out:
    for (size_t i = 0; i < n_msgs; i++) free((char *)msgs[i].content);
    free(msgs);
    free(line);
    free(tmpl_text);
    wgt_model_free(m);
    wgt_context_free(ctx);
    return rc;
}
