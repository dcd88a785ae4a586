# SPDX-License-Identifier: GPL-2.0
"""Root must not be steered, round 4 (issue 38): what another user's files and processes may cost
root's recorder and reports in memory and disk, and whose debug files root's reports believe.
Each test plays the attack as an unprivileged user (setpriv to nobody) against files it builds
at test time, and checks what root's command took: its peak RSS, what it wrote, what it named."""
import os
import re
import shutil
import struct
import subprocess
import time

from harness import ROOT, SPANPERF, Skip, need_bpf, perf_clean, rss_env, run, spanperf, test, tmpdir

NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else shutil.which("python3")
SHT_SYMTAB, SHT_RELA, SHT_DYNSYM, SHT_NOTE = 2, 4, 11, 7


def world_dir():
    d = tmpdir()
    os.chmod(d, 0o755)
    return d


def need_cc():
    if not shutil.which("cc"):
        raise Skip("no C compiler")


# Runs argv; prints its exit status and peak RSS in KiB, passes its stderr on (a wrapper of its own,
# so that no other child counts).
RSS_WRAPPER = ("import resource,subprocess,sys\n"
               "r=subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL,stderr=subprocess.PIPE)\n"
               "sys.stderr.buffer.write(r.stderr)\n"
               "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")


def max_rss_kb(cmd, timeout=120):
    """Runs cmd; its exit status, peak RSS in KiB and stderr."""
    p = run([PY, "-c", RSS_WRAPPER] + cmd, timeout=timeout, env=rss_env())
    rc, kb = p.stdout.split()
    return int(rc), int(kb), p.stderr


def build_lib(d, name, src, *flags):
    need_cc()
    c = os.path.join(d, name + ".c")
    so = os.path.join(d, name + ".so")
    open(c, "w").write(src)
    run(["cc", "-shared", "-fPIC", "-O1", "-o", so, c] + list(flags), check=True)
    os.chmod(so, 0o755)
    return so


def section_index(path, sh_type):
    """The index and sh_link of the first section of sh_type."""
    img = open(path, "rb").read()
    shoff, = struct.unpack_from("<Q", img, 0x28)
    shnum, = struct.unpack_from("<H", img, 0x3c)
    for i in range(shnum):
        if struct.unpack_from("<I", img, shoff + i * 64 + 4)[0] == sh_type:
            return i, struct.unpack_from("<I", img, shoff + i * 64 + 40)[0]
    raise AssertionError("no section of type %d in %s" % (sh_type, path))


def add_sections(path, nr, sh_type, hole, link=0, entsize=0, align=8):
    """nr more section headers of sh_type, every one over the same sparse hole of `hole` bytes
    past the file's end: what the loader ignores and a section reader reads nr times over."""
    img = bytearray(open(path, "rb").read())
    shoff, = struct.unpack_from("<Q", img, 0x28)
    shnum, = struct.unpack_from("<H", img, 0x3c)
    old = bytes(img[shoff:shoff + shnum * 64])
    hole_off = (len(img) + 4095) & ~4095
    extra = struct.pack("<IIQQQQIIQQ", 0, sh_type, 0, 0, hole_off, hole, link, 0, align, entsize) * nr
    struct.pack_into("<Q", img, 0x28, hole_off + hole)
    struct.pack_into("<H", img, 0x3c, shnum + nr)
    with open(path, "wb") as f:
        f.write(img)
        f.seek(hole_off + hole)
        f.write(old + extra)


