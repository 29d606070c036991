/* Chat templates: a small Jinja interpreter, enough for the templates models ship
 * (ChatML/Qwen, Llama 2/3, Mistral). Rendered as Hugging Face's apply_chat_template does:
 * trim_blocks and lstrip_blocks on, undefined names render as "" and are false.
 *
 * Supported: {{ }}, {% if/elif/else %}, {% for x in xs [if c] %} (with loop.index, index0,
 * first, last, length, revindex, revindex0; "for a, b in"), {% set x = ... %},
 * {% set ns.x = ... %}, namespace(), raise_exception(), range(), comments, whitespace control;
 * literals, lists, dicts, attribute/index/slice access, + - * / % ~, comparisons, and/or/not,
 * in / not in, "a if c else b", tests (defined, undefined, none, string, number, mapping,
 * iterable, sequence, true, false, boolean, integer), filters (trim, length, count, upper, lower,
 * tojson, string, int, first, last, join, default, capitalize, replace, list, reverse, items),
 * string methods (strip, lstrip, rstrip, startswith, endswith, split, upper, lower, replace,
 * title) and dict methods (items, keys, values, get). Anything else is WGT_ERR_UNSUPPORTED naming
 * the construct. Everything a render allocates lives in one arena freed at the end; errors
 * unwind with longjmp to the entry point. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

/* ---- arena, errors ---- */

typedef struct arena_block { struct arena_block *next; size_t used, cap; char data[]; } arena_block;

typedef struct jctx {
    arena_block *blocks;
    jmp_buf fail;
    wgt_status status;
} jctx;

static void *jalloc(jctx *c, size_t n)
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

static _Noreturn void jfail(jctx *c, wgt_status st, const char *fmt, ...) WGT_PRINTF(3, 4);
static _Noreturn void jfail(jctx *c, wgt_status st, const char *fmt, ...)
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

typedef enum vtype { V_UNDEF, V_NONE, V_BOOL, V_INT, V_STR, V_LIST, V_DICT } vtype;
typedef struct list list;
typedef struct dict dict;
typedef struct value {
    vtype t;
    long long i; /* bool, int */
    const char *s; size_t n; /* string */
    list *l;
    dict *d;
} value;
struct list { value *v; size_t n, cap; };
struct dict { const char **k; value *v; size_t n, cap; int is_namespace; };

static value v_str(const char *s, size_t n) { return (value){.t = V_STR, .s = s, .n = n}; }
static value v_int(long long i) { return (value){.t = V_INT, .i = i}; }
static value v_bool(int b) { return (value){.t = V_BOOL, .i = b != 0}; }

static value v_strdup(jctx *c, const char *s, size_t n)
{
    char *p = jalloc(c, n + 1);
    memcpy(p, s, n);
    return v_str(p, n);
}

static void list_push(jctx *c, list *l, value v)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        value *nv = jalloc(c, cap * sizeof *nv);
        if (l->n) memcpy(nv, l->v, l->n * sizeof *nv);
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = v;
}

static value *dict_find(dict *d, const char *k, size_t n)
{
    for (size_t i = 0; i < d->n; i++)
        if (strlen(d->k[i]) == n && !memcmp(d->k[i], k, n)) return &d->v[i];
    return NULL;
}

static void dict_set(jctx *c, dict *d, const char *k, size_t n, value v)
{
    value *slot = dict_find(d, k, n);
    if (slot) {
        *slot = v;
        return;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 8;
        const char **nk = jalloc(c, cap * sizeof *nk);
        value *nv = jalloc(c, cap * sizeof *nv);
        if (d->n) {
            memcpy(nk, d->k, d->n * sizeof *nk);
            memcpy(nv, d->v, d->n * sizeof *nv);
        }
        d->k = nk;
        d->v = nv;
        d->cap = cap;
    }
    d->k[d->n] = v_strdup(c, k, n).s;
    d->v[d->n++] = v;
}

static int truthy(value v)
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

typedef struct sbuf { char *p; size_t n, cap; jctx *c; } sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->n + n + 1) * 2;
        char *p = jalloc(b->c, cap);
        if (b->n) memcpy(p, b->p, b->n);
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void sb_puts(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void json_string(sbuf *b, const char *s, size_t n)
{
    sb_put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        char esc[8];
        if (ch == '"' || ch == '\\') {
            esc[0] = '\\', esc[1] = (char)ch;
            sb_put(b, esc, 2);
        } else if (ch == '\n') sb_put(b, "\\n", 2);
        else if (ch == '\t') sb_put(b, "\\t", 2);
        else if (ch == '\r') sb_put(b, "\\r", 2);
        else if (ch < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", ch);
            sb_put(b, esc, 6);
        } else sb_put(b, (const char *)&s[i], 1);
    }
    sb_put(b, "\"", 1);
}

static void to_json(sbuf *b, value v)
{
    char num[32];
    switch (v.t) {
    case V_UNDEF: case V_NONE: sb_puts(b, "null"); break;
    case V_BOOL: sb_puts(b, v.i ? "true" : "false"); break;
    case V_INT: snprintf(num, sizeof num, "%lld", v.i); sb_puts(b, num); break;
    case V_STR: json_string(b, v.s, v.n); break;
    case V_LIST:
        sb_put(b, "[", 1);
        for (size_t i = 0; i < v.l->n; i++) {
            if (i) sb_put(b, ", ", 2);
            to_json(b, v.l->v[i]);
        }
        sb_put(b, "]", 1);
        break;
    case V_DICT:
        sb_put(b, "{", 1);
        for (size_t i = 0; i < v.d->n; i++) {
            if (i) sb_put(b, ", ", 2);
            json_string(b, v.d->k[i], strlen(v.d->k[i]));
            sb_put(b, ": ", 2);
            to_json(b, v.d->v[i]);
        }
        sb_put(b, "}", 1);
        break;
    }
}

/* str(v) as Jinja prints it. */
static void to_text(sbuf *b, value v)
{
    char num[32];
    switch (v.t) {
    case V_UNDEF: break;
    case V_NONE: sb_puts(b, "None"); break;
    case V_BOOL: sb_puts(b, v.i ? "True" : "False"); break;
    case V_INT: snprintf(num, sizeof num, "%lld", v.i); sb_puts(b, num); break;
    case V_STR: sb_put(b, v.s, v.n); break;
    case V_LIST: case V_DICT: to_json(b, v); break;
    }
}

static value as_string(jctx *c, value v)
{
    if (v.t == V_STR) return v;
    sbuf b = {.c = c};
    to_text(&b, v);
    return b.p ? v_str(b.p, b.n) : v_str("", 0);
}

static int equal(value a, value b)
{
    if ((a.t == V_INT || a.t == V_BOOL) && (b.t == V_INT || b.t == V_BOOL)) return a.i == b.i;
    if (a.t != b.t) return (a.t == V_UNDEF || a.t == V_NONE) && (b.t == V_UNDEF || b.t == V_NONE) && a.t == b.t;
    if (a.t == V_STR) return a.n == b.n && !memcmp(a.s, b.s, a.n);
    if (a.t == V_NONE || a.t == V_UNDEF) return 1;
    if (a.t == V_LIST) {
        if (a.l->n != b.l->n) return 0;
        for (size_t i = 0; i < a.l->n; i++)
            if (!equal(a.l->v[i], b.l->v[i])) return 0;
        return 1;
    }
    return a.d == b.d;
}

