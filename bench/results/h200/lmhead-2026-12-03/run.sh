#!/usr/bin/env bash
# Eleventh session: the float lm head default (new) against WGT_LM_HEAD=0 (the old default) on the
# two f16 rows, alternated, two rounds; first a WGT_PROFILE=1 decode of Qwen f16 (the output layer's GB/s).
set -u
d=.devbin-lead
[ -f $d/build/wgt ] || tar xJf $d/bins.tar.xz -C $d
BUDGET=${BUDGET:-170}
. tools/h200_common.sh $d /tmp/lead_logs
export WGT_NAPI_STUB=$PWD/$d/build/libwgt_napi_stub.so
W=$d/build/wgt Q=bench/configs/qwen2.5-0.5b.json L=bench/configs/llama-3.2-1b.json
TAILN=40 step prof-qf16 WGT_PROFILE=1 timeout 20 $W bench -m $Q --type f16 -p 16 -n 32
for r in 1 2; do for m in q l; do c=$Q; [ $m = l ] && c=$L
    for v in base new; do e=; [ $v = base ] && e=WGT_LM_HEAD=0
        TAILN=1 step $v-${m}f16-r$r $e timeout 25 $W bench -m $c --type f16 -p 16 -n 128
    done
done; done
grep -H "^decode" /tmp/lead_logs/*-r*.txt
tar czf $out/lead.tar.gz -C /tmp lead_logs
