#!/usr/bin/env python3
"""A byte-level BPE tokenizer.json with exactly a configuration's vocabulary size, for serving or
benchmarking a random-weight model of a real shape (tools/serve_bench.py): the model of a
config.json alone has random weights and no tokenizer, so a server could only take token ids and
stream nothing until a reply ends. With this file beside the config.json, `wgt serve` encodes text
prompts (one token per byte: there are no merges) and every generated id decodes to text (ids past
the 256 byte tokens are words "w<id>"), so replies stream token by token as with a real model.

    python3 tools/synthetic_tokenizer.py bench/configs/qwen2.5-0.5b.json OUT_DIR
    # OUT_DIR/config.json (a copy) and OUT_DIR/tokenizer.json; then wgt serve -m OUT_DIR/config.json
"""
import json
import os
import sys


def byte_symbols():
    """GPT-2's printable stand-in for each byte (the ByteLevel pre-tokenizer's alphabet): bytes that
    are printable keep their character, the others map to code points from 256 up, in byte order."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    sym, extra = {}, 0
    for b in range(256):
        if b in keep:
            sym[b] = chr(b)
        else:
            sym[b] = chr(256 + extra)
            extra += 1
    return [sym[b] for b in range(256)]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: synthetic_tokenizer.py CONFIG.json OUT_DIR")
    cfg = json.load(open(sys.argv[1]))
    n = int(cfg["vocab_size"])
    if n < 258:
        sys.exit(f"{sys.argv[1]}: vocab_size {n} leaves no room for 256 byte tokens and the specials")
    os.makedirs(sys.argv[2], exist_ok=True)
    vocab = {s: i for i, s in enumerate(byte_symbols())}
    eos = n - 1
    for i in range(256, n - 1):
        vocab["\u0120w%d" % i] = i  # "Ġw123": " w123" once decoded
    vocab["<|endoftext|>"] = eos
    tok = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": eos, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
                  "merges": []},
    }
    json.dump(tok, open(os.path.join(sys.argv[2], "tokenizer.json"), "w"), ensure_ascii=False)
    json.dump({"eos_token": "<|endoftext|>", "bos_token": None, "add_bos_token": False},
              open(os.path.join(sys.argv[2], "tokenizer_config.json"), "w"))
    out_cfg = dict(cfg, eos_token_id=eos, bos_token_id=None)
    json.dump(out_cfg, open(os.path.join(sys.argv[2], "config.json"), "w"), indent=1)
    print(f"{sys.argv[2]}: tokenizer.json with {n} tokens (256 bytes, {n - 257} words, <|endoftext|> = {eos})")


if __name__ == "__main__":
    main()
