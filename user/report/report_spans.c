// SPDX-License-Identifier: GPL-2.0
/*
 * report --spans and annotate: spans joined with the samples of their
 * thread inside [start, end], with the top functions inside and the
 * counters the span programs measured.  Spans come from the perf.data
 * (records of attrs named spanperf:NAME) or, for annotate, from a JSONL
 * file written anywhere else.  The join is here; what it found goes to its
 * outputs (spans_text.c, spans_json.c, spans_otlp.c, the page's timeline)
 * as a read-only view (spans_view.h), built once after the join, which is
 * all they see: they never call back here.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "correlate.h"
#include "fileio.h"
#include "hash.h"
#include "log.h"
#include "map_guard.h"
#include "names.h"
#include "otel_join.h"
#include "otlp_json.h"
#include "report_filter.h"
#include "report_spans.h"
#include "sbuf.h"
#include "session.h"
#include "span_wall.h"
#include "spans_jsonl.h"
#include "spans_view.h"
#include "util.h"

/* A sample, as the join needs it. */
struct sinfo {
	__s32 pid;
	__u32 tid;
	bool kernel;
	__u64 ip, time;
};

/*
 * A span as the join keeps it: what every span has, here (a million of them
 * is 64 MB); its counters in span_report.ctr and what only some spans have
 * (ids, attributes, a recorded split, an external span) in an extra.
 */
struct span_row {
	__u32 tid, pid;
	__u64 start, end;
	__u64 bpf_samples;
	size_t first, count; /* the join's result */
	__u32 name;	     /* index into names */
	__u32 at;	     /* its counters: span_report.ctr[at * nr_ctr ...], where it has them */
	__u32 x;	     /* its extra: span_report.x[x - 1]; 0: none */
	__u8 source;
	__u8 edges;	     /* SPAN_EDGES_SAMPLED, SPAN_END_AT_SWITCH */
	bool unfinished, has_ctr;
};

struct span_extra {
	const struct ext_span *ext;
	bool has_ctx; /* trace_id and span_id from the recording (otel) */
	__u8 trace_id[16], span_id[8];
	const char *attrs; /* its OTEP 4947 attributes, pooled (otel_attrs_split); NULL: none */
	__u8 *raw_attrs;   /* until the pass ends: the process contexts come last */
	const char *kind;  /* with raw_attrs: the name to take where no span.name names it */
	__u16 raw_size;
	struct span_sched sched; /* where its wall time went, as recorded (how 0: not) */
};

/*
 * The view's storage.  Rows point into the arrays below, which grow while
 * the rows are made: a row keeps offsets (at) until the last is made, and
 * gets its pointers then.
 */
struct view_store {
	struct spans_view v;
	struct spans_row *row;
	struct row_at {
		size_t top, attr, off_top, woken_by;
	} *at;
	struct spans_func *func;
	size_t nr_func, cap_func;
	struct spans_attr *attr;
	size_t nr_attr, cap_attr;
	struct strpool attr_str;
	struct spans_stack *stack; /* the rows' off_top */
	size_t *stack_at;	   /* where stack[i]'s frames are in frame */
	size_t nr_stack, cap_stack, cap_stack_at;
	struct spans_waker *waker; /* the rows' woken_by */
	size_t *waker_at;
	size_t nr_waker, cap_waker, cap_waker_at;
	const char **frame;
	size_t nr_frame, cap_frame;
	struct spans_table table;
	bool built;
};

struct span_report {
	struct spans_report_opts o;
	struct ext_span *ext; /* annotate's spans */
	size_t next;
	struct session *sess;
	struct strpool names; /* span names; a row's name is its id here */
	struct strpool attrs; /* otel spans' attributes */
	char **ctr_names;     /* the session's: what counters[k] is */
	int nr_ctr;
	int task_clock; /* k of counters[k] that is task-clock, -1: none; found once, not per row */
	struct sinfo *s;
	size_t ns, cap_s;
	struct span_row *sp;
	size_t nsp, cap_sp;
	__u64 *ctr; /* nr_ctr a span, by span_row.at */
	size_t nr_ctr_rows, cap_ctr;
	struct span_extra *x;
	size_t nx, cap_x;
	struct corr_sample *sorted; /* the join's sample order, until s is in it (in_join_order) */
	const char **leaf;	    /* s[i]'s leaf function, once resolved (s in the join's order) */
	struct span_wall *wall;	    /* off-CPU time per span */
	struct view_store view;
};

static int name_index(struct span_report *r, const char *name)
{
	size_t id;

	return strpool_intern(&r->names, name, &id) ? (int)id : -ENOMEM;
}

static const struct span_extra no_extra;

static const struct span_extra *extra_of(const struct span_report *r, const struct span_row *sp)
{
	return sp->x ? &r->x[sp->x - 1] : &no_extra;
}

/* A new extra for the row about to be added; NULL: out of memory. */
static struct span_extra *new_extra(struct span_report *r, struct span_row *row)
{
	if (r->nx >= UINT32_MAX - 1 || array_reserve((void **)&r->x, &r->cap_x, r->nx, sizeof(*r->x)))
		return NULL;
	r->x[r->nx] = (struct span_extra){};
	row->x = ++r->nx;
	return &r->x[r->nx - 1];
}

static __u64 counter(const struct span_report *r, const struct span_row *sp, int k)
{
	return sp->has_ctr ? r->ctr[(size_t)sp->at * r->nr_ctr + k] : 0;
}

