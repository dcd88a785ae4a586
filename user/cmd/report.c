// SPDX-License-Identifier: GPL-2.0
/* spanperf report: argv into struct report_opts (report/report.h), then the report. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd_opts.h"
#include "commands.h"
#include "log.h"
#include "perf_data.h"
#include "report_html.h"
#include "symbols.h"

void report_usage(FILE *out)
{
	fprintf(out,
		"Usage: spanperf report [-i FILE] [options]\n\n"
		"  -i, --input FILE       perf.data to read (default perf.data)\n"
		"      --clickhouse URL   a fleet instead: what spanperf agent shipped there\n"
		"      --clickhouse-password-file FILE, --clickhouse-ca FILE, --database DB\n"
		"                         as the agent's\n"
		"      --since DURATION   its windows since (90s, 30m, 1h: the default, 2d)\n"
		"      --from TIME, --to TIME  or from and to: 2026-11-28 04:00:00 (UTC), @SECS\n"
		"      --host NAME        one host's (its --host-label), else every host's\n"
		"  -s, --sort KEYS        comma list of comm, pid, tid, dso, sym, srcline, trace,\n"
		"                         span, attr:NAME (an OTel span attribute, record --otel),\n"
		"                         waker (off-CPU: who ended the blocks, record --off-cpu)\n"
		"                         (default comm,dso,sym; trace and span: record --otel)\n"
		"  -g, --call-graph       show the call chains under each row\n"
		"      --percent-limit P  leave out rows under P percent, and from every other\n"
		"                         output the samples of those rows (see the man page)\n"
		"\n"
		"Filters, as perf report's: every output (table, folded, flame graph, pprof,\n"
		"page, speedscope, --spans) reads the samples and spans they keep.\n"
		"  -c, --comms COMM,..    only threads of these names (file://PATH: PATH's lines)\n"
		"      --pids PID,..      only these processes (perf's --pid too)\n"
		"      --tids TID,..      only these threads (perf's --tid too)\n"
		"  -d, --dsos DSO,..      only samples whose address is in these files (short\n"
		"                         names, as the dso column, or full paths)\n"
		"  -S, --symbols SYM,..   only samples whose address is in these functions\n"
		"                         (the samples these lists leave out still count in the\n"
		"                         table's 100%%, as perf's --percentage absolute)\n"
		"      --time START,END   only samples and spans (their end) in this window:\n"
		"                         seconds as perf script prints them, or percents of the\n"
		"                         recording (10%%, 10%%/2: the second tenth, 0%%-10%%,30%%-40%%)\n"
		"\n"
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
		"                         spans as frames around the stacks (--format speedscope)\n"
		"      --max-samples N    --html, --speedscope: above N samples keep every k-th of\n"
		"                         each thread, and say so (default 2000000; 0: all)\n"
		"      --max-spans N      likewise keep the N longest spans (default 200000; 0: all)\n"
		"      --event EV         on-cpu, off-cpu (record --off-cpu's offcpu-time) or wall\n"
		"                         (both, in ns; blocked stacks end in [off-cpu]); the table\n"
		"                         shows one section per event without it\n"
		"      --spans            spans recorded with --span, joined with their samples\n"
		"      --bpf-samples      with --spans --format json: add the count BPF kept\n"
		"      --why-slow         with --spans: each name's slowest spans against the rest:\n"
		"                         wall split, functions and wakers that explain the gap\n"
		"      --span-name NAME   with --why-slow, or --clickhouse --spans: spans of NAME\n"
		"      --slowest PCT      with --why-slow: the slow group's percent (default 10)\n"
		"      --stdio            accepted for perf's sake; text is the default\n"
		"      --header-only      the file's header: how it was recorded, why chains ended\n"
		"      --force            read files of any owner (by default, as perf: yours or root's)\n"
		"      --inline           inlined functions as frames, NAME (inlined), from DWARF\n"
		"                         (by default only in dwarf chains, as perf 6.1 shows them)\n"
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
		"  spanperf report --flamegraph cpu.svg --pprof cpu.pb.gz\n"
		"  spanperf report --folded | flamegraph.pl > cpu.svg\n"
		"  spanperf report --folded --span-prefix | flamegraph.pl > by-span.svg\n"
		"  spanperf report --folded --event wall --waker | flamegraph.pl > wakers.svg\n"
		"  spanperf report -g --sort sym,srcline         # inlined frames and source lines\n"
		"  spanperf report --spans --format json | jq .\n"
		"  spanperf report --html report.html           # open it in a browser\n"
		"  spanperf report --sort attr:http.route,sym    # record --otel: samples by route\n"
		"  spanperf report --comms app --time 0%%-10%% --folded  # app's first tenth, as stacks\n");
}

static int opt_sort(const char *arg, void *opts, char *err, size_t errlen)
{
	struct report_args *a = opts;

	if (parse_sort_keys(arg, &a->o.table))
		return set_errorf(err, errlen, -EINVAL, "--sort '%s' is not a list of comm, pid, tid, dso, sym, srcline, "
				  "trace, span, waker and attr:NAME", arg);
	return 0;
}

static int opt_format(const char *arg, void *opts, char *err, size_t errlen)
{
	struct report_opts *o = &((struct report_args *)opts)->o;
	struct table_opts *to = &o->table;

	if (strcmp(arg, "text") && strcmp(arg, "json") && strcmp(arg, "otlp-json") && strcmp(arg, "speedscope"))
		return set_errorf(err, errlen, -EINVAL, "--format '%s' is neither text, json, otlp-json nor speedscope",
				  arg);
	if (!strcmp(arg, "speedscope"))
		o->speedscope = "-";
	to->json = !strcmp(arg, "json");
	o->spans_format = !strcmp(arg, "json") ? SPANS_JSON : !strcmp(arg, "otlp-json") ? SPANS_OTLP : SPANS_TEXT;
	return 0;
}

static int opt_percent(const char *arg, void *opts, char *err, size_t errlen)
{
	struct report_args *a = opts;

	return cmd_percent_limit(arg, &a->o.table.min_pct, err, errlen);
}

static int opt_comms(const char *arg, void *opts, char *err, size_t errlen)
{
	return name_set_add(&((struct report_args *)opts)->o.filter.comms, arg, "--comms", err, errlen);
}

static int opt_dsos(const char *arg, void *opts, char *err, size_t errlen)
{
	return name_set_add(&((struct report_args *)opts)->o.filter.dsos, arg, "--dsos", err, errlen);
}

static int opt_symbols(const char *arg, void *opts, char *err, size_t errlen)
{
	return name_set_add(&((struct report_args *)opts)->o.filter.syms, arg, "--symbols", err, errlen);
}

/* perf's forms; a percentage is of the file's first to last sample, checked here on a stand-in. */
static int opt_time(const char *arg, void *opts, char *err, size_t errlen)
{
	struct time_range *r;
	size_t n;
	int e = time_ranges_parse(arg, 1000000000ull, 2000000000ull, &r, &n, err, errlen);

	free(r);
	if (!e)
		((struct report_args *)opts)->o.filter.time = arg;
	return e;
}

