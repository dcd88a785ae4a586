// SPDX-License-Identifier: GPL-2.0
/* --format otlp-json: the spans as one OTLP ExportTraceServiceRequest. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "otlp_json.h"
#include "fileio.h"
#include "sbuf.h"
#include "spans_view.h"
#include "util.h"

static int ctr_index(const struct spans_view *v, const char *name)
{
	for (int k = 0; k < v->nr_ctr; k++)
		if (!strcmp(v->ctr_names[k], name))
			return k;
	return -1;
}

static int cmp_row_pid(const void *a, const void *b)
{
	const struct spans_row *x = *(const struct spans_row *const *)a, *y = *(const struct spans_row *const *)b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->start > y->start) - (x->start < y->start);
}

/* What every span's attributes need: the counters' columns. */
struct otlp_w {
	const struct spans_view *v;
	struct sbuf b;
	int k_clock, k_cs;
};

/* A resourceSpans per process: its pid, its service name if it published a context. */
static void resource_open(struct otlp_w *w, const struct spans_row *sp)
{
	bool first = true;

	sbuf_printf(&w->b, "{\"resource\":{\"attributes\":[");
	otlp_attr_int(&w->b, &first, "process.pid", sp->pid);
	if (sp->service)
		otlp_attr_str(&w->b, &first, "service.name", sp->service);
	sbuf_printf(&w->b, "]},\"scopeSpans\":[{\"scope\":{\"name\":\"spanperf\",\"version\":\"%s\"},\"spans\":[",
		    SPANPERF_VERSION);
}

/* The perf.* attributes: what the recording saw inside the span. */
static void perf_attrs(struct otlp_w *w, const struct spans_row *sp, bool *first)
{
	const struct spans_view *v = w->v;
	struct sbuf *b = &w->b;

	otlp_attr_int(b, first, "thread.id", sp->tid);
	otlp_attr_str(b, first, "perf.span.source", sp->source);
	otlp_attr_int(b, first, "perf.cpu.samples", sp->samples);
	if (sp->has_counters && w->k_clock >= 0)
		otlp_attr_double(b, first, "perf.task_clock_ms", sp->counters[w->k_clock] / 1e6);
	else if (v->ns_per_sample)
		/* Estimated from the samples: a clock event samples every ns_per_sample of CPU. */
		otlp_attr_double(b, first, "perf.task_clock_ms", sp->samples * v->ns_per_sample / 1e6);
	if (sp->has_counters && w->k_cs >= 0)
		otlp_attr_int(b, first, "perf.context_switches", sp->counters[w->k_cs]);
	/*
	 * The same figures as the JSON rows: the split where the span has one,
	 * else the clipped sum of blocks; absent, not 0, where neither was
	 * recorded.
	 */
	if (sp->has_split) {
		/*
		 * The split's own CPU time, which with the three below sums to
		 * the span: the scheduler's, steal left out, where task-clock's
		 * stamps count the time a VM's CPU was taken away.
		 */
		otlp_attr_double(b, first, "perf.on_cpu_ms", sp->split.on / 1e6);
		otlp_attr_double(b, first, "perf.off_cpu_ms", sp->split.off / 1e6);
		otlp_attr_double(b, first, "perf.runq_ms", sp->split.runq / 1e6);
		otlp_attr_double(b, first, "perf.sleep_ms", sp->split.sleep / 1e6);
		otlp_attr_double(b, first, "perf.blocked_ms", sp->split.blocked / 1e6);
	} else if (v->offcpu) {
		otlp_attr_double(b, first, "perf.off_cpu_ms", sp->off_ns / 1e6);
	}
}

static void otlp_span(struct otlp_w *w, const struct spans_row *sp)
{
	bool first = true;

	sbuf_printf(&w->b, "{\"traceId\":\"%s\",\"spanId\":\"%s\",\"name\":", sp->trace_id, sp->span_id);
	sbuf_json_str(&w->b, sp->name);
	sbuf_printf(&w->b, ",\"kind\":1,\"startTimeUnixNano\":\"%llu\",\"endTimeUnixNano\":\"%llu\",\"attributes\":[",
		    (unsigned long long)(sp->start + w->v->unix_off), (unsigned long long)(sp->end + w->v->unix_off));
	perf_attrs(w, sp, &first);
	/* The application's own attributes, as it published them with the context. */
	for (size_t k = 0; k < sp->nr_attr; k++)
		otlp_attr_str(&w->b, &first, sp->attr[k].key, sp->attr[k].value);
	if (sp->nr_top) {
		sbuf_printf(&w->b, ",{\"key\":\"perf.top_functions\",\"value\":{\"arrayValue\":{\"values\":[");
		for (size_t t = 0; t < sp->nr_top && t < SPANS_TOP_N; t++) {
			sbuf_printf(&w->b, "%s{\"stringValue\":", t ? "," : "");
			sbuf_json_str(&w->b, sp->top[t].name);
			sbuf_printf(&w->b, "}");
		}
		sbuf_printf(&w->b, "]}}}");
	}
	sbuf_printf(&w->b, "]}");
}

/*
 * OTLP JSON, one ExportTraceServiceRequest: a resourceSpans per process,
 * each span with what the recording saw inside it as perf.* attributes.
 * Times go back to unix nanoseconds; ids are hex and int64 values strings,
 * as the OTLP JSON mapping wants.
 */
int spans_print_otlp(const struct spans_view *v, FILE *out, char *err, size_t errlen)
{
	struct otlp_w w = { .v = v, .k_clock = ctr_index(v, "task-clock"), .k_cs = ctr_index(v, "context-switches") };
	const struct spans_row **rows;
	int e = 0;

	if (!v->has_clock)
		return set_errorf(err, errlen, -EINVAL,
				  "%s has no CLOCK_DATA, so its spans cannot be given unix times for OTLP", v->input);
	rows = malloc((v->nr_rows ? v->nr_rows : 1) * sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	if (v->unjoinable)
		pr_warn("%s holds sums of short off-CPU blocks that no span can be given, so perf.off_cpu_ms leaves them out; record with --off-cpu-thresh 0",
			v->input);
	for (size_t i = 0; i < v->nr_rows; i++)
		rows[i] = &v->row[i];
	sort_n(rows, v->nr_rows, sizeof(*rows), cmp_row_pid);
	sbuf_printf(&w.b, "{\"resourceSpans\":[");
	for (size_t i = 0; i < v->nr_rows && !e; i++) {
		if (!i || rows[i - 1]->pid != rows[i]->pid) {
			if (i)
				sbuf_printf(&w.b, "]}]},");
			resource_open(&w, rows[i]);
		} else {
			sbuf_printf(&w.b, ",");
		}
		otlp_span(&w, rows[i]);
		if (w.b.len > (1 << 20)) {
			if (w.b.err || fwrite(w.b.p, 1, w.b.len, out) != w.b.len)
				e = w.b.err ?: stdio_error();
			w.b.len = 0;
		}
	}
	if (v->nr_rows)
		sbuf_printf(&w.b, "]}]}");
	sbuf_printf(&w.b, "]}\n");
	if (!e && (w.b.err || fwrite(w.b.p, 1, w.b.len, out) != w.b.len))
		e = w.b.err ?: stdio_error();
	sbuf_free(&w.b);
	free(rows);
	return e;
}
