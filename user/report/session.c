// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buildid.h"
#include "hash.h"
#include "names.h"
#include "perf_sample.h"
#include "session.h"
#include "util.h"

/* A thread's name from `time` on; a FORK's name comes from its creator. */
struct name_event {
	__u64 time;
	__u32 tid, ptid; /* ptid: the creator, for a fork */
	const char *comm; /* NULL for a fork until resolved */
	bool fork;
};

/* A change to a process's address space, applied in time order. */
struct proc_event {
	__u64 time;
	__u32 pid, ppid;
	bool exec;
	size_t seq; /* file order, for equal times */
};

struct timeline {
	struct strpool names;
	struct name_event *ne;
	size_t nr_ne, cap_ne;
	struct proc_event *pe;
	size_t nr_pe, cap_pe;
	struct u64_map tid_pid; /* tid -> pid + 1 */
};

static int add_name(struct timeline *tl, struct name_event e)
{
	if (array_reserve((void **)&tl->ne, &tl->cap_ne, tl->nr_ne, sizeof(*tl->ne)))
		return -ENOMEM;
	tl->ne[tl->nr_ne++] = e;
	return 0;
}

static int add_proc(struct timeline *tl, struct proc_event e)
{
	if (array_reserve((void **)&tl->pe, &tl->cap_pe, tl->nr_pe, sizeof(*tl->pe)))
		return -ENOMEM;
	e.seq = tl->nr_pe;
	tl->pe[tl->nr_pe++] = e;
	return 0;
}

static int set_pid(struct timeline *tl, __u32 tid, __u32 pid)
{
	uint64_t *v = u64_map_get(&tl->tid_pid, tid, true);

	if (!v)
		return -ENOMEM;
	*v = (uint64_t)pid + 1;
	return 0;
}

static int cmp_ne_time(const void *a, const void *b)
{
	const struct name_event *x = a, *y = b;

	return (x->time > y->time) - (x->time < y->time);
}

static int cmp_ne_tid(const void *a, const void *b)
{
	const struct name_event *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->time > y->time) - (x->time < y->time);
}

