#!/usr/bin/env bash
# Decode A/B on the H200 (helper dec, 2026-12-03 ~10:55 call): main's wgt (D/base) against h-dec's
# (D/build), alternated in two rounds, -p 16 -n 128: Qwen2.5-0.5B f16, Llama-3.2-1B f16 and Qwen
# Q8_0 (quantized rows share the attention and per-token costs); Qwen f16 at -p 1536 (attention past
# 1024 keys); then h-dec's WGT_PROFILE=1 decode tables (Qwen and Llama f16) and WGT_PROFILE=pass rows.
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
    order="base new"; [ $r = 2 ] && order="new base"
    for m in qf16:$Q:f16 lf16:$L:f16 qq8_0:$Q:q8_0; do
        IFS=: read -r s c t <<<"$m"
        for who in $order; do
            W=$N; [ $who = base ] && W=$B
            step r$r-$s-$who timeout 15 $W bench -m $c --type $t -p 16 -n 128
        done
    done
done
for who in base new; do
    W=$N; [ $who = base ] && W=$B
    step p1536-$who timeout 20 $W bench -m $Q --type f16 -p 1536 -n 128
done
TAILN=20 step prof-qf16 WGT_PROFILE=1 timeout 15 $N bench -m $Q --type f16 -p 16 -n 64
TAILN=20 step prof-lf16 WGT_PROFILE=1 timeout 15 $N bench -m $L --type f16 -p 16 -n 64
TAILN=9 step pass-qf16 WGT_PROFILE=pass timeout 15 $N bench -m $Q --type f16 -p 16 -n 128
TAILN=9 step pass-lf16 WGT_PROFILE=pass timeout 15 $N bench -m $L --type f16 -p 16 -n 128
{ echo "# $(cat $logs/gpu.txt); decode tok/s, ms/token (base: main's wgt, new: h-dec's)"
  for f in $logs/*.txt; do
      dc=$(sed -n 's/^decode: .*tokens, \([0-9.]*\) tok\/s, \([0-9.]*\) ms.*/\1 \2/p' $f)
      [ -n "$dc" ] && printf '%-22s %s\n' $(basename $f .txt) "$dc"; done
  echo "# whole passes (WGT_PROFILE=pass)"
  grep -H "pass of" $logs/pass-*.txt | sed 's|.*/||'; } | tee $logs/summary.txt
tar czf $out/dec2.tar.gz -C $logs .
