#!/usr/bin/env bash
# Follow-ups of the float-decode defaults on the H200 (main of 07:42, one binary): attention_decode_v4
# with 1024 invocations up to 256 keys (default 256) at -p 16, v4 up to 2048 keys against the split
# kernels past 1024 (the default) at -p 1536, and WGT_PROFILE=1 tables of the quantized Qwen rows.
# About 60 s; steps past BUDGET seconds (default 70) are skipped and say so.
# Before (here): D (git-ignored, e.g. .devbin-perf) holds bins.tar.xz (wgt, libwgt_napi_stub.so; stripped,
# unpacked into D/build) and this script. The device set-up is tools/h200_common.sh's.
# The call: carry [".gl", "D", ".devbin-dawn"], command: bash D/h200_decode_next.sh D, timeout_s 80.
set -u
d=${1:-.devbin-perf}
mkdir -p $d/build
[ -f $d/bins.tar.xz ] && [ ! -f $d/build/wgt ] && tar xJf $d/bins.tar.xz -C $d/build
: ${BUDGET:=70}
. tools/h200_common.sh "$d" /tmp/dnext_logs
W=$d/build/wgt Q=bench/configs/qwen2.5-0.5b.json L=bench/configs/llama-3.2-1b.json
step warmup timeout 20 $W bench -m $Q --type f16 -p 16 -n 64
for r in 1 2; do
    for m in q:$Q l:$L; do
        s=${m%%:*} c=${m#*:}
        step r$r-$s-p16-def timeout 15 $W bench -m $c --type f16 -p 16 -n 128
        step r$r-$s-p16-w1024 WGT_ATTENTION_DECODE=v4:1024:1024 timeout 15 $W bench -m $c --type f16 -p 16 -n 128
    done
done
step q-p1536-def timeout 20 $W bench -m $Q --type f16 -p 1536 -n 128
step q-p1536-v4max WGT_ATTENTION_DECODE=v4:2048 timeout 20 $W bench -m $Q --type f16 -p 1536 -n 128
TAILN=8 step prof-q-q8_0 WGT_PROFILE=1 timeout 15 $W bench -m $Q --type q8_0 -p 16 -n 64
TAILN=8 step prof-l-q4_0 WGT_PROFILE=1 timeout 15 $W bench -m $L --type q4_0 -p 16 -n 64
{ echo "# $(cat $logs/gpu.txt); wgt bench --type f16 but prof-*; def: main's defaults, w1024: v4:1024:1024,"
  echo "# v4max: v4:2048 (1536 + 128 keys in one dispatch; def: the split kernels past 1024)"
  for f in $logs/r*-*.txt $logs/q-*.txt; do
      [ -f $f ] || continue
      dc=$(sed -n 's/^decode: .*tokens, \([0-9.]*\) tok\/s, \([0-9.]*\) ms.*/\1 \2/p' $f)
      printf '%-22s %s\n' $(basename $f .txt) "${dc:-? ?}"; done; } | tee $logs/summary.txt
tar czf $out/decode_next.tar.gz -C $logs .
