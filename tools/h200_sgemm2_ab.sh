#!/usr/bin/env bash
# The register tiles' named sums (matmul_regs.wgsl's entry `unrolled`, WGT_MATMUL_TILE_UNROLL; issue
# 14's f32 matmul at half the f32 peak) A/B on the H200 in one device call of under 100 s:
# bench_matmul (GFLOP/s and % of the f32 peak per shape) of main's binary (before) and this branch's
# with WGT_MATMUL_TILE_UNROLL=1 / 2 (after) in alternating rounds, the tiles the named sums make
# possible (128 x 128 of 8 x 8 an invocation spilled as an array) on a subset of shapes, then
# `wgt bench --train` GPT-2 small (8 x 512, f32) and Qwen2.5-0.5B f16 prefill 512, before / after.
# DIR (a git-ignored folder of /work/main, carried) holds payload.tar.xz: wgt-before, wgt,
# bench_matmul-before, bench_matmul, libwgt_napi_stub.so, test_unroll (optional: test_gpu_matmul's named-sum
# cases alone) (stripped); the Dawn comes from
# .devbin-dawn/dawn.tar.xz (tools/h200_common.sh).
#   carry [".gl", ".devbin-dawn", DIR]   command: bash tools/h200_sgemm2_ab.sh DIR   timeout_s: 100
# BUDGET (default 80 s): steps past it are skipped, saying so. Output: the summary last on stdout,
# every log in $OUT/sgemm2_ab.tar.gz (bench/results/h200/sgemm2_ab.txt).
set -u
dir=${1:?usage: tools/h200_sgemm2_ab.sh DIR}
BUDGET=${BUDGET:-80}; STEP_TAIL=1
mkdir -p "$dir/bin"
tar xJf "$dir/payload.tar.xz" -C "$dir/bin"
L=/tmp/sgemm2_logs
. tools/h200_common.sh "$dir" $L
export WGT_NAPI_STUB=$PWD/$dir/bin/libwgt_napi_stub.so
b=$dir/bin
SUB="square 4096,gpt2 mlp up,gpt2 lm head,gpt2 attn out dw,qwen0.5b gate f16"
TAILN=1 step mm-before-1 timeout 12 $b/bench_matmul-before --reps 5
TAILN=1 step mm-u1-1 WGT_MATMUL_TILE_UNROLL=1 timeout 12 $b/bench_matmul --reps 5
TAILN=1 step mm-u2-1 WGT_MATMUL_TILE_UNROLL=2 timeout 12 $b/bench_matmul --reps 5
for t in 128x128x8:8x8 128x128x16:8x8 64x128x8:4x8 128x96x8:8x4 128x64x16:8x4; do
    TAILN=1 step "tile-u-$t" WGT_MATMUL_TILE_UNROLL=1 WGT_MATMUL_TILE=$t timeout 8 $b/bench_matmul --reps 5 --only "$SUB"
done
TAILN=1 step tile-u-pad-128x128x8:8x8 WGT_MATMUL_TILE_PAD=1 WGT_MATMUL_TILE_UNROLL=1 WGT_MATMUL_TILE=128x128x8:8x8 \
    timeout 8 $b/bench_matmul --reps 5 --only "$SUB"
TAILN=1 step tile-array-128x128x8:8x8 WGT_MATMUL_TILE=128x128x8:8x8 timeout 8 $b/bench_matmul --reps 5 --only "$SUB"
TAILN=1 step mm-u2-2 WGT_MATMUL_TILE_UNROLL=2 timeout 12 $b/bench_matmul --reps 5
TAILN=1 step mm-u1-2 WGT_MATMUL_TILE_UNROLL=1 timeout 12 $b/bench_matmul --reps 5
TAILN=1 step mm-before-2 timeout 12 $b/bench_matmul-before --reps 5
G=bench/configs/gpt2-small.json Q=bench/configs/qwen2.5-0.5b.json
train() { step "gpt2-$1" $2 timeout 15 $3 bench --train -m $G --name "gpt2-$1" --batch 8 --seq 512 --dtype f32 --steps 3 --warmup 1; }
train before-1 WGT_AB=0 $b/wgt-before
train u2-1 WGT_MATMUL_TILE_UNROLL=2 $b/wgt
train u1-1 WGT_MATMUL_TILE_UNROLL=1 $b/wgt
prefill() { step "qwen-$1" $2 timeout 10 $3 bench -m $Q --type f16 -p 512 -n 2; }
prefill before-1 WGT_AB=0 $b/wgt-before
prefill u2-1 WGT_MATMUL_TILE_UNROLL=2 $b/wgt
prefill u1-1 WGT_MATMUL_TILE_UNROLL=1 $b/wgt
train u2-2 WGT_MATMUL_TILE_UNROLL=2 $b/wgt
train before-2 WGT_AB=0 $b/wgt-before
prefill u2-2 WGT_MATMUL_TILE_UNROLL=2 $b/wgt
prefill before-2 WGT_AB=0 $b/wgt-before
# test_gpu_matmul's named-sum cases (every tile above, the general cases through auto), if present
[ -x $b/test_unroll ] && TAILN=1 step test-unroll timeout 12 $b/test_unroll
{
echo "## bench_matmul, all products one after another"
for f in $L/mm-*.txt $L/tile-*.txt; do
    printf '%-28s %s\n' "$(basename "$f" .txt)" "$(grep -E 'one after another|error' "$f" | head -n 1)"
done
echo "## per product"
for f in $L/mm-before-1.txt $L/mm-u1-1.txt $L/mm-u2-1.txt $L/tile-u-128x128x8:8x8.txt $L/tile-u-128x128x16:8x8.txt; do
    echo "=== $(basename "$f" .txt)"; grep -E '^(square|gpt2|qwen|bible)' "$f"
done
echo "## training and prefill"
for f in $L/gpt2-*.txt $L/qwen-*.txt $L/test-*.txt; do
    printf '%-16s %s\n' "$(basename "$f" .txt)" "$(grep -E '^wgt |prefill|checks|error' "$f" | head -n 2 | tr '\n' ' ')"
done
} | tee "$out/sgemm2_summary.txt"
tar czf "$out/sgemm2_ab.tar.gz" -C /tmp sgemm2_logs
echo "### done at $(( $(date +%s) - t0 )) s"
