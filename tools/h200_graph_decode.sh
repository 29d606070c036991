#!/usr/bin/env bash
# The captured decode step on the H200 (issue 17, notes/GRAPH.md "Stage 8"), Qwen2.5-0.5B shape,
# f16 random weights (bench/configs/qwen2.5-0.5b.json), a 512-token prompt, 128 greedy tokens:
#  - bench_graph decode, two rounds: dispatches, submits, ms and host ms per token of the hand-fused
#    step eager (`eager`) and captured (`captured`), and of the step written with plain ops
#    (WGT_DECODE_GENERIC=1) eager (`gen-eager`) and captured through generic fusion (`gen-captured`),
#    and gen-captured without the new gemv prologues (WGT_GRAPH_FUSE_MATMUL_PRO=0: silu * up stays a
#    dispatch of its own before the down projection; the prologue stays default only if it wins
#    both rounds), and gen-captured with the opt-in norm fusion (WGT_GRAPH_FUSE_NORM_MATMUL=1: each
#    rms_norm in the product after it; `normfuse`, both rounds: on by default if it wins both);
#  - `wgt generate` eager against `--graph` (the library's decode loop, the step captured through
#    wgt_graph_cache: 2 captures, replays after), alternated in two rounds: decode tok/s;
#  - the kernels' GPU time (WGT_PROFILE=1, each dispatch in a pass of its own) of the captured
#    hand-fused and generic steps, 64 tokens after the same prompt (the table includes the
#    warm-up generation and the prompt's prefill: compare the decode kernels' rows).
# Before (here), DIR a git-ignored folder of /work/main (e.g. .devbin-graph3):
#   mkdir -p DIR; cp build/wgt build/bench/bench_graph build/libwgt_napi_stub.so DIR/; strip DIR/wgt DIR/bench_graph
# The call (device tool `run`, kind nvidia-h200; at most ~105 s, each part guarded by BUDGET):
#   carry [".gl", "DIR", ".devbin-dawn"]   command: BUDGET=95 bash tools/h200_graph_decode.sh DIR   timeout_s: 110
# Output: the steps' logs in $OUT/graph_decode/ (lines `graph decode MODE dispatches/token ..
# ms/token ..`, wgt generate's `decode: N tokens, X tok/s` and `graph: ..`, the profile tables),
# their last lines on stdout. The parts run in order of importance (the profiles last), each
# skipped once BUDGET seconds have passed.
set -u
dir=${1:?usage: tools/h200_graph_decode.sh DIR}
. tools/h200_common.sh "$dir" "${OUT:-/tmp/out}/graph_decode"
export WGT_NAPI_STUB=${WGT_NAPI_STUB:-$PWD/$dir/libwgt_napi_stub.so}
cfg=bench/configs/qwen2.5-0.5b.json
ids=$(seq 0 511 | awk '{ printf "%s%d", (NR > 1 ? "," : ""), ($1 * 7919 + 13) % 151936 }')
STEP_TAIL=5
step decode_1 "$dir/bench_graph" decode
STEP_TAIL=2
step generate_eager_1 "$dir/wgt" generate -m $cfg --prompt-ids "$ids" -n 128 --ignore-eos -c 1024
STEP_TAIL=3
step generate_graph_1 "$dir/wgt" generate -m $cfg --prompt-ids "$ids" -n 128 --ignore-eos -c 1024 --graph
STEP_TAIL=2
step normfuse_1 WGT_GRAPH_FUSE_NORM_MATMUL=1 "$dir/bench_graph" --mode gen-captured decode
step nopro_1 WGT_GRAPH_FUSE_MATMUL_PRO=0 "$dir/bench_graph" --mode gen-captured decode
STEP_TAIL=5
step decode_2 "$dir/bench_graph" decode
STEP_TAIL=3
step generate_graph_2 "$dir/wgt" generate -m $cfg --prompt-ids "$ids" -n 128 --ignore-eos -c 1024 --graph
STEP_TAIL=2
step generate_eager_2 "$dir/wgt" generate -m $cfg --prompt-ids "$ids" -n 128 --ignore-eos -c 1024
step nopro_2 WGT_GRAPH_FUSE_MATMUL_PRO=0 "$dir/bench_graph" --mode gen-captured decode
step normfuse_2 WGT_GRAPH_FUSE_NORM_MATMUL=1 "$dir/bench_graph" --mode gen-captured decode
STEP_TAIL=3
step profile_captured WGT_PROFILE=1 "$dir/bench_graph" --mode captured --tokens 64 decode
step profile_generic WGT_PROFILE=1 "$dir/bench_graph" --mode gen-captured --tokens 64 decode
for f in profile_captured profile_generic; do
    echo "--- $f: the 12 largest kernels"; grep -A14 "^kernel profile" $logs/$f.txt | head -15; done
