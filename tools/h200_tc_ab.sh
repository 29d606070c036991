#!/usr/bin/env bash
# matmul_tcd's staged tiles against the default register tiles (issue 14's prefill), one device call:
# test_gpu_matmul_tc on the H200's subgroup matrices (every staging), then Qwen2.5-0.5B and
# Llama-3.2-1B f16 prefill 512 in alternated rounds, default ("regs") against WGT_MATMUL_TCD=half
# with the tile TILE (WGT_MATMUL_TCD_TILE; default 4x2:2x4:3:32), and one profiled prefill of each.
# Same binary both sides: the default path is unchanged by the branch.
# Here: DIR (git-ignored, e.g. .devbin-tc) holds bins.tar.xz (wgt, bench_matmul, test_gpu_matmul_tc,
# libwgt_napi_stub.so, stripped). Call: BUDGET=88 TILE=... bash DIR/h200_tc_ab.sh DIR (carry .gl, DIR,
# .devbin-dawn); logs in $OUT/tc_ab/, the step tails on stdout.
set -u
d=${1:?usage: bash tools/h200_tc_ab.sh DIR}
bin=/tmp/tc_bin; mkdir -p $bin; tar xJf $d/bins.tar.xz -C $bin
. tools/h200_common.sh $d ${OUT:-/tmp/out}/tc_ab
export WGT_NAPI_STUB=$bin/libwgt_napi_stub.so
T=${TILE:-4x2:2x4:3:32}
TAILN=2 step test timeout 30 $bin/test_gpu_matmul_tc
Q=bench/configs/qwen2.5-0.5b.json L=bench/configs/llama-3.2-1b.json
for r in 1 2; do
    for m in q l; do
        c=$Q; [ $m = l ] && c=$L
        TAILN=2 step $m-regs-r$r timeout 15 $bin/wgt bench -m $c --type f16 -p 512 -n 2
        TAILN=2 step $m-tcd-r$r WGT_MATMUL_TCD=half WGT_MATMUL_TCD_TILE=$T timeout 15 $bin/wgt bench -m $c --type f16 -p 512 -n 2
    done
done
TAILN=14 step q-tcd-prof WGT_PROFILE=1 WGT_MATMUL_TCD=half WGT_MATMUL_TCD_TILE=$T timeout 15 $bin/wgt bench -m $Q --type f16 -p 512 -n 2
TAILN=14 step l-tcd-prof WGT_PROFILE=1 WGT_MATMUL_TCD=half WGT_MATMUL_TCD_TILE=$T timeout 15 $bin/wgt bench -m $L --type f16 -p 512 -n 2
for f in ${OUT:-/tmp/out}/tc_ab/[ql]-*-r*.txt; do echo "$(basename $f .txt): $(grep -o 'prefill: .*' $f)"; done
