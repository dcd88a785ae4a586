# SPDX-License-Identifier: GPL-2.0
# For the vmtest guest (tests/vm/guest-tests.sh): three levels of Python, spinning in the
# innermost for argv[1] seconds, with nothing imported but what CPython has built in.
import sys
import time


def spin(end):
    while time.monotonic() < end:
        pass


def level2(end):
    spin(end)


def level1(end):
    level2(end)


level1(time.monotonic() + float(sys.argv[1]))
