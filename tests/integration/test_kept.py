# SPDX-License-Identifier: GPL-2.0
"""The ehframe walk where a cache of chains would go wrong (--call-graph
ehframe): the sampling program's tail cache (bpf/ehkeep.bpf.h) takes a
thread's outer frames from its last chain once proven unchanged, and the
off-CPU program reuses a block's user and kernel chains (offcpu.bpf.c,
offkstack.bpf.h).  Ground truth is
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
import itertools
import os
import re
import subprocess
import threading
import time

from harness import BUILD, SPANPERF, Skip, json_lines, need_bpf, perf_clean, reap, spanperf, test, tmpdir
from test_dwarf import folded

KEPT_WORKLOAD = os.path.join(BUILD, "tests", "workload_kept")
PY_KEPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pykept.py")
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
    # Tried, not a hit rate: a thread whose kept chains keep failing skips its next walks
    # (ehkeep.bpf.h), and the ways' turns make them fail by design; 8-10% seen on an idle host.
    assert kept_tails(err) * 20 >= n, "%s: %d chains of %d with a kept tail: the cache was not tried\n%s" % (
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


def record_blocks(wl, path):
    """record -g --off-cpu of workload_kept wl, which waits for a line on its stdin: the recorded
    command sends it once the events are on, then waits for wl to end.  The finished record."""
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
    return p


def offcpu_chains(n, us):
    """workload_kept blocks N US recorded with --off-cpu, every block a sample of its own: how many
    blocks each (leaf, way) chain got, those whole to main, and the record's stderr.  The workload
    starts first and waits for a line the recorded command sends once the events are on, so its
    tables are read before its first block."""
    need_bpf()
    path = os.path.join(tmpdir(), "kept-blocks.data")
    wl = subprocess.Popen([KEPT_WORKLOAD, "blocks", str(n), str(us)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True)
    p = record_blocks(wl, path)
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


# workload_kept kblocks' sites: the user leaf, its SITES letter, and the kernel functions its block's chain has.
KSITES = {"kleaf_sleep": ("s", ("do_nanosleep",)), "kleaf_pipe": ("p", ("pipe_read", "anon_pipe_read")),
          "kleaf_poll": ("o", ("do_sys_poll",)), "kleaf_select": ("e", ("do_select",))}


def offcpu_samples(path, tid):
    """perf script's offcpu-time samples of tid: (kernel frames, user frames) each, leaf first."""
    out = perf_clean(["script", "-F", "tid,event,ip,sym", "--tid", str(tid)], path)
    samples, cur = [], None
    for line in out.splitlines():
        if line.startswith("\t"):
            f = line.split()
            if cur is not None and len(f) >= 2:
                cur[0 if f[0].startswith("ffff") else 1].append(f[1])
        elif line.strip():
            cur = ([], []) if "offcpu-time" in line else None
            if cur is not None:
                samples.append(cur)
    return samples


def kernel_chain_wrong(kern, user):
    """Why a block's kernel chain is not its user leaf's site (None if it is): it must name the site's
    kernel function and no other site's, and reach the syscall entry (the whole chain)."""
    leaf = next((f for f in user if f in KSITES), None)
    if leaf is None:
        return "no kblocks leaf in %s" % user[:6]
    own = KSITES[leaf][1]
    others = [n for l, (_, names) in KSITES.items() if l != leaf for n in names]
    if not any(f in own for f in kern) or any(f in others for f in kern):
        return "%s under %s" % (kern, leaf)
    if not kern or kern[-1] != "entry_SYSCALL_64_after_hwframe":
        return "cut short: %s" % kern
    return None


def orc_in_kallsyms():
    """The kernel names its ORC tables where root reads them (what offkstack.bpf.h needs)."""
    with open("/proc/kallsyms") as f:
        return any(l.split()[2] == "__start_orc_unwind_ip" and int(l.split()[0], 16) for l in f)


def kernel_reuse(err):
    """record -v's count of kernel chains reused, and of those the kernel unwound."""
    for line in err.splitlines():
        if "off-CPU kernel stacks:" in line:
            nums = [int(w) for w in line.replace(",", " ").split() if w.isdigit()]
            return nums[0], nums[1]
    return 0, 0


def record_kblocks(n, sites):
    """workload_kept kblocks N 200 SITES recorded alone (-p) with --off-cpu, every block a sample: the
    workload's (kernel, user) chains and the record's stderr.  The workload starts first and waits for a
    line the recorded command sends once the events are on, so its tables are read before its first block."""
    need_bpf()
    path = os.path.join(tmpdir(), "kept-kblocks.data")
    wl = subprocess.Popen([KEPT_WORKLOAD, "kblocks", str(n), "200", sites], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True)
    tid = json_lines(wl.stdout.readline())[0]["tid"]
    p = record_blocks(wl, path)
    return offcpu_samples(path, tid), p.stderr


