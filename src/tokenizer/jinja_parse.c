/* The Jinja lexer (text, {{ }}, {% %}, {# #}, with trim_blocks / lstrip_blocks and the "-"
 * whitespace control) and a recursive-descent parser following Jinja's precedence: or, and,
 * not, comparisons / in / is, + -, ~, * / // %, unary -, then primaries with . [] () | filters. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/jinja.h"

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
        token *nv = jinja_alloc(lx->c, cap * sizeof *nv);
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
            if (!e) jinja_fail(c, WGT_ERR_FORMAT, "line %zu: comment without #}", line_of(src, tag));
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
            if (!*p) jinja_fail(c, WGT_ERR_FORMAT, "line %zu: tag not closed", line_of(src, tag));
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
                while (*p >= '0' && *p <= '9') {
                    if (v > (LLONG_MAX - (*p - '0')) / 10) /* found by fuzz_chat_template: signed overflow */
                        jinja_fail(c, WGT_ERR_UNSUPPORTED, "line %zu: integer literal larger than %lld", line, LLONG_MAX);
                    v = v * 10 + (*p++ - '0');
                }
                if (*p == '.' && p[1] >= '0' && p[1] <= '9') jinja_fail(c, WGT_ERR_UNSUPPORTED, "line %zu: float literals", line);
                lex_push(lx, (token){T_INT, NULL, 0, v, line});
            } else if (*p == '\'' || *p == '"') {
                char q = *p++;
                sbuf b = {.c = c};
                while (*p && *p != q) {
                    if (*p == '\\' && p[1]) {
                        p++;
                        char e = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p == 'r' ? '\r' : *p;
                        jinja_put(&b, &e, 1);
                        p++;
                    } else jinja_put(&b, p++, 1);
                }
                if (!*p) jinja_fail(c, WGT_ERR_FORMAT, "line %zu: string not closed", line);
                p++;
                lex_push(lx, (token){T_STRING, b.p ? b.p : "", b.n, 0, line});
            } else {
                static const char *const ops[] = {"==", "!=", "<=", ">=", "//", "**", "(", ")", "[", "]", "{", "}", ".", ",",
                                                  ":", "|", "~", "+", "-", "*", "/", "%", "<", ">", "="};
                size_t k;
                for (k = 0; k < sizeof ops / sizeof ops[0]; k++)
                    if (!strncmp(p, ops[k], strlen(ops[k]))) break;
                if (k == sizeof ops / sizeof ops[0]) jinja_fail(c, WGT_ERR_FORMAT, "line %zu: unexpected character '%c'", line, *p);
                lex_push(lx, (token){T_OP, ops[k], strlen(ops[k]), 0, line});
                p += strlen(ops[k]);
            }
        }
    }
    lex_push(lx, (token){T_EOF, "", 0, 0, line_of(src, p)});
}

/* ---- parser: the template becomes a tree of nodes ---- */

typedef struct parser { jctx *c; token *t; size_t i; } parser;

static token *peek(parser *ps) { return &ps->t[ps->i]; }
static int is_op(const token *t, const char *op) { return t->k == T_OP && t->n == strlen(op) && !memcmp(t->s, op, t->n); }
static int is_name(const token *t, const char *s) { return t->k == T_NAME && t->n == strlen(s) && !memcmp(t->s, s, t->n); }

static void expect_op(parser *ps, const char *op)
{
    if (!is_op(peek(ps), op)) jinja_fail(ps->c, WGT_ERR_FORMAT, "line %zu: expected '%s'", peek(ps)->line, op);
    ps->i++;
}

static node *mk(parser *ps, nkind k)
{
    node *n = jinja_alloc(ps->c, sizeof *n);
    n->k = k;
    n->line = peek(ps)->line;
    return n;
}

