#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""tools/md2man.py [--version V] [-o OUT] PAGE.md: a page of docs/ as a man page.

The pages are read on GitHub as Markdown and in a terminal as man pages, so
they keep to the subset this converts, and anything outside it is a warning
(exit status 1), never silently dropped:

  # NAME(SECTION)          the title (.TH); the page's first line
  ## HEADING, ### Heading  .SH and .SS
  paragraphs               .PP, each source line kept as a line
  - item, * item, 1. item  bullets and numbers (.IP), nested by indentation;
                           an item "`-x`, `--long` ARG: text" is a tagged
                           paragraph (.TP), as options are in man pages
  ```fenced``` or 4-space  code blocks (.nf), text as is
  | a | b |                tables, by tbl, the widest columns wrapped to fit
                           78 columns; one that cannot fit even so is a tagged
                           paragraph per row with "header: value" lines
  `code` **bold** *italic* [text](target) ![alt](image) \\escapes
  <!-- comment -->         dropped (the bench markers)

Roff is escaped on the way: backslashes, a line's leading '.' or "'",
dashes of options and of code as \\-, and every character beyond ASCII as
\\[uXXXX], so the page renders the same on groff and mandoc.  A link to
another page of docs/ names its man page, as SEE ALSO does.
"""
import os
import re
import sys

LINE_WIDTH = 70          # what a table may take at the text's indent (78 less man's 7n, less a margin)
COL_GAP = 3              # tbl's default gap between columns

warnings = []
page_path = ""


def warn(lineno, msg):
    warnings.append("%s:%d: warning: %s" % (page_path, lineno, msg))


# ---- inline text ----

# A pipe escaped in a table's row is a pipe, in code spans too (as GitHub shows it).
PIPE = "\x00"


def esc_char(c):
    if c == PIPE:
        return "|"
    if c == "\\":
        return "\\e"
    if ord(c) > 127:
        return "\\[u%04X]" % ord(c)
    return c


def esc_code(s):
    """Literal text: every dash is a minus, so that what is copied is what runs."""
    return "".join("\\-" if c == "-" else esc_char(c) for c in s)


OPTION_RE = re.compile(r"(?<![\w-])--?[A-Za-z0-9][\w-]*")


def esc_text(s):
    """Running text: dashes are hyphens, except in an option's spelling."""
    out, last = [], 0
    for m in OPTION_RE.finditer(s):
        out.append("".join(esc_char(c) for c in s[last:m.start()]))
        out.append(esc_code(m.group(0)))
        last = m.end()
    out.append("".join(esc_char(c) for c in s[last:]))
    return "".join(out)


def link_text(text, target, lineno):
    """A link: its text, and where it leads in a terminal (a man page, or the URL)."""
    if re.match(r"^[a-z]+://", target):
        return inline(text, lineno) + ("" if text == target else " (" + esc_code(target) + ")")
    path = target.split("#", 1)[0]
    if not path:
        return inline(text, lineno)
    if path.endswith(".md"):
        full = os.path.normpath(os.path.join(os.path.dirname(page_path), path))
        name = page_name(full)
        if name is None:
            if not os.path.exists(full):
                warn(lineno, "link to a missing page: %s" % target)
            return inline(text, lineno)
        title, sec = name
        ref = "\\fB%s\\fR(%s)" % (esc_code(title), sec)
        if re.sub(r"[`*]", "", text) == "%s(%s)" % (title, sec):
            return ref
        return inline(text, lineno) + " (" + ref + ")"
    return inline(text, lineno)


def page_name(path):
    """(name, section) from a page's title line, or None if it has none."""
    try:
        with open(path) as f:
            m = re.match(r"^# ([\w.-]+)\((\d)\)\s*$", f.readline())
    except OSError:
        return None
    return (m.group(1), m.group(2)) if m else None


