#!/usr/bin/env python3
"""Cases for test_json_constraint: JSON texts and Python's verdict on each, one a line:
"1 HEX" when the bytes are one JSON object as wgt's constraint defines it (Python's json.loads of
the bytes decoded as strict UTF-8 succeeds and gives a dict; no NaN/Infinity; no whitespace
before or after it; at most 24 whitespace bytes in a row), "0 HEX" otherwise. Random objects (nested values,
strings with escapes and non-ASCII text, numbers of every form, literals, whitespace), written by
this script and by json.dumps, then mutated (a byte deleted, inserted, replaced; truncated)."""
import json
import random
import sys

rng = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
WS = [b" ", b"\t", b"\n", b"\r"]
CHARS = ["a", "Z", " ", "\u00e9", "\u4e2d", "\U0001f600", "\u2028", "\x7f", "~", "0", "'"]
ESC = ['\\"', "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t", "\\u00e9", "\\uD83D\\uDE00", "\\u0000", "\\uABCD"]


def ws():
    return b"".join(rng.choice(WS) for _ in range(rng.choice([0, 0, 0, 1, 2, 3])))


def string():
    parts = []
    for _ in range(rng.randint(0, 6)):
        parts.append(rng.choice(ESC) if rng.random() < 0.3 else rng.choice(CHARS))
    return b'"' + "".join(parts).encode("utf-8") + b'"'


def number():
    s = rng.choice(["", "-"]) + rng.choice(["0", str(rng.randint(1, 9)), str(rng.randint(10, 99999))])
    if rng.random() < 0.4:
        s += "." + str(rng.randint(0, 999))
    if rng.random() < 0.3:
        s += rng.choice("eE") + rng.choice(["", "+", "-"]) + str(rng.randint(0, 30))
    return s.encode()


def value(depth):
    r = rng.random()
    if depth < 5 and r < 0.25:
        return obj(depth + 1)
    if depth < 5 and r < 0.4:
        items = [ws() + value(depth + 1) + ws() for _ in range(rng.randint(0, 4))]
        return b"[" + (b",".join(items) if items else ws()) + b"]"
    if r < 0.65:
        return string()
    if r < 0.85:
        return number()
    return rng.choice([b"true", b"false", b"null"])


def obj(depth=0):
    members = [ws() + string() + ws() + b":" + ws() + value(depth) + ws() for _ in range(rng.randint(0, 4))]
    return b"{" + (b",".join(members) if members else ws()) + b"}"


def pyvalue(depth=0):
    r = rng.random()
    if depth < 4 and r < 0.3:
        return {"k%d" % i: pyvalue(depth + 1) for i in range(rng.randint(0, 3))}
    if depth < 4 and r < 0.45:
        return [pyvalue(depth + 1) for _ in range(rng.randint(0, 3))]
    return rng.choice([0, -1, 2.5, 1e300, -0.0, "x\u00e9\n\U0001f600", "", True, False, None, 12345678901234567890])


def verdict(b):
    try:
        text = b.decode("utf-8")
    except UnicodeDecodeError:
        return 0
    def bad(_):
        raise ValueError("constant")
    try:
        v = json.loads(text, parse_constant=bad)
    except (ValueError, RecursionError):
        return 0
    if not isinstance(v, dict) or text[-1:] in " \t\n\r" or text[:1] in " \t\n\r":
        return 0
    run = 0
    for c in text:
        run = run + 1 if c in " \t\n\r" else 0
        if run > 24:
            return 0
    return 1


def mutate(b):
    b = bytearray(b)
    k = rng.random()
    i = rng.randrange(len(b) + 1)
    interesting = b'{}[]":,\\ 0-+.eEtfnu\x00\x1f\x80\xbf\xc0\xc2\xe0\xed\xf0\xf4\xf5\xff\t'
    if k < 0.3 and b:
        del b[min(i, len(b) - 1)]
    elif k < 0.6:
        b.insert(i, rng.choice(interesting))
    elif k < 0.85 and b:
        b[min(i, len(b) - 1)] = rng.choice(interesting)
    else:
        b = b[:i]
    return bytes(b)


FIXED = [b"{}", b" {}", b"{ }", b"{}\n", b"[]", b"1", b'"a"', b"{\"a\":1}", b"{\"a\":01}", b"{\"a\":-}",
         b"{\"a\":1.}", b"{\"a\":1e}", b"{\"a\":.5}", b"{\"a\":+1}", b"{\"a\":tru}", b"{\"a\":nulll}",
         b"{\"a\":[1,]}", b"{\"a\":1,}", b"{,}", b"{\"a\"}", b"{\"a\" 1}", b"{\"\\x\":1}", b"{\"\\u12\":1}",
         b"{\"a\":\"\xc0\xaf\"}", b"{\"a\":\"\xed\xa0\x80\"}", b"{\"a\":\"\xf4\x90\x80\x80\"}",
         b"{\"a\":\"\xe2\x82\xac\"}", b"{\"a\":\"\t\"}", b"{\"a\":NaN}", b"{\"a\":Infinity}",
         b"{\"a\":[[[[]]]]}", b"{\"a\":{\"b\":{}}}", b"{}{}", b"{\"a\":1}]", b"{\"a\":-0.0e-0}",
         b"{" + b" " * 24 + b"}", b"{" + b" " * 25 + b"}", b"{\"a\":1" + b"\n" * 24 + b"}", b"{\"a\":1 }", b"{\"a\":\"\\uD800\"}"]

cases = [(verdict(b), b) for b in FIXED]
for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 3000):
    b = obj() if rng.random() < 0.7 else json.dumps(
        {"r": pyvalue()}, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 1])).encode("utf-8")
    cases.append((verdict(b), b))
    for _ in range(2):
        m = mutate(b)
        cases.append((verdict(m), m))
for v, b in cases:
    print(v, b.hex())
