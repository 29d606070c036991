#!/usr/bin/env bash
# Decode diagnostics on the H200 (helper dec, 2026-12-03 ~10:20 call; one binary, main + WGT_PROFILE=pass +
# WGT_FUSED_LINEAR_ROWS=8 + attention_decode_v4's subgroup reductions and early q / v loads, on unless
# WGT_ATTENTION_DECODE_SG=0 / WGT_ATTENTION_DECODE_PRE=0):
# GPU time a token with whole passes time-stamped (pass-*: each decode step's dispatches in one pass,
# so a token's GPU time against the plain run's wall time says GPU- or host-bound), the call-site
# profile of Qwen f16 (prof2: the lm head apart), the lm head's time with other lanes / rows
# (lm-*: WGT_FUSED_LINEAR_ROWS, read the 272 MB row of WGT_PROFILE=2), attention_decode_v4 up to
# 2048 keys against the split kernels past 1024 at -p 1536, and Dawn's disable_workgroup_init
# (no zeroing of workgroup memory at each kernel's start), and v4 as main has it (old: SG=0 PRE=0)
# against the new default (plain) and PRE=0 alone (nopre) at -p 16 (two alternated rounds).
# Before (here): D (git-ignored, .devbin-dec) holds bins.tar.xz (wgt, libwgt_napi_stub.so, stripped)
# and this script. The call: bash D/h200_dec1.sh D (from the repository root), timeout 100 s.
set -u
d=${1:-.devbin-dec}
mkdir -p $d/build
[ -f $d/bins.tar.xz ] && [ ! -f $d/build/wgt ] && tar xJf $d/bins.tar.xz -C $d/build
: ${BUDGET:=84}
. tools/h200_common.sh "$d" /tmp/dec1_logs
W=$d/build/wgt Q=bench/configs/qwen2.5-0.5b.json L=bench/configs/llama-3.2-1b.json
step warmup timeout 20 $W bench -m $Q --type f16 -p 16 -n 32
TAILN=9 step pass-qf16 WGT_PROFILE=pass timeout 15 $W bench -m $Q --type f16 -p 16 -n 128
OLD="WGT_ATTENTION_DECODE_SG=0 WGT_ATTENTION_DECODE_PRE=0"
for r in 1 2; do
    step r$r-qf16-plain timeout 15 $W bench -m $Q --type f16 -p 16 -n 128
    step r$r-qf16-old $OLD timeout 15 $W bench -m $Q --type f16 -p 16 -n 128
    step r$r-qf16-nopre WGT_ATTENTION_DECODE_PRE=0 timeout 15 $W bench -m $Q --type f16 -p 16 -n 128
    [ $r = 1 ] && step r$r-qf16-wginit WGT_DAWN_TOGGLES=disable_workgroup_init timeout 15 $W bench -m $Q --type f16 -p 16 -n 128
    step r$r-lf16-plain timeout 15 $W bench -m $L --type f16 -p 16 -n 128
    step r$r-lf16-old $OLD timeout 15 $W bench -m $L --type f16 -p 16 -n 128
    step r$r-p1536-def timeout 20 $W bench -m $Q --type f16 -p 1536 -n 128
    step r$r-p1536-v4max WGT_ATTENTION_DECODE=v4:2048 timeout 20 $W bench -m $Q --type f16 -p 1536 -n 128
    if [ $r = 1 ]; then
        TAILN=30 step prof2-qf16 WGT_PROFILE=2 timeout 15 $W bench -m $Q --type f16 -p 16 -n 32
        TAILN=30 step lm-8x32 WGT_PROFILE=2 WGT_FUSED_LINEAR_ROWS=8:32 timeout 15 $W bench -m $Q --type f16 -p 16 -n 32
    fi
done
TAILN=9 step pass-lf16 WGT_PROFILE=pass timeout 15 $W bench -m $L --type f16 -p 16 -n 128
{ echo "# $(cat $logs/gpu.txt); decode tok/s, ms/token"
  for f in $logs/*.txt; do
      dc=$(sed -n 's/^decode: .*tokens, \([0-9.]*\) tok\/s, \([0-9.]*\) ms.*/\1 \2/p' $f)
      [ -n "$dc" ] && printf '%-22s %s\n' $(basename $f .txt) "$dc"; done
  echo "# lm head (WGT_PROFILE=2 rows of 272 MB) and attention rows"
  grep -H "fused_linear 27\|attention_decode" $logs/prof2-*.txt $logs/lm-*.txt | sed 's|.*/||'
  echo "# whole passes (WGT_PROFILE=pass)"
  grep -H "pass of" $logs/pass-*.txt | sed 's|.*/||'; } | tee $logs/summary.txt
tar czf $out/dec1.tar.gz -C $logs .
