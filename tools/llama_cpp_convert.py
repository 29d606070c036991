#!/usr/bin/env python3
"""GGUF files written by llama.cpp's own converter (convert_hf_to_gguf.py) for every Hugging Face
fixture in tests/fixtures/hf, so that wgt's tests can check it reads what llama.cpp writes.

llama.cpp's source comes from the npm package node-llama-cpp@3.22.1 (llama/gitRelease.bundle,
llama.cpp tag v0.5.0 of node-llama-cpp's builds; tools/llama_cpp_convert.sh packs the converter's
subset). Runs where torch, transformers, numpy, sentencepiece and tokenizers are installed (the H200
image; no network needed):

    python3 tools/llama_cpp_convert.py --llama-cpp DIR --fixtures tests/fixtures/hf --out OUT \
        [--types f32,f16] [--q8 llama] [--only llama,gpt2] [--jobs 8]

writes OUT/<arch>-<type>.gguf and OUT/manifest.json (per file: the converter's exit status, its
log's tail, size, sha256; the tokenizer each fixture was given).

The fixtures carry no tokenizer, and llama.cpp's converter needs one. Each is given a generated
tokenizer that fits its vocab_size (320) with the fixture's special ids where config.json puts
them, in a copy of the directory (the tensors and config.json are the fixture's):
- SentencePiece (tokenizer.model: <unk>, the specials, 256 byte pieces, a few normal pieces; the
  ModelProto is written here field by field) for the families whose real checkpoints ship one and
  whose converter class reads it (llama, mistral, mixtral, gemma, gemma2, gemma3, phi3);
- a byte-level BPE tokenizer.json (GPT-2's pre-tokenizer, 256 byte tokens, merges "Ġ" + letter)
  for the others.
llama.cpp identifies a BPE tokenizer's pre-tokenizer by hashing how it splits a probe text; a
generated vocabulary matches no known hash and the converter stops ("BPE pre-tokenizer was not
recognized"). The overrides here: TextModel.get_vocab_base_pre, when the original raises that
NotImplementedError, returns "gpt-2" (what the generated tokenizer is) instead; the hparams
llama.cpp loads through transformers' AutoConfig get back the keys transformers 5 drops and
llama.cpp still reads (add_legacy_hparams: gpt2's n_ctx, gpt_neox's rotary_pct). The one fix:
StableLM 2 12B's per-head q/k norms are stacked as llama.cpp's code means to (fix_stablelm_qk_norms:
at this commit a `return` inside a generator drops them). Everything else, tensors and metadata, is
llama.cpp's code, unmodified.
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

SPM_ARCHS = ("llama", "mistral", "mistral_window", "mixtral", "gemma", "gemma2", "gemma3_text", "phi3", "gemma2_hd",
             "gemma3_text_6l")
BPE_PRE = "gpt-2"


# ---- SentencePiece ModelProto (sentencepiece_model.proto), encoded by hand ----
def _varint(n):
    n &= (1 << 64) - 1  # negative int32 fields are 10-byte varints
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _int(field, v):
    return _varint(field << 3) + _varint(v)


def _bytes(field, b):
    return _varint(field << 3 | 2) + _varint(len(b)) + b


def _float(field, v):
    return _varint(field << 3 | 5) + struct.pack("<f", v)


NORMAL, UNKNOWN, CONTROL, BYTE = 1, 2, 3, 6


def special_roles(cfg):
    """{id: role} for bos/eos/pad ids of config.json (lists allowed)."""
    roles = {}
    for role in ("bos", "eos", "pad"):
        v = cfg.get(role + "_token_id")
        for i in (v if isinstance(v, list) else [v]):
            if isinstance(i, int) and i >= 0:
                roles.setdefault(i, role)
    return roles


def spm_model(cfg):
    """tokenizer.model bytes: vocab_size pieces; returns (bytes, summary)."""
    V = cfg["vocab_size"]
    roles = special_roles(cfg)
    names = {"bos": "<s>", "eos": "</s>", "pad": "<pad>"}
    if cfg.get("model_type") == "phi3":  # Phi-3's pad; llama.cpp's vocabulary loader looks it up by
        names["pad"] = "<|endoftext|>"   # its text in a file named phi3 (and fails without it)
    unk = next(i for i in range(V) if i not in roles)
    pieces = [None] * V
    for i, r in roles.items():
        pieces[i] = (names[r], 0.0, CONTROL)
    pieces[unk] = ("<unk>", 0.0, UNKNOWN)
    free = [i for i in range(V) if pieces[i] is None]
    if len(free) < 256:
        raise ValueError(f"vocab_size {V} leaves no room for 256 byte pieces")
    for b, i in enumerate(free[:256]):
        pieces[i] = ("<0x%02X>" % b, 0.0, BYTE)
    letters = "etaoinshrdlcumwfgypbvkjxqz"
    normal = ["\u2581"] + ["\u2581" + c for c in letters] + list(letters) + \
             ["\u2581" + a + b for a in letters for b in letters]
    for k, i in enumerate(free[256:]):
        pieces[i] = (normal[k], -float(k + 1), NORMAL)
    body = b"".join(_bytes(1, _bytes(1, p.encode()) + _float(2, s) + _int(3, t)) for p, s, t in pieces)
    ids = {r: i for i, r in roles.items()}
    trainer = (_int(3, 2) + _int(4, V) + _int(35, 1) + _int(40, unk) + _int(41, ids.get("bos", -1)) +
               _int(42, ids.get("eos", -1)) + _int(43, ids.get("pad", -1)))
    normalizer = _bytes(1, b"identity") + _int(3, 1) + _int(4, 0) + _int(5, 1)
    return body + _bytes(2, trainer) + _bytes(3, normalizer), \
        f"sentencepiece BPE: unk {unk}, specials {roles}, 256 byte pieces, {V - 257 - len(roles)} normal"


# ---- byte-level BPE tokenizer.json ----
def byte_symbols():
    """GPT-2's printable stand-in for each byte (tools/synthetic_tokenizer.py has the same)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    sym, extra = {}, 0
    for b in range(256):
        if b in keep:
            sym[b] = chr(b)
        else:
            sym[b] = chr(256 + extra)
            extra += 1
    return [sym[b] for b in range(256)]


