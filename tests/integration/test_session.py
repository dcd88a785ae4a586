# SPDX-License-Identifier: GPL-2.0
"""The report's thread model: processes forked without exec inherit their
parent's maps and names, exec replaces them, and every row agrees with perf
report on the same file."""
import collections
import os
import re
import shutil

from harness import WORKLOAD, Skip, json_lines, need_bpf, need_perf, perf_clean, spanperf, test, tmpdir


def perf_rows(path, keys):
    """perf report --stdio's sample count per row of the --sort keys.

    Tab-separated, since names may hold spaces ("memfd:x (deleted)")."""
    need_perf()
    out = perf_clean(["report", "--stdio", "--no-children", "-g", "none", "-n", "-t", "\t",
                      "--sort", keys], path)
    rows = collections.Counter()
    for line in out.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        parts = [p.strip() for p in line.split("\t")]
        if len(parts) != 2 + len(keys.split(",")) or not parts[0].endswith("%"):
            continue
        fields = [re.sub(r"^\[[.k]\] ", "", f) for f in parts[2:]]
        rows[tuple(fields)] += int(parts[1])
    return rows


def perf_rows_home(path, keys, home):
    """perf_rows with $HOME/.debug, perf's build-id cache, under home."""
    old = os.environ.get("HOME")
    os.environ["HOME"] = home
    try:
        return perf_rows(path, keys)
    finally:
        os.environ["HOME"] = old or "/root"


def uncut_comms(theirs, mine):
    """perf's rows, with a comm perf printed cut short given back its whole name.

    perf report sizes the comm column from a length it caches per thread, so
    a thread renamed by exec may print cut: `record -- CMD` holds CMD's own
    thread, named spanperf until it execs, and only the tree's names beside
    it (a whole-host file had longer names that widened the column).  A row
    whose comm is a strict prefix of exactly one of ours, with the other keys
    equal, is that row."""
    out = collections.Counter()
    for key, n in theirs.items():
        whole = [k for k in mine if k not in theirs and k[1:] == key[1:] and k[0].startswith(key[0])]
        out[whole[0] if len(whole) == 1 else key] += n
    return out


def spanperf_rows(path, keys, env=None):
    rows = collections.Counter()
    out = spanperf("report", "-i", path, "--sort", keys, "--format", "json", env=env, check=True).stdout
    for r in json_lines(out):
        rows[tuple(str(r[k]) for k in keys.split(","))] += r["samples"]
    return rows


@test
def test_forked_children_inherit_maps():
    need_bpf()
    d = tmpdir()
    path = os.path.join(d, "fork.data")
    p = spanperf("record", "-g", "-F", "999", "-o", path, "--", WORKLOAD, "forkspin", "3", "300", check=True)
    truth = json_lines(p.stdout)
    assert len(truth) == 4, p.stdout
    rows = spanperf_rows(path, "pid,dso,sym")
    for t in truth:
        pid = str(t["pid"])
        mine = rows.get((pid, "workload", t["func"]), 0)
        expect = t["cpu_ns"] / 1e9 * 999
        # The child's own function, named from maps it inherited (two generations for the last).
        assert mine > 0.8 * expect, "pid %s: %d samples in %s, about %.0f expected" % (pid, mine, t["func"], expect)
        unknown = sum(n for (p_, dso, _), n in rows.items() if p_ == pid and dso == "[unknown]")
        assert unknown == 0, "pid %s: %d samples in [unknown]" % (pid, unknown)
    # perf's "pid" key is the thread ("TID:comm"): compare with ours per tid.
    theirs = perf_rows(path, "pid,dso,sym")
    theirs = collections.Counter({(k[0].split(":")[0],) + k[1:]: n for k, n in theirs.items()})
    rows = spanperf_rows(path, "tid,dso,sym")
    assert plt_folded(theirs) == plt_folded(rows), "differs from perf: %s" % sorted(
        set(plt_folded(theirs).items()) ^ set(plt_folded(rows).items()))[:10]


