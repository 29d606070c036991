/* The transformer's two embeddings: rotary position embedding (src/kernels/rope.wgsl) and the
 * token embedding gather (src/kernels/rope_embedding.wgsl).
 * Rope's inverse frequencies come from the reference (wgt_cpu_rope_inv_freq: transformers' values
 * to the bit, every scaling); with the rotations by powers of two that replace the kernel's sin
 * and cos (rope.wgsl's top) they make one constant tensor, kept by the context (op_const_tensor):
 * a model's layers share one upload. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/api.h"
#include "ops/ops.h"
#include "tensor/record.h"

typedef struct rope_params {
    uint32_t n, D, rot, interleaved, off_x, off_p;
    float af;
    uint32_t pad;
    op_layout_params lx, lp;
} rope_params;

typedef struct rope_arg {
    int rot, interleaved;
    const wgt_rope_params *p;
} rope_arg;

static wgt_status rope_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    rope_arg *a = arg;
    return wgt_cpu_rope(&in[0], &in[1], a->rot, a->interleaved, a->p, &out[0]);
}

/* rope.wgsl and rope_embedding.wgsl share a prelude's shape: a float input (x, the table), an integer
 * index (positions, ids) and a stored output. Its key (no padding bytes): built once per key, not
 * on every call. */
typedef struct rope_key {
    uint8_t embedding, in, idx, out;
    uint32_t wg;
} rope_key;

static char *rope_prelude(void *arg)
{
    const rope_key *k = arg;
    const char *lib = op_wgsl_lib();
    size_t cap = 8192;
    char *pre = lib ? malloc(cap) : NULL;
    if (!pre) return NULL;
    wgt_dtype out = (wgt_dtype)k->out;
    snprintf(pre, cap, "%s\nalias CO = %s;\nconst PACK: u32 = %du;\nconst WG: u32 = %uu;\n", lib, op_compute_type(out),
             op_pack(out), k->wg);
    op_wgsl_loader(pre, cap, k->embedding ? "ldw" : "ldx", k->embedding ? "weight" : "x", (wgt_dtype)k->in, "f32");
    op_wgsl_loader(pre, cap, k->embedding ? "ldi" : "ldp", k->embedding ? "ids" : "pos", (wgt_dtype)k->idx, "i32");
    op_wgsl_storer(pre, cap, "st", "out", out, "f32");
    return pre;
}

static wgt_status rope_kernel(wgt_context *ctx, const char *file, wgt_dtype in, wgt_dtype idx, wgt_dtype out,
                              wgt_kernel **k)
{
    rope_key key = {!strcmp(file, "rope_embedding"), (uint8_t)in, (uint8_t)idx, (uint8_t)out, op_workgroup_size(ctx)};
    return wgt_gpu_kernel_keyed(ctx, file, &key, sizeof key, rope_prelude, &key, "main", NULL, 0, k);
}

static wgt_status rope_gpu(wgt_context *ctx, const wgt_tensor *x, const wgt_tensor *pos, int rot, int interleaved,
                           const wgt_rope_params *rp, const wgt_layout *lpos, wgt_tensor *y)
{
    int64_t n = wgt_layout_numel(&y->l);
    if (n == 0) return WGT_OK;
    int half = rot / 2;
    /* consts: (cos 2^k, sin 2^k) for k = ROPE_KMIN .. 127 (every power of two an f32 angle's
     * significand bit can stand for above rope.wgsl's Taylor residual), in double and then rounded;
     * then the f32 inverse frequencies */
    enum { ROPE_KMIN = -6, ROPE_NTABLE = 127 - ROPE_KMIN + 1 }; /* rope.wgsl's KMIN, NTABLE */
    double *inv = malloc(sizeof(double) * half);
    float *c = malloc(sizeof(float) * (2 * ROPE_NTABLE + half));
    double af = 1;
    wgt_status st = inv && c ? wgt_cpu_rope_inv_freq(rp, rot, inv, &af)
                             : op_fail(ctx, WGT_ERR_OUT_OF_MEMORY, "rope: out of host memory");
    for (int k = 0; !st && k < ROPE_NTABLE; k++) {
        double a = ldexp(1.0, k + ROPE_KMIN);
        c[2 * k] = (float)cos(a), c[2 * k + 1] = (float)sin(a);
    }
    for (int j = 0; !st && j < half; j++) c[2 * ROPE_NTABLE + j] = (float)inv[j];
    wgt_tensor *freq = NULL;
    if (!st) st = op_const_tensor(ctx, WGT_F32, 2 * ROPE_NTABLE + half, c, &freq);
    free(inv);
    free(c);
    if (st) return st;
    wgt_kernel *k;
    if ((st = rope_kernel(ctx, "rope", x->l.dtype, pos->l.dtype, y->l.dtype, &k))) goto done;
    rope_params p;
    memset(&p, 0, sizeof p);
    p.n = (uint32_t)n, p.D = (uint32_t)x->l.shape[x->l.ndim - 1], p.rot = (uint32_t)rot;
    p.interleaved = (uint32_t)interleaved, p.af = (float)af;
    wgt_binding b[4];
    int64_t base;
    wgt_tensor tp = *pos;
    tp.l = *lpos;
    if ((st = op_bind_all(x, &b[0], &base))) goto done;
    p.off_x = (uint32_t)(x->l.offset - base);
    if ((st = op_bind_all(&tp, &b[1], &base))) goto done;
    p.off_p = (uint32_t)(lpos->offset - base);
    if ((st = op_bind_all(freq, &b[2], &base))) goto done;
    if ((st = op_bind_all(y, &b[3], &base))) goto done;
    if ((st = op_layout_params_fill(ctx, &x->l, &p.lx)) || (st = op_layout_params_fill(ctx, lpos, &p.lp))) goto done;
    if (n > UINT32_MAX) {
        st = op_fail(ctx, WGT_ERR_LIMIT, "rope: more than 2^32 elements");
        goto done;
    }
    uint32_t gx, gy;
    uint64_t words = ((uint64_t)n + op_pack(y->l.dtype) - 1) / op_pack(y->l.dtype);
    op_grid(ctx, (words + op_workgroup_size(ctx) - 1) / op_workgroup_size(ctx), &gx, &gy);
    st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 4, gx, gy, 1);
