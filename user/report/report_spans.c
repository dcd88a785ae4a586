// SPDX-License-Identifier: GPL-2.0
/*
 * report --spans and annotate: spans joined with the samples of their
 * thread inside [start, end], with the top functions inside and the
 * counters the span programs measured.  Spans come from the perf.data
 * (records of attrs named spanperf:NAME) or, for annotate, from a JSONL
 * file written anywhere else.  The join is here; its three outputs are
 * spans_text.c, spans_json.c and spans_otlp.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "correlate.h"
#include "fileio.h"
#include "hash.h"
#include "log.h"
#include "names.h"
#include "otel_join.h"
#include "otlp_json.h"
#include "report_spans.h"
#include "sbuf.h"
#include "session.h"
#include "spans_join.h"
#include "util.h"

static int name_index(struct span_report *r, const char *name)
{
	size_t id;

	return strpool_intern(&r->names, name, &id) ? (int)id : -ENOMEM;
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
	};

	if (r->o.external)
		return 0;
	/* With attributes, the name waits for them (on_finish): span.name may give it. */
	if ((sp->flags & SPAN_HAS_CONTEXT) && sp->attrs_size) {
		row.kind = ss->name;
	} else {
		row.name = name_index(r, ss->name);
		if (row.name < 0)
			return -ENOMEM;
	}
	memcpy(row.counters, sp->counters, sizeof(row.counters));
	row.sched = sp->sched;
	row.edges = sp->flags & (SPAN_EDGES_SAMPLED | SPAN_END_AT_SWITCH);
	if (sp->flags & SPAN_HAS_CONTEXT) {
		row.has_ctx = true;
		memcpy(row.trace_id, sp->trace_id, 16);
		memcpy(row.span_id, sp->span_id, 8);
		if (sp->attrs_size) {
			row.raw_attrs = malloc(sp->attrs_size);
			if (!row.raw_attrs)
				return -ENOMEM;
			memcpy(row.raw_attrs, sp->attrs, sp->attrs_size);
			row.raw_size = sp->attrs_size;
		}
	}
	if (array_reserve((void **)&r->sp, &r->cap_sp, r->nsp, sizeof(*r->sp))) {
		free(row.raw_attrs);
		return -ENOMEM;
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

		if (!row->raw_attrs)
			continue;
		if (otel_attrs_intern(&r->attrs, session__otel_process(r->sess, row->pid), row->raw_attrs,
				      row->raw_size, &row->attrs))
			return -ENOMEM;
		free(row->raw_attrs);
		row->raw_attrs = NULL;
		row->name = name_index(r, row->attrs && otel_attrs_get(row->attrs, OTEL_SPAN_NAME_KEY, sname,
									  sizeof(sname)) && sname[0] ? sname : row->kind);
		if (row->name < 0)
			return -ENOMEM;
	}
	return span_wall__finish(r->wall);
}

static int add_external(struct span_report *r, const struct ext_span *ext, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (ext[i].no_tid)
			continue; /* not placed on a thread */
		struct span_row row = { .tid = ext[i].tid, .pid = ext[i].pid, .start = ext[i].start,
					.end = ext[i].end, .source = SP_SRC_EXTERNAL, .ext = &ext[i] };
		__s64 pid = session__pid_of(r->sess, ext[i].tid);

		if (!ext[i].has_pid)
			row.pid = pid >= 0 ? pid : ext[i].tid;
		row.name = name_index(r, ext[i].name);
		if (row.name < 0 || array_reserve((void **)&r->sp, &r->cap_sp, r->nsp, sizeof(*r->sp)))
			return -ENOMEM;
		r->sp[r->nsp++] = row;
	}
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
	return 0;
}

static const char *leaf(struct span_report *r, size_t sorted_idx)
{
	struct sinfo *s = &r->s[r->sorted[sorted_idx].idx];

	if (!s->leaf) {
		struct sym sym;

		symbolizer__resolve(r->sess->sym, s->pid, s->ip, s->time, s->kernel, &sym);
		s->leaf = sym.name;
	}
	return s->leaf;
}

