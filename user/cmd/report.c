// SPDX-License-Identifier: GPL-2.0
/* spanperf report: a perf.data read back as tables, folded stacks, flame graphs and pprof. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "commands.h"
#include "hash.h"
#include "log.h"
#include "offcpu_view.h"
#include "profile.h"
#include "report_out.h"
#include "report_spans.h"
#include "session.h"
#include "unwind.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: spanperf report [-i FILE] [options]\n\n"
		"  -i, --input FILE       perf.data to read (default perf.data)\n"
		"  -s, --sort KEYS        comma list of comm, pid, tid, dso, sym, trace, span,\n"
		"                         attr:NAME (an OTel span attribute, record --otel)\n"
		"                         (default comm,dso,sym; trace and span: record --otel)\n"
		"  -g, --call-graph       show the call chains under each row\n"
		"      --percent-limit P  leave out rows under P percent (text)\n"
		"      --format FMT       text (default) or json: one object per row (or span);\n"
		"                         otlp-json (with --spans): OpenTelemetry OTLP JSON\n"
		"      --folded           folded stacks for flamegraph.pl or speedscope, to stdout\n"
		"      --span-prefix      with --folded: each stack starts with the spans it fell in\n"
		"                         (--span and --otel spans, outermost first), as\n"
		"                         span:NAME:SPAN_ID; stacks in none start with [no span]\n"
		"      --flamegraph SVG   write a flame graph (click to zoom, Search to highlight)\n"
		"      --pprof FILE       write a gzipped pprof profile (go tool pprof, Pyroscope...)\n"
		"      --event EV         on-cpu, off-cpu (record --off-cpu's offcpu-time) or wall\n"
		"                         (both, in ns; blocked stacks end in [off-cpu]); the table\n"
		"                         shows one section per event without it\n"
		"      --spans            spans recorded with --span, joined with their samples\n"
		"      --bpf-samples      with --spans --format json: add the count BPF kept\n"
		"      --stdio            accepted for perf's sake; text is the default\n"
		"  -v, --verbose          say what the file held: forks, execs, lost samples...\n"
		"  -q, --quiet            errors only\n"
		"  -h, --help             this text\n\n"
		"Examples:\n"
		"  spanperf report                              # perf report --stdio's table\n"
		"  spanperf report --sort tid,sym --format json\n"
		"  spanperf report --flamegraph cpu.svg --pprof cpu.pb.gz\n"
		"  spanperf report --folded | flamegraph.pl > cpu.svg\n"
		"  spanperf report --folded --span-prefix | flamegraph.pl > by-span.svg\n"
		"      # lines like  span:otel:00f067aa0ba902b7;app;main;work 12\n"
		"  spanperf report --spans --format json | jq .\n"
		"  spanperf report --sort attr:http.route,sym    # record --otel: samples by route\n");
}

/* Writes a file through a temporary name, so that a failure leaves nothing half-written. */
static int write_output(const char *path, int (*fn)(const struct profile *, FILE *, const void *),
			const struct profile *p, const void *arg)
{
	struct atomic_file af;
	FILE *f;
	int e = atomic_file__open(&af, path, 0644, false);

	if (e)
		return e;
	f = atomic_file__stdio(&af);
	e = f ? fn(p, f, arg) : -errno;
	if (!e)
		e = atomic_file__commit(&af);
	atomic_file__release(&af);
	return e;
}

static int flame_fn(const struct profile *p, FILE *f, const void *title)
{
	return report_flamegraph(p, title, f);
}

static int pprof_fn(const struct profile *p, FILE *f, const void *arg)
{
	(void)arg;
	return report_pprof(p, f);
}

/* As perf report: one section per event, on-CPU first; or the one --event chose. */
static int report_tables(const struct profile *p, bool ev_set, enum pview ev, const struct table_opts *to)
{
	struct profile v;
	int e;

	if (!ev_set || ev == PV_ON_CPU) {
		e = report_table(p, to, stdout);
		if (e || ev_set || !p->nr_off_stacks)
			return e;
		if (!to->json)
			fputc('\n', stdout);
		ev = PV_OFF_CPU;
	}
	e = profile_view(p, ev, false, &v) ?: report_table(&v, to, stdout);
	profile_view_free(&v);
	return e;
}

