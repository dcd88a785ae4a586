# SPDX-License-Identifier: GPL-2.0
"""--call-graph ehframe's tables as the number of distinct files grows: build time, the
recorder's own memory and the kernel's map memory, for the host alone and with 64, 256 and
1024 more files mapped.  Each added file is a copy of one library of 800 functions built
without frame pointers, with a build id of its own, so that each is parsed and gets its own
rows (copies with one build id would share a table, which is not what this measures).  No
peer builds such tables here, so the ratio is against the same run's first step: the build
time per file added between two counts over that between the first two, which stays near 1
while the build is linear in the files."""
import json
import os
import re
import subprocess
import time

from harness import SPANPERF, TMP, kill, log, median, rounds, spawn

COUNTS = (0, 64, 256, 1024)
FUNCS = 800


def library():
    """The base library: FUNCS functions that call each other, -O2 without frame pointers."""
    src = os.path.join(TMP, "ehlib.c")
    with open(src, "w") as f:
        f.write("volatile int sink;\n")
        for i in range(FUNCS):
            callee = "f%d(x + %d)" % (i - 1, i) if i else "x"
            f.write("__attribute__((noinline)) int f%d(int x) { int a[%d]; for (int j = 0; j < %d; j++) "
                    "a[j] = x * j; sink = a[x & %d]; return %s + a[1]; }\n" % (i, 4 + i % 13, 4 + i % 13,
                                                                                3, callee))
    so = os.path.join(TMP, "ehlib.so")
    subprocess.run(["cc", "-O2", "-fPIC", "-shared", "-fomit-frame-pointer", "-Wl,--build-id=sha1",
                    "-o", so, src], check=True)
    return so


def build_id_offset(data):
    """The offset of the GNU build-id note's 20 bytes in the ELF image."""
    i = data.find(b"GNU\0")
    while i >= 0:
        # n_namesz 4, n_descsz 20, n_type 3 (NT_GNU_BUILD_ID) precede the name.
        if data[i - 12:i] == (4).to_bytes(4, "little") + (20).to_bytes(4, "little") + (3).to_bytes(4, "little"):
            return i + 4
        i = data.find(b"GNU\0", i + 1)
    raise RuntimeError("no build id in the bench library")


def copies(so, n):
    data = bytearray(open(so, "rb").read())
    off = build_id_offset(data)
    d = os.path.join(TMP, "ehlibs")
    os.makedirs(d, exist_ok=True)
    paths = []
    for i in range(n):
        p = os.path.join(d, "lib%d.so" % i)
        if not os.path.exists(p):
            data[off:off + 20] = b"spanperf-bench-%05d" % i
            with open(p, "wb") as f:
                f.write(data)
        paths.append(p)
    return paths


HOLDER = r"""
import ctypes, sys
libs = [ctypes.CDLL(p) for p in sys.argv[1:]]
print("ready", flush=True)
sys.stdin.read()
"""


def memlock():
    """Bytes the kernel charges for spanperf's eh_* maps, from bpftool."""
    out = subprocess.run(["bpftool", "map", "show", "--json"], capture_output=True, text=True).stdout
    return sum(m.get("bytes_memlock", 0) for m in json.loads(out or "[]") if m.get("name", "").startswith("eh_"))


def rss_anon(pid):
    """The recorder's own memory in KiB: its anonymous pages.  The maps it mmaps (the rows, the
    ring) count in its RSS too, but they are the kernel's memory, counted as such."""
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def one(paths):
    """(files, rows, build ms, recorder's peak anonymous KiB, kernel bytes, files too large) of a
    2 s recording."""
    holder = None
    if paths:
        holder = spawn(["python3", "-c", HOLDER] + paths, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        holder.stdout.readline()
    err = os.path.join(TMP, "eht.err")
    p = spawn([SPANPERF, "record", "-v", "-a", "--call-graph", "ehframe", "-F", "99", "-d", "2",
               "-o", os.path.join(TMP, "eht.data")], stdout=subprocess.DEVNULL, stderr=open(err, "w"))
    kernel = anon = 0
    while p.poll() is None:
        anon = max(anon, rss_anon(p.pid))
        kernel = max(kernel, memlock())
        time.sleep(0.1)
    if holder:
        kill(holder)
    text = open(err).read()
    m = re.search(r"ehframe tables: (\d+) files, (\d+) rows \(([\d.]+) MB\).*built in (\d+) ms", text)
    if not m:
        log("ehtables: no table line in record -v:", text[-400:])
        return None
    big = re.search(r"unwind tables full: (\d+) files too large", text)
    return int(m.group(1)), int(m.group(2)), int(m.group(4)), anon, kernel, int(big.group(1)) if big else 0


def run(res):
    so = library()
    rows = {}
    for r in range(rounds()):
        for n in COUNTS:
            got = one(copies(so, n))
            log("ehtables round %d, +%d files: %s" % (r, n, got))
            if got:
                rows.setdefault(n, []).append(got)
    out = {}
    for n, runs in rows.items():
        out[n] = {"files": median([x[0] for x in runs]), "rows": median([x[1] for x in runs]),
                  "build_ms": median([x[2] for x in runs]), "anon_kib": median([x[3] for x in runs]),
                  "kernel_bytes": median([x[4] for x in runs]), "too_large": max(x[5] for x in runs)}
    res["ehtables"] = out


def from_json(v):
    return {int(k): x for k, x in v.items()}


def markdown(res):
    v = res["ehtables"]
    lines = ["## ehframe tables as distinct files grow (the host, plus copies of an 800-function library "
             "with build ids of their own)", "",
             "| added files | files | rows | build | ms per file added since the row above | that / the first "
             "row's | recorder's own memory | kernel (eh_* maps) | target |", "|---|---|---|---|---|---|---|---|---|"]
    prev = base = None
    for n in sorted(v):
        x = v[n]
        per = (x["build_ms"] - prev["build_ms"]) / max(1, x["files"] - prev["files"]) if prev else None
        base = base or per
        lines.append("| %d | %d%s | %d | %d ms | %s | %s | %.1f MiB | %.1f MiB | < 1 s, < 64 MiB |" % (
            n, x["files"], " (%d too large)" % x["too_large"] if x.get("too_large") else "", x["rows"],
            x["build_ms"], "%.2f" % per if per is not None else "(the host)",
            "%.2f" % (per / base) if per is not None and base else "", x.get("anon_kib", 0) / 1024,
            x["kernel_bytes"] / 2**20))
        prev = x
    lines += ["", "The recorder's own memory is its anonymous pages (RssAnon, peak); the maps are the kernel's "
              "memory, counted there, and mapped into the recorder only around each copy into them, so its "
              "RSS no longer counts them.  The kernel's part is the maps' "
              "reservation, sized from user space before load (the page index, the files, every "
              "process's mappings, and a sample ring of a second at 512 bytes a sample per CPU), and the rows' "
              "chunks of 2M rows (16 MiB) made as they fill, up to three: past those a file gets no table, is "
              "counted too large, and unwinds by frame pointer.", ""]
    return lines
