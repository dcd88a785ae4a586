# SPDX-License-Identifier: GPL-2.0
"""What spanperf writes, against what others control (issue 38): a comm that is not UTF-8 in the
flame graph, span ids in annotate's input that are no ids, a FIFO another user planted where an
output goes, and a full disk under outputs and rotation."""
import json
import os
import queue
import re
import signal
import stat
import shutil
import subprocess
import threading
import time
import xml.etree.ElementTree as ET

from harness import SPANPERF, WORKLOAD, Skip, need_bpf, need_root, run, spanperf, test, tmpdir

PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else shutil.which("python3")
NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]

# A comm of bytes that are not UTF-8: stray bytes, an overlong '/', a UTF-16 surrogate, and U+FFFE
# (UTF-8, but no XML character).  prctl keeps 15 bytes.
BAD_COMM = b"\xff\xfe\xc0\xafhot\xed\xa0\x80\xef\xbf\xbe"
SPIN_AS = ("import ctypes, sys, time\n"
           "ctypes.CDLL(None).prctl(15, sys.argv[1].encode('latin-1'), 0, 0, 0)\n"
           "t = time.process_time() + 0.6\n"
           "while time.process_time() < t: pass\n")


@test
def test_flamegraph_of_a_comm_not_utf8():
    """A comm is any bytes: xml_text passed those >= 0x80 as they were, and a browser showed a
    parse error instead of the graph.  Invalid UTF-8 is replaced (U+FFFD), in the SVG as in JSON."""
    need_bpf()
    d = tmpdir()
    data, svg = os.path.join(d, "c.data"), os.path.join(d, "c.svg")
    spanperf("record", "-g", "-o", data, "--", PY, "-c", SPIN_AS, BAD_COMM.decode("latin-1"), check=True)
    spanperf("report", "-i", data, "--flamegraph", svg, check=True)
    raw = open(svg, "rb").read()
    raw.decode("utf-8")  # strict: no stray byte, no surrogate, no overlong
    if shutil.which("xmllint"):
        p = run(["xmllint", "--noout", svg])
        assert p.returncode == 0, "xmllint: %s" % p.stderr[-600:]
    titles = [t.text for t in ET.parse(svg).iter("{http://www.w3.org/2000/svg}title")]
    assert any(t.startswith("\ufffd") and "hot" in t for t in titles), [t for t in titles if "hot" in t]
    # What a user sees: Chromium draws the graph (drive.js fails on a parse error) and finds the frame.
    try:
        from test_page import drive
        out = drive("svg", svg, "hot")
        assert out["frames"] > 0 and out["matched"].startswith("Matched: "), out
    except Skip:
        pass
    # JSON lines of the same comm: strict UTF-8 too.
    p = subprocess.run([SPANPERF, "report", "-i", data, "--sort", "comm", "--format", "json"], capture_output=True)
    assert p.returncode == 0, p.stderr
    rows = [json.loads(l) for l in p.stdout.decode("utf-8").splitlines() if l]
    assert any("hot" in r["comm"] for r in rows), rows


def small_recording():
    """A short recording of the host, for annotate's input to join against."""
    need_bpf()
    d = tmpdir()
    path = os.path.join(d, "a.data")
    spanperf("record", "-q", "-d", "0.3", "-o", path, check=True)
    return path


