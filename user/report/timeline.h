/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A recording laid out in time, for outputs that draw it (report --html,
 * --speedscope): every sample with its time and stack (the profile's
 * ticks), and every span as report --spans joins it, with the same sample
 * count, top functions and wall split as its JSON line: an output of the
 * profile and of the span join, read after the one pass that built both.
 *
 * Large files are thinned to limits the caller gives: every k-th sample of
 * each thread is kept, and the longest spans; thinned says how.
 */
#ifndef SP_TIMELINE_H
#define SP_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "hash.h"
#include "profile.h"
#include "spanperf_abi.h"
#include "util.h"

#define TL_TOP 5

struct tl_span {
	__u32 tid, pid;
	__u64 start, end;
	__u64 samples;
	size_t name, source;	 /* into pool */
	bool unfinished, ids_recorded, has_counters;
	int ntop;
	size_t top[TL_TOP];	 /* into pool */
	__u64 top_n[TL_TOP];
	__u64 counters[SP_MAX_COUNTERS];
	size_t wall;		 /* into walls: the JSON members of its wall split */
	char trace_id[33], span_id[17];
};

struct tl_thread {
	__u32 tid, pid;
	size_t comm;		 /* into pool: the thread's last name */
	struct ptick *ticks;	 /* on-CPU samples and off-CPU blocks, by time; kept ones only (the profile's) */
	size_t nr_ticks;
	__u64 samples;		 /* on-CPU, before thinning */
};

struct timeline {
	struct profile *p;	 /* the caller's; its ticks are sorted by thread and time in place */
	struct strpool pool;	 /* every name the outputs print */
	struct strpool walls;
	struct tl_span *spans;	 /* by start */
	size_t nr_spans, cap_spans;
	__u64 spans_total;	 /* before the longest were kept */
	size_t ctr_names[SP_MAX_COUNTERS]; /* into pool */
	int nr_ctr;
	struct tl_thread *threads; /* by tid */
	size_t nr_threads;
	__u64 sample_every;	 /* 1: every sample is kept */
	__u64 t0, t1;		 /* the first and last time of anything */
};

struct tl_limits {
	__u64 max_samples;	 /* on-CPU samples and off-CPU blocks */
	__u64 max_spans;
};

/*
 * From a profile loaded with profile_opts.timeline and the span view of the
 * same pass (v is not kept: what the page shows of a span is copied); 0 or
 * -ENOMEM.
 */
struct spans_view;
int timeline__build(struct timeline *t, struct profile *p, const struct spans_view *v, const struct tl_limits *lim);
/* Accepts a timeline never built (zeroed); the profile stays the caller's. */
void timeline__free(struct timeline *t);

/*
 * A recording's timeline, as report --html and --speedscope make it (and
 * their fuzz targets, so that these read the same pass): the session over
 * input with sopts, the profile keeping each sample's time and the span join
 * so in the one pass, the profile cut to table's limits unless table is
 * NULL, then the timeline within lim.  0 or -errno with err saying why where
 * anything says (else empty); either way timeline_read__free after.
 */
struct session_opts;
struct span_report;
struct spans_report_opts;
struct table_opts;
struct timeline_read {
	struct session *sess;
	struct profile *p;
	struct span_report *sr;
	struct timeline t;
};
int timeline__read(struct timeline_read *r, const char *input, const struct session_opts *sopts,
		   const struct spans_report_opts *so, const struct table_opts *table, const struct tl_limits *lim,
		   char *err, size_t errlen);
/* Accepts one zeroed or half made; zeroes it. */
void timeline_read__free(struct timeline_read *r);

#endif
