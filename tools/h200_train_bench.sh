#!/usr/bin/env bash
# The README's training benchmark (issue 13) in one device call on the H200: wgt's training speed
# (`wgt bench --train`: AdamW on random ids, tokens/s, ms a step, peak device memory) for the
# default model's shape (models/bible-llama/config.json, batch 32 x 256, f32) and GPT-2 small's
# (bench/configs/gpt2-small.json, 124M parameters, batch 8 x 512, f32 and bf16), then PyTorch eager's
# on the same GPU (tools/train_bench_torch.py: the same shapes, TF32 off, bf16 autocast), then the
# chart (tools/train_bench_chart.py). From the repository root, the binary built here carried over:
#   carry [".gl", ".deps/dawn", "build/wgt"]
#   command: bash tools/h200_train_bench.sh
# Writes train.log (everything), train.txt (the figure lines) and train.svg into $OUT when set (the
# device tool returns them), else bench/results/h200. STEPS / WARMUP (default 10 / 3) for wgt's runs.
# On a CPU adapter, to try it: WGT_TRAIN_BENCH_TINY=1 runs wgt's runs at batch 2 x 16, one timed
# step, GPT-2 small replaced by the tiny GPT-2 of tests/fixtures/train/gpt2 (its 147 MiB embedding
# passes lavapipe's 128 MiB binding), and skips PyTorch (OUT=/tmp/x to keep the files elsewhere).
set -u
out=${OUT:-bench/results/h200}
mkdir -p "$out"
steps=${STEPS:-10} warmup=${WARMUP:-3}
if [ -n "${WGT_TRAIN_BENCH_TINY:-}" ]; then
    run=(./build/wgt) shapes=("2 16" "2 16") steps=1 warmup=1 gpt2=tests/fixtures/train/gpt2
else
    run=(bash tools/device_run.sh ./build/wgt) shapes=("32 256" "8 512") gpt2=bench/configs/gpt2-small.json
fi
bench() { # name config "B L" dtype
    local bl=($3)
    "${run[@]}" bench --train -m "$2" --name "$1" --batch "${bl[0]}" --seq "${bl[1]}" --dtype "$4" \
        --steps "$steps" --warmup "$warmup"
}
{
    bench bible-llama models/bible-llama/config.json "${shapes[0]}" f32
    bench gpt2-small "$gpt2" "${shapes[1]}" f32
    bench gpt2-small "$gpt2" "${shapes[1]}" bf16
    [ -z "${WGT_TRAIN_BENCH_TINY:-}" ] && python3 tools/train_bench_torch.py --steps 20 --warmup 5
} 2>&1 | grep -v '^Warning: max' | tee "$out/train.log"
grep -E '^(wgt|torch) [^ ]+ [^ ]+ tok/s ' "$out/train.log" >"$out/train.txt"
python3 tools/train_bench_chart.py "$out"
