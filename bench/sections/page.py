# SPDX-License-Identifier: GPL-2.0
"""report --html: the page's size and load time in headless Chromium (from navigation until it has
drawn), beside the real speedscope (npm) importing report --speedscope of the same recording, for
generated files of 10k, 100k and 1M samples with a tenth as many spans over 8 threads."""
import json
import os
import shutil
import subprocess

from harness import GEN_SPANS, ROOT, SPANPERF, TMP, log, rounds, timed

NODE_DIR = os.path.join(ROOT, "build", "browser-node")
CHROMIUM = "/usr/bin/chromium"


def drive(*args):
    """tests/integration/browser/drive.js in Debian's headless Chromium, as the page tests run it."""
    src = os.path.join(ROOT, "tests", "integration", "browser")
    os.makedirs(NODE_DIR, exist_ok=True)
    for f in ("package.json", "drive.js"):
        shutil.copyfile(os.path.join(src, f), os.path.join(NODE_DIR, f))
    if not all(os.path.isdir(os.path.join(NODE_DIR, "node_modules", m)) for m in ("playwright-core", "speedscope")):
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=NODE_DIR, check=True)
    p = subprocess.run(["node", os.path.join(NODE_DIR, "drive.js")] + list(args), capture_output=True, text=True,
                       timeout=600, env=dict(os.environ, CHROMIUM=CHROMIUM))
    out = json.loads(p.stdout.strip().split("\n")[-1])
    if out.get("exception") or out.get("errors"):
        raise RuntimeError("drive.js %s: %s" % (" ".join(args), out.get("exception") or out["errors"]))
    return out


def run(res):
    if not os.access(CHROMIUM, os.X_OK) or not shutil.which("npm"):
        log("page: chromium or npm is missing (tools/deps.sh browser); section skipped")
        return
    out = {}
    for n in (10000, 100000, 1000000):
        data, page, ss = (os.path.join(TMP, "page%d.%s" % (n, x)) for x in ("data", "html", "json"))
        subprocess.run([GEN_SPANS, data, str(n), str(n // 10), "8"], check=True)
        report_s, report_rss, _ = timed([SPANPERF, "report", "-i", data, "--html", page])
        subprocess.run([SPANPERF, "report", "-i", data, "--speedscope", ss], check=True)
        load, imp = [], []
        for r in range(min(rounds(), 3)):
            load.append(drive("load", page)["ready_ms"])
            imp.append(drive("speedscope-load", ss)["import_ms"])
            log("page %d round %d: page %d ms, speedscope %d ms" % (n, r, load[-1], imp[-1]))
        out[n] = {"spans": n // 10, "html_mb": os.path.getsize(page) / 1e6, "report_s": report_s,
                  "report_rss_kib": report_rss, "load_ms": min(load), "speedscope_mb": os.path.getsize(ss) / 1e6,
                  "speedscope_ms": min(imp), "ratio": min(load) / min(imp)}
    res["page"] = out


def from_json(v):
    return {int(k): x for k, x in v.items()}


def markdown(res):
    lines = ["## report --html: page size and load in headless Chromium (fastest of %d)" % min(res["rounds"], 3), "",
             "Generated files over 8 threads.  Load: from navigation until the page has drawn; speedscope: from "
             "navigation to the real one (npm) until it has imported `report --speedscope` of the same file.", "",
             "| samples | spans | page | report --html | load | speedscope file | speedscope load | ratio | target |",
             "|---|---|---|---|---|---|---|---|---|"]
    for n, x in sorted(res["page"].items()):
        lines.append("| %d | %d | %.1f MB | %.2f s | %.2f s | %.1f MB | %.2f s | %.2f | %s |" % (
            n, x["spans"], x["html_mb"], x["report_s"], x["load_ms"] / 1e3, x["speedscope_mb"],
            x["speedscope_ms"] / 1e3, x["ratio"], "< 50 MB, < 3 s" if n >= 1000000 else ""))
    return lines + [""]
