# SPDX-License-Identifier: GPL-2.0
"""--call-graph ehframe against fp and dwarf, ours and perf's, in the same run: stolen time per
sample at 999 and 4999 Hz; the sampling program's own cost with the table walk and with the
kernel's frame-pointer walk in the same sample path; bytes per sample; and the unwind tables'
build time and size for this host."""
import os
import re
import subprocess

from harness import DEVNULL, SPANPERF, TMP, busy_load, log, median, prog_cost, rounds, spawn, stolen_share, \
    stop_profiler, sysctl, wait_ready

# bpf_stats is turned on for the program's cost only: its clock reads would count against
# spanperf alone in the stolen time.
BPF_STATS = False


def stolen(out):
    # floor: an empty BPF program on the same events, no chain at all, the least any unwinder in
    # BPF can cost a sample here; over dwarf's, the least ehframe / dwarf can come to.
    tools = ["none", "floor", "spanperf", "spanperf-ehframe", "spanperf-dwarf", "perf", "perf-dwarf"]
    for hz in (999, 4999):
        share = {t: [] for t in tools}
        for r in range(rounds()):
            for tool in tools:
                share[tool].append(stolen_share(tool, hz, 2)[0])
            log("ehframe stolen %d Hz round %d: %s" % (hz, r, {t: round(v[-1], 3) for t, v in share.items()}))
        base = median(share["none"])
        us = {t: (median(v) - base) / 100 / hz * 1e6 for t, v in share.items() if t != "none"}
        out["stolen"][hz] = {"us_per_sample": us, "raw": share,
                             "vs_fp": us["spanperf-ehframe"] / us["spanperf"] if us["spanperf"] > 0 else None,
                             "vs_dwarf": us["spanperf-ehframe"] / us["spanperf-dwarf"]
                             if us["spanperf-dwarf"] > 0 else None,
                             "floor_vs_dwarf": us["floor"] / us["spanperf-dwarf"] if us["spanperf-dwarf"] > 0 else None}


def in_bpf(out, hz=999):
    """The same program and sample path, the user chain by the tables or by bpf_get_stack's
    frame pointers (SPANPERF_BENCH_EH_FP), under a CPU-bound load on every CPU."""
    sysctl("kernel.bpf_stats_enabled", 1)
    try:
        for mode in ("ehframe", "fp"):
            ns = []
            env = dict(os.environ, SPANPERF_BENCH_EH_FP="1") if mode == "fp" else None
            for r in range(rounds()):
                load = busy_load(12)
                p = spawn([SPANPERF, "record", "-q", "-a", "--call-graph", "ehframe", "-F", str(hz), "-o",
                           os.path.join(TMP, "ehk.data")], stdout=DEVNULL, stderr=DEVNULL, env=env)
                p.tool = "spanperf-ehframe"
                wait_ready(p.tool, 4.0)
                c = prog_cost("on_sample_eh", 5)
                stop_profiler(p)
                load.kill()
                load.wait()
                if c:
                    ns.append(c[0])
                log("ehframe in BPF %s round %d: %s" % (mode, r, ns[-1:]))
            out["in_bpf_ns"][mode] = median(ns) if ns else None
    finally:
        sysctl("kernel.bpf_stats_enabled", 0)


