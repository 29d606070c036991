/* Decoder-only language models as builders over ops: llama (Llama 2/3, TinyLlama, SmolLM2, Mistral
 * with its sliding window), qwen2 (q/k/v biases), qwen3 (q/k RMS norms), gpt2 (learned positions,
 * LayerNorm, GELU-tanh, Conv1D weights), gemma, gemma2, gemma3_text, phi3, phi, olmo2, gpt_neox,
 * stablelm, starcoder2, granite, smollm3, and the mixtures of experts mixtral, qwen2_moe, qwen3_moe. Weights from a Hugging Face
 * directory or a GGUF file. What sets one family apart from another is written once, in its
 * entry of family.c; the forward pass reads the features, never the family. */
#ifndef WGT_MODELS_MODEL_H
#define WGT_MODELS_MODEL_H

#include "cpu/cpu.h"
#include "ops/api.h"
#include "wgt.h"


typedef enum wgt_arch {
    WGT_ARCH_LLAMA, WGT_ARCH_QWEN2, WGT_ARCH_QWEN3, WGT_ARCH_GPT2, WGT_ARCH_GEMMA, WGT_ARCH_GEMMA2, WGT_ARCH_GEMMA3,
    WGT_ARCH_PHI3, WGT_ARCH_PHI2, WGT_ARCH_OLMO2, WGT_ARCH_GPTNEOX, WGT_ARCH_STABLELM, WGT_ARCH_STARCODER2,
    WGT_ARCH_GRANITE, WGT_ARCH_SMOLLM3, WGT_ARCH_QWEN2MOE, WGT_ARCH_QWEN3MOE, WGT_ARCH_COUNT
} wgt_arch;

/* How a Hugging Face checkpoint names its tensors (the loader that reads it). */
typedef enum mdl_hf_layout { MDL_HF_LLAMA, MDL_HF_GPT2, MDL_HF_PHI, MDL_HF_NEOX } mdl_hf_layout;
/* (starcoder2 and stablelm use the llama layout: LayerNorm biases and starcoder2's mlp.c_fc /
 * mlp.c_proj are read when the features ask for them) */

/* The MLP's activation: act(gate) * up, or act(up) for a plain MLP. */
typedef enum mdl_act { MDL_ACT_SILU, MDL_ACT_GELU_TANH, MDL_ACT_GELU } mdl_act;

