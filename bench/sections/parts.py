# SPDX-License-Identifier: GPL-2.0
"""Where each tool's time above the floor goes: the stolen-time measure with and without
call chains, at 19999 Hz, where per-sample costs stand well above the round-to-round noise."""
from harness import log, median, rounds, stolen_share

PARTS_HZ = 19999


def run(res):
    secs = 2
    tools = ["none", "floor", "spanperf-nog", "perf-nog", "bpftrace-nostack", "spanperf", "perf", "bpftrace"]
    share = {t: [] for t in tools}
    for r in range(rounds()):
        for tool in tools:
            share[tool].append(stolen_share(tool, PARTS_HZ, secs)[0])
        log("parts round %d: %s" % (r, {t: round(v[-1], 3) for t, v in share.items()}))
    floor = median(share["floor"])
    res["parts"] = {"hz": PARTS_HZ, "seconds": secs, "raw": share,
                    "rows": {t: {"stolen_pct": median(v), "above_floor_pct": median(v) - floor,
                                 "us_per_sample_above_floor": (median(v) - floor) / 100 / PARTS_HZ * 1e6}
                             for t, v in share.items() if t not in ("none", "floor")}}


def markdown(res):
    v = res["parts"]
    lines = ["## Where the time above the floor goes (stolen time at %d Hz, with and without stacks)" % v["hz"], "",
             "The measure above, for each tool with and without call chains. spanperf runs perf's own "
             "sample path (chain walk and ring write, which perf record pays too) plus its per-thread "
             "program, so it cannot come below perf record here; bpftrace walks the same stacks but "
             "hashes them into a stack map instead of writing a record per sample. Medians of %d rounds."
             % res["rounds"], "",
             "| tool | stolen | above floor | per sample above floor |", "|---|---|---|---|"]
    for t, row in v["rows"].items():
        lines.append("| %s | %.2f%% | %.2f%% | %.2f us |" % (
            t.replace("-nog", " (no -g)").replace("-nostack", " (@[tid] only)"), row["stolen_pct"],
            row["above_floor_pct"], row["us_per_sample_above_floor"]))
    lines.append("")
    return lines
