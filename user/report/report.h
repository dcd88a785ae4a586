/* SPDX-License-Identifier: GPL-2.0 */
/*
 * spanperf report and annotate --format folded, once their options are
 * parsed (cmd/report.c, cmd/annotate.c fill report_opts from argv): one
 * session, one pass over the file, one symbolizer, whatever the outputs.
 * The consumers are chosen from the options before the pass: the profile
 * for the tables, folded stacks, flame graph and pprof, the span join for
 * --spans and --span-prefix (both at once for the latter), and both, the
 * profile keeping every sample's time, for --html and --speedscope.
 */
#ifndef SP_REPORT_H
#define SP_REPORT_H

#include <stdbool.h>
#include <linux/types.h>

#include "debuginfo.h"
#include "offcpu_view.h"
#include "profile.h"
#include "report_filter.h"
#include "report_out.h"
#include "spans_view.h"
#include "why_slow.h"

/* report --clickhouse: a fleet's windows instead of a file (ch_reader.h); url NULL: a file. */
struct report_ch {
	const char *url, *password_file, *db; /* --clickhouse, --clickhouse-password-file, --database */
	const char *ca_file;		      /* --clickhouse-ca */
	const char *since, *from, *to;	      /* --since DURATION, or --from TIME --to TIME */
	const char *host, *span_name;	      /* --host, --span-name */
};

struct report_opts {
	const char *input;	/* perf.data */
	struct report_ch ch;
	const char *external;	/* annotate: its spans (JSONL or OTLP JSON), for span_prefix */
	struct table_opts table; /* the table's sort keys, format, call graph, percent limit */
	bool ev_set;		/* --event given */
	enum pview ev;
	const char *flame, *pprof; /* files to write, or NULL */
	bool folded, span_prefix;
	bool wakers;		/* --waker: --folded off-CPU stacks go on with their waker's */
	bool spans, bpf_samples;  /* --spans */
	enum spans_format spans_format; /* its --format (text, json, otlp-json) */
	/* --html, --speedscope: files to write ("-": stdout), or NULL; above the limits they thin (0: none) */
	const char *html, *speedscope;
	__u64 max_samples, max_spans;
	enum profile_inline inline_frames; /* --inline, --no-inline */
	bool full_srcline;		   /* --full-source-path */
	bool unknown_offsets;		   /* --unknown-offsets */
	bool header_only;		   /* --header-only: the features, as perf report --header-only */
	bool force;			   /* --force: a perf.data and /tmp/perf-PID.map files of any owner */
	/* urls: --debuginfod, else DEBUGINFOD_URLS; offline: --offline */
	struct debuginfo_opts debuginfod;
	/* --comms, --pids, --tids, --dsos, --symbols, --time: applied once, by the session, for every output */
	struct report_filter filter;
	/* --spans --why-slow: each name's slowest spans against the rest (--span-name, --slowest) */
	bool why_slow;
	struct why_opts why;
};

/* --clickhouse's options together, and with no file-only output; 0 or -EINVAL with one sentence in err. */
int report_ch_check(const struct report_opts *o, char *err, size_t errlen);
/* Runs the report the options ask for; 0, or 1 after saying why (pr_err). */
int report_run(const struct report_opts *o);

#endif
