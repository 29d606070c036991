/* Loading a model: the configuration and weights from a Hugging Face directory (config.json +
 * safetensors, sharded or not) or a GGUF file, onto the context's device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "models/model.h"
#include "ops/qlinear_moe.h"
#include "quant/half.h"
#include "tensor/tensor.h"

typedef struct source {
    wgt_safetensors *st;
    wgt_gguf *gguf;
    const char *path;
} source;

static wgt_dtype dtype_of(wgt_ftype t, int *ok)
{
    *ok = 1;
    switch (t) {
    case WGT_FTYPE_F32: return WGT_F32;
    case WGT_FTYPE_F16: return WGT_F16;
    case WGT_FTYPE_BF16: return WGT_BF16;
    default: *ok = 0; return WGT_F32;
    }
}

/* Where a named tensor lies in the source: WGT_NOT_FOUND-free lookup; *found 0 when absent. */
typedef struct tinfo {
    int ndim;
    int64_t shape[8];
    wgt_ftype type;
    const void *data;
    int64_t n;
} tinfo;

static wgt_status find_tensor(const source *src, const char *name, int optional, tinfo *ti, int *found)
{
    *found = 0;
    if (src->st) {
        const wgt_st_tensor *t = wgt_safetensors_find(src->st, name);
        if (t) {
            ti->ndim = (int)t->n_dims;
            for (int d = 0; d < ti->ndim; d++) ti->shape[d] = t->shape[d];
            ti->type = t->type, ti->data = t->data, ti->n = t->n_elements, *found = 1;
        }
    } else {
        const wgt_gguf_tensor *t = wgt_gguf_tensor_find(src->gguf, name);
        if (t) {
            ti->ndim = (int)t->n_dims;
            for (int d = 0; d < ti->ndim; d++) ti->shape[d] = t->ne[ti->ndim - 1 - d]; /* GGML order is reversed */
            ti->type = t->type, ti->data = t->data, ti->n = t->n_elements, *found = 1;
        }
    }
    if (!*found && !optional) return wgt_error(WGT_ERR_NOT_FOUND, "%s: the model has no tensor '%s'", src->path, name);
    return WGT_OK;
}

/* A float tensor on the device from ti: float types as they are; other types that wgt_dequantize
 * reads, expanded to f32 (used for small tensors: norms, biases, positions; and for weights when
 * the caller asked for dequantised weights). */
static wgt_status upload_float(wgt_model *m, const source *src, const char *name, const tinfo *ti, wgt_tensor **out)
{
    int ok;
    wgt_dtype dt = dtype_of(ti->type, &ok);
    wgt_status st;
    if (ok && m->f32_weights && (dt == WGT_F16 || dt == WGT_BF16)) ok = 0; /* expanded below (exact) */
    if (ok) {
        st = wgt_tensor_from_host(m->ctx, dt, ti->ndim, ti->shape, ti->data, out);
    } else if (wgt_ftype_can_dequantize(ti->type)) {
        float *f = malloc((size_t)ti->n * sizeof(float));
        if (!f) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory dequantizing '%s'", name);
        st = wgt_dequantize(ti->type, ti->data, f, ti->n);
        if (!st) st = wgt_tensor_from_host(m->ctx, WGT_F32, ti->ndim, ti->shape, f, out);
        free(f);
    } else
        return wgt_error(WGT_ERR_UNSUPPORTED, "%s: tensor '%s' has type %s, which wgt cannot load yet", src->path, name,
                         wgt_ftype_name(ti->type) ? wgt_ftype_name(ti->type) : "?");
    if (!st) m->weight_bytes += (uint64_t)wgt_tensor_numel(*out) * wgt_dtype_size(wgt_tensor_dtype(*out));
    return st;
}

/* Upload one weight by name as a float tensor; *out stays NULL (and WGT_OK) when optional and absent. */
static wgt_status load_weight(wgt_model *m, const source *src, const char *name, int optional, wgt_tensor **out)
{
    *out = NULL;
    tinfo ti;
    int found;
    wgt_status st = find_tensor(src, name, optional, &ti, &found);
    if (st || !found) return st;
    return upload_float(m, src, name, &ti, out);
}

/* Upload a linear layer's [out, in] weight: quantized blocks stay blocks (read by wgt_qlinear)
 * unless the model was opened with dequantize set; other types as load_weight. */
static wgt_status load_linear(wgt_model *m, const source *src, const char *name, int optional, mdl_weight *out)
{
    out->t = NULL, out->q = WGT_FTYPE_F32;
    tinfo ti;
    int found;
    wgt_status st = find_tensor(src, name, optional, &ti, &found);
    if (st || !found) return st;
    if (wgt_qlinear_gpu_type(ti.type) && !m->dequantize && ti.ndim == 2) {
        st = wgt_qweight_upload(m->ctx, ti.type, ti.shape[0], ti.shape[1], ti.data, &out->t);
        if (st) return wgt_error(st, "%s: tensor '%s': %s", src->path, name, wgt_errmsg());
        out->q = ti.type;
        m->weight_bytes += (uint64_t)wgt_tensor_numel(out->t);
        return WGT_OK;
    }
    return upload_float(m, src, name, &ti, &out->t);
}

/* The token embedding (and the output head when tied): a float table on the device, or a
 * quantized one kept as blocks (on the host for the row lookups; on the device for a tied head). */
static wgt_status load_embedding(wgt_model *m, const source *src, const char *name)
{
    tinfo ti;
    int found;
    wgt_status st = find_tensor(src, name, 0, &ti, &found);
    if (st) return st;
    if (ti.ndim != 2 || ti.shape[0] != m->cfg.vocab || ti.shape[1] != m->cfg.dim)
        return wgt_error(WGT_ERR_FORMAT, "%s: tensor '%s' has the wrong shape for the configuration (want [%lld, %lld])",
                         src->path, name, (long long)m->cfg.vocab, (long long)m->cfg.dim);
    int ok;
    dtype_of(ti.type, &ok);
    if (ok || m->dequantize || !wgt_ftype_can_dequantize(ti.type)) return upload_float(m, src, name, &ti, &m->tok_emb);
    uint64_t bytes;
    if ((st = wgt_ftype_bytes(ti.type, ti.n, &bytes))) return st;
    m->tok_emb_blocks = malloc(bytes);
    if (!m->tok_emb_blocks) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory for '%s'", name);
    memcpy(m->tok_emb_blocks, ti.data, bytes);
    m->tok_emb_q = ti.type;
    m->tok_emb_row_bytes = bytes / (uint64_t)ti.shape[0];
    if (!m->lm_head.t) { /* tied */
        if (wgt_qlinear_gpu_type(ti.type)) {
            if ((st = wgt_qweight_upload(m->ctx, ti.type, ti.shape[0], ti.shape[1], ti.data, &m->lm_head.t)))
                return st;
            m->lm_head.q = ti.type;
            m->weight_bytes += bytes;
        } else
            return upload_float(m, src, name, &ti, &m->lm_head.t);
    }
    return WGT_OK;
}

static wgt_status expect_shape(const source *src, const char *name, const wgt_tensor *t, int ndim, int64_t d0, int64_t d1)
{
    if (!t) return WGT_OK;
    int ok = wgt_tensor_ndim(t) == ndim && wgt_tensor_dim(t, 0) == d0 && (ndim < 2 || wgt_tensor_dim(t, 1) == d1);
    if (!ok)
        return wgt_error(WGT_ERR_FORMAT, "%s: tensor '%s' has the wrong shape for the configuration (want [%lld%s%lld])",
                         src->path, name, (long long)d0, ndim > 1 ? ", " : "", ndim > 1 ? (long long)d1 : 0LL);
    return WGT_OK;
}

/* ---- mixtures of experts -------------------------------------------------------------------- */

/* n expert matrices (parts, each [rows, cols] of one type, in the source's memory) as one weight:
 * stacked along the rows (side 0: [n rows, cols]) or side by side (side 1: [rows, n cols], row r
 * the parts' rows r in order). Quantized blocks stay blocks (a part's row is whole blocks), as
 * load_linear keeps them. */
static wgt_status upload_experts(wgt_model *m, const source *src, const char *name, const tinfo *parts, int64_t n,
                                 int side, mdl_weight *out)
{
    out->t = NULL, out->q = WGT_FTYPE_F32;
    wgt_ftype type = parts[0].type;
    int64_t rows = parts[0].shape[0], cols = parts[0].shape[1];
    for (int64_t i = 0; i < n; i++)
        if (parts[i].ndim != 2 || parts[i].type != type || parts[i].shape[0] != rows || parts[i].shape[1] != cols)
            return wgt_error(WGT_ERR_FORMAT, "%s: the experts' tensors '%s' differ in type or shape, or are not "
                             "matrices", src->path, name);
    uint64_t rb;
    wgt_status st = wgt_ftype_bytes(type, cols, &rb);
    if (st) return wgt_error(st, "%s: '%s': %s", src->path, name, wgt_errmsg());
    uint8_t *buf = malloc((size_t)(n * rows) * rb);
    if (!buf) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory for the experts' '%s'", name);
    for (int64_t i = 0; i < n; i++)
        for (int64_t r = 0; r < rows; r++)
            memcpy(buf + (side ? r * n + i : i * rows + r) * rb, (const uint8_t *)parts[i].data + r * rb, rb);
    tinfo ti = {2, {side ? rows : n * rows, side ? n * cols : cols}, type, buf, n * rows * cols};
    if (wgt_qlinear_gpu_type(type) && !m->dequantize) {
        st = wgt_qweight_upload(m->ctx, type, ti.shape[0], ti.shape[1], buf, &out->t);
        if (st) st = wgt_error(st, "%s: experts' '%s': %s", src->path, name, wgt_errmsg());
        else out->q = type, m->weight_bytes += (uint64_t)wgt_tensor_numel(out->t);
    } else
        st = upload_float(m, src, name, &ti, &out->t);
    free(buf);
    return st;
}

/* Layer i's experts (router, stacked gate/up, side-by-side down) and qwen2_moe's shared expert.
 * Hugging Face: one tensor per expert (mixtral: block_sparse_moe.experts.E.w1 gate, w3 up, w2
 * down; qwen: mlp.experts.E.{gate,up,down}_proj). GGUF: llama.cpp's ffn_{gate,up,down}_exps
 * [E, F, dim] / [E, dim, F], ffn_gate_inp the router, ffn_{gate,up,down}_shexp and
 * ffn_gate_inp_shexp the shared expert. */
