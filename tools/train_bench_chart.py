#!/usr/bin/env python3
"""Training speed of wgt beside PyTorch eager on the same GPU, as an SVG bar chart (issue 13).

Reads the lines `wgt|torch NAME DTYPE tok/s V ms/step V peak_GiB V ...` that `wgt bench --train` and
tools/train_bench_torch.py print (tools/h200_train_bench.sh collects them into DIR/train.txt) and
writes DIR/train.svg: tokens/s per configuration (name, dtype), wgt's bar under PyTorch's, each
labelled with ms/step and peak memory. Plain SVG, no plotting library.

    python3 tools/train_bench_chart.py [DIR]     (default bench/results/h200)
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "bench/results/h200"
line = re.compile(r"^(wgt|torch) (\S+) (\S+) tok/s ([\d.]+) ms/step ([\d.]+) peak_GiB ([\d.]+)")
runs = {}  # (name, dtype) -> {who: (tok/s, ms, GiB)}
with open(os.path.join(root, "train.txt")) as f:
    for text in f:
        m = line.match(text.strip())
        if m:
            dtype = "bf16" if m.group(3).startswith("bf16") else m.group(3)  # torch says bf16-autocast
            runs.setdefault((m.group(2), dtype), {})[m.group(1)] = tuple(float(m.group(i)) for i in (4, 5, 6))
if not runs:
    sys.exit(f"{root}/train.txt: no `wgt|torch NAME DTYPE tok/s ...` lines")

colors = {"torch": "#d9d9d9", "wgt": "#3b6fb6"}
keys = sorted(runs)
W, left, top, bar, gap = 820, 190, 50, 22, 70
H = top + gap * len(keys) + 40
top_val = max(v[0] for r in runs.values() for v in r.values()) * 1.3
x = lambda v: left + (W - left - 30) * v / top_val
out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="13">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<text x="{left}" y="24" font-size="15" font-weight="bold">Training tokens/s (AdamW), wgt (WebGPU) and '
       f'PyTorch eager (CUDA), one GPU</text>']
for i, key in enumerate(keys):
    y = top + gap * i
    out.append(f'<text x="{left - 8}" y="{y + 28}" text-anchor="end">{key[0]} {key[1]}</text>')
    for j, who in enumerate(("torch", "wgt")):
        if who not in runs[key]:
            continue
        tok, ms, gib = runs[key][who]
        yy = y + 2 + j * bar
        out.append(f'<rect x="{left}" y="{yy}" width="{x(tok) - left:.1f}" height="{bar}" fill="{colors[who]}"/>')
        out.append(f'<text x="{x(tok) + 4:.1f}" y="{yy + 16}">{who} {tok:,.0f} tok/s, {ms:.1f} ms/step, '
                   f'{gib:.2f} GiB peak</text>')
out.append("</svg>")
path = os.path.join(root, "train.svg")
open(path, "w").write("\n".join(out) + "\n")
print(path)
