/* Continuous batching (wgt_batch): several sequences, each with a KV cache slot of its own, fed
 * together. One step takes any mix of sequences and new ids (one id for a sequence that decodes, a
 * chunk of its prompt for one that prefills): the rows of all of them go through each linear layer
 * as one matrix product (the weights are read once per step, not once per sequence). The slots'
 * caches are regions of one tensor per layer (or a few, each one storage binding, when the slots'
 * caches pass the device's binding limit), so the attention of every decoding sequence (one new
 * id) is one dispatch a layer and group (batch_attn.c, src/kernels/models_attention_slots.wgsl);
 * a prefilling chunk attends per sequence over its own region. Then one token is drawn per sequence, each with its
 * own sampling settings, by the same rules as wgt_model_generate.
 *
 * The batched layer loop knows the architectures of src/models/forward.c's plain path (llama,
 * qwen2, qwen3, gpt2). Any other runs each sequence through wgt_model_forward with the slot's cache
 * swapped in: slower, never wrong. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/model.h"
#include "tensor/tensor.h"

typedef struct bslot {
    wgt_tensor **k, **v; /* [n_layers], each [n_kv_heads, ctx, head_dim] f32 */
    int32_t *ids;        /* [ctx]: the ids whose keys and values the slot holds */
    int64_t n_past;
} bslot;

struct wgt_batch {
    wgt_model *m;
    int n_slots;
    int64_t ctx;
    bslot *slots;   /* [n_slots] */
    /* The slots' caches in groups of `group` slots (the last group may hold fewer): kall[li *
     * n_groups + g], vall likewise, each [slots of group g, n_kv_heads, ctx, head_dim] f32, the
     * slots' k and v views into them. A group's cache is one storage binding, so the device's
     * binding limit sets the group size: the decode attention is one dispatch a layer and group.
     * NULL where the slots hold caches of their own (a CPU reference context, one slot's cache past
     * one binding): then decode rows attend per sequence too */
    wgt_tensor **kall, **vall;
    int group, n_groups;
    int per_sequence; /* decode rows attend per sequence even with kall (mdl_batch_set_per_sequence) */
    int sequential; /* one wgt_model_forward per sequence (other architectures; a test's reference) */
};

/* mdl_batch_set_binding_limit: a smaller binding limit for the caches of batches created later. */
static uint64_t test_binding_limit;

/* Tensors of one layer (or step), freed together. */
typedef struct tlist {
    wgt_tensor **t;
    int n, cap;
} tlist;

static wgt_status keep(tlist *l, wgt_tensor *t)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        wgt_tensor **p = realloc(l->t, (size_t)cap * sizeof *p);
        if (!p) {
            wgt_tensor_free(t);
            return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
        }
        l->t = p, l->cap = cap;
    }
    l->t[l->n++] = t;
    return WGT_OK;
}

static void tlist_clear(tlist *l)
{
    for (int i = 0; i < l->n; i++) wgt_tensor_free(l->t[i]);
    l->n = 0;
}

#define DO(call)                                                                                   \
    do {                                                                                           \
        if ((st = (call))) goto done;                                                              \
    } while (0)
/* r = call with an out-parameter; the result joins the list s. */
#define T(s, r, call)                                                                              \
    do {                                                                                           \
        if ((st = (call)) || (st = keep(&(s), r))) goto done;                                      \
    } while (0)

/* 1 when the batched step computes what wgt_model_forward does for this model: the llama/qwen/gpt2
 * layer without the features other families add (family.c), which only the sequential path runs. */
static int batch_supports(const wgt_model_config *c)
{
    int arch = c->arch == WGT_ARCH_LLAMA || c->arch == WGT_ARCH_QWEN2 || c->arch == WGT_ARCH_QWEN3 || c->arch == WGT_ARCH_GPT2;
    int plain = !c->norm_offset && !c->embed_scale && (c->act == MDL_ACT_SILU || c->arch == WGT_ARCH_GPT2) &&
                !c->post_norms && !c->attn_scale && !c->attn_softcap && !c->final_softcap && !c->window &&
                !c->rope_local_set && !c->parallel && !c->no_pre_norm && !c->fused_proj && !c->n_experts &&
                (!c->rope_dims || c->rope_dims == c->head_dim);
    return arch && plain;
}

/* *out = all[i] as a view [n_kv_heads, ctx, head_dim]. */
static wgt_status slot_view(wgt_tensor *all, int i, wgt_tensor **out)
{
    wgt_tensor *row;
    wgt_status st = wgt_tensor_narrow(all, 0, i, 1, &row);
    if (st) return st;
    st = wgt_tensor_squeeze(row, 0, out);
    wgt_tensor_free(row);
    return st;
}

