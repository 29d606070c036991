/* The autograd audit (gradcheck.h): every op of the harness's table, run with float inputs that
 * require grad, must leave a result that requires grad (it recorded a node with a backward rule,
 * or one declared non-differentiable through op_record_nondiff), and backward through it must
 * either give every float input a gradient or refuse with WGT_ERR_UNSUPPORTED and a message:
 * never cut the graph silently, never fail otherwise. Runs on a CPU-reference context. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autograd/autograd.h"
#include "grad/gradcheck.h"
#include "harness/harness.h"
#include "ops/ops.h"

static uint64_t audit_rng = 0x2545F4914F6CDD1Dull;
static double unit(void)
{
    audit_rng ^= audit_rng << 13, audit_rng ^= audit_rng >> 7, audit_rng ^= audit_rng << 17;
    return (double)(audit_rng >> 11) / 9007199254740992.0;
}

/* A contiguous tensor for one input as the harness describes it. */
static wgt_status make_input(wgt_context *ctx, const hx_op *op, const hx_input *in, wgt_tensor **out)
{
    int64_t n = 1;
    for (int d = 0; d < in->ndim; d++) n *= in->shape[d];
    float *v = malloc(sizeof *v * (size_t)(n ? n : 1));
    if (!v) return WGT_ERR_OUT_OF_MEMORY;
    hx_dom dom = op_is_float(in->dtype) ? in->dom : op->int_dom;
    if (dom.lo == 0 && dom.hi == 0) dom = in->dom;
    for (int64_t i = 0; i < n; i++) {
        double x;
        if (in->index_bound > 0) x = floor(unit() * in->index_bound);
        else if (in->dtype == WGT_BOOL) x = unit() < 0.5 || i == 0;
        else {
            x = dom.lo + (dom.hi - dom.lo) * unit();
            if (dom.nonzero && fabs(x) < 0.5) x = x < 0 ? -0.5 - fabs(x) : 0.5 + x;
            if (dom.integral || !op_is_float(in->dtype)) x = floor(x);
        }
        v[i] = (float)x;
    }
    wgt_tensor *f = NULL;
    wgt_status st = wgt_tensor_from_host(ctx, WGT_F32, in->ndim, in->shape, v, &f);
    if (!st) st = wgt_tensor_cast(f, in->dtype, out);
    wgt_tensor_free(f);
    free(v);
    return st;
}

/* sum(out) as f32, backward; status of the backward (or of building the loss). */
static wgt_status backward_of(const wgt_tensor *out)
{
    wgt_tensor *f = NULL, *s = NULL;
    wgt_status st = wgt_tensor_cast(out, WGT_F32, &f);
    if (!st) st = wgt_reduce(WGT_REDUCE_SUM, f, 0, 0, 0, &s);
    if (!st) st = wgt_backward(s, NULL, 0);
    wgt_tensor_free(f);
    wgt_tensor_free(s);
    return st;
}

/* Ops that make their result from sizes, a dtype or integer ids, so that it rightly depends on
 * nothing that requires grad: the row takes no tensor (n_in 0: the harness's input only gives the
 * call a context, a shape and a dtype), or each float input the harness makes carries only its
 * dtype (hx_input.dtype_only: one_hot's). Read from the row and its generator: no list of names. */
static int from_sizes(const hx_op *op, const hx_input *ins, int n_in)
{
    if (op->n_in == 0) return 1;
    int floats = 0;
    for (int i = 0; i < n_in; i++)
        if (op_is_float(ins[i].dtype) && !ins[i].dtype_only) floats++;
    return floats == 0;
}

static void audit_op(wgt_context *ctx, const hx_op *op, int verbose, FILE *log, gc_audit *a)
{
    wgt_dtype dt = (op->dtypes & HX_DT(WGT_F32)) ? WGT_F32 : (op->dtypes & HX_DT(WGT_F16)) ? WGT_F16 : WGT_BF16;
    if (!(op->dtypes & HX_FLOATS)) {
        a->integer_only++;
        return;
    }
    hx_input ins[HX_MAX_IN];
    memset(ins, 0, sizeof ins);
    int n_in = op->setup(op, HX_CONTIGUOUS, dt, ins);
    if (n_in <= 0) {
        memset(ins, 0, sizeof ins);
        n_in = op->setup(op, HX_ODD7, dt, ins);
    }
    if (from_sizes(op, ins, n_in > 0 ? n_in : 0)) {
        a->from_sizes++;
        return;
    }
    if (n_in <= 0) return;
    for (int v = 0; v < op->n_variants; v++) {
        wgt_tensor *in[HX_MAX_IN] = {0}, *out[2] = {0};
        int n_float = 0;
        wgt_status st = WGT_OK;
        for (int i = 0; i < n_in && !st; i++) {
            st = make_input(ctx, op, &ins[i], &in[i]);
            if (!st && op_is_float(ins[i].dtype)) st = wgt_tensor_set_requires_grad(in[i], 1), n_float++;
        }
        if (!st) st = op->call(op, v, in, out);
        if (st) { /* an op that refuses inputs requiring grad must say why, not fail quietly */
            if (log && verbose) fprintf(log, "audit %s/%d: did not run: %s\n", op->name, v, wgt_errmsg());
            a->not_run++;
        }
        for (int k = 0; k < 2 && !st; k++) {
            if (!out[k] || !op_is_float(wgt_tensor_dtype(out[k])) || !n_float) continue;
            a->results++;
            if (!wgt_tensor_requires_grad(out[k])) {
                a->cut++;
                if (log)
                    fprintf(log, "audit FAIL %s (variant %d, output %d): the result does not require grad: the op "
                                 "neither records a backward node nor declares itself non-differentiable "
                                 "(op_record / op_record_nondiff)\n", op->name, v, k);
                continue;
            }
            op_grad_id id = ag_tensor_op(out[k]);
            if (id == OP_GRAD_NONDIFF) a->declared++;
            else a->recorded++;
            wgt_status bs = backward_of(out[k]);
            if (bs == WGT_ERR_UNSUPPORTED && *wgt_errmsg()) {
                a->refused++;
                if (log && verbose) fprintf(log, "audit %s/%d: backward refused: %s\n", op->name, v, wgt_errmsg());
            } else if (bs) {
                a->failed++;
                if (log) fprintf(log, "audit FAIL %s (variant %d): backward: %s: %s\n", op->name, v, wgt_status_str(bs),
                                 wgt_errmsg());
            } else {
                a->backward_ok++;
                if (id == OP_GRAD_NONDIFF) {
                    a->failed++;
                    if (log) fprintf(log, "audit FAIL %s: declared non-differentiable, yet backward succeeded\n", op->name);
                }
            }
            if (k == 0 && out[1]) wgt_tensor_free(out[1]), out[1] = NULL; /* one backward per call */
        }
        for (int i = 0; i < n_in; i++) wgt_tensor_free(in[i]);
        wgt_tensor_free(out[0]);
        wgt_tensor_free(out[1]);
    }
    a->ops++;
}

void gc_audit_run(wgt_context *ref, const char *const *names, int n, int verbose, FILE *log, gc_audit *a)
{
    int count = 0;
    const hx_op *ops = hx_ops(&count);
    for (int i = 0; i < count; i++) {
        int match = n == 0;
        for (int j = 0; j < n && !match; j++) match = strstr(ops[i].name, names[j]) != NULL;
        if (match) audit_op(ref, &ops[i], verbose, log, a);
    }
}
