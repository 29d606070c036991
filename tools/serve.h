/* wgt serve's parts: the scheduler and command line (serve.c), the HTTP side (serve_http.c:
 * routing, limits, authentication, request parsing, responses and streams). */
#ifndef WGT_TOOLS_SERVE_H
#define WGT_TOOLS_SERVE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "wgt.h"

/* The log-probability of a drawn token (log-softmax of the model's logits, before the sampling
 * settings) and of the most likely ones; text_end: where the token's text ends in req.text. */
#define SERVE_MAX_TOP 20
typedef struct lp_entry {
    int32_t token;
    float logprob;
    int n_top;
    int32_t top[SERVE_MAX_TOP];
    float top_lp[SERVE_MAX_TOP];
    size_t text_end;
} lp_entry;

/* A generation request, shared by its connection and the scheduler (refs), its mutable fields
 * under server.mu. */
typedef struct req {
    int chat;                /* /v1/chat/completions (else /v1/completions) */
    int stream, include_usage;
    int32_t *prompt;         /* [n_prompt] */
    int64_t n_prompt;
    int64_t max_tokens;      /* already capped at what the context leaves */
    wgt_sampling sp;
    char *stop[16];
    int n_stop;
    char id[48];
    int64_t created;         /* Unix time */
    wgt_detokenizer *detok;  /* the scheduler's alone once queued */
    int logprobs;            /* 1: lp entries wanted, with n_top alternatives each */
    int n_top;
    float *logits;           /* [vocab] when logprobs: the scheduler's */
    /* under server.mu */
    int refs;
    double deadline, t_queued, t_start, t_first;
    struct req *next;        /* the queue */
    int slot;                /* -1 while queued */
    int64_t fed;             /* prompt ids in the slot */
    int64_t n_gen;           /* tokens drawn */
    int32_t last;            /* the last token drawn (the next step's input) */
    char *text;              /* generated text [len] */
    size_t len, cap;
    size_t visible;          /* bytes of text that can no longer turn into a stop string */
    int done, cancelled;
    const char *finish;      /* "stop" or "length" */
    lp_entry *lp;            /* [n_lp] with logprobs */
    int64_t n_lp, cap_lp;
    int err_code;            /* with error: the HTTP status */
    char *error;
} req;

typedef struct server {
    wgt_model *model;
    wgt_tokenizer *tok;      /* calls serialised by tok_mu */
    wgt_batch *batch;        /* the scheduler's alone */
    const char *alias, *api_key, *cors, *template_text;
    int n_slots, max_queue, cache_reuse;
    double timeout, t_start;
    size_t max_body;
    int64_t chunk;
    pthread_mutex_t mu, tok_mu;
    pthread_cond_t work_cv;  /* the scheduler waits for work */
    pthread_cond_t out_cv;   /* connections wait for text */
    req *queue_head, *queue_tail;
    int n_queued, n_active;
    req **slot_req;          /* [n_slots] */
    uint64_t *slot_used;     /* [n_slots]: when each slot last took a request (uses counts them) */
    uint64_t uses;
    int quit;
    /* metrics (under mu) */
    uint64_t m_requests[4][12]; /* endpoint x status (serve_http.c: EP_*, CODES) */
    uint64_t m_prompt_tokens, m_gen_tokens, m_reused_tokens, m_decode_tokens;
    uint64_t m_rejected, m_cancelled, m_timeouts;
    double m_prefill_seconds, m_decode_seconds, last_decode_rate;
} server;

server *serve_state(void);
/* Queue a checked request (takes it over): 0, or 429 when the queue is full, 503 when the server
 * is stopping (then not taken). */
int serve_enqueue(req *r);
/* The client went away: the scheduler drops the request at its next iteration. */
void serve_cancel(req *r);
/* Drop a reference to r (the last frees it). */
void serve_release(req *r);

struct MHD_Daemon;
/* Start listening (libmicrohttpd, a thread per connection); NULL with errno on failure. */
struct MHD_Daemon *serve_http_start(const struct sockaddr_storage *addr, int ipv6);

#endif
