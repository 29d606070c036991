#!/usr/bin/env python3
"""Trains the default model of `make run`: a small Llama (transformers' LlamaForCausalLM) on the
World English Bible, on one GPU (the H200 through the device tool; see tools/device_fixtures.sh).

    sh tools/train_tokenizer.sh                      # here: models/bible-llama/tokenizer.model
    python3 tools/train_default_model.py --data world-english-bible.txt [--seconds 45]

Writes models/bible-llama/ (config.json, generation_config.json, model.safetensors in float16,
tokenizer.model, tokenizer_config.json), tools/loss_curve.png, and
tests/fixtures/hf/bible-llama-greedy.json (greedy ids of the saved f16 weights computed in f32 on
the CPU, for checking wgt's output on this model).

Data: each line of the text stripped, empty lines dropped (as tools/train_tokenizer.sh does), each
line encoded on its own (SentencePiece adds the dummy-prefix space, so lines join as running text)
and the lines concatenated into one stream. A training window is BOS + the 511 tokens from a
random line start, as a prompt given to the model later starts. 1% of the text, in blocks of 25
lines spread over the whole book, is held out for validation.

The model (8 layers, hidden 256, 8 heads, 4 kv heads, MLP 704, tied embeddings, vocab 4096:
6.95M parameters, 13.9 MB in f16) reads about a million tokens a second on the H200, so it sees the
1.2M-token book dozens of times in under a minute and then only overfits (a 300-second run: best
validation loss 3.35 after 12 epochs, 20 s in, then rising to 5.6 while the training loss fell to
0.34). Hence a short run whose cosine schedule ends near that point, dropout 0.2 on every attention
and MLP output (forward hooks, so the saved model is a plain Llama), weight decay, and the weights
with the best validation loss (evaluated every 2 s) are the ones saved.
"""
import argparse
import json
import math
import os
import re
import time

import numpy as np
import sentencepiece as spm
import torch
import torch.nn.functional as F

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def log(msg):
    print(f"[train] {msg}", flush=True)


def dump_json(obj, path):
    """Indented JSON with lists of numbers kept on one line."""
    text = json.dumps(obj, indent=1)
    text = re.sub(r"\[\s+([-0-9.eE+,\s]+?)\s+\]",
                  lambda m: "[" + " ".join(m.group(1).split()) + "]", text)
    with open(path, "w") as f:
        f.write(text + "\n")


def read_lines(paths):
    lines = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            lines += [s.strip() for s in f]
    return [s for s in lines if s]


def encode(sp, lines, block, val_every, val_pos):
    """-> (train ids, train line starts, list of val blocks as id lists)."""
    ids = sp.encode(lines)  # list of lists, one per line
    train, starts, val = [], [], []
    for b in range(0, len(ids), block):
        chunk = ids[b:b + block]
        if (b // block) % val_every == val_pos:
            val.append([t for line in chunk for t in line])
            continue
        for line in chunk:
            starts.append(len(train))
            train += line
    return np.array(train, dtype=np.int64), np.array(starts, dtype=np.int64), val


def add_dropout(model, p):
    """Dropout on the output of every attention and MLP block (training only)."""
    def hook(mod, inp, out):
        if isinstance(out, tuple):
            return (F.dropout(out[0], p, mod.training),) + tuple(out[1:])
        return F.dropout(out, p, mod.training)
    for layer in model.model.layers:
        layer.self_attn.register_forward_hook(hook)
        layer.mlp.register_forward_hook(hook)


def lm_loss(model, x, mask=None):
    """Mean next-token cross entropy over x[:, 1:] (mask: which targets count)."""
    logits = model(input_ids=x, use_cache=False).logits[:, :-1].float()
    tgt = x[:, 1:]
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1), reduction="none")
    if mask is None:
        return loss.mean()
    m = mask[:, 1:].reshape(-1).float()
    return (loss * m).sum() / m.sum()


@torch.no_grad()
def evaluate(model, vx, vmask, bs=32):
    model.eval()
    tot, n = 0.0, 0.0
    for i in range(0, vx.shape[0], bs):
        with torch.autocast(vx.device.type, dtype=torch.bfloat16, enabled=vx.is_cuda):
            l = lm_loss(model, vx[i:i + bs], vmask[i:i + bs])
        w = float(vmask[i:i + bs, 1:].sum())
        tot += float(l) * w
        n += w
    model.train()
    return tot / n