def bpe_files(cfg):
    """(tokenizer.json, tokenizer_config.json, summary)."""
    V = cfg["vocab_size"]
    roles = special_roles(cfg)
    names = {"bos": "<|bos|>", "eos": "<|endoftext|>", "pad": "<|pad|>"}
    vocab, added = {}, []
    for i, r in sorted(roles.items()):
        vocab[names[r]] = i
        added.append({"id": i, "content": names[r], "single_word": False, "lstrip": False, "rstrip": False,
                      "normalized": False, "special": True})
    free = [i for i in range(V) if i not in roles]
    sym = byte_symbols()
    for b, i in enumerate(free[:256]):
        vocab[sym[b]] = i
    merges = []
    for c, i in zip("etaoinshrdlcumwfgypbvkjxqzETAOINSHRDLCUMWFGYPBVKJXQZ", free[256:]):
        vocab["\u0120" + c] = i
        merges.append(["\u0120", c])
    tok = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False, "vocab": vocab, "merges": merges},
    }
    inv = {r: names[r] for r in roles.values()}
    tcfg = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 256,
            "bos_token": inv.get("bos"), "eos_token": inv.get("eos"), "pad_token": inv.get("pad"),
            "add_bos_token": False, "add_eos_token": False}
    return tok, tcfg, f"byte-level BPE: specials {roles}, 256 bytes, {len(merges)} merges, pre '{BPE_PRE}'"


def prepare(fixture_dir, work, arch):
    """A copy of the fixture with a tokenizer; returns (dir, summary)."""
    d = os.path.join(work, arch)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for n in os.listdir(fixture_dir):
        if n != "fixture.json":
            shutil.copy(os.path.join(fixture_dir, n), d)
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    # in config.json too (transformers 4's form; add_legacy_hparams puts them back where AutoConfig
    # drops them)
    legacy = legacy_keys(cfg)
    if legacy:
        cfg.update(legacy)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f, indent=1)
    if arch in SPM_ARCHS:
        data, summary = spm_model(cfg)
        with open(os.path.join(d, "tokenizer.model"), "wb") as f:
            f.write(data)
    else:
        tok, tcfg, summary = bpe_files(cfg)
        with open(os.path.join(d, "tokenizer.json"), "w") as f:
            json.dump(tok, f, ensure_ascii=False)
        summary += "; " + write_tokenizer_config(d, tcfg, tok)
    return d, summary


