/* Constrained generation: the ids a model may draw are those whose bytes continue one JSON object
 * (RFC 8259 text whose top-level value is an object: OpenAI's response_format "json_object",
 * `wgt generate --json`). A byte-level pushdown automaton holds where the text is; a step masks
 * every id whose piece it would reject (one pass over the vocabulary's pieces, stopping at an id's
 * first rejected byte), and accepting the drawn id advances it. Limits keep a constrained model
 * from running away where JSON allows anything: the text starts with '{' (no whitespace before
 * it), at most JSON_MAX_WS whitespace bytes in a row (indentation up to depth 11 at two spaces), and
 * JSON_MAX_DEPTH nested containers. Strings must be valid UTF-8 (no overlong forms, no encoded
 * surrogates); escapes are RFC 8259's. Control and unknown tokens are never drawn; the end of
 * generation comes when the object closes (wgt_json_state_complete). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "wgt.h"

enum { JSON_MAX_DEPTH = 64, JSON_MAX_WS = 24 };

typedef enum jmode {
    J_START,      /* before the top-level object: '{' */
    J_VALUE,      /* a value is expected (after ':' or in an array after ',') */
    J_VALUE_OR_CLOSE, /* after '[': a value or ']' */
    J_KEY_OR_CLOSE,   /* after '{': a key or '}' */
    J_KEY,        /* after ',' in an object */
    J_COLON,      /* after a key */
    J_AFTER,      /* after a value: ',' or the container's closer */
    J_STRING,     /* inside a string (key or value) */
    J_ESCAPE,     /* after a backslash */
    J_HEX,        /* inside \uXXXX: aux hex digits left */
    J_NUM_MINUS,  /* '-' read: a digit must follow */
    J_NUM_ZERO,   /* a leading 0: '.', 'e', or the end of the number */
    J_NUM_INT,    /* integer digits */
    J_NUM_DOT,    /* '.' read: a digit must follow */
    J_NUM_FRAC,   /* fraction digits */
    J_NUM_E,      /* 'e' read: a sign or a digit */
    J_NUM_ESIGN,  /* the exponent's sign read: a digit */
    J_NUM_EXP,    /* exponent digits */
    J_LITERAL,    /* inside true / false / null: aux is the literal, aux2 the bytes matched */
    J_DONE,       /* the object closed: nothing more */
} jmode;

typedef struct jstate {
    uint8_t mode, depth, is_key, ws;
    uint8_t aux, aux2;
    uint8_t utf8_left, utf8_lo, utf8_hi; /* continuation bytes still due; the next one's range */
    uint64_t objects;                    /* bit d: container d (0 = outermost) is an object */
} jstate;

/* The vocabulary's index for masking (a step must not run the automaton over 150k pieces): the ids
 * with bytes by their first byte, so a byte the state refuses masks its ids at once; the ids that
 * a string takes whatever the string holds ("string-safe": accepted from a string's start, with no
 * '"'), so inside a string only the others run the automaton; and the ids never drawn. */
struct wgt_json_state {
    jstate s;
    int32_t n_vocab;
    const char **piece; /* each id's bytes (the tokenizer's), NULL for ids never drawn */
    uint32_t *len;
    /* ids with bytes by their first two bytes: by_pair[pair_at[k] .. pair_at[k + 1]), k = 257 * first
     * + (0 for a one-byte piece, else 1 + second) */
    int32_t *by_pair;
    uint32_t *pair_at;
    int32_t *scratch;  /* a mask's allowed ids */
    float *kept;       /* and their logits */
    int32_t *unsafe, n_unsafe; /* ids with bytes that are not string-safe */
    int32_t *none, n_none;     /* ids without bytes (control, unknown, empty) */
    const wgt_tokenizer *tok;
};

static const char *const literals[3] = {"true", "false", "null"};

