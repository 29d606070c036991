#!/usr/bin/env bash
# Graph capture on the H200 (issue 17): dispatches and time per step, eager against captured, for
# a GPT-2-small training step (AdamW, batch 8 x 512, f32), a decode step of the Qwen2.5-0.5B shape
# (f16, 512-token prompt, 128 tokens) and a small conv net's forward (bench/graph.c, bench_graph);
# then the same with WGT_GRAPH_FUSE=0 (capture without the fusion pass) for the train and conv steps,
# then a WGT_PROFILE=1 run (kernel GPU time, eager and replayed, fused kernels named by their ops).
# Before (here), DIR a git-ignored folder of /work/main (e.g. .devbin-graph):
#   mkdir -p DIR; cp build/bench/bench_graph build/libwgt_napi_stub.so DIR/; strip DIR/*
# The Dawn: $DAWN (a dawn.tar.xz holding .deps/dawn-2026/dawn.node, or dawn.node itself), else
# DIR/dawn.tar.xz, else the first .devbin-*/dawn.tar.xz of the checkout (the lead's).
# The call (device tool `run`, kind nvidia-h200; at most 135 s after the start, each part guarded):
#   carry [".gl", "DIR", the Dawn's folder]   command: bash tools/h200_graph_bench.sh DIR   timeout_s: 150
# Output: the lines `graph WORKLOAD MODE dispatches/step .. ms/step ..` on stdout and $OUT/graph.txt.
set -u
dir=${1:?usage: tools/h200_graph_bench.sh DIR}
out=${OUT:-/tmp/h200_graph}
mkdir -p "$out"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
dawn=${DAWN:-}
[ -z "$dawn" ] && [ -f "$dir/dawn.tar.xz" ] && dawn=$dir/dawn.tar.xz
[ -z "$dawn" ] && dawn=$(ls .devbin-*/dawn.tar.xz 2>/dev/null | head -1)
case "$dawn" in
*.node) export WGT_WEBGPU_LIB=${WGT_WEBGPU_LIB:-$PWD/$dawn} ;;
*.tar.xz) mkdir -p /tmp/graph-dawn && tar xJf "$dawn" -C /tmp/graph-dawn &&
          export WGT_WEBGPU_LIB=${WGT_WEBGPU_LIB:-/tmp/graph-dawn/.deps/dawn-2026/dawn.node} ;;
esac
export WGT_NAPI_STUB=${WGT_NAPI_STUB:-$PWD/$dir/libwgt_napi_stub.so}
echo "dawn: ${WGT_WEBGPU_LIB:-none}" | tee "$out/graph.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee -a "$out/graph.txt"
ldd "$dir/bench_graph" | grep "not found"
run() { # seconds command...
    local t=$1
    shift
    echo "=== $*" | tee -a "$out/graph.txt"
    timeout "$t" "$@" 2>&1 | grep -v "artificially reduced" | tee -a "$out/graph.txt"
}
run 45 "$dir/bench_graph" --steps 10 train
run 25 "$dir/bench_graph" decode
run 15 "$dir/bench_graph" --steps 10 conv
run 25 env WGT_GRAPH_FUSE=0 "$dir/bench_graph" --steps 5 train conv
# kernel GPU time of the captured steps (replays time each dispatch; fused kernels are named
# fused:OP+OP...): 2 steps each, the profile table is printed when the context is freed
run 25 env WGT_PROFILE=1 "$dir/bench_graph" --steps 2 conv train