def inline(s, lineno):
    """Markdown inline spans to roff; newlines stay where they were (line breaks of the source)."""
    out = []
    text = []            # plain text not yet escaped: escaped a run at a time, so options are seen whole
    i, n = 0, len(s)
    font = []            # open emphasis: the roff font to go back to

    def emit(roff):
        out.append(esc_text("".join(text)))
        text.clear()
        out.append(roff)

    while i < n:
        c = s[i]
        if c == "\\" and i + 1 < n and s[i + 1] in "\\`*_{}[]()#+-.!|<>":
            emit(esc_char(s[i + 1]))
            i += 2
            continue
        if c == "`":
            j = i
            while j < n and s[j] == "`":
                j += 1
            ticks = s[i:j]
            end = s.find(ticks, j)
            if end < 0:
                warn(lineno, "a code span that does not end")
                text.append(ticks)
                i = j
                continue
            code = s[j:end].replace("\n", " ")
            if len(ticks) > 1:
                code = code.strip()
            emit("\\fB" + esc_code(code) + "\\fP")
            i = end + len(ticks)
            continue
        if c == "!" and s.startswith("![", i):
            m = re.match(r"!\[([^\]]*)\]\(([^)\s]+)\)", s[i:])
            if m:
                emit("[figure: " + esc_text(m.group(1)) + "]")
                i += m.end()
                continue
        if c == "[":
            m = re.match(r"\[((?:[^\[\]]|\[[^\[\]]*\])+)\]\(([^)\s]+)\)", s[i:])
            if m:
                emit(link_text(m.group(1), m.group(2), lineno))
                i += m.end()
                continue
        if c == "<":
            m = re.match(r"<([a-z]+://[^>\s]+)>", s[i:])
            if m:
                emit(esc_code(m.group(1)))
                i += m.end()
                continue
            if re.match(r"</?[A-Za-z][^>]*>", s[i:]):
                warn(lineno, "HTML in text is not converted: %s" % s[i:i + 20])
        if c == "*":
            strong = s.startswith("**", i)
            mark = "**" if strong else "*"
            roff = "B" if strong else "I"
            k = i + len(mark)
            if font and font[-1][0] == mark and i > 0 and not s[i - 1].isspace():
                font.pop()
                emit("\\f" + (font[-1][1] if font else "R"))
                i = k
                continue
            if k < n and not s[k].isspace() and s.find(mark, k + 1) > 0:
                font.append((mark, roff))
                emit("\\f" + roff)
                i = k
                continue
        text.append(c)
        i += 1
    emit("")
    if font:
        warn(lineno, "emphasis that does not end")
        out.append("\\fR")
    return "".join(out)


def text_lines(s, lineno):
    """Inline text as roff source lines: no leading blank, no leading control character."""
    lines = []
    for ln in inline(s, lineno).split("\n"):
        ln = ln.strip()
        if not ln:
            continue
        if ln[0] in ".'":
            ln = "\\&" + ln
        lines.append(ln)
    return lines


def plain(s):
    """A cell's text as it shows, for widths."""
    s = re.sub(r"\\(.)", r"\1", s)
    s = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", s)
    return s.replace("`", "").replace("**", "").replace("*", "").replace(PIPE, "|")


# ---- blocks ----

LIST_RE = re.compile(r"^( *)([-*]|\d+\.) +(.*)$")


def indent_of(line):
    return len(line) - len(line.lstrip(" "))


