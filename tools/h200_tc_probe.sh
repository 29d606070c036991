#!/usr/bin/env bash
# Where the tensor-core products lose the fragments' rate (issue 14): bench_tc_peak's peak table and
# its --gemm table (bench/tc_gemm.wgsl: fragments from storage or staged through workgroup memory,
# over tiles and k slabs; each run checked against a CPU product) on the H200 in one device call.
# Here: DIR (a git-ignored folder of /work/main, e.g. .devbin-tc) holds bins.tar.xz with
# bench_tc_peak (stripped), libwgt_napi_stub.so, tc_peak.wgsl and tc_gemm.wgsl.
# The call, from the repository root: BUDGET=85 bash DIR/h200_tc_probe.sh DIR
# (carry .gl, DIR and .devbin-dawn); logs to $OUT/tc_probe/ and the tables to stdout.
set -u
d=${1:?usage: bash tools/h200_tc_probe.sh DIR}
bin=/tmp/tc_bin; mkdir -p $bin; tar xJf $d/bins.tar.xz -C $bin
. tools/h200_common.sh $d ${OUT:-/tmp/out}/tc_probe
export WGT_NAPI_STUB=$bin/libwgt_napi_stub.so
left=$(( ${BUDGET:-85} - ($(date +%s) - t0) - 12 ))
TAILN=400 step probe $bin/bench_tc_peak --wgsl $bin/tc_peak.wgsl --reps 10 --gemm $bin/tc_gemm.wgsl --budget $left
