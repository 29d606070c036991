#!/usr/bin/env bash
# WGSL lives in src/kernels/*.wgsl (notes/KERNELS.md): C writes only the prelude's constants and
# the generated dtype loaders/storers (src/ops/ops.c's op_wgsl_*), and picks fixed per-variant text
# as sections of lib files (op_wgsl_section). This fails when a C file of src, testkit or tools
# has a string literal that writes a WGSL function, a binding or a storage variable, except in the
# files listed below, whose kernel text has not moved yet or is generated per variant (each with
# the reason).
set -u
root=${WGT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 1
declare -A waiting=(
    [src/ops/elementwise.c]="compute() bodies and packed unit(), generated per dtype signature (the fusion work)"
    [src/ops/elementwise_fuse.c]="a captured chain's fused kernel: its bindings and stages are the variant (graph fusion)"
    [src/ops/attention.c]="ldk4, the decode kernel's K loader per dtype (hot: measure on the H200 when moved)"
    [src/ops/qlinear.c]="sg_sum, the matrix-vector row sum (hot: measure on the H200 when moved)"
)
bad=0
found=$(grep -rnE --include='*.c' '"[^"]*(\bfn [A-Za-z_][A-Za-z_0-9]*\(|@group\(|var<(storage|uniform|workgroup))' src testkit tools || true)
while IFS=: read -r file line text; do
    [ -n "$file" ] || continue
    [ -n "${waiting[$file]:-}" ] && continue
    echo "$file:$line: WGSL in a C string (put it in src/kernels/, a section of a lib file if it varies): $(sed 's/^[[:space:]]*//' <<<"$text")"
    bad=$((bad + 1))
done <<<"$found"
for f in "${!waiting[@]}"; do
    grep -q "^$f:" <<<"$found" || echo "note: $f writes no WGSL in strings any more: take it off this test's list"
done
if [ $bad -gt 0 ]; then
    echo "$bad WGSL string(s) in C"
    exit 1
fi
echo "wgsl: no kernel text in C strings outside the ${#waiting[@]} files listed"
