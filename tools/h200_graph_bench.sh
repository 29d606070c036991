#!/usr/bin/env bash
# Graph capture on the H200 (issue 17): dispatches and time per step, eager against captured, for
# a GPT-2-small training step (AdamW, batch 8 x 512, f32), a decode step of the Qwen2.5-0.5B shape
# (f16, 512-token prompt, 128 tokens) and a small conv net's forward (bench/graph.c, bench_graph);
# then the same with WGT_GRAPH_FUSE=0 (capture without the fusion pass) for the train and conv steps,
# then a WGT_PROFILE=1 run (kernel GPU time, eager and replayed, fused kernels named by their ops).
# Before (here), DIR a git-ignored folder of /work/main (e.g. .devbin-graph):
#   mkdir -p DIR; cp build/bench/bench_graph DIR/; cp /work/main/.devbin-lead/dawn.tar.xz DIR/
# The call (device tool `run`, kind nvidia-h200; about 70-110 s of wall time after the start):
#   carry [".gl", "DIR"]   command: bash tools/h200_graph_bench.sh DIR   timeout_s: 300
# Output: the lines `graph WORKLOAD MODE dispatches/step .. ms/step ..` on stdout and $OUT/graph.txt.
set -u
dir=${1:?usage: tools/h200_graph_bench.sh DIR}
out=${OUT:-/tmp/h200_graph}
mkdir -p "$out"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
tar xJf "$dir/dawn.tar.xz" -C "$dir"
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
export WGT_WEBGPU_LIB=${WGT_WEBGPU_LIB:-$PWD/$dir/.deps/dawn-2026/dawn.node}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$out/graph.txt"
ldd "$dir/bench_graph" | grep "not found"
run() { # command...
    echo "=== $*" | tee -a "$out/graph.txt"
    timeout 150 "$@" 2>&1 | grep -v "artificially reduced" | tee -a "$out/graph.txt"
}
run "$dir/bench_graph" --steps 10
run env WGT_GRAPH_FUSE=0 "$dir/bench_graph" --steps 10 train conv
# kernel GPU time of the captured steps (replays time each dispatch; fused kernels are named
# fused:OP+OP...): 2 steps each, the profile table is printed when the context is freed
run env WGT_PROFILE=1 "$dir/bench_graph" --steps 2 conv train
