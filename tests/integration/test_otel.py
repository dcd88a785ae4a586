# SPDX-License-Identifier: GPL-2.0
"""OTEP 4947 thread context read in BPF, for real: processes that publish it
with include/otel_thread_ctx.h (the workload, and a client built here with
each TLS model of a shared object) are recorded with --otel; the spans found
must be the ones the process published, with its ids, and hold its samples."""
import os

from harness import (WORKLOAD, json_lines, need_bpf, perf_clean, run, spanperf, test, tmpdir)
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
    assert "1 processes publish thread context (1 local-exec" in p.stderr, p.stderr
    w = json_lines(p.stdout)[0]
    truth = json_lines(open(truth_file).read())
    check_spans(otel_spans(path, w["tid"]), truth)
    # perf reads the file, otel spans and all, without a word on stderr.
    out = perf_clean(["script", "-F", "comm,tid,event"], path)
    assert "spanperf:otel" in out


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
