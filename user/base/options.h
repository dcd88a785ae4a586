/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Command-line parsing for every subcommand: pure functions from argv to a
 * struct, so that unit tests cover them without BPF or root.  Errors are one
 * sentence naming the flag and the value.
 */
#ifndef SP_OPTIONS_H
#define SP_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "parse.h"

/* Returned by the parsers when --help was asked for and printed. */
#define OPT_HELP 1

struct record_opts {
	struct int_list pids, tids, cpus;
	uint64_t freq, period;	/* one of them; freq defaults to 999 */
	const char *events;	/* -e, NULL: cycles with cpu-clock fallback */
	bool callgraph;		/* -g or --call-graph */
	/* --call-graph dwarf[,SIZE]: user registers and SIZE bytes of user stack, 0 for fp */
	uint32_t dwarf_stack;
	const char **spans;	/* --span, repeatable */
	int nr_spans;
	uint64_t span_min_us;
	const char *span_counters; /* what spans carry; task-clock,context-switches by default */
	uint64_t span_buffer_kb;   /* the span ring, a power of two */
	bool raw_tp;		   /* --raw-tp: raw tracepoints where there is a choice */
	bool otel;		   /* --otel: read OTEP 4947 thread context at each sample */
	bool offcpu;		   /* --off-cpu */
	int64_t offcpu_thresh_ms;  /* --off-cpu-thresh, -1 when not given */
	uint64_t offcpu_entries;   /* --off-cpu-entries: stacks and sums kept in BPF */
	double duration;	/* -d, 0: until CMD exits or a signal */
	const char *output;	/* -o */
	uint64_t mmap_pages;	/* -m, per CPU */
	uint64_t max_threads;
	bool no_buildid_cache;	/* -N: keep no copies of files the report could not find */
	char **cmd;		/* after --, NULL-terminated */
	int verbose;
};

int record_parse_args(int argc, char **argv, struct record_opts *o, char *err, size_t errlen);
void record_opts_free(struct record_opts *o);
void record_usage(FILE *out);

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
	char **cmd;
	int verbose;
};

int stat_parse_args(int argc, char **argv, struct stat_opts *o, char *err, size_t errlen);
void stat_opts_free(struct stat_opts *o);
void stat_usage(FILE *out);

#endif