/* ---- lexer ---- */

typedef enum tkind {
    T_TEXT, T_VAR_BEGIN, T_VAR_END, T_BLOCK_BEGIN, T_BLOCK_END, T_NAME, T_STRING, T_INT, T_OP, T_EOF
} tkind;
typedef struct token { tkind k; const char *s; size_t n; long long i; size_t line; } token;
typedef struct lexer { jctx *c; token *v; size_t n, cap; } lexer;

static void lex_push(lexer *lx, token t)
{
    if (lx->n == lx->cap) {
        size_t cap = lx->cap ? lx->cap * 2 : 256;
        token *nv = jalloc(lx->c, cap * sizeof *nv);
        if (lx->n) memcpy(nv, lx->v, lx->n * sizeof *nv);
        lx->v = nv;
        lx->cap = cap;
    }
    lx->v[lx->n++] = t;
}

static size_t line_of(const char *start, const char *p)
{
    size_t l = 1;
    for (; start < p; start++) l += *start == '\n';
    return l;
}

static void lex(lexer *lx, const char *src)
{
    jctx *c = lx->c;
    const char *p = src;
    int strip_next = 0, trim_newline = 0;
    while (*p) {
        const char *tag = p;
        while (*tag && !(tag[0] == '{' && (tag[1] == '{' || tag[1] == '%' || tag[1] == '#'))) tag++;
        /* The text before the tag, with whitespace control applied. */
        const char *ts = p, *te = tag;
        if (strip_next)
            while (ts < te && strchr(" \t\r\n", *ts)) ts++;
        else if (trim_newline && ts < te && *ts == '\n') ts++;
        else if (trim_newline && te - ts >= 2 && ts[0] == '\r' && ts[1] == '\n') ts += 2;
        if (*tag) {
            int minus = tag[2] == '-', plus = tag[2] == '+';
            if (minus) {
                while (te > ts && strchr(" \t\r\n", te[-1])) te--;
            } else if (tag[1] != '{' && !plus) { /* lstrip_blocks: spaces from the line start */
                const char *q = te;
                while (q > ts && (q[-1] == ' ' || q[-1] == '\t')) q--;
                if (q == src || q[-1] == '\n') te = q;
            }
        }
        if (te > ts) lex_push(lx, (token){T_TEXT, ts, (size_t)(te - ts), 0, line_of(src, ts)});
        if (!*tag) break;
        strip_next = trim_newline = 0;
        char kind = tag[1];
        p = tag + 2 + (tag[2] == '-' || tag[2] == '+');
        if (kind == '#') {
            const char *e = strstr(p, "#}");
            if (!e) jfail(c, WGT_ERR_FORMAT, "line %zu: comment without #}", line_of(src, tag));
            strip_next = e > p && e[-1] == '-';
            trim_newline = !strip_next;
            p = e + 2;
            continue;
        }
        lex_push(lx, (token){kind == '{' ? T_VAR_BEGIN : T_BLOCK_BEGIN, tag, 2, 0, line_of(src, tag)});
        const char close = kind == '{' ? '}' : '%';
        for (;;) {
            while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
            size_t line = line_of(src, p);
            if (!*p) jfail(c, WGT_ERR_FORMAT, "line %zu: tag not closed", line_of(src, tag));
            if ((p[0] == '-' || p[0] == '+') && p[1] == close && p[2] == '}') {
                strip_next = p[0] == '-';
                p += 1;
            }
            if (p[0] == close && p[1] == '}') {
                lex_push(lx, (token){kind == '{' ? T_VAR_END : T_BLOCK_END, p, 2, 0, line});
                if (kind == '%' && !strip_next) trim_newline = 1;
                p += 2;
                break;
            }
            if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_') {
                const char *s = p;
                while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' || (*p >= '0' && *p <= '9')) p++;
                lex_push(lx, (token){T_NAME, s, (size_t)(p - s), 0, line});
            } else if (*p >= '0' && *p <= '9') {
                long long v = 0;
                while (*p >= '0' && *p <= '9') v = v * 10 + (*p++ - '0');
                if (*p == '.' && p[1] >= '0' && p[1] <= '9') jfail(c, WGT_ERR_UNSUPPORTED, "line %zu: float literals", line);
                lex_push(lx, (token){T_INT, NULL, 0, v, line});
            } else if (*p == '\'' || *p == '"') {
                char q = *p++;
                sbuf b = {.c = c};
                while (*p && *p != q) {
                    if (*p == '\\' && p[1]) {
                        p++;
                        char e = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p == 'r' ? '\r' : *p;
                        sb_put(&b, &e, 1);
                        p++;
                    } else sb_put(&b, p++, 1);
                }
                if (!*p) jfail(c, WGT_ERR_FORMAT, "line %zu: string not closed", line);
                p++;
                lex_push(lx, (token){T_STRING, b.p ? b.p : "", b.n, 0, line});
            } else {
                static const char *const ops[] = {"==", "!=", "<=", ">=", "//", "**", "(", ")", "[", "]", "{", "}", ".", ",",
                                                  ":", "|", "~", "+", "-", "*", "/", "%", "<", ">", "="};
                size_t k;
                for (k = 0; k < sizeof ops / sizeof ops[0]; k++)
                    if (!strncmp(p, ops[k], strlen(ops[k]))) break;
                if (k == sizeof ops / sizeof ops[0]) jfail(c, WGT_ERR_FORMAT, "line %zu: unexpected character '%c'", line, *p);
                lex_push(lx, (token){T_OP, ops[k], strlen(ops[k]), 0, line});
                p += strlen(ops[k]);
            }
        }
    }
    lex_push(lx, (token){T_EOF, "", 0, 0, line_of(src, p)});
}

/* ---- parser: the template becomes a tree of nodes ---- */

typedef enum nkind {
    N_BLOCK, N_TEXT, N_OUT, N_IF, N_FOR, N_SET,
    E_LIT, E_NAME, E_ATTR, E_INDEX, E_SLICE, E_CALL, E_FILTER, E_TEST, E_BIN, E_NOT, E_NEG, E_AND, E_OR, E_COND,
    E_LIST, E_DICT
} nkind;

typedef struct node node;
struct node {
    nkind k;
    const char *op;            /* E_BIN operator; E_ATTR/E_FILTER/E_TEST/E_NAME name; N_SET/N_FOR targets */
    size_t opn;
    const char *op2; size_t op2n; /* second for-target, or the attribute of "set ns.attr" */
    int negate;                /* E_TEST "is not" */
    value lit;
    node *a, *b, *c, *d;       /* children: operands, condition, bodies */
    node **items; size_t n;    /* N_BLOCK statements; E_CALL/E_FILTER args; E_LIST/E_DICT entries */
    const char **kw; size_t *kwn; /* keyword names of args (NULL entries for positional) */
    size_t line;
};

typedef struct parser { jctx *c; token *t; size_t i; } parser;

static token *peek(parser *ps) { return &ps->t[ps->i]; }
static int is_op(const token *t, const char *op) { return t->k == T_OP && t->n == strlen(op) && !memcmp(t->s, op, t->n); }
static int is_name(const token *t, const char *s) { return t->k == T_NAME && t->n == strlen(s) && !memcmp(t->s, s, t->n); }

