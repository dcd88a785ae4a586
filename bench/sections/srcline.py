# SPDX-License-Identifier: GPL-2.0
"""Inlined frames and source lines: spanperf report (libdw, in-process) against perf
report (addr2line, one process per dso) with the same options, on one perf file of a
--call-graph dwarf recording of the inline workload and xz, both with DWARF to read."""
import os
import subprocess

from harness import ROOT, SPANPERF, TMP, race

INLINE_WORKLOAD = os.path.join(ROOT, "build", "tests", "workload_inline")


def run(res):
    path = os.path.join(TMP, "srcline.data")
    # perf's own file: on a whole-host one perf 6.1's addr2line dies on other processes' memfds.
    subprocess.run(["perf", "record", "-q", "--call-graph", "dwarf", "-F", "499", "-o", path, "--", "sh", "-c",
                    "%s 3 & head -c 20000000 /dev/urandom | xz -6 -T1 > /dev/null; wait" % INLINE_WORKLOAD],
                   check=True)
    pairs = {
        "-g --inline --sort sym,srcline": (
            [SPANPERF, "report", "-i", path, "--offline", "-g", "--inline", "--sort", "sym,srcline"],
            ["perf", "report", "--stdio", "-i", path, "-g", "--inline", "--sort", "sym,srcline"]),
        "--sort srcline": (
            [SPANPERF, "report", "-i", path, "--offline", "--sort", "srcline"],
            ["perf", "report", "--stdio", "-i", path, "--no-children", "-g", "none", "--sort", "srcline"]),
    }
    out = {"file_mb": os.path.getsize(path) / 1e6, "rows": {}}
    for name, (mine, theirs) in pairs.items():
        out["rows"][name] = race(name, mine, theirs)
    res["srcline"] = out


def markdown(res):
    v = res["srcline"]
    lines = ["### Inlined frames and source lines (perf's --call-graph dwarf file, %.0f MB; fastest of %d)" % (
        v["file_mb"], res["rounds"]), "",
             "| options | spanperf | perf | ratio | spanperf RSS | perf RSS | target |", "|---|---|---|---|---|---|---|"]
    for name, x in v["rows"].items():
        lines.append("| `%s` | %.2f s | %.2f s | %.3f | %.0f MiB | %.0f MiB | <= 0.5 |" % (
            name, x["spanperf_s"], x["perf_s"], x["ratio"], x["spanperf_rss_kib"] / 1024, x["perf_rss_kib"] / 1024))
    lines.append("")
    return lines
