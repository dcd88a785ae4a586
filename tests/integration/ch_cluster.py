"""ClickHouse servers of the tests' own: started by hand on loopback, each
with its own config, data and ports (no system service), two shards of one
cluster "fleet"; SIGKILL stops them at once."""
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request

SERVER = shutil.which("clickhouse-server") or "/usr/sbin/clickhouse-server"
USER, PASSWORD = "spanperf", "fleet secret"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def common_port(addrs):
    """A port free on every address."""
    def free_on_all(p):
        try:
            for a in addrs:
                with socket.socket() as s:
                    s.bind((a, p))
            return True
        except OSError:
            return False
    while True:
        p = free_port()
        if free_on_all(p):
            return p


def available():
    return os.path.exists(SERVER)


CONFIG = """<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{d}/server.log</log><errorlog>{d}/error.log</errorlog><size>10M</size><count>1</count></logger>
  <listen_host>{addr}</listen_host>
  <http_port>{http}</http_port>
  <tcp_port>{tcp}</tcp_port>
  <path>{d}/data/</path>
  <tmp_path>{d}/tmp/</tmp_path>
  <user_files_path>{d}/user_files/</user_files_path>
  <format_schema_path>{d}/format_schemas/</format_schema_path>
  <users_config>{d}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>67108864</mark_cache_size>
  <max_concurrent_queries>50</max_concurrent_queries>
  <remote_servers><fleet>{shards}</fleet></remote_servers>
</yandex>
"""

USERS = """<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
  <users>
    <default><password></password><networks><ip>127.0.0.0/8</ip></networks><profile>default</profile><quota>default</quota></default>
    <{user}><password>{password}</password><networks><ip>127.0.0.0/8</ip></networks><profile>default</profile><quota>default</quota></{user}>
  </users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>
"""


class Server:
    def __init__(self, root, name, http, tcp, shards, addr="127.0.0.1"):
        self.dir = os.path.join(root, name)
        self.http, self.tcp, self.shards, self.addr = http, tcp, shards, addr
        self.proc = None
        os.makedirs(self.dir, exist_ok=True)
        with open(os.path.join(self.dir, "config.xml"), "w") as f:
            f.write(CONFIG.format(d=self.dir, http=http, tcp=tcp, shards=shards, addr=addr))
        with open(os.path.join(self.dir, "users.xml"), "w") as f:
            f.write(USERS.format(user=USER, password=PASSWORD))

    @property
    def url(self):
        return "http://%s:%d/" % (self.addr, self.http)

    def start(self, timeout=30):
        log = open(os.path.join(self.dir, "stdout.log"), "ab")
        self.proc = subprocess.Popen([SERVER, "--config-file=" + os.path.join(self.dir, "config.xml")],
                                     stdout=log, stderr=log, cwd=self.dir, start_new_session=True)
        log.close()
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("clickhouse-server exited: see %s" % self.dir)
            try:
                self.query("SELECT 1")
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("clickhouse-server did not answer in %ds" % timeout)

    def kill(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.proc = None

    def query(self, sql, data=None, params=None):
        q = {"query": sql, "user": "default"}
        q.update(params or {})
        req = urllib.request.Request(self.url + "?" + urllib.parse.urlencode(q), data=data if data is not None else b"")
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.read()


class Cluster:
    """Two shards of cluster "fleet", each a server on loopback."""

    def __init__(self, root, n=2, addresses=False):
        """addresses: each server at its own loopback address (127.0.0.1, .2, ...) on the same HTTP
        port, as a fleet's nodes are: what agent --cluster reaches every node by.  Their native
        ports differ: a server takes a shard at a local address on its own port for itself."""
        shutil.rmtree(root, ignore_errors=True)
        if addresses:
            addrs = ["127.0.0.%d" % (i + 1) for i in range(n)]
            http = common_port(addrs)
            ports = [(http, free_port()) for _ in range(n)]
        else:
            addrs = ["127.0.0.1"] * n
            ports = [(free_port(), free_port()) for _ in range(n)]
        shards = "".join("<shard><replica><host>%s</host><port>%d</port></replica></shard>" % (a, tcp)
                         for a, (_, tcp) in zip(addrs, ports))
        self.servers = [Server(root, "shard%d" % i, http, tcp, shards, a)
                        for i, (a, (http, tcp)) in enumerate(zip(addrs, ports))]

    def start(self):
        for s in self.servers:
            s.start()
        return self

    def stop(self):
        for s in self.servers:
            s.kill()
