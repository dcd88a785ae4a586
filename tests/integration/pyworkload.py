# SPDX-License-Identifier: GPL-2.0
"""A Python program of known call structure, for test_python.py; runs unchanged on CPython 3.8-3.13.

Usage: pyworkload.py SECONDS [READY_FILE] [--cpu] [--stop] [--fork] [--deep N]  (any order after SECONDS)

Each thread names itself (prctl PR_SET_NAME), so that a profile tells them apart:
  pyw-busy     (the main thread) <module> -> main -> level1 -> Service.level2 -> json.dumps
               -> [the C encoder] -> Service.hook (a callback from C) -> level3 -> gen (a generator)
               -> sorted [C] -> gen.<locals>.keyfn (a callback from C) -> spin: spins in bytecode
               for SECONDS with the GIL, the whole time under that one chain; with --cpu, for
               SECONDS of its own CPU time (its thread's clock), not of the wall's
  pyw-sleep    sleeper_outer -> nap_here -> time.sleep (off CPU, the GIL released)
  pyw-async    asyncio.run -> a task: worker -> sub -> blocking_in_task -> time.sleep
  pyw-deep     (--deep N) deep_start -> recurse x N -> deep_leaf -> time.sleep
  --fork:      a multiprocessing child (fork) that spins in child_work -> child_spin, named pyw-child,
               for 1 s of its own CPU time
  --map-region: a second in, code mapped at 0x600000000000, where a profiler's symbols for Python
               frames may lie (test_python: spanperf moves them)
  --starve:    its recorder (the parent: `spanperf record -- pyworkload.py ...`) starved of CPU
               from the start until main returns, as on a loaded host: at SCHED_IDLE on CPU 0,
               beside the busy thread; json, and its C encoder's library, imported just before
               main; the process then waits for the recorder to catch up before it exits

READY_FILE is created once every thread is in place, with the busy thread's native id.  With
--stop the process then stops itself (SIGSTOP), and the busy thread's SECONDS start when it is
continued (SIGCONT): a recorder can be put in place beside it first.
"""
import os
import sys


def recorder(policy, cpus):
    """Every thread of the recorder (this process's parent) to policy, on cpus."""
    rec = os.getppid()
    for tid in os.listdir("/proc/%d/task" % rec):
        try:
            os.sched_setaffinity(int(tid), cpus)
            os.sched_setscheduler(int(tid), policy, os.sched_param(0))
        except ProcessLookupError:
            pass


# First, before the imports that map libraries (json's _json above all): their tables wait for the recorder.
STARVE = "--starve" in sys.argv and __name__ == "__main__"
if STARVE:
    _rec_cpus = os.sched_getaffinity(os.getppid())
    os.sched_setaffinity(0, {0})
    recorder(os.SCHED_IDLE, {0})

import asyncio  # noqa: E402
import ctypes  # noqa: E402
import signal  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
# READY_FILE: the first argument after SECONDS that is neither an option nor --deep's N, wherever it is.
_rest = sys.argv[2:]
READY = next((a for i, a in enumerate(_rest) if not a.startswith("--") and (i == 0 or _rest[i - 1] != "--deep")),
             None)
DEEP = int(sys.argv[sys.argv.index("--deep") + 1]) if "--deep" in sys.argv else 0
sys.setrecursionlimit(max(1000, DEEP + 500))
_libc = ctypes.CDLL(None)
_parked = []
if not STARVE:
    import json
_deadline = [0.0]
# The busy thread's clock: the wall's, or with --cpu its own CPU time, which a loaded host gives it
# a few percent of (and its samples, which the tests count, with it).
_clock = [time.thread_time if "--cpu" in sys.argv else time.monotonic]


def set_name(name):
    _libc.prctl(15, ctypes.c_char_p(name.encode()), 0, 0, 0)  # PR_SET_NAME


def spin():
    # Bytecode only until the deadline: every sample of the busy thread is under this chain.
    n = 0
    end, clock = _deadline[0], _clock[0]
    while True:
        for _ in range(2000):
            n += 1
        if clock() >= end:
            return n


