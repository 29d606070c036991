#!/usr/bin/env bash
# Every benchmark figure the README quotes, in one batch on the H200 (device tool), from the
# repository root with the binaries built here carried over:
#   carry [".gl", ".deps/dawn", "build/wgt", "build/bench"]
#   command: bash tools/h200_bench.sh ops|models|all
# Each benchmark's output goes to stdout and to $OUT/<name>.txt when $OUT is set.
set -u
what=${1:-all}
run() { # name, command...
    local name=$1; shift
    echo "=== $name: $*"
    if [ -n "${OUT:-}" ]; then bash tools/device_run.sh "$@" 2>&1 | tee "$OUT/$name.txt"
    else bash tools/device_run.sh "$@" 2>&1; fi
}
if [ "$what" = ops ] || [ "$what" = all ]; then
    run ops ./build/bench/bench_ops --size large
    run conv ./build/bench/bench_conv --size large --compare
    run sort ./build/bench/bench_sort --size large
    run pool ./build/bench/bench_pool --size large
    run random ./build/bench/bench_random --size large
    run loss ./build/bench/bench_loss --size large
    run qlinear ./build/bench/bench_qlinear --size large
    run core ./build/bench/bench_core --size large
fi
if [ "$what" = models ] || [ "$what" = all ]; then
    run info ./build/wgt info
    run device ./build/wgt bench --device
    for t in f16 q8_0; do
        run "qwen2.5-0.5b-$t" ./build/wgt bench -m bench/configs/qwen2.5-0.5b.json --type "$t" -p 128 -n 128
        run "llama-3.2-1b-$t" ./build/wgt bench -m bench/configs/llama-3.2-1b.json --type "$t" -p 128 -n 128
    done
    WGT_PROFILE=1 run profile-qwen-f16 ./build/wgt bench -m bench/configs/qwen2.5-0.5b.json -p 16 -n 32
fi
