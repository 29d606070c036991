#!/usr/bin/env bash
# wgt serve's figures on the H200 (issue 18) in one device-tool call: the Qwen2.5-0.5B shape with
# random weights (bench/configs/qwen2.5-0.5b.json) and a synthetic tokenizer of its vocabulary
# (tools/synthetic_tokenizer.py), served with --parallel 64, loaded by tools/serve_bench.py at 1, 8,
# 32 and 64 concurrent streams (prompts of 128 tokens, 128 new ones, greedy, ignore_eos; --chunk 8192
# admits 64 prompts in one step), f16 then q8_0. From the repository root, with wgt and libwgt_napi_stub.so in DIR and Dawn's tarball there:
#   carry [".gl", "DIR"]   command: bash tools/h200_serve_bench.sh DIR   timeout_s: 540
# Writes $OUT/serve_<type>.json (serve_bench.py's figures) and $OUT/serve.log; the chart is drawn
# here afterwards by tools/serve_bench_chart.py.
set -u
dir=${1:?usage: tools/h200_serve_bench.sh DIR}
out=${OUT:-/tmp/h200_serve}
mkdir -p "$out" build
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
[ -d "$dir/.deps" ] || tar xJf "$dir/dawn.tar.xz" -C "$dir"
cp "$dir/wgt" "$dir/libwgt_napi_stub.so" build/
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
export WGT_WEBGPU_LIB=${WGT_WEBGPU_LIB:-$PWD/$dir/.deps/dawn-2026/dawn.node}
python3 tools/synthetic_tokenizer.py bench/configs/qwen2.5-0.5b.json /tmp/qwen-serve
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for type in ${TYPES:-f16 q8_0}; do
    echo "=== $type"
    ./build/wgt serve -m /tmp/qwen-serve/config.json --type "$type" --parallel 64 -c 1024 --chunk 8192 --port 8080 \
        --max-queue 256 2>"$out/serve_$type.err" &
    pid=$!
    for _ in $(seq 240); do curl -sf http://127.0.0.1:8080/health >/dev/null && break; sleep 0.5; done
    timeout 200 python3 tools/serve_bench.py --port 8080 --concurrency 1,8,32,64 --requests ${REQUESTS:-1} \
        --prompt-tokens 128 --max-tokens 128 --byte-tokens --json "$out/serve_$type.json"
    kill "$pid"; wait "$pid"
    grep -v "artificially reduced" "$out/serve_$type.err" | tail -3
    rm -f "$out/serve_$type.err"
done
} 2>&1 | tee "$out/serve.log"
