#!/usr/bin/env bash
# A/B performance run on the H200 in ONE device-tool call: a baseline wgt and a changed wgt, each
# with the 2026 Dawn (default) and the 2025 Dawn, in alternating rounds from a warmed-up GPU, plus
# the subgroup-matrix check and a WGT_PROFILE=1 decode profile of the changed binary.
#
# Before (here), with DIR a git-ignored folder of /work/main (e.g. .devbin-perf, listed in
# .git/info/exclude):
#   mkdir -p DIR/build/tests
#   cp .devbin/deps/dawn.tar.xz DIR/                # both Dawns (tar of .deps/dawn, .deps/dawn-2026)
#   cp BASE_BUILD/wgt DIR/build/wgt-base; cp NEW_BUILD/wgt DIR/build/wgt
#   cp NEW_BUILD/libwgt_napi_stub.so DIR/build/; cp NEW_BUILD/tests/test_gpu_sgmatrix DIR/build/tests/
# The call (device tool `run`, kind nvidia-h200, about 4-6 minutes with the machine's start):
#   carry [".gl", "DIR"]   command: bash tools/h200_perf_ab.sh DIR   timeout_s: 540
# Output: stdout (the reply's tail: the summary table comes last) and $OUT/ab.tar.gz with every log.
# Environment: MODEL (default bench/configs/qwen2.5-0.5b.json), TYPE (f16), P (512), N (128),
# ROUNDS (2).
set -u
dir=${1:?usage: tools/h200_perf_ab.sh DIR}
model=${MODEL:-bench/configs/qwen2.5-0.5b.json}
type=${TYPE:-f16} p=${P:-512} n=${N:-128} rounds=${ROUNDS:-2}
out=${OUT:-/tmp/h200_ab}
logs=/tmp/h200_ab_logs
mkdir -p "$out" "$logs"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
tar xJf "$dir/dawn.tar.xz" -C "$dir"
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
lib2026=$PWD/$dir/.deps/dawn-2026/dawn.node
lib2025=$PWD/$dir/.deps/dawn/libwebgpu_wrapper.so
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$logs/gpu.txt"

step() { # name, lib, command...: the output to $logs/name.txt and stdout
    local name=$1 lib=$2; shift 2
    echo "=== $name: $*"
    WGT_WEBGPU_LIB=$lib timeout 240 "$@" >"$logs/$name.txt" 2>&1
    echo "exit $?" >>"$logs/$name.txt"
    grep -v "artificially reduced" "$logs/$name.txt" | tail -n 12
}

# The subgroup-matrix check and the library's own view of the device, 2026 Dawn.
step info-2026 "$lib2026" "$dir/build/wgt" info --selfcheck-floats 67108864
[ -x "$dir/build/tests/test_gpu_sgmatrix" ] && step sgmatrix-2026 "$lib2026" "$dir/build/tests/test_gpu_sgmatrix"
# Warm-up: the clocks climb from idle for several seconds (round 1 of 2026-12-01 was the clock).
step warmup "$lib2026" "$dir/build/wgt" bench -m "$model" --type "$type" -p "$p" -n 64

for r in $(seq 1 "$rounds"); do
    for bin in wgt-base wgt; do
        for which in 2026 2025; do
            lib=$lib2026; [ $which = 2025 ] && lib=$lib2025
            step "r$r-$bin-$which" "$lib" "$dir/build/$bin" bench -m "$model" --type "$type" -p "$p" -n "$n"
        done
    done
done
WGT_PROFILE=1 step profile-2026 "$lib2026" "$dir/build/wgt" bench -m "$model" --type "$type" -p 16 -n 32

{
    echo "# $(cat "$logs/gpu.txt"); wgt bench -m $model --type $type -p $p -n $n"
    echo "round binary   lib  prefill_tok_s decode_tok_s ms_per_token host_us_per_dispatch dispatches_per_token"
    for r in $(seq 1 "$rounds"); do
        for bin in wgt-base wgt; do
            for which in 2026 2025; do
                f=$logs/r$r-$bin-$which.txt
                pf=$(sed -n 's/^prefill: .* = \([0-9.]*\) tok\/s/\1/p' "$f")
                dc=$(sed -n 's/^decode: .*tokens, \([0-9.]*\) tok\/s, \([0-9.]*\) ms.*/\1 \2/p' "$f")
                hd=$(sed -n 's/^per token: \([0-9.]*\) dispatches.*(\([0-9.]*\) us per dispatch)/\2 \1/p' "$f")
                printf '%-5s %-8s %-4s %-13s %-26s %s\n' "$r" "$bin" "$which" "${pf:-?}" "${dc:-? ?}" "${hd:-? ?}"
            done
        done
    done
} | tee "$logs/summary.txt"
tar czf "$out/ab.tar.gz" -C "$logs" .
