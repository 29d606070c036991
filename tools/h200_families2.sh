#!/usr/bin/env bash
# Issue 16's device call of 2026-12-03 (kind nvidia-h200, about 100 s, from the repository root):
# 1. Four fixtures whose configuration llama.cpp's GGUF says in full (tools/make_fixtures.py:
#    gemma2_hd, gemma3_text_6l, starcoder2_4k, phi_4x), made by transformers on the CPU, each architecture's
#    seeds searched by several processes (--seed-jobs: the seed chosen is the one a sequential search
#    picks), each converted to f16 GGUF by llama.cpp's own converter (tools/llama_cpp_convert.py) as
#    soon as it is made; phi3's fixture converted again (Phi-3's pad text in its tokenizer).
# 2. At the same time on the GPU, f16 MoE decode rows (tools/h200_moe_bench.sh, TYPES=f16, both
#    shapes, WGT_MOE_KERNELS=0 and 1: float experts gathered vs read in place by the kernels).
# Before (here): DIR (default .devbin-families2, git-ignored) holds copies of this script,
# make_fixtures.py, llama_cpp_convert.py, h200_moe_bench.sh, llama_cpp_converter.tar.gz
# (`bash tools/llama_cpp_convert.sh pack DIR`), configs/{mixtral-8x7b-4l,qwen3-30b-a3b-8l}.json,
# build/wgt (stripped) and build/libwgt_napi_stub.so. Dawn: as h200_moe_bench.sh finds it.
#   carry [".gl", "DIR", ".devbin-dawn"]   command: bash DIR/h200_families2.sh DIR   timeout_s: 110
# Output: $OUT/families2.tar: tests/fixtures/hf/<arch>/ (the new fixtures),
# tests/fixtures/llama_cpp/<arch>-f16.gguf and manifest-families2-<arch>.json (the converter's
# manifest of each, to merge into manifest.json), logs/ (fixture and converter logs, moe_bench.txt and
# the bench's logs). Here: tar xf FILES/families2.tar -C SOMEWHERE, then copy what passed.
# Environment: ARCHS ("gemma3_text_6l:7 gemma2_hd:4 starcoder2_4k:2 phi_4x:1", arch:seed processes),
# RECONVERT ("phi3": fixtures of the repository converted again),
# MOE (1; 0 skips the bench), FIXTURE_S (68), CONVERT_S (22), BUDGET_S (100: the bench is cut there).
set -u
dir=${1:-.devbin-families2}
out=${OUT:-/tmp/h200_families2}
work=/tmp/h200_families2_work
t0=$(date +%s)
rm -rf "$work"
mkdir -p "$out" "$work/tests/fixtures/hf" "$work/tests/fixtures/llama_cpp" "$work/logs" "$work/gguf"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
budget=${BUDGET_S:-100}

moe=
if [ "${MOE:-1}" != 0 ]; then
    OUT=$work/logs/moe TYPES=f16 P=128 N=64 RUN_TIMEOUT=30 ENVS="WGT_MOE_KERNELS=0 WGT_MOE_KERNELS=1" \
        timeout -k 2 $((budget - 4)) bash "$dir/h200_moe_bench.sh" "$dir" >"$work/logs/moe_stdout.txt" 2>&1 &
    moe=$!
fi

tar xzf "$dir/llama_cpp_converter.tar.gz" -C "$work" || echo "no converter"
# each architecture: its fixture, then at once its llama.cpp conversion
archs= pids=
for spec in ${ARCHS:-gemma3_text_6l:7 gemma2_hd:4 starcoder2_4k:2 phi_4x:1}; do
    a=${spec%%:*} j=${spec##*:}
    archs="$archs $a"
    (
        timeout -k 2 "${FIXTURE_S:-68}" python3 "$dir/make_fixtures.py" --only "$a" --out "$work/tests/fixtures/hf" \
            --threads 1 --seed-jobs "$j" >"$work/logs/fixtures_$a.txt" 2>&1
        echo "fixture exit $? after $(( $(date +%s) - t0 )) s" >>"$work/logs/fixtures_$a.txt"
        [ -f "$work/tests/fixtures/hf/$a/fixture.json" ] || exit 1
        mkdir -p "$work/gguf/$a"
        timeout -k 2 "${CONVERT_S:-22}" python3 "$dir/llama_cpp_convert.py" --llama-cpp "$work/llama.cpp" \
            --fixtures "$work/tests/fixtures/hf" --out "$work/gguf/$a" --types f16 --q8 "" --only "$a" --jobs 1 \
            >"$work/logs/convert_$a.txt" 2>&1
        echo "convert exit $? after $(( $(date +%s) - t0 )) s" >>"$work/logs/convert_$a.txt"
    ) &
    pids="$pids $!"
done
# fixtures already in the repository, converted again (phi3: its generated tokenizer now has Phi-3's
# pad text, which llama.cpp's vocabulary loader needs)
for a in ${RECONVERT:-phi3}; do
    archs="$archs $a"
    mkdir -p "$work/gguf/$a"
    timeout -k 2 "${CONVERT_S:-22}" python3 "$dir/llama_cpp_convert.py" --llama-cpp "$work/llama.cpp" \
        --fixtures tests/fixtures/hf --out "$work/gguf/$a" --types f16 --q8 "" --only "$a" --jobs 1 \
        >"$work/logs/convert_$a.txt" 2>&1 &
    pids="$pids $!"
done
wait $pids
echo "fixtures and conversions done after $(( $(date +%s) - t0 )) s"
for a in $archs; do
    [ -f "$work/logs/fixtures_$a.txt" ] || continue
    [ -f "$work/tests/fixtures/hf/$a/fixture.json" ] || rm -rf "$work/tests/fixtures/hf/$a"
    grep -E "^\[fixtures\] $a: seed [0-9]+, prompts|FAILED|^fixture exit" "$work/logs/fixtures_$a.txt" | sed "s/^/$a: /" | cut -c1-300
done
for a in $archs; do
    grep -E "^\[llama_cpp_convert\] .*(converted|FAILED)" "$work/logs/convert_$a.txt" 2>/dev/null | sed "s/^/$a: /" | cut -c1-300
    mv "$work/gguf/$a"/*.gguf "$work/tests/fixtures/llama_cpp/" 2>/dev/null
    [ -f "$work/gguf/$a/manifest.json" ] && mv "$work/gguf/$a/manifest.json" "$work/tests/fixtures/llama_cpp/manifest-families2-$a.json"
done

if [ -n "$moe" ]; then
    wait "$moe"
    echo "moe bench exit $? after $(( $(date +%s) - t0 )) s"
    cat "$work/logs/moe/moe_bench.txt" 2>/dev/null
fi
tar cf "$out/families2.tar" -C "$work" tests logs
ls -la "$out" "$work/tests/fixtures/llama_cpp"
echo "total $(( $(date +%s) - t0 )) s"
