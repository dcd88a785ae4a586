# SPDX-License-Identifier: GPL-2.0
"""spanperf report: every output checked against perf script on the same
file, the SVG parsed as XML, the pprof decoded independently and read by the
real pprof tool, and each symbol source (ELF, debug files, JIT maps)."""
import collections
import os
import re
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET

import pprof_decode
from harness import (BUILD, ROOT, WORKLOAD, Skip, json_lines, need_bpf, need_perf, perf_clean,
                     perf_script_samples, run, spanperf, test, tmpdir)

_cache = {}


def recording():
    """One call-graph recording shared by the output tests."""
    if "path" not in _cache:
        need_bpf()
        d = tmpdir()
        path = os.path.join(d, "g.data")
        p = spanperf("record", "-g", "-F", "999", "-o", path, "--", WORKLOAD, "spin", "400,250", check=True)
        _cache["path"], _cache["truth"] = path, json_lines(p.stdout)
    return _cache["path"], _cache["truth"]


def perf_leaf_counts(path, pid=None):
    """perf script's leaf symbols, counted; of one process's samples with pid (the rest of a
    whole-host file is other work, held to nothing)."""
    need_perf()
    return collections.Counter(strip_offset(s["frames"][0]) for s in perf_script_samples(path)
                               if s["frames"] and pid in (None, s["pid"]))


def frameless(path, pid):
    """Samples of pid perf script prints no frame for (an empty call chain), where perf report and
    our table take the sample's ip: they may be anywhere."""
    return sum(1 for s in perf_script_samples(path) if not s["frames"] and s["pid"] == pid)


def strip_offset(sym):
    return re.sub(r"\+0x[0-9a-f]+$", "", sym)


@test
def test_table_agrees_with_perf_script():
    """The workload's rows, sample for sample: the recording is of the whole host (record -- CMD
    samples every CPU), whose other processes are no truth of this test."""
    path, truth = recording()
    pid = truth[0]["pid"]
    theirs = perf_leaf_counts(path, pid)
    rows = json_lines(spanperf("report", "-i", path, "--sort", "pid,sym", "--format", "json", check=True).stdout)
    mine = collections.Counter()
    for r in rows:
        # perf report prints an address no symbol covers; perf script says [unknown].
        if r["pid"] == pid:
            mine["[unknown]" if re.match(r"^0x[0-9a-f]{16}$", r["sym"]) else r["sym"]] += r["samples"]
    nf = frameless(path, pid)
    assert sum(mine.values()) == sum(theirs.values()) + nf, (sum(mine.values()), sum(theirs.values()), nf)
    for sym, n in theirs.items():
        if n * 100 >= sum(theirs.values()):  # every function of 1% or more
            assert n <= mine.get(sym, 0) <= n + nf, "%s: spanperf %s, perf script %d" % (sym, mine.get(sym), n)
    assert mine["spin_0"] > 300 and mine["spin_1"] > 180


@test
def test_table_agrees_with_perf_report():
    path, _ = recording()
    need_perf()
    # Columns split at a separator, not at spaces: the whole host's names hold spaces (C++
    # templates, "(anonymous namespace)", thread names); perf pads each column with spaces.
    out = perf_clean(["report", "--stdio", "--no-children", "-g", "none", "--sort", "comm,dso,sym",
                      "--percent-limit", "1", "-t", "\x1f"], path)
    # Summed per name: two binaries of one name (another checkout's workload) are two rows in each.
    theirs = collections.Counter()
    for line in out.splitlines():
        cols = line.split("\x1f")
        if len(cols) != 4 or line.startswith("#"):
            continue
        pct, comm, dso, sym = cols[0].strip(), cols[1].rstrip(" "), cols[2].rstrip(" "), cols[3]
        m = re.match(r"^([\d.]+)%$", pct)
        # The workload's rows: held to what perf reads of them; other processes' names are
        # whatever they chose (perf prints their bytes raw, pads them), and no truth here.
        if m and comm == "workload" and re.match(r"^\[[.k]\] ", sym):
            theirs[(comm, dso, sym[4:])] += float(m.group(1))
    mine = collections.Counter()
    for r in json_lines(spanperf("report", "-i", path, "--format", "json", check=True).stdout):
        mine[(r["comm"], r["dso"], r["sym"])] += r["overhead"]
    assert ("workload", "workload", "spin_0") in theirs, out[-3000:]
    for key, pct in theirs.items():
        assert key in mine and abs(mine[key] - pct) < 0.02, "%s: perf %.2f%%, spanperf %s" % (key, pct, mine.get(key))
    text = spanperf("report", "-i", path, "-g", check=True).stdout
    assert re.search(r"\[\.\] spin_0\n\s+\|\n\s+[ |]--[\d.]+%--spin_0\n\s+[ |]\s+caller_0", text), text[:2000]