@torch.no_grad()
def sample(model, sp, prompts, dev, bos, seed):
    """A few greedy and sampled continuations, to read."""
    for p in prompts:
        ids = torch.tensor([[bos] + sp.encode(p)], device=dev)
        g = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=60,
                           do_sample=False)
        log(f"greedy  | {p} -> {sp.decode(g[0, 1:].tolist())!r}")
        torch.manual_seed(seed)
        s = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=60,
                           do_sample=True, temperature=0.8, top_k=40)
        log(f"sampled | {p} -> {sp.decode(s[0, 1:].tolist())!r}")


def plot(curve, best, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    tok = [c["tokens"] / 1e6 for c in curve]
    ax.plot(tok, [c["train"] for c in curve], label="train (mean since last eval)")
    ax.plot(tok, [c["val"] for c in curve], label="validation (1% held out)")
    if best is not None:
        ax.axvline(best["tokens"] / 1e6, color="gray", ls=":", lw=1,
                   label=f"saved: val {best['val']:.3f}")
    ax.set_xlabel("training tokens (millions)")
    ax.set_ylabel("cross entropy (nats/token)")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)


GREEDY_PROMPTS = ["In the beginning", "The Lord is my shepherd", "Jesus said to them,", "And it happened",
                  "Blessed are"]


