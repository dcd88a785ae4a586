#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Runs the integration tests: python3 tests/integration/run.py [--list] [NAME-FILTER...]

Every test_*.py beside this file is a module of tests, imported in the order
of their names, so that a new module runs without being listed anywhere.  A
NAME-FILTER keeps the tests whose name (module.function, without the test_
of the module) contains it; --list prints those names and runs nothing.
"""
import glob
import importlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402

for path in sorted(glob.glob(os.path.join(HERE, "test_*.py"))):
    importlib.import_module(os.path.splitext(os.path.basename(path))[0])


def names(only):
    for fn in harness._tests:
        name = fn.__module__.replace("test_", "") + "." + fn.__name__
        if not only or any(o in name for o in only):
            yield name


if __name__ == "__main__":
    if "--list" in sys.argv[1:]:
        only = [a for a in sys.argv[1:] if not a.startswith("-")]
        listed = list(names(only))
        print("\n".join(listed))
        print("%d tests" % len(listed), file=sys.stderr)
        sys.exit(0)
    sys.exit(harness.main(sys.argv))
