#!/usr/bin/env bash
# Matrix products in captured graphs on the H200 (issue 17, notes/GRAPH.md "Stage 7"): bench_graph's
# `blocks` workload (the linear layers of 24 Qwen2.5-0.5B-shaped decoder layers as plain ops, f16
# weights, 1 row and 128 rows): eager, and captured with the merging of products sharing an input
# and the epilogues in the products' stores on (captured), merging off (nomerge), epilogues off
# (noepi) and both off (neither), in two rounds; then the Qwen decode step eager and captured with
# the binary from before the change (matmul kernels storing directly, DIR/bench_graph_before) and
# after, alternated, to see that eager decode did not move.
# Before (here), DIR a git-ignored folder of /work/main (e.g. .devbin-graph2):
#   mkdir -p DIR; cp build/bench/bench_graph build/libwgt_napi_stub.so tools/h200_graph_matmul.sh DIR/
#   cp OLD/bench_graph DIR/bench_graph_before; strip DIR/bench_graph*
# The Dawn: $DAWN (a dawn.tar.xz holding .deps/dawn-2026/dawn.node, or dawn.node itself), else
# DIR/dawn.tar.xz, else the first .devbin-*/dawn.tar.xz of the checkout (.devbin-dawn: the lead's).
# The call (device tool `run`, kind nvidia-h200; each part guarded: 16 + 4 x 12 + 16 s, about 85 s in all):
#   carry [".gl", "DIR", the Dawn's folder]   command: bash DIR/h200_graph_matmul.sh DIR   timeout_s: 90
# Output: lines `graph blocksR MODE dispatches/step .. ms/step ..` and `graph decode ...` on stdout
# and in $OUT/graph_matmul.txt.
set -u
dir=${1:?usage: tools/h200_graph_matmul.sh DIR}
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
res=$out/graph_matmul.txt
echo "dawn: ${WGT_WEBGPU_LIB:-none}" | tee "$res"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee -a "$res"
ldd "$dir/bench_graph" | grep "not found"
run() { # seconds command...
    local t=$1
    shift
    echo "=== $*" | tee -a "$res"
    timeout "$t" "$@" 2>&1 | grep -v "artificially reduced" | tee -a "$res"
}
run 16 "$dir/bench_graph" --steps 10 blocks
run 12 "$dir/bench_graph_before" decode
run 12 "$dir/bench_graph" decode
run 16 "$dir/bench_graph" --steps 10 blocks
run 12 "$dir/bench_graph_before" decode
run 12 "$dir/bench_graph" decode
