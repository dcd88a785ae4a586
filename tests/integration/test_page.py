# SPDX-License-Identifier: GPL-2.0
"""report --html, --speedscope and --flamegraph opened in a real browser:
Debian's headless Chromium driven by playwright-core, and the real speedscope
from npm.  What the page shows is checked against report --spans --format
json on the same file and against what the workload measured of itself."""
import collections
import json
import os
import re
import shutil

from harness import (BUILD, ROOT, SPANPERF, WORKLOAD, Skip, json_lines, need_bpf, run, spanperf, test, tmpdir)

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_DIR = os.path.join(BUILD, "browser-node")
CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = os.path.join(BUILD, "test-artifacts")
GEN_SPANS = os.path.join(BUILD, "bench", "gen_spans")
FREQ = 999

_cache = {}


def browser():
    """drive.js with playwright-core and speedscope from npm, installed once into build/browser-node."""
    if not os.access(CHROMIUM, os.X_OK):
        raise Skip("Debian's chromium is not installed (tools/deps.sh test installs it)")
    if not shutil.which("node") or not shutil.which("npm"):
        raise Skip("node and npm are not installed (tools/deps.sh installs them)")
    src = os.path.join(HERE, "browser")
    os.makedirs(NODE_DIR, exist_ok=True)
    for f in ("package.json", "drive.js"):
        shutil.copyfile(os.path.join(src, f), os.path.join(NODE_DIR, f))
    if not all(os.path.isdir(os.path.join(NODE_DIR, "node_modules", m)) for m in ("playwright-core", "speedscope")):
        p = run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=NODE_DIR, timeout=600)
        if p.returncode != 0:
            raise Skip("npm install of playwright-core and speedscope failed (registry unreachable?): %s" %
                       (p.stderr.strip().splitlines() or ["?"])[-1])
    return os.path.join(NODE_DIR, "drive.js")


def drive(*args):
    p = run(["node", browser()] + list(args), timeout=300, env=dict(os.environ, CHROMIUM=CHROMIUM))
    assert p.returncode == 0 and p.stdout.strip(), "drive.js exited %d: %s" % (p.returncode, p.stderr[-2000:])
    out = json.loads(p.stdout.strip().split("\n")[-1])  # not splitlines: names hold U+2028
    assert "exception" not in out, out["exception"]
    # What a user would see break, and anything the page tried to fetch.
    assert out["errors"] == [], out["errors"]
    assert out["requests"] == [], out["requests"]
    return out


def fmt_dur(ns):
    """The page's duration format (page.js fmtDur)."""
    if ns < 1e3:
        return "%d ns" % round(ns)
    if ns < 1e6:
        return "%.1f \u00b5s" % (ns / 1e3)
    if ns < 1e9:
        return "%.1f ms" % (ns / 1e6)
    return "%.2f s" % (ns / 1e9)


def recording():
    """Two named threads with uprobe spans: worker-2 spins inside page_work, napper sleeps half of page_nap."""
    if "path" not in _cache:
        need_bpf()
        d = tmpdir()
        path = os.path.join(d, "page.data")
        # ehframe: a sample in libc's clock_nanosleep (no frame pointer) keeps page_nap above it,
        # which a frame-pointer walk skips, and the panel's flame graph must hold it.
        p = spanperf("record", "--call-graph", "ehframe", "-F", str(FREQ), "--off-cpu", "-o", path,
                     "--span", "uprobe:%s:page_work" % WORKLOAD, "--span", "uprobe:%s:page_nap" % WORKLOAD,
                     "--", WORKLOAD, "page", "20", "10", "worker-2", "napper", check=True)
        truth = {t["role"]: t for t in json_lines(p.stdout)}
        rows = json_lines(spanperf("report", "-i", path, "--spans", "--format", "json", check=True).stdout)
        _cache.update(path=path, truth=truth, rows=[r for r in rows if r["pid"] == truth["worker"]["pid"]])
    return _cache["path"], _cache["truth"], _cache["rows"]


