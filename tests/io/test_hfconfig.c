/* Hugging Face config.json / generation_config.json parsing: real-shaped configs of the llama
 * (with llama3 rope scaling), qwen2, qwen3 and gpt2 families, defaults, and malformed ones. */
#include <sys/stat.h>

#include "io/io_test.h"

static wgt_status parse(const char *json, wgt_hf_config *c) { return wgt_hf_config_parse(json, strlen(json), "config.json", c); }

int main(void)
{
    wgt_hf_config c;
    CHECK_OK(parse("{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", \"hidden_size\": 2048,"
                   "\"num_hidden_layers\": 16, \"num_attention_heads\": 32, \"num_key_value_heads\": 8, \"head_dim\": 64,"
                   "\"intermediate_size\": 8192, \"vocab_size\": 128256, \"max_position_embeddings\": 131072,"
                   "\"rope_theta\": 500000.0, \"rms_norm_eps\": 1e-05, \"tie_word_embeddings\": true,"
                   "\"bos_token_id\": 128000, \"eos_token_id\": [128001, 128008, 128009], \"hidden_act\": \"silu\","
                   "\"torch_dtype\": \"bfloat16\", \"attention_bias\": false, \"mlp_bias\": false,"
                   "\"rope_scaling\": {\"factor\": 32.0, \"high_freq_factor\": 4.0, \"low_freq_factor\": 1.0,"
                   "\"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"}}", &c));
    CHECK(!strcmp(c.architecture, "LlamaForCausalLM") && !strcmp(c.model_type, "llama"), "names");
    CHECK(c.hidden_size == 2048 && c.n_layers == 16 && c.n_heads == 32 && c.n_kv_heads == 8 && c.head_dim == 64, "sizes");
    CHECK(c.intermediate_size == 8192 && c.vocab_size == 128256 && c.max_positions == 131072, "sizes 2");
    CHECK(c.rope_theta == 500000.0 && !strcmp(c.rope_scaling_type, "llama3") && c.rope_factor == 32 &&
          c.rope_low_freq_factor == 1 && c.rope_high_freq_factor == 4 && c.rope_original_max_positions == 8192, "rope");
    CHECK(c.norm_is_rms && c.norm_eps == 1e-5 && c.tie_word_embeddings == 1 && !c.qkv_bias, "norm, tie");
    CHECK(c.n_bos == 1 && c.bos_ids[0] == 128000 && c.n_eos == 3 && c.eos_ids[2] == 128009, "bos/eos lists");
    CHECK(!strcmp(c.hidden_act, "silu") && !strcmp(c.torch_dtype, "bfloat16"), "act, dtype");

    const char *gen = "{\"bos_token_id\": 1, \"eos_token_id\": 2, \"temperature\": 0.6, \"top_p\": 0.9, \"top_k\": 20, \"do_sample\": true}";
    CHECK_OK(wgt_hf_generation_config_parse(gen, strlen(gen), "generation_config.json", &c));
    CHECK(c.has_generation_config && c.n_eos == 1 && c.eos_ids[0] == 2 && c.temperature == 0.6 && c.top_k == 20 && c.do_sample, "generation config");

    /* qwen2: q/k/v biases without saying so; head_dim and kv heads defaulted; sliding window off */
    CHECK_OK(parse("{\"architectures\": [\"Qwen2ForCausalLM\"], \"model_type\": \"qwen2\", \"hidden_size\": 896,"
                   "\"num_hidden_layers\": 24, \"num_attention_heads\": 14, \"num_key_value_heads\": 2, \"intermediate_size\": 4864,"
                   "\"vocab_size\": 151936, \"rope_theta\": 1000000.0, \"rms_norm_eps\": 1e-06, \"sliding_window\": 32768,"
                   "\"use_sliding_window\": false, \"tie_word_embeddings\": true, \"rope_scaling\": null}", &c));
    CHECK(c.qkv_bias && !c.attention_bias && c.head_dim == 64 && c.sliding_window == 0 && c.rope_scaling_type[0] == 0, "qwen2");
    /* qwen3: explicit head_dim different from hidden/heads */
    CHECK_OK(parse("{\"model_type\": \"qwen3\", \"hidden_size\": 1024, \"num_attention_heads\": 16, \"num_key_value_heads\": 8,"
                   "\"head_dim\": 128, \"num_hidden_layers\": 28, \"attention_bias\": false}", &c));
    CHECK(c.head_dim == 128 && !c.qkv_bias && c.n_kv_heads == 8 && c.rope_theta == 10000, "qwen3");
    /* gpt2: its own key names, layer norm, n_inner null -> 4 * n_embd, tied embeddings */
    CHECK_OK(parse("{\"architectures\": [\"GPT2LMHeadModel\"], \"model_type\": \"gpt2\", \"n_embd\": 768, \"n_layer\": 12,"
                   "\"n_head\": 12, \"n_positions\": 1024, \"n_inner\": null, \"vocab_size\": 50257,"
                   "\"layer_norm_epsilon\": 1e-05, \"activation_function\": \"gelu_new\", \"bos_token_id\": 50256, \"eos_token_id\": 50256}", &c));
    CHECK(c.hidden_size == 768 && c.n_layers == 12 && c.n_heads == 12 && c.n_kv_heads == 12 && c.max_positions == 1024 &&
          c.intermediate_size == 3072 && !c.norm_is_rms && c.norm_eps == 1e-5 && c.tie_word_embeddings && c.qkv_bias &&
          !strcmp(c.hidden_act, "gelu_new"), "gpt2");

    /* malformed */
    struct { const char *json, *says; } bad[] = {
        {"{\"hidden_size\": \"big\"}", "\"hidden_size\" is not an integer"},
        {"{\"hidden_size\": 1.5}", "not an integer"},
        {"{\"hidden_size\": 1e300}", "not an integer"},
        {"{\"hidden_size\": -4}", "out of range"},
        {"{\"num_attention_heads\": 6, \"num_key_value_heads\": 4}", "not a multiple"},
        {"{\"eos_token_id\": [1, \"x\"]}", "eos_token_id"},
        {"{\"eos_token_id\": [1,2,3,4,5,6,7,8,9]}", "more than 8"},
        {"{\"rope_scaling\": 3}", "rope_scaling"},
        {"{\"tie_word_embeddings\": 1}", "true/false"},
        {"{\"architectures\": \"Llama\"}", "architectures"},
        {"[1]", "not a JSON object"},
        {"{\"a\": ", "invalid JSON"},
        {"", "invalid JSON"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        wgt_status st = parse(bad[i].json, &c);
        CHECK(st != WGT_OK && strstr(wgt_errmsg(), "config.json") && strstr(wgt_errmsg(), bad[i].says),
              "'%s': %s: %s", bad[i].json, wgt_status_str(st), wgt_errmsg());
    }

    /* load from a directory: config.json and generation_config.json together */
    char dir[512];
    snprintf(dir, sizeof dir, "%s", tmp_path(".dir"));
    mkdir(dir, 0755);
    char p[600], q[600];
    snprintf(p, sizeof p, "%s/config.json", dir);
    snprintf(q, sizeof q, "%s/generation_config.json", dir);
    const char *cfg = "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_attention_heads\": 4, \"eos_token_id\": 9}";
    write_file(p, cfg, strlen(cfg));
    CHECK_OK(wgt_hf_config_load(dir, &c));
    CHECK(!c.has_generation_config && c.eos_ids[0] == 9, "config alone");
    write_file(q, gen, strlen(gen));
    CHECK_OK(wgt_hf_config_load(dir, &c));
    CHECK(c.has_generation_config && c.eos_ids[0] == 2 && c.head_dim == 16, "generation config overrides eos");
    remove(p);
    CHECK(wgt_hf_config_load(dir, &c) == WGT_ERR_NOT_FOUND && strstr(wgt_errmsg(), "config.json"), "missing config: %s", wgt_errmsg());
    remove(q);
    rmdir(dir);
    return finish("test_hfconfig");
}
