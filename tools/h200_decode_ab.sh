#!/usr/bin/env bash
# Decode on the H200 through two opt-in kernel paths against main's binary:
#   WGT_QLINEAR_BLOCKS (qlinear_fused.wgsl's entry `blocks`): a lane per whole Q8_0 / Q4_0 block read
#     as aligned words, fewer rows a workgroup where the rows are few; =1 stages SwiGLU's prologue
#     once a workgroup, =2 computes every prologue per row, =3 stages every prologue, x included;
#   WGT_FUSED_LINEAR_STAGE=1 (fused_linear.wgsl's entry `staged`): float layers' SwiGLU input once a
#     workgroup instead of once per row (the down projections).
# Decode tok/s of random-weight Qwen2.5-0.5B-shaped Q8_0, Q4_0 and f16 (-p 16 -n 128), main's binary
# and the branch's alternated in two rounds (A B A B), one WGT_PROFILE=1 decode table with =1,
# Llama-3.2-1B f16 (two rounds) and Q8_0 / Q4_0 (one), then where time is left: forced lanes a row
# (=1:32, =1:64, =1:128), Qwen Q8_0 at -p 512 (issue 14's rows), main's profile.
# About 90-105 s; steps starting past BUDGET seconds (default 85) are skipped and say so.
# Before (here): D (git-ignored, e.g. .devbin-perf3) holds bins.tar.xz (wgt-base: main's wgt,
# wgt: this branch's, libwgt_napi_stub.so, test_gpu_qlinear_fused, test_gpu_fused; stripped, unpacked into D/build)
# and this script. The device set-up (the .debs, the NVIDIA ICD, the Dawn, step) is
# tools/h200_common.sh's.
# The call: carry [".gl", "D", ".devbin-dawn"], command: bash D/h200_decode_ab.sh D, timeout_s 110.
# Output: the tails of every step and a summary table on stdout; $OUT/decode_ab.tar.gz with every log.
set -u
d=${1:-.devbin-perf3}
mkdir -p $d/build
[ -f $d/bins.tar.xz ] && [ ! -f $d/build/wgt ] && tar xJf $d/bins.tar.xz -C $d/build
: ${BUDGET:=85}
. tools/h200_common.sh "$d" /tmp/decode_logs
W=$d/build/wgt B=$d/build/wgt-base Q=bench/configs/qwen2.5-0.5b.json L=bench/configs/llama-3.2-1b.json
# the kernel against its oracle on the H200 (subgroups of 32): a failure voids the figures
[ -x $d/build/test_gpu_qlinear_fused ] && TAILN=3 step test timeout 25 $d/build/test_gpu_qlinear_fused
[ -x $d/build/test_gpu_fused ] && TAILN=2 step test-fused timeout 15 $d/build/test_gpu_fused
# the clocks climb from idle for a few seconds: one untimed run first
step warmup timeout 20 $W bench -m $Q --type q8_0 -p 16 -n 64
for r in 1 2; do
    for t in q8_0 q4_0; do
        step r$r-q-$t-base timeout 15 $B bench -m $Q --type $t -p 16 -n 128
        step r$r-q-$t-blk1 WGT_QLINEAR_BLOCKS=1 timeout 15 $W bench -m $Q --type $t -p 16 -n 128
        step r$r-q-$t-blk2 WGT_QLINEAR_BLOCKS=2 timeout 15 $W bench -m $Q --type $t -p 16 -n 128
        step r$r-q-$t-blk3 WGT_QLINEAR_BLOCKS=3 timeout 15 $W bench -m $Q --type $t -p 16 -n 128
    done
    step r$r-q-f16-base timeout 15 $B bench -m $Q --type f16 -p 16 -n 128
    step r$r-q-f16-stage WGT_FUSED_LINEAR_STAGE=1 timeout 15 $W bench -m $Q --type f16 -p 16 -n 128
    [ $r = 1 ] && TAILN=16 step prof-q-q8_0-blk1 WGT_PROFILE=1 WGT_QLINEAR_BLOCKS=1 timeout 15 $W bench -m $Q --type q8_0 -p 16 -n 64
done
for r in 1 2; do
    step r$r-l-f16-base timeout 15 $B bench -m $L --type f16 -p 16 -n 128
    step r$r-l-f16-stage WGT_FUSED_LINEAR_STAGE=1 timeout 15 $W bench -m $L --type f16 -p 16 -n 128
    [ $r = 2 ] && break
    for t in q8_0 q4_0; do
        step r$r-l-$t-base timeout 15 $B bench -m $L --type $t -p 16 -n 128
        step r$r-l-$t-blk1 WGT_QLINEAR_BLOCKS=1 timeout 15 $W bench -m $L --type $t -p 16 -n 128
    done
done
for n in 32 64 128; do step x-q-q8_0-blk1-$n WGT_QLINEAR_BLOCKS=1:$n timeout 15 $W bench -m $Q --type q8_0 -p 16 -n 128; done
step x-q-q8_0-p512-base timeout 15 $B bench -m $Q --type q8_0 -p 512 -n 128
step x-q-q8_0-p512-blk1 WGT_QLINEAR_BLOCKS=1 timeout 15 $W bench -m $Q --type q8_0 -p 512 -n 128
TAILN=16 step prof-q-q8_0-base WGT_PROFILE=1 timeout 15 $B bench -m $Q --type q8_0 -p 16 -n 64
{ echo "# $(cat $logs/gpu.txt); wgt bench -p 16 -n 128 (q: qwen2.5-0.5b, l: llama-3.2-1b; base: main;"
  echo "# blk1 / blk2 / blk3: WGT_QLINEAR_BLOCKS=1 / =2 / =3; stage: WGT_FUSED_LINEAR_STAGE=1)"
  echo "step                   decode_tok_s ms_per_token dispatches_per_token"
  for f in $logs/r*-*.txt $logs/x-*.txt; do
      [ -f $f ] || continue
      dc=$(sed -n 's/^decode: .*tokens, \([0-9.]*\) tok\/s, \([0-9.]*\) ms.*/\1 \2/p' $f)
      dp=$(sed -n 's/^per token: \([0-9.]*\) dispatches.*/\1/p' $f)
      printf '%-22s %-25s %s\n' $(basename $f .txt) "${dc:-? ?}" "${dp:-?}"; done; } | tee $logs/summary.txt
tar czf $out/decode_ab.tar.gz -C $logs .
