# SPDX-License-Identifier: GPL-2.0
"""OpenTelemetry thread context (record --otel, OTEP 4947): the cost of reading the thread
context in BPF, the context-change rate, and annotate on 1M OTLP spans."""
import json
import os
import re
import subprocess
import time

from harness import (CPUS, DEVNULL, FLOOR, SPANPERF, TMP, WORKLOAD, gen_otlp, kill, log, median, prog_cost, rounds,
                     spawn, timed)

BPF_STATS = True


def otel_load(kind, secs):
    """One busy process per CPU: a shell loop that does not export the variable ("plain"), the
    workload publishing nothing (kind "none": the variable is there, NULL), one long span each
    ("ctx"), or a span switch every 100 us ("switch": 10,000 a second)."""
    procs = []
    for _ in range(CPUS):
        if kind == "plain":
            cmd = ["sh", "-c", "while :; do :; done"]
        elif kind == "none":
            cmd = [WORKLOAD, "spin", str(int(secs * 1000))]
        elif kind == "ctx":
            cmd = [WORKLOAD, "otel", "1", str(int(secs * 1e6))]
        else:
            cmd = [WORKLOAD, "otel", str(int(secs * 10000)), "100"]
        procs.append(spawn(cmd, stdout=DEVNULL))
    return procs


def otel_cost(otel, kind, hz, secs=8):
    """ns per sample in the sampling program while the load runs, as record -v reports its own
    program's bpf_stats (other recorders on a shared machine load programs of the same name)."""
    out = os.path.join(TMP, "otel.data")
    err = os.path.join(TMP, "otel.stderr")
    load = otel_load(kind, 10)
    time.sleep(0.2)
    cmd = [SPANPERF, "record", "-v", "-a", "-F", str(hz), "-d", str(secs), "-o", out] + (["--otel"] if otel else [])
    with open(err, "w") as f:
        p = spawn(cmd, stdout=DEVNULL, stderr=f)
        p.wait()
    kill(*load)
    m = re.search(r"sampling program: \d+ runs, (\d+) ns each", open(err).read())
    return float(m.group(1)) if m else float("nan")


def tls_floor_cost(tls, hz):
    """ns per sample of bench/floor's program on the same load: empty, or reading one word of the
    interrupted thread's TLS (-r), the least any reader of thread context pays."""
    load = otel_load("ctx", 10)
    time.sleep(0.2)
    fl = spawn([FLOOR, "-F", str(hz), "-d", "9"] + (["-r"] if tls else []), stdout=DEVNULL, stderr=DEVNULL)
    time.sleep(2)
    name = "floor_tls" if tls else "floor_prog"
    cost = prog_cost(name, 5)
    kill(fl, *load)
    return cost[0] if cost else float("nan")


def otel_spans_of(path):
    p = subprocess.run([SPANPERF, "report", "-i", path, "--spans", "--format", "json"],
                       capture_output=True, text=True)
    return sum(1 for l in p.stdout.splitlines() if '"source":"otel"' in l)