@test
def test_annotate_refuses_or_reencodes_ids():
    """annotate copied the text of trace_id and span_id as it found it (`"trace_id":NaNsense`, an
    object as span_id) into its JSON lines, which were then not JSON.  A string is re-encoded, a
    number or null kept; anything else refuses the line in one sentence naming it."""
    data = small_recording()
    d = tmpdir()
    head = '{"tid":1,"start_ns":1,"end_ns":2,'
    for bad in ('"trace_id":NaNsense', '"span_id":{"a":1}', '"span_id":[1,2]', '"trace_id":true',
                '"trace_id":01', '"span_id":-', '"trace_id":1.e5'):
        spans = os.path.join(d, "bad.jsonl")
        open(spans, "w").write('{"tid":1,"start_ns":1,"end_ns":2}\n' + head + bad + "}\n")
        p = spanperf("annotate", "--spans", spans, "-i", data, "--format", "json")
        lines = p.stderr.strip().splitlines()
        assert p.returncode == 1 and len(lines) == 1 and spans + ":2:" in lines[0], "%s: exit %d, %s%s" % (
            bad, p.returncode, p.stdout[-300:], p.stderr)
    spans = os.path.join(d, "good.jsonl")
    open(spans, "w").write(head + '"trace_id":"a\\"b\\\\c\\u0001\\u00e9","span_id":12345}\n' +
                           head + '"trace_id":null,"span_id":-1.5e3}\n' +
                           head + '"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7"}\n')
    for fmt in ("json", "otlp-json"):
        p = subprocess.run([SPANPERF, "annotate", "--spans", spans, "-i", data, "--format", fmt], capture_output=True)
        assert p.returncode == 0, p.stderr
        text = p.stdout.decode("utf-8")
        docs = [json.loads(l) for l in text.splitlines() if l.strip()] if fmt == "json" else [json.loads(text)]
        if fmt == "json":
            assert [r.get("trace_id") for r in docs] == ['a"b\\c??', None, "4bf92f3577b34da6a3ce929d0e0e4736"], docs
            assert [r.get("span_id") for r in docs] == [12345, -1500, "00f067aa0ba902b7"], docs


def as_nobody(argv, **kw):
    return subprocess.Popen(NOBODY + argv, **kw)


def fifo_reader(path, user=True):
    """A reader of a FIFO (as nobody, or root): what it read comes out on its stdout."""
    argv = [PY, "-c", "import sys; sys.stdout.buffer.write(open(sys.argv[1], 'rb').read())", path]
    return (as_nobody if user else subprocess.Popen)(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)


def reader_got(r, wait=5):
    try:
        out, _ = r.communicate(timeout=wait)
    except subprocess.TimeoutExpired:
        r.kill()
        out, _ = r.communicate()
    return out


@test
def test_output_fifo_planted_by_another_user():
    """report --html /tmp/x.html wrote into a FIFO another user had made there: the whole page
    (root's command line, every comm and symbol) went to a reader the user controlled, or the
    report blocked forever without one.  A FIFO, socket or symlink someone else could have put
    there (theirs, in a directory others can write) is replaced, not fed; root's own FIFO, and
    /dev/stdout, are written in place."""
    need_root()
    data = small_recording()
    d = tmpdir()
    os.chmod(d, 0o1777)  # as /tmp
    page = os.path.join(d, "x.html")
    run(NOBODY + ["mkfifo", page], check=True)
    reader = fifo_reader(page)
    time.sleep(0.3)
    try:
        p = spanperf("report", "-i", data, "--html", page, timeout=60)
    except subprocess.TimeoutExpired:
        raise AssertionError("report --html blocked on a FIFO of nobody's")
    finally:
        got = reader_got(reader, wait=2)
    assert got == b"", "nobody's reader got %d bytes of root's page" % len(got)
    assert p.returncode == 0, p.stderr
    st = os.lstat(page)
    assert stat.S_ISREG(st.st_mode) and st.st_uid == 0 and b"<html" in open(page, "rb").read(4096).lower()
    # Without a reader: no hang.  A socket, and a symlink of nobody's to root's own FIFO, alike.
    run(NOBODY + ["mkfifo", os.path.join(d, "y.svg")], check=True)
    run(NOBODY + [PY, "-c", "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])",
                  os.path.join(d, "z.pb.gz")], check=True)
    private = tmpdir()
    root_fifo = os.path.join(private, "root.fifo")
    os.mkfifo(root_fifo)
    run(NOBODY + ["ln", "-s", root_fifo, os.path.join(d, "l.svg")], check=True)
    for flag, name in (("--flamegraph", "y.svg"), ("--pprof", "z.pb.gz"), ("--flamegraph", "l.svg")):
        out = os.path.join(d, name)
        try:
            p = spanperf("report", "-i", data, flag, out, timeout=60)
        except subprocess.TimeoutExpired:
            raise AssertionError("report %s blocked on %s of nobody's" % (flag, name))
        assert p.returncode == 0, p.stderr
        st = os.lstat(out)
        assert stat.S_ISREG(st.st_mode) and st.st_uid == 0 and st.st_size > 0, (name, oct(st.st_mode))
    # root's own FIFO in the world-writable directory, and one in its own: written in place.
    for fifo in (os.path.join(d, "mine.svg"), root_fifo):
        if not os.path.exists(fifo):
            os.mkfifo(fifo)
        reader = fifo_reader(fifo, user=False)
        p = spanperf("report", "-i", data, "--flamegraph", fifo, timeout=60)
        got = reader_got(reader)
        assert p.returncode == 0 and got.startswith(b"<?xml"), (fifo, p.stderr, got[:40])
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@test
def test_output_to_own_stdout_written_in_place():
    """--pprof /dev/stdout with stdout redirected to a file was renamed over the path: the
    symlink itself (as root, /dev/stdout of the whole machine) became the profile, and the
    file stayed empty.  A descriptor of our own is written in place, offset and all."""
    data = small_recording()
    d = tmpdir()
    link = os.path.join(d, "stdout")
    os.symlink("/proc/self/fd/1", link)
    out = os.path.join(d, "out.pb.gz")
    with open(out, "wb") as f:
        f.write(b"x")
        f.flush()
        p = subprocess.run([SPANPERF, "report", "-i", data, "--pprof", link], stdout=f, stderr=subprocess.PIPE)
    assert p.returncode == 0, p.stderr
    assert os.path.islink(link), "the symlink was replaced"
    body = open(out, "rb").read()
    assert body[:1] == b"x" and body[1:3] == b"\x1f\x8b", body[:8]


