// SPDX-License-Identifier: GPL-2.0
/*
 * The perf-report-like table: rows keyed by the --sort keys, busiest first,
 * as a model (struct table: rows, each row's cells and chains) that report's
 * text and JSON and top's screens draw from.
 */
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
	const struct table_row *rows;
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
	const struct table_row *x = a, *y = b;

	if (x->period != y->period)
		return x->period < y->period ? 1 : -1;
	return (x->count < y->count) - (x->count > y->count);
}

/* Each stack into the row of its key (and, for -g, the row's list of stacks). */
static int group(struct table *t)
{
	const struct profile *p = t->p;
	struct hindex idx = {};
	size_t cap = 0;
	int e = 0;

	for (size_t i = 0; i < p->nr_stacks && !e; i++) {
		const struct pstack *s = &p->stacks[i];
		__u64 h = key_hash(p, s, &t->o);
		struct row_key k = { p, t->rows, s, &t->o };
		long ri = hindex_find(&idx, h, row_eq, &k);
		struct table_row *r;

		if (ri < 0) {
			if (array_reserve((void **)&t->rows, &cap, t->nr_rows, sizeof(*t->rows)) ||
			    hindex_add(&idx, h, t->nr_rows)) {
				e = -ENOMEM;
				break;
			}
			t->rows[t->nr_rows] = (struct table_row){ .rep = s, .leaf = leaf(p, s) };
			ri = t->nr_rows++;
		}
		r = &t->rows[ri];
		r->count += s->count;
		r->period += s->period;
		if (t->o.callgraph && array_reserve((void **)&r->stacks, &r->cap_stacks, r->nr_stacks, sizeof(*r->stacks)))
			e = -ENOMEM;
		else if (t->o.callgraph)
			r->stacks[r->nr_stacks++] = i;
	}
	hindex_free(&idx);
	return e;
}

/*
 * What key k shows for a row: its text (NULL where there is none: JSON's
 * null, the text table's "-"), and whether JSON writes it as a number.
 */
struct cell {
	const char *text;
	bool number;
};

static struct cell cell_of(const struct table *t, const struct table_row *r, enum sort_key k, char *buf, size_t len)
{
	const struct pstack *s = r->rep;
	struct cell c = { NULL, false };

	switch (k) {
	case SK_COMM: c.text = s->comm; break;
	/* Signed, as perf's pid_t: a thread sampled in its exit, its pid detached, is -1. */
	case SK_PID: snprintf(buf, len, "%d", (int)s->pid); c = (struct cell){ buf, true }; break;
	case SK_TID: snprintf(buf, len, "%d", (int)s->tid); c = (struct cell){ buf, true }; break;
	case SK_DSO: c.text = r->leaf->dso; break;
	case SK_SYM: c.text = pfunc_sym(r->leaf, buf, len); break;
	case SK_SRCLINE: c.text = srcline_of(s); break;
	/* NULL: samples outside any OTel context */
	case SK_TRACE: c.text = s->otel.trace_id; break;
	case SK_SPAN: c.text = s->otel.span_id; break;
	case SK_ATTR: c.text = attr_of(s, &t->o, buf, len); break;
	/* NULL: not known (on-CPU rows, sums of short blocks, files without wakers); a comm: any bytes */
	case SK_WAKER: c.text = s->waker; break;
	default: break;
	}
	return c;
}

/* The columns' widths, as perf report pads them (negative: left-aligned), and their heads. */
static const int key_width[SK_MAX] = { -16, 8, 8, -20, 0, -32, -16, -24, -16, -24 };
static const char *const key_head[SK_MAX] = { "Command", "Pid", "Tid", "Shared Object", "Symbol",
					      "Trace", "Span", "", "Waker", "Source:Line" };
/* JSON's field names. */
static const char *const key_json[SK_MAX] = { "comm", "pid", "tid", "dso", "sym", "trace_id", "span_id",
					      "attributes", "waker", "srcline" };

const char *table_cell_text(const struct table *t, const struct table_row *r, enum sort_key k, char *buf, size_t len,
			    bool *number)
{
	struct cell c = cell_of(t, r, k, buf, len);

	if (number)
		*number = c.number;
	return c.text;
}

void table_cell_json(const struct table *t, const struct table_row *r, enum sort_key k, struct sbuf *b)
{
	char buf[512];
	struct cell c = cell_of(t, r, k, buf, sizeof(buf));

	if (!c.text)
		sbuf_printf(b, "null");
	else if (c.number)
		sbuf_printf(b, "%s", c.text);
	else
		sbuf_json_str(b, c.text);
	if (k == SK_SYM)
		sbuf_printf(b, ",\"kernel\":%s", r->leaf->kernel ? "true" : "false");
}

const char *sort_key_head(const struct table_opts *o, enum sort_key k)
{
	return k == SK_ATTR ? o->attr : key_head[k];
}

const char *sort_key_json(enum sort_key k)
{
	return key_json[k];
}

