# SPDX-License-Identifier: GPL-2.0
"""report --spans --why-slow against a workload that knows why its slow requests are slow.

req_compute: every tenth runs ws_extra() for EXTRA_MS more of CPU;
req_pipe: every tenth blocks in pipe_wait() until a thread named filler
fills the pipe WAIT_MS later.  --why-slow must name ws_extra first for the
first, and filler first among the wakers (the wait it ended: pipe_wait) for
the second; the rest's figures are held to the workload's own clocks
(CLOCK_MONOTONIC and CLOCK_THREAD_CPUTIME_ID around each call).  The waits
are long beside what a loaded 2-CPU machine adds to a 1 ms request, so that
the slowest tenth is the tenth the workload made slow."""
import json
import math
import os
import re

from harness import WORKLOAD, json_lines, need_bpf, perf_clean, spanperf, test, tmpdir
from test_page import drive

N, EXTRA_MS, WAIT_MS = 60, 20, 100
_cache = {}


def recording():
    if "path" not in _cache:
        need_bpf()
        d = tmpdir()
        path, ext = os.path.join(d, "why.data"), os.path.join(d, "spans.jsonl")
        p = spanperf("record", "-g", "-e", "cpu-clock", "-F", "999", "--off-cpu", "-o", path,
                     "--span", "uprobe:%s:req_compute" % WORKLOAD, "--span", "uprobe:%s:req_pipe" % WORKLOAD,
                     "--", WORKLOAD, "whyslow", str(N), str(EXTRA_MS), str(WAIT_MS), ext, check=True, timeout=300)
        lines = json_lines(p.stdout)
        _cache.update(path=path, ext=ext, reqs=[l for l in lines if "kind" in l],
                      filler=[l for l in lines if l.get("role") == "filler"][0])
    return _cache["path"], _cache["reqs"], _cache["filler"]


def truth(reqs, kind, pct=10):
    """The workload's own requests of a kind, split as --why-slow splits spans: the slowest pct% by wall time."""
    r = sorted((x for x in reqs if x["kind"] == kind), key=lambda x: -x["wall_ns"])
    slow = math.ceil(len(r) * pct / 100)
    return r[:slow], r[slow:]


def made_slow(slow, rest):
    """How many of the slowest tenth the workload made slow (every tenth request); on a loaded machine a
    request it did not may wait longer in the run queue than one it did, and take its place."""
    k = sum(1 for x in slow if x["i"] % 10 == 9)
    assert 2 * k > len(slow), ("the host's load, not the workload, made most of the slowest tenth slow",
                               [(x["i"], x["wall_ns"]) for x in slow], max(x["wall_ns"] for x in rest))
    return k


