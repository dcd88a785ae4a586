/* SPDX-License-Identifier: GPL-2.0 */
/*
 * stat's output: a reading of the counters printed as perf stat prints it,
 * or as perf stat -j's JSON lines.  Pure: no BPF, so that unit tests cover
 * the figures and their layout.
 */
#ifndef SP_STAT_PRINT_H
#define SP_STAT_PRINT_H

#include <stdio.h>
#include <linux/types.h>

#include "counters.h"
#include "stat_opts.h"

/* Per event: the count and the enabled and running times perf scales it by. */
struct event_sums {
	__u64 value[SP_MAX_COUNTERS], enabled[SP_MAX_COUNTERS], running[SP_MAX_COUNTERS];
};

/* One reading: per thread, busiest first, and the sums (the host's own without -p or -t). */
struct stat_reading {
	struct thread_counts *t;
	int n;
	struct event_sums tot;
};

/* The events a reading holds, in the order of its values. */
struct stat_events {
	const struct counter_event *ev;
	int nr;
};

/* Busiest first by the first counter, then by tid: the order of the rows. */
int stat_cmp_threads(const void *a, const void *b);

/*
 * One report of rd as o asks (text or JSON, totals or per thread): an
 * interval's, stamped interval seconds into the run, or with interval < 0
 * the final one, titled, over elapsed_s seconds.
 */
void stat_print(FILE *out, const struct stat_opts *o, const struct stat_events *evs, const struct stat_reading *rd,
		double interval, double elapsed_s);

#endif
