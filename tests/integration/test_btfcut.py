# SPDX-License-Identifier: GPL-2.0
"""record's cut of the kernel's BTF (user/sys/min_btf.c), for real: the sampling object relocated
against it exactly as against the whole BTF, kept per kernel build id and object, refused and
cut anew when the file is not one record wrote whole, never reused for another object."""
import glob
import hashlib
import os
import re
import shutil
import stat
import struct

from harness import BUILD, SPANPERF, WORKLOAD, need_bpf, run, spanperf, test, tmpdir, traced_env

SAMPLE_OBJ = os.path.join(BUILD, "sample.bpf.o")
CHILDREN, MS = 3, 300


def cache_env(home):
    env = dict(os.environ)
    env["XDG_CACHE_HOME"] = home
    env.pop("SPANPERF_NO_BTF_CACHE", None)
    return env


def cut_home():
    home = os.path.join(tmpdir(), "cache")
    os.mkdir(home, 0o700)
    return home


def entries(home):
    return sorted(glob.glob(os.path.join(home, "spanperf", "btf", "*")))


def relocations(stderr):
    """libbpf's patched instructions of the programs loaded either way (the fork and target hooks
    are tp_btf against the whole BTF, their raw_tp twins with the cut)."""
    return sorted(re.sub(r"relo #\d+: ", "", l) for l in stderr.splitlines()
                  if ("patched insn" in l or "substituting insn" in l) and "fork_" not in l and "exit_" not in l)


def record_forkspin(env, strace=None):
    d = tmpdir()
    out = os.path.join(d, "perf.data")
    cmd = ["record", "-g", "-vv", "-o", out, "--", WORKLOAD, "forkspin", str(CHILDREN), str(MS)]
    if strace:
        p = run(["strace", "-f", "-qq", "-e", "trace=openat", "-o", strace, SPANPERF] + cmd,
                env=traced_env(env), timeout=180)
    else:
        p = spanperf(*cmd, env=env, timeout=180)
    assert p.returncode == 0, "record exited %d: %s" % (p.returncode, p.stderr[-3000:])
    return out, p.stderr


def children_chains(path):
    """Per child pid: (samples, samples whose chain reaches forked_spin from main)."""
    folded = spanperf("report", "-i", path, "--folded", "--sort", "pid", check=True).stdout
    by_pid = {}
    for row in spanperf("report", "-i", path, "--sort", "pid", "--format", "json", check=True).stdout.splitlines():
        m = re.search(r'"samples":(\d+),.*"pid":(\d+)', row)
        if m:
            by_pid[int(m.group(2))] = int(m.group(1))
    reach = sum(int(l.rsplit(" ", 1)[1]) for l in folded.splitlines()
                if l.startswith("workload;") and ";main;mode_forkspin;forked_spin;" in l)
    return by_pid, reach


def check_recording(path, what):
    by_pid, reach = children_chains(path)
    # The children each spin MS ms at 999 Hz: the three busiest pids are them; a busy host may
    # delay them, never take their samples away.
    kids = sorted(by_pid.values(), reverse=True)[:CHILDREN]
    assert len(kids) == CHILDREN and min(kids) >= MS // 2, "%s: the children's samples %s" % (what, kids)
    assert reach * 10 >= sum(kids) * 9, "%s: %d of %d children's samples reach main" % (what, reach, sum(kids))


def entry_key():
    """What an entry is for, from outside: the kernel's build id (/sys/kernel/notes) and the SHA-256
    of sample.bpf.o's .BTF (its length first) and .BTF.ext, as the skeleton embeds that file."""
    notes = open("/sys/kernel/notes", "rb").read()
    bid, off = None, 0
    while off + 12 <= len(notes):
        namesz, descsz, typ = struct.unpack_from("<III", notes, off)
        name_end = off + 12 + ((namesz + 3) & ~3)
        if typ == 3 and notes[off + 12:off + 12 + namesz].rstrip(b"\0") == b"GNU":
            bid = notes[name_end:name_end + descsz].hex()
        off = name_end + ((descsz + 3) & ~3)
    data = open(SAMPLE_OBJ, "rb").read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3a)
    secs = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    stroff = secs[shstrndx][4]

    def section(want):
        for s in secs:
            name = data[stroff + s[0]:data.index(b"\0", stroff + s[0])]
            if name == want:
                return data[s[4]:s[4] + s[5]]
        raise AssertionError("no %s in %s" % (want, SAMPLE_OBJ))
    btf, ext = section(b".BTF"), section(b".BTF.ext")
    return bytes.fromhex(bid), hashlib.sha256(struct.pack("<I", len(btf)) + btf + ext).digest()


def expected_name():
    bid, obj = entry_key()
    return "%s-%s-v2" % (bid.hex(), obj.hex()[:32])


# The header (min_btf.c): magic, version, size, the key (build id[20], its size, 3 pad, the
# object's SHA-256), the SHA-256 of the BTF after it.
HDR = struct.Struct("<8sII20sB3x32s32s")


