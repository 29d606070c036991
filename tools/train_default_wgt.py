#!/usr/bin/env python3
"""The default model trained by `wgt train` (issue 13): the steps of tools/train_default_wgt.sh that
are not wgt's. The data split is tools/train_default_model.py's own functions (read_lines, encode,
taken from its source, so this part needs only numpy and sentencepiece, not torch); the evaluation
is its evaluate() on its held-out windows, on the model wgt trained (torch + transformers).

    train_default_wgt.py prep --data BIBLE.txt --out DIR --sequences N [--seq 512 --seed 1234]
        DIR/train.jsonl: N windows of BOS + 511 ids from random line starts of the training part
        (train_default_model.py's batches: torch.randint over the line starts, here numpy's
        generator); DIR/eval.jsonl: train_default_model.py's validation windows (1% held out in
        25-line blocks; each block from its start, BOS + up to 511 ids: shorter last windows, which
        wgt train's --eval-ids pads without counting, as torch's mask does); DIR/prep.json.
    train_default_wgt.py f16 --wgt-out DIR --out HFDIR
        wgt train's f32 model.safetensors as a float16 Hugging Face directory beside the shipped
        model's config.json, generation_config.json and tokenizer files (a tied lm_head dropped).
    train_default_wgt.py evaluate --model HFDIR [--model ...] --data BIBLE.txt --out eval.json
        [--greedy-fixture PATH]
        train_default_model.py's validation loss (its windows and mask, bf16 autocast on CUDA, as
        its run measured 3.2728) and the same in float32, for each model; with --greedy-fixture,
        the greedy ids of the first model as train_default_model.py writes them for the shipped one.
    train_default_wgt.py chart --wgt-log training.json --torch-log bench/results/h200/train_default_wgt/torch_training.json
        [--eval eval.json] --out chart.svg
        Both runs' loss curves (training loss, held-out loss) over training tokens, plain SVG.
"""
import argparse
import ast
import json
import os
import shutil
import struct
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
TDM = os.path.join(ROOT, "tools", "train_default_model.py")
SHIPPED = os.path.join(ROOT, "models", "bible-llama")


def tdm_functions(*names):
    """Functions of train_default_model.py by name, without importing it (it imports torch)."""
    import numpy as np
    tree = ast.parse(open(TDM, encoding="utf-8").read(), TDM)
    body = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    missing = set(names) - {n.name for n in body}
    if missing:
        sys.exit(f"{TDM} has no {', '.join(sorted(missing))}")
    ns = {"np": np}
    exec(compile(ast.Module(body=body, type_ignores=[]), TDM, "exec"), ns)
    return [ns[n] for n in names]


def split(data, tokenizer):
    """-> (sp, train ids, line starts, val blocks), exactly as train_default_model.py's main()."""
    import sentencepiece as spm
    read_lines, encode = tdm_functions("read_lines", "encode")
    sp = spm.SentencePieceProcessor(model_file=tokenizer)
    train, starts, val = encode(sp, read_lines([data]), block=25, val_every=100, val_pos=37)
    return sp, train, starts, val


def write_jsonl(path, rows):
    table = [str(i) for i in range(int(rows.max()) + 1)]
    with open(path, "w") as f:
        for r in rows.tolist():
            f.write("[" + ",".join(table[t] for t in r) + "]\n")


def cmd_prep(a):
    import numpy as np
    sp, train, starts, val = split(a.data, a.tokenizer)
    T = a.seq - 1
    starts = starts[starts + T <= len(train)]
    bos = sp.bos_id()
    rng = np.random.default_rng(a.seed)
    idx = rng.integers(len(starts), size=a.sequences)
    rows = np.concatenate([np.full((a.sequences, 1), bos, np.int64),
                           train[starts[idx][:, None] + np.arange(T)[None, :]]], axis=1)
    os.makedirs(a.out, exist_ok=True)
    write_jsonl(os.path.join(a.out, "train.jsonl"), rows)
    # train_default_model.py's validation windows, line for line: each held-out block from its start,
    # BOS + up to T ids (its shorter last windows padded and masked there; wgt train's --eval-ids pads
    # them and counts only their real targets), so --keep-best chooses on torch's own measure
    ev = [[bos] + blk[i:i + T] for blk in val for i in range(0, len(blk) - 1, T)]
    with open(os.path.join(a.out, "eval.jsonl"), "w") as f:
        for w in ev:
            f.write("[" + ",".join(str(int(t)) for t in w) + "]\n")
    n = len(ev)
    stream = [t for blk in val for t in blk]
    info = {"train_tokens": int(len(train)), "line_starts": int(len(starts)), "sequences": a.sequences,
            "seq_ids": a.seq, "val_tokens": int(len(stream)), "val_blocks": len(val),
            "eval_windows": int(n), "vocab": sp.get_piece_size(), "seed": a.seed}
    with open(os.path.join(a.out, "prep.json"), "w") as f:
        json.dump(info, f, indent=1)
    print(f"[prep] {info}", flush=True)


