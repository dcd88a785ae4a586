// SPDX-License-Identifier: GPL-2.0
/* spanperf report: a perf.data read back as tables, folded stacks, flame graphs and pprof. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "log.h"
#include "parse.h"
#include "perf_data.h"
#include "report.h"
#include "report_html.h"
#include "symbols.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: spanperf report [-i FILE] [options]\n\n"
		"  -i, --input FILE       perf.data to read (default perf.data)\n"
		"  -s, --sort KEYS        comma list of comm, pid, tid, dso, sym, srcline, trace,\n"
		"                         span, attr:NAME (an OTel span attribute, record --otel),\n"
		"                         waker (off-CPU: who ended the blocks, record --off-cpu)\n"
		"                         (default comm,dso,sym; trace and span: record --otel)\n"
		"  -g, --call-graph       show the call chains under each row\n"
		"      --percent-limit P  leave out rows under P percent (text)\n"
		"      --format FMT       text (default) or json: one object per row (or span);\n"
		"                         otlp-json (with --spans): OpenTelemetry OTLP JSON\n"
		"      --folded           folded stacks for flamegraph.pl or speedscope, to stdout\n"
		"      --span-prefix      with --folded: each stack starts with the spans it fell in\n"
		"      --waker            with --folded --event off-cpu|wall: each blocked stack goes on\n"
		"                         with ;--; and its waker's stack, leaf first (record --off-cpu)\n"
		"                         (--span and --otel spans, outermost first), as\n"
		"                         span:NAME:SPAN_ID; stacks in none start with [no span]\n"
		"      --flamegraph SVG   write a flame graph (click to zoom, Search to highlight)\n"
		"      --pprof FILE       write a gzipped pprof profile (go tool pprof, Pyroscope...)\n"
		"      --html FILE        write one self-contained page: a lane per thread with its\n"
		"                         spans, samples and off-CPU blocks, span and selection\n"
		"                         panels with flame graphs (opens from file://, no network)\n"
		"      --speedscope FILE  write speedscope's format: an evented profile per thread,\n"
		"                         spans as frames around the stacks (--format speedscope:\n"
		"                         to stdout)\n"
		"      --max-samples N    --html, --speedscope: above N samples keep every k-th of\n"
		"                         each thread, and say so (default 2000000; 0: all)\n"
		"      --max-spans N      likewise keep the N longest spans (default 200000; 0: all)\n"
		"      --event EV         on-cpu, off-cpu (record --off-cpu's offcpu-time) or wall\n"
		"                         (both, in ns; blocked stacks end in [off-cpu]); the table\n"
		"                         shows one section per event without it\n"
		"      --spans            spans recorded with --span, joined with their samples\n"
		"      --bpf-samples      with --spans --format json: add the count BPF kept\n"
		"      --stdio            accepted for perf's sake; text is the default\n"
		"      --header-only      the file's header: where and how it was recorded, and\n"
		"                         (--call-graph ehframe) why user chains ended\n"
		"      --force            read a perf.data and /tmp/perf-PID.map files of any owner\n"
		"                         (by default, as perf: only yours or root's)\n"
		"      --inline           functions inlined at each user address as frames of their\n"
		"                         own, NAME (inlined), from DWARF; by default only in\n"
		"                         --call-graph dwarf chains, as perf 6.1 shows them\n"
		"      --no-inline        real frames only\n"
		"      --full-source-path srclines with the whole path, not the file's name\n"
		"      --debuginfod URLS  fetch the debug files of stripped files from these\n"
		"                         debuginfod servers (default: $DEBUGINFOD_URLS)\n"
		"      --offline          never the network: debug files already here only\n"
		"      --unknown-offsets  unnamed user frames as DSO+0xOFFSET in folded stacks,\n"
		"                         flame graphs and pprof, to symbolize elsewhere\n"
		"  -v, --verbose          say what the file held: forks, execs, lost samples...\n"
		"  -q, --quiet            errors only\n"
		"  -h, --help             this text\n\n"
		"Examples:\n"
		"  spanperf report                              # perf report --stdio's table\n"
		"  spanperf report --sort tid,sym --format json\n"
		"  spanperf report --flamegraph cpu.svg --pprof cpu.pb.gz\n"
		"  spanperf report --folded | flamegraph.pl > cpu.svg\n"
		"  spanperf report --folded --span-prefix | flamegraph.pl > by-span.svg\n"
		"  spanperf report --folded --event wall --waker | flamegraph.pl > wakers.svg\n"
		"  spanperf report -g --sort sym,srcline         # inlined frames and source lines\n"
		"  DEBUGINFOD_URLS=https://debuginfod.debian.net spanperf report  # stripped files named\n"
		"      # lines like  span:otel:00f067aa0ba902b7;app;main;work 12\n"
		"  spanperf report --spans --format json | jq .\n"
		"  spanperf report --html report.html           # open it in a browser\n"
		"  spanperf report --sort attr:http.route,sym    # record --otel: samples by route\n");
}

/* Usage errors, said here; the report itself is report_run's. */
static int check_combinations(const struct report_opts *o)
{
	if (o->otlp && !o->spans) {
		pr_err("--format otlp-json writes spans: use it with --spans");
		return -EINVAL;
	}
	if (o->span_prefix && (!o->folded || o->spans)) {
		pr_err("--span-prefix prefixes the stacks of --folded: use it with --folded%s",
		       o->spans ? ", not --spans" : "");
		return -EINVAL;
	}
	if (o->wakers && (!o->folded || o->spans || !o->ev_set || o->ev == PV_ON_CPU)) {
		pr_err("--waker appends the waker to off-CPU stacks of --folded: use it with --folded and --event off-cpu or wall");
		return -EINVAL;
	}
	if ((o->html || o->speedscope) && (o->spans || o->folded || o->flame || o->pprof || o->ev_set)) {
		pr_err("--html and --speedscope show everything the file holds: use them without --spans, --folded, --flamegraph, --pprof and --event");
		return -EINVAL;
	}
	if (o->span_prefix && o->ev_set && o->ev != PV_ON_CPU) {
		pr_err("--span-prefix prefixes on-CPU samples only: leave out --event %s",
		       o->ev == PV_OFF_CPU ? "off-cpu" : "wall");
		return -EINVAL;
	}
	return 0;
}

