// SPDX-License-Identifier: GPL-2.0
/*
 * spanperf stat's engine: the counters opened as stat_opts asks, read at
 * each -I interval (deltas since the last) and at the end, with the
 * Prometheus endpoint and the span programs of --serve alongside.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atomic_file.h"
#include "counters.h"
#include "fileio.h"
#include "hash.h"
#include "host.h"
#include "kernel_features.h"
#include "libbpf_setup.h"
#include "log.h"
#include "run.h"
#include "span_sources.h"
#include "stat.h"
#include "stat_print.h"
#include "stat_serve.h"
#include "target.h"
#include "util.h"

static const char *const default_events =
	"task-clock,context-switches,cpu-migrations,page-faults,cycles,instructions,branches,branch-misses";

struct stat_run {
	const struct stat_opts *o;
	struct run run;
	FILE *out;
	struct atomic_file out_file; /* -o */
	struct int_list online;
	struct target target;	/* -p, -t, or CMD's tree: the counters program's filter */
	struct counter_set *cs;
	struct stat_events evs;
	__u64 start_ns;
	struct stat_serve *serve;
	/* --serve --span: the span programs, their specs, and the features they were resolved by */
	struct span_set *spans;
	struct span_spec *specs;
	struct sp_features feat;
	/* -I: the previous interval's absolute readings (by tid) and sums, to print deltas */
	struct thread_counts *prev;
	struct u64_map prev_idx;
	struct event_sums prev_tot;
};

int stat_serve_addr_check(const char *addr, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t len;

	return serve_addr_parse(addr, &ss, &len, err, errlen);
}

