#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Complete chains of short-lived processes: a build's (issue 40's "gcc compiling 60 small files").

    python3 tools/shortlived.py [-n FILES] [-l LINKS] [-F HZ] [-j JOBS] [--keep DIR] [--json] [--perf]
                                [-- RECORD-ARGS...]

Writes FILES small C files (60 by default) and a Makefile that compiles each
with gcc -O2 and links them, then links LINKS small programs more (one file
each: collect2 and ld live a few ms a link, so one link is too few samples
to judge them by); while spanperf record -a -g (ehframe) -v
records the whole host, runs make -j JOBS on them.  Only make's own tree is
counted: the processes the file's FORK records descend from make's pid
(perf script --show-task-events), so other people's compilers on a shared
host are not.  For each comm among them (gcc, cc1, as, collect2, ld) it
prints the samples and the share whose user chain is complete by
realhost.py's judgement (the outermost frame a thread's root; samples taken
while the kernel execs or tears down the process left out), as spanperf
report --folded reads them; then, for the cut ones, their outermost frames
(where the chains ended), and the recorder's own count of why chains ended
(record -v).  --perf records with perf record -g instead, read by perf
script, for the peer's shares on the same build.
"""
import argparse
import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import realhost  # noqa: E402

COMMS = ("make", "gcc", "cc1", "as", "collect2", "ld")


def write_tree(d, files, links=0):
    """FILES C files of a dozen small functions each (about 40 ms of cc1 -O2 each here) and the
    Makefile that builds them into one program, and LINKS programs of main.c and one file each,
    linked after the compiles (a link phase of its own: gcc, collect2 and ld only)."""
    objs = []
    for i in range(files):
        with open(os.path.join(d, "f%03d.c" % i), "w") as f:
            f.write("#include <string.h>\n")
            for j in range(12):
                f.write("static int g%d(const int *a, int n) { int s = 0; for (int k = 0; k < n; k++) "
                        "{ s += a[k] * %d; if (s > %d) s ^= k; } return s; }\n" % (j, j + 3, 1000 * j))
            f.write("int f%03d(const int *a, int n) { return %s; }\n"
                    % (i, " + ".join("g%d(a, n)" % j for j in range(12))))
        objs.append("f%03d.o" % i)
    with open(os.path.join(d, "main.c"), "w") as f:
        f.write("int main(void) { return 0; }\n")
    progs = ["l%03d" % i for i in range(links)]
    with open(os.path.join(d, "Makefile"), "w") as f:
        f.write("all: prog\nprog: main.o %s\n\tgcc -o $@ $^\n%%.o: %%.c\n\tgcc -O2 -c $< -o $@\n"
                "clean:\n\trm -f *.o prog l[0-9]*\n" % " ".join(objs))
        f.write("links: %s\n" % " ".join(progs))
        for i, p in enumerate(progs):
            f.write("%s: main.o %s\n\tgcc -o $@ $^\n" % (p, objs[i % len(objs)] if objs else ""))


def task_events(path):
    """(kind, pid, ppid) of the file's FORK and EXIT records, from perf script."""
    p = subprocess.run(["perf", "script", "--show-task-events", "-F", "comm,pid,tid", "-i", path],
                       capture_output=True, text=True, errors="replace")
    if p.returncode:
        raise realhost.PerfFailed("perf script -i %s exited %d: %s" % (path, p.returncode, p.stderr[-500:]))
    ev = []
    for m in re.finditer(r"PERF_RECORD_(FORK|EXIT)\((-?\d+):(-?\d+)\):\((-?\d+):-?\d+\)", p.stdout):
        if m.group(1) == "FORK" or m.group(2) == m.group(3):
            ev.append((m.group(1), int(m.group(2)), int(m.group(4))))
    return ev


def tree_of(events, root):
    """root and every process the FORK records descend from it (in the file's order), a parent
    counted only until its EXIT: on a busy host a pid comes round again within the recording."""
    tree, live = {root}, {root}
    for kind, pid, ppid in events:
        if kind == "FORK" and ppid in live:
            tree.add(pid)
            live.add(pid)
        elif kind == "EXIT":
            live.discard(pid)
    return tree


def chains(path, pids):
    """comm -> Counter of frame tuples (leaf first) of pids' samples, from spanperf report --folded."""
    return realhost.spanperf_stacks(path, pids)


def perf_chains(path, pids):
    """The same from perf script: comm -> Counter of frame tuples (leaf first) of pids' samples."""
    p = subprocess.run(["perf", "script", "--no-inline", "-F", "comm,pid,event,ip,sym", "-i", path],
                       capture_output=True, text=True, errors="replace")
    if p.returncode:
        raise realhost.PerfFailed("perf script -i %s exited %d: %s" % (path, p.returncode, p.stderr[-500:]))
    stacks = collections.defaultdict(collections.Counter)
    head, frames = None, []
    for line in p.stdout.split("\n") + [""]:
        if line.startswith("\t"):
            frames.append(realhost.perf_frame(line))
            continue
        if head and head[1] in pids:
            stacks[head[0]][tuple(frames)] += 1
        # "comm pid event: ...": the comm may hold spaces, the pid is the word before the event.
        m = re.match(r"(.*\S)\s+(\d+)\s+(\S+:)", line)
        head = (m.group(1).strip(), int(m.group(2))) if m and m.group(3) not in realhost.NOT_SAMPLES else None
        frames = []
    return stacks


