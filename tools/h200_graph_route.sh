#!/usr/bin/env bash
# Issue 17 on the H200: the generic decode step (WGT_DECODE_GENERIC=1: the step written with plain
# ops, fused by graph capture) against the hand-fused one, Qwen2.5-0.5B shape, f16 random weights,
# 512-token prompt, 128 tokens; and the three workloads eager against captured.
#  - rounds of bench_graph decode single modes, alternated: `captured` (hand-fused), `gen-captured`
#    (today's generic fusion), `gen-captured` with WGT_GRAPH_ROUTE=1 (src/ops/fused_route.c: the
#    captured plain ops routed to fused_linear / fused_linear_qkv_rope), and the eager modes once;
#  - WGT_PROFILE=2 (a row per kernel and bound bytes, so call sites apart) of the three captured
#    steps, 64 tokens (the tables include the warm-up and the prompt's prefill);
#  - bench_graph train (GPT-2 small AdamW step, 3 steps) and conv (10 steps): dispatches, ms per
#    step eager and captured;
#  - wgt generate --graph, hand-fused against generic + routing.
# Before (here): DIR a git-ignored folder of /work/main holding payload.tar.xz (bench_graph, wgt,
# libwgt_napi_stub.so, stripped). The call (kind nvidia-h200):
#   carry [".gl", "DIR", ".devbin-dawn"]   command: BUDGET=80 bash tools/h200_graph_route.sh DIR   timeout_s: 100
# Output: every part's last lines on stdout; all logs in $OUT/graph_route.tar.gz (one file).
set -u
dir=${1:?usage: tools/h200_graph_route.sh DIR}
[ -f "$dir/payload.tar.xz" ] && [ ! -f "$dir/bench_graph" ] && tar xJf "$dir/payload.tar.xz" -C "$dir"
. tools/h200_common.sh "$dir" /tmp/graph_route
export WGT_NAPI_STUB=${WGT_NAPI_STUB:-$PWD/$dir/libwgt_napi_stub.so}
bg=$dir/bench_graph
cfg=bench/configs/qwen2.5-0.5b.json
ids=$(seq 0 511 | awk '{ printf "%s%d", (NR > 1 ? "," : ""), ($1 * 7919 + 13) % 151936 }')
pack() { tar czf "$out/graph_route.tar.gz" -C /tmp graph_route; }
trap pack EXIT
STEP_TAIL=2
for r in 1 2 3; do
    step hand_$r "$bg" --mode captured decode
    step gen_$r "$bg" --mode gen-captured decode
    step route_$r WGT_GRAPH_ROUTE=1 "$bg" --mode gen-captured decode
done
step eager_1 "$bg" --mode eager decode
step geneager_1 "$bg" --mode gen-eager decode
STEP_TAIL=3
step conv "$bg" --steps 10 conv
step train "$bg" --steps 3 train
STEP_TAIL=2
step generate_hand "$dir/wgt" generate -m $cfg --prompt-ids "$ids" -n 128 --ignore-eos -c 1024 --graph
step generate_route WGT_DECODE_GENERIC=1 WGT_GRAPH_ROUTE=1 "$dir/wgt" generate -m $cfg --prompt-ids "$ids" -n 128 --ignore-eos -c 1024 --graph
STEP_TAIL=0
step profile_hand WGT_PROFILE=2 "$bg" --mode captured --tokens 64 decode
step profile_gen WGT_PROFILE=2 "$bg" --mode gen-captured --tokens 64 decode
step profile_route WGT_PROFILE=2 WGT_GRAPH_ROUTE=1 "$bg" --mode gen-captured --tokens 64 decode
for f in profile_hand profile_gen profile_route; do
    [ -f $logs/$f.txt ] || continue
    echo "--- $f: the 16 largest rows"; grep -A17 "^kernel profile" $logs/$f.txt | head -18; done
