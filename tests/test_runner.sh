#!/usr/bin/env bash
# tests/run.sh's verdicts, on fake tests: pass, a skip with its reason, a skip without one (a
# failure), a failure, a pass that left out a part, a long test left to make test-long (run by
# WGT_TEST_LONG=1 or a filter naming it); then WGT_TEST_NO_SKIP=1 makes the skip fail.
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/build/tests" "$tmp/scripts"
fake() { # name, body
    printf '#!/bin/sh\n%s\n' "$2" >"$tmp/build/tests/$1"
    chmod +x "$tmp/build/tests/$1"
}
fake test_a_pass 'echo fine'
fake test_b_skip 'echo "SKIP: no such hardware here"; exit 77'
fake test_c_mute_skip 'exit 77'
fake test_d_fail 'echo broken; exit 1'
fake test_e_part 'echo "SKIP: the large case (binding limit 4 GiB)"; exit 0'
fake test_f_long 'echo long'
printf '# name  why\ntest_f_long  a sweep\n' >"$tmp/long.txt"
export WGT_TEST_LONG_LIST="$tmp/long.txt"
out=$(WGT_TEST_SCRIPTS="$tmp/scripts" bash "$WGT_ROOT/tests/run.sh" "$tmp/build" || true)
echo "$out"
expect() { grep -q -- "$1" <<<"$out" || { echo "runner output lacks: $1"; exit 1; }; }
expect '^PASS test_a_pass'
expect '^SKIP test_b_skip .*(no such hardware here)'
expect '^FAIL test_c_mute_skip .*(exit 77)'
expect '^FAIL test_d_fail .*(exit 1)'
expect '^PASS test_e_part'
expect '| part SKIP: the large case'
expect '^2 passed, 2 failed, 1 skipped$'
expect '^left to make test-long (tests/long.txt): test_f_long$'
out=$(WGT_TEST_LONG=1 WGT_TEST_SCRIPTS="$tmp/scripts" bash "$WGT_ROOT/tests/run.sh" "$tmp/build" || true)
expect '^PASS test_f_long'
expect '^3 passed, 2 failed, 1 skipped$'
out=$(WGT_TEST_SCRIPTS="$tmp/scripts" bash "$WGT_ROOT/tests/run.sh" "$tmp/build" f_long || true)
expect '^1 passed, 0 failed, 0 skipped$'
if WGT_TEST_SCRIPTS="$tmp/scripts" bash "$WGT_ROOT/tests/run.sh" "$tmp/build" a_pass >/dev/null; then :; else
    echo "a run of passing tests exited non-zero"; exit 1
fi
out=$(WGT_TEST_NO_SKIP=1 WGT_TEST_SCRIPTS="$tmp/scripts" bash "$WGT_ROOT/tests/run.sh" "$tmp/build" b_skip || true)
expect '^FAIL test_b_skip'
expect '^0 passed, 1 failed, 0 skipped$'
echo "runner verdicts OK"
