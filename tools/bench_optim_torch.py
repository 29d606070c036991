#!/usr/bin/env python3
"""torch.optim's step time on CUDA for the parameter shapes of bench/optim.c (GPT-2 small, 124M
parameters in 148 tensors), beside `bench_optim` in the same device run:

    python3 tools/bench_optim_torch.py [--reps N]

AdamW in its three implementations (foreach=False: a loop of per-tensor ops; foreach=True, CUDA's
default; fused=True), f32 and bf16 parameters, SGD with momentum 0.9, and clip_grad_norm_. Each:
2 warm-up steps, then N steps between two torch.cuda.synchronize, wall clock."""
import argparse
import time

import torch


def shapes(vocab=50257, ctx=1024, d=768, layers=12):
    s = [(vocab, d), (ctx, d)]
    for _ in range(layers):
        s += [(d,), (d,), (d, 3 * d), (3 * d,), (d, d), (d,), (d,), (d,), (d, 4 * d), (4 * d,), (4 * d, d), (d,)]
    return s + [(d,), (d,)]


def timed(fn, reps):
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / reps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=10)
    a = ap.parse_args()
    print("torch", torch.__version__, torch.cuda.get_device_name())
    for dtype in (torch.float32, torch.bfloat16):
        params = [torch.nn.Parameter(torch.full(s, 0.5, device="cuda", dtype=dtype)) for s in shapes()]
        for p in params:
            p.grad = torch.full_like(p, 1e-3)
        n = sum(p.numel() for p in params)
        for name, make in [("adamw foreach=False", lambda: torch.optim.AdamW(params, foreach=False)),
                           ("adamw foreach=True", lambda: torch.optim.AdamW(params, foreach=True)),
                           ("adamw fused=True", lambda: torch.optim.AdamW(params, fused=True)),
                           ("sgd momentum 0.9", lambda: torch.optim.SGD(params, lr=1e-3, momentum=0.9))]:
            opt = make()
            t = timed(opt.step, a.reps)
            print(f"{name:22s} {str(dtype)[6:]:9s} {n:11d} elements in {len(params)} tensors: {t * 1e3:8.3f} ms a step")
        if dtype == torch.float32:
            t = timed(lambda: torch.nn.utils.clip_grad_norm_(params, 1e9), a.reps)
            print(f"{'clip_grad_norm_':22s} {str(dtype)[6:]:9s} {n:11d} elements: {t * 1e3:8.3f} ms")


if __name__ == "__main__":
    main()
