/* The CPU reference: a plain C implementation of every op, the oracle for differential tests and
 * the fallback for ops without a GPU kernel.
 *
 * Conventions (every function below):
 *  - Outputs are allocated by the caller with their final shape and dtype (shape rules live in
 *    src/ops/); each function checks the shapes it relies on and returns WGT_ERR_SHAPE /
 *    WGT_ERR_DTYPE / WGT_ERR_INVALID_ARGUMENT with a message instead of crashing.
 *  - Any layout is accepted (strides, offsets, broadcast strides of 0) for inputs and outputs.
 *    Outputs must not overlap inputs, except that elementwise ops (unary, binary, where, lerp,
 *    addcmul, addcdiv, cast, copy, masked_fill) may write in place over an input of out's layout,
 *    and scatter/index_add/index_put may take out == self.
 *  - Float math runs in double and is rounded once when stored (f32, f16, bf16: round to nearest
 *    even). Integer math runs exactly in int64 and wraps to the output's width when stored.
 *    An op runs in integers when its inputs and output are all integers (bool counts as one) and
 *    it has an integer form; the others (exp, sin, ...) run in double on any input and store
 *    their result by the rules below.
 *  - Stores from a float value to an integer dtype truncate toward zero, saturate at the dtype's
 *    limits and turn NaN into 0 (PyTorch leaves these cases undefined); to bool: x != 0 (NaN is true).
 *  - Dimensions are given as non-negative indices (callers normalise negative ones); sets of
 *    dimensions are bit masks (bit d = dimension d).
 *  - Semantics are PyTorch's; where ONNX differs the comment says so.
 */
#ifndef WGT_CPU_CPU_H
#define WGT_CPU_CPU_H

#include <stdint.h>

#include "cpu/op_kinds.h"
#include "core/layout.h"
#include "wgt.h"

/* A tensor in host memory: data is the start of the storage, element i of the layout lives at
 * (char *)data + wgt_layout_index(&l, i) * wgt_dtype_size(l.dtype). */
typedef struct wgt_cpu_tensor {
    void *data;
    wgt_layout l;
} wgt_cpu_tensor;

/* ---- Elements -------------------------------------------------------------------------------- */

/* 1 for f32, f16, bf16. */
int wgt_cpu_is_float(wgt_dtype dtype);
/* Load the element at storage index `at` (an element offset, as from wgt_layout_index). */
double wgt_cpu_load_f(const wgt_cpu_tensor *t, int64_t at);
int64_t wgt_cpu_load_i(const wgt_cpu_tensor *t, int64_t at); /* floats: truncated, see above */
/* Store with the rounding/wrapping rules above. */
void wgt_cpu_store_f(const wgt_cpu_tensor *t, int64_t at, double v);
void wgt_cpu_store_i(const wgt_cpu_tensor *t, int64_t at, int64_t v);
/* Conversions between double and the 16-bit float formats (round to nearest even, once). */
uint16_t wgt_cpu_f64_to_f16(double v);
uint16_t wgt_cpu_f64_to_bf16(double v);
double wgt_cpu_f16_to_f64(uint16_t h);
double wgt_cpu_bf16_to_f64(uint16_t h);
/* The value a float dtype holds nearest to v (f32, f16, bf16 rounding; v itself otherwise). */
double wgt_cpu_round_to(wgt_dtype dtype, double v);

/* Make a contiguous tensor view over data. */
wgt_cpu_tensor wgt_cpu_tensor_make(void *data, wgt_dtype dtype, int ndim, const int64_t *shape);
/* Check a tensor's layout (dtype, ndim, sizes, strides, data present); what names it in messages. */
wgt_status wgt_cpu_check(const wgt_cpu_tensor *t, const char *what);
/* The layout of `in` broadcast (NumPy rules, aligned on the right) to `shape`. */
wgt_status wgt_cpu_broadcast_to(const wgt_layout *in, int ndim, const int64_t *shape,
                                wgt_layout *res, const char *what);

/* ---- Elementwise ------------------------------------------------------------------------------ */

