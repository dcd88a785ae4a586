// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "perf_sample.h"
#include "span_wall.h"
#include "symbols.h"
#include "util.h"
#include "sched_codec.h"
#include "waker_codec.h"

struct block {
	__u32 tid;
	__s32 pid;
	__u64 start, end;
	__u64 *chain; /* the callchain as recorded, markers included */
	__u32 nr;
	bool kernel;  /* the first frames are kernel ones (no marker) */
};

/* Who ended a block (a spanperf:waker sample), found by the block's tid and end. */
struct waker {
	__u32 wakee_tid;
	__u64 block_end, wake_ns;
	__u32 tid;
	__s32 pid;
	__u32 ctx;	   /* enum sp_waker_ctx */
	const char *comm;  /* pooled */
	__u64 *chain;
	__u32 nr;
	bool kernel;
};

/* A spanperf-sched record: tid off CPU over [start, end], its run-queue tail runq ns. */
struct off {
	__u32 tid;
	__u32 state; /* 0 runnable, 1 S, 2 D */
	__u64 start, end;
	__u64 run_delay; /* at the switch-out */
	__u64 runq;	 /* set by span_wall__finish */
	bool has_rd;
	bool runq_known; /* runq is the scheduler's figure (else: no split over this record) */
};

struct span_wall {
	struct session *sess;
	struct off *off;
	size_t noff, cap_off;
	bool sched;
	struct block *b;
	size_t nr, cap;
	struct waker *wk;
	size_t nwk, cap_wk;
	struct strpool comms;
	bool recorded, wakers;
	__u64 sums;
	__u64 runq_unknown; /* sched records whose run-queue tail is unknown */
};

int span_wall__new(struct span_wall **out, struct session *s)
{
	struct span_wall *w = calloc(1, sizeof(*w));

	if (!w)
		return -ENOMEM;
	w->sess = s;
	for (int i = 0; i < s->rd->nr_attrs; i++) {
		w->recorded |= s->kind[i] == SESS_OFFCPU;
		w->wakers |= s->kind[i] == SESS_WAKER;
		w->sched |= s->kind[i] == SESS_SCHED;
	}
	*out = w;
	return 0;
}

static int add_waker(struct span_wall *w, const struct sess_sample *ss)
{
	const struct pd_sample *s = &ss->ev->sample;
	struct waker_rec rec;
	const char *name;
	struct waker *k;
	size_t id;

	if (waker_rec_decode(s->raw, s->raw_size, &rec))
		return 0; /* a layout this reader does not know */
	if (array_reserve((void **)&w->wk, &w->cap_wk, w->nwk, sizeof(*w->wk)))
		return -ENOMEM;
	name = waker_ctx_name(rec.ctx);
	if (!name)
		name = rec.comm[0] ? rec.comm : ss->comm;
	if (!strpool_intern(&w->comms, name, &id))
		return -ENOMEM;
	k = &w->wk[w->nwk];
	*k = (struct waker){ .wakee_tid = rec.wakee_tid, .block_end = rec.block_end_ns, .wake_ns = rec.wake_ns,
			     .tid = s->tid, .pid = s->pid, .ctx = rec.ctx, .comm = w->comms.str[id],
			     .nr = s->callchain_nr, .kernel = ss->kernel };
	k->chain = malloc((k->nr ? k->nr : 1) * sizeof(*k->chain));
	if (!k->chain)
		return -ENOMEM;
	memcpy(k->chain, s->callchain, k->nr * sizeof(*k->chain));
	w->nwk++;
	return 0;
}

static int add_sched(struct span_wall *w, const struct sess_sample *ss)
{
	const struct pd_sample *s = &ss->ev->sample;
	struct sched_rec rec;

	if (sched_rec_decode(s->raw, s->raw_size, &rec) || s->period > s->time || rec.state > 2)
		return 0; /* a layout this reader does not know, or no interval */
	if (array_reserve((void **)&w->off, &w->cap_off, w->noff, sizeof(*w->off)))
		return -ENOMEM;
	w->off[w->noff++] = (struct off){ .tid = s->tid, .state = rec.state, .start = s->time - s->period,
					  .end = s->time, .run_delay = rec.run_delay,
					  .has_rd = rec.flags & SCHED_HAS_RUN_DELAY };
	return 0;
}

