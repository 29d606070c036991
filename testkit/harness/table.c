/* The harness's op table, read from the op table's rows (src/ops/<family>.def, columns in
 * src/ops/optable.h): each row's harness column names its input generator (shapes per case and
 * value domain) and its call through the op API, and gives its tolerance with the reason. This
 * file holds the generators and calls of the elementwise family; the other families' are in
 * table_*.c. An op's known issues on some adapter are in its row too (.known). */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "harness/harness.h"
#include "ops/api.h"
#include "cpu/pool.h"
#include "cpu/random.h"
#include "ops/fused.h"
#include "ops/ops.h"
#include "tensor/record.h"

/* ---- shapes per case ------------------------------------------------------------------------- */

static void set_shape(hx_input *in, int ndim, const int64_t *shape)
{
    in->ndim = ndim;
    for (int d = 0; d < ndim; d++) in->shape[d] = shape[d];
}

/* The shape of the main input for a case (elementwise-like ops). */
void hx_case_shape(hx_case c, hx_input *in)
{
    switch (c) {
    case HX_EMPTY: set_shape(in, 3, (int64_t[]){4, 0, 3}); break;
    case HX_SCALAR: set_shape(in, 0, NULL); break;
    case HX_ODD1: set_shape(in, 1, (int64_t[]){1}); break;
    case HX_ODD7: set_shape(in, 1, (int64_t[]){7}); break;
    case HX_ODD_LARGE: set_shape(in, 1, (int64_t[]){1000003}); break;
    case HX_SPECIAL: set_shape(in, 2, (int64_t[]){7, 9}); break;
    case HX_BIG: set_shape(in, 2, (int64_t[]){8193, 4097}); break; /* 134,266,884 bytes of f32 */
    default: set_shape(in, 2, (int64_t[]){37, 53}); break;
    }
}

static hx_dom dom_for(const hx_op *op, wgt_dtype dt)
{
    if (op_is_float(dt) || (op->int_dom.lo == 0 && op->int_dom.hi == 0)) {
        if (op_is_float(dt)) return op->dom;
        return (hx_dom){-20, 20, op->dom.nonzero};
    }
    return op->int_dom;
}

int setup_unary(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    in[0].dtype = dt;
    in[0].dom = dom_for(op, dt);
    hx_case_shape(c, &in[0]);
    return 1;
}

/* Two inputs of one dtype; broadcast: [5, 1, 53] with an expanded [7, 53] view. */
int setup_binary(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    for (int i = 0; i < 2; i++) {
        in[i].dtype = dt;
        in[i].dom = dom_for(op, dt);
        hx_case_shape(c, &in[i]);
    }
    in[0].dom.nonzero = 0;
    if (c == HX_BROADCAST) {
        set_shape(&in[0], 3, (int64_t[]){5, 1, 53});
        set_shape(&in[1], 2, (int64_t[]){7, 53});
    } else if (c == HX_BIG) {
        set_shape(&in[1], 1, (int64_t[]){4097}); /* a row broadcast over the big one */
    }
    if (op->code == WGT_BINARY_SHIFT_LEFT || op->code == WGT_BINARY_SHIFT_RIGHT) {
        in[1].dom = (hx_dom){0, 8 * (double)wgt_dtype_size(dt) - 1, 0};
        if (dt == WGT_BOOL) in[1].dom = (hx_dom){0, 1, 0};
    }
    if (op->code == WGT_BINARY_POW && !op_is_float(dt)) in[1].dom = (hx_dom){0, 4, 0};
    return 2;
}

/* cond (bool), a, b of dt. */
int setup_where(const hx_op *op, hx_case c, wgt_dtype dt, hx_input *in)
{
    setup_binary(op, c, dt, in + 1);
    in[0] = in[1];
    in[0].dtype = WGT_BOOL;
    in[0].dom = (hx_dom){0, 1, 0};
    if (c == HX_BROADCAST) set_shape(&in[0], 1, (int64_t[]){53});
    return 3;
}

/* ---- calls ----------------------------------------------------------------------------------- */