/* out = op(x); x broadcasts to out. params NULL: wgt_unary_params_default(op). */
wgt_status wgt_cpu_unary(wgt_unary_op op, const wgt_unary_params *params, const wgt_cpu_tensor *x,
                         const wgt_cpu_tensor *out);
/* out = op(a, b); a and b broadcast to out. Comparisons and logical ops compare a and b exactly
 * (in int64 when both are integers, else in double) and store 0/1. Integer division or remainder
 * by zero gives 0 (PyTorch raises); INT64_MIN / -1 wraps. Integer pow with a negative exponent
 * gives 1 / base truncated (1, -1 or 0). Shifts by a negative amount or the width or more give 0
 * (or -1 for an arithmetic right shift of a negative value). */
wgt_status wgt_cpu_binary(wgt_binary_op op, const wgt_cpu_tensor *a, const wgt_cpu_tensor *b,
                          const wgt_cpu_tensor *out);
/* out = cond ? a : b (cond: any dtype, nonzero is true); all three broadcast to out. */
wgt_status wgt_cpu_where(const wgt_cpu_tensor *cond, const wgt_cpu_tensor *a,
                         const wgt_cpu_tensor *b, const wgt_cpu_tensor *out);
/* out = start + weight * (end - start), PyTorch's two-sided formula; all broadcast. */
wgt_status wgt_cpu_lerp(const wgt_cpu_tensor *start, const wgt_cpu_tensor *end,
                        const wgt_cpu_tensor *weight, const wgt_cpu_tensor *out);
/* out = self + value * t1 * t2, and self + value * t1 / t2; all broadcast. */
wgt_status wgt_cpu_addcmul(const wgt_cpu_tensor *self, const wgt_cpu_tensor *t1,
                           const wgt_cpu_tensor *t2, double value, const wgt_cpu_tensor *out);
wgt_status wgt_cpu_addcdiv(const wgt_cpu_tensor *self, const wgt_cpu_tensor *t1,
                           const wgt_cpu_tensor *t2, double value, const wgt_cpu_tensor *out);
/* out = x converted to out's dtype (rules above); x broadcasts to out. */
wgt_status wgt_cpu_cast(const wgt_cpu_tensor *x, const wgt_cpu_tensor *out);
/* out = x with the same dtype (also an expand when x broadcasts to out). */
wgt_status wgt_cpu_copy(const wgt_cpu_tensor *x, const wgt_cpu_tensor *out);
/* Every element of out = value. */
wgt_status wgt_cpu_full(double value, const wgt_cpu_tensor *out);

/* ---- Reductions and scans (reduce.c) ---------------------------------------------------------- */

/* out = op over the dims in `dims` (bit mask; 0 means all dims) of x. out has x's shape with those
 * dims removed (keepdim 0) or set to 1 (keepdim 1). correction: var/std only (1 = unbiased).
 * indices (optional, an integer tensor of out's shape): for amax/amin, the index of the first
 * extreme element, row-major over the reduced dims. argmax/argmin write that index into out.
 * Reducing an empty set: sum 0, prod 1, mean NaN, all 1, any 0, logsumexp -inf; amax, amin,
 * argmax, argmin are WGT_ERR_SHAPE (PyTorch raises too). */
wgt_status wgt_cpu_reduce(wgt_reduce_op op, const wgt_cpu_tensor *x, uint32_t dims, int keepdim,
                          double correction, const wgt_cpu_tensor *out,
                          const wgt_cpu_tensor *indices);
/* Scan along dim; out has x's shape. exclusive: shift by one (the first element is the identity,
 * ONNX CumSum's exclusive); reverse: scan from the end (ONNX). indices: cummax/cummin only. */
wgt_status wgt_cpu_scan(wgt_scan_op op, const wgt_cpu_tensor *x, int dim, int exclusive,
                        int reverse, const wgt_cpu_tensor *out, const wgt_cpu_tensor *indices);

/* ---- Matrix products (matmul.c) --------------------------------------------------------------- */

/* torch.matmul: 1-D operands gain a dimension that is removed afterwards; batch dims broadcast.
 * a [..., M, K] (or [K]), b [..., K, N] (or [K]), out [broadcast batch..., M, N] (minus 1-D dims). */