int spans_cmp_top(const void *a, const void *b)
{
	const struct topc *x = a, *y = b;

	if (x->n != y->n)
		return x->n < y->n ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* The most frequent leaf functions of samples [first, first+count); returns how many. */
int spans_top_of(struct span_report *r, size_t first, size_t count, struct topc **out, size_t *cap)
{
	size_t n = 0;

	for (size_t i = first; i < first + count; i++) {
		const char *name = leaf(r, i);
		size_t k;

		/* Names are owned by the symbolizer: one pointer per distinct symbol. */
		for (k = 0; k < n && (*out)[k].name != name; k++)
			;
		if (k == n) {
			if (array_reserve((void **)out, cap, n, sizeof(**out)))
				return -ENOMEM;
			(*out)[n++] = (struct topc){ name, 0 };
		}
		(*out)[k].n++;
	}
	sort_n(*out, n, sizeof(**out), spans_cmp_top);
	return n;
}

bool spans_ctr_is_clock(const char *name)
{
	return !strcmp(name, "task-clock") || !strcmp(name, "cpu-clock");
}

/* The span's time on CPU from its task-clock counter, -1 where it has none. */
__s64 spans_on_cpu_ns(const struct span_report *r, const struct span_row *sp)
{
	if (sp->source == SP_SRC_EXTERNAL)
		return -1;
	/* From stamps (no sched_info, or forced) BPF's on_ns is the switch stamps' own figure. */
	if (sp->sched.how == SP_SCHED_STAMPS || sp->sched.how == SP_SCHED_WAKE_STAMPS)
		return sp->sched.on_ns;
	for (int k = 0; k < r->nr_ctr; k++)
		if (!strcmp(r->ctr_names[k], "task-clock"))
			return sp->counters[k];
	return -1;
}

/*
 * A span's ids as the rows show them: an OTel context's, an external span's
 * own where both are OTLP-shaped, or those made up for spanperf's own spans
 * (spans_ids, as the JSON rows and the OTLP output give them).  External
 * spans without such ids have none to give.
 */
static bool has_ids(const struct span_row *sp)
{
	const struct ext_span *x = sp->ext;

	if (sp->has_ctx || sp->source != SP_SRC_EXTERNAL)
		return true;
	return x && strlen(x->trace_id) == 34 && x->trace_id[0] == '"' && strlen(x->span_id) == 18 &&
	       x->span_id[0] == '"';
}

/* The innermost span with ids that thread tid was in at time: a waker's, for woken_by. */
static bool ids_at(void *ctx, __u32 tid, __u64 time, char trace[33], char span[17])
{
	const struct span_row *best = NULL;
	const struct span_report *r = ctx;

	for (size_t i = 0; i < r->nsp && r->sp[i].start <= time; i++) {
		const struct span_row *sp = &r->sp[i];

		if (sp->tid == tid && time <= sp->end && has_ids(sp) && (!best || sp->start >= best->start))
			best = sp;
	}
	if (!best)
		return false;
	spans_ids(best, best - r->sp, trace, span);
	return true;
}

bool spans_split(struct span_report *r, const struct span_row *sp, struct span_split *x, const char **how)
{
	*how = spans_split_name(sp->sched.how);
	if (span_split_of(&sp->sched, sp->end - sp->start, x))
		return true;
	/* Spans that carry no split of their own (external, OTel): from the recording's switch-outs. */
	if (span_wall__sched_split(r->wall, sp->tid, sp->start, sp->end, x)) {
		*how = "sched-records";
		return true;
	}
	return false;
}

const char *spans_split_name(__u32 how)
{
	switch (how) {
	case SP_SCHED_ACCOUNTS: return "sched_info";
	case SP_SCHED_STAMPS: return "switch-stamps";
	case SP_SCHED_WAKE_STAMPS: return "stamps";
	default: return NULL;
	}
}

static int cmp_row_start(const void *a, const void *b)
{
	const struct span_row *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
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
		size_t lo = 0, hi = np;
		__u32 tid = 0;
		bool many = false;

		if (!ext[i].no_tid)
			continue;
		if (!ps || !ext[i].has_pid) {
			unplaced++;
			continue;
		}
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (ps[mid].pid < ext[i].pid || (ps[mid].pid == ext[i].pid && ps[mid].time < ext[i].start))
				lo = mid + 1;
			else
				hi = mid;
		}
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

/* The id as hex: the recording's (otel), the external span's if it is OTLP-shaped, else made up. */
void spans_ids(const struct span_row *sp, size_t i, char trace[33], char span[17])
{
	const char *t = sp->ext ? sp->ext->trace_id : "", *s = sp->ext ? sp->ext->span_id : "";

	if (sp->has_ctx) {
		otel_hex(trace, sp->trace_id, 16);
		otel_hex(span, sp->span_id, 8);
		return;
	}
	if (strlen(t) == 34 && t[0] == '"')
		snprintf(trace, 33, "%.32s", t + 1);
	else
		snprintf(trace, 33, "%016llx%016llx", (unsigned long long)hash_mix(sp->pid, sp->tid) | 1,
			 (unsigned long long)hash_mix(sp->start, sp->end));
	if (strlen(s) == 18 && s[0] == '"')
		snprintf(span, 17, "%.16s", s + 1);
	else
		snprintf(span, 17, "%016llx", (unsigned long long)hash_mix(sp->start, i) | 1);
}

/* annotate's spans, read before the pass. */
static int read_external(struct span_report *r, char *err, size_t errlen)
{
	const char *path = r->o.external;
	struct otlp_stats ost = {};
	size_t len;
	int e = read_file_all(path, &r->text, &len);

	if (e)
		return set_errorf(err, errlen, e, "cannot read --spans '%s': %s", path, strerror(-e));
	if (otlp_json_detect(r->text, len)) {
		e = otlp_json_parse(r->text, len, path, &r->ext, &r->next, &ost, err, errlen);
		if (!e && ost.skipped)
			pr_warn("%zu spans of %s had no start or end time, or ended before they started; left out",
				ost.skipped, path);
		return e;
	}
	return ext_spans_parse(r->text, len, path, &r->ext, &r->next, err, errlen);
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
	e = o->external ? read_external(r, err, errlen) : 0;
	if (!e && !span_wall__new(&r->wall, sess))
		span_wall__set_ids(r->wall, ids_at, r);
	if (!e && (!r->wall || session__add_consumer(sess, &ops, r)))
		e = set_errorf(err, errlen, -ENOMEM, "out of memory joining spans of %s", o->input);
	if (e) {
		span_report__free(r);
		return e;
	}
	*out = r;
	return 0;
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
	sort_n(r->sp, r->nsp, sizeof(*r->sp), cmp_row_start);
	if (join(r))
		goto oom;
	if (!r->nsp && !o->external && !o->none_ok)
		return set_errorf(err, errlen, -ENOENT,
				  "%s has no spans; record them with --span or --otel (see 'spanperf record --help')",
				  o->input);
	return 0;
oom:
	return set_errorf(err, errlen, -ENOMEM, "out of memory joining spans of %s", o->input);
}

void span_report__free(struct span_report *r)
{
	if (!r)
		return;
	strpool_free(&r->names);
	strpool_free(&r->attrs);
	free(r->s);
	for (size_t i = 0; i < r->nsp; i++)
		free(r->sp[i].raw_attrs);
	free(r->sp);
	free(r->sorted);
	span_wall__free(r->wall);
	free(r->ext);
	free(r->text);
	free(r);
}

int span_report__print(struct span_report *r, FILE *out, char *err, size_t errlen)
{
	const struct spans_report_opts *o = &r->o;
	int e = o->otlp ? spans_print_otlp(r, out, err, errlen) : o->json ? spans_print_json(r, out) : spans_print_table(r, out);

	if (e == -ENOMEM)
		snprintf(err, errlen, "out of memory joining spans of %s", o->input);
	else if (e && e != -EINVAL)
		snprintf(err, errlen, "cannot write the spans of %s: %s", o->input, strerror(-e));
	return e;
}

int spans_report(const struct spans_report_opts *o, char *err, size_t errlen)
{
	struct session *sess = NULL;
	struct span_report *r = NULL;
	int e = session__open(&sess, o->input, &(struct session_opts){ .any_owner = o->any_owner }, err, errlen);

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

		spans_ids(sp, i, trace, span);
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
