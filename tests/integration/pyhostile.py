# SPDX-License-Identifier: GPL-2.0
"""A Python program (3.8-3.13) that lies about its own frames, for test_python.py.

Usage: pyhostile.py READY_FILE

Four threads sleep 20 ms at a time, for ever, each after corrupting one thing with ctypes:
  cycle:    its own frame's back link points at itself
  badcode:  badcode_inner made its caller's (badcode's) code pointer garbage
  longstr:  the function's name claims 2**40 characters
  honest:   honest_outer -> honest_inner, nothing corrupted (the chains to compare with)
None of the corrupted frames ever returns or runs an instruction that reads what was corrupted.
"""
import ctypes
import sys
import threading
import time

V = sys.version_info[:2]
parked = []


def frame_addrs(f):
    """(the frame record a profiler reads, offset of its back link, offset of its code pointer)."""
    if V < (3, 11):
        return id(f), 24, 32                                   # PyFrameObject: f_back, f_code
    iframe = ctypes.c_void_p.from_address(id(f) + 24).value   # PyFrameObject.f_frame
    return (iframe, 48, 32) if V == (3, 11) else (iframe, 8, 0)


def nap():
    while True:
        time.sleep(0.02)


def cycle():
    a, back, _ = frame_addrs(sys._getframe())
    ctypes.c_void_p.from_address(a + back).value = a
    parked.append(1)
    while True:
        time.sleep(0.02)


def badcode_inner():
    a, _, code = frame_addrs(sys._getframe(1))
    ctypes.c_void_p.from_address(a + code).value = 0x4141414141410
    parked.append(1)
    while True:
        time.sleep(0.02)


def badcode():
    badcode_inner()


def make_longstr():
    def inner():
        parked.append(1)
        while True:
            time.sleep(0.02)
    inner.__code__ = inner.__code__.replace(co_name="longstr_xxx")
    ctypes.c_ssize_t.from_address(id(inner.__code__.co_name) + 16).value = 1 << 40
    return inner


def honest_inner():
    parked.append(1)
    nap()


def honest_outer():
    honest_inner()


for fn in (cycle, badcode, make_longstr(), honest_outer):
    threading.Thread(target=fn, daemon=True).start()
while len(parked) < 4:
    time.sleep(0.01)
time.sleep(0.2)
open(sys.argv[1], "w").close()
while True:
    time.sleep(1)
