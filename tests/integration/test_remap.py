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
import os

from harness import BUILD, Skip, need_bpf, spanperf, test, tmpdir
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
