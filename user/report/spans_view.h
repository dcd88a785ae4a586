/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What report --spans and annotate print, as data: the span join
 * (report_spans.c) fills a view once it has joined, and its outputs
 * (spans_text.c, spans_json.c, spans_otlp.c, and the page's timeline) read
 * that view and nothing else.  Every figure an output prints is here,
 * already decided: a printer formats, it does not join, look up or count.
 */
#ifndef SP_SPANS_VIEW_H
#define SP_SPANS_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

#include "hash.h"
#include "span_codec.h"

struct sbuf;

/* --format of report --spans and annotate: the table, JSON lines, or one OTLP JSON request. */
enum spans_format { SPANS_TEXT, SPANS_JSON, SPANS_OTLP };

#define SPANS_TOP_N 5 /* top functions a span's JSON line and OTLP span list */

/*
 * Where a span's wall time went: on CPU, waiting in the run queue, off CPU
 * (asleep and blocked in D); on + runq + off is the span's duration.
 */
struct span_split {
	__u64 on, runq, off, sleep, blocked;
};

/* A leaf function and how many of the samples it holds. */
struct spans_func {
	const char *name;
	__u64 n;
};
/* Most samples first, then by name: for qsort of struct spans_func. */
int spans_func_cmp(const void *a, const void *b);

struct spans_attr {
	const char *key, *value;
};

/* A stack by name from the leaf (context markers left out). */
struct spans_stack {
	const char *const *frame;
	__u32 nr;
	__u64 ns; /* of the span's time off CPU */
};

/* Who ended a span's blocks. */
struct spans_waker {
	const char *comm; /* or [hardirq], [softirq]... for an interrupt */
	__u32 tid;
	struct spans_stack stack;
	bool has_ids; /* it was inside a span that has ids (trace_id, span_id) when it woke this one */
	char trace_id[33], span_id[17];
};

struct spans_row {
	const char *name, *source; /* source: "uprobe", "otel", "external"... */
	size_t kind;		   /* its name's index in view->kind */
	__u32 pid, tid;
	__u64 start, end;
	size_t samples;		   /* its thread's samples inside [start, end] */
	__u64 bpf_samples;	   /* BPF's own count, of the recording's spans */
	bool external;		   /* annotate's: from the spans file, not the recording */
	bool has_counters;	   /* counters[] are its own: not for external spans */
	bool unfinished;	   /* the recording ended inside it */
	__u8 edges;		   /* SPAN_EDGES_SAMPLED, SPAN_END_AT_SWITCH */
	__u64 counters[SP_MAX_COUNTERS]; /* counters[k] is view->ctr_names[k] */
	/* Its ids in hex: the recorded context's, an external span's OTLP-shaped ones, else made up. */
	char trace_id[33], span_id[17];
	bool has_ctx; /* recorded with an OTel context: its ids and attributes are the application's */
	/* An external span's own ids as the JSON value it wrote (a string with quotes, or a number); NULL: none. */
	const char *ext_trace_id, *ext_span_id;
	const struct spans_attr *attr; /* the context's attributes */
	size_t nr_attr;
	const char *service; /* its process's service.name, NULL if it published none */
	const struct spans_func *top; /* every leaf of its samples, most first, then by name */
	size_t nr_top;
	/* Its wall time: the split where it has one, else on CPU (< 0: unknown) and the blocks off it. */
	__s64 on_cpu_ns;
	bool has_split;
	struct span_split split;
	const char *split_how; /* how the split was measured, as the JSON says it; NULL: none */
	__u64 off_ns;	       /* its thread's blocks inside it, where view->offcpu */
	const char *blocked_in; /* the heaviest blocking stack's first user frame (else its leaf), or NULL */
	const struct spans_stack *off_top; /* the stacks it blocked in, heaviest first */
	int nr_off_top;
	const struct spans_waker *woken_by; /* where view->wakers: who ended its blocks, heaviest first */
	int nr_woken_by;
};

/* The spans of one name, as the table sums them up. */
struct spans_kind {
	const char *name, *source; /* source: its last span's */
	size_t count, samples;
	double rate;		   /* count / view->window_s, where that is > 0 */
	__u64 p50, p99, max;	   /* durations, ns */
	__u64 ctr_sum[SP_MAX_COUNTERS];
	__u64 off_ns;		   /* where view->offcpu */
	const char *blocked_in;	   /* its first span's that has one */
	struct span_split split;   /* its spans' splits added up */
	struct spans_func *top;	   /* every leaf of its samples, most first */
	size_t nr_top;
};

/* OTel spans with one value of one attribute. */
struct spans_attr_group {
	const char *key; /* key_len bytes */
	int key_len;
	const char *value;
	size_t count, samples;
	__u64 p50, p99; /* durations, ns */
};

/* The table's figures: what spans_table_build sums up of the rows. */
struct spans_table {
	struct spans_kind *kind; /* one per name, in order of first arrival */
	size_t nr_kinds;
	struct spans_attr_group *group; /* by key, then most samples first, then by value */
	size_t nr_groups;
	struct strpool pairs; /* the groups' "key\x1fvalue" */
};

struct spans_view {
	const char *input;	     /* the recording, for messages */
	const struct spans_row *row; /* by start, then tid */
	size_t nr_rows;
	size_t nr_samples;	     /* the recording's, inside spans or not */
	const char *const *ctr_names; /* what the recording's spans counted */
	int nr_ctr;
	bool ctr_clock[SP_MAX_COUNTERS]; /* counter k is a clock (task-clock, cpu-clock): ns */
	int table_ctr;		     /* the table's counter columns: none for external spans */
	bool bpf_samples;	     /* JSON lines show BPF's count */
	double window_s;	     /* > 0 (top --spans): the table shows each name's rate */
	bool offcpu;		     /* the file has off-CPU blocks: off_ns, blocked_in, off_top hold */
	bool wakers;		     /* the file names each block's waker */
	bool any_split;		     /* some span has a split, or the file has sched records */
	__u64 unjoinable;	     /* sums of short blocks, which no span can be given */
	bool has_clock;		     /* the file has CLOCK_DATA: the recording's clock + unix_off = unix ns */
	__s64 unix_off;
	double ns_per_sample;	     /* the sampling event is a clock: its CPU ns per sample (else 0) */
	const struct spans_table *table;
};

/*
 * The table's figures of n rows whose kinds are names[0..nr_names) (a
 * name without rows gets a zero kind), rates over window_s where > 0.
 * 0 or -ENOMEM; spans_table_free accepts what it left.
 */
int spans_table_build(struct spans_table *t, const struct spans_row *row, size_t n, const char *const *names,
		      size_t nr_names, double window_s);
void spans_table_free(struct spans_table *t);

/*
 * The outputs, each of a view alone; 0 or -errno.  spans_print_otlp:
 * -EINVAL with err written where the file has no CLOCK_DATA.
 */
int spans_print_table(const struct spans_view *v, FILE *out);
int spans_print_json(const struct spans_view *v, FILE *out);
int spans_print_otlp(const struct spans_view *v, FILE *out, char *err, size_t errlen);
/*
 * A row's wall-time members of its JSON line, each after a comma:
 * ,"on_cpu_ns":..,"off_cpu_ns":..,"runq_ns":..,"sleep_ns":..,"blocked_ns":..,
 * "split":..,"off_cpu_top":[..] and, where the file names wakers, "woken_by".
 */
int spans_json_wall(const struct spans_view *v, const struct spans_row *row, struct sbuf *b);

/*
 * The text table as rows, for a screen that draws them (top --spans): the
 * names whose line holds filter (NULL or "": all), then the first max_rows
 * of them (0: all), as report_table's rows are picked (table_opts).
 */
struct spans_rows {
	const struct spans_kind **kind; /* into v->table */
	size_t nr;
	size_t nr_all; /* names before the filter and max_rows */
};
int spans_rows__build(struct spans_rows *r, const struct spans_view *v, const char *filter, size_t max_rows);
void spans_rows__free(struct spans_rows *r);
/* The column heads ("# name  source  count ..."), and a name's row, a line each as spans_print_table writes them. */
void spans_print_columns(const struct spans_view *v, FILE *out);
void spans_print_kind(const struct spans_view *v, const struct spans_kind *kd, FILE *out);

#endif
