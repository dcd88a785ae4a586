# SPDX-License-Identifier: GPL-2.0
# make bench's python section: 20 Python frames on CPU (<module> and rec 19 deep), spinning in
# bytecode for argv[1] seconds.
import sys
import time


def rec(n, end):
    if n:
        return rec(n - 1, end)
    x = 0
    while time.monotonic() < end:
        for _ in range(1000):
            x += 1
    return x


rec(18, time.monotonic() + float(sys.argv[1]))
