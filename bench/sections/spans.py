# SPDX-License-Identifier: GPL-2.0
"""The CPU a span costs per call (syscall and uprobe spans, against the bare probe pair of
bench/floor), and the join of 1M samples with 1M spans in a generated file, alone and with
--why-slow's comparison of the slowest tenth against the rest."""
import json
import os
import subprocess
import time

from harness import (DEVNULL, FLOOR, GEN_SPANS, SPANPERF, TMP, WORKLOAD, log, rounds, spawn,
                     stop_profiler)


def file_offset(path, sym):
    """A function's file offset, for the uprobe floor (readelf, as an independent check)."""
    vaddr = None
    for line in subprocess.run(["readelf", "-sW", path], capture_output=True, text=True).stdout.splitlines():
        f = line.split()
        if len(f) >= 8 and f[7] == sym and f[3] == "FUNC":
            vaddr = int(f[1], 16)
    for line in subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout.splitlines():
        f = line.split()
        if len(f) >= 6 and f[0] == "LOAD":
            off, va, filesz = int(f[1], 16), int(f[2], 16), int(f[4], 16)
            if va <= vaddr < va + filesz:
                return vaddr - va + off
    raise RuntimeError("no %s in %s" % (sym, path))


def per_call(tool, mode, n, span, floor_arg):
    """CPU ns per call of the workload's loop under one tool."""
    wl = [WORKLOAD, mode, str(n)]
    if tool == "spanperf":
        p = subprocess.run([SPANPERF, "record", "-q", "-F", "10", "-o", os.path.join(TMP, "sp.data"),
                            "--span", span, "--"] + wl, capture_output=True, text=True)
        return json.loads(p.stdout.splitlines()[-1])["cpu_ns_per_call"]
    fl = None
    if tool == "floor":
        fl = spawn([FLOOR] + floor_arg + ["-d", "3600"], stdout=DEVNULL, stderr=DEVNULL)
        time.sleep(0.5)
    try:
        p = subprocess.run(wl, capture_output=True, text=True)
        return json.loads(p.stdout)["cpu_ns_per_call"]
    finally:
        if fl:
            stop_profiler(fl)


def run(res):
    cases = {
        "syscall": ("getppid", 2000000, "syscall:getppid",
                    ["-t", "syscalls:sys_enter_getppid,syscalls:sys_exit_getppid"]),
        "uprobe": ("tiny", 200000, "uprobe:%s:tiny" % WORKLOAD,
                   ["-u", "%s:%x" % (WORKLOAD, file_offset(WORKLOAD, "tiny"))]),
    }
    out = {}
    for name, (mode, n, span, floor_arg) in cases.items():
        rows = {"none": [], "floor": [], "spanperf": []}
        for r in range(rounds()):
            for tool in rows:
                rows[tool].append(per_call(tool, mode, n, span, floor_arg))
            log("spans %s round %d: %s" % (name, r, {t: round(v[-1], 1) for t, v in rows.items()}))
        best = {t: min(v) for t, v in rows.items()}
        out[name] = {"none_ns": best["none"], "bare_probe_ns": best["floor"] - best["none"],
                     "span_ns": best["spanperf"] - best["none"],
                     "beyond_bare_ns": best["spanperf"] - best["floor"], "raw": rows}
    # The join: 1M samples by 1M spans over 100 threads, in a generated file.
    path = os.path.join(TMP, "join.data")
    subprocess.run([GEN_SPANS, path, "1000000", "1000000", "100"], check=True)
    for key, extra in (("join", []), ("why_slow", ["--why-slow"])):
        times, rss = [], []
        for r in range(min(rounds(), 3)):
            t0 = time.time()
            p = spawn([SPANPERF, "report", "-i", path, "--spans", "--format", "json"] + extra, stdout=DEVNULL)
            _, status, ru = os.wait4(p.pid, 0)
            times.append(time.time() - t0)
            rss.append(ru.ru_maxrss)
            log("%s round %d: %.2f s, %d KiB" % (key, r, times[-1], rss[-1]))
        out[key] = {"samples": 1000000, "spans": 1000000, "threads": 100, "seconds": min(times),
                    "peak_rss_kib": max(rss), "file_mb": os.path.getsize(path) / 1e6}
    res["spans"] = out


def markdown(res):
    v = res["spans"]
    lines = ["## Span cost per span (CPU per call, fastest of %d rounds)" % res["rounds"], "",
             "| source | call alone | bare probe pair (empty BPF) | spanperf span | beyond the bare probes | "
             "opentelemetry-perf |", "|---|---|---|---|---|---|"]
    for src in ("syscall", "uprobe"):
        if src in v:
            x = v[src]
            lines.append("| %s | %.0f ns | %.0f ns | %.0f ns | %.0f ns | 33,500 ns |" % (
                src, x["none_ns"], x["bare_probe_ns"], x["span_ns"], x["beyond_bare_ns"]))
    j = v.get("join")
    if j:
        lines += ["", "Join of %d samples with %d spans over %d threads (`report --spans --format json`, "
                  "%.0f MB file): %.2f s, peak RSS %.0f MiB." % (j["samples"], j["spans"], j["threads"],
                                                                j["file_mb"], j["seconds"],
                                                                j["peak_rss_kib"] / 1024)]
    w = v.get("why_slow")
    if w:
        lines += ["", "The same file with `--why-slow` (the slowest 10%% of each name against the rest): "
                  "%.2f s, peak RSS %.0f MiB." % (w["seconds"], w["peak_rss_kib"] / 1024)]
    lines.append("")
    return lines
