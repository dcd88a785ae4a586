/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Inside the span join (report_spans.c) and its outputs (spans_text.c,
 * spans_json.c, spans_otlp.c): the joined rows and what the outputs share.
 * An output reads a finished join: rows sorted by start, each with the
 * range [first, first + count) of its samples in the join's order.
 */
#ifndef SP_SPANS_JOIN_H
#define SP_SPANS_JOIN_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>

#include "otel_join.h"
#include "report_spans.h"
#include "session.h"
#include "span_wall.h"
#include "spans_jsonl.h"
#include "util.h"

#define TOP_N 5

/* A sample, as the join needs it. */
struct sinfo {
	__s32 pid;
	__u32 tid;
	bool kernel;
	__u64 ip, time;
	const char *leaf; /* resolved lazily, only for samples inside spans */
};

struct span_row {
	__u32 tid, pid;
	__u64 start, end;
	int name;	/* index into names */
	int source;
	bool unfinished;
	__u64 bpf_samples;
	__u64 counters[SP_MAX_COUNTERS];
	const struct ext_span *ext;
	bool has_ctx; /* trace_id and span_id from the recording (otel) */
	__u8 edges;   /* SPAN_EDGES_SAMPLED, SPAN_END_AT_SWITCH */
	__u8 trace_id[16], span_id[8];
	const char *attrs; /* its OTEP 4947 attributes, pooled (otel_attrs_split); NULL: none */
	__u8 *raw_attrs;   /* until the pass ends: the process contexts come last */
	const char *kind;  /* with raw_attrs: the name to take where no span.name names it */
	__u16 raw_size;
	struct span_sched sched; /* where its wall time went, as recorded (how 0: not) */
	size_t first, count; /* the join's result */
};

struct span_report {
	struct spans_report_opts o;
	struct ext_span *ext; /* annotate's spans, and the text they point into */
	size_t next;
	char *text;
	struct session *sess;
	struct strpool names; /* span names; a row's name is its id here */
	struct strpool attrs; /* otel spans' attributes */
	char **ctr_names;     /* the session's: what counters[k] is */
	int nr_ctr;
	struct sinfo *s;
	size_t ns, cap_s;
	struct span_row *sp;
	size_t nsp, cap_sp;
	struct corr_sample *sorted; /* the join's sample order */
	struct span_wall *wall;	    /* off-CPU time per span */
};

struct topc {
	const char *name;
	__u64 n;
};

/* The most frequent leaf functions of samples [first, first+count), in *out; returns how many, or -ENOMEM. */
int spans_top_of(struct span_report *r, size_t first, size_t count, struct topc **out, size_t *cap);
/* Most samples first, then by name: for qsort of struct topc. */
int spans_cmp_top(const void *a, const void *b);
/* The counter is a clock (task-clock, cpu-clock): in ns, printed in ms. */
bool spans_ctr_is_clock(const char *name);
/* The span's time on CPU from its task-clock counter (or its switch stamps), -1 where it has none. */
__s64 spans_on_cpu_ns(const struct span_report *r, const struct span_row *sp);
/* How the span's split was measured, as the JSON rows' "split" says (enum sp_sched_how); NULL: none. */
const char *spans_split_name(__u32 how);
/*
 * The split of sp's wall time: the span's own (its record's accounts), else
 * that of the file's spanperf-sched records over its thread and interval;
 * *how names the one used (NULL: none).  False where there is neither.
 */
bool spans_split(struct span_report *r, const struct span_row *sp, struct span_split *x, const char **how);
/* The id as hex: the recording's (otel), the external span's if it is OTLP-shaped, else made up from row i. */
void spans_ids(const struct span_row *sp, size_t i, char trace[33], char span[17]);

/* The outputs; 0 or -errno (print_otlp: -EINVAL with err written). */
int spans_print_table(struct span_report *r, FILE *out);
int spans_print_json(struct span_report *r, FILE *out);
int spans_print_otlp(struct span_report *r, FILE *out, char *err, size_t errlen);

#endif
