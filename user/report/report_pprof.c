// SPDX-License-Identifier: GPL-2.0
/*
 * A pprof Profile (github.com/google/pprof/proto/profile.proto), encoded by
 * hand: the wire format is varints, and length-prefixed bytes for strings,
 * packed arrays and nested messages.  Gzipped, as pprof writes it.
 *
 * Sample types are samples/count and cpu/nanoseconds; each function gets one
 * location (at the first address it was seen at) in the mapping of its dso.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "hash.h"
#include "report_out.h"
#include "sbuf.h"

/* Field numbers of profile.proto. */
enum { P_SAMPLE_TYPE = 1, P_SAMPLE, P_MAPPING, P_LOCATION, P_FUNCTION, P_STRING_TABLE, P_TIME_NANOS = 9,
       P_DURATION_NANOS, P_PERIOD_TYPE, P_PERIOD, P_COMMENT, P_DEFAULT_SAMPLE_TYPE };

static void varint(struct sbuf *b, __u64 v)
{
	unsigned char c[10];
	int n = 0;

	do {
		c[n++] = (v & 0x7f) | (v > 0x7f ? 0x80 : 0);
		v >>= 7;
	} while (v);
	sbuf_add(b, c, n);
}

static void field_varint(struct sbuf *b, int field, __u64 v)
{
	varint(b, (__u64)field << 3);
	varint(b, v);
}

static void field_bytes(struct sbuf *b, int field, const void *p, size_t n)
{
	varint(b, (__u64)field << 3 | 2);
	varint(b, n);
	sbuf_add(b, p, n);
}

static void field_msg(struct sbuf *b, int field, struct sbuf *m)
{
	field_bytes(b, field, m->p, m->len);
	m->len = 0;
}

/* The string table: "" first, each string once; a string's id is its place in the pool. */
struct strtab {
	struct sbuf out; /* encoded entries, field 6 */
	struct strpool pool;
};

static __u64 str_id(struct strtab *t, const char *s);

struct label_ctx {
	struct strtab *t;
	struct sbuf *m, *lab;
};

static int attr_label(void *ctx, const char *key, const char *value)
{
	struct label_ctx *c = ctx;

	field_varint(c->lab, 1, str_id(c->t, key));
	field_varint(c->lab, 2, str_id(c->t, value));
	field_msg(c->m, 3, c->lab);
	return 0;
}

static __u64 str_id(struct strtab *t, const char *s)
{
	size_t n = t->pool.n, id;

	if (!strpool_intern(&t->pool, s, &id)) {
		t->out.err = -ENOMEM; /* reported with the table's other errors */
		return 0;
	}
	if (t->pool.n > n)
		field_bytes(&t->out, P_STRING_TABLE, s, strlen(s));
	return id;
}

static void value_type(struct sbuf *b, int field, struct strtab *t, const char *type, const char *unit)
{
	struct sbuf m = {};

	field_varint(&m, 1, str_id(t, type));
	field_varint(&m, 2, str_id(t, unit));
	field_msg(b, field, &m);
	sbuf_free(&m);
}

static int gzip_write(const struct sbuf *b, FILE *out)
{
	z_stream z = {};
	unsigned char buf[1 << 16];
	int r;

	/* 15 + 16: a gzip wrapper, which pprof expects. */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	z.next_in = (unsigned char *)b->p;
	z.avail_in = b->len;
	do {
		z.next_out = buf;
		z.avail_out = sizeof(buf);
		r = deflate(&z, Z_FINISH);
		if (fwrite(buf, 1, sizeof(buf) - z.avail_out, out) != sizeof(buf) - z.avail_out) {
			deflateEnd(&z);
			return -EIO;
		}
	} while (r == Z_OK);
	deflateEnd(&z);
	return r == Z_STREAM_END ? 0 : -EIO;
}

/* What the sections below write into: the message, scratch buffers, the string table. */
struct pprof_w {
	const struct profile *p;
	struct sbuf b, m, packed;
	struct strtab t;
	__u64 ns_per_sample;
	__u64 *func_addr; /* each function's first address seen, for its location */
};

