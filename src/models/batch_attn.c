/* The decode attention of a wgt_batch step over every slot at once (src/kernels/models_attention_slots.wgsl):
 * one dispatch a layer for all decode rows, whatever their slots, lengths and positions, instead of
 * a few per sequence. See mdl_attention_slots in model.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/model.h"
#include "ops/ops.h"
#include "tensor/tensor.h"

/* Params of models_attention_slots.wgsl, field for field. */
typedef struct slots_params {
    uint32_t R, Hq, Hkv, D;
    uint32_t ctx;
    float scale;
    uint32_t group, zero;
    uint32_t off_q, sq_h, sq_r, off_k;
    uint32_t sk_h, sk_r, off_v, sv_h;
    uint32_t sv_r, off_pos, off_slot, off_out;
} slots_params;

typedef struct slots_key {
    uint32_t wg;
} slots_key;

/* WG, and the NaN and reduction helpers attention_decode.wgsl uses too (lib_attention.wgsl). */
static char *slots_prelude(void *arg)
{
    const slots_key *key = arg;
    size_t cap = 4096;
    char *pre = malloc(cap);
    if (!pre) return NULL;
    snprintf(pre, cap, "const WG: u32 = %uu;\n", key->wg);
    if (!op_wgsl_section(pre, cap, "lib_attention", "nan") || !op_wgsl_section(pre, cap, "lib_attention", "reduce")) {
        free(pre);
        return NULL;
    }
    return pre;
}

int mdl_attention_slots_ok(wgt_context *ctx, int64_t head_dim)
{
    return ctx && !wgt_gpu_runs_reference(ctx) && !wgt_gpu_avoid_barriers(ctx) && head_dim >= 1 && head_dim <= 256 &&
           op_workgroup_size(ctx) >= 64;
}

/* x: [H, R, D] f32, unit feature stride; its offset, head and row strides as u32. */
static wgt_status rows3(wgt_context *ctx, const wgt_tensor *x, int64_t H, int64_t R, int64_t D, const char *what,
                        wgt_binding *b, uint32_t *off, uint32_t *s_h, uint32_t *s_r)
{
    const wgt_layout *l = &x->l;
    if (l->dtype != WGT_F32 || l->ndim != 3 || l->shape[0] != H || l->shape[1] != R || l->shape[2] != D ||
        (D > 1 && l->strides[2] != 1) || l->strides[0] < 0 || l->strides[1] < 0 || l->strides[0] > UINT32_MAX ||
        l->strides[1] > UINT32_MAX)
        return wgt_error(WGT_ERR_SHAPE, "mdl_attention_slots: %s must be f32 [%lld, %lld, %lld] with unit feature stride",
                         what, (long long)H, (long long)R, (long long)D);
    int64_t base;
    wgt_status st = op_bind_all(x, b, &base);
    if (st) return st;
    *off = (uint32_t)(l->offset - base), *s_h = (uint32_t)l->strides[0], *s_r = (uint32_t)l->strides[1];
    return WGT_OK;
}

