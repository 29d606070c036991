/* The model's op seam (see bridge.h): reference implementations until the GPU ops land. */
#include <string.h>

#include "ops/ops.h"
#include "models/bridge.h"
#include "models/model.h"

typedef struct a_norm { int nd; double eps; int rms; } a_norm;
static wgt_status ref_norm(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    a_norm *a = arg;
    if (a->rms) return wgt_cpu_rms_norm(&in[0], a->nd, in[1].data ? &in[1] : NULL, a->eps, &out[0]);
    return wgt_cpu_layer_norm(&in[0], a->nd, in[1].data ? &in[1] : NULL, in[2].data ? &in[2] : NULL, a->eps, &out[0], NULL, NULL);
}
wgt_status mdl_rms_norm(const wgt_tensor *x, int nd, const wgt_tensor *w, double eps, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    wgt_tensor *y; wgt_status st = wgt_tensor_new(ctx, x->l.dtype, x->l.ndim, x->l.shape, &y); if (st) return st;
    a_norm a = {nd, eps, 1}; const wgt_tensor *ins[3] = {x, w, NULL};
    return op_finish(op_reference(ctx, ref_norm, &a, ins, 3, &y, 1), y, out);
}
wgt_status mdl_layer_norm(const wgt_tensor *x, int nd, const wgt_tensor *w, const wgt_tensor *b, double eps, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    wgt_tensor *y; wgt_status st = wgt_tensor_new(ctx, x->l.dtype, x->l.ndim, x->l.shape, &y); if (st) return st;
    a_norm a = {nd, eps, 0}; const wgt_tensor *ins[3] = {x, w, b};
    return op_finish(op_reference(ctx, ref_norm, &a, ins, 3, &y, 1), y, out);
}
static wgt_status ref_linear(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    return wgt_cpu_linear(&in[0], &in[1], in[2].data ? &in[2] : NULL, &out[0]);
}
wgt_status mdl_linear(const wgt_tensor *x, const wgt_tensor *w, const wgt_tensor *b, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    int64_t shape[8]; memcpy(shape, x->l.shape, sizeof shape); shape[x->l.ndim - 1] = w->l.shape[0];
    wgt_tensor *y; wgt_status st = wgt_tensor_new(ctx, WGT_F32, x->l.ndim, shape, &y); if (st) return st;
    const wgt_tensor *ins[3] = {x, w, b};
    return op_finish(op_reference(ctx, ref_linear, NULL, ins, 3, &y, 1), y, out);
}
typedef struct a_rope { int rot, inter; const wgt_rope_params *p; } a_rope;
static wgt_status ref_rope(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    a_rope *a = arg; return wgt_cpu_rope(&in[0], &in[1], a->rot, a->inter, a->p, &out[0]);
}
wgt_status mdl_rope(const wgt_tensor *x, const wgt_tensor *pos, int rot, int inter, const wgt_rope_params *p, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    wgt_tensor *y; wgt_status st = wgt_tensor_new(ctx, x->l.dtype, x->l.ndim, x->l.shape, &y); if (st) return st;
    a_rope a = {rot, inter, p}; const wgt_tensor *ins[2] = {x, pos};
    return op_finish(op_reference(ctx, ref_rope, &a, ins, 2, &y, 1), y, out);
}
static wgt_status ref_sdpa(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    return wgt_cpu_sdpa(&in[0], &in[1], &in[2], in[3].data ? &in[3] : NULL, arg, &out[0]);
}
wgt_status mdl_sdpa(const wgt_tensor *q, const wgt_tensor *k, const wgt_tensor *v, const wgt_tensor *mask,
                    const wgt_sdpa_params *p, wgt_tensor **out)
{
    OP_BEGIN(q, out);
    int64_t shape[4] = {q->l.shape[0], q->l.shape[1], q->l.shape[2], v->l.shape[3]};
    wgt_tensor *y; wgt_status st = wgt_tensor_new(ctx, q->l.dtype, 4, shape, &y); if (st) return st;
    const wgt_tensor *ins[4] = {q, k, v, mask};
    return op_finish(op_reference(ctx, ref_sdpa, (void *)p, ins, 4, &y, 1), y, out);
}
static wgt_status ref_emb(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    return wgt_cpu_embedding(&in[0], &in[1], &out[0]);
}
wgt_status mdl_embedding(const wgt_tensor *w, const wgt_tensor *ids, wgt_tensor **out)
{
    OP_BEGIN(w, out);
    int64_t shape[9]; int nd = ids->l.ndim; memcpy(shape, ids->l.shape, nd * sizeof(int64_t)); shape[nd] = w->l.shape[1];
    wgt_tensor *y; wgt_status st = wgt_tensor_new(ctx, w->l.dtype, nd + 1, shape, &y); if (st) return st;
    const wgt_tensor *ins[2] = {w, ids};
    return op_finish(op_reference(ctx, ref_emb, NULL, ins, 2, &y, 1), y, out);
}
typedef struct a_red { wgt_reduce_op op; uint32_t dims; int keep; double corr; } a_red;
static wgt_status ref_red(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    a_red *a = arg; return wgt_cpu_reduce(a->op, &in[0], a->dims, a->keep, a->corr, &out[0], NULL);
}
wgt_status mdl_reduce(wgt_reduce_op op, const wgt_tensor *x, uint32_t dims, int keepdim, double corr, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    wgt_tensor *y; wgt_status st = wgt_tensor_new(ctx, WGT_I32, 0, NULL, &y); if (st) return st;
    a_red a = {op, dims, keepdim, corr}; const wgt_tensor *ins[1] = {x};
    return op_finish(op_reference(ctx, ref_red, &a, ins, 1, &y, 1), y, out);
}