def plt_folded(rows):
    """Every row, with the PLT and _init as one symbol: perf 6.1 gives a PLT
    entry's samples to the sizeless _init before it or to NAME@plt depending
    on its symbol tree's shape (docs/perf-data.md: where perf is ambiguous)."""
    out = collections.Counter()
    for k, n in rows.items():
        sym = "<plt>" if k[-1] == "_init" or k[-1].endswith("@plt") else k[-1]
        out[k[:-1] + (sym,)] += n
    return out


@test
def test_pipeline_with_exec_agrees_with_perf():
    need_bpf()
    for tool in ("xz", "gzip", "sh", "head"):
        if not shutil.which(tool):
            raise Skip("%s is not installed" % tool)
    d = tmpdir()
    path = os.path.join(d, "pipe.data")
    # sh forks, each child execs: names and maps change at exec, not at fork.
    spanperf("record", "-g", "-F", "999", "-o", path, "--", "sh", "-c",
             "head -c 3000000 /dev/urandom | xz -1 -T1 | gzip -1 | xz -d -T1 2>/dev/null | wc -c >/dev/null; "
             "head -c 3000000 /dev/zero | gzip -6 | gzip -d | wc -c >/dev/null", check=True)
    mine = spanperf_rows(path, "comm,dso")
    theirs = uncut_comms(perf_rows(path, "comm,dso"), mine)
    assert theirs == mine, "differs from perf: %s" % sorted(set(theirs.items()) ^ set(mine.items()))[:10]
    assert any(c == "xz" and dso.startswith("liblzma") for c, dso in mine), mine
    assert any(c == "gzip" and dso == "gzip" for c, dso in mine), mine


REAL_WORK = r"""
set -e
cd "$1"
# a package built and unpacked: dpkg-deb forks its compressors without exec
mkdir -p pkg/DEBIAN pkg/usr/share/demo
head -c 4000000 /dev/urandom | base64 > pkg/usr/share/demo/data.txt
printf 'Package: spanperf-demo\nVersion: 1.0\nArchitecture: all\nMaintainer: t <t@t>\nDescription: d\n' > pkg/DEBIAN/control
dpkg-deb -Zxz -b pkg demo.deb >/dev/null
dpkg-deb -x demo.deb out
# a compiler, an interpreter, compressors and sort over generated data
printf 'int f(int x){return x*3;}\nint main(void){int s=0;for(int i=0;i<1000;i++)s+=f(i);return s&1;}\n' > t.c
gcc -O2 -o t t.c
python3 -c 'import json; sum(len(json.dumps(list(range(i % 300)))) for i in range(60000))'
seq 1 400000 | sort -R | sort -n | xz -1 -T1 | xz -d -T1 | gzip -1 > /dev/null
"""


@test
def test_real_programs_agree_with_perf():
    """Programs no test of ours wrote, recorded whole-host: every symbol of
    0.1% or more has perf's count, and no dso perf names is [unknown]."""
    need_bpf()
    for tool in ("gcc", "python3", "xz", "gzip", "sort", "seq", "dpkg-deb", "base64"):
        if not shutil.which(tool):
            raise Skip("%s is not installed" % tool)
    d = tmpdir()
    path = os.path.join(d, "host.data")
    script = os.path.join(d, "work.sh")
    with open(script, "w") as f:
        f.write(REAL_WORK)
    spanperf("record", "-a", "-g", "-F", "999", "-o", path, "--", "sh", script, d, check=True, timeout=300)
    mine = plt_folded(spanperf_rows(path, "comm,dso,sym"))
    theirs = plt_folded(perf_rows(path, "comm,dso,sym"))
    # The total from perf's rows by CPU, a column no other process names: a whole host's
    # comm or symbol may hold a tab or a newline, which splits its row in the table above.
    total = sum(perf_rows(path, "cpu").values())
    assert sum(mine.values()) == total, (sum(mine.values()), total)
    # The script's programs: whatever else ran on the host (another checkout's tests
    # replacing their binaries mid-run) may rightly differ, spanperf naming from its cache.
    ours = {"sh", "dpkg-deb", "xz", "gzip", "gcc", "cc1", "as", "collect2", "ld", "python3", "sort", "seq",
            "base64", "head", "tar", "mkdir", "printf", "swapper"}
    bad = [(k, n, mine.get(k, 0)) for k, n in theirs.items()
           if k[0] in ours and n * 1000 >= total and mine.get(k, 0) != n]
    assert not bad, "perf's count, spanperf's: %s" % bad[:10]
    unknown = lambda rows: sum(n for k, n in rows.items() if k[1] == "[unknown]")
    assert unknown(mine) <= unknown(theirs), (unknown(mine), unknown(theirs))
    comms = {k[0] for k in mine}
    for c in ("dpkg-deb", "cc1", "python3", "xz", "sort"):
        assert c in comms, "no samples of %s: %s" % (c, sorted(comms)[:30])


