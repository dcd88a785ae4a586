# SPDX-License-Identifier: GPL-2.0
"""libspanperf's spans seen by the rest of spanperf, for real: a program that
marks its work with spanperf_span_begin/end, run as nobody, is recorded by a
whole-host `record --otel` (no probe), and `report --spans` must list its
spans by name and id with the samples the program's own CPU clock says they
hold; the OTLP JSON lines it exported (SPANPERF_SPANS) join the recording
through `annotate --spans`."""
import json
import os
import re
import shutil

from harness import (ROOT, Skip, json_lines, need_bpf, perf_clean, run, spanperf, test, tmpdir)

FREQ = 999
LIB = os.path.join(ROOT, "build", "lib")
CLIENT = os.path.join(ROOT, "tests", "integration", "libspanperf_client.c")
INCLUDE = os.path.join(ROOT, "include")


def build(d, static):
    if not os.path.exists(os.path.join(LIB, "libspanperf.a")):
        raise Skip("libspanperf is not built (make lib)")
    exe = os.path.join(d, "client-static" if static else "client")
    cmd = ["cc", "-O1", "-fno-omit-frame-pointer", "-I" + INCLUDE, CLIENT, "-o", exe]
    if static:
        # The executable then holds otel_thread_ctx_v1 itself: it must export it where readers look.
        cmd += [os.path.join(LIB, "libspanperf.a"), "-pthread", "-Wl,--export-dynamic-symbol=otel_thread_ctx_v1"]
    else:
        cmd += ["-L" + LIB, "-lspanperf", "-Wl,-rpath," + LIB]
    run(cmd, check=True)
    return exe


def as_nobody(cmd):
    """The program under test runs unprivileged; the recorder stays root."""
    if not shutil.which("setpriv"):
        raise Skip("setpriv (util-linux) is not installed")
    return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] + cmd


def record(d, exe, n, us):
    os.chmod(d, 0o777)
    truth_file = os.path.join(d, "truth.jsonl")
    spans_file = os.path.join(d, "spans.otlp.jsonl")
    out = os.path.join(d, "lib.data")
    env = dict(os.environ, SPANPERF_SPANS=spans_file, OTEL_SERVICE_NAME="libspanperf-it")
    p = spanperf("record", "--otel", "-F", str(FREQ), "-o", out, "--",
                 *as_nobody([exe, str(n), str(us), truth_file]), env=env, timeout=300)
    assert p.returncode == 0, "record exited %d: %s" % (p.returncode, p.stderr)
    w = json_lines(p.stdout)[0]
    return out, w, json_lines(open(truth_file).read()), spans_file


def check_recorded(path, w, truth):
    p = spanperf("report", "-i", path, "--spans", "--format", "json")
    assert p.returncode == 0, p.stderr
    spans = [s for s in json_lines(p.stdout) if s["source"] == "otel" and s["tid"] == w["tid"]]
    by_id = {}
    for s in spans:
        by_id.setdefault(s["span_id"], []).append(s)
    # The library ran as nobody and still counted: user-only task-clock, rusage context switches.
    # Held to a user-only counter the thread read around the same work (user_ns), not its CPU
    # clock: this kernel charges every interrupt on the CPU to the thread running there (no
    # IRQ_TIME_ACCOUNTING): the recorder's own 999 Hz sampling, a busy host's network softirqs.
    for t in truth:
        assert t["counters"]["task-clock"] >= 0.98 * t.get("user_ns", t["cpu_ns"]), t
        assert t["counters"]["task-clock"] <= t["end_ns"] - t["start_ns"], t
    missing = [t for t in truth if t["span_id"] not in by_id]
    # A span of a few samples may have none when the thread was preempted: allow one in 20.
    assert len(missing) <= len(truth) // 20, "%d of %d spans not recorded: %s" % (len(missing), len(truth), missing[:3])
    total = expected = 0
    for t in truth:
        got = by_id.get(t["span_id"], [])
        for s in got:
            # By name (the process context's span.name) and by id, as the library published them.
            assert s["name"] == t["name"], (s, t)
            assert s["attributes"].get("span.name") == t["name"], s
            assert s["trace_id"] == t["trace_id"], (s, t)
            assert t["start_ns"] - 1e9 / FREQ <= s["start_ns"] and s["end_ns"] <= t["end_ns"] + 1e9 / FREQ, (s, t)
        total += sum(s["samples"] for s in got)
        expected += t["cpu_ns"] / 1e9 * FREQ
    assert abs(total - expected) <= 0.15 * expected, "%d samples in spans for %.0f expected" % (total, expected)
    names = {s["name"] for s in spans}
    assert {"request", "work-a", "work-b"} <= names, names