int span_wall__add(struct span_wall *w, const struct sess_sample *ss)
{
	const struct pd_sample *s = &ss->ev->sample;
	struct block *b;

	if (ss->kind == SESS_WAKER)
		return add_waker(w, ss);
	if (ss->kind == SESS_SCHED)
		return add_sched(w, ss);
	if (ss->kind != SESS_OFFCPU)
		return 0;
	if (s->cpu_res & OFFCPU_RES_SUM) {
		w->sums++;
		return 0;
	}
	if (s->period > s->time || array_reserve((void **)&w->b, &w->cap, w->nr, sizeof(*w->b)))
		return s->period > s->time ? 0 : -ENOMEM;
	b = &w->b[w->nr];
	*b = (struct block){ .tid = s->tid, .pid = s->pid, .start = s->time - s->period, .end = s->time,
			     .nr = s->callchain_nr, .kernel = ss->kernel };
	b->chain = malloc((b->nr ? b->nr : 1) * sizeof(*b->chain));
	if (!b->chain)
		return -ENOMEM;
	memcpy(b->chain, s->callchain, b->nr * sizeof(*b->chain));
	w->nr++;
	return 0;
}

static int cmp_block(const void *a, const void *b)
{
	const struct block *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->end > y->end) - (x->end < y->end);
}

static int cmp_waker(const void *a, const void *b)
{
	const struct waker *x = a, *y = b;

	if (x->wakee_tid != y->wakee_tid)
		return x->wakee_tid < y->wakee_tid ? -1 : 1;
	return (x->block_end > y->block_end) - (x->block_end < y->block_end);
}

static int cmp_off(const void *a, const void *b)
{
	const struct off *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->end > y->end) - (x->end < y->end);
}

/* The waker of tid's block that ended at end, or NULL. */
static const struct waker *waker_of(const struct span_wall *w, __u32 tid, __u64 end)
{
	size_t lo = SP_PARTITION(w->nwk, i, w->wk[i].wakee_tid < tid ||
						  (w->wk[i].wakee_tid == tid && w->wk[i].block_end < end));

	return lo < w->nwk && w->wk[lo].wakee_tid == tid && w->wk[lo].block_end == end ? &w->wk[lo] : NULL;
}

/*
 * Each time off CPU ends with its wait in the run queue: all of it for a
 * thread that left runnable; for a sleep, the time from its wakeup to its
 * pick, which the kernel adds to run_delay at the pick, after the switch
 * tracepoint: the next record's run_delay less this one's.  A thread's last
 * record has no next, and a kernel without sched_info no run_delay: their
 * run-queue tail is unknown, and a span over them gets no split (null
 * fields, not a wait for the CPU counted as sleep).
 */
static void sched_runq(struct span_wall *w)
{
	for (size_t i = 0; i < w->noff; i++) {
		struct off *o = &w->off[i], *n = i + 1 < w->noff && w->off[i + 1].tid == o->tid ? &w->off[i + 1] : NULL;
		__u64 dur = o->end - o->start;

		o->runq_known = true;
		if (!o->state)
			o->runq = dur;
		else if (n && o->has_rd && n->has_rd && n->run_delay >= o->run_delay)
			/* rq_clock and the stamps' clock may differ by a few us: never more than the block. */
			o->runq = SP_MIN(n->run_delay - o->run_delay, dur);
		else
			o->runq_known = false, w->runq_unknown++;
		/*
		 * Nor more than the time since its wakeup, where the file has it: a
		 * thread moved to another CPU while asleep came back with 2.5 ms more
		 * run_delay than the 0.2 ms between its timer and its pick (a 10 ms
		 * nanosleep split as 7.6 ms asleep), under load.
		 */
		if (o->state && o->runq_known) {
			const struct waker *k = waker_of(w, o->tid, o->end);

			if (k && k->wake_ns >= o->start && k->wake_ns <= o->end)
				o->runq = SP_MIN(o->runq, o->end - k->wake_ns);
		}
	}
}

/*
 * A thread's blocks do not overlap (it leaves the CPU once at a time), and
 * the lookups below rely on it; a file that says otherwise (made by hand,
 * or broken) must not count a nanosecond twice, so that a span's time off
 * CPU never exceeds its wall time: each block starts no earlier than the
 * end of the one before it.
 */
static void clip_overlaps(struct span_wall *w)
{
	for (size_t i = 1; i < w->nr; i++) {
		const struct block *prev = &w->b[i - 1];
		struct block *b = &w->b[i];

		if (b->tid == prev->tid && b->start < prev->end)
			b->start = prev->end;
	}
}

int span_wall__finish(struct span_wall *w)
{
	sort_n(w->b, w->nr, sizeof(*w->b), cmp_block);
	clip_overlaps(w);
	sort_n(w->wk, w->nwk, sizeof(*w->wk), cmp_waker);
	sort_n(w->off, w->noff, sizeof(*w->off), cmp_off);
	sched_runq(w);
	return 0;
}

bool span_wall__has_sched(const struct span_wall *w)
{
	return w && w->sched;
}

/* The length of [a, b] inside [start, end]. */
static __u64 clip_len(__u64 a, __u64 b, __u64 start, __u64 end)
{
	a = SP_MAX(a, start);
	b = SP_MIN(b, end);
	return b > a ? b - a : 0;
}

