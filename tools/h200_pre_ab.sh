#!/usr/bin/env bash
# Issue 14's f16 prefill (helper pre, 2026-12-03): main's wgt against the branch's in one device call.
#  1. Qwen2.5-0.5B and Llama-3.2-1B f16 at -p 512 -n 128, ROUNDS (default 3) alternated rounds of
#     main / new (NEW= leaves it out) / each of VARIANTS ("NAME:VAR=VALUE,..": the new binary with
#     those variables), each
#     run the median of REPS timed runs when set (wgt bench --reps: wgt-main must know it), the GPU's
#     clocks before each run (Llama's first tensor-core round was 13.5k against 34.5k the session
#     before);
#  2. test_gpu_matmul_tc (the new binary's matmul_tcd paths on the subgroup matrices);
#  3. WGT_PROFILE=2 prefill tables (a row per kernel and bound size) of the models in PROF (default
#     "q l") with the new binary;
#  4. EXTRA: rows "NAME:VAR=VALUE,VAR=VALUE" run with the new binary once each (e.g.
#     "epi0:WGT_MATMUL_TCD_EPI=0"), then bench_tc_peak --gemm-only (bench/tc_gemm.wgsl: the tile
#     ceiling on a plain product) for what budget is left.
# Here: D (git-ignored, e.g. .devbin-pre) holds bins.tar.xz = wgt (new), wgt-main, bench_tc_peak,
# test_gpu_matmul_tc, libwgt_napi_stub.so (stripped). From the repository root:
#   BUDGET=85 bash D/h200_pre_ab.sh D        (carry .gl, .devbin-dawn, D)
# Logs in $OUT/pre/, a summary on stdout.
set -u
d=${1:?usage: bash tools/h200_pre_ab.sh D}
bin=/tmp/pre_bin; mkdir -p $bin; tar xJf $d/bins.tar.xz -C $bin
logs=${OUT:-/tmp/out}/pre
. tools/h200_common.sh $d $logs
export WGT_NAPI_STUB=$bin/libwgt_napi_stub.so
Q=bench/configs/qwen2.5-0.5b.json L=bench/configs/llama-3.2-1b.json
clk() { nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader; }
reps=${REPS:+--reps $REPS}
for r in $(seq 1 ${ROUNDS:-3}); do
    for m in q l; do
        c=$Q; [ $m = l ] && c=$L
        for wv in main ${NEW-new} ${VARIANTS:-}; do
            w=${wv%%:*} vars=; [ "$w" != "$wv" ] && vars=${wv#*:}
            b=$bin/wgt; [ $w = main ] && b=$bin/wgt-main
            echo "clocks: $(clk)" >$logs/clk-$m-$w-r$r.txt
            TAILN=0 step $m-$w-r$r ${vars//,/ } timeout 20 $b bench -m $c --type f16 -p 512 -n 128 $reps
            # a new path that does not compile on the device: the rest without the small tiles
            if [ $w = new ] && ! grep -q "^exit 0" $logs/$m-$w-r$r.txt && [ -z "${WGT_MATMUL_TCD_SMALL:-}" ]; then
                echo "=== $m-new-r$r failed: WGT_MATMUL_TCD_SMALL=0 from here"; export WGT_MATMUL_TCD_SMALL=0; fi
        done
    done
done
echo "=== summary"
for f in $logs/[ql]-*.txt; do echo "$(basename $f .txt): $(grep -o 'prefill: .*' $f) | $(grep -o 'decode: .*tok/s' $f)"; done
left=$(( budget - ($(date +%s) - t0) - 3 ))
[ -f $bin/test_gpu_matmul_tc ] && [ $left -gt 8 ] && TAILN=3 step test timeout $left $bin/test_gpu_matmul_tc
for m in ${PROF-q l}; do
    c=$Q; [ $m = l ] && c=$L
    TAILN=0 step $m-prof WGT_PROFILE=2 timeout 20 $bin/wgt bench -m $c --type f16 -p 512 -n 1 --reps 1
done
for x in ${EXTRA:-}; do
    name=${x%%:*} vars=${x#*:}
    for m in q l; do
        c=$Q; [ $m = l ] && c=$L
        TAILN=0 step $m-$name ${vars//,/ } timeout 20 $bin/wgt bench -m $c --type f16 -p 512 -n 128 $reps
    done
done
for f in $logs/[ql]-*.txt; do echo "$(basename $f .txt): $(grep -o 'prefill: .*' $f)"; done
left=$(( budget - ($(date +%s) - t0) - 3 ))
[ $left -gt 4 ] && TAILN=40 step tc-gemm timeout $left $bin/bench_tc_peak --gemm bench/tc_gemm.wgsl --gemm-only --budget $(( left - 3 ))
grep -A12 "kernel profile" $logs/q-prof.txt | head -30
