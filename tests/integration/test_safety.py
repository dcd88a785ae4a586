# SPDX-License-Identifier: GPL-2.0
"""Root must not be steered (issue 21): each test plays the attack of one finding, as an
unprivileged user (setpriv to nobody) or from a container (a private mount namespace with a
tmpfs), against files it makes at test time, and checks what root did: which files it opened
(inotify sees every open, and a FIFO or device stands in for /dev/watchdog), what it wrote,
how long it took to stop."""
import ctypes
import os
import re
import shutil
import signal
import stat
import struct
import subprocess
import sys
import time

from harness import (SPANPERF, WORKLOAD, Skip, json_lines, need_bpf, need_root, perf_clean, run, spanperf, test, tmpdir)

NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
SLEEP = shutil.which("sleep")
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else shutil.which("python3")

_libc = ctypes.CDLL(None, use_errno=True)
IN_OPEN = 0x20


FAN_CLASS_NOTIF, FAN_NONBLOCK, FAN_REPORT_FID, FAN_MARK_ADD, FAN_OPEN = 0, 2, 0x200, 1, 0x20


class OpenWatch:
    """Every open of a file and who made it (fanotify): FIFOs and device nodes included, and
    never triggered by an O_PATH look at it.  By pid, since other recorders on a shared host
    may open it too."""

    def __init__(self, path):
        self.fd = _libc.fanotify_init(FAN_CLASS_NOTIF | FAN_NONBLOCK | FAN_REPORT_FID, os.O_RDONLY)
        assert self.fd >= 0, "fanotify_init: %s" % os.strerror(ctypes.get_errno())
        _libc.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p]
        assert _libc.fanotify_mark(self.fd, FAN_MARK_ADD, FAN_OPEN, -100, path.encode()) == 0, path
        self.path = path
        self.pids = []

    def _read(self):
        while True:
            try:
                buf = os.read(self.fd, 65536)
            except BlockingIOError:
                return
            off = 0
            while off + 24 <= len(buf):
                ln, _, _, _, _, _, pid = struct.unpack_from("<IBBHQii", buf, off)
                self.pids.append(pid)
                off += ln or 24

    def opened(self, by=None):
        """Whether pid by (or anyone, by None) opened it since the watch began."""
        self._read()
        return any(by is None or p == by for p in self.pids)

    def close(self):
        os.close(self.fd)


FAN_CLASS_CONTENT, FAN_OPEN_PERM, FAN_ALLOW, FAN_CLOEXEC = 4, 0x10000, 1, 1


def lineage(pid):
    """pid and its ancestors, as "PID COMM" strings, up to pid 1 or one that is gone."""
    out = []
    while pid > 1 and len(out) < 64:
        try:
            comm = open("/proc/%d/comm" % pid).read().strip()
            ppid = int(re.search(r"^PPid:\s*(\d+)", open("/proc/%d/status" % pid).read(), re.M).group(1))
        except (OSError, AttributeError, ValueError):
            out.append("%d ?" % pid)
            break
        out.append("%d %s" % (pid, comm))
        pid = ppid
    return out


class OpenersWatch:
    """Every open of a file, each opener named with its ancestors.  With FAN_OPEN_PERM the opener
    waits inside open() until a thread here has read its /proc entries and allowed it, so a child
    that opens and exits at once is still seen as a child (closing the watch allows whatever still
    waits).  Whole-host profilers other than a test's own (another test's perf record -a, a
    spanperf agent of another suite on a shared host) may open the file too, through the same
    link: a test holds only its own process and its descendants to the rule, by opened_by."""

    def __init__(self, path):
        import threading
        self.perm = True
        self.fd = _libc.fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC, os.O_RDONLY)
        mask = FAN_OPEN_PERM
        if self.fd < 0:  # a kernel without permission events: openers named while they live
            self.perm, mask = False, FAN_OPEN
            self.fd = _libc.fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC, os.O_RDONLY)
        assert self.fd >= 0, "fanotify_init: %s" % os.strerror(ctypes.get_errno())
        _libc.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p]
        assert _libc.fanotify_mark(self.fd, FAN_MARK_ADD, mask, -100, path.encode()) == 0, path
        self.path = path
        self.openers = []  # lineage of each open, the opener first
        self.done = False
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        import select
        while not self.done:
            if not select.select([self.fd], [], [], 0.05)[0]:
                continue
            try:
                buf = os.read(self.fd, 65536)
            except OSError:
                return
            off = 0
            while off + 24 <= len(buf):
                ln, _, _, _, _, fd, pid = struct.unpack_from("<IBBHQii", buf, off)
                try:
                    self.openers.append(lineage(pid))
                finally:
                    if self.perm:
                        os.write(self.fd, struct.pack("<iI", fd, FAN_ALLOW))
                    if fd >= 0:
                        os.close(fd)
                off += ln or 24

    def close(self):
        self.done = True
        self.thread.join()
        os.close(self.fd)

    def opened_by(self, root):
        """The opens made by root or a descendant of it, each as its lineage."""
        return [l for l in self.openers if any(e.split()[0] == str(root) for e in l)]

    def named(self, opens):
        return "; ".join(" <- ".join(l) for l in opens) or "none"


def world_dir():
    d = tmpdir()
    os.chmod(d, 0o755)
    return d


def wait_for(pred, timeout=10):
    t = time.monotonic() + timeout
    while time.monotonic() < t:
        if pred():
            return True
        time.sleep(0.02)
    return False


def stop(p):
    if p.poll() is None:
        p.kill()
    p.wait()


def record_host(out, *extra, env=None, timeout=60):
    """record -d 0.5 of the whole host: (CompletedProcess-like, its pid)."""
    p = subprocess.Popen([SPANPERF, "record", "-q", "-d", "0.5", "-o", out] + list(extra), env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    out_, err = p.communicate(timeout=timeout)
    return subprocess.CompletedProcess(p.args, p.returncode, out_, err), p.pid


def report_pid(*args, env=None, timeout=60):
    p = subprocess.Popen([SPANPERF, "report"] + list(args), env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    p.wait(timeout)
    return p.pid


def mapped_by(pid, needle):
    try:
        return needle in open("/proc/%d/maps" % pid, "rb").read()
    except OSError:
        return False


# ---- 1. a mapping's name never opens a device on the host ----

@test
def test_maps_line_split_by_escaped_newlines():
    """A path of escaped newlines (\\012, 4 bytes each) made /proc/PID/maps lines longer than
    record's buffer; the tail, which the user wrote, was read as a mapping of its own and root
    opened what it named (here a FIFO standing in for /dev/watchdog)."""
    need_bpf()
    d = world_dir()
    target = os.path.join(d, "watchdog")
    os.mkfifo(target, 0o600)
    forged = "\n7f0000000000-7f0000010000 r-xp 00000000 00:00 4242 "
    base = os.path.join(d, "u")
    os.mkdir(base)
    deep = [base] + ["\n" * 250] * 4
    dirs = deep + ["pad", forged] + target.lstrip("/").split("/")[:-1]
    path = os.path.join(*dirs)
    os.makedirs(path)
    exe = os.path.join(path, os.path.basename(target))
    shutil.copy(SLEEP, exe)
    run(["chown", "-R", "nobody:nogroup", base])
    watch = OpenWatch(target)
    p = subprocess.Popen(NOBODY + [exe, "30"], cwd="/")
    try:
        assert wait_for(lambda: mapped_by(p.pid, b"4242 /")), "the mapping did not show"
        # Place the forged line where a PATH_MAX + 128 buffer ends: rename the pad directory.
        maps = open("/proc/%d/maps" % p.pid, "rb").read().split(b"\n")
        line = [l for l in maps if b"4242 /" in l and b"r-xp" in l[:40]][0]
        at = line.index(b"\\0127f0000000000") + 4
        want = 4096 + 128 - 1
        pad_old = os.path.join(*deep, "pad")
        grow = want - at
        assert grow > -2, "the line is too long already (%d)" % at
        os.rename(pad_old, os.path.join(*deep, "p" * (3 + grow)))
        out = os.path.join(tmpdir(), "m.data")
        r, rec = record_host(out)
        assert r.returncode == 0, r.stderr
        rep = report_pid("-i", out, "--sort", "dso")
        assert not watch.opened(rec), "record opened %s, named by a forged maps line" % target
        assert not watch.opened(rep), "report opened %s, named by a forged maps line" % target
        # The mapping's real name may be in the recording, newlines and all, as the kernel's own MMAP2
        # events carry it (PROCMAP_QUERY gives it whole: cdfa040), and it ends with the target's path;
        # never a mapping of its own at the forged address, nor one named the target.
        if shutil.which("perf"):
            mm = re.findall(r"PERF_RECORD_MMAP2 -?\d+/-?\d+: \[(0x[0-9a-f]+)\(.*?\]: \S+ ([^\n]*)",
                            run(["perf", "script", "-i", out, "--show-mmap-events"]).stdout)
            assert mm, "perf script showed no MMAP2 of %s" % out
            forged_maps = [m for m in mm if int(m[0], 16) == 0x7f0000000000 or m[1] == target]
            assert not forged_maps, "the forged mapping is in the recording: %s" % forged_maps
        else:
            data = open(out, "rb").read()
            assert target.encode() not in data.replace(b"4242 " + target.encode(), b""), \
                "the forged mapping is in the recording"
    finally:
        stop(p)
        watch.close()


def in_container(d, script, *args):
    """Runs sh script in a private mount namespace with a fresh tmpfs on d/ns (the host sees
    what lies under it, the process what lies in it), as nobody after the mounts."""
    ns = os.path.join(d, "ns")
    return subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c",
                             "mount -t tmpfs -o mode=0755 c %s && chown nobody:nogroup %s && %s"
                             % (ns, ns, script)] + list(args), cwd="/")


