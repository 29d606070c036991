/* wgt serve: an OpenAI-compatible HTTP server (libmicrohttpd: no HTTP parsing of ours) with
 * continuous batching. Connection threads (one per connection) parse and check requests, render
 * chat templates and tokenize, then queue the request; one scheduler thread owns the model and
 * the wgt_batch: each iteration it admits queued requests into free slots (the slot whose cached
 * ids share the longest prefix with the prompt), feeds prompt chunks of as many requests as fit
 * --chunk ids (one batched step: 64 requests that arrive together are not 64 iterations from
 * their first token), then one decode step over every sequence that is generating, and hands the new text to the connections, which
 * stream it (server-sent events) or answer when the request ends. A connection that goes away
 * cancels its request; the slot is freed at the next iteration. */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "serve.h"
#include "wgt.h"

/* ---- the server's state ---------------------------------------------------------------------- */

static server S;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void serve_release(req *r)
{
    if (!r) return;
    pthread_mutex_lock(&S.mu);
    int last = --r->refs == 0;
    pthread_mutex_unlock(&S.mu);
    if (!last) return;
    free(r->prompt);
    for (int i = 0; i < r->n_stop; i++) free(r->stop[i]);
    free(r->text);
    free(r->error);
    free(r->logits);
    wgt_json_state_free(r->sp.json);
    free(r->lp);
    if (r->detok) wgt_detokenizer_free(r->detok);
    free(r);
}

/* ---- scheduler (runs alone on the model) ---------------------------------------------------- */

/* The request ends: reason "stop" or "length", or an error (code, message). Under S.mu. */
static void finish_locked(req *r, const char *reason, int code, const char *error)
{
    if (r->done) return;
    r->done = 1;
    r->finish = reason;
    if (error) {
        r->err_code = code;
        r->error = strdup(error);
    }
    S.m_gen_tokens += r->n_gen;
    pthread_cond_broadcast(&S.out_cv);
}

/* Longest k < len(stop) such that text ends with stop's first k bytes: bytes to hold back. */
static size_t partial_stop(const char *text, size_t len, const char *stop)
{
    size_t sl = strlen(stop), best = 0;
    for (size_t k = 1; k < sl && k <= len; k++)
        if (!memcmp(text + len - k, stop, k)) best = k;
    return best;
}

/* New bytes of generated text: appended, then the visible part advanced past what cannot be the
 * start of a stop string; a stop string found ends the request there. Under S.mu. */
static int append_text_locked(req *r, const char *t, size_t n)
{
    if (r->len + n + 1 > r->cap) {
        size_t cap = (r->len + n + 1) * 2;
        char *p = realloc(r->text, cap);
        if (!p) return -1;
        r->text = p, r->cap = cap;
    }
    size_t old = r->len;
    memcpy(r->text + r->len, t, n);
    r->len += n;
    r->text[r->len] = 0;
    size_t hold = 0;
    for (int i = 0; i < r->n_stop; i++) {
        size_t sl = strlen(r->stop[i]);
        size_t from = old >= sl ? old - sl + 1 : 0;
        char *hit = memmem(r->text + from, r->len - from, r->stop[i], sl);
        if (hit) {
            size_t at = (size_t)(hit - r->text);
            if (at < r->len) r->len = at, r->text[at] = 0;
            r->visible = r->len;
            finish_locked(r, "stop", 0, NULL);
            return 1;
        }
        size_t h = partial_stop(r->text, r->len, r->stop[i]);
        if (h > hold) hold = h;
    }
    r->visible = r->len - hold;
    pthread_cond_broadcast(&S.out_cv);
    return 0;
}

/* The detokenizer's held bytes (an incomplete UTF-8 sequence at the end, as U+FFFD, as `wgt
 * generate` shows them) join the text, then the request ends. Under S.mu. */
static void finish_flushed_locked(req *r, const char *reason)
{
    const char *t;
    size_t n;
    if (r->detok && !wgt_detokenizer_flush(r->detok, &t, &n) && n && append_text_locked(r, t, n)) return;
    r->visible = r->len;
    finish_locked(r, reason, 0, NULL);
}

