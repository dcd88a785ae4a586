# SPDX-License-Identifier: GPL-2.0
"""report's filters (--comms, --pids, --tids, --dsos, --symbols, --time) and
--percent-limit: each against perf report's own on the same file, row for
row, count for count and percentage for percentage; each on the other
outputs (folded, flame graph, pprof, speedscope, the page, --spans); bad
values one sentence and exit 1."""
import collections
import json
import os
import re
import xml.etree.ElementTree as ET

import pprof_decode
from harness import WORKLOAD, json_lines, need_bpf, need_perf, perf_clean, perf_script_samples, spanperf, test, tmpdir

FREQ = 999
_cache = {}


def recording():
    """One command's recording: two programs (the workload, and the same file
    exec'd as "otherwl" through a symlink), several processes and threads,
    user and kernel code, and uprobe spans of hidden_work in both programs."""
    if "path" not in _cache:
        need_bpf()
        d = tmpdir()
        other = os.path.join(d, "otherwl")
        os.symlink(WORKLOAD, other)
        path = os.path.join(d, "f.data")
        script = ("%(w)s spin 400,250 & %(o)s calls 30 8 & %(w)s calls 20 8 & %(o)s syscalls 250 & wait"
                  % {"w": WORKLOAD, "o": other})
        p = spanperf("record", "-g", "-F", str(FREQ), "--span", "uprobe:%s:hidden_work" % WORKLOAD, "-o", path,
                     "--", "sh", "-c", script, check=True, timeout=180)
        _cache["path"], _cache["truth"] = path, json_lines(p.stdout)
    return _cache["path"], _cache["truth"]


COLUMN = {"Command": "comm", "Shared Object": "dso", "Symbol": "sym", "Pid:Command": "pid"}


def perf_rows(path, keys, args=()):
    """perf report's rows of its first event (the samples'): sort-key tuple -> (samples, percent),
    and its header's sample count (None where perf rounds it, "1K").  A column perf elides (a
    filter of one comm, dso or symbol: "# comm: NAME" above the table) takes that one value."""
    out = perf_clean(["report", "--stdio", "--no-children", "-g", "none", "-n", "-t", "\t", "--sort", keys]
                     + list(args), path)
    rows, total, elided, cols, sections = {}, None, {}, None, 0
    for line in out.splitlines():
        m = re.match(r"^# (comm|dso|symbol): (.*)$", line)
        if m:
            elided[{"symbol": "sym"}.get(m.group(1), m.group(1))] = m.group(2).strip()
        m = re.match(r"^# Samples: (\d+)(K?)", line)
        if m:
            sections += 1
            if sections == 1 and not m.group(2):
                total = int(m.group(1))
        if line.startswith("# Overhead"):
            cols = [COLUMN.get(c.strip(), c.strip()) for c in line[2:].split("\t")[2:]]
        if sections != 1 or line.startswith("#") or not line.strip() or cols is None:
            continue
        parts = [p.strip() for p in line.split("\t")]
        if len(parts) != 2 + len(cols) or not parts[0].endswith("%"):
            continue
        cells = dict(zip(cols, (re.sub(r"^\[[.k]\] ", "", f) for f in parts[2:])))
        key = tuple(cells.get(k, elided.get(k, "?")) for k in keys.split(","))
        n, pct = rows.get(key, (0, 0.0))
        rows[key] = (n + int(parts[1]), pct + float(parts[0][:-1]))
    return rows, total


def our_rows(path, keys, args=()):
    rows = {}
    for r in json_lines(spanperf("report", "-i", path, "--sort", keys, "--format", "json", *args, check=True).stdout):
        key = tuple(str(r[k]) for k in keys.split(","))
        n, pct = rows.get(key, (0, 0.0))
        rows[key] = (n + r["samples"], pct + r["overhead"])
    return rows


def header_total(path, args=()):
    m = re.search(r"^# Samples: (\d+)", spanperf("report", "-i", path, *args, check=True).stdout, re.M)
    return int(m.group(1))


