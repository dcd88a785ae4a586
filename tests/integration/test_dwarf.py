# SPDX-License-Identifier: GPL-2.0
"""--call-graph dwarf: the file carries what perf's carries, report unwinds it
through code without frame pointers (libc's qsort and bsearch, a library of
our own), and its chains are perf's, frame by frame, on perf's own file."""
import collections
import os
import re
import shutil

from harness import (_LOST_WARNING, BUILD, WORKLOAD, Skip, json_lines, need_bpf, need_perf, perf_clean, run,
                     spanperf, test, tmpdir, without_py_names)

DWARF_WORKLOAD = os.path.join(BUILD, "tests", "workload_dwarf")
_cache = {}


def recording():
    """One spanperf dwarf recording of the workload, shared."""
    if "path" not in _cache:
        need_bpf()
        path = os.path.join(tmpdir(), "dwarf.data")
        p = spanperf("record", "--call-graph", "dwarf", "-F", "999", "-o", path, "--", DWARF_WORKLOAD, "1500",
                     check=True)
        _cache["path"], _cache["stderr"] = path, p.stderr
    return _cache["path"], _cache["stderr"]


def folded(path, comm="workload_dwarf"):
    """report --folded as a Counter of frame tuples, leaf first, for one comm; real frames
    only (--no-inline), as perf_chains takes perf's."""
    stacks = collections.Counter()
    for line in spanperf("report", "-i", path, "--folded", "--no-inline", check=True).stdout.splitlines():
        st, n = line.rsplit(" ", 1)
        fr = st.split(";")
        if fr[0] == comm:
            stacks[tuple(reversed(fr[1:]))] += int(n)
    return stacks


def perf_aborts(p):
    """perf 6.1 aborts now and then in its build-id code on this host
    (util/build-id.c:1010, then a stack smash) once workload_dwarf's library
    is in its build-id cache: such runs are retried."""
    return p.returncode in (-6, 134) and "build-id.c" in p.stderr


def perf_chains(path, comm="workload_dwarf", lost_ok=False):
    """perf script's chains (real frames only, as --no-inline) as a Counter, leaf first.
    lost_ok: as perf_clean's, for a test that compares chains, not counts."""
    for _ in range(5):
        p = run(["perf", "script", "--no-inline", "-F", "comm,tid,event,ip,sym", "-i", path])
        if not perf_aborts(p):
            break
    if perf_aborts(p):
        raise Skip("perf script aborts in its build-id code: %s" % p.stderr[-200:])
    out = perf_clean(["script", "--no-inline", "-F", "comm,tid,event,ip,sym"], path, lost_ok=lost_ok) \
        if p.returncode else without_py_names(p.stdout)
    assert (_LOST_WARNING.sub("", p.stderr) if lost_ok else p.stderr).strip() == "", p.stderr[-1500:]
    chains = collections.Counter()
    for block in out.split("\n\n"):
        lines = [l for l in block.split("\n") if l.strip()]
        if not lines or lines[0].split()[0] != comm:
            continue
        chains[tuple(l.split()[1].split("+")[0] for l in lines[1:] if len(l.split()) > 1)] += 1
    return chains


def reach_main(stacks, leaf):
    n = sum(c for st, c in stacks.items() if st and st[0] == leaf)
    m = sum(c for st, c in stacks.items() if st and st[0] == leaf and "main" in st)
    return n, m


def check_chains(stacks):
    """The comparator (through qsort and bsearch) and the library callback reach main."""
    for leaf, via in (("cmp_ints", None), ("cb_work", "dwarfcb_each")):
        n, m = reach_main(stacks, leaf)
        assert n >= 50, "%d samples in %s" % (n, leaf)
        assert m * 100 >= 95 * n, "%s: %d of %d samples reach main" % (leaf, m, n)
        if via:
            assert any(st[0] == leaf and via in st and "main" in st for st in stacks), via
    assert any("msort_with_tmp.part.0" in st and "main" in st for st in stacks), "no chain through qsort"


