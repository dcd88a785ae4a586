# SPDX-License-Identifier: GPL-2.0
"""spanperf agent's tables on a cluster's every node (--cluster), its retention (--retention),
and https with the CA given (--clickhouse-ca): against servers of the tests' own on loopback
(ch_cluster.py), each node at its own address on the same ports, as a fleet's."""
import os
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time

import ch_cluster
from harness import SPANPERF, Skip, need_bpf, reap, spanperf, test, tmpdir

TABLES = ["samples", "samples_local", "spans", "spans_local", "stacks", "stacks_local", "windows", "windows_local"]


def need_clickhouse():
    need_bpf()
    if not ch_cluster.available():
        raise Skip("needs clickhouse-server (tools/deps.sh test)")


def tsv(server, sql):
    return server.query(sql).decode("utf-8", "replace").strip()


def tables(server):
    return tsv(server, "SELECT name FROM system.tables WHERE database = 'spanperf' ORDER BY name").split()


def agent(url, *args, timeout=120):
    return subprocess.run([SPANPERF, "agent", "--clickhouse", url] + list(args), capture_output=True, text=True,
                          errors="replace", timeout=timeout)


@test
def test_fleet_cluster_tables_created_on_every_node():
    """One agent, talking to one node of a two-shard cluster: both nodes get the local tables and
    the Distributed ones (each asked for its own), and its windows read the same through either."""
    need_clickhouse()
    c = ch_cluster.Cluster(os.path.join(tmpdir(), "ch"), addresses=True).start()
    try:
        s0, s1 = c.servers
        assert tables(s1) == [], tables(s1)
        p = agent(s0.url, "--cluster", "fleet", "--host-label", "onlyA", "--window", "1", "-d", "3")
        assert p.returncode == 0, p.stderr
        for s in (s0, s1):
            assert tables(s) == TABLES, (s.url, tables(s), p.stderr)
        assert "has no" not in p.stderr, p.stderr
        # The agent's windows are on one shard (sharded by host), and read whole through either node.
        n0, n1 = (int(tsv(s, "SELECT count() FROM spanperf.windows")) for s in (s0, s1))
        assert n0 == n1 >= 2, (n0, n1)
        local = [int(tsv(s, "SELECT count() FROM spanperf.windows_local")) for s in (s0, s1)]
        assert sorted(local) == [0, n0], local
    finally:
        c.stop()


def parts(server, table):
    return tsv(server, "SELECT DISTINCT partition FROM system.parts WHERE database = 'spanperf' AND table = '%s' "
               "AND active ORDER BY partition" % table).split()


@test
def test_fleet_retention_drops_old_partitions_on_every_node():
    """--retention 7: the days' partitions older than a week go from every table of every node;
    a 3-day-old one and today's stay."""
    need_clickhouse()
    c = ch_cluster.Cluster(os.path.join(tmpdir(), "ch"), addresses=True).start()
    try:
        s0, s1 = c.servers
        p = agent(s0.url, "--cluster", "fleet", "--window", "1", "-d", "2")
        assert p.returncode == 0, p.stderr
        old, recent = "2020-01-01", time.strftime("%Y-%m-%d", time.gmtime(time.time() - 3 * 86400))
        for s in (s0, s1):
            for day in (old, recent):
                for t in ("windows", "samples", "stacks", "spans"):
                    s.query("INSERT INTO spanperf.%s_local (date) VALUES ('%s')" % (t, day))
            assert old in parts(s, "samples_local") and recent in parts(s, "samples_local")
        p = agent(s0.url, "--cluster", "fleet", "--window", "1", "-d", "2", "--retention", "7", "-v")
        assert p.returncode == 0, p.stderr
        today = time.strftime("%Y-%m-%d", time.gmtime())
        for s in (s0, s1):
            for t in ("windows", "samples", "stacks", "spans"):
                got = parts(s, t + "_local")
                assert old not in got and recent in got, (s.url, t, got, p.stderr)
        assert today in parts(s0, "windows_local") + parts(s1, "windows_local")
        # one server, no cluster: the same
        c1 = ch_cluster.Cluster(os.path.join(tmpdir(), "ch1"), n=1).start()
        try:
            s = c1.servers[0]
            assert agent(s.url, "--window", "1", "-d", "1").returncode == 0
            s.query("INSERT INTO spanperf.spans (date) VALUES ('%s')" % old)
            p = agent(s.url, "--window", "1", "-d", "2", "--retention", "30")
            assert p.returncode == 0, p.stderr
            assert old not in parts(s, "spans"), parts(s, "spans")
        finally:
            c1.stop()
    finally:
        c.stop()


