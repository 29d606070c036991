/* The model families: each entry names a family as Hugging Face (config.json's model_type) and
 * llama.cpp (GGUF general.architecture) call it, and sets what sets it apart from llama, for both
 * sources. The forward pass and the loaders read these features, never the family's name.
 *
 * Gemma, for instance: RMSNorm scales by (1 + w) (llama.cpp's converter stores 1 + w, so a GGUF
 * needs nothing), embeddings are multiplied by sqrt(hidden), the gated MLP is GeGLU with the tanh
 * GELU. Gemma 2 adds norms after attention and MLP, soft-capped attention scores and logits,
 * query_pre_attn_scalar and sliding-window layers alternating with global ones; Gemma 3 drops the
 * soft-capping, adds q/k norms, one global layer in six, and a rope base of its own (10000) for
 * the sliding layers. */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "models/model.h"

typedef struct family {
    const char *hf;   /* config.json model_type */
    const char *gguf; /* llama.cpp's general.architecture */
    wgt_arch arch;
    int gguf_interleaved; /* llama.cpp stores its q/k rows for rotating adjacent pairs (LLAMA_ROPE_TYPE_NORM) */
    /* the family's features; h is NULL for a GGUF file (its keys are read after, by the loader) */
    wgt_status (*set)(wgt_model_config *c, const wgt_hf_config *h, const char *where);
} family;

/* Which layers slide, from config.json's layer_types: every layer, all but every P-th, or all
 * from some layer on (the patterns the families use); anything else is refused rather than run
 * wrongly. */
wgt_status mdl_window_pattern(wgt_model_config *c, const unsigned char *sliding, int n, const char *what,
                              const char *where)
{
    int slides = 0;
    for (int i = 0; i < n; i++) slides += sliding[i] != 0;
    if (slides == 0) {
        c->window = 0;
        return WGT_OK;
    }
    int from = 0;
    while (from < n && !sliding[from]) from++;
    if (slides == n - from) { /* every layer from `from` on (qwen2's max_window_layers) */
        c->window_every = 0;
        c->window_from = from;
        return WGT_OK;
    }
    for (int p = 2; p <= n; p++) {
        int ok = 1;
        for (int i = 0; i < n && ok; i++) ok = (sliding[i] != 0) == ((i + 1) % p != 0);
        if (ok) {
            c->window_every = p;
            return WGT_OK;
        }
    }
    return wgt_error(WGT_ERR_UNSUPPORTED,
                     "%s: %s mixes sliding-window and global layers in a pattern wgt does not run (it runs "
                     "all sliding, or every P-th layer global)", where, what);
}

static wgt_status window_layers(wgt_model_config *c, const wgt_hf_config *h, int every, const char *where)
{
    c->window_every = every;
    if (!h || !h->n_layer_types) return WGT_OK;
    return mdl_window_pattern(c, h->layer_sliding, h->n_layer_types, "layer_types", where);
}

static wgt_status set_llama(wgt_model_config *c, const wgt_hf_config *h, const char *where)
{
    (void)c, (void)h, (void)where;
    return WGT_OK;
}

/* Mistral: llama with a sliding window on every layer (its GGUF is a llama one). */
static wgt_status set_mistral(wgt_model_config *c, const wgt_hf_config *h, const char *where)
{
    if (h && h->sliding_window) c->window = h->sliding_window;
    return window_layers(c, h, 0, where);
}

/* Qwen2: q/k/v biases. With use_sliding_window, the layers from max_window_layers on slide (or
 * those layer_types names); llama.cpp's qwen2 has no window, so its GGUF files have none. */
static wgt_status set_qwen2(wgt_model_config *c, const wgt_hf_config *h, const char *where)
{
    c->qkv_bias = 1;
    if (!h || h->use_sliding_window != 1 || h->sliding_window <= 0) return WGT_OK;
    c->window = h->sliding_window;
    if (h->n_layer_types) return window_layers(c, h, 0, where);
    c->window_from = h->max_window_layers;
    return WGT_OK;
}

