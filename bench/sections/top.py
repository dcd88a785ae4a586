# SPDX-License-Identifier: GPL-2.0
"""top: its own CPU per refresh, against the recorder alone recording as long in the same round: the
whole host at 999 Hz, a refresh every second, under a CPU-bound load.  top reads the recording in
memory as it is made (live/), so what it costs beyond the recorder is its tables.  With
BENCH_TOP_BEFORE=PATH (another spanperf binary, e.g. one built before the live floor) that binary's
top runs in the same rounds too, for a ratio between the two."""
import os

from harness import DEVNULL, SPANPERF, TMP, busy_load, kill, log, median, rounds, spawn

REFRESHES = 10


def cpu_of(cmd):
    """The CPU seconds (user + system) cmd took, run to its end."""
    p = spawn(cmd, stdout=DEVNULL, stderr=DEVNULL)
    _, _, ru = os.wait4(p.pid, 0)
    return ru.ru_utime + ru.ru_stime


def run(res):
    before = os.environ.get("BENCH_TOP_BEFORE")
    top = ["top", "--batch", "-F", "999", "-d", "1", "-n", str(REFRESHES)]
    cmds = {"top": [SPANPERF] + top,
            # -N: no copies of containers' files, as top keeps none.
            "record": [SPANPERF, "record", "-F", "999", "-N", "-q", "-d", str(REFRESHES), "-o",
                       os.path.join(TMP, "top-baseline.data")]}
    if before:
        cmds["before"] = [before] + top
    rows = {k: [] for k in cmds}
    for r in range(rounds()):
        # Alternating which goes first, each under its own load.
        for name in (list(cmds) if r % 2 == 0 else list(reversed(list(cmds)))):
            load = busy_load(REFRESHES + 6)
            rows[name].append(cpu_of(cmds[name]))
            kill(load)
        log("top round %d: %s" % (r, ", ".join("%s %.2f s CPU" % (k, v[-1]) for k, v in rows.items())))
    v = {"refreshes": REFRESHES, "raw": rows,
         "top_ms": 1000 * median(rows["top"]) / REFRESHES,
         "record_ms": 1000 * median(rows["record"]) / REFRESHES,
         "over_record_ms": 1000 * median([t - c for t, c in zip(rows["top"], rows["record"])]) / REFRESHES,
         "top_per_record": median([t / c for t, c in zip(rows["top"], rows["record"])])}
    if before:
        v["before_ms"] = 1000 * median(rows["before"]) / REFRESHES
        v["before_over_record_ms"] = 1000 * median([t - c for t, c in zip(rows["before"], rows["record"])]) / REFRESHES
        v["top_per_before"] = median([t / b for t, b in zip(rows["top"], rows["before"])])
    res["top"] = v


def markdown(res):
    v = res["top"]
    lines = ["## top's CPU per refresh (`-F 999`, whole host, `-d 1`, %d refreshes, CPU-bound load)" % v["refreshes"],
             "", "| | CPU per refresh | beyond the recorder | ratio |", "|---|---|---|---|",
             "| spanperf top --batch | %.1f ms | %.1f ms | top / record: %.2f |" % (
                 v["top_ms"], v["over_record_ms"], v["top_per_record"]),
             "| spanperf record, as long | %.1f ms | | |" % v["record_ms"]]
    if "before_ms" in v:
        lines.append("| top of BENCH_TOP_BEFORE | %.1f ms | %.1f ms | top / it: %.2f |" % (
            v["before_ms"], v["before_over_record_ms"], v["top_per_before"]))
    return lines + [""]
