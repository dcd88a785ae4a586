/* SPDX-License-Identifier: GPL-2.0 */
/*
 * report's filters, with perf report's spellings and rules: --comms,
 * --pids, --tids, --dsos and --symbols (comma lists, where an entry
 * file://PATH stands for PATH's lines, as perf's strlist reads them) and
 * --time (perf's time ranges, below).  The session applies them once
 * (session_opts.filter), so that every output reads the same samples and
 * spans.
 *
 * As in perf report, the five lists leave the samples they refuse out of
 * every output but in the total that a table's percentages are of (perf's
 * default --percentage absolute), while --time leaves samples out
 * altogether (the total is of the range).  A sample's comm is its thread's
 * name then; its dso and symbol are those of its sampled address, as
 * perf's al->map and al->sym: the dso by its short or its long name.
 */
#ifndef SP_REPORT_FILTER_H
#define SP_REPORT_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "hash.h"
#include "parse.h"

/* [start, end] in CLOCK_MONOTONIC ns, as perf.data stamps; 0 leaves that side open. */
struct time_range {
	__u64 start, end;
};

struct name_set {
	struct strpool pool;
	bool on; /* given (an empty set then keeps nothing) */
};

struct report_filter {
	struct name_set comms, dsos, syms;
	struct int_list pids, tids;
	const char *time; /* --time as given; its ranges are resolved against a file's sample times */
};

/*
 * A comma list into set, for option opt (its name for err): entries as
 * they are, file://PATH for PATH's lines.  Repeating the option adds to
 * the set.  0, or -errno with one sentence in err.
 */
int name_set_add(struct name_set *set, const char *arg, const char *opt, char *err, size_t errlen);
bool name_set_has(const struct name_set *set, const char *name);

/*
 * perf report's --time forms (tools/perf/util/time-utils.c), into ranges
 * (an array the caller frees):
 *   START,END        seconds with up to 9 decimals, as perf script prints
 *                    the times; either side may be left out ("10.5," ",11")
 *   "S1,E1 S2,E2"    several ranges, separated by spaces, in order, apart
 *   P%               the first P percent of [first, last], the file's
 *                    first and last sample times (its SAMPLE_TIME feature)
 *   P%/N[,...]       the Nth slice of P percent (several, comma-separated)
 *   A%-B%[,...]      from A to B percent (several, comma-separated)
 * first and last matter only for the percent forms; both 0 (a file without
 * them) makes those an error.  0, or -EINVAL with one sentence in err.
 */
int time_ranges_parse(const char *s, __u64 first, __u64 last, struct time_range **out, size_t *n, char *err,
		      size_t errlen);
/* Whether time t is in one of the ranges, as perf_time__ranges_skip_sample decides (t 0: kept). */
bool time_ranges_keep(const struct time_range *r, size_t n, __u64 t);

/* Whether any filter is given. */
bool report_filter_active(const struct report_filter *f);
/* Whether any of the five lists is given (the filters that keep refused samples in the total). */
bool report_filter_lists(const struct report_filter *f);
/* Whether --dsos or --symbols is given: a sample must then be symbolized to be kept. */
bool report_filter_by_address(const struct report_filter *f);
void report_filter_free(struct report_filter *f);

#endif
