# SPDX-License-Identifier: GPL-2.0
"""ns per sample inside the BPF program, steady state, from bpf_stats: spanperf against bpftrace.

spanperf records with -p the load's pid: without a filter, spans or --otel it attaches no
program at all (the records count samples per thread), and this is the program's cost where
it runs."""
import os

from harness import SPANPERF, TMP, busy_load, kill, log, median, prog_cost, rounds, start_background, \
    start_profiler, stop_profiler, wait_ready

BPF_STATS = True


def run(res):
    out = {}
    for hz in (999, 4999):
        rows = {"spanperf": [], "bpftrace": []}
        for r in range(rounds()):
            for tool, name in (("spanperf", "on_sample"), ("bpftrace", str(hz))):
                load = busy_load(14)
                if tool == "spanperf":
                    p = start_background(tool, [SPANPERF, "record", "-q", "-a", "--call-graph", "fp", "-F", str(hz), "-p",
                                                str(load.pid), "-o", os.path.join(TMP, "ik.data")])
                else:
                    p = start_profiler(tool, hz, os.path.join(TMP, "ik.data"))
                # Skip the first seconds: bpftrace's maps fill then (4.5 us/sample).
                wait_ready(tool, 4.0)
                cost = prog_cost(name, 5)
                stop_profiler(p)
                kill(load)
                if cost:
                    rows[tool].append(cost[0])
                log("inkernel %d Hz round %d %s: %s" % (hz, r, tool, rows[tool][-1:]))
        ratios = [s / b for s, b in zip(rows["spanperf"], rows["bpftrace"])]
        out[hz] = {"spanperf_ns": median(rows["spanperf"]), "bpftrace_ns": median(rows["bpftrace"]),
                   "ratio": median(ratios), "raw": rows}
    res["inkernel"] = out


def from_json(v):
    # JSON keys are strings; the rates are numbers.
    return {int(k): x for k, x in v.items()}


def markdown(res):
    lines = ["## In-kernel cost per sample (bpf_stats, steady state, `-a -g`, spanperf with `-p` the load: "
             "without a filter, spans or --otel it runs no program)", "",
             "| rate | spanperf ns | bpftrace ns | ratio | target |", "|---|---|---|---|---|"]
    for hz, v in res["inkernel"].items():
        lines.append("| %s Hz | %.0f | %.0f | %.2f | <= 0.5 |" % (hz, v["spanperf_ns"], v["bpftrace_ns"], v["ratio"]))
    lines.append("")
    return lines
