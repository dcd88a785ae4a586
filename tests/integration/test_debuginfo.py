# SPDX-License-Identifier: GPL-2.0
"""Names for what a distribution strips: debug files from a real debuginfod
server on loopback (Debian's), inlined frames and source lines from DWARF,
each checked against the binaries' own symbols and against perf 6.1 on the
same file."""
import collections
import http.server
import os
import re
import shutil
import socket
import subprocess
import threading
import time

from harness import BUILD, SPANPERF, Skip, json_lines, need_bpf, need_perf, perf_clean, reap, run, spanperf, test, tmpdir

HERE = os.path.dirname(os.path.abspath(__file__))
INLINE_WORKLOAD = os.path.join(BUILD, "tests", "workload_inline")
_cache = {}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def need_tools(*names):
    for n in names:
        if not shutil.which(n):
            raise Skip("%s is not installed (tools/deps.sh test installs it)" % n)


def stripped_app():
    """dbgapp and libdbgwork.so built with -g, their debug files split off
    (objcopy --only-keep-debug) into debug/, then stripped; the library
    without .eh_frame, so that its CFI is only in its debug file.  One
    --call-graph dwarf recording of it, shared."""
    if "dir" in _cache:
        return _cache
    need_bpf()
    need_tools("cc", "objcopy", "strip", "nm")
    d = tmpdir()
    b, dbg = os.path.join(d, "bin"), os.path.join(d, "debug")
    os.makedirs(b)
    os.makedirs(dbg)
    run(["cc", "-g", "-O2", "-fPIC", "-shared", "-fomit-frame-pointer", "-fno-asynchronous-unwind-tables",
         "-fno-unwind-tables", "-Wl,--build-id", "-o", os.path.join(b, "libdbgwork.so"),
         os.path.join(HERE, "debuginfod_lib.c")], check=True)
    run(["cc", "-g", "-O2", "-fno-omit-frame-pointer", "-Wl,--build-id", "-o", os.path.join(b, "dbgapp"),
         os.path.join(HERE, "debuginfod_app.c"), "-L" + b, "-ldbgwork", "-Wl,-rpath,$ORIGIN"], check=True)
    syms = {}
    for f in ("libdbgwork.so", "dbgapp"):
        run(["objcopy", "--only-keep-debug", os.path.join(b, f), os.path.join(dbg, f + ".debug")], check=True)
        run(["strip", "--strip-all", os.path.join(b, f)], check=True)
        # The truth: each static function's extent, from the debug file's symbol table.
        for line in run(["nm", "-S", "--defined-only", os.path.join(dbg, f + ".debug")], check=True).stdout.splitlines():
            p = line.split()
            if len(p) == 4 and p[2] in "tT":
                syms[(f, p[3])] = (int(p[0], 16), int(p[0], 16) + int(p[1], 16))
    fdes = run(["readelf", "--debug-dump=frames", os.path.join(b, "libdbgwork.so")], check=True).stdout
    assert "FDE" not in fdes, "the stripped library still has CFI: %s" % fdes[:300]
    path = os.path.join(d, "app.data")
    p = spanperf("record", "--call-graph", "dwarf", "-F", "999", "-o", path, "--", os.path.join(b, "dbgapp"), "2",
                 check=True)
    _cache.update(dir=d, bin=b, debug=dbg, path=path, syms=syms, record_err=p.stderr)
    return _cache


def env_for(d, urls=None, name="cache"):
    """A fresh build-id cache and libdebuginfod cache per call: nothing from an earlier test."""
    cache = os.path.join(d, name)
    os.makedirs(os.path.join(cache, "debuginfod"), exist_ok=True)
    env = dict(os.environ, XDG_CACHE_HOME=cache, DEBUGINFOD_CACHE_PATH=os.path.join(cache, "debuginfod"))
    env.pop("DEBUGINFOD_URLS", None)
    if urls:
        env["DEBUGINFOD_URLS"] = urls
    return env


def folded(path, env, *extra, comm="dbgapp"):
    p = spanperf("report", "-i", path, "--folded", *extra, env=env, check=True)
    stacks = collections.Counter()
    for line in p.stdout.splitlines():
        # Other people's processes on this host may have a newline in their comm.
        if " " not in line:
            continue
        st, n = line.rsplit(" ", 1)
        fr = st.split(";")
        if fr[0] == comm and n.isdigit():
            stacks[tuple(reversed(fr[1:]))] += int(n)
    return stacks, p.stderr