@test
def test_container_name_is_a_host_fifo():
    """A container's process maps /ns/lib.so; on the host that name is a FIFO (a device
    stands in the same way).  record, at start and at finish, and report opened the host's."""
    need_bpf()
    d = world_dir()
    ns = os.path.join(d, "ns")
    os.mkdir(ns)
    host = os.path.join(ns, "lib.so")
    os.mkfifo(host, 0o600)
    watch = OpenWatch(host)
    home = tmpdir()
    env = dict(os.environ, HOME=home, XDG_CACHE_HOME=os.path.join(home, "cache"))
    p = in_container(d, 'cp %s %s/lib.so && exec setpriv --reuid=nobody --regid=nogroup --clear-groups '
                     '%s/lib.so 30' % (SLEEP, ns, ns))
    try:
        assert wait_for(lambda: any(mapped_by(c, host.encode()) for c in children(p.pid))), "no mapping"
        out = os.path.join(tmpdir(), "c.data")
        r, rec = record_host(out, env=env)
        assert r.returncode == 0, r.stderr
        rep = report_pid("-i", out, "--sort", "dso", env=env)
        assert not watch.opened(rec), "record opened the host's %s, named by a container's mapping" % host
        assert not watch.opened(rep), "report opened the host's %s, named by a container's mapping" % host
    finally:
        stop(p)
        watch.close()


def children(pid):
    """pid and its descendants (unshare forks the shell that execs the target)."""
    out = [pid]
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            for c in open("/proc/%d/task/%s/children" % (pid, t)).read().split():
                out += children(int(c))
    except OSError:
        pass
    return out


# ---- 2. record --otel: a container's symlink never leads to the host ----

@test
def test_otel_deleted_symlink_to_host_fifo():
    """A container maps lib.so, deletes it and puts a symlink named "lib.so (deleted)" in its
    place, pointing at a path only the host has (a FIFO).  record --otel opened
    /proc/PID/root + that name with a blocking open: the recording hung and was lost."""
    need_bpf()
    d = world_dir()
    ns = os.path.join(d, "ns")
    os.mkdir(ns)
    hostonly = os.path.join(d, "hostonly")
    os.mkdir(hostonly)
    fifo = os.path.join(hostonly, "fifo")
    os.mkfifo(fifo, 0o600)
    watch = OpenWatch(fifo)
    code = ("import mmap,os,time\n"
            "p='%s/lib.so'\n"
            "f=open(p,'rb'); m=mmap.mmap(f.fileno(),0,prot=mmap.PROT_READ|mmap.PROT_EXEC)\n"
            "os.unlink(p); os.symlink('%s', p+' (deleted)')\n"
            "time.sleep(30)\n") % (ns, fifo)
    # The container hides the host's hostonly/ under a tmpfs of its own.
    p = in_container(d, "mount -t tmpfs h %s && cp %s %s/lib.so && exec %s /usr/bin/python3 -c \"$0\""
                     % (hostonly, SLEEP, ns, " ".join(NOBODY)), code)
    try:
        assert wait_for(lambda: any(mapped_by(c, b"lib.so (deleted)") for c in children(p.pid))), "no mapping"
        out = os.path.join(tmpdir(), "o.data")
        try:
            r, rec = record_host(out, "--otel", timeout=20)
        except subprocess.TimeoutExpired:
            raise AssertionError("record --otel hung on a container's symlink to a host FIFO")
        assert r.returncode == 0, r.stderr
        assert not watch.opened(rec), "record opened the host's %s through a container's symlink" % fifo
    finally:
        stop(p)
        watch.close()


# ---- 3. the copy of a deleted, growing executable is bounded ----

