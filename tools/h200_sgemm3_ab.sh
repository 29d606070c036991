#!/usr/bin/env bash
# End-to-end A/B of WGT_MATMUL_TILE_UNROLL=1 (the register tiles' named sums and regs_big's 128 x 96 /
# 128 x 128 tiles; issue 14's f32 matmul at half the f32 peak) on the H200 in one device call of
# under 100 s: `wgt bench --train` GPT-2 small (8 x 512, f32) and Qwen2.5-0.5B f16 prefill 512 of
# main's binary (before) and this branch's with the variable (after), alternated in rounds (the
# second in reverse order); the default model's shape (32 x 256) once each; then bench_matmul's
# products with the variable 0 / 1 (the same binary: 0 is main's kernel), one profiled GPT-2 step,
# and test_gpu_matmul_unroll where the budget allows.
# DIR (a git-ignored folder of /work/main, carried) holds payload.tar.xz: wgt-before, wgt,
# bench_matmul, libwgt_napi_stub.so and optionally test_unroll (stripped); the Dawn comes from
# .devbin-dawn/dawn.tar.xz (tools/h200_common.sh).
#   carry [".gl", ".devbin-dawn", DIR]   command: bash tools/h200_sgemm3_ab.sh DIR   timeout_s: 100
# BUDGET (default 85 s): steps past it are skipped, saying so. Output: the summary last on stdout,
# every log in $OUT/sgemm3_ab.tar.gz.
set -u
dir=${1:?usage: tools/h200_sgemm3_ab.sh DIR}
BUDGET=${BUDGET:-85}; STEP_TAIL=1
mkdir -p "$dir/bin"
tar xJf "$dir/payload.tar.xz" -C "$dir/bin"
L=/tmp/sgemm3_logs
rm -rf $L
. tools/h200_common.sh "$dir" $L
export WGT_NAPI_STUB=$PWD/$dir/bin/libwgt_napi_stub.so
b=$dir/bin
G=bench/configs/gpt2-small.json Q=bench/configs/qwen2.5-0.5b.json BL=models/bible-llama/config.json
gpt2() { step "gpt2-$1-$2" $(vars $1) timeout 20 $(bin $1) bench --train -m $G --name "gpt2-$1" --batch 8 --seq 512 --dtype f32 --steps 3 --warmup 1; }
qwen() { step "qwen-$1-$2" $(vars $1) timeout 12 $(bin $1) bench -m $Q --type f16 -p 512 -n 2; }
vars() { [ $1 = before ] && echo WGT_AB=0 || echo WGT_MATMUL_TILE_UNROLL=1; }
bin() { [ $1 = before ] && echo $b/wgt-before || echo $b/wgt; }
gpt2 before 1; gpt2 after 1; qwen before 1; qwen after 1
qwen after 2; qwen before 2; gpt2 after 2; gpt2 before 2
for v in before after; do
    step "bible-$v" $(vars $v) timeout 12 $(bin $v) bench --train -m $BL --name "bible-$v" --batch 32 --seq 256 --dtype f32 --steps 10 --warmup 3
done
SUB="square 4096,gpt2"
TAILN=1 step mm-u0 WGT_MATMUL_TILE_UNROLL=0 timeout 12 $b/bench_matmul --reps 3 --only "$SUB"
TAILN=1 step mm-u1 WGT_MATMUL_TILE_UNROLL=1 timeout 12 $b/bench_matmul --reps 3 --only "$SUB"
TAILN=1 step prof-gpt2-after WGT_PROFILE=1 WGT_MATMUL_TILE_UNROLL=1 timeout 15 $b/wgt bench --train -m $G --name gpt2-prof --batch 8 --seq 512 --dtype f32 --steps 1 --warmup 1
[ -x $b/test_unroll ] && TAILN=1 step test-unroll timeout 10 $b/test_unroll
{
echo "## end to end (before = main, after = WGT_MATMUL_TILE_UNROLL=1)"
for f in $L/gpt2-*.txt $L/qwen-*.txt $L/bible-*.txt $L/test-*.txt; do
    [ -f "$f" ] && printf '%-16s %s\n' "$(basename "$f" .txt)" "$(grep -E '^wgt |^prefill|checks|error' "$f" | head -n 1)"
done
echo "## bench_matmul (same binary: 0 = main's kernel, 1 = unrolled)"
for f in $L/mm-*.txt; do echo "=== $(basename "$f" .txt)"; grep -E '^(square|gpt2)|one after another|exit' "$f"; done
echo "## profile, after (top kernels)"
grep -A8 "kernel  " $L/prof-gpt2-after.txt 2>/dev/null | head -n 9
} | tee "$out/sgemm3_summary.txt"
tar czf "$out/sgemm3_ab.tar.gz" -C /tmp sgemm3_logs
echo "### done at $(( $(date +%s) - t0 )) s"
