# SPDX-License-Identifier: GPL-2.0
"""Signals as scripts send them (issue 38): INT, TERM and HUP stop every command within about a
second, a shell's background job included (a shell starts those with SIGINT ignored); nohup's
ignored SIGHUP stays ignored, for spanperf and for its CMD; and a reader of the output going
away (`| head -1`) ends top and stat cleanly, with exit status 0 and nothing left behind."""
import os
import signal
import subprocess
import time

from harness import SPANPERF, need_bpf, perf_clean, spanperf, test, tmpdir

# stop.h's STOP_INTERRUPT_S (1 s), plus what a busy, shared machine adds.
STOP_BOUND_S = 3.0
SIGNAL_NAMES = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP"}


def sig_ignored(pid, sig):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("SigIgn:"):
                return bool(int(line.split()[1], 16) & (1 << (sig - 1)))
    return False


class Background:
    """argv started as `sh -c 'argv & wait'` starts it: a background job of a non-interactive
    shell, with SIGINT (and SIGQUIT) ignored by the shell as POSIX says.  stderr is read until
    `ready` appears in it, so that the signal comes once the command is under way."""

    def __init__(self, argv, ready, prefix=()):
        # The job's stderr comes through the shell's stdout, beside the shell's own lines.
        script = '"$@" 2>&1 >/dev/null & echo "pid=$!"; wait $!; echo "rc=$?"'
        # HUP at its default, as a shell gives it, whatever the suite inherited (a suite run under
        # nohup would hand every job an ignored HUP, which spanperf rightly keeps); nohup's own
        # case passes nohup as the prefix, which ignores it again.
        self.sh = subprocess.Popen(list(prefix) + ["sh", "-c", script, "sh"] + list(argv), stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True,
                                   preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL))
        self.pid, self.log = None, []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self.sh.stdout.readline()
            if not line:
                break
            if line.startswith("pid=") and self.pid is None:
                self.pid = int(line[4:])
                continue
            self.log.append(line)
            if ready in line and self.pid:
                return
        self.kill()
        raise AssertionError("%s never said %r: %s" % (argv[1], ready, "".join(self.log)[-1500:]))

    def alive(self):
        try:
            with open("/proc/%d/stat" % self.pid) as f:
                return f.read().split(") ")[1][0] != "Z"
        except OSError:
            return False

    def stop_within(self, sig, bound):
        """Sends sig; the seconds the job took to end and its exit status, or None if it did not."""
        t = time.monotonic()
        os.kill(self.pid, sig)
        while time.monotonic() - t < bound:
            if not self.alive():
                break
            time.sleep(0.02)
        took = time.monotonic() - t
        if self.alive():
            return None, None
        out, _ = self.sh.communicate(timeout=30)
        rc = [l for l in out.splitlines() if l.startswith("rc=")]
        return took, int(rc[-1][3:]) if rc else None

    def kill(self):
        if self.pid and self.alive():
            os.kill(self.pid, signal.SIGKILL)
        self.sh.kill()
        self.sh.wait()


def commands(d):
    out = os.path.join(d, "bg.data")
    return [
        ("record", [SPANPERF, "record", "-v", "-o", out, "-d", "60"], "synthesized", out),
        ("stat", [SPANPERF, "stat", "-v", "-o", os.path.join(d, "bg.txt"), "-d", "60"], "counting with", None),
        ("top", [SPANPERF, "top", "-v", "--batch", "-d", "1", "-n", "1000"], "synthesized", None),
    ]


@test
def test_background_job_stops_on_every_signal():
    """Since round 3, record, stat and top kept an ignored SIGINT ignored: `spanperf record -a -o
    x.data & ... kill -INT $!`, the way perf users script a recording, ran forever.  Each stops
    within about a second of INT, TERM or HUP, as a background job, its file complete."""
    need_bpf()
    d = tmpdir()
    for name, argv, ready, out in commands(d):
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            job = Background(argv, ready)
            try:
                took, rc = job.stop_within(sig, STOP_BOUND_S)
                assert took is not None, "background %s ignored %s for %.0f s" % (
                    name, SIGNAL_NAMES[sig], STOP_BOUND_S)
                assert rc == 0, "background %s exited %s after %s: %s" % (name, rc, SIGNAL_NAMES[sig],
                                                                         "".join(job.log)[-800:])
            finally:
                job.kill()
            if out:
                perf_clean(["script"], out)
                assert [f for f in os.listdir(d) if "tmp" in f] == [], os.listdir(d)