static int opt_slowest(const char *arg, void *opts, char *err, size_t errlen)
{
	return cmd_slowest(arg, &((struct report_args *)opts)->o.why.slowest_pct, err, errlen);
}

static int opt_event(const char *arg, void *opts, char *err, size_t errlen)
{
	struct report_args *a = opts;

	if (pview_parse(arg, &a->o.ev))
		return set_errorf(err, errlen, -EINVAL, "--event '%s' is not on-cpu, off-cpu or wall", arg);
	a->o.ev_set = true;
	return 0;
}

#define R(f) offsetof(struct report_args, o.f)
static const struct opt_def report_defs[] = {
	{ .name = "input", .letter = 'i', .type = OPT_T_ANY_STR, .off = R(input) },
	{ .name = "sort", .letter = 's', .type = OPT_T_FN, .fn = opt_sort },
	{ .name = "format", .type = OPT_T_FN, .fn = opt_format },
	{ .name = "call-graph", .letter = 'g', .type = OPT_T_FLAG, .off = R(table.callgraph) },
	{ .name = "percent-limit", .type = OPT_T_FN, .fn = opt_percent },
	{ .name = "clickhouse", .type = OPT_T_STR, .off = R(ch.url), .bad = "needs the server's URL" },
	{ .name = "clickhouse-password-file", .type = OPT_T_STR, .off = R(ch.password_file), .bad = "needs a file" },
	{ .name = "clickhouse-ca", .type = OPT_T_STR, .off = R(ch.ca_file), .bad = "needs a CA file" },
	{ .name = "database", .type = OPT_T_STR, .off = R(ch.db), .bad = "needs a database's name" },
	{ .name = "since", .type = OPT_T_STR, .off = R(ch.since), .bad = "needs a duration" },
	{ .name = "from", .type = OPT_T_STR, .off = R(ch.from), .bad = "needs a time" },
	{ .name = "to", .type = OPT_T_STR, .off = R(ch.to), .bad = "needs a time" },
	{ .name = "host", .type = OPT_T_STR, .off = R(ch.host), .bad = "needs a host's label" },
	{ .name = "comms", .letter = 'c', .type = OPT_T_FN, .fn = opt_comms },
	{ .name = "pids", .type = OPT_T_IDS, .off = R(filter.pids), .bad = "is not a comma-separated list of process ids" },
	{ .name = "pid", .type = OPT_T_IDS, .off = R(filter.pids), .bad = "is not a comma-separated list of process ids" },
	{ .name = "tids", .type = OPT_T_IDS, .off = R(filter.tids), .bad = "is not a comma-separated list of thread ids" },
	{ .name = "tid", .type = OPT_T_IDS, .off = R(filter.tids), .bad = "is not a comma-separated list of thread ids" },
	{ .name = "dsos", .letter = 'd', .type = OPT_T_FN, .fn = opt_dsos },
	{ .name = "symbols", .letter = 'S', .type = OPT_T_FN, .fn = opt_symbols },
	{ .name = "time", .type = OPT_T_FN, .fn = opt_time },
	{ .name = "folded", .type = OPT_T_FLAG, .off = R(folded) },
	{ .name = "span-prefix", .type = OPT_T_FLAG, .off = R(span_prefix) },
	{ .name = "waker", .type = OPT_T_FLAG, .off = R(wakers) },
	{ .name = "flamegraph", .type = OPT_T_ANY_STR, .off = R(flame) },
	{ .name = "pprof", .type = OPT_T_ANY_STR, .off = R(pprof) },
	{ .name = "html", .type = OPT_T_ANY_STR, .off = R(html) },
	{ .name = "speedscope", .type = OPT_T_ANY_STR, .off = R(speedscope) },
	{ .name = "max-samples", .type = OPT_T_U64, .off = R(max_samples), .hi = UINT64_MAX, .bad = "is not a count" },
	{ .name = "max-spans", .type = OPT_T_U64, .off = R(max_spans), .hi = UINT64_MAX, .bad = "is not a count" },
	{ .name = "event", .type = OPT_T_FN, .fn = opt_event },
	{ .name = "spans", .type = OPT_T_FLAG, .off = R(spans) },
	{ .name = "bpf-samples", .type = OPT_T_FLAG, .off = R(bpf_samples) },
	{ .name = "why-slow", .type = OPT_T_FLAG, .off = R(why_slow) },
	{ .name = "span-name", .type = OPT_T_STR, .off = R(why.span_name), .bad = "needs a span's name" },
	{ .name = "slowest", .type = OPT_T_FN, .fn = opt_slowest },
	{ .name = "stdio", .type = OPT_T_NONE },
	{ .name = "header-only", .type = OPT_T_FLAG, .off = R(header_only) },
	{ .name = "force", .type = OPT_T_FLAG, .off = R(force) },
	{ .name = "inline", .type = OPT_T_SET, .off = R(inline_frames), .lo = INLINE_ALL },
	{ .name = "no-inline", .type = OPT_T_SET, .off = R(inline_frames), .lo = INLINE_NONE },
	{ .name = "full-source-path", .type = OPT_T_FLAG, .off = R(full_srcline) },
	{ .name = "debuginfod", .type = OPT_T_ANY_STR, .off = R(debuginfod.urls) },
	{ .name = "offline", .type = OPT_T_FLAG, .off = R(debuginfod.offline) },
	{ .name = "unknown-offsets", .type = OPT_T_FLAG, .off = R(unknown_offsets) },
	OPT_DEFS_VERBOSITY(struct report_args),
	{}
};
#undef R