def read_safetensors(path):
    import numpy as np
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        data = f.read()
    kinds = {"F32": np.float32, "F16": np.float16}
    out = {}
    for k, v in head.items():
        if k == "__metadata__":
            continue
        b, e = v["data_offsets"]
        out[k] = np.frombuffer(data[b:e], dtype=kinds[v["dtype"]]).reshape(v["shape"])
    return out


def write_safetensors(path, tensors):
    head, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for k in sorted(tensors):
        b = tensors[k].tobytes()
        head[k] = {"dtype": "F16", "shape": list(tensors[k].shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(head, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)


def cmd_f16(a):
    import numpy as np
    cfg = json.load(open(os.path.join(SHIPPED, "config.json")))
    wcfg = json.load(open(os.path.join(a.wgt_out, "config.json")))
    for k in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
              "num_key_value_heads", "vocab_size"):
        if wcfg.get(k) != cfg.get(k):
            sys.exit(f"{a.wgt_out}/config.json: {k} {wcfg.get(k)}, the shipped model's {cfg.get(k)}")
    t = read_safetensors(os.path.join(a.wgt_out, "model.safetensors"))
    if cfg.get("tie_word_embeddings") and "lm_head.weight" in t:
        if not np.array_equal(t["lm_head.weight"], t["model.embed_tokens.weight"]):
            sys.exit("lm_head.weight differs from the embedding of a tied model")
        del t["lm_head.weight"]
    ref = read_safetensors(os.path.join(SHIPPED, "model.safetensors"))
    if sorted(ref) != sorted(t) or any(ref[k].shape != t[k].shape for k in ref):
        sys.exit(f"tensor names/shapes differ from the shipped model's: {sorted(set(ref) ^ set(t))}")
    os.makedirs(a.out, exist_ok=True)
    write_safetensors(os.path.join(a.out, "model.safetensors"), {k: v.astype(np.float16) for k, v in t.items()})
    for n in ("config.json", "generation_config.json", "tokenizer.model", "tokenizer_config.json"):
        shutil.copy(os.path.join(SHIPPED, n), os.path.join(a.out, n))
    print(f"[f16] {a.out}: {len(t)} tensors, {os.path.getsize(os.path.join(a.out, 'model.safetensors'))} bytes",
          flush=True)


def cmd_evaluate(a):
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import torch
    import train_default_model as tdm
    from transformers import AutoModelForCausalLM
    sp, train, starts, val_blocks = split(a.data, a.tokenizer)
    BOS, EOS, seq = sp.bos_id(), sp.eos_id(), 512
    T = seq - 1
    vx, vmask = [], []  # train_default_model.py's main(), line for line
    for blk in val_blocks:
        for i in range(0, len(blk) - 1, T):
            w = [BOS] + blk[i:i + T]
            vmask.append([1] * len(w) + [0] * (seq - len(w)))
            vx.append(w + [EOS] * (seq - len(w)))
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    vx, vmask = torch.tensor(vx, device=dev), torch.tensor(vmask, device=dev)
    res = {"val_windows": int(vx.shape[0]), "val_tokens": int(sum(map(len, val_blocks))), "device": str(dev),
           "torch": torch.__version__, "models": {}}
    for path in a.model:
        m = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).to(dev).eval()
        r = {"val_bf16_autocast": tdm.evaluate(m, vx, vmask)}  # the reference run's measure
        with torch.no_grad():
            tot = n = 0.0
            for i in range(0, vx.shape[0], 32):
                w = float(vmask[i:i + 32, 1:].sum())
                tot += float(tdm.lm_loss(m, vx[i:i + 32], vmask[i:i + 32])) * w
                n += w
        r["val_f32"] = tot / n
        res["models"][path] = r
        print(f"[evaluate] {path}: val {r['val_bf16_autocast']:.4f} (bf16 autocast, as train_default_model.py) "
              f"{r['val_f32']:.4f} (f32)", flush=True)
        del m
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    if a.greedy_fixture:
        tdm.write_greedy_fixture(a.model[0], sp, BOS, a.greedy_fixture)
        print(f"[evaluate] wrote {a.greedy_fixture}", flush=True)


