# SPDX-License-Identifier: GPL-2.0
"""Real hosts: the whole machine recorded while programs no test wrote run
(a package installed by dpkg, apt's own tools, bash forking subshells, a
compiler, an interpreter, compressors), every leaf agreeing with perf; and
containers' binaries, including the cases where their files cannot be
kept, never named wrongly."""
import collections
import glob
import os
import re
import shutil
import signal
import subprocess
import time

from harness import ROOT, WORKLOAD, Skip, cpu_ns, json_lines, need_bpf, perf_script_samples, spanperf, test, tmpdir
from test_session import perf_rows, perf_rows_home, plt_folded, spanperf_rows


def small_deb():
    """A cached package of all architectures with no maintainer scripts, the
    largest up to 8 MB: installed into a private root it changes nothing on
    the machine, and dpkg-deb still forks its decompressor without exec."""
    best = None
    for deb in glob.glob("/var/cache/apt/archives/*_all.deb"):
        size = os.path.getsize(deb)
        if not 500000 <= size <= 8000000 or (best and size <= best[0]):
            continue
        p = subprocess.run(["dpkg-deb", "-I", deb], capture_output=True, text=True, errors="replace")
        if p.returncode or re.search(r"\b(preinst|postinst|prerm|postrm|config|triggers)\b", p.stdout):
            continue
        m = re.search(r"^ Package: (\S+)", p.stdout, re.M)
        if m:
            best = (size, deb, m.group(1))
    if not best:
        raise Skip("no small script-free .deb in /var/cache/apt/archives to install")
    return best[1], best[2]


HOST_WORK = r"""
set -e
cd "$1"
# a package installed and removed in a root of its own
mkdir -p root/var/lib/dpkg/info root/var/lib/dpkg/updates
: > root/var/lib/dpkg/status
dpkg --force-not-root --root="$PWD/root" -i "$2" >/dev/null
dpkg --force-not-root --root="$PWD/root" -r "$3" >/dev/null
# apt's tools over the machine's package lists (libapt-pkg, C++)
apt-cache dumpavail > /dev/null
apt-cache depends gcc python3 libc6 > /dev/null
# bash forking subshells without exec
bash -c 'for i in $(seq 1 300); do x=$(for w in a b c d; do echo $w; done); y=$(echo "$x" | tr a-d A-D); done'
printf 'int f(int x){return x*3;}\nint main(void){int s=0;for(int i=0;i<1000;i++)s+=f(i);return s&1;}\n' > t.c
gcc -O2 -o t t.c
python3 -c 'import json; sum(len(json.dumps(list(range(i % 300)))) for i in range(40000))'
seq 1 300000 | sort -R | sort -n | xz -1 -T1 | xz -d -T1 | gzip -1 > /dev/null
"""


# HOST_WORK's programs: whatever else ran on the host (another checkout's tests replacing their
# binaries mid-run) may rightly differ, spanperf naming from its cache (as test_session's).
HOST_COMMS = {"sh", "dpkg", "dpkg-deb", "dpkg-split", "apt-cache", "bash", "seq", "tr", "printf", "gcc", "cc1", "as",
              "collect2", "ld", "python3", "sort", "xz", "gzip", "mkdir", "tar", "rm", "swapper"}


def folded_leaves(path, comms=None):
    leaf = collections.Counter()
    for line in spanperf("report", "-i", path, "--folded", check=True).stdout.splitlines():
        stack, n = line.rsplit(" ", 1)
        if comms is None or stack.split(";")[0] in comms:
            leaf[stack.split(";")[-1]] += int(n)
    return leaf


