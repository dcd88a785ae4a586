// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sbuf.h"
#include "session.h"
#include "spans_join.h"
#include "timeline.h"

static int cmp_span_len(const void *a, const void *b)
{
	const struct tl_span *x = a, *y = b;
	__u64 lx = x->end - x->start, ly = y->end - y->start;

	if (lx != ly)
		return lx < ly ? 1 : -1;
	return (x->start > y->start) - (x->start < y->start);
}

static int cmp_span_start(const void *a, const void *b)
{
	const struct tl_span *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* Outer spans first where two start together. */
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

static int pool_id(struct strpool *p, const char *s, size_t *id)
{
	return strpool_intern(p, s ? s : "", id) ? 0 : -ENOMEM;
}

/* One row of the finished join, with what its JSON line says of it. */
static int add_span(struct timeline *t, struct span_report *r, size_t i, struct topc **top, size_t *tcap,
		    struct sbuf *wall)
{
	const struct span_row *sp = &r->sp[i];
	int ntop = spans_top_of(r, sp->first, sp->count, top, tcap);
	struct tl_span *s;

	if (ntop < 0 || array_reserve((void **)&t->spans, &t->cap_spans, t->nr_spans, sizeof(*t->spans)))
		return -ENOMEM;
	s = &t->spans[t->nr_spans];
	*s = (struct tl_span){ .tid = sp->tid, .pid = sp->pid, .start = sp->start, .end = sp->end,
			       .samples = sp->count, .unfinished = sp->unfinished,
			       .ids_recorded = sp->has_ctx || (sp->ext && (sp->ext->trace_id[0] || sp->ext->span_id[0])),
			       .has_counters = sp->source != SP_SRC_EXTERNAL };
	wall->len = 0;
	{
		/* The same fields, from the same functions, as the span's JSON line. */
		struct span_split x;
		const char *how;
		bool split = spans_split(r, sp, &x, &how);

		span_wall__json(r->wall, sp->tid, sp->start, sp->end, spans_on_cpu_ns(r, sp), split ? &x : NULL,
				how, wall);
		span_wall__woken_by_json(r->wall, sp->tid, sp->start, sp->end, wall);
	}
	sbuf_zero(wall, 1);
	if (wall->err || pool_id(&t->pool, r->names.str[sp->name], &s->name) ||
	    pool_id(&t->pool, span_source_name(sp->source), &s->source) ||
	    pool_id(&t->walls, wall->p + 1 /* past the leading comma */, &s->wall))
		return -ENOMEM;
	for (int k = 0; k < ntop && k < TL_TOP; k++, s->ntop++) {
		if (pool_id(&t->pool, (*top)[k].name, &s->top[k]))
			return -ENOMEM;
		s->top_n[k] = (*top)[k].n;
	}
	if (s->has_counters)
		memcpy(s->counters, sp->counters, sizeof(s->counters));
	spans_ids(sp, i, s->trace_id, s->span_id);
	t->nr_spans++;
	return 0;
}

/* The join's spans, as report --spans prints them; the longest where there are more than max. */
static int add_spans(struct timeline *t, struct span_report *r, __u64 max)
{
	struct topc *top = NULL;
	struct sbuf wall = {};
	size_t tcap = 0;
	int e = 0;

	for (int k = 0; k < r->nr_ctr && k < SP_MAX_COUNTERS && !e; k++, t->nr_ctr++)
		e = pool_id(&t->pool, r->ctr_names[k], &t->ctr_names[k]);
	for (size_t i = 0; i < r->nsp && !e; i++)
		e = add_span(t, r, i, &top, &tcap, &wall);
	free(top);
	sbuf_free(&wall);
	if (e)
		return e;
	t->spans_total = t->nr_spans;
	if (max && t->nr_spans > max) {
		sort_n(t->spans, t->nr_spans, sizeof(*t->spans), cmp_span_len);
		t->nr_spans = max;
	}
	sort_n(t->spans, t->nr_spans, sizeof(*t->spans), cmp_span_start);
	return 0;
}

static int cmp_tid(const void *a, const void *b)
{
	__u32 x = ((const struct tl_thread *)a)->tid, y = ((const struct tl_thread *)b)->tid;

	return (x > y) - (x < y);
}

/* The distinct threads of the samples and spans, each with its name and process. */
static int make_threads(struct timeline *t)
{
	struct profile *p = t->p;
	size_t cap = p->nr_stacks + p->nr_off_stacks + t->nr_spans, n = 0;
	struct tl_thread *th = calloc(cap ? cap : 1, sizeof(*th));

	if (!th)
		return -ENOMEM;
	for (size_t i = 0; i < p->nr_stacks; i++)
		th[n++] = (struct tl_thread){ .tid = p->stacks[i].tid, .pid = p->stacks[i].pid };
	for (size_t i = 0; i < p->nr_off_stacks; i++)
		th[n++] = (struct tl_thread){ .tid = p->off_stacks[i].tid, .pid = p->off_stacks[i].pid };
	for (size_t i = 0; i < t->nr_spans; i++)
		th[n++] = (struct tl_thread){ .tid = t->spans[i].tid, .pid = t->spans[i].pid };
	sort_n(th, n, sizeof(*th), cmp_tid);
	t->nr_threads = 0;
	for (size_t i = 0; i < n; i++)
		if (!t->nr_threads || th[t->nr_threads - 1].tid != th[i].tid)
			th[t->nr_threads++] = th[i];
	t->threads = th;
	return 0;
}

static int cmp_tick(const void *a, const void *b)
{
	const struct ptick *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->time > y->time) - (x->time < y->time);
}