def write_greedy_fixture(model_dir, sp, bos, path, prompts=GREEDY_PROMPTS):
    """Greedy ids (32 per prompt) of a saved model, in f32 on the CPU with eager attention, with the
    top-2 margins: the fixture wgt's output on the default model is checked against."""
    import transformers
    from transformers import AutoModelForCausalLM
    ref = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32,
                                               attn_implementation="eager").eval()
    cases = []
    # more prompts than the tests need: a trained model has close calls, and the tests compare
    # exactly only the cases whose smallest top-2 margin is comfortable (>= 0.05)
    for p in prompts + ["In the beginning, God created the heavens and the earth.",
                        "Then Moses said to Aaron,", "The word of Yahweh came to",
                        "For God so loved the world", "Love is",
                        "Yahweh said to Moses,", "The kingdom of heaven is like", "Now the serpent was",
                        "Praise Yahweh!", "David said to Saul,", "Hear, Israel:", "Paul, an apostle of",
                        "The heavens declare", "In those days", "Then Jesus answered,",
                        "Now the sons of Jacob were", "My son, keep", "Woe to you,",
                        "Go and tell", "These are the generations of", "The angel said to her,",
                        "Abraham was", "Peter said to him,", "Thus says Yahweh of Armies:",
                        "Give thanks to Yahweh, for", "I am the bread of", "Honor your father",
                        "The fear of Yahweh is", "Grace to you and peace from", "On the third day"]:
        pid = [bos] + sp.encode(p)
        seq, ids, margins, first = list(pid), [], [], None
        with torch.no_grad():
            for _ in range(32):
                lg = ref(input_ids=torch.tensor([seq])).logits[0, -1].float()
                if first is None:
                    first = lg
                top = torch.topk(lg, 2)
                margins.append(float(top.values[0] - top.values[1]))
                t = int(top.indices[0])
                ids.append(t)
                seq.append(t)
        cases.append({"prompt": p, "prompt_ids": pid, "greedy_ids": ids,
                      "text": sp.decode(ids), "min_margin": min(margins),
                      "step_margins": [round(m, 5) for m in margins],
                      "first_step_top5": [[int(i), float(v)] for v, i in
                                          zip(*torch.topk(first, 5))]})
        log(f"f32 cpu greedy | {p} -> {sp.decode(ids)!r} (min margin {min(margins):.3f})")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    dump_json({"model": "models/bible-llama", "weights": "float16 as saved, computed in "
               "float32 on the CPU (eager attention, no KV cache)",
               "transformers_version": transformers.__version__,
               "torch_version": torch.__version__, "cases": cases}, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", nargs="+",
                    default=[os.path.join(ROOT, "..", "shared", "data", "world-english-bible.txt")])
    ap.add_argument("--tokenizer", default=os.path.join(ROOT, "models", "bible-llama",
                                                        "tokenizer.model"))
    ap.add_argument("--out", default=os.path.join(ROOT, "models", "bible-llama"))
    ap.add_argument("--curve", default=os.path.join(ROOT, "tools", "loss_curve.png"))
    ap.add_argument("--greedy-fixture",
                    default=os.path.join(ROOT, "tests", "fixtures", "hf", "bible-llama-greedy.json"))
    ap.add_argument("--seconds", type=float, default=45, help="wall time of the training loop")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr-frac", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=100, help="steps")
    ap.add_argument("--wd", type=float, default=0.1)
    ap.add_argument("--dropout", type=float, default=0.2)
    ap.add_argument("--eval-seconds", type=float, default=2)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--intermediate", type=int, default=704)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--cpu-smoke", action="store_true", help="tiny CPU run to test the script")
    a = ap.parse_args()

    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM
    import transformers

    torch.manual_seed(a.seed)
    np.random.seed(a.seed)
    dev = torch.device("cpu" if a.cpu_smoke or not torch.cuda.is_available() else "cuda")
    log(f"torch {torch.__version__}, transformers {transformers.__version__}, device {dev}"
        + (f" ({torch.cuda.get_device_name(0)})" if dev.type == "cuda" else ""))
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True

    sp = spm.SentencePieceProcessor(model_file=a.tokenizer)
    V, BOS, EOS = sp.get_piece_size(), sp.bos_id(), sp.eos_id()
    t0 = time.time()
    lines = read_lines(a.data)
    train, starts, val_blocks = encode(sp, lines, block=25, val_every=100, val_pos=37)
    T = a.seq - 1  # tokens after BOS in a window
    starts = starts[starts + T <= len(train)]
    log(f"{len(lines)} lines -> {len(train)} train tokens ({len(starts)} line starts), "
        f"{sum(map(len, val_blocks))} val tokens in {len(val_blocks)} blocks, vocab {V}, "
        f"{time.time() - t0:.1f} s")

    # Validation: each held-out block from its start, BOS + up to T tokens; the rest of a block
    # in further windows of T (starting mid-line, which costs a little loss; same every eval).
    vx, vmask = [], []
    for blk in val_blocks:
        for i in range(0, len(blk) - 1, T):
            w = [BOS] + blk[i:i + T]
            vmask.append([1] * len(w) + [0] * (a.seq - len(w)))
            vx.append(w + [EOS] * (a.seq - len(w)))
    vx = torch.tensor(vx, device=dev)
    vmask = torch.tensor(vmask, device=dev)
    train_t = torch.from_numpy(train).to(dev)
    starts_t = torch.from_numpy(starts).to(dev)
    offs = torch.arange(T, device=dev)
    bos_col = torch.full((a.batch, 1), BOS, dtype=torch.long, device=dev)

    cfg = LlamaConfig(vocab_size=V, hidden_size=a.hidden, intermediate_size=a.intermediate,
                      num_hidden_layers=a.layers, num_attention_heads=a.heads,
                      num_key_value_heads=a.kv_heads, max_position_embeddings=a.seq,
                      rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=True,
                      bos_token_id=BOS, eos_token_id=EOS, initializer_range=0.02)
    model = LlamaForCausalLM(cfg).to(dev).float()
    add_dropout(model, a.dropout)
    model.train()
    n_params = sum(p.numel() for p in model.parameters())
    log(f"model: {n_params} parameters ({n_params * 2 / 1e6:.2f} MB in f16), "
        f"attn {getattr(model.config, '_attn_implementation', '?')}")

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt_kw = dict(lr=a.lr, betas=(0.9, 0.95), eps=1e-8)
    if dev.type == "cuda":
        opt_kw["fused"] = True
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.wd},
                             {"params": no_decay, "weight_decay": 0.0}], **opt_kw)

    def lr_at(step, frac):
        if step < a.warmup:
            return a.lr * (step + 1) / a.warmup
        c = 0.5 * (1 + math.cos(math.pi * min(1.0, frac)))
        return a.lr * (a.min_lr_frac + (1 - a.min_lr_frac) * c)

    curve, best, best_state = [], None, None
    step, tokens, run_loss = 0, 0, []
    v0 = evaluate(model, vx, vmask)
    log(f"step 0: val {v0:.4f} (uniform would be {math.log(V):.4f})")
    t_start = time.time()
    t_eval = t_start
    while True:
        now = time.time()
        frac = (now - t_start) / a.seconds
        if frac >= 1.0 or (a.cpu_smoke and step >= 30):
            break
        for g in opt.param_groups:
            g["lr"] = lr_at(step, frac)
        idx = torch.randint(len(starts_t), (a.batch,), device=dev)
        x = torch.cat([bos_col, train_t[starts_t[idx, None] + offs]], dim=1)  # [B, seq]
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=dev.type == "cuda"):
            loss = lm_loss(model, x)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        run_loss.append(loss.detach())
        step += 1
        tokens += x.numel()
        last = (time.time() - t_start) >= a.seconds or (a.cpu_smoke and step >= 30)
        if time.time() - t_eval >= a.eval_seconds or last or (a.cpu_smoke and step % 10 == 0):
            tr = float(torch.stack(run_loss).mean())
            run_loss = []
            va = evaluate(model, vx, vmask)
            el = time.time() - t_start
            curve.append({"step": step, "tokens": tokens, "seconds": el, "train": tr, "val": va,
                          "lr": opt.param_groups[0]["lr"]})
            if best is None or va < best["val"]:
                best = dict(curve[-1])
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            log(f"step {step:6d}  {tokens / 1e6:8.1f} M tok ({tokens / len(train):6.1f} epochs)  "
                f"{el:6.1f} s  {tokens / max(el, 1e-9) / 1e6:5.2f} M tok/s  lr {curve[-1]['lr']:.2e}  "
                f"train {tr:.4f}  val {va:.4f}" + ("  *" if best["step"] == step else ""))
            t_eval = time.time()

    log(f"done: {step} steps, {tokens / 1e6:.1f} M tokens in {time.time() - t_start:.1f} s; "
        f"final train {curve[-1]['train']:.4f} val {curve[-1]['val']:.4f}; "
        f"best val {best['val']:.4f} at step {best['step']} (train {best['train']:.4f}) -> saved")
    model.load_state_dict(best_state)
    model.eval()

    # Save as float16 safetensors, a plain Llama (the dropout hooks hold no state).
    os.makedirs(a.out, exist_ok=True)
    model.generation_config = GenerationConfig(bos_token_id=BOS, eos_token_id=EOS)
    model.half().save_pretrained(a.out)
    tok_cfg = {
        "tokenizer_class": "LlamaTokenizer",
        "model_max_length": a.seq,
        "bos_token": sp.id_to_piece(BOS), "eos_token": sp.id_to_piece(EOS),
        "unk_token": sp.id_to_piece(sp.unk_id()), "pad_token": None,
        "bos_token_id": BOS, "eos_token_id": EOS, "unk_token_id": sp.unk_id(),
        "add_bos_token": True, "add_eos_token": False,
        "clean_up_tokenization_spaces": False, "legacy": False,
    }
    with open(os.path.join(a.out, "tokenizer_config.json"), "w") as f:
        json.dump(tok_cfg, f, indent=2)
        f.write("\n")
    src_tok = os.path.abspath(a.tokenizer)
    dst_tok = os.path.abspath(os.path.join(a.out, "tokenizer.model"))
    if src_tok != dst_tok:
        with open(src_tok, "rb") as fi, open(dst_tok, "wb") as fo:
            fo.write(fi.read())
    dump_json({"args": vars(a), "n_params": n_params, "train_tokens": int(len(train)),
               "val_tokens": int(sum(map(len, val_blocks))), "steps": step,
               "tokens_seen": tokens, "best": best, "final": curve[-1], "curve": curve,
               "torch": torch.__version__, "transformers": transformers.__version__},
              os.path.join(a.out, "training.json"))
    sizes = {n: os.path.getsize(os.path.join(a.out, n)) for n in sorted(os.listdir(a.out))}
    log(f"wrote {a.out}: {sizes}, total {sum(sizes.values()) / 1e6:.2f} MB")
    try:
        os.makedirs(os.path.dirname(a.curve), exist_ok=True)
        plot(curve, best, a.curve, f"bible-llama: {n_params / 1e6:.2f}M params, "
             f"{len(train) / 1e6:.2f}M train tokens, {step} steps of {a.batch}x{a.seq}")
        log(f"wrote {a.curve}")
    except Exception as e:
        log(f"loss curve failed: {type(e).__name__}: {e}")

    # Samples from the saved f16 weights.
    prompts = GREEDY_PROMPTS
    if dev.type == "cpu":  # CPU smoke test: old CPU builds have no f16 matmul
        model.float()
    try:
        sample(model, sp, prompts, dev, BOS, a.seed)
    except Exception as e:
        log(f"samples failed: {type(e).__name__}: {e}")

    # Greedy reference for wgt: the saved f16 weights in f32 on the CPU, eager attention.
    try:
        write_greedy_fixture(a.out, sp, BOS, a.greedy_fixture, prompts)
        log(f"wrote {a.greedy_fixture}")
    except Exception as e:
        log(f"greedy fixture failed: {type(e).__name__}: {e}")

    # Does transformers' own tokenizer read tokenizer.model + tokenizer_config.json the same way?
    try:
        from transformers import AutoTokenizer
        tk = AutoTokenizer.from_pretrained(a.out)
        text = "In the beginning, God created the heavens and the earth. 1234 “Don’t”"
        hf, ours = tk(text)["input_ids"], [BOS] + sp.encode(text)
        log(f"AutoTokenizer {type(tk).__name__}: {'same ids' if hf == ours else 'DIFFERENT'} "
            f"({hf[:12]} vs {ours[:12]})")
    except Exception as e:
        log(f"AutoTokenizer check failed: {type(e).__name__}: {e}")


if __name__ == "__main__":
    main()
