#!/usr/bin/env python3
"""Per-op gradient fixtures from PyTorch for tests/autograd/test_gpu_grad_torch.c.

Runs where torch (2.11) is installed (the H200 image, through the device tool), on the CPU, no
network:

    python3 tools/make_grad_fixtures.py OUT_DIR        # writes OUT_DIR/grad/...

The lead copies OUT_DIR/grad to tests/fixtures/grad/. Files:

  grad/grad.safetensors, for each case <c> of CASES below (every tensor f32):
    <c>.in<i>     input i (index inputs hold integer values; the test makes them i32)
    <c>.gout      the output gradient, N(0, 1)
    <c>.grad<i>   torch's gradient of sum(out * gout) with respect to input i, for the inputs
                  marked differentiable
  grad/index.json: per case the op, its arguments, every input's shape and whether it is
    differentiable, plus the versions (for people; the test knows each case's op by its name).

Inputs are seeded per case and kept away from kinks and ties (max pools: a shuffled ladder of
distinct values). The forward and backward run in float64 and the results are stored as f32, so
the fixture is torch's exact gradient of the f32-rounded inputs up to f32 rounding.
"""
import json
import os
import struct
import sys
import zlib

import torch
import torch.nn.functional as F

D = torch.float64


def seeded(name):
    g = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    return g


def randn(g, *shape, lo=-1.0, hi=1.0):
    return (torch.rand(*shape, generator=g, dtype=D) * (hi - lo) + lo).float().double()


def ladder(g, *shape, lo=-2.0, hi=2.0):
    n = 1
    for s in shape:
        n *= s
    v = lo + (hi - lo) * (torch.arange(n, dtype=D) + 0.5) / n
    return v[torch.randperm(n, generator=g)].reshape(shape).float().double()


def index(g, hi, *shape):
    return torch.randint(0, hi, shape, generator=g)


