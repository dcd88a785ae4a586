# SPDX-License-Identifier: GPL-2.0
"""The live floor, for real: top reads the recording in memory (no file, no folder, whatever ends
it), and record --pprof-dir builds each file's profile from the same records as it recorded them,
so it is the profile report --pprof makes of that file, but for what only the whole stream knows."""
import os
import re
import shutil
import subprocess

import pprof_decode
from harness import SPANPERF, WORKLOAD, Skip, need_bpf, run, spanperf, test, tmpdir, traced_env

WRITES = re.compile(r'^\d+\s+(openat|open|creat)\(.*"([^"]*)".*(O_WRONLY|O_RDWR|O_CREAT)')
MADE = re.compile(r'^\d+\s+(mkdir|mkdirat|rename|renameat2?|unlink|unlinkat)\(')


def traced(cmd, shell=False):
    """Runs cmd under strace -f; the files it opened to write and the folders and names it changed."""
    if not shutil.which("strace"):
        raise Skip("strace is not installed (apt-get install strace)")
    log = os.path.join(tmpdir(), "strace.log")
    trace = ["strace", "-f", "-qq", "-o", log, "-e",
             "trace=open,openat,creat,mkdir,mkdirat,rename,renameat,renameat2,unlink,unlinkat"]
    # No debuginfod: a debug file it fetched would be a file written by the symbolizer, not by top.
    env = traced_env()
    env.pop("DEBUGINFOD_URLS", None)
    if shell:
        p = run(["sh", "-c", " ".join(trace) + " " + cmd], timeout=120, env=env)
    else:
        p = run(trace + cmd, timeout=120, env=env)
    writes, made = [], []
    with open(log) as f:
        for line in f:
            m = WRITES.match(line)
            if m and "= -1" not in line and not m.group(2).startswith("/dev/"):
                writes.append(line.strip())
            if MADE.match(line) and "= -1" not in line:
                made.append(line.strip())
    return p, writes, made


@test
def test_top_batch_makes_no_file_or_folder():
    need_bpf()
    p, writes, made = traced([SPANPERF, "top", "--batch", "-d", "1", "-n", "2"])
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("   spanperf top:") == 2, p.stdout
    assert not writes, "top opened files to write:\n" + "\n".join(writes)
    assert not made, "top made, renamed or removed names:\n" + "\n".join(made)


@test
def test_top_batch_cut_by_head_leaves_nothing():
    """top --batch | head -1: top dies of SIGPIPE mid-run, with nothing to clean up behind it."""
    need_bpf()
    p, writes, made = traced("%s top --batch -d 1 -n 3 | head -1" % SPANPERF, shell=True)
    assert p.stdout.startswith("   spanperf top:"), p.stdout
    assert not writes and not made, "\n".join(writes + made)


def by_function(path, thread=None, user=False):
    """Samples by leaf function, of every thread or of those named thread (pprof's "thread" label); with
    user, of those whose leaf is in no kernel mapping."""
    p = pprof_decode.decode(path)
    strs = p["strings"]
    if thread is not None:
        p["sample"] = [smp for smp in p["sample"]
                       if any(strs[lab.get(1, 0)] == "thread" and strs[lab.get(2, 0)] == thread for lab in smp["labels"])]
    if user:
        kernel = set(m[1] for m in p["mapping"] if strs[m.get(5, 0)].startswith("[kernel"))
        p["sample"] = [smp for smp in p["sample"] if p["location"][smp["loc"][0]].get(2, 0) not in kernel]
    return pprof_decode.flat_by_function(p)


@test
def test_pprof_dir_profiles_are_report_pprof_of_their_files():
    need_bpf()
    d, pd = tmpdir(), tmpdir()
    # A name of its own: other workloads may spin on a shared host.
    wl = os.path.join(tmpdir(), "livepprof")
    shutil.copy(WORKLOAD, wl)
    p = spanperf("record", "-F", "999", "-o", os.path.join(d, "perf.data"), "--switch-output=1s", "--pprof-dir", pd,
                 "-d", "4", "--", wl, "spin", "60000", timeout=120)
    assert p.returncode in (0, 143), "record exited %d: %s" % (p.returncode, p.stderr)
    files = sorted(f for f in os.listdir(d) if f.startswith("perf.data."))
    assert len(files) >= 2 and sorted(os.listdir(pd)) == sorted(f + ".pb.gz" for f in files), (files, os.listdir(pd))
    for f in files:
        out = os.path.join(tmpdir(), "report.pb.gz")
        spanperf("report", "-i", os.path.join(d, f), "--pprof", out, check=True)
        mine, theirs = by_function(os.path.join(pd, f + ".pb.gz")), by_function(out)
        # The window's records are exactly the file's.
        assert sum(mine.values()) == sum(theirs.values()), (f, sum(mine.values()), sum(theirs.values()))
        # The workload lives across the files: its samples are named alike, function by function.
        ours, report_ours = by_function(os.path.join(pd, f + ".pb.gz"), "livepprof"), by_function(out, "livepprof")
        assert ours == report_ours, (f, ours, report_ours)
        # What the file alone names in user space, the live session names too; it names more, having seen
        # the processes that came or went at the file's edge (the file's side-band is /proc's at its start).
        # The slack: a JIT's perf map grown between the window and the report.  Not the kernel's: BPF
        # programs loaded during the run are named by /proc/kallsyms as each read it, at its own time.
        mine_user, theirs_user = by_function(os.path.join(pd, f + ".pb.gz"), user=True), by_function(out, user=True)
        short = {k: (mine_user.get(k, 0), n) for k, n in theirs_user.items()
                 if k != "[unknown]" and mine_user.get(k, 0) < n}
        assert sum(n - m for m, n in short.values()) <= 0.01 * sum(theirs.values()) + 5, (f, short)
    assert any(by_function(os.path.join(pd, f + ".pb.gz"), "livepprof").get("spin_0") for f in files)