def sizes(out, secs=4):
    """Bytes per sample (fp, then ehframe, on the same load) and the tables, from record -v."""
    for mode in ("fp", "ehframe"):
        load = busy_load(secs + 4)
        path = os.path.join(TMP, "ehb.data")
        cg = ["--call-graph", mode]
        err = subprocess.run([SPANPERF, "record", "-v", "-a"] + cg + ["-F", "999", "-d", str(secs), "-o", path],
                             capture_output=True, text=True).stderr
        load.kill()
        load.wait()
        n = re.search(r"spanperf record: (\d+) samples", err)
        out["bytes_per_sample"][mode] = os.path.getsize(path) / int(n.group(1)) if n and int(n.group(1)) else None
        if mode != "ehframe":
            continue
        m = re.search(r"ehframe tables: (\d+) files, (\d+) rows \(([\d.]+) MB\), (\d+) page entries; (\d+) process "
                      r"builds, (\d+) mappings; built in (\d+) ms", err)
        if m:
            out["tables"] = {"files": int(m.group(1)), "rows": int(m.group(2)), "rows_mb": float(m.group(3)),
                             "pages": int(m.group(4)), "process_builds": int(m.group(5)),
                             "mappings": int(m.group(6)), "build_ms": int(m.group(7))}
        m = re.search(r"^  complete \(reached the outermost frame\) +(\d+)$", err, re.M)
        t = re.search(r"^  user chains +(\d+)$", err, re.M)
        if m and t:
            out["complete_share"] = int(m.group(1)) / max(1, int(t.group(1)))


def run(res):
    out = {"stolen": {}, "in_bpf_ns": {}, "bytes_per_sample": {}}
    stolen(out)
    in_bpf(out)
    sizes(out)
    b = out["bytes_per_sample"]
    if b.get("fp") and b.get("ehframe"):
        out["bytes_ratio"] = b["ehframe"] / b["fp"]
    res["ehframe"] = out


def from_json(v):
    v["stolen"] = {int(k): x for k, x in v["stolen"].items()}
    return v


def markdown(res):
    v = res["ehframe"]
    lines = ["## --call-graph ehframe (user chains unwound in BPF from .eh_frame tables)", "",
             "Stolen time per sample (the gaps workload on every CPU; medians, the same run):", "",
             "| -F | floor | fp | ehframe | dwarf | perf -g | perf dwarf | ehframe / fp | target | ehframe / dwarf "
             "| target | floor / dwarf |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def ratio(x):
        return "%.2f" % x if x is not None else "n/a"
    for hz, row in sorted(v["stolen"].items()):
        us = row["us_per_sample"]
        floor = "%.2f us" % us["floor"] if "floor" in us else "n/a"
        lines.append(("| %s | %s | %.2f us | %.2f us | %.2f us | %.2f us | %.2f us | %s | <= 1.5 | %s | <= 0.2 "
                      "| %s |") % (
            hz, floor, us["spanperf"], us["spanperf-ehframe"], us["spanperf-dwarf"], us["perf"], us["perf-dwarf"],
            ratio(row["vs_fp"]), ratio(row["vs_dwarf"]), ratio(row.get("floor_vs_dwarf"))))
    lines += ["", "floor: bench/floor, an empty BPF program on the same sampling events and no call chain, the "
              "least a sample can cost any BPF unwinder on this host; floor / dwarf is therefore the least "
              "ehframe / dwarf can come to here."]
    k = v["in_bpf_ns"]
    if k.get("ehframe") and k.get("fp"):
        lines += ["", "The sampling program itself (bpf_stats, 999 Hz, CPU-bound load on every CPU): %.0f ns a "
                  "sample with the table walk, %.0f ns with the kernel's frame-pointer walk in the same path "
                  "(SPANPERF_BENCH_EH_FP): %.2fx; target <= 1.5." % (
                      k["ehframe"], k["fp"], k["ehframe"] / k["fp"])]
    if v.get("bytes_ratio"):
        b = v["bytes_per_sample"]
        lines += ["", "Bytes per sample: %.0f with fp, %.0f with ehframe (%.2fx; target <= 1.2)." % (
            b["fp"], b["ehframe"], v["bytes_ratio"])]
    if v.get("tables"):
        t = v["tables"]
        lines += ["", "Tables for this host: %d files, %d rows (%.1f MB), %d page-index entries, %d process builds "
                  "(%d mappings), %d ms to build in all; user chains complete: %.1f%%." % (
                      t["files"], t["rows"], t["rows_mb"], t["pages"], t["process_builds"], t["mappings"],
                      t["build_ms"], 100 * v.get("complete_share", 0))]
    lines.append("")
    return lines
