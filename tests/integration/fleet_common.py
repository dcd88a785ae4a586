# SPDX-License-Identifier: GPL-2.0
"""What the fleet tests (test_fleet*.py) share: ClickHouse servers of the tests' own
(ch_cluster.py) and the waits and queries on them, and loopback servers of a test's own
that stand in front of them."""
import os
import socket
import threading
import time

import ch_cluster
from harness import Skip, need_bpf, tmpdir


def need_clickhouse():
    need_bpf()
    if not ch_cluster.available():
        raise Skip("needs clickhouse-server (tools/deps.sh test)")


def cluster():
    return ch_cluster.Cluster(os.path.join(tmpdir(), "ch")).start()


def tsv(server, sql):
    return server.query(sql).decode("utf-8", "replace").strip()


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


def folded_total(folded):
    """The samples of --folded's every line."""
    return sum(int(line.rpartition(" ")[2]) for line in folded.splitlines() if line.strip())


class LoopbackServer:
    """A server of the test's own on 127.0.0.1 at a free port: each connection is given to
    self.handle(conn) on a thread of its own; hits counts them.  A subclass sets what handle
    needs before it calls this __init__, which starts accepting."""

    def __init__(self, scheme):
        self.hits, self.stop = 0, False
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.url = "%s://127.0.0.1:%d/" % (scheme, self.sock.getsockname()[1])
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.hits += 1
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()
