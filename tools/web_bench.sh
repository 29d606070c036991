#!/usr/bin/env bash
# The browser build's speed against the native CLI on the same machine (README, Browser), and the
# size of the WebAssembly module:
#  - the page (build/web, headless Chromium through tests/web/run.mjs) decodes the default model
#    greedily, ignoring end-of-sequence, from the same prompt 1 + R times in one page load (the
#    first run also compiles the kernels and is left out);
#  - the native CLI (build/wgt generate, R runs) decodes the same tokens on Chromium's own
#    SwiftShader Vulkan driver (the adapter the page gets here: the same adapter class) and on the
#    machine's default adapter (lavapipe on a machine without a GPU);
#  - wgt.wasm's bytes, and gzip -9's (what a server compressing it would send).
# Each figure is the median of its R runs, with the runs listed (a shared machine is noisy).
#   bash tools/web_bench.sh [-n TOKENS] [-r R] [--build DIR]     (make web and make build first)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
n=16
reps=3
while [ $# -gt 0 ]; do
  case "$1" in
    -n) n=$2; shift 2 ;;
    -r) reps=$2; shift 2 ;;
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "web_bench.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
cd "$root"
model=models/bible-llama.gguf
wasm=$build/web/wgt.wasm
[ -f "$wasm" ] || { echo "web_bench.sh: $wasm is missing: run 'make web'" >&2; exit 1; }
[ -x "$build/wgt" ] || { echo "web_bench.sh: $build/wgt is missing: run 'make build'" >&2; exit 1; }
command -v chromium >/dev/null || { echo "web_bench.sh: no chromium: run 'make deps'" >&2; exit 1; }
if [ ! -f tests/web/node_modules/playwright-core/package.json ]; then
  (cd tests/web && npm ci --no-audit --no-fund --silent) || { echo "web_bench.sh: npm ci in tests/web failed" >&2; exit 1; }
fi
field() { node -e 'const r = JSON.parse(require("fs").readFileSync(0, "utf8")); const v = r[process.argv[1]]; process.stdout.write(v == null ? "" : typeof v === "string" ? v : JSON.stringify(v));' "$1"; }

echo "date:      $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, $(chromium --version 2>/dev/null | head -1)"
echo "model:     $model, prompt id 1, $n tokens greedy (--ignore-eos); decode tok/s counts the tokens after the first"
bytes=$(stat -c %s "$wasm")
gz=$(gzip -9 -c "$wasm" | wc -c)
printf 'wgt.wasm:  %s bytes (%.2f MB), gzip -9 %s bytes (%.2f MB)\n' "$bytes" "$(echo "$bytes / 1000000" | bc -l)" "$gz" "$(echo "$gz / 1000000" | bc -l)"

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
list() { tr ' ' '\n' | grep . | awk '{ printf "%s%.2f", (NR > 1 ? ", " : ""), $1 }'; }
url="index.html?model=$model&n=$n&temp=0&ignore_eos=1"
for _ in $(seq 0 "$reps"); do url="$url&prompt_ids=1"; done
r=$(node tests/web/run.mjs --root "$build/web" --timeout 900 --page "$url")
if [ "$(field title <<<"$r")" = done ]; then
  runs=$(field decode_tok_s_each <<<"$r" | tr -d '[]' | tr ',' ' ')
  warm=${runs#* }
  echo "page:      $(median <<<"$warm") tok/s (runs: $(list <<<"$warm"); the first, compiling: $(list <<<"${runs%% *}")) on $(field adapter <<<"$r")"
else
  echo "page:      $(field title <<<"$r"): $(field error <<<"$r") $(field timeout <<<"$r")"
fi

native() { # label, then env assignments
  local label=$1; shift
  local runs="" out adapter
  for _ in $(seq 1 "$reps"); do
    out=$(env "$@" "$build/wgt" generate -m "$model" --prompt-ids 1 -n "$n" --temp 0 --ignore-eos 2>&1 >/dev/null)
    local v
    v=$(grep -o 'decode: [0-9]* tokens, [0-9.]* tok/s' <<<"$out" | awk '{ print $4 }')
    [ -n "$v" ] || { echo "$label failed: $(tail -2 <<<"$out")"; return; }
    runs="$runs $v"
  done
  adapter=$(env "$@" "$build/wgt" info --selfcheck-floats 1024 2>/dev/null | grep -m1 -i '^adapter' | sed 's/^[Aa]dapter:* *//')
  echo "$label $(median <<<"$runs") tok/s (runs: $(list <<<"$runs")) on ${adapter:-?}"
}
native "native:   " VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json
native "native:   " WGT_BACKEND=vulkan