wgt_status wgt_batch_create(wgt_model *m, int n_slots, wgt_batch **out)
{
    if (!out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_batch_create: NULL out");
    *out = NULL;
    if (!m || n_slots < 1 || n_slots > 1024)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_batch_create: need a model and 1 to 1024 slots (got %d)",
                         n_slots);
    const wgt_model_config *c = &m->cfg;
    wgt_batch *b = calloc(1, sizeof *b);
    if (!b || !(b->slots = calloc((size_t)n_slots, sizeof *b->slots))) {
        free(b);
        return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    b->m = m, b->n_slots = n_slots, b->ctx = m->max_ctx;
    b->sequential = !batch_supports(c);
    int64_t shape[3] = {c->n_kv_heads, b->ctx, c->head_dim};
    const wgt_limits *lim = wgt_gpu_runs_reference(m->ctx) ? NULL : wgt_gpu_limits(m->ctx);
    wgt_status st = WGT_OK;
    if (lim && mdl_attention_slots_ok(m->ctx, c->head_dim)) {
        /* as many slots a group as one binding (and the kernel's u32 indices) hold, the groups
         * made even: 65 slots of which 64 fit are 2 groups of 33 and 32 */
        uint64_t slot_bytes = (uint64_t)(c->n_kv_heads * b->ctx * c->head_dim) * 4u;
        uint64_t limit = lim->max_storage_buffer_binding_size;
        if (lim->max_buffer_size < limit) limit = lim->max_buffer_size;
        if ((uint64_t)UINT32_MAX < limit / 4u) limit = (uint64_t)UINT32_MAX * 4u;
        if (test_binding_limit && test_binding_limit < limit) limit = test_binding_limit;
        uint64_t fit = slot_bytes ? limit / slot_bytes : 0;
        if (fit >= 1) {
            b->n_groups = (int)(((uint64_t)n_slots + fit - 1) / fit);
            b->group = (n_slots + b->n_groups - 1) / b->n_groups;
        }
    }
    if (b->n_groups) {
        size_t n_caches = (size_t)c->n_layers * (size_t)b->n_groups;
        b->kall = calloc(n_caches, sizeof *b->kall);
        b->vall = calloc(n_caches, sizeof *b->vall);
        if (!b->kall || !b->vall) st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
        for (size_t k = 0; k < n_caches && !st; k++) {
            int g = (int)(k % (size_t)b->n_groups), in_g = n_slots - g * b->group < b->group ? n_slots - g * b->group : b->group;
            int64_t ashape[4] = {in_g, c->n_kv_heads, b->ctx, c->head_dim};
            if (!(st = wgt_tensor_zeros(m->ctx, WGT_F32, 4, ashape, &b->kall[k])))
                st = wgt_tensor_zeros(m->ctx, WGT_F32, 4, ashape, &b->vall[k]);
        }
    }
    for (int i = 0; i < n_slots && !st; i++) {
        bslot *s = &b->slots[i];
        s->k = calloc((size_t)c->n_layers, sizeof *s->k);
        s->v = calloc((size_t)c->n_layers, sizeof *s->v);
        s->ids = calloc((size_t)b->ctx, sizeof *s->ids);
        if (!s->k || !s->v || !s->ids) {
            st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory for %d sequence slots", n_slots);
            break;
        }
        for (int64_t li = 0; li < c->n_layers && !st; li++)
            if (b->kall) { /* the slot's region of its group's cache: views [n_kv_heads, ctx, head_dim] */
                int64_t k = li * b->n_groups + i / b->group;
                if (!(st = slot_view(b->kall[k], i % b->group, &s->k[li]))) st = slot_view(b->vall[k], i % b->group, &s->v[li]);
            } else if (!(st = wgt_tensor_zeros(m->ctx, WGT_F32, 3, shape, &s->k[li])))
                st = wgt_tensor_zeros(m->ctx, WGT_F32, 3, shape, &s->v[li]);
    }
    if (st) {
        wgt_batch_free(b);
        return st;
    }
    *out = b;
    return WGT_OK;
}

void wgt_batch_free(wgt_batch *b)
{
    if (!b) return;
    for (int i = 0; i < b->n_slots; i++) {
        bslot *s = &b->slots[i];
        for (int64_t li = 0; li < b->m->cfg.n_layers; li++) {
            if (s->k) wgt_tensor_free(s->k[li]);
            if (s->v) wgt_tensor_free(s->v[li]);
        }
        free(s->k), free(s->v), free(s->ids);
    }
    for (int64_t k = 0; k < b->m->cfg.n_layers * b->n_groups; k++) {
        if (b->kall) wgt_tensor_free(b->kall[k]);
        if (b->vall) wgt_tensor_free(b->vall[k]);
    }
    free(b->kall), free(b->vall);
    free(b->slots);
    free(b);
}

int wgt_batch_slots(const wgt_batch *b) { return b ? b->n_slots : 0; }
int64_t wgt_batch_context(const wgt_batch *b) { return b ? b->ctx : 0; }

int64_t wgt_batch_slot_length(const wgt_batch *b, int slot)
{
    return b && slot >= 0 && slot < b->n_slots ? b->slots[slot].n_past : 0;
}

const int32_t *wgt_batch_slot_ids(const wgt_batch *b, int slot)
{
    return b && slot >= 0 && slot < b->n_slots ? b->slots[slot].ids : NULL;
}

wgt_status wgt_batch_slot_truncate(wgt_batch *b, int slot, int64_t n_keep)
{
    if (!b || slot < 0 || slot >= b->n_slots || n_keep < 0)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_batch_slot_truncate: bad slot %d or length %lld", slot,
                         (long long)n_keep);
    if (n_keep < b->slots[slot].n_past) b->slots[slot].n_past = n_keep;
    return WGT_OK;
}

