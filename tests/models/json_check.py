#!/usr/bin/env python3
"""Checks text a JSON-constrained generation wrote, with Python's json module as the judge.
  json_check.py complete FILE   FILE holds one JSON object (json.loads gives a dict)
  json_check.py prefix FILE     FILE is the start of one: closing what it leaves open (a string, an
                                escape, a number, a literal, a key without its value, the containers)
                                gives text json.loads reads as a dict. Only bytes are appended, so a
                                text wrong before its end stays wrong.
Exit 0 when the check holds; else 1 with the reason."""
import json
import sys


def closing(text):
    stack, i, n = [], 0, len(text)
    state = "start"  # start, key, colon, value, after, in a number or literal: "tok"
    in_str = is_key = False
    tok = ""
    while i < n:
        c = text[i]
        if in_str:
            if c == "\\":
                if i + 1 >= n:
                    return None, "n\"" + (":0" if is_key else "")
                if text[i + 1] == "u":
                    hexes = text[i + 2:i + 6]
                    if len(hexes) < 4:
                        return None, "0" * (4 - len(hexes)) + "\"" + (":0" if is_key else "")
                    i += 6
                    continue
                i += 2
                continue
            if c == "\"":
                in_str = False
                state = "colon" if is_key else "after"
            i += 1
            continue
        if state == "tok":
            if c.isalnum() or c in "+-.":
                tok += c
                i += 1
                continue
            state = "after"
            continue
        if c in " \t\r\n":
            i += 1
            continue
        if c in "{[":
            stack.append("}" if c == "{" else "]")
            state = "key" if c == "{" else "value"
        elif c in "}]":
            stack.pop()
            state = "after"
        elif c == "\"":
            in_str, is_key = True, state == "key"
        elif c == ":":
            state = "value"
        elif c == ",":
            state = "key" if stack and stack[-1] == "}" else "value"
        else:
            state, tok = "tok", c
        i += 1
    tail = ""
    if in_str:
        tail = "\"" + (":0" if is_key else "")
    elif state == "tok":
        for lit in ("true", "false", "null"):
            if lit.startswith(tok):
                tail = lit[len(tok):]
                break
        else:
            if tok[-1] in "-+.eE":
                tail = "0"
    elif state == "colon":
        tail = ":0"
    elif state == "value":
        tail = "0" if stack and stack[-1] == "]" else "0"
        if text.rstrip()[-1:] == "[":
            tail = ""
    elif state == "key" and text.rstrip()[-1:] == ",":
        tail = "\"k\":0"
    return stack, tail


def main():
    how, path = sys.argv[1], sys.argv[2]
    text = open(path, "rb").read().decode("utf-8")
    if how == "prefix":
        stack, tail = closing(text)
        if stack is None:
            text += tail
            stack, tail = closing(text)
        text = text + tail + "".join(reversed(stack or []))
    try:
        v = json.loads(text)
    except ValueError as e:
        print(f"not JSON ({how}): {e}: {text[:300]!r}")
        return 1
    if not isinstance(v, dict):
        print(f"JSON but not an object: {text[:300]!r}")
        return 1
    return 0


sys.exit(main())
