# SPDX-License-Identifier: GPL-2.0
"""record --switch-output, for real: each rotated file complete on its own (perf reads it with
nothing on stderr, the workload's symbol resolves in every file, not only the first), the oldest
deleted past --switch-max-files, and no sample lost or doubled at a switch (the files' samples,
as perf counts them, against the recording's own counters for those files)."""
import os
import re
import signal
import subprocess
import time

import pprof_decode
from harness import (SPANPERF, WORKLOAD, json_lines, need_bpf, perf_clean, perf_script_samples, run, spanperf,
                     test, tmpdir)
from test_report import pprof_tool

DUMP = re.compile(r"^\[ spanperf record: dump (\S+): (\d+) samples \]$")
TOTAL = re.compile(r"^\[ spanperf record: (\d+) samples from")


def dumps(stderr):
    """The files the recording announced, in order, with the samples it counted into each."""
    out = [(m.group(1), int(m.group(2))) for m in map(DUMP.match, stderr.splitlines()) if m]
    total = [int(m.group(1)) for m in map(TOTAL.match, stderr.splitlines()) if m]
    assert len(total) == 1, "no summary line in:\n" + stderr[-2000:]
    return out, total[0]


def check_files(d, announced, total, kept):
    # Every sample went to exactly one file: the announced counts add up to the recording's total.
    assert sum(n for _, n in announced) == total, "files %s vs total %d" % (announced, total)
    names = sorted(f for f in os.listdir(d) if f.startswith("perf.data."))
    want = [os.path.basename(f) for f, _ in announced[-kept:]]
    assert names == want, "files left %s, expected the newest %d: %s" % (names, kept, want)
    # perf's stamp to the hundredth; a second file ending in the same hundredth (a size switch
    # just before -d's end) takes "-1", which sorts between its neighbours (44182c0).
    assert all(re.fullmatch(r"perf\.data\.\d{16}(-\d+)?", n) for n in names), names
    ours = theirs = 0
    for f, n in announced[-kept:]:
        path = os.path.join(d, os.path.basename(f))
        perf_clean(["report", "--stdio"], path)
        samples = perf_script_samples(path)
        ours += n
        theirs += len(samples)
        rows = json_lines(spanperf("report", "-i", path, "--format", "json", "--sort", "sym",
                                   check=True).stdout)
        assert sum(r["samples"] for r in rows) == len(samples), \
            "%s: spanperf report counts %d, perf %d" % (f, sum(r["samples"] for r in rows), len(samples))
        yield path, samples
    assert abs(theirs - ours) <= 0.02 * ours, "perf read %d samples from the files, the recording counted %d" % (
        theirs, ours)


