// SPDX-License-Identifier: GPL-2.0
/* The perf-report-like table: rows keyed by the --sort keys, busiest first. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "report_out.h"
#include "sbuf.h"
#include "util.h"

static const char *const key_names[SK_MAX] = { "comm", "pid", "tid", "dso", "sym", "trace", "span", "attr",
						"waker", "srcline" };

bool has_sort_key(const struct table_opts *o, enum sort_key k)
{
	for (int i = 0; i < o->nr_keys; i++)
		if (o->keys[i] == k)
			return true;
	return false;
}

/*
 * The sampled function: the first frame not inlined, as perf report's sym
 * column shows it (the inlined ones are the chain's); frames[0] otherwise.
 */
static const struct pfunc *leaf(const struct profile *p, const struct pstack *s)
{
	for (__u32 i = 0; i < s->nr; i++)
		if (!p->funcs[s->frames[i].func].inlined)
			return &p->funcs[s->frames[i].func];
	return &p->funcs[s->frames[0].func];
}

static const char *srcline_of(const struct pstack *s)
{
	return s->nr && s->frames[0].srcline ? s->frames[0].srcline : "??:0";
}

int parse_sort_keys(const char *s, struct table_opts *o)
{
	const char *p = s;

	o->nr_keys = 0;
	while (*p) {
		size_t l = strcspn(p, ",");
		int k;

		for (k = 0; k < SK_MAX; k++)
			if (strlen(key_names[k]) == l && !strncmp(p, key_names[k], l))
				break;
		/* attr:NAME: samples by the value their span's attribute NAME had. */
		if (l > 5 && !strncmp(p, "attr:", 5) && l - 5 < sizeof(o->attr)) {
			k = SK_ATTR;
			snprintf(o->attr, sizeof(o->attr), "%.*s", (int)(l - 5), p + 5);
		} else if (k == SK_ATTR) {
			return -EINVAL;
		}
		if (k == SK_MAX || o->nr_keys == SK_MAX)
			return -EINVAL;
		for (int i = 0; i < o->nr_keys; i++)
			if (o->keys[i] == (enum sort_key)k)
				return -EINVAL;
		o->keys[o->nr_keys++] = k;
		p += l;
		if (*p == ',' && !*++p)
			return -EINVAL;
	}
	return o->nr_keys ? 0 : -EINVAL;
}

struct row {
	const struct pstack *rep; /* a stack with this row's key, to print from */
	__u64 count, period;
	size_t *stacks; /* for -g: the stacks of this row */
	size_t nr_stacks, cap_stacks;
};

/*
 * One sym row, as perf report's sort__sym_cmp makes it: two functions of
 * different dsos (another build of a program, a container's copy of a
 * library) are one row when the dsos' short names and the symbols' extents
 * agree, and two unnamed frames when their (dso-relative) addresses do.  So
 * a row's count is perf's even where two dsos print alike.
 */
static bool same_sym(const struct pfunc *a, const struct pfunc *b)
{
	if (a->unknown_addr || b->unknown_addr)
		return a->unknown_addr == b->unknown_addr;
	return a->start == b->start && a->end == b->end && !strcmp(a->dso, b->dso);
}

static __u64 sym_key_hash(const struct pfunc *f)
{
	if (f->unknown_addr)
		return f->unknown_addr;
	return hash_mix(hash_mix(hash_str(f->dso), f->start), f->end);
}

/* The value of the sort attribute in s's OTel context, or NULL. */
static const char *attr_of(const struct pstack *s, const struct table_opts *o, char *buf, size_t len)
{
	return otel_attrs_get(s->otel.attrs, o->attr, buf, len);
}