typedef struct wgt_model_config {
    wgt_arch arch;
    int64_t dim;        /* hidden size */
    int64_t n_layers;
    int64_t n_heads;
    int64_t n_kv_heads;
    int64_t head_dim;
    int64_t ffn;        /* intermediate size */
    int64_t vocab;
    int64_t max_pos;
    double norm_eps;
    int rms;            /* RMSNorm (else LayerNorm with bias) */
    int tied;           /* lm_head = token embedding */
    int qkv_bias;       /* q/k/v projections carry biases */
    int o_bias, mlp_bias;
    int qk_norm;        /* qwen3: RMSNorm over head_dim of q and k */
    int rope_interleaved; /* GGUF llama weights are permuted for interleaved pairs */
    wgt_rope_params rope;
    /* a GGUF file's rope_freqs.weight (rope.freq_factors points here: a copy of the config must
     * point it at its own array, mdl_config_copy) */
    float rope_factors[256];
    /* features a family sets (family.c); zero is the llama behaviour */
    int norm_offset;    /* RMSNorm scales by (1 + w): Hugging Face stores w, GGUF 1 + w (added at load) */
    double embed_scale; /* token embeddings multiplied by this (gemma: sqrt(dim)); 0: not scaled */
    mdl_act act;        /* gated MLP activation */
    int post_norms;     /* RMSNorms on the attention and MLP outputs before their residual adds */
    double attn_scale;  /* attention scores' scale; 0: 1 / sqrt(head_dim) */
    double attn_softcap, final_softcap; /* scores / logits = cap * tanh(x / cap); 0: none */
    int64_t window;     /* sliding-window attention: query i sees keys j > i - window; 0: none */
    int window_every;   /* which layers slide: 0 every layer, P: layer i unless (i + 1) % P == 0 */
    int64_t window_from; /* and none below this layer (qwen2's max_window_layers) */
    int rope_local_set; /* sliding layers rotate with rope_local (gemma3) */
    int fused_proj;     /* q/k/v stored as one matrix [q; k; v] and gate/up as one [gate; up] (phi3) */
    mdl_hf_layout hf_layout;
    int no_rope;        /* learned positions instead of RoPE (gpt2) */
    int64_t rope_dims;  /* leading dims of each head that RoPE rotates (partial rotary); 0: all */
    int plain_mlp;      /* MLP is down(act(up)), no gate (gpt2, phi) */
    int parallel;       /* attention and MLP both add to one residual (phi: from one norm; gpt_neox: two) */
    int no_pre_norm;    /* no norm before attention and MLP, only the post-norms (olmo2) */
    int qk_norm_full;   /* the q/k RMS norms span the whole projection, not one head (olmo2) */
    int qk_norm_ln;     /* the q/k norms are LayerNorms without bias, weights [heads, head_dim] (stablelm) */
    int nope_every;     /* P: every P-th layer ((i + 1) % P == 0) runs without RoPE (smollm3); 0: none */
    double residual_scale; /* attention and MLP outputs scaled by this before their residual adds (granite); 0: 1 */
    double logit_scale; /* logits divided by this (granite's logits_scaling); 0: 1 */
    wgt_rope_params rope_local;
    /* mixture of experts (mixtral, qwen2_moe, qwen3_moe): each layer's MLP is the routed sum of
     * n_experts_used of n_experts SwiGLU experts of size expert_ffn (softmax over all experts'
     * router logits, the top k kept, renormalised to sum 1 with expert_norm), plus (qwen2_moe) a
     * shared SwiGLU expert of size ffn scaled by sigmoid(its gate); 0 experts: a dense MLP */
    int64_t n_experts, n_experts_used, expert_ffn;
    int expert_norm;
    int shared_expert;
    int32_t bos;        /* -1 if none */
    int32_t eos[8];
    int n_eos;
} wgt_model_config;

/* A weight a linear layer reads: a float tensor [out, in] (q == WGT_FTYPE_F32), or the raw blocks
 * of a GGUF quantized type as wgt_qweight_upload makes them (u8 [out, row_bytes]), which
 * wgt_qlinear dequantises inside its kernel: quantized weights are never expanded in memory. */
typedef struct mdl_weight {
    wgt_tensor *t;
    wgt_ftype q;
} mdl_weight;

/* The format of a weight's values: its GGUF block type, or the float tensor's dtype as a wgt_ftype
 * (f32, f16, bf16; what src/ops/qlinear_moe.c takes). */
static inline wgt_ftype mdl_expert_type(const mdl_weight *w)
{
    if (w->q != WGT_FTYPE_F32 || !w->t) return w->q;
    wgt_dtype d = wgt_tensor_dtype(w->t);
    return d == WGT_F16 ? WGT_FTYPE_F16 : d == WGT_BF16 ? WGT_FTYPE_BF16 : WGT_FTYPE_F32;
}

