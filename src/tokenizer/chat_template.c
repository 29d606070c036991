/* Chat templates: a small Jinja interpreter, enough for the templates models ship
 * (ChatML/Qwen, Llama 2/3, Mistral). Rendered as Hugging Face's apply_chat_template does:
 * trim_blocks and lstrip_blocks on, undefined names render as "" and are false.
 *
 * Supported: {{ }}, {% if/elif/else %}, {% for x in xs [if c] %} (with loop.index, index0,
 * first, last, length, revindex, revindex0; "for a, b in"), {% set x = ... %},
 * {% set ns.x = ... %}, namespace(), raise_exception(), range(), strftime_now() (transformers'
 * global: the local time, as Python's strftime formats it), comments, whitespace control;
 * literals, lists, dicts, attribute/index/slice access, + - * / % ~, comparisons, and/or/not,
 * in / not in, "a if c else b", tests (defined, undefined, none, string, number, mapping,
 * iterable, sequence, true, false, boolean, integer), filters (trim, length, count, upper, lower,
 * tojson, string, int, first, last, join, default, capitalize, replace, list, reverse, items),
 * string methods (strip, lstrip, rstrip, startswith, endswith, split, upper, lower, replace,
 * title) and dict methods (items, keys, values, get). Anything else is WGT_ERR_UNSUPPORTED naming
 * the construct. Everything a render allocates lives in one arena freed at the end; errors
 * unwind with longjmp to the entry point. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tokenizer/jinja.h"

/* ---- evaluation ---- */

typedef struct frame { dict vars; struct frame *up; } frame;
typedef struct env { jctx *c; frame *top; sbuf *out; } env;

static value lookup(env *e, const char *name, size_t n)
{
    for (frame *f = e->top; f; f = f->up) {
        value *v = jinja_dict_find(&f->vars, name, n);
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
            jinja_put(&b, to.s, to.n);
            i += from.n;
        } else jinja_put(&b, s.s + i++, 1);
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
            if (p.t != V_STR) jinja_fail(c, WGT_ERR_INVALID_ARGUMENT, "line %zu: %.*s needs a string", call->line, (int)mn, m);
            if (p.n > obj.n) return v_bool(0);
            return v_bool(!memcmp(m[0] == 's' ? obj.s : obj.s + obj.n - p.n, p.s, p.n));
        }
        if (name_is(m, mn, "upper") || name_is(m, mn, "lower") || name_is(m, mn, "title")) {
            value r = jinja_strdup(c, obj.s, obj.n);
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
            list *l = jinja_alloc(c, sizeof *l);
            if (sep.t != V_STR) { /* split on runs of whitespace */
                size_t i = 0;
                while (i < obj.n) {
                    while (i < obj.n && strchr(" \t\n\r", obj.s[i])) i++;
                    size_t s = i;
                    while (i < obj.n && !strchr(" \t\n\r", obj.s[i])) i++;
                    if (i > s) jinja_list_push(c, l, v_str(obj.s + s, i - s));
                }
            } else {
                if (!sep.n) jinja_fail(c, WGT_ERR_INVALID_ARGUMENT, "line %zu: split with an empty separator", call->line);
                size_t s = 0;
                for (size_t i = 0; i + sep.n <= obj.n;) {
                    if (!memcmp(obj.s + i, sep.s, sep.n)) {
                        jinja_list_push(c, l, v_str(obj.s + s, i - s));
                        i += sep.n;
                        s = i;
                    } else i++;
                }
                jinja_list_push(c, l, v_str(obj.s + s, obj.n - s));
            }
            return (value){.t = V_LIST, .l = l};
        }
    } else if (obj.t == V_DICT) {
        if (name_is(m, mn, "items") || name_is(m, mn, "keys") || name_is(m, mn, "values")) {
            list *l = jinja_alloc(c, sizeof *l);
            for (size_t i = 0; i < obj.d->n; i++) {
                value k = v_str(obj.d->k[i], strlen(obj.d->k[i]));
                if (m[0] == 'k') jinja_list_push(c, l, k);
                else if (m[0] == 'v') jinja_list_push(c, l, obj.d->v[i]);
                else {
                    list *pair = jinja_alloc(c, sizeof *pair);
                    jinja_list_push(c, pair, k);
                    jinja_list_push(c, pair, obj.d->v[i]);
                    jinja_list_push(c, l, (value){.t = V_LIST, .l = pair});
                }
            }
            return (value){.t = V_LIST, .l = l};
        }
        if (name_is(m, mn, "get")) {
            value k = arg(e, call, 0, none);
            value *v = k.t == V_STR ? jinja_dict_find(obj.d, k.s, k.n) : NULL;
            return v ? *v : arg(e, call, 1, none);
        }
    }
    jinja_fail(c, WGT_ERR_UNSUPPORTED, "line %zu: method '%.*s' is outside the supported Jinja subset", call->line, (int)mn, m);
}

