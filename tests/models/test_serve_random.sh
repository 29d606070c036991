#!/usr/bin/env bash
# A random-weight model served from a config.json alone (how tools/serve_bench.py measures a real
# shape without its weights): the tokenizer beside the config (tools/synthetic_tokenizer.py: one
# token per byte, the other ids words) is used, so text prompts work and replies stream token by
# token; byte tokens decode to invalid UTF-8, which must still leave every event strict JSON (U+FFFD
# for what is not UTF-8). --type picks the random weights' type and is refused for real weights.
set -u
wgt=${WGT_BIN:?} root=${WGT_ROOT:?}
. "$root/tests/models/serve_start.sh"
fail=0
python3 "$root/tools/synthetic_tokenizer.py" "$root/tests/fixtures/hf/llama/config.json" "$tmp/m" >/dev/null || exit 1

# The tokenizer: a byte is a token, in byte order (GPT-2's byte alphabet), no merges.
got=$("$wgt" tokenize -t "$tmp/m" "Aé z" 2>&1)
want=$(python3 -c 'print(" ".join(str(b) for b in "Aé z".encode()))')
[ "$got" = "$want" ] || { echo "FAIL: tokenize gave '$got', want '$want'"; fail=1; }

"$wgt" serve -m "$root/models/bible-llama" --type q8_0 --port 0 >/dev/null 2>"$tmp/type.err"
rc=$?
if [ $rc != 2 ] || ! grep -q "config.json alone" "$tmp/type.err"; then
    echo "FAIL: --type with real weights: exit $rc: $(cat "$tmp/type.err")"; fail=1
fi

serve_start "$tmp/serve.err" -m "$tmp/m/config.json" --parallel 2 -c 256
grep -q "no tokenizer" "$tmp/serve.err" && { echo "FAIL: the tokenizer beside the config was not used"; fail=1; }
curl -s -N "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt": "In the beginning", "max_tokens": 24, "ignore_eos": true, "temperature": 0, "stream": true,
         "stream_options": {"include_usage": true}}' >"$tmp/stream.txt"
python3 - "$tmp/stream.txt" <<'PY' || fail=1
import json, sys
raw = open(sys.argv[1], "rb").read()
events = [l[6:] for l in raw.split(b"\n") if l.startswith(b"data: ") and l != b"data: [DONE]"]
texts, usage = [], None
for e in events:
    j = json.loads(e.decode("utf-8", errors="strict"))  # strict: every event is UTF-8 JSON
    for c in j.get("choices", []):
        if c.get("text"):
            texts.append(c["text"])
    usage = j.get("usage") or usage
if not usage or usage["completion_tokens"] != 24:
    sys.exit(f"FAIL: usage {usage}, want 24 completion tokens")
if len(texts) < 8:
    sys.exit(f"FAIL: {len(texts)} text events for 24 tokens: the reply did not stream token by token")
if not raw.rstrip().endswith(b"data: [DONE]"):
    sys.exit("FAIL: the stream does not end with data: [DONE]")
print(f"serve random: {len(events)} events, {len(texts)} with text, all strict UTF-8 JSON")
PY
kill "$pid"; wait "$pid" 2>/dev/null; pid=
[ $fail = 0 ] && echo "serve random: ok"
exit $fail