def svg_chart(series, path, title, marks=()):
    """series: [(label, color, dashed, [(x, y)])] -> a plain SVG line chart."""
    W, H, L, R, Tp, B = 760, 420, 60, 20, 40, 50
    xs = [x for s in series for x, _ in s[3]]
    ys = [y for s in series for _, y in s[3]] + [y for _, y, _ in marks]
    x1 = max(xs) * 1.02
    y0, y1 = max(0.0, min(ys) - 0.2), min(max(ys), 8.5) + 0.1
    px = lambda x: L + (W - L - R) * x / x1
    py = lambda y: Tp + (H - Tp - B) * (1 - (min(y, y1) - y0) / (y1 - y0))
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{W / 2}" y="18" text-anchor="middle" font-size="12">{title}</text>']
    step = 0.5 if y1 - y0 < 4 else 1.0
    y = int(y0 / step) * step
    while y <= y1:
        if y >= y0:
            o.append(f'<line x1="{L}" x2="{W - R}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="#eee"/>'
                     f'<text x="{L - 5}" y="{py(y) + 4:.1f}" text-anchor="end">{y:g}</text>')
        y += step
    xstep = 5 if x1 > 20 else 2 if x1 > 6 else 0.5
    x = 0.0
    while x <= x1:
        o.append(f'<line x1="{px(x):.1f}" x2="{px(x):.1f}" y1="{Tp}" y2="{H - B}" stroke="#eee"/>'
                 f'<text x="{px(x):.1f}" y="{H - B + 15}" text-anchor="middle">{x:g}</text>')
        x += xstep
    o.append(f'<text x="{(L + W - R) / 2}" y="{H - 12}" text-anchor="middle">training tokens (millions)</text>')
    o.append(f'<text x="14" y="{(Tp + H - B) / 2}" transform="rotate(-90 14 {(Tp + H - B) / 2})" '
             f'text-anchor="middle">cross entropy (nats/token)</text>')
    for i, (label, color, dashed, pts) in enumerate(series):
        d = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        dash = ' stroke-dasharray="5,3"' if dashed else ""
        o.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.6"{dash} points="{d}"/>')
        ly = Tp + 10 + 16 * i
        o.append(f'<line x1="{W - R - 250}" x2="{W - R - 225}" y1="{ly}" y2="{ly}" stroke="{color}" '
                 f'stroke-width="2"{dash}/><text x="{W - R - 220}" y="{ly + 4}">{label}</text>')
    for x, y, label in marks:
        o.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="4" fill="none" stroke="black"/>'
                 f'<text x="{px(x) + 6:.1f}" y="{py(y) - 6:.1f}">{label}</text>')
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


def cmd_chart(a):
    w = json.load(open(a.wgt_log))
    tch = json.load(open(a.torch_log))
    tok = w["batch"] * (w["seq"] + 1)  # ids per step, as train_default_model.py counts (BOS + 511)
    losses, es, el = w["losses"], w["eval_steps"], w["eval_losses"]
    wtrain, prev = [], 0
    for s in es:  # the mean training loss since the previous evaluation, as the torch run logs it
        seg = losses[prev:s]
        if seg:
            wtrain.append((s * tok / 1e6, sum(seg) / len(seg)))
        prev = s
    c = tch["curve"]
    series = [("PyTorch: training loss", "#999999", True, [(p["tokens"] / 1e6, p["train"]) for p in c]),
              ("PyTorch: validation loss", "#555555", False, [(p["tokens"] / 1e6, p["val"]) for p in c]),
              ("wgt train: training loss", "#7fa6dd", True, wtrain),
              ("wgt train: held-out loss", "#3b6fb6", False, [(s * tok / 1e6, v) for s, v in zip(es, el)])]
    marks = [(tch["best"]["tokens"] / 1e6, tch["best"]["val"], f"PyTorch saved: {tch['best']['val']:.4f}")]
    if a.eval:
        ev = json.load(open(a.eval))
        r = ev["models"].get(a.eval_model) or next(iter(ev["models"].values()))
        step = w.get("saved_step") or w["steps"]
        marks.append((step * tok / 1e6, r["val_bf16_autocast"],
                      f"wgt saved (step {step}), torch's measure: {r['val_bf16_autocast']:.4f}"))
    svg_chart(series, a.out, f"bible-llama (6.95M parameters), batch {w['batch']} x {w['seq'] + 1}: PyTorch "
              f"(CUDA, bf16 autocast) and wgt train (WebGPU, f32), H200", marks)
    print(f"[chart] wrote {a.out}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    data = os.path.join(ROOT, "..", "shared", "data", "world-english-bible.txt")
    tokenizer = os.path.join(SHIPPED, "tokenizer.model")
    p = sub.add_parser("prep")
    p.add_argument("--data", default=data)
    p.add_argument("--tokenizer", default=tokenizer)
    p.add_argument("--out", required=True)
    p.add_argument("--sequences", type=int, required=True)
    p.add_argument("--seq", type=int, default=512, help="ids per window (BOS included)")
    p.add_argument("--seed", type=int, default=1234)
    p = sub.add_parser("f16")
    p.add_argument("--wgt-out", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("evaluate")
    p.add_argument("--model", action="append", required=True)
    p.add_argument("--data", default=data)
    p.add_argument("--tokenizer", default=tokenizer)
    p.add_argument("--out", required=True)
    p.add_argument("--greedy-fixture")
    p = sub.add_parser("chart")
    p.add_argument("--wgt-log", required=True)
    p.add_argument("--torch-log", default=os.path.join(ROOT, "bench", "results", "h200", "train_default_wgt",
                                                       "torch_training.json"))
    p.add_argument("--eval")
    p.add_argument("--eval-model")
    p.add_argument("--out", required=True)
    a = ap.parse_args()
    {"prep": cmd_prep, "f16": cmd_f16, "evaluate": cmd_evaluate, "chart": cmd_chart}[a.cmd](a)


if __name__ == "__main__":
    main()