static wgt_status load_experts(wgt_model *m, const source *src, int64_t li)
{
    const wgt_model_config *c = &m->cfg;
    wgt_layer_weights *L = &m->layers[li];
    const int64_t E = c->n_experts, F = c->expert_ffn, D = c->dim;
    int mixtral = c->arch == WGT_ARCH_LLAMA, found;
    char name[320];
    wgt_status st = WGT_OK;
    tinfo *parts = calloc((size_t)(2 * E), sizeof *parts);
    if (!parts) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    if (src->st) {
        snprintf(name, sizeof name, mixtral ? "model.layers.%lld.block_sparse_moe.gate.weight" : "model.layers.%lld.mlp.gate.weight",
                 (long long)li);
        if ((st = load_linear(m, src, name, 0, &L->router))) goto done;
        static const char *const mx[3] = {"w1", "w3", "w2"}, *const qw[3] = {"gate_proj", "up_proj", "down_proj"};
        for (int k = 0; k < 3 && !st; k++) { /* gate and up into parts[0 .. 2E), then down into parts[0 .. E) */
            for (int64_t e = 0; e < E && !st; e++) {
                if (mixtral)
                    snprintf(name, sizeof name, "model.layers.%lld.block_sparse_moe.experts.%lld.%s.weight", (long long)li,
                             (long long)e, mx[k]);
                else
                    snprintf(name, sizeof name, "model.layers.%lld.mlp.experts.%lld.%s.weight", (long long)li,
                             (long long)e, qw[k]);
                st = find_tensor(src, name, 0, &parts[(k == 1 ? E : 0) + e], &found);
                if (!st && !(parts[(k == 1 ? E : 0) + e].shape[0] == (k == 2 ? D : F) &&
                             parts[(k == 1 ? E : 0) + e].shape[1] == (k == 2 ? F : D)))
                    st = wgt_error(WGT_ERR_FORMAT, "%s: tensor '%s' has the wrong shape for the configuration (want "
                                   "[%lld, %lld])", src->path, name, (long long)(k == 2 ? D : F), (long long)(k == 2 ? F : D));
            }
            if (!st && k == 1) st = upload_experts(m, src, name, parts, 2 * E, 0, &L->exp_gu);
            if (!st && k == 2) st = upload_experts(m, src, name, parts, E, 1, &L->exp_down);
        }
        if (st || !c->shared_expert) goto done;
        const char *sh[3] = {"gate_proj", "up_proj", "down_proj"};
        mdl_weight *dst[3] = {&L->w_gate, &L->w_up, &L->w_down};
        for (int k = 0; k < 3 && !st; k++) {
            snprintf(name, sizeof name, "model.layers.%lld.mlp.shared_expert.%s.weight", (long long)li, sh[k]);
            st = load_linear(m, src, name, 0, dst[k]);
        }
        snprintf(name, sizeof name, "model.layers.%lld.mlp.shared_expert_gate.weight", (long long)li);
        if (!st) st = load_linear(m, src, name, 0, &L->sh_gate);
        goto done;
    }
    /* GGUF: one 3-D tensor per kind, split into its experts' matrices */
    snprintf(name, sizeof name, "blk.%lld.ffn_gate_inp.weight", (long long)li);
    if ((st = load_linear(m, src, name, 0, &L->router))) goto done;
    static const char *const kinds[3] = {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"};
    for (int k = 0; k < 3 && !st; k++) {
        tinfo t;
        snprintf(name, sizeof name, "blk.%lld.%s.weight", (long long)li, kinds[k]);
        if ((st = find_tensor(src, name, 0, &t, &found))) break;
        int64_t rows = k == 2 ? D : F, cols = k == 2 ? F : D;
        if (t.ndim != 3 || t.shape[0] != E || t.shape[1] != rows || t.shape[2] != cols) {
            st = wgt_error(WGT_ERR_FORMAT, "%s: tensor '%s' has the wrong shape for the configuration (want [%lld, "
                           "%lld, %lld])", src->path, name, (long long)E, (long long)rows, (long long)cols);
            break;
        }
        uint64_t rb;
        if ((st = wgt_ftype_bytes(t.type, cols, &rb))) break;
        for (int64_t e = 0; e < E; e++)
            parts[(k == 1 ? E : 0) + e] = (tinfo){2, {rows, cols}, t.type, (const uint8_t *)t.data + (uint64_t)(e * rows) * rb,
                                                  rows * cols};
        if (k == 1) st = upload_experts(m, src, name, parts, 2 * E, 0, &L->exp_gu);
        if (k == 2) st = upload_experts(m, src, name, parts, E, 1, &L->exp_down);
    }
    if (st || !c->shared_expert) goto done;
    static const char *const sh[3] = {"ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp"};
    mdl_weight *dst[3] = {&L->w_gate, &L->w_up, &L->w_down};
    for (int k = 0; k < 3 && !st; k++) {
        snprintf(name, sizeof name, "blk.%lld.%s.weight", (long long)li, sh[k]);
        st = load_linear(m, src, name, 0, dst[k]);
    }
    snprintf(name, sizeof name, "blk.%lld.ffn_gate_inp_shexp.weight", (long long)li);
    if (!st) st = load_linear(m, src, name, 0, &L->sh_gate);
    if (!st && L->sh_gate.t && wgt_tensor_ndim(L->sh_gate.t) == 1 && L->sh_gate.q == WGT_FTYPE_F32) { /* [dim] */
        wgt_tensor *r;
        int64_t shape[2] = {1, D};
        if (!(st = wgt_tensor_reshape(L->sh_gate.t, 2, shape, &r))) wgt_tensor_free(L->sh_gate.t), L->sh_gate.t = r;
    }
done:
    free(parts);
    if (!st && (!L->router.t || wgt_tensor_ndim(L->router.t) != 2 || wgt_tensor_dim(L->router.t, 0) != E))
        st = wgt_error(WGT_ERR_FORMAT, "%s: layer %lld's router is not [%lld, %lld]", src->path, (long long)li,
                       (long long)E, (long long)D);
    if (!st && c->shared_expert && (!L->sh_gate.t || wgt_tensor_dim(L->sh_gate.t, 0) != 1))
        st = wgt_error(WGT_ERR_FORMAT, "%s: layer %lld's shared_expert_gate is not [1, %lld]", src->path, (long long)li,
                       (long long)D);
    return st;
}

/* ---- Hugging Face --------------------------------------------------------------------------- */

wgt_status mdl_config_from_hf(const wgt_hf_config *h, const char *dir, wgt_model_config *c)
{
    memset(c, 0, sizeof *c);
    c->dim = h->hidden_size;
    c->n_layers = h->n_layers;
    c->n_heads = h->n_heads;
    c->n_kv_heads = h->n_kv_heads ? h->n_kv_heads : h->n_heads;
    c->head_dim = h->head_dim;
    if (!c->head_dim && h->n_heads > 0) { /* implied: the hidden size split evenly over the heads */
        if (h->hidden_size % h->n_heads)
            return wgt_error(WGT_ERR_FORMAT,
                             "%s: hidden_size %lld is not a multiple of num_attention_heads %lld, and no head_dim "
                             "is given", dir, (long long)h->hidden_size, (long long)h->n_heads);
        c->head_dim = h->hidden_size / h->n_heads;
    }
    c->ffn = h->intermediate_size;
    c->vocab = h->vocab_size;
    c->max_pos = h->max_positions;
    c->norm_eps = h->norm_eps;
    c->rms = 1;
    c->tied = h->tie_word_embeddings;
    c->qkv_bias = h->qkv_bias || h->attention_bias;
    c->o_bias = h->attention_bias;
    c->mlp_bias = h->mlp_bias;
    c->rope.theta = h->rope_theta; /* 10000 when absent (wgt_hf_config_parse); 0 or less is refused */
    if (!strcmp(h->rope_scaling_type, "llama3")) c->rope.scaling = WGT_ROPE_LLAMA3;
    else if (!strcmp(h->rope_scaling_type, "linear")) c->rope.scaling = WGT_ROPE_LINEAR;
    else if (!strcmp(h->rope_scaling_type, "yarn")) c->rope.scaling = WGT_ROPE_YARN;
    else if (h->rope_scaling_type[0] && strcmp(h->rope_scaling_type, "default"))
        return wgt_error(WGT_ERR_UNSUPPORTED, "%s: rope scaling '%s' is not supported (linear, llama3, yarn are)", dir,
                         h->rope_scaling_type);
    c->rope.factor = h->rope_factor;
    c->rope.low_freq_factor = h->rope_low_freq_factor;
    c->rope.high_freq_factor = h->rope_high_freq_factor;
    c->rope.original_max_position = (double)h->rope_original_max_positions;
    c->rope.truncate = 1;
    /* ids past int32 become -2 / -1 (not wrapped), which mdl_validate_config reports */
    c->bos = h->n_bos ? (h->bos_ids[0] > INT32_MAX ? -2 : (int32_t)h->bos_ids[0]) : -1;
    c->n_eos = h->n_eos < 8 ? h->n_eos : 8;
    for (int i = 0; i < c->n_eos; i++) c->eos[i] = h->eos_ids[i] > INT32_MAX ? -1 : (int32_t)h->eos_ids[i];
    return mdl_family_from_hf(h->model_type, h, dir, c); /* the family's own features last */
}

#define TRY(x)                                                                                     \
    do {                                                                                           \
        if ((st = (x))) return st;                                                                 \
    } while (0)

/* Layer i's tensor "<pre><i>.<suffix>" ("model.layers.3.self_attn.q_proj.weight", "blk.3.attn_q.weight"). */
static const char *layer_name(char *buf, size_t cap, const char *pre, int64_t i, const char *suffix)
{
    snprintf(buf, cap, "%s%lld.%s", pre, (long long)i, suffix);
    return buf;
}

/* The per-layer loops of the loaders below: LAYER names layer i's tensor; W loads it as stored, N
 * as a norm (load_norm), LW as a linear weight; opt: it may be absent. They read the loop's m, src,
 * st, name (the buffer), pre (the layer prefix), i and L (the layer's weights). */
#define LAYER(suffix) layer_name(name, sizeof name, pre, i, suffix)
#define W(field, suffix, opt) TRY(load_weight(m, src, LAYER(suffix), opt, &L->field))
#define N(field, suffix, opt) TRY(load_norm(m, src, LAYER(suffix), opt, &L->field))
#define LW(field, suffix, opt) TRY(load_linear(m, src, LAYER(suffix), opt, &L->field))

/* An RMSNorm weight: as stored, or 1 + w for the families whose norms scale by (1 + w)
 * (norm_offset): Hugging Face stores w, llama.cpp's converter 1 + w, and wgt runs the latter.
 * The 1 is added on the host, in f32, before the upload. */
static wgt_status load_norm(wgt_model *m, const source *src, const char *name, int optional, wgt_tensor **out)
{
    if (!m->cfg.norm_offset || !src->st) return load_weight(m, src, name, optional, out);
    *out = NULL;
    tinfo ti;
    int found;
    wgt_status st = find_tensor(src, name, optional, &ti, &found);
    if (st || !found) return st;
    if (!wgt_ftype_can_dequantize(ti.type))
        return wgt_error(WGT_ERR_UNSUPPORTED, "%s: tensor '%s' has type %s, which wgt cannot load yet", src->path, name,
                         wgt_ftype_name(ti.type) ? wgt_ftype_name(ti.type) : "?");
    float *f = malloc((size_t)ti.n * sizeof *f);
    if (!f) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory for '%s'", name);
    st = wgt_dequantize(ti.type, ti.data, f, ti.n);
    for (int64_t i = 0; !st && i < ti.n; i++) f[i] += 1.0f;
    if (!st) st = wgt_tensor_from_host(m->ctx, WGT_F32, ti.ndim, ti.shape, f, out);
    free(f);
    if (!st) m->weight_bytes += (uint64_t)ti.n * sizeof(float);
    return st;
}

/* StableLM's per-head q/k LayerNorm weights, one tensor a head (prefix.0.weight, prefix.1.weight,
 * ...), stacked into one f32 [heads, hd] on the device (llama.cpp's attn_q_norm / attn_k_norm). */
static wgt_status load_head_norms(wgt_model *m, const source *src, const char *prefix, int64_t heads, int64_t hd,
                                  wgt_tensor **out)
{
    float *f = malloc((size_t)(heads * hd) * sizeof *f);
    if (!f) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory for '%s'", prefix);
    wgt_status st = WGT_OK;
    for (int64_t h = 0; h < heads && !st; h++) {
        char name[320];
        snprintf(name, sizeof name, "%s.%lld.weight", prefix, (long long)h);
        tinfo ti = {0};
        int found;
        if ((st = find_tensor(src, name, 0, &ti, &found))) break;
        if (ti.ndim != 1 || ti.n != hd || !wgt_ftype_can_dequantize(ti.type))
            st = wgt_error(WGT_ERR_FORMAT, "%s: tensor '%s' is not a float [%lld] norm weight", src->path, name,
                           (long long)hd);
        else
            st = wgt_dequantize(ti.type, ti.data, f + h * hd, hd);
    }
    int64_t shape[2] = {heads, hd};
    if (!st) st = wgt_tensor_from_host(m->ctx, WGT_F32, 2, shape, f, out);
    if (!st) m->weight_bytes += (uint64_t)(heads * hd) * sizeof *f;
    free(f);
    return st;
}

/* The llama layout (llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3, stablelm, starcoder2,
 * granite, smollm3): model.layers.N.self_attn and .mlp. Families with post-norms (gemma2/3) name
 * their four norms differently: there post_attention_layernorm follows attention, and
 * pre_feedforward_layernorm precedes the MLP. LayerNorm families (stablelm, starcoder2) add
 * biases to their norms; starcoder2's plain MLP is mlp.c_fc / mlp.c_proj. */
static wgt_status load_hf_llama(wgt_model *m, const source *src)
{
    const wgt_model_config *c = &m->cfg;
    wgt_status st;
    char name[256];
    const char *pre = "model.layers.";
    /* the head first: a tied quantized embedding sets it */
    TRY(load_linear(m, src, "lm_head.weight", c->tied, &m->lm_head));
    TRY(load_embedding(m, src, "model.embed_tokens.weight"));
    TRY(load_norm(m, src, "model.norm.weight", 0, &m->out_norm));
    if (!c->rms) TRY(load_weight(m, src, "model.norm.bias", 0, &m->out_norm_b));
    for (int64_t i = 0; i < c->n_layers; i++) {
        wgt_layer_weights *L = &m->layers[i];
        N(attn_norm, "input_layernorm.weight", c->no_pre_norm);
        if (!c->rms) {
            W(attn_norm_b, "input_layernorm.bias", 0);
        }
        if (c->fused_proj) {
            LW(wqkv, "self_attn.qkv_proj.weight", 0);
        } else {
            LW(wq, "self_attn.q_proj.weight", 0);
            LW(wk, "self_attn.k_proj.weight", 0);
            LW(wv, "self_attn.v_proj.weight", 0);
        }
        LW(wo, "self_attn.o_proj.weight", 0);
        W(bq, "self_attn.q_proj.bias", !c->qkv_bias);
        W(bk, "self_attn.k_proj.bias", !c->qkv_bias);
        W(bv, "self_attn.v_proj.bias", !c->qkv_bias);
        W(bo, "self_attn.o_proj.bias", 1);
        if (c->qk_norm_ln) {
            snprintf(name, sizeof name, "model.layers.%lld.self_attn.q_layernorm.norms", (long long)i);
            TRY(load_head_norms(m, src, name, c->n_heads, c->head_dim, &L->q_norm));
            snprintf(name, sizeof name, "model.layers.%lld.self_attn.k_layernorm.norms", (long long)i);
            TRY(load_head_norms(m, src, name, c->n_kv_heads, c->head_dim, &L->k_norm));
        } else {
            N(q_norm, "self_attn.q_norm.weight", !c->qk_norm);
            N(k_norm, "self_attn.k_norm.weight", !c->qk_norm);
        }
        if (c->post_norms) {
            N(post_attn_norm, "post_attention_layernorm.weight", 0);
            N(ffn_norm, "pre_feedforward_layernorm.weight", c->no_pre_norm);
            N(post_ffn_norm, "post_feedforward_layernorm.weight", 0);
        } else {
            N(ffn_norm, "post_attention_layernorm.weight", c->parallel); /* stablelm's parallel form has none */
            if (!c->rms) {
                W(ffn_norm_b, "post_attention_layernorm.bias", c->parallel);
            }
        }
        if (c->n_experts) {
            TRY(load_experts(m, src, i));
        } else if (c->plain_mlp) { /* starcoder2 */
            LW(w_up, "mlp.c_fc.weight", 0);
            W(b_up, "mlp.c_fc.bias", !c->mlp_bias);
            LW(w_down, "mlp.c_proj.weight", 0);
            W(b_down, "mlp.c_proj.bias", !c->mlp_bias);
        } else if (c->fused_proj) {
            LW(w_gu, "mlp.gate_up_proj.weight", 0);
            LW(w_down, "mlp.down_proj.weight", 0);
        } else {
            LW(w_gate, "mlp.gate_proj.weight", 0);
            LW(w_up, "mlp.up_proj.weight", 0);
            LW(w_down, "mlp.down_proj.weight", 0);
        }
        TRY(expect_shape(src, "q_proj", L->wq.t, 2, c->n_heads * c->head_dim, c->dim));
        TRY(expect_shape(src, "k_proj", L->wk.t, 2, c->n_kv_heads * c->head_dim, c->dim));
        TRY(expect_shape(src, "gate_proj", L->w_gate.t, 2, c->ffn, c->dim));
        if (!c->qk_norm_ln) {
            TRY(expect_shape(src, "q_norm", L->q_norm, 1, c->qk_norm_full ? c->n_heads * c->head_dim : c->head_dim, 0));
            TRY(expect_shape(src, "k_norm", L->k_norm, 1, c->qk_norm_full ? c->n_kv_heads * c->head_dim : c->head_dim, 0));
        }
        TRY(expect_shape(src, "c_fc", c->plain_mlp ? L->w_up.t : NULL, 2, c->ffn, c->dim));
        TRY(expect_shape(src, "qkv_proj", L->wqkv.t, 2, (c->n_heads + 2 * c->n_kv_heads) * c->head_dim, c->dim));
        TRY(expect_shape(src, "gate_up_proj", L->w_gu.t, 2, 2 * c->ffn, c->dim));
    }
    return WGT_OK;
}

/* GPT-2's Conv1D stores weights [in, out]: linear wants [out, in], so each is transposed once on
 * the device at load (row-major weights are what the GEMV kernels read fastest); c_attn's q, k
 * and v are column slices of one [dim, 3 dim] matrix. */
static wgt_status transposed(const wgt_tensor *w, mdl_weight *out)
{
    wgt_tensor *t;
    wgt_status st = wgt_tensor_transpose(w, 0, 1, &t);
    if (!st) st = wgt_tensor_copy(t, &out->t);
    if (!st) out->q = WGT_FTYPE_F32;
    wgt_tensor_free(t);
    return st;
}

static wgt_status load_hf_gpt2(wgt_model *m, const source *src)
{
    const wgt_model_config *c = &m->cfg;
    wgt_status st;
    char name[256];
    const char *top = wgt_safetensors_find(src->st, "transformer.wte.weight") ? "transformer." : "";
    char pre[32];
    snprintf(pre, sizeof pre, "%sh.", top);
    snprintf(name, sizeof name, "%swte.weight", top);
    TRY(load_embedding(m, src, name));
    const struct { const char *suffix; wgt_tensor **out; } top_w[] = {
        {"wpe.weight", &m->pos_emb}, {"ln_f.weight", &m->out_norm}, {"ln_f.bias", &m->out_norm_b}};
    for (size_t k = 0; k < sizeof top_w / sizeof top_w[0]; k++) {
        snprintf(name, sizeof name, "%s%s", top, top_w[k].suffix);
        TRY(load_weight(m, src, name, 0, top_w[k].out));
    }
    for (int64_t i = 0; i < c->n_layers; i++) {
        wgt_layer_weights *L = &m->layers[i];
        wgt_tensor *attn_w, *attn_b, *proj_w, *fc_w, *mproj_w;
        W(attn_norm, "ln_1.weight", 0);
        W(attn_norm_b, "ln_1.bias", 0);
        TRY(load_weight(m, src, LAYER("attn.c_attn.weight"), 0, &attn_w));
        TRY(load_weight(m, src, LAYER("attn.c_attn.bias"), 0, &attn_b));
        TRY(load_weight(m, src, LAYER("attn.c_proj.weight"), 0, &proj_w));
        W(bo, "attn.c_proj.bias", 0);
        W(ffn_norm, "ln_2.weight", 0);
        W(ffn_norm_b, "ln_2.bias", 0);
        TRY(load_weight(m, src, LAYER("mlp.c_fc.weight"), 0, &fc_w));
        W(b_up, "mlp.c_fc.bias", 0);
        TRY(load_weight(m, src, LAYER("mlp.c_proj.weight"), 0, &mproj_w));
        W(b_down, "mlp.c_proj.bias", 0);
        TRY(expect_shape(src, "attn.c_attn.weight", attn_w, 2, c->dim, 3 * c->dim));
        wgt_tensor *part;
        mdl_weight *ws[3] = {&L->wq, &L->wk, &L->wv};
        wgt_tensor **bs[3] = {&L->bq, &L->bk, &L->bv};
        for (int j = 0; j < 3; j++) {
            TRY(wgt_tensor_narrow(attn_w, 1, j * c->dim, c->dim, &part));
            st = transposed(part, ws[j]);
            wgt_tensor_free(part);
            if (st) return st;
            TRY(wgt_tensor_narrow(attn_b, 0, j * c->dim, c->dim, bs[j]));
        }
        TRY(transposed(proj_w, &L->wo));
        TRY(transposed(fc_w, &L->w_up));
        TRY(transposed(mproj_w, &L->w_down));
        wgt_tensor_free(attn_w);
        wgt_tensor_free(attn_b);
        wgt_tensor_free(proj_w);
        wgt_tensor_free(fc_w);
        wgt_tensor_free(mproj_w);
    }
    return WGT_OK;
}

/* Phi-2: model.layers.N.self_attn.{q,k,v}_proj and .dense, mlp.fc1 / fc2, one input_layernorm a
 * layer (attention and MLP run in parallel from it), final_layernorm, an lm_head with a bias. */
static wgt_status load_hf_phi(wgt_model *m, const source *src)
{
    const wgt_model_config *c = &m->cfg;
    wgt_status st;
    char name[256];
    const char *pre = "model.layers.";
    TRY(load_linear(m, src, "lm_head.weight", c->tied, &m->lm_head));
    TRY(load_weight(m, src, "lm_head.bias", 1, &m->lm_head_b));
    TRY(load_embedding(m, src, "model.embed_tokens.weight"));
    TRY(load_weight(m, src, "model.final_layernorm.weight", 0, &m->out_norm));
    TRY(load_weight(m, src, "model.final_layernorm.bias", 0, &m->out_norm_b));
    for (int64_t i = 0; i < c->n_layers; i++) {
        wgt_layer_weights *L = &m->layers[i];
        W(attn_norm, "input_layernorm.weight", 0);
        W(attn_norm_b, "input_layernorm.bias", 0);
        LW(wq, "self_attn.q_proj.weight", 0);
        LW(wk, "self_attn.k_proj.weight", 0);
        LW(wv, "self_attn.v_proj.weight", 0);
        W(bq, "self_attn.q_proj.bias", 0);
        W(bk, "self_attn.k_proj.bias", 0);
        W(bv, "self_attn.v_proj.bias", 0);
        LW(wo, "self_attn.dense.weight", 0);
        W(bo, "self_attn.dense.bias", 0);
        LW(w_up, "mlp.fc1.weight", 0);
        W(b_up, "mlp.fc1.bias", 0);
        LW(w_down, "mlp.fc2.weight", 0);
        W(b_down, "mlp.fc2.bias", 0);
        TRY(expect_shape(src, "q_proj", L->wq.t, 2, c->n_heads * c->head_dim, c->dim));
        TRY(expect_shape(src, "k_proj", L->wk.t, 2, c->n_kv_heads * c->head_dim, c->dim));
        TRY(expect_shape(src, "fc1", L->w_up.t, 2, c->ffn, c->dim));
    }
    return WGT_OK;
}

/* GPT-NeoX's query_key_value holds, for each head, its q, k and v rows together; wgt (and
 * llama.cpp's GGUF) keep all q rows, then k, then v. rows [3 * heads * hd, in] (or a bias, in 1)
 * are reordered on the host, whatever their float type, and uploaded. */
static wgt_status neox_qkv(wgt_model *m, const source *src, const char *name, int64_t heads, int64_t hd, wgt_tensor **out)
{
    tinfo ti;
    int found, ok;
    wgt_status st = find_tensor(src, name, 0, &ti, &found);
    if (st) return st;
    wgt_dtype dt = dtype_of(ti.type, &ok);
    int64_t rows = ti.shape[0], in = ti.ndim == 2 ? ti.shape[1] : 1;
    if (!ok || ti.ndim > 2 || rows != 3 * heads * hd)
        return wgt_error(WGT_ERR_FORMAT, "%s: tensor '%s' is not a float [3 x %lld heads x %lld, ...] projection", src->path,
                         name, (long long)heads, (long long)hd);
    size_t row = (size_t)in * wgt_dtype_size(dt);
    uint8_t *buf = malloc((size_t)rows * row);
    if (!buf) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory for '%s'", name);
    for (int64_t part = 0; part < 3; part++) /* q, k, v */
        for (int64_t h = 0; h < heads; h++)
            memcpy(buf + (size_t)((part * heads + h) * hd) * row, (const uint8_t *)ti.data + (size_t)((h * 3 + part) * hd) * row,
                   (size_t)hd * row);
    st = wgt_tensor_from_host(m->ctx, dt, ti.ndim, ti.shape, buf, out);
    free(buf);
    if (!st) m->weight_bytes += (uint64_t)rows * row;
    return st;
}

/* GPT-NeoX: gpt_neox.embed_in, .layers.N.{input_layernorm, post_attention_layernorm,
 * attention.query_key_value, attention.dense, mlp.dense_h_to_4h, mlp.dense_4h_to_h},
 * final_layer_norm, embed_out; LayerNorms and linear layers with biases. */
static wgt_status load_hf_neox(wgt_model *m, const source *src)
{
    const wgt_model_config *c = &m->cfg;
    wgt_status st;
    char name[256];
    const char *pre = "gpt_neox.layers.";
    TRY(load_linear(m, src, "embed_out.weight", c->tied, &m->lm_head));
    TRY(load_embedding(m, src, "gpt_neox.embed_in.weight"));
    TRY(load_weight(m, src, "gpt_neox.final_layer_norm.weight", 0, &m->out_norm));
    TRY(load_weight(m, src, "gpt_neox.final_layer_norm.bias", 0, &m->out_norm_b));
    for (int64_t i = 0; i < c->n_layers; i++) {
        wgt_layer_weights *L = &m->layers[i];
        W(attn_norm, "input_layernorm.weight", 0);
        W(attn_norm_b, "input_layernorm.bias", 0);
        W(ffn_norm, "post_attention_layernorm.weight", 0);
        W(ffn_norm_b, "post_attention_layernorm.bias", 0);
        TRY(neox_qkv(m, src, LAYER("attention.query_key_value.weight"), c->n_heads, c->head_dim, &L->wqkv.t));
        L->wqkv.q = WGT_FTYPE_F32;
        TRY(neox_qkv(m, src, LAYER("attention.query_key_value.bias"), c->n_heads, c->head_dim, &L->bqkv));
        LW(wo, "attention.dense.weight", 0);
        W(bo, "attention.dense.bias", 0);
        LW(w_up, "mlp.dense_h_to_4h.weight", 0);
        W(b_up, "mlp.dense_h_to_4h.bias", 0);
        LW(w_down, "mlp.dense_4h_to_h.weight", 0);
        W(b_down, "mlp.dense_4h_to_h.bias", 0);
        TRY(expect_shape(src, "query_key_value", L->wqkv.t, 2, 3 * c->n_heads * c->head_dim, c->dim));
        TRY(expect_shape(src, "dense_h_to_4h", L->w_up.t, 2, c->ffn, c->dim));
    }
    return WGT_OK;
}

/* ---- GGUF ----------------------------------------------------------------------------------- */

static wgt_status gguf_int(const wgt_gguf *g, const char *arch, const char *key, int64_t def, int64_t *out)
{
    char k[160];
    snprintf(k, sizeof k, "%s.%s", arch, key);
    if (!wgt_gguf_find(g, k)) {
        if (def < 0) return wgt_error(WGT_ERR_NOT_FOUND, "GGUF metadata '%s' is missing", k);
        *out = def;
        return WGT_OK;
    }
    return wgt_gguf_get_int(g, k, out);
}

static wgt_status gguf_float(const wgt_gguf *g, const char *arch, const char *key, double def, double *out)
{
    char k[160];
    snprintf(k, sizeof k, "%s.%s", arch, key);
    if (!wgt_gguf_find(g, k)) {
        *out = def;
        return WGT_OK;
    }
    return wgt_gguf_get_float(g, k, out);
}

/* llama.cpp stores Llama 3 rope scaling as per-frequency factors (rope_freqs.weight): inverse
 * frequency j divided by factor j. Applied as stored (c->rope.freq_factors): no set of Llama 3
 * parameters needs to be guessed from them. */
static wgt_status rope_factors_from_gguf(const wgt_gguf_tensor *rf, const char *path, wgt_model_config *c)
{
    int64_t rot = c->rope_dims > 0 ? c->rope_dims : c->head_dim;
    if (rf->type != WGT_FTYPE_F32 || rf->n_elements != rot / 2 || rot / 2 > 256)
        return wgt_error(WGT_ERR_FORMAT, "%s: rope_freqs.weight should be %lld f32 factors (half the rotary dim %lld), "
                         "it is %lld of %s", path, (long long)(rot / 2), (long long)rot, (long long)rf->n_elements,
                         wgt_ftype_name(rf->type) ? wgt_ftype_name(rf->type) : "an unknown type");
    const float *f = rf->data;
    for (int64_t j = 0; j < rot / 2; j++) {
        if (!(f[j] > 0) || !isfinite(f[j]))
            return wgt_error(WGT_ERR_FORMAT, "%s: rope_freqs.weight[%lld] is %g (factors must be positive)", path,
                             (long long)j, (double)f[j]);
        c->rope_factors[j] = f[j];
    }
    c->rope.freq_factors = c->rope_factors;
    return WGT_OK;
}

/* llama.cpp's attention.sliding_window_pattern: a period P (layer i slides unless i % P == P - 1;
 * 0: every layer, 1: none), or one bool a layer (1: the layer slides). Absent: the family's. */
static wgt_status gguf_window_pattern(const wgt_gguf *g, const char *arch, const char *path, wgt_model_config *c)
{
    char k[160];
    snprintf(k, sizeof k, "%s.attention.sliding_window_pattern", arch);
    const wgt_gguf_value *v = wgt_gguf_find(g, k);
    if (!v) return WGT_OK;
    if (wgt_gguf_value_type(v) != WGT_GGUF_ARRAY) {
        int64_t p;
        wgt_status st = wgt_gguf_value_int(v, &p);
        if (st) return wgt_error(st, "%s: %s: %s", path, k, wgt_errmsg());
        if (p < 0 || p > INT32_MAX) return wgt_error(WGT_ERR_FORMAT, "%s: %s is %lld", path, k, (long long)p);
        if (p == 1) c->window = 0;
        else c->window_every = (int)p, c->window_from = 0;
        return WGT_OK;
    }
    uint64_t n = wgt_gguf_array_len(v);
    if (n != (uint64_t)c->n_layers || n > 4096)
        return wgt_error(WGT_ERR_FORMAT, "%s: %s has %llu entries for %lld layers", path, k, (unsigned long long)n,
                         (long long)c->n_layers);
    unsigned char flags[4096];
    for (uint64_t i = 0; i < n; i++) {
        int64_t f;
        wgt_status st = wgt_gguf_array_int(v, i, &f);
        if (st) return wgt_error(st, "%s: %s: %s", path, k, wgt_errmsg());
        flags[i] = f != 0;
    }
    c->window_from = 0;
    return mdl_window_pattern(c, flags, (int)n, k, path);
}

static wgt_status config_from_gguf(const wgt_gguf *g, const char *path, wgt_model_config *c)
{
    wgt_status st;
    const char *arch;
    memset(c, 0, sizeof *c);
    TRY(wgt_gguf_get_str(g, "general.architecture", &arch));
    TRY(gguf_int(g, arch, "embedding_length", -1, &c->dim));
    TRY(gguf_int(g, arch, "block_count", -1, &c->n_layers));
    TRY(gguf_int(g, arch, "attention.head_count", -1, &c->n_heads));
    TRY(gguf_int(g, arch, "attention.head_count_kv", c->n_heads, &c->n_kv_heads));
    char kl[160];
    snprintf(kl, sizeof kl, "%s.attention.key_length", arch);
    if (!wgt_gguf_find(g, kl) && c->n_heads > 0 && c->dim % c->n_heads)
        return wgt_error(WGT_ERR_FORMAT, "%s: embedding_length %lld is not a multiple of attention.head_count %lld, "
                         "and no attention.key_length is given", path, (long long)c->dim, (long long)c->n_heads);
    TRY(gguf_int(g, arch, "attention.key_length", c->n_heads > 0 ? c->dim / c->n_heads : 0, &c->head_dim));
    TRY(gguf_int(g, arch, "feed_forward_length", -1, &c->ffn));
    TRY(gguf_int(g, arch, "context_length", 2048, &c->max_pos));
    c->rms = 1;
    TRY(mdl_family_from_gguf(arch, path, c)); /* the family's features; the keys below refine them */
    TRY(gguf_float(g, arch, c->rms ? "attention.layer_norm_rms_epsilon" : "attention.layer_norm_epsilon", 1e-5,
                   &c->norm_eps));
    TRY(gguf_float(g, arch, "rope.freq_base", 10000, &c->rope.theta));
    TRY(gguf_int(g, arch, "rope.dimension_count", c->head_dim, &c->rope_dims));
    char pk[160];
    snprintf(pk, sizeof pk, "%s.use_parallel_residual", arch);
    if (c->parallel && wgt_gguf_find(g, pk)) TRY(wgt_gguf_get_bool(g, pk, &c->parallel));
    TRY(gguf_float(g, arch, "attn_logit_softcapping", 0, &c->attn_softcap));
    TRY(gguf_float(g, arch, "final_logit_softcapping", 0, &c->final_softcap));
    /* absent: none, except Gemma 2's 4096 (llama.cpp's default for a gemma2 file without the key) */
    TRY(gguf_int(g, arch, "attention.sliding_window", c->arch == WGT_ARCH_GEMMA2 ? 4096 : 0, &c->window));
    if (c->window > 0) TRY(gguf_window_pattern(g, arch, path, c));
    if (c->post_norms && c->head_dim > 0) {
        /* llama.cpp's files carry no query_pre_attn_scalar: it is head_dim, except in the 27B
         * models (46 layers of Gemma 2, 62 of Gemma 3), where it is hidden / heads */
        int big = (c->arch == WGT_ARCH_GEMMA2 && c->n_layers == 46) || (c->arch == WGT_ARCH_GEMMA3 && c->n_layers == 62);
        double s = big && c->n_heads > 0 ? (double)c->dim / (double)c->n_heads : (double)c->head_dim;
        c->attn_scale = 1 / sqrt(s);
    }
    TRY(gguf_float(g, arch, "attention.scale", c->attn_scale, &c->attn_scale));
    if (c->rope_local_set) /* gemma3's sliding layers (llama.cpp's key; 10000 when absent) */
        TRY(gguf_float(g, arch, "rope.freq_base_swa", c->rope_local.theta, &c->rope_local.theta));
    /* granite's multipliers (absent: 1) */
    TRY(gguf_float(g, arch, "embedding_scale", c->embed_scale, &c->embed_scale));
    TRY(gguf_float(g, arch, "residual_scale", c->residual_scale, &c->residual_scale));
    TRY(gguf_float(g, arch, "logit_scale", c->logit_scale, &c->logit_scale));
    if (c->embed_scale == 1) c->embed_scale = 0;
    if (c->residual_scale == 1) c->residual_scale = 0;
    if (c->logit_scale == 1) c->logit_scale = 0;
    /* mixtures of experts (llama.cpp's keys; a llama file with expert_count is Mixtral) */
    TRY(gguf_int(g, arch, "expert_count", 0, &c->n_experts));
    if (c->n_experts) {
        if (c->arch == WGT_ARCH_LLAMA) c->expert_norm = 1; /* Mixtral renormalises its top 2 */
        TRY(gguf_int(g, arch, "expert_used_count", -1, &c->n_experts_used));
        TRY(gguf_int(g, arch, "expert_feed_forward_length", c->ffn, &c->expert_ffn));
        int64_t shared = 0;
        TRY(gguf_int(g, arch, "expert_shared_feed_forward_length", 0, &shared));
        if (shared > 0 && wgt_gguf_tensor_find(g, "blk.0.ffn_gate_shexp.weight")) c->shared_expert = 1, c->ffn = shared;
        char nk[160];
        snprintf(nk, sizeof nk, "%s.expert_weights_norm", arch);
        if (wgt_gguf_find(g, nk)) TRY(wgt_gguf_get_bool(g, nk, &c->expert_norm));
    }
    if (c->arch == WGT_ARCH_STABLELM) { /* what config.json says, the tensors tell */
        c->qk_norm = c->qk_norm_ln = wgt_gguf_tensor_find(g, "blk.0.attn_q_norm.weight") != NULL;
        c->parallel = wgt_gguf_tensor_find(g, "blk.0.ffn_norm.weight") == NULL;
    }
    const wgt_gguf_tensor *emb = wgt_gguf_tensor_find(g, "token_embd.weight");
    if (!emb) return wgt_error(WGT_ERR_NOT_FOUND, "%s: the model has no tensor 'token_embd.weight'", path);
    c->vocab = emb->ne[1];
    c->tied = wgt_gguf_tensor_find(g, "output.weight") == NULL;
    c->qkv_bias = wgt_gguf_tensor_find(g, "blk.0.attn_q.bias") != NULL;
    c->o_bias = wgt_gguf_tensor_find(g, "blk.0.attn_output.bias") != NULL;
    char k[160];
    const char *stype = NULL;
    snprintf(k, sizeof k, "%s.rope.scaling.type", arch);
    if (wgt_gguf_find(g, k)) TRY(wgt_gguf_get_str(g, k, &stype));
    if (stype && !strcmp(stype, "linear")) c->rope.scaling = WGT_ROPE_LINEAR;
    else if (stype && !strcmp(stype, "yarn")) c->rope.scaling = WGT_ROPE_YARN;
    else if (stype && !strcmp(stype, "llama3")) c->rope.scaling = WGT_ROPE_LLAMA3;
    TRY(gguf_float(g, arch, "rope.scaling.factor", 0, &c->rope.factor));
    TRY(gguf_float(g, arch, "rope.scaling.low_freq_factor", 1, &c->rope.low_freq_factor));
    TRY(gguf_float(g, arch, "rope.scaling.high_freq_factor", 4, &c->rope.high_freq_factor));
    TRY(gguf_float(g, arch, "rope.scaling.original_context_length", 0, &c->rope.original_max_position));
    c->rope.truncate = 1;
    const wgt_gguf_tensor *rf = wgt_gguf_tensor_find(g, "rope_freqs.weight");
    if (rf) TRY(rope_factors_from_gguf(rf, path, c));
    /* special ids: out of int32 range they are out of the vocabulary too (mdl_validate_config says so) */
    int64_t v;
    c->bos = -1;
    if (wgt_gguf_find(g, "tokenizer.ggml.bos_token_id")) {
        TRY(wgt_gguf_get_int(g, "tokenizer.ggml.bos_token_id", &v));
        c->bos = v < 0 || v > INT32_MAX ? -2 : (int32_t)v;
    }
    if (wgt_gguf_find(g, "tokenizer.ggml.eos_token_id")) {
        TRY(wgt_gguf_get_int(g, "tokenizer.ggml.eos_token_id", &v));
        c->eos[c->n_eos++] = v < 0 || v > INT32_MAX ? -1 : (int32_t)v;
    }
    return WGT_OK;
}

static wgt_status load_gguf_weights(wgt_model *m, const source *src)
{
    const wgt_model_config *c = &m->cfg;
    wgt_status st;
    char name[256];
    const char *pre = "blk.";
    TRY(load_linear(m, src, "output.weight", 1, &m->lm_head)); /* first: see load_hf_llama */
    TRY(load_embedding(m, src, "token_embd.weight"));
    TRY(load_weight(m, src, "output_norm.weight", 0, &m->out_norm));
    TRY(load_weight(m, src, "output_norm.bias", 1, &m->out_norm_b));
    TRY(load_weight(m, src, "output.bias", 1, &m->lm_head_b));
    TRY(load_weight(m, src, "position_embd.weight", !c->no_rope, &m->pos_emb));
    for (int64_t i = 0; i < c->n_layers; i++) {
        wgt_layer_weights *L = &m->layers[i];
        W(attn_norm, "attn_norm.weight", c->no_pre_norm);
        W(attn_norm_b, "attn_norm.bias", 1);
        LW(wo, "attn_output.weight", 0);
        W(bo, "attn_output.bias", 1);
        W(ffn_norm, "ffn_norm.weight", c->parallel || c->no_pre_norm);
        W(ffn_norm_b, "ffn_norm.bias", 1);
        if (c->n_experts) {
            TRY(load_experts(m, src, i));
        } else {
            if (c->fused_proj) { /* ffn_up holds gate and up: [2 ffn, dim] */
                LW(w_gu, "ffn_up.weight", 0);
            } else {
                LW(w_up, "ffn_up.weight", 0);
            }
            W(b_up, "ffn_up.bias", 1);
            LW(w_down, "ffn_down.weight", 0);
            W(b_down, "ffn_down.bias", 1);
            LW(w_gate, "ffn_gate.weight", c->plain_mlp || c->fused_proj);
        }
        W(q_norm, "attn_q_norm.weight", !c->qk_norm);
        W(k_norm, "attn_k_norm.weight", !c->qk_norm);
        W(post_attn_norm, "post_attention_norm.weight", !c->post_norms);
        W(post_ffn_norm, "post_ffw_norm.weight", !c->post_norms);
        if (!c->fused_proj && wgt_gguf_tensor_find(src->gguf, LAYER("attn_qkv.weight"))) { /* gpt2, and phi2 as older converters wrote it */
            mdl_weight qkv;
            wgt_tensor *qkv_b;
            int64_t qd = c->n_heads * c->head_dim, kd = c->n_kv_heads * c->head_dim;
            TRY(load_linear(m, src, name, 0, &qkv));
            TRY(load_weight(m, src, LAYER("attn_qkv.bias"), 0, &qkv_b));
            /* q, k and v are row ranges of one weight (row narrows of quantized blocks too) */
            L->wq.q = L->wk.q = L->wv.q = qkv.q;
            TRY(wgt_tensor_narrow(qkv.t, 0, 0, qd, &L->wq.t));
            TRY(wgt_tensor_narrow(qkv.t, 0, qd, kd, &L->wk.t));
            TRY(wgt_tensor_narrow(qkv.t, 0, qd + kd, kd, &L->wv.t));
            TRY(wgt_tensor_narrow(qkv_b, 0, 0, qd, &L->bq));
            TRY(wgt_tensor_narrow(qkv_b, 0, qd, kd, &L->bk));
            TRY(wgt_tensor_narrow(qkv_b, 0, qd + kd, kd, &L->bv));
            wgt_tensor_free(qkv.t);
            wgt_tensor_free(qkv_b);
        } else if (c->fused_proj) {
            LW(wqkv, "attn_qkv.weight", 0);
        } else {
            LW(wq, "attn_q.weight", 0);
            LW(wk, "attn_k.weight", 0);
            LW(wv, "attn_v.weight", 0);
            W(bq, "attn_q.bias", !c->qkv_bias);
            W(bk, "attn_k.bias", !c->qkv_bias);
            W(bv, "attn_v.bias", !c->qkv_bias);
        }
    }
    return WGT_OK;
}

/* ---- random weights of a configuration (benchmarks without downloads) ------------------------ */

static uint64_t rng_state = 0x853c49e6748fea9bull;
static uint64_t rand_bits(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return rng_state;
}
static float rand_weight(void) { return ((float)(rand_bits() >> 40) / 16777216.0f - 0.5f) * 0.04f; }

/* n f16 values uniform in (-0.02, 0.02), 4 from each 64 random bits through a table of 4096
 * values: a bench's f16 weights are made as fast as memory is written (the float path took ~10 ns
 * an element on the host, a minute for a 5-billion-parameter MoE shape). */
static void random_f16(uint16_t *h, int64_t n)
{
    static uint16_t table[4096];
    if (!table[0])
        for (int i = 0; i < 4096; i++) table[i] = wgt_f32_to_f16((((float)i + 0.5f) / 4096.0f - 0.5f) * 0.04f);
    for (int64_t i = 0; i < n; i += 4) {
        uint64_t r = rand_bits();
        for (int j = 0; j < 4 && i + j < n; j++) h[i + j] = table[(r >> (16 * j + 4)) & 4095];
    }
}

/* A [d0, d1] (d1 0: [d0]) tensor of dtype dt: small random values, or ones (norm weights). */
static wgt_status random_weight(wgt_model *m, wgt_dtype dt, int64_t d0, int64_t d1, int ones, wgt_tensor **out)
{
    int64_t n = d0 * (d1 ? d1 : 1), shape[2] = {d0, d1};
    wgt_status st;
    if (dt == WGT_F16 && !ones) {
        uint16_t *h = malloc((size_t)n * sizeof *h);
        if (!h) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory for random weights");
        random_f16(h, n);
        st = wgt_tensor_from_host(m->ctx, WGT_F16, d1 ? 2 : 1, shape, h, out);
        free(h);
        if (!st) m->weight_bytes += (uint64_t)n * 2;
        return st;
    }
    float *f = malloc((size_t)n * sizeof *f);
    if (!f) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory for random weights");
    for (int64_t i = 0; i < n; i++) f[i] = ones ? 1.0f : rand_weight();
    wgt_tensor *t;
    st = wgt_tensor_from_host(m->ctx, WGT_F32, d1 ? 2 : 1, shape, f, &t);
    free(f);
    if (st) return st;
    if (dt != WGT_F32) {
        st = wgt_tensor_cast(t, dt, out);
        wgt_tensor_free(t);
    } else
        *out = t;
    if (!st) m->weight_bytes += (uint64_t)n * wgt_dtype_size(dt);
    return st;
}

/* Q8_0 / Q4_0 blocks written directly (a fixed scale, random quants: values in about (-0.02,
 * 0.02) as rand_weight's), as fast as memory is written; 0 for the other types. */
static int random_blocks(wgt_ftype type, uint8_t *b, int64_t n)
{
    int q8 = type == WGT_FTYPE_Q8_0;
    if (!q8 && type != WGT_FTYPE_Q4_0) return 0;
    uint16_t d = wgt_f32_to_f16(q8 ? 0.02f / 127 : 0.02f / 8);
    int64_t size = q8 ? 34 : 18;
    for (int64_t blk = 0; blk < n / 32; blk++, b += size) {
        memcpy(b, &d, 2);
        for (int64_t i = 2; i < size; i += 8) {
            uint64_t r = rand_bits();
            memcpy(b + i, &r, (size_t)(size - i < 8 ? size - i : 8));
        }
    }
    return 1;
}

/* A random [d0, d1] linear weight stored as type: a float dtype, or quantized blocks (random
 * blocks, or random values quantised on the host) that wgt_qlinear reads. */
static wgt_status random_linear(wgt_model *m, wgt_ftype type, int64_t d0, int64_t d1, mdl_weight *out)
{
    int ok;
    wgt_dtype dt = dtype_of(type, &ok);
    out->q = WGT_FTYPE_F32;
    if (ok) return random_weight(m, dt, d0, d1, 0, &out->t);
    uint64_t bytes;
    wgt_status st = wgt_ftype_bytes(type, d0 * d1, &bytes);
    if (st) return st;
    void *blocks = malloc(bytes);
    if (!blocks) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory for random weights");
    if (!random_blocks(type, blocks, d0 * d1)) {
        float *f = malloc((size_t)(d0 * d1) * sizeof *f);
        if (!f) st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory for random weights");
        for (int64_t i = 0; !st && i < d0 * d1; i++) f[i] = rand_weight();
        if (!st) st = wgt_quantize(type, f, blocks, d0 * d1);
        free(f);
    }
    if (!st) st = wgt_qweight_upload(m->ctx, type, d0, d1, blocks, &out->t);
    if (!st) out->q = type, m->weight_bytes += bytes;
    free(blocks);
    return st;
}

/* Random weights of the configuration's shapes, linear weights (and the tied head) stored as type;
 * norms and biases f32. A quantized type keeps the token embedding on the host as f16 rows. */
static wgt_status load_random(wgt_model *m, wgt_ftype type)
{
    const wgt_model_config *c = &m->cfg;
    wgt_status st;
    int ok;
    wgt_dtype dt = dtype_of(type, &ok);
    if (!ok) dt = WGT_F16;
    int64_t D = c->dim, F = c->ffn, qd = c->n_heads * c->head_dim, kd = c->n_kv_heads * c->head_dim;
    TRY(random_weight(m, dt, c->vocab, D, 0, &m->tok_emb));
    TRY(random_weight(m, WGT_F32, D, 0, 1, &m->out_norm));
    if (!c->rms) TRY(random_weight(m, WGT_F32, D, 0, 0, &m->out_norm_b));
    if (c->no_rope) TRY(random_weight(m, dt, c->max_pos, D, 0, &m->pos_emb));
    if (!c->tied || !ok) TRY(random_linear(m, type, c->vocab, D, &m->lm_head));
    for (int64_t i = 0; i < c->n_layers; i++) {
        wgt_layer_weights *L = &m->layers[i];
        TRY(random_weight(m, WGT_F32, D, 0, 1, &L->attn_norm));
        TRY(random_weight(m, WGT_F32, D, 0, 1, &L->ffn_norm));
        if (!c->rms) {
            TRY(random_weight(m, WGT_F32, D, 0, 0, &L->attn_norm_b));
            TRY(random_weight(m, WGT_F32, D, 0, 0, &L->ffn_norm_b));
        }
        TRY(random_linear(m, type, qd, D, &L->wq));
        TRY(random_linear(m, type, kd, D, &L->wk));
        TRY(random_linear(m, type, kd, D, &L->wv));
        TRY(random_linear(m, type, D, qd, &L->wo));
        if (c->qkv_bias) {
            TRY(random_weight(m, WGT_F32, qd, 0, 0, &L->bq));
            TRY(random_weight(m, WGT_F32, kd, 0, 0, &L->bk));
            TRY(random_weight(m, WGT_F32, kd, 0, 0, &L->bv));
        }
        if (c->qk_norm) {
            TRY(random_weight(m, WGT_F32, c->head_dim, 0, 1, &L->q_norm));
            TRY(random_weight(m, WGT_F32, c->head_dim, 0, 1, &L->k_norm));
        }
        if (c->post_norms) {
            TRY(random_weight(m, WGT_F32, D, 0, 1, &L->post_attn_norm));
            TRY(random_weight(m, WGT_F32, D, 0, 1, &L->post_ffn_norm));
        }
        if (c->n_experts) { /* router f32; experts stacked as load_experts lays them out */
            const int64_t E = c->n_experts, EF = c->n_experts * c->expert_ffn;
            TRY(random_weight(m, WGT_F32, E, D, 0, &L->router.t));
            L->router.q = WGT_FTYPE_F32;
            TRY(random_linear(m, type, 2 * EF, D, &L->exp_gu));
            TRY(random_linear(m, type, D, EF, &L->exp_down));
            if (!c->shared_expert) continue;
            TRY(random_weight(m, WGT_F32, 1, D, 0, &L->sh_gate.t));
            L->sh_gate.q = WGT_FTYPE_F32;
        }
        if (!c->plain_mlp) TRY(random_linear(m, type, F, D, &L->w_gate));
        TRY(random_linear(m, type, F, D, &L->w_up));
        TRY(random_linear(m, type, D, F, &L->w_down));
        if (c->plain_mlp) {
            TRY(random_weight(m, WGT_F32, F, 0, 0, &L->b_up));
            TRY(random_weight(m, WGT_F32, D, 0, 0, &L->b_down));
            TRY(random_weight(m, WGT_F32, D, 0, 0, &L->bo));
        }
    }
    return WGT_OK;
}

/* Refuse, before anything is uploaded, a model with a tensor larger than the adapter's largest
 * buffer (quantized tensors count as their blocks, or as the f32 they are expanded to when
 * dequantising or when the GPU kernels do not read their type). WebGPU does not report the
 * device's memory: running out of it later is a WGT_ERR_OUT_OF_MEMORY from the allocation. */
static wgt_status check_fits(wgt_context *ctx, const source *src, int dequantize, int f32_weights,
                             double *total_bytes)
{
    wgt_adapter_info info;
    wgt_context_adapter_info(ctx, &info);
    uint64_t limit = info.limits.max_buffer_size, total = 0, largest = 0;
    const char *name = "";
    int64_t n = src->st ? wgt_safetensors_count(src->st) : wgt_gguf_tensor_count(src->gguf);
    for (int64_t i = 0; i < n; i++) {
        uint64_t bytes;
        const char *tn;
        if (src->st) {
            const wgt_st_tensor *t = wgt_safetensors_at(src->st, i);
            bytes = t->bytes, tn = t->name;
        } else {
            const wgt_gguf_tensor *t = wgt_gguf_tensor_at(src->gguf, i);
            int ok;
            wgt_dtype dt = dtype_of(t->type, &ok);
            if (ok && f32_weights && (dt == WGT_F16 || dt == WGT_BF16)) ok = 0; /* expanded to f32 */
            bytes = ok || (wgt_qlinear_gpu_type(t->type) && !dequantize) ? t->bytes : (uint64_t)t->n_elements * 4;
            tn = t->name;
        }
        total += bytes;
        if (bytes > largest) largest = bytes, name = tn;
    }
    *total_bytes = (double)total;
    if (largest > limit)
        return wgt_error(WGT_ERR_LIMIT,
                         "%s: tensor '%s' needs %llu bytes, more than this adapter's largest buffer (%llu bytes; "
                         "%llu bytes of weights in all): use a smaller model or a quantized conversion",
                         src->path, name, (unsigned long long)largest, (unsigned long long)limit,
                         (unsigned long long)total);
    return WGT_OK;
}

/* ---- fusing weights ------------------------------------------------------------------------- */

/* parts stacked along the rows into one weight when they share a type (and dtype), so one matmul
 * (one dispatch, one pass over the input) computes them all; the parts are freed. */
static wgt_status stack(mdl_weight **parts, int n, mdl_weight *out)
{
    const wgt_tensor *ts[4];
    for (int i = 0; i < n; i++) {
        if (!parts[i]->t || parts[i]->q != parts[0]->q ||
            wgt_tensor_dtype(parts[i]->t) != wgt_tensor_dtype(parts[0]->t) ||
            wgt_tensor_dim(parts[i]->t, 1) != wgt_tensor_dim(parts[0]->t, 1))
            return WGT_OK;
        ts[i] = parts[i]->t;
    }
    wgt_status st = wgt_cat(ts, n, 0, &out->t);
    if (st) return st;
    out->q = parts[0]->q;
    for (int i = 0; i < n; i++) wgt_tensor_free(parts[i]->t), parts[i]->t = NULL;
    return WGT_OK;
}

static wgt_status fuse_layers(wgt_model *m)
{
    wgt_status st;
    for (int64_t i = 0; i < m->cfg.n_layers; i++) {
        wgt_layer_weights *L = &m->layers[i];
        /* biases: all three or none (a model with some is left unfused); a checkpoint that stores
         * q/k/v as one matrix (phi3, gpt_neox) has them stacked already */
        int nb = !!L->bq + !!L->bk + !!L->bv;
        if (!L->wqkv.t && (nb == 0 || nb == 3)) {
            wgt_tensor *b = NULL;
            if (nb == 3) {
                const wgt_tensor *bs[3] = {L->bq, L->bk, L->bv};
                wgt_tensor *bf[3] = {NULL, NULL, NULL};
                for (int j = 0; j < 3; j++) /* one dtype for cat */
                    if ((st = wgt_tensor_cast(bs[j], WGT_F32, &bf[j]))) return st;
                st = wgt_cat((const wgt_tensor *const *)bf, 3, 0, &b);
                for (int j = 0; j < 3; j++) wgt_tensor_free(bf[j]);
                if (st) return st;
            }
            mdl_weight *qkv[3] = {&L->wq, &L->wk, &L->wv};
            if ((st = stack(qkv, 3, &L->wqkv))) return st;
            if (L->wqkv.t) {
                L->bqkv = b;
                wgt_tensor_free(L->bq), wgt_tensor_free(L->bk), wgt_tensor_free(L->bv);
                L->bq = L->bk = L->bv = NULL;
            } else
                wgt_tensor_free(b);
        }
        if (L->w_gate.t) {
            mdl_weight *gu[2] = {&L->w_gate, &L->w_up};
            if ((st = stack(gu, 2, &L->w_gu))) return st;
        }
    }
    return WGT_OK;
}

/* ---- the model ------------------------------------------------------------------------------ */

static int is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* The KV cache's length for a requested one (0: the model's), capped at the model's positions and 4096. */
static int64_t cache_len(const wgt_model_config *c, int64_t max_ctx)
{
    if (max_ctx <= 0 || (c->max_pos > 0 && max_ctx > c->max_pos)) max_ctx = c->max_pos > 0 ? c->max_pos : 2048;
    return max_ctx > 4096 ? 4096 : max_ctx;
}

