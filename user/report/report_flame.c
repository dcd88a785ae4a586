// SPDX-License-Identifier: GPL-2.0
/*
 * Folded stacks and flame graphs.  Both put the command first, then the
 * frames from the root down to the leaf, as flamegraph.pl and speedscope
 * expect.  The SVG needs nothing else: tooltips, click-to-zoom and search
 * are a small script inside it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "report_out.h"
#include "sbuf.h"
#include "util.h"

struct fline {
	char *text;
	__u64 count;
};

static int cmp_fline(const void *a, const void *b)
{
	return strcmp(((const struct fline *)a)->text, ((const struct fline *)b)->text);
}

static bool fline_eq(const void *ctx, size_t idx)
{
	const void *const *c = ctx;

	return !strcmp(((const struct fline *)c[0])[idx].text, c[1]);
}

int report_folded(const struct profile *p, FILE *out, bool wakers)
{
	struct hindex idx = {};
	struct fline *lines = NULL;
	size_t nr = 0, cap = 0;
	int e = 0;

	for (size_t i = 0; i < p->nr_stacks; i++) {
		const struct pstack *s = &p->stacks[i];
		struct sbuf b = {};
		const void *ctx[2];
		char esc[1024];
		__u64 h;
		long k;

		/* --span-prefix: the spans first, so that each is a root of the graph. */
		if (s->span_prefix)
			sbuf_printf(&b, "%s;", s->span_prefix);
		/* A newline or ';' in a comm or a name must not forge a line or a frame. */
		sbuf_printf(&b, "%s", text_name(s->comm, ";", esc, sizeof(esc)));
		for (__u32 j = s->nr; j-- > 0;)
			sbuf_printf(&b, ";%s", text_name(pfunc_text(&p->funcs[s->frames[j].func]), ";", esc, sizeof(esc)));
		if (wakers && s->waker) {
			sbuf_printf(&b, ";--");
			for (__u32 j = 0; j < s->nr_waker; j++)
				sbuf_printf(&b, ";%s", text_name(pfunc_text(&p->funcs[s->waker_frames[j].func]), ";", esc,
								  sizeof(esc)));
			sbuf_printf(&b, ";%s", text_name(s->waker, ";", esc, sizeof(esc)));
		}
		sbuf_zero(&b, 1);
		if (b.err) {
			e = b.err;
			goto cleanup;
		}
		/* The same stack in several threads of one command is one line. */
		h = hash_str(b.p);
		ctx[0] = lines;
		ctx[1] = b.p;
		k = hindex_find(&idx, h, fline_eq, ctx);
		if (k >= 0) {
			lines[k].count += s->count;
			sbuf_free(&b);
			continue;
		}
		if (array_reserve((void **)&lines, &cap, nr, sizeof(*lines)) || hindex_add(&idx, h, nr)) {
			sbuf_free(&b);
			e = -ENOMEM;
			goto cleanup;
		}
		lines[nr++] = (struct fline){ b.p, s->count };
	}
	sort_n(lines, nr, sizeof(*lines), cmp_fline);
	for (size_t i = 0; i < nr; i++)
		fprintf(out, "%s %llu\n", lines[i].text, (unsigned long long)lines[i].count);
cleanup:
	for (size_t i = 0; i < nr; i++)
		free(lines[i].text);
	free(lines);
	hindex_free(&idx);
	return e;
}

/* ---- flame graph ---- */

enum fkind { FK_ROOT, FK_COMM, FK_USER, FK_KERNEL, FK_UNKNOWN };

struct fnode {
	const char *name, *dso;
	enum fkind kind;
	__u64 count;
	int child, next; /* first child, next sibling: -1 for none */
};

struct ftree {
	struct fnode *n;
	size_t nr, cap;
	int depth;
};

static int fchild(struct ftree *t, int parent, const char *name, const char *dso, enum fkind kind)
{
	int c;

	for (c = t->n[parent].child; c >= 0; c = t->n[c].next)
		if (t->n[c].name == name && t->n[c].dso == dso)
			return c;
	if (t->nr == t->cap) {
		struct fnode *n = realloc(t->n, (t->cap = t->cap ? 2 * t->cap : 1024) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->n = n;
	}
	t->n[t->nr] = (struct fnode){ name, dso, kind, 0, -1, t->n[parent].child };
	t->n[parent].child = t->nr;
	return t->nr++;
}

static void xml_text(FILE *out, const char *s)
{
	struct sbuf u = {};

	/* XML is UTF-8 here, names are any bytes: a stray one would stop the browser's parser (U+FFFD instead). */
	sbuf_add_utf8(&u, s, strlen(s));
	for (size_t i = 0; i < u.len; i++) {
		switch (u.p[i]) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		default:
			if ((unsigned char)u.p[i] >= 0x20)
				fputc(u.p[i], out);
		}
	}
	sbuf_free(&u);
}

