#!/usr/bin/env bash
# Environment-variable A/Bs of one wgt binary on the H200, in alternating rounds, in one device call.
#   VARIANTS  "NAME=VAR=V,VAR=V;NAME2=..." ("base=" keeps the defaults), separated by ';'; a setting
#             BIN=PATH runs that wgt instead of D/build/wgt (an A/B of two builds: D/base/wgt beside
#             D/build/wgt, "base=BIN=D/base/wgt;new=")
#   ROWS      "MODEL:TYPE:PROMPT[:GEN]" separated by spaces, MODEL q (Qwen2.5-0.5B) or l (Llama-3.2-1B)
#   ROUNDS    rounds (default 2); every round runs every row under every variant in turn
#   BUDGET    seconds after which the steps are skipped (default 300)
# Before (here): D (git-ignored) holds bins.tar.xz = build/wgt + build/libwgt_napi_stub.so (stripped).
# The call: carry [".gl", ".devbin-dawn", "D"], command: ROWS=... VARIANTS=... bash tools/h200_env_ab.sh D
# Output: summary on stdout and $OUT/env_ab.txt; every log in $OUT/env_ab.tar.gz.
set -u
d=${1:?usage: tools/h200_env_ab.sh D}
[ -f $d/bins.tar.xz ] && [ ! -f $d/build/wgt ] && tar xJf $d/bins.tar.xz -C $d
BUDGET=${BUDGET:-300}; STEP_TAIL=${STEP_TAIL:-2}
rm -rf /tmp/env_logs; . tools/h200_common.sh "$d" /tmp/env_logs
export WGT_NAPI_STUB=$PWD/$d/build/libwgt_napi_stub.so
W=$d/build/wgt
IFS=';' read -r -a variants <<< "${VARIANTS:-base=}"
for r in $(seq ${ROUNDS:-2}); do for row in ${ROWS:?}; do
    IFS=: read -r m t p n <<< "$row"
    c=bench/configs/qwen2.5-0.5b.json; [ $m = l ] && c=bench/configs/llama-3.2-1b.json
    for v in "${variants[@]}"; do
        name=${v%%=*} envs=${v#*=} bin=$W
        [[ ",$envs," =~ ,BIN=([^,]*), ]] && bin=${BASH_REMATCH[1]} && envs=${envs/BIN=$bin/}
        step $name-$m$t-p$p-r$r ${envs//,/ } timeout 25 $bin bench -m $c --type $t -p $p -n ${n:-16}
    done
done; done
for f in /tmp/env_logs/*-r*.txt; do
    printf '%-34s %s | %s\n' "$(basename $f .txt)" "$(grep -m1 '^prefill' $f)" "$(grep -m1 '^decode' $f)"
done | sort -t- -k2 | tee $out/env_ab.txt
tar czf $out/env_ab.tar.gz -C /tmp env_logs
