#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Complete call chains per program on a real host (issue 22's "Real host").

    python3 tools/realhost.py [-d SECONDS] [-F HZ] [--modes M,...] [--keep DIR] [--json]

Runs python3, gcc (cc1 compiling one of spanperf's own files, again and
again), xz, sort, node --perf-basic-prof and, where javac is installed,
java -XX:+PreserveFramePointer, all at once; while they run, records the
whole host (-a) once per mode, one mode after the other:

    ehframe      spanperf record --call-graph ehframe (what -g takes)
    fp           spanperf record --call-graph fp (perf's -g)
    dwarf        spanperf record --call-graph dwarf
    perf-fp      perf record -g
    perf-dwarf   perf record --call-graph dwarf

Each program runs through a symlink named rh-PROGRAM, so that its comm is
its own: other people's python3 or cc1 on a shared host are not counted.
For each file and each program it prints the samples, the share
whose outermost frame is a thread's root (_start, __libc_start_main,
start_thread, clone, clone3 and their aliases) as spanperf report --folded
reads them and as perf script reads them, and the share of samples whose
leaf perf script and spanperf name alike (counts per leaf, matched).

The ground truth is the chains' own outermost frames: a chain that stops
short of a root is cut, whatever its frames say.  Samples taken while the
kernel exits or execs the process (do_exit, load_elf_binary on the chain)
have no user stack to unwind and are left out of the shares.
"""
import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
ROOTS = {"_start", "__libc_start_main", "__libc_start_main_impl", "__libc_start_call_main", "start_thread",
         "clone", "clone3", "__clone", "__clone3", "__GI___clone", "__GI___clone3", "__clone_internal",
         # ld.so's _start calls _dl_start, whose return address is the label after the call
         "_dl_start_user"}
MODES = {
    "ehframe": ["spanperf", "--call-graph", "ehframe"],
    "fp": ["spanperf", "--call-graph", "fp"],
    "dwarf": ["spanperf", "--call-graph", "dwarf"],
    "perf-fp": ["perf", "-g"],
    "perf-dwarf": ["perf", "--call-graph", "dwarf"],
}

PY_LOOP = """
import sys, time
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
def work(d):
    return sorted(str(i * 7919 % 10007) for i in range(2000)) and fib(18)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    work({})
