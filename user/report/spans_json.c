// SPDX-License-Identifier: GPL-2.0
/* report --spans --format json and annotate --format json: one object per span. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spans_join.h"

static int json_attr(void *ctx, const char *key, const char *value)
{
	struct sbuf *b = ctx;

	if (b->len && b->p[b->len - 1] != '{')
		sbuf_add(b, ",", 1);
	sbuf_json_str(b, key);
	sbuf_add(b, ":", 1);
	return sbuf_json_str(b, value);
}

static void json_span(struct span_report *r, size_t i, struct topc *top, int ntop, struct sbuf *b)
{
	const struct span_row *sp = &r->sp[i];

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
			if (spans_ctr_is_clock(r->ctr_names[k]))
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
	} else if (sp->source != SP_SRC_EXTERNAL) {
		/* Made up, as the OTLP output gives them: what a waker's woken_by names the span by. */
		char trace[33], span[17];

		spans_ids(sp, i, trace, span);
		sbuf_printf(b, ",\"trace_id\":\"%s\",\"span_id\":\"%s\"", trace, span);
	}
	{
		struct span_split x;
		const char *how;
		bool split = spans_split(r, sp, &x, &how);

		span_wall__json(r->wall, sp->tid, sp->start, sp->end, spans_on_cpu_ns(r, sp), split ? &x : NULL,
				how, b);
		span_wall__woken_by_json(r->wall, sp->tid, sp->start, sp->end, b);
	}
	if (sp->ext && sp->ext->trace_id[0])
		sbuf_printf(b, ",\"trace_id\":%s", sp->ext->trace_id);
	if (sp->ext && sp->ext->span_id[0])
		sbuf_printf(b, ",\"span_id\":%s", sp->ext->span_id);
	/* Edges seen by samples: each up to a period late, the end no earlier than a switch where one stamped it. */
	if (sp->edges & SPAN_EDGES_SAMPLED)
		sbuf_printf(b, ",\"edges\":\"%s\"", sp->edges & SPAN_END_AT_SWITCH ? "sampled, end at a switch" : "sampled");
	if (sp->unfinished)
		sbuf_printf(b, ",\"unfinished\":true");
	if (r->o.bpf_samples && sp->source != SP_SRC_EXTERNAL)
		sbuf_printf(b, ",\"bpf_samples\":%llu", (unsigned long long)sp->bpf_samples);
	sbuf_printf(b, "}\n");
}

int spans_print_json(struct span_report *r, FILE *out)
{
	struct topc *top = NULL;
	size_t tcap = 0;
	struct sbuf b = {};
	int e = 0;

	for (size_t i = 0; i < r->nsp && !e; i++) {
		int ntop = spans_top_of(r, r->sp[i].first, r->sp[i].count, &top, &tcap);

		if (ntop < 0) {
			e = ntop;
			break;
		}
		b.len = 0;
		json_span(r, i, top, ntop, &b);
		if (b.err)
			e = b.err;
		else if (fwrite(b.p, 1, b.len, out) != b.len)
			e = -EIO;
	}
	sbuf_free(&b);
	free(top);
	return e;
}
