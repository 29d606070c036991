#!/usr/bin/env bash
# GGUF files from llama.cpp's own converter for the Hugging Face fixtures (tests/fixtures/hf), the
# files tests/models/test_llama_cpp_gguf.c reads (tests/fixtures/llama_cpp/).
#
# 1. Here (npm registry): pack llama.cpp's converter from node-llama-cpp@3.22.1's source bundle:
#      bash tools/llama_cpp_convert.sh pack DIR
#    DIR/llama_cpp_converter.tar.gz: convert_hf_to_gguf.py, conversion/, gguf-py/, LICENSE of the
#    bundle's llama.cpp (the npm tarball's sha512 is checked against the pinned integrity below).
#    The call runs the llama_cpp_convert.py beside this script (copy both into DIR before they are
#    on the branch the device gets).
#    With fixtures not yet in the repository, copy them to DIR/hf/<arch>/ (they are converted instead).
# 2. On the H200 image (python3 with torch, transformers, numpy, sentencepiece, tokenizers; device
#    tool `run`, about 1-2 minutes; DIR a git-ignored folder of the repository root):
#      carry: ["DIR"]   command: bash tools/llama_cpp_convert.sh DIR   timeout_s: 400
#    $OUT/llama_cpp_gguf.tar.gz (llama_cpp/<arch>-<type>.gguf + manifest.json) and $OUT/convert_log.txt.
# 3. Here: tar xzf FILES/llama_cpp_gguf.tar.gz -C tests/fixtures   (then keep the files the test reads)
# Environment: TYPES (f32,f16), Q8 (llama: fixtures also converted to q8_0), ONLY (a subset), JOBS (8).
set -u
PKG=node-llama-cpp@3.22.1
INTEGRITY=sha512-bltIipuWmc123H7tMIgDGKSsSrhmhlQYeVUC48XTjVW7XGJJiJJyCdlTMzQ/LiWoPkGDpcL4FviDpgw7qfTiDw==
here=$(cd "$(dirname "$0")" && pwd) # tools/, or a copy of the scripts one level below the root
cd "$here/.."

if [ "${1:-}" = pack ]; then
    dest=${2:?usage: tools/llama_cpp_convert.sh pack DIR}
    mkdir -p "$dest"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    (cd "$tmp" && npm pack "$PKG" --silent >/dev/null) || exit 1
    tgz=$(ls "$tmp"/node-llama-cpp-*.tgz)
    got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
    if [ "$got" != "$INTEGRITY" ]; then
        echo "$PKG: integrity $got, expected $INTEGRITY" >&2
        exit 1
    fi
    tar xzf "$tgz" -C "$tmp" package/llama/gitRelease.bundle package/llama/llama.cpp.info.json
    git clone -q "$tmp/package/llama/gitRelease.bundle" "$tmp/llama.cpp" || exit 1
    rev=$(git -C "$tmp/llama.cpp" rev-parse HEAD)
    printf '%s\nllama.cpp commit %s (the bundle of %s; %s)\n' "$PKG" "$rev" "$PKG" \
        "$(tr -d '\n ' <"$tmp/package/llama/llama.cpp.info.json")" >"$tmp/llama.cpp/SOURCE.txt"
    tar czf "$dest/llama_cpp_converter.tar.gz" -C "$tmp" --exclude='__pycache__' \
        llama.cpp/convert_hf_to_gguf.py llama.cpp/conversion llama.cpp/gguf-py llama.cpp/LICENSE llama.cpp/SOURCE.txt
    ls -la "$dest/llama_cpp_converter.tar.gz"
    cat "$tmp/llama.cpp/SOURCE.txt"
    exit 0
fi

dir=${1:?usage: tools/llama_cpp_convert.sh pack DIR | tools/llama_cpp_convert.sh DIR}
out=${OUT:-/tmp/llama_cpp_out}
mkdir -p "$out"
work=/tmp/llama_cpp_convert
rm -rf "$work"
mkdir -p "$work/gguf/llama_cpp"
tar xzf "$dir/llama_cpp_converter.tar.gz" -C "$work" || exit 1
fixtures=tests/fixtures/hf
if [ -d "$dir/hf" ]; then # fixtures not yet in the repository: merged over the repository's
    mkdir -p "$work/hf"
    cp -r tests/fixtures/hf/. "$work/hf/"
    cp -r "$dir/hf/." "$work/hf/"
    fixtures=$work/hf
fi
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
{
    date -u
    cat "$work/llama.cpp/SOURCE.txt"
    python3 --version
    python3 "$here/llama_cpp_convert.py" --llama-cpp "$work/llama.cpp" --fixtures "$fixtures" \
        --out "$work/gguf/llama_cpp" --types "${TYPES:-f32,f16}" --q8 "${Q8:-llama}" --only "${ONLY:-}" \
        --jobs "${JOBS:-8}"
    echo "convert exit $?"
    date -u
} 2>&1 | tee "$out/convert_log.txt"
tar czf "$out/llama_cpp_gguf.tar.gz" -C "$work/gguf" llama_cpp
ls -la "$out" "$work/gguf/llama_cpp" | tail -n 80