def check_reused(samples, err):
    """Where the kernel's ORC tables are readable, most of the thread's kernel chains were reused."""
    reused, taken = kernel_reuse(err)
    if orc_in_kallsyms():
        assert reused >= 0.8 * len(samples), "%d kernel chains reused, %d taken by the kernel, of %d blocks" % (
            reused, taken, len(samples))


@test
def test_kept_offcpu_kernel_chains_by_turns():
    """One thread blocking by turns in nanosleep, a pipe's read, ppoll and select, each from the
    same user depth (workload_kept kblocks): four kernel chains of about the same depth, one after
    the other.  Every block is a sample: each holds its own site's kernel chain, whole to the
    syscall entry, and each site has its blocks.  Where the kernel's ORC tables are readable the
    thread's chains are reused after their first block (offkstack.bpf.h): most of them."""
    n = 300
    samples, err = record_kblocks(n, "spoe")
    # The workload's last block, waiting for the pipe's child, is none of the four.
    samples = [(k, u) for k, u in samples if any(f in KSITES for f in u)]
    wrong = [w for w in (kernel_chain_wrong(k, u) for k, u in samples) if w]
    assert not wrong, "%d of %d blocks: %s" % (len(wrong), len(samples), wrong[:3])
    per = collections.Counter(next(f for f in u if f in KSITES) for _, u in samples)
    for leaf in KSITES:
        # One block per call; a spurious wake-up may make two of one, a switch-in the tracepoint hid may lose one.
        assert 0.9 * n <= per[leaf] <= 1.1 * n, "%s: %d blocks of %d: %s" % (leaf, per[leaf], n, dict(per))
    check_reused(samples, err)


@test
def test_kept_offcpu_kernel_chains_under_one_user_chain():
    """clock_nanosleep and ppoll by turns through syscall(2) from one call site (kblocks SO): one
    user chain, two kernel chains, so only the kernel's words tell a kept chain from the other.
    Each syscall's blocks hold its own chain, whole: 300 and 300, never 600 of one."""
    n = 300
    samples, err = record_kblocks(n, "SO")
    samples = [(k, u) for k, u in samples if "kleaf_sys" in u]
    per = collections.Counter("sleep" if "do_nanosleep" in k else "poll" if "do_sys_poll" in k else "?"
                              for k, _ in samples)
    cut = [k for k, _ in samples if not k or k[-1] != "entry_SYSCALL_64_after_hwframe"]
    assert 0.9 * n <= per["sleep"] <= 1.1 * n and 0.9 * n <= per["poll"] <= 1.1 * n and not per["?"] and \
        not cut, (dict(per), cut[:3])
    check_reused(samples, err)


# Run under record: process A blocks in select and exits, B is given A's pid (ns_last_pid) and blocks
# in ppoll (no child: its pid would be the next A's); up to 20 tries for 3 reuses.  Prints {"reused": [pids]} or {"skip": why}.
PID_REUSE = """
import json, subprocess, sys
wl, pids = sys.argv[1], []
def run(sites):
    out = subprocess.run([wl, "kblocks", "300", "100", sites], input="go\\n", capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.splitlines()[0])["pid"]
for _ in range(20):
    a = run("e")
    try:
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(a - 1))
    except OSError as e:
        print(json.dumps({"skip": "cannot set ns_last_pid: %s" % e}))
        sys.exit(0)
    if run("o") == a:
        pids.append(a)
    if len(pids) >= 3:
        break
print(json.dumps({"reused": pids}))
"""