static int on_sample(void *ctx, const struct sess_sample *ss)
{
	struct span_report *r = ctx;
	const struct pd_sample *s = &ss->ev->sample;

	if (ss->kind == SESS_OFFCPU || ss->kind == SESS_WAKER || ss->kind == SESS_SCHED)
		return span_wall__add(r->wall, ss);
	if (ss->kind != SESS_SAMPLING)
		return 0;
	if (array_reserve((void **)&r->s, &r->cap_s, r->ns, sizeof(*r->s)))
		return -ENOMEM;
	r->s[r->ns++] = (struct sinfo){
		.pid = s->pid, .tid = s->tid, .ip = s->ip, .time = s->time, .kernel = ss->kernel,
	};
	return 0;
}

static int on_span(void *ctx, const struct sess_span *ss)
{
	struct span_report *r = ctx;
	const struct span_rec *sp = &ss->rec;
	struct span_row row = {
		.tid = sp->tid, .pid = sp->pid, .start = sp->start_ns, .end = sp->end_ns, .source = sp->source,
		.unfinished = sp->flags & SP_SPAN_UNFINISHED, .bpf_samples = sp->samples,
		.edges = sp->flags & (SPAN_EDGES_SAMPLED | SPAN_END_AT_SWITCH),
	};
	bool has_ctx = sp->flags & SPAN_HAS_CONTEXT;
	struct span_extra *x = NULL;
	int name = 0;

	if (r->o.external)
		return 0;
	if (r->nsp >= UINT32_MAX - 1 || array_reserve((void **)&r->sp, &r->cap_sp, r->nsp, sizeof(*r->sp)))
		return -ENOMEM;
	/* With attributes, the name waits for them (on_finish): span.name may give it. */
	if (!(has_ctx && sp->attrs_size)) {
		name = name_index(r, ss->name);
		if (name < 0)
			return -ENOMEM;
		row.name = name;
	}
	if (r->nr_ctr && !(sp->flags & SPAN_NO_COUNTERS)) {
		if (array_reserve((void **)&r->ctr, &r->cap_ctr, (r->nr_ctr_rows + 1) * r->nr_ctr - 1, sizeof(*r->ctr)))
			return -ENOMEM;
		memcpy(r->ctr + r->nr_ctr_rows * r->nr_ctr, sp->counters, r->nr_ctr * sizeof(*r->ctr));
		row.at = r->nr_ctr_rows++;
		row.has_ctr = true;
	}
	if ((has_ctx || sp->sched.how) && !(x = new_extra(r, &row)))
		return -ENOMEM;
	if (sp->sched.how)
		x->sched = sp->sched;
	if (has_ctx) {
		x->has_ctx = true;
		memcpy(x->trace_id, sp->trace_id, 16);
		memcpy(x->span_id, sp->span_id, 8);
		if (sp->attrs_size) {
			x->kind = ss->name;
			x->raw_attrs = malloc(sp->attrs_size);
			if (!x->raw_attrs)
				return -ENOMEM;
			memcpy(x->raw_attrs, sp->attrs, sp->attrs_size);
			x->raw_size = sp->attrs_size;
		}
	}
	r->sp[r->nsp++] = row;
	return 0;
}

/*
 * The otel spans' attributes, named through their process's context, read by
 * now; a context that names its span (libspanperf's span.name) gives the row
 * that name.
 */
static int on_finish(void *ctx)
{
	struct span_report *r = ctx;
	char sname[128]; /* as long as an external span's name */

	for (size_t i = 0; i < r->nsp; i++) {
		struct span_row *row = &r->sp[i];
		struct span_extra *x = row->x ? &r->x[row->x - 1] : NULL;
		int name;

		if (!x || !x->raw_attrs)
			continue;
		if (otel_attrs_intern(&r->attrs, session__otel_process(r->sess, row->pid), x->raw_attrs,
				      x->raw_size, &x->attrs))
			return -ENOMEM;
		free(x->raw_attrs);
		x->raw_attrs = NULL;
		name = name_index(r, x->attrs && otel_attrs_get(x->attrs, OTEL_SPAN_NAME_KEY, sname, sizeof(sname)) &&
					     sname[0] ? sname : x->kind);
		if (name < 0)
			return -ENOMEM;
		row->name = name;
	}
	return span_wall__finish(r->wall);
}

static int add_external(struct span_report *r, const struct ext_span *ext, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (ext[i].no_tid)
			continue; /* not placed on a thread */
		struct span_row row = { .tid = ext[i].tid, .pid = ext[i].pid, .start = ext[i].start,
					.end = ext[i].end, .source = SP_SRC_EXTERNAL };
		__s64 pid = session__pid_of(r->sess, ext[i].tid);
		struct span_extra *x;
		int name;

		if (!ext[i].has_pid)
			row.pid = pid >= 0 ? pid : ext[i].tid;
		name = name_index(r, ext[i].name);
		if (name < 0 || r->nsp >= UINT32_MAX - 1 ||
		    array_reserve((void **)&r->sp, &r->cap_sp, r->nsp, sizeof(*r->sp)) || !(x = new_extra(r, &row)))
			return -ENOMEM;
		row.name = name;
		x->ext = &ext[i];
		r->sp[r->nsp++] = row;
	}
	return 0;
}

/*
 * The samples moved into the join's order, which the spans' first and count
 * index, with their leaves beside them: a span's samples are then a run of
 * pointers.  Read through the sorted indices, 40 bytes a sample, the join's
 * 51M sample visits (spans overlap) were a quarter of its time.
 */
static int in_join_order(struct span_report *r)
{
	struct sinfo *s = malloc((r->ns ? r->ns : 1) * sizeof(*s));

	r->leaf = calloc(r->ns ? r->ns : 1, sizeof(*r->leaf));
	if (!s || !r->leaf) {
		free(s);
		return -ENOMEM;
	}
	for (size_t i = 0; i < r->ns; i++)
		s[i] = r->s[r->sorted[i].idx];
	free(r->s);
	free(r->sorted);
	r->s = s;
	r->cap_s = r->ns;
	r->sorted = NULL;
	return 0;
}

