#!/usr/bin/env python3
"""Issue 14's six rows as an SVG chart: wgt's prefill and decode beside llama.cpp CUDA on the same GPU.

Reads DIR/summary.txt as tools/h200_final_main.sh writes it (one line per run, named [ql]TYPE-pP:
`qf16-p512    prefill: 512 tokens in 0.013 s = 38994.6 tok/s | decode:  128 tokens, 848.4 tok/s, ...`)
and writes DIR/rows.svg: for every row, prefill 512 (from the -p512 run) and decode after a 16-token
prompt (the -p16 run, as llama-bench's tg128 decodes from an empty context) as fractions of llama.cpp
CUDA's pp512 and tg128, with the issue's aims (0.5x prefill, 1x decode) drawn as lines and the tok/s
written on each bar. llama.cpp's figures are issue 14's, measured on the same H200 with the same
random-weight GGUF shapes. Plain SVG, no plotting library.

    python3 tools/rows_chart.py [DIR]     (default bench/results/h200/final-2026-12-03-0755)
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "bench/results/h200/final-2026-12-03-0755"
# row -> (label, llama.cpp CUDA pp512, tg128): issue 14's table
ROWS = [("qf16", "Qwen2.5-0.5B f16", 76800, 758), ("qq8_0", "Qwen2.5-0.5B Q8_0", 49000, 915),
        ("qq4_0", "Qwen2.5-0.5B Q4_0", 48200, 950), ("lf16", "Llama-3.2-1B f16", 69900, 789),
        ("lq8_0", "Llama-3.2-1B Q8_0", 47800, 827), ("lq4_0", "Llama-3.2-1B Q4_0", 44100, 987)]
runs = {}  # "qf16-p512" -> (prefill tok/s, decode tok/s)
pat = re.compile(r"^(\S+)\s+prefill:.*= ([\d.]+) tok/s[^|]*\| decode:\s+\d+ tokens, ([\d.]+) tok/s")
with open(os.path.join(root, "summary.txt")) as f:
    for line in f:
        m = pat.match(line)
        if m:
            runs[m.group(1)] = (float(m.group(2)), float(m.group(3)))
rows = []
for key, label, pp, tg in ROWS:
    p, d = runs.get(key + "-p512"), runs.get(key + "-p16")
    if p and d:
        rows.append((label, p[0], pp, d[1], tg))
if not rows:
    sys.exit(f"{root}/summary.txt: no `[ql]TYPE-p512` / `-p16` lines of tools/h200_final_main.sh")

W, left, top, gap, bar, panel = 1010, 160, 66, 44, 26, 300
H = top + gap * len(rows) + 34
out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<text x="10" y="22" font-size="15" font-weight="bold">wgt (WebGPU, Vulkan via Dawn) as a fraction of '
       f'llama.cpp CUDA, one NVIDIA H200</text>']
for j, (title, aim) in enumerate((("prefill 512 tokens (pp512)", 0.5), ("decode after 16 tokens (tg128)", 1.0))):
    x0 = left + j * (panel + 150)
    top_ratio = max(2 * aim, max(r[1] / r[2] if j == 0 else r[3] / r[4] for r in rows) * 1.1)
    x = lambda v, x0=x0, t=top_ratio: x0 + panel * v / t
    out.append(f'<text x="{x0}" y="48" font-weight="bold">{title}</text>')
    for v in ((0.25, 0.5, 0.75, 1.0) if j == 0 else (0.5, 1.0, 1.5, 2.0)):
        if v <= top_ratio:
            dash = "" if v == aim else ' stroke-dasharray="3,3"'
            col = "#c0392b" if v == aim else "#999"
            out.append(f'<line x1="{x(v):.1f}" y1="{top - 4}" x2="{x(v):.1f}" y2="{H - 24}" stroke="{col}"{dash}/>')
            out.append(f'<text x="{x(v):.1f}" y="{H - 10}" text-anchor="middle" fill="{col}">{v:g}x</text>')
    for i, (label, p, pp, d, tg) in enumerate(rows):
        y = top + gap * i
        if j == 0:
            out.append(f'<text x="{left - 8}" y="{y + 18}" text-anchor="end">{label}</text>')
        ours, theirs = (p, pp) if j == 0 else (d, tg)
        r = ours / theirs
        col = "#3b6fb6" if r >= aim else "#9db7dd"
        out.append(f'<rect x="{x0}" y="{y}" width="{x(r) - x0:.1f}" height="{bar}" fill="{col}"/>')
        out.append(f'<text x="{x(r) + 4:.1f}" y="{y + 17}">{r:.2f}x: {ours:,.0f} vs {theirs:,}</text>')
out.append(f'<text x="10" y="{H - 10}" fill="#555">dark: at the aim (red line)</text>')
out.append("</svg>")
path = os.path.join(root, "rows.svg")
open(path, "w").write("\n".join(out) + "\n")
print(path)
