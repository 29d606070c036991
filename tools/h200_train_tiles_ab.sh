#!/usr/bin/env bash
# GPT-2 small training A/B on the H200 in one short device call (issue 13): `wgt bench --train`
# (AdamW, random ids, batch 8 x 512, f32) of main's binary (before) and the h-train binary (after)
# with each of its opt-in paths alone and all together, in two rounds (the second in reverse order):
#   pad   WGT_MATMUL_TILE_PAD=1    register tiles' k rows padded in workgroup memory (bank conflicts)
#   tn    WGT_MATMUL_TILE_TN=1     64 x 64 tiles for weight gradients (A read along m)
#   fwd   WGT_SDPA_FWD=products    attention forward as q k^T, a softmax row kernel, P v
#   grad  WGT_SDPA_GRAD=fused      attention backward's row passes in two kernels
#   norm  WGT_NORM_GRAD=fused      layer norm's backward in one row kernel
#   act   WGT_ACT_GRAD=fused       gelu_tanh's backward in one kernel
#   all   the six together
# then, as the budget allows, the default model's shape (32 x 256) before / all, and one profiled
# GPT-2 step with all of them. Measured 2026-12-03 (bench/results/h200/train_tiles_ab.txt): fwd,
# grad, norm and act are now the defaults (fwd's default value is `training`), pad and tn are off;
# a rerun against a later binary measures those defaults' alternatives only where the variants set
# them (e.g. WGT_SDPA_GRAD=composed).
# DIR (a git-ignored folder of /work/main, carried) holds payload.tar.xz: wgt-before, wgt (after),
# libwgt_napi_stub.so, all stripped; the Dawn comes from .devbin-dawn/dawn.tar.xz (tools/h200_common.sh).
#   carry [".gl", ".devbin-dawn", DIR]   command: bash tools/h200_train_tiles_ab.sh DIR   timeout_s: 110
# BUDGET (default 95 s): steps past it are skipped, saying so. Output: the summary last on stdout,
# every log in $OUT/train_tiles_ab.tar.gz.
set -u
dir=${1:?usage: tools/h200_train_tiles_ab.sh DIR}
BUDGET=${BUDGET:-95}; STEP_TAIL=1
mkdir -p "$dir/bin"
tar xJf "$dir/payload.tar.xz" -C "$dir/bin"
. tools/h200_common.sh "$dir" /tmp/train_tiles_logs
export WGT_NAPI_STUB=$PWD/$dir/bin/libwgt_napi_stub.so
G=${GPT2_CONFIG:-bench/configs/gpt2-small.json} BL=${BIBLE_CONFIG:-models/bible-llama/config.json}
env_of() {
    case $1 in
    before | after) echo "WGT_AB=$1" ;;
    pad) echo WGT_MATMUL_TILE_PAD=1 ;;
    tn) echo WGT_MATMUL_TILE_TN=1 ;;
    fwd) echo WGT_SDPA_FWD=products ;;
    grad) echo WGT_SDPA_GRAD=fused ;;
    norm) echo WGT_NORM_GRAD=fused ;;
    act) echo WGT_ACT_GRAD=fused ;;
    all) echo WGT_MATMUL_TILE_PAD=1 WGT_MATMUL_TILE_TN=1 WGT_SDPA_FWD=products WGT_SDPA_GRAD=fused \
        WGT_NORM_GRAD=fused WGT_ACT_GRAD=fused ;;
    esac
}
bin_of() { [ "$1" = before ] && echo "$dir/bin/wgt-before" || echo "$dir/bin/wgt"; }
gpt2() { # variant round
    step "gpt2-$1-$2" $(env_of "$1") timeout 20 "$(bin_of "$1")" bench --train -m $G --name "gpt2-$1" --batch 8 \
        --seq 512 --dtype f32 --steps 3 --warmup 1
}
for v in before all pad tn fwd grad norm act; do gpt2 $v 1; done
for v in act norm grad fwd tn pad all before; do gpt2 $v 2; done
for v in before all; do
    step "bible-$v" $(env_of $v) timeout 12 "$(bin_of $v)" bench --train -m $BL --name "bible-$v" --batch 32 --seq 256 \
        --dtype f32 --steps 10 --warmup 3
done
TAILN=30 step prof-gpt2-all $(env_of all) WGT_PROFILE=1 timeout 20 "$dir/bin/wgt" bench --train -m $G --name gpt2-prof \
    --batch 8 --seq 512 --dtype f32 --steps 1 --warmup 1
{
echo "## training tok/s (before = main, the others the h-train binary with the variant's variables)"
for f in /tmp/train_tiles_logs/gpt2-*.txt /tmp/train_tiles_logs/bible-*.txt; do
    [ -f "$f" ] && printf '%-18s %s\n' "$(basename "$f" .txt)" "$(grep -E '^wgt |error' "$f" | head -n 1)"
done
echo "## profile, all (top kernels)"
grep -A12 "kernel  " /tmp/train_tiles_logs/prof-gpt2-all.txt 2>/dev/null | head -n 13
} | tee "$out/train_tiles_summary.txt"
tar czf "$out/train_tiles_ab.tar.gz" -C /tmp train_tiles_logs
echo "### done at $(( $(date +%s) - t0 )) s"