static void label_str(struct pprof_w *w, struct sbuf *lab, const char *key, const char *value)
{
	field_varint(lab, 1, str_id(&w->t, key));
	field_varint(lab, 2, str_id(&w->t, value));
	field_msg(&w->m, 3, lab);
}

static void label_num(struct pprof_w *w, struct sbuf *lab, const char *key, __u64 value)
{
	field_varint(lab, 1, str_id(&w->t, key));
	field_varint(lab, 3, value);
	field_msg(&w->m, 3, lab);
}

/* One Sample: location ids leaf first, as pprof wants; location id = function index + 1. */
static void write_sample(struct pprof_w *w, const struct pstack *s, bool off)
{
	const struct profile *p = w->p;
	struct sbuf lab = {};

	for (__u32 j = 0; j < s->nr; j++) {
		varint(&w->packed, s->frames[j].func + 1);
		if (!w->func_addr[s->frames[j].func])
			w->func_addr[s->frames[j].func] = s->frames[j].ip;
	}
	field_msg(&w->m, 1, &w->packed);
	varint(&w->packed, off ? 0 : s->count);
	/* cpu-clock periods are nanoseconds; other events' time is estimated from the rate. */
	varint(&w->packed, off ? 0 : p->event_is_clock ? s->period : s->count * w->ns_per_sample);
	if (p->nr_off_stacks)
		varint(&w->packed, off ? s->period : 0);
	field_msg(&w->m, 2, &w->packed);
	label_str(w, &lab, "thread", s->comm);
	label_num(w, &lab, "tid", s->tid);
	label_num(w, &lab, "pid", s->pid);
	/* The OTel context (record --otel), as the OTel profiling signal names its link to traces. */
	if (s->otel.trace_id) {
		label_str(w, &lab, "trace_id", s->otel.trace_id);
		label_str(w, &lab, "span_id", s->otel.span_id);
	}
	/* The span's OTEP 4947 attributes, one string label each (pprof -tagfocus=http.route=...). */
	if (s->otel.attrs) {
		struct label_ctx lc = { &w->t, &w->m, &lab };

		otel_attrs_split(s->otel.attrs, attr_label, &lc);
	}
	field_msg(&w->b, P_SAMPLE, &w->m);
	sbuf_free(&lab);
}

/*
 * Mappings: mapping id = dso id + 1, with the build id pprof uses to find
 * symbols.  pprof calls the first one the profile's main file: busiest
 * first.  Returns how many dsos there are, or -ENOMEM.
 */
