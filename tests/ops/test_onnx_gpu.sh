#!/usr/bin/env bash
# The ONNX backend node tests (Debian's libonnx-testdata) through the op API on both CPU adapters
# (lavapipe through Vulkan, llvmpipe through OpenGL ES): `wgt onnx-test` prints PASS / FAIL / N/A
# per test; this fails on any FAIL of an applicable test, and when fewer tests pass than a floor
# (so a broken mapping cannot pass by turning everything N/A).
set -u
bin=${WGT_BIN:-build/wgt}
data=${WGT_ONNX_NODE_DIR:-/usr/share/libonnx-testdata/data/node}
min_pass=${WGT_ONNX_MIN_PASS:-650}
if [ ! -d "$data" ]; then
    echo "test_onnx_gpu: $data is missing: install Debian's libonnx-testdata (scripts/deps.sh does)"
    exit 1
fi
rc=0
for a in ${WGT_TEST_ADAPTERS:-vulkan opengles}; do
    log=$(mktemp)
    WGT_BACKEND=$a "$bin" onnx-test "$data" >"$log" 2>&1
    status=$?
    grep '^FAIL' "$log"
    summary=$(tail -n 1 "$log")
    echo "[$a] $summary"
    passed=$(echo "$summary" | sed -n 's/^\([0-9]*\) passed.*/\1/p')
    if [ "$status" != 0 ]; then
        echo "[$a] wgt onnx-test exited $status"; tail -n 5 "$log"; rc=1
    elif [ -z "$passed" ] || [ "$passed" -lt "$min_pass" ]; then
        echo "[$a] only ${passed:-0} tests passed (at least $min_pass expected)"; rc=1
    fi
    rm -f "$log"
done
exit $rc