/* The log-probabilities of the token drawn and of the n_top most likely, from r->logits. */
static void add_logprobs_locked(req *r, int32_t tok)
{
    if (r->n_lp == r->cap_lp) {
        int64_t cap = r->cap_lp ? 2 * r->cap_lp : 64;
        lp_entry *p = realloc(r->lp, (size_t)cap * sizeof *p);
        if (!p) return;
        r->lp = p, r->cap_lp = cap;
    }
    const float *l = r->logits;
    int64_t V = wgt_model_vocab(S.model);
    double mx = -INFINITY, sum = 0;
    for (int64_t v = 0; v < V; v++) mx = l[v] > mx ? l[v] : mx;
    for (int64_t v = 0; v < V; v++) sum += exp((double)l[v] - mx);
    double lse = mx + log(sum);
    lp_entry *e = &r->lp[r->n_lp++];
    e->token = tok;
    e->logprob = (float)(l[tok] - lse);
    e->n_top = 0;
    for (int64_t v = 0; v < V; v++) { /* insertion into the sorted top list (ties: the lower id first) */
        int k = e->n_top;
        if (k == r->n_top && (k == 0 || l[v] <= l[e->top[k - 1]])) continue;
        if (k < r->n_top) e->n_top++;
        else k--;
        while (k > 0 && l[v] > l[e->top[k - 1]]) e->top[k] = e->top[k - 1], k--;
        e->top[k] = (int32_t)v;
    }
    for (int k = 0; k < e->n_top; k++) e->top_lp[k] = (float)(l[e->top[k]] - lse);
    e->text_end = r->len;
}

/* The token a step drew for r: its text, then the end conditions. Under S.mu. */
static void take_token_locked(req *r, int32_t tok)
{
    r->n_gen++;
    r->last = tok;
    if (!r->sp.ignore_eos && wgt_model_is_eos(S.model, tok)) {
        finish_flushed_locked(r, "stop");
        return;
    }
    if (r->logprobs) add_logprobs_locked(r, tok);
    const char *t;
    size_t n;
    if (r->detok && !wgt_detokenizer_push(r->detok, tok, &t, &n) && n && append_text_locked(r, t, n)) return;
    if (r->logprobs && r->n_lp) r->lp[r->n_lp - 1].text_end = r->len;
    if (r->sp.json && wgt_json_state_complete(r->sp.json)) { /* response_format json_object: it closed */
        finish_flushed_locked(r, "stop");
        return;
    }
    if (r->n_gen >= r->max_tokens || wgt_batch_slot_length(S.batch, r->slot) >= wgt_batch_context(S.batch))
        finish_flushed_locked(r, "length");
}

/* A finished request leaves its slot (its ids stay there for prefix reuse). Under S.mu. */
static void release_slot_locked(int i)
{
    req *r = S.slot_req[i];
    if (!r) return;
    S.slot_req[i] = NULL;
    S.n_active--;
    pthread_cond_broadcast(&S.out_cv);
    pthread_mutex_unlock(&S.mu);
    serve_release(r);
    pthread_mutex_lock(&S.mu);
}

/* A request past its deadline ends with a 504. Under S.mu. */
static int expire_locked(req *r, double t)
{
    if (r->done || r->deadline <= 0 || t <= r->deadline) return 0;
    char msg[160];
    snprintf(msg, sizeof msg, "the request ran past the server's time limit of %g s (--timeout)", S.timeout);
    finish_locked(r, NULL, 504, msg);
    S.m_timeouts++;
    return 1;
}

/* Queued requests whose client went away or whose time ran out leave the queue. Under S.mu. */
static void sweep_queue_locked(double t)
{
    req **link = &S.queue_head, *prev = NULL;
    while (*link) {
        req *r = *link;
        if (r->cancelled && !r->done) finish_locked(r, "stop", 0, NULL);
        expire_locked(r, t);
        if (!r->done) {
            prev = r, link = &r->next;
            continue;
        }
        *link = r->next;
        if (S.queue_tail == r) S.queue_tail = prev;
        S.n_queued--;
        pthread_mutex_unlock(&S.mu);
        serve_release(r);
        pthread_mutex_lock(&S.mu);
    }
}

