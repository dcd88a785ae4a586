# SPDX-License-Identifier: GPL-2.0
"""OTEP 4947 thread context read in BPF, for real: processes that publish it
with include/otel_thread_ctx.h (the workload, and a client built here with
each TLS model of a shared object) are recorded with --otel; the spans found
must be the ones the process published, with its ids, and hold its samples."""
import json
import math
import os
import re
import shutil
import subprocess
import threading
import time

from harness import (WORKLOAD, Skip, json_lines, need_bpf, perf_clean, reap, run, spanperf, test, tmpdir)
from pprof_decode import decode

FREQ = 999
HERE = os.path.dirname(os.path.abspath(__file__))
INCLUDE = os.path.join(HERE, "..", "..", "include")


def record_otel(cmd, d=None):
    d = d or tmpdir()
    out = os.path.join(d, "otel.data")
    p = spanperf("record", "--otel", "-F", str(FREQ), "-o", out, "--", *cmd)
    assert p.returncode == 0, "record exited %d: %s" % (p.returncode, p.stderr)
    return out, p


def tiny_recording(d, name):
    """A recording of /bin/true, for tests of bad input; skipped (why) where BPF cannot record."""
    path = os.path.join(d, name)
    if spanperf("record", "-F", "99", "-o", path, "--", "/bin/true").returncode != 0:
        need_bpf()
    return path


def otel_spans(path, tid):
    p = spanperf("report", "-i", path, "--spans", "--format", "json", "--bpf-samples")
    if p.returncode == 1 and "has no spans" in p.stderr:
        return []
    assert p.returncode == 0, p.stderr
    return [s for s in json_lines(p.stdout) if s["source"] == "otel" and s["tid"] == tid]


def check_spans(spans, truth, tolerance=0.15):
    """Every published span found once, with its ids, its samples and its window."""
    period = 1e9 / FREQ
    by_id = {s["span_id"]: s for s in spans}
    assert len(by_id) == len(spans), "a span id twice: %s" % [s["span_id"] for s in spans]
    missing = [t["span_id"] for t in truth if t["span_id"] not in by_id]
    # A span of a few samples may have none when the thread was preempted: allow one in 20.
    assert len(missing) <= len(truth) // 20, "%d of %d spans not found: %s" % (len(missing), len(truth), missing[:5])
    for t in truth:
        s = by_id.get(t["span_id"])
        if not s:
            continue
        assert s["trace_id"] == t["trace_id"], (s, t)
        assert s["name"] == "otel", s
        # Seen from the first sample inside to one period after the last.
        assert t["start_ns"] - period <= s["start_ns"] and s["end_ns"] <= t["end_ns"] + period, (s, t)
        assert abs(s["samples"] - s["bpf_samples"]) <= 1, s
    total = sum(s["samples"] for s in spans)
    expected = sum(t["cpu_ns"] for t in truth) / 1e9 * FREQ
    assert abs(total - expected) <= tolerance * expected, "%d samples in spans for %.0f expected" % (total, expected)


@test
def test_otel_spans_from_the_workloads_thread_context():
    need_bpf()
    d = tmpdir()
    truth_file = os.path.join(d, "truth.jsonl")
    path, p = record_otel([WORKLOAD, "otel", "40", "10000", truth_file], d)
    # Other publishers on a shared host (found at a scan, or as they exec) may count too.
    m = re.search(r"(\d+) processes publish thread context \((\d+) local-exec", p.stderr)
    assert m and int(m.group(2)) >= 1, p.stderr
    w = json_lines(p.stdout)[0]
    truth = json_lines(open(truth_file).read())
    spans = otel_spans(path, w["tid"])
    check_spans(spans, truth)
    # No span outlives its thread: the one still open at the thread's EXIT ends there, or at the
    # thread's very last switch-out microseconds later; not one period after its last sample, which
    # would be after the EXIT and after later records of the round.
    tasks = perf_clean(["script", "--show-task-events", "-F", "tid,time"], path)
    m = re.search(r"^\s*%d\s+(\d+)\.(\d{6}): PERF_RECORD_EXIT" % w["tid"], tasks, re.M)
    assert m, tasks[-2000:]
    exit_ns = int(m.group(1)) * 10**9 + int(m.group(2)) * 1000
    assert max(s["end_ns"] for s in spans) <= exit_ns + 1000 + 1e9 / FREQ / 4, (exit_ns, spans[-1])
    # perf reads the file, otel spans and all, without a word on stderr.
    out = perf_clean(["script", "-F", "comm,tid,event"], path)
    assert "spanperf:otel" in out