void mdl_batch_set_sequential(wgt_batch *b, int on)
{
    if (b) b->sequential = on || !batch_supports(&b->m->cfg);
}

void mdl_batch_set_per_sequence(wgt_batch *b, int on)
{
    if (b) b->per_sequence = on;
}

void mdl_batch_set_binding_limit(uint64_t bytes) { test_binding_limit = bytes; }

int mdl_batch_cache_groups(const wgt_batch *b) { return b ? b->n_groups : 0; }

/* One sequence through the model's own forward pass, the slot's cache swapped in. */
static wgt_status forward_one(wgt_batch *b, const wgt_batch_item *it, wgt_tensor **logits)
{
    wgt_model *m = b->m;
    bslot *s = &b->slots[it->slot];
    int64_t nl = m->cfg.n_layers, n_past = m->n_past, max_ctx = m->max_ctx;
    int32_t *ids = m->cache_ids;
    wgt_tensor *k, *v;
    for (int64_t li = 0; li < nl; li++) {
        k = m->layers[li].k_cache, v = m->layers[li].v_cache;
        m->layers[li].k_cache = s->k[li], m->layers[li].v_cache = s->v[li];
        s->k[li] = k, s->v[li] = v;
    }
    m->n_past = s->n_past, m->cache_ids = s->ids, m->max_ctx = b->ctx;
    wgt_status st = wgt_model_forward(m, it->ids, it->n, 0, logits);
    s->n_past = m->n_past;
    for (int64_t li = 0; li < nl; li++) {
        k = m->layers[li].k_cache, v = m->layers[li].v_cache;
        m->layers[li].k_cache = s->k[li], m->layers[li].v_cache = s->v[li];
        s->k[li] = k, s->v[li] = v;
    }
    m->n_past = n_past, m->cache_ids = ids, m->max_ctx = max_ctx;
    return st;
}

/* out = xs[0..n) joined along dim 0 (wgt_cat takes at most 64 at once). */
static wgt_status cat_rows(wgt_tensor *const *xs, int n, wgt_tensor **out)
{
    if (n == 1) {
        *out = wgt_tensor_ref(xs[0]);
        return WGT_OK;
    }
    wgt_tensor *acc = NULL;
    wgt_status st = WGT_OK;
    for (int i0 = 0; i0 < n && !st; i0 += 63) {
        const wgt_tensor *part[64];
        int k = 0;
        if (acc) part[k++] = acc;
        for (int i = i0; i < n && i < i0 + 63; i++) part[k++] = xs[i];
        wgt_tensor *next;
        st = wgt_cat(part, k, 0, &next);
        wgt_tensor_free(acc);
        acc = st ? NULL : next;
    }
    *out = acc;
    return st;
}

/* The attention of one sequence in a layer: rows r0 .. r0 + L - 1 of the step (its positions
 * pos0 .. pos0 + L - 1), keys and values written into the slot's cache; *att [L, Hq * hd]. */
