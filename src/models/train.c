/* The training side of the language models: f32 parameters under their Hugging Face names and a
 * forward over a batch [B, L] made only of public differentiable ops (embedding, RMS/layer norm,
 * linear, rope, causal scaled-dot-product attention, SwiGLU/GELU MLP, lm_head, cross-entropy), so
 * the autograd tape records it. The inference forward (forward.c) uses decode-only fused kernels
 * and stays separate. Weights come from any model wgt_model_open reads, un-fused and copied to f32
 * master weights; a quantized model is refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "models/model.h"
#include "models/train_internal.h"

#define TRY(x)                                                                                     \
    do {                                                                                           \
        if ((st = (x))) goto done;                                                                 \
    } while (0)

static wgt_status add_param(wgt_train_model *m, const char *name, wgt_tensor **slot, int conv1d)
{
    if (m->n_params == TM_MAX_PARAMS) return wgt_error(WGT_ERR_LIMIT, "more than %d parameter tensors", TM_MAX_PARAMS);
    tm_param *p = &m->params[m->n_params++];
    snprintf(p->name, sizeof p->name, "%s", name);
    p->slot = slot;
    p->conv1d = conv1d;
    return WGT_OK;
}

/* A contiguous f32 copy of w (rows [r0, r0 + n) of it when n > 0), owned by the caller. */
static wgt_status f32_copy(const wgt_tensor *w, int64_t r0, int64_t n, wgt_tensor **out)
{
    wgt_tensor *v = NULL, *c = NULL;
    wgt_status st = n > 0 ? wgt_tensor_narrow(w, 0, r0, n, &v) : WGT_OK;
    const wgt_tensor *src = v ? v : w;
    if (!st) st = wgt_tensor_contiguous(src, &c);
    if (!st) st = wgt_tensor_cast(c, WGT_F32, out);
    wgt_tensor_free(c);
    wgt_tensor_free(v);
    return st;
}

/* GGUF llama q/k rows are permuted for interleaved rope pairs (llama.cpp's converter): row
 * h*hd + 2j + t holds Hugging Face row h*hd + t*hd/2 + j. Undo it so the saved checkpoint is the
 * Hugging Face layout and the rope is the half-split one. */
static wgt_status unpermute(wgt_tensor **w, int64_t heads, int64_t hd)
{
    int64_t D = wgt_tensor_dim(*w, 1), s4[4] = {heads, hd / 2, 2, D}, s2[2] = {heads * hd, D};
    wgt_tensor *a = NULL, *b = NULL, *c = NULL;
    wgt_status st = wgt_tensor_reshape(*w, 4, s4, &a);
    if (!st) st = wgt_tensor_transpose(a, 1, 2, &b);
    if (!st) st = wgt_tensor_contiguous(b, &c);
    wgt_tensor_free(a), wgt_tensor_free(b);
    if (!st) st = wgt_tensor_reshape(c, 2, s2, &a);
    wgt_tensor_free(c);
    if (st) return st;
    wgt_tensor_free(*w);
    *w = a;
    return WGT_OK;
}

static wgt_status need_float(const mdl_weight *w, const char *what)
{
    if (w->t && w->q != WGT_FTYPE_F32)
        return wgt_error(WGT_ERR_UNSUPPORTED,
                         "training needs float weights: the model's %s is %s; use a checkpoint in f32, f16 or bf16 "
                         "(a Hugging Face directory, or a GGUF converted with --type f16)",
                         what, wgt_ftype_name(w->q) ? wgt_ftype_name(w->q) : "quantized");
    return WGT_OK;
}

