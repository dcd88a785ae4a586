/* SPDX-License-Identifier: GPL-2.0 */
/* report --spans and annotate: spans joined with their samples, as a table, JSON lines or OTLP JSON. */
#ifndef SP_REPORT_SPANS_H
#define SP_REPORT_SPANS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

#include "spans_view.h"

struct strpool;
struct report_filter;

struct spans_report_opts {
	const char *input;     /* perf.data */
	const char *external;  /* annotate: the spans JSONL, else NULL */
	enum spans_format format; /* --format: text, json or otlp-json */
	bool bpf_samples;      /* add the BPF-side sample count to each JSON line */
	bool none_ok;	       /* a file without spans is not an error (report --html) */
	FILE *out;	       /* where spans_report prints; NULL: stdout */
	double window_s;       /* > 0 (top --spans): the table adds each name's rate, count / window_s */
	bool any_owner;	       /* report --force: a file and perf maps of any owner (session_opts) */
	const struct report_filter *filter; /* report's filters (session_opts.filter), or NULL */
	/*
	 * report --percent-limit: in each span's lists, the functions under
	 * this share of its samples, and the blocked stacks and wakers under
	 * this share of its time off CPU, left out.
	 */
	double min_pct;
};

/* The whole of report --spans and annotate: one pass, the join, the output to stdout. */
int spans_report(const struct spans_report_opts *o, char *err, size_t errlen);

/*
 * The join as a consumer of a session shared with others: new (reads
 * annotate's spans; registers on sess, which must outlive it) before
 * session__run, finish (places and joins) after it, then print (the view
 * in o->format), view or labels.  On error, err says what and where.
 */
struct session;
struct span_report;
int span_report__new(struct span_report **out, struct session *sess, const struct spans_report_opts *o, char *err,
		     size_t errlen);
int span_report__finish(struct span_report *r, char *err, size_t errlen);
int span_report__print(struct span_report *r, FILE *out, char *err, size_t errlen);
void span_report__free(struct span_report *r);
/*
 * After span_report__finish: what the outputs show of the spans, read-only,
 * made at the first call (it names every function the spans hold) and kept
 * until span_report__free; 0 or -ENOMEM.
 */
int span_report__view(struct span_report *r, const struct spans_view **out);

/*
 * Every span report --spans (or annotate) would print, as a label for
 * folded stacks: "span:NAME:SPAN_ID", the span id being the one
 * --format otlp-json writes.  The spans are those of the same reading,
 * placement and clock conversion, so a prefix's samples are the span's.
 */
struct span_label {
	__u32 tid;
	__u64 start, end;
	const char *label; /* in the caller's pool */
};

/* After span_report__finish: the labels (an array the caller frees) in *out; 0 or -ENOMEM. */
int span_report__labels(struct span_report *r, struct strpool *pool, struct span_label **out, size_t *n);

#endif
