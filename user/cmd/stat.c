// SPDX-License-Identifier: GPL-2.0
/* spanperf stat: argv into struct stat_opts (live/stat_opts.h), then the count. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd_opts.h"
#include "commands.h"
#include "log.h"
#include "stat.h"

void stat_usage(FILE *out)
{
	fprintf(out,
		"Usage: spanperf stat [options] [-- CMD [ARGS...]]\n"
		"\n"
		"Counts events per thread: each counter is read by a BPF program at every\n"
		"context switch and added to the outgoing thread's entry in a BPF map.  With\n"
		"-- CMD, as perf stat: CMD and every process it forks or execs (-a: the\n"
		"whole host while CMD runs).\n"
		"\n"
		"  -a, --all-cpus         count the whole host (the default without CMD; with\n"
		"                         CMD, the whole host while it runs)\n"
		"  -p, --pid PID,..       only these processes\n"
		"  -t, --tid TID,..       only these threads\n"
		"  -e, --event EVENT,..   events (default: task-clock, context-switches,\n"
		"                         cpu-migrations, page-faults, cycles, instructions,\n"
		"                         branches, branch-misses); at most 8\n"
		"      --per-thread       one row per thread instead of totals\n"
		"  -I, --interval-print MS  print every MS milliseconds\n"
		"  -j, --json             JSON lines, one per thread and event\n"
		"  -o, --output FILE      write the results to FILE (default: stderr, as perf)\n"
		"  -d, --duration SECS    stop after SECS seconds\n"
		"      --max-threads N    size of the per-thread map (default 32768)\n"
		"      --raw-tp           use the raw_tp switch hook even where tp_btf works\n"
		"      --serve [ADDR:]PORT  serve the counters per cgroup and comm at /metrics in\n"
		"                         Prometheus' text format (ADDR: 127.0.0.1 unless given)\n"
		"      --serve-top N      series per metric, by CPU time; the rest summed as\n"
		"                         _other (default 50)\n"
		"      --web-config FILE  with --serve: TLS and basic auth, in the YAML of\n"
		"                         node_exporter's --web.config.file\n"
		"      --node-perf        with --serve: also node_exporter's perf collector series\n"
		"                         (node_perf_*_total{cpu=\"N\"}), per CPU\n"
		"      --node-perf-tracepoint SUBSYS:EVENT  with --node-perf: that tracepoint's\n"
		"                         hits per CPU too, as node_perf_SUBSYS_EVENT{cpu=\"N\"}\n"
		"                         (node_exporter's --collector.perf.tracepoint; repeatable)\n"
		"      --span SPEC        with --serve: a wall-time histogram and the time on and\n"
		"                         off CPU of these spans (SPEC as record's; repeatable)\n"
		"  -q, --quiet / -v, --verbose\n"
		"  -h, --help\n"
		"\n"
		"It stops after -d seconds, when CMD exits, or on SIGINT/SIGTERM.\n"
		"\n"
		"Examples:\n"
		"  spanperf stat -d 5                              # whole host, 5 s\n"
		"  spanperf stat --per-thread -e task-clock,cs -- make -j8   # make's processes\n"
		"  spanperf stat -a -- sleep 5                     # the whole host for 5 s\n"
		"  spanperf stat -p 1234 -I 1000 --json -o out.jsonl\n"
		"  spanperf stat -e page-faults,sched:sched_switch -d 2\n"
		"  spanperf stat --serve 9464                      # until SIGINT, for Prometheus\n"
		"  spanperf stat --serve :9464 --web-config web.yml  # TLS, basic auth\n");
}

static int opt_node_tp(const char *arg, void *opts, char *err, size_t errlen)
{
	struct stat_opts *o = opts;

	(void)err;
	(void)errlen;
	return cmd_push_arg(&o->node_tps, &o->nr_node_tps, arg);
}

static int opt_span(const char *arg, void *opts, char *err, size_t errlen)
{
	struct stat_opts *o = opts;

	(void)err;
	(void)errlen;
	return cmd_push_arg(&o->spans, &o->nr_spans, arg);
}

#define S(f) offsetof(struct stat_opts, f)
static const struct opt_def stat_defs[] = {
	OPT_DEFS_RUN(struct stat_opts),
	{ .name = "event", .letter = 'e', .type = OPT_T_STR, .off = S(events),
	  .bad = "needs an event name; see 'spanperf list'" },
	{ .name = "per-thread", .type = OPT_T_FLAG, .off = S(per_thread) },
	{ .name = "interval-print", .letter = 'I', .type = OPT_T_U64, .off = S(interval_ms), .lo = 10,
	  .hi = 3600 * 1000, .bad = "is not an interval in milliseconds from 10 to 3600000" },
	{ .name = "json", .letter = 'j', .type = OPT_T_FLAG, .off = S(json) },
	{ .name = "serve", .type = OPT_T_STR, .off = S(serve), .bad = "needs [ADDR:]PORT" },
	{ .name = "span", .type = OPT_T_FN, .fn = opt_span },
	{ .name = "node-perf", .type = OPT_T_FLAG, .off = S(node_perf) },
	{ .name = "node-perf-tracepoint", .type = OPT_T_FN, .fn = opt_node_tp },
	{ .name = "serve-top", .type = OPT_T_U64, .off = S(serve_top), .lo = 1, .hi = 100000,
	  .bad = "is not a number of series from 1 to 100000" },
	{ .name = "web-config", .type = OPT_T_STR, .off = S(web_config), .bad = "needs a file" },
	OPT_DEFS_OUTPUT(struct stat_opts),
	OPT_DEFS_VERBOSITY(struct stat_opts),
	{}
};
#undef S

int stat_parse_args(int argc, char **argv, struct stat_opts *o, char *err, size_t errlen)
{
	uint64_t seen;
	int e;

	stat_opts_init(o);
	e = opts_parse(stat_defs, OPTS_STOP_AT_ARG, argc, argv, o, &seen, stat_usage, err, errlen) ?:
	    opts_target(&o->pids, &o->tids, argc, argv, &o->cmd, err, errlen);
	if (e)
		return e;
	o->all_cpus = seen & (1ull << opts_index(stat_defs, "all-cpus"));
	if (o->serve && o->interval_ms)
		return set_errorf(err, errlen, -EINVAL, "--serve and -I both report as the run goes; give one of them");
	if ((seen & (1ull << opts_index(stat_defs, "serve-top"))) && !o->serve)
		return set_errorf(err, errlen, -EINVAL, "--serve-top needs --serve");
	if (o->node_perf && !o->serve)
		return set_errorf(err, errlen, -EINVAL, "--node-perf needs --serve: the series are served at /metrics");
	if (o->nr_node_tps && !o->node_perf)
		return set_errorf(err, errlen, -EINVAL, "--node-perf-tracepoint needs --node-perf: its series are among those");
	if (o->nr_spans && !o->serve)
		return set_errorf(err, errlen, -EINVAL, "--span needs --serve: stat shows spans as histograms there");
	if (o->nr_spans > SP_MAX_SPANS)
		return set_errorf(err, errlen, -E2BIG, "%d --span given; at most %d", o->nr_spans, SP_MAX_SPANS);
	if (o->web_config && !o->serve)
		return set_errorf(err, errlen, -EINVAL, "--web-config needs --serve");
	e = o->serve ? stat_serve_addr_check(o->serve, err, errlen) : 0;
	return e ?: o->web_config ? stat_web_config_check(o->web_config, err, errlen) : 0;
}

int cmd_stat(int argc, char **argv)
{
	struct stat_opts o;
	char err[512];
	int e, ret = 1;

	sp_prog = "spanperf stat";
	e = stat_parse_args(argc, argv, &o, err, sizeof(err));
	if (e) {
		ret = cmd_parse_failed(e, err);
	} else {
		sp_verbose = o.verbose;
		stat__run(&o, &ret);
	}
	stat_opts_free(&o);
	return ret;
}
