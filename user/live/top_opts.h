/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What `spanperf top` asks for, filled from argv by cmd/: the engine
 * (top.h) runs by it and the screens (top_view.h) draw by it, so it stands
 * apart from both.
 */
#ifndef SP_TOP_OPTS_H
#define SP_TOP_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "parse.h"
#include "report_filter.h"

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

#endif
