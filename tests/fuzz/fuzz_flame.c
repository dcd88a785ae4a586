// SPDX-License-Identifier: GPL-2.0
/*
 * The flame graph and folded stacks (report_flame.c) over recordings the
 * bytes make (fuzz_rec.h): comms, JIT symbols, waker names of any bytes,
 * wall and off-CPU views.  Checked: the SVG is UTF-8 and well-formed XML
 * (every element closed in order, no raw '<' or '&' in text or an
 * attribute, only characters XML 1.0 allows), which a browser needs to
 * show it at all; folded stacks are "FRAMES COUNT" lines.
 *
 * The whole report runs per input: entropic scheduling costs more than it
 * gives (see fuzz_span_join.c).
 * FUZZ_FLAGS: -entropic=0
 */
#include "fuzz_check.h"
#include "fuzz_profile.h"
#include "offcpu_view.h"
#include "report_out.h"

#define MAX_DEPTH 256

/* An entity or character reference at p: &name; &#N; &#xH; its length, or 0. */
static size_t xml_ref(const char *p, const char *end)
{
	const char *q = p + 1;
	const char *set = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

	if (q < end && *q == '#') {
		q++;
		set = "0123456789";
		if (q < end && *q == 'x')
			q++, set = "0123456789abcdefABCDEF";
	}
	if (q >= end || !strchr(set, *q) || !*q)
		return 0;
	while (q < end && *q && strchr(set, *q))
		q++;
	return q < end && *q == ';' ? (size_t)(q + 1 - p) : 0;
}

/* XML 1.0's Char: no C0 control but tab, newline and return. */
static bool xml_char_ok(unsigned char c)
{
	return c >= 0x20 || c == '\t' || c == '\n' || c == '\r';
}

static void check_xml(const char *p, size_t n)
{
	const char *end = p + n, *q = p;
	const char *open[MAX_DEPTH];
	size_t len[MAX_DEPTH], depth = 0;

	check_utf8("flame graph: a byte that is not UTF-8", p, n);
	while (q < end) {
		if (*q == '&') {
			size_t l = xml_ref(q, end);

			if (!l)
				fuzz_fail("flame graph: a raw '&'", p, n, q - p);
			q += l;
			continue;
		}
		if (*q != '<') {
			if (!xml_char_ok(*q))
				fuzz_fail("flame graph: a control byte XML does not allow", p, n, q - p);
			q++;
			continue;
		}
		if (!strncmp(q, "<?", 2) || !strncmp(q, "<!DOCTYPE", 9)) {
			const char *gt = memchr(q, '>', end - q);

			if (!gt)
				fuzz_fail("flame graph: a declaration that does not end", p, n, q - p);
			q = gt + 1;
		} else if (!strncmp(q, "<![CDATA[", 9)) {
			const char *e = memmem(q, end - q, "]]>", 3);

			if (!e)
				fuzz_fail("flame graph: CDATA that does not end", p, n, q - p);
			q = e + 3;
		} else if (q[1] == '/') {
			size_t l = strcspn(q + 2, " >");

			if (!depth || l != len[depth - 1] || strncmp(q + 2, open[depth - 1], l) || q[2 + l] != '>')
				fuzz_fail("flame graph: an end tag of an element not open", p, n, q - p);
			depth--;
			q += 3 + l;
		} else {
			const char *name = q + 1;
			size_t l = strcspn(name, " />\n");
			bool empty;

			if (!l)
				fuzz_fail("flame graph: a raw '<'", p, n, q - p);
			/* Attributes: name="value", the value without '<', its '&' a reference. */
			for (q += 1 + l;;) {
				while (q < end && (*q == ' ' || *q == '\n'))
					q++;
				if (q >= end || *q == '>' || *q == '/')
					break;
				q += strcspn(q, "=>");
				if (q + 1 >= end || *q != '=' || q[1] != '"')
					fuzz_fail("flame graph: an attribute that is not name=\"value\"", p, n, q - p);
				for (q += 2; q < end && *q != '"'; q++) {
					if (*q == '<' || !xml_char_ok(*q))
						fuzz_fail("flame graph: a '<' or control byte in an attribute", p, n, q - p);
					if (*q == '&' && !xml_ref(q, end))
						fuzz_fail("flame graph: a raw '&' in an attribute", p, n, q - p);
				}
				q++;
			}
			empty = q < end && *q == '/';
			if (q + empty >= end || q[empty] != '>')
				fuzz_fail("flame graph: a tag that does not end", p, n, q - p);
			if (!empty) {
				if (depth == MAX_DEPTH)
					fuzz_fail("flame graph: elements nested too deep", p, n, q - p);
				open[depth] = name;
				len[depth] = l;
				depth++;
			}
			q += 1 + empty;
		}
	}
	if (depth)
		fuzz_fail("flame graph: elements left open at the end", p, n, n);
}

/* "FRAME;FRAME... COUNT" per line, no control byte. */
static void check_folded(const char *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		const char *nl = memchr(p + i, '\n', n - i), *sp;
		size_t len = nl ? (size_t)(nl - (p + i)) : n - i;

		for (size_t k = i; k < i + len; k++)
			if ((unsigned char)p[k] < 0x20 || p[k] == 0x7f)
				fuzz_fail("folded stacks: a control byte", p, n, k);
		sp = memrchr(p + i, ' ', len);
		if (!nl || !sp || sp + 1 == p + i + len ||
		    strspn(sp + 1, "0123456789") != (size_t)(p + i + len - sp - 1))
			fuzz_fail("folded stacks: a line that is not \"STACK COUNT\"", p, n, i);
		i += len + 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_rec rec = {};
	struct profile *p = fuzz_profile(data, size, &(struct profile_opts){ .unknown_offsets = size & 1 }, &rec);
	struct profile view = {};
	const struct profile *shown = p;
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	if (!p)
		return 0;
	/* As report --event: the on-CPU profile, or a view of off-CPU or wall time. */
	if (rec.opts & 6) {
		if (profile_view(p, (rec.opts & 6) == 2 ? PV_OFF_CPU : PV_WALL, true, &view))
			goto cleanup;
		shown = &view;
	}
	if (!(out = open_memstream(&buf, &len)))
		abort();
	if (rec.opts & 8) {
		if (report_folded(shown, out, rec.opts & 16))
			abort();
		fclose(out);
		check_folded(buf, len);
	} else {
		if (shown->samples && report_flamegraph(shown, "fuzz <&\"title\">", out))
			abort();
		fclose(out);
		if (len)
			check_xml(buf, len);
	}
	free(buf);
cleanup:
	profile_view_free(&view);
	fuzz_profile_free(p);
	return 0;
}
