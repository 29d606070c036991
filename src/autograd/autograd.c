/* The autograd engine: per-tensor state, recording (the hook of src/ops/record.h), backward, and
 * the public calls of include/wgt.h's "Autograd" section. Formulas live in grad_<family>.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"
#include "core/error.h"
#include "ops/ops.h"

struct ag_node {
    int refs;
    const ag_rule *rule;
    op_grad_id op;
    int n_in;
    struct ag_meta **in_meta; /* [n_in], referenced; NULL where no gradient flows */
    wgt_layout *in_l;         /* [n_in] */
    wgt_tensor **saved;       /* [n_in + 1]: inputs, then the output; detached handles */
    uint64_t *saved_ver;      /* [n_in + 1]: each saved tensor's storage version when saved */
    wgt_layout out_l;
    unsigned char params[OP_RECORD_MAX_PARAMS];
    wgt_tensor *grad;         /* the output's gradient, summed while backward runs */
    int released;             /* a backward without retain_graph went through it */
    unsigned epoch;           /* last backward that visited it */
};

static void node_unref(ag_node *n);

/* ---- metas ----------------------------------------------------------------------------------- */

static void meta_retain(struct ag_meta *m) { m->refs++; }

static void meta_release(struct ag_meta *m)
{
    if (!m || --m->refs > 0) return;
    wgt_tensor_free(m->grad);
    node_unref(m->fn);
    free(m);
}

static void install_hooks(void);

static wgt_status meta_of(wgt_tensor *t, struct ag_meta **out)
{
    install_hooks();
    if (!t->ag) {
        t->ag = calloc(1, sizeof *t->ag);
        if (!t->ag) return wgt_ctx_error(t->st->ctx, WGT_ERR_OUT_OF_MEMORY, "autograd: out of host memory");
        t->ag->refs = 1;
    }
    *out = t->ag;
    return WGT_OK;
}

static int meta_requires(const struct ag_meta *m) { return m && (m->requires_grad || m->fn); }

/* ---- nodes ----------------------------------------------------------------------------------- */

static void node_drop_saved(ag_node *n)
{
    for (int i = 0; i <= n->n_in; i++) {
        wgt_tensor_free(n->saved[i]);
        n->saved[i] = NULL;
    }
}

/* Release what a node holds besides its identity: saved tensors and edges (a freed graph). */
static void node_release(ag_node *n)
{
    node_drop_saved(n);
    for (int i = 0; i < n->n_in; i++) {
        meta_release(n->in_meta[i]);
        n->in_meta[i] = NULL;
    }
    wgt_tensor_free(n->grad);
    n->grad = NULL;
    n->released = 1;
}

/* Free a whole chain iteratively: a long graph (a training step's thousands of nodes) must not
 * recurse once per node. Nodes whose count drops to zero go on a work list. */
static void node_unref(ag_node *n)
{
    ag_node **work = NULL;
    int nw = 0, cap = 0;
    while (n) {
        if (--n->refs == 0) {
            node_drop_saved(n);
            wgt_tensor_free(n->grad);
            for (int i = 0; i < n->n_in; i++) {
                struct ag_meta *m = n->in_meta[i];
                if (!m || --m->refs > 0) continue;
                wgt_tensor_free(m->grad);
                if (m->fn) {
                    if (nw == cap) {
                        int nc = cap ? 2 * cap : 16;
                        ag_node **w = realloc(work, sizeof *w * nc);
                        if (!w) { /* cannot queue: fall back to recursion for this one */
                            node_unref(m->fn);
                            free(m);
                            continue;
                        }
                        work = w, cap = nc;
                    }
                    work[nw++] = m->fn;
                }
                free(m);
            }
            free(n->in_meta);
            free(n->in_l);
            free(n->saved);
            free(n->saved_ver);
            free(n);
        }
        n = nw ? work[--nw] : NULL;
    }
    free(work);
}