static int join(struct span_report *r)
{
	struct corr_span *c = malloc((r->nsp ? r->nsp : 1) * sizeof(*c));

	r->sorted = malloc((r->ns ? r->ns : 1) * sizeof(*r->sorted));
	if (!c || !r->sorted) {
		free(c);
		return -ENOMEM;
	}
	for (size_t i = 0; i < r->ns; i++)
		r->sorted[i] = (struct corr_sample){ r->s[i].tid, (__u32)i, r->s[i].time };
	for (size_t i = 0; i < r->nsp; i++)
		c[i] = (struct corr_span){ .tid = r->sp[i].tid, .start = r->sp[i].start, .end = r->sp[i].end };
	correlate(r->sorted, r->ns, c, r->nsp);
	for (size_t i = 0; i < r->nsp; i++) {
		r->sp[i].first = c[i].first;
		r->sp[i].count = c[i].count;
	}
	free(c);
	return in_join_order(r);
}

/* Sample i's leaf function, resolved on first use: only samples inside spans are. */
static const char *leaf(struct span_report *r, size_t i)
{
	if (!r->leaf[i]) {
		const struct sinfo *s = &r->s[i];
		struct sym sym;

		symbolizer__resolve(r->sess->sym, s->pid, s->ip, s->time, s->kernel, &sym);
		r->leaf[i] = sym.name;
	}
	return r->leaf[i];
}

/*
 * The leaf functions of samples [first, first+count), most first, appended
 * to the view's; how many, or -ENOMEM.
 */
static long top_of(struct span_report *r, struct view_store *vs, size_t first, size_t count)
{
	size_t n = 0;

	/* By index: func is NULL until the first name, and NULL + 0 is undefined. */
	for (size_t i = first, run; i < first + count; i += run) {
		const char *name = leaf(r, i);
		size_t k;

		/* Samples in a row with the same leaf, resolved already, are counted at once. */
		for (run = 1; name && i + run < first + count && r->leaf[i + run] == name; run++)
			;

		/* Names are owned by the symbolizer: one pointer per distinct symbol. */
		for (k = 0; k < n && vs->func[vs->nr_func + k].name != name; k++)
			;
		if (k == n) {
			if (array_reserve((void **)&vs->func, &vs->cap_func, vs->nr_func + n, sizeof(*vs->func)))
				return -ENOMEM;
			vs->func[vs->nr_func + n++] = (struct spans_func){ name, 0 };
		}
		vs->func[vs->nr_func + k].n += run;
	}
	if (n)
		sort_n(vs->func + vs->nr_func, n, sizeof(*vs->func), spans_func_cmp);
	vs->nr_func += n;
	return n;
}

static bool ctr_is_clock(const char *name)
{
	return !strcmp(name, "task-clock") || !strcmp(name, "cpu-clock");
}

/* The span's time on CPU from its task-clock counter (or its switch stamps), -1 where it has none. */
static __s64 on_cpu_ns(const struct span_report *r, const struct span_row *sp)
{
	const struct span_sched *sc = &extra_of(r, sp)->sched;

	if (sp->source == SP_SRC_EXTERNAL)
		return -1;
	/* From stamps (no sched_info, or forced) BPF's on_ns is the switch stamps' own figure. */
	if (sc->how == SP_SCHED_STAMPS || sc->how == SP_SCHED_WAKE_STAMPS)
		return sc->on_ns;
	return r->task_clock >= 0 ? (__s64)counter(r, sp, r->task_clock) : -1;
}

/* v as 16 lower-case hex digits, and a NUL: "%016llx" without printf's cost at a million rows. */
static void hex64(char *out, __u64 v)
{
	static const char digits[] = "0123456789abcdef";

	for (int i = 14; i >= 0; i -= 2, v >>= 8) {
		out[i] = digits[(v >> 4) & 15];
		out[i + 1] = digits[v & 15];
	}
	out[16] = 0;
}

/* The id as hex: the recording's (otel), the external span's if it is OTLP-shaped, else made up from row i. */
static void ids_of(const struct span_report *r, const struct span_row *sp, size_t i, char trace[33], char span[17])
{
	const struct span_extra *x = extra_of(r, sp);
	const char *t = x->ext ? x->ext->trace_id : "", *s = x->ext ? x->ext->span_id : "";

	if (x->has_ctx) {
		otel_hex(trace, x->trace_id, 16);
		otel_hex(span, x->span_id, 8);
		return;
	}
	/* The quoted id's 32 (16) digits: no printf's cost at a million rows. */
	if (strlen(t) == 34 && t[0] == '"') {
		memcpy(trace, t + 1, 32);
		trace[32] = 0;
	} else {
		hex64(trace, hash_mix(sp->pid, sp->tid) | 1);
		hex64(trace + 16, hash_mix(sp->start, sp->end));
	}
	if (strlen(s) == 18 && s[0] == '"') {
		memcpy(span, s + 1, 16);
		span[16] = 0;
	} else {
		hex64(span, hash_mix(sp->start, i) | 1);
	}
}

/*
 * A span's ids as the rows show them: an OTel context's, an external span's
 * own where both are OTLP-shaped, or those made up for spanperf's own spans
 * (ids_of, as the JSON rows and the OTLP output give them).  External
 * spans without such ids have none to give.
 */