static wgt_status attend(const wgt_model *m, int64_t li, bslot *s, const wgt_tensor *qkv, const wgt_tensor *q_all,
                         const wgt_tensor *k_all, const wgt_tensor *v_all, const wgt_tensor *pos_all, int64_t r0,
                         int64_t L, wgt_tensor **att)
{
    const wgt_model_config *c = &m->cfg;
    const wgt_layer_weights *W = &m->layers[li];
    const int64_t hd = c->head_dim, Hq = c->n_heads, Hkv = c->n_kv_heads, pos0 = s->n_past;
    tlist t = {0};
    wgt_status st = WGT_OK;
    wgt_tensor *qr, *kc, *vc, *q4, *k4, *v4, *a, *a3, *at;
    if (c->arch != WGT_ARCH_GPT2 && qkv && !c->qk_norm) { /* one pass: q rotated, k and v into the cache */
        wgt_tensor *seg;
        T(t, seg, wgt_tensor_narrow(qkv, 0, r0, L, &seg));
        T(t, qr, wgt_qkv_rope_cache(seg, Hq, Hkv, hd, pos0, (int)hd, c->rope_interleaved, &c->rope, s->k[li],
                                    s->v[li], &qr));
    } else {
        wgt_tensor *q, *k, *v, *q3, *k3, *v3, *qt, *kt, *vt, *kr, *kslot, *vslot;
        if (qkv) {
            T(t, q, wgt_tensor_narrow(qkv, 1, 0, Hq * hd, &q));
            T(t, k, wgt_tensor_narrow(qkv, 1, Hq * hd, Hkv * hd, &k));
            T(t, v, wgt_tensor_narrow(qkv, 1, (Hq + Hkv) * hd, Hkv * hd, &v));
        } else {
            q = (wgt_tensor *)q_all, k = (wgt_tensor *)k_all, v = (wgt_tensor *)v_all;
        }
        wgt_tensor *qs, *ks, *vs;
        T(t, qs, wgt_tensor_narrow(q, 0, r0, L, &qs));
        T(t, ks, wgt_tensor_narrow(k, 0, r0, L, &ks));
        T(t, vs, wgt_tensor_narrow(v, 0, r0, L, &vs));
        int64_t qsh[3] = {L, Hq, hd}, ksh[3] = {L, Hkv, hd};
        T(t, q3, wgt_tensor_reshape(qs, 3, qsh, &q3));
        T(t, k3, wgt_tensor_reshape(ks, 3, ksh, &k3));
        T(t, v3, wgt_tensor_reshape(vs, 3, ksh, &v3));
        if (c->qk_norm) {
            wgt_tensor *qn, *kn;
            T(t, qn, wgt_rms_norm(q3, 1, W->q_norm, c->norm_eps, &qn));
            T(t, kn, wgt_rms_norm(k3, 1, W->k_norm, c->norm_eps, &kn));
            q3 = qn, k3 = kn;
        }
        T(t, qt, wgt_tensor_transpose(q3, 0, 1, &qt)); /* [H, L, hd] views */
        T(t, kt, wgt_tensor_transpose(k3, 0, 1, &kt));
        T(t, vt, wgt_tensor_transpose(v3, 0, 1, &vt));
        if (c->arch != WGT_ARCH_GPT2) {
            wgt_tensor *ps;
            T(t, ps, wgt_tensor_narrow(pos_all, 0, r0, L, &ps));
            T(t, qr, wgt_rope(qt, ps, (int)hd, c->rope_interleaved, &c->rope, &qr));
            T(t, kr, wgt_rope(kt, ps, (int)hd, c->rope_interleaved, &c->rope, &kr));
        } else
            qr = qt, kr = kt;
        T(t, kslot, wgt_tensor_narrow(s->k[li], 1, pos0, L, &kslot));
        T(t, vslot, wgt_tensor_narrow(s->v[li], 1, pos0, L, &vslot));
        DO(wgt_tensor_assign(kslot, kr));
        DO(wgt_tensor_assign(vslot, vt));
    }
    T(t, kc, wgt_tensor_narrow(s->k[li], 1, 0, pos0 + L, &kc));
    T(t, vc, wgt_tensor_narrow(s->v[li], 1, 0, pos0 + L, &vc));
    T(t, q4, wgt_tensor_unsqueeze(qr, 0, &q4));
    T(t, k4, wgt_tensor_unsqueeze(kc, 0, &k4));
    T(t, v4, wgt_tensor_unsqueeze(vc, 0, &v4));
    wgt_sdpa_params sp = {0, 1, pos0, 0, mdl_half_attention(m)};
    T(t, a, wgt_sdpa(q4, k4, v4, NULL, &sp, &a)); /* [1, Hq, L, hd] */
    T(t, a3, wgt_tensor_squeeze(a, 0, &a3));
    T(t, at, wgt_tensor_transpose(a3, 0, 1, &at)); /* [L, Hq, hd] */
    int64_t fs[2] = {L, Hq * hd};
    st = wgt_tensor_reshape(at, 2, fs, att);
done:
    tlist_clear(&t);
    free(t.t);
    return st;
}

/* The attention of the step's first nd rows, each a decoding sequence of its own slot, in one
 * dispatch a cache group over the layer's caches (mdl_attention_slots); the rows go group by group,
 * per_group[g] of group g; their positions are info[0 .. nd), their slots within their group
 * info[R ..). *att [nd, Hq * hd]. */