static void expect_op(parser *ps, const char *op)
{
    if (!is_op(peek(ps), op)) jfail(ps->c, WGT_ERR_FORMAT, "line %zu: expected '%s'", peek(ps)->line, op);
    ps->i++;
}

static node *mk(parser *ps, nkind k)
{
    node *n = jalloc(ps->c, sizeof *n);
    n->k = k;
    n->line = peek(ps)->line;
    return n;
}

static void add_item(parser *ps, node *n, node *item, const char *kw, size_t kwn)
{
    node **items = jalloc(ps->c, (n->n + 1) * sizeof *items);
    const char **k = jalloc(ps->c, (n->n + 1) * sizeof *k);
    size_t *kl = jalloc(ps->c, (n->n + 1) * sizeof *kl);
    if (n->n) {
        memcpy(items, n->items, n->n * sizeof *items);
        memcpy(k, n->kw, n->n * sizeof *k);
        memcpy(kl, n->kwn, n->n * sizeof *kl);
    }
    items[n->n] = item;
    k[n->n] = kw;
    kl[n->n] = kwn;
    n->items = items;
    n->kw = k;
    n->kwn = kl;
    n->n++;
}

static node *parse_expr(parser *ps);

static void parse_args(parser *ps, node *call)
{
    expect_op(ps, "(");
    while (!is_op(peek(ps), ")")) {
        const char *kw = NULL;
        size_t kwn = 0;
        if (peek(ps)->k == T_NAME && is_op(&ps->t[ps->i + 1], "=")) {
            kw = peek(ps)->s;
            kwn = peek(ps)->n;
            ps->i += 2;
        }
        add_item(ps, call, parse_expr(ps), kw, kwn);
        if (!is_op(peek(ps), ",")) break;
        ps->i++;
    }
    expect_op(ps, ")");
}

static node *parse_primary(parser *ps)
{
    token *t = peek(ps);
    node *n;
    if (t->k == T_STRING) {
        n = mk(ps, E_LIT);
        n->lit = v_str(t->s, t->n);
        ps->i++;
        /* adjacent string literals concatenate */
        while (peek(ps)->k == T_STRING) {
            sbuf b = {.c = ps->c};
            sb_put(&b, n->lit.s, n->lit.n);
            sb_put(&b, peek(ps)->s, peek(ps)->n);
            n->lit = v_str(b.p, b.n);
            ps->i++;
        }
    } else if (t->k == T_INT) {
        n = mk(ps, E_LIT);
        n->lit = v_int(t->i);
        ps->i++;
    } else if (t->k == T_NAME) {
        n = mk(ps, E_LIT);
        ps->i++;
        if (is_name(t, "true") || is_name(t, "True")) n->lit = v_bool(1);
        else if (is_name(t, "false") || is_name(t, "False")) n->lit = v_bool(0);
        else if (is_name(t, "none") || is_name(t, "None")) n->lit = (value){.t = V_NONE};
        else {
            n->k = E_NAME;
            n->op = t->s;
            n->opn = t->n;
        }
    } else if (is_op(t, "(")) {
        ps->i++;
        n = parse_expr(ps);
        expect_op(ps, ")");
    } else if (is_op(t, "[")) {
        ps->i++;
        n = mk(ps, E_LIST);
        while (!is_op(peek(ps), "]")) {
            add_item(ps, n, parse_expr(ps), NULL, 0);
            if (!is_op(peek(ps), ",")) break;
            ps->i++;
        }
        expect_op(ps, "]");
    } else if (is_op(t, "{")) {
        ps->i++;
        n = mk(ps, E_DICT);
        while (!is_op(peek(ps), "}")) {
            add_item(ps, n, parse_expr(ps), NULL, 0);
            expect_op(ps, ":");
            add_item(ps, n, parse_expr(ps), NULL, 0);
            if (!is_op(peek(ps), ",")) break;
            ps->i++;
        }
        expect_op(ps, "}");
    } else {
        jfail(ps->c, WGT_ERR_FORMAT, "line %zu: unexpected '%.*s' in an expression", t->line, (int)t->n, t->s);
    }
    /* postfix: .name, [index], [a:b:c], (args), | filter */
    for (;;) {
        t = peek(ps);
        if (is_op(t, ".")) {
            ps->i++;
            if (peek(ps)->k != T_NAME) jfail(ps->c, WGT_ERR_FORMAT, "line %zu: expected a name after '.'", t->line);
            node *a = mk(ps, E_ATTR);
            a->a = n;
            a->op = peek(ps)->s;
            a->opn = peek(ps)->n;
            ps->i++;
            n = a;
        } else if (is_op(t, "[")) {
            ps->i++;
            node *parts[3] = {NULL, NULL, NULL};
            int colons = 0;
            for (;;) {
                if (is_op(peek(ps), "]")) break;
                if (is_op(peek(ps), ":")) {
                    if (++colons > 2) jfail(ps->c, WGT_ERR_FORMAT, "line %zu: bad slice", t->line);
                    ps->i++;
                    continue;
                }
                parts[colons] = parse_expr(ps);
            }
            expect_op(ps, "]");
            node *a = mk(ps, colons ? E_SLICE : E_INDEX);
            a->a = n;
            a->b = parts[0];
            a->c = parts[1];
            a->d = parts[2];
            n = a;
        } else if (is_op(t, "(")) {
            node *call = mk(ps, E_CALL);
            call->a = n;
            parse_args(ps, call);
            n = call;
        } else if (is_op(t, "|")) {
            ps->i++;
            if (peek(ps)->k != T_NAME) jfail(ps->c, WGT_ERR_FORMAT, "line %zu: expected a filter name after '|'", t->line);
            node *f = mk(ps, E_FILTER);
            f->a = n;
            f->op = peek(ps)->s;
            f->opn = peek(ps)->n;
            ps->i++;
            if (is_op(peek(ps), "(")) parse_args(ps, f);
            n = f;
        } else {
            return n;
        }
    }
}

static node *parse_unary(parser *ps)
{
    if (is_op(peek(ps), "-")) {
        node *n = mk(ps, E_NEG);
        ps->i++;
        n->a = parse_unary(ps);
        return n;
    }
    return parse_primary(ps);
}

static node *bin(parser *ps, const char *op, node *a, node *b)
{
    node *n = mk(ps, E_BIN);
    n->op = op;
    n->opn = strlen(op);
    n->a = a;
    n->b = b;
    return n;
}

static node *parse_math2(parser *ps)
{
    node *n = parse_unary(ps);
    while (is_op(peek(ps), "*") || is_op(peek(ps), "/") || is_op(peek(ps), "//") || is_op(peek(ps), "%")) {
        const char *op = peek(ps)->s;
        size_t opn = peek(ps)->n;
        ps->i++;
        n = bin(ps, opn == 2 ? "//" : *op == '*' ? "*" : *op == '/' ? "/" : "%", n, parse_unary(ps));
    }
    return n;
}

static node *parse_concat(parser *ps)
{
    node *n = parse_math2(ps);
    while (is_op(peek(ps), "~")) {
        ps->i++;
        n = bin(ps, "~", n, parse_math2(ps));
    }
    return n;
}

static node *parse_math1(parser *ps)
{
    node *n = parse_concat(ps);
    while (is_op(peek(ps), "+") || is_op(peek(ps), "-")) {
        const char *op = is_op(peek(ps), "+") ? "+" : "-";
        ps->i++;
        n = bin(ps, op, n, parse_concat(ps));
    }
    return n;
}