done:
    wgt_tensor_free(freq);
    return st;
}

static wgt_status rope_unrecorded(const wgt_tensor *x, const wgt_tensor *positions, int rot_dim, int interleaved,
                    const wgt_rope_params *params, wgt_tensor **out)
{
    OP_BEGIN(x, out);
    const wgt_tensor *ins[2] = {x, positions};
    wgt_status st = op_same_context("rope", ins, 2);
    if (st) return st;
    if (!params) return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "rope: NULL parameters");
    int nd = x->l.ndim;
    if (nd < 2) return op_fail(ctx, WGT_ERR_SHAPE, "rope: x must be [..., L, D] (got %d dims)", nd);
    int64_t D = x->l.shape[nd - 1];
    if (rot_dim <= 0 || rot_dim % 2 || rot_dim > D)
        return op_fail(ctx, WGT_ERR_SHAPE, "rope: rotary dim %d must be even, positive and at most D = %lld", rot_dim,
                       (long long)D);
    if (!op_is_int(positions->l.dtype) || positions->l.dtype == WGT_BOOL)
        return op_fail(ctx, WGT_ERR_DTYPE, "rope: positions must be integers, not %s", wgt_dtype_name(positions->l.dtype));
    /* positions broadcast to x's shape without D, then a stride-0 D dim */
    wgt_layout lpos;
    {
        wgt_layout rows = x->l;
        rows.ndim = nd - 1;
        int n2;
        int64_t s2[WGT_MAX_DIMS];
        if ((st = op_broadcast_shape(ctx, "rope", &positions->l, &rows, &n2, s2))) return st;
        if (n2 != nd - 1 || memcmp(s2, x->l.shape, sizeof(int64_t) * (nd - 1)))
            return op_fail(ctx, WGT_ERR_SHAPE, "rope: positions do not broadcast to x's [..., L]");
        op_broadcast_layout(&positions->l, nd - 1, x->l.shape, &lpos);
        lpos.ndim = nd;
        lpos.shape[nd - 1] = D, lpos.strides[nd - 1] = 0;
    }
    if (!op_is_float(x->l.dtype)) return op_fail(ctx, WGT_ERR_DTYPE, "rope: x must be f32, f16 or bf16");
    double probe[1];
    if (wgt_cpu_rope_inv_freq(params, 2, probe, NULL)) /* the parameters' own checks, as a status */
        return op_fail(ctx, WGT_ERR_INVALID_ARGUMENT, "rope: %s", wgt_errmsg());
    wgt_tensor *y;
    if ((st = wgt_tensor_new(ctx, x->l.dtype, nd, x->l.shape, &y))) return st;
    int gpu_ok = 1; /* i64 positions load their low word: exact below 2^31 */
    rope_arg a = {rot_dim, interleaved, params};
    if (op_use_gpu(ctx, "rope", x->l.dtype, gpu_ok)) st = rope_gpu(ctx, x, positions, rot_dim, interleaved, params, &lpos, y);
    else if (!(st = op_fallback_status(ctx, "rope", x->l.dtype, gpu_ok)))
        st = op_reference(ctx, rope_ref, &a, ins, 2, &y, 1);
    return op_finish(st, y, out);
}

