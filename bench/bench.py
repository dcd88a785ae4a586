#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""make bench: spanperf's overhead and speed, side by side with perf and bpftrace.

Every comparison alternates the tools round by round under the same load and
reports medians and the median of per-round ratios, so that a noisy, shared
machine moves both sides of a ratio together.  Absolute figures print beside
the ratios with the machine's description.

    python3 bench/bench.py [SECTION...] [--rounds N]
    python3 bench/bench.py --render      # redraw from results/latest.json
    sections: inkernel recorder stat spans split sched report srcline offcpu wakers forks stolen parts dwarf
              ehframe ehtables python java wholepath stackcost shortlived rss otel page lib live top agent
              (default: all)

Writes bench/results/latest.md, latest.json and slowdown.svg, and the block
between the bench markers of docs/benchmarks.md.  A partial run keeps the other sections' figures.

The flow: bench.py (this file: arguments, sysctls, the run) -> sections/<name>.py
(one section: measures, then prints its part of the page) -> render.py (the page,
the chart, docs/benchmarks.md) with harness.py (children, profilers, bpf_stats, timing)
under all of them.

Adding a bench section: write bench/sections/<name>.py with
  run(res)         measure, and store plain JSON values in res["<name>"] (it may add
                   other keys too, as recorder adds "size"); rounds() rounds per figure;
  markdown(res)    the lines of its part of latest.md, each part ending with "";
                   called only when res has "<name>";
  NEEDS = (paths,) the binaries it runs beyond spanperf and the workload (default: the floor);
  BPF_STATS = True if it reads bpf_stats (prog_cost): the run turns
                   kernel.bpf_stats_enabled on only for such sections, since it costs
                   every BPF program two clock reads per run;
  from_json(v)     optional: v as it comes back from latest.json, for values keyed by
                   numbers (JSON keys are strings);
then add the module to TABLE in bench/sections/__init__.py, where its place is the order
it runs and prints in.  Take what you need from harness.py (spawn every child through
it so that an interrupted run kills it; kill loads you started; TMP for files), import
nothing from another section, and compare against a peer in the same round (perf,
bpftrace, bench/floor): a ratio, never a figure alone.
"""
import json
import os
import shutil
import signal
import sys

import harness
import render
from harness import FLOOR, RESULTS, SPANPERF, WORKLOAD, kill_children, log, machine, sysctl
from sections import SECTIONS


def preconditions(names):
    if os.geteuid() != 0:
        sys.exit("bench: needs root (BPF, system-wide perf events, bpf_stats)")
    for tool in ("perf", "bpftrace", "bpftool"):
        if not shutil.which(tool):
            sys.exit("bench: %s is missing; run tools/deps.sh bench" % tool)
    # A section names the binaries it runs beyond spanperf and the workload (NEEDS); one that does not, the floor.
    needs = {SPANPERF, WORKLOAD}
    for name in names:
        needs.update(getattr(SECTIONS[name], "NEEDS", (FLOOR,)))
    for f in sorted(needs):
        if not os.access(f, os.X_OK):
            sys.exit("bench: %s is not built; run make bench (or make %s)" % (f, os.path.relpath(f, harness.ROOT)))


def main(argv):
    if "-h" in argv or "--help" in argv:
        return print(__doc__)
    if "--render" in argv:
        # The markdown, the chart and docs/benchmarks.md from latest.json, measuring nothing.
        return render.write(render.load(os.path.join(RESULTS, "latest.json")))
    # SIGTERM must still restore the sysctls in the finally below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("bench: terminated"))
    args = argv[1:]
    if "--rounds" in args:
        i = args.index("--rounds")
        harness.set_rounds(int(args[i + 1]))
        del args[i:i + 2]
    unknown = [a for a in args if a not in SECTIONS]
    if unknown:
        sys.exit("bench: unknown section %s (known: %s)" % (unknown, " ".join(SECTIONS)))
    preconditions(args or list(SECTIONS))
    os.makedirs(RESULTS, exist_ok=True)
    saved = {k: sysctl(k) for k in ("kernel.bpf_stats_enabled", "kernel.perf_event_max_sample_rate",
                                    "kernel.perf_cpu_time_max_percent")}
    res = {"machine": machine(), "rounds": harness.rounds()}
    path = os.path.join(RESULTS, "latest.json")
    if args and os.path.exists(path):
        # A partial run updates its sections and keeps the others.
        old = render.load(path)
        old.pop("pinned", None)
        # The header's date and rounds are the whole run's: a partial run keeps them and dates its
        # own sections, with their rounds where they differ.
        now = res["machine"]["date"]
        if harness.rounds() != old["rounds"]:
            now += " (%d rounds)" % harness.rounds()
        res = dict(old)
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
            sysctl("kernel.bpf_stats_enabled", 1 if getattr(SECTIONS[name], "BPF_STATS", False) else 0)
            SECTIONS[name].run(res)
            json.dump(res, open(path, "w"), indent=1)
    finally:
        kill_children()
        for k in ("kernel.perf_cpu_time_max_percent", "kernel.perf_event_max_sample_rate",
                  "kernel.bpf_stats_enabled"):
            sysctl(k, saved[k])
    render.write(res)


if __name__ == "__main__":
    main(sys.argv)
