#!/usr/bin/env bash
# The kernel profiler: WGT_PROFILE=1 prints a per-kernel table whose calls add up to the dispatches
# the run made (lavapipe has timestamp queries); a bad value is an error naming the variable.
set -u
wgt=${WGT_BIN:?} root=${WGT_ROOT:?}
fail=0
out=$(WGT_BACKEND=vulkan WGT_PROFILE=1 "$wgt" generate -m "$root/models/bible-llama.gguf" --prompt-ids 1,2,3 -n 3 \
      --ignore-eos --print-ids 2>&1 >/dev/null)
echo "$out"
total=$(sed -n 's/^kernel profile: \([0-9]*\) dispatches.*/\1/p' <<<"$out")
sum=$(awk '/^  [a-z_]+ +[0-9]+ / {s += $2} END {print s + 0}' <<<"$out")
if [ -z "$total" ] || [ "$total" -lt 10 ] || [ "$sum" != "$total" ]; then
    echo "FAIL: profile table missing or calls ($sum) do not add up to the dispatches ($total)"; fail=1
fi
grep -q "^  matmul_gemv " <<<"$out" || { echo "FAIL: no matmul_gemv row (the decode matvec kernel)"; fail=1; }
bad=$(WGT_PROFILE=yes "$wgt" info 2>&1)
if [ $? = 0 ] || ! grep -q "WGT_PROFILE" <<<"$bad"; then echo "FAIL: WGT_PROFILE=yes accepted: $bad"; fail=1; fi
[ $fail = 0 ] && echo "profile: ok"
exit $fail
