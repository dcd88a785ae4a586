// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "correlate.h"
#include "otel_ctx.h"
#include "otel_join.h"
#include "util.h"

/* Where a pooled string arrived in the pool: the order the fold groups by. */
enum { ORD_SPAN, ORD_TRACE, ORD_ATTRS, ORD_PREFIX, NR_ORD };

struct ospan {
	__u32 tid, pid;
	__u64 start, end;
	struct otel_ids ids;
	__u32 ord[NR_ORD];
	__u8 *raw_attrs; /* until otel_join__name_attrs: the process context comes at the end */
	__u16 raw_size;
};

struct osample {
	__u32 tid, stack;
	__u64 time, period;
	const char *prefix;
	__u32 ord[NR_ORD]; /* 0 for none: pool ids are kept + 1 */
	__s32 span;	   /* the otel span it ran in, -1 for none */
};

struct pspan {
	__u32 tid;
	__u64 start, end;
	const char *label;
	__u32 ord;
};

struct otel_join {
	struct strpool pool;
	struct ospan *spans;
	size_t nspans, cap_spans;
	struct osample *samples;
	size_t nsamples, cap_samples;
	struct pspan *pspans;
	size_t npspans, cap_pspans;
	bool prefixes;
};

void otel_hex(char *buf, const __u8 *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		buf[2 * i] = digits[p[i] >> 4];
		buf[2 * i + 1] = digits[p[i] & 15];
	}
	buf[2 * n] = 0;
}

int otel_attrs_each(const struct otel_pctx *pc, const __u8 *attrs, size_t n, otel_attr_fn fn, void *ctx)
{
	struct otel_ctx c = { .attrs_size = n, .attrs = attrs };
	struct otel_ctx_attr a;
	size_t pos = 0;
	char kbuf[16], vbuf[OTEL_ATTR_VALUE_MAX];
	int e;

	while (otel_ctx_next_attr(&c, &pos, &a))
		if ((e = fn(ctx, otel_pctx_key(pc, a.key_index, kbuf), otel_attr_value(a.val, a.len, vbuf))))
			return e;
	return 0;
}

int otel_attrs_split(const char *p, otel_attr_fn fn, void *ctx)
{
	char key[512], val[OTEL_ATTR_VALUE_MAX];
	int e;

	while (p && *p) {
		size_t kl = strcspn(p, "\x1f"), vl;

		if (p[kl] != '\x1f')
			return 0;
		vl = strcspn(p + kl + 1, "\x1e");
		snprintf(key, sizeof(key), "%.*s", (int)kl, p);
		snprintf(val, sizeof(val), "%.*s", (int)vl, p + kl + 1);
		if ((e = fn(ctx, key, val)))
			return e;
		p += kl + 1 + vl;
		p += *p == '\x1e';
	}
	return 0;
}

struct get_ctx {
	const char *key;
	char *buf;
	size_t len;
	bool found;
};

static int get_one(void *ctx, const char *key, const char *value)
{
	struct get_ctx *g = ctx;

	if (strcmp(key, g->key))
		return 0;
	snprintf(g->buf, g->len, "%s", value);
	g->found = true;
	return 1;
}

const char *otel_attrs_get(const char *pooled, const char *key, char *buf, size_t len)
{
	struct get_ctx g = { key, buf, len, false };

	otel_attrs_split(pooled, get_one, &g);
	return g.found ? buf : NULL;
}

/* The separators of the pooled form must not appear inside a key or value. */
static void add_clean(struct sbuf *b, const char *s)
{
	for (; *s; s++)
		sbuf_add(b, *s == '\x1e' || *s == '\x1f' ? "?" : s, 1);
}

static int pool_one(void *ctx, const char *key, const char *value)
{
	struct sbuf *b = ctx;

	add_clean(b, key);
	sbuf_add(b, "\x1f", 1);
	add_clean(b, value);
	return sbuf_add(b, "\x1e", 1);
}

int otel_attrs_intern(struct strpool *pool, const struct otel_pctx *pc, const __u8 *attrs, size_t n,
		      const char **out)
{
	struct sbuf b = {};

	*out = NULL;
	otel_attrs_each(pc, attrs, n, pool_one, &b);
	if (!b.len)
		return 0;
	sbuf_zero(&b, 1);
	*out = b.err ? NULL : strpool_intern(pool, b.p, NULL);
	sbuf_free(&b);
	return *out ? 0 : -ENOMEM;
}

