#!/usr/bin/env bash
# Several device requests in one H200 call, one after another: each "NAME:COMMAND" runs with its own
# OUT=/tmp/batch/NAME (its files) and its stdout and stderr in /tmp/batch/NAME/stdout.txt; the tail
# of each goes to stdout, and everything comes back as one file, $OUT/batch.tar.gz (the device tool
# returns at most 8 files a call). A Dawn 2026 found in the tree (.devbin-dawn, unpacked by
# tools/h200_common.sh) is kept in /tmp/dawn-keep, and a later warm call (which keeps /tmp but not
# the tree's folders it does not carry) uses it through WGT_WEBGPU_LIB: so a follow-up call need not
# carry Dawn again. From the repository root:
#   bash tools/h200_batch.sh "perf:BUDGET=88 bash .devbin-perf/run.sh .devbin-perf" "tc:bash ..."
set -u
final=${OUT:-/tmp/out}; mkdir -p "$final"
keep=/tmp/dawn-keep/dawn-2026/dawn.node
if [ -z "${WGT_WEBGPU_LIB:-}" ] && [ -f $keep ]; then export WGT_WEBGPU_LIB=$keep; fi
rm -rf /tmp/batch; t0=$(date +%s)
for job in "$@"; do
    name=${job%%:*} cmd=${job#*:}
    mkdir -p /tmp/batch/$name
    echo "== $name (at $(( $(date +%s) - t0 )) s): $cmd"
    (export OUT=/tmp/batch/$name; eval "$cmd") >/tmp/batch/$name/stdout.txt 2>&1
    echo "exit $?" >>/tmp/batch/$name/stdout.txt
    tail -n ${BATCH_TAIL:-6} /tmp/batch/$name/stdout.txt
    if [ ! -f $keep ] && [ -f .devbin-dawn/.deps/dawn-2026/dawn.node ]; then
        mkdir -p /tmp/dawn-keep && cp -r .devbin-dawn/.deps/dawn-2026 /tmp/dawn-keep/
    fi
done
tar czf "$final/batch.tar.gz" -C /tmp/batch .
echo "== done at $(( $(date +%s) - t0 )) s"