/* A colour stable across runs for a name: FNV-1a, folded to 32 bits. */
static unsigned shash(const char *s)
{
	__u64 h = hash_str(s ? s : "");

	return (unsigned)(h ^ h >> 32);
}

/* Kernel frames orange, user frames red to yellow by dso, unknown grey. */
static void color(const struct fnode *n, char *buf, size_t len)
{
	unsigned h = shash(n->name), d = shash(n->dso);

	switch (n->kind) {
	case FK_KERNEL: snprintf(buf, len, "rgb(%u,%u,%u)", 230 + h % 25, 120 + h % 60, 40 + h % 30); break;
	case FK_USER: snprintf(buf, len, "rgb(%u,%u,%u)", 205 + d % 50, 60 + (d >> 8) % 140 + h % 30, 50 + h % 40); break;
	case FK_UNKNOWN: snprintf(buf, len, "rgb(%u,%u,%u)", 170 + h % 20, 170 + h % 20, 170 + h % 20); break;
	default: snprintf(buf, len, "rgb(%u,%u,%u)", 120 + h % 40, 170 + h % 40, 230); break;
	}
}

#define FG_WIDTH 1200.0
#define FG_ROW 16
#define FG_TOP 48

static void emit(const struct ftree *t, int i, double x, int depth, __u64 total, int height, FILE *out)
{
	const struct fnode *n = &t->n[i];
	double w = FG_WIDTH * n->count / total, cx = x;
	char fill[32];

	if (w < 0.1)
		return; /* invisible, and thousands of them would bloat the file */
	if (n->kind != FK_ROOT) {
		color(n, fill, sizeof(fill));
		fprintf(out, "<g class=\"f\" data-x=\"%.3f\" data-w=\"%.3f\" data-d=\"%d\"><title>", x, w, depth);
		xml_text(out, n->name);
		if (n->kind == FK_USER || n->kind == FK_UNKNOWN) {
			fputs(" (", out);
			xml_text(out, n->dso);
			fputc(')', out);
		} else if (n->kind == FK_KERNEL) {
			fputs(" [kernel]", out);
		}
		fprintf(out, " &#8212; %llu samples, %.2f%%</title><rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
			     "fill=\"%s\" rx=\"2\"/><text x=\"%.1f\" y=\"%d\"></text></g>\n",
			(unsigned long long)n->count, 100.0 * n->count / total, x, height - FG_ROW * (depth + 1),
			w, FG_ROW - 1, fill, x + 3, height - FG_ROW * depth - 4);
	}
	for (int c = n->child; c >= 0; c = t->n[c].next) {
		emit(t, c, cx, depth + (n->kind != FK_ROOT), total, height, out);
		cx += FG_WIDTH * t->n[c].count / total;
	}
}

static const char flame_script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"'use strict';\n"
	"var W = 1200, frames, zx = 0, zw = W, zd = 0;\n"
	"function g(a, n) { return parseFloat(a.getAttribute(n)); }\n"
	"function name(f) { return f.querySelector('title').textContent.replace(/ \\(.*| \\[kernel\\].*| \\u2014.*/, ''); }\n"
	"function label(f, w) { var n = name(f), c = Math.floor((w - 6) / 7);\n"
	"  f.querySelector('text').textContent = c < 3 ? '' : n.length <= c ? n : n.substr(0, c - 2) + '..'; }\n"
	"function layout() {\n"
	"  for (var f of frames) {\n"
	"    var x = g(f, 'data-x'), w = g(f, 'data-w'), d = g(f, 'data-d'), r = f.querySelector('rect'), t = f.querySelector('text');\n"
	"    var nx = (x - zx) / zw * W, nw = w / zw * W;\n"
	"    var ancestor = d < zd && x <= zx + 0.01 && x + w >= zx + zw - 0.01;\n"
	"    if (ancestor) { nx = 0; nw = W; }\n"
	"    var show = ancestor || (nx + nw > 0.05 && nx < W - 0.05 && d >= zd);\n"
	"    f.style.display = show ? '' : 'none';\n"
	"    if (!show) continue;\n"
	"    r.setAttribute('x', nx); r.setAttribute('width', nw); t.setAttribute('x', nx + 3); label(f, nw);\n"
	"    f.style.opacity = ancestor ? 0.6 : 1;\n"
	"  }\n"
	"}\n"
	"function zoom(f) { zx = g(f, 'data-x'); zw = g(f, 'data-w'); zd = g(f, 'data-d'); layout();\n"
	"  document.getElementById('unzoom').style.opacity = 1; }\n"
	"function unzoom() { zx = 0; zw = W; zd = 0; layout(); document.getElementById('unzoom').style.opacity = 0.2; }\n"
	"function search(re) {\n"
	"  var hit = [], total = 0;\n"
	"  for (var f of frames) { var m = re && re.test(name(f)); var r = f.querySelector('rect');\n"
	"    if (!r.dataset.fill) r.dataset.fill = r.getAttribute('fill');\n"
	"    r.setAttribute('fill', m ? 'rgb(230,0,230)' : r.dataset.fill); if (m) hit.push([g(f, 'data-x'), g(f, 'data-w')]); }\n"
	"  hit.sort(function (a, b) { return a[0] - b[0]; });\n"
	"  for (var i = 0, end = -1; i < hit.length; i++) { var s = Math.max(hit[i][0], end), e = hit[i][0] + hit[i][1];\n"
	"    if (e > s) total += e - s; end = Math.max(end, e); }\n"
	"  document.getElementById('matched').textContent = re ? 'Matched: ' + (100 * total / W).toFixed(1) + '%' : '';\n"
	"}\n"
	"function search_prompt() { var s = prompt('Search (regular expression)', '');\n"
	"  if (s === null) return; search(s ? new RegExp(s) : null); }\n"
	"function init() {\n"
	"  frames = Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
	"  for (var f of frames) f.addEventListener('click', function (e) { zoom(e.currentTarget); });\n"
	"  layout();\n"
	"  var q = location.hash.match(/search=([^&]*)/); if (q) search(new RegExp(decodeURIComponent(q[1])));\n"
	"  var z = location.hash.match(/zoom=([^&]*)/);\n"
	"  if (z) { var re = new RegExp(decodeURIComponent(z[1])); var f = frames.find(function (f) { return re.test(name(f)); }); if (f) zoom(f); }\n"
	"}\n"
	"]]></script>\n";

