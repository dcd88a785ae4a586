# SPDX-License-Identifier: GPL-2.0
"""stat --serve, for real: Debian's Prometheus scrapes the endpoint, and what it stored is checked
against the kernel's own account of a cgroup (cpu.stat usage_usec); promtool checks a scrape; bad
input (a port in use, clients that never send or never read, a churning host) leaves it serving."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

from harness import SPANPERF, WORKLOAD, Skip, need_bpf, rss_env, run, spanperf, test, tmpdir



# spanperf_span_duration_seconds' buckets (user/cmd/stat_serve.c, span_le).
SPAN_LE = [1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1,
           0.25, 0.5, 1, 2.5, 5, 10]

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cgroup2_root():
    for root in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        if os.path.exists(os.path.join(root, "cgroup.procs")) and os.path.exists(os.path.join(root, "cpu.stat")):
            return root
    raise Skip("no cgroup v2 hierarchy with cpu.stat at /sys/fs/cgroup[/unified]")


def get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


class Serve:
    def __init__(self, *extra, env=None):
        self.port = free_port()
        self.p = subprocess.Popen([SPANPERF, "stat", "--serve", "127.0.0.1:%d" % self.port, "-o", os.devnull,
                                   *extra], stderr=subprocess.PIPE, text=True, errors="replace", env=env)
        deadline = time.time() + 30
        while time.time() < deadline:
            assert self.p.poll() is None, "stat --serve exited %d: %s" % (self.p.returncode, self.p.stderr.read())
            try:
                get(self.url(), timeout=2)
                return
            except OSError:
                time.sleep(0.2)
        raise AssertionError("stat --serve never answered on port %d" % self.port)

    def url(self):
        return "http://127.0.0.1:%d/metrics" % self.port

    def rss_kb(self):
        with open("/proc/%d/status" % self.p.pid) as f:
            return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
        try:
            _, err = self.p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            _, err = self.p.communicate()
        return self.p.returncode, err


def in_cgroup(cg, argv):
    """argv run inside cgroup cg (moved there before exec), waited for."""
    return run(["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', cg] + argv, timeout=120, check=True)


def prom_query(port, q):
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (port, urllib.parse.urlencode({"query": q}))
    _, body = get(url)
    doc = json.loads(body)
    assert doc["status"] == "success", doc
    return doc["data"]["result"]


@test
def test_prometheus_scrapes_cgroup_cpu():
    need_bpf()
    if not shutil.which("prometheus") or not shutil.which("promtool"):
        raise Skip("Debian's prometheus is not installed (tools/deps.sh test installs it)")
    name = "spanperf-it-%d" % os.getpid()
    cg = os.path.join(cgroup2_root(), name)
    os.mkdir(cg)
    d = tmpdir()
    srv = Serve("--span", "uprobe:%s:hidden_work" % WORKLOAD)
    prom = None
    try:
        pport = free_port()
        with open(os.path.join(d, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n"
                    "  - job_name: spanperf\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n" % srv.port)
        prom = subprocess.Popen(["prometheus", "--config.file", os.path.join(d, "prometheus.yml"),
                                 "--storage.tsdb.path", os.path.join(d, "tsdb"),
                                 "--web.listen-address", "127.0.0.1:%d" % pport],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        in_cgroup(cg, [WORKLOAD, "spin", "1500,500"])
        calls, ms = 30, 2
        in_cgroup(cg, [WORKLOAD, "calls", str(calls), str(ms)])
        ended = time.time()
        with open(os.path.join(cg, "cpu.stat")) as f:
            usage = int(re.search(r"usage_usec (\d+)", f.read()).group(1)) / 1e6
        # promtool on a scrape as Prometheus gets it.
        _, page = get(srv.url())
        p = run(["promtool", "check", "metrics"], input=page)
        assert p.returncode == 0 and not (p.stdout + p.stderr).strip(), "promtool: %s%s" % (p.stdout, p.stderr)
        # Two scrapes after the workload ended, then what Prometheus stored.  Scrapes taken while
        # it ran do not count: the cgroup's CPU may be within 5 % of its end before the calls end
        # (they are 3 % of it), and their spans are read from their ring ten times a second.
        q = 'spanperf_cgroup_cpu_seconds_total{cgroup="/%s"}' % name
        got, deadline = None, time.time() + 60
        while time.time() < deadline:
            try:
                scrapes = prom_query(pport, 'count_over_time(up{job="spanperf"}[%dms])' % (
                    1000 * (time.time() - ended)))
                res = prom_query(pport, q)
                if res and scrapes and float(scrapes[0]["value"][1]) >= 2:
                    got = float(res[0]["value"][1])
                    if abs(got - usage) <= 0.05 * usage:
                        break
            except OSError:
                pass
            time.sleep(1)
        assert got is not None, "Prometheus never stored %s" % q
        assert abs(got - usage) <= 0.05 * usage, "Prometheus has %.3f s for %s, its cpu.stat says %.3f s" % (
            got, name, usage)
        # The per-comm series of that cgroup sum to the same.
        per_comm = sum(float(r["value"][1]) for r in prom_query(
            pport, 'spanperf_cpu_seconds_total{cgroup="/%s"}' % name))
        assert abs(per_comm - got) < 1e-6 * max(got, 1), (per_comm, got)
        # The span histogram counted each call once; its time on CPU is the calls' own.
        count = prom_query(pport, 'spanperf_span_duration_seconds_count{span="hidden_work"}')
        assert count and int(float(count[0]["value"][1])) == calls, count
        inf = prom_query(pport, 'spanperf_span_duration_seconds_bucket{span="hidden_work",le="+Inf"}')
        assert int(float(inf[0]["value"][1])) == calls, inf
        on = float(prom_query(pport, 'spanperf_span_on_cpu_seconds_total{span="hidden_work"}')[0]["value"][1])
        assert abs(on - calls * ms / 1e3) <= 0.2 * calls * ms / 1e3, "on CPU %.4f s for %d calls of %d ms" % (
            on, calls, ms)
        p50 = prom_query(pport, 'histogram_quantile(0.5, spanperf_span_duration_seconds_bucket{span="hidden_work"})')
        # A histogram knows a quantile only to its bucket: histogram_quantile interpolates inside
        # the bucket that holds it, so 30 calls of 2 ms, all in (1 ms, 2.5 ms], give 1.75 ms.  No
        # call is shorter than the CPU it burns: p50 is at least the bottom of the bucket of MS.
        floor = max(le for le in SPAN_LE if le < ms / 1e3)
        assert p50 and floor <= float(p50[0]["value"][1]) <= 1.0, (floor, p50)
    finally:
        if prom:
            prom.terminate()
            prom.wait(timeout=30)
        code, err = srv.stop()
        os.rmdir(cg)
    assert code == 0, "stat --serve exited %d: %s" % (code, err)


@test
def test_serve_port_in_use():
    need_bpf()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        p = spanperf("stat", "--serve", "127.0.0.1:%d" % port, "-d", "5", timeout=60)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 1, "exited %d: %s" % (p.returncode, p.stderr)
    assert len(lines) == 1 and "127.0.0.1:%d" % port in lines[0] and "in use" in lines[0], p.stderr


@test
def test_serve_bad_addresses():
    for addr in ("localhost:x", "1.2.3:80", "[::1:80", "99999", ""):
        p = spanperf("stat", "--serve", addr, "-d", "1")
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 1 and len(lines) == 1 and "--serve" in lines[0], "%r: %d %s" % (
            addr, p.returncode, p.stderr)


NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else shutil.which("python3")

# 20 connections held until stdin closes: 10 that never send, 10 that ask and never read.
HOLD = r"""
import socket, sys
socks = []
for i in range(20):
    try:
        c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
        if i % 2:
            c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        socks.append(c)
    except OSError:
        pass