enum { OPT_SPANS = 256, OPT_BPF_SAMPLES, OPT_FOLDED, OPT_SPAN_PREFIX, OPT_WAKER, OPT_FLAME, OPT_PPROF, OPT_STDIO, OPT_PCT,
       OPT_EVENT, OPT_HTML, OPT_SPEEDSCOPE, OPT_MAX_SAMPLES, OPT_MAX_SPANS, OPT_FORCE, OPT_INLINE, OPT_NO_INLINE,
       OPT_FULL_SRC, OPT_DEBUGINFOD, OPT_OFFLINE, OPT_UNKNOWN_OFFSETS, OPT_HEADER_ONLY };

/* One option with a value into o; -EINVAL after saying why. */
static int parse_value(int c, const char *arg, struct report_opts *o)
{
	struct table_opts *to = &o->table;
	char *end;

	switch (c) {
	case 's':
		if (parse_sort_keys(arg, to)) {
			pr_err("--sort '%s' is not a list of comm, pid, tid, dso, sym, srcline, trace, span, waker and "
			       "attr:NAME", arg);
			return -EINVAL;
		}
		return 0;
	case 'f':
		if (strcmp(arg, "text") && strcmp(arg, "json") && strcmp(arg, "otlp-json") && strcmp(arg, "speedscope")) {
			pr_err("--format '%s' is neither text, json, otlp-json nor speedscope", arg);
			return -EINVAL;
		}
		if (!strcmp(arg, "speedscope"))
			o->speedscope = "-";
		to->json = !strcmp(arg, "json");
		o->otlp = !strcmp(arg, "otlp-json");
		return 0;
	case OPT_PCT:
		to->min_pct = strtod(arg, &end);
		if (*end || end == arg || !(to->min_pct >= 0 && to->min_pct <= 100)) {
			pr_err("--percent-limit '%s' is not a percentage", arg);
			return -EINVAL;
		}
		return 0;
	case OPT_MAX_SAMPLES:
	case OPT_MAX_SPANS: {
		uint64_t v;

		if (parse_u64(arg, &v, 0, UINT64_MAX)) {
			pr_err("%s '%s' is not a count", c == OPT_MAX_SAMPLES ? "--max-samples" : "--max-spans", arg);
			return -EINVAL;
		}
		*(c == OPT_MAX_SAMPLES ? &o->max_samples : &o->max_spans) = v;
		return 0;
	}
	case OPT_EVENT:
		if (pview_parse(arg, &o->ev)) {
			pr_err("--event '%s' is not on-cpu, off-cpu or wall", arg);
			return -EINVAL;
		}
		o->ev_set = true;
		return 0;
	}
	return 0;
}