# name -> (inputs builder, forward, differentiable input numbers, arguments for index.json)
# The C test mirrors these names and arguments; keep both in step.
def cases():
    c = {}

    def add(name, build, fwd, diff, args):
        c[name] = (build, fwd, diff, args)

    add("tanh", lambda g: [randn(g, 3, 4, lo=-2, hi=2)], lambda x: torch.tanh(x[0]), [0], {})
    add("gelu", lambda g: [randn(g, 3, 4, lo=-3, hi=3)], lambda x: F.gelu(x[0]), [0], {})
    add("sigmoid", lambda g: [randn(g, 3, 4, lo=-3, hi=3)], lambda x: torch.sigmoid(x[0]), [0], {})
    add("mul_broadcast", lambda g: [randn(g, 3, 4), randn(g, 4)], lambda x: x[0] * x[1], [0, 1], {})
    add("div", lambda g: [randn(g, 3, 4), randn(g, 3, 4, lo=0.5, hi=2)], lambda x: x[0] / x[1], [0, 1], {})
    add("sum_dim1", lambda g: [randn(g, 2, 3, 4)], lambda x: x[0].sum(1), [0], {"dims": [1]})
    add("var_dim2", lambda g: [randn(g, 2, 3, 4)], lambda x: x[0].var(2), [0], {"dims": [2], "correction": 1})
    add("matmul", lambda g: [randn(g, 2, 3, 5), randn(g, 5, 4)], lambda x: x[0] @ x[1], [0, 1], {})
    add("linear", lambda g: [randn(g, 2, 3, 4), randn(g, 5, 4), randn(g, 5)],
        lambda x: F.linear(x[0], x[1], x[2]), [0, 1, 2], {})
    add("softmax", lambda g: [randn(g, 2, 3, 5, lo=-2, hi=2)], lambda x: F.softmax(x[0], -1), [0], {"dim": -1})
    add("log_softmax", lambda g: [randn(g, 3, 5, lo=-2, hi=2)], lambda x: F.log_softmax(x[0], -1), [0], {"dim": -1})
    add("layer_norm", lambda g: [randn(g, 2, 3, 8, lo=-2, hi=2), randn(g, 8, lo=0.5, hi=1.5), randn(g, 8)],
        lambda x: F.layer_norm(x[0], (8,), x[1], x[2], 1e-5), [0, 1, 2], {"eps": 1e-5})
    add("rms_norm", lambda g: [randn(g, 2, 3, 8, lo=-2, hi=2), randn(g, 8, lo=0.5, hi=1.5)],
        lambda x: F.rms_norm(x[0], (8,), x[1], 1e-5), [0, 1], {"eps": 1e-5})
    add("embedding", lambda g: [randn(g, 6, 4), index(g, 6, 2, 5)], lambda x: F.embedding(x[1], x[0]), [0], {})
    add("cross_entropy_smoothing", lambda g: [randn(g, 4, 6, lo=-2, hi=2), index(g, 6, 4)],
        lambda x: F.cross_entropy(x[0], x[1], label_smoothing=0.1), [0], {"label_smoothing": 0.1})
    add("mse_loss", lambda g: [randn(g, 3, 4), randn(g, 3, 4)], lambda x: F.mse_loss(x[0], x[1]), [0, 1], {})
    add("conv1d", lambda g: [randn(g, 2, 3, 9), randn(g, 4, 3, 3), randn(g, 4)],
        lambda x: F.conv1d(x[0], x[1], x[2], stride=2, padding=1), [0, 1, 2], {"stride": 2, "padding": 1})
    add("conv2d_groups_dilation", lambda g: [randn(g, 2, 4, 7, 6), randn(g, 6, 2, 3, 2), randn(g, 6)],
        lambda x: F.conv2d(x[0], x[1], x[2], stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2), [0, 1, 2],
        {"stride": [2, 1], "padding": [1, 0], "dilation": [1, 2], "groups": 2})
    add("conv3d", lambda g: [randn(g, 1, 2, 4, 4, 3), randn(g, 3, 2, 2, 2, 2)],
        lambda x: F.conv3d(x[0], x[1], None, stride=(1, 2, 1), padding=1), [0, 1], {"stride": [1, 2, 1], "padding": 1})
    add("conv_transpose2d", lambda g: [randn(g, 1, 4, 3, 4), randn(g, 4, 1, 3, 2), randn(g, 2)],
        lambda x: F.conv_transpose2d(x[0], x[1], x[2], stride=2, padding=(1, 0), output_padding=(1, 0), groups=2),
        [0, 1, 2], {"stride": 2, "padding": [1, 0], "output_padding": [1, 0], "groups": 2})
    add("max_pool2d", lambda g: [ladder(g, 2, 2, 5, 6)],
        lambda x: F.max_pool2d(x[0], (3, 2), (2, 1), (1, 1), ceil_mode=True), [0],
        {"kernel": [3, 2], "stride": [2, 1], "padding": [1, 1], "ceil_mode": True})
    add("avg_pool2d", lambda g: [randn(g, 2, 2, 5, 6)],
        lambda x: F.avg_pool2d(x[0], 3, 2, 1, ceil_mode=True, count_include_pad=False), [0],
        {"kernel": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False})
    add("adaptive_avg_pool2d", lambda g: [randn(g, 2, 2, 5, 7)],
        lambda x: F.adaptive_avg_pool2d(x[0], (3, 4)), [0], {"output_size": [3, 4]})
    add("interpolate_bilinear", lambda g: [randn(g, 1, 2, 4, 5)],
        lambda x: F.interpolate(x[0], size=(7, 3), mode="bilinear", align_corners=False), [0],
        {"size": [7, 3], "mode": "bilinear", "align_corners": False})
    add("interpolate_bicubic_align", lambda g: [randn(g, 1, 1, 4, 4)],
        lambda x: F.interpolate(x[0], size=(6, 8), mode="bicubic", align_corners=True), [0],
        {"size": [6, 8], "mode": "bicubic", "align_corners": True})
    add("interpolate_nearest", lambda g: [randn(g, 2, 2, 3, 4)],
        lambda x: F.interpolate(x[0], size=(5, 7), mode="nearest"), [0], {"size": [5, 7], "mode": "nearest"})
    # rules added in the fourth session (2026-12-02)
    def grid(g, *shape):  # grid values -1.15 + 0.1 k: source coordinates >= 0.1 from the kinks
        return (torch.randint(0, 24, shape, generator=g).to(D) * 0.1 - 1.15).float().double()

    def halves(g, *shape):  # a 0.5 grid from -1.5: exact zeros, once or more per row
        return (torch.randint(0, 6, shape, generator=g).to(D) * 0.5 - 1.5)

    def perm_columns(g, n, rows, cols):  # distinct down each column: a scatter without collisions
        return torch.stack([torch.randperm(n, generator=g)[:rows] for _ in range(cols)], dim=1)

    add("grid_sample_bilinear_zeros", lambda g: [randn(g, 2, 2, 5, 5), grid(g, 2, 3, 4, 2)],
        lambda x: F.grid_sample(x[0], x[1], mode="bilinear", padding_mode="zeros", align_corners=False), [0, 1],
        {"mode": "bilinear", "padding_mode": "zeros", "align_corners": False})
    add("grid_sample_bicubic_reflection_align", lambda g: [randn(g, 1, 2, 5, 5), grid(g, 1, 3, 4, 2)],
        lambda x: F.grid_sample(x[0], x[1], mode="bicubic", padding_mode="reflection", align_corners=True), [0, 1],
        {"mode": "bicubic", "padding_mode": "reflection", "align_corners": True})
    add("grid_sample_nearest_border", lambda g: [randn(g, 2, 2, 5, 5), grid(g, 2, 3, 4, 2)],
        lambda x: F.grid_sample(x[0], x[1], mode="nearest", padding_mode="border", align_corners=False), [0, 1],
        {"mode": "nearest", "padding_mode": "border", "align_corners": False})
    add("scatter", lambda g: [randn(g, 4, 3), perm_columns(g, 4, 3, 3), randn(g, 3, 3)],
        lambda x: torch.scatter(x[0], 0, x[1], x[2]), [0, 2], {"dim": 0})
    add("scatter_add", lambda g: [randn(g, 3, 4), index(g, 4, 3, 5), randn(g, 3, 5)],
        lambda x: torch.scatter_add(x[0], 1, x[1], x[2]), [0, 2], {"dim": 1})
    add("index_add_alpha", lambda g: [randn(g, 2, 4, 3), index(g, 4, 5), randn(g, 2, 5, 3)],
        lambda x: torch.index_add(x[0], 1, x[1], x[2], alpha=-1.5), [0, 2], {"dim": 1, "alpha": -1.5})
    add("cumprod_zeros", lambda g: [halves(g, 4, 6)], lambda x: torch.cumprod(x[0], 1), [0], {"dim": 1})
    add("prod_dim_zeros", lambda g: [halves(g, 4, 2, 3)], lambda x: x[0].prod(2), [0], {"dim": 2})
    add("digamma", lambda g: [randn(g, 3, 4, lo=0.3, hi=9)], lambda x: torch.digamma(x[0]), [0], {})
    add("sdpa_float_mask", lambda g: [randn(g, 1, 2, 3, 4), randn(g, 1, 2, 4, 4), randn(g, 1, 2, 4, 2), randn(g, 3, 4)],
        lambda x: F.scaled_dot_product_attention(x[0], x[1], x[2], attn_mask=x[3]), [0, 1, 2, 3], {})
    add("sort_descending", lambda g: [ladder(g, 3, 5)], lambda x: torch.sort(x[0], 1, descending=True).values, [0],
        {"dim": 1, "descending": True})
    add("repeat", lambda g: [randn(g, 2, 3)], lambda x: x[0].repeat(2, 3, 2), [0], {"repeats": [2, 3, 2]})
    # rules of the ops first declared without one, pad's other modes and scatter's reductions
    # (2026-12-02, second part)
    def quarter(g, off, *shape):  # a 0.25 grid plus off: differences of two such grids avoid 0 and +-0.5
        return (torch.randint(-8, 8, shape, generator=g).to(D) * 0.25 + off)

    def cdist(p):
        return lambda g: [quarter(g, 0, 2, 3, 4), quarter(g, 0.125, 2, 5, 4)]

    mm = "donot_use_mm_for_euclid_dist"
    add("diff_prepend_append", lambda g: [randn(g, 3, 4), randn(g, 3, 1), randn(g, 3, 2)],
        lambda x: torch.diff(x[0], n=2, dim=-1, prepend=x[1], append=x[2]), [0, 1, 2], {"n": 2, "dim": -1})
    add("trace", lambda g: [randn(g, 4, 5)], lambda x: torch.trace(x[0]), [0], {})
    add("diag_matrix", lambda g: [randn(g, 3, 5)], lambda x: torch.diag(x[0], 2), [0], {"diagonal": 2})
    add("diag_vector", lambda g: [randn(g, 4)], lambda x: torch.diag(x[0], -1), [0], {"diagonal": -1})
    add("diag_embed", lambda g: [randn(g, 2, 3)], lambda x: torch.diag_embed(x[0], offset=1, dim1=0, dim2=2), [0],
        {"offset": 1, "dim1": 0, "dim2": 2})
    add("cdist_p2", cdist(2), lambda x: torch.cdist(x[0], x[1], p=2, compute_mode=mm), [0, 1], {"p": 2})
    add("cdist_p1", cdist(1), lambda x: torch.cdist(x[0], x[1], p=1), [0, 1], {"p": 1})
    add("cdist_p3", cdist(3), lambda x: torch.cdist(x[0], x[1], p=3), [0, 1], {"p": 3})
    add("cdist_p0_5", cdist(0.5), lambda x: torch.cdist(x[0], x[1], p=0.5), [0, 1], {"p": 0.5})
    add("cdist_inf", lambda g: [ladder(g, 2, 3, lo=0.2, hi=2.2), randn(g, 4, 3, lo=-0.05, hi=0.05)],
        lambda x: torch.cdist(x[0], x[1], p=float("inf")), [0, 1], {"p": "inf"})
    add("cosine_similarity_broadcast", lambda g: [randn(g, 2, 3, 4, lo=-2, hi=2), randn(g, 3, 4, lo=-2, hi=2)],
        lambda x: F.cosine_similarity(x[0], x[1], dim=-1, eps=1e-8), [0, 1], {"dim": -1, "eps": 1e-8})
    add("huber_loss", lambda g: [quarter(g, 0, 3, 4), quarter(g, 0.125, 3, 4)],
        lambda x: F.huber_loss(x[0], x[1], delta=0.5), [0, 1], {"delta": 0.5, "reduction": "mean"})
    add("bernoulli", lambda g: [randn(g, 3, 4, lo=0.2, hi=0.8)], lambda x: torch.bernoulli(x[0]), [0], {})
    add("masked_select", lambda g: [randn(g, 2, 3, 4), (torch.rand(3, 4, generator=g) < 0.5).to(D)],
        lambda x: torch.masked_select(x[0], x[1] != 0), [0], {"mask": "input 1 != 0, broadcast"})
    add("index_put", lambda g: [randn(g, 4, 3), randn(g, 3), torch.randperm(4, generator=g)[:2]],
        lambda x: x[0].index_put((x[2],), x[1], accumulate=False), [0, 1], {"accumulate": False})
    add("index_put_accumulate", lambda g: [randn(g, 4, 5), randn(g, 6), torch.randint(-4, 4, (6,), generator=g),
                                           torch.randint(-5, 5, (6,), generator=g)],
        lambda x: x[0].index_put((x[2], x[3]), x[1], accumulate=True), [0, 1], {"accumulate": True})
    for mode in ("reflect", "replicate", "circular"):
        add(f"pad_{mode}", lambda g: [randn(g, 2, 3, 4)], lambda x, m=mode: F.pad(x[0], (1, 1, 2, 1), mode=m), [0],
            {"pad": [1, 1, 2, 1], "mode": mode})
    add("scatter_prod_zeros", lambda g: [halves(g, 4, 3) + 0.5, index(g, 4, 3, 3), halves(g, 3, 3) + 0.5],
        lambda x: torch.scatter_reduce(x[0], 0, x[1], x[2], "prod", include_self=True), [0, 2], {"dim": 0})
    add("scatter_amax", lambda g: [ladder(g, 4, 3), index(g, 4, 3, 3), ladder(g, 3, 3)],
        lambda x: torch.scatter_reduce(x[0], 0, x[1], x[2], "amax", include_self=True), [0, 2], {"dim": 0})
    add("scatter_amin", lambda g: [ladder(g, 3, 4), index(g, 3, 3, 3), ladder(g, 3, 3)],
        lambda x: torch.scatter_reduce(x[0], 1, x[1], x[2], "amin", include_self=True), [0, 2], {"dim": 1})
    add("cross_entropy_probs_target_weight",
        lambda g: [randn(g, 4, 5, lo=-2, hi=2), randn(g, 4, 5, lo=0.1, hi=0.9), randn(g, 5, lo=0.5, hi=2)],
        lambda x: F.cross_entropy(x[0], x[1], weight=x[2], label_smoothing=0.1), [0, 1, 2],
        {"target": "probabilities", "label_smoothing": 0.1, "reduction": "mean"})
    add("cross_entropy_probs_none_nd", lambda g: [randn(g, 2, 3, 2, lo=-2, hi=2), randn(g, 2, 3, 2, lo=0.1, hi=0.9)],
        lambda x: F.cross_entropy(x[0], x[1], reduction="none"), [0, 1],
        {"target": "probabilities", "reduction": "none"})
    return c