@test
def test_otel_span_known_late_is_in_order_for_perf():
    """A span whose thread idles after it is known to have ended only at the next span's first sample,
    rounds later: its record must not be older than what perf has already sorted, and its RAW end
    stays exact."""
    need_bpf()
    d = tmpdir()
    truth_file = os.path.join(d, "truth.jsonl")
    env = dict(os.environ, WORKLOAD_OTEL_GAP_US="400000")
    out = os.path.join(d, "otel.data")
    p = spanperf("record", "--otel", "-F", str(FREQ), "-o", out, "--", WORKLOAD, "otel", "4", "30000", truth_file,
                 env=env)
    assert p.returncode == 0, p.stderr
    w = json_lines(p.stdout)[0]
    truth = json_lines(open(truth_file).read())
    check_spans(otel_spans(out, w["tid"]), truth)
    perf_clean(["script", "-F", "tid,time,event"], out)


@test
def test_otel_sort_by_span_and_pprof_labels():
    need_bpf()
    d = tmpdir()
    truth_file = os.path.join(d, "truth.jsonl")
    path, p = record_otel([WORKLOAD, "otel", "20", "10000", truth_file], d)
    w = json_lines(p.stdout)[0]
    spans = {s["span_id"]: s for s in otel_spans(path, w["tid"])}
    r = spanperf("report", "-i", path, "--sort", "tid,trace,span", "--format", "json")
    assert r.returncode == 0, r.stderr
    rows = [x for x in json_lines(r.stdout) if x["tid"] == w["tid"] and x["span_id"]]
    # Each span's row holds exactly the samples its span joined.
    assert {x["span_id"]: x["samples"] for x in rows} == {k: s["samples"] for k, s in spans.items()}
    assert all(x["trace_id"] == spans[x["span_id"]]["trace_id"] for x in rows)
    text = spanperf("report", "-i", path, "--sort", "span,sym")
    assert text.returncode == 0 and "Span" in text.stdout, text.stderr
    pb = os.path.join(d, "p.pb.gz")
    assert spanperf("report", "-i", path, "--pprof", pb).returncode == 0
    prof = decode(pb)
    strs = prof["strings"]
    labelled = {}
    for smp in prof["sample"]:
        lab = {strs[l[1]]: strs[l[2]] if 2 in l else l.get(3) for l in smp["labels"]}
        if "span_id" in lab and lab.get("tid") == w["tid"]:
            labelled[lab["span_id"]] = labelled.get(lab["span_id"], 0) + smp["value"][0]
    assert labelled == {k: s["samples"] for k, s in spans.items()}, (labelled, spans)


def build_client(d, lib_flags):
    src = os.path.join(HERE, "otel_client.c")
    run(["cc", "-O1", "-fno-omit-frame-pointer", "-fPIC", "-shared", "-DLIB", "-iquote", INCLUDE] + lib_flags +
        [src, "-o", os.path.join(d, "libotelclient.so")], check=True)
    exe = os.path.join(d, "otel_client")
    run(["cc", "-O1", src, "-L" + d, "-lotelclient", "-Wl,-rpath," + d, "-o", exe], check=True)
    return exe


def client_models(lib_flags, model):
    need_bpf()
    d = tmpdir()
    exe = build_client(d, lib_flags)
    truth_file = os.path.join(d, "truth.jsonl")
    path, p = record_otel([exe, "good", "30", "10000", truth_file], d)
    assert "1 %s" % model in p.stderr, p.stderr
    w = json_lines(p.stdout)[0]
    check_spans(otel_spans(path, w["tid"]), json_lines(open(truth_file).read()))


@test
def test_otel_shared_object_tlsdesc():
    client_models(["-mtls-dialect=gnu2"], "tlsdesc")


@test
def test_otel_shared_object_general_dynamic():
    client_models(["-mtls-dialect=gnu", "-ftls-model=global-dynamic"], "general-dynamic")


@test
def test_otel_shared_object_initial_exec():
    client_models(["-ftls-model=initial-exec"], "initial-exec")


