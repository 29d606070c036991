/* wgt serve's HTTP side, on libmicrohttpd (a thread per connection): routes, the body limit,
 * the API key, request checks with OpenAI-style errors, tokenization, and the answers: whole
 * JSON, or server-sent events as the scheduler hands out text. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/json_util.h"
#include "serve.h"

enum { EP_COMPLETIONS, EP_CHAT, EP_INFO, EP_UNKNOWN };
static const char *const EP_NAMES[4] = {"completions", "chat_completions", "info", "other"};
static const int CODES[12] = {200, 204, 400, 401, 404, 405, 413, 429, 500, 503, 504, 0};

/* One connection's request: the body read so far and what the first call decided. */
typedef struct conn {
    int ep;
    char *body;
    size_t len, cap;
    int too_big;
} conn;

/* A streamed answer: events not yet written, and how far into the request's text they reach. */
typedef struct stream {
    req *r;
    int fd;
    char *buf;
    size_t len, pos;
    size_t sent;
    int64_t lp_sent; /* logprob entries sent */
    int started, ended;
} stream;

static server *S;

static void count(int ep, int code)
{
    int i = 0;
    while (CODES[i] && CODES[i] != code) i++;
    pthread_mutex_lock(&S->mu);
    S->m_requests[ep][i]++;
    pthread_mutex_unlock(&S->mu);
}

static enum MHD_Result send_body(struct MHD_Connection *c, conn *k, int code, const char *ctype, const char *body,
                                 size_t len)
{
    struct MHD_Response *res = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!res) return MHD_NO;
    if (ctype) MHD_add_response_header(res, "Content-Type", ctype);
    if (S->cors) {
        MHD_add_response_header(res, "Access-Control-Allow-Origin", S->cors);
        MHD_add_response_header(res, "Vary", "Origin");
    }
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)code, res);
    MHD_destroy_response(res);
    count(k ? k->ep : EP_UNKNOWN, code);
    return ok;
}

static enum MHD_Result send_json(struct MHD_Connection *c, conn *k, int code, cJSON *j)
{
    char *s = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (!s) return send_body(c, k, 500, "text/plain", "out of memory\n", 14);
    enum MHD_Result ok = send_body(c, k, code, "application/json", s, strlen(s));
    free(s);
    return ok;
}

static const char *error_type(int code)
{
    switch (code) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 429: return "rate_limit_error";
    case 500: case 503: return "server_error";
    case 504: return "timeout_error";
    default: return "invalid_request_error";
    }
}

/* {"error": {"message", "type", "param", "code"}}, OpenAI's shape. */
static cJSON *error_json(int code, const char *param, const char *ecode, const char *msg)
{
    cJSON *j = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(j, "error");
    cJSON_AddStringToObject(e, "message", msg);
    cJSON_AddStringToObject(e, "type", error_type(code));
    if (param) cJSON_AddStringToObject(e, "param", param);
    else cJSON_AddNullToObject(e, "param");
    if (ecode) cJSON_AddStringToObject(e, "code", ecode);
    else cJSON_AddNullToObject(e, "code");
    return j;
}

static enum MHD_Result send_error(struct MHD_Connection *c, conn *k, int code, const char *param, const char *ecode,
                                  const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return send_json(c, k, code, error_json(code, param, ecode, msg));
}

/* The key compared in time that depends on the key's length only, never on where they differ. */
static int key_ok(struct MHD_Connection *c)
{
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    const char *key = S->api_key;
    size_t kl = strlen(key);
    if (!h || strncasecmp(h, "Bearer ", 7)) return 0;
    h += 7;
    size_t hl = strlen(h);
    volatile unsigned char diff = hl != kl;
    for (size_t i = 0; i < kl; i++) diff |= (unsigned char)(i < hl ? h[i] : 0) ^ (unsigned char)key[i];
    return diff == 0;
}

static int client_gone(int fd)
{
    if (fd < 0) return 0;
    struct pollfd p = {fd, POLLRDHUP, 0};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

static int conn_fd(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

/* Wait (under S->mu) for the scheduler to change r, at most 100 ms. */
static void wait_out(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 100 * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
    pthread_cond_timedwait(&S->out_cv, &S->mu, &ts);
}

/* ---- request fields ------------------------------------------------------------------------------ */

typedef struct perr {
    int code;
    const char *param, *ecode;
    char msg[512];
} perr;

static int fail(perr *e, int code, const char *param, const char *ecode, const char *fmt, ...)
{
    e->code = code, e->param = param, e->ecode = ecode;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

/* A number field in [lo, hi] (absent or null: unchanged). */
static int num_field(cJSON *j, const char *name, double lo, double hi, double *out, perr *e)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return fail(e, 400, name, "invalid_type", "'%s' must be a number", name);
    if (v->valuedouble < lo || v->valuedouble > hi)
        return fail(e, 400, name, "invalid_value", "'%s' is %g: it must be between %g and %g", name, v->valuedouble, lo,
                    hi);
    *out = v->valuedouble;
    return 0;
}

static int int_field(cJSON *j, const char *name, double lo, double hi, int64_t *out, perr *e)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble))
        return fail(e, 400, name, "invalid_type", "'%s' must be an integer", name);
    if ((v->valuedouble < lo || v->valuedouble > hi) && lo == hi)
        return fail(e, 400, name, "invalid_value", "'%s' is %.0f: only %.0f is served", name, v->valuedouble, lo);
    if (v->valuedouble < lo || v->valuedouble > hi)
        return fail(e, 400, name, "invalid_value", "'%s' is %.0f: it must be between %.0f and %.0f", name,
                    v->valuedouble, lo, hi);
    *out = (int64_t)v->valuedouble;
    return 0;
}

