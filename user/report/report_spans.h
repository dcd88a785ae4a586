/* SPDX-License-Identifier: GPL-2.0 */
/* report --spans and annotate: spans joined with their samples, as a table or JSON lines. */
#ifndef SP_REPORT_SPANS_H
#define SP_REPORT_SPANS_H

#include <stdbool.h>
#include <stddef.h>

struct spans_report_opts {
	const char *input;     /* perf.data */
	const char *external;  /* annotate: the spans JSONL, else NULL */
	bool json;
	bool otlp;	       /* --format otlp-json */
	bool bpf_samples;      /* add the BPF-side sample count to each JSON line */
};

int spans_report(const struct spans_report_opts *o, char *err, size_t errlen);

#endif