def parse_blocks(lines, base):
    """lines: (lineno, text) pairs.  Returns blocks: (kind, lineno, data)."""
    blocks = []
    i = 0
    while i < len(lines):
        no, ln = lines[i]
        if not ln.strip():
            i += 1
            continue
        if re.match(r"^\s*<!--.*-->\s*$", ln):
            i += 1
            continue
        if ln.lstrip().startswith("<!--"):
            warn(no, "a comment over several lines")
            i += 1
            continue
        if ln.startswith("```"):
            body = []
            i += 1
            while i < len(lines) and not lines[i][1].startswith("```"):
                body.append(lines[i][1])
                i += 1
            if i == len(lines):
                warn(no, "a code fence that does not end")
            i += 1
            blocks.append(("code", no, body))
            continue
        if ln.startswith("    ") or ln.startswith("\t"):
            body = []
            while i < len(lines) and (lines[i][1].startswith("    ") or lines[i][1].startswith("\t")
                                      or not lines[i][1].strip()):
                body.append(lines[i][1].expandtabs(8)[4:])
                i += 1
            while body and not body[-1].strip():
                body.pop()
            blocks.append(("code", no, body))
            continue
        m = re.match(r"^(#{1,6}) +(.*?) *#*$", ln)
        if m:
            if len(m.group(1)) > 3:
                warn(no, "headings deeper than ### are not converted")
            blocks.append(("h%d" % len(m.group(1)), no, m.group(2)))
            i += 1
            continue
        if ln.startswith("|"):
            rows = []
            while i < len(lines) and lines[i][1].startswith("|"):
                rows.append(lines[i])
                i += 1
            blocks.append(("table", no, rows))
            continue
        if re.match(r"^!\[[^\]]*\]\([^)]+\)\s*$", ln):
            blocks.append(("para", no, ln))
            i += 1
            continue
        m = LIST_RE.match(ln)
        if m:
            items, i = parse_list(lines, i)
            blocks.append(("list", no, items))
            continue
        if ln[0] in "<>":
            warn(no, "HTML and block quotes are not converted")
        para = []
        while i < len(lines):
            t = lines[i][1]
            if (not t.strip() or t.startswith("```") or t.startswith("|") or re.match(r"^#{1,6} ", t)
                    or LIST_RE.match(t) or (para and re.match(r"^\s*<!--", t))):
                break
            para.append(t)
            i += 1
        blocks.append(("para", no, "\n".join(para)))
    return blocks


def parse_list(lines, i):
    """A list from line i: [(ordered, lineno, blocks of its item)], and the next line."""
    no, first = lines[i]
    m = LIST_RE.match(first)
    ind, ordered = len(m.group(1)), m.group(2)[0].isdigit()
    items = []
    while i < len(lines):
        no, ln = lines[i]
        m = LIST_RE.match(ln)
        if not m or len(m.group(1)) != ind or m.group(2)[0].isdigit() != ordered:
            break
        content = len(m.group(1)) + len(m.group(2)) + 1
        body = [(no, m.group(3))]
        i += 1
        while i < len(lines):
            t = lines[i][1]
            if not t.strip():
                # A blank line ends the item unless what follows is indented into it.
                j = i
                while j < len(lines) and not lines[j][1].strip():
                    j += 1
                if j < len(lines) and indent_of(lines[j][1]) >= content:
                    body += lines[i:j]
                    i = j
                    continue
                break
            lm = LIST_RE.match(t)
            if lm and len(lm.group(1)) <= ind:
                break
            if indent_of(t) < content and (t.startswith("```") or t.startswith("|") or re.match(r"^#{1,6} ", t)):
                break
            body.append(lines[i])
            i += 1
        dedented = [(n2, t[min(content, indent_of(t)):]) for n2, t in body]
        items.append((m.group(2)[0].isdigit(), no, parse_blocks(dedented, content)))
        while i < len(lines) and not lines[i][1].strip():
            j = i
            while j < len(lines) and not lines[j][1].strip():
                j += 1
            nm = LIST_RE.match(lines[j][1]) if j < len(lines) else None
            if nm and len(nm.group(1)) == ind and nm.group(2)[0].isdigit() == ordered:
                i = j
            break
    return items, i


def split_row(text):
    cells, cur, k = [], [], 0
    s = text.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    while k < len(s):
        if s[k] == "\\" and k + 1 < len(s) and s[k + 1] == "|":
            cur.append(PIPE)
            k += 2
            continue
        if s[k] == "|":
            cells.append("".join(cur).strip())
            cur = []
        else:
            cur.append(s[k])
        k += 1
    cells.append("".join(cur).strip())
    return cells


