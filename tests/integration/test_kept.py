# SPDX-License-Identifier: GPL-2.0
"""The ehframe walk where a cache of chains would go wrong (--call-graph
ehframe): the sampling program's tail cache (bpf/ehkeep.bpf.h) takes a
thread's outer frames from its last chain once proven unchanged, and the
off-CPU program reuses a block's chain (offcpu.bpf.c).  Ground truth is
workload_kept (no frame pointers): two ways (way1, way2) down to one shared
chain at the same stack addresses, ending in leaf1 or leaf2 through one call
site, so a tail taken from the other way's chain would show leaf1 under way2.
By turns, left by longjmp, under a signal handler that runs the shared chain
itself, across an exec of the same thread, across two processes given one
pid with the same addresses; and a 30-deep chain whose every frame is
counted.  Each sampled case also checks that tails were taken from kept
chains, or it would prove nothing of them.  The workload runs for its CPU
time, so the sample counts hold on a loaded host."""
import collections
import os
import re
import subprocess
import threading
import time

from harness import BUILD, SPANPERF, Skip, need_bpf, perf_clean, reap, spanperf, test, tmpdir
from test_dwarf import folded

KEPT_WORKLOAD = os.path.join(BUILD, "tests", "workload_kept")
WAYS = {"leaf1": "way1", "leaf2": "way2", "hleaf": "handler"}


def record(mode, *args):
    need_bpf()
    path = os.path.join(tmpdir(), "kept-%s.data" % mode)
    p = spanperf("record", "-g", "-F", "999", "-v", "-o", path, "--", KEPT_WORKLOAD, mode, *args, check=True)
    return folded(path, comm="workload_kept"), p.stderr


def kept_tails(err):
    """How many chains took their tail from a kept chain, as record -v counts them."""
    m = re.search(r"chains whose tail was the thread's last chain's[^\n]*?(\d+)\n", err)
    return int(m.group(1)) if m else 0


def segments(st):
    """A chain (leaf first) cut at each signal frame: the handler's part, then what it interrupted."""
    out, cur = [], []
    for f in st:
        cur.append(f)
        if f == "__restore_rt":
            out.append(cur)
            cur = []
    out.append(cur)
    return out


def judge(stacks):
    """(samples in a leaf of ours, those whose chain is whole to main, the wrong ones): a leaf's
    next frames must be the shared chain and its own way, as far as the chain goes."""
    n = whole = 0
    wrong = collections.Counter()
    for st, c in stacks.items():
        segs = segments(st)
        leaves = [(seg, seg.index(l), l) for seg in segs for l in WAYS if l in seg]
        if not leaves:
            continue
        n += c
        ok = True
        for seg, i, leaf in leaves:
            want = [leaf, "shared3", "shared2", "shared1", WAYS[leaf]]
            got = seg[i:i + len(want)]
            if got != want[:len(got)]:
                wrong[st] += c
                ok = False
            elif got != want:
                ok = False
        if ok and "main" in segs[-1]:
            whole += c
    return n, whole, wrong


def check(mode, stacks, err):
    n, whole, wrong = judge(stacks)
    assert n >= 100, "%s: %d samples in the leaves: %s\n%s" % (mode, n, stacks.most_common(3), err[-2000:])
    assert kept_tails(err) * 10 >= n, "%s: %d chains of %d with a kept tail: the cache was not tried\n%s" % (
        mode, kept_tails(err), n, err[-2000:])
    assert not wrong, "%s: %d of %d samples with a frame of the other way: %s" % (
        mode, sum(wrong.values()), n, wrong.most_common(3))
    assert whole * 100 >= 95 * n, "%s: %d of %d chains whole: %s" % (mode, whole, n, stacks.most_common(3))