/* The parameters of a loaded model, copied to f32 under the Hugging Face names. */
static wgt_status from_model(wgt_model *src, wgt_train_model *m)
{
    const wgt_model_config *c = &src->cfg;
    wgt_status st = WGT_OK;
    if (c->arch != WGT_ARCH_LLAMA && c->arch != WGT_ARCH_QWEN2 && c->arch != WGT_ARCH_QWEN3 && c->arch != WGT_ARCH_GPT2)
        return wgt_error(WGT_ERR_UNSUPPORTED, "wgt train runs llama, qwen2, qwen3 and gpt2 models, not %s",
                         mdl_arch_gguf_name(c->arch));
    if (c->n_experts)
        return wgt_error(WGT_ERR_UNSUPPORTED, "wgt train does not run mixtures of experts (this model has %lld)",
                         (long long)c->n_experts);
    if (c->window)
        return wgt_error(WGT_ERR_UNSUPPORTED, "wgt train does not run sliding-window attention (this model's window is "
                         "%lld tokens)", (long long)c->window);
    if (!src->tok_emb)
        return wgt_error(WGT_ERR_UNSUPPORTED,
                         "training needs float weights: the model's token embedding is %s; use a checkpoint in f32, "
                         "f16 or bf16",
                         wgt_ftype_name(src->tok_emb_q) ? wgt_ftype_name(src->tok_emb_q) : "quantized");
    if ((st = need_float(&src->lm_head, "output head"))) return st;
    for (int64_t i = 0; i < c->n_layers; i++) {
        const wgt_layer_weights *L = &src->layers[i];
        const mdl_weight *ws[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->wqkv, &L->w_gu, &L->w_gate, &L->w_up, &L->w_down};
        for (size_t j = 0; j < sizeof ws / sizeof *ws; j++)
            if ((st = need_float(ws[j], "linear weights"))) return st;
    }
    /* after the weights: a quantized file is refused for what it is, whatever its rope */
    if (c->rope.freq_factors) /* a checkpoint's config.json has no way to carry them */
        return wgt_error(WGT_ERR_UNSUPPORTED, "wgt train does not run from a GGUF file's rope_freqs.weight (per-frequency "
                         "rope factors that a saved config.json cannot express): train from the Hugging Face directory");
    mdl_config_copy(&m->cfg, c);
    m->cfg.rope_interleaved = 0;
    m->layers = calloc((size_t)c->n_layers, sizeof *m->layers);
    if (!m->layers) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    int gpt2 = c->arch == WGT_ARCH_GPT2;
    const char *pre = gpt2 ? "transformer." : "model.";
    char name[128];
    int64_t qd = c->n_heads * c->head_dim, kd = c->n_kv_heads * c->head_dim, F = c->ffn;
#define P(slot, conv1d, ...)                                                                       \
    do {                                                                                           \
        snprintf(name, sizeof name, __VA_ARGS__);                                                  \
        TRY(add_param(m, name, &(slot), conv1d));                                                  \
    } while (0)
    TRY(f32_copy(src->tok_emb, 0, 0, &m->tok_emb));
    P(m->tok_emb, 0, gpt2 ? "%swte.weight" : "%sembed_tokens.weight", pre);
    if (src->pos_emb) {
        TRY(f32_copy(src->pos_emb, 0, 0, &m->pos_emb));
        P(m->pos_emb, 0, "%swpe.weight", pre);
    }
    for (int64_t i = 0; i < c->n_layers; i++) {
        const wgt_layer_weights *S = &src->layers[i];
        tm_layer *L = &m->layers[i];
        long long li = (long long)i;
        TRY(f32_copy(S->attn_norm, 0, 0, &L->attn_norm));
        if (S->attn_norm_b) TRY(f32_copy(S->attn_norm_b, 0, 0, &L->attn_norm_b));
        TRY(f32_copy(S->ffn_norm, 0, 0, &L->ffn_norm));
        if (S->ffn_norm_b) TRY(f32_copy(S->ffn_norm_b, 0, 0, &L->ffn_norm_b));
        if (gpt2) {
            /* c_attn stays one [3D, D] weight (Conv1D [D, 3D] transposed): one parameter as in the file */
            if (S->wqkv.t) {
                TRY(f32_copy(S->wqkv.t, 0, 0, &L->wqkv));
                TRY(f32_copy(S->bqkv, 0, 0, &L->bqkv));
            } else {
                wgt_tensor *w3[3], *b3[3];
                const wgt_tensor *ws[3] = {S->wq.t, S->wk.t, S->wv.t}, *bs[3] = {S->bq, S->bk, S->bv};
                for (int j = 0; j < 3; j++) w3[j] = (wgt_tensor *)ws[j], b3[j] = (wgt_tensor *)bs[j];
                wgt_tensor *wc = NULL, *bc = NULL;
                TRY(wgt_cat((const wgt_tensor *const *)w3, 3, 0, &wc));
                st = wgt_cat((const wgt_tensor *const *)b3, 3, 0, &bc);
                if (!st) st = f32_copy(wc, 0, 0, &L->wqkv);
                if (!st) st = f32_copy(bc, 0, 0, &L->bqkv);
                wgt_tensor_free(wc), wgt_tensor_free(bc);
                if (st) goto done;
            }
            TRY(f32_copy(S->wo.t, 0, 0, &L->wo));
            TRY(f32_copy(S->bo, 0, 0, &L->bo));
            TRY(f32_copy(S->w_up.t, 0, 0, &L->w_up));
            TRY(f32_copy(S->b_up, 0, 0, &L->b_up));
            TRY(f32_copy(S->w_down.t, 0, 0, &L->w_down));
            TRY(f32_copy(S->b_down, 0, 0, &L->b_down));
            P(L->attn_norm, 0, "%sh.%lld.ln_1.weight", pre, li);
            P(L->attn_norm_b, 0, "%sh.%lld.ln_1.bias", pre, li);
            P(L->wqkv, 1, "%sh.%lld.attn.c_attn.weight", pre, li);
            P(L->bqkv, 0, "%sh.%lld.attn.c_attn.bias", pre, li);
            P(L->wo, 1, "%sh.%lld.attn.c_proj.weight", pre, li);
            P(L->bo, 0, "%sh.%lld.attn.c_proj.bias", pre, li);
            P(L->ffn_norm, 0, "%sh.%lld.ln_2.weight", pre, li);
            P(L->ffn_norm_b, 0, "%sh.%lld.ln_2.bias", pre, li);
            P(L->w_up, 1, "%sh.%lld.mlp.c_fc.weight", pre, li);
            P(L->b_up, 0, "%sh.%lld.mlp.c_fc.bias", pre, li);
            P(L->w_down, 1, "%sh.%lld.mlp.c_proj.weight", pre, li);
            P(L->b_down, 0, "%sh.%lld.mlp.c_proj.bias", pre, li);
            continue;
        }
        /* q/k/v (and gate/up) were stacked at load for the decode kernels: split them back */
        if (S->wqkv.t) {
            TRY(f32_copy(S->wqkv.t, 0, qd, &L->wq));
            TRY(f32_copy(S->wqkv.t, qd, kd, &L->wk));
            TRY(f32_copy(S->wqkv.t, qd + kd, kd, &L->wv));
            if (S->bqkv) {
                TRY(f32_copy(S->bqkv, 0, qd, &L->bq));
                TRY(f32_copy(S->bqkv, qd, kd, &L->bk));
                TRY(f32_copy(S->bqkv, qd + kd, kd, &L->bv));
            }
        } else {
            TRY(f32_copy(S->wq.t, 0, 0, &L->wq));
            TRY(f32_copy(S->wk.t, 0, 0, &L->wk));
            TRY(f32_copy(S->wv.t, 0, 0, &L->wv));
            if (S->bq) TRY(f32_copy(S->bq, 0, 0, &L->bq));
            if (S->bk) TRY(f32_copy(S->bk, 0, 0, &L->bk));
            if (S->bv) TRY(f32_copy(S->bv, 0, 0, &L->bv));
        }
        if (c->rope_interleaved) {
            TRY(unpermute(&L->wq, c->n_heads, c->head_dim));
            TRY(unpermute(&L->wk, c->n_kv_heads, c->head_dim));
        }
        TRY(f32_copy(S->wo.t, 0, 0, &L->wo));
        if (S->bo) TRY(f32_copy(S->bo, 0, 0, &L->bo));
        if (S->q_norm) TRY(f32_copy(S->q_norm, 0, 0, &L->q_norm));
        if (S->k_norm) TRY(f32_copy(S->k_norm, 0, 0, &L->k_norm));
        if (S->w_gu.t) {
            TRY(f32_copy(S->w_gu.t, 0, F, &L->w_gate));
            TRY(f32_copy(S->w_gu.t, F, F, &L->w_up));
        } else {
            TRY(f32_copy(S->w_gate.t, 0, 0, &L->w_gate));
            TRY(f32_copy(S->w_up.t, 0, 0, &L->w_up));
        }
        TRY(f32_copy(S->w_down.t, 0, 0, &L->w_down));
        if (S->b_down) TRY(f32_copy(S->b_down, 0, 0, &L->b_down));
        P(L->attn_norm, 0, "%slayers.%lld.input_layernorm.weight", pre, li);
        P(L->wq, 0, "%slayers.%lld.self_attn.q_proj.weight", pre, li);
        if (L->bq) P(L->bq, 0, "%slayers.%lld.self_attn.q_proj.bias", pre, li);
        P(L->wk, 0, "%slayers.%lld.self_attn.k_proj.weight", pre, li);
        if (L->bk) P(L->bk, 0, "%slayers.%lld.self_attn.k_proj.bias", pre, li);
        P(L->wv, 0, "%slayers.%lld.self_attn.v_proj.weight", pre, li);
        if (L->bv) P(L->bv, 0, "%slayers.%lld.self_attn.v_proj.bias", pre, li);
        P(L->wo, 0, "%slayers.%lld.self_attn.o_proj.weight", pre, li);
        if (L->bo) P(L->bo, 0, "%slayers.%lld.self_attn.o_proj.bias", pre, li);
        if (L->q_norm) P(L->q_norm, 0, "%slayers.%lld.self_attn.q_norm.weight", pre, li);
        if (L->k_norm) P(L->k_norm, 0, "%slayers.%lld.self_attn.k_norm.weight", pre, li);
        P(L->ffn_norm, 0, "%slayers.%lld.post_attention_layernorm.weight", pre, li);
        P(L->w_gate, 0, "%slayers.%lld.mlp.gate_proj.weight", pre, li);
        P(L->w_up, 0, "%slayers.%lld.mlp.up_proj.weight", pre, li);
        P(L->w_down, 0, "%slayers.%lld.mlp.down_proj.weight", pre, li);
        if (L->b_down) P(L->b_down, 0, "%slayers.%lld.mlp.down_proj.bias", pre, li);
    }
    TRY(f32_copy(src->out_norm, 0, 0, &m->out_norm));
    P(m->out_norm, 0, gpt2 ? "%sln_f.weight" : "%snorm.weight", pre);
    if (src->out_norm_b) {
        TRY(f32_copy(src->out_norm_b, 0, 0, &m->out_norm_b));
        P(m->out_norm_b, 0, "%sln_f.bias", pre);
    }
    if (!c->tied) {
        TRY(f32_copy(src->lm_head.t, 0, 0, &m->lm_head));
        P(m->lm_head, 0, "lm_head.weight");
    }
#undef P
done:
    return st;
}

