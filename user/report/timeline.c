// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "report_out.h"
#include "report_spans.h"
#include "sbuf.h"
#include "session.h"
#include "spans_view.h"
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

/* One span of the view, with what its JSON line says of it. */
static int add_span(struct timeline *t, const struct spans_view *v, const struct spans_row *sp, struct sbuf *wall)
{
	struct tl_span *s;

	if (array_reserve((void **)&t->spans, &t->cap_spans, t->nr_spans, sizeof(*t->spans)))
		return -ENOMEM;
	s = &t->spans[t->nr_spans];
	*s = (struct tl_span){ .tid = sp->tid, .pid = sp->pid, .start = sp->start, .end = sp->end,
			       .samples = sp->samples, .unfinished = sp->unfinished,
			       .ids_recorded = sp->has_ctx || sp->ext_trace_id || sp->ext_span_id,
			       .has_counters = sp->has_counters };
	wall->len = 0;
	/* The same members, from the same function, as the span's JSON line. */
	spans_json_wall(v, sp, wall);
	sbuf_zero(wall, 1);
	if (wall->err || pool_id(&t->pool, sp->name, &s->name) || pool_id(&t->pool, sp->source, &s->source) ||
	    pool_id(&t->walls, wall->p + 1 /* past the leading comma */, &s->wall))
		return -ENOMEM;
	for (size_t k = 0; k < sp->nr_top && k < TL_TOP; k++, s->ntop++) {
		if (pool_id(&t->pool, sp->top[k].name, &s->top[k]))
			return -ENOMEM;
		s->top_n[k] = sp->top[k].n;
	}
	if (s->has_counters)
		memcpy(s->counters, sp->counters, sizeof(s->counters));
	memcpy(s->trace_id, sp->trace_id, sizeof(s->trace_id));
	memcpy(s->span_id, sp->span_id, sizeof(s->span_id));
	t->nr_spans++;
	return 0;
}

/* The view's spans, as report --spans prints them; the longest where there are more than max. */
static int add_spans(struct timeline *t, const struct spans_view *v, __u64 max)
{
	struct sbuf wall = {};
	int e = 0;

	for (int k = 0; k < v->nr_ctr && k < SP_MAX_COUNTERS && !e; k++, t->nr_ctr++)
		e = pool_id(&t->pool, v->ctr_names[k], &t->ctr_names[k]);
	for (size_t i = 0; i < v->nr_rows && !e; i++)
		e = add_span(t, v, &v->row[i], &wall);
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

		/* No ticks, no array: &NULL[0] is undefined, and the thread's lane is empty. */
		if (!p->nr_ticks)
			continue;
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

/* A profile without a session (report --clickhouse): a thread's name is its stacks' last one. */
static const char **stack_comms(struct timeline *t)
{
	const struct profile *p = t->p;
	const char **c = calloc(t->nr_threads ? t->nr_threads : 1, sizeof(*c));

	for (size_t k = 0; c && k < p->nr_stacks + p->nr_off_stacks; k++) {
		const struct pstack *s = k < p->nr_stacks ? &p->stacks[k] : &p->off_stacks[k - p->nr_stacks];
		struct tl_thread key = { .tid = s->tid }, *th = bsearch(&key, t->threads, t->nr_threads, sizeof(key), cmp_tid);

		if (th)
			c[th - t->threads] = s->comm;
	}
	return c;
}

static int name_threads(struct timeline *t)
{
	const char **comms = t->p->sess ? NULL : stack_comms(t);

	if (!t->p->sess && !comms)
		return -ENOMEM;
	for (size_t i = 0; i < t->nr_threads; i++) {
		struct tl_thread *th = &t->threads[i];
		const char *comm = comms ? comms[i] : session__comm(t->p->sess, th->tid, t->t1 ? t->t1 : ~0ull);
		__s64 pid = comms ? -1 : session__pid_of(t->p->sess, th->tid);

		if (pid >= 0 && !th->pid)
			th->pid = pid;
		if (pool_id(&t->pool, comm ? comm : "[unknown]", &th->comm)) {
			free(comms);
			return -ENOMEM;
		}
	}
	free(comms);
	return 0;
}

int timeline__build(struct timeline *t, struct profile *p, const struct spans_view *v, const struct tl_limits *lim)
{
	int e;

	memset(t, 0, sizeof(*t));
	t->p = p;
	t->sample_every = 1;
	e = add_spans(t, v, lim->max_spans) ?: make_threads(t) ?: place_ticks(t, lim);
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

int timeline__read(struct timeline_read *r, const char *input, const struct session_opts *sopts,
		   const struct spans_report_opts *so, const struct table_opts *table, const struct tl_limits *lim,
		   char *err, size_t errlen)
{
	const struct spans_view *v = NULL;
	int e;

	*r = (struct timeline_read){};
	if (errlen)
		err[0] = 0;
	e = session__open(&r->sess, input, sopts, err, errlen);
	if (!e && (e = profile__new(&r->p, r->sess, &(struct profile_opts){ .timeline = true })))
		set_errorf(err, errlen, e, "cannot read %s: %s", input, strerror(-e));
	e = e ?: span_report__new(&r->sr, r->sess, so, err, errlen);
	e = e ?: session__run(r->sess, err, errlen);
	e = e ?: span_report__finish(r->sr, err, errlen);
	if (!e && (e = profile__finish(r->p) ?: (table ? table__limit(r->p, table) : 0) ?: span_report__view(r->sr, &v) ?:
		       timeline__build(&r->t, r->p, v, lim)))
		set_errorf(err, errlen, e, "out of memory laying out %s", input);
	return e;
}

void timeline_read__free(struct timeline_read *r)
{
	timeline__free(&r->t);
	span_report__free(r->sr);
	profile__free(r->p);
	session__free(r->sess);
	*r = (struct timeline_read){};
}