wgt_status wgt_cpu_matmul(const wgt_cpu_tensor *a, const wgt_cpu_tensor *b,
                          const wgt_cpu_tensor *out);
/* out [..., O] = x [..., I] @ w [O, I]^T + bias [O] (bias may be NULL). */
wgt_status wgt_cpu_linear(const wgt_cpu_tensor *x, const wgt_cpu_tensor *w,
                          const wgt_cpu_tensor *bias, const wgt_cpu_tensor *out);
/* out [M, N] = beta * self + alpha * (m1 [M, K] @ m2 [K, N]); self broadcasts to out and may be
 * NULL; with beta == 0, self is not read (NaN in it does not propagate, as PyTorch). */
wgt_status wgt_cpu_addmm(const wgt_cpu_tensor *self, const wgt_cpu_tensor *m1,
                         const wgt_cpu_tensor *m2, double beta, double alpha,
                         const wgt_cpu_tensor *out);
/* out [B, M, N] = beta * self + alpha * (b1 [B, M, K] @ b2 [B, K, N]). */
wgt_status wgt_cpu_baddbmm(const wgt_cpu_tensor *self, const wgt_cpu_tensor *b1,
                           const wgt_cpu_tensor *b2, double beta, double alpha,
                           const wgt_cpu_tensor *out);
/* out [N, M] = a [N] outer b [M]. */
wgt_status wgt_cpu_outer(const wgt_cpu_tensor *a, const wgt_cpu_tensor *b,
                         const wgt_cpu_tensor *out);

/* ---- Softmax and normalisation (norm.c) ------------------------------------------------------- */

wgt_status wgt_cpu_softmax(const wgt_cpu_tensor *x, int dim, const wgt_cpu_tensor *out);
wgt_status wgt_cpu_log_softmax(const wgt_cpu_tensor *x, int dim, const wgt_cpu_tensor *out);
/* Normalise over the last `norm_ndim` dims of x; weight/bias [those dims] may be NULL.
 * mean/rstd (optional): x's shape with the normalised dims set to 1 (ONNX LayerNormalization). */
wgt_status wgt_cpu_layer_norm(const wgt_cpu_tensor *x, int norm_ndim, const wgt_cpu_tensor *weight,
                              const wgt_cpu_tensor *bias, double eps, const wgt_cpu_tensor *out,
                              const wgt_cpu_tensor *mean, const wgt_cpu_tensor *rstd);
/* out = x / sqrt(mean(x^2 over the last norm_ndim dims) + eps) * weight (weight may be NULL). */
wgt_status wgt_cpu_rms_norm(const wgt_cpu_tensor *x, int norm_ndim, const wgt_cpu_tensor *weight,
                            double eps, const wgt_cpu_tensor *out);
/* x [N, C, *]: normalise each of `groups` groups of C/groups channels; weight/bias [C] or NULL. */
wgt_status wgt_cpu_group_norm(const wgt_cpu_tensor *x, int groups, const wgt_cpu_tensor *weight,
                              const wgt_cpu_tensor *bias, double eps, const wgt_cpu_tensor *out);
/* x [N, C, *]. Inference (training 0): normalise with running_mean/var [C]. Training: with the
 * batch's statistics (biased variance), then, when running_mean/var are given, update them in
 * place: r = (1 - momentum) r + momentum * batch (the variance unbiased), PyTorch's convention
 * (ONNX's momentum is 1 - PyTorch's and it keeps the biased variance). */
wgt_status wgt_cpu_batch_norm(const wgt_cpu_tensor *x, const wgt_cpu_tensor *running_mean,
                              const wgt_cpu_tensor *running_var, const wgt_cpu_tensor *weight,
                              const wgt_cpu_tensor *bias, int training, double momentum,
                              double eps, const wgt_cpu_tensor *out);

/* ---- Indexing (index.c) ------------------------------------------------------------------------
 * Index tensors have any integer dtype. An index out of range is WGT_ERR_INVALID_ARGUMENT naming
 * it. Indices in [-n, 0) count from the end (ONNX and Python indexing allow them; torch.gather,
 * scatter and index_select raise instead), except in embedding, which refuses them as PyTorch does. */