@test
def test_kept_offcpu_kernel_chain_pid_reuse():
    """A process blocking in select exits and another gets its pid at once (ns_last_pid), blocking
    in ppoll from the same user depth: every block of that pid holds its own site's
    kernel chain, the newcomer's never the old process's kept one (record follows the tree of a
    script that makes them, every block a sample)."""
    need_bpf()
    path = os.path.join(tmpdir(), "kept-kreuse.data")
    p = spanperf("record", "-g", "--off-cpu", "--off-cpu-thresh", "0", "-F", "1", "-v", "-o", path, "--",
                 "python3", "-c", PID_REUSE, KEPT_WORKLOAD)
    assert p.returncode == 0, "record exited %d: %s" % (p.returncode, p.stderr[-2000:])
    res = json_lines(p.stdout)[-1]
    if "skip" in res:
        raise Skip(res["skip"])
    if len(res["reused"]) < 3:
        raise Skip("another process took the pid first in %d of 20 tries" % (20 - len(res["reused"])))
    for pid in res["reused"]:
        samples = offcpu_samples(path, pid)
        # By kernel chain: A's 300 blocks in select, B's 300 in ppoll, within 10% (a spurious
        # wake-up, a switch-in the tracepoint hid).  Each lives some 60 ms, less than the recorder takes
        # to read a new process: most of its user chains are whole from the mappings its exec and mmaps
        # noted (eh_fresh, which the off-CPU walk shares since 415afcf): 226-300 of B's 300 seen since,
        # 214 before.  The named ones each under its own kernel chain.
        by_kernel = collections.Counter(l for k, _ in samples for l, (_, names) in KSITES.items()
                                        if any(f in names for f in k))
        named = [(k, u) for k, u in samples if any(f in KSITES for f in u)]
        wrong = [w for w in (kernel_chain_wrong(k, u) for k, u in named) if w]
        polls = sum(1 for _, u in named if "kleaf_poll" in u)
        assert all(270 <= by_kernel[l] <= 330 for l in ("kleaf_select", "kleaf_poll")) and polls >= 200 and \
            not wrong, (pid, dict(by_kernel), polls, wrong[:3])


@test
def test_kept_python_two_ways_by_turns():
    """A Python thread's native frames from its last chain (pykept.py under 3.9, 3.11 and 3.13
    where present): way1 and way2 by turns down one shared chain of Python frames; each sample's
    Python frames its own way's, to the module level, and tails taken from kept chains."""
    from frames_common import folded as folded_all
    from test_python import py_frames, pythons

    need_bpf()
    other = {"leaf1": "way2", "leaf2": "way1"}
    ran = 0

    def native_prefix(st):
        """The native frames outside the thread's outermost Python frame."""
        return tuple(itertools.takewhile(lambda f: not f.startswith("py::"), st))

    for py in pythons():
        if not py.startswith("/root/.pyenv") or not py.endswith(("python3.9", "python3.11", "python3.13")):
            continue
        ran += 1
        # The native frames outside the Python ones as the walk gives them with no cache (mappings from
        # the kernel's vmas: ehkeep.bpf.h serves none of those chains).
        path = os.path.join(tmpdir(), "kept-py-ref.data")
        spanperf("record", "-g", "-F", "999", "-o", path, "--", py, PY_KEPT, "0.4", check=True,
                 env=dict(os.environ, SPANPERF_EH_VMA_ONLY="1"))
        ref = collections.Counter()
        for stacks in folded_all(path).values():
            for st, c in stacks.items():
                if any(f.startswith("py::") for f in st):
                    ref[native_prefix(st)] += c
        ref = ref.most_common(1)[0][0] if ref else None
        assert ref and ref[0] == "_start", "%s: no chain to _start without the cache: %s" % (py, ref)
        path = os.path.join(tmpdir(), "kept-py.data")
        p = spanperf("record", "-g", "-F", "999", "-v", "-o", path, "--", py, PY_KEPT, "1.5", check=True)
        n = right = 0
        wrong = collections.Counter()
        for stacks in folded_all(path).values():
            for st, c in stacks.items():
                fr = py_frames(st)
                leaf = [f for f in fr if f in other]
                if not leaf:
                    continue
                leaf = leaf[0]
                n += c
                want = ["<module>", "main", "way" + leaf[-1], "shared1", "shared2", "shared3", leaf]
                if fr[:7] == want and fr[7:] in ([], ["spin"]) and native_prefix(st) == ref:
                    right += c
                if other[leaf] in fr:
                    wrong[tuple(fr)] += c
        assert n >= 300, "%s: %d samples in the leaves\n%s" % (py, n, p.stderr[-2000:])
        assert not wrong, "%s: %d of %d samples with a leaf under the other way: %s" % (
            py, sum(wrong.values()), n, wrong.most_common(3))
        assert right * 100 >= 95 * n, "%s: %d of %d samples carry their way's chain, below %s" % (
            py, right, n, ";".join(ref))
        assert kept_tails(p.stderr) * 4 >= n, "%s: %d chains of %d with a kept tail: the cache was not tried\n%s" % (
            py, kept_tails(p.stderr), n, p.stderr[-2000:])
    if not ran:
        raise Skip("no pyenv CPython 3.9, 3.11 or 3.13 here")