static int bool_field(cJSON *j, const char *name, int *out, perr *e)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsBool(v)) return fail(e, 400, name, "invalid_type", "'%s' must be true or false", name);
    *out = cJSON_IsTrue(v);
    return 0;
}

/* The text of a chat message's content: a string, or a list of {"type": "text", "text"} parts. */
static int content_text(cJSON *v, char **out, perr *e)
{
    if (!v || cJSON_IsNull(v)) {
        *out = strdup("");
        return *out ? 0 : fail(e, 500, NULL, NULL, "out of memory");
    }
    if (cJSON_IsString(v)) {
        *out = strdup(v->valuestring);
        return *out ? 0 : fail(e, 500, NULL, NULL, "out of memory");
    }
    if (!cJSON_IsArray(v))
        return fail(e, 400, "messages", "invalid_type", "a message's 'content' must be a string or a list of parts");
    size_t len = 0;
    char *s = calloc(1, 1);
    cJSON *p;
    cJSON_ArrayForEach(p, v)
    {
        cJSON *type = cJSON_GetObjectItemCaseSensitive(p, "type"), *text = cJSON_GetObjectItemCaseSensitive(p, "text");
        if (!cJSON_IsObject(p) || !cJSON_IsString(type) || strcmp(type->valuestring, "text") || !cJSON_IsString(text)) {
            free(s);
            return fail(e, 400, "messages", "invalid_type",
                        "a content part must be {\"type\": \"text\", \"text\": \"...\"} (only text is served)");
        }
        size_t n = strlen(text->valuestring);
        char *t = s ? realloc(s, len + n + 1) : NULL;
        if (!t) {
            free(s);
            return fail(e, 500, NULL, NULL, "out of memory");
        }
        s = t;
        memcpy(s + len, text->valuestring, n + 1);
        len += n;
    }
    *out = s;
    return 0;
}

/* The prompt ids of a request (a completion's prompt, a chat's rendered messages). */
static int prompt_ids(cJSON *j, int chat, req *r, perr *e)
{
    wgt_status st = WGT_OK;
    if (!chat) {
        cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "prompt");
        if (!p) return fail(e, 400, "prompt", "missing_required_parameter", "'prompt' is required");
        if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1 && cJSON_IsString(cJSON_GetArrayItem(p, 0)))
            p = cJSON_GetArrayItem(p, 0);
        if (cJSON_IsString(p)) {
            if (!S->tok) return fail(e, 400, "prompt", NULL, "the model has no tokenizer: give the prompt as token ids");
            size_t n = 0;
            pthread_mutex_lock(&S->tok_mu);
            st = wgt_tokenizer_encode(S->tok, p->valuestring, (size_t)-1,
                                      WGT_TOKENIZE_ADD_SPECIAL | WGT_TOKENIZE_PARSE_SPECIAL, &r->prompt, &n);
            pthread_mutex_unlock(&S->tok_mu);
            if (st) return fail(e, 400, "prompt", NULL, "the prompt cannot be tokenized: %s", wgt_errmsg());
            r->n_prompt = (int64_t)n;
            return 0;
        }
        int n = cJSON_IsArray(p) ? cJSON_GetArraySize(p) : -1;
        if (n < 0)
            return fail(e, 400, "prompt", "invalid_type", "'prompt' must be a string, or a list of one string or of token ids");
        if (!(r->prompt = malloc((size_t)(n ? n : 1) * sizeof *r->prompt)))
            return fail(e, 500, NULL, NULL, "out of memory");
        int64_t V = wgt_model_vocab(S->model);
        cJSON *x;
        cJSON_ArrayForEach(x, p)
        {
            if (!cJSON_IsNumber(x) || x->valuedouble != floor(x->valuedouble))
                return fail(e, 400, "prompt", "invalid_type",
                            "'prompt' must be a string, or a list of one string or of token ids (integers)");
            if (x->valuedouble < 0 || x->valuedouble >= (double)V)
                return fail(e, 400, "prompt", "invalid_value", "token id %.0f is outside the vocabulary of %lld",
                            x->valuedouble, (long long)V);
            r->prompt[r->n_prompt++] = (int32_t)x->valuedouble;
        }
        return 0;
    }
    cJSON *ms = cJSON_GetObjectItemCaseSensitive(j, "messages");
    if (!ms) return fail(e, 400, "messages", "missing_required_parameter", "'messages' is required");
    if (!cJSON_IsArray(ms) || cJSON_GetArraySize(ms) == 0)
        return fail(e, 400, "messages", "invalid_type", "'messages' must be a non-empty list of {role, content}");
    if (!S->tok) return fail(e, 400, "messages", NULL, "the model has no tokenizer: chat needs one");
    int n = cJSON_GetArraySize(ms), i = 0, rc = 0;
    wgt_chat_message *msgs = calloc((size_t)n, sizeof *msgs);
    char **texts = calloc((size_t)n, sizeof *texts);
    if (!msgs || !texts) rc = fail(e, 500, NULL, NULL, "out of memory");
    cJSON *m;
    cJSON_ArrayForEach(m, ms)
    {
        if (rc) break;
        cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        if (!cJSON_IsObject(m) || !cJSON_IsString(role)) {
            rc = fail(e, 400, "messages", "invalid_type", "message %d must be an object with a string 'role'", i);
            break;
        }
        if (strcmp(role->valuestring, "system") && strcmp(role->valuestring, "user") &&
            strcmp(role->valuestring, "assistant") && strcmp(role->valuestring, "developer") &&
            strcmp(role->valuestring, "tool")) {
            rc = fail(e, 400, "messages", "invalid_value",
                      "message %d: role '%.40s' is not system, developer, user, assistant or tool", i,
                      role->valuestring);
            break;
        }
        if ((rc = content_text(cJSON_GetObjectItemCaseSensitive(m, "content"), &texts[i], e))) break;
        msgs[i].role = !strcmp(role->valuestring, "developer") ? "system" : role->valuestring;
        msgs[i].content = texts[i];
        i++;
    }
    if (!rc) {
        char *text = NULL;
        size_t nid = 0;
        pthread_mutex_lock(&S->tok_mu);
        st = wgt_tokenizer_apply_chat_template(S->tok, msgs, (size_t)n, 1, S->template_text, &text);
        /* the rendered template carries its own special tokens */
        if (!st) st = wgt_tokenizer_encode(S->tok, text, (size_t)-1, WGT_TOKENIZE_PARSE_SPECIAL, &r->prompt, &nid);
        pthread_mutex_unlock(&S->tok_mu);
        free(text);
        if (st) rc = fail(e, 400, "messages", NULL, "the chat template could not be applied: %s", wgt_errmsg());
        r->n_prompt = (int64_t)nid;
    }
    for (int k = 0; k < n && texts; k++) free(texts[k]);
    free(texts), free(msgs);
    return rc;
}

