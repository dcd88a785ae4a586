// SPDX-License-Identifier: GPL-2.0
/* spanperf diff: two files' tables paired by their cells, and perf diff's text, JSON and graphs of them. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "hash.h"
#include "log.h"
#include "perf_data.h"
#include "profile_diff.h"
#include "sbuf.h"
#include "session.h"
#include "util.h"

/* A cell as perf diff shows it: "[k] name" for sym, "  PID:comm" for pid and tid, "-" for none. */
static const char *cell(const struct table *t, const struct table_row *r, enum sort_key k, char *buf, size_t len)
{
	char tmp[512];
	const char *s = table_cell_text(t, r, k, tmp, sizeof(tmp), NULL);

	if (k == SK_PID || k == SK_TID)
		snprintf(buf, len, "%7d:%s", (int)(k == SK_PID ? r->rep->pid : r->rep->tid), r->rep->comm);
	else if (k == SK_SYM)
		snprintf(buf, len, "[%c] %s", r->leaf->kernel ? 'k' : '.', s ? s : "-");
	else
		snprintf(buf, len, "%s", s ? s : "-");
	return buf;
}

/*
 * What pairs rows: their cells' texts, but that a function with no symbol
 * is one row per dso, whatever its address, as perf diff's sym sort
 * collapses unresolved entries (the row shows its heaviest address).
 */
static char *row_key(const struct table *t, const struct table_row *r)
{
	struct sbuf b = {};

	for (int i = 0; i < t->o.nr_keys; i++) {
		char buf[600];

		if (t->o.keys[i] == SK_SYM && r->leaf->unknown_addr)
			sbuf_printf(&b, "[%c] \x01\x1f", r->leaf->kernel ? 'k' : '.');
		else
			sbuf_printf(&b, "%s\x1f", cell(t, r, t->o.keys[i], buf, sizeof(buf)));
	}
	sbuf_zero(&b, 1);
	if (b.err) {
		sbuf_free(&b);
		return NULL;
	}
	return b.p;
}

static bool key_eq(const void *ctx, size_t idx)
{
	const void *const *c = ctx;
	const struct diff_row *rows = c[0];

	return !strcmp(rows[idx].key, c[1]);
}

/*
 * perf diff's delta-abs order: rows with a figure in NEW by the size of
 * their change, then those only in the baseline by their share there.
 */
static int cmp_diff(const void *a, const void *b)
{
	const struct diff_row *x = a, *y = b;
	double dx = fabs(x->delta), dy = fabs(y->delta);

	if (!x->cur != !y->cur)
		return x->cur ? -1 : 1;
	if (x->cur && dx != dy)
		return dx < dy ? 1 : -1;
	if (x->base_pct != y->base_pct)
		return x->base_pct < y->base_pct ? 1 : -1;
	if (x->new_pct != y->new_pct)
		return x->new_pct < y->new_pct ? 1 : -1;
	return strcmp(x->key, y->key);
}

struct pairing {
	struct profile_diff *d;
	struct hindex idx;
	size_t cap;
};

/* Table t's rows into the diff: each adds to the row of its key, made where there is none. */
static int add_rows(struct pairing *pr, const struct table *t, bool base)
{
	struct profile_diff *d = pr->d;

	for (size_t i = 0; i < t->nr_rows; i++) {
		const struct table_row *tr = &t->rows[i];
		char *key = row_key(t, tr);
		const void *ctx[2] = { d->rows, key };
		__u64 h = key ? hash_str(key) : 0;
		long k = key ? hindex_find(&pr->idx, h, key_eq, ctx) : -1;
		struct diff_row *r;

		if (!key)
			return -ENOMEM;
		if (k < 0) {
			if (array_reserve((void **)&d->rows, &pr->cap, d->nr_rows, sizeof(*d->rows)) ||
			    hindex_add(&pr->idx, h, d->nr_rows)) {
				free(key);
				return -ENOMEM;
			}
			d->rows[k = d->nr_rows++] = (struct diff_row){ .key = key };
		} else {
			free(key);
		}
		r = &d->rows[k];
		/* The rows come heaviest first: the first of a key is the one its cells show. */
		if (base && !r->base)
			r->base = tr;
		if (!base && !r->cur)
			r->cur = tr;
		*(base ? &r->base_samples : &r->new_samples) += tr->count;
		*(base ? &r->base_period : &r->new_period) += tr->period;
	}
	return 0;
}

int profile_diff__build(struct profile_diff *d, const struct profile *base, const struct profile *cur,
			const struct table_opts *o)
{
	struct table_opts to = *o;
	struct pairing pr = { .d = d };
	__u64 bt = profile_total_period(base), nt = profile_total_period(cur);
	int e;

	*d = (struct profile_diff){};
	to.callgraph = false;
	to.filter = NULL;
	to.max_rows = 0;
	e = table__build(&d->base, base, &to) ?: table__build(&d->cur, cur, &to);
	e = e ?: add_rows(&pr, &d->cur, false) ?: add_rows(&pr, &d->base, true);
	hindex_free(&pr.idx);
	for (size_t i = 0; !e && i < d->nr_rows; i++) {
		struct diff_row *r = &d->rows[i];

		r->base_pct = bt ? 100.0 * r->base_period / bt : 0;
		r->new_pct = nt ? 100.0 * r->new_period / nt : 0;
		r->delta = r->new_pct - r->base_pct;
	}
	if (!e)
		sort_n(d->rows, d->nr_rows, sizeof(*d->rows), cmp_diff);
	if (e)
		profile_diff__free(d);
	return e;
}

