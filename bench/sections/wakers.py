# SPDX-License-Identifier: GPL-2.0
"""Who woke each block (record --off-cpu): BPF ns per wakeup (bpf_stats of the sched_waking
programs), spanperf against bcc offwaketime's design in bpftrace on a pipe ping-pong, and the
records per second spanperf writes there."""
import json
import os
import re
import subprocess

from harness import DEVNULL, SPANPERF, TMP, WORKLOAD, log, median, offcpu_bt, prog_costs, rounds, spawn, stop_profiler, wait_ready

BPF_STATS = True

# bcc offwaketime's design in bpftrace: the waker's comm and stacks at sched_waking,
# keyed by the wakee; the sleeper's start and stacks at its switch-out; at its
# switch-in, the time summed per (blocked stacks, waker, waker stacks).
OFFWAKE_BT = offcpu_bt(("@wc[args->next_pid]", "@wk[args->next_pid]", "@wu[args->next_pid]"),
                       before="""tracepoint:sched:sched_waking
{
	@wc[args->pid] = comm;
	@wk[args->pid] = kstack;
	@wu[args->pid] = ustack;
}
""")


def run(res):
    rows = {"spanperf": [], "bpftrace": []}
    rec = []
    pairs = []
    script = os.path.join(TMP, "offwake.bt")
    open(script, "w").write(OFFWAKE_BT)
    for r in range(rounds()):
        got = {}
        for tool in rows:
            load = spawn([WORKLOAD, "pingpong", "9"], stdout=subprocess.PIPE, text=True)
            out = os.path.join(TMP, "wake.data")
            err = os.path.join(TMP, "wake.%d.stderr" % r)
            if tool == "bpftrace":
                p = spawn(["bpftrace", script], stdout=DEVNULL, stderr=DEVNULL)
                names = ["sched_waking", "sched_switch"]
            else:
                p = spawn([SPANPERF, "record", "-v", "-a", "--call-graph", "fp", "-F", "1", "--off-cpu", "--off-cpu-thresh", "0",
                           "-d", "6", "-o", out], stdout=DEVNULL, stderr=open(err, "w"))
                names = ["waking_btf", "offcpu_btf"]
            p.tool = tool
            wait_ready(tool, 4.0 if tool == "bpftrace" else 1.0)
            c = prog_costs(names, 3)
            if tool == "spanperf":
                p.wait()
                text = open(err).read()
                blocks = re.search(r"off-CPU: (\d+) blocks written one by one", text)
                wakers = re.search(r"wakers: (\d+) blocks named theirs", text)
                lost = re.search(r"(\d+) off-CPU blocks LOST", text)
                if blocks and wakers:
                    rec.append({"records_per_s": (int(blocks.group(1)) + int(wakers.group(1))) / 6.0,
                                "lost": int(lost.group(1)) if lost else 0})
            else:
                stop_profiler(p)
            rt = json.loads(load.communicate()[0].splitlines()[-1])["per_s"]
            if all(c):
                got[tool] = {"waking_ns": c[0][0], "wakings_per_s": c[0][1], "switch_ns": c[1][0],
                             "round_trips_per_s": rt}
                rows[tool].append(got[tool])
            log("wakers round %d %s: %s %s" % (r, tool, got.get(tool), rec[-1:] if tool == "spanperf" else ""))
        # A ratio only from a round where both were measured.
        if len(got) == 2:
            pairs.append(got["spanperf"]["waking_ns"] / got["bpftrace"]["waking_ns"])
    res["wakers"] = {
        "waking_ns": {t: median([x["waking_ns"] for x in v]) for t, v in rows.items()},
        "switch_ns": {t: median([x["switch_ns"] for x in v]) for t, v in rows.items()},
        "wakings_per_s": median([x["wakings_per_s"] for x in rows["spanperf"]]),
        "round_trips_per_s": median([x["round_trips_per_s"] for x in rows["spanperf"]]),
        "records_per_s": median([x["records_per_s"] for x in rec]) if rec else None,
        "lost": max([x["lost"] for x in rec]) if rec else None,
        "ratio": median(pairs) if pairs else None, "raw": rows, "raw_records": rec}


def markdown(res):
    v = res["wakers"]
    return ["## record --off-cpu: who woke each block, BPF cost per wakeup (bpf_stats, `-a -g`, a pipe "
            "ping-pong at %.0f round trips/s, %.0f wakings/s)" % (v["round_trips_per_s"], v["wakings_per_s"]),
            "", "| spanperf sched_waking | offwaketime's design (bpftrace) | ratio | target |",
            "|---|---|---|---|",
            "| %.0f ns | %.0f ns | %s | <= 1 |" % (v["waking_ns"]["spanperf"], v["waking_ns"]["bpftrace"],
                                                  "%.2f" % v["ratio"] if v["ratio"] else "?"), "",
            "Switch programs in the same runs: spanperf %.0f ns, bpftrace %.0f ns per switch.  spanperf wrote "
            "%s records/s (an offcpu-time and a spanperf:waker sample per block), %s blocks lost." % (
                v["switch_ns"]["spanperf"], v["switch_ns"]["bpftrace"],
                "%.0f" % v["records_per_s"] if v["records_per_s"] else "?", v["lost"]), ""]
