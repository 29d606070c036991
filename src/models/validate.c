/* A model's hyper-parameters checked in one place, before anything is sized from them: the loader
 * (Hugging Face config.json, a config.json alone, GGUF metadata), `wgt convert` and `wgt bench -m
 * config.json` all pass through here, so a configuration one accepts the others accept too. Then
 * the memory the model needs (weights, KV cache, activations) is estimated and refused with its
 * figures before a byte is allocated: a typo of num_hidden_layers must not allocate for minutes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "models/model.h"

/* Each field under both of its names, so the message points at the key the user wrote. */
#define F_DIM "hidden_size (GGUF: embedding_length)"
#define F_LAYERS "num_hidden_layers (GGUF: block_count)"
#define F_HEADS "num_attention_heads (GGUF: attention.head_count)"
#define F_KV "num_key_value_heads (GGUF: attention.head_count_kv)"
#define F_HEAD_DIM "head_dim (GGUF: attention.key_length)"
#define F_FFN "intermediate_size (GGUF: feed_forward_length)"
#define F_VOCAB "vocab_size (GGUF: rows of token_embd.weight)"
#define F_POS "max_position_embeddings (GGUF: context_length)"

/* Counts index int32 shapes and u32 kernel indices: each stays below 2^31. */
static wgt_status count_in_range(const char *where, const char *field, int64_t v, int64_t lo)
{
    if (v < lo || v > INT32_MAX)
        return wgt_error(WGT_ERR_FORMAT, "%s: %s is %lld: it must be from %lld to %d", where, field, (long long)v,
                         (long long)lo, INT32_MAX);
    return WGT_OK;
}

static wgt_status positive_real(const char *where, const char *field, double v, double hi)
{
    if (!isfinite(v) || v <= 0 || v > hi)
        return wgt_error(WGT_ERR_FORMAT, "%s: %s is %g: it must be a finite number above 0 and at most %g", where,
                         field, v, hi);
    return WGT_OK;
}

#define TRY(x)                                                                                     \
    do {                                                                                           \
        wgt_status st_ = (x);                                                                      \
        if (st_) return st_;                                                                       \
    } while (0)