static int is_ws(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
static int is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

/* After a value ends: the container's next separator or closer. */
static void value_done(jstate *s) { s->mode = s->depth ? J_AFTER : J_DONE; }

static int open_container(jstate *s, int object)
{
    if (s->depth >= JSON_MAX_DEPTH) return 0;
    if (object) s->objects |= 1ull << s->depth;
    else s->objects &= ~(1ull << s->depth);
    s->depth++;
    s->mode = object ? J_KEY_OR_CLOSE : J_VALUE_OR_CLOSE;
    return 1;
}

static int close_container(jstate *s, int object)
{
    if (!s->depth || !!(s->objects >> (s->depth - 1) & 1) != object) return 0;
    s->depth--;
    value_done(s);
    return 1;
}

/* The first byte of a value. */
static int value_start(jstate *s, uint8_t c)
{
    switch (c) {
    case '{': return open_container(s, 1);
    case '[': return open_container(s, 0);
    case '"': s->mode = J_STRING, s->is_key = 0; return 1;
    case '-': s->mode = J_NUM_MINUS; return 1;
    case '0': s->mode = J_NUM_ZERO; return 1;
    case 't': s->mode = J_LITERAL, s->aux = 0, s->aux2 = 1; return 1;
    case 'f': s->mode = J_LITERAL, s->aux = 1, s->aux2 = 1; return 1;
    case 'n': s->mode = J_LITERAL, s->aux = 2, s->aux2 = 1; return 1;
    default:
        if (c >= '1' && c <= '9') { s->mode = J_NUM_INT; return 1; }
        return 0;
    }
}

/* After a value inside a container: ',' or the container's closer. */
static int after_value(jstate *s, uint8_t c);

static int string_byte(jstate *s, uint8_t c)
{
    if (s->utf8_left) {
        if (c < s->utf8_lo || c > s->utf8_hi) return 0;
        s->utf8_left--, s->utf8_lo = 0x80, s->utf8_hi = 0xBF;
        return 1;
    }
    if (c == '"') {
        if (s->is_key) s->mode = J_COLON;
        else value_done(s);
        return 1;
    }
    if (c == '\\') { s->mode = J_ESCAPE; return 1; }
    if (c < 0x20) return 0;
    if (c < 0x80) return 1;
    /* a UTF-8 lead byte (RFC 3629): the first continuation's range excludes overlong forms and surrogates */
    s->utf8_lo = 0x80, s->utf8_hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) s->utf8_left = 1;
    else if (c == 0xE0) s->utf8_left = 2, s->utf8_lo = 0xA0;
    else if (c == 0xED) s->utf8_left = 2, s->utf8_hi = 0x9F;
    else if (c >= 0xE1 && c <= 0xEF) s->utf8_left = 2;
    else if (c == 0xF0) s->utf8_left = 3, s->utf8_lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) s->utf8_left = 3;
    else if (c == 0xF4) s->utf8_left = 3, s->utf8_hi = 0x8F;
    else return 0;
    return 1;
}

