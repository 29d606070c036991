#!/usr/bin/env bash
# One H200 call for issue 14's first batch (2026-12-02): tools/h200_attention_ab.sh (~70 s), then
# tools/h200_profile_rows.sh with what is left of 135 s. Both scripts travel in D.
# The call: carry [".gl", "D"], command: bash D/h200_perf_batch1.sh D, timeout_s 150.
d=${1:-.devbin-perf}
t0=$(date +%s)
BUDGET=65 bash $d/h200_attention_ab.sh $d
BUDGET=$(( 135 - ($(date +%s) - t0) )) bash $d/h200_profile_rows.sh $d
