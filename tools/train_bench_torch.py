#!/usr/bin/env python3
"""PyTorch eager training throughput, the peer figure for `wgt`'s training benchmark (issue 13).

Runs on the H200 image (torch 2.11, transformers 5.17, no network) in the same device call as wgt's
own training benchmark, so both are measured on the same card in one run:

    python3 tools/train_bench_torch.py [--steps 20] [--warmup 5] [--only gpt2|llama]

Shapes (random token ids, random initial weights; the figures do not depend on the values):
  gpt2-small   GPT2LMHeadModel, 12 layers x 768, 12 heads, vocab 50257: 124M parameters,
               batch 8 x 512, AdamW (lr 3e-4, wd 0.1), f32 with TF32 off, then bf16 autocast
  bible-llama  LlamaForCausalLM of models/bible-llama/config.json (8 layers x 256, GQA 8/4,
               vocab 4096), batch 32 x 256, AdamW, f32 with TF32 off

A step is forward, mean cross-entropy over every target, backward, optimizer step, zero_grad
(set_to_none). Time: CUDA events around `steps` steps after `warmup` steps; tokens/s counts
batch x seq tokens a step. Peak memory: torch.cuda.max_memory_allocated over the timed steps.
Prints one line per configuration: `torch <name> <dtype> tok/s <v> ms/step <v> peak_GiB <v>`.
"""
import argparse
import json
import os

import torch
import torch.nn.functional as F

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def bench(name, model, batch, seq, vocab, steps, warmup, autocast_dtype=None, lr=3e-4, wd=0.1):
    dev = torch.device("cuda")
    model = model.to(dev).train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=wd)
    gen = torch.Generator(device=dev).manual_seed(0)
    ids = torch.randint(0, vocab, (batch, seq + 1), device=dev, generator=gen)
    inputs, targets = ids[:, :-1], ids[:, 1:]

    def step():
        if autocast_dtype is not None:
            with torch.autocast("cuda", dtype=autocast_dtype):
                logits = model(input_ids=inputs).logits
        else:
            logits = model(input_ids=inputs).logits
        loss = F.cross_entropy(logits.float().reshape(-1, vocab), targets.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0.record()
    for _ in range(steps):
        loss = step()
    t1.record()
    torch.cuda.synchronize()
    ms = t0.elapsed_time(t1) / steps
    peak = torch.cuda.max_memory_allocated() / 2**30
    dtype = "f32" if autocast_dtype is None else "bf16-autocast"
    tok_s = batch * seq / (ms / 1e3)
    print(f"torch {name} {dtype} tok/s {tok_s:.0f} ms/step {ms:.2f} peak_GiB {peak:.2f} "
          f"loss {loss.item():.3f}", flush=True)
    return {"name": name, "dtype": dtype, "tok_s": tok_s, "ms_step": ms, "peak_gib": peak}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--only", choices=["gpt2", "llama"])
    ap.add_argument("--json", help="write the results here as JSON")
    a = ap.parse_args()

    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}", flush=True)
    results = []
    if a.only in (None, "llama"):
        with open(os.path.join(ROOT, "models", "bible-llama", "config.json")) as f:
            cfg = json.load(f)
        cfg.pop("dtype", None)
        lc = LlamaConfig(**cfg)
        lc._attn_implementation = "sdpa"
        results.append(bench("bible-llama", LlamaForCausalLM(lc).float(), 32, 256, lc.vocab_size,
                             a.steps, a.warmup))
    if a.only in (None, "gpt2"):
        gc = GPT2Config(n_layer=12, n_embd=768, n_head=12, vocab_size=50257, n_positions=1024,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
        gc._attn_implementation = "sdpa"
        for ac in (None, torch.bfloat16):
            torch.manual_seed(0)
            results.append(bench("gpt2-small", GPT2LMHeadModel(gc).float(), 8, 512, gc.vocab_size,
                                 a.steps, a.warmup, autocast_dtype=ac))
            torch.cuda.empty_cache()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
