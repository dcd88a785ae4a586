# SPDX-License-Identifier: GPL-2.0
"""spanperf top, for real: its tables come from the recorder's BPF sampling through report's
symbolizer; a spinning workload leads them, --batch -n N prints N of them and exits."""
import os
import shutil
import re
import subprocess
import time

from harness import SPANPERF, WORKLOAD, Skip, need_bpf, spanperf, test, tmpdir

ROW = re.compile(r"^\s+([\d.]+)%\s+(\d+)\s+(\S+)\s+(?:(\S+)\s+)?\[(.)\]\s+(\S+)")


def tables(text):
    """Each refresh's rows: (pct, samples, first key, second key or None, sym), in order."""
    out = []
    for line in text.splitlines():
        if line.startswith("   spanperf top:"):
            out.append([])
            continue
        m = ROW.match(line)
        if m and out:
            out[-1].append((float(m.group(1)), int(m.group(2)), m.group(3), m.group(4), m.group(6)))
    return out


def cpu_ns(pid):
    """The process's own time on CPU: its threads' schedstat (spin runs in a thread of its own)."""
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
            total += int(f.read().split()[0])
    return total


@test
def test_top_batch_spinner_leads():
    need_bpf()
    wl = subprocess.Popen([WORKLOAD, "spin", "60000"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        before = cpu_ns(wl.pid)
        p = spanperf("top", "--batch", "-n", "3", "-d", "1", "-E", "5", "--sort", "pid,sym", timeout=120)
        spun = cpu_ns(wl.pid) - before
    finally:
        wl.kill()
        wl.wait()
    assert p.returncode == 0, "top exited %d: %s" % (p.returncode, p.stderr)
    assert p.stderr.strip() == "", p.stderr
    t = tables(p.stdout)
    assert len(t) == 3, "-n 3 printed %d tables:\n%s" % (len(t), p.stdout)
    assert all(0 < len(rows) <= 5 for rows in t), [len(r) for r in t]
    # The whole host, shared: how much the spinner leads depends on what else runs.  Its own CPU
    # clock is the truth: top's three 1 s windows lie inside the span its clock was read over (top's
    # start-up too), so they hold at most its samples at 999 Hz, and most of them.
    mine = sum(r[1] for rows_ in t for r in rows_ if r[2] == str(wl.pid) and r[4] == "spin_0")
    due = spun * 999 / 1e9
    assert 0.5 * due <= mine <= 1.1 * due + 20, "spinner %d samples in the tables, %.0f due to its %.0f ms on CPU:\n%s" % (
        mine, due, spun / 1e6, p.stdout)


@test
def test_top_batch_two_tables_with_pid_filter():
    need_bpf()
    wl = subprocess.Popen([WORKLOAD, "spin", "60000"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        p = spanperf("top", "--batch", "-n", "2", "-d", "1", "-p", str(wl.pid), timeout=120)
    finally:
        wl.kill()
        wl.wait()
    assert p.returncode == 0, p.stderr
    t = tables(p.stdout)
    assert len(t) == 2, p.stdout
    for rows in t:
        assert rows and rows[0][4] == "spin_0" and rows[0][2] == "workload", rows[:3]
        assert all(r[2] == "workload" for r in rows), rows


@test
def test_top_bad_input():
    for args, what in ((["--stdio", "--batch"], "give one of them"), (["-E", "0"], "-E '0'"),
                       (["--sort", "nope"], "--sort 'nope'"), (["-d", "x"], "-d 'x'"),
                       (["ls"], "top runs no command")):
        p = spanperf("top", *args)
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 1 and len(lines) == 1 and what in lines[0], "%s: %d %s" % (
            args, p.returncode, p.stderr)


def tmux(*args, check=True):
    p = subprocess.run(["tmux", "-L", "spanperf-it"] + list(args), capture_output=True, text=True, errors="replace", timeout=30)
    assert not check or p.returncode == 0, "tmux %s: %s" % (args, p.stderr)
    return p.stdout


def pane(session):
    return tmux("capture-pane", "-t", session, "-p")


def wait_pane(session, pred, timeout):
    deadline, text = time.time() + timeout, ""
    while time.time() < deadline:
        text = pane(session)
        if pred(text):
            return text
        time.sleep(0.2)
    raise AssertionError("the pane never showed what was awaited:\n" + text)


@test
def test_top_full_screen_under_tmux():
    need_bpf()
    if not shutil.which("tmux"):
        raise Skip("tmux is not installed (tools/deps.sh test installs it)")
    session = "top%d" % os.getpid()
    wl = subprocess.Popen([WORKLOAD, "spin", "60000"], stdout=subprocess.DEVNULL)
    tmux("new-session", "-d", "-s", session, "-x", "160", "-y", "40", "bash --norc --noprofile")
    try:
        # The spinner's own samples only (-p): on a busy host other processes' loops outrun it.
        tmux("send-keys", "-t", session, "%s top -p %d -d 1 -E 10 --sort pid,sym; echo TOP-EXIT=$?; stty -a" % (
            SPANPERF, wl.pid), "Enter")
        # Within 3 refreshes the spinner leads one of them.
        led = False
        for n in (1, 2, 3):
            text = wait_pane(session, lambda t: re.search(r"refresh (\d+)", t) and
                             int(re.search(r"refresh (\d+)", t).group(1)) >= n, 30)
            rows = [ROW.match(l) for l in text.splitlines()]
            rows = [m for m in rows if m]
            led |= bool(rows) and rows[0].group(3) == str(wl.pid) and rows[0].group(6) == "spin_0"
            if led:
                break
        assert led, "the spinner (pid %d) led none of 3 refreshes:\n%s" % (wl.pid, text)
        # '/' filters the rows.
        tmux("send-keys", "-t", session, "/")
        wait_pane(session, lambda t: "filter rows by:" in t, 10)
        tmux("send-keys", "-t", session, "spin_0", "Enter")
        text = wait_pane(session, lambda t: "filter [spin_0]" in t, 10)
        rows = [m for m in map(ROW.match, text.splitlines()) if m]
        assert rows and all(m.group(6) == "spin_0" for m in rows), text
        # q quits and gives the terminal back: the shell's line discipline as it was, the table gone.
        tmux("send-keys", "-t", session, "q")
        # Until stty's local-modes line ([-]isig [-]icanon ... [-]echo) is out: its first line alone came out
        # before one capture on a busy host.
        text = wait_pane(session, lambda t: "TOP-EXIT=" in t and re.search(r"(^|\s)-?isig(\s|$)", t, re.M), 30)
        assert "TOP-EXIT=0" in text, text
        assert re.search(r"(^|\s)icanon(\s|$)", text, re.M) and re.search(r"(^|\s)echo(\s|$)", text, re.M), text
        assert "# Overhead" not in text, "the table is still on the screen:\n" + text
    finally:
        tmux("kill-session", "-t", session, check=False)
        wl.kill()
        wl.wait()


@test
def test_top_spans_uprobe_p50():
    need_bpf()
    ms = 5
    wl = subprocess.Popen([WORKLOAD, "calls", "100000", str(ms)], stdout=subprocess.DEVNULL)
    try:
        p = spanperf("top", "--batch", "-n", "2", "-d", "2", "--spans", "--span",
                     "uprobe:%s:hidden_work" % WORKLOAD, timeout=120)
    finally:
        wl.kill()
        wl.wait()
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("   spanperf top: spans of the last 2.0 s") == 2, p.stdout
    head = None
    rows = []
    for line in p.stdout.splitlines():
        if line.startswith("# name"):
            head = line[1:].split()
        elif head and line.startswith("  hidden_work "):
            rows.append(dict(zip(head, line.split())))
    assert len(rows) == 2, p.stdout
    for r in rows:
        assert r["source"] == "uprobe" and int(r["count"]) > 0, r
        # Each call is ms of the thread's own CPU: its wall time is at least that, and on CPU about that.
        p50 = float(r["p50"])
        assert ms * 0.9 <= p50 <= ms * 20, "p50 %.3f ms for calls of %d ms of CPU" % (p50, ms)
        assert abs(float(r["rate/s"]) - int(r["count"]) / 2.0) < 0.1, r


@test
def test_top_spans_full_screen_under_tmux():
    """The full screen draws the span table's rows from the view: the column heads, a row per
    name, and '/' keeps the names whose row holds the text."""
    need_bpf()
    if not shutil.which("tmux"):
        raise Skip("tmux is not installed (tools/deps.sh test installs it)")
    session = "topspans%d" % os.getpid()
    wl = subprocess.Popen([WORKLOAD, "calls", "100000", "5"], stdout=subprocess.DEVNULL)
    tmux("new-session", "-d", "-s", session, "-x", "200", "-y", "40", "bash --norc --noprofile")
    try:
        tmux("send-keys", "-t", session, "%s top -d 1 --spans --span uprobe:%s:hidden_work; echo TOP-EXIT=$?"
             % (SPANPERF, WORKLOAD), "Enter")
        text = wait_pane(session, lambda t: re.search(r"^  hidden_work +uprobe +[1-9]", t, re.M), 30)
        assert re.search(r"^# name +source +count +rate/s +p50 ms", text, re.M), text
        tmux("send-keys", "-t", session, "/")
        wait_pane(session, lambda t: "filter rows by:" in t, 10)
        tmux("send-keys", "-t", session, "no-such-span", "Enter")
        text = wait_pane(session, lambda t: "filter [no-such-span]" in t, 10)
        assert "hidden_work" not in text and re.search(r"^# name", text, re.M), text
        tmux("send-keys", "-t", session, "/")
        wait_pane(session, lambda t: "filter rows by:" in t, 10)
        tmux("send-keys", "-t", session, "hidden", "Enter")
        text = wait_pane(session, lambda t: "filter [hidden]" in t and re.search(r"^  hidden_work ", t, re.M), 10)
        tmux("send-keys", "-t", session, "q")
        # The status echo's line, not the command line that types it ("echo TOP-EXIT=$?"), which
        # shows once top leaves the screen, before the echo runs (an ASan top at load 10 was read so).
        text = wait_pane(session, lambda t: re.search(r"^TOP-EXIT=\d", t, re.M), 30)
        assert re.search(r"^TOP-EXIT=0\s*$", text, re.M), text
    finally:
        tmux("kill-session", "-t", session, check=False)
        wl.kill()
        wl.wait()


@test
def test_top_g_expands_callers():
    need_bpf()
    wl = subprocess.Popen([WORKLOAD, "spin", "60000"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        p = spanperf("top", "--batch", "-n", "1", "-d", "2", "-g", "-E", "1", "-p", str(wl.pid), timeout=120)
    finally:
        wl.kill()
        wl.wait()
    assert p.returncode == 0, p.stderr
    t = tables(p.stdout)
    assert len(t) == 1 and len(t[0]) == 1 and t[0][0][4] == "spin_0", p.stdout
    # Under the row, its chain: spin_0 called from caller_0 (frame pointers, as record -g).
    assert re.search(r"spin_0\s*\n\s+caller_0", p.stdout), p.stdout


@test
def test_top_filters_as_report():
    """top --comms, --symbols and --percent-limit, as report's: only the rows of
    that name, of that function, and of that share; the others' samples still
    in each table's 100%."""
    need_bpf()
    wl = os.path.join(tmpdir(), "topfilt")
    shutil.copy(WORKLOAD, wl)
    spinner = subprocess.Popen([wl, "spin", "60000,60000"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        by_comm = spanperf("top", "--batch", "-n", "1", "-d", "1", "--comms", "topfilt", timeout=120)
        by_sym = spanperf("top", "--batch", "-n", "1", "-d", "1", "--symbols", "spin_1", timeout=120)
        by_pct = spanperf("top", "--batch", "-n", "1", "-d", "1", "--percent-limit", "10", timeout=120)
    finally:
        spinner.kill()
        spinner.wait()
    for p in (by_comm, by_sym, by_pct):
        assert p.returncode == 0, p.stderr
    rows = tables(by_comm.stdout)[0]
    assert rows and all(r[2] == "topfilt" for r in rows), rows
    rows = tables(by_sym.stdout)[0]
    assert rows and all(r[4] == "spin_1" for r in rows) and rows[0][0] < 100, rows
    rows = tables(by_pct.stdout)[0]
    assert all(r[0] >= 10 for r in rows), rows
