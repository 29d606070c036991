#!/usr/bin/env bash
# `wgt info <file>`: a converted GGUF and a Hugging Face directory are described (architecture,
# hyper-parameters, parameter count, bytes by type, tokenizer, tensor table); a malformed file
# fails with a message naming it.
set -euo pipefail
build=${WGT_BUILD:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$build/tests/test_convert" --make "$tmp/hf" >/dev/null
"$WGT_BIN" convert "$tmp/hf/qwen3" "$tmp/q.gguf" --type q6_k 2>/dev/null
out=$("$WGT_BIN" info "$tmp/q.gguf" --tensors)
for want in "architecture: qwen3" "qwen3.embedding_length                       256" "GGUF v3" \
            "parameters:   667520" "q6_K" "tokenizer:    gpt2 (byte-level BPE), pre qwen2, 300 tokens, 6 merges" \
            "blk.0.attn_k.weight                      q6_K     256 x 128"; do
  grep -qF "$want" <<<"$out" || fail "wgt info GGUF: missing '$want' in:"$'\n'"$out"
done
out=$("$WGT_BIN" info "$tmp/hf/gpt2" --tensors)
for want in "format:       safetensors, 17 tensors" "hidden size 64, layers 1, heads 4" "parameters:   72384" \
            "vocab.json + merges.txt" "h.0.attn.c_attn.weight                           f32      64 x 192"; do
  grep -qF "$want" <<<"$out" || fail "wgt info dir: missing '$want' in:"$'\n'"$out"
done
head -c 100 "$tmp/q.gguf" >"$tmp/cut.gguf"
if "$WGT_BIN" info "$tmp/cut.gguf" 2>"$tmp/err"; then fail "a truncated file was described"; fi
grep -q "cut.gguf: .*cannot fit\|cut.gguf: truncated" "$tmp/err" || fail "message: $(cat "$tmp/err")"
echo "wgt info on files: ok"
