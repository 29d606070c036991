#!/usr/bin/env bash
# Both Dawn builds of `make deps` (DESIGN.md; README "Which Dawn"), on both CPU adapters: `wgt info`
# names the library and its ABI and passes its self-check, and test_gpu_device (pool, caches, a WGSL
# error, odd readbacks, sentinels, the feature numbers of the detected ABI) passes. Then libraries wgt
# must refuse with a message: a file that is not ELF, an ELF without webgpu.h.
set -u
wgt=${WGT_BIN:?} root=${WGT_ROOT:?} build=${WGT_BUILD:?}
fail=0
expect() { # description, command...
    local what=$1; shift
    if ! "$@"; then echo "FAIL: $what"; fail=1; fi
}
lib2026=$root/.deps/dawn-2026/dawn.node
lib2025=$root/.deps/dawn/libwebgpu_wrapper.so
for lib in "$lib2026" "$lib2025"; do
    expect "$lib is installed (run 'make deps')" test -f "$lib"
done
for which in 2026 2025; do
    if [ $which = 2026 ]; then lib=$lib2026 want='Dawn \(npm webgpu@0\.6\.2\), Node addon, .*standard webgpu\.h numbering'
    else lib=$lib2025 want='Dawn \(npm bun-webgpu-linux-x64@0\.1\.7\), exported functions, mid-2025 Dawn numbering'; fi
    for backend in vulkan opengles; do
        out=$(WGT_WEBGPU_LIB=$lib WGT_BACKEND=$backend "$wgt" info --selfcheck-floats 100003 2>&1); rc=$?
        expect "$which info on $backend exits 0 ($out)" test $rc = 0
        expect "$which info on $backend passes" grep -q '^self-check: PASS on 100003 floats' <<<"$out"
        expect "$which info on $backend names the library" grep -q "^library: *$lib\$" <<<"$out"
        expect "$which info on $backend describes it ($out)" grep -Eq "^ *$want\$" <<<"$out"
        expect "$which info on $backend reports subgroup-matrix" grep -q 'subgroup-matrix no' <<<"$out"
        if [ $backend = vulkan ]; then
            expect "$which on lavapipe has shader-f16" grep -q 'shader-f16 yes, subgroups yes' <<<"$out"
        fi
        out=$(WGT_WEBGPU_LIB=$lib WGT_BACKEND=$backend "$build/tests/test_gpu_device" 2>&1); rc=$?
        expect "$which test_gpu_device on $backend ($out)" test $rc = 0
    done
done
# The spec's default limits: no subgroup matrices asked for, everything else still runs.
out=$(WGT_LIMITS=default WGT_BACKEND=vulkan "$wgt" info --selfcheck-floats 1003 2>&1); rc=$?
expect "default limits: info passes ($out)" test $rc = 0
# Refusals, each naming the file and the problem.
out=$(WGT_WEBGPU_LIB=$root/README.md "$wgt" info 2>&1); rc=$?
expect "a text file is refused" test $rc = 1
expect "... as not ELF ($out)" grep -q "README.md is not a 64-bit little-endian ELF shared object" <<<"$out"
libm=$(ldconfig -p | awk '/libm\.so\.6 .*x86-64/ {print $NF; exit}')
out=$(WGT_WEBGPU_LIB=$libm "$wgt" info 2>&1); rc=$?
expect "libm is refused" test $rc = 1
expect "... for lacking wgpuCreateInstance ($out)" grep -q "has no symbol wgpuCreateInstance" <<<"$out"
out=$(WGT_WEBGPU_LIB=/nonexistent/dawn.node "$wgt" info 2>&1); rc=$?
expect "a missing library is refused ($out)" grep -q "cannot open the WebGPU library /nonexistent/dawn.node" <<<"$out"
exit $fail
