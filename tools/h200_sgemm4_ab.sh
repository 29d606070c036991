#!/usr/bin/env bash
# After WGT_MATMUL_TILE_UNROLL became the default (issue 14): the rows tools/h200_sgemm3_ab.sh did
# not measure, and the tiles for the products regs_big leaves to the arrays (under 132 tiles), on
# the H200 in one device call of under 80 s: `wgt bench --train` GPT-2 small bf16 (8 x 512) and
# Llama-3.2-1B f16 prefill 512 of main's binary before the default (wgt-before) and after (wgt),
# then bench_matmul (after) on the small-tile products (GPT-2's qkv and attention-out weight
# gradients, the default model's) with its default and forced tiles through the named sums.
# DIR (a git-ignored folder of /work/main, carried) holds payload.tar.xz: wgt-before, wgt,
# bench_matmul, libwgt_napi_stub.so (stripped); the Dawn comes from .devbin-dawn/dawn.tar.xz.
#   carry [".gl", ".devbin-dawn", DIR]   command: bash tools/h200_sgemm4_ab.sh DIR   timeout_s: 80
# BUDGET (default 68 s). Output: the summary last on stdout, every log in $OUT/sgemm4_ab.tar.gz.
set -u
dir=${1:?usage: tools/h200_sgemm4_ab.sh DIR}
BUDGET=${BUDGET:-68}; STEP_TAIL=1
mkdir -p "$dir/bin"
tar xJf "$dir/payload.tar.xz" -C "$dir/bin"
L=/tmp/sgemm4_logs
rm -rf $L
. tools/h200_common.sh "$dir" $L
export WGT_NAPI_STUB=$PWD/$dir/bin/libwgt_napi_stub.so
b=$dir/bin
G=bench/configs/gpt2-small.json LL=bench/configs/llama-3.2-1b.json
bin() { [ $1 = before ] && echo $b/wgt-before || echo $b/wgt; }
for v in before after; do
    step "bf16-$v" WGT_AB=0 timeout 20 $(bin $v) bench --train -m $G --name "gpt2-bf16-$v" --batch 8 --seq 512 --dtype bf16 --steps 3 --warmup 1
    step "llama-$v" WGT_AB=0 timeout 12 $(bin $v) bench -m $LL --type f16 -p 512 -n 2
done
SUB="gpt2 qkv dw,gpt2 attn out,bible"
TAILN=1 step mm-default WGT_AB=0 timeout 8 $b/bench_matmul --reps 3 --only "$SUB"
for t in 128x128x8:8x8 128x64x8:8x4 64x64x8:8x4; do
    TAILN=1 step "mm-$t" WGT_MATMUL_TILE=$t timeout 8 $b/bench_matmul --reps 3 --only "$SUB"
done
{
echo "## end to end (before = main before the default, after = with it)"
for f in $L/bf16-*.txt $L/llama-*.txt; do
    [ -f "$f" ] && printf '%-14s %s\n' "$(basename "$f" .txt)" "$(grep -E '^wgt |^prefill|error' "$f" | head -n 1)"
done
echo "## bench_matmul (after): default, then forced tiles (named sums)"
for f in $L/mm-*.txt; do echo "=== $(basename "$f" .txt)"; grep -E '^(gpt2|bible)|one after another|exit' "$f"; done
} | tee "$out/sgemm4_summary.txt"
tar czf "$out/sgemm4_ab.tar.gz" -C /tmp sgemm4_logs
echo "### done at $(( $(date +%s) - t0 )) s"