def bpf_jit_as_one(rows, keys):
    """A sample in a JIT'ed BPF program (the recorder's own on_sample, interrupted by the next tick
    on a shared host): spanperf names it from kallsyms (bpf_prog_TAG_NAME in [kernel.kallsyms]);
    perf 6.1, with no KSYMBOL record for it in the file, prints the bare address in [unknown]. Both
    become one key, so that what is compared is the filter, not who names a BPF program."""
    keys = keys.split(",")
    out = {}
    for k, (n, pct) in rows.items():
        k = list(k)
        if "sym" in keys:
            i = keys.index("sym")
            if re.fullmatch(r"bpf_prog_\w+|0xffffffff[0-9a-f]{8}", k[i]):
                k[i] = "<bpf program>"
                if "dso" in keys:
                    k[keys.index("dso")] = "<bpf program>"
        k = tuple(k)
        m, p = out.get(k, (0, 0.0))
        out[k] = (m + n, p + pct)
    return out


def agree(path, ours_keys, perf_keys, args, perf_args=None, key_map=lambda k: k):
    """The rows of both, with the filter: the same rows, counts and percentages."""
    theirs, total = perf_rows(path, perf_keys, perf_args if perf_args is not None else args)
    theirs = bpf_jit_as_one({key_map(k): v for k, v in theirs.items()}, ours_keys)
    mine = bpf_jit_as_one(our_rows(path, ours_keys, args), ours_keys)
    if "--dsos" in args and "dso" in ours_keys.split(","):
        # That sample's dso is [kernel.kallsyms] to spanperf and [unknown] to perf: a list that names
        # the kernel keeps it in ours alone.  It is the recorder's, not the workload's, so the
        # comparison leaves it out of both.
        i = ours_keys.split(",").index("dso")
        theirs = {k: v for k, v in theirs.items() if k[i] != "<bpf program>"}
        mine = {k: v for k, v in mine.items() if k[i] != "<bpf program>"}
    assert theirs, "perf kept nothing for %s" % (args,)
    assert set(theirs) == set(mine), "%s: rows only perf's %s, only ours %s" % (
        args, sorted(set(theirs) - set(mine))[:5], sorted(set(mine) - set(theirs))[:5])
    for k, (n, pct) in theirs.items():
        assert mine[k][0] == n and abs(mine[k][1] - pct) < 0.02, "%s %s: perf %d %.2f%%, spanperf %d %.4f%%" % (
            args, k, n, pct, mine[k][0], mine[k][1])
    return mine, total


def thread_key(k):
    """perf's pid key is the thread, printed TID:COMM."""
    return (k[0].split(":")[0],) + tuple(k[1:])


def times(path):
    """The file's first and last sample times, in ns, as perf script prints them."""
    out = perf_clean(["script", "-F", "time", "--ns"], path)
    ts = [int(round(float(l.strip().rstrip(":")) * 1e9)) for l in out.splitlines() if l.strip()]
    return min(ts), max(ts)


