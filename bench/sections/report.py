# SPDX-License-Identifier: GPL-2.0
"""spanperf report against perf report --stdio, each one's default, on an fp and an ehframe file (whole host,
5 s), spanperf diff against perf diff on the fp file and a second recording of the same load, and the report
at scale: the span join of 1M samples with 1M spans, and annotate of 1M OTLP spans (time and peak RSS)."""
import json
import os
import subprocess
import time

from harness import DEVNULL, GEN_SPANS, SPANPERF, TMP, WORKLOAD, busy_load, gen_otlp, kill, log, race, rounds, run_to_end

NEEDS = (GEN_SPANS,)


def record(path, call_graph):
    load = busy_load(8)
    time.sleep(0.3)
    subprocess.run([SPANPERF, "record", "-q", "-a"] + call_graph + ["-F", "4999", "-d", "5", "-o", path], check=True)
    kill(load)
    out = subprocess.run([SPANPERF, "report", "-i", path, "--format", "json", "--sort", "comm"],
                         capture_output=True, text=True).stdout
    return sum(json.loads(l)["samples"] for l in out.splitlines())


def run(res):
    # Each tool's default on both kinds of chain: inline frames are on in both (perf 6.1 shows
    # them in DWARF-unwound chains; spanperf as perf), so their cost is in the ratio.
    files = {"fp": ["--call-graph", "fp"], "ehframe": ["-g"]}
    out = {"samples": 0, "file_mb": 0, "rows": {}, "files": {}}
    for kind, cg in files.items():
        path = os.path.join(TMP, "report-%s.data" % kind)
        n = record(path, cg)
        out["files"][kind] = {"samples": n, "file_mb": os.path.getsize(path) / 1e6}
        out["samples"] += n
        out["file_mb"] += os.path.getsize(path) / 1e6
        pairs = {
            "table, no call graph (%s)" % kind: ([SPANPERF, "report", "-i", path],
                                                 ["perf", "report", "--stdio", "-i", path, "--no-children", "-g", "none"]),
            "call graph, inline on (%s)" % kind: ([SPANPERF, "report", "-i", path, "-g"],
                                                  ["perf", "report", "--stdio", "-i", path]),
        }
        path2 = None
        if kind == "fp":
            pairs["folded / flame graph (fp)"] = ([SPANPERF, "report", "-i", path, "--flamegraph",
                                                   os.path.join(TMP, "f.svg")], ["perf", "script", "-i", path])
            path2 = os.path.join(TMP, "report-fp2.data")
            record(path2, cg)
            pairs["diff of two files (fp)"] = ([SPANPERF, "diff", path, path2], ["perf", "diff", path, path2])
        for name, (mine, theirs) in pairs.items():
            out["rows"][name] = race(name, mine, theirs)
            out["rows"][name]["perf_cmd"] = " ".join(a for a in theirs if a not in ("-i", path, path2))
    out["scale"] = scale()
    res["report"] = out


def scale():
    """The two scale figures: wall and CPU seconds (fastest round) and peak RSS (largest)."""
    join = os.path.join(TMP, "join.data")
    subprocess.run([GEN_SPANS, join, "1000000", "1000000", "100"], check=True)
    data, truth = os.path.join(TMP, "ann.data"), os.path.join(TMP, "ann.jsonl")
    subprocess.run([SPANPERF, "record", "-q", "-F", "999", "-o", data, "--", WORKLOAD, "calls", "400", "5", truth],
                   check=True, stdout=DEVNULL, stderr=DEVNULL)
    calls = [json.loads(l) for l in open(truth)]
    off = time.clock_gettime_ns(time.CLOCK_REALTIME) - time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    otlp = os.path.join(TMP, "1m-otlp.json")
    gen_otlp(otlp, 1000000, calls[0]["tid"], calls[0]["pid"], calls[0]["start_ns"] + off, calls[-1]["end_ns"] + off)
    cases = {"join": ([SPANPERF, "report", "-i", join, "--spans", "--format", "json"], join),
             "annotate": ([SPANPERF, "annotate", "--spans", otlp, "-i", data, "--format", "json"], otlp)}
    out = {}
    for key, (cmd, f) in cases.items():
        runs = [run_to_end(cmd) for _ in range(min(rounds(), 3))]
        out[key] = {"seconds": min(r[0] for r in runs), "cpu_s": min(r[1].ru_utime + r[1].ru_stime for r in runs),
                    "peak_rss_kib": max(r[1].ru_maxrss for r in runs), "file_mb": os.path.getsize(f) / 1e6}
        log("report scale %s: %.2f s (%.2f s CPU), %d KiB" % (key, out[key]["seconds"], out[key]["cpu_s"],
                                                             out[key]["peak_rss_kib"]))
    for f in (join, otlp, data):
        os.unlink(f)
    return out


def markdown(res):
    v = res["report"]
    files = ", ".join("%s %d samples, %.0f MB" % (k, f["samples"], f["file_mb"]) for k, f in v.get("files", {}).items())
    lines = ["## Report time and peak memory (%s; fastest of %d)" % (
        files or "%d samples with call graphs, %.0f MB" % (v["samples"], v["file_mb"]), res["rounds"]), "",
             "| output | spanperf | perf | ratio | spanperf RSS | perf RSS | target |", "|---|---|---|---|---|---|---|"]
    for name, x in v["rows"].items():
        lines.append("| %s (`%s`) | %.2f s | %.2f s | %.2f | %.0f MiB | %.0f MiB | <= 0.5 |" % (
            name, x["perf_cmd"], x["spanperf_s"], x["perf_s"], x["ratio"], x["spanperf_rss_kib"] / 1024,
            x["perf_rss_kib"] / 1024))
    lines.append("")
    s = v.get("scale")
    if s:
        j, a = s["join"], s["annotate"]
        lines += ["At scale: the join of 1,000,000 samples with 1,000,000 spans over 100 threads (`report --spans "
                  "--format json`, %.0f MB file) %.2f s (%.2f s CPU), peak RSS %.0f MiB (target < 1 s, 300 MiB); "
                  "`annotate` of 1,000,000 OTLP JSON spans (%.0f MB) %.2f s (%.2f s CPU), peak RSS %.0f MiB "
                  "(target < 1.5 s, 400 MiB)." % (j["file_mb"], j["seconds"], j["cpu_s"], j["peak_rss_kib"] / 1024,
                                                   a["file_mb"], a["seconds"], a["cpu_s"], a["peak_rss_kib"] / 1024), ""]
    return lines
