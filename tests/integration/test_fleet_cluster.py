# SPDX-License-Identifier: GPL-2.0
"""spanperf agent's tables on a cluster's every node (--cluster), its retention (--retention),
and https with the CA given (--clickhouse-ca): against servers of the tests' own on loopback
(ch_cluster.py), each node at its own address on the same ports, as a fleet's."""
import os
import shutil
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