def secs(ns):
    return "%d.%09d" % (ns // 1000000000, ns % 1000000000)


@test
def test_filters_agree_with_perf_report():
    """Each filter on the same file as perf report's, sorted by the key it
    filters on (perf merges a refused sample into a kept row of equal keys,
    which another key would show): the same rows, counts and percentages,
    the samples they refuse still in the total (perf's absolute
    percentages), and --time's in none."""
    path, truth = recording()
    need_perf()
    pids = sorted({t["pid"] for t in truth})
    tids = sorted({t["tid"] for t in truth if "tid" in t})
    for args in (["--comms", "otherwl"], ["--comms", "sh,workload"]):
        agree(path, "comm,dso,sym", "comm,dso,sym", args)
    agree(path, "tid,sym", "pid,sym", ["--pids", "%d,%d" % (pids[0], pids[-1])],
          ["--pid", "%d,%d" % (pids[0], pids[-1])], thread_key)
    agree(path, "tid,sym", "pid,sym", ["--tids", str(tids[1])], ["--tid", str(tids[1])], thread_key)
    agree(path, "comm,dso,sym", "comm,dso,sym", ["--dsos", "workload,[kernel.kallsyms]"])
    # A sample's symbol is its leaf's: hidden_work's samples are in burn_ns, which it calls.
    agree(path, "comm,dso,sym", "comm,dso,sym", ["--symbols", "spin_0,burn_ns,hidden_work"])
    # perf's own spellings are taken too.
    agree(path, "comm,dso,sym", "comm,dso,sym", ["-c", "otherwl", "-d", "workload", "-S", "burn_ns"])
    # The lists leave the total alone; --time makes it the window's.
    full = header_total(path)
    assert header_total(path, ["--comms", "otherwl"]) == full
    first, last = times(path)
    for window in (["%s,%s" % (secs(first + (last - first) // 4), secs(first + (last - first) * 3 // 5))],
                   ["%s," % secs(first + (last - first) // 2)],
                   ["%s,%s %s,%s" % (secs(first), secs(first + (last - first) // 5),
                                     secs(first + (last - first) // 2), secs(first + (last - first) * 7 // 10))],
                   ["10%/2,10%/4"], ["0%-30%,60%-70%"], ["25%"]):
        mine, total = agree(path, "comm,dso,sym", "comm,dso,sym", ["--time"] + window)
        assert sum(n for n, _ in mine.values()) == header_total(path, ["--time"] + window)
        assert total is None or total == header_total(path, ["--time"] + window), (window, total)
        assert abs(sum(p for _, p in mine.values()) - 100) < 0.01, window


def folded_total(path, args):
    out = spanperf("report", "-i", path, "--folded", *args, check=True).stdout
    lines = [l.rsplit(" ", 1) for l in out.splitlines()]
    return lines, sum(int(n) for _, n in lines)


@test
def test_filters_hold_on_every_output():
    """The samples a filter keeps, and only they, are in the folded stacks,
    the flame graph, pprof, speedscope and the page; the spans follow their
    own thread, process, name and end time, and with --symbols the spans
    that ran it."""
    path, truth = recording()
    need_perf()
    theirs, _ = perf_rows(path, "comm", ["--comms", "otherwl"])
    want = theirs[("otherwl",)][0]
    # folded: every stack the program's, as many samples as perf's row.
    lines, total = folded_total(path, ["--comms", "otherwl"])
    assert total == want and all(s.startswith("otherwl;") for s, _ in lines), (total, want, lines[:3])
    d = tmpdir()
    # pprof: the same samples, every one of an otherwl thread.
    pp = os.path.join(d, "f.pb.gz")
    spanperf("report", "-i", path, "--comms", "otherwl", "--pprof", pp, check=True)
    prof = pprof_decode.decode(pp)
    strs = prof["strings"]
    assert sum(s["value"][0] for s in prof["sample"]) == want
    names = {strs[lab.get(2, 0)] for s in prof["sample"] for lab in s["labels"] if strs[lab.get(1, 0)] == "thread"}
    assert names == {"otherwl"}, names
    # The flame graph's root is the samples kept.
    svg = os.path.join(d, "f.svg")
    spanperf("report", "-i", path, "--comms", "otherwl", "--flamegraph", svg, check=True)
    titles = [t.text for t in ET.parse(svg).iter("{http://www.w3.org/2000/svg}title")]
    assert "otherwl \u2014 %d samples, 100.00%%" % want in titles, titles[:3]
    assert not any(t.startswith("workload ") for t in titles), [t for t in titles if t.startswith("workload")]
    # speedscope: a profile per thread kept, its samples those of perf's rows.
    ss = os.path.join(d, "f.speedscope.json")
    spanperf("report", "-i", path, "--comms", "otherwl", "--speedscope", ss, check=True)
    doc = json.load(open(ss))
    assert doc["profiles"] and all("otherwl" in pr["name"] for pr in doc["profiles"]), [p["name"] for p in doc["profiles"]]
    # The page: its threads are those perf script shows samples of under that name.
    page = os.path.join(d, "f.html")
    spanperf("report", "-i", path, "--comms", "otherwl", "--html", page, check=True)
    data = json.loads(re.search(r'<script id="spanperf-data"[^>]*>(.*?)</script>', open(page).read(), re.S).group(1))
    lanes = {t["tid"] for t in data["th"]}
    others = {s["tid"] for s in perf_script_samples(path) if s["comm"] == "otherwl"}
    assert lanes and lanes <= others, (lanes, others)
    # Spans: by their own thread's name, process, thread and end time.
    every = json_lines(spanperf("report", "-i", path, "--spans", "--format", "json", check=True).stdout)
    callers = {t["pid"] for t in truth if "calls" in t}
    assert {s["pid"] for s in every} == callers and len(every) == 50, collections.Counter(s["pid"] for s in every)
    by_comm = json_lines(spanperf("report", "-i", path, "--spans", "--format", "json", "--comms", "otherwl",
                                  check=True).stdout)
    other = [t for t in truth if "calls" in t and t["calls"] == 30][0]
    assert len(by_comm) == 30 and {s["tid"] for s in by_comm} == {other["tid"]}, by_comm[:2]
    by_pid = json_lines(spanperf("report", "-i", path, "--spans", "--format", "json", "--pids", str(other["pid"]),
                                 check=True).stdout)
    ident = lambda spans: sorted((s["tid"], s["start_ns"]) for s in spans)
    assert ident(by_pid) == ident(by_comm)
    mid = sorted(s["end_ns"] for s in every)[len(every) // 2]
    late = json_lines(spanperf("report", "-i", path, "--spans", "--format", "json", "--time", "%s," % secs(mid),
                               check=True).stdout)
    assert ident(late) == ident([s for s in every if s["end_ns"] >= mid])
    # --symbols: the spans whose samples ran it (their leaf: hidden_work calls burn_ns), those samples alone.
    syms = json_lines(spanperf("report", "-i", path, "--spans", "--format", "json", "--symbols", "burn_ns",
                               check=True).stdout)
    assert syms and all(s["samples"] and [f["sym"] for f in s["top"]] == ["burn_ns"] for s in syms), syms[:2]
    assert len(syms) >= 0.9 * len(every), (len(syms), len(every))
    assert not json_lines(spanperf("report", "-i", path, "--spans", "--format", "json", "--symbols", "spin_0",
                                   check=True).stdout)


@test
def test_percent_limit_holds_on_every_output():
    """--percent-limit P: the table's rows of P percent or more, their percentages as without it;
    JSON, folded stacks and pprof hold the samples of those rows and no other."""
    path, _ = recording()
    rows = json_lines(spanperf("report", "-i", path, "--format", "json", check=True).stdout)
    kept = json_lines(spanperf("report", "-i", path, "--format", "json", "--percent-limit", "5", check=True).stdout)
    assert kept and all(r["overhead"] >= 5 for r in kept), kept
    assert [(r["sym"], r["overhead"]) for r in kept] == [(r["sym"], r["overhead"]) for r in rows if r["overhead"] >= 5]
    want = sum(r["samples"] for r in kept)
    lines, total = folded_total(path, ["--percent-limit", "5"])
    assert total == want, (total, want)
    leaves = {s.split(";")[-1] for s, _ in lines}
    assert leaves <= {r["sym"] for r in kept}, leaves
    pp = os.path.join(tmpdir(), "l.pb.gz")
    spanperf("report", "-i", path, "--percent-limit", "5", "--pprof", pp, check=True)
    assert sum(s["value"][0] for s in pprof_decode.decode(pp)["sample"]) == want
    # Spans: each one's functions of 50% or more of its samples.
    spans = json_lines(spanperf("report", "-i", path, "--spans", "--format", "json", "--percent-limit", "50",
                                check=True).stdout)
    assert all(f["samples"] * 100 >= 50 * s["samples"] for s in spans for f in s["top"]), spans[:2]


@test
def test_filter_bad_values():
    """A bad value is one sentence naming it, and exit status 1; the file is not read."""
    path = os.path.join(tmpdir(), "none.data")
    for args, word in ((["--time", "10"], "'10'"), (["--time", "2,1"], "'2,1'"), (["--time", "5%/0"], "'5%/0'"),
                       (["--time", "1,2 1.5,3"], "--time"), (["--time", "x%"], "'x%'"),
                       (["--pids", "abc"], "'abc'"), (["--tids", "-3"], "'-3'"),
                       (["--comms", "file:///nonexistent/list"], "/nonexistent/list"),
                       (["--percent-limit", "101"], "'101'")):
        p = spanperf("report", "-i", path, *args)
        assert p.returncode == 1, (args, p.returncode, p.stderr)
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1 and word in lines[0], (args, p.stderr)
