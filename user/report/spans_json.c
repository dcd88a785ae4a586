// SPDX-License-Identifier: GPL-2.0
/* report --spans --format json and annotate --format json: one object per span. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "sbuf.h"
#include "spans_view.h"

/*
 * A million rows is 400 MB of JSON: the line is put together by hand (the
 * same bytes sbuf_printf's formats gave), printf's parsing of the format
 * once per field was half the join's time.
 */
/* n bytes: in place where they fit (nearly always), else through sbuf_add, which grows the buffer. */
static inline void put(struct sbuf *b, const void *p, size_t n)
{
	if (b->len + n <= b->cap && !b->err) {
		memcpy(b->p + b->len, p, n);
		b->len += n;
	} else {
		sbuf_add(b, p, n);
	}
}

/* s: a string literal (sizeof is its length + 1) */
#define LIT(b, s) put(b, "" s, sizeof(s) - 1)
/* ,"key":N: most members are a name and a count. */
#define DEC_MEMBER(b, key, v)            \
	do {                             \
		LIT(b, ",\"" key "\":"); \
		dec(b, v);               \
	} while (0)

/* "00".."99": two digits a division, half dec's divisions (digits were 6% of the join). */
static const char pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
			       "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
			       "8081828384858687888990919293949596979899";

static void dec(struct sbuf *b, __u64 v)
{
	char t[20];
	int i = sizeof(t);

	while (v >= 100) {
		i -= 2;
		memcpy(t + i, pairs + v % 100 * 2, 2);
		v /= 100;
	}
	if (v >= 10) {
		i -= 2;
		memcpy(t + i, pairs + v * 2, 2);
	} else {
		t[--i] = '0' + v;
	}
	put(b, t + i, sizeof(t) - i);
}

static void sdec(struct sbuf *b, __s64 v)
{
	if (v < 0) {
		LIT(b, "-");
		dec(b, -(__u64)v);
	} else {
		dec(b, v);
	}
}

/* v / 1e6 as "%.6f" writes it: exact below 1e15 (the double's error is under half the last digit). */
static void millis(struct sbuf *b, __u64 v)
{
	char t[7];

	if (v >= 1000000000000000ull) {
		sbuf_printf(b, "%.6f", v / 1e6);
		return;
	}
	dec(b, v / 1000000);
	t[0] = '.';
	v %= 1000000;
	for (int i = 6; i > 0; i--, v /= 10)
		t[i] = '0' + v % 10;
	put(b, t, sizeof(t));
}

/* A JSON string: one copy where it needs no escape (nearly always), else sbuf_json_str's. */
static void str(struct sbuf *b, const char *s)
{
	size_t n = 0;

	while (s[n] >= 0x20 && s[n] < 0x7f && s[n] != '"' && s[n] != '\\')
		n++;
	if (s[n]) {
		sbuf_json_str(b, s);
		return;
	}
	LIT(b, "\"");
	put(b, s, n);
	LIT(b, "\"");
}

static void json_stack(const struct spans_stack *s, struct sbuf *b)
{
	LIT(b, "[");
	for (__u32 i = 0; i < s->nr; i++) {
		if (i)
			LIT(b, ",");
		str(b, s->frame[i]);
	}
	LIT(b, "]");
}