/*
 * The profile, its on-CPU stacks split by the spans they fell in when
 * by_span: two reads of the file, the spans as report --spans (or
 * annotate, with external) places them, then the stacks.
 */
static int load_profile(struct profile **p, const char *input, const char *external, bool by_span)
{
	struct spans_report_opts so = { .input = input, .external = external };
	struct span_label *spans = NULL;
	struct strpool pool = {};
	size_t n = 0;
	char err[512] = "";
	int e = by_span ? spans_collect(&so, &pool, &spans, &n, err, sizeof(err)) : 0;

	if (!e)
		e = profile__load_spans(p, input, NULL, spans, n, err, sizeof(err));
	/* Some failures (out of memory) leave err unwritten. */
	if (e && err[0])
		pr_err("%s", err);
	else if (e)
		pr_err("cannot read %s: %s", input, strerror(-e));
	else if (by_span)
		pr_debug("%s: %zu spans prefix the stacks of %llu samples", input, n, (unsigned long long)(*p)->samples);
	free(spans);
	strpool_free(&pool);
	return e;
}

int report_folded_by_span(const char *input, const char *external)
{
	struct profile *p = NULL;
	int e, ret = 1;

	if (load_profile(&p, input, external, true))
		return 1;
	e = report_folded(p, stdout);
	if (e || (fflush(stdout) && (e = -errno))) {
		pr_err("cannot write the folded stacks of %s: %s", input, strerror(-e));
		goto cleanup;
	}
	ret = 0;
cleanup:
	profile__free(p);
	return ret;
}

