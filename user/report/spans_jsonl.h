/* SPDX-License-Identifier: GPL-2.0 */
/*
 * External spans for `spanperf annotate`: one JSON object per line with
 * tid, start_ns and end_ns (CLOCK_MONOTONIC), and optionally name, pid,
 * trace_id and span_id (a string, re-encoded, or a number) for the output.
 */
#ifndef SP_SPANS_JSONL_H
#define SP_SPANS_JSONL_H

#include <stddef.h>
#include <linux/types.h>

/*
 * A span as a parser fills it in, with room for the longest of each string;
 * kept (ext_span_keep) as a struct ext_span, whose strings take what they
 * hold: a million spans are 950 MB in this form, 150 MB in that.
 */
struct ext_span_buf {
	__u32 tid, pid;
	int has_pid;
	__u64 start, end;
	char name[128];
	char trace_id[128]; /* as JSON: a string (with quotes, re-encoded) or a number, or "" */
	char span_id[128];
	/* OTLP JSON: times on CLOCK_REALTIME; tid unknown (no thread.id) until placed by pid and window */
	__u8 realtime, no_tid;
	/* OTLP JSON: its parentSpanId (lower-case hex, "" for a root), kept for annotate's OTLP output */
	char parent_span_id[17];
	/* OTLP JSON: its perf.* attributes as the input wrote them, {...},{...}, kept likewise ("" none) */
	char perf_attrs[512];
};

/* The same fields; the strings (never NULL) are one allocation, which name starts. */
struct ext_span {
	__u32 tid, pid;
	int has_pid;
	__u8 realtime, no_tid;
	__u64 start, end;
	const char *name, *trace_id, *span_id, *parent_span_id, *perf_attrs;
};

/* b kept as *out; 0 or -ENOMEM. */
int ext_span_keep(const struct ext_span_buf *b, struct ext_span *out);
/* n spans of a parser's and their strings; accepts NULL. */
void ext_spans_free(struct ext_span *v, size_t n);

/* Parses a whole file's text; on error, err says which line and why.  Free with ext_spans_free. */
int ext_spans_parse(const char *text, size_t len, const char *fname, struct ext_span **out, size_t *n,
		    char *err, size_t errlen);

#endif
