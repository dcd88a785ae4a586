#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Runs the integration tests: python3 tests/integration/run.py [NAME-FILTER...]"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
import test_record  # noqa: E402,F401
import test_stat  # noqa: E402,F401
import test_spans  # noqa: E402,F401
import test_report  # noqa: E402,F401
import test_hardening  # noqa: E402,F401
import test_session  # noqa: E402,F401
import test_otel  # noqa: E402,F401
import test_otel_out  # noqa: E402,F401
import test_offcpu  # noqa: E402,F401
import test_dwarf  # noqa: E402,F401
import test_ehframe  # noqa: E402,F401
import test_hosts  # noqa: E402,F401
import test_page  # noqa: E402,F401
import test_libspanperf  # noqa: E402,F401
import test_safety  # noqa: E402,F401
import test_debuginfo  # noqa: E402,F401
import test_rotate  # noqa: E402,F401
import test_serve  # noqa: E402,F401
import test_top  # noqa: E402,F401
import test_live  # noqa: E402,F401

if __name__ == "__main__":
    sys.exit(harness.main(sys.argv))
