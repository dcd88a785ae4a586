// SPDX-License-Identifier: GPL-2.0
/* spanperf agent: argv to struct agent_opts; the engine is live/agent.c. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "agent_opts.h"
#include "ch_wire.h"
#include "cmd_opts.h"
#include "commands.h"
#include "log.h"
#include "options.h"
#include "web_serve.h"

static void agent_usage(FILE *out)
{
	fprintf(out,
		"Usage: spanperf agent --clickhouse URL [options]\n"
		"\n"
		"The whole host, always on, at a low rate: each window's stacks and spans,\n"
		"symbolized on this host, shipped to ClickHouse (docs: spanperf-agent(1)).\n"
		"\n"
		"      --clickhouse URL   the server, http://HOST:8123 or https://...; the user and\n"
		"                         password from CLICKHOUSE_USER and CLICKHOUSE_PASSWORD\n"
		"      --clickhouse-password-file FILE  the password, its first line\n"
		"      --clickhouse-ca FILE  https: the CA that signed the servers' certificates\n"
		"                         (PEM; default the system's store)\n"
		"      --cluster NAME     a Distributed table over NAME's shards (system.clusters)\n"
		"      --database DB      (default spanperf); tables are created when missing\n"
		"      --retention DAYS   drop the days' partitions older than DAYS (hourly)\n"
		"      --host-label NAME  the host's name in the rows (default the hostname)\n"
		"      --window SECS      rows are sent every SECS (default 10)\n"
		"  -F, --freq HZ          samples per second per CPU (default 19)\n"
		"  -g, --call-graph MODE  stacks: ehframe (the default, frame pointers where\n"
		"                         the kernel cannot) or fp\n"
		"      --off-cpu          also where threads block, and who woke them\n"
		"      --span SPEC        spans, as record's, with their wall-time split\n"
		"      --otel             the OTel context (trace ids) of each sample and span\n"
		"  -d, --duration SECS    stop after SECS (default: at INT or TERM)\n"
		"      --spool DIR        windows the server cannot take wait here, oldest sent first\n"
		"      --spool-max MB     the spool's bound; past it the oldest are dropped (default 256)\n"
		"      --serve ADDR:PORT  the agent's health for Prometheus, on /metrics\n"
		"      --web-config FILE  with --serve: TLS and basic auth, in the YAML of\n"
		"                         node_exporter's --web.config.file\n"
		"  -q, --quiet / -v, --verbose\n"
		"  -h, --help\n"
		"\n"
		"Examples:\n"
		"  spanperf agent --clickhouse http://ch1:8123 --spool /var/spool/spanperf\n"
		"  spanperf agent --clickhouse http://127.0.0.1:8123 --cluster fleet --span syscall:nanosleep\n"
		"  spanperf report --clickhouse http://127.0.0.1:8123 --since 1h --host web1 -g\n");
}

static int opt_span(const char *arg, void *opts, char *err, size_t errlen)
{
	struct agent_opts *o = opts;

	(void)err, (void)errlen;
	return cmd_push_arg(&o->span_texts, &o->nr_spans, arg);
}

static int opt_call_graph(const char *arg, void *opts, char *err, size_t errlen)
{
	struct agent_opts *o = opts;

	if (strcmp(arg, "fp") && strcmp(arg, "ehframe"))
		return set_errorf(err, errlen, -EINVAL, "--call-graph '%s' is not fp or ehframe", arg);
	o->fp = !strcmp(arg, "fp");
	return 0;
}

#define A(f) offsetof(struct agent_opts, f)
static const struct opt_def agent_defs[] = {
	{ .name = "clickhouse", .type = OPT_T_STR, .off = A(url), .bad = "needs the server's URL" },
	{ .name = "clickhouse-password-file", .type = OPT_T_STR, .off = A(password_file), .bad = "needs a file" },
	{ .name = "clickhouse-ca", .type = OPT_T_STR, .off = A(ca_file), .bad = "needs a CA file" },
	{ .name = "retention", .type = OPT_T_U64, .off = A(retention_days), .lo = 1, .hi = 100000,
	  .bad = "is not a number of days from 1 to 100000" },
	{ .name = "cluster", .type = OPT_T_STR, .off = A(cluster), .bad = "needs a cluster's name" },
	{ .name = "database", .type = OPT_T_STR, .off = A(database), .bad = "needs a database's name" },
	{ .name = "host-label", .type = OPT_T_STR, .off = A(host_label), .bad = "needs a name" },
	{ .name = "window", .type = OPT_T_SECONDS, .off = A(window), .bad = "is not a positive number of seconds" },
	{ .name = "freq", .letter = 'F', .type = OPT_T_U64, .off = A(freq), .lo = 1, .hi = 100000,
	  .bad = "is not a frequency in Hz from 1 to 100000" },
	{ .letter = 'g', .type = OPT_T_NONE },
	{ .name = "call-graph", .type = OPT_T_FN, .fn = opt_call_graph },
	{ .name = "off-cpu", .type = OPT_T_FLAG, .off = A(offcpu) },
	{ .name = "span", .type = OPT_T_FN, .fn = opt_span },
	{ .name = "otel", .type = OPT_T_FLAG, .off = A(otel) },
	{ .name = "duration", .letter = 'd', .type = OPT_T_SECONDS, .off = A(duration),
	  .bad = "is not a positive number of seconds" },
	{ .name = "spool", .type = OPT_T_STR, .off = A(spool), .bad = "needs a directory" },
	{ .name = "spool-max", .type = OPT_T_U64, .off = A(spool_max_mb), .lo = 1, .hi = 1u << 20,
	  .bad = "is not a size in MB from 1 to 1048576" },
	{ .name = "serve", .type = OPT_T_STR, .off = A(serve), .bad = "needs ADDR:PORT" },
	{ .name = "web-config", .type = OPT_T_STR, .off = A(web_config), .bad = "needs a file" },
	OPT_DEFS_VERBOSITY(struct agent_opts),
	{}
};
#undef A

static int agent_parse_args(int argc, char **argv, struct agent_opts *o, char *err, size_t errlen)
{
	uint64_t seen;
	int e;

	agent_opts_defaults(o);
	e = opts_parse(agent_defs, 0, argc, argv, o, &seen, agent_usage, err, errlen);
	if (e)
		return e;
	if (optind < argc)
		return set_errorf(err, errlen, -EINVAL, "agent runs no command ('%s'); see --help", argv[optind]);
	if (!o->url)
		return set_errorf(err, errlen, -EINVAL, "agent needs --clickhouse URL: where the windows go");
	if (!ch_ident_ok(o->database))
		return set_errorf(err, errlen, -EINVAL, "--database '%s' is not a name of letters, digits and _",
				  o->database);
	if (o->cluster && !ch_ident_ok(o->cluster))
		return set_errorf(err, errlen, -EINVAL, "--cluster '%s' is not a name of letters, digits and _",
				  o->cluster);
	if (o->web_config && !o->serve)
		return set_errorf(err, errlen, -EINVAL, "--web-config needs --serve");
	if (o->web_config && (e = web_config_check(o->web_config, err, errlen)))
		return e;
	if (o->window < 1)
		return set_errorf(err, errlen, -EINVAL, "--window %g is under a second", o->window);
	return 0;
}

int cmd_agent(int argc, char **argv)
{
	struct agent_opts o;
	char err[512];
	int e, ret;

	sp_prog = "spanperf agent";
	e = agent_parse_args(argc, argv, &o, err, sizeof(err));
	if (!e)
		sp_verbose = o.verbose;
	ret = e ? cmd_parse_failed(e, err) : agent_run(&o);
	agent_opts_free(&o);
	return ret;
}