@test
def test_switch_output_time_keeps_newest_complete_files():
    need_bpf()
    d = tmpdir()
    # Started before the recording, so that every file knows it from its own side-band only.
    wl = subprocess.Popen([WORKLOAD, "spin", "60000"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.2)
        p = spanperf("record", "-F", "999", "-o", os.path.join(d, "perf.data"), "--switch-output=1s",
                     "--switch-max-files", "3", "-d", "6", timeout=120)
    finally:
        wl.kill()
        wl.wait()
    assert p.returncode == 0, "record exited %d: %s" % (p.returncode, p.stderr)
    announced, total = dumps(p.stderr)
    assert len(announced) >= 5, "6 s at 1 s made only %d files: %s" % (len(announced), p.stderr)
    for path, samples in check_files(d, announced, total, 3):
        spin = [s for s in samples if s["pid"] == wl.pid]
        # However little CPU a loaded host leaves it, enough to tell resolved from not.
        assert len(spin) > 20, "%s: %d samples of the workload" % (path, len(spin))
        # Its user frames resolve (a tick's kernel frames aside): the file's own MMAP2 placed its binary.
        named = sum(1 for s in spin if s["frames"] and s["frames"][0].startswith("spin_0"))
        assert named >= 0.8 * len(spin), "%s: only %d of %d workload samples in spin_0" % (path, named, len(spin))


@test
def test_switch_output_on_sigusr2():
    need_bpf()
    d = tmpdir()
    p = subprocess.Popen([SPANPERF, "record", "-F", "999", "-o", os.path.join(d, "perf.data"), "--switch-output",
                          "--", WORKLOAD, "spin", "60000"], stderr=subprocess.PIPE, text=True, errors="replace")
    try:
        for _ in range(2):
            time.sleep(1.5)
            p.send_signal(signal.SIGUSR2)
        time.sleep(1.5)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    announced, total = dumps(err)
    assert len(announced) == 3, "two SIGUSR2 and the end made %d files: %s" % (len(announced), err)
    for _ in check_files(d, announced, total, 3):
        pass


@test
def test_switch_output_bad_values():
    for args, what in ((["--switch-output=10"], "--switch-output '10'"),
                       (["--switch-output=5x"], "--switch-output '5x'"),
                       (["--switch-max-files", "3"], "--switch-max-files needs --switch-output"),
                       (["--switch-output=1s", "--switch-max-files", "0"], "--switch-max-files '0'")):
        p = spanperf("record", *args, "-d", "1")
        assert p.returncode == 1, "%s exited %d" % (args, p.returncode)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and what in lines[0], "%s said: %s" % (args, p.stderr)


@test
def test_pprof_dir_one_profile_per_kept_file():
    need_bpf()
    d, pd = tmpdir(), tmpdir()
    p = spanperf("record", "-F", "999", "-o", os.path.join(d, "perf.data"), "--switch-output=1s",
                 "--switch-max-files", "2", "--pprof-dir", pd, "-d", "4", "--", WORKLOAD, "spin", "60000",
                 timeout=120)
    assert p.returncode in (0, 143), "record exited %d: %s" % (p.returncode, p.stderr)
    announced, total = dumps(p.stderr)
    kept = [os.path.basename(f) for f, _ in announced[-2:]]
    assert sorted(os.listdir(pd)) == sorted(k + ".pb.gz" for k in kept), (os.listdir(pd), kept)
    for (f, n), k in zip(announced[-2:], kept):
        prof = pprof_decode.decode(os.path.join(pd, k + ".pb.gz"))
        # The profile holds exactly the file's samples, as perf counts them.
        assert sum(s["value"][0] for s in prof["sample"]) == len(perf_script_samples(os.path.join(d, k))) == n
    # pprof itself reads one.
    tool = pprof_tool()
    q = run([tool, "-top", os.path.join(pd, kept[-1] + ".pb.gz")], timeout=120)
    assert q.returncode == 0 and "flat" in q.stdout, q.stderr


@test
def test_pprof_dir_needs_a_directory():
    p = spanperf("record", "--switch-output", "--pprof-dir", "/nonexistent/x", "-d", "1")
    assert p.returncode == 1 and p.stderr.strip().splitlines()[-1].endswith(
        "--pprof-dir '/nonexistent/x' is not a writable directory"), p.stderr
    p = spanperf("record", "--pprof-dir", "/tmp", "-d", "1")
    assert p.returncode == 1 and "--pprof-dir needs --switch-output" in p.stderr, p.stderr


@test
def test_switch_output_size():
    need_bpf()
    d = tmpdir()
    p = spanperf("record", "-a", "-F", "999", "-o", os.path.join(d, "perf.data"), "--switch-output=64K",
                 "--switch-max-files", "3", "-d", "3",
                 "--", WORKLOAD, "spin", "60000", timeout=120)
    assert p.returncode in (0, 143), "record exited %d: %s" % (p.returncode, p.stderr)
    announced, total = dumps(p.stderr)
    assert len(announced) >= 3, "3 s of a whole host made only %d files of 64K: %s" % (len(announced), p.stderr)
    # Each file but the last was switched once its data passed the size (header and side-band on top).
    for f, _ in announced[-3:-1]:
        size = os.path.getsize(os.path.join(d, os.path.basename(f)))
        assert size >= 64 << 10, "%s is %d bytes" % (f, size)
    for _ in check_files(d, announced, total, 3):
        pass
