# SPDX-License-Identifier: GPL-2.0
"""spanperf record, for real: BPF loaded and attached, checked against the
workload's own CPU time and against perf reading the file."""
import collections
import os
import re
import signal
import subprocess
import time

from harness import (Started, BUILD, SPANPERF, WORKLOAD, Skip, cpu_ns, json_lines, need_bpf, need_perf, need_root,
                     perf_clean, perf_script_samples, run, spanperf, test, tmpdir)

FREQ = 999


def record(args, workload_args, d=None, name="perf.data", timeout=120):
    d = d or tmpdir()
    out = os.path.join(d, name)
    p = spanperf("record", "-o", out, *args, "--", WORKLOAD, *workload_args, timeout=timeout)
    assert p.returncode == 0, "record exited %d: %s" % (p.returncode, p.stderr)
    return out, json_lines(p.stdout), p


def own_counts(path, key="tid"):
    p = spanperf("report", "-i", path, "--sort", key, "--format", "json", check=True)
    return {row[key]: row["samples"] for row in json_lines(p.stdout)}


def child_runs(pid, exe):
    """Whether a child of pid has exec'd exe (read from /proc; the child may come and go)."""
    try:
        kids = open("/proc/%d/task/%d/children" % (pid, pid)).read().split()
    except OSError:
        return False
    for kid in kids:
        try:
            if os.path.realpath(os.readlink("/proc/%s/exe" % kid)) == os.path.realpath(exe):
                return True
        except OSError:
            pass
    return False


def bpf_map_counts(stderr):
    """The -v table of per-thread samples (the BPF map's, or the records' where no program ran): tid -> samples."""
    counts, on = {}, False
    for line in stderr.splitlines():
        if line.startswith("per-thread samples ("):
            on = True
            continue
        m = re.match(r"^\s*(\d+)\s+(\d+)\s+(.*?)\s+(\d+)$", line)
        if on and m:
            counts[int(m.group(1))] = int(m.group(4))
    return counts


@test
def test_per_thread_counts_match_cpu_time():
    need_bpf()
    path, truth, p = record(["-F", str(FREQ), "-v"], ["spin", "400,800"])
    assert len(truth) == 2, truth
    counts = own_counts(path)
    bpf = bpf_map_counts(p.stderr)
    # A sample taken while a thread exits, after its pid was detached, carries tid -1 in perf's record
    # (perf script shows it as ":-1 PID/-1"); BPF saw the thread still current and counted it.
    rows = json_lines(spanperf("report", "-i", path, "--sort", "pid,tid", "--format", "json", check=True).stdout)
    exiting = {}
    for r in rows:
        if r["tid"] in (0xffffffff, -1):
            exiting[r["pid"]] = exiting.get(r["pid"], 0) + r["samples"]
    for t in truth:
        expected = t["cpu_ns"] / 1e9 * FREQ
        got = counts.get(t["tid"], 0)
        assert abs(got - expected) <= 0.15 * expected, \
            "tid %d (%s): %d samples for %.0f ms of CPU, expected %.0f +-15%%" % (
                t["tid"], t["func"], got, t["cpu_ns"] / 1e6, expected)
        # The BPF map counts what the filter accepted; the file holds what the ring kept.
        assert got <= bpf.get(t["tid"], 0) <= got + exiting.get(t["pid"], 0), \
            "BPF map says %s for tid %d, the file %d (and %d of its process with tid -1)" % (
                bpf.get(t["tid"]), t["tid"], got, exiting.get(t["pid"], 0))


# What spin_N calls, and so what may sit above it in a chain: thread_cpu_ns, libc's clock_gettime
# (or its PLT stub) and the vDSO's.
SPIN_CALLEES = re.compile(r"^(thread_cpu_ns|\S*clock_gettime\S*)$")


def frame_name_dso(frame):
    """A frame of perf script -F ...,sym,dso: (symbol, dso)."""
    name, _, dso = frame.rpartition(" (")
    return (name, dso[:-1]) if name else (frame, "")


