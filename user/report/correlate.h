/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The join of spans with samples: each span gets the samples of its thread
 * whose time falls in [start, end].  Samples are sorted once by (tid, time);
 * each span then takes two binary searches, so 1M spans by 1M samples is a
 * sort plus 2M searches, not a product.
 */
#ifndef SP_CORRELATE_H
#define SP_CORRELATE_H

#include <stddef.h>
#include <linux/types.h>

struct corr_sample {
	__u32 tid;
	__u32 idx; /* the caller's own index */
	__u64 time;
};

struct corr_span {
	__u32 tid;
	__u64 start, end;
	/* out: the samples inside are sorted[first .. first + count) */
	size_t first, count;
};

/* Sorts samples in place by (tid, time), then fills first/count of each span. */
void correlate(struct corr_sample *samples, size_t nr_samples, struct corr_span *spans, size_t nr_spans);

#endif
