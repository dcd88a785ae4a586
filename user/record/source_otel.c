// SPDX-License-Identifier: GPL-2.0
/*
 * The OTel source (--otel): OTEP 4947 thread contexts, read by the
 * sampling program at each sample; a context that ends is written as a span
 * of the attr spanperf:otel (otel_record.c).  Its ring wakes the loop when
 * half full; each drain first looks at the processes the rings showed
 * exec'ing or mapping a publisher, then writes the spans that ended.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <bpf/libbpf.h>

#include "counters.h"
#include "events.h"
#include "log.h"
#include "names.h"
#include "otel_pctx.h"
#include "otel_record.h"
#include "perf_data.h"
#include "sbuf.h"
#include "run.h"
#include "source.h"
#include "target.h"
#include "span_codec.h"
#include "util.h"
#include "sample.skel.h"

struct otel {
	struct rec_ctx *ctx;
	struct perf_event_attr attr;
	struct bpf_link *sw; /* otel_switch: contexts read at switch-out too */
	/* What the spans' counters[k] are: the names a publisher's deltas are taken under. */
	char ctr[SP_MAX_COUNTERS][EV_NAME_LEN];
	const char *ctr_names[SP_MAX_COUNTERS];
	int nr_ctr;
};

/*
 * What libspanperf counts in a span unless told otherwise: what OTel spans
 * carry when no --span source sets the counters (--span-counters does).
 */
#define OTEL_DEFAULT_COUNTERS "task-clock,context-switches,page-faults"

/*
 * The spans' counters: the --span sources' (they write the attr that names
 * them), else --span-counters or libspanperf's defaults, in an attr of ours.
 */
static int otel_counters(struct otel *s, struct pd_writer *w)
{
	const struct record_opts *o = s->ctx->o;
	struct event_spec *evs = NULL;
	struct sbuf names = {};
	char err[512];
	__u64 id = SPAN_COUNTERS_ID;
	int n, e;

	if (s->ctx->cs) {
		const struct counter_event *ev = counters__events(s->ctx->cs, &n);

		for (int k = 0; k < n && s->nr_ctr < SP_MAX_COUNTERS; k++)
			if (ev[k].slot != COUNTER_UNSUPPORTED)
				snprintf(s->ctr[s->nr_ctr++], EV_NAME_LEN, "%s", ev[k].spec.name);
		return 0;
	}
	e = event_list_parse(o->span_counters ? o->span_counters : OTEL_DEFAULT_COUNTERS, &evs, &n, err, sizeof(err));
	if (e) {
		pr_err("--span-counters: %s", err);
		return e;
	}
	sbuf_printf(&names, "%s", SPAN_COUNTERS_PREFIX);
	for (int k = 0; k < n && s->nr_ctr < SP_MAX_COUNTERS; k++) {
		snprintf(s->ctr[s->nr_ctr], EV_NAME_LEN, "%s", evs[k].name);
		sbuf_printf(&names, "%s%s", s->nr_ctr++ ? "," : "", evs[k].name);
	}
	free(evs);
	sbuf_zero(&names, 1);
	e = names.err ?: pd_writer__add_attr(w, &s->attr, names.p, &id, 1);
	sbuf_free(&names);
	return e;
}

/* OTEP 4947 contexts: one more span source, after the --span ones; then the processes' OTEP 4719 contexts. */
static int otel_attrs(struct rec_source *src, struct pd_writer *w)
{
	struct otel *s = src->priv;
	__u64 id = SPAN_ID_BASE + s->ctx->o->nr_spans;
	int e = pd_writer__add_attr(w, &s->attr, SPAN_ATTR_PREFIX "otel", &id, 1);

	/* The processes' OTEP 4719 contexts: what names the spans' attribute keys. */
	id = OTEL_PCTX_ID;
	e = e ?: pd_writer__add_attr(w, &s->attr, OTEL_PCTX_ATTR_NAME, &id, 1);
	return e ?: otel_counters(s, w);
}