@test
def test_top_symbol_and_caller_with_g():
    need_bpf()
    path, truth, _ = record(["-g", "-F", str(FREQ)], ["spin", "300,300"])
    samples = perf_script_samples(path, extra=["-F", "+dso"])
    # spin_N reads its thread's CPU clock, which the vDSO cannot read: clock_gettime makes the
    # syscall, and a sample taken there (or while the thread is preempted in an interrupt) is
    # kernel frames first, then the user chain from the registers the thread entered the kernel
    # with: [vdso] __vdso_clock_gettime, clock_gettime, thread_cpu_ns, spin_N, caller_N.  3-10%
    # of a thread's samples beside tools/busyhost.sh, more on a busier host, perf record -g's as
    # spanperf's: the second frame is no test of them, nor of a sample in thread_cpu_ns.  The
    # truth every sample is held to: the user frames above spin_N are what spin_N calls, and
    # spin_N's caller is caller_N, in a sample taken in the kernel as in one taken in user mode.
    kernel_all = kernel_reach = 0
    for t in truth:
        mine = [s for s in samples if s["tid"] == t["tid"] and s["frames"]]
        assert len(mine) > 100, "tid %d has only %d samples" % (t["tid"], len(mine))
        top = collections.Counter(s["frames"][0] for s in mine).most_common(1)[0][0]
        assert top.startswith(t["func"]), "tid %d: top symbol %s, expected %s" % (t["tid"], top, t["func"])
        reach = 0
        for s in mine:
            frames = [frame_name_dso(f) for f in s["frames"]]
            # Kernel frames ([kernel.kallsyms], a module's) lead; the user chain starts at the
            # first frame in a file or the vDSO.
            first = next((i for i, (_, d) in enumerate(frames) if d.startswith("/") or d == "[vdso]"),
                         len(frames))
            in_kernel, user = first > 0, frames[first:]
            at = [i for i, (name, _) in enumerate(user) if name.startswith(t["func"])]
            if at:
                above = user[:at[0]]
                assert all(SPIN_CALLEES.match(n) or d == "[vdso]" for n, d in above), \
                    "tid %d: frames above %s are not what it calls: %s" % (t["tid"], t["func"], s["frames"])
            ok = bool(at) and at[0] + 1 < len(user) and user[at[0] + 1][0].startswith(t["caller"])
            reach += ok
            kernel_all += in_kernel
            kernel_reach += in_kernel and ok
        assert reach >= 0.95 * len(mine), "only %d of %d chains of tid %d reach %s" % (
            reach, len(mine), t["tid"], t["caller"])
    # A thread's first and last moments (clone, pager_thread's own clock reads, exit) are in the
    # kernel with no spin_N under them: two samples a thread are allowed, and a tenth more; chains
    # cut at the kernel would be all of them (3-10% of each thread's samples).
    assert kernel_all - kernel_reach <= 2 * len(truth) + 0.1 * kernel_all, \
        "only %d of %d chains of samples taken in the kernel reach caller_N" % (kernel_reach, kernel_all)


@test
def test_perf_report_reads_cleanly():
    need_bpf()
    path, truth, _ = record(["-g"], ["spin", "200"])
    out = perf_clean(["report", "--stdio", "--no-children", "--sort", "comm,dso,sym"], path)
    assert re.search(r"workload\s+workload\s+\[\.\] spin_0", out), out[:3000]
    assert "[kernel.kallsyms]" in out or "swapper" in out
    perf_clean(["script"], path)
    perf_clean(["report", "--stdio", "-g", "caller"], path)


