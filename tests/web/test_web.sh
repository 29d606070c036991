#!/usr/bin/env bash
# The browser build (make web) in headless Chromium on its software adapter (SwiftShader):
#  - the default model's greedy ids for several prompts (ids and text) equal the native CLI's;
#  - a GGUF loaded by URL works (the default model is fetched by URL), a corrupt one and a file
#    that is not a model give the page's error;
#  - the op harness page (its default subset) passes.
# Needs: WGT_BUILD/web (make web), chromium and tests/web/node_modules (make deps).
set -uo pipefail
root=${WGT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
build=${WGT_BUILD:-$root/build}
bin=${WGT_BIN:-$build/wgt}
web=$build/web
cd "$root"
fail() { echo "FAIL: $*"; exit 1; }
[ -f "$web/wgt.wasm" ] || fail "$web/wgt.wasm is missing: run 'make web' (make test builds it)"
command -v chromium >/dev/null || fail "no chromium: run 'make deps'"
if [ ! -f tests/web/node_modules/playwright-core/package.json ]; then
  (cd tests/web && npm ci --no-audit --no-fund --silent) || fail "npm ci in tests/web failed"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
page() { node tests/web/run.mjs --root "$web" --timeout 240 "$@"; }
field() { node -e 'const r = JSON.parse(require("fs").readFileSync(0, "utf8")); const v = r[process.argv[1]]; process.stdout.write(v == null ? "" : String(v));' "$1"; }
failures=0
check() { # name, got, want
  if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: got '$2', want '$3'"; failures=$((failures + 1)); fi
}

model=models/bible-llama.gguf
n=12
for ids in "1" "1,450,6460,338,263" "1,13,797,278,6763"; do
  want=$("$bin" generate -m "$model" --prompt-ids "$ids" -n $n --temp 0 --print-ids 2>/dev/null) || fail "the native CLI failed on --prompt-ids $ids"
  r=$(page --page "index.html?model=$model&prompt_ids=$ids&n=$n&temp=0")
  title=$(field title <<<"$r")
  [ "$title" = done ] || echo "  page: $(field error <<<"$r") $(field console <<<"$r" | tail -c 2000)"
  check "greedy ids after $ids" "$(field ids <<<"$r" | tr -s ' ' | sed 's/ *$//')" "$(tr -s ' ' <<<"$want" | sed 's/ *$//')"
  echo "     page decode: $(field speed <<<"$r")"
done

prompt="In the beginning God created"
enc=$(node -e 'process.stdout.write(encodeURIComponent(process.argv[1]))' "$prompt")
want=$("$bin" generate -m "$model" -p "$prompt" -n $n --temp 0 --print-ids 2>/dev/null) || fail "the native CLI failed on -p"
r=$(page --page "index.html?model=$model&prompt=$enc&n=$n&temp=0")
check "greedy ids after the text '$prompt' (the tokenizer in wasm)" "$(field ids <<<"$r" | tr -s ' ' | sed 's/ *$//')" "$(tr -s ' ' <<<"$want" | sed 's/ *$//')"

head -c 300000 "$model" > "$tmp/corrupt.gguf"
r=$(page --page "index.html?model=corrupt.gguf&prompt_ids=1&n=2" --bytes "corrupt.gguf=$tmp/corrupt.gguf")
check "a truncated GGUF: the page says error" "$(field title <<<"$r")" error
err=$(field error <<<"$r")
case "$err" in *truncated*|*past\ the\ end*|*offset*) echo "ok   its message: ${err:0:160}" ;;
  *) echo "FAIL the truncated GGUF's message does not say what is wrong: '$err'"; failures=$((failures + 1)) ;; esac

printf 'this is a text file, not a model\n' > "$tmp/notes.gguf"
r=$(page --page "index.html?model=notes.gguf&prompt_ids=1&n=2" --bytes "notes.gguf=$tmp/notes.gguf")
check "a file that is not a model: the page says error" "$(field title <<<"$r")" error
err=$(field error <<<"$r")
case "$err" in *"not a model"*) echo "ok   its message: ${err:0:160}" ;;
  *) echo "FAIL the non-model's message: '$err'"; failures=$((failures + 1)) ;; esac

r=$(page --page harness.html --timeout 600)
summary=$(field summary <<<"$r")
echo "     harness page: $summary"
case "$summary" in
  *" passed, 0 failed"*) [ "${summary%% *}" -gt 0 ] && echo "ok   harness page" || { echo "FAIL harness page ran nothing"; failures=$((failures + 1)); } ;;
  *) echo "FAIL harness page: $summary"; field log <<<"$r" | grep -v '^ok' | head -40; failures=$((failures + 1)) ;;
esac

[ $failures = 0 ] || fail "$failures check(s) failed"
echo "all browser checks passed"
