// SPDX-License-Identifier: GPL-2.0
/* --format otlp-json: the spans as one OTLP ExportTraceServiceRequest. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "otlp_json.h"
#include "spans_join.h"

static int ctr_index(const struct span_report *r, const char *name)
{
	for (int k = 0; k < r->nr_ctr; k++)
		if (!strcmp(r->ctr_names[k], name))
			return k;
	return -1;
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

/* What every span's attributes need: the counters' columns, the clock offset, the sampling rate. */
struct otlp_w {
	struct span_report *r;
	struct sbuf b;
	__s64 off; /* recording clock -> unix ns */
	int k_clock, k_cs;
	double ns_per_sample;
	struct topc *top;
	size_t tcap;
};

/* A resourceSpans per process: its pid, its service name if it published a context. */
static void resource_open(struct otlp_w *w, __u32 pid)
{
	const struct otel_pctx *pc = session__otel_process(w->r->sess, pid);
	bool first = true;

	sbuf_printf(&w->b, "{\"resource\":{\"attributes\":[");
	otlp_attr_int(&w->b, &first, "process.pid", pid);
	if (pc && pc->service_name)
		otlp_attr_str(&w->b, &first, "service.name", pc->service_name);
	sbuf_printf(&w->b, "]},\"scopeSpans\":[{\"scope\":{\"name\":\"spanperf\",\"version\":\"%s\"},\"spans\":[",
		    SPANPERF_VERSION);
}

/* The perf.* attributes: what the recording saw inside the span. */
static void perf_attrs(struct otlp_w *w, const struct span_row *sp, bool *first)
{
	struct span_report *r = w->r;
	struct sbuf *b = &w->b;
	struct span_split x;
	const char *how;

	otlp_attr_int(b, first, "thread.id", sp->tid);
	otlp_attr_str(b, first, "perf.span.source", span_source_name(sp->source));
	otlp_attr_int(b, first, "perf.cpu.samples", sp->count);
	if (sp->source != SP_SRC_EXTERNAL && w->k_clock >= 0)
		otlp_attr_double(b, first, "perf.task_clock_ms", sp->counters[w->k_clock] / 1e6);
	else if (w->ns_per_sample)
		/* Estimated from the samples: a clock event samples every ns_per_sample of CPU. */
		otlp_attr_double(b, first, "perf.task_clock_ms", sp->count * w->ns_per_sample / 1e6);
	if (sp->source != SP_SRC_EXTERNAL && w->k_cs >= 0)
		otlp_attr_int(b, first, "perf.context_switches", sp->counters[w->k_cs]);
	/*
	 * The same figures as the JSON rows: the split where the span has one,
	 * else the clipped sum of blocks; absent, not 0, where neither was
	 * recorded.
	 */
	if (spans_split(r, sp, &x, &how)) {
		/*
		 * The split's own CPU time, which with the three below sums to
		 * the span: the scheduler's, steal left out, where task-clock's
		 * stamps count the time a VM's CPU was taken away.
		 */
		otlp_attr_double(b, first, "perf.on_cpu_ms", x.on / 1e6);
		otlp_attr_double(b, first, "perf.off_cpu_ms", x.off / 1e6);
		otlp_attr_double(b, first, "perf.runq_ms", x.runq / 1e6);
		otlp_attr_double(b, first, "perf.sleep_ms", x.sleep / 1e6);
		otlp_attr_double(b, first, "perf.blocked_ms", x.blocked / 1e6);
	} else if (span_wall__recorded(r->wall)) {
		otlp_attr_double(b, first, "perf.off_cpu_ms", span_wall__off_ns(r->wall, sp->tid, sp->start, sp->end) / 1e6);
	}
}

