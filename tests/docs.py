#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""tests/docs.py: the manual is true to the program.  Run by `make unit`.

- Every page of docs/ (HACKING.md aside) converts with tools/md2man.py with
  no warning, and renders with `groff -man -t -ww -z` in silence.
- Every long and short option `spanperf CMD --help` prints (its Usage line
  and its option column) is an item of the OPTIONS of docs/spanperf-CMD.md,
  and every option that OPTIONS lists is in --help (-h and --help, which
  every command takes, may be listed without being printed).  Likewise
  spanperf.md against `spanperf --help`.
- Every command of `spanperf --help` has its page, spanperf.md's COMMANDS
  names it, and no page is left for a command that is gone.
- Every relative link of README.md and docs/ leads to a file.
- `spanperf help CMD` shows each command's page; an unknown CMD is one
  sentence and exit status 1.

Before any of that, it proves that the option check bites: record's page
with an option taken out, and with one added that record lacks, must fail.
"""
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
DOCS = os.path.join(ROOT, "docs")
SPANPERF = os.path.abspath(os.environ.get("SPANPERF_BIN", os.path.join(ROOT, "spanperf")))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import md2man  # noqa: E402

# Options every command takes whether or not its --help prints them.
ALWAYS = {"-h", "--help"}
OPT_RE = re.compile(r"(?<![\w-])(--?[A-Za-z0-9][\w-]*)")

failures = []


def fail(msg):
    failures.append(msg)


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def help_options(text):
    """The options a --help text prints: in its Usage line, and in its option column.

    Option lines begin with a few spaces and a dash; their description starts
    after two spaces or more.  Description lines go on indented much deeper,
    so a dash there ("--call-graph dwarf chains") is prose, not an option."""
    opts = set()
    usage = False
    for line in text.splitlines():
        # The Usage line, and the forms under it up to the first blank line.
        usage = line.startswith("Usage:") or (usage and line.strip() != "")
        if usage:
            opts |= set(OPT_RE.findall(line))
            continue
        m = re.match(r"^ {1,8}(-\S.*)$", line)
        if m:
            spec = re.split(r" {2,}", m.group(1))[0]
            opts |= set(OPT_RE.findall(spec))
    return opts


def section(text, name):
    """The lines of a page's '## NAME' section, up to the next '## '."""
    lines = text.split("\n")
    out, inside = [], False
    for ln in lines:
        if ln.startswith("## "):
            inside = ln[3:].strip() == name
            continue
        if inside:
            out.append(ln)
    return out


def items(lines):
    """The top-level list items of some lines, each joined into one string."""
    out = []
    for ln in lines:
        if ln.startswith("- "):
            out.append(ln[2:])
        elif out and ln.startswith("  ") and ln.strip():
            out[-1] += "\n" + ln.strip()
        elif not ln.strip() or ln.startswith("#"):
            continue
        elif out:
            out[-1] += "\n" + ln.strip()
    return out


def page_options(text, page):
    """The options a page's OPTIONS lists: the code spans of each item's tag."""
    opts = set()
    lines = section(text, "OPTIONS")
    if not lines:
        fail("%s: no OPTIONS section" % page)
    for it in items(lines):
        tag = md2man.tag_split(it)
        if not tag:
            fail("%s: an OPTIONS item that names no option (\"`-x`, `--long` ARG: what it does\"): %s"
                 % (page, it.split("\n")[0][:60]))
            continue
        for code in re.findall(r"`([^`]+)`", tag[0]):
            opts |= set(OPT_RE.findall(code))
    return opts


def compare(cmd, help_text, page_text, page):
    """The differences between a --help and a page, as sentences."""
    want = help_options(help_text)
    have = page_options(page_text, page)
    out = []
    for o in sorted(want - have):
        out.append("%s: '%s' is in 'spanperf %s--help' but not in the page's OPTIONS"
                   % (page, o, cmd + " " if cmd else ""))
    for o in sorted(have - want - ALWAYS):
        out.append("%s: '%s' is in the page's OPTIONS but 'spanperf %s--help' does not print it"
                   % (page, o, cmd + " " if cmd else ""))
    return out


def commands(top_help):
    out, inside = [], False
    for line in top_help.splitlines():
        if line.startswith("Commands:"):
            inside = True
            continue
        if inside:
            m = re.match(r"^  ([a-z][\w-]*) +\S", line)
            if not m:
                break
            out.append(m.group(1))
    return out


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def self_test(record_help):
    """The option check must fail on a page that lacks an option, or lists one --help lacks."""
    text = read(os.path.join(DOCS, "spanperf-record.md"))
    item = re.search(r"^- `--span-min-us`.*\n(  .*\n)*", text, re.M)
    if not item:
        return fail("self-test: docs/spanperf-record.md has no --span-min-us item to take out")
    errs = compare("record", record_help, text[:item.start()] + text[item.end():], "spanperf-record.md")
    if not any("'--span-min-us' is in 'spanperf record --help' but not" in e for e in errs):
        fail("self-test: a page without --span-min-us passed the check")
    errs = compare("record", record_help, text.replace(
        "## OPTIONS\n", "## OPTIONS\n\n- `--frobnicate`: no such option.\n", 1), "spanperf-record.md")
    if not any("'--frobnicate' is in the page's OPTIONS but" in e for e in errs):
        fail("self-test: a page with an option record lacks passed the check")


