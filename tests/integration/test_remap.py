# SPDX-License-Identifier: GPL-2.0
"""The ehframe walk's per-CPU rule cache (bpf/ehframe.bpf.h: a pc's rule kept
under its process slice's generation, probed at each step) across a library
unmapped and another mapped at the same address: workload_remap spins in
libremap_a.so's remap_leaf, closes it, opens libremap_b.so in its place (the
same code at the same offsets, another frame size, so another CFA at the same
pcs) and spins there.  A rule kept from the first library would read the
second's return address from the wrong slot: its chains would end at the
leaf, or go on through garbage.  Every chain through remap_leaf must go on
through its own phase to main."""
import collections
import os
import re

from harness import BUILD, Skip, need_bpf, perf_script_samples, spanperf, test, tmpdir
from test_dwarf import folded

REMAP_WORKLOAD = os.path.join(BUILD, "tests", "workload_remap")


@test
def test_remap_rule_cache_follows_the_new_library():
    need_bpf()
    path = os.path.join(tmpdir(), "remap.data")
    p = spanperf("record", "-g", "-F", "999", "-v", "-o", path, "--", REMAP_WORKLOAD, "1500", check=True)
    if "same" not in p.stdout:
        raise Skip("libremap_b.so was not mapped at libremap_a.so's address: %r" % p.stdout)
    stacks = folded(path, comm="workload_remap")
    n = {"phase_a": 0, "phase_b": 0}
    whole = 0
    bad = []
    for st, c in stacks.items():
        if "remap_leaf" not in st:
            continue
        i = st.index("remap_leaf")
        below = st[i + 1:i + 3]
        if len(below) == 2 and below[0] in n and below[1] == "main":
            n[below[0]] += c
            whole += c
        else:
            bad.append((st, c))
    total = whole + sum(c for _, c in bad)
    assert n["phase_a"] >= 100 and n["phase_b"] >= 100, "%s samples by phase; %s\n%s" % (
        n, stacks.most_common(5), p.stderr[-1500:])
    # The walk's own losses (a read that faults, a sample in the loader's code) are not the cache's: a few.
    assert whole * 100 >= 97 * total, "%d of %d chains through remap_leaf reach their phase and main: %s" % (
        whole, total, sorted(bad, key=lambda x: -x[1])[:5])


# Libraries on this Debian whose rows fill most of eh_rows' first chunk (SP_EH_CHUNK_ROWS,
# 2,097,152): 0.95M, 1.0M and 0.98M rows, so that what a process maps after them lies
# in the second chunk, made only then.
BIG_LIBS = ["/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1", "/usr/lib/llvm-14/lib/libclang-cpp.so.14",
            "/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1"]


@test
def test_remap_rows_past_the_first_chunk():
    """A process that maps, after the recorder's start, libraries whose rows exceed eh_rows'
    first chunk: the second chunk is made then, and the chains through libremap_a.so and
    libremap_b.so (whose rows lie there) reach their phase and main as in the first."""
    need_bpf()
    libs = [l for l in BIG_LIBS if os.path.exists(l)]
    if len(libs) < len(BIG_LIBS):
        raise Skip("needs %s (llvm-14, clang-14, llvm-15) to fill a chunk" % ", ".join(BIG_LIBS))
    path = os.path.join(tmpdir(), "chunks.data")
    p = spanperf("record", "-g", "-F", "999", "-v", "-o", path, "--", REMAP_WORKLOAD, "1500", *libs, check=True)
    m = re.search(r"ehframe tables: (\d+) files, (\d+) rows", p.stderr)
    c = re.search(r"rows in (\d+) of \d+ chunks of (\d+)", p.stderr)
    assert m and c, p.stderr[-1500:]
    assert int(m.group(2)) > int(c.group(2)) and int(c.group(1)) >= 2, (m.group(0), c.group(0))
    assert "unwind tables full" not in p.stderr, p.stderr[-1500:]
    # In time order (perf script's): a library's rows come once the recorder has built them, and
    # on a busy host that may be after its first samples (the start-up gap, which ehframe's tests
    # hold to account).  So the chains cut short just before each phase's first whole one are
    # left out; every one after it counts: rows read from the wrong chunk would cut them all.
    seq = [s["frames"] for s in perf_script_samples(path) if s["comm"] == "workload_remap"]
    seq = [f[f.index("remap_leaf"):] for f in seq if "remap_leaf" in f]
    n = {"phase_a": 0, "phase_b": 0}
    counted, pending, gap = [], [], 0
    for f in seq:
        phase = f[1] if len(f) >= 3 and f[1] in n and f[2] == "main" else None
        if phase is None:
            pending.append(f)
            continue
        if not n[phase]:
            gap += len(pending)
            pending = []
        n[phase] += 1
        counted += pending + [f]
        pending = []
    counted += pending
    whole = n["phase_a"] + n["phase_b"]
    bad = collections.Counter(tuple(f) for f in counted if len(f) < 3 or f[1] not in n or f[2] != "main")
    assert n["phase_a"] >= 100 and n["phase_b"] >= 100, "%s samples by phase (%d before the first whole chains)\n%s" % (
        n, gap, p.stderr[-1500:])
    assert whole * 100 >= 97 * len(counted), \
        "%d of %d chains through remap_leaf reach their phase and main (%d before the first whole ones left out): %s" % (
            whole, len(counted), gap, bad.most_common(5))
