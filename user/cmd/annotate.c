// SPDX-License-Identifier: GPL-2.0
/* spanperf annotate: spans made anywhere else, joined with a recording's samples. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "log.h"
#include "report.h"
#include "report_html.h"
#include "report_spans.h"

static void usage(FILE *out)
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
		     "  -h, --help\n\n"
		     "Example:\n"
		     "  spanperf record -g -o app.data -- ./app --spans-to spans.jsonl\n"
		     "  spanperf annotate --spans spans.jsonl -i app.data --format json\n"
		     "  spanperf annotate --spans spans.jsonl -i app.data --format folded | flamegraph.pl > by-span.svg\n");
}

int cmd_annotate(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "spans", required_argument, NULL, 's' },
		{ "input", required_argument, NULL, 'i' },
		{ "format", required_argument, NULL, 'f' },
		{ "html", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct spans_report_opts o = { .input = "perf.data" };
	const char *html = NULL;
	bool folded = false;
	char err[512];
	int c;

	sp_prog = "spanperf annotate";
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:i:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			o.external = optarg;
			break;
		case 'i':
			o.input = optarg;
			break;
		case 'f':
			if (strcmp(optarg, "text") && strcmp(optarg, "json") && strcmp(optarg, "otlp-json") &&
			    strcmp(optarg, "folded")) {
				pr_err("--format '%s' is neither text, json, otlp-json nor folded", optarg);
				return 1;
			}
			folded = !strcmp(optarg, "folded");
			o.format = !strcmp(optarg, "json") ? SPANS_JSON : !strcmp(optarg, "otlp-json") ? SPANS_OTLP : SPANS_TEXT;
			break;
		case 'H':
			html = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case ':':
			pr_err("option '%s' needs a value", argv[optind - 1]);
			return 1;
		default:
			pr_err("unknown option '%s'; see --help", argv[optind - 1]);
			return 1;
		}
	}
	if (optind < argc) {
		pr_err("unexpected argument '%s'", argv[optind]);
		return 1;
	}
	if (!o.external) {
		pr_err("--spans FILE is required: the spans to annotate, as JSON lines");
		return 1;
	}
	if (html) {
		struct report_opts ro = { .input = o.input, .external = o.external, .html = html,
					  .max_samples = HTML_MAX_SAMPLES, .max_spans = HTML_MAX_SPANS };

		return report_run(&ro);
	}
	if (folded) {
		struct report_opts ro = { .input = o.input, .external = o.external, .folded = true, .span_prefix = true };

		return report_run(&ro);
	}
	if (spans_report(&o, err, sizeof(err))) {
		pr_err("%s", err);
		return 1;
	}
	return 0;
}