def check_pages(pages):
    groff = shutil.which("groff")
    n = 0
    for page in pages:
        path = os.path.join(DOCS, page)
        md2man.warnings.clear()
        roff = md2man.convert(path, "test")
        for w in md2man.warnings:
            fail(w)
        if not groff or not roff:
            continue
        # One long page, as a terminal's man shows it: groff 1.22's nroff mode breaks pages at 66
        # lines, and a table's text block across such a break warns wherever earlier text happens
        # to end (a longer line above moved one), which says nothing of the page itself.
        r = run([groff, "-man", "-t", "-ww", "-z", "-Tutf8"], input=".pl 100000v\n" + roff)
        if r.returncode or r.stderr.strip():
            fail("%s: groff -man -ww: %s" % (page, r.stderr.strip().splitlines()[:3] or r.returncode))
        n += 1
    if not groff:
        print("  SKIP  docs: groff is not installed (tools/deps.sh test installs groff-base): "
              "pages converted, not rendered")
    return n


def check_links(files):
    n = 0
    for path in files:
        text = read(path)
        text = re.sub(r"```.*?```", "", text, flags=re.S)       # code is not links
        for m in re.finditer(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(([^)\s]+)\)", text):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue
            n += 1
            full = os.path.normpath(os.path.join(os.path.dirname(path), target.split("#")[0]))
            if not os.path.exists(full):
                fail("%s: a link to %s, which does not exist" % (os.path.relpath(path, ROOT), target))
    return n


def check_help_cmd(cmds):
    for c in cmds:
        r = run([SPANPERF, "help", c])
        head = next((ln for ln in r.stdout.splitlines() if ln.strip()), "")
        if r.returncode or ("SPANPERF-%s(1)" % c.upper()) not in head and head != "# spanperf-%s(1)" % c:
            fail("'spanperf help %s' did not show its page (exit %d): %s" % (c, r.returncode, head[:60]))
    r = run([SPANPERF, "help", "frobnicate"])
    if r.returncode != 1 or len(r.stderr.strip().splitlines()) != 1 or r.stdout:
        fail("'spanperf help frobnicate' should be one sentence and exit 1, got %d: %r"
             % (r.returncode, r.stderr))


def main():
    if not os.access(SPANPERF, os.X_OK):
        print("  FAIL  docs: %s is not built" % SPANPERF)
        return 1
    top = run([SPANPERF, "--help"]).stdout
    cmds = commands(top)
    if not cmds:
        fail("'spanperf --help' lists no commands")
    helps = {c: run([SPANPERF, c, "--help"]).stdout for c in cmds}
    if "record" in helps:
        self_test(helps["record"])

    pages = sorted(p for p in os.listdir(DOCS) if p.endswith(".md") and p != "HACKING.md")
    rendered = check_pages(pages)

    nopt = 0
    for c in cmds:
        page = "spanperf-%s.md" % c
        if page not in pages:
            fail("'%s' is a command of 'spanperf --help' but docs/%s does not exist" % (c, page))
            continue
        for e in compare(c, helps[c], read(os.path.join(DOCS, page)), page):
            fail(e)
        nopt += len(help_options(helps[c]))
    for p in pages:
        m = re.match(r"^spanperf-(.*)\.md$", p)
        if m and m.group(1) not in cmds:
            fail("docs/%s is the page of no command of 'spanperf --help'" % p)
    top_page = read(os.path.join(DOCS, "spanperf.md"))
    for e in compare("", top, top_page, "spanperf.md"):
        fail(e)
    listed = set()
    for it in items(section(top_page, "COMMANDS")):
        tag = md2man.tag_split(it)
        if tag:
            listed |= set(re.findall(r"`([\w-]+)`", tag[0]))
    for c in cmds:
        if c not in listed:
            fail("spanperf.md: COMMANDS does not name '%s'" % c)

    links = check_links([os.path.join(ROOT, "README.md")] + [os.path.join(DOCS, p) for p in os.listdir(DOCS)
                                                            if p.endswith(".md")])
    check_help_cmd(cmds)

    if failures:
        print("  FAIL  docs")
        for f in failures:
            print("        " + f)
        return 1
    print("  PASS  docs (%d pages rendered, %d options of %d commands, %d links; the check bites)"
          % (rendered, nopt, len(cmds), links))
    return 0


if __name__ == "__main__":
    sys.exit(main())