static value get_attr(env *e, value obj, const char *k, size_t kn)
{
    if (obj.t == V_DICT) {
        value *v = jinja_dict_find(obj.d, k, kn);
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
    if (f->k != E_NAME) jinja_fail(c, WGT_ERR_UNSUPPORTED, "line %zu: calling an expression", n->line);
    if (name_is(f->op, f->opn, "raise_exception")) {
        value m = jinja_as_string(c, arg(e, n, 0, v_str("", 0)));
        jinja_fail(c, WGT_ERR_INVALID_ARGUMENT, "the template raised an exception: %.*s", (int)m.n, m.s);
    }
    if (name_is(f->op, f->opn, "namespace")) {
        dict *d = jinja_alloc(c, sizeof *d);
        d->is_namespace = 1;
        for (size_t i = 0; i < n->n; i++)
            if (n->kw[i]) jinja_dict_set(c, d, n->kw[i], n->kwn[i], eval(e, n->items[i]));
        return (value){.t = V_DICT, .d = d};
    }
    if (name_is(f->op, f->opn, "strftime_now")) { /* transformers' global: datetime.now().strftime(fmt) */
        value fmt = jinja_as_string(c, arg(e, n, 0, v_str("", 0)));
        char spec[128], *out = jinja_alloc(c, 256);
        if (fmt.n >= sizeof spec || memchr(fmt.s, 0, fmt.n))
            jinja_fail(c, WGT_ERR_LIMIT, "line %zu: strftime_now: a format of %zu bytes (at most %zu, no NUL)", n->line,
                       fmt.n, sizeof spec - 1);
        memcpy(spec, fmt.s, fmt.n);
        spec[fmt.n] = 0;
        time_t now = time(NULL);
        struct tm tm;
        size_t len = localtime_r(&now, &tm) ? strftime(out, 256, spec, &tm) : 0;
        return v_str(out, len);
    }
    if (name_is(f->op, f->opn, "range")) {
        value a = arg(e, n, 0, v_int(0)), b = arg(e, n, 1, (value){.t = V_UNDEF}), s = arg(e, n, 2, v_int(1));
        long long lo = b.t == V_UNDEF ? 0 : a.i, hi = b.t == V_UNDEF ? a.i : b.i;
        if (s.i == 0 || (hi - lo) / s.i > 1000000) jinja_fail(c, WGT_ERR_LIMIT, "line %zu: range too large", n->line);
        list *l = jinja_alloc(c, sizeof *l);
        for (long long i = lo; s.i > 0 ? i < hi : i > hi; i += s.i) jinja_list_push(c, l, v_int(i));
        return (value){.t = V_LIST, .l = l};
    }
    jinja_fail(c, WGT_ERR_UNSUPPORTED, "line %zu: function '%.*s' is outside the supported Jinja subset", n->line, (int)f->opn, f->op);
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
        jinja_to_json(&b, v);
        return v_str(b.p, b.n);
    }
    if (name_is(f, fn, "string")) return jinja_as_string(c, v);
    if (name_is(f, fn, "int")) return v.t == V_STR ? v_int(strtoll(jinja_strdup(c, v.s, v.n).s, NULL, 10)) : v_int(v.i);
    if (name_is(f, fn, "default") || name_is(f, fn, "d")) {
        value b = arg(e, n, 1, v_bool(0));
        return v.t == V_UNDEF || (jinja_truthy(b) && !jinja_truthy(v)) ? arg(e, n, 0, v_str("", 0)) : v;
    }
    if ((name_is(f, fn, "first") || name_is(f, fn, "last")) && v.t == V_LIST)
        return v.l->n ? v.l->v[f[0] == 'f' ? 0 : v.l->n - 1] : (value){.t = V_UNDEF};
    if ((name_is(f, fn, "first") || name_is(f, fn, "last")) && v.t == V_STR)
        return v.n ? v_str(f[0] == 'f' ? v.s : v.s + v.n - 1, 1) : (value){.t = V_UNDEF};
    if (name_is(f, fn, "join") && v.t == V_LIST) {
        value sep = arg(e, n, 0, v_str("", 0));
        sbuf b = {.c = c};
        for (size_t i = 0; i < v.l->n; i++) {
            if (i) jinja_to_text(&b, sep);
            jinja_to_text(&b, v.l->v[i]);
        }
        return b.p ? v_str(b.p, b.n) : v_str("", 0);
    }
    if (name_is(f, fn, "list")) return v;
    if (name_is(f, fn, "items") && v.t == V_DICT) return call_method(e, n, v, "items", 5);
    if (name_is(f, fn, "reverse") && v.t == V_LIST) {
        list *l = jinja_alloc(c, sizeof *l);
        for (size_t i = v.l->n; i > 0; i--) jinja_list_push(c, l, v.l->v[i - 1]);
        return (value){.t = V_LIST, .l = l};
    }
    jinja_fail(c, WGT_ERR_UNSUPPORTED, "line %zu: filter '%.*s' is outside the supported Jinja subset", n->line, (int)fn, f);
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
    if (name_is(t, tn, "equalto") || name_is(t, tn, "eq")) return jinja_equal(v, arg(e, n, 0, (value){.t = V_UNDEF}));
    jinja_fail(e->c, WGT_ERR_UNSUPPORTED, "line %zu: test '%.*s' is outside the supported Jinja subset", n->line, (int)tn, t);
}

