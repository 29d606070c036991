#!/usr/bin/env bash
# One family name per family (issue 12): a family is a file src/ops/<family>.def, and every file of
# src/ops, src/cpu, src/kernels and tests/ops names the family it belongs to by its first word (the
# name up to its first `_`), or belongs to one of the named groups below. This fails on a file that
# names no family and is in no group, on a family no op test names, and on a group entry that no
# longer matches a file (so the lists stay true).
#   src/kernels/<family>[_what].wgsl   run by a file of src/ops/ whose name starts with <family>
#   src/kernels/lib_<what>.wgsl        WGSL library sections shared by the ops (op_wgsl_section,
#                                      notes/KERNELS.md), named from src/ops/
#   src/kernels/<layer>_<what>.wgsl    a kernel outside the op table, run by src/<layer>/ (the model
#                                      code's batch attention and sampler, the optimizer, the device
#                                      self-check)
#   tests/ops/test_gpu_<family>[_<family or what>].c   the family's GPU tests; every family is named
#                                      by at least one (a test of two families names both)
#   src/ops, src/cpu: <family>[_what].c/.h, or the infrastructure files listed below
# docs/ops.md is written from the rows (tools/readme_ops.sh, test_readme_ops): its family column is
# the .def file's name by construction.
set -u
root=${WGT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 1
bad=0
fail() { echo "FAIL: $*"; bad=$((bad + 1)); }

declare -A family=()
for f in src/ops/*.def; do family[$(basename "$f" .def)]=1; done
[ ${#family[@]} -ge 10 ] || { echo "FAIL: only ${#family[@]} families under src/ops/*.def"; exit 1; }
declare -A layer=()
for d in src/*/; do d=${d%/}; d=${d#src/}; [ "$d" != ops ] && [ "$d" != kernels ] && layer[$d]=1; done

# Files that serve every family (not one): path => what it is.
declare -A infra=(
    [src/ops/api.h]="kept for its includers: the op functions are in include/wgt.h"
    [src/ops/ops.c]="shared helpers: bindings, generated loaders, WGSL sections"
    [src/ops/ops.h]="shared helpers' header"
    [src/ops/optable.h]="the row macros"
    [src/ops/optable_all.h]="includes every family's .def"
    [src/ops/tensor_ops.c]="the tensor functions that need an op (a reshape that copies, host views)"
    [src/cpu/cpu.h]="the CPU reference's header"
    [src/cpu/cpu_internal.h]="the reference's shared helpers"
    [src/cpu/tensor.c]="the reference's tensor plumbing"
    [src/cpu/op_kinds.c]="the public op enums' names"
    [src/cpu/op_kinds.h]="the public op enums' names"
    [src/cpu/special.c]="special functions (erfinv, digamma) in double"
    [src/cpu/special.h]="special functions' header"
    [src/cpu/optim.c]="the optimizer step's reference (not a row: notes/OPTABLE.md)"
    [src/cpu/optim.h]="the optimizer step's reference"
    # tests of the whole table or of every family at once
    [tests/ops/gpu_pair.h]="the GPU-vs-reference helpers of the op tests"
    [tests/ops/test_optable.c]="the op table's own checks"
    [tests/ops/test_readme_ops.sh]="README's and docs/ops.md's tables from the rows"
    [tests/ops/test_wgsl_files.sh]="WGSL lives in src/kernels"
    [tests/ops/test_onnx_gpu.sh]="the ONNX backend over every row's adapter"
    [tests/ops/test_family_names.sh]="this check"
    [tests/ops/test_gpu_harness.c]="every row on the GPU against its reference"
    [tests/ops/test_gpu_core.c]="the pipeline cache and edge values across families"
)
for p in "${!infra[@]}"; do [ -e "$p" ] || fail "$p is listed as an infrastructure file but does not exist"; done

first() { local b; b=$(basename "$1"); b=${b%%.*}; echo "${b%%_*}"; }

for f in src/ops/*.c src/ops/*.h src/cpu/*.c src/cpu/*.h; do
    [ -n "${infra[$f]:-}" ] && continue
    w=$(first "$f")
    [ -n "${family[$w]:-}" ] || fail "$f names no family (its first word '$w' is no src/ops/*.def)"
done

for f in src/kernels/*.wgsl; do
    k=$(basename "$f" .wgsl) w=$(first "$f")
    if [ -n "${family[$w]:-}" ]; then
        grep -lF "\"$k\"" src/ops/"$w"*.c >/dev/null 2>&1 ||
            fail "$f: family '$w', but no src/ops/$w*.c names \"$k\""
    elif [ "$w" = lib ]; then
        grep -rlF "\"$k\"" src/ops --include=*.c >/dev/null || fail "$f: a lib section file no src/ops/*.c names"
    elif [ -n "${layer[$w]:-}" ]; then
        grep -rlF "\"$k\"" "src/$w" --include=*.c >/dev/null || fail "$f: layer '$w', but no src/$w/*.c names \"$k\""
    else
        fail "$f names no family, no layer of src/ and is no lib_ file"
    fi
done

declare -A tested=()
for f in tests/ops/*; do
    [ -n "${infra[$f]:-}" ] && continue
    b=$(basename "$f")
    case "$b" in
    test_gpu_*.c) ;;
    *) fail "$f: an op test is tests/ops/test_gpu_<family>*.c (or listed as a whole-table test here)"; continue ;;
    esac
    words=${b#test_gpu_}; words=${words%.c}
    w=${words%%_*}
    [ -n "${family[$w]:-}" ] || { fail "$f names no family (its first word '$w' is no src/ops/*.def)"; continue; }
    for x in ${words//_/ }; do [ -n "${family[$x]:-}" ] && tested[$x]=1; done
done
for fam in "${!family[@]}"; do
    [ -n "${tested[$fam]:-}" ] || fail "family '$fam' has no tests/ops/test_gpu_*.c that names it"
done

if [ $bad -gt 0 ]; then echo "$bad file name(s) out of line with the families"; exit 1; fi
echo "family names: ${#family[@]} families; src/ops, src/cpu, src/kernels and tests/ops agree"