"""

NODE_LOOP = """
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
function work() { let s = 0; for (let i = 0; i < 50; i++) s += fib(18); return s; }
const end = Date.now() + 1000 * Number(process.argv[2]);
while (Date.now() < end) work();
"""

JAVA_SRC = """
public class Spin {
    static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
    static long work() { long s = 0; for (int i = 0; i < 50; i++) s += fib(18); return s; }
    public static void main(String[] a) {
        long end = System.currentTimeMillis() + 1000L * Long.parseLong(a[0]);
        long s = 0;
        while (System.currentTimeMillis() < end) s += work();
        System.out.println(s);
    }
}
"""

# comm -> the program it stands for.  Each is started through a symlink of
# its own name, so that its comm is ours alone: other people's python3 or
# cc1 on a shared host are not counted.  cc1 is gcc's compiler proper, run
# as the driver runs it.
PROGRAMS = collections.OrderedDict([("rh-python3", "python3"), ("rh-cc1", "gcc (cc1)"), ("rh-xz", "xz"),
                                    ("rh-sort", "sort"), ("rh-node", "node"), ("rh-java", "java")])
CC1 = "/usr/lib/gcc/x86_64-linux-gnu/12/cc1"


def spanperf_bin():
    return os.environ.get("SPANPERF", os.path.join(ROOT, "spanperf"))


def spawn(args, **kw):
    """A workload in a session of its own: stop() ends it and what it runs."""
    return subprocess.Popen(args, start_new_session=True, **kw)


def link(d, name, target):
    path = os.path.join(d, "bin", name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if not os.path.lexists(path):
        os.symlink(target, path)
    return path


def start_workloads(d, seconds, only=None):
    """The programs (only: a list of comms), each in a loop of its own for `seconds`; returns comm -> Popen."""
    want = lambda comm: only is None or comm in only
    loop = lambda cmd: ["sh", "-c", "end=$(($(date +%%s) + %d)); while [ $(date +%%s) -lt $end ]; do %s; done"
                        % (seconds, cmd)]
    procs = {}
    if want("rh-python3"):
        procs["rh-python3"] = spawn([link(d, "rh-python3", "/usr/bin/python3"), "-c", PY_LOOP,
                                                str(seconds)])
    if want("rh-cc1") and os.path.exists(CC1):
        inc = [a for sub in ("base", "perfdata", "sys") for a in ("-iquote", os.path.join(ROOT, "user", sub))]
        cc1 = " ".join([link(d, "rh-cc1", CC1), "-quiet", "-imultiarch", "x86_64-linux-gnu", "-O2", "-g",
                        "-D_GNU_SOURCE"] + inc + ["-I", os.path.join(ROOT, "bpf"),
                                                   os.path.join(ROOT, "user", "sys", "ehframe.c"), "-o", "/dev/null"])
        procs["rh-cc1"] = spawn(loop(cc1 + " >/dev/null 2>&1"))
    if want("rh-xz"):
        data = os.path.join(d, "data.bin")
        with open(data, "wb") as f:
            # Compressible but not trivially: a few real files.
            for p in ("/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/perl", "/usr/bin/python3.11"):
                if os.path.exists(p):
                    with open(p, "rb") as g:
                        f.write(g.read(8 << 20))
        procs["rh-xz"] = spawn(loop("%s -6 -T1 -c %s >/dev/null" % (link(d, "rh-xz", "/usr/bin/xz"), data)))
    if want("rh-sort"):
        lines = os.path.join(d, "lines.txt")
        with open(lines, "w") as f:
            x = 12345
            for i in range(1500000):
                x = (x * 1103515245 + 12345) & 0x7fffffff
                f.write("%08x %d line\n" % (x, i))
        procs["rh-sort"] = spawn(loop("LC_ALL=C %s -S 64M --parallel=1 %s >/dev/null"
                                                 % (link(d, "rh-sort", "/usr/bin/sort"), lines)))
    if want("rh-node") and shutil.which("node"):
        js = os.path.join(d, "loop.js")
        with open(js, "w") as f:
            f.write(NODE_LOOP)
        procs["rh-node"] = spawn([link(d, "rh-node", shutil.which("node")), "--perf-basic-prof", js,
                                             str(seconds)], cwd=d)
    if want("rh-java") and shutil.which("javac") and shutil.which("java"):
        with open(os.path.join(d, "Spin.java"), "w") as f:
            f.write(JAVA_SRC)
        if subprocess.run(["javac", "Spin.java"], cwd=d, capture_output=True).returncode == 0:
            procs["rh-java"] = spawn([link(d, "rh-java", os.path.realpath(shutil.which("java"))),
                                                 "-XX:+PreserveFramePointer", "-cp", d, "Spin", str(seconds)],
                                                stdout=subprocess.DEVNULL)
    return procs


def stop(procs):
    """Each loop and what it runs now (its process group)."""
    for p in procs.values():
        if p.poll() is None:
            try:
                os.killpg(p.pid, 9)
            except ProcessLookupError:
                pass
    for p in procs.values():
        p.wait()
    # node --perf-basic-prof's map, which it leaves behind: another process may get its pid.
    if "rh-node" in procs:
        try:
            os.unlink("/tmp/perf-%d.map" % procs["rh-node"].pid)
        except OSError:
            pass


def record(mode, path, seconds, hz, extra=(), nice=0):
    """Records the whole host; returns the recorder's stderr.  extra: more of spanperf's options;
    nice: the recorder's nice value (below 0 to put it ahead of others' load on a shared host)."""
    tool, *args = MODES[mode]
    if tool == "spanperf":
        cmd = [spanperf_bin(), "record", "-a", "-F", str(hz), "-d", str(seconds), "-o", path] + args + list(extra)
    else:
        # --no-bpf-event: perf 6.1's script stops at its own KSYMBOL records of
        # BPF programs others load meanwhile ("failed to process type: 17").
        cmd = ["perf", "record", "-a", "--no-bpf-event", "-F", str(hz), "-o", path] + args + \
            ["--", "sleep", str(seconds)]
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", preexec_fn=(lambda: os.nice(nice)) if nice else None)
    if p.returncode:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr[-1500:]))
    return p.stderr


def spanperf_stacks(path, pids=None):
    """comm -> Counter of frame tuples, leaf first, from report --folded (of pids' samples alone if given)."""
    # errors="replace", as perf script's output is read below: a host's comm may be any bytes (another
    # test's hostile names), and a folded line of them must not end the comparison.
    pick = ["--pids", ",".join(str(p) for p in sorted(pids))] if pids else []
    out = subprocess.run([spanperf_bin(), "report", "-i", path, "--folded", "--no-inline"] + pick,
                         capture_output=True, text=True, errors="replace", check=True).stdout
    stacks = collections.defaultdict(collections.Counter)
    for line in out.splitlines():
        st, n = line.rsplit(" ", 1)
        fr = st.split(";")
        stacks[fr[0]][tuple(reversed(fr[1:]))] += int(n)
    return stacks


def perf_frame(line):
    """ "    7f00 name+0x1f" -> name (a name may hold spaces)."""
    parts = line.strip().split(None, 1)
    if len(parts) < 2:
        return "[unknown]"
    return re.sub(r"\+0x[0-9a-f]+$", "", parts[1])


class PerfFailed(RuntimeError):
    """perf script did not finish: its samples would be short."""


# The records that name Python frames (spanperf-python) are samples of an event of their own, one
# line each with no chain and no blank line after: not a program's samples.
NOT_SAMPLES = ("spanperf-python:",)


def perf_records(out):
    """perf script -F comm,tid,event,...: (comm, event, header's other words, chain lines) per record,
    a record beginning at each line that is not a chain's (a tab first)."""
    recs = []
    for line in out.split("\n"):
        if not line.strip():
            continue
        if line.startswith("\t"):
            if recs:
                recs[-1][3].append(line)
            continue
        # "comm tid [time:] event: [ip sym]": the comm may hold spaces; the event is the word ending in ':'
        # after the tid.
        words = line.split()
        ev = next((i for i, w in enumerate(words) if w.endswith(":") and i > 0 and not re.match(r"[\d.]+:$", w)), None)
        if ev is None:
            continue
        tid = ev - 1
        while tid > 0 and not re.match(r"\d+$", words[tid]):
            tid -= 1
        recs.append((" ".join(words[:tid]) if tid > 0 else words[0], words[ev], words[tid + 1:ev], []))
    return recs


def perf_stacks(path):
    """comm -> Counter of frame tuples, leaf first, from perf script.  perf 6.1
    aborts now and then in its build-id code on this host (test_dwarf.py's
    perf_aborts): tried five times, then PerfFailed."""
    for _ in range(5):
        p = subprocess.run(["perf", "script", "--no-inline", "-F", "comm,tid,event,ip,sym", "-i", path],
                           capture_output=True, text=True, errors="replace")
        if p.returncode == 0:
            break
    if p.returncode:
        raise PerfFailed("perf script -i %s exited %d: %s" % (path, p.returncode, p.stderr[-500:]))
    stacks = collections.defaultdict(collections.Counter)
    for comm, event, _, lines in perf_records(p.stdout):
        if event not in NOT_SAMPLES:
            stacks[comm][tuple(perf_frame(l) for l in lines)] += 1
    return stacks, p.stderr


def perf_samples_after(path, skip):
    """comm -> Counter of frame tuples, leaf first, of the samples perf script
    shows from `skip` seconds after the file's first sample on."""
    p = subprocess.run(["perf", "script", "--no-inline", "-F", "comm,tid,time,event,ip,sym", "-i", path],
                       capture_output=True, text=True, errors="replace")
    if p.returncode:
        raise PerfFailed("perf script -i %s exited %d: %s" % (path, p.returncode, p.stderr[-500:]))
    samples = []
    for comm, event, rest, lines in perf_records(p.stdout):
        if event not in NOT_SAMPLES and rest and re.match(r"[\d.]+:$", rest[-1]):
            samples.append((comm, float(rest[-1][:-1]), tuple(perf_frame(l) for l in lines)))
    t0 = min((t for _, t, _ in samples), default=0)
    stacks = collections.defaultdict(collections.Counter)
    for comm, t, frames in samples:
        if t - t0 >= skip:
            stacks[comm][frames] += 1
    return stacks


def frame_name(f):
    """__libc_start_main@@GLIBC_2.34 is __libc_start_main."""
    return f.split("@@")[0]


def complete(st):
    """The outermost frame is a root; or, in a stripped program (xz, sort), an
    unnamed frame that called __libc_start_main, which only _start does."""
    if not st:
        return False
    if frame_name(st[-1]) in ROOTS:
        return True
    return len(st) >= 2 and st[-1] == "[unknown]" and frame_name(st[-2]) in ("__libc_start_main",
                                                                            "__libc_start_main_impl")


# The kernel is tearing the process's memory down (exit_mm has let go of it)
# or building it (exec): such a sample has no user chain for anyone to take.
NO_USER_STATE = {"do_exit", "load_elf_binary"}


def chainless(st):
    return not complete(st) and any(f in NO_USER_STATE for f in st)


def share(counter, pred):
    n = sum(c for st, c in counter.items() if not chainless(st))
    return (sum(c for st, c in counter.items() if pred(st) and not chainless(st)) / n) if n else None


def leaf(st):
    """The leaf's name up to its first space: perf script prints a perf map's
    "JS:*fib /path/loop.js:2:13" and spanperf its own spelling of the rest."""
    return frame_name(st[0]).split(" ")[0] if st else ""


def python_named(st):
    """A chain (leaf first) whose Python part is named and whole: frames py::NAME, the outermost of
    them the module's, and no eval-loop frame left that stands for none (issue 34)."""
    py = [f for f in st if f.startswith("py::")]
    return bool(py) and py[-1].startswith("py::<module>:") and not any(
        frame_name(f) == "_PyEval_EvalFrameDefault" for f in st)


def leaf_agreement(a, b):
    la, lb = collections.Counter(), collections.Counter()
    for st, c in a.items():
        la[leaf(st)] += c
    for st, c in b.items():
        lb[leaf(st)] += c
    n = max(sum(la.values()), sum(lb.values()))
    return sum(min(la[k], lb[k]) for k in la) / n if n and lb else None


def measure(path):
    """program -> {samples, complete (spanperf), complete (perf), leaf agreement}."""
    ours = spanperf_stacks(path)
    try:
        theirs, perr = perf_stacks(path)
    except PerfFailed as e:
        # perf 6.1 gives up on some files of its own (KSYMBOL records of
        # other people's BPF programs: "failed to process type: 17"): no
        # perf column then, and the reason under the table.
        theirs, perr = {}, str(e)
    rows = collections.OrderedDict()
    for comm, name in PROGRAMS.items():
        a, b = ours.get(comm, collections.Counter()), theirs.get(comm, collections.Counter())
        if not a and not b:
            continue
        rows[name] = {"samples": sum(a.values()), "perf_samples": sum(b.values()),
                      "complete": share(a, complete), "perf_complete": share(b, complete),
                      "leaf_agree": leaf_agreement(a, b)}
        if comm == "rh-python3":
            rows[name]["py_named"] = share(a, lambda st: complete(st) and python_named(st))
            rows[name]["perf_py_named"] = share(b, lambda st: complete(st) and python_named(st)) if b else None
    return rows, perr


def pct(v):
    return "   -  " if v is None else "%5.1f%%" % (100 * v)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-d", type=int, default=5, help="seconds per recording (default 5)")
    ap.add_argument("-F", type=int, default=999, help="sampling rate (default 999)")
    ap.add_argument("--modes", default=",".join(MODES), help="comma list of " + ", ".join(MODES))
    ap.add_argument("--keep", help="write the recordings into this folder and keep them")
    ap.add_argument("--json", action="store_true", help="one JSON object per mode and program")
    ap.add_argument("--read", metavar="DIR", help="no recording: read the MODE.data files a --keep run left in DIR")
    a = ap.parse_args(argv[1:])
    modes = a.modes.split(",")
    for m in modes:
        if m not in MODES:
            ap.error("unknown mode '%s'" % m)
    if a.read:
        results = collections.OrderedDict((m, measure(os.path.join(a.read, m + ".data"))) for m in modes
                                          if os.path.exists(os.path.join(a.read, m + ".data")))
        return show(results, a.json)
    d = a.keep or tempfile.mkdtemp(prefix="realhost-")
    os.makedirs(d, exist_ok=True)
    # Long enough for every recording, and a second before the first so that startup is past.
    # They run until every recording is done (then killed); read afterwards, on an idle host.
    procs = start_workloads(d, 3600)
    results = collections.OrderedDict()
    try:
        time.sleep(2)
        for m in modes:
            err = record(m, os.path.join(d, m + ".data"), a.d, a.F)
            with open(os.path.join(d, m + ".log"), "w") as f:
                f.write(err)
        stop(procs)
        for m in modes:
            results[m] = measure(os.path.join(d, m + ".data"))
    finally:
        stop(procs)
        if not a.keep:
            shutil.rmtree(d, ignore_errors=True)
    return show(results, a.json)


def show(results, as_json):
    if as_json:
        for m, (rows, perr) in results.items():
            for name, r in rows.items():
                print(json.dumps(dict(mode=m, program=name, **r)))
        return 0
    print("%-11s %-10s %8s %14s %14s %11s %16s" % ("mode", "program", "samples", "complete(sp)", "complete(perf)",
                                                   "leaf agree", "py named(sp/perf)"))
    for m, (rows, perr) in results.items():
        for name, r in rows.items():
            py = "%s/%s" % (pct(r["py_named"]), pct(r["perf_py_named"])) if "py_named" in r else ""
            print("%-11s %-10s %8d %14s %14s %11s %16s" % (m, name, r["samples"], pct(r["complete"]),
                                                           pct(r["perf_complete"]), pct(r["leaf_agree"]), py))
        if perr.strip():
            lines = perr.strip().splitlines()
            print("  perf script: %s" % next((l for l in lines if "exited" in l), lines[-1])[:200])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
