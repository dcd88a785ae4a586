# SPDX-License-Identifier: GPL-2.0
"""record --sched: what keeping every switch-out (its state and run_delay, no stack) costs per
context switch, on a pipe ping-pong whose round trips are all switches, against no profiler and
against perf recording the same switches (`perf record -e sched:sched_switch -a`, and
`perf sched record`, which adds the wakeup, migration and wait events), all whole-host, the tools
alternating round by round.

The added cost per switch is the round trip's added wall time over the switches in a round trip:
every switch of a ping-pong is on its critical path.  The switches per round trip are counted
by spanperf's own switch program (bpf_stats, in a run of its own after the timed one, since
bpf_stats costs every BPF program two clock reads that perf does not pay)."""
import json
import os
import subprocess
import time

from harness import DEVNULL, SPANPERF, TMP, WORKLOAD, log, median, prog_stats, rounds, spawn, start_background, \
    stop_profiler, sysctl, wait_ready

SECS = 4
TOOLS = ["none", "spanperf", "perf-switch", "perf-sched"]


def recorder(tool, out):
    if tool == "none":
        return None
    if tool == "spanperf":
        # -F 1: the sampling the recorder always does, out of the way.
        cmd = [SPANPERF, "record", "-q", "-a", "-F", "1", "--sched", "-o", out]
    elif tool == "perf-switch":
        cmd = ["perf", "record", "-q", "-a", "-e", "sched:sched_switch", "-o", out]
    else:
        cmd = ["perf", "sched", "record", "-q", "-o", out]
    return start_background(tool, cmd)


def pingpong(secs):
    load = spawn([WORKLOAD, "pingpong", str(secs)], stdout=subprocess.PIPE, text=True)
    return json.loads(load.communicate()[0].splitlines()[-1])["per_s"]


def switch_cost(out):
    """spanperf --sched's switch program while the ping-pong runs: (ns per run, switches per round trip)."""
    p = recorder("spanperf", out)
    wait_ready("spanperf")
    sysctl("kernel.bpf_stats_enabled", 1)
    try:
        load = spawn([WORKLOAD, "pingpong", str(SECS)], stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)
        a = prog_stats("offcpu_btf")
        time.sleep(SECS - 1.5)
        b = prog_stats("offcpu_btf")
        rt = json.loads(load.communicate()[0].splitlines()[-1])["per_s"]
    finally:
        sysctl("kernel.bpf_stats_enabled", 0)
        stop_profiler(p)
    if not (a and b and b[1] > a[1]):
        return None
    return (b[0] - a[0]) / (b[1] - a[1]), (b[1] - a[1]) / (SECS - 2.0) / rt


def run(res):
    rt = {t: [] for t in TOOLS}
    cpu = {t: [] for t in TOOLS}
    added = {t: [] for t in TOOLS if t != "none"}
    slow = {t: [] for t in added}
    vs = {"perf-switch": [], "perf-sched": []}
    costs = []
    for r in range(rounds()):
        got = {}
        for tool in TOOLS:
            out = os.path.join(TMP, "sched.%s.data" % tool)
            p = recorder(tool, out)
            if p:
                wait_ready(tool)
            got[tool] = pingpong(SECS)
            c = stop_profiler(p)[0]
            rt[tool].append(got[tool])
            cpu[tool].append(c)
            log("sched round %d %s: %.0f round trips/s, recorder %.2f s CPU" % (r, tool, got[tool], c))
        c = switch_cost(os.path.join(TMP, "sched.cost.data"))
        log("sched round %d spanperf switch program: %s" % (r, c))
        if not c:
            continue
        costs.append(c)
        # Per round, against that round's run without a profiler: the host's load moves both.
        for t in added:
            slow[t].append(got["none"] / got[t])
            added[t].append((1e9 / got[t] - 1e9 / got["none"]) / c[1])
        for t in vs:
            if added[t][-1] > 0:
                vs[t].append(added["spanperf"][-1] / added[t][-1])
    res["sched"] = {
        "round_trips_per_s": {t: median(v) for t, v in rt.items()},
        "slowdown": {t: median(v) for t, v in slow.items()},
        "switches_per_round_trip": median([c[1] for c in costs]) if costs else None,
        "added_ns_per_switch": {t: median(v) if v else None for t, v in added.items()},
        "vs_perf_switch": median(vs["perf-switch"]) if vs["perf-switch"] else None,
        "vs_perf_sched": median(vs["perf-sched"]) if vs["perf-sched"] else None,
        "bpf_ns_per_switch": median([c[0] for c in costs]) if costs else None,
        "recorder_cpu_s": {t: median(v) for t, v in cpu.items()},
        "raw": rt, "raw_costs": costs, "raw_added": added}


def _f(x, fmt="%.0f"):
    return fmt % x if x is not None else "?"


def markdown(res):
    v = res["sched"]
    a, s, c = v["added_ns_per_switch"], v["slowdown"], v["recorder_cpu_s"]
    rows = [("spanperf record --sched", "spanperf"), ("perf record -e sched:sched_switch", "perf-switch"),
            ("perf sched record", "perf-sched")]
    out = ["## record --sched: cost per context switch (`-a`, a pipe ping-pong, %s switches per round trip)"
           % _f(v["switches_per_round_trip"], "%.1f"), "",
           "| recorder | round trips/s | slowdown vs none | ns added per switch | recorder CPU (s) |",
           "|---|---|---|---|---|",
           "| none | %.0f | 1 | 0 | 0 |" % v["round_trips_per_s"]["none"]]
    for name, t in rows:
        out.append("| %s | %.0f | %s | %s | %.2f |" % (name, v["round_trips_per_s"][t], _f(s[t], "%.3f"), _f(a[t]),
                                                      c[t]))
    out += ["", "Medians over rounds; slowdowns and added ns per round against that round's run without a "
            "profiler.  spanperf's added cost per switch against perf's in the same rounds: %s x `perf record -e "
            "sched:sched_switch`, %s x `perf sched record`.  Its switch program alone: %s ns per switch "
            "(bpf_stats)." % (_f(v["vs_perf_switch"], "%.2f"), _f(v["vs_perf_sched"], "%.2f"),
                              _f(v["bpf_ns_per_switch"])), ""]
    return out
