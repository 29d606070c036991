#!/usr/bin/env bash
# Issue 14's six rows on the H200, kernel by kernel: for Qwen2.5-0.5B and Llama-3.2-1B shapes in f16,
# q8_0 and q4_0 (random weights), a WGT_PROFILE=1 decode profile (-p 16 -n 128), a WGT_PROFILE=1
# prefill profile (-p 512 -n 2), then the plain figures (-p 512 -n 128, warm: wgt bench's untimed
# run of the same lengths comes first). One device call of at most ~140 s: steps past the budget
# are skipped and say so.
# Before (here): D (git-ignored, e.g. .devbin-perf) holds build/wgt and build/libwgt_napi_stub.so
# (stripped) and this script; a Dawn 2026 dawn.node is found at $WGT_WEBGPU_LIB, D/.deps/dawn-2026,
# .deps/dawn-2026 or inside D/dawn.tar.xz.
# The call: carry [".gl", "D"] (+ the Dawn), command: bash D/h200_profile_rows.sh D, timeout_s 150.
# Output: the tails of every step on stdout; $OUT/profile_rows.tar.gz with every log.
set -u
d=${1:-.devbin-perf}
. tools/h200_common.sh "$d" /tmp/pr_logs
W=$d/build/wgt Q=bench/configs/qwen2.5-0.5b.json L=bench/configs/llama-3.2-1b.json
for m in q l; do for t in f16 q8_0 q4_0; do
    c=$Q; [ $m = l ] && c=$L
    TAILN=18 step $m$t-decode-prof WGT_PROFILE=1 timeout 25 $W bench -m $c --type $t -p 16 -n 128
    TAILN=14 step $m$t-prefill-prof WGT_PROFILE=1 timeout 25 $W bench -m $c --type $t -p 512 -n 2
done; done
for m in q l; do for t in f16 q8_0 q4_0; do
    c=$Q; [ $m = l ] && c=$L
    step $m$t-plain timeout 20 $W bench -m $c --type $t -p 512 -n 128
done; done
{ cat $logs/gpu.txt; for f in $logs/*-plain.txt; do
    printf '%-10s %s | %s\n' $(basename $f -plain.txt) "$(grep -m1 '^prefill' $f)" "$(grep -m1 '^decode' $f)"; done; } | tee $logs/summary.txt
tar czf $out/profile_rows.tar.gz -C $logs .