static int cmp_pe(const void *a, const void *b)
{
	const struct proc_event *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Threads and processes created during the run take their creator's name at the fork. */
static void resolve_fork_names(struct timeline *tl)
{
	struct u64_map cur = {}; /* tid -> name */

	/* qsort is not stable; equal times keep no order, as the kernel gives none. */
	sort_n(tl->ne, tl->nr_ne, sizeof(*tl->ne), cmp_ne_time);
	for (size_t i = 0; i < tl->nr_ne; i++) {
		struct name_event *e = &tl->ne[i];
		uint64_t *v;

		if (e->fork) {
			v = u64_map_get(&cur, e->ptid, false);
			e->comm = v ? (const char *)(uintptr_t)*v : NULL;
		}
		if (e->comm && (v = u64_map_get(&cur, e->tid, true)))
			*v = (uintptr_t)e->comm;
	}
	u64_map_free(&cur);
	sort_n(tl->ne, tl->nr_ne, sizeof(*tl->ne), cmp_ne_tid);
}

/* Forks and execs, oldest first, so that a child copies maps its parent inherited. */
static int apply_proc_events(struct session *s, struct timeline *tl)
{
	int e = 0;

	sort_n(tl->pe, tl->nr_pe, sizeof(*tl->pe), cmp_pe);
	for (size_t i = 0; i < tl->nr_pe && !e; i++) {
		const struct proc_event *p = &tl->pe[i];

		if (p->exec) {
			e = symbolizer__exec(s->sym, p->pid, p->time);
			s->execs++;
		} else {
			e = symbolizer__fork(s->sym, p->ppid, p->pid, p->time);
			s->forks++;
		}
	}
	return e;
}

/* A process context, before any span needs it; one that does not decode is counted and skipped. */
static int otel_process(struct session *s, const struct pd_event *ev)
{
	struct otel_pctx pc;
	uint64_t *v;
	__u32 pid;
	int e = otel_pctx_rec_decode(ev->sample.raw, ev->sample.raw_size, &pid, &pc);

	if (e == -EINVAL)
		s->pctx_bad++;
	if (e)
		return e == -ENOMEM ? e : 0;
	v = u64_map_get(&s->pctx_idx, pid, true);
	if (!v)
		goto oom;
	/* Later records are newer versions: the key map only grows. */
	if (*v) {
		otel_pctx_clear(&s->pctx[*v - 1]);
		s->pctx[*v - 1] = pc;
		return 0;
	}
	if (array_reserve((void **)&s->pctx, &s->cap_pctx, s->nr_pctx, sizeof(*s->pctx)))
		goto oom;
	s->pctx[s->nr_pctx++] = pc;
	*v = s->nr_pctx;
	return 0;
oom:
	otel_pctx_clear(&pc);
	return -ENOMEM;
}

const struct otel_pctx *session__otel_process(struct session *s, __u32 pid)
{
	uint64_t *v = s->nr_pctx ? u64_map_get(&s->pctx_idx, pid, false) : NULL;

	return v && *v ? &s->pctx[*v - 1] : NULL;
}

static enum sess_kind classify(struct session *s, const struct pd_attr *a)
{
	if (span_codec_name(a))
		return SESS_SPAN;
	if (span_codec_is_counters(a)) {
		if (!s->nr_span_counters) {
			int n = span_codec_counter_names(a, s->span_counters, SP_MAX_COUNTERS);

			s->nr_span_counters = n > 0 ? n : 0;
		}
		return SESS_SPAN_COUNTERS;
	}
	if (a->name && !strcmp(a->name, OFFCPU_EVENT_NAME))
		return SESS_OFFCPU;
	if (a->name && !strcmp(a->name, OTEL_PCTX_ATTR_NAME) && (a->attr.sample_type & PERF_SAMPLE_RAW))
		return SESS_OTEL_PROCESS;
	/* Other attrs of ours carry no samples this reader knows. */
	if (a->name && !strncmp(a->name, "spanperf", 8))
		return SESS_OTHER;
	return SESS_SAMPLING;
}

/* One side-band record into the timeline; malformed ones are skipped, as perf does. */
static int sideband(struct session *s, struct timeline *tl, const struct pd_event *ev)
{
	const struct perf_event_header *h = ev->hdr;
	struct pd_comm c;
	struct pd_mmap m;
	struct pd_task t;
	__u64 id, lost;
	char bid[2 * BUILD_ID_MAX + 1];

	switch (h->type) {
	case PERF_RECORD_COMM:
		if (pd_parse_comm(h, h->size, &c))
			return 0;
		c.comm = strpool_intern(&tl->names, c.comm, NULL);
		if (!c.comm || add_name(tl, (struct name_event){ .time = ev->sample.time, .tid = c.tid, .comm = c.comm }) ||
		    set_pid(tl, c.tid, c.pid))
			return -ENOMEM;
		if (c.exec)
			return add_proc(tl, (struct proc_event){ .time = ev->sample.time, .pid = c.pid, .exec = true });
		return 0;
	case PERF_RECORD_FORK:
		if (pd_parse_task(h, h->size, &t))
			return 0;
		if (add_name(tl, (struct name_event){ .time = t.time, .tid = t.tid, .ptid = t.ptid, .fork = true }) ||
		    set_pid(tl, t.tid, t.pid))
			return -ENOMEM;
		if (t.pid != t.ppid)
			return add_proc(tl, (struct proc_event){ .time = t.time, .pid = t.pid, .ppid = t.ppid });
		return 0;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		/* Data maps (--call-graph dwarf records them, for perf): no code there. */
		if (pd_parse_mmap(h, h->size, &m) || (h->misc & PERF_RECORD_MISC_MMAP_DATA))
			return 0;
		if (m.build_id_size)
			buildid_hex(m.build_id, m.build_id_size, bid);
		return symbolizer__add_map(s->sym, m.pid, m.start, m.len, m.pgoff, m.filename, ev->sample.time,
					   m.kernel, m.build_id_size ? bid : NULL);
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
		if (!pd_parse_lost(h, h->size, &id, &lost))
			s->lost += lost;
		return 0;
	}
	return 0;
}

int session__open(struct session **out, const char *path, const char *root, char *err, size_t errlen)
{
	struct session *s = calloc(1, sizeof(*s));
	struct timeline *tl = calloc(1, sizeof(*tl));
	struct pd_iter it = {};
	struct pd_event ev;
	int e;

	*out = NULL;
	if (!s || !tl) {
		free(s);
		free(tl);
		snprintf(err, errlen, "out of memory reading %s", path);
		return -ENOMEM;
	}
	s->priv = tl;
	s->first_sampling = -1;
	e = pd_reader__open(&s->rd, path, err, errlen);
	if (e)
		goto cleanup;
	s->kind = calloc(s->rd->nr_attrs ? s->rd->nr_attrs : 1, sizeof(*s->kind));
	s->sym = symbolizer__new(&s->rd->meta, root);
	if (!s->kind || !s->sym)
		goto oom;
	for (int i = 0; i < s->rd->nr_attrs; i++) {
		s->kind[i] = classify(s, &s->rd->attrs[i]);
		if (s->kind[i] == SESS_SAMPLING && s->first_sampling < 0)
			s->first_sampling = i;
	}
	while ((e = pd_reader__next(s->rd, &it, &ev)) > 0) {
		if (ev.hdr->type != PERF_RECORD_SAMPLE) {
			if (sideband(s, tl, &ev))
				goto oom;
		} else if (ev.attr && s->kind[ev.attr - s->rd->attrs] == SESS_OTEL_PROCESS && otel_process(s, &ev)) {
			goto oom;
		}
	}
	if (e < 0) {
		snprintf(err, errlen, "%s", s->rd->err);
		e = -EINVAL;
		goto cleanup;
	}
	resolve_fork_names(tl);
	if (apply_proc_events(s, tl))
		goto oom;
	*out = s;
	return 0;
oom:
	snprintf(err, errlen, "out of memory reading %s", path);
	e = -ENOMEM;
cleanup:
	session__free(s);
	return e;
}

void session__free(struct session *s)
{
	struct timeline *tl;

	if (!s)
		return;
	tl = s->priv;
	if (tl) {
		strpool_free(&tl->names);
		free(tl->ne);
		free(tl->pe);
		u64_map_free(&tl->tid_pid);
		free(tl);
	}
	for (int i = 0; i < s->nr_span_counters; i++)
		free(s->span_counters[i]);
	for (size_t i = 0; i < s->nr_pctx; i++)
		otel_pctx_clear(&s->pctx[i]);
	free(s->pctx);
	u64_map_free(&s->pctx_idx);
	free(s->kind);
	symbolizer__free(s->sym);
	pd_reader__free(s->rd);
	free(s);
}

const char *session__comm(struct session *s, __u32 tid, __u64 t)
{
	struct timeline *tl = s->priv;
	size_t lo = 0, hi = tl->nr_ne;
	const char *best = NULL;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (tl->ne[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Its latest name by then, else its first (a sample before its COMM). */
	for (size_t i = lo; i < tl->nr_ne && tl->ne[i].tid == tid; i++) {
		if (!tl->ne[i].comm)
			continue;
		if (!best || tl->ne[i].time <= t)
			best = tl->ne[i].comm;
		if (tl->ne[i].time > t)
			break;
	}
	return best;
}

__s64 session__pid_of(struct session *s, __u32 tid)
{
	struct timeline *tl = s->priv;
	uint64_t *v = u64_map_get(&tl->tid_pid, tid, false);

	return v ? (__s64)*v - 1 : -1;
}

/* As perf names threads it never saw named: the idle task, or the thread id. */
static const char *unnamed(struct timeline *tl, __u32 tid)
{
	char name[32];

	if (tid == 0)
		snprintf(name, sizeof(name), "swapper");
	else
		snprintf(name, sizeof(name), ":%d", (int)tid); /* perf's pid_t: tid -1 is ":-1" */
	return strpool_intern(&tl->names, name, NULL);
}

int session__process(struct session *s, const struct session_ops *ops, void *ctx, char *err, size_t errlen)
{
	struct timeline *tl = s->priv;
	struct pd_iter it = {};
	struct pd_event ev;
	int e;

	while ((e = pd_reader__next(s->rd, &it, &ev)) > 0) {
		int ai;

		if (ev.hdr->type != PERF_RECORD_SAMPLE || !ev.attr)
			continue;
		ai = ev.attr - s->rd->attrs;
		switch (s->kind[ai]) {
		case SESS_SAMPLING:
		case SESS_OFFCPU: {
			struct sess_sample ss = {
				.ev = &ev, .kind = s->kind[ai], .attr = ai,
				.kernel = (ev.hdr->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL,
			};

			if (!ops->sample)
				break;
			ss.comm = session__comm(s, ev.sample.tid, ev.sample.time);
			if (!ss.comm && !(ss.comm = unnamed(tl, ev.sample.tid)))
				goto oom;
			e = ops->sample(ctx, &ss);
			if (e)
				goto consumer;
			break;
		}
		case SESS_SPAN: {
			struct sess_span sp = { .ev = &ev, .name = span_codec_name(ev.attr) };

			if (!ops->span || span_codec_decode(&ev.sample, &sp.rec))
				break; /* a layout this reader does not know */
			e = ops->span(ctx, &sp);
			if (e)
				goto consumer;
			break;
		}
		default:
			break;
		}
	}
	if (e < 0) {
		snprintf(err, errlen, "%s", s->rd->err);
		return -EINVAL;
	}
	return 0;
consumer:
	if (e != -ENOMEM)
		return e;
oom:
	snprintf(err, errlen, "out of memory reading %s", s->rd->path);
	return -ENOMEM;
}
