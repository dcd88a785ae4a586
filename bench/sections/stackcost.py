# SPDX-License-Identifier: GPL-2.0
"""Issue 40's table: what complete stacks (`-g`, ehframe) cost beside the peers' frame-pointer
stacks, whole host at 4999 Hz under a CPU-bound load on every CPU, each figure a ratio in the
same round: the sampling program's ns per sample against bpftrace's kstack+ustack program; the
recorder's CPU over 4 s against perf record -g; the off-CPU program's ns per context switch
against bcc offcputime's design in bpftrace (the offcpu section's script).  The in-kernel figure
twice: under `workload spin` (a chain of 3 or 4 frames) and under bench/unitwork DEPTH native frames
deep (its frame-pointer build, so bpftrace's chains are whole too)."""
import json
import os
import subprocess
import time

from harness import (CPUS, DEVNULL, OFFCPU_BT, ROOT, SPANPERF, TMP, WORKLOAD, busy_load, kill, log, median, rounds,
                     spawn, start_background, start_profiler, stop_profiler, under_busy_load, wait_ready)

BPF_STATS = True
HZ = 4999
UNITWORK = os.path.join(ROOT, "build", "bench", "unitwork_fp")
DEPTH = 30


def deep_load(seconds):
    """A thread per CPU in unitwork's chain DEPTH frames deep (2M iterations a unit: ms at the leaf)."""
    return spawn([UNITWORK, str(CPUS), str(seconds), "2000000", str(DEPTH)], stdout=DEVNULL)


def own_stats(pid, name):
    """run_time_ns and run_cnt summed over the programs called name that process pid holds, by a
    program's fd or a link's (its /proc/PID/fdinfo): on a shared host other recorders load
    programs of the same name, which the newest-by-name rule of prog_cost may take instead."""
    ids = set()
    d = "/proc/%d/fdinfo" % pid
    try:
        fds = os.listdir(d)
    except OSError:
        return None
    for fd in fds:
        try:
            for line in open(os.path.join(d, fd)).read().splitlines():
                if line.startswith("prog_id:"):
                    ids.add(int(line.split(":", 1)[1]))
        except (OSError, ValueError):
            continue
    mine = [p for p in json.loads(subprocess.run(["bpftool", "prog", "show", "--json"], capture_output=True,
                                                 text=True).stdout or "[]")
            if p["id"] in ids and p.get("name") == name]
    if not mine:
        return None
    return sum(p.get("run_time_ns", 0) for p in mine), sum(p.get("run_cnt", 0) for p in mine)


def own_cost(pid, name, secs):
    """ns per run of pid's own programs called name over the next secs seconds, once they run (a
    loaded host takes seconds to build the tables); None if they never did."""
    deadline = time.time() + 60
    a = own_stats(pid, name)
    while not (a and a[1]) and time.time() < deadline:
        time.sleep(0.5)
        a = own_stats(pid, name)
    time.sleep(1)
    a = own_stats(pid, name)
    time.sleep(secs)
    b = own_stats(pid, name)
    if a and b and b[1] > a[1]:
        return (b[0] - a[0]) / (b[1] - a[1]), (b[1] - a[1]) / secs
    return None


def in_kernel(out, key="inkernel", make_load=busy_load):
    rows = {"spanperf": [], "bpftrace": []}
    for r in range(rounds()):
        for tool in rows:
            load = make_load(14)
            if tool == "spanperf":
                p = spawn([SPANPERF, "record", "-q", "-a", "-g", "-F", str(HZ), "-o", os.path.join(TMP, "sc.data")],
                          stdout=DEVNULL, stderr=DEVNULL)
                p.tool = "spanperf-ehframe"
                name = "on_sample_eh"
            else:
                p = start_profiler("bpftrace", HZ, None)
                name = str(HZ)
            # The first seconds build tables (ours) and fill maps (bpftrace's): steady state after.
            wait_ready(tool, 4.0)
            c = own_cost(p.pid, name, 5)
            # bpftrace's map is of no use here, and printing it at SIGINT takes it a minute under load.
            kill(p) if tool == "bpftrace" else stop_profiler(p)
            kill(load)
            if c:
                rows[tool].append(c[0])
            log("stackcost %s round %d %s: %s" % (key, r, tool, rows[tool][-1:]))
    out[key] = {t: median(v) for t, v in rows.items()}
    out[key + "_ratio"] = median([s / b for s, b in zip(rows["spanperf"], rows["bpftrace"])])
    out[key + "_raw"] = rows