def check_annotated(path, w, truth, spans_file):
    lines = open(spans_file).read().splitlines()
    assert len(lines) == len(truth), (len(lines), len(truth))
    for line in lines:
        span = json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
        keys = {a["key"] for a in span["attributes"]}
        assert {"thread.id", "perf.task_clock_ms", "perf.context_switches", "perf.page_faults"} <= keys, keys
    p = spanperf("annotate", "--spans", spans_file, "-i", path, "--format", "json")
    assert p.returncode == 0, p.stderr
    got = {s["span_id"]: s for s in json_lines(p.stdout)}
    period = 1e9 / FREQ
    total = expected = 0
    for t in truth:
        s = got.get(t["span_id"])
        assert s, "exported span %s not annotated" % t["span_id"]
        assert s["name"] == t["name"] and s["tid"] == w["tid"], (s, t)
        total += s["samples"]
        # A window holds its own CPU and its children's: the counters' task-clock says how much.
        expected += t["counters"]["task-clock"] / period
    assert abs(total - expected) <= 0.15 * expected, "%d samples in exported spans for %.0f expected" % (total, expected)


def lib_spans(static):
    need_bpf()
    d = tmpdir()
    exe = build(d, static)
    path, w, truth, spans_file = record(d, exe, 30, 10000)
    check_recorded(path, w, truth)
    check_annotated(path, w, truth, spans_file)
    # perf lists the spans: of events, not counts; a busy host's whole-host recording may have lost
    # some of other processes' records, which perf warns of.
    out = perf_clean(["script", "-F", "comm,tid,event"], path, lost_ok=True)
    assert "spanperf:otel" in out


@test
def test_libspanperf_spans_recorded_shared():
    lib_spans(static=False)


@test
def test_libspanperf_spans_recorded_static():
    lib_spans(static=True)


@test
def test_libspanperf_install_and_pkg_config():
    """make install-lib with PREFIX and DESTDIR; programs built with pkg-config, shared and static, run."""
    if not shutil.which("pkg-config"):
        raise Skip("pkg-config is not installed")
    d = tmpdir()
    dest = os.path.join(d, "dest")
    p = run(["make", "-C", ROOT, "--no-print-directory", "install-lib", "PREFIX=/opt/sp", "DESTDIR=" + dest])
    assert p.returncode == 0, p.stdout + p.stderr
    lib = os.path.join(dest, "opt", "sp", "lib")
    for f in ("libspanperf.so", "libspanperf.so.0", "libspanperf.a", "pkgconfig/spanperf.pc"):
        assert os.path.exists(os.path.join(lib, f)), f
    assert os.path.exists(os.path.join(dest, "opt", "sp", "include", "spanperf", "spanperf.h"))
    soname = run(["readelf", "-d", os.path.join(lib, "libspanperf.so")], check=True).stdout
    assert "Library soname: [libspanperf.so.0]" in soname, soname
    # No libbpf, nor anything else an application would not have.
    needed = set(re.findall(r"Shared library: \[([^]]+)\]", soname))
    assert needed <= {"libc.so.6", "libm.so.6"}, needed
    # Only the API and the OTEP 4947 variable leave the library: the parser's names stay inside.
    dyn = run(["nm", "-D", "--defined-only", os.path.join(lib, "libspanperf.so")], check=True).stdout
    names = {l.split()[-1].split("@")[0] for l in dyn.splitlines() if len(l.split()) == 3}
    assert names and all(n.startswith("spanperf_") or n in ("otel_thread_ctx_v1", "SPANPERF_0") for n in names), names
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(lib, "pkgconfig"), PKG_CONFIG_SYSROOT_DIR=dest)
    example = os.path.join(ROOT, "examples", "libspanperf_example.c")
    for static in (False, True):
        flags = run(["pkg-config", "--cflags", "--libs"] + (["--static"] if static else []) + ["spanperf"],
                    env=env, check=True).stdout.split()
        exe = os.path.join(d, "example-static" if static else "example")
        if static:
            flags = [f for f in flags if f != "-lspanperf"] + [os.path.join(lib, "libspanperf.a")]
        run(["cc", "-O2", example, "-o", exe] + flags + ["-Wl,-rpath," + lib], check=True)
        out = run([exe], env=dict(os.environ, SPANPERF_SPANS=os.path.join(d, "s.jsonl")), check=True).stdout
        assert "page faults" in out and "parse" in out, out
    assert len(open(os.path.join(d, "s.jsonl")).read().splitlines()) == 40
