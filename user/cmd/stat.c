// SPDX-License-Identifier: GPL-2.0
/*
 * spanperf stat: per-thread counters from the BPF switch program, printed
 * the way perf stat prints them, or as JSON lines with perf stat -j's fields.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "atomic_file.h"
#include "cmd_opts.h"
#include "commands.h"
#include <bpf/bpf.h>

#include "counters.h"
#include "kernel_features.h"
#include "span_sources.h"
#include "hash.h"
#include "host.h"
#include "libbpf_setup.h"
#include "log.h"
#include "parse.h"
#include "run.h"
#include "sbuf.h"
#include "stat_serve.h"
#include "util.h"

void stat_usage(FILE *out)
{
	fprintf(out,
		"Usage: spanperf stat [options] [-- CMD [ARGS...]]\n"
		"\n"
		"Counts events per thread: each counter is read by a BPF program at every\n"
		"context switch and added to the outgoing thread's entry in a BPF map.\n"
		"\n"
		"  -a, --all-cpus         count the whole host (the default)\n"
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
		"      --span SPEC        with --serve: a wall-time histogram and the time on and\n"
		"                         off CPU of these spans (SPEC as record's; repeatable)\n"
		"  -q, --quiet / -v, --verbose\n"
		"  -h, --help\n"
		"\n"
		"It stops after -d seconds, when CMD exits, or on SIGINT/SIGTERM.\n"
		"\n"
		"Examples:\n"
		"  spanperf stat -d 5                              # whole host, 5 s\n"
		"  spanperf stat --per-thread -e task-clock,cs -- make -j8\n"
		"  spanperf stat -p 1234 -I 1000 --json -o out.jsonl\n"
		"  spanperf stat -e page-faults,sched:sched_switch -d 2\n"
		"  spanperf stat --serve 9464                      # until SIGINT, for Prometheus\n");
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
	{ .name = "serve-top", .type = OPT_T_U64, .off = S(serve_top), .lo = 1, .hi = 100000,
	  .bad = "is not a number of series from 1 to 100000" },
	OPT_DEFS_OUTPUT(struct stat_opts),
	OPT_DEFS_VERBOSITY(struct stat_opts),
	{}
};
#undef S

int stat_parse_args(int argc, char **argv, struct stat_opts *o, char *err, size_t errlen)
{
	uint64_t seen;

	struct sockaddr_storage ss;
	socklen_t len;
	int e;

	memset(o, 0, sizeof(*o));
	o->max_threads = 32768;
	o->serve_top = 50;
	e = opts_parse(stat_defs, OPTS_STOP_AT_ARG, argc, argv, o, &seen, stat_usage, err, errlen) ?:
	    opts_target(&o->pids, &o->tids, argc, argv, &o->cmd, err, errlen);
	if (e)
		return e;
	if (o->serve && o->interval_ms)
		return set_errorf(err, errlen, -EINVAL, "--serve and -I both report as the run goes; give one of them");
	if ((seen & (1ull << opts_index(stat_defs, "serve-top"))) && !o->serve)
		return set_errorf(err, errlen, -EINVAL, "--serve-top needs --serve");
	if (o->nr_spans && !o->serve)
		return set_errorf(err, errlen, -EINVAL, "--span needs --serve: stat shows spans as histograms there");
	if (o->nr_spans > SP_MAX_SPANS)
		return set_errorf(err, errlen, -E2BIG, "%d --span given; at most %d", o->nr_spans, SP_MAX_SPANS);
	return o->serve ? serve_addr_parse(o->serve, &ss, &len, err, errlen) : 0;
}

void stat_opts_free(struct stat_opts *o)
{
	if (!o)
		return;
	int_list_free(&o->pids);
	int_list_free(&o->tids);
	free(o->spans);
	o->spans = NULL;
}

static const char *const default_events =
	"task-clock,context-switches,cpu-migrations,page-faults,cycles,instructions,branches,branch-misses";

/* Per event: the count and the enabled and running times perf scales it by. */
struct event_sums {
	__u64 value[SP_MAX_COUNTERS], enabled[SP_MAX_COUNTERS], running[SP_MAX_COUNTERS];
};