def recorder(out, secs=4):
    rows = {"spanperf": [], "perf": []}
    for r in range(rounds()):
        for tool in rows:
            path = os.path.join(TMP, "scr-%s.data" % tool)
            if tool == "spanperf":
                cmd = [SPANPERF, "record", "-q", "-a", "-g", "-F", str(HZ), "-d", str(secs), "-o", path]
            else:
                cmd = ["perf", "record", "-q", "-a", "-g", "-F", str(HZ), "-o", path, "--", "sleep", str(secs)]
            ru = under_busy_load(cmd, secs)
            rows[tool].append(ru.ru_utime + ru.ru_stime)
            log("stackcost recorder round %d %s: %.3f s" % (r, tool, rows[tool][-1]))
    out["recorder"] = {t: median(v) for t, v in rows.items()}
    out["recorder_ratio"] = median([s / p for s, p in zip(rows["spanperf"], rows["perf"])])
    out["recorder_raw"] = rows


def offcpu(out):
    rows = {"spanperf": [], "bpftrace": []}
    script = os.path.join(TMP, "sc-offcpu.bt")
    open(script, "w").write(OFFCPU_BT)
    for r in range(rounds()):
        for tool in rows:
            # The ping-pong load: 20 us sleeps in a loop, tens of thousands of switches a second.
            load = spawn([WORKLOAD, "sleeps", "400000", "20"], stdout=DEVNULL)
            if tool == "bpftrace":
                p, name = start_background(tool, ["bpftrace", script]), "sched_switch"
            else:
                p = start_background(tool, [SPANPERF, "record", "-q", "-a", "-g", "-F", "1", "--off-cpu", "-o",
                                            os.path.join(TMP, "sco.data")])
                name = "offcpu_btf"
            wait_ready(tool, 3.0)
            c = own_cost(p.pid, name, 5)
            kill(p) if tool == "bpftrace" else stop_profiler(p)
            kill(load)
            if c:
                rows[tool].append(c[0])
            log("stackcost offcpu round %d %s: %s" % (r, tool, rows[tool][-1:]))
    out["offcpu"] = {t: median(v) for t, v in rows.items()}
    out["offcpu_ratio"] = median([s / b for s, b in zip(rows["spanperf"], rows["bpftrace"])])
    out["offcpu_raw"] = rows


def run(res):
    out = {}
    in_kernel(out)
    in_kernel(out, "inkernel_deep", deep_load)
    recorder(out)
    offcpu(out)
    res["stackcost"] = out


def markdown(res):
    v = res["stackcost"]
    deep = ["| the same, %d native frames deep (bench/unitwork) | %.0f | bpftrace kstack+ustack %.0f | %.2f | <= 0.5 |" % (
        DEPTH, v["inkernel_deep"]["spanperf"], v["inkernel_deep"]["bpftrace"], v["inkernel_deep_ratio"])] \
        if "inkernel_deep" in v else []
    return ["## Complete stacks against the peers' broken ones (issue 40: `-g` is ehframe, whole host, %d Hz, "
            "CPU-bound load on every CPU; off-CPU under the 20 us sleeps load)" % HZ, "",
            "| figure | spanperf `-g` | peer | ratio | target |", "|---|---|---|---|---|",
            "| in-kernel ns per sample (bpf_stats) | %.0f | bpftrace kstack+ustack %.0f | %.2f | <= 0.6 |" % (
                v["inkernel"]["spanperf"], v["inkernel"]["bpftrace"], v["inkernel_ratio"])] + deep + [
            "| recorder CPU over 4 s | %.3f s | perf record -g %.3f s | %.2f | <= 0.3 |" % (
                v["recorder"]["spanperf"], v["recorder"]["perf"], v["recorder_ratio"]),
            "| off-CPU BPF ns per switch | %.0f | bcc offcputime's design (bpftrace) %.0f | %.2f | <= 0.5 |" % (
                v["offcpu"]["spanperf"], v["offcpu"]["bpftrace"], v["offcpu_ratio"]), ""]
