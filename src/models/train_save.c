/* A trained model as a Hugging Face directory: model.safetensors (f32, the checkpoint's names and
 * layouts, GPT-2's Conv1D transposed back to [in, out]), config.json (the source's with dtype
 * float32, or one written from the configuration for a GGUF source), and the tokenizer files of
 * the source directory when there are any. Every file is written through wgt_output (a
 * temporary file renamed into place). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "io/json_util.h"
#include "models/train_internal.h"

static wgt_status write_bytes(const char *path, const void *data, size_t n)
{
    wgt_output_options oo = {0};
    oo.replace = 1;
    wgt_output *o;
    wgt_status st = wgt_output_open(path, &oo, &o);
    if (st) return st;
    if ((st = wgt_output_write(o, data, n))) {
        wgt_output_abort(o);
        return st;
    }
    return wgt_output_commit(o);
}

static wgt_status copy_file(const char *from, const char *to)
{
    FILE *f = fopen(from, "rb");
    if (!f) return wgt_error(WGT_ERR_NOT_FOUND, "%s: cannot open: %s", from, strerror(errno));
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    wgt_status st;
    if (!buf) st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory copying %s", from);
    else if (got != (size_t)n) st = wgt_error(WGT_ERR_IO, "%s: short read", from);
    else st = write_bytes(to, buf, got);
    free(buf);
    return st;
}

static int is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int is_file(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* model.safetensors: every parameter read back to the host, f32. */
static wgt_status save_weights(const wgt_train_model *m, const char *path)
{
    wgt_st_writer *w;
    wgt_status st = wgt_st_writer_open(path, &w);
    if (st) return st;
    wgt_st_writer_add_metadata(w, "format", "pt");
    for (int i = 0; i < m->n_params && !st; i++) {
        const wgt_tensor *t = *m->params[i].slot;
        int64_t shape[2] = {wgt_tensor_dim(t, 0), wgt_tensor_ndim(t) > 1 ? wgt_tensor_dim(t, 1) : 1};
        if (m->params[i].conv1d) shape[0] = wgt_tensor_dim(t, 1), shape[1] = wgt_tensor_dim(t, 0);
        st = wgt_st_writer_add_tensor(w, m->params[i].name, WGT_FTYPE_F32, (uint32_t)wgt_tensor_ndim(t), shape);
    }
    for (int i = 0; i < m->n_params && !st; i++) {
        const wgt_tensor *t = *m->params[i].slot;
        int64_t n = wgt_tensor_numel(t);
        float *f = malloc((size_t)n * sizeof *f), *tr = NULL;
        if (!f) st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory saving '%s'", m->params[i].name);
        if (!st) st = wgt_tensor_to_host(t, f, (size_t)n * sizeof *f);
        if (!st && m->params[i].conv1d) { /* [out, in] -> [in, out] */
            int64_t a = wgt_tensor_dim(t, 0), b = wgt_tensor_dim(t, 1);
            tr = malloc((size_t)n * sizeof *tr);
            if (!tr) st = wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory saving '%s'", m->params[i].name);
            for (int64_t r = 0; !st && r < a; r++)
                for (int64_t c = 0; c < b; c++) tr[c * a + r] = f[r * b + c];
        }
        if (!st) st = wgt_st_writer_write(w, tr ? tr : f, (uint64_t)n * sizeof *f);
        free(f);
        free(tr);
    }
    if (!st) st = wgt_st_writer_finish(w);
    wgt_st_writer_free(w);
    return st;
}