struct stat_run {
	const struct stat_opts *o;
	/* --serve --span: the span programs, their specs and the stand-in for record's thread map */
	struct span_set *spans;
	struct span_spec *specs;
	int threads_fd;
	FILE *out;
	struct atomic_file out_file; /* -o */
	struct counter_set *cs;
	const struct counter_event *ev;
	int nr_ev;
	__u64 start_ns;
	/* previous interval's readings, to print deltas */
	struct thread_counts *prev;
	struct u64_map prev_idx;
	struct event_sums prev_tot;
};

static bool is_clock(const struct counter_event *e)
{
	return e->spec.unit && !strcmp(e->spec.unit, "msec");
}

/* Scaled as perf does for multiplexed counters; software counters always run. */
static double scaled(__u64 v, __u64 ena, __u64 run)
{
	if (!run)
		return 0;
	return run < ena ? (double)v * ena / run : (double)v;
}

static void commas(char *buf, size_t len, double v)
{
	char raw[64];
	int n, lead, o = 0;

	snprintf(raw, sizeof(raw), "%.0f", v);
	n = strlen(raw);
	lead = n % 3 ? n % 3 : 3;
	for (int i = 0; i < n && o + 2 < (int)len; i++) {
		if (i && i >= lead && (i - lead) % 3 == 0 && raw[i - 1] != '-')
			buf[o++] = ',';
		buf[o++] = raw[i];
	}
	buf[o] = 0;
}

static void print_value(FILE *f, const char *prefix, const struct counter_event *e, double v,
			__u64 ena, __u64 run, double elapsed_s, double task_clock_ms)
{
	char num[64];

	if (is_clock(e)) {
		snprintf(num, sizeof(num), "%.2f", v / 1e6);
		fprintf(f, "%s%18s msec %-30s", prefix, num, e->spec.name);
		if (!strcmp(e->spec.name, "task-clock") && elapsed_s > 0)
			fprintf(f, " # %8.3f CPUs utilized", v / 1e9 / elapsed_s);
	} else {
		commas(num, sizeof(num), v);
		fprintf(f, "%s%18s      %-30s", prefix, num, e->spec.name);
		if (task_clock_ms > 0)
			fprintf(f, " # %10.3f K/sec", v / task_clock_ms);
		else if (elapsed_s > 0)
			fprintf(f, " # %10.2f /sec", v / elapsed_s);
	}
	if (run && run < ena)
		fprintf(f, "  (%.2f%%)", 100.0 * run / ena);
	fputc('\n', f);
}

static void print_json(FILE *f, const struct thread_counts *t, const struct counter_event *e, double v,
		       __u64 ena, __u64 run, double interval)
{
	struct sbuf b = {};

	sbuf_printf(&b, "{");
	if (interval >= 0)
		sbuf_printf(&b, "\"interval\":%.9f,", interval);
	sbuf_printf(&b, "\"pid\":%d,\"tid\":%d,\"comm\":", (int)t->pid, (int)t->tid);
	sbuf_json_str(&b, t->comm);
	sbuf_printf(&b, ",\"event\":");
	sbuf_json_str(&b, e->spec.name);
	if (e->slot == COUNTER_UNSUPPORTED) {
		sbuf_printf(&b, ",\"counter-value\":\"<not supported>\",\"unit\":\"\",\"event-runtime\":0,"
				"\"pcnt-running\":0.00,\"reason\":");
		sbuf_json_str(&b, e->why);
	} else if (is_clock(e)) {
		sbuf_printf(&b, ",\"counter-value\":%.6f,\"unit\":\"msec\"", v / 1e6);
	} else {
		sbuf_printf(&b, ",\"counter-value\":%.0f,\"unit\":\"\"", v);
	}
	if (e->slot != COUNTER_UNSUPPORTED)
		sbuf_printf(&b, ",\"event-runtime\":%llu,\"pcnt-running\":%.2f", (unsigned long long)run,
			    ena ? 100.0 * run / ena : 100.0);
	sbuf_printf(&b, "}\n");
	if (!b.err)
		fwrite(b.p, 1, b.len, f);
	sbuf_free(&b);
}