@test
def test_package_install_agrees_with_perf():
    """Whole host while dpkg installs a cached package and apt, bash, gcc,
    python3, xz and sort run: every (comm, dso, sym) of 0.1% or more has
    perf report's count, every leaf of 0.1% or more perf script's, and no
    more samples are [unknown] than in perf."""
    need_bpf()
    for tool in ("dpkg", "dpkg-deb", "apt-cache", "bash", "gcc", "python3", "xz", "gzip", "sort", "seq"):
        if not shutil.which(tool):
            raise Skip("%s is not installed" % tool)
    deb, pkg = small_deb()
    d = tmpdir()
    script = os.path.join(d, "host.sh")
    with open(script, "w") as f:
        f.write(HOST_WORK)
    path = os.path.join(d, "host.data")
    env = dict(os.environ, HOME=d)  # record's copies of files not found by their path stay here
    spanperf("record", "--perf-cache", "-a", "-g", "-F", "999", "-o", path, "--", "sh", script, d, deb, pkg, env=env,
             check=True, timeout=300)
    mine = spanperf_rows(path, "comm,dso,sym", env)
    theirs = perf_rows_home(path, "comm,dso,sym", d)
    # The total from perf's rows by CPU, a column no other process names: a whole host's
    # comm or symbol may hold a tab or a newline, which splits its row in the table above.
    total = sum(perf_rows_home(path, "cpu", d).values())
    assert sum(mine.values()) == total, (sum(mine.values()), total)
    # docs/perf-data.md: a PLT address perf 6.1 names _init or NAME@plt by its tree's shape; spanperf says NAME@plt.
    fm, ft = plt_folded(mine), plt_folded(theirs)
    # Where perf has no dso spanperf may know more (a BPF program's frame, named from kallsyms).
    bad = [(k, n, fm.get(k, 0)) for k, n in ft.items()
           if k[0] in HOST_COMMS and n * 1000 >= total and fm.get(k, 0) != n and k[1] != "[unknown]"]
    assert not bad, "perf report's count, spanperf's: %s" % bad[:10]
    unknown = lambda rows: sum(n for k, n in rows.items() if k[1] == "[unknown]")
    assert unknown(mine) <= unknown(theirs), (unknown(mine), unknown(theirs))
    comms = {k[0] for k in mine}
    for c in ("dpkg-deb", "apt-cache", "bash", "cc1", "python3", "xz", "sort"):
        assert c in comms, "no samples of %s: %s" % (c, sorted(comms)[:40])
    # dpkg-deb's decompressor is a child forked without exec: its liblzma frames are named.
    assert any(k[0] == "dpkg-deb" and k[1].startswith("liblzma") for k in mine), \
        sorted(k for k in mine if k[0] == "dpkg-deb")[:10]
    # perf script's leaf, sample by sample, against the folded stacks' leaves.
    old = os.environ.get("HOME")
    os.environ["HOME"] = d
    try:
        samples = perf_script_samples(path)
    finally:
        os.environ["HOME"] = old or "/root"
    leaf = folded_leaves(path, HOST_COMMS)
    script_leaf = collections.Counter(re.sub(r"\+0x[0-9a-f]+$", "", s["frames"][0]) for s in samples
                                      if s["frames"] and s["comm"] in HOST_COMMS)
    plt = lambda s: "<plt>" if s == "_init" or s.endswith("@plt") else s
    fl, fs = collections.Counter(), collections.Counter()
    for s, n in leaf.items():
        fl[plt(s)] += n
    for s, n in script_leaf.items():
        fs[plt(s)] += n
    # perf script prints no frame for a sample whose call chain is empty (seen: valgrind's
    # memcheck), where perf report and the folded leaf take the sample's ip: those may be anywhere.
    nf = sum(1 for s in samples if not s["frames"] and s["comm"] in HOST_COMMS)
    bad = [(s, n, fl.get(s, 0)) for s, n in fs.items()
           if n * 1000 >= len(samples) and not n <= fl.get(s, 0) <= n + nf and s != "[unknown]"]
    assert not bad, "perf script's leaf count, spanperf's folded (%d frameless): %s" % (nf, bad[:10])
    assert fl["[unknown]"] <= fs["[unknown]"] + nf, (fl["[unknown]"], fs["[unknown]"], nf)


def container_script(d, body):
    """sh SCRIPT WORKLOAD: a mount namespace of its own with a tmpfs on /mnt,
    the workload copied there as /mnt/ctr-wl; then body."""
    if not shutil.which("unshare"):
        raise Skip("unshare is not installed")
    script = os.path.join(d, "ctr.sh")
    with open(script, "w") as f:
        f.write('set -e\nmount -t tmpfs none /mnt\ncp "$1" /mnt/ctr-wl\n' + body + "\n")
    return ["unshare", "-m", "sh", script, WORKLOAD]


def kept(line):
    """Files record's cache line says it kept: the container's, and in a whole-host recording
    on a shared host maybe another process's deleted file too."""
    m = re.search(r"(\d+) files kept", line)
    return int(m.group(1)) if m else 0


def ctr_rows(path, env):
    return {k[2]: n for k, n in spanperf_rows(path, "comm,dso,sym", env).items() if k[:2] == ("ctr-wl", "ctr-wl")}


def cache_line(stderr):
    lines = [l for l in stderr.splitlines() if "build-id cache:" in l]
    assert len(lines) == 1, "said %d times: %s" % (len(lines), stderr[-800:])
    return lines[0]