/* The KV cache (without one, no_kv_cache: the context length alone, for wgt_batch's slots). */
static wgt_status alloc_cache(wgt_model *m, int64_t max_ctx, int no_kv_cache)
{
    const wgt_model_config *c = &m->cfg;
    max_ctx = cache_len(c, max_ctx);
    m->max_ctx = max_ctx;
    m->cache_ids = calloc((size_t)max_ctx, sizeof *m->cache_ids);
    if (!m->cache_ids) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    if (no_kv_cache) return WGT_OK;
    int64_t shape[3] = {c->n_kv_heads, max_ctx, c->head_dim};
    wgt_status st;
    for (int64_t i = 0; i < c->n_layers; i++) {
        TRY(wgt_tensor_zeros(m->ctx, WGT_F32, 3, shape, &m->layers[i].k_cache));
        TRY(wgt_tensor_zeros(m->ctx, WGT_F32, 3, shape, &m->layers[i].v_cache));
    }
    return WGT_OK;
}

/* A configuration alone takes the tokenizer of its folder when there is one (tools/serve_bench.py
 * serves a random model of a real shape with a synthetic tokenizer of its vocabulary beside it, so
 * that replies stream as text). No tokenizer there is not an error; a broken one is kept for the
 * command that wants text, as for a model directory. */