static int cmp_threads(const void *a, const void *b)
{
	const struct thread_counts *x = a, *y = b;

	/* Busiest first by the first counter, then by tid for a stable order. */
	if (x->value[0] != y->value[0])
		return x->value[0] < y->value[0] ? 1 : -1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

static void target_desc(const struct stat_opts *o, char *buf, size_t len)
{
	if (o->pids.n)
		snprintf(buf, len, "process id '%d%s'", o->pids.v[0], o->pids.n > 1 ? ",..." : "");
	else if (o->tids.n)
		snprintf(buf, len, "thread id '%d%s'", o->tids.v[0], o->tids.n > 1 ? ",..." : "");
	else
		snprintf(buf, len, "'system wide'");
}

/* Subtracts the previous interval's readings of the same thread (by tid). */
static void delta_from_prev(struct stat_run *r, struct thread_counts *t)
{
	uint64_t *i = u64_map_get(&r->prev_idx, t->tid, false);

	if (!i)
		return;
	for (int k = 0; k < SP_MAX_COUNTERS; k++) {
		t->value[k] -= SP_MIN(t->value[k], r->prev[*i].value[k]);
		t->enabled[k] -= SP_MIN(t->enabled[k], r->prev[*i].enabled[k]);
		t->running[k] -= SP_MIN(t->running[k], r->prev[*i].running[k]);
	}
}

static bool any_count(const struct thread_counts *t, int nr)
{
	for (int k = 0; k < nr; k++)
		if (t->value[k] || t->running[k])
			return true;
	return false;
}

/* -I: the sums since the previous interval; *prev becomes the sums now. */
static void sums_since(struct event_sums *now, struct event_sums *prev)
{
	for (int k = 0; k < SP_MAX_COUNTERS; k++) {
		__u64 v = now->value[k], en = now->enabled[k], run = now->running[k];

		now->value[k] -= SP_MIN(v, prev->value[k]);
		now->enabled[k] -= SP_MIN(en, prev->enabled[k]);
		now->running[k] -= SP_MIN(run, prev->running[k]);
		prev->value[k] = v;
		prev->enabled[k] = en;
		prev->running[k] = run;
	}
}

/* One reading: per thread, and the sums; deltas since the last one with -I (interval >= 0). */
struct reading {
	struct thread_counts *t;   /* sorted, busiest first */
	struct thread_counts *cur; /* -I: the absolute readings, for the next interval */
	int n;
	struct event_sums tot;
};

static void reading_free(struct reading *rd)
{
	free(rd->t);
	free(rd->cur);
}

static int take_reading(struct stat_run *r, double interval, struct reading *rd)
{
	const struct stat_opts *o = r->o;
	int e = counters__read(r->cs, &rd->t, &rd->n);

	if (e)
		return e;
	/* Keep the absolute readings for the next interval before turning them into deltas. */
	if (interval >= 0) {
		rd->cur = malloc((rd->n ? rd->n : 1) * sizeof(*rd->cur));
		if (!rd->cur)
			return -ENOMEM;
		memcpy(rd->cur, rd->t, rd->n * sizeof(*rd->t));
		for (int i = 0; i < rd->n; i++)
			delta_from_prev(r, &rd->t[i]);
	}
	if (!o->pids.n && !o->tids.n) {
		/* Whole host: the counters' own sums, as perf stat -a reads them. */
		e = counters__read_totals(r->cs, rd->cur ? rd->cur : rd->t, rd->n, rd->tot.value, rd->tot.enabled,
					  rd->tot.running);
		if (e)
			return e;
		if (interval >= 0)
			sums_since(&rd->tot, &r->prev_tot);
	} else {
		for (int i = 0; i < rd->n; i++)
			for (int k = 0; k < SP_MAX_COUNTERS; k++) {
				rd->tot.value[k] += rd->t[i].value[k];
				rd->tot.enabled[k] += rd->t[i].enabled[k];
				rd->tot.running[k] += rd->t[i].running[k];
			}
	}
	sort_n(rd->t, rd->n, sizeof(*rd->t), cmp_threads);
	return 0;
}

/* -I: this reading becomes the one the next interval subtracts. */
static void keep_reading(struct stat_run *r, struct reading *rd)
{
	free(r->prev);
	r->prev = rd->cur;
	rd->cur = NULL;
	u64_map_free(&r->prev_idx);
	for (int i = 0; i < rd->n; i++) {
		uint64_t *slot = u64_map_get(&r->prev_idx, r->prev[i].tid, true);

		if (slot)
			*slot = i;
	}
}

/* perf stat -j's lines: one per thread and event, then one per event not supported. */
static void print_json_reading(struct stat_run *r, const struct reading *rd, double interval)
{
	const struct thread_counts *t = rd->t;

	for (int i = 0; i < rd->n; i++) {
		if (!any_count(&t[i], SP_MAX_COUNTERS))
			continue;
		for (int k = 0; k < r->nr_ev; k++) {
			if (r->ev[k].slot == COUNTER_UNSUPPORTED)
				continue;
			print_json(r->out, &t[i], &r->ev[k], scaled(t[i].value[k], t[i].enabled[k], t[i].running[k]),
				   t[i].enabled[k], t[i].running[k], interval);
		}
	}
	for (int k = 0; k < r->nr_ev; k++)
		if (r->ev[k].slot == COUNTER_UNSUPPORTED) {
			struct thread_counts none = { .tid = -1, .pid = -1 };

			print_json(r->out, &none, &r->ev[k], 0, 0, 0, interval);
		}
}

static void print_title(struct stat_run *r)
{
	const struct stat_opts *o = r->o;
	char what[128];

	if (o->cmd) {
		struct sbuf b = {};

		for (char **a = o->cmd; *a; a++)
			sbuf_printf(&b, "%s%s", a == o->cmd ? "" : " ", *a);
		sbuf_zero(&b, 1);
		fprintf(r->out, "\n Performance counter stats for '%s' (%s):\n\n", b.err ? "?" : b.p,
			o->pids.n || o->tids.n ? "filtered" : "system wide");
		sbuf_free(&b);
	} else {
		target_desc(o, what, sizeof(what));
		fprintf(r->out, "\n Performance counter stats for %s:\n\n", what);
	}
}

/* The task-clock of a row, in ms, for the K/sec of the others; 0 without one. */
static double task_clock_ms(const struct stat_run *r, const __u64 *value)
{
	double ms = 0;

	for (int k = 0; k < r->nr_ev; k++)
		if (r->ev[k].slot != COUNTER_UNSUPPORTED && !strcmp(r->ev[k].spec.name, "task-clock"))
			ms = value[k] / 1e6;
	return ms;
}

static void print_per_thread(struct stat_run *r, const struct reading *rd, const char *prefix)
{
	const struct thread_counts *t = rd->t;

	for (int i = 0; i < rd->n; i++) {
		char who[64];
		double ms;

		if (!any_count(&t[i], SP_MAX_COUNTERS))
			continue;
		snprintf(who, sizeof(who), "%s%16s-%-8d", prefix, t[i].comm, (int)t[i].tid);
		ms = task_clock_ms(r, t[i].value);
		for (int k = 0; k < r->nr_ev; k++) {
			if (r->ev[k].slot == COUNTER_UNSUPPORTED)
				continue;
			print_value(r->out, who, &r->ev[k], scaled(t[i].value[k], t[i].enabled[k], t[i].running[k]),
				    t[i].enabled[k], t[i].running[k], 0, is_clock(&r->ev[k]) ? 0 : ms);
		}
	}
}

static void print_totals(struct stat_run *r, const struct event_sums *tot, const char *prefix, double elapsed_s)
{
	double task_ms = task_clock_ms(r, tot->value);

	for (int k = 0; k < r->nr_ev; k++) {
		if (r->ev[k].slot == COUNTER_UNSUPPORTED) {
			fprintf(r->out, "%s%18s      %s\n", prefix, "<not supported>", r->ev[k].spec.name);
			continue;
		}
		print_value(r->out, prefix, &r->ev[k], scaled(tot->value[k], tot->enabled[k], tot->running[k]),
			    tot->enabled[k], tot->running[k], elapsed_s, is_clock(&r->ev[k]) ? 0 : task_ms);
	}
}

/* One report: totals or per-thread, text or JSON; interval < 0 for the final one. */
static int report(struct stat_run *r, double interval, double elapsed_s)
{
	const struct stat_opts *o = r->o;
	struct reading rd = {};
	char prefix[32] = "";
	int e = take_reading(r, interval, &rd);

	if (e)
		goto cleanup;
	if (interval >= 0)
		snprintf(prefix, sizeof(prefix), "%16.9f ", interval);
	if (o->json) {
		print_json_reading(r, &rd, interval);
	} else {
		if (interval < 0)
			print_title(r);
		if (o->per_thread)
			print_per_thread(r, &rd, prefix);
		else
			print_totals(r, &rd.tot, prefix, interval >= 0 ? 0 : elapsed_s);
		if (interval < 0) {
			fprintf(r->out, "\n%18.9f seconds time elapsed\n\n", elapsed_s);
			for (int k = 0; k < r->nr_ev; k++)
				if (r->ev[k].slot == COUNTER_UNSUPPORTED)
					fprintf(r->out, "%s\n", r->ev[k].why);
		}
	}
	if (interval >= 0)
		keep_reading(r, &rd);
	fflush(r->out);
cleanup:
	reading_free(&rd);
	return e;
}

/* The events, the output and the counters, opened; nothing runs yet.  Says why not. */
static int stat_open(struct stat_run *r, struct int_list *online)
{
	const struct stat_opts *o = r->o;
	struct event_spec *evs = NULL;
	char err[512];
	int nr = 0, e;

	e = event_list_parse(o->events ? o->events : default_events, &evs, &nr, err, sizeof(err));
	if (e) {
		pr_err("%s", err);
		return e;
	}
	if (nr > SP_MAX_COUNTERS) {
		pr_err("-e names %d events; at most %d can be counted in one run", nr, SP_MAX_COUNTERS);
		e = -E2BIG;
		goto cleanup;
	}
	e = run_check_privileges();
	if (e)
		goto cleanup;
	r->out = stderr;
	if (o->output) {
		/* As record's: a symlink is replaced, never written through; readers see all or nothing. */
		e = atomic_file__open(&r->out_file, o->output, 0644, false);
		if (!e && !(r->out = atomic_file__stdio(&r->out_file)))
			e = -errno;
		if (e) {
			pr_err("cannot write -o '%s': %s", o->output, strerror(-e));
			goto cleanup;
		}
	}
	runctl_init();
	libbpf_setup_init();
	if (host_online_cpus(online)) {
		pr_err("cannot read the online CPUs from /sys/devices/system/cpu/online");
		e = -ENOENT;
		goto cleanup;
	}
	e = run_check_targets(&o->pids, &o->tids);
	if (e)
		goto cleanup;
	{
		struct counters_opts co = {
			.evs = evs, .nr_evs = nr, .cpus = online,
			.filter = o->pids.n ? &o->pids : o->tids.n ? &o->tids : NULL,
			.filter_mode = o->pids.n ? SP_FILTER_PID : o->tids.n ? SP_FILTER_TID : SP_FILTER_NONE,
			.max_threads = o->max_threads, .prefer_raw_tp = o->raw_tp,
		};

		e = counters__open(&r->cs, &co, err, sizeof(err));
		if (e) {
			pr_err("%s", err);
			goto cleanup;
		}
	}
	r->ev = counters__events(r->cs, &r->nr_ev);
cleanup:
	free(evs);
	return e;
}

/*
 * --serve --span: the span programs on the counters' maps, as record sets
 * them up, each span carrying its thread's time on CPU.  Record's sampling
 * program is not loaded: a map of the same shape stands in for its thread
 * map (the spans' sample counts stay 0).
 */
static int open_spans(struct stat_run *r)
{
	const struct stat_opts *o = r->o;
	static struct sp_features feat;
	struct span_set_opts so = { .nr = o->nr_spans, .nr_counters = 1, .ctr_kind = { SP_CTR_ONCPU },
				    .ring_bytes = 8 << 20 };
	char err[512];
	int e;

	r->threads_fd = -1;
	r->specs = calloc(o->nr_spans, sizeof(*r->specs));
	if (!r->specs)
		return -ENOMEM;
	features_probe(&feat);
	for (int i = 0; i < o->nr_spans; i++)
		if (span_spec_parse(o->spans[i], &r->specs[i], err, sizeof(err)) ||
		    span_spec_resolve(&r->specs[i], &feat, o->raw_tp, err, sizeof(err))) {
			pr_err("%s", err);
			return -EINVAL;
		}
	r->threads_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "threads", sizeof(__u32), sizeof(struct sp_thread), 1, NULL);
	if (r->threads_fd < 0) {
		e = -errno;
		pr_err("cannot make a BPF map for the span programs: %s", strerror(-e));
		return e;
	}
	so.specs = r->specs;
	so.threads_fd = r->threads_fd;
	counters__map_fds(r->cs, &so.counters_fd, &so.snap_fd, &so.counts_fd);
	e = span_set__open(&r->spans, &so, err, sizeof(err));
	if (e)
		pr_err("%s", err);
	return e;
}

