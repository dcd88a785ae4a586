// SPDX-License-Identifier: GPL-2.0
/*
 * report --spans and annotate: spans joined with the samples of their
 * thread inside [start, end], with the top functions inside and the
 * counters the span programs measured.  Spans come from the perf.data
 * (records of attrs named spanperf:NAME) or, for annotate, from a JSONL
 * file written anywhere else.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "correlate.h"
#include "fileio.h"
#include "hash.h"
#include "log.h"
#include "otel_join.h"
#include "otlp_json.h"
#include "report_spans.h"
#include "sbuf.h"
#include "session.h"
#include "span_wall.h"
#include "spans_jsonl.h"
#include "util.h"

#define TOP_N 5

/* A sample, as the join needs it. */
struct sinfo {
	__s32 pid;
	__u32 tid;
	bool kernel;
	__u64 ip, time;
	const char *leaf; /* resolved lazily, only for samples inside spans */
};

struct span_row {
	__u32 tid, pid;
	__u64 start, end;
	int name;	/* index into names */
	int source;
	bool unfinished;
	__u64 bpf_samples;
	__u64 counters[SP_MAX_COUNTERS];
	const struct ext_span *ext;
	bool has_ctx; /* trace_id and span_id from the recording (otel) */
	__u8 trace_id[16], span_id[8];
	const char *attrs; /* its OTEP 4947 attributes, pooled (otel_attrs_split); NULL: none */
	__u8 *raw_attrs;   /* until the pass ends: the process contexts come last */
	__u16 raw_size;
	size_t first, count; /* the join's result */
};

struct span_report {
	struct spans_report_opts o;
	struct ext_span *ext; /* annotate's spans, and the text they point into */
	size_t next;
	char *text;
	struct session *sess;
	struct strpool names; /* span names; a row's name is its id here */
	struct strpool attrs; /* otel spans' attributes */
	char **ctr_names;     /* the session's: what counters[k] is */
	int nr_ctr;
	struct sinfo *s;
	size_t ns, cap_s;
	struct span_row *sp;
	size_t nsp, cap_sp;
	struct corr_sample *sorted; /* the join's sample order */
	struct span_wall *wall;	    /* off-CPU time per span */
};

static int name_index(struct span_report *r, const char *name)
{
	size_t id;

	return strpool_intern(&r->names, name, &id) ? (int)id : -ENOMEM;
}

