// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "events.h"
#include "host.h"
#include "log.h"
#include "node_perf.h"
#include "parse.h"
#include "perf_open.h"
#include "sbuf.h"
#include "util.h"

/* node_exporter's names (collector/perf_linux.go, after "node_perf_") for spanperf's event names. */
static const struct {
	const char *event, *metric, *help;
} series[] = {
	{ "cpu-cycles", "cpucycles_total", "Number of CPU cycles (frequency scaled)" },
	{ "instructions", "instructions_total", "Number of CPU instructions" },
	{ "branch-instructions", "branch_instructions_total", "Number of CPU branch instructions" },
	{ "branch-misses", "branch_misses_total", "Number of CPU branch misses" },
	{ "cache-references", "cache_refs_total", "Number of cache references (non frequency scaled)" },
	{ "cache-misses", "cache_misses_total", "Number of cache misses" },
	{ "ref-cycles", "ref_cpucycles_total", "Number of CPU cycles" },
	{ "page-faults", "page_faults_total", "Number of page faults" },
	{ "context-switches", "context_switches_total", "Number of context switches" },
	{ "cpu-migrations", "cpu_migrations_total", "Number of CPU process migrations" },
	{ "minor-faults", "minor_faults_total", "Number of minor page faults" },
	{ "major-faults", "major_faults_total", "Number of major page faults" },
	{ "L1-dcache-loads", "cache_l1d_read_hits_total", "Number L1 data cache read hits" },
	{ "L1-dcache-load-misses", "cache_l1d_read_misses_total", "Number L1 data cache read misses" },
	{ "L1-dcache-stores", "cache_l1d_write_hits_total", "Number L1 data cache write hits" },
	{ "L1-icache-load-misses", "cache_l1_instr_read_misses_total", "Number instruction L1 instruction read misses" },
	{ "iTLB-loads", "cache_tlb_instr_read_hits_total", "Number instruction TLB read hits" },
	{ "iTLB-load-misses", "cache_tlb_instr_read_misses_total", "Number instruction TLB read misses" },
	{ "LLC-loads", "cache_ll_read_hits_total", "Number last level read hits" },
	{ "LLC-load-misses", "cache_ll_read_misses_total", "Number last level read misses" },
	{ "LLC-stores", "cache_ll_write_hits_total", "Number last level write hits" },
	{ "LLC-store-misses", "cache_ll_write_misses_total", "Number last level write misses" },
	{ "branch-loads", "cache_bpu_read_hits_total", "Number BPU read hits" },
	{ "branch-load-misses", "cache_bpu_read_misses_total", "Number BPU read misses" },
};
#define NR_SERIES (sizeof(series) / sizeof(series[0]))

/* A tracepoint as node_exporter's --collector.perf.tracepoint serves it. */
struct node_tp {
	char name[EV_NAME_LEN];	       /* SUBSYS:EVENT */
	char metric[EV_NAME_LEN + 16]; /* node_perf_SUBSYS_EVENT */
};

struct node_perf {
	struct int_list cpus;
	int *fd; /* [series][cpu], -1 where it cannot be counted */
	struct node_tp *tp;
	int nr_tp;
	int *tp_fd; /* [tracepoint][cpu], each open */
};

void node_perf__free(struct node_perf *np)
{
	if (!np)
		return;
	for (size_t i = 0; np->fd && i < NR_SERIES * (size_t)np->cpus.n; i++)
		if (np->fd[i] >= 0)
			close(np->fd[i]);
	free(np->fd);
	for (size_t i = 0; np->tp_fd && i < (size_t)np->nr_tp * np->cpus.n; i++)
		if (np->tp_fd[i] >= 0)
			close(np->tp_fd[i]);
	free(np->tp_fd);
	free(np->tp);
	int_list_free(&np->cpus);
	free(np);
}

