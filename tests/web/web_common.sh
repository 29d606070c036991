# Sourced by tests/web/test_web_*.sh: paths, the page driver (run.mjs) and check helpers.
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

