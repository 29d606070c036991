/* The Jinja subset behind chat templates, shared by its three files: values and the arena
 * (jinja_values.c), lexer and parser (jinja_parse.c), evaluation (chat_template.c).
 * Everything a render allocates lives in one arena (jctx) freed at the end; errors longjmp to
 * the entry point (tok_render_template) through jctx.fail. */
#ifndef WGT_TOKENIZER_JINJA_H
#define WGT_TOKENIZER_JINJA_H

#include <setjmp.h>
#include <stddef.h>

#include "tokenizer/tokenizer_internal.h"

typedef struct arena_block { struct arena_block *next; size_t used, cap; char data[]; } arena_block;

typedef struct jctx {
    arena_block *blocks;
    jmp_buf fail;
    wgt_status status;
} jctx;

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

typedef struct sbuf { char *p; size_t n, cap; jctx *c; } sbuf;

static inline value v_str(const char *s, size_t n) { return (value){.t = V_STR, .s = s, .n = n}; }
static inline value v_int(long long i) { return (value){.t = V_INT, .i = i}; }
static inline value v_bool(int b) { return (value){.t = V_BOOL, .i = b != 0}; }

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

void *jinja_alloc(jctx *c, size_t n);                 /* zeroed; never NULL (longjmps) */
_Noreturn void jinja_fail(jctx *c, wgt_status st, const char *fmt, ...) WGT_PRINTF(3, 4);
void jinja_free(jctx *c);                             /* the arena and c itself */
value jinja_strdup(jctx *c, const char *s, size_t n);
void jinja_list_push(jctx *c, list *l, value v);
value *jinja_dict_find(dict *d, const char *k, size_t n);
void jinja_dict_set(jctx *c, dict *d, const char *k, size_t n, value v);
int jinja_truthy(value v);
int jinja_equal(value a, value b);
void jinja_put(sbuf *b, const char *s, size_t n);
void jinja_puts(sbuf *b, const char *s);
void jinja_to_json(sbuf *b, value v);                 /* as tojson writes it */
void jinja_to_text(sbuf *b, value v);                 /* as {{ v }} prints it */
value jinja_as_string(jctx *c, value v);

/* Lex and parse a template (one trailing newline dropped, as Jinja does): the root block. */
node *jinja_parse(jctx *c, const char *tmpl);

#endif
