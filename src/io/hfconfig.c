/* Hugging Face config.json and generation_config.json, into wgt_hf_config. Key names differ
 * between families (GPT-2 uses n_embd, n_layer, ...), so each field tries its aliases. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/io.h"
#include "io/json_util.h"

static const cJSON *item(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }

/* First of the keys present; a present key of the wrong type is an error naming it. */
static wgt_status get_int(const cJSON *o, const char *name, const char *const *keys, int64_t *out)
{
    for (; *keys; keys++) {
        const cJSON *v = item(o, *keys);
        if (!v || cJSON_IsNull(v)) continue;
        double d = v->valuedouble;
        if (!cJSON_IsNumber(v) || !(d >= -9.2e18 && d <= 9.2e18) || d != (double)(int64_t)d)
            return wgt_error(WGT_ERR_FORMAT, "%s: \"%s\" is not an integer", name, *keys);
        *out = (int64_t)d;
        return WGT_OK;
    }
    return WGT_OK;
}

static wgt_status get_num(const cJSON *o, const char *name, const char *key, double *out)
{
    const cJSON *v = item(o, key);
    if (!v || cJSON_IsNull(v)) return WGT_OK;
    if (!cJSON_IsNumber(v)) return wgt_error(WGT_ERR_FORMAT, "%s: \"%s\" is not a number", name, key);
    *out = v->valuedouble;
    return WGT_OK;
}

static wgt_status get_bool(const cJSON *o, const char *name, const char *key, int *out)
{
    const cJSON *v = item(o, key);
    if (!v || cJSON_IsNull(v)) return WGT_OK;
    if (!cJSON_IsBool(v)) return wgt_error(WGT_ERR_FORMAT, "%s: \"%s\" is not true/false", name, key);
    *out = cJSON_IsTrue(v);
    return WGT_OK;
}

static wgt_status get_str(const cJSON *o, const char *name, const char *const *keys, char *out, size_t cap)
{
    for (; *keys; keys++) {
        const cJSON *v = item(o, *keys);
        if (!v || cJSON_IsNull(v)) continue;
        if (!cJSON_IsString(v)) return wgt_error(WGT_ERR_FORMAT, "%s: \"%s\" is not a string", name, *keys);
        if (strlen(v->valuestring) >= cap) return wgt_error(WGT_ERR_FORMAT, "%s: \"%s\" is longer than %zu bytes", name, *keys, cap - 1);
        strcpy(out, v->valuestring);
        return WGT_OK;
    }
    return WGT_OK;
}

/* bos/eos ids: an integer or a list of integers (up to 8). */
static wgt_status get_ids(const cJSON *o, const char *name, const char *key, int64_t *ids, int *n)
{
    const cJSON *v = item(o, key);
    if (!v || cJSON_IsNull(v)) return WGT_OK;
    const cJSON *one = cJSON_IsArray(v) ? v->child : v;
    int k = 0;
    for (; one; one = cJSON_IsArray(v) ? one->next : NULL) {
        double d = one->valuedouble;
        if (!cJSON_IsNumber(one) || !(d >= 0 && d <= 9.2e18) || d != (double)(int64_t)d)
            return wgt_error(WGT_ERR_FORMAT, "%s: \"%s\" is not a token id or a list of them", name, key);
        if (k == 8) return wgt_error(WGT_ERR_LIMIT, "%s: \"%s\" lists more than 8 ids", name, key);
        ids[k++] = (int64_t)d;
    }
    *n = k;
    return WGT_OK;
}

#define KEYS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define TRY(x)                    \
    do {                          \
        if ((st = (x))) goto out; \
    } while (0)

