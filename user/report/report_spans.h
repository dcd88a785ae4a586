/* SPDX-License-Identifier: GPL-2.0 */
/* report --spans and annotate: spans joined with their samples, as a table or JSON lines. */
#ifndef SP_REPORT_SPANS_H
#define SP_REPORT_SPANS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

struct strpool;

struct spans_report_opts {
	const char *input;     /* perf.data */
	const char *external;  /* annotate: the spans JSONL, else NULL */
	bool json;
	bool otlp;	       /* --format otlp-json */
	bool bpf_samples;      /* add the BPF-side sample count to each JSON line */
};

int spans_report(const struct spans_report_opts *o, char *err, size_t errlen);

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

int spans_collect(const struct spans_report_opts *o, struct strpool *pool, struct span_label **out, size_t *n,
		  char *err, size_t errlen);

#endif
