#!/usr/bin/env bash
# `wgt train --dtype bf16|f16` and `--dropout`, on the default adapter (lavapipe), on the llama
# train fixture (12 AdamW steps at lr 1e-3, the run test_train_cli.sh checks against PyTorch):
#  1. mixed precision learns as f32 does: each step's loss within 5e-3 (bf16: 8 bits of mantissa in
#     the activations) or 1e-3 (f16, the run of 2) relative of the f32 run's (measured: 1.5e-3 and
#     2e-4), and the loss falls by more than 3 nats over the 12 steps;
#  2. f16 loss scaling: a scale of 1e38 makes the first step's f32 gradients overflow: that step is
#     skipped (its loss printed, a note on stderr, no update: step 2 sees the same weights, so the
#     same loss), the scale halves and the 12 steps after it are the f16 run compared in 1;
#  2b. the same loss scaling in f32 (--loss-scale; automatic with WGT_MATMUL_TC): the same losses,
#     digit for digit, and an overflow skips the step;
#  3. dropout: --dropout 0 is the run without the flag, digit for digit and byte for byte in the
#     weights; --dropout 0.2 gives the same losses for the same --seed and others for another seed,
#     and still learns; resuming a bf16 run with dropout from a checkpoint equals the
#     uninterrupted run (each step's masks come from (seed, step)).
set -u
wgt=${WGT_BIN:?}
root=${WGT_ROOT:?}
fx=${WGT_TRAIN_FIXTURES:-$root/tests/fixtures/train}/llama
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
[ -f "$fx/fixture.json" ] || { echo "FAIL: $fx/fixture.json missing (tools/make_train_fixtures.py)"; exit 1; }

run() { # name, extra args...
    local name=$1; shift
    "$wgt" train --from "$fx" --data-ids "$fx/data.jsonl" --no-shuffle --batch 2 --seq 16 --lr 1e-3 --print-loss \
        --out "$tmp/$name" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || bad "$name: $(grep -v Warning "$tmp/$name.err" | tail -3)"
    awk '{print $4}' "$tmp/$name.out" | tr '\n' ' '
}
# losses a vs b: the worst relative difference within tol, and a's fall from first to last > 3
close() { # what, a, b, tol
    node -e '
const a = process.argv[1].trim().split(" ").map(Number), b = process.argv[2].trim().split(" ").map(Number);
const tol = Number(process.argv[3]);
let worst = 0;
for (let i = 0; i < b.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]) / Math.abs(b[i]));
console.log(process.argv[4] + ": worst rel diff " + worst.toExponential(2) + " (tol " + tol + "), fall " +
            (a[0] - a[a.length - 1]).toFixed(3));
process.exit(a.length === b.length && a.length > 0 && worst <= tol && a[0] - a[a.length - 1] > 3 ? 0 : 1);' \
        "$2" "$3" "$4" "$1" || bad "$1: $2 vs $3"
}

f32=$(run f32 --steps 12)
close "bf16 vs f32" "$(run bf16 --steps 12 --dtype bf16)" "$f32" 5e-3

# 2. an overflowing scale: step 1 skipped, then as before (one step behind)
ovf=$(run ovf --steps 13 --dtype f16 --loss-scale 1e38)
grep -q "step 1: f16 gradients overflowed: no update, loss scale now 5e+37" "$tmp/ovf.err" || bad "no overflow note: $(grep -v Warning "$tmp/ovf.err" | head -3)"
[ "$(grep -c overflowed "$tmp/ovf.err")" = 1 ] || bad "more than one overflow: $(grep overflowed "$tmp/ovf.err")"
read -r -a o <<<"$ovf"
[ "${o[0]}" = "${o[1]}" ] || bad "the skipped step changed the weights: losses ${o[0]} then ${o[1]}"
close "f16 (after the skipped step) vs f32" "${o[*]:1}" "$f32" 1e-3

# 2b. loss scaling in f32 (--loss-scale; WGT_MATMUL_TC turns it on for its f16 operands): a power of 2
# scales and unscales every f32 gradient exactly, so the losses are the unscaled run's digit for digit;
# an overflowing scale skips step 1 as f16's does
[ "$(run s32 --steps 12 --loss-scale 65536)" = "$f32" ] || bad "f32 with --loss-scale 65536 differs from f32"
o32=$(run o32 --steps 2 --loss-scale 1e38)
grep -q "step 1: f32 gradients overflowed: no update, loss scale now 5e+37" "$tmp/o32.err" ||
    bad "f32 overflow: $(grep -v Warning "$tmp/o32.err" | head -3)"
[ "$o32" = "$(echo "$f32" | cut -d' ' -f1) $(echo "$f32" | cut -d' ' -f1) " ] || bad "f32 overflow: losses $o32"

# 3. dropout
[ "$(run d0 --steps 12 --dropout 0)" = "$f32" ] || bad "--dropout 0 differs from the run without it"
cmp -s "$tmp/d0/model.safetensors" "$tmp/f32/model.safetensors" || bad "--dropout 0 changed the weights"
d1=$(run d1 --steps 6 --dropout 0.2 --seed 3)
[ "$(run d1b --steps 3 --dropout 0.2 --seed 3)" = "$(echo "$d1" | cut -d' ' -f1-3) " ] || bad "dropout with the same seed differs"
[ "$(run d2 --steps 2 --dropout 0.2 --seed 4)" != "$(echo "$d1" | cut -d' ' -f1-2) " ] || bad "dropout with another seed gives the same losses"
[ "$d1" != "$(echo "$f32" | cut -d' ' -f1-6) " ] || bad "dropout 0.2 changed nothing"
node -e 'const a = process.argv[1].trim().split(" ").map(Number); process.exit(a[0] - a[5] > 1 ? 0 : 1)' "$d1" \
    || bad "dropout 0.2 did not learn: $d1"
full=$(run full --steps 4 --dropout 0.1 --dtype bf16 --seed 9)
part=$(run part --steps 4 --dropout 0.1 --dtype bf16 --seed 9 --save-every 2)
res=$(run res --steps 4 --dropout 0.1 --dtype bf16 --seed 9 --resume "$tmp/part/checkpoint")
[ "$part" = "$full" ] || bad "checkpointing changed the losses"
[ "$res" = "$(echo "$full" | cut -d' ' -f3-4) " ] || bad "resumed bf16 + dropout losses differ: $res vs $full"
cmp -s "$tmp/full/model.safetensors" "$tmp/res/model.safetensors" || bad "resumed weights differ"
"$wgt" train --from "$fx" --data-ids "$fx/data.jsonl" --no-shuffle --batch 2 --seq 16 --steps 4 --seed 9 --dropout 0.1 \
    --resume "$tmp/part/checkpoint" --out "$tmp/x" >/dev/null 2>"$tmp/x.err" && bad "resume without --dtype bf16 accepted"
grep -q "give the same" "$tmp/x.err" || bad "resume with another dtype: $(grep -v Warning "$tmp/x.err")"
"$wgt" train --from "$fx" --data-ids "$fx/data.jsonl" --steps 1 --batch 1 --seq 16 --dtype f8 --out "$tmp/y" \
    >/dev/null 2>"$tmp/y.err" && bad "--dtype f8 accepted"
grep -q "use f32, bf16 or f16" "$tmp/y.err" || bad "--dtype f8: $(cat "$tmp/y.err")"
[ $fail = 0 ] && echo "mixed precision and dropout: as stated"
exit $fail