@test
def test_otel_bad_records_are_counted_not_spans():
    need_bpf()
    d = tmpdir()
    exe = build_client(d, ["-mtls-dialect=gnu2"])
    for mode, what in (("invalid", "mid-update"), ("badptr", "unreadable")):
        path, p = record_otel([exe, mode, "20", "10000"], d)
        w = json_lines(p.stdout)[0]
        assert otel_spans(path, w["tid"]) == [], mode
        line = [l for l in p.stderr.splitlines() if "unreadable" in l]
        assert line, p.stderr
        n = int(line[0].split("found the context unreadable")[0].split()[-2]) if mode == "badptr" else \
            int(line[0].split("mid-update")[0].split(",")[-1].split()[0])
        assert n >= 100, "%s: %s" % (mode, line[0])


def to_otlp(spans, offset, with_tid):
    """spanperf JSON lines (CLOCK_MONOTONIC) as the Collector's file exporter writes OTLP JSON."""
    out = []
    for i, s in enumerate(spans):
        attrs = [{"key": "thread.id", "value": {"intValue": str(s["tid"])}}] if with_tid else []
        out.append({"traceId": "%032x" % (0xabc000 + i // 10), "spanId": "%016x" % (0x5000 + i),
                    "parentSpanId": "", "name": s["name"], "kind": 1,
                    "startTimeUnixNano": str(s["start_ns"] + offset), "endTimeUnixNano": str(s["end_ns"] + offset),
                    "attributes": attrs, "status": {}})
    pid = spans[0]["pid"]
    req = {"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "workload"}},
        {"key": "process.pid", "value": {"intValue": str(pid)}}]},
        "scopeSpans": [{"scope": {"name": "test"}, "spans": out}]}]}
    return json.dumps(req) + "\n"


