#!/usr/bin/env bash
# Layers call only downward (/work/shared/DESIGN.md's table, README "Design"): every
# #include "DIR/..." in a layer's folder must name a folder that layer may use, and every function
# or variable a layer's compiled objects take from another layer of libwgt must come from a layer
# it may use (a call through a public function shows in no include). Also: only src/gpu/ touches
# webgpu.h, and only src/gpu/ reads struct wgt_context. Prints each forbidden arrow with its file.
set -euo pipefail
root=${WGT_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

# layer folder -> folders its files may include (itself and headers beside the file always): the
# layers below it, as DESIGN.md's rows and what lies under them. core holds what every layer
# shares (errors, dtypes, the element layout); quant holds block formats (plain C like cpu).
declare -A allowed=(
    [src/core]=""
    [src/gpu]="core"
    [src/cpu]="core"
    [src/quant]="core"
    [src/tensor]="core gpu"
    [src/ops]="core gpu tensor cpu quant"
    [src/graph]="core gpu tensor cpu quant ops"
    [src/autograd]="core gpu tensor cpu quant ops io"     # io: optimizer state in safetensors
    [src/tokenizer]="core io"                            # io: tokenizer.ggml.* through the GGUF reader/writer
    [src/io]="core gpu tensor quant"
    [src/models]="core gpu tensor cpu quant ops graph autograd io tokenizer"
    [tools]="$(ls testkit 2>/dev/null | tr '\n' ' ')" # the CLI: the public API and the test kit
)
# single headers a layer may include beyond its folders: the CLI parses JSON as the library does
# (wgt_json_parse: the value limit, out of memory told from invalid JSON), from libwgt.a; the op
# names and the recorder ids are written by the build from the op table's rows, read as text
# (cmake/gen_optable.cmake), so src/cpu and src/tensor get them without including src/ops
declare -A allowed_header=(
    [tools]="io/json_util.h"
    [src/cpu]="generated/op_names.h"
    [src/tensor]="generated/op_grad_ids.h"
)
bad=0
for layer in "${!allowed[@]}"; do
    [ -d "$layer" ] || continue
    own=${layer#src/}
    while IFS=: read -r file line text; do
        target=$(sed -n 's/.*#include "\([^"]*\)".*/\1/p' <<<"$text")
        [ "$target" = wgt.h ] && continue
        [[ $target != */* ]] && [ -f "$(dirname "$file")/$target" ] && continue # a header beside the file
        dir=${target%%/*}
        [ "$dir" = "$own" ] && continue
        ok=0
        for a in ${allowed[$layer]}; do [ "$dir" = "$a" ] && ok=1; done
        for h in ${allowed_header[$layer]:-}; do [ "$target" = "$h" ] && ok=1; done
        if [ $ok = 0 ]; then
            echo "$file:$line: $layer may not include \"$target\" (allowed: ${allowed[$layer]:-nothing})"
            bad=$((bad + 1))
        fi
    done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$layer"/*.[ch] "$layer"/*/*.[ch] 2>/dev/null || true)
done
# Calls: the symbols each layer's objects (the build's libwgt objects) leave undefined, against
# the layer whose objects define them.
objs=${WGT_BUILD:-$root/build}/CMakeFiles/wgt_objects.dir/src
if ! command -v nm >/dev/null; then
    echo "nm not found: install binutils (make deps)"; bad=$((bad + 1))
elif [ ! -d "$objs" ]; then
    echo "no library objects under $objs: build first (cmake --build build)"; bad=$((bad + 1))
else
    # only objects whose source still exists: a reused build tree keeps the objects of removed or
    # renamed sources (CMake never deletes them), which no longer say anything about the code
    objfiles=()
    while IFS= read -r o; do
        src=${o#"$objs"/}
        if [ -f "$root/src/${src%.o}" ]; then objfiles+=("$o"); fi
    done < <(find "$objs" -name '*.o' | sort)
    [ ${#objfiles[@]} -ge 50 ] || { echo "only ${#objfiles[@]} objects under $objs: the build is incomplete"; bad=$((bad + 1)); }
    rules=$(for k in "${!allowed[@]}"; do echo "$k ${allowed[$k]}"; done)
    # one nm over every object: "PATH: TYPE SYMBOL" (undefined ones as "PATH: U SYMBOL")
    while IFS= read -r line; do
        echo "$line"
        bad=$((bad + 1))
    done < <(nm -A "${objfiles[@]}" 2>/dev/null | awk -v objs="$objs/" -v rules="$rules" '
        BEGIN { n = split(rules, r, "\n"); for (i = 1; i <= n; i++) { k = split(r[i], f, " "); for (j = 2; j <= k; j++) ok[f[1] " " f[j]] = 1 } }
        { file = $1; sub(/:$/, "", file); sub(/:.*/, "", file); rel = substr(file, length(objs) + 1); layer = rel; sub(/\/.*/, "", layer)
          sym = $NF; type = $(NF - 1)
          if (type == "U") { use[++nu] = layer SUBSEP sym SUBSEP rel } else if (type ~ /^[TDRB]$/) owner[sym] = layer }
        END { for (i = 1; i <= nu; i++) { split(use[i], u, SUBSEP); d = owner[u[2]]
                if (d == "" || d == u[1] || ok["src/" u[1] " " d]) continue
                k = u[1] " " d " " u[3]; if (k in said) continue; said[k] = 1
                o = u[3]; sub(/\.o$/, "", o)
                printf "src/%s: src/%s may not call into src/%s (%s)\n", o, u[1], d, u[2] } }')
fi
# The public header includes nothing of ours.
if grep -n '#include "' include/wgt.h; then echo "include/wgt.h includes an internal header"; bad=$((bad + 1)); fi
# Only src/gpu calls webgpu.h.
while IFS=: read -r file line _; do
    case $file in src/gpu/*) ;; *) echo "$file:$line: only src/gpu may use webgpu.h"; bad=$((bad + 1)) ;; esac
done < <(grep -rn --include='*.[ch]' -E '#include "gpu/webgpu.h"|\bwgpu[A-Z][A-Za-z]*\(|\bwgt_W\.' src || true)
# Nothing above src/gpu reads the device layer's context struct: ops, tensors, models and the
# test kit ask gpu.h's functions (wgt_gpu_limits, wgt_gpu_runs_reference, wgt_gpu_has_subgroups,
# ...). The fields are read from struct wgt_context itself, so a new field is covered too.
fields=$(sed -n '/^struct wgt_context {/,/^};/p' src/gpu/gpu.h | sed 's|/\*.*||' | grep ';' |
    sed -E 's/\[[^]]*\]//g; s/;.*//' | tr ',' '\n' | grep -oE '[A-Za-z_][A-Za-z0-9_]*[[:space:]]*$' |
    tr -d ' ' | sort -u | paste -sd'|')
if [ -z "$fields" ]; then echo "no fields found in struct wgt_context (src/gpu/gpu.h)"; bad=$((bad + 1)); fi
while IFS=: read -r file line text; do
    echo "$file:$line: reads struct wgt_context (ask gpu.h's wgt_gpu_* functions): $(sed 's/^[[:space:]]*//' <<<"$text")"
    bad=$((bad + 1))
done < <(grep -rnE --include='*.[ch]' "ctx\)?->($fields)\b" src testkit tools | grep -v '^src/gpu/' || true)
if [ $bad -gt 0 ]; then
    echo "$bad forbidden arrow(s)"
    exit 1
fi
echo "layers: no forbidden arrow"
