#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""make bench: spanperf's overhead and speed, side by side with perf and bpftrace.

Every comparison alternates the tools round by round under the same load and
reports medians and the median of per-round ratios, so that a noisy, shared
machine moves both sides of a ratio together.  Absolute figures print beside
the ratios with the machine's description.

    python3 bench/bench.py [SECTION...] [--rounds N]
    python3 bench/bench.py --render      # redraw from results/latest.json
    sections: inkernel recorder stolen parts rss stat spans report forks dwarf offcpu otel (default: all)

Writes bench/results/latest.md, latest.json and slowdown.svg.
"""
import datetime
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SPANPERF = os.path.join(ROOT, "spanperf")
WORKLOAD = os.path.join(ROOT, "build", "tests", "workload")
DWARF_WORKLOAD = os.path.join(ROOT, "build", "tests", "workload_dwarf")
FLOOR = os.path.join(ROOT, "build", "bench", "floor")
RESULTS = os.path.join(HERE, "results")
CPUS = os.cpu_count()

ROUNDS = 5
TMP = tempfile.mkdtemp(prefix="spanperf-bench-")
# Every child goes through spawn() so that an interrupted run kills them all: an
# orphaned "record -a" would otherwise keep sampling and skew every later run.
CHILDREN = []


def spawn(cmd, **kw):
    p = subprocess.Popen(cmd, **kw)
    CHILDREN.append(p)
    return p


def kill_children():
    for p in CHILDREN:
        if p.poll() is None:
            p.kill()
            p.wait()
DEVNULL = subprocess.DEVNULL


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def sysctl(name, value=None):
    path = "/proc/sys/" + name.replace(".", "/")
    old = open(path).read().strip()
    # Skipping a write of the value already there matters: a run killed before its
    # cleanup leaves max_percent at 0, and the kernel then refuses any rate write.
    if value is not None and str(value) != old:
        with open(path, "w") as f:
            f.write(str(value))
    return old


def machine():
    model = "unknown"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return {"cpu": model, "nproc": CPUS, "kernel": platform.release(),
            "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
            "pmu": "none (cpu-clock)" if "not supported" in
            subprocess.run(["perf", "stat", "-e", "cycles", "true"], capture_output=True,
                           text=True).stderr else "hardware"}


def median(xs):
    return statistics.median(xs) if xs else float("nan")


# ---------------------------------------------------------------- tools

def bpftrace_script(hz):
    return "profile:hz:%d { @[kstack, ustack, tid] = count(); }" % hz


def start_profiler(tool, hz, out):
    """Starts a profiler in the background; it runs until stop_profiler."""
    if tool == "none":
        return None
    if tool == "floor":
        cmd = [FLOOR, "-F", str(hz), "-d", "3600"]
    elif tool == "spanperf":
        cmd = [SPANPERF, "record", "-q", "-a", "-g", "-F", str(hz), "-o", out]
    elif tool == "perf":
        cmd = ["perf", "record", "-q", "-a", "-g", "-F", str(hz), "-o", out]
    elif tool == "bpftrace":
        cmd = ["bpftrace", "-e", bpftrace_script(hz)]
    # Without stacks: what the call-chain walk costs each tool (the parts section).
    elif tool == "spanperf-nog":
        cmd = [SPANPERF, "record", "-q", "-a", "-F", str(hz), "-o", out]
    elif tool == "perf-nog":
        cmd = ["perf", "record", "-q", "-a", "-F", str(hz), "-o", out]
    # --call-graph dwarf: registers and 8 KiB of user stack per sample (the dwarf section).
    elif tool == "spanperf-dwarf":
        cmd = [SPANPERF, "record", "-q", "-a", "--call-graph", "dwarf", "-F", str(hz), "-o", out]
    elif tool == "perf-dwarf":
        cmd = ["perf", "record", "-q", "-a", "--call-graph", "dwarf", "-F", str(hz), "-o", out]
    elif tool == "bpftrace-nostack":
        cmd = ["bpftrace", "-e", "profile:hz:%d { @[tid] = count(); }" % hz]
    else:
        raise ValueError(tool)
    # stderr goes to a file, never to a pipe nobody drains: bpftrace prints one line
    # per stack-id collision at exit, and blocked on a full pipe it ignores SIGINT.
    p = spawn(cmd, stdout=DEVNULL, stderr=open(os.path.join(TMP, tool + ".stderr"), "a"))
    p.tool = tool
    return p


def stop_profiler(p):
    """SIGINT, then wait; returns (user+sys CPU seconds, max RSS KiB) of the profiler."""
    if p is None:
        return 0.0, 0
    p.send_signal(signal.SIGINT)
    # bpftrace prints its whole map at exit, which takes seconds; a profiler still
    # there after a minute is stuck, and one left running would skew every later run.
    deadline = time.time() + 60
    while True:
        try:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        except ChildProcessError:
            return 0.0, 0
        if pid:
            break
        if time.time() > deadline:
            log("%s did not stop on SIGINT within 60 s; killed" % p.tool)
            p.kill()
            deadline = float("inf")
        time.sleep(0.05)
    p.returncode = status
    return ru.ru_utime + ru.ru_stime, ru.ru_maxrss


def wait_ready(tool, seconds=None):
    # bpftrace needs about a second to compile and attach; the others less.
    time.sleep(seconds if seconds is not None else (2.0 if tool.startswith("bpftrace") else 1.0))


def prog_stats(name):
    """run_time_ns and run_cnt of the newest loaded program with this name."""
    out = subprocess.run(["bpftool", "prog", "show", "--json"], capture_output=True, text=True).stdout
    best = None
    for p in json.loads(out or "[]"):
        if p.get("name") == name and (best is None or p["id"] > best["id"]):
            best = p
    if not best:
        return None
    return best.get("run_time_ns", 0), best.get("run_cnt", 0)


def busy_load(seconds):
    """A CPU-bound load on every CPU for the duration."""
    ms = ",".join([str(int(seconds * 1000))] * CPUS)
    return spawn([WORKLOAD, "spin", ms], stdout=DEVNULL)


# ---------------------------------------------------------------- 1. in-kernel cost

def bench_inkernel(res):
    """ns per sample inside the BPF program, steady state, from bpf_stats."""
    out = {}
    for hz in (999, 4999):
        rows = {"spanperf": [], "bpftrace": []}
        for r in range(ROUNDS):
            for tool, name in (("spanperf", "on_sample"), ("bpftrace", str(hz))):
                load = busy_load(14)
                p = start_profiler(tool, hz, os.path.join(TMP, "ik.data"))
                # Skip the first seconds: bpftrace's maps fill then (4.5 us/sample).
                wait_ready(tool, 4.0)
                a = prog_stats(name)
                time.sleep(5)
                b = prog_stats(name)
                stop_profiler(p)
                load.kill()
                load.wait()
                if a and b and b[1] > a[1]:
                    rows[tool].append((b[0] - a[0]) / (b[1] - a[1]))
                log("inkernel %d Hz round %d %s: %s" % (hz, r, tool, rows[tool][-1:]))
        ratios = [s / b for s, b in zip(rows["spanperf"], rows["bpftrace"])]
        out[hz] = {"spanperf_ns": median(rows["spanperf"]), "bpftrace_ns": median(rows["bpftrace"]),
                   "ratio": median(ratios), "raw": rows}
    res["inkernel"] = out


# ---------------------------------------------------------------- 2+4. recorder CPU and size

def bench_recorder(res):
    hz, secs = 4999, 5
    rows = {"spanperf": [], "perf": []}
    sizes = {"spanperf": [], "perf": []}
    for r in range(ROUNDS):
        for tool in ("spanperf", "perf"):
            out = os.path.join(TMP, "rec-%s.data" % tool)
            load = busy_load(secs + 3)
            time.sleep(0.5)
            if tool == "spanperf":
                cmd = [SPANPERF, "record", "-q", "-a", "-g", "-F", str(hz), "-d", str(secs), "-o", out]
            else:
                cmd = ["perf", "record", "-q", "-a", "-g", "-F", str(hz), "-o", out, "--", "sleep", str(secs)]
            p = spawn(cmd, stdout=DEVNULL, stderr=DEVNULL)
            _, _, ru = os.wait4(p.pid, 0)
            load.kill()
            load.wait()
            rows[tool].append(ru.ru_utime + ru.ru_stime)
            sizes[tool].append(os.path.getsize(out) / secs)
            log("recorder round %d %s: %.3f s CPU, %.0f KB/s" % (r, tool, rows[tool][-1], sizes[tool][-1] / 1e3))
    res["recorder"] = {
        "hz": hz, "seconds": secs,
        "spanperf_cpu_s": median(rows["spanperf"]), "perf_cpu_s": median(rows["perf"]),
        "ratio": median([s / p for s, p in zip(rows["spanperf"], rows["perf"])]),
        "raw": rows}
    res["size"] = {
        "spanperf_Bps": median(sizes["spanperf"]), "perf_Bps": median(sizes["perf"]),
        "ratio": median([s / p for s, p in zip(sizes["spanperf"], sizes["perf"])]), "raw": sizes}


# ---------------------------------------------------------------- 3. time stolen from the workload

def stolen_share(tool, hz, secs):
    """(% of the gaps workload's time in 1-200 us gaps, mean gap ns) while tool samples at hz."""
    p = start_profiler(tool, hz, os.path.join(TMP, "st.data"))
    if p:
        wait_ready(tool)
    w = json.loads(subprocess.run([WORKLOAD, "gaps", str(secs)], capture_output=True, text=True).stdout)
    stop_profiler(p)
    small_ns = sum(c["small_ns"] for c in w["cpus"])
    small = sum(c["small"] for c in w["cpus"])
    return 100.0 * small_ns / (secs * 1e9 * len(w["cpus"])), small_ns / small if small else 0


def bench_stolen(res):
    """The slowdown as the workload itself sees it: one thread per CPU reads the clock
    in a loop and sums the gaps (1-200 us) where something else ran.  A sampling
    interrupt with its program, chain walk and ring write is one such gap; the share
    of time in gaps is the slowdown, and it holds when the host slows the vCPU
    (work and handler slow alike), which timing fixed work does not."""
    secs = 2
    tools = ["none", "floor", "spanperf", "perf", "bpftrace"]
    out = {"seconds": secs, "rates": {}}
    for hz in (99, 999, 4999, 19999):
        share = {t: [] for t in tools}
        gap_ns = {t: [] for t in tools}
        for r in range(ROUNDS):
            for tool in tools:
                pct, gap = stolen_share(tool, hz, secs)
                share[tool].append(pct)
                gap_ns[tool].append(gap)
            log("stolen %d Hz round %d: %s" % (hz, r, {t: round(v[-1], 3) for t, v in share.items()}))
        base = median(share["none"])
        row = {t: {"stolen_pct": median(share[t]), "slowdown_pct": median(share[t]) - base,
                   "mean_gap_ns": median(gap_ns[t])} for t in tools}
        for t in tools[2:]:
            row[t]["above_floor_pct"] = row[t]["slowdown_pct"] - row["floor"]["slowdown_pct"]
            # The extra time per sample: what the tool's gaps cost over the floor's, per sample.
            row[t]["us_per_sample_above_floor"] = row[t]["above_floor_pct"] / 100 / hz * 1e6
        row["raw"] = share
        out["rates"][hz] = row
    res["stolen"] = out


PARTS_HZ = 19999


def bench_parts(res):
    """Where each tool's time above the floor goes: the same stolen-time measure with
    and without call chains, at 19999 Hz, where per-sample costs stand well above
    the round-to-round noise."""
    secs = 2
    tools = ["none", "floor", "spanperf-nog", "perf-nog", "bpftrace-nostack", "spanperf", "perf", "bpftrace"]
    share = {t: [] for t in tools}
    for r in range(ROUNDS):
        for tool in tools:
            share[tool].append(stolen_share(tool, PARTS_HZ, secs)[0])
        log("parts round %d: %s" % (r, {t: round(v[-1], 3) for t, v in share.items()}))
    floor = median(share["floor"])
    res["parts"] = {"hz": PARTS_HZ, "seconds": secs, "raw": share,
                    "rows": {t: {"stolen_pct": median(v), "above_floor_pct": median(v) - floor,
                                 "us_per_sample_above_floor": (median(v) - floor) / 100 / PARTS_HZ * 1e6}
                             for t, v in share.items() if t not in ("none", "floor")}}


# ---------------------------------------------------------------- 7. RSS with many threads

def bench_rss(res):
    rows = {"spanperf": [], "perf": []}
    for r in range(ROUNDS):
        for tool in ("spanperf", "perf"):
            threads = spawn([WORKLOAD, "threads", "1000", "30"], stdout=subprocess.PIPE, text=True)
            threads.stdout.readline()  # all 1000 are up
            out = os.path.join(TMP, "rss.data")
            if tool == "spanperf":
                cmd = [SPANPERF, "record", "-q", "-a", "-g", "-F", "999", "-d", "5", "-o", out]
            else:
                cmd = ["perf", "record", "-q", "-a", "-g", "-F", "999", "-o", out, "--", "sleep", "5"]
            p = spawn(cmd, stdout=DEVNULL, stderr=DEVNULL)
            _, _, ru = os.wait4(p.pid, 0)
            threads.kill()
            threads.wait()
            rows[tool].append(ru.ru_maxrss)
            log("rss round %d %s: %d KiB" % (r, tool, ru.ru_maxrss))
    res["rss"] = {"spanperf_kib": median(rows["spanperf"]), "perf_kib": median(rows["perf"]),
                  "ratio": median([s / p for s, p in zip(rows["spanperf"], rows["perf"])]), "raw": rows}


# ---------------------------------------------------------------- stat: cost per switch

def bench_stat(res):
    """ns per context switch of the counters program with 4 counter-read events."""
    rows = {"4 counter reads": [], "1 counter read": [], "none (task-clock only)": []}
    evsets = {"4 counter reads": "page-faults,minor-faults,major-faults,context-switches",
              "1 counter read": "page-faults", "none (task-clock only)": "task-clock"}
    per_thread = None
    for r in range(ROUNDS):
        for label, ev in evsets.items():
            load = spawn([WORKLOAD, "sleeps", "1000000", "10"], stdout=DEVNULL)
            p = spawn([SPANPERF, "stat", "-v", "-e", ev, "-o", "/dev/null", "-d", "6"],
                                 stdout=DEVNULL, stderr=subprocess.PIPE, text=True)
            time.sleep(1.5)
            a = prog_stats("switch_btf")
            time.sleep(3)
            b = prog_stats("switch_btf")
            _, err = p.communicate()
            load.kill()
            load.wait()
            m = re.search(r"(\d+) bytes of map per thread", err)
            if m:
                per_thread = int(m.group(1))
            if a and b and b[1] > a[1]:
                rows[label].append((b[0] - a[0]) / (b[1] - a[1]))
            log("stat round %d %s: %s ns/switch" % (r, label, rows[label][-1:]))
    res["stat"] = {label: median(v) for label, v in rows.items()}
    res["stat"]["bytes_per_thread"] = per_thread
    res["stat"]["raw"] = rows


# ---------------------------------------------------------------- 5. span cost and join

GEN_SPANS = os.path.join(ROOT, "build", "bench", "gen_spans")


def file_offset(path, sym):
    """A function's file offset, for the uprobe floor (readelf, as an independent check)."""
    vaddr = None
    for line in subprocess.run(["readelf", "-sW", path], capture_output=True, text=True).stdout.splitlines():
        f = line.split()
        if len(f) >= 8 and f[7] == sym and f[3] == "FUNC":
            vaddr = int(f[1], 16)
    for line in subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout.splitlines():
        f = line.split()
        if len(f) >= 6 and f[0] == "LOAD":
            off, va, filesz = int(f[1], 16), int(f[2], 16), int(f[4], 16)
            if va <= vaddr < va + filesz:
                return vaddr - va + off
    raise RuntimeError("no %s in %s" % (sym, path))


def per_call(tool, mode, n, span, floor_arg):
    """CPU ns per call of the workload's loop under one tool."""
    wl = [WORKLOAD, mode, str(n)]
    if tool == "spanperf":
        p = subprocess.run([SPANPERF, "record", "-q", "-F", "10", "-o", os.path.join(TMP, "sp.data"),
                            "--span", span, "--"] + wl, capture_output=True, text=True)
        return json.loads(p.stdout.splitlines()[-1])["cpu_ns_per_call"]
    fl = None
    if tool == "floor":
        fl = spawn([FLOOR] + floor_arg + ["-d", "3600"], stdout=DEVNULL, stderr=DEVNULL)
        time.sleep(0.5)
    try:
        p = subprocess.run(wl, capture_output=True, text=True)
        return json.loads(p.stdout)["cpu_ns_per_call"]
    finally:
        if fl:
            stop_profiler(fl)


def bench_spans(res):
    cases = {
        "syscall": ("getppid", 2000000, "syscall:getppid",
                    ["-t", "syscalls:sys_enter_getppid,syscalls:sys_exit_getppid"]),
        "uprobe": ("tiny", 200000, "uprobe:%s:tiny" % WORKLOAD,
                   ["-u", "%s:%x" % (WORKLOAD, file_offset(WORKLOAD, "tiny"))]),
    }
    out = {}
    for name, (mode, n, span, floor_arg) in cases.items():
        rows = {"none": [], "floor": [], "spanperf": []}
        for r in range(ROUNDS):
            for tool in rows:
                rows[tool].append(per_call(tool, mode, n, span, floor_arg))
            log("spans %s round %d: %s" % (name, r, {t: round(v[-1], 1) for t, v in rows.items()}))
        best = {t: min(v) for t, v in rows.items()}
        out[name] = {"none_ns": best["none"], "bare_probe_ns": best["floor"] - best["none"],
                     "span_ns": best["spanperf"] - best["none"],
                     "beyond_bare_ns": best["spanperf"] - best["floor"], "raw": rows}
    # The join: 1M samples by 1M spans over 100 threads, in a generated file.
    path = os.path.join(TMP, "join.data")
    subprocess.run([GEN_SPANS, path, "1000000", "1000000", "100"], check=True)
    times, rss = [], []
    for r in range(min(ROUNDS, 3)):
        t0 = time.time()
        p = spawn([SPANPERF, "report", "-i", path, "--spans", "--format", "json"], stdout=DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        times.append(time.time() - t0)
        rss.append(ru.ru_maxrss)
        log("join round %d: %.2f s, %d KiB" % (r, times[-1], rss[-1]))
    out["join"] = {"samples": 1000000, "spans": 1000000, "threads": 100, "seconds": min(times),
                   "peak_rss_kib": max(rss), "file_mb": os.path.getsize(path) / 1e6}
    res["spans"] = out


# ---------------------------------------------------------------- 6. report speed and memory

def timed(cmd):
    t0 = time.time()
    p = spawn(cmd, stdout=DEVNULL, stderr=DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    return time.time() - t0, ru.ru_maxrss, status


def bench_report(res):
    """spanperf report against perf report --stdio on one file of 40k+ samples with call graphs."""
    path = os.path.join(TMP, "report.data")
    load = busy_load(8)
    time.sleep(0.3)
    subprocess.run([SPANPERF, "record", "-q", "-a", "-g", "-F", "4999", "-d", "5", "-o", path], check=True)
    load.kill()
    load.wait()
    out = subprocess.run([SPANPERF, "report", "-i", path, "--format", "json", "--sort", "comm"],
                         capture_output=True, text=True).stdout
    samples = sum(json.loads(l)["samples"] for l in out.splitlines())
    pairs = {
        "table (no call graph)": ([SPANPERF, "report", "-i", path],
                                  ["perf", "report", "--stdio", "-i", path, "--no-children", "-g", "none"]),
        "call graph": ([SPANPERF, "report", "-i", path, "-g"], ["perf", "report", "--stdio", "-i", path]),
        "folded / flame graph": ([SPANPERF, "report", "-i", path, "--flamegraph", os.path.join(TMP, "f.svg")],
                                 ["perf", "script", "-i", path]),
    }
    out = {"samples": samples, "file_mb": os.path.getsize(path) / 1e6, "rows": {}}
    for name, (mine, theirs) in pairs.items():
        out["rows"][name] = race(name, mine, theirs)
        out["rows"][name]["perf_cmd"] = " ".join(a for a in theirs if a not in ("-i", path))
    res["report"] = out


def race(name, mine, theirs):
    """The fastest of ROUNDS alternating runs of two report commands, and their peak RSS."""
    t = {"spanperf": [], "perf": []}
    m = {"spanperf": 0, "perf": 0}
    for r in range(ROUNDS):
        for tool, cmd in (("spanperf", mine), ("perf", theirs)):
            sec, rss, _ = timed(cmd)
            t[tool].append(sec)
            m[tool] = max(m[tool], rss)
        log("report %s round %d: spanperf %.2f s, perf %.2f s" % (name, r, t["spanperf"][-1], t["perf"][-1]))
    return {"spanperf_s": min(t["spanperf"]), "perf_s": min(t["perf"]), "ratio": min(t["spanperf"]) / min(t["perf"]),
            "spanperf_rss_kib": m["spanperf"], "perf_rss_kib": m["perf"]}


def bench_forks(res):
    """Report on a fork-heavy whole-host recording: 1,000 fork+exec and 100 forks without exec."""
    path = os.path.join(TMP, "forks.data")
    subprocess.run([SPANPERF, "record", "-q", "-a", "-g", "-F", "999", "-o", path, "--", "sh", "-c",
                    "%s fork 1000 >/dev/null; %s forkspin 100 5 >/dev/null" % (WORKLOAD, WORKLOAD)], check=True)
    res["forks"] = race("forks", [SPANPERF, "report", "-i", path, "-g"], ["perf", "report", "--stdio", "-i", path])
    res["forks"]["file_mb"] = os.path.getsize(path) / 1e6


def dwarf_report_stats(path):
    """report -v's unwind line: (user stacks, complete, cut, us per stack)."""
    err = subprocess.run([SPANPERF, "report", "-v", "-i", path, "--folded"], capture_output=True, text=True).stderr
    m = re.search(r"dwarf unwind: (\d+) user stacks, (\d+) complete, (\d+) cut short; \d+ frames, ([\d.]+) us", err)
    lost = re.search(r"(\d+) samples lost while recording", err)
    return {"stacks": int(m.group(1)), "complete": int(m.group(2)), "cut": int(m.group(3)),
            "us_per_stack": float(m.group(4)), "lost": int(lost.group(1)) if lost else None}


def bench_dwarf(res):
    """--call-graph dwarf at 999 Hz against perf's: the recorder's CPU, bytes and
    stolen time under a CPU-bound load on every CPU, then report time, unwind
    cost and peak RSS on a file of the no-frame-pointer workload, ours and perf's."""
    hz, secs = 999, 5
    cpu = {"spanperf": [], "perf": []}
    rate = {"spanperf": [], "perf": []}
    per_sample = {"spanperf": [], "perf": []}
    lost = []
    for r in range(ROUNDS):
        for tool in ("spanperf", "perf"):
            out = os.path.join(TMP, "dw-%s.data" % tool)
            load = busy_load(secs + 3)
            time.sleep(0.5)
            if tool == "spanperf":
                cmd = [SPANPERF, "record", "-q", "-a", "--call-graph", "dwarf", "-F", str(hz), "-d", str(secs), "-o", out]
            else:
                cmd = ["perf", "record", "-q", "-a", "--call-graph", "dwarf", "-F", str(hz), "-o", out, "--",
                       "sleep", str(secs)]
            p = spawn(cmd, stdout=DEVNULL, stderr=DEVNULL)
            _, _, ru = os.wait4(p.pid, 0)
            load.kill()
            load.wait()
            cpu[tool].append(ru.ru_utime + ru.ru_stime)
            rate[tool].append(os.path.getsize(out) / secs)
            if tool == "spanperf":
                st = dwarf_report_stats(out)
                lost.append(st["lost"])
                per_sample[tool].append(os.path.getsize(out) / max(1, st["stacks"]))
            log("dwarf recorder round %d %s: %.3f s CPU, %.0f KB/s" % (r, tool, cpu[tool][-1], rate[tool][-1] / 1e3))
    stolen = {t: [] for t in ("none", "spanperf-dwarf", "perf-dwarf")}
    for r in range(ROUNDS):
        for tool in stolen:
            stolen[tool].append(stolen_share(tool, hz, 2)[0])
        log("dwarf stolen round %d: %s" % (r, {t: round(v[-1], 3) for t, v in stolen.items()}))
    base = median(stolen["none"])
    out = {"hz": hz, "seconds": secs,
           "spanperf_cpu_s": median(cpu["spanperf"]), "perf_cpu_s": median(cpu["perf"]),
           "cpu_ratio": median([a / b for a, b in zip(cpu["spanperf"], cpu["perf"])]),
           "spanperf_Bps": median(rate["spanperf"]), "perf_Bps": median(rate["perf"]),
           "bytes_ratio": median([a / b for a, b in zip(rate["spanperf"], rate["perf"])]),
           "spanperf_bytes_per_sample": median(per_sample["spanperf"]), "spanperf_lost": lost,
           "stolen_us_per_sample": {t: (median(v) - base) / 100 / hz * 1e6 for t, v in stolen.items() if t != "none"},
           "raw": {"cpu": cpu, "rate": rate, "stolen": stolen}}
    # Report: a file of the no-frame-pointer workload, by spanperf, then by perf (per-thread, where perf unwinds).
    files = {}
    path = os.path.join(TMP, "dw-report.data")
    subprocess.run([SPANPERF, "record", "-q", "--call-graph", "dwarf", "-F", str(hz), "-o", path, "--",
                    DWARF_WORKLOAD, "3000"], check=True, stdout=DEVNULL)
    files["spanperf file"] = path
    path = os.path.join(TMP, "dw-report-perf.data")
    # --buildid-mmap: perf 6.1's build-id pass at the end aborts on this workload's library here.
    subprocess.run(["perf", "record", "-q", "--buildid-mmap", "--call-graph", "dwarf", "-F", str(hz), "-o", path,
                    "--", DWARF_WORKLOAD, "3000"], check=True, stdout=DEVNULL, stderr=DEVNULL)
    files["perf file"] = path
    out["report"] = {}
    for name, path in files.items():
        row = race("dwarf " + name, [SPANPERF, "report", "-i", path, "-g"], ["perf", "report", "--stdio", "-i", path])
        row.update(dwarf_report_stats(path))
        row["file_mb"] = os.path.getsize(path) / 1e6
        out["report"][name] = row
    res["dwarf"] = out


# ---------------------------------------------------------------- output

# ---------------------------------------------------------------- otel: OTEP 4947 thread context

def otel_load(kind, secs):
    """One busy process per CPU: a shell loop that does not export the variable ("plain"), the
    workload publishing nothing (kind "none": the variable is there, NULL), one long span each
    ("ctx"), or a span switch every 100 us ("switch": 10,000 a second)."""
    procs = []
    for _ in range(CPUS):
        if kind == "plain":
            cmd = ["sh", "-c", "while :; do :; done"]
        elif kind == "none":
            cmd = [WORKLOAD, "spin", str(int(secs * 1000))]
        elif kind == "ctx":
            cmd = [WORKLOAD, "otel", "1", str(int(secs * 1e6))]
        else:
            cmd = [WORKLOAD, "otel", str(int(secs * 10000)), "100"]
        procs.append(spawn(cmd, stdout=DEVNULL))
    return procs


def otel_cost(otel, kind, hz, secs=8):
    """ns per sample in the sampling program while the load runs, as record -v reports its own
    program's bpf_stats (other recorders on a shared machine load programs of the same name)."""
    out = os.path.join(TMP, "otel.data")
    err = os.path.join(TMP, "otel.stderr")
    load = otel_load(kind, 10)
    time.sleep(0.2)
    cmd = [SPANPERF, "record", "-v", "-a", "-F", str(hz), "-d", str(secs), "-o", out] + (["--otel"] if otel else [])
    with open(err, "w") as f:
        p = spawn(cmd, stdout=DEVNULL, stderr=f)
        p.wait()
    for w in load:
        w.kill()
        w.wait()
    m = re.search(r"sampling program: \d+ runs, (\d+) ns each", open(err).read())
    return float(m.group(1)) if m else float("nan")


def tls_floor_cost(tls, hz):
    """ns per sample of bench/floor's program on the same load: empty, or reading one word of the
    interrupted thread's TLS (-r), the least any reader of thread context pays."""
    load = otel_load("ctx", 10)
    time.sleep(0.2)
    fl = spawn([FLOOR, "-F", str(hz), "-d", "9"] + (["-r"] if tls else []), stdout=DEVNULL, stderr=DEVNULL)
    time.sleep(2)
    name = "floor_tls" if tls else "floor_prog"
    a = prog_stats(name)
    time.sleep(5)
    b = prog_stats(name)
    for p in [fl] + load:
        p.kill()
        p.wait()
    return (b[0] - a[0]) / (b[1] - a[1]) if a and b and b[1] > a[1] else float("nan")


def otel_spans_of(path):
    p = subprocess.run([SPANPERF, "report", "-i", path, "--spans", "--format", "json"],
                       capture_output=True, text=True)
    return sum(1 for l in p.stdout.splitlines() if '"source":"otel"' in l)


def gen_otlp(path, n, tid, pid, t0, t1):
    """n OTLP spans on one thread spread over [t0, t1] (unix ns), as the file exporter writes them."""
    step = max((t1 - t0) // n, 2)
    with open(path, "w") as f:
        f.write('{"resourceSpans":[{"resource":{"attributes":[{"key":"process.pid","value":{"intValue":"%d"}}]},'
                '"scopeSpans":[{"scope":{"name":"bench"},"spans":[' % pid)
        for i in range(n):
            s = t0 + i * step
            f.write('%s{"traceId":"%032x","spanId":"%016x","parentSpanId":"","name":"op","kind":1,'
                    '"startTimeUnixNano":"%d","endTimeUnixNano":"%d","attributes":[{"key":"thread.id",'
                    '"value":{"intValue":"%d"}}],"status":{}}' % ("," if i else "", i // 10 + 1, i + 1, s,
                                                                  s + step - 1, tid))
        f.write("]}]}]}\n")


def bench_otel(res):
    """The cost of reading the thread context in BPF, the context-change rate, and annotate on 1M OTLP spans."""
    hz = 4999
    cost = {"off": [], "no context": [], "context": [], "plain off": [], "plain": []}
    for r in range(ROUNDS):
        for label, otel, kind in (("off", False, "ctx"), ("no context", True, "none"), ("context", True, "ctx"),
                                  ("plain off", False, "plain"), ("plain", True, "plain")):
            cost[label].append(otel_cost(otel, kind, hz))
            log("otel cost round %d %s: %.0f ns/sample" % (r, label, cost[label][-1]))
    floor = {"empty": [], "tls read": []}
    for r in range(ROUNDS):
        for label in floor:
            floor[label].append(tls_floor_cost(label == "tls read", hz))
            log("otel floor round %d %s: %.0f ns/sample" % (r, label, floor[label][-1]))
    out = {"hz": hz, "ns_per_sample": {k: median(v) for k, v in cost.items()},
           "floor_ns": {k: median(v) for k, v in floor.items()},
           "tls_read_ns": median([t - e for t, e in zip(floor["tls read"], floor["empty"])]),
           "added_ns": dict({k: median([x - y for x, y in zip(cost[k], cost["off"])]) for k in ("no context", "context")},
                            **{"not publishing": median([x - y for x, y in zip(cost["plain"], cost["plain off"])])}),
           "raw": cost}
    # 10,000 span switches a second on each CPU: each sample sees a new context.
    rates = {}
    for rate_hz in (999, 4999):
        rows = []
        for r in range(ROUNDS):
            path = os.path.join(TMP, "sw.data")
            secs = 5
            load = otel_load("switch", secs + 1)
            time.sleep(0.2)
            p = spawn([SPANPERF, "record", "-q", "-a", "--otel", "-F", str(rate_hz), "-d", str(secs), "-o", path],
                      stdout=DEVNULL, stderr=DEVNULL)
            _, _, ru = os.wait4(p.pid, 0)
            for w in load:
                w.kill()
                w.wait()
            n = otel_spans_of(path)
            # On a shared machine the load gets what CPU it gets: a record per sample of it is the ceiling.
            pids = {w.pid for w in load}
            rep_ = subprocess.run([SPANPERF, "report", "-i", path, "--sort", "pid", "--format", "json"],
                                  capture_output=True, text=True).stdout
            samples = sum(json.loads(l)["samples"] for l in rep_.splitlines() if json.loads(l)["pid"] in pids)
            rows.append({"records_per_s": n / secs, "recorder_cpu_s": ru.ru_utime + ru.ru_stime,
                         "per_sample": n / samples if samples else float("nan")})
            log("otel switches -F %d round %d: %.0f records/s, %.3f per sample of the load" % (
                rate_hz, r, rows[-1]["records_per_s"], rows[-1]["per_sample"]))
        rates[rate_hz] = {"records_per_s": median([x["records_per_s"] for x in rows]),
                          "per_sample": median([x["per_sample"] for x in rows]),
                          "recorder_cpu_s": median([x["recorder_cpu_s"] for x in rows]), "seconds": 5}
    out["switches"] = rates
    # annotate: 1M OTLP spans against a recording of the thread they name.
    data = os.path.join(TMP, "ann.data")
    truth = os.path.join(TMP, "ann.jsonl")
    subprocess.run([SPANPERF, "record", "-q", "-F", "999", "-o", data, "--", WORKLOAD, "calls", "400", "5", truth],
                   check=True, stdout=DEVNULL, stderr=DEVNULL)
    calls = [json.loads(l) for l in open(truth)]
    off = time.clock_gettime_ns(time.CLOCK_REALTIME) - time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    big = os.path.join(TMP, "1m.json")
    gen_otlp(big, 1000000, calls[0]["tid"], calls[0]["pid"], calls[0]["start_ns"] + off, calls[-1]["end_ns"] + off)
    runs = [timed([SPANPERF, "annotate", "--spans", big, "-i", data, "--format", "json"]) for _ in range(ROUNDS)]
    out["annotate_1m"] = {"seconds": min(r[0] for r in runs), "max_rss_kib": max(r[1] for r in runs),
                          "file_mb": os.path.getsize(big) / 1e6, "raw": [r[0] for r in runs]}
    log("otel annotate 1M OTLP spans: %.2f s" % out["annotate_1m"]["seconds"])
    res["otel"] = out
# ---------------------------------------------------------------- off-CPU

# bcc offcputime's design in bpftrace: on every switch, the sleeping thread's start
# and both stacks keyed by thread; at its switch-in, the time summed per stacks.
OFFCPU_BT = """tracepoint:sched:sched_switch
{
	if (args->prev_state == 1 || args->prev_state == 2) {
		@start[args->prev_pid] = nsecs;
		@ks[args->prev_pid] = kstack;
		@us[args->prev_pid] = ustack;
	}
	$s = @start[args->next_pid];
	if ($s) {
		@off[@ks[args->next_pid], @us[args->next_pid], args->next_pid] = sum(nsecs - $s);
		delete(@start[args->next_pid]);
	}
}
"""


def bench_offcpu(res):
    """ns per context switch inside the off-CPU program (bpf_stats), spanperf against the bcc design."""
    rows = {"spanperf": [], "spanperf-thresh0": [], "bpftrace": []}
    script = os.path.join(TMP, "offcpu.bt")
    open(script, "w").write(OFFCPU_BT)
    for r in range(ROUNDS):
        for tool in rows:
            # Switch-heavy: 20 us sleeps in a loop, a few tens of thousands of switches a second.
            load = spawn([WORKLOAD, "sleeps", "400000", "20"], stdout=DEVNULL)
            out = os.path.join(TMP, "off.data")
            if tool == "bpftrace":
                cmd, name = ["bpftrace", script], "sched_switch"
            else:
                cmd = [SPANPERF, "record", "-q", "-a", "-g", "-F", "1", "--off-cpu", "-o", out]
                cmd += ["--off-cpu-thresh", "0"] if tool.endswith("thresh0") else []
                name = "offcpu_btf"
            p = spawn(cmd, stdout=DEVNULL, stderr=open(os.path.join(TMP, tool + ".stderr"), "a"))
            p.tool = tool
            wait_ready(tool, 3.0 if tool == "bpftrace" else 2.0)
            a = prog_stats(name)
            time.sleep(5)
            b = prog_stats(name)
            stop_profiler(p)
            load.kill()
            load.wait()
            if a and b and b[1] > a[1]:
                rows[tool].append(((b[0] - a[0]) / (b[1] - a[1]), (b[1] - a[1]) / 5.0))
            log("offcpu round %d %s: %s" % (r, tool, rows[tool][-1:]))
    ns = {t: median([x[0] for x in v]) for t, v in rows.items()}
    ratios = [s[0] / b[0] for s, b in zip(rows["spanperf"], rows["bpftrace"])]
    res["offcpu"] = {"ns": ns, "switches_per_s": median([x[1] for x in rows["spanperf"]]),
                     "ratio": median(ratios), "raw": rows}


def chart(res, path):
    """Slowdown (time stolen from the workload) against sampling rate, one line per tool."""
    sd = res.get("stolen")
    if not sd or len(sd["rates"]) < 2:
        return
    import math
    rates = sorted(int(r) for r in sd["rates"])
    tools = ["floor", "spanperf", "perf", "bpftrace"]
    colors = {"floor": "#999999", "spanperf": "#d62728", "perf": "#1f77b4", "bpftrace": "#2ca02c"}
    W, H, L, R, T, B = 640, 400, 70, 130, 40, 50
    ys = [sd["rates"][r][t]["slowdown_pct"] for r in rates for t in tools]
    ymax = max(5.0, max(ys) * 1.1)
    ymin = min(0.0, min(ys))

    def x(rate):
        lo, hi = math.log10(rates[0]), math.log10(rates[-1])
        return L + (math.log10(rate) - lo) / (hi - lo) * (W - L - R)

    def y(v):
        return T + (ymax - v) / (ymax - ymin) * (H - T - B)

    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
             'font-size="12">' % (W, H),
             '<rect width="100%" height="100%" fill="white"/>',
             '<text x="%d" y="22" font-size="14">Slowdown vs sampling rate, -a -g (time stolen from the '
             'workload; %s, %d CPUs)</text>' % (L, res["machine"]["kernel"], CPUS)]
    for i in range(6):
        v = ymin + (ymax - ymin) * i / 5
        parts.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>' % (L, W - R, y(v), y(v)))
        parts.append('<text x="%d" y="%.1f" text-anchor="end">%.0f%%</text>' % (L - 6, y(v) + 4, v))
    for rate in rates:
        parts.append('<text x="%.1f" y="%d" text-anchor="middle">%d Hz</text>' % (x(rate), H - B + 18, rate))
    parts.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#333"/>' % (L, W - R, y(0), y(0)))
    for k, tool in enumerate(tools):
        pts = " ".join("%.1f,%.1f" % (x(r), y(sd["rates"][r][tool]["slowdown_pct"])) for r in rates)
        parts.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' % (colors[tool], pts))
        for r in rates:
            parts.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' %
                         (x(r), y(sd["rates"][r][tool]["slowdown_pct"]), colors[tool]))
        parts.append('<rect x="%d" y="%d" width="14" height="3" fill="%s"/><text x="%d" y="%d">%s</text>' %
                     (W - R + 12, T + 20 * k + 6, colors[tool], W - R + 32, T + 20 * k + 11,
                      "empty BPF (floor)" if tool == "floor" else tool))
    parts.append('<text x="%d" y="%d" text-anchor="middle">sampling rate per CPU (log scale)</text>'
                 % ((L + W - R) / 2, H - 10))
    parts.append("</svg>")
    open(path, "w").write("\n".join(parts) + "\n")


def markdown(res):
    m = res["machine"]
    lines = ["# spanperf benchmarks", "",
             "%s; %s, %d CPUs, kernel %s, PMU: %s; %d rounds per figure, medians; ratios are "
             "medians of per-round ratios." % (m["date"], m["cpu"], m["nproc"], m["kernel"], m["pmu"],
                                              res["rounds"]), ""]
    if res.get("partial"):
        lines[-1:] = ["Sections run again since, alone: %s." % ", ".join(
            "%s at %s" % (sec, date) for sec, date in sorted(res["partial"].items())), ""]
    if "inkernel" in res:
        lines += ["## In-kernel cost per sample (bpf_stats, steady state, `-a -g`)", "",
                  "| rate | spanperf ns | bpftrace ns | ratio | target |", "|---|---|---|---|---|"]
        for hz, v in res["inkernel"].items():
            lines.append("| %s Hz | %.0f | %.0f | %.2f | <= 0.5 |" % (hz, v["spanperf_ns"], v["bpftrace_ns"], v["ratio"]))
        lines.append("")
    if "recorder" in res:
        v = res["recorder"]
        lines += ["## Recorder's own CPU (`-a -F %d -g`, %d s, CPU-bound load)" % (v["hz"], v["seconds"]), "",
                  "| spanperf | perf record | ratio | target |", "|---|---|---|---|",
                  "| %.3f s | %.3f s | %.2f | <= 0.5 |" % (v["spanperf_cpu_s"], v["perf_cpu_s"], v["ratio"]), ""]
    if "size" in res:
        v = res["size"]
        lines += ["## Output per second of recording (same runs)", "",
                  "| spanperf | perf record | ratio | target |", "|---|---|---|---|",
                  "| %.0f KB/s | %.0f KB/s | %.2f | <= 1 |" % (v["spanperf_Bps"] / 1e3, v["perf_Bps"] / 1e3, v["ratio"]), ""]
    if "stat" in res:
        v = res["stat"]
        lines += ["## stat: BPF cost per context switch (bpf_stats, tp_btf, switch-heavy load)", "",
                  "| counters | ns/switch | target |", "|---|---|---|"]
        for label in ("4 counter reads", "1 counter read", "none (task-clock only)"):
            lines.append("| %s | %.0f | %s |" % (label, v[label], "<= 600" if label.startswith("4") else ""))
        lines += ["", "Kernel memory per tracked thread (counts map, memlock / max_entries): %s bytes." %
                  v.get("bytes_per_thread"), ""]
    if "spans" in res:
        v = res["spans"]
        lines += ["## Span cost per span (CPU per call, fastest of %d rounds)" % res["rounds"], "",
                  "| source | call alone | bare probe pair (empty BPF) | spanperf span | beyond the bare probes | "
                  "opentelemetry-perf |", "|---|---|---|---|---|---|"]
        for src in ("syscall", "uprobe"):
            if src in v:
                x = v[src]
                lines.append("| %s | %.0f ns | %.0f ns | %.0f ns | %.0f ns | 33,500 ns |" % (
                    src, x["none_ns"], x["bare_probe_ns"], x["span_ns"], x["beyond_bare_ns"]))
        j = v.get("join")
        if j:
            lines += ["", "Join of %d samples with %d spans over %d threads (`report --spans --format json`, "
                      "%.0f MB file): %.2f s, peak RSS %.0f MiB." % (j["samples"], j["spans"], j["threads"],
                                                                    j["file_mb"], j["seconds"],
                                                                    j["peak_rss_kib"] / 1024)]
        lines.append("")
    if "report" in res:
        v = res["report"]
        lines += ["## Report time and peak memory (%d samples with call graphs, %.0f MB; fastest of %d)" % (
            v["samples"], v["file_mb"], res["rounds"]), "",
                  "| output | spanperf | perf | ratio | spanperf RSS | perf RSS | target |", "|---|---|---|---|---|---|---|"]
        for name, x in v["rows"].items():
            lines.append("| %s (`%s`) | %.2f s | %.2f s | %.2f | %.0f MiB | %.0f MiB | <= 0.5 |" % (
                name, x["perf_cmd"], x["spanperf_s"], x["perf_s"], x["ratio"], x["spanperf_rss_kib"] / 1024,
                x["perf_rss_kib"] / 1024))
        lines.append("")
    if "offcpu" in res:
        v = res["offcpu"]
        lines += ["## record --off-cpu: BPF cost per context switch (bpf_stats, `-a -g`, %.0f switches/s)" %
                  v["switches_per_s"], "",
                  "| spanperf (sums in BPF) | spanperf (--off-cpu-thresh 0) | bcc offcputime's design (bpftrace) "
                  "| ratio | target |", "|---|---|---|---|---|",
                  "| %.0f ns | %.0f ns | %.0f ns | %.2f | <= 1000 ns, <= 0.5 |" % (
                      v["ns"]["spanperf"], v["ns"]["spanperf-thresh0"], v["ns"]["bpftrace"], v["ratio"]), "",
                  "perf 6.1 here is built without BPF skeletons: it cannot record --off-cpu.", ""]
    if "forks" in res:
        v = res["forks"]
        lines += ["## Report on a fork-heavy recording (1,000 fork+exec, 100 forks without exec; `-g`; "
                  "%.1f MB; fastest of %d)" % (v["file_mb"], res["rounds"]), "",
                  "| spanperf report -g | perf report --stdio | ratio | spanperf RSS | perf RSS | target |",
                  "|---|---|---|---|---|---|",
                  "| %.2f s | %.2f s | %.2f | %.0f MiB | %.0f MiB | <= 0.5 |" % (
                      v["spanperf_s"], v["perf_s"], v["ratio"], v["spanperf_rss_kib"] / 1024,
                      v["perf_rss_kib"] / 1024), ""]
    if "stolen" in res:
        v = res["stolen"]
        lines += ["## Slowdown as the workload sees it (time stolen from it, `-a -g`)", "",
                  "One thread per CPU reads the clock in a loop for %d s and sums the gaps of 1-200 us in "
                  "which something else ran: each sample's interrupt, program, chain walk and ring write "
                  "is one. The slowdown is the share of time in gaps over the same share without a "
                  "profiler (which holds the timer tick). Medians of %d rounds." % (v["seconds"], res["rounds"]),
                  "",
                  "This is the slowdown figure kept: timing a fixed piece of work varied from 1.5 s to 7.4 s "
                  "of CPU within minutes on this shared host, profiler or not, while the share of time in "
                  "gaps holds when the host changes the vCPU's speed.", "",
                  "| rate | empty BPF (floor) | spanperf | perf record | bpftrace | spanperf above floor | "
                  "perf above floor | bpftrace above floor | spanperf per sample | perf per sample | "
                  "bpftrace per sample |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        for hz, row in v["rates"].items():
            lines.append("| %s Hz | %.2f%% | %.2f%% | %.2f%% | %.2f%% | %.2f%% | %.2f%% | %.2f%% | %.2f us | "
                         "%.2f us | %.2f us |" % (
                             hz, row["floor"]["slowdown_pct"], row["spanperf"]["slowdown_pct"],
                             row["perf"]["slowdown_pct"], row["bpftrace"]["slowdown_pct"],
                             row["spanperf"]["above_floor_pct"], row["perf"]["above_floor_pct"],
                             row["bpftrace"]["above_floor_pct"], row["spanperf"]["us_per_sample_above_floor"],
                             row["perf"]["us_per_sample_above_floor"],
                             row["bpftrace"]["us_per_sample_above_floor"]))
        lines += ["", "![slowdown](slowdown.svg)", ""]
    if "parts" in res:
        v = res["parts"]
        lines += ["## Where the time above the floor goes (stolen time at %d Hz, with and without stacks)" % v["hz"], "",
                  "The measure above, for each tool with and without call chains. spanperf runs perf's own "
                  "sample path (chain walk and ring write, which perf record pays too) plus its per-thread "
                  "program, so it cannot come below perf record here; bpftrace walks the same stacks but "
                  "hashes them into a stack map instead of writing a record per sample. Medians of %d rounds."
                  % res["rounds"], "",
                  "| tool | stolen | above floor | per sample above floor |", "|---|---|---|---|"]
        for t, row in v["rows"].items():
            lines.append("| %s | %.2f%% | %.2f%% | %.2f us |" % (
                t.replace("-nog", " (no -g)").replace("-nostack", " (@[tid] only)"), row["stolen_pct"],
                row["above_floor_pct"], row["us_per_sample_above_floor"]))
        lines.append("")
    if "dwarf" in res:
        v = res["dwarf"]
        lines += ["## --call-graph dwarf (%d Hz, 8 KiB stack copies)" % v["hz"], "",
                  "Recording `-a` for %d s under a CPU-bound load on every CPU:" % v["seconds"], "",
                  "| | spanperf | perf record | ratio | target |", "|---|---|---|---|---|",
                  "| recorder CPU | %.3f s | %.3f s | %.2f | <= 0.5 |" % (v["spanperf_cpu_s"], v["perf_cpu_s"], v["cpu_ratio"]),
                  "| output | %.0f KB/s | %.0f KB/s | %.2f | <= 1 |" % (v["spanperf_Bps"] / 1e3, v["perf_Bps"] / 1e3,
                                                                v["bytes_ratio"]),
                  "| stolen per sample | %.2f us | %.2f us | | |" % (v["stolen_us_per_sample"]["spanperf-dwarf"],
                                                              v["stolen_us_per_sample"]["perf-dwarf"]),
                  "", "spanperf bytes per sample: %.0f; samples lost: %s." % (v["spanperf_bytes_per_sample"],
                                                                          v["spanperf_lost"]), "",
                  "Report (`report -g` against `perf report --stdio`) on the no-frame-pointer workload's file:", "",
                  "| file | samples unwound | complete | spanperf | perf report | ratio | target | unwind per stack | "
                  "spanperf RSS | perf RSS |", "|---|---|---|---|---|---|---|---|---|---|"]
        for name, row in v["report"].items():
            lines.append("| %s (%.1f MB) | %d | %d | %.2f s | %.2f s | %.2f | <= 0.5 | %.1f us | %.1f MiB | %.1f MiB |" % (
                name, row["file_mb"], row["stacks"], row["complete"], row["spanperf_s"], row["perf_s"], row["ratio"],
                row["us_per_stack"], row["spanperf_rss_kib"] / 1024, row["perf_rss_kib"] / 1024))
        lines.append("")
    if "rss" in res:
        v = res["rss"]
        lines += ["## Recorder peak RSS with 1,000 live threads (`-a -g -F 999`, 5 s)", "",
                  "| spanperf | perf record | ratio |", "|---|---|---|",
                  "| %.1f MiB | %.1f MiB | %.2f |" % (v["spanperf_kib"] / 1024, v["perf_kib"] / 1024, v["ratio"]), ""]
    if "otel" in res:
        v = res["otel"]
        ns, add = v["ns_per_sample"], v["added_ns"]
        lines += ["## OpenTelemetry thread context (`record --otel`, OTEP 4947)", "",
                  "The sampling program's cost per sample (bpf_stats, `-a -F %s`, no call chains), one "
                  "workload process per CPU: without --otel; with --otel on processes that export "
                  "otel_thread_ctx_v1 but have no context set; with a context set (the workload's record, with two "
                  "attributes, lives on the thread's stack: another page than its TLS)." % v["hz"], "",
                  "| without --otel | --otel, no context | --otel, context | added, no context | added, context | target |",
                  "|---|---|---|---|---|---|",
                  "| %.0f ns | %.0f ns | %.0f ns | %.0f ns | %.0f ns | <= 100 ns added |" % (
                      ns["off"], ns["no context"], ns["context"], add["no context"], add["context"]), ""]
        if "not publishing" in add:
            lines += ["A process that does not publish (a shell loop on each CPU) costs %.0f ns a sample without "
                      "--otel and %.0f ns with it: %.0f ns added (its threads keep the answer, so no lookup)." % (
                          ns["plain off"], ns["plain"], add["not publishing"]), ""]
        if "tls_read_ns" in v:
            fl = v["floor_ns"]
            lines += ["The floor under the same load (bench/floor): an empty program costs %.0f ns a sample, "
                      "and %.0f ns when it reads one word of the interrupted thread's TLS, so one user-memory "
                      "read costs %.0f ns here. No context takes one such read (the TLS pointer), a context two "
                      "(and the record's header): %.1f and %.1f reads' worth." % (
                          fl["empty"], fl["tls read"], v["tls_read_ns"], add["no context"] / v["tls_read_ns"],
                          add["context"] / v["tls_read_ns"]), ""]
        lines += [
"Context-change records with each CPU's thread switching span 10,000 times a second "
                  "(a record per sample that sees a new span, so at most the sampling rate):", "",
                  "| -F | records/s | records per sample of the load | recorder CPU (s, of 5 s) |", "|---|---|---|---|"]
        for hz, row in v["switches"].items():
            lines.append("| %s | %.0f | %.3f | %.2f |" % (hz, row["records_per_s"], row.get("per_sample", float("nan")),
                                                       row["recorder_cpu_s"]))
        a = v["annotate_1m"]
        lines += ["", "`annotate` of 1,000,000 OTLP JSON spans (%.0f MB, the Collector file exporter's form) on one "
                  "thread of a recording: %.2f s, peak RSS %.0f MiB." % (a["file_mb"], a["seconds"],
                                                                        a["max_rss_kib"] / 1024), ""]
    return "\n".join(lines)


def update_readme(md):
    """The README's benchmark section is the latest results, between its markers."""
    path = os.path.join(ROOT, "README.md")
    text = open(path).read()
    start, end = "<!-- bench:start -->", "<!-- bench:end -->"
    if start not in text or end not in text:
        return
    body = md.split("\n", 1)[1].replace("](slowdown.svg)", "](bench/results/slowdown.svg)")
    body = body.replace("\n## ", "\n### ")
    text = text[:text.index(start) + len(start)] + "\n" + body.strip() + "\n" + text[text.index(end):]
    open(path, "w").write(text)


SECTIONS = {"inkernel": bench_inkernel, "recorder": bench_recorder,
            "rss": bench_rss, "stat": bench_stat, "spans": bench_spans, "report": bench_report,
            "stolen": bench_stolen, "parts": bench_parts, "forks": bench_forks, "dwarf": bench_dwarf,
            "offcpu": bench_offcpu, "otel": bench_otel}


BPF_STATS_SECTIONS = ("inkernel", "stat", "offcpu", "otel")


def preconditions():
    if os.geteuid() != 0:
        sys.exit("bench: needs root (BPF, system-wide perf events, bpf_stats)")
    for tool in ("perf", "bpftrace", "bpftool"):
        if not shutil.which(tool):
            sys.exit("bench: %s is missing; run tools/deps.sh bench" % tool)
    for f in (SPANPERF, WORKLOAD, FLOOR):
        if not os.access(f, os.X_OK):
            sys.exit("bench: %s is not built; run make bench" % f)


def render():
    """--render: the markdown, the chart and the README from latest.json, measuring nothing."""
    res = json.load(open(os.path.join(RESULTS, "latest.json")))
    # JSON keys are strings; the rates are numbers.
    if "inkernel" in res:
        res["inkernel"] = {int(k): v for k, v in res["inkernel"].items()}
    for sec in ("stolen",):
        if sec in res:
            res[sec]["rates"] = {int(k): v for k, v in res[sec]["rates"].items()}
    chart(res, os.path.join(RESULTS, "slowdown.svg"))
    md = markdown(res)
    open(os.path.join(RESULTS, "latest.md"), "w").write(md)
    update_readme(md)
    print(md)


def main(argv):
    global ROUNDS
    if "--render" in argv:
        return render()
    # SIGTERM must still restore the sysctls in the finally below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("bench: terminated"))
    args = argv[1:]
    if "--rounds" in args:
        i = args.index("--rounds")
        ROUNDS = int(args[i + 1])
        del args[i:i + 2]
    unknown = [a for a in args if a not in SECTIONS]
    if unknown:
        sys.exit("bench: unknown section %s (known: %s)" % (unknown, " ".join(SECTIONS)))
    preconditions()
    os.makedirs(RESULTS, exist_ok=True)
    saved = {k: sysctl(k) for k in ("kernel.bpf_stats_enabled", "kernel.perf_event_max_sample_rate",
                                    "kernel.perf_cpu_time_max_percent")}
    res = {"machine": machine(), "rounds": ROUNDS}
    path = os.path.join(RESULTS, "latest.json")
    if args and os.path.exists(path):
        # A partial run updates its sections and keeps the others.
        old = json.load(open(path))
        old.pop("pinned", None)
        if "inkernel" in old:
            old["inkernel"] = {int(k): v for k, v in old["inkernel"].items()}
        for sec in ("stolen",):
            if sec in old:
                old[sec]["rates"] = {int(k): v for k, v in old[sec]["rates"].items()}
        # The header's date is the whole run's: a partial run keeps it and dates its own sections.
        now = res["machine"]["date"]
        res = dict(old, rounds=ROUNDS)
        res["partial"] = dict(old.get("partial", {}), **{a: now for a in args})
    try:
        # The kernel lowers the rate limit after slow interrupts; with max_percent 0 it
        # does not, for any tool.  The rate must be written first: the kernel refuses
        # writes to it while max_percent is 0.
        sysctl("kernel.perf_event_max_sample_rate", 100000)
        sysctl("kernel.perf_cpu_time_max_percent", 0)
        for name in (args or SECTIONS):
            log("== %s" % name)
            # bpf_stats costs every BPF program two clock reads per run, which
            # perf record does not pay: on only where its figures are read.
            sysctl("kernel.bpf_stats_enabled", 1 if name in BPF_STATS_SECTIONS else 0)
            SECTIONS[name](res)
            json.dump(res, open(path, "w"), indent=1)
    finally:
        kill_children()
        for k in ("kernel.perf_cpu_time_max_percent", "kernel.perf_event_max_sample_rate",
                  "kernel.bpf_stats_enabled"):
            sysctl(k, saved[k])
        shutil.rmtree(TMP, ignore_errors=True)
    chart(res, os.path.join(RESULTS, "slowdown.svg"))
    md = markdown(res)
    open(os.path.join(RESULTS, "latest.md"), "w").write(md)
    update_readme(md)
    print(md)


if __name__ == "__main__":
    main(sys.argv)
