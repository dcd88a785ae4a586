// SPDX-License-Identifier: GPL-2.0
/* spanperf list: argv, then the events and span sources of this machine (sys/event_catalog.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd_opts.h"
#include "commands.h"
#include "event_catalog.h"
#include "log.h"

void list_usage(FILE *out)
{
	fprintf(out, "Usage: spanperf list [--all]\n\n"
		     "Lists the events that open on this machine (tried one by one) and the span\n"
		     "sources it can attach.  --all also lists unsupported events, with the\n"
		     "reason, and every tracepoint.\n\nExamples:\n  spanperf list\n"
		     "  spanperf list --all | grep sched:\n");
}

static const struct opt_def list_defs[] = {
	{ .name = "all", .type = OPT_T_FLAG, .off = offsetof(struct list_args, all) },
	{ .name = "help", .letter = 'h', .type = OPT_T_HELP },
	{}
};

int list_parse_args(int argc, char **argv, struct list_args *a, char *err, size_t errlen)
{
	uint64_t seen;

	memset(a, 0, sizeof(*a));
	return opts_parse(list_defs, OPTS_NO_ARGS, argc, argv, a, &seen, list_usage, err, errlen);
}

int cmd_list(int argc, char **argv)
{
	struct list_args a;
	char err[256];
	int e;

	sp_prog = "spanperf list";
	e = list_parse_args(argc, argv, &a, err, sizeof(err));
	if (e)
		return cmd_parse_failed(e, err);
	return event_catalog_print(stdout, a.all) ? 1 : 0;
}