@test
def test_cxx_names_as_perf_shows_them():
    """Demangled like perf (no parameters, no template return type), sample
    for sample; and a uprobe span found by its C++ name."""
    need_bpf()
    need_perf()
    cxx = os.path.join(BUILD, "tests", "workload_cxx")
    d = tmpdir()
    path, spanned = os.path.join(d, "cxx.data"), os.path.join(d, "spans.data")
    spanperf("record", "-F", "999", "-o", path, "--", cxx, check=True)
    theirs = perf_leaf_counts(path)
    rows = json_lines(spanperf("report", "-i", path, "--sort", "sym", "--format", "json", check=True).stdout)
    mine = collections.Counter()
    for r in rows:
        # perf report prints an address no symbol covers; perf script says [unknown].
        mine["[unknown]" if re.match(r"^0x[0-9a-f]{16}$", r["sym"]) else r["sym"]] += r["samples"]
    for name in ("ns::Foo::get", "ns::Foo::operator()", "maxof<int>", "maxof<double>",
                 "(anonymous namespace)::hidden", "over", "main::$_0::operator()"):
        assert theirs[name] >= 5, "perf script: %d samples in %s: %s" % (theirs[name], name, theirs.most_common(12))
        assert mine[name] == theirs[name], "%s: spanperf %d, perf script %d" % (name, mine[name], theirs[name])
    # A separate run: perf script would count the span records as samples.
    spanperf("record", "-F", "999", "-o", spanned, "--span", "uprobe:%s:ns::Foo::get" % cxx, "--", cxx,
             check=True)
    spans = json_lines(spanperf("report", "-i", spanned, "--spans", "--format", "json", check=True).stdout)
    assert [s["name"] for s in spans] == ["ns::Foo::get"], spans
    assert spans[0]["samples"] >= 5, spans[0]
    # Names as report prints them, templates and anonymous namespaces included.
    spanperf("record", "-F", "999", "-o", spanned, "--span", "uprobe:%s:maxof<int>" % cxx,
             "--span", "uprobe:%s:(anonymous namespace)::hidden" % cxx, "--", cxx, check=True)
    spans = json_lines(spanperf("report", "-i", spanned, "--spans", "--format", "json", check=True).stdout)
    assert sorted(s["name"] for s in spans) == ["(anonymous namespace)::hidden", "maxof<int>"], spans
    # Overloads share a name: an error that lists their mangled names, not a guess.
    p = spanperf("record", "-o", spanned, "--span", "uprobe:%s:over" % cxx, "--", cxx)
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1, (p.returncode, p.stderr)
    assert "_Z4overi" in p.stderr and "_Z4overd" in p.stderr and "mangled" in p.stderr, p.stderr
    spanperf("record", "-F", "999", "-o", spanned, "--span", "uprobe:%s:_Z4overd" % cxx, "--", cxx, check=True)
    spans = json_lines(spanperf("report", "-i", spanned, "--spans", "--format", "json", check=True).stdout)
    assert [s["name"] for s in spans] == ["_Z4overd"] and spans[0]["samples"] >= 5, spans


@test
def test_folded_stacks():
    path, truth = recording()
    samples = perf_script_samples(path)
    out = spanperf("report", "-i", path, "--folded", check=True).stdout
    leaf, total = collections.Counter(), 0
    for line in out.splitlines():
        stack, n = line.rsplit(" ", 1)
        frames = stack.split(";")
        total += int(n)
        leaf[frames[-1]] += int(n)
        # Only the workload's own stacks are checked: its frames are its own binary's.
        if frames[-1] in ("spin_0", "spin_1") and frames[0] == "workload":
            assert frames[-2].startswith("caller_"), line
    assert total == len(samples), "folded counts sum to %d, the file has %d samples" % (total, len(samples))
    theirs = collections.Counter(strip_offset(s["frames"][0]) for s in samples if s["frames"])
    nf = sum(1 for s in samples if not s["frames"])
    for sym, n in theirs.items():
        if not sym.startswith("[unknown]"):
            assert n <= leaf[sym] <= n + nf, "%s: folded %d, perf script %d (%d frameless)" % (sym, leaf[sym], n, nf)


