# SPDX-License-Identifier: GPL-2.0
"""The slowdown as the workload itself sees it: one thread per CPU reads the clock
in a loop and sums the gaps (1-200 us) where something else ran.  A sampling
interrupt with its program, chain walk and ring write is one such gap; the share
of time in gaps is the slowdown, and it holds when the host slows the vCPU
(work and handler slow alike), which timing fixed work does not.  The page's
chart (results/slowdown.svg) is drawn from this section."""
from harness import log, median, rounds, stolen_share


def run(res):
    secs = 2
    tools = ["none", "floor", "spanperf", "perf", "bpftrace"]
    out = {"seconds": secs, "rates": {}}
    for hz in (99, 999, 4999, 19999):
        share = {t: [] for t in tools}
        gap_ns = {t: [] for t in tools}
        for r in range(rounds()):
            for tool in tools:
                pct, gap = stolen_share(tool, hz, secs)
                share[tool].append(pct)
                gap_ns[tool].append(gap)
            log("stolen %d Hz round %d: %s" % (hz, r, {t: round(v[-1], 3) for t, v in share.items()}))
        base = median(share["none"])
        row = {t: {"stolen_pct": median(share[t]), "slowdown_pct": median(share[t]) - base,
                   "mean_gap_ns": median(gap_ns[t])} for t in tools}
        for t in tools[2:]:
            row[t]["above_floor_pct"] = row[t]["slowdown_pct"] - row["floor"]["slowdown_pct"]
            # The extra time per sample: what the tool's gaps cost over the floor's, per sample.
            row[t]["us_per_sample_above_floor"] = row[t]["above_floor_pct"] / 100 / hz * 1e6
        row["raw"] = share
        out["rates"][hz] = row
    res["stolen"] = out


def from_json(v):
    # JSON keys are strings; the rates are numbers.
    v["rates"] = {int(k): x for k, x in v["rates"].items()}
    return v


def markdown(res):
    v = res["stolen"]
    lines = ["## Slowdown as the workload sees it (time stolen from it, `-a -g`)", "",
             "One thread per CPU reads the clock in a loop for %d s and sums the gaps of 1-200 us in "
             "which something else ran: each sample's interrupt, program, chain walk and ring write "
             "is one. The slowdown is the share of time in gaps over the same share without a "
             "profiler (which holds the timer tick). Medians of %d rounds." % (v["seconds"], res["rounds"]),
             "",
             "This is the slowdown figure kept: timing a fixed piece of work varied from 1.5 s to 7.4 s "
             "of CPU within minutes on this shared host, profiler or not, while the share of time in "
             "gaps holds when the host changes the vCPU's speed.", "",
             "| rate | empty BPF (floor) | spanperf | perf record | bpftrace | spanperf above floor | "
             "perf above floor | bpftrace above floor | spanperf per sample | perf per sample | "
             "bpftrace per sample |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for hz, row in v["rates"].items():
        lines.append("| %s Hz | %.2f%% | %.2f%% | %.2f%% | %.2f%% | %.2f%% | %.2f%% | %.2f%% | %.2f us | "
                     "%.2f us | %.2f us |" % (
                         hz, row["floor"]["slowdown_pct"], row["spanperf"]["slowdown_pct"],
                         row["perf"]["slowdown_pct"], row["bpftrace"]["slowdown_pct"],
                         row["spanperf"]["above_floor_pct"], row["perf"]["above_floor_pct"],
                         row["bpftrace"]["above_floor_pct"], row["spanperf"]["us_per_sample_above_floor"],
                         row["perf"]["us_per_sample_above_floor"],
                         row["bpftrace"]["us_per_sample_above_floor"]))
    lines += ["", "![slowdown](slowdown.svg)", ""]
    return lines