@test
def test_dwarf_attrs_are_perfs():
    """perf evlist reads the attr perf itself writes for --call-graph dwarf."""
    path, _ = recording()
    need_perf()
    out = perf_clean(["evlist", "-v"], path)
    for want in ("REGS_USER", "STACK_USER", "CALLCHAIN", "exclude_callchain_user: 1",
                 "sample_regs_user: 0xff0fff", "sample_stack_user: 8192", "mmap_data: 1"):
        assert want in out, "%s not in: %s" % (want, out)
    path2 = os.path.join(tmpdir(), "small.data")
    spanperf("record", "--call-graph", "dwarf,1000", "-d", "0.2", "-o", path2, check=True)
    assert "sample_stack_user: 1000" in perf_clean(["evlist", "-v"], path2)


@test
def test_dwarf_chains_reach_main():
    path, _ = recording()
    stacks = folded(path)
    check_chains(stacks)
    # Without frame pointers, frame-pointer chains stop in libc: what this option is for.
    need_bpf()
    fp = os.path.join(tmpdir(), "fp.data")
    spanperf("record", "--call-graph", "fp", "-o", fp, "--", DWARF_WORKLOAD, "300", check=True)
    n, m = reach_main(folded(fp), "cmp_ints")
    assert m * 2 < n, "--call-graph fp reached main in %d of %d comparator samples" % (m, n)


@test
def test_dwarf_report_v_counts_cuts():
    path, _ = recording()
    err = spanperf("report", "-v", "-i", path, "--folded", check=True).stderr
    m = re.search(r"dwarf unwind: (\d+) user stacks, (\d+) complete, (\d+) cut short", err)
    assert m, err[-2000:]
    total, complete, cut = map(int, m.groups())
    # Every sample has its user stack counted, but for those taken while the workload exits, after
    # its memory is gone (do_exit, exit_mmap: no user registers): a clean-clone make test had one.
    n = sum(folded(path).values())
    assert total == complete + cut and total * 100 >= 99 * n, "%s; %d samples" % (m.group(0), n)
    cuts = collections.Counter()
    for dso, why, n in re.findall(r"^  cut short in (.+) \((.+)\): (\d+)$", err, re.M):
        cuts[dso] += int(n)
    assert sum(cuts.values()) == cut, err[-1500:]
    # The host's other programs may have stacks deeper than the copy; ours never stops in its own code.
    ours = cuts["workload_dwarf"] + cuts["libdwarfcb.so"]
    assert ours * 100 <= sum(folded(path).values()), err[-1500:]


@test
def test_dwarf_perf_report_agrees():
    """perf on the same file: the same leaves, sample for sample, and where
    perf 6.1 unwinds a chain (its libunwind stops in libc on system-wide
    files, its own included), the same frames as ours, which go on."""
    path, _ = recording()
    # Where libunwind fails, perf falls back to a frame-pointer guess: its
    # [unknown] frames past that point are not frames, and ours never are.
    theirs = collections.Counter()
    for st, n in perf_chains(path).items():
        while len(st) > 1 and st[-1] == "[unknown]":
            st = st[:-1]
        theirs[st] += n
    mine = folded(path)
    assert sum(theirs.values()) == sum(mine.values()), (sum(theirs.values()), sum(mine.values()))
    leaves_t = collections.Counter()
    leaves_m = collections.Counter()
    for st, n in theirs.items():
        leaves_t[st[0] if st else ""] += n
    for st, n in mine.items():
        leaves_m[st[0] if st else ""] += n
    assert leaves_t == leaves_m, (leaves_t - leaves_m, leaves_m - leaves_t)
    # Every perf chain is a prefix of one of ours with as many samples.  Prefix
    # sets are nested or apart, so matching the longest chains first is optimal.
    mine_left = mine.copy()
    matched = 0
    for st, n in sorted(theirs.items(), key=lambda kv: -len(kv[0])):
        for ours in sorted(mine_left, key=lambda s: -mine_left[s]):
            if ours[:len(st)] == st and mine_left[ours]:
                take = min(n, mine_left[ours])
                mine_left[ours] -= take
                n -= take
                matched += take
                if not n:
                    break
    total = sum(theirs.values())
    assert matched * 100 >= 99 * total, "%d of %d perf chains are a prefix of ours; perf only: %s" % (
        matched, total, (theirs - mine).most_common(3))
    out = perf_clean(["report", "--stdio", "--no-children", "--sort", "sym", "-g", "none"], path)
    assert "cmp_ints" in out and "cb_work" in out