wgt_status call_unary(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    if (v == 0) return wgt_unary((wgt_unary_op)op->code, in[0], out);
    /* variant 1: parameters other than the defaults */
    wgt_unary_params p = wgt_unary_params_default((wgt_unary_op)op->code);
    p.alpha = 0.3, p.beta = 0.7, p.lo = -1.25, p.hi = 0.5;
    if (op->code == WGT_UNARY_SOFTPLUS) p.hi = 3; /* the threshold */
    return wgt_unary_ex((wgt_unary_op)op->code, &p, in[0], out);
}

wgt_status call_binary(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_binary((wgt_binary_op)op->code, in[0], in[1], out);
}

wgt_status call_where(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_where(in[0], in[1], in[2], out);
}

wgt_status call_cast(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_tensor_cast(in[0], (wgt_dtype)v, out);
}

wgt_status call_copy(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_tensor_copy(in[0], out);
}

wgt_status call_contiguous(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_tensor_contiguous(in[0], out);
}

/* full takes no tensor: the input gives the context and the shape. */
wgt_status call_full(const hx_op *op, int v, wgt_tensor *const *in, wgt_tensor **out)
{
    return wgt_full(wgt_tensor_context(in[0]), wgt_tensor_dtype(in[0]), wgt_tensor_ndim(in[0]),
                    wgt_tensor_shape(in[0]), v ? -3.0 : 2.5, out);
}

/* ---- the table ------------------------------------------------------------------------------- */

/* Declare every setup and call function the rows name (each is defined in one table_*.c). */
#define HX(setup_, call_, ...) hx_setup_f setup_; hx_call_f call_;
#define OP(name_, n_in_, n_out_, dtypes_, forward_, reference_, onnx_, grad_, doc_, harness_) harness_
#include "ops/optable_all.h"
#undef OP
#undef HX

/* A row's fields; the harness column's designated initialisers override the defaults before them. */
#pragma GCC diagnostic ignored "-Woverride-init"
#define HX(setup_, call_, ...) .setup = setup_, .call = call_, __VA_ARGS__
/* the onnx column: its ONNX types, and its device adapter's name (the function is onnx_gpu.c's) */
#define ONNX(types_, adapter_) types_, #adapter_
#define ONNX_VIA(types_) types_, ""
#define NO_ONNX "", ""
#define HX_ONNX_(...) HX_ONNX2_(__VA_ARGS__)
#define HX_ONNX2_(types_, adapter_) .onnx = types_, .onnx_adapter = adapter_
#define OP(name_, n_in_, n_out_, dtypes_, forward_, reference_, onnx_, grad_, doc_, harness_)                     \
    {.name = name_, .family = OP_FAMILY, .n_in = n_in_, .n_out = n_out_, .dtypes = dtypes_, .forward = #forward_,   \
     .reference = #reference_, .forward_fn = (void (*)(void))forward_, .reference_fn = (void (*)(void))reference_, \
     HX_ONNX_(onnx_), .grad = grad_, .grad_name = #grad_, .doc = doc_, .n_variants = 1, .dom = {-4, 4, 0, 0},      \
     .tol = {0, 0, "exact"}, harness_},
static const hx_op table[] = {
#include "ops/optable_all.h"
};
#undef OP
#undef HX
#undef ONNX
#undef ONNX_VIA
#undef NO_ONNX
#undef HX_ONNX_
#undef HX_ONNX2_

#define RULE(name_, grad_, backward_, saves_, saves_fn_) {grad_, #backward_},
static const struct {
    int grad;
    const char *backward;
} rules[] = {
#include "ops/optable_all.h"
};
#undef RULE

const hx_op *hx_ops(int *count)
{
    *count = (int)(sizeof table / sizeof *table);
    return table;
}

const hx_op *hx_find(const char *name)
{
    int n;
    const hx_op *ops = hx_ops(&n);
    for (int i = 0; i < n; i++)
        if (!strcmp(ops[i].name, name)) return &ops[i];
    return NULL;
}

const char *hx_backward_name(int grad)
{
    if (grad == OP_GRAD_NONDIFF) return "non-differentiable"; /* its rule row has no formula */
    for (size_t i = 0; i < sizeof rules / sizeof *rules; i++)
        if (rules[i].grad == grad) return rules[i].backward;
    return NULL;
}
