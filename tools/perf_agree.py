#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""How far spanperf report agrees with perf on one perf.data file.

    python3 tools/perf_agree.py FILE [SPANPERF] [COMM...]

Prints the samples whose dso is [unknown] in perf report and in spanperf
report (in all and per COMM), the (comm, dso, sym) rows whose counts differ,
and, per event, the leaf symbols perf script names with another count in
spanperf's folded stacks (a sample perf script shows no frame for counts as
[unknown]); off-CPU leaves are compared in ns, the period both tools sum.
Run it with the HOME the recording had: both tools read $HOME/.debug.
"""
import collections
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))
import harness  # noqa: E402


def perf_rows(path, keys):
    out = subprocess.run(["perf", "report", "--stdio", "--no-children", "-g", "none", "-n", "-t", "\t",
                          "--sort", keys, "-i", path], capture_output=True, text=True).stdout
    rows = collections.Counter()
    side = False
    for line in out.splitlines():
        # The spanperf-* events are records that name frames (one "sample" per code object), not
        # samples: perf report lists them as an event of their own, spanperf's table does not.
        m = re.match(r"# Samples: .* of event '([^']*)'", line)
        if m:
            side = m.group(1).startswith("spanperf-")
        parts = [p.strip() for p in line.split("\t")]
        if side or line.startswith("#") or len(parts) != 2 + len(keys.split(",")) or not parts[0].endswith("%"):
            continue
        rows[tuple(re.sub(r"^\[[.k]\] ", "", f) for f in parts[2:])] += int(parts[1])
    return rows


def spanperf_rows(sp, path, keys):
    out = subprocess.run([sp, "report", "-i", path, "--sort", keys, "--format", "json"],
                         capture_output=True, text=True, check=True).stdout
    rows = collections.Counter()
    for r in harness.json_lines(out):
        rows[tuple(str(r[k]) for k in keys.split(","))] += r["samples"]
    return rows


def cut_comms(rows):
    """rows keyed by comm cut as perf's --stdio column cuts it."""
    out = collections.Counter()
    for k, n in rows.items():
        out[(k[0][:8],) + k[1:]] += n
    return out


def main(argv):
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 1
    path = argv[1]
    if not os.path.isfile(path) or not os.access(path, os.R_OK):
        print("perf_agree: %s is not a readable perf.data file" % path, file=sys.stderr)
        return 1
    sp = argv[2] if len(argv) > 2 else os.path.join(harness.ROOT, "spanperf")
    comms = argv[3:] or ["dpkg-deb", "dpkg", "apt-get", "apt-cache"]
    theirs, mine = perf_rows(path, "comm,dso,sym"), spanperf_rows(sp, path, "comm,dso,sym")
    total = sum(theirs.values())
    unknown = lambda rows, c=None: sum(n for k, n in rows.items() if k[1] == "[unknown]" and c in (None, k[0]))
    print("samples: perf %d, spanperf %d" % (total, sum(mine.values())))
    print("[unknown] dso: perf %d, spanperf %d" % (unknown(theirs), unknown(mine)))
    for c in comms:
        print("  %-12s %6d samples; [unknown] dso: perf %d, spanperf %d" % (
            c, sum(n for k, n in theirs.items() if k[0] == c), unknown(theirs, c), unknown(mine, c)))
    diff = sorted(((k, theirs.get(k, 0), mine.get(k, 0)) for k in set(theirs) | set(mine)
                   if theirs.get(k, 0) != mine.get(k, 0)), key=lambda d: -max(d[1], d[2]))
    print("(comm, dso, sym) rows: %d in perf, %d differ, %d of them at 0.1%% or more" % (
        len(theirs), len(diff), sum(1 for d in diff if max(d[1], d[2]) * 1000 >= total)))
    # perf's --stdio cuts a comm to its column's width (8 here: pyenv-version-name is "pyenv-ve"),
    # so rows that differ only by that cut are counted apart.
    ct, cm = cut_comms(theirs), cut_comms(mine)
    print("  with comms cut to perf's 8 characters: %d differ" % sum(
        1 for k in set(ct) | set(cm) if ct.get(k, 0) != cm.get(k, 0)))
    for k, t, m in diff[:20]:
        print("    perf %6d  spanperf %6d  %s" % (t, m, k))
    # Leaves per event: perf script shows every event's samples, spanperf's --folded one event each,
    # in samples for on-CPU and in ns (the period) for off-CPU.
    script = collections.defaultdict(collections.Counter)
    head, leaf = None, None
    for line in harness.perf_clean(["script", "-F", "period,event,ip,sym"], path).splitlines() + [""]:
        if line.startswith("\t"):
            if leaf is None:
                f = line.split(None, 1)
                leaf = re.sub(r"\+0x[0-9a-f]+$", "", f[1].strip()) if len(f) > 1 else "[unknown]"
            continue
        if head:
            period, ev = head
            script[ev][leaf or "[unknown]"] += period if ev == "offcpu-time" else 1
        f = line.split()
        head, leaf = ((int(f[0]), f[1].rstrip(":")) if len(f) >= 2 else None), None
    for ev, kind in (("cpu-clock", "on-cpu"), ("cycles", "on-cpu"), ("offcpu-time", "off-cpu")):
        if ev not in script:
            continue
        folded = collections.Counter()
        for line in subprocess.run([sp, "report", "-i", path, "--folded", "--event", kind],
                                   capture_output=True, text=True, check=True).stdout.splitlines():
            stack, n = line.rsplit(" ", 1)
            folded[stack.split(";")[-1]] += int(n)
        named = [s for s in script[ev] if s != "[unknown]"]
        bad = [(s, script[ev][s], folded.get(s, 0)) for s in named if script[ev][s] != folded.get(s, 0)]
        print("%s: leaf symbols perf script names: %d; with another %s in spanperf's folded stacks: %d %s" % (
            ev, len(named), "ns total" if ev == "offcpu-time" else "count", len(bad), bad[:10]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
