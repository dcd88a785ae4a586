// SPDX-License-Identifier: GPL-2.0
/*
 * report --html's page (report_html.c, timeline.c) over recordings the
 * bytes make (fuzz_rec.h): names of any bytes in comms, span sources,
 * counters, JIT symbols, OTel attributes and annotate's spans.  Checked:
 * the page is UTF-8, and the data inside its script element is one JSON
 * document that JSON.parse takes, with no '<' that could end the element
 * or open a comment.
 *
 * The whole report runs per input: entropic scheduling costs more than it
 * gives (see fuzz_span_join.c).
 * FUZZ_FLAGS: -entropic=0
 */
#include "fuzz_check.h"
#include "fuzz_timeline.h"

#define DATA_OPEN "<script id=\"spanperf-data\" type=\"application/json\">"
#define DATA_CLOSE "</script>\n<script>\n"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *from, *to;
	char *page;
	size_t len;

	if (fuzz_timeline(data, size, report_html, &page, &len))
		return 0;
	check_utf8("report --html: a byte that is not UTF-8", page, len);
	from = memmem(page, len, DATA_OPEN, strlen(DATA_OPEN));
	if (!from)
		fuzz_fail("report --html: no data element", page, len, 0);
	from += strlen(DATA_OPEN);
	/* The data's first '<' is its element's end, which the page's script follows. */
	to = memchr(from, '<', len - (from - page));
	if (!to || strncmp(to, DATA_CLOSE, strlen(DATA_CLOSE)))
		fuzz_fail("report --html: a '<' inside the data element", page, len, to ? to - page : len);
	check_json("report --html's data", from, to - from);
	free(page);
	return 0;
}
