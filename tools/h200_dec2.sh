#!/usr/bin/env bash
# Decode A/B on the H200 (helper dec, 2026-12-03 second call): main's wgt (D/base) against h-dec's
# (D/build: attention_decode_v4 with subgroup reductions, early q / value loads (PRE) and up to 2048
# keys; fused_linear R = 8 on the output layers; the argmax's first stage in parts of 1024), alternated
# in two rounds at -p 16 -n 128: Qwen2.5-0.5B f16, Llama-3.2-1B f16 (also h-dec with PRE=0: nopre)
# and Qwen Q8_0; then h-dec's WGT_PROFILE=1 decode tables (Qwen and Llama f16), then (if time is
# left) Qwen f16 at -p 512.
# Before (here): D (git-ignored, .devbin-dec) holds bins.tar.xz (build/ and base/: wgt and
# libwgt_napi_stub.so each, stripped) and this script. The call: bash D/h200_dec2.sh D, timeout 100 s.
set -u
d=${1:-.devbin-dec}
[ -f $d/bins.tar.xz ] && [ ! -f $d/build/wgt ] && tar xJf $d/bins.tar.xz -C $d
: ${BUDGET:=84}
. tools/h200_common.sh "$d" /tmp/dec2_logs
N=$d/build/wgt B=$d/base/wgt Q=bench/configs/qwen2.5-0.5b.json L=bench/configs/llama-3.2-1b.json
step warmup timeout 20 $N bench -m $Q --type f16 -p 16 -n 32
for r in 1 2; do
    order="base new nopre"; [ $r = 2 ] && order="nopre new base"
    for m in qf16:$Q:f16 lf16:$L:f16 qq8_0:$Q:q8_0; do
        IFS=: read -r s c t <<<"$m"
        for who in $order; do
            [ $who = nopre ] && [ $t != f16 ] && continue
            W=$N E=; [ $who = base ] && W=$B; [ $who = nopre ] && E=WGT_ATTENTION_DECODE_PRE=0
            step r$r-$s-$who $E timeout 15 $W bench -m $c --type $t -p 16 -n 128
        done
    done
done
TAILN=20 step prof-qf16 WGT_PROFILE=1 timeout 15 $N bench -m $Q --type f16 -p 16 -n 64
TAILN=20 step prof-lf16 WGT_PROFILE=1 timeout 15 $N bench -m $L --type f16 -p 16 -n 64
step p512-qf16-base timeout 15 $B bench -m $Q --type f16 -p 512 -n 128
step p512-qf16-new timeout 15 $N bench -m $Q --type f16 -p 512 -n 128
{ echo "# $(cat $logs/gpu.txt); decode tok/s, ms/token (base: main's wgt, new: h-dec's, nopre: h-dec's with WGT_ATTENTION_DECODE_PRE=0)"
  for f in $logs/*.txt; do
      dc=$(sed -n 's/^decode: .*tokens, \([0-9.]*\) tok\/s, \([0-9.]*\) ms.*/\1 \2/p' $f)
      [ -n "$dc" ] && printf '%-22s %s\n' $(basename $f .txt) "$dc"; done; } | tee $logs/summary.txt
tar czf $out/dec2.tar.gz -C $logs .
