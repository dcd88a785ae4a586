# SPDX-License-Identifier: GPL-2.0
"""The recorder's peak RSS with 1,000 live threads, spanperf record against perf record."""
import os
import subprocess

from harness import TMP, WORKLOAD, kill, log, median, record_cmd, rounds, run_to_end, spawn


def run(res):
    rows = {"spanperf": [], "perf": []}
    for r in range(rounds()):
        for tool in ("spanperf", "perf"):
            threads = spawn([WORKLOAD, "threads", "1000", "30"], stdout=subprocess.PIPE, text=True)
            threads.stdout.readline()  # all 1000 are up
            _, ru, _ = run_to_end(record_cmd(tool, ["-g", "-F", "999"], 5, os.path.join(TMP, "rss.data")))
            kill(threads)
            rows[tool].append(ru.ru_maxrss)
            log("rss round %d %s: %d KiB" % (r, tool, ru.ru_maxrss))
    res["rss"] = {"spanperf_kib": median(rows["spanperf"]), "perf_kib": median(rows["perf"]),
                  "ratio": median([s / p for s, p in zip(rows["spanperf"], rows["perf"])]), "raw": rows}


def markdown(res):
    v = res["rss"]
    return ["## Recorder peak RSS with 1,000 live threads (`-a -g -F 999`, 5 s)", "",
            "| spanperf | perf record | ratio |", "|---|---|---|",
            "| %.1f MiB | %.1f MiB | %.2f |" % (v["spanperf_kib"] / 1024, v["perf_kib"] / 1024, v["ratio"]), ""]
