# SPDX-License-Identifier: GPL-2.0
"""The whole path of a sample, for each call-graph mode, against perf in the same run: what the
sampled workload loses (the growth of its own thread CPU time per fixed unit of work) plus the
recorder's own CPU, per sample, at 999 and 4999 Hz; and bytes per sample.

The workload (bench/unitwork) runs one thread per CPU, each unit a chain 24 frames deep spinning
about 20 ms at its end, built with frame pointers (every mode gets the whole chain) and without
(fp stops after a frame or two, ehframe and dwarf go on).  Each round runs every tool once in
turn for a few seconds, with a run without a profiler before and after each; figures are medians
over rounds of each run against the runs around it, and the spread is the rounds' lowest and
highest."""
import glob
import json
import os
import re
import time

from harness import CPUS, DEVNULL, ROOT, SPANPERF, TMP, log, median, rounds, spawn, stop_profiler

UNITWORK = os.path.join(ROOT, "build", "bench", "unitwork_")
TOOLS = ["none", "spanperf-fp", "spanperf-ehframe", "spanperf-dwarf", "perf-fp", "perf-dwarf"]
CG = {"fp": ["--call-graph", "fp"], "ehframe": ["--call-graph", "ehframe"], "dwarf": ["--call-graph", "dwarf"]}
SECS = 2
ITERS = 18000000  # about 20 ms of CPU here: 20 samples a unit at 999 Hz, 100 at 4999
DEPTH = 24


def start(tool, hz, out):
    if tool == "none":
        return None
    who, mode = tool.split("-")
    if who == "spanperf":
        cmd = [SPANPERF, "record", "-a"] + CG[mode] + ["-F", str(hz), "-o", out]
    else:
        cmd = ["perf", "record", "-a"] + CG[mode] + ["-F", str(hz), "-o", out]
    err = os.path.join(TMP, "wp.stderr")
    p = spawn(cmd, stdout=DEVNULL, stderr=open(err, "w"))
    p.tool = tool
    p.err = err
    return p