typedef struct wgt_layer_weights {
    wgt_tensor *attn_norm, *attn_norm_b;  /* [dim] */
    mdl_weight wq, wk, wv, wo;            /* [out, in] */
    mdl_weight wqkv;                      /* q, k and v stacked [qd + 2 kd, dim] (one matmul), when
                                             they share a type; then wq, wk, wv are NULL */
    wgt_tensor *bqkv;                     /* their biases stacked, or NULL */
    mdl_weight w_gu;                      /* gate and up stacked [2 ffn, dim], likewise */
    wgt_tensor *bq, *bk, *bv, *bo;        /* [out] or NULL */
    wgt_tensor *q_norm, *k_norm;          /* [head_dim] (qwen3, gemma3) */
    wgt_tensor *post_attn_norm, *post_ffn_norm; /* [dim] (post_norms) */
    wgt_tensor *ffn_norm, *ffn_norm_b;    /* [dim] */
    mdl_weight w_gate, w_up, w_down;      /* [ffn, dim], [ffn, dim], [dim, ffn]; gpt2: no gate */
    wgt_tensor *b_up, *b_down;            /* gpt2 */
    /* mixture of experts: router [E, dim] (f32); every expert's gate rows then every expert's up
     * rows [2 E F, dim] (one matmul gives all experts' SwiGLU inputs); the experts' down
     * projections side by side [dim, E F] (one matmul sums the routed, weighted experts);
     * sh_gate [1, dim] the shared expert's gate (its MLP is w_gate/w_up/w_down above) */
    mdl_weight router, exp_gu, exp_down, sh_gate;
    wgt_tensor *k_cache, *v_cache;        /* [n_kv_heads, max_ctx, head_dim] f32 */
} wgt_layer_weights;

struct wgt_model {
    wgt_context *ctx;
    wgt_model_config cfg;
    wgt_tensor *tok_emb;                  /* [vocab, dim] float, or NULL when quantized: */
    void *tok_emb_blocks;                 /* host copy of a quantized table, rows dequantised per step */
    wgt_ftype tok_emb_q;
    uint64_t tok_emb_row_bytes;
    wgt_tensor *pos_emb;                  /* [max_pos, dim] (gpt2) */
    wgt_tensor *out_norm, *out_norm_b;    /* [dim] */
    mdl_weight lm_head;                   /* [vocab, dim] (the token embedding when tied) */
    wgt_tensor *lm_head_b;                /* [vocab] or NULL (phi) */
    wgt_layer_weights *layers;            /* [n_layers] */
    int64_t max_ctx;                      /* KV cache length */
    int64_t n_past;                       /* tokens in the cache */
    int32_t *cache_ids;                   /* [max_ctx]: the ids whose keys and values are cached */
    wgt_tokenizer *tok;                   /* NULL when the model has none */
    char *tok_error;                      /* why a tokenizer the model ships did not load, or NULL */
    int random;                           /* weights from a config.json alone */
    uint64_t weight_bytes;                /* bytes of weights on the device */
    int dequantize;                       /* quantized weights expanded to f32 (a reference path) */
    int f32_weights;                      /* f16/bf16 weights expanded to f32 (wgt_model_options) */
    int moe_kernels;                      /* experts through src/ops/qlinear_moe.c (read in place), of
                                           * every format: 1 (default, as measured on the H200), 0 none
                                           * (WGT_MOE_KERNELS=0) */
};

/* 1 when layer W's experts go through src/ops/qlinear_moe.c's kernels (every format reads in place
 * or none: W is there for a rule by format, which the H200's figures did not need) */
#define MDL_MOE_KERNELS_ON(m, W) ((void)(W), (m)->moe_kernels)

/* ---- families (family.c) ---- */

/* The family of a config.json's model_type or a GGUF's general.architecture, with its features
 * set in c (arch and the feature fields above); WGT_ERR_UNSUPPORTED naming the families otherwise.
 * h (may be NULL: GGUF) gives what a Hugging Face config adds to the family's defaults. */
wgt_status mdl_family_from_hf(const char *model_type, const wgt_hf_config *h, const char *where, wgt_model_config *c);
wgt_status mdl_family_from_gguf(const char *arch, const char *where, wgt_model_config *c);
/* llama.cpp's general.architecture / Hugging Face's model_type of an arch. */
const char *mdl_arch_gguf_name(wgt_arch a);
/* 1 when layer li attends through the sliding window. */
int mdl_layer_slides(const wgt_model_config *c, int64_t li);
/* *dst = *src, with rope.freq_factors pointing at dst's own rope_factors. */
void mdl_config_copy(wgt_model_config *dst, const wgt_model_config *src);
/* window_every / window_from (or no window) from per-layer flags (1: the layer slides), as
 * config.json's layer_types or a GGUF file's attention.sliding_window_pattern give them; what
 * names the source in the refusal of a pattern wgt does not run. */