/* The tracepoints on every CPU, each CPU's one counter (pid -1): 0, or -errno said. */
static int open_tracepoints(struct node_perf *np, const char *const *tps, int nr_tps)
{
	np->tp = calloc(nr_tps ? nr_tps : 1, sizeof(*np->tp));
	np->tp_fd = malloc((nr_tps ? nr_tps : 1) * np->cpus.n * sizeof(int));
	if (!np->tp || !np->tp_fd)
		return -ENOMEM;
	for (int i = 0; i < nr_tps * np->cpus.n; i++)
		np->tp_fd[i] = -1;
	np->nr_tp = nr_tps;
	for (int i = 0; i < nr_tps; i++) {
		const char *colon = strchr(tps[i], ':');
		struct event_spec ev;
		char err[256];

		/* Each part a word: what node_exporter's metric name would hold, and Prometheus allows. */
		if (!colon || !str_is_word(tps[i], colon - tps[i]) || !str_is_word(colon + 1, strlen(colon + 1)) ||
		    strlen(tps[i]) >= sizeof(np->tp[i].name)) {
			pr_err("--node-perf-tracepoint '%.100s' is not SUBSYS:EVENT (letters, digits and _)", tps[i]);
			return -EINVAL;
		}
		if (event_parse(tps[i], &ev, err, sizeof(err))) {
			pr_err("--node-perf-tracepoint '%s': %s", tps[i], err);
			return -EINVAL;
		}
		if (ev.kind != EV_TRACEPOINT) {
			pr_err("--node-perf-tracepoint '%s' is not a tracepoint", tps[i]);
			return -EINVAL;
		}
		snprintf(np->tp[i].name, sizeof(np->tp[i].name), "%s", tps[i]);
		/* node_exporter's name: namespace, subsystem, then SUBSYS_EVENT (no _total). */
		snprintf(np->tp[i].metric, sizeof(np->tp[i].metric), "node_perf_%.*s_%s", (int)(colon - tps[i]), tps[i],
			 colon + 1);
		for (int c = 0; c < np->cpus.n; c++) {
			struct perf_event_attr a = ev.attr;
			int fd;

			a.size = sizeof(a);
			fd = sys_perf_event_open(&a, -1, np->cpus.v[c], -1, PERF_FLAG_FD_CLOEXEC);
			if (fd < 0) {
				int e = errno;

				pr_err("--node-perf-tracepoint '%s' cannot be counted on CPU %d: %s", tps[i], np->cpus.v[c],
				       strerror(e));
				return -e;
			}
			np->tp_fd[i * np->cpus.n + c] = fd;
		}
	}
	return 0;
}

int node_perf__open(struct node_perf **out, const char *const *tps, int nr_tps)
{
	struct node_perf *np = calloc(1, sizeof(*np));
	int e, opened = 0, first_err = 0;

	*out = NULL;
	if (!np)
		return -ENOMEM;
	e = host_online_cpus(&np->cpus);
	if (e) {
		pr_err("--node-perf: the online CPUs cannot be read: %s", strerror(-e));
		goto fail;
	}
	np->fd = malloc(NR_SERIES * np->cpus.n * sizeof(int));
	if (!np->fd) {
		e = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < NR_SERIES; i++) {
		struct event_spec ev;

		for (int c = 0; c < np->cpus.n; c++)
			np->fd[i * np->cpus.n + c] = -1;
		if (event_parse(series[i].event, &ev, NULL, 0))
			continue;
		for (int c = 0; c < np->cpus.n; c++) {
			struct perf_event_attr a = ev.attr;
			int fd;

			a.size = sizeof(a);
			/* A whole CPU, kernel too, as node_exporter counts (pid -1). */
			a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
			fd = sys_perf_event_open(&a, -1, np->cpus.v[c], -1, PERF_FLAG_FD_CLOEXEC);
			if (fd < 0) {
				if (!first_err)
					first_err = errno;
				continue;
			}
			np->fd[i * np->cpus.n + c] = fd;
			opened++;
		}
	}
	if (!opened) {
		e = -first_err;
		pr_err("--node-perf: no perf event could be opened on any CPU: %s", strerror(first_err));
		goto fail;
	}
	e = open_tracepoints(np, tps, nr_tps);
	if (e)
		goto fail;
	*out = np;
	return 0;
fail:
	node_perf__free(np);
	return e;
}

int node_perf__render(struct node_perf *np, struct sbuf *b)
{
	if (!np)
		return 0;
	for (size_t i = 0; i < NR_SERIES; i++) {
		bool head = false;

		for (int c = 0; c < np->cpus.n; c++) {
			int fd = np->fd[i * np->cpus.n + c];
			uint64_t v[3];
			double x;

			if (fd < 0 || read(fd, v, sizeof(v)) != (ssize_t)sizeof(v))
				continue;
			/* Multiplexed: scaled to the whole time enabled, as perf stat and perf-utils' profilers do. */
			x = v[2] && v[2] < v[1] ? (double)v[0] * v[1] / v[2] : (double)v[0];
			if (!head) {
				sbuf_printf(b, "# HELP node_perf_%s %s.\n# TYPE node_perf_%s counter\n", series[i].metric,
					    series[i].help, series[i].metric);
				head = true;
			}
			sbuf_printf(b, "node_perf_%s{cpu=\"%d\"} %.0f\n", series[i].metric, np->cpus.v[c], x);
		}
	}
	for (int i = 0; i < np->nr_tp; i++) {
		sbuf_printf(b, "# HELP %s Perf tracepoint %s.\n# TYPE %s counter\n", np->tp[i].metric, np->tp[i].name,
			    np->tp[i].metric);
		for (int c = 0; c < np->cpus.n; c++) {
			uint64_t v;

			if (read(np->tp_fd[i * np->cpus.n + c], &v, sizeof(v)) == (ssize_t)sizeof(v))
				sbuf_printf(b, "%s{cpu=\"%d\"} %llu\n", np->tp[i].metric, np->cpus.v[c],
					    (unsigned long long)v);
		}
	}
	return b->err;
}
