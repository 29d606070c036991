#!/usr/bin/env bash
# The op x dtype table in README.md must be what the harness probes now (`wgt ops --markdown` on
# lavapipe): regenerate it with tools/readme_ops.sh after adding or changing ops.
set -u
wgt=${WGT_BIN:?} root=${WGT_ROOT:?}
want=$(WGT_BACKEND=vulkan "$wgt" ops --markdown) || { echo "FAIL: wgt ops --markdown"; exit 1; }
have=$(sed -n '/<!-- ops-table: begin/,/<!-- ops-table: end/p' "$root/README.md" | sed '1d;$d')
if [ "$want" != "$have" ]; then
    echo "FAIL: README.md's op table is not the harness's (run tools/readme_ops.sh):"
    diff <(echo "$have") <(echo "$want") | head -20
    exit 1
fi
echo "README op table: current ($(grep -c '^| ' <<<"$want") rows)"
