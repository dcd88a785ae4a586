// SPDX-License-Identifier: GPL-2.0
/*
 * A pprof Profile (github.com/google/pprof/proto/profile.proto), encoded by
 * hand: the wire format is varints, and length-prefixed bytes for strings,
 * packed arrays and nested messages.  Gzipped, as pprof writes it.
 *
 * Sample types are samples/count and cpu/nanoseconds.  Without source
 * lines each function gets one location (at the first address it was seen
 * at) in the mapping of its dso; with them (inlined frames, srclines) each
 * address is a location whose Lines are the functions inlined there,
 * innermost first, then the function itself, each with its line, as pprof
 * expects.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fileio.h"
#include "hash.h"
#include "report_out.h"
#include "sbuf.h"
#include "util.h"

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
	if (t->pool.n > n) {
		/* proto3 strings are UTF-8 (its decoders refuse others); names are any bytes. */
		struct sbuf u = {};

		sbuf_add_utf8(&u, s, strlen(s));
		field_bytes(&t->out, P_STRING_TABLE, u.p ? u.p : "", u.len);
		if (u.err)
			t->out.err = u.err;
		sbuf_free(&u);
	}
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
			return stdio_error();
		}
	} while (r == Z_OK);
	deflateEnd(&z);
	return r == Z_STREAM_END ? 0 : -EIO;
}

/* A location: frames[0 .. nr) of some stack, inlined ones first, ending with a real function. */
struct ploc {
	const struct pframe *f;
	__u32 nr;
};

/* What the sections below write into: the message, scratch buffers, the string table. */
struct pprof_w {
	const struct profile *p;
	struct sbuf b, m, packed;
	struct strtab t;
	__u64 ns_per_sample;
	struct ploc *locs; /* id = index + 1 */
	size_t nr_locs, cap_locs;
	struct hindex loc_idx;
	int err;
};

static bool loc_eq(const void *ctx, size_t idx)
{
	const void *const *c = ctx;
	const struct pprof_w *w = c[0];
	const struct ploc *a = &w->locs[idx], *b = c[1];

	/* Without lines a function is one location wherever it was; with them each address is. */
	if (a->nr != b->nr || (w->p->src && a->f[0].ip != b->f[0].ip))
		return false;
	for (__u32 i = 0; i < a->nr; i++)
		if (a->f[i].func != b->f[i].func || a->f[i].srcline != b->f[i].srcline)
			return false;
	return true;
}

/* The location id of frames f[0 .. nr); 0 and w->err on ENOMEM. */
static __u64 loc_id(struct pprof_w *w, const struct pframe *f, __u32 nr)
{
	struct ploc k = { f, nr };
	const void *ctx[2] = { w, &k };
	__u64 h = w->p->src ? f[0].ip : 0;
	long i;

	for (__u32 j = 0; j < nr; j++)
		h = hash_mix(hash_mix(h, f[j].func), (__u64)(uintptr_t)f[j].srcline);
	i = hindex_find(&w->loc_idx, h, loc_eq, ctx);
	if (i >= 0)
		return i + 1;
	if (array_reserve((void **)&w->locs, &w->cap_locs, w->nr_locs, sizeof(*w->locs)) ||
	    hindex_add(&w->loc_idx, h, w->nr_locs)) {
		w->err = -ENOMEM;
		return 0;
	}
	w->locs[w->nr_locs++] = k;
	return w->nr_locs;
}

/* The line number of "file.c:LINE", 0 without one. */
static __u64 line_of(const char *srcline)
{
	const char *c = srcline ? strrchr(srcline, ':') : NULL;

	return c ? strtoull(c + 1, NULL, 10) : 0;
}

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

/* One Sample: location ids leaf first, as pprof wants. */
static void write_sample(struct pprof_w *w, const struct pstack *s, bool off)
{
	const struct profile *p = w->p;
	struct sbuf lab = {};

	for (__u32 j = 0, n; j < s->nr; j += n) {
		/* A function's inlined callees are Lines of its location. */
		for (n = 1; j + n < s->nr && p->funcs[s->frames[j + n - 1].func].inlined; n++)
			;
		varint(&w->packed, loc_id(w, &s->frames[j], n));
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
	int nr_dsos = p->sym ? symbolizer__dsos(p->sym, &dsos) : (dsos = p->dso_infos, p->nr_dso_infos);
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

/*
 * The Locations, and a Function per function of the profile (id = index +
 * 1), in its source file where its lines say which (pprof -lines prints
 * FILE:LINE from it), else in its dso.  0 or -ENOMEM.
 */
static int write_functions(struct pprof_w *w, int nr_dsos)
{
	const struct profile *p = w->p;
	const char **file = calloc(p->nr_funcs ? p->nr_funcs : 1, sizeof(*file));

	if (!file)
		return -ENOMEM;
	for (size_t l = 0; l < w->nr_locs; l++) {
		const struct ploc *lc = &w->locs[l];
		const struct pfunc *real = &p->funcs[lc->f[lc->nr - 1].func];
		struct sbuf line = {};

		field_varint(&w->m, 1, l + 1);
		if (real->dso_id >= 0 && real->dso_id < nr_dsos)
			field_varint(&w->m, 2, real->dso_id + 1);
		field_varint(&w->m, 3, lc->f[0].ip);
		for (__u32 i = 0; i < lc->nr; i++) {
			field_varint(&line, 1, lc->f[i].func + 1);
			if (line_of(lc->f[i].srcline))
				field_varint(&line, 2, line_of(lc->f[i].srcline));
			field_msg(&w->m, 4, &line);
			if (!file[lc->f[i].func])
				file[lc->f[i].func] = lc->f[i].srcline;
		}
		field_msg(&w->b, P_LOCATION, &w->m);
		sbuf_free(&line);
	}
	for (size_t f = 0; f < p->nr_funcs; f++) {
		/* An inlined function by its name: pprof marks inlining itself. */
		const char *name = p->funcs[f].inlined ? p->funcs[f].name : pfunc_text(&p->funcs[f]);
		const char *colon = file[f] ? strrchr(file[f], ':') : NULL;
		char src[512];

		/* A Python function's file is its code object's, whole. */
		if (p->funcs[f].src_file)
			snprintf(src, sizeof(src), "%s", p->funcs[f].src_file);
		else if (colon && colon > file[f])
			snprintf(src, sizeof(src), "%.*s", (int)(colon - file[f]), file[f]);
		else
			snprintf(src, sizeof(src), "%s", p->funcs[f].path ? p->funcs[f].path : "");
		field_varint(&w->m, 1, f + 1);
		field_varint(&w->m, 2, str_id(&w->t, name));
		field_varint(&w->m, 3, str_id(&w->t, name));
		field_varint(&w->m, 4, str_id(&w->t, src));
		field_msg(&w->b, P_FUNCTION, &w->m);
	}
	free(file);
	return 0;
}

int report_pprof(const struct profile *p, FILE *out)
{
	struct pprof_w w = { .p = p, .ns_per_sample = p->sample_freq ? 1000000000ull / p->sample_freq : 1000000 };
	const struct pd_meta *meta = p->rd ? &p->rd->meta : NULL;
	int e;

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
	e = w.err ?: write_mappings(&w);
	if (e < 0 || (e = write_functions(&w, e)))
		goto cleanup;
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
	free(w.locs);
	hindex_free(&w.loc_idx);
	return e;
}
