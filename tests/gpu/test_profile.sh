#!/usr/bin/env bash
# The kernel profiler: WGT_PROFILE=1 prints a per-kernel table whose calls add up to the dispatches
# the run made (lavapipe has timestamp queries), with bytes a call, GB/s and GFLOP/s that agree with
# each other and with the product's shape; a bad value is an error naming the variable.
set -u
wgt=${WGT_BIN:?} root=${WGT_ROOT:?}
fail=0
out=$(WGT_BACKEND=vulkan WGT_PROFILE=1 "$wgt" generate -m "$root/models/bible-llama.gguf" --prompt-ids 1,2,3 -n 3 \
      --ignore-eos --print-ids 2>&1 >/dev/null)
echo "$out"
total=$(sed -n 's/^kernel profile: \([0-9]*\) dispatches.*/\1/p' <<<"$out")
# a row: the kernel's name (digits, and for fused kernels ':' '+' '>', may be in it), then its calls
sum=$(awk '/^  [a-z][^ ]* +[0-9]+ +[0-9.]+ / {s += $2} END {print s + 0}' <<<"$out")
if [ -z "$total" ] || [ "$total" -lt 10 ] || [ "$sum" != "$total" ]; then
    echo "FAIL: profile table missing or calls ($sum) do not add up to the dispatches ($total)"; fail=1
fi
grep -q "^  matmul_gemv " <<<"$out" || { echo "FAIL: no matmul_gemv row (the decode matvec kernel)"; fail=1; }
# bytes and FLOPs: fused_linear declares both (not the bound ranges: no ~); its GB/s is its bytes over
# its time, and over f16 weights a matrix-vector product does 2 FLOPs per weight of 2 bytes, so
# GFLOP/s over GB/s is just under 1 (x, the norm weight and y add a few bytes)
row=$(grep "^  fused_linear " <<<"$out")
grep -q " ~ " <<<"$row" && { echo "FAIL: fused_linear's bytes are not declared: $row"; fail=1; }
read -r _ calls ms _ _ mb gbs gflops <<<"$row"
awk -v c="$calls" -v ms="$ms" -v mb="$mb" -v g="$gbs" -v f="$gflops" 'BEGIN {
    want = ms > 0 ? mb * c / ms : 0;   # MB per ms = GB/s
    ok = ms > 0 && mb > 0.1 && g > 0 && (g - want) ^ 2 <= (0.01 * want) ^ 2 && f / g > 0.8 && f / g < 1.0
    exit !ok }' || { echo "FAIL: fused_linear's MB/call, GB/s, GFLOP/s disagree: $row"; fail=1; }
grep -q "^  kernel .*MB/call *GB/s *GFLOP/s" <<<"$out" || { echo "FAIL: no MB/call, GB/s, GFLOP/s columns"; fail=1; }
grep -q "^  (~: bytes of the bound ranges" <<<"$out" || { echo "FAIL: no legend for rows without declared bytes"; fail=1; }
# WGT_PROFILE=pass: a row per pass size ("pass of N dispatches"), whose N x calls add up to the dispatches
out=$(WGT_BACKEND=vulkan WGT_PROFILE=pass "$wgt" generate -m "$root/models/bible-llama.gguf" --prompt-ids 1,2,3 -n 3 \
      --ignore-eos --print-ids 2>&1 >/dev/null)
echo "$out"
total=$(sed -n 's/^kernel profile: \([0-9]*\) dispatches, .* (whole passes timed)$/\1/p' <<<"$out")
sum=$(awk '/^  pass of [0-9]+ dispatches +[0-9]+ / {s += $3 * $5} END {print s + 0}' <<<"$out")
if [ -z "$total" ] || [ "$total" -lt 10 ] || [ "$sum" != "$total" ]; then
    echo "FAIL: WGT_PROFILE=pass: no pass table, or its passes' dispatches ($sum) do not add up to $total"; fail=1
fi
bad=$(WGT_PROFILE=yes "$wgt" info 2>&1)
if [ $? = 0 ] || ! grep -q "WGT_PROFILE" <<<"$bad"; then echo "FAIL: WGT_PROFILE=yes accepted: $bad"; fail=1; fi
[ $fail = 0 ] && echo "profile: ok"
exit $fail