static node *parse_compare(parser *ps)
{
    node *n = parse_math1(ps);
    for (;;) {
        token *t = peek(ps);
        static const char *const cmp[] = {"==", "!=", "<=", ">=", "<", ">"};
        int found = 0;
        for (size_t k = 0; k < 6 && !found; k++)
            if (is_op(t, cmp[k])) {
                ps->i++;
                n = bin(ps, cmp[k], n, parse_math1(ps));
                found = 1;
            }
        if (found) continue;
        if (is_name(t, "in")) {
            ps->i++;
            n = bin(ps, "in", n, parse_math1(ps));
        } else if (is_name(t, "not") && is_name(&ps->t[ps->i + 1], "in")) {
            ps->i += 2;
            node *x = mk(ps, E_NOT);
            x->a = bin(ps, "in", n, parse_math1(ps));
            n = x;
        } else if (is_name(t, "is")) {
            ps->i++;
            node *x = mk(ps, E_TEST);
            if (is_name(peek(ps), "not")) {
                x->negate = 1;
                ps->i++;
            }
            if (peek(ps)->k != T_NAME) jfail(ps->c, WGT_ERR_FORMAT, "line %zu: expected a test name after 'is'", t->line);
            x->op = peek(ps)->s;
            x->opn = peek(ps)->n;
            ps->i++;
            x->a = n;
            if (is_op(peek(ps), "(")) parse_args(ps, x);
            else if (peek(ps)->k == T_STRING || peek(ps)->k == T_INT) add_item(ps, x, parse_primary(ps), NULL, 0);
            n = x;
        } else {
            return n;
        }
    }
}

static node *parse_not(parser *ps)
{
    if (is_name(peek(ps), "not")) {
        node *n = mk(ps, E_NOT);
        ps->i++;
        n->a = parse_not(ps);
        return n;
    }
    return parse_compare(ps);
}

static node *parse_and(parser *ps)
{
    node *n = parse_not(ps);
    while (is_name(peek(ps), "and")) {
        ps->i++;
        node *x = mk(ps, E_AND);
        x->a = n;
        x->b = parse_not(ps);
        n = x;
    }
    return n;
}

static node *parse_or(parser *ps)
{
    node *n = parse_and(ps);
    while (is_name(peek(ps), "or")) {
        ps->i++;
        node *x = mk(ps, E_OR);
        x->a = n;
        x->b = parse_and(ps);
        n = x;
    }
    return n;
}

static node *parse_expr(parser *ps)
{
    node *n = parse_or(ps);
    if (is_name(peek(ps), "if")) {
        ps->i++;
        node *x = mk(ps, E_COND);
        x->a = parse_or(ps);
        x->b = n;
        if (is_name(peek(ps), "else")) {
            ps->i++;
            x->c = parse_expr(ps);
        }
        n = x;
    }
    return n;
}

static void expect_block_end(parser *ps)
{
    if (peek(ps)->k != T_BLOCK_END)
        jfail(ps->c, WGT_ERR_FORMAT, "line %zu: expected %%} but found '%.*s'", peek(ps)->line, (int)peek(ps)->n, peek(ps)->s);
    ps->i++;
}

/* Parse statements until a {% name %} with one of the given end names; returns the block and
 * leaves ps at that name. */
static node *parse_block(parser *ps, const char *const *ends, size_t n_ends)
{
    node *blk = mk(ps, N_BLOCK);
    for (;;) {
        token *t = peek(ps);
        if (t->k == T_EOF) {
            if (!n_ends) return blk;
            jfail(ps->c, WGT_ERR_FORMAT, "template ends inside a block: {%% %s %%} missing", ends[n_ends - 1]);
        }
        if (t->k == T_TEXT) {
            node *x = mk(ps, N_TEXT);
            x->lit = v_str(t->s, t->n);
            add_item(ps, blk, x, NULL, 0);
            ps->i++;
            continue;
        }
        if (t->k == T_VAR_BEGIN) {
            ps->i++;
            node *x = mk(ps, N_OUT);
            x->a = parse_expr(ps);
            if (peek(ps)->k != T_VAR_END) jfail(ps->c, WGT_ERR_FORMAT, "line %zu: expected }}", peek(ps)->line);
            ps->i++;
            add_item(ps, blk, x, NULL, 0);
            continue;
        }
        if (t->k != T_BLOCK_BEGIN) jfail(ps->c, WGT_ERR_INTERNAL, "line %zu: unexpected token", t->line);
        token *kw = &ps->t[ps->i + 1];
        for (size_t e = 0; e < n_ends; e++)
            if (is_name(kw, ends[e])) {
                ps->i++;
                return blk;
            }
        ps->i += 2;
        if (is_name(kw, "if")) {
            node *x = mk(ps, N_IF), *cur = x;
            x->a = parse_expr(ps);
            expect_block_end(ps);
            static const char *const if_ends[] = {"elif", "else", "endif"};
            for (;;) {
                cur->b = parse_block(ps, if_ends, 3);
                token *e = peek(ps);
                ps->i++;
                if (is_name(e, "elif")) {
                    node *y = mk(ps, N_IF);
                    y->a = parse_expr(ps);
                    expect_block_end(ps);
                    node *wrap = mk(ps, N_BLOCK);
                    add_item(ps, wrap, y, NULL, 0);
                    cur->c = wrap;
                    cur = y;
                } else if (is_name(e, "else")) {
                    expect_block_end(ps);
                    static const char *const else_end[] = {"endif"};
                    cur->c = parse_block(ps, else_end, 1);
                    ps->i++;
                    expect_block_end(ps);
                    break;
                } else {
                    expect_block_end(ps);
                    break;
                }
            }
            add_item(ps, blk, x, NULL, 0);
        } else if (is_name(kw, "for")) {
            node *x = mk(ps, N_FOR);
            if (peek(ps)->k != T_NAME) jfail(ps->c, WGT_ERR_FORMAT, "line %zu: expected a loop variable", kw->line);
            x->op = peek(ps)->s;
            x->opn = peek(ps)->n;
            ps->i++;
            if (is_op(peek(ps), ",")) {
                ps->i++;
                x->op2 = peek(ps)->s;
                x->op2n = peek(ps)->n;
                ps->i++;
            }
            if (!is_name(peek(ps), "in")) jfail(ps->c, WGT_ERR_FORMAT, "line %zu: expected 'in' in for", kw->line);
            ps->i++;
            x->a = parse_or(ps); /* not parse_expr: a trailing "if" filters the loop */
            if (is_name(peek(ps), "if")) {
                ps->i++;
                x->d = parse_expr(ps);
            }
            if (is_name(peek(ps), "recursive")) jfail(ps->c, WGT_ERR_UNSUPPORTED, "line %zu: recursive loops", kw->line);
            expect_block_end(ps);
            static const char *const for_ends[] = {"else", "endfor"};
            x->b = parse_block(ps, for_ends, 2);
            if (is_name(peek(ps), "else")) {
                ps->i++;
                expect_block_end(ps);
                x->c = parse_block(ps, for_ends + 1, 1);
            }
            ps->i++;
            expect_block_end(ps);
            add_item(ps, blk, x, NULL, 0);
        } else if (is_name(kw, "set")) {
            node *x = mk(ps, N_SET);
            if (peek(ps)->k != T_NAME) jfail(ps->c, WGT_ERR_FORMAT, "line %zu: expected a name after set", kw->line);
            x->op = peek(ps)->s;
            x->opn = peek(ps)->n;
            ps->i++;
            if (is_op(peek(ps), ".")) {
                ps->i++;
                x->op2 = peek(ps)->s;
                x->op2n = peek(ps)->n;
                ps->i++;
            }
            if (!is_op(peek(ps), "="))
                jfail(ps->c, WGT_ERR_UNSUPPORTED, "line %zu: block set ({%% set x %%}...{%% endset %%})", kw->line);
            ps->i++;
            x->a = parse_expr(ps);
            expect_block_end(ps);
            add_item(ps, blk, x, NULL, 0);
        } else {
            jfail(ps->c, WGT_ERR_UNSUPPORTED, "line %zu: the statement {%% %.*s %%} is outside the supported Jinja subset",
                  kw->line, (int)kw->n, kw->s);
        }
    }
}

