#!/usr/bin/env bash
# `wgt bench --train` (issue 13's training benchmark) on the default adapter with a tiny model: one
# line in tools/train_bench_torch.py's format (the H200 script greps both), a finite positive
# loss, and tools/train_bench_chart.py drawing the two bars of a
# configuration from such lines. The figures themselves are the H200's (tools/h200_train_bench.sh).
set -u
wgt=${WGT_BIN:?}
root=${WGT_ROOT:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

"$wgt" bench --train -m "$root/tests/fixtures/hf/llama" --name tiny --batch 2 --seq 8 --steps 1 --warmup 0 \
    >"$tmp/out" 2>"$tmp/err" || bad "wgt bench --train: $(grep -v Warning "$tmp/err" | tail -3)"
cat "$tmp/out"
[ "$(wc -l <"$tmp/out")" = 1 ] || bad "one line expected on stdout"
grep -qE '^wgt tiny f32 tok/s [0-9]+ ms/step [0-9]+\.[0-9]{2} peak_GiB [0-9]+\.[0-9]{2} loss [0-9]+\.[0-9]{3} \(batch 2 x 8, ' \
    "$tmp/out" || bad "the line's format"
# a cross-entropy of random ids: finite and positive (the fixture's random-weight llama gives ~11)
awk '{ for (i = 1; i < NF; i++) if ($i == "loss") l = $(i + 1) } END { exit !(l > 0 && l < 30) }' "$tmp/out" ||
    bad "loss outside (0, 30)"

# the chart: this line beside a PyTorch line of the same configuration
mkdir "$tmp/res"
{ cat "$tmp/out"; echo "torch tiny f32 tok/s 12345 ms/step 1.30 peak_GiB 0.01 loss 5.800"; } >"$tmp/res/train.txt"
python3 "$root/tools/train_bench_chart.py" "$tmp/res" >/dev/null || bad "train_bench_chart.py failed"
[ "$(grep -c '<rect x=' "$tmp/res/train.svg" 2>/dev/null)" = 2 ] || bad "the chart does not have the two bars"
grep -q "torch 12,345 tok/s" "$tmp/res/train.svg" || bad "the chart lacks PyTorch's figure"

[ $fail = 0 ] && echo "bench --train: all checks passed"
exit $fail