/* out = x with dimension dim taken at index [K] (1-D): out.shape[dim] = K. */
wgt_status wgt_cpu_index_select(const wgt_cpu_tensor *x, int dim, const wgt_cpu_tensor *index,
                                const wgt_cpu_tensor *out);
/* out[i][j]..= x[..index[i][j]..] along dim; index and out have the same shape, and index's
 * other dims are <= x's. */
wgt_status wgt_cpu_gather(const wgt_cpu_tensor *x, int dim, const wgt_cpu_tensor *index,
                          const wgt_cpu_tensor *out);
/* out = self, then for every element of index: out[..index..] (mode)= src[same position].
 * src has index's shape or larger (or is broadcast: strides 0); out has self's shape.
 * self and out may be the same tensor (in place). */
wgt_status wgt_cpu_scatter(const wgt_cpu_tensor *self, int dim, const wgt_cpu_tensor *index,
                           const wgt_cpu_tensor *src, wgt_scatter_mode mode,
                           const wgt_cpu_tensor *out);
wgt_status wgt_cpu_scatter_add(const wgt_cpu_tensor *self, int dim, const wgt_cpu_tensor *index,
                               const wgt_cpu_tensor *src, const wgt_cpu_tensor *out);
/* out = self; out.select(dim, index[i]) += alpha * source.select(dim, i). index is 1-D. */
wgt_status wgt_cpu_index_add(const wgt_cpu_tensor *self, int dim, const wgt_cpu_tensor *index,
                             const wgt_cpu_tensor *source, double alpha,
                             const wgt_cpu_tensor *out);
/* out = self; out[idx0, idx1, .., idx{k-1}] (=|+=) values. The k index tensors broadcast to one
 * shape S; values broadcast to S + self.shape[k:]. */
wgt_status wgt_cpu_index_put(const wgt_cpu_tensor *self, const wgt_cpu_tensor *const *indices,
                             int k, const wgt_cpu_tensor *values, int accumulate,
                             const wgt_cpu_tensor *out);
/* out = mask ? value : x; x and mask broadcast to out. */
wgt_status wgt_cpu_masked_fill(const wgt_cpu_tensor *x, const wgt_cpu_tensor *mask, double value,
                               const wgt_cpu_tensor *out);
/* The elements of x (broadcast with mask) where mask is set, row-major, into out (1-D, at least
 * *count long; NULL only counts). *count gets the number selected. */
wgt_status wgt_cpu_masked_select(const wgt_cpu_tensor *x, const wgt_cpu_tensor *mask,
                                 const wgt_cpu_tensor *out, int64_t *count);
/* out [cap, ndim(x)] (integer, may be NULL): coordinates of the nonzero elements of x, row-major;
 * *count gets their number (ONNX NonZero's output is the transpose of this). */
wgt_status wgt_cpu_nonzero(const wgt_cpu_tensor *x, const wgt_cpu_tensor *out, int64_t *count);
/* out [ids..., D] = weight [V, D] rows at ids (any shape). In rope.c, with the forward's family. */
wgt_status wgt_cpu_embedding(const wgt_cpu_tensor *weight, const wgt_cpu_tensor *ids,
                             const wgt_cpu_tensor *out);
/* out has x's shape with a new dim of size depth inserted at axis: on_value where the index equals
 * the position, off_value elsewhere. Negative indices count from the end and indices out of
 * [-depth, depth) give a row of off_value (ONNX OneHot; torch.one_hot raises instead). */
wgt_status wgt_cpu_one_hot(const wgt_cpu_tensor *x, int axis, double off_value, double on_value,
                           const wgt_cpu_tensor *out);

/* ---- Creation and shape (shape.c) ------------------------------------------------------------- */

