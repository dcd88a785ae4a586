# SPDX-License-Identifier: GPL-2.0
"""Java frames by name (issue 35): what a user chain costs in the sampling program for a Java sample
(bench/JBusy.java, about 20 Java frames deep, no flag) under Debian's OpenJDK 17 and Temurin 25,
beside a native ehframe sample of as many frames and the same Java load with the walk off
(SPANPERF_NO_JAVA); the Java steps' reads of user memory per Java chain; bytes per sample and the
recorder's CPU.  Each figure is of the load's own samples (-p).  Then a real host's view: the JVM
among other load (native spinners, a Python process), recorded whole-host (-a -g), and the share
of the JVM's busy threads' samples whose chain is complete (from the thread's root, no frame
unnamed, its Java frames named), with the walk on and off in the same round."""
import os
import re
import subprocess

from harness import CPUS, DEVNULL, HERE, ROOT, SPANPERF, TMP, kill, log, median, rounds, spawn

SOURCE = os.path.join(HERE, "JBusy.java")
UNITWORK = os.path.join(ROOT, "build", "bench", "unitwork_nofp")
PYBUSY = os.path.join(HERE, "pybusy.py")
DEPTH = 20
JDKS = [("OpenJDK 17", "/usr/lib/jvm/java-17-openjdk-amd64"), ("Temurin 25", "/usr/lib/jvm/temurin-25-jdk-amd64")]
ROOTS = ("clone3", "clone", "_start", "__libc_start_main")
NEEDS = (UNITWORK,)


def classes():
    """JBusy compiled by the oldest JDK here (its class runs on every later one); None without one."""
    for _, jdk in JDKS:
        javac = os.path.join(jdk, "bin", "javac")
        if os.path.exists(javac):
            d = os.path.join(TMP, "jcls")
            os.makedirs(d, exist_ok=True)
            subprocess.run([javac, "-d", d, SOURCE], check=True, stdout=DEVNULL)
            return d
    return None


def java_load(jdk, cls, secs, threads=CPUS):
    return spawn([os.path.join(jdk, "bin", "java"), "-cp", cls, "JBusy", str(threads), str(secs)], stdout=DEVNULL)


def record(args, secs, env=None, name="java"):
    """record -v -g (args: -p PIDS or -a): (stderr, file path, file size, recorder CPU seconds a second)."""
    path = os.path.join(TMP, name + ".data")
    err = os.path.join(TMP, name + ".err")
    with open(err, "w") as f:
        p = spawn([SPANPERF, "record", "-v", "-g", "-F", "999"] + args + ["-d", str(secs), "-o", path], stdout=DEVNULL,
                  stderr=f, env=env)
        _, _, ru = os.wait4(p.pid, 0)
    size = os.path.getsize(path) if os.path.exists(path) else 0
    return open(err).read(), path, size, (ru.ru_utime + ru.ru_stime) / secs


def figures(err, size):
    f = {}
    m = re.search(r"user chains took (\d+) ns each in BPF, ([\d.]+) frames each", err)
    if m:
        f["chain_ns"], f["frames"] = int(m.group(1)), float(m.group(2))
    c = re.search(r"^  Java: user chains that met a JVM's code cache +(\d+)$", err, re.M)
    r = re.search(r"^  Java: reads of user memory +(\d+)$", err, re.M)
    if c and r and int(c.group(1)):
        f["reads"] = int(r.group(1)) / int(c.group(1))
        f["java_chains"] = int(c.group(1))
    n = re.search(r"spanperf record: (\d+) samples", err)
    if n and int(n.group(1)):
        f["bytes"] = size / int(n.group(1))
    return f


def complete_share(path, comm="jbusy"):
    """Of comm's samples (report --folded): the share whose chain starts at a thread's root, has no
    unnamed frame, and holds JBusy's frames by name."""
    out = subprocess.run([SPANPERF, "report", "-i", path, "--folded", "--event", "on-cpu"], capture_output=True,
                         text=True, errors="replace").stdout
    n = ok = 0
    for line in out.splitlines():
        st, _, c = line.rpartition(" ")
        fr = st.split(";")
        if fr[0] != comm or not c.isdigit():
            continue
        n += int(c)
        if len(fr) > 1 and fr[1] in ROOTS and "[unknown]" not in fr and any(" JBusy.down(" in x for x in fr):
            ok += int(c)
    return ok / n if n else None, n