struct otel_join *otel_join__new(void)
{
	return calloc(1, sizeof(struct otel_join));
}

/* s's pool id + 1 (s is in the pool). */
static size_t arrival(struct otel_join *j, const char *s)
{
	size_t id = 0;

	strpool_intern(&j->pool, s, &id);
	return id + 1;
}

int otel_join__add_span(struct otel_join *j, const struct span_rec *r)
{
	char trace[33], span[17];
	struct ospan *s;

	if (r->source != SP_SRC_OTEL || !(r->flags & SPAN_HAS_CONTEXT))
		return 0;
	if (array_reserve((void **)&j->spans, &j->cap_spans, j->nspans, sizeof(*j->spans)))
		return -ENOMEM;
	otel_hex(trace, r->trace_id, 16);
	otel_hex(span, r->span_id, 8);
	s = &j->spans[j->nspans];
	*s = (struct ospan){ .tid = r->tid, .pid = r->pid, .start = r->start_ns, .end = r->end_ns };
	s->ids.trace_id = strpool_intern(&j->pool, trace, NULL);
	s->ids.span_id = strpool_intern(&j->pool, span, NULL);
	if (!s->ids.trace_id || !s->ids.span_id)
		return -ENOMEM;
	s->ord[ORD_TRACE] = arrival(j, s->ids.trace_id);
	s->ord[ORD_SPAN] = arrival(j, s->ids.span_id);
	if (r->attrs_size) {
		s->raw_attrs = malloc(r->attrs_size);
		if (!s->raw_attrs)
			return -ENOMEM;
		memcpy(s->raw_attrs, r->attrs, r->attrs_size);
		s->raw_size = r->attrs_size;
	}
	j->nspans++;
	return 0;
}

int otel_join__name_attrs(struct otel_join *j, otel_pctx_fn pc_of, void *ctx)
{
	for (size_t i = 0; i < j->nspans; i++) {
		struct ospan *s = &j->spans[i];

		if (!s->raw_attrs)
			continue;
		if (otel_attrs_intern(&j->pool, pc_of(ctx, s->pid), s->raw_attrs, s->raw_size, &s->ids.attrs))
			return -ENOMEM;
		s->ord[ORD_ATTRS] = s->ids.attrs ? arrival(j, s->ids.attrs) : 0;
		free(s->raw_attrs);
		s->raw_attrs = NULL;
	}
	return 0;
}

int otel_join__add_sample(struct otel_join *j, __u32 tid, __u64 time, __u32 stack, __u64 period)
{
	if (array_reserve((void **)&j->samples, &j->cap_samples, j->nsamples, sizeof(*j->samples)))
		return -ENOMEM;
	j->samples[j->nsamples++] = (struct osample){ .tid = tid, .stack = stack, .time = time, .period = period,
						      .span = -1 };
	return 0;
}

bool otel_join__has_spans(const struct otel_join *j)
{
	return j && j->nspans;
}

void otel_join__want_prefixes(struct otel_join *j)
{
	j->prefixes = true;
}

int otel_join__add_prefix_span(struct otel_join *j, __u32 tid, __u64 start, __u64 end, const char *label)
{
	j->prefixes = true;
	if (array_reserve((void **)&j->pspans, &j->cap_pspans, j->npspans, sizeof(*j->pspans)) ||
	    !(label = strpool_intern(&j->pool, label, NULL)))
		return -ENOMEM;
	j->pspans[j->npspans++] = (struct pspan){ tid, start, end, label, arrival(j, label) };
	return 0;
}

bool otel_join__has_prefixes(const struct otel_join *j)
{
	return j && j->prefixes;
}

/* Outer spans first: by thread, then start, the longer of two that start together first. */
static int cmp_pspan(const void *a, const void *b)
{
	const struct pspan *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->end < y->end) - (x->end > y->end);
}

