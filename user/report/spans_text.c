// SPDX-License-Identifier: GPL-2.0
/* report --spans as text: one row per span name, and otel spans by attribute. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spans_join.h"

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return (x > y) - (x < y);
}

static __u64 pct(const __u64 *sorted, size_t n, double p)
{
	size_t i = (size_t)(p * (n - 1) + 0.5);

	return n ? sorted[i < n ? i : n - 1] : 0;
}

/* One attribute value of otel spans, for the table: the spans' durations and samples. */
struct attr_group {
	const char *pair; /* "key\x1fvalue", pooled */
	__u64 *dur;
	size_t n, cap, samples;
};

struct attr_walk {
	struct strpool pool;
	struct attr_group *g;
	size_t ng, cap;
	const struct span_row *sp;
	int err;
};

static int attr_add(void *ctx, const char *key, const char *value)
{
	struct attr_walk *w = ctx;
	struct sbuf b = {};
	struct attr_group *g;
	size_t id;

	sbuf_printf(&b, "%s\x1f%s", key, value);
	if (b.err || !strpool_intern(&w->pool, b.p, &id)) {
		sbuf_free(&b);
		return w->err = -ENOMEM;
	}
	sbuf_free(&b);
	if (id == w->ng) {
		if (array_reserve((void **)&w->g, &w->cap, w->ng, sizeof(*w->g)))
			return w->err = -ENOMEM;
		w->g[w->ng++] = (struct attr_group){ .pair = w->pool.str[id] };
	}
	g = &w->g[id];
	if (array_reserve((void **)&g->dur, &g->cap, g->n, sizeof(*g->dur)))
		return w->err = -ENOMEM;
	g->dur[g->n++] = w->sp->end - w->sp->start;
	g->samples += w->sp->count;
	return 0;
}

/* Keys in order, then the busiest values first. */
static int cmp_group(const void *a, const void *b)
{
	const struct attr_group *x = a, *y = b;
	size_t kx = strcspn(x->pair, "\x1f"), ky = strcspn(y->pair, "\x1f");
	int c = strncmp(x->pair, y->pair, kx < ky ? kx : ky);

	if (c || kx != ky)
		return c ? c : kx < ky ? -1 : 1;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return strcmp(x->pair, y->pair);
}

#define ATTR_VALUES_SHOWN 10

/*
 * otel spans by the value of each of their attributes (http.route, say):
 * which values are slow, which hold the samples.  A key with many values
 * (user.id) shows its busiest ones.
 */
static int print_attrs(struct span_report *r, FILE *out)
{
	struct attr_walk w = {};
	size_t shown = 0;

	for (size_t i = 0; i < r->nsp && !w.err; i++) {
		w.sp = &r->sp[i];
		otel_attrs_split(r->sp[i].attrs, attr_add, &w);
	}
	if (!w.err && w.ng) {
		sort_n(w.g, w.ng, sizeof(*w.g), cmp_group);
		fprintf(out, "#\n# otel spans by attribute\n# %-24s %-24s %8s %10s %10s %8s\n", "attribute", "value",
			"count", "p50 ms", "p99 ms", "samples");
		for (size_t i = 0; i < w.ng; i++) {
			struct attr_group *g = &w.g[i];
			int kl = (int)strcspn(g->pair, "\x1f");

			shown = i && strncmp(g->pair, w.g[i - 1].pair, kl + 1) ? 0 : shown;
			if (shown++ == ATTR_VALUES_SHOWN) {
				size_t more = 0;

				while (i + more < w.ng && !strncmp(w.g[i + more].pair, g->pair, kl + 1))
					more++;
				fprintf(out, "  %-24.*s (%zu more values)\n", kl, g->pair, more);
				i += more - 1;
				continue;
			}
			sort_n(g->dur, g->n, sizeof(*g->dur), cmp_u64);
			fprintf(out, "  %-24.*s %-24s %8zu %10.3f %10.3f %8zu\n", kl, g->pair, g->pair + kl + 1, g->n,
				pct(g->dur, g->n, 0.5) / 1e6, pct(g->dur, g->n, 0.99) / 1e6, g->samples);
		}
	}
	for (size_t i = 0; i < w.ng; i++)
		free(w.g[i].dur);
	free(w.g);
	strpool_free(&w.pool);
	return w.err;
}