/* argv into o: 0, 1 for --help (printed), or -EINVAL after saying why. */
static int parse_args(int argc, char **argv, struct report_opts *o)
{
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "sort", required_argument, NULL, 's' },
		{ "format", required_argument, NULL, 'f' },
		{ "call-graph", no_argument, NULL, 'g' },
		{ "percent-limit", required_argument, NULL, OPT_PCT },
		{ "folded", no_argument, NULL, OPT_FOLDED },
		{ "span-prefix", no_argument, NULL, OPT_SPAN_PREFIX },
		{ "waker", no_argument, NULL, OPT_WAKER },
		{ "flamegraph", required_argument, NULL, OPT_FLAME },
		{ "pprof", required_argument, NULL, OPT_PPROF },
		{ "html", required_argument, NULL, OPT_HTML },
		{ "speedscope", required_argument, NULL, OPT_SPEEDSCOPE },
		{ "max-samples", required_argument, NULL, OPT_MAX_SAMPLES },
		{ "max-spans", required_argument, NULL, OPT_MAX_SPANS },
		{ "event", required_argument, NULL, OPT_EVENT },
		{ "spans", no_argument, NULL, OPT_SPANS },
		{ "bpf-samples", no_argument, NULL, OPT_BPF_SAMPLES },
		{ "stdio", no_argument, NULL, OPT_STDIO },
		{ "header-only", no_argument, NULL, OPT_HEADER_ONLY },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "inline", no_argument, NULL, OPT_INLINE },
		{ "no-inline", no_argument, NULL, OPT_NO_INLINE },
		{ "full-source-path", no_argument, NULL, OPT_FULL_SRC },
		{ "debuginfod", required_argument, NULL, OPT_DEBUGINFOD },
		{ "offline", no_argument, NULL, OPT_OFFLINE },
		{ "unknown-offsets", no_argument, NULL, OPT_UNKNOWN_OFFSETS },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:s:ghvq", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': o->input = optarg; break;
		case 'g': o->table.callgraph = true; break;
		case OPT_FOLDED: o->folded = true; break;
		case OPT_SPAN_PREFIX: o->span_prefix = true; break;
		case OPT_WAKER: o->wakers = true; break;
		case OPT_FLAME: o->flame = optarg; break;
		case OPT_PPROF: o->pprof = optarg; break;
		case OPT_HTML: o->html = optarg; break;
		case OPT_SPEEDSCOPE: o->speedscope = optarg; break;
		case OPT_SPANS: o->spans = true; break;
		case OPT_BPF_SAMPLES: o->bpf_samples = true; break;
		case OPT_STDIO: break;
		case OPT_HEADER_ONLY: o->header_only = true; break;
		case OPT_FORCE: o->force = true; break;
		case OPT_INLINE: o->inline_frames = INLINE_ALL; break;
		case OPT_NO_INLINE: o->inline_frames = INLINE_NONE; break;
		case OPT_FULL_SRC: o->full_srcline = true; break;
		case OPT_DEBUGINFOD: o->debuginfod.urls = optarg; break;
		case OPT_OFFLINE: o->debuginfod.offline = true; break;
		case OPT_UNKNOWN_OFFSETS: o->unknown_offsets = true; break;
		case 'v': sp_verbose++; break;
		case 'q': sp_verbose = -1; break;
		case 'h':
			usage(stdout);
			return 1;
		case ':':
			pr_err("option '%s' needs a value", argv[optind - 1]);
			return -EINVAL;
		case '?':
			pr_err("unknown option '%s'; see --help", argv[optind - 1]);
			return -EINVAL;
		default:
			if (parse_value(c, optarg, o))
				return -EINVAL;
		}
	}
	if (optind < argc) {
		pr_err("unexpected argument '%s'; the input file goes after -i", argv[optind]);
		return -EINVAL;
	}
	return check_combinations(o);
}

int cmd_report(int argc, char **argv)
{
	/* perf 6.1 shows inlined functions in DWARF-unwound chains unless --no-inline. */
	struct report_opts o = { .input = "perf.data", .max_samples = HTML_MAX_SAMPLES, .max_spans = HTML_MAX_SPANS,
				 .inline_frames = INLINE_DWARF, .debuginfod.progress = true };
	int e;

	sp_prog = "spanperf report";
	parse_sort_keys("comm,dso,sym", &o.table);
	e = parse_args(argc, argv, &o);
	if (e)
		return e > 0 ? 0 : 1;
	return report_run(&o);
}