void profile_diff__free(struct profile_diff *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nr_rows; i++)
		free(d->rows[i].key);
	free(d->rows);
	table__free(&d->base);
	table__free(&d->cur);
	*d = (struct profile_diff){};
}

static bool shown(const struct profile_diff *d, const struct diff_row *r)
{
	return r->base_pct >= d->cur.o.min_pct || r->new_pct >= d->cur.o.min_pct;
}

/* The row's own table and row: NEW's where it has one. */
static const struct table *row_table(const struct profile_diff *d, const struct diff_row *r,
				     const struct table_row **tr)
{
	*tr = r->cur ? r->cur : r->base;
	return r->cur ? &d->cur : &d->base;
}

static const char *head(const struct table_opts *o, enum sort_key k)
{
	return k == SK_PID ? "Pid:Command" : k == SK_TID ? "Tid:Command" : sort_key_head(o, k);
}

static int print_json(const struct profile_diff *d, const struct diff_row *r, FILE *out)
{
	const struct table_row *tr;
	const struct table *t = row_table(d, r, &tr);
	struct sbuf b = {};
	int e;

	sbuf_printf(&b, "{");
	if (r->base)
		sbuf_printf(&b, "\"baseline\":%.4f,", r->base_pct);
	else
		sbuf_printf(&b, "\"baseline\":null,");
	if (r->cur)
		sbuf_printf(&b, "\"new\":%.4f,", r->new_pct);
	else
		sbuf_printf(&b, "\"new\":null,");
	sbuf_printf(&b, "\"delta\":%.4f,\"baseline_samples\":%llu,\"new_samples\":%llu,\"baseline_period\":%llu,"
			"\"new_period\":%llu",
		    r->delta, (unsigned long long)r->base_samples, (unsigned long long)r->new_samples,
		    (unsigned long long)r->base_period, (unsigned long long)r->new_period);
	for (int i = 0; i < t->o.nr_keys; i++) {
		enum sort_key k = t->o.keys[i];

		sbuf_printf(&b, ",\"%s\":", k == SK_ATTR ? t->o.attr : sort_key_json(k));
		table_cell_json(t, tr, k, &b);
	}
	sbuf_printf(&b, "}\n");
	e = b.err;
	if (!e)
		fwrite(b.p, 1, b.len, out);
	sbuf_free(&b);
	return e;
}

/*
 * perf diff pads every column to its widest cell (the head's at least),
 * but the symbol's when it is the last; pid and tid to the right.
 */
static void print_text(const struct profile_diff *d, FILE *out)
{
	const struct table_opts *o = &d->cur.o;
	int width[SK_MAX] = {};

	for (int i = 0; i < o->nr_keys; i++)
		width[i] = strlen(head(o, o->keys[i]));
	for (size_t j = 0; j < d->nr_rows; j++) {
		const struct table_row *tr;
		const struct table *t = row_table(d, &d->rows[j], &tr);

		for (int i = 0; shown(d, &d->rows[j]) && i < o->nr_keys; i++) {
			char buf[600], esc[1024];
			int l = strlen(text_name(cell(t, tr, o->keys[i], buf, sizeof(buf)), NULL, esc, sizeof(esc)));

			if (l > width[i])
				width[i] = l;
		}
	}
	fprintf(out, "# Event '%s'\n#\n# Baseline  Delta Abs", d->cur.p->event ? d->cur.p->event : "?");
	for (int i = 0; i < o->nr_keys; i++)
		fprintf(out, "  %*s", o->keys[i] == SK_PID || o->keys[i] == SK_TID ? width[i] : -width[i],
			head(o, o->keys[i]));
	fputs("\n# ........  .........", out);
	for (int i = 0; i < o->nr_keys; i++) {
		fputs("  ", out);
		for (int k = 0; k < width[i]; k++)
			fputc('.', out);
	}
	fputs("\n#\n", out);
	for (size_t j = 0; j < d->nr_rows; j++) {
		const struct diff_row *r = &d->rows[j];
		const struct table_row *tr;
		const struct table *t = row_table(d, r, &tr);
		char pct[32] = "", delta[32] = "";

		if (!shown(d, r))
			continue;
		if (r->base)
			snprintf(pct, sizeof(pct), "%.2f%%", r->base_pct);
		/* Only in the baseline: no figure in NEW to compare, as perf leaves it. */
		if (r->cur)
			snprintf(delta, sizeof(delta), "%+.2f%%", r->delta);
		fprintf(out, "  %8s  %9s", pct, delta);
		for (int i = 0; i < o->nr_keys; i++) {
			char buf[600], esc[1024];
			const char *s = text_name(cell(t, tr, o->keys[i], buf, sizeof(buf)), NULL, esc, sizeof(esc));

			enum sort_key k = o->keys[i];

			fprintf(out, "  %*s", k == SK_PID || k == SK_TID ? width[i] : i + 1 == o->nr_keys && k == SK_SYM ? 0 : -width[i], s);
		}
		fputc('\n', out);
	}
}