@test
def test_deleted_growing_executable_copy_bounded():
    """A process maps an executable, deletes it and grows it (sparse, so it costs nothing):
    record's cache copy read to EOF, far past its 512 MiB bound, while the rings overflowed."""
    need_bpf()
    d = world_dir()
    cache = tmpdir()
    if run(["mount", "-t", "tmpfs", "-o", "size=900m", "tmpfs", cache]).returncode:
        raise Skip("cannot mount a tmpfs for the cache")
    exe = os.path.join(d, "grow")
    shutil.copy(SLEEP, exe)
    os.chown(exe, 65534, 65534)
    os.chown(d, 65534, 65534)
    code = ("import mmap,os,time\n"
            "p='%s'\n"
            "f=open(p,'r+b'); n=200<<20; os.ftruncate(f.fileno(),n)\n"
            "m=mmap.mmap(f.fileno(),0,prot=mmap.PROT_READ|mmap.PROT_EXEC); os.unlink(p)\n"
            "print('ready',flush=True); input()\n"
            "for i in range(4000):\n"
            "    n+=16<<20; os.ftruncate(f.fileno(),n)\n"
            "time.sleep(30)\n") % exe
    # It grows the file once the copy has begun (the test tells it: the cache is root's).
    p = subprocess.Popen(NOBODY + [PY, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, errors="replace",
                         cwd="/")
    biggest = [0]
    told = False
    try:
        assert p.stdout.readline().strip() == "ready"
        env = dict(os.environ, HOME=cache, XDG_CACHE_HOME=cache)
        out = os.path.join(tmpdir(), "g.data")
        rec = subprocess.Popen([SPANPERF, "record", "-q", "-d", "1", "-o", out], env=env,
                               stderr=subprocess.PIPE, text=True, errors="replace")
        t = time.monotonic()
        while rec.poll() is None and time.monotonic() - t < 60:
            for root, _, files in os.walk(cache):
                for f in files:
                    try:
                        biggest[0] = max(biggest[0], os.stat(os.path.join(root, f)).st_size)
                    except OSError:
                        pass
                    if "buildid" in root and not told:
                        p.stdin.write("go\n")
                        p.stdin.flush()
                        told = True
            time.sleep(0.002)
        if rec.poll() is None:
            rec.send_signal(signal.SIGINT)
            try:
                rec.wait(5)
            except subprocess.TimeoutExpired:
                stop(rec)
                raise AssertionError("record copied for 60 s and ignored SIGINT (%d bytes)" % biggest[0])
        assert biggest[0] <= 512 << 20, "the cache copy reached %d MiB" % (biggest[0] >> 20)
        assert rec.returncode == 0, rec.stderr.read()
    finally:
        stop(p)
        run(["umount", "-l", cache])


# ---- 4. outputs: special files are written in place, directories refused ----

@test
def test_output_char_device_kept():
    """record -o /dev/null moved /dev/null to /dev/null.old and left a root-only regular file
    there.  Played on a null device node of our own, on a tmpfs that allows devices."""
    need_bpf()
    d = tmpdir()
    if run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", d]).returncode:
        raise Skip("cannot mount a tmpfs")
    try:
        null = os.path.join(d, "null")
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        r = spanperf("record", "-q", "-d", "0.2", "-o", null, timeout=60)
        assert r.returncode == 0, r.stderr
        st = os.lstat(null)
        assert stat.S_ISCHR(st.st_mode), "-o %s replaced the device with mode %o" % (null, st.st_mode)
        assert sorted(os.listdir(d)) == ["null"], os.listdir(d)
    finally:
        run(["umount", "-l", d])


def base_recording():
    need_bpf()
    d = tmpdir()
    out = os.path.join(d, "b.data")
    spanperf("record", "-q", "-g", "-o", out, "--", WORKLOAD, "spin", "200", check=True)
    return out


@test
def test_output_symlink_to_pipe_written_in_place():
    """--pprof /dev/stdout replaced the symlink and sent nothing down the pipe (a symlink of
    our own to /proc/self/fd/1 stands in for /dev/stdout)."""
    data = base_recording()
    d = tmpdir()
    link = os.path.join(d, "stdout")
    os.symlink("/proc/self/fd/1", link)
    p = subprocess.run([SPANPERF, "report", "-i", data, "--pprof", link, "-q"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    assert p.returncode == 0, p.stderr
    assert os.path.islink(link), "the symlink was replaced"
    assert len(p.stdout) > 100 and p.stdout[:1] == b"\x1f", "nothing came down the pipe (%d bytes)" % len(p.stdout)


@test
def test_output_directory_refused():
    """-o DIR moved the directory to DIR.old."""
    need_bpf()
    d = tmpdir()
    target = os.path.join(d, "dir")
    os.mkdir(target)
    open(os.path.join(target, "keep"), "w").write("x")
    r = spanperf("record", "-q", "-d", "0.2", "-o", target, timeout=60)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1 and target in lines[0], (r.returncode, r.stderr)
    assert os.path.isdir(target) and os.listdir(target) == ["keep"] and sorted(os.listdir(d)) == ["dir"], \
        os.listdir(d)
    data = base_recording()
    r = spanperf("report", "-i", data, "--pprof", target)
    assert r.returncode == 1 and target in r.stderr and os.listdir(target) == ["keep"], r.stderr


@test
def test_outputs_honour_umask():
    """Report outputs were forced to 0644 whatever the umask."""
    data = base_recording()
    d = tmpdir()
    out = os.path.join(d, "p.pb.gz")
    p = subprocess.run([SPANPERF, "report", "-i", data, "--pprof", out, "-q"], capture_output=True,
                       preexec_fn=lambda: os.umask(0o077), timeout=60)
    assert p.returncode == 0, p.stderr
    mode = stat.S_IMODE(os.stat(out).st_mode)
    assert mode & 0o077 == 0, "umask 077 gave mode %o" % mode


@test
def test_stat_output_symlink_not_followed():
    """stat -o wrote through a symlink, in place: a symlink planted at the output's name
    steered root's write to any file."""
    need_bpf()
    d = tmpdir()
    victim = os.path.join(d, "victim")
    open(victim, "w").write("precious\n")
    link = os.path.join(d, "out.txt")
    os.symlink(victim, link)
    r = spanperf("stat", "-e", "task-clock", "-d", "0.2", "-o", link, timeout=60)
    assert r.returncode == 0, r.stderr
    assert open(victim).read() == "precious\n", "stat -o wrote through the symlink"
    assert "task-clock" in open(link).read()


# ---- 5. the cache: a planted file is never used, perf's ~/.debug is opt-in ----

def libc_path():
    for l in open("/proc/self/maps"):
        f = l.split()
        if len(f) >= 6 and "/libc.so" in f[5] and "x" in f[1]:
            return f[5]
    raise Skip("no libc mapped")


def build_id(path):
    out = run(["readelf", "-n", path]).stdout
    for l in out.splitlines():
        if "Build ID:" in l:
            return l.split(":")[1].strip()
    raise Skip("%s has no build id" % path)


def cache_entries(cache, hexid):
    """record's copies under build id hexid: BUILD-ID.SHA256 (and BUILD-ID, as kept before digests)."""
    d = os.path.join(cache, "spanperf", "buildid")
    names = os.listdir(d) if os.path.isdir(d) else []
    return [os.path.join(d, n) for n in names if n == hexid or re.fullmatch(re.escape(hexid) + r"\.[0-9a-f]{64}", n)]


def ctr_rows(out, pids, env, *extra):
    """report's rows (--sort pid,comm,dso,sym) of the processes pids, as "... ctr-wl ctr-wl [.] SYM".
    A whole-host recording holds every ctr-wl on the host: another suite's container test
    (a workload of another build, copied and named rightly by its own bytes) is not this one's."""
    r = spanperf("report", *extra, "-i", out, "--sort", "pid,comm,dso,sym", env=env, check=True)
    rows = [l for l in r.stdout.splitlines() if re.match(r"^\s*\S+%\s+\d+\s+(\d+)\s", l) and
            int(re.match(r"^\s*\S+%\s+\d+\s+(\d+)\s", l).group(1)) in pids]
    return rows, r


def ctr_pids(p, needle):
    """The processes under p that map needle (the container's binary)."""
    return {c for c in children(p.pid) if mapped_by(c, needle)}


def forge_build_id(src, hexid, dest):
    """A copy of the binary src whose build-id note says hexid."""
    img = bytearray(open(src, "rb").read())
    mine = bytes.fromhex(build_id(src))
    at = img.find(mine)
    assert at > 0 and len(mine) == len(bytes.fromhex(hexid))
    img[at:at + len(mine)] = bytes.fromhex(hexid)
    open(dest, "wb").write(bytes(img))
    os.chmod(dest, 0o755)


@test
def test_planted_cache_entry_not_used():
    """A file planted under host libc's build id in perf's ~/.debug and in spanperf's cache
    replaced libc's symbols in later reports; the first file under an id won forever and its
    bytes were never checked.  Here a container's file carries a forged note with libc's id."""
    need_bpf()
    libc = libc_path()
    hexid = build_id(libc)
    d = world_dir()
    ns = os.path.join(d, "ns")
    os.mkdir(ns)
    # sleep with its build-id note rewritten to libc's id.
    img = bytearray(open(SLEEP, "rb").read())
    mine = bytes.fromhex(build_id(SLEEP))
    at = img.find(mine)
    assert at > 0 and len(mine) == len(bytes.fromhex(hexid))
    img[at:at + len(mine)] = bytes.fromhex(hexid)
    forged = os.path.join(d, "forged")
    open(forged, "wb").write(bytes(img))
    os.chmod(forged, 0o755)
    home = tmpdir()
    env = dict(os.environ, HOME=home, XDG_CACHE_HOME=os.path.join(home, "cache"))
    p = in_container(d, "cp %s %s/lib.so && exec %s %s/lib.so 30" % (forged, ns, " ".join(NOBODY), ns))
    try:
        assert wait_for(lambda: any(mapped_by(c, b"/ns/lib.so") for c in children(p.pid))), "no mapping"
        out = os.path.join(tmpdir(), "p.data")
        r, _ = record_host(out, env=env)
        assert r.returncode == 0, r.stderr
        link = os.path.join(home, ".debug", ".build-id", hexid[:2], hexid[2:])
        assert not os.path.lexists(link), "a container's file entered perf's ~/.debug under libc's id"
        for entry in cache_entries(os.path.join(home, "cache"), hexid):
            assert open(entry, "rb").read() == open(libc, "rb").read(), \
                "a container's file is kept under host libc's build id"
    finally:
        stop(p)


@test
def test_swapped_cache_entry_not_read():
    """report read whatever file sat under a build id in the cache, its bytes never checked:
    swapped for another binary, it named a container's frames from that binary."""
    need_bpf()
    d = world_dir()
    ns = os.path.join(d, "ns")
    os.mkdir(ns)
    home = tmpdir()
    env = dict(os.environ, HOME=home, XDG_CACHE_HOME=os.path.join(home, "cache"))
    p = in_container(d, "cp %s %s/ctr-wl && exec %s/ctr-wl spin 3000" % (WORKLOAD, ns, ns))
    try:
        assert wait_for(lambda: ctr_pids(p, b"/ns/ctr-wl")), "no mapping"
        pids = ctr_pids(p, b"/ns/ctr-wl")
        out = os.path.join(tmpdir(), "s.data")
        r, _ = record_host(out, env=env)
        assert r.returncode == 0, r.stderr
    finally:
        stop(p)
    entries = cache_entries(os.path.join(home, "cache"), build_id(WORKLOAD))
    assert entries, "record kept no copy"
    entry = entries[0]
    named = lambda: [l for l in ctr_rows(out, pids, env)[0] if " ctr-wl " in l and "spin_" in l]
    assert named(), "the kept copy does not name the container's frames"
    other = os.path.join(os.path.dirname(WORKLOAD), "workload_cxx")
    if not os.path.exists(other):
        raise Skip("no second binary to swap in (build/tests/workload_cxx)")
    shutil.copyfile(other, entry)
    rows = ctr_rows(out, pids, env)[0]
    wrong = [l for l in rows if re.search(r"\sctr-wl\s+ctr-wl\s+\[\.\]", l) and
             not re.search(r"\[\.\] (0x[0-9a-f]+|\[unknown\])\s*$", l)]
    assert not wrong, "frames named from a file swapped in under the build id: %s" % wrong[:5]


@test
def test_cache_entry_planted_first_wins_nothing():
    """A container's user runs a file that claims the build id of a binary no host file has
    (another container's); record keeps it under that id.  The first file under an id won
    forever: a later recording of the genuine binary made no copy of its own, and its report
    named the genuine frames from the planted file.  Now each recording names the bytes it
    copied (SHA-256, kept in the perf.data) and report uses only those."""
    need_bpf()
    d = world_dir()
    ns = os.path.join(d, "ns")
    os.mkdir(ns)
    wid = build_id(WORKLOAD)
    forged = os.path.join(d, "forged")
    forge_build_id(SLEEP, wid, forged)
    home = tmpdir()
    env = dict(os.environ, HOME=home, XDG_CACHE_HOME=os.path.join(home, "cache"))
    # The attacker first: a container's nobody runs the forged file while root records.
    p = in_container(d, "cp %s %s/ctr-wl && exec %s %s/ctr-wl 30" % (forged, ns, " ".join(NOBODY), ns))
    try:
        assert wait_for(lambda: any(mapped_by(c, b"/ns/ctr-wl") for c in children(p.pid))), "no mapping"
        r, _ = record_host(os.path.join(tmpdir(), "planted.data"), env=env)
        assert r.returncode == 0, r.stderr
    finally:
        stop(p)
    planted = cache_entries(os.path.join(home, "cache"), wid)
    assert planted and all(open(e, "rb").read() == open(forged, "rb").read() for e in planted), \
        "the forged file was not kept: the attack did not take place (%s)" % planted
    # Then the genuine binary, in another container.
    out = os.path.join(tmpdir(), "genuine.data")
    p = in_container(d, "cp %s %s/ctr-wl && exec %s/ctr-wl spin 3000" % (WORKLOAD, ns, ns))
    try:
        assert wait_for(lambda: ctr_pids(p, b"/ns/ctr-wl")), "no mapping"
        pids = ctr_pids(p, b"/ns/ctr-wl")
        r, _ = record_host(out, env=env)
        assert r.returncode == 0, r.stderr
    finally:
        stop(p)
    rows, _ = ctr_rows(out, pids, env)
    mine = [l for l in rows if re.search(r"\sctr-wl\s+ctr-wl\s+\[\.\]", l)]
    assert mine, "no samples of the genuine container's binary:\n%s" % "\n".join(rows[:20])
    assert any(re.search(r"\[\.\] spin_", l) for l in mine), \
        "the genuine binary's frames are not named from its own bytes (the planted file won): %s" % mine[:5]
    # perf 6.1 reads the file, digests and all, without a word.
    perf_clean(["report", "--stdio"], out)
    perf_clean(["script"], out)
    # Both stand side by side; the planted one is still there, and not used.
    entries = cache_entries(os.path.join(home, "cache"), wid)
    assert any(open(e, "rb").read() == open(WORKLOAD, "rb").read() for e in entries), entries
    # Its bytes swapped for the planted file's: counted by report -v, never used.
    genuine = [e for e in entries if open(e, "rb").read() == open(WORKLOAD, "rb").read()][0]
    shutil.copyfile(forged, genuine)
    rows, r = ctr_rows(out, pids, env, "-v")
    named = [l for l in rows if re.search(r"\sctr-wl\s+ctr-wl\s+\[\.\] spin_", l)]
    assert not named, "frames named from bytes the recording did not copy: %s" % named[:5]
    m = re.search(r"(\d+) entries there not used as their bytes are not those the recording copied", r.stderr)
    assert m and int(m.group(1)) >= 1, r.stderr[-1500:]


@test
def test_two_files_claiming_one_build_id_in_one_recording():
    """The forged file and the genuine one under one build id, both mapped while one recording
    runs: whichever was seen first named the other's frames.  Now both are copied, and as
    their bytes differ the recording relies on neither (record -v counts it): the genuine
    frames are left unnamed rather than named from the forged file."""
    need_bpf()
    d = world_dir()
    wid = build_id(WORKLOAD)
    forged = os.path.join(d, "forged")
    forge_build_id(SLEEP, wid, forged)
    home = tmpdir()
    env = dict(os.environ, HOME=home, XDG_CACHE_HOME=os.path.join(home, "cache"))
    os.mkdir(os.path.join(d, "a"))
    os.mkdir(os.path.join(d, "b"))
    os.mkdir(os.path.join(d, "a", "ns"))
    os.mkdir(os.path.join(d, "b", "ns"))
    pa = in_container(os.path.join(d, "a"), "cp %s %s/a/ns/ctr-wl && exec %s %s/a/ns/ctr-wl 30"
                      % (forged, d, " ".join(NOBODY), d))
    pb = in_container(os.path.join(d, "b"), "cp %s %s/b/ns/ctr-wl && exec %s/b/ns/ctr-wl spin 3000" % (WORKLOAD, d, d))
    try:
        pids = set()
        for p, dd in ((pa, "a"), (pb, "b")):
            needle = ("/%s/ns/ctr-wl" % dd).encode()
            assert wait_for(lambda: ctr_pids(p, needle)), "no mapping in " + dd
            pids |= ctr_pids(p, needle)
        out = os.path.join(tmpdir(), "both.data")
        r, _ = record_host(out, "-v", env=env)
        assert r.returncode == 0, r.stderr
    finally:
        stop(pa)
        stop(pb)
    m = re.search(r"(\d+) build ids left without a copy as files of different bytes claimed them", r.stderr)
    assert m and int(m.group(1)) >= 1, r.stderr[-1200:]
    # This test's own two processes only: another suite's ctr-wl on the host (test_otel_out's, a
    # workload of another build) is named rightly by its own bytes, and was once taken for this one.
    rows, _ = ctr_rows(out, pids, env)
    mine = [l for l in rows if re.search(r"\sctr-wl\s+ctr-wl\s+\[\.\]", l)]
    assert mine, "no samples of the genuine container's binary"
    named = [l for l in mine if not re.search(r"\[\.\] (0x[0-9a-f]+|\[unknown\])\s*$", l)]
    assert not named, "frames named from a file that claims the same build id: %s" % named[:5]


# ---- 6. /tmp/perf-PID.map: perf's owner rule, never a blocking open ----

@test
def test_perf_map_of_another_user_or_fifo():
    """/tmp/perf-PID.map had no owner check (perf ignores files not the user's or root's) and
    a blocking open: a FIFO there hung report for over 10 minutes."""
    need_bpf()
    d = tmpdir()
    out = os.path.join(d, "j.data")
    r = spanperf("record", "-q", "-o", out, "--", WORKLOAD, "jit", "300", timeout=60)
    assert r.returncode == 0, r.stderr
    pids = set(int(m.group(1)) for m in re.finditer(r"/tmp/perf-(\d+)\.map", r.stdout))
    if not pids:
        raise Skip("the jit workload named no perf map")
    pid = pids.pop()
    mp = "/tmp/perf-%d.map" % pid
    saved = open(mp).read() if os.path.exists(mp) else None
    try:
        if os.path.lexists(mp):
            os.unlink(mp)
        # Another user's file: its names are not used.
        assert saved, "the workload left no %s" % mp
        open(mp, "w").write("".join(" ".join(l.split()[:2]) + " INJECTED_BY_NOBODY\n"
                                    for l in saved.splitlines() if len(l.split()) >= 3))
        assert "INJECTED_BY_NOBODY" in spanperf("report", "-i", out, "--sort", "sym", check=True).stdout, \
            "the file's names are not used even when it is root's"
        os.chown(mp, 65534, 65534)
        r = spanperf("report", "-i", out, "--sort", "sym", timeout=30)
        assert r.returncode == 0 and "INJECTED_BY_NOBODY" not in r.stdout, "names from a %s of nobody's were used" % mp
        os.unlink(mp)
        os.mkfifo(mp, 0o666)
        try:
            r = spanperf("report", "-i", out, "--sort", "sym", timeout=10)
        except subprocess.TimeoutExpired:
            raise AssertionError("a FIFO at %s hung report" % mp)
        assert r.returncode == 0, r.stderr
    finally:
        if os.path.lexists(mp):
            os.unlink(mp)
        if saved is not None:
            open(mp, "w").write(saved)


CTR_WL = "/mnt/ctr-jit"


def container_jit(d, prepare=None):
    """A JIT in a container of its own (mount and pid namespaces, its own /tmp): the workload
    runs code copied to anonymous memory and names it in /tmp/perf-1.map, its pid there.
    prepare(map_path_seen_from_the_host) changes that file before the recording.  Returns
    report's rows (--sort sym) of a whole-host recording, read after the container is gone,
    and the recorder's stderr (-v)."""
    # The workload is copied to the container's own /mnt first: its /tmp hides the host's, where
    # a clone of this repository may well live (CI's does).
    p = subprocess.Popen(["unshare", "-m", "-p", "-f", "--kill-child", "--mount-proc", "--propagation", "private", "sh", "-c",
                          "mount -t tmpfs t /mnt && cp %s %s && mount -t tmpfs -o mode=1777 t /tmp && exec %s jit 60000"
                          % (WORKLOAD, CTR_WL, CTR_WL)],
                         cwd="/", stdout=subprocess.DEVNULL)
    try:
        def jit_pid():
            for c in children(p.pid):
                try:
                    if open("/proc/%d/cmdline" % c, "rb").read().startswith(CTR_WL.encode() + b"\0jit"):
                        return c
                except OSError:
                    pass
        assert wait_for(lambda: jit_pid() and os.path.exists("/proc/%d/root/tmp/perf-1.map" % jit_pid())), \
            "the JIT wrote no map"
        pid = jit_pid()
        # A host map under this pid is a dead process's (a JIT or node run earlier on this host had
        # the pid then): it means nothing now, and the container's must be the only one.
        if os.path.exists("/tmp/perf-%d.map" % pid):
            os.unlink("/tmp/perf-%d.map" % pid)
        assert os.path.exists("/proc/%d/root/tmp/perf-1.map" % pid), "the container's map is gone"
        if prepare:
            prepare("/proc/%d/root/tmp/perf-1.map" % pid)
        out = os.path.join(tmpdir(), "jit.data")
        try:
            r, rec = record_host(out, "-v", timeout=30)
        except subprocess.TimeoutExpired:
            raise AssertionError("record hung on a container's /tmp/perf-1.map")
        assert r.returncode == 0, r.stderr
    finally:
        stop(p)
    assert wait_for(lambda: not os.path.exists("/proc/%d" % pid)), "the container outlived its kill"
    rows = spanperf("report", "-i", out, "--sort", "pid,sym", timeout=60, check=True).stdout
    mine = [l for l in rows.splitlines() if re.search(r"^\s*\S+%%\s+\d+\s+%d\s" % pid, l)]
    return mine, r.stderr, out


@test
def test_container_jit_named_from_its_own_tmp():
    """A containerised JIT writes /tmp/perf-PID.map in the container's /tmp, under its pid in
    its own pid namespace.  report looked for /tmp/perf-HOSTPID.map on the host, where there
    is none: its code was never named.  Now record reads the file inside the process's root
    (perf's owner rule, no symlink, no FIFO) while it runs, and keeps the text with the
    recording, so report names the code after the container is gone."""
    need_bpf()
    mine, err, out = container_jit(tmpdir())
    assert mine, "no samples of the JIT process"
    assert any("jitted_loop" in l for l in mine), "the JIT's code is not named: %s\n%s" % (mine[:5], err[-800:])
    perf_clean(["report", "--stdio"], out)
    perf_clean(["script"], out)


@test
def test_container_jit_map_read_at_its_exit():
    """A containerised JIT that names its code in its last moment and exits: its root is gone
    by the time its EXIT is seen, and the once-a-second read had found no map yet, so its code
    went unnamed.  record holds the container's /tmp from its first read of the process and
    reads the map once more at its exit."""
    need_bpf()
    out = os.path.join(tmpdir(), "exit.data")
    rec = subprocess.Popen([SPANPERF, "record", "-v", "-o", out], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, errors="replace")
    try:
        time.sleep(2)
        # The shell waits for a line before it execs the JIT, so that its host pid is known while
        # it is surely alive: the recording is the whole host's, where another run's ctr-jit (a
        # suite beside this one, its hostile maps refused) is named "ctr-jit" too.  Held by comm,
        # 332 of 1,101 such samples came in under load, unnamed.
        ctr = subprocess.Popen(["unshare", "-m", "-p", "-f", "--kill-child", "--mount-proc", "--propagation",
                                "private", "sh", "-c",
                                "read go && mount -t tmpfs t /mnt && cp %s %s && "
                                "mount -t tmpfs -o mode=1777 t /tmp && exec %s jit 800" % (WORKLOAD, CTR_WL, CTR_WL)],
                               cwd="/", stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, errors="replace", env=dict(os.environ, WORKLOAD_JIT_MAP_LAST="1"))
        try:
            assert wait_for(lambda: len(children(ctr.pid)) > 1, 30), "unshare forked no shell"
            pid = children(ctr.pid)[1]
            cout, cerr = ctr.communicate("go\n", timeout=60)
        finally:
            stop(ctr)
        assert ctr.returncode == 0 and '"map"' in cout, cerr
        time.sleep(0.5)
    finally:
        rec.send_signal(signal.SIGINT)
        err = rec.communicate(timeout=60)[1]
    assert rec.returncode == 0, err
    assert re.search(r"JIT perf maps: .* [1-9]\d* read at their exit", err), err[-1500:]
    assert "pid %d: its perf map read at its exit" % pid in err, err[-1500:]
    rows = json_lines(spanperf("report", "-i", out, "--sort", "pid,comm,sym", "--format", "json", check=True).stdout)
    mine = {r["sym"]: r["samples"] for r in rows if r.get("pid") == pid and r.get("comm") == "ctr-jit"}
    assert sum(mine.values()) >= 100, mine
    assert mine.get("jitted_loop", 0) >= 0.9 * sum(mine.values()), mine
    perf_clean(["report", "--stdio"], out)


@test
def test_container_jit_map_hostile():
    """The container's map as another user's file, a FIFO, or a symlink to a host file the
    container does not see: refused, without hanging, and nothing of it named."""
    need_bpf()
    d = world_dir()
    hostonly = os.path.join(d, "hostonly")
    os.mkdir(hostonly)
    host_map = os.path.join(hostonly, "perf.map")

    def other_user(path):
        open(path, "a").close()
        os.chown(path, 65534, 65534)

    def fifo(path):
        os.unlink(path)
        os.mkfifo(path, 0o666)

    def symlink_out(path):
        # A root-owned host file, with names of the attacker's choosing, under the host's /tmp,
        # which the container's own /tmp hides: only a resolution on the host reaches it.
        text = open(path).read()
        open(host_map, "w").write("".join(" ".join(l.split()[:2]) + " INJECTED_FROM_HOST\n"
                                          for l in text.splitlines()))
        os.unlink(path)
        os.symlink(host_map, path)

    for name, prepare, why in (("another user's", other_user, 0), ("a FIFO", fifo, 1),
                               ("a symlink out", symlink_out, 1)):
        mine, err, _ = container_jit(d, prepare)
        assert mine, "no samples of the JIT process"
        named = [l for l in mine if "jitted_loop" in l or "INJECTED" in l]
        assert not named, "%s map was used: %s" % (name, named[:3])
        m = re.search(r"JIT perf maps: .* (\d+) refused as another user's, (\d+) as not a regular file", err)
        assert m and int(m.group(1 + why)) >= 1, "%s map was not refused: %s" % (name, err[-800:])


def magic_link_jit(d):
    """A JIT in a root of its own whose /tmp is a symlink to /proc/ME/root/DIR (its /proc is the
    host's procfs, ME this process: pid 1's root may be out of reach where the machine is itself a
    container), so that the JIT's /tmp/perf-PID.map is the host's DIR/perf-PID.map, a file the
    container cannot see.  Once the JIT has written its map there, the file is replaced by one of
    root's with names of the attacker's choosing (READ_THROUGH_PROC) and DIR made root's only.
    Returns (the container's Popen, the JIT's pid, the host file's path)."""
    hostonly = os.path.join(d, "hostonly")
    os.mkdir(hostonly)
    new = os.path.join(d, "root")
    os.mkdir(new)
    # A root of its own: the host's /usr, the workload (copied to /ctr-wl: the build directory may
    # be under /tmp, which here leads elsewhere), the host's procfs, and the /tmp that leads back.
    script = ("mount -t tmpfs r {n} && mkdir -p {n}/usr {n}/proc && mount --rbind /usr {n}/usr && "
              "mount --rbind /proc {n}/proc && cp {w} {n}/ctr-wl && ln -s usr/lib {n}/lib && "
              "ln -s usr/lib64 {n}/lib64 && ln -s usr/bin {n}/bin && ln -s /proc/{me}/root{h} {n}/tmp && "
              "exec chroot {n} /ctr-wl jit 60000").format(n=new, h=hostonly, w=WORKLOAD, me=os.getpid())
    p = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", script], cwd="/",
                         stdout=subprocess.DEVNULL)
    try:
        def jit_pid():
            for c in children(p.pid):
                try:
                    if open("/proc/%d/cmdline" % c, "rb").read().startswith(b"/ctr-wl\0jit"):
                        return c
                except OSError:
                    pass

        def written():
            # The whole line, not the file's creation: the JIT creates it, then writes and closes.
            pid = jit_pid()
            try:
                return pid and open(os.path.join(hostonly, "perf-%d.map" % pid)).read().endswith("jitted_loop\n")
            except OSError:
                return False
        assert wait_for(written, timeout=30), "the JIT wrote no map through the magic link"
        pid = jit_pid()
        host_map = os.path.join(hostonly, "perf-%d.map" % pid)
        text = open(host_map).read()
        os.unlink(host_map)
        with open(host_map, "w") as f:
            f.write("".join(" ".join(l.split()[:2]) + " READ_THROUGH_PROC\n" for l in text.splitlines()))
        os.chmod(hostonly, 0o700)
    except BaseException:
        stop(p)
        raise
    return p, pid, host_map


@test
def test_magic_link_refused_without_openat2():
    """Where openat2 is missing (before 5.6; SPANPERF_NO_OPENAT2=1 takes that path here),
    another process's files were opened by a forked reader chrooted into its root, which
    follows magic links: a container whose /tmp is a symlink to /proc/PID/root/DIR (its /proc
    is the host's procfs, PID any host process) had root read DIR/perf-PID.map of the host, a
    file the container cannot see, and its names named the JIT's code.  The walk that replaces
    it resolves one component at a time inside the root and refuses any on procfs, where
    magic links live.  Only record and its descendants are held to it: on a shared host another
    profiler may open the file through the same link (perf record -a enters the process's mount
    namespace to read its map), and an idle clean-clone run once failed here on an opener the
    test could not name."""
    need_bpf()
    p, pid, host_map = magic_link_jit(world_dir())
    try:
        watch = OpenersWatch(host_map)
        out = os.path.join(tmpdir(), "m.data")
        env = dict(os.environ, SPANPERF_NO_OPENAT2="1")
        try:
            try:
                r, rec = record_host(out, "-v", env=env, timeout=30)
            except subprocess.TimeoutExpired:
                raise AssertionError("record hung")
        finally:
            watch.close()
        assert r.returncode == 0, r.stderr
    finally:
        stop(p)
    mine = watch.opened_by(rec)
    assert not mine, "record (pid %d) opened the host's %s through the container's /proc/PID/root: %s" % (
        rec, host_map, watch.named(mine))
    rows = spanperf("report", "-i", out, "--sort", "pid,sym", check=True).stdout
    named = [l for l in rows.splitlines() if "READ_THROUGH_PROC" in l]
    assert not named, "names read through a magic link: %s" % named[:3]
    m = re.search(r"JIT perf maps: .* (\d+) as not a regular file", r.stderr)
    assert m and int(m.group(1)) >= 1, r.stderr[-800:]


@test
def test_agent_build_ids_read_inside_the_root():
    """The agent reads a user file's build id where the live session names none, from the file as
    its process sees it: it opened /proc/PID/root/PATH with a plain open, where the kernel follows
    the container's magic links, and its absolute symlinks from the host's root.  A JIT's
    /tmp/perf-PID.map in a container whose /tmp led to /proc/N/root/DIR had root open the host's
    DIR/perf-PID.map every window (another suite's agent on the same host, seen opening this
    module's file).  Now the name is resolved inside the process's root, as record's are."""
    need_bpf()
    p, pid, host_map = magic_link_jit(world_dir())
    # A server that refuses: the windows are spooled, the rows built all the same.
    import socket
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    spool = os.path.join(tmpdir(), "spool")
    try:
        watch = OpenersWatch(host_map)
        try:
            a = subprocess.Popen([SPANPERF, "agent", "--clickhouse", "http://127.0.0.1:%d/" % dead.getsockname()[1],
                                  "--window", "1", "-F", "99", "-d", "3", "--spool", spool],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
            try:
                err = a.communicate(timeout=60)[1]
            except subprocess.TimeoutExpired:
                a.kill()
                a.wait()
                raise AssertionError("the agent ran past its 3 s")
        finally:
            watch.close()
    finally:
        stop(p)
        dead.close()
    mine = watch.opened_by(a.pid)
    assert not mine, "the agent (pid %d) opened the host's %s through the container's /proc/PID/root: %s" % (
        a.pid, host_map, watch.named(mine))
    assert [f for f in os.listdir(spool) if f.endswith(".win")] if os.path.isdir(spool) else False, \
        "no window was built: %s" % err[-800:]


# ---- 7. INT, TERM and HUP stop every command within about a second ----

def full_pipe():
    """A pipe whose buffer is full already: the first write to it blocks."""
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        while True:
            os.write(w, b"x" * 4096)
    except BlockingIOError:
        pass
    os.set_blocking(w, True)
    return r, w


@test
def test_signals_stop_report_blocked_in_write():
    """main() blocked INT, TERM and HUP for every command: a report stuck writing (here to a
    full pipe) ignored Ctrl-C and timeout(1).  It stops, and leaves no temporary file."""
    data = base_recording()
    d = tmpdir()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        r, w = full_pipe()
        # HUP at its default whatever the suite inherited (under nohup spanperf rightly keeps it ignored).
        p = subprocess.Popen([SPANPERF, "report", "-i", data, "-g", "--folded"], stdout=w,
                             stderr=subprocess.DEVNULL,
                             preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL))
        os.close(w)
        try:
            time.sleep(1.0)
            assert p.poll() is None, "report finished without writing"
            p.send_signal(sig)
            try:
                p.wait(timeout=2)
            except subprocess.TimeoutExpired:
                raise AssertionError("report ignored %s for 2 s" % sig.name)
            assert [f for f in os.listdir(d) if "tmp" in f] == [], os.listdir(d)
        finally:
            stop(p)
            os.close(r)


@test
def test_signal_stops_record_outside_the_wait():
    """record unblocked its signals only in its wait: stuck elsewhere (here writing to a full
    stderr), it ignored Ctrl-C and timeout(1).  Then it had 5 s to finish its file (stop.h's
    STOP_GRACE_S), stayed stuck in the write, and died of the signal with no file.  Now a
    system call still blocked a second after the signal is interrupted and stderr goes to
    /dev/null: the file is finished, complete, within about a second."""
    need_bpf()
    d = tmpdir()
    out = os.path.join(d, "r.data")
    r, w = full_pipe()
    p = subprocess.Popen([SPANPERF, "record", "-v", "-d", "30", "-o", out], stdout=subprocess.DEVNULL, stderr=w)
    os.close(w)
    try:
        time.sleep(2)
        t = time.monotonic()
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=8)
        except subprocess.TimeoutExpired:
            raise AssertionError("record ignored SIGTERM for 8 s")
        took = time.monotonic() - t
        assert [f for f in os.listdir(d) if "tmp" in f] == [], os.listdir(d)
        assert p.returncode == 0 and os.path.exists(out), "no file: exit %d after %.1f s" % (p.returncode, took)
        assert took < STOP_BOUND_S, "record took %.1f s to stop" % took
        perf_clean(["script"], out)
    finally:
        stop(p)
        os.close(r)


# STOP_INTERRUPT_S (1 s), plus what a busy, shared machine adds: well under STOP_GRACE_S (5 s).
STOP_BOUND_S = 3.0


@test
def test_signal_stops_record_whose_cmd_ignores_it():
    """record -- CMD sent CMD a SIGTERM at the end and waited for it: a CMD that ignores
    SIGTERM kept record from finishing until the 5 s grace killed it, with no file.  Now CMD
    has 300 ms, then SIGKILL; the file is complete."""
    need_bpf()
    d = tmpdir()
    for cmd in ("record", "stat"):
        out = os.path.join(d, "%s.out" % cmd)
        p = subprocess.Popen([SPANPERF, cmd, "-o", out, "--", "sh", "-c", "trap '' TERM; sleep 30"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(2)
            t = time.monotonic()
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=8)
            except subprocess.TimeoutExpired:
                raise AssertionError("%s ignored SIGTERM for 8 s" % cmd)
            took = time.monotonic() - t
            assert os.path.exists(out), "%s left no file (exit %d after %.1f s)" % (cmd, p.returncode, took)
            assert took < STOP_BOUND_S, "%s took %.1f s to stop" % (cmd, took)
        finally:
            stop(p)
    perf_clean(["script"], os.path.join(d, "record.out"))
    assert "task-clock" in open(os.path.join(d, "stat.out")).read()


@test
def test_signal_during_finish_copies():
    """SIGTERM while record's finish copies many containers' files into the build-id cache
    (5 s for all, without a signal): the copies stop STOP_WORK_MS after the signal, and the
    file is complete, within about a second."""
    need_bpf()
    d = world_dir()
    ns = os.path.join(d, "ns")
    os.mkdir(ns)
    src = os.path.join(d, "src")
    os.mkdir(src)
    img = open(WORKLOAD, "rb").read()
    wid = bytes.fromhex(build_id(WORKLOAD))
    at = img.find(wid)
    # 24 files of 64 MiB, each its own build id: sparse, so they cost no disk, but every byte
    # is read, hashed and written by the copy (a few seconds on an idle machine).
    for i in range(24):
        b = bytearray(img)
        b[at:at + len(wid)] = os.urandom(len(wid))
        with open(os.path.join(src, "lib%d.so" % i), "wb") as f:
            f.write(b)
            f.truncate(64 << 20)
    cache = tmpdir()
    if run(["mount", "-t", "tmpfs", "-o", "size=2500m", "tmpfs", cache]).returncode:
        raise Skip("cannot mount a tmpfs for the cache")
    code = ("import mmap,os,time\nms=[]\nfor n in sorted(os.listdir('%s')):\n"
            " f=open('%s/'+n,'rb'); ms.append(mmap.mmap(f.fileno(),0,prot=mmap.PROT_READ|mmap.PROT_EXEC))\n"
            "open('%s/ready','w').close()\ntime.sleep(60)\n") % (ns, ns, d)
    p = in_container(d, "cp --sparse=always %s/*.so %s/ && exec %s -c \"$0\"" % (src, ns, PY), code)
    try:
        assert wait_for(lambda: os.path.exists(os.path.join(d, "ready")), 30), "the container did not map its files"
        env = dict(os.environ, HOME=cache, XDG_CACHE_HOME=cache)
        out = os.path.join(tmpdir(), "f.data")
        rec = subprocess.Popen([SPANPERF, "record", "-v", "-d", "0.5", "-o", out], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")
        kept = os.path.join(cache, "spanperf", "buildid")
        copying = lambda: rec.poll() is not None or (os.path.isdir(kept) and any(".tmp-" in n for n in os.listdir(kept)))
        assert wait_for(copying, 30) and rec.poll() is None, "record finished before its copies began"
        time.sleep(0.2)
        t = time.monotonic()
        rec.send_signal(signal.SIGTERM)
        try:
            err = rec.communicate(timeout=8)[1]
        except subprocess.TimeoutExpired:
            raise AssertionError("record ignored SIGTERM for 8 s while copying")
        took = time.monotonic() - t
    finally:
        stop(p)
        if 'rec' in locals():
            stop(rec)
        run(["umount", cache])
    assert rec.returncode == 0, err[-800:]
    assert took < STOP_BOUND_S, "record took %.1f s to stop while copying" % took
    m = re.search(r"(\d+) left for lack of time", err)
    assert m and int(m.group(1)) >= 1, "no copy was cut short: %s" % err[-800:]
    perf_clean(["report", "--stdio"], out)
    perf_clean(["script"], out)


# ---- 8. hostile perf.data: bounded time and memory ----

def _attr_section(data):
    h = struct.unpack_from("<8Q", data, 0)
    return h[2], h[3], h[4]  # attr_size, attrs offset, attrs size


def max_rss_kb(cmd, timeout=60):
    """Runs cmd; its exit status and peak RSS in KiB (a wrapper of its own, so no other child counts)."""
    w = ("import resource,subprocess,sys\n"
         "r=subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL)\n"
         "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    p = run(["python3", "-c", w] + cmd, timeout=timeout)
    rc, kb = p.stdout.split()
    return int(rc), int(kb)


@test
def test_attrs_sharing_one_id_section():
    """A file whose attrs all point at one id section: 0.7 MB took 2.6 GB and 9 s."""
    data = open(base_recording(), "rb").read()
    attr_size, off, size = _attr_section(data)
    b = bytearray(data)
    nids, nattrs = 1 << 15, 2000
    ids_off = len(b)
    b += struct.pack("<Q", 1) * nids
    first = bytearray(data[off:off + attr_size])
    struct.pack_into("<QQ", first, attr_size - 16, ids_off, nids * 8)
    new_off = len(b)
    b += bytes(first) * nattrs
    struct.pack_into("<QQ", b, 24, new_off, nattrs * attr_size)
    d = tmpdir()
    path = os.path.join(d, "ids.data")
    open(path, "wb").write(bytes(b))
    t = time.monotonic()
    try:
        rc, kb = max_rss_kb([SPANPERF, "report", "-i", path], timeout=60)
    except subprocess.TimeoutExpired:
        raise AssertionError("report ran 60 s on a %d KB file" % (len(b) >> 10))
    assert rc in (0, 1), rc
    assert kb < 256 * 1024, "report took %d MB on a %d KB file (%.1f s)" % (kb >> 10, len(b) >> 10,
                                                                           time.monotonic() - t)


@test
def test_forks_of_a_process_with_many_maps():
    """report copied every map a parent ever had into each fork, overlapped ones too: a process
    that maps one page 100000 times over, then forks 400 times, took gigabytes."""
    need_bpf()
    d = tmpdir()
    lib = os.path.join(d, "lib")
    shutil.copy(SLEEP, lib)
    # ctypes' mmap: Python's dups the descriptor for each mapping.
    code = ("import ctypes,os\n"
            "l=ctypes.CDLL(None); l.mmap.restype=ctypes.c_void_p\n"
            "l.mmap.argtypes=[ctypes.c_void_p,ctypes.c_size_t,ctypes.c_int,ctypes.c_int,ctypes.c_int,ctypes.c_long]\n"
            "fd=os.open('%s',os.O_RDONLY); a=l.mmap(None,4096,5,2,fd,0)\n"
            "for i in range(100000): l.mmap(a,4096,5,2|0x10,fd,0)\n"
            "for i in range(400):\n"
            "    p=os.fork()\n"
            "    if p==0: os._exit(0)\n"
            "    os.waitpid(p,0)\n") % lib
    out = os.path.join(d, "f.data")
    spanperf("record", "-q", "-F", "99", "-o", out, "--", PY, "-c", code, check=True, timeout=120)
    try:
        rc, kb = max_rss_kb([SPANPERF, "report", "-i", out, "--sort", "pid,dso"], timeout=120)
    except subprocess.TimeoutExpired:
        raise AssertionError("report ran 120 s on %d KB" % (os.path.getsize(out) >> 10))
    assert rc == 0, rc
    assert kb < 256 * 1024, "report took %d MB on a %d KB file" % (kb >> 10, os.path.getsize(out) >> 10)


# ---- 9. smaller: names escaped in text outputs, $HOME as root ----

@test
def test_folded_names_escaped():
    """A newline in a comm forged a stack line in --folded; escape sequences reached the
    terminal."""
    need_bpf()
    d = tmpdir()
    out = os.path.join(d, "n.data")
    code = ("import ctypes,time\n"
            "l=ctypes.CDLL(None); l.prctl(15, b'ab\\nevil 999999\\x1b[2J', 0, 0, 0)\n"
            "t=time.time()\n"
            "while time.time()-t<0.5: pass\n")
    spanperf("record", "-q", "-o", out, "--", "python3", "-c", code, check=True, timeout=60)
    r = spanperf("report", "-i", out, "--folded", check=True)
    for l in r.stdout.splitlines():
        assert not l.startswith("evil"), "a comm forged a folded line: %r" % l
        assert "\x1b" not in l, "an escape sequence reached the output: %r" % l
    r = spanperf("report", "-i", out, "--sort", "comm", check=True)
    assert "\x1b" not in r.stdout, "an escape sequence reached the table"


@test
def test_report_input_of_another_user():
    """report read any user's file (perf refuses one not yours or root's without -f), and
    mapped it, so that its owner could truncate it mid-report: SIGBUS."""
    data = base_recording()
    d = world_dir()
    theirs = os.path.join(d, "theirs.data")
    shutil.copy(data, theirs)
    os.chown(theirs, 65534, 65534)
    r = spanperf("report", "-i", theirs)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1 and theirs in lines[0], (r.returncode, r.stderr)
    r = spanperf("report", "--force", "-i", theirs)
    assert r.returncode == 0 and "Samples" in r.stdout, r.stderr
    # A file others may write is read, not mapped: cut while reported, it gives one sentence or the
    # old figures, never SIGBUS.
    os.chown(theirs, 0, 0)
    os.chmod(theirs, 0o666)
    for cut in (0.001, 0.01, 0.05):
        shutil.copyfile(data, theirs)
        p = subprocess.Popen([SPANPERF, "report", "-g", "-i", theirs], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, errors="replace")
        time.sleep(cut)
        os.truncate(theirs, 4096)
        _, err = p.communicate(timeout=60)
        assert p.returncode in (0, 1), "report died of signal %d" % -p.returncode


@test
def test_root_cache_not_from_a_users_home():
    """As root, $HOME and $XDG_CACHE_HOME were trusted (sudo -E): root wrote its build-id
    cache through a directory another user owns."""
    need_bpf()
    d = world_dir()
    home = os.path.join(d, "home")
    os.mkdir(home)
    os.chown(home, 65534, 65534)
    cache = os.path.join(home, "cache")
    os.mkdir(cache)
    os.chown(cache, 65534, 65534)
    env = dict(os.environ, HOME=home, XDG_CACHE_HOME=cache)
    out = os.path.join(tmpdir(), "h.data")
    # A deleted file's mapping makes record keep a copy.
    exe = os.path.join(d, "del")
    shutil.copy(SLEEP, exe)
    p = subprocess.Popen(["sh", "-c", "exec %s 30" % exe])
    try:
        assert wait_for(lambda: mapped_by(p.pid, exe.encode()))
        os.unlink(exe)
        r, _ = record_host(out, env=env)
        assert r.returncode == 0, r.stderr
        made = [os.path.join(a, f) for a, _, fs in os.walk(home) for f in fs]
        assert made == [], "root wrote into another user's directory: %s" % made
    finally:
        stop(p)