static long long index_of(long long i, size_t n) { return i < 0 ? i + (long long)n : i; }

static value eval(env *e, node *n)
{
    jctx *c = e->c;
    switch (n->k) {
    case E_LIT: return n->lit;
    case E_NAME: {
        value v = lookup(e, n->op, n->opn);
        /* transformers defines strftime_now, and templates test it (Llama 3.2: `is defined`) */
        return v.t == V_UNDEF && name_is(n->op, n->opn, "strftime_now") ? v_bool(1) : v;
    }
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
        if (o.t != V_LIST && o.t != V_STR) jinja_fail(c, WGT_ERR_INVALID_ARGUMENT, "line %zu: slicing a non-sequence", n->line);
        long long step = n->d ? eval(e, n->d).i : 1;
        if (step == 0) jinja_fail(c, WGT_ERR_INVALID_ARGUMENT, "line %zu: slice step 0", n->line);
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
            for (long long i = lo; step > 0 ? i < hi : i > hi; i += step) jinja_put(&b, o.s + i, 1);
            return b.p ? v_str(b.p, b.n) : v_str("", 0);
        }
        list *l = jinja_alloc(c, sizeof *l);
        for (long long i = lo; step > 0 ? i < hi : i > hi; i += step) jinja_list_push(c, l, o.l->v[i]);
        return (value){.t = V_LIST, .l = l};
    }
    case E_CALL: return call(e, n);
    case E_FILTER: return filter(e, n);
    case E_TEST: return v_bool(test(e, n) != n->negate);
    case E_NOT: return v_bool(!jinja_truthy(eval(e, n->a)));
    case E_NEG: return v_int(-eval(e, n->a).i);
    case E_AND: {
        value a = eval(e, n->a);
        return jinja_truthy(a) ? eval(e, n->b) : a;
    }
    case E_OR: {
        value a = eval(e, n->a);
        return jinja_truthy(a) ? a : eval(e, n->b);
    }
    case E_COND:
        return jinja_truthy(eval(e, n->a)) ? eval(e, n->b) : n->c ? eval(e, n->c) : (value){.t = V_UNDEF};
    case E_LIST: {
        list *l = jinja_alloc(c, sizeof *l);
        for (size_t i = 0; i < n->n; i++) jinja_list_push(c, l, eval(e, n->items[i]));
        return (value){.t = V_LIST, .l = l};
    }
    case E_DICT: {
        dict *d = jinja_alloc(c, sizeof *d);
        for (size_t i = 0; i + 1 < n->n; i += 2) {
            value k = jinja_as_string(c, eval(e, n->items[i]));
            jinja_dict_set(c, d, k.s, k.n, eval(e, n->items[i + 1]));
        }
        return (value){.t = V_DICT, .d = d};
    }
    case E_BIN: {
        value a = eval(e, n->a), b = eval(e, n->b);
        const char *op = n->op;
        if (!strcmp(op, "==")) return v_bool(jinja_equal(a, b));
        if (!strcmp(op, "!=")) return v_bool(!jinja_equal(a, b));
        if (!strcmp(op, "~")) {
            sbuf s = {.c = c};
            jinja_to_text(&s, a);
            jinja_to_text(&s, b);
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
                    if (jinja_equal(a, b.l->v[i])) return v_bool(1);
                return v_bool(0);
            }
            if (b.t == V_DICT) return v_bool(a.t == V_STR && jinja_dict_find(b.d, a.s, a.n));
            return v_bool(0);
        }
        if (!strcmp(op, "+") && (a.t == V_STR || b.t == V_STR)) {
            if (a.t != V_STR || b.t != V_STR)
                jinja_fail(c, WGT_ERR_INVALID_ARGUMENT, "line %zu: '+' of a string and a non-string (use ~)", n->line);
            sbuf s = {.c = c};
            jinja_put(&s, a.s, a.n);
            jinja_put(&s, b.s, b.n);
            return s.p ? v_str(s.p, s.n) : v_str("", 0);
        }
        if (!strcmp(op, "+") && a.t == V_LIST && b.t == V_LIST) {
            list *l = jinja_alloc(c, sizeof *l);
            for (size_t i = 0; i < a.l->n; i++) jinja_list_push(c, l, a.l->v[i]);
            for (size_t i = 0; i < b.l->n; i++) jinja_list_push(c, l, b.l->v[i]);
            return (value){.t = V_LIST, .l = l};
        }
        if (a.t == V_STR && b.t == V_STR && (op[0] == '<' || op[0] == '>')) {
            int r = memcmp(a.s, b.s, a.n < b.n ? a.n : b.n);
            if (!r) r = a.n < b.n ? -1 : a.n > b.n;
            return v_bool(!strcmp(op, "<") ? r < 0 : !strcmp(op, ">") ? r > 0 : !strcmp(op, "<=") ? r <= 0 : r >= 0);
        }
        if ((a.t != V_INT && a.t != V_BOOL) || (b.t != V_INT && b.t != V_BOOL))
            jinja_fail(c, WGT_ERR_INVALID_ARGUMENT, "line %zu: '%s' needs numbers", n->line, op);
        long long x = a.i, y = b.i;
        if (!strcmp(op, "+")) return v_int(x + y);
        if (!strcmp(op, "-")) return v_int(x - y);
        if (!strcmp(op, "*")) return v_int(x * y);
        if (!strcmp(op, "<")) return v_bool(x < y);
        if (!strcmp(op, ">")) return v_bool(x > y);
        if (!strcmp(op, "<=")) return v_bool(x <= y);
        if (!strcmp(op, ">=")) return v_bool(x >= y);
        if (y == 0) jinja_fail(c, WGT_ERR_INVALID_ARGUMENT, "line %zu: division by zero", n->line);
        if (!strcmp(op, "%")) return v_int(((x % y) + y) % y);
        return v_int(x / y); /* "/" on integers: floats are outside the subset */
    }
    default: jinja_fail(c, WGT_ERR_INTERNAL, "line %zu: bad expression node", n->line);
    }
}

