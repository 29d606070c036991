#!/usr/bin/env bash
# JSON mode end to end, judged by Python's json module (tests/models/json_check.py): `wgt generate
# --json` on the default model on both CPU adapters, greedy and sampled, writes text that is one
# JSON object where it says the object closed, and the start of one where -n cut it short; a model
# without a tokenizer is refused by name. Then `wgt serve`: response_format {"type": "json_object"}
# (chat and completions, whole and streamed, and beside a plain request in the same batched steps,
# which answers as it does alone) answers with one object when finish_reason is "stop" and the start
# of one at "length"; json_schema and unknown types are 400s naming response_format, and a plain
# request after them still answers.
set -u
wgt=${WGT_BIN:?} root=${WGT_ROOT:?}
model=$root/models/bible-llama.gguf
check=$root/tests/models/json_check.py
. "$root/tests/models/serve_start.sh"
command -v python3 >/dev/null || { echo "FAIL: python3 is missing (make deps installs it)"; exit 1; }
fail=0 closed=0 cut=0
p="The tribes of Israel, as JSON: "
for backend in vulkan opengles; do
    for args in "--temp 0" "--temp 1.5 -s 1" "--temp 1.2 -s 2" "--temp 1.0 --top-k 50 -s 3"; do
        # shellcheck disable=SC2086
        if ! WGT_BACKEND=$backend "$wgt" generate -m "$model" --json -p "$p" -n 48 $args >"$tmp/out" 2>"$tmp/err"; then
            echo "FAIL: generate --json $args on $backend exited non-zero:"; cat "$tmp/err"; fail=1; continue
        fi
        python3 -c 'import sys; t=open(sys.argv[1],"rb").read(); p=sys.argv[2].encode(); assert t.startswith(p) and t.endswith(b"\n"); open(sys.argv[1],"wb").write(t[len(p):-1])' \
            "$tmp/out" "$p" || { echo "FAIL: $backend $args: the output does not hold the prompt"; fail=1; continue; }
        how=complete
        grep -q "the object is not closed" "$tmp/err" && how=prefix
        [ $how = complete ] && closed=$((closed + 1)) || cut=$((cut + 1))
        python3 "$check" $how "$tmp/out" || { echo "FAIL: generate --json $args on $backend ($how)"; fail=1; }
        echo "$backend $args: $how: $(head -c 120 "$tmp/out" | tr '\n' ' ')"
    done
done
[ $closed -gt 0 ] || { echo "FAIL: no generation closed its object"; fail=1; }
# no tokenizer: refused by name before anything is drawn
if "$wgt" generate -m "$root/bench/configs/qwen2.5-0.5b.json" --json -p x -n 2 >/dev/null 2>"$tmp/err" ||
    ! grep -q -- "--json needs the model's tokenizer" "$tmp/err"; then
    echo "FAIL: --json without a tokenizer:"; cat "$tmp/err"; fail=1
fi

serve_start "$tmp/serve.err" -m "$model" --parallel 2
python3 - "$port" "$check" "$tmp" <<'PY' || fail=1
import http.client, json, subprocess, sys
port, check, tmp = sys.argv[1:]
bad = 0

def post(path, body):
    c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=600)
    c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    text = r.read().decode("utf-8")
    c.close()
    return r.status, text

def judge(text, finish, what):
    global bad
    open(f"{tmp}/answer", "w", encoding="utf-8").write(text)
    how = "complete" if finish == "stop" else "prefix"
    ok = finish in ("stop", "length") and subprocess.run(["python3", check, how, f"{tmp}/answer"]).returncode == 0
    print(f"serve {what}: {finish}: {text[:100]!r}")
    if not ok:
        bad += 1
        print(f"FAIL: serve {what}: finish_reason {finish}")

rf = {"type": "json_object"}
for temp, seed in ((0, 1), (1.3, 4)):
    st, t = post("/v1/chat/completions", {"messages": [{"role": "user", "content": "Give the twelve tribes as JSON."}],
                                          "response_format": rf, "max_tokens": 40, "temperature": temp, "seed": seed})
    j = json.loads(t)
    if st != 200:
        bad += 1; print("FAIL: chat json_object:", st, t); continue
    judge(j["choices"][0]["message"]["content"], j["choices"][0]["finish_reason"], f"chat temp {temp}")
st, t = post("/v1/completions", {"prompt": "JSON: ", "response_format": rf, "max_tokens": 40, "temperature": 0})
j = json.loads(t)
if st == 200:
    judge(j["choices"][0]["text"], j["choices"][0]["finish_reason"], "completion")
else:
    bad += 1; print("FAIL: completion json_object:", st, t)
# streamed: the pieces joined
st, t = post("/v1/completions", {"prompt": "JSON: ", "response_format": rf, "max_tokens": 40, "temperature": 1.4,
                                 "seed": 9, "stream": True})
text, finish = "", None
for line in t.splitlines():
    if line.startswith("data: ") and line != "data: [DONE]":
        ev = json.loads(line[6:])
        for ch in ev.get("choices", []):
            text += ch.get("text", "")
            finish = ch.get("finish_reason") or finish
judge(text, finish, "streamed completion")
# a JSON request and a plain one in the same batched steps: the plain one answers as it does alone
import threading
plain = {"prompt": "In the beginning God created", "max_tokens": 12, "temperature": 0}
st0, alone = post("/v1/completions", plain)
res = {}
def run(k, body):
    res[k] = post("/v1/completions", body)
ts = [threading.Thread(target=run, args=("json", {"prompt": "JSON: ", "response_format": rf, "max_tokens": 30,
                                                  "temperature": 0})),
      threading.Thread(target=run, args=("plain", plain))]
for t_ in ts: t_.start()
for t_ in ts: t_.join()
if st0 != 200 or res["plain"][0] != 200 or json.loads(res["plain"][1])["choices"][0]["text"] != json.loads(alone)["choices"][0]["text"]:
    bad += 1
    print("FAIL: a plain request beside a JSON one:", res.get("plain"), alone[:200])
jj = json.loads(res["json"][1])
judge(jj["choices"][0]["text"], jj["choices"][0]["finish_reason"], "completion beside a plain one")
for body, what in (({"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}, "json_schema"),
                   ({"type": "yaml"}, "an unknown type"), ("json", "a string"), ({"kind": "text"}, "no type")):
    st, t = post("/v1/completions", {"prompt": "x", "response_format": body, "max_tokens": 2})
    try:
        err = json.loads(t)["error"]
    except (ValueError, KeyError, TypeError):
        err = {}
    if st != 400 or err.get("param") != "response_format":
        bad += 1
        print(f"FAIL: response_format {what}: {st} {t[:200]}")
st, t = post("/v1/completions", {"prompt": "In the beginning", "max_tokens": 4, "temperature": 0,
                                 "response_format": {"type": "text"}})
if st != 200 or not json.loads(t)["choices"][0]["text"]:
    bad += 1
    print("FAIL: a plain request after the JSON ones:", st, t[:200])
sys.exit(1 if bad else 0)
PY
kill "$pid" && wait "$pid" 2>/dev/null
pid=
echo "generate: $closed closed, $cut cut short by -n"
[ $fail = 0 ] && echo "json mode: ok"
exit $fail
