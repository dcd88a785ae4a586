/* SPDX-License-Identifier: GPL-2.0 */
/*
 * report --spans --why-slow: for each span name, its slowest spans against
 * the rest, over the span join's read-only view (spans_view.h), so that it
 * works alike for --span, --otel and annotated external spans.
 *
 * What a function "explains" of the difference: the time a slow span spent
 * in it, on average, less the time a span of the rest did.  Summed over
 * every place the time went, that is the difference of the two groups' mean
 * durations; the functions and wakers are listed in that order.
 */
#ifndef SP_WHY_SLOW_H
#define SP_WHY_SLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

#include "spans_view.h"

struct spans_report_opts;

#define WHY_SLOW_PCT 10.0 /* --slowest's default */
#define WHY_FUNCS 10	  /* functions shown per name */
#define WHY_WAKERS 5	  /* wakers shown per name */

struct why_opts {
	const char *span_name; /* --span-name: that name only, else every name */
	double slowest_pct;    /* --slowest: the slow group, percent of each name's spans (0: WHY_SLOW_PCT) */
	bool json;
};

/* One group's figures: its spans' count and median duration, and the means of their wall splits. */
struct why_group {
	size_t count;
	__u64 p50_ns;
	double mean_ns;			  /* of the durations */
	double on_ns, runq_ns, sleep_ns, blocked_ns; /* per span */
	size_t split;			  /* spans with a wall split (runq, sleep, blocked hold for these) */
	double total_ns;		  /* the durations summed */
};

/*
 * A place the time went: a function on CPU (the leaf of samples), or off
 * CPU where a span blocked ("NAME [off-cpu]", by the first user frame of
 * its heaviest blocking stack).
 */
struct why_func {
	const char *sym;
	bool off_cpu;
	double slow_ns, rest_ns; /* summed over each group's spans */
	double slow_share, rest_share, delta; /* of the group's summed durations */
	double explains_ns;	 /* per span: slow_ns / slow count - rest_ns / rest count */
};

/* Who ended a group's waits: a comm, and the stack it ended the slow group's longest wait from. */
struct why_waker {
	const char *comm;
	__u32 tid;
	const struct spans_stack *stack; /* the first row's that had it */
	double slow_ns, rest_ns;
	double explains_ns;
	const char *blocked_in; /* the wait it ended most, in the slow group */
};

struct why_name {
	const char *name;
	struct why_group slow, rest;
	struct why_func *func; /* most explained first; the positive ones */
	size_t nr_func;
	struct why_waker *waker;
	size_t nr_waker;
};

struct why_slow {
	double pct;
	struct why_name *names; /* in the view's order of names */
	size_t nr_names;
};

/*
 * The comparison of each name's spans (o->span_name: that one; -ENOENT if
 * no span has it); 0, -ENOENT or -ENOMEM.  v must outlive w.
 */
int why_slow__build(struct why_slow *w, const struct spans_view *v, const struct why_opts *o);
void why_slow__free(struct why_slow *w);
/* As text, or (json) one object per name. */
int why_slow__print(const struct why_slow *w, bool json, FILE *out);

/* report --spans --why-slow: one pass, the join, the comparison to stdout; 0 or -errno with err written. */
int why_slow_report(const struct spans_report_opts *so, const struct why_opts *o, char *err, size_t errlen);

#endif