/* ---- evaluation ---- */

typedef struct frame { dict vars; struct frame *up; } frame;
typedef struct env { jctx *c; frame *top; sbuf *out; } env;

static value lookup(env *e, const char *name, size_t n)
{
    for (frame *f = e->top; f; f = f->up) {
        value *v = dict_find(&f->vars, name, n);
        if (v) return *v;
    }
    return (value){.t = V_UNDEF};
}

static value eval(env *e, node *n);

static value arg(env *e, node *call, size_t i, value dflt)
{
    return i < call->n ? eval(e, call->items[i]) : dflt;
}

static int name_is(const char *s, size_t n, const char *lit) { return n == strlen(lit) && !memcmp(s, lit, n); }

static value strip_chars(jctx *c, value s, value chars, int left, int right)
{
    const char *set = chars.t == V_STR ? chars.s : " \t\n\r\v\f";
    size_t setn = chars.t == V_STR ? chars.n : 6;
    size_t a = 0, b = s.n;
    while (left && a < b && memchr(set, s.s[a], setn)) a++;
    while (right && b > a && memchr(set, s.s[b - 1], setn)) b--;
    (void)c;
    return v_str(s.s + a, b - a);
}

static value str_replace(jctx *c, value s, value from, value to)
{
    if (from.t != V_STR || to.t != V_STR || !from.n) return s;
    sbuf b = {.c = c};
    for (size_t i = 0; i < s.n;) {
        if (i + from.n <= s.n && !memcmp(s.s + i, from.s, from.n)) {
            sb_put(&b, to.s, to.n);
            i += from.n;
        } else sb_put(&b, s.s + i++, 1);
    }
    return b.p ? v_str(b.p, b.n) : v_str("", 0);
}

static value call_method(env *e, node *call, value obj, const char *m, size_t mn)
{
    jctx *c = e->c;
    value none = {.t = V_NONE};
    if (obj.t == V_STR) {
        if (name_is(m, mn, "strip")) return strip_chars(c, obj, arg(e, call, 0, none), 1, 1);
        if (name_is(m, mn, "lstrip")) return strip_chars(c, obj, arg(e, call, 0, none), 1, 0);
        if (name_is(m, mn, "rstrip")) return strip_chars(c, obj, arg(e, call, 0, none), 0, 1);
        if (name_is(m, mn, "startswith") || name_is(m, mn, "endswith")) {
            value p = arg(e, call, 0, none);
            if (p.t != V_STR) jfail(c, WGT_ERR_INVALID_ARGUMENT, "line %zu: %.*s needs a string", call->line, (int)mn, m);
            if (p.n > obj.n) return v_bool(0);
            return v_bool(!memcmp(m[0] == 's' ? obj.s : obj.s + obj.n - p.n, p.s, p.n));
        }
        if (name_is(m, mn, "upper") || name_is(m, mn, "lower") || name_is(m, mn, "title")) {
            value r = v_strdup(c, obj.s, obj.n);
            char *p = (char *)r.s;
            for (size_t i = 0; i < r.n; i++) {
                int up = m[0] == 'u' || (m[0] == 't' && (i == 0 || p[i - 1] == ' '));
                if (up && p[i] >= 'a' && p[i] <= 'z') p[i] -= 32;
                else if (!up && p[i] >= 'A' && p[i] <= 'Z') p[i] += 32;
            }
            return r;
        }
        if (name_is(m, mn, "replace")) return str_replace(c, obj, arg(e, call, 0, none), arg(e, call, 1, none));
        if (name_is(m, mn, "split")) {
            value sep = arg(e, call, 0, none);
            list *l = jalloc(c, sizeof *l);
            if (sep.t != V_STR) { /* split on runs of whitespace */
                size_t i = 0;
                while (i < obj.n) {
                    while (i < obj.n && strchr(" \t\n\r", obj.s[i])) i++;
                    size_t s = i;
                    while (i < obj.n && !strchr(" \t\n\r", obj.s[i])) i++;
                    if (i > s) list_push(c, l, v_str(obj.s + s, i - s));
                }
            } else {
                if (!sep.n) jfail(c, WGT_ERR_INVALID_ARGUMENT, "line %zu: split with an empty separator", call->line);
                size_t s = 0;
                for (size_t i = 0; i + sep.n <= obj.n;) {
                    if (!memcmp(obj.s + i, sep.s, sep.n)) {
                        list_push(c, l, v_str(obj.s + s, i - s));
                        i += sep.n;
                        s = i;
                    } else i++;
                }
                list_push(c, l, v_str(obj.s + s, obj.n - s));
            }
            return (value){.t = V_LIST, .l = l};
        }
    } else if (obj.t == V_DICT) {
        if (name_is(m, mn, "items") || name_is(m, mn, "keys") || name_is(m, mn, "values")) {
            list *l = jalloc(c, sizeof *l);
            for (size_t i = 0; i < obj.d->n; i++) {
                value k = v_str(obj.d->k[i], strlen(obj.d->k[i]));
                if (m[0] == 'k') list_push(c, l, k);
                else if (m[0] == 'v') list_push(c, l, obj.d->v[i]);
                else {
                    list *pair = jalloc(c, sizeof *pair);
                    list_push(c, pair, k);
                    list_push(c, pair, obj.d->v[i]);
                    list_push(c, l, (value){.t = V_LIST, .l = pair});
                }
            }
            return (value){.t = V_LIST, .l = l};
        }
        if (name_is(m, mn, "get")) {
            value k = arg(e, call, 0, none);
            value *v = k.t == V_STR ? dict_find(obj.d, k.s, k.n) : NULL;
            return v ? *v : arg(e, call, 1, none);
        }
    }
    jfail(c, WGT_ERR_UNSUPPORTED, "line %zu: method '%.*s' is outside the supported Jinja subset", call->line, (int)mn, m);
}

static value get_attr(env *e, value obj, const char *k, size_t kn)
{
    if (obj.t == V_DICT) {
        value *v = dict_find(obj.d, k, kn);
        if (v) return *v;
    }
    (void)e;
    return (value){.t = V_UNDEF};
}

