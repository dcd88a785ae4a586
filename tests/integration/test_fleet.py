# SPDX-License-Identifier: GPL-2.0
"""spanperf agent and report --clickhouse on the real engine: Debian's ClickHouse, two servers of
the tests' own on loopback (ch_cluster.py), two shards of one cluster."""
import os
import re
import signal
import socket
import subprocess
import time

import ch_cluster
from harness import SPANPERF, WORKLOAD, Skip, cpu_ns, need_bpf, reap, spanperf, test, tmpdir

ROW = re.compile(r"^\s+([\d.]+)%\s+(\d+)\s+(.+?)\s+\[(.)\]\s+(\S+)\s*$")


def need_clickhouse():
    need_bpf()
    if not ch_cluster.available():
        raise Skip("needs clickhouse-server (tools/deps.sh test)")


def cluster():
    return ch_cluster.Cluster(os.path.join(tmpdir(), "ch")).start()


def agent(url, *args):
    return subprocess.Popen([SPANPERF, "agent", "--clickhouse", url] + list(args), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace")


def sym_samples(text, sym):
    return sum(int(m.group(2)) for m in map(ROW.match, text.splitlines()) if m and m.group(5) == sym)


def tsv(server, sql):
    return server.query(sql).decode("utf-8", "replace").strip()


def spooled(d):
    return [f for f in os.listdir(d) if f.endswith(".win")] if os.path.isdir(d) else []


def wait_windows(server, n, timeout=30):
    """Until the server holds n windows: the agent is sampling (its set-up takes a second or two)."""
    end = time.time() + timeout
    while time.time() < end:
        try:
            if int(tsv(server, "SELECT count() FROM spanperf.windows")) >= n:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError("no %d windows in %ds" % (n, timeout))


@test
def test_fleet_two_hosts_two_shards_match_cpu_time():
    """Two agents, two host labels, each through its own shard's node: each host's samples of a
    spinning thread, read through the Distributed tables of one node, are its CPU time x Hz."""
    need_clickhouse()
    c = cluster()
    a = b = wl = None
    try:
        s0, s1 = c.servers
        a = agent(s0.url, "--cluster", "fleet", "--host-label", "hostA", "--window", "2", "-F", "99")
        b = agent(s1.url, "--cluster", "fleet", "--host-label", "hostB", "--window", "2", "-F", "99")
        wait_windows(s0, 2)
        wl = subprocess.Popen([WORKLOAD, "spin", "2500"], stdout=subprocess.DEVNULL)
        wl_pid = wl.pid
        # the truth: the workload's own CPU time, from the kernel's accounts at its exit
        _, status, ru = os.wait4(wl_pid, 0)
        wl.returncode = status
        spun = (ru.ru_utime + ru.ru_stime) * 1e9
        # the agents' windows that hold its end are complete, then INT sends what is left
        time.sleep(2.5)
        for p in (a, b):
            p.send_signal(signal.SIGINT)
        for p in (a, b):
            t0 = time.time()
            out, err = p.communicate(timeout=60)
            assert p.returncode == 0, "agent exited %d: %s" % (p.returncode, err)
            assert time.time() - t0 < 3, "the agent took %.1fs to stop" % (time.time() - t0)
        due = spun * 99 / 1e9
        for host in ("hostA", "hostB"):
            r = spanperf("report", "--clickhouse", s0.url, "--since", "10m", "--host", host, "--pids", str(wl_pid),
                         "--sort", "comm,sym")
            assert r.returncode == 0, r.stderr
            got = sym_samples(r.stdout, "spin_0")
            assert abs(got - due) <= 0.1 * due, "%s: %d samples of spin_0, %.0f due:\n%s" % (host, got, due, r.stdout)
        # each host's rows on one shard, the two hosts on the two shards (sharded by host)
        hosts0 = tsv(s0, "SELECT DISTINCT host FROM spanperf.samples_local ORDER BY host")
        hosts1 = tsv(s1, "SELECT DISTINCT host FROM spanperf.samples_local ORDER BY host")
        assert sorted((hosts0 + "\n" + hosts1).split()) == ["hostA", "hostB"], (hosts0, hosts1)
        # every output reads the fleet: folded stacks name the spinner's callers
        r = spanperf("report", "--clickhouse", s1.url, "--since", "10m", "--host", "hostB", "--pids", str(wl_pid),
                     "--folded")
        assert r.returncode == 0 and "caller_0;spin_0" in r.stdout, r.stdout[-2000:] + r.stderr
    finally:
        for p in (a, b, wl):
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
    try:
        a = agent(s.url, "--window", "1", "-d", "10", "--spool", spool)
        end = time.time() + 8
        while time.time() < end and len(spooled(spool)) < 2:
            time.sleep(0.2)
        assert len(spooled(spool)) >= 2, spooled(spool)
        s.start()
        out, err = a.communicate(timeout=60)
        assert a.returncode == 0, err
        n, uniq = tsv(s, "SELECT count(), uniqExact(token) FROM spanperf.windows").split()
        assert int(n) == int(uniq) >= 5, (n, uniq, err)
        assert not spooled(spool), spooled(spool)
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
        a = agent(s.url, "--window", "1", "-F", "99", "-d", "6")
        wait_windows(s, 1)
        wl = subprocess.Popen(["python3", "-c",
                               "import os,sys,time\nopen('/proc/self/comm','wb').write(sys.stdin.buffer.read())\n"
                               "t=time.time()\nwhile time.time()-t<2.5: pass\n"], stdin=subprocess.PIPE)
        wl.communicate(HOSTILE, timeout=30)
        out, err = a.communicate(timeout=60)
        assert a.returncode == 0, err
        got = tsv(s, "SELECT DISTINCT hex(comm) FROM spanperf.samples WHERE comm = unhex('%s')" % HOSTILE.hex())
        assert got == HOSTILE.hex().upper(), (got, tsv(s, "SELECT DISTINCT hex(comm) FROM spanperf.samples"), err)
        r = subprocess.run([SPANPERF, "report", "--clickhouse", s.url, "--since", "10m", "--comms", HOSTILE, "--sort",
                            "comm"], capture_output=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert b"100.00%" in r.stdout, r.stdout
    finally:
        for p in (a, wl):
            if p:
                reap(p)
        c.stop()