static bool has_ids(const struct span_report *r, const struct span_row *sp)
{
	const struct ext_span *x = extra_of(r, sp)->ext;

	if (extra_of(r, sp)->has_ctx || sp->source != SP_SRC_EXTERNAL)
		return true;
	return x && strlen(x->trace_id) == 34 && x->trace_id[0] == '"' && strlen(x->span_id) == 18 &&
	       x->span_id[0] == '"';
}

/* The innermost span with ids that thread tid was in at time: a waker's, for woken_by. */
static bool ids_at(const struct span_report *r, __u32 tid, __u64 time, char trace[33], char span[17])
{
	const struct span_row *best = NULL;

	for (size_t i = 0; i < r->nsp && r->sp[i].start <= time; i++) {
		const struct span_row *sp = &r->sp[i];

		if (sp->tid == tid && time <= sp->end && has_ids(r, sp) && (!best || sp->start >= best->start))
			best = sp;
	}
	if (!best)
		return false;
	ids_of(r, best, best - r->sp, trace, span);
	return true;
}

/* How the span's split was measured, as the JSON rows' "split" says (enum sp_sched_how); NULL: none. */
static const char *split_name(__u32 how)
{
	switch (how) {
	case SP_SCHED_ACCOUNTS: return "sched_info";
	case SP_SCHED_STAMPS: return "switch-stamps";
	case SP_SCHED_WAKE_STAMPS: return "stamps";
	default: return NULL;
	}
}

/*
 * The split of sp's wall time: the span's own (its record's accounts), else
 * that of the file's spanperf-sched records over its thread and interval;
 * *how names the one used (NULL: none).  False where there is neither.
 */
static bool split_of(struct span_report *r, const struct span_row *sp, struct span_split *x, const char **how)
{
	const struct span_sched *sc = &extra_of(r, sp)->sched;

	*how = split_name(sc->how);
	if (span_split_of(sc, sp->end - sp->start, x))
		return true;
	/* Spans that carry no split of their own (external, OTel): from the recording's switch-outs. */
	if (span_wall__sched_split(r->wall, sp->tid, sp->start, sp->end, x)) {
		*how = "sched-records";
		return true;
	}
	return false;
}

static int cmp_row_start(const void *a, const void *b)
{
	const struct span_row *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

/*
 * Rows by start: a recording's spans mostly are (a million: qsort's merge
 * sort took 5% of the join, its 64 MB of room more page faults).  Those in
 * order already are left as they are, which is what the stable sort gives.
 */
static void sort_rows(struct span_row *sp, size_t n)
{
	size_t i = 1;

	while (i < n && cmp_row_start(&sp[i - 1], &sp[i]) <= 0)
		i++;
	if (i < n)
		sort_n(sp, n, sizeof(*sp), cmp_row_start);
}

/* OTLP spans on CLOCK_REALTIME move to the recording's clock by the offset taken at record time. */
static int to_recording_clock(struct span_report *r, struct ext_span *ext, size_t n, char *err, size_t errlen)
{
	const struct pd_meta *m = &r->sess->rd->meta;
	__s64 off = (__s64)(m->clock_tod_ns - m->clock_ref_ns);
	size_t i;

	for (i = 0; i < n && !ext[i].realtime; i++)
		;
	if (i == n)
		return 0;
	if (!m->clock_tod_ns)
		return set_errorf(err, errlen, -EINVAL,
				  "%s has no CLOCK_DATA (the wall-clock time of its start), so the OTLP spans' unix times cannot be placed; record it with spanperf 0.1 or later",
				  r->o.input);
	for (i = 0; i < n; i++)
		if (ext[i].realtime) {
			ext[i].start -= off;
			ext[i].end -= off;
		}
	return 0;
}

struct pid_sample {
	__u32 pid, tid;
	__u64 time;
};

static int cmp_pid_sample(const void *a, const void *b)
{
	const struct pid_sample *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->time > y->time) - (x->time < y->time);
}

/*
 * A span without thread.id goes to the one thread of its process that has
 * samples in its window; with none or several it stays unplaced (counted).
 */
static size_t place_by_pid(struct span_report *r, struct ext_span *ext, size_t n)
{
	struct pid_sample *ps = NULL;
	size_t unplaced = 0, np = 0;

	for (size_t i = 0; i < n; i++)
		if (ext[i].no_tid)
			goto build;
	return 0;
build:
	ps = malloc((r->ns ? r->ns : 1) * sizeof(*ps));
	for (size_t i = 0; ps && i < r->ns; i++)
		ps[np++] = (struct pid_sample){ (__u32)r->s[i].pid, r->s[i].tid, r->s[i].time };
	if (ps)
		sort_n(ps, np, sizeof(*ps), cmp_pid_sample);
	for (size_t i = 0; i < n; i++) {
		size_t lo;
		__u32 tid = 0;
		bool many = false;

		if (!ext[i].no_tid)
			continue;
		if (!ps || !ext[i].has_pid) {
			unplaced++;
			continue;
		}
		lo = SP_PARTITION(np, k, ps[k].pid < ext[i].pid || (ps[k].pid == ext[i].pid && ps[k].time < ext[i].start));
		for (size_t k = lo; k < np && ps[k].pid == ext[i].pid && ps[k].time <= ext[i].end && !many; k++) {
			many = tid && ps[k].tid != tid;
			tid = ps[k].tid;
		}
		if (tid && !many) {
			ext[i].tid = tid;
			ext[i].no_tid = 0;
		} else {
			unplaced++;
		}
	}
	free(ps);
	return unplaced;
}

/*
 * The spans file mapped, not read: its parser lets the pages behind it go,
 * so the text (270 MB for a million OTLP spans) and the spans made from it
 * are never all in memory at once.  *mapped says which way it came.  As the
 * perf.data reader does: mapped only if no one else may write it, and with
 * the guard on, so that a file cut short under the parse reads as zeros
 * (a parse error, one sentence) rather than SIGBUS; a file others may write,
 * and an empty one, are read.
 */