def clock_offset():
    """CLOCK_REALTIME - CLOCK_MONOTONIC, from the realtime read that two monotonic reads bracket
    most tightly of 20: on a busy host a preemption between two reads alone moved the spans by
    ms, and samples near their edges into their neighbours."""
    best = None
    for _ in range(20):
        a = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        r = time.clock_gettime_ns(time.CLOCK_REALTIME)
        b = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        if best is None or b - a < best[0]:
            best = (b - a, r - (a + b) // 2)
    return best[1]


@test
def test_annotate_otlp_json_with_and_without_thread_id():
    need_bpf()
    d = tmpdir()
    ext = os.path.join(d, "calls.jsonl")
    data = os.path.join(d, "calls.data")
    p = spanperf("record", "-F", str(FREQ), "-o", data, "--", WORKLOAD, "calls", "50", "5", ext)
    assert p.returncode == 0, p.stderr
    spans = json_lines(open(ext).read())
    base = spanperf("annotate", "--spans", ext, "-i", data, "--format", "json")
    assert base.returncode == 0, base.stderr
    want = [s["samples"] for s in json_lines(base.stdout)]
    assert sum(want) > 0
    for with_tid in (True, False):
        otlp = os.path.join(d, "spans-%d.json" % with_tid)
        with open(otlp, "w") as f:
            f.write(to_otlp(spans, clock_offset(), with_tid))
        a = spanperf("annotate", "--spans", otlp, "-i", data, "--format", "json")
        assert a.returncode == 0, a.stderr
        rows = json_lines(a.stdout)
        assert len(rows) == len(spans), (with_tid, len(rows), a.stderr)
        assert all(r["tid"] == spans[0]["tid"] for r in rows)
        # The offset the test read and the one record kept differ by microseconds: a sample
        # right on the boundary of two back-to-back spans may go to the other one.
        got = [r["samples"] for r in rows]
        assert all(abs(x - y) <= 1 for x, y in zip(got, want)), (with_tid, got, want)
        assert abs(sum(got) - sum(want)) <= 2, (with_tid, got, want)
        assert rows[0]["trace_id"] == "%032x" % 0xabc000 and rows[3]["span_id"] == "%016x" % 0x5003, rows[0]

    # Back out as OTLP JSON: hex ids, int64 as strings, unix times; and in again, the same samples.
    out = spanperf("annotate", "--spans", otlp, "-i", data, "--format", "otlp-json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    rs = doc["resourceSpans"]
    assert len(rs) == 1 and rs[0]["resource"]["attributes"][0]["value"]["intValue"] == str(spans[0]["pid"])
    o = rs[0]["scopeSpans"][0]["spans"]
    assert len(o) == len(spans)
    for s in o:
        assert re.fullmatch(r"[0-9a-f]{32}", s["traceId"]) and re.fullmatch(r"[0-9a-f]{16}", s["spanId"]), s
        assert isinstance(s["startTimeUnixNano"], str) and int(s["startTimeUnixNano"]) > 1.6e18, s
        a = {x["key"]: x["value"] for x in s["attributes"]}
        assert isinstance(a["perf.cpu.samples"]["intValue"], str)
        assert a["thread.id"]["intValue"] == str(spans[0]["tid"])
        assert "perf.task_clock_ms" in a and "perf.top_functions" in a, a
    back = os.path.join(d, "back.json")
    with open(back, "w") as f:
        f.write(out.stdout)
    again = spanperf("annotate", "--spans", back, "-i", data, "--format", "json")
    assert again.returncode == 0, again.stderr
    assert [r["samples"] for r in json_lines(again.stdout)] == got


@test
def test_annotate_malformed_otlp_json_is_one_sentence():
    d = tmpdir()
    data = tiny_recording(d, "x.data")
    for text in ('{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"ab"', '{"resourceSpans":[1,]}',
                 '{"resourceSpans":' + "[" * 100000):
        bad = os.path.join(d, "bad.json")
        with open(bad, "w") as f:
            f.write(text)
        a = spanperf("annotate", "--spans", bad, "-i", data)
        assert a.returncode == 1 and a.stdout == "", (text[:40], a.returncode, a.stderr)
        assert len(a.stderr.strip().splitlines()) == 1 and "not OTLP JSON" in a.stderr, a.stderr


NODE_DIR = os.path.join(HERE, "..", "..", "build", "otel-node")


def node_client():
    """The Node OpenTelemetry SDK from npm, installed once into build/otel-node."""
    if not shutil.which("node") or not shutil.which("npm"):
        raise Skip("node and npm are not installed (tools/deps.sh installs them)")
    src = os.path.join(HERE, "otel_node")
    os.makedirs(NODE_DIR, exist_ok=True)
    for f in ("package.json", "app.js"):
        shutil.copyfile(os.path.join(src, f), os.path.join(NODE_DIR, f))
    if not os.path.isdir(os.path.join(NODE_DIR, "node_modules", "@opentelemetry", "sdk-trace-node")):
        p = run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=NODE_DIR, timeout=600)
        if p.returncode != 0:
            raise Skip("npm install of the OpenTelemetry SDK failed (registry unreachable?): %s" %
                       (p.stderr.strip().splitlines() or ["?"])[-1])
    return os.path.join(NODE_DIR, "app.js")


@test
def test_real_otel_sdk_spans_annotated():
    """Spans of the real Node SDK, annotated: samples in each match the CPU it used within 15%."""
    need_bpf()
    app = node_client()
    d = tmpdir()
    otlp = os.path.join(d, "spans.json")
    data = os.path.join(d, "node.data")
    p = spanperf("record", "-F", str(FREQ), "-o", data, "--", "node", app, otlp, "9", "100")
    assert p.returncode == 0, p.stderr
    truth = {t["span_id"]: t["cpu_ns"] for t in json_lines(p.stdout)}
    assert len(truth) == 9, p.stdout
    a = spanperf("annotate", "--spans", otlp, "-i", data, "--format", "json")
    assert a.returncode == 0, a.stderr
    rows = json_lines(a.stdout)
    assert sorted(r["span_id"] for r in rows) == sorted(truth), rows
    for r in rows:
        expected = truth[r["span_id"]] / 1e9 * FREQ
        # A tick samples whoever runs: on a CPU shared with a hog the count is binomial, about
        # sqrt(n) wide, so ~100 samples need 3 of those (79 for 100 once under tools/busyhost.sh).
        assert abs(r["samples"] - expected) <= max(0.15 * expected, 3 * math.sqrt(expected)), \
            "span %s: %d samples for %.0f expected" % (
            r["span_id"], r["samples"], expected)
        assert r["top"], r


# ---- attributes (OTEP 4947) named through the process context (OTEP 4719) ----

KEYS = {"0": "http.route", "1": "user.id"}  # what the workload publishes in its key map


def need_attrs_in_bpf():
    """The sampling program sends each new context's attributes only once struct sp_otel_event has them."""
    with open(os.path.join(HERE, "..", "..", "bpf", "spanperf_abi.h")) as f:
        if "SP_OTEL_ATTRS_MAX" not in f.read():
            raise Skip("the sampling program does not send the attributes yet "
                       "(struct sp_otel_event in bpf/spanperf_abi.h has no attrs)")


def record_otel_own(cmd, d):
    """record --otel -p of the workload alone: its process context, and what the recorder counts
    of contexts it could not read, are then the workload's and no other process's (a whole-host
    recording finds other checkouts' workloads publishing too, lying ones included).  The workload
    publishes, waits for its recorder (WORKLOAD_WAIT), then runs its spans; its output is the
    recorder's stdout, as with record -- CMD."""
    out = os.path.join(d, "otel.data")
    wl = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, errors="replace",
                          env=dict(os.environ, WORKLOAD_WAIT="1"))
    res = {}
    # Reaped as it exits: the holder below watches it with kill -0, which a zombie passes.
    reaper = threading.Thread(target=lambda: res.update(out=wl.stdout.read(), rc=wl.wait()))
    reaper.start()
    try:
        # The holder starts the workload once the recorder runs (which scans its -p processes at its
        # first tick), and lasts as long as the workload.
        go = "sleep 0.5; echo go > /proc/%d/fd/0; while kill -0 %d 2>/dev/null; do sleep 0.05; done" % (
            wl.pid, wl.pid)
        p = spanperf("record", "--otel", "-F", str(FREQ), "-p", str(wl.pid), "-o", out, "--", "sh", "-c", go,
                     timeout=300)
        reaper.join(60)
        assert res.get("rc") == 0 and p.returncode == 0, "record exited %d: %s (workload: %s)" % (
            p.returncode, p.stderr, res)
        p.stdout = res["out"]
    finally:
        reap(wl)
        reaper.join(5)
    return out, p


