#!/usr/bin/env bash
# The LLM decode step captured once and replayed for every token (`wgt generate --graph`,
# wgt_sampling.graph): on both CPU adapters the default model's first 12 greedy ids equal
# transformers' (tests/fixtures/hf/bible-llama-greedy.json, the cases test_default_model checks
# eagerly with 32 ids; two cases and 12 ids here, for time: a generation takes ~20 s on the loaded
# machine), every decode step after the captured one is a replay, and a token costs one submit.
# The same for transformers' Qwen2 fixture (q/k/v biases, GQA; tests/fixtures/hf/qwen2): 16 ids,
# also with the step written with plain ops (WGT_DECODE_GENERIC=1) and fused by graph capture's
# generic passes (matmul prologues and epilogues) on the first case, and routed to the fused
# kernels (WGT_GRAPH_ROUTE=1).
# Then, past position 256 (where attention leaves its one-dispatch kernel for the split kernels,
# which a captured step runs over the cache's capacity, the splits past the key count empty: one
# capture below 257 keys and one above) and with a seeded sampler (its step and history length are
# graph scalars): a greedy continuation of a 253-token prompt (72 ids: decode steps at positions
# 253..324, past 320 where eager's split count grows) and a sampled one (6 ids, positions
# 253..257) equal the same command without --graph, id for id (no transformers fixture has a
# prompt that long); greedy on lavapipe, sampled on both adapters, for time.
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
qwen=$root/tests/fixtures/hf/qwen2
qcases=$(node -e '
const f = require(process.argv[1]);
for (const c of f.cases.slice(0, 2)) console.log([c.prompt_ids.join(","), c.greedy_ids.slice(0, 16).join(" ")].join("\t"));
' "$qwen/fixture.json")
[ -n "$qcases" ] || { echo "FAIL: no cases read from $qwen/fixture.json"; exit 1; }
gens="0 1 1r" # 1r: the plain-op step with WGT_GRAPH_ROUTE=1 (routed to the fused kernels)
while IFS=$'\t' read -r ids want; do
    for backend in vulkan opengles; do
        for gen in $gens; do
            route=0; [ "$gen" = 1r ] && route=1
            got=$(WGT_GRAPH_ROUTE=$route WGT_DECODE_GENERIC=${gen%r} WGT_BACKEND=$backend "$wgt" generate -m "$qwen" --prompt-ids "$ids" -n 16 \
                --ignore-eos --print-ids --graph 2>"$tmp/err")
            checked=$((checked + 1))
            if [ "$got" != "$want" ]; then
                echo "FAIL [$backend] qwen2 generic=$gen prompt $ids:"; echo "  graph $got"; echo "  want  $want"
                cat "$tmp/err"; fail=1
            fi
            if ! grep -q '^graph: 14 of 15 decode steps replayed, 1 captured' "$tmp/err"; then
                echo "FAIL [$backend] qwen2 generic=$gen: not one capture and replays after it:"; cat "$tmp/err"; fail=1
            fi
            grep -h 'submits/token\|^graph:' "$tmp/err" | sed "s/^/[$backend] qwen2 generic=$gen: /"
        done
    done
    gens=0
done <<<"$qcases"
long=$(node -e 'console.log(Array.from({length: 253}, (_, i) => 1 + (i * 37) % 500).join(","))')
sampled="--temp 0.9 --top-k 40 --top-p 0.95 --min-p 0.02 --repeat-penalty 1.1 --frequency-penalty 0.3 --presence-penalty 0.2 -s 77"
for backend in vulkan opengles; do
    for mode in greedy sampled; do
        [ $backend = opengles ] && [ $mode = greedy ] && continue
        opts="" n=72 replayed="69 of 71"; [ $mode = sampled ] && opts=$sampled n=6 replayed="3 of 5"
        # shellcheck disable=SC2086
        want=$(WGT_BACKEND=$backend "$wgt" generate -m "$model" --prompt-ids "$long" -n $n --ignore-eos --print-ids $opts 2>"$tmp/err0")
        # shellcheck disable=SC2086
        got=$(WGT_BACKEND=$backend "$wgt" generate -m "$model" --prompt-ids "$long" -n $n --ignore-eos --print-ids $opts \
            --graph 2>"$tmp/err")
        checked=$((checked + 1))
        if [ -z "$want" ] || [ "$got" != "$want" ]; then
            echo "FAIL [$backend] $mode past 256:"; echo "  graph $got"; echo "  eager $want"; cat "$tmp/err0" "$tmp/err"; fail=1
        fi
        # the decode steps feed positions 253..: 253..255 see at most 256 keys (attention_decode),
        # 256 on the split kernels over the cache's capacity: 2 captures, replays otherwise
        if ! grep -q "^graph: $replayed decode steps replayed, 2 captured" "$tmp/err"; then
            echo "FAIL [$backend] $mode past 256: not one capture per bucket and replays otherwise:"; cat "$tmp/err"; fail=1
        fi
        grep -h '^graph:' "$tmp/err" | sed "s/^/[$backend] $mode past 256: /"
    done
done
echo "$checked captured generations checked"
[ $checked -ge 13 ] || fail=1
exit $fail