/* Keep the elements on and below (tril) / on and above (triu) diagonal k of the last two dims. */
wgt_status wgt_cpu_tril(const wgt_cpu_tensor *x, int64_t k, const wgt_cpu_tensor *out);
wgt_status wgt_cpu_triu(const wgt_cpu_tensor *x, int64_t k, const wgt_cpu_tensor *out);
/* out[i] = start + i * step (1-D; the caller sizes it). Integer outputs compute exactly when start
 * and step are integers. */
wgt_status wgt_cpu_arange(double start, double step, const wgt_cpu_tensor *out);
/* out (1-D, n elements) evenly from start to end inclusive, PyTorch's two-sided formula. */
wgt_status wgt_cpu_linspace(double start, double end, const wgt_cpu_tensor *out);
/* out (2-D): 1 on the main diagonal, 0 elsewhere. */
wgt_status wgt_cpu_eye(const wgt_cpu_tensor *out);
/* Concatenate n tensors along dim (empty ones allowed) / stack them on a new dim. */
wgt_status wgt_cpu_cat(const wgt_cpu_tensor *const *xs, int n, int dim, const wgt_cpu_tensor *out);
wgt_status wgt_cpu_stack(const wgt_cpu_tensor *const *xs, int n, int dim,
                         const wgt_cpu_tensor *out);
/* Reverse the dims in the mask. */
wgt_status wgt_cpu_flip(const wgt_cpu_tensor *x, uint32_t dims, const wgt_cpu_tensor *out);
/* Roll by shifts[i] along dims[i]; n == 1 and dims NULL: roll the flattened tensor. */
wgt_status wgt_cpu_roll(const wgt_cpu_tensor *x, int n, const int64_t *shifts, const int *dims,
                        const wgt_cpu_tensor *out);
/* torch.repeat / ONNX Tile: out's shape is x's (aligned on the right) times whole factors. */
wgt_status wgt_cpu_repeat(const wgt_cpu_tensor *x, const wgt_cpu_tensor *out);
/* pads[d] elements before and pads[ndim + d] after dimension d (ONNX order; negative crops).
 * Reflect needs pads < size along that dim (as PyTorch). */
wgt_status wgt_cpu_pad(const wgt_cpu_tensor *x, wgt_pad_mode mode, const int64_t *pads,
                       double value, const wgt_cpu_tensor *out);

/* ---- Transformer ops (rope.c, attention.c) ---------------------------------------------------- */

/* wgt_rope_params is in include/wgt.h. */

/* inv_freq[j], j < rot_dim / 2, and the factor cos/sin are multiplied by (1 except YaRN), as
 * transformers' _compute_*_rope_parameters; inv_freq is rounded to f32 as transformers does. */
wgt_status wgt_cpu_rope_inv_freq(const wgt_rope_params *p, int rot_dim, double *inv_freq,
                                 double *attention_factor);
/* x [..., L, D] (last dim D, second to last L positions). The first rot_dim (even, <= D) features
 * rotate by angle positions[l] * inv_freq[j] (the angle rounded to f32, as transformers computes
 * it in f32); the rest pass through. interleaved: pairs (2j, 2j+1) (GPT-J, llama.cpp "norm");
 * else pairs (j, j + rot_dim/2) (NeoX, Hugging Face rotate_half). positions [L] integers. */
wgt_status wgt_cpu_rope(const wgt_cpu_tensor *x, const wgt_cpu_tensor *positions, int rot_dim,
                        int interleaved, const wgt_rope_params *p, const wgt_cpu_tensor *out);

/* wgt_sdpa_params is in include/wgt.h. */

/* q [B, Hq, Lq, D], k [B, Hkv, Lk, D], v [B, Hkv, Lk, Dv], out [B, Hq, Lq, Dv]; Hq a multiple of
 * Hkv: query head h reads kv head h / (Hq / Hkv) (GQA/MQA, no copies). mask (optional) broadcasts
 * to [B, Hq, Lq, Lk]: float masks add to the scores, bool masks keep where true. A query row with
 * no key left gives zeros (PyTorch >= 2.5 math backend). */
wgt_status wgt_cpu_sdpa(const wgt_cpu_tensor *q, const wgt_cpu_tensor *k, const wgt_cpu_tensor *v,
                        const wgt_cpu_tensor *mask, const wgt_sdpa_params *p,
                        const wgt_cpu_tensor *out);