/* Each sample's chain of span labels, outermost first; those in none get SPAN_PREFIX_NONE. */
static int chain_prefixes(struct otel_join *j, struct corr_sample *cs, struct corr_span *sp)
{
	struct sbuf b = {};
	const char *none = strpool_intern(&j->pool, SPAN_PREFIX_NONE, NULL);
	int err = -ENOMEM;

	if (!none)
		return -ENOMEM;
	sort_n(j->pspans, j->npspans, sizeof(*j->pspans), cmp_pspan);
	for (size_t i = 0; i < j->npspans; i++)
		sp[i] = (struct corr_span){ .tid = j->pspans[i].tid, .start = j->pspans[i].start, .end = j->pspans[i].end };
	/* The same join report --spans makes, on the same (tid, time) keys. */
	correlate(cs, j->nsamples, sp, j->npspans);
	for (size_t i = 0; i < j->npspans; i++)
		for (size_t k = sp[i].first; k < sp[i].first + sp[i].count; k++) {
			struct osample *s = &j->samples[cs[k].idx];

			if (!s->prefix) {
				s->prefix = j->pspans[i].label;
				s->ord[ORD_PREFIX] = j->pspans[i].ord;
				continue;
			}
			b.len = 0;
			sbuf_printf(&b, "%s;%s", s->prefix, j->pspans[i].label);
			sbuf_zero(&b, 1);
			if (b.err || !(s->prefix = strpool_intern(&j->pool, b.p, NULL)))
				goto cleanup;
			s->ord[ORD_PREFIX] = arrival(j, s->prefix);
		}
	for (size_t i = 0, none_ord = arrival(j, none); i < j->nsamples; i++)
		if (!j->samples[i].prefix) {
			j->samples[i].prefix = none;
			j->samples[i].ord[ORD_PREFIX] = none_ord;
		}
	err = 0;
cleanup:
	sbuf_free(&b);
	return err;
}

static int cmp_fold(const void *a, const void *b)
{
	const struct osample *x = a, *y = b;

	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	/* Pooled strings, in the order they arrived: not their addresses, which depend on the heap. */
	for (int k = 0; k < NR_ORD; k++)
		if (x->ord[k] != y->ord[k])
			return x->ord[k] < y->ord[k] ? -1 : 1;
	return 0;
}

int otel_join__fold(struct otel_join *j, struct otel_fold **out, size_t *n)
{
	struct corr_sample *cs = malloc((j->nsamples ? j->nsamples : 1) * sizeof(*cs));
	size_t nsp = j->nspans > j->npspans ? j->nspans : j->npspans;
	struct corr_span *sp = malloc((nsp ? nsp : 1) * sizeof(*sp));
	struct otel_fold *f = NULL;
	size_t nf = 0, cap = 0;
	int err = -ENOMEM;

	*out = NULL;
	*n = 0;
	if (!cs || !sp)
		goto cleanup;
	for (size_t i = 0; i < j->nsamples; i++)
		cs[i] = (struct corr_sample){ j->samples[i].tid, (__u32)i, j->samples[i].time };
	for (size_t i = 0; i < j->nspans; i++)
		sp[i] = (struct corr_span){ .tid = j->spans[i].tid, .start = j->spans[i].start, .end = j->spans[i].end };
	correlate(cs, j->nsamples, sp, j->nspans);
	/* A thread's otel spans never overlap: each sample takes at most one. */
	for (size_t i = 0; i < j->nspans; i++)
		for (size_t k = sp[i].first; k < sp[i].first + sp[i].count; k++) {
			struct osample *s = &j->samples[cs[k].idx];

			s->span = i;
			memcpy(s->ord, j->spans[i].ord, ORD_PREFIX * sizeof(s->ord[0]));
		}
	if (j->prefixes && chain_prefixes(j, cs, sp))
		goto cleanup;
	sort_n(j->samples, j->nsamples, sizeof(*j->samples), cmp_fold);
	for (size_t i = 0; i < j->nsamples; i++) {
		const struct osample *s = &j->samples[i];

		if (!nf || cmp_fold(s, &j->samples[i - 1])) {
			if (array_reserve((void **)&f, &cap, nf, sizeof(*f)))
				goto cleanup;
			f[nf++] = (struct otel_fold){ .stack = s->stack, .prefix = s->prefix };
			if (s->span >= 0)
				f[nf - 1].ids = j->spans[s->span].ids;
		}
		f[nf - 1].count++;
		f[nf - 1].period += s->period;
	}
	*out = f;
	*n = nf;
	f = NULL;
	err = 0;
cleanup:
	free(f);
	free(cs);
	free(sp);
	return err;
}

void otel_join__free(struct otel_join *j)
{
	if (!j)
		return;
	strpool_free(&j->pool);
	for (size_t i = 0; i < j->nspans; i++)
		free(j->spans[i].raw_attrs);
	free(j->spans);
	free(j->samples);
	free(j->pspans);
	free(j);
}