@test
def test_header_features():
    need_bpf()
    need_perf()
    path, _, _ = record([], ["spin", "100"])
    out = perf_clean(["report", "--header-only"], path)
    for want in ("# hostname : ", "# os release : ", "# perf version : spanperf", "# arch : x86_64",
                 "# nrcpus online : ", "# nrcpus avail : ", "# cpudesc : ", "# cpuid : ",
                 "# total memory : ", "# cmdline : ", "# event : name = ", "# time of first sample",
                 "# time of last sample", "clockid: monotonic", "# reference time"):
        assert want in out, "header lacks %r:\n%s" % (want, out)
    assert re.search(r"event : name = (cycles|cpu-clock),.*id = \{", out), out
    assert "record" in re.search(r"# cmdline : (.*)", out).group(1)
    # report -v prints the same lines (its event line is the start of perf's), and those of
    # spanperf's own features, which perf skips ("# spanperf ...").
    theirs = out.splitlines()
    mine = [l for l in spanperf("report", "-v", "-i", path).stderr.splitlines()
            if l.startswith("# ") and not l.startswith("# spanperf ")]
    assert len(mine) >= 15, mine
    for line in mine:
        assert line in theirs or (line.startswith("# event : ") and any(t.startswith(line) for t in theirs)), \
            "report -v line %r is not perf's:\n%s" % (line, out)


@test
def test_build_ids_are_correct():
    need_bpf()
    need_perf()
    path, _, _ = record([], ["spin", "100"])
    out = perf_clean(["buildid-list"], path)
    ids = dict(reversed(l.split(None, 1)) for l in out.splitlines() if l.strip())
    assert "[kernel.kallsyms]" in ids, out
    notes = run(["readelf", "-n", WORKLOAD], check=True).stdout
    want = re.search(r"Build ID: ([0-9a-f]+)", notes).group(1)
    assert ids.get(os.path.realpath(WORKLOAD)) == want, "workload build id %s, expected %s\n%s" % (
        ids.get(os.path.realpath(WORKLOAD)), want, out)
    kernel = open("/sys/kernel/notes", "rb").read()
    assert bytes.fromhex(ids["[kernel.kallsyms]"]) in kernel


def background_spinner(ms):
    p = subprocess.Popen([WORKLOAD, "spin", ms], stdout=subprocess.PIPE, text=True, errors="replace")
    time.sleep(0.2)
    return p


def recorded_while(fn, pid, tid=None):
    """Runs fn; the share of a CPU that pid (or tid) had meanwhile, by its own clock: what a
    1-second recording of it at 999 Hz can sample, on a host that others keep busy."""
    c0, t0 = cpu_ns(pid, tid), time.monotonic()
    fn()
    return (cpu_ns(pid, tid) - c0) / ((time.monotonic() - t0) * 1e9)


@test
def test_pid_filter_and_existing_process():
    need_bpf()
    d = tmpdir()
    target = background_spinner("3000")
    other = background_spinner("3000")
    try:
        out = os.path.join(d, "p.data")
        share = recorded_while(lambda: spanperf("record", "-p", str(target.pid), "-d", "1", "-o", out, check=True),
                               target.pid)
    finally:
        target.kill()
        other.kill()
        target.wait()
        other.wait()
    samples = perf_script_samples(out)
    assert len(samples) > 0.3 * 999 * share, "only %d samples of a process that had %.2f of a CPU" % (
        len(samples), share)
    assert {s["pid"] for s in samples} == {target.pid}, {s["pid"] for s in samples}
    # It was running before the recording: COMM and MMAP2 came from /proc.
    comms = collections.Counter(s["comm"] for s in samples)
    assert set(comms) == {"workload"}, comms
    syms = collections.Counter(s["frames"][0] for s in samples if s["frames"])
    assert syms.most_common(1)[0][0].startswith("spin_0"), syms.most_common(3)


@test
def test_tid_and_cpu_filters():
    need_bpf()
    d = tmpdir()
    target = background_spinner("3000,3000")
    try:
        tids = sorted(int(t) for t in os.listdir("/proc/%d/task" % target.pid))
        victim = tids[-1]
        out = os.path.join(d, "t.data")
        share = recorded_while(lambda: spanperf("record", "-t", str(victim), "-d", "1", "-o", out, check=True),
                               target.pid, victim)
        out2 = os.path.join(d, "c.data")
        spanperf("record", "-C", "1", "-d", "0.5", "-o", out2, check=True)
    finally:
        target.kill()
        target.wait()
    samples = perf_script_samples(out)
    assert len(samples) > 0.2 * 999 * share, "only %d samples of a thread that had %.2f of a CPU" % (
        len(samples), share)
    assert {s["tid"] for s in samples} == {victim}
    cpus = {s["cpu"] for s in perf_script_samples(out2)}
    assert cpus == {1}, cpus


