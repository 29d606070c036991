#!/usr/bin/env bash
# The default model trained by `wgt train` (issue 13), in one device call on the H200: the same data
# split, shape and hyper-parameters as tools/train_default_model.py (PyTorch), evaluated by torch on
# the same held-out windows, both loss curves on one chart.
#   1. tools/train_default_wgt.py prep: train_default_model.py's split; training windows (BOS + 511
#      ids from random line starts, batch 64) and held-out windows as JSON lines.
#   2. a 24-step probe of wgt train's speed, then STEPS = what fits TRAIN_SECONDS (default 470; at
#      most MAX_STEPS, default 1070), so the schedule (warmup 100, cosine to
#      0.1 x lr 2e-3) ends when the time does. The schedule's length decides the result: PyTorch's
#      run took 1070 steps (its best held-out loss 3.2728 at step 790, lr 5e-4); wgt's 459-step run
#      (09:10, the whole cosine in 15M tokens) reached 3.3855, where PyTorch mid-schedule, at a
#      higher lr, was at 3.32; a 300-second PyTorch run (a far longer schedule) stopped at 3.35 as
#      it overfitted at a high lr. Per step wgt followed PyTorch's held-out curve to step ~340.
#      1070 steps need ~75k tok/s in 470 s: WGT_MATMUL_TC=1 on the H200 (wgt train then scales the
#      loss: its f16 operands would flush the gradients to zero otherwise).
#   3. wgt train --config models/bible-llama/config.json (random init), AdamW betas 0.9,0.95, weight
#      decay 0.1 except 1-D parameters, clip 1.0, dropout 0.2 after attention and MLP, --keep-best
#      (held-out loss every 20 steps).
#   4. the f32 result as a float16 Hugging Face directory; torch's validation loss of it and of the
#      shipped model (train_default_model.evaluate), the greedy fixture of it; the chart.
# The environment sets up wgt's device (see tools/device_run.sh); WGT is the binary (./build/wgt).
# DATA: the text (default .devdata/world-english-bible.txt: carry .devdata as tools/device_fixtures.sh
# says). Everything that comes back goes into $OUT (default /tmp/train_default_wgt): log.txt,
# model.safetensors (f16, 13.9 MB), default_wgt.tar.gz (hf/ without the weights, training.json,
# eval.json, the greedy fixture), train_default.svg.
# On a CPU adapter, to try it: WGT_TRAIN_DEFAULT_TINY=1 (batch 2 x 32, 6 steps, no time budget);
# without torch the evaluation is skipped (the rest needs numpy and sentencepiece).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/train_default_wgt}
WGT=${WGT:-./build/wgt}
DATA=${DATA:-.devdata/world-english-bible.txt}
W=${WORK:-/tmp/train_default_wgt.work}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
rm -rf "$W" && mkdir -p "$W"
if [ -n "${WGT_TRAIN_DEFAULT_TINY:-}" ]; then
    B=2 L=32 max_steps=6 warmup=2 eval_every=2 probe=4
else
    B=64 L=511 max_steps=${MAX_STEPS:-1070} warmup=100 eval_every=${EVAL_EVERY:-20} probe=24
fi
budget=${TRAIN_SECONDS:-470}
wgt() { "$WGT" "$@" 2>&1 | grep -v '^Warning: max'; return "${PIPESTATUS[0]}"; }
{
date -u
echo "WGT_MATMUL_TC=${WGT_MATMUL_TC:-0} TRAIN_SECONDS=$budget MAX_STEPS=$max_steps EVAL_EVERY=$eval_every"
echo "== prep"
$PY tools/train_default_wgt.py prep --data "$DATA" --out "$W" --sequences $((max_steps * B)) --seq $((L + 1)) || exit 1
head -n $((probe * B)) "$W/train.jsonl" >"$W/probe.jsonl"

common=(--config models/bible-llama/config.json --tokenizer models/bible-llama/tokenizer.model --batch "$B"
        --seq "$L" --no-shuffle --seed 1234)
echo "== probe: $probe steps"
wgt train "${common[@]}" --data-ids "$W/probe.jsonl" --steps "$probe" --eval-every $((probe / 3)) --out "$W/probe" \
    | tee "$W/probe.log"
# the cumulative tok/s at steps probe/3 and probe: the rate between them (pipelines made, data read)
steps=$(awk -v B="$B" -v L="$L" -v p="$probe" -v budget="$budget" -v max="$max_steps" '
    / tok\/s / { split($2, s, "/"); for (i = 1; i <= NF; i++) if ($i == "tok/s") r = $(i - 1); t[s[1]] = s[1] * B * L / r }
    END { a = p / 3; if (!(a in t) || !(p in t) || t[p] <= t[a]) { print max; exit }
          per = (t[p] - t[a]) / (p - a); n = int((budget - 20) / (per * 1.04)); if (n > max) n = max; if (n < 1) n = 1
          printf "%d\n", n; printf "per step %.1f ms -> %d steps\n", per * 1000, n > "/dev/stderr" }' "$W/probe.log")
[ -n "${WGT_TRAIN_DEFAULT_TINY:-}" ] && steps=$max_steps
head -n $((steps * B)) "$W/train.jsonl" >"$W/train_n.jsonl"
echo "== wgt train: $steps steps of $B x $((L + 1)) ids"
timeout $((budget + 90)) "$WGT" train "${common[@]}" --data-ids "$W/train_n.jsonl" --eval-ids "$W/eval.jsonl" \
    --steps "$steps" --lr 2e-3 --schedule cosine --warmup "$warmup" --min-lr 0.1 --optimizer adamw --betas 0.9,0.95 \
    --eps 1e-8 --weight-decay 0.1 --no-decay-1d --clip-norm 1.0 --dropout 0.2 --dropout-blocks-only \
    --eval-every "$eval_every" --keep-best --out "$W/wgt" 2>&1 | grep -v '^Warning: max'
echo "wgt train exit ${PIPESTATUS[0]}"
echo "== f16"
$PY tools/train_default_wgt.py f16 --wgt-out "$W/wgt" --out "$W/hf" || exit 1
echo "== torch evaluation"
if $PY -c 'import torch, transformers' 2>/dev/null; then
    $PY tools/train_default_wgt.py evaluate --model "$W/hf" --model models/bible-llama --data "$DATA" \
        --out "$W/eval.json" --greedy-fixture "$W/bible-llama-greedy.json"
    ev=(--eval "$W/eval.json" --eval-model "$W/hf")
else
    echo "no torch/transformers here: evaluation skipped"
    ev=()
fi
$PY tools/train_default_wgt.py chart --wgt-log "$W/wgt/training.json" "${ev[@]}" --out "$OUT/train_default.svg"
cp "$W/hf/model.safetensors" "$OUT/model.safetensors"
cp "$W/wgt/training.json" "$W/hf/wgt_training.json"
[ -f "$W/eval.json" ] && cp "$W/eval.json" "$W/hf/eval.json"
tar czf "$OUT/default_wgt.tar.gz" -C "$W" --exclude hf/model.safetensors hf prep.json wgt/loss_curve.svg \
    $( [ -f "$W/bible-llama-greedy.json" ] && echo bible-llama-greedy.json )
ls -la "$OUT"
date -u
} 2>&1 | tee "$OUT/log.txt"
