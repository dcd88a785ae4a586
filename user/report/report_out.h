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
	/* top: only the rows whose text line holds filter (NULL or "": all), then the first max_rows (0: all) */
	const char *filter;
	size_t max_rows;
};

/* "comm,dso,sym" (or attr:NAME, once) into keys; -EINVAL on an unknown or repeated key. */
int parse_sort_keys(const char *s, struct table_opts *o);
/* Whether a key is asked for. */
bool has_sort_key(const struct table_opts *o, enum sort_key k);

/*
 * The table as a model: the profile's stacks grouped by the sort keys into
 * rows, busiest first (by period, then samples).  report prints it as perf
 * report --stdio does, or as JSON lines; top draws the same rows.
 */
struct table_row {
	const struct pstack *rep; /* a stack with this row's keys, which the cells show */
	const struct pfunc *leaf; /* its sampled function (the dso and sym columns) */
	__u64 count, period;
	double pct;		  /* of the profile's period */
	size_t *stacks;		  /* callgraph: the row's stacks (into p->stacks), for its chains */
	size_t nr_stacks, cap_stacks;
};

struct table {
	const struct profile *p;
	struct table_opts o;
	struct table_row *rows;
	size_t nr_rows;
	size_t nr_all; /* rows before the filter and max_rows */
};

/* One distinct call chain of a row: a stack with those frames, and their period. */
struct table_chain {
	const struct pstack *s;
	__u64 period;
};

/*
 * What key k shows for row r, as the table prints it (sym without its
 * "[k] "): NULL where there is none; *number (may be NULL): JSON writes it
 * as a number.  buf may hold the text.
 */
const char *table_cell_text(const struct table *t, const struct table_row *r, enum sort_key k, char *buf, size_t len,
			    bool *number);
/*
 * Key k's cell of row r as a JSON value (null, a number or a string) into b;
 * sym's is followed by its "kernel" member, as every JSON row carries it.
 */
struct sbuf;
void table_cell_json(const struct table *t, const struct table_row *r, enum sort_key k, struct sbuf *b);
/* A key's column head ("Shared Object"; attr:NAME's NAME), and its JSON field's name ("dso"). */
const char *sort_key_head(const struct table_opts *o, enum sort_key k);
const char *sort_key_json(enum sort_key k);

/* The rows of p's on-CPU stacks (p must outlive t).  0 or -ENOMEM. */
int table__build(struct table *t, const struct profile *p, const struct table_opts *o);
void table__free(struct table *t);
/*
 * report --percent-limit, for every output: the stacks whose table row
 * (by o's sort keys, on-CPU and off-CPU each by their own) holds under
 * o->min_pct of the total leave the profile, and its timeline, for its
 * filtered counts, so that the tables' percentages stay of the whole.
 * After profile__finish; 0 or -ENOMEM.  Here, not in profile.c: it
 * cuts by the table's rows, and the profile stands below the table.
 */
int table__limit(struct profile *p, const struct table_opts *o);
/* "# Samples: ..." and the column heads, as perf report --stdio begins. */
void table_print_header(const struct table *t, FILE *out);
/* The column heads alone: "# Overhead  Samples  Command ...". */
void table_print_columns(const struct table *t, FILE *out);
/* A row's line, then (callgraph, and p has chains) its chains as perf report -g draws them. */
void table_print_row(const struct table *t, const struct table_row *r, FILE *out);
/* A row as one JSON line. */
int table_print_row_json(const struct table *t, const struct table_row *r, FILE *out);
/* A row's distinct chains, heaviest first, in an array the caller frees (*out, even on error). */
int table_row_chains(const struct table *t, const struct table_row *r, struct table_chain **out, size_t *nr);

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
/*
 * spanperf diff's: each stack of either file with both counts, "stack
 * BASELINE_COUNT NEW_COUNT", as flamegraph.pl's difffolded.pl writes them.
 */
int report_folded_diff(const struct profile *base, const struct profile *p, FILE *out);
/*
 * A differential flame graph: p's frames at p's widths, each coloured by
 * how its share of its file's samples changed from base's (red grew, blue
 * shrank, white held).  Frames only in base have no width.
 */
int report_flamegraph_diff(const struct profile *base, const struct profile *p, const char *title, FILE *out);
/* A gzipped pprof Profile protobuf. */
int report_pprof(const struct profile *p, FILE *out);

#endif
