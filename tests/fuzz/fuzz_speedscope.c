// SPDX-License-Identifier: GPL-2.0
/*
 * report --speedscope (report_html.c, timeline.c) over recordings the
 * bytes make (fuzz_rec.h).  Checked: one JSON document, and in each
 * evented profile what speedscope's importer enforces (it throws, and
 * shows nothing, otherwise): frames that exist, times that never go back,
 * each close of the frame on top, and nothing left open at the end.
 *
 * The whole report runs per input: entropic scheduling costs more than it
 * gives (see fuzz_span_join.c).
 * FUZZ_FLAGS: -entropic=0
 */
#include "fuzz_check.h"
#include "fuzz_timeline.h"

#define MAX_DEPTH 4096

/* How many frames the shared table holds: each is an object that starts {"name": (a string cannot hold that). */
static size_t count_frames(const char *p, size_t n)
{
	const char *from = memmem(p, n, "\"frames\":[", 10), *to;
	size_t k = 0;

	if (!from || !(to = memmem(from, n - (from - p), "]},\"profiles\":[", 15)))
		fuzz_fail("speedscope: no shared frames", p, n, 0);
	for (const char *q = from; (q = memmem(q, to - q, "{\"name\":", 8)); q += 8)
		k++;
	return k;
}

static void check_events(const char *p, size_t n, size_t nframes)
{
	static unsigned stack[MAX_DEPTH];

	for (const char *q = p; (q = memmem(q, n - (q - p), "\"events\":[", 10));) {
		unsigned long long last = 0, at;
		size_t depth = 0;
		unsigned frame;
		char type;
		int used;

		for (q += 10; *q == '{' || *q == ','; q += used) {
			q += *q == ',';
			used = 0;
			if (sscanf(q, "{\"type\":\"%c\",\"frame\":%u,\"at\":%llu}%n", &type, &frame, &at, &used) != 3 ||
			    !used)
				fuzz_fail("speedscope: an event of another form", p, n, q - p);
			if (frame >= nframes)
				fuzz_fail("speedscope: an event of a frame that is not there", p, n, q - p);
			if (at < last)
				fuzz_fail("speedscope: an event earlier than the one before", p, n, q - p);
			last = at;
			if (type == 'O') {
				if (depth == MAX_DEPTH)
					fuzz_fail("speedscope: frames nested too deep", p, n, q - p);
				stack[depth++] = frame;
			} else if (type != 'C' || !depth || stack[--depth] != frame) {
				fuzz_fail("speedscope: a close of a frame not on top", p, n, q - p);
			}
		}
		if (*q != ']')
			fuzz_fail("speedscope: events that do not end", p, n, q - p);
		if (depth)
			fuzz_fail("speedscope: frames left open at the end of a profile", p, n, q - p);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *out;
	size_t len;

	if (fuzz_timeline(data, size, report_speedscope, &out, &len))
		return 0;
	check_json("report --speedscope", out, len);
	check_events(out, len, count_frames(out, len));
	free(out);
	return 0;
}
