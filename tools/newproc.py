#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""How soon a process started during a recording gets whole chains.

    python3 tools/newproc.py [-n RUNS] [--ms MS] [-F HZ] [--keep DIR] [-- RECORD-ARGS...]

Starts workload_dwarf (built without frame pointers) RUNS times, one after
the other, each for MS ms of its own CPU work, under a symlink named
np-dwarf so that its comm is this tool's alone, while spanperf record -a
--call-graph ehframe runs.  Then, with perf script on the same file, it
puts each np-dwarf sample in a bucket by the process's age (its sample
time less its exec's COMM record's) and prints, per bucket, the samples and
the share whose outermost frame is a thread's root (realhost.py's rule).
"""
import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import realhost  # noqa: E402

BUCKETS_MS = (5, 10, 20, 40, 80, 160, 1e9)


def samples(path):
    """(age in ms, complete) of every np-dwarf sample, by its pid's exec."""
    out = subprocess.run(["perf", "script", "--show-task-events", "--no-inline", "-F", "comm,pid,tid,time,ip,sym",
                          "-i", path], capture_output=True, text=True, errors="replace").stdout
    execs, got = {}, []
    for block in out.split("\n\n"):
        lines = [l for l in block.split("\n") if l.strip()]
        if not lines:
            continue
        head = lines[0]
        if "PERF_RECORD_COMM exec: np-dwarf:" in head or "PERF_RECORD_COMM: np-dwarf:" in head:
            # "np-dwarf  1234/1234  15.123456: PERF_RECORD_COMM exec: np-dwarf:1234/1234"
            parts = head.split()
            pid = int(parts[1].split("/")[0])
            t = float(parts[2].rstrip(":"))
            execs.setdefault(pid, t)
            # A side-band line may be followed by others in the same block.
            lines = lines[1:]
            if not lines:
                continue
        if not head.split() or head.split()[0] != "np-dwarf" or "PERF_RECORD" in head:
            continue
        parts = head.split()
        pid = int(parts[1].split("/")[0])
        t = float(parts[2].rstrip(":"))
        st = tuple(realhost.perf_frame(l) for l in lines[1:])
        if pid in execs:
            got.append(((t - execs[pid]) * 1000, realhost.complete(st)))
    return got


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=40, help="processes to start (default 40)")
    ap.add_argument("--ms", type=float, default=100, help="CPU ms of each (default 100)")
    ap.add_argument("-F", type=int, default=999)
    ap.add_argument("--keep", help="keep the recording in this folder")
    ap.add_argument("extra", nargs="*", help="more spanperf record options")
    a = ap.parse_args(argv[1:])
    d = a.keep or tempfile.mkdtemp(prefix="newproc-")
    os.makedirs(d, exist_ok=True)
    exe = realhost.link(d, "np-dwarf", os.path.join(realhost.ROOT, "build", "tests", "workload_dwarf"))
    path = os.path.join(d, "newproc.data")
    rec = subprocess.Popen([realhost.spanperf_bin(), "record", "-a", "--call-graph", "ehframe", "-F", str(a.F),
                            "-o", path] + a.extra, stderr=subprocess.PIPE, text=True, errors="replace")
    try:
        time.sleep(3)  # past the tables of what runs already
        for _ in range(a.n):
            subprocess.run([exe, str(a.ms)], stdout=subprocess.DEVNULL, check=True)
    finally:
        rec.send_signal(2)
        err = rec.communicate()[1]
    if rec.returncode:
        print(err[-2000:], file=sys.stderr)
        return 1
    got = samples(path)
    by = collections.OrderedDict((b, [0, 0]) for b in BUCKETS_MS)
    for age, ok in got:
        for b in BUCKETS_MS:
            if age < b:
                by[b][0] += 1
                by[b][1] += ok
                break
    print("%-14s %8s %9s" % ("age (ms)", "samples", "complete"))
    lo = 0
    for b, (n, ok) in by.items():
        print("%-14s %8d %9s" % ("%g-%s" % (lo, "" if b >= 1e9 else "%g" % b), n, realhost.pct(ok / n if n else None)))
        lo = b
    n, ok = len(got), sum(o for _, o in got)
    print("%-14s %8d %9s" % ("all", n, realhost.pct(ok / n if n else None)))
    if not a.keep:
        shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
