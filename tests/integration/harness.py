# SPDX-License-Identifier: GPL-2.0
"""A small test harness for the integration tests (stdlib only).

Tests are functions registered with @test.  A test passes by returning,
fails with AssertionError (or any exception), and skips by raising Skip
with the reason, which is printed: a test that cannot run here is never
counted as passed.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# SPANPERF_BIN: make check runs the same tests on a sanitized build.
SPANPERF = os.path.abspath(os.environ.get("SPANPERF_BIN", os.path.join(ROOT, "spanperf")))
BUILD = os.path.join(ROOT, "build")
WORKLOAD = os.path.join(BUILD, "tests", "workload")

_tests = []


class Skip(Exception):
    pass


def test(fn):
    _tests.append(fn)
    return fn


def run(cmd, timeout=120, check=False, **kw):
    """Runs cmd; returns CompletedProcess with text stdout/stderr."""
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise AssertionError("%s exited %d\nstdout: %s\nstderr: %s" %
                             (" ".join(cmd), p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
    return p


def spanperf(*args, **kw):
    return run([SPANPERF] + list(args), **kw)


def rss_env(env=None):
    """env (os.environ by default) for a spanperf whose RSS a test measures: RSS must be what it
    holds.  Under make check's ASan a freed block waits in a quarantine of up to 256 MB before it is
    reused, which RSS cannot tell from a leak or a bound broken: that process frees into none.  A
    block it leaves unreachable is LeakSanitizer's at its exit (exit status 86)."""
    env = dict(os.environ if env is None else env)
    if env.get("ASAN_OPTIONS"):
        env["ASAN_OPTIONS"] += ":quarantine_size_mb=0"
    return env


def traced_env(env=None):
    """env (os.environ by default) for a spanperf run under strace -f.  Under make check's ASan,
    LeakSanitizer cannot stop a traced process's threads: it dies at exit with a "fatal error" and
    status 86.  A traced run is a test of what it opens, not of leaks, which the untraced runs of
    the same commands are checked for."""
    env = dict(os.environ if env is None else env)
    if env.get("ASAN_OPTIONS"):
        env["ASAN_OPTIONS"] += ":detect_leaks=0"
    return env


def tmpdir():
    d = tempfile.mkdtemp(prefix="spanperf-it-")
    _cleanup.append(d)
    return d


_cleanup = []


def json_lines(text):
    return [json.loads(l) for l in text.splitlines() if l.strip().startswith("{")]


def steal_ticks():
    """USER_HZ ticks the hypervisor took from this VM's CPUs so far, all CPUs summed (/proc/stat)."""
    with open("/proc/stat") as f:
        return int(f.readline().split()[8])


def steal_ns_since(before):
    """An upper bound of the time any one thread lost to the hypervisor since steal_ticks() gave
    `before`: every CPU's steal, plus a tick per CPU for the counters' rounding; 0 if none.

    A VM's thread loses that time while it runs: wall-clock stamps (switch stamps, perf's
    task-clock) count it, CLOCK_THREAD_CPUTIME_ID does not (paravirt steal accounting), so a
    figure compared with the thread's own clock may be off by it and no more."""
    d = steal_ticks() - before
    tick = 1e9 / os.sysconf("SC_CLK_TCK")
    return (d + os.cpu_count()) * tick if d > 0 else 0.0


def cpu_ns(pid, tid=None):
    """CPU time a process (or one thread) has run so far, as its own clock counts it (schedstat)."""
    tids = [tid] if tid else os.listdir("/proc/%d/task" % pid)
    return sum(int(open("/proc/%d/task/%s/schedstat" % (pid, t)).read().split()[0]) for t in tids)


def reap(p):
    """Kills p if it still runs, and waits for it: the finally of every test that starts one."""
    if p.poll() is None:
        p.kill()
        p.wait()