@test
def test_container_binary_named_from_the_build_id_cache():
    """A binary that exists only in its own mount namespace (unshare -m, a
    tmpfs on /mnt): alone, perf cannot name its frames; spanperf names them
    from the copy record kept by build id, and so does perf once record has
    entered that copy in perf's ~/.debug; with -N neither."""
    need_bpf()
    if not shutil.which("unshare"):
        raise Skip("unshare is not installed")
    d = tmpdir()
    # HOME too: with --perf-cache record enters its copies in $HOME/.debug, which is the machine's otherwise.
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(d, "cache"), HOME=d)
    script = os.path.join(d, "ctr.sh")
    with open(script, "w") as f:
        f.write('set -e\nmount -t tmpfs none /mnt\ncp "$1" /mnt/ctr-wl\nexec /mnt/ctr-wl spin 400\n')
    path = os.path.join(d, "ctr.data")
    p = spanperf("record", "--perf-cache", "-v", "-o", path, "--", "unshare", "-m", "sh", script, WORKLOAD, env=env,
                 check=True)
    # At least the container's.
    m = re.search(r"(\d+) files kept", p.stderr)
    assert m and int(m.group(1)) >= 1, p.stderr[-800:]
    rows = spanperf_rows(path, "comm,dso,sym", env)
    mine = rows.get(("ctr-wl", "ctr-wl", "spin_0"), 0)
    assert mine > 0.8 * 0.4 * 999, rows.most_common(5)
    # perf with record's ~/.debug: the same count; with an empty one: no name.
    theirs = perf_rows_home(path, "comm,dso,sym", d)
    assert theirs.get(("ctr-wl", "ctr-wl", "spin_0")) == mine, (mine, theirs.most_common(3))
    theirs = perf_rows_home(path, "comm,dso,sym", os.path.join(d, "cache"))
    assert not theirs.get(("ctr-wl", "ctr-wl", "spin_0")), "perf names it alone: %s" % theirs.most_common(3)
    p = spanperf("report", "-v", "-i", path, env=env, check=True)
    assert "1 dsos read from the build-id cache" in p.stderr, p.stderr[-500:]
    # With -N nothing is kept, and the frames are addresses, never another file's names.
    env["XDG_CACHE_HOME"] = env["HOME"] = os.path.join(d, "cache2")
    path2 = os.path.join(d, "ctr2.data")
    spanperf("record", "-N", "-o", path2, "--", "unshare", "-m", "sh", script, WORKLOAD, env=env, check=True)
    assert not os.path.exists(os.path.join(d, "cache2", "spanperf", "buildid"))
    assert not os.path.exists(os.path.join(d, "cache2", ".debug"))
    rows = spanperf_rows(path2, "comm,dso,sym", env)
    assert not rows.get(("ctr-wl", "ctr-wl", "spin_0")), rows.most_common(3)
