// SPDX-License-Identifier: GPL-2.0
#include <stdlib.h>

#include "correlate.h"
#include "util.h"

static int cmp_sample(const void *a, const void *b)
{
	const struct corr_sample *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->time > y->time) - (x->time < y->time);
}

/* First sample not before (tid, time). */
static size_t lower(const struct corr_sample *s, size_t n, __u32 tid, __u64 time)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s[mid].tid < tid || (s[mid].tid == tid && s[mid].time < time))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void correlate(struct corr_sample *samples, size_t nr_samples, struct corr_span *spans, size_t nr_spans)
{
	sort_n(samples, nr_samples, sizeof(*samples), cmp_sample);
	for (size_t i = 0; i < nr_spans; i++) {
		struct corr_span *sp = &spans[i];
		size_t a = lower(samples, nr_samples, sp->tid, sp->start);
		/* end is inclusive: the first sample after it is at end + 1 */
		size_t b = sp->end == (__u64)-1 ? lower(samples, nr_samples, sp->tid + 1, 0)
						: lower(samples, nr_samples, sp->tid, sp->end + 1);

		if (sp->end < sp->start)
			b = a;
		sp->first = a;
		sp->count = b > a ? b - a : 0;
	}
}
