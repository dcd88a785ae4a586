/* SPDX-License-Identifier: GPL-2.0 */
/*
 * OTLP JSON (the OpenTelemetry Collector's file exporter: one
 * ExportTraceServiceRequest per line, resourceSpans/scopeSpans/spans) in,
 * as spans for annotate, and spans out in the same form.
 *
 * In: trace and span ids are hex, times unix nanoseconds (CLOCK_REALTIME;
 * the caller moves them to the recording's clock), int64 values strings or
 * numbers.  The thread is the span's `thread.id` attribute; without one,
 * the process (`process.pid` on the span or its resource) and the window
 * must place it.
 */
#ifndef SP_OTLP_JSON_H
#define SP_OTLP_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "sbuf.h"
#include "spans_jsonl.h"

/* True if text looks like OTLP JSON rather than spanperf's JSON lines. */
bool otlp_json_detect(const char *text, size_t len);

struct otlp_stats {
	size_t spans, no_thread, skipped; /* skipped: no times, or end before start */
};

/* Parses the whole text; on error, err names the file and the byte offset. */
int otlp_json_parse(const char *text, size_t len, const char *fname, struct ext_span **out, size_t *n,
		    struct otlp_stats *st, char *err, size_t errlen);
/* The same over a private mapping of the file, whose pages behind the parse go (ext_spans_parse_mapped). */
int otlp_json_parse_mapped(const char *text, size_t len, const char *fname, struct ext_span **out, size_t *n,
			   struct otlp_stats *st, char *err, size_t errlen);

/* ---- out ---- */

/* An attribute of a span being written. */
void otlp_attr_int(struct sbuf *b, bool *first, const char *key, __s64 v);
void otlp_attr_double(struct sbuf *b, bool *first, const char *key, double v);
void otlp_attr_str(struct sbuf *b, bool *first, const char *key, const char *v);

#endif
