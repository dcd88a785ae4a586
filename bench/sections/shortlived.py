# SPDX-License-Identifier: GPL-2.0
"""Issue 40's short-lived processes: complete chains per program of a gcc build (make -j2, 60
small generated files, the link, and 60 small programs linked more, so that collect2 and ld,
a few ms a link, have samples enough to judge) recorded whole host at 4999 Hz with `-g`, spanperf's (ehframe)
against perf record -g's (frame pointers) in the same round, each file read the same way
(tools/shortlived.py: only make's own tree, judged as tools/realhost.py judges), with what
spanperf's record -v says of how its new processes' mappings were found."""
import os
import re
import sys

from harness import ROOT, log, median, rounds, spawn

sys.path.insert(0, os.path.join(ROOT, "tools"))
import shortlived  # noqa: E402

NEEDS = ()
HZ = 4999
FILES = 60
LINKS = 60
# The recorder's counts worth a line under the table (record -v's labels, shortened).
COUNTS = (("mappings found among those noted at a new process's exec and mmaps", "noted at exec/mmap"),
          ("mappings looked up in the kernel (process's not known yet)", "bpf_find_vma in the interrupt"),
          ("frame-pointer steps: file without a table", "fp steps: no table yet"),
          ("stopped: CFI a row cannot express", "stopped: CFI no row expresses"))


def run(res):
    rows = {"spanperf": [], "perf": []}
    counts = []
    for r in range(rounds()):
        for tool in rows:
            got, err = shortlived.run(FILES, HZ, 2, tool=tool, spawn=spawn, links=LINKS)
            rows[tool].append({c: (v["samples"], v["complete"]) for c, v in got.items()})
            if tool == "spanperf":
                stats = shortlived.unwind_stats(err)
                counts.append({short: stats.get(label, 0) for label, short in COUNTS})
            log("shortlived round %d %s: %s" % (r, tool, ", ".join(
                "%s %.1f%% of %d" % (c, 100 * (v[1] or 0), v[0]) for c, v in rows[tool][-1].items())))
    out = {"hz": HZ, "files": FILES, "links": LINKS, "raw": rows, "counts": {k: median([c[k] for c in counts])
                                                              for k in counts[0]} if counts else {}}
    for tool, rs in rows.items():
        comms = [c for c in shortlived.COMMS if any(c in r for r in rs)]
        out[tool] = {c: {"samples": median([r[c][0] for r in rs if c in r]),
                         "complete": median([r[c][1] for r in rs if c in r and r[c][1] is not None])}
                     for c in comms}
    res["shortlived"] = out


def markdown(res):
    v = res["shortlived"]
    lines = ["## Short-lived processes' complete chains (issue 40: `make -j2` of %d small files, the link and "
             "%d small links more, whole host, %d Hz, `-g`; only the build's own processes)"
             % (v["files"], v.get("links", 0), v["hz"]), "",
             "| program | samples | spanperf `-g` complete | perf record -g complete | target |",
             "|---|---|---|---|---|"]
    for c, s in v["spanperf"].items():
        p = v["perf"].get(c, {})
        lines.append("| %s | %d | %.1f%% | %s | >= 95%% |" % (
            c, s["samples"], 100 * s["complete"],
            "%.1f%%" % (100 * p["complete"]) if p.get("complete") is not None else "-"))
    if v["counts"]:
        lines += ["", "spanperf record -v, per run: " + "; ".join("%s %d" % kv for kv in v["counts"].items())]
    return lines + [""]
