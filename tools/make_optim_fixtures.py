#!/usr/bin/env python3
"""Reference fixtures for wgt's optimizers, computed by torch.optim and torch.nn.utils.

Runs where torch (2.11) and numpy are installed (the H200 image, through the device tool), on the
CPU in float32, deterministic, no network:

    python3 tools/make_optim_fixtures.py OUT_DIR        # writes OUT_DIR/optim/...

The lead copies OUT_DIR/optim to tests/fixtures/optim/. Files:

  optim/<case>.safetensors, one per optimizer configuration (CASES below):
    param.<i>.initial          the parameters before the first step (i = 0, 1)
    grad.<i>.step<k>           the gradient given at step k (k = 1..5); ABSENT when parameter i had
                               no gradient at that step (torch skips it: no update, no state change,
                               its own step count does not advance)
    param.<i>.step<k>          the parameters after step k
    state.<i>.<name>           torch's state after the last step (momentum_buffer, exp_avg,
                               exp_avg_sq, max_exp_avg_sq, step as a 1-element f32)
    metadata (__metadata__):   optimizer ("sgd" | "adam" | "adamw"), steps, n_params, and every
                               hyper-parameter as repr(float) / "0" | "1" (lr, momentum, dampening,
                               nesterov, weight_decay, beta1, beta2, eps, amsgrad)
  optim/clip.safetensors, torch.nn.utils.clip_grad_norm_ (norm_type 2, foreach=False):
    <case>.grad.<i>.in / <case>.grad.<i>.out   gradients before / after clipping
    <case>.total_norm                          the returned norm (1 element)
    metadata: cases (comma-separated), <case>.max_norm, <case>.n_grads
  optim/cases.json: the same hyper-parameters and shapes, readable by people, plus versions
    (total_norm as a string: it is inf / nan in two cases, which JSON cannot hold as numbers).

Every optimizer runs with foreach=False and fused=False: torch's single-tensor code path, the one
its documentation spells out as pseudo-code. Gradients are seeded N(0,1) scaled by a per-step factor
(STEP_SCALE) so that amsgrad's running maximum of the second moment is not simply the latest value,
and the gradient sizes differ from step to step.
"""
import json
import os
import struct
import sys

import numpy as np
import torch

SHAPES = [(31, 17), (129,)]           # odd sizes: not multiples of a workgroup or a vec4
STEPS = 5
STEP_SCALE = [1.0, 3.0, 0.5, 2.0, 0.25]
SEED = 1234

# name -> (optimizer, kwargs, steps at which parameter 1 has no gradient)
CASES = {
    "sgd_plain": ("sgd", dict(lr=0.1), []),
    "sgd_momentum_dampening": ("sgd", dict(lr=0.05, momentum=0.9, dampening=0.3), [3]),
    "sgd_nesterov_wd": ("sgd", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.01), []),
    "adam_wd": ("adam", dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1), [2]),
    "adam_amsgrad": ("adam", dict(lr=2e-2, betas=(0.8, 0.99), eps=1e-6, amsgrad=True), []),
    "adamw_wd": ("adamw", dict(lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1), [4]),
    "adamw_amsgrad_wd": ("adamw", dict(lr=5e-3, betas=(0.85, 0.98), eps=1e-7, weight_decay=0.05,
                                       amsgrad=True), [1]),
}

# name -> (max_norm, gradient makers): clip_grad_norm_ cases
CLIP_CASES = ["above", "below", "inf", "nan", "zero"]


def write_safetensors(path, tensors, metadata):
    """safetensors.torch.save_file when importable, else the format by hand (8-byte little-endian
    header length, JSON header with dtype/shape/data_offsets and __metadata__, raw bytes)."""
    tensors = {k: v.detach().contiguous() for k, v in tensors.items()}
    try:
        from safetensors.torch import save_file
        save_file(tensors, path, metadata=metadata)
        return
    except ImportError:
        pass
    header = {"__metadata__": metadata}
    blobs, off = [], 0
    for name in sorted(tensors):
        b = tensors[name].numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def hyper(kind, kw):
    """Every hyper-parameter, torch's defaults filled in, as strings for the metadata."""
    b1, b2 = kw.get("betas", (0.9, 0.999))
    h = dict(optimizer=kind, lr=kw["lr"], momentum=kw.get("momentum", 0.0),
             dampening=kw.get("dampening", 0.0), nesterov=int(kw.get("nesterov", False)),
             weight_decay=kw.get("weight_decay", 0.0 if kind != "adamw" else 1e-2),
             beta1=b1, beta2=b2, eps=kw.get("eps", 1e-8), amsgrad=int(kw.get("amsgrad", False)))
    return {k: (repr(v) if isinstance(v, float) else str(v)) for k, v in h.items()}


