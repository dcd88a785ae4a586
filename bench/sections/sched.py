# SPDX-License-Identifier: GPL-2.0
"""record --sched: what keeping every switch-out (its state and run_delay, no stack) costs per
context switch, on a pipe ping-pong pinned to one CPU (every round trip two switches), against
no profiler and against perf recording the same switches (`perf record -e sched:sched_switch -a`,
and `perf sched record`, which adds the wakeup, migration and wait events), all whole-host, the
tools alternating round by round.

The cost is the ping-pong's own CPU time per round trip (its rusage): the switch tracepoint's
programs and perf's ring writes run in the switching thread and are charged to it, while the
other load on a shared host is not; its throughput is shown too, but moves with that load.
The switches per round trip are the ping-pong's own (rusage).  spanperf's switch program is
timed alone too (bpf_stats, in a run of its own after the timed ones, since bpf_stats costs every
BPF program two clock reads that perf does not pay)."""
import json
import os
import subprocess
import time

from harness import SPANPERF, TMP, WORKLOAD, log, median, rounds, spawn, start_background, stop_profiler, sysctl, \
    wait_ready

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
    """(round trips per second, CPU ns per round trip, switches per round trip) of the ping-pong on
    the last CPU: its threads' own switches (rusage), each one sched_switch."""
    cmd = ["taskset", "-c", str(os.cpu_count() - 1), WORKLOAD, "pingpong", str(secs)]
    load = spawn(cmd, stdout=subprocess.PIPE, text=True)
    out = load.stdout.read()
    _, _, ru = os.wait4(load.pid, 0)
    load.returncode = 0
    w = json.loads(out.splitlines()[-1])
    return (w["per_s"], (ru.ru_utime + ru.ru_stime) * 1e9 / w["round_trips"],
            (ru.ru_nvcsw + ru.ru_nivcsw) / w["round_trips"])


def prog_by_id(name, pid=None):
    """(id, run_time_ns, run_cnt) of the newest program of this name, or of the given id."""
    out = subprocess.run(["bpftool", "prog", "show", "--json"], capture_output=True, text=True).stdout
    best = None
    for p in json.loads(out or "[]"):
        if p.get("name") == name and (pid is None or p["id"] == pid) and (best is None or p["id"] > best["id"]):
            best = p
    return (best["id"], best.get("run_time_ns", 0), best.get("run_cnt", 0)) if best else None


def switch_cost(out):
    """spanperf --sched's switch program while the ping-pong runs: (ns per run, host switches per round
    trip).  Its own program by id: others on a shared host may load one of the same name meanwhile."""
    p = recorder("spanperf", out)
    wait_ready("spanperf")
    sysctl("kernel.bpf_stats_enabled", 1)
    try:
        load = spawn(["taskset", "-c", str(os.cpu_count() - 1), WORKLOAD, "pingpong", str(SECS)],
                     stdout=subprocess.PIPE, text=True)
        time.sleep(0.5)
        a = prog_by_id("offcpu_btf")
        time.sleep(SECS - 1.5)
        b = prog_by_id("offcpu_btf", a[0]) if a else None
        rt = json.loads(load.communicate()[0].splitlines()[-1])["per_s"]
    finally:
        sysctl("kernel.bpf_stats_enabled", 0)
        stop_profiler(p)
    if not (a and b and b[2] > a[2] and b[1] >= a[1]):
        return None
    return (b[1] - a[1]) / (b[2] - a[2]), (b[2] - a[2]) / (SECS - 2.0) / rt


def run(res):
    rt = {t: [] for t in TOOLS}
    cpu_rt = {t: [] for t in TOOLS}
    cpu = {t: [] for t in TOOLS}
    added = {t: [] for t in TOOLS if t != "none"}
    slow = {t: [] for t in added}
    vs = {"perf-switch": [], "perf-sched": []}
    costs, sw = [], []
    for r in range(rounds()):
        got = {}
        for tool in TOOLS:
            out = os.path.join(TMP, "sched.%s.data" % tool)
            p = recorder(tool, out)
            if p:
                wait_ready(tool)
            got[tool] = pingpong(SECS)
            c = stop_profiler(p)[0]
            rt[tool].append(got[tool][0])
            cpu_rt[tool].append(got[tool][1])
            cpu[tool].append(c)
            log("sched round %d %s: %.0f round trips/s, %.0f ns CPU each, recorder %.2f s CPU" %
                (r, tool, got[tool][0], got[tool][1], c))
        c = switch_cost(os.path.join(TMP, "sched.cost.data"))
        log("sched round %d spanperf switch program: %s; the ping-pong's switches per round trip %.2f" %
            (r, c, got["none"][2]))
        if c:
            costs.append(c)
        sw.append(got["none"][2])
        # Per round, against that round's run without a profiler.
        for t in added:
            slow[t].append(got[t][1] / got["none"][1])
            added[t].append((got[t][1] - got["none"][1]) / got["none"][2])
        for t in vs:
            if added[t][-1] > 0:
                vs[t].append(added["spanperf"][-1] / added[t][-1])
    res["sched"] = {
        "round_trips_per_s": {t: median(v) for t, v in rt.items()},
        "cpu_ns_per_round_trip": {t: median(v) for t, v in cpu_rt.items()},
        "cpu_ratio": {t: median(v) for t, v in slow.items()},
        "switches_per_round_trip": median(sw),
        "added_ns_per_switch": {t: median(v) if v else None for t, v in added.items()},
        "vs_perf_switch": median(vs["perf-switch"]) if vs["perf-switch"] else None,
        "vs_perf_sched": median(vs["perf-sched"]) if vs["perf-sched"] else None,
        "bpf_ns_per_switch": median([c[0] for c in costs]) if costs else None,
        "recorder_cpu_s": {t: median(v) for t, v in cpu.items()},
        "raw": rt, "raw_cpu": cpu_rt, "raw_costs": costs, "raw_added": added}


def _f(x, fmt="%.0f"):
    return fmt % x if x is not None else "?"


def markdown(res):
    v = res["sched"]
    a, s, c = v["added_ns_per_switch"], v["cpu_ratio"], v["recorder_cpu_s"]
    rows = [("spanperf record --sched", "spanperf"), ("perf record -e sched:sched_switch", "perf-switch"),
            ("perf sched record", "perf-sched")]
    out = ["## record --sched: cost per context switch (`-a`, a pipe ping-pong on one CPU, %s switches per "
           "round trip)" % _f(v["switches_per_round_trip"], "%.1f"), "",
           "| recorder | ping-pong CPU per round trip | against none | ns added per switch | round trips/s "
           "| recorder CPU (s) |",
           "|---|---|---|---|---|---|",
           "| none | %.0f ns | 1 | 0 | %.0f | 0 |" % (v["cpu_ns_per_round_trip"]["none"],
                                                   v["round_trips_per_s"]["none"])]
    for name, t in rows:
        out.append("| %s | %.0f ns | %s | %s | %.0f | %.2f |" % (
            name, v["cpu_ns_per_round_trip"][t], _f(s[t], "%.3f"), _f(a[t]), v["round_trips_per_s"][t], c[t]))
    out += ["", "Medians over rounds; ratios and added ns per round against that round's run without a "
            "profiler.  spanperf's added cost per switch against perf's in the same rounds: %s x `perf record -e "
            "sched:sched_switch`, %s x `perf sched record`.  Its switch program alone: %s ns per switch "
            "(bpf_stats)." % (_f(v["vs_perf_switch"], "%.2f"), _f(v["vs_perf_sched"], "%.2f"),
                              _f(v["bpf_ns_per_switch"])), ""]
    return out