/* One span; 0 or -ENOMEM. */
static int otlp_span(struct otlp_w *w, const struct span_row *sp)
{
	struct span_report *r = w->r;
	struct otlp_ctx oc = { &w->b, NULL };
	char trace[33], span[17];
	bool first = true;
	int ntop;

	spans_ids(sp, sp - r->sp, trace, span);
	ntop = spans_top_of(r, sp->first, sp->count, &w->top, &w->tcap);
	if (ntop < 0)
		return ntop;
	sbuf_printf(&w->b, "{\"traceId\":\"%s\",\"spanId\":\"%s\",\"name\":", trace, span);
	sbuf_json_str(&w->b, r->names.str[sp->name]);
	sbuf_printf(&w->b, ",\"kind\":1,\"startTimeUnixNano\":\"%llu\",\"endTimeUnixNano\":\"%llu\",\"attributes\":[",
		    (unsigned long long)(sp->start + w->off), (unsigned long long)(sp->end + w->off));
	perf_attrs(w, sp, &first);
	/* The application's own attributes, as it published them with the context. */
	oc.first = &first;
	otel_attrs_split(sp->attrs, otlp_attr, &oc);
	if (ntop) {
		sbuf_printf(&w->b, ",{\"key\":\"perf.top_functions\",\"value\":{\"arrayValue\":{\"values\":[");
		for (int t = 0; t < ntop && t < TOP_N; t++) {
			sbuf_printf(&w->b, "%s{\"stringValue\":", t ? "," : "");
			sbuf_json_str(&w->b, w->top[t].name);
			sbuf_printf(&w->b, "}");
		}
		sbuf_printf(&w->b, "]}}}");
	}
	sbuf_printf(&w->b, "]}");
	return 0;
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

/*
 * OTLP JSON, one ExportTraceServiceRequest: a resourceSpans per process,
 * each span with what the recording saw inside it as perf.* attributes.
 * Times go back to unix nanoseconds; ids are hex and int64 values strings,
 * as the OTLP JSON mapping wants.
 */
int spans_print_otlp(struct span_report *r, FILE *out, char *err, size_t errlen)
{
	const struct pd_meta *m = &r->sess->rd->meta;
	struct otlp_w w = { .r = r, .off = (__s64)(m->clock_tod_ns - m->clock_ref_ns),
			    .k_clock = ctr_index(r, "task-clock"), .k_cs = ctr_index(r, "context-switches"),
			    .ns_per_sample = clock_ns_per_sample(r->sess) };
	const struct span_row **rows;
	int e = 0;

	if (!m->clock_tod_ns)
		return set_errorf(err, errlen, -EINVAL,
				  "%s has no CLOCK_DATA, so its spans cannot be given unix times for OTLP",
				  r->o.input);
	rows = malloc((r->nsp ? r->nsp : 1) * sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	if (span_wall__unjoinable(r->wall))
		pr_warn("%s holds sums of short off-CPU blocks that no span can be given, so perf.off_cpu_ms leaves them out; record with --off-cpu-thresh 0",
			r->o.input);
	for (size_t i = 0; i < r->nsp; i++)
		rows[i] = &r->sp[i];
	sort_n(rows, r->nsp, sizeof(*rows), cmp_row_pid);
	sbuf_printf(&w.b, "{\"resourceSpans\":[");
	for (size_t i = 0; i < r->nsp && !e; i++) {
		if (!i || rows[i - 1]->pid != rows[i]->pid) {
			if (i)
				sbuf_printf(&w.b, "]}]},");
			resource_open(&w, rows[i]->pid);
		} else {
			sbuf_printf(&w.b, ",");
		}
		e = otlp_span(&w, rows[i]);
		if (!e && w.b.len > (1 << 20)) {
			if (w.b.err || fwrite(w.b.p, 1, w.b.len, out) != w.b.len)
				e = w.b.err ?: -EIO;
			w.b.len = 0;
		}
	}
	if (r->nsp)
		sbuf_printf(&w.b, "]}]}");
	sbuf_printf(&w.b, "]}\n");
	if (!e && (w.b.err || fwrite(w.b.p, 1, w.b.len, out) != w.b.len))
		e = w.b.err ?: -EIO;
	sbuf_free(&w.b);
	free(w.top);
	free(rows);
	return e;
}
