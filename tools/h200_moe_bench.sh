#!/usr/bin/env bash
# Mixture-of-experts decode on the H200 (device tool), random weights of two real shapes scaled to
# fit (bench/configs/mixtral-8x7b-4l.json: Mixtral-8x7B's layers, 4 of 32; qwen3-30b-a3b-8l.json:
# Qwen3-30B-A3B's, 8 of 48), Q8_0 and Q4_0 (and f16): decode tok/s, the weights one decode step
# reads as wgt runs it and the active weights (attention, router, the k chosen experts, the head),
# and the active bytes per second against the H200's 4.16 TB/s (its device-to-device copy measures
# about 4.3 TB/s counting bytes read and written).
#
# Before (here), DIR a git-ignored folder of the repository root (e.g. .devbin-families):
#   mkdir -p DIR/build DIR/configs; cp build/wgt build/libwgt_napi_stub.so DIR/build/ (strip wgt)
#   cp bench/configs/{mixtral-8x7b-4l,qwen3-30b-a3b-8l}.json DIR/configs/
# Dawn: $DAWN (a dawn.node), else DIR/.deps/dawn-2026/dawn.node, else DIR/dawn.tar.xz unpacked, else
# the first .devbin-*/.deps/dawn-2026/dawn.node or .devbin-*/dawn.tar.xz of the repository root.
# The call (kind nvidia-h200; random weights are made on the device's host, ~1 s a GB):
#   carry [".gl", "DIR"]   command: bash DIR/h200_moe_bench.sh DIR   timeout_s: 150
# Output: stdout (the summary table last) and $OUT/moe_bench.txt. Environment: TYPES (q8_0 q4_0 f16),
# P (128), N (64), MODELS (the two config names), RUN_TIMEOUT (seconds a run, 120), BINS (binaries of
# DIR/build to compare, "wgt"), ENVS (environments to compare, "-" for none; e.g.
# "WGT_MOE_KERNELS=0 WGT_MOE_KERNELS=1": without and with the kernels that read only the chosen
# experts' weights, the default for quantized experts); every binary with every environment, one after the other for each row (A/B in one call).
set -u
dir=${1:?usage: tools/h200_moe_bench.sh DIR}
types=${TYPES:-q8_0 q4_0 f16} p=${P:-128} n=${N:-64}
models=${MODELS:-mixtral-8x7b-4l qwen3-30b-a3b-8l}
out=${OUT:-/tmp/h200_moe}
logs=/tmp/h200_moe_logs
mkdir -p "$out" "$logs"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
dawn=${DAWN:-}
for d in "$dir" .devbin-*; do
    [ -n "$dawn" ] && break
    [ ! -f "$d/.deps/dawn-2026/dawn.node" ] && [ -f "$d/dawn.tar.xz" ] && tar xJf "$d/dawn.tar.xz" -C "$d"
    [ -f "$d/.deps/dawn-2026/dawn.node" ] && dawn=$PWD/$d/.deps/dawn-2026/dawn.node
done
[ -n "$dawn" ] || { echo "no Dawn: set DAWN to a dawn.node"; exit 1; }
echo "Dawn: $dawn"
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
export WGT_WEBGPU_LIB=$dawn
export LD_LIBRARY_PATH=$PWD/$dir/build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
bins=${BINS:-wgt}
for b in $bins; do ldd "$dir/build/$b" | grep "not found"; done
gpu=$(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader)
echo "$gpu"
cfg() { [ -f "$dir/configs/$1.json" ] && echo "$dir/configs/$1.json" || echo "bench/configs/$1.json"; }
summary=$out/moe_bench.txt
{
    echo "# $gpu; wgt bench -p $p -n $n, random weights; active = attention + router + the k chosen experts + head"
    echo "variant model type decode_tok_s prefill_tok_s read_MB_per_token active_MB_per_token active_GB_s pct_of_4.16TB_s load_and_run_s"
} >"$summary"
for t in $types; do # type by type: a run cut short by the call's limit loses the last type, not a model
    for m in $models; do for b in $bins; do for e in ${ENVS:--}; do
        v=$b; [ "$e" != - ] && v=$b+$e
        echo "=== $v $m $t"
        f=$logs/$v-$m-$t.txt
        s=$(date +%s)
        env ${e#-} timeout "${RUN_TIMEOUT:-120}" "$dir/build/$b" bench -m "$(cfg "$m")" --type "$t" -p "$p" -n "$n" >"$f" 2>&1
        rc=$? secs=$(( $(date +%s) - s ))
        echo "exit $rc after $secs s" >>"$f"
        grep -v "artificially reduced" "$f"
        dec=$(sed -n 's/^decode: .* tokens, \([0-9.]*\) tok\/s.*/\1/p' "$f")
        read=$(sed -n 's/.*(\([0-9.]*\) MB read per token).*/\1/p' "$f")
        act=$(sed -n 's/^experts: \([0-9.]*\) MB of active.*/\1/p' "$f")
        pre=$(sed -n 's/^prefill: .* = \([0-9.]*\) tok\/s.*/\1/p' "$f")
        [ -z "$act" ] && act=$read
        awk -v b="$v" -v m="$m" -v t="$t" -v d="${dec:-0}" -v pf="${pre:-0}" -v r="${read:-0}" -v a="${act:-0}" -v s="$secs" 'BEGIN {
            g = a * d / 1000; printf "%s %s %s %.1f %.1f %.1f %.1f %.0f %.1f%% %d\n", b, m, t, d, pf, r, a, g, g / 41.6, s }' >>"$summary"
        tar czf "$out/moe_logs.tar.gz" -C "$logs" .
    done; done; done
done
cat "$summary"
