#!/usr/bin/env bash
# The default model (models/bible-llama.gguf, converted by `wgt convert` from models/bible-llama):
# our tokenizer gives transformers' prompt ids, and greedy generation gives transformers' 32 ids for
# every prompt whose smallest top-1/top-2 margin is at least 0.05 (fixture
# tests/fixtures/hf/bible-llama-greedy.json, made from the f16 weights in f32 by transformers).
set -u
wgt=${WGT_BIN:?}
root=${WGT_ROOT:?}
model=$root/models/bible-llama.gguf
fixture=$root/tests/fixtures/hf/bible-llama-greedy.json
fail=0 checked=0
cases=$(node -e '
const f = require(process.argv[1]);
for (const c of f.cases) if (c.min_margin >= 0.05)
  console.log([JSON.stringify(c.prompt), c.prompt_ids.join(","), c.greedy_ids.join(" ")].join("\t"));
' "$fixture")
[ -n "$cases" ] || { echo "FAIL: no cases read from $fixture"; exit 1; }
while IFS=$'\t' read -r prompt ids want; do
    text=$(node -e 'console.log(JSON.parse(process.argv[1]))' "$prompt")
    got_ids=$("$wgt" tokenize -t "$model" "$text" 2>/dev/null | tr ' ' ',')
    if [ "$got_ids" != "$ids" ]; then echo "FAIL: tokenize '$text': $got_ids, want $ids"; fail=1; fi
    for backend in vulkan opengles; do
        got=$(WGT_BACKEND=$backend "$wgt" generate -m "$model" --prompt-ids "$ids" -n 32 --ignore-eos --print-ids 2>/dev/null)
        checked=$((checked + 1))
        if [ "$got" != "$want" ]; then
            echo "FAIL [$backend] '$text':"; echo "  got  $got"; echo "  want $want"; fail=1
        fi
    done
done <<<"$cases"
out=$("$wgt" generate -m "$model" -p "In the beginning, God created the heavens and the earth." -n 8 2>&1)
echo "$out" | grep -q '^In the beginning, God created the heavens and the earth\.' || { echo "FAIL: text generation: $out"; fail=1; }
echo "$out" | grep -q 'decode: .* tok/s' || { echo "FAIL: no speed line: $out"; fail=1; }
echo "$checked generations checked"
[ $checked -ge 8 ] || fail=1
exit $fail
