#!/usr/bin/env bash
# `wgt train` (issue 13) where test_train_cli.sh does not look, on the default adapter (lavapipe):
#  1. an interrupted run (SIGKILL while it checkpoints every step) leaves a complete checkpoint
#     (model, optimizer state, trainer.json) that --resume continues from, with the losses the
#     killed run printed for the same steps; a stale checkpoint.tmp left by the kill is no obstacle
#     to the resumed run's own checkpoints;
#  2. the progress line on stderr (no --print-loss, stderr not a terminal): step, loss, held-out
#     loss, tokens/s, peak GPU memory, ETA, and nothing on stdout;
#  3. a checkpoint replacement stopped between its two renames (no atomic swap) is named: --resume
#     DIR says DIR.old holds the last one;
#  4. a batch over WGT_MEMORY_LIMIT (which takes K/M/G suffixes, as wgt generate's) is refused before
#     any work, saying how much it needs in units that show it; a malformed limit is refused too.
set -u
wgt=${WGT_BIN:?}
root=${WGT_ROOT:?}
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

cat >"$tmp/tiny.json" <<'EOF'
{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 4096, "hidden_size": 32,
 "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
 "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": true,
 "bos_token_id": 1, "eos_token_id": 2}
EOF
for i in $(seq 30); do
    echo "In the beginning God created the heavens and the earth. The earth was formless and empty."
done >"$tmp/text.txt"
common=(--config "$tmp/tiny.json" --tokenizer "$root/models/bible-llama/tokenizer.model" --data "$tmp/text.txt"
        --batch 2 --seq 16 --seed 3 --lr 3e-3 --save-every 1)

# 1. kill -9 a run that checkpoints every step, once it has a checkpoint and has printed 3 steps
"$wgt" train "${common[@]}" --steps 200 --print-loss --out "$tmp/run" >"$tmp/a.out" 2>"$tmp/a.err" &
pid=$!
for _ in $(seq 600); do
    [ -f "$tmp/run/checkpoint/trainer.json" ] && [ "$(wc -l <"$tmp/a.out")" -ge 3 ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
done
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
pid=
printed=$(wc -l <"$tmp/a.out")
[ "$printed" -ge 3 ] || bad "the run to kill printed $printed steps: $(grep -v Warning "$tmp/a.err" | tail -3)"
ck=$tmp/run/checkpoint
for f in config.json model.safetensors optimizer.safetensors trainer.json; do
    [ -s "$ck/$f" ] || bad "after the kill, $ck/$f is missing or empty"
done
k=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).step)' "$ck/trainer.json" 2>/dev/null)
case "$k" in '' | *[!0-9]*) bad "trainer.json after the kill: no step ($(head -c 200 "$ck/trainer.json"))"; k=0 ;; esac
echo "killed after $printed printed steps; the checkpoint is at step $k"
[ "$k" -ge 1 ] && [ "$k" -le "$printed" ] || bad "checkpoint step $k, printed $printed"
mkdir -p "$ck.tmp" && echo stale >"$ck.tmp/model.safetensors" # what a kill during a save leaves

# 2. resume (into the same directory) without --print-loss: the progress lines, the same losses
upto=$((printed + 2))
"$wgt" train "${common[@]}" --steps "$upto" --eval-every 1 --resume "$ck" --out "$tmp/run" \
    >"$tmp/b.out" 2>"$tmp/b.err" || bad "resume after the kill: $(grep -v Warning "$tmp/b.err" | tail -3)"
[ -s "$tmp/b.out" ] && bad "stdout not empty without --print-loss: $(head -3 "$tmp/b.out")"
num='-?[0-9]+\.[0-9]{4}'
grep -E '^step ' "$tmp/b.err" >"$tmp/b.steps"
[ "$(wc -l <"$tmp/b.steps")" = $((upto - k)) ] || bad "$((upto - k)) progress lines expected: $(cat "$tmp/b.steps")"
grep -vqE "^step [0-9]+/$upto  loss $num  eval $num  [0-9]+ tok/s  mem [0-9]+\.[0-9]+ (MiB|GiB)  ETA [0-9]+:[0-9]{2}\$" \
    "$tmp/b.steps" && bad "a progress line lacks a field: $(cat "$tmp/b.steps")"
[ -e "$ck.tmp" ] && bad "the stale $ck.tmp is still there after the resumed run's checkpoints"
# the resumed run's last checkpoint (step upto - 1) holds every loss at full precision: the steps it
# ran after k must be those the killed run printed (%.6f)
node -e '
const j = JSON.parse(require("fs").readFileSync(process.argv[1]));
const k = +process.argv[2], upto = +process.argv[3];
const printed = require("fs").readFileSync(process.argv[4], "utf8").trim().split("\n").map(l => l.split(" ")[3]);
if (j.step !== upto - 1) { console.log("checkpoint at step " + j.step + ", not " + (upto - 1)); process.exit(1); }
let bad = 0;
for (let s = k + 1; s <= printed.length; s++)
    if (j.losses[s - 1].toFixed(6) !== printed[s - 1]) { console.log("step " + s + ": resumed " + j.losses[s - 1] + ", killed run " + printed[s - 1]); bad = 1; }
console.log("resumed steps " + (k + 1) + ".." + printed.length + " compared with the killed run");
process.exit(bad);' "$ck/trainer.json" "$k" "$upto" "$tmp/a.out" || bad "resumed losses differ from the killed run's"
grep -q "final loss" "$tmp/b.err" || bad "no closing line: $(tail -2 "$tmp/b.err")"

# 3. a checkpoint left aside as DIR.old
mv "$ck" "$ck.old"
if "$wgt" train "${common[@]}" --steps 50 --resume "$ck" --out "$tmp/c" >/dev/null 2>"$tmp/c.err"; then
    bad "resume from a missing checkpoint accepted"
fi
grep -q "checkpoint.old has one" "$tmp/c.err" || bad "the message does not name checkpoint.old: $(cat "$tmp/c.err")"

# 4. memory: refused with the need in MiB (a tiny model), before any output directory is made
for lim in 1M 1048576; do
    rm -rf "$tmp/m"
    if WGT_MEMORY_LIMIT=$lim "$wgt" train "${common[@]}" --steps 1 --batch 64 --out "$tmp/m" >/dev/null 2>"$tmp/m.err"; then
        bad "WGT_MEMORY_LIMIT=$lim: accepted"
    fi
    grep -qE "needs about [0-9.]+ MiB on the device .*more than the 1\.0 MiB of WGT_MEMORY_LIMIT" "$tmp/m.err" ||
        bad "WGT_MEMORY_LIMIT=$lim: $(grep -v Warning "$tmp/m.err")"
    [ -e "$tmp/m" ] && bad "WGT_MEMORY_LIMIT=$lim: the output directory was made"
done
WGT_MEMORY_LIMIT=lots "$wgt" train "${common[@]}" --steps 1 --out "$tmp/m" >/dev/null 2>"$tmp/m.err" && bad "WGT_MEMORY_LIMIT=lots accepted"
grep -q "is not a size" "$tmp/m.err" || bad "WGT_MEMORY_LIMIT=lots: $(grep -v Warning "$tmp/m.err")"

[ $fail = 0 ] && echo "train interrupt/progress/memory: all checks passed"
exit $fail
