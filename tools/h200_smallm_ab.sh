#!/usr/bin/env bash
# Small-M linear layers on the H200 (issues 14 and 18, h-smallm): src/kernels/matmul_rows.wgsl
# against the kernels before it (WGT_MATMUL_ROWS=0, same binary), in one device call of ~300 s.
#  1. bench_matmul_rows: us per call and GB/s of weights, M = 1 .. 64 rows, the Qwen2.5-0.5B layer
#     shapes, f16 / q8_0 (q4_0 on one shape; 16 rows a pass for f16 / q8_0 on two shapes);
#  2. bench_batch_decode: wgt_batch decode tok/s at 1, 8, 32, 64 streams (Qwen2.5-0.5B shape, random
#     weights), f16 and q8_0, new / base / 16 rows a pass;
#  3. tools/h200_serve_bench.sh with the new wgt (f16, q8_0), as time allows.
# From the repository root, with D (default .devbin-smallm, a relative path) holding wgt, libwgt_napi_stub.so,
# bench_matmul_rows, bench_batch_decode, test_gpu_matmul_rows, test_gpu_batch and dawn.tar.xz:
#   carry [".gl", ".devbin-smallm"]   command: bash .devbin-smallm/run.sh   timeout_s: 450
# Writes $OUT/smallm.log (everything) and $OUT/serve_<type>.json.
set -u
d=${1:-.devbin-smallm}
out=${OUT:-/tmp/out}; mkdir -p "$out"
exec > >(tee "$out/smallm.log") 2>&1
t0=$SECONDS
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
[ -d "$d/.deps" ] || tar xJf "$d/dawn.tar.xz" -C "$d"
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
export WGT_WEBGPU_LIB=${WGT_WEBGPU_LIB:-$PWD/$d/.deps/dawn-2026/dawn.node}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
Q=bench/configs/qwen2.5-0.5b.json
q() { grep -v "artificially reduced"; }
echo "=== tests on the H200"
timeout 60 $d/test_gpu_matmul_rows 2>&1 | q | tail -4
WGT_ROOT=$PWD timeout 90 $d/test_gpu_batch 2>&1 | q | tail -4
echo "=== matmul_rows microbenchmark ($((SECONDS - t0)) s)"
timeout 130 $d/bench_matmul_rows --types f16,q8_0 --iters 100 2>&1 | q
timeout 30 $d/bench_matmul_rows --types q4_0 --shapes 896x4864 --iters 100 2>&1 | q | tail -n +3
echo "=== 16 rows a pass"
WGT_MATMUL_ROWS=16 timeout 40 $d/bench_matmul_rows --types f16,q8_0 --ms 16,32,64 --shapes 896x9728,4864x896 2>&1 | q
for type in f16 q8_0; do
    for v in 1 0 16; do
        echo "=== batch decode $type WGT_MATMUL_ROWS=$v ($((SECONDS - t0)) s)"
        WGT_MATMUL_ROWS=$v timeout 60 $d/bench_batch_decode -m $Q --type $type --streams 1,8,32,64 --prompt 32 \
            --steps 32 2>&1 | q
    done
done
echo "=== profile: batch decode f16 at 32 streams ($((SECONDS - t0)) s)"
WGT_PROFILE=1 timeout 40 $d/bench_batch_decode -m $Q --type f16 --streams 32 --prompt 32 --steps 16 2>&1 | q | head -24
left=$((430 - (SECONDS - t0)))
echo "=== serve bench, new wgt ($((SECONDS - t0)) s; $left s left)"
if [ $left -gt 60 ]; then
    OUT=$out timeout $left bash tools/h200_serve_bench.sh "$d" 2>&1 | q | grep -v "^wgt serve:" # d: relative
fi
echo "=== done ($((SECONDS - t0)) s)"
