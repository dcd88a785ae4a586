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

int report_pprof(const struct profile *p, FILE *out)
{
	struct sbuf b = {}, m = {}, packed = {};
	struct strtab t = {};
	const struct sym_dso_info *dsos;
	int nr_dsos, e, *order = NULL;
	__u64 *hits = NULL;
	__u64 ns_per_sample = p->sample_freq ? 1000000000ull / p->sample_freq : 1000000;
	__u64 *func_addr = calloc(p->nr_funcs ? p->nr_funcs : 1, sizeof(*func_addr));

	if (!func_addr)
		return -ENOMEM;
	str_id(&t, "");
	value_type(&b, P_SAMPLE_TYPE, &t, "samples", "count");
	value_type(&b, P_SAMPLE_TYPE, &t, "cpu", "nanoseconds");
	/* record --off-cpu: a third value, zero in on-CPU samples and the only one set in off-CPU ones. */
	if (p->nr_off_stacks)
		value_type(&b, P_SAMPLE_TYPE, &t, "off_cpu", "nanoseconds");
	/* Samples: location ids leaf first, as pprof wants; location id = function index + 1. */
	for (size_t i = 0; i < p->nr_stacks + p->nr_off_stacks; i++) {
		bool off = i >= p->nr_stacks;
		const struct pstack *s = off ? &p->off_stacks[i - p->nr_stacks] : &p->stacks[i];
		struct sbuf lab = {};

		for (__u32 j = 0; j < s->nr; j++) {
			varint(&packed, s->frames[j].func + 1);
			if (!func_addr[s->frames[j].func])
				func_addr[s->frames[j].func] = s->frames[j].ip;
		}
		field_msg(&m, 1, &packed);
		varint(&packed, off ? 0 : s->count);
		/* cpu-clock periods are nanoseconds; other events' time is estimated from the rate. */
		varint(&packed, off ? 0 : p->event_is_clock ? s->period : s->count * ns_per_sample);
		if (p->nr_off_stacks)
			varint(&packed, off ? s->period : 0);
		field_msg(&m, 2, &packed);
		field_varint(&lab, 1, str_id(&t, "thread"));
		field_varint(&lab, 2, str_id(&t, s->comm));
		field_msg(&m, 3, &lab);
		field_varint(&lab, 1, str_id(&t, "tid"));
		field_varint(&lab, 3, s->tid);
		field_msg(&m, 3, &lab);
		field_varint(&lab, 1, str_id(&t, "pid"));
		field_varint(&lab, 3, s->pid);
		field_msg(&m, 3, &lab);
		/* The OTel context (record --otel), as the OTel profiling signal names its link to traces. */
		if (s->otel.trace_id) {
			field_varint(&lab, 1, str_id(&t, "trace_id"));
			field_varint(&lab, 2, str_id(&t, s->otel.trace_id));
			field_msg(&m, 3, &lab);
			field_varint(&lab, 1, str_id(&t, "span_id"));
			field_varint(&lab, 2, str_id(&t, s->otel.span_id));
			field_msg(&m, 3, &lab);
		}
		/* The span's OTEP 4947 attributes, one string label each (pprof -tagfocus=http.route=...). */
		if (s->otel.attrs) {
			struct label_ctx lc = { &t, &m, &lab };

			otel_attrs_split(s->otel.attrs, attr_label, &lc);
		}
		field_msg(&b, P_SAMPLE, &m);
		sbuf_free(&lab);
	}
	/*
	 * Mappings: mapping id = dso id + 1, with the build id pprof uses to find
	 * symbols.  pprof calls the first one the profile's main file: busiest first.
	 */
	nr_dsos = symbolizer__dsos(p->sym, &dsos);
	order = calloc(nr_dsos > 0 ? nr_dsos : 1, sizeof(*order));
	hits = calloc(nr_dsos > 0 ? nr_dsos : 1, sizeof(*hits));
	if (!order || !hits) {
		e = -ENOMEM;
		goto cleanup;
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

		field_varint(&m, 1, i + 1);
		field_varint(&m, 2, dsos[i].start);
		field_varint(&m, 3, dsos[i].limit);
		field_varint(&m, 4, dsos[i].pgoff);
		field_varint(&m, 5, str_id(&t, dsos[i].path));
		field_varint(&m, 6, str_id(&t, dsos[i].build_id ? dsos[i].build_id : ""));
		field_varint(&m, 7, 1); /* has_functions: symbolized already */
		field_msg(&b, P_MAPPING, &m);
	}
	for (size_t f = 0; f < p->nr_funcs; f++) {
		struct sbuf line = {};

		field_varint(&m, 1, f + 1);
		if (p->funcs[f].dso_id >= 0 && p->funcs[f].dso_id < nr_dsos)
			field_varint(&m, 2, p->funcs[f].dso_id + 1);
		field_varint(&m, 3, func_addr[f]);
		field_varint(&line, 1, f + 1);
		field_msg(&m, 4, &line);
		field_msg(&b, P_LOCATION, &m);
		sbuf_free(&line);
	}
	for (size_t f = 0; f < p->nr_funcs; f++) {
		field_varint(&m, 1, f + 1);
		field_varint(&m, 2, str_id(&t, p->funcs[f].name));
		field_varint(&m, 3, str_id(&t, p->funcs[f].name));
		field_varint(&m, 4, str_id(&t, p->funcs[f].path ? p->funcs[f].path : ""));
		field_msg(&b, P_FUNCTION, &m);
	}
	if (p->rd->meta.clock_tod_ns && p->first_ns >= p->rd->meta.clock_ref_ns)
		field_varint(&b, P_TIME_NANOS, p->rd->meta.clock_tod_ns + (p->first_ns - p->rd->meta.clock_ref_ns));
	field_varint(&b, P_DURATION_NANOS, p->last_ns - p->first_ns);
	value_type(&b, P_PERIOD_TYPE, &t, "cpu", "nanoseconds");
	field_varint(&b, P_PERIOD, ns_per_sample);
	field_varint(&b, P_COMMENT, str_id(&t, p->event ? p->event : "samples"));
	field_varint(&b, P_DEFAULT_SAMPLE_TYPE, str_id(&t, "cpu"));
	/* The string table last: every id above has been handed out by now. */
	sbuf_add(&b, t.out.p, t.out.len);
	e = b.err ?: m.err ?: packed.err ?: t.out.err;
	if (!e)
		e = gzip_write(&b, out);
cleanup:
	free(order);
	free(hits);
	sbuf_free(&b);
	sbuf_free(&m);
	sbuf_free(&packed);
	sbuf_free(&t.out);
	strpool_free(&t.pool);
	free(func_addr);
	return e;
}
