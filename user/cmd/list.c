// SPDX-License-Identifier: GPL-2.0
/*
 * spanperf list: the events this machine can count or sample (each one
 * tried with perf_event_open, so "supported" means it opened here) and the
 * span sources it can attach.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd_opts.h"
#include "commands.h"
#include "events.h"
#include "host.h"
#include "kernel_features.h"
#include "libbpf_setup.h"
#include "log.h"
#include "parse.h"
#include "perf_events.h"
#include "util.h"

static const char *kind_name[] = {
	[EV_HW] = "Hardware event", [EV_CACHE] = "Hardware cache event", [EV_SW] = "Software event",
	[EV_RAW] = "Raw event", [EV_PMU] = "Kernel PMU event", [EV_TRACEPOINT] = "Tracepoint event",
	[EV_SCHED] = "Scheduler account, stat only",
};

static void try_one(const char *name, int cpu, bool all)
{
	struct event_spec ev;
	int e;

	if (event_parse(name, &ev, NULL, 0))
		return;
	/* Counted by the switch program from the task's own accounts: no perf event to try. */
	e = ev.kind == EV_SCHED ? 0 : pe_try_open(&ev.attr, cpu);
	if (!e)
		printf("  %-44s [%s]\n", name, kind_name[ev.kind]);
	else if (all)
		printf("  %-44s [%s, not supported: %s]\n", name, kind_name[ev.kind], strerror(-e));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* PMU/event/ for every event a PMU exports in sysfs. */
static void list_pmu_events(int cpu, bool all)
{
	const char *root = "/sys/bus/event_source/devices";
	char **names = NULL;
	int n = 0;
	DIR *d = opendir(root);
	struct dirent *pmu;

	if (!d)
		return;
	while ((pmu = readdir(d))) {
		char path[512];
		struct dirent *ev;
		DIR *e;

		if (pmu->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/events", root, pmu->d_name);
		e = opendir(path);
		if (!e)
			continue;
		while ((ev = readdir(e))) {
			char **nn;

			/* .scale and .unit files describe an event; they are not events. */
			if (ev->d_name[0] == '.' || strchr(ev->d_name, '.'))
				continue;
			nn = realloc(names, (n + 1) * sizeof(*names));
			if (!nn)
				break;
			names = nn;
			if (asprintf(&names[n], "%s/%s/", pmu->d_name, ev->d_name) < 0)
				break;
			n++;
		}
		closedir(e);
	}
	closedir(d);
	sort_n(names, n, sizeof(*names), cmp_str);
	for (int i = 0; i < n; i++) {
		try_one(names[i], cpu, all);
		free(names[i]);
	}
	free(names);
}

static void list_tracepoints(bool all)
{
	char path[256];
	int cats = 0, total = 0;
	struct dirent *c;
	DIR *d;

	snprintf(path, sizeof(path), "%s/events", events_tracefs_dir());
	d = opendir(path);
	if (!d) {
		printf("  (tracefs is not mounted; run as root to mount it)\n");
		return;
	}
	while ((c = readdir(d))) {
		char sub[512];
		struct dirent *t;
		DIR *e;
		int here = 0;

		if (c->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, c->d_name);
		e = opendir(sub);
		if (!e)
			continue;
		while ((t = readdir(e))) {
			char id[1024];

			snprintf(id, sizeof(id), "%s/%s/id", sub, t->d_name);
			if (t->d_name[0] == '.' || access(id, R_OK))
				continue;
			here++;
			if (all)
				printf("  %s:%s\n", c->d_name, t->d_name);
		}
		closedir(e);
		if (here) {
			cats++;
			total += here;
		}
	}
	closedir(d);
	if (!all)
		printf("  %d tracepoints in %d categories, as CAT:NAME (e.g. sched:sched_switch); "
		       "'spanperf list --all' names them all\n", total, cats);
}

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
	int e;

	memset(a, 0, sizeof(*a));
	/* Stops at a word that is no option, which is said as the unknown option it is. */
	e = opts_parse(list_defs, OPTS_STOP_AT_ARG, argc, argv, a, &seen, list_usage, err, errlen);
	if (!e && optind < argc)
		e = set_errorf(err, errlen, -EINVAL, "unknown option '%s'; see --help", argv[optind]);
	return e;
}

int cmd_list(int argc, char **argv)
{
	struct int_list cpus = {};
	struct sp_features f;
	struct list_args a;
	char err[256];
	bool all;
	int e;
	char tracefs[64];
	size_t n;
	const struct event_name *names;

	sp_prog = "spanperf list";
	e = list_parse_args(argc, argv, &a, err, sizeof(err));
	if (e)
		return cmd_parse_failed(e, err);
	all = a.all;
	if (host_online_cpus(&cpus)) {
		pr_err("cannot read the online CPUs");
		return 1;
	}
	if (!features_tracefs(tracefs, sizeof(tracefs), NULL))
		events_set_roots(NULL, strdup(tracefs));
	printf("Events this machine can count and sample%s:\n", all ? " (and those it cannot)" : "");
	names = events_builtin(&n);
	for (size_t i = 0; i < n; i++)
		try_one(names[i].name, cpus.v[0], all);
	list_pmu_events(cpus.v[0], all);
	printf("  %-44s [%s]\n", "rNNNN, PMU/event=0x..,umask=0x../", "raw forms");
	printf("  %-44s [%s]\n", "EVENT:u, EVENT:k", "modifiers: user or kernel only");
	printf("\nTracepoints (counted or sampled as CAT:NAME):\n");
	list_tracepoints(all);
	libbpf_setup_init();
	features_probe(&f);
	printf("\nSpan sources (record --span):\n");
	printf("  %-44s %s\n", "syscall:NAME",
	       f.syscall_tps ? "yes (syscalls/sys_enter_NAME, sys_exit_NAME)" : "no: no syscall tracepoints");
	printf("  %-44s %s\n", "uprobe:PATH:FUNC", f.uprobe ? "yes" : "no: no uprobe PMU");
	printf("  %-44s %s\n", "tracepoint:CAT:BEGIN,CAT:END", !f.tracefs_err ? "yes" : "no: no tracefs");
	if (!f.kprobe_err)
		printf("  %-44s %s\n", "kprobe:FUNC[@kprobe|fentry|auto]", "yes (kprobe)");
	else if (!f.fentry_err)
		printf("  %-44s %s\n", "kprobe:FUNC[@kprobe|fentry|auto]", "yes (fentry; no kprobes)");
	else
		printf("  %-44s no: kprobes (%s) and fentry (%s) both unavailable\n",
		       "kprobe:FUNC[@kprobe|fentry|auto]", strerror(-f.kprobe_err), strerror(-f.fentry_err));
	int_list_free(&cpus);
	return 0;
}