/* transformers' init for a fresh model: matrices N(0, std), norm weights 1, biases 0. Names
 * ending in "norm.weight" or "ln_*.weight" are norms; 1-D "bias" tensors are zero. */
static wgt_status init_random(wgt_train_model *m, uint64_t seed, double std)
{
    wgt_generator *g;
    wgt_status st = wgt_generator_create(seed, &g);
    if (st) return st;
    for (int i = 0; i < m->n_params && !st; i++) {
        tm_param *p = &m->params[i];
        wgt_tensor *old = *p->slot, *fresh = NULL;
        int nd = wgt_tensor_ndim(old);
        const int64_t *sh = wgt_tensor_shape(old);
        size_t len = strlen(p->name);
        int is_bias = len > 5 && !strcmp(p->name + len - 5, ".bias");
        if (nd >= 2) st = wgt_rand_normal(m->ctx, g, WGT_F32, nd, sh, 0.0, std, &fresh);
        else st = wgt_full(m->ctx, WGT_F32, nd, sh, is_bias ? 0.0 : 1.0, &fresh);
        if (st) break;
        wgt_tensor_free(old);
        *p->slot = fresh;
    }
    wgt_generator_free(g);
    return st;
}

wgt_status wgt_train_model_open(wgt_context *ctx, const char *path, const wgt_train_init *init, wgt_train_model **out)
{
    if (!ctx || !path || !out) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_train_model_open: NULL argument");
    *out = NULL;
    size_t plen = strlen(path);
    int from_config = plen > 5 && !strcmp(path + plen - 5, ".json");
    wgt_model_options o = {0};
    o.max_ctx = 1; /* the training forward keeps no KV cache */
    o.random_type = "f32";
    wgt_model *src = NULL;
    wgt_status st = wgt_model_open_ex(ctx, path, &o, &src);
    if (st) return st;
    wgt_train_model *m = calloc(1, sizeof *m);
    if (!m) {
        wgt_model_free(src);
        return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    m->ctx = ctx;
    snprintf(m->source, sizeof m->source, "%s", path);
    m->source_is_gguf = !from_config && plen > 5 && !strcmp(path + plen - 5, ".gguf");
    st = from_model(src, m);
    if (!st) {
        m->tok = src->tok; /* the model's tokenizer, kept */
        src->tok = NULL;
    }
    wgt_model_free(src);
    if (!st && from_config)
        st = init_random(m, init ? init->seed : 0, init && init->std > 0 ? init->std : 0.02);
    if (st) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", wgt_errmsg());
        wgt_train_model_free(m);
        return wgt_error(st, "%s", msg);
    }
    *out = m;
    return WGT_OK;
}