wgt_status mdl_window_pattern(wgt_model_config *c, const unsigned char *sliding, int n, const char *what,
                              const char *where);
/* 1 when layer li rotates q and k (RoPE). */
int mdl_layer_ropes(const wgt_model_config *c, int64_t li);

/* ---- hyper-parameters and memory (validate.c) ---- */

/* The configuration of a Hugging Face config.json (unchecked: see mdl_validate_config); where
 * names it in messages. */
wgt_status mdl_config_from_hf(const wgt_hf_config *h, const char *where, wgt_model_config *c);
/* Every count positive and below 2^31, heads a multiple of kv heads, head size consistent (even
 * for RoPE; heads x head size = hidden for gpt2), epsilon and rope theta finite and positive,
 * bos/eos ids inside the vocabulary: WGT_ERR_FORMAT naming the field otherwise. */
wgt_status mdl_validate_config(const wgt_model_config *c, const char *where);
/* WGT_MEMORY_LIMIT (bytes, or with a K/M/G/T suffix; *from_env 1) when set, else the host's memory. */
wgt_status mdl_memory_budget(double *out, int *from_env);

/* Bytes a model needs on the device, estimated before loading. */
typedef struct mdl_memory {
    double weights, kv_cache, activations, total;
} mdl_memory;
/* n_caches: KV caches of ctx tokens (the model's own and wgt_batch's slots). */
void mdl_estimate_memory(const wgt_model_config *c, double weight_bytes, int64_t ctx, int64_t n_caches, mdl_memory *out);
/* Bytes of the random weights load_random makes of type for the configuration. */
double mdl_random_weight_bytes(const wgt_model_config *c, wgt_ftype type);
/* WGT_ERR_LIMIT with the figures when the estimate exceeds the budget (WGT_MEMORY_LIMIT, else
 * the host's physical memory). */
wgt_status mdl_check_memory(const wgt_model_config *c, double weight_bytes, int64_t ctx, int64_t n_caches,
                            const char *where);

/* A decode step whose one input id is on the device (the id the previous step sampled), when
 * mdl_can_forward_dev: the host records it while the device still runs the previous step. */
int mdl_can_forward_dev(const wgt_model *m);
/* 1 when a one-token step can fuse each norm, SwiGLU and residual add into a matmul (wgt_fused_linear). */
int mdl_fused_decode(const wgt_model *m);
/* 1 when the first layer's attention weights are f16, bf16 or GGUF blocks: prefill attention may
 * then round q, k and v to f16 (wgt_sdpa_params.half_tiles), as llama.cpp's f16 KV cache does;
 * f32 models keep f32 attention. */
int mdl_half_attention(const wgt_model *m);
/* Positions below which a captured decode step (wgt_sampling.graph) replays correctly for any
 * position of its bucket (mdl_decode_graph_bucket): its work depends on the position only through the uniform fields the
 * ops declare as graph scalars (qkv rotation and cache rows, the attention's key count). 0: not
 * capturable (a window, learned positions, a path whose views move with the position). */
int64_t mdl_decode_capture_limit(const wgt_model *m);
/* The bucket of position pos: a step captured at one position replays at every position of its
 * bucket (0 up to 256 keys, where attention is one kernel; past them the attention's split
 * length, the same for every position on most models: op_sdpa_decode_bucket). */
int64_t mdl_decode_graph_bucket(const wgt_model *m, int64_t pos);
/* One decode step from the id on the device; token non-NULL: *token (i32 [1]) gets the greedy
 * token (the first largest logit) where the output layer's kernel gives it, else stays NULL. */
wgt_status mdl_forward_dev(wgt_model *m, const wgt_tensor *id_dev, wgt_tensor **logits, wgt_tensor **token);

/* Draw the next token on the device from logits [1, vocab] f32 with the settings (temperature 0:
 * the first maximum); hist holds the n_hist ids seen so far (repetition penalty), of which the
 * last step were generated (frequency and presence penalties); step also picks the noise stream.
 * *out: i32 [1]. */