def off_near_truth(got, t, frac):
    """Whether `got` ns off CPU agrees with the workload's truth `t` (its off_ns, preempted_ns,
    and, when known, steal_ns), within `frac` of it.

    The truth is wall less CPU time in each call.  A call in which the thread was also preempted
    holds run-queue time that is no block: the figure may be short by that call's whole time,
    never more (one 10 ms tick, a few times in a hundred runs on a busy 2-CPU host)."""
    tol = frac * t["off_ns"] + t.get("steal_ns", 0)
    return t["off_ns"] - t["preempted_ns"] - tol <= got <= t["off_ns"] + tol


def in_container(script, root):
    """sh -c script in a mount namespace of its own with a tmpfs at root (its files no one else sees):
    a runtime in a container, for the Python and Java tests.  A script that ends in `exec` runs its
    program under the pid of the process started from the command returned here."""
    return ["unshare", "-m", "--propagation", "private", "sh", "-c",
            "mount -t tmpfs none %s && %s" % (root, script)]


def need_root():
    if os.geteuid() != 0:
        raise Skip("needs root (BPF programs and system-wide perf events)")


def need_perf():
    if not shutil.which("perf"):
        raise Skip("perf is not installed (Debian package linux-perf)")


def need_bpf():
    need_root()
    if not _bpf_ok():
        raise Skip("BPF programs cannot be loaded here: %s" % _bpf_reason)


_bpf_state = None
_bpf_reason = ""


def _bpf_ok():
    global _bpf_state, _bpf_reason
    if _bpf_state is None:
        p = spanperf("probe")
        _bpf_state = p.returncode == 0 and "perf_event programs        yes" in p.stdout
        _bpf_reason = (p.stdout + p.stderr).strip().splitlines()[-1:] if not _bpf_state else ""
    return _bpf_state


_LOST_WARNING = re.compile(r"\s*Warning:\s*Processed \d+ events and lost \d+ chunks!\s*Check IO/CPU overload!\s*")


def perf_clean(args, path, timeout=120, lost_ok=False):
    """Runs perf on a file; asserts exit 0 and nothing on stderr.

    perf report exits 0 on some corrupt files, so stderr is the real check.  lost_ok: a test
    that compares chains, not counts, may read a file whose rings overflowed on a busy host;
    perf's warning about the LOST records is then all it may say.  What names Python frames is
    left out (without_py_names)."""
    need_perf()
    p = run(["perf"] + args + ["-i", path], timeout=timeout)
    assert p.returncode == 0, "perf %s exited %d: %s" % (args[0], p.returncode, p.stderr[-1500:])
    err = _LOST_WARNING.sub("", p.stderr) if lost_ok else p.stderr
    assert err.strip() == "", "perf %s wrote to stderr:\n%s" % (args[0], p.stderr[-1500:])
    return without_py_names(p.stdout)


# The event of the records that name Python frames (perfdata/names.h PY_NAMES_EVENT_NAME): one
# sample per code object of every Python process a whole-host recording saw (the test runner's
# own among them), names for perf and report rather than samples of a program.
PY_NAMES_EVENT = "spanperf-python"
_PY_NAMES_LINE = re.compile(r"^[^\t].*\s" + PY_NAMES_EVENT + r":(\s|$)")
_REPORT_EVENT = re.compile(r"^# Samples: .* of event '(.*)'")
_HEAD = re.compile(r"^(.*?)\s+(-?\d+)/(-?\d+)\s+\[(\d+)\]\s*(.*)$", re.S)
_EVENT = re.compile(r"^(\S*):\s*(.*)$")


def without_py_names(out):
    """perf's output without what names Python frames: perf script's spanperf-python records
    (found by their event field: one line each, no chain, no blank line after, so that a
    parser splitting at blank lines would take one for the head of the next sample), and
    perf report's section of that event."""
    keep, section = [], None
    for line in out.split("\n"):
        m = _REPORT_EVENT.match(line)
        if m:
            section = m.group(1)
        if section == PY_NAMES_EVENT or _PY_NAMES_LINE.match(line):
            continue
        keep.append(line)
    return "\n".join(keep)


