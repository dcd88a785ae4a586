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
	return SP_PARTITION(n, i, s[i].tid < tid || (s[i].tid == tid && s[i].time < time));
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
