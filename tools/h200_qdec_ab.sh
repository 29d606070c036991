#!/usr/bin/env bash
# Issue 14's quantized decode rows on the H200: main's wgt (wgt-base) against h-qdec's (wgt: the entry
# `rows` of qlinear_fused.wgsl, WGT_QLINEAR_ROWS=auto, and qlinear_qkv_rope.wgsl's entry `blocks`,
# WGT_QLINEAR_QKV_BLOCKS=1), alternated, at -p 16 -n 128 (llama-bench's tg128) for Qwen2.5-0.5B /
# Llama-3.2-1B Q8_0 / Q4_0; round 1 also runs wgt with each of VARIANTS (NAME:VAR=VALUE); then
# WGT_PROFILE=1 decode tables of wgt (one Qwen, one Llama row), test_gpu_qlinear_fused, and -p 512
# -n 128 base / new. Steps past BUDGET seconds (default 88) are skipped and say so. ROUNDS (default 2)
# and VARIANTS change the plan.
# Before (here): D (git-ignored, .devbin-qdec) holds bins.tar.xz (build/wgt-base, build/wgt,
# build/libwgt_napi_stub.so, build/test_gpu_qlinear_fused; stripped) and this script.
# The call: carry [".gl", ".devbin-dawn", "D"], command: bash D/h200_qdec_ab.sh D, timeout 100.
# Output: the steps' tails and a summary on stdout; $OUT/qdec_ab.tar.gz with every log.
set -u
d=${1:-.devbin-qdec}
[ -f $d/bins.tar.xz ] && [ ! -f $d/build/wgt ] && tar xJf $d/bins.tar.xz -C $d
: ${BUDGET:=88}
. tools/h200_common.sh "$d" /tmp/qdec_logs
W=$d/build/wgt B=$d/build/wgt-base Q=bench/configs/qwen2.5-0.5b.json L=bench/configs/llama-3.2-1b.json
step warmup timeout 20 $W bench -m $Q --type q8_0 -p 16 -n 32
for r in $(seq 1 ${ROUNDS:-2}); do
    for m in q:$Q l:$L; do
        s=${m%%:*} c=${m#*:}
        for t in q8_0 q4_0; do
            step r$r-$s$t-base timeout 15 $B bench -m $c --type $t -p 16 -n 128
            step r$r-$s$t-new timeout 15 $W bench -m $c --type $t -p 16 -n 128
            if [ $r = 1 ]; then for v in ${VARIANTS:-rows0:WGT_QLINEAR_ROWS=0 qkv0:WGT_QLINEAR_QKV_BLOCKS=0 rows2:WGT_QLINEAR_ROWS=2 cap:WGT_QLINEAR_ROWS=4:0:1056}; do
                step r$r-$s$t-${v%%:*} ${v#*:} timeout 15 $W bench -m $c --type $t -p 16 -n 128
            done; fi
        done
    done
done
TAILN=12 step prof-q-q8_0 WGT_PROFILE=1 timeout 15 $W bench -m $Q --type q8_0 -p 16 -n 64
TAILN=12 step prof-l-q4_0 WGT_PROFILE=1 timeout 15 $W bench -m $L --type q4_0 -p 16 -n 64
[ -x $d/build/test_gpu_qlinear_fused ] && TAILN=2 step test-qlinear-fused timeout 30 $d/build/test_gpu_qlinear_fused
for m in q:$Q l:$L; do
    s=${m%%:*} c=${m#*:}
    for t in q8_0 q4_0; do
        step p512-$s$t-base timeout 15 $B bench -m $c --type $t -p 512 -n 128
        step p512-$s$t-new timeout 15 $W bench -m $c --type $t -p 512 -n 128
    done
done
{ echo "# $(cat $logs/gpu.txt); wgt bench (q: qwen2.5-0.5b, l: llama-3.2-1b; base: main, new: h-qdec,"
  echo "# other names: new with the script's VARIANTS); -p 16 -n 128 but p512-*: -p 512 -n 128"
  echo "step                   decode_tok_s ms_per_token dispatches_per_token"
  for f in $logs/r*-*.txt $logs/p512-*.txt; do
      [ -f $f ] || continue
      dc=$(sed -n 's/^decode: .*tokens, \([0-9.]*\) tok\/s, \([0-9.]*\) ms.*/\1 \2/p' $f)
      dp=$(sed -n 's/^per token: \([0-9.]*\) dispatches.*/\1/p' $f)
      printf '%-22s %-25s %s\n' $(basename $f .txt) "${dc:-? ?}" "${dp:-?}"; done; } | tee $logs/summary.txt
tar czf $out/qdec_ab.tar.gz -C $logs .
