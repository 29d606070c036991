#!/usr/bin/env python3
"""Training fixtures from PyTorch + Hugging Face transformers: loss, gradients and AdamW steps of
tiny random-weight llama, qwen2 and gpt2 models, for checking wgt's training path.

Runs where torch and transformers are installed (the H200 image, through the device tool; no
network, no hub), on the CPU in float32, deterministic:

    python3 tools/make_train_fixtures.py OUT_DIR [--only llama,gpt2]

For each architecture it writes OUT_DIR/<arch>/:
  config.json, model.safetensors     the checkpoint (save_pretrained), weights in f32
  data.jsonl                         the batch: B lines, each a list of L+1 token ids (what
                                     `wgt train --data-ids ... --no-shuffle --batch B --seq L` reads)
  batch.safetensors                  input_ids [B, L] and targets [B, L] (i64), logits [B, L, V] (f32)
  grads.safetensors                  d loss / d parameter for every tensor of model.safetensors, under
                                     the checkpoint's names (a tied lm_head has no tensor of its own:
                                     its gradient is part of the embedding's)
  fixture.json                       loss, per-step AdamW losses, learning rates, gradient norms
Everything is computed from the model as reloaded from the saved files.

The loss is the mean cross-entropy over all B x L targets: inputs are the first L ids of each
sequence, targets the last L (F.cross_entropy on the logits, not the model's shifted labels= path).

AdamW runs (torch.optim.AdamW, lr 1e-3, betas 0.9/0.999, eps 1e-8, weight_decay 0.01 on every
parameter, the same batch at every step):
  "adamw":          constant lr, no clipping.
  "adamw_clip_cos": clip_grad_norm_(1.0) before each step; transformers'
                    get_cosine_schedule_with_warmup(warmup 3, total 12) stepped after each
                    optimizer step (LambdaLR: the first step has lr 0; then lr * k / W for k < W,
                    else lr * 0.5 * (1 + cos(pi * (k - W) / (N - W))), k = steps taken). The lr
                    each step used is in the json.
losses[s-1] is the loss of step s computed before its update (losses[0] is the initial loss);
loss_after is the loss after the last update. grad_norms[s-1] is the global L2 norm of step s's
gradient before clipping.

Why the weights are not transformers' default init: norm weights of exactly 1 and zero biases would
hide a forgotten norm weight or bias in the forward and leave their gradients less tested. Sizes are
small (hidden 32) so that the fixtures of all three stay at a few hundred KB.
"""
import argparse
import json
import os
import re
import shutil
import sys
import time

import torch
import torch.nn.functional as F
import transformers
from safetensors import safe_open
from safetensors.torch import save_file
from transformers import (AutoModelForCausalLM, GPT2Config, GPT2LMHeadModel, LlamaConfig,
                          LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM)

V = 256          # vocabulary
HIDDEN = 32      # 4 heads of 8 (rope pairs 4 per head)
LAYERS = 2
BATCH = 2
SEQ = 16         # L: each sequence holds L+1 ids
STEPS = 12
LR = 1e-3
BETAS = (0.9, 0.999)
EPS = 1e-8
WEIGHT_DECAY = 0.01
CLIP = 1.0
WARMUP = 3
MATRIX_STD = 0.1
EMBED_STD = 0.3
NORM_JITTER = 0.2
BIAS_STD = 0.05


def archs():
    """name -> (model class, config factory, notes). Dropout is 0 everywhere (the fixtures are
    deterministic); attention is eager (the math as written, no fused kernels)."""
    common = dict(vocab_size=V, initializer_range=MATRIX_STD, use_cache=False)
    return {
        "llama": (LlamaForCausalLM, lambda: LlamaConfig(
            hidden_size=HIDDEN, intermediate_size=80, num_hidden_layers=LAYERS,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
            rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False,
            attention_bias=False, mlp_bias=False, attention_dropout=0.0,
            bos_token_id=1, eos_token_id=2, **common),
            "GQA 4/2, SwiGLU, RMSNorm, untied lm_head"),
        "qwen2": (Qwen2ForCausalLM, lambda: Qwen2Config(
            hidden_size=HIDDEN, intermediate_size=96, num_hidden_layers=LAYERS,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
            rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True,
            use_sliding_window=False, attention_dropout=0.0,
            bos_token_id=V - 3, eos_token_id=V - 2, **common),
            "q/k/v biases (o_proj none), GQA 4/2, tied embeddings"),
        "gpt2": (GPT2LMHeadModel, lambda: GPT2Config(
            n_embd=HIDDEN, n_layer=LAYERS, n_head=4, n_positions=32, n_inner=None,
            activation_function="gelu_new", layer_norm_epsilon=1e-5, tie_word_embeddings=True,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, summary_first_dropout=0.0,
            bos_token_id=V - 1, eos_token_id=V - 1, **common),
            "learned positions, LayerNorm with bias, GELU tanh, Conv1D [in, out], tied"),
    }


