#!/usr/bin/env bash
# The LLM decode step captured once and replayed for every token (`wgt generate --graph`,
# wgt_sampling.graph): on both CPU adapters the default model's first 12 greedy ids equal
# transformers' (tests/fixtures/hf/bible-llama-greedy.json, the cases test_default_model checks
# eagerly with 32 ids; two cases and 12 ids here, for time: a generation takes ~20 s on the loaded
# machine), every decode step after the captured one is a replay, and a token costs one submit.
set -u
wgt=${WGT_BIN:?}
root=${WGT_ROOT:?}
model=$root/models/bible-llama.gguf
fixture=$root/tests/fixtures/hf/bible-llama-greedy.json
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0 checked=0
cases=$(node -e '
const f = require(process.argv[1]);
for (const c of f.cases.filter(c => c.min_margin >= 0.05).slice(0, 2))
  console.log([c.prompt_ids.join(","), c.greedy_ids.slice(0, 12).join(" ")].join("\t"));
' "$fixture")
[ -n "$cases" ] || { echo "FAIL: no cases read from $fixture"; exit 1; }
while IFS=$'\t' read -r ids want; do
    for backend in vulkan opengles; do
        got=$(WGT_BACKEND=$backend "$wgt" generate -m "$model" --prompt-ids "$ids" -n 12 --ignore-eos --print-ids \
            --graph 2>"$tmp/err")
        checked=$((checked + 1))
        if [ "$got" != "$want" ]; then
            echo "FAIL [$backend] prompt $ids:"; echo "  graph $got"; echo "  want  $want"; cat "$tmp/err"; fail=1
        fi
        if ! grep -q '^graph: 10 of 11 decode steps replayed' "$tmp/err"; then
            echo "FAIL [$backend]: not every step after the captured one was replayed:"; cat "$tmp/err"; fail=1
        fi
        subs=$(sed -n 's/.* \([0-9.]*\) submits\/token.*/\1/p' "$tmp/err")
        if [ -z "$subs" ] || ! awk -v s="$subs" 'BEGIN { exit !(s <= 1.1) }'; then
            echo "FAIL [$backend]: $subs submits per token with --graph (want about 1):"; cat "$tmp/err"; fail=1
        fi
        grep -h 'submits/token\|^graph:' "$tmp/err" | sed "s/^/[$backend] /"
    done
done <<<"$cases"
echo "$checked captured generations checked"
[ $checked -ge 4 ] || fail=1
exit $fail
