#!/usr/bin/env bash
# Quantized prefill on the tensor cores (issue 14, helper qpre, 2026-12-03): src/kernels/matmul_tcq.wgsl
# (WGT_QLINEAR_TC=1) against qlinear.wgsl's f32 tiles (WGT_QLINEAR_TC=0, the default: main's path),
# the same binary, alternated rounds, Qwen2.5-0.5B and Llama-3.2-1B Q8_0 / Q4_0 at -p 512 -n 128;
# WGT_QLINEAR_TC=deq (the weight dequantised into an f16 copy, then matmul_tcd) as a comparator;
# first test_gpu_qlinear_tc on the H200 (emulated tiles and the subgroup-matrix fragments against
# the CPU dequant oracle), last a WGT_PROFILE=1 prefill table and other tiles.
# Before (here): D (git-ignored, .devbin-qpre) holds bins.tar.xz (wgt, test_gpu_qlinear_tc,
# libwgt_napi_stub.so, stripped) and this script. The call: BUDGET=84 bash D/h200_qpre_ab.sh D
# from the repository root, timeout 100 s; $OUT/qpre.tar.gz has every step's log and summary.txt.
set -u
d=${1:-.devbin-qpre}
mkdir -p $d/build
[ -f $d/bins.tar.xz ] && [ ! -f $d/build/wgt ] && tar xJf $d/bins.tar.xz -C $d/build
: ${BUDGET:=84}
. tools/h200_common.sh "$d" /tmp/qpre_logs
W=$d/build/wgt Q=bench/configs/qwen2.5-0.5b.json L=bench/configs/llama-3.2-1b.json
TAILN=6 step test timeout 25 $d/build/test_gpu_qlinear_tc
for r in 1 2; do
    for row in qq8_0:$Q:q8_0 qq4_0:$Q:q4_0 lq8_0:$L:q8_0 lq4_0:$L:q4_0; do
        n=${row%%:*} rest=${row#*:}; c=${rest%%:*} t=${rest#*:}
        step r$r-$n-before WGT_QLINEAR_TC=0 timeout 15 $W bench -m $c --type $t -p 512 -n 128
        step r$r-$n-after WGT_QLINEAR_TC=1 timeout 15 $W bench -m $c --type $t -p 512 -n 128
    done
done
TAILN=24 step prof-qq8_0-after WGT_QLINEAR_TC=1 WGT_PROFILE=1 timeout 15 $W bench -m $Q --type q8_0 -p 512 -n 2
# the comparator: each weight dequantised into an f16 copy, then matmul_tcd
step r1-qq8_0-deq WGT_QLINEAR_TC=deq timeout 15 $W bench -m $Q --type q8_0 -p 512 -n 16
step r1-lq8_0-deq WGT_QLINEAR_TC=deq timeout 15 $W bench -m $L --type q8_0 -p 512 -n 16
for tile in 2x2:2x2 4x2:2x2 2x4:2x2; do
    step tile-${tile/:/-}-qq8_0 WGT_QLINEAR_TC=1 WGT_QLINEAR_TC_TILE=$tile timeout 15 $W bench -m $Q --type q8_0 -p 512 -n 16
done
TAILN=24 step prof-lq8_0-after WGT_QLINEAR_TC=1 WGT_PROFILE=1 timeout 15 $W bench -m $L --type q8_0 -p 512 -n 2
{ echo "# $(cat $logs/gpu.txt); prefill tok/s | decode tok/s"
  for f in $logs/*.txt; do
      pf=$(sed -n 's/^prefill: .* = \([0-9.]*\) tok\/s.*/\1/p' $f)
      dc=$(sed -n 's/^decode: .*tokens, \([0-9.]*\) tok\/s.*/\1/p' $f)
      [ -n "$pf" ] && printf '%-24s %10s | %s\n' $(basename $f .txt) "$pf" "$dc"; done
  grep -H "passed\|failed\|FAIL" $logs/test.txt | head -5; } | tee $logs/summary.txt
tar czf $out/qpre.tar.gz -C $logs .
