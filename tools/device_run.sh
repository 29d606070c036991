#!/usr/bin/env bash
# Runs wgt binaries built here on the H200 device machine (Vulkan through Dawn).
# Call with the device tool from the repository root, carrying .gl (the .debs below), .deps/dawn
# and the binaries you need, e.g.:  carry [".gl", ".deps/dawn", "build/wgt"]
#   command: bash tools/device_run.sh ./build/wgt bench --device
# .gl holds Debian's libvulkan1, libcjson1, libutf8proc2 and libmicrohttpd12 .debs (wgt links all) and the GL
# dispatch libraries the NVIDIA Vulkan ICD (libGLX_nvidia.so.0) needs: without libglvnd0 & co the loader says
# "Could not get 'vkCreateInstance' ... for ICD libGLX_nvidia.so.0" and Dawn finds no adapter. Fetched here with
#   apt-get -oAPT::Architecture=amd64 download libvulkan1 libcjson1 libutf8proc2 libmicrohttpd12 \
#       libglvnd0 libegl1 libgl1 libglx0 libopengl0 libgles2
set -eu
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
export WGT_WEBGPU_LIB=${WGT_WEBGPU_LIB:-$PWD/.deps/dawn/libwebgpu_wrapper.so}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader || true
exec "$@"