static wgt_status set_qwen3(wgt_model_config *c, const wgt_hf_config *h, const char *where)
{
    (void)h, (void)where;
    c->qk_norm = 1;
    return WGT_OK;
}

/* What GPT-2, Phi-2 and GPT-NeoX share: LayerNorm, biases on every linear layer, a plain (not gated)
 * MLP with activation act, and their own tensor names (layout). */
static void layernorm_family(wgt_model_config *c, mdl_hf_layout layout, mdl_act act)
{
    c->hf_layout = layout;
    c->rms = 0;
    c->qkv_bias = c->o_bias = c->mlp_bias = 1;
    c->plain_mlp = 1;
    c->act = act;
}

/* RoPE on the first partial_rotary_factor of each head (Phi-2, GPT-NeoX). */
static void partial_rotary(wgt_model_config *c, const wgt_hf_config *h)
{
    if (h && h->partial_rotary_factor > 0) c->rope_dims = (int64_t)(c->head_dim * h->partial_rotary_factor);
}

static wgt_status set_gpt2(wgt_model_config *c, const wgt_hf_config *h, const char *where)
{
    (void)h, (void)where;
    layernorm_family(c, MDL_HF_GPT2, MDL_ACT_GELU_TANH);
    c->no_rope = 1;
    return WGT_OK;
}

/* Phi-2: one LayerNorm feeding attention and MLP in parallel, a plain GELU-tanh MLP, biases
 * everywhere (the output head too), RoPE on the first part of each head. */
static wgt_status set_phi(wgt_model_config *c, const wgt_hf_config *h, const char *where)
{
    (void)where;
    layernorm_family(c, MDL_HF_PHI, MDL_ACT_GELU_TANH);
    c->parallel = 1;
    partial_rotary(c, h);
    return WGT_OK;
}

static wgt_status set_gemma(wgt_model_config *c, const wgt_hf_config *h, const char *where)
{
    (void)h, (void)where;
    c->norm_offset = 1;
    c->embed_scale = sqrt((double)c->dim);
    c->act = MDL_ACT_GELU_TANH; /* whatever hidden_act says: transformers and llama.cpp use the tanh GELU */
    return WGT_OK;
}

static wgt_status set_gemma2(wgt_model_config *c, const wgt_hf_config *h, const char *where)
{
    set_gemma(c, h, where);
    c->post_norms = 1;
    if (h) {
        if (h->query_pre_attn_scalar > 0) c->attn_scale = 1 / sqrt(h->query_pre_attn_scalar);
        c->attn_softcap = h->attn_softcap;
        c->final_softcap = h->final_softcap;
        c->window = h->sliding_window;
    }
    return window_layers(c, h, 2, where);
}

static wgt_status set_gemma3(wgt_model_config *c, const wgt_hf_config *h, const char *where)
{
    wgt_status st = set_gemma2(c, h, where);
    if (st) return st;
    c->qk_norm = 1;
    c->rope_local_set = 1;
    c->rope_local.theta = h && h->rope_local_theta > 0 ? h->rope_local_theta : 10000;
    c->rope_local.truncate = 1;
    return window_layers(c, h, 6, where);
}

/* Phi-3: llama with q/k/v and gate/up each stored as one matrix (already the stacked layout wgt
 * computes with), and a sliding window on every layer when the config gives one. */
static wgt_status set_phi3(wgt_model_config *c, const wgt_hf_config *h, const char *where)
{
    c->fused_proj = 1;
    return set_mistral(c, h, where);
}

/* OLMo 2: norms only after attention and MLP, and q/k RMS norms over all heads at once. */
static wgt_status set_olmo2(wgt_model_config *c, const wgt_hf_config *h, const char *where)
{
    (void)h, (void)where;
    c->post_norms = c->no_pre_norm = 1;
    c->qk_norm = c->qk_norm_full = 1;
    return WGT_OK;
}

/* GPT-NeoX (Pythia): attention and MLP in parallel from two LayerNorms, the exact GELU, RoPE on
 * the first rotary_pct of each head, q/k/v interleaved per head in one matrix (reordered at load). */
