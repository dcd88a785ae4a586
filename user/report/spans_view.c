// SPDX-License-Identifier: GPL-2.0
/*
 * The table's figures of a view's rows: per span name its count,
 * percentiles, samples, counters, time off CPU, split and top functions,
 * and per value of each OTel attribute its count, percentiles and samples.
 * A function of the rows alone, so that the table prints and never counts.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sbuf.h"
#include "spans_view.h"
#include "util.h"

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return (x > y) - (x < y);
}

/* The p-th percentile of n sorted values, nearest rank; 0 for none. */
static __u64 pct(const __u64 *sorted, size_t n, double p)
{
	size_t i = (size_t)(p * (n - 1) + 0.5);

	return n ? sorted[i < n ? i : n - 1] : 0;
}

int spans_func_cmp(const void *a, const void *b)
{
	const struct spans_func *x = a, *y = b;

	if (x->n != y->n)
		return x->n < y->n ? 1 : -1;
	return strcmp(x->name, y->name);
}

/*
 * The rows of each kind, in order: kind k's rows are
 * order[at[k] .. at[k + 1]), a bucket each, not a pass over all rows per
 * kind.  0, or -ENOMEM with nothing allocated.
 */
static int order_by_kind(const struct spans_row *row, size_t n, size_t nr_kinds, size_t **at_out, size_t **order_out)
{
	size_t *at = calloc(nr_kinds + 1, sizeof(*at));
	size_t *fill = calloc(nr_kinds + 1, sizeof(*fill));
	size_t *order = malloc((n ? n : 1) * sizeof(*order));

	if (!at || !fill || !order) {
		free(at);
		free(fill);
		free(order);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if (row[i].kind < nr_kinds)
			at[row[i].kind + 1]++;
	for (size_t k = 0; k < nr_kinds; k++)
		at[k + 1] += at[k];
	for (size_t i = 0; i < n; i++)
		if (row[i].kind < nr_kinds)
			order[at[row[i].kind] + fill[row[i].kind]++] = i;
	free(fill);
	*at_out = at;
	*order_out = order;
	return 0;
}

/* A row's leaf functions into the kind's, by the symbolizer's pointer (one per symbol). */
static int add_funcs(struct spans_kind *kd, size_t *cap, const struct spans_row *sp)
{
	for (size_t t = 0; t < sp->nr_top; t++) {
		size_t k;

		for (k = 0; k < kd->nr_top && kd->top[k].name != sp->top[t].name; k++)
			;
		if (k == kd->nr_top) {
			if (array_reserve((void **)&kd->top, cap, kd->nr_top, sizeof(*kd->top)))
				return -ENOMEM;
			kd->top[kd->nr_top++] = (struct spans_func){ sp->top[t].name, 0 };
		}
		kd->top[k].n += sp->top[t].n;
	}
	return 0;
}

/* One kind from its rows; dur has room for them all. */
static int sum_kind(struct spans_kind *kd, const struct spans_row *row, const size_t *order, size_t n, __u64 *dur,
		    double window_s)
{
	size_t cap = 0;

	for (size_t o = 0; o < n; o++) {
		const struct spans_row *sp = &row[order[o]];

		dur[kd->count++] = sp->end - sp->start;
		kd->samples += sp->samples;
		kd->off_ns += sp->off_ns;
		if (!kd->blocked_in)
			kd->blocked_in = sp->blocked_in;
		kd->source = sp->source;
		if (sp->has_split) {
			kd->split.on += sp->split.on;
			kd->split.runq += sp->split.runq;
			kd->split.sleep += sp->split.sleep;
			kd->split.blocked += sp->split.blocked;
		}
		for (int k = 0; k < SP_MAX_COUNTERS; k++)
			kd->ctr_sum[k] += sp->counters[k];
		if (add_funcs(kd, &cap, sp))
			return -ENOMEM;
	}
	sort_n(dur, kd->count, sizeof(*dur), cmp_u64);
	sort_n(kd->top, kd->nr_top, sizeof(*kd->top), spans_func_cmp);
	kd->p50 = pct(dur, kd->count, 0.5);
	kd->p99 = pct(dur, kd->count, 0.99);
	kd->max = kd->count ? dur[kd->count - 1] : 0;
	if (window_s > 0)
		kd->rate = kd->count / window_s;
	return 0;
}

static int build_kinds(struct spans_table *t, const struct spans_row *row, size_t n, const char *const *names,
		       size_t nr_names, double window_s)
{
	size_t *at = NULL, *order = NULL;
	__u64 *dur = malloc((n ? n : 1) * sizeof(*dur));
	int e = -ENOMEM;

	t->kind = calloc(nr_names ? nr_names : 1, sizeof(*t->kind));
	if (!dur || !t->kind || order_by_kind(row, n, nr_names, &at, &order))
		goto cleanup;
	t->nr_kinds = nr_names;
	for (size_t k = 0; k < nr_names; k++) {
		t->kind[k].name = names[k];
		t->kind[k].source = span_source_name(0);
		if (sum_kind(&t->kind[k], row, order + at[k], at[k + 1] - at[k], dur, window_s))
			goto cleanup;
	}
	e = 0;
cleanup:
	free(dur);
	free(at);
	free(order);
	return e;
}

/* One attribute value's spans, while they are gathered. */
struct agroup {
	const char *pair; /* "key\x1fvalue", in the table's pool */
	__u64 *dur;
	size_t n, cap, samples;
};

/* Keys in order, then the busiest values first. */
static int cmp_agroup(const void *a, const void *b)
{
	const struct agroup *x = a, *y = b;
	size_t kx = strcspn(x->pair, "\x1f"), ky = strcspn(y->pair, "\x1f");
	int c = strncmp(x->pair, y->pair, kx < ky ? kx : ky);

	if (c || kx != ky)
		return c ? c : kx < ky ? -1 : 1;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return strcmp(x->pair, y->pair);
}

static int add_attr(struct spans_table *t, struct agroup **g, size_t *cap, const struct spans_row *sp,
		    const struct spans_attr *a)
{
	struct sbuf b = {};
	struct agroup *x;
	size_t id;

	sbuf_printf(&b, "%s\x1f%s", a->key, a->value);
	if (b.err || !strpool_intern(&t->pairs, b.p, &id)) {
		sbuf_free(&b);
		return -ENOMEM;
	}
	sbuf_free(&b);
	if (id == t->nr_groups) {
		if (array_reserve((void **)g, cap, t->nr_groups, sizeof(**g)))
			return -ENOMEM;
		(*g)[t->nr_groups++] = (struct agroup){ .pair = t->pairs.str[id] };
	}
	x = &(*g)[id];
	if (array_reserve((void **)&x->dur, &x->cap, x->n, sizeof(*x->dur)))
		return -ENOMEM;
	x->dur[x->n++] = sp->end - sp->start;
	x->samples += sp->samples;
	return 0;
}

/* The spans by the value of each of their attributes (http.route, say): which values are slow, which busy. */
static int build_groups(struct spans_table *t, const struct spans_row *row, size_t n)
{
	struct agroup *g = NULL;
	size_t cap = 0;
	int e = 0;

	for (size_t i = 0; i < n && !e; i++)
		for (size_t a = 0; a < row[i].nr_attr && !e; a++)
			e = add_attr(t, &g, &cap, &row[i], &row[i].attr[a]);
	if (!e && t->nr_groups) {
		t->group = calloc(t->nr_groups, sizeof(*t->group));
		e = t->group ? 0 : -ENOMEM;
	}
	if (!e) {
		sort_n(g, t->nr_groups, sizeof(*g), cmp_agroup);
		for (size_t i = 0; i < t->nr_groups; i++) {
			int kl = (int)strcspn(g[i].pair, "\x1f");

			sort_n(g[i].dur, g[i].n, sizeof(*g[i].dur), cmp_u64);
			t->group[i] = (struct spans_attr_group){ .key = g[i].pair, .key_len = kl,
								 .value = g[i].pair + kl + 1, .count = g[i].n,
								 .samples = g[i].samples, .p50 = pct(g[i].dur, g[i].n, 0.5),
								 .p99 = pct(g[i].dur, g[i].n, 0.99) };
		}
	}
	for (size_t i = 0; i < t->nr_groups; i++)
		free(g[i].dur);
	free(g);
	if (e)
		t->nr_groups = 0;
	return e;
}

int spans_table_build(struct spans_table *t, const struct spans_row *row, size_t n, const char *const *names,
		      size_t nr_names, double window_s)
{
	memset(t, 0, sizeof(*t));
	return build_kinds(t, row, n, names, nr_names, window_s) ?: build_groups(t, row, n);
}

void spans_table_free(struct spans_table *t)
{
	if (!t)
		return;
	for (size_t k = 0; k < t->nr_kinds; k++)
		free(t->kind[k].top);
	free(t->kind);
	free(t->group);
	strpool_free(&t->pairs);
	memset(t, 0, sizeof(*t));
}
