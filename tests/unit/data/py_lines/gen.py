#!/usr/bin/env python3
"""Writes the line-table fixtures of tests/unit/test_py_lines.c: code objects of a CPython's own
standard library, each with the line its interpreter's PyCode_Addr2Line gives every instruction.

Usage: gen.py OUT.txt PYTHON [--all]
Each line of OUT.txt: FIRSTLINENO TABLE_HEX LINES, LINES being the line of every index from -1 on,
run-length coded as VALUE*COUNT items joined by ',' (VALUE n: no line).  Without --all a fixed
choice is written: the code of a few modules, and the code objects whose tables are unusual (no
line, big jumps, the longest), so that the fixture stays small; --all writes every code object of
the library (the full check of the report, not checked in).
"""
import subprocess
import sys

DUMPER = r'''
import ctypes, os, sys, sysconfig, types
f = ctypes.pythonapi.PyCode_Addr2Line
f.argtypes = [ctypes.py_object, ctypes.c_int]
f.restype = ctypes.c_int
root = sysconfig.get_paths()["stdlib"]
want_all = sys.argv[1] == "all"
PICK = ("json/encoder.py", "textwrap.py", "heapq.py")
def walk(co):
    yield co
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            yield from walk(c)
def rle(v):
    out, prev, n = [], None, 0
    for x in v:
        x = "n" if x == -1 else str(x)
        if x == prev:
            n += 1
            continue
        if prev is not None:
            out.append("%s*%d" % (prev, n))
        prev, n = x, 1
    out.append("%s*%d" % (prev, n))
    return ",".join(out)
rows, special = [], []
for dp, dn, fn in os.walk(root):
    dn[:] = sorted(d for d in dn if d not in ("test", "site-packages", "idlelib", "lib2to3", "__pycache__"))
    for name in sorted(fn):
        if not name.endswith(".py"):
            continue
        path = os.path.join(dp, name)
        rel = os.path.relpath(path, root)
        try:
            top = compile(open(path, "rb").read(), path, "exec")
        except Exception:
            continue
        for co in walk(top):
            units = len(co.co_code) // 2
            table = co.co_linetable if sys.version_info >= (3, 10) else co.co_lnotab
            lines = [f(co, 2 * i) for i in range(-1, units)]
            row = "%d %s %s" % (co.co_firstlineno, table.hex() or "-", rle(lines))
            if want_all or rel in PICK:
                rows.append(row)
                continue
            jump = max((abs(a - b) for a, b in zip(lines, lines[1:]) if a >= 0 and b >= 0), default=0)
            special.append((-1 in lines[1:], jump, len(table), row))
if not want_all:
    small = [s for s in special if len(s[3]) < 4000]
    nolines = [s for s in small if s[0]][:20]
    jumps = sorted(small, key=lambda s: -s[1])[:20]
    longest = sorted((s for s in special if len(s[3]) < 30000), key=lambda s: -s[2])[:1]
    seen = set(rows)
    for s in nolines + jumps + longest:
        if s[3] not in seen:
            seen.add(s[3])
            rows.append(s[3])
sys.stdout.write("\n".join(rows) + "\n")
'''

out, py = sys.argv[1], sys.argv[2]
text = subprocess.check_output([py, "-c", DUMPER, "all" if "--all" in sys.argv else "pick"], text=True)
open(out, "w").write(text)
print("%s: %d code objects" % (out, text.count("\n")))