def make_certs(d):
    """A CA, a server certificate it signs for 127.0.0.1, and a second CA that signed nothing here."""
    if not shutil.which("openssl"):
        raise Skip("needs openssl (to make the test's certificates)")
    def ossl(*args):
        subprocess.run(["openssl"] + list(args), check=True, capture_output=True, cwd=d)
    for ca in ("ca", "other"):
        ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca + ".key", "-out", ca + ".pem",
             "-days", "2", "-subj", "/CN=spanperf test " + ca)
    with open(os.path.join(d, "ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    ossl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=127.0.0.1")
    ossl("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out",
         "srv.pem", "-days", "2", "-extfile", "ext")
    return os.path.join(d, "ca.pem"), os.path.join(d, "other.pem"), os.path.join(d, "srv.pem"), \
        os.path.join(d, "srv.key")


class TlsFront:
    """A TLS front of the test's own on loopback: each connection decrypted and passed to the
    server's plain HTTP port, and back."""

    def __init__(self, cert, key, backend_port):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.backend = backend_port
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.url = "https://127.0.0.1:%d/" % self.sock.getsockname()[1]
        self.stop = False
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self.relay, args=(conn,), daemon=True).start()

    def relay(self, conn):
        try:
            conn.settimeout(30)
            tls = self.ctx.wrap_socket(conn, server_side=True)
        except (OSError, ssl.SSLError):
            conn.close()
            return
        back = socket.create_connection(("127.0.0.1", self.backend), timeout=30)

        def pump(src, dst):
            try:
                while True:
                    b = src.recv(65536)
                    if not b:
                        break
                    dst.sendall(b)
            except OSError:
                pass
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        t = threading.Thread(target=pump, args=(back, tls), daemon=True)
        t.start()
        pump(tls, back)
        t.join(35)
        tls.close()
        back.close()

    def close(self):
        self.stop = True
        self.sock.close()


@test
def test_fleet_https_with_the_ca_given_and_a_wrong_certificate_refused():
    """The agent and report over https through a TLS front whose certificate the given CA signed;
    with another CA, the certificate is refused in one sentence, and the agent spools."""
    need_clickhouse()
    d = tmpdir()
    ca, other, cert, key = make_certs(d)
    c = ch_cluster.Cluster(os.path.join(d, "ch"), n=1).start()
    s = c.servers[0]
    front = TlsFront(cert, key, s.http)
    try:
        p = agent(front.url, "--clickhouse-ca", ca, "--window", "1", "-d", "3")
        assert p.returncode == 0, p.stderr
        assert int(tsv(s, "SELECT count() FROM spanperf.windows")) >= 2, p.stderr
        r = spanperf("report", "--clickhouse", front.url, "--clickhouse-ca", ca, "--since", "10m", "--sort", "comm")
        assert r.returncode == 0 and "# Samples:" in r.stdout, r.stderr
        # another CA: refused, in one sentence that says so
        r = spanperf("report", "--clickhouse", front.url, "--clickhouse-ca", other, "--since", "10m")
        assert r.returncode == 1 and "certificate" in r.stderr and "refused" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        # the system's store (no --clickhouse-ca) knows no test CA: refused too
        r = spanperf("report", "--clickhouse", front.url, "--since", "10m")
        assert r.returncode == 1 and "certificate" in r.stderr, r.stderr
        before = int(tsv(s, "SELECT count() FROM spanperf.windows"))
        spool = os.path.join(d, "spool")
        p = agent(front.url, "--clickhouse-ca", other, "--window", "1", "-d", "3", "--spool", spool)
        assert p.returncode == 0, p.stderr
        assert "certificate" in p.stderr and "refused" in p.stderr, p.stderr
        assert int(tsv(s, "SELECT count() FROM spanperf.windows")) == before
        assert [f for f in os.listdir(spool) if f.endswith(".win")], os.listdir(spool)
        # a CA file that is not there: one sentence, before anything
        r = spanperf("report", "--clickhouse", front.url, "--clickhouse-ca", os.path.join(d, "none.pem"), "--since",
                     "1h")
        assert r.returncode == 1 and "--clickhouse-ca" in r.stderr, r.stderr
    finally:
        front.close()
        c.stop()


