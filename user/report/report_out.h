/* SPDX-License-Identifier: GPL-2.0 */
/* The outputs of `spanperf report`, each over a loaded profile. */
#ifndef SP_REPORT_OUT_H
#define SP_REPORT_OUT_H

#include <stdbool.h>
#include <stdio.h>

#include "profile.h"

/* SK_ATTR: attr:NAME, the value of the OTel context's attribute NAME (record --otel). */
/*
 * SK_WAKER: who ended an off-CPU block (record --off-cpu: spanperf:waker samples); on-CPU rows have none.
 * SK_SRCLINE: file:line of the sampled address, as perf's srcline (profile_opts.srclines).
 */
enum sort_key { SK_COMM, SK_PID, SK_TID, SK_DSO, SK_SYM, SK_TRACE, SK_SPAN, SK_ATTR, SK_WAKER, SK_SRCLINE, SK_MAX };

struct table_opts {
	enum sort_key keys[SK_MAX];
	int nr_keys;
	bool json;
	bool callgraph;
	double min_pct; /* rows under this share are left out of the text table */
	char attr[128];	/* SK_ATTR's attribute name */
};

/* "comm,dso,sym" (or attr:NAME, once) into keys; -EINVAL on an unknown or repeated key. */
int parse_sort_keys(const char *s, struct table_opts *o);
/* Whether a key is asked for. */
bool has_sort_key(const struct table_opts *o, enum sort_key k);

/* perf report --stdio's table, or its rows as JSON lines. */
int report_table(const struct profile *p, const struct table_opts *o, FILE *out);
/*
 * flamegraph.pl's input: "comm;root;...;leaf count" per distinct stack;
 * stacks split by span (profile__load_spans) start with their spans' labels.
 */
/*
 * wakers: each off-CPU stack that names its waker goes on with ";--;", the
 * waker's frames from the leaf back to the root, and its name: bcc
 * offwaketime's form, so that the waker stands upside down on the blocked
 * stack in a flame graph.
 */
int report_folded(const struct profile *p, FILE *out, bool wakers);
/* A self-contained SVG flame graph with tooltips, zoom and search. */
int report_flamegraph(const struct profile *p, const char *title, FILE *out);
/* A gzipped pprof Profile protobuf. */
int report_pprof(const struct profile *p, FILE *out);

#endif
