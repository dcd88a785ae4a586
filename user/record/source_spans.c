// SPDX-License-Identifier: GPL-2.0
/*
 * The spans source: --span probe pairs (span_sources.c), each finished span
 * written as a sample of its own attr, spanperf:NAME, so that perf script
 * lists spans beside the samples; the span itself rides in RAW.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "counters.h"
#include "kernel_features.h"
#include "log.h"
#include "names.h"
#include "perf_data.h"
#include "sbuf.h"
#include "source.h"
#include "span_codec.h"
#include "span_sources.h"
#include "sample.skel.h"

struct spans {
	struct rec_ctx *ctx;
	const struct span_spec *specs; /* resolved on this machine */
	int nr;
	struct span_set *set;
	struct perf_event_attr attr;
	struct pd_writer *w; /* during a drain */
	__u64 written;
};

/* Span counters: natives need no counter read; the rest go through the counters program. */
static int open_set(struct spans *s)
{
	const struct record_opts *o = s->ctx->o;
	struct span_set_opts so = { .specs = s->specs, .nr = s->nr, .min_ns = o->span_min_us * 1000,
				    .ring_bytes = o->span_buffer_kb * 1024, .sched_split = !o->no_sched_split };
	const struct counter_event *ev;
	char err[512];
	int n, e;

	ev = counters__events(s->ctx->cs, &n);
	for (int k = 0; k < n; k++) {
		__u8 kind = ev[k].slot == COUNTER_NATIVE ? SP_CTR_ONCPU
			    : ev[k].slot == COUNTER_NATIVE_SWITCHES ? SP_CTR_SWITCHES
			    : ev[k].slot >= 0 ? (ev[k].is_clock ? SP_CTR_CLOCK : SP_CTR_COUNTER) : SP_CTR_NONE;

		if (kind == SP_CTR_NONE) {
			pr_warn("%s; spans will not carry it", ev[k].why);
			continue;
		}
		so.ctr_kind[so.nr_counters] = kind;
		so.ctr_slot[so.nr_counters++] = ev[k].slot >= 0 ? ev[k].slot : 0;
	}
	counters__map_fds(s->ctx->cs, &so.counters_fd, &so.snap_fd, &so.counts_fd);
	so.threads_fd = bpf_map__fd(s->ctx->skel->maps.threads);
	so.target = s->ctx->target;
	e = span_set__open(&s->set, &so, err, sizeof(err));
	if (e)
		pr_err("%s", err);
	return e;
}

/*
 * One attr per span source.  Every attr carries IDENTIFIER first and
 * sample_id_all, as perf requires of a file with several.  Then what each
 * span's counters[k] is, by name: an attr that never has records.
 */
static int spans_attrs(struct rec_source *src, struct pd_writer *w)
{
	struct spans *s = src->priv;
	const struct counter_event *ev;
	struct sbuf names = {};
	__u64 id;
	int n, e = 0;

	for (int i = 0; i < s->nr && !e; i++) {
		char name[sizeof(SPAN_ATTR_PREFIX) + sizeof(s->specs[i].name)];

		id = SPAN_ID_BASE + i;
		e = span_codec_attr_name(name, sizeof(name), s->specs[i].name) ?:
		    pd_writer__add_attr(w, &s->attr, name, &id, 1);
	}
	if (e)
		return e;
	ev = counters__events(s->ctx->cs, &n);
	sbuf_printf(&names, "%s", SPAN_COUNTERS_PREFIX);
	for (int k = 0, first = 1; k < n; k++) {
		if (ev[k].slot == COUNTER_UNSUPPORTED)
			continue;
		sbuf_printf(&names, "%s%s", first ? "" : ",", ev[k].spec.name);
		first = 0;
	}
	sbuf_zero(&names, 1);
	id = SPAN_COUNTERS_ID;
	e = names.err ?: pd_writer__add_attr(w, &s->attr, names.p, &id, 1);
	sbuf_free(&names);
	return e;
}

static int spans_start(struct rec_source *src)
{
	struct spans *s = src->priv;
	char err[512];

	if (span_set__attach(s->set, err, sizeof(err))) {
		pr_err("%s", err);
		return -EINVAL;
	}
	return 0;
}

/* The span ring wakes the loop when it fills. */
static int spans_fds(struct rec_source *src, int *fds, int max)
{
	struct spans *s = src->priv;

	if (max < 1)
		return 0;
	fds[0] = span_set__ring_fd(s->set);
	return 1;
}

/* A finished span becomes a sample of its attr: time = end, period = duration. */
static int on_span(void *priv, const struct sp_span_ev *ev)
{
	struct spans *s = priv;
	struct span_rec rec;
	char buf[512];
	long n;

	span_rec_from_bpf(&rec, &ev->span);
	span_rec_set_sched(&rec, &ev->sched);
	n = span_codec_write(buf, sizeof(buf), &s->attr, &rec);
	if (n < 0)
		return n;
	s->written++;
	return pd_writer__write(s->w, buf, n);
}

/* Spans are stamped with their end, before now: they belong to this round. */
static long spans_drain(struct rec_source *src, struct pd_writer *w)
{
	struct spans *s = src->priv;
	__u64 before = s->written;
	int e;

	s->w = w;
	e = span_set__consume(s->set, on_span, s);
	src->spans = s->written;
	return e ?: (long)(s->written - before);
}

/* SP_SPAN_DEPTH as a string, for a figure's text. */
#define STR(x) #x
#define XSTR(x) STR(x)

static void spans_stats(struct rec_source *src)
{
	struct spans *s = src->priv;
	struct span_stats st;

	span_set__stats(s->set, &st);
	REC_SAY(
		{ st.lost, REC_WARN, "spans LOST: their ring buffer was full" },
		{ st.too_deep, REC_WARN, "spans nested deeper than " XSTR(SP_SPAN_DEPTH) " were not kept" },
		{ st.unmatched, REC_WARN, "span ends had no matching begin" },
		{ st.nostack, REC_WARN, "span begins found no room for the thread's span stack" },
		{ st.unfinished, REC_INFO, "threads exited inside spans; those spans end at the exit, marked unfinished" },
		{ st.short_dropped, REC_DEBUG, "spans shorter than --span-min-us were dropped in BPF" });
}

static void spans_free(struct rec_source *src)
{
	struct spans *s = src->priv;

	span_set__free(s->set);
}

int spans_source__new(struct rec_source **out, struct rec_ctx *ctx)
{
	struct rec_source *src;
	struct spans *s;
	*out = NULL;
	if (!ctx->o->nr_spans)
		return 0;
	src = rec_source__alloc("spans", sizeof(struct spans));
	if (!src)
		return -ENOMEM;
	*out = src;
	s = src->priv;
	s->ctx = ctx;
	s->specs = ctx->specs;
	s->nr = ctx->o->nr_spans;
	span_codec_attr(&s->attr);
	src->makes_spans = true;
	src->attrs = spans_attrs;
	src->start = spans_start;
	src->fds = spans_fds;
	src->drain = spans_drain;
	src->stats = spans_stats;
	src->free = spans_free;
	return open_set(s);
}