static int step(jstate *s, uint8_t c)
{
    switch ((jmode)s->mode) {
    case J_START: return c == '{' && open_container(s, 1);
    case J_VALUE:
    case J_VALUE_OR_CLOSE:
    case J_KEY_OR_CLOSE:
    case J_KEY:
    case J_COLON:
    case J_AFTER:
        if (is_ws(c)) return ++s->ws <= JSON_MAX_WS;
        s->ws = 0;
        switch ((jmode)s->mode) {
        case J_VALUE: return value_start(s, c);
        case J_VALUE_OR_CLOSE: return c == ']' ? close_container(s, 0) : value_start(s, c);
        case J_KEY_OR_CLOSE:
            if (c == '}') return close_container(s, 1);
            if (c == '"') { s->mode = J_STRING, s->is_key = 1; return 1; }
            return 0;
        case J_KEY:
            if (c == '"') { s->mode = J_STRING, s->is_key = 1; return 1; }
            return 0;
        case J_COLON:
            if (c == ':') { s->mode = J_VALUE; return 1; }
            return 0;
        default: return after_value(s, c);
        }
    case J_STRING: return string_byte(s, c);
    case J_ESCAPE:
        if (c == 'u') { s->mode = J_HEX, s->aux = 4; return 1; }
        if (!strchr("\"\\/bfnrt", c) || !c) return 0;
        s->mode = J_STRING;
        return 1;
    case J_HEX:
        if (!(is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return 0;
        if (--s->aux == 0) s->mode = J_STRING;
        return 1;
    case J_NUM_MINUS:
        if (c == '0') { s->mode = J_NUM_ZERO; return 1; }
        if (c >= '1' && c <= '9') { s->mode = J_NUM_INT; return 1; }
        return 0;
    case J_NUM_ZERO:
    case J_NUM_INT:
        if (is_digit(c) && s->mode == J_NUM_INT) return 1;
        if (c == '.') { s->mode = J_NUM_DOT; return 1; }
        if (c == 'e' || c == 'E') { s->mode = J_NUM_E; return 1; }
        value_done(s);
        return step(s, c);
    case J_NUM_DOT:
        if (!is_digit(c)) return 0;
        s->mode = J_NUM_FRAC;
        return 1;
    case J_NUM_FRAC:
        if (is_digit(c)) return 1;
        if (c == 'e' || c == 'E') { s->mode = J_NUM_E; return 1; }
        value_done(s);
        return step(s, c);
    case J_NUM_E:
        if (c == '+' || c == '-') { s->mode = J_NUM_ESIGN; return 1; }
        if (!is_digit(c)) return 0;
        s->mode = J_NUM_EXP;
        return 1;
    case J_NUM_ESIGN:
        if (!is_digit(c)) return 0;
        s->mode = J_NUM_EXP;
        return 1;
    case J_NUM_EXP:
        if (is_digit(c)) return 1;
        value_done(s);
        return step(s, c);
    case J_LITERAL: {
        const char *lit = literals[s->aux];
        if ((uint8_t)lit[s->aux2] != c) return 0;
        if (lit[++s->aux2] == 0) value_done(s);
        return 1;
    }
    case J_DONE: return 0;
    }
    return 0;
}

static int after_value(jstate *s, uint8_t c)
{
    int object = s->depth && (s->objects >> (s->depth - 1) & 1);
    if (c == ',') {
        s->mode = object ? J_KEY : J_VALUE;
        return 1;
    }
    if (c == '}' || c == ']') return close_container(s, c == '}');
    return 0;
}

static int feed(jstate *s, const char *bytes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!step(s, (uint8_t)bytes[i])) return 0;
    return 1;
}

/* A piece's bucket: 257 * first byte + (0 for one byte, else 1 + the second). */
static uint32_t pair_key(const char *p, size_t len)
{
    return 257u * (uint8_t)p[0] + (len > 1 ? 1u + (uint8_t)p[1] : 0u);
}

wgt_status wgt_json_state_create(const wgt_tokenizer *tok, wgt_json_state **out)
{
    if (!out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_json_state_create: NULL argument");
    *out = NULL;
    int32_t n = tok ? wgt_tokenizer_vocab_size(tok) : 0;
    wgt_json_state *j = calloc(1, sizeof *j);
    if (!j || !(j->piece = calloc((size_t)n + 1, sizeof *j->piece)) || !(j->len = calloc((size_t)n + 1, sizeof *j->len))) {
        wgt_json_state_free(j);
        return wgt_error(WGT_ERR_OUT_OF_MEMORY, "JSON constraint: out of host memory for %d tokens", (int)n);
    }
    j->n_vocab = n;
    j->tok = tok;
    if (!(j->by_pair = malloc(((size_t)n + 1) * sizeof *j->by_pair)) || !(j->pair_at = calloc(257 * 256 + 1, sizeof *j->pair_at)) ||
        !(j->scratch = malloc(((size_t)n + 1) * sizeof *j->scratch)) || !(j->kept = malloc(((size_t)n + 1) * sizeof *j->kept)) ||
        !(j->unsafe = malloc(((size_t)n + 1) * sizeof *j->unsafe)) || !(j->none = malloc(((size_t)n + 1) * sizeof *j->none))) {
        wgt_json_state_free(j);
        return wgt_error(WGT_ERR_OUT_OF_MEMORY, "JSON constraint: out of host memory for %d tokens", (int)n);
    }
    for (int32_t id = 0; id < n; id++) {
        const char *p;
        size_t len;
        if (wgt_tokenizer_is_special(tok, id) || wgt_tokenizer_token_to_piece(tok, id, &p, &len) || !len) {
            j->none[j->n_none++] = id;
            continue;
        }
        j->piece[id] = p;
        j->len[id] = (uint32_t)len;
        j->pair_at[pair_key(p, len) + 1]++;
        jstate in_string = {.mode = J_STRING};
        if (memchr(p, '"', len) || !feed(&in_string, p, len)) j->unsafe[j->n_unsafe++] = id;
    }
    /* a counting sort: pair_at[k + 1] becomes bucket k's end, and placing the ids from the last
     * counts it down to the bucket's start (so each bucket holds its ids in increasing order) */
    for (int k = 0; k < 257 * 256; k++) j->pair_at[k + 1] += j->pair_at[k];
    for (int32_t id = n - 1; id >= 0; id--)
        if (j->piece[id]) j->by_pair[--j->pair_at[pair_key(j->piece[id], j->len[id]) + 1]] = id;
    /* shift down so bucket k is [pair_at[k], pair_at[k + 1]) */
    uint32_t total = (uint32_t)(n - j->n_none);
    for (int k = 0; k < 257 * 256; k++) j->pair_at[k] = j->pair_at[k + 1];
    j->pair_at[257 * 256] = total;
    *out = j;
    return WGT_OK;
}

void wgt_json_state_free(wgt_json_state *j)
{
    if (!j) return;
    free(j->piece);
    free(j->len);
    free(j->by_pair);
    free(j->pair_at);
    free(j->scratch);
    free(j->kept);
    free(j->unsafe);
    free(j->none);
    free(j);
}

void wgt_json_state_reset(wgt_json_state *j)
{
    if (j) memset(&j->s, 0, sizeof j->s);
}

wgt_status wgt_json_state_feed(wgt_json_state *j, const char *bytes, size_t n)
{
    if (!j || (!bytes && n)) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_json_state_feed: NULL argument");
    jstate t = j->s;
    for (size_t i = 0; i < n; i++)
        if (!step(&t, (uint8_t)bytes[i]))
            return wgt_error(WGT_ERR_INVALID_ARGUMENT,
                             "JSON constraint: byte %zu (0x%02x) cannot continue one JSON object here", i, (uint8_t)bytes[i]);
    j->s = t;
    return WGT_OK;
}

int wgt_json_state_complete(const wgt_json_state *j) { return j && j->s.mode == J_DONE; }

int wgt_json_state_allows(const wgt_json_state *j, int32_t id)
{
    if (!j || id < 0 || id >= j->n_vocab) return 0;
    if (j->s.mode == J_DONE) return wgt_tokenizer_is_eog(j->tok, id);
    if (!j->piece[id]) return 0;
    jstate t = j->s;
    return feed(&t, j->piece[id], j->len[id]);
}

int64_t wgt_json_state_mask(const wgt_json_state *j, float *logits, int64_t n)
{
    if (!j || !logits) return 0;
    int64_t allowed = 0, nv = n < j->n_vocab ? n : j->n_vocab;
    for (int64_t id = nv; id < n; id++) logits[id] = -INFINITY; /* past the tokenizer's vocabulary */
    if (j->s.mode == J_DONE) {
        for (int64_t id = 0; id < nv; id++) {
            if (wgt_tokenizer_is_eog(j->tok, (int32_t)id)) allowed++;
            else logits[id] = -INFINITY;
        }
        return allowed;
    }
    int64_t safe = nv; /* the ids below nv that are neither never drawn nor unsafe */
    for (int32_t i = 0; i < j->n_none; i++)
        if (j->none[i] < nv) logits[j->none[i]] = -INFINITY, safe--;
    if (j->s.mode == J_STRING && !j->s.utf8_left) { /* the string-safe ids need no check */
        for (int32_t i = 0; i < j->n_unsafe; i++) {
            int32_t id = j->unsafe[i];
            if (id >= nv) continue;
            safe--;
            if (wgt_json_state_allows(j, id)) allowed++;
            else logits[id] = -INFINITY;
        }
        return allowed + safe;
    }
    /* elsewhere few ids are allowed: found through the buckets of the byte pairs the state takes,
     * kept aside while every logit becomes -inf, then put back */
    int32_t na = 0;
    for (int b = 0; b < 256; b++) {
        jstate t = j->s;
        if (!step(&t, (uint8_t)b)) continue;
        for (int c = -1; c < 256; c++) {
            jstate u = t;
            if (c >= 0 && !step(&u, (uint8_t)c)) continue;
            uint32_t k = 257u * (uint32_t)b + (uint32_t)(c + 1);
            for (uint32_t i = j->pair_at[k]; i < j->pair_at[k + 1]; i++) {
                int32_t id = j->by_pair[i];
                jstate v = u;
                if (id < nv && (j->len[id] <= 2 || feed(&v, j->piece[id] + 2, j->len[id] - 2))) j->scratch[na++] = id;
            }
        }
    }
    for (int32_t i = 0; i < na; i++) j->kept[i] = logits[j->scratch[i]];
    for (int64_t id = 0; id < nv; id++) logits[id] = -INFINITY;
    for (int32_t i = 0; i < na; i++) logits[j->scratch[i]] = j->kept[i];
    return na;
}

wgt_status wgt_json_state_accept(wgt_json_state *j, int32_t id)
{
    if (!j) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_json_state_accept: NULL argument");
    if (j->s.mode == J_DONE && wgt_tokenizer_is_eog(j->tok, id)) return WGT_OK;
    if (id < 0 || id >= j->n_vocab || !j->piece[id])
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "JSON constraint: token %d cannot continue the JSON object", (int)id);
    return wgt_json_state_feed(j, j->piece[id], j->len[id]);
}