def attr_run(mode, n=30):
    d = tmpdir()
    truth_file = os.path.join(d, "truth.jsonl")
    path, p = record_otel_own([WORKLOAD, mode, str(n), "10000", truth_file], d)
    w = json_lines(p.stdout)[0]
    truth = json_lines(open(truth_file).read())
    return d, path, p, w, truth


def check_attrs(spans, truth, names):
    by_id = {s["span_id"]: s for s in spans}
    found = [t for t in truth if t["span_id"] in by_id]
    assert len(found) >= len(truth) - len(truth) // 20, "%d of %d spans found" % (len(found), len(truth))
    for t in found:
        want = {names[k]: v for k, v in t["attributes"].items()}
        assert by_id[t["span_id"]]["attributes"] == want, (by_id[t["span_id"]], want)


@test
def test_otel_process_context_recorded():
    """Each publisher's process context goes into the file; perf reads the file as before."""
    need_bpf()
    d, path, p, w, truth = attr_run("otel", 20)
    assert re.search(r"otel: [1-9]\d* process contexts \(OTEP 4719\) written", p.stderr), p.stderr
    out = perf_clean(["script", "-F", "pid,event"], path)
    assert re.search(r"%d\s+spanperf-otel-process" % w["pid"], out), out[:2000]


@test
def test_otel_attributes_named_by_the_process_context():
    need_bpf()
    need_attrs_in_bpf()
    d, path, p, w, truth = attr_run("otel")
    spans = otel_spans(path, w["tid"])
    check_spans(spans, truth)
    check_attrs(spans, truth, KEYS)
    by_id = {s["span_id"]: s for s in spans}
    # pprof: each sample of a span carries its attributes as labels, as it carries its ids.
    pb = os.path.join(d, "p.pb.gz")
    assert spanperf("report", "-i", path, "--pprof", pb).returncode == 0
    prof = decode(pb)
    strs = prof["strings"]
    seen = 0
    for smp in prof["sample"]:
        lab = {strs[l[1]]: strs[l[2]] if 2 in l else l.get(3) for l in smp["labels"]}
        if lab.get("tid") != w["tid"] or "span_id" not in lab:
            continue
        s = by_id[lab["span_id"]]
        assert {k: lab[k] for k in s["attributes"]} == s["attributes"], (lab, s)
        seen += smp["value"][0]
    assert seen == sum(s["samples"] for s in spans), (seen, spans)
    # The real pprof filters by them: -tagfocus on one route keeps that route's samples only.
    try:
        from test_report import pprof_tool
        tool = pprof_tool()
    except Skip as e:
        print("  (real pprof not checked: %s)" % e)
    else:
        tags = run([tool, "-tags", pb])
        assert tags.returncode == 0 and "http.route" in tags.stdout, tags.stdout + tags.stderr
        for route in {s["attributes"]["http.route"] for s in spans}:
            assert "): %s\n" % route in tags.stdout, (route, tags.stdout)
    # --sort attr:NAME: the samples of each route are those of its spans.
    r = spanperf("report", "-i", path, "--sort", "tid,attr:http.route", "--format", "json")
    assert r.returncode == 0, r.stderr
    rows = {x["attributes"]["http.route"]: x["samples"] for x in json_lines(r.stdout)
            if x["tid"] == w["tid"] and x["attributes"]["http.route"]}
    want = {}
    for s in spans:
        want[s["attributes"]["http.route"]] = want.get(s["attributes"]["http.route"], 0) + s["samples"]
    assert rows == want, (rows, want)
    # The text table: spans by attribute value (other publishers on the host may add to the counts).
    t = spanperf("report", "-i", path, "--spans")
    assert t.returncode == 0, t.stderr
    counts = {m.group(1): int(m.group(2)) for m in re.finditer(r"^  http\.route\s+(\S+)\s+(\d+)", t.stdout, re.M)}
    mine = {}
    for s in spans:
        mine[s["attributes"]["http.route"]] = mine.get(s["attributes"]["http.route"], 0) + 1
    assert all(counts.get(k, 0) >= n for k, n in mine.items()), (counts, mine, t.stdout[-1500:])
    # OTLP JSON: the application's attributes as string attributes, service.name on the resource.
    o = spanperf("report", "-i", path, "--spans", "--format", "otlp-json")
    assert o.returncode == 0, o.stderr
    for rs in json.loads(o.stdout)["resourceSpans"]:
        res = {a["key"]: a["value"] for a in rs["resource"]["attributes"]}
        if res["process.pid"]["intValue"] != str(w["pid"]):
            continue
        assert res["service.name"] == {"stringValue": "spanperf-workload"}, res
        for s in rs["scopeSpans"][0]["spans"]:
            a = {x["key"]: x["value"] for x in s["attributes"]}
            if s["spanId"] in by_id:
                for k, v in by_id[s["spanId"]]["attributes"].items():
                    assert a[k] == {"stringValue": v}, (s, k)


