/* SPDX-License-Identifier: GPL-2.0 */
/*
 * spanperf stat: per-thread counters from the BPF switch program
 * (record/counters.h), read as the run goes and at its end, printed the way
 * perf stat prints them or as JSON lines with perf stat -j's fields, and
 * served to Prometheus with --serve (stat_serve.h).  cmd/ fills struct
 * stat_opts from argv and calls stat__run().
 */
#ifndef SP_STAT_H
#define SP_STAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "parse.h"

struct stat_opts {
	struct int_list pids, tids;
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
	const char **spans;	/* --span SPEC (with --serve): latency histograms per span name */
	int nr_spans;
	char **cmd;
	int verbose;
};

/* The defaults: the whole host, perf stat's events, a map of 32768 threads, 50 series. */
void stat_opts_init(struct stat_opts *o);
/* Frees what the parser allocated (the id lists, the --span list); accepts NULL. */
void stat_opts_free(struct stat_opts *o);

/* --serve's value: PORT, :PORT, ADDR:PORT or [ADDR6]:PORT; 0, or -EINVAL with one sentence in err. */
int stat_serve_addr_check(const char *addr, char *err, size_t errlen);
/* --web-config's file, read and checked now, before anything runs: 0, or -errno with one sentence in err. */
int stat_web_config_check(const char *path, char *err, size_t errlen);

/*
 * Counts as o says until -d, CMD's exit or a signal, printing -I's reports
 * on the way and the totals at the end.  0 and the exit code to pass on in
 * *exit_code (CMD's), or -errno once said why.
 */
int stat__run(const struct stat_opts *o, int *exit_code);

#endif
