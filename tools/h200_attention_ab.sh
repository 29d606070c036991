#!/usr/bin/env bash
# The attention opt-ins of issue 14 on the H200: the op test with the tensor cores
# (test_gpu_attention_rope runs its tile cases with WGT_ATTENTION_TC=1 where subgroup matrices
# exist); prefill tok/s of main's wgt (wgt-base) against this branch's with WGT_ATTENTION_TC=1 and
# =0 in rounds, three forced tile shapes, Llama once, WGT_PROFILE=1 prefills (attention's us a
# call); decode tok/s of wgt-base against WGT_ATTENTION_LOADS=4 over a short cache (-p 16:
# attention_decode) and a long one (-p 512: the split kernel), and their decode profiles.
# ~120 s; steps past BUDGET seconds (default 135) are skipped and say so.
# Before (here): D (git-ignored) holds build/wgt, build/wgt-base, build/libwgt_napi_stub.so,
# build/tests/test_gpu_attention_rope (stripped) and this script. The Dawn: as h200_profile_rows.sh.
# The call: carry [".gl", "D"], command: bash D/h200_attention_ab.sh D, timeout_s 150.
set -u
d=${1:-.devbin-perf}
STEP_TAIL=3; . tools/h200_common.sh "$d" /tmp/at_logs
W=$d/build/wgt B=$d/build/wgt-base Q=bench/configs/qwen2.5-0.5b.json L=bench/configs/llama-3.2-1b.json
TAILN=8 step test timeout 60 $d/build/tests/test_gpu_attention_rope
step warm timeout 20 $B bench -m $Q --type f16 -p 512 -n 2
for r in 1 2; do # prefill: main, the tiles, this binary without them
    step qf16-base-$r timeout 20 $B bench -m $Q --type f16 -p 512 -n 2
    step qf16-tc-$r WGT_ATTENTION_TC=1 timeout 20 $W bench -m $Q --type f16 -p 512 -n 2
    step qf16-notc-$r WGT_ATTENTION_TC=0 timeout 20 $W bench -m $Q --type f16 -p 512 -n 2
done
for t in 32x32 16x64 16x32; do
    step qf16-tc-tile$t WGT_ATTENTION_TC=1 WGT_ATTENTION_TC_TILE=$t timeout 20 $W bench -m $Q --type f16 -p 512 -n 2
done
step lf16-base timeout 20 $B bench -m $L --type f16 -p 512 -n 2
step lf16-tc WGT_ATTENTION_TC=1 timeout 20 $W bench -m $L --type f16 -p 512 -n 2
TAILN=12 step prof-qf16-tc WGT_PROFILE=1 WGT_ATTENTION_TC=1 timeout 20 $W bench -m $Q --type f16 -p 512 -n 2
TAILN=12 step prof-qf16-notc WGT_PROFILE=1 WGT_ATTENTION_TC=0 timeout 20 $W bench -m $Q --type f16 -p 512 -n 2
for r in 1 2; do # decode: main against WGT_ATTENTION_LOADS=4, a short cache (attention_decode) and a long one (split)
    step dqf16-p16-base-$r timeout 20 $B bench -m $Q --type f16 -p 16 -n 128
    step dqf16-p16-loads4-$r WGT_ATTENTION_LOADS=4 timeout 20 $W bench -m $Q --type f16 -p 16 -n 128
    step dqf16-p512-base-$r timeout 20 $B bench -m $Q --type f16 -p 512 -n 128
    step dqf16-p512-loads4-$r WGT_ATTENTION_LOADS=4 timeout 20 $W bench -m $Q --type f16 -p 512 -n 128
done
TAILN=12 step prof-dqf16-loads4 WGT_PROFILE=1 WGT_ATTENTION_LOADS=4 timeout 20 $W bench -m $Q --type f16 -p 16 -n 64
TAILN=12 step prof-dqf16-base WGT_PROFILE=1 timeout 20 $W bench -m $Q --type f16 -p 16 -n 64
{ cat $logs/gpu.txt; for f in $logs/qf16-* $logs/lf16-*; do
    printf '%-24s %s\n' $(basename $f .txt) "$(grep -m1 '^prefill' $f || tail -n 2 $f | head -c 200)"; done
  for f in $logs/dqf16-*; do
    printf '%-24s %s\n' $(basename $f .txt) "$(grep -m1 '^decode' $f || tail -n 2 $f | head -c 200)"; done
  for f in $logs/prof-*; do echo "$(basename $f .txt):"; grep -E '^ +attention' $f; done; } | tee $logs/summary.txt
tar czf $out/attention_ab.tar.gz -C $logs .
