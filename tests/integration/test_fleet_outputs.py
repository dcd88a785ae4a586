# SPDX-License-Identifier: GPL-2.0
"""report --clickhouse's outputs that were a file's alone (--dsos, --symbols, --time, --event,
--html, --speedscope): each against the same output of a local record of the same workload,
taken while the agent ships it to a server of the tests' own (ch_cluster.py)."""
import atexit
import json
import os
import re
import signal
import subprocess
import time

import ch_cluster
from fleet_common import need_clickhouse, tsv, wait_windows
from fleet_common import folded_total as total
from harness import SPANPERF, WORKLOAD, reap, spanperf, test, tmpdir

HZ = 99
SPIN_MS = 4000
SLEEPS, SLEEP_US = 20, 50000


def noise(n):
    """Two recorders sampling one thread at HZ: each count is within 3 sigma of the other's."""
    return 3 * max(n, 1) ** 0.5


_run = {}


def shipped():
    """One workload, sampled at once by an agent shipping 1 s windows and by a local record of the
    command (which starts it once it samples): a spinner (spin_0 in the workload, 4 s of CPU) and a
    sleeper (20 sleeps of 50 ms) as two processes.  The agent stops once the record is done and its
    windows that hold the workload are whole; the server stays up for the module's tests."""
    if _run:
        return _run
    need_clickhouse()
    c = ch_cluster.Cluster(os.path.join(tmpdir(), "ch"), n=1).start()
    s = c.servers[0]
    path = os.path.join(tmpdir(), "local.data")
    a = None
    try:
        a = subprocess.Popen([SPANPERF, "agent", "--clickhouse", s.url, "--window", "1", "-F", str(HZ), "-g",
                              "--off-cpu"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
        # A deadline against a hang only, not a measure: the agent's set-up and its first windows of
        # the whole host took over 60 s under make check's ASan beside busyhost at load 22.
        wait_windows(s, 2, timeout=180)
        script = "%s spin %d & %s sleeps %d %d & wait" % (WORKLOAD, SPIN_MS, WORKLOAD, SLEEPS, SLEEP_US)
        r = spanperf("record", "-q", "-g", "-F", str(HZ), "--off-cpu", "-o", path, "--", "sh", "-c", script,
                     timeout=180)
        assert r.returncode == 0, r.stderr
        truth = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
        spin = next(t for t in truth if t.get("func") == "spin_0")
        sleeper = next(t for t in truth if "sleeps" in t)
        # The agent's window that holds the workload's end is shipped at its end; one more to be sure.
        n = int(tsv(s, "SELECT count() FROM spanperf.windows"))
        wait_windows(s, n + 2, timeout=60)
        a.send_signal(signal.SIGINT)
        out, err = a.communicate(timeout=60)
        assert a.returncode == 0, err
    except BaseException:
        if a:
            reap(a)
        c.stop()
        raise
    # the server stays for the module's tests, and goes when the run ends, whichever tests it ran
    atexit.register(c.stop)
    _run.update(cluster=c, s=s, path=path, spin=spin, sleeper=sleeper)
    return _run


def both(args, local_args=None):
    """The same report of the local file and of the fleet (both of the workload's window)."""
    r = shipped()
    local = spanperf("report", "-i", r["path"], *(local_args if local_args is not None else args))
    fleet = spanperf("report", "--clickhouse", r["s"].url, "--since", "10m", *args)
    assert local.returncode == 0, local.stderr
    assert fleet.returncode == 0, fleet.stderr
    return local.stdout, fleet.stdout


@test
def test_fleet_dsos_and_symbols_equal_a_local_recordings():
    """--dsos and --symbols keep the samples whose leaf is in the file or function: the spinner's
    under --symbols spin_0 and --dsos workload, in equal numbers from the fleet and the file; and
    the table's percentages of the whole, as a file's (what the filter leaves out in its total)."""
    r = shipped()
    pid = str(r["spin"]["pid"])
    for flt in (["--symbols", "spin_0"], ["--dsos", "workload"]):
        local, fleet = both(["--pids", pid, "--folded"] + flt)
        lo, fl = total(local), total(fleet)
        assert lo > 0.5 * HZ * SPIN_MS / 1000, (flt, lo, local)
        assert abs(lo - fl) <= noise(lo), (flt, lo, fl, fleet)
        assert all(line.rpartition(" ")[0].endswith("spin_0") for line in fleet.splitlines() if line.strip()) \
            or flt[0] == "--dsos", fleet
    # The table: the filter's rows, of the whole's total (a file's, the fleet's): the header's
    # count is that of the unfiltered report, and spin_0's samples those of the file's.
    def header(out):
        m = re.search(r"^# Samples: (\d+)", out, re.M)
        assert m, out
        return int(m.group(1))
    def row(out):
        m = re.search(r"^\s*[0-9.]+%\s+(\d+)\s+\[\.\] spin_0$", out, re.M)
        assert m, out
        return int(m.group(1))
    local, fleet = both(["--pids", pid, "--symbols", "spin_0", "--sort", "sym"])
    whole_local, whole_fleet = both(["--sort", "sym"])
    assert header(local) == header(whole_local) and header(fleet) == header(whole_fleet), (local, fleet)
    assert abs(row(local) - row(fleet)) <= noise(row(local)), (local, fleet)
    # a symbol no sample has: nothing, said as such
    p = spanperf("report", "--clickhouse", r["s"].url, "--since", "10m", "--symbols", "no_such_function'\n")
    assert p.returncode == 1 and "holds no samples" in p.stderr, p.stderr


@test
def test_fleet_event_off_cpu_equals_a_local_recordings():
    """--event off-cpu: the sleeper's blocked nanoseconds from the fleet equal the file's (two
    recorders timing the same blocks), and lie between what it asked to sleep (each nanosleep
    blocks at least that) and what it measured around its calls."""
    r = shipped()
    tid = str(r["sleeper"]["tid"])
    slept, asked = sum(r["sleeper"]["slept_ns"]), SLEEPS * SLEEP_US * 1000
    # The thread by its process too: the agent records the whole host, where a tid is reused within
    # the module's minute (pid_max 32768 beside busy builds: a report's thread of another suite had
    # this tid and 26 ms of off-CPU in the fleet's sum, which the local file of the command never saw).
    sel = ["--pids", str(r["sleeper"]["pid"]), "--tids", tid]
    local, fleet = both(sel + ["--event", "off-cpu", "--folded"])
    lo, fl = total(local), total(fleet)
    for got in (lo, fl):
        assert asked <= got <= slept * 1.01, (got, asked, slept, local, fleet)
    assert abs(lo - fl) <= 0.02 * lo, (lo, fl)
    local, fleet = both(sel + ["--event", "off-cpu", "--sort", "comm"])
    assert "of event 'offcpu-time'" in fleet, fleet


@test
def test_fleet_names_a_thread_that_only_slept():
    """The sleeper's threads are named as a local record names them, never ':TID': the agent's
    off-CPU sums of short blocks are written at each window's end, while the session still knows
    the thread's name (it forgets a thread a window after its exit), not once at the agent's exit."""
    r = shipped()
    pid = str(r["sleeper"]["pid"])
    def named(out):
        rows = set()
        for line in out.splitlines():
            f = line.split()
            if len(f) == 4 and f[0].endswith("%"):
                rows.add((f[2], f[3]))
        return rows
    local, fleet = both(["--pids", pid, "--event", "off-cpu", "--sort", "comm,tid"])
    lo, fl = named(local), named(fleet)
    assert str(r["sleeper"]["tid"]) in {t for _, t in lo}, local
    assert lo == fl, (local, fleet)
    assert not any(c.startswith(":") for c, _ in fl), fleet


@test
def test_fleet_span_prefix_is_refused_saying_why():
    """--span-prefix needs each sample's time, which a window's rows (a thread's samples of a stack
    summed) do not keep: refused in one sentence that says so, status 1, whatever the server holds."""
    r = shipped()
    p = spanperf("report", "--clickhouse", r["s"].url, "--since", "10m", "--folded", "--span-prefix")
    assert p.returncode == 1 and not p.stdout, (p.returncode, p.stdout)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "--span-prefix" in lines[0] and "not their times" in lines[0], p.stderr


def spin_windows():
    """The fleet's windows wholly inside the spinner's run (those with its samples, less the first
    and the last), as (start_ns, end_ns)."""
    r = shipped()
    pid = r["spin"]["pid"]
    rows = tsv(r["s"], "SELECT w.start_ns, w.end_ns FROM spanperf.windows AS w ANY INNER JOIN (SELECT token, "
               "sum(count) AS n FROM spanperf.samples WHERE pid = %d AND off_cpu = 0 GROUP BY token) USING token "
               "ORDER BY w.start_ns" % pid)
    wins = [tuple(map(int, line.split())) for line in rows.splitlines()]
    return wins[1:-1]


@test
def test_fleet_time_is_a_window_on_the_stored_times():
    """--time START,END of Unix seconds keeps the windows that start in it: the spinner's samples
    of its middle windows equal a local record's of the same interval (its monotonic times, the
    offset between the clocks taken here); a percentage of the windows' span works too."""
    r = shipped()
    wins = spin_windows()
    assert wins, "the spinner ran in no whole window"
    start, end = wins[0][0], wins[-1][1] - 1
    off = time.clock_gettime_ns(time.CLOCK_REALTIME) - time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    def secs(ns):
        return "%d.%09d" % (ns // 10 ** 9, ns % 10 ** 9)
    pid = str(r["spin"]["pid"])
    local, fleet = both(["--pids", pid, "--folded", "--time", "%s,%s" % (secs(start), secs(end))],
                        ["--pids", pid, "--folded", "--time", "%s,%s" % (secs(start - off), secs(end - off))])
    lo, fl = total(local), total(fleet)
    whole = total(both(["--pids", pid, "--folded"])[1])
    assert 0 < fl < whole, (fl, whole)
    # A window's edge is where the agent cut its stream, which lags its wall-clock stamp by the
    # delivery of the records (well under 100 ms): each edge may move that many samples.
    assert abs(lo - fl) <= noise(lo) + 2 * 0.1 * HZ, (lo, fl, len(wins))
    # the whole span in percent: every window
    p = spanperf("report", "--clickhouse", r["s"].url, "--since", "10m", "--pids", pid, "--folded", "--time",
                 "0%-100%")
    assert p.returncode == 0 and total(p.stdout) == whole, (p.stderr, total(p.stdout), whole)
    # a range before anything: nothing, said
    p = spanperf("report", "--clickhouse", r["s"].url, "--since", "10m", "--time", "1,2")
    assert p.returncode == 1 and "holds no samples" in p.stderr, p.stderr


@test
def test_fleet_speedscope_and_html_equal_a_local_recordings():
    """--speedscope and --html of the fleet: the spinner's thread with as many samples (the page's
    count; speedscope's time in spin_0 / the sampling interval) as a local record's, within noise."""
    r = shipped()
    pid, tid = str(r["spin"]["pid"]), r["spin"]["tid"]
    d = tmpdir()
    counts = {}
    for side, src in (("local", ["-i", r["path"]]), ("fleet", ["--clickhouse", r["s"].url, "--since", "10m"])):
        page, ss = os.path.join(d, side + ".html"), os.path.join(d, side + ".json")
        p = spanperf("report", *src, "--pids", pid, "--html", page)
        assert p.returncode == 0, p.stderr
        data = json.loads(re.search(r'<script id="spanperf-data"[^>]*>(.*?)</script>', open(page).read(),
                                    re.S).group(1))
        th = [t for t in data["th"] if t["tid"] == tid]
        assert th, (side, [t["tid"] for t in data["th"]])
        p = spanperf("report", *src, "--pids", pid, "--speedscope", ss)
        assert p.returncode == 0, p.stderr
        doc = json.load(open(ss))
        names = [f["name"] for f in doc["shared"]["frames"]]
        spun = 0
        for prof in doc["profiles"]:
            opened = {}
            for ev in prof["events"]:
                if names[ev["frame"]] != "spin_0":
                    continue
                if ev["type"] == "O":
                    opened[ev["frame"]] = ev["at"]
                elif ev["frame"] in opened:
                    spun += ev["at"] - opened.pop(ev["frame"])
        counts[side] = (th[0]["ns"], spun)
    lo, fl = counts["local"], counts["fleet"]
    assert lo[0] > 0.5 * HZ * SPIN_MS / 1000, counts
    assert abs(lo[0] - fl[0]) <= noise(lo[0]), counts
    # speedscope's unit: ns; each sample stands for 1/HZ s of spin_0 at most
    dt = 1e9 / HZ
    assert abs(lo[1] - fl[1]) <= (noise(lo[0]) + 2) * dt, counts