def unwind_stats(err):
    """record -v's count of why chains ended: label -> count."""
    got = collections.OrderedDict()
    on = False
    for line in err.splitlines():
        if line.startswith("ehframe tables:"):
            on = True
            continue
        if on and line.startswith("python:"):
            break
        m = re.match(r"\s+(.*\S)\s+(\d+)$", line)
        if on and m:
            got[m.group(1)] = int(m.group(2))
    return got


def measure(path, root, tool="spanperf"):
    """comm -> {samples, complete, cut: Counter of outermost frames of the cut chains}."""
    pids = tree_of(task_events(path), root)
    stacks = chains(path, pids) if tool == "spanperf" else perf_chains(path, pids)
    rows = collections.OrderedDict()
    # A pid of the tree that exited may be another's later: only the build's own programs count.
    for comm in [c for c in COMMS if c in stacks]:
        c = stacks[comm]
        cut = collections.Counter()
        for st, n in c.items():
            if not realhost.complete(st) and not realhost.chainless(st):
                # The last user frame is where the walk stopped; a chain of kernel frames only has none.
                user = [f for f in st if not f.endswith("_[k]")]
                cut[realhost.frame_name(user[-1]) if user else "(no user frames)"] += n
        rows[comm] = {"samples": sum(c.values()), "complete": realhost.share(c, realhost.complete),
                      "cut": cut}
    return rows


def run(files=60, hz=4999, jobs=2, keep=None, extra=(), tool="spanperf", spawn=subprocess.Popen, links=0):
    """Records make -j JOBS building FILES files and LINKS programs more with spanperf record -g (or
    perf record -g: tool "perf"); returns (rows, the recorder's stderr).  spawn starts the recorder and make (make
    bench's, which kills them if the run is interrupted)."""
    d = keep or tempfile.mkdtemp(prefix="shortlived-")
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, "src")
    os.makedirs(src, exist_ok=True)
    write_tree(src, files, links)
    path = os.path.join(d, "shortlived.data")
    if tool == "spanperf":
        cmd = [realhost.spanperf_bin(), "record", "-a", "-g", "-v", "-F", str(hz), "-o", path] + list(extra)
    else:
        # --no-bpf-event: perf 6.1's script stops at KSYMBOL records of others' BPF programs (realhost.py).
        cmd = ["perf", "record", "-a", "-g", "--no-bpf-event", "-F", str(hz), "-o", path] + list(extra)
    rec = spawn(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, errors="replace")
    try:
        # The whole host's tables are built before the events are on: past them, as a build that starts
        # later meets them.  A slow start only means fewer samples, never a wrong share.
        time.sleep(3)
        mk = spawn(["make", "-s", "-j", str(jobs), "-C", src, "all"] + (["links"] if links else []),
                   stdout=subprocess.DEVNULL)
        mk.wait()
        time.sleep(0.3)
    finally:
        rec.send_signal(2)
        err = rec.communicate()[1]
    try:
        # perf record ends by raising the SIGINT it caught again: its status says so.
        if rec.returncode not in (0, -signal.SIGINT if tool == "perf" else 0) or mk.returncode:
            raise RuntimeError("record exit %s, make exit %s: %s" % (rec.returncode, mk.returncode, err[-1500:]))
        return measure(path, mk.pid, tool), err
    finally:
        if not keep:
            shutil.rmtree(d, ignore_errors=True)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=60, help="C files to compile (default 60)")
    ap.add_argument("-l", "--links", type=int, default=0, help="small programs to link more (default 0)")
    ap.add_argument("-F", type=int, default=4999, help="sampling rate (default 4999)")
    ap.add_argument("-j", type=int, default=2, help="make's jobs (default 2)")
    ap.add_argument("--keep", help="keep the sources and the recording in this folder")
    ap.add_argument("--json", action="store_true", help="one JSON object per comm")
    ap.add_argument("--perf", action="store_true", help="record with perf record -g instead (frame pointers)")
    ap.add_argument("extra", nargs="*", help="more spanperf record options")
    a = ap.parse_args(argv[1:])
    rows, err = run(a.n, a.F, a.j, a.keep, a.extra, "perf" if a.perf else "spanperf", links=a.links)
    if a.json:
        for comm, r in rows.items():
            print(json.dumps({"comm": comm, "samples": r["samples"], "complete": r["complete"],
                              "cut": dict(r["cut"].most_common(10))}))
        return 0
    print("%-10s %8s %9s  %s" % ("comm", "samples", "complete", "cut chains' outermost frames"))
    for comm, r in rows.items():
        print("%-10s %8d %9s  %s" % (comm, r["samples"], realhost.pct(r["complete"]),
                                     ", ".join("%s %d" % kv for kv in r["cut"].most_common(6))))
    for line in err.splitlines():
        if line.startswith("ehframe tables:") or line.startswith("  table cache:"):
            print(line.strip())
    print("record -v: why chains ended")
    for k, v in unwind_stats(err).items():
        print("  %-58s %d" % (k, v))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
