#!/usr/bin/env python3
"""wgt serve's aggregate decode tokens/s against concurrent streams, as an SVG chart (issue 18).

Reads DIR/serve_<type>.json written by tools/serve_bench.py (tools/h200_serve_bench.sh makes them on
the H200) and writes DIR/serve.svg: one line per weight type, aggregate tok/s at each stream count,
with the single-stream figure times the stream count drawn dashed (perfect batching) for scale.
Plain SVG, no plotting library.

    python3 tools/serve_bench_chart.py [DIR]     (default bench/results/h200)
"""
import glob
import json
import os
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "bench/results/h200"
series = {}
for path in sorted(glob.glob(os.path.join(root, "serve_*.json"))):
    name = os.path.basename(path)[len("serve_"):-len(".json")]
    levels = json.load(open(path))["levels"]
    series[name] = [(l["concurrency"], l["aggregate_tok_s"], l["ttft_median_s"]) for l in levels]
if not series:
    sys.exit(f"{root}: no serve_<type>.json")

W, H, left, right, top, bottom = 760, 420, 80, 170, 50, 50
streams = sorted({c for s in series.values() for c, _, _ in s})
ymax = max(t for s in series.values() for _, t, _ in s) * 1.25
px = lambda i: left + (W - left - right) * i / max(1, len(streams) - 1)
py = lambda v: H - bottom - (H - top - bottom) * v / ymax
colors = ["#3b6fb6", "#d9822b", "#4a9d5b", "#9b59b6"]
out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="13">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<text x="{left}" y="26" font-size="15" font-weight="bold">wgt serve: aggregate decode tok/s by concurrent '
       f'streams</text>',
       f'<line x1="{left}" y1="{H - bottom}" x2="{W - right}" y2="{H - bottom}" stroke="black"/>',
       f'<line x1="{left}" y1="{top}" x2="{left}" y2="{H - bottom}" stroke="black"/>']
for k in range(5):
    v = ymax * k / 4
    out.append(f'<text x="{left - 6}" y="{py(v) + 4:.1f}" text-anchor="end">{v:,.0f}</text>')
    out.append(f'<line x1="{left}" y1="{py(v):.1f}" x2="{W - right}" y2="{py(v):.1f}" stroke="#eeeeee"/>')
for i, c in enumerate(streams):
    out.append(f'<text x="{px(i):.1f}" y="{H - bottom + 18}" text-anchor="middle">{c}</text>')
out.append(f'<text x="{(left + W - right) / 2}" y="{H - 12}" text-anchor="middle">concurrent streams</text>')
for n, (name, pts) in enumerate(sorted(series.items())):
    col = colors[n % len(colors)]
    xy = [(px(streams.index(c)), py(t)) for c, t, _ in pts]
    out.append('<polyline fill="none" stroke="%s" stroke-width="2.5" points="%s"/>' %
               (col, " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)))
    for (x, y), (_, t, _) in zip(xy, pts):
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{col}"/>')
        out.append(f'<text x="{x + 6:.1f}" y="{y - 6:.1f}" font-size="11">{t:,.0f}</text>')
    one = dict((c, t) for c, t, _ in pts).get(1)
    if one:  # perfect batching: n streams at the single stream's speed each, clipped to the frame
        ideal = [(px(streams.index(c)), py(min(one * c, ymax))) for c, _, _ in pts]
        out.append('<polyline fill="none" stroke="%s" stroke-width="1" stroke-dasharray="5,4" points="%s"/>' %
                   (col, " ".join(f"{x:.1f},{y:.1f}" for x, y in ideal)))
    out.append(f'<line x1="{W - right + 15}" y1="{top + 20 * n + 10}" x2="{W - right + 40}" y2="{top + 20 * n + 10}" '
               f'stroke="{col}" stroke-width="2.5"/>')
    out.append(f'<text x="{W - right + 46}" y="{top + 20 * n + 14}">{name}</text>')
out.append(f'<text x="{W - right + 15}" y="{top + 20 * len(series) + 16}" font-size="11">dashed: n x one stream</text>')
out.append("</svg>")
path = os.path.join(root, "serve.svg")
open(path, "w").write("\n".join(out) + "\n")
print(path)