static wgt_status attend_slots(const wgt_batch *b, int64_t li, const wgt_tensor *qkv, const wgt_tensor *q_all,
                               const wgt_tensor *k_all, const wgt_tensor *v_all, const wgt_tensor *info, int64_t R,
                               int64_t nd, const int *per_group, wgt_tensor **att)
{
    const wgt_model *m = b->m;
    const wgt_model_config *c = &m->cfg;
    const wgt_layer_weights *W = &m->layers[li];
    const int64_t hd = c->head_dim, Hq = c->n_heads, Hkv = c->n_kv_heads;
    tlist t = {0};
    wgt_status st = WGT_OK;
    wgt_tensor *rows, *q, *k, *v, *q3, *k3, *v3, *qr, *kr, *vt, *ps;
    int64_t qsh[3] = {nd, Hq, hd}, ksh[3] = {nd, Hkv, hd};
    T(t, ps, wgt_tensor_narrow(info, 0, 0, nd, &ps));
    if (qkv) {
        T(t, rows, wgt_tensor_narrow(qkv, 0, 0, nd, &rows));
        T(t, v, wgt_tensor_narrow(rows, 1, (Hq + Hkv) * hd, Hkv * hd, &v));
        if (c->arch != WGT_ARCH_GPT2 && !c->qk_norm) { /* q and k rotated together: one dispatch */
            wgt_tensor *qk, *qk3, *qkt, *rot;
            int64_t sh[3] = {nd, Hq + Hkv, hd};
            T(t, qk, wgt_tensor_narrow(rows, 1, 0, (Hq + Hkv) * hd, &qk));
            T(t, qk3, wgt_tensor_reshape(qk, 3, sh, &qk3));
            T(t, qkt, wgt_tensor_transpose(qk3, 0, 1, &qkt)); /* [Hq + Hkv, nd, hd] */
            T(t, rot, wgt_rope(qkt, ps, (int)hd, c->rope_interleaved, &c->rope, &rot));
            T(t, qr, wgt_tensor_narrow(rot, 0, 0, Hq, &qr));
            T(t, kr, wgt_tensor_narrow(rot, 0, Hq, Hkv, &kr));
            goto attn;
        }
        T(t, q, wgt_tensor_narrow(rows, 1, 0, Hq * hd, &q));
        T(t, k, wgt_tensor_narrow(rows, 1, Hq * hd, Hkv * hd, &k));
    } else {
        T(t, q, wgt_tensor_narrow(q_all, 0, 0, nd, &q));
        T(t, k, wgt_tensor_narrow(k_all, 0, 0, nd, &k));
        T(t, v, wgt_tensor_narrow(v_all, 0, 0, nd, &v));
    }
    T(t, q3, wgt_tensor_reshape(q, 3, qsh, &q3));
    T(t, k3, wgt_tensor_reshape(k, 3, ksh, &k3));
    if (c->qk_norm) {
        wgt_tensor *qn, *kn;
        T(t, qn, wgt_rms_norm(q3, 1, W->q_norm, c->norm_eps, &qn));
        T(t, kn, wgt_rms_norm(k3, 1, W->k_norm, c->norm_eps, &kn));
        q3 = qn, k3 = kn;
    }
    wgt_tensor *qt, *kt;
    T(t, qt, wgt_tensor_transpose(q3, 0, 1, &qt)); /* [H, nd, hd] views */
    T(t, kt, wgt_tensor_transpose(k3, 0, 1, &kt));
    if (c->arch != WGT_ARCH_GPT2) {
        T(t, qr, wgt_rope(qt, ps, (int)hd, c->rope_interleaved, &c->rope, &qr));
        T(t, kr, wgt_rope(kt, ps, (int)hd, c->rope_interleaved, &c->rope, &kr));
    } else
        qr = qt, kr = kt;
attn:
    T(t, v3, wgt_tensor_reshape(v, 3, ksh, &v3));
    T(t, vt, wgt_tensor_transpose(v3, 0, 1, &vt));
    if (b->n_groups == 1) {
        st = mdl_attention_slots(qr, kr, vt, info, R, nd, b->kall[li], b->vall[li], 1.0 / sqrt((double)hd), att);
        goto done;
    }
    wgt_tensor *parts[64], *joined = NULL;
    int np = 0;
    for (int g = 0, r0 = 0; g < b->n_groups; r0 += per_group[g], g++) {
        if (!per_group[g]) continue;
        wgt_tensor *qg, *kg, *vg, *ig, *ag;
        int64_t ng = per_group[g];
        T(t, qg, wgt_tensor_narrow(qr, 1, r0, ng, &qg));
        T(t, kg, wgt_tensor_narrow(kr, 1, r0, ng, &kg));
        T(t, vg, wgt_tensor_narrow(vt, 1, r0, ng, &vg));
        T(t, ig, wgt_tensor_narrow(info, 0, r0, 2 * R - r0, &ig)); /* positions from r0, slots from R + r0 */
        int64_t k = li * b->n_groups + g;
        T(t, ag, mdl_attention_slots(qg, kg, vg, ig, R, ng, b->kall[k], b->vall[k], 1.0 / sqrt((double)hd), &ag));
        parts[np++] = ag;
        if (np == 64) { /* cat_rows joins any number; this bounds the list */
            DO(cat_rows(parts, np, &joined));
            DO(keep(&t, joined));
            parts[0] = joined, np = 1;
        }
    }
    st = cat_rows(parts, np, att);
done:
    tlist_clear(&t);
    free(t.t);
    return st;
}