/* Every field of a completion or chat request, checked (unknown fields are ignored). */
static int parse_request(cJSON *j, int chat, req *r, perr *e)
{
    if (!cJSON_IsObject(j)) return fail(e, 400, NULL, "invalid_type", "the body must be a JSON object");
    cJSON *model = cJSON_GetObjectItemCaseSensitive(j, "model");
    if (model && !cJSON_IsNull(model)) {
        if (!cJSON_IsString(model)) return fail(e, 400, "model", "invalid_type", "'model' must be a string");
        if (strcmp(model->valuestring, S->alias))
            return fail(e, 404, "model", "model_not_found", "the model '%.100s' does not exist: this server has '%s'",
                        model->valuestring, S->alias);
    }
    int64_t n = 1, seed = -1, top_k = 0, max_tokens = -1, logprobs = -1, top_logprobs = -1;
    double temp = 1.0, top_p = 1.0, min_p = 0, rep = 1.0, freq = 0, pres = 0;
    int stream = 0, ignore_eos = 0, want_logprobs = 0;
    if (int_field(j, "n", 1, 1, &n, e) || num_field(j, "temperature", 0, 100, &temp, e) ||
        num_field(j, "top_p", 0, 1, &top_p, e) || int_field(j, "top_k", 0, 2147483647, &top_k, e) ||
        num_field(j, "min_p", 0, 1, &min_p, e) || num_field(j, "repetition_penalty", 1e-6, 100, &rep, e) ||
        num_field(j, "repeat_penalty", 1e-6, 100, &rep, e) || num_field(j, "frequency_penalty", -2, 2, &freq, e) ||
        num_field(j, "presence_penalty", -2, 2, &pres, e) || int_field(j, "seed", -9.2e18, 1.8e19, &seed, e) ||
        int_field(j, "max_tokens", 0, 2147483647, &max_tokens, e) ||
        (chat && int_field(j, "max_completion_tokens", 0, 2147483647, &max_tokens, e)) ||
        bool_field(j, "stream", &stream, e) || bool_field(j, "ignore_eos", &ignore_eos, e))
        return -1;
    /* chat: "logprobs": true and "top_logprobs": K; completions: "logprobs": K (0: the drawn token's alone) */
    if (chat ? bool_field(j, "logprobs", &want_logprobs, e) || int_field(j, "top_logprobs", 0, SERVE_MAX_TOP, &top_logprobs, e)
             : int_field(j, "logprobs", 0, SERVE_MAX_TOP, &logprobs, e))
        return -1;
    if (chat && top_logprobs >= 0 && !want_logprobs)
        return fail(e, 400, "top_logprobs", "invalid_value", "'top_logprobs' needs \"logprobs\": true");
    r->logprobs = chat ? want_logprobs : logprobs >= 0;
    r->n_top = (int)(chat ? (top_logprobs > 0 ? top_logprobs : 0) : (logprobs > 0 ? logprobs : 0));
    if (r->logprobs && !(r->logits = malloc((size_t)wgt_model_vocab(S->model) * sizeof *r->logits)))
        return fail(e, 500, NULL, NULL, "out of memory");
    cJSON *so = cJSON_GetObjectItemCaseSensitive(j, "stream_options");
    if (so && !cJSON_IsNull(so)) {
        if (!cJSON_IsObject(so)) return fail(e, 400, "stream_options", "invalid_type", "'stream_options' must be an object");
        if (bool_field(so, "include_usage", &r->include_usage, e)) return -1;
    }
    cJSON *stop = cJSON_GetObjectItemCaseSensitive(j, "stop");
    if (stop && !cJSON_IsNull(stop)) {
        if (cJSON_IsString(stop)) {
            if (*stop->valuestring) r->stop[r->n_stop++] = strdup(stop->valuestring);
        } else if (cJSON_IsArray(stop) && cJSON_GetArraySize(stop) <= 16) {
            cJSON *s;
            cJSON_ArrayForEach(s, stop)
            {
                if (!cJSON_IsString(s)) return fail(e, 400, "stop", "invalid_type", "'stop' must hold strings");
                if (*s->valuestring) r->stop[r->n_stop++] = strdup(s->valuestring);
            }
        } else
            return fail(e, 400, "stop", "invalid_type", "'stop' must be a string or a list of at most 16 strings");
        for (int i = 0; i < r->n_stop; i++)
            if (!r->stop[i]) return fail(e, 500, NULL, NULL, "out of memory");
    }
    /* response_format: {"type": "text"} (the default) or {"type": "json_object"} (one JSON object,
     * through a JSON constraint); json_schema is refused by name */
    cJSON *rf = cJSON_GetObjectItemCaseSensitive(j, "response_format");
    if (rf && !cJSON_IsNull(rf)) {
        cJSON *type = cJSON_IsObject(rf) ? cJSON_GetObjectItemCaseSensitive(rf, "type") : NULL;
        if (!cJSON_IsString(type))
            return fail(e, 400, "response_format", "invalid_type",
                        "'response_format' must be an object with a string 'type' (\"text\" or \"json_object\")");
        if (!strcmp(type->valuestring, "json_object")) {
            if (!S->tok)
                return fail(e, 400, "response_format", "invalid_value",
                            "json_object needs the model's tokenizer (the bytes of each token), and this model has none");
            if (wgt_json_state_create(S->tok, &r->sp.json)) return fail(e, 500, NULL, NULL, "%s", wgt_errmsg());
        } else if (!strcmp(type->valuestring, "json_schema"))
            return fail(e, 400, "response_format", "unsupported_value",
                        "response_format json_schema is not supported: use {\"type\": \"json_object\"} (one JSON "
                        "object of any shape) and describe the schema in the prompt");
        else if (strcmp(type->valuestring, "text"))
            return fail(e, 400, "response_format", "invalid_value",
                        "response_format type '%.40s' is not one of \"text\", \"json_object\"", type->valuestring);
    }
    r->chat = chat, r->stream = stream;
    r->sp.temperature = (float)temp;
    r->sp.top_k = (int)top_k;
    r->sp.top_p = (float)top_p;
    r->sp.min_p = (float)min_p;
    r->sp.repeat_penalty = (float)rep;
    r->sp.frequency_penalty = (float)freq;
    r->sp.presence_penalty = (float)pres;
    r->sp.seed = seed >= 0 ? (uint64_t)seed : (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)r;
    r->sp.ignore_eos = ignore_eos;
    if (prompt_ids(j, chat, r, e)) return -1;
    int64_t ctx = wgt_batch_context(S->batch);
    if (r->n_prompt == 0) return fail(e, 400, chat ? "messages" : "prompt", "invalid_value", "the prompt is empty");
    if (r->n_prompt > ctx)
        return fail(e, 400, chat ? "messages" : "prompt", "context_length_exceeded",
                    "the prompt has %lld tokens and the context holds %lld per sequence: shorten the prompt (or "
                    "start the server with a longer --ctx-size)",
                    (long long)r->n_prompt, (long long)ctx);
    int64_t room = ctx - r->n_prompt + 1; /* the last token drawn is never fed back */
    if (max_tokens < 0) max_tokens = chat ? room : 16; /* OpenAI's defaults: 16 for completions */
    r->max_tokens = max_tokens < room ? max_tokens : room;
    return 0;
}

