// SPDX-License-Identifier: GPL-2.0
/*
 * stat --serve: Prometheus' text format from the counters' per-thread map.
 *
 * Each scrape reads the map (counters__read), names each thread's cgroup
 * from the v2 id the switch program stored (bpf_get_current_cgroup_id, so
 * that threads which exited keep theirs) by the path of the directory
 * whose handle is that id, sums per (cgroup, comm) and per cgroup, and writes the top rows by CPU
 * time with the rest summed into one row labelled "_other", so that a host
 * with 10,000 processes scrapes as a bounded page.
 *
 * The HTTP side, its deadlines, per-client limits, TLS and basic auth are
 * web_serve.c's: this file only makes the page.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup_paths.h"
#include "counters.h"
#include "hash.h"
#include "log.h"
#include "parse.h"
#include "sbuf.h"
#include "node_perf.h"
#include "stat_serve.h"
#include "util.h"
#include "web_serve.h"

/*
 * The cgroup names kept: past this, they start over (the live ones are
 * found again; removed ones become "unknown"), so that a host creating
 * cgroups all day cannot grow them without bound.
 */
#define MAX_CGROUPS 8192
#define UNKNOWN_CGROUP "unknown"
#define OTHER "_other"

/*
 * Span durations' buckets, in seconds: a microsecond syscall to a
 * ten-second request, about three a decade (Prometheus' own defaults stop
 * at 5 ms below).  Fixed, so that every scrape has the same series.
 */
static const double span_le[] = { 1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3,
				  5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 };
#define NR_LE (sizeof(span_le) / sizeof(span_le[0]))

struct span_hist {
	char *name;
	uint64_t bucket[NR_LE + 1]; /* not cumulative; the last is +Inf's own */
	uint64_t count;
	double sum_s, oncpu_s;
};

struct stat_serve {
	struct web_server *web;
	struct span_hist *spans; /* under lock: stat's loop adds, scrapes read */
	int nr_spans;
	pthread_mutex_t lock; /* one scrape at a time: the caches are not shared */
	struct counter_set *cs;
	const struct counter_event *ev;
	int nr_ev;
	uint64_t top;
	struct cgroup_paths cgroups; /* ids to paths, kept across scrapes */
	uint64_t scrapes;
	struct node_perf *np; /* --node-perf: node_exporter's per-CPU series; NULL: off */
};

void serve_label(struct sbuf *b, const char *s)
{
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '\\' || c == '"')
			sbuf_printf(b, "\\%c", c);
		else if (c == '\n')
			sbuf_add(b, "\\n", 2);
		else if (c < 0x20 || c >= 0x7f) /* the format wants UTF-8; a comm is any bytes */
			sbuf_add(b, "?", 1);
		else
			sbuf_add(b, s, 1);
	}
}

