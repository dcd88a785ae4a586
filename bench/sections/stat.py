# SPDX-License-Identifier: GPL-2.0
"""stat: ns per context switch of the counters program, with 4, 1 and no counter-read events."""
import re
import subprocess
import time

from harness import DEVNULL, SPANPERF, WORKLOAD, kill, log, median, prog_cost, rounds, spawn

BPF_STATS = True

LABELS = ("4 counter reads", "1 counter read", "none (task-clock only)")


def run(res):
    rows = {label: [] for label in LABELS}
    evsets = dict(zip(LABELS, ("page-faults,minor-faults,major-faults,context-switches", "page-faults",
                               "task-clock")))
    per_thread = None
    for r in range(rounds()):
        for label, ev in evsets.items():
            load = spawn([WORKLOAD, "sleeps", "1000000", "10"], stdout=DEVNULL)
            p = spawn([SPANPERF, "stat", "-v", "-e", ev, "-o", "/dev/null", "-d", "6"],
                      stdout=DEVNULL, stderr=subprocess.PIPE, text=True)
            time.sleep(1.5)
            cost = prog_cost("switch_btf", 3)
            _, err = p.communicate()
            kill(load)
            m = re.search(r"(\d+) bytes of map per thread", err)
            if m:
                per_thread = int(m.group(1))
            if cost:
                rows[label].append(cost[0])
            log("stat round %d %s: %s ns/switch" % (r, label, rows[label][-1:]))
    res["stat"] = {label: median(v) for label, v in rows.items()}
    res["stat"]["bytes_per_thread"] = per_thread
    res["stat"]["raw"] = rows


def markdown(res):
    v = res["stat"]
    lines = ["## stat: BPF cost per context switch (bpf_stats, tp_btf, switch-heavy load)", "",
             "| counters | ns/switch | target |", "|---|---|---|"]
    for label in LABELS:
        lines.append("| %s | %.0f | %s |" % (label, v[label], "<= 600" if label.startswith("4") else ""))
    lines += ["", "Kernel memory per tracked thread (counts map, memlock / max_entries): %s bytes." %
              v.get("bytes_per_thread"), ""]
    return lines
