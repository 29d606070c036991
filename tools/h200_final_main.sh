#!/usr/bin/env bash
# Final main measured as a whole on the H200 in one device call (every default together):
# issue 13's training benchmark (tools/h200_train_bench.sh: wgt f32/bf16 for GPT-2 small and the
# default model's shape, PyTorch eager in the same call, the chart; TRAIN=0 skips it), then issue
# 14's six rows with plain `wgt bench` at -p 512 -n 128 and at -p 16 -n 128 (decode from a short
# prompt, as llama-bench's tg128) into summary.txt (tools/rows_chart.py draws it); PROFILES=1 adds
# every row's WGT_PROFILE=1 decode (-p 16 -n 128) and prefill (-p 512 -n 2) tables. AB=1 adds the
# Llama quantized rows with WGT_QLINEAR_BLOCKS=0 against the default (the first run of this script,
# 2026-12-03 06:20). The rows' steps stop after BUDGET_ROWS seconds (default 400).
# Before (here): D (git-ignored) holds bins.tar.xz = build/wgt + build/libwgt_napi_stub.so (stripped).
# The call: carry [".gl", ".devbin-dawn", "D"], command: bash tools/h200_final_main.sh D, timeout 500.
# Output: $OUT/final.tar.gz (train.log, train.txt, train.svg, the rows' logs, summary.txt).
set -u
d=${1:-.devbin-final}
tar xJf $d/bins.tar.xz -C $d
. tools/h200_common.sh "$d" /tmp/final_logs
mkdir -p build && cp $d/build/wgt $d/build/libwgt_napi_stub.so build/
[ "${TRAIN:-1}" = 1 ] && OUT=$logs/train bash tools/h200_train_bench.sh 2>&1 | grep -E '^(wgt|torch) '
BUDGET=${BUDGET_ROWS:-400}
W=$d/build/wgt Q=bench/configs/qwen2.5-0.5b.json L=bench/configs/llama-3.2-1b.json
if [ "${AB:-0}" = 1 ]; then for r in 1 2; do for t in q8_0 q4_0; do
    step l$t-blocks0-r$r WGT_QLINEAR_BLOCKS=0 timeout 20 $W bench -m $L --type $t -p 16 -n 128
    step l$t-blocks3-r$r timeout 20 $W bench -m $L --type $t -p 16 -n 128
done; done; fi
for p in 512 16; do for m in q l; do for t in f16 q8_0 q4_0; do
    c=$Q; [ $m = l ] && c=$L
    STEP_TAIL=3 step $m$t-p$p timeout 20 $W bench -m $c --type $t -p $p -n 128
done; done; done
for f in $logs/*-p512.txt $logs/*-p16.txt; do
    printf '%-12s %s | %s\n' "$(basename $f .txt)" "$(grep -m1 '^prefill' $f)" "$(grep -m1 '^decode' $f)"
done | tee $logs/summary.txt
if [ "${PROFILES:-0}" = 1 ]; then for m in q l; do for t in f16 q8_0 q4_0; do
    c=$Q; [ $m = l ] && c=$L
    STEP_TAIL=1 step $m$t-decode-prof WGT_PROFILE=1 timeout 25 $W bench -m $c --type $t -p 16 -n 128
    STEP_TAIL=1 step $m$t-prefill-prof WGT_PROFILE=1 timeout 25 $W bench -m $c --type $t -p 512 -n 2
done; done; fi
tar czf $out/final.tar.gz -C $logs .
