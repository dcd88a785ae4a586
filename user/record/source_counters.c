// SPDX-License-Identifier: GPL-2.0
/*
 * The span counters source: the counters program (counters.c) that spans
 * read at their begin and end.  It writes no records of its own; it runs
 * from before the spans start until the rings' last drain.
 */
#include <errno.h>
#include <stdlib.h>

#include "counters.h"
#include "events.h"
#include "kernel_features.h"
#include "libbpf_setup.h"
#include "log.h"
#include "source.h"

/* What a span counts without --span-counters: neither needs a counter read. */
#define SPAN_DEFAULT_COUNTERS "task-clock,context-switches"

static int counters_start(struct rec_source *src)
{
	struct rec_ctx *ctx = src->priv;
	int e = counters__start(ctx->cs);

	if (e)
		pr_err("cannot attach the counters program: %s", libbpf_explain(e));
	return e;
}

static void counters_stop(struct rec_source *src)
{
	struct rec_ctx *ctx = src->priv;

	counters__stop(ctx->cs);
}

/* Which split the spans carry, and where the stamps had to guess. */
static void counters_stats(struct rec_source *src)
{
	struct rec_ctx *ctx = src->priv;
	__u64 hidden, nowake;

	if (ctx->o->no_sched_split)
		return;
	if (!counters__split_stamps(ctx->cs, &hidden, &nowake)) {
		pr_debug("span split: the scheduler's accounts (sum_exec_runtime, run_delay)");
		return;
	}
	pr_info("span split: stamps at sched_switch and sched_wakeup (%s)",
		ctx->feat && ctx->feat->sched_accounts ? "forced by SPANPERF_SCHED_SPLIT=stamps" : "the kernel keeps no sched_info");
	if (hidden || nowake)
		pr_info("span split: %llu waits or blocks ended by the thread's run time (switches untraced), "
			"%llu switch-outs to S or D runnable throughout (no wakeup: a signal was pending)",
			(unsigned long long)hidden, (unsigned long long)nowake);
}

static void counters_free(struct rec_source *src)
{
	struct rec_ctx *ctx = src->priv;

	counters__free(ctx->cs);
	ctx->cs = NULL;
}

int counters_source__new(struct rec_source **out, struct rec_ctx *ctx)
{
	const struct record_opts *o = ctx->o;
	/* Spans carry the split of their wall time: the switch program keeps S and D time for them. */
	struct counters_opts co = { .cpus = ctx->online, .max_threads = o->max_threads, .native_switches = true,
				    .sched_split = !o->no_sched_split };
	struct rec_source *src;
	struct event_spec *evs = NULL;
	char err[512];
	int n, e;

	*out = NULL;
	if (!o->nr_spans)
		return 0;
	co.prefer_raw_tp = ctx->feat->tp_btf_err != 0 || o->raw_tp;
	co.target = ctx->target;
	src = rec_source__alloc("counters", 0);
	if (!src)
		return -ENOMEM;
	*out = src;
	src->priv = ctx;
	src->start = counters_start;
	src->stop = counters_stop;
	src->stats = counters_stats;
	src->free = counters_free;
	e = event_list_parse(o->span_counters ? o->span_counters : SPAN_DEFAULT_COUNTERS, &evs, &n, err, sizeof(err));
	if (e) {
		pr_err("--span-counters: %s", err);
		return e;
	}
	co.evs = evs;
	co.nr_evs = n;
	e = counters__open(&ctx->cs, &co, err, sizeof(err));
	free(evs);
	if (e)
		pr_err("%s", err);
	return e;
}