@test
def test_nohup_keeps_sighup_ignored():
    """nohup's SIGHUP stays ignored, for spanperf and for its CMD; INT still stops it.  CMD gets
    the dispositions spanperf was given: a background job's CMD keeps SIGINT ignored, and none
    inherits the SIGPIPE that record ignores for itself."""
    need_bpf()
    d = tmpdir()
    out = os.path.join(d, "nohup.data")
    ign = os.path.join(d, "sigign")
    cmd = ["sh", "-c", 'grep SigIgn /proc/self/status > "$0"; exec sleep 60', ign]
    job = Background([SPANPERF, "record", "-v", "-o", out, "--"] + cmd, "synthesized", prefix=["nohup"])
    try:
        for _ in range(200):
            if os.path.exists(ign) and open(ign).read().strip():
                break
            time.sleep(0.05)
        mask = int(open(ign).read().split()[1], 16)
        assert mask & (1 << (signal.SIGHUP - 1)), "CMD under nohup lost its ignored SIGHUP: %x" % mask
        assert mask & (1 << (signal.SIGINT - 1)), "CMD of a background job lost its ignored SIGINT: %x" % mask
        assert not mask & (1 << (signal.SIGPIPE - 1)), "CMD inherited record's ignored SIGPIPE: %x" % mask
        os.kill(job.pid, signal.SIGHUP)
        time.sleep(1.5)
        assert job.alive(), "record under nohup died of SIGHUP"
        took, rc = job.stop_within(signal.SIGINT, STOP_BOUND_S)
        assert took is not None, "record under nohup ignored SIGINT for %.0f s" % STOP_BOUND_S
    finally:
        job.kill()
    perf_clean(["script"], out)


def pipe_to_head(argv, env):
    """argv | head -1: (the seconds argv ran after head exited, its exit status, head's line)."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    line = p.stdout.readline()
    p.stdout.close()  # head -1 exits
    t = time.monotonic()
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return None, None, line
    took = time.monotonic() - t
    p.stderr.close()
    return took, p.returncode, line


@test
def test_reader_gone_ends_top_and_stat_cleanly():
    """`top --batch | head -1` died of SIGPIPE (exit 141) in the middle of its run.  A reader
    gone is a stop request for top and stat, whose output is what they print: each stops within
    about a second, exits 0, and leaves nothing behind (its TMPDIR is empty, no child runs)."""
    need_bpf()
    d = tmpdir()
    env = dict(os.environ, TMPDIR=d)
    runs = [("top", [SPANPERF, "top", "--batch", "-d", "0.5", "-n", "1000"]),
            # stat prints to stderr, as perf stat: its reader there is the one that goes away.
            ("stat", ["sh", "-c", 'exec "$@" 2>&1', "sh", SPANPERF, "stat", "-I", "200", "-d", "60"])]
    for name, argv in runs:
        took, rc, line = pipe_to_head(argv, env)
        assert line, "%s printed nothing" % name
        assert took is not None, "%s went on for 30 s with its reader gone" % name
        assert rc == 0, "%s exited %d once its reader was gone (141 is death by SIGPIPE)" % (name, rc)
        assert took < STOP_BOUND_S, "%s took %.1f s to stop with its reader gone" % (name, took)
        assert os.listdir(d) == [], "%s left %s" % (name, os.listdir(d))
    # record's output is its file: a reader of its messages gone, it records on.
    out = os.path.join(d, "r.data")
    p = subprocess.Popen([SPANPERF, "record", "-v", "-o", out, "-d", "3"], stderr=subprocess.PIPE)
    p.stderr.readline()
    p.stderr.close()
    assert p.wait(timeout=60) == 0
    perf_clean(["script"], out)