int profile_diff__print(const struct profile_diff *d, FILE *out)
{
	int e = 0;

	if (!d->cur.o.json) {
		print_text(d, out);
		return 0;
	}
	for (size_t i = 0; !e && i < d->nr_rows; i++)
		if (shown(d, &d->rows[i]))
			e = print_json(d, &d->rows[i], out);
	return e;
}

static void rate_of(const struct profile *p, char *buf, size_t len)
{
	const struct session *s = p->sess;

	if (p->sample_freq)
		snprintf(buf, len, "%llu Hz", (unsigned long long)p->sample_freq);
	else if (s && s->first_sampling >= 0)
		snprintf(buf, len, "a sample every %llu events",
			 (unsigned long long)p->rd->attrs[s->first_sampling].attr.sample_period);
	else
		snprintf(buf, len, "?");
}

bool profile_diff__unlike(const struct profile *base, const struct profile *cur, char *buf, size_t len)
{
	const char *h0 = base->rd->meta.hostname, *h1 = cur->rd->meta.hostname;
	const char *e0 = base->event ? base->event : "?", *e1 = cur->event ? cur->event : "?";
	char r0[64], r1[64];
	struct sbuf b = {};
	bool any;

	rate_of(base, r0, sizeof(r0));
	rate_of(cur, r1, sizeof(r1));
	if (h0 && h1 && strcmp(h0, h1))
		sbuf_printf(&b, ", hosts %s and %s", h0, h1);
	if (strcmp(r0, r1))
		sbuf_printf(&b, ", rates %s and %s", r0, r1);
	if (strcmp(e0, e1))
		sbuf_printf(&b, ", events %s and %s", e0, e1);
	sbuf_zero(&b, 1);
	any = !b.err && b.len > 1;
	snprintf(buf, len, "%s", any ? b.p + 2 : "");
	sbuf_free(&b);
	return any;
}

/* ---- the command ---- */

static int load(const char *path, const struct diff_opts *o, struct session **sess, struct profile **p)
{
	/* The table alone needs each sample's address only, as report's does. */
	struct profile_opts po = { .srclines = has_sort_key(&o->table, SK_SRCLINE),
				   .leaf_only = !o->flame && !o->folded };
	char err[512] = "";
	int e = session__open(sess, path, &(struct session_opts){}, err, sizeof(err));

	if (!e && (e = profile__new(p, *sess, &po)))
		set_errorf(err, sizeof(err), e, "cannot read %s: %s", path, strerror(-e));
	e = e ?: session__run(*sess, err, sizeof(err));
	if (!e && (e = profile__finish(*p)))
		set_errorf(err, sizeof(err), e, "out of memory reading %s", path);
	if (e)
		pr_err("%s", err[0] ? err : strerror(-e));
	return e;
}

static int write_flame(const struct diff_opts *o, const struct profile *base, const struct profile *cur)
{
	struct atomic_file af;
	char title[1200];
	FILE *f;
	int e = cur->samples ? atomic_file__open(&af, o->flame, 0644, false) : -ENODATA;

	snprintf(title, sizeof(title), "%s against %s: width %llu samples of the new; red grew, blue shrank (share)",
		 o->input, o->baseline, (unsigned long long)cur->samples);
	if (!e) {
		f = atomic_file__stdio(&af);
		e = f ? report_flamegraph_diff(base, cur, title, f) : -errno;
		if (!e)
			e = atomic_file__commit(&af);
		atomic_file__release(&af);
	}
	if (e)
		pr_err("cannot write --flamegraph '%s': %s", o->flame,
		       e == -ENODATA ? "the new file has no samples" : strerror(-e));
	return e;
}

int diff_run(const struct diff_opts *o)
{
	struct session *s0 = NULL, *s1 = NULL;
	struct profile *base = NULL, *cur = NULL;
	struct profile_diff d = {};
	char unlike[512];
	int e, ret = 1;

	if (load(o->baseline, o, &s0, &base) || load(o->input, o, &s1, &cur))
		goto cleanup;
	if (profile_diff__unlike(base, cur, unlike, sizeof(unlike)))
		pr_warn("%s and %s differ (%s): compared on each one's shares", o->baseline, o->input, unlike);
	if (o->flame && write_flame(o, base, cur))
		goto cleanup;
	if (o->folded)
		e = report_folded_diff(base, cur, stdout);
	else if (!o->flame)
		e = profile_diff__build(&d, base, cur, &o->table) ?: profile_diff__print(&d, stdout);
	else
		e = 0;
	if (e || fflush(stdout)) {
		pr_err("cannot write the diff: %s", strerror(e ? -e : errno));
		goto cleanup;
	}
	ret = 0;
cleanup:
	profile_diff__free(&d);
	profile__free(base);
	profile__free(cur);
	session__free(s0);
	session__free(s1);
	return ret;
}