static int write_mappings(struct pprof_w *w)
{
	const struct profile *p = w->p;
	const struct sym_dso_info *dsos;
	int nr_dsos = symbolizer__dsos(p->sym, &dsos);
	int *order = calloc(nr_dsos > 0 ? nr_dsos : 1, sizeof(*order));
	__u64 *hits = calloc(nr_dsos > 0 ? nr_dsos : 1, sizeof(*hits));

	if (nr_dsos < 0 || !order || !hits) {
		free(order);
		free(hits);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->nr_stacks; i++) {
		int d = p->funcs[p->stacks[i].frames[0].func].dso_id;

		if (d >= 0 && d < nr_dsos)
			hits[d] += p->stacks[i].count;
	}
	for (int i = 0; i < nr_dsos; i++) {
		int j = i;

		/* insertion sort by hits, user dsos before the kernel on a tie */
		for (; j > 0 && hits[order[j - 1]] < hits[i]; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	for (int k = 0; k < nr_dsos; k++) {
		int i = order[k];

		field_varint(&w->m, 1, i + 1);
		field_varint(&w->m, 2, dsos[i].start);
		field_varint(&w->m, 3, dsos[i].limit);
		field_varint(&w->m, 4, dsos[i].pgoff);
		field_varint(&w->m, 5, str_id(&w->t, dsos[i].path));
		field_varint(&w->m, 6, str_id(&w->t, dsos[i].build_id ? dsos[i].build_id : ""));
		field_varint(&w->m, 7, 1); /* has_functions: symbolized already */
		field_msg(&w->b, P_MAPPING, &w->m);
	}
	free(order);
	free(hits);
	return nr_dsos;
}

/* A Location and a Function per function of the profile, both with id = index + 1. */
static void write_functions(struct pprof_w *w, int nr_dsos)
{
	const struct profile *p = w->p;

	for (size_t f = 0; f < p->nr_funcs; f++) {
		struct sbuf line = {};

		field_varint(&w->m, 1, f + 1);
		if (p->funcs[f].dso_id >= 0 && p->funcs[f].dso_id < nr_dsos)
			field_varint(&w->m, 2, p->funcs[f].dso_id + 1);
		field_varint(&w->m, 3, w->func_addr[f]);
		field_varint(&line, 1, f + 1);
		field_msg(&w->m, 4, &line);
		field_msg(&w->b, P_LOCATION, &w->m);
		sbuf_free(&line);
	}
	for (size_t f = 0; f < p->nr_funcs; f++) {
		field_varint(&w->m, 1, f + 1);
		field_varint(&w->m, 2, str_id(&w->t, p->funcs[f].name));
		field_varint(&w->m, 3, str_id(&w->t, p->funcs[f].name));
		field_varint(&w->m, 4, str_id(&w->t, p->funcs[f].path ? p->funcs[f].path : ""));
		field_msg(&w->b, P_FUNCTION, &w->m);
	}
}

int report_pprof(const struct profile *p, FILE *out)
{
	struct pprof_w w = { .p = p, .ns_per_sample = p->sample_freq ? 1000000000ull / p->sample_freq : 1000000 };
	const struct pd_meta *meta = p->rd ? &p->rd->meta : NULL;
	int e = -ENOMEM;

	w.func_addr = calloc(p->nr_funcs ? p->nr_funcs : 1, sizeof(*w.func_addr));
	if (!w.func_addr)
		return -ENOMEM;
	str_id(&w.t, "");
	value_type(&w.b, P_SAMPLE_TYPE, &w.t, "samples", "count");
	value_type(&w.b, P_SAMPLE_TYPE, &w.t, "cpu", "nanoseconds");
	/* record --off-cpu: a third value, zero in on-CPU samples and the only one set in off-CPU ones. */
	if (p->nr_off_stacks)
		value_type(&w.b, P_SAMPLE_TYPE, &w.t, "off_cpu", "nanoseconds");
	for (size_t i = 0; i < p->nr_stacks; i++)
		write_sample(&w, &p->stacks[i], false);
	for (size_t i = 0; i < p->nr_off_stacks; i++)
		write_sample(&w, &p->off_stacks[i], true);
	e = write_mappings(&w);
	if (e < 0)
		goto cleanup;
	write_functions(&w, e);
	if (meta && meta->clock_tod_ns && p->first_ns >= meta->clock_ref_ns)
		field_varint(&w.b, P_TIME_NANOS, meta->clock_tod_ns + (p->first_ns - meta->clock_ref_ns));
	field_varint(&w.b, P_DURATION_NANOS, p->last_ns - p->first_ns);
	value_type(&w.b, P_PERIOD_TYPE, &w.t, "cpu", "nanoseconds");
	field_varint(&w.b, P_PERIOD, w.ns_per_sample);
	field_varint(&w.b, P_COMMENT, str_id(&w.t, p->event ? p->event : "samples"));
	field_varint(&w.b, P_DEFAULT_SAMPLE_TYPE, str_id(&w.t, "cpu"));
	/* The string table last: every id above has been handed out by now. */
	sbuf_add(&w.b, w.t.out.p, w.t.out.len);
	e = w.b.err ?: w.m.err ?: w.packed.err ?: w.t.out.err;
	if (!e)
		e = gzip_write(&w.b, out);
cleanup:
	sbuf_free(&w.b);
	sbuf_free(&w.m);
	sbuf_free(&w.packed);
	sbuf_free(&w.t.out);
	strpool_free(&w.t.pool);
	free(w.func_addr);
	return e;
}
