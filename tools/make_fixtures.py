#!/usr/bin/env python3
"""Reference fixtures from Hugging Face transformers, one tiny random-weight model per architecture.

Runs where torch and transformers are installed (the H200 image, through the device tool; see
tools/device_fixtures.sh), on the CPU in float32, deterministic. For each architecture it writes
tests/fixtures/hf/<arch>/: config.json, generation_config.json, the weights (model.safetensors, or
shards + model.safetensors.index.json), and fixture.json with prompts, greedy continuations,
first-step logits and margins, all computed by transformers from the files as saved and reloaded.
tests/fixtures/README.md describes the fields.

    python3 tools/make_fixtures.py [--out tests/fixtures/hf] [--only llama,gpt2]

Why the weights are not transformers' default init: norms of exactly 1 and biases of exactly 0
would hide a missing norm weight or bias, and std-0.02 weights give near-uniform logits where a
greedy step is decided by noise. So every norm weight and bias is random, the matrices are wider,
and prompts (and if needed seeds) are searched until every greedy step's top-1/top-2 logit margin
is at least MIN_MARGIN, no special token is generated (so stopping at EOS or not agrees), and a
continuation holds at least MIN_DISTINCT different tokens.
"""
import argparse
import json
import os
import re
import shutil
import sys
import time

import torch
import transformers
from transformers import (AutoModelForCausalLM, GenerationConfig, GPT2Config, GPT2LMHeadModel,
                          LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM,
                          Qwen2Config, Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM)


def tf(name):
    """A transformers class by name, looked up when its architecture runs: a class one version
    lacks fails that architecture alone."""
    return getattr(transformers, name)


def with_rope_layers(cls_name, full, sliding, **kw):
    """A config whose full-attention and sliding-window layers have their own rope parameters:
    transformers 5 takes rope_parameters keyed by layer type, 4.x rope_theta + rope_local_base_freq."""
    cls = tf(cls_name)
    try:
        return cls(rope_parameters={"full_attention": full, "sliding_attention": sliding}, **kw)
    except TypeError:
        legacy = {k: v for k, v in full.items() if k not in ("rope_theta",)}
        return cls(rope_theta=full["rope_theta"], rope_local_base_freq=sliding["rope_theta"],
                   rope_scaling=legacy if legacy.get("rope_type", "default") != "default" else None, **kw)

N_NEW = 16                 # greedy tokens per prompt
PROMPT_LENS = (1, 6, 12)   # one prompt of each length
MIN_MARGIN = 0.15          # logits; typical logit std here is ~4, f16 weights move logits by ~1e-2
MATRIX_STD = 0.2           # every weight matrix except the embeddings / lm_head
EMBED_STD = 0.5            # token embeddings and lm_head: logit std ~ sqrt(hidden) * EMBED_STD
NORM_JITTER = 0.25         # norm weights ~ 1 + NORM_JITTER * N(0,1)
BIAS_STD = 0.1
MAX_SEEDS = 40
EMBED_NAMES = ("embed_tokens", "lm_head", "wte.weight", "embed_in", "embed_out")
# Prompts start with BOS for the families whose tokenizers add it
BOS_FIRST = ("llama", "mistral", "mistral_window", "gemma", "gemma2", "gemma3_text", "phi3", "mixtral",
             "gemma2_hd", "gemma3_text_6l")
MIN_DISTINCT = 3         # distinct tokens in a greedy continuation (random models like to repeat)
PROMPT_TRIES = 400
# Initialisations tried in turn for the families whose first runs found no seed (gemma2,
# gemma3_text, granite: transformers 5.17 on the H200, 2026-12-02): MAX_SEEDS is shared among the
# variants, so a family costs no more seeds than before. embed_std scales the logits (tied
# embeddings: the margins grow with it) and, squared, how strongly the input token echoes itself
# (x holds sqrt(hidden) x its embedding); post_center is Gemma's post-norm (1 + w) centre.
# MIN_MARGIN is never lowered.
INIT_VARIANTS = {
    "gemma2": [{"embed_std": 0.3}, {"embed_std": 0.8}, {"embed_std": 0.5, "post_center": 6.0}],
    "gemma3_text": [{"embed_std": 0.3}, {"embed_std": 0.8}, {"embed_std": 0.5, "post_center": 6.0}],
    "granite": [{"embed_std": 0.5}, {"embed_std": 0.8}],
    # the variant that worked for gemma2 / gemma3_text first
    "gemma2_hd": [{"embed_std": 0.5, "post_center": 6.0}, {"embed_std": 0.3}, {"embed_std": 0.8}],
    "gemma3_text_6l": [{"embed_std": 0.3}, {"embed_std": 0.5, "post_center": 6.0}, {"embed_std": 0.8}],
}
# Architectures added later search more seeds, variants taken in turn (seed s has variant
# s % len(variants)) rather than in blocks, so --seed-jobs tries every variant from the start.
# The fixtures made before keep MAX_SEEDS and the blocks (a rerun gives the same seed).
SEEDS_INTERLEAVED = {"gemma2_hd": 200, "gemma3_text_6l": 200, "starcoder2_4k": 60, "phi_4x": 60}