/* Flags that make sense only together, or never together. */
static int report_check(const struct report_opts *o, char *err, size_t errlen)
{
	int e = report_ch_check(o, err, errlen);

	if (e)
		return e;
	if (o->spans_format == SPANS_OTLP && !o->spans)
		return set_errorf(err, errlen, -EINVAL, "--format otlp-json writes spans: use it with --spans");
	if (o->span_prefix && (!o->folded || o->spans))
		return set_errorf(err, errlen, -EINVAL,
				  "--span-prefix prefixes the stacks of --folded: use it with --folded%s",
				  o->spans ? ", not --spans" : "");
	if (o->wakers && (!o->folded || o->spans || !o->ev_set || o->ev == PV_ON_CPU))
		return set_errorf(err, errlen, -EINVAL, "--waker appends the waker to off-CPU stacks of --folded: use it "
				  "with --folded and --event off-cpu or wall");
	if ((o->html || o->speedscope) && (o->spans || o->folded || o->flame || o->pprof || o->ev_set))
		return set_errorf(err, errlen, -EINVAL, "--html and --speedscope show everything the file holds: use them "
				  "without --spans, --folded, --flamegraph, --pprof and --event");
	if ((o->why_slow && (!o->spans || o->spans_format == SPANS_OTLP)) ||
	    (o->why.slowest_pct && !o->why_slow) || (o->why.span_name && !o->why_slow && !o->ch.url))
		return set_errorf(err, errlen, -EINVAL, "--why-slow compares spans: use it with --spans (text or json), "
				  "and --span-name and --slowest with it");
	if (o->span_prefix && o->ev_set && o->ev != PV_ON_CPU)
		return set_errorf(err, errlen, -EINVAL, "--span-prefix prefixes on-CPU samples only: leave out --event %s",
				  o->ev == PV_OFF_CPU ? "off-cpu" : "wall");
	return 0;
}

