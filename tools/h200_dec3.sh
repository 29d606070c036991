#!/usr/bin/env bash
# Decode at -p 512 on the H200 (helper dec, 2026-12-03, a third call if there is one): main's wgt
# (D/base) against h-dec's (D/build, the landed defaults) and h-dec's with the subgroup reductions in
# attention_decode_v4's 1024-invocation workgroups too (sgall: WGT_ATTENTION_DECODE_SG=all, which
# past 256 invocations now combines the subgroups' partials with a second subgroup reduction),
# alternated in two rounds, -p 512 -n 128: Qwen2.5-0.5B f16 and Llama-3.2-1B f16.
# Before (here): D (git-ignored, .devbin-dec) holds bins.tar.xz (build/ and base/) and this script.
# The call: bash D/h200_dec3.sh D, timeout 100 s.
set -u
d=${1:-.devbin-dec}
[ -f $d/bins.tar.xz ] && [ ! -f $d/build/wgt ] && tar xJf $d/bins.tar.xz -C $d
: ${BUDGET:=84}
. tools/h200_common.sh "$d" /tmp/dec3_logs
N=$d/build/wgt B=$d/base/wgt Q=bench/configs/qwen2.5-0.5b.json L=bench/configs/llama-3.2-1b.json
step warmup timeout 20 $N bench -m $Q --type f16 -p 16 -n 32
for r in 1 2; do
    order="base new sgall"; [ $r = 2 ] && order="sgall new base"
    for m in qf16:$Q lf16:$L; do
        s=${m%%:*} c=${m#*:}
        for who in $order; do
            W=$N E=; [ $who = base ] && W=$B; [ $who = sgall ] && E=WGT_ATTENTION_DECODE_SG=all
            step r$r-$s-$who $E timeout 15 $W bench -m $c --type f16 -p 512 -n 128
        done
    done
done
step p16-qf16-new timeout 15 $N bench -m $Q --type f16 -p 16 -n 128
step p16-qq4_0-base timeout 15 $B bench -m $Q --type q4_0 -p 16 -n 128
step p16-qq4_0-new timeout 15 $N bench -m $Q --type q4_0 -p 16 -n 128
{ echo "# $(cat $logs/gpu.txt); decode tok/s, ms/token (base: main's wgt, new: h-dec's, sgall: h-dec's with WGT_ATTENTION_DECODE_SG=all)"
  for f in $logs/*.txt; do
      dc=$(sed -n 's/^decode: .*tokens, \([0-9.]*\) tok\/s, \([0-9.]*\) ms.*/\1 \2/p' $f)
      [ -n "$dc" ] && printf '%-22s %s\n' $(basename $f .txt) "$dc"; done; } | tee $logs/summary.txt
tar czf $out/dec3.tar.gz -C $logs .