@test
def test_page_shows_every_span_and_its_json_row():
    path, truth, rows = recording()
    d = tmpdir()
    page = os.path.join(d, "page.html")
    spanperf("report", "-i", path, "--html", page, check=True)
    os.makedirs(ARTIFACTS, exist_ok=True)
    png = os.path.join(ARTIFACTS, "page.png")
    out = drive("page", page, png, str(truth["napper"]["tid"]))
    assert os.path.getsize(png) > 10000, "no screenshot kept"
    names = {truth["worker"]["tid"]: "worker-2", truth["napper"]["tid"]: "napper"}
    assert len(rows) == 40 and {r["tid"] for r in rows} == set(names), rows[:2]
    # The lanes, by accessible name.
    lanes = {l["tid"]: l["text"] for l in out["lanes"]}
    for tid, name in names.items():
        assert lanes.get(tid, "").startswith("thread %s (tid %d) of process workload" % (name, tid)), lanes.get(tid)
        assert ", 20 spans" in lanes[tid], lanes[tid]
    # Every span the JSON lists, by accessible name at its start.
    shown = {(s["tid"], s["start_ns"]): s["label"] for s in out["spans"]}
    for r in rows:
        want = "span %s %s on thread %s" % (r["name"], fmt_dur(r["duration_ns"]), names[r["tid"]])
        assert shown.get((r["tid"], str(r["start_ns"]))) == want, (want, shown.get((r["tid"], str(r["start_ns"]))))
    # The span clicked on the canvas (napper's longest, which slept): its panel and its JSON row.
    c = out["clicked"]
    row = next(r for r in rows if str(r["start_ns"]) == c["start_ns"])
    assert row["tid"] == truth["napper"]["tid"], (row, c["title"])
    assert int(c["samples"]) == row["samples"], (c, row)
    assert c["top"] and c["top"][0] == [row["top"][0]["sym"], row["top"][0]["samples"]], (c["top"], row["top"])
    for key in ("on_cpu_ns", "off_cpu_ns", "runq_ns"):
        want = "" if row[key] is None else str(row[key])
        assert c["wall"].get(key) == want, (key, c["wall"], row)
    # It slept: each page_nap sleeps 10 ms, all of it off CPU.
    assert row["off_cpu_ns"] >= 0.95 * 10e6, row
    # Its flame graph holds its samples: the same ones, by the same rule (the thread's samples in
    # [start, end]), as its JSON row and its stacks in report --folded --span-prefix.
    # (A name may be a node on more than one path: a chain that ended early roots elsewhere.)
    flame = collections.Counter()
    for n, s in c["flame"]:
        flame[n] += s
    folded = spanperf("report", "-i", path, "--folded", "--span-prefix", check=True).stdout
    mine = "span:page_nap:%s;" % row["span_id"]
    stacks = [(l[len(mine):].rsplit(" ", 1)[0].split(";"), int(l.rsplit(" ", 1)[1]))
              for l in folded.splitlines() if l.startswith(mine)]
    assert flame["all"] == row["samples"] == sum(n for _, n in stacks), (c["flame"][:8], row["samples"], stacks)
    assert flame["page_nap"] == sum(n for st, n in stacks if "page_nap" in st), (c["flame"][:10], stacks)
    # All are under page_nap but for those taken at its end, between page_nap's return and the
    # uretprobe's program stamping it: in the trampoline (the leaf pager_thread, where it returns
    # to), or in the kernel running the uretprobe (its frames on the stack, whatever the leaf).
    at_end = lambda st: st[-1] == "pager_thread" or any(re.search("u(ret)?probe", f) for f in st)
    for st, n in stacks:
        assert "page_nap" in st or at_end(st), (st, row["top"])
    # A range over all threads: its flame graph holds the hot function, and its search finds it.
    sel = out["selection"]
    assert sel["title"].endswith("on all threads"), sel["title"]
    burn = sum(s for n, s in sel["flame"] if n == "burn_ns")
    assert burn > 0.5 * (truth["worker"]["cpu_ns"] + truth["napper"]["cpu_ns"]) / 1e9 * FREQ, (burn, truth)
    m = re.match(r"matched ([0-9.]+)%", sel["matched"])
    assert m and float(m.group(1)) > 0, sel["matched"]