@test
def test_otel_attributes_without_process_context_print_as_numbers():
    need_bpf()
    need_attrs_in_bpf()
    d, path, p, w, truth = attr_run("otel-nopctx")
    assert "process contexts (OTEP 4719) written" not in p.stderr or " 0 process contexts" in p.stderr, p.stderr
    spans = otel_spans(path, w["tid"])
    check_attrs(spans, truth, {"0": "attr.0", "1": "attr.1"})


@test
def test_otel_process_context_stuck_mid_update_is_counted():
    """published-at 0 forever: the context is skipped after a few reads, counted once, keys print as numbers."""
    need_bpf()
    d, path, p, w, truth = attr_run("otel-stuck", 20)
    line = [l for l in p.stderr.splitlines() if "always mid-update" in l]
    assert line and re.search(r"\b1 always mid-update", line[0]), p.stderr
    assert re.search(r"otel: 0 process contexts \(OTEP 4719\) written", p.stderr), p.stderr
    try:
        need_attrs_in_bpf()
    except Skip:
        return
    check_attrs(otel_spans(path, w["tid"]), truth, {"0": "attr.0", "1": "attr.1"})


@test
def test_otel_process_context_that_lies_is_counted():
    """A bad version, pointer, size or payload: skipped, counted once, the spans still recorded."""
    need_bpf()
    for mode, what in (("otel-badver", "1 bad signature or version"), ("otel-badptr", "1 unreadable"),
                       ("otel-badsize", "1 bad size or pointer"), ("otel-badpayload", "1 malformed payloads")):
        # 200 ms: the recorder looks at the command's context on its ticks, 100 ms apart at most.
        d, path, p, w, truth = attr_run(mode, 20)
        line = [l for l in p.stderr.splitlines() if "process contexts not read" in l]
        assert line and what in line[0], (mode, p.stderr)
        assert re.search(r"otel: 0 process contexts \(OTEP 4719\) written", p.stderr), (mode, p.stderr)
        assert otel_spans(path, w["tid"]), (mode, p.stderr)