/* Queued requests into free slots, each into the free slot sharing the longest prefix. Under S.mu. */
static void admit_locked(void)
{
    while (S.queue_head) {
        req *r = S.queue_head;
        int best = -1;
        int64_t best_keep = -1;
        for (int i = 0; i < S.n_slots; i++) {
            if (S.slot_req[i]) continue;
            const int32_t *ids = wgt_batch_slot_ids(S.batch, i);
            int64_t n = wgt_batch_slot_length(S.batch, i), k = 0;
            if (S.cache_reuse)
                while (k < n && k < r->n_prompt - 1 && ids[k] == r->prompt[k]) k++;
            /* ties: the slot used least recently, so the caches of other conversations live longest */
            if (k > best_keep || (k == best_keep && S.slot_used[i] < S.slot_used[best])) best = i, best_keep = k;
        }
        if (best < 0) return;
        S.queue_head = r->next;
        if (!S.queue_head) S.queue_tail = NULL;
        S.n_queued--;
        wgt_batch_slot_truncate(S.batch, best, best_keep);
        r->slot = best;
        r->fed = best_keep;
        r->t_start = now_s();
        S.m_reused_tokens += best_keep;
        S.slot_req[best] = r;
        S.slot_used[best] = ++S.uses;
        S.n_active++;
    }
}

/* One iteration's work outside the lock: prompt chunks, then a decode step. */
static void run_step(wgt_batch_item *items, req **owners, int n, int prefill)
{
    double t0 = now_s();
    wgt_status st = wgt_batch_step(S.batch, items, n);
    double dt = now_s() - t0;
    pthread_mutex_lock(&S.mu);
    if (st) {
        char msg[512];
        snprintf(msg, sizeof msg, "the model failed on this request: %s", wgt_errmsg());
        fprintf(stderr, "wgt serve: %s\n", msg);
        for (int i = 0; i < n; i++) {
            finish_locked(owners[i], NULL, 500, msg);
            wgt_batch_slot_truncate(S.batch, owners[i]->slot, 0);
        }
    } else {
        for (int i = 0; i < n; i++) {
            req *r = owners[i];
            if (prefill) {
                r->fed += items[i].n;
                S.m_prompt_tokens += items[i].n;
            }
            if (items[i].sp && !r->done) {
                if (r->n_gen == 0) r->t_first = now_s();
                take_token_locked(r, items[i].token);
            }
        }
        if (prefill) S.m_prefill_seconds += dt;
        else {
            S.m_decode_tokens += n;
            S.m_decode_seconds += dt;
            S.last_decode_rate = dt > 0 ? n / dt : 0;
        }
    }
    pthread_mutex_unlock(&S.mu);
}