wgt_status mdl_validate_config(const wgt_model_config *c, const char *where)
{
    TRY(count_in_range(where, F_DIM, c->dim, 1));
    TRY(count_in_range(where, F_LAYERS, c->n_layers, 1));
    TRY(count_in_range(where, F_HEADS, c->n_heads, 1));
    TRY(count_in_range(where, F_KV, c->n_kv_heads, 1));
    TRY(count_in_range(where, F_HEAD_DIM, c->head_dim, 1));
    TRY(count_in_range(where, F_FFN, c->ffn, 1));
    TRY(count_in_range(where, F_VOCAB, c->vocab, 1));
    if (c->n_experts) { /* the experts' stacked weights are one matrix of 2 E F rows */
        TRY(count_in_range(where, "num_experts (GGUF: expert_count)", c->n_experts, 1));
        TRY(count_in_range(where, "num_experts_per_tok (GGUF: expert_used_count)", c->n_experts_used, 1));
        TRY(count_in_range(where, "moe_intermediate_size (GGUF: expert_feed_forward_length)", c->expert_ffn, 1));
        if (c->n_experts_used > c->n_experts || c->n_experts > 4096 || 2 * c->n_experts * c->expert_ffn > INT32_MAX)
            return wgt_error(WGT_ERR_FORMAT, "%s: %lld experts of %lld, %lld used: wgt takes at most 4096 experts, "
                             "no more used than there are, 2 x experts x size below 2^31", where,
                             (long long)c->n_experts, (long long)c->expert_ffn, (long long)c->n_experts_used);
    }
    TRY(count_in_range(where, F_POS, c->max_pos, c->no_rope ? 1 : 0));
    /* grouped-query attention: each kv head serves a whole number of query heads */
    if (c->n_kv_heads > c->n_heads || c->n_heads % c->n_kv_heads)
        return wgt_error(WGT_ERR_FORMAT, "%s: %s (%lld) is not a multiple of %s (%lld)", where, F_HEADS,
                         (long long)c->n_heads, F_KV, (long long)c->n_kv_heads);
    if (c->n_heads * c->head_dim > INT32_MAX)
        return wgt_error(WGT_ERR_FORMAT, "%s: %lld heads of %lld make rows past 2^31", where, (long long)c->n_heads,
                         (long long)c->head_dim);
    if (c->arch == WGT_ARCH_GPT2 && c->n_heads * c->head_dim != c->dim) /* c_attn splits the hidden size */
        return wgt_error(WGT_ERR_FORMAT, "%s: %s %lld is not %s %lld x %s %lld, as gpt2 needs", where, F_DIM,
                         (long long)c->dim, F_HEADS, (long long)c->n_heads, F_HEAD_DIM, (long long)c->head_dim);
    if (!c->no_rope && c->head_dim % 2) /* RoPE rotates pairs */
        return wgt_error(WGT_ERR_FORMAT, "%s: %s is %lld: rotary embeddings need an even head size", where,
                         F_HEAD_DIM, (long long)c->head_dim);
    if (!c->no_rope && (c->rope_dims < 0 || c->rope_dims > c->head_dim || c->rope_dims % 2))
        return wgt_error(WGT_ERR_FORMAT, "%s: partial_rotary_factor (GGUF: rope.dimension_count) gives %lld rotated "
                         "dims of a head of %lld: it must be even and at most the head size", where,
                         (long long)c->rope_dims, (long long)c->head_dim);
    TRY(positive_real(where, c->rms ? "rms_norm_eps" : "layer_norm_epsilon", c->norm_eps, 1));
    if (!c->no_rope) {
        TRY(positive_real(where, "rope_theta (GGUF: rope.freq_base)", c->rope.theta, 1e30));
        if (c->rope.scaling != WGT_ROPE_NONE) {
            TRY(positive_real(where, "rope_scaling.factor", c->rope.factor, 1e6));
            if (!isfinite(c->rope.low_freq_factor) || !isfinite(c->rope.high_freq_factor) ||
                !isfinite(c->rope.original_max_position) || c->rope.original_max_position < 0)
                return wgt_error(WGT_ERR_FORMAT, "%s: rope_scaling has a non-finite or negative parameter", where);
        }
    }
    /* the family features read from files (family.c, the loaders) */
    if (c->window_from < 0 || c->window_from > INT32_MAX)
        return wgt_error(WGT_ERR_FORMAT, "%s: max_window_layers is %lld: it must be from 0 to %d", where,
                         (long long)c->window_from, INT32_MAX);
    if (c->window < 0 || c->window > INT32_MAX)
        return wgt_error(WGT_ERR_FORMAT, "%s: sliding_window (GGUF: attention.sliding_window) is %lld: it must be from "
                         "0 to %d", where, (long long)c->window, INT32_MAX);
    const double reals[] = {c->attn_softcap, c->final_softcap, c->attn_scale, c->embed_scale, c->residual_scale,
                            c->logit_scale};
    static const char *const real_names[] = {"attn_logit_softcapping", "final_logit_softcapping",
                                             "query_pre_attn_scalar (GGUF: attention.scale)", "the embedding scale",
                                             "residual_multiplier (GGUF: residual_scale)",
                                             "logits_scaling (GGUF: logit_scale)"};
    for (int i = 0; i < 6; i++)
        if (reals[i] != 0) TRY(positive_real(where, real_names[i], reals[i], 1e30));
    if (c->rope_local_set) TRY(positive_real(where, "the sliding layers' rope_theta", c->rope_local.theta, 1e30));
    /* special ids index the embedding: one past the vocabulary would read another row or nothing */
    /* (the readers store an id past 2^31 as a negative one rather than wrap it) */
    int32_t ids[9];
    int n_ids = 0;
    if (c->bos != -1) ids[n_ids++] = c->bos;
    for (int i = 0; i < c->n_eos && i < 8; i++) ids[n_ids++] = c->eos[i];
    for (int i = 0; i < n_ids; i++) {
        const char *key = c->bos != -1 && i == 0 ? "bos_token_id" : "eos_token_id";
        if (ids[i] < 0)
            return wgt_error(WGT_ERR_FORMAT, "%s: %s is past 2^31, outside the vocabulary of %lld tokens", where, key,
                             (long long)c->vocab);
        if (ids[i] >= c->vocab)
            return wgt_error(WGT_ERR_FORMAT, "%s: %s %d is outside the vocabulary of %lld tokens", where, key, ids[i],
                             (long long)c->vocab);
    }
    return WGT_OK;
}

/* Bytes per element of a type's storage (blocks included). */
static double type_bytes(wgt_ftype t)
{
    uint64_t b = 0;
    if (wgt_ftype_bytes(t, 256, &b)) return 4;
    return (double)b / 256;
}

void mdl_estimate_memory(const wgt_model_config *c, double weight_bytes, int64_t ctx, int64_t n_caches, mdl_memory *out)
{
    double D = (double)c->dim, F = (double)c->ffn, qd = (double)(c->n_heads * c->head_dim),
           kd = (double)(c->n_kv_heads * c->head_dim), T = (double)ctx, V = (double)c->vocab;
    out->weights = weight_bytes;
    out->kv_cache = (double)n_caches * 2.0 * (double)c->n_layers * kd * T * 4; /* f32 keys and values of every layer */
    /* one prefill of the whole context: the residual, norms, q/k/v, attention output, the FFN's
     * hidden (gate and up), in f32; plus the logits */
    out->activations = T * (4 * D + qd + 2 * kd + qd + 3 * F) * 4 + V * 4;
    out->total = out->weights + out->kv_cache + out->activations;
}