def write_tokenizer_config(d, tcfg, tok):
    """tokenizer_config.json with the first tokenizer_class that transformers' AutoTokenizer (what
    llama.cpp's converter calls) loads from tokenizer.json and that encodes bytes as the file says."""
    try:
        from transformers import AutoTokenizer
    except ImportError:
        AutoTokenizer = None
    why = []
    for cls in ("PreTrainedTokenizerFast", "TokenizersBackend", "GPT2TokenizerFast", None):
        c = dict(tcfg)
        if cls is None:
            c.pop("tokenizer_class")
        else:
            c["tokenizer_class"] = cls
        with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
            json.dump(c, f)
        if AutoTokenizer is None:
            return f"tokenizer_class {cls} (not checked: no transformers)"
        try:
            t = AutoTokenizer.from_pretrained(d)
            want = [tok["model"]["vocab"][ch] for ch in "hi!"]
            got = t.encode("hi!", add_special_tokens=False)
            if got == want and max(t.vocab.values()) < tok_size(tok):
                return f"tokenizer_class {cls} ({type(t).__name__})"
            why.append(f"{cls}: encodes 'hi!' as {got}, not {want}")
        except Exception as e:  # the next class
            why.append(f"{cls}: {type(e).__name__}: {e}")
    raise RuntimeError("AutoTokenizer loads the generated tokenizer with no tokenizer_class: " + "; ".join(why))


def tok_size(tok):
    return max(tok["model"]["vocab"].values()) + 1


def fix_stablelm_qk_norms():
    """The second override: StableLMModel.modify_tensors (conversion/stablelm.py) is a generator
    whose per-head q/k norm branch does `return self._stack_qk_norm(...)`: inside a generator that
    return value is dropped, so the stacked attn_q_norm / attn_k_norm are never written and
    prepare_tensors stops with "Unprocessed norms" (every StableLM 2 12B conversion at this commit).
    The wrapper runs what that line meant: the generator it returns is iterated."""
    try:
        from conversion import stablelm
    except ImportError:
        return
    original = stablelm.StableLMModel.modify_tensors

    def modify_tensors(self, data_torch, name, bid):
        stacked = yield from original(self, data_torch, name, bid)
        if stacked is not None:
            yield from stacked

    stablelm.StableLMModel.modify_tensors = modify_tensors


def legacy_keys(cfg):
    """Keys llama.cpp's converter reads that transformers 5 no longer keeps (H200 runs: KeyError
    'n_ctx' for gpt2, 'rotary_pct' for gpt_neox), with the values transformers 4 wrote."""
    rope = cfg.get("rope_parameters") if isinstance(cfg.get("rope_parameters"), dict) else {}
    pct = cfg.get("partial_rotary_factor", rope.get("partial_rotary_factor"))
    keys = {"gpt2": {"n_ctx": cfg.get("n_positions")}, "gpt_neox": {"rotary_pct": pct}}.get(cfg.get("model_type"), {})
    return {k: v for k, v in keys.items() if k not in cfg and v is not None}


def add_legacy_hparams():
    """The second override: llama.cpp's converter takes hparams from transformers' AutoConfig (its
    to_dict()), not from config.json, and transformers 5's GPTNeoXConfig drops rotary_pct even
    when config.json has it (run 2 on the H200: KeyError 'rotary_pct'). The loaded hparams get
    the legacy keys they lack (legacy_keys), the values config.json means."""
    from conversion import base
    original = base.ModelBase.load_hparams

    def load_hparams(dir_model, is_mistral_format):
        cfg = original(dir_model, is_mistral_format)
        if isinstance(cfg, dict):
            cfg.update(legacy_keys(cfg))
        return cfg

    base.ModelBase.load_hparams = staticmethod(load_hparams)


def convert_one(llama_dir, model_dir, outfile, outtype):
    """In this process: llama.cpp's main() with the overrides and the fix (module docstring)."""
    sys.path.insert(0, llama_dir)
    import logging
    import convert_hf_to_gguf as conv
    from conversion import base

    original = base.TextModel.get_vocab_base_pre

    def get_vocab_base_pre(self, tokenizer):
        try:
            return original(self, tokenizer)
        except NotImplementedError:
            logging.getLogger("llama_cpp_convert").warning(
                "generated tokenizer: pre-tokenizer hash not in llama.cpp's list, writing '%s'", BPE_PRE)
            return BPE_PRE

    base.TextModel.get_vocab_base_pre = get_vocab_base_pre
    fix_stablelm_qk_norms()
    add_legacy_hparams()
    sys.argv = ["convert_hf_to_gguf.py", model_dir, "--outfile", outfile, "--outtype", outtype]
    conv.main()


