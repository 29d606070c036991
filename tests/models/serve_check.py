"""Checks of a running `wgt serve` over plain HTTP (Python's standard library: Debian has no
`openai` client package). Called by test_serve.sh with the server's port, the API key, and the
texts `wgt generate` gave for the same requests (the oracle). Prints one line per failed check;
exits non-zero when any failed."""
import http.client
import json
import random
import socket
import sys
import threading
import time

mode, port, key, oracle_path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
oracle = json.load(open(oracle_path))
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what, flush=True)
    return cond


def request(method, path, body=None, headers=None, auth=True, raw=None):
    """(status, parsed JSON or text, headers) of one request on a fresh connection."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    h = {"Content-Type": "application/json"}
    if auth:
        h["Authorization"] = "Bearer " + key
    h.update(headers or {})
    data = raw if raw is not None else (json.dumps(body) if body is not None else None)
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    text = r.read().decode("utf-8", "replace")
    c.close()
    try:
        return r.status, json.loads(text), r
    except ValueError:
        return r.status, text, r


def complete(prompt, **kw):
    st, j, _ = request("POST", "/v1/completions", dict(prompt=prompt, **kw))
    check(st == 200, f"completion of {prompt!r}: status {st}: {j}")
    return j


def stream(path, body, first_only=False):
    """The events of a streamed request: a list of parsed JSON chunks, ending with "[DONE]"."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", path, body=json.dumps(dict(body, stream=True)),
              headers={"Content-Type": "application/json", "Authorization": "Bearer " + key})
    r = c.getresponse()
    check(r.status == 200, f"stream {body}: status {r.status}")
    check(r.getheader("Content-Type", "").startswith("text/event-stream"), "stream content type")
    events = []
    while True:
        line = r.readline()
        if not line:
            break
        line = line.decode().rstrip("\r\n")
        if not line:
            continue
        check(line.startswith("data: "), f"event line {line!r}")
        data = line[6:]
        events.append("[DONE]" if data == "[DONE]" else json.loads(data))
        if first_only and data != "[DONE]" and events[-1].get("choices") and \
                (events[-1]["choices"][0].get("text") or events[-1]["choices"][0].get("delta", {}).get("content")):
            return c, r, events
    c.close()
    return None, None, events


def stream_text(events, chat):
    key_ = (lambda ch: ch["delta"].get("content", "")) if chat else (lambda ch: ch["text"])
    return "".join(key_(e["choices"][0]) for e in events if e != "[DONE]" and e.get("choices"))


