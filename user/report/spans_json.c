// SPDX-License-Identifier: GPL-2.0
/* report --spans --format json and annotate --format json: one object per span. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "sbuf.h"
#include "spans_view.h"

static void json_stack(const struct spans_stack *s, struct sbuf *b)
{
	sbuf_printf(b, "[");
	for (__u32 i = 0; i < s->nr; i++) {
		sbuf_printf(b, "%s", i ? "," : "");
		sbuf_json_str(b, s->frame[i]);
	}
	sbuf_printf(b, "]");
}

int spans_json_wall(const struct spans_view *v, const struct spans_row *row, struct sbuf *b)
{
	const struct span_split *x = row->has_split ? &row->split : NULL;

	if (row->on_cpu_ns >= 0)
		sbuf_printf(b, ",\"on_cpu_ns\":%lld", (long long)row->on_cpu_ns);
	else
		sbuf_printf(b, ",\"on_cpu_ns\":null");
	if (x)
		sbuf_printf(b, ",\"off_cpu_ns\":%llu,\"runq_ns\":%llu,\"sleep_ns\":%llu,\"blocked_ns\":%llu",
			    (unsigned long long)x->off, (unsigned long long)x->runq, (unsigned long long)x->sleep,
			    (unsigned long long)x->blocked);
	else if (v->offcpu)
		/* Without the accounts a woken thread's run-queue wait is inside its off-CPU block. */
		sbuf_printf(b, ",\"off_cpu_ns\":%llu,\"runq_ns\":null,\"sleep_ns\":null,\"blocked_ns\":null",
			    (unsigned long long)row->off_ns);
	else
		sbuf_printf(b, ",\"off_cpu_ns\":null,\"runq_ns\":null,\"sleep_ns\":null,\"blocked_ns\":null");
	sbuf_printf(b, ",\"split\":");
	if (row->split_how)
		sbuf_json_str(b, row->split_how);
	else
		sbuf_printf(b, "null");
	sbuf_printf(b, ",\"off_cpu_top\":[");
	for (int k = 0; k < row->nr_off_top; k++) {
		sbuf_printf(b, "%s{\"stack\":", k ? "," : "");
		json_stack(&row->off_top[k], b);
		sbuf_printf(b, ",\"ns\":%llu}", (unsigned long long)row->off_top[k].ns);
	}
	sbuf_printf(b, "]");
	if (!v->wakers)
		return b->err;
	sbuf_printf(b, ",\"woken_by\":[");
	for (int k = 0; k < row->nr_woken_by; k++) {
		const struct spans_waker *w = &row->woken_by[k];

		sbuf_printf(b, "%s{\"comm\":", k ? "," : "");
		sbuf_json_str(b, w->comm);
		sbuf_printf(b, ",\"tid\":%u,\"stack\":", w->tid);
		json_stack(&w->stack, b);
		/* The span the waker was in when it woke this one, by the ids its own row shows. */
		if (w->has_ids)
			sbuf_printf(b, ",\"span_id\":\"%s\",\"trace_id\":\"%s\"", w->span_id, w->trace_id);
		else
			sbuf_printf(b, ",\"span_id\":null,\"trace_id\":null");
		sbuf_printf(b, ",\"ns\":%llu}", (unsigned long long)w->stack.ns);
	}
	sbuf_printf(b, "]");
	return b->err;
}

static void json_row(const struct spans_view *v, const struct spans_row *sp, struct sbuf *b)
{
	sbuf_printf(b, "{\"name\":");
	sbuf_json_str(b, sp->name);
	sbuf_printf(b, ",\"source\":\"%s\",\"pid\":%u,\"tid\":%u,\"start_ns\":%llu,\"end_ns\":%llu,"
		       "\"duration_ns\":%llu,\"samples\":%zu,\"counters\":{",
		    sp->source, sp->pid, sp->tid, (unsigned long long)sp->start, (unsigned long long)sp->end,
		    (unsigned long long)(sp->end - sp->start), sp->samples);
	for (int k = 0; sp->has_counters && k < v->nr_ctr; k++) {
		sbuf_printf(b, "%s", k ? "," : "");
		sbuf_json_str(b, v->ctr_names[k]);
		if (v->ctr_clock[k])
			sbuf_printf(b, ":%.6f", sp->counters[k] / 1e6);
		else
			sbuf_printf(b, ":%llu", (unsigned long long)sp->counters[k]);
	}
	sbuf_printf(b, "},\"top\":[");
	for (size_t k = 0; k < sp->nr_top && k < SPANS_TOP_N; k++) {
		sbuf_printf(b, "%s{\"sym\":", k ? "," : "");
		sbuf_json_str(b, sp->top[k].name);
		sbuf_printf(b, ",\"samples\":%llu}", (unsigned long long)sp->top[k].n);
	}
	sbuf_printf(b, "]");
	if (sp->has_ctx) {
		sbuf_printf(b, ",\"trace_id\":\"%s\",\"span_id\":\"%s\",\"attributes\":{", sp->trace_id, sp->span_id);
		for (size_t k = 0; k < sp->nr_attr; k++) {
			sbuf_printf(b, "%s", k ? "," : "");
			sbuf_json_str(b, sp->attr[k].key);
			sbuf_add(b, ":", 1);
			sbuf_json_str(b, sp->attr[k].value);
		}
		sbuf_printf(b, "}");
	} else if (!sp->external) {
		/* Made up, as the OTLP output gives them: what a waker's woken_by names the span by. */
		sbuf_printf(b, ",\"trace_id\":\"%s\",\"span_id\":\"%s\"", sp->trace_id, sp->span_id);
	}
	spans_json_wall(v, sp, b);
	if (sp->ext_trace_id)
		sbuf_printf(b, ",\"trace_id\":%s", sp->ext_trace_id);
	if (sp->ext_span_id)
		sbuf_printf(b, ",\"span_id\":%s", sp->ext_span_id);
	/* Edges seen by samples: each up to a period late, the end no earlier than a switch where one stamped it. */
	if (sp->edges & SPAN_EDGES_SAMPLED)
		sbuf_printf(b, ",\"edges\":\"%s\"", sp->edges & SPAN_END_AT_SWITCH ? "sampled, end at a switch" : "sampled");
	if (sp->unfinished)
		sbuf_printf(b, ",\"unfinished\":true");
	if (v->bpf_samples && !sp->external)
		sbuf_printf(b, ",\"bpf_samples\":%llu", (unsigned long long)sp->bpf_samples);
	sbuf_printf(b, "}\n");
}

int spans_print_json(const struct spans_view *v, FILE *out)
{
	struct sbuf b = {};
	int e = 0;

	for (size_t i = 0; i < v->nr_rows && !e; i++) {
		b.len = 0;
		json_row(v, &v->row[i], &b);
		if (b.err)
			e = b.err;
		else if (fwrite(b.p, 1, b.len, out) != b.len)
			e = stdio_error();
	}
	sbuf_free(&b);
	return e;
}
