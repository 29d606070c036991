#!/usr/bin/env bash
# What graph capture tells a developer (issue 17): WGT_DUMP_SHADERS writes the kernels a capture
# generates (the elementwise chain fused into one kernel, a product with its epilogue in its
# store), WGT_PROFILE=1 names fused kernels by the ops they contain (fused:silu+mul,
# fused:matmul>add, with the routing off; routed ones likewise, fused:rms_norm>matmul>qkv_rope_cache),
# and WGT_DEBUG=1
# says where an op that needs the host mid-graph (nonzero's count) ends a segment. The step is
# transformers' Qwen2 fixture decoded with plain ops (WGT_DECODE_GENERIC=1) and --graph, on
# lavapipe (the adapter with timestamp queries).
set -u
wgt=${WGT_BIN:?}
root=${WGT_ROOT:?}
qwen=$root/tests/fixtures/hf/qwen2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
export WGT_BACKEND=vulkan
ids=$(node -e 'console.log(require(process.argv[1]).cases[0].prompt_ids.join(","))' "$qwen/fixture.json")
[ -n "$ids" ] || { echo "FAIL: no prompt read from $qwen/fixture.json"; exit 1; }
mkdir "$tmp/dump"
WGT_DUMP_SHADERS=$tmp/dump WGT_PROFILE=1 WGT_GRAPH_ROUTE=0 WGT_DECODE_GENERIC=1 "$wgt" generate -m "$qwen" --prompt-ids "$ids" -n 6 \
    --ignore-eos --graph >"$tmp/out" 2>"$tmp/err" || { echo "FAIL: generate exited $?"; cat "$tmp/err"; fail=1; }
ls "$tmp/dump"/elementwise_fused-*.wgsl >/dev/null 2>&1 ||
    { echo "FAIL: WGT_DUMP_SHADERS wrote no fused elementwise kernel:"; ls "$tmp/dump"; fail=1; }
grep -l "let hv = v;" "$tmp/dump"/matmul_gemv-*.wgsl >/dev/null 2>&1 ||
    { echo "FAIL: WGT_DUMP_SHADERS wrote no product with a fused epilogue (mm_st with the chain)"; fail=1; }
for row in "fused:silu+mul " "fused:matmul>add "; do
    grep -qF "  $row" "$tmp/err" || { echo "FAIL: the profile has no row '$row':"; grep -A30 "kernel profile" "$tmp/err"; fail=1; }
done
WGT_PROFILE=1 WGT_GRAPH_ROUTE=1 WGT_DECODE_GENERIC=1 "$wgt" generate -m "$qwen" --prompt-ids "$ids" -n 6 --ignore-eos \
    --graph >"$tmp/out" 2>"$tmp/err" || { echo "FAIL: generate (routed) exited $?"; cat "$tmp/err"; fail=1; }
for row in "fused:rms_norm>matmul>qkv_rope_cache " "fused:silu+mul>matmul>add " "fused:rms_norm>matmul " "fused:matmul>add "; do
    grep -qF "  $row" "$tmp/err" ||
        { echo "FAIL: the routed step's profile has no row '$row':"; grep -A30 "kernel profile" "$tmp/err"; fail=1; }
done
WGT_DEBUG=1 "$wgt" ops --check --graph --dtype f32 nonzero >"$tmp/out" 2>"$tmp/err"
grep -q "^wgt: graph: segment 1 ends at command [0-9]*: a download (after kernel '[a-z_]*') of [0-9]* bytes" "$tmp/err" ||
    { echo "FAIL: WGT_DEBUG=1 does not say where nonzero's count ends a segment:"; grep "graph" "$tmp/err" | head; fail=1; }
grep -q "2 segments" "$tmp/err" || { echo "FAIL: the capture of nonzero is not 2 segments"; fail=1; }
[ $fail = 0 ] && echo "graph debug: dumps, profile names and segment log ok"
exit $fail
