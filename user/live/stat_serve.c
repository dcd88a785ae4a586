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
 * The HTTP side is libmicrohttpd with its own polling thread: stat's loop
 * is untouched, a client that never sends or never reads is dropped after
 * CONN_TIMEOUT_S, and at most MAX_CONNS are open at once.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <microhttpd.h>

#include "cgroup_paths.h"
#include "counters.h"
#include "hash.h"
#include "log.h"
#include "parse.h"
#include "sbuf.h"
#include "stat_serve.h"
#include "util.h"

#define CONN_TIMEOUT_S 10
#define MAX_CONNS 32
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
	struct MHD_Daemon *d;
	struct span_hist *spans; /* under lock: stat's loop adds, scrapes read */
	int nr_spans;
	pthread_mutex_t lock; /* one scrape at a time: the caches are not shared */
	struct counter_set *cs;
	const struct counter_event *ev;
	int nr_ev;
	uint64_t top;
	struct cgroup_paths cgroups; /* ids to paths, kept across scrapes */
	uint64_t scrapes;
};

int serve_addr_parse(const char *s, struct sockaddr_storage *ss, socklen_t *len, char *err, size_t errlen)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	const char *colon = strrchr(s, ':'), *port_s = colon ? colon + 1 : s;
	char host[INET6_ADDRSTRLEN + 2] = "";
	uint64_t port;
	size_t hl = colon ? (size_t)(colon - s) : 0;

	memset(ss, 0, sizeof(*ss));
	if (parse_u64(port_s, &port, 0, 65535) || hl >= sizeof(host))
		goto bad;
	memcpy(host, s, hl);
	host[hl] = 0;
	if (host[0] == '[') {
		if (hl < 2 || host[hl - 1] != ']')
			goto bad;
		host[hl - 1] = 0;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		if (inet_pton(AF_INET6, host + 1, &in6->sin6_addr) != 1)
			goto bad;
		*len = sizeof(*in6);
		return 0;
	}
	in4->sin_family = AF_INET;
	in4->sin_port = htons(port);
	/* No address: loopback, so that counters of the whole host are not published by accident. */
	if (inet_pton(AF_INET, host[0] ? host : "127.0.0.1", &in4->sin_addr) != 1)
		goto bad;
	*len = sizeof(*in4);
	return 0;
bad:
	return set_errorf(err, errlen, -EINVAL, "--serve '%s' is not PORT, ADDR:PORT or [ADDR6]:PORT", s);
}

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
	e = b->err;
out:
	rows_free(&by_comm);
	rows_free(&by_cg);
	free(t);
	return e;
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

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *text)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **req)
{
	struct stat_serve *s = cls;
	struct MHD_Response *r;
	struct sbuf b = {};
	enum MHD_Result ret;
	int e;

	(void)version;
	(void)upload;
	(void)upload_size;
	(void)req;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n");
	if (strcmp(url, "/metrics"))
		return reply(c, MHD_HTTP_NOT_FOUND, "spanperf serves /metrics\n");
	pthread_mutex_lock(&s->lock);
	e = render(s, &b);
	s->scrapes++;
	pthread_mutex_unlock(&s->lock);
	if (e) {
		sbuf_free(&b);
		pr_warn("a scrape failed: %s", strerror(-e));
		return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot read the counters\n");
	}
	/* MHD frees the page once sent (or once the connection is dropped). */
	r = MHD_create_response_from_buffer(b.len, b.p, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		sbuf_free(&b);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

int stat_serve__start(struct stat_serve **out, const char *addr, struct counter_set *cs, uint64_t top)
{
	struct sockaddr_storage ss;
	struct stat_serve *s;
	char err[256];
	socklen_t len;
	int fd = -1, one = 1, e;

	*out = NULL;
	e = serve_addr_parse(addr, &ss, &len, err, sizeof(err));
	if (e) {
		pr_err("%s", err);
		return e;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	s->cs = cs;
	s->top = top;
	cgroup_paths__init(&s->cgroups, NULL, MAX_CGROUPS);
	s->ev = counters__events(cs, &s->nr_ev);
	/* Our own socket: a port in use is said as such, before anything is counted. */
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 64)) {
		e = -errno;
		pr_err("cannot listen on --serve '%s': %s", addr, strerror(-e));
		goto fail;
	}
	s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, 0, NULL, NULL, on_request, s,
				MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONN_TIMEOUT_S,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAX_CONNS, MHD_OPTION_END);
	if (!s->d) {
		e = -EIO;
		pr_err("cannot serve --serve '%s': libmicrohttpd would not start", addr);
		goto fail;
	}
	*out = s;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	stat_serve__free(s);
	return e;
}

void stat_serve__free(struct stat_serve *s)
{
	if (!s)
		return;
	if (s->d) {
		/* MHD owns the listening socket it was given: quiesce hands it back to close. */
		int fd = MHD_quiesce_daemon(s->d);

		MHD_stop_daemon(s->d);
		if (fd >= 0)
			close(fd);
	}
	cgroup_paths__clear(&s->cgroups);
	for (int i = 0; i < s->nr_spans; i++)
		free(s->spans[i].name);
	free(s->spans);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