/* The recorder hook: a node for out, with edges to the inputs that require grad. */
static wgt_status record(op_grad_id op, const wgt_tensor *const *in, int n_in, const void *params, size_t pbytes,
                         wgt_tensor *out)
{
    /* an integer or boolean result has no gradient (PyTorch's rule): no node, so a comparison's
     * mask feeding where() is a plain constant there */
    if (!op_is_float(out->l.dtype)) return WGT_OK;
    int any = 0;
    for (int i = 0; i < n_in; i++) {
        if (!in[i] || !meta_requires(in[i]->ag)) continue;
        if (in[i]->ag == out->ag) return WGT_OK; /* the op returned its input itself: identity */
        any = 1;
    }
    if (!any) return WGT_OK;
    wgt_context *ctx = out->st->ctx;
    const ag_rule *rule = ag_rule_of(op);
    if (pbytes > OP_RECORD_MAX_PARAMS)
        return wgt_ctx_error(ctx, WGT_ERR_INTERNAL, "autograd: %s records %zu bytes of params (at most %d)",
                             rule ? rule->name : "an op", pbytes, OP_RECORD_MAX_PARAMS);
    ag_node *n = calloc(1, sizeof *n);
    if (n) {
        n->in_meta = calloc(n_in ? n_in : 1, sizeof *n->in_meta);
        n->in_l = calloc(n_in ? n_in : 1, sizeof *n->in_l);
        n->saved = calloc(n_in + 1, sizeof *n->saved);
        n->saved_ver = calloc(n_in + 1, sizeof *n->saved_ver);
    }
    if (!n || !n->in_meta || !n->in_l || !n->saved || !n->saved_ver) {
        if (n) free(n->in_meta), free(n->in_l), free(n->saved), free(n->saved_ver);
        free(n);
        return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "autograd: out of host memory for a graph node");
    }
    n->refs = 1;
    n->rule = rule;
    n->op = op;
    n->n_in = n_in;
    n->out_l = out->l;
    if (pbytes) memcpy(n->params, params, pbytes);
    uint32_t saves = !rule ? 0 : rule->saves_fn ? rule->saves_fn(params) : rule->saves;
    wgt_status st = WGT_OK;
    for (int i = 0; i < n_in && !st; i++) {
        if (!in[i]) continue;
        n->in_l[i] = in[i]->l;
        if (meta_requires(in[i]->ag)) {
            n->in_meta[i] = in[i]->ag;
            meta_retain(in[i]->ag);
        }
        /* detached handles: a saved handle sharing a meta would make a cycle through the node */
        if (i < 31 && (saves >> i & 1)) {
            st = wgt_tensor_new_view(in[i], &in[i]->l, &n->saved[i]);
            n->saved_ver[i] = in[i]->st->version;
        }
    }
    if (!st && (saves & AG_SAVE_OUT)) {
        st = wgt_tensor_new_view(out, &out->l, &n->saved[n_in]);
        n->saved_ver[n_in] = out->st->version;
    }
    struct ag_meta *m = NULL;
    if (!st) st = meta_of(out, &m);
    if (st) {
        node_unref(n);
        return st;
    }
    /* an op built from recorded ops may already have a node on its result: this one replaces it */
    node_unref(m->fn);
    m->fn = n;
    m->requires_grad = 0;
    return WGT_OK;
}

static void install_hooks(void)
{
    wgt_tensor_ag_retain = meta_retain;
    wgt_tensor_ag_release = meta_release;
    op_record_set_hook(record);
    op_tracked_set_hook(wgt_tensor_requires_grad);
}

/* ---- backward -------------------------------------------------------------------------------- */

/* acc = acc + g (acc NULL: a reference to g). */
static wgt_status accumulate(wgt_tensor **acc, const wgt_tensor *g)
{
    if (!*acc) {
        *acc = wgt_tensor_ref(g);
        return *acc ? WGT_OK : wgt_ctx_error(g->st->ctx, WGT_ERR_OUT_OF_MEMORY, "autograd: out of host memory");
    }
    wgt_tensor *sum;
    wgt_status st = wgt_binary(WGT_BINARY_ADD, *acc, g, &sum);
    if (st) return st;
    wgt_tensor_free(*acc);
    *acc = sum;
    return WGT_OK;
}