static void open_tokenizer_beside(wgt_model *m, const char *config_path)
{
    size_t n = strlen(config_path);
    char *dir = malloc(n + 2);
    if (!dir) return;
    memcpy(dir, config_path, n + 1);
    char *slash = strrchr(dir, '/');
    if (slash) slash[slash == dir ? 1 : 0] = 0;
    else strcpy(dir, ".");
    wgt_status ts = wgt_tokenizer_open(dir, &m->tok);
    if (ts) {
        m->tok = NULL;
        if (ts != WGT_ERR_NOT_FOUND) m->tok_error = strdup(wgt_errmsg());
    }
    free(dir);
}

wgt_status wgt_model_open(wgt_context *ctx, const char *path, int64_t max_ctx, wgt_model **out)
{
    wgt_model_options o = {0};
    o.max_ctx = max_ctx;
    return wgt_model_open_ex(ctx, path, &o, out);
}

wgt_status wgt_model_open_ex(wgt_context *ctx, const char *path, const wgt_model_options *opt, wgt_model **out)
{
    if (!ctx || !path || !out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_model_open: NULL argument");
    *out = NULL;
    wgt_model_options o = {0};
    if (opt) o = *opt;
    int64_t max_ctx = o.max_ctx;
    wgt_ftype rtype = WGT_FTYPE_F16;
    if (o.random_type && wgt_ftype_from_name(o.random_type, &rtype))
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "unknown weight type '%s' (f32, f16, bf16, q8_0, q4_0, q4_k, q6_k)",
                         o.random_type);
    {
        int ok;
        dtype_of(rtype, &ok);
        if (!ok && !wgt_qlinear_gpu_type(rtype))
            return wgt_error(WGT_ERR_UNSUPPORTED, "random weights of type %s: use f32, f16, bf16, q8_0, q4_0, q4_k or q6_k",
                             o.random_type);
    }
    if (o.kv_caches < 0 || o.kv_caches > 1 << 20)
        return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_model_open_ex: kv_caches %d is not 0 to 2^20", o.kv_caches);
    /* the KV caches the memory check counts: the model's own, and those allocated beside it */
    int64_t n_caches = (o.no_kv_cache ? 0 : 1) + o.kv_caches;
    wgt_model *m = calloc(1, sizeof *m);
    if (!m) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    m->ctx = ctx;
    m->dequantize = o.dequantize;
    m->f32_weights = o.f32_weights;
    {
        /* unset or 1: every expert format read in place (measured on the H200: quantized and f16
         * faster in decode and prefill, both shapes); 0: none */
        const char *mk = getenv("WGT_MOE_KERNELS");
        m->moe_kernels = !mk || strcmp(mk, "0") != 0;
    }
    source src = {0};
    src.path = path;
    wgt_status st;
    size_t plen = strlen(path);
    if (plen > 5 && !strcmp(path + plen - 5, ".json")) {
        /* a config.json alone: random weights of that shape in f16 (benchmarks) */
        m->random = 1;
        wgt_hf_config h;
        FILE *f = fopen(path, "rb");
        if (!f) {
            st = wgt_error(WGT_ERR_NOT_FOUND, "%s: cannot open the configuration", path);
            goto fail;
        }
        char *json = malloc(1 << 20);
        size_t n = json ? fread(json, 1, (1 << 20) - 1, f) : 0;
        fclose(f);
        if (!json) {
            st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
            goto fail;
        }
        json[n] = 0;
        st = wgt_hf_config_parse(json, n, path, &h);
        free(json);
        if (!st) st = mdl_config_from_hf(&h, path, &m->cfg);
        if (!st) st = mdl_validate_config(&m->cfg, path);
        if (!st) st = mdl_check_memory(&m->cfg, mdl_random_weight_bytes(&m->cfg, rtype), cache_len(&m->cfg, max_ctx),
                                          n_caches, path);
        if (st) goto fail;
        m->layers = calloc((size_t)m->cfg.n_layers, sizeof *m->layers);
        if (!m->layers || (st = load_random(m, rtype))) {
            if (!st) st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
            goto fail;
        }
        if (!m->lm_head.t) m->lm_head.t = wgt_tensor_ref(m->tok_emb);
        if ((st = fuse_layers(m)) || (st = alloc_cache(m, max_ctx, o.no_kv_cache))) goto fail;
        open_tokenizer_beside(m, path);
        *out = m;
        return WGT_OK;
    }
    if (is_dir(path)) {
        wgt_hf_config h;
        if ((st = wgt_hf_config_load(path, &h)) || (st = mdl_config_from_hf(&h, path, &m->cfg))) goto fail;
        if ((st = wgt_safetensors_open(path, &src.st))) goto fail;
    } else {
        if ((st = wgt_gguf_open(path, &src.gguf)) || (st = config_from_gguf(src.gguf, path, &m->cfg))) goto fail;
    }
    double weight_bytes;
    if ((st = mdl_validate_config(&m->cfg, path)) || (st = check_fits(ctx, &src, m->dequantize, m->f32_weights, &weight_bytes)) ||
        (st = mdl_check_memory(&m->cfg, weight_bytes, cache_len(&m->cfg, max_ctx), n_caches, path)))
        goto fail;
    m->layers = calloc((size_t)m->cfg.n_layers, sizeof *m->layers);
    if (!m->layers) {
        st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
        goto fail;
    }
    if (src.gguf) st = load_gguf_weights(m, &src);
    else if (m->cfg.hf_layout == MDL_HF_GPT2) st = load_hf_gpt2(m, &src);
    else if (m->cfg.hf_layout == MDL_HF_PHI) st = load_hf_phi(m, &src);
    else if (m->cfg.hf_layout == MDL_HF_NEOX) st = load_hf_neox(m, &src);
    else st = load_hf_llama(m, &src);
    if (st) goto fail;
    if (!m->lm_head.t) m->lm_head.t = wgt_tensor_ref(m->tok_emb);
    if ((st = fuse_layers(m)) || (st = alloc_cache(m, max_ctx, o.no_kv_cache))) goto fail;
    /* The tokenizer, when the model carries one. A failure is kept, not fatal (ids still work), so
     * that a command wanting text reports the parse error rather than "no tokenizer". */
    wgt_status ts = WGT_OK;
    if (src.gguf) {
        const char *tm = NULL; /* "none": llama.cpp's mark of a model without a vocabulary */
        if (wgt_gguf_find(src.gguf, "tokenizer.ggml.model") && !wgt_gguf_get_str(src.gguf, "tokenizer.ggml.model", &tm) &&
            strcmp(tm, "none"))
            ts = wgt_tokenizer_create_from_gguf(src.gguf, path, &m->tok);
    } else
        ts = wgt_tokenizer_open(path, &m->tok);
    if (ts) {
        m->tok = NULL;
        /* a directory without any tokenizer file is NOT_FOUND: nothing to report */
        if (ts != WGT_ERR_NOT_FOUND || src.gguf) m->tok_error = strdup(wgt_errmsg());
    }
    wgt_safetensors_free(src.st);
    wgt_gguf_free(src.gguf);
    *out = m;
    return WGT_OK;
fail: {
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", wgt_errmsg());
    wgt_safetensors_free(src.st);
    wgt_gguf_free(src.gguf);
    wgt_model_free(m);
    return wgt_error(st, "%s", msg);
}
}