/* The processes that publish thread context now; the command's once it has exec'ed. */
static int otel_start(struct rec_source *src)
{
	struct otel *s = src->priv;
	struct rec_ctx *ctx = s->ctx;
	const struct record_opts *o = ctx->o;
	struct otel_record_opts oo = {
		.recipes_fd = bpf_map__fd(ctx->skel->maps.otel_recipes),
		.threads_fd = bpf_map__fd(ctx->skel->maps.threads),
		.gen = &ctx->skel->bss->otel_gen,
		.round_ns = &ctx->round_ns,
		.events_fd = bpf_map__fd(ctx->skel->maps.otel_events),
		.stats_fd = bpf_map__fd(ctx->skel->maps.stats),
		.pids = o->pids.n ? &o->pids : NULL,
		.target = ctx->target->mode == SP_FILTER_TREE ? ctx->target : NULL,
		.cmd_pid = ctx->run->have_cmd ? ctx->run->wl.pid : 0,
		/* cpu-clock's period is in ns; -F is a rate. */
		.period_ns = o->freq ? 1000000000ull / o->freq : o->period,
		.attr = &s->attr, .idx = o->nr_spans, .pctx_id = OTEL_PCTX_ID,
		.ctr_names = s->ctr_names, .nr_ctr = s->nr_ctr,
	};
	int e;

	for (int k = 0; k < s->nr_ctr; k++)
		s->ctr_names[k] = s->ctr[k];
	e = otel_record__new(&ctx->otel, &oo);

	if (e) {
		pr_err("cannot read the otel context ring: %s", strerror(-e));
		return e;
	}
	if (bpf_program__fd(ctx->skel->progs.otel_switch) >= 0) {
		s->sw = bpf_program__attach(ctx->skel->progs.otel_switch);
		if (!s->sw) {
			e = -errno;
			pr_err("cannot attach the otel switch program (tp_btf sched_switch): %s", strerror(-e));
			return e;
		}
		pr_debug("otel: contexts read at samples and at switch-out (tp_btf/sched_switch)");
	} else {
		pr_info("otel: no tp_btf here: contexts read at samples only, a span's blocks at its edges may fall outside it");
	}
	return otel_record__tick(ctx->otel, now_ns(CLOCK_MONOTONIC));
}

static int otel_fds(struct rec_source *src, int *fds, int max)
{
	struct otel *s = src->priv;

	if (max < 1)
		return 0;
	fds[0] = otel_record__ring_fd(s->ctx->otel);
	return 1;
}

/*
 * The processes the rings just showed exec'ing or mapping a publisher are
 * looked at before their spans are read; the ring's spans ended before
 * now: they belong to this round.
 */
static long otel_drain(struct rec_source *src, struct pd_writer *w)
{
	struct otel *s = src->priv;
	long n;

	otel_record__tick(s->ctx->otel, now_ns(CLOCK_MONOTONIC));
	n = otel_record__consume(s->ctx->otel, w);
	src->spans = otel_record__spans(s->ctx->otel);
	return n;
}

/* The contexts still open at the end, and the processes' contexts as they are now. */
static int otel_finish(struct rec_source *src, struct pd_writer *w, __u64 end_ns)
{
	struct otel *s = src->priv;
	long n = otel_record__flush(s->ctx->otel, w);

	(void)end_ns;
	src->spans = otel_record__spans(s->ctx->otel);
	return n < 0 ? n : 0;
}

/* Detached before the last drain: the contexts still open stay as they are for finish. */
static void otel_stop(struct rec_source *src)
{
	struct otel *s = src->priv;

	bpf_link__destroy(s->sw);
	s->sw = NULL;
}

static void otel_stats(struct rec_source *src)
{
	struct otel *s = src->priv;

	otel_record__report(s->ctx->otel);
}

static void otel_free(struct rec_source *src)
{
	struct otel *s = src->priv;

	bpf_link__destroy(s->sw);
	otel_record__free(s->ctx->otel);
	s->ctx->otel = NULL;
}

int otel_source__new(struct rec_source **out, struct rec_ctx *ctx)
{
	struct rec_source *src;
	struct otel *s;

	*out = NULL;
	if (!ctx->o->otel)
		return 0;
	src = rec_source__alloc("otel", sizeof(struct otel));
	if (!src)
		return -ENOMEM;
	*out = src;
	s = src->priv;
	s->ctx = ctx;
	span_codec_attr(&s->attr);
	src->makes_spans = true;
	src->attrs = otel_attrs;
	src->start = otel_start;
	src->stop = otel_stop;
	src->fds = otel_fds;
	src->drain = otel_drain;
	src->finish = otel_finish;
	src->stats = otel_stats;
	src->free = otel_free;
	return 0;
}