void wgt_train_model_free(wgt_train_model *m)
{
    if (!m) return;
    for (int i = 0; i < m->n_params; i++) wgt_tensor_free(*m->params[i].slot);
    free(m->layers);
    wgt_tokenizer_free(m->tok);
    free(m);
}

int wgt_train_model_param_count(const wgt_train_model *m) { return m ? m->n_params : 0; }
const char *wgt_train_model_param_name(const wgt_train_model *m, int i)
{
    return m && i >= 0 && i < m->n_params ? m->params[i].name : NULL;
}
wgt_tensor *wgt_train_model_param(const wgt_train_model *m, int i)
{
    return m && i >= 0 && i < m->n_params ? *m->params[i].slot : NULL;
}
int wgt_train_model_param_is_conv1d(const wgt_train_model *m, int i)
{
    return m && i >= 0 && i < m->n_params ? m->params[i].conv1d : 0;
}
int64_t wgt_train_model_vocab(const wgt_train_model *m) { return m ? m->cfg.vocab : 0; }
int64_t wgt_train_model_max_positions(const wgt_train_model *m) { return m ? m->cfg.max_pos : 0; }
wgt_tokenizer *wgt_train_model_tokenizer(const wgt_train_model *m) { return m ? m->tok : NULL; }
void wgt_train_model_set_tokenizer(wgt_train_model *m, wgt_tokenizer *tok)
{
    if (!m) return;
    wgt_tokenizer_free(m->tok);
    m->tok = tok;
}
uint64_t wgt_train_model_numel(const wgt_train_model *m)
{
    uint64_t n = 0;
    for (int i = 0; m && i < m->n_params; i++) n += (uint64_t)wgt_tensor_numel(*m->params[i].slot);
    return n;
}

