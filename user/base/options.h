/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Command-line parsing, one way for every subcommand: a command states its
 * options as a table of struct opt_def (name, letter, how the value is read,
 * where it goes in the command's opts struct), and opts_parse() turns argv
 * into that struct.  Pure functions, so that unit tests cover them without
 * BPF or root.  Errors are one sentence naming the flag and the value.
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

/* How an option's value is read, and what is stored at opt_def.off. */
enum opt_type {
	OPT_T_NONE,	/* no value; accepted and ignored (e.g. -a, the default) */
	OPT_T_FLAG,	/* no value; bool = true */
	OPT_T_SET,	/* no value; int = lo: one choice of an enum (--inline, --no-inline) */
	OPT_T_STR,	/* const char *, not empty: "FLAG <bad>" otherwise */
	OPT_T_ANY_STR,	/* const char *, as given, empty too (e.g. --debuginfod '': no servers) */
	OPT_T_U64,	/* uint64_t from lo to hi */
	OPT_T_POW2,	/* uint64_t, a power of two from lo to hi */
	OPT_T_IDS,	/* struct int_list of process or thread ids */
	OPT_T_CPUS,	/* struct int_list of CPUs, ranges allowed */
	OPT_T_SECONDS,	/* double, a positive number of seconds */
	OPT_T_VERBOSE,	/* no value; int verbosity: -v counts up, -q is -1 */
	OPT_T_QUIET,
	OPT_T_HELP,	/* no value; prints the usage to stdout, parse returns OPT_HELP */
	OPT_T_FN,	/* fn(arg, opts, err, errlen) */
	OPT_T_FN_FLAG,	/* no value; fn(NULL, opts, err, errlen) */
	OPT_T_FN_OPTARG, /* long only, --name or --name=VALUE: fn(VALUE or NULL, ...), as perf's optional values */
};

struct opt_def {
	const char *name;	/* the long name, without --; NULL for a letter only */
	int letter;		/* the short one, or 0; a row with neither ends the table */
	enum opt_type type;
	size_t off;		/* of the value in the opts struct */
	uint64_t lo, hi;	/* OPT_T_U64, OPT_T_POW2 */
	/* The error's end, after "-L 'VALUE' " ("--name 'VALUE' " without a letter). */
	const char *bad;
	int (*fn)(const char *arg, void *opts, char *err, size_t errlen);
};

/* The rows of record and stat: whom to watch, how long, the per-thread map, the hooks. */
#define OPT_DEFS_RUN(T)                                                                              \
	{ .name = "all-cpus", .letter = 'a', .type = OPT_T_NONE },                                      \
	{ .name = "pid", .letter = 'p', .type = OPT_T_IDS, .off = offsetof(T, pids),                 \
	  .bad = "is not a comma-separated list of process ids" },                                      \
	{ .name = "tid", .letter = 't', .type = OPT_T_IDS, .off = offsetof(T, tids),                 \
	  .bad = "is not a comma-separated list of thread ids" },                                       \
	{ .name = "duration", .letter = 'd', .type = OPT_T_SECONDS, .off = offsetof(T, duration),    \
	  .bad = "is not a positive number of seconds" },                                               \
	{ .name = "max-threads", .type = OPT_T_U64, .off = offsetof(T, max_threads), .lo = 1,        \
	  .hi = 1 << 24, .bad = "is not a number from 1 to 16777216" },                                 \
	{ .name = "raw-tp", .type = OPT_T_FLAG, .off = offsetof(T, raw_tp) }
#define OPT_DEFS_OUTPUT(T)                                                                           \
	{ .name = "output", .letter = 'o', .type = OPT_T_STR, .off = offsetof(T, output),            \
	  .bad = "needs a file name" }
#define OPT_DEFS_VERBOSITY(T)                                                                        \
	{ .name = "quiet", .letter = 'q', .type = OPT_T_QUIET, .off = offsetof(T, verbose) },        \
	{ .name = "verbose", .letter = 'v', .type = OPT_T_VERBOSE, .off = offsetof(T, verbose) },    \
	{ .name = "help", .letter = 'h', .type = OPT_T_HELP }

/* opts_parse's flags. */
#define OPTS_STOP_AT_ARG 1 /* the first argument that is not an option starts CMD, as perf's '+' */
/* A command that takes no argument: the first that is not an option is refused as an unknown option. */
#define OPTS_NO_ARGS 2

/*
 * Parses argv[1..] by the table defs (ended by a row of zeros) into
 * opts; *seen gets bit i for each defs[i] given (up to 64 rows).  0 with
 * optind at the first argument left, OPT_HELP after usage(stdout), or
 * -EINVAL with err set.
 */
int opts_parse(const struct opt_def *defs, unsigned flags, int argc, char **argv, void *opts, uint64_t *seen,
	       void (*usage)(FILE *out), char *err, size_t errlen);
/* The index of the row named name in defs, for *seen. */
int opts_index(const struct opt_def *defs, const char *name);

/* What record and stat share after the flags: one filter, then `-- CMD ARGS`. */
int opts_target(const struct int_list *pids, const struct int_list *tids, int argc, char **argv, char ***cmd,
		char *err, size_t errlen);

#endif
