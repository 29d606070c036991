/*
 * Reverse-mode autograd over wgt tensors: the graph, the rule table and the helpers that backward
 * formulas are written with. Internal to src/autograd; the public API is in include/wgt.h.
 *
 * The graph: every tensor that requires grad carries an ag_meta (shared by its wgt_tensor_ref
 * handles). A leaf's meta holds requires_grad and the accumulated .grad; an op result's meta holds
 * the node that made it. A node holds references to its inputs' metas (the edges, NULL where an
 * input needs no gradient), their layouts, the params of the op, and detached handles of the
 * tensors its formula reads (saved[], chosen by the rule). Nothing points from a node to its
 * output, so the graph is acyclic and is freed by reference counts alone.
 *
 * A backward formula (ag_backward_fn) gets the output's gradient c->g (f32) and fills c->gin[i]
 * for each input i with c->need[i], in that input's shape. It composes public ops through the
 * ag_* helpers below, which keep every temporary in c and free them when the formula returns;
 * after a failure they return NULL and keep the first status, so a formula is written as plain
 * nested calls and checked once by the caller.
 */
#ifndef WGT_AUTOGRAD_AUTOGRAD_H
#define WGT_AUTOGRAD_AUTOGRAD_H

#include "tensor/record.h"
#include "tensor/tensor.h"

typedef struct ag_node ag_node;

struct ag_meta {
    int refs;
    int requires_grad; /* a leaf asked for its gradient */
    wgt_tensor *grad;  /* a leaf's accumulated gradient (f32, contiguous), or NULL */
    ag_node *fn;       /* the node that made this tensor; NULL for leaves */
};

typedef struct ag_call {
    wgt_context *ctx;
    const ag_node *node;
    const wgt_tensor *g;            /* gradient of the output, f32, the output's shape */
    const wgt_tensor *const *in;    /* saved inputs (NULL where the rule does not save one) */
    const wgt_tensor *out;          /* saved output or NULL */
    const wgt_layout *in_l;         /* every input's layout at record time (dtype, shape) */
    const wgt_layout *out_l;
    const void *params;
    int n_in;
    const int *need;                /* need[i]: the formula must fill gin[i] */
    wgt_tensor **gin;
    wgt_status st;                  /* first failure of a helper */
    wgt_tensor **tmp;               /* temporaries, freed after the formula */
    int n_tmp, cap_tmp;
} ag_call;

typedef wgt_status (*ag_backward_fn)(ag_call *c);
/* Which tensors a node keeps for its formula: bit i = input i, bit AG_SAVE_OUT = the output. */
#define AG_SAVE_OUT (1u << 31)
#define AG_SAVE_ALL_IN 0x7fffffffu
typedef uint32_t (*ag_saves_fn)(const void *params);

/* One backward rule, a RULE row of the op table (src/ops/optable.h). backward NULL: the op has no
 * gradient and says so when one is asked of it. */
typedef struct ag_rule {
    const char *name;
    op_grad_id op;
    ag_backward_fn backward;
    uint32_t saves;        /* fixed save mask, or */
    ag_saves_fn saves_fn;  /* a mask that depends on the params (NULL: use saves) */
} ag_rule;

const ag_rule *ag_rule_of(op_grad_id op);

/* ---- formula helpers (src/autograd/ag_ops.c): NULL after a failure, temporaries owned by c ---- */
/* Register a result of a public op: ag_keep(c, r, wgt_foo(..., &r)). A macro, so that the op runs
 * before r is read: C leaves the order of a call's arguments unspecified (GCC happens to evaluate
 * them right to left, clang left to right, which would read r before the op wrote it). */
wgt_tensor *ag_keep_result(ag_call *c, wgt_tensor *t, wgt_status st);
#define ag_keep(c, t, st) __extension__({ wgt_status ag_keep_st_ = (st); ag_keep_result((c), (t), ag_keep_st_); })
void ag_set(ag_call *c, int i, wgt_tensor *t);                  /* gin[i] = t (a new reference) */
wgt_tensor *ag_scalar(ag_call *c, double v);                    /* 0-D f32 */
wgt_tensor *ag_un(ag_call *c, wgt_unary_op op, const wgt_tensor *x);
wgt_tensor *ag_un_p(ag_call *c, wgt_unary_op op, const wgt_unary_params *p, const wgt_tensor *x);
wgt_tensor *ag_bin(ag_call *c, wgt_binary_op op, const wgt_tensor *a, const wgt_tensor *b);
wgt_tensor *ag_add(ag_call *c, const wgt_tensor *a, const wgt_tensor *b);
wgt_tensor *ag_sub(ag_call *c, const wgt_tensor *a, const wgt_tensor *b);
wgt_tensor *ag_mul(ag_call *c, const wgt_tensor *a, const wgt_tensor *b);
wgt_tensor *ag_div(ag_call *c, const wgt_tensor *a, const wgt_tensor *b);
wgt_tensor *ag_muls(ag_call *c, const wgt_tensor *a, double s);  /* a * s */
wgt_tensor *ag_adds(ag_call *c, const wgt_tensor *a, double s);  /* a + s */
wgt_tensor *ag_where(ag_call *c, const wgt_tensor *cond, const wgt_tensor *a, const wgt_tensor *b);
wgt_tensor *ag_cast(ag_call *c, const wgt_tensor *x, wgt_dtype dt);
wgt_tensor *ag_f32(ag_call *c, const wgt_tensor *x);            /* x as f32 (a reference if it is) */
wgt_tensor *ag_reduce(ag_call *c, wgt_reduce_op op, const wgt_tensor *x, uint32_t dims, int keepdim);
wgt_tensor *ag_sum_keep(ag_call *c, const wgt_tensor *x, int dim); /* sum over dim, kept as size 1 */
wgt_tensor *ag_reshape(ag_call *c, const wgt_tensor *x, int ndim, const int64_t *shape);
wgt_tensor *ag_reshape_as(ag_call *c, const wgt_tensor *x, const wgt_layout *l);
wgt_tensor *ag_expand_as(ag_call *c, const wgt_tensor *x, const wgt_layout *l);
wgt_tensor *ag_transpose(ag_call *c, const wgt_tensor *x, int d0, int d1);
wgt_tensor *ag_unsqueeze(ag_call *c, const wgt_tensor *x, int dim);
wgt_tensor *ag_narrow(ag_call *c, const wgt_tensor *x, int dim, int64_t start, int64_t len);
wgt_tensor *ag_matmul(ag_call *c, const wgt_tensor *a, const wgt_tensor *b);
wgt_tensor *ag_zeros(ag_call *c, int ndim, const int64_t *shape);  /* f32 */
/* The gradient g of a result broadcast from shape l, summed back to l's shape (NumPy rules). */
wgt_tensor *ag_sum_to(ag_call *c, const wgt_tensor *g, const wgt_layout *l);