def task_cpu_ns(pid):
    """The CPU time of every thread of pid so far (schedstat: ns, where rusage has ticks)."""
    total = 0
    for f in glob.glob("/proc/%d/task/*/schedstat" % pid):
        try:
            total += int(open(f).read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def settle(p):
    """Waits until the recorder is past its start (ehframe builds the host's tables then, which can
    take seconds on a busy host): its CPU below a tenth of one CPU over a quarter second."""
    time.sleep(1.0)
    deadline = time.time() + 15
    while time.time() < deadline:
        c0 = task_cpu_ns(p.pid)
        time.sleep(0.25)
        if task_cpu_ns(p.pid) - c0 < 0.1 * 0.25e9:
            return
    log("wholepath: %s still busy after 16 s; measured anyway" % p.tool)


def samples_of(p):
    """The samples the recorder says it wrote, from its last line."""
    text = open(p.err).read()
    m = re.search(r"\[ spanperf record: (\d+) samples", text) or re.search(r"\((\d+) samples\)", text)
    return int(m.group(1)) if m else None


def one(tool, hz, build):
    out = os.path.join(TMP, "wp.data")
    p = start(tool, hz, out)
    if p:
        settle(p)
    c0 = task_cpu_ns(p.pid) if p else 0
    t0 = time.time()
    w = json.loads(spawn_out([UNITWORK + build, str(CPUS), str(SECS), str(ITERS), str(DEPTH)]))
    wall = time.time() - t0
    c1 = task_cpu_ns(p.pid) if p else 0
    stop_profiler(p)
    r = {"unit_ns": w["median_ns"]}
    if p:
        # Samples in the window: the rate on every CPU (cpu-clock fires in idle too).
        r["recorder_ns_per_sample"] = (c1 - c0) / (CPUS * hz * wall)
        n = samples_of(p)
        if n and os.path.exists(out):
            r["bytes_per_sample"] = os.path.getsize(out) / n
    return r


def spawn_out(cmd):
    p = spawn(cmd, stdout=-1, stderr=DEVNULL, text=True)
    out, _ = p.communicate()
    return out


def run(res):
    out = {"rates": {}, "secs": SECS, "depth": DEPTH}
    n = 2 * rounds()
    tools = TOOLS[1:]
    for build in ("fp", "nofp"):
        for hz in (999, 4999):
            raw = {t: [] for t in TOOLS}
            for r in range(n):
                # A different tool first each round, and a run without a profiler before and after
                # each: a tool is held against the host as it was just then.
                order = tools[r % len(tools):] + tools[:r % len(tools)]
                nones = [one("none", hz, build)]
                for tool in order:
                    v = one(tool, hz, build)
                    nones.append(one("none", hz, build))
                    v["none_ns"] = (nones[-2]["unit_ns"] + nones[-1]["unit_ns"]) / 2
                    raw[tool].append(v)
                raw["none"] += nones
                log("wholepath %s %d Hz round %d: %s" % (build, hz, r, {
                    t: round(v[-1]["unit_ns"] / 1e6, 3) for t, v in raw.items()}))
            out["rates"]["%s/%d" % (build, hz)] = summarise(raw, hz)
    res["wholepath"] = out


def summarise(raw, hz):
    """Per run, each tool's loss per sample against the runs without a profiler around it; then
    medians, and the spread over rounds."""
    row = {"raw": raw}
    per = {}
    for t in TOOLS[1:]:
        lost, whole = [], []
        for v in raw[t]:
            # A unit's samples are its CPU time times hz; what each cost it is the unit's growth over them.
            none = v["none_ns"]
            loss = (v["unit_ns"] - none) / (none / 1e9 * hz)
            lost.append(loss)
            whole.append(loss + v.get("recorder_ns_per_sample", 0))
        per[t] = whole
        row[t] = {"workload_ns_per_sample": median(lost), "recorder_ns_per_sample":
                  median([v.get("recorder_ns_per_sample", 0) for v in raw[t]]),
                  "whole_ns_per_sample": median(whole), "whole_min": min(whole), "whole_max": max(whole),
                  "bytes_per_sample": median([v["bytes_per_sample"] for v in raw[t] if "bytes_per_sample" in v])}

    # Ratios of the medians; the spread is that of the rounds' own ratios.
    def ratio(a, b):
        rs = [x / y for x, y in zip(per[a], per[b]) if y > 0]
        m = row[b]["whole_ns_per_sample"]
        return {"median": row[a]["whole_ns_per_sample"] / m if m > 0 else None,
                "min": min(rs), "max": max(rs)} if rs else None
    row["ehframe_vs_fp"] = ratio("spanperf-ehframe", "spanperf-fp")
    row["ehframe_vs_dwarf"] = ratio("spanperf-ehframe", "spanperf-dwarf")
    row["fp_vs_perf_fp"] = ratio("spanperf-fp", "perf-fp")
    row["ehframe_vs_perf_fp"] = ratio("spanperf-ehframe", "perf-fp")
    return row


def markdown(res):
    v = res["wholepath"]
    lines = ["## The whole path of a sample, per call-graph mode (workload's loss + recorder's CPU)", "",
             "bench/unitwork on every CPU, %d frames deep, fixed units of about 20 ms timed by the thread's own "
             "CPU clock; each round runs every tool for %d s in turn, each between two runs without a "
             "profiler. Per sample: what a unit grew by over its samples, plus the recorder's CPU (schedstat) over "
             "the samples of the window. Medians over rounds; a ratio is of the medians, [lowest-highest] of the rounds' own. dwarf's "
             "unwinding at report time is not counted." % (v["depth"], v["secs"]), "",
             "| build, rate | spanperf fp | ehframe | dwarf | perf -g | perf dwarf | ehframe / fp | "
             "ehframe / dwarf | fp / perf -g | ehframe / perf -g |", "|---|---|---|---|---|---|---|---|---|---|"]

    def r(x):
        return "%.2f [%.2f-%.2f]" % (x["median"], x["min"], x["max"]) if x and x["median"] else "n/a"
    for key, row in v["rates"].items():
        build, hz = key.split("/")
        cells = []
        for t in TOOLS[1:]:
            x = row[t]
            cells.append("%.2f us (%.2f + %.2f)" % (x["whole_ns_per_sample"] / 1e3, x["workload_ns_per_sample"] / 1e3,
                                                   x["recorder_ns_per_sample"] / 1e3))
        lines.append("| %s, %s Hz | %s | %s | %s | %s |" % (
            "frame pointers" if build == "fp" else "no frame pointers", hz, " | ".join(cells),
            r(row["ehframe_vs_fp"]), r(row["ehframe_vs_dwarf"]), r(row["fp_vs_perf_fp"]) + " | " +
            r(row["ehframe_vs_perf_fp"])))
    lines += ["", "Each cell: the whole (the workload's part + the recorder's), each the median of its own rounds, "
              "so the parts need not add up to the whole. Bytes per sample (the file over its samples, side-band "
              "included):", ""]
    for key, row in v["rates"].items():
        lines.append("- %s: %s" % (key, ", ".join("%s %.0f" % (t, row[t]["bytes_per_sample"]) for t in TOOLS[1:]
                                                   if row[t]["bytes_per_sample"] == row[t]["bytes_per_sample"])))
    lines.append("")
    return lines