bool span_wall__sched_split(struct span_wall *w, __u32 tid, __u64 start, __u64 end, struct span_split *x)
{
	struct span_split acc = {};
	size_t lo;
	__u64 wall = end > start ? end - start : 0;

	if (!w || !w->sched)
		return false;
	/* The first record of tid that ends after start: a thread's records do not overlap. */
	lo = SP_PARTITION(w->noff, i, w->off[i].tid < tid || (w->off[i].tid == tid && w->off[i].end <= start));
	for (size_t i = lo; i < w->noff && w->off[i].tid == tid && w->off[i].start < end; i++) {
		const struct off *o = &w->off[i];
		__u64 wake = o->end - o->runq, head = clip_len(o->start, wake, start, end);

		if (!o->runq_known)
			return false;
		acc.runq += clip_len(wake, o->end, start, end);
		if (o->state == 2)
			acc.blocked += head;
		else
			acc.sleep += head;
	}
	acc.off = SP_MIN(acc.sleep + acc.blocked, wall);
	acc.blocked = SP_MIN(acc.blocked, acc.off);
	acc.sleep = acc.off - acc.blocked;
	acc.runq = SP_MIN(acc.runq, wall - acc.off);
	acc.on = wall - acc.off - acc.runq;
	*x = acc;
	return true;
}

bool span_wall__has_wakers(const struct span_wall *w)
{
	return w && w->wakers;
}

bool span_wall__recorded(const struct span_wall *w)
{
	return w && w->recorded;
}

__u64 span_wall__unjoinable(const struct span_wall *w)
{
	return w ? w->sums : 0;
}

/* The first block of tid that ends after start: a thread's blocks do not overlap, so they follow in order. */
static size_t first_block(const struct span_wall *w, __u32 tid, __u64 start)
{
	return SP_PARTITION(w->nr, i, w->b[i].tid < tid || (w->b[i].tid == tid && w->b[i].end <= start));
}

static __u64 overlap(const struct block *b, __u64 start, __u64 end)
{
	__u64 s = SP_MAX(b->start, start), e = SP_MIN(b->end, end);

	return e > s ? e - s : 0;
}

__u64 span_wall__off_ns(struct span_wall *w, __u32 tid, __u64 start, __u64 end)
{
	__u64 ns = 0;

	for (size_t i = first_block(w, tid, start); i < w->nr && w->b[i].tid == tid && w->b[i].start < end; i++)
		ns += overlap(&w->b[i], start, end);
	return ns;
}

struct top {
	const struct block *b;
	__u64 ns;
};

static bool same_chain(const struct block *x, const struct block *y)
{
	return x->pid == y->pid && x->nr == y->nr && !memcmp(x->chain, y->chain, x->nr * sizeof(*x->chain));
}

/* The span's blocking stacks, heaviest first; how many (16 at most). */
static int tops(struct span_wall *w, __u32 tid, __u64 start, __u64 end, struct top *t)
{
	int n = 0;

	for (size_t i = first_block(w, tid, start); i < w->nr && w->b[i].tid == tid && w->b[i].start < end; i++) {
		__u64 ns = overlap(&w->b[i], start, end);
		int k;

		if (!ns)
			continue;
		for (k = 0; k < n && !same_chain(t[k].b, &w->b[i]); k++)
			;
		if (k == n) {
			if (n == 16)
				continue; /* a span that blocked in more than 16 places: the first 16 compete */
			t[n++] = (struct top){ &w->b[i], 0 };
		}
		t[k].ns += ns;
	}
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && t[j].ns > t[j - 1].ns; j--) {
			struct top x = t[j];

			t[j] = t[j - 1];
			t[j - 1] = x;
		}
	return n;
}

/* Frame i of a block's chain by name, or NULL for a context marker; *user: it is user code. */
static const char *frame_name(struct span_wall *w, const struct block *b, __u32 i, bool *kernel)
{
	__u64 ip = b->chain[i];
	struct sym s;

	if (ip >= PD_CONTEXT_MAX) {
		*kernel = ip == PD_CONTEXT_KERNEL;
		return NULL;
	}
	symbolizer__resolve(w->sess->sym, b->pid, ip, b->end, *kernel, &s);
	return s.name;
}

bool span_split_of(const struct span_sched *sched, __u64 wall, struct span_split *x)
{
	/* Both methods give the same three running totals (SP_SCHED_STAMPS, of old files, no run queue). */
	if (sched->how != SP_SCHED_ACCOUNTS && sched->how != SP_SCHED_WAKE_STAMPS)
		return false;
	/*
	 * BPF's stamps and the scheduler's clock may disagree by a few us at
	 * the edges: clip, so that the parts never exceed the wall time.
	 */
	x->on = SP_MIN(sched->on_ns, wall);
	x->runq = SP_MIN(sched->runq_ns, wall - x->on);
	x->off = wall - x->on - x->runq;
	x->blocked = SP_MIN(sched->blocked_ns, x->off);
	x->sleep = x->off - x->blocked;
	return true;
}

