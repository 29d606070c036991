#!/usr/bin/env bash
# Matmul A/B on the H200, second call (h-perf3): subgroup-matrix config fix, split-k default on.
# Usage (the device tool, kind nvidia-h200, about 70 s of command after the machine's start), from
# /work/main with a git-ignored .devbin-perf holding dawn.tar.xz (a copy of .devbin/deps/dawn.tar.xz),
# build/wgt-base (main's wgt before the change), build/wgt, build/libwgt_napi_stub.so and
# build/tests/test_gpu_matmul_tc:  carry [".gl", ".devbin-perf"], command: bash tools/h200_matmul_ab.sh
# Output: the summary table last; $OUT/mm2.tar.gz with every log (bench/results/h200/matmul_ab.txt).
set -u
d=.devbin-perf
out=${OUT:-/tmp/out}; logs=/tmp/mm_logs; mkdir -p "$out" "$logs"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
tar xJf $d/dawn.tar.xz -C $d
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export WGT_WEBGPU_LIB=$PWD/$d/.deps/dawn-2026/dawn.node
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee $logs/gpu.txt
step() { local name=$1; shift; echo "=== $name: $*"; env "$@" >$logs/$name.txt 2>&1; echo "exit $?" >>$logs/$name.txt
    grep -v "artificially" $logs/$name.txt | tail -n ${TAILN:-3}; }
W=$d/build/wgt B=$d/build/wgt-base Q=bench/configs/qwen2.5-0.5b.json
TAILN=16 step tc_test timeout 60 $d/build/tests/test_gpu_matmul_tc
step warm timeout 60 $B bench -m $Q --type f16 -p 512 -n 4
for r in 1 2; do
  step pf16-base-$r timeout 40 $B bench -m $Q --type f16 -p 512 -n 4
  step pf16-tc-$r WGT_MATMUL_TC=1 timeout 40 $W bench -m $Q --type f16 -p 512 -n 4
  step pf16-tc16-$r WGT_MATMUL_TC=1:16x16x16 timeout 40 $W bench -m $Q --type f16 -p 512 -n 4
done
BL=models/bible-llama/config.json G=bench/configs/gpt2-small.json
step tb-base timeout 40 $B bench --train -m $BL --name bible --batch 32 --seq 256 --steps 10 --warmup 3
step tb-split timeout 40 $W bench --train -m $BL --name bible --batch 32 --seq 256 --steps 10 --warmup 3
step tb-splittc WGT_MATMUL_TC=1 timeout 40 $W bench --train -m $BL --name bible --batch 32 --seq 256 --steps 10 --warmup 3
step tb-splittc16 WGT_MATMUL_TC=1:16x16x16 timeout 40 $W bench --train -m $BL --name bible --batch 32 --seq 256 --steps 10 --warmup 3
step tg-split timeout 40 $W bench --train -m $G --name gpt2 --batch 8 --seq 512 --steps 2 --warmup 1
step tg-splittc WGT_MATMUL_TC=1 timeout 40 $W bench --train -m $G --name gpt2 --batch 8 --seq 512 --steps 2 --warmup 1
TAILN=14 step prof-pf16-tc WGT_PROFILE=1 WGT_MATMUL_TC=1 timeout 40 $W bench -m $Q --type f16 -p 512 -n 4
TAILN=14 step prof-tb-splittc WGT_PROFILE=1 WGT_MATMUL_TC=1 timeout 40 $W bench --train -m $BL --name bible --batch 32 --seq 256 --steps 2 --warmup 1
{ for f in $logs/pf16-*; do printf '%-16s %s\n' $(basename $f .txt) "$(grep '^prefill' $f)"; done
  for f in $logs/tb-* $logs/tg-*; do printf '%-16s %s\n' $(basename $f .txt) "$(grep '^wgt ' $f | cut -c1-90)"; done; } | tee $logs/summary.txt
tar czf $out/mm2.tar.gz -C $logs .