static wgt_status set_gpt_neox(wgt_model_config *c, const wgt_hf_config *h, const char *where)
{
    (void)where;
    layernorm_family(c, MDL_HF_NEOX, MDL_ACT_GELU);
    c->parallel = 1;
    partial_rotary(c, h);
    if (h && h->use_parallel_residual == 0) c->parallel = 0; /* x + attn(ln1(x)), then + mlp(ln2(.)) */
    return WGT_OK;
}

/* StableLM: LayerNorms with biases, RoPE on the first partial_rotary_factor (0.25) of each head,
 * q/k/v biases with use_qkv_bias, optional per-head LayerNorms of q and k (qk_layernorm: one
 * weight per head), attention and MLP in parallel from one norm with use_parallel_residual.
 * (From a GGUF file the loader sees q/k norms and the parallel form in the tensors present.) */
static wgt_status set_stablelm(wgt_model_config *c, const wgt_hf_config *h, const char *where)
{
    (void)where;
    c->rms = 0;
    if (!h) return WGT_OK;
    c->rope_dims = (int64_t)(c->head_dim * (h->partial_rotary_factor > 0 ? h->partial_rotary_factor : 0.25));
    c->qk_norm = c->qk_norm_ln = h->qk_layernorm;
    c->parallel = h->use_parallel_residual == 1;
    return WGT_OK;
}

/* StarCoder2: LayerNorms with biases, biases on every linear layer (use_bias, default on), a
 * plain GELU-tanh MLP (mlp.c_fc, mlp.c_proj), a sliding window on every layer. */
static wgt_status set_starcoder2(wgt_model_config *c, const wgt_hf_config *h, const char *where)
{
    c->rms = 0;
    c->plain_mlp = 1;
    c->act = MDL_ACT_GELU_TANH;
    c->qkv_bias = c->o_bias = c->mlp_bias = !h || h->use_bias != 0;
    if (h && h->sliding_window) c->window = h->sliding_window;
    return window_layers(c, h, 0, where);
}

/* Granite: llama with four multipliers (embeddings, each residual branch, the attention scores
 * instead of 1/sqrt(head_dim), and the logits divided by logits_scaling); absent ones are 1, as
 * transformers' defaults. */
static wgt_status set_granite(wgt_model_config *c, const wgt_hf_config *h, const char *where)
{
    (void)where;
    if (!h) return WGT_OK; /* the GGUF keys set them */
    if (h->embedding_multiplier > 0 && h->embedding_multiplier != 1) c->embed_scale = h->embedding_multiplier;
    if (h->residual_multiplier > 0 && h->residual_multiplier != 1) c->residual_scale = h->residual_multiplier;
    c->attn_scale = h->attention_multiplier > 0 ? h->attention_multiplier : 1;
    if (h->logits_scaling > 0 && h->logits_scaling != 1) c->logit_scale = h->logits_scaling;
    return WGT_OK;
}

/* SmolLM3: llama whose every fourth layer runs without RoPE (no_rope_layers: 1 where a layer
 * rotates; llama.cpp fixes the period at 4). Other periods are read, irregular lists refused. */
static wgt_status set_smollm3(wgt_model_config *c, const wgt_hf_config *h, const char *where)
{
    c->nope_every = 4;
    if (!h) return WGT_OK;
    if (h->no_rope_layer_interval > 0) c->nope_every = (int)h->no_rope_layer_interval;
    int n = h->n_no_rope_layers;
    if (!n) return WGT_OK;
    int all = 1;
    for (int i = 0; i < n; i++) all &= h->rope_layers[i] != 0;
    if (all) {
        c->nope_every = 0;
        return WGT_OK;
    }
    for (int p = 1; p <= n; p++) {
        int ok = 1;
        for (int i = 0; i < n && ok; i++) ok = h->rope_layers[i] == ((i + 1) % p != 0);
        if (ok) {
            c->nope_every = p;
            return WGT_OK;
        }
    }
    return wgt_error(WGT_ERR_UNSUPPORTED, "%s: no_rope_layers is not 'every P-th layer without RoPE', the pattern wgt "
                     "runs", where);
}