/* Chain i's named frames into s, at most SPAN_WALL_FRAMES. */
static void stack_names(struct span_wall *w, __s32 pid, const __u64 *chain, __u32 nr, __u64 time, bool kernel,
			struct span_wall_stack *s)
{
	s->nr = 0;
	for (__u32 i = 0; i < nr && s->nr < SPAN_WALL_FRAMES; i++) {
		__u64 ip = chain[i];
		struct sym sym;

		if (ip >= PD_CONTEXT_MAX) {
			kernel = ip == PD_CONTEXT_KERNEL;
			continue;
		}
		symbolizer__resolve(w->sess->sym, pid, ip, time, kernel, &sym);
		s->frame[s->nr++] = sym.name;
	}
}

int span_wall__off_top(struct span_wall *w, __u32 tid, __u64 start, __u64 end, struct span_wall_stack *out)
{
	struct top t[16];
	int n = w ? tops(w, tid, start, end, t) : 0;

	for (int k = 0; k < n && k < SPAN_WALL_TOP; k++) {
		out[k] = (struct span_wall_stack){ .ns = t[k].ns };
		stack_names(w, t[k].b->pid, t[k].b->chain, t[k].b->nr, t[k].b->end, t[k].b->kernel, &out[k]);
	}
	return SP_MIN(n, SPAN_WALL_TOP);
}

struct wtop {
	const struct waker *k;
	__u64 ns;
};

static bool same_waker(const struct waker *x, const struct waker *y)
{
	return x->tid == y->tid && x->pid == y->pid && x->comm == y->comm && x->nr == y->nr &&
	       !memcmp(x->chain, y->chain, x->nr * sizeof(*x->chain));
}

/* The span's wakers by the time of the blocks they ended, heaviest first; how many (16 at most). */
static int wtops(struct span_wall *w, __u32 tid, __u64 start, __u64 end, struct wtop *t)
{
	int n = 0;

	for (size_t i = first_block(w, tid, start); i < w->nr && w->b[i].tid == tid && w->b[i].start < end; i++) {
		__u64 ns = overlap(&w->b[i], start, end);
		const struct waker *k = ns ? waker_of(w, tid, w->b[i].end) : NULL;
		int j;

		if (!k)
			continue;
		for (j = 0; j < n && !same_waker(t[j].k, k); j++)
			;
		if (j == n) {
			if (n == 16)
				continue;
			t[n++] = (struct wtop){ k, 0 };
		}
		t[j].ns += ns;
	}
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && t[j].ns > t[j - 1].ns; j--) {
			struct wtop x = t[j];

			t[j] = t[j - 1];
			t[j - 1] = x;
		}
	return n;
}

int span_wall__woken_by(struct span_wall *w, __u32 tid, __u64 start, __u64 end, struct span_wall_stack *out)
{
	struct wtop t[16];
	int n;

	if (!span_wall__has_wakers(w))
		return 0;
	n = wtops(w, tid, start, end, t);
	for (int k = 0; k < n && k < SPAN_WALL_TOP; k++) {
		const struct waker *wk = t[k].k;

		out[k] = (struct span_wall_stack){ .ns = t[k].ns, .comm = wk->comm, .tid = wk->tid,
						   .task = wk->ctx == SP_WAKER_TASK, .wake_ns = wk->wake_ns };
		stack_names(w, wk->pid, wk->chain, wk->nr, wk->block_end, wk->kernel, &out[k]);
	}
	return SP_MIN(n, SPAN_WALL_TOP);
}

const char *span_wall__top_frame(struct span_wall *w, __u32 tid, __u64 start, __u64 end)
{
	struct top t[16];
	const char *leaf = NULL;
	bool kernel;
	int n = tops(w, tid, start, end, t);

	if (!n)
		return NULL;
	kernel = t[0].b->kernel;
	for (__u32 i = 0; i < t[0].b->nr; i++) {
		const char *name = frame_name(w, t[0].b, i, &kernel);

		if (!name)
			continue;
		if (!kernel)
			return name;
		if (!leaf)
			leaf = name;
	}
	return leaf;
}

void span_wall__free(struct span_wall *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->nr; i++)
		free(w->b[i].chain);
	for (size_t i = 0; i < w->nwk; i++)
		free(w->wk[i].chain);
	free(w->b);
	free(w->wk);
	free(w->off);
	strpool_free(&w->comms);
	free(w);
}