@test
def test_flamegraph_svg():
    path, _ = recording()
    svg = os.path.join(tmpdir(), "f.svg")
    spanperf("report", "-i", path, "--flamegraph", svg, check=True)
    tree = ET.parse(svg)  # well-formed XML, or this raises
    ns = "{http://www.w3.org/2000/svg}"
    titles = [t.text for t in tree.iter(ns + "title")]
    for fn in ("spin_0", "spin_1", "caller_0", "workload"):
        assert any(t.startswith(fn + " ") for t in titles), "no frame named %s" % fn
    spin = [t for t in titles if t.startswith("spin_0 ")][0]
    assert re.search(r"\d+ samples, [\d.]+%", spin), spin
    assert tree.getroot().find(ns + "script") is not None
    if shutil.which("xmllint"):
        assert run(["xmllint", "--noout", svg]).returncode == 0


def pprof_tool():
    """The real pprof, built once from Debian's packaged source (golang-github-google-pprof-dev)."""
    binary = os.path.join(BUILD, "pprof")
    if os.access(binary, os.X_OK):
        return binary
    if not shutil.which("go") or not os.path.isdir("/usr/share/gocode/src/github.com/google/pprof"):
        raise Skip("go or the pprof sources are missing (tools/deps.sh test installs them)")
    env = dict(os.environ, GO111MODULE="off", GOPATH="/usr/share/gocode", GOFLAGS="-mod=mod",
               GOCACHE=os.path.join(BUILD, "gocache"))
    env.pop("GOFLAGS")
    p = run(["go", "build", "-o", binary, "github.com/google/pprof"], env=env, timeout=600)
    if p.returncode:
        raise Skip("pprof did not build: %s" % p.stderr[-300:])
    return binary


@test
def test_pprof_decoded_and_read_by_pprof():
    path, truth = recording()
    out = os.path.join(tmpdir(), "p.pb.gz")
    spanperf("report", "-i", path, "--pprof", out, check=True)
    prof = pprof_decode.decode(out)
    assert prof["sample_type"] == [("samples", "count"), ("cpu", "nanoseconds")], prof["sample_type"]
    samples = perf_script_samples(path)
    assert sum(s["value"][0] for s in prof["sample"]) == len(samples)
    flat = pprof_decode.flat_by_function(prof)
    theirs = collections.Counter(strip_offset(s["frames"][0]) for s in samples if s["frames"])
    for fn in ("spin_0", "spin_1"):
        assert flat[fn] == theirs[fn], "%s: pprof %d, perf script %d" % (fn, flat[fn], theirs[fn])
    assert any(m.get(6) and prof["strings"][m[6]] for m in prof["mapping"]), "no build id in any mapping"
    # Each sample's cpu value is its period: 1.001 ms at 999 Hz.
    assert all(s["value"][1] == s["value"][0] * 1001001 for s in prof["sample"])
    binary = pprof_tool()
    p = run([binary, "-top", "-sample_index=samples", out], timeout=120)
    assert p.returncode == 0, p.stderr
    m = re.search(r"^\s+(\d+)\s+[\d.]+%\s+[\d.]+%\s+\d+\s+[\d.]+%\s+spin_0$", p.stdout, re.M)
    assert m and int(m.group(1)) == theirs["spin_0"], p.stdout


@test
def test_jit_frames_from_perf_map():
    need_bpf()
    path = os.path.join(tmpdir(), "j.data")
    p = spanperf("record", "-o", path, "--", WORKLOAD, "jit", "300", check=True)
    perf_map = json_lines(p.stdout)[0]["map"]
    pid = int(re.search(r"perf-(\d+)\.map", perf_map).group(1))
    try:
        rows = json_lines(spanperf("report", "-i", path, "--format", "json", check=True).stdout)
        theirs = perf_clean(["report", "--stdio", "--no-children", "-n", "-t", "\t", "--sort", "comm,dso,sym",
                             "--comm", "workload"], path)
    finally:
        os.unlink(perf_map)
    # perf's name for the perf map's dso, found or not (dsos.c's dso__set_basename).
    jit = [r for r in rows if r["sym"] == "jitted_loop"]
    dso = "[JIT] tid %d" % pid
    assert jit and jit[0]["samples"] > 200 and jit[0]["dso"] == dso, rows[:3]
    perf_rows = [[f.strip() for f in l.split("\t")] for l in theirs.splitlines() if not l.startswith("#")]
    assert [str(jit[0]["samples"]), dso, "[.] jitted_loop"] in [r[1:] for r in perf_rows], theirs[-800:]
    # Once the map is gone: the same dso, each address its own row, as perf prints it.
    rows_gone = json_lines(spanperf("report", "-i", path, "--format", "json", check=True).stdout)
    gone = [r for r in rows_gone if r["dso"] == dso]
    assert gone and all(re.match(r"^0x[0-9a-f]{16}$", r["sym"]) for r in gone), gone[:3]


