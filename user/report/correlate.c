// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>

#include "correlate.h"
#include "hash.h"
#include "util.h"

static int cmp_sample(const void *a, const void *b)
{
	const struct corr_sample *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->time > y->time) - (x->time < y->time);
}

static bool before(const struct corr_sample *s, __u32 tid, __u64 time)
{
	return s->tid < tid || (s->tid == tid && s->time < time);
}

/* First sample not before (tid, time). */
static size_t lower(const struct corr_sample *s, size_t n, __u32 tid, __u64 time)
{
	return SP_PARTITION(n, i, before(&s[i], tid, time));
}

/*
 * The same, from p on, where every sample before p is before (tid, time):
 * steps that double from p, then a search of the last step alone, so a
 * bound near p costs a few reads next to each other, not a search of all.
 */
static size_t lower_from(const struct corr_sample *s, size_t n, size_t p, __u32 tid, __u64 time)
{
	size_t lo = p, hi = p, step = 1;

	while (hi < n && before(&s[hi], tid, time)) {
		lo = hi + 1;
		hi += step;
		step <<= 1;
	}
	hi = SP_MIN(hi, n);
	return lo + SP_PARTITION(hi - lo, i, before(&s[lo + i], tid, time));
}

void correlate(struct corr_sample *samples, size_t nr_samples, struct corr_span *spans, size_t nr_spans)
{
	/* Per thread, where its last span's samples began: spans in order of start go on from there. */
	struct u64_map at = {};

	sort_n(samples, nr_samples, sizeof(*samples), cmp_sample);
	for (size_t i = 0; i < nr_spans; i++) {
		struct corr_span *sp = &spans[i];
		uint64_t *c = u64_map_get(&at, sp->tid, true);
		size_t a, b;

		if (c && *c && *c - 1 <= nr_samples && (*c == 1 || before(&samples[*c - 2], sp->tid, sp->start)))
			a = lower_from(samples, nr_samples, *c - 1, sp->tid, sp->start);
		else
			a = lower(samples, nr_samples, sp->tid, sp->start);
		if (c)
			*c = a + 1;
		/* end is inclusive: the first sample after it is at end + 1 */
		b = sp->end == (__u64)-1 ? lower_from(samples, nr_samples, a, sp->tid + 1, 0)
					 : lower_from(samples, nr_samples, a, sp->tid, sp->end + 1);
		if (sp->end < sp->start)
			b = a;
		sp->first = a;
		sp->count = b > a ? b - a : 0;
	}
	u64_map_free(&at);
}