/* All items' rows through the layers together; *logits [n, vocab] of each item's last row. The
 * rows go decoding items first (one id each, when the slots share caches: group by group), then
 * the prefilling ones. */
static wgt_status forward_batched(wgt_batch *b, const wgt_batch_item *it, int n, wgt_tensor **logits)
{
    wgt_model *m = b->m;
    const wgt_model_config *c = &m->cfg;
    wgt_context *ctx = m->ctx;
    int64_t R = 0;
    for (int i = 0; i < n; i++) R += it[i].n;
    int32_t *ids = calloc((size_t)R, sizeof *ids), *pos = malloc((size_t)(2 * R) * sizeof *pos);
    int32_t *last = malloc((size_t)n * sizeof *last);
    int *ord = malloc((size_t)n * sizeof *ord), *per_group = calloc((size_t)b->n_groups + 1, sizeof *per_group);
    wgt_tensor **atts = calloc((size_t)n, sizeof *atts);
    tlist s = {0}, layer = {0};
    wgt_status st = WGT_OK;
    wgt_tensor *x = NULL, *h = NULL;
    if (!ids || !pos || !last || !atts || !ord || !per_group) {
        st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
        goto done;
    }
    /* decoding rows first, group by group of their slots' caches */
    int nd = 0, no = 0, slots_attn = b->kall && !b->per_sequence;
    for (int g = 0; g < (slots_attn ? b->n_groups : 0); g++) {
        per_group[g] = 0;
        for (int i = 0; i < n; i++)
            if (it[i].n == 1 && it[i].slot / b->group == g) ord[nd++] = i, per_group[g]++;
    }
    for (int i = 0; i < n; i++)
        if (!(slots_attn && it[i].n == 1)) ord[nd + no++] = i;
    /* pos: the rows' positions, then their slots within their group (models_attention_slots.wgsl's info) */
    for (int oi = 0, r = 0; oi < n; oi++) {
        int i = ord[oi];
        for (int64_t j = 0; j < it[i].n; j++, r++)
            ids[r] = it[i].ids[j], pos[r] = (int32_t)(b->slots[it[i].slot].n_past + j),
            pos[R + r] = b->group ? it[i].slot % b->group : it[i].slot;
        last[i] = r - 1;
    }
    int64_t rshape[1] = {R}, nshape[1] = {n}, ishape[1] = {2 * R};
    wgt_tensor *ids_t, *pos_t, *info_t;
    T(s, ids_t, wgt_tensor_from_host(ctx, WGT_I32, 1, rshape, ids, &ids_t));
    T(s, info_t, wgt_tensor_from_host(ctx, WGT_I32, 1, ishape, pos, &info_t));
    T(s, pos_t, wgt_tensor_narrow(info_t, 0, 0, R, &pos_t));
    DO(mdl_embed(m, ids_t, ids, R, &x));
    if (m->pos_emb) { /* gpt2: each row's own position */
        wgt_tensor *pe, *x2;
        T(s, pe, wgt_embedding(m->pos_emb, pos_t, WGT_F32, &pe));
        DO(wgt_binary(WGT_BINARY_ADD, x, pe, &x2));
        wgt_tensor_free(x);
        x = x2;
    }
    DO(mdl_norm(m, x, m->layers[0].attn_norm, m->layers[0].attn_norm_b, &h));
    for (int64_t li = 0; li < c->n_layers; li++) {
        const wgt_layer_weights *W = &m->layers[li];
        wgt_tensor *qkv = NULL, *q = NULL, *k = NULL, *v = NULL, *att, *o, *x2, *h2, *up, *act, *down, *x3, *hn;
        if (W->wqkv.t)
            T(layer, qkv, mdl_linear(h, &W->wqkv, W->bqkv, &qkv));
        else {
            T(layer, q, mdl_linear(h, &W->wq, W->bq, &q));
            T(layer, k, mdl_linear(h, &W->wk, W->bk, &k));
            T(layer, v, mdl_linear(h, &W->wv, W->bv, &v));
        }
        int na = 0;
        if (nd) DO(attend_slots(b, li, qkv, q, k, v, info_t, R, nd, per_group, &atts[na++]));
        for (int oi = nd, r0 = nd; oi < n; r0 += (int)it[ord[oi]].n, oi++)
            DO(attend(m, li, &b->slots[it[ord[oi]].slot], qkv, q, k, v, pos_t, r0, it[ord[oi]].n, &atts[na++]));
        st = cat_rows(atts, na, &att);
        for (int i = 0; i < na; i++) wgt_tensor_free(atts[i]), atts[i] = NULL;
        if (st || (st = keep(&layer, att))) goto done;
        T(layer, o, mdl_linear(att, &W->wo, W->bo, &o));
        DO(mdl_add_norm(m, x, o, W->ffn_norm, W->ffn_norm_b, &x2, &h2));
        DO(keep(&layer, h2));
        wgt_tensor_free(x);
        x = x2;
        if (c->arch == WGT_ARCH_GPT2) {
            T(layer, up, mdl_linear(h2, &W->w_up, W->b_up, &up));
            T(layer, act, wgt_unary(WGT_UNARY_GELU_TANH, up, &act));
        } else if (W->w_gu.t) {
            wgt_tensor *gu;
            T(layer, gu, mdl_linear(h2, &W->w_gu, NULL, &gu));
            T(layer, act, wgt_swiglu(gu, &act));
        } else {
            wgt_tensor *g, *sg;
            T(layer, g, mdl_linear(h2, &W->w_gate, NULL, &g));
            T(layer, up, mdl_linear(h2, &W->w_up, NULL, &up));
            T(layer, sg, wgt_unary(WGT_UNARY_SILU, g, &sg));
            T(layer, act, wgt_binary(WGT_BINARY_MUL, sg, up, &act));
        }
        T(layer, down, mdl_linear(act, &W->w_down, W->b_down, &down));
        int lastl = li + 1 == c->n_layers;
        const wgt_tensor *nw = lastl ? m->out_norm : m->layers[li + 1].attn_norm;
        const wgt_tensor *nb = lastl ? m->out_norm_b : m->layers[li + 1].attn_norm_b;
        DO(mdl_add_norm(m, x, down, nw, nb, &x3, &hn));
        wgt_tensor_free(x), wgt_tensor_free(h);
        x = x3, h = hn;
        tlist_clear(&layer);
    }
    /* the last layer's add_norm applied the output norm: h holds the normed rows */
    wgt_tensor *xl = h;
    int in_order = R == n;
    for (int i = 0; i < n && in_order; i++) in_order = last[i] == i;
    if (!in_order) { /* each item's last row, in the items' order */
        wgt_tensor *last_t;
        T(s, last_t, wgt_tensor_from_host(ctx, WGT_I32, 1, nshape, last, &last_t));
        T(s, xl, wgt_index_select(h, 0, last_t, &xl));
    }
    DO(mdl_linear(xl, &m->lm_head, NULL, logits));
    for (int i = 0; i < n; i++) { /* the slots now hold these ids */
        bslot *sl = &b->slots[it[i].slot];
        memcpy(sl->ids + sl->n_past, it[i].ids, (size_t)it[i].n * sizeof *ids);
        sl->n_past += it[i].n;
    }
done:
    if (atts)
        for (int i = 0; i < n; i++) wgt_tensor_free(atts[i]);
    tlist_clear(&layer), tlist_clear(&s);
    free(layer.t), free(s.t);
    wgt_tensor_free(x), wgt_tensor_free(h);
    free(ids), free(pos), free(last), free(atts), free(ord), free(per_group);
    return st;
}