print("ready", flush=True)
sys.stdin.read()
"""


@test
def test_serve_survives_silent_clients_and_churn():
    need_bpf()
    # Its RSS must be its live memory: under make check's ASan, with the quarantine of freed blocks,
    # it grew from 68 to 299 MB; without, from 24 to 29 MB.  A leak makes the exit status below 86.
    srv = Serve("--serve-top", "5", env=rss_env())
    holder = None
    try:
        rss0 = srv.rss_kb()
        # Clients that connect and never send, and clients that ask and never read: another
        # user's (past 8 connections of one user, the endpoint refuses more of that user's).
        holder = subprocess.Popen(NOBODY + [PY, "-c", HOLD, str(srv.port)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, errors="replace")
        assert holder.stdout.readline().strip() == "ready"
        t0 = time.time()
        status, page = get(srv.url())
        assert status == 200 and time.time() - t0 < 5, "a scrape took %.1f s beside silent clients" % (
            time.time() - t0)
        # A churning host: short processes while scraping; the page stays bounded by --serve-top.
        churn = subprocess.Popen(["sh", "-c", "i=0; while [ $i -lt 10000 ]; do /bin/true; i=$((i+1)); done"])
        sizes = []
        while churn.poll() is None:
            status, page = get(srv.url())
            assert status == 200
            rows = [l for l in page.splitlines() if l.startswith("spanperf_cpu_seconds_total{")]
            assert len(rows) <= 6, "%d rows with --serve-top 5" % len(rows)
            sizes.append(len(page))
            time.sleep(0.2)
        assert sizes, "no scrape during the churn"
        for _ in range(20):
            get(srv.url())
        rss1 = srv.rss_kb()
        assert rss1 < rss0 + 16384, "RSS grew from %d to %d kB" % (rss0, rss1)
    finally:
        if holder:
            holder.stdin.close()
            holder.wait(timeout=30)
        code, err = srv.stop()
    assert code == 0, "stat --serve exited %d: %s" % (code, err)


# Clients as an unprivileged user would hold them: N sockets, each reopened at once when cut;
# "slow" ones send a header byte every 2 s (an idle timeout never fires), "idle" ones nothing.
# On stdout at the end: how many it opened, and the longest any one stayed open.
ATTACK = r"""
import socket, sys, threading, time
port, n, mode, dur = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
stop, opened, longest = time.time() + dur, [0], [0.0]
def one():
    while time.time() < stop:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=3)
        except OSError:
            time.sleep(0.05)
            continue
        opened[0] += 1
        t0 = time.time()
        try:
            if mode == "slow":
                s.sendall(b"GET /metrics HTTP/1.1\r\n")
            s.settimeout(2)
            while time.time() < stop:
                if mode == "slow":
                    s.sendall(b"X")
                try:
                    if s.recv(1) == b"":
                        break
                except socket.timeout:
                    pass
        except OSError:
            pass
        if time.time() < stop:
            longest[0] = max(longest[0], time.time() - t0)
        s.close()
