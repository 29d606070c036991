/* Shared helpers of the ONNX executor (onnx_ops.c, onnx_ops_shape.c). */
#ifndef WGT_ONNX_OPS_INTERNAL_H
#define WGT_ONNX_OPS_INTERNAL_H

#include "core/error.h"
#include "onnx/onnx.h"

typedef struct ox {
    const wgt_onnx_backend *be;
    const wgt_onnx_node *node;
    int64_t opset;
    const wgt_onnx_tensor *const *in;
    int n_in;
    wgt_onnx_tensor *out;
    int n_out;
} ox;

#define OX_TRY(x)                               \
    do {                                        \
        wgt_status st_ = (x);                   \
        if (st_ != WGT_OK) return st_;          \
    } while (0)

typedef wgt_status (*ox_fn)(ox *c);

/* Run CPU reference ref (wgt_cpu_matmul) on the node's backend: the reference itself, or what the
 * backend runs in its place with the same signature (the device adapter the op table's onnx
 * column names); an error when the backend has nothing for it. OX_HAS: whether it has. */
#define OX_HAS(c, ref) ((c)->be->fn_for((wgt_onnx_fn)(ref)) != NULL)
#define OX_CALL(c, ref, ...) \
    (OX_HAS(c, ref) ? ((__typeof__(&(ref)))(c)->be->fn_for((wgt_onnx_fn)(ref)))(__VA_ARGS__) : ox_missing((c), #ref))
wgt_status ox_missing(const ox *c, const char *fn);

/* Input i, or NULL when absent. */
const wgt_onnx_tensor *ox_in(const ox *c, int i);
/* Input i, required: an error naming the op when absent. */
wgt_status ox_need(const ox *c, int i, const wgt_onnx_tensor **t);
wgt_cpu_tensor ox_view(const wgt_onnx_tensor *t);
/* Allocate output k (contiguous) and return its view. */
wgt_status ox_alloc(ox *c, int k, wgt_dtype dtype, int ndim, const int64_t *dims, wgt_cpu_tensor *view);
/* A scratch tensor (free with wgt_onnx_tensor_clear). */
wgt_status ox_temp(wgt_onnx_tensor *t, wgt_dtype dtype, int ndim, const int64_t *dims);
int64_t ox_attr_i(const ox *c, const char *name, int64_t dflt);
double ox_attr_f(const ox *c, const char *name, double dflt);
const char *ox_attr_s(const ox *c, const char *name, const char *dflt);
const wgt_onnx_attr *ox_attr(const ox *c, const char *name);
/* Normalise an axis in [-n, n). */
wgt_status ox_axis(const ox *c, int64_t axis, int n, int *res);
/* The values of an integer (or float) tensor as int64, up to cap of them. */
wgt_status ox_ints(const ox *c, const wgt_onnx_tensor *t, int64_t *vals, int cap, int *n);
/* The first element of a tensor as a double. */
double ox_scalar(const wgt_onnx_tensor *t);
/* The multidirectional broadcast shape of n tensors. */
wgt_status ox_broadcast(const ox *c, const wgt_onnx_tensor *const *ts, int n, int *ndim, int64_t *dims);
wgt_status ox_unsupported(const ox *c, const char *what);

/* Op handlers in onnx_ops_shape.c. */
wgt_status ox_matmul(ox *c);
wgt_status ox_gemm(ox *c);
wgt_status ox_transpose(ox *c);
wgt_status ox_reshape_like(ox *c);
wgt_status ox_concat(ox *c);
wgt_status ox_tile(ox *c);
wgt_status ox_expand(ox *c);
wgt_status ox_pad(ox *c);
wgt_status ox_trilu(ox *c);
wgt_status ox_gather(ox *c);
wgt_status ox_gather_elements(ox *c);
wgt_status ox_scatter_elements(ox *c);
wgt_status ox_onehot(ox *c);
wgt_status ox_range(ox *c);
wgt_status ox_nonzero(ox *c);
wgt_status ox_layer_norm(ox *c);
wgt_status ox_batch_norm(ox *c);
wgt_status ox_instance_norm(ox *c);
wgt_status ox_constant_of_shape(ox *c);

/* Op handlers in onnx_ops_misc.c. */
wgt_status ox_slice(ox *c);
wgt_status ox_split(ox *c);
wgt_status ox_depth_space(ox *c);
wgt_status ox_shape(ox *c);
wgt_status ox_constant(ox *c);
wgt_status ox_dropout(ox *c);
wgt_status ox_hardmax(ox *c);
wgt_status ox_global_pool(ox *c);
wgt_status ox_scatter_nd(ox *c);

/* Op handlers in onnx_ops_compose.c. */
wgt_status ox_composed_activation(ox *c);
wgt_status ox_compress(ox *c);

/* Op handlers in onnx_ops_conv.c. */
wgt_status ox_conv(ox *c); /* Conv and ConvTranspose */

/* Op handlers in onnx_ops_loss.c. */
wgt_status ox_nll_loss(ox *c);
wgt_status ox_eye_like(ox *c);

/* Op handlers in onnx_ops_pool.c. */
wgt_status ox_pool(ox *c); /* MaxPool and AveragePool */
wgt_status ox_resize(ox *c); /* Resize and Upsample */
wgt_status ox_grid_sample(ox *c);

/* Op handlers in onnx_ops_sort.c. */
wgt_status ox_topk(ox *c);
wgt_status ox_unique(ox *c);

#endif