@test
def test_speedscope_opens_in_real_speedscope():
    path, truth, rows = recording()
    d = tmpdir()
    ss = os.path.join(d, "page.speedscope.json")
    spanperf("report", "-i", path, "--speedscope", ss, check=True)
    doc = json.load(open(ss))
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = [f["name"] for f in doc["shared"]["frames"]]
    assert "span:page_work" in frames and "span:page_nap" in frames and "burn_ns" in frames
    out = drive("speedscope", ss, "burn_ns", "worker-2")
    assert not out["failed"], out["console"][-5:]
    for role, name in (("worker", "worker-2"), ("napper", "napper")):
        assert "%s (tid %d)" % (name, truth[role]["tid"]) in out["threads"], out["threads"][:10]
    assert "worker-2 (tid %d)" % truth["worker"]["tid"] in out["active"], out["active"]
    # Its search: the sandwich table of worker-2's functions narrowed to the hot one.
    assert not out["no_match"] and out["found"] and all("burn_ns" in r for r in out["found"]), out["found"][:5]


@test
def test_speedscope_to_stdout_is_the_same_file():
    path, _, _ = recording()
    d = tmpdir()
    ss = os.path.join(d, "a.json")
    spanperf("report", "-i", path, "--speedscope", ss, check=True)
    p = spanperf("report", "-i", path, "--format", "speedscope", check=True)
    assert p.stdout == open(ss).read()


@test
def test_flamegraph_svg_in_chromium():
    path, _, _ = recording()
    d = tmpdir()
    svg = os.path.join(d, "cpu.svg")
    spanperf("report", "-i", path, "--flamegraph", svg, check=True)
    out = drive("svg", svg, "burn_ns")
    m = re.match(r"Matched: ([0-9.]+)%", out["matched"])
    assert m and float(m.group(1)) > 0, out["matched"]
    assert out["frames"] > 10, out


def gen_spans(path, samples, spans, threads):
    if not os.access(GEN_SPANS, os.X_OK):
        run(["make", "--no-print-directory", "build/bench/gen_spans"], cwd=ROOT, timeout=600, check=True)
    run([GEN_SPANS, path, str(samples), str(spans), str(threads)], check=True)


@test
def test_page_of_spans_only_and_of_nothing():
    """A file with no samples, and one with neither samples nor spans: pages that say so, and open."""
    d = tmpdir()
    for samples, spans, note in ((0, 120, "no samples: spans only"), (0, 0, "holds no samples and no spans"),
                                 (500, 0, "holds no spans")):
        data = os.path.join(d, "g%d-%d.data" % (samples, spans))
        page = data + ".html"
        gen_spans(data, samples, spans, 3)
        spanperf("report", "-i", data, "--html", page, check=True)
        out = drive("page-static", page)
        assert note in out["notes"], (note, out["notes"])
        assert len(out["spans"]) == spans, (len(out["spans"]), spans)
        ss = spanperf("report", "-i", data, "--format", "speedscope", check=True).stdout
        assert len(json.loads(ss)["profiles"]) == (3 if samples or spans else 0)


@test
def test_page_thins_what_it_cannot_hold():
    """Above --max-samples and --max-spans the page keeps every k-th sample and the longest spans, and says so."""
    d = tmpdir()
    data = os.path.join(d, "big.data")
    page = os.path.join(d, "big.html")
    gen_spans(data, 30000, 3000, 4)
    p = spanperf("report", "-i", data, "--html", page, "--max-samples", "10000", "--max-spans", "1000", check=True)
    assert "keeps 1 sample in 3 of each thread and the 1000 longest spans" in p.stderr, p.stderr
    out = drive("page-static", page)
    assert "1 sample in 3 of each thread is shown (30000 recorded)" in out["notes"], out["notes"]
    assert "the 1000 longest of 3000 spans are shown" in out["notes"], out["notes"]
    assert len(out["spans"]) == 1000