static int on_span(void *ctx, const struct sp_span_ev *ev)
{
	const struct sp_span *sp = &ev->span;

	stat_serve__span(ctx, sp->idx, sp->end_ns - sp->start_ns, sp->counters[0]);
	return 0;
}

/* Until -d, CMD's exit or a signal, with -I's reports on the way; then the last one. */
static void stat_loop(struct stat_run *r, struct run *run, struct stat_serve **serve)
{
	const struct stat_opts *o = r->o;
	__u64 next_interval = 0;

	if (o->interval_ms)
		next_interval = r->start_ns + o->interval_ms * 1000000ull;
	struct pollfd pfd = { .fd = r->spans ? span_set__ring_fd(r->spans) : -1, .events = POLLIN };

	for (int timeout = 0; run__wait(run, r->spans ? &pfd : NULL, r->spans ? 1 : 0, timeout);) {
		/* Spans are read ten times a second: their ring is not woken per span. */
		__u64 now = now_ns(CLOCK_MONOTONIC), wake = now + (r->spans ? 100000000ull : 500000000ull);

		if (r->spans)
			span_set__consume(r->spans, on_span, *serve);
		if (next_interval && now >= next_interval) {
			report(r, (now - r->start_ns) / 1e9, 0);
			next_interval += o->interval_ms * 1000000ull;
		}
		if (next_interval)
			wake = SP_MIN(wake, next_interval);
		timeout = wake > now ? (wake - now) / 1000000 + 1 : 0;
	}
	/* No scrape once the counters stop: the last reading is stat's own. */
	stat_serve__free(*serve);
	*serve = NULL;
	counters__stop(r->cs);
	run__stop(run);
	if (!o->interval_ms || o->json) {
		/* JSON intervals already hold every figure; the text mode ends with the totals. */
		if (!o->interval_ms)
			report(r, -1, (now_ns(CLOCK_MONOTONIC) - r->start_ns) / 1e9);
	} else {
		report(r, (now_ns(CLOCK_MONOTONIC) - r->start_ns) / 1e9, 0);
	}
}