int report_parse_args(int argc, char **argv, struct report_args *a, char *err, size_t errlen)
{
	uint64_t seen;
	int e;

	/* perf 6.1 shows inlined functions in DWARF-unwound chains unless --no-inline. */
	memset(a, 0, sizeof(*a));
	a->o = (struct report_opts){ .input = "perf.data", .max_samples = HTML_MAX_SAMPLES,
				     .max_spans = HTML_MAX_SPANS, .inline_frames = INLINE_DWARF,
				     .debuginfod.progress = true };
	parse_sort_keys("comm,dso,sym", &a->o.table);
	e = opts_parse(report_defs, 0, argc, argv, a, &seen, report_usage, err, errlen);
	if (e)
		return e;
	if (optind < argc)
		return set_errorf(err, errlen, -EINVAL, "unexpected argument '%s'; the input file goes after -i",
				  argv[optind]);
	/* One --span-name: why-slow's, and the fleet's span query's. */
	a->o.ch.span_name = a->o.why.span_name;
	return report_check(&a->o, err, errlen);
}

int cmd_report(int argc, char **argv)
{
	struct report_args a;
	char err[512];
	int e;

	sp_prog = "spanperf report";
	e = report_parse_args(argc, argv, &a, err, sizeof(err));
	if (e) {
		report_filter_free(&a.o.filter);
		return cmd_parse_failed(e, err);
	}
	sp_verbose = a.verbose;
	e = report_run(&a.o);
	report_filter_free(&a.o.filter);
	return e;
}