def tbl_cell(s, lineno, block):
    t = inline(s, lineno)
    if block:
        lines = [("\\&" + ln if ln[:1] in ".'" else ln) for ln in t.split("\n")]
        return "T{\n" + "\n".join(lines) + "\nT}"
    if t in ("_", "=", "\\_", "\\^") or t[:1] in ".'":
        t = "\\&" + t
    return t


def render_table(rows, out):
    no = rows[0][0]
    cells = [split_row(t) for _, t in rows]
    if len(cells) < 2 or not all(re.match(r"^:?-+:?$", c) for c in cells[1]):
        warn(no, "a table without its |---| line")
        return
    head, body = cells[0], cells[2:]
    ncol = len(head)
    for k, r in enumerate(body):
        if len(r) != ncol:
            warn(rows[k + 2][0], "a row of %d cells in a table of %d columns" % (len(r), ncol))
            r += [""] * (ncol - len(r))
            del r[ncol:]
    widths = [max(len(plain(r[c])) for r in [head] + body) for c in range(ncol)]
    words = [max((len(w) for r in [head] + body for w in plain(r[c]).split()), default=0) for c in range(ncol)]
    avail = LINE_WIDTH - COL_GAP * (ncol - 1)
    fixed = {}
    if sum(widths) > avail:
        # Narrow columns keep their width; the rest share what is left, as text blocks.
        left, cols = avail, sorted(range(ncol), key=lambda c: widths[c])
        for k, c in enumerate(cols):
            share = left // (ncol - k)
            if widths[c] <= share:
                left -= widths[c]
            else:
                for c2 in cols[k:]:
                    fixed[c2] = left // (ncol - k)
                break
        if any(words[c] > fixed[c] for c in fixed):
            return render_rows(head, body, rows, out)
    out.append(".PP")
    out.append(".na")   # text blocks fill ragged: a narrow column cannot be adjusted
    out.append(".TS")
    fmt = ["l" + ("w(%dn)" % fixed[c] if c in fixed else "") for c in range(ncol)]
    out.append(" ".join(f.replace("l", "lb", 1) for f in fmt))
    out.append(" ".join(fmt) + ".")
    hdr = [tbl_cell(h, no, c in fixed) for c, h in enumerate(head)]
    out.append("\t".join(hdr))
    out.append("_")
    for k, r in enumerate(body):
        out.append("\t".join(tbl_cell(x, rows[k + 2][0], c in fixed) for c, x in enumerate(r)))
    out.append(".TE")
    out.append(".ad l")   # tbl leaves adjusting on both margins


def render_rows(head, body, rows, out):
    """A table too wide for a terminal: a tagged paragraph per row, a line per other column."""
    for k, r in enumerate(body):
        no = rows[k + 2][0]
        out.append(".TP 7")
        tag = ("%s: " % plain(head[0]) if head[0] else "") + r[0]
        out.extend(text_lines(tag, no) or ["\\&"])
        first = True
        for c in range(1, len(head)):
            if not r[c]:
                continue
            if not first:
                out.append(".br")
            first = False
            out.extend(text_lines((head[c] + ": " if head[c] else "") + r[c], no))


def tag_split(text):
    """'`-a`, `--all` ARG: text' -> (tag, text), else None."""
    if not text.startswith("`"):
        return None
    k, in_code = 0, False
    while k < len(text) - 1:
        if text[k] == "`":
            in_code = not in_code
        elif not in_code and text[k] == ":" and text[k + 1] in " \n":
            tag = text[:k]
            if len(tag) <= 80 and ". " not in tag and "\n" not in tag:
                return tag, text[k + 2:]
            return None
        k += 1
    return None


