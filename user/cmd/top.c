// SPDX-License-Identifier: GPL-2.0
/* spanperf top: argv to struct top_opts; the engine is live/top.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd_opts.h"
#include "commands.h"
#include "log.h"
#include "options.h"
#include "top.h"

static void top_usage(FILE *out)
{
	fprintf(out,
		"Usage: spanperf top [options]\n"
		"\n"
		"The hottest symbols, refreshed, sampled as spanperf record samples.\n"
		"\n"
		"  -a, --all-cpus         the whole host (the default)\n"
		"  -p, --pid PID,..       only these processes\n"
		"  -t, --tid TID,..       only these threads\n"
		"  -C, --cpu CPUS         only these CPUs, e.g. 0-3,8\n"
		"  -F, --freq HZ          samples per second per CPU (default 999)\n"
		"  -e, --event EVENT      sampling event (default cycles, else cpu-clock)\n"
		"  -g                     call chains: each row's callers under it (unwound as\n"
		"                         record -g does: ehframe, else frame pointers)\n"
		"  -s, --sort KEYS        as report: comm,pid,tid,dso,sym,... (default comm,dso,sym)\n"
		"  -d, --delay SECS       seconds between refreshes; each table is that window (default 2)\n"
		"  -E, --entries N        rows shown (default 20)\n"
		"  -n, --iterations N     N refreshes, then exit\n"
		"      --stdio            print each table, clearing the terminal in between\n"
		"      --batch            print each table after the last, for scripts (with -n)\n"
		"                         (without either: a full screen on a terminal, keys:\n"
		"                         q quits, s sorts, / filters rows, p pauses)\n"
		"      --spans --span SPEC  the span table instead: per span name its rate,\n"
		"                         p50/p99, time on CPU and top functions (SPEC as record's)\n"
		"      --off-cpu          with --spans: also time off CPU and where spans blocked\n"
		"      --comms COMM,..    only samples of threads of these names (as report's)\n"
		"      --dsos DSO,..      only samples whose address is in these files\n"
		"      --symbols SYM,..   only samples whose address is in these functions\n"
		"      --percent-limit P  leave out rows under P percent\n"
		"  -q, --quiet / -v, --verbose\n"
		"  -h, --help\n"
		"\n"
		"It stops on SIGINT/SIGTERM or after -n refreshes.\n"
		"\n"
		"Examples:\n"
		"  spanperf top --stdio\n"
		"  spanperf top --batch -n 2 -d 1 -E 5\n"
		"  spanperf top -p 1234 -g --sort sym\n");
}

static int opt_comms(const char *arg, void *opts, char *err, size_t errlen)
{
	return name_set_add(&((struct top_opts *)opts)->filter.comms, arg, "--comms", err, errlen);
}

static int opt_dsos(const char *arg, void *opts, char *err, size_t errlen)
{
	return name_set_add(&((struct top_opts *)opts)->filter.dsos, arg, "--dsos", err, errlen);
}

static int opt_symbols(const char *arg, void *opts, char *err, size_t errlen)
{
	return name_set_add(&((struct top_opts *)opts)->filter.syms, arg, "--symbols", err, errlen);
}

static int opt_percent(const char *arg, void *opts, char *err, size_t errlen)
{
	struct top_opts *o = opts;

	return cmd_percent_limit(arg, &o->min_pct, err, errlen);
}

static int opt_span(const char *arg, void *opts, char *err, size_t errlen)
{
	struct top_opts *o = opts;

	(void)err;
	(void)errlen;
	return cmd_push_arg(&o->span_texts, &o->nr_spans, arg);
}

#define T(f) offsetof(struct top_opts, f)
static const struct opt_def top_defs[] = {
	{ .name = "all-cpus", .letter = 'a', .type = OPT_T_NONE },
	{ .name = "pid", .letter = 'p', .type = OPT_T_IDS, .off = T(pids),
	  .bad = "is not a comma-separated list of process ids" },
	{ .name = "tid", .letter = 't', .type = OPT_T_IDS, .off = T(tids),
	  .bad = "is not a comma-separated list of thread ids" },
	{ .name = "cpu", .letter = 'C', .type = OPT_T_CPUS, .off = T(cpus), .bad = "is not a CPU list like 0-3,8" },
	{ .name = "freq", .letter = 'F', .type = OPT_T_U64, .off = T(freq), .lo = 1, .hi = 1000000,
	  .bad = "is not a frequency in Hz from 1 to 1000000" },
	{ .name = "event", .letter = 'e', .type = OPT_T_STR, .off = T(events),
	  .bad = "needs an event name; see 'spanperf list'" },
	{ .letter = 'g', .type = OPT_T_FLAG, .off = T(callgraph) },
	{ .name = "sort", .letter = 's', .type = OPT_T_STR, .off = T(sort), .bad = "needs sort keys" },
	{ .name = "delay", .letter = 'd', .type = OPT_T_SECONDS, .off = T(delay),
	  .bad = "is not a positive number of seconds" },
	{ .name = "entries", .letter = 'E', .type = OPT_T_U64, .off = T(entries), .lo = 1, .hi = 100000,
	  .bad = "is not a number of rows from 1 to 100000" },
	{ .name = "iterations", .letter = 'n', .type = OPT_T_U64, .off = T(iterations), .lo = 1, .hi = 1u << 30,
	  .bad = "is not a positive number of refreshes" },
	{ .name = "stdio", .type = OPT_T_FLAG, .off = T(stdio) },
	{ .name = "spans", .type = OPT_T_FLAG, .off = T(spans) },
	{ .name = "span", .type = OPT_T_FN, .fn = opt_span },
	{ .name = "off-cpu", .type = OPT_T_FLAG, .off = T(offcpu) },
	{ .name = "batch", .type = OPT_T_FLAG, .off = T(batch) },
	{ .name = "comms", .type = OPT_T_FN, .fn = opt_comms },
	{ .name = "dsos", .type = OPT_T_FN, .fn = opt_dsos },
	{ .name = "symbols", .type = OPT_T_FN, .fn = opt_symbols },
	{ .name = "percent-limit", .type = OPT_T_FN, .fn = opt_percent },
	OPT_DEFS_VERBOSITY(struct top_opts),
	{}
};
#undef T

static int top_parse_args(int argc, char **argv, struct top_opts *o, char *err, size_t errlen)
{
	uint64_t seen;
	int e;

	top_opts_defaults(o);
	e = opts_parse(top_defs, 0, argc, argv, o, &seen, top_usage, err, errlen);
	if (e)
		return e;
	if (optind < argc)
		return set_errorf(err, errlen, -EINVAL, "top runs no command ('%s'); see --help", argv[optind]);
	if (o->pids.n && o->tids.n)
		return set_errorf(err, errlen, -EINVAL, "-p and -t both filter; give one of them");
	if (o->spans != (o->nr_spans > 0))
		return set_errorf(err, errlen, -EINVAL, "--spans and --span SPEC go together: the table is of those spans");
	if (o->offcpu && !o->spans)
		return set_errorf(err, errlen, -EINVAL, "--off-cpu needs --spans: it shows where spans blocked");
	if (o->stdio && o->batch)
		return set_errorf(err, errlen, -EINVAL, "--stdio and --batch are two ways to print; give one of them");
	return 0;
}

int cmd_top(int argc, char **argv)
{
	struct top_opts o;
	char err[512];
	int e, ret;

	sp_prog = "spanperf top";
	e = top_parse_args(argc, argv, &o, err, sizeof(err));
	ret = e ? cmd_parse_failed(e, err) : top_run(&o, sp_argc, sp_argv);
	top_opts_free(&o);
	return ret;
}
