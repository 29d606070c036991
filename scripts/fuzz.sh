#!/usr/bin/env bash
# Builds the libFuzzer targets in fuzz/ (clang, ASan + UBSan) and runs each for FUZZ_SECONDS
# (default 60), one after another, starting from the seed corpus in fuzz/corpus/<target>/.
# The targets that reach past the io layer (the runtime tokenizer, chat templates, model loading,
# the ONNX reader) link a clang build of the whole library instrumented the same way, made once
# in $BUILD/fuzz-lib (cmake, target wgt_testkit: libwgt.a and the test kit).
# New inputs go to $BUILD/fuzz/work/<target>/ (not committed); a crash stops the run with its
# input under $BUILD/fuzz/crashes/ and a non-zero exit: turn it into a regression test.
# Usage: scripts/fuzz.sh [target...]   (targets: gguf safetensors config tokenizer tokenizer_runtime
#        chat_template model_config onnx; default all)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SECONDS_EACH=${FUZZ_SECONDS:-60}
CC=${FUZZ_CC:-clang-14}
command -v "$CC" >/dev/null || CC=clang
out=$BUILD/fuzz
mkdir -p "$out/crashes"
targets=${*:-gguf safetensors config tokenizer tokenizer_runtime chat_template model_config onnx}
flags="-g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
  -Iinclude -Isrc -DWGT_VERSION_STRING=\"fuzz\""
lib_sources="src/core/error.c $(ls src/io/*.c src/quant/*.c)"
libdir=$out/fuzz-lib
whole_lib() { # the instrumented library, built once (incremental afterwards)
  if [ ! -f "$libdir/.configured" ]; then
    CC=$CC cmake -S . -B "$libdir" -DCMAKE_BUILD_TYPE=Debug \
      -DCMAKE_C_FLAGS="-g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" >/dev/null
    touch "$libdir/.configured"
  fi
  echo "fuzz: building the instrumented library in $libdir" >&2
  cmake --build "$libdir" -j "${JOBS:-2}" --target wgt_testkit >"$out/fuzz-lib.log" 2>&1 ||
    { tail -20 "$out/fuzz-lib.log" >&2; exit 1; }
}
status=0
for t in $targets; do
  echo "fuzz: building fuzz_$t" >&2
  case $t in
  tokenizer_runtime | chat_template | model_config | onnx)
    whole_lib
    # shellcheck disable=SC2086
    $CC $flags -Itestkit -o "$out/fuzz_$t" "fuzz/fuzz_$t.c" "$libdir/libwgt_testkit.a" "$libdir/libwgt.a" \
      $(pkg-config --cflags --libs libcjson libutf8proc libpcre2-8) -ldl -lpthread -lm ;;
  *)
  # shellcheck disable=SC2086
  $CC $flags -o "$out/fuzz_$t" "fuzz/fuzz_$t.c" $lib_sources $(pkg-config --cflags --libs libcjson) -lm ;;
  esac
  mkdir -p "$out/work/$t"
  echo "fuzz: running fuzz_$t for ${SECONDS_EACH}s" >&2
  log=$out/fuzz_$t.log
  if "$out/fuzz_$t" "$out/work/$t" "fuzz/corpus/$t" -max_total_time="$SECONDS_EACH" \
       -rss_limit_mb=2048 -max_len=65536 -timeout=10 -print_final_stats=1 \
       -artifact_prefix="$out/crashes/$t-" >"$log" 2>&1; then
    runs=$(grep -o 'Done [0-9]* runs' "$log" | tail -1 | grep -o '[0-9]*')
    echo "fuzz: $t: ${runs:-?} runs in ${SECONDS_EACH}s, no crash" >&2
  else
    status=1
    echo "fuzz: $t: FAILED (log $log, inputs in $out/crashes/):" >&2
    tail -n 30 "$log" >&2
  fi
done
exit $status
