# SPDX-License-Identifier: GPL-2.0
"""The page: results/latest.md, its chart results/slowdown.svg and docs/benchmarks.md's block,
all drawn from the results dict (latest.json), so that --render redraws them without measuring."""
import json
import math
import os

from harness import CPUS, RESULTS, ROOT
from sections import SECTIONS


def load(path):
    """latest.json as the sections wrote it: JSON keys are strings, and a section whose keys
    are numbers turns them back in its from_json."""
    res = json.load(open(path))
    for name, sec in SECTIONS.items():
        if name in res and hasattr(sec, "from_json"):
            res[name] = sec.from_json(res[name])
    return res


def chart(res, path):
    """Slowdown (time stolen from the workload) against sampling rate, one line per tool."""
    sd = res.get("stolen")
    if not sd or len(sd["rates"]) < 2:
        return
    rates = sorted(int(r) for r in sd["rates"])
    tools = ["floor", "spanperf", "perf", "bpftrace"]
    colors = {"floor": "#999999", "spanperf": "#d62728", "perf": "#1f77b4", "bpftrace": "#2ca02c"}
    W, H, L, R, T, B = 640, 400, 70, 130, 40, 50
    ys = [sd["rates"][r][t]["slowdown_pct"] for r in rates for t in tools]
    ymax = max(5.0, max(ys) * 1.1)
    ymin = min(0.0, min(ys))

    def x(rate):
        lo, hi = math.log10(rates[0]), math.log10(rates[-1])
        return L + (math.log10(rate) - lo) / (hi - lo) * (W - L - R)

    def y(v):
        return T + (ymax - v) / (ymax - ymin) * (H - T - B)

    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
             'font-size="12">' % (W, H),
             '<rect width="100%" height="100%" fill="white"/>',
             '<text x="%d" y="22" font-size="14">Slowdown vs sampling rate, -a -g (time stolen from the '
             'workload; %s, %d CPUs)</text>' % (L, res["machine"]["kernel"], CPUS)]
    for i in range(6):
        v = ymin + (ymax - ymin) * i / 5
        parts.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>' % (L, W - R, y(v), y(v)))
        parts.append('<text x="%d" y="%.1f" text-anchor="end">%.0f%%</text>' % (L - 6, y(v) + 4, v))
    for rate in rates:
        parts.append('<text x="%.1f" y="%d" text-anchor="middle">%d Hz</text>' % (x(rate), H - B + 18, rate))
    parts.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#333"/>' % (L, W - R, y(0), y(0)))
    for k, tool in enumerate(tools):
        pts = " ".join("%.1f,%.1f" % (x(r), y(sd["rates"][r][tool]["slowdown_pct"])) for r in rates)
        parts.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (colors[tool], pts))
        for r in rates:
            parts.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' %
                         (x(r), y(sd["rates"][r][tool]["slowdown_pct"]), colors[tool]))
        parts.append('<rect x="%d" y="%d" width="14" height="3" fill="%s"/><text x="%d" y="%d">%s</text>' %
                     (W - R + 12, T + 20 * k + 6, colors[tool], W - R + 32, T + 20 * k + 11,
                      "empty BPF (floor)" if tool == "floor" else tool))
    parts.append('<text x="%d" y="%d" text-anchor="middle">sampling rate per CPU (log scale)</text>'
                 % ((L + W - R) / 2, H - 10))
    parts.append("</svg>")
    open(path, "w").write("\n".join(parts) + "\n")


def markdown(res):
    m = res["machine"]
    lines = ["# spanperf benchmarks", "",
             "%s; %s, %d CPUs, kernel %s, PMU: %s; %d rounds per figure, medians; ratios are "
             "medians of per-round ratios." % (m["date"], m["cpu"], m["nproc"], m["kernel"], m["pmu"],
                                              res["rounds"]), ""]
    if res.get("partial"):
        lines[-1:] = ["Sections run again since, alone: %s." % ", ".join(
            "%s at %s" % (sec, date) for sec, date in sorted(res["partial"].items())), ""]
    for name, sec in SECTIONS.items():
        if name in res:
            lines += sec.markdown(res)
    return "\n".join(lines)


def update_readme(md):
    """docs/benchmarks.md's FIGURES are the latest results, between its markers."""
    path = os.path.join(ROOT, "docs", "benchmarks.md")
    text = open(path).read()
    start, end = "<!-- bench:start -->", "<!-- bench:end -->"
    if start not in text or end not in text:
        return
    body = md.split("\n", 1)[1].replace("](slowdown.svg)", "](../bench/results/slowdown.svg)")
    body = body.replace("\n## ", "\n### ")
    text = text[:text.index(start) + len(start)] + "\n" + body.strip() + "\n" + text[text.index(end):]
    open(path, "w").write(text)


def write(res):
    """The chart, latest.md and docs/benchmarks.md's block from res; the markdown goes to stdout too."""
    chart(res, os.path.join(RESULTS, "slowdown.svg"))
    md = markdown(res)
    open(os.path.join(RESULTS, "latest.md"), "w").write(md)
    update_readme(md)
    print(md)