def p50(group):
    """--why-slow's median: the middle one, slowest first (the faster middle one of an even count)."""
    return group[len(group) // 2]["wall_ns"]


def median_like(got, group):
    """got is the group's median by the workload's clock, give or take a rank or two: a span runs from
    its probe's entry to its return probe, the workload's clock reads around the call, and a loaded
    host preempts some requests at the probes' trap returns, in one window and not the other, so
    where the group's durations have two modes the middle one can sit on either side."""
    walls = sorted(x["wall_ns"] for x in group)
    lo, hi = walls[int(len(walls) * 0.4)], walls[int(len(walls) * 0.6)]
    return lo * 0.97 - 200000 <= got <= hi * 1.03 + 200000


def near(got, want, frac, abs_ns):
    return abs(got - want) <= frac * want + abs_ns


def perf_leaf_samples(path, event, sym):
    """perf script's samples of event whose leaf is sym."""
    n, head = 0, None
    for line in perf_clean(["script", "-F", "event,ip,sym"], path).splitlines():
        if not line.startswith("\t"):
            head = line.strip().rstrip(":")
            continue
        if head == event:
            n += line.split(None, 1)[1:] == [sym]
            head = None
    return n


def by_name(path, *extra):
    out = spanperf("report", "-i", path, "--spans", "--why-slow", "--format", "json", *extra, check=True).stdout
    return {o["name"]: o for o in json_lines(out)}


@test
def test_why_slow_names_the_extra_function():
    path, reqs, _ = recording()
    o = by_name(path)["req_compute"]
    slow, rest = truth(reqs, "req_compute")
    # The slow tenth is the workload's (by its own clock): mostly, or all, the requests that ran ws_extra.
    k = made_slow(slow, rest)
    assert o["slowest_pct"] == 10 and o["slow"]["count"] == N // 10 and o["rest"]["count"] == N - N // 10, o
    assert o["functions"][0]["sym"] == "ws_extra", o["functions"][:3]
    f = o["functions"][0]
    assert abs(f["delta"] - (f["slow_share"] - f["rest_share"])) < 1e-5, f
    if k == len(slow):
        assert f["rest_share"] == 0, f
    # Its share of a slow span's time is the time a slow request spent in ws_extra itself (its own
    # samples, as perf script counts them: its clock reads are the kernel's), out of its EXTRA_MS:
    # the span's measured CPU time shared by samples, so within their noise (sqrt(n) of ~100).
    mean_slow = sum(x["wall_ns"] for x in slow) / len(slow)
    each = perf_leaf_samples(path, "cpu-clock", "ws_extra") * 1e9 / 999 / (N // 10)
    assert 0.3 * EXTRA_MS * 1e6 < each <= EXTRA_MS * 1.1e6, each
    assert near(f["slow_share"] * mean_slow, each * k / len(slow), 0.2, 500000), (f, mean_slow, each, k)
    # The fast group against the workload's clocks: its median wall time, and its mean CPU time.
    assert median_like(o["rest"]["p50_ns"], rest), (o["rest"], p50(rest))
    cpu = sum(x["cpu_ns"] for x in rest) / len(rest)
    assert near(o["rest"]["on_cpu_ns"], cpu, 0.05, 200000), (o["rest"], cpu)
    cpu_slow = sum(x["cpu_ns"] for x in slow) / len(slow)
    assert near(o["slow"]["on_cpu_ns"], cpu_slow, 0.05, 300000), (o["slow"], cpu_slow)
    # Each group's split adds up to its spans' time: on CPU, run queue, asleep, blocked.
    for g, want in ((o["rest"], rest), (o["slow"], slow)):
        mean = sum(x["wall_ns"] for x in want) / len(want)
        parts = g["on_cpu_ns"] + g["runq_ns"] + g["sleep_ns"] + g["blocked_ns"]
        assert near(parts, mean, 0.05, 300000), (g, mean)


@test
def test_why_slow_names_the_waker():
    path, reqs, filler = recording()
    o = by_name(path, "--span-name", "req_pipe")
    assert list(o) == ["req_pipe"], list(o)
    o = o["req_pipe"]
    slow, rest = truth(reqs, "req_pipe")
    k = made_slow(slow, rest)
    # The blocking wait explains the most, and filler ended it, from filler_writes().
    assert o["functions"][0]["sym"] == "pipe_wait [off-cpu]", o["functions"][:3]
    w = o["wakers"][0]
    assert w["comm"] == "filler" and "filler_writes" in w["stack"], o["wakers"]
    # What it ended is the join's own account of those spans' waits (a waking the recorder could not
    # name, on a loaded host, is not filler's), and no more than the made-slow requests' waits.
    rows = sorted((r for r in json_lines(spanperf("report", "-i", path, "--spans", "--format", "json",
                                                  check=True).stdout) if r["name"] == "req_pipe" and
                   not r.get("unfinished")), key=lambda r: (-r["duration_ns"], r["start_ns"]))[:len(slow)]
    ended = sum(x["ns"] for r in rows for x in r.get("woken_by", []) if x["comm"] == "filler")
    assert w["ns"] == ended and 0 < ended <= k * WAIT_MS * 1.15e6, (w, ended, k)
    assert near(o["slow"]["sleep_ns"], k * WAIT_MS * 1e6 / len(slow), 0.15, 0), (o["slow"], k)
    assert median_like(o["rest"]["p50_ns"], rest), (o["rest"], p50(rest))
    cpu = sum(x["cpu_ns"] for x in rest) / len(rest)
    assert near(o["rest"]["on_cpu_ns"], cpu, 0.05, 200000), (o["rest"], cpu)
    # The text says the same: the wait, its waker, and the waker's stack.
    text = spanperf("report", "-i", path, "--spans", "--why-slow", "--span-name", "req_pipe", check=True).stdout
    lines = text.splitlines()
    at = next(i for i, l in enumerate(lines) if "waker" in l)
    assert "filler" in lines[at + 1] and "pipe_wait" in lines[at + 1] and "filler_writes" in lines[at + 2], text


@test
def test_why_slow_options():
    path, _, _ = recording()
    # --slowest 50: half against half; the groups still split all the spans.
    o = by_name(path, "--slowest", "50")["req_compute"]
    assert o["slowest_pct"] == 50 and o["slow"]["count"] == o["rest"]["count"] == N // 2, o
    for args, word in ((["--why-slow"], "--spans"), (["--spans", "--slowest", "10"], "--why-slow"),
                       (["--spans", "--why-slow", "--slowest", "100"], "--slowest"),
                       (["--spans", "--why-slow", "--format", "otlp-json"], "--spans")):
        p = spanperf("report", "-i", path, *args)
        assert p.returncode == 1 and word in p.stderr and len(p.stderr.strip().splitlines()) == 1, (args, p.stderr)
    p = spanperf("report", "-i", path, "--spans", "--why-slow", "--span-name", "nosuch")
    assert p.returncode == 1 and "nosuch" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    json.dumps(p.stderr)


@test
def test_why_slow_on_the_page():
    """report --html: click a span name, and its panel shows what --why-slow says, in Chromium."""
    path, _, _ = recording()
    page = os.path.join(tmpdir(), "why.html")
    spanperf("report", "-i", path, "--html", page, check=True)
    cli = by_name(path)
    for name in ("req_compute", "req_pipe"):
        out = drive("why", page, name)
        assert out["names"] == ["req_compute", "req_pipe"], out["names"]
        assert name in out["title"] and "slowest 10%" in out["title"], out["title"]
        g = {r["key"]: r for r in out["groups"]}
        o = cli[name]
        # The same groups as the command's: counts and medians exactly, the splits' means to the ns.
        for side in ("slow", "rest"):
            assert int(g["count"][side]) == o[side]["count"], (g["count"], o[side])
            assert int(g["p50"][side]) == o[side]["p50_ns"], (g["p50"], o[side])
            for key in ("on_cpu_ns", "runq_ns", "sleep_ns", "blocked_ns"):
                assert abs(float(g[key][side]) - o[side][key]) <= 1, (key, side, g[key], o[side])
        frames = {}
        for f in out["frames"]:
            if f["name"] not in frames or f["width"] > frames[f["name"]]["width"]:
                frames[f["name"]] = f
        if name == "req_compute":
            assert out["funcs"][0] == "ws_extra", out["funcs"]
            # In the slow spans' flame graph, ws_extra in the growth colour (it is not in the rest's at all).
            f = frames["ws_extra"]
            r, gg, b = [int(x) for x in re.findall(r"\d+", f["fill"])[:3]]
            assert f["delta"] > 0.3 and r == 255 and gg == b and gg < 100, f
            assert frames["ws_common"]["delta"] < 0, frames["ws_common"]
        else:
            w = out["wakers"][0]
            assert w["comm"] == "filler" and "filler_writes" in w["stack"].split("\n"), out["wakers"]
        assert out["rest_frames"] > 0


@test
def test_why_slow_of_external_and_otel_spans():
    """The same requests as spans the application wrote (annotate), and OTel spans: the same comparison."""
    path, reqs, _ = recording()
    out = spanperf("annotate", "--spans", _cache["ext"], "-i", path, "--why-slow", "--format", "json", check=True).stdout
    ext = {o["name"]: o for o in json_lines(out)}
    probe = by_name(path)
    assert sorted(ext) == ["req_compute", "req_pipe"], list(ext)
    for name, first in (("req_compute", "ws_extra"), ("req_pipe", "pipe_wait [off-cpu]")):
        e, p = ext[name], probe[name]
        assert e["slow"]["count"] == p["slow"]["count"] and e["rest"]["count"] == p["rest"]["count"], (e, p)
        assert e["functions"][0]["sym"] == first, e["functions"][:3]
        # The application's clock around the call, the probes' inside it: the same medians, within a little.
        # The fast group's median by either account of the requests, against the workload's clock.
        _, rest = truth(reqs, name)
        assert median_like(e["rest"]["p50_ns"], rest) and median_like(p["rest"]["p50_ns"], rest), (e, p)
    assert ext["req_pipe"]["wakers"][0]["comm"] == "filler", ext["req_pipe"]["wakers"]
    # --otel: each name's spans all compared, slow and rest, as report --spans lists them.
    d = tmpdir()
    data = os.path.join(d, "otel.data")
    spanperf("record", "--otel", "-F", "999", "-o", data, "--", WORKLOAD, "otel", "20", "5000",
             os.path.join(d, "truth.jsonl"), check=True)
    rows = [r for r in json_lines(spanperf("report", "-i", data, "--spans", "--format", "json", check=True).stdout)
            if not r.get("unfinished")]
    got = by_name(data)
    assert got, "no name compared"
    for name, o in got.items():
        n = sum(1 for r in rows if r["name"] == name)
        assert o["slow"]["count"] + o["rest"]["count"] == n and o["slow"]["count"] == math.ceil(n / 10), (name, o, n)