@test
def test_page_bad_arguments_are_one_sentence():
    d = tmpdir()
    page = os.path.join(d, "x.html")
    data = os.path.join(d, "g.data")
    gen_spans(data, 100, 10, 1)
    for args, text in ((["-i", os.path.join(d, "none.data")], "none.data"),
                       (["-i", data, "--spans"], "use them without --spans"),
                       (["-i", data, "--max-samples", "many"], "--max-samples 'many' is not a count")):
        p = spanperf("report", "--html", page, *args)
        assert p.returncode == 1 and p.stdout == "", (args, p.returncode, p.stdout)
        assert len(p.stderr.strip().splitlines()) == 1 and text in p.stderr, (args, p.stderr)
    # Nothing half-written: no page, and no temporary file beside it.
    assert os.listdir(d) == ["g.data"], os.listdir(d)
    p = spanperf("report", "-i", data, "--html", os.path.join(d, "no-such-dir", "x.html"))
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1 and "no-such-dir" in p.stderr, p.stderr


HOSTILE = [
    "</script><script>window.__pwned='span'</script>",
    "<img src=x onerror=\"window.__pwned='img'\">",
    "quo\"te's \\ back`tick ${x}",
    "line\u2028sep\u2029para <!-- comment",
]


@test
def test_page_escapes_hostile_names():
    """Thread names and span names with markup, quotes and invalid UTF-8: shown as text, never run."""
    need_bpf()
    d = tmpdir()
    data = os.path.join(d, "h.data")
    # The kernel keeps 15 bytes of a thread's name: enough to close a script element.
    comm_a, comm_b = b"</script><i>", b"q\"'\xff\xfe<b>"
    p = run([SPANPERF, "record", "-F", str(FREQ), "-o", data,
             "--span", "uprobe:%s:page_work" % WORKLOAD, "--", WORKLOAD, "page", "6", "5", comm_a, comm_b],
            check=True)
    truth = {t["role"]: t for t in json_lines(p.stdout)}
    rows = [r for r in json_lines(spanperf("report", "-i", data, "--spans", "--format", "json", check=True).stdout)
            if r["tid"] == truth["worker"]["tid"]]
    assert len(rows) == 6, rows
    # The same spans, renamed, as an application's own spans file: raw invalid UTF-8 in one name.
    ext = os.path.join(d, "spans.jsonl")
    with open(ext, "wb") as f:
        for i, r in enumerate(rows):
            name = HOSTILE[i % len(HOSTILE)].encode() if i < len(HOSTILE) else b"bad\xff\xfe\xc0name"
            f.write(b'{"name":"' + name.replace(b"\\", b"\\\\").replace(b'"', b'\\"') +
                    b'","pid":%d,"tid":%d,"start_ns":%d,"end_ns":%d}\n' % (r["pid"], r["tid"], r["start_ns"], r["end_ns"]))
    page = os.path.join(d, "h.html")
    spanperf("annotate", "--spans", ext, "-i", data, "--html", page, check=True)
    raw = open(page, "rb").read()
    # Two script elements, the data and the page's own code, and nothing else opened or closed one.
    assert raw.count(b"<script") == 2 and raw.count(b"</script") == 2, raw.count(b"<script")
    assert b"\xff" not in raw and b"\xe2\x80\xa8" not in raw
    out = drive("page-static", page)
    assert out["pwned"] is None, out["pwned"]
    labels = [s["label"] for s in out["spans"]]
    for w in ["span %s " % h for h in HOSTILE]:
        assert any(l.startswith(w) for l in labels), (w, labels)
    assert any(l.startswith("span bad\ufffd") for l in labels), labels
    lanes = " | ".join(l["text"] for l in out["lanes"])
    assert "thread </script><i> (tid %d)" % truth["worker"]["tid"] in lanes, lanes
    assert "thread q\"'\ufffd\ufffd<b> (tid %d)" % truth["napper"]["tid"] in lanes, lanes
