// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buildid.h"
#include "hash.h"
#include "names.h"
#include "perf_sample.h"
#include "py_names.h"
#include "report_filter.h"
#include "session.h"
#include "util.h"

/* A thread's name from `time` on; a FORK's name comes from its creator. */
struct name_event {
	__u64 time;
	const char *comm; /* NULL for a fork whose creator had no name then */
};

/* One thread's names, in time order. */
struct thread_names {
	struct name_event *v;
	size_t n, cap;
};

/* A fork or an exec, applied in time order once every record up to its time is read. */
struct proc_event {
	__u64 time;
	__u32 pid, tid, ppid, ptid;
	bool exec;
	size_t seq; /* file order, for equal times */
};

/* A sample or span waiting for the side-band up to its time: where it is in the file. */
struct queued {
	__u64 time, pos;
};

struct consumer {
	const struct session_ops *ops;
	void *ctx;
};

/* A Python code object's name, copied, waiting as a fork or an exec does: applied in time order. */
struct py_pending {
	__u64 time;
	size_t seq;
	struct py_names_rec rec; /* its strings and runs in one allocation, at rec.qualname */
};

struct timeline {
	struct strpool names;
	struct thread_names *tn;
	size_t nr_tn, cap_tn;
	struct u64_map tn_idx;	/* tid -> index into tn + 1 */
	struct proc_event *pe;	/* pending, in file order */
	size_t nr_pe, cap_pe, seq_pe;
	struct py_pending *py;	/* pending, in file order */
	size_t nr_py, cap_py, seq_py;
	struct u64_map tid_pid; /* tid -> pid + 1 */
	struct queued *q;	/* pending, in file order; q[qhead..nr_q) */
	size_t qhead, nr_q, cap_q;
	struct consumer *cons;
	size_t nr_cons, cap_cons;
	/* The pass: the next record, the latest time read, and the time the last round made safe. */
	struct pd_iter it;
	__u64 seen, safe;
	bool bad_record; /* the reader stopped at a malformed record: rd->err says which */
	/*
	 * A file's pages let go behind the pass (pd_reader__evict): up to here
	 * behind the reading, and behind the queue's delivery.
	 */
	__u64 evict_read, evict_flush;
	/*
	 * A live session: the threads that exited, let go a window after
	 * (session__trim), so that a long run keeps the living ones only.
	 */
	struct exited { __u32 pid, tid; __u64 time, trim; } *exits;
	size_t nr_exits, cap_exits, gone_tn;
	__u64 trims;
	/* session_opts.filter, and its --time resolved against the file's sample times */
	const struct report_filter *filter;
	struct time_range *ranges;
	size_t nr_ranges;
	bool last_block_kept; /* the last off-CPU block's fate, which its waker sample shares */
};

static struct thread_names *names_of(struct timeline *tl, __u32 tid, bool create)
{
	uint64_t *v = u64_map_get(&tl->tn_idx, tid, create);

	if (!v)
		return NULL;
	if (!*v) {
		if (array_reserve((void **)&tl->tn, &tl->cap_tn, tl->nr_tn, sizeof(*tl->tn)))
			return NULL;
		tl->tn[tl->nr_tn++] = (struct thread_names){};
		*v = tl->nr_tn;
	}
	return &tl->tn[*v - 1];
}

/*
 * Names arrive almost in time order: insert from the back.  A fork's name
 * goes before the names of the same time: the thread was made before it
 * named itself.  perf's records of the processes already running all have
 * time 0, and their forks are applied after their COMMs were read, so
 * otherwise every such process would take its parent's name (and, up the
 * tree, init's).
 */
