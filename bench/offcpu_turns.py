#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The off-CPU program's ns per context switch for two or more spanperf builds, by turns in one
run (issue 40): each round runs every build in turn under stackcost's off-CPU load (`workload
sleeps 400000 20`, `record -v -a -g -F 1 --off-cpu`), bpf_stats of offcpu_btf over 5 s, with
record -v's count of kernel chains reused and taken by the kernel.  Build the other tree first
(e.g. `git archive main | tar -x -C DIR && make -C DIR spanperf`).

    python3 bench/offcpu_turns.py ROUNDS NAME=SPANPERF NAME=SPANPERF...

Never a timed test: the figures go in a report, medians of the rounds, with the host's load."""
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "sections"))
from stackcost import own_cost  # noqa: E402

WORKLOAD = os.path.join(os.path.dirname(HERE), "build", "tests", "workload")


def one(binary, data):
    """(ns per switch, switches a second, kernel chains reused, taken by the kernel) of one run."""
    load = subprocess.Popen([WORKLOAD, "sleeps", "400000", "20"], stdout=subprocess.DEVNULL)
    p = subprocess.Popen([binary, "record", "-v", "-a", "-g", "-F", "1", "--off-cpu", "-o", data],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")
    try:
        time.sleep(3)
        c = own_cost(p.pid, "offcpu_btf", 5)
    finally:
        p.send_signal(2)
        err = p.communicate()[1]
        load.kill()
        load.wait()
    m = re.search(r"off-CPU kernel stacks: (\d+) reused as proven the same, (\d+) taken", err)
    return (c[0] if c else None, c[1] if c else None) + ((int(m[1]), int(m[2])) if m else (None, None))


def main():
    if len(sys.argv) < 3 or not sys.argv[1].isdigit():
        sys.exit(__doc__)
    builds = dict(a.split("=", 1) for a in sys.argv[2:])
    ns = {k: [] for k in builds}
    data = "/tmp/offcpu_turns-%d.data" % os.getpid()
    for r in range(int(sys.argv[1])):
        for name, binary in builds.items():
            cost, rate, hits, taken = one(binary, data)
            if cost:
                ns[name].append(cost)
            print("round %d %s: %s ns/switch, %s switches/s, kernel chains %s reused, %s taken; load %s" % (
                r, name, cost and round(cost), rate and round(rate), hits, taken,
                open("/proc/loadavg").read().split()[0]), flush=True)
    if os.path.exists(data):
        os.unlink(data)
    for name in builds:
        if ns[name]:
            print("%s: median %.0f ns/switch of %s" % (name, statistics.median(ns[name]), [round(x) for x in ns[name]]))


if __name__ == "__main__":
    main()