void serve_metric_name(char *out, size_t len, const char *event)
{
	size_t i = 0;

	for (; event[i] && i + 1 < len; i++) {
		char c = event[i];

		out[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ? c : '_';
	}
	out[i] = 0;
}

/*
 * The path of cgroup id: known ones from the set, else one walk of the
 * hierarchy (at most one a scrape).  A cgroup removed since keeps the
 * path it had; one never seen is "unknown".
 */
static const char *cgroup_path(struct stat_serve *s, __u64 cgid, bool *walked)
{
	const char *path = cgroup_paths__get(&s->cgroups, cgid);

	if (path || *walked)
		return path ? path : UNKNOWN_CGROUP;
	*walked = true;
	cgroup_paths__walk(&s->cgroups);
	path = cgroup_paths__get(&s->cgroups, cgid);
	return path ? path : UNKNOWN_CGROUP;
}

/* One series: its labels and its sums. */
struct row {
	const char *cgroup;
	char comm[SP_COMM_LEN];
	double cpu_s;
	double value[SP_MAX_COUNTERS];
};

struct rows {
	struct row *v;
	size_t n, cap;
	struct hindex idx;
};

struct row_key {
	const struct rows *rows;
	const char *cgroup, *comm;
};

static bool row_eq(const void *ctx, size_t i)
{
	const struct row_key *k = ctx;

	return k->rows->v[i].cgroup == k->cgroup && (!k->comm || !strcmp(k->rows->v[i].comm, k->comm));
}

/* The row of (cgroup, comm), or of cgroup alone when comm is NULL (cgroups are pooled: one pointer each). */
static struct row *row_get(struct rows *r, const char *cgroup, const char *comm)
{
	struct row_key k = { r, cgroup, comm };
	uint64_t h = hash_mix(hash_str(comm ? comm : ""), (uintptr_t)cgroup);
	long i = hindex_find(&r->idx, h, row_eq, &k);

	if (i >= 0)
		return &r->v[i];
	if (array_reserve((void **)&r->v, &r->cap, r->n + 1, sizeof(*r->v)) || hindex_add(&r->idx, h, r->n))
		return NULL;
	memset(&r->v[r->n], 0, sizeof(r->v[0]));
	r->v[r->n].cgroup = cgroup;
	snprintf(r->v[r->n].comm, sizeof(r->v[0].comm), "%s", comm ? comm : "");
	return &r->v[r->n++];
}

static void rows_free(struct rows *r)
{
	free(r->v);
	hindex_free(&r->idx);
}

static int cmp_rows(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	return (x->cpu_s < y->cpu_s) - (x->cpu_s > y->cpu_s);
}

/* The top rows by CPU, then one "_other" row summing the rest: at most top + 1 rows. */
static void rows_cut(struct rows *r, uint64_t top, const char *other_cg)
{
	sort_n(r->v, r->n, sizeof(*r->v), cmp_rows);
	if (r->n <= top + 1)
		return;
	for (size_t i = top + 1; i < r->n; i++) {
		r->v[top].cpu_s += r->v[i].cpu_s;
		for (int k = 0; k < SP_MAX_COUNTERS; k++)
			r->v[top].value[k] += r->v[i].value[k];
	}
	r->v[top].cgroup = other_cg;
	snprintf(r->v[top].comm, sizeof(r->v[top].comm), "%s", OTHER);
	r->n = top + 1;
}

static double scaled(__u64 v, __u64 ena, __u64 run)
{
	return run && run < ena ? (double)v * ena / run : (double)v;
}

static void labels(struct sbuf *b, const struct row *r, bool comm)
{
	sbuf_add(b, "{cgroup=\"", 9);
	serve_label(b, r->cgroup);
	if (comm) {
		sbuf_add(b, "\",comm=\"", 8);
		serve_label(b, r->comm);
	}
	sbuf_add(b, "\"}", 2);
}

static void metric(struct sbuf *b, const char *name, const char *help, const struct rows *r, int k, bool comm)
{
	sbuf_printf(b, "# HELP %s ", name);
	/* The format's escapes of a docstring, a backslash and a newline; the rest ASCII, as labels (serve_label). */
	for (const unsigned char *c = (const unsigned char *)help; *c; c++)
		if (*c == '\\' || *c == '\n')
			sbuf_add(b, *c == '\n' ? "\\n" : "\\\\", 2);
		else if (*c < 0x20 || *c >= 0x7f)
			sbuf_add(b, "?", 1);
		else
			sbuf_add(b, c, 1);
	sbuf_printf(b, "\n# TYPE %s counter\n", name);
	for (size_t i = 0; i < r->n; i++) {
		sbuf_add(b, name, strlen(name));
		labels(b, &r->v[i], comm);
		sbuf_printf(b, " %.9g\n", k < 0 ? r->v[i].cpu_s : r->v[i].value[k]);
	}
}

static void render_spans(struct stat_serve *s, struct sbuf *b);

/* Whether event k's family name is that of an event before it or of a fixed family. */
static bool family_written(const struct stat_serve *s, int k, const char *name)
{
	static const char *const fixed[] = { "spanperf_cpu_seconds_total", "spanperf_cgroup_cpu_seconds_total",
					     "spanperf_threads", "spanperf_span_duration_seconds",
					     "spanperf_span_on_cpu_seconds_total", "spanperf_span_off_cpu_seconds_total" };

	for (size_t i = 0; i < ARRAY_SIZE(fixed); i++)
		if (!strcmp(name, fixed[i]))
			return true;
	for (int j = 0; j < k; j++) {
		const struct counter_event *ev = &s->ev[j];
		char other[96];

		if (ev->slot == COUNTER_UNSUPPORTED || ev->slot == COUNTER_NATIVE || ev->is_clock)
			continue;
		serve_metric_name(other + 9, sizeof(other) - 9 - 7, ev->spec.name);
		memcpy(other, "spanperf_", 9);
		strcat(other, "_total");
		if (!strcmp(name, other))
			return true;
	}
	return false;
}

/* One scrape's page. */
static int render(struct stat_serve *s, struct sbuf *b)
{
	struct rows by_comm = {}, by_cg = {};
	struct thread_counts *t = NULL;
	int n = 0, e = counters__read(s->cs, &t, &n);
	bool walked = false;

	if (e)
		return e;
	/* Between scrapes only: the rows below point into the set. */
	if (cgroup_paths__full(&s->cgroups))
		cgroup_paths__clear(&s->cgroups);
	for (int i = 0; i < n; i++) {
		const char *cg = cgroup_path(s, t[i].cgroup_id, &walked);
		struct row *a = row_get(&by_comm, cg, t[i].comm), *c = row_get(&by_cg, cg, NULL);

		if (!a || !c) {
			e = -ENOMEM;
			goto out;
		}
		a->cpu_s += t[i].oncpu_ns / 1e9;
		c->cpu_s += t[i].oncpu_ns / 1e9;
		for (int k = 0; k < s->nr_ev; k++) {
			double v = scaled(t[i].value[k], t[i].enabled[k], t[i].running[k]);

			a->value[k] += v;
			c->value[k] += v;
		}
	}
	rows_cut(&by_comm, s->top, OTHER);
	rows_cut(&by_cg, s->top, OTHER);
	metric(b, "spanperf_cpu_seconds_total",
	       "Time on CPU per cgroup (v2 path) and comm, from the switch program; the rest past --serve-top in _other.",
	       &by_comm, -1, true);
	metric(b, "spanperf_cgroup_cpu_seconds_total", "Time on CPU per cgroup (v2 path).", &by_cg, -1, false);
	for (int k = 0; k < s->nr_ev; k++) {
		const struct counter_event *ev = &s->ev[k];
		char name[96], help[256];

		/* Time is the two above; a counter not here says so in stat's output, not as zeros. */
		if (ev->slot == COUNTER_UNSUPPORTED || ev->slot == COUNTER_NATIVE || ev->is_clock)
			continue;
		serve_metric_name(name + 9, sizeof(name) - 9 - 7, ev->spec.name);
		memcpy(name, "spanperf_", 9);
		strcat(name, "_total");
		/*
		 * A family is written once: Prometheus refuses a whole scrape with
		 * a second HELP of one name (-e given twice, or two events whose
		 * names differ only where serve_metric_name makes '_').
		 */
		if (family_written(s, k, name))
			continue;
		snprintf(help, sizeof(help), "%s per cgroup (v2 path) and comm, scaled as perf stat scales.",
			 ev->spec.name);
		metric(b, name, help, &by_comm, k, true);
	}
	sbuf_printf(b, "# HELP spanperf_threads Threads in the per-thread map.\n# TYPE spanperf_threads gauge\n"
		       "spanperf_threads %d\n", n);
	render_spans(s, b);
	node_perf__render(s->np, b);
	e = b->err;
out:
	rows_free(&by_comm);
	rows_free(&by_cg);
	free(t);
	return e;
}

int stat_serve__node_perf(struct stat_serve *s, const char *const *tps, int nr_tps)
{
	struct node_perf *np;
	int e = node_perf__open(&np, tps, nr_tps);

	if (e)
		return e;
	pthread_mutex_lock(&s->lock);
	s->np = np;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int stat_serve__set_spans(struct stat_serve *s, const char *const *names, int n)
{
	s->spans = calloc(n ? n : 1, sizeof(*s->spans));
	if (!s->spans)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		if (!(s->spans[i].name = strdup(names[i])))
			return -ENOMEM;
	s->nr_spans = n;
	return 0;
}

void stat_serve__span(struct stat_serve *s, int idx, uint64_t wall_ns, uint64_t oncpu_ns)
{
	double wall = wall_ns / 1e9;
	struct span_hist *h;
	size_t b = 0;

	if (!s || idx < 0 || idx >= s->nr_spans)
		return;
	while (b < NR_LE && wall > span_le[b])
		b++;
	pthread_mutex_lock(&s->lock);
	h = &s->spans[idx];
	h->bucket[b]++;
	h->count++;
	h->sum_s += wall;
	h->oncpu_s += SP_MIN(oncpu_ns, wall_ns) / 1e9;
	pthread_mutex_unlock(&s->lock);
}

/*
 * Per span name: the wall-time histogram, and the wall split in two
 * counters, on CPU (task-clock inside the span) and the rest (blocked or
 * waiting for a CPU).
 */
static void render_spans(struct stat_serve *s, struct sbuf *b)
{
	if (!s->nr_spans)
		return;
	sbuf_printf(b, "# HELP spanperf_span_duration_seconds Wall time of the spans of each --span.\n"
		       "# TYPE spanperf_span_duration_seconds histogram\n");
	for (int i = 0; i < s->nr_spans; i++) {
		const struct span_hist *h = &s->spans[i];
		uint64_t cum = 0;

		for (size_t k = 0; k <= NR_LE; k++) {
			cum += h->bucket[k];
			sbuf_printf(b, "spanperf_span_duration_seconds_bucket{span=\"");
			serve_label(b, h->name);
			if (k < NR_LE)
				sbuf_printf(b, "\",le=\"%g\"} %llu\n", span_le[k], (unsigned long long)cum);
			else
				sbuf_printf(b, "\",le=\"+Inf\"} %llu\n", (unsigned long long)cum);
		}
		sbuf_printf(b, "spanperf_span_duration_seconds_sum{span=\"");
		serve_label(b, h->name);
		sbuf_printf(b, "\"} %.9g\n", h->sum_s);
		sbuf_printf(b, "spanperf_span_duration_seconds_count{span=\"");
		serve_label(b, h->name);
		sbuf_printf(b, "\"} %llu\n", (unsigned long long)h->count);
	}
	for (int on = 1; on >= 0; on--) {
		const char *name = on ? "spanperf_span_on_cpu_seconds_total" : "spanperf_span_off_cpu_seconds_total";

		sbuf_printf(b, "# HELP %s %s\n# TYPE %s counter\n", name,
			    on ? "Time on CPU inside the spans of each --span (task-clock)."
			       : "Wall time inside the spans of each --span not on CPU: blocked or waiting for a CPU.",
			    name);
		for (int i = 0; i < s->nr_spans; i++) {
			const struct span_hist *h = &s->spans[i];

			sbuf_printf(b, "%s{span=\"", name);
			serve_label(b, h->name);
			sbuf_printf(b, "\"} %.9g\n", on ? h->oncpu_s : SP_MAX(h->sum_s - h->oncpu_s, 0.0));
		}
	}
}

/* GET /metrics: the page, one scrape at a time (the caches are not shared). */
static int page(void *arg, const char *url, struct web_reply *r)
{
	struct stat_serve *s = arg;
	int e;

	if (strcmp(url, "/metrics")) {
		r->status = 404;
		return sbuf_printf(&r->body, "spanperf serves /metrics\n");
	}
	pthread_mutex_lock(&s->lock);
	e = render(s, &r->body);
	s->scrapes++;
	pthread_mutex_unlock(&s->lock);
	if (e)
		pr_warn("a scrape failed: %s", strerror(-e));
	r->content_type = "text/plain; version=0.0.4; charset=utf-8";
	return e;
}

int stat_serve__start(struct stat_serve **out, const char *addr, const char *web_config, struct counter_set *cs,
		      uint64_t top)
{
	struct web_opts wo = { .addr = addr, .flag = "--serve", .config = web_config, .handler = page };
	struct stat_serve *s;
	int e;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	s->cs = cs;
	s->top = top;
	cgroup_paths__init(&s->cgroups, NULL, MAX_CGROUPS);
	s->ev = counters__events(cs, &s->nr_ev);
	wo.arg = s;
	e = web_server__start(&s->web, &wo);
	if (e) {
		stat_serve__free(s);
		return e;
	}
	*out = s;
	return 0;
}

void stat_serve__free(struct stat_serve *s)
{
	if (!s)
		return;
	web_server__free(s->web); /* first: no scrape runs after it */
	cgroup_paths__clear(&s->cgroups);
	node_perf__free(s->np);
	for (int i = 0; i < s->nr_spans; i++)
		free(s->spans[i].name);
	free(s->spans);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
