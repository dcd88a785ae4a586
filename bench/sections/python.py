# SPDX-License-Identifier: GPL-2.0
"""Python frames by name (issue 34): what a user chain costs in the sampling program for a Python
sample of 20 Python frames, beside a native ehframe sample of as many frames and the same Python
load with the walk off (SPANPERF_NO_PYTHON); the walk's reads of user memory; bytes per sample and
the recorder's CPU with Python processes and with native ones.  Each figure is of the load's own
samples (-p): on a shared host, other processes' samples are dropped before any walk."""
import glob
import os
import re
import subprocess

from harness import CPUS, DEVNULL, HERE, ROOT, SPANPERF, TMP, kill, log, median, rounds, spawn

BUSY = os.path.join(HERE, "pybusy.py")
UNITWORK = os.path.join(ROOT, "build", "bench", "unitwork_nofp")
DEPTH = 20  # native frames of unitwork's spinning chain, as pybusy.py has Python frames


def pythons():
    """One of each frame layout: 3.8-3.10 (frame objects), 3.11 (is_entry), 3.12+ (shims)."""
    out = []
    for minor in (9, 11, 13):
        found = sorted(glob.glob("/root/.pyenv/versions/3.%d.*/bin/python3.%d" % (minor, minor)))
        if found:
            out.append(("3.%d" % minor, found[0]))
    if os.path.exists("/usr/bin/python3.11") and not any(v == "3.11" for v, _ in out):
        out.append(("3.11", "/usr/bin/python3.11"))
    return out


def load(py, secs):
    """The load on every CPU: pybusy.py's 20 Python frames, or unitwork DEPTH frames deep."""
    if py:
        return [spawn([py, BUSY, str(secs)], stdout=DEVNULL) for _ in range(CPUS)]
    return [spawn([UNITWORK, str(CPUS), str(secs), "200000", str(DEPTH)], stdout=DEVNULL)]


def record(procs, secs, env=None):
    """record -v -g of the load's processes alone: (stderr, file size, recorder CPU seconds a second)."""
    path = os.path.join(TMP, "py.data")
    cmd = [SPANPERF, "record", "-v", "-g", "-F", "999", "-p", ",".join(str(p.pid) for p in procs), "-d", str(secs),
           "-o", path]
    err = os.path.join(TMP, "py.err")
    with open(err, "w") as f:
        p = spawn(cmd, stdout=DEVNULL, stderr=f, env=env)
        _, _, ru = os.wait4(p.pid, 0)
    return open(err).read(), os.path.getsize(path) if os.path.exists(path) else 0, (ru.ru_utime + ru.ru_stime) / secs


def figures(err, size):
    f = {}
    m = re.search(r"user chains took (\d+) ns each in BPF, ([\d.]+) frames each", err)
    if m:
        f["chain_ns"], f["frames"] = int(m.group(1)), float(m.group(2))
    m = re.search(r"Python frames took (\d+) ns a chain in BPF, ([\d.]+) reads, ([\d.]+) frames", err)
    if m:
        f["py_ns"], f["reads"], f["py_frames"] = int(m.group(1)), float(m.group(2)), float(m.group(3))
    c = re.search(r"^  Python: complete \(every frame placed at its eval loop\) +(\d+)$", err, re.M)
    t = re.search(r"^  Python: user chains of threads running Python +(\d+)$", err, re.M)
    if c and t and int(t.group(1)):
        f["complete"] = int(c.group(1)) / int(t.group(1))
    n = re.search(r"spanperf record: (\d+) samples", err)
    if n and int(n.group(1)):
        f["bytes"] = size / int(n.group(1))
    return f


def run(res, secs=4):
    out = {"cases": {}}
    versions = pythons()
    if not versions:
        log("python: no CPython 3.9, 3.11 or 3.13 here: section skipped")
        return
    cases = [("native, %d frames deep" % DEPTH, None, None)] + [("Python %s" % v, py, None) for v, py in versions] + \
            [("Python %s, walk off" % versions[-1][0], versions[-1][1], dict(os.environ, SPANPERF_NO_PYTHON="1"))]
    for label, py, env in cases:
        runs = []
        for r in range(rounds()):
            procs = load(py, secs + 8)
            try:
                err, size, cpu = record(procs, secs, env)
            finally:
                kill(*procs)
            f = figures(err, size)
            f["cpu"] = cpu
            runs.append(f)
            log("python %s round %d: %s" % (label, r, f))
        out["cases"][label] = {k: median([f[k] for f in runs if k in f]) for k in
                               ("chain_ns", "frames", "py_ns", "reads", "py_frames", "complete", "bytes", "cpu")
                               if any(k in f for f in runs)}
    res["python"] = out


def markdown(res):
    v = res["python"]["cases"]
    lines = ["## Python frames by name (-g: CPython 3.8-3.13 walked in BPF)", "",
             "A user chain in the sampling program (record -v's own clock, the load's samples alone, 999 Hz, the "
             "load on every CPU: pybusy.py's 20 Python frames, or bench/unitwork %d frames deep), the walk's reads "
             "of user memory, bytes per sample and the recorder's CPU (seconds a second); medians of rounds:" % DEPTH,
             "", "| load | user chain in BPF | of it Python frames | user reads | frames (Python) | chains complete "
             "| bytes a sample | recorder CPU |", "|---|---|---|---|---|---|---|---|"]

    def fmt(x, f="%.0f"):
        return f % x if x is not None else "-"
    for label, c in v.items():
        lines.append("| %s | %s ns | %s | %s | %s (%s) | %s | %s | %.3f |" % (
            label, fmt(c.get("chain_ns")), fmt(c.get("py_ns"), "%.0f ns"), fmt(c.get("reads"), "%.1f"),
            fmt(c.get("frames"), "%.1f"), fmt(c.get("py_frames"), "%.1f"),
            fmt(100 * c["complete"], "%.1f%%") if c.get("complete") is not None else "-", fmt(c.get("bytes")),
            c.get("cpu", 0)))
    lines += ["", "\"walk off\": the same Python load with SPANPERF_NO_PYTHON=1 (the eval loop's frames stay native, "
              "no Python process is followed): what naming Python frames adds, in BPF and in the recorder.", ""]
    return lines
