#!/usr/bin/env bash
# The op x dtype table in README.md and docs/ops.md must be what the harness probes now (`wgt ops
# --markdown` on lavapipe), and docs/ops.md's description table what the op table says (`wgt ops
# --describe`): regenerate both with tools/readme_ops.sh after adding or changing ops.
set -u
wgt=${WGT_BIN:?} root=${WGT_ROOT:?}
want=$(WGT_BACKEND=vulkan "$wgt" ops --markdown) || { echo "FAIL: wgt ops --markdown"; exit 1; }
have=$(sed -n '/<!-- ops-table: begin/,/<!-- ops-table: end/p' "$root/README.md" | sed '1d;$d')
if [ "$want" != "$have" ]; then
    echo "FAIL: README.md's op table is not the harness's (run tools/readme_ops.sh):"
    diff <(echo "$have") <(echo "$want") | head -20
    exit 1
fi
described=$("$wgt" ops --describe) || { echo "FAIL: wgt ops --describe"; exit 1; }
doc=$(cat "$root/docs/ops.md")
for part in "$want" "$described"; do
    if [[ "$doc" != *"$part"* ]]; then
        echo "FAIL: docs/ops.md is not what \`wgt ops --markdown\` and \`--describe\` print (run tools/readme_ops.sh)"
        diff <(printf '%s\n' "$doc") <(printf '%s\n' "$part") | head -20
        exit 1
    fi
done
rows=$(grep -c '^| ' <<<"$described")
probed=$(grep -c '^| ' <<<"$want")
if [ "$rows" != "$probed" ]; then
    echo "FAIL: \`wgt ops --describe\` has $rows rows, \`--markdown\` $probed"
    exit 1
fi
echo "README and docs/ops.md op tables: current ($probed rows)"
