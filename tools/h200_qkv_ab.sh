#!/usr/bin/env bash
# Quantized decode on the H200 with the fused q/k/v kernel (WGT_QLINEAR_QKV=1,
# src/kernels/qlinear_qkv_rope.wgsl: the norm, the q/k/v product, the rotation and the cache writes
# in one dispatch instead of two a layer) against main's binary: decode tok/s of random-weight
# Qwen2.5-0.5B-shaped Q8_0 and Q4_0 (-p 16 -n 128), the two binaries alternated in rounds, then
# WGT_PROFILE=1 decode tables of both types with the kernel on and main's, then two forced pair
# counts (WGT_QLINEAR_QKV=1:N), where time is left.
# About 60-80 s; steps starting past BUDGET seconds (default 65) are skipped and say so.
# Before (here): D (git-ignored, e.g. .devbin-perf2) holds bins.tar.xz (wgt-base: main's wgt,
# wgt: this branch's, libwgt_napi_stub.so, test_gpu_qlinear_fused; stripped, unpacked into D/build)
# and this script.
# The device set-up (the .debs, the NVIDIA ICD, the Dawn, step) is tools/h200_common.sh's.
# The call: carry [".gl", "D", ".devbin-dawn"], command: bash D/h200_qkv_ab.sh D, timeout_s 90.
# Output: the tails of every step and a summary table on stdout; $OUT/qkv_ab.tar.gz with every log.
set -u
d=${1:-.devbin-perf2}
mkdir -p $d/build
[ -f $d/bins.tar.xz ] && [ ! -f $d/build/wgt ] && tar xJf $d/bins.tar.xz -C $d/build
: ${BUDGET:=65}
. tools/h200_common.sh "$d" /tmp/qkv_logs
W=$d/build/wgt B=$d/build/wgt-base Q=bench/configs/qwen2.5-0.5b.json
# the kernel against its oracle on the H200 (subgroups of 32), where a pass is the first thing to know
[ -x $d/build/test_gpu_qlinear_fused ] && TAILN=4 step test timeout 20 $d/build/test_gpu_qlinear_fused
# the clocks climb from idle for a few seconds: one untimed run first
step warmup timeout 20 $W bench -m $Q --type q8_0 -p 16 -n 64
for r in 1 2; do for t in q8_0 q4_0; do
    step r$r-$t-base timeout 15 $B bench -m $Q --type $t -p 16 -n 128
    step r$r-$t-qkv WGT_QLINEAR_QKV=1 timeout 15 $W bench -m $Q --type $t -p 16 -n 128
done; done
for t in q8_0 q4_0; do
    TAILN=24 step prof-$t-qkv WGT_PROFILE=1 WGT_QLINEAR_QKV=1 timeout 15 $W bench -m $Q --type $t -p 16 -n 64
done
for t in q8_0 q4_0; do
    TAILN=24 step prof-$t-base WGT_PROFILE=1 timeout 15 $B bench -m $Q --type $t -p 16 -n 64
done
# tuning, where time is left: 8 and 4 row pairs a workgroup (32 and 64 lanes a pair) instead of the
# kernel's choice for Qwen's 576 pairs (2: 128 lanes a pair, 288 workgroups)
for n in 8 4; do step x-q8_0-qkv$n WGT_QLINEAR_QKV=1:$n timeout 15 $W bench -m $Q --type q8_0 -p 16 -n 128; done
{ echo "# $(cat $logs/gpu.txt); wgt bench -m $Q -p 16 -n 128 (base: main; qkv: WGT_QLINEAR_QKV=1)"
  echo "step            decode_tok_s ms_per_token dispatches_per_token"
  for f in $logs/r*-*.txt $logs/x-*.txt; do
      dc=$(sed -n 's/^decode: .*tokens, \([0-9.]*\) tok\/s, \([0-9.]*\) ms.*/\1 \2/p' $f)
      dp=$(sed -n 's/^per token: \([0-9.]*\) dispatches.*/\1/p' $f)
      printf '%-15s %-25s %s\n' $(basename $f .txt) "${dc:-? ?}" "${dp:-?}"; done; } | tee $logs/summary.txt
tar czf $out/qkv_ab.tar.gz -C $logs .
