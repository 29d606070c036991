#!/usr/bin/env bash
# The device set-up the H200 scripts share, sourced from the repository root (the device tool's
# working directory): `. tools/h200_common.sh D LOGS`, D the git-ignored folder carried with the
# binaries (D/build/...), LOGS a scratch folder for the steps' logs. It unpacks .gl's .debs (the
# NVIDIA Vulkan driver's GL dispatch), points Vulkan at the NVIDIA ICD, finds a Dawn 2026 dawn.node
# ($WGT_WEBGPU_LIB, D/.deps/dawn-2026, .deps/dawn-2026, or unpacked from D/dawn.tar.xz or
# .devbin-dawn/dawn.tar.xz), writes the GPU and its clocks to LOGS/gpu.txt, and defines
#   step NAME [VAR=VALUE...] COMMAND...   the command's output to LOGS/NAME.txt (with its exit
#                                         status), its last ${TAILN:-$STEP_TAIL} lines to stdout;
#                                         skipped, saying so, once BUDGET seconds (default 135)
#                                         have passed since the set-up.
# nvidia-smi samples the SM clock, power, temperature and throttle reasons every 250 ms into
# LOGS/smi.csv for the whole call, and each step's log starts and ends with its wall-clock times,
# so a slow step can be matched to the GPU's state (Llama f16 steps ran at a third of their speed at
# times, 2026-12-03 14:15).
# Sets out (${OUT:-/tmp/out}, where the call's files go), logs, t0 and budget.
d=${1:?usage: . tools/h200_common.sh D LOGS}
logs=${2:?usage: . tools/h200_common.sh D LOGS}
out=${OUT:-/tmp/out}; mkdir -p "$out" "$logs"
budget=${BUDGET:-135}; t0=$(date +%s)
STEP_TAIL=${STEP_TAIL:-4}
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
if [ -z "${WGT_WEBGPU_LIB:-}" ] || [ ! -f "$WGT_WEBGPU_LIB" ]; then
    for z in $d .devbin-dawn; do
        [ -f $z/dawn.tar.xz ] && [ ! -f $z/.deps/dawn-2026/dawn.node ] && tar xJf $z/dawn.tar.xz -C $z
    done
    for c in $d/.deps/dawn-2026/dawn.node .devbin-dawn/.deps/dawn-2026/dawn.node .deps/dawn-2026/dawn.node \
             $(find . -maxdepth 5 -name dawn.node 2>/dev/null); do
        [ -f $c ] && { WGT_WEBGPU_LIB=$PWD/$c; break; }; done
fi
export WGT_WEBGPU_LIB; echo "Dawn: ${WGT_WEBGPU_LIB:-none found}"
[ -f $d/build/wgt ] && ldd $d/build/wgt | grep "not found"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee $logs/gpu.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active,utilization.gpu \
    --format=csv -lms 250 >$logs/smi.csv 2>&1 &
smi_pid=$!; trap 'kill $smi_pid 2>/dev/null' EXIT
step() { local name=$1; shift
    if [ $(( $(date +%s) - t0 )) -gt $budget ]; then echo "=== $name: skipped (past ${budget} s)"; return; fi
    echo "=== $name: $*"; { echo "start $(date +%T.%N)"; env "$@"; echo "exit $? (end $(date +%T.%N))"; } >$logs/$name.txt 2>&1
    grep -v "artificially" $logs/$name.txt | tail -n ${TAILN:-$STEP_TAIL}; }
