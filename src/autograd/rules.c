/* The table of differentiable ops: the one place that lists them. Each entry names the op, its
 * recorder id (src/ops/record.h), its backward formula (grad_<family>.c) and the tensors its node
 * saves (bit i: input i, AG_SAVE_OUT: the output). Issue 12's op table is to absorb these entries. */
#include "autograd/autograd.h"

#define IN(i) (1u << (i))

static const ag_rule rules[] = {
    /* elementwise */
    {"unary", OP_GRAD_UNARY, ag_grad_unary, 0, ag_saves_unary},
    {"binary", OP_GRAD_BINARY, ag_grad_binary, 0, ag_saves_binary},
    {"where", OP_GRAD_WHERE, ag_grad_where, IN(0), NULL},
    {"cast", OP_GRAD_CAST, ag_grad_cast, 0, NULL},
    /* views and shape ops */
    {"reshape", OP_GRAD_RESHAPE, ag_grad_reshape, 0, NULL},
    {"transpose", OP_GRAD_TRANSPOSE, ag_grad_transpose, 0, NULL},
    {"permute", OP_GRAD_PERMUTE, ag_grad_permute, 0, NULL},
    {"narrow", OP_GRAD_NARROW, ag_grad_narrow, 0, NULL},
    {"expand", OP_GRAD_EXPAND, ag_grad_expand, 0, NULL},
    {"cat", OP_GRAD_CAT, ag_grad_cat, 0, NULL},
    /* reductions */
    {"reduce", OP_GRAD_REDUCE, ag_grad_reduce, 0, ag_saves_reduce},
    {"max_dim/min_dim", OP_GRAD_EXTREME_DIM, ag_grad_extreme_dim, IN(1), NULL},
    /* matrix products */
    {"matmul", OP_GRAD_MATMUL, ag_grad_matmul, IN(0) | IN(1), NULL},
    {"linear", OP_GRAD_LINEAR, ag_grad_linear, IN(0) | IN(1), NULL},
    {"addmm", OP_GRAD_ADDMM, ag_grad_addmm, IN(1) | IN(2), NULL},
    /* convolutions and pooling */
    {"conv", OP_GRAD_CONV, ag_grad_conv, IN(0) | IN(1), NULL},
    {"max_pool", OP_GRAD_MAX_POOL, ag_grad_max_pool, IN(1), NULL},
    {"avg_pool", OP_GRAD_AVG_POOL, ag_grad_avg_pool, 0, NULL},
    {"interpolate", OP_GRAD_INTERPOLATE, ag_grad_interpolate, 0, NULL},
    {"group_norm", OP_GRAD_GROUP_NORM, ag_grad_batch_norm, IN(0) | IN(1), NULL},
    {"batch_norm", OP_GRAD_BATCH_NORM, ag_grad_batch_norm, IN(0) | IN(1) | IN(3) | IN(4), NULL},
    {"scan", OP_GRAD_SCAN, ag_grad_scan, IN(1), NULL},
    /* softmax and normalisation (statistics recomputed from the saved input) */
    {"softmax", OP_GRAD_SOFTMAX, ag_grad_softmax, AG_SAVE_OUT, NULL},
    {"log_softmax", OP_GRAD_LOG_SOFTMAX, ag_grad_log_softmax, AG_SAVE_OUT, NULL},
    {"layer_norm", OP_GRAD_LAYER_NORM, ag_grad_layer_norm, IN(0) | IN(1), NULL},
    {"rms_norm", OP_GRAD_RMS_NORM, ag_grad_rms_norm, IN(0) | IN(1), NULL},
    /* indexing */
    {"embedding", OP_GRAD_EMBEDDING, ag_grad_embedding, IN(1), NULL},
    {"index_select", OP_GRAD_INDEX_SELECT, ag_grad_index_select, IN(1), NULL},
    {"gather", OP_GRAD_GATHER, ag_grad_gather, IN(1), NULL},
    {"masked_fill", OP_GRAD_MASKED_FILL, ag_grad_masked_fill, IN(1), NULL},
    /* losses */
    {"cross_entropy", OP_GRAD_CROSS_ENTROPY, ag_grad_cross_entropy, IN(0) | IN(1) | IN(2), NULL},
    {"nll_loss", OP_GRAD_NLL, ag_grad_nll, IN(1) | IN(2), NULL},
    {"mse_loss", OP_GRAD_MSE, ag_grad_mse, IN(0) | IN(1), NULL},
    {"l1_loss", OP_GRAD_L1, ag_grad_l1, IN(0) | IN(1), NULL},
    {"smooth_l1_loss", OP_GRAD_SMOOTH_L1, ag_grad_smooth_l1, IN(0) | IN(1), NULL},
    {"binary_cross_entropy", OP_GRAD_BCE, ag_grad_bce, IN(0) | IN(1) | IN(2), NULL},
    {"binary_cross_entropy_with_logits", OP_GRAD_BCE_LOGITS, ag_grad_bce_logits, AG_SAVE_ALL_IN, NULL},
    {"kl_div", OP_GRAD_KL_DIV, ag_grad_kl_div, IN(0) | IN(1), NULL},
    /* transformer ops */
    {"rope", OP_GRAD_ROPE, ag_grad_rope, IN(1), NULL},
    {"sdpa", OP_GRAD_SDPA, ag_grad_sdpa, IN(0) | IN(1) | IN(2) | IN(3), NULL},
};

const ag_rule *ag_rule_of(op_grad_id op)
{
    static const ag_rule *by_id[OP_GRAD_COUNT];
    static int indexed;
    if (!indexed) {
        for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) by_id[rules[i].op] = &rules[i];
        indexed = 1;
    }
    return (unsigned)op < OP_GRAD_COUNT ? by_id[op] : NULL;
}
