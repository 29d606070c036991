#!/usr/bin/env bash
# Quantized prefill on the tensor cores (issue 14, helper qpre, 2026-12-03): src/kernels/matmul_tcq.wgsl,
# the default since the first call (bench/results/h200/qpre-2026-12-03: WGT_QLINEAR_TC=1 against =0,
# qlinear.wgsl's f32 tiles). This second call, one binary: test_gpu_qlinear_tc on the H200, then
# alternated rounds on Qwen2.5-0.5B Q8_0 / Q4_0 at -p 512 -n 128 of the default tile (4x2:2x4 for
# every product) against WGT_QLINEAR_TC_TILE=auto (64 x 64 tiles for products of few tiles over a
# short k: Qwen's q, k, v, o, gate and up; Llama's k is never short), the comparator
# WGT_QLINEAR_TC=deq (each weight dequantised into an f16 copy, then matmul_tcd) and the control
# WGT_QLINEAR_TC=0 on all four rows, the f16 rows (matmul_tcd) for reference, and WGT_PROFILE=1
# prefill tables. ROUNDS (default "1 2") names the default / auto rounds.
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
for r in ${ROUNDS:-1 2}; do
    for row in qq8_0:$Q:q8_0 qq4_0:$Q:q4_0; do
        n=${row%%:*} rest=${row#*:}; c=${rest%%:*} t=${rest#*:}
        step r$r-$n-default timeout 15 $W bench -m $c --type $t -p 512 -n 128
        step r$r-$n-auto WGT_QLINEAR_TC_TILE=auto timeout 15 $W bench -m $c --type $t -p 512 -n 128
    done
done
# ONLY_AUTO=1 (a third call): the rounds above, the f16 references and the profiles only
for row in qq8_0:$Q:q8_0 qq4_0:$Q:q4_0 lq8_0:$L:q8_0 lq4_0:$L:q4_0; do
    [ -n "${ONLY_AUTO:-}" ] && break
    n=${row%%:*} rest=${row#*:}; c=${rest%%:*} t=${rest#*:}
    step r1-$n-deq WGT_QLINEAR_TC=deq timeout 15 $W bench -m $c --type $t -p 512 -n 128
    step r1-$n-off WGT_QLINEAR_TC=0 timeout 15 $W bench -m $c --type $t -p 512 -n 128
done
# f16 weights (matmul_tcd) in the same call, for reference
step r1-qf16 timeout 15 $W bench -m $Q --type f16 -p 512 -n 128
step r1-lf16 timeout 15 $W bench -m $L --type f16 -p 512 -n 128
TAILN=24 step prof-qq8_0-auto WGT_QLINEAR_TC_TILE=auto WGT_PROFILE=1 timeout 15 $W bench -m $Q --type q8_0 -p 512 -n 2
TAILN=24 step prof-qq8_0-deq WGT_QLINEAR_TC=deq WGT_PROFILE=1 timeout 15 $W bench -m $Q --type q8_0 -p 512 -n 2
TAILN=24 step prof-lq4_0-default WGT_PROFILE=1 timeout 15 $W bench -m $L --type q4_0 -p 512 -n 2
{ echo "# $(cat $logs/gpu.txt); prefill tok/s | decode tok/s"
  for f in $logs/*.txt; do
      pf=$(sed -n 's/^prefill: .* = \([0-9.]*\) tok\/s.*/\1/p' $f)
      dc=$(sed -n 's/^decode: .*tokens, \([0-9.]*\) tok\/s.*/\1/p' $f)
      [ -n "$pf" ] && printf '%-24s %10s | %s\n' $(basename $f .txt) "$pf" "$dc"; done
  grep -H "passed\|failed\|FAIL" $logs/test.txt | head -5; } | tee $logs/summary.txt
tar czf $out/qpre.tar.gz -C $logs .
