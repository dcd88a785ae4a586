# SPDX-License-Identifier: GPL-2.0
"""Java frames by name (-g, ehframe's walk through HotSpot's code cache, issue 35): Chain, a
program of known call structure (main -> outer -> mid -> leaf, each too large to be inlined,
leaf calling tiny, small enough to be), under Debian's OpenJDK 17 and Temurin 25, with no
flag.  Ground truth is the program's own structure: once it says it is ready, its main
thread spends its whole time under that chain, which at least 90% of the thread's samples
must carry in spanperf's folded output and in perf script on the same file.  Slow is the
same chain in methods above HugeMethodLimit, which HotSpot never compiles: interpreted
frames only, as during a JVM's warm-up.  A daemon thread parks in take() in a loop, which
its off-CPU time must name."""
import collections
import os
import re
import select
import shutil
import signal
import subprocess
import time

from frames_common import folded, script_chains
from harness import (SPANPERF, Skip, Started, cpu_ns, in_container, need_bpf, need_perf, perf_clean, reap, run,
                     spanperf, test, tmpdir)

JDK17 = "/usr/lib/jvm/java-17-openjdk-amd64"
JDK25 = "/usr/lib/jvm/temurin-25-jdk-amd64"
SECONDS = "3"
# The busy thread's Java frames, outermost first, as the JDK's perf map names them.
CHAIN = ["void %s.main(java.lang.String[])", "void %s.busy(long)", "long %s.outer(int)", "long %s.mid(int)",
         "long %s.leaf(int)"]


def pad(n):
    """n statements (~10 bytes of bytecode each) in a branch never taken: a method's size only."""
    return "\n".join("            p = p * %d + %d; p ^= p >>> %d;" % (31 + i, i * 7 + 3, i % 29 + 1) for i in range(n))


def source(cls, npad):
    body = """
    static long %(m)s(int n) {
        long acc = %(init)s;
        %(loop)s
        if (n == -12345) {
            long p = acc;
%(pad)s
            acc = p;
        }
        return acc;
    }
"""
    methods = "".join(body % {"m": m, "init": init, "loop": loop, "pad": pad(npad)} for m, init, loop in (
        ("outer", "0", "for (int i = 0; i < n; i++) acc += mid(i + 4);"),
        ("mid", "0", "for (int i = 0; i < 4; i++) acc += leaf(n + i);"),
        ("leaf", "n", "for (int i = 0; i < 20000; i++) acc += tiny((int) acc + i);")))
    return """import java.util.concurrent.locks.LockSupport;

public class %(cls)s {
    static volatile long sink;

    public static void main(String[] args) throws Exception {
        double secs = Double.parseDouble(args[0]);
        int workers = args.length > 1 ? Integer.parseInt(args[1]) : 0;
        Thread t = new Thread(%(cls)s::taker, "taker");
        t.setDaemon(true);
        t.start();
        long end = System.nanoTime() + (long) (secs * 1e9);
        for (int i = 0; i < workers; i++) {
            Thread w = new Thread(() -> paced(end), "worker");
            w.setDaemon(true);
            w.start();
        }
        System.out.println("ready");
        System.out.flush();
        busy(end);
    }

    /* A worker's: the chain, then a nap, so that 200 of them do not starve the host. */
    static void paced(long end) {
        long acc = 0;
        try {
            while (System.nanoTime() < end) {
                acc += outer(3);
                Thread.sleep(20);
            }
        } catch (InterruptedException e) {
        }
        sink = acc;
    }

    static void busy(long end) {
        long acc = 0;
        while (System.nanoTime() < end) acc += outer(3);
        sink = acc;
    }

    static void taker() { while (true) take(); }
    static void take() { LockSupport.parkNanos(20_000_000L); }
%(methods)s
    static int tiny(int x) {
        return (x * 0x9E3779B1) ^ (x >>> 16);
    }
}
""" % {"cls": cls, "methods": methods}


def compiled(sources, d=None):
    """sources ({class name: its source}) compiled by JDK 17's javac into d, a new directory by
    default (javac 17's classes run on 25 too): the directory."""
    javac = os.path.join(JDK17, "bin", "javac")
    if not os.path.exists(javac):
        raise Skip("no JDK 17 javac at %s" % javac)
    d = d or tmpdir()
    os.makedirs(d, exist_ok=True)
    paths = [os.path.join(d, cls + ".java") for cls in sources]
    for path, text in zip(paths, sources.values()):
        with open(path, "w") as f:
            f.write(text)
    run([javac, "-d", d] + paths, timeout=300, check=True)
    return d


_classes = None


def classes():
    """Chain and Slow compiled once."""
    global _classes
    if not _classes:
        _classes = compiled({cls: source(cls, npad) for cls, npad in (("Chain", 45), ("Slow", 900))})
    return _classes


def java(jdk):
    exe = os.path.join(jdk, "bin", "java")
    if not os.path.exists(exe):
        raise Skip("no JDK at %s" % jdk)
    return exe


def start(jdk, cls, secs, workers=0):
    """The JVM running cls, once its main thread said it is ready (the chain starts then)."""
    return started([java(jdk), "-cp", classes(), cls, str(secs), str(workers)])


def busy_tid(pid):
    """The JVM's main Java thread: its comm is java, and it is not the launcher's first thread."""
    for t in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/comm" % (pid, t)) as f:
            if f.read().strip() == "java" and int(t) != pid:
                return int(t)
    raise AssertionError("no main Java thread in %d" % pid)


def record(pid, extra=(), timeout=180):
    need_bpf()
    out = os.path.join(tmpdir(), "java.data")
    p = spanperf("record", "-g", "--off-cpu", "-v", "-p", str(pid), "-o", out, *extra, "-d", SECONDS, timeout=timeout)
    assert p.returncode == 0, "record exited %d: %s" % (p.returncode, p.stderr[-3000:])
    return out, p.stderr


def perf_chains(path, tid, event="cpu-clock"):
    """perf script's chains of thread tid's samples of event: a list of frame lists, outermost first.
    A record without a chain (the names of Python and Java frames) is one line, no blank line after."""
    return script_chains(path, lambda head: len(head) > 1 and head[1] == str(tid), event)


def java_frames(frames, cls):
    return [f for f in frames if (" %s." % cls) in f]


def carries(frames, cls, root="main"):
    """Whether a chain's frames of cls are the chain to main (leaf's inlined tiny may follow); a
    worker thread's chain starts at its lambda, which calls busy."""
    want = [w % cls for w in CHAIN]
    got = java_frames(frames, cls)
    if root != "main":
        want, got = ["void %s.paced(long)" % cls] + want[2:], [f for f in got if "lambda$" not in f]
    if got == want or got == want + ["int %s.tiny(int)" % cls]:
        return True
    # A sample in busy's own code (its loop, System.nanoTime) carries the chain to main when its
    # frames are the chain's head from main, none skipped: a busy host stretches the interpreted
    # warm-up, where busy's own share is larger (CI-like run at load ~200: 23 of 487 samples there).
    return root == "main" and len(got) >= 2 and got == want[:len(got)]


def check_chain(jdk, cls):
    p = start(jdk, cls, 3600)
    try:
        tid = busy_tid(p.pid)
        path, err = record(p.pid)
    finally:
        reap(p)
    label = "%s %s" % (os.path.basename(jdk), cls)
    stacks = folded(path)["java"]
    n = sum(stacks.values())
    ok = sum(c for st, c in stacks.items() if carries(st, cls))
    worst = sorted(((c, st[-6:]) for st, c in stacks.items() if not carries(st, cls)), reverse=True)[:3]
    assert n >= 100 and ok * 100 >= 90 * n, "%s: report: %d of %d busy samples carry the chain; others: %s\n%s" % (
        label, ok, n, worst, err[-2500:])
    samples = perf_chains(path, tid)
    pok = sum(1 for c in samples if carries(c, cls))
    assert len(samples) >= 100 and pok * 100 >= 90 * len(samples), \
        "%s: perf script: %d of %d busy samples carry the chain (report had %d of %d)" % (label, pok, len(samples), ok, n)
    check_java_dso(path, cls, label)
    return path