void wgt_model_free(wgt_model *m)
{
    if (!m) return;
    wgt_tensor *top[] = {m->tok_emb, m->pos_emb, m->out_norm, m->out_norm_b, m->lm_head.t, m->lm_head_b};
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++) wgt_tensor_free(top[i]);
    for (int64_t i = 0; m->layers && i < m->cfg.n_layers; i++) {
        wgt_layer_weights *L = &m->layers[i];
        wgt_tensor *ts[] = {L->attn_norm, L->attn_norm_b, L->wq.t, L->wk.t, L->wv.t, L->wo.t, L->bq, L->bk, L->bv, L->bo,
                            L->q_norm, L->k_norm, L->ffn_norm, L->ffn_norm_b, L->w_gate.t, L->w_up.t, L->w_down.t,
                            L->b_up, L->b_down, L->k_cache, L->v_cache, L->wqkv.t, L->bqkv, L->w_gu.t,
                            L->post_attn_norm, L->post_ffn_norm, L->router.t, L->exp_gu.t, L->exp_down.t,
                            L->sh_gate.t};
        for (size_t j = 0; j < sizeof ts / sizeof ts[0]; j++) wgt_tensor_free(ts[j]);
    }
    free(m->layers);
    free(m->tok_emb_blocks);
    free(m->cache_ids);
    free(m->tok_error);
    wgt_tokenizer_free(m->tok);
    free(m);
}