def run(res):
    hz = 4999
    cost = {"off": [], "no context": [], "context": [], "plain off": [], "plain": []}
    for r in range(rounds()):
        for label, otel, kind in (("off", False, "ctx"), ("no context", True, "none"), ("context", True, "ctx"),
                                  ("plain off", False, "plain"), ("plain", True, "plain")):
            cost[label].append(otel_cost(otel, kind, hz))
            log("otel cost round %d %s: %.0f ns/sample" % (r, label, cost[label][-1]))
    floor = {"empty": [], "tls read": []}
    for r in range(rounds()):
        for label in floor:
            floor[label].append(tls_floor_cost(label == "tls read", hz))
            log("otel floor round %d %s: %.0f ns/sample" % (r, label, floor[label][-1]))
    out = {"hz": hz, "ns_per_sample": {k: median(v) for k, v in cost.items()},
           "floor_ns": {k: median(v) for k, v in floor.items()},
           "tls_read_ns": median([t - e for t, e in zip(floor["tls read"], floor["empty"])]),
           "added_ns": dict({k: median([x - y for x, y in zip(cost[k], cost["off"])]) for k in ("no context", "context")},
                            **{"not publishing": median([x - y for x, y in zip(cost["plain"], cost["plain off"])])}),
           "raw": cost}
    # 10,000 span switches a second on each CPU: each sample sees a new context.
    rates = {}
    for rate_hz in (999, 4999):
        rows = []
        for r in range(rounds()):
            path = os.path.join(TMP, "sw.data")
            secs = 5
            load = otel_load("switch", secs + 1)
            time.sleep(0.2)
            p = spawn([SPANPERF, "record", "-q", "-a", "--otel", "-F", str(rate_hz), "-d", str(secs), "-o", path],
                      stdout=DEVNULL, stderr=DEVNULL)
            _, _, ru = os.wait4(p.pid, 0)
            kill(*load)
            n = otel_spans_of(path)
            # On a shared machine the load gets what CPU it gets: a record per sample of it is the ceiling.
            pids = {w.pid for w in load}
            rep_ = subprocess.run([SPANPERF, "report", "-i", path, "--sort", "pid", "--format", "json"],
                                  capture_output=True, text=True).stdout
            samples = sum(json.loads(l)["samples"] for l in rep_.splitlines() if json.loads(l)["pid"] in pids)
            rows.append({"records_per_s": n / secs, "recorder_cpu_s": ru.ru_utime + ru.ru_stime,
                         "per_sample": n / samples if samples else float("nan")})
            log("otel switches -F %d round %d: %.0f records/s, %.3f per sample of the load" % (
                rate_hz, r, rows[-1]["records_per_s"], rows[-1]["per_sample"]))
        rates[rate_hz] = {"records_per_s": median([x["records_per_s"] for x in rows]),
                          "per_sample": median([x["per_sample"] for x in rows]),
                          "recorder_cpu_s": median([x["recorder_cpu_s"] for x in rows]), "seconds": 5}
    out["switches"] = rates
    # annotate: 1M OTLP spans against a recording of the thread they name.
    data = os.path.join(TMP, "ann.data")
    truth = os.path.join(TMP, "ann.jsonl")
    subprocess.run([SPANPERF, "record", "-q", "-F", "999", "-o", data, "--", WORKLOAD, "calls", "400", "5", truth],
                   check=True, stdout=DEVNULL, stderr=DEVNULL)
    calls = [json.loads(l) for l in open(truth)]
    off = time.clock_gettime_ns(time.CLOCK_REALTIME) - time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    big = os.path.join(TMP, "1m.json")
    gen_otlp(big, 1000000, calls[0]["tid"], calls[0]["pid"], calls[0]["start_ns"] + off, calls[-1]["end_ns"] + off)
    runs = [timed([SPANPERF, "annotate", "--spans", big, "-i", data, "--format", "json"]) for _ in range(rounds())]
    out["annotate_1m"] = {"seconds": min(r[0] for r in runs), "max_rss_kib": max(r[1] for r in runs),
                          "file_mb": os.path.getsize(big) / 1e6, "raw": [r[0] for r in runs]}
    log("otel annotate 1M OTLP spans: %.2f s" % out["annotate_1m"]["seconds"])
    res["otel"] = out


def markdown(res):
    v = res["otel"]
    ns, add = v["ns_per_sample"], v["added_ns"]
    lines = ["## OpenTelemetry thread context (`record --otel`, OTEP 4947)", "",
              "The sampling program's cost per sample (bpf_stats, `-a -F %s`, no call chains), one "
              "workload process per CPU: without --otel; with --otel on processes that export "
              "otel_thread_ctx_v1 but have no context set; with a context set (the workload's record, with two "
              "attributes, lives on the thread's stack: another page than its TLS)." % v["hz"], "",
              "| without --otel | --otel, no context | --otel, context | added, no context | added, context | target |",
              "|---|---|---|---|---|---|",
              "| %.0f ns | %.0f ns | %.0f ns | %.0f ns | %.0f ns | <= 100 ns added |" % (
                  ns["off"], ns["no context"], ns["context"], add["no context"], add["context"]), ""]
    if "not publishing" in add:
        lines += ["A process that does not publish (a shell loop on each CPU) costs %.0f ns a sample without "
                  "--otel and %.0f ns with it: %.0f ns added (its threads keep the answer, so no lookup)." % (
                      ns["plain off"], ns["plain"], add["not publishing"]), ""]
    if "tls_read_ns" in v:
        fl = v["floor_ns"]
        lines += ["The floor under the same load (bench/floor): an empty program costs %.0f ns a sample, "
                  "and %.0f ns when it reads one word of the interrupted thread's TLS, so one user-memory "
                  "read costs %.0f ns here. No context takes one such read (the TLS pointer), a context two "
                  "(and the record's header): %.1f and %.1f reads' worth." % (
                      fl["empty"], fl["tls read"], v["tls_read_ns"], add["no context"] / v["tls_read_ns"],
                      add["context"] / v["tls_read_ns"]), ""]
    lines += ["Context-change records with each CPU's thread switching span 10,000 times a second "
              "(a record per sample that sees a new span, so at most the sampling rate):", "",
              "| -F | records/s | records per sample of the load | recorder CPU (s, of 5 s) |", "|---|---|---|---|"]
    for hz, row in v["switches"].items():
        lines.append("| %s | %.0f | %.3f | %.2f |" % (hz, row["records_per_s"], row.get("per_sample", float("nan")),
                                                   row["recorder_cpu_s"]))
    a = v["annotate_1m"]
    lines += ["", "`annotate` of 1,000,000 OTLP JSON spans (%.0f MB, the Collector file exporter's form) on one "
              "thread of a recording: %.2f s, peak RSS %.0f MiB." % (a["file_mb"], a["seconds"],
                                                                    a["max_rss_kib"] / 1024), ""]
    return lines
