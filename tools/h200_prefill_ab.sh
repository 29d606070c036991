#!/usr/bin/env bash
# Prefill A/B on the H200 (h-prefill, issue 14): subgroup-matrix tiles with 16-byte loads against
# main's wgt (WGT_MATMUL_TC=half: f16 weights and GGUF blocks through the tiles), the tile shapes, and
# the check of the kernels there. One device call, about 100 s of command.
# Before (here), from /work/main with a git-ignored D (default .devbin-prefill):
#   mkdir -p D/build/tests; cp .devbin-lead/dawn.tar.xz D/; cp BASE/wgt D/build/wgt-base
#   cp NEW/wgt NEW/libwgt_napi_stub.so D/build/; cp NEW/tests/test_gpu_matmul_tc D/build/tests/
#   cp tools/h200_prefill_ab.sh D/   (the script travels with its binaries)
# The call: carry [".gl", "D"], command: bash D/h200_prefill_ab.sh D, timeout_s 240.
# Output: the summary last; $OUT/prefill_ab.tar.gz with every log.
set -u
d=${1:-.devbin-prefill}
out=${OUT:-/tmp/out}; logs=/tmp/pf_logs; mkdir -p "$out" "$logs"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
tar xJf $d/dawn.tar.xz -C $d
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export WGT_WEBGPU_LIB=$PWD/$d/.deps/dawn-2026/dawn.node
ldd $d/build/wgt | grep "not found"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee $logs/gpu.txt
step() { local name=$1; shift; echo "=== $name: $*"; env "$@" >$logs/$name.txt 2>&1; echo "exit $?" >>$logs/$name.txt
    grep -v "artificially" $logs/$name.txt | tail -n ${TAILN:-2}; }
W=$d/build/wgt B=$d/build/wgt-base Q=bench/configs/qwen2.5-0.5b.json L=bench/configs/llama-3.2-1b.json
TAILN=12 step info WGT_SGMATRIX_DUMP=1 timeout 30 $W info
TAILN=40 step tc_test timeout 60 $d/build/tests/test_gpu_matmul_tc
step warm timeout 30 $B bench -m $Q --type f16 -p 512 -n 4
for r in 1 2; do
  step qf16-base-$r timeout 30 $B bench -m $Q --type f16 -p 512 -n 4
  step qf16-tc-$r WGT_MATMUL_TC=half timeout 30 $W bench -m $Q --type f16 -p 512 -n 4
done
for t in 128x128x32:2x2 128x64x32:2x2 64x64x32:2x2; do
  step qf16-tile-$t WGT_MATMUL_TC=half WGT_MATMUL_TC_TILE=$t timeout 30 $W bench -m $Q --type f16 -p 512 -n 4
done
for f in 16x8x16 16x16x16; do step qf16-frag-$f WGT_MATMUL_TC=1:$f timeout 30 $W bench -m $Q --type f16 -p 512 -n 4; done
step lf16-base timeout 30 $B bench -m $L --type f16 -p 512 -n 4
step lf16-tc WGT_MATMUL_TC=half timeout 30 $W bench -m $L --type f16 -p 512 -n 4
for t in q8_0 q4_0; do
  step q$t-base timeout 30 $B bench -m $Q --type $t -p 512 -n 4
  step q$t-tc WGT_MATMUL_TC=half timeout 30 $W bench -m $Q --type $t -p 512 -n 4
done
TAILN=24 step prof-qf16-tc WGT_PROFILE=1 WGT_MATMUL_TC=half timeout 30 $W bench -m $Q --type f16 -p 512 -n 4
TAILN=24 step prof-qq8_0-tc WGT_PROFILE=1 WGT_MATMUL_TC=half timeout 30 $W bench -m $Q --type q8_0 -p 512 -n 4
{ cat $logs/gpu.txt; for f in $logs/qf16-* $logs/lf16-* $logs/qq*; do
    printf '%-28s %s\n' $(basename $f .txt) "$(grep -m1 '^prefill' $f || tail -n 2 $f | head -c 200)"; done; } | tee $logs/summary.txt
tar czf $out/prefill_ab.tar.gz -C $logs .
