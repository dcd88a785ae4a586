# SPDX-License-Identifier: GPL-2.0
"""spanperf top against perf top --stdio, side by side in the same seconds: each one's own CPU and
peak RSS at 999 Hz on the whole host, refreshing every 2 s, under a CPU-bound load.  perf top runs
on a pseudo-terminal (script(1)): without one it prints its table in a busy loop."""
import os

from harness import DEVNULL, SPANPERF, busy_load, kill, log, median, rounds, spawn

SECS = 20


def run(res):
    rows = {"spanperf": [], "perf": [], "spanperf_rss": [], "perf_rss": []}
    for r in range(rounds()):
        load = busy_load(SECS + 4)
        top = spawn([SPANPERF, "top", "--batch", "-F", "999", "-d", "2", "-n", str(SECS // 2)], stdout=DEVNULL,
                    stderr=DEVNULL)
        perf = spawn(["script", "-qfec", "timeout -s INT %d perf top --stdio -F 999 -a -d 2" % SECS, "/dev/null"],
                     stdin=DEVNULL, stdout=DEVNULL, stderr=DEVNULL)
        for tool, p in (("spanperf", top), ("perf", perf)):
            # script and timeout wait for perf: their children's rusage is perf's own.
            _, _, ru = os.wait4(p.pid, 0)
            rows[tool].append(ru.ru_utime + ru.ru_stime)
            rows[tool + "_rss"].append(ru.ru_maxrss)
        kill(load)
        log("live round %d: spanperf top %.2f s CPU, perf top %.2f s" % (r, rows["spanperf"][-1], rows["perf"][-1]))
    res["live"] = {"seconds": SECS, "spanperf_cpu_s": median(rows["spanperf"]), "perf_cpu_s": median(rows["perf"]),
                   "cpu_ratio": median([a / b for a, b in zip(rows["spanperf"], rows["perf"])]),
                   "spanperf_rss_kib": median(rows["spanperf_rss"]), "perf_rss_kib": median(rows["perf_rss"]),
                   "raw": rows}


def markdown(res):
    v = res["live"]
    return ["## top's own cost (`-F 999`, whole host, refresh 2 s, %d s, CPU-bound load)" % v["seconds"], "",
            "| | spanperf top --batch | perf top --stdio | ratio (target <= 0.5) |", "|---|---|---|---|",
            "| CPU | %.2f s | %.2f s | %.2f |" % (v["spanperf_cpu_s"], v["perf_cpu_s"], v["cpu_ratio"]),
            "| peak RSS | %.1f MiB | %.1f MiB | |" % (v["spanperf_rss_kib"] / 1024, v["perf_rss_kib"] / 1024), ""]
