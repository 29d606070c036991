#!/usr/bin/env bash
# The register-tiled f32 matmul (src/kernels/matmul_regs.wgsl, opt-in: WGT_MATMUL_TILE=auto; issues
# 14 and 13) A/B on the H200 in one device call under 150 s: bench_matmul (bench/matmul.c: GFLOP/s
# and % of the f32 peak per shape) of main's binary ("before") and this branch's with
# WGT_MATMUL_TILE=auto ("after") in alternating rounds, the tiles WGT_MATMUL_TILE can force on a
# subset of shapes, then `wgt bench --train` (tools/h200_train_ab.sh's shapes: GPT-2 small 8 x 512
# and the default model 32 x 256, f32) before / after, one profiled GPT-2 small step (after), and
# Qwen2.5-0.5B f16 prefill before / after, default and WGT_MATMUL_TC=1.
# Before (here): DIR, a git-ignored folder of /work/main (.devbin-sgemm), holds payload.tar.xz with
# wgt, wgt-before, bench_matmul, bench_matmul-before and libwgt_napi_stub.so (stripped). A Dawn of
# 2026: WGT_WEBGPU_LIB if set, else the first DIR/dawn.tar.xz or .devbin-*/dawn.tar.xz found.
# The call (device tool `run`, nvidia-h200): carry [".gl", "DIR"] (and the folder of the Dawn),
#   command: bash tools/h200_sgemm_ab.sh DIR    timeout_s: 150
# Output: the summary last on stdout; every log in $OUT/sgemm_ab.tar.gz (bench/results/h200/sgemm_ab.txt).
set -u
t0=$SECONDS
dir=${1:?usage: tools/h200_sgemm_ab.sh DIR}
out=${OUT:-/tmp/sgemm_out}; logs=/tmp/sgemm_logs; bin=/tmp/sgemm_bin
mkdir -p "$out" "$logs" "$bin"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
tar xJf "$dir/payload.tar.xz" -C "$bin"
export WGT_NAPI_STUB=$bin/libwgt_napi_stub.so
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
if [ -z "${WGT_WEBGPU_LIB:-}" ]; then
    for t in "$dir"/dawn.tar.xz .devbin-*/dawn.tar.xz; do
        [ -f "$t" ] || continue
        mkdir -p /tmp/sgemm_dawn && tar xJf "$t" -C /tmp/sgemm_dawn
        WGT_WEBGPU_LIB=$(find /tmp/sgemm_dawn -name dawn.node | head -n 1)
        break
    done
fi
[ -z "${WGT_WEBGPU_LIB:-}" ] && WGT_WEBGPU_LIB=$(find "$PWD" -path '*dawn-2026/dawn.node' 2>/dev/null | head -n 1)
export WGT_WEBGPU_LIB
echo "dawn: $WGT_WEBGPU_LIB"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader | tee $logs/gpu.txt
left() { echo $(( ${BUDGET:-145} - (SECONDS - t0) )); }
# step NAME MAX_SECONDS [VAR=value ..] program args: one run into $logs/NAME.txt unless the budget is spent
step() {
    local name=$1 max=$2 l; shift 2
    l=$(left)
    if [ "$l" -lt 8 ]; then echo "### SKIP $name ($l s left)"; return; fi
    [ "$max" -gt "$l" ] && max=$l
    echo "### $name (at $((SECONDS - t0)) s)"
    timeout "$max" env "$@" >"$logs/$name.txt" 2>&1 </dev/null
    echo "exit $?" >>"$logs/$name.txt"
    grep -v "artificially\|^Warning" "$logs/$name.txt" | tail -n "${TAILN:-4}"
}
B=$bin/bench_matmul-before A=$bin/bench_matmul
SUB="square 4096,gpt2 mlp up,gpt2 lm head,gpt2 attn out dw,bible gate,bible lm head,qwen0.5b gate f16"
step warm 15 WGT_MATMUL_TILE=auto $A --only "square 4096" --reps 5
TAILN=45 step mm-before-1 30 $B --reps 10
TAILN=45 step mm-after-1 30 WGT_MATMUL_TILE=auto $A --reps 10
for t in 128x128x8:8x8 128x128x16:8x8 128x64x8:8x4 128x64x16:8x4 64x64x16:4x4 64x64x8:8x4; do
    TAILN=16 step "tile-$t" 12 WGT_MATMUL_TILE=$t $A --reps 5 --only "$SUB"
done
TAILN=16 step mm-before-2 15 $B --reps 8 --only "$SUB"
TAILN=16 step mm-after-2 15 WGT_MATMUL_TILE=auto $A --reps 8 --only "$SUB"
G=bench/configs/gpt2-small.json BL=models/bible-llama/config.json
for b in before after; do
    w="WGT_MATMUL_TILE=auto $bin/wgt"; [ $b = before ] && w=$bin/wgt-before
    step "train-gpt2-$b" 25 $w bench --train -m $G --name gpt2-$b --batch 8 --seq 512 --dtype f32 --steps 2 --warmup 1
    step "train-bible-$b" 15 $w bench --train -m $BL --name bible-$b --batch 32 --seq 256 --dtype f32 --steps 10 --warmup 3
done
Q=bench/configs/qwen2.5-0.5b.json
TAILN=30 step prof-gpt2-after 20 WGT_PROFILE=1 WGT_MATMUL_TILE=auto $bin/wgt bench --train -m $G --name gpt2-prof --batch 8 --seq 512 --dtype f32 --steps 1 --warmup 1
# Qwen2.5-0.5B f16 prefill (random weights), the tiled kernel and the subgroup-matrix tiles
# (WGT_MATMUL_TC=1: lib_matmul's "tc load vec", one loader for A and B); round 1 compiles cold
Q=bench/configs/qwen2.5-0.5b.json
for r in 1 2; do
    for b in before after; do
        w="WGT_MATMUL_TILE=auto $bin/wgt"; [ $b = before ] && w=$bin/wgt-before
        step "prefill-f16-$b-$r" 12 $w bench -m $Q --type f16 -p 512 -n 4
        step "prefill-f16tc-$b-$r" 12 WGT_MATMUL_TC=1 $w bench -m $Q --type f16 -p 512 -n 4
    done
done
# control: the after binary's default (matmul.wgsl, as before); what Dawn's bounds clamps cost
TAILN=16 step mm-after-default 15 $A --reps 8 --only "$SUB"
TAILN=16 step mm-after-norobust 15 WGT_DAWN_TOGGLES=disable_robustness WGT_MATMUL_TILE=auto $A --reps 8 --only "$SUB"
{
    echo "## bench_matmul round 1 (before, after) and 2 (subset)"
    for n in mm-before-1 mm-after-1 mm-before-2 mm-after-2 mm-after-default mm-after-norobust $(cd $logs && ls tile-*.txt 2>/dev/null | sed "s/.txt$//"); do
        [ -f $logs/$n.txt ] || continue
        echo "=== $n"; grep -E "^(adapter|product|all|[a-z])" $logs/$n.txt | grep -v "^exit\|artificially"
    done
    echo "## training"
    grep -h "tok/s" $logs/train-*.txt
    echo "## prefill (Qwen2.5-0.5B f16, 512 tokens)"
    for f in $logs/prefill-*.txt; do printf '%-24s %s\n' "$(basename $f .txt)" "$(grep '^prefill' $f)"; done
} > $logs/summary.txt
tar czf "$out/sgemm_ab.tar.gz" -C $logs .
grep -E "^(=== |## |all |wgt |prefill)" $logs/summary.txt
echo "### done at $((SECONDS - t0)) s"
