#!/usr/bin/env bash
# A/B of the row sums of matmul_gemv.wgsl and qlinear.wgsl's gemv moved onto lib_rowsum.wgsl
# (issue 12, h-wgsl), in ONE device-tool call of about 100 s: decode tok/s of the baseline wgt
# (main's) and the changed one, alternating, on qwen2.5-0.5b's shape with f16 weights (the LM head
# and other plain products through matmul_gemv) and q8_0 weights (qlinear's gemv), 2026 Dawn only;
# then a WGT_PROFILE=1 decode profile of each binary per type (the kernels' mean us per call), and
# test_gpu_matmul_gemv / test_gpu_qlinear of the changed build on the H200 (subgroups of 32).
#
# Before (here), DIR a git-ignored folder of /work/main (.devbin-* is in .git/info/exclude):
#   mkdir -p DIR/build/tests; cp .devbin-lead/dawn.tar.xz DIR/
#   cp BASE_BUILD/wgt DIR/build/wgt-base; cp NEW_BUILD/wgt NEW_BUILD/libwgt_napi_stub.so DIR/build/
#   cp NEW_BUILD/tests/test_gpu_matmul_gemv NEW_BUILD/tests/test_gpu_qlinear DIR/build/tests/
# The call (device tool `run`, kind nvidia-h200):
#   carry [".gl", "DIR"]   command: bash tools/h200_wgsl_ab.sh DIR   timeout_s: 300
# Output: stdout ends with the summary table; $OUT/wgsl_ab.tar.gz holds every log.
# Environment: MODEL (default bench/configs/qwen2.5-0.5b.json), TYPES ("f16 q8_0"), P (128),
# N (256), ROUNDS (2).
set -u
dir=${1:?usage: tools/h200_wgsl_ab.sh DIR}
model=${MODEL:-bench/configs/qwen2.5-0.5b.json}
types=${TYPES:-f16 q8_0} p=${P:-128} n=${N:-256} rounds=${ROUNDS:-2}
out=${OUT:-/tmp/h200_wgsl}
logs=/tmp/h200_wgsl_logs
mkdir -p "$out" "$logs"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
tar xJf "$dir/dawn.tar.xz" -C "$dir"
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
export WGT_WEBGPU_LIB=$PWD/$dir/.deps/dawn-2026/dawn.node
ldd "$dir/build/wgt" | grep "not found"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$logs/gpu.txt"

step() { # name, command...: the output to $logs/name.txt, its tail to stdout
    local name=$1; shift
    echo "=== $name: $*"
    timeout 60 "$@" >"$logs/$name.txt" 2>&1
    echo "exit $?" >>"$logs/$name.txt"
    grep -v "artificially reduced" "$logs/$name.txt" | tail -n 4
}

# warm-up: the clocks climb from idle for several seconds
step warmup "$dir/build/wgt" bench -m "$model" --type f16 -p "$p" -n 64
for t in $types; do
    for r in $(seq 1 "$rounds"); do
        for bin in wgt-base wgt; do step "$t-r$r-$bin" "$dir/build/$bin" bench -m "$model" --type "$t" -p "$p" -n "$n"; done
    done
    for bin in wgt-base wgt; do
        WGT_PROFILE=1 step "$t-profile-$bin" "$dir/build/$bin" bench -m "$model" --type "$t" -p 16 -n 64
        grep -E "kernel profile|matmul_gemv|qlinear|fused_linear" "$logs/$t-profile-$bin.txt"
    done
done
for t in test_gpu_matmul_gemv test_gpu_qlinear; do
    [ -x "$dir/build/tests/$t" ] && step "$t" "$dir/build/tests/$t"
done

{
    echo "# $(cat "$logs/gpu.txt"); wgt bench -m $model -p $p -n $n (2026 Dawn)"
    echo "type  round binary   prefill_tok_s decode_tok_s ms_per_token"
    for t in $types; do
        for r in $(seq 1 "$rounds"); do
            for bin in wgt-base wgt; do
                f=$logs/$t-r$r-$bin.txt
                pf=$(sed -n 's/^prefill: .* = \([0-9.]*\) tok\/s/\1/p' "$f")
                dc=$(sed -n 's/^decode: .*tokens, \([0-9.]*\) tok\/s, \([0-9.]*\) ms.*/\1 \2/p' "$f")
                printf '%-5s %-5s %-8s %-13s %s\n' "$t" "$r" "$bin" "${pf:-?}" "${dc:-? ?}"
            done
        done
    done
    echo "# mean us per call (WGT_PROFILE=1, -p 16 -n 64)"
    for t in $types; do
        for bin in wgt-base wgt; do
            grep -E "^ +(matmul_gemv|qlinear)[^ ]* " "$logs/$t-profile-$bin.txt" | awk -v t="$t" -v b="$bin" '{ print t, b, $1, $2, $4 }'
        done
    done
    for t in test_gpu_matmul_gemv test_gpu_qlinear; do echo "$t: $(tail -n 2 "$logs/$t.txt" 2>/dev/null | tr '\n' ' ')"; done
} | tee "$logs/summary.txt"
tar czf "$out/wgsl_ab.tar.gz" -C "$logs" .
