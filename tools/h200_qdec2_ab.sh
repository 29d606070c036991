#!/usr/bin/env bash
# qdec (session 10): main's wgt (build/wgt-base) against h-qdec's (build/wgt), -p 16 -n 128, the four
# quantized rows alternated base/new for ROUNDS rounds, after test_gpu_qlinear_fused (new) and
# WGT_PROFILE=2 decode tables of Llama Q4_0 (base and new, -p 16 -n 32); then VARIANTS of new
# (NAME:VAR=VALUE[+VAR=VALUE]; a value may hold commas) on VROWS while BUDGET lasts.
# Call: carry [".gl", ".devbin-dawn", D], command: bash tools/h200_qdec2_ab.sh D, D (git-ignored)
# holding bins.tar.xz (build/wgt, build/wgt-base, build/libwgt_napi_stub.so and
# build/test_gpu_qlinear_fused, stripped). Runs: bench/results/h200/qdec-2026-12-03b/.
set -u
d=${1:-.devbin-qdec}
[ -f $d/bins.tar.xz ] && [ ! -f $d/build/wgt ] && tar xJf $d/bins.tar.xz -C $d
: ${BUDGET:=140}
. tools/h200_common.sh "$d" /tmp/qdec_logs
export WGT_NAPI_STUB=$PWD/$d/build/libwgt_napi_stub.so
W=$d/build/wgt B=$d/build/wgt-base Q=bench/configs/qwen2.5-0.5b.json L=bench/configs/llama-3.2-1b.json
[ -x $d/build/test_gpu_qlinear_fused ] && TAILN=2 step test-qlinear-fused timeout 40 $d/build/test_gpu_qlinear_fused
TAILN=16 step prof-base-lq4_0 WGT_PROFILE=2 timeout 15 $B bench -m $L --type q4_0 -p 16 -n 32
TAILN=16 step prof-new-lq4_0 WGT_PROFILE=2 timeout 15 $W bench -m $L --type q4_0 -p 16 -n 32
for r in $(seq 1 ${ROUNDS:-2}); do
    for row in ${ROWS:-lq4_0 lq8_0 qq4_0 qq8_0}; do
        c=$Q; [ ${row:0:1} = l ] && c=$L
        TAILN=1 step r$r-$row-base timeout 15 $B bench -m $c --type ${row:1} -p 16 -n 128
        TAILN=1 step r$r-$row-new timeout 15 $W bench -m $c --type ${row:1} -p 16 -n 128
    done
done
for v in ${VARIANTS:-}; do
    for row in ${VROWS:-lq4_0 lq8_0 qq4_0 qq8_0}; do
        c=$Q; [ ${row:0:1} = l ] && c=$L
        e=${v#*:}
        TAILN=1 step v-$row-${v%%:*} ${e//+/ } timeout 15 $W bench -m $c --type ${row:1} -p 16 -n 128
    done
done
{ echo "# $(cat $logs/gpu.txt); wgt bench -p 16 -n 128 (q: qwen2.5-0.5b, l: llama-3.2-1b; base: main, new: h-qdec; v-*: new with VARIANTS)"
  echo "step                   decode_tok_s ms_per_token dispatches_per_token"
  for f in $logs/r*-*.txt $logs/v-*.txt; do
      [ -f $f ] || continue
      dc=$(sed -n 's/^decode: .*tokens, \([0-9.]*\) tok\/s, \([0-9.]*\) ms.*/\1 \2/p' $f)
      dp=$(sed -n 's/^per token: \([0-9.]*\) dispatches.*/\1/p' $f)
      printf '%-24s %-25s %s\n' $(basename $f .txt) "${dc:-? ?}" "${dp:-?}"; done; } | tee $logs/summary.txt
tar czf $out/qdec.tar.gz -C $logs .