#define SPLIT_BAR 20

static bool any_split(const struct span_report *r)
{
	for (size_t i = 0; i < r->nsp; i++)
		if (r->sp[i].sched.how == SP_SCHED_ACCOUNTS || r->sp[i].sched.how == SP_SCHED_WAKE_STAMPS)
			return true;
	return span_wall__has_sched(r->wall);
}

/*
 * [####rr....DD      ]: the summed split of a name's spans, SPLIT_BAR cells,
 * each part rounded by the largest remainder so that the cells add up.
 */
static void split_bar(FILE *out, const struct span_split *x)
{
	static const char mark[4] = { '#', 'r', '.', 'D' };
	__u64 part[4] = { x->on, x->runq, x->sleep, x->blocked }, total = 0;
	int cells[4], used = 0;
	bool spent[4] = {};
	char bar[SPLIT_BAR + 1];

	for (int i = 0; i < 4; i++)
		total += part[i];
	if (!total) {
		fprintf(out, "  %-*s", SPLIT_BAR + 2, "-");
		return;
	}
	for (int i = 0; i < 4; i++) {
		cells[i] = part[i] * SPLIT_BAR / total;
		used += cells[i];
	}
	while (used < SPLIT_BAR) {
		int best = -1;
		__u64 rem = 0;

		for (int i = 0; i < 4; i++) {
			__u64 rm = part[i] * SPLIT_BAR - (__u64)cells[i] * total;

			if (!spent[i] && (best < 0 || rm > rem)) {
				rem = rm;
				best = i;
			}
		}
		cells[best]++;
		spent[best] = true;
		used++;
	}
	used = 0;
	for (int i = 0; i < 4; i++)
		for (int k = 0; k < cells[i]; k++)
			bar[used++] = mark[i];
	bar[used] = 0;
	fprintf(out, "  [%s]", bar);
}

/*
 * The spans of each name, in order: name n's spans are
 * order[by_name[n] .. by_name[n + 1]), a bucket each, not a pass over all
 * spans per name.  0, or -ENOMEM with nothing allocated.
 */
static int order_by_name(const struct span_report *r, size_t **by_name_out, size_t **order_out)
{
	size_t *by_name = calloc(r->names.n + 1, sizeof(*by_name));
	size_t *at = calloc(r->names.n + 1, sizeof(*at));
	size_t *order = malloc((r->nsp ? r->nsp : 1) * sizeof(*order));

	if (!by_name || !at || !order) {
		free(by_name);
		free(at);
		free(order);
		return -ENOMEM;
	}
	for (size_t i = 0; i < r->nsp; i++)
		if (r->sp[i].name >= 0 && (size_t)r->sp[i].name < r->names.n)
			by_name[r->sp[i].name + 1]++;
	for (size_t n = 0; n < r->names.n; n++)
		by_name[n + 1] += by_name[n];
	for (size_t i = 0; i < r->nsp; i++)
		if (r->sp[i].name >= 0 && (size_t)r->sp[i].name < r->names.n)
			order[by_name[r->sp[i].name] + at[r->sp[i].name]++] = i;
	free(at);
	*by_name_out = by_name;
	*order_out = order;
	return 0;
}

