#!/usr/bin/env bash
# Float decode kernels on the H200 against main's binary:
#   WGT_FUSED_LINEAR_ROWS=R[:T[:W]]: fused_linear.wgsl's entry `rows` (R rows a group of T lanes,
#     each lane's x serving R rows) for the one-token linear layers (main: one row a group);
#   WGT_ATTENTION_DECODE=v4[:MAX[:WG]]: attention_decode_v4.wgsl (f32 q/k/v read as 16-byte words, a
#     key row's loads together) for decode steps over at most MAX keys (256 unless given), WG lanes.
# Steps: test_gpu_fused and test_gpu_attention_rope (subgroups of 32), an untimed warm-up, two
# alternated rounds of Llama-3.2-1B and Qwen2.5-0.5B f16 decode (-p 16 -n 128): main, rows4, v4,
# both (round 1 also rows2); WGT_PROFILE=1 tables with both; the -p 512 rows (issue 14's table)
# main against rows4 + v4:1024 (256 and 1024 lanes) and rows4 alone; v4 with 1024 lanes at -p 16;
# forced lanes; main's -p 512 profile. About 90-100 s; steps past BUDGET seconds (default 88) are
# skipped and say so.
# Before (here): D (git-ignored, e.g. .devbin-perf) holds bins.tar.xz (wgt-base: main's wgt, wgt:
# this branch's, libwgt_napi_stub.so, test_gpu_fused, test_gpu_attention_rope; stripped, unpacked
# into D/build) and this script. The device set-up is tools/h200_common.sh's.
# The call: carry [".gl", "D", ".devbin-dawn"], command: bash D/h200_decode_kernels.sh D, timeout_s 100.
# Output: the steps' tails and a summary table on stdout; $OUT/decode_kernels.tar.gz with every log.
set -u
d=${1:-.devbin-perf}
mkdir -p $d/build
[ -f $d/bins.tar.xz ] && [ ! -f $d/build/wgt ] && tar xJf $d/bins.tar.xz -C $d/build
: ${BUDGET:=88}
. tools/h200_common.sh "$d" /tmp/dk_logs
W=$d/build/wgt B=$d/build/wgt-base Q=bench/configs/qwen2.5-0.5b.json L=bench/configs/llama-3.2-1b.json
[ -x $d/build/test_gpu_fused ] && TAILN=2 step test-fused timeout 20 $d/build/test_gpu_fused
[ -x $d/build/test_gpu_attention_rope ] && TAILN=2 step test-attention timeout 25 $d/build/test_gpu_attention_rope
step warmup timeout 20 $W bench -m $Q --type f16 -p 16 -n 64
for r in 1 2; do
    for m in l:$L q:$Q; do
        s=${m%%:*} c=${m#*:}
        step r$r-$s-base timeout 15 $B bench -m $c --type f16 -p 16 -n 128
        step r$r-$s-rows4 WGT_FUSED_LINEAR_ROWS=4 timeout 15 $W bench -m $c --type f16 -p 16 -n 128
        step r$r-$s-v4 WGT_ATTENTION_DECODE=v4 timeout 15 $W bench -m $c --type f16 -p 16 -n 128
        step r$r-$s-both WGT_FUSED_LINEAR_ROWS=4 WGT_ATTENTION_DECODE=v4 timeout 15 $W bench -m $c --type f16 -p 16 -n 128
        [ $r = 1 ] || continue
        for R in 2; do step r$r-$s-rows$R WGT_FUSED_LINEAR_ROWS=$R timeout 15 $W bench -m $c --type f16 -p 16 -n 128; done
    done
done
TAILN=9 step prof-l-both WGT_PROFILE=1 WGT_FUSED_LINEAR_ROWS=4 WGT_ATTENTION_DECODE=v4 timeout 15 $W bench -m $L --type f16 -p 16 -n 64
TAILN=9 step prof-q-both WGT_PROFILE=1 WGT_FUSED_LINEAR_ROWS=4 WGT_ATTENTION_DECODE=v4 timeout 15 $W bench -m $Q --type f16 -p 16 -n 64
for m in l:$L q:$Q; do
    s=${m%%:*} c=${m#*:}
    step p512-$s-base timeout 15 $B bench -m $c --type f16 -p 512 -n 128
    step p512-$s-both WGT_FUSED_LINEAR_ROWS=4 WGT_ATTENTION_DECODE=v4:1024 timeout 15 $W bench -m $c --type f16 -p 512 -n 128
    step p512-$s-both1024 WGT_FUSED_LINEAR_ROWS=4 WGT_ATTENTION_DECODE=v4:1024:1024 timeout 15 $W bench -m $c --type f16 -p 512 -n 128
    step p512-$s-rows4 WGT_FUSED_LINEAR_ROWS=4 timeout 15 $W bench -m $c --type f16 -p 512 -n 128
done
for m in l:$L q:$Q; do
    s=${m%%:*} c=${m#*:}
    step x-$s-v4w1024 WGT_ATTENTION_DECODE=v4:256:1024 timeout 15 $W bench -m $c --type f16 -p 16 -n 128
done
for f in 4:32 4:64 2:32; do step x-l-rows$f WGT_FUSED_LINEAR_ROWS=$f timeout 15 $W bench -m $L --type f16 -p 16 -n 128; done
step x-q-rows4:64 WGT_FUSED_LINEAR_ROWS=4:64 timeout 15 $W bench -m $Q --type f16 -p 16 -n 128
TAILN=14 step prof-q-p512-base WGT_PROFILE=1 timeout 15 $B bench -m $Q --type f16 -p 512 -n 64
{ echo "# $(cat $logs/gpu.txt); wgt bench --type f16 (l: llama-3.2-1b, q: qwen2.5-0.5b; base: main;"
  echo "# rowsR[:T]: WGT_FUSED_LINEAR_ROWS=R[:T]; v4: WGT_ATTENTION_DECODE=v4; both: rows4 + v4"
  echo "# (v4:1024 at -p 512)); -p 16 -n 128 but p512-*: -p 512 -n 128"
  echo "step                   decode_tok_s ms_per_token dispatches_per_token"
  for f in $logs/r*-*.txt $logs/x-*.txt $logs/p512-*.txt; do
      [ -f $f ] || continue
      dc=$(sed -n 's/^decode: .*tokens, \([0-9.]*\) tok\/s, \([0-9.]*\) ms.*/\1 \2/p' $f)
      dp=$(sed -n 's/^per token: \([0-9.]*\) dispatches.*/\1/p' $f)
      printf '%-22s %-25s %s\n' $(basename $f .txt) "${dc:-? ?}" "${dp:-?}"; done; } | tee $logs/summary.txt
tar czf $out/decode_kernels.tar.gz -C $logs .
