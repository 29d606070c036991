/* The training model's layout, shared by train.c (parameters, loading), train_forward.c (the
 * forward and loss) and train_save.c (Hugging Face output). */
#ifndef WGT_MODELS_TRAIN_INTERNAL_H
#define WGT_MODELS_TRAIN_INTERNAL_H

#include "models/model.h"

#define TM_MAX_PARAMS 4096

/* One layer's parameters, f32, contiguous, [out, in] for linear weights. gpt2 keeps c_attn as
 * one [3D, D] weight (wqkv) and bias [3D] (bqkv); the others have wq/wk/wv and their biases. */
typedef struct tm_layer {
    wgt_tensor *attn_norm, *attn_norm_b;   /* [D] */
    wgt_tensor *wq, *wk, *wv, *bq, *bk, *bv; /* [Hq hd, D], [Hkv hd, D] x2; biases or NULL */
    wgt_tensor *wqkv, *bqkv;               /* gpt2 */
    wgt_tensor *wo, *bo;                   /* [D, Hq hd] */
    wgt_tensor *q_norm, *k_norm;           /* [hd] (qwen3) */
    wgt_tensor *ffn_norm, *ffn_norm_b;     /* [D] */
    wgt_tensor *w_gate, *w_up, *w_down;    /* [F, D], [F, D], [D, F]; gpt2: no gate */
    wgt_tensor *b_up, *b_down;             /* gpt2 (b_down: mlp_bias models too) */
} tm_layer;

/* A parameter: its checkpoint name and the slot holding it. conv1d: stored transposed in the
 * checkpoint ([in, out], GPT-2's Conv1D). */
typedef struct tm_param {
    char name[128];
    wgt_tensor **slot;
    int conv1d;
} tm_param;

struct wgt_train_model {
    wgt_context *ctx;
    wgt_model_config cfg;          /* rope_interleaved is 0: q/k are in the Hugging Face layout */
    wgt_tensor *tok_emb;           /* [V, D] */
    wgt_tensor *pos_emb;           /* [max_pos, D] (gpt2) */
    wgt_tensor *out_norm, *out_norm_b;
    wgt_tensor *lm_head;           /* [V, D], NULL when tied to tok_emb */
    tm_layer *layers;              /* [n_layers] */
    tm_param params[TM_MAX_PARAMS];
    int n_params;
    wgt_tokenizer *tok;            /* owned, may be NULL */
    char source[1024];             /* the path the model came from */
    int source_is_gguf;
    int probed;                    /* fused_ok is known (tm_probe) */
    int fused_ok[6];               /* TM_EMBEDDING ..: the fused op records a backward node */
    /* set by the trainer for one step: */
    wgt_dtype compute;             /* activations' dtype: f32, or f16/bf16 (the parameters' slots then
                                    * hold half copies cast from the f32 masters for the step) */
    double dropout;                /* > 0 while recording: dropout after the embedding, the attention's
                                    * output projection and the MLP */
    wgt_generator *dropout_gen;    /* the step's generator (seeded from the seed and the step) */
    int dropout_blocks_only;       /* 1: none after the embedding */
};

/* The fused ops the training forward uses, by their composed stand-ins (train_ops.c). */
enum { TM_EMBEDDING, TM_RMS_NORM, TM_LAYER_NORM, TM_ROPE, TM_SDPA, TM_CROSS_ENTROPY, TM_N_FUSED };
/* Which fused ops record a node when an input requires grad (asked once per model; the
 * environment's WGT_TRAIN_COMPOSED=1 takes the composed forms for all, as a reference). */
void tm_probe(wgt_train_model *m);
/* Composed of recorded primitives (elementwise, reductions, matmul, views, cat): */
wgt_status tm_embedding(const wgt_tensor *w, const wgt_tensor *ids, wgt_tensor **out);
wgt_status tm_rms_norm(const wgt_tensor *x, const wgt_tensor *w, double eps, wgt_tensor **out);
wgt_status tm_layer_norm(const wgt_tensor *x, const wgt_tensor *w, const wgt_tensor *b, double eps, wgt_tensor **out);
/* cos, sin [L, hd/2] (constants), and x [..., L, hd] rotated with them (half-split pairs) */
wgt_status tm_rope_tables(wgt_context *ctx, int64_t L, int64_t hd, const wgt_rope_params *p, wgt_tensor **cos_t,
                          wgt_tensor **sin_t);
wgt_status tm_rope(const wgt_tensor *x, const wgt_tensor *cos_t, const wgt_tensor *sin_t, wgt_tensor **out);
wgt_status tm_attention(const wgt_tensor *q, const wgt_tensor *k, const wgt_tensor *v, wgt_tensor **out);
wgt_status tm_cross_entropy(const wgt_tensor *logits, const wgt_tensor *targets, wgt_tensor **out);
/* wgt_train_loss with targets equal to ignore_index not counted (WGT_NO_IGNORE_INDEX: all count). */
wgt_status tm_train_loss(wgt_train_model *m, const wgt_tensor *ids, const wgt_tensor *targets, int64_t ignore_index,
                         wgt_tensor **loss, wgt_tensor **logits_out);

#endif
