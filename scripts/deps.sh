#!/usr/bin/env bash
# Installs what wgt needs on Debian 12, idempotently: Debian packages (Mesa 25 lavapipe from
# bookworm-backports, the EGL/GLES stack, build tools, libraries) and Dawn from the npm registry,
# checked against a pinned sha512. Safe to run again; does nothing when everything is present.
set -euo pipefail
cd "$(dirname "$0")/.."

DAWN_PKG=bun-webgpu-linux-x64
DAWN_VER=0.1.7
DAWN_SHA512='UEP7UZdEhx9otvkZczjsszL8ZVlrODANQvgl+C88/bNVmxDoFi7w1fWzGi1sZyakiETjmtFDq2/xCLhbSZxjqw=='
DAWN_DIR=.deps/dawn

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
  libcjson-dev libutf8proc-dev libpcre2-dev sentencepiece libonnx-testdata
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

# Dawn, from the npm registry, verified before use.
if [ ! -f "$DAWN_DIR/libwebgpu_wrapper.so" ] || [ "$(cat "$DAWN_DIR/.sha512" 2>/dev/null)" != "$DAWN_SHA512" ]; then
  say "fetching Dawn ($DAWN_PKG@$DAWN_VER) from the npm registry"
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "$DAWN_PKG@$DAWN_VER" >/dev/null 2>&1) ||
    die "npm pack $DAWN_PKG@$DAWN_VER failed: check that the npm registry is reachable, then run 'make deps' again"
  tgz=$(ls "$tmp"/*.tgz 2>/dev/null | head -n 1)
  [ -n "$tgz" ] || die "npm pack produced no tarball"
  got=$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)
  [ "$got" = "$DAWN_SHA512" ] ||
    die "Dawn tarball integrity mismatch (got sha512-$got, want sha512-$DAWN_SHA512): the download is corrupt or tampered with; delete .deps and run 'make deps' again, or report it"
  mkdir -p "$tmp/x" && tar -xzf "$tgz" -C "$tmp/x"
  so=$(find "$tmp/x" -name libwebgpu_wrapper.so | head -n 1)
  [ -n "$so" ] || die "the Dawn package holds no libwebgpu_wrapper.so"
  rm -rf "$DAWN_DIR" && mkdir -p "$DAWN_DIR"
  cp "$so" "$DAWN_DIR/libwebgpu_wrapper.so"
  printf '%s' "$DAWN_SHA512" > "$DAWN_DIR/.sha512"
  say "Dawn installed in $DAWN_DIR"
fi