wgt_status wgt_sample_gpu(const wgt_tensor *logits, const wgt_tensor *hist, int64_t n_hist, const wgt_sampling *sp,
                          uint32_t step, wgt_tensor **out);

/* ---- pieces of the forward pass (forward.c), for the batched layer loop (batch.c) ---- */
/* The token embedding's rows at ids [L] (ids_t: the same ids on the device) as f32 [L, dim]. */
wgt_status mdl_embed(const wgt_model *m, const wgt_tensor *ids_t, const int32_t *ids, int64_t L, wgt_tensor **out);
/* The model's norm (RMSNorm, or LayerNorm with bias b) over the last dim. */
wgt_status mdl_norm(const wgt_model *m, const wgt_tensor *x, const wgt_tensor *w, const wgt_tensor *b, wgt_tensor **out);
/* *sum = x + y and *out = norm(*sum). */
wgt_status mdl_add_norm(const wgt_model *m, const wgt_tensor *x, const wgt_tensor *y, const wgt_tensor *w,
                        const wgt_tensor *b, wgt_tensor **sum, wgt_tensor **out);
/* out [L, out] = x [L, in] @ w^T + b, float or quantized weights. */
wgt_status mdl_linear(const wgt_tensor *x, const mdl_weight *w, const wgt_tensor *b, wgt_tensor **out);
/* generate.c's host sampler for one step, the seed advanced by step earlier draws; the last step
 * ids of hist are the generated ones (the frequency and presence penalties count them). */
wgt_status mdl_sample_host(float *logits, int64_t V, const wgt_sampling *sp, const int32_t *hist, int64_t n_hist,
                           uint32_t step, int32_t *token);
/* 1 when the settings pick the argmax of the logits as they are: temperature 0 and no penalty. */
static inline int mdl_sampling_is_plain_greedy(const wgt_sampling *sp)
{
    return !sp->json && sp->temperature <= 0 && (sp->repeat_penalty <= 0 || sp->repeat_penalty == 1.0f) &&
           sp->frequency_penalty == 0 && sp->presence_penalty == 0;
}
/* batch.c: 1 runs each sequence through wgt_model_forward (the reference the tests compare with). */
void mdl_batch_set_sequential(wgt_batch *b, int on);
/* on: decode rows attend per sequence, as prefill chunks do, instead of in one dispatch over the
 * slots (mdl_attention_slots): a test's and a measurement's reference. */
void mdl_batch_set_per_sequence(wgt_batch *b, int on);
/* Batches created after this call group their slots' caches as if the device's storage binding
 * limit were bytes (0: the device's own): a test's way to split the caches without gigabytes. */
void mdl_batch_set_binding_limit(uint64_t bytes);
/* The groups of slots whose caches share one tensor a layer (0: every slot has its own). */
int mdl_batch_cache_groups(const wgt_batch *b);
/* Decode attention of R rows over many slots' caches in one dispatch (batch_attn.c,
 * src/kernels/models_attention_slots.wgsl): q [Hq, R, D], k and v [Hkv, R, D] (the rows' new keys, rotated,
 * and values; f32, unit feature stride), info i32: row r's position info[r] and slot
 * info[slots_at + r]; kc, vc [slots, Hkv, ctx, D] f32 whole contiguous caches. Row r attends to its slot's
 * keys 0 .. position - 1 and its own; its key and value are written into the caches at its
 * position. *out [R, Hq * D] f32. Rows must be of distinct slots. */
wgt_status mdl_attention_slots(const wgt_tensor *q, const wgt_tensor *k, const wgt_tensor *v, const wgt_tensor *info,
                               int64_t slots_at, int64_t R, wgt_tensor *kc, wgt_tensor *vc, double scale,
                               wgt_tensor **out);
/* 1 when mdl_attention_slots runs on ctx for this head size (a GPU context that allows barriers). */
int mdl_attention_slots_ok(wgt_context *ctx, int64_t head_dim);

#endif