wgt_status wgt_hf_config_parse(const char *json, size_t len, const char *name, wgt_hf_config *c)
{
    memset(c, 0, sizeof *c);
    c->rope_theta = 10000;
    c->pad_id = -1;
    cJSON *j;
    wgt_status st = wgt_json_parse(json, len, name, &j);
    if (st) return st;
    if (!cJSON_IsObject(j)) {
        st = wgt_error(WGT_ERR_FORMAT, "%s: not a JSON object", name);
        goto out;
    }
    const cJSON *arch = item(j, "architectures");
    if (arch && !cJSON_IsNull(arch)) {
        if (!cJSON_IsArray(arch) || !cJSON_IsString(arch->child) || strlen(arch->child->valuestring) >= sizeof c->architecture) {
            st = wgt_error(WGT_ERR_FORMAT, "%s: \"architectures\" is not a list of names", name);
            goto out;
        }
        strcpy(c->architecture, arch->child->valuestring);
    }
    TRY(get_str(j, name, KEYS("model_type"), c->model_type, sizeof c->model_type));
    TRY(get_int(j, name, KEYS("hidden_size", "n_embd", "d_model"), &c->hidden_size));
    TRY(get_int(j, name, KEYS("num_hidden_layers", "n_layer", "num_layers"), &c->n_layers));
    TRY(get_int(j, name, KEYS("num_attention_heads", "n_head"), &c->n_heads));
    TRY(get_int(j, name, KEYS("num_key_value_heads"), &c->n_kv_heads));
    TRY(get_int(j, name, KEYS("head_dim"), &c->head_dim));
    TRY(get_int(j, name, KEYS("intermediate_size", "n_inner", "ffn_dim"), &c->intermediate_size));
    TRY(get_int(j, name, KEYS("vocab_size"), &c->vocab_size));
    TRY(get_int(j, name, KEYS("max_position_embeddings", "n_positions", "n_ctx"), &c->max_positions));
    TRY(get_num(j, name, "rotary_emb_base", &c->rope_theta)); /* gpt_neox in transformers 4 */
    TRY(get_num(j, name, "rope_theta", &c->rope_theta));
    int is_gpt2 = !strcmp(c->model_type, "gpt2");
    const cJSON *rs = item(j, "rope_scaling");
    if (!rs || cJSON_IsNull(rs)) rs = NULL;
    TRY(get_num(j, name, "rope_local_base_freq", &c->rope_local_theta));
    if (!rs) { /* transformers 5 moved rope settings into rope_parameters */
        const cJSON *rp = item(j, "rope_parameters");
        /* per layer type (Gemma 3): the global layers' settings, and the sliding layers' base */
        const cJSON *rfull = rp ? item(rp, "full_attention") : NULL, *rslide = rp ? item(rp, "sliding_attention") : NULL;
        if (rslide && cJSON_IsObject(rslide)) TRY(get_num(rslide, name, "rope_theta", &c->rope_local_theta));
        if (rfull && cJSON_IsObject(rfull)) rp = rfull;
        if (rp && cJSON_IsObject(rp)) {
            TRY(get_num(rp, name, "rope_theta", &c->rope_theta));
            const cJSON *t = item(rp, "rope_type");
            if (t && cJSON_IsString(t) && strcmp(t->valuestring, "default")) rs = rp;
        }
    }
    if (rs) {
        if (!cJSON_IsObject(rs)) {
            st = wgt_error(WGT_ERR_FORMAT, "%s: \"rope_scaling\" is not an object", name);
            goto out;
        }
        TRY(get_str(rs, name, KEYS("rope_type", "type"), c->rope_scaling_type, sizeof c->rope_scaling_type));
        TRY(get_num(rs, name, "factor", &c->rope_factor));
        TRY(get_num(rs, name, "low_freq_factor", &c->rope_low_freq_factor));
        TRY(get_num(rs, name, "high_freq_factor", &c->rope_high_freq_factor));
        TRY(get_int(rs, name, KEYS("original_max_position_embeddings"), &c->rope_original_max_positions));
    }
    if (item(j, "rms_norm_eps")) {
        TRY(get_num(j, name, "rms_norm_eps", &c->norm_eps));
        c->norm_is_rms = 1;
    } else if (item(j, "layer_norm_epsilon") || item(j, "layer_norm_eps") || item(j, "norm_epsilon")) {
        TRY(get_num(j, name, item(j, "layer_norm_epsilon") ? "layer_norm_epsilon" : item(j, "layer_norm_eps") ?
                    "layer_norm_eps" : "norm_epsilon", &c->norm_eps));
    } else {
        c->norm_is_rms = !is_gpt2;
        c->norm_eps = is_gpt2 ? 1e-5 : 1e-6;
    }
    c->tie_word_embeddings = is_gpt2;
    TRY(get_bool(j, name, "tie_word_embeddings", &c->tie_word_embeddings));
    TRY(get_bool(j, name, "attention_bias", &c->attention_bias));
    TRY(get_bool(j, name, "mlp_bias", &c->mlp_bias));
    c->qkv_bias = c->attention_bias || !strcmp(c->model_type, "qwen2") || is_gpt2;
    if (is_gpt2) c->attention_bias = c->mlp_bias = 1;
    const cJSON *sw = item(j, "sliding_window");
    const cJSON *usw = item(j, "use_sliding_window");
    if (sw && cJSON_IsNumber(sw) && sw->valuedouble >= 0 && sw->valuedouble < 9e18 && !(usw && cJSON_IsFalse(usw)))
        c->sliding_window = (int64_t)sw->valuedouble;
    c->use_sliding_window = usw && cJSON_IsBool(usw) ? cJSON_IsTrue(usw) : -1;
    c->max_window_layers = 28; /* Qwen2Config's default */
    TRY(get_int(j, name, KEYS("max_window_layers"), &c->max_window_layers));
    const cJSON *upr = item(j, "use_parallel_residual");
    c->use_parallel_residual = upr && cJSON_IsBool(upr) ? cJSON_IsTrue(upr) : -1;
    TRY(get_bool(j, name, "qk_layernorm", &c->qk_layernorm));
    c->use_bias = -1; /* starcoder2's default is on */
    TRY(get_bool(j, name, "use_bias", &c->use_bias));
    if (item(j, "use_qkv_bias")) { /* stablelm */
        int b = 0;
        TRY(get_bool(j, name, "use_qkv_bias", &b));
        c->qkv_bias |= b;
    }
    TRY(get_num(j, name, "embedding_multiplier", &c->embedding_multiplier));
    TRY(get_num(j, name, "residual_multiplier", &c->residual_multiplier));
    TRY(get_num(j, name, "attention_multiplier", &c->attention_multiplier));
    TRY(get_num(j, name, "logits_scaling", &c->logits_scaling));
    TRY(get_int(j, name, KEYS("no_rope_layer_interval"), &c->no_rope_layer_interval));
    const cJSON *nrl = item(j, "no_rope_layers");
    if (nrl && !cJSON_IsNull(nrl)) {
        const cJSON *e;
        if (!cJSON_IsArray(nrl) || cJSON_GetArraySize(nrl) > (int)sizeof c->rope_layers) {
            st = wgt_error(WGT_ERR_FORMAT, "%s: \"no_rope_layers\" is not a list of at most %d flags", name,
                           (int)sizeof c->rope_layers);
            goto out;
        }
        cJSON_ArrayForEach(e, nrl)
        {
            if (!cJSON_IsNumber(e) && !cJSON_IsBool(e)) {
                st = wgt_error(WGT_ERR_FORMAT, "%s: \"no_rope_layers\" holds a value that is not 0 or 1", name);
                goto out;
            }
            c->rope_layers[c->n_no_rope_layers++] = cJSON_IsBool(e) ? cJSON_IsTrue(e) : e->valuedouble != 0;
        }
    }
    TRY(get_int(j, name, KEYS("num_local_experts", "num_experts"), &c->n_experts));
    TRY(get_int(j, name, KEYS("num_experts_per_tok"), &c->n_experts_used));
    TRY(get_int(j, name, KEYS("moe_intermediate_size"), &c->moe_intermediate_size));
    TRY(get_int(j, name, KEYS("shared_expert_intermediate_size"), &c->shared_expert_intermediate_size));
    c->norm_topk_prob = -1;
    TRY(get_bool(j, name, "norm_topk_prob", &c->norm_topk_prob));
    c->decoder_sparse_step = 1;
    TRY(get_int(j, name, KEYS("decoder_sparse_step"), &c->decoder_sparse_step));
    const cJSON *mol = item(j, "mlp_only_layers");
    if (mol && cJSON_IsArray(mol)) c->n_mlp_only_layers = cJSON_GetArraySize(mol);
    strcpy(c->hidden_act, is_gpt2 ? "gelu_new" : "silu");
    TRY(get_str(j, name, KEYS("hidden_act", "activation_function"), c->hidden_act, sizeof c->hidden_act));
    TRY(get_str(j, name, KEYS("torch_dtype", "dtype"), c->torch_dtype, sizeof c->torch_dtype));
    TRY(get_ids(j, name, "bos_token_id", c->bos_ids, &c->n_bos));
    TRY(get_ids(j, name, "eos_token_id", c->eos_ids, &c->n_eos));
    TRY(get_int(j, name, KEYS("pad_token_id"), &c->pad_id));
    TRY(get_num(j, name, "query_pre_attn_scalar", &c->query_pre_attn_scalar));
    TRY(get_num(j, name, "rotary_pct", &c->partial_rotary_factor));
    TRY(get_num(j, name, "partial_rotary_factor", &c->partial_rotary_factor));
    const cJSON *rpp = item(j, "rope_parameters"); /* transformers 5 may keep it there */
    if (rpp && cJSON_IsObject(rpp)) TRY(get_num(rpp, name, "partial_rotary_factor", &c->partial_rotary_factor));
    TRY(get_num(j, name, "attn_logit_softcapping", &c->attn_softcap));
    TRY(get_num(j, name, "final_logit_softcapping", &c->final_softcap));
    const cJSON *lt = item(j, "layer_types");
    if (lt && !cJSON_IsNull(lt)) {
        const cJSON *e;
        if (!cJSON_IsArray(lt) || cJSON_GetArraySize(lt) > (int)sizeof c->layer_sliding) {
            st = wgt_error(WGT_ERR_FORMAT, "%s: \"layer_types\" is not a list of at most %d names", name,
                           (int)sizeof c->layer_sliding);
            goto out;
        }
        cJSON_ArrayForEach(e, lt)
        {
            if (!cJSON_IsString(e)) {
                st = wgt_error(WGT_ERR_FORMAT, "%s: \"layer_types\" holds a value that is not a name", name);
                goto out;
            }
            c->layer_sliding[c->n_layer_types++] = !strcmp(e->valuestring, "sliding_attention");
        }
    }

    /* sizes past 2^40 are nonsense (and would overflow the arithmetic below) */
    int64_t *sizes[] = {&c->hidden_size, &c->n_layers, &c->n_heads, &c->n_kv_heads, &c->head_dim,
                        &c->intermediate_size, &c->vocab_size, &c->max_positions, &c->rope_original_max_positions,
                        &c->n_experts, &c->n_experts_used, &c->moe_intermediate_size,
                        &c->shared_expert_intermediate_size};
    static const char *const size_names[] = {"hidden_size", "num_hidden_layers", "num_attention_heads",
                                             "num_key_value_heads", "head_dim", "intermediate_size", "vocab_size",
                                             "max_position_embeddings", "rope_scaling.original_max_position_embeddings",
                                             "num_experts", "num_experts_per_tok", "moe_intermediate_size",
                                             "shared_expert_intermediate_size"};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (*sizes[i] < 0 || *sizes[i] > (1ll << 40)) {
            st = wgt_error(WGT_ERR_FORMAT, "%s: %s is %lld: out of range (0 to 2^40)", name, size_names[i],
                           (long long)*sizes[i]);
            goto out;
        }
    /* defaults that depend on other fields */
    if (!c->n_kv_heads) c->n_kv_heads = c->n_heads;
    /* only an even split: otherwise head_dim stays 0 and the model's checks name the mismatch */
    if (!c->head_dim && c->n_heads > 0 && c->hidden_size % c->n_heads == 0) c->head_dim = c->hidden_size / c->n_heads;
    if (!c->intermediate_size && is_gpt2) c->intermediate_size = 4 * c->hidden_size;
    if (c->hidden_size < 0 || c->n_layers < 0 || c->n_heads < 0 || c->n_kv_heads < 0 || c->head_dim < 0 ||
        c->intermediate_size < 0 || c->vocab_size < 0 || c->max_positions < 0 ||
        (c->n_kv_heads > 0 && c->n_heads % c->n_kv_heads))
        st = wgt_error(WGT_ERR_FORMAT, "%s: negative sizes, or %lld heads not a multiple of %lld kv heads", name,
                       (long long)c->n_heads, (long long)c->n_kv_heads);
out:
    cJSON_Delete(j);
    return st;
}