ts = [threading.Thread(target=one, daemon=True) for _ in range(n)]
[t.start() for t in ts]
[t.join() for t in ts]
print(opened[0], "%.1f" % longest[0])
"""


def scrapes_beside(srv, n, mode, secs=12):
    """Scrapes (as root) once a second while nobody holds n sockets: [seconds each took, or None]."""
    attack = subprocess.Popen(NOBODY + [PY, "-c", ATTACK, str(srv.port), str(n), mode, str(secs + 2)],
                              stdout=subprocess.PIPE, text=True, errors="replace")
    took = []
    try:
        time.sleep(2)  # the sockets are all open, or refused
        deadline = time.time() + secs
        while time.time() < deadline:
            t0 = time.time()
            try:
                status, page = get(srv.url(), timeout=5)
                took.append(time.time() - t0 if status == 200 and "spanperf_threads" in page else None)
            except OSError:
                took.append(None)
            time.sleep(max(0, 1 - (time.time() - t0)))
        out, _ = attack.communicate(timeout=60)
    finally:
        if attack.poll() is None:
            attack.kill()
            attack.wait()
    opened, longest = out.split()
    return took, int(opened), float(longest)


@test
def test_serve_answers_beside_slow_and_idle_clients():
    """32 connections (libmicrohttpd's limit) held by clients sending a header byte every few
    seconds (the 10 s timeout only dropped silent ones) made 8 of 8 scrapes time out; 200 idle
    sockets did too.  Any local user could.  With a whole-request deadline (5 s) and 8
    connections per client (a local one is its user), every scrape beside them is answered."""
    need_bpf()
    srv = Serve()
    try:
        for n, mode in ((32, "slow"), (200, "idle")):
            took, opened, longest = scrapes_beside(srv, n, mode)
            failed = [t for t in took if t is None]
            assert took and not failed, "%d of %d scrapes failed beside %d %s clients" % (
                len(failed), len(took), n, mode)
            assert max(took) < 2, "a scrape took %.1f s beside %d %s clients" % (max(took), n, mode)
            print("    %d %s clients (%d connections opened): %d scrapes, slowest %.3f s; "
                  "longest held %.1f s" % (n, mode, opened, len(took), max(took), longest))
            # The deadline, not an idle timeout: a byte every 2 s holds a connection 5 s at most.
            assert longest < 5 + 3, "a %s client held a connection %.1f s" % (mode, longest)
    finally:
        code, err = srv.stop()
    assert code == 0, "stat --serve exited %d: %s" % (code, err)


def make_tls(d):
    """A self-signed certificate for 127.0.0.1, and its key."""
    if not shutil.which("openssl"):
        raise Skip("openssl is not installed")
    cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"], check=True)
    return cert, key


def bcrypt(password, cost=10):
    """A $2y$ hash as htpasswd -B writes (Python's crypt writes $2b$, the same algorithm)."""
    p = run([PY, "-W", "ignore", "-c", "import crypt, sys; print(crypt.crypt(sys.argv[1], "
             "crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << int(sys.argv[2]))))", password, str(cost)], check=True)
    return p.stdout.strip().replace("$2b$", "$2y$", 1)


def get_tls(port, cafile, user=None, password=None, timeout=10):
    import base64
    import ssl
    ctx = ssl.create_default_context(cafile=cafile)
    req = urllib.request.Request("https://127.0.0.1:%d/metrics" % port)
    if user:
        req.add_header("Authorization", "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@test
def test_serve_tls_and_basic_auth_from_web_config():
    """--web-config FILE as node_exporter's --web.config.file: TLS from its cert_file and
    key_file, basic auth from bcrypt hashes; Prometheus scrapes it with its own tls_config and
    basic_auth.  A bad file is one sentence, before anything is counted."""
    need_bpf()
    d = tmpdir()
    cert, key = make_tls(d)
    web = os.path.join(d, "web.yml")
    with open(web, "w") as f:
        f.write("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
                "basic_auth_users:\n  prometheus: %s\n" % bcrypt("s3cret"))
    for bad, says in (("basic_auth_users:\n  u: plain\n", "not a bcrypt hash"),
                      ("tls_server_config:\n  cert_file: cert.pem\n", "needs key_file too"),
                      ("http_server_config:\n  http2: false\n", "not supported")):
        path = os.path.join(d, "bad.yml")
        open(path, "w").write(bad)
        p = spanperf("stat", "--serve", str(free_port()), "--web-config", path, "-d", "5")
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 1 and len(lines) == 1 and path in lines[0] and says in lines[0], p.stderr
    p = spanperf("stat", "--web-config", web, "-d", "1")
    assert p.returncode == 1 and "--web-config needs --serve" in p.stderr, p.stderr
    port = free_port()
    srv = subprocess.Popen([SPANPERF, "stat", "-v", "--serve", "127.0.0.1:%d" % port, "--web-config", web, "-o",
                            os.devnull], stderr=subprocess.PIPE, text=True, errors="replace")
    prom = None
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            assert srv.poll() is None, srv.stderr.read()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        status, page = get_tls(port, cert, "prometheus", "s3cret")
        assert status == 200 and "spanperf_threads" in page, (status, page[:200])
        t0 = time.time()
        for _ in range(5):
            assert get_tls(port, cert, "prometheus", "s3cret")[0] == 200
        cached = (time.time() - t0) / 5
        assert get_tls(port, cert, "prometheus", "wrong")[0] == 401
        assert get_tls(port, cert, "someone", "s3cret")[0] == 401
        assert get_tls(port, cert)[0] == 401
        # Guessing costs the guesser: after a failure, its next guesses within a second get 401
        # without a bcrypt check (55 ms of the endpoint's one thread each, at cost 10).
        t0 = time.time()
        for i in range(20):
            assert get_tls(port, cert, "prometheus", "guess%d" % i)[0] == 401
        guessing = time.time() - t0
        assert get_tls(port, cert, "prometheus", "s3cret")[0] == 200  # remembered: no check to throttle
        try:
            get("http://127.0.0.1:%d/metrics" % port, timeout=5)
            raise AssertionError("plain HTTP was answered")
        except OSError:
            pass
        print("    a scrape with a verified password: %.3f s (TLS and the page; bcrypt once, then cached)" % cached)
        if shutil.which("prometheus"):
            pport = free_port()
            with open(os.path.join(d, "prometheus.yml"), "w") as f:
                f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n"
                        "  - job_name: spanperf\n    scheme: https\n    tls_config:\n      ca_file: %s\n"
                        "    basic_auth:\n      username: prometheus\n      password: s3cret\n"
                        "    static_configs:\n      - targets: ['127.0.0.1:%d']\n" % (cert, port))
            prom = subprocess.Popen(["prometheus", "--config.file", os.path.join(d, "prometheus.yml"),
                                     "--storage.tsdb.path", os.path.join(d, "tsdb"),
                                     "--web.listen-address", "127.0.0.1:%d" % pport],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            got, deadline = None, time.time() + 60
            while time.time() < deadline and not got:
                try:
                    got = prom_query(pport, 'spanperf_threads{job="spanperf"}')
                except OSError:
                    pass
                time.sleep(1)
            assert got and float(got[0]["value"][1]) > 0, "Prometheus stored nothing over TLS and basic auth"
    finally:
        if prom:
            prom.terminate()
            prom.wait(timeout=30)
        if srv.poll() is None:
            srv.send_signal(signal.SIGINT)
        _, err = srv.communicate(timeout=30)
    assert srv.returncode == 0, err
    m = re.search(r"(\d+) failed basic auth, (\d+) more not checked", err)
    assert m, err[-800:]
    checked, skipped = int(m.group(1)), int(m.group(2))
    # One check a second at most for the one client, with a second's slack either side.
    assert checked <= 2 + guessing + 1 and skipped >= 20 - (guessing + 2), (checked, skipped, guessing)