class FullDisk:
    """A small tmpfs of the test's own, and a filler to make it full on demand."""

    def __init__(self, size="8m"):
        need_root()
        self.dir = tmpdir()
        if run(["mount", "-t", "tmpfs", "-o", "size=%s" % size, "tmpfs", self.dir]).returncode:
            raise Skip("cannot mount a small tmpfs to fill")
        self.filler = os.path.join(self.dir, "filler")
        # Made now, while there is room: a disk the command under test filled first has no room
        # for a new file's inode (an idle clean clone's run: ENOSPC at open).
        open(self.filler, "wb").close()

    def fill(self):
        with open(self.filler, "ab") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass

    def free(self):
        os.unlink(self.filler)

    def files(self, sub=""):
        d = os.path.join(self.dir, sub)
        return sorted(f for f in os.listdir(d) if f != "filler")

    def say(self):
        return "no space left on tmpfs (mounted at %s)" % self.dir

    def umount(self):
        run(["umount", self.dir])


def say_one_line(p, what, disk):
    lines = [l for l in p.stderr.strip().splitlines() if "cycles is not available" not in l]
    assert p.returncode == 1, "%s: exit %d, %s" % (what, p.returncode, p.stderr[-500:])
    assert len(lines) == 1 and disk.say() in lines[0], "%s said: %s" % (what, p.stderr[-500:])


@test
def test_full_disk_named_by_every_output():
    """--html, --speedscope and --spans said "Input/output error" of a full disk (the renderer's
    -EIO for a failed fwrite), and the rest "No space left on device" without saying which: each
    now says "no space left on SOURCE (mounted at POINT)", and leaves nothing behind."""
    need_bpf()
    d = tmpdir()
    data = os.path.join(d, "s.data")
    spanperf("record", "-q", "-g", "--span", "syscall:getppid", "-o", data, "--", WORKLOAD, "getppid", "2000",
             check=True)
    disk = FullDisk("1m")
    try:
        pp = os.path.join(disk.dir, "pp")
        os.mkdir(pp)
        disk.fill()
        for flag in ("--html", "--speedscope", "--flamegraph", "--pprof"):
            out = os.path.join(disk.dir, "out." + flag[2:])
            p = spanperf("report", "-i", data, flag, out)
            say_one_line(p, "report " + flag, disk)
            assert disk.files() == ["pp"], "report %s left %s" % (flag, disk.files())
        # stdout on the full disk: the spans, the table, speedscope to "-".
        for extra in (["--spans", "--format", "json"], ["--spans"], ["--format", "speedscope"], ["-g"]):
            with open(os.path.join(disk.dir, "stdout"), "wb") as f:
                p = subprocess.run([SPANPERF, "report", "-i", data] + extra, stdout=f, stderr=subprocess.PIPE,
                                   text=True)
            say_one_line(p, "report %s > full disk" % " ".join(extra), disk)
            os.unlink(os.path.join(disk.dir, "stdout"))
        # record and stat: -o on the full disk.
        p = spanperf("record", "-d", "0.5", "-o", os.path.join(disk.dir, "r.data"), timeout=60)
        say_one_line(p, "record -o", disk)
        assert disk.files() == ["pp"], disk.files()
        p = spanperf("stat", "-d", "0.5", "-o", os.path.join(disk.dir, "s.txt"), timeout=60)
        say_one_line(p, "stat -o", disk)
        # --pprof-dir on the full disk, the recording elsewhere: each profile lost is said, and it goes on.
        p = spanperf("record", "-F", "99", "--switch-output=1s", "--pprof-dir", pp, "-d", "2.5", "-o",
                     os.path.join(d, "w.data"), timeout=60)
        lost = [l for l in p.stderr.splitlines() if "cannot write %s/" % pp in l]
        assert p.returncode == 0 and lost and all(disk.say() in l for l in lost), p.stderr[-800:]
        assert disk.files() == ["pp"] and disk.files("pp") == [], (disk.files(), disk.files("pp"))
    finally:
        disk.umount()