/* config.json for a source without one (GGUF): the keys transformers and wgt read. */
static cJSON *config_from_cfg(const wgt_model_config *c)
{
    cJSON *j = cJSON_CreateObject();
    int gpt2 = c->arch == WGT_ARCH_GPT2;
    static const char *types[] = {"llama", "qwen2", "qwen3", "gpt2"};
    static const char *archs[] = {"LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "GPT2LMHeadModel"};
    cJSON *a = cJSON_AddArrayToObject(j, "architectures");
    cJSON_AddItemToArray(a, cJSON_CreateString(archs[c->arch]));
    cJSON_AddStringToObject(j, "model_type", types[c->arch]);
    cJSON_AddNumberToObject(j, "vocab_size", (double)c->vocab);
    if (gpt2) {
        cJSON_AddNumberToObject(j, "n_embd", (double)c->dim);
        cJSON_AddNumberToObject(j, "n_layer", (double)c->n_layers);
        cJSON_AddNumberToObject(j, "n_head", (double)c->n_heads);
        cJSON_AddNumberToObject(j, "n_inner", (double)c->ffn);
        cJSON_AddNumberToObject(j, "n_positions", (double)c->max_pos);
        cJSON_AddNumberToObject(j, "layer_norm_epsilon", c->norm_eps);
        cJSON_AddStringToObject(j, "activation_function", "gelu_new");
    } else {
        cJSON_AddNumberToObject(j, "hidden_size", (double)c->dim);
        cJSON_AddNumberToObject(j, "num_hidden_layers", (double)c->n_layers);
        cJSON_AddNumberToObject(j, "num_attention_heads", (double)c->n_heads);
        cJSON_AddNumberToObject(j, "num_key_value_heads", (double)c->n_kv_heads);
        cJSON_AddNumberToObject(j, "head_dim", (double)c->head_dim);
        cJSON_AddNumberToObject(j, "intermediate_size", (double)c->ffn);
        cJSON_AddNumberToObject(j, "max_position_embeddings", (double)(c->max_pos > 0 ? c->max_pos : 2048));
        cJSON_AddNumberToObject(j, "rms_norm_eps", c->norm_eps);
        cJSON_AddNumberToObject(j, "rope_theta", c->rope.theta);
        cJSON_AddStringToObject(j, "hidden_act", "silu");
        if (c->rope.scaling == WGT_ROPE_LLAMA3) {
            cJSON *r = cJSON_AddObjectToObject(j, "rope_scaling");
            cJSON_AddStringToObject(r, "rope_type", "llama3");
            cJSON_AddNumberToObject(r, "factor", c->rope.factor);
            cJSON_AddNumberToObject(r, "low_freq_factor", c->rope.low_freq_factor);
            cJSON_AddNumberToObject(r, "high_freq_factor", c->rope.high_freq_factor);
            cJSON_AddNumberToObject(r, "original_max_position_embeddings", c->rope.original_max_position);
        } else if (c->rope.scaling == WGT_ROPE_LINEAR) {
            cJSON *r = cJSON_AddObjectToObject(j, "rope_scaling");
            cJSON_AddStringToObject(r, "rope_type", "linear");
            cJSON_AddNumberToObject(r, "factor", c->rope.factor);
        }
        if (c->arch == WGT_ARCH_LLAMA && c->qkv_bias) cJSON_AddBoolToObject(j, "attention_bias", 1);
    }
    cJSON_AddBoolToObject(j, "tie_word_embeddings", c->tied);
    if (c->bos >= 0) cJSON_AddNumberToObject(j, "bos_token_id", c->bos);
    if (c->n_eos > 0) cJSON_AddNumberToObject(j, "eos_token_id", c->eos[0]);
    return j;
}

/* config.json of the source (a directory's, or the --config file itself), else made from cfg;
 * the dtype keys say float32, which the weights now are. */
static wgt_status save_config(const wgt_train_model *m, const char *path)
{
    char src[1100];
    cJSON *j = NULL;
    if (is_dir(m->source)) snprintf(src, sizeof src, "%s/config.json", m->source);
    else snprintf(src, sizeof src, "%s", m->source);
    size_t sl = strlen(src);
    if (sl > 5 && !strcmp(src + sl - 5, ".json") && is_file(src)) {
        FILE *f = fopen(src, "rb");
        char *text = NULL;
        long n = 0;
        if (f) {
            fseek(f, 0, SEEK_END);
            n = ftell(f);
            fseek(f, 0, SEEK_SET);
            text = n >= 0 ? calloc(1, (size_t)n + 1) : NULL;
            if (text && fread(text, 1, (size_t)n, f) != (size_t)n) text[0] = 0;
            fclose(f);
        }
        if (!text) return wgt_error(WGT_ERR_IO, "%s: cannot read it again to write the output's config.json", src);
        wgt_status st = wgt_json_parse(text, (uint64_t)strlen(text), src, &j);
        free(text);
        if (st) return st;
    } else
        j = config_from_cfg(&m->cfg);
    if (!j) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    const char *keys[] = {"torch_dtype", "dtype"};
    for (int k = 0; k < 2; k++) {
        if (cJSON_GetObjectItem(j, keys[k])) cJSON_DeleteItemFromObject(j, keys[k]);
    }
    cJSON_AddStringToObject(j, "torch_dtype", "float32");
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    if (!text) return wgt_error(WGT_ERR_OUT_OF_MEMORY, "out of host memory");
    size_t n = strlen(text);
    text[n] = '\n'; /* cJSON_Print ends without a newline; its buffer holds the NUL we replace */
    wgt_status st = write_bytes(path, text, n + 1);
    free(text);
    return st;
}

/* The tokenizer files Hugging Face directories carry. */
static const char *const tokenizer_files[] = {"tokenizer.json", "tokenizer_config.json", "tokenizer.model",
                                              "special_tokens_map.json", "vocab.json", "merges.txt",
                                              "generation_config.json"};

wgt_status wgt_train_model_save(const wgt_train_model *m, const char *dir, const char *tokenizer_from)
{
    if (!m || !dir) return wgt_error(WGT_ERR_INVALID_ARGUMENT, "wgt_train_model_save: NULL argument");
    if (mkdir(dir, 0777) && errno != EEXIST)
        return wgt_error(WGT_ERR_IO, "%s: cannot create the output directory: %s", dir, strerror(errno));
    if (!is_dir(dir)) return wgt_error(WGT_ERR_IO, "%s: exists and is not a directory", dir);
    char path[2200];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    wgt_status st = save_weights(m, path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (!st) st = save_config(m, path);
    /* the tokenizer: a file given by name, or the known files of a directory */
    const char *tf = tokenizer_from ? tokenizer_from : m->source;
    if (!st && is_file(tf) && tokenizer_from) {
        const char *base = strrchr(tf, '/');
        base = base ? base + 1 : tf;
        size_t bl = strlen(base);
        const char *as = bl > 6 && !strcmp(base + bl - 6, ".model") ? "tokenizer.model" : "tokenizer.json";
        snprintf(path, sizeof path, "%s/%s", dir, as);
        st = copy_file(tf, path);
    } else if (!st && is_dir(tf)) {
        for (size_t i = 0; i < sizeof tokenizer_files / sizeof *tokenizer_files && !st; i++) {
            char from[2200];
            snprintf(from, sizeof from, "%s/%s", tf, tokenizer_files[i]);
            snprintf(path, sizeof path, "%s/%s", dir, tokenizer_files[i]);
            if (is_file(from) && strcmp(from, path)) st = copy_file(from, path);
        }
    }
    return st;
}