static __u64 key_hash(const struct profile *p, const struct pstack *s, const struct table_opts *o)
{
	__u64 h = 0;
	char buf[OTEL_ATTR_VALUE_MAX];
	const char *a;

	for (int i = 0; i < o->nr_keys; i++) {
		__u64 v = 0;

		switch (o->keys[i]) {
		case SK_COMM: v = (uintptr_t)s->comm; break;
		case SK_PID: v = s->pid; break;
		case SK_TID: v = s->tid; break;
		/* By content, as same_key compares it. */
		case SK_DSO: v = hash_str(leaf(p, s)->dso); break;
		case SK_SYM: v = sym_key_hash(leaf(p, s)); break;
		case SK_SRCLINE: v = hash_str(srcline_of(s)); break;
		/* Pooled strings: one pointer per id. */
		case SK_TRACE: v = (uintptr_t)s->otel.trace_id; break;
		case SK_SPAN: v = (uintptr_t)s->otel.span_id; break;
		case SK_ATTR: a = attr_of(s, o, buf, sizeof(buf)); v = a ? hash_str(a) : 0; break;
		case SK_WAKER: v = (uintptr_t)s->waker; break; /* pooled: one pointer per name */
		default: break;
		}
		h = hash_mix(h, v);
	}
	return h;
}

static bool same_key(const struct profile *p, const struct pstack *a, const struct pstack *b,
		     const struct table_opts *o)
{
	for (int i = 0; i < o->nr_keys; i++) {
		switch (o->keys[i]) {
		case SK_COMM: if (a->comm != b->comm) return false; break;
		case SK_PID: if (a->pid != b->pid) return false; break;
		case SK_TID: if (a->tid != b->tid) return false; break;
		case SK_DSO:
			if (strcmp(leaf(p, a)->dso, leaf(p, b)->dso))
				return false;
			break;
		case SK_SYM:
			if (leaf(p, a) != leaf(p, b) && !same_sym(leaf(p, a), leaf(p, b)))
				return false;
			break;
		case SK_SRCLINE:
			if (strcmp(srcline_of(a), srcline_of(b)))
				return false;
			break;
		case SK_TRACE: if (a->otel.trace_id != b->otel.trace_id) return false; break;
		case SK_SPAN: if (a->otel.span_id != b->otel.span_id) return false; break;
		case SK_WAKER: if (a->waker != b->waker) return false; break;
		case SK_ATTR: {
			char x[OTEL_ATTR_VALUE_MAX], y[OTEL_ATTR_VALUE_MAX];
			const char *va = attr_of(a, o, x, sizeof(x)), *vb = attr_of(b, o, y, sizeof(y));

			if (!va != !vb || (va && strcmp(va, vb)))
				return false;
			break;
		}
		default: break;
		}
	}
	return true;
}

struct row_key {
	const struct profile *p;
	const struct row *rows;
	const struct pstack *s;
	const struct table_opts *o;
};

static bool row_eq(const void *ctx, size_t idx)
{
	const struct row_key *k = ctx;

	return same_key(k->p, k->rows[idx].rep, k->s, k->o);
}

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->period != y->period)
		return x->period < y->period ? 1 : -1;
	return (x->count < y->count) - (x->count > y->count);
}

static const char *sym_text(const struct pfunc *f, char *buf, size_t len)
{
	char addr[32];

	snprintf(buf, len, "[%c] %s", f->kernel ? 'k' : '.', pfunc_sym(f, addr, sizeof(addr)));
	return buf;
}

static bool same_frames(const struct pstack *a, const struct pstack *b)
{
	if (a->nr != b->nr)
		return false;
	for (__u32 j = 0; j < a->nr; j++)
		if (a->frames[j].func != b->frames[j].func)
			return false;
	return true;
}

/* -g: the distinct call chains ending in this row's leaf, most frequent first. */
static void print_chains(const struct profile *p, const struct row *r, FILE *out)
{
	struct chain {
		const struct pstack *s;
		__u64 count;
	} *c = calloc(r->nr_stacks ? r->nr_stacks : 1, sizeof(*c));
	size_t n = 0;

	if (!c)
		return;
	for (size_t i = 0; i < r->nr_stacks; i++) {
		const struct pstack *s = &p->stacks[r->stacks[i]];
		size_t k;

		/* Same frames, another thread: one chain. */
		for (k = 0; k < n && !same_frames(c[k].s, s); k++)
			;
		if (k == n)
			c[n++] = (struct chain){ s, 0 };
		c[k].count += s->period; /* perf weighs chains by period: off-CPU ones by ns */
	}
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && c[j].count > c[j - 1].count; j--) {
			struct chain t = c[j];

			c[j] = c[j - 1];
			c[j - 1] = t;
		}
	fprintf(out, "            |\n");
	for (size_t i = 0; i < n && i < 8; i++) {
		const struct pstack *s = c[i].s;

		char esc[1024];

		fprintf(out, "            %s--%.2f%%--%s%s\n", i + 1 < SP_MIN(n, 8) ? "|" : " ",
			100.0 * c[i].count / (p->period ? p->period : 1),
			text_name(p->funcs[s->frames[0].func].name, NULL, esc, sizeof(esc)),
			p->funcs[s->frames[0].func].inlined ? " (inlined)" : "");
		for (__u32 j = 1; j < s->nr && j < 64; j++)
			fprintf(out, "            %s          %s%s\n", i + 1 < SP_MIN(n, 8) ? "|" : " ",
				text_name(p->funcs[s->frames[j].func].name, NULL, esc, sizeof(esc)),
				p->funcs[s->frames[j].func].inlined ? " (inlined)" : "");
		if (i + 1 < SP_MIN(n, 8))
			fprintf(out, "            |\n");
	}
	if (n > 8)
		fprintf(out, "             (%zu more call chains)\n", n - 8);
	fputc('\n', out);
	free(c);
}