def metric(name):
    st, text, _ = request("GET", "/metrics")
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def main():
    # ---- the basics
    st, j, _ = request("GET", "/health", auth=False)
    check(st == 200 and j == {"status": "ok"}, f"/health: {st} {j}")
    st, j, _ = request("GET", "/v1/models")
    check(st == 200 and j["data"][0]["id"] == "bible-llama", f"/v1/models: {st} {j}")

    # ---- greedy completions equal wgt generate's
    seq, n_prompt = {}, {}
    for p in oracle["prompts"]:
        j = complete(p, max_tokens=oracle["n"], temperature=0)
        seq[p] = j["choices"][0]["text"]
        n_prompt[p] = j["usage"]["prompt_tokens"]
        check(seq[p] == oracle["generate"][p], f"completion of {p!r}: {seq[p]!r}, wgt generate: {oracle['generate'][p]!r}")
        u = j["usage"]
        check(u["completion_tokens"] <= oracle["n"] and u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"],
              f"usage {u}")
        check(j["choices"][0]["finish_reason"] in ("stop", "length"), f"finish_reason {j['choices'][0]}")

    # ---- streaming gives the same text in pieces, then [DONE]
    p0 = oracle["prompts"][0]
    _, _, ev = stream("/v1/completions", dict(prompt=p0, max_tokens=oracle["n"], temperature=0,
                                              stream_options={"include_usage": True}))
    check(ev and ev[-1] == "[DONE]", "stream ends with data: [DONE]")
    check(stream_text(ev, False) == seq[p0], f"stream {stream_text(ev, False)!r} != {seq[p0]!r}")
    check(any(e != "[DONE]" and e.get("usage") for e in ev), "include_usage sends a usage chunk")
    check(sum(1 for e in ev if e != "[DONE]" and e.get("choices") and e["choices"][0]["text"]) >= 2,
          "the text comes in several chunks")

    # ---- chat: equals wgt generate over the chatml rendering; streamed equals whole
    msgs = [{"role": "user", "content": oracle["chat_message"]}]
    st, j, _ = request("POST", "/v1/chat/completions", dict(messages=msgs, max_tokens=oracle["n"], temperature=0))
    check(st == 200 and j["object"] == "chat.completion", f"chat: {st} {j}")
    chat_text = j["choices"][0]["message"]["content"] if st == 200 else None
    check(chat_text == oracle["chat_generate"], f"chat {chat_text!r}, wgt generate {oracle['chat_generate']!r}")
    _, _, ev = stream("/v1/chat/completions", dict(messages=msgs, max_tokens=oracle["n"], temperature=0))
    check(ev and ev[0] != "[DONE]" and ev[0]["choices"][0]["delta"].get("role") == "assistant", "chat stream starts with the role")
    check(stream_text(ev, True) == chat_text, f"chat stream {stream_text(ev, True)!r} != {chat_text!r}")

    # ---- seeded sampling: the same seed gives the same text, as wgt generate draws it
    samp = dict(max_tokens=oracle["n"], temperature=0.9, top_k=40, seed=5)
    a = complete(p0, **samp)["choices"][0]["text"]
    b = complete(p0, **samp)["choices"][0]["text"]
    check(a == b, f"seed 5 twice: {a!r} vs {b!r}")
    check(a == oracle["sampled"], f"sampled {a!r}, wgt generate --temp 0.9 --top-k 40 -s 5: {oracle['sampled']!r}")

    # ---- stop strings and max_tokens
    full = seq[p0]
    words = [w for w in full.split(" ") if w]
    if check(len(words) >= 3, f"greedy text too short for the stop test: {full!r}"):
        stop = " " + words[2]
        cut = full[:full.index(stop)]
        j = complete(p0, max_tokens=oracle["n"], temperature=0, stop=[stop, "zzzz-never"])
        check(j["choices"][0]["text"] == cut and j["choices"][0]["finish_reason"] == "stop",
              f"stop {stop!r}: {j['choices'][0]} (want {cut!r})")
        _, _, ev = stream("/v1/completions", dict(prompt=p0, max_tokens=oracle["n"], temperature=0, stop=stop))
        check(stream_text(ev, False) == cut, f"streamed stop {stop!r}: {stream_text(ev, False)!r}")
    j = complete(p0, max_tokens=1, temperature=0)
    check(j["usage"]["completion_tokens"] == 1 and j["choices"][0]["finish_reason"] == "length", f"max_tokens 1: {j}")

    # ---- logprobs: the drawn (greedy) token is the most likely, its pieces make the text, streamed = whole
    j = complete(p0, max_tokens=oracle["n"], temperature=0, logprobs=3)
    lp = j["choices"][0]["logprobs"]
    check("".join(lp["tokens"]) == seq[p0], f"logprob tokens {lp['tokens']} make {seq[p0]!r}")
    for t, l, top in zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"]):
        best = max(top.values())
        check(l <= 0 and len(top) <= 3 and abs(best - l) < 1e-6 and top.get(t) == l,
              f"greedy token {t!r} logprob {l} is not the best of {top}")
        check(sum(2.718281828459045 ** v for v in top.values()) <= 1 + 1e-5, f"top logprobs sum past 1: {top}")
    _, _, ev = stream("/v1/completions", dict(prompt=p0, max_tokens=oracle["n"], temperature=0, logprobs=3))
    slp = [x for e in ev if e != "[DONE]" and e.get("choices") and e["choices"][0]["logprobs"]
           for x in e["choices"][0]["logprobs"]["token_logprobs"]]
    check(slp == lp["token_logprobs"], f"streamed logprobs {slp} != {lp['token_logprobs']}")
    st, j, _ = request("POST", "/v1/chat/completions", dict(messages=msgs, max_tokens=oracle["n"], temperature=0,
                                                            logprobs=True, top_logprobs=2))
    content = j["choices"][0]["logprobs"]["content"] if st == 200 else []
    check(len(content) == j["usage"]["completion_tokens"] and
          all(c["top_logprobs"][0]["token"] == c["token"] and len(c["top_logprobs"]) == 2 and
              bytes(c["bytes"]).decode("utf-8", "replace") == c["token"] for c in content),
          f"chat logprobs {content}")
    bad_lp = request("POST", "/v1/chat/completions", dict(messages=msgs, top_logprobs=2))[0]
    check(bad_lp == 400, f"top_logprobs without logprobs: {bad_lp}")

    # ---- frequency and presence penalties (OpenAI's: logit - count * f - (count > 0) * p over the reply's
    # tokens so far): each greedy token is the argmax of the penalised log-probabilities, computed here
    # from the returned ones (the model's, before the penalties) over the 20 most likely; the reply
    # equals wgt generate's with the same penalties and differs from the unpenalised one
    fp, pp = oracle["penalties"]
    pen = dict(max_tokens=oracle["n_penalised"], temperature=0, frequency_penalty=fp, presence_penalty=pp)
    j = complete(p0, logprobs=20, **pen)
    lp = j["choices"][0]["logprobs"]
    text = j["choices"][0]["text"]
    check(text == oracle["penalised"], f"penalised {text!r}, wgt generate --frequency-penalty {fp} --presence-penalty {pp}: "
          f"{oracle['penalised']!r}")
    plain = complete(p0, max_tokens=oracle["n_penalised"], temperature=0)["choices"][0]["text"]
    check(text != plain, f"the penalties changed nothing: {text!r}")
    for t, tok in enumerate(lp["tokens"]):
        count = {}
        for x in lp["tokens"][:t]:
            count[x] = count.get(x, 0) + 1
        top = lp["top_logprobs"][t]
        score = {x: l - count.get(x, 0) * fp - (count.get(x, 0) > 0) * pp for x, l in top.items()}
        best = max(score.values())
        # with penalties >= 0 no token outside the top 20 (logprob <= the 20th's) can score above it
        check(tok in score and score[tok] >= best - 1e-4 and score[tok] >= min(top.values()) - 1e-4,
              f"penalised step {t}: drew {tok!r} ({score.get(tok)}), the penalised best is {best} of {score}")
    st, j, _ = request("POST", "/v1/completions", dict(prompt=p0, frequency_penalty=2.5))
    check(st == 400 and j["error"]["param"] == "frequency_penalty", f"frequency_penalty 2.5: {st} {j}")

    # ---- nucleus, min-p and repetition penalty as wgt generate draws them; an unknown field is ignored
    samp2 = dict(max_tokens=oracle["n"], temperature=0.9, top_p=0.8, min_p=0.05, repetition_penalty=1.3, seed=7)
    a = complete(p0, **samp2)["choices"][0]["text"]
    check(a == oracle["sampled2"], f"sampled {a!r}, wgt generate --temp 0.9 --top-p 0.8 --min-p 0.05 "
          f"--repeat-penalty 1.3 -s 7: {oracle['sampled2']!r}")
    st, j, _ = request("POST", "/v1/completions", dict(prompt=p0, not_an_openai_field={"x": [1, 2]}, **samp2))
    check(st == 200 and j["choices"][0]["text"] == oracle["sampled2"], f"an unknown field: {st} {j}")

    # ---- a second chat turn reuses the first turn's cache (its prompt extends the first's)
    turn1 = [{"role": "user", "content": oracle["chat_message"]}]
    st, j, _ = request("POST", "/v1/chat/completions", dict(messages=turn1, max_tokens=oracle["n"], temperature=0))
    if check(st == 200, f"chat turn 1: {st} {j}"):
        n1 = j["usage"]["prompt_tokens"]
        turn2 = turn1 + [{"role": "assistant", "content": j["choices"][0]["message"]["content"]},
                         {"role": "user", "content": "And then?"}]
        r0 = metric("wgt_prompt_tokens_reused_total")
        st, j, _ = request("POST", "/v1/chat/completions", dict(messages=turn2, max_tokens=2, temperature=0))
        r1 = metric("wgt_prompt_tokens_reused_total")
        # the first turn's prompt at least, but for the token where its reply was joined on
        check(st == 200 and r1 - r0 >= n1 - 1 and r1 - r0 < j["usage"]["prompt_tokens"],
              f"chat turn 2 reused {r1 - r0} tokens of {j['usage']['prompt_tokens'] if st == 200 else '?'}, "
              f"want at least turn 1's {n1} - 1")

    # ---- prefix reuse: the same prompt again computes only its last token
    r0 = metric("wgt_prompt_tokens_reused_total")
    complete(p0, max_tokens=1, temperature=0)
    r1 = metric("wgt_prompt_tokens_reused_total")
    check(r1 - r0 == n_prompt[p0] - 1, f"prefix reuse: {r1 - r0} tokens reused, want {n_prompt[p0] - 1}")

    # ---- concurrent requests (batched decode) give each the text it gets alone
    results = {}


    def worker(i, p):
        if i % 2:
            _, _, ev = stream("/v1/completions", dict(prompt=p, max_tokens=oracle["n"], temperature=0))
            results[i] = stream_text(ev, False)
        else:
            results[i] = complete(p, max_tokens=oracle["n"], temperature=0)["choices"][0]["text"]


    ps = oracle["prompts"]
    threads = [threading.Thread(target=worker, args=(i, ps[i % len(ps)])) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(8):
        check(results.get(i) == seq[ps[i % len(ps)]], f"concurrent request {i}: {results.get(i)!r}, alone {seq[ps[i % len(ps)]]!r}")

    # ---- bad requests: the right status and OpenAI's error shape; the server keeps serving
    def bad(body, code, what, path="/v1/completions", raw=None, **kw):
        st, j, _ = request("POST", path, body, raw=raw, **kw)
        ok = check(st == code, f"{what}: status {st}, want {code}: {j}")
        if ok:
            check(isinstance(j, dict) and isinstance(j.get("error"), dict) and j["error"].get("message") and
                  j["error"].get("type"), f"{what}: error JSON {j}")


    bad(None, 400, "malformed JSON", raw="{\"prompt\": ")
    bad(None, 400, "not an object", raw="[1, 2]")
    bad(dict(prompt=p0, max_tokens="8"), 400, "max_tokens a string")
    bad(dict(prompt=p0, temperature="hot"), 400, "temperature a string")
    bad(dict(prompt=p0, temperature=-1), 400, "temperature below 0")
    bad(dict(prompt=p0, stream="yes"), 400, "stream a string")
    bad(dict(prompt=p0, stop=[1]), 400, "stop holding a number")
    bad(dict(prompt=p0, n=2), 400, "n = 2")
    st, j, _ = request("POST", "/v1/completions", dict(prompt=p0, n=2))
    check("only 1 is served" in str(j), f"n = 2: the message says only n = 1 is served: {j}")
    bad(dict(prompt=p0, seed=1.5), 400, "a fractional seed")
    bad(dict(prompt=[1, -5]), 400, "a negative token id")
    bad(dict(max_tokens=4), 400, "no prompt")
    bad(dict(messages="hi"), 400, "messages a string", path="/v1/chat/completions")
    bad(dict(messages=[{"role": "user", "content": 5}]), 400, "content a number", path="/v1/chat/completions")
    bad(dict(messages=[{"role": "wizard", "content": "x"}]), 400, "an unknown role", path="/v1/chat/completions")
    bad(dict(prompt=p0, model="gpt-4"), 404, "an unknown model")
    bad(dict(prompt=[1] * (oracle["ctx"] + 1)), 400, "a prompt longer than the context")
    st, j, _ = request("POST", "/v1/completions", dict(prompt=[1] * (oracle["ctx"] + 1)))
    check(st == 400 and j["error"].get("code") == "context_length_exceeded" and str(oracle["ctx"]) in j["error"]["message"],
          f"over-long prompt: the numbers in the message: {j}")
    bad(dict(prompt=p0), 401, "no API key", auth=False)
    bad(dict(prompt=p0), 401, "a wrong API key", auth=False, headers={"Authorization": "Bearer " + key[:-1] + "x"})
    bad(dict(prompt=p0), 401, "a key one byte longer", auth=False, headers={"Authorization": "Bearer " + key + "x"})
    # a body past --max-body, sent in chunks (no length announced): read, dropped, refused
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("POST", "/v1/completions", body=iter([b"{\"prompt\": \""] + [b"a" * 65536] * 40 + [b"\"}"]),
              headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"}, encode_chunked=True)
    r = c.getresponse()
    check(r.status == 413 and "error" in json.loads(r.read()), f"a chunked body of 2.5 MiB: {r.status}")
    c.close()
    st, _, _ = request("GET", "/v1/completions")
    check(st == 405, f"GET on a POST endpoint: {st}")
    st, _, _ = request("GET", "/nowhere")
    check(st == 404, f"an unknown path: {st}")

    # a declared huge body is refused before it is sent
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.putrequest("POST", "/v1/completions")
    c.putheader("Authorization", "Bearer " + key)
    c.putheader("Content-Length", str(1 << 30))
    c.endheaders()
    r = c.getresponse()
    check(r.status == 413, f"Content-Length of 1 GiB: {r.status}")
    c.close()

    # 1,000 random bodies, 8 at a time: each a 4xx with OpenAI's error JSON (or, for the rare one that
    # is a valid request, a 200 with a reply), never a crash
    rng = random.Random(1)
    pieces = ["{", "}", "[", "]", "\"prompt\"", "\"messages\"", ":", ",", "null", "true", "-1", "1e400", "\"x\"",
              "\"max_tokens\"", "\"stop\"", "\"temperature\"", "0", "\"\\u0000\"", "\xff", "\"role\"", "\"content\"",
              "\"frequency_penalty\"", "\"presence_penalty\"", "\"logprobs\"", "\"seed\"", "2.5", "\"\\ud800\"",
              "{\"prompt\": [", "{\"messages\": [{", "\"stream\"", "\"n\"", "1e-300", "-0", "\"top_k\""]
    bodies = []
    for i in range(1000):
        body = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        if i % 10 == 9:  # raw bytes too
            body = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64))).decode("latin-1")
        bodies.append(("/v1/completions" if i % 2 else "/v1/chat/completions",
                       body.encode("utf-8", "surrogateescape") if i % 10 != 9 else body.encode("latin-1")))

    def one_random(pb):
        path, raw = pb
        try:
            st, j, _ = request("POST", path, raw=raw)
        except Exception as ex:  # the connection failed: the server is down or hung
            return f"random body {raw!r}: {ex!r}"
        if 400 <= st < 500 and isinstance(j, dict) and isinstance(j.get("error"), dict) and \
                isinstance(j["error"].get("message"), str) and j["error"].get("type"):
            return None
        if st == 200 and (isinstance(j, dict) and j.get("choices") or isinstance(j, str) and j.startswith("data: ")):
            return None
        return f"random body {raw!r}: status {st}: {j!r}"

    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        bad_random = [m for m in pool.map(one_random, bodies) if m]
    for m in bad_random[:5]:
        check(False, m)
    check(not bad_random, f"{len(bad_random)} of {len(bodies)} random bodies got no proper answer")
    st, _, _ = request("GET", "/health", auth=False)
    check(st == 200, f"healthy after the random bodies: {st}")

    # ---- a full server: 429; clients that go away cancel their requests
    long = dict(prompt=p0, max_tokens=100000, temperature=0, ignore_eos=True)
    held = []
    for i in range(oracle["parallel"]):  # every slot busy
        c, r, ev = stream("/v1/completions", long, first_only=True)
        check(c is not None, f"long stream {i} started")
        held.append(c)
    queued = []


    def queued_request(i):
        queued.append(request("POST", "/v1/completions", dict(prompt=p0, max_tokens=1, temperature=0))[0])


    qt = [threading.Thread(target=queued_request, args=(i,)) for i in range(oracle["max_queue"])]
    for t in qt:
        t.start()
    for _ in range(100):
        if metric("wgt_queue_length") == oracle["max_queue"]:
            break
        time.sleep(0.1)
    check(metric("wgt_queue_length") == oracle["max_queue"], f"queue length {metric('wgt_queue_length')}")
    st, j, _ = request("POST", "/v1/completions", dict(prompt=p0, max_tokens=1))
    check(st == 429 and j["error"]["type"], f"a request past the queue: {st} {j}")
    c0 = metric("wgt_requests_cancelled_total")
    for c in held:  # the clients go away mid-stream
        c.sock.shutdown(socket.SHUT_RDWR)
        c.close()
    for t in qt:
        t.join()
    check(queued == [200] * oracle["max_queue"], f"queued requests after the cancellations: {queued}")
    for _ in range(100):
        if metric("wgt_slots_active") == 0:
            break
        time.sleep(0.1)
    check(metric("wgt_requests_cancelled_total") - c0 == oracle["parallel"], f"cancelled {metric('wgt_requests_cancelled_total') - c0}")
    check(metric("wgt_slots_active") == 0, "slots freed after the cancellations")

    # a whole (non-streamed) request whose client goes away while it generates: cancelled, slot freed
    c0 = metric("wgt_requests_cancelled_total")
    body = json.dumps(dict(prompt=p0, max_tokens=100000, temperature=0, ignore_eos=True)).encode()
    sk = socket.create_connection(("127.0.0.1", port))
    sk.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               b"Authorization: Bearer " + key.encode() + b"\r\nContent-Length: " + str(len(body)).encode() +
               b"\r\n\r\n" + body)
    for _ in range(100):
        if metric("wgt_slots_active") == 1:
            break
        time.sleep(0.05)
    check(metric("wgt_slots_active") == 1, "the non-streamed request is generating")
    sk.shutdown(socket.SHUT_RDWR)
    sk.close()
    for _ in range(200):
        if metric("wgt_slots_active") == 0:
            break
        time.sleep(0.05)
    check(metric("wgt_slots_active") == 0, "slot freed after a non-streamed client left")
    check(metric("wgt_requests_cancelled_total") - c0 == 1,
          f"a non-streamed client that left: cancelled {metric('wgt_requests_cancelled_total') - c0}")

    # ---- still healthy, still right
    st, _, _ = request("GET", "/health", auth=False)
    check(st == 200, "healthy at the end")
    check(complete(p0, max_tokens=oracle["n"], temperature=0)["choices"][0]["text"] == seq[p0], "same text at the end")
    st, text, _ = request("GET", "/metrics")
    check(st == 200 and "wgt_requests_total{endpoint=\"completions\",code=\"200\"}" in text and
          "# TYPE wgt_decode_tokens_per_second gauge" in text, "metrics text")
    # every metric, with its HELP and TYPE lines and a value
    names = {"wgt_requests_total": "counter", "wgt_prompt_tokens_total": "counter",
             "wgt_prompt_tokens_reused_total": "counter", "wgt_generated_tokens_total": "counter",
             "wgt_requests_rejected_total": "counter", "wgt_requests_cancelled_total": "counter",
             "wgt_requests_timed_out_total": "counter", "wgt_queue_length": "gauge", "wgt_slots_active": "gauge",
             "wgt_slots": "gauge", "wgt_prefill_tokens_per_second": "gauge", "wgt_decode_tokens_per_second": "gauge",
             "wgt_decode_tokens_per_second_last": "gauge"}
    lines = text.splitlines()
    for name, kind in names.items():
        check(any(l.startswith(f"# HELP {name} ") for l in lines), f"metrics: no HELP line for {name}")
        check(f"# TYPE {name} {kind}" in lines, f"metrics: no TYPE {kind} line for {name}")
        vals = [l for l in lines if l.startswith(name + " ") or l.startswith(name + "{")]
        check(len(vals) >= 1 and all(float(v.split()[-1]) >= 0 for v in vals), f"metrics: value of {name}: {vals}")
    typed = {l.split()[2] for l in lines if l.startswith("# TYPE ")}
    check(typed == set(names), f"metrics: names not checked here: {sorted(typed - set(names))}")
    check(metric("wgt_slots") == oracle["parallel"], "metrics: wgt_slots is --parallel")
    check(metric("wgt_prompt_tokens_reused_total") > 0, "metrics: reused prompt tokens counted")