static int add_name(struct timeline *tl, __u32 tid, struct name_event e, bool fork)
{
	struct thread_names *t = names_of(tl, tid, true);
	size_t i;

	/*
	 * From two entries up, not array_reserve's 256: most threads have a
	 * name or two, and a whole host's thousands at 4 KiB each were 52 MiB
	 * of an agent's 72 MiB heap.
	 */
	if (t && t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 2;
		struct name_event *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	if (!t)
		return -ENOMEM;
	for (i = t->n; i > 0 && (t->v[i - 1].time > e.time || (fork && t->v[i - 1].time == e.time)); i--)
		t->v[i] = t->v[i - 1];
	t->v[i] = e;
	t->n++;
	return 0;
}

static int add_proc(struct timeline *tl, struct proc_event e)
{
	if (array_reserve((void **)&tl->pe, &tl->cap_pe, tl->nr_pe, sizeof(*tl->pe)))
		return -ENOMEM;
	e.seq = tl->seq_pe++;
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

static int cmp_pe(const void *a, const void *b)
{
	const struct proc_event *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* tid's latest name at or before t, NULL if none (a fork's name: its creator's then). */
static const char *name_at(struct timeline *tl, __u32 tid, __u64 t)
{
	struct thread_names *n = names_of(tl, tid, false);
	const char *best = NULL;

	for (size_t i = 0; n && i < n->n && n->v[i].time <= t; i++)
		if (n->v[i].comm)
			best = n->v[i].comm;
	return best;
}

/*
 * Forks and execs up to time `upto`, oldest first: every map and name up
 * to then is read (the writer's rounds promise it), so a child copies the
 * maps its parent had at the fork, and takes its creator's name then.
 */
static int apply_proc_events(struct session *s, struct timeline *tl, __u64 upto)
{
	size_t i, k = 0;
	int e = 0;

	sort_n(tl->pe, tl->nr_pe, sizeof(*tl->pe), cmp_pe);
	for (i = 0; i < tl->nr_pe && tl->pe[i].time <= upto && !e; i++) {
		const struct proc_event *p = &tl->pe[i];

		if (p->exec) {
			e = symbolizer__exec(s->sym, p->pid, p->time);
			s->execs++;
			continue;
		}
		e = add_name(tl, p->tid, (struct name_event){ .time = p->time, .comm = name_at(tl, p->ptid, p->time) },
			     true);
		if (!e && p->pid != p->ppid) {
			e = symbolizer__fork(s->sym, p->ppid, p->pid, p->time);
			s->forks++;
		}
	}
	/* The rest wait, in file order (seq keeps equal times as they came). */
	for (; i < tl->nr_pe; i++)
		tl->pe[k++] = tl->pe[i];
	tl->nr_pe = k;
	return e;
}

/*
 * A process context, taken as it comes: a recording writes them at its end,
 * so consumers look them up in their finish.  One that does not decode is
 * counted and skipped.
 */
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

/*
 * A Python code object's name, copied as it comes and applied in time
 * order once every record up to its time is read, before the samples of
 * that time: the symbolizer tells which process image a name belongs to by
 * the forks and execs before it, which must be in by then.  The recorder
 * stamps it no later than the first sample that uses it (or at least in
 * the same round).  One that does not decode is counted.
 */
static int python_names(struct session *s, struct timeline *tl, const struct pd_event *ev)
{
	struct py_names_rec r;
	struct py_pending *p;
	char *copy;

	if (py_names_rec_decode(ev->sample.raw, ev->sample.raw_size, &r)) {
		s->python_bad++;
		return 0;
	}
	copy = malloc((size_t)r.qualname_len + r.filename_len + r.lines_len + 1);
	if (!copy || array_reserve((void **)&tl->py, &tl->cap_py, tl->nr_py, sizeof(*tl->py))) {
		free(copy);
		return -ENOMEM;
	}
	memcpy(copy, r.qualname, r.qualname_len);
	memcpy(copy + r.qualname_len, r.filename, r.filename_len);
	memcpy(copy + r.qualname_len + r.filename_len, r.lines, r.lines_len);
	r.qualname = copy;
	r.filename = copy + r.qualname_len;
	r.lines = (const __u8 *)copy + r.qualname_len + r.filename_len;
	p = &tl->py[tl->nr_py++];
	*p = (struct py_pending){ ev->sample.time, tl->seq_py++, r };
	return 0;
}

static int cmp_py(const void *a, const void *b)
{
	const struct py_pending *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* The Python names up to time upto, oldest first; the rest wait, in file order. */
static int apply_python(struct session *s, struct timeline *tl, __u64 upto)
{
	size_t i, k = 0;
	int e = 0;

	sort_n(tl->py, tl->nr_py, sizeof(*tl->py), cmp_py);
	for (i = 0; i < tl->nr_py && tl->py[i].time <= upto; i++) {
		if (!e)
			e = symbolizer__add_python(s->sym, &tl->py[i].rec, tl->py[i].time);
		free((void *)tl->py[i].rec.qualname);
	}
	for (; i < tl->nr_py; i++)
		tl->py[k++] = tl->py[i];
	tl->nr_py = k;
	return e;
}

const struct otel_pctx *session__otel_process(struct session *s, __u32 pid)
{
	uint64_t *v = s->nr_pctx ? u64_map_get(&s->pctx_idx, pid, false) : NULL;

	return v && *v ? &s->pctx[*v - 1] : NULL;
}

static enum sess_kind classify(struct session *s, const struct pd_attr *a)
{
	/* Named as a span attr would be: its id tells it from a span source called "waker". */
	if (a->name && !strcmp(a->name, OFFCPU_WAKER_EVENT_NAME) && a->nr_ids == 1 && a->ids[0] == OFFCPU_WAKER_ID &&
	    (a->attr.sample_type & PERF_SAMPLE_RAW))
		return SESS_WAKER;
	if (a->name && !strcmp(a->name, SCHED_EVENT_NAME) && a->nr_ids == 1 && a->ids[0] == SCHED_ID &&
	    (a->attr.sample_type & PERF_SAMPLE_RAW))
		return SESS_SCHED;
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
	if (a->name && !strcmp(a->name, PY_NAMES_EVENT_NAME) && a->nr_ids == 1 && a->ids[0] == PY_NAMES_ID &&
	    (a->attr.sample_type & PERF_SAMPLE_RAW))
		return SESS_PYTHON;
	/* Other attrs of ours carry no samples this reader knows. */
	if (a->name && !strncmp(a->name, "spanperf", 8))
		return SESS_OTHER;
	return SESS_SAMPLING;
}

/* One side-band record into the timeline; malformed ones are skipped, as perf does. */
static int sideband(struct session *s, struct timeline *tl, const struct pd_event *ev)
{
	struct pd_sideband r;
	const char *comm;
	char bid[2 * BUILD_ID_MAX + 1];

	if (pd_sideband_parse(ev->attr ? &ev->attr->attr : NULL, ev->hdr, ev->hdr->size, &r))
		return 0;
	switch (r.type) {
	case PERF_RECORD_COMM:
		comm = strpool_intern(&tl->names, r.comm.comm, NULL);
		if (!comm || add_name(tl, r.comm.tid, (struct name_event){ .time = ev->sample.time, .comm = comm }, false) ||
		    set_pid(tl, r.comm.tid, r.comm.pid))
			return -ENOMEM;
		if (r.misc & PERF_RECORD_MISC_COMM_EXEC)
			return add_proc(tl, (struct proc_event){ .time = ev->sample.time, .pid = r.comm.pid, .exec = true });
		return 0;
	case PERF_RECORD_FORK:
		if (set_pid(tl, r.task.tid, r.task.pid))
			return -ENOMEM;
		return add_proc(tl, (struct proc_event){ .time = r.task.time, .pid = r.task.pid, .tid = r.task.tid,
							 .ppid = r.task.ppid, .ptid = r.task.ptid });
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		/* Data maps (--call-graph dwarf records them, for perf): no code there. */
		if (r.misc & PERF_RECORD_MISC_MMAP_DATA)
			return 0;
		if (r.mmap.build_id_size)
			buildid_hex(r.mmap.build_id, r.mmap.build_id_size, bid);
		/* Maps are looked up by time: they may go in as they come. */
		return symbolizer__add_map(s->sym, r.mmap.pid, r.mmap.start, r.mmap.len, r.mmap.pgoff, r.mmap.filename,
					   ev->sample.time, pd_misc_kernel(r.misc), r.mmap.build_id_size ? bid : NULL);
	case PERF_RECORD_EXIT:
		/* A live session lets go of what an exited process held (session__trim). */
		if (!s->rd->in_memory)
			return 0;
		if (array_reserve((void **)&tl->exits, &tl->cap_exits, tl->nr_exits, sizeof(*tl->exits)))
			return -ENOMEM;
		tl->exits[tl->nr_exits++] = (struct exited){ r.task.pid, r.task.tid, SP_MAX(r.task.time, ev->sample.time),
							     tl->trims };
		return 0;
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
		s->lost += r.lost.lost;
		return 0;
	}
	return 0;
}

/* The attrs classified and the symbolizer made, over a reader just opened. */
static int session_init(struct session *s, const struct session_opts *o, char *err, size_t errlen)
{
	struct timeline *tl = s->priv;

	tl->filter = o->filter;
	/* Percentages of --time are of the recording's span of samples, as perf reads it from the header. */
	if (o->filter && o->filter->time &&
	    time_ranges_parse(o->filter->time, s->rd->meta.first_sample_ns, s->rd->meta.last_sample_ns, &tl->ranges,
			      &tl->nr_ranges, err, errlen))
		return -EINVAL;
	s->kind = calloc(s->rd->nr_attrs ? s->rd->nr_attrs : 1, sizeof(*s->kind));
	s->sym = symbolizer__new(&s->rd->meta,
				 &(struct symbolizer_opts){ .root = o->root, .any_perf_map_owner = o->any_owner });
	if (!s->kind || !s->sym) {
		snprintf(err, errlen, "out of memory reading %s", s->rd->path);
		return -ENOMEM;
	}
	for (int i = 0; i < s->rd->nr_attrs; i++) {
		s->kind[i] = classify(s, &s->rd->attrs[i]);
		if (s->kind[i] == SESS_SAMPLING && s->first_sampling < 0)
			s->first_sampling = i;
	}
	return 0;
}

static struct session *session_alloc(void)
{
	struct session *s = calloc(1, sizeof(*s));

	if (!s || !(s->priv = calloc(1, sizeof(struct timeline)))) {
		free(s);
		return NULL;
	}
	s->first_sampling = -1;
	return s;
}

int session__open(struct session **out, const char *path, const struct session_opts *o, char *err, size_t errlen)
{
	static const struct session_opts defaults;
	struct session *s = session_alloc();
	int e;

	o = o ?: &defaults;
	*out = NULL;
	if (!s) {
		snprintf(err, errlen, "out of memory reading %s", path);
		return -ENOMEM;
	}
	e = pd_reader__open(&s->rd, path, &(struct pd_reader_opts){ .any_owner = o->any_owner }, err, errlen) ?:
	    session_init(s, o, err, errlen);
	if (e) {
		session__free(s);
		return e;
	}
	*out = s;
	return 0;
}

int session__open_live(struct session **out, const struct pd_attr *attrs, int nr_attrs,
		       const struct session_live_opts *o, char *err, size_t errlen)
{
	struct session *s = session_alloc();
	int e;

	*out = NULL;
	if (!s) {
		snprintf(err, errlen, "out of memory reading %s", o->name);
		return -ENOMEM;
	}
	e = pd_reader__open_mem(&s->rd, attrs, nr_attrs, o->name, err, errlen) ?:
	    session_init(s, &(struct session_opts){ .filter = o->filter }, err, errlen);
	if (e) {
		session__free(s);
		return e;
	}
	symbolizer__keep_tables(s->sym, o->keep_tables, o->keep_syms);
	*out = s;
	return 0;
}

void session__free(struct session *s)
{
	struct timeline *tl;

	if (!s)
		return;
	tl = s->priv;
	if (tl) {
		strpool_free(&tl->names);
		for (size_t i = 0; i < tl->nr_tn; i++)
			free(tl->tn[i].v);
		free(tl->tn);
		u64_map_free(&tl->tn_idx);
		free(tl->pe);
		for (size_t i = 0; i < tl->nr_py; i++)
			free((void *)tl->py[i].rec.qualname);
		free(tl->py);
		u64_map_free(&tl->tid_pid);
		free(tl->q);
		free(tl->cons);
		free(tl->exits);
		free(tl->ranges);
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
	struct thread_names *n = names_of(s->priv, tid, false);
	const char *best = NULL;

	/* Its latest name by then, else its first (a sample before its COMM). */
	for (size_t i = 0; n && i < n->n; i++) {
		if (!n->v[i].comm)
			continue;
		if (!best || n->v[i].time <= t)
			best = n->v[i].comm;
		if (n->v[i].time > t)
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

int session__add_consumer(struct session *s, const struct session_ops *ops, void *ctx)
{
	struct timeline *tl = s->priv;

	if (array_reserve((void **)&tl->cons, &tl->cap_cons, tl->nr_cons, sizeof(*tl->cons)))
		return -ENOMEM;
	tl->cons[tl->nr_cons++] = (struct consumer){ ops, ctx };
	return 0;
}

int session__end_consumer(struct session *s, void *ctx, bool finish)
{
	struct timeline *tl = s->priv;
	int e = 0;

	for (size_t i = 0; i < tl->nr_cons; i++) {
		if (tl->cons[i].ctx != ctx)
			continue;
		if (finish && tl->cons[i].ops->finish)
			e = tl->cons[i].ops->finish(ctx);
		memmove(tl->cons + i, tl->cons + i + 1, (tl->nr_cons - i - 1) * sizeof(*tl->cons));
		tl->nr_cons--;
		break;
	}
	return e;
}

const struct report_filter *session__filter(const struct session *s)
{
	return ((const struct timeline *)s->priv)->filter;
}

/* The filter's lists (not --time): a thread or process, its name then, the sampled dso and symbol. */
static bool lists_keep(struct session *s, const struct report_filter *f, const struct sess_sample *ss)
{
	const struct pd_sample *p = &ss->ev->sample;
	struct sym sym;

	if ((f->comms.on && !name_set_has(&f->comms, ss->comm)) || (f->pids.n && !int_list_has(&f->pids, p->pid)) ||
	    (f->tids.n && !int_list_has(&f->tids, p->tid)))
		return false;
	/* The switch-outs of spanperf-sched carry no address: only the thread's filters apply. */
	if (!report_filter_by_address(f) || ss->kind == SESS_SCHED)
		return true;
	symbolizer__resolve(s->sym, p->pid, p->ip, p->time, ss->kernel, &sym);
	if (f->dsos.on && !name_set_has(&f->dsos, sym.dso) && !name_set_has(&f->dsos, sym.path))
		return false;
	return !f->syms.on || (sym.known && name_set_has(&f->syms, sym.name));
}

/*
 * Whether the filter keeps a sample: --time leaves it out of everything; the
 * lists leave it out of the outputs, in the tables' total (counted here).  A
 * waker sample shares the fate of the block it follows.
 */
static bool sample_kept(struct session *s, struct timeline *tl, const struct sess_sample *ss)
{
	const struct report_filter *f = tl->filter;
	const struct pd_sample *p = &ss->ev->sample;
	bool kept;

	if (!f)
		return true;
	if (ss->kind == SESS_WAKER)
		return tl->last_block_kept;
	kept = time_ranges_keep(tl->ranges, tl->nr_ranges, p->time);
	if (kept && !lists_keep(s, f, ss)) {
		kept = false;
		if (ss->kind == SESS_SAMPLING) {
			s->filtered_samples++;
			s->filtered_period += p->period;
		} else if (ss->kind == SESS_OFFCPU) {
			s->off_filtered_samples++;
			s->off_filtered_period += p->period;
		}
	}
	if (ss->kind == SESS_OFFCPU)
		tl->last_block_kept = kept;
	return kept;
}

/* A span by its own thread, process, name (at its end, as its record) and end time. */
static bool span_kept(struct session *s, struct timeline *tl, const struct sess_span *sp)
{
	const struct report_filter *f = tl->filter;
	const char *comm;

	if (!f)
		return true;
	if (!time_ranges_keep(tl->ranges, tl->nr_ranges, sp->rec.end_ns) ||
	    (f->pids.n && !int_list_has(&f->pids, sp->rec.pid)) || (f->tids.n && !int_list_has(&f->tids, sp->rec.tid)))
		return false;
	if (!f->comms.on)
		return true;
	comm = session__comm(s, sp->rec.tid, sp->rec.end_ns);
	return name_set_has(&f->comms, comm ? comm : unnamed(tl, sp->rec.tid));
}

/* One sample or span to every consumer, in the order they were added. */
static int deliver(struct session *s, struct timeline *tl, const struct pd_event *ev)
{
	int ai = ev->attr - s->rd->attrs, e = 0;

	switch (s->kind[ai]) {
	case SESS_SAMPLING:
	case SESS_OFFCPU:
	case SESS_WAKER:
	case SESS_SCHED: {
		struct pd_event at;
		struct sess_sample ss = {
			.ev = ev, .kind = s->kind[ai], .attr = ai,
			.kernel = (ev->hdr->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL,
		};

		/* A block found late is stamped after its end, and says by how much: consumers see the end. */
		if (s->kind[ai] != SESS_SAMPLING) {
			__u64 late = OFFCPU_RES_LATE_NS(ev->sample.cpu_res);

			if (late && late <= ev->sample.time) {
				at = *ev;
				at.sample.time -= late;
				ss.ev = &at;
			}
		}

		ss.comm = session__comm(s, ev->sample.tid, ev->sample.time);
		if (!ss.comm && !(ss.comm = unnamed(tl, ev->sample.tid)))
			return -ENOMEM;
		if (!sample_kept(s, tl, &ss))
			return 0;
		for (size_t i = 0; i < tl->nr_cons && !e; i++)
			if (tl->cons[i].ops->sample)
				e = tl->cons[i].ops->sample(tl->cons[i].ctx, &ss);
		return e;
	}
	case SESS_SPAN: {
		struct sess_span sp = { .ev = ev, .name = span_codec_name(ev->attr) };

		if (span_codec_decode(&ev->sample, &sp.rec))
			return 0; /* a layout this reader does not know */
		if (!span_kept(s, tl, &sp)) {
			s->filtered_spans++;
			return 0;
		}
		for (size_t i = 0; i < tl->nr_cons && !e; i++)
			if (tl->cons[i].ops->span)
				e = tl->cons[i].ops->span(tl->cons[i].ctx, &sp);
		return e;
	}
	default:
		return 0;
	}
}

/*
 * How far behind the reading its pages go (a round's records, read again
 * when the round is flushed, are mostly still there), and the least a call
 * lets go: a 1M-sample file is 270 MB, which the pass need not hold.
 */
#define EVICT_LAG (32u << 20)
#define EVICT_STEP (8u << 20)

static void evict_behind(struct session *s, __u64 *mark, __u64 pos)
{
	if (pos >= *mark + EVICT_STEP) {
		pd_reader__evict(s->rd, *mark, pos);
		*mark = pos;
	}
}

/*
 * A record at pos read whole, or -EINVAL at a malformed one (rd->err says
 * which).  Queued samples are in file order and read in that order, and
 * each record between them was read whole as it came: the first malformed
 * record of a file is the one said, as when every record was read whole.
 */
static int read_whole(struct session *s, struct timeline *tl, __u64 pos, struct pd_event *ev)
{
	struct pd_iter it = { pos };

	if (pd_reader__next(s->rd, &it, ev) > 0)
		return 0;
	tl->bad_record = true;
	return -EINVAL;
}

/*
 * Everything up to time `upto`: the forks and execs first, then the
 * samples and spans waiting, in file order, until one is later (it waits
 * for the next round: its side-band may still come).
 */
static int flush(struct session *s, struct timeline *tl, __u64 upto)
{
	struct pd_event ev;
	int e = apply_proc_events(s, tl, upto) ?: apply_python(s, tl, upto);

	for (; !e && tl->qhead < tl->nr_q && tl->q[tl->qhead].time <= upto; tl->qhead++) {
		/* Its first read took its time alone: it is decoded and checked here, once. */
		if ((e = read_whole(s, tl, tl->q[tl->qhead].pos, &ev)))
			break;
		e = deliver(s, tl, &ev);
		evict_behind(s, &tl->evict_flush, tl->q[tl->qhead].pos);
	}
	/*
	 * What waits is about a round: moving it down keeps the queue that size.
	 * Nothing taken, nothing to move (and a queue never filled has no array).
	 */
	if (tl->qhead) {
		memmove(tl->q, tl->q + tl->qhead, (tl->nr_q - tl->qhead) * sizeof(*tl->q));
		tl->nr_q -= tl->qhead;
		tl->qhead = 0;
	}
	return e;
}

/* Samples and spans wait in the queue; side-band goes into the timeline as it comes. */
static int take(struct session *s, struct timeline *tl, const struct pd_event *ev, __u64 pos)
{
	enum sess_kind k;

	if (ev->hdr->type != PERF_RECORD_SAMPLE)
		return sideband(s, tl, ev);
	if (!ev->attr)
		return 0;
	k = s->kind[ev->attr - s->rd->attrs];
	/* A waker sample waits with the offcpu-time sample it follows: both are stamped alike. */
	if (k != SESS_SAMPLING && k != SESS_OFFCPU && k != SESS_WAKER && k != SESS_SCHED && k != SESS_SPAN) {
		struct pd_event whole;
		int e = read_whole(s, tl, pos, &whole);

		if (e || (k != SESS_OTEL_PROCESS && k != SESS_PYTHON))
			return e;
		return k == SESS_OTEL_PROCESS ? otel_process(s, &whole) : python_names(s, tl, &whole);
	}
	if (array_reserve((void **)&tl->q, &tl->cap_q, tl->nr_q, sizeof(*tl->q)))
		return -ENOMEM;
	tl->q[tl->nr_q++] = (struct queued){ ev->sample.time, pos };
	return 0;
}

/* A record's time: a FORK's is in its body. */
static __u64 rec_time(const struct pd_event *ev)
{
	struct pd_sideband r;

	if (ev->hdr->type == PERF_RECORD_FORK && !pd_sideband_parse(NULL, ev->hdr, ev->hdr->size, &r))
		return SP_MAX(r.task.time, ev->sample.time);
	return ev->sample.time;
}

/*
 * As perf's ordered events: at each FINISHED_ROUND every record up to the
 * latest time seen before the previous one has been read, so what is
 * queued up to then can go.  Files without rounds wait to the end, as the
 * whole file is one round.
 */
static int step(struct session *s, struct timeline *tl, const struct pd_event *ev, __u64 pos)
{
	int e;

	if (ev->hdr->type == PD_RECORD_FINISHED_ROUND) {
		e = flush(s, tl, tl->safe);
		tl->safe = tl->seen;
		return e;
	}
	e = take(s, tl, ev, pos);
	tl->seen = SP_MAX(tl->seen, rec_time(ev));
	return e;
}

/* A consumer's error as it was said, or the reader's and memory's, said here. */
static int failed(struct session *s, int e, char *err, size_t errlen)
{
	struct timeline *tl = s->priv;

	if (tl->bad_record)
		snprintf(err, errlen, "%s", s->rd->err);
	else if (e == -ENOMEM)
		snprintf(err, errlen, "out of memory reading %s", s->rd->path);
	return e;
}

/*
 * The records there are to read, each taken in; -EINVAL at a malformed one
 * (rd->err says which).  Queued samples are read for their time alone here,
 * and whole when they are delivered.
 */
static int read_on(struct session *s, struct timeline *tl)
{
	struct pd_event ev;
	__u64 pos = tl->it.pos;
	int e = 0, r;

	while (!e && (r = pd_reader__next_time(s->rd, &tl->it, &ev)) > 0) {
		e = step(s, tl, &ev, pos);
		pos = tl->it.pos;
		if (pos > EVICT_LAG)
			evict_behind(s, &tl->evict_read, pos - EVICT_LAG);
	}
	if (e || r >= 0)
		return e;
	/* A malformed sample queued before this record is the first one the file has. */
	for (size_t i = tl->qhead; i < tl->nr_q; i++)
		if (read_whole(s, tl, tl->q[i].pos, &ev))
			return -EINVAL;
	tl->bad_record = true;
	return -EINVAL;
}

/* In memory: what no queued record and no record to read needs any more. */
static void release(struct session *s, struct timeline *tl)
{
	pd_reader__release(s->rd, tl->qhead < tl->nr_q ? tl->q[tl->qhead].pos : tl->it.pos);
}

int session__feed(struct session *s, const void *p, size_t n, char *err, size_t errlen)
{
	struct timeline *tl = s->priv;
	int e = pd_reader__append(s->rd, p, n) ?: read_on(s, tl);

	release(s, tl);
	return e ? failed(s, e, err, errlen) : 0;
}

int session__flush(struct session *s, char *err, size_t errlen)
{
	struct timeline *tl = s->priv;
	int e = flush(s, tl, ~0ull);

	release(s, tl);
	return e ? failed(s, e, err, errlen) : 0;
}

int session__end(struct session *s, char *err, size_t errlen)
{
	struct timeline *tl = s->priv;
	int e = flush(s, tl, ~0ull);

	for (size_t i = 0; i < tl->nr_cons && !e; i++)
		if (tl->cons[i].ops->finish)
			e = tl->cons[i].ops->finish(tl->cons[i].ctx);
	release(s, tl);
	return e ? failed(s, e, err, errlen) : 0;
}

/* The one pass over a file: every record read, then the end. */
int session__run(struct session *s, char *err, size_t errlen)
{
	int e = read_on(s, s->priv);

	return e ? failed(s, e, err, errlen) : session__end(s, err, errlen);
}

int session__process(struct session *s, const struct session_ops *ops, void *ctx, char *err, size_t errlen)
{
	if (session__add_consumer(s, ops, ctx)) {
		snprintf(err, errlen, "out of memory reading %s", s->rd->path);
		return -ENOMEM;
	}
	return session__run(s, err, errlen);
}

/*
 * The threads gone, and every map they had, let go: the names of a tid
 * that did not come back, whose entries are compacted away once they are as
 * many as the living; the processes are the symbolizer's to let go.
 */
static void forget_thread(struct session *s, struct timeline *tl, const struct exited *x)
{
	struct thread_names *n = names_of(tl, x->tid, false);
	uint64_t *pid = u64_map_get(&tl->tid_pid, x->tid, false);

	if (x->pid == x->tid)
		symbolizer__exit(s->sym, x->pid, x->time);
	if (!n || !n->n || n->v[n->n - 1].time > x->time)
		return;
	free(n->v);
	*n = (struct thread_names){};
	tl->gone_tn++;
	if (pid)
		*pid = 0; /* unknown again */
}

/* The thread entries without names taken out, their maps made anew; out of memory, all stay. */
static void compact_threads(struct timeline *tl)
{
	struct u64_map idx = {}, pids = {};
	struct thread_names *tn;
	size_t n = 0, living = 0;

	/* Counted, not taken from gone_tn: a tid forgotten may have come back. */
	for (size_t i = 0; i < tl->nr_tn; i++)
		living += tl->tn[i].n > 0;
	tn = calloc(living ? living : 1, sizeof(*tn));

	for (size_t i = 0; tn && i < tl->tn_idx.cap; i++) {
		const struct thread_names *t;
		uint64_t *v;

		if (!tl->tn_idx.used[i] || !(t = &tl->tn[tl->tn_idx.slot[i].val - 1])->n)
			continue;
		if (!(v = u64_map_get(&idx, tl->tn_idx.slot[i].key, true)))
			goto cleanup;
		tn[n] = *t;
		*v = ++n;
	}
	for (size_t i = 0; tn && i < tl->tid_pid.cap; i++) {
		uint64_t *v;

		if (!tl->tid_pid.used[i] || !tl->tid_pid.slot[i].val)
			continue;
		if (!(v = u64_map_get(&pids, tl->tid_pid.slot[i].key, true)))
			goto cleanup;
		*v = tl->tid_pid.slot[i].val;
	}
	if (!tn)
		return;
	free(tl->tn);
	u64_map_free(&tl->tn_idx);
	u64_map_free(&tl->tid_pid);
	tl->tn = tn;
	tl->nr_tn = n;
	tl->cap_tn = living ? living : 1;
	tl->tn_idx = idx;
	tl->tid_pid = pids;
	tl->gone_tn = 0;
	return;
cleanup:
	free(tn);
	u64_map_free(&idx);
	u64_map_free(&pids);
}

void session__trim(struct session *s)
{
	struct timeline *tl = s->priv;
	size_t k = 0;

	tl->trims++;
	/* An exit a whole window old: every record up to it has been delivered. */
	for (size_t i = 0; i < tl->nr_exits; i++) {
		if (tl->exits[i].trim + 2 <= tl->trims)
			forget_thread(s, tl, &tl->exits[i]);
		else
			tl->exits[k++] = tl->exits[i];
	}
	tl->nr_exits = k;
	if (tl->gone_tn >= 1024 && tl->gone_tn * 2 >= tl->nr_tn)
		compact_threads(tl);
	symbolizer__trim(s->sym);
}
