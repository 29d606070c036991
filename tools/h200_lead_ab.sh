#!/usr/bin/env bash
# One device call (H200) for the defaults of issues 13 and 14, one binary, in alternating rounds:
#   - register-tiled products (matmul_regs.wgsl, the default since this script's commit) against
#     WGT_MATMUL_TILE=0 (matmul.wgsl, the default before): `wgt bench --train` for GPT-2 small
#     (8 x 512, f32 and bf16) and the default model (32 x 256, f32), one profiled GPT-2 step, and
#     prefill (512 tokens) of Qwen2.5-0.5B / Llama-3.2-1B f16 and Qwen Q8_0;
#   - prefill attention through subgroup-matrix tiles (WGT_ATTENTION_TC=1) against the default,
#     now that `wgt bench -m`'s timed prefill feeds the whole prompt (the warm-up's keys were reused
#     before: this session's first attention A/B printed 180k tok/s for every row).
# DIR (a git-ignored folder of /work/main) holds wgt and libwgt_napi_stub.so (stripped); the set-up
# and the Dawn as tools/h200_common.sh finds them (DIR/dawn.tar.xz or .devbin-dawn/dawn.tar.xz). Carry [".gl", DIR, ".devbin-dawn"].
#   command: bash tools/h200_lead_ab.sh DIR     timeout_s: BUDGET + 20 (BUDGET default 200)
# Output: the summary on stdout; every log in $OUT/lead_ab.tar.gz.
set -u
dir=${1:?usage: tools/h200_lead_ab.sh DIR}
BUDGET=${BUDGET:-200}; STEP_TAIL=3
. tools/h200_common.sh "$dir" /tmp/lead_logs
export WGT_NAPI_STUB=$PWD/$dir/libwgt_napi_stub.so
W=$dir/wgt G=bench/configs/gpt2-small.json BL=models/bible-llama/config.json
Q=bench/configs/qwen2.5-0.5b.json L=bench/configs/llama-3.2-1b.json
for r in 1 2; do
    for v in regs old; do
        e=WGT_MATMUL_TILE=auto; [ $v = old ] && e=WGT_MATMUL_TILE=0
        [ $r = 2 ] && [ $v = old ] && break
        step "train-gpt2-$v-$r" $e timeout 25 $W bench --train -m $G --name gpt2-$v --batch 8 --seq 512 --dtype f32 --steps 3 --warmup 1
        step "train-bible-$v-$r" $e timeout 12 $W bench --train -m $BL --name bible-$v --batch 32 --seq 256 --dtype f32 --steps 10 --warmup 3
    done
done
step "train-gpt2bf16-regs" timeout 20 $W bench --train -m $G --name gpt2-bf16 --batch 8 --seq 512 --dtype bf16 --steps 3 --warmup 1
TAILN=24 step prof-gpt2-regs WGT_PROFILE=1 timeout 20 $W bench --train -m $G --name gpt2-prof --batch 8 --seq 512 --dtype f32 --steps 1 --warmup 1
for r in 1 2; do
    for v in regs old regs-attntc; do
        e=WGT_MATMUL_TILE=auto; [ $v = old ] && e=WGT_MATMUL_TILE=0; [ $v = regs-attntc ] && e=WGT_ATTENTION_TC=1
        step "prefill-qf16-$v-$r" $e timeout 10 $W bench -m $Q --type f16 -p 512 -n 4
        step "prefill-lf16-$v-$r" $e timeout 12 $W bench -m $L --type f16 -p 512 -n 4
        step "prefill-qq8-$v-$r" $e timeout 10 $W bench -m $Q --type q8_0 -p 512 -n 4
    done
done
TAILN=24 step prof-prefill-qf16-regs WGT_PROFILE=1 timeout 10 $W bench -m $Q --type f16 -p 512 -n 2
{
echo "## training (tok/s; regs = matmul_regs.wgsl, old = WGT_MATMUL_TILE=0)"
for f in /tmp/lead_logs/train-*.txt; do printf '%-26s %s\n' "$(basename "$f" .txt)" "$(grep '^wgt ' "$f" | head -n 1)"; done
echo "## prefill 512"
for f in /tmp/lead_logs/prefill-*.txt; do printf '%-26s %s\n' "$(basename "$f" .txt)" "$(grep '^prefill' "$f" | head -n 1)"; done
echo "## profiles (top kernels)"
for f in /tmp/lead_logs/prof-*.txt; do echo "$(basename "$f" .txt):"; grep -A8 "kernel  " "$f" | head -n 9; done
} | tee "$out/lead_ab_summary.txt"
tar czf "$out/lead_ab.tar.gz" -C /tmp lead_logs
echo "### done at $(( $(date +%s) - t0 )) s"