static void add_item(parser *ps, node *n, node *item, const char *kw, size_t kwn)
{
    node **items = jinja_alloc(ps->c, (n->n + 1) * sizeof *items);
    const char **k = jinja_alloc(ps->c, (n->n + 1) * sizeof *k);
    size_t *kl = jinja_alloc(ps->c, (n->n + 1) * sizeof *kl);
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
            jinja_put(&b, n->lit.s, n->lit.n);
            jinja_put(&b, peek(ps)->s, peek(ps)->n);
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
        jinja_fail(ps->c, WGT_ERR_FORMAT, "line %zu: unexpected '%.*s' in an expression", t->line, (int)t->n, t->s);
    }
    /* postfix: .name, [index], [a:b:c], (args), | filter */
    for (;;) {
        t = peek(ps);
        if (is_op(t, ".")) {
            ps->i++;
            if (peek(ps)->k != T_NAME) jinja_fail(ps->c, WGT_ERR_FORMAT, "line %zu: expected a name after '.'", t->line);
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
                    if (++colons > 2) jinja_fail(ps->c, WGT_ERR_FORMAT, "line %zu: bad slice", t->line);
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
            if (peek(ps)->k != T_NAME) jinja_fail(ps->c, WGT_ERR_FORMAT, "line %zu: expected a filter name after '|'", t->line);
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
            if (peek(ps)->k != T_NAME) jinja_fail(ps->c, WGT_ERR_FORMAT, "line %zu: expected a test name after 'is'", t->line);
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
        jinja_fail(ps->c, WGT_ERR_FORMAT, "line %zu: expected %%} but found '%.*s'", peek(ps)->line, (int)peek(ps)->n, peek(ps)->s);
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
            jinja_fail(ps->c, WGT_ERR_FORMAT, "template ends inside a block: {%% %s %%} missing", ends[n_ends - 1]);
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
            if (peek(ps)->k != T_VAR_END) jinja_fail(ps->c, WGT_ERR_FORMAT, "line %zu: expected }}", peek(ps)->line);
            ps->i++;
            add_item(ps, blk, x, NULL, 0);
            continue;
        }
        if (t->k != T_BLOCK_BEGIN) jinja_fail(ps->c, WGT_ERR_INTERNAL, "line %zu: unexpected token", t->line);
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
            if (peek(ps)->k != T_NAME) jinja_fail(ps->c, WGT_ERR_FORMAT, "line %zu: expected a loop variable", kw->line);
            x->op = peek(ps)->s;
            x->opn = peek(ps)->n;
            ps->i++;
            if (is_op(peek(ps), ",")) {
                ps->i++;
                x->op2 = peek(ps)->s;
                x->op2n = peek(ps)->n;
                ps->i++;
            }
            if (!is_name(peek(ps), "in")) jinja_fail(ps->c, WGT_ERR_FORMAT, "line %zu: expected 'in' in for", kw->line);
            ps->i++;
            x->a = parse_or(ps); /* not parse_expr: a trailing "if" filters the loop */
            if (is_name(peek(ps), "if")) {
                ps->i++;
                x->d = parse_expr(ps);
            }
            if (is_name(peek(ps), "recursive")) jinja_fail(ps->c, WGT_ERR_UNSUPPORTED, "line %zu: recursive loops", kw->line);
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
            if (peek(ps)->k != T_NAME) jinja_fail(ps->c, WGT_ERR_FORMAT, "line %zu: expected a name after set", kw->line);
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
                jinja_fail(ps->c, WGT_ERR_UNSUPPORTED, "line %zu: block set ({%% set x %%}...{%% endset %%})", kw->line);
            ps->i++;
            x->a = parse_expr(ps);
            expect_block_end(ps);
            add_item(ps, blk, x, NULL, 0);
        } else {
            jinja_fail(ps->c, WGT_ERR_UNSUPPORTED, "line %zu: the statement {%% %.*s %%} is outside the supported Jinja subset",
                  kw->line, (int)kw->n, kw->s);
        }
    }
}

node *jinja_parse(jctx *c, const char *tmpl)
{
    lexer lx = {.c = c};
    /* Jinja drops one newline at the very end of a template (keep_trailing_newline off). */
    size_t tlen = strlen(tmpl);
    if (tlen && tmpl[tlen - 1] == '\n') {
        char *copy = jinja_alloc(c, tlen);
        memcpy(copy, tmpl, tlen - 1);
        tmpl = copy;
    }
    lex(&lx, tmpl);
    parser ps = {c, lx.v, 0};
    return parse_block(&ps, NULL, 0);
}
