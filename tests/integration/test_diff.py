# SPDX-License-Identifier: GPL-2.0
"""spanperf diff against perf diff on the same two files.

The baseline runs spin_0 for 300 ms and spin_2 for 200 ms; the new run
spin_0 for 300 ms and spin_1 for 400 ms, sampled at another rate: spin_1
grew (it is only in NEW), spin_2 vanished (only in the baseline), and both
must be shown with the figures and signs perf diff gives them."""
import os
import re

from harness import WORKLOAD, json_lines, need_bpf, need_perf, run, spanperf, test, tmpdir
from test_page import drive

_cache = {}


def files():
    if "base" not in _cache:
        need_bpf()
        d = tmpdir()
        base, new = os.path.join(d, "base.data"), os.path.join(d, "new.data")
        spanperf("record", "-g", "-F", "999", "-o", base, "--", WORKLOAD, "spin", "300,0,200", check=True)
        spanperf("record", "-g", "-F", "1999", "-o", new, "--", WORKLOAD, "spin", "300,400,0", check=True)
        _cache.update(base=base, new=new, dir=d)
    return _cache["base"], _cache["new"]


ROW = re.compile(r"^ {2}([ 0-9.%]{8}) {2}([ 0-9.%+-]{9}) {2}(.*)$")


def rows(text):
    """perf diff's rows: (keys text, baseline or None, delta or None), in order."""
    out = []
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        m = ROW.match(line)
        assert m, "not a perf diff row: %r" % line
        b, dl = m.group(1).strip(), m.group(2).strip()
        out.append((re.sub(r"\s+", " ", m.group(3).strip()), float(b[:-1]) if b else None,
                    float(dl[:-1]) if dl else None))
    return out


@test
def test_diff_table_as_perf_diff():
    base, new = files()
    need_perf()
    for sort in (None, "comm,dso,sym", "dso", "sym"):
        extra = ["--sort", sort] if sort else []
        p = run(["perf", "diff"] + extra + [base, new], check=True)
        ours = spanperf("diff", base, new, *extra, check=True)
        # The header as perf's, the column widths with it.
        assert ours.stdout.splitlines()[:5] == p.stdout.splitlines()[:5], (ours.stdout[:600], p.stdout[:600])
        mine, theirs = rows(ours.stdout), rows(p.stdout)
        # The same rows with the same figures; the order of equal deltas is perf's hash order, not a contract.
        assert sorted(mine, key=repr) == sorted(theirs, key=repr), (sort, ours.stdout, p.stdout)
        paired = [abs(d) for _, _, d in mine if d is not None]
        assert paired == sorted(paired, reverse=True), paired
        first_gone = next((i for i, r in enumerate(mine) if r[2] is None), len(mine))
        assert all(r[2] is None for r in mine[first_gone:]), "rows only in the baseline come last"
    # The function that grew, and the one that vanished, with perf's signs.
    by = {k: (b, d) for k, b, d in rows(spanperf("diff", base, new, check=True).stdout)}
    grew, gone = by["workload [.] spin_1"], by["workload [.] spin_2"]
    assert grew[0] is None and grew[1] > 40, grew
    assert gone[0] > 25 and gone[1] is None, gone
    # Different rates: compared on shares, and said so in one line.
    err = spanperf("diff", base, new, check=True).stderr
    assert "rates 999 Hz and 1999 Hz" in err and len(err.strip().splitlines()) == 1, err


@test
def test_diff_json_and_percent_limit():
    base, new = files()
    text = {k: (b, d) for k, b, d in rows(spanperf("diff", base, new, check=True).stdout)}
    js = json_lines(spanperf("diff", base, new, "--format", "json", check=True).stdout)
    assert len(js) == len(text), (len(js), len(text))
    for r in js:
        key = "%s [%s] %s" % (r["dso"], "k" if r["kernel"] else ".", r["sym"])
        b, d = text[key]
        assert (r["baseline"] is None) == (b is None), (r, b)
        if b is not None:
            assert abs(r["baseline"] - b) < 0.006, (r, b)
        if d is not None:
            assert abs(r["delta"] - d) < 0.006, (r, d)
        assert abs(r["delta"] - ((r["new"] or 0) - (r["baseline"] or 0))) < 1e-3, r
    spin = {r["sym"]: r for r in js if r["sym"].startswith("spin_")}
    assert spin["spin_1"]["baseline"] is None and spin["spin_1"]["delta"] > 40 and spin["spin_1"]["new_samples"] > 0
    assert spin["spin_2"]["new"] is None and spin["spin_2"]["delta"] < -25 and spin["spin_2"]["new_samples"] == 0
    # --percent-limit: the rows at or over 5% in either file, which are the three spinners.
    lim = rows(spanperf("diff", base, new, "--percent-limit", "5", check=True).stdout)
    assert sorted(k for k, _, _ in lim) == ["workload [.] spin_%d" % i for i in range(3)], lim
    bad = spanperf("diff", base, new, "--percent-limit", "x")
    assert bad.returncode == 1 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    one = spanperf("diff", base)
    assert one.returncode == 1 and "BASELINE and NEW" in one.stderr, one.stderr


@test
def test_diff_folded_counts():
    base, new = files()
    lines = spanperf("diff", base, new, "--folded", check=True).stdout.splitlines()
    tot = [0, 0]
    by_leaf = {}
    for ln in lines:
        stack, a, b = ln.rsplit(" ", 2)
        tot[0] += int(a)
        tot[1] += int(b)
        leaf = [f for f in stack.split(";") if f.startswith("spin_")]
        if leaf:
            c = by_leaf.setdefault(leaf[-1], [0, 0])
            c[0] += int(a)
            c[1] += int(b)
    # Each column is its file's own folded stacks, as report --folded gives them.
    for i, path in enumerate(files()):
        own = sum(int(l.rsplit(" ", 1)[1]) for l in spanperf("report", "-i", path, "--folded", check=True)
                  .stdout.splitlines())
        assert tot[i] == own, (i, tot, own)
    assert by_leaf["spin_1"][0] == 0 and by_leaf["spin_1"][1] > 0, by_leaf
    assert by_leaf["spin_2"][0] > 0 and by_leaf["spin_2"][1] == 0, by_leaf


@test
def test_diff_flamegraph_in_chromium():
    base, new = files()
    svg = os.path.join(tmpdir(), "diff.svg")
    spanperf("diff", base, new, "--flamegraph", svg, check=True)
    out = drive("svg", svg, "spin_1")
    assert re.match(r"Matched: [1-9]", out["matched"]), out["matched"]

    def frame(name):
        fs = [f for f in out["drawn"] if f["title"].startswith(name + " (")]
        return max(fs, key=lambda f: f["width"])

    def rgb(f):
        return [int(x) for x in re.findall(r"\d+", f["fill"])[:3]]

    grew, kept = frame("spin_1"), frame("spin_0")
    r, g, b = rgb(grew)
    # The grown frame in the growth colour, deep: it changed most.
    assert r == 255 and g == b and g < 100, grew
    # spin_0 ran as long, but its share fell as spin_1's came: blue.
    r, g, b = rgb(kept)
    assert b == 255 and r == g and r < 255, kept
    # Widths are NEW's: spin_1 (400 ms) wider than spin_0 (300 ms); spin_2 is not drawn.
    assert grew["width"] > kept["width"], (grew, kept)
    assert not [f for f in out["drawn"] if f["title"].startswith("spin_2 (") and f["width"] > 0.5], out["drawn"]