/* ---- answers --------------------------------------------------------------------------------------- */

static cJSON *usage_json(const req *r)
{
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "prompt_tokens", (double)r->n_prompt);
    cJSON_AddNumberToObject(u, "completion_tokens", (double)r->n_gen);
    cJSON_AddNumberToObject(u, "total_tokens", (double)(r->n_prompt + r->n_gen));
    return u;
}

/* s[0..n) as a JSON string value: bytes that are not UTF-8 (a byte token's half of a character)
 * as U+FFFD; the exact bytes go in "bytes". */
static cJSON *utf8_string(const char *s, size_t n)
{
    char *o = malloc(3 * n + 1);
    if (!o) return cJSON_CreateString("");
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        int ok = len && i + len <= n;
        for (size_t j = 1; ok && j < len; j++) ok = ((unsigned char)s[i + j] >> 6) == 2;
        if (ok) {
            memcpy(o + k, s + i, len);
            k += len, i += len;
        } else {
            memcpy(o + k, "\xef\xbf\xbd", 3);
            k += 3, i++;
        }
    }
    o[k] = 0;
    cJSON *j = cJSON_CreateString(o);
    free(o);
    return j;
}

/* {"token", "logprob", "bytes"} of one token (chat's shape). */
static cJSON *token_lp(int32_t tok, float lp)
{
    const char *piece = "";
    size_t n = 0;
    if (S->tok) wgt_tokenizer_token_to_piece(S->tok, tok, &piece, &n);
    cJSON *j = cJSON_CreateObject(), *bytes = cJSON_CreateArray();
    cJSON_AddItemToObject(j, "token", utf8_string(piece, n));
    cJSON_AddNumberToObject(j, "logprob", lp);
    for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(bytes, cJSON_CreateNumber((unsigned char)piece[i]));
    cJSON_AddItemToObject(j, "bytes", bytes);
    return j;
}

