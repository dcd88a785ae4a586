# SPDX-License-Identifier: GPL-2.0
"""A Python parent forks a multiprocessing child while its recorder is starved of CPU, for
test_python.py: the recorder (this process's parent, `spanperf record -- pyforkstarve.py`) is
put on CPU 0 at SCHED_IDLE beside this process and its child, so it reads no sideband while the
child runs, as on a loaded host.  The child, named pyw-child, spins in child_work -> child_spin
for 1 s of its own CPU time; the recorder is given its CPUs and policy back once it is done.

Usage: pyforkstarve.py   (half a second first, for the recorder to follow this process)
"""
import multiprocessing
import os
import time

# The child's work, as pyworkload.py's --fork child does it (its names are the test's truth).
from pyworkload import child_work, recorder


if __name__ == "__main__":
    cpus = os.sched_getaffinity(os.getppid())
    os.sched_setaffinity(0, {0})
    time.sleep(0.5)
    recorder(os.SCHED_IDLE, {0})
    try:
        child = multiprocessing.get_context("fork").Process(target=child_work, args=(1.0,))
        child.start()
        child.join()
    finally:
        recorder(os.SCHED_OTHER, cpus)
