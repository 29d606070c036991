/*
 * The recorder: how ops tell autograd what they computed, without knowing autograd exists.
 *
 * Each differentiable op, after computing its result, makes one call:
 *
 *     return op_record(st, OP_GRAD_FOO, inputs, n_inputs, &params, sizeof params, out);
 *
 * It returns st at once when st is a failure, when grad mode is off, or when no input carries
 * autograd state (the common case: inference never leaves this function). Otherwise it calls the
 * hook that src/autograd installs (this layer holds only a function pointer: autograd sits above
 * ops and neither ops nor the tensor layer include its headers). It lives in the tensor layer so
 * that the views (src/tensor/tensor.c) record through it as well as the ops of src/ops. The hook's table, keyed by the op id below, holds
 * the backward formula and what it saves (src/autograd/rules.c).
 *
 * inputs[i] may be NULL for an absent optional tensor (a bias); params are copied (at most
 * OP_RECORD_MAX_PARAMS bytes). A hook failure frees *out and is returned.
 */
#ifndef WGT_TENSOR_RECORD_H
#define WGT_TENSOR_RECORD_H

#include <stddef.h>

#include "wgt.h"

/* Op ids of the recorder (append only; one per op function that records). */
typedef enum op_grad_id {
    OP_GRAD_NONE = 0,
    /* elementwise (src/autograd/grad_elementwise.c) */
    OP_GRAD_UNARY,      /* params: op_grad_unary */
    OP_GRAD_BINARY,     /* params: wgt_binary_op */
    OP_GRAD_WHERE,      /* inputs: cond, a, b */
    OP_GRAD_CAST,       /* cast, copy, contiguous */
    /* views and shape ops (src/autograd/grad_shape.c) */
    OP_GRAD_RESHAPE,    /* reshape, squeeze, unsqueeze: the gradient takes the input's shape back */
    OP_GRAD_TRANSPOSE,  /* params: int[2] */
    OP_GRAD_PERMUTE,    /* params: int[ndim] */
    OP_GRAD_NARROW,     /* params: op_grad_narrow */
    OP_GRAD_EXPAND,
    OP_GRAD_CAT,        /* params: int dim; inputs: the n tensors */
    /* reductions (src/autograd/grad_reduce.c) */
    OP_GRAD_REDUCE,     /* params: op_grad_reduce */
    OP_GRAD_EXTREME_DIM,/* max_dim/min_dim values; inputs: x, indices; params: op_grad_reduce */
    /* matrix products (src/autograd/grad_matmul.c) */
    OP_GRAD_MATMUL,
    OP_GRAD_LINEAR,     /* inputs: x, w, bias */
    OP_GRAD_ADDMM,      /* inputs: self, m1, m2; params: double[2] beta, alpha */
    /* softmax and normalisation (src/autograd/grad_norm.c) */
    OP_GRAD_SOFTMAX,    /* params: int dim */
    OP_GRAD_LOG_SOFTMAX,/* params: int dim */
    OP_GRAD_LAYER_NORM, /* inputs: x, weight, bias; params: op_grad_norm */
    OP_GRAD_RMS_NORM,   /* inputs: x, weight; params: op_grad_norm */
    /* indexing (src/autograd/grad_index.c) */
    OP_GRAD_EMBEDDING,  /* inputs: weight, ids */
    OP_GRAD_INDEX_SELECT, /* inputs: x, index; params: int dim */
    OP_GRAD_GATHER,     /* inputs: x, index; params: int dim */
    OP_GRAD_MASKED_FILL,/* inputs: x, mask */
    /* losses (src/autograd/grad_loss.c) */
    OP_GRAD_CROSS_ENTROPY, /* inputs: input, target, weight; params: op_grad_loss */
    OP_GRAD_NLL,        /* inputs: input, target, weight; params: op_grad_loss */
    OP_GRAD_MSE,        /* inputs: input, target; params: op_grad_loss */
    OP_GRAD_L1,
    OP_GRAD_SMOOTH_L1,
    OP_GRAD_BCE,        /* inputs: input, target, weight */
    OP_GRAD_BCE_LOGITS, /* inputs: input, target, weight, pos_weight */
    OP_GRAD_KL_DIV,
    /* transformer ops (src/autograd/grad_attention.c) */
    OP_GRAD_ROPE,       /* inputs: x, positions; params: op_grad_rope */
    OP_GRAD_SDPA,       /* inputs: q, k, v, mask; params: wgt_sdpa_params */
    /* convolutions and pooling (src/autograd/grad_conv.c, grad_pool.c) */
    OP_GRAD_CONV,       /* conv and conv_transpose; inputs: x, weight, bias; params: op_grad_conv */
    OP_GRAD_MAX_POOL,   /* max and adaptive max pools; inputs: x, indices (i32, flat in a plane) */
    OP_GRAD_AVG_POOL,   /* avg and adaptive avg pools; inputs: x; params: op_grad_pool */
    OP_GRAD_INTERPOLATE,/* inputs: x; params: op_grad_interp (src/autograd/grad_pool.c) */
    /* group and batch norm (src/autograd/grad_norm_batch.c) */
    OP_GRAD_GROUP_NORM, /* inputs: x, weight, bias, NULL, NULL; params: op_grad_batch_norm */
    OP_GRAD_BATCH_NORM, /* inputs: x, weight, bias, running_mean, running_var; params: op_grad_batch_norm */
    OP_GRAD_SCAN,       /* cumsum/cumprod/cummax/cummin; inputs: x, indices (cummax/cummin) (grad_scan.c) */
    OP_GRAD_SCATTER,    /* scatter, scatter_add; inputs: self, index, src; params: op_grad_scatter (grad_index.c) */
    OP_GRAD_INDEX_ADD,  /* inputs: self, index, source; params: op_grad_scatter (alpha) */
    OP_GRAD_GRID_SAMPLE,/* inputs: x, grid; params: op_grad_grid (grad_pool.c) */
    OP_GRAD_DROPOUT,    /* inputs: x, mask (bool, the kept elements); params: double scale 1 / (1 - p) */
    OP_GRAD_NONDIFF,    /* an op declared without a gradient; params: its name (op_record_nondiff) */
    OP_GRAD_MOVE,       /* flip, roll, repeat, pad, tril/triu; inputs: x; params: op_grad_move (grad_shape.c) */
    OP_GRAD_SELECT,     /* sort/topk/kthvalue/median values; inputs: x, indices; params: op_grad_select */
    /* rules of ops first declared without one (2026-12-02) */
    OP_GRAD_BERNOULLI,  /* inputs: p (a zero gradient, as PyTorch's) (grad_misc.c) */
    OP_GRAD_MASKED_SELECT, /* inputs: x, mask (grad_index.c) */
    OP_GRAD_INDEX_PUT,  /* inputs: self, values, indices[k]; params: op_grad_index_put (grad_index.c) */
    OP_GRAD_COSINE_SIMILARITY, /* inputs: x1, x2; params: op_grad_cosine (grad_loss.c) */
    OP_GRAD_HUBER,      /* inputs: input, target; params: op_grad_loss (smoothing: delta) */
    OP_GRAD_DIFF,       /* inputs: x, prepend, append; params: op_grad_diff (grad_misc.c) */
    OP_GRAD_TRACE,      /* inputs: x (grad_misc.c) */
    OP_GRAD_DIAG,       /* inputs: x; params: op_grad_diag (dims unused) */
    OP_GRAD_DIAG_EMBED, /* inputs: x; params: op_grad_diag (dims resolved) */
    OP_GRAD_CDIST,      /* inputs: x1, x2; params: double p (grad_misc.c) */
    OP_GRAD_COUNT
} op_grad_id;