def check_java_dso(path, cls, label):
    """perf shows a Java frame's dso as the file that names it: OUTPUT.spanperf/java-BUILDID.elf,
    never python-BUILDID.elf (the Python frames' file)."""
    out = perf_clean(["script", "-F", "tid,ip,sym,dso"], path, lost_ok=True)
    dsos = collections.Counter(re.search(r"\(([^()]*)\)\s*$", line).group(1).rsplit("/", 1)[-1]
                               for line in out.splitlines()
                               if line.startswith("\t") and (" %s." % cls) in line and line.rstrip().endswith(")"))
    named = sum(c for d, c in dsos.items() if re.fullmatch(r"java-[0-9a-f]{40}\.elf", d))
    assert named >= 100 and named == sum(dsos.values()), "%s: perf's dso of %s's frames: %s" % (label, cls, dsos.most_common(4))


def check_taker(path, cls):
    """The taker thread's off-CPU time: under take(), from the thread's root."""
    off = folded(path, "off-cpu")["taker"]
    n = sum(off.values())
    ok = sum(c for st, c in off.items() if java_frames(st, cls) == ["void %s.taker()" % cls, "void %s.take()" % cls])
    assert n > 1e9 and ok >= 0.9 * n, "%s: taker off CPU %.2f s, %.2f s of it under take(): %s" % (
        cls, n / 1e9, ok / 1e9, sorted(((c, st[-8:]) for st, c in off.items()), reverse=True)[:3])


@test
def test_java_chain_17():
    """JDK 17, no flag: compiled Chain named to main in report and perf script; take() off CPU."""
    check_taker(check_chain(JDK17, "Chain"), "Chain")


@test
def test_java_chain_25():
    """Temurin 25, no flag: the same."""
    check_taker(check_chain(JDK25, "Chain"), "Chain")


@test
def test_java_interpreted():
    """Methods HotSpot never compiles: the chain through interpreted frames, on 17 and 25."""
    for jdk in (JDK17, JDK25):
        check_chain(jdk, "Slow")


@test
def test_java_exits_mid_recording():
    """A JVM that starts and exits while the recording runs: its frames named all the same."""
    need_bpf()
    d = classes()
    out = os.path.join(tmpdir(), "java.data")
    # The JVM runs its chain for 2 s, then exits; the recording goes on after it, the sleep's.
    p = spanperf("record", "-g", "-v", "-o", out, "--", "sh", "-c",
                 "%s -cp %s Chain 2 >/dev/null; sleep 1" % (java(JDK17), d), timeout=180)
    assert p.returncode == 0, "record exited %d: %s" % (p.returncode, p.stderr[-3000:])
    stacks = folded(out)["java"]
    # The main thread's samples in the chain's own code (busy and what it calls), whole or broken:
    # not the JDK's start-up work (class loading, lambda and string-concat bootstraps), whose share
    # a busy host stretches against the chain's 2 s of wall time (89 of 103 once beside busyhost,
    # the three worst shown all in the JDK's own code).
    own = tuple(" Chain.%s(" % m for m in ("busy", "outer", "mid", "leaf", "tiny"))
    inmain = {st: c for st, c in stacks.items() if any(o in f for f in st for o in own)}
    n = sum(inmain.values())
    ok = sum(c for st, c in inmain.items() if carries(st, "Chain"))
    assert n >= 50 and ok * 100 >= 90 * n, "%d of %d samples in the chain's code carry it to main: %s\n%s" % (
        ok, n, sorted(((c, st[-6:]) for st, c in inmain.items() if not carries(st, "Chain")), reverse=True)[:3],
        p.stderr[-2000:])


def started(cmd):
    """A JVM started from cmd (its program prints "ready" when its work starts), once it said so."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors="replace")
    deadline = time.time() + 120
    while time.time() < deadline:
        r, _, _ = select.select([p.stdout], [], [], 1)
        if r:
            line = p.stdout.readline()
            if line.strip() == "ready":
                return p
            if not line:
                break
    reap(p)
    raise AssertionError("%s never said it was ready" % " ".join(cmd[-4:]))


def await_cpu(threads, ns, what):
    """Waits until each (pid, tid) has run ns more of its own CPU than when called: a budget the
    busy threads' own clocks measure, however loaded the host (a generous deadline only says so)."""
    base = {t: cpu_ns(*t) for t in threads}
    deadline = time.time() + 300
    while any(cpu_ns(*t) - base[t] < ns for t in threads):
        assert time.time() < deadline, "%s: the busy threads ran %s ns of CPU in 300 s" % (
            what, [cpu_ns(*t) - base[t] for t in threads])
        time.sleep(0.2)


def stop(p, timeout=120):
    """A recorder stopped as Ctrl-C stops it; its exit status."""
    p.send_signal(signal.SIGINT)
    return p.wait(timeout=timeout)