int spans_json_wall(const struct spans_view *v, const struct spans_row *row, struct sbuf *b)
{
	const struct span_split *x = row->has_split ? &row->split : NULL;

	LIT(b, ",\"on_cpu_ns\":");
	if (row->on_cpu_ns >= 0)
		sdec(b, row->on_cpu_ns);
	else
		LIT(b, "null");
	if (x) {
		DEC_MEMBER(b, "off_cpu_ns", x->off);
		DEC_MEMBER(b, "runq_ns", x->runq);
		DEC_MEMBER(b, "sleep_ns", x->sleep);
		DEC_MEMBER(b, "blocked_ns", x->blocked);
	} else if (v->offcpu) {
		/* Without the accounts a woken thread's run-queue wait is inside its off-CPU block. */
		DEC_MEMBER(b, "off_cpu_ns", row->off_ns);
		LIT(b, ",\"runq_ns\":null,\"sleep_ns\":null,\"blocked_ns\":null");
	} else {
		LIT(b, ",\"off_cpu_ns\":null,\"runq_ns\":null,\"sleep_ns\":null,\"blocked_ns\":null");
	}
	LIT(b, ",\"split\":");
	if (row->split_how)
		str(b, row->split_how);
	else
		LIT(b, "null");
	LIT(b, ",\"off_cpu_top\":[");
	for (int k = 0; k < row->nr_off_top; k++) {
		if (k)
			LIT(b, ",");
		LIT(b, "{\"stack\":");
		json_stack(&row->off_top[k], b);
		DEC_MEMBER(b, "ns", row->off_top[k].ns);
		LIT(b, "}");
	}
	LIT(b, "]");
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
	LIT(b, "{\"name\":");
	str(b, sp->name);
	LIT(b, ",\"source\":\"");
	put(b, sp->source, strlen(sp->source));
	LIT(b, "\"");
	DEC_MEMBER(b, "pid", sp->pid);
	DEC_MEMBER(b, "tid", sp->tid);
	DEC_MEMBER(b, "start_ns", sp->start);
	DEC_MEMBER(b, "end_ns", sp->end);
	DEC_MEMBER(b, "duration_ns", sp->end - sp->start);
	DEC_MEMBER(b, "samples", sp->samples);
	LIT(b, ",\"counters\":{");
	for (int k = 0; sp->has_counters && k < v->nr_ctr; k++) {
		if (k)
			LIT(b, ",");
		str(b, v->ctr_names[k]);
		LIT(b, ":");
		if (v->ctr_clock[k])
			millis(b, sp->counters[k]);
		else
			dec(b, sp->counters[k]);
	}
	LIT(b, "},\"top\":[");
	for (size_t k = 0; k < sp->nr_top && k < SPANS_TOP_N; k++) {
		if (k)
			LIT(b, ",");
		LIT(b, "{\"sym\":");
		str(b, sp->top[k].name);
		DEC_MEMBER(b, "samples", sp->top[k].n);
		LIT(b, "}");
	}
	LIT(b, "]");
	/* Made up where the span has no context, as the OTLP output gives them: what a waker's woken_by names it by. */
	if (sp->has_ctx || !sp->external) {
		LIT(b, ",\"trace_id\":\"");
		put(b, sp->trace_id, strlen(sp->trace_id));
		LIT(b, "\",\"span_id\":\"");
		put(b, sp->span_id, strlen(sp->span_id));
		LIT(b, "\"");
	}
	if (sp->has_ctx) {
		LIT(b, ",\"attributes\":{");
		for (size_t k = 0; k < sp->nr_attr; k++) {
			if (k)
				LIT(b, ",");
			str(b, sp->attr[k].key);
			LIT(b, ":");
			str(b, sp->attr[k].value);
		}
		LIT(b, "}");
	}
	spans_json_wall(v, sp, b);
	if (sp->ext_trace_id) {
		LIT(b, ",\"trace_id\":");
		sbuf_add(b, sp->ext_trace_id, strlen(sp->ext_trace_id));
	}
	if (sp->ext_span_id) {
		LIT(b, ",\"span_id\":");
		sbuf_add(b, sp->ext_span_id, strlen(sp->ext_span_id));
	}
	/* Edges seen by samples: each up to a period late, the end no earlier than a switch where one stamped it. */
	if (sp->edges & SPAN_EDGES_SAMPLED) {
		if (sp->edges & SPAN_END_AT_SWITCH)
			LIT(b, ",\"edges\":\"sampled, end at a switch\"");
		else
			LIT(b, ",\"edges\":\"sampled\"");
	}
	if (sp->unfinished)
		LIT(b, ",\"unfinished\":true");
	if (v->bpf_samples && !sp->external)
		DEC_MEMBER(b, "bpf_samples", sp->bpf_samples);
	LIT(b, "}\n");
}

int spans_print_json(const struct spans_view *v, FILE *out)
{
	struct sbuf b = {};
	int e = 0;

	/* Lines go out 64 KiB at a time: fwrite of that much skips stdio's buffer, a copy of every byte. */
	for (size_t i = 0; i < v->nr_rows && !e; i++) {
		json_row(v, &v->row[i], &b);
		if (b.err)
			e = b.err;
		else if ((b.len >= 65536 || i + 1 == v->nr_rows) && fwrite(b.p, 1, b.len, out) != b.len)
			e = stdio_error();
		else if (b.len >= 65536)
			b.len = 0;
	}
	sbuf_free(&b);
	return e;
}
