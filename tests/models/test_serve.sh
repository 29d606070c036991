#!/usr/bin/env bash
# wgt serve against wgt generate on the default model, through plain HTTP (serve_check.py, Python's
# standard library): greedy completions and chat replies equal what wgt generate gives for the
# same prompt (chat: the chatml rendering from wgt tokenize --chat), streamed text equals the whole
# answer, a seeded sampled reply equals wgt generate's, so does a greedy one under frequency and
# presence penalties (each of its tokens also recomputed from the logprobs), concurrent requests
# (batched decode) each equal their sequential result; bad requests get the right status and OpenAI's error JSON (bad
# types, huge bodies, bad keys, over-long prompts, unknown model, 1,000 random bodies), a full queue
# gives 429, clients that go away mid-stream or mid-answer cancel their requests, every /metrics name
# has its HELP and TYPE lines, and the server keeps serving. The first server prefills 3 prompt
# tokens a step (--chunk 3), so every prompt is split and, under concurrent requests, its chunks run
# between other sequences' decode steps: each reply must still equal wgt generate's.
# The official `openai` npm client (tests/models/openai: pinned by its package-lock.json, installed
# by make deps or here with npm ci) makes the same greedy checks, runs 8 concurrent streams against
# the same requests one at a time, and sees the server's errors as its own error classes.
# Then a second server with --timeout and --cors, stopped with requests in flight; --parallel past
# WGT_MEMORY_LIMIT is refused naming the slots' caches.
set -u
wgt=${WGT_BIN:?} root=${WGT_ROOT:?}
model=$root/models/bible-llama
. "$root/tests/models/serve_start.sh"
command -v python3 >/dev/null || { echo "FAIL: python3 is missing (make deps installs it)"; exit 1; }
command -v node >/dev/null || { echo "FAIL: node is missing (make deps installs it)"; exit 1; }
oai=$root/tests/models/openai
if [ ! -f "$oai/node_modules/openai/package.json" ]; then
    (cd "$oai" && npm ci --no-audit --no-fund --silent) ||
        { echo "FAIL: npm ci in tests/models/openai failed (make deps installs the openai client)"; exit 1; }
fi
n=8
p1="In the beginning God created"
p2="And Moses said unto the LORD,"
msg="Who made the heavens?"

gen() { "$wgt" generate -m "$model" "$@" 2>"$tmp/gen.err" || { cat "$tmp/gen.err" >&2; exit 1; }; }
# wgt generate prints the prompt, the continuation and a newline
g1=$(gen -p "$p1" -n $n --temp 0); g1=${g1#"$p1"}
g2=$(gen -p "$p2" -n $n --temp 0); g2=${g2#"$p2"}
gs=$(gen -p "$p1" -n $n --temp 0.9 --top-k 40 -s 5); gs=${gs#"$p1"}
gs2=$(gen -p "$p1" -n $n --temp 0.9 --top-p 0.8 --min-p 0.05 --repeat-penalty 1.3 -s 7); gs2=${gs2#"$p1"}
# greedy under OpenAI's penalties (serve_check.py also recomputes each step from the logprobs)
np=16 fp=1.5 pp=0.5
gp=$(gen -p "$p1" -n $np --temp 0 --frequency-penalty $fp --presence-penalty $pp); gp=${gp#"$p1"}
ids=$("$wgt" tokenize -t "$model" --chat --template chatml "$msg" | tr ' ' ',')
gc=$(gen --prompt-ids "$ids" -n $n --temp 0)
python3 - "$tmp/oracle.json" "$p1" "$g1" "$p2" "$g2" "$gs" "$msg" "$gc" $n "$gp" $np $fp $pp "$gs2" <<'EOF'
import json, sys
out, p1, g1, p2, g2, gs, msg, gc, n, gp, np, fp, pp, gs2 = sys.argv[1:]
json.dump({"prompts": [p1, p2], "generate": {p1: g1, p2: g2}, "sampled": gs, "sampled2": gs2, "chat_message": msg,
           "penalised": gp, "n_penalised": int(np), "penalties": [float(fp), float(pp)],
           "chat_generate": gc, "n": int(n), "ctx": 512, "max_queue": 2, "parallel": 8}, open(out, "w"))
EOF

# start: the port it got is in its first line on stderr
start() { serve_start "$tmp/serve.err" -m "$model" "$@"; }
stop() {
    kill "$pid" && wait "$pid"
    local rc=$?
    pid=
    return $rc
}
fail=0
key=k-$RANDOM-$RANDOM-secret
start --parallel 8 --max-queue 2 --api-key "$key" --chunk 3
python3 "$root/tests/models/serve_check.py" main "$port" "$key" "$tmp/oracle.json" || fail=1
node "$oai/check.mjs" main "$port" "$key" "$tmp/oracle.json" || fail=1
stop || { echo "FAIL: the server did not stop cleanly"; fail=1; }
grep -q "stopping" "$tmp/serve.err" || { echo "FAIL: no clean stop"; cat "$tmp/serve.err"; fail=1; }

start --parallel 1 --timeout 2 --cors http://example.test
python3 "$root/tests/models/serve_check.py" limits "$port" "" "$tmp/oracle.json" || fail=1
node "$oai/check.mjs" limits "$port" "" "$tmp/oracle.json" || fail=1
# stopping answers the requests in flight (one generating, one queued) with a 503
for i in 1 2; do
    curl -s "http://127.0.0.1:$port/v1/completions" -d '{"prompt": "In", "max_tokens": 400, "ignore_eos": true}' \
        >"$tmp/inflight$i" &
done
sleep 1 # (less than the --timeout of 2 s)
stop || { echo "FAIL: the server did not stop cleanly"; fail=1; }
wait
for i in 1 2; do
    grep -q '"the server is shutting down"' "$tmp/inflight$i" ||
        { echo "FAIL: a request in flight at the stop got: $(cat "$tmp/inflight$i")"; fail=1; }
done

# bad command lines are refused before the model loads
for bad in "--port 70000" "--parallel 0" "--host not-an-address" "--timeout -1" "--api-key="; do
    # shellcheck disable=SC2086
    if "$wgt" serve -m "$model" $bad 2>/dev/null; then echo "FAIL: wgt serve $bad was accepted"; fail=1; fi
done
# the memory check before loading counts the slots' caches, not a model cache serve does not make:
# 200 caches of 512 tokens (0.84 GB) do not fit 500 MB, refused with the numbers
if WGT_MEMORY_LIMIT=500M "$wgt" serve -m "$model" --port 0 --parallel 200 2>"$tmp/mem.err"; then
    echo "FAIL: 200 slots past WGT_MEMORY_LIMIT were accepted"; fail=1
fi
grep -q "KV cache [0-9.]* GB for 200 caches of 512 tokens.*WGT_MEMORY_LIMIT allows.*--parallel" "$tmp/mem.err" ||
    { echo "FAIL: the memory refusal: $(cat "$tmp/mem.err")"; fail=1; }
[ $fail = 0 ] && echo "serve: ok"
exit $fail