wgt_status mdl_attention_slots(const wgt_tensor *q, const wgt_tensor *k, const wgt_tensor *v, const wgt_tensor *info,
                               int64_t slots_at, int64_t R, wgt_tensor *kc, wgt_tensor *vc, double scale,
                               wgt_tensor **out)
{
    if (!out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "mdl_attention_slots: NULL out");
    *out = NULL;
    if (!q || !k || !v || !info || !kc || !vc || R < 1)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "mdl_attention_slots: missing tensors or no rows");
    wgt_context *ctx = q->st->ctx;
    const wgt_layout *lc = &kc->l;
    if (lc->ndim != 4 || lc->dtype != WGT_F32 || !wgt_layout_is_contiguous(lc) || lc->offset != 0 ||
        vc->l.ndim != 4 || vc->l.dtype != WGT_F32 || !wgt_layout_is_contiguous(&vc->l) || vc->l.offset != 0 ||
        memcmp(lc->shape, vc->l.shape, 4 * sizeof lc->shape[0]))
        return wgt_error(WGT_ERR_SHAPE, "mdl_attention_slots: the caches must be f32 [slots, kv heads, ctx, head dim], "
                                        "contiguous, whole, of one shape");
    int64_t S = lc->shape[0], Hkv = lc->shape[1], C = lc->shape[2], D = lc->shape[3];
    if (q->l.ndim != 3 || !Hkv || q->l.shape[0] % Hkv)
        return wgt_error(WGT_ERR_SHAPE, "mdl_attention_slots: q must be [Hq, R, D] with Hq a multiple of %lld",
                         (long long)Hkv);
    int64_t Hq = q->l.shape[0];
    if (!mdl_attention_slots_ok(ctx, D))
        return wgt_error(WGT_ERR_UNSUPPORTED, "mdl_attention_slots: needs a GPU context with barriers and a head "
                                              "size of at most 256 (got %lld)",
                         (long long)D);
    if (info->l.dtype != WGT_I32 || info->l.ndim != 1 || slots_at < R ||
        info->l.shape[0] < slots_at + R || info->l.strides[0] != 1)
        return wgt_error(WGT_ERR_SHAPE, "mdl_attention_slots: info must be i32 [>= %lld]: positions, then slots at %lld",
                         (long long)(slots_at + R), (long long)slots_at);
    if ((uint64_t)lc->shape[0] * Hkv * C * D > UINT32_MAX || (uint64_t)R * Hq * D > UINT32_MAX)
        return wgt_error(WGT_ERR_LIMIT, "mdl_attention_slots: past 2^32 elements");
    (void)S;
    slots_params p;
    memset(&p, 0, sizeof p);
    p.R = (uint32_t)R, p.Hq = (uint32_t)Hq, p.Hkv = (uint32_t)Hkv, p.D = (uint32_t)D;
    p.ctx = (uint32_t)C, p.scale = (float)scale, p.group = (uint32_t)(Hq / Hkv);
    wgt_binding b[7];
    int64_t base;
    wgt_status st;
    if ((st = rows3(ctx, q, Hq, R, D, "q", &b[0], &p.off_q, &p.sq_h, &p.sq_r)) ||
        (st = rows3(ctx, k, Hkv, R, D, "k", &b[1], &p.off_k, &p.sk_h, &p.sk_r)) ||
        (st = rows3(ctx, v, Hkv, R, D, "v", &b[2], &p.off_v, &p.sv_h, &p.sv_r)))
        return st;
    if ((st = op_bind_all(info, &b[3], &base))) return st;
    p.off_pos = (uint32_t)(info->l.offset - base), p.off_slot = (uint32_t)(info->l.offset - base + slots_at);
    if ((st = op_bind_storage(kc, &b[4], &base))) return st;
    if (base) return wgt_error(WGT_ERR_LIMIT, "mdl_attention_slots: the key cache does not fit one binding");
    if ((st = op_bind_storage(vc, &b[5], &base))) return st;
    if (base) return wgt_error(WGT_ERR_LIMIT, "mdl_attention_slots: the value cache does not fit one binding");
    int64_t oshape[2] = {R, Hq * D};
    wgt_tensor *o;
    if ((st = wgt_tensor_new(ctx, WGT_F32, 2, oshape, &o))) return st;
    if ((st = op_bind_all(o, &b[6], &base))) goto fail;
    p.off_out = (uint32_t)(o->l.offset - base);
    slots_key key = {op_workgroup_size(ctx)};
    wgt_kernel *kern;
    if ((st = wgt_gpu_kernel_keyed(ctx, "models_attention_slots", &key, sizeof key, slots_prelude, &key, "main", NULL, 0,
                                   &kern)))
        goto fail;
    uint32_t gx, gy;
    op_grid(ctx, (uint64_t)R * (uint64_t)Hq, &gx, &gy);
    if ((st = wgt_gpu_dispatch(ctx, kern, &p, sizeof p, b, 7, gx, gy, 1))) goto fail;
    *out = o;
    return WGT_OK;
fail:
    wgt_tensor_free(o);
    return st;
}