wgt_status wgt_hf_generation_config_parse(const char *json, size_t len, const char *name, wgt_hf_config *c)
{
    cJSON *j;
    wgt_status st = wgt_json_parse(json, len, name, &j);
    if (st) return st;
    if (!cJSON_IsObject(j)) {
        st = wgt_error(WGT_ERR_FORMAT, "%s: not a JSON object", name);
        goto out;
    }
    c->has_generation_config = 1;
    TRY(get_ids(j, name, "bos_token_id", c->bos_ids, &c->n_bos));
    TRY(get_ids(j, name, "eos_token_id", c->eos_ids, &c->n_eos));
    TRY(get_num(j, name, "temperature", &c->temperature));
    TRY(get_num(j, name, "top_p", &c->top_p));
    TRY(get_int(j, name, KEYS("top_k"), &c->top_k));
    TRY(get_bool(j, name, "do_sample", &c->do_sample));
out:
    cJSON_Delete(j);
    return st;
}

static wgt_status parse_file(const char *path, int generation, wgt_hf_config *c)
{
    wgt_map m;
    wgt_status st = wgt_map_open(path, &m);
    if (st) return st;
    if (m.size > (16u << 20)) st = wgt_error(WGT_ERR_LIMIT, "%s: over 16 MB: not a config file", path);
    else if (!m.size) st = wgt_error(WGT_ERR_FORMAT, "%s: empty file", path);
    else if (generation) st = wgt_hf_generation_config_parse((const char *)m.data, m.size, path, c);
    else st = wgt_hf_config_parse((const char *)m.data, m.size, path, c);
    wgt_map_close(&m);
    return st;
}

wgt_status wgt_hf_config_load(const char *dir, wgt_hf_config *out)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    wgt_status st = parse_file(path, 0, out);
    if (st) return st;
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return WGT_OK;
    fclose(f);
    return parse_file(path, 1, out);
}