/* The mixtures of experts: the router and experts' sizes from config.json (from a GGUF file the
 * loader reads llama.cpp's expert_* keys); renormalising the top-k weights is the family's
 * default (norm_default) unless norm_topk_prob says otherwise. Layouts with dense layers among
 * the sparse ones are refused rather than run wrongly. */
static wgt_status set_moe(wgt_model_config *c, const wgt_hf_config *h, int norm_default, const char *where)
{
    c->expert_norm = norm_default;
    if (!h) return WGT_OK;
    if (h->n_experts < 1 || h->n_experts_used < 1 || h->n_experts_used > h->n_experts)
        return wgt_error(WGT_ERR_FORMAT, "%s: a mixture of experts needs num_experts >= num_experts_per_tok >= 1 (got "
                         "%lld and %lld)", where, (long long)h->n_experts, (long long)h->n_experts_used);
    if (h->decoder_sparse_step != 1 || h->n_mlp_only_layers > 0)
        return wgt_error(WGT_ERR_UNSUPPORTED, "%s: decoder_sparse_step %lld / mlp_only_layers: dense layers among the "
                         "sparse ones are not supported (wgt runs every layer sparse)", where,
                         (long long)h->decoder_sparse_step);
    c->n_experts = h->n_experts;
    c->n_experts_used = h->n_experts_used;
    c->expert_ffn = h->moe_intermediate_size > 0 ? h->moe_intermediate_size : h->intermediate_size;
    if (h->norm_topk_prob >= 0) c->expert_norm = h->norm_topk_prob;
    return WGT_OK;
}

/* Mixtral: Mistral whose MLP is 8 experts, top 2, their weights renormalised (llama.cpp: a llama
 * GGUF with expert tensors). */
static wgt_status set_mixtral(wgt_model_config *c, const wgt_hf_config *h, const char *where)
{
    wgt_status st = set_moe(c, h, 1, where);
    return st ? st : set_mistral(c, h, where);
}

/* Qwen2-MoE: qwen2 with routed experts (top-k weights as the softmax gives them, unless
 * norm_topk_prob) and a shared expert of shared_expert_intermediate_size, gated by
 * sigmoid(shared_expert_gate(x)). */
static wgt_status set_qwen2moe(wgt_model_config *c, const wgt_hf_config *h, const char *where)
{
    c->qkv_bias = 1;
    wgt_status st = set_moe(c, h, 0, where);
    if (st || !h) return st;
    if (h->shared_expert_intermediate_size > 0) {
        c->shared_expert = 1;
        c->ffn = h->shared_expert_intermediate_size;
    }
    return WGT_OK;
}

/* Qwen3-MoE: qwen3 (q/k norms) with routed experts, renormalised by default (norm_topk_prob). */
static wgt_status set_qwen3moe(wgt_model_config *c, const wgt_hf_config *h, const char *where)
{
    c->qk_norm = 1;
    return set_moe(c, h, 1, where);
}

