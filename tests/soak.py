#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""make soak: a long run under constant thread churn.

Whole-host `record -a -F 999 -g` and `stat -a --per-thread` run side by side
for --minutes (default 10) while threads are created and exit all the time.
Every 10 s the recorder's and the counter's RSS and open fds are read.  It
fails if either grows between start-up and shutdown (the RSS peak of the
second half more than 10% over the first half's, fds at all), if a process
crashes, or if the file does not read back.  Figures go to
build/soak.txt.  Never part of make test."""
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SPANPERF = os.path.join(ROOT, "spanperf")
WORKLOAD = os.path.join(ROOT, "build", "tests", "workload")


def status(pid):
    rss = fds = None
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
        fds = len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        pass
    return rss, fds


def main(argv):
    minutes = float(argv[argv.index("--minutes") + 1]) if "--minutes" in argv else 10.0
    secs = int(minutes * 60)
    out = os.path.join(ROOT, "build")
    os.makedirs(out, exist_ok=True)
    data, stat_out = os.path.join(out, "soak.data"), os.path.join(out, "soak-stat.txt")
    churn = subprocess.Popen([WORKLOAD, "churn", str(secs + 5)], stdout=subprocess.PIPE, text=True)
    rec = subprocess.Popen([SPANPERF, "record", "-a", "-F", "999", "-g", "-d", str(secs), "-o", data],
                           stderr=subprocess.PIPE, text=True)
    st = subprocess.Popen([SPANPERF, "stat", "-a", "--per-thread", "-e", "task-clock,context-switches",
                           "-I", "10000", "-d", str(secs), "-o", stat_out], stderr=subprocess.PIPE, text=True)
    series = {"record": [], "stat": []}
    t0 = time.time()
    while rec.poll() is None or st.poll() is None:
        for name, p in (("record", rec), ("stat", st)):
            if p.poll() is None:
                rss, fds = status(p.pid)
                if rss:
                    series[name].append((time.time() - t0, rss, fds))
        time.sleep(10)
    rec_err, st_err = rec.stderr.read(), st.stderr.read()
    churned = churn.stdout.readline()
    churn.wait()
    lines, ok = [], True
    lines.append("soak: %.0f s of record -a -F 999 -g and stat -a --per-thread under churn %s" % (
        time.time() - t0, churned.strip()))
    for name, s in series.items():
        # The first minute is start-up (maps created, the output opened) and
        # the last seconds shutdown (events closed, the file finished).
        steady = [(r, f) for t, r, f in s if 60 <= t <= secs - 10] or [(r, f) for t, r, f in s]
        rss0, rss1 = steady[0][0], steady[-1][0]
        fds = sorted({f for r, f in steady})
        # stat -I frees each interval's exited threads, so its RSS cycles: the
        # peaks of the two halves of the steady run are what must not grow.
        half = len(steady) // 2 or 1
        peak0, peak1 = max(r for r, f in steady[:half]), max(r for r, f in steady[half:] or steady)
        grow = 100.0 * (peak1 - peak0) / peak0 if peak0 else 0
        lines.append("  %-6s RSS after 1 min %d KiB, at the end %d KiB; peak of the first half %d KiB, of the "
                     "second %d KiB (%+.1f%%); median %d KiB; open fds after 1 min %s (during start-up %s)" % (
                         name, rss0, rss1, peak0, peak1, grow, statistics.median(r for t, r, f in s), fds,
                         sorted({f for t, r, f in s if t < 60})))
        lines.append("  %-6s RSS KiB every 10 s: %s" % (name, " ".join(str(r) for t, r, f in s)))
        lines.append("  %-6s open fds every 10 s: %s" % (name, " ".join(str(f) for t, r, f in s)))
        if grow > 10 or len(fds) > 1:
            ok = False
    lines.append("  record exit %d; stat exit %d" % (rec.returncode, st.returncode))
    lines.append("  record said: %s" % " | ".join(l for l in rec_err.splitlines() if l))
    lines.append("  stat said: %s" % " | ".join(l for l in st_err.splitlines() if l)[:600])
    rep = subprocess.run([SPANPERF, "report", "-i", data, "--sort", "comm"], capture_output=True, text=True)
    lines.append("  report: exit %d, %s" % (rep.returncode, (rep.stdout.splitlines() or ["?"])[0]))
    ok = ok and rec.returncode == 0 and st.returncode == 0 and rep.returncode == 0
    lines.append("soak: %s" % ("PASS" if ok else "FAIL"))
    text = "\n".join(lines) + "\n"
    open(os.path.join(out, "soak.txt"), "w").write(text)
    print(text, end="")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
