#!/usr/bin/env bash
# Issue 14's six decode rows on the H200, main's binary against this branch's (its new defaults:
# fused_linear's rows entry, WGT_FUSED_LINEAR_ROWS=auto; attention_decode_v4, WGT_ATTENTION_DECODE=
# v4:1024), alternated in two rounds (A B A B) at -p 512 -n 128 (the table), the f16 rows
# also with WGT_FUSED_LINEAR_ROWS=4 (R = 4 everywhere instead of auto's 2 for the smaller layers);
# the kernels' tests first (test_gpu_fused, test_gpu_attention_rope: a failure voids the figures),
# then where time is left WGT_PROFILE=1 decode tables and -p 16 rows. Steps past BUDGET seconds
# (default 88) are skipped and say so.
# Before (here): D (git-ignored, e.g. .devbin-perf) holds bins.tar.xz (wgt-base: main's wgt, wgt:
# this branch's, libwgt_napi_stub.so, test_gpu_fused, test_gpu_attention_rope; stripped, unpacked
# into D/build) and this script. The device set-up is tools/h200_common.sh's.
# The call: carry [".gl", "D", ".devbin-dawn"], command: bash D/h200_decode_rows_ab.sh D, timeout_s 100.
# Output: the steps' tails and a summary table on stdout; $OUT/decode_rows_ab.tar.gz with every log.
set -u
d=${1:-.devbin-perf}
mkdir -p $d/build
[ -f $d/bins.tar.xz ] && [ ! -f $d/build/wgt ] && tar xJf $d/bins.tar.xz -C $d/build
: ${BUDGET:=88}
. tools/h200_common.sh "$d" /tmp/dab_logs
W=$d/build/wgt B=$d/build/wgt-base Q=bench/configs/qwen2.5-0.5b.json L=bench/configs/llama-3.2-1b.json
[ -x $d/build/test_gpu_fused ] && TAILN=2 step test-fused timeout 20 $d/build/test_gpu_fused
[ -x $d/build/test_gpu_attention_rope ] && TAILN=2 step test-attention timeout 25 $d/build/test_gpu_attention_rope
step warmup timeout 20 $W bench -m $Q --type f16 -p 16 -n 64
for r in 1 2; do
    for m in q:$Q l:$L; do
        s=${m%%:*} c=${m#*:}
        for t in f16 q8_0 q4_0; do
            step r$r-$s$t-base timeout 15 $B bench -m $c --type $t -p 512 -n 128
            step r$r-$s$t-new timeout 15 $W bench -m $c --type $t -p 512 -n 128
            [ $t = f16 ] && step r$r-$s$t-rows4 WGT_FUSED_LINEAR_ROWS=4 timeout 15 $W bench -m $c --type $t -p 512 -n 128
        done
    done
done
TAILN=9 step prof-q-f16 WGT_PROFILE=1 timeout 15 $W bench -m $Q --type f16 -p 512 -n 64
TAILN=9 step prof-l-f16 WGT_PROFILE=1 timeout 15 $W bench -m $L --type f16 -p 512 -n 64
for m in q:$Q l:$L; do
    s=${m%%:*} c=${m#*:}
    step p16-$s-f16-base timeout 15 $B bench -m $c --type f16 -p 16 -n 128
    step p16-$s-f16-new timeout 15 $W bench -m $c --type f16 -p 16 -n 128
done
{ echo "# $(cat $logs/gpu.txt); wgt bench (q: qwen2.5-0.5b, l: llama-3.2-1b; base: main, new: h-perf's defaults,"
  echo "# rows4: new with WGT_FUSED_LINEAR_ROWS=4)"
  echo "# -p 512 -n 128 but p16-*: -p 16 -n 128"
  echo "step                   decode_tok_s ms_per_token dispatches_per_token"
  for f in $logs/r*-*.txt $logs/p16-*.txt; do
      [ -f $f ] || continue
      dc=$(sed -n 's/^decode: .*tokens, \([0-9.]*\) tok\/s, \([0-9.]*\) ms.*/\1 \2/p' $f)
      dp=$(sed -n 's/^per token: \([0-9.]*\) dispatches.*/\1/p' $f)
      printf '%-22s %-25s %s\n' $(basename $f .txt) "${dc:-? ?}" "${dp:-?}"; done; } | tee $logs/summary.txt
tar czf $out/decode_rows_ab.tar.gz -C $logs .
