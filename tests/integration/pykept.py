# SPDX-License-Identifier: GPL-2.0
"""test_kept.py's Python load: two ways down one shared chain of Python frames, by turns.

Usage: pykept.py CPU_SECONDS

way1 and way2 each call shared1 -> shared2 -> shared3, which calls leaf1 under way1 and leaf2
under way2 from one call site, and the leaf spins in bytecode for 1.5 ms of the thread's CPU
time; then the other way.  The shared frames lie at the same data-stack addresses in both ways,
and the native frames below them are the same eval-loop frames: a chain whose outer part came
from the other way's would show leaf1 under way2.  Runs for CPU_SECONDS of its own CPU time, so
that its sample count holds on a loaded host.
"""
import sys
import time


def spin(end):
    x = 0
    while time.thread_time() < end:
        for _ in range(200):
            x += 1
    return x


def leaf1(end):
    return spin(end) + 1


def leaf2(end):
    return spin(end) + 2


LEAVES = {1: leaf1, 2: leaf2}


def shared3(way, end):
    return LEAVES[way](end)


def shared2(way, end):
    return shared3(way, end)


def shared1(way, end):
    return shared2(way, end)


def way1(end):
    return shared1(1, end)


def way2(end):
    return shared1(2, end)


def main(cpu):
    stop = time.thread_time() + cpu
    turn = 0
    while time.thread_time() < stop:
        (way1 if turn % 2 == 0 else way2)(time.thread_time() + 0.0015)
        turn += 1


main(float(sys.argv[1]))
