#!/usr/bin/env bash
# Training speed A/B on the H200 in one short device call (issue 13): `wgt bench --train` (AdamW,
# random ids: tokens/s, ms a step, peak device memory) of a baseline binary and a changed one,
# alternating, for GPT-2 small (bench/configs/gpt2-small.json, batch 8 x 512, f32) and the default
# model's shape (models/bible-llama/config.json, batch 32 x 256, f32): the shapes of
# tools/h200_train_bench.sh, without PyTorch's runs (their figures are in bench/results/h200/train.txt).
# Before (here), DIR a git-ignored folder of /work/main (.devbin-*):
#   DIR/wgt-before, DIR/wgt (the two builds), DIR/libwgt_napi_stub.so, DIR/dawn.tar.xz (.devbin-lead's)
# The call (device tool `run`, nvidia-h200, about 90 s with the machine warm):
#   carry [".gl", "DIR"]   command: bash tools/h200_train_ab.sh DIR   timeout_s: 240
# Output: the summary table last on stdout, every log in $OUT/train_ab.txt. STEPS / WARMUP: GPT-2
# small's timed and untimed steps (default 4 / 2; the default model's shape runs 10 / 3).
set -u
dir=${1:?usage: tools/h200_train_ab.sh DIR}
out=${OUT:-/tmp/h200_train_ab}
steps=${STEPS:-4} warmup=${WARMUP:-2}
mkdir -p "$out" build
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
tar xJf "$dir/dawn.tar.xz" -C "$dir"
cp "$dir/libwgt_napi_stub.so" build/
cp "$dir/wgt" build/wgt-after
cp "$dir/wgt-before" build/wgt-before
ldd build/wgt-after | grep "not found"
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
export WGT_WEBGPU_LIB=$PWD/$dir/.deps/dawn-2026/dawn.node
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
log=$out/train_ab.txt
: >"$log"
bench() { # binary name config B L steps warmup
    echo "=== $1 $2" >>"$log"
    timeout 100 "./build/wgt-$1" bench --train -m "$3" --name "$2" --batch "$4" --seq "$5" --dtype f32 \
        --steps "$6" --warmup "$7" 2>&1 | grep -v "artificially reduced" >>"$log"
}
for bin in before after before after; do
    bench "$bin" bible-llama models/bible-llama/config.json 32 256 10 3
done
for bin in before after; do
    bench "$bin" gpt2-small bench/configs/gpt2-small.json 8 512 "$steps" "$warmup"
done
grep -E "^=== |tok/s|error|wgt:" "$log" | grep -v "^wgt: warning" | tail -n 30