class Holder:
    """A process of nobody's that maps lib (and calls fn in it for spin seconds, if given), until
    stopped."""

    def __init__(self, lib, fn=None, spin=0):
        code = "import ctypes,time\nl=ctypes.CDLL(%r)\n" % lib
        if fn:
            code += "t=time.time()\nwhile time.time()-t<%g: l.%s(100000)\n" % (spin, fn)
        code += "time.sleep(120)\n"
        self.p = subprocess.Popen(NOBODY + [PY, "-c", code])
        t = time.monotonic() + 10
        while time.monotonic() < t:
            try:
                if lib.encode() in open("/proc/%d/maps" % self.p.pid, "rb").read():
                    return
            except OSError:
                pass
            time.sleep(0.05)
        self.stop()
        raise AssertionError("nobody's process never mapped %s" % lib)

    def stop(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()


# ---- 1. a library's section headers: memory bounded for the whole file, not per section ----

@test
def test_note_headers_over_one_hole_bounded():
    """buildid_from_fd read each note section up to 1 MiB and libelf kept them all: a 1.1 MB
    library with 1,000 note headers over one 1 MiB hole took a plain record -a to 1.0 GB."""
    need_bpf()
    d = world_dir()
    lib = build_lib(d, "libnotes", "int notes_fn(int x) { return x + 1; }\n", "-Wl,--build-id=none")
    add_sections(lib, 1000, SHT_NOTE, 1 << 20, align=4)
    h = Holder(lib)
    try:
        out = os.path.join(tmpdir(), "n.data")
        t = time.monotonic()
        rc, kb, err = max_rss_kb([SPANPERF, "record", "-a", "-F", "49", "-d", "3", "-o", out])
        took = time.monotonic() - t
    finally:
        h.stop()
    assert rc == 0, err[-600:]
    assert kb < 200 * 1024, "record -a took %d MB beside a library of 1,000 note headers (%.1f s)" % (kb >> 10, took)


@test
def test_rela_headers_over_one_hole_bounded():
    """otel_tls.c find_reloc read each SHT_RELA section up to 64 MiB and libelf kept them all:
    16 headers over one 64 MiB sparse hole took record --otel from 36 MB to 1.08 GB."""
    need_bpf()
    d = world_dir()
    lib = build_lib(d, "librela", "__thread void *otel_thread_ctx_v1;\n"
                    "void *rela_get(void) { return otel_thread_ctx_v1; }\n", "-mtls-dialect=gnu2")
    # A whole number of entries, or libelf refuses the section outright.
    add_sections(lib, 16, SHT_RELA, (64 << 20) // 24 * 24, link=section_index(lib, SHT_DYNSYM)[0], entsize=24)
    h = Holder(lib)
    try:
        out = os.path.join(tmpdir(), "r.data")
        rc, kb, err = max_rss_kb([SPANPERF, "record", "--otel", "-a", "-F", "49", "-d", "3", "-o", out])
    finally:
        h.stop()
    assert rc == 0, err[-600:]
    assert kb < 200 * 1024, "record --otel took %d MB beside a library of 16 relocation tables over one hole" % (
        kb >> 10)


@test
def test_symbol_table_over_a_hole_bounded_in_report():
    """report read a sampled library's symbol table whole, whatever size it claimed: a library
    whose .symtab spans a 1 GiB sparse hole took report to 1 GB, and its strings as much again."""
    need_bpf()
    d = world_dir()
    lib = build_lib(d, "libsyms", "int syms_spin(int n) { volatile int x = 0; for (int i = 0; i < n; i++) x += i;"
                    " return x; }\n")
    # The last symbol table is the one read: this one, over the hole, its strings the dynamic ones.
    add_sections(lib, 1, SHT_SYMTAB, (1 << 30) // 24 * 24, link=section_index(lib, SHT_DYNSYM)[1], entsize=24)
    os.chown(lib, 65534, 65534)  # nobody's own library: read, never mapped, by root
    out = os.path.join(tmpdir(), "s.data")
    h = Holder(lib, "syms_spin", spin=60)
    try:
        spanperf("record", "-q", "-F", "499", "-p", str(h.p.pid), "-d", "2", "-o", out, check=True)
    finally:
        h.stop()
    rc, kb, err = max_rss_kb([SPANPERF, "report", "-i", out, "--sort", "dso,sym"])
    assert rc == 0, err[-600:]
    assert kb < 200 * 1024, "report took %d MB on a library whose symbol table spans a 1 GiB hole" % (kb >> 10)


# ---- 2. OTel process contexts: let go when their process exits, their strings cut when decoded ----

PUBLISHER = r"""
#define OTEL_THREAD_CTX_DEFINE
#include "otel_thread_ctx.h"
#include "otel_process_ctx.h"
#include <stdio.h>

/* Publishes a process context of NKEYS keys of LEN bytes each, then lives MS milliseconds. */
int main(int argc, char **argv)
{
	int nkeys = atoi(argv[1]), len = atoi(argv[2]), ms = atoi(argv[3]);
	const char *res[] = { "service.name", "hostile", NULL };
	const char **keys = calloc(nkeys + 1, sizeof(*keys));

	for (int i = 0; i < nkeys; i++) {
		char *k = malloc(len + 1);

		memset(k, 'a' + i % 26, len);
		k[len] = 0;
		keys[i] = k;
	}
	if (otel_process_ctx_publish(res, keys)) {
		perror("otel_process_ctx_publish");
		return 1;
	}
	usleep(ms * 1000);
	return 0;
}
"""


@test
def test_exited_publishers_let_go():
    """record --otel kept every publisher's process context (up to 1 MiB, keys at full length)
    until the end, long after the process exited: 300 short-lived publishers took the recorder
    from 23 MB to 315 MB."""
    need_bpf()
    need_cc()
    d = world_dir()
    src = os.path.join(d, "pub.c")
    pub = os.path.join(d, "pub")
    open(src, "w").write(PUBLISHER)
    run(["cc", "-O1", "-I", os.path.join(ROOT, "include"), "-o", pub, src], check=True)
    os.chmod(pub, 0o755)
    # 300 publishers of a 1 MB context each (4 keys of 250 KB), 0.4 s each, a few at a time.
    loop = "for i in $(seq 300); do %s 4 250000 400 & sleep 0.03; done; wait" % pub
    out = os.path.join(tmpdir(), "o.data")
    rec = subprocess.Popen([PY, "-c", RSS_WRAPPER, SPANPERF, "record", "--otel", "-a", "-F", "49", "-d", "16", "-o",
                            out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", env=rss_env())
    time.sleep(2)
    loader = subprocess.Popen(NOBODY + ["sh", "-c", loop])
    try:
        loader.wait(timeout=60)
        o, err = rec.communicate(timeout=120)
    finally:
        for p in (loader, rec):
            if p.poll() is None:
                p.kill()
                p.wait()
    rc, kb = (int(x) for x in o.split())
    assert rc == 0, err[-800:]
    m = re.search(r"otel: (\d+) process contexts \(OTEP 4719\) written", err)
    assert m and int(m.group(1)) >= 100, "the publishers' contexts are not in the file: %s" % err[-800:]
    # Written as each publisher exited, so stamped across the recording, not all at its end.
    stamps = [float(l.split()[1].rstrip(":")) for l in perf_clean(["script", "-F", "pid,time,event"], out).splitlines()
              if "spanperf-otel-process" in l]
    assert len(stamps) >= 100 and max(stamps) - min(stamps) > 4, \
        "the contexts were kept to the end: %d records over %.1f s" % (len(stamps), max(stamps) - min(stamps))
    assert kb < 150 * 1024, "record --otel took %d MB after 300 publishers of 1 MB contexts exited" % (kb >> 10)


# ---- 3 and 5. debuginfod: root's cache is root's own, a download is as large as a kept file at most ----

VICTIM = r"""
#include <stdlib.h>
#include <time.h>
static volatile long n;
__attribute__((noinline)) void NAME(void) { for (int i = 0; i < 100000; i++) n += i; }
int main(int c, char **v) { time_t end = time(0) + atoi(v[1]); while (time(0) < end) NAME(); return 0; }
"""
_victim = {}


def stripped_victim():
    """A stripped program of root's (its symbols only in a debug file by build id) and one
    recording of it; shared."""
    if _victim:
        return _victim
    need_bpf()
    need_cc()
    d = world_dir()
    src = os.path.join(d, "victim.c")
    exe = os.path.join(d, "victim")
    open(src, "w").write(VICTIM.replace("NAME", "victim_spin"))
    run(["cc", "-O1", "-g", "-Wl,--build-id", "-o", exe, src], check=True)
    hexid = re.search(r"Build ID: ([0-9a-f]+)", run(["readelf", "-n", exe], check=True).stdout).group(1)
    run(["strip", "--strip-all", exe], check=True)
    out = os.path.join(d, "victim.data")
    spanperf("record", "-q", "-F", "999", "-o", out, "--", exe, "2", check=True)
    _victim.update(dir=d, exe=exe, src=src, hex=hexid, data=out)
    return _victim


class Debuginfod:
    """A debuginfod of the test's own on loopback: 404 for everything, or for the debug file of
    build id hexid a body of zeros (with a Content-Length of 4 GiB, or none: until it closes),
    512 MiB at most; it counts what it sent in all and in its largest response."""

    def __init__(self, mode="404", hexid=None):
        import http.server
        import threading
        srv = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *a):
                pass

            def do_GET(self):
                if mode == "404" or "/buildid/%s/debuginfo" % hexid not in self.path:
                    self.send_error(404)
                    return
                srv.asked += 1
                self.send_response(200)
                if mode == "huge":
                    self.send_header("Content-Length", str(4 << 30))
                self.end_headers()
                chunk = bytes(1 << 20)
                sent = 0
                try:
                    for _ in range(512):
                        self.wfile.write(chunk)
                        sent += len(chunk)
                except OSError:
                    pass
                srv.sent += sent
                srv.biggest = max(srv.biggest, sent)

        self.asked = self.sent = self.biggest = 0
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def clean_env(**kw):
    env = dict(os.environ, **kw)
    for k in ("DEBUGINFOD_URLS", "DEBUGINFOD_CACHE_PATH", "DEBUGINFOD_MAXSIZE", "DEBUGINFOD_TIMEOUT"):
        if k not in kw:
            env.pop(k, None)
    return env


@test
def test_debug_file_planted_in_a_users_home_not_believed():
    """libdebuginfod's cache came from $HOME (sudo -E keeps a user's), with none of round 3's
    checks, and what it returned was copied into root's own cache: a debug file a user planted
    under a victim's build id (which any linker forges) named the victim's frames in report, and
    in a later report --offline with root's own HOME."""
    v = stripped_victim()
    d = world_dir()
    src = os.path.join(d, "planted.c")
    open(src, "w").write(VICTIM.replace("NAME", "planted_name"))
    planted = os.path.join(d, "planted")
    run(["cc", "-O1", "-g", "-Wl,--build-id=0x" + v["hex"], "-o", planted, src], check=True)
    run(["objcopy", "--only-keep-debug", planted, planted + ".debug"], check=True)
    os.chmod(planted + ".debug", 0o644)
    # nobody's HOME, with libdebuginfod's cache in it (the name it looks for first) holding the plant.
    home = os.path.join(d, "home")
    os.mkdir(home)
    os.chown(home, 65534, 65534)
    run(NOBODY + ["sh", "-c", "mkdir -p %s/.debuginfod_client_cache/%s && cp %s.debug %s/.debuginfod_client_cache/%s/debuginfo"
                  % (home, v["hex"], planted, home, v["hex"])], check=True)
    srv = Debuginfod("404")
    rootc = tmpdir()  # root's own cache home: spanperf's copies go there, whatever HOME says
    try:
        r = spanperf("report", "-i", v["data"], "--sort", "sym", env=clean_env(HOME=home, XDG_CACHE_HOME=rootc,
                                                                                DEBUGINFOD_URLS=srv.url))
    finally:
        srv.stop()
    assert r.returncode == 0, r.stderr
    assert "planted_name" not in r.stdout, "a user's planted debug file named root's frames:\n" + r.stdout[:1500]
    made = [os.path.join(a, f) for a, _, fs in os.walk(home) for f in fs if os.stat(os.path.join(a, f)).st_uid == 0]
    assert made == [], "root wrote into a user's HOME: %s" % made
    roothome = tmpdir()
    r = spanperf("report", "--offline", "-i", v["data"], "--sort", "sym", env=clean_env(HOME=roothome,
                                                                                          XDG_CACHE_HOME=rootc))
    assert r.returncode == 0, r.stderr
    assert "planted_name" not in r.stdout, "root's own cache kept the planted file:\n" + r.stdout[:1500]


def fetch_huge(mode, **env):
    v = stripped_victim()
    srv = Debuginfod(mode, v["hex"])
    rootc = tmpdir()
    t = time.monotonic()
    try:
        r = spanperf("report", "-i", v["data"], "--sort", "sym",
                     env=clean_env(XDG_CACHE_HOME=rootc, HOME=rootc, DEBUGINFOD_URLS=srv.url, DEBUGINFOD_TIMEOUT="5",
                                   DEBUGINFOD_CACHE_PATH=os.path.join(rootc, "dbg"), **env), timeout=120)
    finally:
        srv.stop()
    left = sum(os.path.getsize(os.path.join(a, f)) for a, _, fs in os.walk(rootc) for f in fs)
    return r, srv, left, time.monotonic() - t


@test
def test_debuginfod_download_bounded_by_its_length():
    """debuginfod downloads had a time limit and no size limit: a server sending a 4 GiB body
    wrote 4.15 GB under the cache in 10 s (DEBUGINFOD_MAXSIZE was not set; keep() checked its
    1 GiB only once the file was whole)."""
    r, srv, left, took = fetch_huge("huge")
    assert r.returncode == 0, r.stderr
    assert srv.asked >= 1, "the server was never asked"
    assert srv.biggest < 64 << 20, "a debug file claiming 4 GiB was downloaded: %d MB in %.1f s" % (
        srv.biggest >> 20, took)
    assert left < 1 << 20, "%d bytes left in the caches" % left


@test
def test_debuginfod_download_without_a_length_bounded():
    """A body sent without Content-Length: DEBUGINFOD_MAXSIZE (here lowered to 32 MiB) stops it
    as it comes, as keep() bounds the copy."""
    r, srv, left, took = fetch_huge("endless", DEBUGINFOD_MAXSIZE=str(32 << 20))
    assert r.returncode == 0, r.stderr
    assert srv.asked >= 1, "the server was never asked"
    # What the socket buffers held beyond what was written is the slack.
    assert srv.biggest < 64 << 20, "a body with no length ran %d MB in %.1f s past a 32 MiB bound" % (
        srv.biggest >> 20, took)
    assert left < 1 << 20, "%d bytes left in the caches" % left