def randomize(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():  # tied weights appear once
            if p.dim() == 1:
                if name.endswith("bias"):
                    p.copy_(BIAS_STD * torch.randn(p.shape, generator=g))
                else:  # RMSNorm / LayerNorm weight
                    p.copy_(1.0 + NORM_JITTER * torch.randn(p.shape, generator=g))
            else:
                emb = ("embed_tokens" in name or "lm_head" in name or name.endswith("wte.weight")
                       or name.endswith("wpe.weight"))
                p.copy_((EMBED_STD if emb else MATRIX_STD) * torch.randn(p.shape, generator=g))


def load(out):
    m = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32, attn_implementation="eager")
    return m.train()  # dropout is 0: train() and eval() compute the same


def loss_of(model, inputs, targets):
    logits = model(input_ids=inputs, use_cache=False).logits
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1)), logits


def adamw_run(out, inputs, targets, clip, schedule):
    model = load(out)
    params = list(model.parameters())
    opt = torch.optim.AdamW(params, lr=LR, betas=BETAS, eps=EPS, weight_decay=WEIGHT_DECAY,
                            foreach=False)
    sched = (transformers.get_cosine_schedule_with_warmup(opt, WARMUP, STEPS) if schedule == "cosine"
             else None)
    losses, lrs, norms = [], [], []
    for step in range(1, STEPS + 1):
        opt.zero_grad(set_to_none=True)
        loss, _ = loss_of(model, inputs, targets)
        loss.backward()
        norm = torch.sqrt(sum((p.grad.double() ** 2).sum() for p in params))
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(params, clip)
        lr = opt.param_groups[0]["lr"]
        opt.step()
        if sched is not None:
            sched.step()
        losses.append(float(loss.detach()))
        lrs.append(lr)
        norms.append(float(norm))
    with torch.no_grad():
        after, _ = loss_of(model, inputs, targets)
    return {"clip_norm": clip, "schedule": schedule, "warmup": WARMUP if schedule != "constant"
            else 0, "lrs": lrs, "grad_norms": norms, "losses": losses, "loss_after": float(after)}


def grads_by_file_name(model, out):
    """{checkpoint tensor name: gradient}. Parameters are matched to the file's names through the
    state dict's storage, so a tied or renamed tensor still finds its parameter."""
    by_ptr = {p.data_ptr(): p for p in model.parameters()}
    sd = model.state_dict()
    grads, no_grad = {}, []
    with safe_open(os.path.join(out, "model.safetensors"), "pt") as f:
        names = list(f.keys())
    for name in names:
        t = sd.get(name)
        p = by_ptr.get(t.data_ptr()) if t is not None else None
        if p is None:
            no_grad.append(name)
            continue
        assert tuple(p.shape) == tuple(t.shape), name
        grads[name] = p.grad.detach().clone().contiguous()
    seen = {g.data_ptr() for g in grads.values()}
    assert len(grads) == len(list(model.parameters())), \
        f"{len(grads)} gradients for {len(list(model.parameters()))} parameters ({seen and ''})"
    return grads, no_grad


def dump_json(obj, path):
    text = json.dumps(obj, indent=1)
    text = re.sub(r"\[\s+([-0-9.eE+,\s]+?)\s+\]",
                  lambda m: "[" + " ".join(m.group(1).split()) + "]", text)
    with open(path, "w") as f:
        f.write(text + "\n")