@test
def test_container_started_before_the_recording():
    """A container's process already running when record starts: its maps
    come from /proc (the side-band synthesis), with build ids read through
    /proc/PID/map_files, and its frames are named from the kept copy."""
    need_bpf()
    d = tmpdir()
    env = dict(os.environ, HOME=d, XDG_CACHE_HOME=os.path.join(d, "cache"))
    cmd = container_script(d, "exec /mnt/ctr-wl spin 2500")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        path = os.path.join(d, "pre.data")
        # unshare and sh exec: the spinner is proc itself.
        c0, t0 = cpu_ns(proc.pid), time.monotonic()
        p = spanperf("record", "--perf-cache", "-a", "-v", "-F", "999", "-d", "1", "-o", path, env=env, check=True)
        share = (cpu_ns(proc.pid) - c0) / ((time.monotonic() - t0) * 1e9)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert kept(cache_line(p.stderr)) >= 1, p.stderr[-800:]
    rows = ctr_rows(path, env)
    # A second of a spinning process, on a host shared with other work: named, and not rarely
    # for the share of a CPU its own clock shows it had.
    assert rows.get("spin_0", 0) > 0.3 * 999 * share, (rows, share)
    theirs = perf_rows_home(path, "comm,dso,sym", d)
    assert theirs.get(("ctr-wl", "ctr-wl", "spin_0")) == rows["spin_0"], \
        (rows, {k: n for k, n in theirs.items() if k[0] == "ctr-wl"})
    header_lists_container_file(path)


def workload_build_id():
    out = subprocess.run(["readelf", "-n", WORKLOAD], capture_output=True, text=True, errors="replace").stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    if not m:
        raise Skip("readelf finds no build id in the workload")
    return m.group(1)


def header_lists_container_file(path):
    """The BUILD_ID feature (perf buildid-list without -H reads only it) has the file the
    container saw, by the build id it had there: what perf archive and buildid-list want."""
    from harness import perf_clean
    out = perf_clean(["buildid-list"], path)
    assert "%s /mnt/ctr-wl" % workload_build_id() in out, out


def addresses_only(rows):
    """Every ctr-wl frame unnamed (an address, as perf prints one), none another file's name."""
    assert rows, "no ctr-wl samples"
    assert all(re.match(r"^0x[0-9a-f]{16}$", s) for s in rows), rows


@test
def test_container_cache_unwritable_or_full():
    """A cache directory that cannot be written, and one at its bound: the
    recording still succeeds, -v says so once, and the frames are addresses,
    never a wrong name."""
    need_bpf()
    d = tmpdir()
    cmd = container_script(d, "exec /mnt/ctr-wl spin 300")
    # Unwritable: XDG_CACHE_HOME is a file, so no directory can be made under it.
    blocker = os.path.join(d, "not-a-dir")
    open(blocker, "w").close()
    env = dict(os.environ, HOME=os.path.join(d, "h1"), XDG_CACHE_HOME=blocker)
    path = os.path.join(d, "ro.data")
    p = spanperf("record", "-v", "-o", path, "--", *cmd, env=env, check=True)
    assert "1 failed to write" in cache_line(p.stderr), p.stderr[-800:]
    addresses_only(ctr_rows(path, env))
    # Full: the cache already holds its bound (a sparse file counts its length), in a copy that
    # another recording is making now (atomic_file's temporary), which no room is made from.
    env = dict(os.environ, HOME=os.path.join(d, "h2"), XDG_CACHE_HOME=os.path.join(d, "c2"))
    os.makedirs(os.path.join(d, "c2", "spanperf", "buildid"))
    with open(os.path.join(d, "c2", "spanperf", "buildid", "0" * 40 + ".new.tmp-Ab12Cd"), "wb") as f:
        f.truncate(2 << 30)
    path = os.path.join(d, "full.data")
    p = spanperf("record", "-v", "-o", path, "--", *cmd, env=env, check=True)
    assert "1 over the cache's bound" in cache_line(p.stderr), p.stderr[-800:]
    addresses_only(ctr_rows(path, env))
    assert not os.path.exists(os.path.join(d, "h2", ".debug"))