@test
def test_kept_two_ways_by_turns():
    """way1 and way2 by turns, a few hundred us each: the shared frames lie at the same
    addresses with the same return addresses; only way's return address tells them apart."""
    stacks, err = record("alternate", "1500")
    check("alternate", stacks, err)
    assert sum(c for st, c in stacks.items() if "leaf1" in st) >= 30
    assert sum(c for st, c in stacks.items() if "leaf2" in st) >= 30


@test
def test_kept_left_by_longjmp():
    """Each way left by longjmp from its leaf, the next built on the same stack."""
    stacks, err = record("longjmp", "1500")
    check("longjmp", stacks, err)


@test
def test_kept_under_a_signal_handler():
    """A SIGPROF handler (2 ms every 10 ms of CPU) runs the shared chain below whatever it interrupted: its
    chain crosses the signal frame into the interrupted way, each part right."""
    stacks, err = record("signal", "1500")
    check("signal", stacks, err)
    handler = sum(c for st, c in stacks.items() if "hleaf" in st)
    through = sum(c for st, c in stacks.items() if "hleaf" in st and "__restore_rt" in st and "main" in st)
    assert handler >= 20 and through * 100 >= 95 * handler, "%d of %d handler samples reach main" % (
        through, handler)


@test
def test_kept_across_exec():
    """The same thread exec'd into the same program: its new image's chains, right."""
    stacks, err = record("exec", "2000")
    check("exec", stacks, err)


@test
def test_kept_deep_chain_whole():
    """A 30-deep recursion: every frame of it in each chain."""
    stacks, err = record("deep", "30", "1500")
    n = sum(c for st, c in stacks.items() if "deep" in st)
    right = sum(c for st, c in stacks.items() if st.count("deep") == 30 and "main" in st)
    over = sum(c for st, c in stacks.items() if st.count("deep") > 30)
    assert n >= 100 and right * 100 >= 95 * n and not over, "%d of %d chains with 30 deep frames (%d more): %s" % (
        right, n, over, stacks.most_common(2))
    assert kept_tails(err) * 2 >= n, "%d of %d chains with a kept tail\n%s" % (kept_tails(err), n, err[-2000:])


@test
def test_kept_pid_reuse():
    """Two processes of workload_kept given one pid in turn, address randomization off, so that
    their stacks and mappings lie at the same addresses: the first runs way1 only, the second way2
    only, under a whole-host recording.  The second's chains never take the first's tail (its
    kept chain is another slice's), nor the first's the second's."""
    need_bpf()
    path = os.path.join(tmpdir(), "kept-reuse.data")
    rec = subprocess.Popen([SPANPERF, "record", "-a", "-g", "-F", "999", "-v", "-o", path],
                           stderr=subprocess.PIPE, text=True, errors="replace")
    pids = []
    try:
        time.sleep(2)
        for _ in range(20):
            a = subprocess.Popen(["setarch", "x86_64", "-R", KEPT_WORKLOAD, "way1", "400"], stdout=subprocess.DEVNULL)
            a.wait()
            try:
                with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                    f.write(str(a.pid - 1))
            except OSError as e:
                raise Skip("cannot set ns_last_pid: %s" % e)
            b = subprocess.Popen(["setarch", "x86_64", "-R", KEPT_WORKLOAD, "way2", "400"], stdout=subprocess.DEVNULL)
            b.wait()
            if b.pid == a.pid:
                pids.append(a.pid)
            if len(pids) >= 2:
                break
    finally:
        rec.send_signal(2)
        err = rec.communicate()[1]
    assert rec.returncode == 0, err[-2000:]
    if not pids:
        raise Skip("another process took the pid first in 20 tries")
    stacks = collections.Counter()
    out = spanperf("report", "-i", path, "--folded", "--no-inline", "--pids", ",".join(map(str, pids)),
                   check=True).stdout
    for line in out.splitlines():
        st, c = line.rsplit(" ", 1)
        stacks[tuple(reversed(st.split(";")[1:]))] += int(c)
    n, _, wrong = judge(stacks)
    assert not wrong, "%d samples with a frame of the other process's way: %s" % (sum(wrong.values()),
                                                                                 wrong.most_common(3))
    for leaf in ("leaf1", "leaf2"):
        got = sum(c for st, c in stacks.items() if leaf in st)
        assert got >= 30 * len(pids), "%s: %d samples in %d pairs: %s" % (leaf, got, len(pids),
                                                                           stacks.most_common(3))