/* Formulas of each family (grad_<family>.c), listed in the table of rules.c. */
wgt_status ag_grad_unary(ag_call *c);
uint32_t ag_saves_unary(const void *params);
wgt_status ag_grad_binary(ag_call *c);
uint32_t ag_saves_binary(const void *params);
wgt_status ag_grad_where(ag_call *c);
wgt_status ag_grad_cast(ag_call *c);
wgt_status ag_grad_reshape(ag_call *c);
wgt_status ag_grad_transpose(ag_call *c);
wgt_status ag_grad_permute(ag_call *c);
wgt_status ag_grad_narrow(ag_call *c);
wgt_status ag_grad_expand(ag_call *c);
wgt_status ag_grad_cat(ag_call *c);
wgt_status ag_grad_reduce(ag_call *c);
uint32_t ag_saves_reduce(const void *params);
wgt_status ag_grad_extreme_dim(ag_call *c);
wgt_status ag_grad_matmul(ag_call *c);
wgt_status ag_grad_linear(ag_call *c);
wgt_status ag_grad_addmm(ag_call *c);
wgt_status ag_grad_softmax(ag_call *c);
wgt_status ag_grad_log_softmax(ag_call *c);
wgt_status ag_grad_layer_norm(ag_call *c);
wgt_status ag_grad_rms_norm(ag_call *c);
wgt_status ag_grad_embedding(ag_call *c);
wgt_status ag_grad_index_select(ag_call *c);
wgt_status ag_grad_gather(ag_call *c);
wgt_status ag_grad_masked_fill(ag_call *c);
wgt_status ag_grad_cross_entropy(ag_call *c);
wgt_status ag_grad_nll(ag_call *c);
wgt_status ag_grad_mse(ag_call *c);
wgt_status ag_grad_l1(ag_call *c);
wgt_status ag_grad_smooth_l1(ag_call *c);
wgt_status ag_grad_bce(ag_call *c);
wgt_status ag_grad_bce_logits(ag_call *c);
wgt_status ag_grad_kl_div(ag_call *c);
wgt_status ag_grad_rope(ag_call *c);
wgt_status ag_grad_sdpa(ag_call *c);
wgt_status ag_grad_conv(ag_call *c);
wgt_status ag_grad_max_pool(ag_call *c);
wgt_status ag_grad_avg_pool(ag_call *c);
wgt_status ag_grad_interpolate(ag_call *c);
wgt_status ag_grad_batch_norm(ag_call *c); /* and group_norm */
wgt_status ag_grad_scan(ag_call *c);
uint32_t ag_saves_scan(const void *params);
wgt_status ag_grad_grid_sample(ag_call *c);
wgt_status ag_grad_scatter(ag_call *c);
uint32_t ag_saves_scatter(const void *params);
wgt_status ag_grad_index_add(ag_call *c);
wgt_status ag_grad_dropout(ag_call *c);
wgt_status ag_grad_move(ag_call *c);
wgt_status ag_grad_select(ag_call *c);
wgt_status ag_grad_bernoulli(ag_call *c);
wgt_status ag_grad_masked_select(ag_call *c);
wgt_status ag_grad_index_put(ag_call *c);
wgt_status ag_grad_cosine_similarity(ag_call *c);
wgt_status ag_grad_huber(ag_call *c);
wgt_status ag_grad_diff(ag_call *c);
wgt_status ag_grad_trace(ag_call *c);
wgt_status ag_grad_diag(ag_call *c);
wgt_status ag_grad_diag_embed(ag_call *c);
wgt_status ag_grad_cdist(ag_call *c);
uint32_t ag_saves_index_put(const void *params);

/* The op that made t while autograd recorded (OP_GRAD_NONE: a leaf, a tensor made without
 * recording, or an integer result), for tests that audit which ops record. */
op_grad_id ag_tensor_op(const wgt_tensor *t);

#endif
