# SPDX-License-Identifier: GPL-2.0
"""Report on a fork-heavy whole-host recording: 1,000 fork+exec and 100 forks without exec."""
import os
import subprocess

from harness import SPANPERF, TMP, WORKLOAD, race


def run(res):
    path = os.path.join(TMP, "forks.data")
    subprocess.run([SPANPERF, "record", "-q", "-a", "--call-graph", "fp", "-F", "999", "-o", path, "--", "sh", "-c",
                    "%s fork 1000 >/dev/null; %s forkspin 100 5 >/dev/null" % (WORKLOAD, WORKLOAD)], check=True)
    res["forks"] = race("forks", [SPANPERF, "report", "-i", path, "-g"], ["perf", "report", "--stdio", "-i", path])
    res["forks"]["file_mb"] = os.path.getsize(path) / 1e6


def markdown(res):
    v = res["forks"]
    return ["## Report on a fork-heavy recording (1,000 fork+exec, 100 forks without exec; `-g`; "
            "%.1f MB; fastest of %d)" % (v["file_mb"], res["rounds"]), "",
            "| spanperf report -g | perf report --stdio | ratio | spanperf RSS | perf RSS | target |",
            "|---|---|---|---|---|---|",
            "| %.2f s | %.2f s | %.2f | %.0f MiB | %.0f MiB | <= 0.5 |" % (
                v["spanperf_s"], v["perf_s"], v["ratio"], v["spanperf_rss_kib"] / 1024,
                v["perf_rss_kib"] / 1024), ""]
