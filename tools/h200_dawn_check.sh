#!/usr/bin/env bash
# Checks both Dawn builds on the H200 in one device-tool call: `wgt info` (library, features,
# subgroup-matrix shapes, self-check) and a short GPU test subset, with the 2026 Dawn (npm
# webgpu@0.6.2, dawn.node, the default) and the 2025 Dawn (bun-webgpu-linux-x64@0.1.7).
# From the repository root, with a build made here (BUILD, default build):
#   carry [".gl", ".deps/dawn", ".deps/dawn-2026", "build/wgt", "build/libwgt_napi_stub.so",
#          "build/tests/test_gpu_device", "build/tests/test_gpu_sgmatrix", "build/tests/test_gpu_models"]
#   command: bash tools/h200_dawn_check.sh [BUILD]
# .gl holds the .debs tools/device_run.sh names (libvulkan1 and the GL dispatch libraries). The test
# programs find libwgt_napi_stub.so next to them or one folder up (the build folder); test programs
# not carried are left out (carry takes 8 paths, 64 MiB: the two Dawns are 41 MB). Exits non-zero
# if any step fails; each step's output goes to stdout and to $OUT/<step>.txt when $OUT is set.
set -u
build=${1:-build}
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
fail=0
step() { # name, command...
    local name=$1; shift
    echo "=== $name: $*"
    local log=/tmp/h200_dawn_$name.txt
    timeout 300 "$@" >"$log" 2>&1
    local rc=$?
    cat "$log"
    [ -n "${OUT:-}" ] && cp "$log" "$OUT/$name.txt"
    echo "=== $name: exit $rc"
    [ $rc = 0 ] || fail=1
}
for which in 2026 2025; do
    if [ $which = 2026 ]; then lib=$PWD/.deps/dawn-2026/dawn.node; else lib=$PWD/.deps/dawn/libwebgpu_wrapper.so; fi
    export WGT_WEBGPU_LIB=$lib
    step "info-$which" "$build/wgt" info --selfcheck-floats 67108864
    step "adapters-$which" "$build/wgt" info --adapters
    for t in test_gpu_device test_gpu_sgmatrix test_gpu_models test_gpu_core; do
        [ -x "$build/tests/$t" ] && step "$t-$which" "$build/tests/$t"
    done
done
echo "h200_dawn_check: $([ $fail = 0 ] && echo all steps passed || echo SOME STEPS FAILED)"
exit $fail