wgt_status wgt_rope(const wgt_tensor *x, const wgt_tensor *positions, int rot_dim, int interleaved,
                    const wgt_rope_params *params, wgt_tensor **out)
{
    const wgt_tensor *in[2] = {x, positions};
    op_grad_rope p = {rot_dim, interleaved, params ? *params : (wgt_rope_params){0}};
    return op_record(rope_unrecorded(x, positions, rot_dim, interleaved, params, out), OP_GRAD_ROPE, in, 2, &p,
                     sizeof p, out);
}


/* ---- embedding ------------------------------------------------------------------------------- */

typedef struct emb_params {
    uint32_t n, D, V, off_w, off_i, sw0, sw1, pad;
    op_layout_params li;
} emb_params;

static wgt_status emb_ref(void *arg, const wgt_cpu_tensor *in, const wgt_cpu_tensor *out)
{
    return wgt_cpu_embedding(&in[0], &in[1], &out[0]);
}

static wgt_status embedding_unrecorded(const wgt_tensor *weight, const wgt_tensor *ids, wgt_dtype out_dtype, wgt_tensor **out)
{
    OP_BEGIN(weight, out);
    const wgt_tensor *ins[2] = {weight, ids};
    wgt_status st = op_same_context("embedding", ins, 2);
    if (st) return st;
    if (weight->l.ndim != 2) return op_fail(ctx, WGT_ERR_SHAPE, "embedding: weight must be [V, D] (got %d dims)", weight->l.ndim);
    if (!op_is_int(ids->l.dtype) || ids->l.dtype == WGT_BOOL)
        return op_fail(ctx, WGT_ERR_DTYPE, "embedding: ids must be integers, not %s", wgt_dtype_name(ids->l.dtype));
    if (out_dtype != WGT_F32 && out_dtype != weight->l.dtype)
        return op_fail(ctx, WGT_ERR_DTYPE, "embedding: the result is f32 or the weight's dtype (%s), not %s",
                       wgt_dtype_name(weight->l.dtype), wgt_dtype_name(out_dtype));
    int ni = ids->l.ndim;
    if (ni + 1 > WGT_MAX_DIMS) return op_fail(ctx, WGT_ERR_SHAPE, "embedding: ids have too many dims");
    int64_t shape[WGT_MAX_DIMS];
    memcpy(shape, ids->l.shape, sizeof(int64_t) * ni);
    shape[ni] = weight->l.shape[1];
    int64_t V = weight->l.shape[0], D = weight->l.shape[1];
    wgt_tensor *y;
    if ((st = wgt_tensor_new(ctx, out_dtype, ni + 1, shape, &y))) return st;
    int64_t n = wgt_layout_numel(&y->l);
    int gpu_ok = op_is_float(weight->l.dtype) && V <= INT32_MAX;
    if (op_use_gpu(ctx, "embedding", weight->l.dtype, gpu_ok)) {
        if (n == 0) return op_finish(WGT_OK, y, out);
        wgt_kernel *k;
        emb_params p;
        memset(&p, 0, sizeof p);
        wgt_binding b[3];
        int64_t base;
        if ((st = rope_kernel(ctx, "rope_embedding", weight->l.dtype, ids->l.dtype, out_dtype, &k))) goto done;
        if (n > UINT32_MAX || weight->l.strides[0] > UINT32_MAX) {
            st = op_fail(ctx, WGT_ERR_LIMIT, "embedding: more than 2^32 elements");
            goto done;
        }
        p.n = (uint32_t)n, p.D = (uint32_t)D, p.V = (uint32_t)V;
        p.sw0 = (uint32_t)weight->l.strides[0], p.sw1 = (uint32_t)weight->l.strides[1];
        if ((st = op_bind_all(weight, &b[0], &base))) goto done;
        p.off_w = (uint32_t)(weight->l.offset - base);
        if ((st = op_bind_all(ids, &b[1], &base))) goto done;
        p.off_i = (uint32_t)(ids->l.offset - base);
        if ((st = op_bind_all(y, &b[2], &base))) goto done;
        if ((st = op_layout_params_fill(ctx, &ids->l, &p.li))) goto done;
        uint32_t gx, gy;
        uint64_t words = ((uint64_t)n + op_pack(out_dtype) - 1) / op_pack(out_dtype);
        op_grid(ctx, (words + op_workgroup_size(ctx) - 1) / op_workgroup_size(ctx), &gx, &gy);
        st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 3, gx, gy, 1);
    } else if (!(st = op_fallback_status(ctx, "embedding", weight->l.dtype, gpu_ok))) {
        /* the reference gathers in the weight's dtype */
        wgt_tensor *g = y;
        if (out_dtype != weight->l.dtype) st = wgt_tensor_new(ctx, weight->l.dtype, ni + 1, shape, &g);
        if (!st) st = op_reference(ctx, emb_ref, NULL, ins, 2, &g, 1);
        if (!st && g != y) {
            wgt_tensor_free(y);
            y = NULL;
            st = wgt_tensor_cast(g, out_dtype, &y);
        }
        if (g != y) wgt_tensor_free(g);
    }
