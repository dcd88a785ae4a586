#!/usr/bin/env python3
"""Writes the seeds of fuzz_py_code and fuzz_py_lines from real code objects: run it under each
CPython 3.8-3.13 (it reads its own memory with ctypes).

Usage: PYTHON py_seeds.py TESTS_FUZZ_CORPUS_DIR
"""
import ctypes
import json
import os
import struct
import sys
import types

V = sys.version_info[:2]
out = sys.argv[1]
tag = "%d.%d" % V


def mem(obj):
    return ctypes.string_at(id(obj), sys.getsizeof(obj))


ct = id(types.CodeType)
members = ctypes.c_void_p.from_address(ct + 240).value
off = {}
for i in range(64):
    name = ctypes.c_char_p.from_address(members + 40 * i).value
    if not name:
        break
    off[name.decode()] = ctypes.c_ssize_t.from_address(members + 40 * i + 16).value
table_member = "co_lnotab" if V < (3, 10) else "co_linetable"
fmt = 0 if V < (3, 10) else 1 if V == (3, 10) else 2


def sample(x):
    y = [i * 2 for i in range(x)]
    return json.dumps({"y": y,
                       "z": x})


for n, co in enumerate((sample.__code__, json.dumps.__code__, json.JSONEncoder.iterencode.__code__)):
    table = co.co_linetable if V >= (3, 10) else co.co_lnotab
    head = ctypes.string_at(id(co), ctypes.c_ssize_t.from_address(ct + 32).value)
    segs = [(id(co), head), (id(co.co_name), mem(co.co_name)), (id(co.co_filename), mem(co.co_filename)),
            (id(table), mem(table))]
    if V >= (3, 11):
        segs.append((id(co.co_qualname), mem(co.co_qualname)))
    else:
        segs.append((id(co.co_code), mem(co.co_code)))
    b = struct.pack("<BQQ", V[1] - 8, ct, id(co))
    b += struct.pack("<7H", off["co_name"], off.get("co_qualname", 0), off["co_filename"], off["co_firstlineno"],
                     off[table_member], off.get("co_code", 0), off["co_consts"])
    b += struct.pack("<QQQ", 0, id(types.FunctionType), id(dict))
    for addr, data in segs:
        b += struct.pack("<QI", addr, len(data)) + data
    os.makedirs(os.path.join(out, "fuzz_py_code"), exist_ok=True)
    with open(os.path.join(out, "fuzz_py_code", "%s-%d" % (tag, n)), "wb") as f:
        f.write(b)
    os.makedirs(os.path.join(out, "fuzz_py_lines"), exist_ok=True)
    with open(os.path.join(out, "fuzz_py_lines", "%s-%d" % (tag, n)), "wb") as f:
        f.write(struct.pack("<BiH", fmt, co.co_firstlineno, len(co.co_code) // 2) + table)
