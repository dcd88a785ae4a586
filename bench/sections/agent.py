# SPDX-License-Identifier: GPL-2.0
"""agent: spanperf agent's own cost at its defaults with -g (19 Hz, ehframe, 10 s windows) and at
99 Hz, beside record recording as long in the same round: CPU (user + system) over a steady span
after start-up, and resident memory at its end; the rows and bytes it ships per host-hour; and
report --clickhouse over one hour of two hosts beside the same report from the files of that hour.
ClickHouse is a server of the bench's own on loopback (Debian's 18.16, as the tests start it)."""
import os
import signal
import sys
import time
import urllib.request

from harness import DEVNULL, ROOT, SPANPERF, TMP, log, median, rounds, spawn, timed

sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import ch_cluster  # noqa: E402

WARM, STEADY = 15, 60  # seconds: start-up (the whole host's files read once), then what is measured
TARGET_CPU_PCT, TARGET_RSS_MIB = 0.5, 64  # issue 37's, at the defaults with -g (-F 19)


def ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return int(v[11]) + int(v[12])


def rss_kib(pid, key="VmRSS"):
    with open("/proc/%d/status" % pid) as f:
        return next(int(l.split()[1]) for l in f if l.startswith(key + ":"))


def bpf_mib(pid):
    """The kernel memory of the BPF maps pid holds (their fdinfo's memlock): not in its RSS, said beside it."""
    total = 0
    for fd in os.listdir("/proc/%d/fdinfo" % pid):
        try:
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                info = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
        except OSError:
            continue
        if "map_type" in info:
            total += int(info.get("memlock", "0"))
    return total / 2**20


def metrics(port):
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5).read().decode()
    return {l.split()[0]: float(l.split()[1]) for l in text.splitlines() if l and not l.startswith("#")}


def steady(cmd, port=None):
    """(CPU share of one CPU, RSS MiB at the end, metrics delta, RSS parts and BPF map MiB) of cmd over
    STEADY s after WARM s."""
    p = spawn(cmd, stdout=DEVNULL, stderr=DEVNULL)
    hz = os.sysconf("SC_CLK_TCK")
    time.sleep(WARM)
    t0, c0, m0 = time.time(), ticks(p.pid), metrics(port) if port else {}
    time.sleep(STEADY)
    t1, c1, m1 = time.time(), ticks(p.pid), metrics(port) if port else {}
    rss = rss_kib(p.pid) / 1024
    parts = {"anon": rss_kib(p.pid, "RssAnon") / 1024, "file": rss_kib(p.pid, "RssFile") / 1024,
             "bpf": bpf_mib(p.pid)}
    p.send_signal(signal.SIGTERM)  # INT may be ignored where bench runs in the background
    p.wait()
    return (c1 - c0) / hz / (t1 - t0), rss, {k: m1[k] - m0.get(k, 0) for k in m1}, parts


def run(res):
    srv = ch_cluster.Cluster(os.path.join(TMP, "ch"), n=1).start().servers[0]
    port = ch_cluster.free_port()
    v = {"steady_s": STEADY, "hz": {}}
    try:
        for hz in (19, 99):
            rows = {"agent": [], "record": []}
            shipped = []
            for r in range(rounds()):
                for name in (["agent", "record"] if r % 2 == 0 else ["record", "agent"]):
                    if name == "agent":
                        cpu, rss, m, parts = steady([SPANPERF, "agent", "--clickhouse", srv.url, "-F", str(hz), "-g",
                                              "-q", "--serve", "127.0.0.1:%d" % port], port)
                        shipped.append(m)
                    else:
                        cpu, rss, m, parts = steady([SPANPERF, "record", "-F", str(hz), "-g", "-N", "-q", "-o",
                                              os.path.join(TMP, "agent-baseline.data")])
                    rows[name].append((cpu, rss, parts))
                log("agent %d Hz round %d: %s; shipped %.0f rows, %.0f bytes in %d s" % (
                    hz, r, ", ".join("%s %.2f%% CPU %.0f MiB" % (k, 100 * x[-1][0], x[-1][1]) for k, x in rows.items()),
                    shipped[-1].get("spanperf_agent_rows_sent_total", 0),
                    shipped[-1].get("spanperf_agent_bytes_sent_total", 0), STEADY))
            per_hour = 3600 / STEADY
            v["hz"][hz] = {
                "agent_cpu_pct": 100 * median([x[0] for x in rows["agent"]]),
                "agent_rss_mib": median([x[1] for x in rows["agent"]]),
                "record_cpu_pct": 100 * median([x[0] for x in rows["record"]]),
                "record_rss_mib": median([x[1] for x in rows["record"]]),
                "agent_anon_mib": median([x[2]["anon"] for x in rows["agent"]]),
                "agent_file_mib": median([x[2]["file"] for x in rows["agent"]]),
                "agent_bpf_mib": median([x[2]["bpf"] for x in rows["agent"]]),
                "record_anon_mib": median([x[2]["anon"] for x in rows["record"]]),
                "record_file_mib": median([x[2]["file"] for x in rows["record"]]),
                "record_bpf_mib": median([x[2]["bpf"] for x in rows["record"]]),
                "rows_per_hour": per_hour * median([m.get("spanperf_agent_rows_sent_total", 0) for m in shipped]),
                "bytes_per_hour": per_hour * median([m.get("spanperf_agent_bytes_sent_total", 0) for m in shipped]),
            }
        v["report"] = fleet_report(srv)
    finally:
        srv.kill()
    res["agent"] = v