def recorder(pid, out):
    """spanperf record -g -v of pid into out, once its events are on: the process and its Started."""
    rec = subprocess.Popen([SPANPERF, "record", "-g", "-v", "-p", str(pid), "-o", out],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return rec, Started(rec)


def stopped(rec, on):
    """A recorder's stderr, once it stopped at Ctrl-C, as it must, with exit status 0."""
    assert stop(rec) == 0 and on.wait() == 0, on.text()
    return "".join(on.lines)


def chain_leaf(frames):
    """The innermost frame of Chain's own methods, tiny left out: tiny is inlined into leaf (HotSpot
    inlines so small a method always), which a perf map cannot show and spanperf may expand."""
    own = [f for f in frames if " Chain." in f and " Chain.tiny(" not in f]
    return own[-1] if own else "(none)"


@test
def test_java_perf_map_agrees():
    """perf's own view of the same program: a JVM run with -XX:+PreserveFramePointer, its code named
    by the map `jcmd PID Compiler.perfmap` writes, recorded by perf record -g, beside an identical
    JVM without the flag recorded by spanperf over the same window.  The innermost method of each
    busy-thread sample agrees, by name and share, on at least 95% of samples (the overlap of the two
    distributions).  Both busy threads first run 1.5 s of their own CPU (their chains compiled),
    then each recorder runs until each thread has run 2 s more."""
    need_perf()
    need_bpf()
    d = classes()
    jcmd = os.path.join(JDK17, "bin", "jcmd")
    if not os.path.exists(jcmd):
        raise Skip("no jcmd at %s" % jcmd)
    theirs = started([java(JDK17), "-XX:+PreserveFramePointer", "-cp", d, "Chain", "3600", "0"])
    ours = start(JDK17, "Chain", 3600)
    rec, perf = None, None
    pmap = "/tmp/perf-%d.map" % theirs.pid
    try:
        busy = [(theirs.pid, busy_tid(theirs.pid)), (ours.pid, busy_tid(ours.pid))]
        await_cpu(busy, 1.5e9, "warm-up")
        tdata, odata = os.path.join(tmpdir(), "perf.data"), os.path.join(tmpdir(), "java.data")
        perf = subprocess.Popen(["perf", "record", "-q", "-F", "999", "-g", "-p", str(theirs.pid), "-o", tdata],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        rec = subprocess.Popen([SPANPERF, "record", "-g", "-v", "-F", "999", "-p", str(ours.pid), "-o", odata],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        started_rec = Started(rec)
        await_cpu(busy, 2e9, "the window")
        # perf record writes its file, then dies of the SIGINT it caught (it raises it again).
        rc = stop(perf)
        assert rc in (0, -signal.SIGINT), "perf record exited %d: %s" % (rc, perf.stderr.read()[-2000:])
        rc = stop(rec)
        assert rc == 0 and started_rec.wait() == 0, "record exited %d: %s" % (rc, started_rec.text())
        # The map of what is compiled now, written by the JVM itself; perf script reads it by pid.
        run([jcmd, str(theirs.pid), "Compiler.perfmap"], timeout=120, check=True)
        mine = collections.Counter(chain_leaf(c) for c in perf_chains(tdata, busy[0][1]))
    finally:
        for p in (perf, rec):
            if p:
                reap(p)
        reap(theirs)
        reap(ours)
        if os.path.exists(pmap):
            os.unlink(pmap)
    got = collections.Counter()
    for st, c in folded(odata)["java"].items():
        got[chain_leaf(st)] += c
    # The busy thread's samples alone: report's folded output is by comm, and the launcher's first
    # thread (comm java too) sleeps in pthread_join, never on CPU.
    n1, n2 = sum(got.values()), sum(mine.values())
    assert n1 >= 500 and n2 >= 500, "spanperf %d samples, perf %d" % (n1, n2)
    agree = sum(min(got[k] / n1, mine[k] / n2) for k in set(got) | set(mine))
    assert agree >= 0.95, "leaf methods agree on %.1f%% of samples: spanperf %s; perf %s" % (
        100 * agree, got.most_common(4), mine.most_common(4))


CONSUME = """import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

public class Consume {
    static final BlockingQueue<Integer> q = new LinkedBlockingQueue<>();

    static void consumer() {
        try {
            while (true) q.take();
        } catch (InterruptedException e) {
        }
    }

    public static void main(String[] args) throws Exception {
        Thread t = new Thread(Consume::consumer, "consumer");
        t.setDaemon(true);
        t.start();
        System.out.println("ready");
        System.out.flush();
        for (int i = 0; ; i++) {
            Thread.sleep(20);
            q.put(i);
        }
    }
}
"""


@test
def test_java_offcpu_queue_take():
    """A thread parked in LockSupport.park from BlockingQueue.take(), off CPU: named take, under its
    caller, through Unsafe.park's native frame, on 17 and 25."""
    d = compiled({"Consume": CONSUME})
    for jdk in (JDK17, JDK25):
        p = started([java(jdk), "-cp", d, "Consume"])
        try:
            path, err = record(p.pid)
        finally:
            reap(p)
        off = folded(path, "off-cpu")["consumer"]
        n = sum(off.values())

        def under_take(st):
            at = [i for i, f in enumerate(st) if "Consume.consumer(" in f]
            return bool(at) and at[0] + 1 < len(st) and "java.util.concurrent.LinkedBlockingQueue.take(" in st[at[0] + 1]
        ok = sum(c for st, c in off.items() if under_take(st))
        assert n > 1e9 and ok >= 0.9 * n, "%s: consumer off CPU %.2f s, %.2f s of it under take(): %s\n%s" % (
            os.path.basename(jdk), n / 1e9, ok / 1e9, sorted(((c, st[-12:]) for st, c in off.items()), reverse=True)[:3],
            err[-1500:])


def pprof_traces(tool, path, index):
    """pprof -traces of a profile, sample_index index: (thread, value in ns, frames leaf first) each."""
    out = run([tool, "-sample_index=%s" % index, "-traces", path]).stdout
    units = {"ns": 1, "us": 1e3, "\u00b5s": 1e3, "ms": 1e6, "s": 1e9, "mins": 60e9, "hrs": 3600e9}
    traces = []
    for block in out.split("-----------+-------------------------------------------------------")[1:]:
        thread, value, frames = None, 0, []
        for line in block.splitlines():
            m = re.match(r"^\s+thread:\s+(.*)$", line)
            if m:
                thread = m.group(1)
                continue
            m = re.match(r"^\s+(\d+(?:\.\d+)?)(ns|us|\u00b5s|ms|s|mins|hrs)?\s{2,}(\S.*)$", line)
            if m and not frames:
                value = float(m.group(1)) * units.get(m.group(2) or "ns", 1)
                frames.append(m.group(3))
            elif frames and line.strip() and ":" not in line.split()[0][-1:]:
                frames.append(line.strip())
        traces.append((thread, value, frames))
    return traces


@test
def test_java_wakers_and_pprof():
    """The consumer parked in take() is woken by main's put(): with every block kept
    (--off-cpu-thresh 0), its blocked time is given to a waker whose stack names put() under
    Consume.main, in offwaketime's folded form; and the real pprof reads the blocked chains by
    their Java names (take() under Consume.consumer) from report --pprof's off_cpu values.  On 17
    and 25."""
    from test_report import pprof_tool
    tool = pprof_tool()
    d = compiled({"Consume": CONSUME})
    for jdk in (JDK17, JDK25):
        label = os.path.basename(jdk)
        p = started([java(jdk), "-cp", d, "Consume"])
        try:
            path, err = record(p.pid, extra=("--off-cpu-thresh", "0"))
        finally:
            reap(p)
        folded_w = spanperf("report", "-i", path, "--folded", "--event", "wall", "--waker", check=True).stdout
        blocked = woken = by_put = 0
        for line in folded_w.splitlines():
            st, _, n = line.rpartition(" ")
            if not st.startswith("consumer;") or "LinkedBlockingQueue.take(" not in st:
                continue
            blocked += int(n)
            if ";--;" in st:
                woken += int(n)
                w = st.split(";--;", 1)[1]
                by_put += int(n) * ("LinkedBlockingQueue.put(" in w and "Consume.main(" in w)
        assert blocked > 1e9 and by_put >= 0.9 * blocked, \
            "%s: consumer blocked under take() %.2f s, %.2f s with a waker, %.2f s woken by main's put()\n%s" % (
                label, blocked / 1e9, woken / 1e9, by_put / 1e9, err[-1500:])
        pb = os.path.join(tmpdir(), "java.pb.gz")
        spanperf("report", "-i", path, "--pprof", pb, check=True)
        mine = [(v, fr) for t, v, fr in pprof_traces(tool, pb, "off_cpu") if t == "consumer"]
        total = sum(v for v, _ in mine)
        named = sum(v for v, fr in mine if any("LinkedBlockingQueue.take(" in f for f in fr)
                    and any("Consume.consumer(" in f for f in fr))
        assert total > 1e9 and named >= 0.9 * total, "%s: pprof: consumer off CPU %.2f s, %.2f s under take(): %s" % (
            label, total / 1e9, named / 1e9, sorted(mine, key=lambda t: -t[0])[:2])
        print("        %s: blocked %.2f s, woken by put() %.2f s; pprof off_cpu %.2f s, under take() %.2f s" % (
            label, blocked / 1e9, by_put / 1e9, total / 1e9, named / 1e9))


RING = """import java.util.concurrent.Semaphore;

public class Ring {
    static volatile long sink;
    static Semaphore[] turn;

    /* Member i of the ring: waits for its turn, runs the chain once, hands the turn on. */
    static void ring(int i) {
        long acc = 0;
        try {
            while (true) {
                turn[i].acquire();
                acc += outer(3);
                sink = acc;
                turn[(i + 1) %% turn.length].release();
            }
        } catch (InterruptedException e) {
        }
    }

    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        turn = new Semaphore[n + 1];
        for (int i = 0; i <= n; i++)
            turn[i] = new Semaphore(0);
        for (int i = 1; i <= n; i++) {
            final int me = i;
            Thread t = new Thread(() -> ring(me), String.format("w%%03d", i));
            t.setDaemon(true);
            t.start();
        }
        System.out.println("ready");
        System.out.flush();
        turn[0].release();
        ring(0);
    }
%(methods)s
    static int tiny(int x) {
        return (x * 0x9E3779B1) ^ (x >>> 16);
    }
}
"""


def ring_class():
    """Ring: the main thread and n workers run the chain one at a time, by turns (one CPU's worth)."""
    src = source("Chain", 45)
    # Chain's outer, mid and leaf, as they are.
    methods = src[src.index("    static long outer("):src.index("    static int tiny(")]
    return compiled({"Ring": RING % {"methods": methods}})


def ring_whole(frames, root):
    """Whether a chain's Ring frames are root -> ring -> outer -> mid -> leaf (tiny may follow)."""
    want = ([] if root == "run" else ["void Ring.main(java.lang.String[])"]) + \
        ["void Ring.ring(int)", "long Ring.outer(int)", "long Ring.mid(int)", "long Ring.leaf(int)"]
    got = [f for f in frames if " Ring." in f and "lambda$" not in f]
    return got in (want, want + ["int Ring.tiny(int)"]) and (root != "run" or "void java.lang.Thread.run()" in frames)


@test
def test_java_200_threads():
    """A JVM with 200 threads that run the chain by turns (a ring of semaphores: one CPU's worth of
    work however many threads): recorded until each thread has run 15 ms of its own CPU; each
    thread's chains reach its root (the main thread's main, a worker's Thread.run), 90% of all, and
    half of each thread's own at the least; no JVM left unfollowed."""
    need_bpf()
    d = ring_class()
    p = started([java(JDK17), "-cp", d, "Ring", "200"])
    rec = None
    try:
        # A thread names itself once it runs: a worker started last may not have yet (its comm is
        # still java) when main says it is ready, on a busy host.
        deadline = time.time() + 120
        while True:
            tids = {}
            for t in os.listdir("/proc/%d/task" % p.pid):
                with open("/proc/%d/task/%s/comm" % (p.pid, t)) as f:
                    comm = f.read().strip()
                if comm.startswith("w") or (comm == "java" and int(t) != p.pid):
                    tids.setdefault(comm if comm != "java" else "main", []).append(int(t))
            if len(tids) == 201 and len(tids["main"]) == 1 or time.time() > deadline:
                break
            time.sleep(0.2)
        assert len(tids) == 201 and all(len(t) == 1 for t in tids.values()), sorted(tids)
        tids = {name: t[0] for name, t in tids.items()}
        out = os.path.join(tmpdir(), "java.data")
        rec, on = recorder(p.pid, out)
        await_cpu([(p.pid, t) for t in tids.values()], 15e6, "200 threads")
        err = stopped(rec, on)
    finally:
        if rec:
            reap(rec)
        reap(p)
    stacks = folded(out)
    total = whole = 0
    thin = []
    for name in tids:
        comm, root = ("java", "main") if name == "main" else (name, "run")
        n = sum(stacks[comm].values())
        ok = sum(c for st, c in stacks[comm].items() if ring_whole(st, root))
        total, whole = total + n, whole + ok
        if not n or ok * 2 < n:
            thin.append((name, ok, n, sorted(((c, st[-6:]) for st, c in stacks[comm].items() if not ring_whole(st, root)),
                                             reverse=True)[:2]))
    assert not thin and whole * 100 >= 90 * total, "%d of %d samples reach their root; threads short of it: %s\n%s" % (
        whole, total, thin[:5], err[-2500:])
    assert re.search(r"1 JVMs among them, \d+ forks; 0 not followed", err), err[-2500:]


@test
def test_java_container():
    """A JVM whose JDK lies in a tmpfs only its mount namespace sees (test_python's container): its
    libjvm read through the process, its frames named to main, native and Java alike."""
    if not shutil.which("unshare"):
        raise Skip("needs unshare")
    d = classes()
    root = "/opt/spanperf-javact"
    os.makedirs(root, exist_ok=True)
    script = ("mkdir %(r)s/jdk %(r)s/cls && cp -a %(j)s/bin %(j)s/lib %(j)s/conf %(r)s/jdk/ && cp %(d)s/*.class %(r)s/cls/ "
              "&& exec %(r)s/jdk/bin/java -cp %(r)s/cls Chain 3600") % dict(r=root, j=JDK17, d=d)
    java(JDK17)
    p = started(in_container(script, root))
    try:
        tid = busy_tid(p.pid)
        path, err = record(p.pid)
    finally:
        reap(p)
    assert "1 JVMs among them" in err, err[-2500:]
    stacks = folded(path)["java"]
    n = sum(stacks.values())
    ok = sum(c for st, c in stacks.items() if carries(st, "Chain") and "JavaCalls::call_helper" in st)
    assert n >= 100 and ok * 100 >= 90 * n, "container: %d of %d samples carry the chain through libjvm: %s\n%s" % (
        ok, n, sorted(((c, st[-8:]) for st, c in stacks.items()), reverse=True)[:3], err[-2500:])
    samples = perf_chains(path, tid)
    pok = sum(1 for c in samples if carries(c, "Chain"))
    assert len(samples) >= 100 and pok * 100 >= 90 * len(samples), "container: perf script: %d of %d" % (pok, len(samples))


HOSTILE = r"""
#include <stdint.h>
/* A libjvm.so that exports HotSpot's tables, all garbage: a stride past any entry, pointers nowhere. */
uint64_t gHotSpotVMStructEntryArrayStride = 4096, gHotSpotVMTypeEntryArrayStride = 1u << 31;
uint64_t gHotSpotVMIntConstantEntryArrayStride = 16, gHotSpotVMStructEntryTypeNameOffset = 1ull << 40;
uint64_t gHotSpotVMStructEntryFieldNameOffset = 8, gHotSpotVMStructEntryTypeStringOffset = 16;
uint64_t gHotSpotVMStructEntryIsStaticOffset = 24, gHotSpotVMStructEntryOffsetOffset = 32;
uint64_t gHotSpotVMStructEntryAddressOffset = 40, gHotSpotVMTypeEntryTypeNameOffset = 0;
uint64_t gHotSpotVMTypeEntrySizeOffset = 32, gHotSpotVMIntConstantEntryNameOffset = 0;
uint64_t gHotSpotVMIntConstantEntryValueOffset = 8;
static char junk[4096] = { 1, 2, 3 };
void *gHotSpotVMStructs = junk, *gHotSpotVMTypes = (void *)0x1000, *gHotSpotVMIntConstants = junk + 8;
"""

APP = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
static volatile unsigned long sink;
__attribute__((noinline)) static void spin_leaf(void) { for (int i = 0; i < 100000; i++) sink += i; }
__attribute__((noinline)) static void spin_mid(void) { spin_leaf(); }
int main(int argc, char **argv)
{
	if (!dlopen(argv[1], RTLD_NOW))
		return 1;
	puts("ready");
	fflush(stdout);
	for (;;)
		spin_mid();
}
"""


@test
def test_java_lying_tables():
    """A process whose libjvm.so exports garbage tables: not followed, said why, its own chains whole."""
    need_bpf()
    d = tmpdir()
    for name, text in (("libjvm.c", HOSTILE), ("app.c", APP)):
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    run(["cc", "-O1", "-shared", "-fPIC", "-o", os.path.join(d, "libjvm.so"), os.path.join(d, "libjvm.c")], check=True)
    run(["cc", "-O1", "-o", os.path.join(d, "liar"), os.path.join(d, "app.c"), "-ldl"], check=True)
    p = subprocess.Popen([os.path.join(d, "liar"), os.path.join(d, "libjvm.so")], stdout=subprocess.PIPE, text=True, errors="replace")
    try:
        assert p.stdout.readline().strip() == "ready"
        path, err = record(p.pid)
    finally:
        reap(p)
    assert "0 JVMs" in err and "not followed, last: %d:" % p.pid in err, err[-2000:]
    stacks = folded(path)["liar"]
    n = sum(stacks.values())
    ok = sum(c for st, c in stacks.items() if st[-3:] == ("main", "spin_mid", "spin_leaf") or st[-2:] == ("main", "spin_mid"))
    assert n >= 100 and ok * 100 >= 90 * n, "liar: %d of %d samples whole: %s" % (
        ok, n, sorted(((c, st) for st, c in stacks.items()), reverse=True)[:3])


# ---- lines and inlined frames (issue 35, item 3) ----
import re  # noqa: E402 (this part's own, kept with it)

from harness import json_lines  # noqa: E402

INL = """public class Inl {
    static volatile long sink;

    public static void main(String[] args) {
        long end = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
        System.out.println("ready");
        System.out.flush();
        busy(end);
    }

    static void busy(long end) {
        long acc = 0;
        while (System.nanoTime() < end) acc += outer(3);
        sink = acc;
    }

    static long outer(int n) {
        long acc = 0;
        for (int i = 0; i < n; i++) acc += mid(i + 4);
        if (n == -12345) {
            long p = acc;
%(pad)s
            acc = p;
        }
        return acc;
    }

    /* Seven bytes of bytecode, one call site: C1 and C2 both inline it into outer. */
    static long mid(int n) {
        return leaf(n) + 1;
    }

    static long leaf(int n) {
        long acc = n;
        for (int i = 0; i < 20000; i++) acc += (acc >>> 7) ^ (acc * 31 + i); // HOT
        if (n == -12345) {
            long p = acc;
%(pad)s
            acc = p;
        }
        return acc;
    }
}
"""
# Inl's busy thread, outermost first: mid's frame is there only where outer's scopes are read.
INL_CHAIN = ["void Inl.main(java.lang.String[])", "void Inl.busy(long)", "long Inl.outer(int)", "long Inl.mid(int)",
             "long Inl.leaf(int)"]
_inl = None


def inl_classes():
    """Inl compiled once, and the source line of leaf's loop (where its samples must be)."""
    global _inl
    if _inl:
        return _inl
    text = INL % {"pad": pad(45)}
    d = compiled({"Inl": text})
    hot = [i + 1 for i, l in enumerate(text.splitlines()) if l.endswith("// HOT")]
    _inl = (d, hot[0])
    return _inl


def codelist(jdk, pid):
    """jcmd's Compiler.codelist: (compile id, level, state, method, blob address) of each nmethod."""
    p = run([os.path.join(jdk, "bin", "jcmd"), str(pid), "Compiler.codelist"], timeout=120)
    out = []
    for line in p.stdout.splitlines():
        f = line.split()
        if len(f) >= 5 and f[0].isdigit() and f[4].startswith("[0x"):
            out.append((int(f[0]), int(f[1]), int(f[2]), f[3], int(f[4][1:].rstrip(","), 16)))
    return out


def start_inl(jdk, level=1):
    """Inl running, once an nmethod of outer of at least level is in use (mid inlined in it from then
    on: a trivial method, which C1 inlines as C2 does); with those nmethods."""
    d, _ = inl_classes()
    p = subprocess.Popen([java(jdk), "-cp", d, "Inl", "3600"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True)
    try:
        r, _, _ = select.select([p.stdout], [], [], 120)
        assert r and p.stdout.readline().strip() == "ready", "%s Inl never said it was ready" % jdk
        deadline = time.time() + 180
        while time.time() < deadline:
            nm = [c for c in codelist(jdk, p.pid) if c[3].startswith("Inl.outer(") and c[1] >= level and c[2] == 0]
            if nm:
                return p, nm
            time.sleep(0.5)
        raise AssertionError("%s: no nmethod of Inl.outer at level %d in use in 180 s" % (jdk, level))
    except BaseException:
        reap(p)
        raise


def inlined_counts(err):
    """record -v's java names line: inlined frames shown, and compiled frames left uninlined for
    scopes out of range, without scopes, for room."""
    m = re.search(r"java names: .*?(\d+) inlined frames shown; compiled frames left uninlined: (\d+) scopes out of "
                  r"range, (\d+) without scopes, (\d+) for room", err)
    assert m, err[-2000:]
    return [int(x) for x in m.groups()]


def srclines(path):
    """spanperf report --sort srcline of comm java: {srcline: samples}."""
    rows = json_lines(spanperf("report", "-i", path, "--comm", "java", "--sort", "srcline", "--format", "json",
                               check=True).stdout)
    return {r["srcline"]: r["samples"] for r in rows}


def perf_srclines(path):
    """perf report --sort srcline of comm java (lines from the ELF beside the file): {srcline: samples}."""
    out = perf_clean(["report", "--stdio", "--no-children", "--comm", "java", "--sort", "srcline", "-g", "none",
                      "-F", "sample,srcline", "--percent-limit", "0"], path, timeout=600, lost_ok=True)
    rows = collections.Counter()
    for line in out.splitlines():
        f = line.split()
        if len(f) == 2 and f[0].isdigit():
            rows[f[1]] += int(f[0])
    return rows


def busy_chains(path):
    """The folded stacks of Inl's busy thread: {Inl frames, outermost first: samples}."""
    out = collections.Counter()
    for st, c in folded(path)["java"].items():
        if "void Inl.busy(long)" in st:
            out[tuple(f for f in st if " Inl." in f)] += c
    return out


def check_inlined(jdk):
    p, _ = start_inl(jdk)
    try:
        tid = busy_tid(p.pid)
        path, err = record(p.pid)
    finally:
        reap(p)
    label = os.path.basename(jdk)
    _, hot = inl_classes()
    chains = busy_chains(path)
    n = sum(chains.values())
    ok = chains[tuple(INL_CHAIN)]
    assert n >= 100 and ok * 100 >= 90 * n, "%s: report: %d of %d busy samples carry main;busy;outer;mid;leaf: %s\n%s" % (
        label, ok, n, chains.most_common(3), err[-2500:])
    # outer was compiled before the recording began: mid's frame is its scopes', not one of its own.
    shown, bad, _, room = inlined_counts(err)
    assert shown * 100 >= 80 * ok and bad == 0 and room == 0, \
        "%s: %d inlined frames shown for %d chains (%d out of range, %d for room)" % (label, shown, ok, bad, room)
    samples = perf_chains(path, tid)
    pok = sum(1 for c in samples if java_frames(c, "Inl") == INL_CHAIN)
    assert len(samples) >= 100 and pok * 100 >= 90 * len(samples), \
        "%s: perf script: %d of %d busy samples carry the chain (report had %d of %d)" % (label, pok, len(samples), ok, n)
    # leaf's loop is one line: its samples are there in report's srcline and in perf's (the ELF's lines).
    want = "Inl.java:%d" % hot
    for who, rows in (("report", srclines(path)), ("perf report", perf_srclines(path))):
        assert rows.get(want, 0) * 100 >= 80 * ok, "%s: %s: %d samples at %s (%d carried the chain): %s" % (
            label, who, rows.get(want, 0), want, ok, sorted(rows.items(), key=lambda kv: -kv[1])[:4])


@test
def test_java_inlined_lines_17():
    """JDK 17: mid, inlined into outer, a frame of its own under it at >= 90% of the busy thread's
    samples (folded and perf script); leaf's hot loop's line in report's and perf's srcline."""
    check_inlined(JDK17)


@test
def test_java_inlined_lines_25():
    """Temurin 25: the same."""
    check_inlined(JDK25)


def vm_fields(pid, wanted):
    """{(type, field): offset} of the instance fields wanted, from the JVM's own gHotSpotVMStructs
    (read through /proc/PID/mem, libjvm's symbols by nm)."""
    import struct
    lib = base = None
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            p = line.split()
            if len(p) >= 6 and p[5].endswith("/libjvm.so") and lib is None:
                lib, base = p[5], int(p[0].split("-")[0], 16) - int(p[2], 16)
    syms = {}
    for line in run(["nm", "-D", lib], check=True).stdout.splitlines():
        p = line.split()
        if len(p) == 3 and p[2].startswith("gHotSpotVMStruct"):
            syms[p[2].split("@")[0]] = int(p[0], 16) + base
    out = {}
    with open("/proc/%d/mem" % pid, "rb") as mem:
        def u64(a):
            mem.seek(a)
            return struct.unpack("<Q", mem.read(8))[0]

        def cstr(a):
            mem.seek(a)
            b = mem.read(128)
            return b[:b.index(b"\0")].decode()
        g = {k: u64(v) for k, v in syms.items()}
        a, stride = g["gHotSpotVMStructs"], g["gHotSpotVMStructEntryArrayStride"]
        while True:
            t = u64(a + g["gHotSpotVMStructEntryTypeNameOffset"])
            if not t:
                break
            fn = u64(a + g["gHotSpotVMStructEntryFieldNameOffset"])
            if fn and (cstr(t), cstr(fn)) in wanted:
                out[(cstr(t), cstr(fn))] = u64(a + g["gHotSpotVMStructEntryOffsetOffset"])
            a += stride
    return out


@test
def test_java_lying_scopes():
    """JDK 17, outer's compiled code's scopes overwritten with garbage while it runs: no frame of the
    busy thread's chains is one it does not have (mid is left out, as before its scopes were read),
    and record -v counts the scopes out of range."""
    import struct
    p, nms = start_inl(JDK17, level=4)
    try:
        tid = busy_tid(p.pid)
        want = [("CompiledMethod", "_scopes_data_begin"), ("nmethod", "_scopes_pcs_offset")]
        off = vm_fields(p.pid, want)
        assert len(off) == 2, off
        with open("/proc/%d/mem" % p.pid, "r+b", buffering=0) as mem:
            for nm in nms:
                mem.seek(nm[4] + off[want[0]])
                lo = struct.unpack("<Q", mem.read(8))[0]
                mem.seek(nm[4] + off[want[1]])
                hi = nm[4] + struct.unpack("<i", mem.read(4))[0]
                assert nm[4] < lo < hi < nm[4] + (1 << 20), (hex(nm[4]), hex(lo), hex(hi))
                # 0xff: every number in the stream reads as one past any index the nmethod has.
                mem.seek(lo)
                mem.write(b"\xff" * (hi - lo))
        path, err = record(p.pid)
        assert p.poll() is None, "the JVM died of its scopes (exit %s): the test's, not spanperf's" % p.returncode
    finally:
        reap(p)
    chains = busy_chains(path)
    n = sum(chains.values())
    lie = tuple(INL_CHAIN[:3] + INL_CHAIN[4:])
    # A sample in busy's or outer's own code has the chain to there: a prefix, no frame it lacks.
    wrong = {st: c for st, c in chains.items() if st != tuple(INL_CHAIN)[:len(st)] and st != lie[:len(st)]}
    assert n >= 100 and not wrong, "%d busy samples, frames they do not have in %s" % (n, sorted(wrong.items())[:3])
    _, bad, _, _ = inlined_counts(err)
    assert chains[lie] * 100 >= 80 * n and bad >= 1, "%d of %d busy samples without mid, %d scopes out of range: %s" % (
        chains[lie], n, bad, chains.most_common(3))


# ---- code freed and its address reused (issue 35, item 6) ----
from frames_common import script_chains  # noqa: E402 (this part's own, kept with it)

# Reuse runs one generation's class at a time, each in a class loader of its own, at the test's
# word: "start CLS T" (System.nanoTime(), CLOCK_MONOTONIC as the samples' times), its method in a
# loop until told "stop", "end CLS T", then the loader dropped and System.gc() run until the class
# is gone (its Method and its compiled code freed, their memory free for the next generation's).
REUSE = """import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.LongUnaryOperator;

public class Reuse {
    static volatile boolean stop;
    static volatile long sink;
    static final LinkedBlockingQueue<String> cmds = new LinkedBlockingQueue<>();

    public static void main(String[] args) throws Exception {
        URL dir = new File(args[0]).toURI().toURL();
        Thread r = new Thread(() -> {
            try {
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
                for (String l; (l = in.readLine()) != null; ) {
                    if (l.equals("stop"))
                        stop = true;
                    else
                        cmds.put(l);
                }
            } catch (Exception e) {
            }
            stop = true;
            cmds.add("quit");
        }, "reader");
        r.setDaemon(true);
        r.start();
        System.out.println("ready");
        System.out.flush();
        for (String c; !(c = cmds.take()).equals("quit"); ) {
            run(dir, c);
            for (int i = 0; i < 3; i++)
                System.gc();
            System.out.println("gone " + c);
            System.out.flush();
        }
    }

    static void run(URL dir, String cls) throws Exception {
        URLClassLoader l = new URLClassLoader(new URL[] { dir }, ClassLoader.getPlatformClassLoader());
        LongUnaryOperator op = (LongUnaryOperator) l.loadClass(cls).getDeclaredConstructor().newInstance();
        stop = false;
        System.out.println("start " + cls + " " + System.nanoTime());
        System.out.flush();
        long acc = 0;
        while (!stop)
            acc += op.applyAsLong(acc);
        System.out.println("end " + cls + " " + System.nanoTime());
        System.out.flush();
        sink = acc;
        l.close();
    }
}
"""
# A generation: the same code under another name, too large to be inlined into Reuse.run.
GEN = """public class G%(k)d implements java.util.function.LongUnaryOperator {
    public long applyAsLong(long n) {
        long acc = n;
        for (int i = 0; i < 20000; i++) acc += (acc >>> 7) ^ (acc * 31 + i);
        if (n == -12345) {
            long p = acc;
%(pad)s
            acc = p;
        }
        return acc;
    }
}
"""
GENS = 12


def gen_name(k):
    return "long G%d.applyAsLong(long)" % k


def reuse_classes():
    """Reuse, and the generations in gen/ under it (not on its class path: each loader's own)."""
    d = compiled({"Reuse": REUSE})
    compiled({"G%d" % k: GEN % {"k": k, "pad": pad(45)} for k in range(GENS)}, os.path.join(d, "gen"))
    return d


class Said:
    """A process's stdout lines, each awaited with a generous deadline.  Read from the pipe as it
    comes (a buffered readline would take two lines at once and select would wait for a third)."""

    def __init__(self, p):
        self.p, self.buf = p, b""

    def line(self, what, timeout=180):
        until = time.time() + timeout
        while b"\n" not in self.buf and time.time() < until:
            r, _, _ = select.select([self.p.stdout], [], [], max(0, until - time.time()))
            got = os.read(self.p.stdout.fileno(), 4096) if r else b""
            if r and not got:
                break
            self.buf += got
        line, nl, rest = self.buf.partition(b"\n")
        words = line.decode(errors="replace").split() if nl else []
        self.buf = rest if nl else self.buf
        assert words and words[0] == what, "waited for %r in %d s, read %s" % (what, timeout, words)
        return words

    def say(self, text):
        self.p.stdin.write(text.encode() + b"\n")
        self.p.stdin.flush()


def code_of(jdk, pid, cls, deadline=180):
    """The [begin, end) of each nmethod of cls's method as Compiler.codelist lists them, once one
    compiled by C2 (level 4) is in use."""
    until = time.time() + deadline
    while time.time() < until:
        nm = [c for c in codelist_ranges(jdk, pid) if c[3].startswith(cls + ".")]
        if any(c[1] == 4 and c[2] == 0 for c in nm):
            return [c[4] for c in nm]
        time.sleep(0.3)
    raise AssertionError("%s: no C2 code of %s in use in %d s" % (jdk, cls, deadline))


def codelist_ranges(jdk, pid):
    """Compiler.codelist as codelist, with each nmethod's [begin, end) for its address."""
    p = run([os.path.join(jdk, "bin", "jcmd"), str(pid), "Compiler.codelist"], timeout=120)
    out = []
    for line in p.stdout.splitlines():
        m = re.match(r"(\d+) (\d+) (\d+) (\S+) \[(0x[0-9a-f]+), 0x[0-9a-f]+ - (0x[0-9a-f]+)\]", line)
        if m:
            out.append((int(m[1]), int(m[2]), int(m[3]), m[4], (int(m[5], 16), int(m[6], 16))))
    return out


def check_reused(jdk, flags=()):
    """Generations of one method under other names, each in a class loader of its own, run one
    after the other; each is unloaded (System.gc()) before the next starts, and its compiled code
    freed, until one generation's code is at an address an earlier one's was (the JVM's own
    Compiler.codelist says where).  Each period's samples (the workload's own System.nanoTime()
    says when) are named by the generation that ran then, at 90% of the busy thread's, and none by
    another: a name is what was at the address when the sample was taken."""
    need_bpf()
    need_perf()
    d = reuse_classes()
    p = subprocess.Popen([java(jdk), *flags, "-cp", d, "Reuse", os.path.join(d, "gen")], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    rec = None
    periods, code, reused = [], [], None
    try:
        said = Said(p)
        said.line("ready")
        tid = busy_tid(p.pid)
        out = os.path.join(tmpdir(), "java.data")
        rec, on = recorder(p.pid, out)
        for k in range(GENS):
            cls = "G%d" % k
            said.say(cls)
            t0 = int(said.line("start")[2])
            mine = code_of(jdk, p.pid, cls)
            # Samples of its compiled code, whatever the host's load: 0.5 s of the thread's own CPU.
            await_cpu([(p.pid, tid)], 0.5e9, cls)
            said.say("stop")
            t1 = int(said.line("end")[2])
            said.line("gone")
            periods.append((k, t0, t1))
            reused = next(((j, k, lo) for j, ranges in code for lo, hi in ranges
                           for lo2, hi2 in mine if lo2 < hi and lo < hi2), None)
            code.append((k, mine))
            if reused:
                break
        err = stopped(rec, on)
    finally:
        if rec:
            reap(rec)
        reap(p)
    assert reused, "%s: in %d generations, none's code at an earlier one's address: %s" % (
        jdk, GENS, [(k, [(hex(lo), hex(hi)) for lo, hi in r]) for k, r in code])
    heads = []

    def pick(head):
        # comm tid secs.usecs: event:
        if len(head) > 2 and head[1] == str(tid) and head[2].endswith(":"):
            s, _, us = head[2][:-1].partition(".")
            heads.append(int(s) * 10**9 + int(us) * 1000)
            return True
        return False
    chains = script_chains(out, pick, fields="comm,tid,time,event")
    assert len(heads) == len(chains), (len(heads), len(chains))
    wrong, short = [], []
    for k, t0, t1 in periods:
        # A microsecond either side: perf script's times are in them.
        mine = [c for t, c in zip(heads, chains) if t0 + 1000 <= t <= t1 - 1000]
        named = [c for c in mine if gen_name(k) in c]
        wrong += [(k, [f for f in c if " G" in f]) for c in mine if any(gen_name(j) in c for j in range(GENS) if j != k)]
        if len(mine) < 20 or len(named) * 100 < 90 * len(mine):
            short.append((k, len(named), len(mine), collections.Counter(tuple(c[-3:]) for c in mine
                                                                        if gen_name(k) not in c).most_common(2)))
    j, k, lo = reused
    assert not wrong and not short, "%s: G%d's code at %#x where G%d's was: samples named by another generation " \
        "%s; periods short of their own %s\n%s" % (jdk, k, lo, j, wrong[:5], short, err[-2000:])


@test
def test_java_code_reused_25():
    """Temurin 25, no flag: the GC frees an unloaded class's code, and the next generation's C2 code
    is put there within a few."""
    check_reused(JDK25)


@test
def test_java_code_reused_17():
    """OpenJDK 17: its sweeper frees unloaded code later than the test waits, unless told to sweep
    at every change of the code cache (flags of the test's, not of the unwinder's)."""
    check_reused(JDK17, ("-XX:+UnlockDiagnosticVMOptions", "-XX:SweeperThreshold=0.01", "-XX:NmethodSweepActivity=100"))


# ---- the Java paths through spans, the page and top (issue 35, item 5) ----
import json  # noqa: E402 (this part's own, kept with it)

# A row of top's table: percent, samples, command, shared object, [k] or [.], the symbol (a Java
# name has spaces in it).
TOP_ROW = re.compile(r"^\s+([\d.]+)%\s+(\d+)\s+(\S+)\s+(\S+)\s+\[(.)\]\s+(.+?)\s*$")


def chain_share(syms_counts, cls="Chain"):
    """Of (symbol, samples) pairs, the samples whose symbol is one of cls's chain (tiny too), and all."""
    own = ["long %s.leaf(int)", "int %s.tiny(int)", "long %s.mid(int)", "long %s.outer(int)", "void %s.busy(long)"]
    own = {o % cls for o in own}
    return sum(n for s, n in syms_counts if s in own), sum(n for _, n in syms_counts)


def top_of(tid):
    """spanperf top -g of one thread, one 2 s table: its user rows (symbol, samples), each row's
    dso, and its text.  Kernel rows ([k]) are left out: on a busy host a CPU-bound thread is
    preempted often, and the timer pending over each switch fires as it comes back, in
    finish_task_switch: the kernel's samples of the thread, not its chain's."""
    p = spanperf("top", "--batch", "-n", "1", "-d", "2", "-g", "-E", "10", "-t", str(tid), timeout=180)
    assert p.returncode == 0, "top exited %d: %s" % (p.returncode, p.stderr[-2000:])
    ms = [m for m in map(TOP_ROW.match, p.stdout.splitlines()) if m and m[5] != "k"]
    return [(m[6], int(m[2])) for m in ms], {m[6]: m[4] for m in ms}, p.stdout


def kernel_samples(path, tid):
    """The samples of thread tid in the recording whose leaf is in the kernel (see top_of)."""
    rows = json_lines(spanperf("report", "-i", path, "--tids", str(tid), "--dsos", "[kernel.kallsyms]", "--sort", "tid",
                               "--format", "json", check=True).stdout)
    return sum(r["samples"] for r in rows)


def page_data(page):
    """The page's own data, as its script reads it."""
    with open(page) as f:
        return json.loads(re.search(r'<script id="spanperf-data"[^>]*>(.*?)</script>', f.read(), re.S).group(1))


@test
def test_java_spans_page_top():
    """JDK 17, no flag: Chain's busy thread, once it says it is ready, by name on every path that
    reads a recording's chains.  A span of that thread over the recording (annotate --spans: the
    window the test saw the program in its chain) has Chain's methods as its top functions, 90% of
    its samples, leaf first, in annotate's JSON and in the page's own data; the page's samples of
    the thread carry the chain to main; and top -g of the running thread ranks them the same, its
    first row's chain leaf to main."""
    need_bpf()
    p = start(JDK17, "Chain", 3600)
    try:
        tid = busy_tid(p.pid)
        t0 = time.monotonic_ns()
        path, _ = record(p.pid)
        t1 = time.monotonic_ns()
        rows, dsos, text = top_of(tid)
    finally:
        reap(p)
    # top: the table of the thread's 2 s, its first row leaf with the chain under it.
    ok, n = chain_share(rows)
    assert n >= 100 and ok * 100 >= 90 * n and rows[0][0] == "long Chain.leaf(int)", \
        "top: %d of %d samples in Chain's methods:\n%s" % (ok, n, text[-3000:])
    # A live session writes no symbol file: its Java frames' dso says the runtime, never [python].
    wrong = {sym: d for sym, d in dsos.items() if " Chain." in sym and d != "[java]"}
    assert not wrong, "top: Chain's methods' dso: %s" % wrong
    chain = [w % "Chain" for w in reversed(CHAIN)]
    at = text.index("--long Chain.leaf(int)")
    below = [l.strip() for l in text[at:].splitlines()[1:len(chain)]]
    assert below == chain[1:], "top -g: under leaf %s, not %s" % (below, chain[1:])
    # annotate: one span, the thread's window.
    d = tmpdir()
    spans = os.path.join(d, "spans.jsonl")
    with open(spans, "w") as f:
        f.write(json.dumps({"tid": tid, "pid": p.pid, "start_ns": t0, "end_ns": t1, "name": "chain"}) + "\n")
    got = json_lines(spanperf("annotate", "--spans", spans, "-i", path, "--format", "json", check=True).stdout)
    assert len(got) == 1, got
    # Of the span's samples in user space: the kernel's (top_of) are not the chain's to name.
    kern = kernel_samples(path, tid)
    ok, n = chain_share([(t["sym"], t["samples"]) for t in got[0]["top"]])
    assert got[0]["samples"] >= 100 and ok * 100 >= 90 * (got[0]["samples"] - kern) and \
        got[0]["top"][0]["sym"] == "long Chain.leaf(int)", "annotate: %d of %d samples in Chain's methods: %s" % (
        ok, got[0]["samples"], got[0]["top"][:5])
    # The page annotate writes: the span's top as the panel shows it, and the thread's samples.
    page = os.path.join(d, "java.html")
    spanperf("annotate", "--spans", spans, "-i", path, "--html", page, check=True)
    data = page_data(page)
    S, F = data["s"], data["f"]
    sp = [r for r in data["sp"] if S[r[3]] == "chain"]
    assert len(sp) == 1, data["sp"][:3]
    top = [(S[sp[0][8][i]], sp[0][8][i + 1]) for i in range(0, len(sp[0][8]), 2)]
    ok, _ = chain_share(top)
    assert top[0][0] == "long Chain.leaf(int)" and ok * 100 >= 90 * (sp[0][5] - kern), \
        "page: span top %s of %d samples (%d in the kernel)" % (top[:5], sp[0][5], kern)
    th = [t for t in data["th"] if t["tid"] == tid]
    assert len(th) == 1, [t["tid"] for t in data["th"]]
    stacks = [[S[F[3 * fn]] for fn in data["k"][k]] for k in th[0]["k"]]
    whole = sum(1 for st in stacks if carries(list(reversed(st)), "Chain"))
    assert len(stacks) >= 100 and whole * 100 >= 90 * len(stacks), "page: %d of %d samples carry the chain: %s" % (
        whole, len(stacks), collections.Counter(tuple(st[:6]) for st in stacks).most_common(3))


# ---- one walk, the same methods again (issue 40: a walk reads a Method's ConstMethod once) ----
# Cyc's main thread runs, interpreted (-Xint), a chain of calls that meets the same methods again:
# c0 -> c1 -> c2 four times round (a cycle the walk's memo of HS_MEMO = 4 Methods holds), then
# d0 .. d5 twice round (a cycle longer than the memo: each Method read again, its entry taken by
# another), then spin.  Each method calls the next from one line of its own, so a frame's line
# (its bci, from the ConstMethod the walk took) is known for each method.
CYC = """public class Cyc {
    static volatile long sink;

    public static void main(String[] args) {
        long end = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
        System.out.println("ready");
        System.out.flush();
        while (System.nanoTime() < end)
            sink += c0(4, end);
    }

    static long c0(int n, long end) {
        return c1(n, end) + 1;
    }

    static long c1(int n, long end) {
        return c2(n, end) + 2;
    }

    static long c2(int n, long end) {
        if (n > 1) return c0(n - 1, end) + 3;
        return d0(2, end) + 4;
    }

    static long d0(int n, long end) {
        return d1(n, end) + 5;
    }

    static long d1(int n, long end) {
        return d2(n, end) + 6;
    }

    static long d2(int n, long end) {
        return d3(n, end) + 7;
    }

    static long d3(int n, long end) {
        return d4(n, end) + 8;
    }

    static long d4(int n, long end) {
        return d5(n, end) + 9;
    }

    static long d5(int n, long end) {
        if (n > 1) return d0(n - 1, end) + 10;
        return spin(end);
    }

    static long spin(long end) {
        long x = 0;
        for (int i = 0; i < 200000; i++)
            x += i ^ (x >>> 3);
        return x;
    }
}
"""


def cyc_expected():
    """Cyc's busy chain, outermost first: (method, line) of each frame above spin's."""
    lines = CYC.splitlines()

    def at(text):
        return next(i + 1 for i, l in enumerate(lines) if text in l)
    want = [("main", at("sink += c0("))]
    for _ in range(3):
        want += [("c0", at("return c1(")), ("c1", at("return c2(")), ("c2", at("return c0("))]
    want += [("c0", at("return c1(")), ("c1", at("return c2(")), ("c2", at("return d0(2"))]
    for k in range(5):
        want.append(("d%d" % k, at("return d%d(" % (k + 1))))
    want.append(("d5", at("return d0(n - 1")))
    for k in range(5):
        want.append(("d%d" % k, at("return d%d(" % (k + 1))))
    want.append(("d5", at("return spin(")))
    return want


def cyc_frames(path, tid):
    """perf script's chains of thread tid with each frame's srcline: for each sample, Cyc's
    frames outermost first as (method, line or None), and the set of the chains' indices that have
    kernel frames.  The chain's 26 Java frames only (spin to main): perf's lines of the libjvm frames
    below main took minutes (30 frames: 295 s; 26: 4 s).  A sample in the kernel (a busy host's
    preemption: the timer pending over a switch fires in finish_task_switch as the thread comes
    back) spends some of those 26 on kernel frames, and its outermost Java frames are left out."""
    out = perf_clean(["script", "--tid", str(tid), "--max-stack", "26", "-F", "tid,ip,sym,srcline"], path, timeout=300,
                     lost_ok=True)
    chains, kernel, cur, last = [], set(), None, None
    for line in out.splitlines():
        if not line.strip():
            continue
        if re.match(r"^\s*\d+\s*$", line):
            cur = [] if int(line) == tid else None
            if cur is not None:
                chains.append(cur)
            last = None
            continue
        if cur is None:
            continue
        if re.match(r"^\t\s*ffff[89a-f][0-9a-f]{11} ", line):
            kernel.add(len(chains) - 1)
        m = re.match(r"^\t\s*[0-9a-f]+ .* Cyc\.(\w+)\(", line)
        if m:
            last = [m.group(1), None]
            cur.insert(0, last)
            continue
        m = re.match(r"^  Cyc\.java:(\d+)$", line)
        if m and last is not None and last[1] is None:
            last[1] = int(m.group(1))
        elif line.startswith("\t"):
            last = None
    return [[tuple(f) for f in c] for c in chains], kernel


def check_cyc(jdk):
    d = compiled({"Cyc": CYC})
    p = started([java(jdk), "-Xint", "-cp", d, "Cyc", "3600"])
    try:
        tid = busy_tid(p.pid)
        need_bpf()
        # On CPU only: perf's lines of off-CPU samples' kernel frames took minutes.
        path = os.path.join(tmpdir(), "cyc.data")
        r = spanperf("record", "-g", "-v", "-p", str(p.pid), "-o", path, "-d", SECONDS, timeout=180)
        assert r.returncode == 0, "record exited %d: %s" % (r.returncode, r.stderr[-3000:])
        err = r.stderr
    finally:
        reap(p)
    label = os.path.basename(jdk)
    want = cyc_expected()
    chains, kernel = cyc_frames(path, tid)
    # Never a wrong frame: each frame above a chain's leaf is its method's, at the line that calls
    # the frame below it (a chain whose outer frames perf's --max-stack left out included).
    calls = {line: (want[i + 1][0] if i + 1 < len(want) else "spin") for i, (_, line) in enumerate(want)}
    owner = dict((line, m) for m, line in want)
    wrong = [c for c in chains
             if any(calls.get(c[i][1]) != c[i + 1][0] or owner.get(c[i][1]) != c[i][0] for i in range(len(c) - 1))]
    # Whole: of the samples in spin whose 26 frames perf's --max-stack gave are all user frames.
    user = [c for i, c in enumerate(chains) if i not in kernel]
    whole = sum(1 for c in user if c and c[-1][0] == "spin" and c[:-1] == want)
    in_spin = sum(1 for c in user if c and c[-1][0] == "spin")
    assert len(chains) >= 100 and not wrong, "%s: %d of %d chains not Cyc's, e.g. %s\n%s" % (
        label, len(wrong), len(chains), wrong[:2], err[-2000:])
    assert in_spin >= 50 and whole * 100 >= 90 * in_spin, "%s: %d of %d samples in spin carry its whole chain" % (
        label, whole, in_spin)


@test
def test_java_methods_again():
    """Interpreted frames of methods met again in one walk (a cycle of 3 and one of 6, longer than
    the walk's memo): every frame named and at its line, on 17 and 25."""
    for jdk in (JDK17, JDK25):
        check_cyc(jdk)