def copy_workload(d, name="wl"):
    path = os.path.join(d, name)
    shutil.copy(WORKLOAD, path)
    return path


@test
def test_changed_binary_is_not_mis_symbolized():
    need_bpf()
    d = tmpdir()
    wl = copy_workload(d)
    path = os.path.join(d, "c.data")
    # Caches of its own (spanperf's, and perf's $HOME/.debug): a copy of this build id kept by
    # another run would name it (rightly).
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(d, "cache"), HOME=d)
    spanperf("record", "--perf-cache", "-o", path, "--", wl, "spin", "300", env=env, check=True)
    before = json_lines(spanperf("report", "-i", path, "--format", "json", env=env, check=True).stdout)
    assert any(r["sym"] == "spin_0" for r in before)
    # Another program under the same name: its symbols must not be trusted.
    os.unlink(wl)
    shutil.copy("/bin/true", wl)
    after = json_lines(spanperf("report", "-i", path, "--format", "json", env=env, check=True).stdout)
    mine = [r for r in after if r["dso"] == "wl"]
    # No name: each address is its own row, printed as perf report prints an unresolved one.
    assert mine and all(re.match(r"^0x[0-9a-f]{16}$", r["sym"]) for r in mine), mine[:3]


@test
def test_stripped_binary_finds_its_debug_file():
    need_bpf()
    if not shutil.which("objcopy"):
        raise Skip("objcopy (binutils) is missing")
    d = tmpdir()
    wl = copy_workload(d, "stripped")
    dbg = wl + ".debug"
    run(["objcopy", "--only-keep-debug", wl, dbg], check=True)
    run(["objcopy", "--strip-all", "--add-gnu-debuglink=" + dbg, wl], check=True)
    os.makedirs(os.path.join(d, ".debug"))
    os.rename(dbg, os.path.join(d, ".debug", "stripped.debug"))
    assert "spin_0" not in run(["nm", "-D", wl]).stdout
    path = os.path.join(d, "s.data")
    spanperf("record", "-o", path, "--", wl, "spin", "300", check=True)
    rows = json_lines(spanperf("report", "-i", path, "--format", "json", check=True).stdout)
    assert any(r["sym"] == "spin_0" and r["dso"] == "stripped" for r in rows), rows[:3]


def proc_modules():
    # A kernel built without module support has no /proc/modules: an empty list.
    return open("/proc/modules").read() if os.path.exists("/proc/modules") else ""


def kernel_rows(path, env):
    rows = json_lines(spanperf("report", "-i", path, "--sort", "dso,sym", "--format", "json", env=env,
                               check=True).stdout)
    return {r["sym"]: r["samples"] for r in rows if r["dso"] == "[kernel.kallsyms]"}


@test
def test_kernel_symbols_copy_per_layout():
    """record keeps /proc/kallsyms per kernel build id and load address (KASLR
    moves the kernel at each boot, the build id stays), reads it anew when the
    modules change, and report takes kernel names from the copy of the
    recorded layout only."""
    need_bpf()
    d = tmpdir()
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(d, "cache"))
    cdir = os.path.join(d, "cache", "spanperf", "kallsyms")
    path = os.path.join(d, "k.data")
    spanperf("record", "-F", "999", "-o", path, "--", WORKLOAD, "syscalls", "400", env=env, check=True)
    text = next(int(l.split()[0], 16) for l in open("/proc/kallsyms") if l.split()[2] == "_text")
    # Beside the copy: the modules it was taken with, and its _text and _etext (9464456).
    names = sorted(os.listdir(cdir))
    assert len(names) == 3 and names[1:] == [names[0] + ".modules", names[0] + ".text"], names
    copy = os.path.join(cdir, names[0])
    assert names[0].endswith("-%x" % text), (names, hex(text))
    assert os.stat(copy).st_mode & 0o777 == 0o600, oct(os.stat(copy).st_mode)
    assert open(copy + ".modules").read() == proc_modules()

    before = kernel_rows(path, env)
    hot = max((n for n in before if re.match(r"^[A-Za-z_]\w+$", n)), key=before.get)
    body = open(copy).read()
    assert re.search(r" %s$" % hot, body, re.M), hot
    open(copy, "w").write(re.sub(r" %s$" % hot, " spanperf_copy_" + hot, body, flags=re.M))
    after = kernel_rows(path, env)
    assert after.get("spanperf_copy_" + hot) == before[hot] and hot not in after, (hot, before[hot], after)

    # The copy of another layout is not used: the running kernel's own list is, as it is the recorded one.
    os.rename(copy, os.path.join(cdir, names[0].rsplit("-", 1)[0] + "-%x" % (text + 0x200000)))
    assert kernel_rows(path, env).get(hot) == before[hot], (hot, before[hot], kernel_rows(path, env))

    # Changed modules: the next record reads the list anew.
    os.rename(os.path.join(cdir, names[0].rsplit("-", 1)[0] + "-%x" % (text + 0x200000)), copy)
    open(copy + ".modules", "w").write("gone 16384 0 - Live 0x0000000000000000\n")
    spanperf("record", "-F", "999", "-o", path, "--", "true", env=env, check=True)
    assert "spanperf_copy_" not in open(copy).read(), "the copy was not read anew"
    assert open(copy + ".modules").read() == proc_modules()