/* The row's line, without its newline: the figures, then each key's column. */
static void row_line(const struct table *t, const struct table_row *r, FILE *out)
{
	fprintf(out, "  %7.2f%% %10llu", r->pct, (unsigned long long)r->count);
	for (int i = 0; i < t->o.nr_keys; i++) {
		enum sort_key k = t->o.keys[i];
		char buf[512], sym[512], esc[1024];
		struct cell c = cell_of(t, r, k, buf, sizeof(buf));
		const char *text = c.text;

		if (k == SK_SYM) {
			snprintf(sym, sizeof(sym), "[%c] %s", r->leaf->kernel ? 'k' : '.', c.text);
			text = sym;
		}
		/* Names are the recorded processes' to choose: escaped (text_name). */
		fprintf(out, "  %*s", key_width[k], text ? text_name(text, NULL, esc, sizeof(esc)) : "-");
	}
}

/* top's '/' looks at a row's line. */
static void print_line(const void *t, const void *r, FILE *out)
{
	row_line(t, r, out);
}

/* The rows whose text holds the filter, then the first max_rows of them; the others are freed. */
static void select_rows(struct table *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nr_rows; i++) {
		struct table_row *r = &t->rows[i];
		bool keep = !t->o.max_rows || n < t->o.max_rows;

		if (keep && t->o.filter && t->o.filter[0])
			keep = printed_holds(print_line, t, r, t->o.filter);
		if (!keep) {
			free(r->stacks);
			continue;
		}
		t->rows[n++] = *r;
	}
	t->nr_rows = n;
}

int table__build(struct table *t, const struct profile *p, const struct table_opts *o)
{
	int e;

	*t = (struct table){ .p = p, .o = *o };
	e = group(t);
	if (e) {
		table__free(t);
		return e;
	}
	sort_n(t->rows, t->nr_rows, sizeof(*t->rows), cmp_row);
	for (size_t i = 0; i < t->nr_rows; i++)
		t->rows[i].pct = profile_total_period(p) ? 100.0 * t->rows[i].period / profile_total_period(p) : 0;
	t->nr_all = t->nr_rows;
	select_rows(t);
	return 0;
}

void table__free(struct table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nr_rows; i++)
		free(t->rows[i].stacks);
	free(t->rows);
	t->rows = NULL;
	t->nr_rows = 0;
}

void table_print_columns(const struct table *t, FILE *out)
{
	fprintf(out, "# %8s %10s", "Overhead", "Samples");
	for (int i = 0; i < t->o.nr_keys; i++) {
		enum sort_key k = t->o.keys[i];

		fprintf(out, "  %*s", key_width[k], k == SK_ATTR ? t->o.attr : key_head[k]);
	}
	fputc('\n', out);
}

void table_print_header(const struct table *t, FILE *out)
{
	const struct profile *p = t->p;

	fprintf(out, "# Samples: %llu of event '%s'\n# Event count (approx.): %llu\n",
		(unsigned long long)profile_total_samples(p), p->event ? p->event : "?",
		(unsigned long long)profile_total_period(p));
	if (p->lost)
		fprintf(out, "# Lost samples: %llu\n", (unsigned long long)p->lost);
	fputs("#\n", out);
	table_print_columns(t, out);
	fputs("#\n", out);
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

int table_row_chains(const struct table *t, const struct table_row *r, struct table_chain **out, size_t *nr)
{
	struct table_chain *c = calloc(r->nr_stacks ? r->nr_stacks : 1, sizeof(*c));
	size_t n = 0;

	*out = c;
	*nr = 0;
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < r->nr_stacks; i++) {
		const struct pstack *s = &t->p->stacks[r->stacks[i]];
		size_t k;

		/* Same frames, another thread: one chain. */
		for (k = 0; k < n && !same_frames(c[k].s, s); k++)
			;
		if (k == n)
			c[n++] = (struct table_chain){ s, 0 };
		c[k].period += s->period; /* perf weighs chains by period: off-CPU ones by ns */
	}
	/* Stable: chains of equal weight stay in the order their stacks came. */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && c[j].period > c[j - 1].period; j--) {
			struct table_chain x = c[j];

			c[j] = c[j - 1];
			c[j - 1] = x;
		}
	*nr = n;
	return 0;
}

