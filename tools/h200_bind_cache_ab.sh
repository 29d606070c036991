#!/usr/bin/env bash
# The bounded bind-group cache (WGT_BIND_CACHE, default 8192 entries) against the unbounded one,
# on the H200 in one call: GPT-2 small training (`wgt bench --train`, 8 x 512, f32) and Qwen2.5-0.5B
# f16 decode, old and new binaries alternated over two rounds. Nothing should change: the steps'
# bind groups fit the cache, so it never trims.
# Before (here): D holds bins.tar.xz = build/wgt (new), build/wgt-old, build/libwgt_napi_stub.so.
# The call: carry [".gl", ".devbin-dawn", "D"], command: bash tools/h200_bind_cache_ab.sh D (~70 s).
set -u
d=${1:-.devbin-bind}
tar xJf $d/bins.tar.xz -C $d
. tools/h200_common.sh "$d" /tmp/bind_logs
BUDGET=${BUDGET:-100}
for r in 1 2; do for w in wgt-old wgt; do
    step train-$w-r$r timeout 40 $d/build/$w bench --train -m bench/configs/gpt2-small.json --batch 8 --seq 512 \
        --steps 6 --warmup 2
    step decode-$w-r$r timeout 20 $d/build/$w bench -m bench/configs/qwen2.5-0.5b.json --type f16 -p 16 -n 128
done; done
tar czf $out/bind_cache_ab.tar.gz -C $logs .