@test
def test_kernel_frames_resolve():
    need_bpf()
    path, truth, _ = record(["-g"], ["syscalls", "300"])
    samples = [s for s in perf_script_samples(path) if s["tid"] == truth[0]["tid"]]
    kernel = [s for s in samples if any("do_syscall_64" in f for f in s["frames"])]
    assert len(kernel) > 30, "only %d of %d samples went through do_syscall_64" % (len(kernel), len(samples))
    unknown = sum(1 for s in kernel if s["frames"][0].startswith("[unknown]"))
    assert unknown <= 0.05 * len(kernel), "%d of %d kernel leaves unresolved" % (unknown, len(kernel))
    reach = sum(1 for s in samples if any(f.startswith("syscall_loop") for f in s["frames"]))
    assert reach > 0.8 * len(samples), "only %d of %d chains reach syscall_loop" % (reach, len(samples))


@test
def test_sideband_of_new_processes():
    need_bpf()
    path, truth, _ = record([], ["fork", "3"])
    children = {t["child"] for t in truth}
    out = perf_clean(["script", "--show-task-events", "--show-mmap-events"], path)
    for c in children:
        assert re.search(r"PERF_RECORD_FORK\(%d:%d\)" % (c, c), out), "no FORK for %d" % c
        assert re.search(r"PERF_RECORD_EXIT\(%d:%d\)" % (c, c), out), "no EXIT for %d" % c
        assert re.search(r"PERF_RECORD_COMM exec: true:%d/%d" % (c, c), out), "no exec COMM for %d" % c
        assert re.search(r"PERF_RECORD_MMAP2 %d/%d: .* /(usr/)?bin/true" % (c, c), out), "no MMAP2 for %d" % c


@test
def test_command_exit_status_passes_through():
    need_bpf()
    d = tmpdir()
    out = os.path.join(d, "x.data")
    p = spanperf("record", "-q", "-o", out, "--", "sh", "-c", "exit 7")
    assert p.returncode == 7, p.returncode
    p = spanperf("record", "-q", "-o", out, "--", "sh", "-c", "kill -TERM $$")
    assert p.returncode == 128 + signal.SIGTERM, p.returncode


@test
def test_command_that_cannot_run():
    need_bpf()
    d = tmpdir()
    out = os.path.join(d, "x.data")
    p = spanperf("record", "-o", out, "--", "/nonexistent/cmd")
    assert p.returncode == 1
    lines = [l for l in p.stderr.splitlines() if "cycles is not available" not in l]
    assert lines == ["spanperf record: cannot run '/nonexistent/cmd': No such file or directory"], p.stderr
    assert os.listdir(d) == [], "left behind: %s" % os.listdir(d)