def offcpu_chains(n, us):
    """workload_kept blocks N US recorded with --off-cpu, every block a sample of its own: how many
    blocks each (leaf, way) chain got, those whole to main, and the record's stderr.  The workload
    starts first and waits for a line the recorded command sends once the events are on, so its
    tables are read before its first block."""
    need_bpf()
    path = os.path.join(tmpdir(), "kept-blocks.data")
    wl = subprocess.Popen([KEPT_WORKLOAD, "blocks", str(n), str(us)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True)
    # A zombie still answers kill -0: the workload is reaped here, in a thread, as soon as it ends.
    reaper = threading.Thread(target=lambda: (wl.stdout.read(), wl.wait()))
    reaper.start()
    go = "echo go > /proc/%d/fd/0; while kill -0 %d 2>/dev/null; do sleep 0.05; done" % (wl.pid, wl.pid)
    try:
        p = spanperf("record", "-g", "--off-cpu", "--off-cpu-thresh", "0", "-v", "-p", str(wl.pid), "-o", path,
                     "--", "sh", "-c", go)
        reaper.join(120)
    finally:
        wl.stdin.close()
        reap(wl)
    assert p.returncode == 0, "record exited %d: %s" % (p.returncode, p.stderr[-2000:])
    combos, whole = collections.Counter(), collections.Counter()
    out = perf_clean(["script", "-F", "tid,event,ip,sym", "--tid", str(wl.pid)], path)
    samples, cur = [], None
    for line in out.splitlines():
        if line.startswith("\t"):
            if cur is not None and line.split():
                cur.append(line.split()[-1])
        elif line.strip():
            # A record's first line; only the off-CPU blocks' chains are kept.
            cur = [] if "offcpu-time" in line else None
            if cur is not None:
                samples.append(cur)
    for syms in samples:
        leaves = [s for s in syms if s in ("bleaf1", "bleaf2")]
        if not leaves:
            continue
        i = syms.index(leaves[0])
        key = tuple(syms[i:i + 5])
        combos[key] += 1
        if "main" in syms[i:]:
            whole[key] += 1
    return combos, whole, p.stderr


@test
def test_kept_offcpu_blocks_each_where_it_blocked():
    """A thread blocking by turns at two sites of the same depth (bleaf1, bleaf2), each under two
    callers (bway1, bway2) with the same stack pointer, ip and innermost return address: a block's
    user chain reused from the thread's last block (offcpu.bpf.c) must be its own.  Every block is
    a sample: each of the four chains has its N blocks, none of another's."""
    n = 300
    combos, whole, err = offcpu_chains(n, 200)
    want = [(leaf, "shared3", "shared2", "shared1", way) for way in ("bway1", "bway2") for leaf in ("bleaf1", "bleaf2")]
    wrong = {k: c for k, c in combos.items() if k not in want}
    assert not wrong, "chains that are none of the four: %s\n%s" % (wrong, err[-1500:])
    for k in want:
        # One block per nanosleep; a spurious wake-up may make two of one, a switch-in the tracepoint
        # hid may lose one: within 10%.  A chain taken from another caller's block would give one of
        # these twice its blocks and another none.
        assert 0.9 * n <= combos[k] <= 1.1 * n, "%s: %d blocks of %d: %s\n%s" % (k, combos[k], n, dict(combos),
                                                                                 err[-1500:])
        assert whole[k] >= 0.95 * combos[k], "%s: %d of %d chains whole to main" % (k, whole[k], combos[k])