def job(args):
    llama_dir, model_dir, outfile, outtype = args
    t0 = time.time()
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--convert-one", llama_dir, model_dir,
                        outfile, outtype], capture_output=True, text=True, timeout=300)
    log = (p.stdout + p.stderr).splitlines()
    ok = p.returncode == 0 and os.path.exists(outfile)
    rec = {"rc": p.returncode, "ok": ok, "seconds": round(time.time() - t0, 1), "log_tail": log[-40:] if not ok else
           [l for l in log if "WARNING" in l or "tokenizer" in l.lower() or "rope" in l.lower()][-20:]}
    if ok:
        with open(outfile, "rb") as f:
            rec["sha256"] = hashlib.sha256(f.read()).hexdigest()
        rec["bytes"] = os.path.getsize(outfile)
    return os.path.basename(outfile), rec


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "--convert-one":
        convert_one(*sys.argv[2:])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llama-cpp", required=True, help="llama.cpp's tree (convert_hf_to_gguf.py, conversion/, gguf-py/)")
    ap.add_argument("--fixtures", default="tests/fixtures/hf")
    ap.add_argument("--out", required=True)
    ap.add_argument("--types", default="f32,f16")
    ap.add_argument("--q8", default="llama", help="fixtures also converted to q8_0")
    ap.add_argument("--only", default="")
    ap.add_argument("--jobs", type=int, default=8)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="llama_cpp_convert_")
    only = [s for s in a.only.split(",") if s]
    archs = sorted(n for n in os.listdir(a.fixtures)
                   if os.path.exists(os.path.join(a.fixtures, n, "config.json")) and (not only or n in only))
    manifest = {"llama_cpp": "node-llama-cpp@3.22.1 llama/gitRelease.bundle", "tokenizers": {}, "files": {}}
    try:
        import torch, transformers, numpy, sentencepiece, tokenizers  # noqa: F401
        manifest["versions"] = {m.__name__: getattr(m, "__version__", "?") for m in
                                (torch, transformers, numpy, sentencepiece, tokenizers)}
    except ImportError as e:
        manifest["versions"] = str(e)
    jobs = []
    for arch in archs:
        try:
            d, summary = prepare(os.path.join(a.fixtures, arch), work, arch)
        except Exception as e:
            manifest["tokenizers"][arch] = f"FAILED: {type(e).__name__}: {e}"
            print(f"[llama_cpp_convert] {arch}: no tokenizer: {e}", flush=True)
            manifest["files"][arch] = {"ok": False, "rc": None, "log_tail": [str(e)]}
            continue
        manifest["tokenizers"][arch] = summary
        print(f"[llama_cpp_convert] {arch}: {summary}", flush=True)
        types = [t for t in a.types.split(",") if t] + (["q8_0"] if arch in a.q8.split(",") else [])
        for t in types:
            jobs.append((os.path.abspath(a.llama_cpp), d, os.path.abspath(os.path.join(a.out, f"{arch}-{t}.gguf")), t))
    print(f"[llama_cpp_convert] {len(archs)} fixtures, {len(jobs)} conversions, versions {manifest['versions']}",
          flush=True)
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        for name, rec in ex.map(job, jobs):
            manifest["files"][name] = rec
            print(f"[llama_cpp_convert] {name}: {'ok' if rec['ok'] else 'FAILED rc %s' % rec['rc']} "
                  f"({rec['seconds']} s{', %d bytes' % rec['bytes'] if rec['ok'] else ''})", flush=True)
            for line in rec["log_tail"] if not rec["ok"] else []:
                print("    " + line, flush=True)
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    shutil.rmtree(work, ignore_errors=True)
    failed = [n for n, r in manifest["files"].items() if not r["ok"]]
    print(f"[llama_cpp_convert] {len(jobs) - len(failed)} of {len(jobs)} converted; failed: {failed or 'none'}",
          flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
