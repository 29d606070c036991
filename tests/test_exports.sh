#!/usr/bin/env bash
# libwgt.so exports exactly the functions the public headers (include/*.h) declare: no internal
# function (cpu_*, op_*, tok_*, wgt_cpu_*, the test kit's hx_* and onnx_*) escapes, and nothing the
# header promises is missing. Prints each extra and each missing symbol; exits 1 if there is any.
#
# The header is parsed by the compiler itself, not by a pattern over the text: GCC's -aux-info
# writes one prototype line per function declared in the translation unit, tagged with the file and
# line it comes from. The exported set is the library's dynamic symbol table (nm -D).
set -u
root=${WGT_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
build=${WGT_BUILD:-$root/build}
lib=$build/libwgt.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "test_exports: $*" >&2; exit 1; }
[ -e "$lib" ] || fail "$lib not found: build the shared library (cmake --build $build --target wgt_shared)"
command -v gcc >/dev/null || fail "gcc not found: it parses the header (-aux-info); install it (make deps)"
command -v nm >/dev/null || fail "nm not found: install binutils (make deps)"

# Declared: every function prototype whose declaration sits in a header under include/.
: >"$tmp/declared.all"
for h in "$root"/include/*.h; do
    gcc -aux-info "$tmp/aux" -fsyntax-only -I"$root/include" -x c "$h" || fail "gcc could not parse $h"
    # /* /path/include/wgt.h:48:NC */ extern const char *wgt_version (void);  ->  wgt_version
    grep -F "/* $root/include/" "$tmp/aux" | grep -v ' static ' |
        sed -e 's|^/\*[^*]*\*/ *||' -e 's| (.*||' -e 's|.*[ *]||' >>"$tmp/declared.all"
done
sort -u "$tmp/declared.all" >"$tmp/declared"
n_declared=$(wc -l <"$tmp/declared")
# A parse that finds next to nothing would make the comparison vacuous.
[ "$n_declared" -ge 100 ] || fail "found only $n_declared function declarations in include/*.h: the parse is broken"

# Exported: every symbol the shared library defines in its dynamic table (functions and data).
nm -D --defined-only "$lib" >"$tmp/nm" || fail "nm could not read $lib"
awk 'NF >= 3 { print $3 }' "$tmp/nm" | sed 's/@.*//' | sort -u >"$tmp/exported"
n_exported=$(wc -l <"$tmp/exported")

comm -23 "$tmp/exported" "$tmp/declared" >"$tmp/extra"
comm -13 "$tmp/exported" "$tmp/declared" >"$tmp/missing"
status=0
if [ -s "$tmp/extra" ]; then
    status=1
    echo "exported by $(basename "$lib") but declared in no include/*.h (make it static, or declare it" \
        "in the public header if users need it): $(wc -l <"$tmp/extra")"
    sed 's/^/  extra:   /' "$tmp/extra"
fi
if [ -s "$tmp/missing" ]; then
    status=1
    echo "declared in include/*.h but not exported by $(basename "$lib") (no definition in the library," \
        "or defined outside the header's WGT_API_BEGIN region): $(wc -l <"$tmp/missing")"
    sed 's/^/  missing: /' "$tmp/missing"
fi
echo "$n_declared functions declared in include/, $n_exported symbols exported by $lib"
[ $status = 0 ] && echo "exports match the header"

# The header's prose names nothing a user cannot call: no internal function or type (the CPU
# reference wgt_cpu_*, the device layer wgt_gpu_*, op_*, tok_*, mdl_*, ag_*, cpu_*, the test kit's
# hx_* and onnx_*); it says what they do instead.
internal='\b(wgt_cpu_|wgt_gpu_|op_|tok_|mdl_|ag_|cpu_|hx_|onnx_)[a-z0-9_]+'
for h in "$root"/include/*.h; do
    if grep -nwoE "$internal" "$h" >"$tmp/internal"; then
        status=1
        echo "$(basename "$h") names internal symbols (say what they do instead):"
        sed 's/^/  /' "$tmp/internal"
    fi
done

# Constructors follow the verb convention stated at the top of wgt.h: a function that makes an
# opaque handle (its last parameter wgt_X **, X not a tensor) is wgt_X_open[_...] when it reads
# a path (a `const char *path` parameter), else wgt_X_create[_...]; a name ending in _ex takes an
# options struct; the handle has a wgt_X_free (wgt_output: _commit or _abort). wgt_graph_end makes the graph its capture recorded.
opaque=$(grep -ohE 'typedef struct (wgt_[a-z0-9_]+) \1;' "$root"/include/*.h | awk '{print $3}' | sort -u)
protos=$(cat "$root"/include/*.h | tr '\n' ' ' | grep -oE 'wgt_status wgt_[a-z0-9_]+\([^;)]*\)' || true)
n_ctor=0
while IFS= read -r p; do
    name=$(sed -E 's/^wgt_status (wgt_[a-z0-9_]+)\(.*/\1/' <<<"$p")
    last=$(sed -E 's/.*[(,] *(const )?(wgt_[a-z0-9_]+) \*\*[a-z_]*\)$/\2/;t;d' <<<"$p")
    [ -n "$last" ] && [ "$last" != wgt_tensor ] && grep -qxF "$last" <<<"$opaque" || continue
    n_ctor=$((n_ctor + 1))
    [ "$name" = wgt_graph_end ] && continue
    if grep -qE 'const char \*path\b' <<<"$p"; then verb=open; else verb=create; fi
    if [[ $name != "${last}_$verb" && $name != "${last}_${verb}_"* ]]; then
        status=1
        echo "constructor $name: makes a $last $( [ $verb = open ] && echo "from a path" || echo "from memory or a handle"), so it is ${last}_$verb[_...] (wgt.h's convention)"
    fi
    if [[ $name == *_ex ]] && ! grep -qE '_options \*' <<<"$p"; then
        status=1; echo "constructor $name ends in _ex but takes no options struct"
    fi
    # released by _free (an output file by _commit or _abort, which both free it)
    grep -qxF "${last}_free" "$tmp/declared" || grep -qxF "${last}_abort" "$tmp/declared" ||
        { status=1; echo "constructor $name: no ${last}_free"; }
done <<<"$protos"
[ $n_ctor -ge 15 ] || { status=1; echo "found only $n_ctor constructors in include/: the parse is broken"; }
[ $status = 0 ] && echo "the header names no internal symbol; $n_ctor constructors follow the verb convention"
exit $status