def get(url, method="GET"):
    import urllib.error
    import urllib.request
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def prom_query(port, q):
    import json
    import urllib.parse
    status, body = get("http://127.0.0.1:%d/api/v1/query?%s" % (port, urllib.parse.urlencode({"query": q})))
    doc = json.loads(body)
    assert status == 200 and doc["status"] == "success", doc
    return doc["data"]["result"]


@test
def test_fleet_agent_serve_scraped_by_prometheus():
    """The agent's --serve on the shared endpoint (stat --serve's): a page promtool passes, 404
    elsewhere, HEAD answered; a real Prometheus scrapes it, and what it stored of windows sent
    equals the windows the server holds once the agent has stopped sending."""
    p = spanperf("agent", "--clickhouse", "http://127.0.0.1:1/", "--web-config", "/nonexistent")
    assert p.returncode == 1 and p.stderr.strip() == "spanperf agent: --web-config needs --serve", p.stderr
    p = spanperf("agent", "--clickhouse", "http://127.0.0.1:1/", "--serve", "127.0.0.1:1", "--web-config",
                 "/nonexistent")
    assert p.returncode == 1 and "--web-config '/nonexistent'" in p.stderr, p.stderr
    need_clickhouse()
    if not shutil.which("prometheus") or not shutil.which("promtool"):
        raise Skip("Debian's prometheus is not installed (tools/deps.sh test installs it)")
    d = tmpdir()
    c = ch_cluster.Cluster(os.path.join(d, "ch"), n=1).start()
    s = c.servers[0]
    port, pport = ch_cluster.free_port(), ch_cluster.free_port()
    a = prom = None
    try:
        a = subprocess.Popen([SPANPERF, "agent", "--clickhouse", s.url, "--window", "1", "--serve",
                              "127.0.0.1:%d" % port], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             errors="replace")
        end, page = time.time() + 60, None
        while time.time() < end and page is None:
            try:
                status, page = get("http://127.0.0.1:%d/metrics" % port)
            except OSError:
                time.sleep(0.2)
        assert page is not None, "no answer on --serve"
        p = subprocess.run(["promtool", "check", "metrics"], input=page, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0 and not (p.stdout + p.stderr).strip(), p.stdout + p.stderr
        assert get("http://127.0.0.1:%d/other" % port)[0] == 404
        assert get("http://127.0.0.1:%d/metrics" % port, "HEAD")[0] == 200
        with open(os.path.join(d, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n"
                    "  - job_name: agent\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n" % port)
        prom = subprocess.Popen(["prometheus", "--config.file", os.path.join(d, "prometheus.yml"),
                                 "--storage.tsdb.path", os.path.join(d, "tsdb"),
                                 "--web.listen-address", "127.0.0.1:%d" % pport],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # The truth is the server's: once Prometheus stored a scrape at least 3 windows in, the
        # agent is stopped with SIGSTOP (it sends nothing more) and a scrape after that must hold
        # exactly the windows the server holds.
        got, end = None, time.time() + 90
        while time.time() < end:
            try:
                res = prom_query(pport, "spanperf_agent_windows_sent_total")
                if res and float(res[0]["value"][1]) >= 3:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        os.kill(a.pid, signal.SIGSTOP)
        try:
            # a stopped agent answers no scrape: its windows are what the server holds
            held = int(tsv(s, "SELECT count() FROM spanperf.windows"))
        finally:
            os.kill(a.pid, signal.SIGCONT)
        # the sends after SIGCONT may add windows: the series reaches `held` (it never passes what the
        # server holds at the time of a scrape)
        end = time.time() + 60
        while time.time() < end:
            res = prom_query(pport, "max_over_time(spanperf_agent_windows_sent_total[5m])")
            got = float(res[0]["value"][1]) if res else None
            if got is not None and got >= held:
                break
            time.sleep(0.5)
        assert got is not None and got >= held, (got, held)
        now = int(tsv(s, "SELECT count() FROM spanperf.windows"))
        last = float(prom_query(pport, "spanperf_agent_windows_sent_total")[0]["value"][1])
        assert last <= now, (last, now)
        a.send_signal(signal.SIGINT)
        out, err = a.communicate(timeout=30)
        assert a.returncode == 0, err
    finally:
        if prom:
            prom.terminate()
            prom.wait(timeout=30)
        if a:
            reap(a)
        c.stop()