static int on_sample(void *ctx, const struct sess_sample *ss)
{
	struct span_report *r = ctx;
	const struct pd_sample *s = &ss->ev->sample;

	if (ss->kind == SESS_OFFCPU)
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
	row.name = name_index(r, ss->name);
	if (row.name < 0)
		return -ENOMEM;
	memcpy(row.counters, sp->counters, sizeof(row.counters));
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

/* The otel spans' attributes, named through their process's context, read by now. */
static int on_finish(void *ctx)
{
	struct span_report *r = ctx;

	for (size_t i = 0; i < r->nsp; i++) {
		struct span_row *row = &r->sp[i];

		if (!row->raw_attrs)
			continue;
		if (otel_attrs_intern(&r->attrs, session__otel_process(r->sess, row->pid), row->raw_attrs,
				      row->raw_size, &row->attrs))
			return -ENOMEM;
		free(row->raw_attrs);
		row->raw_attrs = NULL;
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

struct topc {
	const char *name;
	__u64 n;
};

static int cmp_top(const void *a, const void *b)
{
	const struct topc *x = a, *y = b;

	if (x->n != y->n)
		return x->n < y->n ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* The most frequent leaf functions of samples [first, first+count); returns how many. */
static int top_of(struct span_report *r, size_t first, size_t count, struct topc **out, size_t *cap)
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
	sort_n(*out, n, sizeof(**out), cmp_top);
	return n;
}

static bool ctr_is_clock(const char *name)
{
	return !strcmp(name, "task-clock") || !strcmp(name, "cpu-clock");
}

/* The span's time on CPU from its task-clock counter, -1 where it has none. */
static __s64 on_cpu_ns(const struct span_report *r, const struct span_row *sp)
{
	if (sp->source == SP_SRC_EXTERNAL)
		return -1;
	for (int k = 0; k < r->nr_ctr; k++)
		if (!strcmp(r->ctr_names[k], "task-clock"))
			return sp->counters[k];
	return -1;
}

static int json_attr(void *ctx, const char *key, const char *value)
{
	struct sbuf *b = ctx;

	if (b->len && b->p[b->len - 1] != '{')
		sbuf_add(b, ",", 1);
	sbuf_json_str(b, key);
	sbuf_add(b, ":", 1);
	return sbuf_json_str(b, value);
}

static void json_span(struct span_report *r, const struct span_row *sp, struct topc *top, int ntop, struct sbuf *b)
{
	sbuf_printf(b, "{\"name\":");
	sbuf_json_str(b, r->names.str[sp->name]);
	sbuf_printf(b, ",\"source\":\"%s\",\"pid\":%u,\"tid\":%u,\"start_ns\":%llu,\"end_ns\":%llu,"
		       "\"duration_ns\":%llu,\"samples\":%zu,\"counters\":{",
		    span_source_name(sp->source), sp->pid, sp->tid, (unsigned long long)sp->start,
		    (unsigned long long)sp->end, (unsigned long long)(sp->end - sp->start), sp->count);
	if (sp->source != SP_SRC_EXTERNAL)
		for (int k = 0; k < r->nr_ctr; k++) {
			sbuf_printf(b, "%s", k ? "," : "");
			sbuf_json_str(b, r->ctr_names[k]);
			if (ctr_is_clock(r->ctr_names[k]))
				sbuf_printf(b, ":%.6f", sp->counters[k] / 1e6);
			else
				sbuf_printf(b, ":%llu", (unsigned long long)sp->counters[k]);
		}
	sbuf_printf(b, "},\"top\":[");
	for (int k = 0; k < ntop && k < TOP_N; k++) {
		sbuf_printf(b, "%s{\"sym\":", k ? "," : "");
		sbuf_json_str(b, top[k].name);
		sbuf_printf(b, ",\"samples\":%llu}", (unsigned long long)top[k].n);
	}
	sbuf_printf(b, "]");
	if (sp->has_ctx) {
		sbuf_printf(b, ",\"trace_id\":\"");
		for (int k = 0; k < 16; k++)
			sbuf_printf(b, "%02x", sp->trace_id[k]);
		sbuf_printf(b, "\",\"span_id\":\"");
		for (int k = 0; k < 8; k++)
			sbuf_printf(b, "%02x", sp->span_id[k]);
		sbuf_printf(b, "\"");
		sbuf_printf(b, ",\"attributes\":{");
		otel_attrs_split(sp->attrs, json_attr, b);
		sbuf_printf(b, "}");
	}
	span_wall__json(r->wall, sp->tid, sp->start, sp->end, on_cpu_ns(r, sp), b);
	if (sp->ext && sp->ext->trace_id[0])
		sbuf_printf(b, ",\"trace_id\":%s", sp->ext->trace_id);
	if (sp->ext && sp->ext->span_id[0])
		sbuf_printf(b, ",\"span_id\":%s", sp->ext->span_id);
	if (sp->unfinished)
		sbuf_printf(b, ",\"unfinished\":true");
	if (r->o.bpf_samples && sp->source != SP_SRC_EXTERNAL)
		sbuf_printf(b, ",\"bpf_samples\":%llu", (unsigned long long)sp->bpf_samples);
	sbuf_printf(b, "}\n");
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

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return (x > y) - (x < y);
}

static __u64 pct(const __u64 *sorted, size_t n, double p)
{
	size_t i = (size_t)(p * (n - 1) + 0.5);

	return n ? sorted[i < n ? i : n - 1] : 0;
}

/* One attribute value of otel spans, for the table: the spans' durations and samples. */
struct attr_group {
	const char *pair; /* "key\x1fvalue", pooled */
	__u64 *dur;
	size_t n, cap, samples;
};

struct attr_walk {
	struct strpool pool;
	struct attr_group *g;
	size_t ng, cap;
	const struct span_row *sp;
	int err;
};

static int attr_add(void *ctx, const char *key, const char *value)
{
	struct attr_walk *w = ctx;
	struct sbuf b = {};
	struct attr_group *g;
	size_t id;

	sbuf_printf(&b, "%s\x1f%s", key, value);
	if (b.err || !strpool_intern(&w->pool, b.p, &id)) {
		sbuf_free(&b);
		return w->err = -ENOMEM;
	}
	sbuf_free(&b);
	if (id == w->ng) {
		if (array_reserve((void **)&w->g, &w->cap, w->ng, sizeof(*w->g)))
			return w->err = -ENOMEM;
		w->g[w->ng++] = (struct attr_group){ .pair = w->pool.str[id] };
	}
	g = &w->g[id];
	if (array_reserve((void **)&g->dur, &g->cap, g->n, sizeof(*g->dur)))
		return w->err = -ENOMEM;
	g->dur[g->n++] = w->sp->end - w->sp->start;
	g->samples += w->sp->count;
	return 0;
}

/* Keys in order, then the busiest values first. */
static int cmp_group(const void *a, const void *b)
{
	const struct attr_group *x = a, *y = b;
	size_t kx = strcspn(x->pair, "\x1f"), ky = strcspn(y->pair, "\x1f");
	int c = strncmp(x->pair, y->pair, kx < ky ? kx : ky);

	if (c || kx != ky)
		return c ? c : kx < ky ? -1 : 1;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return strcmp(x->pair, y->pair);
}

#define ATTR_VALUES_SHOWN 10

/*
 * otel spans by the value of each of their attributes (http.route, say):
 * which values are slow, which hold the samples.  A key with many values
 * (user.id) shows its busiest ones.
 */
static int print_attrs(struct span_report *r, FILE *out)
{
	struct attr_walk w = {};
	size_t shown = 0;

	for (size_t i = 0; i < r->nsp && !w.err; i++) {
		w.sp = &r->sp[i];
		otel_attrs_split(r->sp[i].attrs, attr_add, &w);
	}
	if (!w.err && w.ng) {
		sort_n(w.g, w.ng, sizeof(*w.g), cmp_group);
		fprintf(out, "#\n# otel spans by attribute\n# %-24s %-24s %8s %10s %10s %8s\n", "attribute", "value",
			"count", "p50 ms", "p99 ms", "samples");
		for (size_t i = 0; i < w.ng; i++) {
			struct attr_group *g = &w.g[i];
			int kl = (int)strcspn(g->pair, "\x1f");

			shown = i && strncmp(g->pair, w.g[i - 1].pair, kl + 1) ? 0 : shown;
			if (shown++ == ATTR_VALUES_SHOWN) {
				size_t more = 0;

				while (i + more < w.ng && !strncmp(w.g[i + more].pair, g->pair, kl + 1))
					more++;
				fprintf(out, "  %-24.*s (%zu more values)\n", kl, g->pair, more);
				i += more - 1;
				continue;
			}
			sort_n(g->dur, g->n, sizeof(*g->dur), cmp_u64);
			fprintf(out, "  %-24.*s %-24s %8zu %10.3f %10.3f %8zu\n", kl, g->pair, g->pair + kl + 1, g->n,
				pct(g->dur, g->n, 0.5) / 1e6, pct(g->dur, g->n, 0.99) / 1e6, g->samples);
		}
	}
	for (size_t i = 0; i < w.ng; i++)
		free(w.g[i].dur);
	free(w.g);
	strpool_free(&w.pool);
	return w.err;
}

/* Text: one row per span name, with percentiles, samples, counters per span and top functions. */
static int print_table(struct span_report *r, FILE *out)
{
	struct topc *top = NULL;
	size_t tcap = 0;
	__u64 *dur = malloc((r->nsp ? r->nsp : 1) * sizeof(*dur));

	if (!dur)
		return -ENOMEM;
	/* External spans carry no counters: no columns for them. */
	if (r->o.external)
		r->nr_ctr = 0;
	fprintf(out, "# %zu spans of %zu kinds, %zu samples\n#\n", r->nsp, r->names.n, r->ns);
	fprintf(out, "# %-20s %-10s %8s %10s %10s %10s %8s", "name", "source", "count", "p50 ms", "p99 ms",
		"max ms", "samples");
	for (int k = 0; k < r->nr_ctr; k++)
		fprintf(out, " %14s", r->ctr_names[k]);
	if (span_wall__recorded(r->wall))
		fprintf(out, " %12s  %-24s", "off-CPU ms", "blocked in");
	fprintf(out, "  top functions inside\n");
	for (size_t n = 0; n < r->names.n; n++) {
		size_t cnt = 0, samples = 0, first = 0;
		__u64 ctr[SP_MAX_COUNTERS] = {}, off = 0;
		const char *blocked = NULL;
		int src = 0, ntop;
		/* All samples of all spans of this name, pooled for the top list. */
		struct topc *pool = NULL;
		size_t npool = 0, pcap = 0;

		for (size_t i = 0; i < r->nsp; i++) {
			const struct span_row *sp = &r->sp[i];

			if (sp->name != (int)n)
				continue;
			dur[cnt++] = sp->end - sp->start;
			samples += sp->count;
			if (span_wall__recorded(r->wall)) {
				off += span_wall__off_ns(r->wall, sp->tid, sp->start, sp->end);
				if (!blocked)
					blocked = span_wall__top_frame(r->wall, sp->tid, sp->start, sp->end);
			}
			src = sp->source;
			for (int k = 0; k < r->nr_ctr; k++)
				ctr[k] += sp->counters[k];
			ntop = top_of(r, sp->first, sp->count, &top, &tcap);
			for (int t = 0; t < ntop; t++) {
				size_t k;

				for (k = 0; k < npool && pool[k].name != top[t].name; k++)
					;
				if (k == npool) {
					if (array_reserve((void **)&pool, &pcap, npool, sizeof(*pool)))
						break;
					pool[npool++] = (struct topc){ top[t].name, 0 };
				}
				pool[k].n += top[t].n;
			}
			(void)first;
		}
		sort_n(dur, cnt, sizeof(*dur), cmp_u64);
		sort_n(pool, npool, sizeof(*pool), cmp_top);
		fprintf(out, "  %-20s %-10s %8zu %10.3f %10.3f %10.3f %8zu", r->names.str[n], span_source_name(src), cnt,
			pct(dur, cnt, 0.5) / 1e6, pct(dur, cnt, 0.99) / 1e6, cnt ? dur[cnt - 1] / 1e6 : 0, samples);
		for (int k = 0; k < r->nr_ctr; k++) {
			/* per span: what one of them typically costs */
			double v = cnt ? (double)ctr[k] / cnt : 0;

			if (ctr_is_clock(r->ctr_names[k]))
				fprintf(out, " %11.3f ms", v / 1e6);
			else
				fprintf(out, " %14.1f", v);
		}
		if (span_wall__recorded(r->wall))
			fprintf(out, " %9.3f ms  %-24.24s", cnt ? off / 1e6 / cnt : 0, blocked ? blocked : "-");
		fprintf(out, " ");
		for (size_t t = 0; t < npool && t < 3; t++)
			fprintf(out, " %s %.0f%%", pool[t].name, samples ? 100.0 * pool[t].n / samples : 0);
		fprintf(out, "\n");
		free(pool);
	}
	if (r->nr_ctr)
		fprintf(out, "#\n# counters are means per span; samples are those of the span's thread inside it\n");
	if (span_wall__recorded(r->wall))
		fprintf(out, "# off-CPU ms: mean time blocked per span; blocked in: the first span's heaviest blocking stack%s\n",
			span_wall__unjoinable(r->wall) ? " (sums of short blocks are left out: record with --off-cpu-thresh 0)" : "");
	free(top);
	free(dur);
	return print_attrs(r, out);
}

static int ctr_index(const struct span_report *r, const char *name)
{
	for (int k = 0; k < r->nr_ctr; k++)
		if (!strcmp(r->ctr_names[k], name))
			return k;
	return -1;
}

/* The id as hex: the recording's (otel), the external span's if it is OTLP-shaped, else made up. */
static void span_ids(const struct span_row *sp, size_t i, char trace[33], char span[17])
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

static int cmp_row_pid(const void *a, const void *b)
{
	const struct span_row *x = *(const struct span_row *const *)a, *y = *(const struct span_row *const *)b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->start > y->start) - (x->start < y->start);
}

struct otlp_ctx {
	struct sbuf *b;
	bool *first;
};

static int otlp_attr(void *ctx, const char *key, const char *value)
{
	struct otlp_ctx *c = ctx;

	otlp_attr_str(c->b, c->first, key, value);
	return 0;
}

/*
 * OTLP JSON, one ExportTraceServiceRequest: a resourceSpans per process,
 * each span with what the recording saw inside it as perf.* attributes.
 * Times go back to unix nanoseconds; ids are hex and int64 values strings,
 * as the OTLP JSON mapping wants.
 */
static int print_otlp(struct span_report *r, FILE *out, char *err, size_t errlen)
{
	const struct pd_meta *m = &r->sess->rd->meta;
	__s64 off = (__s64)(m->clock_tod_ns - m->clock_ref_ns);
	const struct span_row **rows = malloc((r->nsp ? r->nsp : 1) * sizeof(*rows));
	int k_clock = ctr_index(r, "task-clock"), k_cs = ctr_index(r, "context-switches");
	double ns_per_sample = 0;
	struct topc *top = NULL;
	size_t tcap = 0;
	struct sbuf b = {};
	int e = 0;

	if (!rows)
		return -ENOMEM;
	if (!m->clock_tod_ns) {
		free(rows);
		return set_errorf(err, errlen, -EINVAL,
				  "%s has no CLOCK_DATA, so its spans cannot be given unix times for OTLP",
				  r->o.input);
	}
	if (span_wall__unjoinable(r->wall))
		pr_warn("%s holds sums of short off-CPU blocks that no span can be given, so perf.off_cpu_ms leaves them out; record with --off-cpu-thresh 0",
			r->o.input);
	if (r->sess->first_sampling >= 0) {
		const struct perf_event_attr *a = &r->sess->rd->attrs[r->sess->first_sampling].attr;

		if (a->type == PERF_TYPE_SOFTWARE && a->config <= PERF_COUNT_SW_TASK_CLOCK)
			ns_per_sample = a->freq ? (a->sample_freq ? 1e9 / a->sample_freq : 0) : a->sample_period;
	}
	for (size_t i = 0; i < r->nsp; i++)
		rows[i] = &r->sp[i];
	sort_n(rows, r->nsp, sizeof(*rows), cmp_row_pid);
	sbuf_printf(&b, "{\"resourceSpans\":[");
	for (size_t i = 0; i < r->nsp && !e; i++) {
		const struct span_row *sp = rows[i];
		const struct otel_pctx *pc;
		char trace[33], span[17];
		bool first = true;
		int ntop;

		if (!i || rows[i - 1]->pid != sp->pid) {
			if (i)
				sbuf_printf(&b, "]}]},");
			sbuf_printf(&b, "{\"resource\":{\"attributes\":[");
			otlp_attr_int(&b, &first, "process.pid", sp->pid);
			pc = session__otel_process(r->sess, sp->pid);
			if (pc && pc->service_name)
				otlp_attr_str(&b, &first, "service.name", pc->service_name);
			sbuf_printf(&b, "]},\"scopeSpans\":[{\"scope\":{\"name\":\"spanperf\",\"version\":\"%s\"},\"spans\":[",
				    SPANPERF_VERSION);
			first = true;
		} else {
			sbuf_printf(&b, ",");
		}
		span_ids(sp, sp - r->sp, trace, span);
		ntop = top_of(r, sp->first, sp->count, &top, &tcap);
		if (ntop < 0) {
			e = ntop;
			break;
		}
		sbuf_printf(&b, "{\"traceId\":\"%s\",\"spanId\":\"%s\",\"name\":", trace, span);
		sbuf_json_str(&b, r->names.str[sp->name]);
		sbuf_printf(&b, ",\"kind\":1,\"startTimeUnixNano\":\"%llu\",\"endTimeUnixNano\":\"%llu\",\"attributes\":[",
			    (unsigned long long)(sp->start + off), (unsigned long long)(sp->end + off));
		first = true;
		otlp_attr_int(&b, &first, "thread.id", sp->tid);
		otlp_attr_str(&b, &first, "perf.span.source", span_source_name(sp->source));
		otlp_attr_int(&b, &first, "perf.cpu.samples", sp->count);
		if (sp->source != SP_SRC_EXTERNAL && k_clock >= 0)
			otlp_attr_double(&b, &first, "perf.task_clock_ms", sp->counters[k_clock] / 1e6);
		else if (ns_per_sample)
			/* Estimated from the samples: a clock event samples every ns_per_sample of CPU. */
			otlp_attr_double(&b, &first, "perf.task_clock_ms", sp->count * ns_per_sample / 1e6);
		if (sp->source != SP_SRC_EXTERNAL && k_cs >= 0)
			otlp_attr_int(&b, &first, "perf.context_switches", sp->counters[k_cs]);
		/* The same clipped sum of blocks as off_cpu_ns; absent, not 0, where --off-cpu was not given. */
		if (span_wall__recorded(r->wall))
			otlp_attr_double(&b, &first, "perf.off_cpu_ms",
					 span_wall__off_ns(r->wall, sp->tid, sp->start, sp->end) / 1e6);
		/* The application's own attributes, as it published them with the context. */
		{
			struct otlp_ctx oc = { &b, &first };

			otel_attrs_split(sp->attrs, otlp_attr, &oc);
		}
		if (ntop) {
			sbuf_printf(&b, ",{\"key\":\"perf.top_functions\",\"value\":{\"arrayValue\":{\"values\":[");
			for (int t = 0; t < ntop && t < TOP_N; t++) {
				sbuf_printf(&b, "%s{\"stringValue\":", t ? "," : "");
				sbuf_json_str(&b, top[t].name);
				sbuf_printf(&b, "}");
			}
			sbuf_printf(&b, "]}}}");
		}
		sbuf_printf(&b, "]}");
		if (b.len > (1 << 20)) {
			if (b.err || fwrite(b.p, 1, b.len, out) != b.len)
				e = b.err ?: -EIO;
			b.len = 0;
		}
	}
	if (r->nsp)
		sbuf_printf(&b, "]}]}");
	sbuf_printf(&b, "]}\n");
	if (!e && (b.err || fwrite(b.p, 1, b.len, out) != b.len))
		e = b.err ?: -EIO;
	sbuf_free(&b);
	free(top);
	free(rows);
	return e;
}

static int print_json(struct span_report *r, FILE *out)
{
	struct topc *top = NULL;
	size_t tcap = 0;
	struct sbuf b = {};
	int e = 0;

	for (size_t i = 0; i < r->nsp && !e; i++) {
		int ntop = top_of(r, r->sp[i].first, r->sp[i].count, &top, &tcap);

		if (ntop < 0) {
			e = ntop;
			break;
		}
		b.len = 0;
		json_span(r, &r->sp[i], top, ntop, &b);
		if (b.err)
			e = b.err;
		else if (fwrite(b.p, 1, b.len, out) != b.len)
			e = -EIO;
	}
	sbuf_free(&b);
	free(top);
	return e;
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
	if (!e && (span_wall__new(&r->wall, sess) || session__add_consumer(sess, &ops, r)))
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
	if (!r->nsp && !o->external)
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
	int e = o->otlp ? print_otlp(r, out, err, errlen) : o->json ? print_json(r, out) : print_table(r, out);

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
	int e = session__open(&sess, o->input, NULL, err, errlen);

	if (!e)
		e = span_report__new(&r, sess, o, err, errlen);
	if (!e)
		e = session__run(sess, err, errlen);
	if (!e)
		e = span_report__finish(r, err, errlen);
	if (!e)
		e = span_report__print(r, stdout, err, errlen);
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

		span_ids(sp, i, trace, span);
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
