# SPDX-License-Identifier: GPL-2.0
"""What every bench section shares: the paths, the children, the profilers, the measures.

A section imports what it needs from here and nothing from another section, so
that each one reads alone and a new one is a file of its own.
"""
import atexit
import datetime
import json
import os
import platform
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
GEN_SPANS = os.path.join(ROOT, "build", "bench", "gen_spans")
RESULTS = os.path.join(HERE, "results")
CPUS = os.cpu_count()
DEVNULL = subprocess.DEVNULL

# Gone at exit, whichever way the run ends (sys.exit included, which SIGTERM becomes).
TMP = tempfile.mkdtemp(prefix="spanperf-bench-")
atexit.register(shutil.rmtree, TMP, ignore_errors=True)

_rounds = 5


def rounds():
    """Rounds per figure (--rounds): read at measuring time, after bench.py has set it."""
    return _rounds


def set_rounds(n):
    global _rounds
    _rounds = n


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


def kill(*procs):
    """Ends loads the section started, and reaps them."""
    for p in procs:
        p.kill()
        p.wait()


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


# ---------------------------------------------------------------- profilers

def bpftrace_script(hz):
    return "profile:hz:%d { @[kstack, ustack, tid] = count(); }" % hz


def offcpu_bt(key=("args->next_pid",), before=""):
    """bcc offcputime's design in bpftrace, record --off-cpu's peer in the offcpu, stackcost and
    wakers sections: on every switch, the sleeping thread's start and both stacks keyed by thread;
    at its switch-in, the time summed per stacks and the rest of key (bpftrace expressions of
    the thread switching in). before: probes ahead of the switch's, that key may read."""
    return before + """tracepoint:sched:sched_switch
{
	if (args->prev_state == 1 || args->prev_state == 2) {
		@start[args->prev_pid] = nsecs;
		@ks[args->prev_pid] = kstack;
		@us[args->prev_pid] = ustack;
	}
	$s = @start[args->next_pid];
	if ($s) {
		@off[@ks[args->next_pid], @us[args->next_pid], %s] = sum(nsecs - $s);
		delete(@start[args->next_pid]);
	}
}
""" % ", ".join(key)


OFFCPU_BT = offcpu_bt()


def start_profiler(tool, hz, out):
    """Starts a profiler in the background; it runs until stop_profiler."""
    if tool == "none":
        return None
    if tool == "floor":
        cmd = [FLOOR, "-F", str(hz), "-d", "3600"]
    elif tool == "spanperf":
        # Frame pointers, as perf's -g: spanperf's own -g is ehframe (the ehframe and wholepath sections).
        cmd = [SPANPERF, "record", "-q", "-a", "--call-graph", "fp", "-F", str(hz), "-o", out]
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
    # --call-graph ehframe: user chains unwound in BPF from the unwind tables (the ehframe section).
    elif tool == "spanperf-ehframe":
        cmd = [SPANPERF, "record", "-q", "-a", "--call-graph", "ehframe", "-F", str(hz), "-o", out]
    elif tool == "bpftrace-nostack":
        cmd = ["bpftrace", "-e", "profile:hz:%d { @[tid] = count(); }" % hz]
    else:
        raise ValueError(tool)
    return start_background(tool, cmd)


def start_background(tool, cmd):
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
    # bpftrace needs about a second to compile and attach, ehframe as long to build the
    # host's unwind tables; the others less.
    time.sleep(seconds if seconds is not None else
               (2.0 if tool.startswith("bpftrace") else 3.0 if tool.endswith("ehframe") else 1.0))


def record_cmd(tool, opts, secs, out):
    """A whole-host recording of secs seconds by spanperf (-d) or perf record (a sleep child)."""
    if tool == "spanperf":
        # perf's -g is frame pointers; spanperf's is ehframe, which the ehframe and wholepath sections weigh.
        opts = [o for x in opts for o in (["--call-graph", "fp"] if x == "-g" else [x])]
        return [SPANPERF, "record", "-q", "-a"] + opts + ["-d", str(secs), "-o", out]
    return ["perf", "record", "-q", "-a"] + opts + ["-o", out, "--", "sleep", str(secs)]


# ---------------------------------------------------------------- measures

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


def prog_costs(names, secs):
    """(ns per run, runs per second) of the newest programs of these names over the same next
    secs seconds, from bpf_stats; None for one that did not run."""
    a = [prog_stats(n) for n in names]
    time.sleep(secs)
    b = [prog_stats(n) for n in names]
    return [((y[0] - x[0]) / (y[1] - x[1]), (y[1] - x[1]) / secs) if x and y and y[1] > x[1] else None
            for x, y in zip(a, b)]


def prog_cost(name, secs):
    """prog_costs of one program."""
    return prog_costs([name], secs)[0]


def busy_load(seconds):
    """A CPU-bound load on every CPU for the duration."""
    ms = ",".join([str(int(seconds * 1000))] * CPUS)
    return spawn([WORKLOAD, "spin", ms], stdout=DEVNULL)


def run_to_end(cmd):
    """Runs cmd with its output discarded; (wall seconds, rusage, wait status)."""
    t0 = time.time()
    p = spawn(cmd, stdout=DEVNULL, stderr=DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    return time.time() - t0, ru, status


def timed(cmd):
    """(wall seconds, peak RSS KiB, wait status) of cmd."""
    sec, ru, status = run_to_end(cmd)
    return sec, ru.ru_maxrss, status


def under_busy_load(cmd, secs):
    """The rusage of cmd run to its end under busy_load, which starts half a second before
    it and lasts secs + 3 s."""
    load = busy_load(secs + 3)
    time.sleep(0.5)
    ru = run_to_end(cmd)[1]
    kill(load)
    return ru


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


def race(name, mine, theirs):
    """The fastest of the rounds' alternating runs of two report commands, and their peak RSS."""
    t = {"spanperf": [], "perf": []}
    m = {"spanperf": 0, "perf": 0}
    for r in range(rounds()):
        for tool, cmd in (("spanperf", mine), ("perf", theirs)):
            sec, rss, _ = timed(cmd)
            t[tool].append(sec)
            m[tool] = max(m[tool], rss)
        log("report %s round %d: spanperf %.2f s, perf %.2f s" % (name, r, t["spanperf"][-1], t["perf"][-1]))
    return {"spanperf_s": min(t["spanperf"]), "perf_s": min(t["perf"]), "ratio": min(t["spanperf"]) / min(t["perf"]),
            "spanperf_rss_kib": m["spanperf"], "perf_rss_kib": m["perf"]}


def annotate_inputs(data, truth, otlp, n):
    """What annotate's scale figure reads: a recording (data) of the workload's calls (their
    times in truth) and n OTLP spans (otlp) over the thread that made them."""
    subprocess.run([SPANPERF, "record", "-q", "-F", "999", "-o", data, "--", WORKLOAD, "calls", "400", "5", truth],
                   check=True, stdout=DEVNULL, stderr=DEVNULL)
    calls = [json.loads(l) for l in open(truth)]
    off = time.clock_gettime_ns(time.CLOCK_REALTIME) - time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    gen_otlp(otlp, n, calls[0]["tid"], calls[0]["pid"], calls[0]["start_ns"] + off, calls[-1]["end_ns"] + off)


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
