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

/*
 * OTLP JSON, one ExportTraceServiceRequest: a resourceSpans per process,
 * each span with what the recording saw inside it as perf.* attributes.
 * Times go back to unix nanoseconds; ids are hex and int64 values strings,
 * as the OTLP JSON mapping wants.
 */
int spans_print_otlp(struct span_report *r, FILE *out, char *err, size_t errlen)
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
		spans_ids(sp, sp - r->sp, trace, span);
		ntop = spans_top_of(r, sp->first, sp->count, &top, &tcap);
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
