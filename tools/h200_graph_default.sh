#!/usr/bin/env bash
# Issue 17 on the H200, main with the routing on by default (src/ops/fused_route.c): the check of
# the default and the figures from the binaries that land.
#  - two alternated rounds of bench_graph decode (Qwen2.5-0.5B shape, f16 random weights, 512-token
#    prompt, 128 tokens): `eager`, `captured` (hand-fused), `gen-captured` (plain ops, routed: the
#    default), `gen-captured` with WGT_GRAPH_ROUTE=0 (generic fusion only);
#  - the same `eager` and `captured` with a 16-token prompt, two rounds (below 256 keys attention is
#    one kernel whatever the key count: is the captured hand-fused step's ~1.3% against eager at a
#    512-token prompt the split attention run over the cache's capacity?);
#  - bench_graph conv (10 steps) and train (GPT-2-small AdamW, 3 steps), eager against captured;
#  - wgt generate -n 256 (compiling included): hand-fused eager, hand-fused --graph, plain ops --graph;
#  - if time is left, WGT_PROFILE=2 of the hand-fused step eager and captured (attention rows).
# Before (here): DIR a git-ignored folder of /work/main holding payload.tar.xz (bench_graph, wgt,
# libwgt_napi_stub.so, stripped). The call (kind nvidia-h200):
#   carry [".gl", "DIR", ".devbin-dawn"]   command: BUDGET=80 bash tools/h200_graph_default.sh DIR   timeout_s: 100
# Output: every part's last lines on stdout; all logs in $OUT/graph_default.tar.gz (one file).
set -u
dir=${1:?usage: tools/h200_graph_default.sh DIR}
[ -f "$dir/payload.tar.xz" ] && [ ! -f "$dir/bench_graph" ] && tar xJf "$dir/payload.tar.xz" -C "$dir"
. tools/h200_common.sh "$dir" /tmp/graph_default
export WGT_NAPI_STUB=${WGT_NAPI_STUB:-$PWD/$dir/libwgt_napi_stub.so}
bg=$dir/bench_graph
cfg=bench/configs/qwen2.5-0.5b.json
ids=$(seq 0 511 | awk '{ printf "%s%d", (NR > 1 ? "," : ""), ($1 * 7919 + 13) % 151936 }')
pack() { tar czf "$out/graph_default.tar.gz" -C /tmp graph_default; }
trap pack EXIT
STEP_TAIL=2
for r in 1 2; do
    step eager_$r "$bg" --mode eager decode
    step hand_$r "$bg" --mode captured decode
    step route_$r "$bg" --mode gen-captured decode
    step gen_$r WGT_GRAPH_ROUTE=0 "$bg" --mode gen-captured decode
done
for r in 1 2; do
    step short_eager_$r "$bg" --mode eager --prompt 16 decode
    step short_hand_$r "$bg" --mode captured --prompt 16 decode
done
STEP_TAIL=4
step conv "$bg" --steps 10 conv
step train "$bg" --steps 3 train
STEP_TAIL=3
g=(generate -m $cfg --prompt-ids "$ids" -n 256 --ignore-eos -c 1024)
step generate_eager "$dir/wgt" "${g[@]}"
step generate_hand "$dir/wgt" "${g[@]}" --graph
step generate_plain WGT_DECODE_GENERIC=1 "$dir/wgt" "${g[@]}" --graph
# if time is left: the attention rows of the hand-fused step eager and captured (WGT_PROFILE=2)
STEP_TAIL=0
step profile_eager WGT_PROFILE=2 "$bg" --mode eager --tokens 64 decode
step profile_hand WGT_PROFILE=2 "$bg" --mode captured --tokens 64 decode
for f in profile_eager profile_hand; do
    [ -f $logs/$f.txt ] && { echo "--- $f"; grep -E "^kernel profile|^  attention|^  fused_linear" $logs/$f.txt; }; done