def fleet_report(srv):
    """One hour of two hosts: the windows shipped above, repeated over 360 windows of each of two
    host labels (INSERT ... SELECT in ClickHouse), read by report --clickhouse --folded; beside it,
    report --folded of a record file of one window, times the 720 files of that hour."""
    q = srv.query
    q("CREATE TABLE IF NOT EXISTS spanperf.one AS spanperf.samples")
    q("INSERT INTO spanperf.one SELECT * FROM spanperf.samples WHERE token = (SELECT any(token) FROM spanperf.windows)")
    now = int(time.time())
    for h in ("benchA", "benchB"):  # 18.16: one ARRAY JOIN a query
        q("INSERT INTO spanperf.samples SELECT toDate(%d - n * 10), toDateTime(%d - n * 10), concat('hour-', "
          "toString(n)), '%s', container_id, pod_uid, cgroup, pid, tid, comm, off_cpu, stack_id, count, period "
          "FROM spanperf.one ARRAY JOIN range(360) AS n" % (now, now, h))
    nrows = int(q("SELECT count() FROM spanperf.samples WHERE host IN ('benchA', 'benchB')").decode())
    fleet = [timed([SPANPERF, "report", "--clickhouse", srv.url, "--since", "1h", "--host", h, "--folded"])[0]
             for _ in range(rounds()) for h in ("benchA", "benchB")]
    path = os.path.join(TMP, "agent-window.data")
    timed([SPANPERF, "record", "-F", "19", "-g", "-N", "-q", "-d", "10", "-o", path])
    files = [timed([SPANPERF, "report", "-i", path, "--folded"])[0] for _ in range(rounds())]
    log("agent report: an hour of two hosts (%d rows) %.2f s from ClickHouse; a file of 10 s %.3f s" % (
        nrows, 2 * median(fleet), median(files)))
    return {"rows": nrows, "fleet_s": 2 * median(fleet), "file_s": median(files), "files_hour_s": 720 * median(files)}


def from_json(v):
    v["hz"] = {int(k): x for k, x in v["hz"].items()}
    return v


def markdown(res):
    v = res["agent"]
    lines = ["## agent: its cost at the defaults with -g (ehframe, 10 s windows), beside record (%d s after start-up)"
             % v["steady_s"], "",
             "Issue 37's targets: at most %.1f%% of one CPU and %d MiB RSS at -F 19 (x: the figure over its target). "
             "RSS is anonymous + file pages; the BPF maps' kernel memory (memlock) is not in it and is given apart. "
             "The ratios are the agent's figure over record's: what the agent adds to the recorder it runs on."
             % (TARGET_CPU_PCT, TARGET_RSS_MIB), "",
             "| | agent CPU | agent RSS (anon + file) | agent BPF maps | record CPU | record RSS (anon + file) "
             "| record BPF maps | CPU agent / record | RSS agent / record | rows / host-hour "
             "| bytes / host-hour (gzipped) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]

    def mib(x, who):
        if who + "_anon_mib" not in x:
            return "%.0f MiB" % x[who + "_rss_mib"]
        return "%.0f MiB (%.0f + %.0f)" % (x[who + "_rss_mib"], x[who + "_anon_mib"], x[who + "_file_mib"])

    def ratio(a, b):
        """The agent's figure over record's in the same round: what the agent adds to the recorder it runs."""
        return "%.2fx" % (a / b) if b else "-"

    for hz, x in sorted(v["hz"].items()):
        target = hz == 19
        lines.append("| -F %d | %.2f%%%s | %s%s | %s | %.2f%% | %s | %s | %s | %s | %.0f | %.1f MB |" % (
            hz, x["agent_cpu_pct"], " (%.1fx)" % (x["agent_cpu_pct"] / TARGET_CPU_PCT) if target else "",
            mib(x, "agent"), " (%.2fx)" % (x["agent_rss_mib"] / TARGET_RSS_MIB) if target else "",
            "%.0f MiB" % x["agent_bpf_mib"] if "agent_bpf_mib" in x else "-",
            x["record_cpu_pct"], mib(x, "record"),
            "%.0f MiB" % x["record_bpf_mib"] if "record_bpf_mib" in x else "-",
            ratio(x["agent_cpu_pct"], x["record_cpu_pct"]), ratio(x["agent_rss_mib"], x["record_rss_mib"]),
            x["rows_per_hour"], x["bytes_per_hour"] / 1e6))
    r = v.get("report")
    if r:
        lines += ["", "One hour of two hosts (%d sample rows): report --clickhouse --folded %.2f s; "
                  "report --folded of the hour's 720 files of 10 s: %.1f s (%.3f s each)" % (
                      r["rows"], r["fleet_s"], r["files_hour_s"], r["file_s"])]
    return lines + [""]
