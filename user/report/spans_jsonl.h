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

struct ext_span {
	__u32 tid, pid;
	int has_pid;
	__u64 start, end;
	char name[128];
	char trace_id[128]; /* as JSON: a string (with quotes, re-encoded) or a number, or "" */
	char span_id[128];
	/* OTLP JSON: times on CLOCK_REALTIME; tid unknown (no thread.id) until placed by pid and window */
	__u8 realtime, no_tid;
};

/* Parses a whole file's text; on error, err says which line and why. */
int ext_spans_parse(const char *text, size_t len, const char *fname, struct ext_span **out, size_t *n,
		    char *err, size_t errlen);

#endif
