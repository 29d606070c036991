/* Jinja values (undefined, none, bool, int, string, list, dict), the arena they live in, and
 * printing them as text and JSON. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/jinja.h"

/* ---- arena, errors ---- */



void *jinja_alloc(jctx *c, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (!c->blocks || c->blocks->used + n > c->blocks->cap) {
        size_t cap = n > 65536 ? n : 65536;
        arena_block *b = malloc(sizeof *b + cap);
        if (!b) {
            c->status = wgt_error(WGT_ERR_OUT_OF_MEMORY, "chat template: out of memory");
            longjmp(c->fail, 1);
        }
        b->next = c->blocks;
        b->used = 0;
        b->cap = cap;
        c->blocks = b;
    }
    void *p = c->blocks->data + c->blocks->used;
    c->blocks->used += n;
    memset(p, 0, n);
    return p;
}

_Noreturn void jinja_fail(jctx *c, wgt_status st, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->status = wgt_error(st, "chat template: %s", msg);
    longjmp(c->fail, 1);
}

/* ---- values ---- */



value jinja_strdup(jctx *c, const char *s, size_t n)
{
    char *p = jinja_alloc(c, n + 1);
    memcpy(p, s, n);
    return v_str(p, n);
}

void jinja_list_push(jctx *c, list *l, value v)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        value *nv = jinja_alloc(c, cap * sizeof *nv);
        if (l->n) memcpy(nv, l->v, l->n * sizeof *nv);
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = v;
}

value *jinja_dict_find(dict *d, const char *k, size_t n)
{
    for (size_t i = 0; i < d->n; i++)
        if (strlen(d->k[i]) == n && !memcmp(d->k[i], k, n)) return &d->v[i];
    return NULL;
}

void jinja_dict_set(jctx *c, dict *d, const char *k, size_t n, value v)
{
    value *slot = jinja_dict_find(d, k, n);
    if (slot) {
        *slot = v;
        return;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 8;
        const char **nk = jinja_alloc(c, cap * sizeof *nk);
        value *nv = jinja_alloc(c, cap * sizeof *nv);
        if (d->n) {
            memcpy(nk, d->k, d->n * sizeof *nk);
            memcpy(nv, d->v, d->n * sizeof *nv);
        }
        d->k = nk;
        d->v = nv;
        d->cap = cap;
    }
    d->k[d->n] = jinja_strdup(c, k, n).s;
    d->v[d->n++] = v;
}

int jinja_truthy(value v)
{
    switch (v.t) {
    case V_UNDEF: case V_NONE: return 0;
    case V_BOOL: case V_INT: return v.i != 0;
    case V_STR: return v.n != 0;
    case V_LIST: return v.l->n != 0;
    case V_DICT: return v.d->n != 0;
    }
    return 0;
}

/* ---- output buffer ---- */


void jinja_put(sbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->n + n + 1) * 2;
        char *p = jinja_alloc(b->c, cap);
        if (b->n) memcpy(p, b->p, b->n);
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void jinja_puts(sbuf *b, const char *s) { jinja_put(b, s, strlen(s)); }

static void json_string(sbuf *b, const char *s, size_t n)
{
    jinja_put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        char esc[8];
        if (ch == '"' || ch == '\\') {
            esc[0] = '\\', esc[1] = (char)ch;
            jinja_put(b, esc, 2);
        } else if (ch == '\n') jinja_put(b, "\\n", 2);
        else if (ch == '\t') jinja_put(b, "\\t", 2);
        else if (ch == '\r') jinja_put(b, "\\r", 2);
        else if (ch < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", ch);
            jinja_put(b, esc, 6);
        } else jinja_put(b, (const char *)&s[i], 1);
    }
    jinja_put(b, "\"", 1);
}

void jinja_to_json(sbuf *b, value v)
{
    char num[32];
    switch (v.t) {
    case V_UNDEF: case V_NONE: jinja_puts(b, "null"); break;
    case V_BOOL: jinja_puts(b, v.i ? "true" : "false"); break;
    case V_INT: snprintf(num, sizeof num, "%lld", v.i); jinja_puts(b, num); break;
    case V_STR: json_string(b, v.s, v.n); break;
    case V_LIST:
        jinja_put(b, "[", 1);
        for (size_t i = 0; i < v.l->n; i++) {
            if (i) jinja_put(b, ", ", 2);
            jinja_to_json(b, v.l->v[i]);
        }
        jinja_put(b, "]", 1);
        break;
    case V_DICT:
        jinja_put(b, "{", 1);
        for (size_t i = 0; i < v.d->n; i++) {
            if (i) jinja_put(b, ", ", 2);
            json_string(b, v.d->k[i], strlen(v.d->k[i]));
            jinja_put(b, ": ", 2);
            jinja_to_json(b, v.d->v[i]);
        }
        jinja_put(b, "}", 1);
        break;
    }
}

/* str(v) as Jinja prints it. */
void jinja_to_text(sbuf *b, value v)
{
    char num[32];
    switch (v.t) {
    case V_UNDEF: break;
    case V_NONE: jinja_puts(b, "None"); break;
    case V_BOOL: jinja_puts(b, v.i ? "True" : "False"); break;
    case V_INT: snprintf(num, sizeof num, "%lld", v.i); jinja_puts(b, num); break;
    case V_STR: jinja_put(b, v.s, v.n); break;
    case V_LIST: case V_DICT: jinja_to_json(b, v); break;
    }
}

value jinja_as_string(jctx *c, value v)
{
    if (v.t == V_STR) return v;
    sbuf b = {.c = c};
    jinja_to_text(&b, v);
    return b.p ? v_str(b.p, b.n) : v_str("", 0);
}

int jinja_equal(value a, value b)
{
    if ((a.t == V_INT || a.t == V_BOOL) && (b.t == V_INT || b.t == V_BOOL)) return a.i == b.i;
    if (a.t != b.t) return (a.t == V_UNDEF || a.t == V_NONE) && (b.t == V_UNDEF || b.t == V_NONE) && a.t == b.t;
    if (a.t == V_STR) return a.n == b.n && !memcmp(a.s, b.s, a.n);
    if (a.t == V_NONE || a.t == V_UNDEF) return 1;
    if (a.t == V_LIST) {
        if (a.l->n != b.l->n) return 0;
        for (size_t i = 0; i < a.l->n; i++)
            if (!jinja_equal(a.l->v[i], b.l->v[i])) return 0;
        return 1;
    }
    return a.d == b.d;
}

void jinja_free(jctx *c)
{
    for (arena_block *b = c->blocks, *nb; b; b = nb) {
        nb = b->next;
        free(b);
    }
    free(c);
}
