# SPDX-License-Identifier: GPL-2.0
"""What the tests of named interpreted and JIT frames (test_python.py, test_java.py) both read
of a recording: report's folded stacks by comm, and the chains perf script gives the samples
a test picks."""
import collections

from harness import perf_clean, spanperf


def folded(path, event="on-cpu"):
    """report --folded: {comm: Counter(tuple of frames, outermost first)} (ns for off-CPU)."""
    out = collections.defaultdict(collections.Counter)
    for line in spanperf("report", "-i", path, "--folded", "--event", event, check=True).stdout.splitlines():
        st, _, n = line.rpartition(" ")
        fr = st.split(";")
        out[fr[0]][tuple(fr[1:])] += int(n)
    return out


def script_chains(path, pick, event="cpu-clock", fields="comm,tid,event"):
    """perf script's chains of the samples of event whose head line (fields: comm, tid, ...) pick
    takes: a list of frame lists, outermost first.  A record without a chain (the names of
    Python and Java frames) is one line, with no blank line after."""
    out = perf_clean(["script", "-F", fields + ",ip,sym"], path, lost_ok=True)
    chains, cur = [], None
    for line in out.splitlines():
        if not line.strip():
            continue
        if not line.startswith("\t"):
            head = line.split()
            cur = [] if head and pick(head) and any(t.startswith(event + ":") for t in head) else None
            if cur is not None:
                chains.append(cur)
        elif cur is not None and len(line.split(None, 1)) == 2:
            cur.insert(0, line.split(None, 1)[1].strip())
    return chains