static int load_external(const char *path, char **text, size_t *len, bool *mapped)
{
	struct stat st;
	int fd = open_regular(path), e = 0;
	void *p;

	*mapped = false;
	if (fd < 0)
		return fd;
	if (fstat(fd, &st)) {
		e = -errno;
	} else if (st.st_size <= 0 || (unsigned long long)st.st_size >= SIZE_MAX / 2 ||
		   (st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & 022) || map_guard__install()) {
		e = read_file_all(path, text, len);
	} else if ((p = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED) {
		e = -errno;
	} else {
		madvise(p, st.st_size, MADV_SEQUENTIAL);
		*text = p;
		*len = st.st_size;
		*mapped = true;
	}
	close(fd);
	return e;
}

/* annotate's spans, read before the pass. */
static int read_external(struct span_report *r, char *err, size_t errlen)
{
	const char *path = r->o.external;
	struct otlp_stats ost = {};
	char *text = NULL;
	size_t len = 0;
	bool mapped;
	int e = load_external(path, &text, &len, &mapped);

	if (e)
		return set_errorf(err, errlen, e, "cannot read --spans '%s': %s", path, strerror(-e));
	/* The spans keep copies of what they show: the text goes before the pass. */
	if (otlp_json_detect(text, len)) {
		e = mapped ? otlp_json_parse_mapped(text, len, path, &r->ext, &r->next, &ost, err, errlen)
			   : otlp_json_parse(text, len, path, &r->ext, &r->next, &ost, err, errlen);
		if (!e && ost.skipped)
			pr_warn("%zu spans of %s had no start or end time, or ended before they started; left out",
				ost.skipped, path);
	} else {
		e = mapped ? ext_spans_parse_mapped(text, len, path, &r->ext, &r->next, err, errlen)
			   : ext_spans_parse(text, len, path, &r->ext, &r->next, err, errlen);
	}
	if (mapped)
		munmap(text, len);
	else
		free(text);
	return e;
}

int span_report__new(struct span_report **out, struct session *sess, const struct spans_report_opts *o, char *err,
		     size_t errlen)
{
	static const struct session_ops ops = { .sample = on_sample, .span = on_span, .finish = on_finish };
	struct span_report *r = calloc(1, sizeof(*r));
	int e;

	*out = NULL;
	if (!r)
		return set_errorf(err, errlen, -ENOMEM, "out of memory joining spans of %s", o->input);
	r->o = *o;
	r->sess = sess;
	r->ctr_names = sess->span_counters;
	r->nr_ctr = sess->nr_span_counters;
	r->task_clock = -1;
	for (int k = 0; k < r->nr_ctr && r->task_clock < 0; k++)
		if (!strcmp(r->ctr_names[k], "task-clock"))
			r->task_clock = k;
	e = o->external ? read_external(r, err, errlen) : 0;
	if (!e)
		span_wall__new(&r->wall, sess);
	if (!e && (!r->wall || session__add_consumer(sess, &ops, r)))
		e = set_errorf(err, errlen, -ENOMEM, "out of memory joining spans of %s", o->input);
	if (e) {
		span_report__free(r);
		return e;
	}
	*out = r;
	return 0;
}

/*
 * report --dsos, --symbols: a span stays when one of its samples is in them
 * (perf's rule for a sample: its sampled address), its samples then those
 * only; its wall time and its split stay its own.
 */
static size_t keep_sampled(struct span_report *r)
{
	size_t k = 0, n = r->nsp;

	for (size_t i = 0; i < r->nsp; i++) {
		if (r->sp[i].count)
			r->sp[k++] = r->sp[i];
	}
	r->nsp = k;
	return n - k;
}

int span_report__finish(struct span_report *r, char *err, size_t errlen)
{
	const struct spans_report_opts *o = &r->o;
	size_t unplaced;
	int e = to_recording_clock(r, r->ext, r->next, err, errlen);

	if (e)
		return e;
	unplaced = place_by_pid(r, r->ext, r->next);
	if (unplaced)
		pr_warn("%zu of %zu spans of %s have no thread.id, and their process had no single thread with samples in their window; left out",
			unplaced, r->next, o->external);
	if (o->external && add_external(r, r->ext, r->next))
		goto oom;
	sort_rows(r->sp, r->nsp);
	if (join(r))
		goto oom;
	if (!o->external && report_filter_by_address(session__filter(r->sess)))
		r->sess->filtered_spans += keep_sampled(r);
	/* Spans the filters all left out are no error: none passes them. */
	if (!r->nsp && !o->external && !o->none_ok && !r->sess->filtered_spans)
		return set_errorf(err, errlen, -ENOENT,
				  "%s has no spans; record them with --span or --otel (see 'spanperf record --help')",
				  o->input);
	return 0;
oom:
	return set_errorf(err, errlen, -ENOMEM, "out of memory joining spans of %s", o->input);
}

/* s's frames appended to the view's, at *at; 0 or -ENOMEM. */
static int add_frames(struct view_store *vs, const struct span_wall_stack *s, size_t *at)
{
	if (s->nr && array_reserve((void **)&vs->frame, &vs->cap_frame, vs->nr_frame + s->nr - 1, sizeof(*vs->frame)))
		return -ENOMEM;
	*at = vs->nr_frame;
	if (s->nr) /* frame stays NULL while no stack has any */
		memcpy(vs->frame + vs->nr_frame, s->frame, s->nr * sizeof(*s->frame));
	vs->nr_frame += s->nr;
	return 0;
}

/* The stacks sp's thread blocked in inside it, heaviest first. */
static int add_off_top(struct span_report *r, struct view_store *vs, const struct span_row *sp, struct spans_row *row)
{
	struct span_wall_stack st[SPAN_WALL_TOP];
	int n = span_wall__off_top(r->wall, sp->tid, sp->start, sp->end, st);

	/* Heaviest first: --percent-limit's share of the span's time off CPU ends the list. */
	while (n && r->o.min_pct > 0 && st[n - 1].ns * 100.0 < r->o.min_pct * row->off_ns)
		n--;
	for (int k = 0; k < n; k++, row->nr_off_top++) {
		if (array_reserve((void **)&vs->stack, &vs->cap_stack, vs->nr_stack, sizeof(*vs->stack)) ||
		    array_reserve((void **)&vs->stack_at, &vs->cap_stack_at, vs->nr_stack, sizeof(*vs->stack_at)) ||
		    add_frames(vs, &st[k], &vs->stack_at[vs->nr_stack]))
			return -ENOMEM;
		vs->stack[vs->nr_stack++] = (struct spans_stack){ .nr = st[k].nr, .ns = st[k].ns };
	}
	return 0;
}

/* Who ended sp's blocks, and the span each was in then, by the ids its own row shows. */
static int add_wakers(struct span_report *r, struct view_store *vs, const struct span_row *sp, struct spans_row *row)
{
	struct span_wall_stack st[SPAN_WALL_TOP];
	int n = span_wall__woken_by(r->wall, sp->tid, sp->start, sp->end, st);

	while (n && r->o.min_pct > 0 && st[n - 1].ns * 100.0 < r->o.min_pct * row->off_ns)
		n--;
	for (int k = 0; k < n; k++, row->nr_woken_by++) {
		struct spans_waker *w;

		if (array_reserve((void **)&vs->waker, &vs->cap_waker, vs->nr_waker, sizeof(*vs->waker)) ||
		    array_reserve((void **)&vs->waker_at, &vs->cap_waker_at, vs->nr_waker, sizeof(*vs->waker_at)) ||
		    add_frames(vs, &st[k], &vs->waker_at[vs->nr_waker]))
			return -ENOMEM;
		w = &vs->waker[vs->nr_waker++];
		*w = (struct spans_waker){ .comm = st[k].comm, .tid = st[k].tid,
					   .stack = { .nr = st[k].nr, .ns = st[k].ns } };
		w->has_ids = st[k].task && ids_at(r, st[k].tid, st[k].wake_ns, w->trace_id, w->span_id);
	}
	return 0;
}

static int add_attr(void *ctx, const char *key, const char *value)
{
	struct view_store *vs = ctx;
	struct spans_attr *a;

	if (array_reserve((void **)&vs->attr, &vs->cap_attr, vs->nr_attr, sizeof(*vs->attr)))
		return -ENOMEM;
	a = &vs->attr[vs->nr_attr];
	a->key = strpool_intern(&vs->attr_str, key, NULL);
	a->value = strpool_intern(&vs->attr_str, value, NULL);
	if (!a->key || !a->value)
		return -ENOMEM;
	vs->nr_attr++;
	return 0;
}

/* Row j of the view: everything an output shows of span i, decided here. */
static int make_row(struct span_report *r, struct view_store *vs, size_t i, size_t j)
{
	const struct span_row *sp = &r->sp[i];
	const struct span_extra *x = extra_of(r, sp);
	struct spans_row *row = &vs->row[j];
	struct row_at *at = &vs->at[j];
	const struct otel_pctx *pc = session__otel_process(r->sess, sp->pid);
	const char *how;
	long ntop;

	*row = (struct spans_row){
		.name = r->names.str[sp->name], .source = span_source_name(sp->source), .kind = sp->name,
		.pid = sp->pid, .tid = sp->tid, .start = sp->start, .end = sp->end, .samples = sp->count,
		.bpf_samples = sp->bpf_samples, .external = sp->source == SP_SRC_EXTERNAL,
		.unfinished = sp->unfinished, .edges = sp->edges, .has_ctx = x->has_ctx,
		.service = pc ? pc->service_name : NULL,
	};
	/* External spans carry no counters: the recording measured none of them; nor of some OTel ones
	 * (SPAN_NO_COUNTERS: their publisher gave none the recorder could take). */
	row->has_counters = !row->external && sp->has_ctr;
	for (int k = 0; row->has_counters && k < r->nr_ctr; k++)
		row->counters[k] = counter(r, sp, k);
	ids_of(r, sp, i, row->trace_id, row->span_id);
	if (x->ext && x->ext->trace_id[0])
		row->ext_trace_id = x->ext->trace_id;
	if (x->ext && x->ext->span_id[0])
		row->ext_span_id = x->ext->span_id;
	if (x->ext && x->ext->parent_span_id[0])
		row->ext_parent_id = x->ext->parent_span_id;
	if (x->ext && x->ext->perf_attrs[0])
		row->ext_perf_attrs = x->ext->perf_attrs;
	row->has_split = split_of(r, sp, &row->split, &how);
	row->split_how = how;
	row->on_cpu_ns = row->has_split ? (__s64)row->split.on : on_cpu_ns(r, sp);
	if (span_wall__recorded(r->wall)) {
		row->off_ns = span_wall__off_ns(r->wall, sp->tid, sp->start, sp->end);
		row->blocked_in = span_wall__top_frame(r->wall, sp->tid, sp->start, sp->end);
	}
	at->top = vs->nr_func;
	ntop = top_of(r, vs, sp->first, sp->count);
	if (ntop < 0)
		return -ENOMEM;
	/* --percent-limit: the functions under that share of the span's samples (sorted: the tail) go. */
	while (ntop && r->o.min_pct > 0 && vs->func[at->top + ntop - 1].n * 100.0 < r->o.min_pct * sp->count)
		ntop--;
	vs->nr_func = at->top + ntop;
	row->nr_top = ntop;
	at->attr = vs->nr_attr;
	if (otel_attrs_split(x->attrs, add_attr, vs))
		return -ENOMEM;
	row->nr_attr = vs->nr_attr - at->attr;
	at->off_top = vs->nr_stack;
	at->woken_by = vs->nr_waker;
	return add_off_top(r, vs, sp, row) ?: add_wakers(r, vs, sp, row);
}

/* The rows' pointers into the arrays, now that these no longer move; the offsets go. */
static void point_rows(struct view_store *vs, size_t n)
{
	/* An array that stayed empty is NULL (and NULL + 0 undefined): so are the pointers into it. */
	for (size_t i = 0; i < vs->nr_stack; i++)
		vs->stack[i].frame = vs->frame ? vs->frame + vs->stack_at[i] : NULL;
	for (size_t i = 0; i < vs->nr_waker; i++)
		vs->waker[i].stack.frame = vs->frame ? vs->frame + vs->waker_at[i] : NULL;
	for (size_t i = 0; i < n; i++) {
		vs->row[i].top = vs->func ? vs->func + vs->at[i].top : NULL;
		vs->row[i].attr = vs->attr ? vs->attr + vs->at[i].attr : NULL;
		vs->row[i].off_top = vs->stack ? vs->stack + vs->at[i].off_top : NULL;
		vs->row[i].woken_by = vs->waker ? vs->waker + vs->at[i].woken_by : NULL;
	}
}

/* Rows [from, from + n) of the view in vs->row[0 .. n), with arrays of their own (those of rows before go). */
static int build_rows(struct span_report *r, struct view_store *vs, size_t from, size_t n)
{
	int e = 0;

	vs->nr_func = vs->nr_attr = vs->nr_stack = vs->nr_waker = vs->nr_frame = 0;
	for (size_t j = 0; j < n && !e; j++)
		e = make_row(r, vs, from + j, j);
	if (!e)
		point_rows(vs, n);
	return e;
}

static bool any_split(const struct span_report *r)
{
	for (size_t i = 0; i < r->nx; i++)
		if (r->x[i].sched.how == SP_SCHED_ACCOUNTS || r->x[i].sched.how == SP_SCHED_WAKE_STAMPS)
			return true;
	return span_wall__has_sched(r->wall);
}

/* Some span has counters of its own: else the table shows no counter columns (an OTel-only file). */
static bool any_counters(const struct span_report *r)
{
	for (size_t i = 0; i < r->nsp; i++)
		if (r->sp[i].has_ctr && r->sp[i].source != SP_SRC_EXTERNAL)
			return true;
	return false;
}

/* A clock event's nanoseconds per sample (to estimate CPU time from samples), 0 for others. */
static double clock_ns_per_sample(const struct session *s)
{
	const struct perf_event_attr *a;

	if (s->first_sampling < 0)
		return 0;
	a = &s->rd->attrs[s->first_sampling].attr;
	if (a->type != PERF_TYPE_SOFTWARE || a->config > PERF_COUNT_SW_TASK_CLOCK)
		return 0;
	return a->freq ? (a->sample_freq ? 1e9 / a->sample_freq : 0) : a->sample_period;
}

/* What the file says of every span alike. */
static void view_head(struct span_report *r, struct spans_view *v)
{
	const struct pd_meta *m = &r->sess->rd->meta;

	*v = (struct spans_view){
		.input = r->o.input, .nr_rows = r->nsp, .nr_samples = r->ns,
		.ctr_names = (const char *const *)r->ctr_names, .nr_ctr = r->nr_ctr,
		/* annotate's spans are all external: no counter columns for them */
		.table_ctr = r->o.external || !any_counters(r) ? 0 : r->nr_ctr,
		.bpf_samples = r->o.bpf_samples, .window_s = r->o.window_s,
		.offcpu = span_wall__recorded(r->wall), .wakers = span_wall__has_wakers(r->wall),
		.any_split = any_split(r), .unjoinable = span_wall__unjoinable(r->wall),
		.has_clock = m->clock_tod_ns != 0, .unix_off = (__s64)(m->clock_tod_ns - m->clock_ref_ns),
		.ns_per_sample = clock_ns_per_sample(r->sess),
	};
	for (int k = 0; k < r->nr_ctr && k < SP_MAX_COUNTERS; k++)
		v->ctr_clock[k] = ctr_is_clock(r->ctr_names[k]);
}

static int build_view(struct span_report *r)
{
	struct view_store *vs = &r->view;
	int e = 0;

	vs->row = calloc(r->nsp ? r->nsp : 1, sizeof(*vs->row));
	vs->at = calloc(r->nsp ? r->nsp : 1, sizeof(*vs->at));
	if (!vs->row || !vs->at)
		return -ENOMEM;
	e = build_rows(r, vs, 0, r->nsp);
	if (e)
		return e;
	/* The offsets served their turn. */
	free(vs->at);
	free(vs->stack_at);
	free(vs->waker_at);
	vs->at = NULL;
	vs->stack_at = vs->waker_at = NULL;
	vs->cap_stack_at = vs->cap_waker_at = 0;
	view_head(r, &vs->v);
	vs->v.row = vs->row;
	e = spans_table_build(&vs->table, vs->row, r->nsp, (const char *const *)r->names.str, r->names.n,
			      r->o.window_s);
	vs->v.table = &vs->table;
	return e;
}

static void view_free(struct view_store *vs)
{
	free(vs->row);
	free(vs->at);
	free(vs->func);
	free(vs->attr);
	strpool_free(&vs->attr_str);
	free(vs->stack);
	free(vs->stack_at);
	free(vs->waker);
	free(vs->waker_at);
	free(vs->frame);
	spans_table_free(&vs->table);
	memset(vs, 0, sizeof(*vs));
}

int span_report__view(struct span_report *r, const struct spans_view **out)
{
	int e = 0;

	if (!r->view.built) {
		e = build_view(r);
		if (e)
			view_free(&r->view); /* a later call starts again */
		r->view.built = !e;
	}
	*out = e ? NULL : &r->view.v;
	return e;
}

void span_report__free(struct span_report *r)
{
	if (!r)
		return;
	strpool_free(&r->names);
	strpool_free(&r->attrs);
	free(r->s);
	for (size_t i = 0; i < r->nx; i++)
		free(r->x[i].raw_attrs);
	free(r->x);
	free(r->ctr);
	free(r->sp);
	free(r->sorted);
	free(r->leaf);
	view_free(&r->view);
	span_wall__free(r->wall);
	ext_spans_free(r->ext, r->next);
	free(r);
}

/*
 * JSON lines, a window of rows at a time: a line is its row's alone, so the
 * view of each window in turn prints the lines the whole view would, and
 * holds a window's rows, not all (a million rows of the whole view are
 * 370 MB).  The view printed from holds what spans_print_json reads: the
 * head and the rows, no table.  4096 rows of 376 bytes stay in the cache
 * while they are made and printed (65536, 24 MB, went to memory and back:
 * its zeroing alone was a tenth of build_rows).
 */
#define JSON_WINDOW 4096

static int print_json_windows(struct span_report *r, FILE *out)
{
	struct view_store *vs = &r->view;
	size_t w = SP_MIN(r->nsp, (size_t)JSON_WINDOW);
	int e = 0;

	vs->row = calloc(w ? w : 1, sizeof(*vs->row));
	vs->at = calloc(w ? w : 1, sizeof(*vs->at));
	if (!vs->row || !vs->at)
		e = -ENOMEM;
	if (!e)
		view_head(r, &vs->v);
	for (size_t from = 0; !e && from < r->nsp; from += w) {
		size_t n = SP_MIN(w, r->nsp - from);

		e = build_rows(r, vs, from, n);
		vs->v.row = vs->row;
		vs->v.nr_rows = n;
		if (!e)
			e = spans_print_json(&vs->v, out);
	}
	view_free(vs);
	return e;
}

int span_report__print(struct span_report *r, FILE *out, char *err, size_t errlen)
{
	const struct spans_report_opts *o = &r->o;
	const struct spans_view *v = NULL;
	bool windows = o->format == SPANS_JSON && !r->view.built;
	int e = windows ? print_json_windows(r, out) : span_report__view(r, &v);
	char why[PATH_MAX + 64];

	if (!e && !windows)
		e = o->format == SPANS_OTLP ? spans_print_otlp(v, out, err, errlen)
		    : o->format == SPANS_JSON ? spans_print_json(v, out)
					      : spans_print_table(v, out);
	/* Said here, not at exit: a full disk under stdout is an error, with its file system named. */
	if (!e && fflush(out))
		e = stdio_error();
	if (e == -ENOMEM)
		snprintf(err, errlen, "out of memory joining spans of %s", o->input);
	else if (e && e != -EINVAL)
		snprintf(err, errlen, "cannot write the spans of %s: %s", o->input,
			 write_strerror_fd(e, fileno(out), why, sizeof(why)));
	return e;
}

int spans_report(const struct spans_report_opts *o, char *err, size_t errlen)
{
	struct session *sess = NULL;
	struct span_report *r = NULL;
	int e = session__open(&sess, o->input, &(struct session_opts){ .any_owner = o->any_owner, .filter = o->filter },
			      err, errlen);

	if (!e)
		e = span_report__new(&r, sess, o, err, errlen);
	if (!e)
		e = session__run(sess, err, errlen);
	if (!e)
		e = span_report__finish(r, err, errlen);
	if (!e)
		e = span_report__print(r, o->out ? o->out : stdout, err, errlen);
	span_report__free(r);
	session__free(sess);
	return e;
}

/* A name as one folded frame: ';' would split it, a line break end the line. */
static void frame_safe(char *s)
{
	for (; *s; s++)
		if (*s == ';')
			*s = ':';
		else if ((unsigned char)*s < ' ')
			*s = ' ';
}

int span_report__labels(struct span_report *r, struct strpool *pool, struct span_label **out, size_t *n)
{
	struct span_label *l = calloc(r->nsp ? r->nsp : 1, sizeof(*l));
	struct sbuf b = {};
	int e = -ENOMEM;

	*out = NULL;
	*n = 0;
	if (!l)
		return -ENOMEM;
	for (size_t i = 0; i < r->nsp; i++) {
		const struct span_row *sp = &r->sp[i];
		char trace[33], span[17];

		ids_of(r, sp, i, trace, span);
		b.len = 0;
		sbuf_printf(&b, "span:%s:%s", r->names.str[sp->name], span);
		sbuf_zero(&b, 1);
		if (b.err)
			goto cleanup;
		frame_safe(b.p);
		l[i] = (struct span_label){ .tid = sp->tid, .start = sp->start, .end = sp->end,
					    .label = strpool_intern(pool, b.p, NULL) };
		if (!l[i].label)
			goto cleanup;
	}
	*out = l;
	*n = r->nsp;
	l = NULL;
	e = 0;
cleanup:
	sbuf_free(&b);
	free(l);
	return e;
}