#define OP_RECORD_MAX_PARAMS 256

typedef struct op_grad_unary { wgt_unary_op op; wgt_unary_params p; } op_grad_unary;
typedef struct op_grad_narrow { int dim; int64_t start; } op_grad_narrow;
typedef struct op_grad_reduce { wgt_reduce_op op; uint32_t dims; int keepdim; double correction; } op_grad_reduce;
typedef struct op_grad_norm { int norm_ndim; double eps; } op_grad_norm;
typedef struct op_grad_loss {
    wgt_reduction reduction;
    int64_t ignore_index;
    double smoothing;  /* cross-entropy: label smoothing; smooth_l1: beta */
    int log_target;    /* kl_div */
} op_grad_loss;
typedef struct op_grad_rope { int rot_dim, interleaved; wgt_rope_params p; } op_grad_rope;
/* A convolution's geometry as its forward resolved it ('same' padding made explicit). */
typedef struct op_grad_conv {
    int transposed, groups;
    int64_t stride[3], dilation[3], pad_begin[3];
} op_grad_conv;
/* An average pool's windows over the last `spatial` dims; adaptive: output_size, else the rest. */
typedef struct op_grad_pool {
    int spatial, adaptive, count_include_pad;
    int64_t kernel[2], stride[2], padding[2], output_size[2], divisor_override;
} op_grad_pool;
typedef struct op_grad_interp { int spatial, mode, align_corners; double scales[2]; } op_grad_interp;
/* groups: group_norm's (batch_norm: 0); training 0: batch_norm normalised by its running stats */
typedef struct op_grad_batch_norm { int groups, training; double eps; } op_grad_batch_norm;
typedef struct op_grad_scan { wgt_scan_op op; int dim; } op_grad_scan;
typedef struct op_grad_scatter { int dim; wgt_scatter_mode mode; double alpha; } op_grad_scatter;
/* a movement of elements: op 0 flip (a[d] = 1 on flipped dims), 1 roll (a[d] = shift of dim d),
 * 2 repeat (a[d] = factor of output dim d, n output dims), 3 pad (a[d] before, a[n + d] after dim
 * d; mode), 4 tril / 5 triu (a[0] = k) */