@test
def test_otel_attributes_that_lie_are_dropped_not_misread():
    """attrs-data-size past 612: the attributes dropped and counted; an attribute running past the
    end: the ones before it kept, it dropped."""
    need_bpf()
    need_attrs_in_bpf()
    d, path, p, w, truth = attr_run("otel-badattrs", 20)
    assert re.search(r"otel: [1-9]\d* contexts' attributes dropped", p.stderr), p.stderr
    by_id = {s["span_id"]: s for s in otel_spans(path, w["tid"])}
    assert len(by_id) >= len(truth) - 1, (len(by_id), p.stderr)
    for i, t in enumerate(truth):
        s = by_id.get(t["span_id"])
        if not s:
            continue
        want = {} if i % 2 == 0 else {KEYS[k]: v for k, v in t["attributes"].items()}
        assert s["attributes"] == want, (i, s, want)


def otel_nap_at_end(extra):
    """Each span of the workload's otel mode naps 5 ms last thing before its context goes."""
    d = tmpdir()
    truth_file, out = os.path.join(d, "truth.jsonl"), os.path.join(d, "otel.data")
    env = dict(os.environ, WORKLOAD_OTEL_NAP_US="5000", WORKLOAD_OTEL_NAP_AT_END="1")
    p = spanperf("record", "-v", "--otel", "--sched", *extra, "-F", str(FREQ), "-o", out, "--", WORKLOAD, "otel",
                 "20", "10000", truth_file, env=env)
    assert p.returncode == 0, p.stderr
    w = json_lines(p.stdout)[0]
    truth = {t["span_id"]: t for t in json_lines(open(truth_file).read())}
    spans = {s["span_id"]: s for s in otel_spans(out, w["tid"])}
    found = [k for k in truth if k in spans]
    assert len(found) >= 18, (len(found), len(truth))
    m = re.search(r"otel: (\d+) switch-outs inside a span found the context unreadable", p.stderr)
    return out, [(spans[k], truth[k]) for k in found], int(m.group(1)) if m else 0


@test
def test_otel_span_keeps_its_last_block():
    """A span that blocks last thing before its context goes: no sample sees it after the
    nap, but its thread left the CPU in it, so it lasts to the switch-in and the nap is its
    sleep_ns (split from record --sched's switch-outs).  With --raw-tp (no switch reading,
    samples only) the same spans end before the nap: the control that the test can tell."""
    need_bpf()
    out, pairs, unread = otel_nap_at_end([])
    short = []
    for s, t in pairs:
        assert s["split"] == "sched-records" and s["edges"].startswith("sampled"), s
        parts = s["on_cpu_ns"] + s["runq_ns"] + s["sleep_ns"] + s["blocked_ns"]
        assert abs(parts - s["duration_ns"]) <= 0.01 * s["duration_ns"], s
        assert s["sleep_ns"] <= t["nap_ns"] * 1.01, (s, t)
        # The context goes right after the nap's switch-in: the span holds to there, unless the
        # recorder could not read the context as the thread left for the nap (a loaded host: the
        # read at a switch-out found the page unreadable now and then), which it counts and says.
        if s["end_ns"] < t["end_ns"] - 200000 or s["sleep_ns"] < 0.95 * 5e6:
            short.append((s, t))
    assert len(short) <= unread, (unread, short)
    at_switch = sum(1 for s, _ in pairs if s["edges"] == "sampled, end at a switch")
    assert at_switch >= 0.9 * len(pairs), [s["edges"] for s, _ in pairs]
    perf_clean(["script", "-F", "tid,time,event"], out)
    _, pairs, _ = otel_nap_at_end(["--raw-tp"])
    lost = sum(1 for s, t in pairs if s["sleep_ns"] < 0.5 * 5e6)
    assert lost >= 0.8 * len(pairs), [(s["sleep_ns"], s["edges"]) for s, _ in pairs]