wgt_tokenizer *wgt_model_tokenizer(const wgt_model *m) { return m ? m->tok : NULL; }
const char *wgt_model_tokenizer_error(const wgt_model *m) { return m ? m->tok_error : NULL; }
int64_t wgt_model_context(const wgt_model *m) { return m ? m->max_ctx : 0; }
int wgt_model_is_random(const wgt_model *m) { return m ? m->random : 0; }
int64_t wgt_model_vocab(const wgt_model *m) { return m ? m->cfg.vocab : 0; }
int64_t wgt_model_layers(const wgt_model *m) { return m ? m->cfg.n_layers : 0; }
uint64_t wgt_model_weight_bytes(const wgt_model *m) { return m ? m->weight_bytes : 0; }

static uint64_t bytes_of(const wgt_tensor *t)
{
    return t ? (uint64_t)wgt_tensor_numel(t) * wgt_dtype_size(wgt_tensor_dtype(t)) : 0;
}

/* The weight bytes a decode step reads: as forward.c's moe_mlp runs it (active 0: the chosen
 * experts in place by default, else (WGT_MOE_KERNELS=0) their gathered copy and the copy's read for
 * float experts and every expert for quantized ones), or the active weights alone (active 1: the chosen
 * k of E experts once). */
static uint64_t token_bytes(const wgt_model *m, int active)
{
    if (!m) return 0;
    const wgt_model_config *c = &m->cfg;
    uint64_t n = bytes_of(m->lm_head.t) + bytes_of(m->lm_head_b) + bytes_of(m->out_norm) + bytes_of(m->out_norm_b);
    for (int64_t i = 0; i < c->n_layers; i++) {
        const wgt_layer_weights *L = &m->layers[i];
        const wgt_tensor *ts[] = {L->attn_norm, L->attn_norm_b, L->wq.t, L->wk.t, L->wv.t, L->wo.t, L->bq, L->bk,
                                  L->bv, L->bo, L->q_norm, L->k_norm, L->ffn_norm, L->ffn_norm_b, L->w_gate.t,
                                  L->w_up.t, L->w_down.t, L->b_up, L->b_down, L->wqkv.t, L->bqkv, L->w_gu.t,
                                  L->post_attn_norm, L->post_ffn_norm, L->router.t, L->sh_gate.t};
        for (size_t j = 0; j < sizeof ts / sizeof *ts; j++) n += bytes_of(ts[j]);
        if (!c->n_experts) continue;
        uint64_t all = bytes_of(L->exp_gu.t) + bytes_of(L->exp_down.t);
        uint64_t chosen = all / (uint64_t)c->n_experts * (uint64_t)c->n_experts_used;
        int quant = L->exp_gu.q != WGT_FTYPE_F32, sparse = c->n_experts_used < c->n_experts;
        if (active) n += chosen;
        else if (sparse && MDL_MOE_KERNELS_ON(m, L) &&
                 wgt_moe_q_fits(m->ctx, L->exp_gu.t, mdl_expert_type(&L->exp_gu), L->exp_down.t,
                                mdl_expert_type(&L->exp_down), c->n_experts, c->expert_ffn))
            n += chosen;
        else if (sparse && !quant && L->exp_down.q == WGT_FTYPE_F32)
            n += 2 * chosen;
        else
            n += all;
    }
    return n;
}

uint64_t wgt_model_token_bytes(const wgt_model *m) { return token_bytes(m, 0); }
uint64_t wgt_model_active_bytes(const wgt_model *m) { return token_bytes(m, 1); }

const char *wgt_model_arch(const wgt_model *m)
{
    return m ? mdl_arch_gguf_name(m->cfg.arch) : "?";
}
