#!/usr/bin/env bash
# A/B of issue 12's kernel-text moves (h-house, sixth session): the packed elementwise path's unit()
# became fixed WGSL in elementwise_pack.wgsl with the dtypes as constants (was straight-line WGSL
# written by src/ops/elementwise.c), the loader wrappers go through op_wgsl_loader_via, compute() no
# longer copies the op parameters per element; lib_matmul.wgsl's tile_word is the one 16-byte tile
# loader of matmul_regs.wgsl (mode 1) and matmul_tc's "tc load vec"; qlinear_moe.wgsl's decode loops
# share piece_of / dot_piece (WGT_MOE_KERNELS, opt-in). One device call of at most ~90 s, 2026 Dawn:
#   - bench_core (elementwise GB/s: add/exp of f32 (vec4 path), f16 and bf16 (packed path), the
#     f32 -> f16 cast (packed, mixed sizes), a broadcast add (strided)) of main's build (-base) and
#     this branch's, alternated in 2 rounds;
#   - prefill (256 tokens: the matmul tiles) and decode tok/s (wgt bench, Qwen2.5-0.5B shape, random
#     f16 weights, -p 256 -n 128), in the same rounds (round 1 base first, round 2 this branch first); steps past 68 s are skipped;
#   - `wgt ops --check` of the packed path's ops on the H200 (this branch's binary).
# Before (here): D (git-ignored, e.g. /work/main/.devbin-house) holds house.tar.xz with
# build/{wgt,wgt-base,libwgt_napi_stub.so} and bench/{bench_core,bench_core-base} (stripped); the
# Dawn comes from .devbin-dawn/dawn.tar.xz (tools/h200_common.sh).
# The call: carry [".gl", ".devbin-dawn", "D"], command: bash tools/h200_house_ab.sh D, timeout 90.
# Output: the tails on stdout, then the summary; $OUT/house_ab.tar.gz with every log.
set -u
d=${1:-.devbin-house}
[ -f $d/house.tar.xz ] && [ ! -f $d/build/wgt ] && tar xJf $d/house.tar.xz -C $d
BUDGET=${BUDGET:-68}; STEP_TAIL=3
. tools/h200_common.sh "$d" /tmp/house_logs
cp $d/build/libwgt_napi_stub.so $d/bench/ 2>/dev/null
Q=bench/configs/qwen2.5-0.5b.json
for r in 1 2; do # base, new, then new, base: a clock still climbing favours neither
    order="base new"; [ $r = 2 ] && order="new base"
    for b in $order; do
        s=; [ $b = base ] && s=-base
        TAILN=12 step core-$b-$r timeout 20 $d/bench/bench_core$s --reps 20
        step decode-$b-$r timeout 15 $d/build/wgt$s bench -m $Q --type f16 -p 256 -n 128
    done
done
TAILN=6 step check timeout 12 $d/build/wgt ops --check --dtype f16 --dtype bf16 --dtype bool add where cast
{ cat $logs/gpu.txt
  for f in $logs/core-*.txt; do echo "$(basename $f .txt):"; grep -E "^  (add|exp|cast)" $f; done
  for f in $logs/decode-*.txt; do
      printf '%-14s %s | %s\n' $(basename $f .txt) "$(grep -m1 '^prefill' $f)" "$(grep -m1 '^decode' $f)"; done
  if [ -f $logs/check.txt ]; then echo "check: $(grep -cE '^PASS' $logs/check.txt) PASS, $(grep -cE '^FAIL' $logs/check.txt) FAIL"
  else echo "check: not run"; fi
} | tee $logs/summary.txt
tar czf $out/house_ab.tar.gz -C $logs .
