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


class FaultServer:
    """A loopback HTTP server of the test's own that fails as told: "500" answers an error,
    "close" closes mid-body, "slow" answers after 30 s, "auth" refuses the credentials."""

    def __init__(self, mode):
        import threading
        self.mode, self.hits, self.stop = mode, 0, False
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.url = "http://127.0.0.1:%d/" % self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        import threading
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.hits += 1
            threading.Thread(target=self.answer, args=(conn,), daemon=True).start()

    def answer(self, conn):
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

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()


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