@test
def test_signal_leaves_complete_file():
    need_bpf()
    d = tmpdir()
    out = os.path.join(d, "s.data")
    open(out, "w").write("previous")
    for sig in (signal.SIGINT, signal.SIGTERM):
        # Signalled 1.5 s after its events are on (its -v line), not 1.5 s after its start: a busy
        # host's start-up took most of that, and the file held under 100 samples.
        p = subprocess.Popen([SPANPERF, "record", "-v", "-g", "-d", "60", "-o", out],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")
        started = Started(p)
        time.sleep(1.5)
        t0 = time.time()
        p.send_signal(sig)
        started.wait(timeout=30)
        err = started.text()
        assert p.returncode == 0, "after %s: rc %d %s" % (sig.name, p.returncode, err)
        assert time.time() - t0 < 10, "took %.1fs to stop" % (time.time() - t0)
        n = len(perf_script_samples(out))
        assert n > 100, "after %s: %d samples in 1.5 s of the whole host" % (sig.name, n)
        assert own_counts(out), "after %s: no rows in the report" % sig.name
    assert open(out + ".old", "rb").read(8) == b"PERFILE2"  # the first run's file
    # Beside them, only the folder of the symbol files that name Python (and Java) frames for perf,
    # where the host ran them (the test runner runs Python): perf-data(7)'s
    # OUTPUT.spanperf/python-BUILDID.elf and java-BUILDID.elf.
    names = os.path.join(d, "s.data.spanperf")
    assert sorted(set(os.listdir(d)) - {"s.data.spanperf"}) == ["s.data", "s.data.old"], os.listdir(d)
    assert not os.path.exists(names) or all(re.match(r"(python|java)-[0-9a-f]{40}\.elf$", f) for f in os.listdir(names)), \
        os.listdir(names)


@test
def test_bad_input_is_one_sentence():
    need_root()
    d = tmpdir()
    cases = [
        (["-F", "abc"], "-F 'abc'"),
        (["-c", "0"], "-c '0'"),
        (["-e", "nosuch"], "'nosuch'"),
        (["-C", "99"], "CPU 99"),
        (["-p", "99999999"], "99999999"),
        (["--bogus"], "--bogus"),
        (["-o", "/nonexistent/dir/f.data", "-d", "1"], "/nonexistent/dir/f.data"),
        (["-F", "500000", "-o", os.path.join(d, "x")], "perf_event_max_sample_rate"),
    ]
    for args, needle in cases:
        t0 = time.time()
        p = spanperf("record", *args, timeout=30)
        lines = [l for l in p.stderr.splitlines() if "cycles is not available" not in l]
        assert p.returncode == 1, "%s: rc %d" % (args, p.returncode)
        assert len(lines) == 1 and needle in lines[0], "%s: %r" % (args, p.stderr)
        assert time.time() - t0 < 5, "%s took %.1fs" % (args, time.time() - t0)
    assert os.listdir(d) == []


@test
def test_unprivileged_is_told_what_is_needed():
    need_root()
    p = run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", SPANPERF, "record",
             "-d", "1", "-o", "/tmp/never.data"])
    assert p.returncode == 1
    assert "root" in p.stderr and "CAP_BPF" in p.stderr and "CAP_PERFMON" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert not os.path.exists("/tmp/never.data")


@test
def test_lost_samples_are_counted_and_file_stays_valid():
    need_bpf()
    # A one-page ring at 20 kHz with stacks (perf's ring: fp; -g's ehframe samples come through a
    # BPF ring of their own, which -m does not size), and a reader that cannot drain it: the
    # recorder is stopped for half a second once its command runs. Loss by speed alone is not a
    # test: an idle host's reader kept up with 28,374 samples in 0.7 s and lost none.
    d = tmpdir()
    path = os.path.join(d, "perf.data")
    p = subprocess.Popen([SPANPERF, "record", "-o", path, "--call-graph", "fp", "-F", "20000", "-m", "1",
                          "--", WORKLOAD, "spin", "1500,1500"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    try:
        # The recorder starts its command once its rings are open and enabled.
        deadline = time.time() + 60
        while not child_runs(p.pid, WORKLOAD):
            assert p.poll() is None and time.time() < deadline, "the workload never started"
            time.sleep(0.02)
        os.kill(p.pid, signal.SIGSTOP)
        time.sleep(0.5)
        os.kill(p.pid, signal.SIGCONT)
        _, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGCONT)
            p.kill()
            p.wait()
    assert p.returncode == 0, "record exited %d: %s" % (p.returncode, err)
    m = re.search(r"(\d+) LOST", err)
    assert m and int(m.group(1)) > 0, "no loss reported: %s" % err
    rep = spanperf("report", "-i", path, "--format", "json", check=True)
    assert json_lines(rep.stdout)
    # perf itself reads past the LOST records and counts them.
    need_perf()
    pr = run(["perf", "report", "--stdio", "-i", path], check=True)
    chunks = re.search(r"lost (\d+) chunks", pr.stderr)
    assert chunks and int(chunks.group(1)) > 0, "perf saw no LOST records: %s" % pr.stderr
    assert "failed to process" not in pr.stderr and "Bad address" not in pr.stderr, pr.stderr
