/* wgt chat: an interactive conversation with a model through its chat template. Each line read
 * from stdin is a user message; the reply streams to stdout. The whole conversation is rendered
 * again every turn and the KV cache keeps the part it already holds, so a turn costs only its own
 * new tokens. "/reset" starts over; end of input quits. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
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
               "/reset starts a new conversation; end of input (Ctrl-D) quits. When the conversation\n"
               "outgrows the context, the oldest turns are dropped (the system message stays), as\n"
               "llama.cpp's context shift does, with a note on stderr.\n"
               "  -m, --model MODEL\n"
               "  --system S          a system message first (--system-prompt too)\n"
               "  --template T        the chat template: chatml, llama3, llama2, mistral, gemma, or @FILE (Jinja)\n"
               "                      (default: the model's own; chatml, with a note, when it has none)\n"
               "  --var N=V           a template variable (repeatable, up to 16), e.g. enable_thinking=false\n"
               "  -n, --n-predict N   at most N tokens per reply, 1 to 2147483647 (default 512)\n"
               "  --temp T (0 to 100) --top-k K (0 off) --top-p P (0 to 1) --min-p M (0 to 1)\n"
               "  --repeat-penalty R (above 0, at most 100) -s, --seed S     sampling\n"
               "  --frequency-penalty F, --presence-penalty P (-2 to 2; 0 off)  over each reply's tokens\n"
               "                      (default: temperature 0.7, top-p 0.9; --temp 0 is greedy)\n"
               "  --json              each reply is one JSON object (JSON mode: only tokens that continue one)\n"
               "  -c, --ctx-size N    KV cache length, 0 (the model's, at most 4096) to 1048576 (--ctx too)\n");
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

int tool_template_ok(const char *cmd, const char *tmpl)
{
    static const char *const families[] = {"chatml", "llama3", "llama2", "mistral", "gemma"};
    if (tmpl[0] == '@' && tmpl[1]) return 1;
    for (size_t i = 0; i < sizeof families / sizeof *families; i++)
        if (!strcmp(tmpl, families[i])) return 1;
    fprintf(stderr, "wgt %s: --template '%s' is not a template: give chatml, llama3, llama2, mistral, gemma, or @FILE for a "
                    "Jinja template file\n", cmd, tmpl);
    return 0;
}

/* Remove messages [at, at + n) of the conversation, freeing their text. */
static void drop_messages(wgt_chat_message *msgs, size_t *n_msgs, size_t at, size_t n)
{
    for (size_t i = at; i < at + n; i++) free((char *)msgs[i].content);
    memmove(msgs + at, msgs + at + n, (*n_msgs - at - n) * sizeof *msgs);
    *n_msgs -= n;
}

/* The conversation rendered and encoded so that it and room for a reply fit the context: the
 * oldest user/assistant turns are dropped while it does not (the system message stays), as
 * llama.cpp's context shift does. 0 when done; 1 when the newest message alone does not fit
 * (said on stderr); -1 on an error of the template or tokenizer (wgt_errmsg()). */
static int fit_context(const wgt_model *m, wgt_tokenizer *tok, wgt_chat_message *msgs, size_t *n_msgs,
                              const char *tmpl, const char *const *vars, size_t n_vars, int64_t n_new, int32_t **ids,
                              size_t *n_ids)
{
    int64_t ctx = wgt_model_context(m), room = n_new < ctx / 2 ? n_new : ctx / 2;
    size_t dropped = 0;
    for (;;) {
        char *text = NULL;
        wgt_status st = wgt_tokenizer_apply_chat_template_vars(tok, msgs, *n_msgs, 1, tmpl, vars, n_vars, &text);
        /* the rendered template carries its own special tokens (as transformers' apply_chat_template) */
        if (!st) st = wgt_tokenizer_encode(tok, text, (size_t)-1, WGT_TOKENIZE_PARSE_SPECIAL, ids, n_ids);
        free(text);
        if (st) return -1;
        if ((int64_t)*n_ids + room <= ctx) break;
        size_t first = *n_msgs && !strcmp(msgs[0].role, "system");
        if (*n_msgs - first <= 1) {
            fprintf(stderr, "wgt chat: this message makes a prompt of %lld tokens, and the context holds %lld with "
                            "%lld kept for the reply: it is dropped; send a shorter one, or give a longer context "
                            "(-c)\n", (long long)*n_ids, (long long)ctx, (long long)room);
            free(*ids);
            *ids = NULL;
            return 1;
        }
        free(*ids);
        *ids = NULL;
        /* a user message and the reply to it, so roles keep alternating */
        size_t n = !strcmp(msgs[first + 1].role, "assistant") ? 2 : 1;
        drop_messages(msgs, n_msgs, first, n);
        dropped += n;
    }
    if (dropped)
        fprintf(stderr, "wgt chat: the conversation outgrew the context of %lld tokens: dropped the oldest %zu "
                        "message(s)%s (context shift)\n", (long long)ctx, dropped,
                *n_msgs && !strcmp(msgs[0].role, "system") ? ", kept the system message" : "");
    return 0;
}

