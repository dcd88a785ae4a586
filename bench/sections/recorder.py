# SPDX-License-Identifier: GPL-2.0
"""The recorder's own CPU and its output per second, spanperf record against perf record."""
import os

from harness import TMP, log, median, record_cmd, rounds, under_busy_load


def run(res):
    hz, secs = 4999, 5
    rows = {"spanperf": [], "perf": []}
    sizes = {"spanperf": [], "perf": []}
    for r in range(rounds()):
        for tool in ("spanperf", "perf"):
            out = os.path.join(TMP, "rec-%s.data" % tool)
            ru = under_busy_load(record_cmd(tool, ["-g", "-F", str(hz)], secs, out), secs)
            rows[tool].append(ru.ru_utime + ru.ru_stime)
            sizes[tool].append(os.path.getsize(out) / secs)
            log("recorder round %d %s: %.3f s CPU, %.0f KB/s" % (r, tool, rows[tool][-1], sizes[tool][-1] / 1e3))
    res["recorder"] = {
        "hz": hz, "seconds": secs,
        "spanperf_cpu_s": median(rows["spanperf"]), "perf_cpu_s": median(rows["perf"]),
        "ratio": median([s / p for s, p in zip(rows["spanperf"], rows["perf"])]),
        "raw": rows}
    res["size"] = {
        "spanperf_Bps": median(sizes["spanperf"]), "perf_Bps": median(sizes["perf"]),
        "ratio": median([s / p for s, p in zip(sizes["spanperf"], sizes["perf"])]), "raw": sizes}


def markdown(res):
    v = res["recorder"]
    lines = ["## Recorder's own CPU (`-a -F %d -g`, %d s, CPU-bound load)" % (v["hz"], v["seconds"]), "",
             "| spanperf | perf record | ratio | target |", "|---|---|---|---|",
             "| %.3f s | %.3f s | %.2f | <= 0.5 |" % (v["spanperf_cpu_s"], v["perf_cpu_s"], v["ratio"]), ""]
    if "size" in res:
        v = res["size"]
        lines += ["## Output per second of recording (same runs)", "",
                  "| spanperf | perf record | ratio | target |", "|---|---|---|---|",
                  "| %.0f KB/s | %.0f KB/s | %.2f | <= 1 |" % (v["spanperf_Bps"] / 1e3, v["perf_Bps"] / 1e3, v["ratio"]), ""]
    return lines