/* A leaf's .grad: f32, contiguous, and its own storage (an optimizer may update it in place). */
static wgt_status accumulate_leaf(struct ag_meta *m, const wgt_tensor *g)
{
    if (m->grad) return accumulate(&m->grad, g);
    if (g->st->refs == 1 && wgt_layout_is_contiguous(&g->l) && g->l.offset == 0) return accumulate(&m->grad, g);
    return wgt_tensor_copy(g, &m->grad);
}

static void call_free_tmp(ag_call *c)
{
    for (int i = 0; i < c->n_tmp; i++) wgt_tensor_free(c->tmp[i]);
    free(c->tmp);
    c->tmp = NULL;
    c->n_tmp = c->cap_tmp = 0;
}

/* Run one node's formula and pass the input gradients on. */
static wgt_status node_backward(wgt_context *ctx, ag_node *n)
{
    const char *name = n->op == OP_GRAD_NONDIFF ? (const char *)n->params : n->rule ? n->rule->name : "?";
    if (n->op == OP_GRAD_NONDIFF)
        return wgt_ctx_error(ctx, WGT_ERR_UNSUPPORTED,
                             "wgt_backward: %s is not differentiable (no gradient is defined for it, as in PyTorch), yet the loss "
                             "depends on it through a tensor that requires grad: detach its input "
                             "(wgt_tensor_detach) or compute it under wgt_grad_mode_set(0)",
                             name);
    if (!n->rule || !n->rule->backward)
        return wgt_ctx_error(ctx, WGT_ERR_UNSUPPORTED,
                             "wgt_backward: %s is not differentiable (%s), yet the loss depends on it through a "
                             "tensor that requires grad: detach its result (wgt_tensor_detach) or compute it "
                             "under wgt_grad_mode_set(0)",
                             name, n->rule ? "its output is integer-valued" : "no backward rule is registered");
    /* a saved tensor written in place since the op ran (PyTorch's version counter check) */
    for (int i = 0; i <= n->n_in; i++)
        if (n->saved[i] && n->saved[i]->st->version != n->saved_ver[i]) {
            char what[32];
            if (i == n->n_in) snprintf(what, sizeof what, "output");
            else snprintf(what, sizeof what, "input %d", i);
            return wgt_ctx_error(ctx, WGT_ERR_MISUSE,
                                 "wgt_backward: %s needs its %s as it was when the op ran, but that tensor (or "
                                 "another view of its storage) was written in place since (wgt_tensor_assign, an "
                                 "optimizer step): the gradient would be wrong; write into a copy instead "
                                 "(wgt_tensor_copy), as PyTorch's 'modified by an inplace operation' error asks",
                                 name, what);
        }
    int need[n->n_in > 0 ? n->n_in : 1];
    wgt_tensor *gin[n->n_in > 0 ? n->n_in : 1];
    for (int i = 0; i < n->n_in; i++) need[i] = n->in_meta[i] != NULL, gin[i] = NULL;
    ag_call c = {.ctx = ctx, .node = n, .g = n->grad, .in = (const wgt_tensor *const *)n->saved,
                 .out = n->saved[n->n_in], .in_l = n->in_l, .out_l = &n->out_l, .params = n->params,
                 .n_in = n->n_in, .need = need, .gin = gin};
    wgt_status st = n->rule->backward(&c);
    if (!st) st = c.st;
    call_free_tmp(&c);
    for (int i = 0; i < n->n_in && !st; i++) {
        if (!need[i]) continue;
        if (!gin[i] || gin[i]->l.ndim != n->in_l[i].ndim ||
            memcmp(gin[i]->l.shape, n->in_l[i].shape, sizeof(int64_t) * n->in_l[i].ndim)) {
            st = wgt_ctx_error(ctx, WGT_ERR_INTERNAL, "wgt_backward: the rule of %s gave %s gradient for input %d",
                               name, gin[i] ? "a wrongly shaped" : "no", i);
            break;
        }
        if (gin[i]->l.dtype != WGT_F32) {
            wgt_tensor *f;
            if ((st = wgt_tensor_cast(gin[i], WGT_F32, &f))) break;
            wgt_tensor_free(gin[i]);
            gin[i] = f;
        }
        struct ag_meta *m = n->in_meta[i];
        st = m->fn ? accumulate(&m->fn->grad, gin[i]) : accumulate_leaf(m, gin[i]);
    }
    for (int i = 0; i < n->n_in; i++) wgt_tensor_free(gin[i]);
    return st;
}

