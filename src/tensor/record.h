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

/* The recorder ids (enum op_grad_id: OP_GRAD_NONE, one per RULE row of the op table, OP_GRAD_COUNT),
 * written by the build from src/ops/<family>.def (cmake/gen_optable.cmake reads the rows as text: this
 * layer may not include src/ops). What each id's node takes as inputs and params is said beside its
 * RULE row; the params structs are below. The numbers are not stored anywhere. */
#include "generated/op_grad_ids.h"

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
