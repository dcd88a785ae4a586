# SPDX-License-Identifier: GPL-2.0
"""--call-graph dwarf at 999 Hz against perf's: the recorder's CPU, bytes and stolen time
under a CPU-bound load on every CPU, then report time, unwind cost and peak RSS on a file
of the no-frame-pointer workload, ours and perf's."""
import os
import re
import subprocess

from harness import (DEVNULL, DWARF_WORKLOAD, SPANPERF, TMP, log, median, race, record_cmd, rounds,
                     stolen_share, under_busy_load)


def report_stats(path):
    """report -v's unwind line: (user stacks, complete, cut, us per stack)."""
    err = subprocess.run([SPANPERF, "report", "-v", "-i", path, "--folded"], capture_output=True, text=True).stderr
    m = re.search(r"dwarf unwind: (\d+) user stacks, (\d+) complete, (\d+) cut short; \d+ frames, ([\d.]+) us", err)
    lost = re.search(r"(\d+) samples lost while recording", err)
    return {"stacks": int(m.group(1)), "complete": int(m.group(2)), "cut": int(m.group(3)),
            "us_per_stack": float(m.group(4)), "lost": int(lost.group(1)) if lost else None}


def run(res):
    hz, secs = 999, 5
    cpu = {"spanperf": [], "perf": []}
    rate = {"spanperf": [], "perf": []}
    per_sample = {"spanperf": [], "perf": []}
    lost = []
    for r in range(rounds()):
        for tool in ("spanperf", "perf"):
            out = os.path.join(TMP, "dw-%s.data" % tool)
            ru = under_busy_load(record_cmd(tool, ["--call-graph", "dwarf", "-F", str(hz)], secs, out), secs)
            cpu[tool].append(ru.ru_utime + ru.ru_stime)
            rate[tool].append(os.path.getsize(out) / secs)
            if tool == "spanperf":
                st = report_stats(out)
                lost.append(st["lost"])
                per_sample[tool].append(os.path.getsize(out) / max(1, st["stacks"]))
            log("dwarf recorder round %d %s: %.3f s CPU, %.0f KB/s" % (r, tool, cpu[tool][-1], rate[tool][-1] / 1e3))
    stolen = {t: [] for t in ("none", "spanperf-dwarf", "perf-dwarf")}
    for r in range(rounds()):
        for tool in stolen:
            stolen[tool].append(stolen_share(tool, hz, 2)[0])
        log("dwarf stolen round %d: %s" % (r, {t: round(v[-1], 3) for t, v in stolen.items()}))
    base = median(stolen["none"])
    out = {"hz": hz, "seconds": secs,
           "spanperf_cpu_s": median(cpu["spanperf"]), "perf_cpu_s": median(cpu["perf"]),
           "cpu_ratio": median([a / b for a, b in zip(cpu["spanperf"], cpu["perf"])]),
           "spanperf_Bps": median(rate["spanperf"]), "perf_Bps": median(rate["perf"]),
           "bytes_ratio": median([a / b for a, b in zip(rate["spanperf"], rate["perf"])]),
           "spanperf_bytes_per_sample": median(per_sample["spanperf"]), "spanperf_lost": lost,
           "stolen_us_per_sample": {t: (median(v) - base) / 100 / hz * 1e6 for t, v in stolen.items() if t != "none"},
           "raw": {"cpu": cpu, "rate": rate, "stolen": stolen}}
    # Report: a file of the no-frame-pointer workload, by spanperf, then by perf (per-thread, where perf unwinds).
    files = {}
    path = os.path.join(TMP, "dw-report.data")
    subprocess.run([SPANPERF, "record", "-q", "--call-graph", "dwarf", "-F", str(hz), "-o", path, "--",
                    DWARF_WORKLOAD, "3000"], check=True, stdout=DEVNULL)
    files["spanperf file"] = path
    path = os.path.join(TMP, "dw-report-perf.data")
    # --buildid-mmap: perf 6.1's build-id pass at the end aborts on this workload's library here.
    subprocess.run(["perf", "record", "-q", "--buildid-mmap", "--call-graph", "dwarf", "-F", str(hz), "-o", path,
                    "--", DWARF_WORKLOAD, "3000"], check=True, stdout=DEVNULL, stderr=DEVNULL)
    files["perf file"] = path
    out["report"] = {}
    for name, path in files.items():
        row = race("dwarf " + name, [SPANPERF, "report", "-i", path, "-g"], ["perf", "report", "--stdio", "-i", path])
        row.update(report_stats(path))
        row["file_mb"] = os.path.getsize(path) / 1e6
        out["report"][name] = row
    res["dwarf"] = out


def markdown(res):
    v = res["dwarf"]
    lines = ["## --call-graph dwarf (%d Hz, 8 KiB stack copies)" % v["hz"], "",
             "Recording `-a` for %d s under a CPU-bound load on every CPU:" % v["seconds"], "",
             "| | spanperf | perf record | ratio | target |", "|---|---|---|---|---|",
             "| recorder CPU | %.3f s | %.3f s | %.2f | <= 0.5 |" % (v["spanperf_cpu_s"], v["perf_cpu_s"], v["cpu_ratio"]),
             "| output | %.0f KB/s | %.0f KB/s | %.2f | <= 1 |" % (v["spanperf_Bps"] / 1e3, v["perf_Bps"] / 1e3,
                                                           v["bytes_ratio"]),
             "| stolen per sample | %.2f us | %.2f us | | |" % (v["stolen_us_per_sample"]["spanperf-dwarf"],
                                                         v["stolen_us_per_sample"]["perf-dwarf"]),
             "", "spanperf bytes per sample: %.0f; samples lost: %s." % (v["spanperf_bytes_per_sample"],
                                                                     v["spanperf_lost"]), "",
             "Report (`report -g` against `perf report --stdio`) on the no-frame-pointer workload's file:", "",
             "| file | samples unwound | complete | spanperf | perf report | ratio | target | unwind per stack | "
             "spanperf RSS | perf RSS |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name, row in v["report"].items():
        lines.append("| %s (%.1f MB) | %d | %d | %.2f s | %.2f s | %.2f | <= 0.5 | %.1f us | %.1f MiB | %.1f MiB |" % (
            name, row["file_mb"], row["stacks"], row["complete"], row["spanperf_s"], row["perf_s"], row["ratio"],
            row["us_per_stack"], row["spanperf_rss_kib"] / 1024, row["perf_rss_kib"] / 1024))
    lines.append("")
    return lines