typedef struct node_list {
    ag_node **v;
    int n, cap;
} node_list;

static int list_push(node_list *l, ag_node *n)
{
    if (l->n == l->cap) {
        int nc = l->cap ? 2 * l->cap : 64;
        ag_node **v = realloc(l->v, sizeof *v * nc);
        if (!v) return 0;
        l->v = v, l->cap = nc;
    }
    l->v[l->n++] = n;
    return 1;
}

/* Nodes reachable from root in post order (inputs before the nodes that use them), each once,
 * each referenced. Iterative: graphs are deep. */
static wgt_status topo_order(wgt_context *ctx, ag_node *root, unsigned epoch, node_list *order)
{
    node_list stack = {0};
    /* the stack holds (node, next input to visit) pairs, packed as two pushes */
    wgt_status st = WGT_OK;
    root->epoch = epoch;
    if (!list_push(&stack, root) || !list_push(&stack, NULL)) goto oom;
    while (stack.n) {
        intptr_t next = (intptr_t)stack.v[stack.n - 1];
        ag_node *n = stack.v[stack.n - 2];
        if (n->released) {
            st = wgt_ctx_error(ctx, WGT_ERR_MISUSE,
                               "wgt_backward: the graph through %s was freed by an earlier wgt_backward; pass "
                               "retain_graph = 1 to the first call to run backward through it again",
                               n->rule ? n->rule->name : "an op");
            break;
        }
        int i = (int)next;
        while (i < n->n_in && !(n->in_meta[i] && n->in_meta[i]->fn && n->in_meta[i]->fn->epoch != epoch)) i++;
        if (i < n->n_in) {
            ag_node *in = n->in_meta[i]->fn;
            stack.v[stack.n - 1] = (ag_node *)(intptr_t)(i + 1);
            in->epoch = epoch;
            if (!list_push(&stack, in) || !list_push(&stack, NULL)) goto oom;
            continue;
        }
        stack.n -= 2;
        n->refs++;
        if (!list_push(order, n)) {
            n->refs--;
            goto oom;
        }
    }
    free(stack.v);
    return st;
oom:
    free(stack.v);
    return wgt_ctx_error(ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_backward: out of host memory for the graph walk");
}

wgt_status wgt_backward(const wgt_tensor *loss, const wgt_tensor *grad_output, int retain_graph)
{
    static unsigned epochs;
    if (!loss) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_backward: loss is NULL");
    wgt_context *ctx = loss->st->ctx;
    wgt_status st = wgt_ctx_check(ctx);
    if (st) return st;
    struct ag_meta *m = loss->ag;
    if (!meta_requires(m))
        return wgt_ctx_error(ctx, WGT_ERR_MISUSE,
                             "wgt_backward: the loss does not require grad: no input of the ops that made it "
                             "had wgt_tensor_set_requires_grad, or it was computed under wgt_grad_mode_set(0)");
    wgt_tensor *g0 = NULL;
    if (grad_output) {
        if (grad_output->st->ctx != ctx)
            return wgt_ctx_error(ctx, WGT_ERR_INVALID_ARGUMENT, "wgt_backward: grad_output is on another context");
        if (grad_output->l.ndim != loss->l.ndim ||
            memcmp(grad_output->l.shape, loss->l.shape, sizeof(int64_t) * loss->l.ndim))
            return wgt_ctx_error(ctx, WGT_ERR_SHAPE, "wgt_backward: grad_output must have the loss's shape");
        if (!op_is_float(grad_output->l.dtype))
            return wgt_ctx_error(ctx, WGT_ERR_DTYPE, "wgt_backward: grad_output must be f32, f16 or bf16, not %s",
                                 wgt_dtype_name(grad_output->l.dtype));
        st = wgt_tensor_cast(grad_output, WGT_F32, &g0);
    } else {
        if (wgt_layout_numel(&loss->l) != 1)
            return wgt_ctx_error(ctx, WGT_ERR_SHAPE,
                                 "wgt_backward: the loss has %lld elements; a gradient is implicit only for one "
                                 "element: pass grad_output of the loss's shape",
                                 (long long)wgt_layout_numel(&loss->l));
        st = wgt_full(ctx, WGT_F32, loss->l.ndim, loss->l.shape, 1.0, &g0);
    }
    if (st) return st;
    if (!m->fn) { /* the loss is a leaf: its gradient is grad_output itself */
        st = accumulate_leaf(m, g0);
        wgt_tensor_free(g0);
        return st;
    }
    int mode = op_grad_mode();
    op_grad_mode_set(0); /* formulas are not themselves recorded (no higher-order gradients) */
    node_list order = {0};
    ag_node *root = m->fn;
    st = topo_order(ctx, root, ++epochs, &order);
    if (!st) {
        wgt_tensor_free(root->grad);
        root->grad = g0;
        g0 = NULL;
    }
    /* post order reversed: every consumer of a tensor runs before the node that made it */
    for (int k = order.n - 1; k >= 0 && !st; k--) {
        ag_node *n = order.v[k];
        if (n->grad) st = node_backward(ctx, n);
        wgt_tensor_free(n->grad);
        n->grad = NULL;
        if (!retain_graph) node_release(n);
    }
    for (int k = 0; k < order.n; k++) {
        wgt_tensor_free(order.v[k]->grad);
        order.v[k]->grad = NULL;
        node_unref(order.v[k]);
    }
    free(order.v);
    wgt_tensor_free(g0);
    op_grad_mode_set(mode);
    return st;
}

/* ---- the rest of the public API -------------------------------------------------------------- */

wgt_status wgt_tensor_set_requires_grad(wgt_tensor *t, int requires_grad)
{
    if (!t) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_tensor_set_requires_grad: NULL tensor");
    wgt_context *ctx = t->st->ctx;
    if (t->ag && t->ag->fn)
        return wgt_ctx_error(ctx, WGT_ERR_MISUSE,
                             "wgt_tensor_set_requires_grad: the tensor is the result of an op (it requires grad "
                             "through its inputs); only leaves take the flag: use wgt_tensor_detach for a leaf copy");
    if (!requires_grad) {
        if (t->ag) t->ag->requires_grad = 0;
        return WGT_OK;
    }
    if (!op_is_float(t->l.dtype))
        return wgt_ctx_error(ctx, WGT_ERR_DTYPE,
                             "wgt_tensor_set_requires_grad: only f32, f16 and bf16 tensors have gradients, not %s",
                             wgt_dtype_name(t->l.dtype));
    struct ag_meta *m = NULL;
    wgt_status st = meta_of(t, &m);
    if (!st) m->requires_grad = 1;
    return st;
}

int wgt_tensor_requires_grad(const wgt_tensor *t) { return t && meta_requires(t->ag); }

op_grad_id ag_tensor_op(const wgt_tensor *t) { return t && t->ag && t->ag->fn ? t->ag->fn->op : OP_GRAD_NONE; }

int wgt_tensor_is_leaf(const wgt_tensor *t) { return !t || !t->ag || !t->ag->fn; }

wgt_status wgt_tensor_grad(const wgt_tensor *t, wgt_tensor **out)
{
    if (!t || !out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_tensor_grad: NULL argument");
    *out = NULL;
    if (!t->ag || !t->ag->grad) return WGT_OK;
    *out = wgt_tensor_ref(t->ag->grad);
    return *out ? WGT_OK : wgt_ctx_error(t->st->ctx, WGT_ERR_OUT_OF_MEMORY, "wgt_tensor_grad: out of host memory");
}

void wgt_tensor_zero_grad(wgt_tensor *t)
{
    if (!t || !t->ag) return;
    wgt_tensor_free(t->ag->grad);
    t->ag->grad = NULL;
}

wgt_status wgt_tensor_detach(const wgt_tensor *t, wgt_tensor **out)
{
    if (!t || !out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_tensor_detach: NULL argument");
    return wgt_tensor_new_view(t, &t->l, out);
}

void wgt_grad_mode_set(int enabled) { op_grad_mode_set(enabled != 0); }
int wgt_grad_mode_get(void) { return op_grad_mode(); }
