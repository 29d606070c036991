#!/usr/bin/env python3
"""Load generator for `wgt serve` (or any OpenAI-compatible server): at each concurrency level,
that many clients each send streamed /v1/completions requests back to back (a prompt of about
--prompt-tokens tokens, --max-tokens new ones, ignore_eos so every reply has the same length)
for --requests rounds. Prints per level: aggregate decode tok/s (completion tokens of all
requests / wall time), median and 90th-percentile time to first token, per-stream tok/s.
Python's standard library only (Debian has no `openai` client package).

    wgt serve -m MODEL --parallel 64 -c 1024 &
    python3 tools/serve_bench.py --port 8080 --concurrency 1,8,32,64 --json out.json
"""
import argparse
import http.client
import json
import statistics
import sys
import threading
import time


def one_request(args, prompt):
    """(time to first text, total seconds, completion tokens) of one streamed request."""
    c = http.client.HTTPConnection(args.host, args.port, timeout=3600)
    headers = {"Content-Type": "application/json"}
    if args.api_key:
        headers["Authorization"] = "Bearer " + args.api_key
    body = dict(prompt=prompt, max_tokens=args.max_tokens, temperature=args.temperature, ignore_eos=True,
                stream=True, stream_options={"include_usage": True})
    if args.model:
        body["model"] = args.model
    t0 = time.perf_counter()
    c.request("POST", "/v1/completions", body=json.dumps(body), headers=headers)
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError(f"status {r.status}: {r.read()[:300]!r}")
    first, tokens = None, 0
    while True:
        line = r.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data: ") or line == b"data: [DONE]":
            continue
        ev = json.loads(line[6:])
        if first is None and ev.get("choices") and ev["choices"][0].get("text"):
            first = time.perf_counter() - t0
        if ev.get("usage"):
            tokens = ev["usage"]["completion_tokens"]
    total = time.perf_counter() - t0
    c.close()
    return first if first is not None else total, total, tokens


def level(args, n):
    if args.byte_tokens:  # tools/synthetic_tokenizer.py: one token per byte, no BOS
        prompt = "x" * max(1, args.prompt_tokens)
    else:
        prompt = " ".join(["the"] * max(1, args.prompt_tokens - 1))  # about one token a word (+ BOS)
    results, errors = [], []

    def client(i):
        for _ in range(args.requests):
            try:
                results.append(one_request(args, prompt))
            except Exception as e:  # noqa: BLE001 (reported, not fatal)
                errors.append(str(e))

    one_request(args, prompt)  # warm-up: kernels compiled, caches filled
    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    ttft = sorted(r[0] for r in results)
    tokens = sum(r[2] for r in results)
    per_stream = [r[2] / max(r[1] - r[0], 1e-9) for r in results if r[2] > 1]
    return {
        "concurrency": n,
        "requests": len(results),
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "completion_tokens": tokens,
        "wall_s": wall,
        "aggregate_tok_s": tokens / wall if wall > 0 else 0,
        "ttft_median_s": statistics.median(ttft) if ttft else None,
        "ttft_p90_s": ttft[int(0.9 * (len(ttft) - 1))] if ttft else None,
        "per_stream_tok_s": statistics.median(per_stream) if per_stream else None,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--api-key", default=None)
    ap.add_argument("--model", default=None, help="the model name to send (default: none)")
    ap.add_argument("--concurrency", default="1,8,32,64", help="comma-separated levels")
    ap.add_argument("--requests", type=int, default=2, help="requests per client per level")
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--byte-tokens", action="store_true",
                    help="the server's tokenizer is tools/synthetic_tokenizer.py's (a prompt of N bytes is N tokens)")
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    args = ap.parse_args()
    rows = []
    print("| streams | requests | aggregate tok/s | per-stream tok/s | TTFT median s | TTFT p90 s | errors |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for n in [int(x) for x in args.concurrency.split(",") if x]:
        r = level(args, n)
        rows.append(r)
        fmt = lambda v, f: "-" if v is None else f.format(v)  # noqa: E731
        print(f"| {n} | {r['requests']} | {r['aggregate_tok_s']:.1f} | {fmt(r['per_stream_tok_s'], '{:.1f}')} | "
              f"{fmt(r['ttft_median_s'], '{:.3f}')} | {fmt(r['ttft_p90_s'], '{:.3f}')} | {r['errors']} |", flush=True)
        if r["first_error"]:
            print("  first error:", r["first_error"], file=sys.stderr)
    if rows and rows[0]["concurrency"] == 1 and rows[0]["aggregate_tok_s"] > 0:
        for r in rows[1:]:
            print(f"{r['concurrency']} streams: {r['aggregate_tok_s'] / rows[0]['aggregate_tok_s']:.2f} x one stream")
    if args.json:
        json.dump(dict(args=vars(args), levels=rows), open(args.json, "w"), indent=1)
    return 1 if any(r["errors"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
