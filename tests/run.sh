#!/usr/bin/env bash
# Runs every test, each in its own process with a time limit, and ends with `N passed, N failed`.
#   tests named test_gpu_* (C programs) run once per adapter in WGT_TEST_ADAPTERS
#     (default "vulkan opengles": lavapipe through Vulkan, llvmpipe through OpenGL ES compat);
#   other C tests (build/tests/test_*) and shell tests (tests/**/test_*.sh) run once.
# Usage: tests/run.sh BUILD_DIR [NAME_FILTER]
set -u
build=${1:-build}
filter=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$build" && pwd)
adapters=${WGT_TEST_ADAPTERS:-vulkan opengles}
limit=${WGT_TEST_TIMEOUT:-900}
logs="$build/test-logs"
mkdir -p "$logs"
export WGT_BIN="$build/wgt" WGT_ROOT="$root" WGT_BUILD="$build"
export EGL_PLATFORM=${EGL_PLATFORM:-surfaceless}
passed=0 failed=0 failures=""

run_one() { # label, log, command...
    local label=$1 log=$2; shift 2
    local t0=$SECONDS rc
    timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
    rc=$?
    if [ $rc = 0 ]; then
        passed=$((passed + 1)); printf 'PASS %-50s %4ds\n' "$label" $((SECONDS - t0))
    else
        failed=$((failed + 1)); failures="$failures $label"
        [ $rc = 124 ] && echo "(timed out after ${limit}s)" >>"$log"
        printf 'FAIL %-50s %4ds (exit %d)\n' "$label" $((SECONDS - t0)) $rc
        tail -n 25 "$log" | sed 's/^/    | /'
    fi
}

for bin in "$build"/tests/test_*; do
    [ -x "$bin" ] || continue
    name=$(basename "$bin")
    [ -n "$filter" ] && [[ $name != *$filter* ]] && continue
    case "$name" in
    test_gpu_*)
        for a in $adapters; do
            run_one "$name [$a]" "$logs/$name.$a.log" env WGT_BACKEND="$a" "$bin"
        done ;;
    *) run_one "$name" "$logs/$name.log" "$bin" ;;
    esac
done
while IFS= read -r script; do
    name=$(basename "$script" .sh)
    [ -n "$filter" ] && [[ $name != *$filter* ]] && continue
    run_one "$name" "$logs/$name.log" bash "$script"
done < <(find "$root/tests" -name 'test_*.sh' | sort)

[ -n "$failures" ] && echo "failed:$failures"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