@test
def test_report_errors():
    d = tmpdir()
    empty = os.path.join(d, "empty")
    open(empty, "w").close()
    cases = [
        (["-i", "/nonexistent.data"], "/nonexistent.data: cannot open"),
        (["-i", d], "is a directory"),
        (["-i", empty], "is empty"),
        (["-i", "/etc/hostname"], "/etc/hostname: is too short"),
        (["-i", "/bin/true"], "/bin/true: is not a perf.data file"),
        (["--sort", "bogus"], "--sort 'bogus'"),
        (["--format", "xml"], "--format 'xml'"),
        (["--percent-limit", "x"], "--percent-limit 'x'"),
    ]
    for args, needle in cases:
        p = spanperf("report", *args)
        assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1 and needle in p.stderr, (args, p.stderr)
    path, _ = recording()
    p = spanperf("report", "-i", path, "--flamegraph", "/nonexistent/dir/x.svg")
    assert p.returncode == 1 and "/nonexistent/dir/x.svg" in p.stderr, p.stderr


def sample_records(data):
    """The file offsets of data's SAMPLE records whose event has a call chain, each with where
    its chain's length is, and the offset of the first record after the first quarter of them."""
    attr_size, attrs_off, attrs_size, data_off, data_size = struct.unpack_from("<QQQQQ", data, 16)
    types = {}
    for a in range(attrs_off, attrs_off + attrs_size, attr_size):
        sample_type = struct.unpack_from("<Q", data, a + 24)[0]
        ids_off, ids_size = struct.unpack_from("<QQ", data, a + attr_size - 16)
        for i in range(ids_off, ids_off + ids_size, 8):
            types[struct.unpack_from("<Q", data, i)[0]] = sample_type
    out, pos = [], data_off
    while pos < data_off + data_size:
        typ, _, size = struct.unpack_from("<IHH", data, pos)
        if typ == 9:  # PERF_RECORD_SAMPLE; each of ours starts with its IDENTIFIER
            t = types[struct.unpack_from("<Q", data, pos + 8)[0]]
            # IDENTIFIER IP TID TIME ADDR ID STREAM_ID CPU PERIOD before the chain (no READ in ours)
            at = pos + 8 + 8 * sum(1 for bit in (1 << 16, 1, 2, 4, 8, 64, 512, 128, 256) if t & bit)
            if t & 32 and not t & 16:
                out.append((pos, at))
        pos += size
    return out


@test
def test_a_malformed_sample_is_said_as_it_was():
    """A sample whose chain runs past its end is said by its offset, exit status 1, however the
    records are read (queued samples are decoded when delivered): alone, and before a later record
    whose size is bad, the sample is the one said; the bad size alone is said."""
    path, _ = recording()
    data = open(path, "rb").read()
    samples = sample_records(data)
    assert len(samples) > 100, len(samples)
    bad, at = samples[len(samples) // 4]
    later = samples[len(samples) // 2][0]
    d = tmpdir()
    cases = []
    for name, marks in (("chain", (bad,)), ("both", (bad, later)), ("size", (later,))):
        b = bytearray(data)
        if bad in marks:
            struct.pack_into("<Q", b, at, 1 << 40)
        if later in marks:
            struct.pack_into("<H", b, later + 6, 12)
        f = os.path.join(d, name + ".data")
        open(f, "wb").write(bytes(b))
        want = ("sample at offset %d does not match its event's sample_type" % bad if bad in marks
                else "record at offset %d has a bad size 12" % later)
        cases.append((f, want))
    for f, want in cases:
        for args in ((), ("--folded",), ("-g",), ("--spans",)):
            p = spanperf("report", "-i", f, *args)
            lines = p.stderr.strip().splitlines()
            assert p.returncode == 1 and len(lines) == 1 and lines[0] == "spanperf report: %s: %s" % (f, want), (f, args, p.stderr)