static value call(env *e, node *n)
{
    jctx *c = e->c;
    node *f = n->a;
    if (f->k == E_ATTR) return call_method(e, n, eval(e, f->a), f->op, f->opn);
    if (f->k != E_NAME) jfail(c, WGT_ERR_UNSUPPORTED, "line %zu: calling an expression", n->line);
    if (name_is(f->op, f->opn, "raise_exception")) {
        value m = as_string(c, arg(e, n, 0, v_str("", 0)));
        jfail(c, WGT_ERR_INVALID_ARGUMENT, "the template raised an exception: %.*s", (int)m.n, m.s);
    }
    if (name_is(f->op, f->opn, "namespace")) {
        dict *d = jalloc(c, sizeof *d);
        d->is_namespace = 1;
        for (size_t i = 0; i < n->n; i++)
            if (n->kw[i]) dict_set(c, d, n->kw[i], n->kwn[i], eval(e, n->items[i]));
        return (value){.t = V_DICT, .d = d};
    }
    if (name_is(f->op, f->opn, "range")) {
        value a = arg(e, n, 0, v_int(0)), b = arg(e, n, 1, (value){.t = V_UNDEF}), s = arg(e, n, 2, v_int(1));
        long long lo = b.t == V_UNDEF ? 0 : a.i, hi = b.t == V_UNDEF ? a.i : b.i;
        if (s.i == 0 || (hi - lo) / s.i > 1000000) jfail(c, WGT_ERR_LIMIT, "line %zu: range too large", n->line);
        list *l = jalloc(c, sizeof *l);
        for (long long i = lo; s.i > 0 ? i < hi : i > hi; i += s.i) list_push(c, l, v_int(i));
        return (value){.t = V_LIST, .l = l};
    }
    jfail(c, WGT_ERR_UNSUPPORTED, "line %zu: function '%.*s' is outside the supported Jinja subset", n->line, (int)f->opn, f->op);
}

static value filter(env *e, node *n)
{
    jctx *c = e->c;
    value v = eval(e, n->a), none = {.t = V_NONE};
    const char *f = n->op;
    size_t fn = n->opn;
    if (name_is(f, fn, "trim")) return v.t == V_STR ? strip_chars(c, v, arg(e, n, 0, none), 1, 1) : v;
    if (name_is(f, fn, "length") || name_is(f, fn, "count"))
        return v_int(v.t == V_STR ? (long long)v.n : v.t == V_LIST ? (long long)v.l->n : v.t == V_DICT ? (long long)v.d->n : 0);
    if (name_is(f, fn, "upper") || name_is(f, fn, "lower")) return v.t == V_STR ? call_method(e, n, v, f, fn) : v;
    if (name_is(f, fn, "capitalize") && v.t == V_STR) {
        value r = call_method(e, n, v, "lower", 5);
        if (r.n && r.s[0] >= 'a' && r.s[0] <= 'z') ((char *)r.s)[0] -= 32;
        return r;
    }
    if (name_is(f, fn, "replace") && v.t == V_STR) return str_replace(c, v, arg(e, n, 0, none), arg(e, n, 1, none));
    if (name_is(f, fn, "tojson")) {
        sbuf b = {.c = c};
        to_json(&b, v);
        return v_str(b.p, b.n);
    }
    if (name_is(f, fn, "string")) return as_string(c, v);
    if (name_is(f, fn, "int")) return v.t == V_STR ? v_int(strtoll(v_strdup(c, v.s, v.n).s, NULL, 10)) : v_int(v.i);
    if (name_is(f, fn, "default") || name_is(f, fn, "d")) {
        value b = arg(e, n, 1, v_bool(0));
        return v.t == V_UNDEF || (truthy(b) && !truthy(v)) ? arg(e, n, 0, v_str("", 0)) : v;
    }
    if ((name_is(f, fn, "first") || name_is(f, fn, "last")) && v.t == V_LIST)
        return v.l->n ? v.l->v[f[0] == 'f' ? 0 : v.l->n - 1] : (value){.t = V_UNDEF};
    if ((name_is(f, fn, "first") || name_is(f, fn, "last")) && v.t == V_STR)
        return v.n ? v_str(f[0] == 'f' ? v.s : v.s + v.n - 1, 1) : (value){.t = V_UNDEF};
    if (name_is(f, fn, "join") && v.t == V_LIST) {
        value sep = arg(e, n, 0, v_str("", 0));
        sbuf b = {.c = c};
        for (size_t i = 0; i < v.l->n; i++) {
            if (i) to_text(&b, sep);
            to_text(&b, v.l->v[i]);
        }
        return b.p ? v_str(b.p, b.n) : v_str("", 0);
    }
    if (name_is(f, fn, "list")) return v;
    if (name_is(f, fn, "items") && v.t == V_DICT) return call_method(e, n, v, "items", 5);
    if (name_is(f, fn, "reverse") && v.t == V_LIST) {
        list *l = jalloc(c, sizeof *l);
        for (size_t i = v.l->n; i > 0; i--) list_push(c, l, v.l->v[i - 1]);
        return (value){.t = V_LIST, .l = l};
    }
    jfail(c, WGT_ERR_UNSUPPORTED, "line %zu: filter '%.*s' is outside the supported Jinja subset", n->line, (int)fn, f);
}

static int test(env *e, node *n)
{
    value v = eval(e, n->a);
    const char *t = n->op;
    size_t tn = n->opn;
    if (name_is(t, tn, "defined")) return v.t != V_UNDEF;
    if (name_is(t, tn, "undefined")) return v.t == V_UNDEF;
    if (name_is(t, tn, "none")) return v.t == V_NONE;
    if (name_is(t, tn, "string")) return v.t == V_STR;
    if (name_is(t, tn, "number") || name_is(t, tn, "integer")) return v.t == V_INT;
    if (name_is(t, tn, "boolean")) return v.t == V_BOOL;
    if (name_is(t, tn, "true")) return v.t == V_BOOL && v.i;
    if (name_is(t, tn, "false")) return v.t == V_BOOL && !v.i;
    if (name_is(t, tn, "mapping")) return v.t == V_DICT;
    if (name_is(t, tn, "iterable")) return v.t == V_LIST || v.t == V_STR || v.t == V_DICT;
    if (name_is(t, tn, "sequence")) return v.t == V_LIST || v.t == V_STR;
    if (name_is(t, tn, "equalto") || name_is(t, tn, "eq")) return equal(v, arg(e, n, 0, (value){.t = V_UNDEF}));
    jfail(e->c, WGT_ERR_UNSUPPORTED, "line %zu: test '%.*s' is outside the supported Jinja subset", n->line, (int)tn, t);
}

static long long index_of(long long i, size_t n) { return i < 0 ? i + (long long)n : i; }