/* -g: the distinct call chains ending in this row's leaf, most frequent first, the first 8 in full. */
static void print_chains(const struct table *t, const struct table_row *r, FILE *out)
{
	const struct profile *p = t->p;
	struct table_chain *c;
	size_t n;

	if (table_row_chains(t, r, &c, &n)) {
		free(c);
		return;
	}
	/* Heaviest first: as perf's, --percent-limit hides the chains under it too. */
	while (n && 100.0 * c[n - 1].period < t->o.min_pct * profile_total_period(p))
		n--;
	fprintf(out, "            |\n");
	for (size_t i = 0; i < n && i < 8; i++) {
		const char *bar = i + 1 < SP_MIN(n, 8) ? "|" : " ";
		const struct pstack *s = c[i].s;
		char esc[1024];

		fprintf(out, "            %s--%.2f%%--%s%s\n", bar,
			100.0 * c[i].period / (profile_total_period(p) ? profile_total_period(p) : 1),
			text_name(p->funcs[s->frames[0].func].name, NULL, esc, sizeof(esc)),
			p->funcs[s->frames[0].func].inlined ? " (inlined)" : "");
		for (__u32 j = 1; j < s->nr && j < 64; j++)
			fprintf(out, "            %s          %s%s\n", bar,
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

void table_print_row(const struct table *t, const struct table_row *r, FILE *out)
{
	row_line(t, r, out);
	fputc('\n', out);
	if (t->o.callgraph && t->p->callchains)
		print_chains(t, r, out);
}

int table_print_row_json(const struct table *t, const struct table_row *r, FILE *out)
{
	struct sbuf b = {};
	int e;

	sbuf_printf(&b, "{\"overhead\":%.4f,\"samples\":%llu,\"period\":%llu", r->pct, (unsigned long long)r->count,
		    (unsigned long long)r->period);
	for (int i = 0; i < t->o.nr_keys; i++) {
		enum sort_key k = t->o.keys[i];

		sbuf_printf(&b, ",\"%s\":", key_json[k]);
		/* attr:NAME: {"NAME":value} */
		if (k == SK_ATTR) {
			sbuf_printf(&b, "{");
			sbuf_json_str(&b, t->o.attr);
			sbuf_printf(&b, ":");
		}
		table_cell_json(t, r, k, &b);
		if (k == SK_ATTR)
			sbuf_printf(&b, "}");
	}
	sbuf_printf(&b, "}\n");
	e = b.err;
	if (!e)
		fwrite(b.p, 1, b.len, out);
	sbuf_free(&b);
	return e;
}

int report_table(const struct profile *p, const struct table_opts *o, FILE *out)
{
	struct table t;
	int e = table__build(&t, p, o);

	if (e)
		return e;
	if (!o->json)
		table_print_header(&t, out);
	for (size_t i = 0; i < t.nr_rows; i++) {
		if (o->json)
			table_print_row_json(&t, &t.rows[i], out);
		else if (t.rows[i].pct >= o->min_pct)
			table_print_row(&t, &t.rows[i], out);
	}
	table__free(&t);
	return 0;
}

/*
 * One side of table__limit: the stacks of the rows under the limit out,
 * the others moved down; remap[i] is stack i's new index, or -1.
 */
static int limit_side(struct profile *p, bool off, const struct table_opts *o, __u32 *remap)
{
	struct table_opts to = *o;
	struct profile v = *p;
	struct pstack *st = off ? p->off_stacks : p->stacks;
	size_t n = off ? p->nr_off_stacks : p->nr_stacks, k = 0;
	__u64 gone_samples = 0, gone_period = 0;
	struct table t;
	int e;

	to.callgraph = true; /* the rows' stacks */
	to.filter = NULL;
	to.max_rows = 0;
	if (off) {
		v.stacks = p->off_stacks;
		v.nr_stacks = p->nr_off_stacks;
		v.period = p->off_period;
		v.filtered_period = p->off_filtered_period;
	}
	e = table__build(&t, &v, &to);
	if (e)
		return e;
	for (size_t i = 0; i < n; i++)
		remap[i] = 0;
	for (size_t i = 0; i < t.nr_rows; i++) {
		if (t.rows[i].pct >= o->min_pct)
			continue;
		for (size_t j = 0; j < t.rows[i].nr_stacks; j++)
			remap[t.rows[i].stacks[j]] = (__u32)-1;
		gone_samples += t.rows[i].count;
		gone_period += t.rows[i].period;
	}
	table__free(&t);
	for (size_t i = 0; i < n; i++) {
		if (remap[i] != (__u32)-1) {
			remap[i] = k;
			st[k++] = st[i];
			continue;
		}
		/* Split stacks borrow the frames of the stacks as sampled, which keep them. */
		if (off || !p->sampled)
			free(st[i].frames);
		if (off)
			free(st[i].waker_frames);
	}
	if (off) {
		p->nr_off_stacks = k;
		p->off_samples -= gone_samples;
		p->off_period -= gone_period;
		p->off_filtered_samples += gone_samples;
		p->off_filtered_period += gone_period;
	} else {
		p->nr_stacks = k;
		p->samples -= gone_samples;
		p->period -= gone_period;
		p->filtered_samples += gone_samples;
		p->filtered_period += gone_period;
	}
	return 0;
}

int table__limit(struct profile *p, const struct table_opts *o)
{
	__u32 *on, *off;
	size_t k = 0;
	int e;

	if (o->min_pct <= 0)
		return 0;
	on = malloc((p->nr_stacks + 1) * sizeof(*on));
	off = malloc((p->nr_off_stacks + 1) * sizeof(*off));
	e = on && off ? limit_side(p, false, o, on) ?: limit_side(p, true, o, off) : -ENOMEM;
	for (size_t i = 0; !e && i < p->nr_ticks; i++) {
		__u32 to = (p->ticks[i].off ? off : on)[p->ticks[i].stack];

		if (to == (__u32)-1)
			continue;
		p->ticks[k] = p->ticks[i];
		p->ticks[k++].stack = to;
	}
	if (!e)
		p->nr_ticks = k;
	free(on);
	free(off);
	return e;
}
