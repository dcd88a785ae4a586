// SPDX-License-Identifier: GPL-2.0
/* spanperf annotate: spans made anywhere else, joined with a recording's samples. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd_opts.h"
#include "commands.h"
#include "log.h"
#include "report.h"
#include "report_html.h"
#include "report_spans.h"

void annotate_usage(FILE *out)
{
	fprintf(out, "Usage: spanperf annotate --spans SPANS [-i FILE] [--format text|json|otlp-json|folded]\n\n"
		     "Annotates spans written by an application or a tracer: one JSON object per\n"
		     "line with tid, start_ns and end_ns (CLOCK_MONOTONIC, as clock_gettime gives\n"
		     "it), and optionally name, pid, trace_id and span_id, which are kept.  Each\n"
		     "span gets the samples of its thread inside its window and its top functions.\n"
		     "SPANS may also be OTLP JSON, as the OpenTelemetry Collector's file exporter\n"
		     "writes it: unix-nano times are moved to the recording's clock, and a span\n"
		     "without a thread.id attribute goes to the one thread of its process.pid\n"
		     "with samples in its window.\n\n"
		     "  -s, --spans FILE     the spans (JSON lines, or OTLP JSON)\n"
		     "  -i, --input FILE     the recording (default perf.data)\n"
		     "      --format FMT     text (default), json (one object per span) or\n"
		     "                       otlp-json (the spans back as OTLP JSON, with perf.* attributes)\n"
		     "                       or folded (stacks for flamegraph.pl, each starting with the\n"
		     "                       spans it fell in, span:NAME:SPAN_ID, else [no span])\n"
		     "      --html FILE      write the page report --html writes, with these spans\n"
		     "      --why-slow       each name's slowest spans against the rest, as report\n"
		     "                       --spans --why-slow (text or json)\n"
		     "      --span-name NAME with --why-slow: only spans of NAME\n"
		     "      --slowest PCT    with --why-slow: the slow group's percent (default 10)\n"
		     "  -h, --help\n\n"
		     "Example:\n"
		     "  spanperf record -g -o app.data -- ./app --spans-to spans.jsonl\n"
		     "  spanperf annotate --spans spans.jsonl -i app.data --format json\n"
		     "  spanperf annotate --spans spans.jsonl -i app.data --format folded | flamegraph.pl > by-span.svg\n");
}

static int opt_format(const char *arg, void *opts, char *err, size_t errlen)
{
	struct annotate_args *a = opts;

	if (strcmp(arg, "text") && strcmp(arg, "json") && strcmp(arg, "otlp-json") && strcmp(arg, "folded"))
		return set_errorf(err, errlen, -EINVAL, "--format '%s' is neither text, json, otlp-json nor folded", arg);
	a->folded = !strcmp(arg, "folded");
	a->o.format = !strcmp(arg, "json") ? SPANS_JSON : !strcmp(arg, "otlp-json") ? SPANS_OTLP : SPANS_TEXT;
	return 0;
}

static int opt_slowest(const char *arg, void *opts, char *err, size_t errlen)
{
	return cmd_slowest(arg, &((struct annotate_args *)opts)->why.slowest_pct, err, errlen);
}

#define A(f) offsetof(struct annotate_args, f)
static const struct opt_def annotate_defs[] = {
	{ .name = "spans", .letter = 's', .type = OPT_T_ANY_STR, .off = A(o.external) },
	{ .name = "input", .letter = 'i', .type = OPT_T_ANY_STR, .off = A(o.input) },
	{ .name = "format", .type = OPT_T_FN, .fn = opt_format },
	{ .name = "html", .type = OPT_T_ANY_STR, .off = A(html) },
	{ .name = "why-slow", .type = OPT_T_FLAG, .off = A(why_slow) },
	{ .name = "span-name", .type = OPT_T_STR, .off = A(why.span_name), .bad = "needs a span's name" },
	{ .name = "slowest", .type = OPT_T_FN, .fn = opt_slowest },
	{ .name = "help", .letter = 'h', .type = OPT_T_HELP },
	{}
};
#undef A

int annotate_parse_args(int argc, char **argv, struct annotate_args *a, char *err, size_t errlen)
{
	uint64_t seen;
	int e;

	memset(a, 0, sizeof(*a));
	a->o.input = "perf.data";
	e = opts_parse(annotate_defs, 0, argc, argv, a, &seen, annotate_usage, err, errlen);
	if (e)
		return e;
	if (optind < argc)
		return set_errorf(err, errlen, -EINVAL, "unexpected argument '%s'", argv[optind]);
	if (!a->o.external)
		return set_errorf(err, errlen, -EINVAL, "--spans FILE is required: the spans to annotate, as JSON lines");
	if ((a->why_slow && (a->html || a->folded || a->o.format == SPANS_OTLP)) ||
	    ((a->why.span_name || a->why.slowest_pct) && !a->why_slow))
		return set_errorf(err, errlen, -EINVAL, "--why-slow compares the spans as text or json: use it without --html "
				  "and other formats, and --span-name and --slowest with it");
	return 0;
}

int cmd_annotate(int argc, char **argv)
{
	struct annotate_args a;
	char err[512];
	int e;

	sp_prog = "spanperf annotate";
	e = annotate_parse_args(argc, argv, &a, err, sizeof(err));
	if (e)
		return cmd_parse_failed(e, err);
	if (a.html) {
		struct report_opts ro = { .input = a.o.input, .external = a.o.external, .html = a.html,
					  .max_samples = HTML_MAX_SAMPLES, .max_spans = HTML_MAX_SPANS };

		return report_run(&ro);
	}
	if (a.folded) {
		struct report_opts ro = { .input = a.o.input, .external = a.o.external, .folded = true,
					  .span_prefix = true };

		return report_run(&ro);
	}
	if (a.why_slow) {
		a.why.json = a.o.format == SPANS_JSON;
		if (!a.why.slowest_pct)
			a.why.slowest_pct = WHY_SLOW_PCT;
	}
	if (a.why_slow ? why_slow_report(&a.o, &a.why, err, sizeof(err)) : spans_report(&a.o, err, sizeof(err))) {
		pr_err("%s", err);
		return 1;
	}
	return 0;
}