int cmd_report(int argc, char **argv)
{
	enum { OPT_SPANS = 256, OPT_BPF_SAMPLES, OPT_FOLDED, OPT_SPAN_PREFIX, OPT_FLAME, OPT_PPROF, OPT_STDIO, OPT_PCT, OPT_EVENT };
	static const struct option longopts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "sort", required_argument, NULL, 's' },
		{ "format", required_argument, NULL, 'f' },
		{ "call-graph", no_argument, NULL, 'g' },
		{ "percent-limit", required_argument, NULL, OPT_PCT },
		{ "folded", no_argument, NULL, OPT_FOLDED },
		{ "span-prefix", no_argument, NULL, OPT_SPAN_PREFIX },
		{ "flamegraph", required_argument, NULL, OPT_FLAME },
		{ "pprof", required_argument, NULL, OPT_PPROF },
		{ "event", required_argument, NULL, OPT_EVENT },
		{ "spans", no_argument, NULL, OPT_SPANS },
		{ "bpf-samples", no_argument, NULL, OPT_BPF_SAMPLES },
		{ "stdio", no_argument, NULL, OPT_STDIO },
		{ "verbose", no_argument, NULL, 'v' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct table_opts to = {};
	struct profile *p = NULL, view = {};
	const struct profile *shown;
	enum pview ev = PV_ON_CPU;
	bool ev_set = false;
	const char *input = "perf.data", *flame = NULL, *pprof = NULL;
	bool spans = false, bpf_samples = false, folded = false, otlp = false, span_prefix = false;
	char err[512], title[600];
	int c, e, ret = 1;

	sp_prog = "spanperf report";
	parse_sort_keys("comm,dso,sym", &to);
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:s:ghvq", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			input = optarg;
			break;
		case 's':
			if (parse_sort_keys(optarg, &to)) {
				pr_err("--sort '%s' is not a list of comm, pid, tid, dso, sym, trace, span and attr:NAME", optarg);
				return 1;
			}
			break;
		case 'f':
			if (strcmp(optarg, "text") && strcmp(optarg, "json") && strcmp(optarg, "otlp-json")) {
				pr_err("--format '%s' is neither text, json nor otlp-json", optarg);
				return 1;
			}
			to.json = !strcmp(optarg, "json");
			otlp = !strcmp(optarg, "otlp-json");
			break;
		case 'g':
			to.callgraph = true;
			break;
		case OPT_PCT: {
			char *end;

			to.min_pct = strtod(optarg, &end);
			if (*end || end == optarg || !(to.min_pct >= 0 && to.min_pct <= 100)) {
				pr_err("--percent-limit '%s' is not a percentage", optarg);
				return 1;
			}
			break;
		}
		case OPT_FOLDED:
			folded = true;
			break;
		case OPT_SPAN_PREFIX:
			span_prefix = true;
			break;
		case OPT_EVENT:
			if (pview_parse(optarg, &ev)) {
				pr_err("--event '%s' is not on-cpu, off-cpu or wall", optarg);
				return 1;
			}
			ev_set = true;
			break;
		case OPT_FLAME:
			flame = optarg;
			break;
		case OPT_PPROF:
			pprof = optarg;
			break;
		case OPT_SPANS:
			spans = true;
			break;
		case OPT_BPF_SAMPLES:
			bpf_samples = true;
			break;
		case OPT_STDIO:
			break;
		case 'v':
			sp_verbose++;
			break;
		case 'q':
			sp_verbose = -1;
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
		pr_err("unexpected argument '%s'; the input file goes after -i", argv[optind]);
		return 1;
	}
	if (otlp && !spans) {
		pr_err("--format otlp-json writes spans: use it with --spans");
		return 1;
	}
	if (span_prefix && (!folded || spans)) {
		pr_err("--span-prefix prefixes the stacks of --folded: use it with --folded%s", spans ? ", not --spans" : "");
		return 1;
	}
	if (span_prefix && ev_set && ev != PV_ON_CPU) {
		pr_err("--span-prefix prefixes on-CPU samples only: leave out --event %s", ev == PV_OFF_CPU ? "off-cpu" : "wall");
		return 1;
	}
	if (spans) {
		struct spans_report_opts so = { .input = input, .json = to.json, .otlp = otlp, .bpf_samples = bpf_samples };

		if (spans_report(&so, err, sizeof(err))) {
			pr_err("%s", err);
			return 1;
		}
		return 0;
	}
	if (load_profile(&p, input, NULL, span_prefix))
		return 1;
	pr_debug("%s: %llu samples in %zu distinct stacks of %zu functions; %llu processes started by fork "
		 "(each with its parent's maps), %llu execs; %llu samples lost while recording; %d dsos read from "
		 "the build-id cache (containers' files, or files gone from their paths)",
		 input, (unsigned long long)p->samples, p->nr_stacks, p->nr_funcs,
		 (unsigned long long)p->sess->forks, (unsigned long long)p->sess->execs, (unsigned long long)p->lost,
		 symbolizer__from_cache(p->sym));
	if (sp_verbose >= 1) {
		pd_reader__print_features(p->sess->rd, stderr); /* where and how it was recorded */
		unwinder__print_stats(p->unwinder, stderr);
	}
	/* Off-CPU and wall views weigh stacks by their nanoseconds. */
	shown = p;
	if (ev_set && ev != PV_ON_CPU) {
		e = profile_view(p, ev, true, &view);
		if (e) {
			pr_err("cannot report %s: %s", input, strerror(-e));
			goto cleanup;
		}
		shown = &view;
	}
	if (flame) {
		snprintf(title, sizeof(title), "%s: %llu samples of %s%s", input, (unsigned long long)shown->samples,
			 shown->event ? shown->event : "?", shown == p ? "" : ", in ns");
		e = shown->samples ? write_output(flame, flame_fn, shown, title) : -ENODATA;
		if (e) {
			pr_err("cannot write --flamegraph '%s': %s", flame,
			       e == -ENODATA ? "the file has no samples" : strerror(-e));
			goto cleanup;
		}
	}
	if (pprof) {
		e = write_output(pprof, pprof_fn, p, NULL);
		if (e) {
			pr_err("cannot write --pprof '%s': %s", pprof, strerror(-e));
			goto cleanup;
		}
	}
	if (folded)
		e = report_folded(shown, stdout);
	else if (!flame && !pprof)
		e = report_tables(p, ev_set, ev, &to);
	if (e) {
		pr_err("cannot report %s: %s", input, strerror(-e));
		goto cleanup;
	}
	if (fflush(stdout)) {
		pr_err("cannot write the report: %s", strerror(errno));
		goto cleanup;
	}
	ret = 0;
cleanup:
	profile_view_free(&view);
	profile__free(p);
	return ret;
}