/* Each thread's ticks: its slice of the profile's, sorted in place (a big file is not copied). */
static int place_ticks(struct timeline *t, const struct tl_limits *lim)
{
	struct profile *p = t->p;
	__u64 all = p->nr_ticks;
	size_t k = 0;

	t->sample_every = lim->max_samples && all > lim->max_samples ? (all + lim->max_samples - 1) / lim->max_samples : 1;
	sort_n(p->ticks, p->nr_ticks, sizeof(*p->ticks), cmp_tick);
	for (size_t i = 0; i < t->nr_threads; i++) {
		struct tl_thread *th = &t->threads[i];
		size_t kept = 0;

		while (k < p->nr_ticks && p->ticks[k].tid < th->tid)
			k++;
		th->ticks = &p->ticks[k];
		while (k < p->nr_ticks && p->ticks[k].tid == th->tid)
			th->samples += !p->ticks[k++].off;
		th->nr_ticks = &p->ticks[k] - th->ticks;
		/* Every k-th of each thread: its lane keeps its shape, and its flame graph its proportions. */
		for (size_t j = 0; j < th->nr_ticks; j += t->sample_every)
			th->ticks[kept++] = th->ticks[j];
		th->nr_ticks = kept;
		if (kept) {
			__u64 first = th->ticks[0].off ? th->ticks[0].time - th->ticks[0].period : th->ticks[0].time;

			if (!t->t0 || first < t->t0)
				t->t0 = first;
			if (th->ticks[kept - 1].time > t->t1)
				t->t1 = th->ticks[kept - 1].time;
		}
	}
	return 0;
}

static int name_threads(struct timeline *t)
{
	for (size_t i = 0; i < t->nr_threads; i++) {
		struct tl_thread *th = &t->threads[i];
		const char *comm = session__comm(t->p->sess, th->tid, t->t1 ? t->t1 : ~0ull);
		__s64 pid = session__pid_of(t->p->sess, th->tid);

		if (pid >= 0 && !th->pid)
			th->pid = pid;
		if (pool_id(&t->pool, comm ? comm : "[unknown]", &th->comm))
			return -ENOMEM;
	}
	return 0;
}

int timeline__build(struct timeline *t, struct profile *p, struct span_report *r, const struct tl_limits *lim)
{
	int e;

	memset(t, 0, sizeof(*t));
	t->p = p;
	t->sample_every = 1;
	e = add_spans(t, r, lim->max_spans) ?: make_threads(t) ?: place_ticks(t, lim);
	for (size_t i = 0; !e && i < t->nr_spans; i++) {
		if (!t->t0 || t->spans[i].start < t->t0)
			t->t0 = t->spans[i].start;
		if (t->spans[i].end > t->t1)
			t->t1 = t->spans[i].end;
	}
	return e ?: name_threads(t);
}

void timeline__free(struct timeline *t)
{
	if (!t)
		return;
	free(t->threads);
	free(t->spans);
	strpool_free(&t->pool);
	strpool_free(&t->walls);
	memset(t, 0, sizeof(*t));
}
