# SPDX-License-Identifier: GPL-2.0
"""spanperf agent and report --clickhouse on the real engine: Debian's ClickHouse, two servers of
the tests' own on loopback (ch_cluster.py), two shards of one cluster."""
import json
import os
import re
import signal
import subprocess
import time

import ch_cluster
import pprof_decode
import fleet_common
from fleet_common import LoopbackServer, cluster, need_clickhouse, tsv, wait_windows
from harness import Started, SPANPERF, WORKLOAD, cpu_ns, need_bpf, reap, spanperf, test, tmpdir

def in_spin(folded):
    """The spinner's samples: every stack of its process (its main thread only waits), whatever
    the leaf (spin_0, thread_cpu_ns inlined into it or called, the vDSO, the kernel)."""
    return fleet_common.folded_total(folded)


HZ = 499


def wait_until(pred, what, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        try:
            if pred():
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
    raise AssertionError(what)


def agent(url, *args):
    return subprocess.Popen([SPANPERF, "agent", "--clickhouse", url] + list(args), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace")


def spooled(d):
    return [f for f in os.listdir(d) if f.endswith(".win")] if os.path.isdir(d) else []


@test
def test_fleet_two_hosts_two_shards_match_cpu_time():
    """Two agents, two host labels, each through its own shard's node: each host's samples of a
    spinning thread, read through the Distributed tables of one node, are its CPU time x Hz."""
    need_clickhouse()
    c = cluster()
    a = b = wl = rec = None
    try:
        s0, s1 = c.servers
        # 499 Hz: 10% of 2.5 s of CPU is then ~3.5 sigma of a shared CPU's sampling noise (at 99 Hz
        # it was 1.6: a loaded host gave 274 samples against 248 due).
        a = agent(s0.url, "--cluster", "fleet", "--host-label", "hostA", "--window", "2", "-F", str(HZ))
        b = agent(s1.url, "--cluster", "fleet", "--host-label", "hostB", "--window", "2", "-F", str(HZ))
        for host in ("hostA", "hostB"):  # both agents sampling
            wait_until(lambda: int(tsv(s0, "SELECT count() FROM spanperf.windows WHERE host = '%s'" % host)) >= 1,
                       "no window of %s" % host)
        # a local record of the same window, beside the agents; the spinner starts once its events
        # are on (its -v line), however long a loaded host takes to start it
        path = os.path.join(tmpdir(), "local.data")
        rec = subprocess.Popen([SPANPERF, "record", "-v", "-g", "-F", str(HZ), "-o", path], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, errors="replace")
        started = Started(rec)
        wl = subprocess.Popen([WORKLOAD, "spin", "2500"], stdout=subprocess.DEVNULL)
        wl_pid = wl.pid
        # the truth: the workload's own CPU time, from the kernel's accounts at its exit
        _, status, ru = os.wait4(wl_pid, 0)
        wl.returncode = status
        spun = (ru.ru_utime + ru.ru_stime) * 1e9
        # the agents' windows that hold its end are complete, then INT sends what is left
        time.sleep(2.5)
        rec.send_signal(signal.SIGINT)
        assert started.wait() == 0, started.text()
        for p in (a, b):
            p.send_signal(signal.SIGINT)
        for p in (a, b):
            t0 = time.time()
            out, err = p.communicate(timeout=60)
            assert p.returncode == 0, "agent exited %d: %s" % (p.returncode, err)
            assert time.time() - t0 < 3, "the agent took %.1fs to stop" % (time.time() - t0)
        due = spun * HZ / 1e9
        r = spanperf("report", "-i", path, "--pids", str(wl_pid), "--folded")
        assert r.returncode == 0, r.stderr
        local = in_spin(r.stdout)
        m = re.search(r"the rings delivered \d+ and lost (\d+)", started.text())
        local_lost = int(m.group(1)) if m else 0
        for host in ("hostA", "hostB"):
            r = spanperf("report", "--clickhouse", s0.url, "--since", "10m", "--host", host, "--pids", str(wl_pid),
                         "--folded")
            assert r.returncode == 0, r.stderr
            got = in_spin(r.stdout)
            assert abs(got - due) <= 0.1 * due, "%s: %d samples of the spinner, %.0f due:\n%s" % (host, got, due, r.stdout)
            # and a local recording of the same window: the same count within what each is allowed
            # from the truth (no window lost or doubled: a window is ~1,000 samples), and the samples
            # either side said it lost (the whole host's, an upper bound on the spinner's).  Not 3
            # sigma of Poisson noise: beside a hog on its CPU the spinner runs in the scheduler's
            # slices, and a recorder's timer may keep its phase to them for the whole run; two
            # busy-host runs had the counts 132 apart (either way round), with 106 allowed then and
            # steal of ~30 ms, 15 samples, in such a window
            tol = max(3 * (due ** 0.5), 0.1 * due)
            lost = int(tsv(s0, "SELECT sum(lost) FROM spanperf.windows WHERE host = '%s'" % host) or 0)
            assert abs(got - local) <= tol + lost + local_lost, "%s: %d samples of the spinner, the local record %d (lost: %d by the agent, %d by the record)" % (
                host, got, local, lost, local_lost)
        # each host's rows on one shard, the two hosts on the two shards (sharded by host)
        hosts0 = tsv(s0, "SELECT DISTINCT host FROM spanperf.samples_local ORDER BY host")
        hosts1 = tsv(s1, "SELECT DISTINCT host FROM spanperf.samples_local ORDER BY host")
        assert sorted((hosts0 + "\n" + hosts1).split()) == ["hostA", "hostB"], (hosts0, hosts1)
        # every output reads the fleet: folded stacks name the spinner's callers
        r = spanperf("report", "--clickhouse", s1.url, "--since", "10m", "--host", "hostB", "--pids", str(wl_pid),
                     "--folded")
        assert r.returncode == 0 and "caller_0;spin_0" in r.stdout, r.stdout[-2000:] + r.stderr
        # the pprof of the same: as many samples as the folded stacks, build ids in its mappings
        folded_total = in_spin(r.stdout)
        out = os.path.join(tmpdir(), "fleet.pb.gz")
        r = spanperf("report", "--clickhouse", s1.url, "--since", "10m", "--host", "hostB", "--pids", str(wl_pid),
                     "--pprof", out)
        assert r.returncode == 0, r.stderr
        prof = pprof_decode.decode(out)
        assert sum(x["value"][0] for x in prof["sample"]) == folded_total
        # the agent's own (alive at each window's end, unlike the spinner at its last): its files' build ids
        r = spanperf("report", "--clickhouse", s1.url, "--since", "10m", "--pids", str(b.pid), "--pprof", out)
        assert r.returncode == 0, r.stderr
        prof = pprof_decode.decode(out)
        assert any(m.get(6) and prof["strings"][m[6]] for m in prof["mapping"]), "no build id in any mapping"
        # and the table, with its chains
        r = spanperf("report", "--clickhouse", s1.url, "--since", "10m", "--pids", str(wl_pid), "-g", "--sort", "sym")
        assert r.returncode == 0 and "caller_0" in r.stdout, r.stdout[-2000:] + r.stderr
    finally:
        for p in (a, b, wl, rec):
            if p:
                reap(p)
        c.stop()


@test
def test_fleet_server_down_at_start_spooled_then_sent_once():
    """The server down when the agent starts: windows go to the spool, are sent oldest first once
    it answers, and none twice; the agent samples all along."""
    need_clickhouse()
    c = ch_cluster.Cluster(os.path.join(tmpdir(), "ch"), n=1)
    spool = os.path.join(tmpdir(), "spool")
    s = c.servers[0]
    a = None

    def alive():
        assert a.poll() is None, "the agent exited %d: %s" % (a.returncode, a.stderr.read()[-1500:])
        return True
    try:
        # No -d: each step waits for the agent's own windows, however long a loaded host (and
        # make check's ASan agent) takes to start it and to cut them; INT ends it.  (-d 10 and 8 s
        # for two windows to be spooled: make check beside a load of 180 had spooled one.)
        a = agent(s.url, "--window", "1", "--spool", spool)
        wait_until(lambda: alive() and len(spooled(spool)) >= 2, "never two windows spooled: %s" % spooled(spool),
                   timeout=120)
        first = set(spooled(spool))
        s.start()
        # the spool sent at the next window, then windows of its own after it
        wait_until(lambda: alive() and not first & set(spooled(spool)) and
                   int(tsv(s, "SELECT count() FROM spanperf.windows")) >= len(first) + 3,
                   "the spool %s not sent: %s" % (sorted(first), spooled(spool)), timeout=120)
        a.send_signal(signal.SIGINT)
        out, err = a.communicate(timeout=60)
        assert a.returncode == 0, err
        n, uniq = tsv(s, "SELECT count(), uniqExact(token) FROM spanperf.windows").split()
        assert int(n) == int(uniq) >= len(first) + 3, (n, uniq, err)
        # At INT the last window gets one short try (700 ms), else the spool keeps it for the next
        # run (a loaded server may not answer in time): only windows after the ones sent may be left.
        left = spooled(spool)
        assert all(f > max(first) for f in left), (sorted(first), left)
        # no sample row twice: each identity once
        dup = tsv(s, "SELECT count() FROM (SELECT count() c FROM spanperf.samples GROUP BY token, host, off_cpu, pid, "
                  "tid, comm, stack_id HAVING c > 1)")
        assert dup == "0", dup
    finally:
        if a:
            reap(a)
        c.stop()


HOSTILE = b"q'\"\\\n\xff\xfe;x y"


@test
def test_fleet_hostile_comm_stored_and_read_back_exactly():
    """A comm with quotes, a backslash, a newline and bytes that are not UTF-8: stored as its bytes,
    found again by report --clickhouse --comms, and no query broken by it."""
    need_clickhouse()
    c = ch_cluster.Cluster(os.path.join(tmpdir(), "ch"), n=1).start()
    s = c.servers[0]
    a = wl = None
    try:
        # No -d: the agent runs until the comm's samples are stored, however long a loaded host (and
        # make check's ASan agent) takes; the spinner runs 0.3 s of its own CPU (about 30 samples),
        # not 2.5 s of wall time, which a load of 25 left unsampled past a -d 6 agent's end.
        a = agent(s.url, "--window", "1", "-F", "99")
        wait_windows(s, 1, timeout=120)
        wl = subprocess.Popen(["python3", "-c",
                               "import os,sys,time\nopen('/proc/self/comm','wb').write(sys.stdin.buffer.read())\n"
                               "t=time.thread_time()\nwhile time.thread_time()-t<0.3: pass\n"], stdin=subprocess.PIPE)
        wl.communicate(HOSTILE, timeout=120)
        query = "SELECT DISTINCT hex(comm) FROM spanperf.samples WHERE comm = unhex('%s')" % HOSTILE.hex()
        wait_until(lambda: a.poll() is None and tsv(s, query) == HOSTILE.hex().upper(),
                   "the comm never stored (agent %s)" % a.poll(), timeout=120)
        a.send_signal(signal.SIGINT)
        out, err = a.communicate(timeout=60)
        assert a.returncode == 0, err
        got = tsv(s, query)
        assert got == HOSTILE.hex().upper(), (got, tsv(s, "SELECT DISTINCT hex(comm) FROM spanperf.samples"), err)
        r = subprocess.run([SPANPERF, "report", "--clickhouse", s.url, "--since", "10m", "--comms", HOSTILE, "--sort",
                            "comm"], capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr
        # one row, the comm's (its percentage is of every sample, as a file's with --comms)
        rows = [l for l in r.stdout.splitlines() if l.strip() and not l.startswith(b"#")]
        assert len(rows) == 1 and rows[0].endswith(b";x y"), r.stdout
    finally:
        for p in (a, wl):
            if p:
                reap(p)
        c.stop()


class FaultServer(LoopbackServer):
    """A loopback HTTP server of the test's own that fails as told: "500" answers an error,
    "close" closes mid-body, "slow" answers after 30 s, "auth" refuses the credentials."""

    def __init__(self, mode):
        self.mode = mode
        super().__init__("http")

    def handle(self, conn):
        try:
            conn.settimeout(5)
            conn.recv(65536)
            if self.mode == "500":
                body = b"Code: 241, e.displayText() = DB::Exception: Memory limit exceeded\n"
                conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            elif self.mode == "close":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npartial")
            elif self.mode == "slow":
                end = time.time() + 30
                while time.time() < end and not self.stop:
                    time.sleep(0.1)
            elif self.mode == "auth":
                body = b"Code: 193, e.displayText() = DB::Exception: Wrong password for user spanperf\n"
                conn.sendall(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        except OSError:
            pass
        finally:
            conn.close()


def metrics(port):
    import urllib.request
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5).read().decode()
    return {l.split()[0]: float(l.split()[1]) for l in text.splitlines() if l and not l.startswith("#")}


def check_fault(mode):
    need_bpf()
    srv = FaultServer(mode)
    spool = os.path.join(tmpdir(), "spool")
    port = ch_cluster.free_port()
    a = None
    try:
        env = dict(os.environ, CLICKHOUSE_USER="spanperf", CLICKHOUSE_PASSWORD="wrong")
        a = subprocess.Popen([SPANPERF, "agent", "--clickhouse", srv.url, "--window", "1", "--spool", spool,
                              "--serve", "127.0.0.1:%d" % port], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, errors="replace", env=env)
        end = time.time() + 40
        m = {}
        while time.time() < end:
            time.sleep(0.5)
            try:
                m = metrics(port)
            except OSError:
                continue
            if m["spanperf_agent_windows_spooled_total"] >= 4:
                break
        # the agent samples all along: window after window goes to the spool
        assert m.get("spanperf_agent_windows_spooled_total", 0) >= 4, m
        assert m["spanperf_agent_windows_sent_total"] == 0, m
        if mode != "slow":
            assert m["spanperf_agent_server_errors_total"] >= 1, m
        assert len(spooled(spool)) == m["spanperf_agent_spool_windows"] >= 1, (spooled(spool), m)
        t0 = time.time()
        a.send_signal(signal.SIGTERM)
        out, err = a.communicate(timeout=30)
        took = time.time() - t0
        assert a.returncode == 0, err
        assert took < 2, "TERM took %.1fs to end the agent (%s)" % (took, mode)
        assert srv.hits >= 1, "the server was never asked"
    finally:
        if a:
            reap(a)
        srv.close()


@test
def test_fleet_server_answers_500_spooled():
    check_fault("500")


@test
def test_fleet_server_closes_mid_body_spooled():
    check_fault("close")


@test
def test_fleet_server_slow_spooled_and_term_is_prompt():
    check_fault("slow")


@test
def test_fleet_server_refuses_credentials_spooled():
    check_fault("auth")


@test
def test_fleet_spool_at_its_bound_drops_oldest_never_past_it():
    """No server: the spool fills to --spool-max, then the oldest windows go, counted, and the
    folder is never past the bound; the windows left are the newest."""
    need_bpf()
    spool = os.path.join(tmpdir(), "spool")
    port, dead = ch_cluster.free_port(), ch_cluster.free_port()
    # Windows big enough to fill 1 MiB within the minute whatever else the host runs: threads of
    # our own made and ended all the time, each a row of its own (an idle host's windows were
    # 4 KB: 59 of them never reached the bound).
    load = subprocess.Popen([WORKLOAD, "churn", "70"], stdout=subprocess.DEVNULL)
    a = subprocess.Popen([SPANPERF, "agent", "--clickhouse", "http://127.0.0.1:%d/" % dead, "--window", "1",
                          "-F", "999", "--spool", spool, "--spool-max", "1", "--serve", "127.0.0.1:%d" % port],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    try:
        end, m, biggest, seen = time.time() + 60, {}, 0, set()
        while time.time() < end:
            time.sleep(0.1)
            files = spooled(spool)
            seen |= set(files)
            size = sum(os.path.getsize(os.path.join(spool, f)) for f in files if os.path.exists(os.path.join(spool, f)))
            biggest = max(biggest, size)
            try:
                m = metrics(port)
            except OSError:
                continue
            if m["spanperf_agent_windows_dropped_total"] >= 2:
                break
        assert m.get("spanperf_agent_windows_dropped_total", 0) >= 2, m
        assert m["spanperf_agent_server_errors_total"] >= 1, m
        assert biggest <= 1 << 20, "the spool held %d bytes, past its 1 MiB" % biggest
        left = sorted(spooled(spool))
        assert left and left[0] != min(seen), (left, sorted(seen))
        assert m["spanperf_agent_spool_bytes"] <= 1 << 20, m
        a.send_signal(signal.SIGTERM)
        a.communicate(timeout=30)
        assert a.returncode == 0
    finally:
        reap(a)
        reap(load)


@test
def test_fleet_shard_killed_for_two_windows_nothing_lost_nothing_doubled():
    """The node the agent talks to killed with SIGKILL for two windows and restarted: every window
    of the run is there once (their numbers are 0..N-1), and no row twice."""
    need_clickhouse()
    c = cluster()
    s0, s1 = c.servers
    a = None
    try:
        # each shard's local tables come from an agent that talks to it (18.16: no DDL on others without ZooKeeper)
        p = spanperf("agent", "--clickhouse", s1.url, "--cluster", "fleet", "--host-label", "other", "-d", "1")
        assert p.returncode == 0, p.stderr
        a = agent(s0.url, "--cluster", "fleet", "--host-label", "hostK", "--window", "1", "--spool",
                  os.path.join(tmpdir(), "spool"))
        wait_windows(s0, 2)
        s0.kill()
        time.sleep(2.5)
        s0.start()
        # Stopped once the windows spooled while the node was down have been sent again, not after a
        # fixed 3 s: at load 22 the agent's next try came later, and the windows still in its spool
        # at the stop (kept there for its next start, as documented) read here as lost.
        end = time.time() + 60
        while time.time() < end:
            try:
                toks = tsv(s0, "SELECT token FROM spanperf.windows WHERE host = 'hostK'").split()
                if len({t.split("-")[1] for t in toks}) >= 7:
                    break
            except OSError:
                pass
            time.sleep(0.3)
        a.send_signal(signal.SIGTERM)
        out, err = a.communicate(timeout=30)
        assert a.returncode == 0, err
        # The Distributed tables' queues flush to the other shard on their own time, windows and
        # samples apart: wait until every window is there once AND the samples rows sum to what the
        # windows say (CI read the samples while a shard's queue still held 34 of 267).
        q_samples = ("SELECT sum(c) FROM (SELECT any(count) c FROM spanperf.samples WHERE host = 'hostK' "
                     "AND off_cpu = 0 GROUP BY token, host, off_cpu, pid, tid, comm, stack_id)")
        q_windows = ("SELECT sum(samples) FROM (SELECT token, any(samples) samples FROM spanperf.windows "
                     "WHERE host = 'hostK' GROUP BY token)")
        end = time.time() + 60
        rows, summed, n_samples = [], -1, -2
        while time.time() < end:
            rows = tsv(s0, "SELECT token FROM spanperf.windows WHERE host = 'hostK' ORDER BY token").split()
            nums = sorted(int(t.split("-")[1]) for t in rows)
            if nums and nums == list(range(len(nums))) and len(nums) >= 7:
                n_samples = int(tsv(s0, q_windows) or 0)
                summed = int(tsv(s0, q_samples) or 0)
                if summed == n_samples:
                    break
            time.sleep(0.5)
        nums = sorted(int(t.split("-")[1]) for t in rows)
        assert nums == list(range(len(nums))) and len(nums) >= 7, (nums, err)
        dup = tsv(s0, "SELECT count() FROM (SELECT count() c FROM spanperf.samples GROUP BY token, host, off_cpu, "
                  "pid, tid, comm, stack_id HAVING c > 1)")
        assert dup == "0" and summed == n_samples, (dup, summed, n_samples)
    finally:
        if a:
            reap(a)
        c.stop()


@test
def test_fleet_spans_equal_a_local_recordings():
    """The same sleeps seen by the agent and by a local record at once: the fleet's --spans rows of
    the sleeping thread equal the local report's (count, durations, splits)."""
    need_clickhouse()
    c = ch_cluster.Cluster(os.path.join(tmpdir(), "ch"), n=1).start()
    s = c.servers[0]
    path = os.path.join(tmpdir(), "local.data")
    a = r = None
    try:
        a = agent(s.url, "--window", "1", "--span", "syscall:clock_nanosleep")
        r = subprocess.Popen([SPANPERF, "record", "-q", "-o", path, "--span", "syscall:clock_nanosleep"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_windows(s, 2)
        time.sleep(1)
        wl = subprocess.run([WORKLOAD, "sleeps", "40", "3000"], capture_output=True, text=True, errors="replace", timeout=60)
        tid = json.loads(wl.stdout.splitlines()[0])["tid"]
        time.sleep(2.5)
        for p in (a, r):
            p.send_signal(signal.SIGTERM)
        for p in (a, r):
            p.communicate(timeout=30)
            assert p.returncode == 0
        local = spanperf("report", "-i", path, "--spans", "--format", "json", "--tids", str(tid))
        fleet = spanperf("report", "--clickhouse", s.url, "--since", "10m", "--spans", "--format", "json",
                         "--tids", str(tid), "--span-name", "clock_nanosleep")
        assert local.returncode == 0 and fleet.returncode == 0, local.stderr + fleet.stderr
        # Two recorders, each with its own probes: the same spans in the same order, each one's
        # stamps its own (a few microseconds apart), so durations and splits agree to that.
        mine = sorted(map(json.loads, local.stdout.splitlines()), key=lambda j: j["start_ns"])
        theirs = sorted(map(json.loads, fleet.stdout.splitlines()), key=lambda j: j["start_ns"])
        assert len(mine) == len(theirs) == 40, (len(mine), len(theirs))
        for m, t in zip(mine, theirs):
            assert m["name"] == t["name"] and m["split"] == t["split"], (m, t)
            tol = max(0.02 * m["duration_ns"], 100000)
            for k in ("duration_ns", "on_cpu_ns", "runq_ns", "sleep_ns", "blocked_ns"):
                assert abs(m[k] - t[k]) <= tol, (k, m, t)
        total = sum(m["duration_ns"] for m in mine)
        for k in ("duration_ns", "sleep_ns", "runq_ns", "on_cpu_ns"):
            assert abs(sum(m[k] for m in mine) - sum(t[k] for t in theirs)) <= 0.01 * total, k
    finally:
        for p in (a, r):
            if p:
                reap(p)
        c.stop()


@test
def test_fleet_hostile_filters_never_break_a_query():
    """--host, --comms, --span-name, --dsos and --symbols of random bytes (quotes, backslashes, newlines, not UTF-8)
    are compared with, never pasted: each query runs, and finds nothing."""
    need_clickhouse()
    import random
    c = ch_cluster.Cluster(os.path.join(tmpdir(), "ch"), n=1).start()
    s = c.servers[0]
    try:
        a = agent(s.url, "--window", "1", "-d", "3")
        a.communicate(timeout=60)
        rng = random.Random(37)
        for i in range(60):
            junk = bytes(rng.choice(b"'\"\\\n\r\t;`${}()%_*x\x00\xff\xfe ") for _ in range(rng.randint(1, 24)))
            junk = junk.replace(b"\x00", b"") or b"'"
            for flag, extra in (("--host", []), ("--comms", []), ("--span-name", ["--spans"]), ("--dsos", []),
                                ("--symbols", [])):
                arg = junk.replace(b",", b"") if flag in ("--comms", "--dsos", "--symbols") else junk
                p = subprocess.run([SPANPERF, "report", "--clickhouse", s.url, "--since", "10m", flag, arg] + extra,
                                   capture_output=True, timeout=60)
                assert p.returncode == 1 and b"holds no" in p.stderr, (flag, arg, p.stderr)
    finally:
        c.stop()


@test
def test_fleet_credentials_from_env_or_file_never_argv():
    """The user and password from CLICKHOUSE_USER and a password file (or CLICKHOUSE_PASSWORD),
    taken by the real server; a wrong one refused; a URL that carries one refused before anything."""
    p = spanperf("agent", "--clickhouse", "http://spanperf:secret@127.0.0.1:1/")
    assert p.returncode == 1 and "never on the command line" in p.stderr and "secret" not in p.stderr, p.stderr
    p = spanperf("report", "--clickhouse", "http://u:pw@127.0.0.1:1/", "--since", "1h")
    assert p.returncode == 1 and "never on the command line" in p.stderr, p.stderr
    need_clickhouse()
    c = ch_cluster.Cluster(os.path.join(tmpdir(), "ch"), n=1).start()
    s = c.servers[0]
    pwfile = os.path.join(tmpdir(), "pw")
    with open(pwfile, "w") as f:
        f.write(ch_cluster.PASSWORD + "\n")
    env = dict(os.environ, CLICKHOUSE_USER=ch_cluster.USER)
    env.pop("CLICKHOUSE_PASSWORD", None)
    try:
        p = subprocess.run([SPANPERF, "agent", "--clickhouse", s.url, "--clickhouse-password-file", pwfile,
                            "--window", "1", "-d", "3"], capture_output=True, text=True, errors="replace", env=env, timeout=60)
        assert p.returncode == 0, p.stderr
        # A window on the server is the credentials taken; how many a 3 s run ships is not this
        # test's truth (a loaded host's setup took most of it once, and the last window has only
        # a short try before the spool keeps it).
        n = int(tsv(s, "SELECT count() FROM spanperf.windows"))
        assert n >= 1, "no window on the server: %s" % p.stderr[-2000:]
        env["CLICKHOUSE_PASSWORD"] = ch_cluster.PASSWORD
        p = subprocess.run([SPANPERF, "report", "--clickhouse", s.url, "--since", "10m", "--sort", "comm"],
                           capture_output=True, text=True, errors="replace", env=env, timeout=60)
        assert p.returncode == 0 and "# Samples:" in p.stdout, p.stderr
        env["CLICKHOUSE_PASSWORD"] = "wrong"
        p = subprocess.run([SPANPERF, "report", "--clickhouse", s.url, "--since", "10m"], capture_output=True,
                           text=True, errors="replace", env=env, timeout=60)
        assert p.returncode == 1 and "answered" in p.stderr and "wrong" not in p.stderr, p.stderr
    finally:
        c.stop()