/* Bytes a training step needs on the device, estimated: f32 weights, gradients and up to two
 * optimizer state tensors per parameter (AdamW's moments), the activations the backward keeps
 * (per layer: about ten [B, L, D] and four [B, L, F] tensors, and two [B, H, L, L] for the
 * attention weights), and the logits with their softmax and gradient (three [B, L, V]). */
static void estimate(const wgt_train_model *m, int64_t B, int64_t L, double *total, double *largest)
{
    const wgt_model_config *c = &m->cfg;
    double P = (double)wgt_train_model_numel(m), BL = (double)B * (double)L;
    double layer = 4.0 * (BL * (10.0 * (double)c->dim + 4.0 * (double)c->ffn) +
                          2.0 * (double)B * (double)c->n_heads * (double)L * (double)L);
    double logits = 4.0 * BL * (double)c->vocab;
    *total = 16.0 * P + (double)c->n_layers * layer + 3.0 * logits;
    double att = 4.0 * (double)B * (double)c->n_heads * (double)L * (double)L, ffn = 4.0 * BL * (double)c->ffn;
    *largest = logits > att ? logits : att;
    if (ffn > *largest) *largest = ffn;
}

/* b bytes as "1.23 GiB" or, below one, "45.6 MiB" (a tiny model's needs read 0.00 GiB otherwise) */
static const char *size_str(double b, char *buf)
{
    if (b >= 1073741824.0) snprintf(buf, 32, "%.2f GiB", b / 1073741824.0);
    else snprintf(buf, 32, "%.1f MiB", b / 1048576.0);
    return buf;
}

