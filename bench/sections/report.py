# SPDX-License-Identifier: GPL-2.0
"""spanperf report against perf report --stdio, each one's default, on an fp and an ehframe file (whole host,
5 s), and spanperf diff against perf diff on the fp file and a second recording of the same load."""
import json
import os
import subprocess
import time

from harness import SPANPERF, TMP, busy_load, kill, race


def record(path, call_graph):
    load = busy_load(8)
    time.sleep(0.3)
    subprocess.run([SPANPERF, "record", "-q", "-a"] + call_graph + ["-F", "4999", "-d", "5", "-o", path], check=True)
    kill(load)
    out = subprocess.run([SPANPERF, "report", "-i", path, "--format", "json", "--sort", "comm"],
                         capture_output=True, text=True).stdout
    return sum(json.loads(l)["samples"] for l in out.splitlines())


def run(res):
    # Each tool's default on both kinds of chain: inline frames are on in both (perf 6.1 shows
    # them in DWARF-unwound chains; spanperf as perf), so their cost is in the ratio.
    files = {"fp": ["--call-graph", "fp"], "ehframe": ["-g"]}
    out = {"samples": 0, "file_mb": 0, "rows": {}, "files": {}}
    for kind, cg in files.items():
        path = os.path.join(TMP, "report-%s.data" % kind)
        n = record(path, cg)
        out["files"][kind] = {"samples": n, "file_mb": os.path.getsize(path) / 1e6}
        out["samples"] += n
        out["file_mb"] += os.path.getsize(path) / 1e6
        pairs = {
            "table, no call graph (%s)" % kind: ([SPANPERF, "report", "-i", path],
                                                 ["perf", "report", "--stdio", "-i", path, "--no-children", "-g", "none"]),
            "call graph, inline on (%s)" % kind: ([SPANPERF, "report", "-i", path, "-g"],
                                                  ["perf", "report", "--stdio", "-i", path]),
        }
        path2 = None
        if kind == "fp":
            pairs["folded / flame graph (fp)"] = ([SPANPERF, "report", "-i", path, "--flamegraph",
                                                   os.path.join(TMP, "f.svg")], ["perf", "script", "-i", path])
            path2 = os.path.join(TMP, "report-fp2.data")
            record(path2, cg)
            pairs["diff of two files (fp)"] = ([SPANPERF, "diff", path, path2], ["perf", "diff", path, path2])
        for name, (mine, theirs) in pairs.items():
            out["rows"][name] = race(name, mine, theirs)
            out["rows"][name]["perf_cmd"] = " ".join(a for a in theirs if a not in ("-i", path, path2))
    res["report"] = out


def markdown(res):
    v = res["report"]
    files = ", ".join("%s %d samples, %.0f MB" % (k, f["samples"], f["file_mb"]) for k, f in v.get("files", {}).items())
    lines = ["## Report time and peak memory (%s; fastest of %d)" % (
        files or "%d samples with call graphs, %.0f MB" % (v["samples"], v["file_mb"]), res["rounds"]), "",
             "| output | spanperf | perf | ratio | spanperf RSS | perf RSS | target |", "|---|---|---|---|---|---|---|"]
    for name, x in v["rows"].items():
        lines.append("| %s (`%s`) | %.2f s | %.2f s | %.2f | %.0f MiB | %.0f MiB | <= 0.5 |" % (
            name, x["perf_cmd"], x["spanperf_s"], x["perf_s"], x["ratio"], x["spanperf_rss_kib"] / 1024,
            x["perf_rss_kib"] / 1024))
    lines.append("")
    return lines
