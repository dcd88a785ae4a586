# SPDX-License-Identifier: GPL-2.0
"""--call-graph ehframe: user chains unwound in BPF from the files' .eh_frame,
written as ordinary call chains.  Ground truth is a program without frame
pointers (workload_dwarf): its chains through libc's qsort and bsearch and
through a library of its own reach main, in our report and in perf script
on the same file, and equal perf's --call-graph dwarf chains of the same
process frame by frame; its blocked thread's off-CPU time is charged to the
function that blocked; JIT-like code reached by frame pointer is crossed."""
import collections
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

from harness import (BUILD, ROOT, SPANPERF, Skip, Started, json_lines, need_bpf, need_perf, perf_clean, reap, run,
                     spanperf, test, tmpdir, without_py_names)
from test_dwarf import DWARF_WORKLOAD, folded, perf_chains

_cache = {}


def recording():
    """One ehframe recording of the workload, started by record itself, shared."""
    if "path" not in _cache:
        need_bpf()
        path = os.path.join(tmpdir(), "ehframe.data")
        p = spanperf("record", "--call-graph", "ehframe", "-F", "999", "-v", "-o", path, "--", DWARF_WORKLOAD,
                     "1500", check=True)
        _cache["path"], _cache["stderr"] = path, p.stderr
    return _cache["path"], _cache["stderr"]


def perf_placed(path, comm, lost_ok=False):
    """perf script's chains of comm: (how many, how many reach main, those with a user frame
    perf places in no file: a return address no mapping holds, which a walk made up).  Kernel
    frames are the kernel's unwinder's, not the walk's: a BPF program another process attached
    to the kernel (a recorder's at sched_process_exit) is such a frame in no file."""
    out = perf_clean(["script", "-F", "comm,tid,event,ip,sym,dso"], path, lost_ok=lost_ok)
    n = reach = 0
    nowhere = []
    for block in out.split("\n\n"):
        lines = [l for l in block.split("\n") if l.strip()]
        if not lines or lines[0].split()[0] != comm:
            continue
        n += 1
        reach += any(" main " in l for l in lines[1:])
        # User frames only: a kernel address perf places nowhere is a JIT'ed BPF program's (another
        # tool's on the tracepoint the sample interrupted), no frame the walk made up.
        if any(l.rstrip().endswith("([unknown])") and not l.split()[0].startswith("ffffffff") for l in lines[1:]):
            nowhere.append(block)
    return n, reach, nowhere


def hot_reach_main(stacks, leaves=("cmp_ints", "cb_work")):
    """(samples whose leaf is one of ours, of them those whose chain reaches main)."""
    n = sum(c for st, c in stacks.items() if st and st[0] in leaves)
    m = sum(c for st, c in stacks.items() if st and st[0] in leaves and "main" in st)
    return n, m


def no_table_steps(err):
    """record -v's count of walks that met a file whose table was not built yet: a process that
    runs before the recorder has read its files (an exec the loop has not reached, which a busy
    host delays) is walked by frame pointers there, which this program has not, and its chain
    stops short.  Each such chain took one such step at least: a bound on them."""
    m = re.search(r"^  frame-pointer steps: file without a table +(\d+)$", err, re.M)
    return int(m.group(1)) if m else 0


def reach_main_once_tabled(n, m, err, least):
    """Every hot chain reaches main (98 in 100) but those walked before their file had a table,
    and at least `least` hot samples came after the tables (so they were built)."""
    early = min(no_table_steps(err), n - m)
    return n - early >= least and m * 100 >= 98 * (n - early)


def walks_unread(err):
    """record -v's count of frame-pointer steps taken because the recorder had not read yet what
    the walk met: a file whose table it had not built, a process whose mappings it did not know
    (and whose kernel vmas were locked).  Until it reads a process that started or exec'd (a
    busy host delays its loop; the sanitizers' build is several times slower), such a process's
    chains go by frame pointer, which workload_dwarf (and cc1, sort) has not, and stop short,
    each after one such step at least.  Host-wide: a bound on one program's such chains."""
    return sum(int(v) for v in re.findall(r"^  frame-pointer steps: (?:file without a table|process mappings not "
                                          r"known yet) +(\d+)$", err, re.M))


def thread_chains(path, comm):
    """tid -> comm's chains in perf script of path (leaf first, perf's names), in time order."""
    out = perf_clean(["script", "--no-inline", "-F", "comm,tid,time,ip,sym"], path, lost_ok=True)
    threads = collections.defaultdict(list)
    for block in out.split("\n\n"):
        lines = [l for l in block.split("\n") if l.strip()]
        m = re.match(r"(.*?)\s+(\d+)\s+([\d.]+):", lines[0]) if lines else None
        if m and m.group(1) == comm:
            frames = tuple(re.sub(r"\+0x[0-9a-f]+$", "", (l.strip().split(None, 1) + ["[unknown]"])[1])
                           for l in lines[1:])
            threads[int(m.group(2))].append((float(m.group(3)), frames))
    return {tid: [st for _, st in sorted(s)] for tid, s in threads.items()}


def once_read(threads, whole, floor, keep=lambda st: True):
    """Each thread's chains (those keep holds for) split where the recorder had read its process:
    before that its walks found the kernel's vmas, whole where the mm was free and cut where it was
    locked (a process starting maps its libraries), or no table yet, so the split is where from
    then on the share of whole chains holds the floor, at the earliest.  (cut chains before it,
    chains from there on, of them whole); the second and third meet the floor by construction: a
    caller holds the first to what the recorder counted and the second to a least."""
    early = after = good = 0
    for seq in threads.values():
        marks = [whole(st) for st in seq if keep(st)]
        n, w, k = len(marks), 0, len(marks)
        for i in range(n - 1, -1, -1):
            w += marks[i]
            if w >= floor * (n - i):
                k, kw = i, w
        early += k - sum(marks[:k])
        after += n - k
        good += kw if k < n else 0
    return early, after, good


def hot_whole(st, leaves=("cmp_ints", "cb_work")):
    return bool(st) and st[0] in leaves and "main" in st


def thread_cpu_ns(pid):
    """A process's own time on CPU, summed over its threads' schedstat."""
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
            total += int(f.read().split()[0])
    return total


def up_to_main(st):
    return st[:st.index("main") + 1] if "main" in st else st


@test
def test_ehframe_chains_reach_main():
    """Through qsort, bsearch and a library callback, in our report and in perf's."""
    path, err = recording()
    stacks = folded(path)
    n, m = hot_reach_main(stacks)
    assert reach_main_once_tabled(n, m, err, 300), "report: %d of %d hot samples reach main, %d walks before a " \
        "table" % (m, n, no_table_steps(err))
    for via in ("msort_with_tmp.part.0", "dwarfcb_each"):
        assert any(via in st and "main" in st for st in stacks), via
    need_perf()
    theirs = perf_chains(path)
    n2, m2 = hot_reach_main(theirs)
    assert n2 == n and reach_main_once_tabled(n2, m2, err, 300), "perf script: %d of %d hot samples reach main" % (
        m2, n2)
    # Frame pointers on the same program: their chains stop in libc, which is what this is for.
    fp = os.path.join(tmpdir(), "fp.data")
    spanperf("record", "--call-graph", "fp", "-o", fp, "--", DWARF_WORKLOAD, "300", check=True)
    n3, m3 = hot_reach_main(folded(fp), ("cmp_ints",))
    assert m3 * 2 < n3, "--call-graph fp reached main in %d of %d comparator samples" % (m3, n3)
    # -g is ehframe where the kernel has what it needs, as it has here.
    g = os.path.join(tmpdir(), "g.data")
    pg = spanperf("record", "-g", "-v", "-o", g, "--", DWARF_WORKLOAD, "300", check=True)
    n4, m4 = hot_reach_main(folded(g))
    assert reach_main_once_tabled(n4, m4, pg.stderr, 50), "-g: %d of %d hot samples reach main, %d walks before " \
        "a table" % (m4, n4, no_table_steps(pg.stderr))