def perf_script_samples(path, extra=(), lost_ok=False):
    """perf script's samples as dicts: comm, pid, tid, cpu and frames (symbols, leaf first).

    Without call chains the single frame is the sample's own symbol.  The event field lets
    perf_clean leave out the records that name Python frames.  A whole-host file holds other
    processes' names, whatever they are: a comm may hold spaces or a newline (perf prints it
    raw, so its first part is a line of its own, taken with the next), a symbol spaces."""
    out = perf_clean(["script", "-F", "comm,pid,tid,cpu,event,ip,sym"] + list(extra), path, lost_ok=lost_ok)
    samples = []
    pending = None
    for line in out.split("\n"):
        if pending is None and not line.strip():
            continue
        if pending is None and line.startswith("\t"):
            parts = line.split(None, 1)
            if samples and len(parts) == 2:
                samples[-1]["frames"].append(parts[1].strip())
            continue
        head = line if pending is None else pending + "\n" + line
        m = _HEAD.match(head)
        if not m:
            pending = head
            continue
        pending = None
        # "EVENT: [IP SYM]"
        rest = _EVENT.match(m.group(5)).group(2).split(None, 1)
        samples.append({"comm": m.group(1).strip(), "pid": int(m.group(2)), "tid": int(m.group(3)),
                        "cpu": int(m.group(4)), "frames": [rest[1].strip()] if len(rest) == 2 else []})
    assert pending is None or not pending.strip(), "unexpected perf script line: %r" % pending
    return samples


def main(argv):
    only = [a for a in argv[1:] if not a.startswith("-")]
    # Tests stop a spanperf with SIGINT, as Ctrl-C does.  Started in the background by a shell
    # without job control (make check &, a CI script's job) the harness inherits SIGINT ignored,
    # which its children would inherit and spanperf keeps, as any program does: a record -a
    # stopped so never stopped.  Caught here, it is the default again in every child.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    results = {"passed": 0, "failed": 0, "skipped": 0}
    failures = []
    t_all = time.time()
    for fn in _tests:
        name = fn.__module__.replace("test_", "") + "." + fn.__name__
        if only and not any(o in name for o in only):
            continue
        t0 = time.time()
        try:
            fn()
            results["passed"] += 1
            print("  PASS  %-46s %5.1fs" % (name, time.time() - t0), flush=True)
        except Skip as e:
            results["skipped"] += 1
            print("  SKIP  %-46s %s" % (name, e), flush=True)
        except Exception as e:  # noqa: BLE001 - report every failure
            results["failed"] += 1
            failures.append(name)
            msg = str(e) if isinstance(e, AssertionError) else traceback.format_exc()
            print("  FAIL  %-46s %5.1fs\n%s" % (name, time.time() - t0,
                                                "\n".join("        " + l for l in msg.splitlines()[:30])),
                  flush=True)
    for d in _cleanup:
        shutil.rmtree(d, ignore_errors=True)
    print("integration: %d passed, %d failed, %d skipped (%.0fs)" %
          (results["passed"], results["failed"], results["skipped"], time.time() - t_all))
    return 1 if results["failed"] else 0


class Started:
    """A recorder's stderr read aside until its -v line saying its events are on ("synthesized"):
    what a test starts its workload on, however long a busy host takes to start the recorder."""

    def __init__(self, proc, timeout=120):
        import threading
        self.proc, self.lines, on = proc, [], threading.Event()

        def read():
            for line in proc.stderr:
                self.lines.append(line)
                if "synthesized" in line:
                    on.set()
        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()
        if not on.wait(timeout=timeout):
            reap(proc)  # not left running past the test that gave up on it
            raise AssertionError("the recorder never started: %s" % self.text())

    def text(self):
        return "".join(self.lines)[-1500:]

    def wait(self, timeout=60):
        """The recorder's exit status, its stderr read to the end."""
        self.proc.wait(timeout=timeout)
        self.reader.join(timeout=timeout)
        return self.proc.returncode