double mdl_random_weight_bytes(const wgt_model_config *c, wgt_ftype type)
{
    double D = (double)c->dim, F = (double)c->ffn, qd = (double)(c->n_heads * c->head_dim),
           kd = (double)(c->n_kv_heads * c->head_dim), V = (double)c->vocab, b = type_bytes(type);
    /* as load_random lays them out: float types as they are, quantized linears as blocks with an
     * f16 embedding; norms and biases f32 */
    double emb_b = (type == WGT_FTYPE_F32 || type == WGT_FTYPE_F16 || type == WGT_FTYPE_BF16) ? b : 2;
    double mlp = (c->plain_mlp ? 2 : 3) * F * D * b;
    if (c->n_experts) /* the router (f32), every expert, and the shared expert with its gate */
        mlp = (double)c->n_experts * D * 4 + 3.0 * (double)c->n_experts * (double)c->expert_ffn * D * b +
              (c->shared_expert ? mlp + D * 4 : 0);
    double layer = (qd * D + 2 * kd * D + D * qd) * b + mlp + (4 * D + qd + 2 * kd + F + 2 * (double)c->head_dim) * 4;
    double w = V * D * emb_b + (c->tied && emb_b == b ? 0 : V * D * b) + (double)c->n_layers * layer + 2 * D * 4;
    if (c->no_rope) w += (double)c->max_pos * D * emb_b;
    return w;
}

/* The budget: WGT_MEMORY_LIMIT (bytes, or with a K/M/G/T suffix) when set, else the host's physical
 * memory (WebGPU does not report a device's; on the CPU adapters it is the host's anyway). */
wgt_status mdl_memory_budget(double *out, int *from_env)
{
    const char *v = getenv("WGT_MEMORY_LIMIT");
    *from_env = v && *v;
    if (*from_env) {
        char *end;
        double x = strtod(v, &end);
        double mul = 1;
        if (*end == 'K' || *end == 'k') mul = 1024.0, end++;
        else if (*end == 'M' || *end == 'm') mul = 1048576.0, end++;
        else if (*end == 'G' || *end == 'g') mul = 1073741824.0, end++;
        else if (*end == 'T' || *end == 't') mul = 1099511627776.0, end++;
        if (end == v || *end || !isfinite(x) || x <= 0)
            return wgt_error(WGT_ERR_INVALID_ARGUMENT, "WGT_MEMORY_LIMIT='%s' is not a size: give bytes, e.g. 64G", v);
        *out = x * mul;
        return WGT_OK;
    }
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    *out = pages > 0 && page > 0 ? (double)pages * (double)page : 1e18; /* unknown: no refusal */
    return WGT_OK;
}

wgt_status mdl_check_memory(const wgt_model_config *c, double weight_bytes, int64_t ctx, int64_t n_caches,
                            const char *where)
{
    mdl_memory mem;
    mdl_estimate_memory(c, weight_bytes, ctx, n_caches, &mem);
    double budget = 0;
    int from_env = 0;
    TRY(mdl_memory_budget(&budget, &from_env));
    if (mem.total > budget)
        return wgt_error(WGT_ERR_LIMIT,
                         "%s: the model needs about %.2f GB (weights %.2f GB for %lld layers, KV cache %.2f GB for "
                         "%lld cache%s of %lld tokens, activations %.2f GB), more than the %.2f GB %s: check the "
                         "configuration, use a shorter context (-c)%s or a quantized type, or raise WGT_MEMORY_LIMIT",
                         where, mem.total / 1e9, mem.weights / 1e9, (long long)c->n_layers, mem.kv_cache / 1e9,
                         (long long)n_caches, n_caches == 1 ? "" : "s", (long long)ctx, mem.activations / 1e9,
                         budget / 1e9, from_env ? "WGT_MEMORY_LIMIT allows" : "of this machine's memory",
                         n_caches > 1 ? ", fewer parallel sequences (--parallel)" : "");
    return WGT_OK;
}

wgt_status wgt_model_check_hf_config(const wgt_hf_config *h, const char *where)
{
    if (!h || !where) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_model_check_hf_config: NULL argument");
    wgt_model_config c;
    TRY(mdl_config_from_hf(h, where, &c));
    return mdl_validate_config(&c, where);
}