def entry_bytes(btf, bid=None, obj=None):
    """An entry as record writes one: for this kernel and object unless told otherwise."""
    kbid, kobj = entry_key()
    bid, obj = bid or kbid, obj or kobj
    return HDR.pack(b"SPMINBTF", 2, len(btf), bid.ljust(20, b"\0"), len(bid), obj,
                    hashlib.sha256(btf).digest()) + btf


@test
def test_cut_miss_then_hit_relocates_as_the_whole_btf():
    need_bpf()
    home = cut_home()
    strace = shutil.which("strace")
    trace = os.path.join(tmpdir(), "openat.txt")
    miss, miss_err = record_forkspin(cache_env(home))
    assert "relocated against a cut of the kernel's BTF (cut and kept)" in miss_err, miss_err[-2000:]
    assert [os.path.basename(e) for e in entries(home)] == [expected_name()], entries(home)
    hit, hit_err = record_forkspin(cache_env(home), strace=trace if strace else None)
    assert "relocated against a cut of the kernel's BTF (cached)" in hit_err, hit_err[-2000:]
    env = cache_env(home)
    env["SPANPERF_NO_BTF_CACHE"] = "1"
    whole, whole_err = record_forkspin(env)
    assert "relocated against the kernel's whole BTF" in whole_err, whole_err[-2000:]
    # The raw_tp twins with the cut: the children followed (target) and their tables known (eh fork).
    for prog in ("target_fork_raw", "target_exit_raw", "eh_fork_raw"):
        assert "program %s:" % prog in hit_err, "%s not loaded: %s" % (prog, hit_err[-2000:])
    r_miss, r_hit, r_whole = relocations(miss_err), relocations(hit_err), relocations(whole_err)
    assert r_miss and any("on_sample_eh" in l for l in r_miss), miss_err[-2000:]
    assert r_miss == r_hit == r_whole, "relocations differ:\n%s" % "\n".join(sorted(set(r_hit) ^ set(r_whole)))
    for path, what in ((miss, "miss"), (hit, "hit"), (whole, "whole BTF")):
        check_recording(path, what)
    if strace:
        opened = open(trace).read()
        assert "/sys/kernel/btf/vmlinux" not in opened, "a cache hit opened the kernel's BTF"