/* One token per item that asks for one, from logits [n, vocab]: greedy rows by one argmax over
 * all rows, the others by the device sampler over the slot's ids (repetition penalty; the last
 * it->step of them, the generated ones, for the frequency and presence penalties) as
 * wgt_model_generate draws them; a CPU-reference context draws on the host by the same rules. */
static wgt_status draw(wgt_batch *b, wgt_batch_item *it, int n, const wgt_tensor *logits)
{
    wgt_model *m = b->m;
    int64_t V = m->cfg.vocab;
    wgt_status st = WGT_OK;
    int any_logits = 0, any_draw = 0, any_json = 0;
    for (int i = 0; i < n; i++) {
        any_logits |= it[i].logits != NULL, any_draw |= it[i].sp && !it[i].sp->json;
        any_json |= it[i].sp && it[i].sp->json;
    }
    int host = wgt_gpu_runs_reference(m->ctx);
    if (host || any_logits || any_json) {
        float *all = malloc((size_t)(n * V) * sizeof *all);
        if (!all) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
        if ((st = wgt_tensor_to_host(logits, all, (size_t)(n * V) * sizeof *all))) {
            free(all);
            return st;
        }
        for (int i = 0; i < n; i++)
            if (it[i].logits) memcpy(it[i].logits, all + i * V, (size_t)V * sizeof *all);
        /* every draw on a CPU-reference context; a JSON constraint's draws anywhere */
        for (int i = 0; i < n && !st; i++)
            if (it[i].sp && (host || it[i].sp->json)) {
                bslot *s = &b->slots[it[i].slot];
                st = mdl_sample_host(all + i * V, V, it[i].sp, s->ids, s->n_past, it[i].step, &it[i].token);
            }
        free(all);
        if (st || host) return st;
    }
    if (!any_draw) return WGT_OK;
    wgt_tensor *idx = NULL;
    int32_t *tok = malloc((size_t)n * sizeof *tok);
    if (!tok) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    if ((st = wgt_reduce(WGT_REDUCE_ARGMAX, logits, 1u << 1, 0, 0, &idx))) goto done;
    for (int i = 0; i < n && !st; i++) {
        if (!it[i].sp || it[i].sp->json || mdl_sampling_is_plain_greedy(it[i].sp)) continue;
        bslot *s = &b->slots[it[i].slot];
        wgt_tensor *row = NULL, *rowc = NULL, *hist = NULL, *one = NULL, *dst = NULL;
        int64_t nh = s->n_past;
        if (!(st = wgt_tensor_narrow(logits, 0, i, 1, &row)) && !(st = wgt_tensor_copy(row, &rowc)) &&
            !(st = wgt_tensor_from_host(m->ctx, WGT_I32, 1, &nh, s->ids, &hist)) &&
            !(st = wgt_sample_gpu(rowc, hist, nh, it[i].sp, it[i].step, &one)) &&
            !(st = wgt_tensor_narrow(idx, 0, i, 1, &dst)))
            st = wgt_tensor_assign(dst, one);
        wgt_tensor_free(row), wgt_tensor_free(rowc), wgt_tensor_free(hist), wgt_tensor_free(one), wgt_tensor_free(dst);
    }
    if (!st && !(st = wgt_tensor_to_host(idx, tok, (size_t)n * sizeof *tok)))
        for (int i = 0; i < n; i++)
            if (it[i].sp && !it[i].sp->json) it[i].token = tok[i];
done:
    wgt_tensor_free(idx);
    free(tok);
    return st;
}