@test
def test_container_cache_full_of_old_copies():
    """A cache filled to its bound by earlier recordings kept nothing ever again: on a host
    whose cache had filled, a container's binary went unnamed in every later recording (the
    OpenTelemetry container test, 5 spans of 30).  The copies written longest ago make room;
    newer ones and another recording's copy in progress stay."""
    need_bpf()
    d = tmpdir()
    cmd = container_script(d, "exec /mnt/ctr-wl spin 300")
    env = dict(os.environ, HOME=os.path.join(d, "h"), XDG_CACHE_HOME=os.path.join(d, "c"))
    cache = os.path.join(d, "c", "spanperf", "buildid")
    os.makedirs(cache)
    now = time.time()
    # Sparse: their lengths count, 2.1 GiB in all, and they cost no disk.
    planted = {"old": ("1" * 40 + "." + "a" * 64, 1536 << 20, now - 2 * 86400),
               "newer": ("2" * 40 + "." + "b" * 64, 307 << 20, now - 3600),
               "in progress": ("3" * 40 + ".new.tmp-Xy34Zw", 307 << 20, now)}
    for name, size, mtime in planted.values():
        with open(os.path.join(cache, name), "wb") as f:
            f.truncate(size)
        os.utime(os.path.join(cache, name), (mtime, mtime))
    path = os.path.join(d, "c.data")
    p = spanperf("record", "-v", "-o", path, "--", *cmd, env=env, check=True)
    line = cache_line(p.stderr)
    assert kept(line) == 1 and "0 over the cache's bound" in line and "1 older copies removed" in line, line
    left = set(os.listdir(cache))
    assert planted["old"][0] not in left, left
    assert planted["newer"][0] in left and planted["in progress"][0] in left, left
    assert any(n.startswith(workload_build_id() + ".") for n in left), left
    rows = ctr_rows(path, env)
    assert rows.get("spin_0", 0) > 0, rows


@test
def test_container_short_process_then_server():
    """Processes of one binary that exit at once, then a long one: the file
    is kept from whichever is still there when its mapping is read (a
    process already gone does not stop a later one's try), and the long
    one's frames are named."""
    need_bpf()
    d = tmpdir()
    env = dict(os.environ, HOME=d, XDG_CACHE_HOME=os.path.join(d, "cache"))
    cmd = container_script(d, "for i in 1 2 3 4 5; do /mnt/ctr-wl tiny 1 >/dev/null; done\n"
                              "exec /mnt/ctr-wl spin 400")
    path = os.path.join(d, "short.data")
    p = spanperf("record", "-v", "-o", path, "--", *cmd, env=env, check=True)
    line = cache_line(p.stderr)
    assert kept(line) >= 1, line
    kept_dir = os.path.join(d, "cache", "spanperf", "buildid")
    assert [n for n in os.listdir(kept_dir) if n.startswith(workload_build_id() + ".")], line
    rows = ctr_rows(path, env)
    assert rows.get("spin_0", 0) > 0.8 * 0.4 * 999, rows
    header_lists_container_file(path)


LABELS_C = r"""
/* Entry points hand-written assembly leaves as labels: NOTYPE, size 0. */
__asm__(".text\n"
        ".globl label_spin\n"
        "label_spin:\n"
        "1: dec %rdi\n"
        "   jnz 1b\n"
        "   ret\n"
        "local_label_spin:\n"
        "2: dec %rdi\n"
        "   jnz 2b\n"
        "   ret\n"
        ".globl call_local\n"
        "call_local: jmp local_label_spin\n");
void label_spin(long n);
void call_local(long n);
int main(void)
{
    for (int i = 0; i < 4; i++) {
        label_spin(100000000L);
        call_local(100000000L);
    }
    return 0;
}
"""


@test
def test_assembly_labels_named_as_perf():
    """perf 6.1 names code by labels too (ld.so's _start, assembly entry
    points), global and local: the same names, the same counts, and never
    the C function before them."""
    need_bpf()
    if not shutil.which("cc") or os.uname().machine != "x86_64":
        raise Skip("needs cc on x86_64")
    d = tmpdir()
    src, exe = os.path.join(d, "lbl.c"), os.path.join(d, "lbl")
    with open(src, "w") as f:
        f.write(LABELS_C)
    subprocess.run(["cc", "-O1", "-o", exe, src], check=True)
    path = os.path.join(d, "lbl.data")
    spanperf("record", "-F", "999", "-o", path, "--", exe, check=True)
    mine = {k[2]: n for k, n in spanperf_rows(path, "comm,dso,sym").items() if k[:2] == ("lbl", "lbl")}
    theirs = {k[2]: n for k, n in perf_rows(path, "comm,dso,sym").items() if k[:2] == ("lbl", "lbl")}
    assert mine == theirs, (mine, theirs)
    assert mine.get("label_spin", 0) > 50 and mine.get("local_label_spin", 0) > 50, mine


