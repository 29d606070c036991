#!/usr/bin/env bash
# Matrix products in captured graphs on the H200 (issue 17, notes/GRAPH.md "Stage 7"): bench_graph's
# `blocks` workload (the linear layers of 24 Qwen2.5-0.5B-shaped decoder layers as plain ops, f16
# weights, 1 row and 128 rows): eager, and captured with the defaults (products sharing an input
# merged, epilogues in the gemv products' stores), allepi (WGT_GRAPH_FUSE_MATMUL=1: epilogues in
# every product's store, the tiled kernels' too), nomerge, noepi and neither, in two rounds; then the
# Qwen decode step eager and captured with the binary from before stage 7 (DIR/bench_graph_before)
# and after, alternated, to see that eager decode did not move. The question for the defaults:
# is allepi faster than captured at 128 rows in both rounds (then the tiled kernels' epilogues go
# on by default: matmul_epilogue in src/ops/elementwise_fuse.c), and captured than neither?
# Before (here), DIR a git-ignored folder of /work/main (e.g. .devbin-graph2):
#   mkdir -p DIR; cp build/bench/bench_graph build/libwgt_napi_stub.so DIR/
#   cp OLD/bench_graph DIR/bench_graph_before; strip DIR/bench_graph*
# The call (device tool `run`, kind nvidia-h200; about 85 s):
#   carry [".gl", "DIR", ".devbin-dawn"]   command: BUDGET=80 bash tools/h200_graph_matmul.sh DIR   timeout_s: 90
# Output: the steps' logs in $OUT/graph_matmul/ (lines `graph blocksR MODE dispatches/step .. ms/step ..`
# and `graph decode ...`), their last lines on stdout.
set -u
dir=${1:?usage: tools/h200_graph_matmul.sh DIR}
. tools/h200_common.sh "$dir" "${OUT:-/tmp/out}/graph_matmul"
export WGT_NAPI_STUB=${WGT_NAPI_STUB:-$PWD/$dir/libwgt_napi_stub.so}
STEP_TAIL=12
step blocks_1 "$dir/bench_graph" --steps 10 blocks
STEP_TAIL=3
step decode_before_1 "$dir/bench_graph_before" decode
step decode_after_1 "$dir/bench_graph" decode
STEP_TAIL=12
step blocks_2 "$dir/bench_graph" --steps 10 blocks
STEP_TAIL=3
step decode_after_2 "$dir/bench_graph" decode
step decode_before_2 "$dir/bench_graph_before" decode
