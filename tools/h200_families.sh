#!/usr/bin/env bash
# Issue 16's device call of 2026-12-02 (about 70 s; kind nvidia-h200, from the repository root):
# 1. llama.cpp's converter for gpt_neox and gpt_neox_seq (CPU, in the background): run 2 stopped on
#    KeyError 'rotary_pct' (transformers 5's AutoConfig drops it; tools/llama_cpp_convert.py's
#    add_legacy_hparams now puts it back into the hparams llama.cpp loads).
# 2. The MoE prefill A/B that run 2 could not give (wgt bench's warm-up left the prompt cached, so
#    its timed prefill fed almost nothing): WGT_MOE_KERNELS=0 and 1 on one binary, Q4_0, both
#    shapes (bench/configs/mixtral-8x7b-4l.json, qwen3-30b-a3b-8l.json), prompts of 128 and 512
#    tokens, 32 decoded; the decision is WGT_MOE_KERNELS's default (on only if prefill wins too).
# Before (here): DIR (default .devbin-families, git-ignored) holds build/wgt (stripped, a bench that
# empties the cache after its warm-up run), build/libwgt_napi_stub.so, configs/, copies of
# tools/h200_moe_bench.sh, tools/llama_cpp_convert.{sh,py} and llama_cpp_converter.tar.gz
# (`bash tools/llama_cpp_convert.sh pack DIR`). Dawn: as h200_moe_bench.sh finds it (DAWN, or a
# .devbin-*/.deps/dawn-2026/dawn.node, or the first .devbin-*/dawn.tar.xz unpacked).
#   carry [".gl", "DIR", ".devbin-dawn"]   command: bash DIR/h200_families.sh DIR   timeout_s: 90
# Output under $OUT: convert/llama_cpp_gguf.tar.gz + convert_stdout.txt, moe_p128/ and moe_p512/
# (moe_bench.txt: variant model type decode_tok_s prefill_tok_s read_MB active_MB ...).
set -u
dir=${1:-.devbin-families}
out=${OUT:-/tmp/h200_families}
mkdir -p "$out/convert"
(
    OUT=$out/convert ONLY=gpt_neox,gpt_neox_seq TYPES=f16 JOBS=2 timeout 75 bash "$dir/llama_cpp_convert.sh" "$dir"
    echo "convert exit $?"
) >"$out/convert_stdout.txt" 2>&1 &
conv=$!
for p in 128 512; do
    OUT=$out/moe_p$p P=$p N=32 RUN_TIMEOUT=15 TYPES=q4_0 ENVS="WGT_MOE_KERNELS=0 WGT_MOE_KERNELS=1" \
        timeout 40 bash "$dir/h200_moe_bench.sh" "$dir"
    echo "moe -p $p exit $?"
done
wait "$conv"
tail -5 "$out/convert_stdout.txt"
for p in 128 512; do cat "$out/moe_p$p/moe_bench.txt"; done