static void *scheduler(void *arg)
{
    wgt_batch_item *items = calloc((size_t)S.n_slots, sizeof *items);
    req **owners = calloc((size_t)S.n_slots, sizeof *owners);
    int32_t *last = calloc((size_t)S.n_slots, sizeof *last);
    int rr = 0; /* round robin over prefilling slots */
    pthread_mutex_lock(&S.mu);
    while (!S.quit) {
        /* ended, cancelled or timed-out requests leave their slots */
        double t = now_s();
        for (int i = 0; i < S.n_slots; i++) {
            req *r = S.slot_req[i];
            if (!r) continue;
            if (!r->done && r->cancelled) finish_locked(r, "stop", 0, NULL);
            expire_locked(r, t);
            if (r->done) release_slot_locked(i);
        }
        sweep_queue_locked(t);
        admit_locked();
        if (!S.n_active) {
            pthread_cond_wait(&S.work_cv, &S.mu);
            continue;
        }
        /* prompt chunks of the prefilling requests in turn, S.chunk ids in all, in one step */
        int np = 0;
        int64_t budget = S.chunk;
        for (int k = 0, start = rr; k < S.n_slots && budget > 0; k++) {
            int i = (start + k) % S.n_slots;
            req *r = S.slot_req[i];
            if (!r || r->done || r->fed >= r->n_prompt) continue;
            int64_t n = r->n_prompt - r->fed;
            if (n > budget) n = budget;
            budget -= n;
            rr = i + 1;
            int last_chunk = r->fed + n == r->n_prompt;
            items[np] = (wgt_batch_item){i, r->prompt + r->fed, n, last_chunk ? &r->sp : NULL, 0,
                                         last_chunk ? r->logits : NULL, 0};
            owners[np++] = r;
        }
        if (np) {
            pthread_mutex_unlock(&S.mu);
            run_step(items, owners, np, 1);
            pthread_mutex_lock(&S.mu);
        }
        /* one decode step over every sequence that is generating */
        int n = 0;
        for (int i = 0; i < S.n_slots; i++) {
            req *r = S.slot_req[i];
            if (!r || r->done || r->cancelled || r->fed < r->n_prompt || r->n_gen == 0) continue;
            last[n] = r->last;
            items[n] = (wgt_batch_item){i, &last[n], 1, &r->sp, (uint32_t)r->n_gen, r->logits, 0};
            owners[n++] = r;
        }
        if (n) {
            pthread_mutex_unlock(&S.mu);
            run_step(items, owners, n, 0);
            pthread_mutex_lock(&S.mu);
        }
    }
    for (int i = 0; i < S.n_slots; i++)
        if (S.slot_req[i]) {
            finish_locked(S.slot_req[i], NULL, 503, "the server is shutting down");
            release_slot_locked(i);
        }
    while (S.queue_head) { /* their connections are waiting: answer them */
        req *r = S.queue_head;
        S.queue_head = r->next;
        S.n_queued--;
        finish_locked(r, NULL, 503, "the server is shutting down");
        pthread_mutex_unlock(&S.mu);
        serve_release(r);
        pthread_mutex_lock(&S.mu);
    }
    S.queue_tail = NULL;
    pthread_mutex_unlock(&S.mu);
    free(items), free(owners), free(last);
    return NULL;
}

/* Queue a checked request: 0, or 429 when the queue is full, 503 when the server is stopping
 * (r is not taken then). */
int serve_enqueue(req *r)
{
    pthread_mutex_lock(&S.mu);
    if (S.quit) {
        pthread_mutex_unlock(&S.mu);
        return 503;
    }
    /* requests that arrive together may all be queued before the scheduler admits them: those
     * with a free slot waiting for them do not count against --max-queue */
    if (S.n_queued - (S.n_slots - S.n_active) >= S.max_queue) {
        S.m_rejected++;
        pthread_mutex_unlock(&S.mu);
        return 429;
    }
    r->refs = 2; /* the connection's and the scheduler's */
    r->deadline = S.timeout > 0 ? now_s() + S.timeout : 0;
    r->t_queued = now_s();
    r->slot = -1;
    if (S.queue_tail) S.queue_tail->next = r;
    else S.queue_head = r;
    S.queue_tail = r;
    S.n_queued++;
    pthread_cond_signal(&S.work_cv);
    pthread_mutex_unlock(&S.mu);
    return 0;
}

void serve_cancel(req *r)
{
    pthread_mutex_lock(&S.mu);
    if (!r->done && !r->cancelled) {
        r->cancelled = 1;
        S.m_cancelled++;
    }
    pthread_cond_signal(&S.work_cv);
    pthread_mutex_unlock(&S.mu);
}