/* The logprobs of entries [from, to): chat's {"content": [...]}, or the completions API's
 * {"tokens", "token_logprobs", "top_logprobs", "text_offset"} (offsets into the generated text). */
static cJSON *logprobs_json(const req *r, int64_t from, int64_t to)
{
    cJSON *j = cJSON_CreateObject();
    if (r->chat) {
        cJSON *content = cJSON_AddArrayToObject(j, "content");
        for (int64_t i = from; i < to; i++) {
            const lp_entry *e = &r->lp[i];
            cJSON *t = token_lp(e->token, e->logprob), *top = cJSON_AddArrayToObject(t, "top_logprobs");
            for (int k = 0; k < e->n_top; k++) cJSON_AddItemToArray(top, token_lp(e->top[k], e->top_lp[k]));
            cJSON_AddItemToArray(content, t);
        }
        return j;
    }
    cJSON *toks = cJSON_AddArrayToObject(j, "tokens"), *lps = cJSON_AddArrayToObject(j, "token_logprobs");
    cJSON *tops = cJSON_AddArrayToObject(j, "top_logprobs"), *offs = cJSON_AddArrayToObject(j, "text_offset");
    for (int64_t i = from; i < to; i++) {
        const lp_entry *e = &r->lp[i];
        cJSON *t = token_lp(e->token, e->logprob);
        cJSON_AddItemToArray(toks, cJSON_DetachItemFromObject(t, "token"));
        cJSON_Delete(t);
        cJSON_AddItemToArray(lps, cJSON_CreateNumber(e->logprob));
        cJSON *top = cJSON_CreateObject();
        for (int k = 0; k < e->n_top; k++) {
            cJSON *x = token_lp(e->top[k], 0), *name = cJSON_GetObjectItem(x, "token");
            if (!cJSON_GetObjectItem(top, name->valuestring)) cJSON_AddNumberToObject(top, name->valuestring, e->top_lp[k]);
            cJSON_Delete(x);
        }
        cJSON_AddItemToArray(tops, top);
        cJSON_AddItemToArray(offs, cJSON_CreateNumber(i ? (double)r->lp[i - 1].text_end : 0));
    }
    return j;
}

/* Entries up to the visible text end (a token cut by a stop string is left out). */
static int64_t lp_until(const req *r, size_t end)
{
    int64_t i = 0;
    while (i < r->n_lp && r->lp[i].text_end <= end) i++;
    return i;
}

/* A response object (chunk: one event of a stream) with one choice holding text (may be NULL),
 * the finish reason (NULL: not finished), and the logprobs of entries [lp_from, lp_to). */
static cJSON *answer_json(const req *r, int chunk, const char *text, size_t len, const char *finish, int role,
                          int64_t lp_from, int64_t lp_to)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "id", r->id);
    cJSON_AddStringToObject(j, "object", r->chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion");
    cJSON_AddNumberToObject(j, "created", (double)r->created);
    cJSON_AddStringToObject(j, "model", S->alias);
    cJSON *choices = cJSON_AddArrayToObject(j, "choices"), *c = cJSON_CreateObject();
    cJSON_AddItemToArray(choices, c);
    cJSON_AddNumberToObject(c, "index", 0);
    /* JSON text is UTF-8: a byte token's invalid sequence goes out as U+FFFD (a stream's split
     * character is already held back by the detokenizer until it completes) */
    if (r->chat) {
        cJSON *m = cJSON_AddObjectToObject(c, chunk ? "delta" : "message");
        if (role || !chunk) cJSON_AddStringToObject(m, "role", "assistant");
        if (text || !chunk) cJSON_AddItemToObject(m, "content", utf8_string(text ? text : "", text ? len : 0));
    } else
        cJSON_AddItemToObject(c, "text", utf8_string(text ? text : "", text ? len : 0));
    if (r->logprobs && (lp_to > lp_from || !chunk)) cJSON_AddItemToObject(c, "logprobs", logprobs_json(r, lp_from, lp_to));
    else cJSON_AddNullToObject(c, "logprobs");
    if (finish) cJSON_AddStringToObject(c, "finish_reason", finish);
    else cJSON_AddNullToObject(c, "finish_reason");
    if (!chunk) cJSON_AddItemToObject(j, "usage", usage_json(r));
    return j;
}