int report_flamegraph(const struct profile *p, const char *title, FILE *out)
{
	struct ftree t = {};
	int e = 0, height;

	if (!p->samples)
		return -ENODATA;
	t.n = malloc(sizeof(*t.n) * (t.cap = 1024));
	if (!t.n)
		return -ENOMEM;
	t.n[t.nr++] = (struct fnode){ "all", "", FK_ROOT, 0, -1, -1 };
	for (size_t i = 0; i < p->nr_stacks; i++) {
		const struct pstack *s = &p->stacks[i];
		int at = fchild(&t, 0, s->comm, "", FK_COMM), d = 1;

		t.n[0].count += s->count;
		if (at < 0) {
			e = at;
			goto cleanup;
		}
		t.n[at].count += s->count;
		for (__u32 j = s->nr; j-- > 0;) {
			const struct pfunc *f = &p->funcs[s->frames[j].func];
			enum fkind k = f->kernel ? FK_KERNEL : strcmp(f->name, "[unknown]") ? FK_USER : FK_UNKNOWN;

			at = fchild(&t, at, pfunc_text(f), f->dso, k);
			if (at < 0) {
				e = at;
				goto cleanup;
			}
			t.n[at].count += s->count;
			d++;
		}
		if (d > t.depth)
			t.depth = d;
	}
	height = FG_TOP + FG_ROW * (t.depth + 1) + 8;
	fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		     "<svg version=\"1.1\" width=\"%.0f\" height=\"%d\" viewBox=\"0 0 %.0f %d\" onload=\"init(evt)\" "
		     "xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\">\n"
		     "<style>text { font-family: monospace; font-size: 12px; fill: #000; pointer-events: none }\n"
		     "g.f:hover rect { stroke: #000; stroke-width: 0.5 } g.f { cursor: pointer }\n"
		     "#title { font-size: 17px; text-anchor: middle } .ctl { fill: #226; cursor: pointer; pointer-events: all }</style>\n",
		FG_WIDTH, height, FG_WIDTH, height);
	fputs(flame_script, out);
	fprintf(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"#f8f8fa\"/>\n<text id=\"title\" x=\"%.0f\" y=\"22\">",
		FG_WIDTH / 2);
	xml_text(out, title);
	fprintf(out, "</text>\n<text class=\"ctl\" id=\"unzoom\" x=\"10\" y=\"22\" onclick=\"unzoom()\" style=\"opacity:0.2\">Reset Zoom</text>\n"
		     "<text class=\"ctl\" id=\"search\" x=\"%.0f\" y=\"22\" onclick=\"search_prompt()\">Search</text>\n"
		     "<text id=\"matched\" x=\"%.0f\" y=\"40\"></text>\n<g id=\"frames\">\n",
		FG_WIDTH - 60, FG_WIDTH - 160);
	emit(&t, 0, 0, 0, t.n[0].count, height, out);
	fputs("</g>\n</svg>\n", out);
cleanup:
	free(t.n);
	return e;
}