def write_safetensors(path, tensors, metadata):
    """The safetensors format by hand (8-byte little-endian header length, JSON header with
    dtype/shape/data_offsets and __metadata__, raw little-endian f32 bytes): no extra package."""
    header = {"__metadata__": metadata}
    blobs, off = [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().to(torch.float32).contiguous()
        b = t.numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_grad_fixtures.py OUT_DIR")
    out = os.path.join(sys.argv[1], "grad")
    os.makedirs(out, exist_ok=True)
    torch.use_deterministic_algorithms(True)
    tensors, index_json = {}, {"torch": torch.__version__, "cases": {}}
    done, failed = [], []
    for name, (build, fwd, diff, args) in cases().items():
        g = seeded(name)
        try:  # a case torch refuses is reported and left out (the C test calls it pending)
            xs = build(g)
            for i in diff:
                xs[i].requires_grad_(True)
            y = fwd(xs)
            gout = torch.randn(y.shape, generator=g, dtype=D).float().double()
            (y * gout).sum().backward()
        except Exception as e:
            print(f"FAILED {name}: {type(e).__name__}: {e}")
            failed.append(name)
            continue
        done.append(name)
        for i, x in enumerate(xs):
            tensors[f"{name}.in{i}"] = x.detach().double()
        tensors[f"{name}.gout"] = gout
        for i in diff:
            tensors[f"{name}.grad{i}"] = xs[i].grad if xs[i].grad is not None else torch.zeros_like(xs[i])  # None: no gradient flowed, i.e. zero
        index_json["cases"][name] = {
            "args": args, "inputs": [list(x.shape) for x in xs], "differentiable": diff, "output": list(y.shape)}
    write_safetensors(os.path.join(out, "grad.safetensors"), tensors, {"cases": ",".join(done)})
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump(index_json, f, indent=1)
    print(f"{len(index_json['cases'])} cases -> {out}" + (f"; {len(failed)} failed: {', '.join(failed)}" if failed else ""))


if __name__ == "__main__":
    main()