static void set_var(env *e, const char *name, size_t n, value v) { jinja_dict_set(e->c, &e->top->vars, name, n, v); }

static void exec_block(env *e, node *blk);

static void exec_for(env *e, node *n)
{
    jctx *c = e->c;
    value seq = eval(e, n->a);
    list *items;
    if (seq.t == V_LIST) items = seq.l;
    else if (seq.t == V_DICT) items = call_method(e, n, seq, "keys", 4).l;
    else if (seq.t == V_STR) {
        items = jinja_alloc(c, sizeof *items);
        for (size_t i = 0; i < seq.n; i++) jinja_list_push(c, items, v_str(seq.s + i, 1));
    } else if (seq.t == V_UNDEF || seq.t == V_NONE) items = jinja_alloc(c, sizeof *items);
    else jinja_fail(c, WGT_ERR_INVALID_ARGUMENT, "line %zu: for over a non-sequence", n->line);
    frame f = {.up = e->top};
    e->top = &f;
    /* The loop filter picks the items first, so loop.index / last count the kept ones. */
    list *kept = items;
    if (n->d) {
        kept = jinja_alloc(c, sizeof *kept);
        for (size_t i = 0; i < items->n; i++) {
            set_var(e, n->op, n->opn, items->v[i]);
            if (jinja_truthy(eval(e, n->d))) jinja_list_push(c, kept, items->v[i]);
        }
    }
    for (size_t i = 0; i < kept->n; i++) {
        value item = kept->v[i];
        if (n->op2) {
            if (item.t != V_LIST || item.l->n != 2) jinja_fail(c, WGT_ERR_INVALID_ARGUMENT, "line %zu: cannot unpack into two names", n->line);
            set_var(e, n->op, n->opn, item.l->v[0]);
            set_var(e, n->op2, n->op2n, item.l->v[1]);
        } else set_var(e, n->op, n->opn, item);
        dict *loop = jinja_alloc(c, sizeof *loop);
        size_t len = kept->n;
        jinja_dict_set(c, loop, "index", 5, v_int((long long)i + 1));
        jinja_dict_set(c, loop, "index0", 6, v_int((long long)i));
        jinja_dict_set(c, loop, "revindex", 8, v_int((long long)(len - i)));
        jinja_dict_set(c, loop, "revindex0", 9, v_int((long long)(len - i - 1)));
        jinja_dict_set(c, loop, "first", 5, v_bool(i == 0));
        jinja_dict_set(c, loop, "last", 4, v_bool(i + 1 == len));
        jinja_dict_set(c, loop, "length", 6, v_int((long long)len));
        jinja_dict_set(c, loop, "previtem", 8, i ? kept->v[i - 1] : (value){.t = V_UNDEF});
        jinja_dict_set(c, loop, "nextitem", 8, i + 1 < len ? kept->v[i + 1] : (value){.t = V_UNDEF});
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
        case N_TEXT: jinja_put(e->out, n->lit.s, n->lit.n); break;
        case N_OUT: jinja_to_text(e->out, eval(e, n->a)); break;
        case N_IF:
            if (jinja_truthy(eval(e, n->a))) exec_block(e, n->b);
            else if (n->c) exec_block(e, n->c);
            break;
        case N_FOR: exec_for(e, n); break;
        case N_SET:
            if (n->op2) {
                value ns = lookup(e, n->op, n->opn);
                if (ns.t != V_DICT || !ns.d->is_namespace)
                    jinja_fail(e->c, WGT_ERR_INVALID_ARGUMENT, "line %zu: set %.*s.%.*s: not a namespace", n->line, (int)n->opn, n->op,
                          (int)n->op2n, n->op2);
                jinja_dict_set(e->c, ns.d, n->op2, n->op2n, eval(e, n->a));
            } else set_var(e, n->op, n->opn, eval(e, n->a));
            break;
        default: jinja_fail(e->c, WGT_ERR_INTERNAL, "line %zu: bad statement node", n->line);
        }
    }
}

