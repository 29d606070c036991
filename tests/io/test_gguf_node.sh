#!/usr/bin/env bash
# The independent-parser check: a GGUF file written by our writer (every metadata type, nested
# arrays, tensors of several types) is read by npm @huggingface/gguf 0.4.6 under node and by our
# reader; metadata, tensor infos and the data offset must agree, and spot values must be those
# written. Installs the pinned package from package-lock.json on first run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${WGT_BUILD:-$here/../../build}
cd "$here"
if [ ! -d node_modules/@huggingface/gguf ]; then
  npm ci --no-audit --no-fund >/dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/tests/test_gguf" --write "$tmp/all.gguf" >/dev/null
"$build/tests/test_gguf" --dump "$tmp/all.gguf" >"$tmp/ours.json"
cat >"$tmp/expect.json" <<'JSON'
{"general.architecture": "llama", "t.u8": 250, "t.i8": -100, "t.u16": 65000, "t.i16": -30000,
 "t.u32": 4000000000, "t.i32": -2000000000, "t.bool": true, "t.u64": "18000000000000000000",
 "t.i64": "-9000000000000000000", "t.f64": -0.3333333333333333, "t.utf8": "héllo €",
 "t.arr_i32": [1, -2, 3, -4], "t.arr_bool": [true, false, true], "t.arr_str": ["a", "", "<0x0A>"],
 "t.arr_empty": [], "t.nested_i32": [[1, -2, 3, -4], [1, -2]], "t.nested_str": [["a", "", "<0x0A>"], ["x"]],
 "t.deep": [[[-0.3333333333333333]]]}
JSON
node gguf_crosscheck.mjs "$tmp/all.gguf" "$tmp/ours.json" "$tmp/expect.json"
# the seed files of the fuzz corpus were written by a separate generator (fuzz/make_seeds.py)
for f in "$WGT_ROOT"/fuzz/corpus/gguf/*.gguf; do
  "$build/tests/test_gguf" --dump "$f" >"$tmp/seed.json"
  node gguf_crosscheck.mjs "$f" "$tmp/seed.json"
done
# files written by `wgt convert` from tiny Hugging Face checkpoints (test_convert --make)
WGT_ROOT=$WGT_ROOT "$build/tests/test_convert" --make "$tmp/hf" >/dev/null
"$WGT_BIN" convert "$tmp/hf/llama" "$tmp/llama.gguf" --type f16 2>/dev/null
"$WGT_BIN" convert "$tmp/hf/qwen3" "$tmp/qwen3.gguf" --type q4_k 2>/dev/null
"$WGT_BIN" convert "$tmp/hf/gpt2" "$tmp/gpt2.gguf" --type q8_0 2>/dev/null
cat >"$tmp/llama.json" <<'JSON'
{"general.architecture": "llama", "llama.embedding_length": 64, "llama.block_count": 2,
 "llama.attention.head_count": 4, "llama.attention.head_count_kv": 2, "llama.feed_forward_length": 128,
 "llama.context_length": 2048, "llama.rope.freq_base": 500000, "general.file_type": 1}
JSON
cat >"$tmp/qwen3.json" <<'JSON'
{"general.architecture": "qwen3", "qwen3.attention.key_length": 64, "tokenizer.ggml.model": "gpt2",
 "tokenizer.ggml.pre": "qwen2", "tokenizer.ggml.eos_token_id": 264}
JSON
cat >"$tmp/gpt2.json" <<'JSON'
{"general.architecture": "gpt2", "gpt2.context_length": 32, "gpt2.embedding_length": 64,
 "tokenizer.ggml.merges": ["Ġ t", "h e", "Ġt he", "i n", "Ġ a", "a t"]}
JSON
for m in llama qwen3 gpt2; do
  "$build/tests/test_gguf" --dump "$tmp/$m.gguf" >"$tmp/$m.ours.json"
  node gguf_crosscheck.mjs "$tmp/$m.gguf" "$tmp/$m.ours.json" "$tmp/$m.json"
done