def user_leaf(st):
    """The leaf of the user part: the first frame that is not the kernel's."""
    for f in st:
        if not re.match(r"^(asm_|__irq|irq|sysvec|common_interrupt|handle_|__sysvec|_raw_|\w+_softirq)", f):
            return f
    return st[0] if st else ""


class DebuginfodServer:
    """Debian's debuginfod, on a free loopback port, indexing one folder."""

    def __init__(self, folder, d):
        need_tools("debuginfod")
        self.port = free_port()
        self.log = open(os.path.join(d, "debuginfod.log"), "w")
        self.p = subprocess.Popen(["debuginfod", "-F", folder, "-p", str(self.port), "-d",
                                   os.path.join(d, "debuginfod.sqlite"), "-L", "-v"],
                                  stdout=self.log, stderr=subprocess.STDOUT)
        self.url = "http://127.0.0.1:%d" % self.port
        # Ready when it has indexed the folder: poll /metrics for the scan to finish.
        for _ in range(100):
            time.sleep(0.2)
            if self.p.poll() is not None:
                raise Skip("debuginfod exited %d: %s" % (self.p.returncode, open(self.log.name).read()[-300:]))
            try:
                out = subprocess.run(["curl", "-s", self.url + "/metrics"], capture_output=True, text=True, errors="replace",
                                     timeout=5).stdout
            except (OSError, subprocess.TimeoutExpired):
                continue
            if re.search(r'^scanned_files_total\{source="file system"\} [1-9]', out, re.M) or \
                    re.search(r"^thread_work_total\{role=\"traverse\"\} [1-9]", out, re.M):
                time.sleep(0.5)
                return
        raise Skip("debuginfod did not index %s in 20 s" % folder)

    def stop(self):
        reap(self.p)
        self.log.close()

    def requests(self):
        return len(re.findall(r"GET /buildid/", open(self.log.name).read()))