def seed_plan(arch):
    """(number of seeds, seed -> init variant) for arch."""
    variants = INIT_VARIANTS.get(arch, [{}])
    if arch in SEEDS_INTERLEAVED:
        return SEEDS_INTERLEAVED[arch], lambda seed: variants[seed % len(variants)]
    per = max(1, MAX_SEEDS // len(variants))
    return per * len(variants), lambda seed: variants[seed // per]


def archs():
    """name -> (model class, config factory, notes). Sizes: a few hundred KB of f32 each.
    Factories, so that a config one transformers version rejects fails only its architecture."""
    V = 320  # > 256 so that ids past one byte occur; not a power of two
    common = dict(vocab_size=V, initializer_range=MATRIX_STD, use_cache=True)
    return {
        # Llama 3.x style: GQA (4 q heads, 2 kv heads), llama3 rope scaling, untied, sharded on disk.
        # head_dim 16, theta 10000: the inverse frequencies fall in all three llama3 bands
        # (kept, smoothed, divided by factor) for original_max_position_embeddings 64.
        "llama": (LlamaForCausalLM, lambda: LlamaConfig(
            hidden_size=64, intermediate_size=144, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-5,
            rope_theta=10000.0,
            rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                          "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
            tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, **common),
            "GQA 4/2, llama3 rope scaling, untied embeddings, 3 safetensors shards + index"),
        # Qwen2: q/k/v biases (o_proj has none), tied embeddings.
        "qwen2": (Qwen2ForCausalLM, lambda: Qwen2Config(
            hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-6,
            rope_theta=1000000.0, tie_word_embeddings=True, use_sliding_window=False,
            bos_token_id=V - 3, eos_token_id=V - 2, **common),
            "q/k/v biases, tied embeddings, GQA 4/2"),
        # Qwen3: per-head RMS norms on q and k, head_dim 32 != hidden/heads = 16.
        "qwen3": (Qwen3ForCausalLM, lambda: Qwen3Config(
            hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=32, max_position_embeddings=256, rms_norm_eps=1e-6,
            rope_theta=1000000.0, tie_word_embeddings=True, attention_bias=False,
            use_sliding_window=False, bos_token_id=V - 3, eos_token_id=V - 2, **common),
            "q/k RMS norms, explicit head_dim 32 (hidden 64 / 4 heads = 16), tied, GQA 4/2"),
        # GPT-2: learned positions, LayerNorm with bias, GELU tanh ("gelu_new"), Conv1D [in, out].
        "gpt2": (GPT2LMHeadModel, lambda: GPT2Config(
            n_embd=64, n_layer=2, n_head=4, n_positions=64, n_inner=None,
            activation_function="gelu_new", layer_norm_epsilon=1e-5, tie_word_embeddings=True,
            bos_token_id=V - 1, eos_token_id=V - 1, **common),
            "learned positions, LayerNorm, GELU tanh, Conv1D weights stored [in, out], tied"),
        # Mistral without sliding window, with MQA (one kv head).
        "mistral": (MistralForCausalLM, lambda: MistralConfig(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=1, max_position_embeddings=256, rms_norm_eps=1e-5,
            rope_theta=10000.0, sliding_window=None, tie_word_embeddings=False,
            bos_token_id=1, eos_token_id=2, **common),
            "MQA (1 kv head), no sliding window, untied"),
        # ---- issue 16: the wider families. 2 layers (a sliding-window and a global one where the
        # family alternates), windows of 8 tokens: the 12-token prompt and its 16 new tokens pass
        # the window in prefill and in decode.
        "mistral_window": (MistralForCausalLM, lambda: MistralConfig(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-5,
            rope_theta=10000.0, sliding_window=8, tie_word_embeddings=False,
            bos_token_id=1, eos_token_id=2, **common),
            "sliding window of 8 tokens on every layer, GQA 4/2, untied"),
        # Gemma: embeddings scaled by sqrt(hidden), RMSNorm (1 + w), GeGLU (gelu tanh), MQA,
        # head_dim 32 != hidden/heads, tied.
        "gemma": ("GemmaForCausalLM", lambda: tf("GemmaConfig")(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=1, head_dim=32, max_position_embeddings=256, rms_norm_eps=1e-6,
            rope_theta=10000.0, hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True,
            pad_token_id=0, bos_token_id=2, eos_token_id=1, **common),
            "sqrt(hidden) embedding scale, (1 + w) RMSNorm, GeGLU tanh, MQA, head_dim 32, tied"),
        # Gemma 2: + pre/post norms around attention and MLP, attention and final logit
        # soft-capping (caps that still bend the largest scores and logits by a few percent, far
        # above what the 2e-3 tolerance sees; the first run's 5 and 15 squeezed the top logits'
        # margins below MIN_MARGIN for every seed), query_pre_attn_scalar 24 != head_dim,
        # layer 0 sliding (window 8), layer 1 global.
        "gemma2": ("Gemma2ForCausalLM", lambda: tf("Gemma2Config")(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, max_position_embeddings=256, rms_norm_eps=1e-6,
            rope_theta=10000.0, hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=24,
            sliding_window=8, layer_types=["sliding_attention", "full_attention"],
            attn_logit_softcapping=10.0, final_logit_softcapping=30.0, tie_word_embeddings=True,
            pad_token_id=0, bos_token_id=2, eos_token_id=1, **common),
            "gemma + pre/post norms, attention softcap 10, final softcap 30, query_pre_attn_scalar 24, "
            "layer 0 sliding window 8, layer 1 global"),
        # Gemma 3 (text): + q/k RMS norms (1 + w), local rope base 10000 on sliding layers, global
        # base 1e6 with linear scaling 8; no soft-capping.
        "gemma3_text": ("Gemma3ForCausalLM", lambda: with_rope_layers(
            "Gemma3TextConfig", {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
            {"rope_type": "default", "rope_theta": 10000.0},
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=32, max_position_embeddings=256, rms_norm_eps=1e-6,
            hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=24, sliding_window=8,
            layer_types=["sliding_attention", "full_attention"], final_logit_softcapping=None,
            attn_logit_softcapping=None, tie_word_embeddings=True, pad_token_id=0, bos_token_id=2,
            eos_token_id=1, **common),
            "gemma2 without softcaps + q/k norms, local rope 1e4 (sliding layer 0, window 8), "
            "global rope 1e6 linear x8 (layer 1)"),
        # Phi-3: fused qkv_proj and gate_up_proj, GQA 4/2, untied.
        "phi3": ("Phi3ForCausalLM", lambda: tf("Phi3Config")(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=256, original_max_position_embeddings=256,
            rms_norm_eps=1e-5, rope_theta=10000.0, sliding_window=None, tie_word_embeddings=False,
            pad_token_id=V - 1, bos_token_id=1, eos_token_id=2, **common),
            "fused qkv_proj [q; k; v] and gate_up_proj [gate; up], GQA 4/2, untied"),
        # Phi-2: partial rotary (half of head_dim), parallel attention and MLP from one LayerNorm,
        # GELU tanh, biases everywhere (lm_head too).
        "phi": ("PhiForCausalLM", lambda: tf("PhiConfig")(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=4, max_position_embeddings=256, partial_rotary_factor=0.5,
            hidden_act="gelu_new", layer_norm_eps=1e-5, rope_theta=10000.0, qk_layernorm=False,
            tie_word_embeddings=False, bos_token_id=V - 1, eos_token_id=V - 1, **common),
            "partial rotary 0.5, parallel attention + MLP, LayerNorm, GELU tanh, biases incl. lm_head"),
        # OLMo 2: norms after attention and MLP (none before), RMS q/k norms over all heads.
        "olmo2": ("Olmo2ForCausalLM", lambda: tf("Olmo2Config")(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=4, max_position_embeddings=256, rms_norm_eps=1e-6,
            rope_theta=10000.0, attention_bias=False, tie_word_embeddings=False,
            pad_token_id=V - 1, bos_token_id=None, eos_token_id=V - 2, **common),
            "post-norms only, q/k RMS norms over the whole projection, untied"),
        # GPT-NeoX (Pythia): fused qkv interleaved per head, partial rotary 0.25, parallel
        # residual, exact GELU, LayerNorm with bias, untied embed_out.
        "gpt_neox": ("GPTNeoXForCausalLM", lambda: tf("GPTNeoXConfig")(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            max_position_embeddings=256, rotary_pct=0.25, partial_rotary_factor=0.25,
            rotary_emb_base=10000, rope_theta=10000.0, hidden_act="gelu", layer_norm_eps=1e-5,
            use_parallel_residual=True, tie_word_embeddings=False, bos_token_id=V - 1,
            eos_token_id=V - 1, **common),
            "query_key_value [heads x (q, k, v)], partial rotary 0.25, parallel residual, GELU, LayerNorm"),
        # StableLM 2: partial rotary 0.25, LayerNorm, q/k/v biases, SwiGLU.
        "stablelm": ("StableLmForCausalLM", lambda: tf("StableLmConfig")(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=256, partial_rotary_factor=0.25,
            hidden_act="silu", layer_norm_eps=1e-5, rope_theta=10000.0, use_qkv_bias=True,
            qk_layernorm=False, use_parallel_residual=False, tie_word_embeddings=False,
            bos_token_id=V - 1, eos_token_id=V - 1, **common),
            "partial rotary 0.25, LayerNorm, q/k/v biases, SwiGLU, GQA 4/2"),
        # StarCoder2: biases everywhere, GELU tanh MLP (no gate), LayerNorm, sliding window 8, tied.
        "starcoder2": ("Starcoder2ForCausalLM", lambda: tf("Starcoder2Config")(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=256, hidden_act="gelu_pytorch_tanh",
            norm_epsilon=1e-5, rope_theta=10000.0, use_bias=True, sliding_window=8,
            tie_word_embeddings=True, bos_token_id=V - 1, eos_token_id=V - 1, **common),
            "biases, GELU tanh MLP, LayerNorm, sliding window 8, GQA 4/2, tied"),
        # Granite: embedding, residual and attention multipliers, logits divided by logits_scaling.
        # (The first run's embedding x6 with residual x0.5 left the tied model echoing its input
        # token, and logits / 1.5 shrank the margins: no seed passed. Every multiplier is still
        # far from 1, so each one's absence changes the logits.)
        "granite": ("GraniteForCausalLM", lambda: tf("GraniteConfig")(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-6,
            rope_theta=10000.0, embedding_multiplier=0.5, residual_multiplier=0.75,
            attention_multiplier=0.2, logits_scaling=1.25, tie_word_embeddings=True,
            pad_token_id=V - 1, bos_token_id=V - 3, eos_token_id=V - 2, **common),
            "embedding x0.5, residual x0.75, attention scale 0.2, logits / 1.25, tied"),
        # SmolLM3: layer 3 without rope (no_rope_layers[i] = 0; llama.cpp's period of 4, so the
        # GGUF conversion runs too), GQA, tied.
        "smollm3": ("SmolLM3ForCausalLM", lambda: tf("SmolLM3Config")(
            hidden_size=64, intermediate_size=128, num_hidden_layers=4, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-6,
            rope_theta=10000.0, no_rope_layers=[1, 1, 1, 0], no_rope_layer_interval=4,
            use_sliding_window=False, tie_word_embeddings=True, pad_token_id=V - 1,
            bos_token_id=V - 3, eos_token_id=V - 2, **common),
            "layers 0-2 with rope, layer 3 without (no_rope_layers [1, 1, 1, 0]), GQA 4/2, tied"),
        # StableLM 2 12B's form: per-head q/k LayerNorms, attention and MLP in parallel from one norm.
        "stablelm_12b": ("StableLmForCausalLM", lambda: tf("StableLmConfig")(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=256, partial_rotary_factor=0.25,
            hidden_act="silu", layer_norm_eps=1e-5, rope_theta=10000.0, use_qkv_bias=False,
            qk_layernorm=True, use_parallel_residual=True, tie_word_embeddings=False,
            bos_token_id=V - 1, eos_token_id=V - 1, **common),
            "per-head q/k LayerNorms, parallel residual from one LayerNorm, partial rotary 0.25"),
        # GPT-NeoX without the parallel residual.
        "gpt_neox_seq": ("GPTNeoXForCausalLM", lambda: tf("GPTNeoXConfig")(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            max_position_embeddings=256, rotary_pct=0.25, partial_rotary_factor=0.25,
            rotary_emb_base=10000, rope_theta=10000.0, hidden_act="gelu", layer_norm_eps=1e-5,
            use_parallel_residual=False, tie_word_embeddings=False, bos_token_id=V - 1,
            eos_token_id=V - 1, **common),
            "gpt_neox with use_parallel_residual false"),
        # Qwen2 with its sliding window: layer 0 global (max_window_layers 1), layer 1 sliding over
        # 8 tokens (wgt convert refuses it: llama.cpp's qwen2 has no window).
        "qwen2_window": ("Qwen2ForCausalLM", lambda: tf("Qwen2Config")(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-6,
            rope_theta=10000.0, use_sliding_window=True, sliding_window=8, max_window_layers=1,
            tie_word_embeddings=True, bos_token_id=V - 3, eos_token_id=V - 2, **common),
            "use_sliding_window: layer 0 global, layer 1 window 8, q/k/v biases, tied"),
        # ---- The forms of gemma2, gemma3_text and starcoder2 that llama.cpp's GGUF can say in full
        # (its converter writes no query_pre_attn_scalar, no gemma3 layer pattern from transformers
        # 5's layer_types, no starcoder2 window; its loader takes head_dim, one global layer in six
        # and no window): llama.cpp's own conversions of these must generate transformers' ids.
        # gemma2 with query_pre_attn_scalar = head_dim (every released Gemma 2 but 27B), the rest
        # as gemma2 (soft-caps, layer 0 sliding over 8 tokens, layer 1 global).
        "gemma2_hd": ("Gemma2ForCausalLM", lambda: tf("Gemma2Config")(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, max_position_embeddings=256, rms_norm_eps=1e-6,
            rope_theta=10000.0, hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=16,
            sliding_window=8, layer_types=["sliding_attention", "full_attention"],
            attn_logit_softcapping=10.0, final_logit_softcapping=30.0, tie_word_embeddings=True,
            pad_token_id=0, bos_token_id=2, eos_token_id=1, **common),
            "gemma2 with query_pre_attn_scalar 16 = head_dim: softcaps 10 / 30, "
            "layer 0 sliding window 8, layer 1 global"),
        # gemma3_text as released: six layers, 0-4 sliding (window 8), 5 global, query_pre_attn_scalar
        # = head_dim 32; q/k norms, local rope 1e4, global rope 1e6 with linear scaling 8.
        "gemma3_text_6l": ("Gemma3ForCausalLM", lambda: with_rope_layers(
            "Gemma3TextConfig", {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
            {"rope_type": "default", "rope_theta": 10000.0},
            hidden_size=64, intermediate_size=128, num_hidden_layers=6, num_attention_heads=4,
            num_key_value_heads=2, head_dim=32, max_position_embeddings=256, rms_norm_eps=1e-6,
            hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=32, sliding_window=8,
            layer_types=["sliding_attention"] * 5 + ["full_attention"], final_logit_softcapping=None,
            attn_logit_softcapping=None, tie_word_embeddings=True, pad_token_id=0, bos_token_id=2,
            eos_token_id=1, **common),
            "gemma3_text with six layers (0-4 sliding over 8 tokens, local rope 1e4; 5 global, rope 1e6 "
            "linear x8), query_pre_attn_scalar 32 = head_dim, q/k norms"),
        # starcoder2 with its released window (4096): past every prompt here, as llama.cpp runs it.
        "starcoder2_4k": ("Starcoder2ForCausalLM", lambda: tf("Starcoder2Config")(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=256, hidden_act="gelu_pytorch_tanh",
            norm_epsilon=1e-5, rope_theta=10000.0, use_bias=True, sliding_window=4096,
            tie_word_embeddings=True, bos_token_id=V - 1, eos_token_id=V - 1, **common),
            "biases, GELU tanh MLP, LayerNorm, sliding window 4096 (never reached), GQA 4/2, tied"),
        # phi with the MLP of 4 x hidden that llama.cpp's converter writes for every phi2 file
        # (feed_forward_length 4 * hidden_size, as Phi-2's 10240 = 4 x 2560): llama.cpp loads only
        # such files (phi's 2 x hidden makes its ffn_down "wrong shape").
        "phi_4x": ("PhiForCausalLM", lambda: tf("PhiConfig")(
            hidden_size=64, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=4, max_position_embeddings=256, partial_rotary_factor=0.5,
            hidden_act="gelu_new", layer_norm_eps=1e-5, rope_theta=10000.0, qk_layernorm=False,
            tie_word_embeddings=False, bos_token_id=V - 1, eos_token_id=V - 1, **common),
            "phi with intermediate_size 256 = 4 x hidden: partial rotary 0.5, parallel attention + MLP, "
            "LayerNorm, GELU tanh, biases incl. lm_head"),
        # Mixture of experts: 4 experts, 2 per token.
        "mixtral": ("MixtralForCausalLM", lambda: tf("MixtralConfig")(
            hidden_size=64, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-5,
            rope_theta=10000.0, num_local_experts=4, num_experts_per_tok=2, sliding_window=None,
            router_jitter_noise=0.0, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2,
            **common),
            "4 experts, top-2 (softmax over the chosen two), GQA 4/2, untied"),
        "qwen2_moe": ("Qwen2MoeForCausalLM", lambda: tf("Qwen2MoeConfig")(
            hidden_size=64, intermediate_size=128, moe_intermediate_size=32,
            shared_expert_intermediate_size=64, num_experts=4, num_experts_per_tok=2,
            norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=[],
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            max_position_embeddings=256, rms_norm_eps=1e-6, rope_theta=1000000.0,
            use_sliding_window=False, tie_word_embeddings=False, bos_token_id=V - 3,
            eos_token_id=V - 2, **common),
            "4 experts top-2 without renormalising, shared expert with its sigmoid gate, q/k/v biases"),
        "qwen3_moe": ("Qwen3MoeForCausalLM", lambda: tf("Qwen3MoeConfig")(
            hidden_size=64, intermediate_size=128, moe_intermediate_size=32, num_experts=4,
            num_experts_per_tok=2, norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
            max_position_embeddings=256, rms_norm_eps=1e-6, rope_theta=1000000.0,
            use_sliding_window=False, tie_word_embeddings=False, bos_token_id=V - 3,
            eos_token_id=V - 2, **common),
            "4 experts top-2 renormalised (norm_topk_prob), q/k norms, head_dim 32, untied"),
    }


def special_ids(cfg):
    ids = set()
    for k in ("bos_token_id", "eos_token_id", "pad_token_id"):
        v = getattr(cfg, k, None)
        if isinstance(v, int):
            ids.add(v)
        elif isinstance(v, (list, tuple)):
            ids.update(v)
    return ids


def randomize(model, seed, init=None):
    """Every parameter random (see the module docstring), deterministic for a seed; init (a dict
    of INIT_VARIANTS) overrides embed_std and Gemma's post-norm centre."""
    init = init or {}
    embed_std = init.get("embed_std", EMBED_STD)
    post_center = init.get("post_center", 3.0)
    g = torch.Generator().manual_seed(seed)
    center = 0.0 if type(model).__name__.startswith("Gemma") else 1.0
    with torch.no_grad():
        for name, p in model.named_parameters():  # tied weights appear once
            if p.dim() == 1:
                if name.endswith("bias"):
                    p.copy_(BIAS_STD * torch.randn(p.shape, generator=g))
                else:  # RMSNorm / LayerNorm weight; Gemma's norms scale by (1 + w): centred on 0,
                    # and Gemma 2/3's post-norms well above 1, else the residual (embeddings x
                    # sqrt(hidden)) drowns what the layers add and the model echoes its input
                    c = center + (post_center if center == 0.0 and ".post_" in name else 0.0)
                    p.copy_(c + NORM_JITTER * torch.randn(p.shape, generator=g))
            else:
                std = embed_std if any(k in name for k in EMBED_NAMES) else MATRIX_STD
                p.copy_(std * torch.randn(p.shape, generator=g))


@torch.no_grad()
def greedy_cached(model, prompt, n):
    """Greedy loop with the KV cache; returns (ids, [logits per step] f32)."""
    x = torch.tensor([prompt])
    out = model(input_ids=x, use_cache=True)
    ids, logits = [], []
    for i in range(n):
        lg = out.logits[0, -1].float()
        logits.append(lg)
        t = int(torch.argmax(lg))
        ids.append(t)
        if i + 1 < n:
            out = model(input_ids=torch.tensor([[t]]), past_key_values=out.past_key_values,
                        use_cache=True)
    return ids, logits


@torch.no_grad()
def greedy_nocache(model, prompt, n):
    seq = list(prompt)
    ids, logits = [], []
    for _ in range(n):
        lg = model(input_ids=torch.tensor([seq]), use_cache=False).logits[0, -1].float()
        logits.append(lg)
        t = int(torch.argmax(lg))
        ids.append(t)
        seq.append(t)
    return ids, logits


def margin(lg):
    top = torch.topk(lg, 2).values
    return float(top[0] - top[1])


def search_prompts(model, cfg, arch, rng):
    """One prompt per length whose whole greedy trajectory has margins >= MIN_MARGIN and no special
    token. Llama-style models start prompts with BOS; the length-1 prompt is then [BOS] alone."""
    V = cfg.vocab_size
    special = special_ids(cfg)
    normal = [i for i in range(V) if i not in special]
    bos_first = arch in BOS_FIRST
    found = []
    why = {"special": 0, "repeats": 0, "margin": 0}
    best = 0.0  # the best trajectory's smallest margin, for the log when the search fails
    for L in PROMPT_LENS:
        ok = None
        for _ in range(PROMPT_TRIES if not (bos_first and L == 1) else 1):
            if bos_first:
                body = [normal[int(j)] for j in torch.randint(len(normal), (L - 1,), generator=rng)]
                prompt = [cfg.bos_token_id] + body
            else:
                prompt = [normal[int(j)] for j in torch.randint(len(normal), (L,), generator=rng)]
            ids, logits = greedy_cached(model, prompt, N_NEW)
            if any(t in special for t in ids):
                why["special"] += 1
                continue
            if len(set(ids)) < MIN_DISTINCT:
                why["repeats"] += 1
                continue
            m = min(margin(lg) for lg in logits)
            if m >= MIN_MARGIN:
                ok = prompt
                break
            why["margin"] += 1
            best = max(best, m)
        if ok is None:
            return None, f"length {L}: rejected {why}, best min margin {best:.4f}"
        found.append(ok)
    return found, None


def f32_list(t):
    return [float(v) for v in t.float().tolist()]


def to_legacy_rope(path):
    """Rewrite config.json's rope_parameters into the rope_theta + rope_scaling keys that Llama 3.x
    checkpoints on the Hub carry (what transformers 4.x wrote). Returns the original text."""
    with open(path) as f:
        text = f.read()
    cfg = json.loads(text)
    rp = cfg.pop("rope_parameters", None)
    if not isinstance(rp, dict) or "rope_theta" not in rp:
        return None
    rp = dict(rp)
    cfg["rope_theta"] = rp.pop("rope_theta")
    cfg["rope_scaling"] = rp
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    return text


def build_model(cls, cfg, seed, init):
    torch.manual_seed(seed)
    model = cls(cfg).float().eval()
    try:
        model.set_attn_implementation("eager")
    except Exception:
        pass
    randomize(model, 1000 + seed, init)
    return model


def try_seed(job):
    """--seed-jobs worker: (seed, prompts or None, why) for one seed of arch."""
    arch, seed = job
    torch.set_num_threads(1)
    cls, make_cfg, _ = archs()[arch]
    if isinstance(cls, str):
        cls = tf(cls)
    cfg = make_cfg()
    try:
        cfg._attn_implementation = "eager"
    except Exception:
        pass
    model = build_model(cls, cfg, seed, seed_plan(arch)[1](seed))
    prompts, why = search_prompts(model, cfg, arch, torch.Generator().manual_seed(2000 + seed))
    return seed, prompts, why


def check_prompts(model, cfg, arch, prompts):
    """What search_prompts asks of each prompt, for prompts found in another process: None if all pass."""
    special = special_ids(cfg)
    for prompt in prompts:
        ids, logits = greedy_cached(model, prompt, N_NEW)
        m = min(margin(lg) for lg in logits)
        if any(t in special for t in ids) or len(set(ids)) < MIN_DISTINCT or m < MIN_MARGIN:
            return f"prompt {prompt}: ids {ids}, min margin {m:.4f}"
    return None


def make_one(arch, cls, make_cfg, notes, out_root, log, seed_jobs=1):
    t0 = time.time()
    if isinstance(cls, str):
        cls = tf(cls)
    cfg = make_cfg()
    out = os.path.join(out_root, arch)
    shutil.rmtree(out, ignore_errors=True)
    try:
        cfg._attn_implementation = "eager"
    except Exception:
        pass
    chosen = None
    n_seeds, init_of = seed_plan(arch)
    if seed_jobs > 1:
        # seeds searched by seed_jobs processes, results taken in seed order: the first seed that
        # passes is the one a sequential run picks
        import multiprocessing
        with multiprocessing.get_context("fork").Pool(seed_jobs) as pool:
            for seed, prompts, why in pool.imap(try_seed, [(arch, s) for s in range(n_seeds)], chunksize=1):
                if prompts is not None:
                    chosen = (seed, build_model(cls, cfg, seed, init_of(seed)), prompts, init_of(seed))
                    break
                log(f"{arch}: seed {seed} (init {init_of(seed) or 'default'}): no prompt set with margin >= "
                    f"{MIN_MARGIN} ({why}), next seed")
            pool.terminate()
        if chosen is not None:  # the worker's prompts, checked again in this process
            why = check_prompts(chosen[1], cfg, arch, chosen[2])
            if why:
                raise RuntimeError(f"{arch}: seed {chosen[0]}'s prompts fail here: {why}")
    else:
        for seed in range(n_seeds):
            model = build_model(cls, cfg, seed, init_of(seed))
            prompts, why = search_prompts(model, cfg, arch, torch.Generator().manual_seed(2000 + seed))
            if prompts is not None:
                chosen = (seed, model, prompts, init_of(seed))
                break
            log(f"{arch}: seed {seed} (init {init_of(seed) or 'default'}): no prompt set with margin >= "
                f"{MIN_MARGIN} ({why}), next seed")
    if chosen is None:
        raise RuntimeError(f"{arch}: no seed below {n_seeds} gives margins >= {MIN_MARGIN}")
    seed, model, prompts, init = chosen

    os.makedirs(out)
    shard = "200KB" if arch == "llama" else "50GB"
    model.save_pretrained(out, max_shard_size=shard)
    if not os.path.exists(os.path.join(out, "generation_config.json")):
        GenerationConfig.from_model_config(model.config).save_pretrained(out)

    # Everything recorded comes from the model as reloaded from the files.
    config_form = "as saved by transformers " + transformers.__version__
    ref_logits = model(input_ids=torch.tensor([prompts[-1]])).logits[0].float()
    if arch == "llama":
        cpath = os.path.join(out, "config.json")
        orig = to_legacy_rope(cpath)
        if orig is not None:
            try:
                m2 = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32,
                                                          attn_implementation="eager").eval()
                d = float((m2(input_ids=torch.tensor([prompts[-1]])).logits[0].float()
                           - ref_logits).abs().max())
                if d > 1e-5:
                    raise RuntimeError(f"legacy rope config reloads with logit diff {d}")
                config_form = "legacy (rope_theta + rope_scaling, as on the Hub)"
            except Exception as e:  # keep what transformers wrote
                log(f"{arch}: legacy rope config rejected ({e}); keeping rope_parameters")
                with open(cpath, "w") as f:
                    f.write(orig)
    model = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    reload_diff = float((model(input_ids=torch.tensor([prompts[-1]])).logits[0].float()
                         - ref_logits).abs().max())
    assert reload_diff <= 1e-5, f"{arch}: reloaded model differs by {reload_diff}"

    cases, all_margins, cache_diff, logit_std = [], [], 0.0, []
    for prompt in prompts:
        ids, logits = greedy_cached(model, prompt, N_NEW)
        ids_nc, logits_nc = greedy_nocache(model, prompt, N_NEW)
        assert ids == ids_nc, f"{arch}: cached {ids} != uncached {ids_nc} for prompt {prompt}"
        cache_diff = max(cache_diff, max(float((a - b).abs().max())
                                         for a, b in zip(logits, logits_nc)))
        gen_ids = None
        try:
            g = model.generate(torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt),
                               dtype=torch.long), max_new_tokens=N_NEW, do_sample=False)
            gen_ids = [int(t) for t in g[0, len(prompt):]]
        except Exception as e:
            log(f"{arch}: model.generate failed ({type(e).__name__}: {e}); manual loops only")
        if gen_ids is not None:
            assert gen_ids == ids, f"{arch}: generate {gen_ids} != greedy loop {ids}"
        margins = [margin(lg) for lg in logits]
        assert not any(t in special_ids(model.config) for t in ids), f"{arch}: special id generated"
        all_margins += margins
        logit_std.append(float(logits[0].std()))
        cases.append({
            "prompt_ids": prompt,
            "greedy_ids": ids,
            "step_margins": [round(m, 6) for m in margins],
            "min_margin": min(margins),
            "first_step_logits": f32_list(logits[0]),
            "generate_checked": gen_ids is not None,
        })

    files = sorted(os.listdir(out)) + ["fixture.json"]
    fixture = {
        "arch": arch,
        "model_type": model.config.model_type,
        "architectures": getattr(model.config, "architectures", None),
        "notes": notes,
        "config_form": config_form,
        "files": files,
        "dtype": "float32",
        "vocab_size": model.config.vocab_size,
        "n_params": sum(p.numel() for p in model.parameters()),
        "n_new_tokens": N_NEW,
        "seed": seed,
        "init": {"matrix_std": MATRIX_STD, "embed_std": init.get("embed_std", EMBED_STD),
                 "norm_jitter": NORM_JITTER, "bias_std": BIAS_STD,
                 **({"post_norm_center": init["post_center"]} if "post_center" in init else {})},
        "min_margin": min(all_margins),
        "min_margin_required": MIN_MARGIN,
        "first_step_logit_std": sum(logit_std) / len(logit_std),
        "cache_vs_nocache_max_abs_diff": cache_diff,
        "reload_max_abs_diff": reload_diff,
        "special_token_ids": sorted(special_ids(model.config)),
        "attn_implementation": "eager",
        "device": "cpu",
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "cases": cases,
    }
    text = json.dumps(fixture, indent=1)  # lists of numbers on one line each
    text = re.sub(r"\[\s+([-0-9.eE+,\s]+?)\s+\]",
                  lambda m: "[" + " ".join(m.group(1).split()) + "]", text)
    with open(os.path.join(out, "fixture.json"), "w") as f:
        f.write(text + "\n")
    size = sum(os.path.getsize(os.path.join(out, n)) for n in os.listdir(out))
    log(f"{arch}: seed {seed}, prompts {[len(p) for p in prompts]}, min margin "
        f"{fixture['min_margin']:.4f} (logit std {fixture['first_step_logit_std']:.2f}), "
        f"cache/nocache diff {cache_diff:.2e}, files {files}, {size / 1024:.0f} KiB, "
        f"{time.time() - t0:.1f} s")
    return fixture


def run_one(job):
    """One architecture in its own process (--jobs): (arch, min margin or None)."""
    arch, out, threads, seed_jobs = job
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True, warn_only=True)

    def log(msg):
        print(f"[fixtures] {msg}", flush=True)

    cls, cfg, notes = archs()[arch]
    try:
        return arch, make_one(arch, cls, cfg, notes, out, log, seed_jobs)["min_margin"]
    except Exception as e:
        import traceback
        traceback.print_exc()
        log(f"{arch}: FAILED: {type(e).__name__}: {e}")
        return arch, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "..", "tests", "fixtures", "hf"))
    ap.add_argument("--only", default="", help="comma-separated architectures")
    ap.add_argument("--threads", type=int, default=4, help="torch threads per architecture")
    ap.add_argument("--jobs", type=int, default=1, help="architectures made at once (processes)")
    ap.add_argument("--seed-jobs", type=int, default=1,
                    help="seeds searched at once for each architecture (processes; with --jobs 1 only); "
                         "the seed chosen is the one a sequential search picks")
    a = ap.parse_args()
    print(f"[fixtures] torch {torch.__version__}, transformers {transformers.__version__}, out {a.out}",
          flush=True)
    only = [s for s in a.only.split(",") if s]
    unknown = [s for s in only if s not in archs()]
    if unknown:
        sys.exit(f"unknown architectures {unknown}; known: {list(archs())}")
    if a.jobs > 1 and a.seed_jobs > 1:
        sys.exit("--seed-jobs needs --jobs 1 (a pool's workers cannot start pools)")
    jobs = [(arch, a.out, a.threads, a.seed_jobs) for arch in archs() if not only or arch in only]
    if a.jobs > 1:
        import multiprocessing
        with multiprocessing.get_context("fork").Pool(a.jobs) as pool:
            results = pool.map(run_one, jobs, chunksize=1)
    else:
        results = [run_one(j) for j in jobs]
    summary = {arch: m for arch, m in results if m is not None}
    failed = [arch for arch, m in results if m is None]
    print(f"[fixtures] min margins: {json.dumps(summary)}; failed: {failed or 'none'}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