@test
def test_ehframe_file_is_perfs():
    """An ordinary CALLCHAIN that perf 6.1 reads with nothing on stderr, no stack copies."""
    path, _ = recording()
    need_perf()
    out = perf_clean(["evlist", "-v"], path)
    assert "CALLCHAIN" in out and "STACK_USER" not in out and "REGS_USER" not in out, out
    p = run(["perf", "script", "-i", path, "-F", "comm,tid,event,ip,sym"])
    assert p.returncode == 0 and p.stderr.strip() == "", p.stderr[-1500:]
    ours = sum(folded(path, comm="workload_dwarf").values())
    theirs = sum(1 for b in without_py_names(p.stdout).split("\n\n") if b.strip().startswith("workload_dwarf"))
    assert ours == theirs, (ours, theirs)


@test
def test_ehframe_verbose_counts_every_chain():
    """record -v: every user chain ends for one counted reason; most here are complete."""
    _, err = recording()
    total = int(re.search(r"^  user chains +(\d+)$", err, re.M).group(1))
    stops = 0
    for name, v in re.findall(r"^  ((?:complete|ended|stopped)[^\n]*?) +(\d+)$", err, re.M):
        stops += int(v)
    complete = int(re.search(r"^  complete \(reached the outermost frame\) +(\d+)$", err, re.M).group(1))
    assert total > 0 and stops == total, err[-3000:]
    assert complete * 2 > total, err[-3000:]
    assert re.search(r"ehframe tables: \d+ files, \d+ rows", err), err[-3000:]


@test
def test_ehframe_stop_reasons_in_the_file():
    """The counts record -v gave are in the file (spanperf's own header feature):
    report -v and report --header-only show them the same; perf skips the
    feature with nothing on stderr."""
    path, err = recording()
    counts = lambda text, lead: {k: int(v) for k, v in re.findall(r"^" + lead + r"((?:user chains|complete|ended|stopped|"
                                                               r"frame)[^\n]*?) +(\d+)$", text, re.M)}
    recorded = counts(err, "  ")
    assert recorded.get("user chains", 0) > 0, err[-3000:]
    head = spanperf("report", "--header-only", "-i", path, check=True).stdout
    assert "# spanperf unwind (--call-graph ehframe)" in head, head
    assert counts(head, "#   ") == recorded, (head, err[-3000:])
    p = spanperf("report", "-v", "-i", path, check=True)
    assert counts(p.stderr, "#   ") == recorded, p.stderr[-3000:]
    need_perf()
    perf_clean(["report", "--header-only"], path)