def corrupt_cases(path, good):
    """(what, how) pairs: each leaves at path a file record must refuse."""
    def truncated():
        open(path, "wb").write(good[:len(good) // 2])

    def flipped():
        b = bytearray(good)
        b[-1] ^= 0xff
        open(path, "wb").write(bytes(b))

    def header_only():
        open(path, "wb").write(good[:48])

    def readable():
        open(path, "wb").write(good)
        os.chmod(path, 0o644)

    def foreign_owner():
        open(path, "wb").write(good)
        os.chown(path, 65534, 65534)

    def symlink():
        target = path + ".elsewhere"
        open(target, "wb").write(good)
        os.chmod(target, 0o600)
        os.symlink(target, path)

    # Sound entries, root's, 0600, their sums right, made for another name and renamed onto this one.
    btf = good[HDR.size:]
    bid, obj = entry_key()

    def other_object():
        open(path, "wb").write(entry_bytes(btf, obj=bytes(32)))

    def other_kernel():
        open(path, "wb").write(entry_bytes(btf, bid=bytes([bid[0] ^ 1]) + bid[1:]))

    def version_1():
        open(path, "wb").write(entry_bytes(btf)[:8] + struct.pack("<I", 1) + entry_bytes(btf)[12:])
    return [("truncated", truncated), ("a byte changed", flipped), ("header alone", header_only),
            ("mode 0644", readable), ("owned by nobody", foreign_owner), ("a symlink", symlink),
            ("made for another object", other_object), ("made for another kernel", other_kernel),
            ("format version 1", version_1)]


@test
def test_planted_or_truncated_cut_refused_and_rebuilt():
    need_bpf()
    home = cut_home()
    out = os.path.join(tmpdir(), "p.data")
    args = ["record", "-v", "-a", "-g", "-d", "0.2", "-o", out]
    p = spanperf(*args, env=cache_env(home), timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    path, = entries(home)
    good = open(path, "rb").read()
    assert oct(os.stat(path).st_mode & 0o777) == "0o600" and os.stat(path).st_uid == 0
    assert entry_bytes(good[HDR.size:]) == good, "the header is not this kernel's and object's"
    for what, plant in corrupt_cases(path, good):
        os.unlink(path)
        umask = os.umask(0o077)
        try:
            plant()
        finally:
            os.umask(umask)
        p = spanperf(*args, env=cache_env(home), timeout=120)
        assert p.returncode == 0, "%s: %s" % (what, p.stderr[-2000:])
        assert "is not sound: removed" in p.stderr, "%s: not refused: %s" % (what, p.stderr[-2000:])
        assert "(cut and kept)" in p.stderr, "%s: not cut anew: %s" % (what, p.stderr[-2000:])
        st = os.lstat(path)
        assert stat.S_ISREG(st.st_mode) and st.st_uid == 0 and st.st_mode & 0o777 == 0o600, what
        assert open(path, "rb").read() == good, "%s: the new cut differs from the first" % what
        if os.path.exists(path + ".elsewhere"):
            os.unlink(path + ".elsewhere")


@test
def test_other_objects_cut_not_reused():
    need_bpf()
    home = cut_home()
    out = os.path.join(tmpdir(), "o.data")
    args = ["record", "-v", "-a", "-g", "-d", "0.2", "-o", out]
    assert spanperf(*args, env=cache_env(home), timeout=120).returncode == 0
    path, = entries(home)
    # The same kernel, another build of the object (its BTF's sum differs): the entry a build
    # with other relocations left is not read, and this build's is cut anew beside it.
    name = os.path.basename(path)
    other = os.path.join(os.path.dirname(path), name[:41] + "0" * 32 + name[73:])
    os.rename(path, other)
    p = spanperf(*args, env=cache_env(home), timeout=120)
    assert p.returncode == 0 and "(cut and kept)" in p.stderr, p.stderr[-2000:]
    assert sorted(entries(home)) == sorted([path, other]), entries(home)


def foreign_dirs():
    """(what, make) pairs: make(home) leaves home/spanperf/btf a directory root must not keep cuts
    in, and returns the directory its files are in."""
    def mode_0777(home):
        d = os.path.join(home, "spanperf", "btf")
        os.makedirs(d)
        os.chmod(d, 0o777)
        return d

    def owned_by_nobody(home):
        d = os.path.join(home, "spanperf", "btf")
        os.makedirs(d, 0o700)
        os.chown(d, 65534, 65534)
        return d

    def symlinked_parent(home):
        # Another user's directory, holding a btf of root's that would pass on its own.
        theirs = os.path.join(tmpdir(), "theirs")
        os.makedirs(os.path.join(theirs, "btf"), 0o700)
        os.chown(theirs, 65534, 65534)
        os.symlink(theirs, os.path.join(home, "spanperf"))
        os.lchown(os.path.join(home, "spanperf"), 65534, 65534)
        return os.path.join(theirs, "btf")
    return [("mode 0777", mode_0777), ("owned by nobody", owned_by_nobody), ("a symlinked parent", symlinked_parent)]


def listing(d):
    return sorted((n, os.lstat(os.path.join(d, n)).st_size, os.lstat(os.path.join(d, n)).st_mtime_ns)
                  for n in os.listdir(d))


@test
def test_foreign_cache_dir_not_used():
    need_bpf()
    for what, make in foreign_dirs():
        home = cut_home()
        d = make(home)
        # What a store would remove there: an old temporary, and a big old file over the bound;
        # and the entry's own name, which a read would take or remove.
        old = os.path.join(d, "x.tmp-old")
        open(old, "wb").write(b"t")
        big = os.path.join(d, "big")
        with open(big, "wb") as f:
            f.truncate(5 << 20)
        planted = os.path.join(d, expected_name())
        open(planted, "wb").write(b"not a cut")
        os.chmod(planted, 0o600)
        for f in (old, big):
            os.utime(f, (1, 1))
        before = listing(d)
        out, err = record_forkspin(cache_env(home))
        assert "is not kept in %s" % os.path.join(home, "spanperf", "btf") in err, "%s: %s" % (what, err[-2000:])
        assert "(cut, not kept)" in err, "%s: %s" % (what, err[-2000:])
        assert "is not sound" not in err, "%s: %s" % (what, err[-2000:])
        assert listing(d) == before, "%s: %s changed: %s" % (what, d, listing(d))
        assert open(planted, "rb").read() == b"not a cut", what
        check_recording(out, what)


@test
def test_cut_that_fails_to_load_falls_back_to_the_whole_btf():
    """A cut that passes every check but fails the load (a cutter's fault: none an attacker can
    plant, the entry being root's alone and tied to its name) never stops a recording. Root (the
    test) writes it where record keeps its cuts: an empty BTF, which leaves every relocation
    without a candidate."""
    need_bpf()
    home = cut_home()
    d = os.path.join(home, "spanperf", "btf")
    os.makedirs(d, 0o700)
    empty = struct.pack("<HBBIIIII", 0xeB9F, 1, 0, 24, 0, 0, 0, 1) + b"\0"
    path = os.path.join(d, expected_name())
    umask = os.umask(0o077)
    try:
        open(path, "wb").write(entry_bytes(empty))
    finally:
        os.umask(umask)
    out, err = record_forkspin(cache_env(home))
    assert "(cached): 0 types" in err, err[-3000:]
    assert "did not load against the cut of the kernel's BTF" in err, err[-3000:]
    assert "loaded again against the whole BTF" in err, err[-3000:]
    check_recording(out, "whole BTF after a cut that failed")