def gen(k):
    def keyfn(x):
        if x == 1:
            spin()
        return -x
    for i in range(k):
        yield sorted([3, 1, 2], key=keyfn)[0] + i


def level3():
    total = 0
    for v in gen(1):
        total += v
    return total


class Service:
    def hook(self, o):
        return level3()

    def level2(self):
        return json.dumps({"k": [object()]}, default=self.hook)


def level1():
    return Service().level2()


def main():
    return level1()


def nap_here():
    _parked.append("sleep")
    time.sleep(SECONDS + 30)


def sleeper_outer():
    set_name("pyw-sleep")
    nap_here()


def blocking_in_task():
    _parked.append("async")
    time.sleep(SECONDS + 30)


async def sub():
    blocking_in_task()


async def worker():
    await sub()


async def amain():
    await asyncio.get_event_loop().create_task(worker())


def asyncio_thread():
    set_name("pyw-async")
    asyncio.run(amain())


def deep_leaf():
    _parked.append("deep")
    time.sleep(SECONDS + 30)


def recurse(n):
    return recurse(n - 1) if n else deep_leaf()


def deep_start():
    set_name("pyw-deep")
    recurse(DEEP)


def map_region():
    # Executable memory where spanperf puts a process's Python frames first: the region must move.
    time.sleep(1.0)
    mmap = ctypes.CDLL(None, use_errno=True).mmap
    mmap.restype = ctypes.c_void_p
    mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    # PROT_READ|PROT_EXEC, MAP_PRIVATE|MAP_ANONYMOUS|MAP_FIXED_NOREPLACE
    mmap(0x600000000000, 1 << 20, 0x1 | 0x4, 0x02 | 0x20 | 0x100000, -1, 0)


def recorder_caught_up(limit=60.0):
    """Once the recorder's CPU time has stood still for 0.6 s (its 100 ms polls six times over): it has
    read what this process left in its rings, and named the frames from this process's memory."""
    def cpu():
        with open("/proc/%d/stat" % os.getppid()) as f:
            v = f.read().rsplit(")", 1)[1].split()
        return int(v[11]) + int(v[12])  # utime, stime
    end = time.monotonic() + limit
    last, still = cpu(), 0
    while still < 3 and time.monotonic() < end:
        time.sleep(0.2)
        now = cpu()
        still = still + 1 if now == last else 0
        last = now


def child_spin(end):
    n = 0
    while time.thread_time() < end:
        for _ in range(2000):
            n += 1
    return n


def child_work(cpu_seconds):
    # A budget of its own CPU time, not of the wall's: a loaded host gave the child a few percent of
    # a CPU, and its samples, which the test counts, with it.
    set_name("pyw-child")
    return child_spin(time.thread_time() + cpu_seconds)


if __name__ == "__main__":
    threads = [("sleep", sleeper_outer), ("async", asyncio_thread)]
    if DEEP:
        threads.append(("deep", deep_start))
    if "--map-region" in sys.argv:
        threading.Thread(target=map_region, daemon=True).start()
    for name, fn in threads:
        threading.Thread(target=fn, name=name, daemon=True).start()
    child = None
    if "--fork" in sys.argv:
        import multiprocessing
        ctx = multiprocessing.get_context("fork")
        child = ctx.Process(target=child_work, args=(1.0,))
        child.start()
    while len(_parked) < len(threads):
        time.sleep(0.01)
    set_name("pyw-busy")
    if READY:
        with open(READY + ".tmp", "w") as f:
            f.write("%d\n" % threading.get_native_id() if hasattr(threading, "get_native_id") else "0\n")
        os.rename(READY + ".tmp", READY)
    if "--stop" in sys.argv:
        os.kill(os.getpid(), signal.SIGSTOP)
    if STARVE:
        import json
    _deadline[0] = _clock[0]() + SECONDS
    main()
    if STARVE:
        # The recorder back while this process lives: it names frames from its memory.
        recorder(os.SCHED_OTHER, _rec_cpus)
        recorder_caught_up()
    if child:
        child.join()
    os._exit(0)