static value eval(env *e, node *n)
{
    jctx *c = e->c;
    switch (n->k) {
    case E_LIT: return n->lit;
    case E_NAME: return lookup(e, n->op, n->opn);
    case E_ATTR: return get_attr(e, eval(e, n->a), n->op, n->opn);
    case E_INDEX: {
        value o = eval(e, n->a), k = eval(e, n->b);
        if (o.t == V_DICT && k.t == V_STR) return get_attr(e, o, k.s, k.n);
        if (o.t == V_LIST && k.t == V_INT) {
            long long i = index_of(k.i, o.l->n);
            return i >= 0 && i < (long long)o.l->n ? o.l->v[i] : (value){.t = V_UNDEF};
        }
        if (o.t == V_STR && k.t == V_INT) {
            long long i = index_of(k.i, o.n);
            return i >= 0 && i < (long long)o.n ? v_str(o.s + i, 1) : (value){.t = V_UNDEF};
        }
        return (value){.t = V_UNDEF};
    }
    case E_SLICE: {
        value o = eval(e, n->a);
        size_t len = o.t == V_LIST ? o.l->n : o.t == V_STR ? o.n : 0;
        if (o.t != V_LIST && o.t != V_STR) jfail(c, WGT_ERR_INVALID_ARGUMENT, "line %zu: slicing a non-sequence", n->line);
        long long step = n->d ? eval(e, n->d).i : 1;
        if (step == 0) jfail(c, WGT_ERR_INVALID_ARGUMENT, "line %zu: slice step 0", n->line);
        long long lo, hi;
        if (step > 0) {
            lo = n->b ? index_of(eval(e, n->b).i, len) : 0;
            hi = n->c ? index_of(eval(e, n->c).i, len) : (long long)len;
            if (lo < 0) lo = 0;
            if (hi > (long long)len) hi = (long long)len;
        } else {
            lo = n->b ? index_of(eval(e, n->b).i, len) : (long long)len - 1;
            hi = n->c ? index_of(eval(e, n->c).i, len) : -1;
            if (lo >= (long long)len) lo = (long long)len - 1;
        }
        if (o.t == V_STR) {
            sbuf b = {.c = c};
            for (long long i = lo; step > 0 ? i < hi : i > hi; i += step) sb_put(&b, o.s + i, 1);
            return b.p ? v_str(b.p, b.n) : v_str("", 0);
        }
        list *l = jalloc(c, sizeof *l);
        for (long long i = lo; step > 0 ? i < hi : i > hi; i += step) list_push(c, l, o.l->v[i]);
        return (value){.t = V_LIST, .l = l};
    }
    case E_CALL: return call(e, n);
    case E_FILTER: return filter(e, n);
    case E_TEST: return v_bool(test(e, n) != n->negate);
    case E_NOT: return v_bool(!truthy(eval(e, n->a)));
    case E_NEG: return v_int(-eval(e, n->a).i);
    case E_AND: {
        value a = eval(e, n->a);
        return truthy(a) ? eval(e, n->b) : a;
    }
    case E_OR: {
        value a = eval(e, n->a);
        return truthy(a) ? a : eval(e, n->b);
    }
    case E_COND:
        return truthy(eval(e, n->a)) ? eval(e, n->b) : n->c ? eval(e, n->c) : (value){.t = V_UNDEF};
    case E_LIST: {
        list *l = jalloc(c, sizeof *l);
        for (size_t i = 0; i < n->n; i++) list_push(c, l, eval(e, n->items[i]));
        return (value){.t = V_LIST, .l = l};
    }
    case E_DICT: {
        dict *d = jalloc(c, sizeof *d);
        for (size_t i = 0; i + 1 < n->n; i += 2) {
            value k = as_string(c, eval(e, n->items[i]));
            dict_set(c, d, k.s, k.n, eval(e, n->items[i + 1]));
        }
        return (value){.t = V_DICT, .d = d};
    }
    case E_BIN: {
        value a = eval(e, n->a), b = eval(e, n->b);
        const char *op = n->op;
        if (!strcmp(op, "==")) return v_bool(equal(a, b));
        if (!strcmp(op, "!=")) return v_bool(!equal(a, b));
        if (!strcmp(op, "~")) {
            sbuf s = {.c = c};
            to_text(&s, a);
            to_text(&s, b);
            return s.p ? v_str(s.p, s.n) : v_str("", 0);
        }
        if (!strcmp(op, "in")) {
            if (b.t == V_STR && a.t == V_STR) {
                if (!a.n) return v_bool(1);
                for (size_t i = 0; i + a.n <= b.n; i++)
                    if (!memcmp(b.s + i, a.s, a.n)) return v_bool(1);
                return v_bool(0);
            }
            if (b.t == V_LIST) {
                for (size_t i = 0; i < b.l->n; i++)
                    if (equal(a, b.l->v[i])) return v_bool(1);
                return v_bool(0);
            }
            if (b.t == V_DICT) return v_bool(a.t == V_STR && dict_find(b.d, a.s, a.n));
            return v_bool(0);
        }
        if (!strcmp(op, "+") && (a.t == V_STR || b.t == V_STR)) {
            if (a.t != V_STR || b.t != V_STR)
                jfail(c, WGT_ERR_INVALID_ARGUMENT, "line %zu: '+' of a string and a non-string (use ~)", n->line);
            sbuf s = {.c = c};
            sb_put(&s, a.s, a.n);
            sb_put(&s, b.s, b.n);
            return s.p ? v_str(s.p, s.n) : v_str("", 0);
        }
        if (!strcmp(op, "+") && a.t == V_LIST && b.t == V_LIST) {
            list *l = jalloc(c, sizeof *l);
            for (size_t i = 0; i < a.l->n; i++) list_push(c, l, a.l->v[i]);
            for (size_t i = 0; i < b.l->n; i++) list_push(c, l, b.l->v[i]);
            return (value){.t = V_LIST, .l = l};
        }
        if (a.t == V_STR && b.t == V_STR && (op[0] == '<' || op[0] == '>')) {
            int r = memcmp(a.s, b.s, a.n < b.n ? a.n : b.n);
            if (!r) r = a.n < b.n ? -1 : a.n > b.n;
            return v_bool(!strcmp(op, "<") ? r < 0 : !strcmp(op, ">") ? r > 0 : !strcmp(op, "<=") ? r <= 0 : r >= 0);
        }
        if ((a.t != V_INT && a.t != V_BOOL) || (b.t != V_INT && b.t != V_BOOL))
            jfail(c, WGT_ERR_INVALID_ARGUMENT, "line %zu: '%s' needs numbers", n->line, op);
        long long x = a.i, y = b.i;
        if (!strcmp(op, "+")) return v_int(x + y);
        if (!strcmp(op, "-")) return v_int(x - y);
        if (!strcmp(op, "*")) return v_int(x * y);
        if (!strcmp(op, "<")) return v_bool(x < y);
        if (!strcmp(op, ">")) return v_bool(x > y);
        if (!strcmp(op, "<=")) return v_bool(x <= y);
        if (!strcmp(op, ">=")) return v_bool(x >= y);
        if (y == 0) jfail(c, WGT_ERR_INVALID_ARGUMENT, "line %zu: division by zero", n->line);
        if (!strcmp(op, "%")) return v_int(((x % y) + y) % y);
        return v_int(x / y); /* "/" on integers: floats are outside the subset */
    }
    default: jfail(c, WGT_ERR_INTERNAL, "line %zu: bad expression node", n->line);
    }
}

static void set_var(env *e, const char *name, size_t n, value v) { dict_set(e->c, &e->top->vars, name, n, v); }

static void exec_block(env *e, node *blk);