/* ---- Convolutions (conv.c) ---------------------------------------------------------------------- */

/* wgt_conv_params is in include/wgt.h. The geometry of nsp spatial dims: output sizes O and the
 * resolved pad_begin (from params->padding), with op naming the caller in messages. */
wgt_status wgt_cpu_conv_geometry(const char *op, const wgt_conv_params *p, int transposed, int nsp,
                                 const int64_t *S, const int64_t *K, int64_t *O, int64_t *pad_begin);
/* x [N, Cin, *S], w [Cout, Cin/groups, *K], bias [Cout] or NULL, out [N, Cout, *O] (checked
 * against the geometry). Sums in double; padding contributes zeros times the weight (so an
 * infinite weight over padding gives NaN, as PyTorch's zero-padded product). */
wgt_status wgt_cpu_conv(const wgt_cpu_tensor *x, const wgt_cpu_tensor *w, const wgt_cpu_tensor *bias,
                        const wgt_conv_params *p, const wgt_cpu_tensor *out);
/* x [N, Cin, *S], w [Cin, Cout/groups, *K]: out[o] = sum of x[i] w[k] over o = i stride - pad_begin
 * + k dilation (only products that land on an output). */
wgt_status wgt_cpu_conv_transpose(const wgt_cpu_tensor *x, const wgt_cpu_tensor *w, const wgt_cpu_tensor *bias,
                                  const wgt_conv_params *p, const wgt_cpu_tensor *out);

/* ---- Losses and misc ops (loss.c, misc.c) ------------------------------------------------------
 * Semantics and argument rules as the op functions of include/wgt.h (wgt_cross_entropy, ...). Loss
 * outputs are the per-element losses (reduction none: target's shape / the broadcast shape) or a
 * 0-D tensor; sums run in double. */

typedef enum wgt_cpu_loss {
    WGT_CPU_LOSS_MSE = 0,
    WGT_CPU_LOSS_L1,
    WGT_CPU_LOSS_SMOOTH_L1,   /* param: beta */
    WGT_CPU_LOSS_HUBER,       /* param: delta */
    WGT_CPU_LOSS_BCE,         /* aux: weight */
    WGT_CPU_LOSS_BCE_LOGITS,  /* aux: weight, aux2: pos_weight */
    WGT_CPU_LOSS_KL_DIV,      /* param: log_target (0 / 1) */
    WGT_CPU_LOSS_COUNT
} wgt_cpu_loss;

/* x [N, C, d...] or [C]; target class indices (integer, x's shape without C) or probabilities
 * (float, x's shape). log_input 1: x already holds log-probabilities (nll_loss; indices only). */
wgt_status wgt_cpu_cross_entropy(const wgt_cpu_tensor *x, const wgt_cpu_tensor *target,
                                 const wgt_cpu_tensor *weight, int64_t ignore_index,
                                 double label_smoothing, int log_input, wgt_reduction reduction,
                                 const wgt_cpu_tensor *out);
/* x and target broadcast (aux, aux2 broadcast to that shape, may be NULL). */
wgt_status wgt_cpu_pointwise_loss(wgt_cpu_loss kind, const wgt_cpu_tensor *x, const wgt_cpu_tensor *target,
                                  const wgt_cpu_tensor *aux, const wgt_cpu_tensor *aux2, double param,
                                  wgt_reduction reduction, const wgt_cpu_tensor *out);
/* out: the broadcast shape of x1 and x2 without dim (dim counted in that shape). */
wgt_status wgt_cpu_cosine_similarity(const wgt_cpu_tensor *x1, const wgt_cpu_tensor *x2, int dim,
                                     double eps, const wgt_cpu_tensor *out);
/* x1 [B..., P, M], x2 [B..., R, M] -> out [B..., P, R], direct differences in double. */
wgt_status wgt_cpu_cdist(const wgt_cpu_tensor *x1, const wgt_cpu_tensor *x2, double p,
                         const wgt_cpu_tensor *out);