/* ---- command line ----------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: wgt serve -m MODEL [--host 127.0.0.1] [--port 8080] [--parallel N] [options]\n\n"
            "An OpenAI-compatible HTTP server: POST /v1/completions and /v1/chat/completions (the model's\n"
            "chat template; \"stream\": true for server-sent events ending in data: [DONE]), GET /v1/models,\n"
            "GET /health, GET /metrics (Prometheus text). Up to N requests decode together (continuous\n"
            "batching); more wait in a queue.\n"
            "  -m, --model MODEL     a Hugging Face directory or a GGUF file\n"
            "  --alias NAME          the model's name in the API (default: MODEL's file or folder name)\n"
            "  --host ADDR           the address to listen on (default 127.0.0.1: this machine only;\n"
            "                        0.0.0.0 or :: for every interface)\n"
            "  --port P              the TCP port, 0 to 65535 (default 8080; 0: any free one, printed)\n"
            "  -np, --parallel N     sequences decoding together, 1 to 256 (default 4); each has a KV\n"
            "                        cache of the context length\n"
            "  -c, --ctx-size N      tokens per sequence: prompt plus reply (default: the model's, at\n"
            "                        most 4096)\n"
            "  --api-key KEY         require \"Authorization: Bearer KEY\" (all but /health); also read from\n"
            "                        WGT_API_KEY\n"
            "  --max-queue Q         requests waiting for a slot, 0 to 100000 (default 64); past it: 429\n"
            "  --timeout S           seconds a request may take from its arrival, 0 (none) to 86400\n"
            "                        (default 600); past it: 504, or an error event when streaming\n"
            "  --max-body BYTES      largest request body, 1024 to 1073741824 (default 1048576); past it: 413\n"
            "  --cors ORIGIN         answer browsers from ORIGIN (e.g. http://localhost:3000, or *)\n"
            "  --template T          chat template: chatml, llama3, llama2, mistral, or @FILE (default: the\n"
            "                        model's own; chatml when it has none)\n"
            "  --chunk N             prompt tokens fed per step between decode steps (the waiting prompts in turn),\n"
            "                        1 to 65536 (default 256)\n"
            "  --no-cache-reuse      never reuse a slot's cached prompt prefix\n"
            "  --type T              with a config.json alone (random weights, for benchmarks): their type,\n"
            "                        f16 (default), f32, bf16, q8_0, q4_0, q4_k or q6_k; a tokenizer in the\n"
            "                        config's folder is used (tools/synthetic_tokenizer.py writes one)\n"
            "Requests take model, prompt (a string, or a list of one string or of token ids) or messages,\n"
            "max_tokens, temperature, top_p, top_k, min_p, repetition_penalty, frequency_penalty and\n"
            "presence_penalty (-2 to 2, OpenAI's: over the reply's tokens), seed, stop (a string or up to 16),\n"
            "n (1), stream, stream_options.include_usage, ignore_eos, logprobs (chat: with top_logprobs;\n"
            "the model's log-probabilities, before the sampling settings), response_format ({\"type\":\n"
            "\"json_object\"}: the reply is one JSON object, ending when it closes; \"text\"; json_schema is refused).\n"
            "Greedy (temperature 0) replies equal `wgt generate`'s. Errors are OpenAI's JSON:\n"
            "{\"error\": {\"message\", \"type\", \"param\", \"code\"}}.\n"
            "Example:\n"
            "  wgt serve -m models/bible-llama --port 8080 &\n"
            "  curl http://127.0.0.1:8080/v1/completions -H 'Content-Type: application/json' \\\n"
            "       -d '{\"prompt\": \"In the beginning\", \"max_tokens\": 32, \"temperature\": 0}'\n");
}

static char *default_alias(const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && path[b - 1] != '/') b--;
    char *s = strndup(path + b, n - b);
    return s;
}

int cmd_serve(int argc, char **argv)
{
    const char *model = NULL, *host = "127.0.0.1", *tmpl = NULL, *alias = NULL, *random_type = NULL;
    const char *key = getenv("WGT_API_KEY");
    int64_t port = 8080, parallel = 4, ctx_len = 0, max_queue = 64, max_body = 1 << 20, chunk = 256;
    double timeout = 600;
    int no_reuse = 0;
    args a = args_begin("serve", argc, argv);
    while (args_next(&a)) {
        if (args_flag(&a, "-h|--help")) {
            usage(stdout);
            return 0;
        } else if (args_str(&a, "-m|--model", &model)) ;
        else if (args_str(&a, "--alias", &alias)) ;
        else if (args_str(&a, "--host", &host)) ;
        else if (args_int(&a, "--port", 0, 65535, &port)) ;
        else if (args_int(&a, "-np|--parallel", 1, 256, &parallel)) ;
        else if (args_int(&a, "-c|--ctx-size|--ctx", 0, 1 << 20, &ctx_len)) ;
        else if (args_str(&a, "--api-key", &key)) ;
        else if (args_int(&a, "--max-queue", 0, 100000, &max_queue)) ;
        else if (args_double(&a, "--timeout", 0, 0, 86400, &timeout)) ;
        else if (args_int(&a, "--max-body", 1024, 1 << 30, &max_body)) ;
        else if (args_str(&a, "--cors", &S.cors)) ;
        else if (args_str(&a, "--template|--chat-template", &tmpl)) ;
        else if (args_int(&a, "--chunk", 1, 65536, &chunk)) ;
        else if (args_flag(&a, "--no-cache-reuse")) no_reuse = 1;
        else if (args_str(&a, "--type", &random_type)) ;
        else return args_unknown(&a);
    }
    if (a.bad) return 2;
    if (!model) {
        fprintf(stderr, "wgt serve: give -m MODEL\n\n");
        usage(stderr);
        return 2;
    }
    if (random_type && (strlen(model) < 5 || strcmp(model + strlen(model) - 5, ".json"))) {
        fprintf(stderr, "wgt serve: --type sets the random weights of a config.json alone; %s carries its own weights "
                        "(convert it with `wgt convert --type` instead)\n", model);
        return 2;
    }
    if (key && !*key) {
        fprintf(stderr, "wgt serve: --api-key is empty: give a key, or leave the option out\n");
        return 2;
    }
    if (tmpl && !tool_template_ok("serve", tmpl)) return 2;
    struct sockaddr_storage addr = {0};
    socklen_t addr_len;
    if (strchr(host, ':')) {
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&addr;
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        addr_len = sizeof *a6;
        if (inet_pton(AF_INET6, host, &a6->sin6_addr) != 1) goto bad_host;
    } else {
        struct sockaddr_in *a4 = (struct sockaddr_in *)&addr;
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        addr_len = sizeof *a4;
        if (inet_pton(AF_INET, !strcmp(host, "localhost") ? "127.0.0.1" : host, &a4->sin_addr) != 1) goto bad_host;
    }
    (void)addr_len;

    S.api_key = key;
    S.n_slots = (int)parallel;
    S.max_queue = (int)max_queue;
    S.timeout = timeout;
    S.max_body = (size_t)max_body;
    S.chunk = chunk;
    S.cache_reuse = !no_reuse;
    S.t_start = now_s();
    pthread_mutex_init(&S.mu, NULL);
    pthread_mutex_init(&S.tok_mu, NULL);
    pthread_cond_init(&S.work_cv, NULL);
    pthread_cond_init(&S.out_cv, NULL);
    char *alias_owned = alias ? NULL : default_alias(model);
    S.alias = alias ? alias : alias_owned;
    S.template_text = NULL;
    char *template_file = NULL;
    if (tmpl && tmpl[0] == '@') {
        FILE *f = fopen(tmpl + 1, "rb");
        size_t len;
        if (!f || tool_read_all(f, &template_file, &len)) {
            fprintf(stderr, "wgt serve: cannot read the template file '%s'\n", tmpl + 1);
            if (f) fclose(f);
            return 2;
        }
        fclose(f);
        template_file[len] = 0;
        S.template_text = template_file;
    } else
        S.template_text = tmpl;

    int rc = 1;
    wgt_context *ctx = NULL;
    pthread_t sched;
    int sched_started = 0;
    struct MHD_Daemon *d = NULL;
    if (wgt_context_create(NULL, &ctx)) {
        fprintf(stderr, "wgt serve: %s\n", wgt_errmsg());
        goto out;
    }
    wgt_model_options mo = {0};
    mo.max_ctx = ctx_len;
    mo.no_kv_cache = 1; /* the batch's slots hold the caches */
    mo.kv_caches = S.n_slots; /* counted by the memory check before loading */
    mo.random_type = random_type;
    if (wgt_model_open_ex(ctx, model, &mo, &S.model)) {
        fprintf(stderr, "wgt serve: %s\n", wgt_errmsg());
        goto out;
    }
    if (wgt_model_is_random(S.model))
        fprintf(stderr, "wgt serve: warning: %s is a configuration alone: the weights are random, the replies are "
                        "noise\n", model);
    S.tok = wgt_model_tokenizer(S.model);
    if (!S.tok)
        fprintf(stderr, "wgt serve: note: the model has no tokenizer%s%s: only prompts of token ids are served\n",
                wgt_model_tokenizer_error(S.model) ? ": " : "",
                wgt_model_tokenizer_error(S.model) ? wgt_model_tokenizer_error(S.model) : "");
    if (S.tok && !S.template_text) { /* a model without a template chats in chatml, as llama.cpp does */
        wgt_chat_message probe = {"user", "x"};
        char *text = NULL;
        if (wgt_tokenizer_apply_chat_template(S.tok, &probe, 1, 1, NULL, &text) == WGT_ERR_NOT_FOUND) {
            S.template_text = "chatml";
            fprintf(stderr, "wgt serve: note: %s has no chat template: /v1/chat/completions uses chatml "
                            "(--template chooses another)\n", model);
        }
        free(text);
    }
    if (wgt_batch_create(S.model, S.n_slots, &S.batch)) {
        fprintf(stderr, "wgt serve: %s\n", wgt_errmsg());
        goto out;
    }
    /* SIGINT and SIGTERM blocked in every thread (the ones created below inherit the mask): the
     * main thread takes them with sigwait, as a process-directed signal may go to any thread */
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
    S.slot_req = calloc((size_t)S.n_slots, sizeof *S.slot_req);
    S.slot_used = calloc((size_t)S.n_slots, sizeof *S.slot_used);
    if (!S.slot_req || !S.slot_used || pthread_create(&sched, NULL, scheduler, NULL)) {
        fprintf(stderr, "wgt serve: cannot start the scheduler thread\n");
        goto out;
    }
    sched_started = 1;
    signal(SIGPIPE, SIG_IGN);
    if (!(d = serve_http_start(&addr, addr.ss_family == AF_INET6))) {
        fprintf(stderr, "wgt serve: cannot listen on %s port %lld: %s (is the port in use?)\n", host,
                (long long)port, strerror(errno));
        goto out;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    fprintf(stderr, "wgt serve: %s on http://%s%s%s:%u (%d slots of %lld tokens, model '%s')\n",
            wgt_model_arch(S.model), strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "",
            di ? (unsigned)di->port : (unsigned)port, S.n_slots, (long long)wgt_batch_context(S.batch), S.alias);
    fflush(stderr);
    int sig = 0;
    sigwait(&stop_signals, &sig);
    fprintf(stderr, "wgt serve: stopping (%s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    rc = 0;
out:
    /* the scheduler first: it answers every request in flight (503), so no connection thread
     * waits when the daemon joins them; requests arriving after are refused */
    if (sched_started) {
        pthread_mutex_lock(&S.mu);
        S.quit = 1;
        pthread_cond_broadcast(&S.work_cv);
        pthread_mutex_unlock(&S.mu);
        pthread_join(sched, NULL);
    }
    if (d) { /* no new connections; those answering the 503s above get 2 s to write them */
        MHD_socket ls = MHD_quiesce_daemon(d);
        for (int i = 0; i < 200; i++) {
            const union MHD_DaemonInfo *ci = MHD_get_daemon_info(d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
            if (!ci || !ci->num_connections) break;
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        MHD_stop_daemon(d);
        if (ls != MHD_INVALID_SOCKET) close(ls);
    }
    wgt_batch_free(S.batch);
    free(S.slot_req);
    free(S.slot_used);
    wgt_model_free(S.model);
    wgt_context_free(ctx);
    free(alias_owned);
    free(template_file);
    return rc;
bad_host:
    fprintf(stderr, "wgt serve: --host '%s' is not an IPv4 or IPv6 address (e.g. 127.0.0.1, 0.0.0.0, ::1)\n", host);
    return 2;
}

server *serve_state(void) { return &S; }