static void exec_for(env *e, node *n)
{
    jctx *c = e->c;
    value seq = eval(e, n->a);
    list *items;
    if (seq.t == V_LIST) items = seq.l;
    else if (seq.t == V_DICT) items = call_method(e, n, seq, "keys", 4).l;
    else if (seq.t == V_STR) {
        items = jalloc(c, sizeof *items);
        for (size_t i = 0; i < seq.n; i++) list_push(c, items, v_str(seq.s + i, 1));
    } else if (seq.t == V_UNDEF || seq.t == V_NONE) items = jalloc(c, sizeof *items);
    else jfail(c, WGT_ERR_INVALID_ARGUMENT, "line %zu: for over a non-sequence", n->line);
    frame f = {.up = e->top};
    e->top = &f;
    /* The loop filter picks the items first, so loop.index / last count the kept ones. */
    list *kept = items;
    if (n->d) {
        kept = jalloc(c, sizeof *kept);
        for (size_t i = 0; i < items->n; i++) {
            set_var(e, n->op, n->opn, items->v[i]);
            if (truthy(eval(e, n->d))) list_push(c, kept, items->v[i]);
        }
    }
    for (size_t i = 0; i < kept->n; i++) {
        value item = kept->v[i];
        if (n->op2) {
            if (item.t != V_LIST || item.l->n != 2) jfail(c, WGT_ERR_INVALID_ARGUMENT, "line %zu: cannot unpack into two names", n->line);
            set_var(e, n->op, n->opn, item.l->v[0]);
            set_var(e, n->op2, n->op2n, item.l->v[1]);
        } else set_var(e, n->op, n->opn, item);
        dict *loop = jalloc(c, sizeof *loop);
        size_t len = kept->n;
        dict_set(c, loop, "index", 5, v_int((long long)i + 1));
        dict_set(c, loop, "index0", 6, v_int((long long)i));
        dict_set(c, loop, "revindex", 8, v_int((long long)(len - i)));
        dict_set(c, loop, "revindex0", 9, v_int((long long)(len - i - 1)));
        dict_set(c, loop, "first", 5, v_bool(i == 0));
        dict_set(c, loop, "last", 4, v_bool(i + 1 == len));
        dict_set(c, loop, "length", 6, v_int((long long)len));
        dict_set(c, loop, "previtem", 8, i ? kept->v[i - 1] : (value){.t = V_UNDEF});
        dict_set(c, loop, "nextitem", 8, i + 1 < len ? kept->v[i + 1] : (value){.t = V_UNDEF});
        set_var(e, "loop", 4, (value){.t = V_DICT, .d = loop});
        exec_block(e, n->b);
    }
    if (!kept->n && n->c) exec_block(e, n->c);
    e->top = f.up;
}

static void exec_block(env *e, node *blk)
{
    for (size_t i = 0; blk && i < blk->n; i++) {
        node *n = blk->items[i];
        switch (n->k) {
        case N_TEXT: sb_put(e->out, n->lit.s, n->lit.n); break;
        case N_OUT: to_text(e->out, eval(e, n->a)); break;
        case N_IF:
            if (truthy(eval(e, n->a))) exec_block(e, n->b);
            else if (n->c) exec_block(e, n->c);
            break;
        case N_FOR: exec_for(e, n); break;
        case N_SET:
            if (n->op2) {
                value ns = lookup(e, n->op, n->opn);
                if (ns.t != V_DICT || !ns.d->is_namespace)
                    jfail(e->c, WGT_ERR_INVALID_ARGUMENT, "line %zu: set %.*s.%.*s: not a namespace", n->line, (int)n->opn, n->op,
                          (int)n->op2n, n->op2);
                dict_set(e->c, ns.d, n->op2, n->op2n, eval(e, n->a));
            } else set_var(e, n->op, n->opn, eval(e, n->a));
            break;
        default: jfail(e->c, WGT_ERR_INTERNAL, "line %zu: bad statement node", n->line);
        }
    }
}

static void arena_free(jctx *c)
{
    for (arena_block *b = c->blocks, *nb; b; b = nb) {
        nb = b->next;
        free(b);
    }
    free(c);
}

/* Lex, parse and run tmpl; the text lands in *result (arena memory). Errors longjmp. */
static void render(jctx *c, const char *tmpl, const wgt_chat_message *msgs, size_t n_msgs, int add_gen, const char *bos,
                   const char *eos, const char *const *vars, size_t n_vars, sbuf *result)
{
    lexer lx = {.c = c};
    /* Jinja drops one newline at the very end of a template (keep_trailing_newline off). */
    size_t tlen = strlen(tmpl);
    if (tlen && tmpl[tlen - 1] == '\n') {
        char *copy = jalloc(c, tlen);
        memcpy(copy, tmpl, tlen - 1);
        tmpl = copy;
    }
    lex(&lx, tmpl);
    parser ps = {c, lx.v, 0};
    node *root = parse_block(&ps, NULL, 0);
    frame globals = {0};
    env e = {c, &globals, result};
    list *ml = jalloc(c, sizeof *ml);
    for (size_t i = 0; i < n_msgs; i++) {
        if (!msgs[i].role || !msgs[i].content) jfail(c, WGT_ERR_INVALID_ARGUMENT, "message %zu has no role or content", i);
        dict *d = jalloc(c, sizeof *d);
        dict_set(c, d, "role", 4, v_str(msgs[i].role, strlen(msgs[i].role)));
        dict_set(c, d, "content", 7, v_str(msgs[i].content, strlen(msgs[i].content)));
        list_push(c, ml, (value){.t = V_DICT, .d = d});
    }
    set_var(&e, "messages", 8, (value){.t = V_LIST, .l = ml});
    set_var(&e, "add_generation_prompt", 21, v_bool(add_gen));
    set_var(&e, "bos_token", 9, v_str(bos, strlen(bos)));
    set_var(&e, "eos_token", 9, v_str(eos, strlen(eos)));
    for (size_t i = 0; i < n_vars; i++) { /* "name=value": true/false, an integer, or a string */
        const char *eq = vars[i] ? strchr(vars[i], '=') : NULL;
        if (!eq || eq == vars[i]) jfail(c, WGT_ERR_INVALID_ARGUMENT, "variable %zu is not name=value", i);
        const char *v = eq + 1;
        char *end;
        long long num = strtoll(v, &end, 10);
        value val = !strcmp(v, "true") || !strcmp(v, "True")    ? v_bool(1)
                    : !strcmp(v, "false") || !strcmp(v, "False") ? v_bool(0)
                    : *v && !*end                                ? v_int(num)
                                                                 : v_str(v, strlen(v));
        set_var(&e, vars[i], (size_t)(eq - vars[i]), val);
    }
    exec_block(&e, root);
}

wgt_status tok_render_template(const char *tmpl, const wgt_chat_message *msgs, size_t n_msgs, int add_gen,
                               const char *bos, const char *eos, const char *const *vars, size_t n_vars, char **out)
{
    *out = NULL;
    /* On the heap: longjmp leaves automatic variables changed after setjmp indeterminate. */
    jctx *const c = calloc(1, sizeof *c);
    if (!c) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "chat template: out of memory");
    if (setjmp(c->fail)) {
        wgt_status st = c->status;
        arena_free(c);
        return st;
    }
    sbuf result = {.c = c};
    render(c, tmpl, msgs, n_msgs, add_gen, bos, eos, vars, n_vars, &result);
    wgt_status st = WGT_OK;
    if (!(*out = malloc(result.n + 1))) st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "chat template: out of memory");
    else {
        if (result.n) memcpy(*out, result.p, result.n);
        (*out)[result.n] = 0;
    }
    arena_free(c);
    return st;
}
