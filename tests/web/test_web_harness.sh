#!/usr/bin/env bash
# The op harness page of the browser build (web/harness.js: its default subset, f32, on SwiftShader)
# in headless Chromium: every case passes, compared inside the module with wgt's C reference.
. "$(dirname "$0")/web_common.sh"
r=$(page --page harness.html --timeout 840)
summary=$(field summary <<<"$r")
echo "     harness page: $summary"
case "$summary" in
  *" passed, 0 failed"*) [ "${summary%% *}" -gt 0 ] && echo "ok   harness page" || { echo "FAIL harness page ran nothing"; failures=$((failures + 1)); } ;;
  *) echo "FAIL harness page: $summary"; field log <<<"$r" | grep -v '^ok' | head -40; failures=$((failures + 1)) ;;
esac

[ $failures = 0 ] || fail "$failures check(s) failed"
echo "the harness page passed"
