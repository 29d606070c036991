#!/usr/bin/env python3
"""Decode and prefill speed of the H200 model benchmarks as an SVG bar chart.

Reads bench/results/h200/<model>-<type>.txt (written by tools/h200_bench.sh models) and writes
bench/results/h200/decode.svg: decode tok/s per model and weight type beside the bandwidth
roofline (4.16 TB/s over the bytes read per token). Plain SVG, no plotting library."""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "bench/results/h200"
rows = []
for name in ["qwen2.5-0.5b-f16", "qwen2.5-0.5b-q8_0", "llama-3.2-1b-f16", "llama-3.2-1b-q8_0"]:
    text = open(os.path.join(root, name + ".txt")).read()
    dec = float(re.search(r"decode:\s+\d+ tokens, ([\d.]+) tok/s", text).group(1))
    read = float(re.search(r"\(([\d.]+) MB read per token\)", text).group(1))
    rows.append((name, dec, 4.16e12 / (read * 1e6)))

W, H, left, top, bar = 760, 80 + 70 * len(rows), 170, 50, 22
top_val = max(r for _, _, r in rows) * 1.05
x = lambda v: left + (W - left - 30) * v / top_val
out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="13">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<text x="{left}" y="24" font-size="15" font-weight="bold">wgt decode on the NVIDIA H200 (Vulkan via Dawn), '
       f'tokens/s</text>']
for i, (name, dec, roof) in enumerate(rows):
    y = top + 70 * i
    out.append(f'<text x="{left - 8}" y="{y + 28}" text-anchor="end">{name}</text>')
    out.append(f'<rect x="{left}" y="{y + 2}" width="{x(roof) - left:.1f}" height="{bar}" fill="#d9d9d9"/>')
    out.append(f'<text x="{x(roof) + 4:.1f}" y="{y + 18}" fill="#666">{roof:.0f} roofline</text>')
    out.append(f'<rect x="{left}" y="{y + 2 + bar}" width="{x(dec) - left:.1f}" height="{bar}" fill="#3b6fb6"/>')
    out.append(f'<text x="{x(dec) + 4:.1f}" y="{y + 18 + bar}">{dec:.0f} tok/s</text>')
aim = x(1500)
out.append(f'<line x1="{aim:.1f}" y1="{top - 8}" x2="{aim:.1f}" y2="{H - 20}" stroke="#c0392b" stroke-dasharray="4 3"/>')
out.append(f'<text x="{aim + 4:.1f}" y="{H - 8}" fill="#c0392b">1,500 tok/s aim (Qwen2.5-0.5B f16)</text>')
out.append("</svg>")
open(os.path.join(root, "decode.svg"), "w").write("\n".join(out) + "\n")
print(os.path.join(root, "decode.svg"))