def make_one(arch, cls, make_cfg, notes, out_root, seed, log):
    t0 = time.time()
    out = os.path.join(out_root, arch)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    cfg = make_cfg()
    torch.manual_seed(seed)
    model = cls(cfg).float()
    randomize(model, 1000 + seed)
    model.save_pretrained(out, max_shard_size="50GB")
    for extra in ("generation_config.json",):  # not needed by the tests
        if os.path.exists(os.path.join(out, extra)):
            os.remove(os.path.join(out, extra))

    g = torch.Generator().manual_seed(2000 + seed)
    seqs = torch.randint(V, (BATCH, SEQ + 1), generator=g)
    inputs, targets = seqs[:, :SEQ].contiguous(), seqs[:, 1:].contiguous()
    with open(os.path.join(out, "data.jsonl"), "w") as f:
        for row in seqs.tolist():
            f.write(json.dumps(row) + "\n")

    model = load(out)
    loss, logits = loss_of(model, inputs, targets)
    loss.backward()
    grads, no_grad = grads_by_file_name(model, out)
    save_file(grads, os.path.join(out, "grads.safetensors"))
    save_file({"input_ids": inputs, "targets": targets,
               "logits": logits.detach().float().contiguous()},
              os.path.join(out, "batch.safetensors"))
    grad_norm = float(torch.sqrt(sum((g.double() ** 2).sum() for g in grads.values())))

    runs = {"adamw": adamw_run(out, inputs, targets, None, "constant"),
            "adamw_clip_cos": adamw_run(out, inputs, targets, CLIP, "cosine")}
    assert abs(runs["adamw"]["losses"][0] - float(loss)) < 1e-6

    fixture = {
        "arch": arch,
        "model_type": model.config.model_type,
        "notes": notes,
        "files": sorted(os.listdir(out)) + ["fixture.json"],
        "dtype": "float32",
        "vocab_size": V,
        "batch": BATCH,
        "seq": SEQ,
        "n_params": sum(p.numel() for p in model.parameters()),
        "seed": seed,
        "init": {"matrix_std": MATRIX_STD, "embed_std": EMBED_STD, "norm_jitter": NORM_JITTER,
                 "bias_std": BIAS_STD},
        "loss": float(loss),
        "grad_norm": grad_norm,
        "grad_names": sorted(grads),
        "tensors_without_grad": no_grad,
        "optimizer": {"name": "adamw", "lr": LR, "betas": list(BETAS), "eps": EPS,
                      "weight_decay": WEIGHT_DECAY, "steps": STEPS,
                      "lr_schedule": "transformers get_cosine_schedule_with_warmup(W, N), "
                                     "stepped after each optimizer step"},
        "runs": runs,
        "attn_implementation": "eager",
        "device": "cpu",
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
    }
    dump_json(fixture, os.path.join(out, "fixture.json"))
    size = sum(os.path.getsize(os.path.join(out, n)) for n in os.listdir(out))
    log(f"{arch}: loss {float(loss):.6f}, grad norm {grad_norm:.4f}, adamw losses "
        f"{runs['adamw']['losses'][0]:.4f} -> {runs['adamw']['loss_after']:.4f}, clip+cos -> "
        f"{runs['adamw_clip_cos']['loss_after']:.4f}, {size / 1024:.0f} KiB, "
        f"{time.time() - t0:.1f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", help="output directory (e.g. tests/fixtures/train)")
    ap.add_argument("--only", default="", help="comma-separated architectures")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=4)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.use_deterministic_algorithms(True, warn_only=True)

    def log(msg):
        print(f"[train-fixtures] {msg}", flush=True)

    log(f"torch {torch.__version__}, transformers {transformers.__version__}, out {a.out}")
    only = [s for s in a.only.split(",") if s]
    failed = []
    for arch, (cls, cfg, notes) in archs().items():
        if only and arch not in only:
            continue
        try:
            make_one(arch, cls, cfg, notes, a.out, a.seed, log)
        except Exception as e:
            import traceback
            traceback.print_exc()
            log(f"{arch}: FAILED: {type(e).__name__}: {e}")
            failed.append(arch)
    log(f"failed: {failed or 'none'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
