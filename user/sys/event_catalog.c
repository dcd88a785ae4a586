// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "event_catalog.h"
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

static void try_one(FILE *out, const char *name, int cpu, bool all)
{
	struct event_spec ev;
	int e;

	if (event_parse(name, &ev, NULL, 0))
		return;
	/* Counted by the switch program from the task's own accounts: no perf event to try. */
	e = ev.kind == EV_SCHED ? 0 : pe_try_open(&ev.attr, cpu);
	if (!e)
		fprintf(out, "  %-44s [%s]\n", name, kind_name[ev.kind]);
	else if (all)
		fprintf(out, "  %-44s [%s, not supported: %s]\n", name, kind_name[ev.kind], strerror(-e));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* PMU/event/ for every event a PMU exports in sysfs. */
static void list_pmu_events(FILE *out, int cpu, bool all)
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
		try_one(out, names[i], cpu, all);
		free(names[i]);
	}
	free(names);
}

static void list_tracepoints(FILE *out, bool all)
{
	char path[256];
	int cats = 0, total = 0;
	struct dirent *c;
	DIR *d;

	snprintf(path, sizeof(path), "%s/events", events_tracefs_dir());
	d = opendir(path);
	if (!d) {
		fprintf(out, "  (tracefs is not mounted; run as root to mount it)\n");
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
				fprintf(out, "  %s:%s\n", c->d_name, t->d_name);
		}
		closedir(e);
		if (here) {
			cats++;
			total += here;
		}
	}
	closedir(d);
	if (!all)
		fprintf(out, "  %d tracepoints in %d categories, as CAT:NAME (e.g. sched:sched_switch); "
			"'spanperf list --all' names them all\n", total, cats);
}

int event_catalog_print(FILE *out, bool all)
{
	const struct event_name *names;
	struct int_list cpus = {};
	struct sp_features f;
	char tracefs[64];
	size_t n;

	if (host_online_cpus(&cpus)) {
		pr_err("cannot read the online CPUs");
		return -ENOENT;
	}
	if (!features_tracefs(tracefs, sizeof(tracefs), NULL))
		events_set_roots(NULL, strdup(tracefs));
	fprintf(out, "Events this machine can count and sample%s:\n", all ? " (and those it cannot)" : "");
	names = events_builtin(&n);
	for (size_t i = 0; i < n; i++)
		try_one(out, names[i].name, cpus.v[0], all);
	list_pmu_events(out, cpus.v[0], all);
	fprintf(out, "  %-44s [%s]\n", "rNNNN, PMU/event=0x..,umask=0x../", "raw forms");
	fprintf(out, "  %-44s [%s]\n", "EVENT:u, EVENT:k", "modifiers: user or kernel only");
	fprintf(out, "\nTracepoints (counted or sampled as CAT:NAME):\n");
	list_tracepoints(out, all);
	libbpf_setup_init();
	features_probe(&f);
	fprintf(out, "\nSpan sources (record --span):\n");
	fprintf(out, "  %-44s %s\n", "syscall:NAME",
		f.syscall_tps ? "yes (syscalls/sys_enter_NAME, sys_exit_NAME)" : "no: no syscall tracepoints");
	fprintf(out, "  %-44s %s\n", "uprobe:PATH:FUNC", f.uprobe ? "yes" : "no: no uprobe PMU");
	fprintf(out, "  %-44s %s\n", "tracepoint:CAT:BEGIN,CAT:END", !f.tracefs_err ? "yes" : "no: no tracefs");
	if (!f.kprobe_err)
		fprintf(out, "  %-44s %s\n", "kprobe:FUNC[@kprobe|fentry|auto]", "yes (kprobe)");
	else if (!f.fentry_err)
		fprintf(out, "  %-44s %s\n", "kprobe:FUNC[@kprobe|fentry|auto]", "yes (fentry; no kprobes)");
	else
		fprintf(out, "  %-44s no: kprobes (%s) and fentry (%s) both unavailable\n",
			"kprobe:FUNC[@kprobe|fentry|auto]", strerror(-f.kprobe_err), strerror(-f.fentry_err));
	int_list_free(&cpus);
	return 0;
}
