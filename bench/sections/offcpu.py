# SPDX-License-Identifier: GPL-2.0
"""record --off-cpu: ns per context switch inside the off-CPU program (bpf_stats), spanperf
against bcc offcputime's design in bpftrace."""
import os

from harness import (DEVNULL, OFFCPU_BT, SPANPERF, TMP, WORKLOAD, kill, log, median, prog_cost, rounds, spawn,
                     start_background, stop_profiler, wait_ready)

BPF_STATS = True


def run(res):
    rows = {"spanperf": [], "spanperf-thresh0": [], "bpftrace": []}
    script = os.path.join(TMP, "offcpu.bt")
    open(script, "w").write(OFFCPU_BT)
    for r in range(rounds()):
        for tool in rows:
            # Switch-heavy: 20 us sleeps in a loop, a few tens of thousands of switches a second.
            load = spawn([WORKLOAD, "sleeps", "400000", "20"], stdout=DEVNULL)
            out = os.path.join(TMP, "off.data")
            if tool == "bpftrace":
                cmd, name = ["bpftrace", script], "sched_switch"
            else:
                cmd = [SPANPERF, "record", "-q", "-a", "--call-graph", "fp", "-F", "1", "--off-cpu", "-o", out]
                cmd += ["--off-cpu-thresh", "0"] if tool.endswith("thresh0") else []
                name = "offcpu_btf"
            p = start_background(tool, cmd)
            wait_ready(tool, 3.0 if tool == "bpftrace" else 2.0)
            cost = prog_cost(name, 5)
            stop_profiler(p)
            kill(load)
            if cost:
                rows[tool].append(cost)
            log("offcpu round %d %s: %s" % (r, tool, rows[tool][-1:]))
    ns = {t: median([x[0] for x in v]) for t, v in rows.items()}
    ratios = [s[0] / b[0] for s, b in zip(rows["spanperf"], rows["bpftrace"])]
    res["offcpu"] = {"ns": ns, "switches_per_s": median([x[1] for x in rows["spanperf"]]),
                     "ratio": median(ratios), "raw": rows}


def markdown(res):
    v = res["offcpu"]
    return ["## record --off-cpu: BPF cost per context switch (bpf_stats, `-a -g`, %.0f switches/s)" %
            v["switches_per_s"], "",
            "| spanperf (sums in BPF) | spanperf (--off-cpu-thresh 0) | bcc offcputime's design (bpftrace) "
            "| ratio | target |", "|---|---|---|---|---|",
            "| %.0f ns | %.0f ns | %.0f ns | %.2f | <= 1000 ns, <= 0.5 |" % (
                v["ns"]["spanperf"], v["ns"]["spanperf-thresh0"], v["ns"]["bpftrace"], v["ratio"]), "",
            "perf 6.1 here is built without BPF skeletons: it cannot record --off-cpu.", ""]