@test
def test_ehframe_equals_dwarf():
    """The same process recorded at once by us (ehframe) and by perf --call-graph
    dwarf: our chains are perf's, frame by frame (inline frames aside)."""
    need_bpf()
    need_perf()
    d = tmpdir()
    wl = subprocess.Popen([DWARF_WORKLOAD, "600000"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        ours, theirs = os.path.join(d, "eh.data"), os.path.join(d, "dwarf.data")
        perf = subprocess.Popen(["perf", "record", "-q", "--buildid-mmap", "--call-graph", "dwarf", "-F", "999", "-p",
                                 str(wl.pid), "-o", theirs], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")
        rec = subprocess.Popen([SPANPERF, "record", "--call-graph", "ehframe", "-F", "999", "-v", "-p", str(wl.pid),
                                "-o", ours], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")
        # Until the workload has had 1.5 s on CPU by its own clock from when the recorder's events
        # are on (its -v line), not for 2 s of wall time from its start: a busy host gave it 254 ms
        # in such a window, 82 chains, and a recorder slow to start saw less of it still.
        started = Started(rec)
        before, deadline = thread_cpu_ns(wl.pid), time.time() + 300
        while thread_cpu_ns(wl.pid) - before < 1.5e9 and time.time() < deadline and rec.poll() is None:
            time.sleep(0.1)
        spun = thread_cpu_ns(wl.pid) - before
        for q in (rec, perf):
            q.send_signal(signal.SIGINT)
        started.wait(timeout=120)
        perr = perf.communicate(timeout=120)[1]
        assert rec.returncode == 0, started.text()
        # perf record ends by raising the SIGINT it caught, once its file is written.
        if perf.returncode not in (0, -signal.SIGINT) or not os.path.exists(theirs):
            raise Skip("perf record --call-graph dwarf failed here: %s" % perr[-300:])
    finally:
        reap(wl)
    # Chains, not counts: a busy host may overflow either recorder's rings (perf says so).
    mine = collections.Counter()
    for st, n in perf_chains(ours, lost_ok=True).items():
        mine[up_to_main(st)] += n
    ref = collections.Counter()
    for st, n in perf_chains(theirs, lost_ok=True).items():
        ref[up_to_main(st)] += n
    total = sum(mine.values())
    found = sum(n for st, n in mine.items() if st in ref)
    # Chains in proportion to the CPU the workload had while the events were on (its own clock),
    # and enough of them for a share to mean something.
    due = spun * 999 / 1e9
    assert total >= 100 and total >= 0.33 * due, "%d chains for %.0f ms on CPU" % (total, spun / 1e6)
    assert found * 100 >= 95 * total, "%d of %d chains are among perf's; ours only: %s" % (
        found, total, [(" <- ".join(st), n) for st, n in (mine - ref).most_common(3)])


@test
def test_ehframe_through_a_span_uretprobe():
    """Inside a uprobe span, its function returns into the kernel's uretprobe trampoline: the
    walk takes the real return address from the task's return instances, as the kernel's own
    callchain does for perf, so chains cross the span's function to main and no frame is the
    trampoline's ([uprobes], at the top of user space)."""
    need_bpf()
    path = os.path.join(tmpdir(), "span.data")
    spanperf("record", "--call-graph", "ehframe", "-F", "999", "--span", "uprobe:%s:search_round" % DWARF_WORKLOAD,
             "-o", path, "--", DWARF_WORKLOAD, "1000", check=True)
    stacks = folded(path)
    inside = {st: c for st, c in stacks.items() if "search_round" in st}
    n, m = hot_reach_main(inside, ("cmp_ints",))
    assert n >= 100 and m * 100 >= 98 * n, "%d of %d samples in search_round's span reach main: %s" % (
        m, n, collections.Counter(inside).most_common(3))
    tramp = [st for st in stacks if any(f.startswith("0x00007fffffff") or f == "[uprobes]" for f in st)]
    assert not tramp, tramp[:3]
    # perf reads the file (its chains are the file's; other tests compare them frame by frame).
    perf_clean(["script", "-F", "comm,tid,ip,sym"], path)


def _ptrace():
    """libc's ptrace(request, pid, addr, data), raising OSError on -1 with errno set."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.restype = ctypes.c_long
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]

    def call(req, pid, addr=0, data=0):
        ctypes.set_errno(0)
        r = libc.ptrace(req, pid, addr, data)
        if r == -1 and ctypes.get_errno():
            raise OSError(ctypes.get_errno(), "ptrace(%d): %s" % (req, os.strerror(ctypes.get_errno())))
        return r
    return call


def _stopped(pid, deadline):
    """Waits (up to deadline, time.monotonic()) for the traced pid's next stop: its signal."""
    while time.monotonic() < deadline:
        got, status = os.waitpid(pid, os.WNOHANG)
        if got:
            assert os.WIFSTOPPED(status), "the tracee ended: status %#x" % status
            return os.WSTOPSIG(status)
        time.sleep(0.005)
    raise AssertionError("the tracee did not stop in time")


@test
def test_ehframe_signal_inside_the_uretprobe_trampoline():
    """A thread whose span function has returned into the uretprobe trampoline stands at the
    function's real return address, whatever byte of the trampoline it is at (6.11+'s pushes
    three registers and makes the uretprobe syscall, whose return pops two and returns): a chain
    through it starts again in the caller and reaches main.  Held to it deterministically, not by
    a sample's luck: a tracer stops the workload at each byte of the trampoline in turn (a debug
    register) and gives it a signal there, whose handler naps; its off-CPU chain crosses the
    signal frame to that byte."""
    need_bpf()
    need_perf()
    PTRACE_PEEKUSER, PTRACE_POKEUSER, PTRACE_CONT, PTRACE_SINGLESTEP, PTRACE_ATTACH, PTRACE_DETACH = 3, 6, 7, 9, 16, 17
    DEBUGREG, RIP = 848, 16 * 8  # offsetof(struct user, u_debugreg), of user_regs_struct's rip
    ptrace = _ptrace()
    path = os.path.join(tmpdir(), "tramp.data")
    wl = subprocess.Popen([DWARF_WORKLOAD, "signap", "600000"], stdout=subprocess.DEVNULL)
    rec = None
    traced = False
    stops = []

    def rip():
        return ptrace(PTRACE_PEEKUSER, wl.pid, RIP) & (2 ** 64 - 1)

    def run_to(addr):
        """From a stop: on until the thread is about to run addr (DR0 there, DR7's L0 on)."""
        try:
            ptrace(PTRACE_POKEUSER, wl.pid, DEBUGREG, addr)
            ptrace(PTRACE_POKEUSER, wl.pid, DEBUGREG + 7 * 8, 1)
        except OSError as e:
            raise Skip("no hardware breakpoint for a tracer here (%s)" % e)
        ptrace(PTRACE_CONT, wl.pid)
        assert _stopped(wl.pid, deadline) == signal.SIGTRAP
        ptrace(PTRACE_POKEUSER, wl.pid, DEBUGREG + 7 * 8, 0)
        assert rip() == addr, (hex(rip()), hex(addr))

    try:
        time.sleep(0.2)  # the tables of a running process are built before the recording starts
        rec = subprocess.Popen([SPANPERF, "record", "--call-graph", "ehframe", "--off-cpu", "--off-cpu-thresh", "0",
                                "-F", "99", "-v", "--span", "uprobe:%s:search_round" % DWARF_WORKLOAD,
                                "-p", str(wl.pid), "-o", path],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")
        started = Started(rec)
        # The trampoline's page is mapped at the first return under the uretprobe.
        deadline = time.monotonic() + 120
        tramp = None
        while tramp is None and time.monotonic() < deadline:
            with open("/proc/%d/maps" % wl.pid) as f:
                tramp = next((int(l.split("-")[0], 16) for l in f if l.rstrip().endswith("[uprobes]")), None)
            time.sleep(0.05)
        assert tramp, "no [uprobes] mapping in the workload: %s" % started.text()
        ptrace(PTRACE_ATTACH, wl.pid)
        traced = True
        assert _stopped(wl.pid, deadline) == signal.SIGSTOP
        # Its bytes, one step at a time from the first.
        run_to(tramp)
        while 0 <= rip() - tramp < 32:
            stops.append(rip() - tramp)
            ptrace(PTRACE_SINGLESTEP, wl.pid)
            assert _stopped(wl.pid, deadline) == signal.SIGTRAP
        # At each: the signal, then a stop (SIGSTOP, taken after the handler's nap or inside it).
        for k in stops:
            run_to(tramp + k)
            ptrace(PTRACE_CONT, wl.pid, 0, signal.SIGUSR2)
            os.kill(wl.pid, signal.SIGSTOP)
            assert _stopped(wl.pid, deadline) == signal.SIGSTOP
        run_to(tramp)  # the last nap over
        ptrace(PTRACE_DETACH, wl.pid)
        traced = False
        time.sleep(0.2)
        rec.send_signal(signal.SIGINT)
        assert started.wait(timeout=120) == 0, started.text()
    finally:
        if traced:
            wl.kill()
        reap(wl)
        if rec:
            reap(rec)
    assert stops and stops[0] == 0, stops
    # The naps' off-CPU chains: sig_nap, the signal frame, then worker (where search_round returns
    # to) and main, with no frame of the trampoline's.
    out = perf_clean(["script", "--no-inline", "-F", "tid,event,ip,sym"], path)
    # A sample's frames are the lines after it that begin with a tab (spanperf-sched's samples, with
    # no chain, sit between the blocks without a blank line).
    blocks = []
    for l in out.splitlines():
        if l.strip() and not l.startswith("\t"):
            blocks.append([l.split()])
        elif blocks and l.strip():
            blocks[-1].append(l.split())
    naps = []
    for lines in blocks:
        if lines[0][1:2] != ["offcpu-time:"] or int(lines[0][0]) != wl.pid:
            continue
        user = [l[1] if len(l) > 1 else l[0] for l in lines[1:] if not l[0].startswith("ffffffff")]
        if "sig_nap" in user:
            naps.append(user)
    assert len(naps) >= len(stops), (stops, naps[:4])
    bad = [c for c in naps if c[c.index("sig_nap"):][2:4] != ["worker", "main"]]
    assert not bad, (stops, bad[:4])


@test
def test_ehframe_offcpu_names_the_blocking_function():
    """A thread blocked in read() inside inbox_wait() and in nanosleep() inside nap(),
    code without frame pointers: those functions are on its off-CPU time, which
    matches what it measured of itself."""
    need_bpf()
    need_perf()
    path = os.path.join(tmpdir(), "off.data")
    # 80 rounds of 25 ms read and 25 ms asleep, 4 s at least.  The workload is stopped (SIGSTOP)
    # until the recorder's events are on (its -v line), then recorded for 1.5 s of the 4: inside it
    # however long the recorder takes to start (a busy host's took longer than the 4 s, and the
    # file held none of the thread's time).  The stop is before the events: its off-CPU time is not
    # in the file, and the thread's own clock, which counts it, only grows.
    wl = subprocess.Popen([DWARF_WORKLOAD, "block", "80", "25"], stdout=subprocess.PIPE, text=True, errors="replace")
    try:
        time.sleep(0.2)  # the tables of a running process are built before the recording starts
        wl.send_signal(signal.SIGSTOP)
        rec = subprocess.Popen([SPANPERF, "record", "--call-graph", "ehframe", "--off-cpu", "--off-cpu-thresh", "0",
                                "-F", "99", "-v", "-p", str(wl.pid), "-o", path],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")
        started = Started(rec)
        wl.send_signal(signal.SIGCONT)
        time.sleep(1.5)
        rec.send_signal(signal.SIGINT)
        assert started.wait(timeout=120) == 0, started.text()
        truth = json_lines(wl.communicate(timeout=60)[0])[0]
    finally:
        reap(wl)
    p = run(["perf", "script", "--no-inline", "-i", path, "-F", "tid,event,period,ip,sym"])
    assert p.returncode == 0 and p.stderr.strip() == "", p.stderr[-1500:]
    total, named = collections.Counter(), collections.Counter()
    # A sample's frames are the lines after it that begin with a tab; --off-cpu's spanperf-sched
    # samples (no chain) sit between the blocks without a blank line.
    blocks, cur = [], None
    for l in p.stdout.splitlines():
        if l.strip() and not l.startswith("\t"):
            cur = [l]
            blocks.append(cur)
        elif cur is not None and l.strip():
            cur.append(l)
    for lines in blocks:
        if "offcpu-time" not in lines[0] or int(lines[0].split()[0]) != truth["tid"]:
            continue
        period = int(lines[0].split()[1])
        syms = [l.split()[1] for l in lines[1:] if len(l.split()) > 1]
        kind = "read" if any("pipe_read" in s or "vfs_read" in s for s in syms) else \
            "sleep" if any("nanosleep" in s for s in syms) else "other"
        total[kind] += period
        if (kind, {"read": "inbox_wait", "sleep": "nap"}.get(kind)) in ((kind, s) for s in syms):
            named[kind] += period
    for kind in ("read", "sleep"):
        assert total[kind] > 0.3e9, (kind, total, truth)
        assert named[kind] * 100 >= 95 * total[kind], (kind, named, total)
    # Recorded for 1.5 s of its 4 s or so: never more than it measured itself.
    assert total["read"] <= truth["read_ns"] * 1.02 and total["sleep"] <= truth["sleep_ns"] * 1.02, (total, truth)


@test
def test_ehframe_jit_code_by_frame_pointer():
    """Code in an anonymous executable mapping with a frame pointer, between
    native frames without one: the walk crosses it to main."""
    need_bpf()
    path = os.path.join(tmpdir(), "jit.data")
    spanperf("record", "--call-graph", "ehframe", "-F", "999", "-o", path, "--", DWARF_WORKLOAD, "jit", "1000",
             check=True)
    stacks = folded(path)
    n, m = hot_reach_main(stacks, ("jit_leaf",))
    assert n >= 300 and m * 100 >= 95 * n, "%d of %d jit_leaf samples reach main" % (m, n)
    assert any(st[:3] == ("jit_leaf", "[unknown]", "jit_round") for st in stacks), stacks.most_common(3)


@test
def test_ehframe_through_the_vdso():
    """A clock the vDSO takes to the kernel: the chain goes on from the vDSO
    (its rows come from spanperf's own copy of it) to main, in our report and
    in perf script."""
    need_bpf()
    path = os.path.join(tmpdir(), "vdso.data")
    spanperf("record", "--call-graph", "ehframe", "-F", "999", "-o", path, "--", DWARF_WORKLOAD, "clock", "1000",
             check=True)
    for stacks in (folded(path), None):
        if stacks is None:
            need_perf()
            stacks = perf_chains(path)
        # Samples in the vDSO or below it, in the kernel.
        vdso = {st: c for st, c in stacks.items() if "__vdso_clock_gettime" in st}
        n = sum(vdso.values())
        m = sum(c for st, c in vdso.items() if "clock_round" in st and "main" in st)
        assert n >= 100 and m * 100 >= 95 * n, "%d of %d samples in the vDSO reach main: %s" % (
            m, n, collections.Counter(vdso).most_common(3))


@test
def test_ehframe_kernel_chains_are_the_kernels():
    """Kernel chains of samples in kernel mode are unwound in BPF by the kernel's own ORC rules
    (kstack.bpf.h) where the rules are the simple ones: each such chain is checked against the
    kernel's own walk of the same sample (SPANPERF_KSTACK_CHECK), which must give it word for
    word, and most are made so (the rest are the kernel's, as before).  The workload alone is
    recorded: a busy host's other kernel paths (the rest) are not ours to count."""
    need_bpf()
    release = tuple(int(x) for x in re.findall(r"\d+", os.uname().release)[:2])
    if release < (6, 4):
        raise Skip("ORC's third layout, the one read here, is Linux 6.4's and later's")
    path = os.path.join(tmpdir(), "kchains.data")
    env = dict(os.environ, SPANPERF_KSTACK_CHECK="1")
    # The vDSO's clock of a thread's CPU time is a syscall: samples in the kernel, under a syscall.
    p = spanperf("record", "--call-graph", "ehframe", "-F", "1999", "-v", "-o", path, "--", DWARF_WORKLOAD,
                 "clock", "1500", check=True, env=env)
    m = re.search(r"kernel chains: (\d+) unwound by their ORC rules here, (\d+) walked by the kernel", p.stderr)
    assert m, p.stderr[-2000:]
    here, kernel = int(m.group(1)), int(m.group(2))
    assert "unlike the kernel's walk" not in p.stderr, p.stderr[-2000:]
    assert here >= 100 and here >= kernel, "%d kernel chains unwound here, %d by the kernel" % (here, kernel)


@test
def test_ehframe_through_a_signal_frame():
    """A signal handler's samples: the walk crosses the kernel's signal frame
    (__restore_rt, whose CIE is marked S) through the saved registers, back
    into raise() and on to main, in our report and in perf script."""
    need_bpf()
    path = os.path.join(tmpdir(), "signal.data")
    spanperf("record", "-g", "-F", "999", "-o", path, "--", DWARF_WORKLOAD, "signal", "1000", check=True)
    for stacks in (folded(path), None):
        if stacks is None:
            need_perf()
            stacks = perf_chains(path)
        handler = {st: c for st, c in stacks.items() if st and st[0] == "cmp_ints" and "sig_work" in st}
        n = sum(handler.values())
        m = sum(c for st, c in handler.items()
                if "__restore_rt" in st and "signal_round" in st and "main" in st
                and st.index("sig_work") < st.index("__restore_rt") < st.index("signal_round") < st.index("main"))
        assert n >= 100 and m * 100 >= 95 * n, "%d of %d handler samples reach main through the signal frame: %s" % (
            m, n, collections.Counter(handler).most_common(2))


@test
def test_ehframe_before_the_process_mappings_are_read():
    """A process that starts or execs during a recording is sampled before user space has read
    its mappings: the walk then finds each mapping from the kernel's vma (bpf_find_vma, one per
    sample, kept for the process's next samples on that CPU) and its file's rows by inode.
    SPANPERF_EH_VMA_ONLY makes every walk do so: through libc's qsort and through the vDSO
    (whose rows have no file) the chains reach main, in our report and in perf script."""
    need_bpf()
    d = tmpdir()
    env = dict(os.environ, SPANPERF_EH_VMA_ONLY="1")
    path, vdso = os.path.join(d, "vma.data"), os.path.join(d, "vdso.data")
    p = spanperf("record", "--call-graph", "ehframe", "-F", "999", "-v", "-o", path, "--", DWARF_WORKLOAD, "1500",
                 env=env, check=True)
    m = re.search(r"mappings looked up in the kernel.*?(\d+)$", p.stderr, re.M)
    assert m and int(m.group(1)) > 0, p.stderr
    pv = spanperf("record", "--call-graph", "ehframe", "-F", "999", "-v", "-o", vdso, "--", DWARF_WORKLOAD, "clock",
                  "1000", env=env, check=True)
    # perf's chains, not its counts: a busy host may overflow the recorder's rings (perf says so).
    perf_chains_lost_ok = lambda path: perf_chains(path, lost_ok=True)  # noqa: E731
    perf_chains_lost_ok.__name__ = "perf_chains"
    for chains in (folded, perf_chains_lost_ok):
        if chains is perf_chains_lost_ok:
            need_perf()
        n, m = hot_reach_main(chains(path))
        early = min(no_table_steps(p.stderr), n - m)
        assert n - early >= 300 and m * 100 >= 95 * (n - early), "%s: %d of %d hot samples reach main, %d walks " \
            "before a table" % (chains.__name__, m, n, early)
        stacks = chains(vdso)
        n = sum(c for st, c in stacks.items() if "__vdso_clock_gettime" in st)
        m = sum(c for st, c in stacks.items() if "__vdso_clock_gettime" in st and "clock_round" in st and "main" in st)
        early = min(no_table_steps(pv.stderr), n - m)
        assert n - early >= 100 and m * 100 >= 95 * (n - early), "%s: %d of %d vDSO samples reach main, %d walks " \
            "before a table" % (chains.__name__, m, n, early)


@test
def test_ehframe_unchecked_frame_pointer_guess_is_not_a_frame():
    """Before a process's mappings are read, each frame's mapping is the kernel's vma
    (bpf_find_vma), which a sampling interrupt cannot always look at: the mm locked, or the
    last lookup's irq_work still pending.  A frame-pointer step out of such code reads rbp,
    which in code without frame pointers is any data; the address it gives cannot be checked
    against the mappings either, so it is a frame only if the bytes before it are a call, and
    the chain ends there otherwise.  150 short runs, each sampled only
    by the kernel's vmas (SPANPERF_EH_VMA_ONLY): perf places every frame of theirs in a file
    (the unfixed walk gave 62 of 14,912 chains a frame in none), and the chains still reach
    main."""
    need_bpf()
    need_perf()
    d = tmpdir()
    path = os.path.join(d, "churn.data")
    loop = "for i in $(seq 150); do %s 15 >/dev/null; done" % shlex.quote(DWARF_WORKLOAD)
    p = spanperf("record", "--call-graph", "ehframe", "-F", "4999", "-v", "-o", path, "--", "sh", "-c", loop,
                 env=dict(os.environ, SPANPERF_EH_VMA_ONLY="1"), check=True)
    n, reach, made_up = perf_placed(path, "workload_dwarf", lost_ok=True)
    assert n >= 1000 and not made_up, (n, len(made_up), made_up[:2], p.stderr[-1500:])
    assert reach * 100 >= 90 * n, (reach, n)


@test
def test_ehframe_garbage_cfi_gives_short_chains():
    """A copy of the program whose .eh_frame is garbage, and a library replaced
    on disk while it runs: chains are cut, counted, never made up, and the
    recording is whole."""
    need_bpf()
    d = tmpdir()
    exe = os.path.join(d, "workload_dwarf")
    shutil.copy(DWARF_WORKLOAD, exe)
    shutil.copy(os.path.join(BUILD, "tests", "libdwarfcb.so"), d)
    out = run(["readelf", "-SW", exe], check=True).stdout
    m = re.search(r"\] \.eh_frame +PROGBITS +[0-9a-f]+ ([0-9a-f]+) ([0-9a-f]+)", out)
    off, size = int(m.group(1), 16), int(m.group(2), 16)
    with open(exe, "r+b") as f:
        f.seek(off + 64)  # past the first CIE: its FDEs point to garbage
        f.write(bytes((i * 37 + 11) & 0xff for i in range(size - 64)))
    path = os.path.join(d, "bad.data")
    wl = subprocess.Popen([exe, "600000"], stdout=subprocess.PIPE, text=True, errors="replace")
    try:
        time.sleep(0.2)
        # Replaced while it runs: a new file renamed over the old; the mapped one is still read.
        shutil.copy(os.path.join(BUILD, "tests", "libdwarfcb.so"), os.path.join(d, "new.so"))
        os.rename(os.path.join(d, "new.so"), os.path.join(d, "libdwarfcb.so"))
        # Until the workload has had 2 s on CPU by its own clock, not for a wall second: a busy
        # host gives it a fraction of one (make check's ASan recorder beside two hogs on a loaded
        # host: under 100 samples in its second), and its chains are what is measured.
        # Counted from the -v line the recorder writes once its events are on (the side-band's
        # synthesis follows their start).
        rec = subprocess.Popen([SPANPERF, "record", "--call-graph", "ehframe", "-F", "999", "-v", "-p", str(wl.pid),
                                "-o", path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")
        deadline = time.time() + 300
        started = Started(rec)
        before = thread_cpu_ns(wl.pid)
        while thread_cpu_ns(wl.pid) - before < 2e9 and time.time() < deadline and rec.poll() is None:
            time.sleep(0.1)
        rec.send_signal(signal.SIGINT)
        started.wait(timeout=120)
        p = subprocess.CompletedProcess(rec.args, rec.returncode, None, "".join(started.lines))
        assert rec.returncode == 0, p.stderr[-1500:]
    finally:
        reap(wl)
    stacks = folded(path)
    assert sum(stacks.values()) > 100
    need_perf()
    q = run(["perf", "script", "-i", path, "-F", "comm,tid,ip,sym"])
    assert q.returncode == 0 and q.stderr.strip() == "", q.stderr[-1500:]
    # What the garbage gives is counted: a table refused, pcs without a row, or rows no walk may
    # use; and the program's chains end there, short of main.
    counted = 0
    for pat in (r"(\d+) files without CFI", r"(\d+) failed$", r"^  frame-pointer steps: no row for the pc +(\d+)$",
                r"^  stopped: CFI a row cannot express +(\d+)$"):
        m = re.search(pat, p.stderr, re.M)
        counted += int(m.group(1)) if m else 0
    assert counted > 0, p.stderr[-2000:]
    n, reach = hot_reach_main(stacks, ("cmp_ints",))
    assert n > 50 and reach * 10 < n, (n, reach)


@test
def test_ehframe_5000_mappings():
    """One process with 5,000 more executable mappings (of its own file): its
    slice is made whole and searched, and its chains still reach main."""
    need_bpf()
    path = os.path.join(tmpdir(), "maps.data")
    p = spanperf("record", "--call-graph", "ehframe", "-F", "999", "-v", "-o", path, "--", DWARF_WORKLOAD, "maps",
                 "5000", "1000", check=True)
    assert json_lines(p.stdout)[0]["mapped"] == 5000, p.stdout
    n, m = hot_reach_main(folded(path))
    assert n >= 300 and m * 100 >= 98 * n, "%d of %d hot samples reach main" % (m, n)
    maps = int(re.search(r"process builds, (\d+) mappings", p.stderr).group(1))
    assert maps >= 5000, p.stderr[-2000:]
    need_perf()
    perf_clean(["script", "-F", "comm,tid,ip,sym"], path)


@test
def test_ehframe_100mb_binary():
    """A 100 MB program (a 100 MB section after its code, its section headers
    past 100 MB): its table is built from its .eh_frame alone, and its chains
    reach main."""
    need_bpf()
    d = tmpdir()
    with open(os.path.join(d, "bulk"), "wb") as f:
        f.write(bytes(100 << 20))
    exe = os.path.join(d, "workload_dwarf")
    shutil.copy(os.path.join(BUILD, "tests", "libdwarfcb.so"), d)
    run(["objcopy", "--add-section", ".bulk=" + os.path.join(d, "bulk"), "--set-section-flags",
         ".bulk=noload,readonly", DWARF_WORKLOAD, exe], check=True)
    assert os.path.getsize(exe) > 100 << 20
    path = os.path.join(d, "big.data")
    p = spanperf("record", "--call-graph", "ehframe", "-F", "999", "-v", "-o", path, "--", exe, "1000", check=True)
    n, m = hot_reach_main(folded(path))
    assert n >= 300 and m * 100 >= 98 * n, "%d of %d hot samples reach main: %s" % (m, n, p.stderr[-1500:])


@test
def test_ehframe_pid_reuse():
    """A process exits and another program gets its pid at once (set through
    ns_last_pid), while a whole-host recording runs: the newcomer's chains
    never take a frame of the old process's tables (its mappings are
    another image's), and its own chains are whole once its tables come."""
    need_bpf()
    d = tmpdir()
    # Names of this run's own (comm holds 15 characters): another session's run of this test on a
    # shared host is in the whole-host recording too, and its processes are not ours to count.
    tag = "-%d" % (os.getpid() % 10000)
    a_comm, b_comm = "pr-dwarf" + tag, "pr-python3" + tag
    a_exe, b_exe = os.path.join(d, a_comm), os.path.join(d, b_comm)
    os.symlink(DWARF_WORKLOAD, a_exe)
    os.symlink("/usr/bin/python3", b_exe)
    path = os.path.join(d, "reuse.data")
    rec = subprocess.Popen([SPANPERF, "record", "-a", "--call-graph", "ehframe", "-F", "999", "-v", "-o", path],
                           stderr=subprocess.PIPE, text=True, errors="replace")
    reused = 0
    try:
        time.sleep(2)
        for _ in range(20):
            a = subprocess.Popen([a_exe, "300"], stdout=subprocess.DEVNULL)
            a.wait()
            try:
                with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                    f.write(str(a.pid - 1))
            except OSError as e:
                raise Skip("cannot set ns_last_pid: %s" % e)
            b = subprocess.Popen([b_exe, "-c", "import time\nt=time.process_time()\n"
                                  "while time.process_time()-t<0.3: sum(i*i for i in range(1000))"])
            reused += b.pid == a.pid
            b.wait()
            if reused >= 3:
                break
    finally:
        rec.send_signal(2)
        err = rec.communicate()[1]
    assert rec.returncode == 0, err[-2000:]
    if reused < 3:
        raise Skip("another process took the pid first in %d of 20 tries" % (20 - reused))
    # A frame unwound with the old process's rows would return into its
    # mappings, which are not the newcomer's: perf names no file for it.
    need_perf()
    n, _, wrong = perf_placed(path, b_comm)
    assert n >= 100 and not wrong, (n, len(wrong), wrong[:3])
    # The old program was whole too, each process from when the recorder had read it on; its
    # chains cut before that are the recorder's to account for (once_read).
    hot = lambda st: bool(st) and st[0] in ("cmp_ints", "cb_work")
    a_early, a_after, a_whole = once_read(thread_chains(path, a_comm), hot_whole, 0.90, hot)
    assert a_after >= 100 and a_early <= walks_unread(err), (
        a_early, a_after, a_whole, walks_unread(err))


@test
def test_ehframe_separate_debug_file():
    """A program built without unwind tables (its .eh_frame covers only the
    start-up code) and stripped of its .debug_frame: its chains reach main
    once its debug file is where the symbolizer finds it by build id (here
    the one debuginfod would have served, kept in the build-id cache), and
    not without."""
    need_bpf()
    d = tmpdir()
    exe = os.path.join(d, "nocfi_dwarf")
    shutil.copy(os.path.join(BUILD, "tests", "libdwarfcb.so"), d)
    run(["gcc", "-g", "-O2", "-fomit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables",
         "-Wl,--build-id", os.path.join(ROOT, "tests", "integration", "workload_dwarf.c"), "-o", exe, "-L", d,
         "-ldwarfcb", "-Wl,-rpath,$ORIGIN"], check=True)
    run(["objcopy", "--only-keep-debug", exe, exe + ".debug"], check=True)
    run(["strip", "--strip-debug", exe], check=True)
    hexid = re.search(r"Build ID: ([0-9a-f]+)", run(["readelf", "-n", exe], check=True).stdout).group(1)
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(d, "cache"))
    reach = {}
    for kept in (False, True):
        if kept:
            os.makedirs(os.path.join(d, "cache", "spanperf", "buildid"), exist_ok=True)
            shutil.copy(exe + ".debug", os.path.join(d, "cache", "spanperf", "buildid", hexid + ".debug"))
        path = os.path.join(d, "kept.data" if kept else "none.data")
        p = spanperf("record", "--call-graph", "ehframe", "-F", "999", "-v", "-o", path, "--", exe, "1000",
                     env=env, check=True)
        reach[kept] = hot_reach_main(folded(path, comm="nocfi_dwarf"), ("cmp_ints",))
        assert ("took rows from their debug file" in p.stderr) == kept, p.stderr[-2000:]
    (n0, m0), (n1, m1) = reach[False], reach[True]
    assert n1 >= 200 and m1 * 100 >= 98 * n1, reach
    assert n0 >= 200 and m0 * 10 < n0, reach


@test
def test_ehframe_tables_by_build_id():
    """Two copies of the program and its library (other inodes, one build, as
    a container's copy of libc): the second copy takes the first's tables,
    and both processes' chains reach main."""
    need_bpf()
    d = tmpdir()
    exes = []
    for sub in ("a", "b"):
        os.makedirs(os.path.join(d, sub))
        shutil.copy(DWARF_WORKLOAD, os.path.join(d, sub))
        shutil.copy(os.path.join(BUILD, "tests", "libdwarfcb.so"), os.path.join(d, sub))
        exes.append(os.path.join(d, sub, "workload_dwarf"))
    path = os.path.join(d, "two.data")
    p = spanperf("record", "--call-graph", "ehframe", "-F", "999", "-v", "-o", path, "--", "sh", "-c",
                 "%s 800 & %s 800; wait" % tuple(exes), check=True)
    m = re.search(r"^  (\d+) files shared the table of another file with their build id$", p.stderr, re.M)
    assert m and int(m.group(1)) >= 2, p.stderr[-2000:]
    n, reach = hot_reach_main(folded(path))
    assert n >= 300 and reach * 100 >= 98 * n, (n, reach)


@test
def test_ehframe_forged_build_id():
    """A program that claims another's build id (any program can: it is a
    note of the linker's) and runs first does not lend its rows to the
    real one: the second file's rows differ, so it builds its own, and its
    chains reach main as they would alone."""
    need_bpf()
    d = tmpdir()
    exe = os.path.join(d, "workload_dwarf")
    shutil.copy(DWARF_WORKLOAD, d)
    shutil.copy(os.path.join(BUILD, "tests", "libdwarfcb.so"), d)
    hexid = re.search(r"Build ID: ([0-9a-f]+)", run(["readelf", "-n", exe], check=True).stdout).group(1)
    src = os.path.join(d, "decoy.c")
    with open(src, "w") as f:
        f.write("#include <stdlib.h>\n#include <time.h>\n"
                "static volatile long n;\n"
                "__attribute__((noinline)) static void spin(void) { for (int i = 0; i < 1000; i++) n += i; }\n"
                "int main(int c, char **v) { time_t end = time(0) + atoi(v[1]);\n"
                "  char pad[4096]; pad[0] = 0; n += pad[0];\n"
                "  while (time(0) < end) spin(); return 0; }\n")
    decoy = os.path.join(d, "decoy")
    run(["gcc", "-O2", "-fomit-frame-pointer", "-Wl,--build-id=0x" + hexid, src, "-o", decoy], check=True)
    assert hexid in run(["readelf", "-n", decoy], check=True).stdout
    path = os.path.join(d, "forged.data")
    p = spanperf("record", "--call-graph", "ehframe", "-F", "999", "-v", "-o", path, "--", "sh", "-c",
                 "%s 3 & sleep 0.5; %s 800; wait" % (decoy, exe), check=True)
    assert "1 files had another file's build id but rows of their own" in p.stderr, p.stderr[-2000:]
    assert "shared the table of another file" not in p.stderr, p.stderr[-2000:]
    n, reach = hot_reach_main(folded(path, comm="workload_dwarf"))
    assert reach_main_once_tabled(n, reach, p.stderr, 300), (n, reach, no_table_steps(p.stderr))


def windows(script, width):
    """Seconds of the union of [t, t + width] over perf script's exec and executable-mapping records
    (--show-task-events --show-mmap-events, with time): what keeps the recorder's loop at 2 ms
    (ehsource.c).  The recorder's own records naming Python and Java frames
    (OUTPUT.spanperf/python-*.elf, java-*.elf) are written to the file, never seen by the loop."""
    ts = []
    for line in script.splitlines():
        m = re.search(r"\s(\d+\.\d+):\s+PERF_RECORD_(COMM exec:|MMAP2 )", line)
        if not m:
            continue
        if m.group(2).startswith("MMAP2") and (not re.search(r"\]: r.x. ", line) or
                                                re.search(r"\.spanperf/(python|java)-[0-9a-f]+\.elf$", line)):
            continue
        ts.append(float(m.group(1)))
    total, end = 0.0, None
    for t in sorted(ts):
        total += width if end is None or t >= end else t + width - end
        end = t + width
    return total


@test
def test_ehframe_idle_recorder_wakes_at_an_exec():
    """While no process starts, the recorder's loop passes at the other
    modes' 100 ms, not every 2 ms, and the first exec wakes it: a program
    exec'd after an idle stretch has its hot samples reach main.  The passes
    are held to what the file's own side-band allows: 2 ms passes for 100 ms
    from the pass that saw an exec or a new executable mapping (an exec wakes
    the loop at once, a mapping waits for the next pass, up to 100 ms), so
    200 ms after each such record of the host's, counted once where they
    overlap; fifty passes a second besides (idle passes and the rings'
    wake-ups)."""
    need_bpf()
    need_perf()
    d = tmpdir()
    path = os.path.join(d, "idle.data")
    # A name of this run's own: another session's workload_dwarf on a shared host is recorded too.
    comm = "idle-dwarf-%d" % (os.getpid() % 10000)
    os.symlink(DWARF_WORKLOAD, os.path.join(d, comm))
    # The recorder (and its command) ahead of the host's other load, nice -10, as the real-host test's: what
    # is measured is the wake at an exec, and a recorder starved beside busyhost's hogs read the program
    # only after all 171 of its hot chains (300 ms of its CPU).
    p = run([SPANPERF, "record", "-a", "-v", "--call-graph", "ehframe", "-F", "999", "-o", path, "--", "sh", "-c",
             "sleep 2; exec %s 300" % shlex.quote(os.path.join(d, comm))], check=True, preexec_fn=lambda: os.nice(-10))
    m = re.search(r"^  (\d+) passes of the loop, (\d+) of them 2 ms apart while processes started; (\d+) woken by an "
                  r"exec$", p.stderr, re.M)
    assert m, p.stderr[-2000:]
    passes, busy, wakes = map(int, m.groups())
    secs = float(re.search(r"samples from \d+ threads in ([\d.]+) s", p.stderr).group(1))
    tasks = run(["perf", "script", "-i", path, "--show-task-events", "--show-mmap-events", "-F", "comm,pid,time"],
                check=True).stdout
    execs = len(re.findall(r"PERF_RECORD_COMM exec:", tasks))
    assert execs >= 2, tasks[-1000:]
    # Whole-host: on a busy host others' processes start all the time (busyhost's query loops exec
    # a client per query: 15 execs and thousands of mappings in 3 s), and each keeps the loop at
    # 2 ms as it should; a count of execs alone allowed 925 passes where the loop made 1,200. The
    # windows their records open, in the file's own time, bound the 2 ms passes; on an idle host
    # they are the workload's own few.  Besides them, fifty a second: the idle passes (ten a
    # second) and the passes the rings' own wake-ups add, half full (busyhost: up to 32 a second,
    # 2,746 passes in 5.2 s, 5.15 s of it in windows).  A loop at 2 ms throughout makes 500.
    # (Until 6342c7e the recorder counted every pass twice, those figures included: a host that
    # compiled gave 1,226 counted, about 613 passes, where 1,140 were allowed.)
    woke = windows(tasks, 0.2)
    allowed = 50 * secs + 55 + woke / 0.002
    assert passes <= allowed, (passes, busy, wakes, execs, secs, woke)
    print("        %d passes (%d at 2 ms) of %.0f allowed: %d execs, %.2f s of windows in %.1f s" % (
        passes, busy, allowed, execs, woke, secs))
    # The exec'd program's samples before the loop read it are walked without its table or its
    # mappings (a busy host delays the loop; the sanitizers' build is slower): each thread's cut
    # chains before that are held apart, no more than the recorder counted such walks, and from
    # there on 98 in 100 reach main, over 100 chains at least (once_read).
    hot = lambda st: bool(st) and st[0] in ("cmp_ints", "cb_work")
    early, after, whole = once_read(thread_chains(path, comm), hot_whole, 0.98, hot)
    # As in the real-host test: the tables are one bounded table of every file the host maps, first
    # come first served (a ClickHouse binary, a compiler's libLLVM), and a file that finds no room, as
    # the recorder says, unwinds by frame pointer: its program is only named then.
    full = re.search(r"unwind tables full: (\d+) files too large, (\d+) processes", p.stderr)
    if after < 100 and full and (int(full.group(1)) or int(full.group(2))):
        print("        %s: the host's programs filled the unwind tables (%s)" % (comm, full.group(0)))
        return
    assert after >= 100 and early <= walks_unread(p.stderr), (
        early, after, whole, walks_unread(p.stderr), re.findall(r"^ehframe tables: .*$|unwind tables full.*$",
                                                                 p.stderr, re.M))


@test
def test_ehframe_tree_recorder_sleeps_through_others_execs():
    """record -- CMD keeps the tables of CMD's tree only, so another process's exec has
    nothing for its loop: while CMD sleeps 2 s and a loop of the test's own execs /bin/true
    beside it, outside the tree, the exec wake-up fires for the tree's own execs alone (sh,
    its sleep, the program it execs), never for the loop's hundreds."""
    need_bpf()
    d = tmpdir()
    path = os.path.join(d, "tree.data")
    execs = os.path.join(d, "execs")
    # The loop counts its own execs (a byte each), so that the test knows the others were there to wake it.
    hog = subprocess.Popen(["sh", "-c", "while :; do /bin/true; printf x >> %s; done" % shlex.quote(execs)])
    try:
        p = run([SPANPERF, "record", "-v", "--call-graph", "ehframe", "-F", "99", "-o", path, "--", "sh", "-c",
                 "sleep 2; exec %s 1" % shlex.quote(DWARF_WORKLOAD)], check=True)
    finally:
        reap(hog)
    m = re.search(r"^  (\d+) passes of the loop, (\d+) of them 2 ms apart while processes started; (\d+) woken by an "
                  r"exec$", p.stderr, re.M)
    assert m, p.stderr[-2000:]
    others = os.path.getsize(execs) if os.path.exists(execs) else 0
    assert others >= 20, others
    # A wake-up is one exec in the tree, and the tree makes three: sh, its sleep and the program
    # (sh's comes within the loop's first 100 ms at 2 ms, unarmed, on an idle host).  Before, 16
    # of the loop's execs woke it.
    assert int(m.group(3)) <= 3, (m.groups(), others)


@test
def test_ehframe_real_host():
    """issue 22's real host: python3, cc1, xz, sort, node --perf-basic-prof
    (and java -XX:+PreserveFramePointer where a JDK is installed) at once,
    recorded whole-host (tools/realhost.py starts them under names of their
    own).  Each has >= 95% of its samples with a chain up to a thread's root
    (cc1, which starts every second, >= 90%; below that, from when the
    recorder had read its process on; a program whose file found no room in
    the unwind tables, which the host's other programs filled, as the
    recorder says, is only named), in our report and in perf script of the same file, whose leaves agree;
    and on perf's own -g file of the same programs, spanperf names each
    program's samples as perf does."""
    need_bpf()
    need_perf()
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import realhost
    os.environ["SPANPERF"] = SPANPERF
    d = tmpdir()
    procs = realhost.start_workloads(d, 600)
    try:
        time.sleep(2)
        # The recorder ahead of the host's other load (nice -10): what is measured is the walk
        # once it has read a process, and a starved loop reads late (make check's ASan recorder
        # beside two CPU hogs and another make check read cc1's process after 253 of its 263
        # chains: 10 left to hold to the floor).
        err = realhost.record("ehframe", os.path.join(d, "ehframe.data"), 4, 999, ["-v"], nice=-10)
        realhost.record("perf-fp", os.path.join(d, "perf-fp.data"), 4, 999)
    finally:
        realhost.stop(procs)
    # A whole-host recording builds the tables of every file the host's processes map, first
    # come first served, into bounded tables (3 chunks of 2M rows), and unwinds a file that finds
    # no room by frame pointer, saying so.  On a shared host others' programs may fill it before a file
    # of ours is built (a bpftrace maps libLLVM, libclang and libz3: 1.8M rows; cc1 is 0.48M,
    # built at its first exec): then a program of ours may fall below its floor, and only then.
    full = re.search(r"unwind tables full: (\d+) files too large", err)
    rows, perr = realhost.measure(os.path.join(d, "ehframe.data"))
    if "build-id.c" in perr:
        raise Skip("perf script aborts in its build-id code: %s" % perr[-200:])
    try:
        theirs = realhost.perf_stacks(os.path.join(d, "perf-fp.data"))[0]
    except realhost.PerfFailed as e:
        # perf's own file, not ours: perf 6.1 stops at its KSYMBOL records of
        # BPF programs that others load meanwhile, or aborts in its build-id code.
        if "type: 17" not in str(e) and "build-id.c" not in str(e):
            raise
        theirs = None
    assert perr.strip() == "", perr[-1500:]
    want = [realhost.PROGRAMS[c] for c in procs]
    assert set(rows) == set(want), (rows, want)
    ours = realhost.spanperf_stacks(os.path.join(d, "ehframe.data"))
    for comm, name in realhost.PROGRAMS.items():
        if name not in rows:
            continue
        r = rows[name]
        cut = collections.Counter({st: c for st, c in ours[comm].items()
                                   if not realhost.complete(st) and not realhost.chainless(st)})
        assert r["samples"] >= 100 and r["samples"] == r["perf_samples"], (name, r)
        assert r["leaf_agree"] >= 0.95, (name, r)
        # cc1 lives about a second, and in its first few ms (ld.so and the
        # libraries mapping) its chains wait for the recorder: 90% for it.
        floor = 0.90 if comm == "rh-cc1" else 0.95
        if r["complete"] >= floor and r["perf_complete"] >= floor:
            continue
        # Below that only before the recorder had read the program's process: one that started
        # or exec'd while the recorder built its tables at its start is read again once the events
        # are on, its file's rows built then, and until then its chains go by frame pointer and
        # stop short.  cc1's 479k rows take 73 ms idle; make check's ASan recorder beside others'
        # load took 14.7 s to build this host's 4.2M rows at its start, and read sort's process,
        # exec'd meanwhile, 1.4 s into the file: 252 of its 724 chains before, 0 after; 91 of
        # cc1's 412 before, 0 after.  So each thread's chains cut before that are held apart, no
        # more than the recorder counted walks of what it had not read, and from there on the
        # floor holds, over 100 chains at least (once_read).
        early, after, good = once_read(thread_chains(os.path.join(d, "ehframe.data"), comm), realhost.complete,
                                       floor, lambda st: not realhost.chainless(st))
        print("%s: %.0f%% complete; %d chains before its process was read, then %d of %d complete"
              % (name, 100 * r["complete"], early, good, after))
        if full and int(full.group(1)):
            print("%s: the host's programs filled the unwind tables (%s)" % (name, full.group(0)))
            continue
        assert after >= 100 and early <= walks_unread(err), (
            name, r, early, after, good, walks_unread(err), cut.most_common(5))
    if theirs is None:
        return
    ours = realhost.spanperf_stacks(os.path.join(d, "perf-fp.data"))
    for comm in procs:
        n, m = sum(ours.get(comm, {}).values()), sum(theirs.get(comm, {}).values())
        assert m >= 100 and n == m, (comm, n, m)


@test
def test_ehframe_table_cache_short_lived():
    """Tables kept on disk (ehcache.h): a compile's short-lived processes (gcc -O2: the driver,
    cc1, as), recorded each by a recorder of its own, find their files' tables in the cache
    instead of parsing them (record -v counts the tables read from it), so fewer of their chains
    are walked before the table is there: cc1's chains cut short (not reaching a thread's root)
    are fewer with the cache warm than with it off (SPANPERF_NO_EH_CACHE), over rounds that
    alternate the two.  What decides it is the recorder's CPU work (parse against read), not the
    host's speed: recorder and compiler share one CPU (taskset), so while the recorder builds,
    the compiler runs about as long as the recorder works, whatever else the host runs."""
    need_bpf()
    need_perf()
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import realhost
    if not os.path.exists(realhost.CC1) or not shutil.which("taskset"):
        raise Skip("no %s or taskset" % realhost.CC1)
    d = tmpdir()
    cache = os.path.join(d, "cache")
    os.makedirs(cache, mode=0o700)
    inc = [a for sub in ("base", "perfdata", "sys") for a in ("-iquote", os.path.join(ROOT, "user", sub))]
    cc = ["gcc", "-O2", "-g", "-D_GNU_SOURCE"] + inc + ["-I", os.path.join(ROOT, "bpf"), "-c",
                                                         os.path.join(ROOT, "user", "sys", "ehframe.c"),
                                                         "-o", os.path.join(d, "x.o")]
    cpu = str(sorted(os.sched_getaffinity(0))[0])

    def record(name, cached):
        env = dict(os.environ, XDG_CACHE_HOME=cache)
        if not cached:
            env["SPANPERF_NO_EH_CACHE"] = "1"
        path = os.path.join(d, name + ".data")
        p = run(["taskset", "-c", cpu, SPANPERF, "record", "-g", "-F", "999", "-v", "-o", path, "--"] + cc,
                env=env, check=True, timeout=300)
        return path, p.stderr

    _, err = record("prime", True)
    assert re.search(r"table cache: 0 tables read from it, [1-9]\d* parsed and kept", err), err[-2000:]
    cut = {False: 0, True: 0}
    chains = {False: 0, True: 0}
    first = {False: [0, 0], True: [0, 0]}
    for r in range(2):
        for cached in (False, True):
            path, err = record("%s%d" % ("warm" if cached else "off", r), cached)
            if cached:
                # Parsed and kept may be more than none: a file of a process the priming recorder did
                # not read before it exited (as lives tens of ms) is first met here.
                m = re.search(r"table cache: (\d+) tables read from it, (\d+) parsed and kept, (\d+) entries refused",
                              err)
                assert m and int(m.group(1)) >= 3 and int(m.group(3)) == 0, err[-2000:]
            else:
                assert "table cache off" in err, err[-2000:]
            for tid, seq in thread_chains(path, "cc1").items():
                seq = [st for st in seq if not realhost.chainless(st)]
                chains[cached] += len(seq)
                cut[cached] += sum(not realhost.complete(st) for st in seq)
                first[cached][0] += bool(seq) and realhost.complete(seq[0])
                first[cached][1] += 1
            os.unlink(path)
    print("        cc1 chains cut: %d of %d with the cache off, %d of %d warm; first chain whole in %d of %d "
          "processes off, %d of %d warm" % (cut[False], chains[False], cut[True], chains[True], first[False][0],
                                            first[False][1], first[True][0], first[True][1]))
    assert chains[False] >= 300 and chains[True] >= 300, (chains, cut)
    assert cut[True] < cut[False], (chains, cut, first)


@test
def test_ehframe_short_lived_from_their_first_samples():
    """Processes that live a ms or two each (workload_dwarf 1: no frame pointers, qsort through its
    PLT and ld.so's lazy-binding trampoline), exec'd one after another while record -a -g runs:
    their chains are complete from their first samples, in the dynamic loader's start and before
    user space has read their mappings, because BPF notes each one's mappings at its exec and
    mmaps (eh_fresh) rather than finding them in the interrupt; the trampoline and vfork have
    rules of their own.  Only this test's processes count (a comm of its own, sl-dwarf), judged
    as tools/realhost.py judges (the outermost frame a thread's root): 98 in 100 of all their
    samples (main at aab0d9c: 94.8%, 2,734 of 2,885; with the notes 99.9%), and the first sample
    of 95 in 100 of them; no user frame in no file.  Their file's
    table is built before they start (a primer of the same file runs while the recorder scans),
    so what is held is the mappings, not the table build, which a busy host delays."""
    need_bpf()
    need_perf()
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import realhost
    from harness import perf_script_samples
    d = tmpdir()
    exe = realhost.link(d, "sl-dwarf", DWARF_WORKLOAD)
    primer = subprocess.Popen([realhost.link(d, "sl-prime", DWARF_WORKLOAD), "600000"], stdout=subprocess.DEVNULL)
    path = os.path.join(d, "short.data")
    rec = subprocess.Popen([SPANPERF, "record", "-a", "-g", "-F", "4999", "-v", "-o", path],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")
    try:
        started = Started(rec)
        reap(primer)
        for _ in range(200):
            subprocess.run([exe, "1"], stdout=subprocess.DEVNULL, check=True)
        rec.send_signal(signal.SIGINT)
        assert started.wait() == 0, started.text()
    finally:
        reap(primer)
        reap(rec)
    per_pid = collections.OrderedDict()
    for s in perf_script_samples(path, lost_ok=True):
        if s["comm"] == "sl-dwarf" and not realhost.chainless(tuple(s["frames"])):
            per_pid.setdefault(s["pid"], []).append(realhost.complete(tuple(s["frames"])))
    n = sum(len(v) for v in per_pid.values())
    whole = sum(sum(v) for v in per_pid.values())
    first = sum(v[0] for v in per_pid.values())
    print("        %d processes, %d samples: %d complete; first sample complete in %d" % (
        len(per_pid), n, whole, first))
    assert len(per_pid) >= 100 and n >= 500, (len(per_pid), n)
    assert whole * 100 >= 98 * n, "%d of %d chains complete" % (whole, n)
    assert first * 100 >= 95 * len(per_pid), "first chain complete in %d of %d processes" % (first, len(per_pid))
    _, _, nowhere = perf_placed(path, "sl-dwarf", lost_ok=True)
    assert not nowhere, "user frames in no file:\n%s" % "\n\n".join(nowhere[:3])
