#!/usr/bin/env bash
# Issue 14's quantized decode rows on the H200: main's wgt (wgt-base) against h-qdec's (wgt), alternated
# (base, new for each row), for Qwen2.5-0.5B / Llama-3.2-1B Q8_0 / Q4_0 at each prompt length of PS
# (default "16 512": -p 16 -n 128 is llama-bench's tg128, -p 512 -n 128 the table), ROUNDS
# rounds (default 2), after test_gpu_qlinear_fused (a failure voids the figures) and WGT_PROFILE=2
# decode tables of wgt (one Qwen, one Llama row, -p 16 -n 32; they also warm the GPU up); then wgt
# with each of VARIANTS (NAME:VAR=VALUE, -p 16) for each row of VROWS (default Llama Q4_0, Qwen Q8_0,
# Llama Q8_0, Qwen Q4_0) where time is left. PROFS (default "q l") picks the profiles. Steps past BUDGET seconds (default 88) are skipped and say so.
# Before (here): D (git-ignored, .devbin-qdec) holds bins.tar.xz (build/wgt-base, build/wgt,
# build/libwgt_napi_stub.so, build/test_gpu_qlinear_fused; stripped) and this script.
# The call: carry [".gl", ".devbin-dawn", "D"], command: bash D/h200_qdec_ab.sh D, timeout 100.
# Output: the steps' tails and a summary on stdout; $OUT/qdec_ab.tar.gz with every log.
# Runs (bench/results/h200/qdec-2026-12-03/): 10:02 call A (RB = 4 / 2 by workgroups, the qkv entry
# `blocks` for every weight; variants), 10:19 call B (the defaults' A/B), call C (64 lanes a pair
# where rows have >= 64 blocks against the defaults; variants of SwiGLU's setting).
set -u
d=${1:-.devbin-qdec}
[ -f $d/bins.tar.xz ] && [ ! -f $d/build/wgt ] && tar xJf $d/bins.tar.xz -C $d
: ${BUDGET:=88}
. tools/h200_common.sh "$d" /tmp/qdec_logs
W=$d/build/wgt B=$d/build/wgt-base Q=bench/configs/qwen2.5-0.5b.json L=bench/configs/llama-3.2-1b.json
[ -x $d/build/test_gpu_qlinear_fused ] && TAILN=2 step test-qlinear-fused timeout 30 $d/build/test_gpu_qlinear_fused
case " ${PROFS:-q l} " in *" q "*) TAILN=12 step prof-q-q8_0 WGT_PROFILE=2 timeout 15 $W bench -m $Q --type q8_0 -p 16 -n 32;; esac
case " ${PROFS:-q l} " in *" l "*) TAILN=12 step prof-l-q4_0 WGT_PROFILE=2 timeout 15 $W bench -m $L --type q4_0 -p 16 -n 32;; esac
for r in $(seq 1 ${ROUNDS:-2}); do
    for pl in ${PS:-16 512}; do
        for m in q:$Q l:$L; do
            s=${m%%:*} c=${m#*:}
            for t in q8_0 q4_0; do
                step r$r-p$pl-$s$t-base timeout 15 $B bench -m $c --type $t -p $pl -n 128
                step r$r-p$pl-$s$t-new timeout 15 $W bench -m $c --type $t -p $pl -n 128
            done
        done
    done
done
for row in ${VROWS:-lq4_0 qq8_0 lq8_0 qq4_0}; do
    c=$Q; [ ${row:0:1} = l ] && c=$L
    for v in ${VARIANTS:-}; do
        step v-p16-$row-${v%%:*} ${v#*:} timeout 15 $W bench -m $c --type ${row:1} -p 16 -n 128
    done
done
{ echo "# $(cat $logs/gpu.txt); wgt bench -n 128 (q: qwen2.5-0.5b, l: llama-3.2-1b; base: main, new: h-qdec,"
  echo "# v-*: new with the script's VARIANTS; pN: -p N)"
  echo "step                   decode_tok_s ms_per_token dispatches_per_token"
  for f in $logs/r*-*.txt $logs/v-*.txt; do
      [ -f $f ] || continue
      dc=$(sed -n 's/^decode: .*tokens, \([0-9.]*\) tok\/s, \([0-9.]*\) ms.*/\1 \2/p' $f)
      dp=$(sed -n 's/^per token: \([0-9.]*\) dispatches.*/\1/p' $f)
      printf '%-24s %-25s %s\n' $(basename $f .txt) "${dc:-? ?}" "${dp:-?}"; done; } | tee $logs/summary.txt
tar czf $out/qdec_ab.tar.gz -C $logs .