def perf_row_list(path, keys):
    """perf report's rows as a sorted list of (key..., samples): rows that print alike stay apart."""
    from harness import perf_clean
    out = perf_clean(["report", "--stdio", "--no-children", "-g", "none", "-n", "-t", "\t", "--sort", keys], path)
    rows = []
    for line in out.splitlines():
        parts = [p.strip() for p in line.split("\t")]
        if line.startswith("#") or len(parts) != 2 + len(keys.split(",")) or not parts[0].endswith("%"):
            continue
        rows.append(tuple(re.sub(r"^\[[.k]\] ", "", f) for f in parts[2:]) + (int(parts[1]),))
    return sorted(rows)


@test
def test_two_builds_of_one_program_are_rows_as_in_perf():
    """Two builds of a program under one name (a container's and the
    host's, two worktrees): perf report makes one row of a function whose
    extent is the same in both, two where it moved; so does spanperf."""
    need_bpf()
    if not shutil.which("cc"):
        raise Skip("cc is not installed")
    d = tmpdir()
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workload.c")
    flags = {"a": ["-O1", "-Wl,--build-id=0x1111aaaa"], "b": ["-O1", "-Wl,--build-id=0x2222aaaa"],
             "c": ["-O0", "-Wl,--build-id=0x3333aaaa"]}
    for name, extra in flags.items():
        os.makedirs(os.path.join(d, name))
        subprocess.run(["cc", "-g", "-fno-omit-frame-pointer", "-fno-inline", "-iquote", os.path.join(ROOT, "include")]
                       + extra + [src, "-o", os.path.join(d, name, "wl"), "-lpthread"], check=True)
    path = os.path.join(d, "two.data")
    # The build ids are fixed: a perf build-id cache ($HOME/.debug) kept from an earlier
    # run, of an older workload.c, would answer for them.  Both tools get a home of their own.
    env = dict(os.environ, HOME=d, XDG_CACHE_HOME=os.path.join(d, "cache"))
    spanperf("record", "-F", "999", "-o", path, "--", "sh", "-c",
             "cd %s && a/wl spin 300 & cd %s && b/wl spin 300 & cd %s && c/wl spin 300 & wait" % (d, d, d),
             env=env, check=True)
    keys = "comm,dso,sym"
    old_home = os.environ.get("HOME")
    os.environ["HOME"] = d
    try:
        theirs = [r for r in perf_row_list(path, keys) if r[:2] == ("wl", "wl")]
    finally:
        os.environ["HOME"] = old_home or "/root"
    mine = sorted(tuple(str(r[k]) for k in keys.split(",")) + (r["samples"],) for r in json_lines(
        spanperf("report", "-i", path, "--sort", keys, "--format", "json", env=env, check=True).stdout))
    mine = [r for r in mine if r[:2] == ("wl", "wl")]
    assert mine == theirs, (mine, theirs)
    spins = [r for r in mine if r[2] == "spin_0"]
    assert len(spins) == 2, spins  # a and b in one row, c's own


@test
def test_changed_binary_named_from_perfs_build_id_cache():
    """A binary replaced since the recording, whose old build perf keeps in
    ~/.debug (perf buildid-cache, or a perf record of it): perf report names
    its frames from there, and so does spanperf report, with the same
    counts; without that copy both print addresses."""
    need_bpf()
    from harness import need_perf, run
    need_perf()
    d = tmpdir()
    wl = os.path.join(d, "wl")
    shutil.copy(WORKLOAD, wl)
    env = dict(os.environ, HOME=d, XDG_CACHE_HOME=os.path.join(d, "cache"))
    path = os.path.join(d, "w.data")
    spanperf("record", "--perf-cache", "-o", path, "--", wl, "spin", "300", env=env, check=True)
    p = run(["perf", "buildid-cache", "-a", wl], env=env)
    assert p.returncode == 0, p.stderr
    os.unlink(wl)
    shutil.copy("/bin/true", wl)
    mine = {k[2]: n for k, n in spanperf_rows(path, "comm,dso,sym", env).items() if k[:2] == ("wl", "wl")}
    theirs = {k[2]: n for k, n in perf_rows_home(path, "comm,dso,sym", d).items() if k[:2] == ("wl", "wl")}
    assert mine == theirs and mine.get("spin_0", 0) > 200, (mine, theirs)
    p = spanperf("report", "-v", "-i", path, env=env, check=True)
    assert "1 dsos read from the build-id cache" in p.stderr, p.stderr[-600:]
    shutil.rmtree(os.path.join(d, ".debug"))
    mine = {k[2]: n for k, n in spanperf_rows(path, "comm,dso,sym", env).items() if k[:2] == ("wl", "wl")}
    addresses_only(mine)