static const family families[] = {
    {"llama", "llama", WGT_ARCH_LLAMA, 1, set_llama},
    {"mistral", "llama", WGT_ARCH_LLAMA, 1, set_mistral},
    {"qwen2", "qwen2", WGT_ARCH_QWEN2, 0, set_qwen2},
    {"qwen3", "qwen3", WGT_ARCH_QWEN3, 0, set_qwen3},
    {"gpt2", "gpt2", WGT_ARCH_GPT2, 0, set_gpt2},
    {"gemma", "gemma", WGT_ARCH_GEMMA, 0, set_gemma},
    {"gemma2", "gemma2", WGT_ARCH_GEMMA2, 0, set_gemma2},
    {"gemma3_text", "gemma3", WGT_ARCH_GEMMA3, 0, set_gemma3},
    {"phi3", "phi3", WGT_ARCH_PHI3, 0, set_phi3},
    {"phi", "phi2", WGT_ARCH_PHI2, 0, set_phi},
    {"olmo2", "olmo2", WGT_ARCH_OLMO2, 0, set_olmo2},
    {"gpt_neox", "gptneox", WGT_ARCH_GPTNEOX, 0, set_gpt_neox},
    {"stablelm", "stablelm", WGT_ARCH_STABLELM, 0, set_stablelm},
    {"starcoder2", "starcoder2", WGT_ARCH_STARCODER2, 0, set_starcoder2},
    {"granite", "granite", WGT_ARCH_GRANITE, 1, set_granite},
    {"smollm3", "smollm3", WGT_ARCH_SMOLLM3, 1, set_smollm3},
    {"mixtral", "llama", WGT_ARCH_LLAMA, 1, set_mixtral},
    {"qwen2_moe", "qwen2moe", WGT_ARCH_QWEN2MOE, 0, set_qwen2moe},
    {"qwen3_moe", "qwen3moe", WGT_ARCH_QWEN3MOE, 0, set_qwen3moe},
};
#define N_FAMILIES (sizeof families / sizeof families[0])

/* The families' names as config.json (gguf 0) or GGUF files (gguf 1) spell them, each once, for
 * the messages that list what wgt runs. */
static const char *family_names(int gguf, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < N_FAMILIES; i++) {
        const char *name = gguf ? families[i].gguf : families[i].hf;
        int seen = 0;
        for (size_t j = 0; j < i; j++) seen |= !strcmp(name, gguf ? families[j].gguf : families[j].hf);
        if (seen || n >= cap) continue;
        int w = snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", name);
        if (w > 0) n += (size_t)w;
    }
    return buf;
}

const char *mdl_arch_gguf_name(wgt_arch a)
{
    for (size_t i = 0; i < N_FAMILIES; i++)
        if (families[i].arch == a) return families[i].gguf;
    return "?";
}

wgt_status mdl_family_from_hf(const char *model_type, const wgt_hf_config *h, const char *where, wgt_model_config *c)
{
    for (size_t i = 0; i < N_FAMILIES; i++)
        if (!strcmp(model_type, families[i].hf)) {
            c->arch = families[i].arch;
            return families[i].set(c, h, where);
        }
    if (!strcmp(model_type, "gemma3"))
        return wgt_error(WGT_ERR_UNSUPPORTED, "%s: model_type 'gemma3' is the multimodal Gemma 3: wgt runs its text "
                         "model alone (model_type 'gemma3_text', e.g. Gemma 3 1B)", where);
    char names[512];
    return wgt_error(WGT_ERR_UNSUPPORTED, "%s: model_type '%s' (%s) is not supported: wgt runs %s", where, model_type,
                     h ? h->architecture : "", family_names(0, names, sizeof names));
}

wgt_status mdl_family_from_gguf(const char *arch, const char *where, wgt_model_config *c)
{
    for (size_t i = 0; i < N_FAMILIES; i++)
        if (!strcmp(arch, families[i].gguf)) {
            c->arch = families[i].arch;
            c->rope_interleaved = families[i].gguf_interleaved;
            return families[i].set(c, NULL, where);
        }
    char names[512];
    return wgt_error(WGT_ERR_UNSUPPORTED, "%s: architecture '%s' is not supported: wgt runs %s", where, arch,
                     family_names(1, names, sizeof names));
}

void mdl_config_copy(wgt_model_config *dst, const wgt_model_config *src)
{
    *dst = *src;
    if (src->rope.freq_factors) dst->rope.freq_factors = dst->rope_factors;
}

int mdl_layer_slides(const wgt_model_config *c, int64_t li)
{
    if (!c->window || li < c->window_from) return 0;
    return c->window_every <= 0 || (li + 1) % c->window_every != 0;
}

int mdl_layer_ropes(const wgt_model_config *c, int64_t li)
{
    return !c->no_rope && !(c->nope_every > 0 && (li + 1) % c->nope_every == 0);
}