/* Lex, parse and run tmpl; the text lands in *result (arena memory). Errors longjmp. */
static void render(jctx *c, const char *tmpl, const wgt_chat_message *msgs, size_t n_msgs, int add_gen, const char *bos,
                   const char *eos, const char *const *vars, size_t n_vars, sbuf *result)
{
    node *root = jinja_parse(c, tmpl);
    frame globals = {0};
    env e = {c, &globals, result};
    list *ml = jinja_alloc(c, sizeof *ml);
    for (size_t i = 0; i < n_msgs; i++) {
        if (!msgs[i].role || !msgs[i].content) jinja_fail(c, WGT_ERR_INVALID_ARGUMENT, "message %zu has no role or content", i);
        dict *d = jinja_alloc(c, sizeof *d);
        jinja_dict_set(c, d, "role", 4, v_str(msgs[i].role, strlen(msgs[i].role)));
        jinja_dict_set(c, d, "content", 7, v_str(msgs[i].content, strlen(msgs[i].content)));
        jinja_list_push(c, ml, (value){.t = V_DICT, .d = d});
    }
    set_var(&e, "messages", 8, (value){.t = V_LIST, .l = ml});
    set_var(&e, "add_generation_prompt", 21, v_bool(add_gen));
    set_var(&e, "bos_token", 9, v_str(bos, strlen(bos)));
    set_var(&e, "eos_token", 9, v_str(eos, strlen(eos)));
    for (size_t i = 0; i < n_vars; i++) { /* "name=value": true/false, an integer, or a string */
        const char *eq = vars[i] ? strchr(vars[i], '=') : NULL;
        if (!eq || eq == vars[i]) jinja_fail(c, WGT_ERR_INVALID_ARGUMENT, "variable %zu is not name=value", i);
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
        jinja_free(c);
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
    jinja_free(c);
    return st;
}
