#!/usr/bin/env bash
# WGSL lives in src/kernels/*.wgsl (notes/KERNELS.md). C writes only the prelude's values
# (`const`, `alias` and `enable` lines: what varies per pipeline) and picks fixed per-variant text
# as sections of lib files (op_wgsl_section). WGSL code built in C comes from one place, the
# documented generator of src/ops/ops.c (op_wgsl_loader / op_wgsl_loader_via / op_wgsl_storer /
# op_wgsl_vec8_loader: a dtype's load and store functions; op_wgsl_tile_sums: the register tiles' named sums; op_wgsl_call: the line that calls an
# op function by name). This fails when a string literal of any other C file of
# src, testkit or tools holds WGSL code (a function, binding, variable, let, return, select,
# bitcast, packing, barrier or subgroup builtin), except in the files listed below, each with the
# reason; a listed file that no longer holds any fails too (stale exceptions go).
set -u
root=${WGT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 1
generator=src/ops/ops.c
declare -A allowed=(
    [src/gpu/kernel.c]="reads kernels' bindings (checks @binding / var< in the text), writes no WGSL"
    [src/ops/elementwise_fuse.c]="a captured chain's fused kernel: its bindings and stages are the variant (graph fusion)"
    [src/ops/matmul_fuse.c]="a captured graph's merged product: its loaders pick each product's weight binding by row, its storer each output by column, at bounds and offsets that are the variant (graph fusion)"
)
code='(\bfn [A-Za-z_%]|@group\(|@binding|@compute|var<|bitcast<|\blet [A-Za-z_%][A-Za-z_0-9%]* =|\breturn [^;]*;|select\(|pack2x16|workgroupBarrier|subgroup[A-Z]|extractBits)'
# every string literal of every line, then those holding WGSL code
found=$(grep -rnoE --include='*.c' '"([^"\\]|\\.)*"' src testkit tools | grep -E "$code" || true)
bad=0
while IFS=: read -r file line text; do
    [ -n "$file" ] || continue
    [ "$file" = "$generator" ] && continue
    [ -n "${allowed[$file]:-}" ] && continue
    echo "$file:$line: WGSL code in a C string (put it in src/kernels/, a section of a lib file if it varies): $text"
    bad=$((bad + 1))
done <<<"$found"
grep -q "^$generator:" <<<"$found" || { echo "the generator $generator writes no WGSL: this test looks in the wrong place"; bad=$((bad + 1)); }
for f in "${!allowed[@]}"; do
    grep -q "^$f:" <<<"$found" || { echo "$f holds no WGSL in strings any more: take it off this test's list"; bad=$((bad + 1)); }
done
# the check itself: it must see a known WGSL string
grep -qE "$code" <<<'"fn ld(i: u32) -> f32 { return bitcast<f32>(x[i]); }"' || { echo "the pattern misses WGSL"; bad=$((bad + 1)); }
if [ $bad -gt 0 ]; then
    echo "$bad WGSL string(s) in C outside $generator"
    exit 1
fi
echo "wgsl: WGSL code in C strings only in $generator and the ${#allowed[@]} files listed"
