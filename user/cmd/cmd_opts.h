/* SPDX-License-Identifier: GPL-2.0 */
/*
 * argv to each module's opts struct, by the tables of base/options.h:
 * record's to struct record_opts (record/record.h), stat's to stat_opts.
 * Pure functions, so that unit tests cover them without BPF or root.
 */
#ifndef SP_CMD_OPTS_H
#define SP_CMD_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "options.h"
#include "record.h"

int record_parse_args(int argc, char **argv, struct record_opts *o, char *err, size_t errlen);
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
	const char *serve;	/* --serve [ADDR:]PORT: Prometheus' text format at /metrics */
	uint64_t serve_top;	/* --serve-top: series per metric, the rest summed */
	const char **spans;	/* --span SPEC (with --serve): latency histograms per span name */
	int nr_spans;
	char **cmd;
	int verbose;
};

int stat_parse_args(int argc, char **argv, struct stat_opts *o, char *err, size_t errlen);
void stat_opts_free(struct stat_opts *o);
void stat_usage(FILE *out);

/*
 * After a parser returned e != 0: says err unless --help was asked for;
 * the exit status (0 after --help, else 1).
 */
int cmd_parse_failed(int e, const char *err);

/* Appends arg to a repeatable option's list (--span): 0, or -ENOMEM with the list as it was. */
int cmd_push_arg(const char ***list, int *nr, const char *arg);

#endif
