#!/usr/bin/env bash
# What the browser build (make web) and its tests need, idempotently (called by scripts/deps.sh):
#  - Debian packages: clang's wasm32 target (lld's wasm-ld, wasi-libc, compiler-rt builtins for
#    wasm32) and chromium, the headless browser the tests drive;
#  - the upstream sources of cJSON, utf8proc and PCRE2, the three C libraries libwgt links natively,
#    fetched with `apt-get source` (Debian's deb-src suites, checked by apt against the signed
#    indices) at the versions of the native libraries installed, so the wasm module is built from the
#    same releases as the native library. Unpacked into .web-deps/src (git-ignored);
#  - playwright-core from npm, pinned by tests/web/package-lock.json (npm ci).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'deps-web: %s\n' "$*" >&2; }
die() { printf 'deps-web: error: %s\n' "$*" >&2; exit 1; }
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo

PKGS="clang lld wasi-libc libclang-rt-14-dev-wasm32 chromium python3"
missing=
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
  say "installing:$missing"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq || die "apt-get update failed"
  # shellcheck disable=SC2086
  $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null || die "apt-get install failed for:$missing"
fi

# Source package, the binary package whose version it must match, the folder its tarball unpacks to.
SRC=.web-deps/src
LIBS="cjson:libcjson1:cJSON utf8proc:libutf8proc2:utf8proc pcre2:libpcre2-8-0:pcre2"
need_src=0
for l in $LIBS; do
  IFS=: read -r src bin dir <<<"$l"
  v=$(dpkg-query -W -f='${source:Upstream-Version}' "$bin" 2>/dev/null) || die "$bin is not installed: run scripts/deps.sh first"
  [ -f "$SRC/$dir-$v/.ok" ] || need_src=1
done
if [ $need_src = 1 ]; then
  if ! apt-cache showsrc cjson 2>/dev/null | grep -q '^Package:'; then
    say "adding Debian's deb-src suites (apt-get source)"
    . /etc/os-release
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s %s-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\nTypes: deb-src\nURIs: http://deb.debian.org/debian-security\nSuites: %s-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "$VERSION_CODENAME" "$VERSION_CODENAME" "$VERSION_CODENAME" |
      $SUDO tee /etc/apt/sources.list.d/wgt-web-src.sources >/dev/null
    $SUDO apt-get update -qq || die "apt-get update failed after adding deb-src"
  fi
  mkdir -p "$SRC"
  for l in $LIBS; do
    IFS=: read -r src bin dir <<<"$l"
    v=$(dpkg-query -W -f='${source:Version}' "$bin")
    uv=$(dpkg-query -W -f='${source:Upstream-Version}' "$bin")
    [ -f "$SRC/$dir-$uv/.ok" ] && continue
    say "fetching the source of $src $v"
    tmp=$(mktemp -d)
    # --tar-only: the upstream tarball (what Debian builds from); Debian's patches are packaging.
    (cd "$tmp" && apt-get source -qq --download-only --tar-only "$src=$v" >/dev/null 2>&1) ||
      { rm -rf "$tmp"; die "apt-get source $src=$v failed: check the network and the deb-src entries"; }
    tgz=$(ls "$tmp"/*.orig.tar.* 2>/dev/null | head -n 1)
    [ -n "$tgz" ] || { rm -rf "$tmp"; die "apt-get source $src=$v gave no .orig tarball"; }
    rm -rf "$SRC/$dir-$uv" && tar -xf "$tgz" -C "$SRC"
    [ -d "$SRC/$dir-$uv" ] || { rm -rf "$tmp"; die "$tgz did not unpack to $dir-$uv"; }
    touch "$SRC/$dir-$uv/.ok"
    rm -rf "$tmp"
  done
fi

if [ ! -f tests/web/node_modules/playwright-core/package.json ]; then
  say "installing playwright-core (tests/web/package-lock.json)"
  (cd tests/web && npm ci --no-audit --no-fund --silent) || die "npm ci in tests/web failed"
fi