int stat_web_config_check(const char *path, char *err, size_t errlen)
{
	return web_config_check(path, err, errlen);
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

/*
 * One reading, sorted; with -I (interval >= 0) as deltas since the last,
 * and *cur gets the absolute readings for the next (free() it).
 */
static int take_reading(struct stat_run *r, double interval, struct stat_reading *rd, struct thread_counts **cur)
{
	int e = counters__read(r->cs, &rd->t, &rd->n);

	if (e)
		return e;
	/* Keep the absolute readings for the next interval before turning them into deltas. */
	if (interval >= 0) {
		*cur = malloc((rd->n ? rd->n : 1) * sizeof(**cur));
		if (!*cur)
			return -ENOMEM;
		memcpy(*cur, rd->t, rd->n * sizeof(*rd->t));
		for (int i = 0; i < rd->n; i++)
			delta_from_prev(r, &rd->t[i]);
	}
	if (r->target.mode == SP_FILTER_NONE) {
		/* Whole host: the counters' own sums, as perf stat -a reads them. */
		e = counters__read_totals(r->cs, *cur ? *cur : rd->t, rd->n, rd->tot.value, rd->tot.enabled,
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
	sort_n(rd->t, rd->n, sizeof(*rd->t), stat_cmp_threads);
	return 0;
}

/* -I: cur (n threads) becomes the reading the next interval subtracts. */
static void keep_reading(struct stat_run *r, struct thread_counts *cur, int n)
{
	free(r->prev);
	r->prev = cur;
	u64_map_free(&r->prev_idx);
	for (int i = 0; i < n; i++) {
		uint64_t *slot = u64_map_get(&r->prev_idx, r->prev[i].tid, true);

		if (slot)
			*slot = i;
	}
}

/* One report: an interval's (interval >= 0) or, with interval < 0, the final one. */
static int report(struct stat_run *r, double interval, double elapsed_s)
{
	struct stat_reading rd = {};
	struct thread_counts *cur = NULL;
	int e = take_reading(r, interval, &rd, &cur);

	if (!e) {
		stat_print(r->out, r->o, &r->evs, &rd, interval, elapsed_s);
		if (interval >= 0) {
			keep_reading(r, cur, rd.n);
			cur = NULL;
		}
	}
	free(rd.t);
	free(cur);
	return e;
}

/* -o, or stderr as perf stat writes. */
static int open_output(struct stat_run *r)
{
	const char *path = r->o->output;
	char why[PATH_MAX + 64];
	int e;

	r->out = stderr;
	if (!path)
		return 0;
	/* As record's: a symlink is replaced, never written through; readers see all or nothing. */
	e = atomic_file__open(&r->out_file, path, 0644, false);
	if (!e && !(r->out = atomic_file__stdio(&r->out_file)))
		e = -errno;
	if (e)
		pr_err("cannot write -o '%s': %s", path, write_strerror(e, path, why, sizeof(why)));
	return e;
}

/* The events, the output and the counters, opened; nothing runs yet.  Says why not. */
static int stat_open(struct stat_run *r)
{
	const struct stat_opts *o = r->o;
	struct event_spec *evs = NULL;
	struct counters_opts co = {
		.cpus = &r->online, .max_threads = o->max_threads, .prefer_raw_tp = o->raw_tp, .target = &r->target,
	};
	const struct int_list no_cpus = {};
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
	e = run_check_privileges() ?: open_output(r);
	if (e)
		goto cleanup;
	runctl_init();
	libbpf_setup_init();
	if (host_online_cpus(&r->online)) {
		pr_err("cannot read the online CPUs from /sys/devices/system/cpu/online");
		e = -ENOENT;
		goto cleanup;
	}
	e = run_check_targets(&o->pids, &o->tids);
	if (e)
		goto cleanup;
	/* -- CMD: its tree, whose processes leave the filter as they end (no record of theirs is read later). */
	target__init(&r->target, &o->pids, &o->tids, target_follows_cmd(o->cmd, o->all_cpus, &o->pids, &o->tids, &no_cpus),
		     o->max_threads, o->raw_tp);
	r->target.drop_at_exit = true;
	co.evs = evs;
	co.nr_evs = nr;
	e = counters__open(&r->cs, &co, err, sizeof(err));
	if (e) {
		pr_err("%s", err);
		goto cleanup;
	}
	r->evs.ev = counters__events(r->cs, &r->evs.nr);
cleanup:
	free(evs);
	return e;
}

/*
 * --serve --span: the span programs on the counters' maps, as record sets
 * them up, each span carrying its thread's time on CPU.  Record's sampling
 * program is not loaded: the counters' stand-in takes its thread map's
 * place (the spans' sample counts stay 0).
 */
static int open_spans(struct stat_run *r)
{
	const struct stat_opts *o = r->o;
	struct span_set_opts so = { .nr = o->nr_spans, .nr_counters = 1, .ctr_kind = { SP_CTR_ONCPU },
				    .ring_bytes = 8 << 20 };
	char err[512];
	int e;

	r->specs = calloc(o->nr_spans, sizeof(*r->specs));
	if (!r->specs)
		return -ENOMEM;
	features_probe(&r->feat);
	for (int i = 0; i < o->nr_spans; i++)
		if (span_spec_parse(o->spans[i], &r->specs[i], err, sizeof(err)) ||
		    span_spec_resolve(&r->specs[i], &r->feat, o->raw_tp, err, sizeof(err))) {
			pr_err("%s", err);
			return -EINVAL;
		}
	so.threads_fd = counters__threads_stand_in(r->cs);
	if (so.threads_fd < 0) {
		pr_err("cannot make a BPF map for the span programs: %s", strerror(-so.threads_fd));
		return so.threads_fd;
	}
	so.specs = r->specs;
	so.target = &r->target;
	counters__map_fds(r->cs, &so.counters_fd, &so.snap_fd, &so.counts_fd);
	e = span_set__open(&r->spans, &so, err, sizeof(err));
	if (e)
		pr_err("%s", err);
	return e;
}

/* --span's histograms on the endpoint, then the span programs attached. */
static int start_spans(struct stat_run *r)
{
	const struct stat_opts *o = r->o;
	const char *names[SP_MAX_SPANS];
	char err[512];
	int e = open_spans(r);

	if (e)
		return e;
	/* Named as report names them (the function, the syscall); the whole spec where two would clash. */
	for (int i = 0; i < o->nr_spans; i++) {
		names[i] = r->specs[i].name;
		for (int j = 0; j < o->nr_spans; j++)
			if (j != i && !strcmp(r->specs[j].name, r->specs[i].name))
				names[i] = o->spans[i];
	}
	e = stat_serve__set_spans(r->serve, names, o->nr_spans);
	if (e)
		return e;
	e = span_set__attach(r->spans, err, sizeof(err));
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
static void stat_loop(struct stat_run *r)
{
	const struct stat_opts *o = r->o;
	struct pollfd pfd = { .fd = r->spans ? span_set__ring_fd(r->spans) : -1, .events = POLLIN };
	__u64 next_interval = 0;

	if (o->interval_ms)
		next_interval = r->start_ns + o->interval_ms * 1000000ull;
	for (int timeout = 0; run__wait(&r->run, r->spans ? &pfd : NULL, r->spans ? 1 : 0, timeout);) {
		/* Spans are read ten times a second: their ring is not woken per span. */
		__u64 now = now_ns(CLOCK_MONOTONIC), wake = now + (r->spans ? 100000000ull : 500000000ull);

		if (r->spans)
			span_set__consume(r->spans, on_span, r->serve);
		if (next_interval && now >= next_interval) {
			report(r, (now - r->start_ns) / 1e9, 0);
			next_interval += o->interval_ms * 1000000ull;
		}
		if (next_interval)
			wake = SP_MIN(wake, next_interval);
		timeout = wake > now ? (wake - now) / 1000000 + 1 : 0;
	}
	/* No scrape once the counters stop: the last reading is stat's own. */
	stat_serve__free(r->serve);
	r->serve = NULL;
	counters__stop(r->cs);
	run__stop(&r->run);
	/* JSON intervals already hold every figure; the text mode ends with the totals. */
	if (!o->interval_ms)
		report(r, -1, (now_ns(CLOCK_MONOTONIC) - r->start_ns) / 1e9);
	else if (!o->json)
		report(r, (now_ns(CLOCK_MONOTONIC) - r->start_ns) / 1e9, 0);
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
	full = counters__target_full(r->cs);
	if (full)
		pr_warn("%llu processes of the command's were not counted: more than --max-threads (%llu) at once",
			(unsigned long long)full, (unsigned long long)r->o->max_threads);
}

/* Opened, attached, served: everything runs but CMD, which run__start releases. */
static int stat_start(struct stat_run *r)
{
	const struct stat_opts *o = r->o;
	int e = stat_open(r) ?: run__prepare(&r->run, o->cmd);

	if (e)
		return e;
	e = counters__start(r->cs);
	if (e) {
		pr_err("cannot attach the counters program (%s): %s", counters__hook(r->cs), libbpf_explain(e));
		return e;
	}
	r->start_ns = now_ns(CLOCK_MONOTONIC);
	pr_debug("counting with %s/sched_switch; %llu bytes of map per thread", counters__hook(r->cs),
		 (unsigned long long)counters__bytes_per_thread(r->cs));
	if (o->serve)
		e = stat_serve__start(&r->serve, o->serve, o->web_config, r->cs, o->serve_top);
	if (!e && o->serve && o->node_perf)
		e = stat_serve__node_perf(r->serve, o->node_tps, o->nr_node_tps);
	if (!e && o->nr_spans)
		e = start_spans(r);
	/*
	 * CMD, held until run__start, is counted from its first instruction:
	 * followed only now, since it waits for its release asleep and the
	 * set-up above (the endpoint, the span probes: tens of ms on a busy
	 * host) would be counted as its sleep, where perf stat counts a
	 * command from its exec.
	 */
	if (!e && r->run.have_cmd)
		e = target__follow(&r->target, r->run.wl.pid);
	return e;
}

int stat__run(const struct stat_opts *o, int *exit_code)
{
	struct stat_run r = { .o = o };
	int e;

	*exit_code = 1;
	e = stat_start(&r) ?: run__start(&r.run, o->cmd, r.start_ns, o->duration);
	if (e)
		goto cleanup;
	stat_loop(&r);
	stat_losses(&r);
	if (o->output) {
		char why[PATH_MAX + 64];

		e = atomic_file__commit(&r.out_file);
		if (e) {
			pr_err("cannot write -o '%s': %s", o->output, write_strerror(e, o->output, why, sizeof(why)));
			goto cleanup;
		}
	}
	*exit_code = run__exit_code(&r.run);
cleanup:
	stat_serve__free(r.serve);
	span_set__free(r.spans);
	free(r.specs);
	run__stop(&r.run);
	atomic_file__release(&r.out_file);
	counters__free(r.cs);
	target__free(&r.target);
	free(r.prev);
	u64_map_free(&r.prev_idx);
	int_list_free(&r.online);
	return e;
}
