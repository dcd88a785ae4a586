/* SPDX-License-Identifier: GPL-2.0 */
/*
 * report --html and --speedscope's pass, timeline__read as report_visual
 * calls it, over a recording of fuzz_rec.h with the fixture root for
 * symbols: the profile keeping each sample's time, the span join (none is no
 * error), then the timeline, thinned to limits the option byte picks (so
 * that thinning runs too).  The output goes to memory, for the target to
 * check.
 */
#ifndef SP_FUZZ_TIMELINE_H
#define SP_FUZZ_TIMELINE_H

#include "fuzz_rec.h"
#include "report_html.h"
#include "report_spans.h"
#include "session.h"
#include "timeline.h"

typedef int (*fz_timeline_fn)(const struct timeline *t, const char *input, FILE *out);

/* The output of fn over the recording the bytes make, in *buf (the caller frees it); 0, or -1 for none. */
static inline int fuzz_timeline(const uint8_t *data, size_t size, fz_timeline_fn fn, char **buf, size_t *len)
{
	static const __u64 limits[] = { 0, 1, 2, 3, 7, 100 };
	struct fz_rec rec = {};
	struct spans_report_opts so = { .none_ok = true };
	struct timeline_read r;
	struct tl_limits lim;
	char err[512];
	FILE *out;
	int ret = -1;

	*buf = NULL;
	*len = 0;
	if (fuzz_recording(data, size, &rec))
		return -1;
	so.input = rec.path;
	so.external = rec.ext[0] && rec.opts & 1 ? rec.ext : NULL;
	lim.max_samples = limits[(rec.opts >> 1) % 6];
	lim.max_spans = limits[(rec.opts >> 4) % 6];
	if (timeline__read(&r, rec.path, &(struct session_opts){ .root = FUZZ_ROOT }, &so, NULL, &lim, err,
			   sizeof(err)))
		goto cleanup;
	out = open_memstream(buf, len);
	if (!out)
		goto cleanup;
	if (fn(&r.t, rec.path, out))
		abort(); /* memory never fails to take the output */
	fclose(out);
	ret = 0;
cleanup:
	timeline_read__free(&r);
	return ret;
}

#endif
