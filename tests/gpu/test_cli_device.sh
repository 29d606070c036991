#!/usr/bin/env bash
# The CLI's device commands on both CPU adapters: `wgt info` passes its self-check, `wgt bench --device`
# prints its figures, bad environment values fail with a message naming the variable.
set -u
wgt=${WGT_BIN:?}
fail=0
expect() { # description, command...
    local what=$1; shift
    if ! "$@"; then echo "FAIL: $what"; fail=1; fi
}
for backend in vulkan opengles; do
    out=$(WGT_BACKEND=$backend "$wgt" info --selfcheck-floats 3000001 2>&1); rc=$?
    expect "info on $backend exits 0 ($out)" test $rc = 0
    expect "info on $backend passes" grep -q '^self-check: PASS on 3000001 floats' <<<"$out"
    expect "info on $backend names llvmpipe" grep -q '^adapter: *llvmpipe' <<<"$out"
    expect "info on $backend names the backend" grep -q "^backend: *$backend" <<<"$out"
    out=$(WGT_BACKEND=$backend "$wgt" bench --device --max-bytes 4194304 2>&1); rc=$?
    expect "bench on $backend exits 0 ($out)" test $rc = 0
    expect "bench on $backend prints dispatch cost" grep -q 'dispatch, one pass: .* us host to record' <<<"$out"
    expect "bench on $backend prints bandwidth" grep -q 'MiB .* GB/s' <<<"$out"
done
out=$(WGT_BACKEND=cuda "$wgt" info 2>&1); rc=$?
expect "bad WGT_BACKEND exits 1" test $rc = 1
expect "bad WGT_BACKEND is named ($out)" grep -q "WGT_BACKEND='cuda' is not valid" <<<"$out"
out=$(WGT_MAX_BATCH=-3 "$wgt" info 2>&1); rc=$?
expect "bad WGT_MAX_BATCH exits 1 ($out)" test $rc = 1
out=$("$wgt" info --adapters 2>&1); rc=$?
expect "info --adapters lists llvmpipe ($out)" grep -q '^0: llvmpipe' <<<"$out"
out=$("$wgt" --help); expect "help lists info" grep -q '^  info' <<<"$out"
out=$("$wgt" nonsense 2>&1); rc=$?
expect "unknown command exits 2" test $rc = 2
exit $fail