static int buf_event(stream *s, cJSON *j)
{
    char *p = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    const char *body = p ? p : "{\"error\": {\"message\": \"out of memory\", \"type\": \"server_error\"}}";
    size_t n = strlen(body) + 8;
    char *b = realloc(s->buf, s->len + n + 1);
    if (!b) {
        free(p);
        return -1;
    }
    s->buf = b;
    s->len += (size_t)snprintf(s->buf + s->len, n + 1, "data: %s\n\n", body);
    free(p);
    return 0;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
    stream *s = cls;
    req *r = s->r;
    for (;;) {
        if (s->pos < s->len) {
            size_t n = s->len - s->pos < max ? s->len - s->pos : max;
            memcpy(out, s->buf + s->pos, n);
            s->pos += n;
            return (ssize_t)n;
        }
        s->len = s->pos = 0;
        if (s->ended) return MHD_CONTENT_READER_END_OF_STREAM;
        if (!s->started && r->chat) { /* the role first, as OpenAI streams it */
            s->started = 1;
            buf_event(s, answer_json(r, 1, "", 0, NULL, 1, 0, 0));
            continue;
        }
        s->started = 1;
        pthread_mutex_lock(&S->mu);
        while (!r->done && r->visible <= s->sent) {
            wait_out();
            if (!r->done && client_gone(s->fd)) {
                pthread_mutex_unlock(&S->mu);
                serve_cancel(r);
                return MHD_CONTENT_READER_END_WITH_ERROR;
            }
        }
        if (r->visible > s->sent) {
            int64_t lp_to = lp_until(r, r->visible);
            buf_event(s, answer_json(r, 1, r->text + s->sent, r->visible - s->sent, NULL, 0, s->lp_sent, lp_to));
            s->sent = r->visible;
            s->lp_sent = lp_to;
        }
        if (r->done && s->sent >= r->visible) {
            if (r->error) {
                buf_event(s, error_json(r->err_code, NULL, NULL, r->error));
            } else {
                buf_event(s, answer_json(r, 1, NULL, 0, r->finish, 0, s->lp_sent, lp_until(r, r->len)));
                if (r->include_usage) {
                    cJSON *u = answer_json(r, 1, NULL, 0, NULL, 0, 0, 0);
                    cJSON_DeleteItemFromObject(u, "choices");
                    cJSON_AddArrayToObject(u, "choices");
                    cJSON_AddItemToObject(u, "usage", usage_json(r));
                    buf_event(s, u);
                }
            }
            char *b = realloc(s->buf, s->len + 16);
            if (b) {
                s->buf = b;
                memcpy(s->buf + s->len, "data: [DONE]\n\n", 14);
                s->len += 14;
            }
            s->ended = 1;
        }
        pthread_mutex_unlock(&S->mu);
    }
}

static void stream_free(void *cls)
{
    stream *s = cls;
    if (!s) return;
    if (!s->ended) serve_cancel(s->r);
    serve_release(s->r);
    free(s->buf);
    free(s);
}

static enum MHD_Result generate(struct MHD_Connection *c, conn *k)
{
    cJSON *j = NULL;
    wgt_status jst = wgt_json_parse(k->body ? k->body : "", k->len, "the body", &j);
    if (jst == WGT_ERR_OUT_OF_MEMORY) return send_error(c, k, 500, NULL, NULL, "%s", wgt_errmsg());
    if (jst) return send_error(c, k, 400, NULL, "invalid_json", "%s", wgt_errmsg());
    req *r = calloc(1, sizeof *r);
    if (!r) {
        cJSON_Delete(j);
        return send_error(c, k, 500, NULL, NULL, "out of memory");
    }
    static uint64_t counter;
    snprintf(r->id, sizeof r->id, "%s-%llx%08llx", k->ep == EP_CHAT ? "chatcmpl" : "cmpl",
             (unsigned long long)__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED), (unsigned long long)time(NULL));
    r->created = (int64_t)time(NULL);
    r->refs = 1;
    perr e = {0};
    int bad = parse_request(j, k->ep == EP_CHAT, r, &e);
    cJSON_Delete(j);
    if (bad) {
        serve_release(r);
        return send_json(c, k, e.code, error_json(e.code, e.param, e.ecode, e.msg));
    }
    /* a completion continues its prompt, which sets the context (spaces at word starts), as in
     * `wgt generate -p`; a chat reply starts fresh, as in `wgt chat` */
    if (S->tok && wgt_detokenizer_create(S->tok, 1, &r->detok) == WGT_OK && !r->chat)
        for (int64_t i = 0; i < r->n_prompt; i++) {
            const char *t;
            size_t l;
            wgt_detokenizer_push(r->detok, r->prompt[i], &t, &l);
        }
    if (r->max_tokens == 0) { /* nothing to generate */
        r->finish = "length";
        r->done = 1;
    } else {
        int code = serve_enqueue(r);
        if (code == 503) {
            serve_release(r);
            return send_error(c, k, 503, NULL, NULL, "the server is shutting down");
        }
        if (code) {
            serve_release(r);
            return send_error(c, k, 429, NULL, "queue_full",
                              "the server is busy: %d requests are waiting already (--max-queue); retry later",
                              S->max_queue);
        }
    }
    if (r->stream) {
        stream *s = calloc(1, sizeof *s);
        struct MHD_Response *res = s ? MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, s, stream_free) : NULL;
        if (!res) {
            free(s);
            serve_cancel(r);
            serve_release(r);
            return MHD_NO;
        }
        s->r = r, s->fd = conn_fd(c);
        MHD_add_response_header(res, "Content-Type", "text/event-stream");
        MHD_add_response_header(res, "Cache-Control", "no-cache");
        if (S->cors) MHD_add_response_header(res, "Access-Control-Allow-Origin", S->cors);
        enum MHD_Result ok = MHD_queue_response(c, 200, res);
        MHD_destroy_response(res);
        count(k->ep, 200);
        return ok;
    }
    int fd = conn_fd(c);
    pthread_mutex_lock(&S->mu);
    while (!r->done) {
        wait_out();
        if (!r->done && client_gone(fd)) {
            pthread_mutex_unlock(&S->mu);
            serve_cancel(r);
            serve_release(r);
            return MHD_NO;
        }
    }
    cJSON *ans = r->error ? error_json(r->err_code, NULL, NULL, r->error) : answer_json(r, 0, r->text, r->len, r->finish, 0, 0, lp_until(r, r->len));
    int code = r->error ? r->err_code : 200;
    pthread_mutex_unlock(&S->mu);
    serve_release(r);
    return send_json(c, k, code, ans);
}

