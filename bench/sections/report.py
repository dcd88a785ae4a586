# SPDX-License-Identifier: GPL-2.0
"""spanperf report against perf report --stdio on one file of 40k+ samples with call graphs, and
spanperf diff against perf diff on that file and a second recording of the same load."""
import json
import os
import subprocess
import time

from harness import SPANPERF, TMP, busy_load, kill, race


def run(res):
    path = os.path.join(TMP, "report.data")
    load = busy_load(8)
    time.sleep(0.3)
    subprocess.run([SPANPERF, "record", "-q", "-a", "--call-graph", "fp", "-F", "4999", "-d", "5", "-o", path], check=True)
    path2 = os.path.join(TMP, "report2.data")
    subprocess.run([SPANPERF, "record", "-q", "-a", "--call-graph", "fp", "-F", "4999", "-d", "5", "-o", path2],
                   check=True)
    kill(load)
    out = subprocess.run([SPANPERF, "report", "-i", path, "--format", "json", "--sort", "comm"],
                         capture_output=True, text=True).stdout
    samples = sum(json.loads(l)["samples"] for l in out.splitlines())
    pairs = {
        "table (no call graph)": ([SPANPERF, "report", "-i", path],
                                  ["perf", "report", "--stdio", "-i", path, "--no-children", "-g", "none"]),
        "call graph": ([SPANPERF, "report", "-i", path, "-g"], ["perf", "report", "--stdio", "-i", path]),
        "folded / flame graph": ([SPANPERF, "report", "-i", path, "--flamegraph", os.path.join(TMP, "f.svg")],
                                 ["perf", "script", "-i", path]),
        "diff of two files": ([SPANPERF, "diff", path, path2], ["perf", "diff", path, path2]),
    }
    out = {"samples": samples, "file_mb": os.path.getsize(path) / 1e6, "rows": {}}
    for name, (mine, theirs) in pairs.items():
        out["rows"][name] = race(name, mine, theirs)
        out["rows"][name]["perf_cmd"] = " ".join(a for a in theirs if a not in ("-i", path, path2))
    res["report"] = out


def markdown(res):
    v = res["report"]
    lines = ["## Report time and peak memory (%d samples with call graphs, %.0f MB; fastest of %d)" % (
        v["samples"], v["file_mb"], res["rounds"]), "",
             "| output | spanperf | perf | ratio | spanperf RSS | perf RSS | target |", "|---|---|---|---|---|---|---|"]
    for name, x in v["rows"].items():
        lines.append("| %s (`%s`) | %.2f s | %.2f s | %.2f | %.0f MiB | %.0f MiB | <= 0.5 |" % (
            name, x["perf_cmd"], x["spanperf_s"], x["perf_s"], x["ratio"], x["spanperf_rss_kib"] / 1024,
            x["perf_rss_kib"] / 1024))
    lines.append("")
    return lines