/* prepend/append may be NULL; out has x's shape with dim's size (joined length - n). */
wgt_status wgt_cpu_diff(const wgt_cpu_tensor *x, int n, int dim, const wgt_cpu_tensor *prepend,
                        const wgt_cpu_tensor *append, const wgt_cpu_tensor *out);
/* x 2-D; out 0-D (integers summed exactly in int64). */
wgt_status wgt_cpu_trace(const wgt_cpu_tensor *x, const wgt_cpu_tensor *out);
/* x 1-D: out [n + |k|, n + |k|]; x 2-D: out [diagonal length]. */
wgt_status wgt_cpu_diag(const wgt_cpu_tensor *x, int64_t offset, const wgt_cpu_tensor *out);
/* dim1, dim2: non-negative dims of out (x.ndim + 1 dims), different. */
wgt_status wgt_cpu_diag_embed(const wgt_cpu_tensor *x, int64_t offset, int dim1, int dim2,
                              const wgt_cpu_tensor *out);

/* ---- Sorting and searching (sort.c, search.c) -------------------------------------------------- */

/* Rows along dim sorted stably (equal values keep their order; -0 equals +0); NaN is above +inf
 * (last ascending, first descending), as PyTorch. values/indices (either may be NULL) have x's
 * shape; indices are positions along dim in any integer dtype. */
wgt_status wgt_cpu_sort(const wgt_cpu_tensor *x, int dim, int descending, const wgt_cpu_tensor *values,
                        const wgt_cpu_tensor *indices);
/* The first k of each row sorted descending (largest) or ascending: x's shape with dim = k. Equal
 * values: the lower index first (ONNX TopK). */
wgt_status wgt_cpu_topk(const wgt_cpu_tensor *x, int64_t k, int dim, int largest, const wgt_cpu_tensor *values,
                        const wgt_cpu_tensor *indices);
/* The k-th smallest (1-based, position k - 1 of the stable ascending sort); outputs x's shape with
 * dim of size 1 (keepdim) or without dim. */
wgt_status wgt_cpu_kthvalue(const wgt_cpu_tensor *x, int64_t k, int dim, int keepdim, const wgt_cpu_tensor *values,
                            const wgt_cpu_tensor *indices);
/* The lower median (position (n - 1) / 2 of the sorted row); a row with a NaN gives its first NaN
 * and that NaN's index (torch.median). */
wgt_status wgt_cpu_median(const wgt_cpu_tensor *x, int dim, int keepdim, const wgt_cpu_tensor *values,
                          const wgt_cpu_tensor *indices);
/* The distinct values of the flattened x, ascending (NaNs are all distinct, -0 equals +0). Outputs
 * (each may be NULL): values [count] (x's dtype), inverse (x's size: the group of each element),
 * counts [count], first [count] (the flat index of each value's first occurrence). The outputs
 * with count elements must have exactly that many; *count (may be NULL) gets it. */
wgt_status wgt_cpu_unique(const wgt_cpu_tensor *x, const wgt_cpu_tensor *values, const wgt_cpu_tensor *inverse,
                          const wgt_cpu_tensor *counts, const wgt_cpu_tensor *first, int64_t *count);
/* For each element of values, the insertion index into the last dim of seq (1-D, or with leading
 * dims equal to values'): the first position with seq >= v (right: seq > v), through PyTorch's
 * binary search (a NaN value gives the length). sorter (optional, seq's shape): seq read in that
 * order. out has values' shape, any integer dtype. */
wgt_status wgt_cpu_searchsorted(const wgt_cpu_tensor *seq, const wgt_cpu_tensor *values, int right,
                                const wgt_cpu_tensor *sorter, const wgt_cpu_tensor *out);
/* torch.histc: bins equal bins over [min, max] (min == max: the data's range, NaN ignored, widened by
 * 1 each way when flat); elements outside and NaN are not counted; bin = (v - min) * bins / (max - min)
 * in f32, the top edge in the last bin. out [bins] any dtype. */
wgt_status wgt_cpu_histc(const wgt_cpu_tensor *x, int64_t bins, double min, double max, const wgt_cpu_tensor *out);

#endif