static enum MHD_Result metrics(struct MHD_Connection *c, conn *k)
{
    size_t cap = 8192, n = 0;
    char *b = malloc(cap);
    if (!b) return MHD_NO;
#define P(...) (n += (size_t)snprintf(b + n, n < cap ? cap - n : 0, __VA_ARGS__))
    pthread_mutex_lock(&S->mu);
    P("# HELP wgt_requests_total HTTP requests answered, by endpoint and status.\n# TYPE wgt_requests_total counter\n");
    for (int ep = 0; ep < 4; ep++)
        for (int i = 0; i < 12; i++)
            if (S->m_requests[ep][i])
                P("wgt_requests_total{endpoint=\"%s\",code=\"%d\"} %llu\n", EP_NAMES[ep], CODES[i],
                  (unsigned long long)S->m_requests[ep][i]);
    P("# HELP wgt_prompt_tokens_total Prompt tokens computed (not counting reused ones).\n# TYPE wgt_prompt_tokens_total counter\nwgt_prompt_tokens_total %llu\n",
      (unsigned long long)S->m_prompt_tokens);
    P("# HELP wgt_prompt_tokens_reused_total Prompt tokens found in a slot's cache (not computed again).\n# TYPE wgt_prompt_tokens_reused_total counter\nwgt_prompt_tokens_reused_total %llu\n",
      (unsigned long long)S->m_reused_tokens);
    P("# HELP wgt_generated_tokens_total Tokens generated by finished requests.\n# TYPE wgt_generated_tokens_total counter\nwgt_generated_tokens_total %llu\n",
      (unsigned long long)S->m_gen_tokens);
    P("# HELP wgt_requests_rejected_total Requests refused with 429 (the queue was full).\n# TYPE wgt_requests_rejected_total counter\nwgt_requests_rejected_total %llu\n",
      (unsigned long long)S->m_rejected);
    P("# HELP wgt_requests_cancelled_total Requests whose client went away.\n# TYPE wgt_requests_cancelled_total counter\nwgt_requests_cancelled_total %llu\n",
      (unsigned long long)S->m_cancelled);
    P("# HELP wgt_requests_timed_out_total Requests past --timeout.\n# TYPE wgt_requests_timed_out_total counter\nwgt_requests_timed_out_total %llu\n",
      (unsigned long long)S->m_timeouts);
    P("# HELP wgt_queue_length Requests waiting for a slot.\n# TYPE wgt_queue_length gauge\nwgt_queue_length %d\n", S->n_queued);
    P("# HELP wgt_slots_active Sequences being prefilled or decoded.\n# TYPE wgt_slots_active gauge\nwgt_slots_active %d\n", S->n_active);
    P("# HELP wgt_slots Sequence slots (--parallel).\n# TYPE wgt_slots gauge\nwgt_slots %d\n", S->n_slots);
    P("# HELP wgt_prefill_tokens_per_second Prompt tokens per second of prefill, since start.\n# TYPE wgt_prefill_tokens_per_second gauge\nwgt_prefill_tokens_per_second %.3f\n",
      S->m_prefill_seconds > 0 ? S->m_prompt_tokens / S->m_prefill_seconds : 0.0);
    P("# HELP wgt_decode_tokens_per_second Tokens per second of batched decode steps, since start.\n# TYPE wgt_decode_tokens_per_second gauge\nwgt_decode_tokens_per_second %.3f\n",
      S->m_decode_seconds > 0 ? S->m_decode_tokens / S->m_decode_seconds : 0.0);
    P("# HELP wgt_decode_tokens_per_second_last Tokens per second of the last decode step (all its sequences).\n# TYPE wgt_decode_tokens_per_second_last gauge\nwgt_decode_tokens_per_second_last %.3f\n",
      S->last_decode_rate);
    pthread_mutex_unlock(&S->mu);
#undef P
    enum MHD_Result ok = n < cap ? send_body(c, k, 200, "text/plain; version=0.0.4", b, n)
                                 : send_error(c, k, 500, NULL, NULL, "metrics overflow");
    free(b);
    return ok;
}