def run(res, secs=4):
    cls = classes()
    jdks = [(label, jdk) for label, jdk in JDKS if os.path.exists(os.path.join(jdk, "bin", "java"))]
    if not cls or not jdks:
        log("java: no JDK 17 or 25 here: section skipped")
        return
    off = dict(os.environ, SPANPERF_NO_JAVA="1")
    cases = [("native, %d frames deep" % DEPTH, None, None)] + [(label, jdk, None) for label, jdk in jdks] + \
            [("%s, walk off" % jdks[0][0], jdks[0][1], off)]
    out = {"cases": {}, "host": {}}
    # The loads outlive the recording whatever its start-up takes (a whole-host one builds every
    # process's tables first: seconds on a busy host); each is killed once the recording ends.
    last = secs + 120
    for label, jdk, env in cases:
        runs = []
        for r in range(rounds()):
            if jdk:
                # The JVM's start-up and its compilations before the window: 3 s of its time.
                procs = [java_load(jdk, cls, last)]
                subprocess.run(["sleep", "3"])
            else:
                procs = [spawn([UNITWORK, str(CPUS), str(last), "200000", str(DEPTH)], stdout=DEVNULL)]
            try:
                err, path, size, cpu = record(["-p", ",".join(str(p.pid) for p in procs)], secs, env)
            finally:
                kill(*procs)
            f = figures(err, size)
            f["cpu"] = cpu
            if jdk:
                f["complete"] = complete_share(path)[0]
            runs.append(f)
            log("java %s round %d: %s" % (label, r, f))
        out["cases"][label] = {k: median([f[k] for f in runs if f.get(k) is not None]) for k in
                               ("chain_ns", "frames", "reads", "complete", "bytes", "cpu")
                               if any(f.get(k) is not None for f in runs)}
    # A real host's view: one JVM thread per CPU among a native spinner per CPU and a Python process.
    label, jdk = jdks[0]
    shares = {"on": [], "off": []}
    for r in range(rounds()):
        for mode, env in (("on", None), ("off", off)):
            procs = [java_load(jdk, cls, last), spawn([UNITWORK, str(CPUS), str(last), "200000", str(DEPTH)],
                                                      stdout=DEVNULL)]
            if os.path.exists("/usr/bin/python3.11"):
                procs.append(spawn(["/usr/bin/python3.11", PYBUSY, str(last)], stdout=DEVNULL))
            subprocess.run(["sleep", "3"])
            try:
                err, path, _, _ = record(["-a"], secs, env, name="host")
            finally:
                kill(*procs)
            share, n = complete_share(path)
            if share is not None:
                shares[mode].append(share)
            log("java host round %d, walk %s: %s of %d samples complete" % (r, mode, share, n))
    out["host"] = {"jdk": label, "on": median(shares["on"]) if shares["on"] else None,
                   "off": median(shares["off"]) if shares["off"] else None}
    res["java"] = out


def markdown(res):
    v = res["java"]
    lines = ["## Java frames by name (-g: HotSpot walked in BPF, no flag)", "",
             "A user chain in the sampling program (record -v's own clock, the load's samples alone, 999 Hz, one "
             "thread per CPU: bench/JBusy.java about %d Java frames deep, or bench/unitwork %d native frames "
             "deep), the Java steps' reads of user memory per Java chain, the share of the busy threads' samples "
             "complete and named, bytes per sample and the recorder's CPU (seconds a second); medians of rounds:"
             % (DEPTH, DEPTH), "",
             "| load | user chain in BPF | reads per Java chain | frames | complete, named | bytes a sample "
             "| recorder CPU |", "|---|---|---|---|---|---|---|"]

    def fmt(x, f="%.0f"):
        return f % x if x is not None else "-"
    for label, c in v["cases"].items():
        lines.append("| %s | %s ns | %s | %s | %s | %s | %.3f |" % (
            label, fmt(c.get("chain_ns")), fmt(c.get("reads"), "%.1f"), fmt(c.get("frames"), "%.1f"),
            fmt(100 * c["complete"], "%.1f%%") if c.get("complete") is not None else "-", fmt(c.get("bytes")),
            c.get("cpu", 0)))
    h = v.get("host", {})
    lines += ["", "\"walk off\": the same load with SPANPERF_NO_JAVA=1 (JIT code is then `[unknown]`, as before "
              "issue 35).", "",
              "A real host (record -a -g -F 999 for the same seconds: the %s load beside bench/unitwork on every "
              "CPU and pybusy.py under python3.11): the JVM's busy threads' samples complete and named, %s with the "
              "walk, %s without it (medians of rounds)." % (
                  h.get("jdk", "-"), fmt(100 * h["on"], "%.1f%%") if h.get("on") is not None else "-",
                  fmt(100 * h["off"], "%.1f%%") if h.get("off") is not None else "-"), ""]
    return lines