def make_case(name, kind, kw, skips, out):
    g = torch.Generator().manual_seed(SEED + sum(map(ord, name)))
    params = [torch.nn.Parameter(torch.randn(s, generator=g)) for s in SHAPES]
    tensors = {f"param.{i}.initial": p.detach().clone() for i, p in enumerate(params)}
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[kind]
    opt = cls(params, foreach=False, fused=False, **kw) if kind != "sgd" else cls(params, foreach=False, **kw)
    for k in range(1, STEPS + 1):
        for i, p in enumerate(params):
            grad = torch.randn(p.shape, generator=g) * STEP_SCALE[k - 1]
            if i == 1 and k in skips:
                p.grad = None
            else:
                p.grad = grad
                tensors[f"grad.{i}.step{k}"] = grad.clone()
        opt.step()
        for i, p in enumerate(params):
            tensors[f"param.{i}.step{k}"] = p.detach().clone()
    for i, p in enumerate(params):
        for sname, v in opt.state[p].items():
            if torch.is_tensor(v):
                tensors[f"state.{i}.{sname}"] = v.detach().to(torch.float32).reshape(-1 if v.dim() == 0 else v.shape).clone()
    meta = hyper(kind, kw)
    meta.update(steps=str(STEPS), n_params=str(len(params)),
                skipped=",".join(f"1@{k}" for k in skips), torch=torch.__version__)
    write_safetensors(os.path.join(out, name + ".safetensors"), tensors, meta)
    return dict(meta, shapes=[list(s) for s in SHAPES], step_scale=STEP_SCALE)


def make_clip(out):
    g = torch.Generator().manual_seed(SEED)
    tensors, meta, info = {}, {"cases": ",".join(CLIP_CASES), "torch": torch.__version__}, {}
    for c in CLIP_CASES:
        grads = [torch.randn(s, generator=g) for s in SHAPES] + [torch.randn(5, generator=g)]
        max_norm = {"above": 1.5, "below": 1e3, "inf": 1.0, "nan": 1.0, "zero": 0.5}[c]
        if c == "inf":
            grads[1][7] = float("inf")
        if c == "nan":
            grads[0][3, 4] = float("nan")
        if c == "zero":
            grads = [torch.zeros_like(x) for x in grads]
        for i, x in enumerate(grads):
            tensors[f"{c}.grad.{i}.in"] = x.clone()
        params = [torch.nn.Parameter(torch.zeros_like(x)) for x in grads]
        for p, x in zip(params, grads):
            p.grad = x.clone()
        total = torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type=2.0, foreach=False)
        for i, p in enumerate(params):
            tensors[f"{c}.grad.{i}.out"] = p.grad.clone()
        tensors[f"{c}.total_norm"] = total.detach().reshape(1).to(torch.float32)
        meta[f"{c}.max_norm"] = repr(max_norm)
        meta[f"{c}.n_grads"] = str(len(grads))
        info[c] = dict(max_norm=max_norm, total_norm=repr(float(total)), shapes=[list(x.shape) for x in grads])
    write_safetensors(os.path.join(out, "clip.safetensors"), tensors, meta)
    return info


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_optim_fixtures.py OUT_DIR  (writes OUT_DIR/optim/*.safetensors and cases.json)")
    out = os.path.join(sys.argv[1], "optim")
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)  # reductions in one order
    cases = {name: make_case(name, kind, kw, skips, out) for name, (kind, kw, skips) in CASES.items()}
    clip = make_clip(out)
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump({"torch": torch.__version__, "numpy": np.__version__, "seed": SEED, "steps": STEPS,
                   "optimizers": cases, "clip_grad_norm": clip}, f, indent=1, sort_keys=True)
    total = sum(os.path.getsize(os.path.join(out, n)) for n in os.listdir(out))
    print(f"wrote {len(os.listdir(out))} files, {total} bytes, to {out}")


if __name__ == "__main__":
    main()
