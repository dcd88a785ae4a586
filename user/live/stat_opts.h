/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What `spanperf stat` asks for, filled from argv by cmd/: the engine
 * (stat.h) runs by it and the printers (stat_print.h) lay out by it, so it
 * stands apart from both.
 */
#ifndef SP_STAT_OPTS_H
#define SP_STAT_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "parse.h"

struct stat_opts {
	struct int_list pids, tids;
	bool all_cpus;		/* -a: the whole host, -- CMD too (only while CMD runs) */
	const char *events;	/* -e, NULL: perf stat's default set */
	bool per_thread;
	uint64_t interval_ms;	/* -I */
	bool json;
	const char *output;	/* -o, NULL: stderr as perf does */
	double duration;
	uint64_t max_threads;
	bool raw_tp;		/* --raw-tp: force the raw_tp twin */
	const char *serve;	/* --serve [ADDR:]PORT: Prometheus' text format at /metrics */
	uint64_t serve_top;	/* --serve-top: series per metric, the rest summed */
	const char *web_config;	/* --web-config FILE: TLS and basic auth for --serve (web_config.h) */
	bool node_perf;		/* --node-perf (with --serve): node_exporter's perf collector series */
	const char **node_tps;	/* --node-perf-tracepoint SUBSYS:EVENT: its node_perf_SUBSYS_EVENT{cpu} too */
	int nr_node_tps;
	const char **spans;	/* --span SPEC (with --serve): latency histograms per span name */
	int nr_spans;
	char **cmd;		/* without -a, -p or -t: CMD and its children are counted, as perf stat counts */
	int verbose;
};

/* The defaults: the whole host, perf stat's events, a map of 32768 threads, 50 series. */
void stat_opts_init(struct stat_opts *o);
/* Frees what the parser allocated (the id lists, the --span list); accepts NULL. */
void stat_opts_free(struct stat_opts *o);

#endif
