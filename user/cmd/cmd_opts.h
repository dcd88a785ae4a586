/* SPDX-License-Identifier: GPL-2.0 */
/*
 * argv to each module's opts struct, by the tables of base/options.h:
 * record's to struct record_opts (record/record_opts.h), stat's to stat_opts
 * (live/stat_opts.h), report's to report_opts (report/report.h), annotate's to
 * spans_report_opts (report/report_spans.h).  Pure functions, so that unit
 * tests cover them without BPF or root (but report --force, which lifts
 * the owner checks for the process).  Each returns 0, OPT_HELP after the
 * usage, or -errno with one sentence in err.
 */
#ifndef SP_CMD_OPTS_H
#define SP_CMD_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "options.h"
#include "profile_diff.h"
#include "record.h"
#include "report.h"
#include "report_spans.h"
#include "stat.h"

int record_parse_args(int argc, char **argv, struct record_opts *o, char *err, size_t errlen);
void record_usage(FILE *out);

int stat_parse_args(int argc, char **argv, struct stat_opts *o, char *err, size_t errlen);
void stat_usage(FILE *out);

/* report's argv: the module's options, and the verbosity cmd/ sets for the process. */
struct report_args {
	struct report_opts o;
	int verbose;
};

int report_parse_args(int argc, char **argv, struct report_args *a, char *err, size_t errlen);
void report_usage(FILE *out);

/* annotate's argv: the spans' options, or the page (--html) or stacks (--format folded) instead. */
struct annotate_args {
	struct spans_report_opts o;
	const char *html;
	bool folded;
	bool why_slow; /* --why-slow, with --span-name and --slowest in why */
	struct why_opts why;
};

int annotate_parse_args(int argc, char **argv, struct annotate_args *a, char *err, size_t errlen);
void annotate_usage(FILE *out);

/* diff's argv: BASELINE and NEW with the comparison's options, and the verbosity. */
struct diff_args {
	struct diff_opts o;
	int verbose;
};

int diff_parse_args(int argc, char **argv, struct diff_args *a, char *err, size_t errlen);
void diff_usage(FILE *out);

struct list_args {
	bool all; /* --all: unsupported events too, and every tracepoint */
};

int list_parse_args(int argc, char **argv, struct list_args *a, char *err, size_t errlen);
void list_usage(FILE *out);

struct probe_args {
	int verbose;
};

int probe_parse_args(int argc, char **argv, struct probe_args *a, char *err, size_t errlen);
void probe_usage(FILE *out);

/*
 * After a parser returned e != 0: says err unless --help was asked for;
 * the exit status (0 after --help, else 1).
 */
int cmd_parse_failed(int e, const char *err);

/* --percent-limit PCT (report, diff, top): from 0 to 100; 0 or -EINVAL with err. */
int cmd_percent_limit(const char *arg, double *pct, char *err, size_t errlen);

/* --why-slow's --slowest PCT (report and annotate): above 0 and below 100; 0 or -EINVAL with err. */
int cmd_slowest(const char *arg, double *pct, char *err, size_t errlen);

/* Appends arg to a repeatable option's list (--span): 0, or -ENOMEM with the list as it was. */
int cmd_push_arg(const char ***list, int *nr, const char *arg);

#endif