def limits():
    """A second server: --timeout 2, --cors, no key."""
    st, _, r = request("OPTIONS", "/v1/chat/completions", auth=False,
                       headers={"Origin": "http://example.test", "Access-Control-Request-Method": "POST"})
    check(st == 204 and r.getheader("Access-Control-Allow-Origin") == "http://example.test" and
          "POST" in (r.getheader("Access-Control-Allow-Methods") or ""), f"CORS preflight: {st} {r.getheaders()}")
    st, j, r = request("GET", "/v1/models", auth=False)
    check(st == 200 and r.getheader("Access-Control-Allow-Origin") == "http://example.test", "CORS header on answers")
    long = dict(prompt=oracle["prompts"][0], max_tokens=100000, temperature=0, ignore_eos=True)
    t0 = time.time()
    st, j, _ = request("POST", "/v1/completions", long, auth=False)
    check(st == 504 and "timeout" in j["error"]["message"] + j["error"]["type"], f"past --timeout: {st} {j}")
    check(time.time() - t0 < 60, f"the time-out took {time.time() - t0:.0f} s")
    # two at once on the one slot: the queued one times out while it waits
    codes = []
    ts = [threading.Thread(target=lambda: codes.append(request("POST", "/v1/completions", long, auth=False)[0]))
          for _ in range(2)]
    t0 = time.time()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    check(codes == [504, 504] and time.time() - t0 < 60, f"generating and queued past --timeout: {codes}, "
          f"{time.time() - t0:.0f} s")
    _, _, ev = stream("/v1/completions", long)
    check(len(ev) >= 2 and ev[-1] == "[DONE]" and "error" in ev[-2], f"a stream past --timeout ends with an error event: {ev[-2:]}")
    st, _, _ = request("GET", "/health", auth=False)
    check(st == 200, "healthy after the time-outs")


main() if mode == "main" else limits()
print(f"serve: {failures} failed", flush=True)
sys.exit(1 if failures else 0)
