// SPDX-License-Identifier: GPL-2.0
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "log.h"
#include "man_page.h"
#include "man_pages.h" /* generated from docs/: man_spanperf_CMD and md_spanperf_CMD */
#include "stop.h"
#include "util.h"

/* A command's manual page, docs/spanperf-CMD.md: a command without one does not link. */
#define PAGE(cmd) man_spanperf_##cmd, md_spanperf_##cmd

static const struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
	bool finish; /* a stop signal lets it finish its file (stop.h); the others die of it */
	enum stop_pipe pipe; /* what SIGPIPE does to it (stop.h) */
	const char *man, *md; /* spanperf help CMD */
} cmds[] = {
	{ "record", cmd_record, "sample the whole host (or some threads) into a perf.data", true, STOP_PIPE_IGNORE,
	  PAGE(record) },
	{ "stat", cmd_stat, "count events per thread, aggregated in BPF at context switches", true, STOP_PIPE_STOP,
	  PAGE(stat) },
	{ "top", cmd_top, "the hottest symbols, live, refreshed every few seconds", true, STOP_PIPE_STOP, PAGE(top) },
	{ "report", cmd_report, "summarize a perf.data: tables and JSON", false, STOP_PIPE_DIE, PAGE(report) },
	{ "diff", cmd_diff, "compare two recordings, as perf diff: shares, deltas, a differential flame graph",
	  false, STOP_PIPE_DIE, PAGE(diff) },
	{ "annotate", cmd_annotate, "join spans made elsewhere (JSON lines) with a recording's samples", false,
	  STOP_PIPE_DIE, PAGE(annotate) },
	{ "list", cmd_list, "events this machine can count or sample, and span sources it can attach", false,
	  STOP_PIPE_DIE, PAGE(list) },
	{ "probe", cmd_probe, "show the kernel features found and the fallback chosen for each need", false,
	  STOP_PIPE_DIE, PAGE(probe) },
};

static void usage(FILE *out)
{
	fprintf(out, "Usage: spanperf COMMAND [options]\n"
		     "       spanperf help [COMMAND]\n"
		     "       spanperf --version\n\n"
		     "A whole-host profiler on BPF whose files perf report and perf script read.\n\n"
		     "Commands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++)
		fprintf(out, "  %-9s %s\n", cmds[i].name, cmds[i].help);
	fprintf(out, "\nRun 'spanperf COMMAND --help' for a command's options, and\n"
		     "'spanperf help COMMAND' for its manual page.\n\n"
		     "Examples:\n"
		     "  spanperf record -g -d 5 && spanperf report\n"
		     "  spanperf probe\n");
}

int main(int argc, char **argv)
{
	const struct cmd *c = NULL;

	for (size_t i = 0; argc > 1 && i < ARRAY_SIZE(cmds); i++)
		if (!strcmp(argv[1], cmds[i].name))
			c = &cmds[i];
	/*
	 * First thing: a SIGINT or SIGTERM during record's set-up is a flag
	 * that the run sees at its first wait, so that the file is complete.
	 */
	stop_init(c && c->finish, c ? c->pipe : STOP_PIPE_DIE);
	sp_argc = argc;
	sp_argv = argv;
	if (argc < 2) {
		usage(stderr);
		return 1;
	}
	if (!strcmp(argv[1], "help") && argc > 2) {
		for (size_t i = 0; i < ARRAY_SIZE(cmds); i++)
			if (!strcmp(argv[2], cmds[i].name))
				return man_page_show(cmds[i].man, cmds[i].md) ? 1 : 0;
		fprintf(stderr, "spanperf: '%s' is not a command; see 'spanperf help'\n", argv[2]);
		return 1;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("spanperf %s\n", SPANPERF_VERSION);
		return 0;
	}
	if (c)
		return c->fn(argc - 1, argv + 1); /* an exit status */
	fprintf(stderr, "spanperf: '%s' is not a command; see 'spanperf --help'\n", argv[1]);
	return 1;
}