def render_blocks(blocks, out, depth=0):
    for kind, no, data in blocks:
        if kind == "h1":
            warn(no, "a second title")
        elif kind == "h2":
            out.append('.SH "%s"' % inline(data.upper(), no).replace('"', "\\(dq"))
        elif kind in ("h3", "h4", "h5", "h6"):
            out.append('.SS "%s"' % inline(data, no).replace('"', "\\(dq"))
        elif kind == "para":
            out.append(".IP \"\" %d" % (2 * depth) if depth else ".PP")
            out.extend(text_lines(data, no))
        elif kind == "code":
            # Four columns in from the text it belongs to (.RS counts from the list's margin).
            out += [".RS %d" % (2 * depth + 4), ".PP", ".nf"] if depth else [".PP", ".RS 4", ".nf"]
            for ln in data:
                t = esc_code(ln.expandtabs(8).rstrip())
                out.append("\\&" + t if t[:1] in ".'" or not t else t)
            out.append(".fi")
            out.append(".RE")
        elif kind == "table":
            if depth:
                warn(no, "a table inside a list")
            render_table(data, out)
        elif kind == "list":
            if depth:
                out.append(".RS 2")
            for num, (ordered, ino, iblocks) in enumerate(data, 1):
                first = iblocks[0] if iblocks else ("para", ino, "")
                rest = iblocks[1:]
                tagged = tag_split(first[2]) if first[0] == "para" else None
                if tagged:
                    out.append(".TP 7")   # a bullet before it set the indent to its own
                    out.extend(text_lines(tagged[0], ino))
                    out.extend(text_lines(tagged[1], ino))
                else:
                    out.append(".IP %s %d" % ("%d." % num if ordered else "\\(bu", 4 if ordered else 2))
                    if first[0] == "para":
                        out.extend(text_lines(first[2], ino))
                    else:
                        rest = iblocks
                render_blocks(rest, out, 1)
            if depth:
                out.append(".RE")


def convert(path, version):
    global page_path
    page_path = path
    with open(path, encoding="utf-8") as f:
        src = f.read().split("\n")
    m = re.match(r"^# ([\w.-]+)\((\d)\)\s*$", src[0]) if src else None
    if not m:
        warn(1, "the first line must be the title, '# NAME(SECTION)'")
        return ""
    name, sec = m.group(1), m.group(2)
    blocks = parse_blocks(list(enumerate(src[1:], 2)), 0)
    out = ['.TH "%s" "%s" "" "spanperf %s" "spanperf manual"' % (esc_code(name.upper()), sec, version)]
    # No hyphenation: a word broken in two is an option or a page name that no longer reads as one.
    out.append(".nh")
    # Ragged right, paragraph after paragraph: groff's man macros adjust each to \*[AD].
    out.append(".ds AD l")
    out.append(".ad l")
    if not blocks or blocks[0][0] != "h2" or blocks[0][2] != "NAME":
        warn(2, "the page must begin with its NAME section")
    if any(b[0] == "table" for b in blocks):
        out.insert(0, "'\\\" t")
    for k, b in enumerate(blocks):
        if k == 1 and blocks[0][2] == "NAME":
            # The whatis line: "name - what it is", the dash a real one for mandb.
            if b[0] != "para" or " - " not in b[2]:
                warn(b[1], "NAME must read 'name - what it is'")
            else:
                nm, desc = b[2].split(" - ", 1)
                out.append(esc_code(nm.strip()) + " \\- " + " ".join(text_lines(desc, b[1])))
                continue
        render_blocks([b], out)
    return "\n".join(out) + "\n"


def main(argv):
    version, outpath, pages = "", None, []
    k = 1
    while k < len(argv):
        if argv[k] == "--version":
            version = argv[k + 1]
            k += 2
        elif argv[k] == "-o":
            outpath = argv[k + 1]
            k += 2
        elif argv[k] in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            pages.append(argv[k])
            k += 1
    if len(pages) != 1:
        print("usage: md2man.py [--version V] [-o OUT] PAGE.md", file=sys.stderr)
        return 2
    roff = convert(pages[0], version)
    for w in warnings:
        print(w, file=sys.stderr)
    if warnings:
        return 1
    if outpath:
        with open(outpath + ".tmp", "w") as f:
            f.write(roff)
        os.replace(outpath + ".tmp", outpath)
    else:
        sys.stdout.write(roff)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
