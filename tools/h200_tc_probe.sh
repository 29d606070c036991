#!/usr/bin/env bash
# Where the tensor-core products lose the fragments' rate (issue 14): bench_tc_peak's peak table and
# its --gemm table (bench/tc_gemm.wgsl: fragments from storage or staged through workgroup memory,
# over tiles and k slabs; each run checked against a CPU product) on the H200 in one device call,
# then matmul_tcd's staged tiles (WGT_MATMUL_TCD_TILE=FMxFN:SGRxSGC:MODE:BK) in bench_matmul and in a
# Qwen2.5-0.5B f16 prefill of 512 against the default register tiles.
# Here: DIR (a git-ignored folder of /work/main, e.g. .devbin-tc) holds bins.tar.xz with
# bench_tc_peak, bench_matmul, wgt (stripped), libwgt_napi_stub.so, tc_peak.wgsl and tc_gemm.wgsl.
# The call, from the repository root: BUDGET=88 GEMM_S=36 bash DIR/h200_tc_probe.sh DIR
# (carry .gl, DIR and .devbin-dawn); logs to $OUT/tc_probe/ and the tables to stdout.
set -u
d=${1:?usage: bash tools/h200_tc_probe.sh DIR}
bin=/tmp/tc_bin; mkdir -p $bin; tar xJf $d/bins.tar.xz -C $bin
. tools/h200_common.sh $d ${OUT:-/tmp/out}/tc_probe
export WGT_NAPI_STUB=$bin/libwgt_napi_stub.so
TAILN=400 step probe $bin/bench_tc_peak --wgsl $bin/tc_peak.wgsl --reps 10 --gemm $bin/tc_gemm.wgsl --budget ${GEMM_S:-36}
Q=bench/configs/qwen2.5-0.5b.json
TAILN=3 step pf-regs timeout 15 $bin/wgt bench -m $Q --type f16 -p 512 -n 2
for t in 4x2:2x4:3:32 2x2:2x2:4:64 4x4:2x2:3:32; do
    TAILN=3 step pf-tcd-$t WGT_MATMUL_TCD=half WGT_MATMUL_TCD_TILE=$t timeout 15 $bin/wgt bench -m $Q --type f16 -p 512 -n 2
done
TAILN=12 step mm-tcd WGT_MATMUL_TCD=all WGT_MATMUL_TCD_TILE=4x2:2x4:3:32 timeout 12 $bin/bench_matmul --only "square 4096,qwen0.5b" --reps 5
TAILN=3 step pf-regs-2 timeout 15 $bin/wgt bench -m $Q --type f16 -p 512 -n 2
TAILN=3 step pf-tcd-2 WGT_MATMUL_TCD=half WGT_MATMUL_TCD_TILE=4x2:2x4:3:32 timeout 15 $bin/wgt bench -m $Q --type f16 -p 512 -n 2
