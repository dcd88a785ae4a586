/* SPDX-License-Identifier: GPL-2.0 */
/*
 * spanperf diff: two recordings compared as perf diff compares them.  Each
 * file's table (report's rows, by the same sort keys) is built on its own;
 * rows pair across the files by what they show (a symbol by its name, as
 * perf diff's sym sort does), and a row's figures are its shares of its
 * own file's period, so that recordings of other hosts, rates or events
 * compare.  The text is perf diff's (Baseline, Delta Abs, ordered by the
 * delta's size, rows only in the baseline last); the folded stacks and the
 * differential flame graph are report_out.h's.
 */
#ifndef SP_PROFILE_DIFF_H
#define SP_PROFILE_DIFF_H

#include <stdbool.h>
#include <stdio.h>

#include "profile.h"
#include "report_out.h"

struct diff_opts {
	const char *baseline, *input; /* BASELINE and NEW */
	struct table_opts table;      /* --sort, --format json, --percent-limit (min_pct) */
	const char *flame;	      /* --flamegraph FILE, or NULL */
	bool folded;		      /* --folded: the stacks with both counts, to stdout */
};

/*
 * A row of either file, or both: base and cur are the file's (heaviest)
 * table row of this key, NULL where the file has none.
 */
struct diff_row {
	const struct table_row *base, *cur;
	__u64 base_samples, new_samples, base_period, new_period; /* every table row of the key, summed */
	double base_pct, new_pct; /* 0 where absent */
	double delta;		  /* new_pct - base_pct */
	char *key;		  /* the cells' texts, for pairing */
};

struct profile_diff {
	struct table base, cur;
	struct diff_row *rows; /* in perf diff's order */
	size_t nr_rows;
};

/* The rows of both profiles by o's keys, paired and ordered (both must outlive d); 0 or -ENOMEM. */
int profile_diff__build(struct profile_diff *d, const struct profile *base, const struct profile *cur,
			const struct table_opts *o);
void profile_diff__free(struct profile_diff *d);
/* perf diff's table (o->json: a JSON object per row), the rows under o->min_pct in both files left out. */
int profile_diff__print(const struct profile_diff *d, FILE *out);
/*
 * What makes the two recordings unlike, beyond their samples: "hosts a and
 * b, rates 999 Hz and 4999 Hz, ..." into buf; false (buf "") when nothing does.
 */
bool profile_diff__unlike(const struct profile *base, const struct profile *cur, char *buf, size_t len);

/* The command: both files read, then the outputs asked for; 0, or 1 after saying why (pr_err). */
int diff_run(const struct diff_opts *o);

#endif