class Lines:
    """A process's stderr, line by line, waited for with a timeout."""

    def __init__(self, p):
        self.q, self.log = queue.Queue(), []
        threading.Thread(target=self._read, args=(p,), daemon=True).start()

    def _read(self, p):
        for line in p.stderr:
            self.q.put(line)
        self.q.put(None)

    def wait(self, pattern, timeout):
        """The match of the first line matching pattern, or None at EOF or timeout."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.q.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                return None
            if line is None:
                self.q.put(None)
                return None
            self.log.append(line)
            m = re.search(pattern, line)
            if m:
                return m

    def text(self):
        return "".join(self.log)[-1000:]


@test
def test_rotation_drops_windows_on_a_full_disk():
    """--switch-output=1s --switch-max-files 3 on a disk that fills stopped the whole recording.
    A window that does not fit is dropped (nothing of it left, no profile either), said once,
    counted, and the recording goes on once there is room again.  A --pprof-dir profile goes
    with its file, whichever of them could not be written."""
    need_bpf()
    # Room for a few windows of a whole host's recording (its side-band and names) before the filler.
    disk = FullDisk("64m")
    pp = os.path.join(disk.dir, "pp")
    os.mkdir(pp)
    out = os.path.join(disk.dir, "w.data")
    p = subprocess.Popen([SPANPERF, "record", "-F", "99", "--switch-output=1s", "--switch-max-files", "3",
                          "--pprof-dir", pp, "-o", out], stderr=subprocess.PIPE, text=True)
    lines = Lines(p)
    try:
        assert lines.wait(r"dump ", 60), "no window written: %s" % lines.text()
        disk.fill()
        m = lines.wait(r"windows are dropped until there is room", 30)
        assert m, "record did not go on with the disk full: exit %s, %s" % (p.poll(), lines.text())
        assert disk.say() in lines.log[-1], lines.log[-1]
        assert lines.wait(r"dump |has room again", 3) is None, "a window was written on a full disk"
        disk.free()
        assert lines.wait(r"windows dropped; -o .* has room again", 30), lines.text()
        for _ in range(4):  # --switch-max-files' deletions, with their profiles
            assert lines.wait(r"dump ", 30), lines.text()
        p.send_signal(signal.SIGINT)
        assert p.wait(timeout=60) == 0, lines.text()
        m = lines.wait(r"(\d+) windows dropped \(disk full\)", 10)
        assert m and int(m.group(1)) >= 2, lines.text()
        files = disk.files()
        datas = [f for f in files if f.startswith("w.data.")]
        assert files == ["pp"] + datas and len(datas) == 3, files
        for f in datas:
            assert spanperf("report", "-i", os.path.join(disk.dir, f)).returncode == 0
        profiles = sorted(disk.files("pp"))
        assert profiles and all(f[:-len(".pb.gz")] in datas for f in profiles), (profiles, datas)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        disk.umount()