static void json_id(struct sbuf *b, const char *key, const char *id)
{
	sbuf_printf(b, ",\"%s\":", key);
	if (id)
		sbuf_printf(b, "\"%s\"", id);
	else
		sbuf_printf(b, "null");
}

int report_table(const struct profile *p, const struct table_opts *o, FILE *out)
{
	struct hindex idx = {};
	struct row *rows = NULL;
	size_t nr = 0, cap = 0;
	int e = 0;

	for (size_t i = 0; i < p->nr_stacks; i++) {
		const struct pstack *s = &p->stacks[i];
		__u64 h = key_hash(p, s, o);
		struct row_key k = { p, rows, s, o };
		long ri = hindex_find(&idx, h, row_eq, &k);
		struct row *r;

		if (ri < 0) {
			if (array_reserve((void **)&rows, &cap, nr, sizeof(*rows)) || hindex_add(&idx, h, nr)) {
				e = -ENOMEM;
				goto cleanup;
			}
			rows[nr] = (struct row){ .rep = s };
			ri = nr++;
		}
		r = &rows[ri];
		r->count += s->count;
		r->period += s->period;
		if (o->callgraph) {
			if (r->nr_stacks == r->cap_stacks) {
				size_t *n = realloc(r->stacks, (r->cap_stacks = r->cap_stacks ? 2 * r->cap_stacks : 8) * sizeof(*n));

				if (!n) {
					e = -ENOMEM;
					goto cleanup;
				}
				r->stacks = n;
			}
			r->stacks[r->nr_stacks++] = i;
		}
	}
	sort_n(rows, nr, sizeof(*rows), cmp_row);
	if (!o->json) {
		fprintf(out, "# Samples: %llu of event '%s'\n# Event count (approx.): %llu\n",
			(unsigned long long)p->samples, p->event ? p->event : "?", (unsigned long long)p->period);
		if (p->lost)
			fprintf(out, "# Lost samples: %llu\n", (unsigned long long)p->lost);
		fprintf(out, "#\n# %8s %10s", "Overhead", "Samples");
		for (int k = 0; k < o->nr_keys; k++) {
			static const char *const hdr[SK_MAX] = { "Command", "Pid", "Tid", "Shared Object", "Symbol",
								 "Trace", "Span", "", "Waker", "Source:Line" };
			static const int w[SK_MAX] = { -16, 8, 8, -20, 0, -32, -16, -24, -16, -24 };

			fprintf(out, "  %*s", w[o->keys[k]], o->keys[k] == SK_ATTR ? o->attr : hdr[o->keys[k]]);
		}
		fprintf(out, "\n#\n");
	}
	for (size_t i = 0; i < nr; i++) {
		const struct row *r = &rows[i];
		const struct pfunc *f = leaf(p, r->rep);
		double pct = p->period ? 100.0 * r->period / p->period : 0;
		char sym[512];

		if (o->json) {
			struct sbuf b = {};

			sbuf_printf(&b, "{\"overhead\":%.4f,\"samples\":%llu,\"period\":%llu", pct,
				    (unsigned long long)r->count, (unsigned long long)r->period);
			for (int k = 0; k < o->nr_keys; k++) {
				switch (o->keys[k]) {
				case SK_COMM: sbuf_printf(&b, ",\"comm\":"); sbuf_json_str(&b, r->rep->comm); break;
				/* Signed, as perf's pid_t: a thread sampled in its exit, its pid detached, is -1. */
				case SK_PID: sbuf_printf(&b, ",\"pid\":%d", (int)r->rep->pid); break;
				case SK_TID: sbuf_printf(&b, ",\"tid\":%d", (int)r->rep->tid); break;
				case SK_DSO: sbuf_printf(&b, ",\"dso\":"); sbuf_json_str(&b, f->dso); break;
				case SK_SRCLINE: sbuf_printf(&b, ",\"srcline\":"); sbuf_json_str(&b, srcline_of(r->rep)); break;
				case SK_SYM:
					sbuf_printf(&b, ",\"sym\":");
					sbuf_json_str(&b, pfunc_sym(f, sym, sizeof(sym)));
					sbuf_printf(&b, ",\"kernel\":%s", f->kernel ? "true" : "false");
					break;
				/* null: samples outside any OTel context */
				case SK_TRACE: json_id(&b, "trace_id", r->rep->otel.trace_id); break;
				case SK_SPAN: json_id(&b, "span_id", r->rep->otel.span_id); break;
				/* null: not known (on-CPU rows, sums of short blocks, files without wakers) */
				case SK_WAKER:
					sbuf_printf(&b, ",\"waker\":");
					if (r->rep->waker)
						sbuf_json_str(&b, r->rep->waker); /* a comm: any bytes another process chose */
					else
						sbuf_printf(&b, "null");
					break;
				case SK_ATTR: {
					const char *v = attr_of(r->rep, o, sym, sizeof(sym));

					sbuf_printf(&b, ",\"attributes\":{");
					sbuf_json_str(&b, o->attr);
					sbuf_printf(&b, ":");
					if (v)
						sbuf_json_str(&b, v);
					else
						sbuf_printf(&b, "null");
					sbuf_printf(&b, "}");
					break;
				}
				default: break;
				}
			}
			sbuf_printf(&b, "}\n");
			if (!b.err)
				fwrite(b.p, 1, b.len, out);
			sbuf_free(&b);
			continue;
		}
		if (pct < o->min_pct)
			continue;
		fprintf(out, "  %7.2f%% %10llu", pct, (unsigned long long)r->count);
		for (int k = 0; k < o->nr_keys; k++) {
			char esc[1024];

			/* Names are the recorded processes' to choose: escaped (text_name). */
			switch (o->keys[k]) {
			case SK_COMM: fprintf(out, "  %-16s", text_name(r->rep->comm, NULL, esc, sizeof(esc))); break;
			case SK_PID: fprintf(out, "  %8d", (int)r->rep->pid); break;
			case SK_TID: fprintf(out, "  %8d", (int)r->rep->tid); break;
			case SK_DSO: fprintf(out, "  %-20s", text_name(f->dso, NULL, esc, sizeof(esc))); break;
			case SK_SYM: fprintf(out, "  %s", text_name(sym_text(f, sym, sizeof(sym)), NULL, esc, sizeof(esc))); break;
			case SK_SRCLINE: fprintf(out, "  %-24s", text_name(srcline_of(r->rep), NULL, esc, sizeof(esc))); break;
			case SK_TRACE: fprintf(out, "  %-32s", text_name(r->rep->otel.trace_id ?: "-", NULL, esc, sizeof(esc))); break;
			case SK_SPAN: fprintf(out, "  %-16s", text_name(r->rep->otel.span_id ?: "-", NULL, esc, sizeof(esc))); break;
			case SK_WAKER: fprintf(out, "  %-16s", text_name(r->rep->waker ?: "-", NULL, esc, sizeof(esc))); break;
			case SK_ATTR: {
				const char *v = attr_of(r->rep, o, sym, sizeof(sym));

				fprintf(out, "  %-24s", v ? text_name(v, NULL, esc, sizeof(esc)) : "-");
				break;
			}
			default: break;
			}
		}
		fputc('\n', out);
		if (o->callgraph && p->callchains)
			print_chains(p, r, out);
	}
cleanup:
	for (size_t i = 0; i < nr; i++)
		free(rows[i].stacks);
	free(rows);
	hindex_free(&idx);
	return e;
}