static void stat_losses(struct stat_run *r)
{
	__u64 full, rerr, gaps;

	counters__losses(r->cs, &full, &rerr, &gaps);
	if (gaps)
		pr_debug("%llu switches into a thread were never traced (tasks hidden from tracepoints); "
			 "the thread seen leaving was given its CPU time by the scheduler's account", (unsigned long long)gaps);
	if (full)
		pr_warn("%llu time slices went uncounted: the per-thread map was full; raise --max-threads above %llu",
			(unsigned long long)full, (unsigned long long)r->o->max_threads);
	if (rerr)
		pr_warn("%llu counter reads failed in BPF", (unsigned long long)rerr);
}

int cmd_stat(int argc, char **argv)
{
	struct stat_opts o;
	struct stat_run r = { .o = &o };
	struct int_list online = {};
	struct run run = {};
	struct stat_serve *serve = NULL;
	char err[512];
	int e, ret = 1;

	sp_prog = "spanperf stat";
	e = stat_parse_args(argc, argv, &o, err, sizeof(err));
	if (e) {
		ret = cmd_parse_failed(e, err);
		goto cleanup;
	}
	sp_verbose = o.verbose;
	if (stat_open(&r, &online) || run__prepare(&run, o.cmd))
		goto cleanup;
	e = counters__start(r.cs);
	if (e) {
		pr_err("cannot attach the counters program (%s): %s", counters__hook(r.cs), libbpf_explain(e));
		goto cleanup;
	}
	r.start_ns = now_ns(CLOCK_MONOTONIC);
	pr_debug("counting with %s/sched_switch; %llu bytes of map per thread", counters__hook(r.cs),
		 (unsigned long long)counters__bytes_per_thread(r.cs));
	if (o.serve && stat_serve__start(&serve, o.serve, r.cs, o.serve_top))
		goto cleanup;
	if (o.nr_spans) {
		const char *names[SP_MAX_SPANS];

		if (open_spans(&r))
			goto cleanup;
		/* Named as report names them (the function, the syscall); the whole spec where two would clash. */
		for (int i = 0; i < o.nr_spans; i++) {
			names[i] = r.specs[i].name;
			for (int j = 0; j < o.nr_spans; j++)
				if (j != i && !strcmp(r.specs[j].name, r.specs[i].name))
					names[i] = o.spans[i];
		}
		if (stat_serve__set_spans(serve, names, o.nr_spans))
			goto cleanup;
		e = span_set__attach(r.spans, err, sizeof(err));
		if (e) {
			pr_err("%s", err);
			goto cleanup;
		}
	}
	if (run__start(&run, o.cmd, r.start_ns, o.duration))
		goto cleanup;
	stat_loop(&r, &run, &serve);
	stat_losses(&r);
	if (o.output) {
		e = atomic_file__commit(&r.out_file);
		if (e) {
			pr_err("cannot write -o '%s': %s", o.output, strerror(-e));
			goto cleanup;
		}
	}
	ret = run__exit_code(&run);
cleanup:
	stat_serve__free(serve);
	span_set__free(r.spans);
	free(r.specs);
	if (r.threads_fd > 0)
		close(r.threads_fd);
	run__stop(&run);
	atomic_file__release(&r.out_file);
	counters__free(r.cs);
	free(r.prev);
	u64_map_free(&r.prev_idx);
	int_list_free(&online);
	stat_opts_free(&o);
	return ret;
}
