# SPDX-License-Identifier: GPL-2.0
"""What spanperf writes, against what others control (issue 38): a comm that is not UTF-8 in the
flame graph, span ids in annotate's input that are no ids, a FIFO another user planted where an
output goes, and a full disk under outputs and rotation."""
import json
import os
import re
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET

from harness import SPANPERF, Skip, need_bpf, need_root, run, spanperf, test, tmpdir

PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else shutil.which("python3")
NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]

# A comm of bytes that are not UTF-8: stray bytes, an overlong '/', a UTF-16 surrogate, and U+FFFE
# (UTF-8, but no XML character).  prctl keeps 15 bytes.
BAD_COMM = b"\xff\xfe\xc0\xafhot\xed\xa0\x80\xef\xbf\xbe"
SPIN_AS = ("import ctypes, sys, time\n"
           "ctypes.CDLL(None).prctl(15, sys.argv[1].encode('latin-1'), 0, 0, 0)\n"
           "t = time.process_time() + 0.6\n"
           "while time.process_time() < t: pass\n")


@test
def test_flamegraph_of_a_comm_not_utf8():
    """A comm is any bytes: xml_text passed those >= 0x80 as they were, and a browser showed a
    parse error instead of the graph.  Invalid UTF-8 is replaced (U+FFFD), in the SVG as in JSON."""
    need_bpf()
    d = tmpdir()
    data, svg = os.path.join(d, "c.data"), os.path.join(d, "c.svg")
    spanperf("record", "-g", "-o", data, "--", PY, "-c", SPIN_AS, BAD_COMM.decode("latin-1"), check=True)
    spanperf("report", "-i", data, "--flamegraph", svg, check=True)
    raw = open(svg, "rb").read()
    raw.decode("utf-8")  # strict: no stray byte, no surrogate, no overlong
    if shutil.which("xmllint"):
        p = run(["xmllint", "--noout", svg])
        assert p.returncode == 0, "xmllint: %s" % p.stderr[-600:]
    titles = [t.text for t in ET.parse(svg).iter("{http://www.w3.org/2000/svg}title")]
    assert any(t.startswith("\ufffd") and "hot" in t for t in titles), [t for t in titles if "hot" in t]
    # What a user sees: Chromium draws the graph (drive.js fails on a parse error) and finds the frame.
    try:
        from test_page import drive
        out = drive("svg", svg, "hot")
        assert out["frames"] > 0 and out["matched"].startswith("Matched: "), out
    except Skip:
        pass
    # JSON lines of the same comm: strict UTF-8 too.
    p = subprocess.run([SPANPERF, "report", "-i", data, "--sort", "comm", "--format", "json"], capture_output=True)
    assert p.returncode == 0, p.stderr
    rows = [json.loads(l) for l in p.stdout.decode("utf-8").splitlines() if l]
    assert any("hot" in r["comm"] for r in rows), rows