static enum MHD_Result info(struct MHD_Connection *c, conn *k, const char *url)
{
    if (!strcmp(url, "/health")) return send_body(c, k, 200, "application/json", "{\"status\":\"ok\"}", 15);
    if (!strcmp(url, "/metrics")) return metrics(c, k);
    cJSON *j = cJSON_CreateObject(), *data = cJSON_AddArrayToObject(j, "data"), *m = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "object", "list");
    cJSON_AddItemToArray(data, m);
    cJSON_AddStringToObject(m, "id", S->alias);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", (double)(time(NULL) - (time_t)0));
    cJSON_AddStringToObject(m, "owned_by", "wgt");
    cJSON *meta = cJSON_AddObjectToObject(m, "meta");
    cJSON_AddStringToObject(meta, "arch", wgt_model_arch(S->model));
    cJSON_AddNumberToObject(meta, "n_ctx", (double)wgt_batch_context(S->batch));
    cJSON_AddNumberToObject(meta, "n_vocab", (double)wgt_model_vocab(S->model));
    cJSON_AddNumberToObject(meta, "slots", S->n_slots);
    return send_json(c, k, 200, j);
}

static int endpoint(const char *url, const char **method_needed)
{
    *method_needed = "POST";
    if (!strcmp(url, "/v1/completions") || !strcmp(url, "/completions")) return EP_COMPLETIONS;
    if (!strcmp(url, "/v1/chat/completions") || !strcmp(url, "/chat/completions")) return EP_CHAT;
    *method_needed = "GET";
    if (!strcmp(url, "/health") || !strcmp(url, "/v1/models") || !strcmp(url, "/models") || !strcmp(url, "/metrics"))
        return EP_INFO;
    return EP_UNKNOWN;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    conn *k = *con_cls;
    if (!k) { /* the headers: everything that needs no body is decided now */
        if (!(k = calloc(1, sizeof *k))) return MHD_NO;
        *con_cls = k;
        const char *need;
        k->ep = endpoint(url, &need);
        if (!strcmp(method, "OPTIONS")) { /* a browser's preflight */
            struct MHD_Response *res = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
            if (!res) return MHD_NO;
            if (S->cors) {
                MHD_add_response_header(res, "Access-Control-Allow-Origin", S->cors);
                MHD_add_response_header(res, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
                MHD_add_response_header(res, "Access-Control-Allow-Headers", "Authorization, Content-Type");
                MHD_add_response_header(res, "Access-Control-Max-Age", "86400");
            }
            enum MHD_Result ok = MHD_queue_response(c, 204, res);
            MHD_destroy_response(res);
            count(k->ep, 204);
            return ok;
        }
        if (k->ep == EP_UNKNOWN) return send_error(c, k, 404, NULL, "not_found", "no such endpoint: %s %.200s", method, url);
        if (strcmp(method, need) && !(k->ep == EP_INFO && !strcmp(method, "HEAD")))
            return send_error(c, k, 405, NULL, "method_not_allowed", "%.200s takes %s, not %s", url, need, method);
        if (S->api_key && strcmp(url, "/health") && !key_ok(c))
            return send_error(c, k, 401, NULL, "invalid_api_key",
                              "a valid API key is needed: send the header 'Authorization: Bearer KEY'");
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > S->max_body)
            return send_error(c, k, 413, NULL, "request_too_large", "the body has %s bytes; this server takes at most %zu",
                              cl, S->max_body);
        return MHD_YES;
    }
    if (*upload_size) {
        if (!k->too_big && k->len + *upload_size > S->max_body) {
            k->too_big = 1;
            free(k->body);
            k->body = NULL, k->len = k->cap = 0;
        }
        if (!k->too_big) {
            if (k->len + *upload_size + 1 > k->cap) {
                size_t cap = (k->len + *upload_size + 1) * 2;
                char *b = realloc(k->body, cap < S->max_body + 1 ? cap : S->max_body + 1);
                if (!b) return MHD_NO;
                k->body = b, k->cap = cap < S->max_body + 1 ? cap : S->max_body + 1;
            }
            memcpy(k->body + k->len, upload, *upload_size);
            k->len += *upload_size;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (k->too_big)
        return send_error(c, k, 413, NULL, "request_too_large", "the body is larger than this server takes (%zu bytes)",
                          S->max_body);
    if (k->ep == EP_INFO) return info(c, k, url);
    return generate(c, k);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode why)
{
    conn *k = *con_cls;
    if (!k) return;
    free(k->body);
    free(k);
    *con_cls = NULL;
}

struct MHD_Daemon *serve_http_start(const struct sockaddr_storage *addr, int ipv6)
{
    S = serve_state();
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | (ipv6 ? MHD_USE_IPv6 : 0);
    return MHD_start_daemon(flags, 0, NULL, NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR, addr,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_CONNECTION_LIMIT, 1024u,
                            MHD_OPTION_CONNECTION_TIMEOUT, 120u, MHD_OPTION_END);
}
