#!/usr/bin/env bash
# matmul_tcd's staged tiles against the default register tiles (issue 14's prefill), one device call:
#  1. test_gpu_matmul_tc on the H200's subgroup matrices (every staging mode, split k);
#  2. bench_matmul's Qwen2.5-0.5B prefill products (f16 weights) with the register tiles and with
#     WGT_MATMUL_TCD=half through each candidate tile (WGT_MATMUL_TCD_TILE=FMxFN:SGRxSGC:MODE:BK);
#     the candidate with the highest "all products" rate is taken for 3;
#  3. Qwen2.5-0.5B and Llama-3.2-1B f16 prefill 512 in two alternated rounds, default ("regs")
#     against WGT_MATMUL_TCD=half with that tile (the same binary: the default path is unchanged);
#  4. one profiled Qwen prefill with it;
# Here: DIR (git-ignored, e.g. .devbin-tc) holds bins.tar.xz (wgt, bench_matmul, bench_tc_peak,
# test_gpu_matmul_tc, libwgt_napi_stub.so stripped; tc_gemm.wgsl). Call, from the repository root:
#   BUDGET=70 bash DIR/h200_tc_ab.sh DIR     (carry .gl, DIR, .devbin-dawn; timeout 80 s)
# Logs in $OUT/tc_ab/, the step tails and a summary on stdout.
set -u
d=${1:?usage: bash tools/h200_tc_ab.sh DIR}
bin=/tmp/tc_bin; mkdir -p $bin; tar xJf $d/bins.tar.xz -C $bin
logs=${OUT:-/tmp/out}/tc_ab
. tools/h200_common.sh $d $logs
export WGT_NAPI_STUB=$bin/libwgt_napi_stub.so
TAILN=2 step test timeout 25 $bin/test_gpu_matmul_tc
MM="qwen0.5b qkv f16,qwen0.5b o f16,qwen0.5b gate f16,qwen0.5b down f16"
TAILN=6 step mm-regs timeout 10 $bin/bench_matmul --only "$MM" --reps 5
tile=${TILE:-}; best=$tile; bestr=0
for t in ${CANDS:-4x2:2x4:3:32 4x4:2x2:3:32 4x2:2x2:0:32 4x4:2x2:0:32 2x2:2x2:0:32}; do
    TAILN=6 step mm-$t WGT_MATMUL_TCD=half WGT_MATMUL_TCD_TILE=$t timeout 10 $bin/bench_matmul --only "$MM" --reps 5
    r=$(grep -o 'one after another: [0-9.]*' $logs/mm-$t.txt 2>/dev/null | awk '{print int($4)}')
    [ -z "$tile" ] && [ -n "$r" ] && [ "$r" -gt "$bestr" ] && { best=$t; bestr=$r; }
done
best=${best:-4x2:2x4:3:32}
echo "=== tile for the A/B: $best ($bestr GFLOP/s over the four products)"
Q=bench/configs/qwen2.5-0.5b.json L=bench/configs/llama-3.2-1b.json
for r in 1 2; do
    for m in q l; do
        c=$Q; [ $m = l ] && c=$L
        TAILN=1 step $m-regs-r$r timeout 15 $bin/wgt bench -m $c --type f16 -p 512 -n 2
        TAILN=1 step $m-tcd-r$r WGT_MATMUL_TCD=half WGT_MATMUL_TCD_TILE=$best timeout 15 $bin/wgt bench -m $c --type f16 -p 512 -n 2
    done
done
echo "=== summary (tile $best)"
for f in $logs/[ql]-*-r*.txt; do echo "$(basename $f .txt): $(grep -o 'prefill: .*' $f)"; done
TAILN=14 step q-tcd-prof WGT_PROFILE=1 WGT_MATMUL_TCD=half WGT_MATMUL_TCD_TILE=$best timeout 15 $bin/wgt bench -m $Q --type f16 -p 512 -n 2