/* Text: one row per span name, with percentiles, samples, counters per span and top functions. */
int spans_print_table(struct span_report *r, FILE *out)
{
	struct topc *top = NULL;
	size_t tcap = 0, *by_name = NULL, *order = NULL;
	__u64 *dur = malloc((r->nsp ? r->nsp : 1) * sizeof(*dur));

	if (!dur)
		return -ENOMEM;
	/* External spans carry no counters: no columns for them. */
	if (r->o.external)
		r->nr_ctr = 0;
	fprintf(out, "# %zu spans of %zu kinds, %zu samples\n#\n", r->nsp, r->names.n, r->ns);
	fprintf(out, "# %-20s %-10s %8s", "name", "source", "count");
	if (r->o.window_s > 0)
		fprintf(out, " %9s", "rate/s");
	fprintf(out, " %10s %10s %10s %8s", "p50 ms", "p99 ms", "max ms", "samples");
	for (int k = 0; k < r->nr_ctr; k++)
		fprintf(out, " %14s", r->ctr_names[k]);
	if (span_wall__recorded(r->wall))
		fprintf(out, " %12s  %-24s", "off-CPU ms", "blocked in");
	if (any_split(r))
		fprintf(out, "  %-*s", SPLIT_BAR + 2, "wall: on|runq|sleep|D");
	fprintf(out, "  top functions inside\n");
	if (order_by_name(r, &by_name, &order)) {
		free(dur);
		return -ENOMEM;
	}
	for (size_t n = 0; n < r->names.n; n++) {
		size_t cnt = 0, samples = 0;
		__u64 ctr[SP_MAX_COUNTERS] = {}, off = 0;
		struct span_split sum = {}, x;
		const char *blocked = NULL, *how;
		int src = 0, ntop;
		/* All samples of all spans of this name, pooled for the top list. */
		struct topc *pool = NULL;
		size_t npool = 0, pcap = 0;

		for (size_t o = by_name[n]; o < by_name[n + 1]; o++) {
			const struct span_row *sp = &r->sp[order[o]];

			dur[cnt++] = sp->end - sp->start;
			samples += sp->count;
			if (span_wall__recorded(r->wall)) {
				off += span_wall__off_ns(r->wall, sp->tid, sp->start, sp->end);
				if (!blocked)
					blocked = span_wall__top_frame(r->wall, sp->tid, sp->start, sp->end);
			}
			src = sp->source;
			if (spans_split(r, sp, &x, &how)) {
				sum.on += x.on;
				sum.runq += x.runq;
				sum.sleep += x.sleep;
				sum.blocked += x.blocked;
			}
			for (int k = 0; k < r->nr_ctr; k++)
				ctr[k] += sp->counters[k];
			ntop = spans_top_of(r, sp->first, sp->count, &top, &tcap);
			for (int t = 0; t < ntop; t++) {
				size_t k;

				for (k = 0; k < npool && pool[k].name != top[t].name; k++)
					;
				if (k == npool) {
					if (array_reserve((void **)&pool, &pcap, npool, sizeof(*pool)))
						break;
					pool[npool++] = (struct topc){ top[t].name, 0 };
				}
				pool[k].n += top[t].n;
			}
		}
		sort_n(dur, cnt, sizeof(*dur), cmp_u64);
		sort_n(pool, npool, sizeof(*pool), spans_cmp_top);
		fprintf(out, "  %-20s %-10s %8zu", r->names.str[n], span_source_name(src), cnt);
		if (r->o.window_s > 0)
			fprintf(out, " %9.1f", cnt / r->o.window_s);
		fprintf(out, " %10.3f %10.3f %10.3f %8zu", pct(dur, cnt, 0.5) / 1e6, pct(dur, cnt, 0.99) / 1e6,
			cnt ? dur[cnt - 1] / 1e6 : 0, samples);
		for (int k = 0; k < r->nr_ctr; k++) {
			/* per span: what one of them typically costs */
			double v = cnt ? (double)ctr[k] / cnt : 0;

			if (spans_ctr_is_clock(r->ctr_names[k]))
				fprintf(out, " %11.3f ms", v / 1e6);
			else
				fprintf(out, " %14.1f", v);
		}
		if (span_wall__recorded(r->wall))
			fprintf(out, " %9.3f ms  %-24.24s", cnt ? off / 1e6 / cnt : 0, blocked ? blocked : "-");
		if (any_split(r))
			split_bar(out, &sum);
		fprintf(out, " ");
		for (size_t t = 0; t < npool && t < 3; t++)
			fprintf(out, " %s %.0f%%", pool[t].name, samples ? 100.0 * pool[t].n / samples : 0);
		fprintf(out, "\n");
		free(pool);
	}
	if (r->nr_ctr)
		fprintf(out, "#\n# counters are means per span; samples are those of the span's thread inside it\n");
	if (any_split(r))
		fprintf(out, "# wall: where the spans' time went, from the scheduler's accounts: # on CPU, r waiting for a CPU, . asleep, D blocked (uninterruptible, I/O)\n");
	if (span_wall__recorded(r->wall))
		fprintf(out, "# off-CPU ms: mean time blocked per span; blocked in: the first span's heaviest blocking stack%s\n",
			span_wall__unjoinable(r->wall) ? " (sums of short blocks are left out: record with --off-cpu-thresh 0)" : "");
	free(top);
	free(dur);
	free(by_name);
	free(order);
	return print_attrs(r, out);
}