@test
def test_dwarf_chains_equal_perfs_on_perfs_file():
    """perf record --call-graph dwarf of the same program: our report's
    chains and perf script's, frame by frame, sample for sample."""
    need_perf()
    path = os.path.join(tmpdir(), "perf-dwarf.data")
    # --buildid-mmap: the build ids come with the maps, and perf skips the pass that aborts.
    p = run(["perf", "record", "-q", "--buildid-mmap", "--call-graph", "dwarf", "-F", "999", "-o", path, "--",
             DWARF_WORKLOAD, "1000"])
    if p.returncode != 0:
        raise Skip("perf record --call-graph dwarf failed here: %s" % p.stderr[-300:])
    theirs = perf_chains(path)
    mine = folded(path)
    total = sum(theirs.values())
    same = sum(min(n, mine[st]) for st, n in theirs.items())
    assert total >= 500 and same * 100 >= 99 * total, "%d of %d chains equal perf's; perf only: %s; ours only: %s" % (
        same, total, (theirs - mine).most_common(3), (mine - theirs).most_common(3))
    check_chains(mine)


@test
def test_dwarf_changed_binary_ends_chains():
    """A binary whose .eh_frame is gone since the recording (same build id):
    chains end in it, named by report -v, and nothing is guessed past it."""
    need_bpf()
    d = tmpdir()
    # A name of its own: on a shared host others may run workload_dwarf, unstripped, while we record.
    name = "wdcut%d" % (os.getpid() % 100000)
    exe = os.path.join(d, name)
    shutil.copy(DWARF_WORKLOAD, exe)
    shutil.copy(os.path.join(BUILD, "tests", "libdwarfcb.so"), d)
    path = os.path.join(d, "cut.data")
    spanperf("record", "--call-graph", "dwarf", "-o", path, "--", exe, "400", check=True)
    own = {f[2] for f in (line.split() for line in run(["nm", "--defined-only", exe], check=True).stdout.splitlines())
           if len(f) == 3 and f[1] in "tT"}
    assert "main" in own and "sort_round" in own, own
    if run(["objcopy", "--remove-section", ".eh_frame", "--remove-section", ".eh_frame_hdr", exe]).returncode:
        raise Skip("objcopy cannot strip .eh_frame here")
    p = spanperf("report", "-v", "-i", path, "--folded", check=True)
    stacks = folded(path, comm=name)
    assert sum(stacks.values()) > 100
    # A frame in the binary is where its chain ends: unwinding past it would need the CFI that is
    # gone.  It may still be reached (main, through printf's libc CFI), but only as the outermost.
    past = [st for st in stacks if any(f in own for f in st[:-1])]
    assert not past, past[:3]
    m = re.search(r"cut short in %s \(no CFI for the address\): (\d+)" % name, p.stderr)
    assert m and int(m.group(1)) * 2 > sum(stacks.values()), p.stderr[-1500:]


@test
def test_dwarf_short_copy_and_no_loss():
    """dwarf,64: every chain is cut, the report goes on; 999 Hz on both CPUs
    with full copies loses nothing."""
    need_bpf()
    path = os.path.join(tmpdir(), "short.data")
    spanperf("record", "--call-graph", "dwarf,64", "-o", path, "--", DWARF_WORKLOAD, "300", check=True)
    p = spanperf("report", "-v", "-i", path, "--folded", check=True)
    assert "cut short" in p.stderr and sum(folded(path).values()) > 100
    path = os.path.join(tmpdir(), "busy.data")
    p = spanperf("record", "--call-graph", "dwarf", "-F", "999", "-o", path, "--", WORKLOAD, "spin", "1500,1500",
                 check=True)
    truth = json_lines(p.stdout)
    assert "LOST" not in p.stderr, p.stderr
    err = spanperf("report", "-v", "-i", path, "--folded", check=True).stderr
    m = re.search(r"(\d+) samples lost while recording", err)
    assert m and m.group(1) == "0", err[-1500:]
    assert truth
