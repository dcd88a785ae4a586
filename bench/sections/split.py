# SPDX-License-Identifier: GPL-2.0
"""The split of a span's wall time (on CPU, run queue, asleep, D) at its edges: BPF ns per edge
with and without it (bpf_stats of the syscall span programs on getppid, record --no-sched-split
as the peer in the same round), and what keeping S/D time costs the switch program."""
import os
import time

from harness import DEVNULL, SPANPERF, TMP, WORKLOAD, kill, log, median, prog_costs, rounds, spawn, stop_profiler

BPF_STATS = True


def run(res):
    rows = {"split": [], "nosplit": []}
    span_sw = {"split": [], "nosplit": []}
    for r in range(rounds()):
        for tool in rows:
            # Switches to measure the switch program on: 20 us sleeps in a loop, outside any span.
            load = spawn([WORKLOAD, "sleeps", "400000", "20"], stdout=DEVNULL)
            out = os.path.join(TMP, "split.data")
            cmd = [SPANPERF, "record", "-q", "-F", "10", "--span", "syscall:getppid", "-o", out]
            cmd += ["--no-sched-split"] if tool == "nosplit" else []
            p = spawn(cmd + ["--", WORKLOAD, "getppid", "4000000"], stdout=DEVNULL, stderr=DEVNULL)
            p.tool = tool
            time.sleep(2.0)
            c = prog_costs(["tp_begin_0", "tp_end_0", "switch_btf"], 3)
            stop_profiler(p)
            kill(load)
            if all(c):
                rows[tool].append((c[0][0] + c[1][0]) / 2)
                span_sw[tool].append(c[2][0])
            log("split round %d %s: %s" % (r, tool, c))
    # stat's columns keep S/D time for every thread: the cost per switch, against task-clock alone.
    sw = {"blocked": [], "plain": []}
    for r in range(rounds()):
        for tool in sw:
            load = spawn([WORKLOAD, "sleeps", "400000", "20"], stdout=DEVNULL)
            ev = "task-clock,blocked" if tool == "blocked" else "task-clock"
            p = spawn([SPANPERF, "stat", "-a", "-e", ev, "-o", os.path.join(TMP, "stat.out")], stdout=DEVNULL,
                      stderr=DEVNULL)
            p.tool = tool
            time.sleep(1.5)
            c = prog_costs(["switch_btf"], 4)
            stop_profiler(p)
            kill(load)
            if c[0]:
                sw[tool].append(c[0][0])
            log("split switch round %d %s: %s" % (r, tool, c))
    ns = {t: median(v) for t, v in rows.items()}
    res["split"] = {"edge_ns": ns, "added_per_edge_ns": ns["split"] - ns["nosplit"],
                    "switch_ns": {t: median(v) for t, v in sw.items()},
                    "span_switch_ns": {t: median(v) for t, v in span_sw.items()},
                    "added_per_switch_ns": median(sw["blocked"]) - median(sw["plain"]), "raw": rows,
                    "raw_switch": sw}


def markdown(res):
    v = res["split"]
    return ["## Spans: the split of wall time (on CPU, run queue, asleep, D) at span edges (bpf_stats)", "",
            "| per span edge, with the split | without (--no-sched-split) | added | target |",
            "|---|---|---|---|",
            "| %.0f ns | %.0f ns | %.0f ns | <= 50 ns |" % (v["edge_ns"]["split"], v["edge_ns"]["nosplit"],
                                                          v["added_per_edge_ns"]), "",
            "| per context switch: stat -a -e task-clock,blocked | -e task-clock | added |", "|---|---|---|",
            "| %.0f ns | %.0f ns | %.0f ns |" % (v["switch_ns"]["blocked"], v["switch_ns"]["plain"],
                                                v["added_per_switch_ns"]), "",
            "Per context switch while recording the spans (a switch-heavy load outside any span): "
            "%.0f ns with the split, %.0f ns without." % (v["span_switch_ns"]["split"],
                                                           v["span_switch_ns"]["nosplit"]), ""]