int cmd_chat(int argc, char **argv)
{
    const char *model = NULL, *system = NULL, *tmpl = NULL, *vars[16];
    size_t n_vars = 0;
    int64_t n_new = 512, ctx_len = 0;
    wgt_sampling sp = {0};
    int json = 0;
    sp.temperature = 0.7f, sp.top_p = 0.9f, sp.repeat_penalty = 1.0f, sp.seed = 1234;
    args a = args_begin("chat", argc, argv);
    while (args_next(&a)) {
        const char *var;
        if (args_flag(&a, "-h|--help")) {
            usage(stdout);
            return 0;
        } else if (args_str(&a, "-m|--model", &model)) ;
        else if (args_str(&a, "--system|--system-prompt", &system)) ;
        else if (args_str(&a, "--template|--chat-template", &tmpl)) ;
        else if (args_str(&a, "--var", &var)) {
            if (a.bad) break;
            if (n_vars == 16) {
                fprintf(stderr, "wgt chat: more than 16 --var options\n");
                return 2;
            }
            vars[n_vars++] = var;
        } else if (args_int(&a, "-n|--n-predict", 1, INT32_MAX, &n_new)) ;
        else if (args_float(&a, "--temp", 0, 0, 100, &sp.temperature)) ;
        else if (args_int32(&a, "--top-k", 0, INT32_MAX, &sp.top_k)) ;
        else if (args_float(&a, "--top-p", 0, 0, 1, &sp.top_p)) ;
        else if (args_float(&a, "--min-p", 0, 0, 1, &sp.min_p)) ;
        else if (args_float(&a, "--repeat-penalty", 0, 1, 100, &sp.repeat_penalty)) ;
        else if (args_float(&a, "--frequency-penalty", -2, 0, 2, &sp.frequency_penalty)) ;
        else if (args_float(&a, "--presence-penalty", -2, 0, 2, &sp.presence_penalty)) ;
        else if (args_u64(&a, "-s|--seed", UINT64_MAX, &sp.seed)) ;
        else if (args_int(&a, "-c|--ctx-size|--ctx", 0, 1 << 20, &ctx_len)) ;
        else if (args_flag(&a, "--json")) json = 1;
        else return args_unknown(&a);
    }
    if (a.bad) return 2;
    if (!model) {
        fprintf(stderr, "wgt chat: give the model with -m MODEL\n\n");
        usage(stderr);
        return 2;
    }
    if (tmpl && !tool_template_ok("chat", tmpl)) return 2;
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
    if (wgt_model_open(ctx, model, ctx_len, &m)) {
        fprintf(stderr, "wgt chat: %s\n", wgt_errmsg());
        goto out;
    }
    wgt_tokenizer *tok = wgt_model_tokenizer(m);
    if (!tok) {
        if (wgt_model_tokenizer_error(m))
            fprintf(stderr, "wgt chat: the model's tokenizer could not be read: %s\n", wgt_model_tokenizer_error(m));
        else
            fprintf(stderr, "wgt chat: the model has no tokenizer\n");
        goto out;
    }
    if (json && wgt_json_state_create(tok, &sp.json)) {
        fprintf(stderr, "wgt chat: %s\n", wgt_errmsg());
        goto out;
    }
    if (!tmpl) { /* a model without a template still chats, in the format llama.cpp falls back to */
        wgt_chat_message probe = {"user", "hi"};
        char *text = NULL;
        if (wgt_tokenizer_apply_chat_template(tok, &probe, 1, 1, NULL, &text) == WGT_ERR_NOT_FOUND) {
            tmpl = "chatml";
            fprintf(stderr, "wgt chat: note: %s has no chat template: using chatml (llama.cpp's default too); "
                            "--template chooses another\n", model);
        }
        free(text);
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
        int32_t *ids = NULL;
        size_t n_ids = 0;
        int fit = fit_context(m, tok, msgs, &n_msgs, tmpl, vars, n_vars, n_new, &ids, &n_ids);
        if (fit == 1) { /* this message alone is too long: it was said; forget it and keep going */
            drop_messages(msgs, &n_msgs, n_msgs - 1, 1);
            continue;
        }
        if (fit) {
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
        wgt_json_state_reset(sp.json); /* a new object each reply */
        wgt_status st = wgt_model_generate(m, ids, (int64_t)n_ids, n_new, &sp, on_token, &r, &gs);
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
        double dec = gs.n_generated > 1 && gs.decode_seconds > 0 ? (gs.n_generated - 1) / gs.decode_seconds : 0;
        fprintf(stderr, "[%lld prompt tokens (%lld cached), %lld generated, %.1f tok/s%s]\n", (long long)gs.n_prompt,
                (long long)gs.n_reused, (long long)gs.n_generated, dec,
                gs.context_full ? "; the reply reached the end of the context: the next turn drops the oldest" : "");
    }
    rc = 0;
out:
    for (size_t i = 0; i < n_msgs; i++) free((char *)msgs[i].content);
    free(msgs);
    free(line);
    free(tmpl_text);
    wgt_json_state_free(sp.json);
    wgt_model_free(m);
    wgt_context_free(ctx);
    return rc;
}