class WrongServer(http.server.ThreadingHTTPServer):
    """A debuginfod that answers every build id with the same file (another build's), and counts."""

    def __init__(self, body):
        self.body, self.hits = body, 0
        srv = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                srv.hits += 1
                self.send_response(200)
                self.send_header("Content-Length", str(len(srv.body)))
                self.end_headers()
                self.wfile.write(srv.body)

            def log_message(self, *a):
                pass

        super().__init__(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d" % self.server_address[1]
        threading.Thread(target=self.serve_forever, daemon=True).start()


HOT = (("dbgapp", "app_hash"), ("libdbgwork.so", "lib_mix"))


def leaves(stacks):
    c = collections.Counter()
    for st, n in stacks.items():
        c[user_leaf(st)] += n
    return c


@test
def test_debuginfod_names_stripped_functions():
    """Without debug files the stripped functions are [unknown]; with
    DEBUGINFOD_URLS pointing at a debuginfod serving them, every hot function
    of the binary and the library is named, and --call-graph dwarf chains
    through the library (whose CFI is only in its debug file) reach main."""
    a = stripped_app()
    d = tmpdir()
    before, _ = folded(a["path"], env_for(d, name="none"), "--offline")
    lv = leaves(before)
    total = sum(before.values())
    assert total > 300, "%d samples of dbgapp" % total
    for _, fn in HOT:
        assert lv[fn] == 0, (fn, lv.most_common(5))
    assert lv["[unknown]"] * 100 >= 80 * total, lv.most_common(5)
    srv = DebuginfodServer(a["debug"], d)
    try:
        env = env_for(d, srv.url, name="fetch")
        after, err = folded(a["path"], env, "-v")
        assert srv.requests() >= 2, open(srv.log.name).read()[-1000:]
    finally:
        srv.stop()
    m = re.search(r"debuginfod: (\d+) debug files wanted: (\d+) fetched", err)
    assert m and int(m.group(2)) == 2, err[-1500:]
    assert re.search(r"debuginfod: \d+ debug files to fetch from %s, \d+ at a time, [\d.]+ s per request, "
                     r"[\d.]+ s in all" % re.escape(srv.url), err), err[-1500:]
    lv = leaves(after)
    assert sum(after.values()) == total
    for _, fn in HOT:
        assert lv[fn] * 100 >= 20 * total, (fn, lv.most_common(5))
    assert lv["[unknown]"] * 100 <= 2 * total, lv.most_common(5)
    # Chains through the library: CFI from its debug file carries them to main.
    n = sum(c for st, c in after.items() if user_leaf(st) == "lib_mix")
    m = sum(c for st, c in after.items() if user_leaf(st) == "lib_mix" and "lib_spin" in st and "main" in st)
    assert m * 100 >= 95 * n, "%d of %d lib_mix samples reach main" % (m, n)
    # The kept copies, by build id, next to record's.
    kept = os.listdir(os.path.join(env["XDG_CACHE_HOME"], "spanperf", "buildid"))
    assert len([k for k in kept if k.endswith(".debug")]) == 2, kept
    _cache["fetched_env"] = env
    _cache["fetched"] = after


@test
def test_debuginfod_cache_serves_the_next_report():
    """Server gone: the next report names them from what was kept, with
    --offline (no request at all) and with the dead server configured
    (its failure said once, never fatal)."""
    a = stripped_app()
    if "fetched_env" not in _cache:
        test_debuginfod_names_stripped_functions()
    env = _cache["fetched_env"]
    off, err = folded(a["path"], env, "--offline")
    assert off == _cache["fetched"], (off - _cache["fetched"]).most_common(3)
    assert "debuginfod" not in err, err
    dead = dict(env, DEBUGINFOD_URLS="http://127.0.0.1:%d" % free_port())
    p = spanperf("report", "-i", a["path"], "--folded", env=dead)
    assert p.returncode == 0, p.stderr
    warns = [l for l in p.stderr.splitlines() if "debuginfod" in l]
    assert len(warns) <= 1, warns
    got = collections.Counter()
    for line in p.stdout.splitlines():
        if " " not in line:
            continue
        st, n = line.rsplit(" ", 1)
        fr = st.split(";")
        if fr[0] == "dbgapp":
            got[tuple(reversed(fr[1:]))] += int(n)
    assert got == _cache["fetched"]


@test
def test_debuginfod_refuses_another_build():
    """A server answering with another build's debug file: the file is
    refused (the build id is checked), not kept, and names nothing."""
    a = stripped_app()
    d = tmpdir()
    with open(os.path.join(a["debug"], "dbgapp.debug"), "rb") as f:
        srv = WrongServer(f.read())
    try:
        env = env_for(d, srv.url)
        stacks, err = folded(a["path"], env, "-v")
        assert srv.hits >= 1
        assert re.search(r"refused \(another build id, or not ELF\)", err), err[-1500:]
        m = re.search(r"(\d+) refused for another build id", err)
        assert m and int(m.group(1)) >= 1, err[-1500:]
        lv = leaves(stacks)
        # dbgapp's own file is what it serves, so app_hash is named; nothing of the library is.
        assert lv["lib_mix"] == 0 and lv["lib_spin"] == 0, lv.most_common(5)
        kept = os.path.join(env["XDG_CACHE_HOME"], "spanperf", "buildid")
        names = os.listdir(kept) if os.path.isdir(kept) else []
        libid = re.search(r"Build ID: ([0-9a-f]+)", run(["readelf", "-n", os.path.join(a["bin"], "libdbgwork.so")],
                                                        check=True).stdout).group(1)
        assert libid + ".debug" not in names, names
        # Nor left in libdebuginfod's cache, where the next report would take it unasked.
        hits = srv.hits
        spanperf("report", "-i", a["path"], "--folded", env=env, check=True)
        assert srv.hits > hits
    finally:
        srv.shutdown()


class HangingServer:
    """Accepts connections and never answers: a server that went away mid-way."""

    def __init__(self):
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(64)
        self.url = "http://127.0.0.1:%d" % self.s.getsockname()[1]
        self.conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                self.conns.append(self.s.accept()[0])
            except OSError:
                return

    def close(self):
        self.s.close()
        for c in self.conns:
            c.close()


@test
def test_debuginfod_timeout_is_not_fatal():
    """A server that never answers: each request ends at its timeout
    (DEBUGINFOD_TIMEOUT), the rest are not asked, the report completes
    with the frames it could name, says so once, and a terminal sees a
    progress line after a second."""
    a = stripped_app()
    d = tmpdir()
    srv = HangingServer()
    try:
        env = dict(env_for(d, srv.url), DEBUGINFOD_TIMEOUT="2")
        t0 = time.time()
        p = spanperf("report", "-v", "-i", a["path"], "--sort", "sym", env=env, timeout=60)
        took = time.time() - t0
        assert p.returncode == 0, p.stderr[-1000:]
        assert took < 15, took
        m = re.search(r"debuginfod: (\d+) debug files wanted: .* (\d+) timed out", p.stderr)
        assert m and m.group(1) == m.group(2) and int(m.group(1)) >= 2, p.stderr[-1500:]
        warns = [l for l in p.stderr.splitlines() if "warning: debuginfod" in l]
        assert len(warns) == 1 and "timed out" in warns[0], warns
        assert "[.] main" in p.stdout or "[.] _start" in p.stdout or "[.] 0x" in p.stdout
        if shutil.which("script"):
            log = os.path.join(d, "tty.log")
            run(["script", "-qec", "%s report -i %s --sort sym >/dev/null" % (spanperf_bin(), a["path"]), log],
                env=env, timeout=60)
            with open(log, errors="replace", newline="") as f:
                tty = f.read()
            assert re.search(r"\rspanperf report: debuginfod: \d+ of \d+ debug files, 1 s of 30 s", tty), tty[-800:]
            # The first report's cut requests were not left in libdebuginfod's cache as misses.
            assert re.search(r"[1-9]\d* timed out, .* 0 not found\)", tty), tty[-800:]
    finally:
        srv.close()


def spanperf_bin():
    from harness import SPANPERF
    return SPANPERF


@test
def test_offline_never_asks():
    """--offline with DEBUGINFOD_URLS set: not one request reaches the server."""
    a = stripped_app()
    d = tmpdir()
    srv = WrongServer(b"not ELF")
    try:
        env = env_for(d, srv.url)
        for args in (["--folded"], ["--sort", "sym,srcline"], ["--pprof", os.path.join(d, "p.pb.gz")]):
            spanperf("report", "-i", a["path"], "--offline", *args, env=env, check=True)
        assert srv.hits == 0, srv.hits
    finally:
        srv.shutdown()


@test
def test_unknown_offsets_point_into_the_function():
    """--unknown-offsets: a stripped frame prints as DSO+0xOFFSET, and the
    offset lies inside the function the debug file says is there."""
    a = stripped_app()
    d = tmpdir()
    stacks, _ = folded(a["path"], env_for(d), "--offline", "--unknown-offsets")
    seen = collections.Counter()
    for st, n in stacks.items():
        m = re.match(r"^(libdbgwork\.so|dbgapp)\+0x([0-9a-f]+)$", user_leaf(st))
        if not m:
            continue
        off = int(m.group(2), 16)
        # Both are linked at 0 and their text's file offsets are its addresses (one PT_LOAD per page).
        for (f, fn), (lo, hi) in a["syms"].items():
            if f == m.group(1) and lo <= off < hi:
                seen[fn] += n
    total = sum(stacks.values())
    assert seen["app_hash"] + seen["lib_mix"] >= 0.5 * total, (seen, total)
    assert seen["app_hash"] > 0 and seen["lib_mix"] > 0, seen


def inline_recording():
    if "inline" not in _cache:
        need_bpf()
        path = os.path.join(tmpdir(), "inline.data")
        spanperf("record", "--call-graph", "dwarf", "-F", "999", "-o", path, "--", INLINE_WORKLOAD, "2",
                 check=True)
        _cache["inline"] = path
    return _cache["inline"]


def perf_inline_chains(path, comm):
    """perf script's chains with its inlined frames (its default), leaf first, up to main."""
    out = perf_clean(["script", "--comms", comm, "-F", "comm,event,ip,sym"], path, timeout=600, lost_ok=True)
    chains = collections.Counter()
    for block in out.split("\n\n"):
        lines = [l for l in block.split("\n") if l.strip()]
        if not lines or lines[0].split()[0] != comm:
            continue
        fr = [l.split(None, 1)[1].strip() for l in lines[1:] if len(l.split(None, 1)) == 2]
        chains[tuple(fr[:fr.index("main") + 1] if "main" in fr else fr)] += 1
    return chains


def to_main(stacks):
    c = collections.Counter()
    for st, n in stacks.items():
        c[tuple(st[:st.index("main") + 1] if "main" in st else st)] += n
    return c


@test
def test_inline_frames_equal_perf_script():
    """Static inline hot functions at -O2 -g: report --folded's frames equal
    perf script 6.1's (mix_inner (inlined), mix_outer (inlined), hot_loop,
    main) on the same file, frame by frame, sample for sample."""
    need_perf()
    path = inline_recording()
    theirs = perf_inline_chains(path, "workload_inline")
    mine, _ = folded(path, dict(os.environ), comm="workload_inline")
    mine = to_main(mine)
    total = sum(theirs.values())
    assert total > 200, total
    want = ("mix_inner (inlined)", "mix_outer (inlined)", "hot_loop", "main")
    assert sum(n for st, n in theirs.items() if st == want) * 2 > total, theirs.most_common(3)
    same = sum(min(n, mine[st]) for st, n in theirs.items())
    assert same * 100 >= 99 * total, "%d of %d chains equal perf's; perf only: %s; ours only: %s" % (
        same, total, (theirs - mine).most_common(3), (mine - theirs).most_common(3))
    # --no-inline: the real frames only.
    plain, _ = folded(path, dict(os.environ), "--no-inline", comm="workload_inline")
    assert not any("(inlined)" in f for st in plain for f in st)
    # report -g shows them in the chains, as perf report does.
    out = spanperf("report", "-i", path, "-g", "--sort", "sym", check=True).stdout
    assert re.search(r"--mix_inner \(inlined\)\n\s+\|?\s+mix_outer \(inlined\)\n\s+\|?\s+hot_loop", out), out[:1500]


@test
def test_inline_pprof_location_has_lines():
    """pprof: the address in mix_inner is one Location with three Lines,
    mix_inner, mix_outer, hot_loop, innermost first, each with its line."""
    path = inline_recording()
    d = tmpdir()
    out = os.path.join(d, "p.pb.gz")
    spanperf("report", "-i", path, "--pprof", out, check=True)
    import pprof_decode
    p = pprof_decode.decode(out)
    name = lambda fid: p["function"][fid]["name_str"]  # noqa: E731
    found = [l for l in p["location"].values() if [name(x[1]) for x in l["line"]] ==
             ["mix_inner", "mix_outer", "hot_loop"]]
    assert found, [[name(x[1]) for x in l["line"]] for l in p["location"].values()][:20]
    src = open(os.path.join(HERE, "workload_inline.c")).read().splitlines()
    for loc in found:
        ln = [x.get(2, 0) for x in loc["line"]]
        # The caller's line is where it calls the inlined function.
        assert "mix_inner(" in src[ln[1] - 1] and "mix_outer(" in src[ln[2] - 1], ln
    from test_report import pprof_tool
    r = run([pprof_tool(), "-top", "-lines", out])
    assert r.returncode == 0, r.stderr[-500:]
    assert re.search(r"mix_inner .*workload_inline\.c:1[0-5]", r.stdout), r.stdout[:1500]


@test
def test_srcline_equals_perf_report():
    """--sort srcline: the top 20 rows equal perf report --sort srcline's on
    the same file (the same lines, the same counts)."""
    need_perf()
    # perf's own recording of the workload alone: on a whole-host file perf 6.1's addr2line dies
    # on other processes' memfd files and takes perf report with it (SIGPIPE).
    path = os.path.join(tmpdir(), "perf-inline.data")
    p = run(["perf", "record", "-q", "--buildid-mmap", "-F", "999", "-o", path, "--", INLINE_WORKLOAD, "1.5"])
    if p.returncode:
        raise Skip("perf record failed here: %s" % p.stderr[-300:])
    out = perf_clean(["report", "--stdio", "--no-children", "--sort", "srcline", "-g", "none", "-F",
                      "sample,srcline", "--percent-limit", "0"], path, timeout=600)
    theirs = []
    for line in out.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        n, src = line.split(None, 1)
        theirs.append((src.strip(), int(n)))
    theirs.sort(key=lambda r: (-r[1], r[0]))
    mine = [(r["srcline"], r["samples"]) for r in json_lines(
        spanperf("report", "-i", path, "--sort", "srcline", "--format", "json", check=True).stdout)]
    mine.sort(key=lambda r: (-r[1], r[0]))
    top = theirs[:20]
    assert len(top) >= 3 and sum(n for _, n in theirs) > 300, out[:1000]
    # Rows of equal counts may sit in either order at the cut: compare as sets of the rows perf has.
    cut = top[-1][1]
    assert [r for r in top if r[1] > cut] == [r for r in mine[:20] if r[1] > cut], (top, mine[:20])
    assert set(r for r in top if r[1] == cut) <= set(r for r in mine if r[1] == cut), (top, mine[:25])
    # The workload's own lines are among them.
    assert any(s.startswith("workload_inline.c:") for s, _ in top), top


def peak_rss_kib(cmd, timeout=600):
    """Runs cmd to its end, output discarded; its exit status and peak RSS (KiB)."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    t = threading.Timer(timeout, p.kill)
    t.start()
    try:
        _, status, ru = os.wait4(p.pid, 0)
    finally:
        t.cancel()
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    return p.returncode, ru.ru_maxrss, err


def big_debug_program(d):
    """A C++ program of ~50 MB of DWARF (22,000 struct types of 100 members, all emitted) and
    one hot function with an always-inline helper: the report's DWARF reads meet a large file
    while the samples need one CU of it."""
    src, exe = os.path.join(d, "big.cpp"), os.path.join(d, "big")
    out = ["struct T%d { %s };" % (i, " ".join("long f%d_%d;" % (i, j) for j in range(100))) for i in range(22000)]
    out += ["static inline __attribute__((always_inline)) unsigned long mix(unsigned long x)"
            " { return (x ^ (x >> 7)) * 0x9e3779b97f4a7c15ul; }",
            "__attribute__((noinline)) unsigned long hot(unsigned long x)"
            " { for (int i = 0; i < 1000; i++) x = mix(x + i); return x; }",
            "volatile unsigned long sink;",
            "int main() { unsigned long x = 1; for (long i = 0; i < 1000000L; i++) x = hot(x); sink = x; }"]
    open(src, "w").write("\n".join(out) + "\n")
    run(["g++", "-g", "-O2", "-fno-omit-frame-pointer", "-fno-eliminate-unused-debug-types", "-o", exe, src],
        timeout=900, check=True)
    return exe


@test
def test_large_debug_file_report_within_perfs_memory():
    """A -g C++ program with ~50 MB of DWARF, recorded with -g: report's default (inline
    frames on, which this chain's kind does not show, as perf 6.1), -g, --html and --speedscope
    read none of the DWARF and peak at no more memory than perf report --stdio (its default) on
    the same file; --inline still finds the inlined helper in it, and -g --inline, which reads
    the DWARF of the program and of libc (its debug file's compressed sections inflated once
    into a copy that is mapped, not into the heap), stays within perf's memory too."""
    need_bpf()
    need_perf()
    need_tools("g++", "size")
    d = tmpdir()
    exe = big_debug_program(d)
    dbg = sum(int(l.split()[1]) for l in run(["size", "-A", exe], check=True).stdout.splitlines()
              if l.startswith(".debug_"))
    assert dbg > 40e6, "only %d bytes of DWARF" % dbg
    path = os.path.join(d, "big.data")
    spanperf("record", "-q", "-g", "-F", "999", "-o", path, "--", exe, timeout=300, check=True)
    rc, theirs, err = peak_rss_kib(["perf", "report", "--stdio", "-i", path])
    assert rc == 0, err[-1000:]
    folded = spanperf("report", "-i", path, "--folded", "--inline", "--comms", "big", check=True).stdout
    assert ";hot;mix (inlined) " in folded, folded[:1500]
    for args in ([], ["-g"], ["-g", "--inline"], ["--html", os.path.join(d, "p.html")],
                 ["--speedscope", os.path.join(d, "p.speedscope.json")]):
        rc, mine, err = peak_rss_kib([SPANPERF, "report", "-i", path] + args)
        assert rc == 0, (args, err[-1000:])
        assert mine <= theirs, "report %s peaked at %d KiB, perf report at %d KiB" % (" ".join(args), mine, theirs)