done:
    return op_finish(st, y, out);
}

typedef struct emb_bwd_params {
    uint32_t n, D, V, off_s, off_p, off_g, pad0, pad1;
} emb_bwd_params;

static char *emb_bwd_prelude(void *arg)
{
    char *pre = malloc(64);
    if (pre) snprintf(pre, 64, "const WG: u32 = %uu;\n", *(const uint32_t *)arg);
    return pre;
}

int op_embedding_backward_ok(const wgt_tensor *ids, const wgt_tensor *g)
{
    if (!ids || !g || ids->l.ndim != 1 || g->l.ndim != 2 || ids->l.dtype != WGT_I32 || g->l.dtype != WGT_F32) return 0;
    wgt_context *ctx = ids->st->ctx;
    return !wgt_gpu_runs_reference(ctx) && g->l.shape[0] == ids->l.shape[0] &&
           (uint64_t)wgt_layout_numel(&g->l) <= UINT32_MAX;
}

wgt_status op_embedding_backward(const wgt_tensor *ids, const wgt_tensor *g, int64_t V, wgt_tensor **out)
{
    if (!out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "embedding backward: NULL argument");
    *out = NULL;
    if (!op_embedding_backward_ok(ids, g) || V < 1 || V > INT32_MAX || (uint64_t)V * (uint64_t)g->l.shape[1] > UINT32_MAX)
        return wgt_error(WGT_ERR_INTERNAL, "embedding backward: not a case op_embedding_backward_ok takes");
    wgt_context *ctx = ids->st->ctx;
    int64_t N = ids->l.shape[0], D = g->l.shape[1], shape[2] = {V, D};
    wgt_tensor *sv = NULL, *si = NULL, *gc = NULL, *y = NULL;
    wgt_status st = wgt_sort(ids, 0, 0, &sv, &si);
    if (!st) st = wgt_tensor_contiguous(g, &gc);
    if (!st) st = wgt_tensor_new(ctx, WGT_F32, 2, shape, &y);
    if (!st) st = wgt_gpu_fill_zero(ctx, y->st->buf, 0, y->st->bytes);
    if (!st && N > 0 && D > 0) {
        uint32_t wg = op_workgroup_size(ctx), gx, gy;
        wgt_kernel *k;
        wgt_binding b[4];
        int64_t base;
        emb_bwd_params p = {(uint32_t)N, (uint32_t)D, (uint32_t)V, 0, 0, 0, 0, 0};
        st = wgt_gpu_kernel_keyed(ctx, "rope_embedding_backward", &wg, sizeof wg, emb_bwd_prelude, &wg, "main", NULL, 0, &k);
        if (!st && !(st = op_bind_all(sv, &b[0], &base))) p.off_s = (uint32_t)(sv->l.offset - base);
        if (!st && !(st = op_bind_all(si, &b[1], &base))) p.off_p = (uint32_t)(si->l.offset - base);
        if (!st && !(st = op_bind_all(gc, &b[2], &base))) p.off_g = (uint32_t)(gc->l.offset - base);
        if (!st) st = op_bind_all(y, &b[3], &base);
        if (!st) {
            op_grid(ctx, ((uint64_t)N * (uint64_t)D + wg - 1) / wg, &gx, &gy);
            st = wgt_gpu_dispatch(ctx, k, &p, sizeof p, b, 4, gx, gy, 1);
        }
    }
    wgt_tensor_free(sv);
    wgt_tensor_free(si);
    wgt_tensor_free(gc);
    if (st) {
        wgt_tensor_free(y);
        return st;
    }
    *out = y;
    return WGT_OK;
}

wgt_status wgt_embedding(const wgt_tensor *weight, const wgt_tensor *ids, wgt_dtype out_dtype, wgt_tensor **out)
{
    const wgt_tensor *in[2] = {weight, ids};
    return op_record(embedding_unrecorded(weight, ids, out_dtype, out), OP_GRAD_EMBEDDING, in, 2, NULL, 0, out);
}