typedef struct op_grad_move { int op, n, mode; int64_t a[2 * WGT_MAX_NDIM]; } op_grad_move;
typedef struct op_grad_select { int dim, keepdim; } op_grad_select;
typedef struct op_grad_grid { wgt_grid_mode mode; wgt_grid_padding padding; int align_corners; } op_grad_grid;
typedef struct op_grad_index_put { int k, accumulate; } op_grad_index_put;
typedef struct op_grad_cosine { int dim; double eps; } op_grad_cosine; /* dim of the broadcast shape */
typedef struct op_grad_diff { int n, dim; } op_grad_diff;              /* dim resolved */
typedef struct op_grad_diag { int64_t offset; int dim1, dim2; } op_grad_diag;

/* The hook autograd installs: make the graph node for out. */
typedef wgt_status (*op_record_fn)(op_grad_id op, const wgt_tensor *const *in, int n_in, const void *params,
                                   size_t params_bytes, wgt_tensor *out);
void op_record_set_hook(op_record_fn hook);

wgt_status op_record(wgt_status st, op_grad_id op, const wgt_tensor *const *in, int n_in, const void *params,
                     size_t params_bytes, wgt_tensor **out);

/* For an op with a float result and no gradient: records a node whose backward says that `name`
 * is not differentiable, so a loss computed through it fails with that message instead of
 * silently losing the inputs' gradients (the graph would otherwise be cut there). */
wgt_status op_record_nondiff(wgt_status st, const char *name, const wgt_tensor *const *in, int n_in, wgt_tensor **out);

/* Whether t requires grad (a leaf marked so, or a result with a node), asked of autograd through
 * a hook it installs (0 while autograd never ran): for the ops that must refuse tracked operands
 * (wgt_tensor_assign writes in place and cannot be recorded). */
typedef int (*op_tracked_fn)(const wgt_tensor *t);
void op_tracked_set_hook(op_tracked_fn hook);
int op_tracked(const wgt_tensor *t);

/* Grad mode of this thread (1 unless turned off: wgt_grad_mode_set). */
int op_grad_mode(void);
void op_grad_mode_set(int on);

#endif