wgt_status wgt_batch_step(wgt_batch *b, wgt_batch_item *items, int n_items)
{
    if (!b || !items || n_items < 1 || n_items > b->n_slots)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_batch_step: need 1 to %d items (got %d)", b ? b->n_slots : 0,
                         n_items);
    wgt_model *m = b->m;
    for (int i = 0; i < n_items; i++) {
        const wgt_batch_item *it = &items[i];
        if (it->slot < 0 || it->slot >= b->n_slots || !it->ids || it->n < 1)
            return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_batch_step: item %d: bad slot %d or no ids", i, it->slot);
        for (int j = 0; j < i; j++)
            if (items[j].slot == it->slot)
                return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_batch_step: slot %d appears twice in one step", it->slot);
        if (b->slots[it->slot].n_past + it->n > b->ctx)
            return wgt_error(WGT_ERR_LIMIT, "slot %d is full: %lld tokens in its cache and %lld new, the limit is %lld",
                             it->slot, (long long)b->slots[it->slot].n_past, (long long)it->n, (long long)b->ctx);
        for (int64_t j = 0; j < it->n; j++)
            if (it->ids[j] < 0 || it->ids[j] >= m->cfg.vocab)
                return wgt_error(WGT_ERR_INVALID_ARGUMENT, "token id %d is outside the vocabulary of %lld",
                                 it->ids[j], (long long)m->cfg.vocab);
    }
    wgt_tensor *logits = NULL;
    wgt_status st = WGT_OK;
    if (b->sequential) {
        wgt_tensor **rows = calloc((size_t)n_items, sizeof *rows);
        if (!rows) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
        for (int i = 0; i < n_items && !st; i++) st = forward_one(b, &items[i], &rows[i]);
        if (!st) st = cat_rows(rows, n_items, &logits);
        for (int i = 0; i < n_items; i++) wgt_tensor_free(rows[i]);
        free(rows);
    } else
        st = forward_batched(b, items, n_items, &logits);
    if (!st) st = draw(b, items, n_items, logits);
    wgt_tensor_free(logits);
    return st;
}
