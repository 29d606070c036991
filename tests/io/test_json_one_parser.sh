#!/usr/bin/env bash
# Every JSON text the library and the CLI read goes through wgt_json_parse (src/io/json_util.c):
# it bounds the values a text may hold, refuses trailing bytes, and tells running out of memory
# (WGT_ERR_OUT_OF_MEMORY) from invalid JSON (tests/io/test_json_oom.c), which a bare cJSON_Parse
# answers alike with NULL. This fails on a call of cJSON_Parse* anywhere else in src, tools,
# testkit, web, bench or fuzz (tests read their own fixtures and may call cJSON directly).
set -u
root=${WGT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 1
found=$(grep -rnE --include='*.c' --include='*.h' '\bcJSON_Parse[A-Za-z]*[[:space:]]*\(' src tools testkit web bench fuzz 2>/dev/null |
        grep -v '^src/io/json_util\.c:' || true)
if [ -n "$found" ]; then
    echo "$found" | sed 's/$/   <- parse through wgt_json_parse (src\/io\/json_util.h)/'
    echo "FAIL: $(wc -l <<<"$found") direct cJSON_Parse call(s)"
    exit 1
fi
grep -q 'cJSON_ParseWithLengthOpts' src/io/json_util.c || { echo "FAIL: src/io/json_util.c no longer parses (moved?)"; exit 1; }
echo "json: every parse in src, tools, testkit, web, bench and fuzz goes through wgt_json_parse"
