/* SPDX-License-Identifier: GPL-2.0 */
/*
 * spanperf top: perf top's refreshing table from the recorder's own BPF
 * sampling, read live (live_record.h).  Each refresh is a window of -d
 * seconds: a profile (or, with --spans, the span join) built as its
 * records come, drawn from the table's rows, and freed when the next one
 * is drawn.  Nothing goes to a file.
 */
#ifndef SP_TOP_H
#define SP_TOP_H

#include <stdbool.h>
#include <stdint.h>

#include "parse.h"
#include "report_filter.h"

/* What `spanperf top` asks for; cmd/ fills it from argv. */
struct top_opts {
	struct int_list pids, tids, cpus;
	uint64_t freq;
	const char *events;
	bool callgraph;
	const char *sort;
	double delay;		/* -d: seconds between refreshes */
	uint64_t entries;	/* -E */
	uint64_t iterations;	/* -n: refreshes, then exit (0: until q or a signal) */
	bool stdio, batch;
	bool spans, offcpu;	/* --spans: the span table; --off-cpu adds where spans blocked */
	const char **span_texts; /* --span, as record's */
	int nr_spans;
	/* --comms, --dsos, --symbols, as perf top's (report's rules); --percent-limit */
	struct report_filter filter;
	double min_pct;
	int verbose;
};

/* top's defaults: the whole host at 999 Hz, a refresh every 2 s, 20 rows. */
void top_opts_defaults(struct top_opts *o);
void top_opts_free(struct top_opts *o);

/*
 * Runs top until -n refreshes, q or a signal; says what went wrong, once.
 * Returns the exit status: 0, or 1.
 */
int top_run(struct top_opts *o, int argc, char **argv);

#endif