wgt_status wgt_train_check_memory(const wgt_train_model *m, int64_t B, int64_t L, double *need_bytes)
{
    if (!m || B < 1 || L < 1) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_train_check_memory: bad argument");
    double total, largest;
    estimate(m, B, L, &total, &largest);
    if (need_bytes) *need_bytes = total;
    wgt_adapter_info info;
    wgt_status st = wgt_context_adapter_info(m->ctx, &info);
    if (st) return st;
    /* the ops bind each tensor whole: the largest must fit one storage binding, parameters (f32
     * masters, their gradients and optimizer state) as well as activations */
    double bind = (double)info.limits.max_storage_buffer_binding_size;
    for (int i = 0; i < wgt_train_model_param_count(m); i++) {
        const wgt_tensor *p = wgt_train_model_param(m, i);
        double bytes = 4.0 * (double)wgt_tensor_numel(p);
        if (bytes > bind)
            return wgt_error(WGT_ERR_LIMIT,
                             "the parameter %s (%lld x %lld, %.1f MiB in f32) is larger than the adapter's largest "
                             "storage binding of %.1f MiB: this adapter cannot train the model (a GPU binds up to "
                             "4 GiB; a smaller vocabulary or hidden size fits here)",
                             wgt_train_model_param_name(m, i), (long long)wgt_tensor_dim(p, 0),
                             (long long)(wgt_tensor_ndim(p) > 1 ? wgt_tensor_numel(p) / wgt_tensor_dim(p, 0) : 1),
                             bytes / 1048576.0, bind / 1048576.0);
    }
    if (largest > bind)
        return wgt_error(WGT_ERR_LIMIT,
                         "batch %lld x %lld needs a tensor of %.1f MiB (the logits [B, L, vocab], the attention "
                         "weights or the MLP activations), past the adapter's largest storage binding of %.1f MiB: "
                         "use a smaller --batch or --seq (about %lld sequences fit)",
                         (long long)B, (long long)L, largest / 1048576.0, bind / 1048576.0,
                         (long long)((double)B * bind / largest));
    /* WebGPU does not say how much memory the device has: WGT_MEMORY_LIMIT (bytes, or with a K/M/G/T
     * suffix, as for wgt generate) when set, else for a CPU adapter the host's physical memory; a GPU
     * without the variable is not checked */
    double budget = 0;
    int from_env = 0;
    st = mdl_memory_budget(&budget, &from_env);
    if (st) return st;
    if (!from_env && !info.is_cpu) budget = 0;
    const char *what = from_env ? "WGT_MEMORY_LIMIT" : "the host's memory (a CPU adapter)";
    double fixed = 16.0 * (double)wgt_train_model_numel(m);
    char b0[32], b1[32], b2[32], b3[32];
    if (budget > 0 && total > budget)
        return wgt_error(WGT_ERR_LIMIT,
                         "batch %lld x %lld needs about %s on the device (weights, gradients and optimizer state %s, "
                         "activations %s), more than the %s of %s: use a smaller --batch or --seq",
                         (long long)B, (long long)L, size_str(total, b0), size_str(fixed, b1),
                         size_str(total - fixed, b2), size_str(budget, b3), what);
    return WGT_OK;
}
